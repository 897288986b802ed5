/* microkernel/: code generation for every sketch × back-end (random
 * annotations included), builds and their cache, compile errors and time
 * limits, verification on every boundary case and epilogue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/backend.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/reference.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_builder;
static dt_target g_target;

static int setup(void) { return dt_test_kernel_setup_private(&g_dir, &g_target, &g_builder, NULL); }

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const char *const g_ops[] = {
    "dense(M=1..8,N=64,K=64)",
    "dense(M=1..8,N=64,K=64,epilogue=bias)",
    "dense(M=1..8,N=64,K=64,epilogue=relu)",
    "dense(M=1..8,N=64,K=64,epilogue=gelu)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+relu)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu)",
    "batch_matmul(B=2,M=1..8,N=8,K=8,layout=NN)",
    "batch_matmul(B=2,M=1..8,N=8,K=8,layout=NT)",
    /* B packing's fast paths with tails (K and N not multiples of any vector
     * width), and a packed B too large for the kernel's stack buffer */
    "batch_matmul(B=2,M=1..8,N=37,K=35,layout=NT)",
    "batch_matmul(B=2,M=1..8,N=37,K=35,layout=NN)",
    "batch_matmul(B=2,M=1..8,N=100,K=203,layout=NT)",
    /* N = NR = 16 (AVX-512's smallest strip): B is used in place, unpacked */
    "batch_matmul(B=2,M=1..8,N=16,K=35,layout=NN)",
    /* the clamped activations (their outputs reach both clamps at K = 64) */
    "dense(M=1..8,N=64,K=64,epilogue=bias+relu6)",
    "dense(M=1..8,N=64,K=64,epilogue=hardswish)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* For every back-end this CPU runs and every sketch: random annotations,
 * each with an op chosen in turn, so every epilogue and layout is covered
 * by every sketch × back-end. */
static void test_sketch_backend_matrix(void)
{
    enum { PER = 8 };
    dt_kernel_op kops[DT_ISA_COUNT * DT_SKETCH_COUNT * PER];
    dt_annotation anns[DT_ISA_COUNT * DT_SKETCH_COUNT * PER];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 20261122);
    for (int isa = 0; isa <= (int)g_target.isa; isa++) {
        dt_target t = g_target;
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
    dt_test_isa_backends("f32", g_target.isa);
}

/* Hand-picked corner annotations: the smallest tiles, scratch stores,
 * n_inner order, unroll 8 with prefetch, every parallel axis. */
static void test_corner_annotations(void)
{
    dt_isa top = g_target.isa;
    int vl = dt_isa_vec_floats(top);
    dt_annotation anns[] = {
        {DT_SKETCH_BLOCKED, top, 1, vl, 8, 1, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, top, 3, 2 * vl, 16, 6, 4 * vl, 8, 4, DT_STORE_SCRATCH, DT_ORDER_N_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
        {DT_SKETCH_BLOCKED, top, 4, vl, 32, 8, vl, 2, 1, DT_STORE_MASK, DT_ORDER_N_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, top, 1, vl, 0, 0, vl, 1, 0, DT_STORE_MASK, DT_ORDER_M_INNER, DT_PAR_M, 2, DT_UNIT_VEC},
        {DT_SKETCH_STREAM, top, 2, 3 * vl, 0, 0, 3 * vl, 4, 16, DT_STORE_SCRATCH, DT_ORDER_M_INNER, DT_PAR_MN, 2, DT_UNIT_VEC},
    };
    int n = (int)(sizeof anns / sizeof anns[0]);
    dt_kernel_op kops[3 * 5];
    dt_annotation all[3 * 5];
    for (int i = 0; i < n; i++) {
        dt_err e;
        int rc = dt_annotation_validate(&anns[i], &g_target, &e);
        if (rc)
            fprintf(stderr, "\n  corner %d: %s\n", i, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        all[2 * i] = all[2 * i + 1] = all[2 * n + i] = anns[i];
        kops[2 * i] = dt_test_kop(g_ops[5]);       /* bias+gelu */
        kops[2 * i + 1] = dt_test_kop(g_ops[7]);   /* NT */
        kops[2 * n + i] = dt_test_kop(g_ops[8 + i % 4]); /* packing's fast paths */
    }
    dt_test_build_and_verify(&g_builder, kops, all, 3 * n, NULL);
}

static void test_cache_hit(void)
{
    dt_err e;
    dt_rng rng;
    dt_rng_seed(&rng, 7);
    dt_annotation a;
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &g_target, -1, 1, &a, &e), 0);
    dt_kernel_op kop = dt_test_kop(g_ops[1]);
    char *src;
    CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &src, &e), 0);
    dt_build_result r1, r2;
    CU_ASSERT_EQUAL(dt_build_one(&g_builder, src, &r1, &e), 0);
    CU_ASSERT_EQUAL(r1.status, DT_BUILD_OK);
    CU_ASSERT_EQUAL(dt_build_one(&g_builder, src, &r2, &e), 0);
    CU_ASSERT_EQUAL(r2.status, DT_BUILD_OK);
    CU_ASSERT_TRUE(r2.cache_hit);
    CU_ASSERT_STRING_EQUAL(r1.hash, r2.hash);
    CU_ASSERT_STRING_EQUAL(r1.so_path, r2.so_path);
    /* the source is kept beside its build */
    char c_path[4200];
    snprintf(c_path, sizeof c_path, "%s/%s.c", g_dir, r1.hash);
    struct stat st;
    CU_ASSERT_EQUAL(stat(c_path, &st), 0);
    /* other flags: another key */
    dt_builder b2 = g_builder;
    snprintf(b2.flags, sizeof b2.flags, "%.400s -DDTUNE_OTHER", g_builder.flags);
    dt_build_result r3;
    CU_ASSERT_EQUAL(dt_build_one(&b2, src, &r3, &e), 0);
    CU_ASSERT_FALSE(r3.cache_hit);
    CU_ASSERT_STRING_NOT_EQUAL(r1.hash, r3.hash);
    dt_build_result_free(&r1);
    dt_build_result_free(&r2);
    dt_build_result_free(&r3);
    free(src);
}

