/* ---- math=bf16 on f32 operands (microkernel/template/types_f32bf16.h) -----
 * dtype f32_bf16: the caller's X, W, Y are f32; the arithmetic is bf16's.
 * Internally this is bf16's types block, emitted before this one (A and B bf16, KG 2 on AVX-512 for
 * vdpbf16ps and the AMX tiles, 1 on the portable rows) and its register
 * kernels; the f32 entry points round W to bf16 (nearest even, as
 * dt_bf16_from_f32) once when packing it, and X's M×K rows once per call
 * into a bf16 buffer that the bf16 driver then reads (packed, or in place
 * in the stream sketch). */
/* bf16's types block comes first (dt_mk_dtype.types_base): its element
 * types, K groups and helpers; its entry points take the names of the bf16
 * operands' side of this kernel; dtk_dense_f32bf16 and dtk_pack_f32bf16
 * below take f32 */
#undef DT_FN_DENSE
#undef DT_FN_PACK
#undef DT_FN_PACKED_SIZE
#undef DT_FN_BMM
#define DT_FN_DENSE dtk_f32bf16_dense_rounded
#define DT_FN_PACK dtk_f32bf16_pack_rounded
#define DT_FN_PACKED_SIZE dtk_packed_size_f32bf16

/* ---- the f32 entry points -------------------------------------------------- */
DT_EXPORT void DT_FN_DENSE(int64_t M, int64_t N, int64_t K, const dt_ta *X, int64_t ldx,
                           const void *packed, const float *bias, dt_tc *Y, int64_t ldy,
                           int nthreads);
DT_EXPORT void DT_FN_PACK(int64_t N, int64_t K, const dt_tb *W, void *packed);

/* x rounded to bf16, nearest even (a NaN stays a quiet NaN) */
DT_INLINE uint16_t dt_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
}

/* rows×K of x (row stride ldx) rounded into dst (row stride K): the same
 * rounding as dt_f32_to_bf16, VL floats at a time where the vectors allow
 * (a scalar loop costs a third of an AMX kernel's time at M = 32) */
static void dt_round_rows(int64_t rows, int64_t K, const float *x, int64_t ldx, uint16_t *dst)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *s = x + i * ldx;
        uint16_t *d = dst + i * K;
        int64_t k = 0;
#if defined(DT_ISA_AVX512)
        const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff),
                      abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000),
                      quiet = _mm512_set1_epi32(0x40);
        for (; k + 16 <= K; k += 16) {
            __m512i u = _mm512_loadu_si512((const void *)(s + k));
            __m512i hi = _mm512_srli_epi32(u, 16);
            __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(_mm512_add_epi32(u, half), _mm512_and_si512(hi, one)), 16);
            __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
            r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, quiet));
            _mm256_storeu_si256((__m256i *)(void *)(d + k), _mm512_cvtepi32_epi16(r));
        }
#elif defined(DT_ISA_AVX2)
        const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff),
                      abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                      quiet = _mm256_set1_epi32(0x40);
        for (; k + 16 <= K; k += 16) {
            __m256i w[2];
            for (int h = 0; h < 2; h++) {
                __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(s + k + 8 * h));
                __m256i hi = _mm256_srli_epi32(u, 16);
                __m256i r = _mm256_srli_epi32(
                    _mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(hi, one)), 16);
                /* |u| > inf as signed 32-bit compares: both are non-negative */
                __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
                w[h] = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
            }
            /* 16 values below 2^16 packed to 16 bits, lanes back in order */
            __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(w[0], w[1]), 0xd8);
            _mm256_storeu_si256((__m256i *)(void *)(d + k), p);
        }
#endif
        for (; k < K; k++)
            d[k] = dt_f32_to_bf16(s[k]);
    }
}

/* Packs f32 W (N×K row-major) as bf16 once. */
DT_EXPORT void dtk_pack_f32bf16(int64_t N, int64_t K, const float *W, void *packed)
{
    if (N <= 0 || K <= 0)
        return;
    uint16_t *w = (uint16_t *)malloc((size_t)(N * K) * sizeof(uint16_t));
    if (!w)
        abort();
    dt_round_rows(N, K, W, K, w);
    DT_FN_PACK(N, K, w, packed);
    free(w);
}

/* Y[M,N] = bf16(X)[M,K]·bf16(W)ᵀ in f32 (+bias) (then the activation). */
DT_EXPORT void dtk_dense_f32bf16(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                                 const void *packed, const float *bias, float *Y, int64_t ldy,
                                 int nthreads)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return;
    enum { DT_XBUF = 16384 }; /* 32 KiB on the stack: M·K up to 16384 */
    uint16_t local[DT_XBUF] __attribute__((aligned(64)));
    uint16_t *x = M * K <= DT_XBUF ? local : (uint16_t *)malloc((size_t)(M * K) * sizeof(uint16_t));
    if (!x)
        abort();
    dt_round_rows(M, K, X, ldx, x);
    DT_FN_DENSE(M, N, K, x, K, packed, bias, Y, ldy, nthreads);
    if (x != local)
        free(x);
}
