/* Per-shape measured choice and dispatch boxes (see select.h).
 *
 * Invariants, before a schedule is written (the first two DT_ASSERTs,
 * checked in every build type; the partition, which reads every row's
 * text back, an assert of Debug and sanitizer builds):
 *   - every shape of the set is covered: each shape s has a winner win[s],
 *     a valid kernel index 0 <= win[s] < nk (fill_gaps gives a shape no
 *     kernel ran on its nearest neighbour's);
 *   - under a kernel budget K > 0 at most K distinct kernels are dispatched
 *     (the budgeted set, select_budget.c; ties and gaps only take a
 *     neighbour's kernel, never a new one);
 *   - the boxes partition the shape set: every shape lies in exactly one,
 *     the box of its winner; with one variable they are runs, so
 *     neighbouring ones have different kernels. */
#include "tuner/select.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "shape/box.h"
#include "tuner/select_budget.h"

int64_t dt_select_reserve(const dt_task *t, int topk, int max_kernels)
{
    if (topk <= 0)
        return 0;
    return t->nshapes * (topk + (max_kernels != DT_SELECT_ALL));
}

int64_t dt_select_verify_share(const dt_task *t, int topk, int max_kernels, int64_t max_trials)
{
    if (max_kernels == DT_SELECT_ALL || topk <= 0 || max_trials <= 0)
        return 0;
    /* one per shape first: a shape's dispatched pair measured is worth more
     * than a second candidate measured on it */
    return max_trials < t->nshapes ? max_trials : t->nshapes;
}

typedef struct {
    int64_t s;
    double v; /* weight · known ns of its top kernel; -1 when none */
} shape_key;

