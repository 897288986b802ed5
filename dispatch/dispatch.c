/* Dispatch tables: loading the schedule of a workload and finding a shape's range.
 *
 * Invariants (asserted in Debug and sanitizer builds):
 *   - a built table's ranges are sorted and disjoint: for every range
 *     0 <= lo <= hi < nshapes of its workload, and r[i-1].hi < r[i].lo;
 *     rows that break this are refused (DT_EINVAL) before the table exists,
 *     so the asserts check the refusal, not the input;
 *   - a lookup answers with a range of the table; a hit not flagged
 *     extrapolated is a shape of the set inside its range (lo <= idx <= hi).
 * Covering every shape of the set is the tuner's invariant for what it
 * writes (tuner/select.c asserts it); a table loaded from a database may
 * have gaps (another writer, an import), and a shape in a gap is flagged
 * extrapolated and goes to the nearer neighbouring range. */
#include "dispatch/dispatch.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_range(const void *a, const void *b)
{
    const dt_dispatch_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The index of a stored shape text, which must be a shape of the set. */
static int shape_idx(const dt_workload *w, const char *text, int64_t *idx, dt_err *e)
{
    int64_t vals[DT_MAX_VARS];
    int in_domain = 0;
    int rc = dt_shape_parse(w, text, vals, &in_domain, e);
    if (rc)
        return rc;
    if (!in_domain || !dt_workload_shape_index(w, vals, idx, NULL))
        return dt_errf(e, DT_EINVAL, "shape %s is not in the workload's shape set", text);
    return 0;
}

#ifndef NDEBUG
/* The table invariant above. */
static int table_ok(const dt_dispatch *d)
{
    int64_t ns = dt_workload_nshapes(d->w);
    for (int i = 0; i < d->n; i++) {
        const dt_dispatch_range *r = &d->r[i];
        if (r->lo < 0 || r->lo > r->hi || r->hi >= ns || (i > 0 && d->r[i - 1].hi >= r->lo))
            return 0;
    }
    return 1;
}
#endif

int dt_dispatch_from_rows(const dt_workload *w, int threads, const dt_db_schedule *rows,
                          size_t n, dt_dispatch **out, dt_err *e)
{
    *out = NULL;
    dt_dispatch *d = calloc(1, sizeof *d);
    if (!d || !(d->w = dt_workload_clone(w)) ||
        !(d->r = calloc(n ? n : 1, sizeof *d->r))) {
        dt_dispatch_free(d);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    dt_workload_key(w, d->key, sizeof d->key);
    d->threads = threads;
    for (size_t i = 0; i < n; i++) {
        dt_dispatch_range *r = &d->r[i];
        int rc = shape_idx(w, rows[i].shape_lo, &r->lo, e);
        if (!rc)
            rc = shape_idx(w, rows[i].shape_hi, &r->hi, e);
        if (!rc && r->hi < r->lo)
            rc = dt_errf(e, DT_EINVAL, "range %s..%s is reversed", rows[i].shape_lo,
                         rows[i].shape_hi);
        if (rc) {
            dt_dispatch_free(d);
            return rc;
        }
        snprintf(r->shape_lo, sizeof r->shape_lo, "%s", rows[i].shape_lo);
        snprintf(r->shape_hi, sizeof r->shape_hi, "%s", rows[i].shape_hi);
        r->kernel_id = rows[i].kernel_id;
        r->predicted_ns = rows[i].predicted_ns;
        r->measured_ns = rows[i].measured_ns;
    }
    d->n = (int)n;
    qsort(d->r, n, sizeof *d->r, cmp_range);
    for (int i = 1; i < d->n; i++)
        if (d->r[i].lo <= d->r[i - 1].hi) {
            int rc = dt_errf(e, DT_EINVAL, "ranges %s..%s and %s..%s overlap",
                             d->r[i - 1].shape_lo, d->r[i - 1].shape_hi, d->r[i].shape_lo,
                             d->r[i].shape_hi);
            dt_dispatch_free(d);
            return rc;
        }
    assert(table_ok(d));
    *out = d;
    return 0;
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
    rc = dt_dispatch_from_rows(w, threads, rows, n, out, e);
out:
    dt_db_schedules_free(rows, n);
    dt_db_workload_free(&wrow);
    dt_db_target_free(&trow);
    dt_workload_free(w);
    return rc;
}

int dt_dispatch_find(const dt_dispatch *d, const int64_t *vals, dt_dispatch_hit *hit)
{
    if (d->n == 0)
        return DT_ENOTFOUND;
    int64_t idx;
    int exact = dt_workload_shape_index(d->w, vals, &idx, NULL);
    /* the last range with lo <= idx */
    int lo = 0, hi = d->n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (d->r[mid].lo <= idx)
            lo = mid;
        else
            hi = mid - 1;
    }
    const dt_dispatch_range *r = &d->r[lo];
    if (idx < r->lo) {
        exact = 0; /* before the first range */
    } else if (idx > r->hi) {
        exact = 0; /* in a gap or past the last range: the nearer neighbour */
        if (lo + 1 < d->n && d->r[lo + 1].lo - idx < idx - r->hi)
            r = &d->r[lo + 1];
    }
    assert(r >= d->r && r < d->r + d->n);
    assert(!exact || (r->lo <= idx && idx <= r->hi));
    hit->range = r;
    hit->extrapolated = !exact;
    hit->shape_idx = idx;
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
