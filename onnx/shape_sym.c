/* Symbolic integers: polynomials over variables and floor quotients in a
 * normal form, interned; their bounds and signs (onnx/shape_sym.h). */
#include "onnx/shape_sym_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------- */

int dt_ox_sy_record(sym_ctx *c, const dt_err *e)
{
    if (c->err.code == 0)
        c->err = *e;
    return e->code;
}

int dt_ox_sym_failed(const sym_ctx *c)
{
    return c->err.code != 0;
}

int dt_ox_sym_take_err(sym_ctx *c, dt_err *e)
{
    int code = c->err.code;
    if (code && e)
        *e = c->err;
    dt_err_clear(&c->err);
    return code;
}

int dt_ox_sy_too_large(dt_err *e)
{
    return dt_errf(e, DT_EINVAL,
                   "symbolic expression too large (more than %d terms, a term of more than %d "
                   "factors or more than %d operands written out)",
                   SYM_MAX_TERMS, SYM_MAX_DEG, SYM_MAX_NODES);
}

int dt_ox_sy_too_deep(dt_err *e)
{
    return dt_errf(e, DT_EINVAL, "expression nested too deeply (more than %d levels)",
                   DT_EXPR_MAX_DEPTH);
}

/* ---- checked int64 -------------------------------------------------------- */

static int add64(int64_t a, int64_t b, int64_t *r, dt_err *e)
{
    if (__builtin_add_overflow(a, b, r))
        return dt_errf(e, DT_EOVERFLOW, "%lld + %lld overflows int64", (long long)a,
                       (long long)b);
    return 0;
}

static int mul64(int64_t a, int64_t b, int64_t *r, dt_err *e)
{
    if (__builtin_mul_overflow(a, b, r))
        return dt_errf(e, DT_EOVERFLOW, "%lld * %lld overflows int64", (long long)a,
                       (long long)b);
    return 0;
}

int dt_ox_sy_fdiv64(int64_t a, int64_t b, int64_t *r, dt_err *e)
{
    if (b == 0)
        return dt_errf(e, DT_EINVAL, "division by zero (%lld / 0)", (long long)a);
    if (a == INT64_MIN && b == -1)
        return dt_errf(e, DT_EOVERFLOW, "%lld / -1 overflows int64", (long long)a);
    *r = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        (*r)--;
    return 0;
}

/* Interval product; 0 on overflow. */
static int imul(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo, int64_t *hi)
{
    int64_t p[4];
    if (__builtin_mul_overflow(alo, blo, &p[0]) || __builtin_mul_overflow(alo, bhi, &p[1]) ||
        __builtin_mul_overflow(ahi, blo, &p[2]) || __builtin_mul_overflow(ahi, bhi, &p[3]))
        return 0;
    *lo = *hi = p[0];
    for (int i = 1; i < 4; i++) {
        *lo = p[i] < *lo ? p[i] : *lo;
        *hi = p[i] > *hi ? p[i] : *hi;
    }
    return 1;
}

/* ---- terms and polynomials ------------------------------------------------ */

static int term_cmp(const term *a, const term *b)
{
    if (a->deg != b->deg)
        return a->deg > b->deg ? -1 : 1;
    for (int i = 0; i < a->deg; i++)
        if (a->f[i] != b->f[i])
            return a->f[i] < b->f[i] ? -1 : 1;
    return 0;
}

static int term_mul(const term *a, const term *b, term *out, dt_err *e)
{
    if (a->deg + b->deg > SYM_MAX_DEG)
        return dt_ox_sy_too_large(e);
    int rc = mul64(a->coef, b->coef, &out->coef, e);
    if (rc)
        return rc;
    int i = 0, j = 0, k = 0;
    while (i < a->deg || j < b->deg)
        out->f[k++] = (j >= b->deg || (i < a->deg && a->f[i] <= b->f[j])) ? a->f[i++] : b->f[j++];
    out->deg = k;
    return 0;
}

