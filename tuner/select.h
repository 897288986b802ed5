/* The end of a task (DESIGN.md, "Search"): for every shape of the set, the
 * top predicted kernels are measured on it and the fastest measured one
 * wins; shapes with the same winner merge into boxes (shape/box.h,
 * dt_box_partition: runs along the last variable, grown over the others;
 * with one variable, runs of consecutive shapes), stored in the schedules
 * table (dispatch/dispatch.h reads them back).
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
/* How much faster than the fastest kernel measured on a shape another
 * kernel's calibrated estimate there must be to be dispatched on it
 * unmeasured (below): the measured ones are then evidently not the shape's
 * kernels — a budget that ended early had measured only a GEMM-view kernel
 * on a depthwise layer's small images, 180x slower than the channel kernel
 * estimated (and measured on its other shapes) for them. */
#define DT_SELECT_DISTRUST 4.0

/* The kernel budget (docs/tuner.md, "Kernel budget"): max_kernels K > 0
 * dispatches at most K distinct kernels, chosen to minimise
 * Σ_s w_s · min_{k∈S} time(s, k) (tuner/kset.h); DT_SELECT_AUTO takes the
 * smallest K whose objective is within loss_tol of every kernel's together;
 * DT_SELECT_ALL is the unrestricted per-shape choice.
 *
 * The times are the measured ones; a (kernel, shape) pair never measured
 * is estimated by the kernel's prediction there, scaled by how its
 * measurements compared with its predictions on the shapes it was measured
 * on (the geometric mean of measured / predicted).  Once a set is chosen,
 * every shape's dispatched kernel is measured on it where it was not
 * (heaviest shapes first, within the selection's trials; topk 0 measures
 * nothing) and the set is chosen again on the new times, at most
 * DT_SELECT_VERIFY_PASSES times, so what is dispatched is measured; one
 * trial per shape of the selection's trials (all of them when fewer) is
 * held back from the top-k measurements for this, so a budget leaves no
 * more shapes unmeasured than the unrestricted choice on the same trials.
 * When nothing more can be measured the set is chosen once more on
 * measured times, an unmeasured pair counted no better than DT_SELECT_TIE
 * above its shape's fastest measured — unless its estimate is more than
 * DT_SELECT_DISTRUST times faster than that, when the estimate stands —
 * and each shape goes to the fastest member measured on it, or to the
 * member estimated more than DT_SELECT_DISTRUST times faster than that; a
 * shape dispatched on an estimate (none of the set measured on it, or the
 * distrust) is counted in dt_select_info.unmeasured
 * (tuner/select_budget.c). */
#define DT_SELECT_AUTO (-1)
#define DT_SELECT_ALL 0
#define DT_SELECT_LOSS_TOL 0.01
#define DT_SELECT_VERIFY_PASSES 4
/* Kernel ids listed in a dt_select_info (the count is exact beyond it). */
#define DT_SELECT_MAX_IDS 64

typedef struct dt_select_opts {
    int topk;             /* kernels measured per shape (0: measure nothing) */
    int64_t max_trials;   /* selection trials allowed */
    int max_kernels;      /* K > 0, DT_SELECT_AUTO or DT_SELECT_ALL */
    double loss_tol;      /* DT_SELECT_AUTO's tolerance (<= 0: DT_SELECT_LOSS_TOL) */
} dt_select_opts;

typedef struct dt_select_info {
    int64_t trials;       /* measured for the selection */
    int ranges;
    int kernels;          /* distinct kernels dispatched */
    int64_t unmeasured;   /* shapes whose winner was never measured on them */
    double objective;     /* Σ w_s · measured ns of the winner (NAN when some is unknown) */
    double estimate;      /* the same with each of the `unmeasured` shapes at its winner's
                           * predicted ns: what the dispatch is expected to cost (= objective
                           * when every shape is measured; NAN only without a prediction) */
    int max_kernels;      /* the budget asked for: K, DT_SELECT_AUTO or DT_SELECT_ALL */
    int best_kernels;     /* distinct kernels of the per-shape fastest (unrestricted) */
    double best_objective;/* Σ w_s · fastest measured ns on s (NAN when some shape has none) */
    double loss;          /* objective / best_objective - 1 over the shapes where both are
                           * measured (NAN when none is) */
    int nids;             /* kernel_ids listed: min(kernels, DT_SELECT_MAX_IDS) */
    int64_t kernel_ids[DT_SELECT_MAX_IDS]; /* in order of first use by the ranges */
} dt_select_info;

/* Selects (measuring at most max_trials) and replaces the task's schedule
 * for t->threads.  Under a max_trials that cannot measure them all, every
 * shape's top kernel comes before any second one, heavier shapes (weight ·
 * known ns) first.  DT_ENOTFOUND when no kernel of the task ever ran
 * successfully (nothing is stored; dt_tune skips the task). */
int dt_select_final(dt_task *t, dt_predictor *p, dt_measurer *m, int topk, int64_t max_trials,
                    dt_db *db, dt_select_info *info, dt_err *e);

/* dt_select_final under a kernel budget (o->max_kernels; DT_SELECT_ALL is
 * dt_select_final).  The budget's verification trials count against
 * o->max_trials too. */
int dt_select_run(dt_task *t, dt_predictor *p, dt_measurer *m, const dt_select_opts *o,
                  dt_db *db, dt_select_info *info, dt_err *e);

/* Trials the selection would need at most: shapes × topk, and under a
 * kernel budget (max_kernels not DT_SELECT_ALL) one more per shape for
 * verifying the set's dispatch. */
int64_t dt_select_reserve(const dt_task *t, int topk, int max_kernels);
/* Of max_trials, what a kernel budget holds back from the top-k
 * measurements for verification: one per shape, all when fewer (0 when
 * unrestricted). */
int64_t dt_select_verify_share(const dt_task *t, int topk, int max_kernels, int64_t max_trials);
/* The fastest measured time on shape s over the kernels not failed (the
 * unrestricted choice, what a loss is counted against); +inf when none,
 * *arg (may be NULL) its kernel or -1. */
double dt_select_fastest_measured(const dt_task *t, int64_t s, int *arg);

#endif
