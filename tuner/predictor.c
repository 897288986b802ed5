/* The tuner's cost model: training rows, XGBoost f_MK, predictions (see predictor.h). */
#include "tuner/predictor.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "measure/trial.h"

/* (op, dtype) -> "op" + ":" + the dtype row's key text, none for the
 * dtype keys omit (f32): the names stored in cost_models stay as they were */
void dt_costmodel_name(const char *op, dt_dtype dtype, char *buf, size_t n)
{
    const dt_dtype_row *r = dt_dtype_info(dtype);
    const char *key = r ? r->key : dt_dtype_name(dtype);
    snprintf(buf, n, "%s%s%s", op, key[0] ? ":" : "", key);
}

void dt_predictor_init(dt_predictor *p, const char *op, dt_dtype dtype, const dt_target *tg,
                       int64_t target_id)
{
    memset(p, 0, sizeof *p);
    dt_costmodel_name(op, dtype, p->op, sizeof p->op);
    snprintf(p->opname, sizeof p->opname, "%s", op);
    p->dtype = dtype;
    p->tg = *tg;
    p->target_id = target_id;
    dt_xgb_params_default(&p->params);
    /* a few hundred to a few thousand rows: shallower trees generalise better */
    p->params.max_depth = 6;
    p->params.eta = 0.2;
    p->params.rounds = 120;
}

void dt_predictor_free(dt_predictor *p)
{
    dt_xgb_free(p->costmodel);
    free(p->rows);
    memset(p, 0, sizeof *p);
}

static dt_cm_row *new_row(dt_predictor *p, dt_err *e)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 1024;
        dt_cm_row *r = realloc(p->rows, (size_t)cap * sizeof *r);
        if (!r) {
            dt_errf(e, DT_ENOMEM, "out of memory");
            return NULL;
        }
        p->rows = r;
        p->cap = cap;
    }
    return &p->rows[p->n];
}

/* Fills a row; 1 if usable, 0 if not (no work, bad label), < 0 on OOM. */
static int fill_row(dt_predictor *p, const dt_workload *w, const int64_t *dims,
                    const dt_annotation *a, double ns, int64_t wid, int32_t shape, dt_err *e)
{
    dt_cm_point pt;
    dt_err e2;
    if (!(ns > 0) || !isfinite(ns) ||
        dt_cm_point_make(w->op, w->attrs, dims, a, &p->tg, &pt, &e2) != 0)
        return 0;
    int cores = p->tg.cores > p->tg.logical_cpus ? p->tg.cores : p->tg.logical_cpus;
    if (a->threads > cores)
        cores = a->threads;
    double label = dt_cm_label(&pt, ns);
    /* a time no CPU could reach (a lying worker's, stored before the pool
     * refused them) is no label: one such row would make every training
     * fail (XGBoost refuses a non-finite label) or skew the model */
    if (!dt_time_possible(ns, pt.flops, p->dtype, cores) || !isfinite(label) ||
        !isfinite((float)label)) {
        p->impossible++;
        return 0;
    }
    dt_cm_row *r = new_row(p, e);
    if (!r)
        return DT_ENOMEM;
    memcpy(r->x, pt.x, sizeof r->x);
    r->label = (float)label;
    r->flops = pt.flops;
    r->adapt = pt.adapt.total;
    r->min_ns = ns;
    r->workload_id = wid;
    r->shape = shape;
    p->n++;
    return 1;
}

int dt_predictor_add(dt_predictor *p, const dt_task *t, int k, int64_t s, double ns, dt_err *e)
{
    int rc = fill_row(p, t->w, t->dims + s * DT_MAX_DIMS, &t->k[k].a, ns, t->workload_id,
                      (int32_t)s, e);
    return rc < 0 ? rc : 0;
}

/* ---- loading from the database ---------------------------------------------- */

typedef struct {
    int64_t id;
    void *v; /* dt_workload* or dt_annotation* (NULL: unusable) */
} cache_entry;

