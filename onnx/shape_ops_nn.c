/* Shape rules of the network ops: matrix products (numpy matmul, Gemm),
 * convolutions and pooling (NCHW, explicit or automatic padding, ceil
 * mode), normalisations, reductions. */
#include <string.h>

#include "onnx/shape_ops.h"

static int is(const ox_node *c, const char *op)
{
    return strcmp(c->n->op_type, op) == 0;
}

static const sym *k_(ox_node *c, int64_t v)
{
    return dt_ox_sym_const(c->sc, v);
}

static int need_rank(ox_node *c, const ox_tensor *t, const char *what, int lo)
{
    if (t->pub.rank < lo)
        return dt_ox_fail(c, "%s ('%s') has rank %d, at least %d is needed", what, t->pub.name,
                          t->pub.rank, lo);
    return 0;
}

static int dims_differ(ox_node *c, const char *what, const sym *a, const sym *b)
{
    char s1[128], s2[128];
    return dt_ox_fail(c, "%s differ: %s vs %s", what, dt_ox_str(c, a, s1, sizeof s1),
                      dt_ox_str(c, b, s2, sizeof s2));
}

/* ---- MatMul, Gemm --------------------------------------------------------------- */

int dt_ox_rule_matmul(ox_node *c)
{
    int ia = 0, ib = 1, rc, type = 0;
    ox_tensor *a, *b;
    if (is(c, "QLinearMatMul")) { /* a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp */
        ox_tensor *yzp;
        ib = 3;
        if ((rc = dt_ox_need(c, 7, &yzp)))
            return rc;
        type = yzp->pub.elem_type;
    }
    if ((rc = dt_ox_need(c, ia, &a)) || (rc = dt_ox_need(c, ib, &b)) ||
        (rc = need_rank(c, a, "A", 1)) || (rc = need_rank(c, b, "B", 1)))
        return rc;
    if (is(c, "MatMulInteger"))
        type = DT_OX_INT32;
    else if (!is(c, "QLinearMatMul"))
        type = a->pub.elem_type;
    int ra = a->pub.rank, rb = b->pub.rank;
    const sym *ka = a->dims[ra - 1], *kb = b->dims[rb == 1 ? 0 : rb - 2];
    if (!dt_ox_equal(c, ka, kb))
        return dims_differ(c, "the inner dims of A and B", ka, kb);
    const sym *dims[DT_OX_MAX_RANK + 2];
    int r;
    if ((rc = dt_ox_broadcast(c, ra > 2 ? ra - 2 : 0, a->dims, rb > 2 ? rb - 2 : 0, b->dims, &r,
                              dims)))
        return rc;
    if (ra >= 2)
        dims[r++] = a->dims[ra - 2];
    if (rb >= 2)
        dims[r++] = b->dims[rb - 1];
    return dt_ox_set_out(c, 0, type, r, dims);
}

