/* microkernel/backend_amx.c, the AMX tile rows of backends/backend.c and the
 * tile annotations of space/annotation*.c (issue 29, points 2-5).
 *
 * Every tile kernel is built twice from the same source: natively where this
 * CPU and OS run AMX, and always on the SDM-exact tile emulation
 * (-DDT_AMX_EMULATE, template/amx_tile.h), so the tile back-ends are
 * verified on any CPU with AVX-512 (their epilogue's instructions).  Both are
 * checked against the reference on the boundary shapes (M, N and K tails,
 * 1 and 2 threads) for bf16 and int8, dense with every epilogue and bf16
 * batch_matmul NN/NT; where both run, native and emulated outputs agree bit
 * for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/amx.h"
#include "common/mem.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"
#include "backends/backend.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_native_b; /* -Wall -Wextra -Werror: kernels build warning-free */
static dt_builder g_emu_b;    /* the same, on the tile emulation */
static dt_target g_target;    /* this machine */
static dt_target g_amx;       /* this machine told it has AMX tiles (for the emulation) */
static int g_avx512;          /* the tile kernels' epilogue runs here */
static int g_native;          /* AMX runs natively here */
static const char *g_native_why = "";

static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_native_b,
                             DT_BUILD_DEFAULT_FLAGS " -Wall -Wextra -Werror"))
        return 1;
    dt_test_amx_emulation(&g_native_b, &g_target, &g_emu_b, &g_amx);
    g_avx512 = dt_backend_isa_admits(&g_target, DT_ISA_AVX512);
    g_native = dt_amx_usable(&g_target, &g_native_why);
    if (getenv("DT_TEST_NO_AMX")) {
        g_native = 0;
        g_native_why = "DT_TEST_NO_AMX is set";
    }
    return 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const char *const g_ops[] = {
    "dense(M=1..8,N=64,K=64,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=relu,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=37,K=35,layout=NT,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=100,K=203,layout=NN,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=bias,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu,dtype=int8)",
    "dense(M=1..8,N=64,K=64,epilogue=relu,dtype=int8)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* Builds and verifies n kernels on the emulation, and natively where AMX runs. */
static void verify_both(const dt_kernel_op *kops, const dt_annotation *anns, int n)
{
    dt_test_build_and_verify(&g_emu_b, kops, anns, n, NULL);
    if (g_native)
        dt_test_build_and_verify(&g_native_b, kops, anns, n, NULL);
}

static int need_avx512(void)
{
    dt_test_backend("bf16/amx and int8/amx emulated",
                    g_avx512 ? NULL : "no AVX-512 here (the tiles' epilogue)");
    dt_test_backend("bf16/amx and int8/amx native", !g_avx512 ? "no AVX-512 here"
                                                 : g_native ? NULL
                                                            : g_native_why);
    if (!g_avx512)
        dt_test_skip("AMX kernels: no AVX-512 on this CPU (the tiles' epilogue needs it)");
    return g_avx512;
}

/* Sampled tile annotations, both sketches, every op in turn. */
static void test_sampled(void)
{
    if (!need_avx512())
        return;
    enum { PER = 10 };
    dt_kernel_op kops[DT_SKETCH_COUNT * PER];
    dt_annotation anns[DT_SKETCH_COUNT * PER];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 20261127);
    for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
        for (int i = 0; i < PER; i++) {
            dt_err e;
            CU_ASSERT_EQUAL_FATAL(
                dt_annotation_sample_unit(&rng, &g_amx, DT_UNIT_AMX, sk, 0, &anns[n], &e), 0);
            CU_ASSERT_EQUAL(anns[n].unit, DT_UNIT_AMX);
            kops[n] = dt_test_kop(g_ops[(i + sk * 5) % N_OPS]);
            n++;
        }
    verify_both(kops, anns, n);
}

