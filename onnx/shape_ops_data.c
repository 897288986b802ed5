/* Shape rules of constants and of the small integer tensors PyTorch
 * exports compute shapes with: Constant, ConstantOfShape, Shape, Size,
 * Gather, Unsqueeze, Squeeze, Concat, Range, Expand, Tile.  Their values
 * propagate as symbolic integers so that a Reshape or Expand target built
 * from Shape resolves. */
#include <math.h>
#include <string.h>

#include "onnx/shape_ops.h"

static const sym *k_(ox_node *c, int64_t v)
{
    return dt_ox_sym_const(c->sc, v);
}

/* Constant dims and element count of a tensor whose values are known. */
static void known_dims(const ox_tensor *t, int64_t *d, int64_t *n)
{
    dt_ox_const_dims(t, d);
    *n = 1;
    for (int i = 0; i < t->pub.rank; i++)
        *n *= d[i]; /* small: the tensor has nv <= DT_OX_MAX_VALUES elements */
}

/* ---- Constant ------------------------------------------------------------------- */

/* Output k is the tensor t (a Constant's value, ConstantOfShape's is only
 * its type and element). */
static int tensor_out(ox_node *c, int k, const dt_ox_tensor *t)
{
    const sym *dims[DT_OX_MAX_RANK];
    if (t->rank < 0 || t->rank > DT_OX_MAX_RANK)
        return dt_ox_fail(c, "the value has rank %d (at most %d)", t->rank, DT_OX_MAX_RANK);
    for (int i = 0; i < t->rank; i++)
        dims[i] = k_(c, t->dims[i]);
    int rc = dt_ox_set_out(c, k, t->elem_type, t->rank, dims);
    if (rc || !t->has_values)
        return rc;
    if (t->fvals && t->numel > 0) {
        int same = 1;
        for (int64_t i = 1; i < t->numel && same; i++)
            same = t->fvals[i] == t->fvals[0];
        if (same)
            dt_ox_set_fval(c, k, t->fvals[0]);
    }
    if (!t->ivals || t->numel > DT_OX_MAX_VALUES)
        return 0;
    const sym *v[DT_OX_MAX_VALUES];
    for (int64_t i = 0; i < t->numel; i++)
        v[i] = k_(c, t->ivals[i]);
    return dt_ox_set_vals(c, k, (int)t->numel, v);
}

int dt_ox_rule_constant(ox_node *c)
{
    if (c->n->nattrs != 1)
        return dt_ox_fail(c, "a Constant has exactly one value attribute, this one has %d",
                          c->n->nattrs);
    const dt_ox_attr *a = &c->n->attrs[0];
    const sym *v[DT_OX_MAX_VALUES], *n;
    int rc = 0;
    dt_ox_set_const(c, 0, 1);
    if (strcmp(a->name, "value") == 0 && a->type == DT_OX_ATTR_TENSOR)
        return tensor_out(c, 0, &a->t);
    if (strcmp(a->name, "value_int") == 0 && a->type == DT_OX_ATTR_INT) {
        v[0] = k_(c, a->i);
        return (rc = dt_ox_set_out(c, 0, DT_OX_INT64, 0, NULL)) ? rc : dt_ox_set_vals(c, 0, 1, v);
    }
    if (strcmp(a->name, "value_float") == 0 && a->type == DT_OX_ATTR_FLOAT) {
        rc = dt_ox_set_out(c, 0, DT_OX_FLOAT, 0, NULL);
        dt_ox_set_fval(c, 0, a->f);
        return rc;
    }
    if (strcmp(a->name, "value_ints") == 0 && a->type == DT_OX_ATTR_INTS) {
        n = k_(c, a->n);
        if ((rc = dt_ox_set_out(c, 0, DT_OX_INT64, 1, &n)) || a->n > DT_OX_MAX_VALUES)
            return rc;
        for (int i = 0; i < a->n; i++)
            v[i] = k_(c, a->ints[i]);
        return dt_ox_set_vals(c, 0, a->n, v);
    }
    if (strcmp(a->name, "value_floats") == 0 && a->type == DT_OX_ATTR_FLOATS) {
        n = k_(c, a->n);
        if ((rc = dt_ox_set_out(c, 0, DT_OX_FLOAT, 1, &n)))
            return rc;
        int same = a->n > 0;
        for (int i = 1; i < a->n && same; i++)
            same = a->floats[i] == a->floats[0];
        if (same)
            dt_ox_set_fval(c, 0, a->floats[0]);
        return 0;
    }
    if (strcmp(a->name, "value_string") == 0 && a->type == DT_OX_ATTR_STRING)
        return dt_ox_set_out(c, 0, DT_OX_STRING, 0, NULL);
    return dt_ox_fail(
        c, "a Constant's attribute '%s' (sparse tensors, string lists) is not supported", a->name);
}

