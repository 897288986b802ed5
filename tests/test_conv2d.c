/* conv2d (issue 31, points 3-4; ops/op_conv2d.c, microkernel/op_conv2d.c,
 * template/op_conv2d*.c and the driver's implicit A):
 *   - the op: keys parsed and printed back, integer attributes and their
 *     errors, impossible shapes refused with the axis named, the GEMM view's
 *     sizes (M = N·OH·OW, N = K, K = R·S·C) and FLOPs, the implicit A's
 *     gather (a_row) against a direct loop over the convolution's sum;
 *   - the operands: Aref of an implicit A is the im2col of the input;
 *   - the kernels: every back-end row of f32, bf16, int8 and w8a32 (the AMX
 *     tiles on the emulation everywhere AVX-512 runs and natively where AMX
 *     is usable), annotations of both sketches, each verified on odd
 *     convolutions — H or W = 1, stride 2, padding larger than the window,
 *     dilation 2, a 1×1 (A read in place), a 7×7 stride-2 stem, batch 3,
 *     channels that let the stream sketch read interior rows in place,
 *     depthwise and grouped convolutions (a grouped 1×1 too) —
 *     at 1 and 2 threads against the f64 reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/conv2d_phases.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"
#include "backends/backend.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_b;     /* -Wall -Wextra -Werror: kernels build warning-free */
static dt_builder g_emu_b; /* the same on the AMX tile emulation */
static dt_target g_target;
static dt_target g_amx;

static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_b,
                             DT_BUILD_DEFAULT_FLAGS " -Wall -Wextra -Werror "
                                                    "-Wno-unused-const-variable"))
        return 1;
    dt_test_amx_emulation(&g_b, &g_target, &g_emu_b, &g_amx);
    return 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const dt_op_desc *conv(void)
{
    const dt_op_desc *op = dt_op_find("conv2d");
    CU_ASSERT_PTR_NOT_NULL_FATAL(op);
    return op;
}

/* ---- the op ------------------------------------------------------------------ */