static void test_compile_error_and_timeout(void)
{
    dt_err e;
    dt_build_result r;
    const char *bad = "int broken( { return 0; }\n";
    CU_ASSERT_EQUAL(dt_build_one(&g_builder, bad, &r, &e), 0);
    CU_ASSERT_EQUAL(r.status, DT_BUILD_COMPILE_ERROR);
    CU_ASSERT_PTR_NOT_NULL(r.log);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.log, "error"));
    dt_build_result_free(&r);
    /* a time limit the compiler cannot meet */
    dt_builder slow = g_builder;
    slow.timeout_s = 0.0;
    const char *fine = "int fine(void) { return 1; }\n";
    CU_ASSERT_EQUAL(dt_build_one(&slow, fine, &r, &e), 0);
    CU_ASSERT_EQUAL(r.status, DT_BUILD_TIMEOUT);
    dt_build_result_free(&r);
    /* a compiler that does not exist */
    dt_builder none;
    CU_ASSERT_NOT_EQUAL(dt_builder_init(&none, "/nonexistent/cc", NULL, g_dir, &e), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "/nonexistent/cc"));
    /* a shared object that is not a kernel */
    CU_ASSERT_EQUAL(dt_build_one(&g_builder, fine, &r, &e), 0);
    dt_kernel k;
    CU_ASSERT_EQUAL(dt_kernel_load(r.so_path, &k, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_kernel_load("/nonexistent.so", &k, &e), DT_EIO);
    dt_build_result_free(&r);
}

static void test_codegen_refuses(void)
{
    dt_err e;
    dt_annotation a = {DT_SKETCH_BLOCKED, DT_ISA_AVX2, 4, 12, 64, 8, 48, 1, 0, DT_STORE_MASK,
                       DT_ORDER_M_INNER, DT_PAR_N, 1, DT_UNIT_VEC};
    dt_kernel_op kop = dt_test_kop(g_ops[0]);
    char *src = NULL;
    CU_ASSERT_EQUAL(dt_codegen(&kop, &a, &src, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(src);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "vector width"));
}

static void test_reference_catches_errors(void)
{
    /* the check is tight enough to catch a one-ulp-scale bias error at small K */
    float got[2] = {1.0f, 2.0f};
    double ref[2] = {1.0, 2.0}, mag[2] = {1.0, 2.0};
    dt_err e;
    CU_ASSERT_EQUAL(dt_check_close(got, 2, ref, mag, 1, 2, 4, &e), 0);
    got[1] = 2.001f;
    CU_ASSERT_EQUAL(dt_check_close(got, 2, ref, mag, 1, 2, 4, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "[0,1]"));
    got[1] = 0.0f / 0.0f;
    CU_ASSERT_EQUAL(dt_check_close(got, 2, ref, mag, 1, 2, 4, &e), DT_EINVAL);
}