int dt_ox_rule_gemm(ox_node *c)
{
    ox_tensor *a, *b, *y = c->nin > 2 ? c->in[2] : NULL;
    int64_t ta, tb;
    int rc;
    if ((rc = dt_ox_need(c, 0, &a)) || (rc = dt_ox_need(c, 1, &b)) ||
        (rc = dt_ox_attr_int(c, "transA", 0, &ta)) || (rc = dt_ox_attr_int(c, "transB", 0, &tb)))
        return rc;
    if (a->pub.rank != 2 || b->pub.rank != 2)
        return dt_ox_fail(c, "A and B must have rank 2 (they have %d and %d)", a->pub.rank,
                          b->pub.rank);
    const sym *dims[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
    const sym *ka = a->dims[ta ? 0 : 1], *kb = b->dims[tb ? 1 : 0];
    if (!dt_ox_equal(c, ka, kb))
        return dims_differ(c, "the inner dims of A and B", ka, kb);
    if (y) { /* C broadcasts to [M, N], one way */
        const sym *bc[2];
        int r;
        if (y->pub.rank > 2)
            return dt_ox_fail(c, "C has rank %d", y->pub.rank);
        if ((rc = dt_ox_broadcast(c, 2, dims, y->pub.rank, y->dims, &r, bc)))
            return rc;
        if (!dt_ox_equal(c, bc[0], dims[0]) || !dt_ox_equal(c, bc[1], dims[1]))
            return dt_ox_fail(c, "C does not broadcast to the result");
    }
    return dt_ox_set_out(c, 0, a->pub.elem_type, 2, dims);
}

/* ---- windows: Conv, pooling ----------------------------------------------------- */

typedef struct {
    int n; /* spatial dims */
    int64_t k[DT_OX_MAX_RANK], s[DT_OX_MAX_RANK], d[DT_OX_MAX_RANK], pads[2 * DT_OX_MAX_RANK];
    const char *auto_pad;
    int64_t ceil_mode;
} window;

/* An INTS attribute of n values (each >= min), or n times def. */
static int window_ints(ox_node *c, const char *name, int n, int64_t def, int64_t min, int64_t *v)
{
    const int64_t *a;
    int na, rc = dt_ox_attr_ints(c, name, &a, &na);
    if (rc)
        return rc;
    if (na >= 0 && na != n)
        return dt_ox_fail(c, "attribute '%s' has %d values, %d are needed", name, na, n);
    for (int i = 0; i < n; i++) {
        v[i] = na >= 0 ? a[i] : def;
        if (v[i] < min || v[i] > OX_DIM_MAX)
            return dt_ox_fail(c, "attribute '%s' has the value %lld", name, (long long)v[i]);
    }
    return 0;
}

/* kernel: the weight's spatial dims (Conv), NULL for pooling. */
static int read_window(ox_node *c, int n, const sym *const *kernel, window *w)
{
    int rc;
    w->n = n;
    if (!dt_ox_attr_get(c, "kernel_shape") && kernel) {
        for (int i = 0; i < n; i++)
            if (!dt_ox_sym_is_const(kernel[i], &w->k[i]) || w->k[i] < 1)
                return dt_ox_fail(c, "the weight's kernel dims are not constants >= 1");
    } else if (!dt_ox_attr_get(c, "kernel_shape")) {
        return dt_ox_fail(c, "attribute 'kernel_shape' is missing");
    } else if ((rc = window_ints(c, "kernel_shape", n, 1, 1, w->k))) {
        return rc;
    }
    if ((rc = window_ints(c, "strides", n, 1, 1, w->s)) ||
        (rc = window_ints(c, "dilations", n, 1, 1, w->d)) ||
        (rc = window_ints(c, "pads", 2 * n, 0, 0, w->pads)) ||
        (rc = dt_ox_attr_str(c, "auto_pad", "NOTSET", &w->auto_pad)) ||
        (rc = dt_ox_attr_int(c, "ceil_mode", 0, &w->ceil_mode)))
        return rc;
    static const char *const pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(w->auto_pad, pads[i]) == 0)
            return 0;
    return dt_ox_fail(c, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                      w->auto_pad);
}

/* Output size of spatial dim i for input size in. */
static int window_out(ox_node *c, const window *w, int i, const sym *in, const sym **out)
{
    sym_ctx *sc = c->sc;
    const sym *s = k_(c, w->s[i]), *one = k_(c, 1);
    int64_t ek = w->d[i] * (w->k[i] - 1) + 1; /* the dilated kernel; both <= 2^40 */
    if (strncmp(w->auto_pad, "SAME", 4) == 0) {
        *out = dt_ox_sym_ceildiv(sc, in, s);
        return *out ? 0 : dt_ox_sym_fail(c);
    }
    int valid = strcmp(w->auto_pad, "VALID") == 0;
    int64_t pb = valid ? 0 : w->pads[i], pe = valid ? 0 : w->pads[w->n + i];
    const sym *num = dt_ox_sym_sub(sc, dt_ox_sym_add(sc, in, k_(c, pb + pe)), k_(c, ek));
    if (!w->ceil_mode || valid) {
        *out = dt_ox_sym_add(sc, dt_ox_sym_floordiv(sc, num, s), one);
        return *out ? 0 : dt_ox_sym_fail(c);
    }
    /* ceil mode; a last window that would start in the end padding is dropped */
    const sym *o = dt_ox_sym_add(sc, dt_ox_sym_ceildiv(sc, num, s), one);
    const sym *start = dt_ox_sym_mul(sc, dt_ox_sym_sub(sc, o, one), s),
              *limit = dt_ox_sym_add(sc, in, k_(c, pb));
    if (!start || !limit)
        return dt_ox_sym_fail(c);
    int m = dt_ox_sym_cmp(sc, start, limit);
    char buf[128];
    if (m & SYM_LT && m & (SYM_EQ | SYM_GT))
        return dt_ox_fail(c,
                          "ceil_mode: whether the last window of spatial dim %d (size %s) starts "
                          "in the padding depends on the shape",
                          i, dt_ox_str(c, in, buf, sizeof buf));
    *out = (m & SYM_LT) ? o : dt_ox_sym_sub(sc, o, one);
    return *out ? 0 : dt_ox_sym_fail(c);
}

