/* Quantized GEMMs as dense int8 or w8a32 (docs/onnx-import.md, "Patterns";
 * docs/workload-keys.md, "Dtypes"); the helpers the quantized convolutions
 * share (workloads_conv_quant.c).
 *
 * dtune's int8 is u8 activations with a per-tensor scale and zero point
 * times s8 weights with per-output-channel scales, dequantized to f32;
 * w8a32 is f32 activations times such weights.  Two spellings of that:
 *   dynamic  DynamicQuantizeLinear(x) → MatMulInteger(x_q, W_q, x_zp[, w_zp])
 *            → Cast(float) → Mul(scale)   (scale: x_scale·w_scale, a Mul of
 *            its own or a constant)
 *   QDQ      MatMul(DequantizeLinear(x_q u8), DequantizeLinear(W_q s8))
 *            (w8a32 when the activation is float)
 *   torch    MatMul(x float, Mul(Cast(W_q s8, to=float), scale)), the Mul's
 *            operands in either order, Transposes of the weight on either
 *            side of it (weight-only int8, w8a32: what torch's exporter
 *            writes for a weight-only quantized Linear)
 * A weight zero point must be 0 (s8 weights are symmetric); one too large
 * for the reader to keep the values of (over DT_OX_MAX_VALUES elements) is
 * taken to be 0, as ONNX Runtime's quantizer writes it.  QLinearMatMul
 * and QLinearConv requantize their result to u8 (rounded, saturated), which
 * dtune's int8 (f32 out) does not: listed, with whatever else is not
 * dtune's about them.  Anything else quantized is left untuned with the
 * reason. */
#include <string.h>

#include "onnx/workloads_match.h"

/* ONNX's 4-bit element types (IR 10): weights dtune has no dtype for. */
enum { OX_UINT4 = 21, OX_INT4 = 22 };

static const dt_ox_node *node_at(const dt_ox_wctx *c, int i) { return &c->g->nodes[i]; }

const char *dt_ox_int8_weight_problem(const dt_ox_wctx *c, const char *w, const char *zp,
                                      int rank)
{
    const dt_ox_shape *ws = dt_ox_wshape(c, w);
    if (!ws || !ws->is_const)
        return "the int8 operand is not a constant weight (dtune's int8 is dense only)";
    if (ws->elem_type == DT_OX_UINT8)
        return "uint8 weights: dtune's int8 and w8a32 take s8 weights";
    if (ws->elem_type == OX_UINT4 || ws->elem_type == OX_INT4)
        return "4-bit weights: no dtune dtype (int8 and w8a32 take s8 weights)";
    if (ws->elem_type != DT_OX_INT8)
        return "weights neither int8 nor uint8";
    if (ws->rank != rank)
        return rank == 2 ? "a quantized weight that is not 2-D"
                         : "a quantized weight whose rank is not the input's";
    if (dt_ox_known_zero(c, zp) == 0)
        return "a weight zero point other than 0: dtune's s8 weights are symmetric";
    return NULL;
}

static const char *weight_problem(const dt_ox_wctx *c, const char *w, const char *zp)
{
    return dt_ox_int8_weight_problem(c, w, zp, 2);
}

/* The scale tensor of a dequantization Mul: a constant (one value, or one
 * per output channel along axis of a result of rank `rank`), or a Mul of
 * such a constant and a one-element scale (the activation's, from
 * DynamicQuantizeLinear).  Returns 1, with *sm the scale-product Mul node
 * or -1. */
static int match_scale(const dt_ox_wctx *c, const char *s, const dt_expr *n, int rank, int axis,
                       int *sm)
{
    const dt_ox_shape *ss = dt_ox_wshape(c, s);
    *sm = -1;
    if (!ss || (ss->elem_type != DT_OX_FLOAT))
        return 0;
    if (ss->is_const)
        return dt_ox_is_single(ss) || dt_ox_axis_vector(c, s, n, rank, axis);
    if (ss->producer < 0 || !dt_ox_is(node_at(c, ss->producer), "Mul"))
        return 0;
    const dt_ox_node *m = node_at(c, ss->producer);
    for (int k = 0; k < 2 && m->ninputs == 2; k++) {
        const dt_ox_shape *p = dt_ox_wshape(c, m->inputs[k]);
        const dt_ox_shape *q = dt_ox_wshape(c, m->inputs[1 - k]);
        int weight_scale = p && p->is_const &&
                           (dt_ox_is_single(p) || dt_ox_axis_vector(c, m->inputs[k], n, rank,
                                                                    axis));
        if (weight_scale && dt_ox_is_single(q) && q->elem_type == DT_OX_FLOAT) {
            *sm = ss->producer;
            return 1;
        }
    }
    return 0;
}

