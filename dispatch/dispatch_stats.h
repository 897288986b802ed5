/* What a stored dispatch table costs on its shape set, from the records:
 * the objective Σ_s w_s · (measured ns of the dispatched kernel on s), the
 * unrestricted choice's Σ_s w_s · (fastest measured ns on s, any kernel)
 * and the loss between them, with the distinct kernels of each (the tuner's
 * kernel budget: docs/tuner.md, "Kernel budget").  Nothing is stored for
 * it: the measurements table holds every time, so `dtune query` and
 * `dtune export` report the same figures as the tune summary (as long as
 * nothing was measured since).  A kernel with a failed trial on the
 * schedule's thread count counts for no shape, as in the tuner. */
#ifndef DT_DISPATCH_DISPATCH_STATS_H
#define DT_DISPATCH_DISPATCH_STATS_H

#include <stdint.h>

#include "common/error.h"
#include "db/db.h"
#include "dispatch/dispatch.h"

#define DT_DISPATCH_STATS_MAX_IDS 64

typedef struct dt_dispatch_stats {
    int ranges;
    int kernels;              /* distinct kernels dispatched */
    int nids;                 /* kernel_ids listed: min(kernels, DT_DISPATCH_STATS_MAX_IDS) */
    int64_t kernel_ids[DT_DISPATCH_STATS_MAX_IDS]; /* in order of first use by the ranges */
    int64_t shapes;           /* of the set */
    int64_t unmeasured;       /* shapes whose dispatched kernel has no ok record on them */
    double objective_ns;      /* weights summing to 1; NAN when unmeasured > 0 */
    int best_kernels;         /* distinct kernels of the per-shape fastest */
    double best_objective_ns; /* NAN when some shape has no record at all */
    double loss;              /* objective / best - 1 over the shapes where both are
                               * measured; NAN when none is */
} dt_dispatch_stats;

/* The figures of table d (dt_dispatch_load'ed) for target target_key from
 * db's records.  DT_ENOTFOUND when the workload or target is not in db. */
int dt_dispatch_stats_load(dt_db *db, const dt_dispatch *d, const char *target_key,
                           dt_dispatch_stats *st, dt_err *e);

#endif
