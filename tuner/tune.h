/* Tuning a model: its tasks (one per workload), a task scheduler that gives
 * each next round to the task where it is expected to lower the model's
 * weighted latency most, a budget of trials and/or wall time, early stop,
 * the final measured selection of every task, and the cost models stored.
 *
 * Scheduler: every task first gets one round (tasks without a usable record
 * first, then the others, each in model order); then the next round goes to
 * the unfinished task with the largest
 *   count · objective · max(mean relative gain of its last 3 rounds, 0.001)
 * (its weighted latency times how fast it has been improving).  A task
 * whose objective has not improved by min_improvement for `patience` rounds
 * is finished (joint only; per-shape and random use their whole budget).
 *
 * Budget (docs/tuner.md, "Scheduler and budget"): the final selection's
 * reserve is at most a quarter of the budget (dt_tune_reserve) and is held
 * back only after every task had its first round; a first round gets its
 * fair share of what is left (dt_tune_first_share), at least
 * DT_TUNE_MIN_FIRST_TRIALS for a task with no usable record; the selection
 * trials are shared out over the tasks in order (dt_tune_select_share).  A
 * budget that cannot give every such task its minimum is refused before
 * anything is measured (DT_EINVAL, with the minimum in the message).  A task
 * that ends with no successful trial is skipped (no schedule; its reason in
 * the result) while the others are stored.
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

/* A first round's floor for a task with no usable record. */
#define DT_TUNE_MIN_FIRST_TRIALS 2
/* The least --time per task with no usable record (one small first round:
 * a few compiles and trials). */
#define DT_TUNE_MIN_SECONDS_PER_TASK 2.0
/* Seconds per trial assumed before any was measured (compiles included). */
#define DT_TUNE_GUESS_SECONDS_PER_TRIAL 0.1

typedef enum {
    DT_TUNE_EV_ROUND = 0,
    DT_TUNE_EV_SELECTED,
    DT_TUNE_EV_RESUMED,
    DT_TUNE_EV_SKIPPED,           /* no schedule for the task: .reason */
} dt_tune_ev_kind;

typedef struct dt_tune_event {
    dt_tune_ev_kind kind;
    const dt_task *task;
    int task_index, ntasks;
    dt_round_info round;          /* DT_TUNE_EV_ROUND */
    dt_select_info select;        /* DT_TUNE_EV_SELECTED */
    const char *reason;           /* DT_TUNE_EV_SKIPPED */
    int64_t trials_used;          /* recorded trials of the model's tasks */
    int64_t trials_budget;        /* 0: none */
    double elapsed_s, time_budget_s; /* time_budget 0: none */
    double trials_per_min;        /* this run's */
    double model_latency_ns;      /* Σ count · objective over the tasks */
    int64_t predicted_shapes;     /* shapes of .task whose best known time (in its
                                   * objective) is a cost-model prediction, not a
                                   * measurement: 0 = the objective is measured */
} dt_tune_event;

typedef struct dt_tune_opts {
    int64_t trials;               /* budget over the model's tasks (0: none) */
    double time_s;                /* wall-time budget of this run (0: none) */
    dt_strategy strategy;
    uint64_t seed;
    int topk;                     /* final selection (default 2; per-shape uses 0) */
    int max_kernels;              /* kernel budget of the selection: K > 0,
                                   * DT_SELECT_AUTO (default: the smallest K within
                                   * DT_SELECT_LOSS_TOL; per-shape: unrestricted)
                                   * or DT_SELECT_ALL (unrestricted) */
    int patience;                 /* default 8 */
    double min_improvement;       /* default 0.002 */
    dt_search_opts search;
    dt_measurer_opts meas;
    void (*on_event)(const dt_tune_event *ev, void *ud);
    void *ud;
    volatile sig_atomic_t *stop;  /* set (e.g. by SIGINT): no more rounds */
    int no_min_check;             /* skip the up-front minimum budget check (a resumed job) */
} dt_tune_opts;
void dt_tune_opts_default(dt_tune_opts *o);

#define DT_TUNE_MAX_COSTMODELS 8 /* distinct (op, dtype) pairs in one tune */

