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
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
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
        /* a count is a real when it is the mean of an expression count */
        snprintf(buf + n, 8192 - n, "%s x%g\n", json_string_value(json_object_get(w, "key")),
                 json_number_value(json_object_get(w, "count")));
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

    /* the convolutional models likewise: ResNet-50 as torch exports it is
     * models/resnet50.json, the super-resolution net models/espcn.json */
    from_onnx = workload_list("workloads " ONNX("resnet50.onnx") " --var batch=1..8 --json");
    from_spec = workload_list("workloads " MODEL("resnet50.json") " --json");
    CU_ASSERT_STRING_EQUAL(from_onnx, from_spec);
    CU_ASSERT_PTR_NOT_NULL(strstr(from_onnx, "conv2d(N=1..8,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,"
                                             "pad=1,epilogue=bias+relu) x3"));
    free(from_onnx);
    free(from_spec);
    from_onnx = workload_list("workloads " ONNX("espcn.onnx") " --var height=64..512:32 "
                              "--var width=64..512:32 --json");
    from_spec = workload_list("workloads " MODEL("espcn.json") " --json");
    CU_ASSERT_STRING_EQUAL(from_onnx, from_spec);
    CU_ASSERT_EQUAL(strlen(from_onnx) > 0, 1);
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
    int conv = 0, listed = 0;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(json_object_get(root, "onnx"), "untuned"), i, u)
        listed |= !strcmp(json_string_value(json_object_get(u, "what")), "Conv");
    json_array_foreach(json_object_get(root, "workloads"), i, u)
    {
        const char *key = json_string_value(json_object_get(u, "key"));
        conv += key && strstr(key, "conv2d(N=1..4,H=224,W=224,C=3,K=768,R=16,S=16,stride=16,"
                                    "pad=0");
    }
    CU_ASSERT_EQUAL(conv, 1); /* the patch embedding is a conv2d workload now */
    CU_ASSERT(!listed);
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
        {"import " ONNX("bad-huge-dims.onnx") " --var batch=1 --var seq=1..8", 2,
         "overflows int64"},
        {"import " ONNX("bad-unnamed-dim.onnx"), 2, "input_d0"},
        /* issue 27: perm must be a permutation of 0..rank-1; -1 is not an entry */
        /* issue 43: a refused node no longer refuses the model; with nothing
         * left to tune, the error says where the shapes stopped */
        {"import " ONNX("bad-transpose-perm.onnx") " --var batch=1", 2,
         "nothing to tune: no MatMul, Gemm or Conv dtune's ops express (not tuned: Transpose "
         "×1); shapes stopped at "},
        {"import " ONNX("bad-transpose-perm.onnx") " --var batch=1", 2,
         "perm entry -1 is outside 0..1"},
        /* issue 27: a dim that is 0 for every shape names the shape, not "at ;" */
        {"import " ONNX("bert-base.onnx") " --var batch=1 --var seq=0..0", 2,
         "at batch=1,seq=0"},
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

/* Runs `DTUNE_BIN args` under `timeout -s KILL limit_s` (and, without the
 * sanitizers, a 4 GB address-space limit), stdout discarded; *err gets its
 * stderr (malloc'ed).  Returns the exit code (137 when killed). */
