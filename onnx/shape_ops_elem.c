/* Shape rules of elementwise ops, casts and quantization: shapes by numpy
 * broadcasting; integer values by symbolic arithmetic (the shape
 * arithmetic of PyTorch exports); all-equal float values for the scalar
 * constants of patterns (0.5, 1, sqrt(2)). */
#include <math.h>
#include <string.h>

#include "onnx/shape_ops.h"

static int is(const ox_node *c, const char *op)
{
    return strcmp(c->n->op_type, op) == 0;
}

static int is_any(const ox_node *c, const char *const *ops)
{
    for (; *ops; ops++)
        if (is(c, *ops))
            return 1;
    return 0;
}

static const char *const comparisons[] = {"Equal", "Less", "Greater", "LessOrEqual",
                                          "GreaterOrEqual", NULL};
static const char *const logicals[] = {"And", "Or", "Xor", NULL};

/* 0 or 1 when v's truth is decided over every shape, else -1. */
static int truth(sym_ctx *sc, const sym *v)
{
    int m = dt_ox_sym_signs(sc, v);
    return m == SYM_EQ ? 0 : !(m & SYM_EQ) ? 1 : -1;
}

static const sym *bool_sym(sym_ctx *sc, int b)
{
    return b < 0 ? NULL : dt_ox_sym_const(sc, b);
}

/* ONNX integer Div truncates; floor division agrees where the signs allow. */
static const sym *int_div(sym_ctx *sc, const sym *a, const sym *b)
{
    int64_t x, y;
    if (dt_ox_sym_is_const(b, &y) && y == 0)
        return NULL;
    if (dt_ox_sym_is_const(a, &x) && dt_ox_sym_is_const(b, &y))
        return (x == INT64_MIN && y == -1) ? NULL : dt_ox_sym_const(sc, x / y);
    int sa = dt_ox_sym_signs(sc, a), sb = dt_ox_sym_signs(sc, b);
    if (sb == SYM_GT && !(sa & SYM_LT))
        return dt_ox_sym_floordiv(sc, a, b);
    if (sb == SYM_GT && !(sa & SYM_GT)) { /* a <= 0: trunc(a/b) = -floor(-a/b) */
        const sym *z = dt_ox_sym_const(sc, 0);
        return dt_ox_sym_sub(sc, z, dt_ox_sym_floordiv(sc, dt_ox_sym_sub(sc, z, a), b));
    }
    return NULL;
}

static const sym *int_mod(sym_ctx *sc, const sym *a, const sym *b, int64_t fmod)
{
    int64_t x, y;
    if (dt_ox_sym_is_const(b, &y) && y == 0)
        return NULL;
    if (!fmod) /* the sign of the divisor: a - b*floor(a/b) */
        return dt_ox_sym_mod(sc, a, b);
    if (dt_ox_sym_is_const(a, &x) && dt_ox_sym_is_const(b, &y))
        return dt_ox_sym_const(sc, y == -1 ? 0 : x % y);
    if (dt_ox_sym_signs(sc, b) == SYM_GT && !(dt_ox_sym_signs(sc, a) & SYM_LT))
        return dt_ox_sym_mod(sc, a, b);
    return NULL;
}

