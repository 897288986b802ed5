/* Search rounds: candidates, their predicted value, picks, trials (see search.h). */
#include "tuner/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "costmodel/xgb.h"
#include "microkernel/mk_op.h"

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
    int n = 0, own_sketch = -1;
    for (int s = DT_SKETCH_COUNT; s < DT_SKETCH_ALL; s++)
        if (dt_mk_op_offers(t->w->op, t->w->dtype, t->w->attrs, (dt_sketch_kind)s))
            own_sketch = s;
    for (int tries = 0; n < want && tries < want * 8; tries++) {
        dt_annotation a;
        dt_err e2;
        double u = uniform(rng);
        int rc;
        if (fresh_only || npar == 0 || u < 0.2) {
            /* every back-end the target runs for the dtype (the unit is
             * searched); the sketches in turn, the op's own where it offers
             * one (conv2d's channel sketch for grouped convolutions) */
            int sketch = tries % 2 ? DT_SKETCH_STREAM : DT_SKETCH_BLOCKED;
            if (own_sketch >= 0 && tries % 3 == 2)
                sketch = own_sketch;
            rc = dt_annotation_sample_dtype(rng, tg, (int)t->w->dtype, sketch, t->threads, &a,
                                            &e2);
            if (rc)
                rc = dt_annotation_sample_dtype(rng, tg, (int)t->w->dtype, -1, t->threads, &a,
                                                &e2);
        } else {
            const dt_annotation *p1 = &t->k[par[dt_rng_below(rng, npar)]].a;
            const dt_annotation *p2 = &t->k[par[dt_rng_below(rng, npar)]].a;
            if (u < 0.45 && p1->sketch == p2->sketch && p1->unit == p2->unit && p1 != p2)
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

/* One round's scratch and requests. */
typedef struct round_ws {
    dt_task *t;
    const dt_search_opts *o;
    const int64_t *focus;
    int nfocus;
    int kpr, spk;         /* kernels per round, shapes per kernel */
    int fresh;            /* fresh samples only (cold start, random strategy) */
    double *best;         /* [nshapes] best known time */
    int *arg;             /* [nshapes] its kernel */
    double *cur;          /* [nshapes] best, lowered by the picks' predictions */
    char *mark;           /* [nk + 1] */
    int *par;             /* [nk + 1] parents */
    cand *c;              /* [ncand] */
    int ncand, nc;
    float *preds;         /* [ncand * nfocus] */
    shape_score *tmp;     /* [nfocus] */
    int64_t *shp;         /* [nfocus] */
    reqlist rl;
} round_ws;

static void ws_free(round_ws *w)
{
    free(w->best);
    free(w->arg);
    free(w->mark);
    free(w->par);
    free(w->c);
    free(w->preds);
    free(w->tmp);
    free(w->shp);
    free(w->cur);
    free(w->rl.q);
    free(w->rl.pred);
}

static int ws_alloc(round_ws *w, dt_err *e)
{
    const dt_task *t = w->t;
    int nfocus = w->nfocus;
    int cap = w->kpr * w->spk + w->kpr + 8;
    w->best = malloc((size_t)t->nshapes * sizeof *w->best);
    w->arg = malloc((size_t)t->nshapes * sizeof *w->arg);
    w->mark = malloc((size_t)(t->nk + 1));
    w->par = calloc((size_t)(t->nk + 1), sizeof *w->par);
    w->c = calloc((size_t)w->ncand, sizeof *w->c);
    w->preds = malloc((size_t)w->ncand * (size_t)nfocus * sizeof *w->preds);
    w->tmp = malloc((size_t)nfocus * sizeof *w->tmp);
    w->shp = malloc((size_t)nfocus * sizeof *w->shp);
    w->cur = malloc((size_t)t->nshapes * sizeof *w->cur);
    w->rl = (reqlist){malloc((size_t)cap * sizeof *w->rl.q),
                      malloc((size_t)cap * sizeof *w->rl.pred), 0, cap};
    if (!w->best || !w->arg || !w->mark || !w->par || !w->c || !w->preds || !w->tmp ||
        !w->shp || !w->cur || !w->rl.q || !w->rl.pred)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    return 0;
}

/* Step 1: the candidates, bred from the focus shapes' elites (fresh
 * samples on a cold start or for the random strategy), each predicted on
 * the focus shapes. */
static int make_candidates(round_ws *w, dt_predictor *p, dt_rng *rng, const dt_target *tg,
                           dt_err *e)
{
    const dt_task *t = w->t;
    const dt_search_opts *o = w->o;
    int npar = 0;
    if (!w->fresh) {
        elites(t, w->focus, w->nfocus, o->elite_per_shape > 0 ? o->elite_per_shape : 3,
               w->mark);
        /* per-shape (Ansor-style) breeds only from what was measured on its shape */
        int own = o->strategy == DT_STRATEGY_PER_SHAPE;
        for (int k = 0; k < t->nk; k++)
            if (w->mark[k] && (!own || !isnan(dt_task_measured(t, k, w->focus[0]))))
                w->par[npar++] = k;
    }
    w->nc = breed(t, w->par, npar, w->fresh ? w->kpr : w->ncand, w->fresh, rng, tg, w->c);
    int rc = 0;
    for (int i = 0; i < w->nc && !rc; i++) {
        w->c[i].pred = w->preds + (size_t)i * w->nfocus;
        rc = dt_predictor_predict(p, t, &w->c[i].a, w->focus, w->nfocus, w->c[i].pred, e);
    }
    return rc;
}

/* The unpicked candidate with the largest predicted lowering of the focus
 * objective (w->cur), or the closest when none lowers it; -1 when none. */
static int best_candidate(const round_ws *w)
{
    const dt_task *t = w->t;
    int bi = -1;
    double bv = -INFINITY;
    for (int i = 0; i < w->nc; i++) {
        if (w->c[i].picked)
            continue;
        double v = 0, closeness = 0;
        for (int f = 0; f < w->nfocus; f++) {
            double b = w->cur[w->focus[f]], pr = w->c[i].pred[f], wt = t->weight[w->focus[f]];
            if (!isfinite(b))
                v += wt * 1e12;
            else if (pr < b)
                v += wt * (b - pr);
            else
                closeness -= wt * (pr / b - 1);
        }
        double score = v > 0 ? v : closeness - 1e-9; /* nothing gains: the closest */
        if (score > bv) {
            bv = score;
            bi = i;
        }
    }
    return bi;
}

/* Step 2: greedy picks, each on the shapes where it matters most. */
static int pick_greedy(round_ws *w, int ngreedy, dt_err *e)
{
    dt_task *t = w->t;
    for (int pick = 0; pick < ngreedy && pick < w->nc; pick++) {
        int bi = best_candidate(w);
        if (bi < 0)
            break;
        cand *c = &w->c[bi];
        c->picked = 1;
        int npicked = pick_shapes(t, w->focus, w->nfocus, w->cur, c->pred, w->spk, w->shp,
                                  w->tmp);
        int k = dt_task_add(t, &c->a, 0, e);
        if (k < 0)
            return k;
        for (int j = 0; j < npicked; j++)
            add_req(&w->rl, k, w->shp[j], c->pred[w->tmp[j].f]);
        for (int f = 0; f < w->nfocus; f++)
            if (c->pred[f] < w->cur[w->focus[f]])
                w->cur[w->focus[f]] = c->pred[f];
    }
    return 0;
}

/* Step 3: ε, random candidates on shapes drawn by weight. */
static int pick_random(round_ws *w, int nrand, dt_rng *rng, dt_err *e)
{
    dt_task *t = w->t;
    for (int r = 0; r < nrand; r++) {
        int left = 0;
        for (int i = 0; i < w->nc; i++)
            left += !w->c[i].picked;
        if (!left)
            break;
        int j = dt_rng_below(rng, left), i = 0;
        for (;; i++)
            if (!w->c[i].picked && j-- == 0)
                break;
        w->c[i].picked = 1;
        int k = dt_task_add(t, &w->c[i].a, 0, e);
        if (k < 0)
            return k;
        for (int q = 0; q < w->spk; q++) {
            int64_t s = q == 0 && w->nfocus == 1 ? w->focus[0]
                                                 : draw_shape(t, w->focus, w->nfocus, rng);
            int f = 0;
            while (w->focus[f] != s)
                f++;
            add_req(&w->rl, k, s, w->c[i].pred[f]);
        }
    }
    return 0;
}

/* Step 4 (joint): grounding, a focus shape whose best time is only a
 * prediction gets that kernel measured there (the heaviest shapes first). */
static void add_grounding(round_ws *w)
{
    const dt_task *t = w->t;
    int budget = w->kpr / 2 > 0 ? w->kpr / 2 : 1;
    for (int g = 0; g < budget; g++) {
        int64_t bs = -1;
        double bw = 0;
        for (int f = 0; f < w->nfocus; f++) {
            int64_t s = w->focus[f];
            int k = w->arg[s];
            if (k < 0 || !isnan(dt_task_measured(t, k, s)))
                continue;
            int dup = 0;
            for (int i = 0; i < w->rl.n; i++)
                dup |= w->rl.q[i].k == k && w->rl.q[i].s == s;
            if (!dup && t->weight[s] * w->best[s] > bw) {
                bw = t->weight[s] * w->best[s];
                bs = s;
            }
        }
        if (bs < 0)
            break;
        add_req(&w->rl, w->arg[bs], bs, (float)w->best[bs]);
    }
}

/* Step 5: the requests cut to max_trials; kernels picked but left without a
 * trial are dropped; the new kernels counted into info. */
static void cap_requests(round_ws *w, int64_t max_trials, dt_round_info *info)
{
    dt_task *t = w->t;
    reqlist *rl = &w->rl;
    if (rl->n > max_trials)
        rl->n = (int)max_trials;
    while (t->nk > 0 && t->k[t->nk - 1].id == 0 && t->k[t->nk - 1].nm == 0) {
        int k = t->nk - 1, used = 0;
        for (int i = 0; i < rl->n; i++)
            used |= rl->q[i].k == k;
        if (used)
            break;
        free(t->k[k].pred);
        t->nk--;
    }
    for (int i = 0; i < rl->n; i++) {
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= rl->q[j].k != rl->q[i].k;
        info->kernels += first && t->k[rl->q[i].k].nm == 0;
    }
}

/* Step 6, after the trials: the predictor's quality on them (unseen data),
 * then it learns from them; the task's objective anew. */
static int learn(round_ws *w, dt_predictor *p, dt_round_info *info, dt_err *e)
{
    dt_task *t = w->t;
    const reqlist *rl = &w->rl;
    int rc = 0;
    double *pa = malloc((size_t)rl->n * sizeof *pa), *ma = malloc((size_t)rl->n * sizeof *ma);
    int np = 0;
    for (int i = 0; i < rl->n && pa && ma; i++) {
        const dt_mreq *q = &rl->q[i];
        if (!q->recorded)
            continue; /* not measured (no result came): no trial */
        info->trials++;
        if (q->status != DT_TRIAL_OK) {
            info->failed++;
            continue;
        }
        if (!rc)
            rc = dt_predictor_add(p, t, q->k, q->s, q->ns, e);
        if (isfinite(rl->pred[i]) && rl->pred[i] > 0) {
            pa[np] = t->flops[q->s] / rl->pred[i];
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
    info->objective = dt_task_best(t, w->best, NULL);
    return rc;
}

int dt_search_round(dt_task *t, dt_predictor *p, dt_measurer *m, const dt_search_opts *o,
                    const int64_t *focus, int nfocus, int64_t max_trials, dt_rng *rng,
                    const dt_target *tg, dt_round_info *info, dt_err *e)
{
    double t0 = dt_now_s();
    memset(info, 0, sizeof *info);
    info->tau = NAN;
    round_ws w = {.t = t, .o = o, .focus = focus, .nfocus = nfocus};
    w.kpr = o->kernels_per_round > 0 ? o->kernels_per_round : 8;
    w.spk = o->strategy == DT_STRATEGY_PER_SHAPE ? 1 : o->shapes_per_kernel;
    if (w.spk < 1)
        w.spk = 1;
    w.ncand = o->candidates > w.kpr ? o->candidates : w.kpr * 4;
    int rc = ws_alloc(&w, e);
    if (rc)
        goto out;
    dt_task_best(t, w.best, w.arg);
    memcpy(w.cur, w.best, (size_t)t->nshapes * sizeof *w.cur);
    /* a cold start (no model at all) or the random strategy: fresh samples */
    w.fresh = o->strategy == DT_STRATEGY_RANDOM || (!p->costmodel && t->nk == 0);
    if ((rc = make_candidates(&w, p, rng, tg, e)))
        goto out;
    int nrand = w.fresh ? w.kpr : (int)lround(w.kpr * o->epsilon);
    if (!w.fresh && nrand < 1 && w.kpr >= 4 && o->epsilon > 0)
        nrand = 1;
    if ((rc = pick_greedy(&w, w.kpr - nrand, e)) || (rc = pick_random(&w, nrand, rng, e)))
        goto out;
    if (!w.fresh && o->strategy == DT_STRATEGY_JOINT)
        add_grounding(&w);
    cap_requests(&w, max_trials, info);
    if ((rc = dt_measurer_run(m, t, w.rl.q, w.rl.n, e)))
        goto out;
    rc = learn(&w, p, info, e);
out:
    ws_free(&w);
    info->seconds = dt_now_s() - t0;
    return rc;
}
