/* measure/trial + measure/runner: status names, JSON round trips and the
 * rejection of malformed batches and results; the local runner on real
 * generated kernels (dense and batch_matmul, several shapes, exact and
 * sampled verification, cache flush) and on hand-written bad kernels (a
 * crash, an exit, a hang, a wrong answer, a miss only in the last row, a
 * compile error, a shared object that is not a kernel), each classified
 * while the other trials of the batch and the next batch still run; records
 * written to SQLite exactly once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/target.h"
#include "db/db.h"
#include "measure/runner.h"
#include "measure/trial.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "space/annotation.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static dt_builder g_builder;
static dt_runner g_runner;
static dt_target g_target;

static int setup(void)
{
    dt_err e;
    g_dir = dt_test_tmpdir();
    if (!g_dir || dt_target_detect(&g_target, &e))
        return 1;
    if (dt_builder_init(&g_builder, NULL, NULL, g_dir, &e))
        return 1;
    if (dt_runner_init(&g_runner, &g_builder, DTUNE_BIN, &e)) {
        fprintf(stderr, "runner: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

/* Fast settings for tests. */
static dt_timing quick_timing(void)
{
    dt_timing t;
    dt_timing_default(&t);
    t.min_time_s = 0.002;
    t.min_repeats = 3;
    t.max_repeats = 200;
    t.seed = 7;
    return t;
}