/* One element of a binary op on integers; NULL when not known. */
static const sym *int_binop(ox_node *c, const sym *a, const sym *b, int64_t fmod)
{
    sym_ctx *sc = c->sc;
    int64_t y;
    int m;
    if (is(c, "Add") || is(c, "Sum"))
        return dt_ox_sym_add(sc, a, b);
    if (is(c, "Sub"))
        return dt_ox_sym_sub(sc, a, b);
    if (is(c, "Mul"))
        return dt_ox_sym_mul(sc, a, b);
    if (is(c, "Div"))
        return int_div(sc, a, b);
    if (is(c, "Mod"))
        return int_mod(sc, a, b, fmod);
    if (is(c, "Max") || is(c, "Min")) {
        m = dt_ox_sym_cmp(sc, a, b);
        int a_wins = is(c, "Max") ? !(m & SYM_LT) : !(m & SYM_GT);
        int b_wins = is(c, "Max") ? !(m & SYM_GT) : !(m & SYM_LT);
        return a_wins ? a : b_wins ? b : NULL;
    }
    if (is(c, "Pow")) {
        if (!dt_ox_sym_is_const(b, &y) || y < 0 || y > 8)
            return NULL;
        const sym *p = dt_ox_sym_const(sc, 1);
        for (int64_t i = 0; i < y; i++)
            p = dt_ox_sym_mul(sc, p, a);
        return p;
    }
    if (is_any(c, comparisons)) {
        m = dt_ox_sym_cmp(sc, a, b);
        int yes = 0, no = 0;
        if (is(c, "Equal")) {
            yes = SYM_EQ;
            no = SYM_LT | SYM_GT;
        } else if (is(c, "Less")) {
            yes = SYM_LT;
            no = SYM_EQ | SYM_GT;
        } else if (is(c, "LessOrEqual")) {
            yes = SYM_LT | SYM_EQ;
            no = SYM_GT;
        } else if (is(c, "Greater")) {
            yes = SYM_GT;
            no = SYM_LT | SYM_EQ;
        } else {
            yes = SYM_GT | SYM_EQ;
            no = SYM_LT;
        }
        return bool_sym(sc, !(m & no) ? 1 : !(m & yes) ? 0 : -1);
    }
    if (is_any(c, logicals)) {
        int ta = truth(sc, a), tb = truth(sc, b);
        if (is(c, "And"))
            return bool_sym(sc, (ta == 0 || tb == 0) ? 0 : (ta < 0 || tb < 0) ? -1 : 1);
        if (is(c, "Or"))
            return bool_sym(sc, (ta == 1 || tb == 1) ? 1 : (ta < 0 || tb < 0) ? -1 : 0);
        return bool_sym(sc, (ta < 0 || tb < 0) ? -1 : ta != tb);
    }
    return NULL;
}

/* Constant dims of a result and its element count, if small enough. */
static int small_dims(int r, const sym *const *dims, int64_t *d, int64_t *n)
{
    *n = 1;
    for (int i = 0; i < r; i++)
        if (!dt_ox_sym_is_const(dims[i], &d[i]) || __builtin_mul_overflow(*n, d[i], n) ||
            *n > DT_OX_MAX_VALUES)
            return 0;
    return 1;
}

static int elementwise_values(ox_node *c, int r, const sym *const *dims)
{
    int64_t dout[DT_OX_MAX_RANK], nout, fmod;
    if (!small_dims(r, dims, dout, &nout) || dt_ox_attr_int(c, "fmod", 0, &fmod))
        return 0;
    const sym *acc[DT_OX_MAX_VALUES];
    int64_t map[DT_OX_MAX_VALUES];
    for (int k = 0; k < c->nin; k++) {
        const ox_tensor *t = c->in[k];
        int64_t dt[DT_OX_MAX_RANK];
        if (t->nv < 0 || !dt_ox_const_dims(t, dt))
            return 0;
        dt_ox_bcast_map(r, dout, t->pub.rank, dt, nout, map);
        for (int64_t i = 0; i < nout; i++)
            acc[i] = k == 0 ? t->vals[map[i]] : int_binop(c, acc[i], t->vals[map[i]], fmod);
    }
    return dt_ox_set_vals(c, 0, (int)nout, acc);
}

static void elementwise_fval(ox_node *c)
{
    double v = 0;
    for (int k = 0; k < c->nin; k++) {
        if (!c->in[k]->pub.has_fval)
            return;
        double x = c->in[k]->pub.fval;
        if (k == 0)
            v = x;
        else if (is(c, "Add") || is(c, "Sum") || is(c, "Mean"))
            v += x;
        else if (is(c, "Sub"))
            v -= x;
        else if (is(c, "Mul"))
            v *= x;
        else if (is(c, "Div"))
            v /= x;
        else if (is(c, "Pow"))
            v = pow(v, x);
        else if (is(c, "Max"))
            v = x > v ? x : v;
        else if (is(c, "Min"))
            v = x < v ? x : v;
        else
            return;
    }
    if (is(c, "Mean"))
        v /= c->nin;
    dt_ox_set_fval(c, 0, v);
}

