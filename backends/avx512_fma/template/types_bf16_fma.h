/* ---- bf16 element types, widened on AVX-512 (backends/avx512_fma/template/
 * types_bf16_fma.h): the rows of the avx512_fma back-end, in place of
 * bf16's block (template/types_bf16.h) for bf16 and the math=bf16 dtypes.
 * A and B are bf16 (the upper 16 bits of an IEEE float, stored as uint16_t),
 * C is f32: C = Σ a·b in f32 (+bias, activation).  KG = 1: a bf16 becomes
 * an f32 by a 16-bit left shift, then the AVX-512 FMA of the prelude — for
 * a CPU whose vdpbf16ps is slower than its f32 FMA (issue 44).  */
typedef uint16_t dt_ta;
typedef uint16_t dt_tb;
typedef float dt_tc;
#define KG 1
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

/* VL bf16 and their f32 values: 16 u16 zero-extended to 32-bit lanes
 * (vpmovzxwd zmm, m256) and shifted up */
DT_INLINE vf dt_bf16_vload(const uint16_t *p)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
/* *p's f32 value in every lane */
DT_INLINE vf dt_bf16_bcast(const uint16_t *p)
{
    uint32_t w = (uint32_t)*p << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return _mm512_set1_ps(f);
}
