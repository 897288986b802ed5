/* ---- w8a32 element types (microkernel/template/types_w8a32.h) -------------
 * Weight-only int8: A f32, B s8 with per-column (per-N) scales, C f32 =
 * scale_b[n]·Σ a·w (+bias, activation).  The scale factors out of the sum:
 * the register kernel accumulates a·float(w) in f32 and multiplies by the
 * strip's scale vectors once, on the last K block (before the bias).
 *   KG = 1 on every back-end: a packed panel row is NR s8 (one k, NR
 *   columns; NR/4 bytes of weights per f32 lane of work), converted in
 *   registers s8 -> s32 -> f32 (AVX-512: vpmovsxbd + vcvtdq2ps, amortised
 *   over MR broadcast rows of A).
 *   The packed weights: the s8 panels, then scale_b as float[DT_STRIPS(N)·NR]
 *   (zero past N). */
typedef float dt_ta;
typedef int8_t dt_tb;
typedef float dt_tc;
#define KG 1
#define DT_TB_F32 0
#define DT_QUANT 1
#define DT_QTAIL_BYTES(n) ((size_t)DT_STRIPS(n) * NR * sizeof(float))
#define DT_RUN_QPARAMS
#define DT_RUN_QARGS
#define DT_PACK_QPARAMS , const float *scale_b
#define DT_PACK_QARGS , scale_b
#define DT_FN_DENSE dtk_dense_w8
#define DT_FN_PACK dtk_pack_w8
#define DT_FN_PACKED_SIZE dtk_packed_size_w8
#define DT_FN_BMM dtk_bmm_w8
#define DT_FN_CONV2D dtk_conv2d_w8

/* DT_W8_LOAD(p): VL s8 weights at p as a vector of floats. */
#if defined(DT_ISA_AVX512)
#define DT_W8_LOAD(p)                                                                        \
    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))))
#elif defined(DT_ISA_AVX2)
#define DT_W8_LOAD(p)                                                                        \
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p))))
#else /* portable: GCC vector extensions, any ISA and architecture */
typedef int8_t dt_vs8 __attribute__((vector_size(VL)));
DT_INLINE vf dt_w8_load(const int8_t *p)
{
    dt_vs8 v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, vf);
}
#define DT_W8_LOAD(p) dt_w8_load(p)
#endif

/* The tail after the panels: scale_b[N], zero-padded to whole strips (the
 * padding columns are computed in full and never stored).  A NULL scale_b
 * packs 1.0 for every column (unscaled s8 weights). */
static void dt_pack_qtail(int64_t N, int64_t K, const dt_tb *W, const float *scale_b, void *tail)
{
    (void)K;
    (void)W;
    for (int64_t j = 0; j < (N + NR - 1) / NR * NR; j++) { /* whole strips */
        float s = j >= N ? 0.0f : scale_b ? scale_b[j] : 1.0f;
        memcpy((char *)tail + j * (int64_t)sizeof s, &s, sizeof s);
    }
}

static void dt_qctx_init(dt_qctx *q, const void *tail, int64_t N)
{
    (void)N;
    q->scale_b = (const float *)tail;
    q->colsum = NULL;
    q->scale_a = 1.0f;
    q->zp_a = 0;
}
