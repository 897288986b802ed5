/* End-to-end: the real `dtune db check|prune|merge` (with --json, exit codes
 * and messages) and `dtune daemon --keep-jobs`.  Databases are made with
 * the db API; damage is planted with sqlite3 directly. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "db/db.h"
#include "tests/dt_test.h"


static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *s = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &s), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
}

static int64_t rows(const char *path, const char *table)
{
    dt_db *db;
    dt_err e;
    if (dt_db_open(path, DT_DB_READONLY, &db, &e))
        return -1;
    dt_db_stats_info s;
    int64_t n = -1;
    if (dt_db_stats(db, &s, &e) == 0)
        for (int i = 0; i < DT_DB_N_TABLES; i++)
            if (!strcmp(s.tables[i].name, table))
                n = s.tables[i].rows;
    dt_db_close(db);
    return n;
}

/* nk kernels measured on M=1..8 (kernel i: i*100*scale ns), one schedule
 * of one range using kernel sk, and `jobs` finished jobs. */
static void make_db(const char *path, int nk, double scale, const char *uid, int jobs, int sk)
{
    unlink(path);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t t, w, k1 = 0;
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "x86_64-e2e", "generic", NULL, &t, &e), 0);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, "dense(M=1..8,N=16,K=16)", "dense", "{}", &w, &e),
                    0);
    CU_ASSERT_EQUAL(dt_db_begin(db, &e), 0);
    for (int i = 1; i <= nk; i++) {
        char ann[64];
        snprintf(ann, sizeof ann, "{\"MR\":%d,\"NR\":16}", i);
        int64_t k;
        CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", ann, NULL, &k, &e), 0);
        if (i == sk)
            k1 = k;
        for (int m = 1; m <= 8; m++) {
            char shape[16], u[64];
            snprintf(shape, sizeof shape, "M=%d", m);
            snprintf(u, sizeof u, "%s-%d-%d", uid, i, m);
            dt_db_measurement r = {.kernel_id = k, .target_id = t, .workload_id = w,
                                   .shape = shape, .threads = 1, .status = DT_TRIAL_OK,
                                   .min_ns = i * 100.0 * scale, .median_ns = i * 100.0 * scale,
                                   .trial_uid = u};
            CU_ASSERT_EQUAL(dt_db_measurement_insert(db, &r, NULL, NULL, &e), 0);
        }
    }
    CU_ASSERT_EQUAL(dt_db_commit(db, &e), 0);
    dt_db_schedule row = {.shape_lo = "M=1", .shape_hi = "M=8", .kernel_id = k1,
                          .predicted_ns = 100 * sk * scale, .measured_ns = 100 * sk * scale};
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w, t, 1, &row, 1, &e), 0);
    dt_db_job_update done = {.set_state = true, .state = DT_JOB_DONE};
    for (int i = 0; i < jobs; i++) {
        int64_t id;
        CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", NULL, &id, &e), 0);
        CU_ASSERT_EQUAL(dt_db_job_update_fields(db, id, &done, &e), 0);
    }
    dt_db_close(db);
}

static void test_help(void)
{
    static const char *cmds[] = {"db check", "db prune", "db merge"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        dt_test_proc p;
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "%s --help", cmds[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Usage: dtune"));
        dt_test_proc_free(&p);
    }
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "merge"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db prune --keep-jobs 3x --db %s", dt_test_path("x.db")), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad job retention '3x'"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db prune --keep 0"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db merge --db %s", dt_test_path("x.db")), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "missing SRC.db"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --keep-jobs soon"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--keep-jobs"));
    dt_test_proc_free(&p);
}

