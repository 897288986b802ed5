/* db/ upkeep: dt_db_check_all (every kind of damage planted with sqlite3
 * directly and reported, all at once), dt_db_prune (the policy, dry runs,
 * schedules still served), dt_db_merge (idempotent, conflicts, schema
 * refusals) and the job retention. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/db.h"
#include "dispatch/dispatch.h"
#include "tests/dt_test.h"


#define TARGET "x86_64-test-1c"
#define WKEY "dense(M=1..4,N=16,K=16)"

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *s = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &s), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(s, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fprintf(stderr, "sql failed: %s: %s\n", sql, err ? err : "");
    CU_ASSERT_EQUAL(rc, SQLITE_OK);
    sqlite3_free(err);
    sqlite3_close(s);
}

static int64_t count(dt_db *db, const char *table)
{
    dt_db_stats_info s;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_stats(db, &s, &e), 0);
    for (int i = 0; i < DT_DB_N_TABLES; i++)
        if (!strcmp(s.tables[i].name, table))
            return s.tables[i].rows;
    return -1;
}

static int64_t kernel(dt_db *db, int i)
{
    char ann[64];
    snprintf(ann, sizeof ann, "{\"MR\":%d,\"NR\":16}", i);
    int64_t id = 0;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", ann, NULL, &id, &e), 0);
    return id;
}

static void record(dt_db *db, int64_t k, int64_t t, int64_t w, int m, dt_trial_status st,
                   double ns, const char *uid)
{
    char shape[32];
    snprintf(shape, sizeof shape, "M=%d", m);
    dt_db_measurement r = {.kernel_id = k, .target_id = t, .workload_id = w, .shape = shape,
                           .threads = 1, .status = st, .min_ns = ns, .median_ns = ns,
                           .trial_uid = uid, .error = st == DT_TRIAL_OK ? NULL : "boom"};
    if (st != DT_TRIAL_OK)
        r.min_ns = r.median_ns = NAN;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_measurement_insert(db, &r, NULL, NULL, &e), 0);
}

/* A database with one target and WKEY: kernels 1..nk measured on M=1..4,
 * kernel i taking i*100*scale ns; a schedule of two ranges using kernels
 * sched[0], sched[1] (measured_ns from the records). */
static dt_db *fixture(const char *path, int nk, double scale, const char *uid_prefix,
                      const int sched[2], int64_t *tid, int64_t *wid, int64_t *kids)
{
    unlink(path);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, TARGET, "generic", NULL, tid, &e), 0);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, WKEY, "dense", "{}", wid, &e), 0);
    for (int i = 1; i <= nk; i++) {
        kids[i] = kernel(db, i);
        for (int m = 1; m <= 4; m++) {
            char uid[64];
            snprintf(uid, sizeof uid, "%s-%d-%d", uid_prefix, i, m);
            record(db, kids[i], *tid, *wid, m, DT_TRIAL_OK, i * 100.0 * scale, uid);
        }
    }
    dt_db_schedule rows[2] = {
        {.shape_lo = "M=1", .shape_hi = "M=2", .kernel_id = kids[sched[0]],
         .predicted_ns = 1, .measured_ns = sched[0] * 100.0 * scale},
        {.shape_lo = "M=3", .shape_hi = "M=4", .kernel_id = kids[sched[1]],
         .predicted_ns = 1, .measured_ns = sched[1] * 100.0 * scale},
    };
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, *wid, *tid, 1, rows, 2, &e), 0);
    return db;
}

/* ---- check ------------------------------------------------------------------ */

typedef struct {
    char text[16384];
    int n;
} problems;

static void collect(const char *kind, const char *msg, void *ud)
{
    problems *p = ud;
    size_t len = strlen(p->text);
    snprintf(p->text + len, sizeof p->text - len, "[%s] %s\n", kind, msg);
    p->n++;
}

static void test_check_clean(void)
{
    int64_t t, w, k[8];
    dt_db *db = fixture(dt_test_path("clean.db"), 4, 1, "c", (int[]){1, 2}, &t, &w, k);
    problems p = {{0}, 0};
    int64_t n = -1;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(p.n, 0);
    dt_db_close(db);
}

