/* microkernel/, dtype bf16 (dtype_bf16.c, template/types_bf16.h,
 * the bf16 hooks in op_dense.c and op_batch_matmul.c): random annotations for every
 * sketch × back-end (portable: generic and avx2; native vdpbf16ps where the
 * CPU has avx512_bf16), verified on the boundary shapes at 1 and 2 threads
 * for dense with every epilogue and batch_matmul NN/NT; corner annotations;
 * the native kernel without avx512_bf16 at compile time; what the sources
 * hold and which (op, dtype) the loader binds.
 *
 * DT_TEST_BF16_BENCH=1 also times a few native dense kernels (GFLOP/s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "common/mem.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"
#include "peers/peer.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_builder; /* -Wall -Wextra -Werror: kernels build warning-free */
static dt_target g_target;
static int g_native;         /* bf16 runs natively on this machine */
static const char *g_native_why = "no native bf16 here"; /* why not, when not */

static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_builder,
                             DT_BUILD_DEFAULT_FLAGS " -Wall -Wextra -Werror"))
        return 1;
    const char *how;
    g_native = dt_dtype_native(DT_DTYPE_BF16, &g_target, &how);
    if (!g_native)
        g_native_why = how;
    return 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const char *const g_ops[] = {
    "dense(M=1..8,N=64,K=64,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=relu,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=gelu,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+relu,dtype=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=8,K=8,layout=NN,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=8,K=8,layout=NT,dtype=bf16)",
    /* packing with tails, and a packed B too large for the stack buffer */
    "batch_matmul(B=2,M=1..8,N=37,K=35,layout=NT,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=37,K=35,layout=NN,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=100,K=203,layout=NT,dtype=bf16)",
    "batch_matmul(B=2,M=1..8,N=16,K=35,layout=NN,dtype=bf16)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* The back-ends: 0 portable on generic vectors, 1 portable on AVX2's vf,
 * 2 native.  The target each is sampled for, or 0 when this CPU lacks it. */
static int backend_target(int be, dt_target *t)
{
    *t = g_target;
    switch (be) {
    case 0:
        dt_target_set_isa(t, DT_ISA_GENERIC);
        return 1;
    case 1:
        if (g_target.isa < DT_ISA_AVX2)
            return 0;
        dt_target_set_isa(t, DT_ISA_AVX2);
        return 1;
    default:
        *t = dt_dtype_target(DT_DTYPE_BF16, &g_target);
        return g_native && t->isa == DT_ISA_AVX512;
    }
}

/* For every back-end and every sketch: random annotations, each with an op
 * chosen in turn, so every epilogue and layout meets every sketch × back-end. */
static void test_sketch_backend_matrix(void)
{
    enum { PER = 8, NBE = 3 };
    dt_kernel_op kops[NBE * DT_SKETCH_COUNT * PER];
    dt_annotation anns[NBE * DT_SKETCH_COUNT * PER];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 20261123);
    for (int be = 0; be < NBE; be++) {
        dt_target t;
        if (!backend_target(be, &t))
            continue;
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            for (int i = 0; i < PER; i++) {
                dt_err e;
                CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 0, &anns[n], &e), 0);
                CU_ASSERT_EQUAL(anns[n].isa, t.isa);
                kops[n] = dt_test_kop(g_ops[(i + sk * 3 + be) % N_OPS]);
                CU_ASSERT_EQUAL_FATAL(kops[n].dtype, DT_DTYPE_BF16);
                n++;
            }
    }
    dt_test_build_and_verify(&g_builder, kops, anns, n, NULL);
    for (int be = 0; be < NBE; be++) {
        dt_target t;
        static const char *const names[NBE] = {"bf16 portable (generic vectors)",
                                               "bf16 portable (avx2 vectors)",
                                               "bf16 native (avx512_bf16)"};
        dt_test_backend(names[be], backend_target(be, &t) ? NULL
                                   : be == 1            ? "no AVX2 on this CPU"
                                                        : g_native_why);
    }
}

/* Corner annotations per back-end: the smallest tiles, scratch stores,
 * n_inner, unroll 8 with prefetch, every parallel axis, the widest tile. */
