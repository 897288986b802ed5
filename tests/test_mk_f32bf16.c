/* microkernel/, dtype f32_bf16 — `math=bf16` on an f32 dense workload (issue
 * 29, point 7; dtype_f32bf16.c, op_dense.c, template/types_f32bf16.h,
 * the f32_bf16 rows of backends/backend.c): f32 in and out, weights rounded to
 * bf16 when packed, activations when a kernel is called, bf16's kernels.
 *   - every back-end row: portable (generic, avx2 vectors), avx512_bf16 where
 *     the CPU has it, the AMX tiles on the emulation wherever AVX-512 runs and
 *     natively where AMX is usable; annotations sampled for the dtype
 *     (dt_annotation_sample_dtype, what the tuner draws) and per row, both
 *     sketches, verified on the boundary shapes at 1 and 2 threads against the
 *     f64 reference of the bf16-rounded operands;
 *   - the key: math=bf16 parsed and printed back (round trip), its errors;
 *   - accuracy: the max relative error against the f64 reference of the
 *     unrounded f32 operands on BERT-like shapes (M = 1, 16, 64, N = K = 768),
 *     printed (docs/microkernels.md quotes it) and bounded;
 *   - end to end: `dtune bench` and `dtune tune` on a math=bf16 key. */
#include <math.h>
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
static dt_builder g_b;     /* -Wall -Wextra -Werror: kernels build warning-free */
static dt_builder g_emu_b; /* the same on the AMX tile emulation */
static dt_target g_target; /* this machine */
static dt_target g_amx;    /* this machine told it has AMX tiles (for the emulation) */

static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_b,
                             DT_BUILD_DEFAULT_FLAGS " -Wall -Wextra -Werror"))
        return 1;
    dt_test_amx_emulation(&g_b, &g_target, &g_emu_b, &g_amx);
    return 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

static const char *const g_ops[] = {
    "dense(M=1..8,N=64,K=64,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=relu,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=gelu,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+relu,math=bf16)",
    "dense(M=1..8,N=64,K=64,epilogue=bias+gelu,math=bf16)",
};
#define N_OPS ((int)(sizeof g_ops / sizeof g_ops[0]))

/* Annotations sampled for the dtype on this machine (the rows the tuner
 * searches here), both sketches, every epilogue in turn. */
static void test_sampled_dtype(void)
{
    dt_test_verify_dtype_sampled(DT_DTYPE_F32_BF16, g_ops, N_OPS, 8, 20261127, &g_b, &g_target);
}

/* Every row of the dtype by itself: its annotations, both sketches — five
 * rows since issue 44 added avx512_fma (bf16 widened on AVX-512 FMA). */
static void test_every_row(void)
{
    CU_ASSERT_EQUAL(dt_test_verify_dtype_rows(DT_DTYPE_F32_BF16, g_ops, N_OPS, 5, 7000, &g_b,
                                              &g_emu_b, &g_target, &g_amx, NULL), 5);
}

