/* Database integrity (issue 27): impossible times reported by db check,
 * merge and prune refusing damaged files (nothing written), backup refusing
 * destinations named like another database's side files, a newer source
 * refused before the merge's destination is created, prune of a 0-byte
 * file, and a backup of a damaged source naming the source.  Damage is
 * planted with sqlite3 directly. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db.h"
#include "tests/dt_test.h"

#define TARGET "x86_64-integrity-1c"
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

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* The bytes of a file (malloc'ed, *n its size), NULL when unreadable. */
static char *file_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b ? fread(b, 1, (size_t)(sz > 0 ? sz : 0), f) : 0;
    fclose(f);
    return b;
}

/* A clean database: kernels 1..nk measured on M=1..4 (kernel i: i*100 ns),
 * a schedule of M=1..4 on kernel 1, one job.  Closed, checkpointed. */
static void make_db(const char *path, int nk, const char *uid)
{
    unlink(path);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t t, w, k1 = 0;
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, TARGET, "generic", NULL, &t, &e), 0);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, WKEY, "dense", "{}", &w, &e), 0);
    for (int i = 1; i <= nk; i++) {
        char ann[64];
        snprintf(ann, sizeof ann, "{\"MR\":%d,\"NR\":16}", i);
        int64_t k;
        CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", ann, NULL, &k, &e), 0);
        if (i == 1)
            k1 = k;
        for (int m = 1; m <= 4; m++) {
            char shape[16], u[64];
            snprintf(shape, sizeof shape, "M=%d", m);
            snprintf(u, sizeof u, "%s-%d-%d", uid, i, m);
            dt_db_measurement r = {.kernel_id = k, .target_id = t, .workload_id = w,
                                   .shape = shape, .threads = 1, .status = DT_TRIAL_OK,
                                   .min_ns = i * 100.0, .median_ns = i * 100.0, .trial_uid = u};
            CU_ASSERT_EQUAL(dt_db_measurement_insert(db, &r, NULL, NULL, &e), 0);
        }
    }
    dt_db_schedule row = {.shape_lo = "M=1", .shape_hi = "M=4", .kernel_id = k1,
                          .predicted_ns = 100, .measured_ns = 100};
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w, t, 1, &row, 1, &e), 0);
    int64_t job;
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{\"workload\":\"x\"}", NULL, &job, &e), 0);
    dt_db_close(db);
}

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

static int64_t check_all(const char *path, problems *p)
{
    dt_db *db;
    dt_err e;
    if (dt_db_open(path, DT_DB_READONLY, &db, &e)) {
        fprintf(stderr, "open %s: %s\n", path, e.msg);
        return -1;
    }
    int64_t n = -1;
    CU_ASSERT_EQUAL(dt_db_check_all(db, collect, p, &n, &e), 0);
    dt_db_close(db);
    return n;
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

/* Ok records 1..8 of make_db(path, 2) given impossible times. */
static const char impossible_sql[] =
    "PRAGMA ignore_check_constraints = ON;"
    "UPDATE measurements SET min_ns = 9e999 WHERE id = 1;"            /* +inf */
    "UPDATE measurements SET median_ns = 9e999 WHERE id = 2;"         /* +inf */
    "UPDATE measurements SET min_ns = -9e999 WHERE id = 3;"           /* -inf */
    "UPDATE measurements SET min_ns = 'fast' WHERE id = 4;"           /* not a number */
    "UPDATE measurements SET median_ns = x'00' WHERE id = 5;"         /* a blob */
    "UPDATE measurements SET min_ns = 0 WHERE id = 6;"                /* zero */
    "UPDATE measurements SET min_ns = -5, median_ns = -1 WHERE id = 7;" /* negative */
    "UPDATE measurements SET min_ns = 500, median_ns = 200 WHERE id = 8;"; /* min > median */

/* ---- item 2: impossible times already stored ---------------------------------- */

static void test_check_impossible_times(void)
{
    const char *path = dt_test_path("times.db");
    make_db(path, 2, "t");
    sql_exec(path, impossible_sql);
    problems p = {{0}, 0};
    int64_t n = check_all(path, &p);
    for (int id = 1; id <= 8; id++) {
        char want[64];
        snprintf(want, sizeof want, "[measurement] measurements row %d ", id);
        if (!strstr(p.text, want))
            fprintf(stderr, "missing: %s\nin:\n%s", want, p.text);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.text, want));
    }
    /* each row once: 8 problems, nothing else */
    CU_ASSERT_EQUAL(n, 8);
    CU_ASSERT_EQUAL(p.n, 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "(min_ns Inf, median_ns 100)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "min_ns 'fast'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.text, "min_ns 500 above its median_ns 200"));
    /* the real command: exit 2, the rows listed */
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db check --db %s", path), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "measurements row 1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "measurements row 4 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "8 problems found"));
    dt_test_proc_free(&pr);
}

