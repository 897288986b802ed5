/* The tune result as JSON: the one writer of a workload's object and of the
 * model-level figures, used by `dtune tune --json` (cli/cmd_tune.c) and by a
 * daemon job's progress (daemon/jobs.c).
 *
 * The two outputs keep the keys they have always had (docs/tuner.md,
 * docs/daemon.md); where they differ, the style says which:
 *   DT_TUNE_JSON_RESULT    a finished tune (--json): the task's resumed
 *                          trials, its selection's fields flat (ranges,
 *                          dispatched_kernels, kernel_ids, selection_trials,
 *                          unmeasured_shapes, ...) and gflops;
 *   DT_TUNE_JSON_PROGRESS  a job's progress (during and after the tune): the
 *                          search state (the task's objective_ns,
 *                          best_objective_ns, finished) and, once selected,
 *                          the selection under "selected" with short keys
 *                          (kernels, trials, unmeasured).
 * Both: name, workload, count, shapes, kernels, trials, rounds, outcome,
 * skip_reason, and of the selection objective_ns, estimated_objective_ns,
 * unrestricted_kernels, unrestricted_objective_ns, loss.
 *
 * Ownership: every json_t returned is a new reference for the caller. */
#ifndef DT_TUNER_TUNE_JSON_H
#define DT_TUNER_TUNE_JSON_H

#include <jansson.h>

#include "tuner/tune.h"

typedef enum {
    DT_TUNE_JSON_RESULT = 0,
    DT_TUNE_JSON_PROGRESS,
} dt_tune_json_style;

/* Task t's object.  outcome: "scheduled", "skipped" or NULL (null: not
 * selected yet); skip_reason NULL gives null; sel: its selection (RESULT:
 * always, a skipped task's zeroed one included; PROGRESS: NULL until it is
 * scheduled, then "selected"). */
json_t *dt_tune_workload_json(const dt_task *t, dt_tune_json_style style, const char *outcome,
                              const char *skip_reason, const dt_select_info *sel);

/* The weighted mean throughput (GFLOP/s) of t's objective: Σ w·flops / Σ w·ns;
 * NAN when the objective is not a positive number. */
double dt_tune_task_gflops(const dt_task *t);

/* A finished tune's model latencies into root: model_latency_ns (Σ count ·
 * the dispatched objective over the scheduled workloads; null when none is
 * scheduled or a winner's time on some shape is unknown),
 * model_latency_unrestricted_ns (the same with each shape's fastest
 * measured kernel) and model_latency_estimated_ns (unmeasured shapes at
 * their prediction). */
void dt_tune_latency_json(json_t *root, const dt_task *t, int n, const dt_tune_result *r);

/* The cost models trained and their held-out quality: an array of
 * {op, records, kendall_tau_within_shape, kendall_tau, topk_recall}. */
json_t *dt_tune_cost_models_json(const dt_tune_result *r);

#endif