static void test_check_damage(void)
{
    const char *path = dt_test_path("damaged.db");
    int64_t t, w, k[8];
    dt_db *db = fixture(path, 4, 1, "d", (int[]){1, 2}, &t, &w, k);
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_cost_model_save(db, t, "dense", "x", 1, 3, NULL, NULL, &e), 0);
    int64_t job;
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{\"workload\":\"x\"}", NULL, &job, &e), 0);
    dt_db_close(db);
    /* one of each kind of damage, by hand */
    sql_exec(path,
             "PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON;"
             /* a schedule naming a missing kernel */
             "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
             " threads, created_at) VALUES (1, 1, 'M=1', 'M=4', 999, 2, 0);"
             /* overlapping and reversed ranges of one schedule */
             "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
             " threads, created_at) VALUES (1, 1, 'M=2', 'M=2', 1, 1, 0);"
             "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
             " threads, created_at) VALUES (1, 1, 'M=4', 'M=3', 1, 3, 0);"
             /* a measurement of a missing workload */
             "INSERT INTO measurements (kernel_id, target_id, workload_id, shape, threads, status,"
             " min_ns, median_ns, trial_uid, created_at) VALUES (1, 1, 77, 'M=1', 1, 'ok', 1, 1,"
             " 'dangling', 0);"
             /* an ok measurement without times, an unknown status */
             "INSERT INTO measurements (kernel_id, target_id, workload_id, shape, threads, status,"
             " trial_uid, created_at) VALUES (1, 1, 1, 'M=1', 1, 'ok', 'notimes', 0);"
             "INSERT INTO measurements (kernel_id, target_id, workload_id, shape, threads, status,"
             " trial_uid, created_at) VALUES (1, 1, 1, 'M=1', 1, 'exploded', 'status', 0);"
             /* JSON that does not parse, an annotation that is not an object */
             "UPDATE kernels SET annotation = '{broken' WHERE id = 2;"
             "UPDATE kernels SET attrs = '[1]' WHERE id = 3;"
             /* a cost model of a missing target */
             "INSERT INTO cost_models (target_id, op, model, n_records, created_at)"
             " VALUES (5, 'dense', x'01', 1, 0);"
             /* a job in an unknown state */
             "UPDATE jobs SET state = 'lost' WHERE id = 1;"
             /* a kernel of another op dispatched for a dense workload */
             "INSERT INTO kernels (op, dtype, attrs, sketch, annotation, created_at)"
             " VALUES ('batch_matmul', 'f32', '{}', 'x', '{}', 0);"
             "UPDATE schedules SET kernel_id = (SELECT max(id) FROM kernels) WHERE id = 2;");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    problems p = {{0}, 0};
    int64_t n = 0;
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    static const char *const want[] = {
        "[foreign_key] row 3 of table schedules refers to a row of kernels",
        "[foreign_key] row 17 of table measurements refers to a row of workloads",
        "[foreign_key] row 2 of table cost_models refers to a row of targets",
        "[json] the annotation of kernels row 2 is not valid JSON",
        "[kernel] the attrs of kernels row 3 is not a JSON object",
        "[measurement] measurements row 18 is ok but its times are not positive",
        "[measurement] measurements row 19 has the unknown status 'exploded'",
        "[job] jobs row 1 has the unknown state 'lost'",
        ("[schedule] schedules row 2 dispatches workload 1 (op dense) to kernel 5 of op "
         "batch_matmul"),
        "[schedule] schedules row 4 (M=2..M=2) overlaps or comes before row 2",
        "[schedule] schedules row 5 has the range M=4..M=3, which ends before it starts",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(p.text, want[i]))
            fprintf(stderr, "missing: %s\nin:\n%s", want[i], p.text);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.text, want[i]));
    }
    CU_ASSERT_EQUAL(n, p.n);
    CU_ASSERT(n >= (int64_t)(sizeof want / sizeof want[0]));
    /* dt_db_check (db init's) still stops at the first problem */
    CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is damaged: row"));
    dt_db_close(db);
}

static void test_check_schema_all(void)
{
    const char *path = dt_test_path("schema.db");
    int64_t t, w, k[8];
    dt_db_close(fixture(path, 2, 1, "s", (int[]){1, 2}, &t, &w, k));
    sql_exec(path, "DROP TABLE jobs; DROP INDEX schedules_by_kernel;");
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    problems p = {{0}, 0};
    int64_t n = 0;
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "[schema] table jobs is missing"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "[schema] table schedules has indexes"));
    dt_db_close(db);
}