int dt_ox_rule_elementwise(ox_node *c)
{
    const sym *dims[DT_OX_MAX_RANK];
    int r = 0, rc;
    if (c->nin < 1)
        return dt_ox_fail(c, "no inputs");
    for (int k = 0; k < c->nin; k++) {
        ox_tensor *t;
        if ((rc = dt_ox_need(c, k, &t)))
            return rc;
        if (k == 0) {
            r = t->pub.rank;
            memcpy(dims, t->dims, (size_t)r * sizeof dims[0]);
        } else if ((rc = dt_ox_broadcast(c, r, dims, t->pub.rank, t->dims, &r, dims))) {
            return rc;
        }
    }
    int type =
        (is_any(c, comparisons) || is_any(c, logicals)) ? DT_OX_BOOL : c->in[0]->pub.elem_type;
    if ((rc = dt_ox_set_out(c, 0, type, r, dims)))
        return rc;
    elementwise_fval(c);
    return elementwise_values(c, r, dims);
}

int dt_ox_rule_where(ox_node *c)
{
    ox_tensor *t[3];
    const sym *dims[DT_OX_MAX_RANK];
    int r, rc;
    for (int k = 0; k < 3; k++)
        if ((rc = dt_ox_need(c, k, &t[k])))
            return rc;
    if ((rc = dt_ox_broadcast(c, t[0]->pub.rank, t[0]->dims, t[1]->pub.rank, t[1]->dims, &r,
                              dims)) ||
        (rc = dt_ox_broadcast(c, r, dims, t[2]->pub.rank, t[2]->dims, &r, dims)) ||
        (rc = dt_ox_set_out(c, 0, t[1]->pub.elem_type, r, dims)))
        return rc;
    if (t[1]->pub.has_fval && t[2]->pub.has_fval && t[1]->pub.fval == t[2]->pub.fval)
        dt_ox_set_fval(c, 0, t[1]->pub.fval);
    int64_t dout[DT_OX_MAX_RANK], nout;
    if (!small_dims(r, dims, dout, &nout))
        return 0;
    const sym *out[DT_OX_MAX_VALUES];
    int64_t map[3][DT_OX_MAX_VALUES];
    for (int k = 0; k < 3; k++) {
        int64_t dt[DT_OX_MAX_RANK];
        if (t[k]->nv < 0 || !dt_ox_const_dims(t[k], dt))
            return 0;
        dt_ox_bcast_map(r, dout, t[k]->pub.rank, dt, nout, map[k]);
    }
    for (int64_t i = 0; i < nout; i++) {
        int b = truth(c->sc, t[0]->vals[map[0][i]]);
        if (b < 0)
            return 0;
        out[i] = b ? t[1]->vals[map[1][i]] : t[2]->vals[map[2][i]];
    }
    return dt_ox_set_vals(c, 0, (int)nout, out);
}

static int softmax_axis(ox_node *c, const ox_tensor *x)
{
    int64_t axis;
    int a, rc = dt_ox_attr_int(c, "axis", c->g->opset >= 13 ? -1 : 1, &axis);
    if (rc)
        return rc;
    if (x->pub.rank < 1)
        return dt_ox_fail(c, "input is a scalar");
    return dt_ox_axis(c, axis, x->pub.rank, &a);
}

/* Unary integer value (Neg, Abs, Not); NULL when not known. */
static const sym *int_unop(ox_node *c, const sym *v)
{
    sym_ctx *sc = c->sc;
    if (is(c, "Neg"))
        return dt_ox_sym_sub(sc, dt_ox_sym_const(sc, 0), v);
    if (is(c, "Abs")) {
        int m = dt_ox_sym_signs(sc, v);
        return !(m & SYM_LT)   ? v
               : !(m & SYM_GT) ? dt_ox_sym_sub(sc, dt_ox_sym_const(sc, 0), v)
                               : NULL;
    }
    if (is(c, "Not")) {
        int b = truth(sc, v);
        return bool_sym(sc, b < 0 ? -1 : !b);
    }
    return NULL;
}

