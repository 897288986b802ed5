#include "shape/expr.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

/* ---- construction ------------------------------------------------------- */

static dt_expr *node(dt_expr_kind kind)
{
    dt_expr *x = calloc(1, sizeof *x);
    if (x) {
        x->kind = kind;
        x->var_index = -1;
    }
    return x;
}

dt_expr *dt_expr_const(int64_t v)
{
    dt_expr *x = node(DT_EXPR_CONST);
    if (x)
        x->value = v;
    return x;
}

dt_expr *dt_expr_var(const char *name)
{
    dt_expr *x = node(DT_EXPR_VAR);
    if (x && !(x->name = strdup(name))) {
        free(x);
        return NULL;
    }
    return x;
}

static int push_arg(dt_expr *x, dt_expr *a)
{
    dt_expr **args = realloc(x->args, (size_t)(x->nargs + 1) * sizeof *args);
    if (!args)
        return DT_ENOMEM;
    x->args = args;
    x->args[x->nargs++] = a;
    return 0;
}

static dt_expr *binary(dt_expr_kind kind, dt_expr *a, dt_expr *b)
{
    dt_expr *x = node(kind);
    if (!x || push_arg(x, a) || push_arg(x, b)) {
        dt_expr_free(x);
        return NULL;
    }
    return x;
}

void dt_expr_free(dt_expr *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->nargs; i++)
        dt_expr_free(x->args[i]);
    free(x->args);
    free(x->name);
    free(x);
}

dt_expr *dt_expr_clone(const dt_expr *x)
{
    if (!x)
        return NULL;
    dt_expr *c = node(x->kind);
    if (!c)
        return NULL;
    c->value = x->value;
    c->var_index = x->var_index;
    if (x->name && !(c->name = strdup(x->name)))
        goto fail;
    for (int i = 0; i < x->nargs; i++) {
        dt_expr *a = dt_expr_clone(x->args[i]);
        if (!a || push_arg(c, a)) {
            dt_expr_free(a);
            goto fail;
        }
    }
    return c;
fail:
    dt_expr_free(c);
    return NULL;
}