int dt_ox_match_dequant(const dt_ox_wctx *c, const char *yi, const dt_expr *n, int axis,
                        dt_ox_dequant *dq)
{
    const dt_ox_shape *y = dt_ox_wshape(c, yi);
    int cast = dt_ox_sole_consumer(c, yi);
    const dt_ox_attr *to = cast >= 0 ? dt_ox_attr_find(node_at(c, cast), "to") : NULL;
    int mul = -1, o = -1;
    *dq = (dt_ox_dequant){.cast = -1, .mul = -1, .sm = -1, .y = NULL};
    if (!y || cast < 0 || !dt_ox_is(node_at(c, cast), "Cast") || !to ||
        to->type != DT_OX_ATTR_INT || to->i != DT_OX_FLOAT)
        return 0;
    mul = dt_ox_sole_consumer(c, node_at(c, cast)->outputs[0]);
    if (mul >= 0 && dt_ox_is(node_at(c, mul), "Mul"))
        o = dt_ox_other_input(node_at(c, mul), node_at(c, cast)->outputs[0]);
    if (o < 0 || !match_scale(c, node_at(c, mul)->inputs[o], n, y->rank, axis, &dq->sm) ||
        !dt_ox_same_dims(dt_ox_wshape(c, node_at(c, mul)->outputs[0]), y))
        return 0;
    dq->cast = cast;
    dq->mul = mul;
    dq->y = node_at(c, mul)->outputs[0];
    return 1;
}

void dt_ox_fuse_dequant(dt_ox_wctx *c, dt_ox_fused *f, const dt_ox_dequant *dq)
{
    dt_ox_fuse(f, dq->cast);
    dt_ox_fuse(f, dq->mul);
    if (dq->sm >= 0) {
        /* the scale product: the op's own, or shared by several MatMulIntegers
         * (then covered once all its consumers are) */
        if (dt_ox_sole_consumer(c, node_at(c, dq->sm)->outputs[0]) == dq->mul)
            dt_ox_fuse(f, dq->sm);
        else
            c->absorb[dq->sm] = 1;
    }
}

int dt_ox_match_matmul_integer(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    if (nd->ninputs < 2 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "fewer than two inputs");
    const char *azp = nd->ninputs >= 3 ? nd->inputs[2] : "";
    const char *wzp = nd->ninputs >= 4 ? nd->inputs[3] : "";
    const dt_ox_shape *a = dt_ox_wshape(c, nd->inputs[0]), *w = dt_ox_wshape(c, nd->inputs[1]);
    const dt_ox_shape *y = dt_ox_wshape(c, nd->outputs[0]);
    if (!a || !w || !y)
        return dt_ox_wfail(c, i, "an operand or the result has no shape (shape propagation "
                                 "skipped it)");
    if (y->is_const)
        return 0; /* constant folding */
    if (a->elem_type != DT_OX_UINT8)
        return dt_ox_reject(c, i, "%s activations: dtune's int8 takes u8 activations",
                            dt_ox_type_name(a->elem_type));
    const char *why = weight_problem(c, nd->inputs[1], wzp);
    if (why)
        return dt_ox_reject(c, i, "%s", why);
    if (azp[0] && !dt_ox_is_single(dt_ox_wshape(c, azp)))
        return dt_ox_reject(c, i, "an activation zero point per row: dtune's int8 has one "
                                  "per tensor");
    dt_ox_dense d = {.node = i, .a = nd->inputs[0], .n = w->dims[1], .k = w->dims[0],
                     .dtype = DT_DTYPE_INT8};
    dt_ox_fuse(&d.f, i);
    /* int32 → Cast(float) → Mul(scale): the dequantization dtune's int8 does */
    dt_ox_dequant dq;
    if (!dt_ox_match_dequant(c, nd->outputs[0], d.n, -1, &dq))
        return dt_ox_reject(c, i, "the int32 result is not dequantized by Cast(float) → Mul "
                                  "(scales): dtune's int8 writes f32");
    dt_ox_fuse_dequant(c, &d.f, &dq);
    d.y = dq.y;
    return dt_ox_finish_dense(c, &d);
}