/* A batch of the source (copied) on the shapes (NULL-terminated). */
static int make_batch(dt_batch *b, const char *key, const char *source, const char *const *shapes,
                      int threads, const dt_timing *timing)
{
    dt_err e;
    dt_workload *w = NULL;
    memset(b, 0, sizeof *b);
    if (dt_workload_parse_key(key, &w, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    dt_workload_key(w, b->workload, sizeof b->workload);
    int n = 0;
    while (shapes[n])
        n++;
    b->source = strdup(source);
    b->trials = calloc((size_t)n, sizeof *b->trials);
    b->ntrials = n;
    b->timing = *timing;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        if ((rc = dt_trial_init(&b->trials[i], w, shapes[i], threads, &e)))
            fprintf(stderr, "%s\n", e.msg);
    dt_workload_free(w);
    return rc;
}

static void free_results(dt_trial_result *r, int n)
{
    for (int i = 0; i < n; i++)
        dt_trial_result_free(&r[i]);
    free(r);
}

/* Runs b; returns its results (caller frees with free_results). */
static dt_trial_result *run(const dt_batch *b)
{
    dt_trial_result *res = calloc((size_t)b->ntrials, sizeof *res);
    dt_err e;
    int rc = dt_runner_run(&g_runner, b, res, &e);
    if (rc)
        fprintf(stderr, "runner: %s\n", e.msg);
    CU_ASSERT_EQUAL(rc, 0);
    for (int i = 0; i < b->ntrials; i++) {
        CU_ASSERT_STRING_EQUAL(res[i].uid, b->trials[i].uid);
        if (res[i].status != DT_TRIAL_OK) {
            CU_ASSERT_PTR_NOT_NULL(res[i].error); /* every failure says why */
            CU_ASSERT(res[i].error && res[i].error[0]);
        }
    }
    return res;
}

static void expect_ok(const dt_trial_result *r, const dt_timing *t)
{
    if (r->status != DT_TRIAL_OK)
        fprintf(stderr, "expected ok, got %s: %s\n", dt_trial_status_name(r->status),
                r->error ? r->error : "");
    CU_ASSERT_EQUAL(r->status, DT_TRIAL_OK);
    if (r->status != DT_TRIAL_OK)
        return;
    CU_ASSERT_PTR_NULL(r->error);
    CU_ASSERT(isfinite(r->min_ns) && r->min_ns > 0);
    CU_ASSERT(r->min_ns <= r->median_ns);
    CU_ASSERT(r->median_ns < 10e9);
    CU_ASSERT(r->repeats >= t->min_repeats && r->repeats <= t->max_repeats);
}

static void expect_status(const dt_trial_result *r, dt_trial_status st, const char *needle)
{
    if (r->status != st || (needle && (!r->error || !strstr(r->error, needle))))
        fprintf(stderr, "expected %s with '%s', got %s: %s\n", dt_trial_status_name(st),
                needle ? needle : "", dt_trial_status_name(r->status), r->error ? r->error : "");
    CU_ASSERT_EQUAL(r->status, st);
    CU_ASSERT(isnan(r->min_ns) && isnan(r->median_ns));
    CU_ASSERT(r->error && (!needle || strstr(r->error, needle)));
}

/* ---- names and JSON ----------------------------------------------------- */

static void test_status_names(void)
{
    static const char *const stored[] = {"ok",          "compile_error", "compile_timeout",
                                         "run_crash",   "run_timeout",   "wrong_answer",
                                         "worker_lost"};
    for (int i = 0; i < DT_TRIAL_N_STATUS; i++) {
        const char *n = dt_trial_status_name((dt_trial_status)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        /* the names the database stores (the CHECK on measurements.status) */
        CU_ASSERT_STRING_EQUAL(n, stored[i]);
        dt_trial_status back;
        CU_ASSERT_EQUAL(dt_trial_status_parse(n, &back), 0);
        CU_ASSERT_EQUAL((int)back, i);
    }
    CU_ASSERT_EQUAL(DT_TRIAL_N_STATUS, (int)(sizeof stored / sizeof stored[0]));
    dt_trial_status s;
    CU_ASSERT_EQUAL(dt_trial_status_parse("crashed", &s), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_trial_status_parse(NULL, &s), DT_EINVAL);
    CU_ASSERT_PTR_NULL(dt_trial_status_name(DT_TRIAL_N_STATUS));

    char a[DT_TRIAL_UID_LEN + 1], b[DT_TRIAL_UID_LEN + 1];
    dt_trial_uid_new(a);
    dt_trial_uid_new(b);
    CU_ASSERT_EQUAL(strlen(a), DT_TRIAL_UID_LEN);
    CU_ASSERT_EQUAL(strspn(a, "0123456789abcdef"), DT_TRIAL_UID_LEN);
    CU_ASSERT_STRING_NOT_EQUAL(a, b);

    dt_timing t;
    dt_timing_default(&t);
    CU_ASSERT_EQUAL(t.warmup, 1);
    CU_ASSERT_EQUAL(t.min_repeats, 3);
    CU_ASSERT_EQUAL(t.max_repeats, 10000);
    CU_ASSERT_DOUBLE_EQUAL(t.min_time_s, 0.02, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(t.run_timeout_s, 20, 1e-12);
    CU_ASSERT_EQUAL(t.flush_cache, 0);
}

static void test_trial_init(void)
{
    dt_workload *w = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(
        dt_workload_parse_key("batch_matmul(B=batch*12,M=seq,N=seq,K=64,layout=NT;batch=1..4,"
                              "seq=1..128)",
                              &w, &e),
        0);
    dt_trial t;
    /* any order in, canonical text out; values outside the domain allowed */
    CU_ASSERT_EQUAL(dt_trial_init(&t, w, "seq=200,batch=2", 3, &e), 0);
    CU_ASSERT_STRING_EQUAL(t.shape, "batch=2,seq=200");
    CU_ASSERT_EQUAL(t.dims[0], 24);
    CU_ASSERT_EQUAL(t.dims[1], 200);
    CU_ASSERT_EQUAL(t.dims[2], 200);
    CU_ASSERT_EQUAL(t.dims[3], 64);
    CU_ASSERT_EQUAL(t.threads, 3);
    CU_ASSERT_EQUAL(strlen(t.uid), DT_TRIAL_UID_LEN);
    CU_ASSERT_EQUAL(dt_trial_init(&t, w, "batch=2", 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_trial_init(&t, w, "batch=0,seq=3", 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_trial_init(&t, w, "batch=1,seq=3", 0, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_trial_init(&t, w, "batch=1,seq=3,x=1", 1, &e), DT_EINVAL);
    dt_workload_free(w);
}

static const char *const DENSE_KEY = "dense(M=1..512,N=256,K=256)";

static void test_json_round_trip(void)
{
    dt_batch b, back;
    dt_timing t = quick_timing();
    t.flush_cache = 1;
    t.seed = UINT64_MAX - 5; /* above INT64_MAX: travels as a string */
    const char *shapes[] = {"M=1", "M=37", "M=600", NULL};
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, "dense(M=1..512, N=256, K=256)", "int x;\n\"q\"", shapes,
                                     2, &t),
                          0);
    CU_ASSERT_STRING_EQUAL(b.workload, DENSE_KEY);
    json_t *j = dt_batch_to_json(&b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_batch_from_json(j, &back, &e), 0);
    CU_ASSERT_STRING_EQUAL(back.workload, b.workload);
    CU_ASSERT_STRING_EQUAL(back.source, b.source);
    CU_ASSERT_EQUAL(back.ntrials, 3);
    CU_ASSERT_EQUAL(memcmp(back.trials, b.trials, 3 * sizeof *b.trials), 0);
    CU_ASSERT_EQUAL(back.timing.warmup, t.warmup);
    CU_ASSERT_EQUAL(back.timing.min_repeats, t.min_repeats);
    CU_ASSERT_EQUAL(back.timing.max_repeats, t.max_repeats);
    CU_ASSERT_EQUAL(back.timing.flush_cache, 1);
    CU_ASSERT_DOUBLE_EQUAL(back.timing.min_time_s, t.min_time_s, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(back.timing.run_timeout_s, t.run_timeout_s, 1e-15);
    CU_ASSERT(back.timing.seed == t.seed);
    /* the text form too */
    char *text = json_dumps(j, JSON_COMPACT);
    json_t *j2 = json_loads(text, 0, NULL);
    dt_batch back2;
    CU_ASSERT_EQUAL(dt_batch_from_json(j2, &back2, &e), 0);
    CU_ASSERT_EQUAL(back2.ntrials, 3);
    dt_batch_free(&back2);
    json_decref(j2);
    free(text);
    json_decref(j);
    dt_batch_free(&back);
    dt_batch_free(&b);

    /* results: ok, and a failure with its message */
    dt_trial_result ok = {.status = DT_TRIAL_OK, .min_ns = 1234.5, .median_ns = 2000.25,
                          .repeats = 17};
    dt_trial_uid_new(ok.uid);
    dt_trial_result bad = {.status = DT_TRIAL_RUN_CRASH, .min_ns = NAN, .median_ns = NAN,
                           .error = "the kernel crashed: SIGSEGV\n\"quoted\""};
    dt_trial_uid_new(bad.uid);
    dt_trial_result r;
    j = dt_trial_result_to_json(&ok);
    CU_ASSERT_EQUAL(dt_trial_result_from_json(j, &r, &e), 0);
    json_decref(j);
    CU_ASSERT_STRING_EQUAL(r.uid, ok.uid);
    CU_ASSERT_EQUAL(r.status, DT_TRIAL_OK);
    CU_ASSERT_DOUBLE_EQUAL(r.min_ns, 1234.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r.median_ns, 2000.25, 1e-9);
    CU_ASSERT_EQUAL(r.repeats, 17);
    CU_ASSERT_PTR_NULL(r.error);
    dt_trial_result_free(&r);
    j = dt_trial_result_to_json(&bad);
    CU_ASSERT_EQUAL(dt_trial_result_from_json(j, &r, &e), 0);
    json_decref(j);
    CU_ASSERT_EQUAL(r.status, DT_TRIAL_RUN_CRASH);
    CU_ASSERT(isnan(r.min_ns) && isnan(r.median_ns));
    CU_ASSERT_STRING_EQUAL(r.error, bad.error);
    dt_trial_result_free(&r);
}

/* Expects from_json to refuse the batch text with a message containing needle. */
static void refuse_batch(const char *text, const char *needle)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_ALLOW_NUL, &jerr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    dt_batch b;
    dt_err e;
    dt_err_clear(&e);
    int rc = dt_batch_from_json(j, &b, &e);
    if (rc != DT_EINVAL || !strstr(e.msg, needle))
        fprintf(stderr, "batch %.200s: rc %d, '%s' (wanted '%s')\n", text, rc, e.msg, needle);
    CU_ASSERT_EQUAL(rc, DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, needle));
    CU_ASSERT_PTR_NULL(b.trials);
    CU_ASSERT_PTR_NULL(b.source);
    json_decref(j);
}

static void refuse_result(const char *text, const char *needle)
{
    json_t *j = json_loads(text, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    dt_trial_result r;
    dt_err e;
    dt_err_clear(&e);
    int rc = dt_trial_result_from_json(j, &r, &e);
    if (rc != DT_EINVAL || !strstr(e.msg, needle))
        fprintf(stderr, "result %.200s: rc %d, '%s' (wanted '%s')\n", text, rc, e.msg, needle);
    CU_ASSERT_EQUAL(rc, DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, needle));
    CU_ASSERT_PTR_NULL(r.error);
    json_decref(j);
}

#define UID_A "0123456789abcdef0123456789abcdef"
#define UID_B "fedcba9876543210fedcba9876543210"
#define TIMING "\"timing\":{\"warmup\":1,\"min_time_s\":0.01,\"min_repeats\":3,"               \
               "\"max_repeats\":100,\"flush_cache\":false,\"run_timeout_s\":5,\"seed\":1}"
#define BATCH(key, trials) "{\"workload\":\"" key "\",\"source\":\"x\"," TIMING ",\"trials\":[" trials "]}"
#define TRIAL(uid, shape, dims, threads)                                                         \
    "{\"uid\":\"" uid "\",\"shape\":\"" shape "\",\"dims\":" dims ",\"threads\":" threads "}"

static void test_json_rejects(void)
{
    char buf[2048];
    /* the well-formed base case is accepted */
    json_t *j = json_loads(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,16]", "1")),
                           0, NULL);
    dt_batch b;
    dt_err e;
    CU_ASSERT_EQUAL(dt_batch_from_json(j, &b, &e), 0);
    dt_batch_free(&b);
    json_decref(j);

    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL("0123456789ABCDEF0123456789abcdef", "M=5",
                                                       "[5,32,16]", "1")),
                 "uid");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL("0123", "M=5", "[5,32,16]", "1")), "uid");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A "00", "M=5", "[5,32,16]", "1")),
                 "uid");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[-5,32,16]", "1")),
                 "dim M");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[6,32,16]", "1")),
                 "shape 'M=5' gives 5");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32]", "1")), "dims");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,\"16\"]", "1")),
                 "dim K");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=-5", "[-5,32,16]", "1")),
                 "dim M");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "Q=5", "[5,32,16]", "1")),
                 "not a variable");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,16]", "0")),
                 "threads");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,16]", "1.5")),
                 "threads");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,16]", "1") ","
                                                       TRIAL(UID_A, "M=6", "[6,32,16]", "1")),
                 "two trials");
    refuse_batch(BATCH("dense(M=1..64,N=0,K=16)", TRIAL(UID_A, "M=5", "[5,0,16]", "1")),
                 "workload key");
    refuse_batch(BATCH("conv9(M=1)", TRIAL(UID_A, "M=5", "[5]", "1")), "workload key");
    refuse_batch(BATCH("dense(M=1..64,N=32,K=16)", ), "1..4096");
    refuse_batch("[1,2]", "object");
    refuse_batch("{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":7," TIMING
                 ",\"trials\":[]}",
                 "'source' must be a string");
    refuse_batch("{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"x\",\"extra\":1," TIMING
                 ",\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
                 "unknown member 'extra'");
    refuse_batch("{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"a\\u0000b\"," TIMING
                 ",\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
                 "NUL");
    /* timing */
    snprintf(buf, sizeof buf,
             "{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"x\",\"timing\":{%s},"
             "\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
             "\"min_repeats\":10,\"max_repeats\":5");
    refuse_batch(buf, "max_repeats");
    snprintf(buf, sizeof buf,
             "{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"x\",\"timing\":{%s},"
             "\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
             "\"run_timeout_s\":0");
    refuse_batch(buf, "run_timeout_s");
    snprintf(buf, sizeof buf,
             "{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"x\",\"timing\":{%s},"
             "\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
             "\"flush_cache\":1");
    refuse_batch(buf, "flush_cache");
    snprintf(buf, sizeof buf,
             "{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"x\",\"timing\":{%s},"
             "\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
             "\"seed\":-1");
    refuse_batch(buf, "seed");
    snprintf(buf, sizeof buf,
             "{\"workload\":\"dense(M=1..64,N=32,K=16)\",\"source\":\"x\",\"timing\":{%s},"
             "\"trials\":[" TRIAL(UID_A, "M=5", "[5,32,16]", "1") "]}",
             "\"min_time_s\":\"fast\"");
    refuse_batch(buf, "min_time_s");

    /* too many trials, too much source */
    json_t *big = json_loads(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,16]",
                                                                     "1")),
                             0, NULL);
    json_t *trials = json_object_get(big, "trials");
    json_t *one = json_array_get(trials, 0);
    for (int i = 1; i <= DT_BATCH_MAX_TRIALS; i++) {
        json_t *c = json_deep_copy(one);
        char uid[DT_TRIAL_UID_LEN + 1];
        dt_trial_uid_new(uid);
        json_object_set_new(c, "uid", json_string(uid));
        json_array_append_new(trials, c);
    }
    CU_ASSERT_EQUAL(dt_batch_from_json(big, &b, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "4097 trials"));
    /* exactly the limit is fine */
    json_array_remove(trials, 0);
    CU_ASSERT_EQUAL(dt_batch_from_json(big, &b, &e), 0);
    CU_ASSERT_EQUAL(b.ntrials, DT_BATCH_MAX_TRIALS);
    dt_batch_free(&b);
    json_decref(big);

    j = json_loads(BATCH("dense(M=1..64,N=32,K=16)", TRIAL(UID_A, "M=5", "[5,32,16]", "1")), 0,
                   NULL);
    char *src = malloc(DT_BATCH_MAX_SOURCE + 2);
    memset(src, 'x', DT_BATCH_MAX_SOURCE + 1);
    src[DT_BATCH_MAX_SOURCE + 1] = '\0';
    json_object_set_new(j, "source", json_string(src));
    CU_ASSERT_EQUAL(dt_batch_from_json(j, &b, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "over the limit"));
    src[DT_BATCH_MAX_SOURCE] = '\0'; /* exactly the limit is fine */
    json_object_set_new(j, "source", json_string(src));
    CU_ASSERT_EQUAL(dt_batch_from_json(j, &b, &e), 0);
    dt_batch_free(&b);
    free(src);
    json_decref(j);

    /* results */
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"exploded\",\"error\":\"x\"}",
                  "unknown status");
    refuse_result("{\"uid\":\"xyz\",\"status\":\"run_crash\",\"error\":\"x\"}", "uid");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"ok\",\"repeats\":3}", "min_ns");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"ok\",\"repeats\":3,\"min_ns\":5,"
                  "\"median_ns\":4}",
                  "min_ns <= median_ns");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"ok\",\"repeats\":0,\"min_ns\":5,"
                  "\"median_ns\":6}",
                  "repeats");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"ok\",\"repeats\":3,\"min_ns\":5,"
                  "\"median_ns\":6,\"error\":\"no\"}",
                  "error");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"run_crash\"}", "'error' must be a string");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"run_crash\",\"error\":\"\"}", "non-empty");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"run_crash\",\"error\":\"x\",\"min_ns\":1}",
                  "no times");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":\"run_crash\",\"error\":\"x\",\"pid\":1}",
                  "unknown member");
    refuse_result("{\"uid\":\"" UID_B "\",\"status\":3,\"error\":\"x\"}", "status");
}