static void test_keys(void)
{
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"conv2d(N=1..8,H=32..128:32,W=32..128:32,C=64,K=64,R=3,S=3,stride=1,pad=1)",
         "conv2d(N=1..8,H=32..128:32,W=32..128:32,C=64,K=64,R=3,S=3,stride=1,pad=1)"},
        /* defaults printed: stride and pad always, dilation and epilogue when set */
        {"conv2d(N=1,H=7,W=7,C=3,K=8,R=1,S=1)",
         "conv2d(N=1,H=7,W=7,C=3,K=8,R=1,S=1,stride=1,pad=0)"},
        {"conv2d(N=2,H=9,W=9,C=3,K=8,R=3,S=3,stride=2,pad=0,dilation=2,epilogue=bias+relu)",
         "conv2d(N=2,H=9,W=9,C=3,K=8,R=3,S=3,stride=2,pad=0,dilation=2,epilogue=bias+relu)"},
        {"conv2d(N=1,H=9,W=9,C=4,K=8,R=3,S=3,stride=1,pad=1,dtype=int8)",
         "conv2d(N=1,H=9,W=9,C=4,K=8,R=3,S=3,stride=1,pad=1,dtype=int8)"},
        /* depthwise: groups printed when not 1 */
        {"conv2d(N=1..4,H=56,W=56,C=128,K=128,R=3,S=3,stride=1,pad=1,groups=128,epilogue=relu)",
         "conv2d(N=1..4,H=56,W=56,C=128,K=128,R=3,S=3,stride=1,pad=1,groups=128,epilogue=relu)"},
        /* per axis and side: printed after the epilogue, in the op's order,
         * only where they differ from what they inherit */
        {"conv2d(N=1,H=1,W=16..64,C=8,K=8,R=1,S=3,pad_w=1,stride=1,pad=0)",
         "conv2d(N=1,H=1,W=16..64,C=8,K=8,R=1,S=3,stride=1,pad=0,pad_w=1)"},
        {"conv2d(N=1,H=32,W=32,C=8,K=8,R=3,S=3,pad_r=1,pad_b=1,stride=2,pad=0,epilogue=bias)",
         "conv2d(N=1,H=32,W=32,C=8,K=8,R=3,S=3,stride=2,pad=0,epilogue=bias,pad_b=1,pad_r=1)"},
        {"conv2d(N=1,H=32,W=48,C=8,K=8,R=1,S=3,stride=1,pad=0,stride_w=2,dilation_w=2)",
         "conv2d(N=1,H=32,W=48,C=8,K=8,R=1,S=3,stride=1,pad=0,stride_w=2,dilation_w=2)"},
        /* the inherited values written out: the same key */
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,stride_w=0,pad_w=-1,pad_b=-1)",
         "conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1)"},
        /* transposed, its output padding per axis printed where not 0 */
        {"conv2d(N=1..4,H=14..28:14,W=14..28:14,C=64,K=32,R=3,S=3,stride=2,pad=1,transpose=1,"
         "out_pad_w=1,out_pad=1)",
         "conv2d(N=1..4,H={14,28},W={14,28},C=64,K=32,R=3,S=3,stride=2,pad=1,transpose=1,"
         "out_pad=1,out_pad_w=1)"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=2,S=2,stride=2,pad=0,transpose=0)",
         "conv2d(N=1,H=8,W=8,C=3,K=8,R=2,S=2,stride=2,pad=0)"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        dt_workload *w = NULL;
        dt_err e;
        int rc = dt_workload_parse_key(ok[i].in, &w, &e);
        if (rc)
            fprintf(stderr, "\n  %s: %s\n", ok[i].in, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        char key[512];
        dt_workload_key(w, key, sizeof key);
        if (strcmp(key, ok[i].out) != 0)
            fprintf(stderr, "\n  %s printed as %s\n", ok[i].in, key);
        CU_ASSERT_STRING_EQUAL(key, ok[i].out);
        dt_workload_free(w);
    }
    static const struct {
        const char *in, *msg;
    } bad[] = {
        /* the window does not fit the padded image at H = 2 */
        {"conv2d(N=1,H=2..8,W=8,C=3,K=8,R=5,S=5,stride=1,pad=0)", "output height is 0"},
        {"conv2d(N=1,H=8,W=3,C=3,K=8,R=3,S=3,stride=1,pad=0,dilation=2)", "output width is 0"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=0,pad=1)", "an integer in 1..1024"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=-1)", "an integer in 0..1024"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=x)", "pad"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,dtype=f32_bf16)", "not available for conv2d"},
        {"conv2d(N=1,H=8,W=8,C=6,K=8,R=3,S=3,groups=4)", "C=6 is not a multiple of groups=4"},
        {"conv2d(N=1,H=8,W=8,C=8,K=6,R=3,S=3,groups=4)", "K=6 is not a multiple of groups=4"},
        {"conv2d(N=1,H=8,W=8,C=8,K=8,R=3,S=3,groups=0)", "an integer in 1..65536"},
        /* one key per convolution: a value its own default repeats is refused */
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=2,pad=1,stride_w=2)",
         "stride_w=2 repeats stride (2): leave it out"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,pad_w=1)", "pad_w=1 repeats pad"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,pad_b=1)", "pad_b=1 repeats the top"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=0,pad_w=2,pad_r=2)",
         "pad_r=2 repeats the left pad"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=0,dilation_w=1)",
         "dilation_w=1 repeats dilation"},
        {"conv2d(N=1,H=8,W=2,C=3,K=8,R=3,S=3,stride=1,pad=1,pad_w=0)", "output width is 0"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,pad_r=-2)", "pad_r"},
        /* transposed: output padding only there, below the stride or dilation;
         * pads that crop the whole output */
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=2,pad=1,out_pad=1)", "needs transpose=1"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=2,pad=1,transpose=1,out_pad_w=2)",
         "out_pad_w=2 is not below the width's stride (2)"},
        {"conv2d(N=1,H=1,W=8,C=3,K=8,R=1,S=3,stride=1,pad=1,transpose=1)",
         "the transposed output height is 0"},
        {"conv2d(N=1,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,transpose=2)", "an integer in 0..1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_workload *w = NULL;
        dt_err e;
        int rc = dt_workload_parse_key(bad[i].in, &w, &e);
        CU_ASSERT_NOT_EQUAL(rc, 0);
        if (rc && !strstr(e.msg, bad[i].msg))
            fprintf(stderr, "\n  %s: '%s' lacks '%s'\n", bad[i].in, e.msg, bad[i].msg);
        CU_ASSERT(rc && strstr(e.msg, bad[i].msg));
        dt_workload_free(w);
    }
}

