/* The model-level tuning loop (see tune.h). */
#include "tuner/tune.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "common/clock.h"
#include "common/json_util.h"

void dt_tune_opts_default(dt_tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = DT_STRATEGY_JOINT;
    o->seed = 1;
    o->topk = 2;
    /* the fewest kernels within DT_SELECT_LOSS_TOL, each dispatched pair
     * measured (select.h, "kernel budget") */
    o->max_kernels = DT_SELECT_AUTO;
    o->patience = 8;
    o->min_improvement = 0.002;
    dt_search_opts_default(&o->search);
    o->meas.min_time_s = 0.005;
}

static double model_latency(const dt_task *t, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += t[i].count * t[i].objective;
    return s;
}

const char *dt_tune_outcome_name(dt_tune_outcome o)
{
    return o == DT_TUNE_SCHEDULED ? "scheduled" : "skipped";
}

/* ---- the budget split ------------------------------------------------------------ */

int64_t dt_tune_min_trials(int64_t used, int unmeasured)
{
    return used + (int64_t)DT_TUNE_MIN_FIRST_TRIALS * (unmeasured > 0 ? unmeasured : 0);
}

double dt_tune_min_seconds(int unmeasured)
{
    return DT_TUNE_MIN_SECONDS_PER_TASK * (unmeasured > 0 ? unmeasured : 0);
}

int dt_tune_check_budget(int64_t trials, double time_s, int64_t used, int unmeasured, int ntasks,
                         dt_err *e)
{
    if (unmeasured <= 0)
        return 0; /* every task has records: at worst the selection is redone */
    int64_t mt = dt_tune_min_trials(used, unmeasured);
    if (trials > 0 && trials < mt) {
        char rec[64] = "";
        if (used > 0)
            snprintf(rec, sizeof rec, ", on top of the %lld already recorded", (long long)used);
        return dt_errf(e, DT_EINVAL,
                       "a budget of %lld trial%s is too small for %d workload%s: it needs at "
                       "least %lld (%d for each of the %d workload%s not measured yet%s)",
                       (long long)trials, trials == 1 ? "" : "s", ntasks, ntasks == 1 ? "" : "s",
                       (long long)mt,
                       DT_TUNE_MIN_FIRST_TRIALS, unmeasured, unmeasured == 1 ? "" : "s", rec);
    }
    double ms = dt_tune_min_seconds(unmeasured);
    if (time_s > 0 && time_s < ms)
        return dt_errf(e, DT_EINVAL,
                       "a time budget of %g s is too small for %d workload%s: it needs at least "
                       "%g s (%g s for each of the %d workload%s not measured yet)",
                       time_s, ntasks, ntasks == 1 ? "" : "s", ms, DT_TUNE_MIN_SECONDS_PER_TASK,
                       unmeasured, unmeasured == 1 ? "" : "s");
    return 0;
}

int64_t dt_tune_reserve(int64_t need, int64_t budget)
{
    if (need < 0)
        need = 0;
    if (budget > 0 && need > budget / 4)
        need = budget / 4;
    return need;
}

int64_t dt_tune_first_share(int64_t left, int64_t reserve, int waiting, int unmeasured_waiting,
                            int unmeasured)
{
    if (left <= 0 || waiting < 1)
        return 0;
    int64_t fair = left > reserve ? (left - reserve) / waiting : 0;
    int64_t floor = 0;
    if (unmeasured) {
        int u = unmeasured_waiting > 0 ? unmeasured_waiting : 1;
        floor = left / u < DT_TUNE_MIN_FIRST_TRIALS ? left / u : DT_TUNE_MIN_FIRST_TRIALS;
        if (floor < 1)
            floor = left > 0 ? 1 : 0; /* below the checked minimum: still try one */
    }
    return fair > floor ? fair : floor;
}

int64_t dt_tune_select_share(int64_t left, int tasks_left)
{
    if (left <= 0 || tasks_left < 1)
        return 0;
    return left / tasks_left;
}

/* ---- the scheduler ------------------------------------------------------------------- */

/* A task with at least one successful record. */
static int task_measured(const dt_task *t)
{
    for (int k = 0; k < t->nk; k++)
        if (!t->k[k].failed && t->k[k].nm > 0)
            return 1;
    return 0;
}

