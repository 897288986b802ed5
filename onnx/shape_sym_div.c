/* Symbolic integers: exact and floor division (onnx/shape_sym.h).  A
 * quotient that does not simplify becomes an atom floor(num/den) of the
 * polynomials above it. */
#include <string.h>

#include "onnx/shape_sym_internal.h"

static int64_t gcd64(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? -(uint64_t)a : (uint64_t)a, y = b < 0 ? -(uint64_t)b : (uint64_t)b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return x > (uint64_t)INT64_MAX ? 1 : (int64_t)x;
}

/* Leading-term division; 1 with *q when b divides a exactly as
 * polynomials, 0 when not (or an overflow on the way). */
static int poly_divexact(const poly *a, const poly *b, poly *q)
{
    poly r = *a;
    q->n = 0;
    if (b->n == 0)
        return 0;
    const term *lb = &b->t[0];
    dt_err e;
    for (int iter = 0; r.n > 0; iter++) {
        const term *lr = &r.t[0];
        term m;
        if (iter > 4 * SYM_MAX_TERMS || !dt_ox_sy_term_divides(lr, lb, &m) ||
            (lb->coef == -1 && lr->coef == INT64_MIN) || lr->coef % lb->coef != 0)
            return 0;
        m.coef = lr->coef / lb->coef;
        if (dt_ox_sy_poly_add_term(q, &m, m.coef, &e) ||
            dt_ox_sy_poly_add_term_times(&r, &m, b, -1, &e))
            return 0;
    }
    return 1;
}

int dt_ox_sym_divexact(sym_ctx *c, const sym *a, const sym *b, const sym **q)
{
    if (!a || !b)
        return c->err.code ? c->err.code : DT_EINVAL;
    poly pa, pb, pq;
    dt_ox_sy_poly_of(a, &pa);
    dt_ox_sy_poly_of(b, &pb);
    if (!poly_divexact(&pa, &pb, &pq))
        return 0;
    dt_err e;
    int rc = dt_ox_sy_intern(c, &pq, q, &e);
    return rc ? dt_ox_sy_record(c, &e) : 1;
}

static int floordiv_(sym_ctx *c, const sym *a, const sym *b, const sym **out, dt_err *e);

/* The quotient atom floor(num / den) as a polynomial (a constant when its
 * bounds leave one value). */
static int quotient_atom(sym_ctx *c, const sym *num, const sym *den, const sym **out, dt_err *e)
{
    if (num->height + 1 > DT_EXPR_MAX_DEPTH || den->height + 1 > DT_EXPR_MAX_DEPTH)
        return dt_ox_sy_too_deep(e);
    if (num->size + den->size + 1 > SYM_MAX_NODES)
        return dt_ox_sy_too_large(e);
    if ((c->qn + 1) * 2 > c->qcap) {
        size_t cap = c->qcap ? c->qcap * 2 : 64;
        int *t = malloc(cap * sizeof *t);
        if (!t)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        for (size_t i = 0; i < cap; i++)
            t[i] = -1;
        for (size_t i = 0; i < c->qcap; i++) {
            if (c->qtab[i] < 0)
                continue;
            const atom *a = &c->atoms[c->qtab[i]];
            size_t j = dt_ox_sy_mix(a->num->hash, a->den->hash) & (cap - 1);
            while (t[j] >= 0)
                j = (j + 1) & (cap - 1);
            t[j] = c->qtab[i];
        }
        free(c->qtab);
        c->qtab = t;
        c->qcap = cap;
    }
    size_t j = dt_ox_sy_mix(num->hash, den->hash) & (c->qcap - 1);
    for (; c->qtab[j] >= 0; j = (j + 1) & (c->qcap - 1)) {
        const atom *a = &c->atoms[c->qtab[j]];
        if (a->num == num && a->den == den)
            return dt_ox_sy_intern_atom(c, c->qtab[j], out, e);
    }
    int bounded = 0;
    int64_t lo = 0, hi = 0;
    if (num->bounded && den->bounded && (den->lo > 0 || den->hi < 0)) {
        int64_t q[4];
        int ok = !dt_ox_sy_fdiv64(num->lo, den->lo, &q[0], NULL) &&
                 !dt_ox_sy_fdiv64(num->lo, den->hi, &q[1], NULL) &&
                 !dt_ox_sy_fdiv64(num->hi, den->lo, &q[2], NULL) &&
                 !dt_ox_sy_fdiv64(num->hi, den->hi, &q[3], NULL);
        if (ok) {
            bounded = 1;
            lo = hi = q[0];
            for (int i = 1; i < 4; i++) {
                lo = q[i] < lo ? q[i] : lo;
                hi = q[i] > hi ? q[i] : hi;
            }
        }
    }
    if (bounded && lo == hi)
        return dt_ox_sy_intern_const(c, lo, out, e);
    int id;
    int rc = dt_ox_sy_new_atom(c, &id, e);
    if (rc)
        return rc;
    atom *a = &c->atoms[id];
    a->num = num;
    a->den = den;
    a->height = (num->height > den->height ? num->height : den->height) + 1;
    a->size = num->size + den->size + 1;
    a->bounded = bounded;
    a->lo = lo;
    a->hi = hi;
    a->vmask = num->vmask | den->vmask;
    c->qtab[j] = id;
    c->qn++;
    return dt_ox_sy_intern_atom(c, id, out, e);
}

