/* The end of a task (DESIGN.md, "Search"): for every shape of the set, the
 * top predicted kernels are measured on it and the fastest measured one
 * wins; consecutive shapes with the same winner merge into ranges, stored in
 * the schedules table (dispatch/dispatch.h reads them back).
 *
 * A shape keeps its left neighbour's winner when that kernel measured within
 * DT_SELECT_TIE of the fastest on it, so noise does not split ranges.
 *
 * topk 0 measures nothing new (the per-shape baseline: each tuned shape
 * keeps its best measured kernel).  A shape with no measured kernel at all
 * takes the winner of the nearest shape that has one. */
#ifndef DT_TUNER_SELECT_H
#define DT_TUNER_SELECT_H

#include "db/db.h"
#include "tuner/measurer.h"
#include "tuner/predictor.h"
#include "tuner/task.h"

/* Relative slack within which a shape keeps its neighbour's kernel. */
#define DT_SELECT_TIE 0.02

typedef struct dt_select_info {
    int64_t trials;       /* measured for the selection */
    int ranges;
    int kernels;          /* distinct kernels dispatched */
    int64_t unmeasured;   /* shapes whose winner was never measured on them */
    double objective;     /* Σ w_s · measured ns of the winner (NAN when some is unknown) */
} dt_select_info;

/* Selects (measuring at most max_trials) and replaces the task's schedule
 * for t->threads.  Under a max_trials that cannot measure them all, every
 * shape's top kernel comes before any second one, heavier shapes (weight ·
 * known ns) first.  DT_ENOTFOUND when no kernel of the task ever ran
 * successfully (nothing is stored; dt_tune skips the task). */
int dt_select_final(dt_task *t, dt_predictor *p, dt_measurer *m, int topk, int64_t max_trials,
                    dt_db *db, dt_select_info *info, dt_err *e);

/* Trials the selection would need at most (shapes × topk). */
int64_t dt_select_reserve(const dt_task *t, int topk);

#endif
