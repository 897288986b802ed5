/* dt_db_stats: what `dtune db stats` shows. */
#include "db/db_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Every table of the current schema, in the order stats lists them. */
static const char *const table_names[DT_DB_N_TABLES] = {
    "targets", "workloads", "kernels", "measurements", "schedules", "cost_models", "jobs",
};

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

static int table_exists(dt_db *db, const char *name, bool *exists, dt_err *e)
{
    static const char what[] = "reading the schema";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                           &st, e, what);
    if (rc)
        return rc;
    rc = dt_db_step_row(db, st, dt_bind_text(st, 1, name), e, what);
    sqlite3_finalize(st);
    *exists = rc == DT_OK;
    return rc == DT_ENOTFOUND ? DT_OK : rc;
}

/* Row count of one table, or -1 when the schema does not have it (a
 * database opened with DT_DB_NOMIGRATE at an older version). */
static int count_rows(dt_db *db, const char *name, int64_t *rows, dt_err *e)
{
    bool exists;
    int rc = table_exists(db, name, &exists, e);
    if (rc || !exists) {
        *rows = -1;
        return rc;
    }
    /* name comes from table_names, never from input. */
    char sql[96], what[64];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", name);
    snprintf(what, sizeof what, "counting %s", name);
    return dt_db_query_int(db, sql, rows, e, what);
}

static int journal_mode(dt_db *db, char *out, size_t size, dt_err *e)
{
    if (db->snapshot) {  /* immutable=1 reports "delete"; the file says WAL */
        snprintf(out, size, "wal");
        return DT_OK;
    }
    static const char what[] = "reading journal_mode";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "PRAGMA journal_mode", &st, e, what);
    if (rc)
        return rc;
    rc = dt_db_step_row(db, st, SQLITE_OK, e, what);
    if (rc == DT_OK) {
        const char *mode = dt_col_text(st, 0);
        snprintf(out, size, "%s", mode ? mode : "");
    } else if (rc == DT_ENOTFOUND) {
        rc = dt_errf(e, DT_EDB, "%s in %s: no result", what, db->path);
    }
    sqlite3_finalize(st);
    return rc;
}

int dt_db_stats(dt_db *db, dt_db_stats_info *out, dt_err *e)
{
    memset(out, 0, sizeof *out);
    out->path = db->path;
    out->schema_version = dt_db_schema_version(db);
    if (out->schema_version < 0)
        return dt_errf(e, out->schema_version, "reading the schema version of %s: %s",
                       db->path, sqlite3_errmsg(db->sql));
    int rc = journal_mode(db, out->journal_mode, sizeof out->journal_mode, e);
    /* One read transaction, so all counts come from the same snapshot. */
    bool own = rc == DT_OK && sqlite3_get_autocommit(db->sql);
    if (own)
        rc = dt_db_exec(db, "BEGIN", e, "reading statistics");
    for (int i = 0; rc == DT_OK && i < DT_DB_N_TABLES; i++) {
        out->tables[i].name = table_names[i];
        rc = count_rows(db, table_names[i], &out->tables[i].rows, e);
    }
    if (own && !sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    if (rc)
        return rc;
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", db->path);
    out->size_bytes = file_size(db->path);
    out->wal_bytes = file_size(wal);
    return DT_OK;
}
