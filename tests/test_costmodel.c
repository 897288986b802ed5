/* Tests of costmodel/: feature extraction on a hand-built annotation, f_adapt
 * on hand-computed cases (docs/cost-model.md), the XGBoost wrapper (learning
 * a synthetic throughput, save/load, errors) and the ranking measures; and
 * the one held-out τ (tuner/quality.h) on hand-made rankings with known
 * answers, with the held-out minimum of dt_predictor_evaluate.
 * Targets are built by hand, never detected, so results are deterministic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "costmodel/adapt.h"
#include "costmodel/features.h"
#include "costmodel/point.h"
#include "costmodel/xgb.h"
#include "space/annotation.h"
#include "ops/op.h"
#include "tests/dt_test.h"
#include "tuner/predictor.h"
#include "tuner/quality.h"

#define KiB(x) ((uint64_t)(x) << 10)
#define MiB(x) ((uint64_t)(x) << 20)
#define NEAR(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (b), 1e-9)

/* This machine: AVX-512, 2 cores, 48K / 1M / 32M. */
static dt_target t_avx512(void)
{
    dt_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.arch, sizeof t.arch, "x86_64");
    snprintf(t.vendor, sizeof t.vendor, "test");
    snprintf(t.model, sizeof t.model, "Test CPU");
    t.isa_max = DT_ISA_AVX512;
    dt_target_set_isa(&t, DT_ISA_AVX512);
    t.logical_cpus = t.physical_cores = t.cores = 2;
    t.l1d.size = KiB(48);
    t.l2.size = MiB(1);
    t.l3.size = MiB(32);
    t.line_size = 64;
    return t;
}

static dt_annotation blocked(int mr, int nr, int kc, int mc, int nc, dt_par_axis par, int threads)
{
    dt_annotation a = {.sketch = DT_SKETCH_BLOCKED, .isa = DT_ISA_AVX512, .mr = mr, .nr = nr,
                       .kc = kc, .mc = mc, .nc = nc, .unroll = 4, .prefetch = 2,
                       .store = DT_STORE_MASK, .order = DT_ORDER_M_INNER, .par = par,
                       .threads = threads};
    return a;
}

static dt_annotation stream(int mr, int nr, int nc, dt_par_axis par, int threads)
{
    dt_annotation a = {.sketch = DT_SKETCH_STREAM, .isa = DT_ISA_AVX512, .mr = mr, .nr = nr,
                       .kc = 0, .mc = 0, .nc = nc, .unroll = 1, .prefetch = 0,
                       .store = DT_STORE_MASK, .order = DT_ORDER_M_INNER, .par = par,
                       .threads = threads};
    return a;
}

/* ---- features -------------------------------------------------------------- */

/* The one-hot column of an op: its place in the registry. */
static int op_col(const char *name)
{
    return DT_CMF_OP_FIRST + dt_op_index(dt_op_find(name));
}