int dt_ox_match_qdq(dt_ox_wctx *c, int node, int wdq, int trans_b, dt_ox_dense *d)
{
    const dt_ox_node *dq = node_at(c, wdq);
    const char *wzp = dq->ninputs >= 3 ? dq->inputs[2] : "";
    const char *why = weight_problem(c, dq->inputs[0], wzp);
    if (why)
        return dt_ox_reject(c, node, "%s", why);
    /* one scale, or one per output channel: N is axis 1 of [K, N], 0 of [N, K] */
    const dt_ox_shape *sc = dq->ninputs >= 2 ? dt_ox_wshape(c, dq->inputs[1]) : NULL;
    int64_t axis = dt_ox_attr_int_or(dq, "axis", 1);
    if (axis < 0)
        axis += 2;
    if (!sc || !sc->is_const || sc->elem_type != DT_OX_FLOAT)
        return dt_ox_reject(c, node, "the weight's scale is not a float constant");
    if (!dt_ox_is_single(sc) &&
        (axis != (trans_b ? 0 : 1) || !dt_ox_const_vector(c, dq->inputs[1], d->n, 1)))
        return dt_ox_reject(c, node, "weight scales along K: dtune's int8 and w8a32 have one "
                                     "scale per output channel");
    int ok, rc = dt_ox_qdq_activation(c, node, d->a, &d->dtype, &ok);
    if (rc || !ok)
        return rc;
    return dt_ox_finish_dense(c, d);
}

int dt_ox_qdq_activation(dt_ox_wctx *c, int node, const char *a_name, dt_dtype *dtype, int *ok)
{
    const dt_ox_shape *a = dt_ox_wshape(c, a_name);
    const dt_ox_node *adq = a->producer >= 0 ? node_at(c, a->producer) : NULL;
    *ok = 0;
    if (adq && dt_ox_is(adq, "DequantizeLinear") && adq->ninputs >= 2) {
        const dt_ox_shape *aq = dt_ox_wshape(c, adq->inputs[0]);
        const char *azp = adq->ninputs >= 3 ? adq->inputs[2] : "";
        if (!aq || aq->elem_type != DT_OX_UINT8)
            return dt_ox_reject(c, node, "%s activations: dtune's int8 takes u8 activations",
                                aq ? dt_ox_type_name(aq->elem_type) : "unknown");
        if (!dt_ox_is_single(dt_ox_wshape(c, adq->inputs[1])) ||
            (azp[0] && !dt_ox_is_single(dt_ox_wshape(c, azp))))
            return dt_ox_reject(c, node, "activations quantized per channel: dtune's int8 has "
                                         "one scale and zero point per tensor");
        *dtype = DT_DTYPE_INT8;
    } else if (a->elem_type == DT_OX_FLOAT) {
        *dtype = DT_DTYPE_W8A32;
    } else {
        return dt_ox_reject(c, node, "%s activations with int8 weights",
                            dt_ox_type_name(a->elem_type));
    }
    *ok = 1;
    return 0;
}

/* A float constant of one element, [N] or [1, N] (n_first: [N, 1], the
 * scale of a [N, K] weight's rows). */
static int channel_scale(const dt_ox_wctx *c, const char *s, const dt_expr *n, int n_first)
{
    const dt_ox_shape *ss = dt_ox_wshape(c, s);
    if (!ss || !ss->is_const || ss->elem_type != DT_OX_FLOAT)
        return 0;
    if (dt_ox_is_single(ss))
        return 1;
    if (!n_first)
        return dt_ox_const_vector(c, s, n, 2);
    return ss->rank == 2 && dt_expr_equal(ss->dims[0], n) &&
           ss->dims[1]->kind == DT_EXPR_CONST && ss->dims[1]->value == 1;
}

/* 1 for a 2-D Transpose that swaps the axes (*swap = 1) or keeps them. */
static int transpose_2d(const dt_ox_node *t, int *swap)
{
    const dt_ox_attr *p = dt_ox_attr_find(t, "perm");
    if (!dt_ox_is(t, "Transpose"))
        return 0;
    if (!p) {
        *swap = 1;
        return 1;
    }
    if (p->type != DT_OX_ATTR_INTS || p->n != 2)
        return 0;
    *swap = p->ints[0] == 1;
    return 1;
}

/* The most nodes between a weight-only int8 weight and its GEMM: Cast, Mul
 * and a Transpose on either side. */
#define CAST_CHAIN_MAX 6

