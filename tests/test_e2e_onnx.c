/* End-to-end: ONNX models through the real `dtune` binary — `dtune import`,
 * `dtune workloads X.onnx`, a tune started from an .onnx file whose schedule
 * `dtune query` finds under the imported key, and every bad input with its
 * exit code and message.  The models are tests/data/onnx/ (made by
 * scripts/make_onnx_models.py). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/dt_test.h"

#define ONNX(name) DTUNE_SOURCE_DIR "/tests/data/onnx/" name
#define MODEL(name) DTUNE_SOURCE_DIR "/models/" name
#define BERT_VARS "--var batch=1 --var seq=1..128"

/* "key xcount" lines of a `dtune workloads --json` listing, in order. */
static char *workload_list(const char *args)
{
    int code = -1;
    json_t *root = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    if (!root)
        return strdup("");
    size_t i;
    json_t *w;
    char *buf = calloc(1, 8192);
    json_array_foreach(json_object_get(root, "workloads"), i, w)
    {
        size_t n = strlen(buf);
        snprintf(buf + n, 8192 - n, "%s x%lld\n", json_string_value(json_object_get(w, "key")),
                 (long long)json_integer_value(json_object_get(w, "count")));
    }
    json_decref(root);
    return buf;
}

static void test_workloads_match_spec(void)
{
    /* the check: the ONNX BERT-base is exactly models/bert-base.json */
    char *from_onnx = workload_list("workloads " ONNX("bert-base.onnx") " " BERT_VARS " --json");
    char *from_spec = workload_list("workloads " MODEL("bert-base.json") " --json");
    CU_ASSERT_STRING_EQUAL(from_onnx, from_spec);
    CU_ASSERT_PTR_NOT_NULL(strstr(from_onnx, "dense(M=1..128,N=3072,K=768,epilogue=bias+gelu) x12"));
    free(from_onnx);
    free(from_spec);
    /* and with a batch range, bert-base-batched.json */
    from_onnx = workload_list("workloads " ONNX("bert-base.onnx") " --var batch=1..8 --var "
                              "seq=1..128 --json");
    from_spec = workload_list("workloads " MODEL("bert-base-batched.json") " --json");
    CU_ASSERT_STRING_EQUAL(from_onnx, from_spec);
    free(from_onnx);
    free(from_spec);

    /* the table lists what is not tuned, and the JSON says the same */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s' " BERT_VARS, ONNX("bert-base.onnx")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "6 distinct workloads"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "not tuned:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Softmax"));
    dt_test_proc_free(&p);
    int code;
    json_t *root = dt_test_run_dtune_json(
        &code, "workloads " ONNX("bert-base.onnx") " " BERT_VARS " --json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_t *ox = json_object_get(root, "onnx");
    json_int_t nodes = json_integer_value(json_object_get(ox, "nodes"));
    json_int_t sum = json_integer_value(json_object_get(ox, "tuned_nodes"));
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(ox, "untuned"), i, u)
        sum += json_integer_value(json_object_get(u, "nodes"));
    CU_ASSERT(nodes > 1000);
    CU_ASSERT_EQUAL(sum, nodes); /* every node is tuned or listed */
    json_decref(root);
}

static void test_import_writes_spec(void)
{
    char *dir = dt_test_tmpdir();
    char spec[1024];
    snprintf(spec, sizeof spec, "%s/bert.json", dir);
    dt_test_proc p;
    /* the report on stderr, the spec in the file */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' " BERT_VARS " -o '%s'",
                                      ONNX("bert-base.onnx"), spec), 0);
    CU_ASSERT_STRING_EQUAL(p.out, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "6 distinct workloads"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "wrote"));
    dt_test_proc_free(&p);
    char args[2048];
    snprintf(args, sizeof args, "workloads '%s' --json", spec);
    char *from_file = workload_list(args);
    char *from_spec = workload_list("workloads " MODEL("bert-base.json") " --json");
    CU_ASSERT_STRING_EQUAL(from_file, from_spec);
    free(from_file);
    free(from_spec);
    /* without -o the spec is standard output, and it is the same text */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' " BERT_VARS, ONNX("bert-base.onnx")), 0);
    char *text = dt_test_slurp(spec);
    CU_ASSERT_STRING_EQUAL(p.out, text);
    free(text);
    dt_test_proc_free(&p);
    /* --json with -o: a report a script reads */
    int code;
    snprintf(args, sizeof args, "import %s --var batch=1..4 -o '%s/vit.json' --json",
             ONNX("vit-block.onnx"), dir);
    json_t *root = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT(json_array_size(json_object_get(root, "workloads")) >= 4);
    int conv = 0;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(json_object_get(root, "onnx"), "untuned"), i, u)
        conv |= !strcmp(json_string_value(json_object_get(u, "what")), "Conv");
    CU_ASSERT(conv); /* the patch embedding is listed, not dropped */
    json_decref(root);
    /* the spec names its model after the file, or --name */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' --var batch=2 --name my_cnn",
                                      ONNX("cnn-small.onnx")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "height")); /* its dims still need values */
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' --var batch=2 --var height=32..64 "
                                          "--var width=32 --name my_cnn",
                                      ONNX("cnn-small.onnx")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\"my_cnn\""));
    dt_test_proc_free(&p);
    dt_test_rmtree(dir);
    free(dir);
}

