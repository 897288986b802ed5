/* dt_db_merge: brings the targets, workloads, kernels, records, cost models
 * and schedules of another dtune database (tuned on another machine) into
 * this one, by natural keys, never by row ids, so that merging the same
 * source again adds nothing (docs/database.md, "Merge"). */
#include "db/db_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Source id -> destination id, filled in ascending source id order. */
typedef struct {
    int64_t (*p)[2];
    size_t n, cap;
} idmap;

static int idmap_add(idmap *m, int64_t from, int64_t to)
{
    void *g = dt_grow(m->p, &m->cap, m->n, sizeof m->p[0]);
    if (!g)
        return DT_ENOMEM;
    m->p = g;
    m->p[m->n][0] = from;
    m->p[m->n++][1] = to;
    return DT_OK;
}

/* 0 when from is not mapped (a row whose parent is missing in the source). */
static int64_t idmap_get(const idmap *m, int64_t from)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->p[mid][0] < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->p[lo][0] == from ? m->p[lo][1] : 0;
}

typedef struct {
    dt_db *dst, *src;
    dt_err *e;
    dt_db_merge_info *info;
    idmap targets, workloads, kernels;
} merge_ctx;

/* Copies the rows of a keyed table: sel reads the source (column 0 the id,
 * then the values ins takes as ?1..?ncols), ins inserts or ignores, find
 * (same parameters as ins, the key ones used) returns the destination id. */
static int copy_keyed(merge_ctx *c, const char *what, const char *sel, const char *ins,
                      const char *find, int ncols, idmap *map, int64_t *added)
{
    sqlite3_stmt *s = NULL, *i = NULL, *f = NULL;
    int rc = dt_db_prepare(c->src, sel, &s, c->e, what);
    if (rc == DT_OK)
        rc = dt_db_prepare(c->dst, ins, &i, c->e, what);
    if (rc == DT_OK)
        rc = dt_db_prepare(c->dst, find, &f, c->e, what);
    while (rc == DT_OK && (rc = dt_db_step_row(c->src, s, SQLITE_OK, c->e, what)) == DT_OK) {
        int b = SQLITE_OK;
        sqlite3_reset(i);
        sqlite3_reset(f);
        for (int k = 0; k < ncols; k++) {
            DT_BIND(b, sqlite3_bind_value(i, k + 1, sqlite3_column_value(s, k + 1)));
            if (k < sqlite3_bind_parameter_count(f))
                DT_BIND(b, sqlite3_bind_value(f, k + 1, sqlite3_column_value(s, k + 1)));
        }
        int r = b == SQLITE_OK ? sqlite3_step(i) : b;
        if (r != SQLITE_DONE) {
            rc = dt_db_fail(c->dst, r, c->e, "%s", what);
            break;
        }
        *added += sqlite3_changes(c->dst->sql);
        if ((rc = dt_db_step_row(c->dst, f, SQLITE_OK, c->e, what)) == DT_ENOTFOUND)
            rc = dt_errf(c->e, DT_EDB, "%s: a row just inserted is missing", what);
        if (rc == DT_OK && idmap_add(map, sqlite3_column_int64(s, 0),
                                     sqlite3_column_int64(f, 0)) != DT_OK)
            rc = dt_errf(c->e, DT_ENOMEM, "out of memory %s", what);
    }
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    sqlite3_finalize(s);
    sqlite3_finalize(i);
    sqlite3_finalize(f);
    return rc;
}

static int copy_catalog(merge_ctx *c)
{
    int rc = copy_keyed(c, "merging targets",
                        "SELECT id, key, isa, info, created_at FROM targets ORDER BY id",
                        "INSERT INTO targets (key, isa, info, created_at) VALUES (?1, ?2, ?3, ?4)"
                        " ON CONFLICT (key) DO NOTHING",
                        "SELECT id FROM targets WHERE key = ?1", 4, &c->targets,
                        &c->info->targets);
    if (rc == DT_OK)
        rc = copy_keyed(c, "merging workloads",
                        "SELECT id, key, op, shape_set, created_at FROM workloads ORDER BY id",
                        "INSERT INTO workloads (key, op, shape_set, created_at)"
                        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (key) DO NOTHING",
                        "SELECT id FROM workloads WHERE key = ?1", 4, &c->workloads,
                        &c->info->workloads);
    /* attrs and annotation are stored canonical on both sides */
    if (rc == DT_OK)
        rc = copy_keyed(c, "merging kernels",
                        "SELECT id, op, dtype, attrs, sketch, annotation, source_hash, created_at"
                        " FROM kernels ORDER BY id",
                        "INSERT INTO kernels (op, dtype, attrs, sketch, annotation, source_hash,"
                        " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                        " ON CONFLICT (op, dtype, attrs, sketch, annotation) DO NOTHING",
                        "SELECT id FROM kernels WHERE op = ?1 AND dtype = ?2 AND attrs = ?3"
                        " AND sketch = ?4 AND annotation = ?5",
                        7, &c->kernels, &c->info->kernels);
    return rc;
}

