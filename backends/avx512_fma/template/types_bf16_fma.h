/* ---- bf16 widened on AVX-512 (backends/avx512_fma/template/types_bf16_fma.h)
 * The avx512_fma rows' block, emitted right after bf16's element types
 * (template/types_bf16.h) for bf16 and the math=bf16 dtypes: K groups of
 * one (the packed B a single-k panel, [strip][K][NR]) and the widening
 * helpers of the vector rows on 16 lanes — a bf16 becomes an f32 by a
 * 16-bit left shift, then the AVX-512 FMA of the prelude — for a CPU whose
 * vdpbf16ps is slower than its f32 FMA (issue 44).  bf16's block defines
 * its AVX-512 pair helpers too; the widened kernel does not use them. */
#undef KG
#define KG 1
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
