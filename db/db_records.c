/* Measurements (trial records), schedules (dispatch tables) and cost models. */
#include "db/db_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- measurements ------------------------------------------------------ */

#define MEAS_COLS                                                                       \
    "id, kernel_id, target_id, workload_id, shape, threads, status, min_ns, median_ns," \
    " error, trial_uid, created_at"

static int check_measurement(const dt_db_measurement *m, dt_err *e)
{
    if (!m)
        return dt_errf(e, DT_EINVAL, "no measurement given");
    if (m->kernel_id <= 0 || m->target_id <= 0 || m->workload_id <= 0)
        return dt_errf(e, DT_EINVAL, "measurement %s: kernel, target and workload ids are "
                                     "required",
                       m->trial_uid ? m->trial_uid : "(no trial uid)");
    int rc = dt_require_text(m->trial_uid, "measurement trial_uid", e);
    /* the shape's text; "" is the one shape of a workload without variables */
    if (rc == DT_OK && !m->shape)
        rc = dt_errf(e, DT_EINVAL, "measurement %s: no shape", m->trial_uid);
    if (rc)
        return rc;
    if (!dt_trial_status_name(m->status))
        return dt_errf(e, DT_EINVAL, "measurement %s: invalid status %d", m->trial_uid,
                       (int)m->status);
    if (m->status == DT_TRIAL_OK && (isnan(m->min_ns) || isnan(m->median_ns)))
        return dt_errf(e, DT_EINVAL, "measurement %s: status ok needs min_ns and median_ns",
                       m->trial_uid);
    return DT_OK;
}

/* The id of the record with this trial uid (inside the write scope). */
static int find_trial(dt_db *db, const char *trial_uid, int64_t *id, dt_err *e)
{
    static const char what[] = "looking up a recorded trial";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db, "SELECT id FROM measurements WHERE trial_uid = ?1", &st, e,
                           what);
    if (rc)
        return rc;
    return dt_db_step_id(db, st, dt_bind_text(st, 1, trial_uid), id, e, what);
}

static int insert_measurement(dt_db *db, const dt_db_measurement *m, int64_t *id,
                              bool *already, dt_err *e)
{
    static const char what[] = "recording measurement";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db,
                           "INSERT INTO measurements (kernel_id, target_id, workload_id, shape,"
                           " threads, status, min_ns, median_ns, error, trial_uid, created_at)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
                           " ON CONFLICT (trial_uid) DO NOTHING RETURNING id",
                           &st, e, what);
    if (rc)
        return rc;
    int b = sqlite3_bind_int64(st, 1, m->kernel_id);
    DT_BIND(b, sqlite3_bind_int64(st, 2, m->target_id));
    DT_BIND(b, sqlite3_bind_int64(st, 3, m->workload_id));
    DT_BIND(b, dt_bind_text(st, 4, m->shape));
    DT_BIND(b, sqlite3_bind_int(st, 5, m->threads));
    DT_BIND(b, dt_bind_text(st, 6, dt_trial_status_name(m->status)));
    DT_BIND(b, dt_bind_real(st, 7, m->min_ns));
    DT_BIND(b, dt_bind_real(st, 8, m->median_ns));
    DT_BIND(b, dt_bind_text(st, 9, m->error));
    DT_BIND(b, dt_bind_text(st, 10, m->trial_uid));
    DT_BIND(b, sqlite3_bind_int64(st, 11, dt_db_now()));
    rc = dt_db_step_row(db, st, b, e, what);
    if (rc == DT_OK)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != DT_ENOTFOUND)
        return rc;
    /* No row returned: the trial uid is already recorded. */
    *already = true;
    return find_trial(db, m->trial_uid, id, e);
}