/* ---- item 3: merge and prune refuse damaged files ----------------------------- */

/* Swaps an index's definition: its entries no longer match the rows, and
 * SQLite's integrity_check reports one problem per row. */
static const char bad_index_sql[] =
    "PRAGMA writable_schema = ON;"
    "UPDATE sqlite_schema SET sql = 'CREATE INDEX measurements_by_target ON measurements"
    " (created_at)' WHERE name = 'measurements_by_target';"
    "PRAGMA writable_schema = OFF;";

static void expect_merge_refused(const char *dst, const char *src, const char *want)
{
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dst, 0, &db, &e), 0);
    dt_db_merge_info m;
    CU_ASSERT_EQUAL(dt_db_merge(db, src, NULL, NULL, &m, &e), DT_EINVAL);
    if (!strstr(e.msg, want) || !strstr(e.msg, "damaged"))
        fprintf(stderr, "merge of %s said: %s\n(wanted %s)\n", src, e.msg, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "damaged"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want));
    dt_db_close(db);
}

static void test_merge_refuses_damage(void)
{
    const char *dst = dt_test_path("mdst.db"), *json = dt_test_path("mjson.db"),
               *integ = dt_test_path("minteg.db"), *times = dt_test_path("mtimes.db");
    make_db(dst, 1, "d");
    make_db(json, 3, "j");
    sql_exec(json, "UPDATE kernels SET annotation = '{broken' WHERE id = 2;");
    make_db(integ, 3, "i");
    sql_exec(integ, bad_index_sql);
    make_db(times, 2, "s");
    sql_exec(times, impossible_sql);
    size_t n0 = 0, n1 = 0;
    char *before = file_bytes(dst, &n0);
    expect_merge_refused(dst, json, "the annotation of kernels row 2 is not valid JSON");
    expect_merge_refused(dst, integ, "integrity");
    expect_merge_refused(dst, times, "measurements row 1 ");
    /* nothing written: the destination is as it was, and checks clean */
    CU_ASSERT_EQUAL(rows(dst, "kernels"), 1);
    CU_ASSERT_EQUAL(rows(dst, "measurements"), 4);
    problems p = {{0}, 0};
    CU_ASSERT_EQUAL(check_all(dst, &p), 0);
    char *after = file_bytes(dst, &n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);

    /* the real command: exit 2, the problems listed, no destination made */
    const char *fresh = dt_test_path("mfresh.db");
    unlink(fresh);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", json, fresh), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "the annotation of kernels row 2 is not valid JSON"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "damaged"));
    CU_ASSERT(!exists(fresh));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", integ, dst), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "integrity"));
    dt_test_proc_free(&pr);
    /* a clean source before a damaged one: nothing merged at all */
    const char *clean = dt_test_path("mclean.db");
    make_db(clean, 2, "c");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s %s --db %s", clean, times, dst), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "measurements row 8 "));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(rows(dst, "measurements"), 4);
}