/* Per-shape: the shape of the set with the fewest trials so far. */
static int64_t least_tuned_shape(const dt_task *t)
{
    int64_t best = 0, bc = INT64_MAX;
    for (int64_t s = 0; s < t->nshapes; s++) {
        int64_t c = 0;
        for (int k = 0; k < t->nk; k++)
            c += !isnan(dt_task_measured(t, k, s));
        if (c < bc) {
            bc = c;
            best = s;
        }
    }
    return best;
}

/* Shapes of t whose best known time is not a measurement (a prediction, or
 * nothing yet); every shape when memory runs out. */
static int64_t predicted_shapes(const dt_task *t)
{
    double *best = malloc((size_t)t->nshapes * sizeof *best);
    int *arg = malloc((size_t)t->nshapes * sizeof *arg);
    int64_t n = t->nshapes;
    if (best && arg) {
        dt_task_best(t, best, arg);
        n = 0;
        for (int64_t s = 0; s < t->nshapes; s++)
            n += arg[s] < 0 || isnan(dt_task_measured(t, arg[s], s));
    }
    free(best);
    free(arg);
    return n;
}

static void emit(const dt_tune_opts *o, dt_tune_event *ev, const dt_task *tasks, int n,
                 int64_t used, double t0, int64_t run_trials)
{
    if (!o->on_event)
        return;
    ev->predicted_shapes = ev->task ? predicted_shapes(ev->task) : 0;
    ev->ntasks = n;
    ev->trials_used = used;
    ev->trials_budget = o->trials;
    ev->elapsed_s = dt_now_s() - t0;
    ev->time_budget_s = o->time_s;
    ev->trials_per_min = ev->elapsed_s > 0 ? (double)run_trials * 60.0 / ev->elapsed_s : 0;
    ev->model_latency_ns = model_latency(tasks, n);
    o->on_event(ev, o->ud);
}

/* Seconds per trial so far (builds included), or the guess before any. */
static double seconds_per_trial(const dt_measurer *m)
{
    int64_t mt = m ? dt_measurer_trials(m) : 0;
    double s = mt > 0 ? dt_measurer_seconds(m) / (double)mt : 0;
    return s > 0 ? s : DT_TUNE_GUESS_SECONDS_PER_TRIAL;
}

/* The time held back for the selection's `need` trials (each about half a
 * search trial: its kernel is built already), at most a quarter of time_s. */
static double time_reserve(double time_s, double per, int64_t need)
{
    if (!(time_s > 0))
        return 0;
    double t = 0.5 * per * (double)need;
    return t < time_s / 4 ? t : time_s / 4;
}

/* The predictor of w's (op, dtype) among p[0..np), or -1. */
static int op_index(dt_predictor *p, int np, const dt_workload *w)
{
    for (int i = 0; i < np; i++)
        if (strcmp(p[i].opname, w->op->name) == 0 && p[i].dtype == w->dtype)
            return i;
    return -1;
}

/* ---- the first rounds (pure: see tune.h) ------------------------------------------ */

int dt_tune_first_next(const char *waiting, const char *measured, int n)
{
    /* tasks with no usable record, then the others, each in model order */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if (waiting[i] && !!measured[i] == pass)
                return i;
    return -1;
}

int64_t dt_tune_first_cap(int64_t left, int64_t reserve, const char *waiting,
                          const char *measured, int n, int i)
{
    int nwait = 0, uw = 0;
    for (int j = 0; j < n; j++)
        if (waiting[j]) {
            nwait++;
            uw += !measured[j];
        }
    return dt_tune_first_share(left, reserve, nwait, uw, !measured[i]);
}

/* ---- the run --------------------------------------------------------------------- */

/* One dt_tune call's state. */
typedef struct tune_run {
    dt_db *db;
    const dt_target *tg;
    dt_task *tasks;
    int n;
    const dt_tune_opts *o;
    dt_tune_result *r;
    dt_predictor pred[DT_TUNE_MAX_COSTMODELS];
    int np;
    dt_measurer *m;
    int64_t used;         /* recorded trials of the tasks */
    double t0;
    int topk;             /* the final selection's */
    int64_t need;         /* Σ the selection's reserve per task */
    int64_t reserve;      /* of the trial budget, for the selection */
    char first[DT_TUNE_MAX_TASKS]; /* task i had (or was passed over for) its first round */
} tune_run;