int dt_is_name(const char *s)
{
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    size_t n = 1;
    for (; s[n]; n++)
        if (!(isalnum((unsigned char)s[n]) || s[n] == '_'))
            return 0;
    return n <= 32;
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct {
    const char *s;
    size_t pos;
    size_t err_pos;
    int nest; /* open '(' and unary '-' around the current factor */
    dt_err *e;
} parser;

static void skip_ws(parser *p)
{
    while (isspace((unsigned char)p->s[p->pos]))
        p->pos++;
}

static int fail(parser *p, size_t pos, const char *what)
{
    p->err_pos = pos;
    return dt_errf(p->e, DT_EINVAL, "%s at offset %zu of expression '%.120s%s'", what, pos, p->s,
                   strlen(p->s) > 120 ? "..." : "");
}

static int fail_unexpected(parser *p, size_t pos)
{
    char what[32];
    snprintf(what, sizeof what, "unexpected '%c'", p->s[pos]);
    return fail(p, pos, what);
}

static int fail_too_deep(parser *p, size_t pos)
{
    p->err_pos = pos;
    return dt_errf(p->e, DT_EINVAL,
                   "expression nested too deeply (more than %d levels) at offset %zu", DT_EXPR_MAX_DEPTH,
                   pos);
}

/* Every parse function returns the height of the tree it built in *h, so
 * that a long alternating chain ("1-1+1-...", "a*b/c*d/...") is refused as
 * surely as deep parentheses: the functions that walk a tree later
 * (canonicalize, print, eval, free) recurse on its height.  A run of one
 * associative operator is one n-ary node and does not grow it. */
static int parse_expr(parser *p, dt_expr **out, int *h);

static int parse_factor(parser *p, dt_expr **out, int *h)
{
    skip_ws(p);
    const char *s = p->s;
    size_t start = p->pos;
    char c = s[p->pos];
    *h = 1;
    if ((c == '(' || c == '-') && p->nest >= DT_EXPR_MAX_DEPTH)
        return fail_too_deep(p, p->pos);
    if (c == '(') {
        p->pos++;
        p->nest++;
        int rc = parse_expr(p, out, h);
        p->nest--;
        if (rc)
            return rc;
        skip_ws(p);
        if (s[p->pos] != ')') {
            dt_expr_free(*out);
            *out = NULL;
            return fail(p, p->pos, "expected ')'");
        }
        p->pos++;
        return 0;
    }
    if (c == '-') { /* unary minus: needed to print folded negative constants */
        p->pos++;
        dt_expr *f = NULL;
        p->nest++;
        int rc = parse_factor(p, &f, h);
        p->nest--;
        if (rc)
            return rc;
        if (f->kind == DT_EXPR_CONST && f->value != INT64_MIN) {
            f->value = -f->value;
            *out = f;
            return 0;
        }
        if (++*h > DT_EXPR_MAX_DEPTH) {
            dt_expr_free(f);
            return fail_too_deep(p, start);
        }
        dt_expr *m1 = dt_expr_const(-1);
        *out = m1 ? binary(DT_EXPR_MUL, m1, f) : NULL;
        if (!*out) {
            dt_expr_free(m1);
            dt_expr_free(f);
            return dt_errf(p->e, DT_ENOMEM, "out of memory");
        }
        return 0;
    }
    if (isdigit((unsigned char)c)) {
        int64_t v = 0;
        while (isdigit((unsigned char)s[p->pos])) {
            int d = s[p->pos] - '0';
            if (v > (INT64_MAX - d) / 10)
                return fail(p, start, "integer too large for int64");
            v = v * 10 + d;
            p->pos++;
        }
        if (isalpha((unsigned char)s[p->pos]) || s[p->pos] == '_')
            return fail(p, p->pos, "unexpected letter after a number");
        *out = dt_expr_const(v);
        return *out ? 0 : dt_errf(p->e, DT_ENOMEM, "out of memory");
    }
    if (isalpha((unsigned char)c) || c == '_') {
        char name[64];
        size_t n = 0;
        while (isalnum((unsigned char)s[p->pos]) || s[p->pos] == '_') {
            if (n + 1 < sizeof name)
                name[n] = s[p->pos];
            n++;
            p->pos++;
        }
        if (n > 32)
            return fail(p, start, "variable name longer than 32 characters");
        name[n] = '\0';
        *out = dt_expr_var(name);
        return *out ? 0 : dt_errf(p->e, DT_ENOMEM, "out of memory");
    }
    if (c == '\0')
        return fail(p, p->pos, "unexpected end");
    return fail_unexpected(p, p->pos);
}

/* One precedence level: operands from sub, joined by the two operators.
 * A run of the associative operator (kind_a: '+' or '*') extends one n-ary
 * node, so "seq*seq*...*seq" is a flat product of height 2 however long it
 * is (the tree dt_expr_canonicalize would make of it anyway); only a change
 * of operator ("a*b/c*d") or a parenthesis nests, and only nesting counts
 * towards DT_EXPR_MAX_DEPTH.  Evaluation is left to right either way. */
static int parse_level(parser *p, dt_expr **out, int *h,
                       int (*sub)(parser *, dt_expr **, int *), char op_a, dt_expr_kind kind_a,
                       char op_b, dt_expr_kind kind_b)
{
    dt_expr *lhs = NULL;
    int rc = sub(p, &lhs, h);
    if (rc)
        return rc;
    int lhs_open = 0; /* lhs is an n-ary kind_a node this loop made: extend it */
    int cap = 0;      /* room in its args */
    for (;;) {
        skip_ws(p);
        char c = p->s[p->pos];
        if (c != op_a && c != op_b)
            break;
        size_t op_pos = p->pos;
        p->pos++;
        dt_expr *rhs = NULL;
        int hr = 0;
        if ((rc = sub(p, &rhs, &hr))) {
            dt_expr_free(lhs);
            return rc;
        }
        if (c == op_a && lhs_open) {
            if (hr + 1 > *h)
                *h = hr + 1;
            if (*h > DT_EXPR_MAX_DEPTH) {
                dt_expr_free(lhs);
                dt_expr_free(rhs);
                return fail_too_deep(p, op_pos);
            }
            if (lhs->nargs == cap) { /* doubling: a long run stays linear */
                dt_expr **args = cap <= INT_MAX / 2
                                     ? realloc(lhs->args, (size_t)cap * 2 * sizeof *args)
                                     : NULL;
                if (!args) {
                    dt_expr_free(lhs);
                    dt_expr_free(rhs);
                    return dt_errf(p->e, DT_ENOMEM, "out of memory");
                }
                lhs->args = args;
                cap *= 2;
            }
            lhs->args[lhs->nargs++] = rhs;
            continue;
        }
        *h = (hr > *h ? hr : *h) + 1;
        if (*h > DT_EXPR_MAX_DEPTH) {
            dt_expr_free(lhs);
            dt_expr_free(rhs);
            return fail_too_deep(p, op_pos);
        }
        dt_expr *x = binary(c == op_a ? kind_a : kind_b, lhs, rhs);
        if (!x) {
            dt_expr_free(lhs);
            dt_expr_free(rhs);
            return dt_errf(p->e, DT_ENOMEM, "out of memory");
        }
        lhs = x;
        lhs_open = c == op_a;
        cap = 2;
    }
    *out = lhs;
    return 0;
}

static int parse_term(parser *p, dt_expr **out, int *h)
{
    return parse_level(p, out, h, parse_factor, '*', DT_EXPR_MUL, '/', DT_EXPR_DIV);
}

static int parse_expr(parser *p, dt_expr **out, int *h)
{
    return parse_level(p, out, h, parse_term, '+', DT_EXPR_ADD, '-', DT_EXPR_SUB);
}

int dt_expr_parse(const char *text, dt_expr **out, size_t *err_offset, dt_err *e)
{
    parser p = {.s = text, .pos = 0, .err_pos = 0, .nest = 0, .e = e};
    *out = NULL;
    dt_expr *x = NULL;
    int height = 0;
    int rc = parse_expr(&p, &x, &height);
    if (rc == 0) {
        skip_ws(&p);
        if (text[p.pos] != '\0') {
            rc = fail_unexpected(&p, p.pos);
            dt_expr_free(x);
        }
    }
    if (rc) {
        if (err_offset)
            *err_offset = p.err_pos;
        return rc;
    }
    DT_ASSERT(x != NULL, "a successful parse yields an expression");
    *out = x;
    return 0;
}

/* ---- checked arithmetic ------------------------------------------------- */

static int apply(dt_expr_kind kind, int64_t a, int64_t b, int64_t *r, dt_err *e)
{
    switch (kind) {
    case DT_EXPR_ADD:
        if (__builtin_add_overflow(a, b, r))
            return dt_errf(e, DT_EOVERFLOW, "%lld + %lld overflows int64", (long long)a,
                           (long long)b);
        return 0;
    case DT_EXPR_SUB:
        if (__builtin_sub_overflow(a, b, r))
            return dt_errf(e, DT_EOVERFLOW, "%lld - %lld overflows int64", (long long)a,
                           (long long)b);
        return 0;
    case DT_EXPR_MUL:
        if (__builtin_mul_overflow(a, b, r))
            return dt_errf(e, DT_EOVERFLOW, "%lld * %lld overflows int64", (long long)a,
                           (long long)b);
        return 0;
    case DT_EXPR_DIV:
        if (b == 0)
            return dt_errf(e, DT_EINVAL, "division by zero (%lld / 0)", (long long)a);
        if (a == INT64_MIN && b == -1)
            return dt_errf(e, DT_EOVERFLOW, "%lld / -1 overflows int64", (long long)a);
        *r = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0)))
            (*r)--; /* floor, not truncation */
        return 0;
    default:
        return dt_errf(e, DT_EINVAL, "not an operator");
    }
}

