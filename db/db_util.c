/* Helpers shared by the accessors: error mapping, statements, write scopes,
 * binding and column reading, JSON checks. */
#include "db/db_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int dt_db_code(int sqlite_rc)
{
    switch (sqlite_rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return DT_OK;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return DT_EBUSY;
    case SQLITE_NOMEM:
        return DT_ENOMEM;
    case SQLITE_NOTADB:
        return DT_ENOTDTUNE;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
        return DT_EINVAL;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_FULL:
    case SQLITE_PERM:
    case SQLITE_READONLY:  /* the file, its directory or a side file is not writable */
        return DT_EIO;
    default:
        return DT_EDB;
    }
}

int dt_db_fail(dt_db *db, int sqlite_rc, dt_err *e, const char *fmt, ...)
{
    int code = dt_db_code(sqlite_rc);
    if (code == DT_OK)
        code = DT_EDB;  /* e.g. a query that returned no row */
    DT_ASSERT(code < 0, "a failure maps to a negative DT_E* code");
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *msg = db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(sqlite_rc);
    if (code == DT_EBUSY)
        return dt_errf(e, code, "%s in %s: %s (another process holds the lock)", what,
                       db->path, msg);
    return dt_errf(e, code, "%s in %s: %s", what, db->path, msg);
}

int dt_db_prepare(dt_db *db, const char *sql, sqlite3_stmt **st, dt_err *e, const char *what)
{
    *st = NULL;
    int rc = dt_db_revalidate(db, e);
    if (rc)
        return rc;
    rc = sqlite3_prepare_v2(db->sql, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return dt_db_fail(db, rc, e, "%s", what);
    }
    return DT_OK;
}

int dt_db_exec(dt_db *db, const char *sql, dt_err *e, const char *what)
{
    int rc = dt_db_revalidate(db, e);
    if (rc)
        return rc;
    rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? DT_OK : dt_db_fail(db, rc, e, "%s", what);
}

int dt_db_step_done(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_err *e, const char *what)
{
    int rc = bind_rc == SQLITE_OK ? sqlite3_step(st) : bind_rc;
    int out = rc == SQLITE_DONE ? DT_OK : dt_db_fail(db, rc, e, "%s", what);
    sqlite3_finalize(st);
    return out;
}

int dt_db_step_row(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_err *e, const char *what)
{
    int s = bind_rc == SQLITE_OK ? sqlite3_step(st) : bind_rc;
    if (s == SQLITE_ROW)
        return DT_OK;
    if (s == SQLITE_DONE)
        return DT_ENOTFOUND;
    return dt_db_fail(db, s, e, "%s", what);
}

int dt_db_step_id(dt_db *db, sqlite3_stmt *st, int bind_rc, int64_t *id, dt_err *e,
                  const char *what)
{
    int rc = dt_db_step_row(db, st, bind_rc, e, what);
    if (rc == DT_OK && id)
        *id = sqlite3_column_int64(st, 0);
    else if (rc == DT_ENOTFOUND)
        rc = dt_errf(e, DT_EDB, "%s in %s: the statement returned no id", what, db->path);
    sqlite3_finalize(st);
    return rc;
}

int dt_db_query_int(dt_db *db, const char *sql, int64_t *out, dt_err *e, const char *what)
{
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, sql, &st, e, what);
    if (rc)
        return rc;
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = DT_OK;
    } else {
        rc = dt_db_fail(db, s, e, "%s", what);
    }
    sqlite3_finalize(st);
    return rc;
}

int dt_db_require_writable(dt_db *db, dt_err *e, const char *what)
{
    if (db->flags & DT_DB_READONLY)
        return dt_errf(e, DT_EINVAL, "%s in %s: the database was opened read-only", what,
                       db->path);
    return DT_OK;
}

/* ---- write scopes --------------------------------------------------------- */

int dt_tx_begin(dt_db *db, dt_tx *tx, dt_err *e, const char *what)
{
    tx->active = false;
    int rc = dt_db_require_writable(db, e, what);
    if (rc)
        return rc;
    tx->owned = sqlite3_get_autocommit(db->sql) != 0;
    /* IMMEDIATE takes the write lock up front: a deferred transaction that
     * reads first could fail to upgrade without waiting for the timeout. */
    rc = dt_db_exec(db, tx->owned ? "BEGIN IMMEDIATE" : "SAVEPOINT dt_op", e, what);
    tx->active = rc == DT_OK;
    DT_ASSERT(!tx->active || sqlite3_get_autocommit(db->sql) == 0,
              "inside a write scope SQLite is in a transaction");
    return rc;
}

int dt_tx_end(dt_db *db, dt_tx *tx, int rc, dt_err *e)
{
    if (!tx->active)
        return rc;
    tx->active = false;
    if (rc == DT_OK) {
        int c = dt_db_exec(db, tx->owned ? "COMMIT" : "RELEASE dt_op", e, "committing");
        if (c == DT_OK)
            return DT_OK;
        rc = c;
    }
    /* Some errors (I/O, full disk) already rolled the transaction back. */
    if (tx->owned) {
        if (!sqlite3_get_autocommit(db->sql))
            sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    } else if (!sqlite3_get_autocommit(db->sql)) {
        sqlite3_exec(db->sql, "ROLLBACK TO dt_op; RELEASE dt_op", NULL, NULL, NULL);
    }
    return rc;
}

