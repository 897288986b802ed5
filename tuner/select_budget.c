/* The final selection under a kernel budget (see select_budget.h).
 *
 * Invariants (DT_ASSERT, checked in every build type):
 *   - the candidates are at most DT_KSET_MAX kernels of the task, each with
 *     a measurement and no failure;
 *   - a budgeted set (max_kernels K > 0) holds at most K candidates, each
 *     once; only the automatic budget may grow its set afterwards
 *     (auto_within_tol, up to DT_KSET_MAX);
 *   - each shape's winner is a member of the set (a valid kernel index) or
 *     -1 when no member can run it, so at most |set| distinct kernels are
 *     dispatched. */
#include "tuner/select_budget.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "tuner/kset.h"
#include "tuner/predictor.h"

typedef struct {
    int k;       /* kernel index in the task */
    double v;    /* ranking value: higher first */
} cand_rank;

static int cmp_rank(const void *a, const void *b)
{
    const cand_rank *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

typedef struct {
    int64_t s;
    double v;
} shape_val;

static int cmp_shape_val(const void *a, const void *b)
{
    const shape_val *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}

void dt_select_estimates(const dt_task *t, int k, double *out)
{
    const dt_tkernel *kk = &t->k[k];
    double lsum = 0;
    int ln = 0;
    for (int i = 0; i < kk->nm; i++) {
        double pr = kk->pred ? kk->pred[kk->m[i].shape] : NAN;
        if (isfinite(kk->m[i].ns) && kk->m[i].ns > 0 && isfinite(pr) && pr > 0 &&
            !dt_predictor_at_floor(t->flops[kk->m[i].shape], pr)) {
            lsum += log(kk->m[i].ns / pr);
            ln++;
        }
    }
    double scale = ln ? exp(lsum / ln) : 1;
    for (int64_t s = 0; s < t->nshapes; s++) {
        double v = dt_task_measured(t, k, s);
        if (isnan(v))
            v = kk->pred && isfinite(kk->pred[s]) && kk->pred[s] > 0 ? kk->pred[s] * scale
                                                                     : INFINITY;
        out[s] = v;
    }
}

/* Whether an estimate est is DT_SELECT_DISTRUST times below the fastest
 * time measured on its shape: then the estimate, not the measurement,
 * decides there (tuner/select.h). */
static int distrusted(double est, double measured)
{
    return est * DT_SELECT_DISTRUST < measured;
}

int dt_select_distrust_winners(const dt_task *t, int *win, double *wns, dt_err *e)
{
    double *col = malloc((size_t)t->nshapes * sizeof *col);
    double *best = malloc((size_t)t->nshapes * sizeof *best);
    int *arg = malloc((size_t)t->nshapes * sizeof *arg);
    if (!col || !best || !arg) {
        free(col);
        free(best);
        free(arg);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int64_t s = 0; s < t->nshapes; s++) {
        best[s] = INFINITY;
        arg[s] = -1;
    }
    for (int k = 0; k < t->nk; k++) {
        if (t->k[k].failed || t->k[k].nm == 0)
            continue;
        dt_select_estimates(t, k, col);
        for (int64_t s = 0; s < t->nshapes; s++)
            if (isnan(dt_task_measured(t, k, s)) && col[s] < best[s]) {
                best[s] = col[s];
                arg[s] = k;
            }
    }
    for (int64_t s = 0; s < t->nshapes; s++)
        if (win[s] >= 0 && isfinite(wns[s]) && arg[s] >= 0 && distrusted(best[s], wns[s])) {
            DT_ASSERT(arg[s] != win[s], "the distrusted winner is measured, its rival is not");
            win[s] = arg[s];
            wns[s] = NAN;
        }
    free(col);
    free(best);
    free(arg);
    return 0;
}

/* The candidates (at most DT_KSET_MAX: the fastest on some shape first,
 * then by weighted relative speed Σ w_s · best_s / t(s, k)) and their
 * times, shape-major, into cand[] and tm[nshapes * nc] (estimates
 * included) and tmm[nshapes * nc] (for the choice on measured times: see
 * below); returns nc. */
static int candidates(const dt_task *t, int *cand, double *tm, double *tmm, double *col,
                      cand_rank *rk, double *best)
{
    int n = 0;
    for (int k = 0; k < t->nk; k++)
        if (!t->k[k].failed && t->k[k].nm > 0)
            rk[n++] = (cand_rank){k, 0};
    if (n == 0)
        return 0;
    for (int64_t s = 0; s < t->nshapes; s++)
        best[s] = INFINITY;
    /* col holds the times of rk[i] at col[i * nshapes] */
    for (int i = 0; i < n; i++) {
        dt_select_estimates(t, rk[i].k, col + (int64_t)i * t->nshapes);
        for (int64_t s = 0; s < t->nshapes; s++)
            if (col[(int64_t)i * t->nshapes + s] < best[s])
                best[s] = col[(int64_t)i * t->nshapes + s];
    }
    for (int i = 0; i < n; i++) {
        const double *c = col + (int64_t)i * t->nshapes;
        double v = 0;
        int wins = 0;
        for (int64_t s = 0; s < t->nshapes; s++) {
            if (isfinite(c[s]) && c[s] > 0)
                v += t->weight[s] * best[s] / c[s];
            wins |= isfinite(c[s]) && c[s] <= best[s];
        }
        rk[i].v = v + (wins ? 2.0 : 0.0); /* v <= 1: a shape's fastest ranks first */
    }
    /* col is indexed by position in rk: sort positions (rk has room for
     * 2 * nk entries; the second half holds them) */
    cand_rank *sorted = rk + n;
    for (int i = 0; i < n; i++)
        sorted[i] = (cand_rank){i, rk[i].v};
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_rank);
    int nc = n < DT_KSET_MAX ? n : DT_KSET_MAX;
    for (int64_t s = 0; s < t->nshapes; s++)
        best[s] = INFINITY; /* now: the fastest measured */
    for (int j = 0; j < nc; j++) {
        int i = sorted[j].k;
        cand[j] = rk[i].k;
        for (int64_t s = 0; s < t->nshapes; s++) {
            double v = dt_task_measured(t, rk[i].k, s);
            tm[s * nc + j] = col[(int64_t)i * t->nshapes + s];
            tmm[s * nc + j] = v;
            if (!isnan(v) && v < best[s])
                best[s] = v;
        }
    }
    DT_ASSERT(nc >= 1 && nc <= DT_KSET_MAX, "the candidates are 1..DT_KSET_MAX kernels");
    for (int j = 0; j < nc; j++) {
        DT_ASSERT(cand[j] >= 0 && cand[j] < t->nk, "a candidate is a kernel index of the task");
        DT_ASSERT(!t->k[cand[j]].failed && t->k[cand[j]].nm > 0,
                  "a candidate has a measurement and no failure");
    }
    /* measured only: an unmeasured pair is taken as its estimate, but at
     * least DT_SELECT_TIE slower than the fastest measured on its shape (a
     * measured kernel wins a tie) unless the estimate is DT_SELECT_DISTRUST
     * times faster than that; a shape nobody measured counts for nothing in
     * the choice */
    for (int64_t s = 0; s < t->nshapes; s++)
        for (int j = 0; j < nc; j++) {
            double *v = &tmm[s * nc + j];
            if (isnan(*v)) {
                double floor = best[s] * (1 + DT_SELECT_TIE), est = tm[s * nc + j];
                *v = !isfinite(best[s])       ? INFINITY
                     : distrusted(est, best[s]) ? est
                     : est > floor            ? est
                                              : floor;
            }
        }
    return nc;
}

