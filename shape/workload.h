/* Workloads, their canonical keys, and their shape sets.
 *
 * A workload is one op with its dims: constants or expressions over
 * variables; each variable has a domain (a set of values with weights).  A
 * shape assigns one value to every variable; the shape set is the product of
 * the domains, and a shape's weight is the product of its values' weights.
 *
 * The key grammar is in docs/workload-keys.md, e.g.
 *   dense(M=1..128,N=768,K=768)
 *   batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)
 *   dense(M=1..128,N=768,K=768,epilogue=bias,dtype=bf16)
 * Weights are not part of the key: they say how often shapes occur, not what
 * is computed.
 *
 * Ownership: a dt_workload owns its exprs and domains; free it with
 * dt_workload_free.  Functions that return strings write caller buffers. */
#ifndef DT_SHAPE_WORKLOAD_H
#define DT_SHAPE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "dtypes/dtype.h"
#include "shape/expr.h"
#include "ops/op.h"

#define DT_MAX_VARS 8
#define DT_NAME_MAX 33
#define DT_MAX_SHAPES (1 << 20)    /* per workload */
#define DT_MAX_DOMAIN (1 << 20)    /* values per variable */
#define DT_KEY_MAX 1024

typedef struct dt_domain {
    int n;            /* number of values */
    int64_t *values;  /* strictly ascending (owned) */
    double *weights;  /* n probabilities summing to 1 (owned) */
} dt_domain;

typedef struct dt_var {
    char name[DT_NAME_MAX];
    dt_domain dom;
} dt_var;

typedef struct dt_workload {
    const dt_op_desc *op;
    dt_expr *dims[DT_MAX_DIMS]; /* op->ndims exprs, in the op's dim order */
    int attrs[DT_MAX_ATTRS];    /* value index of each op attribute */
    dt_dtype dtype;             /* element types (dtypes/dtype.h); f32 by default */
    int nvars;
    dt_var vars[DT_MAX_VARS];   /* sorted by name once canonical */
} dt_workload;

/* ---- domains ---- */
/* lo..hi with step (>= 1), uniform weights. */
int dt_domain_range(dt_domain *d, int64_t lo, int64_t hi, int64_t step, dt_err *e);
/* Explicit values (any order, no duplicates); weights NULL means uniform,
 * else n non-negative numbers, not all zero, normalised here. */
int dt_domain_values(dt_domain *d, const int64_t *values, const double *weights, int n,
                     dt_err *e);
int dt_domain_copy(dt_domain *dst, const dt_domain *src);
void dt_domain_free(dt_domain *d);
/* "1..128", "8..512:8" or "{1,2,4,8}" (weights are not printed). */
size_t dt_domain_print(const dt_domain *d, char *buf, size_t n);
int dt_domain_parse(const char *text, dt_domain *d, dt_err *e);
int dt_domain_contains(const dt_domain *d, int64_t v);
/* Index of the value nearest to v (ties: the smaller value). */
int dt_domain_nearest(const dt_domain *d, int64_t v);

/* ---- workloads ---- */
dt_workload *dt_workload_new(const dt_op_desc *op);
void dt_workload_free(dt_workload *w);
dt_workload *dt_workload_clone(const dt_workload *w);
/* Adds a variable (takes ownership of dom's arrays, even on failure). */
int dt_workload_add_var(dt_workload *w, const char *name, dt_domain *dom, dt_err *e);
int dt_workload_var_index(const dt_workload *w, const char *name);

/* Brings w to canonical form: single-valued variables become constants,
 * exprs are canonical, unused variables dropped, a dim that is a variable
 * used by that dim alone takes the dim's name (so "M=seq;seq=1..128" and
 * "M=1..128" are the same workload), variables sorted, exprs bound. */
int dt_workload_canonicalize(dt_workload *w, dt_err *e);

/* Checks a canonical workload: at most DT_MAX_SHAPES shapes, and for every
 * shape each dim is >= 1 and the op's sizes fit in int64. */
int dt_workload_validate(const dt_workload *w, dt_err *e);

/* Canonical key; returns the length needed (like snprintf). */
size_t dt_workload_key(const dt_workload *w, char *buf, size_t n);
/* Parses, canonicalizes and validates a key. */
int dt_workload_parse_key(const char *key, dt_workload **out, dt_err *e);

/* ---- shapes ---- */
int64_t dt_workload_nshapes(const dt_workload *w);
/* Shape number idx (0 <= idx < nshapes; the last variable varies fastest):
 * fills vals[nvars] and, if weight is not NULL, its weight. */
void dt_workload_shape_at(const dt_workload *w, int64_t idx, int64_t *vals, double *weight);
/* The inverse of dt_workload_shape_at: *idx (may be NULL) receives the index
 * of the shape whose every variable is the domain value nearest to vals[v]
 * (written to nearest[nvars], may be NULL).  Returns 1 when vals is itself a
 * shape of the set, else 0. */
int dt_workload_shape_index(const dt_workload *w, const int64_t *vals, int64_t *idx,
                            int64_t *nearest);
/* Concrete dims (op->ndims values) of a shape. */
int dt_workload_dims(const dt_workload *w, const int64_t *vals, int64_t *dims, dt_err *e);
/* "M=37" or "batch=2,seq=37" (variables in order). */
size_t dt_shape_format(const dt_workload *w, const int64_t *vals, char *buf, size_t n);
/* {"vars": {name: {"domain", "min", "max", "count"}}, "shapes": n}: compact
 * JSON text (malloc'ed; NULL when out of memory), what the database stores
 * as a workload's shape set. */
char *dt_workload_shape_set_json(const dt_workload *w);
/* Parses "name=value,..." naming every variable exactly once.  Values
 * outside the domains are accepted (any kernel runs any shape); *in_domain
 * tells whether the shape belongs to the shape set.  The dims must still be
 * >= 1 and fit in int64. */
int dt_shape_parse(const dt_workload *w, const char *text, int64_t *vals, int *in_domain,
                   dt_err *e);

#endif