int dt_ox_rule_conv(ox_node *c)
{
    int iw = 1, rc, type = 0;
    ox_tensor *x, *w;
    if (is(c, "QLinearConv")) { /* x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B */
        ox_tensor *yzp;
        iw = 3;
        if ((rc = dt_ox_need(c, 7, &yzp)))
            return rc;
        type = yzp->pub.elem_type;
    }
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = dt_ox_need(c, iw, &w)) ||
        (rc = need_rank(c, x, "the input", 3)))
        return rc;
    if (is(c, "ConvInteger"))
        type = DT_OX_INT32;
    else if (!is(c, "QLinearConv"))
        type = x->pub.elem_type;
    int r = x->pub.rank;
    if (w->pub.rank != r)
        return dt_ox_fail(c, "the weight has rank %d, the input %d", w->pub.rank, r);
    int64_t group;
    window win;
    if ((rc = dt_ox_attr_int(c, "group", 1, &group)) ||
        (rc = read_window(c, r - 2, w->dims + 2, &win)))
        return rc;
    if (group < 1 || group > OX_DIM_MAX)
        return dt_ox_fail(c, "group is %lld", (long long)group);
    const sym *cin = dt_ox_sym_mul(c->sc, w->dims[1], k_(c, group));
    if (!dt_ox_equal(c, x->dims[1], cin))
        return dims_differ(c, "the input's channels and the weight's (times group)", x->dims[1],
                           cin);
    const sym *dims[DT_OX_MAX_RANK] = {x->dims[0], w->dims[0]};
    for (int i = 0; i < r - 2; i++)
        if ((rc = window_out(c, &win, i, x->dims[2 + i], &dims[2 + i])))
            return rc;
    return dt_ox_set_out(c, 0, type, r, dims);
}

int dt_ox_rule_conv_transpose(ox_node *c)
{
    ox_tensor *x, *w;
    int64_t group, outpad[DT_OX_MAX_RANK];
    window win;
    int rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = dt_ox_need(c, 1, &w)) ||
        (rc = need_rank(c, x, "the input", 3)) || (rc = dt_ox_attr_int(c, "group", 1, &group)))
        return rc;
    int r = x->pub.rank, n = r - 2;
    if (w->pub.rank != r)
        return dt_ox_fail(c, "the weight has rank %d, the input %d", w->pub.rank, r);
    if (group < 1 || group > OX_DIM_MAX)
        return dt_ox_fail(c, "group is %lld", (long long)group);
    if ((rc = read_window(c, n, w->dims + 2, &win)) ||
        (rc = window_ints(c, "output_padding", n, 0, 0, outpad)))
        return rc;
    if (!dt_ox_equal(c, x->dims[1], w->dims[0]))
        return dims_differ(c, "the input's channels and the weight's", x->dims[1], w->dims[0]);
    const sym *dims[DT_OX_MAX_RANK] = {x->dims[0], dt_ox_sym_mul(c->sc, w->dims[1], k_(c, group))};
    const int64_t *os;
    int nos;
    if ((rc = dt_ox_attr_ints(c, "output_shape", &os, &nos)))
        return rc;
    if (nos >= 0 && nos != n)
        return dt_ox_fail(c, "output_shape has %d values for %d spatial dims", nos, n);
    for (int i = 0; i < n; i++) {
        const sym *in = x->dims[2 + i], *s = k_(c, win.s[i]);
        int64_t ek = win.d[i] * (win.k[i] - 1) + 1;
        if (nos >= 0)
            dims[2 + i] = k_(c, os[i]);
        else if (strncmp(win.auto_pad, "SAME", 4) == 0)
            dims[2 + i] = dt_ox_sym_mul(c->sc, in, s);
        else { /* s*(in-1) + output_padding + ek - pads */
            int valid = strcmp(win.auto_pad, "VALID") == 0;
            int64_t p = valid ? 0 : win.pads[i] + win.pads[n + i];
            dims[2 + i] =
                dt_ox_sym_add(c->sc, dt_ox_sym_mul(c->sc, dt_ox_sym_sub(c->sc, in, k_(c, 1)), s),
                              k_(c, outpad[i] + ek - p));
        }
    }
    return dt_ox_set_out(c, 0, x->pub.elem_type, r, dims);
}