static void test_prune_refuses_damage(void)
{
    const char *path = dt_test_path("pdamaged.db");
    make_db(path, 3, "p");
    sql_exec(path, "UPDATE kernels SET annotation = '{broken' WHERE id = 2;");
    sql_exec(path, impossible_sql);
    size_t n0 = 0, n1 = 0;
    char *before = file_bytes(path, &n0);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, 0, &db, &e), 0);
    dt_db_prune_opts o = dt_db_prune_defaults();
    o.keep = 1;
    dt_db_prune_info info;
    CU_ASSERT_EQUAL(dt_db_prune(db, &o, &info, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "damaged"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not valid JSON"));
    dt_db_close(db);
    CU_ASSERT_EQUAL(rows(path, "measurements"), 12);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db prune --keep 1 --db %s", path), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "damaged"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "the annotation of kernels row 2 is not valid JSON"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "measurements row 8 "));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(rows(path, "measurements"), 12);
    char *after = file_bytes(path, &n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
    /* integrity damage too */
    const char *integ = dt_test_path("pinteg.db");
    make_db(integ, 2, "q");
    sql_exec(integ, bad_index_sql);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db prune --keep 1 --db %s", integ), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "integrity"));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(rows(integ, "measurements"), 8);
}

/* ---- item 4: backup destinations named like side files ------------------------ */

static void test_backup_side_file_names(void)
{
    const char *src = dt_test_path("bsrc.db");
    make_db(src, 1, "b");
    static const char *const names[] = {"bsrc.db-wal", "bsrc.db-shm", "bsrc.db-journal",
                                        "other.db-wal", "x-journal"};
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(src, DT_DB_READONLY, &db, &e), 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *dest = strdup(dt_test_path(names[i]));
        unlink(dest);
        dt_db_backup_info info;
        CU_ASSERT_EQUAL(dt_db_backup(db, dest, &info, &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "side file"));
        CU_ASSERT(!exists(dest));
        dt_test_proc pr;
        CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", dest, src), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "side file"));
        dt_test_proc_free(&pr);
        CU_ASSERT(!exists(dest));
        free(dest);
    }
    dt_db_close(db);
    /* such names inside a name are fine */
    const char *ok = dt_test_path("bsrc-wal.db");
    unlink(ok);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", ok, src), 0);
    dt_test_proc_free(&pr);
    CU_ASSERT(exists(ok));
}

/* ---- item 5: the small ones ----------------------------------------------------- */

static void test_merge_future_no_destination(void)
{
    const char *future = dt_test_path("future.db"), *fresh = dt_test_path("new.db"),
               *older = dt_test_path("older.db");
    make_db(future, 1, "f");
    sql_exec(future, "PRAGMA user_version = 9");
    unlink(fresh);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", future, fresh), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "schema version 9"));
    dt_test_proc_free(&pr);
    CU_ASSERT(!exists(fresh));
    /* an empty (older) source, a missing one: the same */
    FILE *f = fopen(older, "w");
    fclose(f);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", older, fresh), 2);
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", dt_test_path("gone.db"), fresh),
                    2);
    dt_test_proc_free(&pr);
    CU_ASSERT(!exists(fresh));
}

static void test_prune_empty_file(void)
{
    const char *path = dt_test_path("zero.db");
    FILE *f = fopen(path, "w");
    fclose(f);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db prune --db %s", path), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "not a dtune database"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "empty"));
    CU_ASSERT_PTR_NULL(strstr(pr.out, "before"));
    dt_test_proc_free(&pr);
    struct stat sb;
    CU_ASSERT_EQUAL(stat(path, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_size, 0);
    char side[4200];
    snprintf(side, sizeof side, "%s-wal", path);
    CU_ASSERT(!exists(side));
    snprintf(side, sizeof side, "%s-shm", path);
    CU_ASSERT(!exists(side));
    /* a missing file is not created */
    const char *gone = dt_test_path("gone-prune.db");
    unlink(gone);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db prune --db %s", gone), 2);
    dt_test_proc_free(&pr);
    CU_ASSERT(!exists(gone));
}

static void test_backup_damaged_source(void)
{
    const char *src = dt_test_path("bdamaged.db"), *dest = dt_test_path("bdamaged-copy.db");
    make_db(src, 2, "x");
    sql_exec(src, "UPDATE kernels SET annotation = '{broken' WHERE id = 2;");
    unlink(dest);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", dest, src), 2);
    char want[4400];
    snprintf(want, sizeof want, "database %s is damaged", src);
    if (!strstr(pr.err, want))
        fprintf(stderr, "backup said: %s", pr.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, want));
    snprintf(want, sizeof want, "database %s is damaged", dest);
    CU_ASSERT_PTR_NULL(strstr(pr.err, want));
    dt_test_proc_free(&pr);
}

/* ---- schema 3: schedule rows are boxes ------------------------------------------ */

#define WKEY2 "dense(M=b*s,N=16,K=16;b=1..3,s=1..4)"

/* A database with WKEY (one variable) and WKEY2 (two) and kernels 1, 2;
 * each workload's schedule for 1 thread is two rows with the given box
 * flag, every measured_ns 100: as boxes and as runs alike, WKEY's M=1..4,
 * M=5..8 and WKEY2's b=1,s=1..b=2,s=2 and b=2,s=3..b=3,s=4 are sound. */
