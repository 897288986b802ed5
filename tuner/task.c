/* Tasks: the in-memory state of one workload's search (see task.h). */
#include "tuner/task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "measure/trial.h"
#include "tuner/measurer.h"

int dt_task_init(dt_task *t, const char *name, const dt_workload *w, double count, int threads,
                 dt_err *e)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    dt_workload_key(w, t->key, sizeof t->key);
    t->count = count > 0 ? count : 1;
    t->threads = threads;
    t->objective = t->best_objective = INFINITY;
    t->nshapes = dt_workload_nshapes(w);
    if (t->nshapes < 1 || t->nshapes > INT32_MAX)
        return dt_errf(e, DT_EINVAL, "%s: %lld shapes", t->key, (long long)t->nshapes);
    t->w = dt_workload_clone(w);
    t->weight = calloc((size_t)t->nshapes, sizeof *t->weight);
    t->flops = calloc((size_t)t->nshapes, sizeof *t->flops);
    t->dims = calloc((size_t)t->nshapes * DT_MAX_DIMS, sizeof *t->dims);
    if (!t->w || !t->weight || !t->flops || !t->dims) {
        dt_task_free(t);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    double sum = 0;
    for (int64_t s = 0; s < t->nshapes; s++) {
        int64_t vals[DT_MAX_VARS];
        dt_workload_shape_at(t->w, s, vals, &t->weight[s]);
        int rc = dt_workload_dims(t->w, vals, t->dims + s * DT_MAX_DIMS, e);
        if (rc) {
            dt_task_free(t);
            return rc;
        }
        t->flops[s] = t->w->op->flops(t->dims + s * DT_MAX_DIMS, t->w->attrs);
        sum += t->weight[s];
    }
    for (int64_t s = 0; s < t->nshapes; s++)
        t->weight[s] = sum > 0 ? t->weight[s] / sum : 1.0 / (double)t->nshapes;
    return 0;
}

void dt_task_free(dt_task *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nk; i++) {
        free(t->k[i].m);
        free(t->k[i].pred);
    }
    free(t->k);
    dt_workload_free(t->w);
    free(t->weight);
    free(t->flops);
    free(t->dims);
    memset(t, 0, sizeof *t);
}

int dt_task_find(const dt_task *t, const dt_annotation *a)
{
    for (int i = t->nk - 1; i >= 0; i--)
        if (dt_annotation_equal(&t->k[i].a, a))
            return i;
    return -1;
}

int dt_task_add(dt_task *t, const dt_annotation *a, int64_t id, dt_err *e)
{
    if (t->nk == t->kcap) {
        int cap = t->kcap ? 2 * t->kcap : 64;
        dt_tkernel *k = realloc(t->k, (size_t)cap * sizeof *k);
        if (!k)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        t->k = k;
        t->kcap = cap;
    }
    t->k[t->nk] = (dt_tkernel){.a = *a, .id = id};
    return t->nk++;
}

int dt_task_record(dt_task *t, int k, int64_t s, double ns)
{
    dt_tkernel *kk = &t->k[k];
    for (int i = 0; i < kk->nm; i++)
        if (kk->m[i].shape == s) { /* a repeat keeps the better time */
            if (ns < kk->m[i].ns)
                kk->m[i].ns = (float)ns;
            return 0;
        }
    if (kk->nm == kk->cap) {
        int cap = kk->cap ? 2 * kk->cap : 4;
        dt_tmeas *m = realloc(kk->m, (size_t)cap * sizeof *m);
        if (!m)
            return DT_ENOMEM;
        kk->m = m;
        kk->cap = cap;
    }
    kk->m[kk->nm++] = (dt_tmeas){(int32_t)s, isfinite(ns) && ns > 0 ? (float)ns : INFINITY};
    if (!(isfinite(ns) && ns > 0))
        kk->failed = 1;
    return 0;
}

double dt_task_measured(const dt_task *t, int k, int64_t s)
{
    const dt_tkernel *kk = &t->k[k];
    for (int i = 0; i < kk->nm; i++)
        if (kk->m[i].shape == s)
            return kk->m[i].ns;
    return NAN;
}

double dt_task_known(const dt_task *t, int k, int64_t s)
{
    const dt_tkernel *kk = &t->k[k];
    if (kk->failed)
        return INFINITY;
    double m = dt_task_measured(t, k, s);
    if (!isnan(m))
        return m;
    return kk->pred ? kk->pred[s] : INFINITY;
}

int dt_task_topk(const dt_task *t, int64_t s, int k, int *out, double *val)
{
    double v16[16];
    if (k > 16)
        k = 16;
    if (!val)
        val = v16;
    int n = 0;
    for (int j = 0; j < t->nk && k > 0; j++) {
        double v = dt_task_known(t, j, s);
        if (!isfinite(v) || (n == k && v >= val[k - 1]))
            continue;
        int i = n < k ? n++ : k - 1; /* insertion from the end of the list */
        while (i > 0 && val[i - 1] > v) {
            val[i] = val[i - 1];
            out[i] = out[i - 1];
            i--;
        }
        val[i] = v;
        out[i] = j;
    }
    return n;
}