/* q + floor(r / b) where r, b are polynomials, with r simplified first:
 * a common factor of r's coefficients and a constant b cancels, and
 * floor((floor(n/d) + k) / b) is floor((n + k*d) / (d*b)) when d, b > 0. */
static int quotient_plus(sym_ctx *c, const poly *q, const poly *r, const sym *b, int b_pos,
                         const sym **out, dt_err *e)
{
    int64_t rv, bv;
    const sym *part = NULL, *qs = NULL;
    int rc;
    poly rr = *r;
    int bconst = dt_ox_sym_is_const(b, &bv);
    if (dt_ox_sy_poly_is_const(&rr, &rv) && bconst) {
        int64_t v;
        if ((rc = dt_ox_sy_fdiv64(rv, bv, &v, e)))
            return rc;
        rc = dt_ox_sy_intern_const(c, v, &part, e);
    } else {
        if (bconst && bv > 1) {
            int64_t g = bv;
            for (int i = 0; i < rr.n; i++)
                g = gcd64(g, rr.t[i].coef);
            if (g > 1) {
                for (int i = 0; i < rr.n; i++)
                    rr.t[i].coef /= g;
                bv /= g;
                if ((rc = dt_ox_sy_intern_const(c, bv, &b, e)))
                    return rc;
            }
        }
        /* rr = 1*D (+ k) with D = floor(n/d), d > 0 */
        const atom *D = NULL;
        int64_t k = 0;
        int others = 0;
        for (int i = 0; i < rr.n; i++) {
            if (rr.t[i].deg == 0)
                k = rr.t[i].coef;
            else if (rr.t[i].deg == 1 && rr.t[i].coef == 1 && !c->atoms[rr.t[i].f[0]].name)
                D = D ? (others++, D) : &c->atoms[rr.t[i].f[0]];
            else
                others++;
        }
        if (others)
            D = NULL;
        if (D && b_pos && dt_ox_sym_signs(c, D->den) == SYM_GT) {
            const sym *ks, *kd, *n2, *d2;
            if ((rc = dt_ox_sy_intern_const(c, k, &ks, e)) ||
                (rc = dt_ox_sy_mul(c, ks, D->den, &kd, e)))
                return rc;
            poly pn, pk;
            dt_ox_sy_poly_of(D->num, &pn);
            dt_ox_sy_poly_of(kd, &pk);
            if ((rc = dt_ox_sy_poly_axpy(&pn, 1, &pk, e)) ||
                (rc = dt_ox_sy_intern(c, &pn, &n2, e)) || (rc = dt_ox_sy_mul(c, D->den, b, &d2, e)))
                return rc;
            rc = floordiv_(c, n2, d2, &part, e);
        } else {
            const sym *rs;
            if ((rc = dt_ox_sy_intern(c, &rr, &rs, e)))
                return rc;
            rc = quotient_atom(c, rs, b, &part, e);
        }
    }
    if (rc || (rc = dt_ox_sy_intern(c, q, &qs, e)))
        return rc;
    poly sum, pp;
    dt_ox_sy_poly_of(qs, &sum);
    dt_ox_sy_poly_of(part, &pp);
    if ((rc = dt_ox_sy_poly_axpy(&sum, 1, &pp, e)))
        return rc;
    return dt_ox_sy_intern(c, &sum, out, e);
}

