/* Shape rules of the ops that rearrange elements: Reshape, Flatten,
 * Transpose, Slice, Split, Pad.  Symbolic questions (is this -1 dim a
 * whole number, does this Slice end stay inside the dim) are decided over
 * the variables' domains; what they cannot decide fails naming the node. */
#include <string.h>

#include "onnx/shape_ops.h"

/* Constants this far out are clamped by every Slice anyway: replacing them
 * keeps start + dim from overflowing (INT64_MAX means "to the end"). */
#define FAR (INT64_C(1) << 41)

static const sym *k_(ox_node *c, int64_t v)
{
    return dt_ox_sym_const(c->sc, v);
}

/* Row-major coordinates of flat index i in dims d[0..r). */
static void coords(int r, const int64_t *d, int64_t i, int64_t *co)
{
    for (int j = r - 1; j >= 0; j--) {
        co[j] = d[j] ? i % d[j] : 0;
        i = d[j] ? i / d[j] : 0;
    }
}

static int64_t flat(int r, const int64_t *d, const int64_t *co)
{
    int64_t i = 0;
    for (int j = 0; j < r; j++)
        i = i * d[j] + co[j];
    return i;
}

/* ---- Reshape -------------------------------------------------------------------- */

int dt_ox_rule_reshape(ox_node *c)
{
    ox_tensor *x;
    const sym *shape[DT_OX_MAX_RANK], *dims[DT_OX_MAX_RANK];
    int64_t allowzero;
    char s1[128], s2[128];
    int n, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_attr_int(c, "allowzero", 0, &allowzero)) ||
        (rc = dt_ox_input_syms(c, 1, "the shape", shape, DT_OX_MAX_RANK, &n)))
        return rc;
    int infer = -1;
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (!dt_ox_sym_is_const(shape[i], &v)) {
            if (dt_ox_sym_signs(c->sc, shape[i]) != SYM_GT) /* 0 and -1 would change its meaning */
                return dt_ox_fail(c, "entry %d of the shape, %s, may be 0 or negative", i,
                                  dt_ox_str(c, shape[i], s1, sizeof s1));
            dims[i] = shape[i];
        } else if (v == 0 && !allowzero) {
            if (i >= x->pub.rank)
                return dt_ox_fail(c,
                                  "entry %d of the shape is 0 (copy the input's dim), but the "
                                  "input has rank %d",
                                  i, x->pub.rank);
            dims[i] = x->dims[i];
        } else if (v == -1) {
            if (infer >= 0)
                return dt_ox_fail(c, "the shape has -1 twice (entries %d and %d)", infer, i);
            infer = i;
            dims[i] = k_(c, 1);
        } else if (v < 0) {
            return dt_ox_fail(c, "entry %d of the shape is %lld", i, (long long)v);
        } else {
            dims[i] = shape[i];
        }
    }
    const sym *numel = dt_ox_dims_product(c, x->dims, x->pub.rank);
    const sym *known = dt_ox_dims_product(c, dims, n);
    if (!numel || !known)
        return dt_ox_sym_fail(c);
    if (infer >= 0) {
        const sym *q;
        int64_t z;
        if (dt_ox_sym_is_const(known, &z) && z == 0)
            return dt_ox_fail(c, "cannot infer the -1 entry next to a 0 dim");
        if ((rc = dt_ox_sym_divexact(c->sc, numel, known, &q)) < 0)
            return dt_ox_sym_fail(c);
        if (rc == 0)
            return dt_ox_fail(c,
                              "cannot infer the -1 entry: the input's %s elements are not shown to "
                              "be a multiple of %s",
                              dt_ox_str(c, numel, s1, sizeof s1),
                              dt_ox_str(c, known, s2, sizeof s2));
        dims[infer] = q;
    } else if (!dt_ox_equal(c, numel, known)) {
        return dt_ox_fail(c, "the input has %s elements, the shape %s",
                          dt_ox_str(c, numel, s1, sizeof s1), dt_ox_str(c, known, s2, sizeof s2));
    }
    return (rc = dt_ox_set_out(c, 0, x->pub.elem_type, n, dims)) ? rc : dt_ox_pass_values(c, 0, x);
}