int dt_ox_match_cast_weight(dt_ox_wctx *c, int node, int trans_b, dt_ox_dense *d, int *matched)
{
    const char *t = node_at(c, node)->inputs[1];
    int n_first = trans_b; /* N is axis 0 of the tensor at hand */
    int mul = -1, cast = -1, scale_n_first = 0;
    const char *scale = NULL;
    *matched = 0;
    for (int step = 0; step < CAST_CHAIN_MAX && cast < 0; step++) {
        const dt_ox_shape *sh = dt_ox_wshape(c, t);
        const dt_ox_node *p = sh && sh->producer >= 0 ? node_at(c, sh->producer) : NULL;
        int swap = 0;
        if (!p || p->ninputs < 1 || sh->rank != 2)
            return 0;
        if (transpose_2d(p, &swap)) {
            n_first ^= swap;
            t = p->inputs[0];
        } else if (mul < 0 && dt_ox_is(p, "Mul") && p->ninputs == 2) {
            /* Mul(Cast(W), scale) or Mul(scale, Cast(W)): the weight side is
             * the one a Cast or Transpose makes */
            int k = -1;
            for (int j = 0; j < 2 && k < 0; j++) {
                const dt_ox_shape *x = dt_ox_wshape(c, p->inputs[j]);
                const dt_ox_node *xp = x && x->producer >= 0 ? node_at(c, x->producer) : NULL;
                if (xp && (dt_ox_is(xp, "Cast") || dt_ox_is(xp, "Transpose")) &&
                    dt_ox_same_dims(x, sh))
                    k = j;
            }
            if (k < 0)
                return 0;
            mul = sh->producer;
            scale = p->inputs[1 - k];
            scale_n_first = n_first;
            t = p->inputs[k];
        } else if (mul >= 0 && dt_ox_is(p, "Cast")) {
            const dt_ox_attr *to = dt_ox_attr_find(p, "to");
            if (!to || to->type != DT_OX_ATTR_INT || to->i != DT_OX_FLOAT)
                return 0;
            cast = sh->producer;
            t = p->inputs[0];
        } else {
            return 0;
        }
    }
    const dt_ox_shape *w = dt_ox_wshape(c, t);
    if (cast < 0 || !w || dt_ox_type_values(w->elem_type) != 1)
        return 0; /* not a Cast from integers: a float weight scaled, not quantized */
    *matched = 1;
    /* a Transpose between the Cast and W: W itself is [N, K] when n_first */
    const char *why = weight_problem(c, t, "");
    if (why)
        return dt_ox_reject(c, node, "%s", why);
    if (!channel_scale(c, scale, d->n, scale_n_first))
        return dt_ox_reject(c, node, "weight scales along K (or not a float constant): dtune's "
                                     "w8a32 has one scale per output channel");
    const dt_ox_shape *a = dt_ox_wshape(c, d->a);
    if (a->elem_type != DT_OX_FLOAT)
        return dt_ox_reject(c, node, "%s activations with int8 weights: dtune's w8a32 takes "
                                     "float activations",
                            dt_ox_type_name(a->elem_type));
    d->dtype = DT_DTYPE_W8A32;
    return dt_ox_finish_dense(c, d);
}

int dt_ox_match_qlinear(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    int conv = dt_ox_is(nd, "QLinearConv");
    if (nd->ninputs < 8 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "%s with fewer than eight inputs", nd->op_type);
    const dt_ox_shape *a = dt_ox_wshape(c, nd->inputs[0]), *y = dt_ox_wshape(c, nd->outputs[0]);
    if (y && y->is_const)
        return 0; /* constant folding */
    /* x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B] */
    char why[448];
    int len = snprintf(why, sizeof why, "its %s output is requantized by y_scale and "
                                        "y_zero_point: dtune's int8 writes f32",
                       y ? dt_ox_type_name(y->elem_type) : "integer");
    const char *also[3] = {NULL, NULL, NULL};
    char act[96];
    if (a && a->elem_type != DT_OX_UINT8) {
        snprintf(act, sizeof act, "%s activations: dtune's int8 takes u8 activations",
                 dt_ox_type_name(a->elem_type));
        also[0] = act;
    }
    also[1] = a ? dt_ox_int8_weight_problem(c, nd->inputs[3], nd->inputs[5],
                                            conv ? a->rank : 2)
                : NULL;
    if (!dt_ox_is_single(dt_ox_wshape(c, nd->inputs[1])) ||
        !dt_ox_is_single(dt_ox_wshape(c, nd->inputs[2])))
        also[2] = "activations quantized per row or channel: dtune's int8 has one scale and "
                  "zero point per tensor";
    for (int k = 0; k < 3 && len > 0 && (size_t)len < sizeof why; k++)
        if (also[k])
            len += snprintf(why + len, sizeof why - (size_t)len, "; and %s", also[k]);
    return dt_ox_reject(c, i, "%s", why);
}

int dt_ox_is_quant_node(const dt_ox_node *n)
{
    return dt_ox_is(n, "DynamicQuantizeLinear") || dt_ox_is(n, "QuantizeLinear") ||
           dt_ox_is(n, "DequantizeLinear");
}