static int run_limited(double limit_s, char **err, const char *dir, const char *args)
{
    char cmd[16384], ep[4096];
    snprintf(ep, sizeof ep, "%s/limited.err", dir);
#ifdef DTUNE_TEST_SANITIZE
    const char *ulimit = "";
#else
    const char *ulimit = "ulimit -v 4000000 2>/dev/null; ";
#endif
    snprintf(cmd, sizeof cmd, "%sexec timeout -s KILL %.0f '%s' %s >/dev/null 2>'%s' </dev/null",
             ulimit, limit_s, DTUNE_BIN, args, ep);
    int st = system(cmd);
    *err = dt_test_slurp(ep);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* issue 27: a model that is not a regular file is refused at once, without
 * reading it (a symlink to /dev/zero read 6 GB for 14 s) or waiting for a
 * writer (a FIFO blocked forever); for specs as for .onnx files */
static void test_not_regular_files(void)
{
    char *dir = dt_test_tmpdir();
    char zero[1024], fifo[1024], fifo_json[1024], zero_json[1024], args[4096];
    snprintf(zero, sizeof zero, "%s/z.onnx", dir);
    snprintf(zero_json, sizeof zero_json, "%s/z.json", dir);
    snprintf(fifo, sizeof fifo, "%s/f.onnx", dir);
    snprintf(fifo_json, sizeof fifo_json, "%s/f.json", dir);
    CU_ASSERT_EQUAL_FATAL(symlink("/dev/zero", zero), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("/dev/zero", zero_json), 0);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo_json, 0600), 0);
    char dir_onnx[1024];
    snprintf(dir_onnx, sizeof dir_onnx, "%s/d.onnx", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir_onnx, 0700), 0);
    struct {
        const char *cmd, *path, *tail, *what;
    } cases[] = {
        {"import", zero, "--var a=1", "character device"},
        {"workloads", zero, "--var a=1", "character device"},
        {"import", fifo, "--var a=1", "FIFO"},
        {"workloads", fifo_json, "", "FIFO"},
        {"workloads", zero_json, "", "character device"},
        {"tune", fifo_json, "--trials 5", "FIFO"},
        {"import", dir_onnx, "--var a=1", "directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err = NULL;
        snprintf(args, sizeof args, "%s '%s' %s", cases[i].cmd, cases[i].path, cases[i].tail);
        double t0 = dt_now_s();
        int code = run_limited(20, &err, dir, args);
        double took = dt_now_s() - t0;
        if (code != 2 || !strstr(err, "not a regular file") || !strstr(err, cases[i].what) ||
            took > 5)
            fprintf(stderr, "\n  dtune %s: exit %d after %.1f s, stderr: %s", args, code, took,
                    err);
        CU_ASSERT_EQUAL(code, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a regular file"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].what));
        CU_ASSERT(took < 5);
        free(err);
    }
    dt_test_rmtree(dir);
    free(dir);
}

/* Whether s reached the terminal clean: no control byte but the newlines
 * that end lines, no C1 control (UTF-8 C2 80..9F), and no line that a name
 * started ("FAKE LINE" follows a CR LF in the names of the test models). */
static int clean(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
            return 0;
        if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            return 0;
    }
    return strstr(s, "\nFAKE LINE") == NULL && strncmp(s, "FAKE LINE", 9) != 0;
}

static void check_clean(const dt_test_proc *p, const char *what)
{
    if (!clean(p->out) || !clean(p->err))
        fprintf(stderr, "\n  %s: raw control characters on stdout or stderr (exit %d)\n", what,
                p->exit_code);
    CU_ASSERT(clean(p->out));
    CU_ASSERT(clean(p->err));
}

/* issue 27: node, tensor, graph and file names with ESC, CR, LF, BEL and a
 * C1 control are escaped in every message, table and report */
static void test_hostile_names(void)
{
    char *dir = dt_test_tmpdir();
    /* the model's name is its file's: give the file a hostile one */
    char evil[4096];
    snprintf(evil, sizeof evil, "%s/m\x1b[31m\r\nFAKE LINE\x07.onnx", dir);
    CU_ASSERT_EQUAL_FATAL(symlink(ONNX("ctrl-names.onnx"), evil), 0);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' --var batch=1..4", evil), 0);
    check_clean(&p, "import ctrl-names.onnx");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "m\\x1b[31m\\r\\nFAKE LINE\\x07"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\"op\": \"dense\"")); /* the spec, as JSON */
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\\u001B[31m")); /* JSON's escapes */
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\\u009B2J"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s' --var batch=1..4", evil), 0);
    check_clean(&p, "workloads ctrl-names.onnx");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "\\x1b[31m"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s' --var batch=1..4 --shapes", evil), 0);
    check_clean(&p, "workloads --shapes ctrl-names.onnx");
    dt_test_proc_free(&p);
    /* an error naming the node and its dangling input */
    CU_ASSERT_EQUAL(
        dt_test_run_dtune(&p, "import '%s' --var batch=1", ONNX("bad-ctrl-names.onnx")), 2);
    check_clean(&p, "import bad-ctrl-names.onnx");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dangling input"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bias\\x1b[31m\\x1b]0;pwned\\x07\\r\\nFAKE LINE\\u009b2J"));
    dt_test_proc_free(&p);
    /* a hostile --var and a hostile spec: model and op names in the table */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import '%s' --var 'batch=1\x1b[2J'",
                                      ONNX("ctrl-names.onnx")), 2);
    check_clean(&p, "import --var with ESC");
    dt_test_proc_free(&p);
    char *spec = dt_test_write_file(
        dir, "spec.json",
        "{\"name\": \"n\\u001b[31m\\r\\nFAKE LINE\\u0007\", \"variables\": {\"seq\": "
        "{\"range\": [1, 4]}}, \"ops\": [{\"name\": \"op\\u001b]0;t\\u0007\\nFAKE LINE\", "
        "\"op\": \"dense\", \"M\": \"seq\", \"N\": 8, \"K\": 8}]}");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s'", spec), 0);
    check_clean(&p, "workloads spec.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "op\\x1b]0;t\\x07\\nFAKE LINE"));
    dt_test_proc_free(&p);
    free(spec);
    dt_test_rmtree(dir);
    free(dir);
}