int dt_ox_rule_flatten(ox_node *c)
{
    ox_tensor *x;
    int64_t axis;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_attr_int(c, "axis", 1, &axis)))
        return rc;
    int r = x->pub.rank;
    if (axis < -r || axis > r)
        return dt_ox_fail(c, "axis %lld is out of range for rank %d", (long long)axis, r);
    int a = (int)(axis < 0 ? axis + r : axis);
    const sym *dims[2] = {dt_ox_dims_product(c, x->dims, a),
                          dt_ox_dims_product(c, x->dims + a, r - a)};
    return (rc = dt_ox_set_out(c, 0, x->pub.elem_type, 2, dims)) ? rc : dt_ox_pass_values(c, 0, x);
}

/* ---- Transpose ------------------------------------------------------------------ */

int dt_ox_rule_transpose(ox_node *c)
{
    ox_tensor *x;
    const int64_t *p;
    int np, perm[DT_OX_MAX_RANK], rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_attr_ints(c, "perm", &p, &np)))
        return rc;
    int r = x->pub.rank;
    uint32_t seen = 0;
    if (np >= 0 && np != r)
        return dt_ox_fail(c, "perm has %d entries for rank %d", np, r);
    for (int i = 0; i < r; i++) {
        if (np < 0)
            perm[i] = r - 1 - i;
        else if (p[i] < 0 || p[i] >= r) /* no negative axes here: ONNX's perm is a
                                           permutation of 0..rank-1 */
            return dt_ox_fail(c,
                              "perm entry %lld is outside 0..%d; perm must be a permutation of "
                              "0..rank-1",
                              (long long)p[i], r - 1);
        else
            perm[i] = (int)p[i];
        if (seen & (1u << perm[i]))
            return dt_ox_fail(c, "perm is not a permutation (%d appears twice)", perm[i]);
        seen |= 1u << perm[i];
    }
    const sym *dims[DT_OX_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = x->dims[perm[i]];
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, r, dims)))
        return rc;
    if (x->pub.has_fval)
        dt_ox_set_fval(c, 0, x->pub.fval);
    if (x->nv < 0)
        return 0;
    int64_t dx[DT_OX_MAX_RANK], dout[DT_OX_MAX_RANK], co[DT_OX_MAX_RANK], ci[DT_OX_MAX_RANK];
    dt_ox_const_dims(x, dx);
    for (int i = 0; i < r; i++)
        dout[i] = dx[perm[i]];
    const sym *v[DT_OX_MAX_VALUES];
    for (int64_t i = 0; i < x->nv; i++) {
        coords(r, dout, i, co);
        for (int j = 0; j < r; j++)
            ci[perm[j]] = co[j];
        v[i] = x->vals[flat(r, dx, ci)];
    }
    return dt_ox_set_vals(c, 0, x->nv, v);
}

/* ---- Slice ---------------------------------------------------------------------- */

/* A start or end made non-negative: x itself, or x + dim when x < 0 at
 * every shape. */
static int slice_adjust(ox_node *c, const char *what, int axis, const sym *x, const sym *dim,
                        const sym **out)
{
    int64_t v;
    if (dt_ox_sym_is_const(x, &v) && (v > FAR || v < -FAR))
        x = k_(c, v > 0 ? FAR : -FAR);
    int m = dt_ox_sym_signs(c->sc, x);
    char s[128];
    if (!(m & SYM_LT))
        *out = x;
    else if (m == SYM_LT)
        *out = dt_ox_sym_add(c->sc, x, dim);
    else
        return dt_ox_fail(c,
                          "the %s of axis %d, %s, is negative (counted from the end) for some "
                          "shapes and not for others",
                          what, axis, dt_ox_str(c, x, s, sizeof s));
    return *out ? 0 : dt_ox_sym_fail(c);
}