static void test_gemm_view(void)
{
    const dt_op_desc *op = conv();
    /* N H W C K R S; stride 2, pad 1, dilation 1, bias+gelu */
    int64_t d[] = {2, 9, 10, 3, 8, 3, 3};
    int attrs[DT_MAX_ATTRS] = {2, 1, 1, 1, 5, 0, 0, -1, -1, -1}; /* stride pad dilation groups
                                                                  epilogue, the rest inherited */
    dt_gemm g;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(op, attrs, d, &g, &e), 0);
    /* OH = (9 + 2 - 3) / 2 + 1 = 5, OW = (10 + 2 - 3) / 2 + 1 = 5 */
    CU_ASSERT_EQUAL(g.M, 2 * 5 * 5);
    CU_ASSERT_EQUAL(g.N, 8);
    CU_ASSERT_EQUAL(g.K, 27);
    CU_ASSERT_EQUAL(g.batch, 1);
    CU_ASSERT(g.b_const && g.b_trans && g.bias && g.act == DT_ACT_GELU);
    CU_ASSERT_PTR_EQUAL(g.op, op);
    CU_ASSERT_EQUAL(g.dims[3], 3);
    CU_ASSERT_EQUAL(g.attrs[0], 2);
    CU_ASSERT_DOUBLE_EQUAL(op->flops(d, attrs), 2.0 * 50 * 8 * 27, 1e-9);
    /* transposed 4×4 stride 2 pad 1: OH = OW = (4 − 1)·2 − 2 + 4 = 8; of the
     * 4 × 4 (pixel, tap) pairs of an axis, 14 land inside (taps 0 and 3
     * lose one pixel each to the pads): 2·14·14·K·C useful FLOPs */
    int64_t dt_[] = {1, 4, 4, 3, 8, 4, 4};
    int tr[DT_MAX_ATTRS] = {2, 1, 1, 1, 0, 0, 0, -1, -1, -1, 1, 0, 0};
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(op, tr, dt_, &g, &e), 0);
    CU_ASSERT_EQUAL(g.M, 64);
    CU_ASSERT_EQUAL(g.K, 4 * 4 * 3);
    CU_ASSERT_DOUBLE_EQUAL(op->flops(dt_, tr), 2.0 * 14 * 14 * 8 * 3, 1e-9);
    /* without dims: roles and flags only, no problem */
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(op, NULL, NULL, &g, &e), 0);
    CU_ASSERT_PTR_NULL(g.op);
    CU_ASSERT_EQUAL(g.dim[DT_ROLE_N], 4);
    CU_ASSERT_EQUAL(g.dim[DT_ROLE_M], -1);
    CU_ASSERT_EQUAL(g.dim[DT_ROLE_K], -1);
}

/* A transposed convolution's phases: a 4×4 stride-2 pad-1 one's four read
 * 2×2 taps each through different pads (four calls); a 2×2 stride-2
 * unpadded one's read the same 1×1 window (one call, merged); a 2×2 with
 * stride 3 leaves phases no input lands on (one zero tap). */
static void test_phases(void)
{
    dt_conv_geom c = {.n = 1, .h = 4, .w = 4, .c = 3, .k = 8, .r = 4, .s = 4, .stride = 2,
                      .pad = 1, .dilation = 1, .groups = 1, .stride_w = 2, .dilation_w = 1,
                      .pad_l = 1, .pad_b = 1, .pad_r = 1, .transpose = 1};
    CU_ASSERT_EQUAL(dt_conv_phase_count(&c), 4);
    dt_conv_phase ph;
    for (int64_t p = 0; p < 4; p++) {
        dt_conv_phase_at(&c, p, &ph);
        CU_ASSERT(ph.h.taps == 2 && ph.w.taps == 2 && ph.h.count == 4 && ph.w.count == 4);
        CU_ASSERT_EQUAL(ph.h.pad0, p / 2 ? 0 : 1); /* phase 0 reads one row above */
        CU_ASSERT_EQUAL(ph.h.r_last, p / 2 ? 2 : 3);
    }
    CU_ASSERT_FALSE(dt_conv_phases_merge(&c));
    c.r = c.s = 2, c.pad = c.pad_l = c.pad_b = c.pad_r = 0;
    CU_ASSERT_TRUE(dt_conv_phases_merge(&c));
    c.groups = 3, c.k = 9;
    CU_ASSERT_FALSE(dt_conv_phases_merge(&c)); /* grouped: a call per phase */
    c.groups = 1, c.stride = c.stride_w = 3;
    dt_conv_phase_at(&c, 2, &ph); /* ow ≡ 2 (mod 3): tap s = 2 does not exist */
    CU_ASSERT(ph.w.r_last == -1 && ph.w.taps == 1 && ph.h.r_last == 0);
}

