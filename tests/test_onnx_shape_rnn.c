/* onnx: the test models of issue 30's shape rules (scripts/onnx_models_rules.py,
 * tests/data/onnx/README.md) imported whole: Resize in a torchvision FPN,
 * a bidirectional LSTM encoder, If + GRU voice activity, GatherND masks of
 * the dynamo exporter, a paddle2onnx CRNN; each gives its MatMul/Gemm
 * workloads and counts every node.  Then the recurrent cells as workloads
 * (issue 43, point 1; scripts/onnx_models_rnn.py): the keys and counts of
 * LSTM, GRU and RNN models, the lowering checked numerically against the
 * operators' equations, and `dtune workloads --json` on the real binary. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/graph.h"
#include "onnx/import.h"
#include "onnx/shape.h"
#include "onnx/workloads_match.h"
#include "shape/model.h"
#include "tests/dt_test.h"

#define ONNX_DIR DTUNE_SOURCE_DIR "/tests/data/onnx/"

#define VARS(...)                    \
    ((const char *[]){__VA_ARGS__}), \
        (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))

static int64_t untuned_nodes(const dt_ox_import *imp, const char *what)
{
    for (int i = 0; i < imp->nuntuned; i++)
        if (!strcmp(imp->untuned[i].what, what))
            return imp->untuned[i].nodes;
    return 0;
}

/* Imports file; its workloads as "key xN; ..." must be want, every node
 * tuned or listed once; the import is returned for more checks. */