/* ---- canonical form ----------------------------------------------------- */

static int cmp_operands(const dt_expr *a, const dt_expr *b, int consts_first)
{
    int ca = a->kind == DT_EXPR_CONST, cb = b->kind == DT_EXPR_CONST;
    if (ca != cb)
        return consts_first ? cb - ca : ca - cb;
    char ba[512], bb[512];
    dt_expr_print(a, ba, sizeof ba);
    dt_expr_print(b, bb, sizeof bb);
    return strcmp(ba, bb);
}

static int cmp_mul(const void *x, const void *y)
{
    return cmp_operands(*(dt_expr *const *)x, *(dt_expr *const *)y, 1);
}

static int cmp_add(const void *x, const void *y)
{
    return cmp_operands(*(dt_expr *const *)x, *(dt_expr *const *)y, 0);
}

/* Replaces *slot by its child i, freeing the rest. */
static void hoist(dt_expr **slot, int i)
{
    DT_ASSERT(i >= 0 && i < (*slot)->nargs, "a hoisted operand is one of the node's operands");
    dt_expr *x = *slot, *child = x->args[i];
    x->args[i] = NULL;
    dt_expr_free(x);
    *slot = child;
}

static void to_const(dt_expr *x, int64_t v)
{
    for (int i = 0; i < x->nargs; i++)
        dt_expr_free(x->args[i]);
    free(x->args);
    free(x->name);
    x->args = NULL;
    x->name = NULL;
    x->nargs = 0;
    x->kind = DT_EXPR_CONST;
    x->value = v;
}

