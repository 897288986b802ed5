/* ---- bf16 element types (microkernel/template/types_bf16.h) ---------------
 * A and B are bf16 (the upper 16 bits of an IEEE float, stored as uint16_t),
 * C is f32: C = Σ a·b in f32 (+bias, activation).
 *   native (DT_ISA_AVX512, avx512_bf16): KG = 2 — packed panels hold pairs
 *     of consecutive k, the layout vdpbf16ps reads: one zmm of B is 16
 *     columns × 2 k, one 32-bit broadcast of A is one row's pair.
 *   portable (DT_ISA_GENERIC, DT_ISA_AVX2): KG = 1 — a bf16 becomes an f32
 *     by a 16-bit left shift (GCC vector extensions), then f32 FMAs. */
typedef uint16_t dt_ta;
typedef uint16_t dt_tb;
typedef float dt_tc;
#if defined(DT_ISA_AVX512)
#define KG 2
#else
#define KG 1
#endif
#define DT_TB_F32 0
#define DT_QUANT 0
#define DT_QTAIL_BYTES(n) 0
#define DT_RUN_QPARAMS
#define DT_RUN_QARGS
#define DT_PACK_QPARAMS
#define DT_PACK_QARGS
#define DT_FN_DENSE dtk_dense_bf16
#define DT_FN_PACK dtk_pack_bf16
#define DT_FN_PACKED_SIZE dtk_packed_size_bf16
#define DT_FN_BMM dtk_bmm_bf16
#define DT_FN_CONV2D dtk_conv2d_bf16

#if defined(DT_ISA_AVX512)
/* One 32-bit pair of bf16 (k, k+1 of one row) in every lane. */
DT_INLINE __m512i dt_bcast_pair(const uint16_t *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return _mm512_set1_epi32(w);
}
/* The pair (p[0], 0): a K tail read in place never reads past the row. */
#define dt_bcast_last(p) _mm512_set1_epi32((int32_t)*(p))
#define BLOAD(p) _mm512_loadu_si512((const void *)(p))
#if defined(__AVX512BF16__)
/* c + a.lo·b.lo + a.hi·b.hi per 32-bit lane: vdpbf16ps */
#define DT_DPBF16(c, a, b) _mm512_dpbf16_ps((c), (__m512bh)(a), (__m512bh)(b))
#else
/* the same sums with AVX-512F only, for a compiler or machine without
 * avx512_bf16 that builds this kernel anyway (e.g. an export) */
DT_INLINE __m512 dt_dpbf16(__m512 c, __m512i a, __m512i b)
{
    const __m512i hi = _mm512_set1_epi32((int32_t)0xffff0000u);
    c = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(a, hi)),
                        _mm512_castsi512_ps(_mm512_and_si512(b, hi)), c);
    return _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(a, 16)),
                           _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)), c);
}
#define DT_DPBF16(c, a, b) dt_dpbf16((c), (a), (b))
#endif
#else
/* VL bf16 and their f32 values: B's vector (AVX2: one vpmovzxwd ymm, m128;
 * elsewhere GCC vector extensions, any ISA and architecture) */
typedef uint32_t dt_vu32 __attribute__((vector_size(sizeof(vf))));
#if defined(DT_ISA_AVX2)
DT_INLINE vf dt_bf16_vload(const uint16_t *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
#else
typedef uint16_t dt_vbf __attribute__((vector_size(VL * 2)));
DT_INLINE vf dt_bf16_vload(const uint16_t *p)
{
    dt_vbf h;
    memcpy(&h, p, sizeof h);
    return (vf)(__builtin_convertvector(h, dt_vu32) << 16);
}
#endif
/* *p's f32 value in every lane: the bf16 broadcast into both halves of each
 * 32-bit lane, shifted up (vpbroadcastw + vpslld rather than a scalar
 * round trip) */
typedef uint16_t dt_vh2 __attribute__((vector_size(sizeof(vf))));
DT_INLINE vf dt_bf16_bcast(const uint16_t *p)
{
    dt_vh2 h = (dt_vh2){0} + *p;
    return (vf)((dt_vu32)h << 16);
}
#endif
