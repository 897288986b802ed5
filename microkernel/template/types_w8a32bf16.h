/* ---- math=bf16 on w8a32 (microkernel/template/types_w8a32bf16.h) ----------
 * dtype w8a32_bf16: after bf16's and f32_bf16's blocks, the packing of the
 * caller's s8 weights with their per-output-channel scales: each weight
 * dequantized in f32 and rounded to bf16 (nearest even, dt_f32_to_bf16)
 * once, then packed as f32_bf16 packs its rounded weights.  Calls are
 * f32_bf16's dtk_dense_f32bf16 (X rounded per call); the scales are in the
 * packed weights, so nothing follows the panels. */
DT_EXPORT void dtk_pack_w8bf16(int64_t N, int64_t K, const int8_t *W, const float *scale_b,
                               void *packed);

DT_EXPORT void dtk_pack_w8bf16(int64_t N, int64_t K, const int8_t *W, const float *scale_b,
                               void *packed)
{
    if (N <= 0 || K <= 0)
        return;
    uint16_t *w = (uint16_t *)malloc((size_t)(N * K) * sizeof(uint16_t));
    if (!w)
        abort();
    for (int64_t n = 0; n < N; n++) {
        const float s = scale_b ? scale_b[n] : 1.0f;
        for (int64_t k = 0; k < K; k++)
            w[n * K + k] = dt_f32_to_bf16(s * (float)W[n * K + k]);
    }
    DT_FN_PACK(N, K, w, packed);
    free(w);
}
