/* The quality of a cost model on records it did not see: the one definition
 * behind every Kendall τ and top-k recall dtune prints or stores (`dtune
 * model train|stats`, `dtune tune`'s rounds and its summary, the metrics in
 * cost_models).
 *
 * τ is Kendall's τ-b (costmodel/xgb.h) between the predicted and the
 * measured throughput (flops / ns) of the records.  Within one shape that is
 * exactly the ranking by time a dispatch choice needs; across shapes,
 * throughput does not reward a model for knowing that a bigger shape takes
 * longer.  A τ resting on fewer than DT_TAU_MIN_PAIRS pairs of records is
 * not a measurement (2 records make one pair, and τ = ±1): it is NAN,
 * printed n/a and stored as null.
 *
 * Pure: arrays in, numbers out. */
#ifndef DT_TUNER_QUALITY_H
#define DT_TUNER_QUALITY_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"

/* The fewest pairs of records a τ (or a recall) is computed from. */
#define DT_TAU_MIN_PAIRS 10

typedef struct dt_quality_point {
    int64_t workload;     /* the record's workload ... */
    int32_t shape;        /* ... and shape index in its set (-1: none, never grouped) */
    double flops;         /* of the shape */
    double pred_ns;       /* predicted time */
    double meas_ns;       /* measured time */
} dt_quality_point;

typedef struct dt_quality {
    int records;          /* rows the model had (dt_predictor_evaluate) */
    int holdout;          /* held-out records evaluated */
    int k;                /* the recall's k: max(1, holdout / 10); 0 without records */
    int64_t pairs;        /* pairs of held-out records */
    int64_t pairs_within; /* of which on the same (workload, shape) */
    double tau;           /* over every pair; NAN below DT_TAU_MIN_PAIRS pairs */
    double tau_within;    /* over the pairs on one (workload, shape): each group's τ
                           * weighted by its pairs; NAN below DT_TAU_MIN_PAIRS such pairs */
    double recall;        /* top-k recall on throughput; NAN when tau is */
} dt_quality;

/* τ between predicted and measured throughputs pred[n], meas[n]: NAN when n
 * records make fewer than DT_TAU_MIN_PAIRS pairs. */
double dt_quality_tau(const double *pred, const double *meas, int n);

/* The quality of n held-out points into *q (records is left as it is).
 * DT_ENOMEM only. */
int dt_quality_of(const dt_quality_point *pts, int n, dt_quality *q, dt_err *e);

/* *q with every measure NAN: no evaluation. */
void dt_quality_none(dt_quality *q, int records, int holdout);

/* The metrics object stored with a model in cost_models:
 * {"kendall_tau", "kendall_tau_within_shape", "topk_recall" (null when
 * NAN), "k", "holdout" (held-out records), "records"}. */
json_t *dt_quality_json(const dt_quality *q);

#endif
