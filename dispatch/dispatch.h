/* The dispatch table of a workload on a target: boxes of its shape set and
 * the micro-kernel chosen for each (DESIGN.md, "A schedule is a set of
 * boxes"), as stored in the schedules table by the tuner (tuner/select.h),
 * and the lookup of any shape in it.
 *
 * A range is a box (shape/box.h): one interval of domain values per
 * variable, stored as its two corners; with one variable, the values lo..hi.
 * Rows of schema 2 (dt_db_schedule.box == 0) were runs of consecutive shapes
 * in shape-set order; each is read as the boxes of its run, all with its
 * kernel.  A shape of the set is found in the box holding it.  Any other
 * shape (outside the declared domains, or between the values of a sparse
 * set such as M in {5,24,...}) goes to the box of the nearest shape of the
 * set (each variable to its nearest value) and is flagged extrapolated; a
 * shape in no box (a table with gaps) goes to the box fewest domain steps
 * away (ties: the first in shape order).  Every micro-kernel is correct on
 * every shape, so no shape is refused.
 *
 * Ownership: a dt_dispatch owns its workload and ranges (dt_dispatch_free).
 * Lookups do not allocate and may run from several threads at once. */
#ifndef DT_DISPATCH_DISPATCH_H
#define DT_DISPATCH_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "db/db.h"
#include "space/annotation.h"
#include "shape/box.h"
#include "shape/workload.h"

typedef struct dt_dispatch_range {
    dt_box box;            /* the shapes it serves */
    char shape_lo[128];    /* canonical text of the box's first corner */
    char shape_hi[128];    /* and of its last */
    int64_t kernel_id;
    double predicted_ns;   /* mean over the range's shapes; NAN when unknown */
    double measured_ns;    /* mean over the range's shapes; NAN when unknown */
    size_t row;            /* index of the schedule row it was read from */
} dt_dispatch_range;

typedef struct dt_dispatch {
    dt_workload *w;        /* owned */
    char key[DT_KEY_MAX];  /* canonical workload key */
    int threads;
    int n;                 /* ranges: disjoint boxes, sorted by first shape */
    dt_dispatch_range *r;
} dt_dispatch;

typedef struct dt_dispatch_hit {
    const dt_dispatch_range *range; /* borrowed from the table */
    int extrapolated;      /* the shape is not in the tuned set, or in no box */
    int64_t shape_idx;     /* index of the (nearest) shape of the set */
} dt_dispatch_hit;

/* Builds a table from schedule rows of workload w (cloned) for `threads`.
 * Rows may come in any order, boxes or schema-2 runs; DT_EINVAL when a
 * shape does not parse, is not in w's shape set, a box (run) is reversed,
 * or two overlap: the caller's rows are bad input.  n may be 0 (a table
 * that finds nothing). */
int dt_dispatch_from_rows(const dt_workload *w, int threads, const dt_db_schedule *rows,
                          size_t n, dt_dispatch **out, dt_err *e);

/* Loads the table of (workload key, target key, threads) from db.  threads
 * 0 takes the highest thread count that has a schedule.  DT_EINVAL when
 * workload_key (the caller's) does not parse; DT_ENOTFOUND (with a message
 * saying what is missing) when the workload, the target or a schedule is
 * not there.  Stored rows that dt_dispatch_from_rows refuses are the
 * database's damage, not the caller's mistake: DT_EDB (a runtime failure:
 * exit 3, HTTP 500, DTUNE_EDB), "database PATH is damaged: schedules row ID
 * (workload KEY, target T, N threads) cannot be served: <why>; run 'dtune db
 * check --db PATH'" (rows ID and ID2 for an overlap). */
int dt_dispatch_load(dt_db *db, const char *workload_key, const char *target_key, int threads,
                     dt_dispatch **out, dt_err *e);

/* db/'s schedule reader (db/db.h, dt_db_schedule_reader_fn): reads each
 * stored row of the schedule of workload_key with the very code
 * dt_dispatch_load uses (its corners against the workload's variables and
 * domains, a box or a schema-2 run) and reports every row it refuses; with
 * whole, when every row reads, also the table they make (an overlap).  ud
 * is unused.  DT_OK unless out of memory. */
int dt_dispatch_check_schedule(const char *workload_key, const dt_db_schedule *rows, size_t n,
                               bool whole, dt_db_schedule_problem_fn report, void *ctx,
                               void *ud, dt_err *e);

/* Sets dt_dispatch_check_schedule as db's schedule reader: dt_db_check_all,
 * dt_db_require_sound, dt_db_prune and dt_db_merge then also refuse a
 * schedule a lookup could not serve (`dtune db check|prune|merge|init`). */
void dt_dispatch_attach_reader(dt_db *db);

/* Finds the box for the shape vals[w->nvars].  Returns 0, or DT_ENOTFOUND
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