static void test_check(void)
{
    const char *db = dt_test_path("check.db");
    make_db(db, 3, 1, "c", 0, 1);
    char args[4200];
    snprintf(args, sizeof args, "db check --json --db %s", db);
    int code;
    json_t *j = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT(json_is_true(json_object_get(j, "ok")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "count")), 0);
    json_decref(j);
    /* two kinds of damage: both listed, exit 2 */
    sql_exec(db, "PRAGMA foreign_keys = OFF;"
                 "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
                 " threads, created_at) VALUES (1, 1, 'M=4', 'M=8', 1, 1, 0);"
                 "UPDATE measurements SET kernel_id = 42 WHERE id = 3;");
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --json --db %s", db), 2);
    j = json_loads(p.out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT(json_is_false(json_object_get(j, "ok")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "count")), 2);
    char *text = json_dumps(json_object_get(j, "problems"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "row 3 of table measurements refers to a row of kernels"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "schedules row 2 (M=4..M=8) overlaps"));
    free(text);
    json_decref(j);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "foreign_key"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "is damaged: 2 problems"));
    dt_test_proc_free(&p);
    /* not a database: 2; missing: 2 */
    FILE *f = fopen(dt_test_path("text.db"), "w");
    fputs("hello, this is not SQLite", f);
    fclose(f);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", dt_test_path("text.db")), 2);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", dt_test_path("none.db")), 2);
    dt_test_proc_free(&p);
}

static void test_prune(void)
{
    const char *db = dt_test_path("prune.db");
    make_db(db, 20, 1, "p", 5, 1);
    char args[4200];
    snprintf(args, sizeof args, "db prune --dry-run --keep 4 --keep-jobs 2 --json --db %s", db);
    int code;
    json_t *j = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT(json_is_true(json_object_get(j, "dry_run")));
    json_t *m = json_object_get(json_object_get(j, "tables"), "measurements");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(m, "rows")), 160);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(m, "deleted")), 160 - 32);
    json_t *jb = json_object_get(json_object_get(j, "tables"), "jobs");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(jb, "deleted")), 3);
    CU_ASSERT(json_integer_value(json_object_get(j, "deleted_bytes")) > 0);
    json_decref(j);
    CU_ASSERT_EQUAL(rows(db, "measurements"), 160);
    CU_ASSERT_EQUAL(rows(db, "jobs"), 5);

    snprintf(args, sizeof args, "db prune --keep 4 --keep-jobs 2 --json --db %s", db);
    j = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT(json_is_true(json_object_get(j, "vacuumed")));
    CU_ASSERT(json_integer_value(json_object_get(j, "size_after")) <=
              json_integer_value(json_object_get(j, "size_before")));
    json_decref(j);
    CU_ASSERT_EQUAL(rows(db, "measurements"), 32);
    CU_ASSERT_EQUAL(rows(db, "jobs"), 2);
    /* still clean (test_db_upkeep.c looks the schedule up after a prune) */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", db), 0);
    dt_test_proc_free(&p);
    /* text output */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db prune --db %s", db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "pruned"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "measurements"));
    dt_test_proc_free(&p);
}

static void test_merge(void)
{
    const char *a = dt_test_path("a.db"), *b = dt_test_path("b.db"), *m = dt_test_path("m.db");
    make_db(a, 3, 1, "a", 0, 2);
    make_db(b, 4, 0.5, "b", 0, 1);
    unlink(m);
    char args[8400];
    snprintf(args, sizeof args, "db merge %s %s --db %s --json", a, b, m);
    int code;
    json_t *j = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *src = json_object_get(j, "sources");
    CU_ASSERT_EQUAL(json_array_size(src), 2);
    json_t *sa = json_array_get(src, 0), *sb = json_array_get(src, 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(sa, "added"), "measurements")),
                    24);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(sa, "schedules"), "added")),
                    1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(sb, "added"), "kernels")), 1);
    /* b's schedule is twice as fast: it wins */
    CU_ASSERT_EQUAL(
        json_integer_value(json_object_get(json_object_get(sb, "schedules"), "replaced")), 1);
    json_decref(j);
    int64_t before = rows(m, "measurements"), kernels = rows(m, "kernels");
    CU_ASSERT_EQUAL(before, 24 + 32);
    /* re-run twice: nothing added */
    for (int r = 0; r < 2; r++) {
        j = dt_test_run_dtune_json(&code, args);
        CU_ASSERT_EQUAL(code, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        json_t *s;
        size_t i;
        json_array_foreach(json_object_get(j, "sources"), i, s)
        {
            const char *key;
            json_t *v;
            json_object_foreach(json_object_get(s, "added"), key, v)
                CU_ASSERT_EQUAL(json_integer_value(v), 0);
            CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(s, "schedules"),
                                                               "replaced")),
                            0);
        }
        json_decref(j);
        CU_ASSERT_EQUAL(rows(m, "measurements"), before);
        CU_ASSERT_EQUAL(rows(m, "kernels"), kernels);
        CU_ASSERT_EQUAL(rows(m, "schedules"), 1);
    }
    /* a newer schema is refused, exit 2, the destination untouched */
    sql_exec(b, "PRAGMA user_version = 9");
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db merge %s --db %s", b, m), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "cannot merge"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "schema version 9"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(rows(m, "measurements"), before);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db merge %s --db %s", m, m), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "into itself"));
    dt_test_proc_free(&p);
}

