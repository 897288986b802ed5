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
    /* The step rebuilds a table others reference: foreign keys are off
     * while it runs (set before its BEGIN, as SQLite's table-rebuild recipe
     * asks) and PRAGMA foreign_key_check must find nothing before COMMIT. */
    int rebuild;
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

/* Version 1 -> 2: a kernel's identity is its op, dtype, attribute values,
 * sketch and annotation (docs/database.md, "Schema version 2").
 *
 * A v1 kernels row kept only (op, sketch, annotation); the attribute values
 * it was generated with are recovered from the workloads that measured it or
 * schedule it: a v1 tuner generates a kernel with its workload's op and
 * attributes.  v1 knew two ops, whose attributes its workload keys name
 * (ops/op_*.c of v1): dense's epilogue (printed when not "none") and
 * batch_matmul's layout (always printed).  mig_wattrs is each workload's
 * attribute object, as the writers of v2 store it (canonical JSON, every
 * attribute of the op).
 *
 * A v1 row used with one attribute set gets it.  A row used with several
 * (one kernel, two epilogues) keeps its id and source_hash for the set of
 * its first use (the lowest measurement id, then schedule id: the tuner
 * interns a kernel for the run that measures it first) and gets one new row
 * per other set; the measurements and schedules of those workloads move to
 * the new rows, whose source_hash is NULL (never computed).  A row nothing
 * uses gets the op's default attributes. */
static const char schema_v2[] =
    "CREATE TEMP TABLE mig_witems AS SELECT id, op,"
    "  ',' || substr(key, instr(key, '(') + 1,"
    "    CASE WHEN instr(key, ';') > 0 THEN instr(key, ';') ELSE length(key) END"
    "    - instr(key, '(') - 1) || ',' AS items"
    "  FROM workloads;"
    "CREATE TEMP TABLE mig_wattrs AS SELECT id,"
    "  CASE op"
    "    WHEN 'dense' THEN json_object('epilogue', CASE WHEN instr(items, ',epilogue=') > 0"
    "      THEN substr(substr(items, instr(items, ',epilogue=') + 10), 1,"
    "        instr(substr(items, instr(items, ',epilogue=') + 10), ',') - 1)"
    "      ELSE 'none' END)"
    "    WHEN 'batch_matmul' THEN json_object('layout', CASE WHEN instr(items, ',layout=') > 0"
    "      THEN substr(substr(items, instr(items, ',layout=') + 8), 1,"
    "        instr(substr(items, instr(items, ',layout=') + 8), ',') - 1)"
    "      ELSE 'NN' END)"
    "    ELSE '{}' END AS attrs"
    "  FROM mig_witems;"
    "CREATE TEMP TABLE mig_uses AS SELECT kernel_id, attrs, min(ord) AS ord FROM ("
    "    SELECT m.kernel_id, w.attrs, m.id AS ord"
    "      FROM measurements m JOIN mig_wattrs w ON w.id = m.workload_id"
    "    UNION ALL SELECT s.kernel_id, w.attrs, 4611686018427387904 + s.id"
    "      FROM schedules s JOIN mig_wattrs w ON w.id = s.workload_id)"
    "  GROUP BY kernel_id, attrs;"

    "CREATE TABLE kernels_v2 ("
    "  id INTEGER PRIMARY KEY,"
    "  op TEXT NOT NULL,"
    "  dtype TEXT NOT NULL DEFAULT 'f32',"
    "  attrs TEXT NOT NULL DEFAULT '{}',"
    "  sketch TEXT NOT NULL,"
    "  annotation TEXT NOT NULL,"
    "  source_hash TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (op, dtype, attrs, sketch, annotation));"
    "INSERT INTO kernels_v2 (id, op, dtype, attrs, sketch, annotation, source_hash, created_at)"
    "  SELECT k.id, k.op, 'f32', coalesce("
    "      (SELECT u.attrs FROM mig_uses u WHERE u.kernel_id = k.id ORDER BY u.ord LIMIT 1),"
    "      CASE k.op WHEN 'dense' THEN '{\"epilogue\":\"none\"}'"
    "        WHEN 'batch_matmul' THEN '{\"layout\":\"NN\"}' ELSE '{}' END),"
    "    k.sketch, k.annotation, k.source_hash, k.created_at"
    "  FROM kernels k ORDER BY k.id;"
    "INSERT INTO kernels_v2 (op, dtype, attrs, sketch, annotation, source_hash, created_at)"
    "  SELECT k.op, 'f32', u.attrs, k.sketch, k.annotation, NULL, k.created_at"
    "  FROM mig_uses u JOIN kernels k ON k.id = u.kernel_id JOIN kernels_v2 n ON n.id = k.id"
    "  WHERE u.attrs <> n.attrs ORDER BY u.ord;"
    "UPDATE measurements SET kernel_id = coalesce((SELECT n.id FROM kernels k"
    "    JOIN kernels_v2 n ON n.op = k.op AND n.sketch = k.sketch AND n.annotation = k.annotation"
    "    JOIN mig_wattrs w ON w.id = measurements.workload_id AND n.attrs = w.attrs"
    "    WHERE k.id = measurements.kernel_id), kernel_id)"
    "  WHERE kernel_id IN (SELECT kernel_id FROM mig_uses GROUP BY kernel_id"
    "    HAVING count(*) > 1);"
    "UPDATE schedules SET kernel_id = coalesce((SELECT n.id FROM kernels k"
    "    JOIN kernels_v2 n ON n.op = k.op AND n.sketch = k.sketch AND n.annotation = k.annotation"
    "    JOIN mig_wattrs w ON w.id = schedules.workload_id AND n.attrs = w.attrs"
    "    WHERE k.id = schedules.kernel_id), kernel_id)"
    "  WHERE kernel_id IN (SELECT kernel_id FROM mig_uses GROUP BY kernel_id"
    "    HAVING count(*) > 1);"
    "DROP TABLE kernels;"
    "ALTER TABLE kernels_v2 RENAME TO kernels;"
    "DROP TABLE mig_uses;"
    "DROP TABLE mig_wattrs;"
    "DROP TABLE mig_witems;";

