/* db/: opening and identifying files, migrations, every accessor, write
 * atomicity, concurrent readers, and `dtune db` end to end.  Every test uses
 * real SQLite files in one temporary directory.  The few SQL statements here
 * build foreign or tampered fixtures through sqlite3 directly, which the db
 * module must refuse; the module itself is only used through db/db.h. */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "db/db.h"
#include "tests/dt_test.h"


/* ---- helpers -------------------------------------------------------------- */

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* The whole file, malloc'ed; *n receives its size. */
static char *read_all(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    *n = fread(buf, 1, (size_t)len, f);
    fclose(f);
    return buf;
}

static bool same_bytes(const char *path, const char *before, size_t n_before)
{
    size_t n;
    char *now = read_all(path, &n);
    bool same = now && n == n_before && memcmp(now, before, n) == 0;
    free(now);
    return same;
}

/* Runs fixture SQL on path with plain sqlite3 (creating the file). */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *s;
    CU_ASSERT_FATAL(sqlite3_open(path, &s) == SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(s, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "fixture SQL failed: %s\n", msg);
    CU_ASSERT_EQUAL(rc, SQLITE_OK);
    sqlite3_free(msg);
    sqlite3_close(s);
}

/* One integer or text result of a query run with plain sqlite3, read-only. */
static long long raw_int(const char *path, const char *sql)
{
    sqlite3 *s;
    sqlite3_stmt *st;
    long long v = -12345;
    CU_ASSERT_FATAL(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    if (sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(s);
    return v;
}

static bool integrity_ok(const char *path)
{
    sqlite3 *s;
    sqlite3_stmt *st;
    bool ok = false;
    if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return false;
    if (sqlite3_prepare_v2(s, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK) {
        ok = sqlite3_step(st) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
        sqlite3_finalize(st);
    }
    sqlite3_close(s);
    return ok;
}

static dt_db *open_new(const char *name)
{
    dt_db *db = NULL;
    dt_err e;
    int rc = dt_db_open(dt_test_path(name), DT_DB_CREATE, &db, &e);
    if (rc)
        fprintf(stderr, "open %s: %s\n", name, e.msg);
    CU_ASSERT_FATAL(rc == DT_OK && db != NULL);
    return db;
}

/* A database with one target, two workloads and two kernels. */
typedef struct {
    dt_db *db;
    int64_t target, wl1, wl2, k1, k2;
} fixture;

static fixture make_fixture(const char *name)
{
    fixture f = {.db = open_new(name)};
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(
        dt_db_target_upsert(f.db, "x86_64-avx2-8c", "avx2", "{\"cores\": 8}", &f.target, &e),
        DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(f.db, "dense(M=1..128,N=768,K=768)", "dense",
                                                "{\"M\": [1, 128]}", &f.wl1, &e),
                          DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(f.db, "dense(M=1..128,N=3072,K=768)",
                                                "dense", "{\"M\": [1, 128]}", &f.wl2, &e),
                          DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(f.db, "dense", "pack_ab",
                                              "{\"MR\": 6, \"NR\": 16}", "h1", &f.k1, &e),
                          DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(f.db, "dense", "pack_ab",
                                              "{\"MR\": 4, \"NR\": 32}", "h2", &f.k2, &e),
                          DT_OK);
    return f;
}

static dt_db_measurement meas(const fixture *f, int64_t kernel, const char *shape,
                              dt_trial_status status, double ns, const char *uid)
{
    return (dt_db_measurement){
        .kernel_id = kernel,
        .target_id = f->target,
        .workload_id = f->wl1,
        .shape = shape,
        .threads = 8,
        .status = status,
        .min_ns = status == DT_TRIAL_OK ? ns : NAN,
        .median_ns = status == DT_TRIAL_OK ? ns * 1.1 : NAN,
        .error = status == DT_TRIAL_OK ? NULL : "boom",
        .trial_uid = uid,
    };
}

/* ---- opening, persistence -------------------------------------------------- */

static void test_create_and_reopen(void)
{
    const char *p = dt_test_path("persist.db");
    dt_db *db = open_new("persist.db");
    CU_ASSERT_TRUE(dt_db_was_created(db));
    CU_ASSERT_EQUAL(dt_db_opened_version(db), 0);
    CU_ASSERT_EQUAL(dt_db_schema_version(db), DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(dt_db_path(db), p);
    dt_err e;
    int64_t id;
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "t-key", "avx512", NULL, &id, &e), DT_OK);
    dt_db_close(db);

    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA application_id"), DT_DB_APPLICATION_ID);
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), DT_DB_SCHEMA_VERSION);

    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    CU_ASSERT_FALSE(dt_db_was_created(db));
    CU_ASSERT_EQUAL(dt_db_opened_version(db), DT_DB_SCHEMA_VERSION);
    dt_db_target t;
    CU_ASSERT_EQUAL(dt_db_target_get(db, "t-key", &t, &e), DT_OK);
    CU_ASSERT_EQUAL(t.id, id);
    CU_ASSERT_STRING_EQUAL(t.isa, "avx512");
    CU_ASSERT_STRING_EQUAL(t.info, "{}");
    dt_db_target_free(&t);
    dt_db_stats_info s;
    CU_ASSERT_EQUAL(dt_db_stats(db, &s, &e), DT_OK);
    CU_ASSERT_STRING_EQUAL(s.journal_mode, "wal");
    dt_db_close(db);
    CU_ASSERT_TRUE(integrity_ok(p));

    /* An empty (0-byte) file is initialised like a new one. */
    char *empty = dt_test_write_file(dt_test_suite_dir, "empty.db", "");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(empty, 0, &db, &e), DT_OK);
    CU_ASSERT_TRUE(dt_db_was_created(db));
    CU_ASSERT_EQUAL(dt_db_schema_version(db), DT_DB_SCHEMA_VERSION);
    dt_db_close(db);
    free(empty);
}

static void test_missing_file(void)
{
    const char *p = dt_test_path("missing.db");
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_open(p, 0, &db, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, p));
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_ENOTFOUND);
    CU_ASSERT_FALSE(exists(p));
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY | DT_DB_CREATE, &db, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_open("", DT_DB_CREATE, &db, &e), DT_EINVAL);
    CU_ASSERT_FALSE(exists(p));
}

/* ---- refusing files that are not ours -------------------------------------- */

static void test_text_file_refused(void)
{
    const char *text = "this is a text file, not a database\n";
    char *p = dt_test_write_file(dt_test_suite_dir, "notes.txt", text);
    size_t n;
    char *before = read_all(p, &n);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_CREATE, &db, &e), DT_ENOTDTUNE);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, p));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not a dtune database"));
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_ENOTDTUNE);
    CU_ASSERT_EQUAL(dt_db_open(p, 0, &db, &e), DT_ENOTDTUNE);
    CU_ASSERT_TRUE(same_bytes(p, before, n));
    /* A short file is no different. */
    char *tiny = dt_test_write_file(dt_test_suite_dir, "tiny.txt", "SQLite");
    CU_ASSERT_EQUAL(dt_db_open(tiny, DT_DB_CREATE, &db, &e), DT_ENOTDTUNE);
    free(before);
    free(tiny);
    free(p);
}

static void test_foreign_sqlite_refused(void)
{
    const char *p = dt_test_path("foreign.db");
    raw_exec(p, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
                "INSERT INTO notes (body) VALUES ('keep me');");
    size_t n;
    char *before = read_all(p, &n);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_CREATE, &db, &e), DT_ENOTDTUNE);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, p));
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_ENOTDTUNE);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_TRUE(same_bytes(p, before, n));
    CU_ASSERT_FALSE(exists(dt_test_path("foreign.db-wal")));
    free(before);

    /* Another application's id, even without tables. */
    const char *q = dt_test_path("other-app.db");
    raw_exec(q, "PRAGMA application_id = 1234; PRAGMA user_version = 1;");
    before = read_all(q, &n);
    CU_ASSERT_EQUAL(dt_db_open(q, DT_DB_CREATE, &db, &e), DT_ENOTDTUNE);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "application_id"));
    CU_ASSERT_TRUE(same_bytes(q, before, n));
    free(before);
}

static void test_newer_version_refused(void)
{
    const char *p = dt_test_path("future.db");
    dt_db_close(open_new("future.db"));
    raw_exec(p, "PRAGMA user_version = 99;");
    size_t n;
    char *before = read_all(p, &n);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_CREATE, &db, &e), DT_EVERSION);
    char want[4300];
    snprintf(want, sizeof want,
             "database %s has schema version 99, this dtune supports up to %d; upgrade dtune",
             p, DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(e.msg, want);
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_EVERSION);
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_NOMIGRATE, &db, &e), DT_EVERSION);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_TRUE(same_bytes(p, before, n));
    free(before);
}

/* ---- migrations ------------------------------------------------------------- */

/* Schema 1 -> 2 on hand-made v1 rows: attributes come from the workloads
 * that use each kernel; a kernel two epilogues used is split, its second
 * workload's rows move; an unused kernel gets the op's defaults. */