/* The set invariant: n members, distinct positions in [0, nc). */
static void set_check(const int *set, int n, int nc, int max)
{
    DT_ASSERT(n >= 1 && n <= nc && n <= max, "a budgeted set holds 1..min(K, candidates) kernels");
    for (int i = 0; i < n; i++) {
        DT_ASSERT(set[i] >= 0 && set[i] < nc, "a set's member is a candidate position");
        for (int j = 0; j < i; j++)
            DT_ASSERT(set[j] != set[i], "a set holds each candidate once");
    }
}

/* The winners' invariant: each one a member's kernel, or -1 (on the
 * winners just computed: shapes x members). */
static void winners_check(const dt_task *t, const int *cand, const int *set, int n,
                          const int *win)
{
    for (int64_t s = 0; s < t->nshapes; s++) {
        int in = win[s] == -1;
        for (int i = 0; i < n && !in; i++)
            in = win[s] == cand[set[i]];
        DT_ASSERT(in, "each shape's winner is a member of the set, or -1 when none runs it");
    }
}

/* Every shape to the set's fastest: on measured times (measured_only), the
 * fastest member measured on it — or the member estimated more than
 * DT_SELECT_DISTRUST times faster than that —, else the best by mx, else by
 * estimate.
 * The shapes whose pair is unmeasured go to order[] (weight · estimate);
 * returns how many. */