static dt_ox_import *expect_import(const char *file, const char *const *vars, int nvars,
                                   const char *want)
{
    dt_err e;
    dt_ox_import *imp = NULL;
    int rc = dt_ox_import_file(file, NULL, vars, nvars, &imp, &e);
    if (rc)
        fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    int64_t sum = 0;
    for (int i = 0; i < imp->nuntuned; i++)
        sum += imp->untuned[i].nodes;
    CU_ASSERT_EQUAL(imp->nnodes, imp->ntuned + sum);
    dt_model *m = NULL;
    rc = dt_model_parse(imp->spec_json, strlen(imp->spec_json), "imported", &m, &e);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char got[4096];
    size_t len = 0;
    got[0] = '\0';
    for (int i = 0; i < m->nworkloads && len < sizeof got - 512; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s x%g", i ? "; " : "",
                                m->workloads[i].key, m->workloads[i].count);
    if (strcmp(got, want))
        fprintf(stderr, "\nworkloads: %s\nexpected:  %s\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    dt_model_free(m);
    return imp;
}

#define LSTM_GATES "LSTM gates (elementwise)"

static const char *untuned_why(const dt_ox_import *imp, const char *what)
{
    for (int i = 0; i < imp->nuntuned; i++)
        if (!strcmp(imp->untuned[i].what, what))
            return imp->untuned[i].why;
    return "";
}

/* The "count" the spec writes for its op `name`, as text ("2*(seq)", or an
 * integer's digits), into buf; "(none)" when there is no such op. */
static const char *spec_count(const dt_ox_import *imp, const char *name, char *buf, size_t n)
{
    json_error_t jerr;
    json_t *spec = json_loads(imp->spec_json, 0, &jerr), *op;
    size_t i;
    snprintf(buf, n, "(none)");
    json_array_foreach(json_object_get(spec, "ops"), i, op) {
        const char *nm = json_string_value(json_object_get(op, "name"));
        const json_t *cnt = json_object_get(op, "count");
        if (!nm || strcmp(nm, name))
            continue;
        if (json_is_string(cnt))
            snprintf(buf, n, "%s", json_string_value(cnt));
        else
            snprintf(buf, n, "%lld", (long long)json_integer_value(cnt));
    }
    json_decref(spec);
    return buf;
}

#define CHECK_SPEC_COUNT(imp, name, want)                                        \
    do {                                                                         \
        char c_[256];                                                            \
        const char *got_ = spec_count(imp, name, c_, sizeof c_);                 \
        if (strcmp(got_, want))                                                  \
            fprintf(stderr, "\nspec op %s: count %s, expected %s\n", name, got_, want); \
        CU_ASSERT_STRING_EQUAL(got_, want);                                      \
    } while (0)

/* The dims of tensor t after propagating file with variables (name, lo, hi)
 * ... NULL, as "[a,b,...]" in buf. */
static const char *dims_in(const char *file, const char *t, char *buf, size_t n, ...)
{
    dt_ox_graph *g = NULL;
    dt_ox_shapes *s = NULL;
    dt_err e;
    dt_var v[8];
    int nv = 0;
    va_list ap;
    va_start(ap, n);
    for (const char *name; (name = va_arg(ap, const char *)) && nv < 8; nv++) {
        int lo = va_arg(ap, int), hi = va_arg(ap, int);
        snprintf(v[nv].name, sizeof v[nv].name, "%s", name);
        CU_ASSERT_EQUAL_FATAL(dt_domain_range(&v[nv].dom, lo, hi, 1, NULL), 0);
    }
    va_end(ap);
    dt_ox_vars ov = {nv, v};
    snprintf(buf, n, "(error)");
    if (dt_ox_read_file(file, &g, &e) == 0 && dt_ox_propagate(g, &ov, &s, &e) == 0) {
        const dt_ox_shape *sh = dt_ox_shape_of(s, t);
        size_t len = (size_t)snprintf(buf, n, sh ? "[" : "(no shape)");
        for (int i = 0; sh && i < sh->rank && len < n - 2; i++) {
            len += (size_t)snprintf(buf + len, n - len, "%s", i ? "," : "");
            len += (size_t)dt_expr_print(sh->dims[i], buf + len, n - len - 2);
        }
        if (sh && len < n - 1)
            snprintf(buf + len, n - len, "]");
    } else {
        fprintf(stderr, "\n%s\n", e.msg);
    }
    for (int i = 0; i < nv; i++)
        dt_domain_free(&v[i].dom);
    dt_ox_shapes_free(s);
    dt_ox_graph_free(g);
    return buf;
}

#define CHECK_DIMS(file, t, want, ...)                                          \
    do {                                                                        \
        char b_[512];                                                           \
        const char *got_ = dims_in(ONNX_DIR file, t, b_, sizeof b_, __VA_ARGS__); \
        if (strcmp(got_, want))                                                 \
            fprintf(stderr, "\n%s: %s is %s, expected %s\n", file, t, got_, want); \
        CU_ASSERT_STRING_EQUAL(got_, want);                                     \
    } while (0)

static void test_fpn_resize(void)
{
    /* the rules' dims: Resize by sizes and by scales [1,1,2,2] */
    CHECK_DIMS("fpn-resize.onnx", "/fpn/Resize_output_0", "[batch,64,(height-1)/2+1,(width-1)/2+1]",
               "batch", 1, 4, "height", 32, 128, "width", 32, 128, NULL);
    CHECK_DIMS("fpn-resize.onnx", "upsampled", "[batch,64,2*((height-1)/2)+2,2*((width-1)/2)+2]",
               "batch", 1, 4, "height", 32, 128, "width", 32, 128, NULL);
    dt_ox_import *imp =
        expect_import(ONNX_DIR "fpn-resize.onnx",
                      VARS("batch=1..4", "height=32..128", "width=32..128"),
                      "conv2d(N=1..4,H=32..128,W=32..128,C=3,K=64,R=3,S=3,stride=2,pad=1,"
                      "epilogue=bias+relu) x1; "
                      "conv2d(N=1..4,H=(height-1)/2+1,W=(width-1)/2+1,C=64,K=128,R=3,S=3,"
                      "stride=2,pad=1,epilogue=bias+relu;height=32..128,width=32..128) x1; "
                      "conv2d(N=1..4,H=(height-1)/2+1,W=(width-1)/2+1,C=64,K=64,R=1,S=1,"
                      "stride=1,pad=0,epilogue=bias;height=32..128,width=32..128) x1; "
                      "conv2d(N=1..4,H=(height-1)/4+1,W=(width-1)/4+1,C=128,K=64,R=1,S=1,"
                      "stride=1,pad=0,epilogue=bias;height=32..128,width=32..128) x1; "
                      "conv2d(N=1..4,H=(height-1)/2+1,W=(width-1)/2+1,C=64,K=64,R=3,S=3,"
                      "stride=1,pad=1,epilogue=bias;height=32..128,width=32..128) x1; "
                      "conv2d(N=1..4,H=(height-1)/4+1,W=(width-1)/4+1,C=64,K=64,R=3,S=3,"
                      "stride=1,pad=1,epilogue=bias;height=32..128,width=32..128) x1; "
                      "dense(M=1..4,N=10,K=64,epilogue=bias) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Resize"), 2);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "Conv"), 0); /* all six are conv2d */
    CU_ASSERT_EQUAL(imp->nnodes, 29);
    dt_ox_import_free(imp);
}

static void test_lstm_encoder(void)
{
    CHECK_DIMS("lstm-encoder.onnx", "/encoder/lstm/LSTM_output_0", "[seq,2,batch,128]", "batch", 1,
               4, "seq", 1, 200, NULL);
    CHECK_DIMS("lstm-encoder.onnx", "h_n", "[2,batch,128]", "batch", 1, 4, "seq", 1, 200, NULL);
    /* the cell: its input projection per direction (x2), its recurrent
     * product 2*seq times (mean 201 over seq=1..200) */
    dt_ox_import *imp = expect_import(
        ONNX_DIR "lstm-encoder.onnx", VARS("batch=1..4", "seq=1..200"),
        "dense(M=batch*seq,N=512,K=80,epilogue=bias;batch=1..4,seq=1..200) x2; "
        "dense(M=1..4,N=512,K=128,epilogue=bias) x201; "
        "dense(M=batch*seq,N=512,K=256,epilogue=bias;batch=1..4,seq=1..200) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LSTM"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, LSTM_GATES), 1);
    CU_ASSERT_EQUAL(imp->ntuned, 2);
    CHECK_SPEC_COUNT(imp, "/encoder/lstm/LSTM~2", "2*(seq)");
    dt_ox_import_free(imp);
}

