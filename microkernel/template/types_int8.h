/* ---- int8 element types (microkernel/template/types_int8.h) ---------------
 * A u8 with a scale and zero point (real = scale_a·(a − zp_a)), B s8 with
 * per-column (per-N) scales, s32 accumulation, C f32:
 *   C[m,n] = scale_a·scale_b[n]·(Σ_k a·w − zp_a·colsum[n]) (+bias, activation)
 * where colsum[n] = Σ_k w[n,k] is computed once, at packing: the inner loop
 * never subtracts the zero point.  The s32 sums wrap (vpdpbusd does not
 * saturate), so the compensated sum is exact whenever the true Σ (a − zp)·w
 * fits in an int32.
 *   native (DT_ISA_AVX512, avx512_vnni): KG = 4 — packed panels hold quads
 *     of consecutive k, the layout vpdpbusd reads: one zmm of B is 16
 *     columns × 4 k (s8), one 32-bit broadcast of A is one row's quad (u8).
 *   portable (DT_ISA_GENERIC, DT_ISA_AVX2): KG = 1 — VL s8 of a panel row
 *     widened to 32 bits, times a broadcast u8, in uint32 GCC vectors
 *     (modular: the same wrap-around as vpdpbusd, no undefined overflow).
 * Between the K blocks of the blocked sketch C holds the partial s32 sums
 * as raw int32 bits (integer loads and stores of C; the scratch tile copies
 * bytes); the last block compensates, converts and scales, then bias and
 * activation, and stores floats.
 *   The packed weights: the s8 panels, then colsum as int32[DT_STRIPS(N)·NR]
 *   and scale_b as float[DT_STRIPS(N)·NR] (both zero past N). */
typedef uint8_t dt_ta;
typedef int8_t dt_tb;
typedef float dt_tc;
#if defined(DT_ISA_AVX512)
#define KG 4
#else
#define KG 1
#endif
#define DT_TB_F32 0
#define DT_QUANT 1
#define DT_QTAIL_BYTES(n) ((size_t)DT_STRIPS(n) * NR * (sizeof(int32_t) + sizeof(float)))
#define DT_RUN_QPARAMS , float scale_a, int32_t zp_a
#define DT_RUN_QARGS , scale_a, zp_a
#define DT_PACK_QPARAMS , const float *scale_b
#define DT_PACK_QARGS , scale_b
#define DT_FN_DENSE dtk_dense_u8s8
#define DT_FN_PACK dtk_pack_u8s8
#define DT_FN_PACKED_SIZE dtk_packed_size_u8s8
#define DT_FN_BMM dtk_bmm_u8s8
#define DT_FN_CONV2D dtk_conv2d_u8s8
#define DT_A_ZERO ((dt_ta)zp_a) /* an implicit A's padding: the real 0 */

/* DT_OPAQUE(x): hides x's value from the optimizer.  Before the remainder
 * of an unrolled K loop: otherwise GCC's partial redundancy elimination
 * loads the remainder's first B vectors and A broadcasts in every
 * iteration of the main loop and carries them across its back-edge — NV +
 * MR more live vectors, accumulators spilled in the loop (under 40% of the
 * vpdpbusd peak on some tiles). */
#define DT_OPAQUE(x) __asm__("" : "+r"(x))

/* What the register kernel uses (accumulators dt_acc):
 *   ACC_ZERO(), ACC_ADD(x, y)          s32 lanes, wrapping
 *   CLOAD(p), CLOAD_N(p, n)            C's int32 bits (n lanes, rest 0)
 *   CSTORE(p, v), CSTORE_N(p, v, n)    bits to C (all lanes / n lanes)
 *   DT_ZC(q, j)   zp_a·colsum[j ..]    (dt_acc)
 *   DT_SC(q, j)   scale_a·scale_b[j ..] (vf)
 *   DT_DEQ(acc, zc, sc)  float(acc − zc)·sc (vf)
 *   DT_FBITS(f)   a vf's bits as dt_acc
 * native: BLOAD(p) (a zmm of B), ABCAST4(p) / ABCAST4_TAIL(p, n) (one row's
 * quad, the tail quad zero-filled past n < 4 bytes: a K tail read in place
 * never reads past the row), DT_DPBUSD(c, a, b);
 * portable: BLOAD8(p) (VL s8 widened), ABCAST1(x). */
