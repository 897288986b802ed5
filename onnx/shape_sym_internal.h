/* What the files of the symbolic arithmetic share (onnx/shape_sym.c: the
 * normal form, interning, signs; shape_sym_div.c: quotients;
 * shape_sym_expr.c: expressions).  Internal to those three files. */
#ifndef DT_ONNX_SHAPE_SYM_INTERNAL_H
#define DT_ONNX_SHAPE_SYM_INTERNAL_H

#include "onnx/shape_sym.h"

/* coef * f[0] * ... * f[deg-1]; factors are atom ids, ascending, repeated
 * for powers. */
typedef struct {
    int64_t coef;
    int deg;
    int f[SYM_MAX_DEG];
} term;

/* Terms are kept greatest first in a graded lexicographic order (higher
 * degree first, then the smaller atom id at the first difference): a
 * monomial order, which is what makes the leading-term division of
 * dt_ox_sym_divexact exact. */
typedef struct {
    int n;
    term t[SYM_MAX_TERMS];
} poly;

struct sym {
    uint64_t hash;
    int height;      /* levels of its printed expression once parsed, at most */
    int size;        /* nodes of its expression tree, at most */
    int bounded;     /* lo..hi hold every value (0: an overflow on the way) */
    int64_t lo, hi;
    uint64_t vmask;  /* the variables it uses, by index */
    int n;
    term t[];
};

/* A variable or a quotient that did not simplify. */
typedef struct {
    char *name;           /* a variable; NULL for a quotient */
    const dt_domain *dom; /* variable */
    int var;              /* variable: its index (bit of vmask) */
    const sym *num, *den; /* quotient: floor(num / den) */
    int height, size;
    int bounded;
    int64_t lo, hi;
    uint64_t vmask;
} atom;

struct sym_ctx {
    atom *atoms;
    int natoms, capatoms;
    int nvars;
    int var_atom[SYM_MAX_VARS]; /* variable index -> atom id */
    const sym **tab;            /* interned polynomials, open addressing */
    size_t tabcap, tabn;
    int *qtab;                  /* quotient atoms by (num, den), open addressing */
    size_t qcap, qn;
    dt_err err;                 /* the first failure (sticky) */
};

/* ---- shape_sym.c ---- */
/* Records e as the context's sticky error (if it has none); returns its code. */
int dt_ox_sy_record(sym_ctx *c, const dt_err *e);
/* The "too large" / "too deep" failures; return DT_EINVAL. */
int dt_ox_sy_too_large(dt_err *e);
int dt_ox_sy_too_deep(dt_err *e);
uint64_t dt_ox_sy_mix(uint64_t h, uint64_t v);
/* floor(a / b), checked. */
int dt_ox_sy_fdiv64(int64_t a, int64_t b, int64_t *r, dt_err *e);
/* 1 when b's factors are a sub-multiset of a's, the rest into rest->f/deg. */
int dt_ox_sy_term_divides(const term *a, const term *b, term *rest);
/* p += coef * (t's monomial), keeping the order. */
int dt_ox_sy_poly_add_term(poly *p, const term *t, int64_t coef, dt_err *e);
void dt_ox_sy_poly_of(const sym *s, poly *p);
/* out += k * a */
int dt_ox_sy_poly_axpy(poly *out, int64_t k, const poly *a, dt_err *e);
/* out += sign * m * a for a term m */
int dt_ox_sy_poly_add_term_times(poly *out, const term *m, const poly *a, int64_t sign, dt_err *e);
int dt_ox_sy_poly_is_const(const poly *p, int64_t *v);
/* The interned sym of p (or of a constant, or of atom id alone). */
int dt_ox_sy_intern(sym_ctx *c, const poly *p, const sym **out, dt_err *e);
int dt_ox_sy_intern_const(sym_ctx *c, int64_t v, const sym **out, dt_err *e);
int dt_ox_sy_intern_atom(sym_ctx *c, int id, const sym **out, dt_err *e);
/* A new zeroed atom; *id its index. */
int dt_ox_sy_new_atom(sym_ctx *c, int *id, dt_err *e);
int dt_ox_sy_mul(sym_ctx *c, const sym *a, const sym *b, const sym **out, dt_err *e);
/* s, or NULL with e recorded when rc is an error. */
const sym *dt_ox_sy_done(sym_ctx *c, int rc, const sym *s, const dt_err *e);

#endif
