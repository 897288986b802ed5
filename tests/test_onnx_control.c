/* onnx: subgraphs (issue 43, point 2; scripts/onnx_models_control.py,
 * tests/data/onnx/README.md).  The bodies of If, Loop and Scan are read
 * into the graph: their GEMMs become workloads, named by their paths and
 * counted as often as their bodies run (a Loop's trip count, a Scan's
 * length, both branches of an If once each); --branch drops an If's branch;
 * an If whose condition is known from the shapes takes its branch's
 * outputs; hostile files are refused with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import.h"
#include "shape/model.h"
#include "tests/dt_test.h"

#define ONNX_DIR DTUNE_SOURCE_DIR "/tests/data/onnx/"

#define VARS(...)                    \
    ((const char *[]){__VA_ARGS__}), \
        (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))
#define NO_BRANCH NULL, 0

/* The untuned entry of kind what (its first), or NULL. */
static const dt_ox_untuned *untuned(const dt_ox_import *imp, const char *what)
{
    for (int i = 0; i < imp->nuntuned; i++)
        if (!strcmp(imp->untuned[i].what, what))
            return &imp->untuned[i];
    return NULL;
}

/* Imports file with the --branch args; its workloads as "key xN; ..." must
 * be want, every node tuned or listed once, every GEMM-like node's work in
 * tuned ops; the import is returned for more checks. */