int dt_ox_rule_constant_of_shape(ox_node *c)
{
    const sym *dims[DT_OX_MAX_RANK], *v[DT_OX_MAX_VALUES];
    char s[128];
    int n, rc = dt_ox_input_syms(c, 0, "the shape", dims, DT_OX_MAX_RANK, &n);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++)
        if (dt_ox_sym_signs(c->sc, dims[i]) & SYM_LT)
            return dt_ox_fail(c, "dim %d of the shape is %s, which may be negative", i,
                              dt_ox_str(c, dims[i], s, sizeof s));
    const dt_ox_attr *a = dt_ox_attr_get(c, "value");
    int type = DT_OX_FLOAT, has = 1;
    int64_t iv = 0;
    double fv = 0;
    if (a) {
        if (a->type != DT_OX_ATTR_TENSOR || a->t.numel != 1)
            return dt_ox_fail(c, "attribute 'value' should be a one-element tensor");
        type = a->t.elem_type;
        has = a->t.has_values;
        if (a->t.ivals)
            iv = a->t.ivals[0];
        if (a->t.fvals)
            fv = a->t.fvals[0];
    }
    if ((rc = dt_ox_set_out(c, 0, type, n, dims)) || !has)
        return rc;
    if (dt_ox_is_float_type(type))
        dt_ox_set_fval(c, 0, fv);
    int64_t numel = 1, d;
    for (int i = 0; i < n; i++)
        if (!dt_ox_sym_is_const(dims[i], &d) || (numel *= d) > DT_OX_MAX_VALUES)
            return 0;
    for (int64_t i = 0; i < numel; i++)
        v[i] = k_(c, iv);
    return dt_ox_set_vals(c, 0, (int)numel, v);
}

/* ---- Shape, Size ---------------------------------------------------------------- */

static int64_t clamp_index(int64_t i, int r)
{
    if (i < 0)
        i += r;
    return i < 0 ? 0 : i > r ? r : i;
}

int dt_ox_rule_shape(ox_node *c)
{
    ox_tensor *x;
    int64_t start, end;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_attr_int(c, "start", 0, &start)) ||
        (rc = dt_ox_attr_int(c, "end", x->pub.rank, &end)))
        return rc;
    start = clamp_index(start, x->pub.rank);
    end = clamp_index(end, x->pub.rank);
    int n = end > start ? (int)(end - start) : 0;
    const sym *len = k_(c, n);
    if ((rc = dt_ox_set_out(c, 0, DT_OX_INT64, 1, &len)))
        return rc;
    return dt_ox_set_vals(c, 0, n, x->dims + start);
}

int dt_ox_rule_size(ox_node *c)
{
    ox_tensor *x;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_set_out(c, 0, DT_OX_INT64, 0, NULL)))
        return rc;
    const sym *n = dt_ox_dims_product(c, x->dims, x->pub.rank);
    return dt_ox_set_vals(c, 0, 1, &n);
}

/* ---- Gather --------------------------------------------------------------------- */