/* Every tile block in both sketches where it is allowed, small K blocks. */
static void test_blocks(void)
{
    if (!need_avx512())
        return;
    static const int blocks[][2] = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {2, 1}, {2, 2}};
    dt_kernel_op kops[32];
    dt_annotation anns[32];
    int n = 0;
    for (int b = 0; b < 8; b++)
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++) {
            if (sk == DT_SKETCH_STREAM && blocks[b][0] > 1)
                continue;
            dt_annotation a = {0};
            a.unit = DT_UNIT_AMX;
            a.isa = DT_ISA_AVX512;
            a.sketch = (dt_sketch_kind)sk;
            a.mr = 16 * blocks[b][0];
            a.nr = 16 * blocks[b][1];
            a.kc = sk == DT_SKETCH_BLOCKED ? 64 : 0;
            a.mc = sk == DT_SKETCH_BLOCKED ? 2 * a.mr : 0;
            a.nc = a.nr * (b % 2 + 1);
            a.unroll = 1;
            a.par = (dt_par_axis)(b % DT_PAR_COUNT);
            a.order = sk == DT_SKETCH_BLOCKED ? (dt_loop_order)(b % 2) : DT_ORDER_M_INNER;
            a.threads = g_target.cores >= 2 ? 2 : 1;
            dt_err e;
            int rc = dt_annotation_validate(&a, &g_amx, &e);
            if (rc)
                fprintf(stderr, "\n  block %dx%d: %s\n", blocks[b][0], blocks[b][1], e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            anns[n] = a;
            kops[n] = dt_test_kop(g_ops[(b * 3 + sk) % N_OPS]);
            n++;
        }
    verify_both(kops, anns, n);
}

/* Native and emulated runs of one kernel give the same bits. */
static void test_native_matches_emulation(void)
{
    if (!need_avx512())
        return;
    if (!g_native) {
        dt_test_skip("native AMX against the emulation: no usable AMX here");
        return;
    }
    dt_rng rng;
    dt_rng_seed(&rng, 7);
    for (int o = 0; o < N_OPS; o += 3) {
        dt_err e;
        dt_annotation a;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_unit(&rng, &g_amx, DT_UNIT_AMX, -1, 1, &a, &e),
                              0);
        dt_kernel_op kop = dt_test_kop(g_ops[o]);
        dt_kernel kn, ke;
        CU_ASSERT_EQUAL_FATAL(dt_test_build_load(&g_native_b, &kop, &a, 1, &kn), 1);
        CU_ASSERT_EQUAL_FATAL(dt_test_build_load(&g_emu_b, &kop, &a, 1, &ke), 1);
        dt_gemm g;
        CU_ASSERT_EQUAL_FATAL(dt_kernel_op_gemm(&kop, &g, &e), 0);
        g.batch = 1;
        g.M = 37;
        g.N = g.b_const ? 64 : 45;
        g.K = g.b_const ? 64 : 77;
        dt_operands op;
        CU_ASSERT_EQUAL_FATAL(dt_operands_make(&op, kop.dtype, &g, g.K, 3, &e), 0);
        size_t cbytes = (size_t)(g.M * g.N) * sizeof(float);
        float *cn = dt_alloc64(cbytes), *ce = dt_alloc64(cbytes);
        void *pn = NULL, *pe = NULL;
        const void *bn = op.B, *bee = op.B;
        if (g.b_const) {
            pn = dt_alloc64(dt_kernel_packed_size(&kn, DT_GEMM_NK(g.N, g.K)));
            pe = dt_alloc64(dt_kernel_packed_size(&ke, DT_GEMM_NK(g.N, g.K)));
            dt_kernel_pack(&kn, DT_GEMM_NK(g.N, g.K), op.B, op.scale_b, pn);
            dt_kernel_pack(&ke, DT_GEMM_NK(g.N, g.K), op.B, op.scale_b, pe);
            bn = pn;
            bee = pe;
        }
        dt_gemm_args args = dt_gemm_args_contiguous(&g, op.A, bn, g.bias ? op.bias : NULL, cn, 1);
        args.scale_a = op.scale_a;
        args.zp_a = op.zp_a;
        dt_kernel_run(&kn, &args);
        args.b = bee;
        args.c = ce;
        dt_kernel_run(&ke, &args);
        CU_ASSERT_EQUAL(memcmp(cn, ce, cbytes), 0);
        free(cn);
        free(ce);
        free(pn);
        free(pe);
        dt_operands_free(&op);
        dt_test_unload_all(&kn, 1);
        dt_test_unload_all(&ke, 1);
    }
}

/* The annotation side: JSON with and without the unit, validation's rules,
 * the rows an annotation names, and codegen refusing f32 on tiles. */