/* A product (children canonical): flattened, constants folded, sorted. */
static int canon_product(dt_expr **slot, dt_err *e)
{
    dt_expr *x = *slot;
    DT_ASSERT(x->kind == DT_EXPR_MUL, "canon_product is given a product");
    /* flatten children of the same kind */
    for (int i = 0; i < x->nargs; i++) {
        dt_expr *c = x->args[i];
        if (c->kind != x->kind)
            continue;
        int extra = c->nargs - 1;
        dt_expr **args = realloc(x->args, (size_t)(x->nargs + extra) * sizeof *args);
        if (!args)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        x->args = args;
        memmove(&args[i + c->nargs], &args[i + 1], (size_t)(x->nargs - i - 1) * sizeof *args);
        memcpy(&args[i], c->args, (size_t)c->nargs * sizeof *args);
        x->nargs += extra;
        free(c->args);
        c->args = NULL;
        c->nargs = 0;
        dt_expr_free(c);
        i--; /* look at the first hoisted operand again */
    }
    /* fold constants: compute first, so that an overflow leaves x intact */
    int64_t acc = 1;
    for (int i = 0; i < x->nargs; i++)
        if (x->args[i]->kind == DT_EXPR_CONST) {
            int rc = apply(x->kind, acc, x->args[i]->value, &acc, e);
            if (rc)
                return rc;
        }
    int n = 0;
    for (int i = 0; i < x->nargs; i++) {
        if (x->args[i]->kind == DT_EXPR_CONST)
            dt_expr_free(x->args[i]);
        else
            x->args[n++] = x->args[i];
    }
    x->nargs = n;
    if (acc == 0) {
        to_const(x, 0);
        return 0;
    }
    if (acc != 1) {
        dt_expr *k = dt_expr_const(acc);
        if (!k || push_arg(x, k)) {
            dt_expr_free(k);
            return dt_errf(e, DT_ENOMEM, "out of memory");
        }
    }
    if (x->nargs == 0)
        to_const(x, 1);
    else if (x->nargs == 1)
        hoist(slot, 0);
    else
        qsort(x->args, (size_t)x->nargs, sizeof *x->args, cmp_mul);
    return 0;
}

/* ---- sums: one signed normal form ----------------------------------------
 * A chain of '+' and '-' (and a product by -1 of one) is read as terms, each
 * a coefficient times a base: the constants fold into one whatever their
 * order ("x-1+2", "x+1-1+1" and "x+-1+2" are all x+1), a difference's right
 * operand is distributed ("a-(b-c)" is a+c-b), and like terms combine
 * ("x+x" is 2*x, "x+1-x" is 1).  Written back as
 *   P - N   (P: the terms of positive coefficient sorted, a positive
 *            constant last; N: the others by their size, sorted, a negative
 *            constant's size last)
 * with "P" alone when nothing is subtracted, "c-N" when only the constant is
 * positive, and "-1*N" (or "-4*x", "-c" for one term) when nothing is.  This
 * is the form the ONNX front end writes its polynomials in
 * (onnx/shape_sym_expr.c), so keys it produced keep their text.  Products
 * are not distributed: 2*(a+b) stays a term of its own. */

