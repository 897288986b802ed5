/* onnx: the test models of issue 30's shape rules (scripts/onnx_models_rules.py,
 * tests/data/onnx/README.md) imported whole: Resize in a torchvision FPN,
 * a bidirectional LSTM encoder, If + GRU voice activity, GatherND masks of
 * the dynamo exporter, a paddle2onnx CRNN; each gives its MatMul/Gemm
 * workloads and counts every node. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/graph.h"
#include "onnx/import.h"
#include "onnx/shape.h"
#include "sketch/model.h"
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
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s x%lld", i ? "; " : "",
                                m->workloads[i].key, (long long)m->workloads[i].count);
    if (strcmp(got, want))
        fprintf(stderr, "\nworkloads: %s\nexpected:  %s\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    dt_model_free(m);
    return imp;
}

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
    dt_ox_import *imp = expect_import(
        ONNX_DIR "lstm-encoder.onnx", VARS("batch=1..4", "seq=1..200"),
        "dense(M=batch*seq,N=512,K=256,epilogue=bias;batch=1..4,seq=1..200) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LSTM"), 1);
    CU_ASSERT_EQUAL(imp->ntuned, 2);
    dt_ox_import_free(imp);
}

static void test_gru_if(void)
{
    CHECK_DIMS("gru-if-vad.onnx", "/If_output_0", "[batch,seq,64]", "batch", 1, 4, "seq", 1, 64,
               NULL);
    CHECK_DIMS("gru-if-vad.onnx", "/rnn/GRU_output_0", "[seq,1,batch,64]", "batch", 1, 4, "seq", 1,
               64, NULL);
    CHECK_DIMS("gru-if-vad.onnx", "hn", "[1,batch,64]", "batch", 1, 4, "seq", 1, 64, NULL);
    dt_ox_import *imp = expect_import(
        ONNX_DIR "gru-if-vad.onnx", VARS("batch=1..4", "seq=1..64"),
        "dense(M=batch*seq,N=32,K=64,epilogue=bias+relu;batch=1..4,seq=1..64) x1; "
        "dense(M=batch*seq,N=1,K=32,epilogue=bias;batch=1..4,seq=1..64) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "If"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "GRU"), 1);
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
    /* the causal buffer holds 512 rows: a longer seq cannot be sliced from it */
    dt_err e;
    imp = NULL;
    CU_ASSERT_NOT_EQUAL(dt_ox_import_file(ONNX_DIR "dynamo-gathernd.onnx", NULL,
                                          VARS("batch=1", "seq=1..1000"), &imp, &e),
                        0);
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
        "dense(M=((p2o_DynamicDimension_1-7)/8+1)*p2o_DynamicDimension_0,N=97,K=96,"
        "epilogue=bias;p2o_DynamicDimension_0=1..4,p2o_DynamicDimension_1=32..320) x1");
    CU_ASSERT_EQUAL(untuned_nodes(imp, "LSTM"), 1);
    CU_ASSERT_EQUAL(untuned_nodes(imp, "HardSwish"), 2);
    dt_ox_import_free(imp);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"fpn-resize.onnx: Resize by sizes and scales (torchvision FPN)", test_fpn_resize},
        {"lstm-encoder.onnx: bidirectional LSTM + projection (torch)", test_lstm_encoder},
        {"gru-if-vad.onnx: If from value_info, GRU, MLP (silero-vad style)", test_gru_if},
        {"dynamo-gathernd.onnx: GatherND masks and pooling (torch dynamo)", test_dynamo_gathernd},
        {"paddle-ocr-rec.onnx: CRNN with HardSwish, LSTM (paddle2onnx)", test_paddle_ocr},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"onnx_shape_rnn", NULL, NULL, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
