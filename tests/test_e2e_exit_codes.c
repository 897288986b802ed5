/* End-to-end: the exit-code rule of README.md ("usage 1, bad input 2,
 * runtime 3") for every command, as one table: each row runs the real
 * binary with a bad argument and checks the code and that stderr names the
 * problem.  A new command or flag gets a row here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/dt_test.h"

#define ONNX(name) DTUNE_SOURCE_DIR "/tests/data/onnx/" name
#define MODEL(name) DTUNE_SOURCE_DIR "/models/" name
#define KEY "'dense(M=1..4,N=16,K=16)'"

typedef struct {
    const char *args; /* after `dtune`; %1$s is a fresh temporary directory */
    int code;
    const char *msg;  /* a part of stderr that names the problem */
} exit_case;

static const exit_case cases[] = {
    /* usage: 1 */
    {"frobnicate", 1, "unknown command"},
    {"info --frob", 1, "--frob"},
    {"workloads", 1, "expected one"},
    {"workloads " MODEL("bert-base.json") " --frob", 1, "--frob"},
    {"import", 1, "expected one MODEL.onnx"},
    {"db", 1, "missing command"},
    {"db frob", 1, "frob"},
    {"db backup", 1, "DEST"},
    {"db merge", 1, "SRC"},
    {"bench", 1, "WORKLOAD"},
    {"bench " KEY " --sample 0", 1, "--sample"},
    {"measure", 1, "WORKLOAD"},
    {"tune", 1, "expected one"},
    {"tune " KEY " --trials 0", 1, "--trials"},
    {"tune " KEY " --strategy best", 1, "--strategy"},
    {"tune " KEY " --max-kernels few", 1, "--max-kernels"},
    {"query " KEY, 1, "--shape"},
    {"export " KEY, 1, "-o"},
    {"model", 1, "Usage"},
    {"worker --max-batch 0", 1, "--max-batch"},
    {"daemon --listen", 1, "--listen"},
    /* bad input: 2 */
    {"workloads /nonexistent/m.json", 2, "/nonexistent/m.json"},
    {"workloads " ONNX("bad-not-onnx.onnx") " --var a=1", 2, "not an ONNX model"},
    {"import " ONNX("bert-base.onnx"), 2, "--var"},
    {"bench 'dense(M=1..4,N=16)' --sample 1", 2, "K"},
    {"bench 'dense(M=1..4,N=16,K=16,dtype=fp8)' --sample 1", 2, "unknown dtype"},
    {"measure 'conv(M=1)' --db %1$s/d.db", 2, "conv"},
    {"tune %1$s --db %1$s/d.db --trials 5", 2, "%1$s"},
    {"tune 'batch_matmul(B=1,M=4,N=4,K=4,dtype=int8)' --db %1$s/d.db --trials 5", 2, "int8"},
    {"query " KEY " --shape M=2 --db %1$s/none.db", 2, "none.db"},
    {"export " KEY " -o %1$s/x.c --db %1$s/none.db", 2, "none.db"},
    {"db stats --db %1$s/none.db", 2, "none.db"},
    {"db check --db %1$s/none.db", 2, "none.db"},
    {"db merge %1$s/none.db --db %1$s/d.db", 2, "none.db"},
    {"model stats --db %1$s/none.db", 2, "none.db"},
    /* runtime: 3 */
    {"db init --db %1$s/no/such/dir/d.db", 3, "no/such/dir"},
    {"import " ONNX("cnn-small.onnx") " --var batch=1 --var height=8 --var width=8 -o "
     "%1$s/no/such/dir/s.json",
     3, "cannot write"},
};

static void test_exit_codes(void)
{
    char *dir = dt_test_tmpdir();
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[2048], msg[1024];
        /* the format is the table's own: %1$s is the directory */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(args, sizeof args, cases[i].args, dir);
        snprintf(msg, sizeof msg, cases[i].msg, dir);
#pragma GCC diagnostic pop
        dt_test_proc p;
        dt_test_run_dtune(&p, "%s", args);
        if (p.exit_code != cases[i].code || !strstr(p.err, msg)) {
            fprintf(stderr, "\n  dtune %s: exit %d (want %d), stderr does%s name '%s':\n%s",
                    args, p.exit_code, cases[i].code, strstr(p.err, msg) ? "" : " not", msg,
                    p.err);
            bad++;
        }
        dt_test_proc_free(&p);
    }
    CU_ASSERT_EQUAL(bad, 0);
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"usage 1, bad input 2, runtime 3, for every command", test_exit_codes},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e exit codes", NULL, NULL, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
