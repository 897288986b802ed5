/* Tests of bench/ below the binary: the per-shape reference as the bench
 * computes it (microkernel/reference.h: B packed per matrix, blocks spread
 * over threads) against plain loops on edge sizes, every epilogue and
 * layout, whole and in blocks that cut its tiles; the ops' GEMM views those
 * stand for; that the tolerance it feeds catches a wrong element; and the
 * ratio statistics (bench_stats.h); each kernel's back-end and the peak
 * kind of its %peak (bench.h).
 * `dtune bench` itself is tested end to end (test_e2e_bench*.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_stats.h"
#include "microkernel/codegen.h"
#include "microkernel/reference.h"
#include "backends/backend.h"
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

/* The test's own oracle: the plain triple loop of g over contiguous
 * tensors, in double. */
static void plain_gemm(const dt_gemm *g, const float *A, const float *B, const float *bias,
                       double *ref, double *mag)
{
    const int64_t M = g->M, N = g->N, K = g->K;
    for (int64_t b = 0; b < g->batch; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, m = 0;
                for (int64_t k = 0; k < K; k++) {
                    double w = g->b_trans ? B[b * N * K + j * K + k] : B[b * K * N + k * N + j];
                    double t = (double)A[b * M * K + i * K + k] * w;
                    s += t;
                    m += fabs(t);
                }
                if (g->bias) {
                    s += bias[j];
                    m += fabs(bias[j]);
                }
                if (g->act == DT_ACT_RELU)
                    s = s > 0 ? s : 0;
                else if (g->act == DT_ACT_GELU)
                    s = 0.5 * s * (1.0 + erf(s / sqrt(2.0)));
                ref[(b * M + i) * N + j] = s;
                mag[(b * M + i) * N + j] = m;
            }
}

/* The reference as `dtune bench` computes it on a shape: B packed per
 * matrix, blocks of rows × cols (the bench's parallel items) — or, with
 * rows = 0, dt_ref_gemm in one call. */
static void ref_in_blocks(const dt_gemm *g, const float *A, const float *B, const float *bias,
                          int64_t rows, int64_t cols, double *ref, double *mag)
{
    const int64_t M = g->M, N = g->N;
    if (!rows) {
        dt_err e;
        CU_ASSERT_EQUAL(dt_ref_gemm(g, A, B, bias, NULL, ref, mag, &e), 0);
        return;
    }
    float *bt = malloc((size_t)(g->K * dt_ref_ldb(N)) * sizeof *bt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bt);
    for (int64_t b = 0; b < g->batch; b++) {
        dt_ref_pack_b(g, B, b, bt);
        for (int64_t i0 = 0; i0 < M; i0 += rows)
            for (int64_t j0 = 0; j0 < N; j0 += cols) {
                int64_t i1 = i0 + rows < M ? i0 + rows : M, j1 = j0 + cols < N ? j0 + cols : N;
                int64_t off = (b * M + i0) * N + j0;
                dt_ref_block(g, A, b, bt, bias, NULL, i0, i1, j0, j1, ref + off, mag + off, N);
            }
    }
    free(bt);
}

/* Block shapes: whole (dt_ref_gemm), the bench's 4 x 64, and odd ones that
 * cut tiles (rows not a multiple of 4, columns not of 16). */
static const int64_t g_blocks[][2] = {{0, 0}, {4, 64}, {3, 5}, {1, 1}, {7, 17}};
#define N_BLOCKS ((int)(sizeof g_blocks / sizeof g_blocks[0]))