/* ---- real generated kernels --------------------------------------------- */

/* Generates a kernel for the workload's op from a sampled annotation. */
static char *gen_source(const char *key, uint64_t seed)
{
    dt_workload *w = NULL;
    dt_err e;
    if (dt_workload_parse_key(key, &w, &e))
        return NULL;
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    dt_workload_free(w);
    dt_rng rng;
    dt_rng_seed(&rng, seed);
    dt_annotation a;
    char *src = NULL;
    if (dt_annotation_sample(&rng, &g_target, -1, 0, &a, &e) || dt_codegen(&kop, &a, &src, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return NULL;
    }
    return src;
}

static void test_real_kernels(void)
{
    const char *dkey = "dense(M=1..512,N=256,K=256,epilogue=bias+gelu)";
    const char *bkey = "batch_matmul(B=3,M=1..64,N=40,K=24,layout=NT)";
    const char *nkey = "batch_matmul(B=2,M=1..64,N=33,K=17,layout=NN)";
    char *src[3] = {gen_source(dkey, 11), gen_source(bkey, 12), gen_source(nkey, 13)};
    CU_ASSERT_FATAL(src[0] && src[1] && src[2]);
    dt_timing t = quick_timing();
    dt_timing cold = t;
    cold.flush_cache = 1;
    cold.max_repeats = 4; /* each flush writes and reads 2x the LLC */
    /* M=300: M·N·K > 2^24, so verified on a sample */
    const char *dshapes[] = {"M=1", "M=7", "M=37", "M=300", NULL};
    const char *bshapes[] = {"M=1", "M=13", "M=64", "M=70", NULL};
    dt_batch b[4];
    CU_ASSERT_EQUAL_FATAL(make_batch(&b[0], dkey, src[0], dshapes, 1, &t), 0);
    CU_ASSERT_EQUAL_FATAL(make_batch(&b[1], dkey, src[0], dshapes, 2, &t), 0);
    CU_ASSERT_EQUAL_FATAL(make_batch(&b[2], bkey, src[1], bshapes, 2, &t), 0);
    CU_ASSERT_EQUAL_FATAL(make_batch(&b[3], nkey, src[2], bshapes, 1, &cold), 0);
    /* build all in parallel first, then run one at a time */
    const dt_batch *all[] = {&b[0], &b[1], &b[2], &b[3]};
    dt_err e;
    CU_ASSERT_EQUAL(dt_runner_build_many(&g_runner, all, 4, &e), 0);
    for (int i = 0; i < 4; i++) {
        dt_trial_result *res = run(&b[i]);
        for (int k = 0; k < b[i].ntrials; k++)
            expect_ok(&res[k], &b[i].timing);
        if (i == 3)
            for (int k = 0; k < b[i].ntrials; k++)
                CU_ASSERT(res[k].repeats <= 4);
        free_results(res, b[i].ntrials);
        dt_batch_free(&b[i]);
    }
    for (int i = 0; i < 3; i++)
        free(src[i]);
}

/* ---- bad kernels --------------------------------------------------------- */

/* A naive dense kernel exporting the dtk ABI, with code before and after
 * the computation. */
static char *hand_kernel(const char *before, const char *after)
{
    static const char body[] =
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
        "const int dtk_abi_version = 1;\n"
        "const char dtk_info[] = \"dense; hand-written test kernel\";\n"
        "size_t dtk_packed_size(int64_t N, int64_t K) { return (size_t)(N * K) * sizeof(float); }\n"
        "void dtk_pack(int64_t N, int64_t K, const float *W, float *packed)\n"
        "{ for (int64_t i = 0; i < N * K; i++) packed[i] = W[i]; }\n"
        "void dtk_dense(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,\n"
        "               const float *P, const float *bias, float *Y, int64_t ldy, int nthreads)\n"
        "{\n"
        "    (void)nthreads;\n"
        "    %s\n"
        "    for (int64_t i = 0; i < M; i++)\n"
        "        for (int64_t j = 0; j < N; j++) {\n"
        "            float s = bias ? bias[j] : 0.0f;\n"
        "            for (int64_t k = 0; k < K; k++) s += X[i * ldx + k] * P[j * K + k];\n"
        "            Y[i * ldy + j] = s;\n"
        "        }\n"
        "    %s\n"
        "}\n";
    size_t n = sizeof body + strlen(before) + strlen(after);
    char *s = malloc(n);
    snprintf(s, n, body, before, after);
    return s;
}

static const char *const BAD_KEY = "dense(M=1..512,N=256,K=256)";

static void test_crash(void)
{
    char *src = hand_kernel("if (M == 5) { fprintf(stderr, \"dtk-test: about to crash\\n\");"
                            " volatile float *volatile p = NULL; *p = 1.0f; }"
                            " if (M == 6) { fprintf(stderr, \"dtk-test: exiting\\n\"); exit(3); }",
                            "");
    dt_timing t = quick_timing();
    const char *shapes[] = {"M=1", "M=5", "M=8", "M=6", "M=2", NULL};
    dt_batch b;
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, src, shapes, 1, &t), 0);
    dt_trial_result *res = run(&b);
    expect_ok(&res[0], &t);
    /* a signal (or, under ASan, its report and exit) is run_crash with the
     * child's stderr */
    expect_status(&res[1], DT_TRIAL_RUN_CRASH, "dtk-test: about to crash");
    CU_ASSERT(res[1].error && strstr(res[1].error, "M=5"));
    expect_ok(&res[2], &t);
    /* (under ASan the leak check at exit may change the status) */
    expect_status(&res[3], DT_TRIAL_RUN_CRASH, "exited with status");
    CU_ASSERT(res[3].error && strstr(res[3].error, "dtk-test: exiting"));
    expect_ok(&res[4], &t);
    free_results(res, b.ntrials);
    dt_batch_free(&b);

    /* the runner carries on with the next batch of the same kernel */
    const char *shapes2[] = {"M=3", "M=4", NULL};
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, src, shapes2, 1, &t), 0);
    res = run(&b);
    expect_ok(&res[0], &t);
    expect_ok(&res[1], &t);
    free_results(res, b.ntrials);
    dt_batch_free(&b);
    free(src);
}