static int corner_annotations(dt_isa isa, dt_annotation *out)
{
    int vl = dt_isa_vec_floats(isa);
    int wide = isa == DT_ISA_AVX512 ? 4 : 2;
    dt_annotation anns[] = {
        {DT_SKETCH_BLOCKED, isa, 1, vl, 8, 1, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, isa, 3, 2 * vl, 16, 6, 4 * vl, 8, 4, DT_STORE_SCRATCH, DT_ORDER_N_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, isa, 4, vl, 32, 8, vl, 2, 1, DT_STORE_MASK, DT_ORDER_N_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, isa, isa == DT_ISA_AVX512 ? 6 : 2, wide * vl, 12, 12, wide * vl, 4, 2, DT_STORE_SCRATCH, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, isa, 1, vl, 0, 0, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, isa, 2, 3 * vl, 0, 0, 3 * vl, 4, 16, DT_STORE_SCRATCH, DT_ORDER_M_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, isa, 5, 2 * vl, 0, 0, 4 * vl, 8, 8, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
    };
    int n = (int)(sizeof anns / sizeof anns[0]);
    memcpy(out, anns, sizeof anns);
    return n;
}

static void test_corner_annotations(void)
{
    enum { MAXC = 3 * 7 * 2 };
    dt_kernel_op kops[MAXC];
    dt_annotation all[MAXC];
    int n = 0;
    for (int be = 0; be < 3; be++) {
        dt_target t;
        if (!backend_target(be, &t))
            continue;
        dt_annotation anns[8];
        int nc = corner_annotations(t.isa, anns);
        for (int i = 0; i < nc; i++) {
            dt_err e;
            int rc = dt_annotation_validate(&anns[i], &t, &e);
            if (rc)
                fprintf(stderr, "\n  corner %d (%s): %s\n", i, dt_isa_name(t.isa), e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            all[n] = all[n + 1] = anns[i];
            kops[n] = dt_test_kop(g_ops[i % 2 ? 5 : 4]);  /* bias+gelu, bias+relu */
            kops[n + 1] = dt_test_kop(g_ops[7 + i % 5]); /* NT, then packing's tails */
            n += 2;
        }
    }
    dt_test_build_and_verify(&g_builder, kops, all, n, NULL);
}

/* The native kernel built by a compiler told the CPU has no avx512_bf16:
 * the AVX-512F fallback computes the same sums. */
static void test_native_without_bf16_instructions(void)
{
    if (!g_native) {
        dt_test_skip("the native bf16 kernel without vdpbf16ps: no native bf16 back-end here");
        return;
    }
    dt_builder b = g_builder;
    snprintf(b.flags, sizeof b.flags, "%.400s -mno-avx512bf16", g_builder.flags);
    dt_annotation anns[8];
    int nc = corner_annotations(DT_ISA_AVX512, anns);
    dt_kernel_op kops[8];
    for (int i = 0; i < nc; i++)
        kops[i] = dt_test_kop(g_ops[(i * 5) % N_OPS]);
    dt_test_build_and_verify(&b, kops, anns, nc, NULL);
}

/* A bf16 kernel's source is not f32's: its types block, its entry points,
 * its register kernel (vdpbf16ps natively, a widening shift portably). */
static void test_source(void)
{
    dt_err e;
    for (int be = 0; be < 3; be += 2) {
        dt_target t;
        if (!backend_target(be, &t))
            continue;
        dt_rng rng;
        dt_rng_seed(&rng, 11);
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++) {
            dt_annotation a;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 1, &a, &e), 0);
            for (int o = 0; o < N_OPS; o++) {
                dt_kernel_op kop = dt_test_kop(g_ops[o]), f32 = kop;
                f32.dtype = DT_DTYPE_F32;
                char *src = NULL, *fsrc = NULL;
                CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &src, &e), 0);
                CU_ASSERT_EQUAL_FATAL(dt_codegen(&f32, &a, &fsrc, &e), 0);
                CU_ASSERT_STRING_NOT_EQUAL(src, fsrc);
                CU_ASSERT_PTR_NOT_NULL(strstr(src, "typedef uint16_t dt_ta;"));
                CU_ASSERT_PTR_NOT_NULL(strstr(src, "#define DT_FN_DENSE dtk_dense_bf16\n"));
                CU_ASSERT_PTR_NOT_NULL(strstr(src, "#define DT_FN_BMM dtk_bmm_bf16\n"));
                CU_ASSERT_PTR_NOT_NULL(strstr(src, " dtype=bf16; "));
                CU_ASSERT_PTR_NOT_NULL(strstr(src, be == 2 ? "DT_DPBF16(c0_0, b0, av0)"
                                                           : "dt_bf16_vload(b + (k + 0)"));
                /* group 0: only its own selector and section */
                const dt_mk_op *m = dt_mk_op_find(kop.op, DT_DTYPE_BF16);
                CU_ASSERT_PTR_NOT_NULL_FATAL(m);
                CU_ASSERT_EQUAL(m->group, 0);
                char line[96];
                snprintf(line, sizeof line, "#define %s 1\n", m->selector);
                CU_ASSERT_PTR_NOT_NULL(strstr(src, line));
                for (int x = 0; x < dt_mk_op_count(); x++)
                    if (strcmp(dt_mk_op_at(x)->selector, m->selector) != 0) {
                        snprintf(line, sizeof line, "#define %s ", dt_mk_op_at(x)->selector);
                        CU_ASSERT_PTR_NULL(strstr(src, line));
                    }
                CU_ASSERT_PTR_NULL(strstr(src, "@OP_MACROS@"));
                free(src);
                free(fsrc);
            }
        }
    }
}

