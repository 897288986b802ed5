/* End-to-end: `dtune bench` through the real binary on small workloads —
 * sampled and given kernels, peers side by side, JSON output, bad input. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "f32 peak"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "openblas"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "M=4"));
    dt_test_proc_free(&p);
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
        {"bad input", test_bad_input},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e bench", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    dt_test_rmtree(dir);
    free(dir);
    return rc;
}