static void test_hang(void)
{
    char *src = hand_kernel("if (M == 7) { volatile unsigned long spin = 0; for (;;) spin++; }", "");
    dt_timing t = quick_timing();
    t.run_timeout_s = 1.0;
    const char *shapes[] = {"M=1", "M=7", "M=8", NULL};
    dt_batch b;
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, src, shapes, 1, &t), 0);
    double t0 = dt_now_s();
    dt_trial_result *res = run(&b);
    double secs = dt_now_s() - t0;
    expect_ok(&res[0], &t);
    expect_status(&res[1], DT_TRIAL_RUN_TIMEOUT, "no result within 1 s");
    expect_ok(&res[2], &t);
    CU_ASSERT(secs >= 1.0 && secs < 15.0); /* killed at the limit, not later */
    free_results(res, b.ntrials);
    dt_batch_free(&b);
    free(src);
}

static void test_wrong_answer(void)
{
    /* prints to stdout on every call (must not disturb the protocol), is off
     * by one at M=3, and for big problems only at the very last output,
     * which a random sample would almost surely miss */
    char *src = hand_kernel("printf(\"noise from the kernel\\n\"); fflush(stdout);",
                            "if (M == 3) Y[ldy + 1] += 1.0f;"
                            " if (M * N * K > (1 << 24)) Y[(M - 1) * ldy + N - 1] += 0.5f;");
    dt_timing t = quick_timing();
    const char *shapes[] = {"M=1", "M=3", "M=8", "M=300", "M=2", NULL};
    dt_batch b;
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, src, shapes, 1, &t), 0);
    dt_trial_result *res = run(&b);
    expect_ok(&res[0], &t);
    expect_status(&res[1], DT_TRIAL_WRONG_ANSWER, "wrong answer at [1,1]");
    expect_ok(&res[2], &t);
    expect_status(&res[3], DT_TRIAL_WRONG_ANSWER, "wrong answer at [299,255]");
    expect_ok(&res[4], &t);
    free_results(res, b.ntrials);
    dt_batch_free(&b);
    free(src);
}