static int dispatch(const dt_task *t, const int *cand, int nc, const int *set, int n,
                    const double *mx, const double *tm, int measured_only, int *win,
                    double *wns, shape_val *order)
{
    int nq = 0;
    for (int64_t s = 0; s < t->nshapes; s++) {
        int bj = -1;
        double bv = INFINITY;
        if (measured_only)
            for (int i = 0; i < n; i++) {
                double v = dt_task_measured(t, cand[set[i]], s);
                if (!isnan(v) && isfinite(v) && (bj < 0 || v < bv)) {
                    bj = set[i];
                    bv = v;
                }
            }
        if (measured_only && bj >= 0) /* an estimate far below what was measured */
            for (int i = 0; i < n; i++) {
                const double est = tm[s * nc + set[i]];
                if (isnan(dt_task_measured(t, cand[set[i]], s)) && distrusted(est, bv) &&
                    est < tm[s * nc + bj])
                    bj = set[i];
            }
        for (int pick = 0; pick < 2 && bj < 0; pick++) {
            const double *row = (pick == 0 ? mx : tm) + s * nc;
            for (int i = 0; i < n; i++)
                if (isfinite(row[set[i]]) && (bj < 0 || row[set[i]] < row[bj]))
                    bj = set[i];
        }
        win[s] = bj >= 0 ? cand[bj] : -1;
        wns[s] = bj >= 0 ? dt_task_measured(t, cand[bj], s) : INFINITY;
        if (bj >= 0 && isnan(wns[s]))
            order[nq++] = (shape_val){s, t->weight[s] * tm[s * nc + bj]};
    }
    winners_check(t, cand, set, n, win);
    DT_ASSERT(nq >= 0 && nq <= t->nshapes, "at most every shape is queued for verification");
    return nq;
}

/* The automatic budget's promise on measured times: the dispatched loss
 * (select.c's, over the shapes where both are measured, against
 * dt_select_fastest_measured) within tol.  The
 * set was chosen on floored estimates; where the measured dispatch loses
 * more, the candidate fastest on the shape that loses most is added, until
 * the loss is within tol (each addition removes that shape's excess).
 * tmm's column j holds candidate j's times; returns the new n. */
static int auto_within_tol(const dt_task *t, const int *cand, int nc, const double *tmm,
                           double tol, int *set, int n, const double *tm, int *win,
                           double *wns, shape_val *order)
{
    for (;;) {
        double num = 0, den = 0, worst = 0;
        int64_t ws = -1;
        int wj = -1;
        for (int64_t s = 0; s < t->nshapes; s++) {
            int bk, bj = -1;
            double b = dt_select_fastest_measured(t, s, &bk);
            for (int j = 0; j < nc && bj < 0; j++)
                if (cand[j] == bk)
                    bj = j;
            if (!isfinite(b) || win[s] < 0 || !isfinite(wns[s]))
                continue;
            num += t->weight[s] * wns[s];
            den += t->weight[s] * b;
            double x = t->weight[s] * (wns[s] - b);
            if (x > worst && bj >= 0) {
                worst = x;
                ws = s;
                wj = bj;
            }
        }
        if (!(den > 0) || num / den - 1 <= tol || ws < 0 || n >= DT_KSET_MAX)
            return n;
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= set[i] == wj;
        if (dup) /* cannot happen: the member fastest on ws would win it */
            return n;
        DT_ASSERT(wj >= 0 && wj < nc, "the candidate added is a candidate position");
        set[n++] = wj;
        set_check(set, n, nc, DT_KSET_MAX);
        dispatch(t, cand, nc, set, n, tmm, tm, 1, win, wns, order);
    }
}

