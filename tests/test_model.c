/* shape/model: loading model specs, merging ops into workloads, shape-set
 * weights, and every spec error with its file:line:col. */
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "shape/model.h"
#include "tests/dt_test.h"

static void test_bert_base(void)
{
    dt_model *m = dt_test_load_model("models/bert-base.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_STRING_EQUAL(m->name, "bert-base");
    CU_ASSERT_EQUAL(dt_model_nshapes(m), 128);
    static const char *keys[] = {
        "dense(M=1..128,N=2304,K=768,epilogue=bias)",
        "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)",
        "batch_matmul(B=12,M=seq,N=64,K=seq,layout=NN;seq=1..128)",
        "dense(M=1..128,N=768,K=768,epilogue=bias)",
        "dense(M=1..128,N=3072,K=768,epilogue=bias+gelu)",
        "dense(M=1..128,N=768,K=3072,epilogue=bias)",
    };
    CU_ASSERT_EQUAL_FATAL(m->nworkloads, 6);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_STRING_EQUAL(m->workloads[i].key, keys[i]);
        CU_ASSERT_EQUAL(m->workloads[i].count, 12);
        CU_ASSERT_EQUAL(dt_workload_nshapes(m->workloads[i].w), 128);
        CU_ASSERT_DOUBLE_EQUAL(m->workloads[i].w->vars[0].dom.weights[0], 1.0 / 128, 1e-12);
    }
    CU_ASSERT_STRING_EQUAL(m->workloads[0].ops[0], "qkv_proj");
    dt_model_free(m);
}

/* The reduced-precision model files: BERT-base in bf16 and in int8 (its
 * attention in bf16), and the weight-only int8 decode layers. */