/* issue 30: IR versions 10 (onnx 1.16, 1.17, current torch exports) and 11
 * (onnx 1.18) are read; 12 is not known yet */
static void test_newer_ir(void)
{
    char *a = workload_list("workloads " ONNX("ir10-dense.onnx") " --var batch=1..8 --json");
    char *b = workload_list("workloads " ONNX("ir11-dense.onnx") " --var batch=1..8 --json");
    CU_ASSERT_STRING_EQUAL(a, "dense(M=1..8,N=768,K=768,epilogue=bias) x1\n");
    CU_ASSERT_STRING_EQUAL(b, a);
    free(a);
    free(b);
}

/* A file of an IR version newer than dtune knows (15) is read, and the
 * import says so: a warning on stderr from import, workloads and tune's
 * model reading, and in import --json's "onnx" object. */
/* Issue 43, point 3: a node whose shapes cannot be propagated (a float
 * Range: a YOLO-style anchor grid) feeds nothing tuned, so the model imports
 * with a warning naming it; the same Range feeding a MatMul is refused with
 * the chain and the Range's reason. */
static void test_unknown_feeds_nothing_tuned(void)
{
#define HW " --var batch=1..4 --var h=32..640:32 --var w=32..640:32"
    char *a = workload_list("workloads " ONNX("range-float-anchors.onnx") HW " --json");
    CU_ASSERT_STRING_EQUAL(a, "dense(M=batch*h*w,N=32,K=64;batch=1..4,h=32..640:32,w=32..640:32) "
                              "x1\n");
    free(a);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads " ONNX("range-float-anchors.onnx") HW), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dtune: warning: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "'/anchors/Range' (#9, Range): cannot propagate shapes: "
                                         "the limit of a float Range is not a known constant; its "
                                         "outputs are unknown, and no tuned op reads them"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "import " ONNX("bad-range-feeds-matmul.onnx") HW), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "node '/proj/MatMul' (#11, MatMul)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "they are unknown from: '/anchors/Range' (#8, Range: "
                                         "the limit of a float Range is not a known constant"));
    dt_test_proc_free(&p);
#undef HW
}

/* Issue 43, point 5: the share of the GEMM-like work in tuned ops, counted
 * from the nodes' definitions, agrees with the tuned workloads' own FLOPs
 * (two independent counts) where everything is tuned, and names what is
 * left where not. */
