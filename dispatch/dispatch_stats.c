/* A dispatch table's objective and loss from the records (see
 * dispatch_stats.h). */
#include "dispatch/dispatch_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const dt_dispatch *d;
    int64_t ns;
    const int64_t *disp;   /* [ns] dispatched kernel id */
    double *best, *dns;    /* [ns] fastest ok ns, dispatched kernel's ok ns */
    int64_t *bestk;        /* [ns] the fastest's kernel id */
    int64_t *failed;       /* kernel ids with a failed trial */
    size_t nfailed, cap;
    int pass, rc;
} stats_ctx;

static int is_failed(const stats_ctx *x, int64_t id)
{
    for (size_t i = 0; i < x->nfailed; i++)
        if (x->failed[i] == id)
            return 1;
    return 0;
}

static int on_record(const dt_db_measurement *m, void *ud)
{
    stats_ctx *x = ud;
    if (m->threads != x->d->threads)
        return 0;
    if (x->pass == 0) {
        if (m->status == DT_TRIAL_OK || is_failed(x, m->kernel_id))
            return 0;
        if (x->nfailed == x->cap) {
            size_t cap = x->cap ? 2 * x->cap : 16;
            int64_t *f = realloc(x->failed, cap * sizeof *f);
            if (!f) {
                x->rc = DT_ENOMEM;
                return DT_ENOMEM;
            }
            x->failed = f;
            x->cap = cap;
        }
        x->failed[x->nfailed++] = m->kernel_id;
        return 0;
    }
    if (m->status != DT_TRIAL_OK || !(m->min_ns > 0) || is_failed(x, m->kernel_id))
        return 0;
    int64_t vals[DT_MAX_VARS], s;
    int in_domain = 0;
    dt_err e2;
    if (dt_shape_parse(x->d->w, m->shape ? m->shape : "", vals, &in_domain, &e2) != 0 ||
        !in_domain || !dt_workload_shape_index(x->d->w, vals, &s, NULL) || s < 0 || s >= x->ns)
        return 0;
    if (m->min_ns < x->best[s]) {
        x->best[s] = m->min_ns;
        x->bestk[s] = m->kernel_id;
    }
    if (m->kernel_id == x->disp[s] && (isnan(x->dns[s]) || m->min_ns < x->dns[s]))
        x->dns[s] = m->min_ns;
    return 0;
}

static int count_distinct(const int64_t *ids, int64_t n)
{
    int c = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] <= 0)
            continue;
        int dup = 0;
        for (int64_t j = 0; j < i && !dup; j++)
            dup = ids[j] == ids[i];
        c += !dup;
    }
    return c;
}

int dt_dispatch_stats_load(dt_db *db, const dt_dispatch *d, const char *target_key,
                           dt_dispatch_stats *st, dt_err *e)
{
    memset(st, 0, sizeof *st);
    dt_db_workload wrow;
    dt_db_target trow;
    int rc = dt_db_workload_get(db, d->key, &wrow, e);
    if (rc)
        return rc;
    int64_t wid = wrow.id;
    dt_db_workload_free(&wrow);
    if ((rc = dt_db_target_get(db, target_key, &trow, e)))
        return rc;
    int64_t tid = trow.id;
    dt_db_target_free(&trow);

    int64_t ns = dt_workload_nshapes(d->w);
    st->shapes = ns;
    st->ranges = d->n;
    for (int i = 0; i < d->n; i++) {
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = d->r[j].kernel_id == d->r[i].kernel_id;
        if (!dup && st->nids < DT_DISPATCH_STATS_MAX_IDS)
            st->kernel_ids[st->nids++] = d->r[i].kernel_id;
        st->kernels += !dup;
    }
    int64_t *disp = calloc((size_t)ns, sizeof *disp), *bestk = calloc((size_t)ns, sizeof *bestk);
    double *w = malloc((size_t)ns * sizeof *w), *best = malloc((size_t)ns * sizeof *best),
           *dns = malloc((size_t)ns * sizeof *dns);
    stats_ctx x = {.d = d, .ns = ns, .disp = disp, .best = best, .dns = dns, .bestk = bestk};
    if (!disp || !bestk || !w || !best || !dns) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    double wsum = 0;
    for (int64_t s = 0; s < ns; s++) {
        int64_t vals[DT_MAX_VARS];
        dt_workload_shape_at(d->w, s, vals, &w[s]);
        wsum += w[s];
        best[s] = INFINITY;
        dns[s] = NAN;
    }
    for (int i = 0; i < d->n; i++)
        for (int64_t j = 0, nb = dt_box_nshapes(d->w, &d->r[i].box); j < nb; j++)
            disp[dt_box_shape(d->w, &d->r[i].box, j)] = d->r[i].kernel_id;
    dt_db_measurement_filter f = {.workload_id = wid, .target_id = tid};
    for (x.pass = 0; x.pass < 2 && !rc; x.pass++)
        rc = dt_db_measurement_list(db, &f, on_record, &x, e);
    if (x.rc)
        rc = dt_errf(e, x.rc, "out of memory");
    if (rc)
        goto out;
    double obj = 0, bo = 0, num = 0, den = 0;
    for (int64_t s = 0; s < ns; s++) {
        double ws = wsum > 0 ? w[s] / wsum : 0;
        st->unmeasured += isnan(dns[s]);
        obj += ws * dns[s];
        bo += isfinite(best[s]) ? ws * best[s] : NAN;
        if (!isnan(dns[s]) && isfinite(best[s])) {
            num += ws * dns[s];
            den += ws * best[s];
        }
    }
    st->objective_ns = st->unmeasured ? NAN : obj;
    st->best_objective_ns = bo;
    st->best_kernels = count_distinct(bestk, ns);
    st->loss = den > 0 ? num / den - 1 : NAN;
out:
    free(disp);
    free(bestk);
    free(w);
    free(best);
    free(dns);
    free(x.failed);
    return rc;
}