static void test_tune_from_onnx(void)
{
    /* a tune started from the .onnx file stores its schedule under the
     * imported key, where `dtune query` finds it */
    char *dir = dt_test_tmpdir_with_cache();
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s' --var batch=1..4 --var height=16 --var "
                                          "width=16 --db '%s/t.db' --trials 12 --threads 1 "
                                          "--min-time 0.5",
                                      ONNX("cnn-small.onnx"), dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "not tuned:")); /* the Convs, said once */
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query 'dense(M=1..4,N=10,K=128,epilogue=bias)' "
                                          "--db '%s/t.db' --shape M=3 --threads 1",
                                      dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "M=3"));
    dt_test_proc_free(&p);
    dt_test_rmtree(dir);
    free(dir);
}

typedef struct {
    const char *args; /* after the command */
    int code;
    const char *msg;  /* in stderr */
} bad_case;

static void test_bad_input(void)
{
    const bad_case cases[] = {
        /* usage errors: 1 */
        {"import", 1, "expected one MODEL.onnx"},
        {"import " ONNX("bert-base.onnx") " --var seq", 1, "NAME=DOMAIN"},
        {"import " ONNX("bert-base.onnx") " " BERT_VARS " --json", 1, "-o"},
        {"import " ONNX("bert-base.onnx") " --name 'a b'", 1, "--name"},
        /* bad input: 2 */
        {"import " ONNX("bert-base.onnx"), 2, "seq"},
        {"import " ONNX("bert-base.onnx") " --var batch=1", 2, "seq"},
        {"import " ONNX("bert-base.onnx") " " BERT_VARS " --var heads=12", 2, "heads"},
        {"import " ONNX("bert-base.onnx") " --var batch=1 --var seq=128..1", 2, "seq"},
        {"import " MODEL("bert-base.json"), 2, "not an .onnx file"},
        {"import /nonexistent/x.onnx --var a=1", 2, "No such file"},
        {"workloads " MODEL("bert-base.json") " --var seq=1..8", 2, "--var applies to ONNX"},
        {"workloads /nonexistent/x.onnx", 2, "No such file"},
        {"tune /nonexistent/x.onnx --var a=1 --trials 5", 2, "No such file"},
        {"import " ONNX("bad-truncated.onnx") " " BERT_VARS, 2, "only 131397 remain"},
        {"import " ONNX("bad-not-onnx.onnx") " --var a=1", 2, "not an ONNX model"},
        {"import " ONNX("bad-opset10.onnx") " --var batch=1 --var seq=1..8", 2, "opset"},
        {"import " ONNX("bad-cycle.onnx") " --var batch=1", 2, "has a cycle through this node"},
        {"import " ONNX("bad-dangling.onnx") " --var batch=1", 2, "dangling input"},
        {"import " ONNX("bad-unsupported-op.onnx") " --var batch=1", 2,
         "NonZero"},
        {"import " ONNX("bad-huge-dims.onnx") " --var batch=1 --var seq=1..8", 2,
         "overflows int64"},
        {"import " ONNX("bad-unnamed-dim.onnx"), 2, "input_d0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_test_proc p;
        dt_test_run_dtune(&p, "%s", cases[i].args);
        if (p.exit_code != cases[i].code || !strstr(p.err, cases[i].msg))
            fprintf(stderr, "\n  dtune %s: exit %d (want %d), stderr: %s", cases[i].args,
                    p.exit_code, cases[i].code, p.err);
        CU_ASSERT_EQUAL(p.exit_code, cases[i].code);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, cases[i].msg));
        CU_ASSERT_STRING_EQUAL(p.out, ""); /* nothing half-made on stdout */
        dt_test_proc_free(&p);
    }
    /* a spec that cannot be written: 3, and no file is left behind */
    char *dir = dt_test_tmpdir();
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' " BERT_VARS " -o '%s/no/such/dir/x.json'",
                                      ONNX("bert-base.onnx"), dir), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "cannot write"));
    dt_test_proc_free(&p);
    if (access("/dev/full", W_OK) == 0) { /* a full disk */
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' " BERT_VARS " -o /dev/full",
                                          ONNX("bert-base.onnx")), 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "No space left"));
        dt_test_proc_free(&p);
    }
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"workloads X.onnx: BERT-base is models/bert-base.json", test_workloads_match_spec},
        {"import: spec file, stdout, --json report, --name", test_import_writes_spec},
        {"tune X.onnx: the schedule is found under the imported key", test_tune_from_onnx},
        {"bad input: exit codes and messages", test_bad_input},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e onnx", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