static void unary_fval(ox_node *c, double x)
{
    static const struct {
        const char *op;
        double (*fn)(double);
    } fns[] = {{"Sqrt", sqrt}, {"Exp", exp},   {"Log", log},   {"Erf", erf},
               {"Tanh", tanh}, {"Floor", floor}, {"Ceil", ceil}, {"Abs", fabs}};
    if (is(c, "Identity") || is(c, "Dropout"))
        dt_ox_set_fval(c, 0, x);
    else if (is(c, "Neg"))
        dt_ox_set_fval(c, 0, -x);
    else if (is(c, "Reciprocal"))
        dt_ox_set_fval(c, 0, 1 / x);
    else if (is(c, "Relu"))
        dt_ox_set_fval(c, 0, x > 0 ? x : 0);
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (is(c, fns[i].op))
            dt_ox_set_fval(c, 0, fns[i].fn(x));
}

int dt_ox_rule_unary(ox_node *c)
{
    static const char *const to_bool[] = {"Not", "IsNaN", "IsInf", NULL};
    static const char *const softmaxes[] = {"Softmax", "LogSoftmax", "Hardmax", NULL};
    ox_tensor *x;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (is_any(c, softmaxes) && (rc = softmax_axis(c, x))))
        return rc;
    if ((rc = dt_ox_set_out(c, 0, is_any(c, to_bool) ? DT_OX_BOOL : x->pub.elem_type, x->pub.rank,
                            x->dims)))
        return rc;
    if (is(c, "Dropout") && (rc = dt_ox_set_out(c, 1, DT_OX_BOOL, x->pub.rank, x->dims)))
        return rc; /* the mask */
    if (x->pub.has_fval)
        unary_fval(c, x->pub.fval);
    if (x->nv < 0)
        return 0;
    if (is(c, "Identity") || is(c, "Dropout"))
        return dt_ox_set_vals(c, 0, x->nv, x->vals);
    const sym *v[DT_OX_MAX_VALUES];
    for (int i = 0; i < x->nv; i++)
        if (!(v[i] = int_unop(c, x->vals[i])))
            return 0;
    return dt_ox_set_vals(c, 0, x->nv, v);
}

int dt_ox_rule_cast(ox_node *c)
{
    ox_tensor *x;
    int64_t to;
    int rc = dt_ox_need(c, 0, &x);
    if (rc)
        return rc;
    if (is(c, "CastLike")) {
        ox_tensor *like;
        if ((rc = dt_ox_need(c, 1, &like)))
            return rc;
        to = like->pub.elem_type;
    } else if ((rc = dt_ox_attr_int(c, "to", -1, &to))) {
        return rc;
    } else if (to < 0 || !dt_ox_attr_get(c, "to")) {
        return dt_ox_fail(c, "attribute 'to' is missing");
    }
    if ((rc = dt_ox_set_out(c, 0, (int)to, x->pub.rank, x->dims)))
        return rc;
    int64_t iv;
    const sym *v[DT_OX_MAX_VALUES];
    if (x->nv >= 0 && dt_ox_is_int_type((int)to)) {
        for (int i = 0; i < x->nv; i++)
            if (!(v[i] = to == DT_OX_BOOL ? bool_sym(c->sc, truth(c->sc, x->vals[i])) : x->vals[i]))
                return 0;
        return dt_ox_set_vals(c, 0, x->nv, v);
    }
    if (x->nv > 0 && dt_ox_is_float_type((int)to)) {
        for (int i = 0; i < x->nv; i++)
            if (x->vals[i] != x->vals[0] || !dt_ox_sym_is_const(x->vals[i], &iv))
                return 0;
        dt_ox_set_fval(c, 0, (double)iv);
        return 0;
    }
    if (x->pub.has_fval) {
        double f = x->pub.fval;
        dt_ox_set_fval(c, 0, f);
        int64_t d[DT_OX_MAX_RANK], n;
        if (!dt_ox_is_int_type((int)to) || !isfinite(f) || fabs(f) > 0x1p62 ||
            !small_dims(x->pub.rank, x->dims, d, &n))
            return 0;
        iv = to == DT_OX_BOOL ? f != 0 : (int64_t)f; /* truncation, as Cast does */
        for (int64_t i = 0; i < n; i++)
            v[i] = dt_ox_sym_const(c->sc, iv);
        return dt_ox_set_vals(c, 0, (int)n, v);
    }
    return 0;
}