int dt_db_measurement_insert(dt_db *db, const dt_db_measurement *m, int64_t *id,
                             bool *already, dt_err *e)
{
    int rc = check_measurement(m, e);
    if (rc)
        return rc;
    int64_t mid = 0;
    bool dup = false;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, "recording measurement");
    if (rc == DT_OK)
        rc = insert_measurement(db, m, &mid, &dup, e);
    rc = dt_tx_end(db, &tx, rc, e);
    if (rc == DT_OK && id)
        *id = mid;
    if (rc == DT_OK && already)
        *already = dup;
    return rc;
}

/* Prepares "<head> WHERE ..." for filter f; conditions use parameters
 * ?1..?3 in a fixed order so binding stays simple. */
static int prepare_filtered(dt_db *db, const char *head, const char *tail,
                            const dt_db_measurement_filter *f, sqlite3_stmt **st, dt_err *e,
                            const char *what)
{
    static const dt_db_measurement_filter any = {0};
    if (!f)
        f = &any;
    char sql[512];
    snprintf(sql, sizeof sql, "%s WHERE 1%s%s%s%s%s", head,
             f->workload_id ? " AND workload_id = ?1" : "",
             f->target_id ? " AND target_id = ?2" : "",
             f->kernel_id ? " AND kernel_id = ?3" : "", f->ok_only ? " AND status = 'ok'" : "",
             tail);
    int rc = dt_db_prepare(db, sql, st, e, what);
    if (rc)
        return rc;
    int b = SQLITE_OK;
    if (f->workload_id)
        DT_BIND(b, sqlite3_bind_int64(*st, 1, f->workload_id));
    if (f->target_id)
        DT_BIND(b, sqlite3_bind_int64(*st, 2, f->target_id));
    if (f->kernel_id)
        DT_BIND(b, sqlite3_bind_int64(*st, 3, f->kernel_id));
    if (b != SQLITE_OK) {
        rc = dt_db_fail(db, b, e, "%s", what);
        sqlite3_finalize(*st);
        *st = NULL;
    }
    return rc;
}

/* Fills *m from the current row; strings borrowed from st. */
static int read_measurement(sqlite3_stmt *st, dt_db_measurement *m)
{
    m->id = sqlite3_column_int64(st, 0);
    m->kernel_id = sqlite3_column_int64(st, 1);
    m->target_id = sqlite3_column_int64(st, 2);
    m->workload_id = sqlite3_column_int64(st, 3);
    m->shape = dt_col_text(st, 4);
    m->threads = sqlite3_column_int(st, 5);
    m->min_ns = dt_col_real(st, 7);
    m->median_ns = dt_col_real(st, 8);
    m->error = dt_col_text(st, 9);
    m->trial_uid = dt_col_text(st, 10);
    m->created_at = sqlite3_column_int64(st, 11);
    return dt_trial_status_parse(dt_col_text(st, 6), &m->status);
}

int dt_db_measurement_list(dt_db *db, const dt_db_measurement_filter *f,
                           dt_db_measurement_cb cb, void *ud, dt_err *e)
{
    static const char what[] = "listing measurements";
    if (!cb)
        return dt_errf(e, DT_EINVAL, "%s: no callback given", what);
    sqlite3_stmt *st;
    int rc = prepare_filtered(db, "SELECT " MEAS_COLS " FROM measurements", " ORDER BY id", f,
                              &st, e, what);
    if (rc)
        return rc;
    int64_t prev_id = INT64_MIN;
    while ((rc = dt_db_step_row(db, st, SQLITE_OK, e, what)) == DT_OK) {
        dt_db_measurement m;
        if (read_measurement(st, &m) != DT_OK) {
            rc = dt_errf(e, DT_EDB, "%s in %s: record %lld has an unknown status", what,
                         db->path, (long long)sqlite3_column_int64(st, 0));
            break;
        }
        DT_ASSERT(m.id > prev_id, "measurements are listed by increasing id, ids distinct");
        DT_ASSERT(dt_trial_status_name(m.status), "a listed measurement's status is a known one");
        prev_id = m.id;
        int c = cb(&m, ud);
        if (c < 0) {
            rc = dt_errf(e, c, "%s in %s: stopped by the callback (%s)", what, db->path,
                         dt_strerror(c));
            break;
        }
        if (c > 0)
            break;  /* stopped early by the callback */
    }
    sqlite3_finalize(st);
    return rc == DT_ENOTFOUND ? DT_OK : rc;
}

