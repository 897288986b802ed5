/* Symbolic integers written as canonical sketch/ expressions
 * (onnx/shape_sym.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/shape_sym_internal.h"

static dt_expr *poly_expr(sym_ctx *c, const sym *p, int *unshowable);

static dt_expr *atom_expr(sym_ctx *c, int id, int *unshowable)
{
    const atom *a = &c->atoms[id];
    if (a->name)
        return dt_expr_var(a->name);
    dt_expr *x = calloc(1, sizeof *x), *n = poly_expr(c, a->num, unshowable),
            *d = poly_expr(c, a->den, unshowable);
    dt_expr **args = malloc(2 * sizeof *args);
    if (!x || !n || !d || !args) {
        free(x);
        free(args);
        dt_expr_free(n);
        dt_expr_free(d);
        return NULL;
    }
    x->kind = DT_EXPR_DIV;
    x->var_index = -1;
    x->nargs = 2;
    x->args = args;
    args[0] = n;
    args[1] = d;
    return x;
}

static dt_expr *nary(dt_expr_kind kind, dt_expr **args, int n)
{
    if (n == 1)
        return args[0];
    dt_expr *x = calloc(1, sizeof *x);
    dt_expr **a = malloc((size_t)n * sizeof *a);
    if (!x || !a) {
        free(x);
        free(a);
        for (int i = 0; i < n; i++)
            dt_expr_free(args[i]);
        return NULL;
    }
    memcpy(a, args, (size_t)n * sizeof *a);
    x->kind = kind;
    x->var_index = -1;
    x->nargs = n;
    x->args = a;
    return x;
}

/* cf * factors of t */
static dt_expr *term_expr(sym_ctx *c, const term *t, int64_t cf, int *unshowable)
{
    if (t->deg == 0)
        return dt_expr_const(cf);
    dt_expr *ops[SYM_MAX_DEG + 1];
    int n = 0, ok = 1;
    if (cf != 1)
        ok = (ops[n++] = dt_expr_const(cf)) != NULL;
    for (int i = 0; ok && i < t->deg; i++)
        ok = (ops[n++] = atom_expr(c, t->f[i], unshowable)) != NULL;
    if (!ok) {
        for (int i = 0; i < n; i++)
            dt_expr_free(ops[i]);
        return NULL;
    }
    return nary(DT_EXPR_MUL, ops, n);
}

/* The terms of one sign (+1 or -1), with positive coefficients, summed. */
static dt_expr *signed_sum(sym_ctx *c, const sym *p, int sign, int *count, int *unshowable)
{
    dt_expr *ops[SYM_MAX_TERMS];
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        int64_t cf = p->t[i].coef;
        if ((cf > 0) != (sign > 0))
            continue;
        if (!(ops[n] = term_expr(c, &p->t[i], cf > 0 ? cf : -cf, unshowable))) {
            for (int k = 0; k < n; k++)
                dt_expr_free(ops[k]);
            return NULL;
        }
        n++;
    }
    *count = n;
    return n ? nary(DT_EXPR_ADD, ops, n) : NULL;
}

/* The positive terms minus the negative ones: "h-1", "(h-1)/2+1", "2*a-3*b";
 * a polynomial of negative terms only is "-4", "-2*a" or "-1*(a+b)".  NULL
 * when out of memory or (*unshowable) a coefficient of INT64_MIN would have
 * to be negated. */
static dt_expr *poly_expr(sym_ctx *c, const sym *p, int *unshowable)
{
    if (p->n == 0)
        return dt_expr_const(0);
    int npos = 0, nneg = 0;
    const term *last_neg = NULL;
    for (int i = 0; i < p->n; i++) {
        if (p->t[i].coef > 0) {
            npos++;
        } else {
            nneg++;
            last_neg = &p->t[i];
        }
    }
    if (nneg == 1 && npos == 0)
        return term_expr(c, last_neg, last_neg->coef, unshowable);
    for (int i = 0; i < p->n; i++)
        if (p->t[i].coef == INT64_MIN) {
            *unshowable = 1;
            return NULL;
        }
    int k;
    dt_expr *pos = npos ? signed_sum(c, p, 1, &k, unshowable) : NULL;
    dt_expr *neg = nneg ? signed_sum(c, p, -1, &k, unshowable) : NULL;
    if ((npos && !pos) || (nneg && !neg)) {
        dt_expr_free(pos);
        dt_expr_free(neg);
        return NULL;
    }
    if (!nneg)
        return pos;
    dt_expr *ops[2];
    if (!npos) {
        if (!(ops[0] = dt_expr_const(-1))) {
            dt_expr_free(neg);
            return NULL;
        }
        ops[1] = neg;
        return nary(DT_EXPR_MUL, ops, 2);
    }
    ops[0] = pos;
    ops[1] = neg;
    dt_expr *x = nary(DT_EXPR_ADD, ops, 2);
    if (x)
        x->kind = DT_EXPR_SUB;
    return x;
}

dt_expr *dt_ox_sym_to_expr(sym_ctx *c, const sym *p)
{
    if (!p)
        return NULL;
    dt_err e;
    int unshowable = 0;
    dt_expr *x = poly_expr(c, p, &unshowable);
    if (!x) {
        if (unshowable)
            dt_errf(&e, DT_EOVERFLOW, "a coefficient of %lld cannot be written as an expression",
                    (long long)INT64_MIN);
        else
            dt_errf(&e, DT_ENOMEM, "out of memory");
        dt_ox_sy_record(c, &e);
        return NULL;
    }
    if (dt_expr_canonicalize(&x, &e)) {
        dt_expr_free(x);
        dt_ox_sy_record(c, &e);
        return NULL;
    }
    return x;
}

const char *dt_ox_sym_str(sym_ctx *c, const sym *p, char *buf, size_t n)
{
    snprintf(buf, n, "?");
    if (!p)
        return buf;
    dt_err keep = c->err;
    dt_expr *x = dt_ox_sym_to_expr(c, p);
    c->err = keep; /* a message must not turn into a failure */
    if (x) {
        size_t need = dt_expr_print(x, buf, n);
        if (need >= n && n > 4)
            memcpy(buf + n - 4, "...", 4);
        dt_expr_free(x);
    }
    return buf;
}
