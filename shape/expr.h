/* Integer expressions over model variables: the dims of a workload
 * ("batch*seq", "12*batch", "(H+2-3)/2+1").
 *
 * Grammar (whitespace ignored):
 *   expr   := term (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := INT | NAME | '(' expr ')'
 * '/' is floor division.  Every evaluation is checked for int64 overflow and
 * division by zero.
 *
 * Canonical form (what dt_expr_print writes): sums and products are flattened
 * and their operands sorted (variables by name; a product's constant first,
 * a sum's constant last), constants folded, no spaces, minimal parentheses.
 * So "seq*batch", "batch * seq" and "(batch)*seq" all print "batch*seq". */
#ifndef DT_SHAPE_EXPR_H
#define DT_SHAPE_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum {
    DT_EXPR_CONST,
    DT_EXPR_VAR,
    DT_EXPR_ADD, /* n-ary sum */
    DT_EXPR_MUL, /* n-ary product */
    DT_EXPR_SUB, /* binary: args[0] - args[1] */
    DT_EXPR_DIV, /* binary: floor(args[0] / args[1]) */
} dt_expr_kind;

typedef struct dt_expr {
    dt_expr_kind kind;
    int64_t value;          /* DT_EXPR_CONST */
    char *name;             /* DT_EXPR_VAR (owned) */
    int var_index;          /* DT_EXPR_VAR: index set by dt_expr_bind, else -1 */
    int nargs;              /* operators */
    struct dt_expr **args;  /* owned */
} dt_expr;

/* The tallest expression tree dt_expr_parse builds: parentheses, unary
 * minus and changes of operator in a chain ("a-b+c", "a*b/c") count; a run
 * of one of '+' or '*' ("seq*seq*...*seq") is one flat n-ary node of any
 * length.  Every function here recurses on a
 * tree's height, so the limit keeps a hostile key ("((((…" or "1+1+…")
 * from overflowing even a 256 KB thread stack.  Code that builds trees by
 * other means (the ONNX front end) must keep to it too. */
#define DT_EXPR_MAX_DEPTH 100

/* Parses text (exactly, up to its NUL).  On error returns DT_EINVAL with the
 * message and, if err_offset is not NULL, the 0-based offset of the problem;
 * a tree taller than DT_EXPR_MAX_DEPTH fails with "nested too deeply". */
int dt_expr_parse(const char *text, dt_expr **out, size_t *err_offset, dt_err *e);

dt_expr *dt_expr_const(int64_t v);
dt_expr *dt_expr_var(const char *name);
dt_expr *dt_expr_clone(const dt_expr *x);
void dt_expr_free(dt_expr *x);

/* Rewrites x into canonical form in place (see above).  Fails only when
 * folding constants overflows or divides by zero. */
int dt_expr_canonicalize(dt_expr **x, dt_err *e);

/* Replaces every variable called name by the constant v (then re-canonicalize). */
void dt_expr_substitute(dt_expr *x, const char *name, int64_t v);
/* Renames every variable called from to to. */
int dt_expr_rename(dt_expr *x, const char *from, const char *to);

/* Calls fn(name, ctx) for every variable occurrence, left to right. */
void dt_expr_visit_vars(const dt_expr *x, void (*fn)(const char *name, void *ctx), void *ctx);
int dt_expr_uses(const dt_expr *x, const char *name);
int dt_expr_equal(const dt_expr *a, const dt_expr *b);

/* Resolves variable names to indices into names[0..n); unknown names fail
 * with DT_EINVAL naming the variable. */
int dt_expr_bind(dt_expr *x, const char *const *names, int n, dt_err *e);
/* Evaluates a bound expression with vals[var_index]; DT_EOVERFLOW or DT_EINVAL
 * (division by zero) on failure. */
int dt_expr_eval(const dt_expr *x, const int64_t *vals, int64_t *out, dt_err *e);

/* Writes the canonical text of x (x should be canonical) into buf; returns the
 * length it needed (like snprintf). */
size_t dt_expr_print(const dt_expr *x, char *buf, size_t n);

/* 1 when name is a valid variable name: [A-Za-z_][A-Za-z0-9_]{0,31}. */
int dt_is_name(const char *name);

#endif