int dt_ox_rule_gather(ox_node *c)
{
    ox_tensor *x, *ind;
    int64_t axis;
    int a, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &ind)) || (rc = dt_ox_attr_int(c, "axis", 0, &axis)))
        return rc;
    if (x->pub.rank < 1)
        return dt_ox_fail(c, "the data is a scalar");
    if ((rc = dt_ox_axis(c, axis, x->pub.rank, &a)))
        return rc;
    int r = x->pub.rank, q = ind->pub.rank, ro = q + r - 1;
    if (ro > DT_OX_MAX_RANK)
        return dt_ox_fail(c, "the result would have rank %d (at most %d)", ro, DT_OX_MAX_RANK);
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, x->dims, (size_t)a * sizeof dims[0]);
    memcpy(dims + a, ind->dims, (size_t)q * sizeof dims[0]);
    memcpy(dims + a + q, x->dims + a + 1, (size_t)(r - a - 1) * sizeof dims[0]);
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, ro, dims)))
        return rc;
    if (x->pub.has_fval)
        dt_ox_set_fval(c, 0, x->pub.fval);
    /* constant indices: checked against a constant axis, values gathered */
    int64_t idx[DT_OX_MAX_VALUES], dim, nidx = 0;
    if (ind->nv < 0 || !dt_ox_sym_is_const(x->dims[a], &dim))
        return 0;
    for (int j = 0; j < ind->nv; j++) {
        if (!dt_ox_sym_is_const(ind->vals[j], &idx[j]))
            return 0;
        if (idx[j] < -dim || idx[j] >= dim)
            return dt_ox_fail(c, "index %lld is out of range for axis %d of size %lld",
                              (long long)idx[j], a, (long long)dim);
        if (idx[j] < 0)
            idx[j] += dim;
        nidx++;
    }
    if (x->nv < 0)
        return 0;
    int64_t dx[DT_OX_MAX_RANK], nx, outer = 1, inner = 1;
    known_dims(x, dx, &nx);
    for (int i = 0; i < a; i++)
        outer *= dx[i];
    for (int i = a + 1; i < r; i++)
        inner *= dx[i];
    if (outer * nidx * inner > DT_OX_MAX_VALUES)
        return 0;
    const sym *v[DT_OX_MAX_VALUES];
    int n = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++)
            for (int64_t i = 0; i < inner; i++)
                v[n++] = x->vals[(o * dim + idx[j]) * inner + i];
    return dt_ox_set_vals(c, 0, n, v);
}

/* ---- Unsqueeze, Squeeze --------------------------------------------------------- */

int dt_ox_rule_unsqueeze(ox_node *c)
{
    ox_tensor *x;
    int64_t axes[DT_OX_MAX_RANK + 1];
    int n, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_ints_attr_or_input(c, "axes", 1, axes, DT_OX_MAX_RANK + 1, &n)))
        return rc;
    if (n < 0)
        return dt_ox_fail(c, "the axes are missing");
    int ro = x->pub.rank + n;
    uint32_t mask;
    if (ro > DT_OX_MAX_RANK)
        return dt_ox_fail(c, "the result would have rank %d (at most %d)", ro, DT_OX_MAX_RANK);
    if ((rc = dt_ox_axes(c, axes, n, ro, &mask)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK];
    for (int i = 0, j = 0; i < ro; i++)
        dims[i] = (mask & (1u << i)) ? k_(c, 1) : x->dims[j++];
    return (rc = dt_ox_set_out(c, 0, x->pub.elem_type, ro, dims)) ? rc : dt_ox_pass_values(c, 0, x);
}

int dt_ox_rule_squeeze(ox_node *c)
{
    ox_tensor *x;
    int64_t axes[DT_OX_MAX_RANK];
    int n, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_ints_attr_or_input(c, "axes", 1, axes, DT_OX_MAX_RANK, &n)))
        return rc;
    uint32_t mask = 0;
    char s[128];
    int r = x->pub.rank;
    if (n > 0 && (rc = dt_ox_axes(c, axes, n, r, &mask)))
        return rc;
    for (int i = 0; i < r; i++) {
        int m = dt_ox_sym_cmp(c->sc, x->dims[i], k_(c, 1));
        if (n > 0 && (mask & (1u << i)) && m != SYM_EQ)
            return dt_ox_fail(c, "axis %d has size %s, not 1", i,
                              dt_ox_str(c, x->dims[i], s, sizeof s));
        if (n <= 0 && m == SYM_EQ)
            mask |= 1u << i;
        else if (n <= 0 && (m & SYM_EQ))
            return dt_ox_fail(c,
                              "without axes, dim %d (%s) is squeezed only when it is 1, which "
                              "depends on the shape",
                              i, dt_ox_str(c, x->dims[i], s, sizeof s));
    }
    const sym *dims[DT_OX_MAX_RANK];
    int ro = 0;
    for (int i = 0; i < r; i++)
        if (!(mask & (1u << i)))
            dims[ro++] = x->dims[i];
    return (rc = dt_ox_set_out(c, 0, x->pub.elem_type, ro, dims)) ? rc : dt_ox_pass_values(c, 0, x);
}

/* ---- Concat --------------------------------------------------------------------- */