/* math=bf16 in keys: parsed into f32_bf16, printed back canonically. */
static void test_key(void)
{
    static const struct {
        const char *in, *canon;
    } ok[] = {
        {"dense(M=1..128,N=768,K=768,epilogue=bias,math=bf16)",
         "dense(M=1..128,N=768,K=768,epilogue=bias,math=bf16)"},
        {"dense(M=1..128,N=768,K=768,math=bf16,epilogue=bias)",
         "dense(M=1..128,N=768,K=768,epilogue=bias,math=bf16)"},
        {"dense(M=1..128,N=768,K=768,dtype=f32,math=bf16)",
         "dense(M=1..128,N=768,K=768,math=bf16)"},
        {"dense(M=1..128,N=768,K=768,dtype=f32_bf16)", "dense(M=1..128,N=768,K=768,math=bf16)"},
        {"dense(M=1..128,N=768,K=768,dtype=f32_bf16,math=bf16)",
         "dense(M=1..128,N=768,K=768,math=bf16)"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        dt_workload *w = NULL;
        dt_err e;
        int rc = dt_workload_parse_key(ok[i].in, &w, &e);
        if (rc)
            fprintf(stderr, "\n  %s: %s\n", ok[i].in, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(w->dtype, DT_DTYPE_F32_BF16);
        char key[512];
        CU_ASSERT(dt_workload_key(w, key, sizeof key) < sizeof key);
        CU_ASSERT_STRING_EQUAL(key, ok[i].canon);
        dt_workload_free(w);
        /* and the canonical key parses to itself */
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(key, &w, &e), 0);
        char again[512];
        CU_ASSERT(dt_workload_key(w, again, sizeof again) < sizeof again);
        CU_ASSERT_STRING_EQUAL(again, key);
        dt_workload_free(w);
    }
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"dense(M=1..8,N=8,K=8,dtype=int8,math=bf16)", "not available for dtype int8"},
        {"dense(M=1..8,N=8,K=8,dtype=bf16,math=bf16)", "not available for dtype bf16"},
        {"dense(M=1..8,N=8,K=8,math=fp8)", "math=fp8"},
        {"dense(M=1..8,N=8,K=8,math=bf16,math=bf16)", "math is given twice"},
        {"batch_matmul(B=2,M=1..8,N=8,K=8,math=bf16)", "not available for batch_matmul"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_workload *w = NULL;
        dt_err e;
        CU_ASSERT_EQUAL(dt_workload_parse_key(bad[i].in, &w, &e), DT_EINVAL);
        CU_ASSERT_PTR_NULL(w);
        if (!strstr(e.msg, bad[i].msg))
            fprintf(stderr, "\n  %s: '%s' lacks '%s'\n", bad[i].in, e.msg, bad[i].msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, bad[i].msg));
    }
    /* the dtype registry's view of it */
    CU_ASSERT_EQUAL(dt_dtype_storage(DT_DTYPE_F32_BF16), DT_DTYPE_F32);
    CU_ASSERT_STRING_EQUAL(dt_dtype_math(DT_DTYPE_F32_BF16), "bf16");
    CU_ASSERT_PTR_NULL(dt_dtype_math(DT_DTYPE_BF16));
    dt_dtype d;
    CU_ASSERT_EQUAL(dt_dtype_with_math(DT_DTYPE_F32, "bf16", &d), 0);
    CU_ASSERT_EQUAL(d, DT_DTYPE_F32_BF16);
    CU_ASSERT_EQUAL(dt_dtype_with_math(DT_DTYPE_W8A32, "bf16", &d), 0); /* test_mk_w8a32bf16 */
    CU_ASSERT_EQUAL(d, DT_DTYPE_W8A32_BF16);
    CU_ASSERT_EQUAL(dt_dtype_with_math(DT_DTYPE_INT8, "bf16", &d), DT_EINVAL);
}

/* ---- accuracy against the unrounded f64 reference ------------------------ */

/* The max relative errors of kernel k on M×N×K (bias) against the f64
 * reference of the unrounded f32 operands: *rel_mag, the error over Σ|x·w|
 * (plus |bias|) of its element; *rel_max, over the largest |y| of the output. */