static void test_ref_dense(void)
{
    static const int64_t dims[][3] = {{1, 1, 1},   {1, 17, 5},  {3, 16, 64},  {4, 33, 70},
                                      {5, 48, 1},  {37, 100, 9}, {130, 40, 33}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (int act = DT_ACT_NONE; act <= DT_ACT_GELU; act++)
            for (int bias = 0; bias < 2; bias++)
                for (int bl = 0; bl < N_BLOCKS; bl++) {
                    int64_t M = dims[i][0], N = dims[i][1], K = dims[i][2];
                    /* constant weights W[N,K]: dense's GEMM view */
                    dt_gemm g = {.dim = {-1, 0, 1, 2}, .batch = 1, .M = M, .N = N, .K = K,
                                 .b_trans = 1, .b_const = 1, .bias = bias, .act = act};
                    float *X = malloc((size_t)(M * K) * sizeof *X);
                    float *W = malloc((size_t)(N * K) * sizeof *W);
                    float *b = malloc((size_t)N * sizeof *b);
                    double *r1 = malloc((size_t)(M * N) * sizeof *r1);
                    double *m1 = malloc((size_t)(M * N) * sizeof *m1);
                    double *r2 = malloc((size_t)(M * N) * sizeof *r2);
                    double *m2 = malloc((size_t)(M * N) * sizeof *m2);
                    CU_ASSERT_FATAL(X && W && b && r1 && m1 && r2 && m2);
                    dt_fill_random(X, M * K, 1 + i);
                    dt_fill_random(W, N * K, 2 + i);
                    dt_fill_random(b, N, 3 + i);
                    ref_in_blocks(&g, X, W, b, g_blocks[bl][0], g_blocks[bl][1], r1, m1);
                    plain_gemm(&g, X, W, b, r2, m2);
                    double dr = max_rel(r1, r2, M * N), dm = max_rel(m1, m2, M * N);
                    if (!(dr < 1e-12 && dm < 1e-12))
                        fprintf(stderr, "\n  dense %lldx%lldx%lld act=%d bias=%d: %g %g\n",
                                (long long)M, (long long)N, (long long)K, act, bias, dr, dm);
                    CU_ASSERT_TRUE(dr < 1e-12);
                    CU_ASSERT_TRUE(dm < 1e-12);
                    free(X), free(W), free(b), free(r1), free(m1), free(r2), free(m2);
                }
}

static void test_ref_bmm(void)
{
    static const int64_t dims[][4] = {{1, 1, 1, 1}, {3, 5, 17, 9}, {2, 70, 150, 40},
                                      {12, 13, 13, 64}, {12, 13, 64, 13}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (int nt = 0; nt < 2; nt++)
            for (int bl = 0; bl < N_BLOCKS; bl++) {
                int64_t B = dims[i][0], M = dims[i][1], N = dims[i][2], K = dims[i][3];
                /* batch_matmul's GEMM view, NN or NT */
                dt_gemm g = {.dim = {0, 1, 2, 3}, .batched = 1, .batch = B, .M = M, .N = N, .K = K,
                             .b_trans = nt};
                float *A = malloc((size_t)(B * M * K) * sizeof *A);
                float *Bm = malloc((size_t)(B * N * K) * sizeof *Bm);
                double *r1 = malloc((size_t)(B * M * N) * sizeof *r1);
                double *m1 = malloc((size_t)(B * M * N) * sizeof *m1);
                double *r2 = malloc((size_t)(B * M * N) * sizeof *r2);
                double *m2 = malloc((size_t)(B * M * N) * sizeof *m2);
                CU_ASSERT_FATAL(A && Bm && r1 && m1 && r2 && m2);
                dt_fill_random(A, B * M * K, 5 + i);
                dt_fill_random(Bm, B * N * K, 6 + i);
                ref_in_blocks(&g, A, Bm, NULL, g_blocks[bl][0], g_blocks[bl][1], r1, m1);
                plain_gemm(&g, A, Bm, NULL, r2, m2);
                CU_ASSERT_TRUE(max_rel(r1, r2, B * M * N) < 1e-12);
                CU_ASSERT_TRUE(max_rel(m1, m2, B * M * N) < 1e-12);
                free(A), free(Bm), free(r1), free(m1), free(r2), free(m2);
            }
}

/* The op's own GEMM views are what the hand-written ones above say. */
static void test_gemm_views(void)
{
    dt_gemm g;
    dt_err e;
    int attrs[DT_MAX_ATTRS] = {0};
    const dt_op_desc *dense = dt_op_find("dense"), *bmm = dt_op_find("batch_matmul");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bmm);
    attrs[0] = dt_attr_value_index(&dense->attrs[0], "bias+gelu");
    int64_t dd[] = {37, 768, 3072};
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(dense, attrs, dd, &g, &e), 0);
    CU_ASSERT(g.dim[DT_ROLE_BATCH] == -1 && !g.batched && g.batch == 1 && g.M == 37 &&
              g.N == 768 && g.K == 3072);
    CU_ASSERT(g.b_trans && g.b_const && g.bias && g.act == DT_ACT_GELU);
    attrs[0] = dt_attr_value_index(&dense->attrs[0], "relu");
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(dense, attrs, NULL, &g, &e), 0);
    CU_ASSERT(!g.bias && g.act == DT_ACT_RELU && g.M == 0);
    int64_t bd[] = {12, 13, 64, 13};
    for (int nt = 0; nt < 2; nt++) {
        attrs[0] = dt_attr_value_index(&bmm->attrs[0], nt ? "NT" : "NN");
        CU_ASSERT_EQUAL_FATAL(dt_op_gemm(bmm, attrs, bd, &g, &e), 0);
        CU_ASSERT(g.dim[DT_ROLE_BATCH] == 0 && g.batched && g.batch == 12 && g.M == 13 &&
                  g.N == 64 && g.K == 13);
        CU_ASSERT(g.b_trans == nt && !g.b_const && !g.bias && g.act == DT_ACT_NONE);
    }
}