static void test_gru_if(void)
{
    CHECK_DIMS("gru-if-vad.onnx", "/If_output_0", "[batch,seq,64]", "batch", 1, 4, "seq", 1, 64,
               NULL);
    CHECK_DIMS("gru-if-vad.onnx", "/rnn/GRU_output_0", "[seq,1,batch,64]", "batch", 1, 4, "seq", 1,
               64, NULL);
    CHECK_DIMS("gru-if-vad.onnx", "hn", "[1,batch,64]", "batch", 1, 4, "seq", 1, 64, NULL);
    /* torch's GRU (linear_before_reset=1): one recurrent dense N=3H, seq
     * times (mean 32.5) */
    dt_ox_import *imp = expect_import(
        ONNX_DIR "gru-if-vad.onnx", VARS("batch=1..4", "seq=1..64"),
        "dense(M=batch*seq,N=192,K=64,epilogue=bias;batch=1..4,seq=1..64) x1; "
        "dense(M=1..4,N=192,K=64,epilogue=bias) x32.5; "
        "dense(M=batch*seq,N=32,K=64,epilogue=bias+relu;batch=1..4,seq=1..64) x1; "
        "dense(M=batch*seq,N=1,K=32,epilogue=bias;batch=1..4,seq=1..64) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "If"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GRU"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GRU gates (elementwise)"), 1);
    dt_ox_import_free(imp);
}

static void test_dynamo_gathernd(void)
{
    CHECK_DIMS("dynamo-gathernd.onnx", "/mask/GatherND_output_0", "[seq,512]", "batch", 1, 4, "seq",
               1, 128, NULL);
    CHECK_DIMS("dynamo-gathernd.onnx", "/pool/GatherND_output_0", "[batch,256]", "batch", 1, 4,
               "seq", 1, 128, NULL);
    dt_ox_import *imp = expect_import(
        ONNX_DIR "dynamo-gathernd.onnx", VARS("batch=1..4", "seq=1..128"),
        "dense(M=batch*seq,N=256,K=256,epilogue=bias;batch=1..4,seq=1..128) x4; "
        "batch_matmul(B=4*batch,M=seq,N=seq,K=64,layout=NT;batch=1..4,seq=1..128) x1; "
        "batch_matmul(B=4*batch,M=seq,N=64,K=seq,layout=NN;batch=1..4,seq=1..128) x1; "
        "dense(M=1..4,N=2,K=256,epilogue=bias) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GatherND"), 2);
    dt_ox_import_free(imp);
    /* the causal buffer holds 512 rows: a longer seq cannot be sliced from
     * it, so the import keeps seq=1..512 of 1..1000 and says so, quoting the
     * error over the whole domain (issue 43, point 3: dims that hold for
     * part of a domain) */
    dt_err e;
    imp = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_ox_import_file(ONNX_DIR "dynamo-gathernd.onnx", NULL,
                                            VARS("batch=1", "seq=1..1000"), &imp, &e),
                          0);
    CU_ASSERT_FATAL(imp->nwarnings >= 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->warnings[0], "the model's dims hold only for seq=1..512 "
                                                    "of the given seq=1..1000: imported and "
                                                    "tuned for that part (over the whole "
                                                    "domain: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"seq\": {\"range\": [1, 512]}"));
    dt_ox_import_free(imp);
}

static void test_paddle_ocr(void)
{
    CHECK_DIMS("paddle-ocr-rec.onnx", "lstm_0.tmp_0",
               "[(p2o_DynamicDimension_1-7)/8+1,2,p2o_DynamicDimension_0,48]",
               "p2o_DynamicDimension_0", 1, 4, "p2o_DynamicDimension_1", 32, 320, NULL);
    dt_ox_import *imp = expect_import(
        ONNX_DIR "paddle-ocr-rec.onnx",
        VARS("p2o_DynamicDimension_0=1..4", "p2o_DynamicDimension_1=32..320"),
        "conv2d(N=1..4,H=50,W=p2o_DynamicDimension_1+2,C=3,K=16,R=3,S=3,stride=2,pad=0;"
        "p2o_DynamicDimension_1=32..320) x1; "
        "conv2d(N=1..4,H=12,W=(p2o_DynamicDimension_1-3)/4+1,C=16,K=32,R=3,S=3,stride=1,pad=1;"
        "p2o_DynamicDimension_1=32..320) x1; "
        "dense(M=((p2o_DynamicDimension_1-7)/8+1)*p2o_DynamicDimension_0,N=192,K=32,"
        "epilogue=bias;p2o_DynamicDimension_0=1..4,p2o_DynamicDimension_1=32..320) x2; "
        "dense(M=1..4,N=192,K=48,epilogue=bias) x43.3772; "
        "dense(M=((p2o_DynamicDimension_1-7)/8+1)*p2o_DynamicDimension_0,N=97,K=96,"
        "epilogue=bias;p2o_DynamicDimension_0=1..4,p2o_DynamicDimension_1=32..320) x1");
    /* the steps are the width after the backbone: the count is that expression */
    CHECK_SPEC_COUNT(imp, "lstm_0~2", "2*((p2o_DynamicDimension_1-7)/8+1)");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LSTM"), 0);
    CU_ASSERT_EQUAL(untuned_nodes(imp, LSTM_GATES), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "HardSwish"), 2);
    dt_ox_import_free(imp);
}

