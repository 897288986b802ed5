/* Helpers of the per-op shape rules: failures, attributes, inputs,
 * outputs, broadcasting (onnx/shape_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/shape_internal.h"

/* ---- failures --------------------------------------------------------------- */

static int node_fail(ox_node *c, int code, const char *why)
{
    char label[320];
    dt_ox_node_label(c->g, c->idx, label, sizeof label);
    return dt_errf(c->e, code, "%s: node %s: cannot propagate shapes: %s",
                   c->g->source ? c->g->source : "model", label, why);
}

int dt_ox_fail(ox_node *c, const char *fmt, ...)
{
    char why[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return node_fail(c, DT_EINVAL, why);
}

int dt_ox_sym_fail(ox_node *c)
{
    dt_err e;
    int code = dt_ox_sym_take_err(c->sc, &e);
    if (!code)
        return node_fail(c, DT_EINVAL, "internal error: a symbolic operation failed silently");
    return node_fail(c, code == DT_ENOMEM ? DT_ENOMEM : DT_EINVAL, e.msg);
}

const char *dt_ox_str(ox_node *c, const sym *p, char *buf, size_t n)
{
    return dt_ox_sym_str(c->sc, p, buf, n);
}

/* ---- attributes ------------------------------------------------------------- */

const dt_ox_attr *dt_ox_attr_get(const ox_node *c, const char *name)
{
    for (int i = 0; i < c->n->nattrs; i++)
        if (strcmp(c->n->attrs[i].name, name) == 0)
            return &c->n->attrs[i];
    return NULL;
}

static int wrong_type(ox_node *c, const char *name, const char *want)
{
    return dt_ox_fail(c, "attribute '%s' should be %s", name, want);
}

int dt_ox_attr_int(ox_node *c, const char *name, int64_t def, int64_t *out)
{
    const dt_ox_attr *a = dt_ox_attr_get(c, name);
    *out = def;
    if (!a)
        return 0;
    if (a->type != DT_OX_ATTR_INT)
        return wrong_type(c, name, "an int");
    *out = a->i;
    return 0;
}

int dt_ox_attr_str(ox_node *c, const char *name, const char *def, const char **s)
{
    const dt_ox_attr *a = dt_ox_attr_get(c, name);
    *s = def;
    if (!a)
        return 0;
    if (a->type != DT_OX_ATTR_STRING || !a->s)
        return wrong_type(c, name, "a string");
    *s = a->s;
    return 0;
}

int dt_ox_attr_ints(ox_node *c, const char *name, const int64_t **v, int *n)
{
    const dt_ox_attr *a = dt_ox_attr_get(c, name);
    *v = NULL;
    *n = -1;
    if (!a)
        return 0;
    if (a->type != DT_OX_ATTR_INTS)
        return wrong_type(c, name, "a list of ints");
    *v = a->ints;
    *n = a->n;
    return 0;
}

/* ---- inputs ----------------------------------------------------------------- */

int dt_ox_need(ox_node *c, int i, ox_tensor **t)
{
    *t = i < c->nin ? c->in[i] : NULL;
    if (!*t)
        return dt_ox_fail(c, "input #%d is missing", i);
    return 0;
}

/* Input i, present and with known values (at most max of them), in *t. */
static int known_values(ox_node *c, int i, const char *what, int max, ox_tensor **t)
{
    *t = i < c->nin ? c->in[i] : NULL;
    if (!*t)
        return dt_ox_fail(c, "%s (input #%d) is missing", what, i);
    if ((*t)->nv < 0)
        return dt_ox_fail(c,
                          "%s ('%s') is not known: it must be computed from constants and shapes "
                          "(with at most %d elements)",
                          what, (*t)->pub.name, DT_OX_MAX_VALUES);
    if ((*t)->nv > max)
        return dt_ox_fail(c, "%s ('%s') has %d elements, at most %d are allowed", what,
                          (*t)->pub.name, (*t)->nv, max);
    return 0;
}

/* The constant integer values of input i (at most max): every value known
 * and a constant, else an dt_ox_fail naming what. */
static int input_ints(ox_node *c, int i, const char *what, int64_t *buf, int max, int *n)
{
    ox_tensor *t;
    int rc = known_values(c, i, what, max, &t);
    if (rc)
        return rc;
    for (int k = 0; k < t->nv; k++)
        if (!dt_ox_sym_is_const(t->vals[k], &buf[k])) {
            char s[128];
            return dt_ox_fail(c, "%s ('%s') is not a constant: element %d is %s", what, t->pub.name,
                              k, dt_ox_str(c, t->vals[k], s, sizeof s));
        }
    *n = t->nv;
    return 0;
}

int dt_ox_opt_input_ints(ox_node *c, int i, const char *what, int64_t *buf, int max, int *n)
{
    *n = -1;
    if (i < c->nin && c->in[i])
        return input_ints(c, i, what, buf, max, n);
    return 0;
}

int dt_ox_input_syms(ox_node *c, int i, const char *what, const sym **buf, int max, int *n)
{
    ox_tensor *t;
    int rc = known_values(c, i, what, max, &t);
    if (rc)
        return rc;
    memcpy(buf, t->vals, (size_t)t->nv * sizeof *buf);
    *n = t->nv;
    return 0;
}

int dt_ox_ints_attr_or_input(ox_node *c, const char *attr, int i, int64_t *buf, int max, int *n)
{
    const int64_t *v;
    int rc = dt_ox_attr_ints(c, attr, &v, n);
    if (rc)
        return rc;
    if (*n >= 0) {
        if (*n > max)
            return dt_ox_fail(c, "attribute '%s' has %d values, at most %d are allowed", attr, *n,
                              max);
        memcpy(buf, v, (size_t)*n * sizeof *buf);
        return 0;
    }
    if (i >= 0 && i < c->nin && c->in[i])
        return input_ints(c, i, attr, buf, max, n);
    return 0;
}

int dt_ox_axis(ox_node *c, int64_t axis, int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return dt_ox_fail(c, "axis %lld is out of range for rank %d", (long long)axis, rank);
    *out = (int)a;
    return 0;
}

int dt_ox_axes(ox_node *c, const int64_t *axes, int n, int rank, uint32_t *mask)
{
    *mask = 0;
    for (int i = 0; i < n; i++) {
        int a = 0;
        int rc = dt_ox_axis(c, axes[i], rank, &a);
        if (rc)
            return rc;
        if (*mask & (1u << a))
            return dt_ox_fail(c, "axis %lld is given twice", (long long)axes[i]);
        *mask |= 1u << a;
    }
    return 0;
}

/* ---- outputs ---------------------------------------------------------------- */

int dt_ox_set_out(ox_node *c, int k, int elem_type, int rank, const sym *const *dims)
{
    ox_tensor *t = k < c->nout ? c->out[k] : NULL;
    if (!t)
        return 0;
    if (rank < 0 || rank > DT_OX_MAX_RANK)
        return dt_ox_fail(c, "output '%s' would have rank %d (at most %d)", t->pub.name, rank,
                          DT_OX_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        if (!dims[i])
            return dt_ox_sym_fail(c);
        int64_t v, lo, hi;
        char s[128];
        if (dt_ox_sym_is_const(dims[i], &v) && (v < 0 || v > OX_DIM_MAX))
            return dt_ox_fail(c, "output '%s' would have dim %d = %lld (a dim is 0..2^40)",
                              t->pub.name, i, (long long)v);
        if (dt_ox_sym_bounds(dims[i], &lo, &hi) && hi < 0)
            return dt_ox_fail(c, "output '%s' would have dim %d = %s, negative for every shape",
                              t->pub.name, i, dt_ox_str(c, dims[i], s, sizeof s));
    }
    t->known = 1;
    t->pub.elem_type = elem_type;
    t->pub.rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    return 0;
}

int dt_ox_same_shape(ox_node *c, int k, const ox_tensor *t)
{
    return dt_ox_set_out(c, k, t->pub.elem_type, t->pub.rank, t->dims);
}

int dt_ox_set_vals(ox_node *c, int k, int nv, const sym *const *vals)
{
    ox_tensor *t = k < c->nout ? c->out[k] : NULL;
    if (dt_ox_sym_failed(c->sc)) {
        /* a value that overflows int64 stays unknown; an expression too
         * large or too deep to write is an error */
        dt_err e;
        int code = dt_ox_sym_take_err(c->sc, &e);
        return code == DT_EOVERFLOW ? 0 : node_fail(c, code == DT_ENOMEM ? code : DT_EINVAL, e.msg);
    }
    if (!t || !t->known || nv < 0 || nv > DT_OX_MAX_VALUES || !dt_ox_is_int_type(t->pub.elem_type))
        return 0;
    int64_t dims[DT_OX_MAX_RANK], numel = 1;
    if (!dt_ox_const_dims(t, dims))
        return 0;
    for (int i = 0; i < t->pub.rank; i++)
        if (__builtin_mul_overflow(numel, dims[i], &numel))
            return 0;
    if (numel != nv)
        return 0;
    for (int i = 0; i < nv; i++)
        if (!vals[i])
            return 0;
    const sym **v = malloc((size_t)(nv ? nv : 1) * sizeof *v);
    if (!v)
        return node_fail(c, DT_ENOMEM, "out of memory");
    memcpy(v, vals, (size_t)nv * sizeof *v);
    free(t->vals);
    t->vals = v;
    t->nv = nv;
    return 0;
}

void dt_ox_set_fval(ox_node *c, int k, double v)
{
    ox_tensor *t = k < c->nout ? c->out[k] : NULL;
    if (t && dt_ox_is_float_type(t->pub.elem_type)) {
        t->pub.has_fval = 1;
        t->pub.fval = v;
    }
}

void dt_ox_set_const(ox_node *c, int k, int is_const)
{
    ox_tensor *t = k < c->nout ? c->out[k] : NULL;
    if (t) {
        t->pub.is_const = is_const;
        c->const_set[k] = 1;
    }
}

int dt_ox_pass_values(ox_node *c, int k, const ox_tensor *t)
{
    if (t->pub.has_fval)
        dt_ox_set_fval(c, k, t->pub.fval);
    return t->nv >= 0 ? dt_ox_set_vals(c, k, t->nv, t->vals) : 0;
}

/* ---- shapes ----------------------------------------------------------------- */

int dt_ox_equal(ox_node *c, const sym *a, const sym *b)
{
    return a == b || dt_ox_sym_cmp(c->sc, a, b) == SYM_EQ;
}

int dt_ox_broadcast(ox_node *c, int ra, const sym *const *a, int rb, const sym *const *b, int *r,
                    const sym **out)
{
    int n = ra > rb ? ra : rb;
    for (int j = 0; j < n; j++) { /* j counts from the right */
        const sym *x = j < ra ? a[ra - 1 - j] : NULL, *y = j < rb ? b[rb - 1 - j] : NULL;
        int64_t v;
        const sym *d;
        if (!x || !y)
            d = x ? x : y;
        else if (dt_ox_equal(c, x, y))
            d = x;
        else if (dt_ox_sym_is_const(x, &v) && v == 1)
            d = y;
        else if (dt_ox_sym_is_const(y, &v) && v == 1)
            d = x;
        else {
            char sx[128], sy[128];
            return dt_ox_fail(c, "dims %s and %s do not broadcast (axis %d of the result)",
                              dt_ox_str(c, x, sx, sizeof sx), dt_ox_str(c, y, sy, sizeof sy),
                              n - 1 - j);
        }
        out[n - 1 - j] = d;
    }
    *r = n;
    return 0;
}

const sym *dt_ox_dims_product(ox_node *c, const sym *const *dims, int n)
{
    const sym *p = dt_ox_sym_const(c->sc, 1);
    for (int i = 0; i < n; i++)
        p = dt_ox_sym_mul(c->sc, p, dims[i]);
    return p;
}

int dt_ox_const_dims(const ox_tensor *t, int64_t *dims)
{
    for (int i = 0; i < t->pub.rank; i++)
        if (!dt_ox_sym_is_const(t->dims[i], &dims[i]))
            return 0;
    return 1;
}

void dt_ox_bcast_map(int r, const int64_t *dout, int ra, const int64_t *da, int64_t nout,
                     int64_t *map)
{
    for (int64_t i = 0; i < nout; i++) {
        int64_t rest = i, idx = 0, stride = 1;
        for (int j = r - 1; j >= 0; j--) {
            int64_t coord = dout[j] ? rest % dout[j] : 0;
            rest = dout[j] ? rest / dout[j] : 0;
            int ja = j - (r - ra);
            if (ja >= 0) {
                idx += (da[ja] == 1 ? 0 : coord) * stride;
                stride *= da[ja];
            }
        }
        map[i] = idx;
    }
}

/* ---- element types ---------------------------------------------------------- */

int dt_ox_is_int_type(int t)
{
    return dt_ox_type_values(t) == 1;
}

int dt_ox_is_float_type(int t)
{
    return dt_ox_type_values(t) == 2;
}