int dt_db_measurement_count(dt_db *db, const dt_db_measurement_filter *f, int64_t *n,
                            dt_err *e)
{
    static const char what[] = "counting measurements";
    sqlite3_stmt *st;
    int rc = prepare_filtered(db, "SELECT count(*) FROM measurements", "", f, &st, e, what);
    if (rc)
        return rc;
    return dt_db_step_id(db, st, SQLITE_OK, n, e, what);
}

/* ---- schedules --------------------------------------------------------- */

static int check_schedule(const dt_db_schedule *rows, size_t n, dt_err *e)
{
    if (n > 0 && !rows)
        return dt_errf(e, DT_EINVAL, "no schedule rows given");
    for (size_t i = 0; i < n; i++) {
        char field[64];
        snprintf(field, sizeof field, "schedule row %zu shape range", i);
        /* "" .. "": the one shape of a workload without variables */
        if (!rows[i].shape_lo || !rows[i].shape_hi)
            return dt_errf(e, DT_EINVAL, "%s: no shape", field);
        if (rows[i].kernel_id <= 0)
            return dt_errf(e, DT_EINVAL, "schedule row %zu: kernel id is required", i);
        /* the CHECK would refuse it too, but only as "CHECK constraint failed" */
        if (rows[i].box != 0 && rows[i].box != 1)
            return dt_errf(e, DT_EINVAL,
                           "schedule row %zu (%s..%s): box must be 1 (a box's corners) or 0 "
                           "(a schema-2 run), not %d",
                           i, rows[i].shape_lo, rows[i].shape_hi, rows[i].box);
    }
    return DT_OK;
}

static int delete_schedule(dt_db *db, int64_t workload_id, int64_t target_id, int threads,
                           dt_err *e)
{
    static const char what[] = "deleting the old schedule";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db,
                           "DELETE FROM schedules WHERE workload_id = ?1 AND target_id = ?2"
                           " AND threads = ?3",
                           &st, e, what);
    if (rc)
        return rc;
    int b = sqlite3_bind_int64(st, 1, workload_id);
    DT_BIND(b, sqlite3_bind_int64(st, 2, target_id));
    DT_BIND(b, sqlite3_bind_int(st, 3, threads));
    return dt_db_step_done(db, st, b, e, what);
}

static int insert_schedule_row(dt_db *db, sqlite3_stmt *st, int64_t workload_id,
                               int64_t target_id, int threads, const dt_db_schedule *r,
                               int64_t now, dt_err *e)
{
    DT_ASSERT(r->kernel_id > 0 && (r->box == 0 || r->box == 1) && r->shape_lo && r->shape_hi,
              "a schedule row saved passed check_schedule");
    sqlite3_reset(st);
    int b = sqlite3_bind_int64(st, 1, workload_id);
    DT_BIND(b, sqlite3_bind_int64(st, 2, target_id));
    DT_BIND(b, dt_bind_text(st, 3, r->shape_lo));
    DT_BIND(b, dt_bind_text(st, 4, r->shape_hi));
    DT_BIND(b, sqlite3_bind_int64(st, 5, r->kernel_id));
    DT_BIND(b, sqlite3_bind_int(st, 6, threads));
    DT_BIND(b, dt_bind_real(st, 7, r->predicted_ns));
    DT_BIND(b, dt_bind_real(st, 8, r->measured_ns));
    DT_BIND(b, sqlite3_bind_int64(st, 9, now));
    DT_BIND(b, sqlite3_bind_int(st, 10, r->box));
    int s = b == SQLITE_OK ? sqlite3_step(st) : b;
    if (s != SQLITE_DONE)
        return dt_db_fail(db, s, e, "saving schedule range %s..%s", r->shape_lo, r->shape_hi);
    return DT_OK;
}