static void test_check_many_capped(void)
{
    const char *path = dt_test_path("many.db");
    int64_t t, w, k[8];
    dt_db_close(fixture(path, 1, 1, "m", (int[]){1, 1}, &t, &w, k));
    sql_exec(path, "PRAGMA ignore_check_constraints = ON;"
                   "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 29)"
                   " INSERT INTO measurements (kernel_id, target_id, workload_id, shape, threads,"
                   " status, min_ns, median_ns, trial_uid, created_at)"
                   " SELECT 1, 1, 1, 'M=1', 0, 'ok', 1, 1, 'z' || i, 0 FROM n;");
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    problems p = {{0}, 0};
    int64_t n = 0;
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 30);
    CU_ASSERT_EQUAL(p.n, DT_DB_CHECK_MAX_PER_RULE + 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "... and 10 more problems of this kind"));
    dt_db_close(db);
}

/* ---- the schedule reader (issue 42) ----------------------------------------- */

#define WKEY2 "dense(M=b*s,N=16,K=16;b=1..2,s=1..4)"

/* A reader that cannot read (out of memory): the check fails with it. */
static int failing_reader(const char *key, const dt_db_schedule *rows, size_t n, bool whole,
                          dt_db_schedule_problem_fn report, void *ctx, void *ud, dt_err *e)
{
    (void)key, (void)rows, (void)n, (void)whole, (void)report, (void)ctx, (void)ud;
    return dt_errf(e, DT_ENOMEM, "the reader ran out of memory");
}

/* dt_db_check_all reads every schedule with the handle's reader (dispatch's,
 * the code lookups use): corners naming other variables, a row of values
 * outside the set; a row db/'s own rules already report is reported once;
 * a schema-2 run overlapping a box (which db/ does not compare) is found by
 * reading the table.  Without a reader db/'s rules alone run; merge gives
 * the source the destination's reader. */
static void test_check_schedule_reader(void)
{
    int64_t t, w, k[8];
    const char *path = dt_test_path("reader.db");
    dt_db *db = fixture(path, 2, 1, "r", (int[]){1, 2}, &t, &w, k);
    int64_t w2;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, WKEY2, "dense", "{}", &w2, &e), 0);
    dt_db_schedule r2[] = {
        {.shape_lo = "b=1,s=1", .shape_hi = "b=2,s=1", .box = 0, .kernel_id = k[1],
         .predicted_ns = NAN, .measured_ns = NAN},
        {.shape_lo = "b=1,s=3", .shape_hi = "b=1,s=4", .box = 1, .kernel_id = k[2],
         .predicted_ns = NAN, .measured_ns = NAN},
    };
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w2, t, 1, r2, 2, &e), 0);
    dt_db_close(db);
    /* rows 1, 2: WKEY; rows 3, 4: WKEY2, the run b=1,s=1..b=2,s=1 holding
     * b=1,s=3..4 of the box */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    problems p = {{0}, 0};
    int64_t n = -1;
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 0); /* db/'s rules do not compare a run with a box */
    dt_dispatch_attach_reader(db);
    memset(&p, 0, sizeof p);
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "[schedule] schedules row 4 (workload 2 " WKEY2));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "overlap (it overlaps schedules row 3)"));
    dt_db_close(db);

    /* corners of another variable (row 2), values outside the set (row 1
     * goes to M=0..M=2): db/'s rules see nothing wrong; a reversed range
     * (row 3's run): db/'s rule reports it, the reader's line is dropped */
    sql_exec(path, "UPDATE schedules SET shape_lo = 'x=3', shape_hi = 'x=4' WHERE id = 2;"
                   "UPDATE schedules SET shape_lo = 'M=0' WHERE id = 1;"
                   "UPDATE schedules SET shape_lo = 'b=2,s=1', shape_hi = 'b=1,s=1' WHERE id = 3;");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    memset(&p, 0, sizeof p);
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 1); /* db/'s rules see the reversed run only */
    dt_dispatch_attach_reader(db);
    memset(&p, 0, sizeof p);
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), 0);
    if (n != 3)
        fprintf(stderr, "\n%s", p.text);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "schedules row 1 (workload 1 " WKEY ", target 1 "
                                          TARGET ", 1 thread) cannot be served: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "schedules row 2 (workload 1 " WKEY ", target 1 "
                                          TARGET ", 1 thread) cannot be served: shape 'x=3': "
                                          "'x' is not a variable"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "schedules row 3 has the range b=2,s=1..b=1,s=1, "
                                          "which ends before it starts"));
    CU_ASSERT_PTR_NULL(strstr(p.text, "schedules row 3 (workload"));
    /* refusals name the rows */
    CU_ASSERT_EQUAL(dt_db_require_sound(db, "test", NULL, NULL, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'x' is not a variable"));
    /* a reader that fails makes the check fail */
    dt_db_set_schedule_reader(db, failing_reader, NULL);
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &n, &e), DT_ENOMEM);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the reader ran out of memory"));
    dt_db_set_schedule_reader(db, NULL, NULL);
    CU_ASSERT_EQUAL(dt_db_check_all(db, NULL, NULL, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 1);
    dt_db_close(db);

    /* merge: the source is read with the destination's reader */
    const char *dst = dt_test_path("reader-dst.db");
    unlink(dst);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dst, DT_DB_CREATE, &db, &e), 0);
    dt_db_merge_info m;
    sql_exec(path, "UPDATE schedules SET shape_lo = 'b=1,s=1', shape_hi = 'b=2,s=1' WHERE id = 3;"
                   "UPDATE schedules SET shape_lo = 'M=1' WHERE id = 1;");
    dt_dispatch_attach_reader(db);
    CU_ASSERT_EQUAL(dt_db_merge(db, path, NULL, NULL, &m, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "schedules row 2 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'x' is not a variable"));
    CU_ASSERT_EQUAL(count(db, "schedules"), 0);
    dt_db_close(db);
}