static void test_coverage(void)
{
    int code = -1;
    json_t *root = dt_test_run_dtune_json(&code, "workloads " ONNX("bert-base.onnx") " " BERT_VARS
                                                 " --json");
    CU_ASSERT_EQUAL_FATAL(code, 0);
    double sum = 0;
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(root, "workloads"), i, w)
        sum += json_number_value(json_object_get(json_object_get(w, "gflop"), "max")) *
               json_number_value(json_object_get(w, "count"));
    json_t *cov = json_object_get(json_object_get(root, "onnx"), "coverage");
    json_t *largest = json_array_get(json_object_get(cov, "shapes"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(largest, "shape")), "batch=1,seq=128");
    double g = json_number_value(json_object_get(largest, "gflop"));
    CU_ASSERT_DOUBLE_EQUAL(g, sum, 1e-9 * sum);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(largest, "tuned_share")), 1.0, 1e-12);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(cov, "gemm_nodes")), 12 * 6); /* QKV, QK^T, PV, out, FFN x2 */
    CU_ASSERT_EQUAL(json_array_size(json_object_get(cov, "untuned_gemm")), 0);
    json_decref(root);
    /* an LM head of 4-bit weights (MatMulNBits, no dtune dtype yet): 4/5 of
     * the work, named with its reason; the weighted shape is the domain value
     * nearest each variable's mean */
    root = dt_test_run_dtune_json(&code, "workloads " ONNX("matmulnbits-4bit.onnx")
                                         " --var batch=1..4 --var seq=1..16 --json");
    CU_ASSERT_EQUAL_FATAL(code, 0);
    cov = json_object_get(json_object_get(root, "onnx"), "coverage");
    json_t *weighted = json_array_get(json_object_get(cov, "shapes"), 1);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(weighted, "shape")), "batch=2,seq=8");
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(weighted, "tuned_share")), 0.2, 1e-12);
    json_t *left = json_array_get(json_object_get(cov, "untuned_gemm"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(left, "node")),
                           "'/lm_head/MatMul_Q4' (#2, MatMulNBits)");
    CU_ASSERT_PTR_NOT_NULL(strstr(json_string_value(json_object_get(left, "why")),
                                  "4-bit weights: no dtune dtype"));
    /* 2 x M x N x K with M = batch*seq = 16, N = K = 256, N = the vocabulary 1024 */
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(left, "gflop_weighted")),
                           2.0 * 16 * 256 * 1024 / 1e9, 1e-15);
    json_decref(root);
    dt_test_proc p;
    dt_test_run_dtune(&p, "import " ONNX("matmulnbits-4bit.onnx") " --var batch=1..4 --var seq=1..16");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "GEMM-like work in tuned ops: 20.0 % at the largest shape "
                                         "(batch=4,seq=16: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "80.0 %      '/lm_head/MatMul_Q4' (#2, MatMulNBits): "
                                         "4-bit weights"));
    dt_test_proc_free(&p);
}

static void test_future_ir_warned(void)
{
    char *a = workload_list("workloads " ONNX("ir15-future.onnx") " --var batch=1..8 --json");
    CU_ASSERT_STRING_EQUAL(a, "dense(M=1..8,N=768,K=768,epilogue=bias) x1\n");
    free(a);
    dt_test_proc p;
    dt_test_run_dtune(&p, "workloads " ONNX("ir15-future.onnx") " --var batch=1..8");
    CU_ASSERT_EQUAL(p.exit_code, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dtune: warning: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "IR version 15 is newer than dtune knows"));
    dt_test_proc_free(&p);
    char *dir = dt_test_tmpdir();
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char args[4500];
    snprintf(args, sizeof args,
             "import " ONNX("ir15-future.onnx") " --var batch=1..8 -o %s/s.json --json", dir);
    int code = -1;
    json_t *root = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    json_t *w = json_object_get(json_object_get(root, "onnx"), "warnings");
    CU_ASSERT_EQUAL(json_array_size(w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(json_string_value(json_array_get(w, 0)) ?: "", "IR version 15"));
    json_decref(root);
    /* a known version warns about nothing */
    snprintf(args, sizeof args,
             "import " ONNX("ir10-dense.onnx") " --var batch=1..8 -o %s/t.json --json", dir);
    root = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(json_object_get(root, "onnx"), "warnings")), 0);
    json_decref(root);
    dt_test_rmtree(dir);
    free(dir);
}

/* The line of text holding `needle` (a copy), or NULL. */
static char *line_with(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    if (!at)
        return NULL;
    const char *b = at, *e = strchr(at, '\n');
    while (b > text && b[-1] != '\n')
        b--;
    size_t n = e ? (size_t)(e - b) : strlen(b);
    char *l = malloc(n + 1);
    if (l) {
        memcpy(l, b, n);
        l[n] = 0;
    }
    return l;
}

/* issue 30, point 8: `dtune tune` on MiniLM-style names (one 57-byte prefix
 * before the part that differs) tells its workloads apart in the summary,
 * numbered as `dtune workloads` numbers them, and its progress lines say
 * whether "best" is measured or a cost-model prediction. */
