#if DT_OP_DENSE
/* The entry points' names and the quantized dtypes' extra parameters come
 * from the dtype's types block: DT_FN_* (dtk_dense, dtk_pack,
 * dtk_packed_size, with a dtype suffix beyond f32), DT_RUN_QPARAMS (A's
 * scale and zero point: int8), DT_PACK_QPARAMS (per-column weight scales:
 * int8, w8a32), and for a quantized dtype (DT_QUANT) the tail of the packed
 * weights (DT_QTAIL_BYTES, dt_pack_qtail, dt_qctx_init). */

/* Bytes of the packed weights for N×K. */
DT_EXPORT size_t DT_FN_PACKED_SIZE(int64_t N, int64_t K)
{
    return (size_t)DT_STRIPS(N) * NR * (size_t)DT_KP(K) * sizeof(dt_tb) + DT_QTAIL_BYTES(N);
}

/* Packs W (N×K row-major) once; packed must hold DT_FN_PACKED_SIZE bytes. */
DT_EXPORT void DT_FN_PACK(int64_t N, int64_t K, const dt_tb *W DT_PACK_QPARAMS, void *packed)
{
    dt_pack_b(K, N, W, K, 1, (dt_tb *)packed);
#if DT_QUANT
    dt_pack_qtail(N, K, W DT_PACK_QARGS,
                  (char *)packed + (size_t)DT_STRIPS(N) * NR * (size_t)DT_KP(K) * sizeof(dt_tb));
#endif
}

static void dt_dense_worker(int tid, int nt, int64_t per, int64_t M, int64_t N, int64_t K,
                            const dt_ta *X, int64_t ldx, const dt_tb *packed, const float *bias,
                            dt_tc *Y, int64_t ldy, const dt_qctx *q)
{
    DT_THREAD_BEGIN();
    for (int64_t i = per * tid / nt; i < per * (tid + 1) / nt; i++) {
        dt_item it = dt_item_at(i, per, M, N);
        dt_gemm_range(it.m0, it.m1, it.n0, it.n1, K, X, ldx, packed, bias, Y, ldy, q);
    }
    DT_THREAD_END();
}

/* Y[M,N] = X[M,K]·Wᵀ (+bias) (then the activation), W given packed. */
DT_EXPORT void DT_FN_DENSE(int64_t M, int64_t N, int64_t K, const dt_ta *X,
                           int64_t ldx DT_RUN_QPARAMS, const void *packed, const float *bias,
                           dt_tc *Y, int64_t ldy, int nthreads)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return;
#if DT_QUANT
    dt_qctx qc;
    dt_qctx_init(&qc, (const char *)packed +
                          (size_t)DT_STRIPS(N) * NR * (size_t)DT_KP(K) * sizeof(dt_tb),
                 N DT_RUN_QARGS);
    const dt_qctx *q = &qc;
#else
    const dt_qctx *q = NULL;
#endif
    int nt = dt_threads(nthreads);
    int64_t per = dt_items_per_matrix(M, N, nt);
    if (per < nt)
        nt = (int)per;
    if (nt <= 1) {
        dt_dense_worker(0, 1, per, M, N, K, X, ldx, (const dt_tb *)packed, bias, Y, ldy, q);
        return;
    }
#pragma omp parallel num_threads(nt)
    dt_dense_worker(omp_get_thread_num(), omp_get_num_threads(), per, M, N, K, X, ldx,
                    (const dt_tb *)packed, bias, Y, ldy, q);
}
#endif /* DT_OP_DENSE */
