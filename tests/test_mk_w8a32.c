/* The w8a32 (weight-only int8) micro-kernels: random annotations for every
 * sketch × back-end (portable GCC vectors always, AVX2 and the native
 * AVX-512 kernel when this CPU runs them), corner annotations, every
 * epilogue, the boundary shapes at 1 and 2 threads, decode-like shapes,
 * scales of every sign and size, the packed layout, and the hooks (the
 * kernel exports only its suffixed entry points and binds to them).  Every
 * kernel here is compiled with -Wall -Wextra -Werror on top of the default
 * flags (less -Wunused-const-variable: the shared AVX2 prelude's mask table
 * is unused by kernels that store through scratch tiles — the f32 kernels'
 * too).  The reference is the double GEMM over the dequantized weights
 * (scale_b[n]·w), microkernel/reference.h. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "common/mem.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

#define DT_MIN(a, b) ((a) < (b) ? (a) : (b))

#define WARN_FLAGS "-Wall -Wextra -Werror -Wno-unused-const-variable"

static char *g_dir;
static dt_builder g_builder;
static dt_target g_target;

static int setup(void)
{
    return dt_test_kernel_setup(&g_dir, &g_target, &g_builder,
                                DT_BUILD_DEFAULT_FLAGS " " WARN_FLAGS);
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

/* every epilogue */
static const char *const g_ops[] = {
    "dense(M=1..16,N=4096,K=4096,dtype=w8a32)",
    "dense(M=1..16,N=4096,K=4096,epilogue=bias,dtype=w8a32)",
    "dense(M=1..16,N=4096,K=4096,epilogue=relu,dtype=w8a32)",
    "dense(M=1..16,N=4096,K=4096,epilogue=gelu,dtype=w8a32)",
    "dense(M=1..16,N=4096,K=4096,epilogue=bias+relu,dtype=w8a32)",
    "dense(M=1..16,N=4096,K=4096,epilogue=bias+gelu,dtype=w8a32)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* For every back-end this CPU runs (generic is the portable one) and every
 * sketch: random annotations, the epilogues taken in turn. */
static void test_sketch_backend_matrix(void)
{
    enum { PER = 6 };
    dt_kernel_op kops[DT_ISA_COUNT * DT_SKETCH_COUNT * PER];
    dt_annotation anns[DT_ISA_COUNT * DT_SKETCH_COUNT * PER];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 8032);
    for (int isa = 0; isa <= (int)g_target.isa; isa++) {
        dt_target t = dt_dtype_target(DT_DTYPE_W8A32, &g_target);
        dt_target_set_isa(&t, (dt_isa)isa);
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            for (int i = 0; i < PER; i++) {
                dt_err e;
                CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 0, &anns[n], &e), 0);
                CU_ASSERT_EQUAL(anns[n].isa, (dt_isa)isa);
                kops[n] = dt_test_kop(g_ops[(i + sk * 3 + isa) % N_OPS]);
                n++;
            }
    }
    dt_test_build_and_verify(&g_builder, kops, anns, n, NULL);
    dt_test_isa_backends("w8a32", g_target.isa);
}

/* The smallest tiles, scratch stores, n_inner, unroll 8 with prefetch,
 * every parallel axis, the widest strips; on the native back-end and the
 * portable one. */