int dt_ox_rule_pool(ox_node *c)
{
    ox_tensor *x;
    window win;
    int rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = need_rank(c, x, "the input", 3)) ||
        (rc = read_window(c, x->pub.rank - 2, NULL, &win)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < win.n; i++)
        if ((rc = window_out(c, &win, i, x->dims[2 + i], &dims[2 + i])))
            return rc;
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, x->pub.rank, dims)))
        return rc;
    return dt_ox_set_out(c, 1, DT_OX_INT64, x->pub.rank, dims); /* MaxPool's indices */
}

int dt_ox_rule_global_pool(ox_node *c)
{
    ox_tensor *x;
    int rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = need_rank(c, x, "the input", 3)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 2; i < x->pub.rank; i++)
        dims[i] = k_(c, 1);
    return dt_ox_set_out(c, 0, x->pub.elem_type, x->pub.rank, dims);
}

/* ---- normalisation ---------------------------------------------------------------- */

int dt_ox_rule_layer_norm(ox_node *c)
{
    ox_tensor *x;
    int64_t axis, stash;
    int a, rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = need_rank(c, x, "the input", 1)) ||
        (rc = dt_ox_attr_int(c, "axis", -1, &axis)) ||
        (rc = dt_ox_attr_int(c, "stash_type", 1, &stash)) ||
        (rc = dt_ox_axis(c, axis, x->pub.rank, &a)) || (rc = dt_ox_same_shape(c, 0, x)))
        return rc;
    /* Mean and InvStdDev: the normalised axes kept as 1s */
    const sym *dims[DT_OX_MAX_RANK];
    for (int i = 0; i < x->pub.rank; i++)
        dims[i] = i < a ? x->dims[i] : k_(c, 1);
    if ((rc = dt_ox_set_out(c, 1, (int)stash, x->pub.rank, dims)))
        return rc;
    return dt_ox_set_out(c, 2, (int)stash, x->pub.rank, dims);
}

int dt_ox_rule_skip_layer_norm(ox_node *c)
{
    ox_tensor *x, *skip;
    int rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = dt_ox_need(c, 1, &skip)) ||
        (rc = need_rank(c, x, "the input", 1)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK];
    int r;
    if ((rc = dt_ox_broadcast(c, x->pub.rank, x->dims, skip->pub.rank, skip->dims, &r, dims)) ||
        (rc = dt_ox_set_out(c, 0, x->pub.elem_type, r, dims)) ||
        (rc = dt_ox_set_out(c, 3, x->pub.elem_type, r, dims)))
        return rc;
    dims[r - 1] = k_(c, 1);
    if ((rc = dt_ox_set_out(c, 1, DT_OX_FLOAT, r, dims)))
        return rc;
    return dt_ox_set_out(c, 2, DT_OX_FLOAT, r, dims);
}

int dt_ox_rule_batch_norm(ox_node *c)
{
    ox_tensor *x;
    int rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = need_rank(c, x, "the input", 2)) ||
        (rc = dt_ox_same_shape(c, 0, x)))
        return rc;
    /* training outputs: running mean and var, then (opset < 14) saved mean and var */
    for (int k = 1; k < c->nout && k <= 4; k++) {
        int from = k <= 2 ? k + 2 : 1;
        ox_tensor *t;
        if (c->out[k] && ((rc = dt_ox_need(c, from, &t)) || (rc = dt_ox_same_shape(c, k, t))))
            return rc;
    }
    return 0;
}

/* ---- reductions --------------------------------------------------------------------- */