static void make_box_db(const char *path, int box)
{
    unlink(path);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t t, w1, w2, k1, k2;
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, TARGET, "generic", NULL, &t, &e), 0);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, WKEY, "dense", "{}", &w1, &e), 0);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, WKEY2, "dense", "{}", &w2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", "{\"MR\":1}", NULL, &k1, &e), 0);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", "{\"MR\":2}", NULL, &k2, &e), 0);
    dt_db_schedule r1[] = {
        {.shape_lo = "M=1", .shape_hi = "M=4", .box = box, .kernel_id = k1,
         .predicted_ns = 100, .measured_ns = 100},
        {.shape_lo = "M=5", .shape_hi = "M=8", .box = box, .kernel_id = k2,
         .predicted_ns = 100, .measured_ns = 100},
    };
    dt_db_schedule r2[] = {
        {.shape_lo = "b=1,s=1", .shape_hi = "b=2,s=2", .box = box, .kernel_id = k1,
         .predicted_ns = 100, .measured_ns = 100},
        {.shape_lo = "b=2,s=3", .shape_hi = "b=3,s=4", .box = box, .kernel_id = k2,
         .predicted_ns = 100, .measured_ns = 100},
    };
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w1, t, 1, r1, 2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w2, t, 1, r2, 2, &e), 0);
    dt_db_close(db);
}

/* Boxes are checked as boxes (lo <= hi in every variable, ordered by first
 * corner, disjoint), runs as runs, a one-variable row as a run whatever
 * its flag; a box value outside 0/1 (written past the CHECK) is reported. */
static void test_check_boxes(void)
{
    const char *path = dt_test_path("boxes.db");
    make_box_db(path, 1);
    /* sound boxes whose corners are not ordered as runs (b=2,s=1..b=3,s=2
     * then b=2,s=3: the first box's last corner is after the second's first),
     * sound runs crossing a row, a one-variable schedule mixing both */
    sql_exec(path,
             "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
             " threads, created_at, box) VALUES"
             " (2, 1, 'b=1,s=1', 'b=1,s=4', 1, 2, 0, 1),"
             " (2, 1, 'b=2,s=1', 'b=3,s=2', 2, 2, 0, 1),"
             " (2, 1, 'b=2,s=3', 'b=3,s=4', 1, 2, 0, 1),"
             " (2, 1, 'b=1,s=1', 'b=2,s=1', 1, 3, 0, 0),"
             " (2, 1, 'b=2,s=2', 'b=3,s=4', 2, 3, 0, 0),"
             " (1, 1, 'M=1', 'M=2', 1, 2, 0, 0),"
             " (1, 1, 'M=3', 'M=8', 2, 2, 0, 1);");
    problems p = {{0}, 0};
    CU_ASSERT_EQUAL(check_all(path, &p), 0);
    if (p.n)
        fprintf(stderr, "unexpected:\n%s", p.text);

    /* rows 20..: an overlap, a box before the previous one, a box reversed
     * in s only (its corners are in shape-set order), box 2, and a
     * one-variable box before the run it follows */
    sql_exec(path,
             "PRAGMA ignore_check_constraints = ON;"
             "INSERT INTO schedules (id, workload_id, target_id, shape_lo, shape_hi, kernel_id,"
             " threads, created_at, box) VALUES"
             " (20, 2, 1, 'b=1,s=1', 'b=2,s=2', 1, 4, 0, 1),"
             " (21, 2, 1, 'b=2,s=2', 'b=3,s=3', 2, 4, 0, 1),"
             " (22, 2, 1, 'b=1,s=3', 'b=1,s=4', 1, 4, 0, 1),"
             " (23, 2, 1, 'b=2,s=4', 'b=3,s=3', 1, 4, 0, 1),"
             " (24, 2, 1, 'b=1,s=1', 'b=1,s=1', 1, 5, 0, 2),"
             " (25, 1, 1, 'M=5', 'M=8', 1, 3, 0, 0),"
             " (26, 1, 1, 'M=1', 'M=4', 2, 3, 0, 1);");
    memset(&p, 0, sizeof p);
    int64_t n = check_all(path, &p);
    static const char *const want[] = {
        "[schedule] schedules row 21 (box b=2,s=2..b=3,s=3) overlaps row 20 of the same "
        "schedule (workload 2, target 1, 4 threads)",
        "[schedule] schedules row 22 (box b=1,s=3..b=1,s=4) comes before row 21 of the same "
        "schedule (workload 2, target 1, 4 threads) in the order of first corners",
        "[schedule] schedules row 23 has the box b=2,s=4..b=3,s=3, whose s interval ends "
        "before it starts",
        "[schedule] schedules row 24 has box 2, neither 1 (a box) nor 0 (a schema-2 run)",
        "[schedule] schedules row 26 (M=1..M=4) overlaps or comes before row 25",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(p.text, want[i]))
            fprintf(stderr, "missing: %s\nin:\n%s", want[i], p.text);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.text, want[i]));
    }
    CU_ASSERT_EQUAL(n, 5);
    CU_ASSERT_EQUAL(p.n, 5);
}

