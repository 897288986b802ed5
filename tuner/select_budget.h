/* The kernel budget of the final selection (select.h, "kernel budget"):
 * which kernel each shape dispatches when at most K distinct kernels may
 * be, and the estimates it chooses on.  Used by select.c only (and tested). */
#ifndef DT_TUNER_SELECT_BUDGET_H
#define DT_TUNER_SELECT_BUDGET_H

#include "tuner/measurer.h"
#include "tuner/select.h"
#include "tuner/task.h"

/* Fills win[s] (kernel index) and wns[s] (its measured ns on s, NAN when
 * not measured there) for every shape under o->max_kernels (K or
 * DT_SELECT_AUTO), measuring unmeasured dispatched pairs with m (NULL:
 * nothing) within `left` trials; the trials go to info->trials.  Shapes no
 * candidate can run keep win -1 / wns +inf.  Candidates: every kernel with
 * a measurement and no failure; with none, nothing is changed. */
int dt_select_budget_winners(dt_task *t, dt_measurer *m, const dt_select_opts *o, int64_t left,
                             int *win, double *wns, dt_select_info *info, dt_err *e);

/* Kernel k's time on every shape into out[t->nshapes]: measured ns where
 * measured, else its prediction scaled by the geometric mean of measured /
 * predicted over its measured shapes whose prediction is above the model's
 * floor (DT_PREDICTOR_FLOOR: a prediction at it is no measure of the
 * model's error — a GEMM-view kernel measured on a depthwise layer's
 * largest images at 1.5 s, predicted at the floor 160x slower than that,
 * had its estimates on the small images scaled to 600 GFLOP/s, above the
 * CPU's peak, and was dispatched there); +inf when neither. */
void dt_select_estimates(const dt_task *t, int k, double *out);

/* The unrestricted choice's distrust (DT_SELECT_ALL; select.h): a shape
 * whose fastest measured kernel win[s] (at wns[s]) is more than
 * DT_SELECT_DISTRUST times slower than another kernel's calibrated
 * estimate there goes to the kernel of the best such estimate, unmeasured
 * (wns[s] NAN).  Shapes without a measured winner are left to the gaps'
 * rule.  DT_ENOMEM, or 0. */
int dt_select_distrust_winners(const dt_task *t, int *win, double *wns, dt_err *e);

#endif
