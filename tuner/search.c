/* Search rounds: candidates, their predicted value, picks, trials (see search.h). */
#include "tuner/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "costmodel/xgb.h"

static const char *const strategy_names[] = {"joint", "per-shape", "random"};

const char *dt_strategy_name(dt_strategy s)
{
    return (unsigned)s < 3 ? strategy_names[s] : "?";
}

int dt_strategy_parse(const char *name, dt_strategy *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, strategy_names[i]) == 0) {
            *out = (dt_strategy)i;
            return 0;
        }
    return DT_EINVAL;
}

void dt_search_opts_default(dt_search_opts *o)
{
    *o = (dt_search_opts){.strategy = DT_STRATEGY_JOINT,
                          .kernels_per_round = 8,
                          .shapes_per_kernel = 4,
                          .epsilon = 0.2,
                          .candidates = 256,
                          .elite_per_shape = 3};
}

static double uniform(dt_rng *r) { return (double)(dt_rng_next(r) >> 11) * 0x1.0p-53; }

/* Marks in `mark` (nk entries) the best `per` kernels (known time) of every
 * shape of focus; returns how many were marked. */
static int elites(const dt_task *t, const int64_t *focus, int nfocus, int per, char *mark)
{
    memset(mark, 0, (size_t)t->nk);
    int cnt = 0, top[16];
    if (per > 8)
        per = 8;
    for (int f = 0; f < nfocus; f++) {
        int n = dt_task_topk(t, focus[f], per, top, NULL);
        for (int i = 0; i < n; i++)
            if (!mark[top[i]]) {
                mark[top[i]] = 1;
                cnt++;
            }
    }
    return cnt;
}

int dt_search_refresh(dt_task *t, dt_predictor *p, dt_err *e)
{
    if (t->nk == 0)
        return 0;
    char *mark = malloc((size_t)t->nk);
    int64_t *all = malloc((size_t)t->nshapes * sizeof *all);
    int rc = 0;
    if (!mark || !all) {
        free(mark);
        free(all);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int64_t s = 0; s < t->nshapes; s++)
        all[s] = s;
    elites(t, all, (int)t->nshapes, 4, mark);
    for (int k = 0; k < t->nk && !rc; k++)
        if (!t->k[k].failed && (mark[k] || !t->k[k].pred))
            rc = dt_predictor_predict_kernel(p, t, k, e);
    free(mark);
    free(all);
    return rc;
}

/* ---- candidates ------------------------------------------------------------------ */

typedef struct {
    dt_annotation a;
    float *pred;   /* [nfocus] */
    double value;
    int picked;
} cand;