/* A merge copies each row's box flag, and a schedule of runs is not the
 * same as one of boxes with the same corners, except with one variable,
 * where a run is a box. */
static void test_merge_boxes(void)
{
    const char *src = dt_test_path("mbox-src.db"), *fresh = dt_test_path("mbox-new.db"),
               *runs = dt_test_path("mbox-runs.db");
    make_box_db(src, 1);
    make_box_db(runs, 0);
    unlink(fresh);
    dt_db *db;
    dt_err e;
    dt_db_merge_info m;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(fresh, DT_DB_CREATE, &db, &e), 0);
    CU_ASSERT_EQUAL(dt_db_merge(db, src, NULL, NULL, &m, &e), 0);
    CU_ASSERT_EQUAL(m.schedules_added, 2);
    dt_db_workload w;
    dt_db_target t;
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_get(db, WKEY2, &w, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_target_get(db, TARGET, &t, &e), 0);
    dt_db_schedule *got;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(db, w.id, t.id, 1, &got, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 2);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(got[i].box, 1);
    dt_db_schedules_free(got, n);
    dt_db_workload_free(&w);
    dt_db_target_free(&t);
    CU_ASSERT_EQUAL(dt_db_merge(db, src, NULL, NULL, &m, &e), 0); /* again: nothing new */
    CU_ASSERT_EQUAL(m.schedules_same, 2);
    dt_db_close(db);

    /* into runs with the same corners: WKEY's are the same schedule, WKEY2's
     * are not (a tie of equal times: the destination's runs are kept) */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(runs, 0, &db, &e), 0);
    CU_ASSERT_EQUAL(dt_db_merge(db, src, NULL, NULL, &m, &e), 0);
    CU_ASSERT_EQUAL(m.schedules_same, 1);
    CU_ASSERT_EQUAL(m.schedules_kept, 1);
    CU_ASSERT_EQUAL(m.schedules_added + m.schedules_replaced, 0);
    dt_db_close(db);
    problems p = {{0}, 0};
    CU_ASSERT_EQUAL(check_all(fresh, &p), 0);
    CU_ASSERT_EQUAL(check_all(runs, &p), 0);
    if (p.n)
        fprintf(stderr, "unexpected:\n%s", p.text);
}

/* ---- issue 42: rows a query cannot read, side and lock files -------------------- */

#define WKEY3 "dense(M=1..8,N=32,K=32)"
#define WKEY4 "dense(M=1..2,N=8,K=8)"

/* A clean, tuned database of four workloads (schedules rows 1..6: WKEY's
 * M=1..2 and M=3..4, WKEY2's two boxes, WKEY3's M=1..8, WKEY4's M=1..2). */
static void make_tuned_db(const char *path)
{
    unlink(path);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t t, w[4], k1, k2;
    const char *keys[] = {WKEY, WKEY2, WKEY3, WKEY4};
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, TARGET, "generic", NULL, &t, &e), 0);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(dt_db_workload_upsert(db, keys[i], "dense", "{}", &w[i], &e), 0);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", "{\"MR\":1}", NULL, &k1, &e), 0);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct", "{\"MR\":2}", NULL, &k2, &e), 0);
#define ROW(lo, hi, k) \
    {.shape_lo = lo, .shape_hi = hi, .box = 1, .kernel_id = k, .predicted_ns = 100, \
     .measured_ns = 100}
    dt_db_schedule r1[] = {ROW("M=1", "M=2", k1), ROW("M=3", "M=4", k2)};
    dt_db_schedule r2[] = {ROW("b=1,s=1", "b=3,s=2", k1), ROW("b=1,s=3", "b=3,s=4", k2)};
    dt_db_schedule r3[] = {ROW("M=1", "M=8", k1)};
    dt_db_schedule r4[] = {ROW("M=1", "M=2", k2)};
