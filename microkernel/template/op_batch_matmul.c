#if DT_OP_BMM
static void dt_bmm_worker(int tid, int nt, int64_t items, int64_t per, int64_t M, int64_t N,
                          int64_t K,
                          const dt_ta *A, int64_t lda, int64_t sa, const dt_tb *B, int64_t ldb,
                          int64_t sb, dt_tc *C, int64_t ldc, int64_t sc)
{
    int64_t i0 = items * tid / nt, i1 = items * (tid + 1) / nt;
    if (i0 >= i1)
        return;
    DT_THREAD_BEGIN();
#if DT_LAYOUT_NT || KG > 1
    const int direct = 0;
#else
    /* a K×NR row-major B (P·V with NR = N = 64) already is its one packed
     * panel: used in place */
    const int direct = N == NR && ldb == NR;
#endif
    /* B is dynamic: each worker packs the matrices it needs, once each, on
     * the stack when small (attention shapes: the call is a few µs and an
     * allocation is a measurable part of it) */
    size_t bytes = ((size_t)DT_STRIPS(N) * NR * (size_t)DT_KP(K) * sizeof(dt_tb) + 63) / 64 * 64;
    dt_tb stack_bp[65536 / sizeof(dt_tb)] __attribute__((aligned(64)));
    dt_tb *bp = direct || bytes <= sizeof stack_bp ? stack_bp : aligned_alloc(64, bytes);
    if (!bp)
        abort(); /* no way to report from here; the runner classifies the crash */
    int64_t packed_b = -1;
    for (int64_t i = i0; i < i1; i++) {
        dt_item it = dt_item_at(i, per, M, N);
        if (it.b != packed_b && !direct) {
#if DT_LAYOUT_NT
            dt_pack_b(K, N, B + it.b * sb, ldb, 1, bp); /* B[b] is N×K */
#else
            dt_pack_b(K, N, B + it.b * sb, 1, ldb, bp); /* B[b] is K×N */
#endif
            packed_b = it.b;
        }
        dt_gemm_range(it.m0, it.m1, it.n0, it.n1, K, A + it.b * sa, lda,
                      direct ? B + it.b * sb : bp, NULL, C + it.b * sc, ldc, NULL);
    }
    DT_THREAD_END();
    if (bp != stack_bp)
        free(bp);
}

/* C[b] = A[b]·B[b] (NN: B[b] is K×N) or A[b]·B[b]ᵀ (NT: B[b] is N×K), for
 * b < batch; lda/ldb/ldc are row strides, sa/sb/sc batch strides.  The name
 * comes from the dtype's types block (dtk_bmm, with a suffix beyond f32). */
DT_EXPORT void DT_FN_BMM(int64_t batch, int64_t M, int64_t N, int64_t K, const dt_ta *A,
                         int64_t lda, int64_t sa, const dt_tb *B, int64_t ldb, int64_t sb,
                         dt_tc *C, int64_t ldc, int64_t sc, int nthreads)
{
    if (batch <= 0 || M <= 0 || N <= 0 || K <= 0)
        return;
    int nt = dt_threads(nthreads);
    /* with a batch to share out, whole matrices are the work items */
    int64_t per = dt_items_per_matrix(M, N, batch >= nt ? 1 : nt);
    int64_t items = batch * per;
    if (items < nt)
        nt = (int)items;
    if (nt <= 1) {
        dt_bmm_worker(0, 1, items, per, M, N, K, A, lda, sa, B, ldb, sb, C, ldc, sc);
        return;
    }
#pragma omp parallel num_threads(nt)
    dt_bmm_worker(omp_get_thread_num(), omp_get_num_threads(), items, per, M, N, K, A, lda, sa,
                  B, ldb, sb, C, ldc, sc);
}
#endif /* DT_OP_BMM */
