/* XGBoost wrapper and ranking measures; see xgb.h. */
#include "costmodel/xgb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

struct dt_xgb {
    BoosterHandle h;
    int ncols;
    int bound_cols; /* 0: rows are the model's own columns; else columns of a bound row */
    int *col_of;    /* bound: for each model column, its row column or -1 (missing) */
};

void dt_xgb_params_default(dt_xgb_params *p)
{
    p->max_depth = 6;
    p->eta = 0.3;
    p->rounds = 100;
    p->min_child_weight = 1;
    p->lambda = 1;
    p->seed = 0;
}

/* Error with XGBoost's last message. */
static int xgb_fail(dt_err *e, const char *what)
{
    const char *m = XGBGetLastError();
    return dt_errf(e, DT_EUNSUPPORTED, "xgboost: %s: %s", what, m && *m ? m : "unknown error");
}

#define XGB_CHECK(call, what)                                                                    \
    do {                                                                                         \
        if ((call) != 0) {                                                                       \
            rc = xgb_fail(e, what);                                                              \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

static int set_param(BoosterHandle h, const char *k, const char *v, dt_err *e)
{
    if (XGBoosterSetParam(h, k, v) != 0) {
        char what[128];
        snprintf(what, sizeof what, "set %s=%s", k, v);
        return xgb_fail(e, what);
    }
    return 0;
}

int dt_xgb_train(const float *X, const float *y, int nrows, int ncols, const dt_xgb_params *p,
                 dt_xgb **out, dt_err *e)
{
    if (!out)
        return dt_errf(e, DT_EINVAL, "xgb train: NULL output");
    *out = NULL;
    if (!X || !y || nrows <= 0 || ncols <= 0)
        return dt_errf(e, DT_EINVAL, "xgb train: need at least one row and one column (%d x %d)",
                       nrows, ncols);
    for (int i = 0; i < nrows; i++)
        if (!isfinite(y[i]))
            return dt_errf(e, DT_EINVAL, "xgb train: label of row %d is not finite (%g)", i,
                           (double)y[i]);
    dt_xgb_params def;
    if (!p) {
        dt_xgb_params_default(&def);
        p = &def;
    }
    if (p->max_depth < 1 || !(p->eta > 0) || p->rounds < 1 || p->min_child_weight < 0 ||
        p->lambda < 0)
        return dt_errf(e, DT_EINVAL,
                       "xgb train: bad params (max_depth %d, eta %g, rounds %d, "
                       "min_child_weight %g, lambda %g)",
                       p->max_depth, p->eta, p->rounds, p->min_child_weight, p->lambda);

    int rc = 0;
    DMatrixHandle dm = NULL;
    BoosterHandle h = NULL;
    XGB_CHECK(XGDMatrixCreateFromMat(X, (bst_ulong)nrows, (bst_ulong)ncols, NAN, &dm),
              "create matrix");
    XGB_CHECK(XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)nrows), "set labels");
    XGB_CHECK(XGBoosterCreate(&dm, 1, &h), "create booster");
    char buf[64];
    const struct {
        const char *k;
        const char *v;
    } fixed[] = {{"booster", "gbtree"}, {"objective", "reg:squarederror"}, {"nthread", "1"},
                 {"tree_method", "hist"}, {"verbosity", "0"}, {"subsample", "1"},
                 {"colsample_bytree", "1"}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if ((rc = set_param(h, fixed[i].k, fixed[i].v, e)) != 0)
            goto done;
#define SETNUM(key, fmt, val)                                                                    \
    do {                                                                                         \
        snprintf(buf, sizeof buf, fmt, val);                                                     \
        if ((rc = set_param(h, key, buf, e)) != 0)                                               \
            goto done;                                                                           \
    } while (0)
    SETNUM("max_depth", "%d", p->max_depth);
    SETNUM("eta", "%.17g", p->eta);
    SETNUM("min_child_weight", "%.17g", p->min_child_weight);
    SETNUM("lambda", "%.17g", p->lambda);
    SETNUM("seed", "%d", p->seed);
#undef SETNUM
    for (int r = 0; r < p->rounds; r++)
        XGB_CHECK(XGBoosterUpdateOneIter(h, r, dm), "train");
    dt_xgb *m = calloc(1, sizeof *m); /* unbound: no column map */
    if (!m) {
        rc = dt_errf(e, DT_ENOMEM, "xgb train: out of memory");
        goto done;
    }
    m->h = h;
    m->ncols = ncols;
    h = NULL;
    *out = m;
done:
    if (h)
        XGBoosterFree(h);
    if (dm)
        XGDMatrixFree(dm);
    return rc;
}

int dt_xgb_ncols(const dt_xgb *m) { return m ? m->ncols : 0; }

int dt_xgb_predict(const dt_xgb *m, const float *X, int nrows, float *out, dt_err *e)
{
    if (!m || !X || !out || nrows <= 0)
        return dt_errf(e, DT_EINVAL, "xgb predict: need a model and at least one row");
    int rc = 0;
    DMatrixHandle dm = NULL;
    bst_ulong len = 0;
    const float *res = NULL;
    float *own = NULL; /* the rows in the model's columns, when bound */
    if (m->bound_cols) {
        own = malloc((size_t)nrows * (size_t)m->ncols * sizeof *own);
        if (!own)
            return dt_errf(e, DT_ENOMEM, "xgb predict: out of memory");
        for (int i = 0; i < nrows; i++)
            for (int c = 0; c < m->ncols; c++)
                own[(size_t)i * m->ncols + c] =
                    m->col_of[c] < 0 ? NAN : X[(size_t)i * m->bound_cols + m->col_of[c]];
        X = own;
    }
    XGB_CHECK(XGDMatrixCreateFromMat(X, (bst_ulong)nrows, (bst_ulong)m->ncols, NAN, &dm),
              "create matrix");
    XGB_CHECK(XGBoosterPredict(m->h, dm, 0, 0, 0, &len, &res), "predict");
    if (len != (bst_ulong)nrows) {
        rc = dt_errf(e, DT_EUNSUPPORTED, "xgb predict: %llu predictions for %d rows",
                     (unsigned long long)len, nrows);
        goto done;
    }
    memcpy(out, res, sizeof(float) * (size_t)nrows);
done:
    if (dm)
        XGDMatrixFree(dm);
    free(own);
    return rc;
}

int dt_xgb_set_names(dt_xgb *m, const char *const *names, int n, dt_err *e)
{
    if (!m || !names || n != m->ncols)
        return dt_errf(e, DT_EINVAL, "xgb names: %d names for %d columns", n, m ? m->ncols : 0);
    for (int i = 0; i < n; i++)
        if (!names[i] || !*names[i] || strchr(names[i], ','))
            return dt_errf(e, DT_EINVAL, "xgb names: column %d has no usable name", i);
    /* XGBoost 1.7 takes char ** but copies the strings */
    const char **copy = malloc((size_t)n * sizeof *copy);
    if (!copy)
        return dt_errf(e, DT_ENOMEM, "xgb names: out of memory");
    memcpy(copy, names, (size_t)n * sizeof *copy);
    int bad = XGBoosterSetStrFeatureInfo(m->h, "feature_name", copy, (bst_ulong)n) != 0;
    free(copy);
    return bad ? xgb_fail(e, "set feature names") : 0;
}

int dt_xgb_bind(dt_xgb *m, const char *const *names, int n, dt_err *e)
{
    if (!m || !names || n <= 0)
        return dt_errf(e, DT_EINVAL, "xgb bind: no layout");
    bst_ulong nn = 0;
    const char **have = NULL;
    if (XGBoosterGetStrFeatureInfo(m->h, "feature_name", &nn, &have) != 0)
        return xgb_fail(e, "get feature names");
    if (nn == 0) { /* saved without names: only its own layout, in order */
        if (n != m->ncols)
            return dt_errf(e, DT_EINVAL,
                           "xgb bind: the model has %d unnamed columns, the rows %d", m->ncols,
                           n);
        free(m->col_of);
        m->col_of = NULL;
        m->bound_cols = 0;
        return n;
    }
    if (nn != (bst_ulong)m->ncols)
        return dt_errf(e, DT_EINVAL, "xgb bind: %llu names for %d columns",
                       (unsigned long long)nn, m->ncols);
    int *col_of = malloc((size_t)m->ncols * sizeof *col_of), found = 0;
    if (!col_of)
        return dt_errf(e, DT_ENOMEM, "xgb bind: out of memory");
    for (int c = 0; c < m->ncols; c++) {
        col_of[c] = -1;
        for (int j = 0; j < n && col_of[c] < 0; j++)
            if (names[j] && strcmp(names[j], have[c]) == 0)
                col_of[c] = j;
        found += col_of[c] >= 0;
    }
    if (!found) {
        free(col_of);
        return dt_errf(e, DT_EINVAL, "xgb bind: none of the model's %d columns is in the rows",
                       m->ncols);
    }
    free(m->col_of);
    m->col_of = col_of;
    m->bound_cols = n;
    return found;
}

int dt_xgb_save(const dt_xgb *m, void **blob, size_t *len, dt_err *e)
{
    if (!m || !blob || !len)
        return dt_errf(e, DT_EINVAL, "xgb save: NULL argument");
    *blob = NULL;
    *len = 0;
    bst_ulong n = 0;
    const char *buf = NULL;
    if (XGBoosterSaveModelToBuffer(m->h, "{\"format\": \"json\"}", &n, &buf) != 0)
        return xgb_fail(e, "save");
    void *copy = malloc(n ? n : 1);
    if (!copy)
        return dt_errf(e, DT_ENOMEM, "xgb save: out of memory (%llu bytes)",
                       (unsigned long long)n);
    memcpy(copy, buf, n);
    *blob = copy;
    *len = n;
    return 0;
}

int dt_xgb_load(const void *blob, size_t len, dt_xgb **out, dt_err *e)
{
    if (!out)
        return dt_errf(e, DT_EINVAL, "xgb load: NULL output");
    *out = NULL;
    if (!blob || len == 0)
        return dt_errf(e, DT_EINVAL, "xgb load: empty model blob");
    int rc = 0;
    BoosterHandle h = NULL;
    bst_ulong nf = 0;
    XGB_CHECK(XGBoosterCreate(NULL, 0, &h), "create booster");
    XGB_CHECK(XGBoosterLoadModelFromBuffer(h, blob, (bst_ulong)len), "load");
    if ((rc = set_param(h, "nthread", "1", e)) != 0)
        goto done;
    XGB_CHECK(XGBoosterGetNumFeature(h, &nf), "feature count");
    if (nf == 0 || nf > 1000000) {
        rc = dt_errf(e, DT_EINVAL, "xgb load: model has %llu features", (unsigned long long)nf);
        goto done;
    }
    dt_xgb *m = calloc(1, sizeof *m); /* unbound: no column map */
    if (!m) {
        rc = dt_errf(e, DT_ENOMEM, "xgb load: out of memory");
        goto done;
    }
    m->h = h;
    m->ncols = (int)nf;
    h = NULL;
    *out = m;
done:
    if (h)
        XGBoosterFree(h);
    return rc;
}

void dt_xgb_free(dt_xgb *m)
{
    if (!m)
        return;
    XGBoosterFree(m->h);
    free(m->col_of);
    free(m);
}

/* ---- ranking measures ---------------------------------------------------- */

static int sgn(double x) { return (x > 0) - (x < 0); }

double dt_kendall_tau(const double *a, const double *b, int n)
{
    if (!a || !b || n < 2)
        return 0;
    double conc = 0, disc = 0, ties_a = 0, ties_b = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int sa = sgn(a[j] - a[i]), sb = sgn(b[j] - b[i]);
            if (sa == 0 && sb == 0)
                continue;
            if (sa == 0)
                ties_a++;
            else if (sb == 0)
                ties_b++;
            else if (sa == sb)
                conc++;
            else
                disc++;
        }
    double d = sqrt((conc + disc + ties_a) * (conc + disc + ties_b));
    return d > 0 ? (conc - disc) / d : 0;
}

