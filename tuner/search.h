/* One round of the search over a task's micro-kernels (DESIGN.md, "Search").
 *
 * joint      candidates bred from the task's best kernels (mutation,
 *            crossover) plus fresh samples, each valued by how much it is
 *            predicted to lower the objective Σ_s w_s · min_k time(s, k)
 *            over the focus shapes when added to the current best set; the
 *            most valuable are picked greedily (each pick lowers the bar of
 *            the next), a fraction ε at random; each is measured on the
 *            shapes where it is predicted to matter most.  Shapes whose
 *            best time is only predicted get their best kernel measured.
 * per-shape  the same on one shape (Ansor-style; the tune driver rotates
 *            the focus so each shape gets an equal share of trials).
 * random     fresh samples measured on random shapes (by weight).
 *
 * The cost model predicts every request before it is measured, so each
 * round also reports the model's quality on data it has never seen. */
#ifndef DT_TUNER_SEARCH_H
#define DT_TUNER_SEARCH_H

#include "space/annotation.h"
#include "tuner/measurer.h"
#include "tuner/predictor.h"
#include "tuner/task.h"

typedef enum { DT_STRATEGY_JOINT = 0, DT_STRATEGY_PER_SHAPE, DT_STRATEGY_RANDOM } dt_strategy;
const char *dt_strategy_name(dt_strategy s);
int dt_strategy_parse(const char *name, dt_strategy *out);

typedef struct dt_search_opts {
    dt_strategy strategy;
    int kernels_per_round;   /* default 8 */
    int shapes_per_kernel;   /* default 4 (joint, random) */
    double epsilon;          /* share of random picks (default 0.2) */
    int candidates;          /* bred per round (default 256) */
    int elite_per_shape;     /* parents: the best k of each focus shape (default 3) */
} dt_search_opts;
void dt_search_opts_default(dt_search_opts *o);

typedef struct dt_round_info {
    int kernels;             /* new kernels measured */
    int trials;              /* trials measured */
    int failed;              /* trials that failed */
    double objective;        /* of the whole task after the round (ns) */
    double tau;              /* Kendall τ predicted vs measured throughput, NAN */
    double seconds;
} dt_round_info;

/* One round on the focus shapes focus[0..nfocus) (indices of the task's set)
 * with at most max_trials trials (>= 1).  rng drives every random choice. */
int dt_search_round(dt_task *t, dt_predictor *p, dt_measurer *m, const dt_search_opts *o,
                    const int64_t *focus, int nfocus, int64_t max_trials, dt_rng *rng,
                    const dt_target *tg, dt_round_info *info, dt_err *e);

/* Predictions of the task's strongest kernels (the best few on every shape),
 * refreshed after the model was retrained. */
int dt_search_refresh(dt_task *t, dt_predictor *p, dt_err *e);

#endif