typedef struct {
    dt_predictor *p;
    dt_db *db;
    cache_entry *wl, *kn;
    int nwl, nkn;
    int rc;
    dt_err *e;
} load_ctx;

static int cache_put(cache_entry **c, int *n, int64_t id, void *v)
{
    cache_entry *g = realloc(*c, (size_t)(*n + 1) * sizeof *g);
    if (!g)
        return DT_ENOMEM;
    *c = g;
    g[(*n)++] = (cache_entry){id, v};
    return 0;
}

static int cache_get(cache_entry *c, int n, int64_t id, void **v)
{
    for (int i = n - 1; i >= 0; i--)
        if (c[i].id == id) {
            *v = c[i].v;
            return 1;
        }
    return 0;
}

static dt_workload *load_workload(load_ctx *l, int64_t id)
{
    void *v;
    if (cache_get(l->wl, l->nwl, id, &v))
        return v;
    dt_workload *w = NULL;
    dt_db_workload row;
    dt_err e2;
    if (dt_db_workload_get_by_id(l->db, id, &row, &e2) == 0) {
        if (row.op && strcmp(row.op, l->p->opname) == 0 &&
            dt_workload_parse_key(row.key, &w, &e2) != 0)
            w = NULL;
        if (w && w->dtype != l->p->dtype) { /* another dtype: another cost model */
            dt_workload_free(w);
            w = NULL;
        }
        dt_db_workload_free(&row);
    }
    if (cache_put(&l->wl, &l->nwl, id, w)) {
        dt_workload_free(w);
        l->rc = DT_ENOMEM;
        return NULL;
    }
    return w;
}

static dt_annotation *load_kernel(load_ctx *l, int64_t id)
{
    void *v;
    if (cache_get(l->kn, l->nkn, id, &v))
        return v;
    dt_annotation *a = malloc(sizeof *a);
    dt_db_kernel row;
    dt_err e2;
    int ok = 0;
    if (a && dt_db_kernel_get(l->db, id, &row, &e2) == 0) {
        ok = dt_annotation_from_text(row.annotation, a, &e2) == 0;
        dt_db_kernel_free(&row);
    }
    if (!ok) {
        free(a);
        a = NULL;
    }
    if (cache_put(&l->kn, &l->nkn, id, a)) {
        free(a);
        l->rc = DT_ENOMEM;
        return NULL;
    }
    return a;
}

static int load_row(const dt_db_measurement *m, void *ud)
{
    load_ctx *l = ud;
    dt_workload *w = load_workload(l, m->workload_id);
    dt_annotation *ka = w ? load_kernel(l, m->kernel_id) : NULL;
    if (l->rc)
        return l->rc;
    if (!w)
        return 0; /* another op */
    if (!ka) {
        l->p->skipped++;
        return 0;
    }
    dt_annotation a = *ka;
    if (m->threads > 0)
        a.threads = m->threads;
    int64_t vals[DT_MAX_VARS], dims[DT_MAX_DIMS], s = -1;
    int in_domain = 0;
    dt_err e2;
    if (dt_shape_parse(w, m->shape ? m->shape : "", vals, &in_domain, &e2) != 0 ||
        dt_workload_dims(w, vals, dims, &e2) != 0) {
        l->p->skipped++;
        return 0;
    }
    if (!in_domain || !dt_workload_shape_index(w, vals, &s, NULL))
        s = -1;
    int rc = fill_row(l->p, w, dims, &a, m->min_ns, m->workload_id, (int32_t)s, l->e);
    if (rc < 0)
        l->rc = rc;
    else if (rc == 0 && m->min_ns > 0 && isfinite(m->min_ns))
        l->p->skipped++; /* no features or no label for it */
    return rc < 0 ? rc : 0;
}