#undef ROW
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w[0], t, 1, r1, 2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w[1], t, 1, r2, 2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w[2], t, 1, r3, 1, &e), 0);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w[3], t, 1, r4, 1, &e), 0);
    dt_db_close(db);
}

/* Corners naming variables their workload does not have: b=3..b=4 for M
 * (whose values pass db/'s own order rules), a third variable z for (b, s),
 * b=1 for M alone, and '' for M.  Rows 2, 4, 5, 6. */
static const char foreign_sql[] =
    "UPDATE schedules SET shape_lo = 'b=3', shape_hi = 'b=4' WHERE id = 2;"
    "UPDATE schedules SET shape_lo = 'b=1,s=3,z=1', shape_hi = 'b=3,s=4,z=1' WHERE id = 4;"
    "UPDATE schedules SET shape_lo = 'b=1', shape_hi = 'b=1' WHERE id = 5;"
    "UPDATE schedules SET shape_lo = '', shape_hi = '' WHERE id = 6;";

/* stderr (or stdout) of a command names each of rows 2, 4, 5, 6 with its
 * workload and target and why, as the dispatch layer reads it. */
static void expect_foreign_rows(const char *text)
{
    static const char *const want[] = {
        "schedules row 2 (workload 1 " WKEY ", target 1 " TARGET ", 1 thread) cannot be "
        "served: shape 'b=3': 'b' is not a variable of this workload (its variables: M)",
        "schedules row 4 (workload 2 " WKEY2 ", target 1 " TARGET ", 1 thread) cannot be "
        "served: shape 'b=1,s=3,z=1': 'z' is not a variable of this workload",
        "schedules row 5 (workload 3 " WKEY3 ", target 1 " TARGET ", 1 thread) cannot be "
        "served: shape 'b=1': 'b' is not a variable",
        "schedules row 6 (workload 4 " WKEY4 ", target 1 " TARGET ", 1 thread) cannot be "
        "served: shape '': variable 'M' has no value",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(text, want[i]))
            fprintf(stderr, "missing: %s\nin:\n%s\n", want[i], text);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, want[i]));
    }
}

/* `dtune db check` reads every stored schedule as a query will: rows whose
 * corners name other variables are reported (exit 2), each once. */
static void test_check_rows_dispatch_cannot_read(void)
{
    const char *path = dt_test_path("foreign.db");
    make_tuned_db(path);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db check --db %s", path), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "no problems found"));
    dt_test_proc_free(&pr);
    sql_exec(path, foreign_sql);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db check --db %s", path), 2);
    expect_foreign_rows(pr.out);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "4 problems found"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "is damaged: 4 problems"));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db check --json --db %s", path), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "\"count\": 4"));
    dt_test_proc_free(&pr);
}

/* `dtune db merge` refuses such a source (dt_db_require_sound) and `dtune
 * db prune` such a file: nothing merged, no destination made, nothing
 * deleted. */
static void test_merge_prune_refuse_rows_dispatch_cannot_read(void)
{
    const char *src = dt_test_path("foreign-src.db"), *fresh = dt_test_path("foreign-new.db"),
               *dst = dt_test_path("foreign-dst.db");
    make_tuned_db(src);
    sql_exec(src, foreign_sql);
    unlink(fresh);
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", src, fresh), 2);
    expect_foreign_rows(pr.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "damaged"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "nothing was merged"));
    dt_test_proc_free(&pr);
    CU_ASSERT(!exists(fresh));
    /* into an existing destination: it stays as it was */
    make_db(dst, 1, "fd");
    size_t n0 = 0, n1 = 0;
    char *before = file_bytes(dst, &n0);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db merge %s --db %s", src, dst), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "schedules row 5 "));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(rows(dst, "schedules"), 1);
    CU_ASSERT_EQUAL(rows(dst, "workloads"), 1);
    char *after = file_bytes(dst, &n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
    /* prune: refused, the rows listed, nothing deleted */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db prune --db %s", src), 2);
    expect_foreign_rows(pr.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "cannot prune"));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(rows(src, "schedules"), 6);
}