typedef struct {
    int64_t coef;
    dt_expr *base; /* owned */
} sum_term;

typedef struct {
    sum_term *t;
    int n, cap;
    int64_t c; /* the constant */
} sum_terms;

static int is_sum(const dt_expr *x)
{
    return x->kind == DT_EXPR_ADD || x->kind == DT_EXPR_SUB;
}

/* -1*(a+b) or -1*(a-b): a sum negated, distributed when read */
static int negated_sum(const dt_expr *x)
{
    return x->kind == DT_EXPR_MUL && x->nargs == 2 && x->args[0]->kind == DT_EXPR_CONST &&
           x->args[0]->value == -1 && is_sum(x->args[1]);
}

/* Appends coef × (a copy of) base; base is a product without its constant
 * when drop_first (its args from the second on). */
static int push_term(sum_terms *s, int64_t coef, const dt_expr *x, int drop_first, dt_err *e)
{
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        sum_term *t = realloc(s->t, (size_t)cap * sizeof *t);
        if (!t)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        s->t = t;
        s->cap = cap;
    }
    dt_expr *b = NULL;
    if (!drop_first)
        b = dt_expr_clone(x);
    else if (x->nargs == 2)
        b = dt_expr_clone(x->args[1]);
    else if ((b = dt_expr_clone(x))) { /* k*a*b... -> a*b... */
        dt_expr_free(b->args[0]);
        memmove(&b->args[0], &b->args[1], (size_t)(b->nargs - 1) * sizeof *b->args);
        b->nargs--;
    }
    if (!b)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    s->t[s->n++] = (sum_term){coef, b};
    return 0;
}

/* Reads x (children canonical) times sign (1 or -1) into s; x is not changed. */
static int collect_terms(const dt_expr *x, int64_t sign, sum_terms *s, dt_err *e)
{
    switch (x->kind) {
    case DT_EXPR_CONST:
        return apply(sign > 0 ? DT_EXPR_ADD : DT_EXPR_SUB, s->c, x->value, &s->c, e);
    case DT_EXPR_ADD:
        for (int i = 0; i < x->nargs; i++) {
            int rc = collect_terms(x->args[i], sign, s, e);
            if (rc)
                return rc;
        }
        return 0;
    case DT_EXPR_SUB: {
        int rc = collect_terms(x->args[0], sign, s, e);
        return rc ? rc : collect_terms(x->args[1], -sign, s, e);
    }
    default:
        break;
    }
    if (negated_sum(x))
        return collect_terms(x->args[1], -sign, s, e);
    if (x->kind == DT_EXPR_MUL && x->args[0]->kind == DT_EXPR_CONST &&
        x->args[0]->value != INT64_MIN) /* canonical: a product's constant is first */
        return push_term(s, sign * x->args[0]->value, x, 1, e);
    return push_term(s, sign, x, 0, e);
}

/* coef × base as a term (base taken); NULL when out of memory. */
static dt_expr *term_expr(int64_t coef, dt_expr *base, dt_err *e)
{
    if (coef == 1)
        return base;
    dt_expr *k = dt_expr_const(coef), *x = k ? binary(DT_EXPR_MUL, k, base) : NULL;
    if (!x) {
        dt_expr_free(k);
        dt_expr_free(base);
        return NULL;
    }
    if (canon_product(&x, e)) { /* 2*(a*b) is 2*a*b */
        dt_expr_free(x);
        return NULL;
    }
    return x;
}

/* The sum of ts[0..n) (taken), or NULL when out of memory. */
static dt_expr *sum_of(dt_expr **ts, int n)
{
    if (n == 1)
        return ts[0];
    dt_expr *x = node(DT_EXPR_ADD);
    for (int i = 0; i < n; i++)
        if (!x || push_arg(x, ts[i])) {
            for (int k = i; k < n; k++)
                dt_expr_free(ts[k]);
            dt_expr_free(x);
            return NULL;
        }
    return x;
}