/* 1 when b's factors are a sub-multiset of a's; the rest into *rest. */
int dt_ox_sy_term_divides(const term *a, const term *b, term *rest)
{
    int i = 0, j = 0, k = 0;
    while (i < a->deg) {
        if (j < b->deg && a->f[i] == b->f[j]) {
            i++;
            j++;
        } else if (j < b->deg && b->f[j] < a->f[i]) {
            return 0;
        } else {
            rest->f[k++] = a->f[i++];
        }
    }
    if (j < b->deg)
        return 0;
    rest->deg = k;
    return 1;
}

/* Adds coef*t's monomial into p, keeping the order and merging. */
int dt_ox_sy_poly_add_term(poly *p, const term *t, int64_t coef, dt_err *e)
{
    if (coef == 0)
        return 0;
    int lo = 0, hi = p->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = term_cmp(&p->t[mid], t);
        if (c == 0) {
            int rc = add64(p->t[mid].coef, coef, &p->t[mid].coef, e);
            if (rc)
                return rc;
            if (p->t[mid].coef == 0) {
                memmove(&p->t[mid], &p->t[mid + 1], (size_t)(p->n - mid - 1) * sizeof p->t[0]);
                p->n--;
            }
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (p->n == SYM_MAX_TERMS)
        return dt_ox_sy_too_large(e);
    memmove(&p->t[lo + 1], &p->t[lo], (size_t)(p->n - lo) * sizeof p->t[0]);
    p->t[lo] = *t;
    p->t[lo].coef = coef;
    p->n++;
    return 0;
}

void dt_ox_sy_poly_of(const sym *s, poly *p)
{
    p->n = s->n;
    memcpy(p->t, s->t, (size_t)s->n * sizeof s->t[0]);
}

static void poly_const(poly *p, int64_t v)
{
    p->n = 0;
    if (v) {
        p->n = 1;
        p->t[0].coef = v;
        p->t[0].deg = 0;
    }
}

/* out += k * a */
int dt_ox_sy_poly_axpy(poly *out, int64_t k, const poly *a, dt_err *e)
{
    for (int i = 0; i < a->n; i++) {
        int64_t cf;
        int rc = mul64(k, a->t[i].coef, &cf, e);
        if (rc || (rc = dt_ox_sy_poly_add_term(out, &a->t[i], cf, e)))
            return rc;
    }
    return 0;
}

/* out += m * a for a term m */
int dt_ox_sy_poly_add_term_times(poly *out, const term *m, const poly *a, int64_t sign, dt_err *e)
{
    for (int i = 0; i < a->n; i++) {
        term t = {.coef = 0};
        int64_t cf;
        int rc = term_mul(m, &a->t[i], &t, e);
        if (rc || (rc = mul64(t.coef, sign, &cf, e)) ||
            (rc = dt_ox_sy_poly_add_term(out, &t, cf, e)))
            return rc;
    }
    return 0;
}

static int poly_mul(const poly *a, const poly *b, poly *out, dt_err *e)
{
    out->n = 0;
    for (int i = 0; i < a->n; i++) {
        int rc = dt_ox_sy_poly_add_term_times(out, &a->t[i], b, 1, e);
        if (rc)
            return rc;
    }
    return 0;
}

int dt_ox_sy_poly_is_const(const poly *p, int64_t *v)
{
    if (p->n == 0) {
        *v = 0;
        return 1;
    }
    if (p->n == 1 && p->t[0].deg == 0) {
        *v = p->t[0].coef;
        return 1;
    }
    return 0;
}

/* ---- interning ------------------------------------------------------------ */

uint64_t dt_ox_sy_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t poly_hash(const poly *p)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)p->n;
    for (int i = 0; i < p->n; i++) {
        h = dt_ox_sy_mix(h, (uint64_t)p->t[i].coef);
        h = dt_ox_sy_mix(h, (uint64_t)p->t[i].deg);
        for (int j = 0; j < p->t[i].deg; j++)
            h = dt_ox_sy_mix(h, (uint64_t)p->t[i].f[j]);
    }
    return h;
}

