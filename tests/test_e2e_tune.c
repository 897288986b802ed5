/* End-to-end: `dtune tune` and `dtune query` through the real binary — a
 * small tune with JSON output, queries in and beyond the tuned range, usage
 * and input errors, a tune killed with SIGKILL that resumes without
 * measuring anything twice, a tune measured by a real `dtune worker` over
 * loopback TCP, BERT-base on a 20-trial budget and a small model on a time
 * budget (every workload's outcome reported), budgets below the minimum
 * refused, SIGINT mid-tune (exit 130, what was measured kept), and a kernel
 * budget (--max-kernels) reported alike by the summary, query and export. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <ctype.h>
#include <unistd.h>

#include "common/clock.h"
#include "db/db.h"
#include "tests/dt_test.h"

static char *g_dir;

static int setup(void)
{
    g_dir = dt_test_tmpdir_with_cache();
    if (!g_dir)
        return 1;
    return 0;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

#define KEY "dense(M=1..10,N=48,K=32,epilogue=bias)"

static void test_tune_then_query(void)
{
    char args[2048];
    int code;
    snprintf(args, sizeof args,
             "tune '" KEY "' --db '%s/t.db' --trials 30 --threads 1 --min-time 0.5 --json "
             "--max-kernels all", g_dir); /* every range measured (test_max_kernels: K) */
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(t, "strategy")), "joint");
    CU_ASSERT(json_integer_value(json_object_get(t, "trials_total")) <= 30);
    CU_ASSERT(json_integer_value(json_object_get(t, "trials_new")) > 0);
    json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
    CU_ASSERT(json_integer_value(json_object_get(w, "ranges")) >= 1);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "workload")), KEY);
    json_decref(t);

    snprintf(args, sizeof args,
             "query '" KEY "' --db '%s/t.db' --shape M=4 --shape M=300 --json", g_dir);
    json_t *q = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_EQUAL_FATAL(json_array_size(q), 2);
    json_t *in = json_array_get(q, 0), *out = json_array_get(q, 1);
    CU_ASSERT_TRUE(json_is_false(json_object_get(in, "extrapolated")));
    CU_ASSERT_TRUE(json_is_true(json_object_get(out, "extrapolated")));
    CU_ASSERT(json_integer_value(json_object_get(in, "kernel_id")) > 0);
    CU_ASSERT_TRUE(json_is_object(json_object_get(in, "annotation")));
    CU_ASSERT_TRUE(json_is_number(json_object_get(in, "measured_ns")));
    /* M=300 runs the kernel of the range holding M=10 */
    CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(json_object_get(out, "range"), 1)),
                           "M=10");
    /* and its box, variable by variable */
    json_t *box = json_object_get(json_object_get(out, "box"), "M");
    CU_ASSERT_EQUAL(json_array_size(box), 2);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(box, 1)), 10);
    json_decref(q);

    /* the text form names the kernel */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" KEY "' --db '%s/t.db' --shape M=7", g_dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "-> kernel"));
    dt_test_proc_free(&p);
}

/* A workload without variables (a static layer: every dim a number) has one
 * shape, written ""; it is tuned, stored, checked, queried and exported
 * like any other (the database refused its empty shape text before). */
static void test_static_workload(void)
{
    static const char key[] =
        "conv2d(N=1,H=10,W=10,C=8,K=16,R=3,S=3,stride=1,pad=1,epilogue=bias+relu)";
    char args[2048];
    int code;
    snprintf(args, sizeof args, "tune '%s' --db '%s/static.db' --trials 8 --threads 1 "
                                "--min-time 0.2 --json", key, g_dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(w, "ranges")), 1);
    json_decref(t);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '%s' --db '%s/static.db' --shape ''", key,
                                      g_dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "-> kernel"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "the one shape (no variables)"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db '%s/static.db'", g_dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "no problems found"));
    dt_test_proc_free(&p);
}