/* A copy of tests/data/v2/v2.db (rows 1..20: tests/data/v2/README.md). */
static const char *v2_copy(const char *name)
{
    char cmd[9000];
    const char *p = dt_test_path(name);
    unlink(p);
    snprintf(cmd, sizeof cmd, "cp '%s/tests/data/v2/v2.db' '%s'", DTUNE_SOURCE_DIR, p);
    CU_ASSERT_EQUAL(system(cmd), 0);
    return p;
}

#define V2_TARGET "x86_64-avx512-2c-48K.2M.480M"
#define V2_BS "dense(M=b*s,N=32,K=32;b=1..3,s=1..6)"
#define V2_BMM "batch_matmul(B={1,2,4},M=seq,N=seq,K=16,layout=NT;seq=1..5)"
#define V2_BIAS "dense(M=1..8,N=32,K=32,epilogue=bias)"

/* `dtune db init` migrating a schema-2 file with rows a query cannot read
 * (corners naming other variables; a run reversed, runs overlapping) lists
 * each row, keeps the file migrated and exits 2; the sound schedules are
 * served, the damaged ones refused as damage.  A sound file migrates
 * without a word (exit 0). */
static void test_migrate_reports_damaged_rows(void)
{
    dt_test_proc pr;
    const char *clean = v2_copy("v2-clean.db");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db init --db %s", clean), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "migrated"));
    CU_ASSERT_STRING_EQUAL(pr.err, "");
    dt_test_proc_free(&pr);

    /* corners naming other variables: row 17 (M) and row 1 (b, s) */
    const char *foreign = v2_copy("v2-foreign.db");
    sql_exec(foreign, "UPDATE schedules SET shape_lo = 'b=1', shape_hi = 'b=1' WHERE id = 17;"
                      "UPDATE schedules SET shape_lo = 'b=1,s=1,z=1', shape_hi = 'b=2,s=1,z=1'"
                      " WHERE id = 1;");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db init --db %s", foreign), 2);
    char want[9000];
    snprintf(want, sizeof want, "migrated %s from schema 2 to 3", foreign);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, want));
    static const char *const foreign_want[] = {
        "schedules row 17 (workload 3 " V2_BIAS ", target 1 " V2_TARGET ", 1 thread) cannot be "
        "served: shape 'b=1': 'b' is not a variable of this workload",
        "schedules row 1 (workload 1 " V2_BS ", target 1 " V2_TARGET ", 1 thread) cannot be "
        "served: shape 'b=1,s=1,z=1': 'z' is not a variable of this workload",
        "is damaged: 2 problems (listed above)",
    };
    for (size_t i = 0; i < sizeof foreign_want / sizeof foreign_want[0]; i++) {
        if (!strstr(pr.err, foreign_want[i]))
            fprintf(stderr, "missing: %s\nin:\n%s\n", foreign_want[i], pr.err);
        CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, foreign_want[i]));
    }
    dt_test_proc_free(&pr);
    /* migrated all the same: the sound workload is served, the damaged one
     * refused as damage (exit 3), and db check says the same */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "query '" V2_BMM "' --shape B=2,seq=3 --db %s "
                                           "--target " V2_TARGET, foreign),
                    0);
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "query '" V2_BIAS "' --shape M=3 --db %s --target "
                                           V2_TARGET, foreign),
                    3);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "schedules row 17 "));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db check --db %s", foreign), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "2 problems found"));
    dt_test_proc_free(&pr);
    /* a second init has nothing to migrate (and only quick-checks) */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db init --db %s", foreign), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "up to date"));
    dt_test_proc_free(&pr);

    /* a reversed run (row 18) and overlapping runs (row 9 over row 8) */
    const char *order = v2_copy("v2-order.db");
    sql_exec(order, "UPDATE schedules SET shape_lo = 'M=5', shape_hi = 'M=4' WHERE id = 18;"
                    "UPDATE schedules SET shape_lo = 'B=1,seq=3' WHERE id = 9;");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db init --db %s", order), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "migrated"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "schedules row 18 has the range M=5..M=4, which ends "
                                          "before it starts"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "schedules row 9 (B=1,seq=3..B=1,seq=4) overlaps or "
                                          "comes before row 8"));
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "is damaged: 2 problems (listed above)"));
    dt_test_proc_free(&pr);
}