static dt_predictor *task_predictor(tune_run *u, const dt_task *t)
{
    return &u->pred[op_index(u->pred, u->np, t->w)];
}

static void run_emit(tune_run *u, dt_tune_event *ev, int64_t run_trials)
{
    emit(u->o, ev, u->tasks, u->n, u->used, u->t0, run_trials);
}

/* Step 1: the tasks attached to the database (their records counted in
 * u->used), a predictor loaded per (op, dtype). */
static int attach_tasks(tune_run *u, const char *target_key, dt_err *e)
{
    int rc = 0;
    for (int i = 0; i < u->n && !rc; i++) {
        dt_task *t = &u->tasks[i];
        if ((rc = dt_task_attach(t, u->db, u->tg, target_key, e)))
            break;
        u->used += t->trials;
        if (op_index(u->pred, u->np, t->w) < 0) {
            if (u->np == DT_TUNE_MAX_COSTMODELS)
                return dt_errf(e, DT_EUNSUPPORTED, "more than %d (op, dtype) pairs in one tune",
                               DT_TUNE_MAX_COSTMODELS);
            dt_target dtg = dt_dtype_target(t->w->dtype, u->tg);
            dt_predictor_init(&u->pred[u->np], t->w->op->name, t->w->dtype, &dtg,
                              t->target_id);
            rc = dt_predictor_load(&u->pred[u->np++], u->db, e);
        }
    }
    return rc;
}

/* Step 2: the minimum budget checked (unless o->no_min_check). */
static int check_minimum(tune_run *u, dt_err *e)
{
    if (u->o->no_min_check)
        return 0;
    int unmeasured = 0;
    for (int i = 0; i < u->n; i++)
        unmeasured += !task_measured(&u->tasks[i]);
    return dt_tune_check_budget(u->o->trials, u->o->time_s, u->used, unmeasured, u->n, e);
}

/* Step 3: every cost model trained, every task's predictions refreshed and
 * its objective known; a resumed task reported. */
static int prepare_tasks(tune_run *u, dt_err *e)
{
    int rc = 0;
    for (int i = 0; i < u->n && !rc; i++) {
        dt_task *t = &u->tasks[i];
        dt_predictor *p = task_predictor(u, t);
        if (!p->costmodel && (rc = dt_predictor_train(p, NULL, e)))
            break;
        if ((rc = dt_search_refresh(t, p, e)))
            break;
        double *best = malloc((size_t)t->nshapes * sizeof *best);
        if (!best)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        t->objective = t->best_objective = dt_task_best(t, best, NULL);
        free(best);
        if (t->resumed) {
            dt_tune_event ev = {.kind = DT_TUNE_EV_RESUMED, .task = t, .task_index = i};
            run_emit(u, &ev, 0);
        }
    }
    return rc;
}

/* The next task to get a round, or -1 when all are finished; *is_first tells
 * whether the pick is a first round (dt_tune_first_next). */
static int pick_task(const tune_run *u, int *is_first)
{
    char waiting[DT_TUNE_MAX_TASKS], measured[DT_TUNE_MAX_TASKS];
    for (int i = 0; i < u->n; i++) {
        waiting[i] = !u->tasks[i].done && !u->first[i];
        measured[i] = (char)task_measured(&u->tasks[i]);
    }
    int f = dt_tune_first_next(waiting, measured, u->n);
    if (f >= 0) {
        *is_first = 1;
        return f;
    }
    *is_first = 0;
    const dt_task *t = u->tasks;
    int best = -1;
    double bv = -1;
    for (int i = 0; i < u->n; i++) {
        if (t[i].done)
            continue;
        int r = t[i].rounds < 3 ? t[i].rounds : 3;
        double g = 0;
        for (int j = 0; j < r; j++)
            g += t[i].last_gain[j];
        g = r ? g / r : 1;
        if (g < 0.001)
            g = 0.001;
        double obj = isfinite(t[i].objective) ? t[i].objective : 1e12;
        double v = t[i].count * obj * g;
        if (v > bv) {
            bv = v;
            best = i;
        }
    }
    return best;
}