static void test_errors(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '" KEY "' --strategy best"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--strategy"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '" KEY "' --time 5x"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '" KEY "' --workers 127.0.0.1:1"), 1);
    dt_test_proc_free(&p);
    char *spec = dt_test_write_file(g_dir, "bad.json", "{\"name\": \"x\",\n \"ops\": [1]}\n");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s' --db '%s/bad.db'", spec, g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad.json:"));
    dt_test_proc_free(&p);
    free(spec);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s/missing.json'", g_dir), 2);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" KEY "' --shape M=3 --db '%s/none.db'", g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "no database"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" KEY "' --db '%s/t.db'", g_dir), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(
        dt_test_run_dtune(&p, "query '" KEY "' --shape K=3 --db '%s/t.db'", g_dir), 2);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query 'dense(M=1..10,N=8,K=8)' --shape M=3 --db "
                                          "'%s/t.db'", g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "never been tuned"));
    dt_test_proc_free(&p);
}

/* ---- resume after SIGKILL ------------------------------------------------------- */

typedef struct {
    int64_t kernel[4096];
    char shape[4096][32];
    int n, dup;
} pairs;

static int collect(const dt_db_measurement *m, void *ud)
{
    pairs *p = ud;
    for (int i = 0; i < p->n; i++)
        if (p->kernel[i] == m->kernel_id && strcmp(p->shape[i], m->shape) == 0)
            p->dup++;
    if (p->n < 4096) {
        p->kernel[p->n] = m->kernel_id;
        snprintf(p->shape[p->n++], sizeof p->shape[0], "%s", m->shape);
    }
    return 0;
}

static void test_resume_after_sigkill(void)
{
    char path[4096], budget[] = "70";
    snprintf(path, sizeof path, "%s/kill.db", g_dir);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(DTUNE_BIN, DTUNE_BIN, "tune", KEY, "--db", path, "--trials", budget, "--threads",
              "1", "--min-time", "0.5", (char *)NULL);
        _exit(127);
    }
    /* kill it once some trials are recorded, well before the end */
    int64_t n = 0;
    for (int i = 0; i < 600 && n < 12; i++) {
        dt_sleep_ms(50);
        n = dt_test_count_records(path);
    }
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    CU_ASSERT_TRUE(WIFSIGNALED(st));
    int64_t before = dt_test_count_records(path);
    CU_ASSERT(before >= 12);
    CU_ASSERT(before < 70);

    char args[8192];
    int code;
    snprintf(args, sizeof args,
             "tune '" KEY "' --db '%s' --trials 70 --threads 1 --min-time 0.5 --json", path);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(w, "resumed_trials")), before);
    CU_ASSERT(json_integer_value(json_object_get(t, "trials_total")) <= 70);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "trials_total")),
                    before + json_integer_value(json_object_get(t, "trials_new")));
    json_decref(t);
    /* nothing was measured twice: every (kernel, shape) pair has one record */
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    pairs *p = calloc(1, sizeof *p);
    CU_ASSERT_EQUAL(dt_db_measurement_list(db, NULL, collect, p, &e), 0);
    CU_ASSERT_EQUAL(p->dup, 0);
    CU_ASSERT(p->n > before);
    free(p);
    dt_db_close(db);
}

static void test_tune_on_worker(void)
{
    char *token = dt_test_write_file(g_dir, "token", "e2e-tune-token-0123456789abcdef\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(token);
    CU_ASSERT_EQUAL(chmod(token, 0600), 0);
    char log[4096];
    snprintf(log, sizeof log, "%s/worker.log", g_dir);
    pid_t pid = 0;
    dt_test_worker_opts o = {.token_path = token, .log_path = log, .timeout_s = 30};
    int port = dt_test_start_worker(&o, &pid, NULL, 0);
    if (port <= 0 && pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    CU_ASSERT_FATAL(port > 0);
    char args[8192];
    int code;
    snprintf(args, sizeof args,
             "tune '" KEY "' --db '%s/w.db' --trials 24 --threads 1 --min-time 0.5 "
             "--workers 127.0.0.1:%d --token-file '%s' --json",
             g_dir, port, token);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL(t);
    int64_t n = json_integer_value(json_object_get(t, "trials_new"));
    CU_ASSERT(n > 0 && n <= 24);
    json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
    CU_ASSERT(json_integer_value(json_object_get(w, "ranges")) >= 1);
    json_decref(t);
    /* the worker measured them: its trials are in the database, and the
     * schedule it produced answers a query */
    char db[4096];
    snprintf(db, sizeof db, "%s/w.db", g_dir);
    CU_ASSERT_EQUAL(dt_test_count_records(db), n);
    snprintf(args, sizeof args, "query '" KEY "' --db '%s' --shape M=5 --json", db);
    json_t *q = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    json_decref(q);
    /* a wrong token: refused with a runtime error, nothing recorded */
    char *bad = dt_test_write_file(g_dir, "bad-token", "not-the-workers-token-0123456789\n");
    CU_ASSERT_EQUAL(chmod(bad, 0600), 0);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '" KEY "' --db '%s/bad.db' --trials 8 "
                                          "--threads 1 --workers 127.0.0.1:%d --token-file '%s'",
                                      g_dir, port, bad),
                    3);
    dt_test_proc_free(&p);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(token);
    free(bad);
}


