/* Held-out quality of a cost model: one τ, one recall (see quality.h). */
#include "tuner/quality.h"

#include <math.h>
#include <stdlib.h>

#include "common/json_util.h"
#include "costmodel/xgb.h"

static int64_t pairs_of(int64_t n)
{
    return n * (n - 1) / 2;
}

double dt_quality_tau(const double *pred, const double *meas, int n)
{
    if (n < 2 || pairs_of(n) < DT_TAU_MIN_PAIRS)
        return NAN;
    return dt_kendall_tau(pred, meas, n);
}

void dt_quality_none(dt_quality *q, int records, int holdout)
{
    *q = (dt_quality){.records = records, .holdout = holdout,
                      .k = holdout > 0 ? (holdout / 10 > 1 ? holdout / 10 : 1) : 0,
                      .tau = NAN, .tau_within = NAN, .recall = NAN};
}

static int cmp_group(const void *a, const void *b)
{
    const dt_quality_point *x = a, *y = b;
    if (x->workload != y->workload)
        return x->workload < y->workload ? -1 : 1;
    return (x->shape > y->shape) - (x->shape < y->shape);
}

int dt_quality_of(const dt_quality_point *pts, int n, dt_quality *q, dt_err *e)
{
    dt_quality_none(q, q->records, n);
    if (n < 2)
        return 0;
    dt_quality_point *s = malloc((size_t)n * sizeof *s);
    double *pa = malloc((size_t)n * sizeof *pa), *ma = malloc((size_t)n * sizeof *ma);
    if (!s || !pa || !ma) {
        free(s);
        free(pa);
        free(ma);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        pa[i] = pts[i].flops / pts[i].pred_ns;
        ma[i] = pts[i].flops / pts[i].meas_ns;
    }
    q->pairs = pairs_of(n);
    q->tau = dt_quality_tau(pa, ma, n);
    if (!isnan(q->tau))
        q->recall = dt_topk_recall(pa, ma, n, q->k);
    /* within each (workload, shape): every group's τ weighted by its pairs */
    for (int i = 0; i < n; i++)
        s[i] = pts[i];
    qsort(s, (size_t)n, sizeof *s, cmp_group);
    double num = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && s[j].workload == s[i].workload && s[j].shape == s[i].shape)
            j++;
        int g = j - i;
        if (g >= 2 && s[i].shape >= 0) {
            for (int c = 0; c < g; c++) {
                pa[c] = s[i + c].flops / s[i + c].pred_ns;
                ma[c] = s[i + c].flops / s[i + c].meas_ns;
            }
            num += (double)pairs_of(g) * dt_kendall_tau(pa, ma, g);
            q->pairs_within += pairs_of(g);
        }
        i = j;
    }
    if (q->pairs_within >= DT_TAU_MIN_PAIRS)
        q->tau_within = num / (double)q->pairs_within;
    free(s);
    free(pa);
    free(ma);
    return 0;
}

json_t *dt_quality_json(const dt_quality *q)
{
    return json_pack("{s:o, s:o, s:o, s:i, s:i, s:i}", "kendall_tau", dt_json_num_or_null(q->tau),
                     "kendall_tau_within_shape", dt_json_num_or_null(q->tau_within),
                     "topk_recall", dt_json_num_or_null(q->recall), "k", q->k, "holdout",
                     q->holdout, "records", q->records);
}