/* A reduction to one element of a known integer tensor: its value. */
static const sym *reduce_all(ox_node *c, const ox_tensor *x)
{
    if (x->nv < 1)
        return NULL;
    const sym *acc = x->vals[0];
    for (int i = 1; i < x->nv && acc; i++) {
        const sym *v = x->vals[i];
        int m;
        if (is(c, "ReduceSum"))
            acc = dt_ox_sym_add(c->sc, acc, v);
        else if (is(c, "ReduceProd"))
            acc = dt_ox_sym_mul(c->sc, acc, v);
        else if (is(c, "ReduceMax") || is(c, "ReduceMin")) {
            m = dt_ox_sym_cmp(c->sc, acc, v);
            int keep = is(c, "ReduceMax") ? !(m & SYM_LT) : !(m & SYM_GT);
            int take = is(c, "ReduceMax") ? !(m & SYM_GT) : !(m & SYM_LT);
            acc = keep ? acc : take ? v : NULL;
        } else
            acc = NULL;
    }
    return acc;
}

int dt_ox_rule_reduce(ox_node *c)
{
    ox_tensor *x;
    int64_t axes[DT_OX_MAX_RANK], keep, noop;
    int n, rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = dt_ox_attr_int(c, "keepdims", 1, &keep)) ||
        (rc = dt_ox_attr_int(c, "noop_with_empty_axes", 0, &noop)) ||
        (rc = dt_ox_ints_attr_or_input(c, "axes", 1, axes, DT_OX_MAX_RANK, &n)))
        return rc;
    int r = x->pub.rank;
    uint32_t mask = r ? (uint32_t)((1ull << r) - 1) : 0;
    if (n <= 0 && noop)
        return (rc = dt_ox_same_shape(c, 0, x)) ? rc : dt_ox_pass_values(c, 0, x);
    if (n > 0 && (rc = dt_ox_axes(c, axes, n, r, &mask)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK];
    int ro = 0;
    for (int i = 0; i < r; i++)
        if (!(mask & (1u << i)))
            dims[ro++] = x->dims[i];
        else if (keep)
            dims[ro++] = k_(c, 1);
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, ro, dims)))
        return rc;
    if (x->pub.has_fval && (is(c, "ReduceMean") || is(c, "ReduceMax") || is(c, "ReduceMin")))
        dt_ox_set_fval(c, 0, x->pub.fval);
    if (mask != (r ? (uint32_t)((1ull << r) - 1) : 0))
        return 0;
    const sym *v = reduce_all(c, x);
    return dt_ox_set_vals(c, 0, 1, &v);
}

int dt_ox_rule_arg_reduce(ox_node *c)
{
    ox_tensor *x;
    int64_t axis, keep;
    int a, rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = need_rank(c, x, "the input", 1)) ||
        (rc = dt_ox_attr_int(c, "axis", 0, &axis)) ||
        (rc = dt_ox_attr_int(c, "keepdims", 1, &keep)) ||
        (rc = dt_ox_axis(c, axis, x->pub.rank, &a)))
        return rc;
    const sym *dims[DT_OX_MAX_RANK];
    int ro = 0;
    for (int i = 0; i < x->pub.rank; i++)
        if (i != a)
            dims[ro++] = x->dims[i];
        else if (keep)
            dims[ro++] = k_(c, 1);
    return dt_ox_set_out(c, 0, DT_OX_INT64, ro, dims);
}

int dt_ox_rule_topk(ox_node *c)
{
    ox_tensor *x;
    int64_t axis, kattr;
    const sym *k;
    int a, n, rc;
    if ((rc = dt_ox_need(c, 0, &x)) || (rc = need_rank(c, x, "the input", 1)) ||
        (rc = dt_ox_attr_int(c, "axis", -1, &axis)) ||
        (rc = dt_ox_axis(c, axis, x->pub.rank, &a)) || (rc = dt_ox_attr_int(c, "k", -1, &kattr)))
        return rc;
    if (c->nin > 1 && c->in[1]) {
        if ((rc = dt_ox_input_syms(c, 1, "K", &k, 1, &n)))
            return rc;
    } else if (kattr >= 0) {
        k = k_(c, kattr);
    } else {
        return dt_ox_fail(c, "K is missing");
    }
    if (dt_ox_sym_cmp(c->sc, k, x->dims[a]) & SYM_GT) {
        char s1[128], s2[128];
        return dt_ox_fail(c, "K = %s may exceed axis %d of size %s", dt_ox_str(c, k, s1, sizeof s1),
                          a, dt_ox_str(c, x->dims[a], s2, sizeof s2));
    }
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->pub.rank * sizeof dims[0]);
    dims[a] = k;
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, x->pub.rank, dims)))
        return rc;
    return dt_ox_set_out(c, 1, DT_OX_INT64, x->pub.rank, dims);
}