/* ---- small budgets over a model ---------------------------------------------------- */

/* Every workload of the --json summary has an outcome; returns how many are
 * "scheduled" (the others must say why they were skipped). */
static int count_scheduled(json_t *t)
{
    json_t *ws = json_object_get(t, "workloads"), *w;
    size_t i;
    int n = 0;
    json_array_foreach(ws, i, w) {
        const char *o = json_string_value(json_object_get(w, "outcome"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        if (!strcmp(o, "scheduled")) {
            n++;
            CU_ASSERT_TRUE(json_is_null(json_object_get(w, "skip_reason")));
            CU_ASSERT(json_integer_value(json_object_get(w, "ranges")) >= 1);
        } else {
            CU_ASSERT_STRING_EQUAL(o, "skipped");
            CU_ASSERT_TRUE(json_is_string(json_object_get(w, "skip_reason")));
        }
    }
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "workloads_scheduled")), n);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "workloads_skipped")),
                    (json_int_t)json_array_size(ws) - n);
    /* held-out quality: a number or null, never NaN (jansson cannot hold one) */
    json_t *m;
    json_array_foreach(json_object_get(t, "cost_models"), i, m) {
        json_t *tau = json_object_get(m, "kendall_tau");
        CU_ASSERT_TRUE(json_is_null(tau) || json_is_number(tau));
    }
    return n;
}

/* BERT-base on --trials 20 (it used to end "no kernel ran successfully"
 * with exit 2 after the first workload took the whole budget). */
static void test_bert_trials_20(void)
{
    char args[8192];
    int code;
    snprintf(args, sizeof args,
             "tune '%s/models/bert-base.json' --db '%s/bert.db' --trials 20 --threads 1 "
             "--min-time 0.5 --json",
             DTUNE_SOURCE_DIR, g_dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(t, "workloads")), 6);
    CU_ASSERT_EQUAL(count_scheduled(t), 6);
    CU_ASSERT(json_integer_value(json_object_get(t, "trials_total")) <= 20);
    json_t *w;
    size_t i;
    json_array_foreach(json_object_get(t, "workloads"), i, w)
        CU_ASSERT(json_integer_value(json_object_get(w, "trials")) >= 1);
    json_decref(t);

    /* the same again: the budget is spent, the selection is redone, and the
     * table says what each workload got; no "nan" anywhere */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p,
                                      "tune '%s/models/bert-base.json' --db '%s/bert.db' "
                                      "--trials 20 --threads 1 --min-time 0.5",
                                      DTUNE_SOURCE_DIR, g_dir),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "6 of 6 workloads scheduled, 0 skipped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "attn_scores"));
    CU_ASSERT_PTR_NULL(strstr(p.out, "nan"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Kendall tau"));
    dt_test_proc_free(&p);

    /* below the minimum (2 trials per workload not measured yet): refused */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p,
                                      "tune '%s/models/bert-base.json' --db '%s/bert-min.db' "
                                      "--trials 11 --threads 1",
                                      DTUNE_SOURCE_DIR, g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "at least 12"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p,
                                      "tune '%s/models/bert-base.json' --db '%s/bert-min.db' "
                                      "--time 10s --threads 1",
                                      DTUNE_SOURCE_DIR, g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "at least 12 s"));
    dt_test_proc_free(&p);
    char db[4096];
    snprintf(db, sizeof db, "%s/bert-min.db", g_dir);
    CU_ASSERT(dt_test_count_records(db) <= 0);
}