static int accuracy(const dt_kernel *k, const dt_kernel_op *kop, int64_t M, int64_t N, int64_t K,
                    double *rel_mag, double *rel_max)
{
    dt_gemm g;
    if (dt_kernel_op_gemm(kop, &g, NULL))
        return -1;
    g.batch = 1;
    g.M = M;
    g.N = N;
    g.K = K;
    float *X = dt_alloc64((size_t)(M * K) * sizeof(float));
    float *W = dt_alloc64((size_t)(N * K) * sizeof(float));
    float *bias = dt_alloc64((size_t)N * sizeof(float));
    float *Y = dt_alloc64((size_t)(M * N) * sizeof(float));
    double *ref = malloc((size_t)(M * N) * sizeof(double));
    double *mag = malloc((size_t)(M * N) * sizeof(double));
    size_t psize = dt_kernel_packed_size(k, DT_GEMM_NK(N, K));
    void *packed = dt_alloc64(psize + 64);
    int rc = -1;
    dt_err e;
    if (X && W && bias && Y && ref && mag && packed) {
        dt_fill_random(X, M * K, 11);
        dt_fill_random(W, N * K, 12);
        dt_fill_random(bias, N, 13);
        dt_kernel_pack(k, DT_GEMM_NK(N, K), W, NULL, packed);
        dt_gemm_args a = dt_gemm_args_contiguous(&g, X, packed, bias, Y, 1);
        dt_kernel_run(k, &a);
        if (dt_ref_gemm(&g, X, W, bias, NULL, ref, mag, &e) == 0) {
            double ymax = 0, emag = 0, emax = 0;
            for (int64_t i = 0; i < M * N; i++)
                ymax = fmax(ymax, fabs(ref[i]));
            for (int64_t i = 0; i < M * N; i++) {
                double err = fabs((double)Y[i] - ref[i]);
                emag = fmax(emag, err / mag[i]);
                emax = fmax(emax, err / ymax);
            }
            *rel_mag = emag;
            *rel_max = emax;
            rc = 0;
        }
    }
    free(X);
    free(W);
    free(bias);
    free(Y);
    free(ref);
    free(mag);
    free(packed);
    return rc;
}

/* The fastest-looking row here (the first the tuner searches) and the
 * portable row, on BERT-like shapes: M = 1, 16, 64; N = K = 768. */
static void test_accuracy(void)
{
    const dt_kernel_op kop = dt_test_kop("dense(M=1..64,N=768,K=768,epilogue=bias,math=bf16)");
    dt_target t = dt_dtype_target(DT_DTYPE_F32_BF16, &g_target);
    const dt_backend *rows[8];
    int nrows = dt_backend_searched(DT_DTYPE_F32_BF16, &t, rows, 8);
    CU_ASSERT_FATAL(nrows >= 1);
    dt_annotation anns[8];
    dt_kernel_op kops[8];
    dt_rng rng;
    dt_rng_seed(&rng, 4242);
    for (int r = 0; r < nrows; r++) {
        dt_target rt = t;
        dt_target_set_isa(&rt, rows[r]->isa);
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample_unit(&rng, &rt, rows[r]->unit,
                                                        DT_SKETCH_BLOCKED, 1, &anns[r], &e), 0);
        kops[r] = kop;
    }
    dt_kernel ks[8];
    memset(ks, 0, sizeof ks);
    int loaded = dt_test_build_load(&g_b, kops, anns, nrows, ks);
    CU_ASSERT_EQUAL(loaded, nrows);
    static const int64_t Ms[] = {1, 16, 64};
    double worst_mag = 0, worst_max = 0;
    for (int r = 0; r < nrows; r++) {
        if (!ks[r].handle)
            continue;
        char name[64];
        dt_backend_full_name(rows[r], name, sizeof name);
        for (size_t m = 0; m < sizeof Ms / sizeof Ms[0]; m++) {
            double em = 0, ex = 0;
            CU_ASSERT_EQUAL_FATAL(accuracy(&ks[r], &kop, Ms[m], 768, 768, &em, &ex), 0);
            printf("\n    math=bf16 %-24s M=%-3lld N=768 K=768: max |err|/sum|x*w| %.2e, "
                   "max |err|/max|y| %.2e", name, (long long)Ms[m], em, ex);
            worst_mag = fmax(worst_mag, em);
            worst_max = fmax(worst_max, ex);
        }
    }
    printf("\n    worst: %.2e of sum|x*w|, %.2e of max|y|\n", worst_mag, worst_max);
    /* bf16 keeps 8 significant bits: each product is off by at most about
     * 2·2^-9 of |x·w| */
    CU_ASSERT(worst_mag < 1.0 / 128);
    CU_ASSERT(worst_max > 0); /* the rounding is visible: not f32 arithmetic */
    dt_test_unload_all(ks, nrows);
}

