/* dt_db_check and dt_db_check_all: is an opened database damaged?
 * SQLite's quick_check (integrity_check for check_all), then its schema
 * against the one the migrations create for its version, then broken rows
 * (db_invariants.c adds dtune's own invariants for check_all). */
#include "db/db_internal.h"

#include <stdarg.h>
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

int dt_db_problem(dt_db_checker *c, const char *kind, int64_t *seen, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!c->all)
        return dt_errf(c->e, DT_EINVAL, "database %s is damaged: %s", c->db->path, msg);
    c->problems++;
    if (seen && ++*seen > DT_DB_CHECK_MAX_PER_RULE)
        return DT_OK;
    if (c->cb)
        c->cb(kind, msg, c->ud);
    return DT_OK;
}

void dt_db_problem_end(dt_db_checker *c, const char *kind, int64_t seen)
{
    if (!c->all || seen <= DT_DB_CHECK_MAX_PER_RULE || !c->cb)
        return;
    char msg[128];
    snprintf(msg, sizeof msg, "... and %lld more problems of this kind",
             (long long)(seen - DT_DB_CHECK_MAX_PER_RULE));
    c->cb(kind, msg, c->ud);
}

/* quick_check (first problem) or integrity_check (all): the first also
 * reads every page; the second also checks that indexes match their
 * tables. */
static int sqlite_check(dt_db_checker *c)
{
    dt_db *db = c->db;
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, c->all ? "PRAGMA integrity_check(100)" : "PRAGMA quick_check(5)",
                           &st, c->e, "checking the database");
    if (rc)
        return rc;
    text problems = {0};
    int64_t seen = 0;
    int s;
    while (rc == DT_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *row = (const char *)sqlite3_column_text(st, 0);
        if (!row || strcmp(row, "ok") == 0)
            continue;
        /* a row may hold several lines; "*** in database main ***" says nothing */
        for (const char *line = row; rc == DT_OK && *line;) {
            size_t n = strcspn(line, "\n");
            if (n > 0 && strncmp(line, "*** in database", 15) != 0) {
                char buf[512];
                snprintf(buf, sizeof buf, "%.*s", (int)(n < 500 ? n : 500), line);
                if (c->all) {
                    rc = dt_db_problem(c, "integrity", &seen, "SQLite's integrity check says: %s",
                                       buf);
                } else {
                    if (problems.len)
                        text_add(&problems, "; ");
                    text_add(&problems, buf);
                }
            }
            line += n + (line[n] == '\n');
        }
    }
    if (rc == DT_OK && s != SQLITE_DONE) {
        if ((s & 0xff) == SQLITE_CORRUPT || (s & 0xff) == SQLITE_NOTADB)
            rc = dt_db_problem(c, "integrity", NULL, "%s", sqlite3_errmsg(db->sql));
        else
            rc = dt_db_fail(db, s, c->e, "checking the database");
    } else if (rc == DT_OK && problems.oom) {
        rc = dt_errf(c->e, DT_ENOMEM, "out of memory checking %s", db->path);
    } else if (rc == DT_OK && problems.len) {
        rc = dt_db_problem(c, "integrity", NULL, "SQLite's integrity check says: %s", problems.s);
    }
    dt_db_problem_end(c, "integrity", seen);
    sqlite3_finalize(st);
    free(problems.s);
    return rc;
}