/* x clamped into [lo, hi], which the domains must decide. */
static int slice_clamp(ox_node *c, const char *what, int axis, const sym *x, const sym *lo,
                       const sym *hi, const sym **out)
{
    char s1[128], s2[128], s3[128];
    int m = dt_ox_sym_cmp(c->sc, x, lo);
    if (!(m & SYM_GT)) {
        *out = lo;
        return 0;
    }
    if (!(m & SYM_LT)) {
        m = dt_ox_sym_cmp(c->sc, x, hi);
        if (!(m & SYM_LT)) {
            *out = hi;
            return 0;
        }
        if (!(m & SYM_GT)) {
            *out = x;
            return 0;
        }
    }
    return dt_ox_fail(c,
                      "the %s of axis %d, %s, is clamped to %s..%s for some shapes and not for "
                      "others: the variables' domains do not decide it",
                      what, axis, dt_ox_str(c, x, s1, sizeof s1), dt_ox_str(c, lo, s2, sizeof s2),
                      dt_ox_str(c, hi, s3, sizeof s3));
}

/* The length of slice start:end:step of a dim (ONNX Slice semantics),
 * and the first index it reads. */
static int slice_dim(ox_node *c, int axis, const sym *dim, const sym *start, const sym *end,
                     int64_t step, const sym **len, const sym **first)
{
    sym_ctx *sc = c->sc;
    const sym *s, *e, *lo, *hi, *span;
    char s1[128], s2[128];
    int rc;
    if ((rc = slice_adjust(c, "start", axis, start, dim, &s)) ||
        (rc = slice_adjust(c, "end", axis, end, dim, &e)))
        return rc;
    if (step > 0) {
        lo = k_(c, 0);
        hi = dim;
    } else { /* a negative step starts at most at dim-1 and ends before 0 at -1 */
        lo = k_(c, -1);
        hi = dt_ox_sym_sub(sc, dim, k_(c, 1));
    }
    if ((rc = slice_clamp(c, "start", axis, s, step > 0 ? lo : k_(c, 0), hi, &s)) ||
        (rc = slice_clamp(c, "end", axis, e, lo, hi, &e)))
        return rc;
    span = step > 0 ? dt_ox_sym_sub(sc, e, s) : dt_ox_sym_sub(sc, s, e);
    if (!span)
        return dt_ox_sym_fail(c);
    int m = dt_ox_sym_signs(sc, span);
    if (!(m & SYM_GT))
        *len = k_(c, 0);
    else if (!(m & SYM_LT))
        *len = dt_ox_sym_ceildiv(sc, span, k_(c, step > 0 ? step : -step));
    else
        return dt_ox_fail(c, "cannot tell whether the slice %s..%s of axis %d is empty or not",
                          dt_ox_str(c, s, s1, sizeof s1), dt_ox_str(c, e, s2, sizeof s2), axis);
    *first = s;
    return *len ? 0 : dt_ox_sym_fail(c);
}

static int slice_values(ox_node *c, const ox_tensor *x, const sym *const *dims,
                        const sym *const *first, const int64_t *steps)
{
    int r = x->pub.rank;
    int64_t dx[DT_OX_MAX_RANK], dout[DT_OX_MAX_RANK], f[DT_OX_MAX_RANK], n = 1;
    if (x->nv < 0)
        return 0;
    dt_ox_const_dims(x, dx);
    for (int i = 0; i < r; i++)
        if (!dt_ox_sym_is_const(dims[i], &dout[i]) || !dt_ox_sym_is_const(first[i], &f[i]))
            return 0;
        else
            n *= dout[i]; /* at most the input's count */
    const sym *v[DT_OX_MAX_VALUES];
    int64_t co[DT_OX_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        coords(r, dout, i, co);
        for (int j = 0; j < r; j++)
            co[j] = f[j] + co[j] * steps[j];
        v[i] = x->vals[flat(r, dx, co)];
    }
    return dt_ox_set_vals(c, 0, (int)n, v);
}