static void test_migrate_kernel_identity(void)
{
    const char *p = dt_test_path("v1-identity.db");
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_CREATE | DT_DB_NOMIGRATE, &db, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_migrate_to(db, 1, &e), DT_OK);
    dt_db_close(db);
    raw_exec(p,
             "INSERT INTO targets VALUES (1, 't', 'avx2', '{}', 0);"
             "INSERT INTO workloads VALUES"
             " (1, 'dense(M={1,2,4},N=8,K=8,epilogue=bias+relu)', 'dense', '{}', 0),"
             " (2, 'dense(M={1,2,4},N=8,K=8)', 'dense', '{}', 0),"
             " (3, 'batch_matmul(B=2,M=seq,N=seq,K=16,layout=NT;seq=1..8)', 'batch_matmul',"
             "  '{}', 0),"
             " (4, 'dense(M=epilogue,N=8,K=8;epilogue=1..4)', 'dense', '{}', 0);"
             "INSERT INTO kernels VALUES"
             " (1, 'dense', 'blocked', '{\"mr\":4}', 'h1', 0),"       /* wl 1 then wl 2 */
             " (2, 'dense', 'blocked', '{\"mr\":8}', 'h2', 0),"       /* wl 2 only */
             " (3, 'batch_matmul', 'blocked', '{\"mr\":4}', 'h3', 0),"/* wl 3 */
             " (4, 'batch_matmul', 'stream', '{\"mr\":4}', NULL, 0)," /* unused */
             " (5, 'dense', 'stream', '{\"mr\":2}', NULL, 0);"       /* wl 4 (a var named epilogue) */
             "INSERT INTO measurements (id, kernel_id, target_id, workload_id, shape, threads,"
             " status, min_ns, median_ns, trial_uid, created_at) VALUES"
             " (1, 1, 1, 1, 'M=1', 1, 'ok', 1, 1, 'u1', 0),"
             " (2, 1, 1, 2, 'M=1', 1, 'ok', 1, 1, 'u2', 0),"
             " (3, 2, 1, 2, 'M=2', 1, 'ok', 1, 1, 'u3', 0),"
             " (4, 3, 1, 3, 'seq=2', 1, 'ok', 1, 1, 'u4', 0),"
             " (5, 1, 1, 1, 'M=2', 1, 'ok', 1, 1, 'u5', 0);"
             "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
             " threads, created_at) VALUES (1, 1, 'M=1', 'M=4', 1, 1, 0),"
             " (2, 1, 'M=1', 'M=1', 1, 1, 0), (2, 1, 'M=2', 'M=4', 2, 1, 0),"
             " (4, 1, 'M=1', 'M=4', 5, 1, 0);");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_opened_version(db), 1);
    CU_ASSERT_EQUAL(dt_db_schema_version(db), DT_DB_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_OK);
    static const struct {
        const char *op, *attrs, *annotation, *hash;
    } want[] = {
        {"dense", "{\"epilogue\":\"bias+relu\"}", "{\"mr\":4}", "h1"},
        {"dense", "{\"epilogue\":\"none\"}", "{\"mr\":8}", "h2"},
        {"batch_matmul", "{\"layout\":\"NT\"}", "{\"mr\":4}", "h3"},
        {"batch_matmul", "{\"layout\":\"NN\"}", "{\"mr\":4}", NULL},
        {"dense", "{\"epilogue\":\"none\"}", "{\"mr\":2}", NULL},
        {"dense", "{\"epilogue\":\"none\"}", "{\"mr\":4}", NULL}, /* split from 1 for wl 2 */
    };
    for (int i = 0; i < 6; i++) {
        dt_db_kernel k;
        CU_ASSERT_EQUAL_FATAL(dt_db_kernel_get(db, i + 1, &k, &e), DT_OK);
        CU_ASSERT_STRING_EQUAL(k.op, want[i].op);
        CU_ASSERT_STRING_EQUAL(k.dtype, "f32");
        CU_ASSERT_STRING_EQUAL(k.attrs, want[i].attrs);
        CU_ASSERT_STRING_EQUAL(k.annotation, want[i].annotation);
        if (want[i].hash) {
            CU_ASSERT_STRING_EQUAL(k.source_hash, want[i].hash);
        } else {
            CU_ASSERT_PTR_NULL(k.source_hash);
        }
        dt_db_kernel_free(&k);
    }
    dt_db_kernel k;
    CU_ASSERT_EQUAL(dt_db_kernel_get(db, 7, &k, &e), DT_ENOTFOUND);
    /* the interned identity finds the split row; another epilogue is new */
    int64_t id = 0;
    CU_ASSERT_EQUAL(dt_db_kernel_intern_attrs(db, "dense", NULL, "{ \"epilogue\": \"none\" }",
                                              "blocked", "{\"mr\": 4}", NULL, &id, &e), DT_OK);
    CU_ASSERT_EQUAL(id, 6);
    CU_ASSERT_EQUAL(dt_db_kernel_intern_attrs(db, "dense", "f32", "{\"epilogue\":\"gelu\"}",
                                              "blocked", "{\"mr\":4}", NULL, &id, &e), DT_OK);
    CU_ASSERT_EQUAL(id, 7);
    CU_ASSERT_EQUAL(dt_db_kernel_intern_attrs(db, "dense", "f32", "[1]", "blocked", "{}", NULL,
                                              &id, &e), DT_EINVAL);
    dt_db_close(db);
    /* wl 2's measurement and schedule of kernel 1 moved to 6; wl 1's stayed */
    CU_ASSERT_EQUAL(raw_int(p, "SELECT kernel_id FROM measurements WHERE id = 2"), 6);
    CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM measurements WHERE kernel_id = 1"), 2);
    CU_ASSERT_EQUAL(raw_int(p, "SELECT kernel_id FROM schedules WHERE workload_id = 2"
                               " AND shape_lo = 'M=1'"), 6);
    CU_ASSERT_EQUAL(raw_int(p, "SELECT kernel_id FROM schedules WHERE workload_id = 1"), 1);
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA foreign_keys"), 0); /* a fresh connection's default */
    CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM sqlite_temp_master"), 0);
    CU_ASSERT_TRUE(integrity_ok(p));
    /* the handle left foreign keys on after the rebuild */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, 1, 1, 1,
                                           &(dt_db_schedule){.kernel_id = 99, .shape_lo = "M=1",
                                                             .shape_hi = "M=4", .threads = 1},
                                           1, &e),
                    DT_EINVAL);
    dt_db_close(db);
}

/* ---- schema 2 -> 3: tests/data/v2/v2.db (tests/data/v2/README.md) ----------- */

/* A schedules row as sqlite3 reads it. */
typedef struct {
    long long id, workload_id, target_id, kernel_id, threads;
    char lo[64], hi[64];
} raw_schedule;

/* Every schedules row of path in id order, read with plain sqlite3 (which
 * knows no box column, so this reads a schema-2 file as well); returns how
 * many (at most max), -1 when the query fails. */
static int raw_schedules(const char *path, raw_schedule *out, int max)
{
    sqlite3 *s;
    sqlite3_stmt *st;
    int n = 0;
    CU_ASSERT_FATAL(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    if (sqlite3_prepare_v2(s,
                           "SELECT id, workload_id, target_id, kernel_id, threads, shape_lo,"
                           " shape_hi FROM schedules ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_close(s);
        return -1;
    }
    while (n < max && sqlite3_step(st) == SQLITE_ROW) {
        raw_schedule *r = &out[n++];
        r->id = sqlite3_column_int64(st, 0);
        r->workload_id = sqlite3_column_int64(st, 1);
        r->target_id = sqlite3_column_int64(st, 2);
        r->kernel_id = sqlite3_column_int64(st, 3);
        r->threads = sqlite3_column_int64(st, 4);
        snprintf(r->lo, sizeof r->lo, "%s", (const char *)sqlite3_column_text(st, 5));
        snprintf(r->hi, sizeof r->hi, "%s", (const char *)sqlite3_column_text(st, 6));
    }
    sqlite3_finalize(st);
    sqlite3_close(s);
    return n;
}

static void print_problem(const char *kind, const char *message, void *ud)
{
    (void)ud;
    fprintf(stderr, "\n  unexpected problem: [%s] %s", kind, message);
}

/* The file the previous dtune made: opening it migrates it to schema 3 in
 * place; every schedules row is still there, unchanged, and reads as a run
 * (box 0), multi-variable runs that cross a row of the grid included; the
 * file passes every check of `dtune db check`. */
static void test_migrate_schema2_file(void)
{
    char src[4096], cmd[8300];
    snprintf(src, sizeof src, "%s/tests/data/v2/v2.db", DTUNE_SOURCE_DIR);
    const char *p = dt_test_path("v2.db");
    unlink(p);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, p);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), 2);
    raw_schedule before[64], after[64];
    int n = raw_schedules(p, before, 64);
    CU_ASSERT_FATAL(n > 0 && n < 64);
    CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM schedules"), n);
    /* the README's point: some rows are runs no box can hold */
    CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM schedules WHERE shape_lo = 'b=1,s=1'"
                               " AND shape_hi = 'b=2,s=1'"),
                    1);

    /* a read-only open does not migrate it */
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_EVERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "has schema version 2, this dtune needs 3"));
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), 2);

    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_opened_version(db), 2);
    CU_ASSERT_EQUAL(dt_db_schema_version(db), DT_DB_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(DT_DB_SCHEMA_VERSION, 3);
    CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_OK);
    int64_t problems = -1;
    CU_ASSERT_EQUAL(dt_db_check_all(db, print_problem, NULL, &problems, &e), DT_OK);
    CU_ASSERT_EQUAL(problems, 0);
    /* through the accessor: each row as it was, box 0 */
    int listed = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && before[i].workload_id == before[i - 1].workload_id &&
            before[i].target_id == before[i - 1].target_id)
            continue; /* one listing per (workload, target) */
        dt_db_schedule *got = NULL;
        size_t ng = 0;
        CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(db, before[i].workload_id,
                                                  before[i].target_id, 0, &got, &ng, &e),
                              DT_OK);
        for (size_t j = 0; j < ng; j++) {
            const raw_schedule *b = NULL;
            for (int k = 0; k < n && !b; k++)
                if (before[k].id == got[j].id)
                    b = &before[k];
            CU_ASSERT_PTR_NOT_NULL_FATAL(b);
            CU_ASSERT_EQUAL(got[j].box, 0);
            CU_ASSERT_STRING_EQUAL(got[j].shape_lo, b->lo);
            CU_ASSERT_STRING_EQUAL(got[j].shape_hi, b->hi);
            CU_ASSERT_EQUAL(got[j].kernel_id, b->kernel_id);
            CU_ASSERT_EQUAL(got[j].threads, b->threads);
            listed++;
        }
        dt_db_schedules_free(got, ng);
    }
    CU_ASSERT_EQUAL(listed, n);
    dt_db_close(db);

    /* on disk: schema 3, the same rows, the new column 0 everywhere */
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), DT_DB_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA application_id"), DT_DB_APPLICATION_ID);
    CU_ASSERT_EQUAL_FATAL(raw_schedules(p, after, 64), n);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(after[i].id, before[i].id);
        CU_ASSERT_EQUAL(after[i].workload_id, before[i].workload_id);
        CU_ASSERT_EQUAL(after[i].target_id, before[i].target_id);
        CU_ASSERT_EQUAL(after[i].kernel_id, before[i].kernel_id);
        CU_ASSERT_EQUAL(after[i].threads, before[i].threads);
        CU_ASSERT_STRING_EQUAL(after[i].lo, before[i].lo);
        CU_ASSERT_STRING_EQUAL(after[i].hi, before[i].hi);
    }
    CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM schedules WHERE box = 0"), n);
    CU_ASSERT_TRUE(integrity_ok(p));

    /* a read-only open serves the migrated file; a second open has nothing to do */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_OK);
    dt_db_close(db);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_opened_version(db), DT_DB_SCHEMA_VERSION);
    dt_db_close(db);

    /* a file brought to exactly schema 2 and then forward gets the same column */
    const char *q = dt_test_path("v2-steps.db");
    unlink(q);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(q, DT_DB_CREATE | DT_DB_NOMIGRATE, &db, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_migrate_to(db, 2, &e), DT_OK);
    dt_db_close(db);
    raw_exec(q, "INSERT INTO targets VALUES (1, 't', 'avx2', '{}', 0);"
                "INSERT INTO workloads VALUES (1, 'dense(M=1..8,N=8,K=8)', 'dense', '{}', 0);"
                "INSERT INTO kernels (id, op, sketch, annotation, created_at)"
                " VALUES (1, 'dense', 'blocked', '{}', 0);"
                "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
                " threads, created_at) VALUES (1, 1, 'M=1', 'M=8', 1, 1, 0);");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(q, 0, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_opened_version(db), 2);
    CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_OK);
    dt_db_close(db);
    CU_ASSERT_EQUAL(raw_int(q, "SELECT box FROM schedules"), 0);
}