/* a_row and b_row against the convolution's definition, and the operands'
 * Aref and Bref (the view's block-diagonal B of a grouped convolution) */
static void test_implicit_a(void)
{
    const dt_op_desc *op = conv();
    static const int64_t dims[][7] = {{2, 5, 6, 3, 4, 3, 2}, {1, 1, 7, 2, 3, 1, 3},
                                      {1, 4, 3, 2, 2, 3, 3}, {1, 5, 5, 6, 4, 3, 3},
                                      {1, 4, 4, 4, 8, 2, 2}, {1, 6, 7, 2, 3, 3, 3},
                                      {2, 1, 9, 3, 2, 1, 3}, {1, 5, 6, 2, 2, 2, 3}};
    /* stride, pad, dilation, groups, epilogue; stride_w, dilation_w, pad_w,
     * pad_b, pad_r (0 / -1: the height's, the top's, the left's) */
    static const int attrs[][DT_MAX_ATTRS] = {
        {2, 1, 1, 1, 0, 0, 0, -1, -1, -1}, {1, 1, 2, 1, 0, 0, 0, -1, -1, -1},
        {1, 4, 1, 1, 1, 0, 0, -1, -1, -1}, {1, 1, 1, 2, 0, 0, 0, -1, -1, -1},
        {2, 0, 1, 4, 0, 0, 0, -1, -1, -1},
        {2, 0, 1, 1, 0, 1, 2, 1, 1, 2}, /* every axis and side its own */
        {1, 0, 1, 1, 0, 2, 0, 1, -1, -1}, /* a Conv1d: pads on W only, stride 2 there */
        {1, 0, 1, 1, 0, 0, 0, -1, 1, 1},  /* TF's SAME: the odd pad at the end */
    };
    for (int t = 0; t < (int)(sizeof dims / sizeof dims[0]); t++) {
        const int64_t *d = dims[t];
        const int *at = attrs[t];
        dt_gemm g;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(op->check(d, at, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_op_gemm(op, at, d, &g, &e), 0);
        /* the definition, per axis (the defaults resolved by hand) */
        const int64_t sh = at[0], sw = at[5] > 0 ? at[5] : at[0], dh = at[2];
        const int64_t dw = at[6] > 0 ? at[6] : at[2], pt = at[1], pl = at[7] >= 0 ? at[7] : at[1];
        const int64_t pb = at[8] >= 0 ? at[8] : pt, pr = at[9] >= 0 ? at[9] : pl;
        const int64_t OH = (d[1] + pt + pb - dh * (d[5] - 1) - 1) / sh + 1;
        const int64_t OW = (d[2] + pl + pr - dw * (d[6] - 1) - 1) / sw + 1;
        dt_conv_geom geo;
        op->conv(d, at, &geo);
        CU_ASSERT(geo.stride == sh && geo.stride_w == sw && geo.dilation == dh &&
                  geo.dilation_w == dw && geo.pad == pt && geo.pad_l == pl && geo.pad_b == pb &&
                  geo.pad_r == pr);
        CU_ASSERT_EQUAL(g.M, d[0] * OH * OW);
        CU_ASSERT_EQUAL(op->a_elems(d, at), d[0] * d[1] * d[2] * d[3]);
        dt_operands o;
        CU_ASSERT_EQUAL_FATAL(dt_operands_make(&o, DT_DTYPE_F32, &g, 0, 7 + (uint64_t)t, &e), 0);
        const float *X = o.A;
        int64_t *index = malloc((size_t)g.K * sizeof *index);
        CU_ASSERT_PTR_NOT_NULL_FATAL(index);
        int bad = 0;
        for (int64_t n = 0; n < d[0]; n++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    const int64_t i = (n * OH + oh) * OW + ow;
                    op->a_row(d, at, i, index);
                    for (int64_t r = 0; r < d[5]; r++)
                        for (int64_t s = 0; s < d[6]; s++)
                            for (int64_t c = 0; c < d[3]; c++) {
                                const int64_t k = (r * d[6] + s) * d[3] + c;
                                const int64_t ih = oh * sh - pt + r * dh;
                                const int64_t iw = ow * sw - pl + s * dw;
                                const int in = ih >= 0 && ih < d[1] && iw >= 0 && iw < d[2];
                                const int64_t want =
                                    in ? ((n * d[1] + ih) * d[2] + iw) * d[3] + c : -1;
                                bad += index[k] != want;
                                bad += o.Aref[i * g.K + k] != (in ? X[want] : 0.0f);
                            }
                }
        /* B: output channel n reads its group's channels of W[K][R][S][C/G] */
        const int64_t G = at[3], cg = d[3] / G, kg = d[4] / G;
        CU_ASSERT_EQUAL(op->b_elems(d, at), d[4] * d[5] * d[6] * cg);
        for (int64_t n = 0; n < d[4]; n++) {
            op->b_row(d, at, n, index);
            for (int64_t r = 0; r < d[5]; r++)
                for (int64_t s = 0; s < d[6]; s++)
                    for (int64_t c = 0; c < d[3]; c++) {
                        const int64_t k = (r * d[6] + s) * d[3] + c;
                        const int own = c / cg == n / kg;
                        const int64_t want =
                            own ? ((n * d[5] + r) * d[6] + s) * cg + c - n / kg * cg : -1;
                        bad += index[k] != want;
                        bad += o.Bref[n * g.K + k] != (own ? ((const float *)o.B)[want] : 0.0f);
                    }
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(index);
        dt_operands_free(&o);
    }
}

/* ---- the kernels ------------------------------------------------------------- */

/* N H W C K R S, stride pad dilation groups; stride_w dilation_w pad_w
 * pad_b pad_r (0 / -1: the height's, the top's, the left's) */
#define SYM 0, 0, -1, -1, -1
static const int64_t g_shapes[][DT_TEST_CONV_SHAPE] = {
    {1, 1, 1, 3, 5, 1, 1, 1, 0, 1, 1, SYM},   /* H = W = 1, 1×1: A in place */
    {2, 8, 8, 16, 33, 1, 1, 1, 0, 1, 1, SYM}, /* 1×1 on a batch, N past a strip */
    {2, 7, 5, 3, 17, 3, 3, 1, 1, 1, 1, SYM},  /* 3×3 same padding */
    {1, 9, 9, 4, 8, 3, 3, 2, 1, 1, 1, SYM},   /* stride 2 */
    {1, 4, 3, 2, 6, 3, 3, 1, 4, 1, 1, SYM},   /* padding larger than the window */
    {1, 10, 11, 5, 9, 3, 3, 1, 2, 2, 1, SYM}, /* dilation 2 */
    {1, 1, 13, 3, 4, 1, 3, 1, 1, 1, 1, SYM},  /* H = 1: a 1-D convolution */
    {1, 12, 1, 7, 5, 3, 1, 2, 1, 1, 1, SYM},  /* W = 1, stride 2 */
    {3, 15, 14, 3, 16, 7, 7, 2, 3, 1, 1, SYM}, /* a 7×7 stride-2 stem, batch 3 */
    {1, 6, 6, 37, 20, 3, 3, 1, 1, 1, 1, SYM}, /* K = R·S·C = 333: several K blocks */
    /* fewer output channels than a vector (f32 stream: the transposed tile,
     * pixels along the vector): several pixel tiles a row, channels not a
     * multiple of the vector (transposed in blocks, then the rest); an RGB
     * output, 5×5, two images through one ring of rows */
    {1, 6, 70, 37, 9, 3, 3, 1, 1, 1, 1, SYM},
    {2, 5, 40, 32, 3, 5, 5, 1, 2, 1, 1, SYM},
    /* C a multiple of every K group and tile K (the stream sketch reads
     * interior rows in place, segment by segment, borders gathered) */
    {1, 9, 21, 64, 20, 3, 3, 1, 1, 1, 1, SYM},
    {2, 11, 30, 32, 16, 3, 3, 2, 1, 1, 1, SYM}, /* stride 2 in place */
    {1, 7, 19, 64, 8, 3, 3, 1, 2, 2, 1, SYM},   /* dilation 2 in place */
    /* groups: depthwise (G = C = K), with stride 2 and a channel multiplier;
     * grouped, in place (C/G = 32) and gathered; a grouped 1×1 (A in place,
     * the group's channels from X's rows) */
    {2, 9, 10, 16, 16, 3, 3, 1, 1, 1, 16, SYM},
    {1, 11, 12, 8, 16, 3, 3, 2, 1, 1, 8, SYM},
    {1, 8, 23, 64, 32, 3, 3, 1, 1, 1, 2, SYM},
    {1, 7, 9, 12, 18, 3, 3, 1, 1, 1, 3, SYM},
    {2, 5, 6, 24, 40, 1, 1, 1, 0, 1, 4, SYM},
    /* per axis and side: strides [2,1] with dilation [1,2] and pads
     * top 0 / left 1 / bottom 1 / right 0; a Conv1d padded on W only, in
     * place (C = 64), stride 2 there; TF's SAME (the odd pad at the end);
     * W's stride 1 under H's 2, in place; depthwise with stride [1,2] and
     * pads [1,0,1,2]; fewer output channels than a vector (the transposed
     * tiles) with pads 0/1/2/0; an STFT-like Conv1d, W's stride above the
     * window (the compact copy), padded 2 */
    {1, 7, 10, 6, 9, 3, 3, 2, 0, 1, 1, 1, 2, 1, 1, 0},
    {2, 1, 12, 64, 16, 1, 3, 1, 0, 1, 1, 2, 0, 1, -1, -1},
    {1, 8, 8, 16, 33, 3, 3, 2, 0, 1, 1, 0, 0, -1, 1, 1},
    {1, 9, 21, 64, 20, 3, 3, 2, 1, 1, 1, 1, 0, -1, -1, -1},
    {2, 9, 10, 16, 16, 3, 3, 1, 1, 1, 16, 2, 0, 0, -1, 2},
    {1, 6, 70, 37, 9, 3, 3, 1, 0, 1, 1, 0, 0, 1, 2, 0},
    {1, 1, 40, 8, 12, 1, 4, 1, 0, 1, 1, 8, 0, 2, -1, -1},
    /* transposed (computed as its phases' forward convolutions): a decoder's
     * 2×2 and 4×4 stride 2; 3×3 stride 2 with out_pad 1 (ONNX's
     * output_padding, U-Net's); a window below the stride (phases no input
     * lands on: bias only); pads that crop past the window (the phases'
     * inputs cropped); dilation 2 with stride 2 (every other tap); depthwise
     * and two groups; strides [2,1] with per-side pads; a 1-D one on a
     * batch, W's stride 2 with out_pad_w 1; stride 1 */
    {1, 5, 6, 8, 12, 2, 2, 2, 0, 1, 1, SYM, 1, 0, 0},
    {2, 4, 5, 16, 9, 4, 4, 2, 1, 1, 1, SYM, 1, 0, 0},
    {1, 5, 4, 7, 5, 3, 3, 2, 1, 1, 1, SYM, 1, 1, 1},
    {1, 4, 4, 3, 4, 2, 2, 3, 0, 1, 1, SYM, 1, 0, 0},
    {1, 6, 7, 5, 6, 3, 3, 2, 3, 1, 1, SYM, 1, 0, 0},
    {1, 5, 5, 4, 6, 3, 3, 2, 1, 2, 1, SYM, 1, 1, 1},
    {1, 6, 6, 8, 8, 4, 4, 2, 1, 1, 8, SYM, 1, 0, 0},
    {1, 5, 6, 8, 12, 3, 3, 2, 1, 1, 2, SYM, 1, 1, 0},
    {1, 4, 6, 6, 8, 3, 5, 2, 1, 1, 1, 1, 0, 2, 0, 1, 1, 1, 0},
    {2, 1, 9, 5, 7, 1, 4, 1, 0, 1, 1, 2, 0, 1, -1, -1, 1, 0, 1},
    {2, 6, 5, 4, 6, 3, 3, 1, 1, 1, 1, SYM, 1, 0, 0}, /* stride 1: one phase, Y itself */
    /* one input pixel along an axis: a phase an output pixel (a DCGAN's
     * latent: every phase merged into one GEMM), with padding and out_pad */
    {2, 1, 1, 5, 6, 3, 4, 1, 0, 1, 1, SYM, 1, 0, 0},
    {1, 1, 3, 4, 5, 3, 3, 2, 1, 1, 1, SYM, 1, 1, 0},
};

static int check_conv(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                      dt_err *e)
{
    (void)a;
    return dt_test_verify_conv_shapes(k, kop, g_shapes, sizeof g_shapes / sizeof g_shapes[0], 4000,
                                      e);
}

static const char *const g_f32_ops[] = {
    "conv2d(N=1..2,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1)",
    "conv2d(N=1..2,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,epilogue=bias+relu)",
    "conv2d(N=1..2,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,epilogue=bias+gelu)",
    "conv2d(N=1..2,H=8,W=8,C=3,K=8,R=3,S=3,stride=1,pad=1,epilogue=relu)",
};

static void every_row(dt_dtype d, const char *suffix, int per, uint64_t seed)
{
    const char *ops[4];
    char keys[4][160];
    for (int i = 0; i < 4; i++) {
        snprintf(keys[i], sizeof keys[i], "%.*s%s)", (int)strlen(g_f32_ops[i]) - 1, g_f32_ops[i],
                 suffix);
        ops[i] = keys[i];
    }
    int rows = dt_test_verify_dtype_rows(d, ops, 4, per, seed, &g_b, &g_emu_b, &g_target, &g_amx,
                                         check_conv);
    CU_ASSERT(rows >= 1);
}

static void test_f32(void) { every_row(DT_DTYPE_F32, "", 3, 31001); }
static void test_bf16(void) { every_row(DT_DTYPE_BF16, ",dtype=bf16", 3, 31002); }
static void test_int8(void) { every_row(DT_DTYPE_INT8, ",dtype=int8", 3, 31003); }
static void test_w8a32(void) { every_row(DT_DTYPE_W8A32, ",dtype=w8a32", 2, 31004); }

/* The f32 and w8a32 stream sketch's border tiles in place (dt_stream_rows
 * with dt_ukr_seg_edge): a tile's first pixel skips its taps left of the image,
 * its last pixel those right of it, and a row's last tile is its last MR
 * pixels.  Tiles of 1, 4 and 7 pixels on rows of 7 (one tile both sides,
 * two overlapping), 9 and 6 pixels; stride 2 with the right pixel's last
 * taps outside; a 5×5 window with pad 2 (pixel 1 outside too: the padded
 * copy) and the same at stride 2 (in place, two taps skipped); one side
 * padded only; two images (the first tile's skipped taps lie in the
 * previous image). */
static const int64_t g_edge_shapes[][DT_TEST_CONV_SHAPE] = {
    {1, 7, 7, 16, 16, 3, 3, 1, 1, 1, 1, SYM},
    {2, 5, 9, 16, 20, 3, 3, 1, 1, 1, 1, SYM},
    {1, 9, 11, 16, 16, 3, 3, 2, 1, 1, 1, SYM},
    {1, 8, 8, 16, 16, 5, 5, 1, 2, 1, 1, SYM},
    {1, 9, 13, 16, 16, 5, 5, 2, 2, 1, 1, SYM},
    {1, 6, 10, 16, 8, 3, 3, 1, 0, 1, 1, 0, 0, 1, -1, 0},
    {2, 4, 14, 3, 16, 3, 3, 1, 1, 1, 1, SYM},
};

static int check_edges(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                       dt_err *e)
{
    (void)a;
    return dt_test_verify_conv_shapes(k, kop, g_edge_shapes,
                                      sizeof g_edge_shapes / sizeof g_edge_shapes[0], 5000, e);
}

static void test_stream_edges(void)
{
    static const int mrs[] = {1, 4, 7};
    static const char *const keys[] = {
        "conv2d(N=1..2,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1)",
        "conv2d(N=1..2,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1,epilogue=bias+relu)",
        "conv2d(N=1..2,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1,dtype=w8a32)",
        "conv2d(N=1..2,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1,epilogue=bias+relu,dtype=w8a32)",
    }; /* the dtypes with dt_ukr_seg_edge: f32 and w8a32 */
    dt_kernel_op kops[12];
    dt_annotation anns[12];
    for (int i = 0; i < 12; i++) {
        const int epi = i % 2, w8 = i / 6;
        kops[i] = dt_test_kop(keys[2 * w8 + epi]);
        const dt_target t = dt_dtype_target(kops[i].dtype, &g_target);
        anns[i] = (dt_annotation){.sketch = DT_SKETCH_STREAM, .isa = t.isa,
                                  .mr = mrs[i / 2 % 3], .nr = t.vec_floats,
                                  .nc = t.vec_floats, .unroll = 2, .prefetch = epi ? 4 : 0,
                                  .store = epi ? DT_STORE_MASK : DT_STORE_SCRATCH,
                                  .order = DT_ORDER_M_INNER, .par = DT_PAR_M, .threads = 2};
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_validate(&anns[i], &t, &e), 0);
    }
    dt_test_build_and_verify(&g_b, kops, anns, 12, check_edges);
}

/* ---- end to end ---------------------------------------------------------------- */

/* dtune tune on a conv2d key with three variables (a box schedule), then
 * dtune query inside the tuned boxes and far outside them (an image size
 * never tuned: extrapolated, the nearest box's kernel), --json. */
static void test_e2e_tune_query(void)
{
    static const char key[] =
        "conv2d(N=1..2,H=8..16:4,W=8..16:8,C=16,K=32,R=3,S=3,stride=1,pad=1,epilogue=bias+relu)";
    char *dir = dt_test_tmpdir();
    char args[1024];
    snprintf(args, sizeof args, "tune '%s' --db '%s/c.db' --trials 24 --threads 1 --min-time 0.2 "
                                "--json", key, dir);
    int code;
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL(t);
    if (t) {
        json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(json_string_value(json_object_get(w, "workload")),
                                      "conv2d(N=1..2,H=8..16:4,"));
        CU_ASSERT(json_integer_value(json_object_get(w, "ranges")) >= 1);
        json_decref(t);
    }
    snprintf(args, sizeof args, "query '%s' --db '%s/c.db' --shape N=2,H=12,W=16 "
                                "--shape N=1,H=600,W=1080 --json", key, dir);
    json_t *q = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    json_t *rows = json_is_array(q) ? q : json_object_get(q, "lookups");
    CU_ASSERT_EQUAL(json_array_size(rows), 2);
    json_t *in = json_array_get(rows, 0), *out = json_array_get(rows, 1);
    CU_ASSERT(json_is_false(json_object_get(in, "extrapolated")));
    CU_ASSERT(json_is_true(json_object_get(out, "extrapolated")));
    CU_ASSERT(json_integer_value(json_object_get(out, "kernel_id")) > 0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(json_object_get(in, "box"), "H"));
    json_decref(q);
    dt_test_rmtree(dir);
    free(dir);
}