/* Issue 42: `dtune db check`'s exit code says what happened: 2 problems
 * found (or not a dtune database, or missing), 3 the check could not run.
 * A file of another schema version is not damaged, it is not checked (a
 * read-only open never migrates): 3, saying how to check it. */
static void test_check_exit_codes(void)
{
    char cmd[9000];
    const char *v2 = dt_test_path("v2-check.db");
    snprintf(cmd, sizeof cmd, "cp '%s/tests/data/v2/v2.db' '%s'", DTUNE_SOURCE_DIR, v2);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", v2), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "cannot check"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "schema version 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "dtune db init"));
    CU_ASSERT_STRING_EQUAL(p.out, "");
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --json --db %s", v2), 3);
    dt_test_proc_free(&p);
    /* still schema 2: db check never migrates */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db stats --db %s", v2), 2);
    dt_test_proc_free(&p);
    /* migrated (db init runs the same checks), it checks clean */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db init --db %s", v2), 0);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", v2), 0);
    dt_test_proc_free(&p);
    /* a newer schema: not checked either */
    const char *newer = dt_test_path("newer-check.db");
    make_db(newer, 1, 1, "n", 0, 1);
    sql_exec(newer, "PRAGMA user_version = 9");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", newer), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "upgrade dtune"));
    dt_test_proc_free(&p);
    /* damage found: 2 */
    const char *bad = dt_test_path("bad-check.db");
    make_db(bad, 1, 1, "b", 0, 1);
    sql_exec(bad, "UPDATE schedules SET shape_lo = 'b=1', shape_hi = 'b=1'");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "db check --db %s", bad), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "'b' is not a variable of this workload"));
    dt_test_proc_free(&p);
}

/* The daemon prunes finished jobs past --keep-jobs when it starts. */
static void test_daemon_retention(void)
{
    const char *db = dt_test_path("daemon.db"), *log = dt_test_path("daemon.log");
    make_db(db, 1, 1, "d", 4, 1);
    char cmd[9000];
    snprintf(cmd, sizeof cmd,
             "%s daemon --db %s --listen 127.0.0.1:0 --keep-jobs 1 >%s 2>&1 & echo $!", DTUNE_BIN,
             db, log);
    FILE *f = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    long pid = 0;
    CU_ASSERT_EQUAL(fscanf(f, "%ld", &pid), 1);
    pclose(f);
    int64_t n = -1;
    for (int i = 0; i < 200 && n != 1; i++) {
        usleep(50000);
        n = rows(db, "jobs");
    }
    CU_ASSERT_EQUAL(n, 1);
    if (pid > 0)
        kill((pid_t)pid, SIGTERM);
    for (int i = 0; i < 100 && pid > 0 && kill((pid_t)pid, 0) == 0; i++)
        usleep(50000);
    char *text = dt_test_slurp(log);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "listening"));
    free(text);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"help and usage errors", test_help},
        {"dtune db check: clean, damaged (every problem), not a database", test_check},
        {"dtune db prune: dry run, policy, the schedule still answers", test_prune},
        {"dtune db merge: twice is once, conflicts, schema refused", test_merge},
        {"issue 42: dtune db check exits 3 when it could not check (another schema)",
         test_check_exit_codes},
        {"dtune daemon --keep-jobs prunes the job history", test_daemon_retention},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"e2e db upkeep", dt_test_suite_init_with_cache, dt_test_suite_cleanup, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