/* ---- generated source is stable ------------------------------------------
 * The database stores each kernel's source hash (export recovers a kernel's
 * attributes from it) and the build cache keys on the source, so the text
 * dt_codegen writes for an (op, attributes, annotation) must not change
 * when the generator is reorganised.  Annotations are sampled with a fixed
 * seed on a fixed synthetic target (not this machine's) for every back-end
 * and sketch; every attribute combination of every op generates each.  The
 * digests below were taken before the per-op hooks existed (dtune 0.1.0;
 * the version is in every kernel's header comment, so a version bump
 * changes them too).  DT_TEST_DUMP_SOURCES=DIR writes every source there,
 * for a diff when a digest moves. */

static dt_target fixed_target(void)
{
    dt_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.arch, sizeof t.arch, "x86_64");
    t.cores = 4;
    t.logical_cpus = 4;
    t.l1d.size = 48u << 10;
    t.l2.size = 1280u << 10;
    t.l3.size = 32u << 20;
    t.line_size = 64;
    t.isa_max = DT_ISA_AVX512;
    dt_target_set_isa(&t, DT_ISA_AVX512);
    return t;
}

static void test_source_hashes(void)
{
    static const struct {
        const char *op;
        const char *digest; /* over every attribute combination, in order */
    } want[] = {
        /* Taken when the driver became one template for every dtype (element
         * types and K groups from template/types_*.h, the quantized epilogue's
         * context passed to dt_ukr); the digests before that were 8289d1e9…
         * and 5daafb64…, then b1b9a0df… and f5162e9f… until the templates'
         * AMX hooks, 140b8344… and b289eebc… until conv2d's implicit A
         * (DT_IMPLICIT_A sections, the packing entry points moved into the
         * driver under DT_CONST_B; the 480 sources compiled before and after
         * gave the same instructions, function by function; then 413db0b8…
         * and 6acb3864… until the stream sketch's implicit rows became the
         * op's own loop, again the same instructions; then 2f48b148… and
         * 4c5d8520… until ReLU6 and HardSwish: each of the 480 sources
         * gained only their 19 lines of template/act.h, under a DT_ACT none
         * of them has — the new epilogue values are left out,
         * dt_test_golden_attrs).  Any change to these digests must be
         * deliberate. */
        {"dense", "b9b76d0f58ab4d215cb9e5a0e3c73e972de10507db4f8cc4ffbc0c36e37f6261"},
        {"batch_matmul", "53134b2d826c9baedf93d268d8739cf7193913d4bb5965fa41c668514cf29bba"},
    };
    enum { PER = 10 };
    const char *dump = getenv("DT_TEST_DUMP_SOURCES");
    dt_target base = fixed_target();
    for (size_t o = 0; o < sizeof want / sizeof want[0]; o++) {
        const dt_op_desc *op = dt_op_find(want[o].op);
        CU_ASSERT_PTR_NOT_NULL_FATAL(op);
        dt_kernel_op kop = {.op = op};
        char (*hashes)[65] = NULL;
        int n = 0, cap = 0, combo = 0;
        do {
            if (!dt_test_golden_attrs(op, kop.attrs))
                continue;
            dt_rng rng;
            dt_rng_seed(&rng, 424242);
            for (int isa = 0; isa < DT_ISA_COUNT; isa++) {
                dt_target t = base;
                dt_target_set_isa(&t, (dt_isa)isa);
                for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
                    for (int i = 0; i < PER; i++) {
                        dt_annotation a;
                        dt_err e;
                        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 0, &a, &e), 0);
                        char *src = NULL;
                        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &src, &e), 0);
                        if (n == cap) {
                            cap = cap ? 2 * cap : 256;
                            hashes = realloc(hashes, (size_t)cap * sizeof *hashes);
                            CU_ASSERT_PTR_NOT_NULL_FATAL(hashes);
                        }
                        const char *part = src;
                        dt_hash_strings(&part, 1, hashes[n]);
                        if (dump) {
                            char path[4200];
                            snprintf(path, sizeof path, "%s/%s-%d-%d-%d-%d.c", dump, op->name,
                                     combo, isa, sk, i);
                            FILE *f = fopen(path, "w");
                            if (f) {
                                fputs(src, f);
                                fclose(f);
                            }
                        }
                        n++;
                        free(src);
                    }
            }
            combo++;
        } while (dt_op_next_attrs(op, kop.attrs));
        const char **parts = malloc((size_t)n * sizeof *parts);
        CU_ASSERT_PTR_NOT_NULL_FATAL(parts);
        for (int i = 0; i < n; i++)
            parts[i] = hashes[i];
        char digest[65];
        dt_hash_strings(parts, n, digest);
        if (strcmp(digest, want[o].digest) != 0)
            fprintf(stderr, "\n  %s: %d sources over %d attribute combinations hash to %s, "
                            "expected %s\n", op->name, n, combo, digest, want[o].digest);
        CU_ASSERT_STRING_EQUAL(digest, want[o].digest);
        free(parts);
        free(hashes);
    }
}

