/* Cost-model points: see point.h. */
#include "costmodel/point.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>

static const char *column_names[DT_CM_NCOLS];
static pthread_once_t column_names_once = PTHREAD_ONCE_INIT;

static void make_column_names(void)
{
    static const char *shape[DT_NSHAPE_FEATURES] = {"log_batch", "log_m", "log_n", "log_k",
                                                      "log_reduce"};
    for (int i = 0; i < DT_NFEATURES; i++)
        column_names[i] = dt_cm_feature_name(i);
    for (int i = 0; i < DT_NSHAPE_FEATURES; i++)
        column_names[DT_NFEATURES + i] = shape[i];
}

const char *const *dt_cm_column_names(void)
{
    pthread_once(&column_names_once, make_column_names);
    return column_names;
}

int dt_cm_point_make(const dt_op_desc *op, const int *attrs, const int64_t *dims,
                     const dt_annotation *a, const dt_target *t, dt_cm_point *p, dt_err *e)
{
    if (!op || !dims || !a || !t || !p)
        return dt_errf(e, DT_EINVAL, "cost-model point: missing argument");
    if (dt_features(a, t, op->name, p->x, DT_NFEATURES) != DT_NFEATURES)
        return dt_errf(e, DT_EINVAL, "cost-model point: no features for op %s (mr %d, nr %d)",
                       op->name, a->mr, a->nr);
    dt_gemm g;
    int rc = dt_adapt_gemm_of(op, attrs, dims, &g, e);
    if (rc || (rc = dt_f_adapt_gemm(&g, a, t, &p->adapt, e)))
        return rc;
    /* log2 of the sizes by role: 0 for a role without a dim (size 1) */
    const int64_t size[DT_CMS_LOG_REDUCE] = {g.batch, g.M, g.N, g.K};
    for (int i = 0; i < DT_CMS_LOG_REDUCE; i++)
        p->x[DT_NFEATURES + i] = (float)log2((double)size[i]);
    p->flops = op->flops(dims, attrs);
    if (!(p->flops > 0) || !(p->adapt.total > 0))
        return dt_errf(e, DT_EINVAL, "cost-model point: no work in this shape");
    const double outputs = (double)g.batch * (double)g.M * (double)g.N;
    assert(outputs >= 1);
    p->x[DT_NFEATURES + DT_CMS_LOG_REDUCE] = (float)log2(p->flops / (2.0 * outputs));
    return 0;
}

double dt_cm_label(const dt_cm_point *p, double min_ns)
{
    if (!(min_ns > 0) || !isfinite(min_ns))
        return NAN;
    return p->flops / min_ns / p->adapt.total;
}

double dt_cm_time_ns(const dt_cm_point *p, double f_mk)
{
    if (!(f_mk > 0))
        return HUGE_VAL;
    return p->flops / (f_mk * p->adapt.total);
}
