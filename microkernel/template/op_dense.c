#if DT_OP_DENSE
/* The entry point's name and the quantized dtypes' extra parameters come
 * from the dtype's types block: DT_FN_DENSE (with a dtype suffix beyond
 * f32), DT_RUN_QPARAMS (A's scale and zero point: int8); the weights'
 * packing is the driver's (DT_CONST_B). */

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
    dt_qctx_init(&qc, (const char *)packed + DT_PANELS_BYTES(N, K), N DT_RUN_QARGS);
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