/* ---- the per-op hooks of code generation ----------------------------------- */

/* Every op with a GEMM view has f32 micro-kernel hooks, every dtype the op
 * is defined for has hooks too, and the registry's entries are consistent:
 * distinct selectors within a source group, distinct entry-point sets, a
 * driver section compiled only under its own selector, packing exactly for
 * the ops whose B is constant. */
static void test_hook_registry(void)
{
    CU_ASSERT(dt_mk_op_count() >= 2);
    for (int i = 0; i < dt_op_count(); i++) {
        const dt_op_desc *op = dt_op_at(i);
        dt_gemm g;
        if (dt_op_gemm(op, NULL, NULL, &g, NULL) != 0)
            continue;
        const dt_mk_op *m = dt_mk_op_find(op, DT_DTYPE_F32);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_PTR_EQUAL(m->op, op);
        CU_ASSERT_EQUAL(m->backend->dtype, DT_DTYPE_F32);
        CU_ASSERT_PTR_NULL(dt_mk_op_find(op, DT_DTYPE_COUNT)); /* no such dtype */
        for (int d = 0; d < DT_DTYPE_COUNT; d++)
            CU_ASSERT_EQUAL(dt_mk_op_find(op, (dt_dtype)d) != NULL,
                            dt_op_check_dtype(op, (dt_dtype)d, NULL) == 0);
        CU_ASSERT_EQUAL(!!m->pack, g.b_const);
        CU_ASSERT_EQUAL(!!m->packed_size, g.b_const);
        CU_ASSERT(m->run && m->nsyms >= 1 && m->nsyms <= DT_KERNEL_MAX_SYMS);
        char head[64];
        snprintf(head, sizeof head, "#if %s\n", m->selector);
        CU_ASSERT_EQUAL(strncmp(m->driver, head, strlen(head)), 0);
    }
    for (int i = 0; i < dt_mk_op_count(); i++)
        for (int j = i + 1; j < dt_mk_op_count(); j++) {
            const dt_mk_op *a = dt_mk_op_at(i), *b = dt_mk_op_at(j);
            /* ops of one source group share a kernel: their selectors differ */
            if (a->group > 0 && a->group == b->group)
                CU_ASSERT_STRING_NOT_EQUAL(a->selector, b->selector);
            CU_ASSERT_FALSE(a->op == b->op && a->backend == b->backend && a->sketch == b->sketch);
            /* the loader tells kernels apart by their entry points */
            int same = a->nsyms == b->nsyms;
            for (int s = 0; same && s < a->nsyms; s++)
                same = strcmp(a->syms[s], b->syms[s]) == 0;
            CU_ASSERT_FALSE(same);
        }
    CU_ASSERT_PTR_NULL(dt_mk_op_at(-1));
    CU_ASSERT_PTR_NULL(dt_mk_op_at(dt_mk_op_count()));
}

/* What each hook puts into a kernel's source, for every attribute
 * combination of every op: its selector 1 and its group's others 0, its
 * macros from the attributes, DT_BIAS / DT_ACT from the GEMM view, the
 * prelude's op line filled in, dtk_info naming the op, the register kernel
 * (segmented in an implicit A's stream kernels), and every group member's
 * driver section, in registry order; a blocked and a stream annotation. */
