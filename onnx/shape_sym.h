/* Symbolic integers for shape propagation (internal to onnx/shape*.c and
 * its test).
 *
 * shape/expr.c's canonical form only flattens and sorts: it never cancels
 * "h+2-3" or distributes a product, so Conv's (h+2-3)/1+1 would stay as it
 * is, and Reshape's -1 (numel / product of the other dims) could not be
 * decided.  Here an integer is a polynomial with int64 coefficients over
 * atoms — the model variables and floor quotients floor(p/q) that did not
 * simplify — in a normal form: terms merged and sorted, so equal
 * polynomials are the same object (they are interned in a sym_ctx) and
 * (h+2-3)/1+1 is h.  dt_ox_sym_to_expr writes one as a canonical dt_expr.
 *
 * Errors are sticky: a function that fails (overflow, a division by zero,
 * a polynomial past the size or depth limits, no memory) records the first
 * error in the context and returns NULL, and every function given a NULL
 * operand returns NULL; so a rule chains calls and checks once
 * (dt_ox_sym_failed / dt_ox_sym_take_err).
 *
 * Ownership: every sym belongs to its sym_ctx and lives until
 * dt_ox_sym_ctx_free. */
#ifndef DT_ONNX_SHAPE_SYM_H
#define DT_ONNX_SHAPE_SYM_H

#include <stdint.h>

#include "common/error.h"
#include "shape/expr.h"
#include "shape/workload.h"

/* Limits of one polynomial: past them an operation fails ("too large").
 * Terms and degree keep every expression far below DT_EXPR_MAX_DEPTH levels
 * of text; the node count bounds its written size, which quotients repeated
 * inside quotients would otherwise let grow exponentially with depth. */
#define SYM_MAX_TERMS 32
#define SYM_MAX_DEG 16
#define SYM_MAX_NODES 1000
#define SYM_MAX_VARS 64
/* Sign questions the bounds leave open are settled by evaluating at every
 * shape when there are at most this many. */
#define SYM_ENUM_MAX 16384

/* Masks of what a comparison can be (dt_ox_sym_cmp, dt_ox_sym_signs). */
enum { SYM_LT = 1, SYM_EQ = 2, SYM_GT = 4, SYM_ANY = 7 };

typedef struct sym sym;
typedef struct sym_ctx sym_ctx;

sym_ctx *dt_ox_sym_ctx_new(void);
void dt_ox_sym_ctx_free(sym_ctx *c);

/* 1 once an operation failed; dt_ox_sym_take_err copies that error into e (if not
 * NULL), clears it and returns its code (0 when none). */
int dt_ox_sym_failed(const sym_ctx *c);
int dt_ox_sym_take_err(sym_ctx *c, dt_err *e);

/* A model variable: dom (non-empty, kept by pointer: it must outlive c)
 * gives its bounds and the values sign questions enumerate. */
const sym *dt_ox_sym_var(sym_ctx *c, const char *name, const dt_domain *dom);
const sym *dt_ox_sym_const(sym_ctx *c, int64_t v);
const sym *dt_ox_sym_add(sym_ctx *c, const sym *a, const sym *b);
const sym *dt_ox_sym_sub(sym_ctx *c, const sym *a, const sym *b);
const sym *dt_ox_sym_mul(sym_ctx *c, const sym *a, const sym *b);
/* floor(a / b); b == 0 is an error, a b that may be 0 is kept symbolic. */
const sym *dt_ox_sym_floordiv(sym_ctx *c, const sym *a, const sym *b);
/* ceil(a / b) for b > 0 at every shape (an error otherwise). */
const sym *dt_ox_sym_ceildiv(sym_ctx *c, const sym *a, const sym *b);
/* a - b*floor(a/b). */
const sym *dt_ox_sym_mod(sym_ctx *c, const sym *a, const sym *b);
/* a / b when b divides a at every shape, shown by polynomial division
 * (768*batch*seq / (batch*seq) = 768): 1 and *q; 0 when that cannot be
 * shown (no error recorded); a negative code on a sticky error. */
int dt_ox_sym_divexact(sym_ctx *c, const sym *a, const sym *b, const sym **q);

/* 1 and *v when p is a constant. */
int dt_ox_sym_is_const(const sym *p, int64_t *v);
/* What p can be compared with 0 / a with b, over every shape of the
 * variables' domains: a mask of SYM_LT, SYM_EQ, SYM_GT (SYM_ANY when
 * unknown; NULL operands give SYM_ANY).  Exact for constants and for
 * anything whose shapes can be enumerated, else from interval bounds. */
int dt_ox_sym_signs(sym_ctx *c, const sym *p);
int dt_ox_sym_cmp(sym_ctx *c, const sym *a, const sym *b);
/* Bounds of p over the domains: 1 and [*lo, *hi] (possibly loose), 0 when
 * unbounded (an overflow). */
int dt_ox_sym_bounds(const sym *p, int64_t *lo, int64_t *hi);

/* A new canonical expression (caller frees); NULL with a sticky error. */
dt_expr *dt_ox_sym_to_expr(sym_ctx *c, const sym *p);
/* Its canonical text, for messages ("?" when it cannot be written). */
const char *dt_ox_sym_str(sym_ctx *c, const sym *p, char *buf, size_t n);

#endif
