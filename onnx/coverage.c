/* The GEMM-like coverage of an import (onnx/import.h's dt_ox_coverage):
 * every GEMM-like node's work from its definition (onnx/flops.h) at the
 * largest and at the weighted shape, summed over tuned and untuned nodes. */
#include "onnx/coverage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/flops.h"

void dt_ox_coverage_free(dt_ox_coverage *c)
{
    for (int k = 0; k < 2; k++)
        free(c->shape[k]);
    for (int i = 0; i < c->nleft; i++) {
        free(c->left[i].node);
        free(c->left[i].why);
    }
    free(c->left);
    memset(c, 0, sizeof *c);
}

/* The value of vars[v] at the largest shape (which 0) or at the weighted one
 * (which 1): the domain value nearest the weighted mean. */
static int64_t value_at(const dt_var *v, int which)
{
    const dt_domain *d = &v->dom;
    if (which == 0)
        return d->values[d->n - 1];
    double mean = 0;
    for (int k = 0; k < d->n; k++)
        mean += d->weights[k] * (double)d->values[k];
    int best = 0;
    for (int k = 1; k < d->n; k++)
        if (__builtin_fabs((double)d->values[k] - mean) <
            __builtin_fabs((double)d->values[best] - mean))
            best = k;
    return d->values[best];
}

static char *shape_text(const dt_var *vars, int nvars, const int64_t *vals)
{
    size_t cap = 16 + (size_t)nvars * 64, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int v = 0; v < nvars; v++)
        len += (size_t)snprintf(s + len, cap - len, "%s%s=%lld", v ? "," : "", vars[v].name,
                                (long long)vals[v]);
    return s;
}

static int by_weighted_work(const void *a, const void *b)
{
    double x = ((const dt_ox_gemm_left *)a)->gflop[1], y = ((const dt_ox_gemm_left *)b)->gflop[1];
    return x < y ? 1 : x > y ? -1 : 0;
}

int dt_ox_coverage_count(const dt_ox_graph *g, const dt_ox_shapes *s, const dt_ox_wl *wl,
                         const dt_var *vars, int nvars, dt_ox_coverage *out, dt_err *e)
{
    memset(out, 0, sizeof *out);
    const char *names[DT_MAX_VARS];
    int64_t vals[2][DT_MAX_VARS];
    for (int v = 0; v < nvars; v++) {
        names[v] = vars[v].name;
        for (int k = 0; k < 2; k++)
            vals[k][v] = value_at(&vars[v], k);
    }
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++)
        if (!(out->shape[k] = shape_text(vars, nvars, vals[k])))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
    out->ngemm = wl->ngemm;
    int nleft = 0;
    for (int i = 0; i < wl->ngemm; i++)
        nleft += !wl->gemm[i].covered;
    if (!rc && nleft && !(out->left = calloc((size_t)nleft, sizeof *out->left)))
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    for (int i = 0; i < wl->ngemm && !rc; i++) {
        const dt_ox_gemm_node *gn = &wl->gemm[i];
        dt_ox_flops f;
        double w[2] = {-1, -1};
        if (dt_ox_node_flops(g, s, gn->node, &f)) {
            dt_err ee;
            for (int k = 0; k < 2; k++)
                if (dt_ox_flops_eval(&f, names, vals[k], nvars, &w[k], &ee))
                    w[0] = w[1] = -1; /* a dim below 0 at this shape: not counted */
        }
        if (w[0] < 0 || w[1] < 0) {
            out->nuncounted++;
            w[0] = w[1] = -1;
        }
        for (int k = 0; k < 2 && w[0] >= 0; k++) {
            out->gflop[k] += w[k] / 1e9;
            if (gn->covered)
                out->tuned_gflop[k] += w[k] / 1e9;
        }
        if (gn->covered)
            continue;
        dt_ox_gemm_left *l = &out->left[out->nleft];
        char label[320];
        dt_ox_node_label(g, gn->node, label, sizeof label);
        l->node = strdup(label);
        l->why = strdup(gn->why ? gn->why : "");
        l->gflop[0] = w[0] < 0 ? -1 : w[0] / 1e9;
        l->gflop[1] = w[1] < 0 ? -1 : w[1] / 1e9;
        out->nleft++;
        if (!l->node || !l->why)
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
    }
    if (rc) {
        dt_ox_coverage_free(out);
        return rc;
    }
    if (out->nleft > 1) /* qsort's base must not be NULL, even for 0 elements */
        qsort(out->left, (size_t)out->nleft, sizeof *out->left, by_weighted_work);
    return 0;
}
