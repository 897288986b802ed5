/* dt_db_check: is an opened database damaged?  SQLite's quick_check, then
 * its schema against the one the migrations create for its version. */
#include "db/db_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Growable text for the descriptions compared and reported. */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} text;

static void text_add(text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->oom)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->s, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n + 1);
    t->len += n;
}

/* Runs sql (one text parameter: name) on s and appends its rows to *out as
 * "col col ...", rows separated by ", ".  SQLITE_OK or SQLite's error. */
static int describe(sqlite3 *s, const char *sql, const char *name, text *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    bool first = true;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!first)
            text_add(out, ", ");
        first = false;
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *v = (const char *)sqlite3_column_text(st, c);
            if (!v || !*v)
                continue;
            if (c > 0)
                text_add(out, " ");
            text_add(out, v);
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* What a table or an index is, as far as dtune relies on it. */
static const char *const table_parts[] = {
    /* columns, in order */
    "SELECT name, type, CASE WHEN \"notnull\" THEN 'NOT NULL' END,"
    " CASE WHEN dflt_value IS NOT NULL THEN 'DEFAULT ' || dflt_value END,"
    " CASE WHEN pk THEN 'PRIMARY KEY' END FROM pragma_table_info(?1) ORDER BY cid",
    /* foreign keys */
    "SELECT \"from\", 'REFERENCES', \"table\" || '(' || coalesce(\"to\", '') || ')'"
    " FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
    /* indexes, with their columns */
    "SELECT CASE WHEN l.origin = 'c' THEN l.name END, CASE WHEN l.\"unique\" THEN 'UNIQUE' END,"
    " '(' || (SELECT group_concat(name, ' ') FROM"
    " (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno)) || ')'"
    " FROM pragma_index_list(?1) AS l WHERE l.origin IN ('c', 'u') ORDER BY l.origin, l.name",
};
static const char *const table_part_names[] = {"columns", "foreign keys", "indexes"};

static int quick_check(dt_db *db, dt_err *e)
{
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "PRAGMA quick_check(5)", &st, e, "checking the database");
    if (rc)
        return rc;
    text problems = {0};
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *row = (const char *)sqlite3_column_text(st, 0);
        if (!row || strcmp(row, "ok") == 0)
            continue;
        /* a row may hold several lines; "*** in database main ***" says nothing */
        for (const char *line = row; *line;) {
            size_t n = strcspn(line, "\n");
            if (n > 0 && strncmp(line, "*** in database", 15) != 0) {
                char buf[512];
                snprintf(buf, sizeof buf, "%.*s", (int)(n < 500 ? n : 500), line);
                if (problems.len)
                    text_add(&problems, "; ");
                text_add(&problems, buf);
            }
            line += n + (line[n] == '\n');
        }
    }
    if (s != SQLITE_DONE) {
        if ((s & 0xff) == SQLITE_CORRUPT || (s & 0xff) == SQLITE_NOTADB)
            rc = dt_errf(e, DT_EINVAL, "database %s is damaged: %s", db->path,
                         sqlite3_errmsg(db->sql));
        else
            rc = dt_db_fail(db, s, e, "checking the database");
    } else if (problems.oom) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory checking %s", db->path);
    } else if (problems.len) {
        rc = dt_errf(e, DT_EINVAL, "database %s is damaged: SQLite's integrity check says: %s",
                     db->path, problems.s);
    }
    sqlite3_finalize(st);
    free(problems.s);
    return rc;
}

/* Compares one table of the reference schema with the file's. */
static int check_table(dt_db *db, sqlite3 *ref, const char *name, dt_err *e)
{
    int rc = DT_OK;
    for (size_t i = 0; rc == DT_OK && i < sizeof table_parts / sizeof table_parts[0]; i++) {
        text want = {0}, got = {0};
        int s = describe(ref, table_parts[i], name, &want);
        int g = describe(db->sql, table_parts[i], name, &got);
        if (want.oom || got.oom)
            rc = dt_errf(e, DT_ENOMEM, "out of memory checking %s", db->path);
        else if (s != SQLITE_OK)
            rc = dt_errf(e, DT_EDB, "checking %s: the reference schema: %s", db->path,
                         sqlite3_errmsg(ref));
        else if (g != SQLITE_OK)
            rc = dt_errf(e, DT_EINVAL, "database %s is damaged: reading table %s: %s",
                         db->path, name, sqlite3_errmsg(db->sql));
        else if (strcmp(want.s ? want.s : "", got.s ? got.s : "") != 0)
            rc = dt_errf(e, DT_EINVAL,
                         "database %s is damaged: table %s has %s (%s), schema %d has (%s)",
                         db->path, name, table_part_names[i], got.s ? got.s : "",
                         dt_db_schema_version(db), want.s ? want.s : "");
        free(want.s);
        free(got.s);
    }
    return rc;
}

