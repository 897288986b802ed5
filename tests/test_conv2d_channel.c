/* conv2d's own sketch, channel (issue 45; annotation/annotation.h,
 * microkernel/op_conv2d_channel.c, template/op_conv2d_channel.c):
 *   - the annotation: its JSON, its rules (vector unit, prefetch 0 or 1, its
 *     register budget), the samples drawn for it and their neighbours;
 *   - where it is offered: grouped convolutions only, never dense or an
 *     ungrouped convolution (codegen refuses, the tuner does not draw it);
 *   - its kernels, f32, bf16, int8 and w8a32, sampled as the tuner draws
 *     them, verified at 1 and 2 threads against the f64 reference on
 *     grouped convolutions of every kind the kernels tell apart —
 *     depthwise (3×3, 5×5, 7×7, stride 1 and 2, dilation 2, padding above
 *     the window, asymmetric pads), a channel count that is no multiple of
 *     the vector, channel multipliers (K = 2C), narrow groups (C/G = K/G =
 *     4), a 1-D convolution over H (W = S = 1, swapped into W), batch 3 —
 *     and on an ungrouped one (the any-grouping path);
 *   - end to end: dtune bench samples it for a depthwise key and verifies
 *     every candidate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/reference.h"
#include "space/annotation.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_b; /* -Wall -Wextra -Werror: kernels build warning-free */
static dt_target g_target;

static int setup(void)
{
    return dt_test_kernel_setup(&g_dir, &g_target, &g_b,
                                DT_BUILD_DEFAULT_FLAGS " -Wall -Wextra -Werror "
                                                       "-Wno-unused-const-variable");
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static dt_annotation channel_ann(int mr, int nr, int unroll)
{
    return (dt_annotation){.sketch = DT_SKETCH_CHANNEL, .isa = g_target.isa, .mr = mr, .nr = nr,
                           .nc = nr, .unroll = unroll, .threads = 1};
}

/* ---- the annotation -------------------------------------------------------- */

static void test_annotation(void)
{
    const int vl = dt_backend_geometry(g_target.isa)->vec_floats;
    dt_annotation a = channel_ann(4, 2 * vl, 4), b;
    dt_err e;
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &g_target, &e), 0);
    char *text = dt_annotation_to_string(&a);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"sketch\":\"channel\""));
    CU_ASSERT_EQUAL(dt_annotation_from_text(text, &b, &e), 0);
    CU_ASSERT(dt_annotation_equal(&a, &b));
    free(text);
    dt_sketch_kind k;
    CU_ASSERT_EQUAL(dt_sketch_from_name("channel", &k), 0);
    CU_ASSERT_EQUAL(k, DT_SKETCH_CHANNEL);
    CU_ASSERT_STRING_EQUAL(dt_sketch_name(DT_SKETCH_ALL), "?");

    b = a;
    b.prefetch = 2;
    CU_ASSERT_EQUAL(dt_annotation_validate(&b, &g_target, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "channel: prefetch"));
    b = a;
    b.unit = DT_UNIT_FMA;
    CU_ASSERT_NOT_EQUAL(dt_annotation_validate(&b, &g_target, &e), 0);
    b = a;
    b.kc = 64;
    CU_ASSERT_EQUAL(dt_annotation_validate(&b, &g_target, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "channel: kc"));
    /* registers: the sums, unroll taps' weights and one input vector */
    const int regs = dt_backend_vec_regs(dt_backend_geometry(g_target.isa), g_target.arch);
    b = channel_ann(regs / 2 - 4, 2 * vl, 4); /* (regs/2)·2 + 1 > regs */
    CU_ASSERT_EQUAL(dt_annotation_validate(&b, &g_target, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "(mr + unroll)"));
    b.order = DT_ORDER_N_INNER;
    b.mr = 1;
    CU_ASSERT_EQUAL(dt_annotation_validate(&b, &g_target, &e), 0); /* both orders */

    /* samples and their neighbours stay channel annotations */
    dt_rng r;
    dt_rng_seed(&r, 45);
    int prefetching = 0;
    for (int i = 0; i < 200; i++) {
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &g_target, DT_SKETCH_CHANNEL, 0, &a, &e),
                              0);
        CU_ASSERT_EQUAL(a.sketch, DT_SKETCH_CHANNEL);
        CU_ASSERT(a.prefetch == 0 || a.prefetch == 1); /* the next rows' prefetch */
        prefetching += a.prefetch;
        CU_ASSERT(a.nr / vl >= 1 && a.nr / vl <= 4);
        if (dt_annotation_mutate(&r, &g_target, &a, &b, &e) == 0) {
            CU_ASSERT_EQUAL(b.sketch, DT_SKETCH_CHANNEL);
            CU_ASSERT_EQUAL(dt_annotation_validate(&b, &g_target, &e), 0);
        }
        CU_ASSERT_EQUAL(dt_annotation_sample_dtype(&r, &g_target, DT_DTYPE_BF16,
                                                   DT_SKETCH_CHANNEL, 1, &b, &e),
                        0);
        CU_ASSERT_EQUAL(b.unit, DT_UNIT_VEC);
        /* an unpinned sample is one of the GEMM view's sketches */
        CU_ASSERT_EQUAL(dt_annotation_sample(&r, &g_target, -1, 1, &b, &e), 0);
        CU_ASSERT(b.sketch < DT_SKETCH_COUNT);
    }
    CU_ASSERT(prefetching > 50 && prefetching < 150); /* on or off evenly */
}