static int poly_eq_sym(const poly *p, const sym *s)
{
    if (p->n != s->n)
        return 0;
    for (int i = 0; i < p->n; i++)
        if (p->t[i].coef != s->t[i].coef || term_cmp(&p->t[i], &s->t[i]) != 0)
            return 0;
    return 1;
}

/* Height of the printed expression of a term shown with coefficient cf. */
static int term_height(const sym_ctx *c, const term *t, int64_t cf)
{
    if (t->deg == 0)
        return 1;
    int h = 1;
    for (int i = 0; i < t->deg; i++)
        h = c->atoms[t->f[i]].height > h ? c->atoms[t->f[i]].height : h;
    return h + t->deg - 1 + (cf != 1);
}

/* Mirrors dt_ox_sym_to_expr's shape: the positive terms summed, minus the sum of
 * the negative ones; an n-ary chain of k operands parses k-1 levels tall. */
static int poly_height(const sym_ctx *c, const poly *p)
{
    int hp = 0, hn = 0, np = 0, nn = 0;
    for (int i = 0; i < p->n; i++) {
        int64_t cf = p->t[i].coef;
        int h = term_height(c, &p->t[i], cf); /* a negative one counts as shown */
        if (cf > 0) {
            hp = h > hp ? h : hp;
            np++;
        } else {
            hn = h > hn ? h : hn;
            nn++;
        }
    }
    hp += np > 1 ? np - 1 : 0;
    hn += nn > 1 ? nn - 1 : 0;
    if (np == 0 && nn == 0)
        return 1;
    if (nn == 0)
        return hp;
    return (hp > hn ? hp : hn) + 1;
}

/* Nodes of dt_ox_sym_to_expr's tree: operands, an operator per product and sum. */
static int poly_size(const sym_ctx *c, const poly *p)
{
    int64_t n = 2; /* the sum and the difference */
    for (int i = 0; i < p->n; i++) {
        n += 2; /* the coefficient and the product */
        for (int j = 0; j < p->t[i].deg; j++)
            n += c->atoms[p->t[i].f[j]].size;
    }
    return n > SYM_MAX_NODES ? SYM_MAX_NODES + 1 : (int)n;
}

static void poly_bounds(const sym_ctx *c, const poly *p, int *bounded, int64_t *lo, int64_t *hi)
{
    *bounded = 0;
    int64_t slo = 0, shi = 0;
    for (int i = 0; i < p->n; i++) {
        int64_t tlo = p->t[i].coef, thi = p->t[i].coef;
        for (int j = 0; j < p->t[i].deg; j++) {
            const atom *a = &c->atoms[p->t[i].f[j]];
            if (!a->bounded || !imul(tlo, thi, a->lo, a->hi, &tlo, &thi))
                return;
        }
        if (__builtin_add_overflow(slo, tlo, &slo) || __builtin_add_overflow(shi, thi, &shi))
            return;
    }
    *bounded = 1;
    *lo = slo;
    *hi = shi;
}

static int tab_grow(sym_ctx *c)
{
    size_t cap = c->tabcap ? c->tabcap * 2 : 256;
    const sym **t = calloc(cap, sizeof *t);
    if (!t)
        return DT_ENOMEM;
    for (size_t i = 0; i < c->tabcap; i++) {
        const sym *s = c->tab[i];
        if (!s)
            continue;
        size_t j = s->hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = s;
    }
    free(c->tab);
    c->tab = t;
    c->tabcap = cap;
    return 0;
}