static void test_migrate_from_version_0(void)
{
    const char *p = dt_test_path("v0.db");
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_CREATE | DT_DB_NOMIGRATE, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schema_version(db), 0);
    CU_ASSERT_NOT_EQUAL(dt_db_target_upsert(db, "t", "avx2", NULL, NULL, &e), DT_OK);
    dt_db_close(db);
    CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM sqlite_master"), 0);

    /* Read-only never migrates. */
    CU_ASSERT_EQUAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_EVERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "dtune db init"));

    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_NOMIGRATE, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_opened_version(db), 0);
    CU_ASSERT_FALSE(dt_db_was_created(db));
    CU_ASSERT_EQUAL(dt_db_migrate_to(db, DT_DB_SCHEMA_VERSION, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schema_version(db), DT_DB_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(dt_db_migrate_to(db, 0, &e), DT_EINVAL);  /* never down */
    CU_ASSERT_EQUAL(dt_db_migrate_to(db, DT_DB_SCHEMA_VERSION + 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_migrate_to(db, DT_DB_SCHEMA_VERSION, &e), DT_OK);  /* no-op */
    int64_t id;
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "t", "avx2", NULL, &id, &e), DT_OK);
    dt_db_close(db);
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA application_id"), DT_DB_APPLICATION_ID);
    CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), DT_DB_SCHEMA_VERSION);

    /* A plain open of an (empty) version-0 file migrates it by itself. */
    const char *q = dt_test_path("v0-auto.db");
    CU_ASSERT_EQUAL_FATAL(dt_db_open(q, DT_DB_CREATE | DT_DB_NOMIGRATE, &db, &e), DT_OK);
    dt_db_close(db);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(q, 0, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_opened_version(db), 0);
    CU_ASSERT_EQUAL(dt_db_schema_version(db), DT_DB_SCHEMA_VERSION);
    dt_db_close(db);
    CU_ASSERT_TRUE(integrity_ok(p));
    CU_ASSERT_TRUE(integrity_ok(q));
}

/* ---- accessors -------------------------------------------------------------- */

static void test_targets(void)
{
    dt_db *db = open_new("targets.db");
    dt_err e;
    int64_t a, b, a2;
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "ta", "avx2", "{\"cores\":4}", &a, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "tb", "avx512", NULL, &b, &e), DT_OK);
    CU_ASSERT_NOT_EQUAL(a, b);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "ta", "avx512", "{\"cores\":8}", &a2, &e), DT_OK);
    CU_ASSERT_EQUAL(a, a2);
    dt_db_target t;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_get(db, "ta", &t, &e), DT_OK);
    CU_ASSERT_EQUAL(t.id, a);
    CU_ASSERT_STRING_EQUAL(t.key, "ta");
    CU_ASSERT_STRING_EQUAL(t.isa, "avx512");
    CU_ASSERT_STRING_EQUAL(t.info, "{\"cores\":8}");
    CU_ASSERT_TRUE(t.created_at > 1600000000);
    dt_db_target_free(&t);
    CU_ASSERT_EQUAL(dt_db_target_get(db, "nope", &t, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "nope"));
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "tc", "avx2", "{not json", NULL, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "", "avx2", NULL, NULL, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "tc", NULL, NULL, NULL, &e), DT_EINVAL);
    dt_db_close(db);
}

static void test_workloads(void)
{
    dt_db *db = open_new("workloads.db");
    dt_err e;
    int64_t w1, w2, w1b;
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, "dense(M=1..8,N=64,K=64)", "dense",
                                          "{\"M\":[1,8]}", &w1, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, "batch_matmul(B=12,M=1..128,N=64,K=1..128)",
                                          "batch_matmul", "{\"seq\":[1,128]}", &w2, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, "dense(M=1..8,N=64,K=64)", "dense",
                                          "{\"M\":[1,8],\"w\":[1]}", &w1b, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(w1, w1b);
    dt_db_workload w;
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_get(db, "dense(M=1..8,N=64,K=64)", &w, &e), DT_OK);
    CU_ASSERT_EQUAL(w.id, w1);
    CU_ASSERT_STRING_EQUAL(w.op, "dense");
    CU_ASSERT_STRING_EQUAL(w.shape_set, "{\"M\":[1,8],\"w\":[1]}");
    dt_db_workload_free(&w);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_get_by_id(db, w2, &w, &e), DT_OK);
    CU_ASSERT_STRING_EQUAL(w.op, "batch_matmul");
    dt_db_workload_free(&w);
    CU_ASSERT_EQUAL(dt_db_workload_get_by_id(db, 999, &w, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(dt_db_workload_get(db, "dense()", &w, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(db, "k", "dense", NULL, NULL, &e), DT_EINVAL);

    dt_db_workload *ws;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_list(db, &ws, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(ws[0].id, w1);
    CU_ASSERT_EQUAL(ws[1].id, w2);
    CU_ASSERT_STRING_EQUAL(ws[1].key, "batch_matmul(B=12,M=1..128,N=64,K=1..128)");
    dt_db_workloads_free(ws, n);
    dt_db_close(db);

    db = open_new("workloads-empty.db");
    CU_ASSERT_EQUAL(dt_db_workload_list(db, &ws, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NULL(ws);
    dt_db_close(db);
}

static void test_kernels(void)
{
    dt_db *db = open_new("kernels.db");
    dt_err e;
    int64_t k1, k1b, k2, k3;
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "pack_ab", "{\"NR\": 16, \"MR\": 6}",
                                        "hash1", &k1, &e),
                    DT_OK);
    /* Same annotation written differently: same kernel. */
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "pack_ab", "{ \"MR\":6,\"NR\":16 }",
                                        "other", &k1b, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(k1, k1b);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "direct_a", "{\"MR\":6,\"NR\":16}", NULL,
                                        &k2, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "batch_matmul", "pack_ab", "{\"MR\":6,\"NR\":16}",
                                        NULL, &k3, &e),
                    DT_OK);
    CU_ASSERT_NOT_EQUAL(k1, k2);
    CU_ASSERT_NOT_EQUAL(k1, k3);
    dt_db_kernel k;
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_get(db, k1, &k, &e), DT_OK);
    CU_ASSERT_STRING_EQUAL(k.op, "dense");
    CU_ASSERT_STRING_EQUAL(k.sketch, "pack_ab");
    CU_ASSERT_STRING_EQUAL(k.annotation, "{\"MR\":6,\"NR\":16}");
    CU_ASSERT_STRING_EQUAL(k.source_hash, "hash1");  /* kept from the first insert */
    dt_db_kernel_free(&k);
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_get(db, k2, &k, &e), DT_OK);
    CU_ASSERT_PTR_NULL(k.source_hash);
    dt_db_kernel_free(&k);
    CU_ASSERT_EQUAL(dt_db_kernel_get(db, 12345, &k, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, "dense", "x", "[1,", NULL, NULL, &e), DT_EINVAL);
    dt_db_close(db);
}

typedef struct {
    int n;
    int64_t ids[16];
    dt_db_measurement first;
    char first_shape[64], first_uid[64], first_error[64];
    int stop_after;
} collect;

static int collect_cb(const dt_db_measurement *m, void *ud)
{
    collect *c = ud;
    if (c->n == 0) {
        /* The strings are borrowed for this call only: keep copies. */
        c->first = *m;
        c->first.shape = c->first.trial_uid = c->first.error = NULL;
        snprintf(c->first_shape, sizeof c->first_shape, "%s", m->shape);
        snprintf(c->first_uid, sizeof c->first_uid, "%s", m->trial_uid);
        snprintf(c->first_error, sizeof c->first_error, "%s", m->error ? m->error : "");
    }
    if (c->n < 16)
        c->ids[c->n] = m->id;
    c->n++;
    return c->stop_after && c->n >= c->stop_after ? 1 : 0;
}

static int abort_cb(const dt_db_measurement *m, void *ud)
{
    (void)m;
    ++*(int *)ud;
    return DT_EIO;
}

static void test_measurements(void)
{
    fixture f = make_fixture("meas.db");
    dt_err e;
    int64_t id1, id2, id3, again;
    bool dup = true;
    dt_db_measurement m = meas(&f, f.k1, "M=37", DT_TRIAL_OK, 1000.0, "trial-1");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, &id1, &dup, &e), DT_OK);
    CU_ASSERT_FALSE(dup);
    m = meas(&f, f.k2, "M=37", DT_TRIAL_RUN_CRASH, 0, "trial-2");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, &id2, &dup, &e), DT_OK);
    m = meas(&f, f.k2, "M=64", DT_TRIAL_OK, 2000.0, "trial-3");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, &id3, NULL, &e), DT_OK);

    /* The same trial again (e.g. requeued after a lost worker): recorded once. */
    m = meas(&f, f.k1, "M=37", DT_TRIAL_OK, 999.0, "trial-1");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, &again, &dup, &e), DT_OK);
    CU_ASSERT_TRUE(dup);
    CU_ASSERT_EQUAL(again, id1);

    dt_db_measurement_filter all = {.workload_id = f.wl1, .target_id = f.target};
    int64_t n = -1;
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, &all, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 3);
    dt_db_measurement_filter ok = {.workload_id = f.wl1, .target_id = f.target, .ok_only = 1};
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, &ok, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 2);
    dt_db_measurement_filter by_kernel = {.kernel_id = f.k2};
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, &by_kernel, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 2);
    dt_db_measurement_filter other_wl = {.workload_id = f.wl2, .target_id = f.target};
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, &other_wl, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, NULL, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 3);

    collect c = {0};
    CU_ASSERT_EQUAL(dt_db_measurement_list(f.db, &all, collect_cb, &c, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(c.n, 3);
    CU_ASSERT_EQUAL(c.ids[0], id1);
    CU_ASSERT_EQUAL(c.ids[1], id2);
    CU_ASSERT_EQUAL(c.ids[2], id3);
    CU_ASSERT_EQUAL(c.first.kernel_id, f.k1);
    CU_ASSERT_EQUAL(c.first.status, DT_TRIAL_OK);
    CU_ASSERT_EQUAL(c.first.threads, 8);
    CU_ASSERT_DOUBLE_EQUAL(c.first.min_ns, 1000.0, 1e-9);  /* not the duplicate's 999 */
    CU_ASSERT_DOUBLE_EQUAL(c.first.median_ns, 1100.0, 1e-9);
    CU_ASSERT_STRING_EQUAL(c.first_shape, "M=37");
    CU_ASSERT_STRING_EQUAL(c.first_uid, "trial-1");

    /* Failed trials come back without times and with their error. */
    collect crash = {0};
    dt_db_measurement_filter k2only = {.kernel_id = f.k2, .workload_id = f.wl1};
    CU_ASSERT_EQUAL(dt_db_measurement_list(f.db, &k2only, collect_cb, &crash, &e), DT_OK);
    CU_ASSERT_EQUAL(crash.n, 2);
    CU_ASSERT_EQUAL(crash.first.status, DT_TRIAL_RUN_CRASH);
    CU_ASSERT_TRUE(isnan(crash.first.min_ns));
    CU_ASSERT_STRING_EQUAL(crash.first_error, "boom");

    collect early = {.stop_after = 1};
    CU_ASSERT_EQUAL(dt_db_measurement_list(f.db, &all, collect_cb, &early, &e), DT_OK);
    CU_ASSERT_EQUAL(early.n, 1);
    int calls = 0;
    CU_ASSERT_EQUAL(dt_db_measurement_list(f.db, &all, abort_cb, &calls, &e), DT_EIO);
    CU_ASSERT_EQUAL(calls, 1);

    /* Bad input never reaches the table. */
    m = meas(&f, f.k1, "M=1", DT_TRIAL_OK, 1.0, "trial-x");
    m.min_ns = NAN;
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, NULL, &e), DT_EINVAL);
    m = meas(&f, f.k1, "M=1", (dt_trial_status)42, 1.0, "trial-y");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, NULL, &e), DT_EINVAL);
    m = meas(&f, f.k1, "M=1", DT_TRIAL_OK, 1.0, "");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, NULL, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, NULL, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 3);

    dt_trial_status s;
    for (int i = 0; i < DT_TRIAL_N_STATUS; i++) {
        CU_ASSERT_EQUAL(dt_trial_status_parse(dt_trial_status_name((dt_trial_status)i), &s), DT_OK);
        CU_ASSERT_EQUAL((int)s, i);
    }
    CU_ASSERT_EQUAL(dt_trial_status_parse("fine", &s), DT_EINVAL);
    dt_db_close(f.db);
    CU_ASSERT_TRUE(integrity_ok(dt_test_path("meas.db")));
}