/* A backup never lands where another program truncates or replays over it:
 * DB.lock (a daemon on DB truncates its lock file), a name whose -wal or
 * -journal is left from an earlier database (SQLite applies it to the
 * copy), and never over the database itself under another name. */
static void test_backup_lock_and_link_names(void)
{
    char *src = strdup(dt_test_path("lsrc.db")); /* dt_test_path's ring is reused below */
    make_db(src, 1, "l");
    dt_db *db;
    dt_err e;
    dt_test_proc pr;
    static const char *const locks[] = {"lsrc.db.lock", "other.db.lock"};
    CU_ASSERT_EQUAL_FATAL(dt_db_open(src, DT_DB_READONLY, &db, &e), 0);
    for (size_t i = 0; i < sizeof locks / sizeof locks[0]; i++) {
        char *dest = strdup(dt_test_path(locks[i]));
        unlink(dest);
        dt_db_backup_info info;
        CU_ASSERT_EQUAL(dt_db_backup(db, dest, &info, &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "lock file"));
        CU_ASSERT(!exists(dest));
        CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", dest, src), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "lock file"));
        dt_test_proc_free(&pr);
        CU_ASSERT(!exists(dest));
        free(dest);
    }
    dt_db_close(db);

    /* a stale -wal of the name: refused, nothing written */
    char *stale = strdup(dt_test_path("lstale.db")), *wal = strdup(dt_test_path("lstale.db-wal"));
    unlink(stale);
    FILE *f = fopen(wal, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("an earlier database's write-ahead log", f);
    fclose(f);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", stale, src), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "side file of an earlier database"));
    dt_test_proc_free(&pr);
    CU_ASSERT(!exists(stale));
    unlink(wal);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", stale, src), 0);
    dt_test_proc_free(&pr);
    CU_ASSERT(exists(stale));
    free(stale);
    free(wal);

    /* the database itself under another name: a hard link, a symbolic link,
     * a dangling link to its lock file; the source unchanged */
    size_t n0 = 0, n1 = 0;
    char *before = file_bytes(src, &n0);
    char *hard = strdup(dt_test_path("lhard.db")), *soft = strdup(dt_test_path("lsoft.db")),
         *dangle = strdup(dt_test_path("ldangle.db")), *lock = strdup(dt_test_path("lsrc.db.lock"));
    unlink(hard);
    unlink(soft);
    unlink(dangle);
    unlink(lock);
    CU_ASSERT_EQUAL(link(src, hard), 0);
    CU_ASSERT_EQUAL(symlink(src, soft), 0);
    CU_ASSERT_EQUAL(symlink(lock, dangle), 0);
    const char *links[] = {hard, soft, dangle};
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", links[i], src), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "already exists"));
        dt_test_proc_free(&pr);
    }
    CU_ASSERT(!exists(lock));
    char *after = file_bytes(src, &n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
    free(before);
    free(after);
    free(hard);
    free(soft);
    free(dangle);
    free(lock);
    /* '.lock' inside a name is fine */
    const char *ok = dt_test_path("lsrc.lock.db");
    unlink(ok);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "db backup %s --db %s", ok, src), 0);
    dt_test_proc_free(&pr);
    CU_ASSERT(exists(ok));
    free(src);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"db check reports impossible times of ok records", test_check_impossible_times},
        {"db merge refuses a damaged source, writes nothing", test_merge_refuses_damage},
        {"db prune refuses a damaged file, deletes nothing", test_prune_refuses_damage},
        {"db backup refuses -wal, -shm, -journal destinations", test_backup_side_file_names},
        {"db merge of a newer source creates no destination", test_merge_future_no_destination},
        {"db prune of a 0-byte file: not a dtune database, nothing made", test_prune_empty_file},
        {"db backup of a damaged source says the source is damaged", test_backup_damaged_source},
        {"db check: box rows are checked as boxes, runs as runs", test_check_boxes},
        {"db merge copies and compares the box flag", test_merge_boxes},
        {"issue 42: db check reports schedule rows naming other variables",
         test_check_rows_dispatch_cannot_read},
        {"issue 42: db merge and db prune refuse rows naming other variables",
         test_merge_prune_refuse_rows_dispatch_cannot_read},
        {"issue 42: db init migrating schema 2 reports rows a query cannot read",
         test_migrate_reports_damaged_rows},
        {"issue 42: db backup refuses DB.lock, stale side files and links",
         test_backup_lock_and_link_names},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"db integrity", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
