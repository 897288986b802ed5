/* Issue 30: what current exporters write imports.  An op without a shape
 * rule takes its shapes from value_info or has unknown ones, and refuses the
 * model only when a tuned MatMul/Gemm needs them (the error names the chain);
 * dims written as "?" or dim_value -1 are variables of their own; IR 14 /
 * opset 28 files are read.  The models are tests/data/onnx's, written by
 * scripts/onnx_models_versions.py. */
#include <stdlib.h>
#include <string.h>

#include "onnx/graph.h"
#include "onnx/import.h"
#include "onnx/shape.h"
#include "shape/model.h"
#include "tests/dt_test.h"

#define ONNX_DIR DTUNE_SOURCE_DIR "/tests/data/onnx/"

#define VARS(...)                      \
    ((const char *[]){__VA_ARGS__}),   \
        (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))

/* The import of file, or NULL (the error printed). */
static dt_ox_import *import(const char *file, const char *const *vars, int nvars)
{
    dt_ox_import *imp = NULL;
    dt_err e;
    if (dt_ox_import_file(file, NULL, vars, nvars, &imp, &e))
        fprintf(stderr, "\n%s\n", e.msg);
    return imp;
}

/* "key xN; ..." of the import's spec. */
static char *workloads(const dt_ox_import *imp)
{
    dt_model *m = NULL;
    dt_err e;
    if (dt_model_parse(imp->spec_json, strlen(imp->spec_json), "imported", &m, &e))
        return NULL;
    size_t cap = 4096, len = 0;
    char *s = calloc(1, cap);
    for (int i = 0; s && i < m->nworkloads; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%s x%lld", i ? "; " : "",
                                m->workloads[i].key, (long long)m->workloads[i].count);
    dt_model_free(m);
    return s;
}