/* ---- recurrent cells as workloads (issue 43, point 1; scripts/onnx_models_rnn.py) ---- */

#define BS VARS("batch=1..4", "seq=1..100")

static void test_lstm_bidi_states(void)
{
    /* two directions: the input projection twice, the recurrent product
     * 2*seq times (mean 101 over seq=1..100); the states change nothing */
    dt_ox_import *imp =
        expect_import(ONNX_DIR "lstm-bidi-states.onnx", BS,
                      "dense(M=batch*seq,N=256,K=40,epilogue=bias;batch=1..4,seq=1..100) x2; "
                      "dense(M=1..4,N=256,K=64,epilogue=bias) x101");
    CU_ASSERT_EQUAL(untuned_nodes(imp, LSTM_GATES), 1);
    CU_ASSERT_EQUAL(imp->ntuned, 0); /* the cell is counted in the listing, for its gates */
    CHECK_SPEC_COUNT(imp, "/lstm/LSTM", "2");
    CHECK_SPEC_COUNT(imp, "/lstm/LSTM~2", "2*(seq)");
    CU_ASSERT_PTR_NULL(strstr(untuned_why(imp, LSTM_GATES), "upper bound"));
    dt_ox_import_free(imp);
    /* one value of seq is a constant: a constant count */
    imp = expect_import(ONNX_DIR "lstm-bidi-states.onnx", VARS("batch=1..4", "seq=16"),
                        "dense(M=16*batch,N=256,K=40,epilogue=bias;batch=1..4) x2; "
                        "dense(M=1..4,N=256,K=64,epilogue=bias) x32");
    CHECK_SPEC_COUNT(imp, "/lstm/LSTM~2", "2*(16)");
    dt_ox_import_free(imp);
    /* one step: the recurrent product runs once, like any op */
    imp = expect_import(ONNX_DIR "lstm-bidi-states.onnx", VARS("batch=1..4", "seq=1"),
                        "dense(M=1..4,N=256,K=40,epilogue=bias) x2; "
                        "dense(M=1..4,N=256,K=64,epilogue=bias) x2");
    dt_ox_import_free(imp);
}

static void test_lstm_layout1(void)
{
    /* layout 1 reads [batch, frames, input]; sequence_lens makes the
     * count an upper bound, said in the listing */
    dt_ox_import *imp = expect_import(
        ONNX_DIR "lstm-layout1.onnx", VARS("batch=1..4", "frames=1..100"),
        "dense(M=batch*frames,N=384,K=40,epilogue=bias;batch=1..4,frames=1..100) x1; "
        "dense(M=1..4,N=384,K=96,epilogue=bias) x50.5; "
        "dense(M=1..4,N=12,K=96,epilogue=bias) x1");
    CU_ASSERT_PTR_NOT_NULL(strstr(untuned_why(imp, LSTM_GATES), "upper bound"));
    CHECK_SPEC_COUNT(imp, "/encoder/LSTM~2", "frames");
    dt_ox_import_free(imp);
}

static void test_gru_lbr0(void)
{
    /* linear_before_reset=0: (r ⊙ h)·Rhᵀ needs r first, so the recurrent
     * product is N=2H (z, r) and N=H (on r ⊙ h), both per step */
    dt_ox_import *imp = expect_import(
        ONNX_DIR "gru-lbr0.onnx", VARS("unk__18=1..4", "unk__19=1..100"),
        "dense(M=unk__18*unk__19,N=192,K=32,epilogue=bias;unk__18=1..4,unk__19=1..100) x1; "
        "dense(M=1..4,N=128,K=64,epilogue=bias) x50.5; "
        "dense(M=1..4,N=64,K=64,epilogue=bias) x50.5; "
        "dense(M=unk__18*unk__19,N=10,K=64,epilogue=bias;unk__18=1..4,unk__19=1..100) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GRU gates (elementwise)"), 1);
    CHECK_SPEC_COUNT(imp, "GRU__11~2", "unk__19");
    CHECK_SPEC_COUNT(imp, "GRU__11~3", "unk__19");
    dt_ox_import_free(imp);
}