static void test_corner_annotations(void)
{
    dt_kernel_op kops[64];
    dt_annotation anns[64];
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        dt_isa isa = pass == 0 ? g_target.isa : DT_ISA_GENERIC;
        if (pass == 1 && isa == g_target.isa)
            break;
        dt_target t = g_target;
        dt_target_set_isa(&t, isa);
        int vl = dt_isa_vec_floats(isa), regs = dt_isa_vec_regs(isa, t.arch);
        int wide = DT_MIN((regs - 1) / 2, 8), tall = DT_MIN((regs - 3) / 2, 8);
        dt_annotation c[] = {
            {DT_SKETCH_BLOCKED, isa, 1, vl, 8, 1, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
            {DT_SKETCH_BLOCKED, isa, 3, 2 * vl, 16, 6, 4 * vl, 8, 4, DT_STORE_SCRATCH, DT_ORDER_N_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
            {DT_SKETCH_BLOCKED, isa, 4, vl, 32, 8, vl, 2, 1, DT_STORE_MASK, DT_ORDER_N_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, 1, vl, 0, 0, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, 2, 3 * vl, 0, 0, 3 * vl, 4, 16, DT_STORE_SCRATCH, DT_ORDER_M_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, 1, wide * vl, 0, 0, wide * vl, 8, 64, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
            {DT_SKETCH_STREAM, isa, tall, 2 * vl, 0, 0, 32 * vl, 2, 8, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            dt_err e;
            int rc = dt_annotation_validate(&c[i], &t, &e);
            if (rc)
                fprintf(stderr, "\n  corner %zu (%s): %s\n", i, dt_isa_name(isa), e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            anns[n] = c[i];
            kops[n++] = dt_test_kop(g_ops[5]); /* bias+gelu */
            anns[n] = c[i];
            kops[n++] = dt_test_kop(g_ops[i % N_OPS]);
        }
    }
    dt_test_build_and_verify(&g_builder, kops, anns, n, NULL);
}

/* LLM-decode-like shapes (small M, large N and K) on stream kernels. */
static int check_decode(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                        dt_err *e)
{
    (void)a;
    static const int64_t cases[][4] = {
        {1, 4096, 4096, 1}, {4, 1000, 4099, 2}, {16, 1100, 2048, 2}, {7, 333, 3001, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = dt_verify_kernel(k, kop, 1, cases[i][0], cases[i][1], cases[i][2],
                                  (int)cases[i][3], 77 + i, e);
        if (rc)
            return rc;
    }
    return 0;
}

static void test_decode_shapes(void)
{
    dt_isa isa = g_target.isa;
    int vl = dt_isa_vec_floats(isa);
    dt_annotation anns[] = {
        {DT_SKETCH_STREAM, isa, 1, 8 * vl, 0, 0, 64 * vl, 4, 16, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, isa, 4, 4 * vl, 0, 0, 16 * vl, 2, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, isa, 8, 2 * vl, 256, 16, 8 * vl, 4, 8, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 2, DT_UNIT_VEC},
    };
    int n = (int)(sizeof anns / sizeof anns[0]);
    dt_kernel_op kops[3];
    for (int i = 0; i < n; i++) {
        dt_err e;
        int rc = dt_annotation_validate(&anns[i], &g_target, &e);
        if (rc)
            fprintf(stderr, "\n  decode %d: %s\n", i, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        kops[i] = dt_test_kop(g_ops[i % 2 ? 4 : 1]);
    }
    dt_test_build_and_verify(&g_builder, kops, anns, n, check_decode);
}

/* ---- scales of every sign and size, extreme weights ---------------------- */

#define GUARD 12345.0f

/* Runs k on o (w8a32 operands, possibly edited) with M×N output of row
 * stride N + 3 (guards past each row) and checks it against the reference. */
static int run_and_check(const dt_kernel *k, dt_operands *o, const float *scale_b, int threads,
                         dt_err *e)
{
    const dt_gemm *g = &o->g;
    const int64_t M = g->M, N = g->N, K = g->K, ldc = N + 3;
    float *C = malloc((size_t)(M * ldc) * sizeof *C);
    double *ref = malloc((size_t)(M * N) * sizeof *ref);
    double *mag = malloc((size_t)(M * N) * sizeof *mag);
    void *packed = dt_alloc64(dt_kernel_packed_size(k, DT_GEMM_NK(N, K)));
    int rc = 0;
    if (!C || !ref || !mag || !packed) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < M * ldc; i++)
        C[i] = GUARD;
    dt_kernel_pack(k, DT_GEMM_NK(N, K), o->B, scale_b, packed);
    dt_gemm_args args = {.batch = 1, .M = M, .N = N, .K = K, .a = o->A, .lda = o->lda,
                         .b = packed, .bias = g->bias ? o->bias : NULL, .c = C, .ldc = ldc,
                         .threads = threads};
    dt_kernel_run(k, &args);
    if ((rc = dt_ref_gemm(g, o->Aref, o->Bref, o->bias, o->colscale, ref, mag, e)))
        goto out;
    rc = dt_check_close_tol(C, ldc, ref, mag, M, N, dt_ref_tol_k(DT_DTYPE_W8A32, K), e);
    for (int64_t i = 0; i < M && !rc; i++)
        for (int64_t j = N; j < ldc; j++)
            if (C[i * ldc + j] != GUARD) {
                rc = dt_errf(e, DT_EINVAL, "wrote past row %lld at column %lld", (long long)i,
                             (long long)j);
                break;
            }
out:
    free(C);
    free(ref);
    free(mag);
    free(packed);
    return rc;
}

/* Scales: negative, zero, powers of two, tiny and huge; weights ±127 and
 * -128 (not in dt_operands' range); a NULL scale_b packs unit scales. */
static int check_scales(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                        dt_err *e)
{
    (void)a;
    static const int64_t shapes[][3] = {{1, 37, 50}, {9, 100, 129}, {20, 131, 300}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int variant = 0; variant < 3; variant++) {
            dt_gemm g;
            int rc = dt_kernel_op_gemm(kop, &g, e);
            if (rc)
                return rc;
            g.batch = 1;
            g.M = shapes[s][0];
            g.N = shapes[s][1];
            g.K = shapes[s][2];
            dt_operands o;
            if ((rc = dt_operands_make(&o, DT_DTYPE_W8A32, &g, g.K + 5, 31 * s + variant, e)))
                return rc;
            int8_t *B = o.B;
            for (int64_t i = 0; i < g.N * g.K; i += 7) { /* the extremes of s8 */
                B[i] = (int8_t)(i % 3 == 0 ? -128 : i % 3 == 1 ? 127 : -127);
                o.Bref[i] = (float)B[i];
            }
            static const float special[] = {-1.0f, 0.0f, 1.0f, -0.003f, 0.5f, 1e-30f, -3e25f,
                                            65536.0f, 2.5e-3f, -7.0f};
            for (int64_t n = 0; n < g.N; n++) {
                float sc = variant == 0   ? special[n % 10]
                           : variant == 1 ? -o.scale_b[n] * (float)(1 + n % 5)
                                          : 1.0f;
                o.scale_b[n] = sc;
                o.colscale[n] = sc;
            }
            rc = run_and_check(k, &o, variant == 2 ? NULL : o.scale_b, 1 + variant % 2, e);
            dt_operands_free(&o);
            if (rc)
                return dt_err_prefix(e, "M=%lld N=%lld K=%lld scales %d", (long long)g.M,
                                     (long long)g.N, (long long)g.K, variant);
        }
    return 0;
}

static void test_scales(void)
{
    dt_kernel_op kops[2 * DT_ISA_COUNT * DT_SKETCH_COUNT];
    dt_annotation anns[2 * DT_ISA_COUNT * DT_SKETCH_COUNT];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 4242);
    for (int isa = 0; isa <= (int)g_target.isa; isa++) {
        dt_target t = g_target;
        dt_target_set_isa(&t, (dt_isa)isa);
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            for (int i = 0; i < 2; i++) {
                dt_err e;
                CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 0, &anns[n], &e), 0);
                kops[n++] = dt_test_kop(g_ops[i ? 5 : 1]);
            }
    }
    dt_test_build_and_verify(&g_builder, kops, anns, n, check_scales);
}

/* ---- the packed layout and the hooks ---------------------------------------- */

typedef size_t (*packed_size_fn)(int64_t N, int64_t K);
typedef void (*pack_fn)(int64_t N, int64_t K, const int8_t *W, const float *scale_b,
                        void *packed);

/* [strip][K][NR] s8 zero-padded past N, then scale_b[strips·NR] zero-padded. */
static void test_packed_layout(void)
{
    dt_rng rng;
    dt_rng_seed(&rng, 3);
    dt_annotation a;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &g_target, -1, 1, &a, &e), 0);
    dt_kernel_op kop = dt_test_kop(g_ops[0]);
    char *src;
    CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &src, &e), 0);
    dt_build_result r;
    CU_ASSERT_EQUAL_FATAL(dt_build_one(&g_builder, src, &r, &e), 0);
    CU_ASSERT_EQUAL_FATAL(r.status, DT_BUILD_OK);
    dt_kernel k;
    CU_ASSERT_EQUAL_FATAL(dt_kernel_load(r.so_path, &k, &e), 0);
    const int64_t N = 2 * a.nr + 5, K = 19, NR = a.nr, strips = (N + NR - 1) / NR;
    size_t want = (size_t)(strips * NR * K) + (size_t)(strips * NR) * sizeof(float);
    CU_ASSERT_EQUAL(dt_kernel_packed_size(&k, DT_GEMM_NK(N, K)), want);
    CU_ASSERT_EQUAL(((packed_size_fn)k.fn[2])(N, K), want);
    int8_t *W = malloc((size_t)(N * K));
    float *scale = malloc((size_t)N * sizeof *scale);
    unsigned char *p = dt_alloc64(want);
    CU_ASSERT_FATAL(W && scale && p);
    for (int64_t i = 0; i < N * K; i++)
        W[i] = (int8_t)(i * 37 % 256 - 128);
    for (int64_t j = 0; j < N; j++)
        scale[j] = 0.25f * (float)(j + 1);
    memset(p, 0x5a, want);
    ((pack_fn)k.fn[1])(N, K, W, scale, p);
    int bad = 0;
    for (int64_t s = 0; s < strips; s++)
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t q = 0; q < NR; q++) {
                int64_t j = s * NR + q;
                int8_t got = (int8_t)p[(s * K + kk) * NR + q];
                bad += got != (j < N ? W[j * K + kk] : 0);
            }
    const unsigned char *tail = p + strips * NR * K;
    for (int64_t j = 0; j < strips * NR; j++) {
        float got;
        memcpy(&got, tail + j * 4, 4);
        bad += got != (j < N ? scale[j] : 0.0f);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* a NULL scale_b: unit scales */
    dt_kernel_pack(&k, DT_GEMM_NK(N, K), W, NULL, p);
    for (int64_t j = 0; j < strips * NR; j++) {
        float got;
        memcpy(&got, tail + j * 4, 4);
        bad += got != (j < N ? 1.0f : 0.0f);
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(W);
    free(scale);
    free(p);
    dt_kernel_unload(&k);
    dt_build_result_free(&r);
    free(src);
}

/* The (dense, w8a32) hooks: group 0, suffixed entry points distinct from
 * every other registered (op, dtype)'s; the source holds only its own
 * selector and driver section, the w8a32 types and no f32 entry point; the
 * built kernel exports exactly its names and binds to its hooks, not to
 * f32 dense's. */
static void test_hooks(void)
{
    const dt_op_desc *dense = dt_op_find("dense");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
    const dt_mk_op *m = dt_mk_op_find(dense, DT_DTYPE_W8A32);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(m->backend->dtype, DT_DTYPE_W8A32);
    CU_ASSERT_EQUAL(m->group, 0);
    CU_ASSERT_STRING_EQUAL(m->selector, "DT_OP_DENSE");
    CU_ASSERT_EQUAL(m->nsyms, 3);
    CU_ASSERT_STRING_EQUAL(m->syms[0], "dtk_dense_w8");
    CU_ASSERT_STRING_EQUAL(m->syms[1], "dtk_pack_w8");
    CU_ASSERT_STRING_EQUAL(m->syms[2], "dtk_packed_size_w8");
    CU_ASSERT(m->run && m->pack && m->packed_size);
    /* its compute entry point is its own; its packing entry points are
     * shared only by an op of the same dtype whose weights are packed alike
     * (conv2d's W, K×R·S·C, is packed as dense's N×K) */
    for (int i = 0; i < dt_mk_op_count(); i++) {
        const dt_mk_op *x = dt_mk_op_at(i);
        if (x == m)
            continue;
        for (int s = 0; s < x->nsyms; s++)
            for (int t = 0; t < m->nsyms; t++) {
                if (t == 0 || s == 0 || x->backend != m->backend)
                    CU_ASSERT_STRING_NOT_EQUAL(x->syms[s], m->syms[t]);
                if (strcmp(x->syms[s], m->syms[t]) == 0)
                    CU_ASSERT(s == t && x->backend == m->backend);
            }
    }
    /* no batch_matmul for w8a32 */
    const dt_op_desc *bmm = dt_op_find("batch_matmul");
    if (bmm)
        CU_ASSERT_PTR_NULL(dt_mk_op_find(bmm, DT_DTYPE_W8A32));

    dt_rng rng;
    dt_rng_seed(&rng, 11);
    dt_err e;
    for (int isa = 0; isa <= (int)g_target.isa; isa++) {
        dt_target t = g_target;
        dt_target_set_isa(&t, (dt_isa)isa);
        dt_annotation a;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, -1, 1, &a, &e), 0);
        dt_kernel_op kop = dt_test_kop(g_ops[1]);
        char *src = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &src, &e), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "#define DT_OP_DENSE 1\n"));
        CU_ASSERT_PTR_NULL(strstr(src, "DT_OP_BMM"));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "typedef int8_t dt_tb;"));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "#define DT_FN_DENSE dtk_dense_w8\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "dense epilogue=bias dtype=w8a32; "));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "DT_W8_LOAD(b + "));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, "q->scale_b + col"));
        CU_ASSERT_PTR_NOT_NULL(strstr(src, m->driver));
        dt_build_result r;
        CU_ASSERT_EQUAL_FATAL(dt_build_one(&g_builder, src, &r, &e), 0);
        if (r.status != DT_BUILD_OK)
            fprintf(stderr, "\n%.3000s\n", r.log);
        CU_ASSERT_EQUAL_FATAL(r.status, DT_BUILD_OK);
        dt_kernel k;
        CU_ASSERT_EQUAL_FATAL(dt_kernel_load(r.so_path, &k, &e), 0);
        CU_ASSERT_PTR_EQUAL(k.op, m);
        CU_ASSERT_TRUE(dt_kernel_computes(&k, &kop));
        dt_kernel_op f32 = kop;
        f32.dtype = DT_DTYPE_F32;
        CU_ASSERT_FALSE(dt_kernel_computes(&k, &f32));
        CU_ASSERT_EQUAL(dt_verify_kernel(&k, &f32, 1, 3, 5, 7, 1, 1, &e), DT_EINVAL);
        void *h = k.handle;
        CU_ASSERT_PTR_NULL(dlsym(h, "dtk_dense"));
        CU_ASSERT_PTR_NULL(dlsym(h, "dtk_pack"));
        CU_ASSERT_PTR_NULL(dlsym(h, "dtk_bmm_w8"));
        CU_ASSERT_PTR_NOT_NULL(dlsym(h, "dtk_dense_w8"));
        dt_kernel_unload(&k);
        dt_build_result_free(&r);
        free(src);
    }
}