static void test_features(void)
{
    dt_target t = t_avx512();
    dt_annotation a = blocked(6, 32, 256, 96, 512, DT_PAR_N, 2);
    dt_err e;
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &t, &e), 0);
    float f[DT_NFEATURES + 1];
    CU_ASSERT_EQUAL(dt_features(&a, &t, "dense", f, DT_NFEATURES + 1), DT_NFEATURES);
    NEAR(f[DT_CMF_MR], 6);
    NEAR(f[DT_CMF_NR], 32);
    NEAR(f[DT_CMF_NR_VEC], 2);
    NEAR(f[DT_CMF_ACC], 12);
    NEAR(f[DT_CMF_REG_PRESSURE], 15.0 / 32);
    NEAR(f[DT_CMF_KC], 256);
    NEAR(f[DT_CMF_MC], 96);
    NEAR(f[DT_CMF_NC], 512);
    NEAR(f[DT_CMF_UNROLL], 4);
    NEAR(f[DT_CMF_PREFETCH], 2);
    CU_ASSERT_DOUBLE_EQUAL(f[DT_CMF_B_PANEL_L1], 2.0 / 3, 1e-6);
    NEAR(f[DT_CMF_A_BLOCK_L2], 0.09375);
    NEAR(f[DT_CMF_B_BLOCK_L2], 0.5);
    NEAR(f[DT_CMF_B_BLOCK_L3], 1.0 / 64);
    CU_ASSERT_DOUBLE_EQUAL(f[DT_CMF_AI_REG], 384.0 / 152, 1e-6);
    NEAR(f[DT_CMF_VEC_FLOATS], 16);
    NEAR(f[DT_CMF_SKETCH_BLOCKED], 1);
    NEAR(f[DT_CMF_SKETCH_STREAM], 0);
    NEAR(f[DT_CMF_PAR_N], 1);
    NEAR(f[DT_CMF_PAR_M], 0);
    NEAR(f[DT_CMF_PAR_MN], 0);
    NEAR(f[DT_CMF_ORDER], 0);
    NEAR(f[DT_CMF_STORE], 0);
    NEAR(f[DT_CMF_THREADS], 2);
    NEAR(f[DT_CMF_THREADS_FRAC], 1);
    NEAR(f[op_col("dense")], 1);
    NEAR(f[op_col("batch_matmul")], 0);

    /* stream: no K block, so the cache ratios that use kc are 0 */
    dt_annotation s = stream(4, 64, 256, DT_PAR_M, 1);
    CU_ASSERT_EQUAL(dt_features(&s, &t, "batch_matmul", f, DT_NFEATURES), DT_NFEATURES);
    NEAR(f[DT_CMF_KC], 0);
    NEAR(f[DT_CMF_B_PANEL_L1], 0);
    NEAR(f[DT_CMF_A_BLOCK_L2], 0);
    NEAR(f[DT_CMF_B_BLOCK_L3], 0);
    NEAR(f[DT_CMF_ACC], 16);
    NEAR(f[DT_CMF_SKETCH_STREAM], 1);
    NEAR(f[DT_CMF_PAR_M], 1);
    NEAR(f[DT_CMF_THREADS_FRAC], 0.5);
    NEAR(f[op_col("dense")], 0);
    NEAR(f[op_col("batch_matmul")], 1);

    /* errors and names */
    CU_ASSERT(dt_features(&a, &t, "dense", f, DT_NFEATURES - 1) < 0);
    CU_ASSERT(dt_features(&a, &t, "no_such_op", f, DT_NFEATURES) < 0);
    CU_ASSERT(dt_features(NULL, &t, "dense", f, DT_NFEATURES) < 0);
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(0), "mr");
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(DT_CMF_ACC), "acc");
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(DT_NFEATURES - 1), "op_conv2d");
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(DT_NFEATURES - 2), "op_batch_matmul");
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(DT_NFEATURES - 3), "op_dense");
    CU_ASSERT_EQUAL(DT_NFEATURES, 30); /* rows have 30 + 4 columns, bound by name */
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(DT_CMF_SKETCH_CHANNEL), "sketch_channel");
    CU_ASSERT_EQUAL(op_col("dense"), 27);
    CU_ASSERT_EQUAL(op_col("batch_matmul"), 28);
    CU_ASSERT_EQUAL(op_col("conv2d"), 29);
    CU_ASSERT_STRING_EQUAL(dt_cm_feature_name(DT_NFEATURES), "?");
    for (int i = 0; i < DT_NFEATURES; i++)
        for (int j = i + 1; j < DT_NFEATURES; j++)
            CU_ASSERT(strcmp(dt_cm_feature_name(i), dt_cm_feature_name(j)) != 0);
}

/* ---- f_adapt --------------------------------------------------------------- */

static dt_adapt adapt_ok(const char *op, const int64_t *dims, dt_annotation a)
{
    dt_target t = t_avx512();
    dt_adapt r;
    dt_err e;
    memset(&r, 0, sizeof r);
    int rc = dt_f_adapt(dt_op_find(op), dims, &a, &t, &r, &e);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "f_adapt: %s\n", e.msg);
    NEAR(r.total, r.padding * r.balance * r.packing);
    /* the same through the op's GEMM view (what cost-model points use) */
    dt_gemm g;
    dt_adapt r2;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(dt_op_find(op), NULL, dims, &g, &e), 0);
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&g, &a, &t, &r2, &e), 0);
    CU_ASSERT_EQUAL(memcmp(&r, &r2, sizeof r), 0);
    CU_ASSERT(r.total > 0 && r.total <= 1);
    return r;
}

static void test_adapt_padding(void)
{
    /* M=37, MR=8 -> 37/40; N=768, NR=48 -> 1 */
    int64_t d1[] = {37, 768, 768};
    dt_adapt r = adapt_ok("dense", d1, blocked(8, 48, 256, 64, 384, DT_PAR_N, 1));
    NEAR(r.padding, 37.0 / 40);
    NEAR(r.balance, 1);
    /* A: 37 rows padded to 40, K = 768, two NC blocks of 384 -> 61440 copies */
    NEAR(r.copies, 40.0 * 768 * 2);
    NEAR(r.flops, 2.0 * 37 * 768 * 768);
    NEAR(r.packing, r.flops / (r.flops + DT_ADAPT_COPY_FLOPS * 61440));

    /* both dims padded: M=5 MR=4 -> 5/8, N=100 NR=32 -> 100/128 */
    int64_t d2[] = {5, 100, 64};
    r = adapt_ok("dense", d2, stream(4, 32, 64, DT_PAR_M, 1));
    NEAR(r.padding, (5.0 * 100) / (8.0 * 128));
    NEAR(r.packing, 1); /* stream dense: nothing packed at run time */
    NEAR(r.copies, 0);

    /* a convolution's stream tiles end at each output row's end: rows of
     * OW = 14 (16 px, 3×3, unpadded; M = 2·14·14 = 392) pad 14 to 15 with
     * MR 5 and to 18 with MR 6, where the flat M would give 392/395 and
     * 392/396; none with MR 14; the blocked sketch's tiles run over the
     * flat M */
    int64_t dc[] = {2, 16, 16, 256, 256, 3, 3};
    r = adapt_ok("conv2d", dc, stream(5, 64, 64, DT_PAR_M, 1));
    NEAR(r.padding, 14.0 / 15);
    r = adapt_ok("conv2d", dc, stream(6, 64, 64, DT_PAR_M, 1));
    NEAR(r.padding, 14.0 / 18);
    r = adapt_ok("conv2d", dc, stream(14, 32, 32, DT_PAR_M, 1));
    NEAR(r.padding, 1);
    r = adapt_ok("conv2d", dc, blocked(5, 64, 256, 40, 256, DT_PAR_M, 1));
    NEAR(r.padding, 392.0 / 395);
}

