/* Features of a micro-kernel on a target, the input of the learned f_MK
 * (DESIGN.md, "cost").  Nothing here depends on the shape: the shape enters
 * the cost through f_adapt (costmodel/adapt.h).  Every feature is described
 * in docs/cost-model.md, in the order of the DT_FEAT_* indices below. */
#ifndef DT_COSTMODEL_FEATURES_H
#define DT_COSTMODEL_FEATURES_H

#include "common/target.h"
#include "ops/op.h"
#include "space/annotation.h"

enum {
    DT_CMF_MR = 0,        /* register tile rows */
    DT_CMF_NR,            /* register tile columns */
    DT_CMF_NR_VEC,        /* nr / VL: B vectors per K step */
    DT_CMF_ACC,           /* mr * nr / VL: vector accumulators */
    DT_CMF_REG_PRESSURE,  /* (acc + nr/VL + 1) / vector registers */
    DT_CMF_KC,            /* K block (0 in stream) */
    DT_CMF_MC,            /* M block (0 in stream) */
    DT_CMF_NC,            /* N block */
    DT_CMF_UNROLL,        /* K unroll */
    DT_CMF_PREFETCH,      /* prefetch distance in K steps */
    DT_CMF_B_PANEL_L1,    /* kc*nr*4 / L1d */
    DT_CMF_A_BLOCK_L2,    /* mc*kc*4 / L2 */
    DT_CMF_B_BLOCK_L2,    /* kc*nc*4 / L2 */
    DT_CMF_B_BLOCK_L3,    /* kc*nc*4 / L3 */
    DT_CMF_AI_REG,        /* 2*mr*nr / (4*(mr+nr)): flops per byte loaded into the tile */
    DT_CMF_VEC_FLOATS,    /* VL of the annotation's ISA */
    DT_CMF_SKETCH_BLOCKED,
    DT_CMF_SKETCH_STREAM,
    DT_CMF_PAR_N,
    DT_CMF_PAR_M,
    DT_CMF_PAR_MN,
    DT_CMF_ORDER,         /* 0 = m inner, 1 = n inner */
    DT_CMF_STORE,         /* 0 = mask, 1 = scratch */
    DT_CMF_THREADS,
    DT_CMF_THREADS_FRAC,  /* threads / target cores */
    DT_CMF_UNIT_AMX,      /* 1: AMX tiles (reg_pressure is then tile registers / 8) */
    /* 1: the channel sketch (an op's own, after the op-independent columns
     * above: models stored before it bind by name and never saw it) */
    DT_CMF_SKETCH_CHANNEL,
    DT_CMF_OP_FIRST,      /* one-hot of the op: column DT_CMF_OP_FIRST + its registry index */
    DT_NFEATURES = DT_CMF_OP_FIRST + DT_N_OPS
};
/* Ops with a one-hot column: the first DT_CM_OPS of the op registry
 * (ops/op.h), named "op_<name>".  Another op needs its column; stored
 * models keep serving, bound to the columns by name (costmodel/xgb.h,
 * dt_xgb_bind; the new column is one they never saw). */
#define DT_CM_OPS (DT_NFEATURES - DT_CMF_OP_FIRST)

/* Writes the DT_NFEATURES features of (a, t, op) to out[0..n).  Returns
 * DT_NFEATURES, or DT_EINVAL when an argument is NULL, n < DT_NFEATURES,
 * the op is not one of the first DT_CM_OPS of the registry, or the tile is
 * malformed (mr, nr <= 0). */
int dt_features(const dt_annotation *a, const dt_target *t, const char *op_name, float *out,
                int n);

/* Short stable name of feature i ("mr", "acc", "b_panel_l1", ..., "op_<name>");
 * "?" when out of range.  (Not dt_feature_name: that one names CPU features in
 * common/target.h.) */
const char *dt_cm_feature_name(int i);

#endif
