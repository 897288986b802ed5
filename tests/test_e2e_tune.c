/* End-to-end: `dtune tune` and `dtune query` through the real binary — a
 * small tune with JSON output, queries in and beyond the tuned range, usage
 * and input errors, a tune killed with SIGKILL that resumes without
 * measuring anything twice, and a tune measured by a real `dtune worker`
 * over loopback TCP. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
             "tune '" KEY "' --db '%s/t.db' --trials 30 --threads 1 --min-time 0.5 --json",
             g_dir);
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
    json_decref(q);

    /* the text form names the kernel */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '" KEY "' --db '%s/t.db' --shape M=7", g_dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "-> kernel"));
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
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
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

int main(void)
{
    CU_TestInfo tests[] = {
        {"tune then query, in and beyond the range", test_tune_then_query},
        {"usage and input errors", test_errors},
        {"SIGKILL mid-tune, resume without re-measuring", test_resume_after_sigkill},
        {"tune measured by a dtune worker over TCP", test_tune_on_worker},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e tune", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