int dt_predictor_load(dt_predictor *p, dt_db *db, dt_err *e)
{
    load_ctx l = {.p = p, .db = db, .e = e};
    dt_db_measurement_filter f = {.target_id = p->target_id, .ok_only = true};
    int before = p->impossible;
    int rc = dt_db_measurement_list(db, &f, load_row, &l, e);
    if (p->impossible > before)
        dt_log_warn("cost model %s: %d stored record%s with an impossible time skipped (not "
                    "trained on; `dtune db check` lists them)",
                    p->op, p->impossible - before, p->impossible - before == 1 ? "" : "s");
    if (l.rc)
        rc = l.rc == DT_ENOMEM ? dt_errf(e, DT_ENOMEM, "out of memory") : l.rc;
    for (int i = 0; i < l.nwl; i++)
        dt_workload_free(l.wl[i].v);
    for (int i = 0; i < l.nkn; i++)
        free(l.kn[i].v);
    free(l.wl);
    free(l.kn);
    if (rc)
        return rc;
    /* the latest stored model: a warm start until this run trains its own */
    dt_db_cost_model stored;
    dt_err e2;
    if (dt_db_cost_model_load_latest(db, p->target_id, p->op, &stored, &e2) == 0) {
        dt_xgb *m = NULL;
        if (dt_xgb_load(stored.model, stored.model_size, &m, &e2) == 0 &&
            dt_xgb_bind(m, dt_cm_column_names(), DT_CM_NCOLS, &e2) > 0)
            p->costmodel = m;
        else
            dt_xgb_free(m);
        dt_db_cost_model_free(&stored);
    }
    return 0;
}

/* ---- training and prediction ---------------------------------------------------- */

static int train_rows(const dt_predictor *p, const int *sel, int n, dt_xgb **out, dt_err *e)
{
    float *X = malloc((size_t)n * DT_CM_NCOLS * sizeof *X), *y = malloc((size_t)n * sizeof *y);
    int rc;
    if (!X || !y) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    } else {
        for (int i = 0; i < n; i++) {
            const dt_cm_row *r = &p->rows[sel ? sel[i] : i];
            memcpy(X + (size_t)i * DT_CM_NCOLS, r->x, sizeof r->x);
            y[i] = r->label;
        }
        rc = dt_xgb_train(X, y, n, DT_CM_NCOLS, &p->params, out, e);
        if (!rc && (rc = dt_xgb_set_names(*out, dt_cm_column_names(), DT_CM_NCOLS, e))) {
            dt_xgb_free(*out);
            *out = NULL;
        }
    }
    free(X);
    free(y);
    return rc;
}

int dt_predictor_train(dt_predictor *p, int *trained, dt_err *e)
{
    if (trained)
        *trained = 0;
    if (p->n < DT_PREDICTOR_MIN_ROWS || p->n == p->trained_rows)
        return 0;
    dt_xgb *m = NULL;
    int rc = train_rows(p, NULL, p->n, &m, e);
    if (rc)
        return rc;
    dt_xgb_free(p->costmodel);
    p->costmodel = m;
    p->trained_rows = p->n;
    if (trained)
        *trained = 1;
    return 0;
}

int dt_predictor_predict(dt_predictor *p, const dt_task *t, const dt_annotation *a,
                         const int64_t *idx, int n, float *out, dt_err *e)
{
    if (n <= 0)
        return 0;
    float *X = malloc((size_t)n * DT_CM_NCOLS * sizeof *X);
    float *f = malloc((size_t)n * sizeof *f);
    dt_cm_point *pts = malloc((size_t)n * sizeof *pts);
    int rc = 0;
    if (!X || !f || !pts) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if ((rc = dt_cm_point_make(t->w->op, t->w->attrs, t->dims + idx[i] * DT_MAX_DIMS, a,
                                   &p->tg, &pts[i], e)))
            goto out;
        memcpy(X + (size_t)i * DT_CM_NCOLS, pts[i].x, sizeof pts[i].x);
        f[i] = 1.0f;
    }
    if (p->costmodel && (rc = dt_xgb_predict(p->costmodel, X, n, f, e)))
        goto out;
    for (int i = 0; i < n; i++) {
        double fm = f[i] > DT_PREDICTOR_FLOOR ? f[i] : DT_PREDICTOR_FLOOR;
        out[i] = (float)dt_cm_time_ns(&pts[i], fm);
    }