static void test_foreign_keys_enforced(void)
{
    fixture f = make_fixture("fk.db");
    dt_err e;
    dt_db_measurement m = meas(&f, 9999, "M=1", DT_TRIAL_OK, 5.0, "fk-trial");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, NULL, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "FOREIGN KEY"));
    m = meas(&f, f.k1, "M=1", DT_TRIAL_OK, 5.0, "fk-trial");
    m.target_id = 777;
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, NULL, &e), DT_EINVAL);
    int64_t n;
    CU_ASSERT_EQUAL(dt_db_measurement_count(f.db, NULL, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 0);
    /* The rejected trial uid was not taken: a valid record with it goes in. */
    m = meas(&f, f.k1, "M=1", DT_TRIAL_OK, 5.0, "fk-trial");
    bool dup = true;
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, &dup, &e), DT_OK);
    CU_ASSERT_FALSE(dup);
    dt_db_schedule bad = {.shape_lo = "M=1", .shape_hi = "M=8", .kernel_id = f.k1};
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, 4242, f.target, 1, &bad, 1, &e), DT_EINVAL);
    dt_db_close(f.db);
}

static void test_schedules(void)
{
    fixture f = make_fixture("sched.db");
    dt_err e;
    dt_db_schedule rows[3] = {
        {.shape_lo = "M=1", .shape_hi = "M=8", .kernel_id = f.k1, .threads = 1,
         .predicted_ns = 100, .measured_ns = 110},
        {.shape_lo = "M=9", .shape_hi = "M=128", .kernel_id = f.k2, .threads = 8,
         .predicted_ns = 900, .measured_ns = NAN},
    };
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, rows, 2, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl2, f.target, 1, rows, 1, &e), DT_OK);

    dt_db_schedule *got;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(got[0].shape_lo, "M=1");
    CU_ASSERT_STRING_EQUAL(got[1].shape_hi, "M=128");
    CU_ASSERT_EQUAL(got[1].kernel_id, f.k2);
    CU_ASSERT_EQUAL(got[1].threads, 1); /* the call's thread count, not the row's */
    CU_ASSERT_EQUAL(got[1].workload_id, f.wl1);
    CU_ASSERT_DOUBLE_EQUAL(got[0].measured_ns, 110, 1e-9);
    CU_ASSERT_TRUE(isnan(got[1].measured_ns));
    dt_db_schedules_free(got, n);

    /* A replacement that fails half-way (row 3 names no kernel) changes nothing. */
    rows[0].shape_hi = "M=4";
    rows[2] = (dt_db_schedule){.shape_lo = "M=129", .shape_hi = "M=256", .kernel_id = 5555};
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, rows, 3, &e), DT_EINVAL);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(got[0].shape_hi, "M=8");
    dt_db_schedules_free(got, n);

    /* Same inside a caller's transaction: its earlier writes survive. */
    CU_ASSERT_EQUAL_FATAL(dt_db_begin(f.db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_target_upsert(f.db, "in-tx", "avx2", NULL, NULL, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, rows, 3, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_commit(f.db, &e), DT_OK);
    dt_db_target t;
    CU_ASSERT_EQUAL(dt_db_target_get(f.db, "in-tx", &t, &e), DT_OK);
    dt_db_target_free(&t);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 2);
    dt_db_schedules_free(got, n);

    /* A good replacement replaces the whole schedule; the other workload's stays. */
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, rows, 1, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(got[0].shape_hi, "M=4");
    dt_db_schedules_free(got, n);
    CU_ASSERT_EQUAL(dt_db_schedule_list(f.db, f.wl2, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 1);
    dt_db_schedules_free(got, n);
    /* Another thread count is a separate schedule: replacing it keeps the first. */
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 2, rows, 2, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 2, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 2);
    dt_db_schedules_free(got, n);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_EQUAL(got[0].threads, 1);
    CU_ASSERT_EQUAL(got[2].threads, 2);
    dt_db_schedules_free(got, n);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 0, rows, 1, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 2, NULL, 0, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, NULL, 0, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_schedule_list(f.db, f.wl1, f.target, 0, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NULL(got);
    dt_db_close(f.db);
    CU_ASSERT_TRUE(integrity_ok(dt_test_path("sched.db")));
}

/* Schema 3: a row is a box (1) or a schema-2 run (0), stored and read back
 * as given; anything else is refused before anything is written, and the
 * column's CHECK refuses it from any other writer. */
static void test_schedule_boxes(void)
{
    fixture f = make_fixture("sched-box.db");
    dt_err e;
    dt_db_schedule rows[] = {
        {.shape_lo = "b=1,s=1", .shape_hi = "b=2,s=4", .box = 1, .kernel_id = f.k1,
         .predicted_ns = 10, .measured_ns = 11},
        {.shape_lo = "b=3,s=1", .shape_hi = "b=3,s=2", .box = 1, .kernel_id = f.k2,
         .predicted_ns = 20, .measured_ns = NAN},
        {.shape_lo = "b=3,s=3", .shape_hi = "b=3,s=4", .box = 0, .kernel_id = f.k1,
         .predicted_ns = NAN, .measured_ns = 30},
    };
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, rows, 3, &e), DT_OK);
    dt_db_schedule *got;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 1, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(got[i].box, rows[i].box);
        CU_ASSERT_STRING_EQUAL(got[i].shape_lo, rows[i].shape_lo);
        CU_ASSERT_STRING_EQUAL(got[i].shape_hi, rows[i].shape_hi);
        CU_ASSERT_EQUAL(got[i].kernel_id, rows[i].kernel_id);
    }
    dt_db_schedules_free(got, n);

    /* box 2 (or -1) is neither: refused, the old schedule stays */
    dt_db_schedule bad[2] = {rows[0], rows[1]};
    bad[1].box = 2;
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, bad, 2, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "schedule row 1 (b=3,s=1..b=3,s=2)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "box must be 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not 2"));
    bad[1].box = -1;
    CU_ASSERT_EQUAL(dt_db_schedule_replace(f.db, f.wl1, f.target, 1, bad, 2, &e), DT_EINVAL);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(f.db, f.wl1, f.target, 1, &got, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_EQUAL(n == 3 ? got[2].box : -1, 0);
    dt_db_schedules_free(got, n);
    dt_db_close(f.db);

    const char *p = dt_test_path("sched-box.db");
    sqlite3 *s;
    CU_ASSERT_FATAL(sqlite3_open(p, &s) == SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(s, "UPDATE schedules SET box = 2", NULL, NULL, NULL),
                    SQLITE_CONSTRAINT);
    CU_ASSERT_EQUAL(sqlite3_extended_errcode(s), SQLITE_CONSTRAINT_CHECK);
    sqlite3_close(s);
    CU_ASSERT_EQUAL(raw_int(p, "SELECT sum(box) FROM schedules"), 2);
    CU_ASSERT_TRUE(integrity_ok(p));
}