/* The registry: a bf16 line per op, distinct entry points from f32's, and
 * the loader binds a built kernel to the bf16 (op, dtype), not to f32's. */
static void test_loader_binds_bf16(void)
{
    const char *keys[] = {g_ops[1], g_ops[7]};
    dt_target t;
    backend_target(g_native ? 2 : 0, &t);
    dt_rng rng;
    dt_rng_seed(&rng, 5);
    dt_err e;
    dt_kernel_op kops[2];
    dt_annotation anns[2];
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, -1, 1, &anns[0], &e), 0);
    anns[1] = anns[0];
    for (int i = 0; i < 2; i++)
        kops[i] = dt_test_kop(keys[i]);
    dt_kernel ks[2];
    CU_ASSERT_EQUAL_FATAL(dt_test_build_load(&g_builder, kops, anns, 2, ks), 2);
    for (int i = 0; i < 2; i++) {
        const dt_kernel *k = &ks[i];
        const dt_mk_op *m = dt_mk_op_find(kops[i].op, DT_DTYPE_BF16);
        CU_ASSERT_PTR_EQUAL(k->op, m);
        CU_ASSERT_PTR_NOT_EQUAL(k->op, dt_mk_op_find(kops[i].op, DT_DTYPE_F32));
        CU_ASSERT_EQUAL(m->backend->dtype, DT_DTYPE_BF16);
        dt_kernel_op f32 = kops[i];
        f32.dtype = DT_DTYPE_F32;
        CU_ASSERT_FALSE(dt_kernel_computes(k, &f32));
        CU_ASSERT_TRUE(dt_kernel_computes(k, &kops[i]));
        CU_ASSERT_EQUAL(dt_verify_kernel(k, &f32, 1, 3, 5, 7, 1, 1, &e), DT_EINVAL);
        CU_ASSERT_EQUAL(dt_verify_kernel(k, &kops[i], 1, 3, 5, 7, 1, 1, &e), 0);
        CU_ASSERT_EQUAL(dt_kernel_packed_size(k, DT_GEMM_NK(5, 7)) > 0, m->packed_size != NULL);
        CU_ASSERT_EQUAL(m->pack != NULL, i == 0);
    }
    dt_test_unload_all(ks, 2);
    for (int i = 0; i < dt_mk_op_count(); i++) {
        const dt_mk_op *m = dt_mk_op_at(i);
        if (m->backend->dtype != DT_DTYPE_BF16)
            continue;
        if (m->sketch != DT_SKETCH_BLOCKED) { /* an own sketch's: the dtype's name, then _ch */
            CU_ASSERT_PTR_NOT_NULL(strstr(m->syms[0], "_bf16_"));
            continue;
        }
        const dt_mk_op *f = dt_mk_op_find(m->op, DT_DTYPE_F32);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(m->nsyms, f->nsyms);
        for (int s = 0; s < m->nsyms; s++) {
            char want[64];
            snprintf(want, sizeof want, "%s_bf16", f->syms[s]);
            CU_ASSERT_STRING_EQUAL(m->syms[s], want);
        }
    }
}

