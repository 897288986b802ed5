#if DT_OP_DENSE
/* Bytes of the packed weights for N×K. */
DT_EXPORT size_t dtk_packed_size(int64_t N, int64_t K)
{
    return (size_t)DT_STRIPS(N) * NR * (size_t)K * sizeof(float);
}

/* Packs W (N×K row-major) once; packed must hold dtk_packed_size bytes. */
DT_EXPORT void dtk_pack(int64_t N, int64_t K, const float *W, float *packed)
{
    dt_pack_b(K, N, W, K, 1, packed);
}

static void dt_dense_worker(int tid, int nt, int64_t per, int64_t M, int64_t N, int64_t K,
                            const float *X, int64_t ldx, const float *packed, const float *bias,
                            float *Y, int64_t ldy)
{
    for (int64_t i = per * tid / nt; i < per * (tid + 1) / nt; i++) {
        dt_item it = dt_item_at(i, per, M, N);
        dt_gemm_range(it.m0, it.m1, it.n0, it.n1, K, X, ldx, packed, bias, Y, ldy);
    }
}

/* Y[M,N] = X[M,K]·Wᵀ (+bias) (then the activation), W given packed. */
DT_EXPORT void dtk_dense(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                         const float *packed, const float *bias, float *Y, int64_t ldy,
                         int nthreads)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return;
    int nt = dt_threads(nthreads);
    int64_t per = dt_items_per_matrix(M, N, nt);
    if (per < nt)
        nt = (int)per;
    if (nt <= 1) {
        dt_dense_worker(0, 1, per, M, N, K, X, ldx, packed, bias, Y, ldy);
        return;
    }
#pragma omp parallel num_threads(nt)
    dt_dense_worker(omp_get_thread_num(), omp_get_num_threads(), per, M, N, K, X, ldx, packed,
                    bias, Y, ldy);
}
#endif /* DT_OP_DENSE */