static void test_tune_labels(void)
{
    char *dir = dt_test_tmpdir_with_cache();
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s' --var batch=1 --var 'seq={4,8}' --db "
                                          "'%s/t.db' --trials 12 --threads 1 --min-time 0.5",
                                      ONNX("attn-reshape-kt.onnx"), dir), 0);
    /* the summary: three rows that differ, the shared prefix said once */
    static const char *const rows[] = {"  1  query/Gemm ", "  2  MatMul ", "  3  MatMul_1 "};
    for (int i = 0; i < 3; i++) {
        if (!strstr(p.out, rows[i]))
            fprintf(stderr, "\nno '%s' in:\n%s\n", rows[i], p.out);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.out, rows[i]));
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "shared prefix \xe2\x80\xa6/auto_model/encoder/layer.0/"
                                         "attention/self/"));
    /* every progress line labels its best: measured, or predicted */
    int rounds = 0;
    for (const char *l = strstr(p.err, "] round "); l; l = strstr(l + 1, "] round ")) {
        char *line = line_with(l, "] round ");
        CU_ASSERT_PTR_NOT_NULL_FATAL(line);
        const char *best = strstr(line, "| best ");
        CU_ASSERT_PTR_NOT_NULL(best);
        if (best && !strstr(best, " measured |") && !strstr(best, " predicted"))
            fprintf(stderr, "\nunlabelled: %s\n", line);
        CU_ASSERT(best && (strstr(best, " measured |") || strstr(best, " predicted")));
        free(line);
        rounds++;
    }
    CU_ASSERT(rounds >= 3);
    dt_test_proc_free(&p);
    dt_test_rmtree(dir);
    free(dir);
}

/* issue 30, points 6 and 8 through the binary: the weight-only int8 MLP
 * torch writes is w8a32, and the untuned list names an embedding's
 * DequantizeLinear and Range for what they are. */
static void test_patterns_listed(void)
{
    char *w = workload_list("workloads " ONNX("w8a32-torch.onnx") " --var batch=1 --var "
                            "seq=1..8 --json");
    CU_ASSERT_STRING_EQUAL(w, "dense(M=1..8,N=1024,K=256,epilogue=bias+relu,dtype=w8a32) x1\n"
                              "dense(M=1..8,N=256,K=1024,epilogue=bias,dtype=w8a32) x1\n"
                              "dense(M=1..8,N=128,K=256,dtype=w8a32) x1\n");
    free(w);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s' --var batch=1 --var seq=1..8",
                                      ONNX("embedding-int8-gather.onnx")), 0);
    char *dq = line_with(p.out, "DequantizeLinear");
    CU_ASSERT_PTR_NOT_NULL_FATAL(dq);
    CU_ASSERT_PTR_NOT_NULL(strstr(dq, "dequantizes an embedding table (Gather): not a GEMM"));
    free(dq);
    CU_ASSERT_PTR_NULL(strstr(p.out, "Range"));
    dt_test_proc_free(&p);
    /* an op without a shape rule no longer refuses the model (NonZero feeds
     * no tuned op): it is listed, saying its shapes are unknown */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "workloads '%s' --var batch=1",
                                      ONNX("bad-unsupported-op.onnx")), 0);
    char *nz = line_with(p.out, "NonZero");
    CU_ASSERT_PTR_NOT_NULL_FATAL(nz);
    CU_ASSERT_PTR_NOT_NULL(strstr(nz, "(shapes unknown)"));
    free(nz);
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"workloads X.onnx: BERT-base is models/bert-base.json", test_workloads_match_spec},
        {"import: spec file, stdout, --json report, --name", test_import_writes_spec},
        {"tune X.onnx: the schedule is found under the imported key", test_tune_from_onnx},
        {"bad input: exit codes and messages", test_bad_input},
        {"a FIFO, /dev/zero or a directory is refused at once", test_not_regular_files},
        {"names with ESC, CR, LF, BEL are escaped in messages and tables", test_hostile_names},
        {"IR versions 10 and 11 are read", test_newer_ir},
        {"IR 15 (newer than known) is read with a warning", test_future_ir_warned},
        {"GEMM-like coverage: counted from the nodes, agrees with the workloads", test_coverage},
        {"a node without shapes that feeds nothing tuned: a warning", test_unknown_feeds_nothing_tuned},
        {"tune: distinct summary names, best measured or predicted", test_tune_labels},
        {"w8a32 from Mul(Cast), embedding DQ and Range labels", test_patterns_listed},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e onnx", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
