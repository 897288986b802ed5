/* onnx/import: ONNX models as model specs.  The test models of
 * tests/data/onnx (scripts/make_onnx_models.py) give the workloads their
 * hand-written specs in models/ give; graphs built here node by node cover
 * each pattern's variants (GELU spellings, Gemm, QDQ, w8a32, NT layouts)
 * and what must not fuse; every error names what is wrong. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "onnx/graph.h"
#include "onnx/import.h"
#include "onnx/import_graph.h"
#include "shape/model.h"
#include "tests/dt_test.h"

#define ONNX_DIR DTUNE_SOURCE_DIR "/tests/data/onnx/"

/* ---- helpers ---------------------------------------------------------------- */

/* The --var arguments and their count, as two function arguments. */
#define VARS(...)                      \
    ((const char *[]){__VA_ARGS__}),   \
        (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))

/* Every node is in an op or in exactly one untuned entry. */
static void check_accounting(const dt_ox_import *imp)
{
    int64_t sum = 0;
    for (int i = 0; i < imp->nuntuned; i++) {
        CU_ASSERT(imp->untuned[i].nodes >= 1);
        CU_ASSERT(imp->untuned[i].instances >= 1 &&
                  imp->untuned[i].instances <= imp->untuned[i].nodes);
        sum += imp->untuned[i].nodes;
    }
    CU_ASSERT_EQUAL(imp->nnodes, imp->ntuned + sum);
}

/* The spec of an import, loaded as `dtune workloads` loads it. */
static dt_model *spec_model(const dt_ox_import *imp)
{
    dt_err e;
    dt_model *m = NULL;
    if (dt_model_parse(imp->spec_json, strlen(imp->spec_json), "imported", &m, &e))
        fprintf(stderr, "%s\n%s\n", e.msg, imp->spec_json);
    return m;
}

static dt_model *import_file(const char *file, const char *const *vars, int nvars,
                             dt_ox_import **imp)
{
    dt_err e;
    *imp = NULL;
    if (dt_ox_import_file(file, NULL, vars, nvars, imp, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return NULL;
    }
    check_accounting(*imp);
    return spec_model(*imp);
}

/* "key xN" of every workload, "; "-separated, for one comparison. */
static char *summary(const dt_model *m)
{
    size_t cap = 8192, len = 0;
    char *s = calloc(1, cap);
    for (int i = 0; s && i < m->nworkloads; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%s x%lld", i ? "; " : "",
                                m->workloads[i].key, (long long)m->workloads[i].count);
    return s;
}

static void expect_workloads(const dt_model *m, const char *want)
{
    char *got = summary(m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (strcmp(got, want))
        fprintf(stderr, "\nworkloads: %s\nexpected:  %s\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
}

static const dt_ox_untuned *untuned(const dt_ox_import *imp, const char *what)
{
    for (int i = 0; i < imp->nuntuned; i++)
        if (!strcmp(imp->untuned[i].what, what))
            return &imp->untuned[i];
    return NULL;
}

static int64_t untuned_nodes(const dt_ox_import *imp, const char *what)
{
    const dt_ox_untuned *u = untuned(imp, what);
    return u ? u->nodes : 0;
}

/* Same workloads (keys and counts, in order) as a hand-written spec. */
static void expect_same_as(const dt_model *m, const char *spec)
{
    dt_model *want = dt_test_load_model(spec);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    char *a = summary(m), *b = summary(want);
    if (strcmp(a, b))
        fprintf(stderr, "\nimported: %s\n%s: %s\n", a, spec, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
    dt_model_free(want);
}

static void expect_error(const char *file, const char *const *vars, int nvars, int code,
                         const char *const *parts)
{
    dt_err e;
    dt_ox_import *imp = NULL;
    int rc = dt_ox_import_file(file, NULL, vars, nvars, &imp, &e);
    CU_ASSERT_EQUAL(rc, code);
    CU_ASSERT_PTR_NULL(imp);
    for (int i = 0; rc && parts[i]; i++)
        if (!strstr(e.msg, parts[i])) {
            fprintf(stderr, "\nmessage '%s' lacks '%s'\n", e.msg, parts[i]);
            CU_FAIL("message");
        }
    dt_ox_import_free(imp);
}

#define PARTS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- the test models ---------------------------------------------------------- */

/* BERT-base, batch 1: exactly models/bert-base.json's six workloads. */
static void test_bert_base(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "bert-base.onnx", VARS("batch=1", "seq=1..128"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_same_as(m, "models/bert-base.json");
    CU_ASSERT_STRING_EQUAL(m->name, "bert-base");
    CU_ASSERT_EQUAL(m->nvars, 2);
    CU_ASSERT_EQUAL(imp->nvars, 2);
    CU_ASSERT_STRING_EQUAL(imp->var_names[0], "batch");
    CU_ASSERT_STRING_EQUAL(imp->var_names[1], "seq");
    /* each spec op is named after its first node */
    CU_ASSERT_STRING_EQUAL(m->workloads[0].ops[0], "/encoder/layer.0/attention/self/qkv/MatMul");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Softmax"), 12);
    /* per layer 6 MatMuls, 4 bias Adds, 5 GELU nodes and the 3 Constants
     * only the GELU reads */
    CU_ASSERT_EQUAL(imp->ntuned, 12 * (6 + 4 + 5 + 3));
    /* 25 LayerNorms (embeddings + 2 per layer), 9 nodes each */
    const dt_ox_untuned *ln = untuned(imp, "LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ln);
    CU_ASSERT_EQUAL(ln->instances, 25);
    CU_ASSERT_EQUAL(ln->nodes, 25 * 9);
    /* nothing of the GELU or the bias Adds is left over: the Adds listed are
     * the embeddings' 2, and per layer 2 residuals and the mask's */
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Erf"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Add"), 2 + 12 * 3);
    /* what costs time comes first, what does no tensor work last */
    CU_ASSERT_STRING_EQUAL(imp->untuned[0].what, "Softmax");
    CU_ASSERT_STRING_EQUAL(imp->untuned[imp->nuntuned - 1].what, "Constant");
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "imported from bert-base.onnx (producer "));
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "Softmax \u00d712"));
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* With a dynamic batch: models/bert-base-batched.json's workloads. */
static void test_bert_base_batched(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "bert-base.onnx", VARS("seq=1..128", "batch=1..8"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_same_as(m, "models/bert-base-batched.json");
    /* the spec lists the variables in the graph's order, whatever the flags' */
    CU_ASSERT_STRING_EQUAL(m->vars[0].name, "batch");
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"batch\": {\"range\": [1, 8]}"));
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* The quantize_dynamic BERT layer: its four weighted MatMuls int8 with
 * their epilogues, the attention in f32, the quantization nodes covered. */
static void test_bert_layer_int8(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "bert-layer-int8-dynamic.onnx",
                              VARS("batch=1", "seq=1..128"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=1..128,N=2304,K=768,epilogue=bias,dtype=int8) x1; "
                        "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128) x1; "
                        "batch_matmul(B=12,M=seq,N=64,K=seq,layout=NN;seq=1..128) x1; "
                        "dense(M=1..128,N=768,K=768,epilogue=bias,dtype=int8) x1; "
                        "dense(M=1..128,N=3072,K=768,epilogue=bias+gelu,dtype=int8) x1; "
                        "dense(M=1..128,N=768,K=3072,epilogue=bias,dtype=int8) x1");
    /* the int8 denses are those of models/bert-base-int8.json */
    dt_model *want = dt_test_load_model("models/bert-base-int8.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    int found = 0;
    for (int i = 0; i < want->nworkloads; i++)
        for (int k = 0; k < m->nworkloads; k++)
            found += !strcmp(want->workloads[i].key, m->workloads[k].key);
    CU_ASSERT_EQUAL(found, 4);
    dt_model_free(want);
    /* the quantization, dequantization and GELU nodes are in the ops; the
     * one Cast left is the attention mask's */
    static const char *const gone[] = {"DynamicQuantizeLinear", "MatMulInteger", "Erf", NULL};
    for (int i = 0; gone[i]; i++)
        CU_ASSERT_EQUAL(untuned_nodes(imp, gone[i]), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Cast"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Mul"), 1);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* GPT-2: the tanh GELU is not dtune's gelu: ffn_up keeps epilogue=bias and
 * the tanh nodes are listed.  The causal mask's Shape(kᵀ) does not stop kᵀ
 * from being read as layout NT. */
static void test_gpt2(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "gpt2-block.onnx", VARS("batch=1", "seq=1..128"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=1..128,N=2304,K=768,epilogue=bias) x2; "
                        "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128) x2; "
                        "batch_matmul(B=12,M=seq,N=64,K=seq,layout=NN;seq=1..128) x2; "
                        "dense(M=1..128,N=768,K=768,epilogue=bias) x2; "
                        "dense(M=1..128,N=3072,K=768,epilogue=bias) x2; "
                        "dense(M=1..128,N=768,K=3072,epilogue=bias) x2");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Tanh"), 2);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Pow"), 2);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LayerNormalization"), 5);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Softmax"), 2);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* GPT-2 with a dynamic batch: the Reshape(-1, seq) resolves to batch. */
