/* Targets, workloads and kernels: the things measurements refer to. */
#include "db/db_internal.h"

#include <stdlib.h>

/* ---- targets ------------------------------------------------------------- */

int dt_db_target_upsert(dt_db *db, const char *key, const char *isa, const char *info_json,
                        int64_t *id, dt_err *e)
{
    static const char what[] = "saving target";
    int rc = dt_require_text(key, "target key", e);
    if (rc == DT_OK)
        rc = dt_require_text(isa, "target isa", e);
    if (rc == DT_OK)
        rc = dt_json_check(info_json, true, "target info", e);
    if (rc)
        return rc;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, what);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "INSERT INTO targets (key, isa, info, created_at)"
                           " VALUES (?1, ?2, coalesce(?3, '{}'), ?4)"
                           " ON CONFLICT (key) DO UPDATE SET isa = excluded.isa,"
                           " info = excluded.info RETURNING id",
                           &st, e, what);
    if (rc == DT_OK) {
        int b = dt_bind_text(st, 1, key);
        DT_BIND(b, dt_bind_text(st, 2, isa));
        DT_BIND(b, dt_bind_text(st, 3, info_json));
        DT_BIND(b, sqlite3_bind_int64(st, 4, dt_db_now()));
        rc = dt_db_step_id(db, st, b, id, e, what);
    }
    return dt_tx_end(db, &tx, rc, e);
}

static int read_target(sqlite3_stmt *st, void *out)
{
    dt_db_target *t = out;
    t->id = sqlite3_column_int64(st, 0);
    t->created_at = sqlite3_column_int64(st, 4);
    int rc = dt_col_dup(st, 1, &t->key);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 2, &t->isa);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 3, &t->info);
    return rc;
}

int dt_db_target_get(dt_db *db, const char *key, dt_db_target *out, dt_err *e)
{
    static const char what[] = "reading target";
    *out = (dt_db_target){0};
    int rc = dt_require_text(key, "target key", e);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "SELECT id, key, isa, info, created_at FROM targets WHERE key = ?1",
                           &st, e, what);
    if (rc)
        return rc;
    rc = dt_db_get_row(db, st, dt_bind_text(st, 1, key), read_target, out, e, what,
                       "target '%s'", key);
    if (rc)
        dt_db_target_free(out);
    return rc;
}

void dt_db_target_free(dt_db_target *t)
{
    if (!t)
        return;
    free((void *)t->key);
    free((void *)t->isa);
    free((void *)t->info);
    *t = (dt_db_target){0};
}

/* ---- workloads ----------------------------------------------------------- */

#define WORKLOAD_COLS "id, key, op, shape_set, created_at"

int dt_db_workload_upsert(dt_db *db, const char *key, const char *op,
                          const char *shape_set_json, int64_t *id, dt_err *e)
{
    static const char what[] = "saving workload";
    int rc = dt_require_text(key, "workload key", e);
    if (rc == DT_OK)
        rc = dt_require_text(op, "workload op", e);
    if (rc == DT_OK)
        rc = dt_json_check(shape_set_json, false, "workload shape set", e);
    if (rc)
        return rc;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, what);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "INSERT INTO workloads (key, op, shape_set, created_at)"
                           " VALUES (?1, ?2, ?3, ?4)"
                           " ON CONFLICT (key) DO UPDATE SET op = excluded.op,"
                           " shape_set = excluded.shape_set RETURNING id",
                           &st, e, what);
    if (rc == DT_OK) {
        int b = dt_bind_text(st, 1, key);
        DT_BIND(b, dt_bind_text(st, 2, op));
        DT_BIND(b, dt_bind_text(st, 3, shape_set_json));
        DT_BIND(b, sqlite3_bind_int64(st, 4, dt_db_now()));
        rc = dt_db_step_id(db, st, b, id, e, what);
    }
    return dt_tx_end(db, &tx, rc, e);
}

static int read_workload(sqlite3_stmt *st, void *out)
{
    dt_db_workload *w = out;
    w->id = sqlite3_column_int64(st, 0);
    w->created_at = sqlite3_column_int64(st, 4);
    int rc = dt_col_dup(st, 1, &w->key);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 2, &w->op);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 3, &w->shape_set);
    return rc;
}

/* Runs a one-row workload query whose parameter 1 is key (when not NULL)
 * or id, and reads the row into *out. */
static int get_workload(dt_db *db, const char *sql, const char *key, int64_t id,
                        dt_db_workload *out, dt_err *e)
{
    static const char what[] = "reading workload";
    *out = (dt_db_workload){0};
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, sql, &st, e, what);
    if (rc)
        return rc;
    int b = key ? dt_bind_text(st, 1, key) : sqlite3_bind_int64(st, 1, id);
    if (key)
        rc = dt_db_get_row(db, st, b, read_workload, out, e, what, "workload '%s'", key);
    else
        rc = dt_db_get_row(db, st, b, read_workload, out, e, what, "workload with id %lld",
                           (long long)id);
    if (rc)
        dt_db_workload_free(out);
    return rc;
}

int dt_db_workload_get(dt_db *db, const char *key, dt_db_workload *out, dt_err *e)
{
    *out = (dt_db_workload){0};
    int rc = dt_require_text(key, "workload key", e);
    if (rc)
        return rc;
    return get_workload(db, "SELECT " WORKLOAD_COLS " FROM workloads WHERE key = ?1", key, 0,
                        out, e);
}

int dt_db_workload_get_by_id(dt_db *db, int64_t id, dt_db_workload *out, dt_err *e)
{
    return get_workload(db, "SELECT " WORKLOAD_COLS " FROM workloads WHERE id = ?1", NULL, id,
                        out, e);
}

