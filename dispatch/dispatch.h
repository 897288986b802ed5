/* The dispatch table of a workload on a target: shape ranges and the
 * micro-kernel chosen for each (DESIGN.md, "dispatch table"), as stored in
 * the schedules table by the tuner (tuner/select.h), and the lookup of any
 * shape in it.
 *
 * A range is a run of consecutive shapes in the workload's shape-set order
 * (dt_workload_shape_at: the last variable varies fastest), stored as its
 * first and last shape.  A shape of the set is found in the range holding
 * it.  Any other shape (outside the declared range, or between the values of
 * a sparse set such as M in {5,24,...}) goes to the range of the nearest
 * shape of the set (each variable clamped to its nearest value) and is
 * flagged extrapolated: every micro-kernel is correct on every shape, so no
 * shape is refused.
 *
 * Ownership: a dt_dispatch owns its workload and ranges (dt_dispatch_free).
 * Lookups do not allocate and may run from several threads at once. */
#ifndef DT_DISPATCH_DISPATCH_H
#define DT_DISPATCH_DISPATCH_H

#include <stdint.h>

#include "common/error.h"
#include "db/db.h"
#include "sketch/annotation.h"
#include "sketch/workload.h"

typedef struct dt_dispatch_range {
    int64_t lo, hi;        /* shape indices, lo <= hi */
    char shape_lo[128];    /* canonical shape text */
    char shape_hi[128];
    int64_t kernel_id;
    double predicted_ns;   /* mean over the range's shapes; NAN when unknown */
    double measured_ns;    /* mean over the range's shapes; NAN when unknown */
} dt_dispatch_range;

typedef struct dt_dispatch {
    dt_workload *w;        /* owned */
    char key[DT_KEY_MAX];  /* canonical workload key */
    int threads;
    int n;                 /* ranges, sorted, disjoint */
    dt_dispatch_range *r;
} dt_dispatch;

typedef struct dt_dispatch_hit {
    const dt_dispatch_range *range; /* borrowed from the table */
    int extrapolated;      /* the shape is not in the tuned set, or in no range */
    int64_t shape_idx;     /* index of the (nearest) shape of the set */
} dt_dispatch_hit;

/* Builds a table from schedule rows of workload w (cloned) for `threads`.
 * Rows may come in any order; DT_EINVAL when a shape does not parse, is not
 * in w's shape set, a range is reversed, or two ranges overlap.  n may be 0
 * (a table that finds nothing). */
int dt_dispatch_from_rows(const dt_workload *w, int threads, const dt_db_schedule *rows,
                          size_t n, dt_dispatch **out, dt_err *e);

/* Loads the table of (workload key, target key, threads) from db.  threads
 * 0 takes the highest thread count that has a schedule.  DT_ENOTFOUND (with a
 * message saying what is missing) when the workload, the target or a
 * schedule is not there. */
int dt_dispatch_load(dt_db *db, const char *workload_key, const char *target_key, int threads,
                     dt_dispatch **out, dt_err *e);

/* Finds the range for the shape vals[w->nvars].  Returns 0, or DT_ENOTFOUND
 * when the table has no range at all. */
int dt_dispatch_find(const dt_dispatch *d, const int64_t *vals, dt_dispatch_hit *hit);

void dt_dispatch_free(dt_dispatch *d);

/* The annotation of stored kernel id, which must be a kernel of w's op (a
 * schedule's kernel, before it is built or generated for w).  DT_ENOTFOUND
 * when the database holds no such kernel; DT_EINVAL when it is another op's
 * kernel or its annotation does not parse. */
int dt_dispatch_kernel_annotation(dt_db *db, int64_t id, const dt_workload *w,
                                  dt_annotation *out, dt_err *e);

#endif
