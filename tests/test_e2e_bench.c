/* End-to-end: `dtune bench` through the real binary on small workloads —
 * sampled and given kernels, peers side by side, JSON output, each
 * kernel's back-end and the peak its %peak divides by, bad input. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/amx.h"
#include "common/target.h"
#include "space/annotation.h"
#include "backends/backend.h"
#include "dtypes/dtype.h"
#include "tests/dt_test.h"

static char *g_dir;

static int setup(void)
{
    g_dir = dt_test_tmpdir();
    return g_dir ? 0 : 1;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

/* Runs dtune bench with a private kernel cache; parses its JSON. */
static json_t *bench_json(const char *args, int *exit_code)
{
    dt_test_proc p;
    *exit_code = dt_test_run_dtune(&p, "bench %s --repeats 1 --min-time 0.2 --json", args);
    json_error_t jerr;
    json_t *root = *exit_code == 0 ? json_loads(p.out, 0, &jerr) : NULL;
    if (*exit_code != 0)
        fprintf(stderr, "\n  dtune bench %s: exit %d: %s\n", args, *exit_code, p.err);
    dt_test_proc_free(&p);
    return root;
}

static void test_sampled_dense(void)
{
    int code;
    json_t *r = bench_json("'dense(M=1..128,N=40,K=33,epilogue=bias+gelu)' --sample 3 --shapes "
                           "'{1,7,37}' --threads 2 --peers openblas,onednn",
                           &code);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(r, "threads")), 2);
    CU_ASSERT_TRUE(json_real_value(json_object_get(r, "peak_gops")) > 0);
    json_t *cands = json_object_get(r, "candidates");
    CU_ASSERT_EQUAL(json_array_size(cands), 5); /* 3 kernels + 2 peers */
    size_t i;
    json_t *c;
    json_array_foreach(cands, i, c)
    {
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "status")), "ok");
        if (i < 3)
            CU_ASSERT_PTR_NOT_NULL(json_object_get(c, "annotation"));
    }
    json_t *shapes = json_object_get(r, "shapes");
    CU_ASSERT_EQUAL_FATAL(json_array_size(shapes), 3);
    json_t *s = json_array_get(shapes, 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(s, "dims"), "M")), 7);
    CU_ASSERT_TRUE(json_real_value(json_object_get(s, "best")) > 0);
    CU_ASSERT_TRUE(json_real_value(json_object_get(s, "worst")) <=
                   json_real_value(json_object_get(s, "best")));
    CU_ASSERT_TRUE(json_real_value(json_object_get(json_object_get(s, "gflops"), "openblas")) > 0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(s, "ratio_vs_onednn"));
    json_decref(r);
}

static void test_given_kernels_bmm(void)
{
    char *file = dt_test_write_file(
        g_dir, "k.json",
        "[{\"sketch\":\"stream\",\"isa\":\"generic\",\"mr\":2,\"nr\":8,\"kc\":0,\"mc\":0,"
        "\"nc\":16,\"unroll\":2,\"prefetch\":0,\"store\":\"mask\",\"order\":\"m_inner\","
        "\"par\":\"mn\",\"threads\":1},"
        "{\"sketch\":\"blocked\",\"isa\":\"generic\",\"mr\":3,\"nr\":4,\"kc\":16,\"mc\":6,"
        "\"nc\":8,\"unroll\":1,\"prefetch\":2,\"store\":\"scratch\",\"order\":\"n_inner\","
        "\"par\":\"n\",\"threads\":1}]");
    char args[1024];
    snprintf(args, sizeof args,
             "'batch_matmul(B=3,M=seq,N=seq,K=16,layout=NT;seq=1..5)' --kernel '%s' --peers none",
             file);
    int code;
    json_t *r = bench_json(args, &code);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(r, "candidates")), 2);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(r, "shapes")), 5);
    json_decref(r);
    free(file);
}

/* --verify: every candidate checked on every shape, reported per shape. */
static void test_verify_every_shape(void)
{
    int code;
    json_t *r = bench_json("'batch_matmul(B=3,M=seq,N=64,K=seq,layout=NN;seq=1..8)' --sample 2 "
                           "--shapes '{1,5,11}' --verify",
                           &code);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    size_t ncands = json_array_size(json_object_get(r, "candidates"));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(r, "shapes"), i, s)
    {
        json_t *v = json_object_get(s, "verified");
        CU_ASSERT_TRUE_FATAL(json_is_object(v));
        CU_ASSERT_EQUAL(json_object_size(v), ncands); /* peers refusing a shape would be absent */
        const char *name;
        json_t *ok;
        json_object_foreach(v, name, ok)
            CU_ASSERT_TRUE(json_is_true(ok));
        CU_ASSERT_EQUAL(json_object_size(json_object_get(s, "verify_errors")), 0);
    }
    json_decref(r);
}