static void test_compile_error(void)
{
    dt_timing t = quick_timing();
    const char *shapes[] = {"M=1", "M=2", "M=3", NULL};
    dt_batch b;
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, "this is not C;\n", shapes, 1, &t), 0);
    dt_trial_result *res = run(&b);
    for (int i = 0; i < 3; i++)
        expect_status(&res[i], DT_TRIAL_COMPILE_ERROR, "does not compile");
    CU_ASSERT(res[0].error && strstr(res[0].error, "error"));
    free_results(res, b.ntrials);
    dt_batch_free(&b);

    /* compiles, but is not a kernel: refused at load, on every trial */
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, "int not_a_kernel(void) { return 1; }\n",
                                     shapes, 1, &t),
                          0);
    res = run(&b);
    for (int i = 0; i < 3; i++)
        expect_status(&res[i], DT_TRIAL_COMPILE_ERROR, "not a dtune kernel");
    free_results(res, b.ntrials);
    dt_batch_free(&b);

    /* a dense kernel cannot serve batch_matmul */
    char *src = hand_kernel("", "");
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, "batch_matmul(B=2,M=1..8,N=8,K=8,layout=NN)", src,
                                     shapes, 1, &t),
                          0);
    res = run(&b);
    for (int i = 0; i < 3; i++)
        expect_status(&res[i], DT_TRIAL_COMPILE_ERROR, "batch_matmul entry points");
    free_results(res, b.ntrials);
    dt_batch_free(&b);
    free(src);
}