int dt_ox_rule_dynquant(ox_node *c)
{
    ox_tensor *x;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_set_out(c, 0, DT_OX_UINT8, x->pub.rank, x->dims)) ||
        (rc = dt_ox_set_out(c, 1, DT_OX_FLOAT, 0, NULL)))
        return rc;
    return dt_ox_set_out(c, 2, DT_OX_UINT8, 0, NULL);
}

/* The per-axis scale of (de)quantization: a scalar or a 1-D tensor along
 * `axis` (default 1). */
static int check_quant_axis(ox_node *c, const ox_tensor *x, const ox_tensor *scale)
{
    int64_t axis;
    int a, rc = dt_ox_attr_int(c, "axis", 1, &axis);
    int64_t one;
    if (rc || !scale || scale->pub.rank == 0)
        return rc;
    /* a scale of one element is per-tensor whatever the axis (as onnxruntime
     * reads it: a bias [n] dequantized with scale [1] and the default axis 1
     * in quantized exports) */
    if (scale->pub.rank == 1 && dt_ox_sym_is_const(scale->dims[0], &one) && one == 1)
        return 0;
    if ((rc = dt_ox_axis(c, axis, x->pub.rank, &a)))
        return rc;
    if (scale->pub.rank == 1 && !dt_ox_equal(c, scale->dims[0], x->dims[a])) {
        char s1[128], s2[128];
        return dt_ox_fail(c, "the scale has %s elements, axis %d of the input has %s",
                          dt_ox_str(c, scale->dims[0], s1, sizeof s1), a,
                          dt_ox_str(c, x->dims[a], s2, sizeof s2));
    }
    return 0;
}

int dt_ox_rule_quantize(ox_node *c)
{
    ox_tensor *x, *scale;
    int64_t type;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &scale)) || (rc = check_quant_axis(c, x, scale)) ||
        (rc = dt_ox_attr_int(c, "output_dtype", 0, &type)))
        return rc;
    if (c->nin > 2 && c->in[2])
        type = c->in[2]->pub.elem_type;
    return dt_ox_set_out(c, 0, type ? (int)type : DT_OX_UINT8, x->pub.rank, x->dims);
}

int dt_ox_rule_dequantize(ox_node *c)
{
    ox_tensor *x, *scale;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &scale)) || (rc = check_quant_axis(c, x, scale)))
        return rc;
    int type = scale->pub.elem_type ? scale->pub.elem_type : DT_OX_FLOAT;
    return dt_ox_set_out(c, 0, type, x->pub.rank, x->dims);
}

int dt_ox_rule_bias_act(ox_node *c)
{
    ox_tensor *x;
    const sym *dims[DT_OX_MAX_RANK];
    int r, rc = dt_ox_need(c, 0, &x);
    if (rc)
        return rc;
    r = x->pub.rank;
    memcpy(dims, x->dims, (size_t)r * sizeof dims[0]);
    for (int k = 1; k < c->nin; k++)
        if (c->in[k] &&
            (rc = dt_ox_broadcast(c, r, dims, c->in[k]->pub.rank, c->in[k]->dims, &r, dims)))
            return rc;
    return dt_ox_set_out(c, 0, x->pub.elem_type, r, dims);
}