int dt_ox_sy_intern(sym_ctx *c, const poly *p, const sym **out, dt_err *e)
{
    if ((c->tabn + 1) * 2 > c->tabcap && tab_grow(c))
        return dt_errf(e, DT_ENOMEM, "out of memory");
    uint64_t h = poly_hash(p);
    size_t j = h & (c->tabcap - 1);
    for (; c->tab[j]; j = (j + 1) & (c->tabcap - 1))
        if (c->tab[j]->hash == h && poly_eq_sym(p, c->tab[j])) {
            *out = c->tab[j];
            return 0;
        }
    int height = poly_height(c, p), size = poly_size(c, p);
    if (height > DT_EXPR_MAX_DEPTH)
        return dt_ox_sy_too_deep(e);
    if (size > SYM_MAX_NODES)
        return dt_ox_sy_too_large(e);
    sym *s = malloc(sizeof *s + (size_t)p->n * sizeof p->t[0]);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    s->hash = h;
    s->height = height;
    s->size = size;
    s->n = p->n;
    memcpy(s->t, p->t, (size_t)p->n * sizeof p->t[0]);
    poly_bounds(c, p, &s->bounded, &s->lo, &s->hi);
    s->vmask = 0;
    for (int i = 0; i < p->n; i++)
        for (int k = 0; k < p->t[i].deg; k++)
            s->vmask |= c->atoms[p->t[i].f[k]].vmask;
    c->tab[j] = s;
    c->tabn++;
    *out = s;
    return 0;
}

int dt_ox_sy_intern_const(sym_ctx *c, int64_t v, const sym **out, dt_err *e)
{
    poly p;
    poly_const(&p, v);
    return dt_ox_sy_intern(c, &p, out, e);
}

int dt_ox_sy_intern_atom(sym_ctx *c, int id, const sym **out, dt_err *e)
{
    poly p = {.n = 1};
    p.t[0].coef = 1;
    p.t[0].deg = 1;
    p.t[0].f[0] = id;
    return dt_ox_sy_intern(c, &p, out, e);
}

int dt_ox_sy_new_atom(sym_ctx *c, int *id, dt_err *e)
{
    if (c->natoms == c->capatoms) {
        int cap = c->capatoms ? c->capatoms * 2 : 32;
        atom *a = realloc(c->atoms, (size_t)cap * sizeof *a);
        if (!a)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        c->atoms = a;
        c->capatoms = cap;
    }
    *id = c->natoms++;
    memset(&c->atoms[*id], 0, sizeof c->atoms[0]);
    return 0;
}

/* ---- context -------------------------------------------------------------- */

sym_ctx *dt_ox_sym_ctx_new(void)
{
    return calloc(1, sizeof(sym_ctx));
}

void dt_ox_sym_ctx_free(sym_ctx *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->tabcap; i++)
        free((void *)c->tab[i]);
    for (int i = 0; i < c->natoms; i++)
        free(c->atoms[i].name);
    free(c->tab);
    free(c->qtab);
    free(c->atoms);
    free(c);
}

const sym *dt_ox_sym_const(sym_ctx *c, int64_t v)
{
    const sym *s = NULL;
    dt_err e;
    if (dt_ox_sy_intern_const(c, v, &s, &e))
        dt_ox_sy_record(c, &e);
    return s;
}

