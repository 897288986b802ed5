/* Choosing a small set of kernels for a shape set (docs/tuner.md, "Kernel
 * budget"): given the time of every candidate kernel on every shape and the
 * shapes' weights, the set S of at most K kernels that minimises
 *   Σ_s w_s · min_{k∈S} t(s, k).
 * This is pure arithmetic on a matrix (no task, no database): tuner/select.c
 * fills the matrix from measurements (and calibrated predictions where a
 * pair was not measured) and tests/test_select_budget.c checks it on
 * synthetic times.
 *
 * Method: exhaustive when the candidate sets of size K are few
 * (C(nk, K) <= DT_KSET_EXACT_MAX), otherwise greedy forward selection (start
 * with the best single kernel, add the kernel that lowers the objective
 * most) followed by swap refinement (replace a chosen kernel by a candidate
 * while that lowers the objective).  The greedy result is never worse than
 * the best single kernel, and a kernel is added only when it lowers the
 * objective, so fewer than K may be returned.
 *
 * An unusable pair (t = +inf or NaN) is replaced by twice the slowest
 * usable time of its shape, so every set has a finite objective and sets
 * that cover every shape win; a shape with no usable kernel at all counts
 * for nothing.
 *
 * Ownership: a dt_kset owns its copy of the matrix (dt_kset_free). */
#ifndef DT_TUNER_KSET_H
#define DT_TUNER_KSET_H

#include <stdint.h>

#include "common/error.h"

/* Enumerate every subset when there are at most this many of size K. */
#define DT_KSET_EXACT_MAX 20000
/* The most kernels a set holds (and the caller's set[] must have room for). */
#define DT_KSET_MAX 256

typedef struct dt_kset {
    int64_t ns;        /* shapes */
    int nk;            /* candidate kernels */
    double *w;         /* [ns] weights (0 for a shape no kernel can run) */
    double *t;         /* [ns * nk] times, row s = shape s */
} dt_kset;

/* Copies w[ns] and t[ns * nk] (row-major by shape); 1 <= nk <= DT_KSET_MAX. */
int dt_kset_init(dt_kset *p, int64_t ns, int nk, const double *w, const double *t, dt_err *e);
void dt_kset_free(dt_kset *p);

/* Σ_s w_s · min_{k∈set} t(s, k) (the set of n kernels; n 0: +inf). */
double dt_kset_objective(const dt_kset *p, const int *set, int n);

/* The best set of at most K kernels into set[] (ascending indices); returns
 * how many (>= 1), or a negative code.  *obj (may be NULL) its objective. */
int dt_kset_choose(const dt_kset *p, int K, int *set, double *obj, dt_err *e);
/* The same by greedy forward selection + swap refinement only. */
int dt_kset_greedy(const dt_kset *p, int K, int *set, double *obj, dt_err *e);
/* The same by enumeration (C(nk, K) sets; the caller keeps it small). */
int dt_kset_exact(const dt_kset *p, int K, int *set, double *obj, dt_err *e);

/* The smallest set whose objective is within tol (0.01: 1 %) of the
 * objective of every candidate together: sizes 1, 2, ... each chosen as
 * dt_kset_choose does; returns its size. */
int dt_kset_auto(const dt_kset *p, double tol, int *set, double *obj, dt_err *e);

#endif