static int cmp_shape_key(const void *a, const void *b)
{
    const shape_key *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

double dt_select_fastest_measured(const dt_task *t, int64_t s, int *arg)
{
    double b = INFINITY;
    int a = -1;
    for (int k = 0; k < t->nk; k++) {
        double v = t->k[k].failed ? NAN : dt_task_measured(t, k, s);
        if (!isnan(v) && v < b) {
            b = v;
            a = k;
        }
    }
    if (arg)
        *arg = a;
    return b;
}

/* The per-shape fastest measured time (the unrestricted choice) and what
 * the dispatched times lose against it (select.h, dt_select_info). */
static void select_stats(const dt_task *t, const int *win, const double *wns,
                         dt_select_info *info)
{
    double bo = 0, num = 0, den = 0;
    int64_t nbest = 0;
    int *bk = malloc((size_t)(t->nk > 0 ? t->nk : 1) * sizeof *bk);
    for (int64_t s = 0; s < t->nshapes; s++) {
        int arg;
        double b = dt_select_fastest_measured(t, s, &arg);
        bo += isfinite(b) ? t->weight[s] * b : NAN;
        if (arg >= 0 && bk) {
            int dup = 0;
            for (int64_t j = 0; j < nbest && !dup; j++)
                dup = bk[j] == arg;
            if (!dup)
                bk[nbest++] = arg;
        }
        if (isfinite(b) && win[s] >= 0 && isfinite(wns[s])) {
            num += t->weight[s] * wns[s];
            den += t->weight[s] * b;
        }
    }
    free(bk);
    info->best_kernels = (int)nbest;
    info->best_objective = bo;
    info->loss = den > 0 ? num / den - 1 : NAN;
}

int dt_select_final(dt_task *t, dt_predictor *p, dt_measurer *m, int topk, int64_t max_trials,
                    dt_db *db, dt_select_info *info, dt_err *e)
{
    dt_select_opts o = {.topk = topk, .max_trials = max_trials, .max_kernels = DT_SELECT_ALL};
    return dt_select_run(t, p, m, &o, db, info, e);
}

/* Step 1: the top-k requests in order of value, so a budget that cannot pay
 * for all of them buys the most useful: every shape's top kernel first (the
 * heaviest shapes, by weight · known ns, first), then the second, ...; at
 * most `allowed` into q[]; returns how many, or a negative code. */
static int topk_requests(const dt_task *t, int topk, int64_t allowed, dt_mreq *q, dt_err *e)
{
    int n = 0;
    if (topk <= 0 || allowed <= 0)
        return 0;
    int (*top)[16] = malloc((size_t)t->nshapes * sizeof *top);
    int *cnt = malloc((size_t)t->nshapes * sizeof *cnt);
    shape_key *order = malloc((size_t)t->nshapes * sizeof *order);
    if (!top || !cnt || !order) {
        free(top);
        free(cnt);
        free(order);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int64_t s = 0; s < t->nshapes; s++) {
        double val[16];
        cnt[s] = dt_task_topk(t, s, topk, top[s], val);
        order[s] = (shape_key){s, cnt[s] > 0 ? t->weight[s] * val[0] : -1};
    }
    qsort(order, (size_t)t->nshapes, sizeof *order, cmp_shape_key);
    for (int rank = 0; rank < topk && n < allowed; rank++)
        for (int64_t j = 0; j < t->nshapes && n < allowed; j++) {
            int64_t s = order[j].s;
            if (rank < cnt[s] && isnan(dt_task_measured(t, top[s][rank], s)))
                q[n++] = (dt_mreq){.k = top[s][rank], .s = s};
        }
    free(top);
    free(cnt);
    free(order);
    return n;
}

/* Step 2: every shape's winner, its fastest measured kernel (win -1 /
 * wns +inf when none); returns whether any shape has one. */
static int fastest_winners(const dt_task *t, int *win, double *wns)
{
    int any = 0;
    for (int64_t s = 0; s < t->nshapes; s++) {
        win[s] = -1;
        wns[s] = INFINITY;
        for (int k = 0; k < t->nk; k++) {
            if (t->k[k].failed)
                continue;
            double v = dt_task_measured(t, k, s);
            if (!isnan(v) && v < wns[s]) {
                wns[s] = v;
                win[s] = k;
            }
        }
        any |= win[s] >= 0;
    }
    return any;
}

/* Step 3: fewer, longer ranges: a shape keeps its left neighbour's winner
 * when that kernel was measured within DT_SELECT_TIE of the best on it (the
 * difference is noise-level, and a range boundary costs a dispatch); under
 * the automatic budget only while the loss stays within its tolerance
 * (num / den: the dispatched and the fastest measured time, over the shapes
 * where both are known, as select_stats counts them). */
static void merge_ties(const dt_task *t, const dt_select_opts *o, int *win, double *wns)
{
    double tol = o->loss_tol > 0 ? o->loss_tol : DT_SELECT_LOSS_TOL, num = 0, den = 0;
    if (o->max_kernels == DT_SELECT_AUTO)
        for (int64_t s = 0; s < t->nshapes; s++) {
            double b = dt_select_fastest_measured(t, s, NULL);
            if (isfinite(b) && win[s] >= 0 && isfinite(wns[s])) {
                num += t->weight[s] * wns[s];
                den += t->weight[s] * b;
            }
        }
    for (int64_t s = 1; s < t->nshapes; s++) {
        int k = win[s - 1];
        if (k < 0 || k == win[s] || win[s] < 0)
            continue;
        double v = dt_task_measured(t, k, s);
        if (!t->k[k].failed && !isnan(v) && v <= wns[s] * (1 + DT_SELECT_TIE)) {
            double add = isfinite(wns[s]) ? t->weight[s] * (v - wns[s]) : 0;
            if (o->max_kernels == DT_SELECT_AUTO && den > 0 && add > 0 &&
                (num + add) / den - 1 > tol)
                continue;
            num += add;
            win[s] = k;
            wns[s] = v;
        }
    }
}

/* Step 4: shapes without a winner take the nearest shape's that has one (by
 * index, the left one first); their time is unknown (NAN) unless that
 * kernel was measured there too. */
static int fill_gaps(const dt_task *t, int *win, double *wns, dt_err *e)
{
    int *fb = malloc((size_t)t->nshapes * sizeof *fb);
    if (!fb)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int64_t s = 0; s < t->nshapes; s++) {
        fb[s] = win[s];
        for (int64_t d = 1; fb[s] < 0 && (s - d >= 0 || s + d < t->nshapes); d++) {
            if (s - d >= 0 && win[s - d] >= 0)
                fb[s] = win[s - d];
            else if (s + d < t->nshapes && win[s + d] >= 0)
                fb[s] = win[s + d];
        }
    }
    for (int64_t s = 0; s < t->nshapes; s++) {
        if (win[s] < 0)
            wns[s] = fb[s] >= 0 && !t->k[fb[s]].failed ? dt_task_measured(t, fb[s], s) : NAN;
        win[s] = fb[s];
    }
    free(fb);
    return 0;
}