/* ---- binding and columns ------------------------------------------------ */

int dt_bind_text(sqlite3_stmt *st, int idx, const char *s)
{
    return s ? sqlite3_bind_text(st, idx, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, idx);
}

int dt_bind_real(sqlite3_stmt *st, int idx, double v)
{
    return isnan(v) ? sqlite3_bind_null(st, idx) : sqlite3_bind_double(st, idx, v);
}

const char *dt_col_text(sqlite3_stmt *st, int col)
{
    return (const char *)sqlite3_column_text(st, col);
}

int dt_col_dup(sqlite3_stmt *st, int col, const char **out)
{
    const char *s = dt_col_text(st, col);
    *out = NULL;
    if (!s)
        return DT_OK;
    char *copy = strdup(s);
    if (!copy)
        return DT_ENOMEM;
    *out = copy;
    return DT_OK;
}

double dt_col_real(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

/* ---- checks ------------------------------------------------------------- */

static json_t *parse_json(const char *text, const char *field, dt_err *e)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_DECODE_ANY, &je);
    if (!root)
        dt_errf(e, DT_EINVAL, "%s is not valid JSON (line %d, column %d: %s)", field, je.line,
                je.column, je.text);
    return root;
}

int dt_json_check(const char *text, bool nullable, const char *field, dt_err *e)
{
    if (!text)
        return nullable ? DT_OK : dt_errf(e, DT_EINVAL, "%s is required", field);
    json_t *root = parse_json(text, field, e);
    if (!root)
        return DT_EINVAL;
    json_decref(root);
    return DT_OK;
}

int dt_json_canonical(const char *text, const char *field, char **out, dt_err *e)
{
    *out = NULL;
    if (!text)
        return dt_errf(e, DT_EINVAL, "%s is required", field);
    json_t *root = parse_json(text, field, e);
    if (!root)
        return DT_EINVAL;
    *out = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(root);
    return *out ? DT_OK : dt_errf(e, DT_ENOMEM, "out of memory canonicalising %s", field);
}

void *dt_grow(void *arr, size_t *cap, size_t len, size_t elem)
{
    if (len < *cap)
        return arr;
    size_t ncap = *cap ? 2 * *cap : 16;
    if (ncap > SIZE_MAX / elem)
        return NULL;
    void *grown = realloc(arr, ncap * elem);
    if (grown)
        *cap = ncap;
    DT_ASSERT(!grown || *cap > len, "a grown array has room past len");
    return grown;
}

int dt_require_text(const char *s, const char *field, dt_err *e)
{
    if (!s || !*s)
        return dt_errf(e, DT_EINVAL, "%s must be a non-empty string", field);
    return DT_OK;
}

int64_t dt_db_now(void)
{
    return (int64_t)time(NULL);
}

int dt_db_get_row(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_db_row_fn read, void *out,
                  dt_err *e, const char *what, const char *name_fmt, ...)
{
    int rc = dt_db_step_row(db, st, bind_rc, e, what);
    int r = rc == DT_OK ? read(st, out) : DT_OK;
    sqlite3_finalize(st);
    if (rc != DT_ENOTFOUND && r == DT_OK)
        return rc;
    char name[512];
    va_list ap;
    va_start(ap, name_fmt);
    vsnprintf(name, sizeof name, name_fmt, ap);
    va_end(ap);
    if (rc == DT_ENOTFOUND)
        return dt_errf(e, rc, "no %s in %s", name, db->path);
    if (r == DT_ENOMEM)
        return dt_errf(e, r, "out of memory reading %s", name);
    return dt_errf(e, r, "reading %s in %s: unknown value in a column", name, db->path);
}

int dt_db_list_rows(dt_db *db, sqlite3_stmt *st, int bind_rc, dt_db_row_fn read, size_t elem,
                    void **rows, size_t *n, dt_err *e, const char *what)
{
    size_t cap = 0;
    int rc;
    while ((rc = dt_db_step_row(db, st, bind_rc, e, what)) == DT_OK) {
        char *grown = dt_grow(*rows, &cap, *n, elem);
        if (!grown) {
            rc = DT_ENOMEM;
            break;
        }
        *rows = grown;
        DT_ASSERT(*n < cap, "a listed row is written inside the array");
        char *row = grown + *n * elem;
        memset(row, 0, elem);
        ++*n;
        if ((rc = read(st, row)))
            break;
    }
    int64_t id = rc == DT_EDB ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc == DT_ENOTFOUND) /* ran off the end: done */
        return DT_OK;
    if (rc == DT_ENOMEM)
        return dt_errf(e, rc, "out of memory %s", what);
    if (rc == DT_EDB)
        return dt_errf(e, rc, "%s in %s: row %lld holds an unknown value", what, db->path,
                       (long long)id);
    return rc;
}