static int seen(const dt_task *t, const cand *c, int n, const dt_annotation *a)
{
    if (dt_task_find(t, a) >= 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (dt_annotation_equal(&c[i].a, a))
            return 1;
    return 0;
}

/* Breeds up to want candidates from the parents (kernel indices). */
static int breed(const dt_task *t, const int *par, int npar, int want, int fresh_only,
                 dt_rng *rng, const dt_target *tg, cand *c)
{
    int n = 0;
    for (int tries = 0; n < want && tries < want * 8; tries++) {
        dt_annotation a;
        dt_err e2;
        double u = uniform(rng);
        int rc;
        if (fresh_only || npar == 0 || u < 0.2) {
            rc = dt_annotation_sample(rng, tg, tries % 2 ? DT_SKETCH_STREAM : DT_SKETCH_BLOCKED,
                                      t->threads, &a, &e2);
            if (rc)
                rc = dt_annotation_sample(rng, tg, -1, t->threads, &a, &e2);
        } else {
            const dt_annotation *p1 = &t->k[par[dt_rng_below(rng, npar)]].a;
            const dt_annotation *p2 = &t->k[par[dt_rng_below(rng, npar)]].a;
            if (u < 0.45 && p1->sketch == p2->sketch && p1 != p2)
                rc = dt_annotation_crossover(rng, tg, p1, p2, &a, &e2);
            else
                rc = dt_annotation_mutate(rng, tg, p1, &a, &e2);
            if (!rc && uniform(rng) < 0.3) { /* sometimes two steps away */
                dt_annotation b = a;
                if (dt_annotation_mutate(rng, tg, &b, &a, &e2))
                    a = b;
            }
        }
        if (rc)
            continue;
        a.threads = t->threads;
        if (dt_annotation_validate(&a, tg, &e2) || seen(t, c, n, &a))
            continue;
        c[n].a = a;
        c[n].picked = 0;
        n++;
    }
    return n;
}

/* Shapes of focus where candidate c matters most: largest w·(best − pred),
 * then lowest pred/best. */
typedef struct {
    int f;
    double gain, ratio;
} shape_score;

static int cmp_score(const void *a, const void *b)
{
    const shape_score *x = a, *y = b;
    if (x->gain != y->gain)
        return x->gain > y->gain ? -1 : 1;
    if (x->ratio != y->ratio)
        return x->ratio < y->ratio ? -1 : 1;
    return x->f - y->f;
}

static int pick_shapes(const dt_task *t, const int64_t *focus, int nfocus, const double *best,
                       const float *pred, int m, int64_t *out, shape_score *tmp)
{
    for (int f = 0; f < nfocus; f++) {
        double b = best[focus[f]], pr = pred[f];
        double w = t->weight[focus[f]];
        tmp[f] = (shape_score){f, isfinite(b) ? w * (b - pr) : w * 1e12,
                               isfinite(b) && b > 0 ? pr / b : 0};
        if (tmp[f].gain < 0)
            tmp[f].gain = 0;
    }
    qsort(tmp, (size_t)nfocus, sizeof *tmp, cmp_score);
    int n = m < nfocus ? m : nfocus;
    for (int i = 0; i < n; i++)
        out[i] = focus[tmp[i].f];
    return n;
}

/* A focus shape drawn by weight. */
static int64_t draw_shape(const dt_task *t, const int64_t *focus, int nfocus, dt_rng *rng)
{
    double tot = 0;
    for (int f = 0; f < nfocus; f++)
        tot += t->weight[focus[f]];
    double u = uniform(rng) * tot;
    for (int f = 0; f < nfocus; f++) {
        u -= t->weight[focus[f]];
        if (u <= 0)
            return focus[f];
    }
    return focus[nfocus - 1];
}

/* ---- the round ------------------------------------------------------------------------ */

typedef struct {
    dt_mreq *q;
    float *pred; /* predicted ns per request, NAN when none */
    int n, cap;
} reqlist;

static int add_req(reqlist *r, int k, int64_t s, float pred)
{
    for (int i = 0; i < r->n; i++)
        if (r->q[i].k == k && r->q[i].s == s)
            return 0;
    if (r->n == r->cap)
        return -1;
    r->q[r->n] = (dt_mreq){.k = k, .s = s};
    r->pred[r->n++] = pred;
    return 0;
}

int dt_search_round(dt_task *t, dt_predictor *p, dt_measurer *m, const dt_search_opts *o,
                    const int64_t *focus, int nfocus, int64_t max_trials, dt_rng *rng,
                    const dt_target *tg, dt_round_info *info, dt_err *e)
{
    double t0 = dt_now_s();
    memset(info, 0, sizeof *info);
    info->tau = NAN;
    int kpr = o->kernels_per_round > 0 ? o->kernels_per_round : 8;
    int spk = o->strategy == DT_STRATEGY_PER_SHAPE ? 1 : o->shapes_per_kernel;
    if (spk < 1)
        spk = 1;
    int ncand = o->candidates > kpr ? o->candidates : kpr * 4;
    int cap = kpr * spk + kpr + 8;
    double *best = malloc((size_t)t->nshapes * sizeof *best);
    int *arg = malloc((size_t)t->nshapes * sizeof *arg);
    char *mark = malloc((size_t)(t->nk + 1));
    int *par = calloc((size_t)(t->nk + 1), sizeof *par);
    cand *c = calloc((size_t)ncand, sizeof *c);
    float *preds = malloc((size_t)ncand * (size_t)nfocus * sizeof *preds);
    shape_score *tmp = malloc((size_t)nfocus * sizeof *tmp);
    int64_t *shp = malloc((size_t)nfocus * sizeof *shp);
    double *cur = malloc((size_t)t->nshapes * sizeof *cur);
    reqlist rl = {malloc((size_t)cap * sizeof *rl.q), malloc((size_t)cap * sizeof *rl.pred), 0,
                  cap};
    int rc = 0;
    if (!best || !arg || !mark || !par || !c || !preds || !tmp || !shp || !cur || !rl.q ||
        !rl.pred) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    dt_task_best(t, best, arg);
    memcpy(cur, best, (size_t)t->nshapes * sizeof *cur);

    /* a cold start (no model at all) or the random strategy: fresh samples */
    int fresh = o->strategy == DT_STRATEGY_RANDOM || (!p->costmodel && t->nk == 0);
    int npar = 0;
    if (!fresh) {
        elites(t, focus, nfocus, o->elite_per_shape > 0 ? o->elite_per_shape : 3, mark);
        /* per-shape (Ansor-style) breeds only from what was measured on its shape */
        int own = o->strategy == DT_STRATEGY_PER_SHAPE;
        for (int k = 0; k < t->nk; k++)
            if (mark[k] && (!own || !isnan(dt_task_measured(t, k, focus[0]))))
                par[npar++] = k;
    }
    int nc = breed(t, par, npar, fresh ? kpr : ncand, fresh, rng, tg, c);
    for (int i = 0; i < nc && !rc; i++) {
        c[i].pred = preds + (size_t)i * nfocus;
        rc = dt_predictor_predict(p, t, &c[i].a, focus, nfocus, c[i].pred, e);
    }
    if (rc)
        goto out;

    int nrand = fresh ? kpr : (int)lround(kpr * o->epsilon);
    if (!fresh && nrand < 1 && kpr >= 4 && o->epsilon > 0)
        nrand = 1;
    int ngreedy = kpr - nrand;
    /* greedy picks: largest predicted lowering of the focus objective */
    for (int pick = 0; pick < ngreedy && pick < nc; pick++) {
        int bi = -1;
        double bv = -INFINITY;
        for (int i = 0; i < nc; i++) {
            if (c[i].picked)
                continue;
            double v = 0, closeness = 0;
            for (int f = 0; f < nfocus; f++) {
                double b = cur[focus[f]], pr = c[i].pred[f], w = t->weight[focus[f]];
                if (!isfinite(b))
                    v += w * 1e12;
                else if (pr < b)
                    v += w * (b - pr);
                else
                    closeness -= w * (pr / b - 1);
            }
            double score = v > 0 ? v : closeness - 1e-9; /* nothing gains: the closest */
            if (score > bv) {
                bv = score;
                bi = i;
            }
        }
        if (bi < 0)
            break;
        c[bi].picked = 1;
        int npicked = pick_shapes(t, focus, nfocus, cur, c[bi].pred, spk, shp, tmp);
        int k = dt_task_add(t, &c[bi].a, 0, e);
        if (k < 0) {
            rc = k;
            goto out;
        }
        for (int j = 0; j < npicked; j++)
            add_req(&rl, k, shp[j], c[bi].pred[tmp[j].f]);
        for (int f = 0; f < nfocus; f++)
            if (c[bi].pred[f] < cur[focus[f]])
                cur[focus[f]] = c[bi].pred[f];
    }
    /* ε: random candidates on shapes drawn by weight */
    for (int r = 0; r < nrand; r++) {
        int left = 0;
        for (int i = 0; i < nc; i++)
            left += !c[i].picked;
        if (!left)
            break;
        int j = dt_rng_below(rng, left), i = 0;
        for (;; i++)
            if (!c[i].picked && j-- == 0)
                break;
        c[i].picked = 1;
        int k = dt_task_add(t, &c[i].a, 0, e);
        if (k < 0) {
            rc = k;
            goto out;
        }
        for (int q = 0; q < spk; q++) {
            int64_t s = q == 0 && nfocus == 1 ? focus[0] : draw_shape(t, focus, nfocus, rng);
            int f = 0;
            while (focus[f] != s)
                f++;
            add_req(&rl, k, s, c[i].pred[f]);
        }
    }
    /* grounding: a focus shape whose best time is only a prediction gets
     * that kernel measured there (the heaviest shapes first) */
    if (!fresh && o->strategy == DT_STRATEGY_JOINT) {
        int budget = kpr / 2 > 0 ? kpr / 2 : 1;
        for (int g = 0; g < budget; g++) {
            int64_t bs = -1;
            double bw = 0;
            for (int f = 0; f < nfocus; f++) {
                int64_t s = focus[f];
                int k = arg[s];
                if (k < 0 || !isnan(dt_task_measured(t, k, s)))
                    continue;
                int dup = 0;
                for (int i = 0; i < rl.n; i++)
                    dup |= rl.q[i].k == k && rl.q[i].s == s;
                if (!dup && t->weight[s] * best[s] > bw) {
                    bw = t->weight[s] * best[s];
                    bs = s;
                }
            }
            if (bs < 0)
                break;
            add_req(&rl, arg[bs], bs, (float)best[bs]);
        }
    }
    if (rl.n > max_trials)
        rl.n = (int)max_trials;
    /* kernels picked but left without a trial by the cap are dropped */
    while (t->nk > 0 && t->k[t->nk - 1].id == 0 && t->k[t->nk - 1].nm == 0) {
        int k = t->nk - 1, used = 0;
        for (int i = 0; i < rl.n; i++)
            used |= rl.q[i].k == k;
        if (used)
            break;
        free(t->k[k].pred);
        t->nk--;
    }

    for (int i = 0; i < rl.n; i++) {
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= rl.q[j].k != rl.q[i].k;
        info->kernels += first && t->k[rl.q[i].k].nm == 0;
    }
    if ((rc = dt_measurer_run(m, t, rl.q, rl.n, e)))
        goto out;
    /* quality on unseen data, then learn from it */
    double *pa = malloc((size_t)rl.n * sizeof *pa), *ma = malloc((size_t)rl.n * sizeof *ma);
    int np = 0;
    for (int i = 0; i < rl.n && pa && ma; i++) {
        const dt_mreq *q = &rl.q[i];
        if (!q->recorded)
            continue; /* not measured (no result came): no trial */
        info->trials++;
        if (q->status != DT_TRIAL_OK) {
            info->failed++;
            continue;
        }
        if (!rc)
            rc = dt_predictor_add(p, t, q->k, q->s, q->ns, e);
        if (isfinite(rl.pred[i]) && rl.pred[i] > 0) {
            pa[np] = t->flops[q->s] / rl.pred[i];
            ma[np++] = t->flops[q->s] / q->ns;
        }
    }
    if (p->costmodel) /* the one τ (tuner/quality.h): n/a under 10 pairs */
        info->tau = dt_quality_tau(pa, ma, np);
    free(pa);
    free(ma);
    int trained = 0;
    if (!rc)
        rc = dt_predictor_train(p, &trained, e);
    if (!rc)
        rc = dt_search_refresh(t, p, e);
    info->objective = dt_task_best(t, best, NULL);
out:
    free(best);
    free(arg);
    free(mark);
    free(par);
    free(c);
    free(preds);
    free(tmp);
    free(shp);
    free(cur);
    free(rl.q);
    free(rl.pred);
    info->seconds = dt_now_s() - t0;
    return rc;
}