/* Step 5: the boxes of equal winners (shape/box.h, dt_box_partition: with
 * one variable, the runs) into rows[] (their corners' text in text[]), the
 * objective and estimate into info; returns how many, or an error. */
static int make_ranges(const dt_task *t, const int *win, const double *wns,
                       dt_db_schedule *rows, char (*text)[2][128], dt_select_info *info,
                       dt_err *e)
{
    dt_box *boxes = NULL;
    int *label = NULL, nr = 0;
    int rc = dt_box_partition(t->w, win, &boxes, &label, &nr, e);
    if (rc)
        return rc;
    double obj = 0, est = 0;
    DT_ASSERT(nr >= 1 && nr <= t->nshapes, "a shape set's partition has 1..nshapes boxes");
    for (int i = 0; i < nr; i++) {
        int k = label[i];
        DT_ASSERT(k >= 0 && k < t->nk, "a box's label is a kernel index of the task");
        double ps = 0, ms = 0, ws = 0;
        int mknown = 1;
        for (int64_t j = 0, nb = dt_box_nshapes(t->w, &boxes[i]); j < nb; j++) {
            int64_t s = dt_box_shape(t->w, &boxes[i], j);
            ps += t->k[k].pred ? t->k[k].pred[s] : NAN;
            ms += wns[s];
            mknown &= !isnan(wns[s]);
            obj += t->weight[s] * wns[s];
            est += t->weight[s] * (!isnan(wns[s])  ? wns[s]
                                   : t->k[k].pred ? t->k[k].pred[s]
                                                  : NAN);
            ws += 1;
        }
        dt_box_format(t->w, &boxes[i], text[i][0], sizeof text[i][0], text[i][1],
                      sizeof text[i][1]);
        rows[i] = (dt_db_schedule){.shape_lo = text[i][0],
                                   .shape_hi = text[i][1],
                                   .box = 1,
                                   .kernel_id = t->k[k].id,
                                   .threads = t->threads,
                                   .predicted_ns = isfinite(ps) ? ps / ws : NAN,
                                   .measured_ns = mknown ? ms / ws : NAN};
    }
    free(boxes);
    free(label);
    info->ranges = nr;
    info->objective = obj;
    info->estimate = est;
    for (int i = 0; i < nr; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= rows[j].kernel_id == rows[i].kernel_id;
        if (!dup && info->nids < DT_SELECT_MAX_IDS)
            info->kernel_ids[info->nids++] = rows[i].kernel_id;
        info->kernels += !dup;
    }
    DT_ASSERT(info->kernels >= 1 && info->kernels <= nr,
              "a schedule dispatches 1..(its boxes) distinct kernels");
    return nr;
}

/* The winners' invariants above: every shape covered by a valid kernel
 * index, at most max_kernels distinct ones when it is a budget K > 0. */
static void winners_check(const dt_task *t, const int *win, int max_kernels)
{
    char *seen = calloc((size_t)(t->nk > 0 ? t->nk : 1), 1);
    int distinct = 0, counted = seen != NULL;
    for (int64_t s = 0; s < t->nshapes; s++) {
        DT_ASSERT(win[s] >= 0 && win[s] < t->nk,
                  "every shape of the set is covered by a valid kernel index");
        if (seen && !seen[win[s]]) {
            seen[win[s]] = 1;
            distinct++;
        }
    }
    free(seen);
    DT_ASSERT(!counted || max_kernels <= 0 || distinct <= max_kernels,
              "under a budget K at most K distinct kernels are dispatched");
}

#ifndef NDEBUG

/* The boxes partition the shape set, each shape in the box of its winner;
 * with one variable, neighbouring boxes have different kernels (runs). */