/* Every table of the reference schema exists in the file as the same table. */
static int check_schema(dt_db *db, sqlite3 *ref, dt_err *e)
{
    sqlite3_stmt *st;
    int s = sqlite3_prepare_v2(ref,
                               "SELECT name FROM sqlite_master WHERE type = 'table'"
                               " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                               -1, &st, NULL);
    if (s != SQLITE_OK)
        return dt_errf(e, DT_EDB, "checking %s: the reference schema: %s", db->path,
                       sqlite3_errmsg(ref));
    int rc = DT_OK;
    while (rc == DT_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        sqlite3_stmt *q;
        rc = dt_db_prepare(db, "SELECT type FROM sqlite_master WHERE name = ?1", &q, e,
                           "reading the schema");
        if (rc)
            break;
        rc = dt_db_step_row(db, q, dt_bind_text(q, 1, name), e, "reading the schema");
        if (rc == DT_OK && strcmp((const char *)sqlite3_column_text(q, 0), "table") != 0)
            rc = dt_errf(e, DT_EINVAL, "database %s is damaged: %s is a %s, not a table",
                         db->path, name, (const char *)sqlite3_column_text(q, 0));
        else if (rc == DT_ENOTFOUND)
            rc = dt_errf(e, DT_EINVAL, "database %s is damaged: table %s is missing", db->path,
                         name);
        sqlite3_finalize(q);
        if (rc == DT_OK)
            rc = check_table(db, ref, name, e);
    }
    if (rc == DT_OK && s != SQLITE_DONE)
        rc = dt_errf(e, DT_EDB, "checking %s: the reference schema: %s", db->path,
                     sqlite3_errmsg(ref));
    sqlite3_finalize(st);
    return rc;
}

/* The JSON columns of the current schema (docs/database.md). */
static const struct {
    const char *table, *column;
} json_columns[] = {
    {"targets", "info"},        {"workloads", "shape_set"}, {"kernels", "annotation"},
    {"kernels", "attrs"},       {"cost_models", "metrics"}, {"jobs", "spec"},           {"jobs", "options"},
    {"jobs", "checkpoint"},     {"jobs", "progress"},
};

/* Rows the writers would never have stored: a reference to a missing row,
 * or JSON that does not parse. */
static int check_rows(dt_db *db, dt_err *e)
{
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "PRAGMA foreign_key_check", &st, e, "checking foreign keys");
    if (rc)
        return rc;
    rc = dt_db_step_row(db, st, SQLITE_OK, e, "checking foreign keys");
    if (rc == DT_OK)
        rc = dt_errf(e, DT_EINVAL,
                     "database %s is damaged: row %lld of table %s refers to a row of %s that "
                     "does not exist",
                     db->path, (long long)sqlite3_column_int64(st, 1),
                     (const char *)sqlite3_column_text(st, 0),
                     (const char *)sqlite3_column_text(st, 2));
    else if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    sqlite3_finalize(st);
    for (size_t i = 0; rc == DT_OK && i < sizeof json_columns / sizeof json_columns[0]; i++) {
        /* names come from json_columns, never from input */
        char sql[256], what[96];
        snprintf(sql, sizeof sql,
                 "SELECT id FROM %s WHERE %s IS NOT NULL AND NOT json_valid(%s) LIMIT 1",
                 json_columns[i].table, json_columns[i].column, json_columns[i].column);
        snprintf(what, sizeof what, "checking %s.%s", json_columns[i].table,
                 json_columns[i].column);
        if ((rc = dt_db_prepare(db, sql, &st, e, what)))
            break;
        rc = dt_db_step_row(db, st, SQLITE_OK, e, what);
        if (rc == DT_OK)
            rc = dt_errf(e, DT_EINVAL,
                         "database %s is damaged: the %s of %s row %lld is not valid JSON",
                         db->path, json_columns[i].column, json_columns[i].table,
                         (long long)sqlite3_column_int64(st, 0));
        else if (rc == DT_ENOTFOUND)
            rc = DT_OK;
        sqlite3_finalize(st);
    }
    return rc;
}

int dt_db_check(dt_db *db, dt_err *e)
{
    int rc = quick_check(db, e);
    if (rc)
        return rc;
    int v = dt_db_schema_version(db);
    if (v < 0)
        return dt_errf(e, v, "reading the schema version of %s: %s", db->path,
                       sqlite3_errmsg(db->sql));
    if (v > DT_DB_SCHEMA_VERSION)
        return dt_errf(e, DT_EVERSION, "database %s has schema version %d, this dtune supports "
                                       "up to %d; upgrade dtune",
                       db->path, v, DT_DB_SCHEMA_VERSION);
    sqlite3 *ref;
    if ((rc = dt_db_reference_schema(v, &ref, e)))
        return rc;
    rc = check_schema(db, ref, e);
    sqlite3_close(ref);
    /* the row checks know the tables of the current schema only */
    if (rc == DT_OK && v == DT_DB_SCHEMA_VERSION)
        rc = check_rows(db, e);
    return rc;
}