typedef struct {
    double v;
    int i;
} vi;

static int vi_desc(const void *x, const void *y)
{
    const vi *p = x, *q = y;
    if (p->v != q->v)
        return p->v > q->v ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

/* Marks in sel[] the indices of the k largest values of v. */
static int top_k(const double *v, int n, int k, char *sel)
{
    vi *t = malloc(sizeof *t * (size_t)n);
    if (!t)
        return -1;
    for (int i = 0; i < n; i++)
        t[i] = (vi){v[i], i};
    qsort(t, (size_t)n, sizeof *t, vi_desc);
    for (int i = 0; i < k; i++)
        sel[t[i].i] = 1;
    free(t);
    return 0;
}

double dt_topk_recall(const double *pred, const double *truth, int n, int k)
{
    if (!pred || !truth || n <= 0 || k <= 0)
        return 0;
    if (k > n)
        k = n;
    char *sp = calloc((size_t)n, 1), *st = calloc((size_t)n, 1);
    double r = 0;
    if (sp && st && top_k(pred, n, k, sp) == 0 && top_k(truth, n, k, st) == 0) {
        int hit = 0;
        for (int i = 0; i < n; i++)
            hit += sp[i] && st[i];
        r = (double)hit / k;
    }
    free(sp);
    free(st);
    return r;
}