static void test_adapt_balance(void)
{
    /* par n, 2 threads, N=700, NR=64 -> 11 strips -> 11/12 */
    int64_t d[] = {64, 700, 128};
    dt_adapt r = adapt_ok("dense", d, blocked(8, 64, 128, 64, 256, DT_PAR_N, 2));
    CU_ASSERT_EQUAL(r.units, 11);
    CU_ASSERT_EQUAL(r.items, 2);
    NEAR(r.balance, 11.0 / 12);
    NEAR(r.padding, 700.0 / 704);
    /* ranges of 5 and 6 strips (320 and 380 columns): 2 + 2 NC blocks of 256,
     * A (64 rows, K = 128) packed in each */
    NEAR(r.copies, 64.0 * 128 * 4);

    /* fewer strips than threads: 1 strip on 2 threads -> 1/2 */
    int64_t d1[] = {64, 40, 128};
    r = adapt_ok("dense", d1, blocked(8, 64, 128, 64, 256, DT_PAR_N, 2));
    NEAR(r.balance, 0.5);

    /* par m, stream: M=37, MR=6 -> 7 blocks on 2 threads -> 7/8 */
    int64_t d2[] = {37, 256, 64};
    r = adapt_ok("dense", d2, stream(6, 32, 256, DT_PAR_M, 2));
    CU_ASSERT_EQUAL(r.units, 7);
    NEAR(r.balance, 7.0 / 8);

    /* par m, blocked: blocks of MC = 32 rows: M=100 -> 4 blocks on 2 threads -> 1 */
    int64_t d3[] = {100, 256, 64};
    r = adapt_ok("dense", d3, blocked(8, 32, 64, 32, 256, DT_PAR_M, 2));
    CU_ASSERT_EQUAL(r.units, 4);
    NEAR(r.balance, 1);

    /* par mn: M=100 MC=32, N=768 NC=256 -> 4 x 3 = 12 cells; 2 threads -> 1 */
    int64_t d4[] = {100, 768, 64};
    r = adapt_ok("dense", d4, blocked(8, 32, 64, 32, 256, DT_PAR_MN, 2));
    CU_ASSERT_EQUAL(r.units, 12);
    NEAR(r.balance, 1);
    /* ... on 5 threads: 12 / (3 * 5) = 0.8 */
    r = adapt_ok("dense", d4, blocked(8, 32, 64, 32, 256, DT_PAR_MN, 5));
    NEAR(r.balance, 0.8);
}

static void test_adapt_bmm(void)
{
    /* B=12 >= threads: whole matrices are the items; 6 per thread -> 1 */
    int64_t d[] = {12, 37, 37, 64};
    dt_adapt r = adapt_ok("batch_matmul", d, stream(4, 16, 16, DT_PAR_N, 2));
    CU_ASSERT_EQUAL(r.items, 12);
    NEAR(r.balance, 1);
    NEAR(r.padding, (37.0 * 37) / (40.0 * 48));
    /* each thread packs each of its 6 matrices' B: 12 x 48 x 64 copies */
    NEAR(r.copies, 12.0 * 48 * 64);
    NEAR(r.flops, 2.0 * 12 * 37 * 37 * 64);
    NEAR(r.packing, r.flops / (r.flops + DT_ADAPT_COPY_FLOPS * r.copies));

    /* B=3 on 2 threads: 2 and 1 matrices -> 3/4 */
    int64_t d1[] = {3, 37, 37, 64};
    r = adapt_ok("batch_matmul", d1, stream(4, 16, 16, DT_PAR_N, 2));
    NEAR(r.balance, 0.75);

    /* B=1 on 2 threads, par n: 3 strips split 1 + 2 -> 3/4; both threads pack B */
    int64_t d2[] = {1, 37, 37, 64};
    r = adapt_ok("batch_matmul", d2, stream(4, 16, 16, DT_PAR_N, 2));
    CU_ASSERT_EQUAL(r.items, 2);
    NEAR(r.balance, 0.75);
    NEAR(r.copies, 2.0 * 48 * 64);
}