/* ---- prune ------------------------------------------------------------------ */

static void test_prune_policy(void)
{
    const char *path = dt_test_path("prune.db");
    int64_t t, w, k[24];
    /* 12 kernels on 4 shapes; the schedule uses kernel 12 (the slowest) on M=1..2 */
    dt_db *db = fixture(path, 12, 1, "p", (int[]){12, 1}, &t, &w, k);
    dt_err e;
    /* failures: 5 deterministic (kernels 13..17), 3 worker_lost (18..20) */
    for (int i = 13; i <= 20; i++) {
        k[i] = kernel(db, i);
        char uid[32];
        snprintf(uid, sizeof uid, "f-%d", i);
        record(db, k[i], t, w, 1, i <= 17 ? DT_TRIAL_COMPILE_ERROR : DT_TRIAL_WORKER_LOST, NAN,
               uid);
    }
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(dt_db_cost_model_save(db, t, "dense", "abc", 3, i, NULL, NULL, &e), 0);
    int64_t j1, j2, j3;
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", NULL, &j1, &e), 0);
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", NULL, &j2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", NULL, &j3, &e), 0);
    dt_db_job_update done = {.set_state = true, .state = DT_JOB_DONE};
    dt_db_job_update running = {.set_state = true, .state = DT_JOB_RUNNING};
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j1, &done, &e), 0);
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j2, &done, &e), 0);
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j3, &running, &e), 0);
    dt_db_close(db);
    /* j1 finished 40 days ago, j3 has been running as long */
    sql_exec(path, "UPDATE jobs SET updated_at = updated_at - 40 * 86400,"
                   " created_at = created_at - 40 * 86400 WHERE id IN (1, 3)");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, 0, &db, &e), 0);

    dt_db_prune_opts o = dt_db_prune_defaults();
    CU_ASSERT_EQUAL(o.keep, 8);
    o.keep = 3;
    o.keep_failed = 2;
    o.now = time(NULL) + 8 * 86400; /* past the kernels' grace period */
    o.dry_run = true;
    dt_db_prune_info dry;
    CU_ASSERT_EQUAL(dt_db_prune(db, &o, &dry, &e), 0);
    CU_ASSERT_EQUAL(count(db, "measurements"), 56);
    CU_ASSERT_EQUAL(count(db, "kernels"), 20);
    CU_ASSERT_EQUAL(count(db, "cost_models"), 3);
    CU_ASSERT_EQUAL(count(db, "jobs"), 3);
    CU_ASSERT_EQUAL(dry.size_after, dry.size_before);
    /* kept: 4 shapes x top 3 + kernel 12 on 4 shapes + 2 failures = 18 */
    CU_ASSERT_EQUAL(dry.tables[DT_PRUNE_MEASUREMENTS].rows, 56);
    CU_ASSERT_EQUAL(dry.tables[DT_PRUNE_MEASUREMENTS].deleted, 56 - 18);
    CU_ASSERT(dry.tables[DT_PRUNE_MEASUREMENTS].bytes > 38 * 64);
    CU_ASSERT_EQUAL(dry.tables[DT_PRUNE_KERNELS].deleted, 14);
    CU_ASSERT_EQUAL(dry.tables[DT_PRUNE_COST_MODELS].deleted, 2);
    CU_ASSERT_EQUAL(dry.tables[DT_PRUNE_JOBS].deleted, 1);

    o.dry_run = false;
    dt_db_prune_info real;
    CU_ASSERT_EQUAL(dt_db_prune(db, &o, &real, &e), 0);
    for (int i = 0; i < DT_PRUNE_N_TABLES; i++)
        CU_ASSERT_EQUAL(real.tables[i].deleted, dry.tables[i].deleted);
    CU_ASSERT(real.vacuumed);
    CU_ASSERT(real.size_after > 0);
    CU_ASSERT_EQUAL(count(db, "measurements"), 18);
    CU_ASSERT_EQUAL(count(db, "kernels"), 6);
    CU_ASSERT_EQUAL(count(db, "cost_models"), 1);
    CU_ASSERT_EQUAL(count(db, "jobs"), 2);
    dt_db_job j;
    CU_ASSERT_EQUAL(dt_db_job_get(db, j1, &j, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(dt_db_job_get(db, j3, &j, &e), 0); /* running: never pruned */
    dt_db_job_free(&j);
    /* the newest cost model is the one left */
    dt_db_cost_model cm;
    CU_ASSERT_EQUAL(dt_db_cost_model_load_latest(db, t, "dense", &cm, &e), 0);
    CU_ASSERT_EQUAL(cm.n_records, 2);
    dt_db_cost_model_free(&cm);
    /* the best record of every shape and the scheduled kernel's survive */
    int64_t n = 0;
    dt_db_measurement_filter f = {.kernel_id = k[12]};
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 4);
    f.kernel_id = k[1];
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 4);
    f.kernel_id = k[4];
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 0);
    /* the schedule still serves */
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, WKEY, TARGET, 1, &d, &e), 0);
    dt_dispatch_hit hit;
    CU_ASSERT_EQUAL(dt_dispatch_find(d, (int64_t[]){2}, &hit), 0);
    CU_ASSERT_EQUAL(hit.range->kernel_id, k[12]);
    CU_ASSERT_EQUAL(dt_dispatch_find(d, (int64_t[]){4}, &hit), 0);
    CU_ASSERT_EQUAL(hit.range->kernel_id, k[1]);
    dt_dispatch_free(d);
    /* clean afterwards, and a second prune deletes nothing */
    int64_t probs = -1;
    problems p = {{0}, 0};
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, &p, &probs, &e), 0);
    CU_ASSERT_EQUAL(probs, 0);
    if (probs)
        fprintf(stderr, "%s", p.text);
    CU_ASSERT_EQUAL(dt_db_prune(db, &o, &real, &e), 0);
    for (int i = 0; i < DT_PRUNE_N_TABLES; i++)
        CU_ASSERT_EQUAL(real.tables[i].deleted, 0);
    dt_db_close(db);
}