static void test_text_output(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..4,N=16,K=16)' --sample 2 --peers "
                                          "openblas --repeats 1 --min-time 0.2"),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\npeaks: f32 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, " backend "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, " f32/")); /* the best kernel's back-end per shape */
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "openblas"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "M=4"));
    dt_test_proc_free(&p);
}

/* bench on a bf16 workload with the one annotation file text: the kernel's
 * and the shape's back-end and peak kind are the row dt_backend_of_ann
 * gives, fraction_of_peak divides by that kind's peak, measured in the run
 * and listed under "peaks". */
static void check_backend(const char *ann_text, const char *what)
{
    dt_annotation a;
    dt_err e;
    if (dt_annotation_from_text(ann_text, &a, &e)) {
        CU_FAIL_FATAL("annotation of the test does not parse");
    }
    const dt_backend *row = dt_backend_of_ann(DT_DTYPE_BF16, &a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    char want[48];
    dt_backend_full_name(row, want, sizeof want);
    char *file = dt_test_write_file(g_dir, "bk.json", ann_text);
    char args[1024];
    snprintf(args, sizeof args,
             "'dense(M=1..64,N=64,K=64,dtype=bf16)' --kernel '%s' --shapes '{3,64}' --peers none",
             file);
    int code;
    json_t *r = bench_json(args, &code);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    json_t *c = json_array_get(json_object_get(r, "candidates"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "status")), "ok");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "backend")), want);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "peak_kind")), row->peak);
    /* the dtype's vector peak stays at the top, and every kind used is listed */
    CU_ASSERT_TRUE(json_is_string(json_object_get(r, "peak_kind")));
    CU_ASSERT_TRUE(json_real_value(json_object_get(r, "peak_gops")) > 0);
    json_t *peaks = json_object_get(r, "peaks");
    CU_ASSERT_PTR_NOT_NULL(json_object_get(peaks, json_string_value(json_object_get(r, "peak_kind"))));
    json_t *pk = json_object_get(peaks, row->peak);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
    double peak = json_real_value(json_object_get(pk, "gops"));
    CU_ASSERT_TRUE(peak > 0);
    CU_ASSERT_TRUE(json_real_value(json_object_get(pk, "gops_1thread")) > 0);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(r, "shapes"), i, s)
    {
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s, "best_kernel")), "k0");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s, "backend")), want);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s, "peak_kind")), row->peak);
        double best = json_real_value(json_object_get(s, "best"));
        double frac = json_real_value(json_object_get(s, "fraction_of_peak"));
        CU_ASSERT_TRUE(best > 0 && frac > 0);
        CU_ASSERT_DOUBLE_EQUAL(frac, best / peak, 1e-9 * frac);
    }
    printf("\n    %s: %s, peak %s %.1f", what, want, row->peak, peak);
    json_decref(r);
    free(file);
}

static void test_backend_and_peak(void)
{
    dt_target t;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&t, &e), 0);
    /* the vector kernel: the isa bench runs bf16 at on this CPU (native,
     * else its portable row), a 4 x 2-vector register tile */
    char vec[512];
    dt_test_bf16_vector_kernel_json(&t, vec, sizeof vec);
    check_backend(vec, "vector kernel");
    const char *why = NULL;
    if (!dt_amx_usable(&t, &why)) {
        dt_test_skip("bench of a bf16/amx kernel: %s", why ? why : "AMX not usable");
        return;
    }
    const dt_backend *amx = dt_backend_of_unit(DT_DTYPE_BF16, DT_ISA_AVX512, DT_UNIT_AMX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(amx);
    if (!dt_backend_usable(amx, &t, &why)) {
        dt_test_skip("bench of a bf16/amx kernel: %s", why ? why : "bf16/amx not usable");
        return;
    }
    check_backend("{\"sketch\":\"stream\",\"isa\":\"avx512\",\"mr\":16,\"nr\":32,\"kc\":0,"
                  "\"mc\":0,\"nc\":64,\"unroll\":1,\"prefetch\":0,\"store\":\"mask\","
                  "\"order\":\"m_inner\",\"par\":\"n\",\"threads\":1,\"unit\":\"amx\"}",
                  "amx kernel");
    char name[48];
    CU_ASSERT_STRING_EQUAL(dt_backend_full_name(amx, name, sizeof name), "bf16/amx");
    CU_ASSERT_STRING_EQUAL(amx->peak, "amx_bf16");
}