static dt_ox_import *expect_import(const char *file, const char *const *vars, int nvars,
                                   const char *const *branches, int nbranches, const char *want)
{
    dt_err e;
    dt_ox_import *imp = NULL;
    int rc = dt_ox_import_file_branches(file, NULL, vars, nvars, branches, nbranches, &imp, &e);
    if (rc)
        fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    int64_t sum = 0;
    for (int i = 0; i < imp->nuntuned; i++)
        sum += imp->untuned[i].nodes;
    CU_ASSERT_EQUAL(imp->nnodes, imp->ntuned + sum);
    CU_ASSERT_EQUAL(imp->coverage.nleft, 0);
    CU_ASSERT_EQUAL(imp->coverage.nuncounted, 0);
    CU_ASSERT_DOUBLE_EQUAL(imp->coverage.tuned_gflop[0], imp->coverage.gflop[0],
                           1e-9 * imp->coverage.gflop[0]);
    dt_model *m = NULL;
    rc = dt_model_parse(imp->spec_json, strlen(imp->spec_json), "imported", &m, &e);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char got[8192];
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

static void expect_error(const char *file, const char *const *vars, int nvars,
                         const char *const *branches, int nbranches, const char *part1,
                         const char *part2)
{
    dt_err e;
    dt_ox_import *imp = NULL;
    int rc = dt_ox_import_file_branches(file, NULL, vars, nvars, branches, nbranches, &imp, &e);
    CU_ASSERT_EQUAL(rc, DT_EINVAL);
    CU_ASSERT_PTR_NULL(imp);
    if (rc == DT_EINVAL) {
        int ok = strstr(e.msg, part1) && (!part2 || strstr(e.msg, part2));
        if (!ok)
            fprintf(stderr, "\nmessage: %s\nwanted:  %s%s%s\n", e.msg, part1,
                    part2 ? " ... " : "", part2 ? part2 : "");
        CU_ASSERT(ok);
    }
    dt_ox_import_free(imp);
}

#define SILERO_VARS VARS("batch=1..4", "samples=512..4096:512")
#define SR_THEN                                                                                   \
    "conv2d(N=1..4,H=1,W=samples+64,C=1,K=258,R=1,S=256,stride=128,pad=0;"                      \
    "samples=512..4096:512) x1; "                                                                 \
    "conv2d(N=1..4,H=1,W=(samples-192)/128+1,C=129,K=128,R=1,S=3,stride=1,pad=0,"               \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "conv2d(N=1..4,H=1,W=(samples-192)/128+1,C=128,K=64,R=1,S=3,stride=2,pad=0,"                \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "conv2d(N=1..4,H=1,W=(samples-192)/256+1,C=64,K=64,R=1,S=3,stride=2,pad=0,"                 \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "conv2d(N=1..4,H=1,W=(samples-192)/512+1,C=64,K=128,R=1,S=3,stride=1,pad=0,"                \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "dense(M=((samples-192)/512+1)*batch,N=512,K=128,epilogue=bias;batch=1..4,"                 \
    "samples=512..4096:512) x1; "
#define SR_THEN_TAIL                                                                              \
    "conv2d(N=1..4,H=1,W=(samples-192)/512+1,C=128,K=1,R=1,S=1,stride=1,pad=0,epilogue=bias;"   \
    "samples=512..4096:512) x1"
#define SR_ELSE                                                                                   \
    "conv2d(N=1..4,H=1,W=samples+32,C=1,K=130,R=1,S=128,stride=64,pad=0;"                       \
    "samples=512..4096:512) x1; "                                                                 \
    "conv2d(N=1..4,H=1,W=(samples-96)/64+1,C=65,K=128,R=1,S=3,stride=1,pad=0,"                  \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "conv2d(N=1..4,H=1,W=(samples-96)/64+1,C=128,K=64,R=1,S=3,stride=2,pad=0,"                  \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "conv2d(N=1..4,H=1,W=(samples-96)/128+1,C=64,K=64,R=1,S=3,stride=2,pad=0,"                  \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "conv2d(N=1..4,H=1,W=(samples-96)/256+1,C=64,K=128,R=1,S=3,stride=1,pad=0,"                 \
    "epilogue=bias+relu,pad_w=1;samples=512..4096:512) x1; "                                              \
    "dense(M=((samples-96)/256+1)*batch,N=512,K=128,epilogue=bias;batch=1..4,"                  \
    "samples=512..4096:512) x1; "
#define SR_ELSE_TAIL                                                                              \
    "conv2d(N=1..4,H=1,W=(samples-96)/256+1,C=128,K=1,R=1,S=1,stride=1,pad=0,epilogue=bias;"    \
    "samples=512..4096:512) x1"

/* silero-vad-if.onnx: every convolution and the LSTM sit inside If(sr ==
 * 16000).  Both branches are tuned, each counted once; the LSTM's
 * recurrent product runs T times per branch (T = frames: 1..8 at 16 kHz,
 * 2..16 at 8 kHz over samples 512..4096:512, means 4.5 + 9 = 13.5, one
 * workload for both); every name carries its branch's path. */
static void test_silero_if_both(void)
{
    dt_ox_import *imp =
        expect_import(ONNX_DIR "silero-vad-if.onnx", SILERO_VARS, NO_BRANCH,
                      SR_THEN "dense(M=1..4,N=512,K=128,epilogue=bias) x13.5; " SR_THEN_TAIL
                              "; " SR_ELSE SR_ELSE_TAIL);
    const dt_ox_untuned *u = untuned(imp, "If");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_EQUAL(u->nodes, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "holds then_branch (43 nodes) and else_branch "
                                          "(43 nodes), each counted once"));
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"/If/then_branch/stft/Conv\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"/If/else_branch/stft/Conv_1\""));
    dt_ox_import_free(imp);
}

/* --branch /If=then keeps the 16 kHz model alone (its recurrent product
 * 4.5 times on average), /If=else the 8 kHz one (9 times); the If's entry
 * says which was taken. */
static void test_silero_if_branch(void)
{
    dt_ox_import *imp =
        expect_import(ONNX_DIR "silero-vad-if.onnx", SILERO_VARS, VARS("/If=then"),
                      SR_THEN "dense(M=1..4,N=512,K=128,epilogue=bias) x4.5; " SR_THEN_TAIL);
    const dt_ox_untuned *u = untuned(imp, "If");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "holds then_branch (43 nodes), taken (--branch); "
                                          "else_branch (43 nodes) not taken, dropped"));
    CU_ASSERT_PTR_NULL(strstr(imp->spec_json, "else_branch"));
    dt_ox_import_free(imp);
    imp = expect_import(ONNX_DIR "silero-vad-if.onnx", SILERO_VARS, VARS("/If=else"),
                        SR_ELSE "dense(M=1..4,N=512,K=128,epilogue=bias) x9; " SR_ELSE_TAIL);
    CU_ASSERT_PTR_NULL(strstr(imp->spec_json, "then_branch"));
    dt_ox_import_free(imp);
    /* both: the same as no --branch */
    imp = expect_import(ONNX_DIR "silero-vad-if.onnx", SILERO_VARS, VARS("/If=both"),
                        SR_THEN "dense(M=1..4,N=512,K=128,epilogue=bias) x13.5; " SR_THEN_TAIL
                                "; " SR_ELSE SR_ELSE_TAIL);
    dt_ox_import_free(imp);
}