static void test_adapt_errors(void)
{
    dt_target t = t_avx512();
    dt_adapt r;
    dt_err e;
    dt_annotation a = blocked(8, 32, 64, 32, 256, DT_PAR_N, 2);
    int64_t bad[] = {0, 768, 768};
    CU_ASSERT_EQUAL(dt_f_adapt(dt_op_find("dense"), bad, &a, &t, &r, &e), DT_EINVAL);
    CU_ASSERT(strstr(e.msg, "M") != NULL);
    int64_t ok[] = {1, 768, 768};
    dt_annotation z = a;
    z.mr = 0;
    CU_ASSERT_EQUAL(dt_f_adapt(dt_op_find("dense"), ok, &z, &t, &r, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_f_adapt(NULL, ok, &a, &t, &r, &e), DT_EINVAL);
    /* M=1: a 1-row shape on an 8-row tile is still served (efficiency 1/8) */
    CU_ASSERT_EQUAL(dt_f_adapt(dt_op_find("dense"), ok, &a, &t, &r, &e), 0);
    NEAR(r.padding, 1.0 / 8);
}

/* M=17 on MR=8 tiles: 17 useful rows of 24; N=64 on NR=32: none padded; one
 * thread, stream (dense B is prepacked): total = padding = 17/24 exactly.
 * Over M = 1..64 the padding is M / (8·⌈M/8⌉): 1 at every multiple of 8,
 * rising between them, dropping just past one. */
static void test_adapt_padding_exact(void)
{
    int64_t d[] = {17, 64, 32};
    dt_adapt r = adapt_ok("dense", d, stream(8, 32, 32, DT_PAR_N, 1));
    NEAR(r.padding, 17.0 / 24);
    NEAR(r.balance, 1);
    NEAR(r.packing, 1);
    NEAR(r.total, 17.0 / 24);
    double prev = 0;
    for (int64_t m = 1; m <= 64; m++) {
        int64_t dm[] = {m, 64, 32};
        r = adapt_ok("dense", dm, stream(8, 32, 32, DT_PAR_N, 1));
        NEAR(r.padding, (double)m / (double)(8 * ((m + 7) / 8)));
        if (m % 8 == 1 && m > 1) {
            CU_ASSERT(r.padding < prev);
        } else {
            CU_ASSERT(r.padding > prev);
        }
        prev = r.padding;
    }
    /* the same in N: N=33 on NR=32 -> 33/64 */
    int64_t dn[] = {8, 33, 32};
    r = adapt_ok("dense", dn, stream(8, 32, 32, DT_PAR_N, 1));
    NEAR(r.padding, 33.0 / 64);
}

/* threads <= 0 in the annotation: the target's cores (2), or 1 without a
 * target.  par m, M=37 MR=6: 7 blocks -> 7/8 on 2 threads, 1 on one. */
static void test_adapt_threads_default(void)
{
    dt_target t = t_avx512();
    int64_t d[] = {37, 256, 64};
    dt_annotation a = stream(6, 32, 256, DT_PAR_M, 0);
    dt_adapt r;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt(dt_op_find("dense"), d, &a, &t, &r, &e), 0);
    CU_ASSERT_EQUAL(r.threads, 2);
    NEAR(r.balance, 7.0 / 8);
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt(dt_op_find("dense"), d, &a, NULL, &r, &e), 0);
    CU_ASSERT_EQUAL(r.threads, 1);
    NEAR(r.balance, 1);
    /* more threads never raise the balance above 1; 7 blocks on 7 threads: 1 */
    a.threads = 7;
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt(dt_op_find("dense"), d, &a, &t, &r, &e), 0);
    NEAR(r.balance, 1);
    /* 7 blocks on 4 threads: 2 + 2 + 2 + 1 -> 7 / 8 ; on 3: 3 + 2 + 2 -> 7/9 */
    a.threads = 4;
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt(dt_op_find("dense"), d, &a, &t, &r, &e), 0);
    NEAR(r.balance, 7.0 / 8);
    a.threads = 3;
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt(dt_op_find("dense"), d, &a, &t, &r, &e), 0);
    NEAR(r.balance, 7.0 / 9);
}

