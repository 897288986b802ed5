/* Tuning a model: its tasks (one per workload), a task scheduler that gives
 * each next round to the task where it is expected to lower the model's
 * weighted latency most, a budget of trials and/or wall time, early stop,
 * the final measured selection of every task, and the cost models stored.
 *
 * Scheduler: every task first gets one round (in model order); then the
 * next round goes to the unfinished task with the largest
 *   count · objective · max(mean relative gain of its last 3 rounds, 0.001)
 * (its weighted latency times how fast it has been improving).  A task
 * whose objective has not improved by min_improvement for `patience` rounds
 * is finished (joint only; per-shape and random use their whole budget).
 *
 * Resumable: the tasks are rebuilt from the database's records, which count
 * against the trial budget, so a tune killed and started again goes on
 * without re-measuring anything; a tune that had finished only redoes the
 * selection. */
#ifndef DT_TUNER_TUNE_H
#define DT_TUNER_TUNE_H

#include <signal.h>
#include <stdint.h>

#include "db/db.h"
#include "tuner/search.h"
#include "tuner/select.h"

typedef enum { DT_TUNE_EV_ROUND = 0, DT_TUNE_EV_SELECTED, DT_TUNE_EV_RESUMED } dt_tune_ev_kind;

typedef struct dt_tune_event {
    dt_tune_ev_kind kind;
    const dt_task *task;
    int task_index, ntasks;
    dt_round_info round;          /* DT_TUNE_EV_ROUND */
    dt_select_info select;        /* DT_TUNE_EV_SELECTED */
    int64_t trials_used;          /* recorded trials of the model's tasks */
    int64_t trials_budget;        /* 0: none */
    double elapsed_s, time_budget_s; /* time_budget 0: none */
    double trials_per_min;        /* this run's */
    double model_latency_ns;      /* Σ count · objective over the tasks */
} dt_tune_event;

typedef struct dt_tune_opts {
    int64_t trials;               /* budget over the model's tasks (0: none) */
    double time_s;                /* wall-time budget of this run (0: none) */
    dt_strategy strategy;
    uint64_t seed;
    int topk;                     /* final selection (default 2; per-shape uses 0) */
    int patience;                 /* default 8 */
    double min_improvement;       /* default 0.002 */
    dt_search_opts search;
    dt_measurer_opts meas;
    void (*on_event)(const dt_tune_event *ev, void *ud);
    void *ud;
    volatile sig_atomic_t *stop;  /* set (e.g. by SIGINT): no more rounds */
} dt_tune_opts;
void dt_tune_opts_default(dt_tune_opts *o);

typedef struct dt_tune_model_quality {
    char op[32];
    int64_t records;
    double tau_within_shape, tau_all, recall; /* held-out (20%), NAN when too few */
} dt_tune_model_quality;

typedef struct dt_tune_result {
    dt_select_info sel[64];       /* per task */
    int64_t trials_new;           /* measured by this run */
    int64_t trials_total;         /* recorded for the tasks, resumed ones included */
    double seconds;
    int stopped;                  /* the stop flag ended the search */
    int nmodels;
    dt_tune_model_quality model[2];
} dt_tune_result;

#define DT_TUNE_MAX_TASKS 64

/* Tunes tasks[0..n) (dt_task_init'ed; n <= DT_TUNE_MAX_TASKS) on target tg
 * at their thread count, recording into db. */
int dt_tune(dt_db *db, const dt_target *tg, const char *target_key, dt_task *tasks, int n,
            const dt_tune_opts *o, dt_tune_result *r, dt_err *e);

#endif
