/* One point of the cost model: a micro-kernel on a concrete shape.
 *
 * Its row of model inputs is the kernel's features (costmodel/features.h)
 * followed by the shape's (log2 of the op's dims), so one model per target
 * and op serves every workload of that op.  The shape also enters through
 * f_adapt (costmodel/adapt.h), which the label divides out:
 *
 *   label          = throughput (GFLOP/s) / f_adapt
 *   predicted time = flops / (f_MK · f_adapt)        (DESIGN.md, "cost")
 *
 * Plain values; copy freely. */
#ifndef DT_COSTMODEL_POINT_H
#define DT_COSTMODEL_POINT_H

#include <stdint.h>

#include "costmodel/adapt.h"
#include "costmodel/features.h"

enum {
    DT_CMS_LOG_BATCH = 0, /* log2 of the batch (0 for an op without a batch dim) */
    DT_CMS_LOG_M,
    DT_CMS_LOG_N,
    DT_CMS_LOG_K,
    /* log2 of the products summed into one output element, flops / (2·B·M·N):
     * K for a GEMM, R·S·C/groups for a conv2d.  The view's K is R·S·C
     * whatever the groups, so without it a depthwise layer looks like a dense
     * one with C channels to the model (added after the four above: models
     * stored before it bind by name and never saw it) */
    DT_CMS_LOG_REDUCE,
    DT_NSHAPE_FEATURES
};
/* Columns of a model row. */
#define DT_CM_NCOLS (DT_NFEATURES + DT_NSHAPE_FEATURES)

/* The names of a row's DT_CM_NCOLS columns: the features'
 * (dt_cm_feature_name), then "log_batch", "log_m", "log_n", "log_k",
 * "log_reduce".
 * Models are saved with them and bound to them when loaded
 * (costmodel/xgb.h), so a stored model survives a column added later. */
const char *const *dt_cm_column_names(void);

typedef struct dt_cm_point {
    float x[DT_CM_NCOLS];
    double flops;   /* of the shape */
    dt_adapt adapt; /* f_adapt of the kernel on the shape */
} dt_cm_point;

/* The point of annotation a on op (attribute indices attrs) with concrete
 * dims (op->ndims values).  DT_EINVAL (message says why) when the op is not
 * one the model knows, a dim is < 1 or the annotation is malformed. */
int dt_cm_point_make(const dt_op_desc *op, const int *attrs, const int64_t *dims,
                     const dt_annotation *a, const dt_target *t, dt_cm_point *p, dt_err *e);

/* The training label of a measured time (ns); NAN when min_ns is not > 0. */
double dt_cm_label(const dt_cm_point *p, double min_ns);

/* Predicted ns from a predicted label f_mk; HUGE_VAL when f_mk <= 0. */
double dt_cm_time_ns(const dt_cm_point *p, double f_mk);

#endif