static void test_bad_input(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..4,N=16)'"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dim K is missing"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..4,N=16,K=16)' --threads 0"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..4,N=16,K=16)' --sample 2 --kernel x"),
                    1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..4,N=16,K=16)' --shapes 0..3"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, ">= 1"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=a*b,N=16,K=16;a=1..2,b=1..2)' --shapes 1..3"), 2);
    dt_test_proc_free(&p);
    char *bad = dt_test_write_file(g_dir, "bad.json",
                                   "{\"sketch\":\"stream\",\"isa\":\"generic\",\"mr\":20,\"nr\":8,"
                                   "\"kc\":0,\"mc\":0,\"nc\":8,\"unroll\":1,\"prefetch\":0,"
                                   "\"store\":\"mask\",\"order\":\"m_inner\",\"par\":\"n\","
                                   "\"threads\":1}");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..4,N=16,K=16)' --kernel '%s'", bad), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "register"));
    dt_test_proc_free(&p);
    free(bad);
}

/* conv2d (an op whose A is implicit): the kernels verified on every shape
 * against the reference (A gathered from the NHWC input), the oneDNN
 * convolution peer too, its primitive creation time in its message; the
 * GEMM peers listed as skipped, saying why. */
static void test_conv2d(void)
{
    int code;
    const char *key = "'conv2d(N=1..2,H=8,W=8,C=16,K=32,R=3,S=3,stride=1,pad=1,"
                      "epilogue=bias+relu)'";
    char args[256];
    snprintf(args, sizeof args, "%s --sample 4 --verify", key);
    json_t *r = bench_json(args, &code);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    json_t *cands = json_object_get(r, "candidates");
    size_t i, ncands = json_array_size(cands);
    int kernels = 0, conv_peer = 0, skipped = 0, ok = 0;
    json_t *c;
    json_array_foreach(cands, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *msg = json_string_value(json_object_get(c, "message"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(status);
        ok += strcmp(status, "ok") == 0;
        if (json_object_get(c, "annotation")) {
            kernels++;
            CU_ASSERT_STRING_EQUAL(status, "ok");
        } else if (strcmp(name, "onednn_conv") == 0) {
            conv_peer = 1;
            CU_ASSERT_STRING_EQUAL(status, "ok");
            CU_ASSERT_TRUE(msg && strstr(msg, "primitive creation per shape"));
        } else {
            /* every GEMM peer built in: listed, skipped, with the reason */
            skipped++;
            CU_ASSERT_STRING_EQUAL(status, "skipped");
            CU_ASSERT_TRUE(msg && strstr(msg, "implicit A"));
        }
    }
    CU_ASSERT_EQUAL(kernels, 4);
    json_t *shapes = json_object_get(r, "shapes");
    CU_ASSERT_EQUAL_FATAL(json_array_size(shapes), 2);
    json_t *s;
    json_array_foreach(shapes, i, s)
    {
        json_t *v = json_object_get(s, "verified");
        CU_ASSERT_TRUE_FATAL(json_is_object(v));
        /* every candidate that runs was checked on this shape, and matched */
        CU_ASSERT_EQUAL(json_object_size(v), (size_t)ok);
        const char *name;
        json_t *good;
        json_object_foreach(v, name, good)
            CU_ASSERT_TRUE(json_is_true(good));
        CU_ASSERT_EQUAL(json_object_size(json_object_get(s, "verify_errors")), 0);
        if (conv_peer) {
            CU_ASSERT_TRUE(json_is_true(json_object_get(v, "onednn_conv")));
            CU_ASSERT_TRUE(json_real_value(json_object_get(json_object_get(s, "gflops"),
                                                           "onednn_conv")) > 0);
            CU_ASSERT_TRUE(json_real_value(json_object_get(json_object_get(s,
                                                           "peer_pack_seconds"),
                                                           "onednn_conv")) >= 0);
            CU_ASSERT_TRUE(json_real_value(json_object_get(s, "ratio_vs_onednn")) > 0);
        }
    }
    json_decref(r);
    if (!conv_peer)
        dt_test_skip("oneDNN is not built in: no onednn_conv peer");
    if (!skipped)
        dt_test_skip("no GEMM peer is built in");

    /* the text report names the skipped peers and why */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench %s --sample 1 --repeats 1 --min-time 0.2", key),
                    0);
    if (skipped)
        CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "ran no shape: skipped: a GEMM peer"));
    if (conv_peer)
        CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "primitive creation per shape"));
    dt_test_proc_free(&p);
    (void)ncands;
}

int main(void)
{
    /* kernels built by these tests go to a private cache */
    char *dir = dt_test_tmpdir();
    setenv("DTUNE_CACHE_DIR", dir, 1);
    CU_TestInfo tests[] = {
        {"sampled dense kernels against peers, JSON", test_sampled_dense},
        {"given kernels on batch_matmul", test_given_kernels_bmm},
        {"--verify: every candidate on every shape", test_verify_every_shape},
        {"text table", test_text_output},
        {"each kernel's back-end and the peak of its %peak", test_backend_and_peak},
        {"bad input", test_bad_input},
        {"conv2d: implicit A, the oneDNN convolution peer, GEMM peers skipped", test_conv2d},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e bench", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    dt_test_rmtree(dir);
    free(dir);
    return rc;
}