/* ---- where it is offered ----------------------------------------------------- */

static void test_offered(void)
{
    const dt_kernel_op dw = dt_test_kop("conv2d(N=1,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1,"
                                        "groups=16)");
    const dt_kernel_op full = dt_test_kop("conv2d(N=1,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1)");
    const dt_kernel_op dense = dt_test_kop("dense(M=1..8,N=32,K=32)");
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        if (dt_op_check_dtype(dw.op, (dt_dtype)d, NULL))
            continue;
        CU_ASSERT(dt_mk_op_offers(dw.op, (dt_dtype)d, dw.attrs, DT_SKETCH_CHANNEL));
        CU_ASSERT(!dt_mk_op_offers(full.op, (dt_dtype)d, full.attrs, DT_SKETCH_CHANNEL));
        CU_ASSERT(dt_mk_op_offers(full.op, (dt_dtype)d, full.attrs, DT_SKETCH_STREAM));
        const dt_annotation a = {.sketch = DT_SKETCH_CHANNEL};
        const dt_mk_op *m = dt_mk_op_for(dw.op, (dt_dtype)d, &a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_NOT_EQUAL(m, dt_mk_op_find(dw.op, (dt_dtype)d));
        CU_ASSERT_EQUAL(m->sketch, DT_SKETCH_CHANNEL);
    }
    CU_ASSERT(!dt_mk_op_offers(dense.op, DT_DTYPE_F32, dense.attrs, DT_SKETCH_CHANNEL));

    const dt_annotation a = channel_ann(4, dt_backend_geometry(g_target.isa)->vec_floats, 1);
    char *src = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_codegen(&dense, &a, &src, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "sketch channel"));
    CU_ASSERT_EQUAL(dt_codegen(&full, &a, &src, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "groups > 1"));
    CU_ASSERT_EQUAL_FATAL(dt_codegen(&dw, &a, &src, &e), 0);
    /* the kernel is its own section: no register kernel, no GEMM driver */
    CU_ASSERT_PTR_NOT_NULL(strstr(src, "dtk_conv2d_ch"));
    CU_ASSERT_PTR_NULL(strstr(src, "dt_ukr"));
    free(src);
}

/* ---- the kernels --------------------------------------------------------------- */

/* {N, H, W, C, K, R, S, stride, pad, dilation, groups, stride_w, dilation_w,
 * pad_w, pad_b, pad_r (0 / -1: inherited), transpose, out_pad, out_pad_w} */
#define SYM 0, 0, -1, -1, -1
static const int64_t g_shapes[][DT_TEST_CONV_SHAPE] = {
    {1, 9, 13, 16, 16, 3, 3, 1, 1, 1, 16, SYM},    /* depthwise 3×3 */
    {3, 8, 21, 48, 48, 3, 3, 1, 1, 1, 48, SYM},    /* batch 3, wide rows */
    {1, 15, 17, 32, 32, 3, 3, 2, 1, 1, 32, SYM},   /* stride 2 */
    {1, 12, 30, 37, 37, 3, 3, 1, 1, 1, 37, SYM},   /* channels no multiple of a vector */
    {1, 11, 19, 24, 24, 5, 5, 1, 2, 1, 24, SYM},   /* 5×5 */
    {1, 13, 23, 16, 16, 7, 7, 2, 3, 1, 16, SYM},   /* 7×7 stride 2 */
    {1, 10, 14, 16, 16, 3, 3, 1, 2, 2, 16, SYM},   /* dilation 2 */
    {1, 4, 5, 16, 16, 3, 3, 1, 3, 1, 16, SYM},     /* padding above the window */
    {1, 9, 12, 16, 16, 3, 3, 2, 0, 1, 16, 1, 0, 1, 1, 2}, /* asymmetric pads, strides [2,1] */
    {1, 7, 9, 8, 16, 3, 3, 1, 1, 1, 8, SYM},       /* a channel multiplier: K = 2C */
    {1, 8, 10, 32, 32, 3, 3, 1, 1, 1, 8, SYM},     /* narrow groups: 4 in, 4 out */
    {2, 40, 1, 32, 32, 5, 1, 1, 2, 1, 32, 0, 0, 0, -1, -1}, /* 1-D over H */
    {1, 1, 50, 20, 20, 1, 9, 1, 0, 1, 20, 0, 0, 4, -1, -1}, /* 1-D over W, K % VL */
    {1, 6, 7, 8, 12, 3, 3, 1, 1, 1, 1, SYM},       /* ungrouped: the any-grouping path */
    /* transposed (its phases' forward convolutions, packed whole each):
     * depthwise 4×4 stride 2; gtcrn's depthwise 3×3 with dilation 5 along H
     * and its padding cropping the output; two groups, out_pad 1 */
    {1, 6, 7, 16, 16, 4, 4, 2, 1, 1, 16, SYM, 1, 0, 0},
    {1, 11, 13, 16, 16, 3, 3, 1, 10, 5, 16, 0, 1, 1, -1, -1, 1, 0, 0},
    {2, 5, 6, 8, 12, 3, 3, 2, 1, 1, 2, SYM, 1, 1, 1},
};