/* The trial cap of task i's next round into *cap: 1 to run it, 0 to pass it
 * over (a first round with no share: its records carry it), -1 when the
 * search is over (the budget left is the selection's). */
static int round_cap(tune_run *u, int i, int is_first, int64_t *cap)
{
    const dt_tune_opts *o = u->o;
    int unmeasured = !task_measured(&u->tasks[i]);
    double el = dt_now_s() - u->t0, per = seconds_per_trial(u->m);
    double treserve = time_reserve(o->time_s, per, u->need);
    *cap = INT64_MAX;
    if (is_first) {
        /* every task's first round comes before the reserve is held
         * back: a fair share each, a floor for tasks with no record */
        char waiting[DT_TUNE_MAX_TASKS], measured[DT_TUNE_MAX_TASKS];
        for (int j = 0; j < u->n; j++) {
            waiting[j] = !u->tasks[j].done && !u->first[j];
            measured[j] = (char)task_measured(&u->tasks[j]);
        }
        if (o->trials > 0)
            *cap = dt_tune_first_cap(o->trials - u->used, u->reserve, waiting, measured, u->n, i);
        if (o->time_s > 0) {
            int64_t tl = (int64_t)((o->time_s - el) / per), tr = (int64_t)(treserve / per);
            int64_t ct = dt_tune_first_cap(tl > 0 ? tl : 0, tr, waiting, measured, u->n, i);
            if (unmeasured && ct < DT_TUNE_MIN_FIRST_TRIALS)
                ct = DT_TUNE_MIN_FIRST_TRIALS; /* even past the time: its minimum */
            *cap = ct < *cap ? ct : *cap;
        }
        u->first[i] = 1;
        return *cap > 0;
    }
    if (o->trials > 0)
        *cap = o->trials - u->reserve - u->used;
    if (*cap <= 0)
        return -1;
    if (o->time_s > 0 && el + treserve >= o->time_s)
        return -1;
    return 1;
}

/* The scheduler's book-keeping after a round of t that found `obj`: its
 * gains, best objective, staleness and whether it is finished. */
static void after_round(const dt_tune_opts *o, dt_task *t, const dt_round_info *ri)
{
    t->rounds++;
    double obj = ri->objective;
    double gain = isfinite(t->best_objective) && t->best_objective > 0
                      ? (t->best_objective - obj) / t->best_objective
                      : 1.0;
    if (!isfinite(t->best_objective) && isfinite(obj))
        gain = 1.0;
    memmove(t->last_gain + 1, t->last_gain, 2 * sizeof *t->last_gain);
    t->last_gain[0] = gain > 0 ? gain : 0;
    t->objective = obj;
    if (obj < t->best_objective)
        t->best_objective = obj;
    t->stale = gain >= o->min_improvement ? 0 : t->stale + 1;
    if (o->strategy == DT_STRATEGY_JOINT && o->patience > 0 && t->stale >= o->patience)
        t->done = 1;
    if (ri->trials == 0 && ++t->stale > 2 * (o->patience > 0 ? o->patience : 8))
        t->done = 1; /* nothing new left to try */
}

/* One search round of task i within cap trials, focus[] its scratch. */
static int run_round(tune_run *u, int i, int64_t cap, int64_t *focus, dt_rng *rng, dt_err *e)
{
    const dt_tune_opts *o = u->o;
    dt_task *t = &u->tasks[i];
    int nf = 0;
    if (o->strategy == DT_STRATEGY_PER_SHAPE)
        focus[nf++] = least_tuned_shape(t);
    else
        for (int64_t s = 0; s < t->nshapes; s++)
            focus[nf++] = s;
    dt_search_opts so = o->search;
    so.strategy = o->strategy;
    /* a small round spreads its trials over more kernels (one shape
     * each at the least) rather than a few kernels on many shapes */
    int kpr = so.kernels_per_round > 0 ? so.kernels_per_round : 8;
    if (so.shapes_per_kernel > 1 && cap < (int64_t)kpr * so.shapes_per_kernel)
        so.shapes_per_kernel = cap / kpr > 1 ? (int)(cap / kpr) : 1;
    dt_tune_event ev = {.kind = DT_TUNE_EV_ROUND, .task = t, .task_index = i};
    /* a dtype the CPU cannot run natively is searched on its portable back-end */
    dt_target dtg = dt_dtype_target(t->w->dtype, u->tg);
    int rc = dt_search_round(t, task_predictor(u, t), u->m, &so, focus, nf, cap, rng, &dtg,
                             &ev.round, e);
    if (rc)
        return rc;
    u->used += ev.round.trials;
    after_round(o, t, &ev.round);
    run_emit(u, &ev, dt_measurer_trials(u->m));
    return 0;
}

