/* Boxes of a workload's shape set (DESIGN.md, "A schedule is a set of
 * boxes"): one interval of domain indices per variable.  A dispatch table
 * is a set of disjoint boxes, each with one kernel; a one-variable box is
 * the interval of values it spans, what the schedules of schema 2 called a
 * range.  Everything that stores, searches, exports or serves a schedule
 * goes through this one type.
 *
 * Indices, not values: lo[v]..hi[v] are positions in variable v's domain
 * (shape/workload.h, dt_domain), so a box of a sparse domain such as
 * M in {1,8,32,128} or H=64..512:32 spans its sampled values only, and the
 * distance from a shape to a box counts domain steps.
 *
 * Plain values; copy freely.  The entries past the workload's variables
 * are 0 in every box these functions make, so boxes of one workload compare
 * and sort on all DT_MAX_VARS entries.  Functions that take a workload read
 * only its variables' domains. */
#ifndef DT_SHAPE_BOX_H
#define DT_SHAPE_BOX_H

#include <stdint.h>

#include "common/error.h"
#include "shape/workload.h"

typedef struct dt_box {
    int64_t lo[DT_MAX_VARS]; /* first domain index of each variable */
    int64_t hi[DT_MAX_VARS]; /* last one, >= lo */
} dt_box;

/* Most boxes a run of consecutive shapes decomposes into (dt_box_from_run). */
#define DT_BOX_RUN_MAX (2 * DT_MAX_VARS - 1)

/* Domain indices of flat shape number s (dt_workload_shape_at's order: the
 * last variable fastest), and back. */
void dt_box_split(const dt_workload *w, int64_t s, int64_t *idx);
int64_t dt_box_join(const dt_workload *w, const int64_t *idx);

/* The box with corners lo_text and hi_text ("batch=1,seq=8"), both shapes
 * of the set with lo <= hi in every variable.  DT_EINVAL naming the text
 * otherwise. */
int dt_box_parse(const dt_workload *w, const char *lo_text, const char *hi_text, dt_box *b,
                 dt_err *e);
/* The corners' canonical shape texts (dt_shape_format). */
void dt_box_format(const dt_workload *w, const dt_box *b, char *lo, size_t nlo, char *hi,
                   size_t nhi);

/* Number of shapes in b. */
int64_t dt_box_nshapes(const dt_workload *w, const dt_box *b);
/* Flat shape number of the j-th shape of b (0 <= j < dt_box_nshapes; the
 * last variable fastest, so increasing j gives increasing numbers). */
int64_t dt_box_shape(const dt_workload *w, const dt_box *b, int64_t j);
/* The inverse of dt_box_shape: j for flat shape s, or -1 when s is not in b. */
int64_t dt_box_position(const dt_workload *w, const dt_box *b, int64_t s);
/* Whether the domain indices idx lie in b. */
int dt_box_contains(const dt_workload *w, const dt_box *b, const int64_t *idx);
/* Domain steps from idx to b: the sum over the variables of how far idx[v]
 * lies outside lo[v]..hi[v]; 0 inside. */
int64_t dt_box_gap(const dt_workload *w, const dt_box *b, const int64_t *idx);
/* Whether a and b share a shape. */
int dt_box_overlap(const dt_workload *w, const dt_box *a, const dt_box *b);
/* Whether a is before b in the order of their first shapes. */
int dt_box_before(const dt_workload *w, const dt_box *a, const dt_box *b);

/* The boxes of the run of flat shape numbers a..b (a <= b), in shape order:
 * how schema 2 stored a range of a workload with several variables.
 * Writes at most DT_BOX_RUN_MAX boxes to out; returns how many (1 with one
 * variable). */
int dt_box_from_run(const dt_workload *w, int64_t a, int64_t b, dt_box *out);

/* Partitions the shape set into boxes of one label each: label[s] for every
 * flat shape s.  Along the last variable, consecutive shapes of one label
 * form a run; a run then grows over each earlier variable while the next
 * slice holds the same run with the same label.  With one variable the
 * boxes are exactly the runs.  *boxes and *labels (one per box) are
 * malloc'ed, sorted by first shape; DT_ENOMEM. */
int dt_box_partition(const dt_workload *w, const int *label, dt_box **boxes, int **labels,
                     int *n, dt_err *e);

#endif