/* The kernels' rounding of X is dt_bf16_from_f32's, bit for bit: Y = X·W
 * with W = 1 in column 0 of k = 0 only, so Y[i][0] = bf16(X[i][0]) exactly.
 * X's first column holds ties (to even, both ways), values just off a tie,
 * negatives, large and small magnitudes; K = 35 so the vector loops and the
 * scalar tail both convert; every vector row of this machine. */
static void test_rounding(void)
{
    enum { M = 48, N = 16, K = 35 };
    static float X[M * K], W[N * K], Y[M * N];
    static const uint32_t bits[] = {
        0x3f808000u, /* 1 + 2^-8: a tie, down to even 1.0 */
        0x3f818000u, /* 1 + 3*2^-8: a tie, up to even */
        0x3f808001u, /* just above a tie: up */
        0x3f807fffu, /* just below: down */
        0xbf808000u, 0xbf818000u, 0x7f7fffffu, /* negative ties; the largest float */
        /* the smallest normal; a tie near it (denormals are not: vdpbf16ps
         * and the tiles treat denormal bf16 inputs as zero, as for bf16) */
        0x00800000u, 0x00818000u,
        0x3eaaaaabu, 0xc2f6e979u, 0x4b7fffffu,
    };
    const int nb = (int)(sizeof bits / sizeof bits[0]);
    for (int i = 0; i < M * K; i++)
        X[i] = 0.25f * (float)((i * 7) % 13) - 1.5f;
    for (int i = 0; i < M; i++) {
        uint32_t b = bits[i % nb] + (uint32_t)(i / nb) * 0x00010000u; /* other exponents too */
        if ((b & 0x7f800000u) == 0x7f800000u)
            b = bits[i % nb];
        memcpy(&X[i * K], &b, sizeof b);
    }
    memset(W, 0, sizeof W);
    W[0] = 1.0f; /* W[n=0][k=0] */
    const dt_kernel_op kop = dt_test_kop("dense(M=1..48,N=16,K=35,math=bf16)");
    dt_kernel_op kops[8];
    dt_annotation anns[8];
    const dt_backend *rows[8];
    int n = 0;
    dt_rng rng;
    dt_rng_seed(&rng, 99);
    for (int i = 0; i < dt_backend_count() && n < 8; i++) {
        const dt_backend *be = dt_backend_at(i);
        if (be->dtype != DT_DTYPE_F32_BF16 || be->unit != DT_UNIT_VEC ||
            !dt_backend_usable(be, &g_target, NULL))
            continue;
        dt_target t = g_target;
        dt_target_set_isa(&t, be->isa);
        for (int sk = 0; sk < DT_SKETCH_COUNT && n < 8; sk++) {
            dt_err e;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, sk, 1, &anns[n], &e), 0);
            kops[n] = kop;
            rows[n++] = be;
        }
    }
    dt_kernel ks[8];
    memset(ks, 0, sizeof ks);
    CU_ASSERT_EQUAL(dt_test_build_load(&g_b, kops, anns, n, ks), n);
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_kernel_op_gemm(&kop, &g, NULL), 0);
    g.batch = 1;
    g.M = M;
    g.N = N;
    g.K = K;
    for (int r = 0; r < n; r++) {
        if (!ks[r].handle)
            continue;
        void *packed = dt_alloc64(dt_kernel_packed_size(&ks[r], DT_GEMM_NK(N, K)) + 64);
        CU_ASSERT_PTR_NOT_NULL_FATAL(packed);
        dt_kernel_pack(&ks[r], DT_GEMM_NK(N, K), W, NULL, packed);
        dt_gemm_args a = dt_gemm_args_contiguous(&g, X, packed, NULL, Y, 1);
        dt_kernel_run(&ks[r], &a);
        int bad = 0;
        for (int i = 0; i < M; i++) {
            float want = dt_bf16_to_f32(dt_bf16_from_f32(X[i * K]));
            if (memcmp(&Y[i * N], &want, sizeof want) != 0 && bad++ < 3) {
                char name[64];
                fprintf(stderr, "\n  %s: row %d: x %a rounded to %a, want %a",
                        dt_backend_full_name(rows[r], name, sizeof name), i, (double)X[i * K],
                        (double)Y[i * N], (double)want);
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(packed);
    }
    dt_test_unload_all(ks, n);
}

/* ---- end to end ----------------------------------------------------------- */

static void test_e2e_bench(void)
{
    dt_test_proc p;
    int code = dt_test_run_dtune(&p, "bench 'dense(M=1..16,N=32,K=40,epilogue=bias,math=bf16)' "
                                     "--sample 3 --shapes '{1,5,16}' --threads 1 --repeats 1 "
                                     "--min-time 0.1 --verify --json");
    CU_ASSERT_EQUAL(code, 0);
    if (code)
        fprintf(stderr, "\n  bench: exit %d: %s\n", code, p.err);
    json_error_t jerr;
    json_t *r = code == 0 ? json_loads(p.out, 0, &jerr) : NULL;
    CU_ASSERT_PTR_NOT_NULL(r);
    if (r) {
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r, "workload")),
                               "dense(M=1..16,N=32,K=40,epilogue=bias,math=bf16)");
        size_t i;
        json_t *c;
        int kernels = 0, onednn = 0, onednn_bf16 = 0;
        json_array_foreach(json_object_get(r, "candidates"), i, c)
        {
            CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "status")), "ok");
            const char *be = json_string_value(json_object_get(c, "backend"));
            const char *name = json_string_value(json_object_get(c, "name"));
            if (be && strncmp(be, "f32_bf16/", 9) == 0)
                kernels++;
            onednn += name && strcmp(name, "onednn") == 0;
            onednn_bf16 += name && strcmp(name, "onednn_bf16") == 0;
        }
        CU_ASSERT_EQUAL(kernels, 3);
        /* point 8: beside oneDNN f32, oneDNN bf16 with the activations'
         * conversion counted, verified (status ok) like every peer */
        CU_ASSERT_EQUAL(onednn_bf16, onednn);
        if (!onednn)
            dt_test_skip("oneDNN is not built in: no oneDNN peers for math=bf16");
        json_decref(r);
    }
    dt_test_proc_free(&p);
    /* an f32 key asks for f32 arithmetic: onednn_bf16 is no peer of it */
    code = dt_test_run_dtune(&p, "bench 'dense(M=1..16,N=32,K=40)' --sample 1 --shapes '{5}' "
                                 "--threads 1 --repeats 1 --min-time 0.1 --json");
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NULL(strstr(p.out, "onednn_bf16"));
    dt_test_proc_free(&p);
}