/* Records: by trial_uid (unique per trial, random, so one trial is one row
 * in every database it reaches). */
static int copy_measurements(merge_ctx *c)
{
    static const char what[] = "merging measurements";
    sqlite3_stmt *s = NULL, *i = NULL;
    int rc = dt_db_prepare(c->src,
                           "SELECT kernel_id, target_id, workload_id, shape, threads, status,"
                           " min_ns, median_ns, error, trial_uid, created_at FROM measurements"
                           " ORDER BY id",
                           &s, c->e, what);
    if (rc == DT_OK)
        rc = dt_db_prepare(c->dst,
                           "INSERT INTO measurements (kernel_id, target_id, workload_id, shape,"
                           " threads, status, min_ns, median_ns, error, trial_uid, created_at)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
                           " ON CONFLICT (trial_uid) DO NOTHING",
                           &i, c->e, what);
    while (rc == DT_OK && (rc = dt_db_step_row(c->src, s, SQLITE_OK, c->e, what)) == DT_OK) {
        int64_t k = idmap_get(&c->kernels, sqlite3_column_int64(s, 0)),
                t = idmap_get(&c->targets, sqlite3_column_int64(s, 1)),
                w = idmap_get(&c->workloads, sqlite3_column_int64(s, 2));
        if (!k || !t || !w)
            continue; /* a broken row of the source ('dtune db check' reports it) */
        sqlite3_reset(i);
        int b = sqlite3_bind_int64(i, 1, k);
        DT_BIND(b, sqlite3_bind_int64(i, 2, t));
        DT_BIND(b, sqlite3_bind_int64(i, 3, w));
        for (int col = 3; col < 11; col++)
            DT_BIND(b, sqlite3_bind_value(i, col + 1, sqlite3_column_value(s, col)));
        int r = b == SQLITE_OK ? sqlite3_step(i) : b;
        if (r != SQLITE_DONE) {
            rc = dt_db_fail(c->dst, r, c->e, "%s", what);
            break;
        }
        c->info->measurements += sqlite3_changes(c->dst->sql);
    }
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    sqlite3_finalize(s);
    sqlite3_finalize(i);
    return rc;
}

/* Cost models: a source model is copied when the destination has no
 * identical one (same target, op and blob) and it is newer than the
 * destination's newest for its (target, op), which it then becomes (the
 * newest is the one loaded: the highest id).  Older ones would only be
 * history. */