static void test_gpt2_batched(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "gpt2-block.onnx", VARS("batch=1..8", "seq=1..128"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL_FATAL(m->nworkloads, 6);
    CU_ASSERT_STRING_EQUAL(m->workloads[0].key,
                           "dense(M=batch*seq,N=2304,K=768,epilogue=bias;batch=1..8,seq=1..128)");
    CU_ASSERT_STRING_EQUAL(
        m->workloads[1].key,
        "batch_matmul(B=12*batch,M=seq,N=seq,K=64,layout=NT;batch=1..8,seq=1..128)");
    CU_ASSERT_EQUAL(imp->ntuned, 20);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* ViT: the patch embedding's Conv is a conv2d (16x16, stride 16, its bias);
 * M = 197·batch. */
static void test_vit(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "vit-block.onnx", VARS("batch=1..8"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..8,H=224,W=224,C=3,K=768,R=16,S=16,stride=16,pad=0,"
                        "epilogue=bias) x1; "
                        "dense(M=197*batch,N=768,K=768,epilogue=bias;batch=1..8) x4; "
                        "batch_matmul(B=12*batch,M=197,N=197,K=64,layout=NT;batch=1..8) x1; "
                        "batch_matmul(B=12*batch,M=197,N=64,K=197,layout=NN;batch=1..8) x1; "
                        "dense(M=197*batch,N=3072,K=768,epilogue=bias+gelu;batch=1..8) x1; "
                        "dense(M=197*batch,N=768,K=3072,epilogue=bias;batch=1..8) x1");
    CU_ASSERT_PTR_NULL(untuned(imp, "Conv"));
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LayerNormalization"), 3);
    dt_model_free(m);
    dt_ox_import_free(imp);
    /* a fixed batch: constant dims */
    m = import_file(ONNX_DIR "vit-block.onnx", VARS("batch=1"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1,H=224,W=224,C=3,K=768,R=16,S=16,stride=16,pad=0,"
                        "epilogue=bias) x1; "
                        "dense(M=197,N=768,K=768,epilogue=bias) x4; "
                        "batch_matmul(B=12,M=197,N=197,K=64,layout=NT) x1; "
                        "batch_matmul(B=12,M=197,N=64,K=197,layout=NN) x1; "
                        "dense(M=197,N=3072,K=768,epilogue=bias+gelu) x1; "
                        "dense(M=197,N=768,K=3072,epilogue=bias) x1");
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"M\": 197,"));
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* The CNN: its three Convs (with their bias and Relu) as conv2d, the spatial
 * dims of the later ones through MaxPool and the strided Conv's shape
 * rules; the classifier's Gemm (transB=1, C as bias) as dense. */
static void test_cnn(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "cnn-small.onnx",
                              VARS("batch=1..4", "height={224,256}", "width={224,256}"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..4,H={224,256},W={224,256},C=3,K=32,R=3,S=3,stride=1,"
                        "pad=1,epilogue=bias+relu) x1; "
                        "conv2d(N=1..4,H=height/2,W=width/2,C=32,K=64,R=3,S=3,stride=2,pad=1,"
                        "epilogue=bias+relu;height={224,256},width={224,256}) x1; "
                        "conv2d(N=1..4,H=(height-2)/4+1,W=(width-2)/4+1,C=64,K=128,R=1,S=1,"
                        "stride=1,pad=0,epilogue=bias;height={224,256},width={224,256}) x1; "
                        "dense(M=1..4,N=10,K=128,epilogue=bias) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Relu"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "MaxPool"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "AveragePool"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GlobalAveragePool"), 1);
    CU_ASSERT_EQUAL(imp->ntuned, 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"height\": {\"values\": [224, 256]}"));
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* ---- Conv as conv2d ----------------------------------------------------------- */

/* The reason of the untuned entry "Conv" whose reason starts with prefix. */
static const dt_ox_untuned *untuned_why(const dt_ox_import *imp, const char *what,
                                        const char *prefix)
{
    for (int i = 0; i < imp->nuntuned; i++)
        if (!strcmp(imp->untuned[i].what, what) &&
            !strncmp(imp->untuned[i].why, prefix, strlen(prefix)))
            return &imp->untuned[i];
    return NULL;
}

/* conv-dynamic.onnx: Conv + bias input + Relu on [batch, 3, height, width]
 * with the three dims variables; a SAME_LOWER Conv whose bias is an Add of
 * [32, 1, 1] after it (along the channels), then Relu; a 1x1 (its dilation
 * dropped); the strided SAME_UPPER Conv's padding depends on the size:
 * listed. */
static void test_conv_dynamic(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "conv-dynamic.onnx",
                              VARS("batch=1..4", "height=32..64", "width={48,64}"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..4,H=32..64,W={48,64},C=3,K=16,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1..4,H=(height+1)/2,W=(width+1)/2,C=32,K=32,R=3,S=3,stride=1,"
                        "pad=1,epilogue=bias+relu;height=32..64,width={48,64}) x1; "
                        "conv2d(N=1..4,H=(height+1)/2,W=(width+1)/2,C=32,K=8,R=1,S=1,stride=1,"
                        "pad=0;height=32..64,width={48,64}) x1");
    const dt_ox_untuned *u = untuned(imp, "Conv");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_EQUAL(u->nodes, 1);
    CU_ASSERT_STRING_EQUAL(u->why, "Conv with auto_pad=SAME_UPPER: its padding depends on the "
                                   "symbolic input size");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Relu"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Add"), 0);
    CU_ASSERT_EQUAL(imp->ntuned, 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"op\": \"conv2d\", \"N\": \"batch\", "
                                                  "\"H\": \"height\", \"W\": \"width\""));
    dt_model_free(m);
    dt_ox_import_free(imp);
    /* a fixed size: the strided SAME_UPPER 3x3 over 33x32 pads 1 on each side of
     * the odd axis but 0/1 on the even one: still listed; over 33x33 pad 1 */
    m = import_file(ONNX_DIR "conv-dynamic.onnx", VARS("batch=1", "height=33", "width=33"),
                    &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1,H=33,W=33,C=3,K=16,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1,H=33,W=33,C=16,K=32,R=3,S=3,stride=2,pad=1) x1; "
                        "conv2d(N=1,H=17,W=17,C=32,K=32,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1,H=17,W=17,C=32,K=8,R=1,S=1,stride=1,pad=0) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0);
    dt_model_free(m);
    dt_ox_import_free(imp);
    /* over 32x32 the strided SAME_UPPER pads 0 before and 1 after each axis:
     * pad_b and pad_r */
    m = import_file(ONNX_DIR "conv-dynamic.onnx", VARS("batch=1", "height=32", "width=32"),
                    &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1,H=32,W=32,C=3,K=16,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1,H=32,W=32,C=16,K=32,R=3,S=3,stride=2,pad=0,pad_b=1,pad_r=1) x1; "
                        "conv2d(N=1,H=16,W=16,C=32,K=32,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1,H=16,W=16,C=32,K=8,R=1,S=1,stride=1,pad=0) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0);
    CU_ASSERT_EQUAL(imp->coverage.nleft, 0);
    CU_ASSERT_DOUBLE_EQUAL(imp->coverage.tuned_gflop[0], imp->coverage.gflop[0], 1e-12);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* conv-stem.onnx: the 7x7 stride-2 pad-3 stem, a 1x1 and the depthwise 3x3
 * (group=256: groups=256, C = 256) as conv2d, the asymmetrically padded 2x2
 * with pad_b and pad_r, the 1x1 of strides [1,2] with stride_w; the 3-D
 * Conv listed with its reason, never fatal. */
static void test_conv_stem(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "conv-stem.onnx", VARS("batch=1..8"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..8,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1..8,H=56,W=56,C=64,K=256,R=1,S=1,stride=1,pad=0,"
                        "epilogue=bias) x1; "
                        "conv2d(N=1..8,H=56,W=56,C=256,K=256,R=3,S=3,stride=1,pad=1,groups=256,"
                        "epilogue=bias) x1; "
                        "conv2d(N=1..8,H=56,W=56,C=256,K=256,R=2,S=2,stride=2,pad=0,"
                        "epilogue=bias,pad_b=1,pad_r=1) x1; "
                        "conv2d(N=1..8,H=28,W=28,C=256,K=256,R=1,S=1,stride=1,pad=0,"
                        "epilogue=bias,stride_w=2) x1");
    static const char *const why[] = {
        "Conv over 3 spatial axes (conv2d is 2-D; a 1-D Conv is one with H=1)",
    };
    for (size_t k = 0; k < sizeof why / sizeof why[0]; k++) {
        const dt_ox_untuned *u = untuned_why(imp, "Conv", why[k]);
        CU_ASSERT_PTR_NOT_NULL(u);
        if (u) {
            CU_ASSERT_STRING_EQUAL(u->why, why[k]);
            CU_ASSERT_EQUAL(u->nodes, 1);
        }
    }
    CU_ASSERT_EQUAL(untuned_nodes(imp, "MaxPool"), 1);
    CU_ASSERT_EQUAL(imp->ntuned, 6);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* conv1d.onnx: Conv1d as conv2d with H = R = 1 (frames the variable of W),
 * the erf GELU fused; the padded Conv1d (pads=[1,1] over frames-2) with
 * pad_w=1 (its height unpadded), nothing left. */
static void test_conv1d(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "conv1d.onnx", VARS("batch=1..2", "frames=100..200"),
                              &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..2,H=1,W=100..200,C=80,K=256,R=1,S=3,stride=1,pad=0,"
                        "epilogue=bias+relu) x1; "
                        "conv2d(N=1..2,H=1,W=frames-2,C=256,K=256,R=1,S=1,stride=1,pad=0,"
                        "epilogue=bias+gelu;frames=100..200) x1; "
                        "conv2d(N=1..2,H=1,W=frames-2,C=256,K=256,R=1,S=3,stride=1,pad=0,"
                        "epilogue=bias,pad_w=1;frames=100..200) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0);
    CU_ASSERT_EQUAL(imp->coverage.nleft, 0);
    CU_ASSERT_DOUBLE_EQUAL(imp->coverage.tuned_gflop[0], imp->coverage.gflop[0], 1e-12);
    CU_ASSERT_EQUAL(imp->nwarnings, 0);
    dt_model_free(m);
    dt_ox_import_free(imp);
    /* frames 1 and 2 leave no output of the 3-tap window: the import keeps
     * frames=3..200 and says why (the error over the whole domain quoted) */
    m = import_file(ONNX_DIR "conv1d.onnx", VARS("batch=1..2", "frames=1..200"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_FATAL(imp->nwarnings >= 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->warnings[0], "the model's dims hold only for frames=3..200 "
                                                    "of the given frames=1..200"));
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->warnings[0], "the output width is 0"));
    CU_ASSERT_EQUAL(m->nworkloads, 3);
    dt_model_free(m);
    dt_ox_import_free(imp);
    /* a failure no cut of one variable removes stays the error: a 3-tap
     * window over frames=1..2 */
    dt_err e;
    imp = NULL;
    CU_ASSERT_EQUAL(dt_ox_import_file(ONNX_DIR "conv1d.onnx", NULL,
                                      VARS("batch=1..2", "frames=1..2"), &imp, &e),
                    DT_EINVAL);
    CU_ASSERT_PTR_NULL(imp);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the output width is 0"));
}

/* ---- errors ----------------------------------------------------------------- */

static void test_var_errors(void)
{
    const char *bert = ONNX_DIR "bert-base.onnx";
    /* the graph's variables are listed when one is missing or unknown */
    expect_error(bert, VARS("seq=1..128"), DT_EINVAL, PARTS("bert-base.onnx", "batch"));
    expect_error(bert, VARS("batch=1", "seq=1..128", "len=1..8"), DT_EINVAL,
                 PARTS("len", "batch, seq"));
    /* each flag's problem names the flag */
    expect_error(bert, VARS("batch=1", "seq=128..1"), DT_EINVAL,
                 PARTS("--var 'seq=128..1'", "empty range"));
    expect_error(bert, VARS("batch=1", "seq=1..x"), DT_EINVAL, PARTS("--var 'seq=1..x'"));
    expect_error(bert, VARS("batch=1", "seq=1..8", "seq=1..16"), DT_EINVAL,
                 PARTS("--var 'seq=1..16'", "already given"));
    expect_error(bert, VARS("batch=1", "9seq=1..8"), DT_EINVAL,
                 PARTS("--var '9seq=1..8'", "not a variable name"));
    expect_error(bert, VARS("batch=1", "seq"), DT_EINVAL, PARTS("--var 'seq'", "NAME=DOMAIN"));
    /* a dim below 1 names the node that makes it */
    expect_error(ONNX_DIR "cnn-small.onnx", VARS("batch=0", "height=224", "width=224"),
                 DT_EINVAL, PARTS("cnn-small.onnx: node '/conv1/Conv'",
                                "dim N = 0 is 0 at batch=0,height=224,width=224; every dim "
                                "must be >= 1"));
    /* ... and over batch=0..4, the part it holds for is imported, saying so */
    dt_ox_import *part = NULL;
    dt_model *pm = import_file(ONNX_DIR "cnn-small.onnx",
                               VARS("batch=0..4", "height=224", "width=224"), &part);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pm);
    CU_ASSERT_FATAL(part->nwarnings >= 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(part->warnings[0], "hold only for batch=1..4 of the given "
                                                     "batch=0..4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(part->warnings[0], "dim N = batch is 0 at batch=0"));
    dt_model_free(pm);
    dt_ox_import_free(part);
    /* a file that does not exist */
    dt_err e;
    dt_ox_import *imp = NULL;
    CU_ASSERT(dt_ox_import_file(ONNX_DIR "no-such-model.onnx", NULL, NULL, 0, &imp, &e) < 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no-such-model.onnx"));
}

/* Each bad file is refused as bad input, naming what is wrong. */
static void test_bad_files(void)
{
    static const struct {
        const char *file;
        const char *vars[2];
        int nvars;
        const char *want;
    } bad[] = {
        {"bad-cycle.onnx", {"batch=1..4"}, 1, "cycle"},
        {"bad-dangling.onnx", {"batch=1..4"}, 1, "dense.bias"},
        {"bad-opset10.onnx", {"batch=1..4"}, 1, "opset 10"},
        {"bad-huge-dims.onnx", {"batch=1..4"}, 1, "huge.weight"},
        {"bad-unnamed-dim.onnx", {"batch=1..4"}, 1, "input_d0"},
        {"bad-truncated.onnx", {"batch=1"}, 1, "bad-truncated.onnx"},
        {"bad-not-onnx.onnx", {"batch=1"}, 1, "not an ONNX model"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s%s", ONNX_DIR, bad[i].file);
        dt_err e;
        dt_ox_import *imp = NULL;
        int rc = dt_ox_import_file(path, NULL, bad[i].vars, bad[i].nvars, &imp, &e);
        CU_ASSERT_EQUAL(rc, DT_EINVAL);
        CU_ASSERT_PTR_NULL(imp);
        if (rc && (!strstr(e.msg, bad[i].want) || !strstr(e.msg, bad[i].file))) {
            fprintf(stderr, "\n%s: message '%s' lacks '%s'\n", bad[i].file, e.msg, bad[i].want);
            CU_FAIL("message");
        }
    }
    /* the unnamed dim is a variable of a generated name: given, it imports */
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "bad-unnamed-dim.onnx", VARS("input_d0=1..128"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=1..128,N=768,K=768,epilogue=bias) x1");
    CU_ASSERT_STRING_EQUAL(imp->var_names[0], "input_d0");
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* ---- graphs built node by node --------------------------------------------- */

#define TG_MAX 64

static char *dup(const char *s)
{
    char *d = strdup(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    return d;
}

static void *zalloc(size_t n)
{
    void *p = calloc(1, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

static dt_ox_graph *tg_new(void)
{
    dt_ox_graph *g = zalloc(sizeof *g);
    g->source = dup("t.onnx");
    g->producer = dup("");
    g->graph_name = dup("g");
    g->ir_version = 8;
    g->opset = 14;
    g->inputs = zalloc(TG_MAX * sizeof *g->inputs);
    g->outputs = zalloc(TG_MAX * sizeof *g->outputs);
    g->inits = zalloc(TG_MAX * sizeof *g->inits);
    g->nodes = zalloc(TG_MAX * sizeof *g->nodes);
    return g;
}

/* dims: comma-separated, each an integer (a dim_value) or a dim_param. */
static void tg_input(dt_ox_graph *g, const char *name, int elem, const char *dims)
{
    dt_ox_value *v = &g->inputs[g->ninputs++];
    v->name = dup(name);
    v->elem_type = elem;
    v->dims = zalloc(DT_OX_MAX_RANK * sizeof *v->dims);
    char *copy = dup(dims), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        dt_ox_dim *d = &v->dims[v->rank++];
        if (t[0] >= '0' && t[0] <= '9')
            d->value = strtoll(t, NULL, 10);
        else
            d->param = dup(t);
    }
    free(copy);
}

static void tg_output(dt_ox_graph *g, const char *name)
{
    dt_ox_value *v = &g->outputs[g->noutputs++];
    v->name = dup(name);
    v->rank = -1;
}

/* An initializer of rank dims (dims[0..rank)), no values. */
static dt_ox_tensor *tg_tensor_dims(dt_ox_graph *g, const char *name, int elem, int rank,
                                    const int64_t *dims)
{
    dt_ox_tensor *t = &g->inits[g->ninits++];
    t->name = dup(name);
    t->elem_type = elem;
    t->rank = rank;
    t->dims = zalloc((size_t)(rank ? rank : 1) * sizeof *t->dims);
    t->numel = 1;
    for (int i = 0; i < rank; i++) {
        t->dims[i] = dims[i];
        t->numel *= t->dims[i];
    }
    return t;
}

/* The same with the dims as arguments: each must be an int64_t. */
static dt_ox_tensor *tg_tensor(dt_ox_graph *g, const char *name, int elem, int rank, ...)
{
    int64_t dims[DT_OX_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank && i < DT_OX_MAX_RANK; i++)
        dims[i] = va_arg(ap, int64_t);
    va_end(ap);
    return tg_tensor_dims(g, name, elem, rank, dims);
}

/* A weight: dims (any integer expressions: converted through an int64_t
 * array, never read as variadic int64_t), no values. */
#define tg_weight(g, name, elem, ...)                                                            \
    tg_tensor_dims(g, name, elem, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                   (const int64_t[]){__VA_ARGS__})

/* A float scalar with its value. */
static void tg_scalar(dt_ox_graph *g, const char *name, double v)
{
    dt_ox_tensor *t = tg_tensor(g, name, DT_OX_FLOAT, 0);
    t->has_values = 1;
    t->fvals = zalloc(sizeof *t->fvals);
    t->fvals[0] = v;
}

/* An integer scalar (a zero point) with its value. */
static void tg_iscalar(dt_ox_graph *g, const char *name, int elem, int64_t v)
{
    dt_ox_tensor *t = tg_tensor(g, name, elem, 0);
    t->has_values = 1;
    t->ivals = zalloc(sizeof *t->ivals);
    t->ivals[0] = v;
}

static char **split(const char *list, int *n)
{
    char **out = zalloc(DT_OX_MAX_IO * sizeof *out);
    *n = 0;
    if (!list)
        return out;
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        out[*n] = zalloc(len + 1);
        memcpy(out[(*n)++], p, len);
        if (!c)
            return out;
        p = c + 1;
    }
}

/* A node; inputs and outputs comma-separated ("" for an omitted one). */
static dt_ox_node *tg_node(dt_ox_graph *g, const char *op, const char *name, const char *in,
                           const char *out)
{
    dt_ox_node *n = &g->nodes[g->nnodes++];
    n->name = dup(name);
    n->op_type = dup(op);
    n->domain = dup("");
    n->inputs = split(in, &n->ninputs);
    n->outputs = split(out, &n->noutputs);
    n->attrs = zalloc(8 * sizeof *n->attrs);
    return n;
}

static dt_ox_attr *tg_attr(dt_ox_node *n, const char *name, dt_ox_attr_type type)
{
    dt_ox_attr *a = &n->attrs[n->nattrs++];
    a->name = dup(name);
    a->type = type;
    return a;
}

static void tg_attr_i(dt_ox_node *n, const char *name, int64_t v)
{
    tg_attr(n, name, DT_OX_ATTR_INT)->i = v;
}

static void tg_attr_f(dt_ox_node *n, const char *name, double v)
{
    tg_attr(n, name, DT_OX_ATTR_FLOAT)->f = v;
}

static void tg_attr_ints(dt_ox_node *n, const char *name, int cnt, const int64_t *v)
{
    dt_ox_attr *a = tg_attr(n, name, DT_OX_ATTR_INTS);
    a->n = cnt;
    a->ints = zalloc((size_t)cnt * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)cnt * sizeof *v);
}

/* Imports g (freed here) with vars; NULL and the message in e on failure. */
static dt_model *tg_import(dt_ox_graph *g, const char *const *vars, int nvars,
                           dt_ox_import **imp, dt_err *e)
{
    *imp = NULL;
    int rc = dt_ox_import_graph(g, "t", vars, nvars, imp, e);
    dt_ox_graph_free(g);
    if (rc)
        return NULL;
    check_accounting(*imp);
    return spec_model(*imp);
}

/* x [seq, 768] · W [768, N] + b, the bias Add's output "yb": the start of
 * the GELU graphs below. */
static void tg_dense_bias(dt_ox_graph *g, int64_t n, int bias_first)
{
    tg_input(g, "x", DT_OX_FLOAT, "seq,768");
    tg_weight(g, "w", DT_OX_FLOAT, 768, n);
    tg_weight(g, "b", DT_OX_FLOAT, n);
    tg_node(g, "MatMul", "mm", "x,w", "y");
    tg_node(g, "Add", "bias", bias_first ? "b,y" : "y,b", "yb");
}

/* The three associations of 0.5·x·(1 + erf(x/√2)), x/√2 as a Div or a Mul
 * by 1/√2, constants a little off (within 1e-5): all bias+gelu. */
static void test_gelu_variants(void)
{
    for (int variant = 0; variant < 6; variant++) {
        dt_ox_graph *g = tg_new();
        tg_dense_bias(g, 3072, variant & 1);
        tg_scalar(g, "sqrt2", 1.41421);
        tg_scalar(g, "rsqrt2", 0.7071068);
        tg_scalar(g, "one", 1.0);
        tg_scalar(g, "half", 0.5000001);
        if (variant % 2)
            tg_node(g, "Mul", "scale", "rsqrt2,yb", "d");
        else
            tg_node(g, "Div", "scale", "yb,sqrt2", "d");
        tg_node(g, "Erf", "erf", "d", "e");
        tg_node(g, "Add", "one_plus", "one,e", "a");
        switch (variant / 2) {
        case 0: /* (x·a)·0.5 */
            tg_node(g, "Mul", "p", "a,yb", "p");
            tg_node(g, "Mul", "q", "p,half", "out");
            break;
        case 1: /* (x·0.5)·a */
            tg_node(g, "Mul", "p", "half,yb", "p");
            tg_node(g, "Mul", "q", "a,p", "out");
            break;
        default: /* x·(a·0.5) */
            tg_node(g, "Mul", "t", "a,half", "t");
            tg_node(g, "Mul", "p", "yb,t", "out");
        }
        tg_output(g, "out");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        expect_workloads(m, "dense(M=1..64,N=3072,K=768,epilogue=bias+gelu) x1");
        CU_ASSERT_EQUAL(imp->ntuned, 7);
        CU_ASSERT_EQUAL(imp->nuntuned, 0);
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* Not GELU, or not fusable: a constant that is off, a fused intermediate
 * with another reader or that is a graph output, the tanh form. */
static void test_gelu_not_fused(void)
{
    for (int variant = 0; variant < 4; variant++) {
        dt_ox_graph *g = tg_new();
        tg_dense_bias(g, 3072, 0);
        tg_scalar(g, "c", variant == 0 ? 1.5 : 1.4142135);
        tg_scalar(g, "one", 1.0);
        tg_scalar(g, "half", 0.5);
        if (variant == 3) { /* tanh: Tanh where Erf would be */
            tg_node(g, "Div", "scale", "yb,c", "d");
            tg_node(g, "Tanh", "erf", "d", "e");
        } else {
            tg_node(g, "Div", "scale", "yb,c", "d");
            tg_node(g, "Erf", "erf", "d", "e");
        }
        tg_node(g, "Add", "one_plus", "e,one", "a");
        tg_node(g, "Mul", "p", "yb,a", "p");
        tg_node(g, "Mul", "q", "p,half", "out");
        tg_output(g, "out");
        if (variant == 1) { /* the Erf's input is read elsewhere too */
            tg_node(g, "Relu", "other", "d", "r");
            tg_output(g, "r");
        }
        if (variant == 2) /* 1 + erf is a graph output */
            tg_output(g, "a");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        expect_workloads(m, "dense(M=1..64,N=3072,K=768,epilogue=bias) x1");
        CU_ASSERT_EQUAL(imp->ntuned, 2);
        CU_ASSERT_EQUAL(untuned_nodes(imp, variant == 3 ? "Tanh" : "Erf"), 1);
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* Relu and the Gelu ops; no epilogue when the result has another reader;
 * MatMul straight into Relu; ReLU6 as Clip(0, 6) (constant inputs, or
 * attributes as before opset 11), HardSwish as the op or as
 * x·HardSigmoid(x) with alpha 1/6 — and the clamps and slopes that are
 * neither, not fused. */
static void test_other_epilogues(void)
{
    static const struct {
        int variant;
        const char *want;
    } cases[] = {
        {0, "dense(M=1..64,N=512,K=768,epilogue=bias+relu) x1"},
        {1, "dense(M=1..64,N=512,K=768,epilogue=bias+gelu) x1"},
        {2, "dense(M=1..64,N=512,K=768,epilogue=bias) x1"}, /* Gelu approximate=tanh */
        {3, "dense(M=1..64,N=512,K=768) x1"},               /* y read twice: nothing fuses */
        {4, "dense(M=1..64,N=512,K=768,epilogue=relu) x1"},
        {5, "dense(M=1..64,N=512,K=768,epilogue=bias+gelu) x1"}, /* com.microsoft BiasGelu */
        {6, "dense(M=1..64,N=512,K=768,epilogue=bias+relu6) x1"},     /* Clip(yb, 0, 6) */
        {7, "dense(M=1..64,N=512,K=768,epilogue=relu6) x1"},          /* Clip min/max attrs */
        {8, "dense(M=1..64,N=512,K=768,epilogue=bias) x1"},           /* Clip(yb, 0, 5) */
        {9, "dense(M=1..64,N=512,K=768,epilogue=bias+hardswish) x1"}, /* HardSwish */
        {10, "dense(M=1..64,N=512,K=768,epilogue=bias+hardswish) x1"}, /* yb·HardSigmoid */
        {11, "dense(M=1..64,N=512,K=768,epilogue=bias) x1"}, /* HardSigmoid alpha 0.2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "seq,768");
        tg_weight(g, "w", DT_OX_FLOAT, 768, 512);
        tg_weight(g, "b", DT_OX_FLOAT, 1, 512);
        tg_node(g, "MatMul", "mm", "x,w", "y");
        switch (cases[i].variant) {
        case 0:
            tg_node(g, "Add", "bias", "y,b", "yb");
            tg_node(g, "Relu", "act", "yb", "out");
            break;
        case 1:
        case 2:
            tg_node(g, "Add", "bias", "y,b", "yb");
            g->opset = 18; /* the reader takes opsets to 18; Gelu is read by name */
            {
                dt_ox_node *n = tg_node(g, "Gelu", "act", "yb", "out");
                if (cases[i].variant == 2) {
                    dt_ox_attr *a = tg_attr(n, "approximate", DT_OX_ATTR_STRING);
                    a->s = dup("tanh");
                }
            }
            break;
        case 3:
            tg_node(g, "Add", "bias", "y,b", "out");
            tg_node(g, "Relu", "act", "y", "out2");
            tg_output(g, "out2");
            break;
        case 4:
            tg_node(g, "Relu", "act", "y", "out");
            break;
        case 5: {
            dt_ox_node *n = tg_node(g, "BiasGelu", "act", "y,b", "out");
            free(n->domain);
            n->domain = dup("com.microsoft");
            break;
        }
        case 6:
        case 8:
            tg_node(g, "Add", "bias", "y,b", "yb");
            tg_scalar(g, "lo", 0.0);
            tg_scalar(g, "hi", cases[i].variant == 6 ? 6.0 : 5.0);
            tg_node(g, "Clip", "act", "yb,lo,hi", "out");
            break;
        case 7: {
            dt_ox_node *n = tg_node(g, "Clip", "act", "y", "out");
            tg_attr_f(n, "min", 0.0);
            tg_attr_f(n, "max", 6.0);
            break;
        }
        case 9:
            tg_node(g, "Add", "bias", "y,b", "yb");
            g->opset = 18;
            tg_node(g, "HardSwish", "act", "yb", "out");
            break;
        case 10:
        case 11: {
            tg_node(g, "Add", "bias", "y,b", "yb");
            dt_ox_node *n = tg_node(g, "HardSigmoid", "hsig", "yb", "hs");
            if (cases[i].variant == 10)
                tg_attr_f(n, "alpha", 1.0 / 6.0);
            tg_node(g, "Mul", "act", "hs,yb", "out");
            break;
        }
        }
        tg_output(g, "out");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
        if (!m)
            fprintf(stderr, "\ncase %d: %s\n", cases[i].variant, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        expect_workloads(m, cases[i].want);
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* Gemm: transB=1 with C as the bias; what dtune's ops cannot express is
 * listed with the reason. */
static void test_gemm(void)
{
    static const struct {
        int trans_a;
        double alpha;
        const char *want, *why;
    } cases[] = {
        {0, 1.0, "dense(M=1..16,N=10,K=128,epilogue=bias+relu) x1", NULL},
        {0, 2.0, NULL, "alpha=2"},
        {1, 1.0, NULL, "transA=1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, cases[i].trans_a ? "128,n" : "n,128");
        tg_weight(g, "w", DT_OX_FLOAT, 10, 128);
        tg_weight(g, "b", DT_OX_FLOAT, 10);
        tg_weight(g, "w2", DT_OX_FLOAT, 10, 10);
        dt_ox_node *n = tg_node(g, "Gemm", "fc", "x,w,b", "y");
        tg_attr_i(n, "transB", 1);
        tg_attr_i(n, "transA", cases[i].trans_a);
        tg_attr_f(n, "alpha", cases[i].alpha);
        tg_node(g, "Relu", "act", "y", "r");
        /* a second MatMul keeps the spec non-empty */
        tg_node(g, "MatMul", "mm2", "r,w2", "out");
        tg_output(g, "out");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("n=1..16"), &imp, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (cases[i].want) {
            expect_workloads(m, "dense(M=1..16,N=10,K=128,epilogue=bias+relu) x1; "
                                "dense(M=1..16,N=10,K=10) x1");
        } else {
            const dt_ox_untuned *u = untuned(imp, "Gemm");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            CU_ASSERT_PTR_NOT_NULL(strstr(u->why, cases[i].why));
            CU_ASSERT_EQUAL(untuned_nodes(imp, "Relu"), 1);
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* QDQ: QuantizeLinear/DequantizeLinear'd u8 activations times a
 * DequantizeLinear'd s8 weight with per-channel scales is int8; a float
 * activation times it is w8a32; scales along K are not dtune's. */
static void test_qdq(void)
{
    for (int variant = 0; variant < 3; variant++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "seq,768");
        tg_weight(g, "wq", DT_OX_INT8, 768, 256);
        tg_weight(g, "ws", DT_OX_FLOAT, variant == 2 ? 768 : 256);
        tg_iscalar(g, "wzp", DT_OX_INT8, 0);
        tg_scalar(g, "xs", 0.02);
        tg_iscalar(g, "xzp", DT_OX_UINT8, 128);
        tg_weight(g, "b", DT_OX_FLOAT, 256);
        dt_ox_node *wdq = tg_node(g, "DequantizeLinear", "wdq", "wq,ws,wzp", "w");
        tg_attr_i(wdq, "axis", variant == 2 ? 0 : 1);
        const char *a = "x";
        if (variant != 1) {
            tg_node(g, "QuantizeLinear", "xq", "x,xs,xzp", "xq");
            tg_node(g, "DequantizeLinear", "xdq", "xq,xs,xzp", "xd");
            a = "xd";
        }
        char in[32];
        snprintf(in, sizeof in, "%s,w", a);
        tg_node(g, "MatMul", "mm", in, "y");
        tg_node(g, "Add", "bias", "y,b", "out");
        tg_output(g, "out");
        if (variant == 2) { /* one more op, so the spec has one */
            tg_weight(g, "w2", DT_OX_FLOAT, 256, 8);
            tg_node(g, "MatMul", "mm2", "out,w2", "out2");
            tg_output(g, "out2");
        }
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
        if (!m)
            fprintf(stderr, "\nqdq %d: %s\n", variant, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (variant == 0) {
            expect_workloads(m, "dense(M=1..64,N=256,K=768,epilogue=bias,dtype=int8) x1");
            CU_ASSERT_EQUAL(imp->nuntuned, 0); /* Q, both DQs, MatMul, Add */
            CU_ASSERT_EQUAL(imp->ntuned, 5);
        } else if (variant == 1) {
            expect_workloads(m, "dense(M=1..64,N=256,K=768,epilogue=bias,dtype=w8a32) x1");
            CU_ASSERT_EQUAL(imp->nuntuned, 0);
        } else {
            expect_workloads(m, "dense(M=1..64,N=8,K=256) x1");
            const dt_ox_untuned *u = untuned(imp, "MatMul");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "along K"));
            CU_ASSERT_EQUAL(untuned_nodes(imp, "QuantizeLinear"), 1);
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* MatMulInteger variants: a constant scale, u8 weights (not dtune's int8),
 * no dequantization after it. */
static void test_matmul_integer(void)
{
    for (int variant = 0; variant < 3; variant++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "seq,768");
        tg_weight(g, "wq", variant == 1 ? DT_OX_UINT8 : DT_OX_INT8, 768, 256);
        tg_weight(g, "s", DT_OX_FLOAT, 256);
        tg_weight(g, "w2", DT_OX_FLOAT, 768, 8);
        tg_node(g, "DynamicQuantizeLinear", "dql", "x", "xq,xs,xzp");
        tg_node(g, "MatMulInteger", "mmi", "xq,wq,xzp", "yi");
        if (variant == 2) {
            tg_output(g, "yi");
        } else {
            dt_ox_node *c = tg_node(g, "Cast", "cast", "yi", "yf");
            tg_attr_i(c, "to", DT_OX_FLOAT);
            tg_node(g, "Mul", "deq", "s,yf", "out");
            tg_output(g, "out");
        }
        tg_node(g, "MatMul", "mm2", "x,w2", "out2");
        tg_output(g, "out2");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
        if (!m)
            fprintf(stderr, "\nmmi %d: %s\n", variant, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (variant == 0) {
            expect_workloads(m, "dense(M=1..64,N=256,K=768,dtype=int8) x1; "
                                "dense(M=1..64,N=8,K=768) x1");
            CU_ASSERT_EQUAL(imp->nuntuned, 0);
        } else {
            expect_workloads(m, "dense(M=1..64,N=8,K=768) x1");
            const dt_ox_untuned *u = untuned(imp, "MatMulInteger");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            CU_ASSERT_PTR_NOT_NULL(strstr(u->why, variant == 1 ? "uint8 weights" : "Cast"));
            /* the quantization of an untuned op stays listed */
            CU_ASSERT_EQUAL(untuned_nodes(imp, "DynamicQuantizeLinear"), 1);
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* One DynamicQuantizeLinear and one scale product shared by two
 * MatMulIntegers (as for Q, K and V of one input): both int8, the shared
 * nodes covered once their readers are. */
static void test_shared_quantization(void)
{
    dt_ox_graph *g = tg_new();
    tg_input(g, "x", DT_OX_FLOAT, "seq,768");
    tg_weight(g, "wa", DT_OX_INT8, 768, 256);
    tg_weight(g, "wb", DT_OX_INT8, 768, 256);
    tg_scalar(g, "ws", 0.001);
    tg_node(g, "DynamicQuantizeLinear", "dql", "x", "xq,xs,xzp");
    tg_node(g, "Mul", "scales", "xs,ws", "s");
    const char *outs[2] = {"outa", "outb"};
    for (int k = 0; k < 2; k++) {
        char in[32], yi[8], yf[8], name[16];
        snprintf(in, sizeof in, "xq,%s,xzp", k ? "wb" : "wa");
        snprintf(yi, sizeof yi, "yi%d", k);
        snprintf(yf, sizeof yf, "yf%d", k);
        snprintf(name, sizeof name, "mmi%d", k);
        tg_node(g, "MatMulInteger", name, in, yi);
        snprintf(name, sizeof name, "cast%d", k);
        tg_attr_i(tg_node(g, "Cast", name, yi, yf), "to", DT_OX_FLOAT);
        snprintf(in, sizeof in, "%s,s", yf);
        snprintf(name, sizeof name, "deq%d", k);
        tg_node(g, "Mul", name, in, outs[k]);
        tg_output(g, outs[k]);
    }
    dt_err e;
    dt_ox_import *imp;
    dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
    if (!m)
        fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=1..64,N=256,K=768,dtype=int8) x2");
    CU_ASSERT_EQUAL(imp->nuntuned, 0);
    CU_ASSERT_EQUAL(imp->ntuned, 8);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* More dynamic dims than a model has variables. */
static void test_too_many_vars(void)
{
    dt_ox_graph *g = tg_new();
    tg_input(g, "x", DT_OX_FLOAT, "a,b,c,d,e,f,g,h,i,768");
    tg_weight(g, "w", DT_OX_FLOAT, 768, 8);
    tg_node(g, "MatMul", "mm", "x,w", "y");
    tg_output(g, "y");
    dt_err e;
    dt_ox_import *imp;
    CU_ASSERT_PTR_NULL(tg_import(g, VARS("a=1"), &imp, &e));
    CU_ASSERT_EQUAL(e.code, DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "9 dynamic dims (a, b, c, d, e, f, g, h, i)"));
}

/* batch_matmul: rank 3, NT through a Transpose of the last two axes, NN
 * through one that is not; broadcast batch dims are listed. */
static void test_batch_matmul(void)
{
    static const struct {
        int64_t perm[3];
        const char *bdims, *want;
    } cases[] = {
        {{0, 2, 1}, "h,s,64", "batch_matmul(B=1..4,M=s,N=s,K=64,layout=NT;s=1..32) x1"},
        {{0, 1, 2}, "h,64,s", "batch_matmul(B=1..4,M=s,N=s,K=64,layout=NN;s=1..32) x1"},
        {{0, 2, 1}, "1,s,64", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "a", DT_OX_FLOAT, "h,s,64");
        tg_input(g, "b", DT_OX_FLOAT, cases[i].bdims);
        tg_weight(g, "w", DT_OX_FLOAT, 64, 16);
        dt_ox_node *t = tg_node(g, "Transpose", "t", "b", "bt");
        tg_attr_ints(t, "perm", 3, cases[i].perm);
        tg_node(g, "MatMul", "bmm", "a,bt", "out");
        tg_output(g, "out");
        tg_node(g, "MatMul", "mm", "a,w", "out2");
        tg_output(g, "out2");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("h=1..4", "s=1..32"), &imp, &e);
        if (!m)
            fprintf(stderr, "\nbmm %zu: %s\n", i, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (cases[i].want) {
            char *got = summary(m);
            CU_ASSERT_PTR_NOT_NULL(strstr(got, cases[i].want));
            free(got);
            /* either way the Transpose stays listed: data movement */
            CU_ASSERT_EQUAL(untuned_nodes(imp, "Transpose"), 1);
        } else {
            const dt_ox_untuned *u = untuned(imp, "MatMul");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "broadcast"));
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* Node names become unique spec op names; a graph with nothing to tune is
 * refused, listing what it has. */
static void test_names_and_nothing(void)
{
    dt_ox_graph *g = tg_new();
    tg_input(g, "x", DT_OX_FLOAT, "seq,768");
    tg_weight(g, "w1", DT_OX_FLOAT, 768, 768);
    tg_weight(g, "w2", DT_OX_FLOAT, 768, 512);
    tg_node(g, "MatMul", "same", "x,w1", "y1");
    tg_node(g, "MatMul", "same", "y1,w2", "y2");
    tg_node(g, "MatMul", "", "y1,w1", "y3");
    tg_output(g, "y2");
    tg_output(g, "y3");
    dt_err e;
    dt_ox_import *imp;
    dt_model *m = tg_import(g, VARS("seq={1,8,64}"), &imp, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M={1,8,64},N=768,K=768) x2; dense(M={1,8,64},N=512,K=768) x1");
    CU_ASSERT_STRING_EQUAL(m->workloads[0].ops[0], "same");
    CU_ASSERT_STRING_EQUAL(m->workloads[1].ops[0], "same~2");
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"seq\": {\"values\": [1, 8, 64]}"));
    dt_model_free(m);
    dt_ox_import_free(imp);

    g = tg_new();
    tg_input(g, "x", DT_OX_FLOAT, "seq,768");
    tg_node(g, "Softmax", "sm", "x", "out");
    tg_output(g, "out");
    CU_ASSERT_PTR_NULL(tg_import(g, VARS("seq=1..8"), &imp, &e));
    CU_ASSERT_EQUAL(e.code, DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "nothing to tune"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "Softmax"));
}

/* ---- issue 30: patterns and labels ------------------------------------------- */

/* torch's weight-only int8 (w8a32-torch.onnx): Mul(Cast(int8 W), scale)
 * per channel [1, N], per tensor [] with the scale first, and [N, 1] on an
 * [N, K] weight transposed after: three w8a32 denses, every node tuned. */
static void test_w8a32_torch_file(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "w8a32-torch.onnx", VARS("batch=1..2", "seq=1..8"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=batch*seq,N=1024,K=256,epilogue=bias+relu,dtype=w8a32;"
                        "batch=1..2,seq=1..8) x1; "
                        "dense(M=batch*seq,N=256,K=1024,epilogue=bias,dtype=w8a32;"
                        "batch=1..2,seq=1..8) x1; "
                        "dense(M=batch*seq,N=128,K=256,dtype=w8a32;batch=1..2,seq=1..8) x1");
    CU_ASSERT_EQUAL(imp->nuntuned, 0); /* the Casts, Muls and the Transpose are in the ops */
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* Mul(Cast(W), scale) variants: a [1] scale, Gemm transB=1 with [N, 1]
 * scales, a Transpose before the Cast; not dtune's: scales along K, uint8
 * weights, a Cast of float weights (a scaled float weight: f32). */
static void test_w8a32_cast_variants(void)
{
    static const struct {
        int wtype;          /* the weight's element type */
        int nk;             /* the int8 weight is [N, K] (else [K, N]) */
        int gemm;           /* Gemm transB=1 on the [N, K] result (else MatMul) */
        int transpose_w;    /* Transpose(W) before the Cast */
        const char *scale;  /* the scale's dims */
        const char *want;   /* the dense, or NULL: rejected with why */
        const char *why;
    } cases[] = {
        {DT_OX_INT8, 0, 0, 0, "1", "dense(M=1..64,N=256,K=768,dtype=w8a32) x1", NULL},
        {DT_OX_INT8, 1, 1, 0, "256,1", "dense(M=1..64,N=256,K=768,dtype=w8a32) x1", NULL},
        {DT_OX_INT8, 1, 0, 1, "1,256", "dense(M=1..64,N=256,K=768,dtype=w8a32) x1", NULL},
        {DT_OX_INT8, 0, 0, 0, "768,1", NULL, "along K"},
        {DT_OX_UINT8, 0, 0, 0, "1,256", NULL, "uint8 weights"},
        {DT_OX_FLOAT16, 0, 0, 0, "1,256", "dense(M=1..64,N=256,K=768) x1", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "seq,768");
        if (cases[i].nk)
            tg_weight(g, "wq", cases[i].wtype, 256, 768);
        else
            tg_weight(g, "wq", cases[i].wtype, 768, 256);
        if (!strcmp(cases[i].scale, "1"))
            tg_weight(g, "s", DT_OX_FLOAT, 1);
        else if (!strcmp(cases[i].scale, "256,1"))
            tg_weight(g, "s", DT_OX_FLOAT, 256, 1);
        else if (!strcmp(cases[i].scale, "768,1"))
            tg_weight(g, "s", DT_OX_FLOAT, 768, 1);
        else
            tg_weight(g, "s", DT_OX_FLOAT, 1, 256);
        const char *w = "wq";
        if (cases[i].transpose_w) {
            tg_attr_ints(tg_node(g, "Transpose", "tw", "wq", "wt"), "perm", 2,
                         (const int64_t[]){1, 0});
            w = "wt";
        }
        char in[32];
        snprintf(in, sizeof in, "%s", w);
        tg_attr_i(tg_node(g, "Cast", "cast", in, "wf"), "to", DT_OX_FLOAT);
        tg_node(g, "Mul", "scale", "s,wf", "wd");
        if (cases[i].gemm)
            tg_attr_i(tg_node(g, "Gemm", "mm", "x,wd", "out"), "transB", 1);
        else
            tg_node(g, "MatMul", "mm", "x,wd", "out");
        tg_output(g, "out");
        tg_weight(g, "w2", DT_OX_FLOAT, 768, 8);
        tg_node(g, "MatMul", "mm2", "x,w2", "out2");
        tg_output(g, "out2");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("seq=1..64"), &imp, &e);
        if (!m)
            fprintf(stderr, "\ncast weight %zu: %s\n", i, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        char *got = summary(m);
        if (cases[i].want) {
            if (!strstr(got, cases[i].want))
                fprintf(stderr, "\ncase %zu: %s\n", i, got);
            CU_ASSERT_PTR_NOT_NULL(strstr(got, cases[i].want));
        } else {
            const dt_ox_untuned *u = untuned(imp, "MatMul");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            if (!strstr(u->why, cases[i].why))
                fprintf(stderr, "\ncase %zu: %s\n", i, u->why);
            CU_ASSERT_PTR_NOT_NULL(strstr(u->why, cases[i].why));
        }
        free(got);
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* attn-reshape-kt.onnx: Kᵀ as Reshape → Transpose([0,2,1]) → Reshape of a
 * Gemm's output keeps K contiguous: q·kᵀ is NT. */
static void test_nt_reshape_chain_file(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "attn-reshape-kt.onnx", VARS("batch=1", "seq=1..64"),
                              &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=1..64,N=384,K=384,epilogue=bias) x4; "
                        "batch_matmul(B=12,M=seq,N=seq,K=32,layout=NT;seq=1..64) x1; "
                        "batch_matmul(B=12,M=seq,N=32,K=seq,layout=NN;seq=1..64) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Transpose"), 4); /* the chains stay listed */
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* Chains of Reshapes and Transposes before a batch_matmul's B: NT exactly
 * when they take K from the source's last axis. */
static void test_nt_chains(void)
{
    static const struct {
        const char *src;      /* the source's dims */
        int64_t perm1[4];     /* the first Transpose (rank 3 or 4: perm1[3] < 0 for 3) */
        const char *shape1;   /* a Reshape after it ("": none) */
        int64_t perm2[3];     /* a second Transpose ({-1}: none) */
        const char *layout;
    } cases[] = {
        /* [h,s,64] → T[0,2,1] → Reshape [h,64,s] */
        {"h,s,64", {0, 2, 1, -1}, "h,64,s", {-1}, "NT"},
        /* [s,h*64=256] → Reshape [s,4,64] → T[1,2,0] → [4,64,s] */
        {"s,256", {-1}, "", {-1}, "NT"},
        /* [h,64,s] → T[0,2,1] → T[0,2,1]: back to K strided */
        {"h,64,s", {0, 2, 1, -1}, "", {0, 2, 1}, "NN"},
        /* [h,s,64] → Reshape [h,s,64] (no Transpose) then T[0,2,1] */
        {"h,s,64", {-1}, "h,s,64", {0, 2, 1}, "NT"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_ox_graph *g = tg_new();
        tg_input(g, "a", DT_OX_FLOAT, "h,s,64");
        const char *cur = "src";
        tg_input(g, "src", DT_OX_FLOAT, cases[i].src);
        if (i == 1) {
            /* [s,256] → Reshape [s,4,64] → Transpose [1,2,0] */
            dt_ox_tensor *t = tg_tensor(g, "shp", DT_OX_INT64, 1, (int64_t)3);
            t->has_values = 1;
            t->ivals = zalloc(3 * sizeof *t->ivals);
            t->ivals[0] = 0, t->ivals[1] = 4, t->ivals[2] = 64;
            tg_node(g, "Reshape", "r", "src,shp", "r");
            tg_attr_ints(tg_node(g, "Transpose", "t", "r", "bt"), "perm", 3,
                         (const int64_t[]){1, 2, 0});
            cur = "bt";
        } else {
            if (cases[i].perm1[0] >= 0) {
                tg_attr_ints(tg_node(g, "Transpose", "t1", cur, "t1"), "perm", 3,
                             cases[i].perm1);
                cur = "t1";
            }
            if (cases[i].shape1[0]) {
                /* the target from Shape(a) / Shape(src): [h, 64, s] or [h, s, 64] */
                tg_node(g, "Shape", "sh", "a", "sh");
                dt_ox_tensor *t = tg_tensor(g, "idx", DT_OX_INT64, 1, (int64_t)3);
                t->has_values = 1;
                t->ivals = zalloc(3 * sizeof *t->ivals);
                int r = !strcmp(cases[i].shape1, "h,64,s");
                t->ivals[0] = 0, t->ivals[1] = r ? 2 : 1, t->ivals[2] = r ? 1 : 2;
                tg_attr_i(tg_node(g, "Gather", "ga", "sh,idx", "shp"), "axis", 0);
                tg_node(g, "Reshape", "r", cur[0] == 't' ? "t1,shp" : "src,shp", "r");
                cur = "r";
            }
            if (cases[i].perm2[0] >= 0) {
                char in[8];
                snprintf(in, sizeof in, "%s", cur);
                tg_attr_ints(tg_node(g, "Transpose", "t2", in, "t2"), "perm", 3, cases[i].perm2);
                cur = "t2";
            }
        }
        char in[16];
        snprintf(in, sizeof in, "%s%s", i == 1 ? "a4," : "a,", cur);
        if (i == 1) { /* a4 [4, s, 64] so the batch dims match */
            tg_input(g, "a4", DT_OX_FLOAT, "4,s,64");
        }
        tg_node(g, "MatMul", "bmm", in, "out");
        tg_output(g, "out");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = i == 1 ? tg_import(g, VARS("h=1..4", "s=1..32"), &imp, &e)
                             : tg_import(g, VARS("h=1..4", "s=1..32"), &imp, &e);
        if (!m)
            fprintf(stderr, "\nchain %zu: %s\n", i, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL_FATAL(m->nworkloads, 1);
        char want[32];
        snprintf(want, sizeof want, "layout=%s", cases[i].layout);
        if (!strstr(m->workloads[0].key, want))
            fprintf(stderr, "\nchain %zu: %s, want %s\n", i, m->workloads[0].key, want);
        CU_ASSERT_PTR_NOT_NULL(strstr(m->workloads[0].key, want));
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* The untuned list names what these are: a DequantizeLinear after an
 * embedding Gather, Range with the shape arithmetic, 4-bit MatMulNBits and
 * QLinearMatMul with why dtune has no dtype for them. */
static void test_untuned_labels(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "embedding-int8-gather.onnx",
                              VARS("batch=1", "seq=1..64"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    const dt_ox_untuned *u = untuned(imp, "DequantizeLinear");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(u->why, "dequantizes an embedding table (Gather): not a GEMM");
    CU_ASSERT_PTR_NULL(untuned(imp, "Range"));
    CU_ASSERT(untuned_nodes(imp, "shape arithmetic") >= 1);
    dt_model_free(m);
    dt_ox_import_free(imp);
    /* gpt2-block.onnx's position ids: Range(0, seq, 1), seq symbolic */
    m = import_file(ONNX_DIR "gpt2-block.onnx", VARS("batch=1", "seq=1..128"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_PTR_NULL(untuned(imp, "Range"));
    dt_model_free(m);
    dt_ox_import_free(imp);

    dt_err e;
    imp = NULL;
    if (dt_ox_import_file(ONNX_DIR "matmulnbits-4bit.onnx", NULL, VARS("batch=1", "seq=1..8"),
                          &imp, &e)) {
        /* until shape propagation gets past an op without a rule */
        dt_test_skip("matmulnbits-4bit.onnx: %s", e.msg);
    } else {
        check_accounting(imp);
        u = untuned(imp, "com.microsoft.MatMulNBits");
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        CU_ASSERT_STRING_EQUAL(u->why, "4-bit weights: no dtune dtype (shapes from value_info)");
        CU_ASSERT_EQUAL(imp->nuntuned, 1);
        dt_ox_import_free(imp);
    }

    /* a node whose shapes propagation could not find says so */
    m = import_file(ONNX_DIR "bad-unsupported-op.onnx", VARS("batch=1..4"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    u = untuned(imp, "NonZero");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, " (shapes unknown)"));
    dt_model_free(m);
    dt_ox_import_free(imp);

    dt_ox_graph *g = tg_new();
    tg_input(g, "x", DT_OX_FLOAT, "seq,64");
    tg_input(g, "xq", DT_OX_UINT8, "seq,64");
    tg_weight(g, "wq", DT_OX_UINT8, 64, 16);
    tg_scalar(g, "sa", 0.01);
    tg_iscalar(g, "za", DT_OX_UINT8, 128);
    tg_weight(g, "w", DT_OX_FLOAT, 64, 16);
    tg_node(g, "QLinearMatMul", "qmm", "xq,sa,za,wq,sa,za,sa,za", "yq");
    tg_output(g, "yq");
    tg_node(g, "MatMul", "mm", "x,w", "y");
    tg_output(g, "y");
    m = tg_import(g, VARS("seq=1..8"), &imp, &e);
    if (!m)
        fprintf(stderr, "\nqlinear: %s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    u = untuned(imp, "QLinearMatMul");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "requantized"));
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* ---- issue 43's patterns (scripts/onnx_models_patterns2.py) --------------------- */

/* sdpa-torch.onnx: F.scaled_dot_product_attention as torch (opset 14)
 * decomposes it, √scale Mul'd on q and on Kᵀ between the Transpose and the
 * MatMul: NT (was NN), the Muls listed as elementwise; sdpa-dynamo.onnx:
 * the dynamo exporter's Reshape → Transpose → Reshape Kᵀ, then the Mul. */
static void test_sdpa_files(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "sdpa-torch.onnx", VARS("batch=1..2", "seq=1..64"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=batch*seq,N=256,K=256,epilogue=bias;batch=1..2,seq=1..64) x8; "
                        "batch_matmul(B=4*batch,M=seq,N=seq,K=64,layout=NT;batch=1..2,"
                        "seq=1..64) x2; "
                        "batch_matmul(B=4*batch,M=seq,N=64,K=seq,layout=NN;batch=1..2,"
                        "seq=1..64) x2");
    /* per layer Mul(q, √s) and Mul(Kᵀ, √s) stay listed: batch_matmul has no scale */
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Mul"), 4);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Sqrt"), 3);
    CU_ASSERT_EQUAL(imp->ntuned, 2 * (4 * 2 + 2));
    dt_model_free(m);
    dt_ox_import_free(imp);
    m = import_file(ONNX_DIR "sdpa-dynamo.onnx", VARS("batch=1..2", "seq=1..64"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=batch*seq,N=256,K=256,epilogue=bias;batch=1..2,seq=1..64) x4; "
                        "batch_matmul(B=4*batch,M=seq,N=seq,K=64,layout=NT;batch=1..2,"
                        "seq=1..64) x1; "
                        "batch_matmul(B=4*batch,M=seq,N=64,K=seq,layout=NN;batch=1..2,"
                        "seq=1..64) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Mul"), 2);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* A scalar Mul/Div on either side of Kᵀ's Transpose keeps q·kᵀ NT; a Div
 * of the scalar by Kᵀ or a Mul by a tensor of more than one element does
 * not (not a scaling of the product). */
static void test_nt_scaled(void)
{
    static const struct {
        const char *what;
        int variant;
        const char *layout;
    } cases[] = {
        {"Mul(Kᵀ, s)", 0, "NT"}, {"Mul(s, Kᵀ)", 1, "NT"},        {"Div(Kᵀ, s)", 2, "NT"},
        {"Div(s, Kᵀ)", 3, "NN"}, {"Mul(Kᵀ, [1,1,64,1])", 4, "NN"}, {"Div(k, s) → T", 5, "NT"},
        {"Mul(q, s), T(k)", 6, "NT"}, {"Mul(Mul(Kᵀ, [1]), s)", 7, "NT"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int v = cases[i].variant;
        dt_ox_graph *g = tg_new();
        tg_input(g, "q", DT_OX_FLOAT, "b,4,s,64");
        tg_input(g, "k", DT_OX_FLOAT, "b,4,s,64");
        tg_scalar(g, "sc", 0.3535534);
        dt_ox_tensor *one = tg_tensor(g, "sc1", DT_OX_FLOAT, 1, (int64_t)1);
        one->has_values = 1;
        one->fvals = zalloc(sizeof *one->fvals);
        one->fvals[0] = 0.5;
        tg_weight(g, "vec", DT_OX_FLOAT, 1, 1, 64, 1);
        const int64_t perm[4] = {0, 1, 3, 2};
        const char *a = "q", *b = "kts";
        if (v == 5) {
            tg_node(g, "Div", "scale", "k,sc", "ks");
            tg_attr_ints(tg_node(g, "Transpose", "t", "ks", "kts"), "perm", 4, perm);
        } else {
            tg_attr_ints(tg_node(g, "Transpose", "t", "k", "kt"), "perm", 4, perm);
            static const char *const op[] = {"Mul", "Mul", "Div", "Div", "Mul", NULL, "", "Mul"};
            static const char *const in[] = {"kt,sc", "sc,kt", "kt,sc", "sc,kt", "kt,vec", NULL,
                                             "",      "kt,sc1"};
            if (v == 6) {
                tg_node(g, "Mul", "qscale", "q,sc", "qs");
                a = "qs";
                b = "kt";
            } else {
                tg_node(g, op[v], "scale", in[v], v == 7 ? "kt1" : "kts");
            }
            if (v == 7)
                tg_node(g, "Mul", "scale2", "kt1,sc", "kts");
        }
        char ins[16];
        snprintf(ins, sizeof ins, "%s,%s", a, b);
        tg_node(g, "MatMul", "scores", ins, "out");
        tg_output(g, "out");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("b=1..2", "s=1..32"), &imp, &e);
        if (!m)
            fprintf(stderr, "\n%s: %s\n", cases[i].what, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        char want[160];
        snprintf(want, sizeof want, "batch_matmul(B=4*b,M=s,N=s,K=64,layout=%s;b=1..2,s=1..32) x1",
                 cases[i].layout);
        char *got = summary(m);
        if (strcmp(got, want))
            fprintf(stderr, "\n%s: %s, want %s\n", cases[i].what, got, want);
        CU_ASSERT_STRING_EQUAL(got, want);
        free(got);
        /* the scalings stay listed as elementwise work */
        CU_ASSERT_EQUAL(imp->ntuned, 1);
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* stft-frontend.onnx: the conv STFT's stride 128 (above conv2d's old
 * limit of 64) and a strided Conv1d as conv2d, the padded Conv1d with
 * pad_w=1;
 * wavenet-dilated.onnx: dilations 128 and 512 after causal Pads. */
static void test_stride_dilation_files(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "stft-frontend.onnx",
                              VARS("batch=1..2", "samples={16000,32000}"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..2,H=1,W=samples+512,C=1,K=514,R=1,S=512,stride=128,pad=0;"
                        "samples={16000,32000}) x1; "
                        "conv2d(N=1..2,H=1,W=samples/128+1,C=257,K=256,R=1,S=3,stride=1,pad=0,"
                        "epilogue=bias+relu,pad_w=1;samples={16000,32000}) x1; "
                        "conv2d(N=1..2,H=1,W=samples/128+1,C=256,K=256,R=1,S=3,stride=2,pad=0,"
                        "epilogue=bias+relu;samples={16000,32000}) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0);
    CU_ASSERT_EQUAL(imp->coverage.nleft, 0);
    dt_model_free(m);
    dt_ox_import_free(imp);
    m = import_file(ONNX_DIR "wavenet-dilated.onnx", VARS("batch=1..2", "time=1000..4000:1000"),
                    &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..2,H=1,W=time+1,C=64,K=128,R=1,S=2,stride=1,pad=0,"
                        "epilogue=bias;time=1000..4000:1000) x1; "
                        "conv2d(N=1..2,H=1,W=1000..4000:1000,C=64,K=64,R=1,S=1,stride=1,pad=0,"
                        "epilogue=bias) x3; "
                        "conv2d(N=1..2,H=1,W=time+128,C=64,K=128,R=1,S=2,stride=1,pad=0,"
                        "dilation=128,epilogue=bias;time=1000..4000:1000) x1; "
                        "conv2d(N=1..2,H=1,W=time+512,C=64,K=128,R=1,S=2,stride=1,pad=0,"
                        "dilation=512,epilogue=bias;time=1000..4000:1000) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Pad"), 3);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* A stride conv2d cannot take is listed with its range; 1024 is taken. */
static void test_conv_stride_range(void)
{
    for (int variant = 0; variant < 2; variant++) {
        int64_t stride = variant ? 2048 : 1024;
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "n,1,8192");
        tg_weight(g, "w", DT_OX_FLOAT, 8, 1, 1024);
        tg_weight(g, "w2", DT_OX_FLOAT, 16, 4);
        tg_input(g, "y", DT_OX_FLOAT, "n,16");
        dt_ox_node *c = tg_node(g, "Conv", "conv", "x,w", "out");
        tg_attr_ints(c, "strides", 1, &stride);
        tg_output(g, "out");
        tg_node(g, "MatMul", "mm", "y,w2", "out2");
        tg_output(g, "out2");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("n=1..2"), &imp, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (!variant) {
            expect_workloads(m, "conv2d(N=1..2,H=1,W=8192,C=1,K=8,R=1,S=1024,stride=1024,pad=0) "
                                "x1; dense(M=1..2,N=4,K=16) x1");
        } else {
            const dt_ox_untuned *u = untuned(imp, "Conv");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            CU_ASSERT_STRING_EQUAL(u->why, "Conv with stride 2048 (conv2d's stride is in "
                                           "1..1024)");
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* ConvTranspose's attributes as conv2d's transposed mode: output_padding,
 * group (its weight [C, K/group, R, S]), auto_pad SAME_UPPER (the pads it
 * implies whatever the size), output_shape (the crop of the full output),
 * and an output_shape larger than the full output listed. */
static void test_conv_transpose_forms(void)
{
    static const struct {
        int variant;
        const char *want, *why;
    } cases[] = {
        {0, "conv2d(N=1..2,H=7,W=9,C=8,K=6,R=3,S=3,stride=2,pad=1,transpose=1,out_pad=1,"
            "out_pad_w=1) x1", NULL},
        {1, "conv2d(N=1..2,H=7,W=9,C=8,K=4,R=3,S=3,stride=2,pad=1,groups=2,transpose=1,"
            "out_pad=1,out_pad_w=1) x1", NULL},
        /* SAME_UPPER, k=4 s=2: 4 − 2 = 2 cropped, 1 and 1 */
        {2, "conv2d(N=1..2,H=7,W=9,C=8,K=6,R=4,S=4,stride=2,pad=1,transpose=1) x1", NULL},
        /* output_shape [13, 17] of the full 15 x 19: 2 cropped, 1 and 1 */
        {3, "conv2d(N=1..2,H=7,W=9,C=8,K=6,R=3,S=3,stride=2,pad=1,transpose=1) x1", NULL},
        {4, NULL, "ConvTranspose whose output_shape asks for more than its full output"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int v = cases[i].variant;
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "n,8,7,9");
        tg_weight(g, "w", DT_OX_FLOAT, 8, v == 1 ? 2 : 6, v == 2 ? 4 : 3, v == 2 ? 4 : 3);
        dt_ox_node *c = tg_node(g, "ConvTranspose", "up", "x,w", "out");
        const int64_t two[2] = {2, 2}, one[2] = {1, 1}, pads[4] = {1, 1, 1, 1};
        const int64_t shape[2] = {13, 17}, big[2] = {16, 19};
        tg_attr_ints(c, "strides", 2, two);
        if (v <= 1) {
            tg_attr_ints(c, "pads", 4, pads);
            tg_attr_ints(c, "output_padding", 2, one);
        }
        if (v == 1)
            tg_attr_i(c, "group", 2);
        if (v == 2) {
            dt_ox_attr *a = tg_attr(c, "auto_pad", DT_OX_ATTR_STRING);
            a->s = dup("SAME_UPPER");
        }
        if (v >= 3)
            tg_attr_ints(c, "output_shape", 2, v == 3 ? shape : big);
        tg_output(g, "out");
        if (v == 4) { /* something to tune beside the listed node */
            tg_input(g, "y", DT_OX_FLOAT, "n,16");
            tg_weight(g, "w2", DT_OX_FLOAT, 16, 4);
            tg_node(g, "MatMul", "mm", "y,w2", "out2");
            tg_output(g, "out2");
        }
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("n=1..2"), &imp, &e);
        if (cases[i].want) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(m);
            expect_workloads(m, cases[i].want);
            CU_ASSERT_PTR_NULL(untuned(imp, "ConvTranspose"));
        } else {
            const dt_ox_untuned *u = imp ? untuned(imp, "ConvTranspose") : NULL;
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            if (!strstr(u->why, cases[i].why))
                fprintf(stderr, "\n  case %d: %s\n", v, u->why);
            CU_ASSERT_PTR_NOT_NULL(strstr(u->why, cases[i].why));
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* conv-transpose.onnx: both ConvTransposes as conv2d's transposed mode —
 * the 2-D 4×4 stride 2 with its Relu fused, the HiFi-GAN 1-D one as H = R
 * = 1 with its pads on W — and nothing of theirs left untuned. */
static void test_conv_transpose_file(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "conv-transpose.onnx",
                              VARS("batch=1..2", "h=8..16", "w=8..16", "frames=10..100"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..2,H=8..16,W=8..16,C=64,K=32,R=4,S=4,stride=2,pad=1,"
                        "epilogue=bias+relu,transpose=1) x1; "
                        "conv2d(N=1..2,H=2*h,W=2*w,C=32,K=3,R=3,S=3,stride=1,pad=1,epilogue=bias;"
                        "h=8..16,w=8..16) x1; "
                        "conv2d(N=1..2,H=1,W=10..100,C=128,K=64,R=1,S=16,stride=8,pad=0,"
                        "epilogue=bias,pad_w=4,transpose=1) x1");
    CU_ASSERT_PTR_NULL(untuned(imp, "ConvTranspose"));
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Relu"), 0); /* fused into the transposed conv2d */
    CU_ASSERT_EQUAL(imp->coverage.nleft, 0);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* conv-int8-dynamic.onnx (quantize_dynamic: ConvInteger → Cast → Mul →
 * Reshape'd bias Add → Relu) as int8 conv2d, u8 weights listed;
 * conv-int8-qdq.onnx (quantize_static QDQ, per-channel s8 weights) as int8,
 * s8 activations listed, weight-only as w8a32; qlinear-ops.onnx's
 * QLinearConv and QLinearMatMul listed with every reason. */
static void test_conv_int8_files(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "conv-int8-dynamic.onnx",
                              VARS("batch=1..2", "height=16..32", "width=16..32"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..2,H=16..32,W=16..32,C=3,K=32,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu,dtype=int8) x1; "
                        "conv2d(N=1..2,H=16..32,W=16..32,C=32,K=32,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu,dtype=int8) x1");
    const dt_ox_untuned *u = untuned(imp, "ConvInteger");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(u->why, "uint8 weights: dtune's int8 and w8a32 take s8 weights");
    /* per int8 conv: DynamicQuantizeLinear, ConvInteger, Cast, 2 Muls,
     * the bias Reshape and Add, Relu */
    CU_ASSERT_EQUAL(imp->ntuned, 2 * 8);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "DynamicQuantizeLinear"), 1);
    dt_model_free(m);
    dt_ox_import_free(imp);

    m = import_file(ONNX_DIR "conv-int8-qdq.onnx", VARS("batch=1..2"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "conv2d(N=1..2,H=32,W=32,C=16,K=32,R=3,S=3,stride=1,pad=1,"
                        "epilogue=bias+relu,dtype=int8) x1; "
                        "conv2d(N=1..2,H=32,W=32,C=32,K=32,R=1,S=1,stride=2,pad=0,epilogue=bias,"
                        "dtype=int8) x1; "
                        "conv2d(N=1..2,H=32,W=32,C=16,K=8,R=3,S=3,stride=1,pad=1,epilogue=bias,"
                        "dtype=w8a32) x1");
    u = untuned(imp, "Conv");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(u->why, "int8 activations: dtune's int8 takes u8 activations");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "QuantizeLinear"), 1);
    dt_model_free(m);
    dt_ox_import_free(imp);

    m = import_file(ONNX_DIR "qlinear-ops.onnx", VARS("batch=1..2"), &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(m, "dense(M=1..2,N=10,K=10,epilogue=bias) x1");
    static const char req[] = "its uint8 output is requantized by y_scale and y_zero_point: "
                              "dtune's int8 writes f32";
    u = untuned(imp, "QLinearMatMul");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(u->why, req);
    CU_ASSERT_PTR_NOT_NULL(untuned_why(imp, "QLinearConv", req));
    char both[256];
    snprintf(both, sizeof both, "%s; and uint8 weights: dtune's int8 and w8a32 take s8 weights",
             req);
    u = untuned_why(imp, "QLinearConv", both);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_STRING_EQUAL(u->why, both);
    CU_ASSERT_EQUAL(imp->coverage.nleft, 3);
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* ConvInteger and QDQ Conv variants: per-channel scales along NCHW's
 * channels are dtune's; a scale along the last axis, a known non-zero
 * weight zero point, s8 activations and weight scales along the input
 * channels are not, each with its reason. */
static void test_conv_quant_variants(void)
{
    static const struct {
        int variant;
        const char *want; /* the conv2d, or NULL */
        const char *why;  /* else the reason */
    } cases[] = {
        {0, "conv2d(N=1..2,H=10,W=16,C=8,K=16,R=3,S=3,stride=1,pad=1,dtype=int8) x1", NULL},
        {1, "conv2d(N=1..2,H=10,W=16,C=8,K=16,R=3,S=3,stride=1,pad=1,dtype=int8) x1", NULL},
        {2, NULL, "the int32 result is not dequantized by Cast(float) → Mul (scales): dtune's "
                  "int8 writes f32"},
        {3, NULL, "a weight zero point other than 0: dtune's s8 weights are symmetric"},
        {4, NULL, "int8 activations: dtune's int8 takes u8 activations"},
        {5, "conv2d(N=1..2,H=10,W=16,C=8,K=16,R=3,S=3,stride=1,pad=1,dtype=int8) x1", NULL},
        {6, NULL, "weight scales along the input channels: dtune's int8 and w8a32 have one "
                  "scale per output channel"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int v = cases[i].variant;
        dt_ox_graph *g = tg_new();
        tg_input(g, "x", DT_OX_FLOAT, "n,8,10,16");
        tg_input(g, "y", DT_OX_FLOAT, "n,16");
        tg_weight(g, "w2", DT_OX_FLOAT, 16, 4);
        tg_weight(g, "wq", DT_OX_INT8, 16, 8, 3, 3);
        tg_iscalar(g, "wzp", DT_OX_INT8, v == 3 ? 3 : 0);
        tg_scalar(g, "ws", 0.002);
        tg_weight(g, "wsk", DT_OX_FLOAT, 1, 16, 1, 1);
        tg_weight(g, "wsv", DT_OX_FLOAT, 16);
        tg_weight(g, "wsc", DT_OX_FLOAT, 8);
        tg_scalar(g, "xs", 0.02);
        tg_iscalar(g, "xzp", DT_OX_UINT8, 128);
        tg_iscalar(g, "xzs", DT_OX_INT8, 0);
        const int64_t pads[4] = {1, 1, 1, 1};
        dt_ox_node *c;
        if (v <= 4) { /* DynamicQuantizeLinear → ConvInteger → Cast → Mul */
            if (v == 4) {
                tg_node(g, "QuantizeLinear", "xq", "x,xs,xzs", "xq");
                c = tg_node(g, "ConvInteger", "conv", "xq,wq,xzs,wzp", "yi");
            } else {
                tg_node(g, "DynamicQuantizeLinear", "dql", "x", "xq,xsd,xzd");
                c = tg_node(g, "ConvInteger", "conv", "xq,wq,xzd,wzp", "yi");
            }
            tg_attr_ints(c, "pads", 4, pads);
            tg_attr_i(tg_node(g, "Cast", "cast", "yi", "yf"), "to", DT_OX_FLOAT);
            /* the scale: x_scale·w_scale, per tensor (0, 3, 4), per channel
             * [1, K, 1, 1] (1) or [K] along the last axis, W = 16 (2) */
            tg_node(g, "Mul", "scales", v == 1 ? "xsd,wsk" : v == 2 ? "xsd,wsv" : "xsd,ws", "s");
            if (v == 4) {
                free(g->nodes[g->nnodes - 1].inputs[0]);
                g->nodes[g->nnodes - 1].inputs[0] = dup("xs");
            }
            tg_node(g, "Mul", "deq", "yf,s", "out");
        } else { /* QDQ */
            tg_node(g, "QuantizeLinear", "xq", "x,xs,xzp", "xq");
            tg_node(g, "DequantizeLinear", "xdq", "xq,xs,xzp", "xd");
            dt_ox_node *dq = tg_node(g, "DequantizeLinear", "wdq",
                                     v == 5 ? "wq,wsv" : "wq,wsc", "w");
            tg_attr_i(dq, "axis", v == 5 ? 0 : 1);
            c = tg_node(g, "Conv", "conv", "xd,w", "out");
            tg_attr_ints(c, "pads", 4, pads);
        }
        tg_output(g, "out");
        tg_node(g, "MatMul", "mm", "y,w2", "out2");
        tg_output(g, "out2");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("n=1..2"), &imp, &e);
        if (!m)
            fprintf(stderr, "\nconv quant %d: %s\n", v, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (cases[i].want) {
            char want[256];
            snprintf(want, sizeof want, "%s; dense(M=1..2,N=4,K=16) x1", cases[i].want);
            expect_workloads(m, want);
            CU_ASSERT_EQUAL(imp->nuntuned, 0);
            for (int k = 0; k < imp->nuntuned; k++)
                fprintf(stderr, "\nconv quant %d: %s: %s\n", v, imp->untuned[k].what,
                        imp->untuned[k].why);
        } else {
            const dt_ox_untuned *u = untuned(imp, v <= 4 ? "ConvInteger" : "Conv");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            if (strcmp(u->why, cases[i].why))
                fprintf(stderr, "\nconv quant %d: %s\n", v, u->why);
            CU_ASSERT_STRING_EQUAL(u->why, cases[i].why);
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

/* ms-attention.onnx: com.microsoft Attention as its QKV dense and the two
 * products of heads; MultiHeadAttention with a KV cache (L = past + new)
 * and as cross attention; ms-gqa.onnx: GroupQueryAttention, 8 query heads
 * on 2 kv heads: B = batch·2, M = 4·seq. */
static void test_ms_attention_files(void)
{
    dt_ox_import *imp;
    dt_model *m = import_file(ONNX_DIR "ms-attention.onnx",
                              VARS("batch=1..2", "seq=1..64", "dec_seq=1..8", "past_seq=0..64"),
                              &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(
        m, "dense(M=batch*seq,N=768,K=256,epilogue=bias;batch=1..2,seq=1..64) x1; "
           "batch_matmul(B=4*batch,M=seq,N=seq,K=64,layout=NT;batch=1..2,seq=1..64) x1; "
           "batch_matmul(B=4*batch,M=seq,N=64,K=seq,layout=NN;batch=1..2,seq=1..64) x1; "
           "dense(M=batch*seq,N=256,K=256;batch=1..2,seq=1..64) x3; "
           "dense(M=batch*seq,N=1024,K=256,epilogue=bias+gelu;batch=1..2,seq=1..64) x1; "
           "dense(M=batch*seq,N=256,K=1024;batch=1..2,seq=1..64) x1; "
           "dense(M=batch*dec_seq,N=256,K=256;batch=1..2,dec_seq=1..8) x6; "
           "batch_matmul(B=4*batch,M=dec_seq,N=dec_seq+past_seq,K=64,layout=NT;batch=1..2,"
           "dec_seq=1..8,past_seq=0..64) x1; "
           "batch_matmul(B=4*batch,M=dec_seq,N=64,K=dec_seq+past_seq,layout=NN;batch=1..2,"
           "dec_seq=1..8,past_seq=0..64) x1; "
           "batch_matmul(B=4*batch,M=1..8,N=1..64,K=64,layout=NT;batch=1..2) x1; "
           "batch_matmul(B=4*batch,M=1..8,N=64,K=1..64,layout=NN;batch=1..2) x1");
    CU_ASSERT_PTR_NULL(untuned(imp, "com.microsoft.Attention"));
    CU_ASSERT_PTR_NULL(untuned(imp, "com.microsoft.MultiHeadAttention"));
    CU_ASSERT_EQUAL(untuned_nodes(imp, "com.microsoft.SkipLayerNormalization"), 2);
    dt_model_free(m);
    dt_ox_import_free(imp);
    m = import_file(ONNX_DIR "ms-gqa.onnx",
                    VARS("batch_size=1..2", "sequence_length=1..64",
                         "past_sequence_length=0..256"),
                    &imp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    expect_workloads(
        m, "dense(M=batch_size*sequence_length,N=512,K=512;batch_size=1..2,"
           "sequence_length=1..64) x2; "
           "dense(M=batch_size*sequence_length,N=128,K=512;batch_size=1..2,"
           "sequence_length=1..64) x2; "
           "batch_matmul(B=2*batch_size,M=4*sequence_length,N=past_sequence_length+"
           "sequence_length,K=64,layout=NT;batch_size=1..2,past_sequence_length=0..256,"
           "sequence_length=1..64) x1; "
           "batch_matmul(B=2*batch_size,M=4*sequence_length,N=64,K=past_sequence_length+"
           "sequence_length,layout=NN;batch_size=1..2,past_sequence_length=0..256,"
           "sequence_length=1..64) x1; "
           "dense(M=batch_size*sequence_length,N=1024,K=512;batch_size=1..2,"
           "sequence_length=1..64) x2; "
           "dense(M=batch_size*sequence_length,N=512,K=1024;batch_size=1..2,"
           "sequence_length=1..64) x1");
    CU_ASSERT_PTR_NULL(untuned(imp, "com.microsoft.GroupQueryAttention"));
    dt_model_free(m);
    dt_ox_import_free(imp);
}

/* The attention ops' other input forms, and what is listed. */
static void test_attention_variants(void)
{
    static const struct {
        int variant;
        const char *want; /* "" and why: listed */
        const char *why;
    } cases[] = {
        /* MultiHeadAttention, packed QKV [b, s, 4, 3, 64] */
        {0, "batch_matmul(B=4*b,M=s,N=s,K=64,layout=NT;b=1..2,s=1..16) x1; "
            "batch_matmul(B=4*b,M=s,N=64,K=s,layout=NN;b=1..2,s=1..16) x1", NULL},
        /* MultiHeadAttention, key and value BNSH [b, 4, 20, 64] */
        {1, "batch_matmul(B=4*b,M=1..16,N=20,K=64,layout=NT;b=1..2) x1; "
            "batch_matmul(B=4*b,M=1..16,N=64,K=20,layout=NN;b=1..2) x1", NULL},
        /* GroupQueryAttention, packed QKV (8 + 2·2)·64, no past */
        {2, "batch_matmul(B=2*b,M=4*s,N=s,K=64,layout=NT;b=1..2,s=1..16) x1; "
            "batch_matmul(B=2*b,M=4*s,N=64,K=s,layout=NN;b=1..2,s=1..16) x1", NULL},
        /* Attention with past [2, b, 4, 10, 64], qkv_hidden_sizes [256, 256, 128] */
        {3, "dense(M=b*s,N=640,K=256,epilogue=bias;b=1..2,s=1..16) x1; "
            "batch_matmul(B=4*b,M=s,N=s+10,K=64,layout=NT;b=1..2,s=1..16) x1; "
            "batch_matmul(B=4*b,M=s,N=32,K=s+10,layout=NN;b=1..2,s=1..16) x1", NULL},
        {4, NULL, "float16 Attention: dtune's ops take float (f32) or bfloat16"},
        {5, NULL, "Attention whose weights are not a constant of the input's type (dense packs "
                  "constant weights)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int v = cases[i].variant;
        dt_ox_graph *g = tg_new();
        tg_input(g, "y", DT_OX_FLOAT, "b,16");
        tg_weight(g, "w2", DT_OX_FLOAT, 16, 4);
        dt_ox_node *n = NULL;
        if (v == 0) {
            tg_input(g, "qkv", DT_OX_FLOAT, "b,s,4,3,64");
            n = tg_node(g, "MultiHeadAttention", "mha", "qkv", "out");
        } else if (v == 1) {
            tg_input(g, "q", DT_OX_FLOAT, "b,s,256");
            tg_input(g, "k", DT_OX_FLOAT, "b,4,20,64");
            tg_input(g, "v", DT_OX_FLOAT, "b,4,20,64");
            n = tg_node(g, "MultiHeadAttention", "mha", "q,k,v", "out");
        } else if (v == 2) {
            tg_input(g, "qkv", DT_OX_FLOAT, "b,s,768");
            n = tg_node(g, "GroupQueryAttention", "gqa", "qkv,,,,,seqlens,total", "out");
            tg_input(g, "seqlens", DT_OX_INT32, "b");
            tg_input(g, "total", DT_OX_INT32, "");
            tg_attr_i(n, "kv_num_heads", 2);
        } else {
            tg_input(g, "x", v == 4 ? DT_OX_FLOAT16 : DT_OX_FLOAT, "b,s,256");
            if (v == 5)
                tg_input(g, "wqkv", DT_OX_FLOAT, "256,640");
            else
                tg_weight(g, "wqkv", v == 4 ? DT_OX_FLOAT16 : DT_OX_FLOAT, 256, 640);
            tg_weight(g, "bqkv", v == 4 ? DT_OX_FLOAT16 : DT_OX_FLOAT, 640);
            tg_input(g, "past", v == 4 ? DT_OX_FLOAT16 : DT_OX_FLOAT, "2,b,4,10,64");
            n = tg_node(g, "Attention", "att", "x,wqkv,bqkv,,past", "out,present");
            tg_attr_ints(n, "qkv_hidden_sizes", 3, (const int64_t[]){256, 256, 128});
            tg_output(g, "present");
        }
        free(n->domain);
        n->domain = dup("com.microsoft");
        tg_attr_i(n, "num_heads", v == 2 ? 8 : 4);
        tg_output(g, "out");
        tg_node(g, "MatMul", "mm", "y,w2", "out2");
        tg_output(g, "out2");
        dt_err e;
        dt_ox_import *imp;
        dt_model *m = tg_import(g, VARS("b=1..2", "s=1..16"), &imp, &e);
        if (!m)
            fprintf(stderr, "\nattention %d: %s\n", v, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        if (cases[i].want) {
            char want[512];
            snprintf(want, sizeof want, "%s; dense(M=1..2,N=4,K=16) x1", cases[i].want);
            expect_workloads(m, want);
            CU_ASSERT_EQUAL(imp->nuntuned, 0);
        } else {
            const dt_ox_untuned *u = untuned(imp, "com.microsoft.Attention");
            CU_ASSERT_PTR_NOT_NULL_FATAL(u);
            if (strncmp(u->why, cases[i].why, strlen(cases[i].why)))
                fprintf(stderr, "\nattention %d: %s\n", v, u->why);
            CU_ASSERT_NSTRING_EQUAL(u->why, cases[i].why, strlen(cases[i].why));
        }
        dt_model_free(m);
        dt_ox_import_free(imp);
    }
}

int main(void)
{
    CU_TestInfo files[] = {
        {"bert-base.onnx: bert-base.json's workloads", test_bert_base},
        {"bert-base.onnx, dynamic batch: bert-base-batched.json's", test_bert_base_batched},
        {"quantize_dynamic BERT layer: int8 denses", test_bert_layer_int8},
        {"gpt2-block.onnx: tanh GELU not fused", test_gpt2},
        {"gpt2-block.onnx, dynamic batch", test_gpt2_batched},
        {"vit-block.onnx: the patch embedding as conv2d", test_vit},
        {"cnn-small.onnx: three conv2d and the Gemm", test_cnn},
        {"conv-dynamic.onnx: conv2d over batch, height, width", test_conv_dynamic},
        {"conv-stem.onnx: 7x7 stem, 1x1; depthwise etc. listed", test_conv_stem},
        {"conv1d.onnx: Conv1d as conv2d with H=1", test_conv1d},
        {"--var errors, a dim below 1", test_var_errors},
        {"bad files", test_bad_files},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo patterns[] = {
        {"erf GELU: three associations, Div or Mul", test_gelu_variants},
        {"GELU not fused: off constant, shared, output, tanh", test_gelu_not_fused},
        {"Relu, Gelu ops, BiasGelu, no epilogue", test_other_epilogues},
        {"Gemm", test_gemm},
        {"QDQ: int8, w8a32, scales along K", test_qdq},
        {"MatMulInteger", test_matmul_integer},
        {"quantization shared by two MatMulIntegers", test_shared_quantization},
        {"more than 8 dynamic dims", test_too_many_vars},
        {"batch_matmul layouts", test_batch_matmul},
        {"op names, nothing to tune", test_names_and_nothing},
        {"w8a32-torch.onnx: Mul(Cast(int8 W), scale) as w8a32", test_w8a32_torch_file},
        {"Mul(Cast(W), scale): scales, Transposes, Gemm; not dtune's", test_w8a32_cast_variants},
        {"attn-reshape-kt.onnx: NT through Reshape/Transpose/Reshape", test_nt_reshape_chain_file},
        {"NT through Reshape/Transpose chains, NN when K is strided", test_nt_chains},
        {"untuned labels: embedding DQ, Range, MatMulNBits, QLinearMatMul", test_untuned_labels},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo patterns2[] = {
        {"sdpa-torch.onnx, sdpa-dynamo.onnx: the scaled Kᵀ is NT", test_sdpa_files},
        {"NT through a scalar Mul/Div on either side of the Transpose", test_nt_scaled},
        {"stft-frontend/wavenet-dilated.onnx: stride 128, dilation 512", test_stride_dilation_files},
        {"conv2d's stride range: 1024 taken, 2048 listed", test_conv_stride_range},
        {"conv-transpose.onnx: conv2d transpose=1, 2-D and 1-D", test_conv_transpose_file},
        {"ConvTranspose: output_padding, group, SAME_UPPER, output_shape",
         test_conv_transpose_forms},
        {"conv-int8-dynamic/-qdq.onnx, qlinear-ops.onnx", test_conv_int8_files},
        {"ConvInteger and QDQ Conv: scales, zero points, activations", test_conv_quant_variants},
        {"ms-attention.onnx, ms-gqa.onnx: the attention ops' GEMMs", test_ms_attention_files},
        {"Attention, MultiHeadAttention, GroupQueryAttention forms", test_attention_variants},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"onnx import: test models", NULL, NULL, NULL, NULL, files},
                             {"onnx import: patterns", NULL, NULL, NULL, NULL, patterns},
                             {"onnx import: patterns 2", NULL, NULL, NULL, NULL, patterns2},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