const sym *dt_ox_sym_var(sym_ctx *c, const char *name, const dt_domain *dom)
{
    dt_err e;
    if (!dom || dom->n < 1) {
        dt_errf(&e, DT_EINVAL, "variable '%s' has an empty domain", name);
        dt_ox_sy_record(c, &e);
        return NULL;
    }
    if (dom->n == 1) /* a single value is that constant */
        return dt_ox_sym_const(c, dom->values[0]);
    for (int v = 0; v < c->nvars; v++) {
        const atom *a = &c->atoms[c->var_atom[v]];
        if (strcmp(a->name, name) == 0) {
            const sym *s = NULL;
            if (dt_ox_sy_intern_atom(c, c->var_atom[v], &s, &e))
                dt_ox_sy_record(c, &e);
            return s;
        }
    }
    if (c->nvars == SYM_MAX_VARS) {
        dt_errf(&e, DT_EINVAL, "more than %d variables", SYM_MAX_VARS);
        dt_ox_sy_record(c, &e);
        return NULL;
    }
    int id = 0;
    char *copy = strdup(name);
    if (!copy || dt_ox_sy_new_atom(c, &id, &e)) {
        free(copy);
        dt_errf(&e, DT_ENOMEM, "out of memory");
        dt_ox_sy_record(c, &e);
        return NULL;
    }
    atom *a = &c->atoms[id];
    a->name = copy;
    a->dom = dom;
    a->var = c->nvars;
    a->height = 1;
    a->size = 1;
    a->bounded = 1;
    a->lo = dom->values[0];
    a->hi = dom->values[dom->n - 1];
    a->vmask = 1ull << c->nvars;
    c->var_atom[c->nvars++] = id;
    const sym *s = NULL;
    if (dt_ox_sy_intern_atom(c, id, &s, &e))
        dt_ox_sy_record(c, &e);
    return s;
}

/* ---- evaluation and signs ------------------------------------------------- */

static int eval_sym(const sym_ctx *c, const sym *p, const int64_t *vv, int64_t *out);

static int eval_atom(const sym_ctx *c, int id, const int64_t *vv, int64_t *out)
{
    const atom *a = &c->atoms[id];
    if (a->name) {
        *out = vv[a->var];
        return 0;
    }
    int64_t n, d;
    if (eval_sym(c, a->num, vv, &n) || eval_sym(c, a->den, vv, &d))
        return -1;
    return dt_ox_sy_fdiv64(n, d, out, NULL) ? -1 : 0;
}

static int eval_sym(const sym_ctx *c, const sym *p, const int64_t *vv, int64_t *out)
{
    int64_t acc = 0;
    for (int i = 0; i < p->n; i++) {
        int64_t t = p->t[i].coef;
        for (int j = 0; j < p->t[i].deg; j++) {
            int64_t v = 0;
            if (eval_atom(c, p->t[i].f[j], vv, &v) || __builtin_mul_overflow(t, v, &t))
                return -1;
        }
        if (__builtin_add_overflow(acc, t, &acc))
            return -1;
    }
    *out = acc;
    return 0;
}

static int mask_of(int64_t lo, int64_t hi)
{
    return (lo < 0 ? SYM_LT : 0) | (lo <= 0 && hi >= 0 ? SYM_EQ : 0) | (hi > 0 ? SYM_GT : 0);
}

static int single_bit(int m)
{
    return m == SYM_LT || m == SYM_EQ || m == SYM_GT;
}

/* The exact signs of p over every shape of its variables, or -1 when there
 * are too many shapes or an evaluation fails. */
static int enumerate_signs(const sym_ctx *c, const sym *p)
{
    int vars[SYM_MAX_VARS], nv = 0;
    int64_t count = 1;
    for (int v = 0; v < c->nvars; v++)
        if (p->vmask & (1ull << v)) {
            vars[nv++] = v;
            count *= c->atoms[c->var_atom[v]].dom->n;
            if (count > SYM_ENUM_MAX)
                return -1;
        }
    int64_t vv[SYM_MAX_VARS] = {0};
    int idx[SYM_MAX_VARS] = {0};
    int mask = 0;
    for (int64_t k = 0; k < count; k++) {
        for (int i = 0; i < nv; i++)
            vv[vars[i]] = c->atoms[c->var_atom[vars[i]]].dom->values[idx[i]];
        int64_t r;
        if (eval_sym(c, p, vv, &r))
            return -1;
        mask |= mask_of(r, r);
        for (int i = nv - 1; i >= 0; i--) {
            if (++idx[i] < c->atoms[c->var_atom[vars[i]]].dom->n)
                break;
            idx[i] = 0;
        }
    }
    return mask;
}

int dt_ox_sym_is_const(const sym *p, int64_t *v)
{
    if (!p || p->n > 1 || (p->n == 1 && p->t[0].deg))
        return 0;
    *v = p->n ? p->t[0].coef : 0;
    return 1;
}