void dt_db_workload_free(dt_db_workload *w)
{
    if (!w)
        return;
    free((void *)w->key);
    free((void *)w->op);
    free((void *)w->shape_set);
    *w = (dt_db_workload){0};
}

int dt_db_workload_list(dt_db *db, dt_db_workload **out, size_t *n, dt_err *e)
{
    static const char what[] = "listing workloads";
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "SELECT " WORKLOAD_COLS " FROM workloads ORDER BY id", &st, e,
                           what);
    if (rc)
        return rc;
    void *ws = NULL;
    size_t len = 0;
    rc = dt_db_list_rows(db, st, SQLITE_OK, read_workload, sizeof(dt_db_workload), &ws, &len, e,
                         what);
    if (rc) {
        dt_db_workloads_free(ws, len);
        return rc;
    }
    *out = ws;
    *n = len;
    return DT_OK;
}

void dt_db_workloads_free(dt_db_workload *ws, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dt_db_workload_free(&ws[i]);
    free(ws);
}

/* ---- kernels ------------------------------------------------------------- */

/* SELECT-then-INSERT under the write lock: an upsert would rewrite the
 * existing row just to return its id. */
static int find_or_insert_kernel(dt_db *db, const char *const key[5], const char *source_hash,
                                 int64_t *id, dt_err *e)
{
    static const char what[] = "saving kernel";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db,
                           "SELECT id FROM kernels WHERE op = ?1 AND dtype = ?2 AND attrs = ?3"
                           " AND sketch = ?4 AND annotation = ?5",
                           &st, e, what);
    if (rc)
        return rc;
    int b = SQLITE_OK;
    for (int i = 0; i < 5; i++)
        DT_BIND(b, dt_bind_text(st, i + 1, key[i]));
    rc = dt_db_step_row(db, st, b, e, what);
    if (rc == DT_OK)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != DT_ENOTFOUND)
        return rc;

    rc = dt_db_prepare(db,
                       "INSERT INTO kernels (op, dtype, attrs, sketch, annotation, source_hash,"
                       " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                       &st, e, what);
    if (rc)
        return rc;
    b = SQLITE_OK;
    for (int i = 0; i < 5; i++)
        DT_BIND(b, dt_bind_text(st, i + 1, key[i]));
    DT_BIND(b, dt_bind_text(st, 6, source_hash));
    DT_BIND(b, sqlite3_bind_int64(st, 7, dt_db_now()));
    return dt_db_step_id(db, st, b, id, e, what);
}

int dt_db_kernel_intern_attrs(dt_db *db, const char *op, const char *dtype, const char *attrs_json,
                              const char *sketch, const char *annotation_json,
                              const char *source_hash, int64_t *id, dt_err *e)
{
    if (!dtype)
        dtype = "f32";
    int rc = dt_require_text(op, "kernel op", e);
    if (rc == DT_OK)
        rc = dt_require_text(dtype, "kernel dtype", e);
    if (rc == DT_OK)
        rc = dt_require_text(sketch, "kernel sketch", e);
    char *annotation = NULL, *attrs = NULL;
    if (rc == DT_OK)
        rc = dt_json_canonical(annotation_json, "kernel annotation", &annotation, e);
    if (rc == DT_OK)
        rc = dt_json_canonical(attrs_json ? attrs_json : "{}", "kernel attributes", &attrs, e);
    if (rc == DT_OK && attrs[0] != '{')
        rc = dt_errf(e, DT_EINVAL, "kernel attributes must be a JSON object, not %s", attrs);
    int64_t kid = 0;
    if (rc == DT_OK) {
        const char *key[5] = {op, dtype, attrs, sketch, annotation};
        dt_tx tx;
        rc = dt_tx_begin(db, &tx, e, "saving kernel");
        if (rc == DT_OK)
            rc = find_or_insert_kernel(db, key, source_hash, &kid, e);
        rc = dt_tx_end(db, &tx, rc, e);
    }
    free(annotation);
    free(attrs);
    if (rc == DT_OK && id)
        *id = kid;
    return rc;
}

int dt_db_kernel_intern(dt_db *db, const char *op, const char *sketch,
                        const char *annotation_json, const char *source_hash, int64_t *id,
                        dt_err *e)
{
    return dt_db_kernel_intern_attrs(db, op, NULL, NULL, sketch, annotation_json, source_hash,
                                     id, e);
}

static int read_kernel(sqlite3_stmt *st, void *out)
{
    dt_db_kernel *k = out;
    k->id = sqlite3_column_int64(st, 0);
    k->created_at = sqlite3_column_int64(st, 5);
    int rc = dt_col_dup(st, 1, &k->op);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 2, &k->sketch);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 3, &k->annotation);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 4, &k->source_hash);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 6, &k->dtype);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 7, &k->attrs);
    return rc;
}

int dt_db_kernel_get(dt_db *db, int64_t id, dt_db_kernel *out, dt_err *e)
{
    static const char what[] = "reading kernel";
    *out = (dt_db_kernel){0};
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db,
                           "SELECT id, op, sketch, annotation, source_hash, created_at, dtype, attrs"
                           " FROM kernels WHERE id = ?1",
                           &st, e, what);
    if (rc)
        return rc;
    rc = dt_db_get_row(db, st, sqlite3_bind_int64(st, 1, id), read_kernel, out, e, what,
                       "kernel with id %lld", (long long)id);
    if (rc)
        dt_db_kernel_free(out);
    return rc;
}

void dt_db_kernel_free(dt_db_kernel *k)
{
    if (!k)
        return;
    free((void *)k->op);
    free((void *)k->sketch);
    free((void *)k->annotation);
    free((void *)k->source_hash);
    free((void *)k->dtype);
    free((void *)k->attrs);
    *k = (dt_db_kernel){0};
}