static int check_channel(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                         dt_err *e)
{
    (void)a;
    return dt_test_verify_conv_shapes(k, kop, g_shapes, sizeof g_shapes / sizeof g_shapes[0], 4500,
                                      e);
}

static const char *const g_epilogues[] = {"none",       "bias+relu", "bias+gelu",
                                          "relu",       "bias+relu6", "hardswish"};

static void verify_dtype(dt_dtype d, int per, uint64_t seed)
{
    enum { MAX = 16 };
    dt_kernel_op kops[MAX];
    dt_annotation anns[MAX];
    dt_rng rng;
    dt_rng_seed(&rng, seed);
    dt_target t = dt_dtype_target(d, &g_target);
    const int n = per < MAX ? per : MAX;
    for (int i = 0; i < n; i++) {
        char key[200];
        snprintf(key, sizeof key,
                 "conv2d(N=1..2,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1,groups=16,"
                 "epilogue=%s%s%s)",
                 g_epilogues[i % 6], d == DT_DTYPE_F32 ? "" : ",dtype=",
                 d == DT_DTYPE_F32 ? "" : dt_dtype_name(d));
        kops[i] = dt_test_kop(key);
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(
            dt_annotation_sample_dtype(&rng, &t, (int)d, DT_SKETCH_CHANNEL, 0, &anns[i], &e), 0);
        /* every reuse path: unroll 1, 2, 4 and 8 where the registers allow */
        static const int unrolls[] = {1, 2, 4, 8};
        dt_annotation u = anns[i];
        u.unroll = unrolls[i % 4];
        if (dt_annotation_validate(&u, &t, NULL) == 0)
            anns[i] = u;
        anns[i].order = i % 2 ? DT_ORDER_N_INNER : DT_ORDER_M_INNER;
        anns[i].prefetch = i / 2 % 2; /* with and without the next rows' prefetch */
    }
    dt_test_build_and_verify(&g_b, kops, anns, n, check_channel);
}

static void test_f32(void) { verify_dtype(DT_DTYPE_F32, 8, 4501); }
static void test_bf16(void) { verify_dtype(DT_DTYPE_BF16, 4, 4502); }
static void test_int8(void) { verify_dtype(DT_DTYPE_INT8, 4, 4503); }
static void test_w8a32(void) { verify_dtype(DT_DTYPE_W8A32, 4, 4504); }

/* ---- end to end ---------------------------------------------------------------- */

/* dtune bench on a depthwise key: every third sample is a channel kernel,
 * and every candidate is verified on every shape. */
static void test_e2e_bench(void)
{
    char args[512];
    snprintf(args, sizeof args,
             "bench 'conv2d(N=1..2,H=12,W=12,C=32,K=32,R=3,S=3,stride=1,pad=1,groups=32,"
             "epilogue=bias+relu)' --sample 6 --shapes '{1,2}' --threads 1 --verify "
             "--peers none --json");
    int code;
    json_t *r = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    json_t *cands = json_object_get(r, "candidates");
    int channel = 0, ok = 0;
    for (size_t i = 0; i < json_array_size(cands); i++) {
        json_t *c = json_array_get(cands, i);
        const char *sk = json_string_value(json_object_get(json_object_get(c, "annotation"),
                                                           "sketch"));
        channel += sk && !strcmp(sk, "channel");
        ok += !strcmp(json_string_value(json_object_get(c, "status")), "ok");
    }
    CU_ASSERT_EQUAL(channel, 2);
    CU_ASSERT_EQUAL(ok, 6);
    json_decref(r);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"the channel annotation: JSON, rules, samples, neighbours", test_annotation},
        {"offered for grouped convolutions only", test_offered},
        {"f32 channel kernels on grouped convolutions of every kind", test_f32},
        {"bf16 channel kernels", test_bf16},
        {"int8 channel kernels (zero point, scales folded)", test_int8},
        {"w8a32 channel kernels", test_w8a32},
        {"dtune bench samples and verifies channel kernels", test_e2e_bench},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"conv2d_channel", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