static void test_cost_models(void)
{
    fixture f = make_fixture("cm.db");
    dt_err e;
    dt_db_cost_model m;
    CU_ASSERT_EQUAL(dt_db_cost_model_load_latest(f.db, f.target, "dense", &m, &e),
                    DT_ENOTFOUND);
    unsigned char blob1[300], blob2[5000];
    for (size_t i = 0; i < sizeof blob1; i++)
        blob1[i] = (unsigned char)i;
    for (size_t i = 0; i < sizeof blob2; i++)
        blob2[i] = (unsigned char)(i * 7 + 3);  /* includes zero bytes */
    int64_t id1, id2;
    CU_ASSERT_EQUAL(dt_db_cost_model_save(f.db, f.target, "dense", blob1, sizeof blob1, 10,
                                          NULL, &id1, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(dt_db_cost_model_save(f.db, f.target, "dense", blob2, sizeof blob2, 250,
                                          "{\"rmse\":0.1}", &id2, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(dt_db_cost_model_save(f.db, f.target, "batch_matmul", blob1, 3, 1, NULL,
                                          NULL, &e),
                    DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_cost_model_load_latest(f.db, f.target, "dense", &m, &e),
                          DT_OK);
    CU_ASSERT_EQUAL(m.id, id2);
    CU_ASSERT_EQUAL(m.n_records, 250);
    CU_ASSERT_EQUAL_FATAL(m.model_size, sizeof blob2);
    CU_ASSERT_EQUAL(memcmp(m.model, blob2, sizeof blob2), 0);
    CU_ASSERT_STRING_EQUAL(m.metrics, "{\"rmse\":0.1}");
    CU_ASSERT_STRING_EQUAL(m.op, "dense");
    dt_db_cost_model_free(&m);
    CU_ASSERT_EQUAL(dt_db_cost_model_save(f.db, f.target, "dense", blob1, 0, 1, NULL, NULL, &e),
                    DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_cost_model_save(f.db, 999, "dense", blob1, 4, 1, NULL, NULL, &e),
                    DT_EINVAL);
    dt_db_close(f.db);
}

static void test_jobs(void)
{
    dt_db *db = open_new("jobs.db");
    dt_err e;
    int64_t none[DT_JOB_N_STATES] = {7, 7, 7, 7, 7};
    CU_ASSERT_EQUAL(dt_db_job_counts(db, none, &e), DT_OK);
    for (int k = 0; k < DT_JOB_N_STATES; k++)
        CU_ASSERT_EQUAL(none[k], 0);
    int64_t j1, j2, j3;
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{\"model\":\"bert\"}", NULL, &j1, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{\"model\":\"gpt2\"}", "{\"trials\":64}", &j2, &e),
                    DT_OK);
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{\"model\":\"resnet\"}", NULL, &j3, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_job_create(db, "nope", NULL, NULL, &e), DT_EINVAL);

    dt_db_job j;
    CU_ASSERT_EQUAL_FATAL(dt_db_job_get(db, j2, &j, &e), DT_OK);
    CU_ASSERT_EQUAL(j.state, DT_JOB_QUEUED);
    CU_ASSERT_STRING_EQUAL(j.spec, "{\"model\":\"gpt2\"}");
    CU_ASSERT_STRING_EQUAL(j.options, "{\"trials\":64}");
    CU_ASSERT_PTR_NULL(j.checkpoint);
    CU_ASSERT_EQUAL(j.created_at, j.updated_at);
    dt_db_job_free(&j);

    dt_db_job_update run = {.set_state = true, .state = DT_JOB_RUNNING,
                            .progress = "{\"done\":3,\"total\":10}",
                            .checkpoint = "{\"round\":1}"};
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j1, &run, &e), DT_OK);
    dt_db_job_update fail = {.set_state = true, .state = DT_JOB_FAILED, .error = "worker died"};
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j3, &fail, &e), DT_OK);
    dt_db_job_update progress_only = {.progress = "{\"done\":4,\"total\":10}"};
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j1, &progress_only, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, 9999, &progress_only, &e), DT_ENOTFOUND);
    dt_db_job_update bad = {.checkpoint = "{"};
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j1, &bad, &e), DT_EINVAL);

    CU_ASSERT_EQUAL_FATAL(dt_db_job_get(db, j1, &j, &e), DT_OK);
    CU_ASSERT_EQUAL(j.state, DT_JOB_RUNNING);  /* kept by the progress-only update */
    CU_ASSERT_STRING_EQUAL(j.progress, "{\"done\":4,\"total\":10}");
    CU_ASSERT_STRING_EQUAL(j.checkpoint, "{\"round\":1}");
    CU_ASSERT_PTR_NULL(j.error);
    dt_db_job_free(&j);

    dt_db_job *list;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(dt_db_job_list_unfinished(db, &list, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(list[0].id, j1);
    CU_ASSERT_EQUAL(list[0].state, DT_JOB_RUNNING);
    CU_ASSERT_EQUAL(list[1].id, j2);
    dt_db_jobs_free(list, n);
    CU_ASSERT_EQUAL_FATAL(dt_db_job_list(db, DT_JOB_MASK(DT_JOB_FAILED), &list, &n, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(list[0].error, "worker died");
    dt_db_jobs_free(list, n);
    CU_ASSERT_EQUAL(dt_db_job_list(db, 0, &list, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 3);
    dt_db_jobs_free(list, n);

    /* Counts by state in one query: a state with no job counts 0. */
    int64_t counts[DT_JOB_N_STATES];
    CU_ASSERT_EQUAL_FATAL(dt_db_job_counts(db, counts, &e), DT_OK);
    CU_ASSERT_EQUAL(counts[DT_JOB_QUEUED], 1);
    CU_ASSERT_EQUAL(counts[DT_JOB_RUNNING], 1);
    CU_ASSERT_EQUAL(counts[DT_JOB_DONE], 0);
    CU_ASSERT_EQUAL(counts[DT_JOB_FAILED], 1);
    CU_ASSERT_EQUAL(counts[DT_JOB_CANCELLED], 0);

    /* Requeueing clears the error with "". */
    dt_db_job_update requeue = {.set_state = true, .state = DT_JOB_QUEUED, .error = ""};
    CU_ASSERT_EQUAL(dt_db_job_update_fields(db, j3, &requeue, &e), DT_OK);
    CU_ASSERT_EQUAL_FATAL(dt_db_job_get(db, j3, &j, &e), DT_OK);
    CU_ASSERT_EQUAL(j.state, DT_JOB_QUEUED);
    CU_ASSERT_PTR_NULL(j.error);
    dt_db_job_free(&j);
    CU_ASSERT_EQUAL(dt_db_job_get(db, 4242, &j, &e), DT_ENOTFOUND);

    dt_job_state s;
    CU_ASSERT_EQUAL(dt_job_state_parse("cancelled", &s), DT_OK);
    CU_ASSERT_EQUAL(s, DT_JOB_CANCELLED);
    CU_ASSERT_EQUAL(dt_job_state_parse("paused", &s), DT_EINVAL);
    dt_db_close(db);
}

/* ---- transactions and concurrency ------------------------------------------- */

static void test_transactions(void)
{
    dt_db *db = open_new("tx.db");
    dt_err e;
    dt_db_target t;
    CU_ASSERT_EQUAL_FATAL(dt_db_begin(db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_begin(db, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "gone", "avx2", NULL, NULL, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_migrate_to(db, DT_DB_SCHEMA_VERSION, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_rollback(db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_target_get(db, "gone", &t, &e), DT_ENOTFOUND);

    CU_ASSERT_EQUAL_FATAL(dt_db_begin(db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "kept", "avx2", NULL, NULL, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", NULL, NULL, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_commit(db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_target_get(db, "kept", &t, &e), DT_OK);
    dt_db_target_free(&t);
    CU_ASSERT_EQUAL(dt_db_commit(db, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_rollback(db, &e), DT_OK);  /* nothing open: fine */
    dt_db_close(db);

    /* A read-only handle refuses writes with a clear message. */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dt_test_path("tx.db"), DT_DB_READONLY, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_target_upsert(db, "ro", "avx2", NULL, NULL, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "read-only"));
    CU_ASSERT_EQUAL(dt_db_begin(db, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_db_target_get(db, "kept", &t, &e), DT_OK);
    dt_db_target_free(&t);
    dt_db_close(db);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_concurrent_reader(void)
{
    const char *p = dt_test_path("concurrent.db");
    dt_db *a = open_new("concurrent.db");
    dt_err e;
    int64_t w;
    CU_ASSERT_EQUAL(dt_db_workload_upsert(a, "old", "dense", "{}", &w, &e), DT_OK);

    /* A holds an open write transaction with uncommitted inserts. */
    CU_ASSERT_EQUAL_FATAL(dt_db_begin(a, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(a, "new", "dense", "{}", NULL, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_job_create(a, "{}", NULL, NULL, &e), DT_OK);

    dt_db *b = NULL;
    double t0 = now_s();
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_READONLY, &b, &e), DT_OK);
    dt_db_workload *ws;
    size_t n;
    CU_ASSERT_EQUAL(dt_db_workload_list(b, &ws, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 1);
    if (n == 1)
        CU_ASSERT_STRING_EQUAL(ws[0].key, "old");
    dt_db_workloads_free(ws, n);
    dt_db_stats_info s;
    CU_ASSERT_EQUAL(dt_db_stats(b, &s, &e), DT_OK);
    CU_ASSERT_EQUAL(s.tables[6].rows, 0);  /* jobs */
    CU_ASSERT_TRUE(now_s() - t0 < 1.0);   /* did not wait for A's lock */

    /* A second writer cannot get the lock and says so (DT_EBUSY). */
    dt_db *c = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &c, &e), DT_OK);
    dt_db_set_busy_timeout(c, 50);
    CU_ASSERT_EQUAL(dt_db_target_upsert(c, "blocked", "avx2", NULL, NULL, &e), DT_EBUSY);
    CU_ASSERT_EQUAL(dt_db_begin(c, &e), DT_EBUSY);
    dt_db_close(c);

    CU_ASSERT_EQUAL(dt_db_commit(a, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_workload_list(b, &ws, &n, &e), DT_OK);
    CU_ASSERT_EQUAL(n, 2);
    dt_db_workloads_free(ws, n);
    dt_db_workload got;
    CU_ASSERT_EQUAL(dt_db_workload_get(b, "new", &got, &e), DT_OK);
    dt_db_workload_free(&got);
    dt_db_close(b);
    dt_db_close(a);
    CU_ASSERT_TRUE(integrity_ok(p));
}

static void test_stats(void)
{
    fixture f = make_fixture("stats.db");
    dt_err e;
    dt_db_measurement m = meas(&f, f.k1, "M=2", DT_TRIAL_OK, 10.0, "s-1");
    CU_ASSERT_EQUAL(dt_db_measurement_insert(f.db, &m, NULL, NULL, &e), DT_OK);
    dt_db_stats_info s;
    CU_ASSERT_EQUAL_FATAL(dt_db_stats(f.db, &s, &e), DT_OK);
    CU_ASSERT_EQUAL(s.schema_version, DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(s.path, dt_test_path("stats.db"));
    CU_ASSERT_STRING_EQUAL(s.journal_mode, "wal");
    CU_ASSERT_TRUE(s.size_bytes > 0);
    static const char *names[] = {"targets",   "workloads",   "kernels", "measurements",
                                  "schedules", "cost_models", "jobs"};
    static const int64_t rows[] = {1, 2, 2, 1, 0, 0, 0};
    for (int i = 0; i < DT_DB_N_TABLES; i++) {
        CU_ASSERT_STRING_EQUAL(s.tables[i].name, names[i]);
        CU_ASSERT_EQUAL(s.tables[i].rows, rows[i]);
    }
    dt_db_close(f.db);
}

/* ---- read-only opens: no side files, other uids, snapshots ------------------- */

#define NOBODY 65534   /* the reader: not the owner, no write access */
#define OTHER 65533    /* a second unprivileged uid */

/* Checks in a child process: print and fail with exit status 1. */
#define CHILD_CHECK(cond)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: in the child (uid %d): %s\n", __FILE__, __LINE__,   \
                    (int)getuid(), #cond);                                             \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

static bool is_root(void)
{
    if (geteuid() == 0)
        return true;
    dt_test_skip("switching uids needs root");
    return false;
}

/* Starts fn(ud) in a child process running as uid (and gid uid, no
 * supplementary groups); returns its pid.  fn's return is the exit status. */
static pid_t start_as(uid_t uid, int (*fn)(void *), void *ud)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (uid != geteuid() &&
            (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid(uid) != 0)) {
            fprintf(stderr, "cannot become uid %d: %s\n", (int)uid, strerror(errno));
            _exit(99);
        }
        _exit(fn(ud));
    }
    return pid;
}

/* The exit status of child pid (128 + signal when killed). */
static int wait_child(pid_t pid)
{
    int st;
    if (pid <= 0)
        return -1;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_as(uid_t uid, int (*fn)(void *), void *ud)
{
    return wait_child(start_as(uid, fn, ud));
}

/* Entries of dir (not . and ..) owned by uid. */
static int files_owned_by(const char *dir, uid_t uid)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char p[4400];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && lstat(p, &sb) == 0 &&
            sb.st_uid == uid)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* What a reader child does and expects. */
typedef struct {
    const char *path;
    const char *last;    /* key of the newest workload it must see */
    const char *next;    /* live tests: the key the parent adds meanwhile */
    int to_child[2], to_parent[2];
} ro_ctx;

/* Key of the newest workload through a handle (malloc'ed), NULL on error. */
static char *newest_workload(dt_db *db)
{
    dt_db_workload *ws;
    size_t n;
    dt_err e;
    if (dt_db_workload_list(db, &ws, &n, &e) != DT_OK) {
        fprintf(stderr, "listing workloads: %s\n", e.msg);
        return NULL;
    }
    char *key = n ? strdup(ws[n - 1].key) : strdup("");
    dt_db_workloads_free(ws, n);
    return key;
}

static bool newest_is(dt_db *db, const char *key)
{
    char *got = newest_workload(db);
    bool ok = got && strcmp(got, key) == 0;
    if (!ok)
        fprintf(stderr, "newest workload: '%s', expected '%s'\n", got ? got : "(error)", key);
    free(got);
    return ok;
}

/* Adds workload key through a new read-write handle (closed again). */
static int add_workload(const char *path, const char *key)
{
    dt_db *db;
    dt_err e;
    int rc = dt_db_open(path, DT_DB_CREATE, &db, &e);
    if (rc == DT_OK)
        rc = dt_db_workload_upsert(db, key, "dense", "{}", NULL, &e);
    if (rc)
        fprintf(stderr, "adding %s to %s: %s\n", key, path, e.msg);
    dt_db_close(db);
    return rc;
}

/* A reader: opens read-only, sees ctx->last, reads the statistics. */
static int child_read(void *ud)
{
    ro_ctx *c = ud;
    dt_db *db = NULL;
    dt_err e;
    int rc = dt_db_open(c->path, DT_DB_READONLY, &db, &e);
    if (rc)
        fprintf(stderr, "open: %s\n", e.msg);
    CHILD_CHECK(rc == DT_OK);
    CHILD_CHECK(newest_is(db, c->last));
    dt_db_stats_info s;
    CHILD_CHECK(dt_db_stats(db, &s, &e) == DT_OK);
    CHILD_CHECK(strcmp(s.journal_mode, "wal") == 0);
    CHILD_CHECK(s.schema_version == DT_DB_SCHEMA_VERSION);
    dt_db_close(db);
    return 0;
}

/* A writer that dies with its commits still in the -wal (no checkpoint). */
static int child_write_and_die(void *ud)
{
    ro_ctx *c = ud;
    dt_db *db;
    dt_err e;
    if (dt_db_open(c->path, DT_DB_CREATE, &db, &e) ||
        dt_db_workload_upsert(db, c->last, "dense", "{}", NULL, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        _exit(1);
    }
    _exit(0);  /* no dt_db_close: as if killed */
}

static int child_add(void *ud)
{
    ro_ctx *c = ud;
    return add_workload(c->path, c->last) == DT_OK ? 0 : 1;
}

/* `dtune db stats` (the real binary) as a reader. */
static int child_cli_stats(void *ud)
{
    ro_ctx *c = ud;
    dt_test_proc r;
    int rc = dt_test_run_dtune(&r, "db stats --db '%s' --json", c->path);
    if (rc)
        fprintf(stderr, "dtune db stats: exit %d: %s\n", rc, r.err);
    bool ok = rc == 0 && strstr(r.out, "\"workloads\": 4") && strstr(r.out, "\"wal\"");
    if (rc == 0 && !ok)
        fprintf(stderr, "dtune db stats printed: %s\n", r.out);
    dt_test_proc_free(&r);
    CHILD_CHECK(ok);
    return 0;
}

/* A reader beside a writer: sees c->last, tells the parent, which commits
 * c->next; then sees that too (data_version moved). */
static int child_live(void *ud)
{
    ro_ctx *c = ud;
    dt_db *db = NULL;
    dt_err e;
    int rc = dt_db_open(c->path, DT_DB_READONLY, &db, &e);
    if (rc)
        fprintf(stderr, "open: %s\n", e.msg);
    CHILD_CHECK(rc == DT_OK);
    CHILD_CHECK(newest_is(db, c->last));
    int64_t v1, v2;
    CHILD_CHECK(dt_db_data_version(db, &v1, &e) == DT_OK);
    dt_test_signal_fd(c->to_parent[1]);
    CHILD_CHECK(dt_test_await_fd(c->to_child[0]));  /* the parent committed c->next */
    CHILD_CHECK(dt_db_data_version(db, &v2, &e) == DT_OK);
    CHILD_CHECK(v2 != v1);
    CHILD_CHECK(newest_is(db, c->next));
    dt_test_signal_fd(c->to_parent[1]);
    CHILD_CHECK(dt_test_await_fd(c->to_child[0]));  /* the parent closed its writer */
    CHILD_CHECK(newest_is(db, c->next));
    dt_db_close(db);
    return 0;
}

/* Runs child_live as uid while this process adds c->next, with the writer
 * open before the child starts (a running daemon) or only after (a reader
 * that started from a snapshot). */
static int live_round(uid_t uid, ro_ctx *c, bool writer_first)
{
    if (pipe(c->to_child) || pipe(c->to_parent))
        return -1;
    dt_db *w = NULL;
    dt_err e;
    dt_err_clear(&e);
    if (writer_first && dt_db_open(c->path, 0, &w, &e))
        return -1;
    pid_t pid = start_as(uid, child_live, c);
    close(c->to_child[0]);  /* the child's ends: a child that died reads as EOF */
    close(c->to_parent[1]);
    int rc = 0;
    if (!dt_test_await_fd(c->to_parent[0]))
        rc = -2;
    if (!rc && !w && dt_db_open(c->path, 0, &w, &e))
        rc = -3;
    if (!rc && dt_db_workload_upsert(w, c->next, "dense", "{}", NULL, &e))
        rc = -4;
    dt_test_signal_fd(c->to_child[1]);
    if (!rc && !dt_test_await_fd(c->to_parent[0]))
        rc = -5;
    dt_db_close(w);
    dt_test_signal_fd(c->to_child[1]);
    int st = wait_child(pid);
    close(c->to_child[1]);
    close(c->to_parent[0]);
    if (rc)
        fprintf(stderr, "live round: step %d failed: %s\n", -rc, e.msg);
    return rc ? rc : st;
}

/* As root: a read-only open creates no -wal or -shm. */
static void test_readonly_creates_nothing(void)
{
    const char *p = dt_test_path("ro-nothing.db");
    const char *wal = dt_test_path("ro-nothing.db-wal"), *shm = dt_test_path("ro-nothing.db-shm");
    CU_ASSERT_EQUAL_FATAL(add_workload(p, "w-1"), DT_OK);
    CU_ASSERT_FALSE(exists(wal));
    ro_ctx c = {.path = p, .last = "w-1"};
    CU_ASSERT_EQUAL(child_read(&c), 0);
    CU_ASSERT_FALSE(exists(wal));
    CU_ASSERT_FALSE(exists(shm));
    dt_test_proc r;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --db '%s'", p), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "journal   wal"));
    dt_test_proc_free(&r);
    CU_ASSERT_FALSE(exists(wal));
    CU_ASSERT_FALSE(exists(shm));
}

/* A snapshot handle (no -wal when it opened) follows the file: a writer that
 * is still open, and one that wrote, checkpointed and closed in between. */
static void test_readonly_snapshot_follows_writers(void)
{
    const char *p = dt_test_path("ro-snap.db");
    CU_ASSERT_EQUAL_FATAL(add_workload(p, "s-1"), DT_OK);
    dt_db *ro = NULL, *w = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_READONLY, &ro, &e), DT_OK);
    CU_ASSERT_TRUE(newest_is(ro, "s-1"));
    int64_t v1, v2, v3;
    CU_ASSERT_EQUAL(dt_db_data_version(ro, &v1, &e), DT_OK);
    /* a writer comes, commits and closes: the file changed */
    CU_ASSERT_EQUAL(add_workload(p, "s-2"), DT_OK);
    CU_ASSERT_FALSE(exists(dt_test_path("ro-snap.db-wal")));
    CU_ASSERT_EQUAL(dt_db_data_version(ro, &v2, &e), DT_OK);
    CU_ASSERT_NOT_EQUAL(v1, v2);
    CU_ASSERT_TRUE(newest_is(ro, "s-2"));
    /* a writer that stays open (the -wal appears) */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &w, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_workload_upsert(w, "s-3", "dense", "{}", NULL, &e), DT_OK);
    CU_ASSERT_TRUE(newest_is(ro, "s-3"));
    CU_ASSERT_EQUAL(dt_db_workload_upsert(w, "s-4", "dense", "{}", NULL, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_data_version(ro, &v3, &e), DT_OK);
    CU_ASSERT_NOT_EQUAL(v2, v3);
    CU_ASSERT_TRUE(newest_is(ro, "s-4"));
    dt_db_close(w);
    CU_ASSERT_TRUE(newest_is(ro, "s-4"));
    dt_db_close(ro);
    CU_ASSERT_TRUE(integrity_ok(p));
}

/* The case: the database in a 0755 directory of its owner (root
 * here), read by another uid that cannot create anything there. */
static void test_readonly_other_uid(void)
{
    if (!is_root())
        return;
    CU_ASSERT_EQUAL_FATAL(chmod(dt_test_suite_dir, 0755), 0);
    const char *dir = dt_test_path("svc");
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(dir, 0755), 0);
    const char *p = dt_test_path("svc/t.db"), *wal = dt_test_path("svc/t.db-wal"),
               *shm = dt_test_path("svc/t.db-shm");
    CU_ASSERT_EQUAL_FATAL(add_workload(p, "w-1"), DT_OK);

    /* the daemon is stopped: no side files, and none created */
    ro_ctx c = {.path = p, .last = "w-1"};
    CU_ASSERT_EQUAL(run_as(NOBODY, child_read, &c), 0);
    CU_ASSERT_FALSE(exists(wal));
    CU_ASSERT_FALSE(exists(shm));

    /* the daemon died with commits in the -wal: they are read */
    c.last = "w-crashed";
    CU_ASSERT_EQUAL(run_as(0, child_write_and_die, &c), 0);
    CU_ASSERT_TRUE_FATAL(exists(wal) && exists(shm));
    CU_ASSERT_EQUAL(run_as(NOBODY, child_read, &c), 0);

    /* the daemon is running: read beside it, with its commits seen live */
    c.last = "w-crashed";
    c.next = "w-live";
    CU_ASSERT_EQUAL(live_round(NOBODY, &c, true), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, NOBODY), 0);

    /* started from a snapshot (the owner checkpointed: no -wal), then a
     * writer comes: seen too */
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    dt_db_close(db);
    CU_ASSERT_FALSE_FATAL(exists(wal));
    c.last = "w-live";
    c.next = "w-after";
    CU_ASSERT_EQUAL(live_round(NOBODY, &c, false), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, NOBODY), 0);

    /* the `dtune` binary as the other uid, beside no writer */
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    dt_db_close(db);
    c.last = "w-after";
    CU_ASSERT_EQUAL(run_as(NOBODY, child_cli_stats, &c), 0);
    CU_ASSERT_FALSE(exists(wal));
    CU_ASSERT_FALSE(exists(shm));
    CU_ASSERT_EQUAL(files_owned_by(dir, NOBODY), 0);
    CU_ASSERT_TRUE(integrity_ok(p));
}

/* Errors as the other uid say what is wrong, never "not a dtune database". */
static int child_open_fails(void *ud)
{
    ro_ctx *c = ud;
    dt_db *db = NULL;
    dt_err e;
    int rc = dt_db_open(c->path, DT_DB_READONLY, &db, &e);
    CHILD_CHECK(rc == DT_EIO);
    CHILD_CHECK(db == NULL);
    if (!strstr(e.msg, c->last) || strstr(e.msg, "not a dtune database"))
        fprintf(stderr, "message: %s\n", e.msg);
    CHILD_CHECK(strstr(e.msg, c->last) != NULL);
    CHILD_CHECK(strstr(e.msg, "not a dtune database") == NULL);
    return 0;
}

static void test_readonly_errors_other_uid(void)
{
    if (!is_root())
        return;
    CU_ASSERT_EQUAL_FATAL(chmod(dt_test_suite_dir, 0755), 0);
    const char *dir = dt_test_path("svc-err");
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(dir, 0755), 0);
    const char *p = dt_test_path("svc-err/t.db");
    CU_ASSERT_EQUAL_FATAL(add_workload(p, "w-1"), DT_OK);
    ro_ctx c = {.path = p, .last = "Permission denied"};
    /* the file is the owner's alone */
    CU_ASSERT_EQUAL(chmod(p, 0600), 0);
    CU_ASSERT_EQUAL(run_as(NOBODY, child_open_fails, &c), 0);
    CU_ASSERT_EQUAL(chmod(p, 0644), 0);
    /* so is the directory */
    CU_ASSERT_EQUAL(chmod(dir, 0700), 0);
    CU_ASSERT_EQUAL(run_as(NOBODY, child_open_fails, &c), 0);
    CU_ASSERT_EQUAL(chmod(dir, 0755), 0);
    /* a -wal with commits but its -shm gone: cannot be read without one */
    c.last = "w-2";
    CU_ASSERT_EQUAL(run_as(0, child_write_and_die, &c), 0);
    CU_ASSERT_EQUAL(unlink(dt_test_path("svc-err/t.db-shm")), 0);
    c.last = "write-ahead log";
    CU_ASSERT_EQUAL(run_as(NOBODY, child_open_fails, &c), 0);
    CU_ASSERT_FALSE(exists(dt_test_path("svc-err/t.db-shm")));
    /* and its owner's writable open recovers it */
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, 0, &db, &e), DT_OK);
    CU_ASSERT_TRUE(newest_is(db, "w-2"));
    dt_db_close(db);
    CU_ASSERT_EQUAL(files_owned_by(dir, NOBODY), 0);
}

/* A shared writable directory (1777): the owner is one unprivileged uid, a
 * reader another.  The reader leaves no file behind, so the owner keeps
 * writing (before: the reader's -wal and -shm blocked the owner). */
static void test_readonly_shared_dir(void)
{
    if (!is_root())
        return;
    CU_ASSERT_EQUAL_FATAL(chmod(dt_test_suite_dir, 0755), 0);
    const char *dir = dt_test_path("shared");
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0777), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(dir, 01777), 0);
    ro_ctx c = {.path = dt_test_path("shared/t.db"), .last = "a-1"};
    CU_ASSERT_EQUAL_FATAL(run_as(NOBODY, child_add, &c), 0);
    CU_ASSERT_EQUAL(run_as(OTHER, child_read, &c), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, OTHER), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, NOBODY), 1);
    /* the owner writes again */
    c.last = "a-2";
    CU_ASSERT_EQUAL(run_as(NOBODY, child_add, &c), 0);
    /* the owner died with commits in its -wal; the reader reads them */
    c.last = "a-3";
    CU_ASSERT_EQUAL(run_as(NOBODY, child_write_and_die, &c), 0);
    CU_ASSERT_EQUAL(run_as(OTHER, child_read, &c), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, OTHER), 0);
    /* beside the running owner */
    c.next = "a-4";
    CU_ASSERT_EQUAL(live_round(OTHER, &c, false), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, OTHER), 0);
    /* and the owner still writes */
    c.last = "a-5";
    CU_ASSERT_EQUAL(run_as(NOBODY, child_add, &c), 0);
    CU_ASSERT_EQUAL(run_as(OTHER, child_read, &c), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, OTHER), 0);
}