#if defined(DT_ISA_AVX512)
typedef __m512i dt_acc;
#define ACC_ZERO() _mm512_setzero_si512()
#define ACC_ADD(x, y) _mm512_add_epi32((x), (y))
#define CLOAD(p) _mm512_loadu_si512((const void *)(p))
#define CLOAD_N(p, n) _mm512_maskz_loadu_epi32(VMASK(n), (const void *)(p))
#define CSTORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define CSTORE_N(p, v, n) _mm512_mask_storeu_epi32((void *)(p), VMASK(n), (v))
#define DT_ZC(q, j)                                                                          \
    _mm512_mullo_epi32(_mm512_set1_epi32((q)->zp_a),                                         \
                       _mm512_loadu_si512((const void *)((q)->colsum + (j))))
#define DT_SC(q, j) _mm512_mul_ps(_mm512_set1_ps((q)->scale_a), _mm512_loadu_ps((q)->scale_b + (j)))
#define DT_DEQ(acc, zc, sc) _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32((acc), (zc))), (sc))
#define DT_FBITS(f) _mm512_castps_si512(f)
#define BLOAD(p) _mm512_loadu_si512((const void *)(p))
DT_INLINE __m512i dt_abcast4(const uint8_t *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return _mm512_set1_epi32(w);
}
DT_INLINE __m512i dt_abcast4_tail(const uint8_t *p, int n)
{
    uint8_t quad[4] = {0, 0, 0, 0};
    memcpy(quad, p, (size_t)n);
    return dt_abcast4(quad);
}
#define ABCAST4(p) dt_abcast4(p)
#define ABCAST4_TAIL(p, n) dt_abcast4_tail((p), (n))
#if defined(__AVX512VNNI__)
/* c + Σ_{4 bytes} a(u8)·b(s8) per 32-bit lane: vpdpbusd */
#define DT_DPBUSD(c, a, b) _mm512_dpbusd_epi32((c), (a), (b))
#elif defined(__AVX512BW__)
/* the same sums without avx512_vnni (a kernel built for another machine,
 * e.g. an export): bytes widened to 16 bits in place, two vpmaddwd — exact,
 * no saturation (|a·b| <= 255·128, two per 32-bit lane) */