#define TINY_MODEL                                                                              \
    "{\"name\": \"tiny\", \"variables\": {\"seq\": {\"range\": [1, 8]}}, \"ops\": [\n"          \
    " {\"name\": \"proj\", \"op\": \"dense\", \"M\": \"seq\", \"N\": 32, \"K\": 16, "          \
    "\"count\": 2},\n"                                                                          \
    " {\"name\": \"scores\", \"op\": \"batch_matmul\", \"B\": 2, \"M\": \"seq\", \"N\": "     \
    "\"seq\", \"K\": 8, \"layout\": \"NT\", \"count\": 2},\n"                                   \
    " {\"name\": \"out\", \"op\": \"dense\", \"M\": \"seq\", \"N\": 16, \"K\": 32, "           \
    "\"epilogue\": \"bias\", \"count\": 1}]}\n"

/* A time budget over a model (the logic of `--time 30s` on BERT-base, on a
 * model small enough for the suite): every workload gets its first round and
 * a schedule, and the run keeps to its time. */
static void test_model_time_budget(void)
{
    char *spec = dt_test_write_file(g_dir, "tiny.json", TINY_MODEL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(spec);
    char args[8192];
    int code;
    snprintf(args, sizeof args,
             "tune '%s' --db '%s/tiny.db' --time 8s --threads 1 --min-time 0.5 --json", spec,
             g_dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(count_scheduled(t), 3);
    /* keeps to its time: generous slack, the suite also runs under ASan and
     * coverage builds on a loaded 2-core machine (a trial in flight finishes) */
    CU_ASSERT(json_number_value(json_object_get(t, "seconds")) < 8 + 20);
    json_decref(t);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s' --db '%s/tiny2.db' --time 5s", spec, g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "at least 6 s"));
    dt_test_proc_free(&p);
    free(spec);
}

/* ---- the kernel budget ------------------------------------------------------------- */

/* The kernel ids of a JSON array, as "id, id, ..." (the export comment's form). */
static void ids_text(json_t *ids, char *buf, size_t n)
{
    size_t i, len = 0;
    json_t *v;
    buf[0] = 0;
    json_array_foreach(ids, i, v)
    {
        int w = snprintf(buf + len, n - len, "%s%lld", i ? ", " : "",
                         (long long)json_integer_value(v));
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
}

/* `--max-kernels 2`: at most 2 distinct kernels dispatched, and the tune
 * summary (table and JSON), `dtune query` (text and JSON) and the exported
 * header all report the same kernels, objective and loss; a second tune on
 * the spent budget re-selects with --max-kernels 1 within the budget. */
static void test_max_kernels(void)
{
    char path[4096], args[8192];
    snprintf(path, sizeof path, "%s/mk.db", g_dir);
    int code;
    snprintf(args, sizeof args,
             "tune '" KEY "' --db '%s' --trials 40 --threads 1 --min-time 0.5 --max-kernels 2 "
             "--json", path);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "max_kernels")), 2);
    json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
    /* the tuning curve: a point per round */
    CU_ASSERT_EQUAL(dt_test_check_curve(json_object_get(t, "curve"), 40),
                    json_integer_value(json_object_get(w, "rounds")));
    json_int_t k = json_integer_value(json_object_get(w, "dispatched_kernels"));
    json_t *ids = json_object_get(w, "kernel_ids");
    CU_ASSERT(k >= 1 && k <= 2);
    CU_ASSERT_EQUAL(json_array_size(ids), (size_t)k);
    CU_ASSERT(json_integer_value(json_object_get(w, "unrestricted_kernels")) >= 1);
    json_t *loss = json_object_get(w, "loss");
    CU_ASSERT(json_is_number(loss) && json_number_value(loss) >= -1e-9);
    CU_ASSERT(json_is_number(json_object_get(w, "unrestricted_objective_ns")) ||
              json_is_null(json_object_get(w, "unrestricted_objective_ns")));
    char want[256];
    ids_text(ids, want, sizeof want);
    double tuned_loss = json_number_value(loss);
    /* what the first tune recorded: its selection may need fewer trials
     * than the budget leaves it (every top candidate already measured) */
    json_int_t first_total = json_integer_value(json_object_get(t, "trials_total"));
    CU_ASSERT(first_total >= 1 && first_total <= 40);

    /* query: the same schedule, kernels and loss */
    snprintf(args, sizeof args, "query '" KEY "' --db '%s' --shape M=3 --json", path);
    json_t *q = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    json_t *sch = json_object_get(json_array_get(q, 0), "schedule");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sch);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(sch, "kernels")), k);
    CU_ASSERT_TRUE(json_equal(json_object_get(sch, "kernel_ids"), ids));
    /* (the tuner keeps times as float: equal to 1e-5) */
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(sch, "loss")), tuned_loss, 1e-5);
    json_decref(q);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" KEY "' --db '%s' --shape M=3", path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "loss"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, want));
    dt_test_proc_free(&p);

    /* export: the header's comment names them */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '" KEY "' --db '%s' -o '%s/mk.c'", path, g_dir),
                    0);
    dt_test_proc_free(&p);
    char h[4096 + 16];
    snprintf(h, sizeof h, "%s/mk.h", g_dir);
    char *text = dt_test_slurp(h);
    char line[320];
    snprintf(line, sizeof line, " * Kernels (ids): %s over 10 shapes.", want);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, line));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "loss "));
    free(text);
    json_decref(t);

    /* the budget is spent: a tune on the same database only selects again,
     * here with one kernel, measuring nothing (chosen on measured times) */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '" KEY "' --db '%s' --trials 40 --threads 1 "
                                          "--min-time 0.5 --max-kernels 1", path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "kernel budget 1"));
    /* it measures at most what the first tune left of the 40 (nothing when
     * that one spent them all) and the total is what both recorded */
    long long measured = -1, total = -1;
    /* "N trials measured in", or "1 trial measured in" */
    const char *sum = strstr(p.out, " measured in ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sum);
    while (sum > p.out && sum[-1] != '\n')
        sum--;
    CU_ASSERT_EQUAL(sscanf(sum, "%lld trial", &measured), 1);
    const char *rec = strstr(sum, " s (");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
    CU_ASSERT_EQUAL(sscanf(rec, " s (%lld recorded in total)", &total), 1);
    CU_ASSERT(measured >= 0 && measured <= 40 - first_total);
    CU_ASSERT_EQUAL(total, first_total + measured);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, " 1/"));
    dt_test_proc_free(&p);
    snprintf(args, sizeof args,
             "tune '" KEY "' --db '%s' --trials 40 --threads 1 --min-time 0.5 --max-kernels 1 "
             "--json", path);
    t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    w = json_array_get(json_object_get(t, "workloads"), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "trials_new")), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(w, "dispatched_kernels")), 1);
    snprintf(args, sizeof args, "query '" KEY "' --db '%s' --shape M=3 --json", path);
    q = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    sch = json_object_get(json_array_get(q, 0), "schedule");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(sch, "kernels")), 1);
    /* shapes the one kernel was never measured on: the same count both ways */
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(sch, "unmeasured_shapes")),
                    json_integer_value(json_object_get(w, "unmeasured_shapes")));
    CU_ASSERT_TRUE(json_equal(json_object_get(sch, "loss"), json_object_get(w, "loss")) ||
                   fabs(json_number_value(json_object_get(sch, "loss")) -
                        json_number_value(json_object_get(w, "loss"))) < 1e-5);
    json_decref(q);
    json_decref(t);
    /* bad values are usage errors */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '" KEY "' --max-kernels few"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--max-kernels"));
    dt_test_proc_free(&p);
}