/* ---- creating one new file from several processes at once ------------------- */

/* Child: waits for the gate to open, then opens (creating) path.  Exit 0:
 * this process created or migrated the schema; 10: found it current. */
static int child_create(const char *path, int gate)
{
    char c;
    if (read(gate, &c, 1) < 0)
        return 2;
    dt_db *db;
    dt_err e;
    if (dt_db_open(path, DT_DB_CREATE, &db, &e) != DT_OK) {
        fprintf(stderr, "concurrent open of %s: %s\n", path, e.msg);
        return 1;
    }
    int made = dt_db_was_created(db) || dt_db_opened_version(db) < DT_DB_SCHEMA_VERSION;
    int ok = dt_db_schema_version(db) == DT_DB_SCHEMA_VERSION;
    dt_db_close(db);
    return !ok ? 3 : made ? 0 : 10;
}

static void test_concurrent_create(void)
{
    enum { ROUNDS = 15, PROCS = 4 };
    for (int round = 0; round < ROUNDS; round++) {
        char name[32];
        snprintf(name, sizeof name, "race-%d.db", round);
        const char *p = dt_test_path(name);
        int gate[2];
        CU_ASSERT_EQUAL_FATAL(pipe(gate), 0);
        pid_t pids[PROCS];
        fflush(NULL);
        for (int i = 0; i < PROCS; i++) {
            pids[i] = fork();
            if (pids[i] == 0) {
                close(gate[1]);
                _exit(child_create(p, gate[0]));
            }
        }
        close(gate[0]);
        close(gate[1]);  /* all start at once */
        int made = 0, bad = 0;
        for (int i = 0; i < PROCS; i++) {
            int st = wait_child(pids[i]);
            made += st == 0;
            bad += st != 0 && st != 10;
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(made, 1);  /* the schema was created once */
        CU_ASSERT_EQUAL(raw_int(p, "PRAGMA application_id"), DT_DB_APPLICATION_ID);
        CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), DT_DB_SCHEMA_VERSION);
        CU_ASSERT_EQUAL(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"),
                        DT_DB_N_TABLES + 1);  /* + sqlite_sequence */
        CU_ASSERT_TRUE(integrity_ok(p));
        dt_db *db;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_OK);
        CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_OK);
        dt_db_close(db);
    }
}