int dt_select_budget_winners(dt_task *t, dt_measurer *m, const dt_select_opts *o, int64_t left,
                             int *win, double *wns, dt_select_info *info, dt_err *e)
{
    int64_t ns = t->nshapes;
    int nk = t->nk > 0 ? t->nk : 1;
    int *cand = malloc((size_t)nk * sizeof *cand);
    double *tm = malloc((size_t)ns * (size_t)nk * sizeof *tm);
    double *tmm = malloc((size_t)ns * (size_t)nk * sizeof *tmm);
    double *col = malloc((size_t)ns * (size_t)nk * sizeof *col);
    cand_rank *rk = malloc(2 * (size_t)nk * sizeof *rk);
    double *best = malloc((size_t)ns * sizeof *best);
    shape_val *order = malloc((size_t)ns * sizeof *order);
    dt_mreq *q = malloc((size_t)ns * sizeof *q);
    int rc = 0;
    if (!cand || !tm || !tmm || !col || !rk || !best || !order || !q) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    double tol = o->loss_tol > 0 ? o->loss_tol : DT_SELECT_LOSS_TOL;
    /* estimates guide the choice while what is dispatched can still be
     * measured; when it cannot, the set is chosen once more on measured
     * times, an unmeasured pair never better than DT_SELECT_TIE above its
     * shape's fastest measured (a shape none of the set was measured on
     * takes the member with the best estimate) */
    int measured_only = 0;
    for (int pass = 0;; pass++) {
        int nc = candidates(t, cand, tm, tmm, col, rk, best);
        if (nc == 0)
            break;
        const double *mx = measured_only ? tmm : tm;
        dt_kset ks;
        if ((rc = dt_kset_init(&ks, ns, nc, t->weight, mx, e)))
            break;
        int set[DT_KSET_MAX];
        int n = o->max_kernels > 0 ? dt_kset_choose(&ks, o->max_kernels, set, NULL, e)
                                   : dt_kset_auto(&ks, tol, set, NULL, e);
        dt_kset_free(&ks);
        if (n < 0) {
            rc = n;
            break;
        }
        set_check(set, n, nc, o->max_kernels > 0 ? o->max_kernels : DT_KSET_MAX);
        int nq = dispatch(t, cand, nc, set, n, mx, tm, measured_only, win, wns, order);
        if (measured_only && o->max_kernels == DT_SELECT_AUTO)
            auto_within_tol(t, cand, nc, tmm, tol, set, n, tm, win, wns, order);
        if (nq == 0)
            break;
        if (!measured_only && left > 0 && m && o->topk > 0 && pass < DT_SELECT_VERIFY_PASSES) {
            /* measure what is dispatched but was not measured, heaviest
             * first; then choose again on the new times */
            qsort(order, (size_t)nq, sizeof *order, cmp_shape_val);
            int nr = nq < left ? nq : (int)left;
            for (int i = 0; i < nr; i++)
                q[i] = (dt_mreq){.k = win[order[i].s], .s = order[i].s};
            for (int i = 0; i < nr && !rc; i += 64)
                rc = dt_measurer_run(m, t, q + i, nr - i < 64 ? nr - i : 64, e);
            if (rc)
                break;
            left -= nr;
            info->trials += nr;
            continue;
        }
        if (measured_only)
            break;
        measured_only = 1;
    }
out:
    free(cand);
    free(tm);
    free(tmm);
    free(col);
    free(rk);
    free(best);
    free(order);
    free(q);
    return rc;
}