double dt_task_best(const dt_task *t, double *best, int *arg)
{
    for (int64_t s = 0; s < t->nshapes; s++) {
        best[s] = INFINITY;
        if (arg)
            arg[s] = -1;
    }
    for (int k = 0; k < t->nk; k++) {
        const dt_tkernel *kk = &t->k[k];
        if (kk->failed)
            continue;
        if (kk->pred)
            for (int64_t s = 0; s < t->nshapes; s++)
                if (kk->pred[s] < best[s] && isnan(dt_task_measured(t, k, s))) {
                    best[s] = kk->pred[s];
                    if (arg)
                        arg[s] = k;
                }
        for (int i = 0; i < kk->nm; i++) {
            int64_t s = kk->m[i].shape;
            if (kk->m[i].ns < best[s]) {
                best[s] = kk->m[i].ns;
                if (arg)
                    arg[s] = k;
            }
        }
    }
    double obj = 0;
    for (int64_t s = 0; s < t->nshapes; s++)
        obj += t->weight[s] * best[s];
    return obj;
}

/* ---- loading the records ------------------------------------------------ */

typedef struct {
    dt_task *t;
    dt_db *db;
    int64_t *ids;   /* kernel ids seen, and their task index (-1: unusable) */
    int *idx;
    int nids, cap;
    int cores;      /* the target's, for dt_time_possible */
    int impossible; /* ok records with a time no CPU could reach: skipped */
    int rc;
    dt_err *e;
} loader;

static int kernel_index(loader *l, int64_t kernel_id)
{
    for (int i = l->nids - 1; i >= 0; i--)
        if (l->ids[i] == kernel_id)
            return l->idx[i];
    int k = -1;
    dt_db_kernel row;
    dt_err e2;
    if (dt_db_kernel_get(l->db, kernel_id, &row, &e2) == 0) {
        dt_annotation a;
        if (dt_annotation_from_text(row.annotation, &a, &e2) == 0 &&
            a.threads == l->t->threads) {
            k = dt_task_find(l->t, &a);
            if (k < 0)
                k = dt_task_add(l->t, &a, kernel_id, l->e);
        }
        dt_db_kernel_free(&row);
    }
    if (k < -1)
        return k; /* out of memory */
    if (l->nids == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        int64_t *ids = realloc(l->ids, (size_t)cap * sizeof *ids);
        int *idx = ids ? realloc(l->idx, (size_t)cap * sizeof *idx) : NULL;
        if (ids)
            l->ids = ids;
        if (!idx)
            return DT_ENOMEM;
        l->idx = idx;
        l->cap = cap;
    }
    l->ids[l->nids] = kernel_id;
    l->idx[l->nids++] = k;
    return k;
}

static int load_one(const dt_db_measurement *m, void *ud)
{
    loader *l = ud;
    if (m->threads != l->t->threads)
        return 0;
    int k = kernel_index(l, m->kernel_id);
    if (k < -1) {
        l->rc = k;
        return k;
    }
    if (k < 0)
        return 0;
    int64_t vals[DT_MAX_VARS], s;
    int in_domain = 0;
    dt_err e2;
    if (dt_shape_parse(l->t->w, m->shape ? m->shape : "", vals, &in_domain, &e2) != 0 ||
        !in_domain || !dt_workload_shape_index(l->t->w, vals, &s, NULL))
        return 0;
    double ns = m->status == DT_TRIAL_OK ? m->min_ns : INFINITY;
    if (m->status == DT_TRIAL_OK) {
        const dt_workload *w = l->t->w;
        double flops = w->op->flops(l->t->dims + s * DT_MAX_DIMS, w->attrs);
        int cores = m->threads > l->cores ? m->threads : l->cores;
        if (!dt_time_possible(ns, flops, w->dtype, cores)) {
            /* a lying worker's time: not a measurement (the kernel is not
             * failed either: it may be measured again) */
            l->impossible++;
            return 0;
        }
    }
    if (dt_task_record(l->t, k, s, ns)) {
        l->rc = DT_ENOMEM;
        return DT_ENOMEM;
    }
    l->t->trials++;
    l->t->resumed++;
    return 0;
}

int dt_task_attach(dt_task *t, dt_db *db, const dt_target *tg, const char *target_key,
                   dt_err *e)
{
    int rc = dt_measurer_register(db, tg, target_key, t->w, &t->target_id, &t->workload_id, e);
    if (rc)
        return rc;
    loader l = {.t = t, .db = db, .e = e};
    if (tg)
        l.cores = tg->cores > tg->logical_cpus ? tg->cores : tg->logical_cpus;
    dt_db_measurement_filter f = {.workload_id = t->workload_id, .target_id = t->target_id};
    rc = dt_db_measurement_list(db, &f, load_one, &l, e);
    if (l.impossible)
        dt_log_warn("tune: %s: %d stored record%s with an impossible time skipped (a worker "
                    "fault; `dtune db check` lists them)",
                    t->name, l.impossible, l.impossible == 1 ? "" : "s");
    if (l.rc)
        rc = l.rc == DT_ENOMEM ? dt_errf(e, DT_ENOMEM, "out of memory") : l.rc;
    free(l.ids);
    free(l.idx);
    return rc;
}