DT_INLINE __m512i dt_dpbusd(__m512i c, __m512i a, __m512i b)
{
    const __m512i lo = _mm512_set1_epi16(0x00ff);
    __m512i a_even = _mm512_and_si512(a, lo), a_odd = _mm512_srli_epi16(a, 8);
    __m512i b_even = _mm512_srai_epi16(_mm512_slli_epi16(b, 8), 8);
    __m512i b_odd = _mm512_srai_epi16(b, 8);
    c = _mm512_add_epi32(c, _mm512_madd_epi16(a_even, b_even));
    return _mm512_add_epi32(c, _mm512_madd_epi16(a_odd, b_odd));
}
#define DT_DPBUSD(c, a, b) dt_dpbusd((c), (a), (b))
#else
/* AVX-512F only: the same on the two 256-bit halves with AVX2 */
DT_INLINE __m256i dt_dpbusd_half(__m256i c, __m256i a, __m256i b)
{
    const __m256i lo = _mm256_set1_epi16(0x00ff);
    __m256i a_even = _mm256_and_si256(a, lo), a_odd = _mm256_srli_epi16(a, 8);
    __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
    __m256i b_odd = _mm256_srai_epi16(b, 8);
    c = _mm256_add_epi32(c, _mm256_madd_epi16(a_even, b_even));
    return _mm256_add_epi32(c, _mm256_madd_epi16(a_odd, b_odd));
}
DT_INLINE __m512i dt_dpbusd(__m512i c, __m512i a, __m512i b)
{
    __m256i lo = dt_dpbusd_half(_mm512_castsi512_si256(c), _mm512_castsi512_si256(a),
                                _mm512_castsi512_si256(b));
    __m256i hi = dt_dpbusd_half(_mm512_extracti64x4_epi64(c, 1), _mm512_extracti64x4_epi64(a, 1),
                                _mm512_extracti64x4_epi64(b, 1));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
#define DT_DPBUSD(c, a, b) dt_dpbusd((c), (a), (b))
#endif
#else /* portable: GCC vector extensions, any ISA and architecture */
typedef uint32_t dt_acc __attribute__((vector_size(VL * 4)));
#if defined(DT_ISA_AVX2)
/* C's int32 bits under the prelude's AVX2 lane masks */
DT_INLINE dt_acc dt_cload_n(const float *p, int n)
{
    return (dt_acc)_mm256_maskload_epi32((const int *)(const void *)p, VMASK(n));
}
DT_INLINE void dt_cstore_n(float *p, dt_acc v, int n)
{
    _mm256_maskstore_epi32((int *)(void *)p, VMASK(n), (__m256i)v);
}
#else
DT_INLINE dt_acc dt_cload_n(const float *p, int n)
{
    dt_acc v = {0};
    memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}
DT_INLINE void dt_cstore_n(float *p, dt_acc v, int n) { memcpy(p, &v, (size_t)n * sizeof(float)); }
#endif
DT_INLINE dt_acc dt_cload(const float *p)
{
    dt_acc v;
    memcpy(&v, p, sizeof v);
    return v;
}
DT_INLINE void dt_cstore(float *p, dt_acc v) { memcpy(p, &v, sizeof v); }
DT_INLINE dt_acc dt_zc(const dt_qctx *q, int64_t j)
{
    dt_acc v;
    memcpy(&v, q->colsum + j, sizeof v);
    return v * (uint32_t)q->zp_a;
}
DT_INLINE vf dt_sc(const dt_qctx *q, int64_t j)
{
    return (vf)((vx)VLOAD(q->scale_b + j) * q->scale_a);
}
DT_INLINE vf dt_deq(dt_acc acc, dt_acc zc, vf sc)
{
    return (vf)(__builtin_convertvector((vi)(acc - zc), vx) * (vx)sc);
}
/* VL s8 widened to 32-bit lanes.  (GCC 12 scalarizes __builtin_convertvector
 * of an 8-byte s8 vector: a dozen shifts and inserts per vector.) */
#if defined(DT_ISA_AVX2)
DT_INLINE dt_acc dt_bload8(const int8_t *p)
{
    return (dt_acc)_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
#else
DT_INLINE dt_acc dt_bload8(const int8_t *p)
{
    vi v;
    for (int j = 0; j < VL; j++)
        v[j] = p[j];
    return (dt_acc)v;
}
#endif
#define ACC_ZERO() ((dt_acc){0})
#define ACC_ADD(x, y) ((x) + (y))
#define CLOAD(p) dt_cload(p)
#define CLOAD_N(p, n) dt_cload_n((p), (n))
#define CSTORE(p, v) dt_cstore((p), (v))
#define CSTORE_N(p, v, n) dt_cstore_n((p), (v), (n))
#define DT_ZC(q, j) dt_zc((q), (j))
#define DT_SC(q, j) dt_sc((q), (j))
#define DT_DEQ(acc, zc, sc) dt_deq((acc), (zc), (sc))
#define DT_FBITS(f) ((dt_acc)(vx)(f))
#define BLOAD8(p) dt_bload8(p)
#define ABCAST1(x) ((dt_acc){0} + (uint32_t)(x))
#endif

/* The tail after the panels: colsum[n] = Σ_k W[n,k] (mod 2^32, like the
 * kernel's sums), then scale_b[n]; both zero-padded to whole strips (the
 * padding columns are computed in full and never stored).  A NULL scale_b
 * packs 1.0 for every column. */
static void dt_pack_qtail(int64_t N, int64_t K, const dt_tb *W, const float *scale_b, void *tail)
{
    const int64_t np = (N + NR - 1) / NR * NR; /* whole strips */
    char *t = (char *)tail;
    for (int64_t j = 0; j < np; j++) {
        uint32_t s = 0;
        float sc = 0.0f;
        if (j < N) {
            for (int64_t k = 0; k < K; k++)
                s += (uint32_t)(int32_t)W[j * K + k];
            sc = scale_b ? scale_b[j] : 1.0f;
        }
        memcpy(t + j * (int64_t)sizeof s, &s, sizeof s);
        memcpy(t + np * (int64_t)sizeof s + j * (int64_t)sizeof sc, &sc, sizeof sc);
    }
}

static void dt_qctx_init(dt_qctx *q, const void *tail, int64_t N, float scale_a, int32_t zp_a)
{
    q->colsum = (const int32_t *)tail;
    q->scale_b = (const float *)((const char *)tail + (N + NR - 1) / NR * NR * sizeof(int32_t));
    q->scale_a = scale_a;
    q->zp_a = zp_a;
}