/* Malformed --branch values, names no If has, a name given twice. */
static void test_branch_errors(void)
{
    const char *f = ONNX_DIR "silero-vad-if.onnx";
    expect_error(f, SILERO_VARS, VARS("/Nope=then"), "/Nope", "/If");
    expect_error(f, SILERO_VARS, VARS("/If=maybe"), "maybe", "then");
    expect_error(f, SILERO_VARS, VARS("/If"), "/If", NULL);
    expect_error(f, SILERO_VARS, VARS("=then"), "=then", NULL);
    expect_error(f, SILERO_VARS, VARS("/If=then", "/If=else"), "/If", "already given");
    /* a model without If */
    expect_error(ONNX_DIR "loop-const-matmul.onnx", VARS("batch=1..4"), VARS("/If=then"), "/If",
                 NULL);
}

/* Loops: a constant trip count (4), one from x.size(1) (seq), a while loop
 * (not known: counted once, said why), an If inside a Loop's body (each
 * branch as often as the Loop runs); a Scan over the time axis. */
static void test_loops_and_scan(void)
{
    dt_ox_import *imp = expect_import(ONNX_DIR "loop-const-matmul.onnx", VARS("batch=1..4"),
                                      NO_BRANCH,
                                      "dense(M=1..4,N=64,K=64,epilogue=bias+relu) x4; "
                                      "dense(M=1..4,N=10,K=64,epilogue=bias) x1");
    const dt_ox_untuned *u = untuned(imp, "Loop");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "holds body (3 nodes), run 4 times"));
    dt_ox_import_free(imp);

    /* two MatMuls per step, seq steps: 2 x mean(1..64) = 65 */
    imp = expect_import(ONNX_DIR "loop-seq-rnn.onnx", VARS("batch=1..4", "seq=1..64"), NO_BRANCH,
                        "dense(M=1..4,N=64,K=64) x65; dense(M=1..4,N=8,K=64) x1");
    CU_ASSERT_PTR_NOT_NULL_FATAL((u = untuned(imp, "Loop")));
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "run seq times"));
    dt_ox_import_free(imp);

    imp = expect_import(ONNX_DIR "scan-rnn.onnx", VARS("unk__6=1..4", "unk__7=1..64"), NO_BRANCH,
                        "dense(M=1..4,N=64,K=64,epilogue=bias) x32.5; "
                        "dense(M=1..4,N=64,K=64) x32.5; "
                        "dense(M=unk__6*unk__7,N=10,K=64,epilogue=bias;unk__6=1..4,"
                        "unk__7=1..64) x1");
    CU_ASSERT_PTR_NOT_NULL_FATAL((u = untuned(imp, "Scan")));
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "run unk__7 times"));
    dt_ox_import_free(imp);

    imp = expect_import(ONNX_DIR "loop-while.onnx", VARS("batch=1..4"), NO_BRANCH,
                        "dense(M=1..4,N=64,K=64,epilogue=bias) x1");
    CU_ASSERT_PTR_NOT_NULL_FATAL((u = untuned(imp, "Loop")));
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "counted once: its trip count M is INT64_MAX: it "
                                          "runs while its condition holds"));
    dt_ox_import_free(imp);

    imp = expect_import(ONNX_DIR "loop-if-nested.onnx", VARS("batch=1..4"), NO_BRANCH,
                        "dense(M=1..4,N=64,K=64,epilogue=bias) x3; "
                        "dense(M=1..4,N=64,K=64,epilogue=bias+relu) x3");
    CU_ASSERT_PTR_NOT_NULL_FATAL((u = untuned(imp, "If")));
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "each counted 3 times (as the If runs)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(imp->spec_json, "\"/Loop/body/If/then_branch/a/Gemm\""));
    dt_ox_import_free(imp);
    /* the nested If named by its path */
    imp = expect_import(ONNX_DIR "loop-if-nested.onnx", VARS("batch=1..4"),
                        VARS("/Loop/body/If=else"),
                        "dense(M=1..4,N=64,K=64,epilogue=bias+relu) x3");
    dt_ox_import_free(imp);
}