static int insert_schedule(dt_db *db, int64_t workload_id, int64_t target_id, int threads,
                           const dt_db_schedule *rows, size_t n, dt_err *e)
{
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db,
                           "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi,"
                           " kernel_id, threads, predicted_ns, measured_ns, created_at, box)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                           &st, e, "saving schedule");
    if (rc)
        return rc;
    int64_t now = dt_db_now();
    for (size_t i = 0; i < n && rc == DT_OK; i++)
        rc = insert_schedule_row(db, st, workload_id, target_id, threads, &rows[i], now, e);
    sqlite3_finalize(st);
    return rc;
}

int dt_db_schedule_replace(dt_db *db, int64_t workload_id, int64_t target_id, int threads,
                           const dt_db_schedule *rows, size_t n, dt_err *e)
{
    if (threads < 1)
        return dt_errf(e, DT_EINVAL, "schedule threads must be >= 1, not %d", threads);
    int rc = check_schedule(rows, n, e);
    if (rc)
        return rc;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, "replacing schedule");
    if (rc == DT_OK)
        rc = delete_schedule(db, workload_id, target_id, threads, e);
    if (rc == DT_OK)
        rc = insert_schedule(db, workload_id, target_id, threads, rows, n, e);
    return dt_tx_end(db, &tx, rc, e);
}

static int read_schedule(sqlite3_stmt *st, void *out)
{
    dt_db_schedule *r = out;
    *r = (dt_db_schedule){
        .id = sqlite3_column_int64(st, 0),
        .workload_id = sqlite3_column_int64(st, 1),
        .target_id = sqlite3_column_int64(st, 2),
        .kernel_id = sqlite3_column_int64(st, 5),
        .threads = sqlite3_column_int(st, 6),
        .predicted_ns = dt_col_real(st, 7),
        .measured_ns = dt_col_real(st, 8),
        .created_at = sqlite3_column_int64(st, 9),
        .box = sqlite3_column_int(st, 10),
    };
    int rc = dt_col_dup(st, 3, &r->shape_lo);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 4, &r->shape_hi);
    return rc;
}

int dt_db_schedule_list(dt_db *db, int64_t workload_id, int64_t target_id, int threads,
                        dt_db_schedule **out, size_t *n, dt_err *e)
{
    static const char what[] = "listing schedule";
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = dt_db_prepare(db,
                           "SELECT id, workload_id, target_id, shape_lo, shape_hi, kernel_id,"
                           " threads, predicted_ns, measured_ns, created_at, box FROM schedules"
                           " WHERE workload_id = ?1 AND target_id = ?2 AND (?3 = 0 OR threads = ?3)"
                           " ORDER BY threads, id",
                           &st, e, what);
    if (rc)
        return rc;
    int b = sqlite3_bind_int64(st, 1, workload_id);
    DT_BIND(b, sqlite3_bind_int64(st, 2, target_id));
    DT_BIND(b, sqlite3_bind_int(st, 3, threads));
    void *rows = NULL;
    size_t len = 0;
    rc = dt_db_list_rows(db, st, b, read_schedule, sizeof(dt_db_schedule), &rows, &len, e, what);
    if (rc) {
        dt_db_schedules_free(rows, len);
        return rc;
    }
    const dt_db_schedule *sr = rows;
    for (size_t i = 0; i < len; i++) {
        bool asked = sr[i].workload_id == workload_id && sr[i].target_id == target_id &&
                     (threads == 0 || sr[i].threads == threads);
        DT_ASSERT(asked, "a listed schedule row is of the workload, target and threads asked for");
        bool ordered = i == 0 || sr[i - 1].threads < sr[i].threads ||
                       (sr[i - 1].threads == sr[i].threads && sr[i - 1].id < sr[i].id);
        DT_ASSERT(ordered, "schedule rows are ordered by threads, then id");
    }
    *out = rows;
    *n = len;
    return DT_OK;
}