int dt_ox_rule_concat(ox_node *c)
{
    ox_tensor *x0;
    int64_t axis;
    int a, rc = dt_ox_need(c, 0, &x0);
    if (rc)
        return rc;
    if (!dt_ox_attr_get(c, "axis"))
        return dt_ox_fail(c, "attribute 'axis' is missing");
    if ((rc = dt_ox_attr_int(c, "axis", 0, &axis)))
        return rc;
    int r = x0->pub.rank;
    if (r < 1)
        return dt_ox_fail(c, "input #0 is a scalar");
    if ((rc = dt_ox_axis(c, axis, r, &a)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, x0->dims, (size_t)r * sizeof dims[0]);
    char s1[128], s2[128];
    for (int k = 1; k < c->nin; k++) {
        ox_tensor *x;
        if ((rc = dt_ox_need(c, k, &x)))
            return rc;
        if (x->pub.rank != r)
            return dt_ox_fail(c, "input #%d has rank %d, input #0 rank %d", k, x->pub.rank, r);
        for (int i = 0; i < r; i++)
            if (i != a && !dt_ox_equal(c, x->dims[i], dims[i]))
                return dt_ox_fail(c, "dim %d of input #%d is %s, of input #0 %s", i, k,
                                  dt_ox_str(c, x->dims[i], s1, sizeof s1),
                                  dt_ox_str(c, dims[i], s2, sizeof s2));
        dims[a] = dt_ox_sym_add(c->sc, dims[a], x->dims[a]);
    }
    if ((rc = dt_ox_set_out(c, 0, x0->pub.elem_type, r, dims)))
        return rc;
    int same_f = x0->pub.has_fval;
    for (int k = 1; k < c->nin && same_f; k++)
        same_f = c->in[k]->pub.has_fval && c->in[k]->pub.fval == x0->pub.fval;
    if (same_f)
        dt_ox_set_fval(c, 0, x0->pub.fval);
    /* values: each input's chunk of every outer index in turn */
    const sym *v[DT_OX_MAX_VALUES];
    int n = 0;
    int64_t d[DT_OX_MAX_RANK], numel, outer = 1;
    for (int k = 0; k < c->nin; k++)
        if (c->in[k]->nv < 0)
            return 0;
    known_dims(x0, d, &numel);
    for (int i = 0; i < a; i++)
        outer *= d[i];
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < c->nin; k++) {
            const ox_tensor *x = c->in[k];
            int64_t chunk = outer ? x->nv / outer : 0;
            if (n + chunk > DT_OX_MAX_VALUES)
                return 0;
            for (int64_t i = 0; i < chunk; i++)
                v[n++] = x->vals[o * chunk + i];
        }
    return dt_ox_set_vals(c, 0, n, v);
}

/* ---- Range ---------------------------------------------------------------------- */

static int range_float(ox_node *c, ox_tensor *const *in)
{
    for (int k = 0; k < 3; k++)
        if (!in[k]->pub.has_fval)
            return dt_ox_fail(c, "the %s of a float Range is not a known constant",
                              k == 0   ? "start"
                              : k == 1 ? "limit"
                                       : "delta");
    double st = in[0]->pub.fval, lim = in[1]->pub.fval, de = in[2]->pub.fval;
    double n = ceil((lim - st) / de);
    if (de == 0 || !isfinite(n) || n > (double)OX_DIM_MAX)
        return dt_ox_fail(c, "start %g, limit %g, delta %g give no valid length", st, lim, de);
    const sym *len = k_(c, n > 0 ? (int64_t)n : 0);
    return dt_ox_set_out(c, 0, in[0]->pub.elem_type, 1, &len);
}