/* issue 33: a budget that ends before the selection measured every shape's
 * dispatched kernel (40 trials for 64 shapes) still gives a model latency:
 * the unmeasured shapes at the cost model's prediction, marked "~", with a
 * line saying how many shapes of which workload and why; --json has
 * model_latency_estimated_ns beside the (then null) measured one. */
static void test_latency_with_unmeasured_shapes(void)
{
    const char *key = "dense(M=1..64,N=48,K=32,epilogue=bias)";
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "tune '%s' --db '%s/u.db' --trials 40 --threads 1",
                                      key, g_dir),
                    0);
    const char *lat = strstr(p.out, "model latency (sum of count x mean time): ");
    CU_ASSERT_PTR_NOT_NULL(lat);
    if (lat) {
        lat += strlen("model latency (sum of count x mean time): ");
        /* a number, never "-": "~1.2 us" (estimated) or "1.2 us" */
        CU_ASSERT(lat[0] == '~' || isdigit((unsigned char)lat[0]));
        if (lat[0] == '~') {
            CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "shapes are the cost model's prediction, "
                                                 "not measured: the budget ended"));
        }
        if (lat[0] != '~' || !strstr(p.out, "(#1 dense: "))
            printf("\n%s\n", p.out);
    }
    dt_test_proc_free(&p);
    char args[2048];
    int code;
    snprintf(args, sizeof args, "tune '%s' --db '%s/u.db' --trials 40 --threads 1 --json", key,
             g_dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    json_t *w = json_array_get(json_object_get(t, "workloads"), 0);
    CU_ASSERT_TRUE(json_is_number(json_object_get(t, "model_latency_estimated_ns")));
    CU_ASSERT_TRUE(json_is_number(json_object_get(w, "estimated_objective_ns")));
    if (json_integer_value(json_object_get(w, "unmeasured_shapes")) == 0) {
        CU_ASSERT_TRUE(json_equal(json_object_get(w, "estimated_objective_ns"),
                                  json_object_get(w, "objective_ns")));
    } else {
        CU_ASSERT_TRUE(json_is_null(json_object_get(t, "model_latency_ns")));
    }
    json_decref(t);
}