/* -x for the subtracted part: -4 for 4, -4*x for 4*x, -1*x otherwise. */
static dt_expr *negated(dt_expr *x)
{
    if (x->kind == DT_EXPR_CONST) {
        x->value = -x->value;
        return x;
    }
    if (x->kind == DT_EXPR_MUL && x->args[0]->kind == DT_EXPR_CONST) {
        x->args[0]->value = -x->args[0]->value;
        return x;
    }
    dt_expr *m1 = dt_expr_const(-1);
    if (m1 && x->kind == DT_EXPR_MUL && !push_arg(x, m1)) { /* flat: -1*a*b, not -1*(a*b) */
        memmove(&x->args[1], &x->args[0], (size_t)(x->nargs - 1) * sizeof *x->args);
        x->args[0] = m1;
        return x;
    }
    dt_expr *y = m1 && x->kind != DT_EXPR_MUL ? binary(DT_EXPR_MUL, m1, x) : NULL;
    if (!y) {
        dt_expr_free(m1);
        dt_expr_free(x);
    }
    return y;
}

/* Combines like terms (equal bases), then writes s as P - N into *out. */
static int write_sum(sum_terms *s, dt_expr **out, dt_err *e)
{
    for (int i = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++)
            if (dt_expr_equal(s->t[i].base, s->t[j].base)) {
                if (__builtin_add_overflow(s->t[i].coef, s->t[j].coef, &s->t[i].coef))
                    return dt_errf(e, DT_EOVERFLOW, "a coefficient of a sum overflows int64");
                dt_expr_free(s->t[j].base);
                s->t[j--] = s->t[--s->n];
            }
    /* a side's terms, sorted, then its constant (INT64_MIN, whose size has
     * no int64, stays on the positive side) */
    dt_expr **side[2] = {calloc((size_t)s->n + 1, sizeof(dt_expr *)),
                         calloc((size_t)s->n + 1, sizeof(dt_expr *))};
    int n[2] = {0, 0}, rc = side[0] && side[1] ? 0 : DT_ENOMEM;
    for (int i = 0; i < s->n && !rc; i++) {
        int64_t k = s->t[i].coef;
        if (k == 0)
            continue;
        int neg = k < 0 && k != INT64_MIN;
        dt_expr *t = term_expr(neg ? -k : k, s->t[i].base, e);
        s->t[i].base = NULL;
        if (!t)
            rc = DT_ENOMEM;
        else
            side[neg][n[neg]++] = t;
    }
    for (int k = 0; k < 2 && !rc; k++)
        qsort(side[k], (size_t)n[k], sizeof *side[k], cmp_add);
    int64_t c = s->c;
    int cneg = c < 0 && c != INT64_MIN;
    if (!rc && c != 0 && !(side[cneg][n[cneg]++] = dt_expr_const(cneg ? -c : c)))
        rc = DT_ENOMEM;
    dt_expr *p = NULL, *q = NULL;
    if (!rc) {
        p = n[0] ? sum_of(side[0], n[0]) : NULL;
        q = n[1] ? sum_of(side[1], n[1]) : NULL;
        if ((n[0] && !p) || (n[1] && !q))
            rc = DT_ENOMEM;
        n[0] = n[1] = 0; /* taken */
    }
    if (!rc) {
        if (!p && !q)
            *out = dt_expr_const(0);
        else if (!q)
            *out = p;
        else if (!p)
            *out = negated(q);
        else if (!(*out = binary(DT_EXPR_SUB, p, q))) {
            dt_expr_free(p);
            dt_expr_free(q);
        }
        p = q = NULL;
        if (!*out)
            rc = DT_ENOMEM;
    }
    dt_expr_free(p);
    dt_expr_free(q);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; side[k] && i < n[k]; i++)
            dt_expr_free(side[k][i]);
        free(side[k]);
    }
    return rc == DT_ENOMEM ? dt_errf(e, DT_ENOMEM, "out of memory") : rc;
}