/* Compares one table of the reference schema with the file's. */
static int check_table(dt_db_checker *c, sqlite3 *ref, const char *name)
{
    dt_db *db = c->db;
    int rc = DT_OK;
    for (size_t i = 0; rc == DT_OK && i < sizeof table_parts / sizeof table_parts[0]; i++) {
        text want = {0}, got = {0};
        int s = describe(ref, table_parts[i], name, &want);
        int g = describe(db->sql, table_parts[i], name, &got);
        if (want.oom || got.oom)
            rc = dt_errf(c->e, DT_ENOMEM, "out of memory checking %s", db->path);
        else if (s != SQLITE_OK)
            rc = dt_errf(c->e, DT_EDB, "checking %s: the reference schema: %s", db->path,
                         sqlite3_errmsg(ref));
        else if (g != SQLITE_OK)
            rc = dt_db_problem(c, "schema", NULL, "reading table %s: %s", name,
                               sqlite3_errmsg(db->sql));
        else if (strcmp(want.s ? want.s : "", got.s ? got.s : "") != 0)
            rc = dt_db_problem(c, "schema", NULL, "table %s has %s (%s), schema %d has (%s)",
                               name, table_part_names[i], got.s ? got.s : "",
                               dt_db_schema_version(db), want.s ? want.s : "");
        free(want.s);
        free(got.s);
    }
    return rc;
}