static void test_gru_bidi(void)
{
    /* torch's GRU: linear_before_reset=1, one recurrent dense N=3H */
    dt_ox_import *imp =
        expect_import(ONNX_DIR "gru-bidi.onnx", BS,
                      "dense(M=batch*seq,N=96,K=64,epilogue=bias;batch=1..4,seq=1..100) x2; "
                      "dense(M=1..4,N=96,K=32,epilogue=bias) x101; "
                      "dense(M=batch*seq,N=8,K=64,epilogue=bias;batch=1..4,seq=1..100) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GRU gates (elementwise)"), 1);
    dt_ox_import_free(imp);
}

static void test_rnn_tanh(void)
{
    dt_ox_import *imp =
        expect_import(ONNX_DIR "rnn-tanh.onnx", BS,
                      "dense(M=batch*seq,N=48,K=32,epilogue=bias;batch=1..4,seq=1..100) x1; "
                      "dense(M=1..4,N=48,K=48,epilogue=bias) x50.5; "
                      "dense(M=batch*seq,N=5,K=48,epilogue=bias;batch=1..4,seq=1..100) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "RNN gates (elementwise)"), 1);
    dt_ox_import_free(imp);
}

static void test_lstm_stacked(void)
{
    /* two layers: the second projects H=128 inputs; both recurrent
     * products are one workload run 2*seq times */
    dt_ox_import *imp =
        expect_import(ONNX_DIR "lstm-stacked.onnx", BS,
                      "dense(M=batch*seq,N=512,K=80,epilogue=bias;batch=1..4,seq=1..100) x1; "
                      "dense(M=1..4,N=512,K=128,epilogue=bias) x101; "
                      "dense(M=batch*seq,N=512,K=128,epilogue=bias;batch=1..4,seq=1..100) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, LSTM_GATES), 2);
    CHECK_SPEC_COUNT(imp, "/lstm/LSTM~2", "2*(seq)");
    CHECK_SPEC_COUNT(imp, "/lstm/LSTM_1", "1");
    dt_ox_import_free(imp);
}

static void test_lstm_int8(void)
{
    /* DynamicQuantizeLSTM: u8 activations (quantized per product) x s8
     * weights with per-channel scales: int8; its shapes from its own rule
     * (the LSTM's, with W and R transposed) */
    const char *gates = "com.microsoft.DynamicQuantizeLSTM gates (elementwise)";
    dt_ox_import *imp = expect_import(
        ONNX_DIR "lstm-int8-dynamic.onnx", BS,
        "dense(M=batch*seq,N=512,K=80,epilogue=bias,dtype=int8;batch=1..4,seq=1..100) x1; "
        "dense(M=1..4,N=512,K=128,epilogue=bias,dtype=int8) x50.5; "
        "dense(M=batch*seq,N=256,K=128,epilogue=bias,dtype=int8;batch=1..4,seq=1..100) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, gates), 1);
    CU_ASSERT_PTR_NULL(strstr(untuned_why(imp, gates), "shapes"));
    CU_ASSERT_EQUAL(imp->ntuned, 6); /* the MatMulInteger pattern */
    dt_ox_import_free(imp);
    /* no value_info for its outputs: the rule gives them (before it had
     * one, "shapes unknown"); the products come from X, W and R */
    imp = expect_import(
        ONNX_DIR "lstm-int8-bare.onnx", BS,
        "dense(M=batch*seq,N=512,K=80,epilogue=bias,dtype=int8;batch=1..4,seq=1..100) x1; "
        "dense(M=1..4,N=512,K=128,epilogue=bias,dtype=int8) x50.5");
    CU_ASSERT_PTR_NULL(strstr(untuned_why(imp, gates), "shapes"));
    dt_ox_import_free(imp);
}

static void test_rnn_listed(void)
{
    /* weights fed at run time, float16: each cell listed once with why */
    dt_ox_import *imp =
        expect_import(ONNX_DIR "rnn-listed.onnx", BS,
                      "dense(M=batch*seq,N=4,K=32,epilogue=bias;batch=1..4,seq=1..100) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LSTM"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GRU"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, LSTM_GATES), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(untuned_why(imp, "LSTM"), "W is not a constant"));
    CU_ASSERT_PTR_NOT_NULL(strstr(untuned_why(imp, "GRU"), "float16 operands"));
    dt_ox_import_free(imp);
}

/* ---- the lowering against the ONNX equations, in double ----
 *
 * One direction of each cell over NT steps with random weights, biases,
 * peepholes and initial states, computed twice: directly by the operator
 * definitions (per-gate blocks of W, R, B and P taken in the documented
 * order: LSTM i,o,f,c; GRU z,r,h; B = [Wb, Rb]; P = [Pi, Po, Pf]), and
 * through dtune's lowering: each product of dt_ox_rnn_products as a dense
 * y = a·w[rows]ᵀ + B[bias0·H ..] (the 'x' one once over all NT·NB rows,
 * the others per step), then the gates' elementwise part on the sums.  The
 * two must agree to rounding: which bias each product fuses, which rows it
 * takes, and the GRU split are what is checked. */

#define NT 3
#define NB 2
#define NI 5
#define NH 4

typedef struct {
    int gates;
    double w[4 * NH][NI], r[4 * NH][NH], b[8 * NH], p[3 * NH];
    double x[NT][NB][NI], h0[NB][NH], c0[NB][NH];
} cell_data;

static double rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (double)((*s >> 9) & 0xffff) / 65536.0 - 0.5;
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

static void fill(cell_data *d, int gates, unsigned seed)
{
    memset(d, 0, sizeof *d);
    d->gates = gates;
    double *all[] = {&d->w[0][0], &d->r[0][0], d->b, d->p, &d->x[0][0][0], &d->h0[0][0],
                     &d->c0[0][0]};
    size_t n[] = {4 * NH * NI, 4 * NH * NH, 8 * NH, 3 * NH, NT * NB * NI, NB * NH, NB * NH};
    for (size_t k = 0; k < sizeof n / sizeof n[0]; k++)
        for (size_t j = 0; j < n[k]; j++)
            all[k][j] = 2 * rnd(&seed);
}

/* Row j of gate g of w (K columns) · v. */
static double dotw(const double *w, int k, int g, int j, const double *v)
{
    double s = 0;
    for (int i = 0; i < k; i++)
        s += w[(size_t)(g * NH + j) * (size_t)k + (size_t)i] * v[i];
    return s;
}

/* The ONNX definitions: Y (every step's H) into y, the last C into c. */
static void direct(const cell_data *d, int lbr, double y[NT][NB][NH], double c[NB][NH])
{
    double h[NB][NH], cc[NB][NH];
    memcpy(h, d->h0, sizeof h);
    memcpy(cc, d->c0, sizeof cc);
    const double *wb = d->b, *rb = d->b + d->gates * NH;
    for (int t = 0; t < NT; t++) {
        double hn[NB][NH], cn[NB][NH];
        for (int b = 0; b < NB; b++)
            for (int j = 0; j < NH; j++) {
                const double *xt = d->x[t][b], *hp = h[b];
#define XW(g) (dotw(&d->w[0][0], NI, g, j, xt) + wb[(g) * NH + j])
#define HR(g) (dotw(&d->r[0][0], NH, g, j, hp) + rb[(g) * NH + j])
                if (d->gates == 4) { /* i, o, f, c; peepholes Pi, Po, Pf */
                    double it = sigm(XW(0) + HR(0) + d->p[j] * cc[b][j]);
                    double ft = sigm(XW(2) + HR(2) + d->p[2 * NH + j] * cc[b][j]);
                    double ct = tanh(XW(3) + HR(3));
                    cn[b][j] = ft * cc[b][j] + it * ct;
                    double ot = sigm(XW(1) + HR(1) + d->p[NH + j] * cn[b][j]);
                    hn[b][j] = ot * tanh(cn[b][j]);
                } else if (d->gates == 3) { /* z, r, h */
                    double zt = sigm(XW(0) + HR(0)), ht;
                    if (lbr) {
                        double rt = sigm(XW(1) + HR(1));
                        ht = tanh(XW(2) + rt * HR(2));
                    } else {
                        /* (r ⊙ h_{t-1})·Rhᵀ + Rbh: r of every hidden unit first */
                        double rh[NH];
                        for (int q = 0; q < NH; q++) {
                            double xw = dotw(&d->w[0][0], NI, 1, q, xt) + wb[NH + q];
                            double hr = dotw(&d->r[0][0], NH, 1, q, hp) + rb[NH + q];
                            rh[q] = sigm(xw + hr) * hp[q];
                        }
                        ht = tanh(XW(2) + dotw(&d->r[0][0], NH, 2, j, rh) + rb[2 * NH + j]);
                    }
                    hn[b][j] = (1 - zt) * ht + zt * hp[j];
                } else {
                    hn[b][j] = tanh(XW(0) + HR(0));
                }
#undef XW
#undef HR
            }
        memcpy(h, hn, sizeof h);
        if (d->gates == 4)
            memcpy(cc, cn, sizeof cc);
        memcpy(y[t], h, sizeof h);
    }
    memcpy(c, cc, sizeof cc);
}

/* A dense as dtune runs it: out[m][n] = a[m]·w[row0 + n]ᵀ + bias[n], a [M, K]. */
static void dense_ref(const double *a, int m, int k, const double *w, int row0, int n,
                      const double *bias, double *out)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = bias[j];
            for (int q = 0; q < k; q++)
                s += a[(size_t)i * (size_t)k + (size_t)q] *
                     w[(size_t)(row0 + j) * (size_t)k + (size_t)q];
            out[(size_t)i * (size_t)n + (size_t)j] = s;
        }
}

/* Through the lowering: the products' sums per gate, then the gates. */
static void lowered(const cell_data *d, int lbr, double y[NT][NB][NH], double c[NB][NH])
{
    dt_ox_rnn_product p[DT_OX_RNN_MAX_PRODUCTS];
    int np = dt_ox_rnn_products(d->gates, d->gates == 3 && !lbr, p);
    int G = d->gates;
    /* each operand's contribution to each gate column: [x | h | r][row][G·H] */
    static double xall[NT * NB][4 * NH];
    double hsum[NB][4 * NH], rsum[NB][4 * NH], out[NB * 4 * NH];
    memset(xall, 0, sizeof xall);
    for (int k = 0; k < np; k++)
        if (p[k].a == 'x') { /* one dense over all steps: X as [NT·NB, NI] */
            static double o[NT * NB * 4 * NH];
            CU_ASSERT_EQUAL(p[k].w, 'W');
            dense_ref(&d->x[0][0][0], NT * NB, NI, &d->w[0][0], p[k].gate0 * NH, p[k].ngates * NH,
                      d->b + p[k].bias0 * NH, o);
            for (int m = 0; m < NT * NB; m++)
                for (int n = 0; n < p[k].ngates * NH; n++)
                    xall[m][p[k].gate0 * NH + n] += o[m * p[k].ngates * NH + n];
        }
    double h[NB][NH], cc[NB][NH];
    memcpy(h, d->h0, sizeof h);
    memcpy(cc, d->c0, sizeof cc);
    for (int t = 0; t < NT; t++) {
        memset(hsum, 0, sizeof hsum);
        memset(rsum, 0, sizeof rsum);
        for (int k = 0; k < np; k++)
            if (p[k].a == 'h') {
                CU_ASSERT_EQUAL(p[k].w, 'R');
                dense_ref(&h[0][0], NB, NH, &d->r[0][0], p[k].gate0 * NH, p[k].ngates * NH,
                          d->b + p[k].bias0 * NH, out);
                for (int b = 0; b < NB; b++)
                    for (int n = 0; n < p[k].ngates * NH; n++)
                        hsum[b][p[k].gate0 * NH + n] += out[b * p[k].ngates * NH + n];
            }
        double pre[NB][4 * NH];
        for (int b = 0; b < NB; b++)
            for (int n = 0; n < G * NH; n++)
                pre[b][n] = xall[t * NB + b][n] + hsum[b][n];
        double hn[NB][NH];
        if (G == 3) {
            double z[NB][NH], r[NB][NH], rh[NB][NH];
            for (int b = 0; b < NB; b++)
                for (int j = 0; j < NH; j++) {
                    z[b][j] = sigm(pre[b][j]);
                    r[b][j] = sigm(pre[b][NH + j]);
                    rh[b][j] = r[b][j] * h[b][j];
                }
            int split = 0;
            for (int k = 0; k < np; k++)
                if (p[k].a == 'r') { /* after z, r: the dense on r ⊙ h */
                    split = 1;
                    dense_ref(&rh[0][0], NB, NH, &d->r[0][0], p[k].gate0 * NH,
                              p[k].ngates * NH, d->b + p[k].bias0 * NH, out);
                    for (int b = 0; b < NB; b++)
                        for (int n = 0; n < p[k].ngates * NH; n++)
                            rsum[b][p[k].gate0 * NH + n] += out[b * p[k].ngates * NH + n];
                }
            for (int b = 0; b < NB; b++)
                for (int j = 0; j < NH; j++) {
                    double xh = xall[t * NB + b][2 * NH + j];
                    double ht = split ? tanh(xh + rsum[b][2 * NH + j])
                                      : tanh(xh + r[b][j] * hsum[b][2 * NH + j]);
                    hn[b][j] = (1 - z[b][j]) * ht + z[b][j] * h[b][j];
                }
        } else {
            for (int b = 0; b < NB; b++)
                for (int j = 0; j < NH; j++) {
                    if (G == 1) {
                        hn[b][j] = tanh(pre[b][j]);
                        continue;
                    }
                    double it = sigm(pre[b][j] + d->p[j] * cc[b][j]);
                    double ft = sigm(pre[b][2 * NH + j] + d->p[2 * NH + j] * cc[b][j]);
                    double ct = tanh(pre[b][3 * NH + j]);
                    cc[b][j] = ft * cc[b][j] + it * ct;
                    double ot = sigm(pre[b][NH + j] + d->p[NH + j] * cc[b][j]);
                    hn[b][j] = ot * tanh(cc[b][j]);
                }
        }
        memcpy(h, hn, sizeof h);
        memcpy(y[t], h, sizeof h);
    }
    memcpy(c, cc, sizeof cc);
}

static void test_lowering_numeric(void)
{
    static const struct {
        int gates, lbr;
        const char *what;
    } cells[] = {{4, 0, "LSTM"}, {3, 0, "GRU lbr=0"}, {3, 1, "GRU lbr=1"}, {1, 0, "RNN"}};
    for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++)
        for (unsigned seed = 1; seed <= 5; seed++) {
            cell_data d;
            fill(&d, cells[k].gates, seed * 7919u + (unsigned)k);
            double y1[NT][NB][NH], y2[NT][NB][NH], c1[NB][NH], c2[NB][NH];
            direct(&d, cells[k].lbr, y1, c1);
            lowered(&d, cells[k].lbr, y2, c2);
            double err = 0, mag = 0;
            for (int t = 0; t < NT; t++)
                for (int b = 0; b < NB; b++)
                    for (int j = 0; j < NH; j++) {
                        err = fmax(err, fabs(y1[t][b][j] - y2[t][b][j]));
                        mag = fmax(mag, fabs(y1[t][b][j]));
                    }
            for (int b = 0; b < NB; b++)
                for (int j = 0; j < NH; j++)
                    err = fmax(err, fabs(c1[b][j] - c2[b][j]));
            if (err > 1e-12)
                fprintf(stderr, "\n%s seed %u: the lowering differs by %g\n", cells[k].what, seed,
                        err);
            CU_ASSERT(err <= 1e-12);
            CU_ASSERT(mag > 0.05); /* not a trivially saturated or zero cell */
        }
    /* and a wrong lowering is caught: the GRU lbr=0 cell lowered as lbr=1 */
    cell_data d;
    fill(&d, 3, 12345u);
    double y1[NT][NB][NH], y2[NT][NB][NH], c1[NB][NH], c2[NB][NH];
    direct(&d, 0, y1, c1);
    lowered(&d, 1, y2, c2);
    CU_ASSERT(fabs(y1[NT - 1][0][0] - y2[NT - 1][0][0]) > 1e-6);
}

/* ---- the real binary ---- */

/* The workload of key in `dtune workloads --json`'s output, or NULL. */
static json_t *workload_of(json_t *root, const char *key)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(root, "workloads"), i, w) {
        const char *k = json_string_value(json_object_get(w, "key"));
        if (k && !strcmp(k, key))
            return w;
    }
    return NULL;
}

