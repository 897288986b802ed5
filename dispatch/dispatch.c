/* Dispatch tables: loading the schedule of a workload and finding a shape's box.
 *
 * Invariants (DT_ASSERT, checked in every build type):
 *   - a built table's boxes lie in the shape set, are disjoint and sorted
 *     by first shape; rows that break this are refused (DT_EINVAL) before
 *     the table exists, so the asserts check the refusal, not the input;
 *   - a lookup answers with a box of the table; a hit not flagged
 *     extrapolated is a shape of the set inside its box.
 * Covering every shape of the set is the tuner's invariant for what it
 * writes (tuner/select.c asserts it); a table loaded from a database may
 * have gaps (another writer, an import), and a shape in a gap is flagged
 * extrapolated and goes to the nearest box. */
#include "dispatch/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

/* By first shape: lo compared variable by variable (the entries past the
 * workload's variables are 0 in every box, so all of them can be). */
static int cmp_range(const void *a, const void *b)
{
    const dt_dispatch_range *x = a, *y = b;
    for (int v = 0; v < DT_MAX_VARS; v++)
        if (x->box.lo[v] != y->box.lo[v])
            return x->box.lo[v] < y->box.lo[v] ? -1 : 1;
    return 0;
}

/* The table invariant above (on the boxes just sorted: O(boxes x vars)). */
static void table_check(const dt_dispatch *d, size_t nrows)
{
    for (int i = 0; i < d->n; i++) {
        const dt_box *b = &d->r[i].box;
        for (int v = 0; v < d->w->nvars; v++)
            DT_ASSERT(0 <= b->lo[v] && b->lo[v] <= b->hi[v] && b->hi[v] < d->w->vars[v].dom.n,
                      "a dispatch box's intervals are lo <= hi inside the domains");
        for (int v = d->w->nvars; v < DT_MAX_VARS; v++)
            DT_ASSERT(b->lo[v] == 0 && b->hi[v] == 0,
                      "a dispatch box's entries past the workload's variables are 0");
        DT_ASSERT(i == 0 || dt_box_before(d->w, &d->r[i - 1].box, b),
                  "a dispatch table's boxes are sorted by first shape, no two starting together");
        DT_ASSERT(d->r[i].row < nrows, "a dispatch box names the row it came from");
    }
}

/* Disjointness: sorted neighbours with one variable, every pair otherwise. */
static int find_overlap(const dt_dispatch *d, int *i, int *j)
{
    for (*i = 0; *i < d->n; (*i)++)
        for (*j = *i + 1; *j < d->n; (*j)++) {
            if (dt_box_overlap(d->w, &d->r[*i].box, &d->r[*j].box))
                return 1;
            if (d->w->nvars <= 1)
                break;
        }
    return 0;
}

/* The boxes of one row: itself, or the boxes of a schema-2 run.  The one
 * reading of a stored row: lookups (dt_dispatch_load) and the database
 * check (dt_dispatch_check_schedule) both come here. */
static int row_boxes(const dt_workload *w, const dt_db_schedule *row, dt_box *out, int *n,
                     dt_err *e)
{
    if (!row->shape_lo || !row->shape_hi)
        return dt_errf(e, DT_EINVAL, "the range has no %s corner",
                       row->shape_lo ? "last" : "first");
    if (row->box || w->nvars <= 1) {
        *n = 1;
        return dt_box_parse(w, row->shape_lo, row->shape_hi, out, e);
    }
    /* a run: its ends need only be shapes of the set, in order */
    int64_t lo[DT_MAX_VARS], hi[DT_MAX_VARS];
    int in_lo = 0, in_hi = 0, rc;
    if ((rc = dt_shape_parse(w, row->shape_lo, lo, &in_lo, e)) ||
        (rc = dt_shape_parse(w, row->shape_hi, hi, &in_hi, e)))
        return rc;
    if (!in_lo || !in_hi)
        return dt_errf(e, DT_EINVAL, "shape %s is not in the workload's shape set",
                       in_lo ? row->shape_hi : row->shape_lo);
    int64_t a, z;
    dt_workload_shape_index(w, lo, &a, NULL);
    dt_workload_shape_index(w, hi, &z, NULL);
    if (z < a)
        return dt_errf(e, DT_EINVAL, "range %s..%s is reversed", row->shape_lo, row->shape_hi);
    *n = dt_box_from_run(w, a, z, out);
    return 0;
}