static int canon_sum(dt_expr **slot, dt_err *e)
{
    sum_terms s = {NULL, 0, 0, 0};
    dt_expr *x = NULL;
    int rc = collect_terms(*slot, 1, &s, e);
    if (!rc)
        rc = write_sum(&s, &x, e);
    for (int i = 0; i < s.n; i++)
        dt_expr_free(s.t[i].base);
    free(s.t);
    if (rc)
        return rc;
    dt_expr_free(*slot);
    *slot = x;
    return 0;
}

static int canonicalize(dt_expr **slot, dt_err *e);

int dt_expr_canonicalize(dt_expr **slot, dt_err *e)
{
    int rc = canonicalize(slot, e);
    int leaf = rc || (*slot)->kind == DT_EXPR_CONST || (*slot)->kind == DT_EXPR_VAR;
    DT_ASSERT(leaf || (*slot)->nargs >= 2, "a canonical operator has two operands or more");
    return rc;
}

static int canonicalize(dt_expr **slot, dt_err *e)
{
    dt_expr *x = *slot;
    for (int i = 0; i < x->nargs; i++) {
        int rc = dt_expr_canonicalize(&x->args[i], e);
        if (rc)
            return rc;
    }
    switch (x->kind) {
    case DT_EXPR_CONST:
    case DT_EXPR_VAR:
        return 0;
    case DT_EXPR_ADD:
    case DT_EXPR_SUB:
        return canon_sum(slot, e);
    case DT_EXPR_MUL: {
        int rc = canon_product(slot, e);
        if (!rc && negated_sum(*slot)) /* -1*(a-b) is a sum: b-a */
            rc = canon_sum(slot, e);
        return rc;
    }
    case DT_EXPR_DIV: {
        DT_ASSERT(x->nargs == 2, "a division has two operands");
        dt_expr *a = x->args[0], *b = x->args[1];
        if (a->kind == DT_EXPR_CONST && b->kind == DT_EXPR_CONST) {
            int64_t r = 0; /* set by apply; initialised for gcc -O3 */
            int rc = apply(x->kind, a->value, b->value, &r, e);
            if (rc)
                return rc;
            to_const(x, r);
        } else if (b->kind == DT_EXPR_CONST && b->value == 0) {
            return dt_errf(e, DT_EINVAL, "division by zero");
        } else if (b->kind == DT_EXPR_CONST && b->value == 1) {
            hoist(slot, 0);
        }
        return 0;
    }
    }
    return 0;
}

/* ---- variables ---------------------------------------------------------- */

void dt_expr_substitute(dt_expr *x, const char *name, int64_t v)
{
    if (x->kind == DT_EXPR_VAR && strcmp(x->name, name) == 0) {
        to_const(x, v);
        return;
    }
    for (int i = 0; i < x->nargs; i++)
        dt_expr_substitute(x->args[i], name, v);
}

int dt_expr_rename(dt_expr *x, const char *from, const char *to)
{
    if (x->kind == DT_EXPR_VAR && strcmp(x->name, from) == 0) {
        char *n = strdup(to);
        if (!n)
            return DT_ENOMEM;
        free(x->name);
        x->name = n;
        x->var_index = -1;
    }
    for (int i = 0; i < x->nargs; i++)
        if (dt_expr_rename(x->args[i], from, to))
            return DT_ENOMEM;
    return 0;
}

void dt_expr_visit_vars(const dt_expr *x, void (*fn)(const char *, void *), void *ctx)
{
    if (x->kind == DT_EXPR_VAR)
        fn(x->name, ctx);
    for (int i = 0; i < x->nargs; i++)
        dt_expr_visit_vars(x->args[i], fn, ctx);
}

int dt_expr_uses(const dt_expr *x, const char *name)
{
    if (x->kind == DT_EXPR_VAR)
        return strcmp(x->name, name) == 0;
    for (int i = 0; i < x->nargs; i++)
        if (dt_expr_uses(x->args[i], name))
            return 1;
    return 0;
}

int dt_expr_equal(const dt_expr *a, const dt_expr *b)
{
    if (a->kind != b->kind || a->nargs != b->nargs)
        return 0;
    if (a->kind == DT_EXPR_CONST)
        return a->value == b->value;
    if (a->kind == DT_EXPR_VAR)
        return strcmp(a->name, b->name) == 0;
    for (int i = 0; i < a->nargs; i++)
        if (!dt_expr_equal(a->args[i], b->args[i]))
            return 0;
    return 1;
}