static void test_dtype_models(void)
{
    static const struct {
        const char *path;
        int n;
        const char *first, *second;
    } want[] = {
        {"models/bert-base-bf16.json", 6, "dense(M=1..128,N=2304,K=768,epilogue=bias,dtype=bf16)",
         "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT,dtype=bf16;seq=1..128)"},
        {"models/bert-base-int8.json", 6, "dense(M=1..128,N=2304,K=768,epilogue=bias,dtype=int8)",
         "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT,dtype=bf16;seq=1..128)"},
        {"models/llm-decode-w8.json", 3, "dense(M=1..64,N=4096,K=4096,dtype=w8a32)",
         "dense(M=1..64,N=11008,K=4096,dtype=w8a32)"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        dt_model *m = dt_test_load_model(want[i].path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL_FATAL(m->nworkloads, want[i].n);
        CU_ASSERT_STRING_EQUAL(m->workloads[0].key, want[i].first);
        CU_ASSERT_STRING_EQUAL(m->workloads[1].key, want[i].second);
        dt_model_free(m);
    }
}

static void test_bert_base_batched(void)
{
    dt_model *m = dt_test_load_model("models/bert-base-batched.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(dt_model_nshapes(m), 1024);
    CU_ASSERT_EQUAL_FATAL(m->nworkloads, 6);
    CU_ASSERT_STRING_EQUAL(m->workloads[0].key,
                           "dense(M=batch*seq,N=2304,K=768,epilogue=bias;batch=1..8,seq=1..128)");
    CU_ASSERT_STRING_EQUAL(
        m->workloads[1].key,
        "batch_matmul(B=12*batch,M=seq,N=seq,K=64,layout=NT;batch=1..8,seq=1..128)");
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(dt_workload_nshapes(m->workloads[i].w), 1024);
    dt_model_free(m);
}

static dt_model *parse(const char *text, dt_err *e)
{
    dt_model *m = NULL;
    dt_model_parse(text, strlen(text), "spec.json", &m, e);
    return m;
}

static void test_merge_and_weights(void)
{
    dt_err e;
    dt_model *m = parse(
        "{\"name\":\"t\",\n"
        " \"variables\":{\"seq\":{\"values\":[16,32,64],\"weights\":[1,1,2]},\n"
        "                \"len\":{\"values\":[16,32,64]}},\n"
        " \"ops\":[{\"name\":\"a\",\"op\":\"dense\",\"M\":\"seq\",\"N\":64,\"K\":64,\"count\":3},\n"
        "         {\"name\":\"b\",\"op\":\"dense\",\"M\":\"seq\",\"N\":64,\"K\":64},\n"
        "         {\"name\":\"c\",\"op\":\"dense\",\"M\":\"len\",\"N\":64,\"K\":64,\"count\":4},\n"
        "         {\"op\":\"dense\",\"M\":\"seq\",\"N\":\"2*32\",\"K\":64,\"epilogue\":\"relu\"}]}",
        &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL_FATAL(m->nworkloads, 2);
    dt_model_workload *w = &m->workloads[0];
    CU_ASSERT_STRING_EQUAL(w->key, "dense(M={16,32,64},N=64,K=64)");
    CU_ASSERT_EQUAL(w->count, 8);
    CU_ASSERT_EQUAL(w->nops, 3);
    CU_ASSERT_STRING_EQUAL(w->ops[2], "c");
    /* seq weighs (.25,.25,.5) for 4 calls, len is uniform for 4 calls */
    const dt_domain *d = &w->w->vars[0].dom;
    CU_ASSERT_DOUBLE_EQUAL(d->weights[0], (0.25 + 1.0 / 3) / 2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(d->weights[2], (0.5 + 1.0 / 3) / 2, 1e-12);
    CU_ASSERT_STRING_EQUAL(m->workloads[1].key, "dense(M={16,32,64},N=64,K=64,epilogue=relu)");
    CU_ASSERT_STRING_EQUAL(m->workloads[1].ops[0], "dense3"); /* default name */
    dt_model_free(m);
}

/* Issue 43: a count may be an expression of the variables (a recurrent
 * cell's per-step product runs seq times): the workload's count is its mean
 * over the variables' weights, and a variable of the workload that the count
 * uses is reweighted by it, so count x objective is the time per model run. */
static void test_expression_counts(void)
{
    dt_err e;
    dt_model *m = parse(
        "{\"name\":\"t\",\n"
        " \"variables\":{\"batch\":{\"values\":[1,2]},\"seq\":{\"values\":[1,2,3,4]}},\n"
        " \"ops\":[{\"name\":\"rec\",\"op\":\"dense\",\"M\":\"batch\",\"N\":64,\"K\":16,"
        "\"count\":\"seq\"},\n"
        "         {\"name\":\"loop\",\"op\":\"dense\",\"M\":\"seq\",\"N\":32,\"K\":16,"
        "\"count\":\"2*seq\"},\n"
        "         {\"name\":\"once\",\"op\":\"dense\",\"M\":\"seq\",\"N\":32,\"K\":16}]}",
        &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL_FATAL(m->nworkloads, 2);
    /* M=batch, count seq: the mean 2.5, batch's weights untouched */
    const dt_model_workload *w = &m->workloads[0];
    CU_ASSERT_STRING_EQUAL(w->key, "dense(M=1..2,N=64,K=16)");
    CU_ASSERT_DOUBLE_EQUAL(w->count, 2.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(w->w->vars[0].dom.weights[0], 0.5, 1e-12);
    /* M=seq twice: count 2*seq (mean 5, seq weighted k/10) merged with count
     * 1 (uniform): count 6, weights (5*k/10 + 1/4) / 6 */
    w = &m->workloads[1];
    CU_ASSERT_STRING_EQUAL(w->key, "dense(M=1..4,N=32,K=16)");
    CU_ASSERT_DOUBLE_EQUAL(w->count, 6.0, 1e-12);
    for (int k = 1; k <= 4; k++)
        CU_ASSERT_DOUBLE_EQUAL(w->w->vars[0].dom.weights[k - 1], (5.0 * k / 10 + 0.25) / 6, 1e-12);
    CU_ASSERT_EQUAL(w->nops, 2);
    dt_model_free(m);
    /* a count below 1 (or above 10^9) at some shape, an unknown variable, a
     * malformed expression: errors naming the op's count */
    static const struct {
        const char *count, *want;
    } bad[] = {
        {"\"seq-2\"", "count 'seq-2': the count is -1 at seq=1; it must be 1 to"},
        {"\"len\"", "count 'len': unknown variable"},
        {"\"seq*\"", "count 'seq*': unexpected end"},
        {"\"1000000000*seq\"", "the count is 2000000000 at seq=2"},
        {"0", "must be an integer from 1 to 1000000000, or an expression"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"name\":\"t\",\"variables\":{\"seq\":{\"values\":[1,2,3,4]}},\n"
                 " \"ops\":[{\"op\":\"dense\",\"M\":\"seq\",\"N\":4,\"K\":4,\"count\":%s}]}",
                 bad[i].count);
        dt_model *b = parse(text, &e);
        CU_ASSERT_PTR_NULL(b);
        if (b || !strstr(e.msg, bad[i].want) || !strstr(e.msg, "ops[0].count"))
            fprintf(stderr, "\n  count %s: %s\n", bad[i].count, b ? "accepted" : e.msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, bad[i].want));
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "ops[0].count"));
        dt_model_free(b);
    }
}

/* A model-level dtype is every op's default; an op's own dtype wins; ops
 * that differ only in dtype are distinct workloads. */
static void test_dtypes(void)
{
    dt_err e;
    dt_model *m = parse(
        "{\"name\":\"t\",\"dtype\":\"int8\",\n"
        " \"variables\":{\"seq\":{\"range\":[1,8]}},\n"
        " \"ops\":[{\"name\":\"a\",\"op\":\"dense\",\"M\":\"seq\",\"N\":64,\"K\":64},\n"
        "         {\"name\":\"b\",\"op\":\"dense\",\"M\":\"seq\",\"N\":64,\"K\":64,\"dtype\":\"f32\"},\n"
        "         {\"name\":\"c\",\"op\":\"batch_matmul\",\"B\":2,\"M\":\"seq\",\"N\":\"seq\",\"K\":8,"
        "\"dtype\":\"bf16\"},\n"
        "         {\"name\":\"d\",\"op\":\"dense\",\"M\":\"seq\",\"N\":64,\"K\":64}]}",
        &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL_FATAL(m->nworkloads, 3);
    CU_ASSERT_STRING_EQUAL(m->workloads[0].key, "dense(M=1..8,N=64,K=64,dtype=int8)");
    CU_ASSERT_EQUAL(m->workloads[0].count, 2);
    CU_ASSERT_EQUAL(m->workloads[0].w->dtype, DT_DTYPE_INT8);
    CU_ASSERT_STRING_EQUAL(m->workloads[1].key, "dense(M=1..8,N=64,K=64)");
    CU_ASSERT_STRING_EQUAL(m->workloads[2].key,
                           "batch_matmul(B=2,M=seq,N=seq,K=8,layout=NN,dtype=bf16;seq=1..8)");
    dt_model_free(m);
}

/* Each bad spec must fail with a message holding all the needles. */
static void expect_error(const char *text, const char *where, const char *what)
{
    dt_err e;
    dt_model *m = parse(text, &e);
    int ok = m == NULL && e.code == DT_EINVAL && strstr(e.msg, where) && strstr(e.msg, what);
    if (!ok)
        fprintf(stderr, "\n  spec: %s\n  got: %s\n  expected '%s' and '%s'\n", text,
                m ? "(no error)" : e.msg, where, what);
    CU_ASSERT_TRUE(ok);
    dt_model_free(m);
}

#define HEAD "{\"name\":\"t\",\"variables\":{\"seq\":{\"range\":[1,128]}},\n\"ops\":[\n"

static void test_spec_errors(void)
{
    expect_error("{\"name\": \"t\",\n \"ops\": [}", "spec.json:2:", "malformed JSON");
    expect_error("[1,2]", "spec.json:1:1", "a model spec is a JSON object");
    expect_error("{\"ops\":[]}", "spec.json:1:1", "missing \"name\"");
    expect_error("{\"name\":\"t\",\"opz\":[]}", "spec.json:1:13", "unknown field 'opz'");
    expect_error("{\"name\":\"t\",\"ops\":[]}", "spec.json:1:19", "non-empty array");
    expect_error(HEAD "{\"op\":\"conv3d\",\"M\":1}]}", "spec.json:3:7: ops[0].op",
                 "unknown op 'conv3d' (known ops: dense, batch_matmul, conv2d)");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"batch*seq\",\"N\":1,\"K\":1}]}",
                 "spec.json:3:20: ops[0].M", "unknown variable 'batch'");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq*\",\"N\":1,\"K\":1}]}", "spec.json:3:",
                 "unexpected end");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq\",\"N\":1}]}", "ops[0]", "missing dim K");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq\",\"N\":1,\"K\":1,\"Q\":2}]}",
                 "spec.json:3:37: ops[0].Q", "unknown field 'Q'");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq\",\"N\":0,\"K\":1}]}", "ops[0].N",
                 "must be >= 1");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq-1\",\"N\":1,\"K\":1}]}", "ops[0]",
                 "dim M = seq-1 is 0 at seq=1");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq*4000000000\",\"N\":4000000000,\"K\":1}]}",
                 "ops[0]", "overflows int64");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq\",\"N\":1,\"K\":1,\"count\":0}]}",
                 "ops[0].count", "from 1 to");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq\",\"N\":1,\"K\":1,\"dtype\":\"int4\"}]}",
                 "spec.json:3:", "ops[0].dtype: dtype must be one of f32, bf16, int8, w8a32, not 'int4'");
    expect_error("{\"name\":\"t\",\"dtype\":7,\"ops\":[]}", "spec.json:1:",
                 "dtype: dtype must be one of f32, bf16, int8, w8a32, not an integer");
    expect_error("{\"name\":\"t\",\"dtype\":\"int8\",\"variables\":{\"seq\":{\"range\":[1,4]}},"
                 "\"ops\":[{\"op\":\"batch_matmul\",\"B\":1,\"M\":\"seq\",\"N\":4,\"K\":4}]}",
                 "ops[0]", "dtype int8 is not available for batch_matmul");
    expect_error(HEAD "{\"op\":\"dense\",\"M\":\"seq\",\"N\":1,\"K\":1,\"epilogue\":\"tanh\"}]}",
                 "ops[0].epilogue", "must be one of none, bias");
    expect_error(HEAD "{\"name\":\"x\",\"op\":\"dense\",\"M\":\"seq\",\"N\":1,\"K\":1},\n"
                      "{\"name\":\"x\",\"op\":\"dense\",\"M\":\"seq\",\"N\":2,\"K\":1}]}",
                 "spec.json:4:9: ops[1].name", "duplicate op name 'x'");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":1,\"seq\":2},\"ops\":[]}", "spec.json:1:",
                 "duplicate object key");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":{\"range\":[128,1]}},\"ops\":[]}",
                 "variables.seq.range", "empty range 128..1");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":{\"values\":[]}},\"ops\":[]}",
                 "variables.seq.values", "non-empty array");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":{\"values\":[1,1]}},\"ops\":[]}",
                 "variables.seq.values", "appears twice");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":{\"range\":[1,4],\"weights\":[1]}},"
                 "\"ops\":[]}", "variables.seq.weights", "array of 4 numbers");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":{\"range\":[1,4],\"step\":0}},"
                 "\"ops\":[]}", "variables.seq.step", "must be >= 1");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":{}},\"ops\":[]}", "variables.seq",
                 "exactly one of");
    expect_error("{\"name\":\"t\",\"variables\":{\"seq\":\"1..4\"},\"ops\":[]}", "variables.seq",
                 "not a string");
    expect_error("{\"name\":\"t\",\"variables\":{\"2x\":1},\"ops\":[]}", "variables.2x",
                 "not a valid variable name");
    expect_error("{\"name\":\"t\",\"variables\":{\"a\":{\"range\":[1,200]},\"b\":{\"range\":"
                 "[1,200]},\"c\":{\"range\":[1,200]}},\"ops\":[{\"op\":\"dense\",\"M\":\"a*b*c\","
                 "\"N\":1,\"K\":1}]}", "ops[0]", "at most 1048576");
}