/* ---- end to end through the dtune binary ------------------------------------ */

/* dtune db backup while another process commits jobs as fast as it can: the
 * copy is a consistent state (integrity ok, a job count the writer really
 * had), DEST is never overwritten, and the writer was never blocked. */
static void test_cli_backup_beside_writer(void)
{
    const char *src = dt_test_path("bk-src.db");
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(src, DT_DB_CREATE, &db, &e), DT_OK);
    int64_t id;
    for (int i = 0; i < 50; i++)
        CU_ASSERT_EQUAL(dt_db_job_create(db, "{}", "{}", &id, &e), DT_OK);
    dt_db_close(db);
    int go[2];
    CU_ASSERT_EQUAL_FATAL(pipe(go), 0);
    fflush(NULL);
    pid_t w = fork();
    if (w == 0) { /* the writer: one committed job at a time for ~1.5 s */
        close(go[0]);
        dt_db *d = NULL;
        dt_err we;
        if (dt_db_open(src, DT_DB_CREATE, &d, &we) != DT_OK)
            _exit(3);
        (void)!write(go[1], "x", 1);
        close(go[1]);
        double t0 = dt_now_s();
        int fails = 0;
        while (dt_now_s() - t0 < 1.5)
            fails += dt_db_job_create(d, "{}", "{}", &id, &we) != DT_OK;
        dt_db_close(d);
        _exit(fails ? 4 : 0);
    }
    close(go[1]);
    char c;
    CU_ASSERT_EQUAL(read(go[0], &c, 1), 1);
    close(go[0]);
    dt_sleep_ms(200);
    const char *dest = dt_test_path("bk-copy.db");
    dt_test_proc r;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db backup '%s' --db '%s' --json", dest, src), 0);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    CU_ASSERT(j && json_is_true(json_object_get(j, "checked")) &&
              json_integer_value(json_object_get(j, "bytes")) > 0);
    json_decref(j);
    dt_test_proc_free(&r);
    int st = 0;
    waitpid(w, &st, 0);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* the writer never failed */
    CU_ASSERT_TRUE(integrity_ok(dest));
    long long copied = raw_int(dest, "SELECT count(*) FROM jobs");
    long long final = raw_int(src, "SELECT count(*) FROM jobs");
    CU_ASSERT(copied >= 50 && copied <= final);
    /* never overwrites; missing DEST is a usage error; a missing source is bad input */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db backup '%s' --db '%s'", dest, src), 2);
    CU_ASSERT(strstr(r.err, "already exists") != NULL);
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(raw_int(dest, "SELECT count(*) FROM jobs"), copied);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db backup --db '%s'", src), 1);
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db backup '%s' --db '%s'", dt_test_path("bk-none.db"),
                                      dt_test_path("no-such.db")), 2);
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(access(dt_test_path("bk-none.db"), F_OK), -1);
}