static void test_hook_codegen(void)
{
    dt_target t = g_target;
    dt_rng rng;
    dt_rng_seed(&rng, 99);
    dt_annotation a;
    dt_err e;
    for (int sk = 0; sk < DT_SKETCH_COUNT; sk++) {
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 1, &a, &e), 0);
        for (int o = 0; o < dt_mk_op_count(); o++) {
            const dt_mk_op *m = dt_mk_op_at(o);
            if (m->sketch != DT_SKETCH_BLOCKED) /* own sketches: tests/test_conv2d_channel.c */
                continue;
            dt_kernel_op kop = {.op = m->op, .dtype = m->backend->dtype};
            do {
                char *src = NULL;
                CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &src, &e), 0);
                dt_gemm g;
                CU_ASSERT_EQUAL_FATAL(dt_kernel_op_gemm(&kop, &g, &e), 0);
                char line[DT_KOP_DESCRIBE_MAX + 64], what[DT_KOP_DESCRIBE_MAX];
                const char *prev_driver = src;
                for (int i = 0; i < dt_mk_op_count(); i++) {
                    const dt_mk_op *x = dt_mk_op_at(i);
                    if (x->sketch != DT_SKETCH_BLOCKED)
                        continue;
                    int member = x == m || (m->group > 0 && x->group == m->group);
                    /* the same op in another dtype shares a member's selector and
                     * section: nothing of its own to find or miss */
                    int shared = 0;
                    for (int y = 0; !member && y < dt_mk_op_count(); y++) {
                        const dt_mk_op *my = dt_mk_op_at(y);
                        shared |= (my == m || (m->group > 0 && my->group == m->group)) &&
                                  strcmp(my->driver, x->driver) == 0;
                    }
                    if (shared)
                        continue;
                    snprintf(line, sizeof line, "#define %s %d\n", x->selector, x == m);
                    CU_ASSERT_EQUAL(strstr(src, line) != NULL, member);
                    for (int j = 0; member && j < x->nmacros; j++) {
                        snprintf(line, sizeof line, "#define %s %d\n", x->macros[j],
                                 x == m ? x->macro_value(kop.attrs, j) : 0);
                        CU_ASSERT_PTR_NOT_NULL(strstr(src, line));
                    }
                    /* driver sections of the group, in registry order, after the
                     * common driver */
                    const char *d = strstr(src, x->driver);
                    CU_ASSERT_EQUAL(d != NULL, member);
                    if (d) {
                        CU_ASSERT(d > prev_driver);
                        prev_driver = d;
                    }
                }
                snprintf(line, sizeof line, "#define DT_BIAS %d\n#define DT_ACT %d\n#define DT_CONST_B %d\n\n",
                         g.bias, g.act, g.b_const);
                CU_ASSERT_PTR_NOT_NULL(strstr(src, line));
                CU_ASSERT_PTR_NULL(strstr(src, "@OP_MACROS@"));
                snprintf(line, sizeof line, " *   DT_STORE_SCRATCH (0/1), %s", m->selector);
                CU_ASSERT(strstr(src, line) != NULL || m->group > 0);
                dt_kernel_op_describe(&kop, what, sizeof what);
                snprintf(line, sizeof line, "const char dtk_info[] = \"%s; ", what);
                CU_ASSERT_PTR_NOT_NULL(strstr(src, line));
                /* an implicit A's stream kernels: the segmented register
                 * kernel, and dt_ukr its one-segment call */
                const int seg = m->segmented_a && a.sketch == DT_SKETCH_STREAM;
                CU_ASSERT_PTR_NOT_NULL(strstr(src, seg ? "static __attribute__((noinline)) void "
                                                         "dt_ukr_seg(int64_t kc, const"
                                                       : "static __attribute__((noinline)) void dt_ukr("));
                CU_ASSERT_EQUAL(strstr(src, "#define DT_UKR_SEG 1\n") != NULL, seg);
                CU_ASSERT_EQUAL(strstr(src, "static inline void dt_ukr(int64_t kc") != NULL, seg);
                /* and f32's the transposed tile (few output channels) */
                CU_ASSERT_EQUAL(strstr(src, "#define DT_UKR_T 1\n") != NULL,
                                seg && m->backend->dtype == DT_DTYPE_F32);
                CU_ASSERT_PTR_NOT_NULL(strstr(src, m->backend->epilogue));
                CU_ASSERT(strstr(src, m->backend->driver) < strstr(src, m->driver));
                /* an implicit A's section comes before the driver that gathers */
                if (m->driver_pre)
                    CU_ASSERT(strstr(src, m->driver_pre) && strstr(src, m->driver_pre) <
                                                                strstr(src, m->backend->driver));
                free(src);
            } while (dt_op_next_attrs(m->op, kop.attrs));
        }
    }
    /* an (op, dtype) without hooks is refused, not generated */
    dt_kernel_op none = {.op = dt_mk_op_at(0)->op, .dtype = DT_DTYPE_COUNT};
    char *src = NULL;
    CU_ASSERT_EQUAL(dt_codegen(&none, &a, &src, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NULL(src);
}

/* The loader binds a kernel to the hooks of the op it was generated for
 * and no other; verification refuses a kernel of another op. */
static void test_hook_loader(void)
{
    dt_rng rng;
    dt_rng_seed(&rng, 5);
    dt_annotation a;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &g_target, -1, 1, &a, &e), 0);
    int n = dt_mk_op_count();
    dt_kernel_op *kops = calloc((size_t)n, sizeof *kops);
    dt_annotation *anns = calloc((size_t)n, sizeof *anns);
    dt_kernel *ks = calloc((size_t)n, sizeof *ks);
    CU_ASSERT_FATAL(kops && anns && ks);
    for (int i = 0; i < n; i++) {
        kops[i].op = dt_mk_op_at(i)->op;
        kops[i].dtype = dt_mk_op_at(i)->backend->dtype;
        /* a dtype this CPU lacks builds on its portable back-end */
        anns[i] = a;
        anns[i].isa = dt_dtype_target(kops[i].dtype, &g_target).isa;
        if (dt_mk_op_at(i)->sketch != DT_SKETCH_BLOCKED) { /* an own sketch's row */
            const dt_target dt = dt_dtype_target(kops[i].dtype, &g_target);
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &dt, dt_mk_op_at(i)->sketch, 1,
                                                       &anns[i], &e), 0);
            kops[i].attrs[3] = 2; /* conv2d's groups: the channel sketch's keys */
        }
    }
    CU_ASSERT_EQUAL_FATAL(dt_test_build_load(&g_builder, kops, anns, n, ks), n);
    for (int i = 0; i < n; i++) {
        const dt_kernel *k = &ks[i];
        CU_ASSERT_PTR_EQUAL(k->op, dt_mk_op_at(i));
        for (int j = 0; j < n; j++) {
            /* the rows of one (op, dtype) compute the same op */
            const int same = kops[i].op == kops[j].op && kops[i].dtype == kops[j].dtype;
            CU_ASSERT_EQUAL(dt_kernel_computes(k, &kops[j]), same);
            if (!same) {
                CU_ASSERT_EQUAL(dt_verify_kernel(k, &kops[j], 1, 3, 5, 7, 1, 1, &e), DT_EINVAL);
                CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, kops[j].op->name));
            }
        }
        CU_ASSERT_EQUAL(dt_kernel_packed_size(k, DT_GEMM_NK(5, 7)) > 0, k->op->packed_size != NULL);
        if (k->op->packed_size) { /* the host's size of a packing is the kernel's */
            CU_ASSERT_EQUAL(dt_mk_packed_bytes(k->op, &anns[i], 5, 7), dt_kernel_packed_size(k, DT_GEMM_NK(5, 7)));
            CU_ASSERT_EQUAL(dt_mk_packed_bytes(k->op, &anns[i], 777, 301),
                            dt_kernel_packed_size(k, DT_GEMM_NK(777, 301)));
        }
    }
    dt_test_unload_all(ks, n);
    free(ks);
    free(anns);
    free(kops);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"every sketch x back-end, random annotations, verified", test_sketch_backend_matrix},
        {"corner annotations verified", test_corner_annotations},
        {"a second build is a cache hit", test_cache_hit},
        {"compile errors and time limits come back as results", test_compile_error_and_timeout},
        {"codegen refuses an invalid tile", test_codegen_refuses},
        {"the reference check catches wrong answers", test_reference_catches_errors},
        {"generated sources hash as they always did", test_source_hashes},
        {"per-op hooks: the registry is consistent", test_hook_registry},
        {"per-op hooks: what each puts into a kernel's source", test_hook_codegen},
        {"per-op hooks: a kernel binds to its op's entry points", test_hook_loader},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"microkernel", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