static void test_utf8_column(void)
{
    /* columns count characters: "é" is one column (bytes would say 27) */
    expect_error("{\"name\":\"é\",\"ops\":[{\"op\":\"nope\"}]}", "spec.json:1:26", "unknown op");
}

/* Every file under tests/data/fuzz/model/ (inputs the fuzzer found, and
 * seeds) goes through the fuzzer's own harness, included here: parsed as a
 * spec and as a workload key, keys checked to round-trip; a crash, a
 * sanitizer report or a broken invariant (abort) fails the suite. */
#include "fuzz/fuzz_model_spec.c"

static void replay_model(const char *path, void *ud)
{
    (void)ud;
    char *text;
    size_t len;
    dt_err e;
    if (dt_read_file(path, DT_MODEL_MAX_BYTES, &text, &len, &e)) {
        CU_FAIL(e.msg);
        return;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)text, len);
    free(text);
}

static void test_fuzz_replay(void)
{
    CU_ASSERT(dt_test_for_each_file("tests/data/fuzz/model", replay_model, NULL) >= 1);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"bert-base.json", test_bert_base},
        {"bert-base-batched.json", test_bert_base_batched},
        {"identical ops merge, weights mix", test_merge_and_weights},
        {"counts that are expressions of the variables", test_expression_counts},
        {"dtypes: model default, per-op override, distinct workloads", test_dtypes},
        {"the bf16, int8 and weight-only int8 model files", test_dtype_models},
        {"spec errors name file:line:col", test_spec_errors},
        {"columns count UTF-8 characters", test_utf8_column},
        {"fuzz inputs replayed", test_fuzz_replay},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"model", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