/* Every table of the reference schema exists in the file as the same table. */
static int check_schema(dt_db_checker *c, sqlite3 *ref)
{
    dt_db *db = c->db;
    sqlite3_stmt *st;
    int s = sqlite3_prepare_v2(ref,
                               "SELECT name FROM sqlite_master WHERE type = 'table'"
                               " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                               -1, &st, NULL);
    if (s != SQLITE_OK)
        return dt_errf(c->e, DT_EDB, "checking %s: the reference schema: %s", db->path,
                       sqlite3_errmsg(ref));
    int rc = DT_OK;
    while (rc == DT_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        sqlite3_stmt *q;
        rc = dt_db_prepare(db, "SELECT type FROM sqlite_master WHERE name = ?1", &q, c->e,
                           "reading the schema");
        if (rc)
            break;
        rc = dt_db_step_row(db, q, dt_bind_text(q, 1, name), c->e, "reading the schema");
        bool present = rc == DT_OK;
        if (rc == DT_OK && strcmp((const char *)sqlite3_column_text(q, 0), "table") != 0) {
            present = false;
            rc = dt_db_problem(c, "schema", NULL, "%s is a %s, not a table", name,
                               (const char *)sqlite3_column_text(q, 0));
        } else if (rc == DT_ENOTFOUND) {
            rc = dt_db_problem(c, "schema", NULL, "table %s is missing", name);
        }
        sqlite3_finalize(q);
        if (rc == DT_OK && present)
            rc = check_table(c, ref, name);
    }
    if (rc == DT_OK && s != SQLITE_DONE && s != SQLITE_ROW)
        rc = dt_errf(c->e, DT_EDB, "checking %s: the reference schema: %s", db->path,
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
static int check_rows(dt_db_checker *c)
{
    dt_db *db = c->db;
    sqlite3_stmt *st;
    int64_t seen = 0;
    int rc = dt_db_prepare(db, "PRAGMA foreign_key_check", &st, c->e, "checking foreign keys");
    if (rc)
        return rc;
    while (rc == DT_OK && (rc = dt_db_step_row(db, st, SQLITE_OK, c->e,
                                                "checking foreign keys")) == DT_OK)
        rc = dt_db_problem(c, "foreign_key", &seen,
                           "row %lld of table %s refers to a row of %s that does not exist",
                           (long long)sqlite3_column_int64(st, 1),
                           (const char *)sqlite3_column_text(st, 0),
                           (const char *)sqlite3_column_text(st, 2));
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    dt_db_problem_end(c, "foreign_key", seen);
    sqlite3_finalize(st);
    for (size_t i = 0; rc == DT_OK && i < sizeof json_columns / sizeof json_columns[0]; i++) {
        /* names come from json_columns, never from input */
        char sql[256], what[96];
        snprintf(sql, sizeof sql,
                 "SELECT id FROM %s WHERE %s IS NOT NULL AND NOT json_valid(%s) ORDER BY id",
                 json_columns[i].table, json_columns[i].column, json_columns[i].column);
        snprintf(what, sizeof what, "checking %s.%s", json_columns[i].table,
                 json_columns[i].column);
        if ((rc = dt_db_prepare(db, sql, &st, c->e, what)))
            break;
        seen = 0;
        while (rc == DT_OK && (rc = dt_db_step_row(db, st, SQLITE_OK, c->e, what)) == DT_OK)
            rc = dt_db_problem(c, "json", &seen, "the %s of %s row %lld is not valid JSON",
                               json_columns[i].column, json_columns[i].table,
                               (long long)sqlite3_column_int64(st, 0));
        if (rc == DT_ENOTFOUND)
            rc = DT_OK;
        dt_db_problem_end(c, "json", seen);
        sqlite3_finalize(st);
    }
    return rc;
}

static int run_checks(dt_db_checker *c)
{
    dt_db *db = c->db;
    int rc = sqlite_check(c);
    if (rc || c->problems)
        return rc; /* a file SQLite finds damaged: the rest would only repeat it */
    int v = dt_db_schema_version(db);
    if (v < 0)
        return dt_errf(c->e, v, "reading the schema version of %s: %s", db->path,
                       sqlite3_errmsg(db->sql));
    if (v > DT_DB_SCHEMA_VERSION)
        return dt_errf(c->e, DT_EVERSION, "database %s has schema version %d, this dtune "
                                          "supports up to %d; upgrade dtune",
                       db->path, v, DT_DB_SCHEMA_VERSION);
    sqlite3 *ref;
    if ((rc = dt_db_reference_schema(v, &ref, c->e)))
        return rc;
    rc = check_schema(c, ref);
    sqlite3_close(ref);
    /* the row checks know the tables of the current schema only */
    if (rc == DT_OK && c->problems == 0 && v == DT_DB_SCHEMA_VERSION) {
        rc = check_rows(c);
        if (rc == DT_OK && c->all)
            rc = dt_db_check_invariants(c);
    }
    return rc;
}

int dt_db_check(dt_db *db, dt_err *e)
{
    dt_db_checker c = {.db = db, .e = e};
    return run_checks(&c);
}

int dt_db_check_all(dt_db *db, dt_db_problem_cb cb, void *ud, int64_t *problems, dt_err *e)
{
    dt_db_checker c = {.db = db, .all = true, .cb = cb, .ud = ud, .e = e};
    int rc = run_checks(&c);
    if (problems)
        *problems = c.problems;
    return rc;
}

/* The problems of a refused file, into the error message. */
typedef struct {
    char text[DT_ERR_MSG_MAX];
    size_t len;
    bool full;
} problem_text;

static void add_problem(const char *kind, const char *message, void *ud)
{
    problem_text *t = ud;
    if (t->full)
        return;
    char line[DT_ERR_MSG_MAX];
    int n = snprintf(line, sizeof line, "%s[%s] %s", t->len ? "; " : "", kind, message);
    /* room for the closing hint */
    if (n < 0 || t->len + (size_t)n >= sizeof t->text / 2) {
        t->full = true;
        return;
    }
    memcpy(t->text + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

int dt_db_require_sound(dt_db *db, const char *doing, dt_db_problem_cb cb, void *ud, dt_err *e)
{
    problem_text t = {.len = 0};
    int64_t n = 0;
    int rc = dt_db_check_all(db, cb ? cb : add_problem, cb ? ud : &t, &n, e);
    if (rc || n == 0)
        return rc;
    if (cb)
        return dt_errf(e, DT_EINVAL, "cannot %s: database %s is damaged (%lld problem%s, listed above)",
                       doing, db->path, (long long)n, n == 1 ? "" : "s");
    return dt_errf(e, DT_EINVAL, "cannot %s: database %s is damaged (%lld problem%s): %s%s; run "
                   "'dtune db check --db %s'%s",
                   doing, db->path, (long long)n, n == 1 ? "" : "s", t.text,
                   t.full ? "; ..." : "", db->path, t.full ? " for all of them" : " for details");
}
