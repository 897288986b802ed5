/* The tuner's cost model for one op on one target: the training rows (every
 * ok record of the op on the target, from the database and from this run)
 * and the XGBoost f_MK trained on them (costmodel/point.h gives the rows,
 * the label and the predicted time).
 *
 * Before a model exists (fewer than DT_PREDICTOR_MIN_ROWS rows and none
 * stored) predictions fall back to f_adapt alone (f_MK = 1): the analytic
 * part of the cost still ranks padding and load balance.
 *
 * Ownership: a dt_predictor owns its rows and cost model (dt_predictor_free).
 * Not thread-safe. */
#ifndef DT_TUNER_PREDICTOR_H
#define DT_TUNER_PREDICTOR_H

#include "backends/backend.h"
#include "common/target.h"
#include "costmodel/point.h"
#include "costmodel/xgb.h"
#include "db/db.h"
#include "tuner/quality.h"
#include "tuner/task.h"

#define DT_PREDICTOR_MIN_ROWS 8

typedef struct dt_cm_row {
    float x[DT_CM_NCOLS];
    float label;
    double flops, adapt, min_ns;
    int64_t workload_id;
    int32_t shape;          /* index in its workload's set, -1 when unknown */
} dt_cm_row;

typedef struct dt_predictor {
    /* One cost model per (op, dtype): a dtype changes the instructions, the
     * bytes per element and so what a tile's features are worth (bf16 2×,
     * int8 4× the f32 throughput, w8a32 bandwidth-bound), and records of one
     * dtype say little about another (docs/cost-model.md). */
    char op[48];            /* the cost model's name: "dense", "dense:bf16" (f32: the op alone) */
    char opname[32];        /* the op */
    dt_dtype dtype;
    dt_target tg;
    int64_t target_id;
    dt_cm_row *rows;
    int n, cap;
    int skipped;            /* records of the op that could not be used (dt_predictor_load) */
    int impossible;         /* of those and of the rows added: times no CPU could reach
                             * (dt_time_possible), never trained on */
    dt_xgb *costmodel;      /* NULL: f_adapt only */
    int trained_rows;       /* rows the cost model was trained on (0: loaded or none) */
    dt_xgb_params params;
} dt_predictor;

/* A predictor for op's kernels in dtype on target tg (the target as the
 * dtype's kernels see it: dtypes/dtype.h, dt_dtype_target). */
void dt_predictor_init(dt_predictor *p, const char *op, dt_dtype dtype, const dt_target *tg,
                       int64_t target_id);
/* The cost model name of (op, dtype): "op", or "op:" and the dtype row's
 * key text (dtypes/dtype.h) when it has one (every dtype but f32). */
void dt_costmodel_name(const char *op, dt_dtype dtype, char *buf, size_t n);
void dt_predictor_free(dt_predictor *p);

/* Loads every ok record of the op on the target from db as training rows,
 * and the latest stored model (a warm start) when its columns match.  A
 * record whose time is impossible (measure/trial.h, dt_time_possible: not
 * finite, <= 0, or under the FLOP bound of the target) or whose label does
 * not fit a float is skipped and counted (skipped, impossible; a warning
 * is logged), never trained on: a poisoned database still trains. */
int dt_predictor_load(dt_predictor *p, dt_db *db, dt_err *e);

/* Adds the row of kernel k of task t measured on shape s in ns. */
int dt_predictor_add(dt_predictor *p, const dt_task *t, int k, int64_t s, double ns,
                     dt_err *e);

/* Retrains on every row when rows were added since the last training and
 * there are at least DT_PREDICTOR_MIN_ROWS.  *trained (may be NULL) tells
 * whether it did. */
int dt_predictor_train(dt_predictor *p, int *trained, dt_err *e);

/* The lowest predicted label (GFLOP/s over f_adapt): a model extrapolating
 * to <= 0 means "very slow", not "free".  A prediction at the floor says
 * nothing of how far off the model is: it implies at most this many
 * GFLOP/s (f_adapt <= 1), whatever the kernel really does. */
#define DT_PREDICTOR_FLOOR 1e-3

/* Whether pred_ns, predicted on a shape of `flops`, implies no more than
 * the floor's throughput: every clamped prediction does (flops / pred_ns is
 * the floor times f_adapt), and so does one above the floor by less than
 * 1 / f_adapt — no better a measure of the model's error.  Inferred from
 * the time, so a task's stored predictions need no flag. */
static inline int dt_predictor_at_floor(double flops, double pred_ns)
{
    return flops <= DT_PREDICTOR_FLOOR * (1 + 1e-4) * pred_ns;
}

/* Predicted ns of annotation a (of task t's op) on the n shapes idx[0..n)
 * into out[n]. */
int dt_predictor_predict(dt_predictor *p, const dt_task *t, const dt_annotation *a,
                         const int64_t *idx, int n, float *out, dt_err *e);

/* Fills t->k[k].pred for every shape of the set (allocating it). */
int dt_predictor_predict_kernel(dt_predictor *p, dt_task *t, int k, dt_err *e);

/* Held-out quality, the one evaluation `dtune model train` and `dtune tune`
 * report: a seeded shuffle holds out round(holdout · n) rows (at most
 * n - 1), a model with p's parameters is trained on the rest and predicts
 * them, and *q gets τ overall and within each (workload, shape) and the
 * top-10% recall (tuner/quality.h).  Every measure is NAN when the held-out
 * rows make fewer than DT_TAU_MIN_PAIRS pairs or fewer than
 * DT_PREDICTOR_MIN_ROWS rows remain to train on. */
int dt_predictor_evaluate(const dt_predictor *p, double holdout, uint64_t seed, dt_quality *q,
                          dt_err *e);

/* Stores the current model (when there is one trained here) in cost_models
 * with metrics_json (may be NULL). */
int dt_predictor_save(const dt_predictor *p, dt_db *db, const char *metrics_json, dt_err *e);

#endif