typedef struct dt_tune_cm_quality {
    char op[48];
    int64_t records;
    double tau_within_shape, tau_all, recall; /* held-out (20%), NAN when too few */
} dt_tune_cm_quality;

typedef enum { DT_TUNE_SCHEDULED = 0, DT_TUNE_SKIPPED } dt_tune_outcome;
const char *dt_tune_outcome_name(dt_tune_outcome o);

typedef struct dt_tune_result {
    dt_select_info sel[64];       /* per task */
    dt_tune_outcome outcome[64];  /* per task */
    char reason[64][160];         /* per skipped task: why ("" when scheduled) */
    int nscheduled, nskipped;
    int64_t trials_new;           /* measured by this run */
    int64_t trials_total;         /* recorded for the tasks, resumed ones included */
    double seconds;
    int stopped;                  /* the stop flag ended the search (or the selection) */
    int ncms;
    /* per (op, dtype): the cost models trained and their quality */
    dt_tune_cm_quality cm[DT_TUNE_MAX_COSTMODELS];
} dt_tune_result;

#define DT_TUNE_MAX_TASKS 64

/* Tunes tasks[0..n) (dt_task_init'ed; n <= DT_TUNE_MAX_TASKS) on target tg
 * at their thread count, recording into db.  0 also when some (or every)
 * task was skipped: see r->outcome; DT_EINVAL for a budget below the minimum
 * (nothing measured). */
int dt_tune(dt_db *db, const dt_target *tg, const char *target_key, dt_task *tasks, int n,
            const dt_tune_opts *o, dt_tune_result *r, dt_err *e);

/* ---- the budget split (pure; tune.c uses these, tests check them) ---- */

/* The least trial budget that gives each of `unmeasured` tasks (no usable
 * record yet) DT_TUNE_MIN_FIRST_TRIALS on top of the `used` recorded ones. */
int64_t dt_tune_min_trials(int64_t used, int unmeasured);
/* The least time budget (s) for `unmeasured` such tasks. */
double dt_tune_min_seconds(int unmeasured);
/* Refuses (DT_EINVAL, the minimum stated) a budget below those minimums;
 * trials 0 / time_s 0 mean no such budget. */
int dt_tune_check_budget(int64_t trials, double time_s, int64_t used, int unmeasured, int ntasks,
                         dt_err *e);

/* The final selection's reserve: `need` (Σ shapes × topk) capped at a
 * quarter of `budget` (trials, or trial-equivalents of a time budget);
 * budget <= 0: no budget, the whole need. */
int64_t dt_tune_reserve(int64_t need, int64_t budget);

/* The trial cap of a task's first round: `left` trials left in the budget,
 * `reserve` the selection's, `waiting` tasks still waiting for their first
 * round (this one included), of which `unmeasured_waiting` have no usable
 * record; `unmeasured`: this one has none.  Its fair part of what the
 * reserve leaves, (left - reserve) / waiting, but at least
 * min(DT_TUNE_MIN_FIRST_TRIALS, left / unmeasured_waiting) for an
 * unmeasured task (the reserve gives way); 0 means no first round. */
int64_t dt_tune_first_share(int64_t left, int64_t reserve, int waiting, int unmeasured_waiting,
                            int unmeasured);

/* The first rounds as the scheduler gives them (tune.c uses these; the
 * tests drive them).  waiting[i] is nonzero while task i still waits for
 * its first round (not finished, not had or been passed over for it),
 * measured[i] when it has a usable record (a successful trial).
 * dt_tune_first_next: the next task to get its first round, the first
 * waiting one with no usable record, else the first waiting one (model
 * order); -1 when none waits. */
int dt_tune_first_next(const char *waiting, const char *measured, int n);
/* dt_tune_first_share for waiting task i out of `left` trials (or
 * trial-equivalents of the time left) with `reserve` held back, the waiting
 * tasks (i included) and the unmeasured among them counted from waiting[] /
 * measured[].  The caller then clears waiting[i]. */
int64_t dt_tune_first_cap(int64_t left, int64_t reserve, const char *waiting,
                          const char *measured, int n, int i);

/* Selection trials allowed to the next of `tasks_left` tasks out of `left`:
 * an even share; what a task does not use carries over to the later ones. */
int64_t dt_tune_select_share(int64_t left, int tasks_left);

#endif
