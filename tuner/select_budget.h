/* The kernel budget of the final selection (select.h, "kernel budget"):
 * which kernel each shape dispatches when at most K distinct kernels may
 * be.  Used by select.c only. */
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

#endif