/* lstm-if-rank.onnx: torch's `if x.dim() == 2` around an LSTM; the
 * branches disagree in rank, but the condition is known from x's shape
 * (false): the If's output is the else_branch's and the LSTM is tuned.
 * Before, its X was unknown and the LSTM not counted.  The second If
 * (`output.squeeze(1)` when unbatched) would fail in its then_branch
 * (batch is not 1): a branch that never runs warns of nothing. */
static void test_if_known_condition(void)
{
    dt_ox_import *imp =
        expect_import(ONNX_DIR "lstm-if-rank.onnx", VARS("seq=1..32", "batch=1..4"), NO_BRANCH,
                      "dense(M=batch*seq,N=256,K=64,epilogue=bias;batch=1..4,seq=1..32) x1; "
                      "dense(M=1..4,N=256,K=64,epilogue=bias) x16.5; "
                      "dense(M=1..4,N=8,K=64,epilogue=bias) x1");
    const dt_ox_untuned *u = untuned(imp, "If");
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL(strstr(u->why, "its condition is always false: only else_branch "
                                          "runs (--branch /If=else)"));
    CU_ASSERT_PTR_NULL(untuned(imp, "LSTM"));
    CU_ASSERT_EQUAL(imp->nwarnings, 0);
    for (int i = 0; i < imp->nwarnings; i++)
        fprintf(stderr, "\n  warning: %s\n", imp->warnings[i]);
    dt_ox_import_free(imp);
}

static void test_hostile_files(void)
{
    expect_error(ONNX_DIR "bad-if-undefined.onnx", VARS("batch=1..4"), NO_BRANCH,
                 "'/If/then_branch/Add'", "input 'ghost' is produced by no node");
    expect_error(ONNX_DIR "bad-nested-too-deep.onnx", NULL, 0, NO_BRANCH,
                 "nested more than 8 deep", "9 levels");
    expect_error(ONNX_DIR "bad-loop-body-inputs.onnx", VARS("batch=1..4"), NO_BRANCH,
                 "its body has 2 inputs", "needs 3");
}

/* The real binary: --branch on workloads and tune's argument checks. */
static void test_e2e_branch(void)
{
    int code;
    json_t *root = dt_test_run_dtune_json(
        &code, "workloads " ONNX_DIR "silero-vad-if.onnx --var batch=1..4 "
               "--var samples=512..4096:512 --branch /If=else --json");
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(root, "workloads")), 8);
    json_decref(root);
    dt_test_proc p;
    code = dt_test_run_dtune(&p, "workloads " ONNX_DIR "silero-vad-if.onnx --var batch=1..4 "
                                 "--var samples=512..4096:512 --branch /Nope=then");
    CU_ASSERT_EQUAL(code, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "/Nope"));
    dt_test_proc_free(&p);
    code = dt_test_run_dtune(&p, "workloads " DTUNE_SOURCE_DIR "/models/bert-base.json "
                                 "--branch /If=then");
    CU_ASSERT_EQUAL(code, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--branch applies to ONNX models"));
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"silero-vad-if.onnx: both branches tuned, each counted once", test_silero_if_both},
        {"silero-vad-if.onnx: --branch then / else / both", test_silero_if_branch},
        {"--branch errors", test_branch_errors},
        {"Loop (constant, seq, while, If inside) and Scan: counts", test_loops_and_scan},
        {"lstm-if-rank.onnx: an If decided by the shapes", test_if_known_condition},
        {"hostile subgraphs: undefined names, depth, body inputs", test_hostile_files},
        {"dtune workloads --branch (real binary)", test_e2e_branch},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"onnx_control", NULL, NULL, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