static void test_e2e_tune(void)
{
    char *dir = dt_test_tmpdir();
    char args[1024];
    snprintf(args, sizeof args,
             "tune 'dense(M=1..8,N=32,K=32,math=bf16)' --db '%s/t.db' --trials 8 --threads 1 "
             "--min-time 0.2 --json",
             dir);
    int code;
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL(t);
    if (t) {
        json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "workload")),
                               "dense(M=1..8,N=32,K=32,math=bf16)");
        CU_ASSERT(json_integer_value(json_object_get(w, "ranges")) >= 1);
        json_decref(t);
    }
    dt_test_proc p;
    code = dt_test_run_dtune(&p, "query 'dense(M=1..8,N=32,K=32,math=bf16)' --db '%s/t.db' "
                                 "--shape M=3", dir);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "f32_bf16/"));
    dt_test_proc_free(&p);
    dt_test_rmtree(dir);
    free(dir);
}

/* --math bf16 on `dtune import` and `dtune tune`: every f32 dense marked,
 * batch_matmul (no bf16 math) left f32. */
static void test_e2e_math_flag(void)
{
    dt_test_proc p;
    int code = dt_test_run_dtune(&p, "import '" DTUNE_SOURCE_DIR "/tests/data/onnx/bert-base.onnx' "
                                     "--var seq=1..128 --var batch=1 --math bf16");
    CU_ASSERT_EQUAL(code, 0);
    int marked = 0;
    for (const char *q = p.out; (q = strstr(q, "\"dtype\": \"f32_bf16\"")); q++)
        marked++;
    CU_ASSERT_EQUAL(marked, 4); /* qkv, attention output, ffn up, ffn down */
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dense(M=1..128,N=768,K=768,epilogue=bias,math=bf16)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;"));
    dt_test_proc_free(&p);
    code = dt_test_run_dtune(&p, "import '" DTUNE_SOURCE_DIR "/tests/data/onnx/bert-base.onnx' "
                                 "--var seq=1..128 --var batch=1 --math fp8");
    CU_ASSERT_EQUAL(code, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--math takes bf16"));
    dt_test_proc_free(&p);

    char *dir = dt_test_tmpdir();
    char args[1024];
    snprintf(args, sizeof args,
             "tune 'dense(M=1..4,N=32,K=24,epilogue=relu)' --math bf16 --db '%s/t.db' --trials 4 "
             "--threads 1 --min-time 0.2 --json", dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    if (t) {
        json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "workload")),
                               "dense(M=1..4,N=32,K=24,epilogue=relu,math=bf16)");
        json_decref(t);
    }
    /* a spec file: its f32 dense ops marked, the spec's own dtypes kept */
    char *spec = dt_test_write_file(dir, "m.json",
        "{\"name\": \"m\", \"variables\": {\"seq\": {\"range\": [1, 4]}}, \"ops\": ["
        "{\"name\": \"a\", \"op\": \"dense\", \"M\": \"seq\", \"N\": 32, \"K\": 16},"
        "{\"name\": \"b\", \"op\": \"dense\", \"M\": \"seq\", \"N\": 32, \"K\": 16, "
        "\"dtype\": \"int8\"}]}");
    snprintf(args, sizeof args,
             "tune '%s' --math bf16 --db '%s/s.db' --trials 8 --threads 1 --min-time 0.2 --json",
             spec, dir);
    t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    if (t) {
        json_t *ws = json_object_get(t, "workloads");
        CU_ASSERT_EQUAL(json_array_size(ws), 2);
        int bf = 0, i8 = 0;
        size_t i;
        json_t *w;
        json_array_foreach(ws, i, w)
        {
            const char *k = json_string_value(json_object_get(w, "workload"));
            bf += k && strcmp(k, "dense(M=1..4,N=32,K=16,math=bf16)") == 0;
            i8 += k && strcmp(k, "dense(M=1..4,N=32,K=16,dtype=int8)") == 0;
        }
        CU_ASSERT_EQUAL(bf, 1);
        CU_ASSERT_EQUAL(i8, 1);
        json_decref(t);
    }
    free(spec);
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"math=bf16 keys: parse, print, round trip, errors", test_key},
        {"kernels sampled for the dtype (the searched rows), both sketches", test_sampled_dtype},
        {"every f32_bf16 row (AMX emulated and native), both sketches", test_every_row},
        {"X rounded to nearest even, as dt_bf16_from_f32, on every vector row", test_rounding},
        {"accuracy against the unrounded f64 reference, BERT-like shapes", test_accuracy},
        {"dtune bench on a math=bf16 key", test_e2e_bench},
        {"dtune tune and query on a math=bf16 key", test_e2e_tune},
        {"--math bf16 on dtune import and dtune tune", test_e2e_math_flag},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"mk_f32bf16", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