/* The kernels compile with clang too (when installed): the portable one
 * must build with any compiler on any machine.  (clang also warns about the
 * shared templates' unused static inline functions, e.g. dt_act without an
 * activation: not errors here.) */
static void test_portable_clang(void)
{
    dt_builder b;
    dt_err e;
    if (dt_builder_init(&b, "clang",
                        DT_BUILD_DEFAULT_FLAGS " " WARN_FLAGS " -Wno-unused-function", g_dir, &e) != 0) {
        dt_test_skip("no clang to build the portable kernels with");
        return;
    }
    dt_rng rng;
    dt_rng_seed(&rng, 21);
    dt_kernel_op kops[2 * DT_ISA_COUNT];
    dt_annotation anns[2 * DT_ISA_COUNT];
    int n = 0;
    for (int isa = 0; isa <= (int)g_target.isa; isa++) {
        dt_target t = g_target;
        dt_target_set_isa(&t, (dt_isa)isa);
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++) {
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 1, &anns[n], &e), 0);
            kops[n] = dt_test_kop(g_ops[5]);
            n++;
        }
    }
    dt_test_build_and_verify(&b, kops, anns, n, NULL);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"every sketch x back-end, random annotations, verified", test_sketch_backend_matrix},
        {"corner annotations verified", test_corner_annotations},
        {"decode shapes (small M, large N and K) verified", test_decode_shapes},
        {"scales of every sign and size, s8 extremes", test_scales},
        {"the packed layout: s8 panels, then the scales", test_packed_layout},
        {"hooks: suffixed entry points, its own source, binds to itself", test_hooks},
        {"kernels build warning-free with clang and verify", test_portable_clang},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"mk_w8a32", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