/* dt_f_adapt_gemm on hand-made GEMM views: the packing of a dynamic B. */
static void test_adapt_gemm_packing(void)
{
    dt_target t = t_avx512();
    dt_err e;
    dt_adapt r;
    dt_gemm g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < DT_ROLE_COUNT; i++)
        g.dim[i] = -1;
    g.batch = 1;
    g.M = 16;
    g.N = 64;
    g.K = 32;
    /* par n, 2 threads: 2 strips, one each (balance 1); each thread packs all
     * of B (64 x 32): 4096 copies; flops 2·16·64·32 = 65536 -> 65536 / 81920 */
    dt_annotation a = stream(8, 32, 32, DT_PAR_N, 2);
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt_gemm(&g, &a, &t, &r, &e), 0);
    CU_ASSERT_EQUAL(r.units, 2);
    CU_ASSERT_EQUAL(r.items, 2);
    NEAR(r.balance, 1);
    NEAR(r.copies, 2.0 * 64 * 32);
    NEAR(r.flops, 65536);
    NEAR(r.packing, 0.8);
    NEAR(r.total, 0.8);
    /* a constant B: prepacked once, outside the call: nothing copied */
    g.b_const = 1;
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt_gemm(&g, &a, &t, &r, &e), 0);
    NEAR(r.copies, 0);
    NEAR(r.packing, 1);
    /* a batch dim of 4 on 2 threads: whole matrices, 2 each (8 strips, at
     * most 4 on a thread: balance 1); 4 (thread, matrix) pairs pack B:
     * 8192 copies; flops 262144 -> 8/9 */
    g.b_const = 0;
    g.dim[DT_ROLE_BATCH] = 0;
    g.batched = 1;
    g.batch = 4;
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt_gemm(&g, &a, &t, &r, &e), 0);
    CU_ASSERT_EQUAL(r.items, 4);
    CU_ASSERT_EQUAL(r.units, 8);
    NEAR(r.balance, 1);
    NEAR(r.copies, 4.0 * 64 * 32);
    NEAR(r.packing, 8.0 / 9);
    /* blocked, 1 thread, M=20, MC=16, MR=8: A packed as 16 + 8 (4 rows padded)
     * = 24 rows x K=32 per NC=64 block (one): 768 copies, B dynamic adds
     * 64 x 32 = 2048; flops 2·20·64·32 = 81920; padding 20/24 */
    g.dim[DT_ROLE_BATCH] = -1;
    g.batched = 0;
    g.batch = 1;
    g.M = 20;
    a = blocked(8, 32, 32, 16, 64, DT_PAR_N, 1);
    CU_ASSERT_EQUAL_FATAL(dt_f_adapt_gemm(&g, &a, &t, &r, &e), 0);
    NEAR(r.padding, 20.0 / 24);
    NEAR(r.copies, 24.0 * 32 + 64.0 * 32);
    NEAR(r.packing, 81920.0 / (81920.0 + DT_ADAPT_COPY_FLOPS * (768 + 2048)));
    NEAR(r.total, r.padding * r.balance * r.packing);

    /* malformed views and tiles */
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(NULL, &a, &t, &r, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&g, NULL, &t, &r, &e), DT_EINVAL);
    dt_gemm bad = g;
    bad.K = 0;
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&bad, &a, &t, &r, &e), DT_EINVAL);
    bad = g;
    bad.batch = 0;
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&bad, &a, &t, &r, &e), DT_EINVAL);
    dt_annotation z = a;
    z.mc = 0; /* blocked needs MC and KC */
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&g, &z, &t, &r, &e), DT_EINVAL);
    z = a;
    z.par = DT_PAR_MN;
    z.nc = 0; /* par mn needs NC */
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&g, &z, &t, &r, &e), DT_EINVAL);
    z = a;
    z.nr = -1;
    CU_ASSERT_EQUAL(dt_f_adapt_gemm(&g, &z, &t, &r, &e), DT_EINVAL);
    CU_ASSERT(strstr(e.msg, "malformed") != NULL);
}

/* ---- ranking measures ------------------------------------------------------ */

static void test_ranking(void)
{
    double a[] = {1, 2, 3, 4, 5};
    double same[] = {10, 20, 30, 40, 50};
    double rev[] = {5, 4, 3, 2, 1};
    double one_swap[] = {2, 1, 3, 4, 5};
    NEAR(dt_kendall_tau(a, same, 5), 1);
    NEAR(dt_kendall_tau(a, rev, 5), -1);
    NEAR(dt_kendall_tau(a, one_swap, 5), 0.8); /* (9 - 1) / 10 */
    NEAR(dt_kendall_tau(a, a, 1), 0);
    double c[] = {7, 7, 7, 7, 7};
    NEAR(dt_kendall_tau(a, c, 5), 0);

    NEAR(dt_topk_recall(same, a, 5, 2), 1);
    NEAR(dt_topk_recall(rev, a, 5, 2), 0);
    NEAR(dt_topk_recall(rev, a, 5, 3), 1.0 / 3); /* {0,1,2} vs {2,3,4} */
    NEAR(dt_topk_recall(rev, a, 5, 9), 1);       /* k clamped to n */
    NEAR(dt_topk_recall(rev, a, 5, 0), 0);
}

/* ---- the one held-out τ (tuner/quality.h) ------------------------------------- */

