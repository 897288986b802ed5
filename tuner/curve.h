/* The tuning curve of one tune: a point per search round (elapsed time,
 * trials, the round's workload and its objective, the model latency), so
 * the best-objective-against-time curve can be drawn from any tune:
 * `dtune tune --json` writes it as "curve", daemon jobs keep it in their
 * progress (docs/tuner.md, "Tuning curve").
 *
 * Bounded: once DT_CURVE_MAX points are held, every other one is dropped
 * (the first and the newest stay), so a job of any length keeps an evenly
 * thinned curve in a fixed size.
 *
 * Ownership: a dt_tune_curve owns its points (dt_tune_curve_free). */
#ifndef DT_TUNER_CURVE_H
#define DT_TUNER_CURVE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tuner/tune.h"

#define DT_CURVE_MAX 512

typedef struct dt_curve_point {
    double elapsed_s;        /* since this run started (plus offset_s) */
    int64_t trials;          /* recorded trials of the model's workloads */
    int task;                /* the round's workload (index in the tune) */
    int round;               /* its round number (1, 2, ...) */
    double objective_ns;     /* its objective after the round: Σ w_s · best ns,
                              * predicted where not measured */
    double model_latency_ns; /* Σ count · objective over the workloads */
} dt_curve_point;

typedef struct dt_tune_curve {
    dt_curve_point *p;
    size_t n, cap;
    double offset_s;         /* added to every elapsed_s (a resumed job's earlier runs) */
} dt_tune_curve;

void dt_tune_curve_init(dt_tune_curve *c);
void dt_tune_curve_free(dt_tune_curve *c);
/* Records a DT_TUNE_EV_ROUND event (others are ignored); 0, or -1 out of
 * memory (the point is lost, the curve stays valid). */
int dt_tune_curve_add(dt_tune_curve *c, const dt_tune_event *ev);
/* [{"elapsed_s", "trials", "workload" (its name, from tasks[task]), "round",
 *   "objective_ns", "model_latency_ns"}, ...]; NULL out of memory. */
json_t *dt_tune_curve_json(const dt_tune_curve *c, const dt_task *tasks, int ntasks);
/* Appends the points of such an array (a resumed job's earlier runs);
 * points naming no task of tasks[] and malformed ones are skipped. */
void dt_tune_curve_load_json(dt_tune_curve *c, const json_t *a, const dt_task *tasks, int ntasks);

#endif