/* dt_dispatch_from_rows, saying which rows it refused: bad[0] the row that
 * does not parse, or with bad[1] the two rows that overlap (indices in
 * rows; SIZE_MAX when none). */
static int build(const dt_workload *w, int threads, const dt_db_schedule *rows, size_t n,
                 dt_dispatch **out, size_t bad[2], dt_err *e)
{
    *out = NULL;
    bad[0] = bad[1] = SIZE_MAX;
    dt_dispatch *d = calloc(1, sizeof *d);
    size_t cap = n * (w->nvars > 1 ? DT_BOX_RUN_MAX : 1);
    if (!d || !(d->w = dt_workload_clone(w)) ||
        !(d->r = calloc(cap ? cap : 1, sizeof *d->r))) {
        dt_dispatch_free(d);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    dt_workload_key(w, d->key, sizeof d->key);
    d->threads = threads;
    for (size_t i = 0; i < n; i++) {
        dt_box b[DT_BOX_RUN_MAX];
        int nb = 0;
        int rc = row_boxes(d->w, &rows[i], b, &nb, e);
        if (rc) {
            bad[0] = i;
            dt_dispatch_free(d);
            return rc;
        }
        int room = nb >= 1 && nb <= (w->nvars > 1 ? DT_BOX_RUN_MAX : 1) &&
                   (size_t)d->n + (size_t)nb <= cap;
        DT_ASSERT(room, "a stored row reads as 1..DT_BOX_RUN_MAX boxes, within the table's room");
        for (int k = 0; k < nb; k++) {
            dt_dispatch_range *r = &d->r[d->n++];
            r->box = b[k];
            if (nb == 1) {
                snprintf(r->shape_lo, sizeof r->shape_lo, "%s", rows[i].shape_lo);
                snprintf(r->shape_hi, sizeof r->shape_hi, "%s", rows[i].shape_hi);
            } else {
                dt_box_format(d->w, &b[k], r->shape_lo, sizeof r->shape_lo, r->shape_hi,
                              sizeof r->shape_hi);
            }
            r->kernel_id = rows[i].kernel_id;
            r->predicted_ns = rows[i].predicted_ns;
            r->measured_ns = rows[i].measured_ns;
            r->row = i;
        }
    }
    qsort(d->r, (size_t)d->n, sizeof *d->r, cmp_range);
    int i, j;
    if (find_overlap(d, &i, &j)) {
        int rc = dt_errf(e, DT_EINVAL, "ranges %s..%s and %s..%s overlap", d->r[i].shape_lo,
                         d->r[i].shape_hi, d->r[j].shape_lo, d->r[j].shape_hi);
        bad[0] = d->r[i].row < d->r[j].row ? d->r[i].row : d->r[j].row;
        bad[1] = d->r[i].row < d->r[j].row ? d->r[j].row : d->r[i].row;
        dt_dispatch_free(d);
        return rc;
    }
    table_check(d, n);
    *out = d;
    return 0;
}

int dt_dispatch_from_rows(const dt_workload *w, int threads, const dt_db_schedule *rows,
                          size_t n, dt_dispatch **out, dt_err *e)
{
    size_t bad[2];
    return build(w, threads, rows, n, out, bad, e);
}

/* "workload KEY, target T, N threads": which stored schedule. */
static void schedule_name(char *buf, size_t size, const char *key, const char *target,
                          int threads)
{
    int room = (int)size / 2;
    snprintf(buf, size, "workload %.*s, target %.*s, %d thread%s", room, key, room / 2, target,
             threads, threads == 1 ? "" : "s");
}

int dt_dispatch_load(dt_db *db, const char *workload_key, const char *target_key, int threads,
                     dt_dispatch **out, dt_err *e)
{
    *out = NULL;
    dt_workload *w = NULL;
    int rc = dt_workload_parse_key(workload_key, &w, e);
    if (rc)
        return rc;
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    dt_db_workload wrow = {0};
    dt_db_target trow = {0};
    dt_db_schedule *rows = NULL;
    size_t n = 0;
    if ((rc = dt_db_workload_get(db, key, &wrow, e))) {
        if (rc == DT_ENOTFOUND)
            dt_errf(e, rc, "workload %s has never been tuned in %s", key, dt_db_path(db));
        goto out;
    }
    if ((rc = dt_db_target_get(db, target_key, &trow, e))) {
        if (rc == DT_ENOTFOUND)
            dt_errf(e, rc, "target %s has never been tuned in %s", target_key, dt_db_path(db));
        goto out;
    }
    if ((rc = dt_db_schedule_list(db, wrow.id, trow.id, threads, &rows, &n, e)))
        goto out;
    if (threads == 0 && n > 0) {
        /* rows are ordered by threads: keep the highest count's */
        threads = rows[n - 1].threads;
        size_t first = n;
        while (first > 0 && rows[first - 1].threads == threads)
            first--;
        for (size_t i = 0; i < first; i++) {
            free((void *)rows[i].shape_lo);
            free((void *)rows[i].shape_hi);
        }
        memmove(rows, rows + first, (n - first) * sizeof *rows);
        n -= first;
        DT_ASSERT(n >= 1 && rows[0].threads == threads,
                  "the rows kept are those of the highest thread count");
    }
    if (n == 0) {
        if (threads)
            rc = dt_errf(e, DT_ENOTFOUND, "no schedule of %s for target %s at %d thread%s in %s",
                         key, target_key, threads, threads == 1 ? "" : "s", dt_db_path(db));
        else
            rc = dt_errf(e, DT_ENOTFOUND, "no schedule of %s for target %s in %s", key,
                         target_key, dt_db_path(db));
        goto out;
    }
    size_t bad[2];
    rc = build(w, threads, rows, n, out, bad, e);
    if (rc && rc != DT_ENOMEM && bad[0] < n) {
        /* the stored rows do not make a table: the database's text, not the
         * caller's, so damage (a runtime failure, not bad input) */
        char what[DT_ERR_MSG_MAX / 2], ids[64];
        schedule_name(what, sizeof what, key, target_key, threads);
        if (bad[1] < n)
            snprintf(ids, sizeof ids, "rows %lld and %lld", (long long)rows[bad[0]].id,
                     (long long)rows[bad[1]].id);
        else
            snprintf(ids, sizeof ids, "row %lld", (long long)rows[bad[0]].id);
        char msg[DT_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", e ? e->msg : "");
        rc = dt_errf(e, DT_EDB,
                     "database %.200s is damaged: schedules %s (%s) cannot be served: %.300s; "
                     "run 'dtune db check --db %.200s'",
                     dt_db_path(db), ids, what, msg, dt_db_path(db));
    }
out:
    dt_db_schedules_free(rows, n);
    dt_db_workload_free(&wrow);
    dt_db_target_free(&trow);
    dt_workload_free(w);
    return rc;
}

int dt_dispatch_check_schedule(const char *workload_key, const dt_db_schedule *rows, size_t n,
                               bool whole, dt_db_schedule_problem_fn report, void *ctx,
                               void *ud, dt_err *e)
{
    (void)ud;
    dt_workload *w = NULL;
    dt_err pe;
    char msg[DT_ERR_MSG_MAX];
    int rc = dt_workload_parse_key(workload_key, &w, &pe);
    if (rc == DT_ENOMEM)
        return dt_errf(e, rc, "%s", pe.msg);
    if (rc) {
        snprintf(msg, sizeof msg, "its workload's key does not parse: %.900s", pe.msg);
        report(ctx, 0, msg);
        return DT_OK;
    }
    bool sound = true;
    for (size_t i = 0; i < n; i++) {
        dt_box b[DT_BOX_RUN_MAX];
        int nb = 0;
        if ((rc = row_boxes(w, &rows[i], b, &nb, &pe)) == DT_ENOMEM)
            break;
        if (rc) {
            report(ctx, i, pe.msg);
            sound = false;
        }
        rc = DT_OK;
    }
    if (rc == DT_OK && sound && whole && n > 0) {
        /* each row reads; the table they make must too (a schema-2 run and
         * a box of several variables, which db/ cannot compare, may overlap) */
        dt_dispatch *d = NULL;
        size_t bad[2];
        rc = build(w, rows[0].threads, rows, n, &d, bad, &pe);
        dt_dispatch_free(d);
        if (rc && rc != DT_ENOMEM && bad[0] < n) {
            if (bad[1] < n)
                snprintf(msg, sizeof msg, "%.900s (it overlaps schedules row %lld)", pe.msg,
                         (long long)rows[bad[0]].id);
            else
                snprintf(msg, sizeof msg, "%s", pe.msg);
            report(ctx, bad[1] < n ? bad[1] : bad[0], msg);
            rc = DT_OK;
        }
    }
    dt_workload_free(w);
    if (rc)
        return dt_errf(e, rc, "reading a schedule of %s: %s", workload_key, pe.msg);
    return DT_OK;
}

void dt_dispatch_attach_reader(dt_db *db)
{
    dt_db_set_schedule_reader(db, dt_dispatch_check_schedule, NULL);
}

int dt_dispatch_find(const dt_dispatch *d, const int64_t *vals, dt_dispatch_hit *hit)
{
    if (d->n == 0)
        return DT_ENOTFOUND;
    const dt_workload *w = d->w;
    /* each variable's nearest domain index, once (dt_workload_shape_index's
     * rule); whether the shape is one of the set */
    int64_t iv[DT_MAX_VARS];
    int exact = 1;
    for (int v = 0; v < w->nvars; v++) {
        iv[v] = dt_domain_nearest(&w->vars[v].dom, vals[v]);
        exact &= w->vars[v].dom.values[iv[v]] == vals[v];
    }
    const dt_dispatch_range *r = NULL;
    if (w->nvars <= 1) {
        /* sorted, disjoint intervals: the last box with lo <= the index */
        int64_t x = w->nvars ? iv[0] : 0;
        int lo = 0, hi = d->n - 1;
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            if (d->r[mid].box.lo[0] <= x)
                lo = mid;
            else
                hi = mid - 1;
        }
        r = &d->r[lo];
        if (w->nvars && x < r->box.lo[0]) {
            exact = 0; /* before the first box */
        } else if (w->nvars && x > r->box.hi[0]) {
            exact = 0; /* in a gap or past the last box: the nearer neighbour */
            if (lo + 1 < d->n && d->r[lo + 1].box.lo[0] - x < x - r->box.hi[0])
                r = &d->r[lo + 1];
        }
    } else {
        int64_t best = INT64_MAX;
        for (int i = 0; i < d->n && best > 0; i++) {
            int64_t g = dt_box_gap(w, &d->r[i].box, iv);
            if (g < best) {
                best = g;
                r = &d->r[i];
            }
        }
        exact &= best == 0;
    }
    DT_ASSERT(r >= d->r && r < d->r + d->n, "a lookup answers with a box of the table");
    DT_ASSERT(!exact || dt_box_contains(w, &r->box, iv),
              "a lookup not flagged extrapolated is a shape of the set inside its box");
    DT_ASSERT(exact || w->nvars > 0, "with no variable the one shape is always exact");
    hit->range = r;
    hit->extrapolated = !exact;
    hit->shape_idx = dt_box_join(w, iv);
    return 0;
}

void dt_dispatch_free(dt_dispatch *d)
{
    if (!d)
        return;
    dt_workload_free(d->w);
    free(d->r);
    free(d);
}

int dt_dispatch_kernel_annotation(dt_db *db, int64_t id, const dt_workload *w,
                                  dt_annotation *out, dt_err *e)
{
    dt_db_kernel k = {0};
    int rc = dt_db_kernel_get(db, id, &k, e);
    if (rc == DT_ENOTFOUND)
        return dt_errf(e, rc, "no kernel %lld in %s", (long long)id, dt_db_path(db));
    if (rc)
        return rc;
    if (strcmp(k.op, w->op->name) != 0)
        rc = dt_errf(e, DT_EINVAL, "kernel %lld is a %s kernel; the workload is %s",
                     (long long)id, k.op, w->op->name);
    else if ((rc = dt_annotation_from_text(k.annotation, out, e)))
        dt_err_prefix(e, "kernel %lld", (long long)id);
    dt_db_kernel_free(&k);
    return rc;
}