/* ---- exactly-once records ------------------------------------------------ */

static void test_db_exactly_once(void)
{
    char *src = hand_kernel("if (M == 5) { volatile float *volatile p = NULL; *p = 1.0f; }",
                            "if (M == 3) Y[0] = -Y[0] + 1.0f;");
    dt_timing t = quick_timing();
    const char *shapes[] = {"M=1", "M=3", "M=5", "M=9", NULL};
    dt_batch b;
    CU_ASSERT_EQUAL_FATAL(make_batch(&b, BAD_KEY, src, shapes, 1, &t), 0);
    dt_trial_result *res = run(&b);
    CU_ASSERT_EQUAL(res[0].status, DT_TRIAL_OK);
    CU_ASSERT_EQUAL(res[1].status, DT_TRIAL_WRONG_ANSWER);
    CU_ASSERT_EQUAL(res[2].status, DT_TRIAL_RUN_CRASH);
    CU_ASSERT_EQUAL(res[3].status, DT_TRIAL_OK);

    char path[4096];
    snprintf(path, sizeof path, "%s/records.db", g_dir);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    char tkey[DT_TARGET_KEY_MAX];
    dt_target_key(&g_target, tkey, sizeof tkey);
    int64_t target_id = 0, workload_id = 0, kernel_id = 0;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, tkey, dt_isa_name(g_target.isa), NULL,
                                              &target_id, &e),
                          0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, b.workload, "dense", "{}", &workload_id, &e),
                          0);
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, "dense", "hand", "{\"test\":1}", NULL,
                                              &kernel_id, &e),
                          0);
    /* twice, as a requeued batch would deliver them */
    for (int round = 0; round < 2; round++) {
        CU_ASSERT_EQUAL(dt_db_begin(db, &e), 0);
        for (int i = 0; i < b.ntrials; i++) {
            dt_db_measurement m = {
                .kernel_id = kernel_id,
                .target_id = target_id,
                .workload_id = workload_id,
                .shape = b.trials[i].shape,
                .threads = b.trials[i].threads,
                .status = res[i].status,
                .min_ns = res[i].min_ns,
                .median_ns = res[i].median_ns,
                .error = res[i].error,
                .trial_uid = res[i].uid,
            };
            int64_t id = 0;
            bool already = false;
            int rc = dt_db_measurement_insert(db, &m, &id, &already, &e);
            if (rc)
                fprintf(stderr, "insert: %s\n", e.msg);
            CU_ASSERT_EQUAL(rc, 0);
            CU_ASSERT(id > 0);
            CU_ASSERT_EQUAL(already, round == 1);
        }
        CU_ASSERT_EQUAL(dt_db_commit(db, &e), 0);
    }
    dt_db_measurement_filter f = {.workload_id = workload_id};
    int64_t count = -1;
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &count, &e), 0);
    CU_ASSERT_EQUAL(count, b.ntrials);
    f.ok_only = true;
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &count, &e), 0);
    CU_ASSERT_EQUAL(count, 2);
    dt_db_close(db);
    free_results(res, b.ntrials);
    dt_batch_free(&b);
    free(src);
}