static void test_quality_tau(void)
{
    /* 5 records: 10 pairs, one discordant */
    double a[] = {1, 2, 3, 4, 5}, one_swap[] = {2, 1, 3, 4, 5};
    NEAR(dt_quality_tau(a, one_swap, 5), 0.8);
    /* 4 records make 6 pairs, 2 make 1 (τ would be ±1): no τ */
    CU_ASSERT(isnan(dt_quality_tau(a, one_swap, 4)));
    CU_ASSERT(isnan(dt_quality_tau(a, one_swap, 2)));
    CU_ASSERT_EQUAL(DT_TAU_MIN_PAIRS, 10);

    /* (workload, shape) groups: (1,0) four records, one pair swapped: τ = 4/6;
     * (1,1) three in order: τ = 1; (2,0) two reversed: τ = -1; and one
     * record of no shape.  Within: (6·4/6 + 3·1 + 1·(-1)) / 10 = 0.6. */
    dt_quality_point p[10] = {
        {1, 0, 100, 1, 1},    {1, 0, 100, 2, 2},    {1, 0, 100, 4, 3},   {1, 0, 100, 3, 4},
        {1, 1, 1000, 10, 10}, {1, 1, 1000, 20, 20}, {1, 1, 1000, 30, 30},
        {2, 0, 10, 2, 1},     {2, 0, 10, 1, 2},     {1, -1, 50, 5, 4},
    };
    dt_quality q = {.records = 99};
    dt_err e;
    CU_ASSERT_EQUAL(dt_quality_of(p, 10, &q, &e), 0);
    CU_ASSERT_EQUAL(q.records, 99);
    CU_ASSERT_EQUAL(q.holdout, 10);
    CU_ASSERT_EQUAL(q.pairs, 45);
    CU_ASSERT_EQUAL(q.pairs_within, 10);
    NEAR(q.tau_within, 0.6);
    /* overall, on throughput (flops / ns): 38 concordant, 2 discordant, 2
     * tied in the prediction only, 1 in the measurement only, 2 in both */
    NEAR(q.tau, 36.0 / sqrt(42.0 * 41.0));
    CU_ASSERT_EQUAL(q.k, 1);
    NEAR(q.recall, 1); /* the fastest predicted, 100 flops in 1 ns, is the fastest measured */

    /* throughput, not time: times in the right order across shapes (a bigger
     * shape takes longer), throughputs in the reverse order: τ = -1 */
    dt_quality_point g[5];
    for (int i = 0; i < 5; i++) {
        double f = 1000.0 * (1 << i);
        g[i] = (dt_quality_point){3, i, f, 0.1 * f * (1 - 0.05 * i), 0.1 * f * (1 + 0.1 * i)};
    }
    CU_ASSERT_EQUAL(dt_quality_of(g, 5, &q, &e), 0);
    NEAR(q.tau, -1);
    CU_ASSERT(isnan(q.tau_within)); /* no two records on one shape */
    NEAR(q.recall, 0);
    /* too few pairs: nothing */
    CU_ASSERT_EQUAL(dt_quality_of(g, 4, &q, &e), 0);
    CU_ASSERT(isnan(q.tau) && isnan(q.tau_within) && isnan(q.recall));
    CU_ASSERT_EQUAL(q.pairs, 6);
    json_t *j = dt_quality_json(&q);
    CU_ASSERT_TRUE(json_is_null(json_object_get(j, "kendall_tau")));
    CU_ASSERT_TRUE(json_is_null(json_object_get(j, "kendall_tau_within_shape")));
    CU_ASSERT_TRUE(json_is_null(json_object_get(j, "topk_recall")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "holdout")), 4);
    json_decref(j);
}

/* A predictor with n hand-made rows of a learnable throughput. */
static void fill_rows(dt_predictor *p, int n)
{
    p->rows = calloc((size_t)n, sizeof *p->rows);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->rows);
    p->n = p->cap = n;
    for (int i = 0; i < n; i++) {
        dt_cm_row *r = &p->rows[i];
        r->x[0] = (float)(i % 7);
        r->x[1] = (float)((i * 3) % 5);
        r->label = 10 + r->x[0] + 2 * r->x[1];
        r->flops = 1e6;
        r->adapt = 1;
        r->min_ns = r->flops / r->label;
        r->workload_id = 1;
        r->shape = i % 4;
    }
}

static void test_evaluate_minimum(void)
{
    dt_target t = t_avx512();
    dt_predictor p;
    dt_quality q;
    dt_err e;
    /* 12 records: 2 held out, one pair: no τ (it used to print 1.000) */
    dt_predictor_init(&p, "dense", DT_DTYPE_F32, &t, 1);
    fill_rows(&p, 12);
    CU_ASSERT_EQUAL(dt_predictor_evaluate(&p, 0.2, 1, &q, &e), 0);
    CU_ASSERT_EQUAL(q.records, 12);
    CU_ASSERT_EQUAL(q.holdout, 2);
    CU_ASSERT(isnan(q.tau) && isnan(q.tau_within) && isnan(q.recall));
    /* no holdout at all */
    CU_ASSERT_EQUAL(dt_predictor_evaluate(&p, 0, 1, &q, &e), 0);
    CU_ASSERT_EQUAL(q.holdout, 0);
    CU_ASSERT_EQUAL(q.k, 0);
    CU_ASSERT(isnan(q.tau));
    dt_predictor_free(&p);
    /* 60 records: 12 held out, 66 pairs: a τ, and a good one */
    dt_predictor_init(&p, "dense", DT_DTYPE_F32, &t, 1);
    fill_rows(&p, 60);
    CU_ASSERT_EQUAL(dt_predictor_evaluate(&p, 0.2, 1, &q, &e), 0);
    CU_ASSERT_EQUAL(q.holdout, 12);
    CU_ASSERT_EQUAL(q.pairs, 66);
    CU_ASSERT(isfinite(q.tau) && q.tau > 0.5);
    CU_ASSERT(isfinite(q.recall));
    /* the same seed, the same numbers */
    dt_quality q2;
    CU_ASSERT_EQUAL(dt_predictor_evaluate(&p, 0.2, 1, &q2, &e), 0);
    NEAR(q2.tau, q.tau);
    dt_predictor_free(&p);
}

/* ---- XGBoost ----------------------------------------------------------------- */

/* A synthetic throughput: rises with the accumulator count until registers
 * run out, best near kc = 256, some gain from unroll and from threads. */