static int copy_cost_models(merge_ctx *c)
{
    static const char what[] = "merging cost models";
    sqlite3_stmt *s = NULL, *q = NULL, *i = NULL;
    int rc = dt_db_prepare(c->src,
                           "SELECT target_id, op, model, n_records, metrics, created_at"
                           " FROM cost_models ORDER BY id",
                           &s, c->e, what);
    if (rc == DT_OK)
        rc = dt_db_prepare(c->dst,
                           "SELECT EXISTS (SELECT 1 FROM cost_models WHERE target_id = ?1"
                           " AND op = ?2 AND model = ?3), (SELECT max(created_at) FROM cost_models"
                           " WHERE target_id = ?1 AND op = ?2)",
                           &q, c->e, what);
    if (rc == DT_OK)
        rc = dt_db_prepare(c->dst,
                           "INSERT INTO cost_models (target_id, op, model, n_records, metrics,"
                           " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           &i, c->e, what);
    while (rc == DT_OK && (rc = dt_db_step_row(c->src, s, SQLITE_OK, c->e, what)) == DT_OK) {
        int64_t t = idmap_get(&c->targets, sqlite3_column_int64(s, 0));
        if (!t)
            continue;
        sqlite3_reset(q);
        int b = sqlite3_bind_int64(q, 1, t);
        DT_BIND(b, sqlite3_bind_value(q, 2, sqlite3_column_value(s, 1)));
        DT_BIND(b, sqlite3_bind_value(q, 3, sqlite3_column_value(s, 2)));
        if ((rc = dt_db_step_row(c->dst, q, b, c->e, what)))
            break;
        bool same = sqlite3_column_int(q, 0) != 0;
        bool newer = sqlite3_column_type(q, 1) == SQLITE_NULL ||
                     sqlite3_column_int64(s, 5) > sqlite3_column_int64(q, 1);
        if (same || !newer)
            continue;
        sqlite3_reset(i);
        b = sqlite3_bind_int64(i, 1, t);
        for (int col = 1; col < 6; col++)
            DT_BIND(b, sqlite3_bind_value(i, col + 1, sqlite3_column_value(s, col)));
        int r = b == SQLITE_OK ? sqlite3_step(i) : b;
        if (r != SQLITE_DONE) {
            rc = dt_db_fail(c->dst, r, c->e, "%s", what);
            break;
        }
        c->info->cost_models++;
    }
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    sqlite3_finalize(s);
    sqlite3_finalize(q);
    sqlite3_finalize(i);
    return rc;
}

/* The mean of the rows' measured_ns (predicted_ns where unknown); NAN
 * when both are unknown for a row. */
static double mean_measured(dt_db *db, const char *key, const dt_db_schedule *rows, size_t n,
                            void *ud)
{
    (void)db, (void)key, (void)ud;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += isnan(rows[i].measured_ns) ? rows[i].predicted_ns : rows[i].measured_ns;
    return n ? sum / (double)n : NAN;
}

/* Whether two rows with the same corners serve the same shapes: a box and
 * a schema-2 run differ unless the shapes have one variable ("M=37", no
 * comma), where a run is a box (a migrated file's 1-D schedule is the same
 * as the one a new tune writes). */
static bool same_reading(const dt_db_schedule *a, const dt_db_schedule *b)
{
    return a->box == b->box || !strchr(a->shape_lo, ',');
}

static bool same_schedule(const dt_db_schedule *a, size_t na, const dt_db_schedule *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (a[i].kernel_id != b[i].kernel_id || strcmp(a[i].shape_lo, b[i].shape_lo) ||
            strcmp(a[i].shape_hi, b[i].shape_hi) || !same_reading(&a[i], &b[i]))
            return false;
    return true;
}

/* Replaces the destination's schedule of (w, t, threads) with rows. */
static int write_schedule(merge_ctx *c, int64_t w, int64_t t, int threads,
                          const dt_db_schedule *rows, size_t n)
{
    static const char what[] = "merging schedules";
    sqlite3_stmt *st;
    int rc = dt_db_prepare(c->dst,
                           "DELETE FROM schedules WHERE workload_id = ?1 AND target_id = ?2"
                           " AND threads = ?3",
                           &st, c->e, what);
    if (rc == DT_OK) {
        int b = sqlite3_bind_int64(st, 1, w);
        DT_BIND(b, sqlite3_bind_int64(st, 2, t));
        DT_BIND(b, sqlite3_bind_int(st, 3, threads));
        rc = dt_db_step_done(c->dst, st, b, c->e, what);
    }
    for (size_t i = 0; rc == DT_OK && i < n; i++) {
        if ((rc = dt_db_prepare(c->dst,
                                "INSERT INTO schedules (workload_id, target_id, shape_lo, shape_hi,"
                                " kernel_id, threads, predicted_ns, measured_ns, created_at, box)"
                                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                &st, c->e, what)))
            break;
        int b = sqlite3_bind_int64(st, 1, w);
        DT_BIND(b, sqlite3_bind_int64(st, 2, t));
        DT_BIND(b, dt_bind_text(st, 3, rows[i].shape_lo));
        DT_BIND(b, dt_bind_text(st, 4, rows[i].shape_hi));
        DT_BIND(b, sqlite3_bind_int64(st, 5, rows[i].kernel_id));
        DT_BIND(b, sqlite3_bind_int(st, 6, threads));
        DT_BIND(b, dt_bind_real(st, 7, rows[i].predicted_ns));
        DT_BIND(b, dt_bind_real(st, 8, rows[i].measured_ns));
        DT_BIND(b, sqlite3_bind_int64(st, 9, rows[i].created_at));
        DT_BIND(b, sqlite3_bind_int(st, 10, rows[i].box));
        rc = dt_db_step_done(c->dst, st, b, c->e, what);
    }
    return rc;
}

/* One schedule of the source, (w, t, threads) in source ids. */
static int merge_schedule(merge_ctx *c, int64_t sw, int64_t st_, int threads, const char *key,
                          dt_db_schedule_score_fn score, void *ud)
{
    int64_t w = idmap_get(&c->workloads, sw), t = idmap_get(&c->targets, st_);
    if (!w || !t)
        return DT_OK;
    dt_db_schedule *srows = NULL, *drows = NULL;
    size_t ns = 0, nd = 0;
    int rc = dt_db_schedule_list(c->src, sw, st_, threads, &srows, &ns, c->e);
    for (size_t i = 0; rc == DT_OK && i < ns; i++) {
        srows[i].workload_id = w;
        srows[i].target_id = t;
        if (!(srows[i].kernel_id = idmap_get(&c->kernels, srows[i].kernel_id)))
            goto out; /* names a kernel the source lacks: not copied */
    }
    if (rc == DT_OK)
        rc = dt_db_schedule_list(c->dst, w, t, threads, &drows, &nd, c->e);
    if (rc || ns == 0)
        goto out;
    if (nd == 0) {
        if ((rc = write_schedule(c, w, t, threads, srows, ns)) == DT_OK)
            c->info->schedules_added++;
    } else if (same_schedule(srows, ns, drows, nd)) {
        c->info->schedules_same++;
    } else {
        double a = score(c->dst, key, srows, ns, ud), b = score(c->dst, key, drows, nd, ud);
        if (isfinite(a) && (!isfinite(b) || a < b)) {
            if ((rc = write_schedule(c, w, t, threads, srows, ns)) == DT_OK)
                c->info->schedules_replaced++;
        } else {
            c->info->schedules_kept++;
        }
    }
out:
    dt_db_schedules_free(srows, ns);
    dt_db_schedules_free(drows, nd);
    return rc;
}

static int copy_schedules(merge_ctx *c, dt_db_schedule_score_fn score, void *ud)
{
    static const char what[] = "merging schedules";
    sqlite3_stmt *s = NULL;
    int rc = dt_db_prepare(c->src,
                           "SELECT DISTINCT s.workload_id, s.target_id, s.threads, w.key"
                           " FROM schedules s JOIN workloads w ON w.id = s.workload_id"
                           " ORDER BY 1, 2, 3",
                           &s, c->e, what);
    while (rc == DT_OK && (rc = dt_db_step_row(c->src, s, SQLITE_OK, c->e, what)) == DT_OK)
        rc = merge_schedule(c, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                            sqlite3_column_int(s, 2), dt_col_text(s, 3), score, ud);
    if (rc == DT_ENOTFOUND)
        rc = DT_OK;
    sqlite3_finalize(s);
    return rc;
}

int dt_db_merge(dt_db *db, const char *src_path, dt_db_schedule_score_fn score, void *ud,
                dt_db_merge_info *out, dt_err *e)
{
    *out = (dt_db_merge_info){0};
    int rc = dt_db_require_writable(db, e, "merging");
    if (rc)
        return rc;
    struct stat a, b;
    if (stat(src_path, &a) == 0 && stat(db->path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return dt_errf(e, DT_EINVAL, "cannot merge %s into itself", src_path);
    dt_db *src;
    dt_err e2;
    if ((rc = dt_db_open(src_path, DT_DB_READONLY, &src, &e2)))
        return dt_errf(e, rc, "cannot merge %s: %s", src_path, e2.msg);
    /* the source's schedules are checked as the destination reads them */
    dt_db_set_schedule_reader(src, db->reader, db->reader_ud);
    merge_ctx c = {.dst = db, .src = src, .e = e, .info = out};
    /* one read transaction on the source: one consistent state of it */
    rc = dt_db_exec(src, "BEGIN", e, "reading the source");
    /* a damaged source is not merged: its rows would be copied as they are
     * (JSON that does not parse, impossible times) or not at all (pages
     * SQLite cannot read), and the destination would inherit the damage.
     * Checked inside the read transaction: what is checked is what is
     * copied. */
    if (rc == DT_OK) {
        char doing[DT_ERR_MSG_MAX / 2];
        snprintf(doing, sizeof doing, "merge %s", src_path);
        rc = dt_db_require_sound(src, doing, NULL, NULL, e);
    }
    if (rc == DT_OK)
        rc = dt_db_begin(db, e);
    if (rc == DT_OK) {
        rc = copy_catalog(&c);
        if (rc == DT_OK)
            rc = copy_measurements(&c);
        if (rc == DT_OK)
            rc = copy_cost_models(&c);
        if (rc == DT_OK)
            rc = copy_schedules(&c, score ? score : mean_measured, ud);
        if (rc == DT_OK)
            rc = dt_db_commit(db, e);
        else
            dt_db_rollback(db, NULL);
    }
    if (rc)
        *out = (dt_db_merge_info){0};
    free(c.targets.p);
    free(c.workloads.p);
    free(c.kernels.p);
    dt_db_close(src);
    return rc;
}