int dt_ox_rule_slice(ox_node *c)
{
    ox_tensor *x;
    const sym *starts[DT_OX_MAX_RANK], *ends[DT_OX_MAX_RANK];
    int64_t axes[DT_OX_MAX_RANK], steps[DT_OX_MAX_RANK];
    int ns, ne, na, nst, rc = dt_ox_need(c, 0, &x);
    if (rc)
        return rc;
    int r = x->pub.rank;
    if (dt_ox_attr_get(c, "starts")) { /* opset < 10: attributes */
        int64_t st[DT_OX_MAX_RANK], en[DT_OX_MAX_RANK];
        if ((rc = dt_ox_ints_attr_or_input(c, "starts", -1, st, DT_OX_MAX_RANK, &ns)) ||
            (rc = dt_ox_ints_attr_or_input(c, "ends", -1, en, DT_OX_MAX_RANK, &ne)) ||
            (rc = dt_ox_ints_attr_or_input(c, "axes", -1, axes, DT_OX_MAX_RANK, &na)))
            return rc;
        for (int i = 0; i < ns; i++)
            starts[i] = k_(c, st[i]);
        for (int i = 0; i < ne; i++)
            ends[i] = k_(c, en[i]);
        nst = -1;
    } else if ((rc = dt_ox_input_syms(c, 1, "starts", starts, DT_OX_MAX_RANK, &ns)) ||
               (rc = dt_ox_input_syms(c, 2, "ends", ends, DT_OX_MAX_RANK, &ne)) ||
               (rc = dt_ox_opt_input_ints(c, 3, "axes", axes, DT_OX_MAX_RANK, &na)) ||
               (rc = dt_ox_opt_input_ints(c, 4, "steps", steps, DT_OX_MAX_RANK, &nst))) {
        return rc;
    }
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return dt_ox_fail(c, "starts, ends, axes and steps have different lengths");
    const sym *dims[DT_OX_MAX_RANK], *first[DT_OX_MAX_RANK];
    int64_t step_of[DT_OX_MAX_RANK];
    uint32_t mask = 0;
    for (int i = 0; i < r; i++) {
        dims[i] = x->dims[i];
        first[i] = k_(c, 0);
        step_of[i] = 1;
    }
    for (int i = 0; i < ns; i++) {
        int a;
        if ((rc = dt_ox_axis(c, na >= 0 ? axes[i] : i, r, &a)))
            return rc;
        if (mask & (1u << a))
            return dt_ox_fail(c, "axis %d is sliced twice", a);
        mask |= 1u << a;
        step_of[a] = nst >= 0 ? steps[i] : 1;
        if (step_of[a] == 0)
            return dt_ox_fail(c, "step %d is 0", i);
        if (step_of[a] > FAR || step_of[a] < -FAR) /* as good as infinite: one element */
            step_of[a] = step_of[a] > 0 ? FAR : -FAR;
        if ((rc = slice_dim(c, a, x->dims[a], starts[i], ends[i], step_of[a], &dims[a],
                            &first[a])))
            return rc;
    }
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, r, dims)))
        return rc;
    if (x->pub.has_fval)
        dt_ox_set_fval(c, 0, x->pub.fval);
    return slice_values(c, x, dims, first, step_of);
}

/* ---- Split ---------------------------------------------------------------------- */