static void test_cli_init_and_stats(void)
{
    const char *p = dt_test_path("cli.db");
    dt_test_proc r;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", p), 0);
    char want[4300];
    snprintf(want, sizeof want, "created %s (schema %d)\n", p, DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(r.out, want);
    dt_test_proc_free(&r);

    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db='%s'", p), 0);
    snprintf(want, sizeof want, "%s is up to date (schema %d)\n", p, DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(r.out, want);
    dt_test_proc_free(&r);

    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --db '%s' --json", p), 0);
    json_error_t je;
    json_t *root = json_loads(r.out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(root, "schema_version")),
                    DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "journal_mode")), "wal");
    json_t *tables = json_object_get(root, "tables");
    CU_ASSERT_EQUAL(json_object_size(tables), DT_DB_N_TABLES);
    const char *name;
    json_t *v;
    json_object_foreach(tables, name, v) {
        CU_ASSERT_TRUE(json_is_integer(v));
        CU_ASSERT_EQUAL(json_integer_value(v), 0);
    }
    CU_ASSERT_PTR_NOT_NULL(json_object_get(tables, "measurements"));
    json_decref(root);
    dt_test_proc_free(&r);

    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --db '%s'", p), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "measurements"));
    char schema_line[32];
    snprintf(schema_line, sizeof schema_line, "schema    %d", DT_DB_SCHEMA_VERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, schema_line));
    dt_test_proc_free(&r);

    /* DTUNE_DB is the default path. */
    setenv("DTUNE_DB", p, 1);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --json"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, p));
    unsetenv("DTUNE_DB");
    dt_test_proc_free(&r);
    CU_ASSERT_TRUE(integrity_ok(p));
}

static void test_cli_migrates_version_0(void)
{
    const char *p = dt_test_path("cli-v0.db");
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_CREATE | DT_DB_NOMIGRATE, &db, &e), DT_OK);
    dt_db_close(db);
    dt_test_proc r;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --db '%s'", p), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "dtune db init"));
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", p), 0);
    char want[4300];
    snprintf(want, sizeof want, "migrated %s from schema 0 to %d\n", p, DT_DB_SCHEMA_VERSION);
    CU_ASSERT_STRING_EQUAL(r.out, want);
    dt_test_proc_free(&r);
}

static void test_cli_errors(void)
{
    dt_test_proc r;
    /* stats never creates the file. */
    const char *missing = dt_test_path("cli-missing.db");
    int rc = dt_test_run_dtune(&r, "db stats --db '%s'", missing);
    CU_ASSERT_TRUE(rc == 2 || rc == 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, missing));
    CU_ASSERT_FALSE(exists(missing));
    dt_test_proc_free(&r);

    /* init refuses a text file and leaves it alone. */
    char *text = dt_test_write_file(dt_test_suite_dir, "cli-text.db", "hello\nworld\n");
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", text), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not a dtune database"));
    CU_ASSERT_TRUE(same_bytes(text, "hello\nworld\n", 12));
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --db '%s'", text), 2);
    dt_test_proc_free(&r);
    free(text);

    /* A newer schema is refused with exit 2. */
    const char *future = dt_test_path("cli-future.db");
    dt_db_close(open_new("cli-future.db"));
    char sql[64], want_err[128];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d;", DT_DB_SCHEMA_VERSION + 1);
    raw_exec(future, sql);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", future), 2);
    snprintf(want_err, sizeof want_err, "schema version %d, this dtune supports up to %d",
             DT_DB_SCHEMA_VERSION + 1, DT_DB_SCHEMA_VERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, want_err));
    dt_test_proc_free(&r);

    /* I/O failure: the directory does not exist. */
    CU_ASSERT_EQUAL(
        dt_test_run_dtune(&r, "db init --db '%s/no/such/dir/x.db'", dt_test_suite_dir), 3);
    dt_test_proc_free(&r);

    /* Help and usage errors. */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "init"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "stats"));
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "--db PATH"));
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "--json"));
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db"), 1);
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db frobnicate"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "frobnicate"));
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db stats --bogus"), 1);
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --json"), 1);
    dt_test_proc_free(&r);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db"), 1);
    dt_test_proc_free(&r);
}

/* Several `dtune db init` of one new file at once: all succeed, one creates. */
static void test_cli_concurrent_init(void)
{
    for (int round = 0; round < 8; round++) {
        char name[32];
        snprintf(name, sizeof name, "cli-race-%d.db", round);
        const char *p = dt_test_path(name);
        char cmd[16384];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && for i in 1 2 3; do ('%s' db init --db '%s' >race.out.$i 2>&1; "
                 "echo $? >race.rc.$i) & done; wait",
                 dt_test_suite_dir, DTUNE_BIN, p);
        CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
        int made = 0;
        for (int i = 1; i <= 3; i++) {
            char f[64];
            snprintf(f, sizeof f, "race.rc.%d", i);
            char *rc = dt_test_slurp(dt_test_path(f));
            snprintf(f, sizeof f, "race.out.%d", i);
            char *out = dt_test_slurp(dt_test_path(f));
            CU_ASSERT_PTR_NOT_NULL_FATAL(rc);
            CU_ASSERT_PTR_NOT_NULL_FATAL(out);
            if (atoi(rc) != 0)
                fprintf(stderr, "\n  concurrent db init %d: %s", i, out);
            CU_ASSERT_EQUAL(atoi(rc), 0);
            made += strstr(out, "created") != NULL || strstr(out, "migrated") != NULL;
            free(rc);
            free(out);
        }
        CU_ASSERT_EQUAL(made, 1);
        CU_ASSERT_EQUAL(raw_int(p, "PRAGMA user_version"), DT_DB_SCHEMA_VERSION);
        CU_ASSERT_TRUE(integrity_ok(p));
    }
}

/* A fresh database written through db/, then tampered with. */
static const char *damaged(const char *name, const char *sql)
{
    const char *p = dt_test_path(name);
    fixture f = make_fixture(name);
    dt_db_close(f.db);
    if (sql)
        raw_exec(p, sql);
    return p;
}

/* `dtune db init` on a damaged file says what is wrong and exits 2. */
static void test_cli_init_damaged(void)
{
    static const struct {
        const char *name, *sql, *want;
    } cases[] = {
        {"dmg-dropped.db", "DROP TABLE jobs", "table jobs is missing"},
        {"dmg-renamed.db", "ALTER TABLE kernels RENAME COLUMN annotation TO ann",
         "table kernels has columns"},
        {"dmg-index.db", "DROP INDEX measurements_by_kernel", "table measurements has indexes"},
        {"dmg-view.db", "DROP TABLE targets; CREATE VIEW targets AS SELECT 1",
         "targets is a view, not a table"},
        {"dmg-json.db", "UPDATE kernels SET annotation = '{\"MR\": 6' WHERE id = 2",
         "the annotation of kernels row 2 is not valid JSON"},
        {"dmg-fk.db",
         "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi, kernel_id,"
         " threads, created_at) VALUES (1, 1, 'M=1', 'M=2', 99, 1, 0)",
         "row 1 of table schedules refers to a row of kernels that does not exist"},
    };
    dt_test_proc r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = damaged(cases[i].name, cases[i].sql);
        CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", p), 2);
        if (!strstr(r.err, cases[i].want) || !strstr(r.err, "is damaged"))
            fprintf(stderr, "\n  %s: stderr '%s' lacks '%s'", cases[i].name, r.err,
                    cases[i].want);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, cases[i].want));
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, p));
        CU_ASSERT_STRING_EQUAL(r.out, "");
        dt_test_proc_free(&r);
    }

    /* pages overwritten with garbage behind an intact header */
    const char *p = damaged("dmg-pages.db", NULL);
    FILE *f = fopen(p, "r+b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char junk[4096];
    memset(junk, 0xab, sizeof junk);
    fseek(f, 3 * 4096, SEEK_SET);
    for (int i = 0; i < 8; i++)
        fwrite(junk, 1, sizeof junk, f);
    fclose(f);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", p), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "is damaged"));
    CU_ASSERT_PTR_NULL(strstr(r.err, "up to date"));
    CU_ASSERT_STRING_EQUAL(r.out, "");
    dt_test_proc_free(&r);

    /* garbage bytes: not even SQLite */
    char bytes[3000];
    for (size_t i = 0; i < sizeof bytes - 1; i++)
        bytes[i] = (char)(1 + (i * 7919) % 251);
    bytes[sizeof bytes - 1] = 0;
    char *g = dt_test_write_file(dt_test_suite_dir, "dmg-garbage.db", bytes);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", g), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not an SQLite file"));
    dt_test_proc_free(&r);
    free(g);

    /* an intact database still passes */
    p = damaged("dmg-none.db", NULL);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&r, "db init --db '%s'", p), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "up to date"));
    dt_test_proc_free(&r);
    dt_db *db;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(p, DT_DB_READONLY, &db, &e), DT_OK);
    CU_ASSERT_EQUAL(dt_db_check(db, &e), DT_OK);
    dt_db_close(db);
}

int main(void)
{
    CU_TestInfo open_tests[] = {
        {"create, close, reopen: data persists", test_create_and_reopen},
        {"missing file: not found, never created", test_missing_file},
        {"text file refused and unchanged", test_text_file_refused},
        {"foreign SQLite database refused and unchanged", test_foreign_sqlite_refused},
        {"newer schema refused and unchanged", test_newer_version_refused},
        {"version-0 database migrated to current", test_migrate_from_version_0},
        {"schema 1 -> 2: kernels get their attributes, shared ones split",
         test_migrate_kernel_identity},
        {"schema 2 -> 3: tests/data/v2/v2.db migrates, its rows stay runs",
         test_migrate_schema2_file},
        {"several processes create one new file at once", test_concurrent_create},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo readonly_tests[] = {
        {"read-only opens create no side files", test_readonly_creates_nothing},
        {"a snapshot reader follows writers", test_readonly_snapshot_follows_writers},
        {"another uid reads a 0755 directory: stopped, crashed, live writer",
         test_readonly_other_uid},
        {"another uid: permission errors are I/O errors", test_readonly_errors_other_uid},
        {"shared 1777 directory: the reader leaves nothing, the owner writes on",
         test_readonly_shared_dir},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo accessor_tests[] = {
        {"targets", test_targets},
        {"workloads", test_workloads},
        {"kernels: insert-or-get, canonical annotation", test_kernels},
        {"measurements: round trip, duplicate trial recorded once", test_measurements},
        {"foreign keys enforced", test_foreign_keys_enforced},
        {"schedules: replaced atomically", test_schedules},
        {"schedules: box and run rows round trip, anything else refused",
         test_schedule_boxes},
        {"cost models", test_cost_models},
        {"jobs", test_jobs},
        {"transactions", test_transactions},
        {"concurrent reader sees committed data without blocking", test_concurrent_reader},
        {"stats", test_stats},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo cli_tests[] = {
        {"dtune db init and stats", test_cli_init_and_stats},
        {"dtune db backup beside a writer", test_cli_backup_beside_writer},
        {"dtune db init migrates a version-0 file", test_cli_migrates_version_0},
        {"dtune db errors and help", test_cli_errors},
        {"dtune db init from three processes at once", test_cli_concurrent_init},
        {"dtune db init on damaged files exits 2 and says why", test_cli_init_damaged},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"db open", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, open_tests},
        {"db read-only opens", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, readonly_tests},
        {"db accessors", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, accessor_tests},
        {"dtune db", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, cli_tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