int dt_ox_sym_bounds(const sym *p, int64_t *lo, int64_t *hi)
{
    if (!p || !p->bounded)
        return 0;
    *lo = p->lo;
    *hi = p->hi;
    return 1;
}

int dt_ox_sym_signs(sym_ctx *c, const sym *p)
{
    if (!p)
        return SYM_ANY;
    int mask = p->bounded ? mask_of(p->lo, p->hi) : SYM_ANY;
    if (single_bit(mask))
        return mask;
    int m = enumerate_signs(c, p);
    return m > 0 ? m : mask;
}

static int sub_(sym_ctx *c, const sym *a, const sym *b, const sym **out, dt_err *e)
{
    poly p;
    dt_ox_sy_poly_of(a, &p);
    for (int i = 0; i < b->n; i++) {
        if (b->t[i].coef == INT64_MIN)
            return dt_errf(e, DT_EOVERFLOW, "negating %lld overflows int64", (long long)INT64_MIN);
        int rc = dt_ox_sy_poly_add_term(&p, &b->t[i], -b->t[i].coef, e);
        if (rc)
            return rc;
    }
    return dt_ox_sy_intern(c, &p, out, e);
}

int dt_ox_sym_cmp(sym_ctx *c, const sym *a, const sym *b)
{
    if (!a || !b)
        return SYM_ANY;
    if (a == b)
        return SYM_EQ;
    const sym *d = NULL;
    dt_err e;
    if (sub_(c, a, b, &d, &e) == 0)
        return dt_ox_sym_signs(c, d);
    /* a - b does not fit: compare the bounds */
    if (!a->bounded || !b->bounded)
        return SYM_ANY;
    return (a->lo < b->hi ? SYM_LT : 0) | (a->lo <= b->hi && b->lo <= a->hi ? SYM_EQ : 0) |
           (a->hi > b->lo ? SYM_GT : 0);
}

/* ---- arithmetic ----------------------------------------------------------- */

const sym *dt_ox_sy_done(sym_ctx *c, int rc, const sym *s, const dt_err *e)
{
    if (rc) {
        dt_ox_sy_record(c, e);
        return NULL;
    }
    return s;
}

const sym *dt_ox_sym_add(sym_ctx *c, const sym *a, const sym *b)
{
    if (!a || !b)
        return NULL;
    poly p, q;
    dt_err e;
    const sym *s = NULL;
    dt_ox_sy_poly_of(a, &p);
    dt_ox_sy_poly_of(b, &q);
    int rc = dt_ox_sy_poly_axpy(&p, 1, &q, &e);
    if (!rc)
        rc = dt_ox_sy_intern(c, &p, &s, &e);
    return dt_ox_sy_done(c, rc, s, &e);
}

const sym *dt_ox_sym_sub(sym_ctx *c, const sym *a, const sym *b)
{
    if (!a || !b)
        return NULL;
    const sym *s = NULL;
    dt_err e;
    int rc = sub_(c, a, b, &s, &e);
    return dt_ox_sy_done(c, rc, s, &e);
}

int dt_ox_sy_mul(sym_ctx *c, const sym *a, const sym *b, const sym **out, dt_err *e)
{
    poly p, q, r;
    dt_ox_sy_poly_of(a, &p);
    dt_ox_sy_poly_of(b, &q);
    int rc = poly_mul(&p, &q, &r, e);
    return rc ? rc : dt_ox_sy_intern(c, &r, out, e);
}

const sym *dt_ox_sym_mul(sym_ctx *c, const sym *a, const sym *b)
{
    if (!a || !b)
        return NULL;
    const sym *s = NULL;
    dt_err e;
    int rc = dt_ox_sy_mul(c, a, b, &s, &e);
    return dt_ox_sy_done(c, rc, s, &e);
}

/* ---- expressions ---------------------------------------------------------- */