/* dtune bench on a grouped conv2d with two variables over a grid given by
 * --shapes (beyond the key's own domains too): every kernel and
 * onednn_conv verified on every shape; a grid missing a variable or naming
 * another is refused. */
static void test_e2e_bench_grid(void)
{
    static const char key[] =
        "conv2d(N=1..2,H=8..16:8,W=8,C=8,K=16,R=3,S=3,stride=1,pad=1,groups=2)";
    char args[1024];
    int code;
    snprintf(args, sizeof args, "bench '%s' --sample 2 --shapes 'H={8,24};N={1,3}' "
                                "--peers onednn_conv --verify --json", key);
    json_t *r = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    json_t *shapes = json_object_get(r, "shapes");
    CU_ASSERT_EQUAL(json_array_size(shapes), 4);
    json_t *last = json_array_get(shapes, 3);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(last, "vars"), "H")), 24);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(last, "vars"), "N")), 3);
    size_t i;
    json_t *c;
    int ok = 0;
    json_array_foreach(json_object_get(r, "candidates"), i, c)
        ok += json_is_string(json_object_get(c, "status")) &&
              strcmp(json_string_value(json_object_get(c, "status")), "ok") == 0;
    CU_ASSERT_EQUAL(ok, 3); /* two kernels and onednn_conv */
    json_decref(r);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench '%s' --sample 1 --shapes 'H={8,24}'", key), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "no domain for variable N"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench '%s' --sample 1 --shapes 'Q=1;H=8'", key), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "'Q' is not one of the variables"));
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"keys: parse, print, integer attributes, impossible shapes", test_keys},
        {"the GEMM view: M = N*OH*OW, N = K, K = R*S*C, FLOPs", test_gemm_view},
        {"the implicit A: a_row and the operands against the definition", test_implicit_a},
        {"a transposed convolution's phases: taps, pads, merged calls", test_phases},
        {"f32 kernels, every row, both sketches, odd convolutions", test_f32},
        {"bf16 kernels (AMX emulated and native), odd convolutions", test_bf16},
        {"int8 kernels (zero-point padding), odd convolutions", test_int8},
        {"w8a32 kernels, odd convolutions", test_w8a32},
        {"f32, w8a32 stream tiles at the image's sides in place, taps outside skipped",
         test_stream_edges},
        {"dtune tune and query on a conv2d key with three variables", test_e2e_tune_query},
        {"dtune bench over a --shapes grid of two variables, grouped", test_e2e_bench_grid},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"conv2d", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