static float synth(const float *f)
{
    double acc = f[DT_CMF_ACC], rp = f[DT_CMF_REG_PRESSURE];
    double y = 10 * acc / (acc + 6);
    if (rp > 0.9)
        y *= 0.6;
    if (f[DT_CMF_KC] > 0)
        y /= 1 + 0.3 * fabs(log2(f[DT_CMF_KC] / 256.0));
    else
        y *= 0.8;
    y *= 1 + 0.05 * log2(f[DT_CMF_UNROLL]);
    y *= 0.6 + 0.4 * f[DT_CMF_THREADS];
    return (float)y;
}

#define NTRAIN 400
#define NTEST 200

static void make_data(float *X, float *y, int nrows, uint64_t seed)
{
    dt_target t = t_avx512();
    dt_rng r;
    dt_rng_seed(&r, seed);
    for (int i = 0; i < nrows; i++) {
        dt_annotation a;
        dt_err e;
        int rc = dt_annotation_sample(&r, &t, -1, 0, &a, &e);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(dt_features(&a, &t, i % 2 ? "batch_matmul" : "dense",
                                    X + (size_t)i * DT_NFEATURES, DT_NFEATURES),
                        DT_NFEATURES);
        y[i] = synth(X + (size_t)i * DT_NFEATURES);
    }
}

