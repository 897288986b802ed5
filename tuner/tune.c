/* The model-level tuning loop (see tune.h). */
#include "tuner/tune.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json_util.h"

void dt_tune_opts_default(dt_tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = DT_STRATEGY_JOINT;
    o->seed = 1;
    o->topk = 2;
    o->patience = 8;
    o->min_improvement = 0.002;
    dt_search_opts_default(&o->search);
    o->meas.min_time_s = 0.005;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double model_latency(const dt_task *t, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += t[i].count * t[i].objective;
    return s;
}

/* The next task to get a round, or -1 when all are finished. */
static int pick_task(const dt_task *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!t[i].done && t[i].rounds == 0)
            return i;
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
    for (int64_t s = 0; s < t->ns; s++) {
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

static void emit(const dt_tune_opts *o, dt_tune_event *ev, const dt_task *tasks, int n,
                 int64_t used, double t0, int64_t run_trials)
{
    if (!o->on_event)
        return;
    ev->ntasks = n;
    ev->trials_used = used;
    ev->trials_budget = o->trials;
    ev->elapsed_s = now_s() - t0;
    ev->time_budget_s = o->time_s;
    ev->trials_per_min = ev->elapsed_s > 0 ? (double)run_trials * 60.0 / ev->elapsed_s : 0;
    ev->model_latency_ns = model_latency(tasks, n);
    o->on_event(ev, o->ud);
}

static int op_index(dt_predictor *p, int np, const char *op)
{
    for (int i = 0; i < np; i++)
        if (strcmp(p[i].op, op) == 0)
            return i;
    return -1;
}

int dt_tune(dt_db *db, const dt_target *tg, const char *target_key, dt_task *tasks, int n,
            const dt_tune_opts *o, dt_tune_result *r, dt_err *e)
{
    memset(r, 0, sizeof *r);
    if (n < 1 || n > DT_TUNE_MAX_TASKS)
        return dt_errf(e, DT_EINVAL, "a tune takes 1..%d workloads, not %d", DT_TUNE_MAX_TASKS, n);
    double t0 = now_s();
    dt_predictor pred[2];
    int np = 0, rc = 0;
    dt_measurer *m = NULL;
    int64_t used = 0;
    for (int i = 0; i < n && !rc; i++) {
        if ((rc = dt_task_attach(&tasks[i], db, tg, target_key, e)))
            break;
        used += tasks[i].trials;
        if (op_index(pred, np, tasks[i].w->op->name) < 0) {
            if (np == 2) {
                rc = dt_errf(e, DT_EUNSUPPORTED, "more than two ops in one tune");
                break;
            }
            dt_predictor_init(&pred[np], tasks[i].w->op->name, tg, tasks[i].target_id);
            rc = dt_predictor_load(&pred[np++], db, e);
        }
    }
    for (int i = 0; i < n && !rc; i++) {
        dt_predictor *p = &pred[op_index(pred, np, tasks[i].w->op->name)];
        if (!p->model && (rc = dt_predictor_train(p, NULL, e)))
            break;
        if ((rc = dt_search_refresh(&tasks[i], p, e)))
            break;
        double *best = malloc((size_t)tasks[i].ns * sizeof *best);
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
        rc = dt_measurer_open(&o->meas, target_key, db, &m, e);
    if (rc)
        goto out;

    int topk = o->strategy == DT_STRATEGY_PER_SHAPE ? 0 : o->topk;
    int64_t reserve = 0;
    for (int i = 0; i < n; i++)
        reserve += dt_select_reserve(&tasks[i], topk);
    if (o->trials > 0 && reserve > o->trials / 4)
        reserve = o->trials / 4;
    dt_rng rng;
    dt_rng_seed(&rng, o->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)used);
    int64_t *focus = NULL;
    int64_t maxns = 0;
    for (int i = 0; i < n; i++)
        maxns = tasks[i].ns > maxns ? tasks[i].ns : maxns;
    if (!(focus = malloc((size_t)maxns * sizeof *focus))) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (;;) {
        if (o->stop && *o->stop) {
            r->stopped = 1;
            break;
        }
        int64_t left = o->trials > 0 ? o->trials - reserve - used : INT64_MAX;
        if (left <= 0)
            break;
        double el = now_s() - t0;
        if (o->time_s > 0) {
            int64_t mt = dt_measurer_trials(m);
            double per = mt > 0 ? dt_measurer_seconds(m) / (double)mt : 0.02;
            if (el + 0.5 * per * (double)reserve >= o->time_s)
                break;
        }
        int i = pick_task(tasks, n);
        if (i < 0)
            break;
        dt_task *t = &tasks[i];
        dt_predictor *p = &pred[op_index(pred, np, t->w->op->name)];
        int nf = 0;
        if (o->strategy == DT_STRATEGY_PER_SHAPE)
            focus[nf++] = least_tuned_shape(t);
        else
            for (int64_t s = 0; s < t->ns; s++)
                focus[nf++] = s;
        dt_search_opts so = o->search;
        so.strategy = o->strategy;
        dt_tune_event ev = {.kind = DT_TUNE_EV_ROUND, .task = t, .task_index = i};
        if ((rc = dt_search_round(t, p, m, &so, focus, nf, left, &rng, tg, &ev.round, e)))
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

    /* the end of every task: measured per-shape choice, ranges, schedules */
    for (int i = 0; i < n && !rc; i++) {
        dt_task *t = &tasks[i];
        dt_predictor *p = &pred[op_index(pred, np, t->w->op->name)];
        int64_t allow = o->trials > 0 ? o->trials - used : INT64_MAX;
        if (allow < 0)
            allow = 0;
        int k = r->stopped ? 0 : topk;
        if ((rc = dt_predictor_train(p, NULL, e)) ||
            (rc = dt_select_final(t, p, m, k, allow, db, &r->sel[i], e)))
            break;
        used += r->sel[i].trials;
        double *best = malloc((size_t)t->ns * sizeof *best);
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
        dt_tune_model_quality *q = &r->model[r->nmodels++];
        snprintf(q->op, sizeof q->op, "%.31s", pred[j].op);
        q->records = pred[j].n;
        if ((rc = dt_predictor_evaluate(&pred[j], 0.2, o->seed, &q->tau_within_shape, &q->tau_all,
                                        &q->recall, e)))
            break;
        json_t *mj = json_object();
        json_object_set_new(mj, "kendall_tau_within_shape", dt_json_num_or_null(q->tau_within_shape));
        json_object_set_new(mj, "kendall_tau", dt_json_num_or_null(q->tau_all));
        json_object_set_new(mj, "topk_recall", dt_json_num_or_null(q->recall));
        json_object_set_new(mj, "records", json_integer(q->records));
        json_object_set_new(mj, "holdout", json_real(0.2));
        char *mt = mj ? json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(mj);
        rc = dt_predictor_save(&pred[j], db, mt, e);
        free(mt);
    }
out:
    r->trials_new = m ? dt_measurer_trials(m) : 0;
    r->trials_total = used;
    r->seconds = now_s() - t0;
    dt_measurer_close(m);
    for (int j = 0; j < np; j++)
        dt_predictor_free(&pred[j]);
    return rc;
}