static void test_annotation_and_rows(void)
{
    dt_err e;
    dt_annotation a = {0};
    a.unit = DT_UNIT_AMX;
    a.isa = DT_ISA_AVX512;
    a.sketch = DT_SKETCH_STREAM;
    a.mr = 16;
    a.nr = 64;
    a.nc = 128;
    a.unroll = 1;
    a.threads = 1;
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &g_amx, &e), 0);
    char *s = dt_annotation_to_string(&a);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\"unit\":\"amx\""));
    dt_annotation back;
    CU_ASSERT_EQUAL(dt_annotation_from_text(s, &back, &e), 0);
    CU_ASSERT_TRUE(dt_annotation_equal(&a, &back));
    free(s);
    /* a vector annotation's text has no unit, and parses as vec */
    dt_annotation v = a;
    v.unit = DT_UNIT_VEC;
    s = dt_annotation_to_string(&v);
    CU_ASSERT_PTR_NULL(strstr(s, "unit"));
    CU_ASSERT_EQUAL(dt_annotation_from_text(s, &back, &e), 0);
    CU_ASSERT_EQUAL(back.unit, DT_UNIT_VEC);
    free(s);
    CU_ASSERT_EQUAL(dt_annotation_from_text("{\"sketch\":\"stream\",\"isa\":\"avx512\",\"mr\":16,"
                                            "\"nr\":64,\"kc\":0,\"mc\":0,\"nc\":128,\"unroll\":1,"
                                            "\"prefetch\":0,\"store\":\"mask\",\"order\":"
                                            "\"m_inner\",\"par\":\"n\",\"threads\":1,\"unit\":"
                                            "\"tiles\"}",
                                            &back, &e),
                    DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "unit"));
    /* rules */
    dt_annotation bad = a;
    bad.mr = 32; /* stream: one tile row */
    CU_ASSERT_EQUAL(dt_annotation_validate(&bad, &g_amx, &e), DT_EINVAL);
    bad = a;
    bad.nr = 128; /* 1x8: 8 + 1 + 1 tiles */
    CU_ASSERT_EQUAL(dt_annotation_validate(&bad, &g_amx, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "tile registers"));
    bad = a;
    bad.prefetch = 4;
    CU_ASSERT_EQUAL(dt_annotation_validate(&bad, &g_amx, &e), DT_EINVAL);
    dt_target plain = g_target;
    plain.features &= ~DT_FEAT_BIT(DT_FEAT_AMX_TILE);
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &plain, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no AMX"));
    /* rows */
    const dt_backend *b = dt_backend_of_ann(DT_DTYPE_BF16, &a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_STRING_EQUAL(b->name, "amx");
    CU_ASSERT_EQUAL(dt_backend_kpad(b), 32);
    CU_ASSERT_EQUAL(dt_backend_kpad(dt_backend_of_ann(DT_DTYPE_INT8, &a)), 64);
    CU_ASSERT_PTR_NULL(dt_backend_of_ann(DT_DTYPE_F32, &a));
    CU_ASSERT_PTR_EQUAL(dt_backend_of_ann(DT_DTYPE_BF16, &v), dt_backend_of(DT_DTYPE_BF16, DT_ISA_AVX512));
    dt_kernel_op f32 = dt_test_kop("dense(M=1..8,N=64,K=64)");
    char *src = NULL;
    CU_ASSERT_EQUAL(dt_codegen(&f32, &a, &src, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "amx"));
    dt_kernel_op bf = dt_test_kop(g_ops[1]);
    CU_ASSERT_EQUAL_FATAL(dt_codegen(&bf, &a, &src, &e), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(src, "DT_TILE_DPBF16PS(0, 4, 6);"));
    CU_ASSERT_PTR_NOT_NULL(strstr(src, "#define DT_KPAD DT_TK"));
    free(src);
    /* sampling: only where the target has tiles; mutation and crossover stay amx */
    dt_rng rng;
    dt_rng_seed(&rng, 3);
    CU_ASSERT_EQUAL(dt_annotation_sample_unit(&rng, &plain, DT_UNIT_AMX, -1, 0, &bad, &e),
                    DT_EUNSUPPORTED);
    if (!g_avx512)
        return;
    for (int i = 0; i < 200; i++) {
        dt_annotation x, y, m, c;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_unit(&rng, &g_amx, DT_UNIT_AMX, -1, 0, &x, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_unit(&rng, &g_amx, DT_UNIT_AMX, x.sketch, 0, &y, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_mutate(&rng, &g_amx, &x, &m, &e), 0);
        CU_ASSERT_EQUAL(m.unit, DT_UNIT_AMX);
        CU_ASSERT_FALSE(dt_annotation_equal(&m, &x));
        CU_ASSERT_EQUAL_FATAL(dt_annotation_crossover(&rng, &g_amx, &x, &y, &c, &e), 0);
        CU_ASSERT_EQUAL(dt_annotation_validate(&c, &g_amx, &e), 0);
        CU_ASSERT_EQUAL(c.unit, DT_UNIT_AMX);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"tile annotations: JSON, rules, rows, sampling", test_annotation_and_rows},
        {"every tile block, both sketches, verified", test_blocks},
        {"sampled tile annotations verified", test_sampled},
        {"native tiles and the emulation agree bit for bit", test_native_matches_emulation},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"mk_amx", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