static int ranges_ok(const dt_task *t, const int *win, const dt_select_info *info,
                     const dt_db_schedule *rows, int nr)
{
    char *seen = calloc((size_t)t->nshapes, 1);
    int ok = seen != NULL && nr >= 1 && info->ranges == nr &&
             (info->max_kernels <= 0 || info->kernels <= info->max_kernels);
    int64_t covered = 0;
    for (int i = 0; i < nr && ok; i++) {
        dt_box b;
        dt_err e;
        ok = rows[i].box == 1 && !dt_box_parse(t->w, rows[i].shape_lo, rows[i].shape_hi, &b, &e);
        for (int64_t j = 0, nb = ok ? dt_box_nshapes(t->w, &b) : 0; j < nb && ok; j++) {
            int64_t s = dt_box_shape(t->w, &b, j);
            ok = !seen[s] && rows[i].kernel_id == t->k[win[s]].id;
            seen[s] = 1;
            covered++;
        }
        if (ok && t->w->nvars == 1 && i > 0)
            ok = rows[i].kernel_id != rows[i - 1].kernel_id;
    }
    free(seen);
    return ok && covered == t->nshapes;
}
#endif

int dt_select_run(dt_task *t, dt_predictor *p, dt_measurer *m, const dt_select_opts *o,
                  dt_db *db, dt_select_info *info, dt_err *e)
{
    memset(info, 0, sizeof *info);
    int rc = 0;
    int topk = o->topk;
    int64_t max_trials = o->max_trials;
    info->max_kernels = o->max_kernels;
    if (topk > 16)
        topk = 16;
    /* predictions of every kernel that ran, from the final model */
    for (int k = 0; k < t->nk && !rc; k++)
        if (!t->k[k].failed && t->k[k].nm > 0)
            rc = dt_predictor_predict_kernel(p, t, k, e);
    if (rc)
        return rc;
    int64_t cap = t->nshapes * (topk > 0 ? topk : 1);
    dt_mreq *q = malloc((size_t)cap * sizeof *q);
    int *win = malloc((size_t)t->nshapes * sizeof *win);
    double *wns = malloc((size_t)t->nshapes * sizeof *wns);
    dt_db_schedule *rows = calloc((size_t)t->nshapes, sizeof *rows);
    char (*text)[2][128] = calloc((size_t)t->nshapes, sizeof *text);
    if (!q || !win || !wns || !rows || !text) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    int64_t topk_trials = max_trials - dt_select_verify_share(t, topk, o->max_kernels, max_trials);
    int n = topk_requests(t, topk, topk_trials, q, e);
    if (n < 0) {
        rc = n;
        goto out;
    }
    /* in chunks, so that records reach the database as they come */
    for (int i = 0; i < n && !rc; i += 64)
        rc = dt_measurer_run(m, t, q + i, n - i < 64 ? n - i : 64, e);
    if (rc)
        goto out;
    info->trials = n;
    if (!fastest_winners(t, win, wns)) {
        rc = dt_errf(e, DT_ENOTFOUND, "%s: no kernel ran successfully; nothing to dispatch",
                     t->key);
        goto out;
    }
    /* a kernel budget: the set of at most K kernels, each shape to its
     * fastest member (measured where the budget allows); unrestricted: the
     * fastest measured, unless an estimate is DT_SELECT_DISTRUST below it */
    rc = o->max_kernels != DT_SELECT_ALL
             ? dt_select_budget_winners(t, m, o, max_trials - n, win, wns, info, e)
             : dt_select_distrust_winners(t, win, wns, e);
    if (rc)
        goto out;
    merge_ties(t, o, win, wns);
    if ((rc = fill_gaps(t, win, wns, e)))
        goto out;
    if (win[0] < 0) { /* no shape has one (cannot happen when any has) */
        rc = dt_errf(e, DT_ENOTFOUND, "%s: no kernel can run; nothing to dispatch", t->key);
        goto out;
    }
    winners_check(t, win, o->max_kernels);
    for (int64_t s = 0; s < t->nshapes; s++)
        info->unmeasured += isnan(wns[s]);
    select_stats(t, win, wns, info);
    int nr = make_ranges(t, win, wns, rows, text, info, e);
    if (nr < 0) {
        rc = nr;
        goto out;
    }
    assert(ranges_ok(t, win, info, rows, nr));
    rc = dt_db_schedule_replace(db, t->workload_id, t->target_id, t->threads, rows, (size_t)nr,
                                e);
out:
    free(q);
    free(win);
    free(wns);
    free(rows);
    free(text);
    return rc;
}