int dt_ox_rule_range(ox_node *c)
{
    ox_tensor *in[3];
    int rc;
    for (int k = 0; k < 3; k++) {
        if ((rc = dt_ox_need(c, k, &in[k])))
            return rc;
        int64_t one;
        if (in[k]->pub.rank > 1 ||
            (in[k]->pub.rank == 1 && !(dt_ox_sym_is_const(in[k]->dims[0], &one) && one == 1)))
            return dt_ox_fail(c, "input #%d is not a scalar", k);
    }
    if (!dt_ox_is_int_type(in[0]->pub.elem_type))
        return range_float(c, in);
    const sym *st, *lim, *de;
    int n;
    if ((rc = dt_ox_input_syms(c, 0, "start", &st, 1, &n)) ||
        (rc = dt_ox_input_syms(c, 1, "limit", &lim, 1, &n)) ||
        (rc = dt_ox_input_syms(c, 2, "delta", &de, 1, &n)))
        return rc;
    int64_t d;
    char s1[128], s2[128];
    if (!dt_ox_sym_is_const(de, &d) || d == 0 || d == INT64_MIN)
        return dt_ox_fail(c, "delta is %s: it must be a nonzero constant",
                          dt_ox_str(c, de, s1, sizeof s1));
    /* n = max(ceil((limit - start) / delta), 0) */
    const sym *span = d > 0 ? dt_ox_sym_sub(c->sc, lim, st) : dt_ox_sym_sub(c->sc, st, lim);
    const sym *step = k_(c, d > 0 ? d : -d), *len;
    if (!span)
        return dt_ox_sym_fail(c);
    int m = dt_ox_sym_signs(c->sc, span);
    if (!(m & SYM_LT))
        len = dt_ox_sym_ceildiv(c->sc, span, step);
    else if (!(m & SYM_GT))
        len = k_(c, 0);
    else
        return dt_ox_fail(c, "cannot tell whether the range from %s to %s is empty or not",
                          dt_ox_str(c, st, s1, sizeof s1), dt_ox_str(c, lim, s2, sizeof s2));
    if ((rc = dt_ox_set_out(c, 0, in[0]->pub.elem_type, 1, &len)))
        return rc;
    int64_t count;
    if (!dt_ox_sym_is_const(len, &count) || count > DT_OX_MAX_VALUES)
        return 0;
    const sym *v[DT_OX_MAX_VALUES];
    for (int64_t i = 0; i < count; i++) {
        int64_t off;
        if (__builtin_mul_overflow(i, d, &off))
            return 0;
        v[i] = dt_ox_sym_add(c->sc, st, k_(c, off));
    }
    return dt_ox_set_vals(c, 0, (int)count, v);
}

/* ---- Expand, Tile --------------------------------------------------------------- */

/* Values of output 0 broadcast from x (its dims constant, few elements). */
static int broadcast_values(ox_node *c, const ox_tensor *x, int r, const sym *const *dims)
{
    int64_t dout[DT_OX_MAX_RANK], dx[DT_OX_MAX_RANK], n = 1, nx;
    if (x->pub.has_fval)
        dt_ox_set_fval(c, 0, x->pub.fval);
    if (x->nv < 0)
        return 0;
    for (int i = 0; i < r; i++)
        if (!dt_ox_sym_is_const(dims[i], &dout[i]) || (n *= dout[i]) > DT_OX_MAX_VALUES)
            return 0;
    known_dims(x, dx, &nx);
    int64_t map[DT_OX_MAX_VALUES];
    const sym *v[DT_OX_MAX_VALUES];
    dt_ox_bcast_map(r, dout, x->pub.rank, dx, n, map);
    for (int64_t i = 0; i < n; i++)
        v[i] = x->vals[map[i]];
    return dt_ox_set_vals(c, 0, (int)n, v);
}

int dt_ox_rule_expand(ox_node *c)
{
    ox_tensor *x;
    const sym *shape[DT_OX_MAX_RANK], *dims[DT_OX_MAX_RANK];
    int n, r, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_input_syms(c, 1, "the shape", shape, DT_OX_MAX_RANK, &n)) ||
        (rc = dt_ox_broadcast(c, x->pub.rank, x->dims, n, shape, &r, dims)) ||
        (rc = dt_ox_set_out(c, 0, x->pub.elem_type, r, dims)))
        return rc;
    return broadcast_values(c, x, r, dims);
}

int dt_ox_rule_tile(ox_node *c)
{
    ox_tensor *x;
    const sym *rep[DT_OX_MAX_RANK], *dims[DT_OX_MAX_RANK];
    int n, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_input_syms(c, 1, "repeats", rep, DT_OX_MAX_RANK, &n)))
        return rc;
    if (n != x->pub.rank)
        return dt_ox_fail(c, "%d repeats for rank %d", n, x->pub.rank);
    for (int i = 0; i < n; i++) {
        char s[128];
        if (dt_ox_sym_signs(c->sc, rep[i]) & SYM_LT)
            return dt_ox_fail(c, "repeat %d is %s, which may be negative", i,
                              dt_ox_str(c, rep[i], s, sizeof s));
        dims[i] = dt_ox_sym_mul(c->sc, x->dims[i], rep[i]);
    }
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, n, dims)))
        return rc;
    if (x->pub.has_fval)
        dt_ox_set_fval(c, 0, x->pub.fval);
    return 0;
}