static void test_runner_init(void)
{
    dt_runner r;
    dt_err e;
    CU_ASSERT_EQUAL(dt_runner_init(&r, &g_builder, "/nonexistent/dtune", &e), DT_EIO);
    CU_ASSERT_EQUAL(dt_runner_init(&r, &g_builder, NULL, &e), 0); /* this test binary */
    CU_ASSERT(r.exe[0] == '/');
    /* an empty batch is a no-op */
    dt_batch b = {.ntrials = 0};
    snprintf(b.workload, sizeof b.workload, "%s", DENSE_KEY);
    CU_ASSERT_EQUAL(dt_runner_run(&g_runner, &b, NULL, &e), 0);
}

int main(void)
{
    CU_TestInfo json_tests[] = {
        {"status names, uids, timing defaults", test_status_names},
        {"trial init: canonical shape, dims", test_trial_init},
        {"batch and result JSON round trips", test_json_round_trip},
        {"malformed batches and results are refused", test_json_rejects},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo run_tests[] = {
        {"runner init", test_runner_init},
        {"generated dense and batch_matmul kernels: all ok", test_real_kernels},
        {"segfault and exit: run_crash, the rest ok", test_crash},
        {"endless loop: run_timeout, the rest ok", test_hang},
        {"wrong values (also only in the last row): wrong_answer", test_wrong_answer},
        {"compile errors and non-kernels: compile_error", test_compile_error},
        {"records stored exactly once", test_db_exactly_once},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"trial", NULL, NULL, NULL, NULL, json_tests},
        {"runner", setup, teardown, NULL, NULL, run_tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
