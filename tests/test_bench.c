/* Tests of bench/ below the binary: the fast per-shape reference
 * (bench_ref.h) against microkernel/reference.c's plain loops on edge sizes,
 * every epilogue and layout, 1 and 2 threads; that the tolerance it feeds
 * catches a wrong element; and the ratio statistics (bench_stats.h).
 * `dtune bench` itself is tested end to end (test_e2e_bench*.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_ref.h"
#include "bench/bench_stats.h"
#include "microkernel/codegen.h"
#include "microkernel/reference.h"
#include "tests/dt_test.h"

/* Largest |a - b| relative to max(1, |b|) over n values. */
static double max_rel(const double *a, const double *b, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / fmax(1.0, fabs(b[i]));
        if (!(d <= worst)) /* NaN wins */
            worst = d;
    }
    return worst;
}

static void test_ref_dense(void)
{
    static const int64_t dims[][3] = {{1, 1, 1},   {1, 17, 5},  {3, 16, 64},  {4, 33, 70},
                                      {5, 48, 1},  {37, 100, 9}, {130, 40, 33}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (int act = DT_ACT_NONE; act <= DT_ACT_GELU; act++)
            for (int bias = 0; bias < 2; bias++)
                for (int threads = 1; threads <= 2; threads++) {
                    int64_t M = dims[i][0], N = dims[i][1], K = dims[i][2];
                    float *X = malloc((size_t)(M * K) * sizeof *X);
                    float *W = malloc((size_t)(N * K) * sizeof *W);
                    float *b = malloc((size_t)N * sizeof *b);
                    float *Bt = malloc((size_t)(K * dt_bench_ref_ldb(N)) * sizeof *Bt);
                    double *r1 = malloc((size_t)(M * N) * sizeof *r1);
                    double *m1 = malloc((size_t)(M * N) * sizeof *m1);
                    double *r2 = malloc((size_t)(M * N) * sizeof *r2);
                    double *m2 = malloc((size_t)(M * N) * sizeof *m2);
                    CU_ASSERT_FATAL(X && W && b && Bt && r1 && m1 && r2 && m2);
                    dt_fill_random(X, M * K, 1 + i);
                    dt_fill_random(W, N * K, 2 + i);
                    dt_fill_random(b, N, 3 + i);
                    dt_bench_ref_pack(N, K, W, 1, Bt);
                    dt_bench_ref_rows(M, N, K, X, Bt, bias ? b : NULL, act, r1, m1, threads);
                    dt_ref_dense(M, N, K, X, W, bias ? b : NULL, act, r2, m2);
                    double dr = max_rel(r1, r2, M * N), dm = max_rel(m1, m2, M * N);
                    if (!(dr < 1e-12 && dm < 1e-12))
                        fprintf(stderr, "\n  dense %lldx%lldx%lld act=%d bias=%d: %g %g\n",
                                (long long)M, (long long)N, (long long)K, act, bias, dr, dm);
                    CU_ASSERT_TRUE(dr < 1e-12);
                    CU_ASSERT_TRUE(dm < 1e-12);
                    free(X), free(W), free(b), free(Bt), free(r1), free(m1), free(r2), free(m2);
                }
}

static void test_ref_bmm(void)
{
    static const int64_t dims[][4] = {{1, 1, 1, 1}, {3, 5, 17, 9}, {2, 70, 150, 40},
                                      {12, 13, 13, 64}, {12, 13, 64, 13}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (int nt = 0; nt < 2; nt++) {
            int64_t B = dims[i][0], M = dims[i][1], N = dims[i][2], K = dims[i][3];
            float *A = malloc((size_t)(B * M * K) * sizeof *A);
            float *Bm = malloc((size_t)(B * N * K) * sizeof *Bm);
            float *Bt = malloc((size_t)(K * dt_bench_ref_ldb(N)) * sizeof *Bt);
            double *r1 = malloc((size_t)(B * M * N) * sizeof *r1);
            double *m1 = malloc((size_t)(B * M * N) * sizeof *m1);
            double *r2 = malloc((size_t)(B * M * N) * sizeof *r2);
            double *m2 = malloc((size_t)(B * M * N) * sizeof *m2);
            CU_ASSERT_FATAL(A && Bm && Bt && r1 && m1 && r2 && m2);
            dt_fill_random(A, B * M * K, 5 + i);
            dt_fill_random(Bm, B * N * K, 6 + i);
            for (int64_t b = 0; b < B; b++) { /* as the bench does: one matrix at a time */
                dt_bench_ref_pack(N, K, Bm + b * N * K, nt, Bt);
                dt_bench_ref_rows(M, N, K, A + b * M * K, Bt, NULL, DT_ACT_NONE,
                                  r1 + b * M * N, m1 + b * M * N, 2);
            }
            dt_ref_bmm(B, M, N, K, A, Bm, nt, r2, m2);
            CU_ASSERT_TRUE(max_rel(r1, r2, B * M * N) < 1e-12);
            CU_ASSERT_TRUE(max_rel(m1, m2, B * M * N) < 1e-12);
            free(A), free(Bm), free(Bt), free(r1), free(m1), free(r2), free(m2);
        }
}

/* The reference and dt_check_close catch one wrong element of a float
 * result, and pass the float result itself. */
static void test_ref_catches(void)
{
    int64_t M = 9, N = 40, K = 300;
    float *X = malloc((size_t)(M * K) * sizeof *X), *W = malloc((size_t)(N * K) * sizeof *W);
    float *Bt = malloc((size_t)(K * dt_bench_ref_ldb(N)) * sizeof *Bt);
    float *Y = malloc((size_t)(M * N) * sizeof *Y);
    double *ref = malloc((size_t)(M * N) * sizeof *ref), *mag = malloc((size_t)(M * N) * sizeof *mag);
    CU_ASSERT_FATAL(X && W && Bt && Y && ref && mag);
    dt_fill_random(X, M * K, 11);
    dt_fill_random(W, N * K, 12);
    dt_bench_ref_pack(N, K, W, 1, Bt);
    dt_bench_ref_rows(M, N, K, X, Bt, NULL, DT_ACT_NONE, ref, mag, 1);
    for (int64_t i = 0; i < M; i++) /* a float computation in another order */
        for (int64_t j = 0; j < N; j++) {
            float s = 0;
            for (int64_t k = K - 1; k >= 0; k--)
                s += X[i * K + k] * W[j * K + k];
            Y[i * N + j] = s;
        }
    dt_err e;
    CU_ASSERT_EQUAL(dt_check_close(Y, N, ref, mag, M, N, K, &e), 0);
    /* off by 0.05: ten times the tolerance (~(K+8)·2⁻²³·Σ|x·w| ~ 3e-3) */
    Y[5 * N + 33] += 0.05f;
    CU_ASSERT_EQUAL(dt_check_close(Y, N, ref, mag, M, N, K, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "[5,33]"));
    Y[5 * N + 33] = NAN;
    CU_ASSERT_EQUAL(dt_check_close(Y, N, ref, mag, M, N, K, &e), DT_EINVAL);
    free(X), free(W), free(Bt), free(Y), free(ref), free(mag);
}

static void test_ratio_stats(void)
{
    dt_ratio_stats st;
    dt_ratio_stats_init(&st, 0.9);
    CU_ASSERT_EQUAL(st.n, 0);
    CU_ASSERT_TRUE(isnan(dt_ratio_stats_geomean(&st)));
    CU_ASSERT_EQUAL(st.min_at, -1);
    dt_ratio_stats_add(&st, 2.0, 0);
    dt_ratio_stats_add(&st, 0.5, 1);
    dt_ratio_stats_add(&st, NAN, 2);     /* ignored */
    dt_ratio_stats_add(&st, INFINITY, 3); /* ignored */
    dt_ratio_stats_add(&st, 0.0, 4);      /* ignored */
    dt_ratio_stats_add(&st, 0.89, 5);
    dt_ratio_stats_add(&st, 0.9, 6);      /* not below */
    CU_ASSERT_EQUAL(st.n, 4);
    CU_ASSERT_DOUBLE_EQUAL(dt_ratio_stats_geomean(&st), pow(2.0 * 0.5 * 0.89 * 0.9, 0.25), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(st.min, 0.5, 0);
    CU_ASSERT_EQUAL(st.min_at, 1);
    CU_ASSERT_EQUAL(st.below, 2);

    CU_ASSERT_TRUE(dt_bench_is_onednn("onednn"));
    CU_ASSERT_TRUE(dt_bench_is_onednn("onednn_rt"));
    CU_ASSERT_TRUE(dt_bench_is_onednn("dnnl_sgemm"));
    CU_ASSERT_FALSE(dt_bench_is_onednn("openblas"));
    CU_ASSERT_FALSE(dt_bench_is_onednn("libxsmm"));
}

/* The strongest oneDNN peer of a shape, from a hand-made result. */
static void test_onednn_best(void)
{
    dt_bench_cand cands[4] = {{.kind = DT_CAND_KERNEL, .name = "k0"},
                              {.kind = DT_CAND_PEER, .name = "onednn"},
                              {.kind = DT_CAND_PEER, .name = "onednn_rt"},
                              {.kind = DT_CAND_PEER, .name = "openblas"}};
    double gflop[2] = {1.0, 2.0};
    /* [cand][shape] seconds: shape 0 onednn_rt is faster; shape 1 only openblas ran */
    double sec[8] = {0.01, 0.02, 0.02, NAN, 0.01, NAN, 0.001, 0.01};
    dt_bench_result r = {.nshapes = 2, .gflop = gflop, .ncands = 4, .cands = cands,
                         .seconds = sec};
    int which;
    CU_ASSERT_DOUBLE_EQUAL(dt_bench_onednn_best(&r, 0, &which), 100.0, 1e-9);
    CU_ASSERT_EQUAL(which, 2);
    CU_ASSERT_TRUE(isnan(dt_bench_onednn_best(&r, 1, &which)));
    CU_ASSERT_EQUAL(which, -1);
    CU_ASSERT_DOUBLE_EQUAL(dt_bench_gflops(&r, 0, 1), 100.0, 1e-9);
    CU_ASSERT_TRUE(isnan(dt_bench_gflops(&r, 1, 1)));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"fast reference: dense, every epilogue, edge sizes", test_ref_dense},
        {"fast reference: batch_matmul NN and NT", test_ref_bmm},
        {"the check catches one wrong element", test_ref_catches},
        {"ratio statistics", test_ratio_stats},
        {"strongest oneDNN peer per shape", test_onednn_best},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"bench", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