int dt_expr_bind(dt_expr *x, const char *const *names, int n, dt_err *e)
{
    if (x->kind == DT_EXPR_VAR) {
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], x->name) == 0) {
                x->var_index = i;
                return 0;
            }
        return dt_errf(e, DT_EINVAL, "unknown variable '%s'", x->name);
    }
    for (int i = 0; i < x->nargs; i++) {
        int rc = dt_expr_bind(x->args[i], names, n, e);
        if (rc)
            return rc;
    }
    return 0;
}

int dt_expr_eval(const dt_expr *x, const int64_t *vals, int64_t *out, dt_err *e)
{
    switch (x->kind) {
    case DT_EXPR_CONST:
        *out = x->value;
        return 0;
    case DT_EXPR_VAR:
        if (x->var_index < 0)
            return dt_errf(e, DT_EINVAL, "variable '%s' is not bound", x->name);
        *out = vals[x->var_index];
        return 0;
    default: {
        int64_t acc = 0;
        DT_ASSERT(x->nargs >= 1, "an operator has operands");
        for (int i = 0; i < x->nargs; i++) {
            int64_t v = 0;
            int rc = dt_expr_eval(x->args[i], vals, &v, e);
            if (rc)
                return rc;
            if (i == 0)
                acc = v;
            else if ((rc = apply(x->kind, acc, v, &acc, e)))
                return rc;
        }
        *out = acc;
        return 0;
    }
    }
}

/* ---- printing ----------------------------------------------------------- */

static int prec(const dt_expr *x)
{
    switch (x->kind) {
    case DT_EXPR_ADD:
    case DT_EXPR_SUB:
        return 1;
    case DT_EXPR_MUL:
    case DT_EXPR_DIV:
        return 2;
    default:
        return 3;
    }
}

typedef struct {
    char *buf;
    size_t n, len;
} out_buf;

static void emit(out_buf *o, const char *s)
{
    size_t l = strlen(s);
    if (o->len < o->n) {
        size_t room = o->n - o->len - 1;
        memcpy(o->buf + o->len, s, l < room ? l : room);
        o->buf[o->len + (l < room ? l : room)] = '\0';
    }
    o->len += l;
}

static void print_rec(const dt_expr *x, out_buf *o)
{
    if (x->kind == DT_EXPR_CONST) {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)x->value);
        emit(o, num);
        return;
    }
    if (x->kind == DT_EXPR_VAR) {
        emit(o, x->name);
        return;
    }
    static const char ops[] = {[DT_EXPR_ADD] = '+', [DT_EXPR_MUL] = '*', [DT_EXPR_SUB] = '-',
                               [DT_EXPR_DIV] = '/'};
    DT_ASSERT(x->kind >= DT_EXPR_ADD && x->kind <= DT_EXPR_DIV && ops[x->kind],
              "a node that is neither constant nor variable is one of the four operators");
    int p = prec(x);
    int left_assoc_only = x->kind == DT_EXPR_SUB || x->kind == DT_EXPR_DIV;
    for (int i = 0; i < x->nargs; i++) {
        if (i > 0) {
            char op[2] = {ops[x->kind], 0};
            emit(o, op);
        }
        int cp = prec(x->args[i]);
        /* Parentheses keep the printed text parsing back to the same tree: a
         * right operand at equal precedence needs them unless it is the same
         * associative operator (a-(b-c), a*(b/c), a+(b-c)). */
        int paren = cp < p || (i > 0 && cp == p && (left_assoc_only || x->args[i]->kind != x->kind));
        if (paren)
            emit(o, "(");
        print_rec(x->args[i], o);
        if (paren)
            emit(o, ")");
    }
}

size_t dt_expr_print(const dt_expr *x, char *buf, size_t n)
{
    out_buf o = {buf, n, 0};
    if (n)
        buf[0] = '\0';
    print_rec(x, &o);
    return o.len;
}