out:
    free(X);
    free(f);
    free(pts);
    return rc;
}

int dt_predictor_predict_kernel(dt_predictor *p, dt_task *t, int k, dt_err *e)
{
    dt_tkernel *kk = &t->k[k];
    if (!kk->pred && !(kk->pred = malloc((size_t)t->nshapes * sizeof *kk->pred)))
        return dt_errf(e, DT_ENOMEM, "out of memory");
    int64_t *idx = malloc((size_t)t->nshapes * sizeof *idx);
    if (!idx)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int64_t s = 0; s < t->nshapes; s++)
        idx[s] = s;
    int rc = dt_predictor_predict(p, t, &kk->a, idx, (int)t->nshapes, kk->pred, e);
    free(idx);
    return rc;
}

/* ---- quality ----------------------------------------------------------------------- */

int dt_predictor_evaluate(const dt_predictor *p, double holdout, uint64_t seed, dt_quality *q,
                          dt_err *e)
{
    int n = p->n, h = holdout > 0 ? (int)floor(holdout * n + 0.5) : 0;
    if (h > n - 1)
        h = n > 0 ? n - 1 : 0;
    dt_quality_none(q, n, h);
    /* too few held-out pairs for any measure, or too few rows to train on */
    if ((int64_t)h * (h - 1) / 2 < DT_TAU_MIN_PAIRS || n - h < DT_PREDICTOR_MIN_ROWS)
        return 0;
    int *perm = malloc((size_t)n * sizeof *perm);
    float *X = malloc((size_t)h * DT_CM_NCOLS * sizeof *X), *f = malloc((size_t)h * sizeof *f);
    dt_quality_point *pts = malloc((size_t)h * sizeof *pts);
    dt_xgb *m = NULL;
    int rc = 0;
    if (!perm || !X || !f || !pts) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        perm[i] = i;
    dt_rng rng;
    dt_rng_seed(&rng, seed);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(dt_rng_next(&rng) % (uint64_t)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    /* perm[0..h) held out, perm[h..n) trained on */
    if ((rc = train_rows(p, perm + h, n - h, &m, e)))
        goto out;
    for (int i = 0; i < h; i++)
        memcpy(X + (size_t)i * DT_CM_NCOLS, p->rows[perm[i]].x, sizeof p->rows->x);
    if ((rc = dt_xgb_predict(m, X, h, f, e)))
        goto out;
    for (int i = 0; i < h; i++) {
        const dt_cm_row *r = &p->rows[perm[i]];
        /* as dt_predictor_predict: a model extrapolating to <= 0 means "very slow" */
        double fm = f[i] > DT_PREDICTOR_FLOOR ? f[i] : DT_PREDICTOR_FLOOR;
        pts[i] = (dt_quality_point){r->workload_id, r->shape, r->flops,
                                    r->flops / (fm * r->adapt), r->min_ns};
    }
    rc = dt_quality_of(pts, h, q, e);
out:
    dt_xgb_free(m);
    free(perm);
    free(X);
    free(f);
    free(pts);
    return rc;
}

int dt_predictor_save(const dt_predictor *p, dt_db *db, const char *metrics_json, dt_err *e)
{
    if (!p->costmodel || p->trained_rows == 0)
        return 0;
    void *blob = NULL;
    size_t len = 0;
    int rc = dt_xgb_save(p->costmodel, &blob, &len, e);
    if (!rc)
        rc = dt_db_cost_model_save(db, p->target_id, p->op, blob, len, p->trained_rows,
                                   metrics_json, NULL, e);
    free(blob);
    return rc;
}
