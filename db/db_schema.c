/* The schema and its forward migrations.
 *
 * migrations[i] takes a database from schema version i to i+1.  A released
 * step is never edited: a schema change is a new step appended here (and
 * DT_DB_SCHEMA_VERSION bumped), so every older file can be brought forward.
 * docs/database.md documents each version. */
#include "db/db_internal.h"

#include <stdio.h>

typedef struct {
    const char *what;  /* for messages */
    const char *sql;
} dt_migration;

/* Version 0 -> 1: the tables of the design.
 * - measurements.trial_uid is UNIQUE so a retried trial is recorded once.
 * - An ok measurement must carry its times (CHECK), a failed one may not.
 * - jobs uses AUTOINCREMENT so a job id, once handed to a client, is never
 *   reused even after the newest job is deleted. */
static const char schema_v1[] =
    "CREATE TABLE targets ("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL UNIQUE,"
    "  isa TEXT NOT NULL,"
    "  info TEXT NOT NULL DEFAULT '{}',"
    "  created_at INTEGER NOT NULL);"

    "CREATE TABLE workloads ("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL UNIQUE,"
    "  op TEXT NOT NULL,"
    "  shape_set TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"

    "CREATE TABLE kernels ("
    "  id INTEGER PRIMARY KEY,"
    "  op TEXT NOT NULL,"
    "  sketch TEXT NOT NULL,"
    "  annotation TEXT NOT NULL,"
    "  source_hash TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (op, sketch, annotation));"

    "CREATE TABLE measurements ("
    "  id INTEGER PRIMARY KEY,"
    "  kernel_id INTEGER NOT NULL REFERENCES kernels(id),"
    "  target_id INTEGER NOT NULL REFERENCES targets(id),"
    "  workload_id INTEGER NOT NULL REFERENCES workloads(id),"
    "  shape TEXT NOT NULL,"
    "  threads INTEGER NOT NULL,"
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'compile_error', 'compile_timeout',"
    "    'run_crash', 'run_timeout', 'wrong_answer', 'worker_lost')),"
    "  min_ns REAL,"
    "  median_ns REAL,"
    "  error TEXT,"
    "  trial_uid TEXT NOT NULL UNIQUE,"
    "  created_at INTEGER NOT NULL,"
    "  CHECK (status <> 'ok' OR (min_ns IS NOT NULL AND median_ns IS NOT NULL)));"
    "CREATE INDEX measurements_by_workload ON measurements (workload_id, target_id);"
    "CREATE INDEX measurements_by_kernel ON measurements (kernel_id, target_id, shape);"
    "CREATE INDEX measurements_by_target ON measurements (target_id);"

    "CREATE TABLE schedules ("
    "  id INTEGER PRIMARY KEY,"
    "  workload_id INTEGER NOT NULL REFERENCES workloads(id),"
    "  target_id INTEGER NOT NULL REFERENCES targets(id),"
    "  shape_lo TEXT NOT NULL,"
    "  shape_hi TEXT NOT NULL,"
    "  kernel_id INTEGER NOT NULL REFERENCES kernels(id),"
    "  threads INTEGER NOT NULL,"
    "  predicted_ns REAL,"
    "  measured_ns REAL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX schedules_by_workload ON schedules (workload_id, target_id);"
    "CREATE INDEX schedules_by_kernel ON schedules (kernel_id);"
    "CREATE INDEX schedules_by_target ON schedules (target_id);"

    "CREATE TABLE cost_models ("
    "  id INTEGER PRIMARY KEY,"
    "  target_id INTEGER NOT NULL REFERENCES targets(id),"
    "  op TEXT NOT NULL,"
    "  model BLOB NOT NULL,"
    "  n_records INTEGER NOT NULL,"
    "  metrics TEXT,"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX cost_models_by_target ON cost_models (target_id, op, id);"

    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done',"
    "    'failed', 'cancelled')),"
    "  spec TEXT NOT NULL,"
    "  options TEXT,"
    "  checkpoint TEXT,"
    "  progress TEXT,"
    "  error TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    "CREATE INDEX jobs_by_state ON jobs (state, id);";

static const dt_migration migrations[] = {
    {"creating the tables", schema_v1},
};

_Static_assert(sizeof migrations / sizeof migrations[0] == DT_DB_SCHEMA_VERSION,
               "one migration step per schema version");

/* Reads user_version inside the current transaction. */
static int current_version(dt_db *db, int *v, dt_err *e)
{
    int64_t x = 0;
    int rc = dt_db_query_int(db, "PRAGMA user_version", &x, e, "reading user_version");
    *v = (int)x;
    return rc;
}

/* Applies step `from` -> from+1 in one BEGIN IMMEDIATE transaction.  The
 * version is re-read under the write lock: another process may have
 * migrated the file since we opened it, and then there is nothing to do. */
static int apply_step(dt_db *db, int from, int *found, dt_err *e)
{
    char what[128];
    snprintf(what, sizeof what, "migrating from schema %d to %d (%s)", from, from + 1,
             migrations[from].what);
    int rc = dt_db_exec(db, "BEGIN IMMEDIATE", e, what);
    if (rc)
        return rc;
    int v;
    rc = current_version(db, &v, e);
    if (rc == DT_OK && found)
        *found = v;
    if (rc == DT_OK && v == from) {
        char stamp[128];
        snprintf(stamp, sizeof stamp, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
                 from + 1, DT_DB_APPLICATION_ID);
        rc = dt_db_exec(db, migrations[from].sql, e, what);
        if (rc == DT_OK)
            rc = dt_db_exec(db, stamp, e, what);
    } else if (rc == DT_OK && v < from) {
        rc = dt_errf(e, DT_EDB, "%s in %s: schema version went back to %d", what, db->path, v);
    }
    if (rc == DT_OK)
        rc = dt_db_exec(db, "COMMIT", e, what);
    if (rc && !sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int dt_db_migrate(dt_db *db, int from, int to, int *found, dt_err *e)
{
    if (found)
        *found = from;
    for (int v = from; v < to; v++) {
        int rc = apply_step(db, v, v == from ? found : NULL, e);
        if (rc)
            return rc;
    }
    return DT_OK;
}

int dt_db_reference_schema(int version, sqlite3 **out, dt_err *e)
{
    *out = NULL;
    sqlite3 *s = NULL;
    int rc = sqlite3_open_v2(":memory:", &s, SQLITE_OPEN_READWRITE, NULL);
    for (int v = 0; rc == SQLITE_OK && v < version; v++)
        rc = sqlite3_exec(s, migrations[v].sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        int code = dt_db_code(rc);
        dt_errf(e, code ? code : DT_EDB, "building the reference schema %d: %s", version,
                s ? sqlite3_errmsg(s) : sqlite3_errstr(rc));
        sqlite3_close(s);
        return code ? code : DT_EDB;
    }
    *out = s;
    return DT_OK;
}

int dt_db_migrate_to(dt_db *db, int version, dt_err *e)
{
    int rc = dt_db_require_writable(db, e, "migrating");
    if (rc)
        return rc;
    if (!sqlite3_get_autocommit(db->sql))
        return dt_errf(e, DT_EINVAL, "migrating %s: not allowed inside a transaction",
                       db->path);
    int cur;
    rc = current_version(db, &cur, e);
    if (rc)
        return rc;
    if (version < cur || version > DT_DB_SCHEMA_VERSION)
        return dt_errf(e, DT_EINVAL,
                       "cannot migrate %s from schema %d to %d (supported: %d..%d, forward only)",
                       db->path, cur, version, cur, DT_DB_SCHEMA_VERSION);
    return dt_db_migrate(db, cur, version, NULL, e);
}