static int floordiv_(sym_ctx *c, const sym *a, const sym *b, const sym **out, dt_err *e)
{
    int64_t av, bv;
    int rc;
    if (dt_ox_sym_is_const(b, &bv) && bv == 0)
        return dt_errf(e, DT_EINVAL, "division by zero");
    if (a->n == 0) {
        *out = a;
        return 0;
    }
    poly pa, pb, q = {.n = 0}, r = {.n = 0};
    dt_ox_sy_poly_of(a, &pa);
    dt_ox_sy_poly_of(b, &pb);
    int bs = dt_ox_sym_signs(c, b);
    if (bs == SYM_LT) { /* floor(a/b) = floor(-a/-b) */
        poly na = {.n = 0}, nb = {.n = 0};
        if ((rc = dt_ox_sy_poly_axpy(&na, -1, &pa, e)) ||
            (rc = dt_ox_sy_poly_axpy(&nb, -1, &pb, e)) || (rc = dt_ox_sy_intern(c, &na, &a, e)) ||
            (rc = dt_ox_sy_intern(c, &nb, &b, e)))
            return rc;
        pa = na;
        pb = nb;
        bs = SYM_GT;
    }
    if (dt_ox_sym_is_const(b, &bv)) {
        if (dt_ox_sym_is_const(a, &av)) {
            int64_t v;
            return (rc = dt_ox_sy_fdiv64(av, bv, &v, e)) ? rc : dt_ox_sy_intern_const(c, v, out, e);
        }
        if (bv == 1) {
            *out = a;
            return 0;
        }
    }
    if (poly_divexact(&pa, &pb, &q))
        return dt_ox_sy_intern(c, &q, out, e);
    q.n = 0;
    if (pb.n == 1) {
        /* the terms a monomial divides leave the floor: floor((m*q + r)/m) = q + floor(r/m) */
        for (int i = 0; i < pa.n; i++) {
            term m;
            if (dt_ox_sy_term_divides(&pa.t[i], &pb.t[0], &m) && pa.t[i].coef % pb.t[0].coef == 0 &&
                !(pb.t[0].coef == -1 && pa.t[i].coef == INT64_MIN))
                rc = dt_ox_sy_poly_add_term(&q, &m, pa.t[i].coef / pb.t[0].coef, e);
            else
                rc = dt_ox_sy_poly_add_term(&r, &pa.t[i], pa.t[i].coef, e);
            if (rc)
                return rc;
        }
    } else {
        r = pa;
    }
    return quotient_plus(c, &q, &r, b, bs == SYM_GT, out, e);
}

const sym *dt_ox_sym_floordiv(sym_ctx *c, const sym *a, const sym *b)
{
    if (!a || !b)
        return NULL;
    const sym *s = NULL;
    dt_err e;
    int rc = floordiv_(c, a, b, &s, &e);
    return dt_ox_sy_done(c, rc, s, &e);
}

const sym *dt_ox_sym_ceildiv(sym_ctx *c, const sym *a, const sym *b)
{
    if (!a || !b)
        return NULL;
    dt_err e;
    if (dt_ox_sym_signs(c, b) != SYM_GT) {
        char buf[128];
        dt_errf(&e, DT_EINVAL, "divisor %s may be <= 0", dt_ox_sym_str(c, b, buf, sizeof buf));
        dt_ox_sy_record(c, &e);
        return NULL;
    }
    const sym *q;
    int rc = dt_ox_sym_divexact(c, a, b, &q);
    if (rc < 0)
        return NULL;
    if (rc == 1)
        return q;
    /* ceil(a/b) = floor((a + b - 1) / b) for b > 0 */
    return dt_ox_sym_floordiv(c, dt_ox_sym_sub(c, dt_ox_sym_add(c, a, b), dt_ox_sym_const(c, 1)),
                              b);
}

const sym *dt_ox_sym_mod(sym_ctx *c, const sym *a, const sym *b)
{
    return dt_ox_sym_sub(c, a, dt_ox_sym_mul(c, b, dt_ox_sym_floordiv(c, a, b)));
}