/* Step 4: the search, round after round, until every task is finished, the
 * budget left is the selection's, or the stop flag is set. */
static int search_rounds(tune_run *u, dt_err *e)
{
    const dt_tune_opts *o = u->o;
    u->topk = o->strategy == DT_STRATEGY_PER_SHAPE ? 0 : o->topk;
    u->need = 0;
    for (int i = 0; i < u->n; i++)
        u->need += dt_select_reserve(&u->tasks[i], u->topk, o->max_kernels);
    /* the selection's reserve: at most a quarter of the trial budget; of a
     * time budget, at most a quarter of the time (see time_reserve) */
    u->reserve = dt_tune_reserve(u->need, o->trials);
    dt_rng rng;
    dt_rng_seed(&rng, o->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)u->used);
    int64_t max_nshapes = 0;
    for (int i = 0; i < u->n; i++)
        max_nshapes = u->tasks[i].nshapes > max_nshapes ? u->tasks[i].nshapes : max_nshapes;
    int64_t *focus = malloc((size_t)max_nshapes * sizeof *focus);
    if (!focus)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    int rc = 0;
    for (;;) {
        if (o->stop && *o->stop) {
            u->r->stopped = 1;
            break;
        }
        int is_first = 0;
        int i = pick_task(u, &is_first);
        if (i < 0)
            break;
        int64_t cap;
        int go = round_cap(u, i, is_first, &cap);
        if (go < 0)
            break;
        if (go == 0)
            continue;
        if ((rc = run_round(u, i, cap, focus, &rng, e)))
            break;
    }
    free(focus);
    return rc;
}

/* Task i had no successful trial: skipped, its reason in the result. */
static void skip_task(tune_run *u, int i)
{
    dt_tune_result *r = u->r;
    const dt_task *t = &u->tasks[i];
    r->outcome[i] = DT_TUNE_SKIPPED;
    r->nskipped++;
    if (t->trials == 0)
        snprintf(r->reason[i], sizeof r->reason[i], "%s",
                 r->stopped ? "stopped before its first round"
                            : "no trials: the budget ran out before its first round");
    else
        snprintf(r->reason[i], sizeof r->reason[i],
                 "none of its %lld trial%s ran successfully (every kernel failed, or "
                 "its workers did)",
                 (long long)t->trials, t->trials == 1 ? "" : "s");
    r->sel[i].objective = NAN;
    r->sel[i].best_objective = NAN;
    r->sel[i].loss = NAN;
    dt_tune_event ev = {.kind = DT_TUNE_EV_SKIPPED, .task = t, .task_index = i,
                        .reason = r->reason[i]};
    run_emit(u, &ev, dt_measurer_trials(u->m));
}

/* The final selection of task i: its share of the selection trials left,
 * its measured per-shape choice, ranges and schedule; skipped when it has
 * no successful trial. */