/* Version 2 -> 3: a schedule row is a box (docs/database.md, "Schema
 * version 3").  shape_lo and shape_hi were the first and last shape of a
 * run of consecutive shapes in shape-set order; the tuner now writes the
 * two corners of a box, one interval per variable (shape/box.h).  With
 * one variable the two readings coincide; with several they do not (a run
 * may cross a row of the grid), so the row says which it is.  Every row
 * already stored was written as a run and keeps that reading (box 0); the
 * dispatch layer reads it as the boxes of its run (dt_box_from_run).  A
 * column added with a constant default rewrites no row and no other
 * table references it by name, so no rebuild. */
static const char schema_v3[] =
    "ALTER TABLE schedules ADD COLUMN box INTEGER NOT NULL DEFAULT 0 CHECK (box IN (0, 1));";

static const dt_migration migrations[] = {
    {"creating the tables", schema_v1, 0},
    {"kernels keep their op's dtype and attributes", schema_v2, 1},
    {"schedule rows are boxes", schema_v3, 0},
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

/* DT_EDB when a rebuild left a row referencing a missing one. */
static int check_foreign_keys(dt_db *db, const char *what, dt_err *e)
{
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "PRAGMA foreign_key_check", &st, e, what);
    if (rc)
        return rc;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        rc = dt_errf(e, DT_EDB, "%s in %s: table %s row %lld references a missing %s row", what,
                     db->path, (const char *)sqlite3_column_text(st, 0),
                     (long long)sqlite3_column_int64(st, 1),
                     (const char *)sqlite3_column_text(st, 2));
    else if (s != SQLITE_DONE)
        rc = dt_errf(e, dt_db_code(s) ? dt_db_code(s) : DT_EDB, "%s in %s: %s", what, db->path,
                     sqlite3_errmsg(db->sql));
    sqlite3_finalize(st);
    return rc;
}

/* Applies step `from` -> from+1 in one BEGIN IMMEDIATE transaction.  The
 * version is re-read under the write lock: another process may have
 * migrated the file since we opened it, and then there is nothing to do. */
/* Applies the step from -> from+1 in one transaction.  A file found empty
 * (version 0) under the write lock is instead brought to `to` in that one
 * transaction, so that no other process ever sees a half-created file (one
 * at version 1 of a new file would otherwise migrate it too). */
static int apply_step(dt_db *db, int from, int to, int *found, dt_err *e)
{
    char what[128];
    snprintf(what, sizeof what, "migrating from schema %d to %d (%s)", from, from + 1,
             migrations[from].what);
    int rebuild = 0;
    for (int i = from; i < (from == 0 ? to : from + 1); i++)
        rebuild |= migrations[i].rebuild;
    int rc = rebuild ? dt_db_exec(db, "PRAGMA foreign_keys = OFF", e, what) : DT_OK;
    if (rc == DT_OK)
        rc = dt_db_exec(db, "BEGIN IMMEDIATE", e, what);
    if (rc) {
        if (rebuild)
            sqlite3_exec(db->sql, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
        return rc;
    }
    int v;
    rc = current_version(db, &v, e);
    if (rc == DT_OK && found)
        *found = v;
    if (rc == DT_OK && v == from) {
        int upto = from == 0 ? to : from + 1;
        char stamp[128];
        snprintf(stamp, sizeof stamp, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
                 upto, DT_DB_APPLICATION_ID);
        for (int i = from; rc == DT_OK && i < upto; i++)
            rc = dt_db_exec(db, migrations[i].sql, e, what);
        if (rc == DT_OK && rebuild)
            rc = check_foreign_keys(db, what, e);
        if (rc == DT_OK)
            rc = dt_db_exec(db, stamp, e, what);
    } else if (rc == DT_OK && v < from) {
        rc = dt_errf(e, DT_EDB, "%s in %s: schema version went back to %d", what, db->path, v);
    }
    if (rc == DT_OK)
        rc = dt_db_exec(db, "COMMIT", e, what);
    if (rc && !sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    if (rebuild) {
        int r2 = dt_db_exec(db, "PRAGMA foreign_keys = ON", rc ? NULL : e, what);
        if (rc == DT_OK)
            rc = r2;
    }
    return rc;
}

int dt_db_migrate(dt_db *db, int from, int to, int *found, dt_err *e)
{
    if (found)
        *found = from;
    for (int v = from; v < to; v++) {
        int rc = apply_step(db, v, to, v == from ? found : NULL, e);
        if (rc)
            return rc;
        if (v == 0) { /* an empty file is brought to `to` in one step; go on from where it is */
            int cur;
            if ((rc = current_version(db, &cur, e)))
                return rc;
            v = cur - 1;
        }
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