int dt_ox_rule_split(ox_node *c)
{
    ox_tensor *x;
    int64_t axis, split[DT_OX_MAX_IO], num;
    int a, ns, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_attr_int(c, "axis", 0, &axis)) ||
        (rc = dt_ox_attr_int(c, "num_outputs", 0, &num)) ||
        (rc = dt_ox_ints_attr_or_input(c, "split", 1, split, DT_OX_MAX_IO, &ns)))
        return rc;
    if (x->pub.rank < 1)
        return dt_ox_fail(c, "the input is a scalar");
    if ((rc = dt_ox_axis(c, axis, x->pub.rank, &a)))
        return rc;
    const sym *dim = x->dims[a], *parts[DT_OX_MAX_IO];
    char s[128];
    int n = c->nout;
    if (num > 0 && num != n)
        return dt_ox_fail(c, "num_outputs is %lld but the node has %d outputs", (long long)num, n);
    if (ns > 0) {
        int64_t sum = 0;
        if (ns != n)
            return dt_ox_fail(c, "%d split sizes for %d outputs", ns, n);
        for (int k = 0; k < n; k++) {
            if (split[k] < 0 || split[k] > OX_DIM_MAX)
                return dt_ox_fail(c, "split size %d is %lld", k, (long long)split[k]);
            sum += split[k];
            parts[k] = k_(c, split[k]);
        }
        if (!dt_ox_equal(c, k_(c, sum), dim))
            return dt_ox_fail(c, "the split sizes sum to %lld, axis %d has %s", (long long)sum, a,
                              dt_ox_str(c, dim, s, sizeof s));
    } else {
        const sym *q;
        int64_t d;
        if ((rc = dt_ox_sym_divexact(c->sc, dim, k_(c, n), &q)) < 0)
            return dt_ox_sym_fail(c);
        if (rc == 1) {
            for (int k = 0; k < n; k++)
                parts[k] = q;
        } else if (num > 0 && dt_ox_sym_is_const(dim, &d)) { /* opset 18: the last part smaller */
            int64_t chunk = (d + n - 1) / n;
            if (chunk * (n - 1) > d)
                return dt_ox_fail(c, "axis %d of size %lld cannot be split into %d parts", a,
                                  (long long)d, n);
            for (int k = 0; k < n; k++)
                parts[k] = k_(c, k < n - 1 ? chunk : d - chunk * (n - 1));
        } else {
            return dt_ox_fail(c, "axis %d of size %s is not shown to split into %d equal parts", a,
                              dt_ox_str(c, dim, s, sizeof s), n);
        }
    }
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->pub.rank * sizeof dims[0]);
    for (int k = 0; k < n; k++) {
        dims[a] = parts[k];
        if ((rc = dt_ox_set_out(c, k, x->pub.elem_type, x->pub.rank, dims)))
            return rc;
        if (x->pub.has_fval)
            dt_ox_set_fval(c, k, x->pub.fval);
    }
    if (x->nv < 0 || x->pub.rank != 1)
        return 0;
    int64_t off = 0, len;
    for (int k = 0; k < n; k++) {
        if (!dt_ox_sym_is_const(parts[k], &len))
            return 0;
        if ((rc = dt_ox_set_vals(c, k, (int)len, x->vals + off)))
            return rc;
        off += len;
    }
    return 0;
}

/* ---- Pad ------------------------------------------------------------------------ */

int dt_ox_rule_pad(ox_node *c)
{
    ox_tensor *x;
    const sym *pads[2 * DT_OX_MAX_RANK];
    int64_t axes[DT_OX_MAX_RANK], pa[2 * DT_OX_MAX_RANK];
    int np, na, rc = dt_ox_need(c, 0, &x);
    if (rc)
        return rc;
    int r = x->pub.rank;
    if (dt_ox_attr_get(c, "pads")) { /* opset < 11 */
        if ((rc = dt_ox_ints_attr_or_input(c, "pads", -1, pa, 2 * DT_OX_MAX_RANK, &np)))
            return rc;
        for (int i = 0; i < np; i++)
            pads[i] = k_(c, pa[i]);
    } else if ((rc = dt_ox_input_syms(c, 1, "pads", pads, 2 * DT_OX_MAX_RANK, &np))) {
        return rc;
    }
    if ((rc = dt_ox_opt_input_ints(c, 3, "axes", axes, DT_OX_MAX_RANK, &na)))
        return rc;
    if (na < 0)
        for (na = 0; na < r; na++)
            axes[na] = na;
    if (np != 2 * na)
        return dt_ox_fail(c, "%d pads for %d axes", np, na);
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, x->dims, (size_t)r * sizeof dims[0]);
    uint32_t mask;
    if ((rc = dt_ox_axes(c, axes, na, r, &mask)))
        return rc;
    for (int i = 0; i < na; i++) {
        int a;
        dt_ox_axis(c, axes[i], r, &a);
        dims[a] = dt_ox_sym_add(c->sc, dt_ox_sym_add(c->sc, dims[a], pads[i]), pads[i + na]);
    }
    return dt_ox_set_out(c, 0, x->pub.elem_type, r, dims);
}
