/* End-to-end: the real `dtune` binary — help, version, exit codes, and
 * `dtune workloads` on the bundled BERT-base models. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/dt_test.h"

#define MODEL(name) DTUNE_SOURCE_DIR "/models/" name

static void test_version_and_help(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "--version"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "dtune " DTUNE_VERSION));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "--help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Commands:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Exit codes"));
    dt_test_proc_free(&p);
    static const char *cmds[] = {"info",  "workloads", "db",     "db init",
                                 "db stats", "bench", "measure", "worker"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "%s --help", cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Usage: dtune"));
        CU_ASSERT_STRING_EQUAL(p.err, "");
        dt_test_proc_free(&p);
    }
}

static void test_usage_errors(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "%s", ""), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "Usage"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "frobnicate"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown command 'frobnicate'"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "--frob"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "expected one MODEL.json"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads --frob " MODEL("bert-base.json")), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--frob"));
    dt_test_proc_free(&p);
}

static void test_workloads_table(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads " MODEL("bert-base.json")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "model bert-base: 6 distinct workloads, 128 shapes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "dense(M=1..128,N=768,K=3072,epilogue=bias)"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p.out, "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "expected work per model run"));
    dt_test_proc_free(&p);
}

static void test_workloads_json(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads --json --shapes " MODEL("bert-base-batched.json")), 0);
    json_error_t jerr;
    json_t *root = json_loads(p.out, 0, &jerr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "model")), "bert-base-batched");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(root, "shapes")), 1024);
    json_t *wls = json_object_get(root, "workloads");
    CU_ASSERT_EQUAL_FATAL(json_array_size(wls), 6);
    json_t *qkv = json_array_get(wls, 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(qkv, "key")),
                           "dense(M=batch*seq,N=2304,K=768,epilogue=bias;batch=1..8,seq=1..128)");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(qkv, "count")), 12);
    json_t *shapes = json_object_get(qkv, "shape_set");
    CU_ASSERT_EQUAL_FATAL(json_array_size(shapes), 1024);
    double total = 0;
    size_t i;
    json_t *s;
    json_array_foreach(shapes, i, s) total += json_real_value(json_object_get(s, "weight"));
    CU_ASSERT_DOUBLE_EQUAL(total, 1.0, 1e-9);
    json_t *last = json_array_get(shapes, 1023);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(last, "dims"), "M")), 1024);
    /* max GFLOP of the QKV projection: 2*1024*2304*768 */
    double gmax = json_real_value(json_object_get(json_object_get(qkv, "gflop"), "max"));
    CU_ASSERT_DOUBLE_EQUAL(gmax, 2.0 * 1024 * 2304 * 768 * 1e-9, 1e-6);
    json_decref(root);
    dt_test_proc_free(&p);
}

static void test_workloads_bad_input(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads /nonexistent/model.json"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "/nonexistent/model.json"));
    dt_test_proc_free(&p);
    char *dir = dt_test_tmpdir();
    char *bad = dt_test_write_file(dir, "bad.json",
                                   "{\"name\": \"m\",\n \"ops\": [{\"op\": \"dense\", \"M\": \"seq\","
                                   " \"N\": 1, \"K\": 1}]}\n");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s'", bad), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad.json:2:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown variable 'seq'"));
    CU_ASSERT_STRING_EQUAL(p.out, "");
    dt_test_proc_free(&p);
    char *garbage = dt_test_write_file(dir, "garbage.json", "\x01\x02 not json");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s'", garbage), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "malformed JSON"));
    dt_test_proc_free(&p);
    free(bad);
    free(garbage);
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"--version and --help of every command", test_version_and_help},
        {"usage errors exit 1", test_usage_errors},
        {"workloads: BERT-base table", test_workloads_table},
        {"workloads: JSON with shapes", test_workloads_json},
        {"workloads: bad input exits 2", test_workloads_bad_input},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e cli", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