static int select_task(tune_run *u, int i, dt_err *e)
{
    const dt_tune_opts *o = u->o;
    dt_tune_result *r = u->r;
    dt_task *t = &u->tasks[i];
    dt_predictor *p = task_predictor(u, t);
    if (o->stop && *o->stop)
        r->stopped = 1;
    int64_t allow = INT64_MAX;
    if (o->trials > 0)
        allow = dt_tune_select_share(o->trials - u->used, u->n - i);
    if (o->time_s > 0) {
        /* a selection trial reuses a built kernel: about half a search trial */
        double tl = (o->time_s - (dt_now_s() - u->t0)) / (0.5 * seconds_per_trial(u->m));
        int64_t at = dt_tune_select_share(tl > 0 ? (int64_t)tl : 0, u->n - i);
        allow = at < allow ? at : allow;
    }
    int k = r->stopped ? 0 : u->topk;
    int rc = dt_predictor_train(p, NULL, e);
    if (rc)
        return rc;
    /* the per-shape baseline keeps each shape's own kernel unless a
     * budget is asked for explicitly */
    dt_select_opts so = {.topk = k, .max_trials = allow, .max_kernels = o->max_kernels};
    if (o->strategy == DT_STRATEGY_PER_SHAPE && o->max_kernels == DT_SELECT_AUTO)
        so.max_kernels = DT_SELECT_ALL;
    rc = dt_select_run(t, p, u->m, &so, u->db, &r->sel[i], e);
    u->used += r->sel[i].trials;
    if (rc == DT_ENOTFOUND && !task_measured(t)) {
        /* no successful trial: no schedule for it, the others go on */
        skip_task(u, i);
        return 0;
    }
    if (rc)
        return rc;
    r->outcome[i] = DT_TUNE_SCHEDULED;
    r->nscheduled++;
    double *best = malloc((size_t)t->nshapes * sizeof *best);
    if (best) {
        t->objective = dt_task_best(t, best, NULL);
        free(best);
    }
    dt_tune_event ev = {.kind = DT_TUNE_EV_SELECTED, .task = t, .task_index = i,
                        .select = r->sel[i]};
    run_emit(u, &ev, dt_measurer_trials(u->m));
    return 0;
}

/* Step 6: the cost models saved, with their held-out quality. */
static int save_costmodels(tune_run *u, dt_err *e)
{
    dt_tune_result *r = u->r;
    int rc = 0;
    for (int j = 0; j < u->np && !rc; j++) {
        dt_tune_cm_quality *q = &r->cm[r->ncms++];
        snprintf(q->op, sizeof q->op, "%.47s", u->pred[j].op);
        q->records = u->pred[j].n;
        dt_quality qa;
        if ((rc = dt_predictor_evaluate(&u->pred[j], 0.2, u->o->seed, &qa, e)))
            break;
        q->tau_within_shape = qa.tau_within;
        q->tau_all = qa.tau;
        q->recall = qa.recall;
        json_t *mj = dt_quality_json(&qa);
        char *mt = mj ? json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(mj);
        rc = dt_predictor_save(&u->pred[j], u->db, mt, e);
        free(mt);
    }
    return rc;
}

int dt_tune(dt_db *db, const dt_target *tg, const char *target_key, dt_task *tasks, int n,
            const dt_tune_opts *o, dt_tune_result *r, dt_err *e)
{
    memset(r, 0, sizeof *r);
    if (n < 1 || n > DT_TUNE_MAX_TASKS)
        return dt_errf(e, DT_EINVAL, "a tune takes 1..%d workloads, not %d", DT_TUNE_MAX_TASKS, n);
    tune_run *u = calloc(1, sizeof *u);
    if (!u)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    u->db = db;
    u->tg = tg;
    u->tasks = tasks;
    u->n = n;
    u->o = o;
    u->r = r;
    u->t0 = dt_now_s();
    int rc = attach_tasks(u, target_key, e);
    if (!rc)
        rc = check_minimum(u, e);
    if (!rc)
        rc = prepare_tasks(u, e);
    if (!rc)
        rc = dt_measurer_open(&o->meas, db, tg, target_key, &u->m, e);
    /* a time budget holds with batches in flight on workers: past it the
     * session stops waiting for them (their trials are not recorded) */
    if (!rc && o->time_s > 0)
        dt_measurer_set_deadline(u->m, u->t0 + o->time_s);
    if (!rc)
        rc = search_rounds(u, e);
    /* the end of every task: measured per-shape choice, ranges, schedules;
     * the selection trials left are shared out in model order */
    for (int i = 0; i < n && !rc; i++)
        rc = select_task(u, i, e);
    if (!rc)
        rc = save_costmodels(u, e);
    r->trials_new = u->m ? dt_measurer_trials(u->m) : 0;
    r->trials_total = u->used;
    r->seconds = dt_now_s() - u->t0;
    dt_measurer_close(u->m);
    for (int j = 0; j < u->np; j++)
        dt_predictor_free(&u->pred[j]);
    free(u);
    return rc;
}