static void test_job_retention(void)
{
    dt_db_job_retention r;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_job_retention_parse("30d", &r, &e), 0);
    CU_ASSERT_EQUAL(r.max_age_s, 30 * 86400);
    CU_ASSERT_EQUAL(r.max_count, -1);
    CU_ASSERT_EQUAL(dt_db_job_retention_parse("12h", &r, &e), 0);
    CU_ASSERT_EQUAL(r.max_age_s, 12 * 3600);
    CU_ASSERT_EQUAL(dt_db_job_retention_parse("500", &r, &e), 0);
    CU_ASSERT_EQUAL(r.max_count, 500);
    CU_ASSERT_EQUAL(r.max_age_s, -1);
    CU_ASSERT_EQUAL(dt_db_job_retention_parse("all", &r, &e), 0);
    CU_ASSERT(r.max_age_s < 0 && r.max_count < 0);
    CU_ASSERT_EQUAL(dt_db_job_retention_parse("30x", &r, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "bad job retention '30x'"));
    CU_ASSERT_EQUAL(dt_db_job_retention_parse("", &r, &e), DT_EINVAL);
    char buf[16];
    dt_db_job_retention_parse("7d", &r, &e);
    dt_db_job_retention_format(&r, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "7d");

    const char *path = dt_test_path("jobs.db");
    unlink(path);
    dt_db *db;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    dt_db_job_update done = {.set_state = true, .state = DT_JOB_FAILED};
    for (int i = 0; i < 5; i++) {
        int64_t id;
        CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", NULL, &id, &e), 0);
        if (i < 4)
            CU_ASSERT_EQUAL(dt_db_job_update_fields(db, id, &done, &e), 0);
    }
    int64_t n = -1;
    dt_db_job_retention_parse("2", &r, &e);
    CU_ASSERT_EQUAL(dt_db_job_prune(db, &r, 0, true, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(count(db, "jobs"), 5);
    CU_ASSERT_EQUAL(dt_db_job_prune(db, &r, 0, false, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(count(db, "jobs"), 3); /* the 2 newest finished + the queued one */
    dt_db_job j;
    CU_ASSERT_EQUAL(dt_db_job_get(db, 1, &j, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(dt_db_job_get(db, 4, &j, &e), 0);
    dt_db_job_free(&j);
    /* by age: a day later, "1h" drops every finished job, never the queued one */
    dt_db_job_retention_parse("1h", &r, &e);
    CU_ASSERT_EQUAL(dt_db_job_prune(db, &r, time(NULL) + 86400, false, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(count(db, "jobs"), 1);
    dt_db_close(db);
}

/* ---- merge ------------------------------------------------------------------ */

static void test_merge(void)
{
    const char *a = dt_test_path("ma.db"), *b = dt_test_path("mb.db");
    int64_t ta, wa, ka[8], tb, wb, kb[8];
    /* a: kernels 1..3 at 100 ns steps, schedule (1, 2); b: kernels 1..4 twice as
     * fast (the same kernels: same identity), schedule (1, 1), and a cost model */
    dt_db *da = fixture(a, 3, 1, "a", (int[]){1, 2}, &ta, &wa, ka);
    dt_db *db = fixture(b, 4, 0.5, "b", (int[]){1, 1}, &tb, &wb, kb);
    dt_err e;
    int64_t w2;
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, "dense(M=1..4,N=32,K=16)", "dense", "{}", &w2, &e),
                    0);
    CU_ASSERT_EQUAL(dt_db_cost_model_save(db, tb, "dense", "model-b", 7, 16, NULL, NULL, &e), 0);
    dt_db_close(db);

    dt_db_merge_info m;
    CU_ASSERT_EQUAL(dt_db_merge(da, b, NULL, NULL, &m, &e), 0);
    CU_ASSERT_EQUAL(m.targets, 0);
    CU_ASSERT_EQUAL(m.workloads, 1);
    CU_ASSERT_EQUAL(m.kernels, 1);        /* kernel 4; 1..3 are the same kernels */
    CU_ASSERT_EQUAL(m.measurements, 16);  /* distinct trials */
    CU_ASSERT_EQUAL(m.cost_models, 1);
    CU_ASSERT_EQUAL(m.schedules_replaced, 1); /* b's is faster */
    int64_t counts[DT_DB_N_TABLES];
    const char *tables[] = {"targets", "workloads", "kernels", "measurements", "schedules",
                            "cost_models", "jobs"};
    for (int i = 0; i < DT_DB_N_TABLES; i++)
        counts[i] = count(da, tables[i]);
    CU_ASSERT_EQUAL(counts[3], 28);
    /* again, twice: nothing changes */
    for (int r = 0; r < 2; r++) {
        CU_ASSERT_EQUAL(dt_db_merge(da, b, NULL, NULL, &m, &e), 0);
        CU_ASSERT_EQUAL(m.targets + m.workloads + m.kernels + m.measurements + m.cost_models, 0);
        CU_ASSERT_EQUAL(m.schedules_same, 1);
        CU_ASSERT_EQUAL(m.schedules_added + m.schedules_replaced, 0);
        for (int i = 0; i < DT_DB_N_TABLES; i++)
            CU_ASSERT_EQUAL(count(da, tables[i]), counts[i]);
    }
    /* the schedule of a is now b's, with a's kernel ids */
    dt_db_schedule *rows;
    size_t n;
    CU_ASSERT_EQUAL(dt_db_schedule_list(da, wa, ta, 1, &rows, &n, &e), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(rows[0].kernel_id, ka[1]);
    CU_ASSERT_EQUAL(rows[1].kernel_id, ka[1]);
    CU_ASSERT_DOUBLE_EQUAL(rows[1].measured_ns, 50, 1e-9);
    dt_db_schedules_free(rows, n);
    /* the other way round: a's slower schedule loses */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(b, 0, &db, &e), 0);
    const char *c = dt_test_path("mc.db");
    int64_t tc, wc, kc[8];
    dt_db_close(fixture(c, 3, 1, "c", (int[]){1, 2}, &tc, &wc, kc));
    CU_ASSERT_EQUAL(dt_db_merge(db, c, NULL, NULL, &m, &e), 0);
    CU_ASSERT_EQUAL(m.schedules_kept, 1);
    CU_ASSERT_EQUAL(m.schedules_replaced, 0);
    int64_t probs = -1;
    CU_ASSERT_EQUAL(dt_db_check_all(db, NULL, NULL, &probs, &e), 0);
    CU_ASSERT_EQUAL(probs, 0);
    /* a merge into itself is refused */
    CU_ASSERT_EQUAL(dt_db_merge(db, b, NULL, NULL, &m, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "into itself"));
    dt_db_close(db);
    dt_db_close(da);
}

static void test_merge_refuses_versions(void)
{
    const char *dst = dt_test_path("mdst.db"), *newer = dt_test_path("mnewer.db"),
               *empty = dt_test_path("mempty.db");
    int64_t t, w, k[4];
    dt_db_close(fixture(newer, 1, 1, "n", (int[]){1, 1}, &t, &w, k));
    char sql[64], want[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", DT_DB_SCHEMA_VERSION + 1);
    snprintf(want, sizeof want, "schema version %d", DT_DB_SCHEMA_VERSION + 1);
    sql_exec(newer, sql);
    FILE *f = fopen(empty, "w");
    fclose(f);
    unlink(dst);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dst, DT_DB_CREATE, &db, &e), 0);
    dt_db_merge_info m;
    CU_ASSERT_EQUAL(dt_db_merge(db, newer, NULL, NULL, &m, &e), DT_EVERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "cannot merge"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want));
    CU_ASSERT_EQUAL(dt_db_merge(db, empty, NULL, NULL, &m, &e), DT_EVERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "dtune db init"));
    CU_ASSERT_EQUAL(dt_db_merge(db, dt_test_path("missing.db"), NULL, NULL, &m, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(count(db, "targets"), 0);
    dt_db_close(db);
}

int main(void)
{
    CU_TestInfo check_tests[] = {
        {"a clean database has no problems", test_check_clean},
        {"every kind of damage is reported at once", test_check_damage},
        {"schema damage: every table reported", test_check_schema_all},
        {"many problems of one kind are capped, all counted", test_check_many_capped},
        {"issue 42: every schedule read by the handle's schedule reader",
         test_check_schedule_reader},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo prune_tests[] = {
        {"policy kept, dry run deletes nothing, schedules still serve", test_prune_policy},
        {"job retention: parse, by count, by age", test_job_retention},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo merge_tests[] = {
        {"merge: natural keys, idempotent, conflicts by measured time", test_merge},
        {"merge refuses newer and older schemas", test_merge_refuses_versions},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"db check", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, check_tests},
        {"db prune", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, prune_tests},
        {"db merge", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, merge_tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