/* The reference and dt_check_close catch one wrong element of a float
 * result, and pass the float result itself. */
static void test_ref_catches(void)
{
    int64_t M = 9, N = 40, K = 300;
    float *X = malloc((size_t)(M * K) * sizeof *X), *W = malloc((size_t)(N * K) * sizeof *W);
    float *Y = malloc((size_t)(M * N) * sizeof *Y);
    double *ref = malloc((size_t)(M * N) * sizeof *ref), *mag = malloc((size_t)(M * N) * sizeof *mag);
    CU_ASSERT_FATAL(X && W && Y && ref && mag);
    dt_fill_random(X, M * K, 11);
    dt_fill_random(W, N * K, 12);
    dt_gemm g = {.dim = {-1, 0, 1, 2}, .batch = 1, .M = M, .N = N, .K = K, .b_trans = 1,
                 .b_const = 1};
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, X, W, NULL, NULL, ref, mag, &e), 0);
    for (int64_t i = 0; i < M; i++) /* a float computation in another order */
        for (int64_t j = 0; j < N; j++) {
            float s = 0;
            for (int64_t k = K - 1; k >= 0; k--)
                s += X[i * K + k] * W[j * K + k];
            Y[i * N + j] = s;
        }
    CU_ASSERT_EQUAL(dt_check_close(Y, N, ref, mag, M, N, K, &e), 0);
    /* off by 0.05: ten times the tolerance (~(K+8)·2⁻²³·Σ|x·w| ~ 3e-3) */
    Y[5 * N + 33] += 0.05f;
    CU_ASSERT_EQUAL(dt_check_close(Y, N, ref, mag, M, N, K, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "[5,33]"));
    Y[5 * N + 33] = NAN;
    CU_ASSERT_EQUAL(dt_check_close(Y, N, ref, mag, M, N, K, &e), DT_EINVAL);
    free(X), free(W), free(Y), free(ref), free(mag);
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

/* Every back-end row: the name and peak kind bench gives an annotation of
 * its isa and unit; the dtype's vector peak; the peaks text and a
 * candidate's peak on a hand-made result. */