static void test_e2e_workloads(void)
{
    int code;
    json_t *root = dt_test_run_dtune_json(
        &code, "workloads " ONNX_DIR "lstm-stacked.onnx --var batch=1..4 --var seq=1..100 --json");
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    /* the two layers' recurrent products, 2*seq times: mean 101 */
    json_t *w = workload_of(root, "dense(M=1..4,N=512,K=128,epilogue=bias)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(w, "count")), 101.0, 1e-9);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(json_object_get(w, "ops"), 0)),
                           "/lstm/LSTM~2");
    w = workload_of(root, "dense(M=batch*seq,N=512,K=80,epilogue=bias;batch=1..4,seq=1..100)");
    CU_ASSERT_PTR_NOT_NULL(w);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(w, "count")), 1.0, 1e-9);
    /* every GEMM-like node's work is in tuned ops */
    json_t *cov = json_object_get(json_object_get(root, "onnx"), "coverage");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(cov, "untuned_gemm")), 0);
    json_decref(root);

    root = dt_test_run_dtune_json(&code, "workloads " ONNX_DIR
                                  "gru-lbr0.onnx --var unk__18=1..4 --var unk__19=1..100 --json");
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    w = workload_of(root, "dense(M=1..4,N=64,K=64,epilogue=bias)");
    CU_ASSERT_PTR_NOT_NULL(w);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(w, "count")), 50.5, 1e-9);
    json_decref(root);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"fpn-resize.onnx: Resize by sizes and scales (torchvision FPN)", test_fpn_resize},
        {"lstm-encoder.onnx: bidirectional LSTM + projection (torch)", test_lstm_encoder},
        {"gru-if-vad.onnx: If from value_info, GRU, MLP (silero-vad style)", test_gru_if},
        {"dynamo-gathernd.onnx: GatherND masks and pooling (torch dynamo)", test_dynamo_gathernd},
        {"paddle-ocr-rec.onnx: CRNN with HardSwish, LSTM (paddle2onnx)", test_paddle_ocr},
        {"lstm-bidi-states.onnx: bidirectional LSTM with (h0, c0), counts", test_lstm_bidi_states},
        {"lstm-layout1.onnx: layout 1, reverse, sequence_lens (an upper bound)", test_lstm_layout1},
        {"gru-lbr0.onnx: GRU linear_before_reset=0 split in two (tf2onnx)", test_gru_lbr0},
        {"gru-bidi.onnx: bidirectional GRU linear_before_reset=1 (torch)", test_gru_bidi},
        {"rnn-tanh.onnx: RNN (torch)", test_rnn_tanh},
        {"lstm-stacked.onnx: 2-layer LSTM, the layers' recurrent products merged",
         test_lstm_stacked},
        {"lstm-int8-*.onnx: DynamicQuantizeLSTM as int8, with and without shapes", test_lstm_int8},
        {"rnn-listed.onnx: weights as inputs, float16: listed with why", test_rnn_listed},
        {"the lowering against the LSTM/GRU/RNN equations (double)", test_lowering_numeric},
        {"dtune workloads --json: recurrent counts (real binary)", test_e2e_workloads},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"onnx_shape_rnn", NULL, NULL, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
