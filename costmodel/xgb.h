/* f_MK: a gradient-boosted regression model over micro-kernel features
 * (costmodel/features.h), a thin wrapper over the XGBoost C API (1.7), plus
 * the prediction-quality measures (Kendall τ, top-k recall).
 *
 * Training is deterministic: one thread, a fixed seed, tree_method hist, no
 * subsampling.  Models are saved as XGBoost's JSON model format, the blob
 * the tuner stores in the cost_models table, with their columns' names
 * (dt_xgb_set_names): a stored model is bound to the row layout of the
 * code that loads it by name (dt_xgb_bind), so adding a column (a feature,
 * an op's one-hot) leaves stored models usable — a column the model does
 * not know is ignored, one it knows but the rows lack is missing (NaN).
 *
 * Ownership: a dt_xgb is owned by the caller (dt_xgb_free); dt_xgb_save's
 * blob is malloc'ed (free it).  A dt_xgb may be used by one thread at a time. */
#ifndef DT_COSTMODEL_XGB_H
#define DT_COSTMODEL_XGB_H

#include <stddef.h>

#include "common/error.h"

typedef struct dt_xgb dt_xgb;

typedef struct dt_xgb_params {
    int max_depth;           /* default 6 */
    double eta;              /* learning rate, default 0.3 */
    int rounds;              /* boosting rounds, default 100 */
    double min_child_weight; /* default 1 */
    double lambda;           /* L2 regularisation, default 1 */
    int seed;                /* default 0 */
} dt_xgb_params;

void dt_xgb_params_default(dt_xgb_params *p);

/* Trains on X (nrows × ncols, row-major; NaN = missing) and labels y (all
 * finite).  p NULL means the defaults.  DT_EINVAL for 0 rows or columns, a
 * non-finite label or bad params; DT_EUNSUPPORTED with XGBoost's message
 * (XGBGetLastError) when XGBoost fails. */
int dt_xgb_train(const float *X, const float *y, int nrows, int ncols, const dt_xgb_params *p,
                 dt_xgb **out, dt_err *e);

/* Predictions for nrows rows of X into out[nrows]: rows of the layout the
 * model is bound to (dt_xgb_bind), else of its own columns. */
int dt_xgb_predict(const dt_xgb *m, const float *X, int nrows, float *out, dt_err *e);

/* Column count the model was trained on. */
int dt_xgb_ncols(const dt_xgb *m);

/* Names the model's columns (n == dt_xgb_ncols; each non-empty, no
 * commas); saved with it.  DT_EINVAL otherwise. */
int dt_xgb_set_names(dt_xgb *m, const char *const *names, int n, dt_err *e);

/* Binds m to rows of n columns named names[]: dt_xgb_predict then takes
 * such rows and gives each model column the value of the row column of the
 * same name (NaN, missing, when there is none).  A model saved without
 * names binds only to a layout of its own column count, taken in order.
 * Returns how many of the model's columns the layout has; DT_EINVAL when
 * none (or, unnamed, the counts differ). */
int dt_xgb_bind(dt_xgb *m, const char *const *names, int n, dt_err *e);

/* Serialises the model (XGBoost JSON format) into a malloc'ed *blob of *len bytes. */
int dt_xgb_save(const dt_xgb *m, void **blob, size_t *len, dt_err *e);
/* Loads a model saved by dt_xgb_save. */
int dt_xgb_load(const void *blob, size_t len, dt_xgb **out, dt_err *e);

void dt_xgb_free(dt_xgb *m);

/* Kendall τ-b between a and b (n values each): 1 for the same order, -1 for
 * the reverse; pairs tied in both count for neither.  0 when n < 2 or one
 * side is constant.  O(n²). */
double dt_kendall_tau(const double *a, const double *b, int n);

/* Fraction of the k largest truth values whose indices are also among the k
 * largest predictions (higher = better, e.g. throughput); ties broken by the
 * lower index.  k is clamped to n; 0 when n or k <= 0. */
double dt_topk_recall(const double *pred, const double *truth, int n, int k);

#endif
