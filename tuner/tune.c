/* The model-level tuning loop (see tune.h). */
#include "tuner/tune.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The next task to get a round, or -1 when all are finished.  first[i]: task
 * i had (or was passed over for) its first round; *is_first tells whether
 * the pick is a first round. */
static int pick_task(const dt_task *t, int n, const char *first, int *is_first)
{
    /* first rounds: tasks with no usable record, then the others */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if (!t[i].done && !first[i] && task_measured(&t[i]) == pass) {
                *is_first = 1;
                return i;
            }
    *is_first = 0;
    int best = -1;
    double bv = -1;
    for (int i = 0; i < n; i++) {
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

int dt_tune(dt_db *db, const dt_target *tg, const char *target_key, dt_task *tasks, int n,
            const dt_tune_opts *o, dt_tune_result *r, dt_err *e)
{
    memset(r, 0, sizeof *r);
    if (n < 1 || n > DT_TUNE_MAX_TASKS)
        return dt_errf(e, DT_EINVAL, "a tune takes 1..%d workloads, not %d", DT_TUNE_MAX_TASKS, n);
    double t0 = dt_now_s();
    dt_predictor pred[DT_TUNE_MAX_COSTMODELS];
    int np = 0, rc = 0;
    dt_measurer *m = NULL;
    int64_t used = 0;
    for (int i = 0; i < n && !rc; i++) {
        if ((rc = dt_task_attach(&tasks[i], db, tg, target_key, e)))
            break;
        used += tasks[i].trials;
        if (op_index(pred, np, tasks[i].w) < 0) {
            if (np == DT_TUNE_MAX_COSTMODELS) {
                rc = dt_errf(e, DT_EUNSUPPORTED, "more than %d (op, dtype) pairs in one tune",
                             DT_TUNE_MAX_COSTMODELS);
                break;
            }
            dt_target dtg = dt_dtype_target(tasks[i].w->dtype, tg);
            dt_predictor_init(&pred[np], tasks[i].w->op->name, tasks[i].w->dtype, &dtg,
                              tasks[i].target_id);
            rc = dt_predictor_load(&pred[np++], db, e);
        }
    }
    if (!rc && !o->no_min_check) {
        int unmeasured = 0;
        for (int i = 0; i < n; i++)
            unmeasured += !task_measured(&tasks[i]);
        rc = dt_tune_check_budget(o->trials, o->time_s, used, unmeasured, n, e);
    }
    for (int i = 0; i < n && !rc; i++) {
        dt_predictor *p = &pred[op_index(pred, np, tasks[i].w)];
        if (!p->costmodel && (rc = dt_predictor_train(p, NULL, e)))
            break;
        if ((rc = dt_search_refresh(&tasks[i], p, e)))
            break;
        double *best = malloc((size_t)tasks[i].nshapes * sizeof *best);
        if (!best) {
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
            break;
        }
        tasks[i].objective = tasks[i].best_objective = dt_task_best(&tasks[i], best, NULL);
        free(best);
        if (tasks[i].resumed) {
            dt_tune_event ev = {.kind = DT_TUNE_EV_RESUMED, .task = &tasks[i], .task_index = i};
            emit(o, &ev, tasks, n, used, t0, 0);
        }
    }
    if (!rc)
        rc = dt_measurer_open(&o->meas, db, tg, target_key, &m, e);
    if (rc)
        goto out;
    /* a time budget holds with batches in flight on workers: past it the
     * session stops waiting for them (their trials are not recorded) */
    if (o->time_s > 0)
        dt_measurer_set_deadline(m, t0 + o->time_s);

    int topk = o->strategy == DT_STRATEGY_PER_SHAPE ? 0 : o->topk;
    int64_t need = 0;
    for (int i = 0; i < n; i++)
        need += dt_select_reserve(&tasks[i], topk, o->max_kernels);
    /* the selection's reserve: at most a quarter of the trial budget; of a
     * time budget, at most a quarter of the time (see time_reserve) */
    int64_t reserve = dt_tune_reserve(need, o->trials);
    dt_rng rng;
    dt_rng_seed(&rng, o->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)used);
    int64_t *focus = NULL;
    int64_t max_nshapes = 0;
    char first[DT_TUNE_MAX_TASKS] = {0};
    for (int i = 0; i < n; i++)
        max_nshapes = tasks[i].nshapes > max_nshapes ? tasks[i].nshapes : max_nshapes;
    if (!(focus = malloc((size_t)max_nshapes * sizeof *focus))) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (;;) {
        if (o->stop && *o->stop) {
            r->stopped = 1;
            break;
        }
        int is_first = 0;
        int i = pick_task(tasks, n, first, &is_first);
        if (i < 0)
            break;
        dt_task *t = &tasks[i];
        int unmeasured = !task_measured(t);
        int64_t cap = INT64_MAX;
        double el = dt_now_s() - t0, per = seconds_per_trial(m);
        double treserve = time_reserve(o->time_s, per, need);
        if (is_first) {
            /* every task's first round comes before the reserve is held
             * back: a fair share each, a floor for tasks with no record */
            int waiting = 0, uw = 0;
            for (int j = 0; j < n; j++)
                if (!tasks[j].done && !first[j]) {
                    waiting++;
                    uw += !task_measured(&tasks[j]);
                }
            if (o->trials > 0)
                cap = dt_tune_first_share(o->trials - used, reserve, waiting, uw, unmeasured);
            if (o->time_s > 0) {
                int64_t tl = (int64_t)((o->time_s - el) / per), tr = (int64_t)(treserve / per);
                int64_t ct = dt_tune_first_share(tl > 0 ? tl : 0, tr, waiting, uw, unmeasured);
                if (unmeasured && ct < DT_TUNE_MIN_FIRST_TRIALS)
                    ct = DT_TUNE_MIN_FIRST_TRIALS; /* even past the time: its minimum */
                cap = ct < cap ? ct : cap;
            }
            first[i] = 1;
            if (cap <= 0)
                continue; /* passed over: its records carry it */
        } else {
            if (o->trials > 0)
                cap = o->trials - reserve - used;
            if (cap <= 0)
                break;
            if (o->time_s > 0 && el + treserve >= o->time_s)
                break;
        }
        dt_predictor *p = &pred[op_index(pred, np, t->w)];
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
        dt_target dtg = dt_dtype_target(t->w->dtype, tg);
        if ((rc = dt_search_round(t, p, m, &so, focus, nf, cap, &rng, &dtg, &ev.round, e)))
            break;
        used += ev.round.trials;
        t->rounds++;
        double obj = ev.round.objective;
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
        if (ev.round.trials == 0 && ++t->stale > 2 * (o->patience > 0 ? o->patience : 8))
            t->done = 1; /* nothing new left to try */
        emit(o, &ev, tasks, n, used, t0, dt_measurer_trials(m));
    }
    free(focus);
    if (rc)
        goto out;

    /* the end of every task: measured per-shape choice, ranges, schedules;
     * the selection trials left are shared out in model order */
    for (int i = 0; i < n && !rc; i++) {
        dt_task *t = &tasks[i];
        dt_predictor *p = &pred[op_index(pred, np, t->w)];
        if (o->stop && *o->stop)
            r->stopped = 1;
        int64_t allow = INT64_MAX;
        if (o->trials > 0)
            allow = dt_tune_select_share(o->trials - used, n - i);
        if (o->time_s > 0) {
            /* a selection trial reuses a built kernel: about half a search trial */
            double tl = (o->time_s - (dt_now_s() - t0)) / (0.5 * seconds_per_trial(m));
            int64_t at = dt_tune_select_share(tl > 0 ? (int64_t)tl : 0, n - i);
            allow = at < allow ? at : allow;
        }
        int k = r->stopped ? 0 : topk;
        if ((rc = dt_predictor_train(p, NULL, e)))
            break;
        /* the per-shape baseline keeps each shape's own kernel unless a
         * budget is asked for explicitly */
        dt_select_opts so = {.topk = k, .max_trials = allow, .max_kernels = o->max_kernels};
        if (o->strategy == DT_STRATEGY_PER_SHAPE && o->max_kernels == DT_SELECT_AUTO)
            so.max_kernels = DT_SELECT_ALL;
        rc = dt_select_run(t, p, m, &so, db, &r->sel[i], e);
        used += r->sel[i].trials;
        if (rc == DT_ENOTFOUND && !task_measured(t)) {
            /* no successful trial: no schedule for it, the others go on */
            rc = 0;
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
            emit(o, &ev, tasks, n, used, t0, dt_measurer_trials(m));
            continue;
        }
        if (rc)
            break;
        r->outcome[i] = DT_TUNE_SCHEDULED;
        r->nscheduled++;
        double *best = malloc((size_t)t->nshapes * sizeof *best);
        if (best) {
            t->objective = dt_task_best(t, best, NULL);
            free(best);
        }
        dt_tune_event ev = {.kind = DT_TUNE_EV_SELECTED, .task = t, .task_index = i,
                            .select = r->sel[i]};
        emit(o, &ev, tasks, n, used, t0, dt_measurer_trials(m));
    }
    /* the cost models, with their held-out quality */
    for (int j = 0; j < np && !rc; j++) {
        dt_tune_cm_quality *q = &r->cm[r->ncms++];
        snprintf(q->op, sizeof q->op, "%.47s", pred[j].op);
        q->records = pred[j].n;
        dt_quality qa;
        if ((rc = dt_predictor_evaluate(&pred[j], 0.2, o->seed, &qa, e)))
            break;
        q->tau_within_shape = qa.tau_within;
        q->tau_all = qa.tau;
        q->recall = qa.recall;
        json_t *mj = dt_quality_json(&qa);
        char *mt = mj ? json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(mj);
        rc = dt_predictor_save(&pred[j], db, mt, e);
        free(mt);
    }
out:
    r->trials_new = m ? dt_measurer_trials(m) : 0;
    r->trials_total = used;
    r->seconds = dt_now_s() - t0;
    dt_measurer_close(m);
    for (int j = 0; j < np; j++)
        dt_predictor_free(&pred[j]);
    return rc;
}