void dt_db_schedules_free(dt_db_schedule *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((void *)rows[i].shape_lo);
        free((void *)rows[i].shape_hi);
    }
    free(rows);
}

/* ---- cost models ------------------------------------------------------- */

int dt_db_cost_model_save(dt_db *db, int64_t target_id, const char *op, const void *model,
                          size_t size, int64_t n_records, const char *metrics_json,
                          int64_t *id, dt_err *e)
{
    static const char what[] = "saving cost model";
    int rc = dt_require_text(op, "cost model op", e);
    if (rc == DT_OK && (!model || size == 0))
        rc = dt_errf(e, DT_EINVAL, "%s: the model is empty", what);
    if (rc == DT_OK)
        rc = dt_json_check(metrics_json, true, "cost model metrics", e);
    if (rc)
        return rc;
    dt_tx tx;
    rc = dt_tx_begin(db, &tx, e, what);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "INSERT INTO cost_models (target_id, op, model, n_records, metrics,"
                           " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                           &st, e, what);
    if (rc == DT_OK) {
        int b = sqlite3_bind_int64(st, 1, target_id);
        DT_BIND(b, dt_bind_text(st, 2, op));
        DT_BIND(b, sqlite3_bind_blob64(st, 3, model, size, SQLITE_STATIC));
        DT_BIND(b, sqlite3_bind_int64(st, 4, n_records));
        DT_BIND(b, dt_bind_text(st, 5, metrics_json));
        DT_BIND(b, sqlite3_bind_int64(st, 6, dt_db_now()));
        rc = dt_db_step_id(db, st, b, id, e, what);
    }
    return dt_tx_end(db, &tx, rc, e);
}

static int read_cost_model(sqlite3_stmt *st, void *out)
{
    dt_db_cost_model *m = out;
    m->id = sqlite3_column_int64(st, 0);
    m->target_id = sqlite3_column_int64(st, 1);
    m->n_records = sqlite3_column_int64(st, 4);
    m->created_at = sqlite3_column_int64(st, 6);
    int rc = dt_col_dup(st, 2, &m->op);
    if (rc == DT_OK)
        rc = dt_col_dup(st, 5, &m->metrics);
    if (rc)
        return rc;
    const void *blob = sqlite3_column_blob(st, 3);
    size_t size = (size_t)sqlite3_column_bytes(st, 3);
    void *copy = malloc(size ? size : 1);
    if (!copy)
        return DT_ENOMEM;
    if (size)
        memcpy(copy, blob, size);
    m->model = copy;
    m->model_size = size;
    return DT_OK;
}

int dt_db_cost_model_load_latest(dt_db *db, int64_t target_id, const char *op,
                                 dt_db_cost_model *out, dt_err *e)
{
    static const char what[] = "loading cost model";
    *out = (dt_db_cost_model){0};
    int rc = dt_require_text(op, "cost model op", e);
    sqlite3_stmt *st = NULL;
    if (rc == DT_OK)
        rc = dt_db_prepare(db,
                           "SELECT id, target_id, op, model, n_records, metrics, created_at"
                           " FROM cost_models WHERE target_id = ?1 AND op = ?2"
                           " ORDER BY id DESC LIMIT 1",
                           &st, e, what);
    if (rc)
        return rc;
    int b = sqlite3_bind_int64(st, 1, target_id);
    DT_BIND(b, dt_bind_text(st, 2, op));
    rc = dt_db_get_row(db, st, b, read_cost_model, out, e, what,
                       "cost model for target %lld and op %s", (long long)target_id, op);
    if (rc)
        dt_db_cost_model_free(out);
    return rc;
}

void dt_db_cost_model_free(dt_db_cost_model *m)
{
    if (!m)
        return;
    free((void *)m->op);
    free((void *)m->model);
    free((void *)m->metrics);
    *m = (dt_db_cost_model){0};
}