/* ---- SIGINT ------------------------------------------------------------------------ */

static void test_sigint_keeps_and_exits_130(void)
{
    char path[4096], out[4096], err[4096];
    snprintf(path, sizeof path, "%s/int.db", g_dir);
    snprintf(out, sizeof out, "%s/int.out", g_dir);
    snprintf(err, sizeof err, "%s/int.err", g_dir);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fo, 1);
        dup2(fe, 2);
        execl(DTUNE_BIN, DTUNE_BIN, "tune", KEY, "--db", path, "--trials", "5000", "--threads",
              "1", "--min-time", "0.5", "--json", (char *)NULL);
        _exit(127);
    }
    int64_t n = 0;
    for (int i = 0; i < 1200 && n < 12; i++) {
        dt_sleep_ms(50);
        n = dt_test_count_records(path);
    }
    CU_ASSERT(n >= 12);
    kill(pid, SIGINT);
    int st = 0;
    pid_t w = 0;
    for (int i = 0; i < 1200 && w == 0; i++) {
        dt_sleep_ms(100);
        w = waitpid(pid, &st, WNOHANG);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        CU_FAIL("dtune tune did not stop within 120 s of SIGINT");
        return;
    }
    CU_ASSERT_TRUE(WIFEXITED(st));
    CU_ASSERT_EQUAL(WEXITSTATUS(st), 130);
    /* it printed what it kept: the summary, stopped, a schedule */
    char *text = dt_test_slurp(out);
    json_error_t jerr;
    json_t *t = json_loads(text, 0, &jerr);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_TRUE(json_is_true(json_object_get(t, "stopped")));
    int64_t total = json_integer_value(json_object_get(t, "trials_total"));
    CU_ASSERT(total >= 12 && total < 5000);
    CU_ASSERT_EQUAL(count_scheduled(t), 1);
    json_decref(t);
    text = dt_test_slurp(err);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "stopped by signal 2"));
    free(text);
    /* the records are all there, and the schedule answers */
    CU_ASSERT_EQUAL(dt_test_count_records(path), total);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" KEY "' --db '%s' --shape M=4", path), 0);
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"tune then query, in and beyond the range", test_tune_then_query},
        {"usage and input errors", test_errors},
        {"a static workload (no variables): tune, query, db check", test_static_workload},
        {"SIGKILL mid-tune, resume without re-measuring", test_resume_after_sigkill},
        {"tune measured by a dtune worker over TCP", test_tune_on_worker},
        {"BERT-base on 20 trials: every workload's outcome; minimums", test_bert_trials_20},
        {"a model on a time budget: every workload scheduled", test_model_time_budget},
        {"SIGINT mid-tune: kept, printed, exit 130", test_sigint_keeps_and_exits_130},
        {"--max-kernels 2: summary, query and export report the kernels", test_max_kernels},
        {"a model latency with unmeasured shapes: estimated, marked, explained",
         test_latency_with_unmeasured_shapes},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e tune", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