static void test_backend_peaks(void)
{
    for (int i = 0; i < dt_backend_count(); i++) {
        const dt_backend *row = dt_backend_at(i);
        dt_annotation a = {.isa = row->isa, .unit = row->unit};
        char name[32], want[48];
        dt_peak_kind k = dt_bench_backend(row->dtype, &a, name, sizeof name);
        CU_ASSERT_STRING_EQUAL(name, dt_backend_full_name(row, want, sizeof want));
        CU_ASSERT_STRING_EQUAL(dt_peak_kind_name(k), row->peak);
    }
    dt_target t;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&t, &e), 0);
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        dt_peak_kind k = dt_bench_dtype_peak((dt_dtype)d, &t);
        const dt_backend *row = dt_backend_of((dt_dtype)d, t.isa);
        if (dt_dtype_native((dt_dtype)d, &t, NULL)) {
            CU_ASSERT_STRING_EQUAL(dt_peak_kind_name(k), row->peak);
        } else {
            CU_ASSERT_EQUAL(k, DT_PEAK_F32_FMA);
        }
    }
    dt_target g = t; /* on the generic isa every dtype's vector peak is the FMA's */
    dt_target_set_isa(&g, DT_ISA_GENERIC);
    for (int d = 0; d < DT_DTYPE_COUNT; d++)
        CU_ASSERT_EQUAL(dt_bench_dtype_peak((dt_dtype)d, &g), DT_PEAK_F32_FMA);

    dt_bench_cand cands[2] = {{.kind = DT_CAND_KERNEL, .peak_kind = DT_PEAK_AMX_BF16},
                              {.kind = DT_CAND_KERNEL, .peak_kind = DT_PEAK_INT8_DP}};
    dt_bench_result r = {.ncands = 2, .cands = cands, .peak_kind = DT_PEAK_BF16_DP};
    for (int k = 0; k < DT_PEAK_COUNT; k++)
        r.peaks[k] = r.peaks1[k] = NAN;
    r.peaks[DT_PEAK_BF16_DP] = r.peaks1[DT_PEAK_BF16_DP] = 110.4;
    r.peaks[DT_PEAK_AMX_BF16] = 3267.0;
    r.peaks1[DT_PEAK_AMX_BF16] = 1633.5;
    r.peaks[DT_PEAK_F32_FMA] = r.peaks1[DT_PEAK_F32_FMA] = 55.3;
    char text[256];
    CU_ASSERT_STRING_EQUAL(dt_bench_peaks_text(&r, text, sizeof text),
                           "bf16 110.4 GFLOP/s (1 thread 110.4), f32 55.3 GFLOP/s (1 thread "
                           "55.3), amx_bf16 3267.0 GFLOP/s (1 thread 1633.5)");
    CU_ASSERT_DOUBLE_EQUAL(dt_bench_cand_peak(&r, 0), 3267.0, 1e-9);
    CU_ASSERT_TRUE(isnan(dt_bench_cand_peak(&r, 1))); /* int8 not measured */
    for (int k = 0; k < DT_PEAK_COUNT; k++)
        r.peaks[k] = NAN;
    CU_ASSERT_STRING_EQUAL(dt_bench_peaks_text(&r, text, sizeof text), "bf16 n/a");
}

/* The dtype rows' peak kinds and peers (dtypes/dtype.h), which
 * dt_bench_dtype_peak and the peers' problem read: a dtype's peak is the
 * peak of each of its own vector rows (so a native dtype's ceiling is what
 * it was when bench read the back-end row), its portable rows run the f32
 * FMA (the non-native ceiling), and its peers run a dtype the peers
 * compute. */
static void test_dtype_rows(void)
{
    for (int i = 0; i < dt_backend_count(); i++) {
        const dt_backend *b = dt_backend_at(i);
        const dt_dtype_row *r = dt_dtype_info(b->dtype);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        if (b->portable)
            CU_ASSERT_STRING_EQUAL(b->peak, dt_peak_kind_name(DT_PEAK_F32_FMA));
        if (!b->portable && b->unit == DT_UNIT_VEC)
            CU_ASSERT_STRING_EQUAL(b->peak, r->peak);
    }
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const char *peer = dt_dtype_info((dt_dtype)d)->peer;
        CU_ASSERT_TRUE(strcmp(peer, "f32") == 0 || strcmp(peer, "bf16") == 0 ||
                       strcmp(peer, "int8") == 0);
        int named = 0;
        const char *peak = dt_dtype_info((dt_dtype)d)->peak;
        for (int k = 0; k < DT_PEAK_COUNT; k++)
            named += strcmp(dt_peak_kind_name((dt_peak_kind)k), peak) == 0;
        CU_ASSERT_EQUAL(named, 1);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"reference: dense, every epilogue, edge sizes, blocks", test_ref_dense},
        {"reference: batch_matmul NN and NT, blocks", test_ref_bmm},
        {"the ops' GEMM views", test_gemm_views},
        {"the check catches one wrong element", test_ref_catches},
        {"ratio statistics", test_ratio_stats},
        {"strongest oneDNN peer per shape", test_onednn_best},
        {"each kernel's back-end and the peak kind of its %peak", test_backend_peaks},
        {"the dtype rows' peak kinds and peers", test_dtype_rows},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"bench", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