static void expect_workloads(const dt_ox_import *imp, const char *want)
{
    char *got = workloads(imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (strcmp(got, want))
        fprintf(stderr, "\nworkloads: %s\nexpected:  %s\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
}

static int untuned_has(const dt_ox_import *imp, const char *what)
{
    for (int i = 0; i < imp->nuntuned; i++)
        if (!strcmp(imp->untuned[i].what, what))
            return 1;
    return 0;
}

/* The import of file fails with DT_EINVAL and a message holding each part. */
static void expect_error(const char *file, const char *const *vars, int nvars,
                         const char *const *parts)
{
    dt_ox_import *imp = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_ox_import_file(file, NULL, vars, nvars, &imp, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(imp);
    for (int i = 0; parts[i]; i++)
        if (!strstr(e.msg, parts[i])) {
            fprintf(stderr, "\nwanted '%s' in: %s\n", parts[i], e.msg);
            CU_FAIL("message");
        }
}

/* Node index by name, -1 when absent. */
static int node_index(const dt_ox_graph *g, const char *name)
{
    for (int i = 0; i < g->nnodes; i++)
        if (!strcmp(g->nodes[i].name, name))
            return i;
    return -1;
}

/* Reads and propagates file; the graph and shapes, or fails the test. */
static dt_ox_shapes *propagate(const char *file, dt_ox_graph **g, const char *const *vars,
                               int nvars)
{
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_ox_read_file(file, g, &e), 0);
    dt_var v[8];
    dt_domain doms[8];
    CU_ASSERT_FATAL(nvars <= 8);
    for (int i = 0; i < nvars; i++) {
        const char *eq = strchr(vars[i], '=');
        memset(&v[i], 0, sizeof v[i]);
        memcpy(v[i].name, vars[i], (size_t)(eq - vars[i]));
        CU_ASSERT_EQUAL_FATAL(dt_domain_parse(eq + 1, &doms[i], &e), 0);
        v[i].dom = doms[i];
    }
    dt_ox_vars ov = {nvars, v};
    dt_ox_shapes *s = NULL;
    if (dt_ox_propagate(*g, &ov, &s, &e))
        fprintf(stderr, "\n%s\n", e.msg);
    for (int i = 0; i < nvars; i++)
        dt_domain_free(&doms[i]);
    return s;
}

/* ---- point 1: versions ------------------------------------------------------------ */

static void test_ir14_opset28(void)
{
    dt_ox_import *imp = import(ONNX_DIR "ir14-opset28-mlp.onnx", VARS("batch=1..4", "seq=1..16"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(imp);
    expect_workloads(imp, "dense(M=batch*seq,N=256,K=64,epilogue=bias+gelu;batch=1..4,seq=1..16) "
                          "x1; dense(M=batch*seq,N=64,K=256,epilogue=bias;batch=1..4,seq=1..16) x1");
    CU_ASSERT_EQUAL(imp->nwarnings, 0); /* IR 14 and opset 28 are known */
    dt_ox_import_free(imp);
}

/* ---- point 2: ops without a rule ------------------------------------------------ */

static void test_value_info(void)
{
    /* dense -> com.example.FusedNorm (declared in value_info) -> dense */
    const char *f = ONNX_DIR "custom-op-value-info.onnx";
    dt_ox_import *imp = import(f, VARS("batch=1", "seq=1..16"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(imp);
    expect_workloads(imp, "dense(M=1..16,N=768,K=768,epilogue=bias) x2");
    CU_ASSERT(untuned_has(imp, "com.example.FusedNorm"));
    dt_ox_import_free(imp);
    dt_ox_graph *g = NULL;
    dt_ox_shapes *s = propagate(f, &g, VARS("batch={1}", "seq=1..16"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int n = node_index(g, "/norm/FusedNorm");
    CU_ASSERT_EQUAL(dt_ox_node_shapes(s, n), DT_OX_SHAPES_VALUE_INFO);
    CU_ASSERT_STRING_EQUAL(dt_ox_node_shapes_note(s, n), "shapes from value_info");
    CU_ASSERT_PTR_NULL(dt_ox_node_shapes_note(s, node_index(g, "/down/MatMul")));
    const dt_ox_shape *o = dt_ox_shape_of(s, "/norm/FusedNorm_output_0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(o->rank, 3);
    dt_ox_shapes_free(s);
    dt_ox_graph_free(g);
}

static void test_unknown_not_needed(void)
{
    /* NonMaxSuppression -> Gather: unknown, and no tuned op needs them */
    const char *f = ONNX_DIR "nms-unknown.onnx";
    dt_ox_import *imp = import(f, VARS("batch=1", "num_boxes=1..64"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(imp);
    expect_workloads(imp, "dense(M=1..64,N=91,K=256,epilogue=bias) x1");
    CU_ASSERT(untuned_has(imp, "NonMaxSuppression"));
    dt_ox_import_free(imp);
    dt_ox_graph *g = NULL;
    dt_ox_shapes *s = propagate(f, &g, VARS("batch={1}", "num_boxes=1..64"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int nms = node_index(g, "/NonMaxSuppression"), gather = node_index(g, "/Gather");
    CU_ASSERT_EQUAL(dt_ox_node_shapes(s, nms), DT_OX_SHAPES_UNKNOWN);
    CU_ASSERT_EQUAL(dt_ox_node_shapes(s, gather), DT_OX_SHAPES_UNKNOWN);
    CU_ASSERT_STRING_EQUAL(dt_ox_node_shapes_note(s, gather), "shapes unknown");
    CU_ASSERT_PTR_NULL(dt_ox_shape_of(s, "selected"));
    CU_ASSERT_PTR_NULL(dt_ox_shape_of(s, "box_index"));
    CU_ASSERT_PTR_NOT_NULL(dt_ox_shape_of(s, "scores"));
    dt_ox_shapes_free(s);
    dt_ox_graph_free(g);
}

static void test_unknown_feeds_matmul(void)
{
    /* the same custom op without value_info feeds the second MatMul */
    expect_error(ONNX_DIR "bad-custom-op-unknown.onnx", VARS("batch=1", "seq=1..16"),
                 (const char *[]){
                     "bad-custom-op-unknown.onnx: node '/down/MatMul' (#3, MatMul): ",
                     "input '/norm/FusedNorm_output_0' has unknown dims",
                     "they are unknown from: '/norm/FusedNorm' (#2, FusedNorm: no shape rule for "
                     "domain 'com.example', no value_info for '/norm/FusedNorm_output_0') -> "
                     "this node",
                     NULL});
}

/* ---- point 3: "?" and -1 ---------------------------------------------------------- */

static void test_unnamed_image_dims(void)
{
    static const char *const files[] = {"image-question-dims.onnx", "image-minus1-dims.onnx"};
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s%s", ONNX_DIR, files[i]);
        /* H and W are two variables, not one named "_" */
        dt_ox_import *imp =
            import(path, VARS("image_d0=1..8", "image_d2=16..64", "image_d3=32..128"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(imp);
        CU_ASSERT_EQUAL_FATAL(imp->nvars, 3);
        CU_ASSERT_STRING_EQUAL(imp->var_names[0], "image_d0");
        CU_ASSERT_STRING_EQUAL(imp->var_names[1], "image_d2");
        CU_ASSERT_STRING_EQUAL(imp->var_names[2], "image_d3");
        expect_workloads(imp, "conv2d(N=1..8,H=16..64,W=32..128,C=3,K=16,R=3,S=3,stride=1,"
                              "pad=1,epilogue=bias+relu) x1; "
                              "dense(M=1..8,N=10,K=16,epilogue=bias) x1");
        dt_ox_import_free(imp);
    }
}

int main(void)
{
    static CU_TestInfo tests[] = {
        {"IR 14, opset 28 as the current onnx writes", test_ir14_opset28},
        {"a custom op's shapes from value_info", test_value_info},
        {"unknown shapes nothing tuned needs", test_unknown_not_needed},
        {"unknown dims of a MatMul name the chain", test_unknown_feeds_matmul},
        {"\"?\" and -1 dims are variables of their own", test_unnamed_image_dims},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"onnx_unknown", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