static void test_xgb_learns(void)
{
    float *X = malloc(sizeof(float) * NTRAIN * DT_NFEATURES);
    float *y = malloc(sizeof(float) * NTRAIN);
    float *Xt = malloc(sizeof(float) * NTEST * DT_NFEATURES);
    float *yt = malloc(sizeof(float) * NTEST);
    float *p = malloc(sizeof(float) * NTEST), *p2 = malloc(sizeof(float) * NTEST);
    double *pd = malloc(sizeof(double) * NTEST), *td = malloc(sizeof(double) * NTEST);
    make_data(X, y, NTRAIN, 1);
    make_data(Xt, yt, NTEST, 2);

    dt_xgb_params prm;
    dt_xgb_params_default(&prm);
    dt_xgb *m = NULL, *m2 = NULL, *m3 = NULL;
    dt_err e;
    int rc = dt_xgb_train(X, y, NTRAIN, DT_NFEATURES, &prm, &m, &e);
    if (rc)
        fprintf(stderr, "train: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(dt_xgb_ncols(m), DT_NFEATURES);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_predict(m, Xt, NTEST, p, &e), 0);
    for (int i = 0; i < NTEST; i++) {
        pd[i] = p[i];
        td[i] = yt[i];
    }
    double tau = dt_kendall_tau(pd, td, NTEST);
    double rec = dt_topk_recall(pd, td, NTEST, 20);
    printf("\n    held-out tau %.3f, top-20 recall %.2f\n", tau, rec);
    CU_ASSERT(tau > 0.7);

    /* deterministic: training again gives the same predictions */
    CU_ASSERT_EQUAL_FATAL(dt_xgb_train(X, y, NTRAIN, DT_NFEATURES, &prm, &m3, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_predict(m3, Xt, NTEST, p2, &e), 0);
    CU_ASSERT(memcmp(p, p2, sizeof(float) * NTEST) == 0);

    /* save -> load -> identical predictions */
    void *blob = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL_FATAL(dt_xgb_save(m, &blob, &len, &e), 0);
    CU_ASSERT(len > 0);
    rc = dt_xgb_load(blob, len, &m2, &e);
    if (rc)
        fprintf(stderr, "load: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(dt_xgb_ncols(m2), DT_NFEATURES);
    memset(p2, 0, sizeof(float) * NTEST);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_predict(m2, Xt, NTEST, p2, &e), 0);
    CU_ASSERT(memcmp(p, p2, sizeof(float) * NTEST) == 0);

    free(blob);
    dt_xgb_free(m);
    dt_xgb_free(m2);
    dt_xgb_free(m3);
    free(X);
    free(y);
    free(Xt);
    free(yt);
    free(p);
    free(p2);
    free(pd);
    free(td);
}

/* A model saved with its columns' names, loaded by code whose rows have one
 * more column (inserted first) and the others in reverse order: bound by
 * name, it predicts what it predicted before.  A model saved without names
 * binds only to its own column count. */
static void test_xgb_named_columns(void)
{
    enum { R = 64, C = 5 };
    static const char *names[C] = {"mr", "nr", "kc", "log_m", "log_n"};
    float X[R * C], y[R], Xn[R * (C + 1)], p[R], pn[R];
    for (int i = 0; i < R; i++) {
        for (int c = 0; c < C; c++)
            X[i * C + c] = (float)((i * (c + 3) + c * 7) % 11);
        y[i] = X[i * C] * 2 + X[i * C + 3] - X[i * C + 4] * 0.5f;
        Xn[i * (C + 1)] = 99; /* the new column, which the model never saw */
        for (int c = 0; c < C; c++)
            Xn[i * (C + 1) + 1 + c] = X[i * C + (C - 1 - c)];
    }
    const char *layout[C + 1] = {"op_conv2d"};
    for (int c = 0; c < C; c++)
        layout[1 + c] = names[C - 1 - c];
    dt_xgb *m = NULL, *m2 = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_xgb_train(X, y, R, C, NULL, &m, &e), 0);
    CU_ASSERT_EQUAL(dt_xgb_set_names(m, names, C - 1, &e), DT_EINVAL); /* count */
    const char *comma[C] = {"mr", "n,r", "kc", "log_m", "log_n"};
    CU_ASSERT_EQUAL(dt_xgb_set_names(m, comma, C, &e), DT_EINVAL);
    /* unnamed: only its own layout */
    CU_ASSERT_EQUAL(dt_xgb_bind(m, layout, C + 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_xgb_bind(m, names, C, &e), C);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_set_names(m, names, C, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_predict(m, X, R, p, &e), 0);
    void *blob = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL_FATAL(dt_xgb_save(m, &blob, &len, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_load(blob, len, &m2, &e), 0);
    CU_ASSERT_EQUAL(dt_xgb_bind(m2, layout, C + 1, &e), C);
    CU_ASSERT_EQUAL_FATAL(dt_xgb_predict(m2, Xn, R, pn, &e), 0);
    CU_ASSERT(memcmp(p, pn, sizeof p) == 0);
    /* a layout without one of its columns: that column is missing */
    CU_ASSERT_EQUAL(dt_xgb_bind(m2, layout, C, &e), C - 1);
    static const char *other[2] = {"x", "y"};
    CU_ASSERT_EQUAL(dt_xgb_bind(m2, other, 2, &e), DT_EINVAL);
    /* the cost model's own row names: one per column, distinct */
    const char *const *cn = dt_cm_column_names();
    for (int i = 0; i < DT_CM_NCOLS; i++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(cn[i]);
        CU_ASSERT(strcmp(cn[i], "?") != 0);
        for (int j = 0; j < i; j++)
            CU_ASSERT(strcmp(cn[i], cn[j]) != 0);
    }
    CU_ASSERT_STRING_EQUAL(cn[DT_CM_NCOLS - 1], "log_reduce");
    free(blob);
    dt_xgb_free(m);
    dt_xgb_free(m2);
}

static void test_xgb_errors(void)
{
    float X[4 * 2] = {1, 2, 3, 4, 5, 6, 7, 8};
    float y[4] = {1, 2, NAN, 4};
    dt_xgb *m = (dt_xgb *)&m;
    dt_err e;
    CU_ASSERT_EQUAL(dt_xgb_train(X, y, 0, 2, NULL, &m, &e), DT_EINVAL);
    CU_ASSERT(m == NULL);
    CU_ASSERT(strstr(e.msg, "row") != NULL);
    CU_ASSERT_EQUAL(dt_xgb_train(X, y, 4, 2, NULL, &m, &e), DT_EINVAL);
    CU_ASSERT(strstr(e.msg, "row 2") != NULL);
    CU_ASSERT(strstr(e.msg, "not finite") != NULL);
    dt_xgb_params p;
    dt_xgb_params_default(&p);
    p.rounds = 0;
    CU_ASSERT_EQUAL(dt_xgb_train(X, y, 2, 2, &p, &m, &e), DT_EINVAL);
    /* an error from XGBoost itself carries its message */
    const char junk[] = "this is not a model";
    CU_ASSERT(dt_xgb_load(junk, sizeof junk, &m, &e) < 0);
    CU_ASSERT(m == NULL);
    CU_ASSERT(strncmp(e.msg, "xgboost: load: ", 15) == 0);
    CU_ASSERT(strlen(e.msg) > 15);
    CU_ASSERT_EQUAL(dt_xgb_load(NULL, 0, &m, &e), DT_EINVAL);
    /* a tiny valid model trains and predicts */
    y[2] = 3;
    CU_ASSERT_EQUAL_FATAL(dt_xgb_train(X, y, 4, 2, NULL, &m, &e), 0);
    float out[4];
    CU_ASSERT_EQUAL(dt_xgb_predict(m, X, 4, out, &e), 0);
    CU_ASSERT_EQUAL(dt_xgb_predict(m, X, 0, out, &e), DT_EINVAL);
    dt_xgb_free(m);
    dt_xgb_free(NULL);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"features: values, errors, names", test_features},
        {"f_adapt: padding and packing", test_adapt_padding},
        {"f_adapt: load balance", test_adapt_balance},
        {"f_adapt: batch_matmul", test_adapt_bmm},
        {"f_adapt: errors", test_adapt_errors},
        {"f_adapt: M=17 on MR=8 is 17/24; padding over M=1..64", test_adapt_padding_exact},
        {"f_adapt: thread count from the target; balance by hand", test_adapt_threads_default},
        {"f_adapt: GEMM views, dynamic B packing, blocked A", test_adapt_gemm_packing},
        {"ranking: kendall tau, top-k recall", test_ranking},
        {"held-out tau: groups, throughput, the minimum of pairs", test_quality_tau},
        {"held-out evaluation: none under the minimum", test_evaluate_minimum},
        {"xgb: learns, deterministic, save/load", test_xgb_learns},
        {"xgb: named columns bind a stored model to a new row layout", test_xgb_named_columns},
        {"xgb: errors", test_xgb_errors},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"costmodel", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