/* ---- optional timing (DT_TEST_BF16_BENCH=1) -------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_one(const char *key, const dt_annotation *a, int64_t M, int64_t N, int64_t K,
                      int threads)
{
    dt_err e;
    dt_kernel_op kop = dt_test_kop(key);
    char *src = NULL;
    dt_build_result r;
    if (dt_codegen(&kop, a, &src, &e) || dt_build_one(&g_builder, src, &r, &e) ||
        r.status != DT_BUILD_OK) {
        CU_FAIL("bench kernel did not build");
        free(src);
        return;
    }
    dt_kernel k;
    CU_ASSERT_EQUAL_FATAL(dt_kernel_load(r.so_path, &k, &e), 0);
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_kernel_op_gemm(&kop, &g, &e), 0);
    g.batch = 1;
    g.M = M;
    g.N = N;
    g.K = K;
    dt_operands o;
    CU_ASSERT_EQUAL_FATAL(dt_operands_make(&o, kop.dtype, &g, K, 1, &e), 0);
    void *packed = dt_alloc64(dt_kernel_packed_size(&k, DT_GEMM_NK(N, K)));
    float *C = dt_alloc64((size_t)(M * N) * sizeof(float));
    dt_kernel_pack(&k, DT_GEMM_NK(N, K), o.B, NULL, packed);
    dt_gemm_args args = {.batch = 1, .M = M, .N = N, .K = K, .a = o.A, .lda = K, .b = packed,
                         .bias = g.bias ? o.bias : NULL, .c = C, .ldc = N, .threads = threads};
    dt_kernel_run(&k, &args);
    /* the machine may be shared: rounds of (bf16 peak probe, kernel), best
     * of each, so that the ratio compares like with like */
    int calls = 1;
    double best = 1e30, peak = 0;
    for (int round = 0; round < 8; round++) {
        double p = dt_peak_gops(kop.dtype == DT_DTYPE_BF16 ? DT_PEAK_BF16_DP : DT_PEAK_F32_FMA,
                                threads, 0.05);
        if (p > peak)
            peak = p;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now_s();
            for (int c = 0; c < calls; c++)
                dt_kernel_run(&k, &args);
            double el = now_s() - t0;
            if (el / calls < best)
                best = el / calls;
            if (el < 0.02) {
                calls *= 2;
                rep--;
            }
        }
    }
    double gf = 2.0 * (double)M * (double)N * (double)K / best * 1e-9;
    char *ann = dt_annotation_to_string(a);
    fprintf(stderr, "\n  %s M=%lld N=%lld K=%lld threads=%d %s: %.1f GFLOP/s, %.0f %% of the "
                    "%s peak %.1f", key, (long long)M, (long long)N, (long long)K,
            threads, ann, gf, 100.0 * gf / peak,
            kop.dtype == DT_DTYPE_BF16 ? "vdpbf16ps" : "FMA", peak);
    free(ann);
    free(packed);
    free(C);
    dt_operands_free(&o);
    dt_kernel_unload(&k);
    dt_build_result_free(&r);
    free(src);
}

static void test_bench(void)
{
    if (!getenv("DT_TEST_BF16_BENCH") || !g_native)
        return;
    const dt_isa X = DT_ISA_AVX512;
    const dt_annotation anns[] = {
        {DT_SKETCH_BLOCKED, X, 14, 32, 256, 112, 768, 4, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, X, 6, 64, 256, 96, 768, 4, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, X, 8, 48, 192, 128, 768, 4, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, X, 14, 32, 384, 112, 768, 2, 8, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, X, 14, 32, 256, 112, 768, 4, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
    };
    /* each beside f32 with the same annotation, for comparison */
    for (size_t i = 0; i < sizeof anns / sizeof anns[0]; i++) {
        bench_one("dense(M=1..8,N=64,K=64,dtype=bf16)", &anns[i], 128, 768, 768,
                  anns[i].threads);
        bench_one("dense(M=1..8,N=64,K=64)", &anns[i], 128, 768, 768, anns[i].threads);
    }
    const dt_annotation st[] = {
        {DT_SKETCH_STREAM, X, 1, 128, 0, 0, 768, 4, 8, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, X, 4, 96, 0, 0, 768, 4, 8, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
    };
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
        bench_one("dense(M=1..8,N=64,K=64,dtype=bf16)", &st[i], st[i].mr, 768, 768, 1);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"every sketch x back-end, random annotations, verified", test_sketch_backend_matrix},
        {"corner annotations verified", test_corner_annotations},
        {"native kernel built without avx512_bf16 instructions", test_native_without_bf16_instructions},
        {"a bf16 kernel's source is its own", test_source},
        {"the loader binds a bf16 kernel to the bf16 (op, dtype)", test_loader_binds_bf16},
        {"timing (DT_TEST_BF16_BENCH=1)", test_bench},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"mk_bf16", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
