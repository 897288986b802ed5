/* Quantized GEMMs as dense int8 or w8a32 (docs/onnx-import.md, "Patterns";
 * docs/workload-keys.md, "Dtypes").
 *
 * dtune's int8 is u8 activations with a per-tensor scale and zero point
 * times s8 weights with per-output-channel scales, dequantized to f32;
 * w8a32 is f32 activations times such weights.  Two spellings of that:
 *   dynamic  DynamicQuantizeLinear(x) → MatMulInteger(x_q, W_q, x_zp[, w_zp])
 *            → Cast(float) → Mul(scale)   (scale: x_scale·w_scale, a Mul of
 *            its own or a constant)
 *   QDQ      MatMul(DequantizeLinear(x_q u8), DequantizeLinear(W_q s8))
 *            (w8a32 when the activation is float)
 * A weight zero point must be 0 (s8 weights are symmetric); one too large
 * for the reader to keep the values of (over DT_OX_MAX_VALUES elements) is
 * taken to be 0, as ONNX Runtime's quantizer writes it.  Anything else
 * quantized is left untuned with the reason. */
#include <string.h>

#include "onnx/workloads_match.h"

static const dt_ox_node *node_at(const dt_ox_wctx *c, int i) { return &c->g->nodes[i]; }

/* Checks an s8 constant 2-D weight w and its zero point zp (""): NULL, or
 * why it is not a weight of dtune's int8 and w8a32. */
static const char *weight_problem(const dt_ox_wctx *c, const char *w, const char *zp)
{
    const dt_ox_shape *ws = dt_ox_wshape(c, w);
    if (!ws || !ws->is_const)
        return "the int8 operand is not a constant weight (dtune's int8 is dense only)";
    if (ws->elem_type == DT_OX_UINT8)
        return "uint8 weights: dtune's int8 and w8a32 take s8 weights";
    if (ws->elem_type != DT_OX_INT8)
        return "weights neither int8 nor uint8";
    if (ws->rank != 2)
        return "a quantized weight that is not 2-D";
    if (dt_ox_known_zero(c, zp) == 0)
        return "a weight zero point other than 0: dtune's s8 weights are symmetric";
    return NULL;
}

/* The scale tensor of a dequantization Mul: a constant (one value, or one
 * per output channel), or a Mul of such a constant and a one-element scale
 * (the activation's, from DynamicQuantizeLinear).  Returns 1, with *sm the
 * scale-product Mul node or -1. */
static int match_scale(const dt_ox_wctx *c, const char *s, const dt_expr *n, int rank, int *sm)
{
    const dt_ox_shape *ss = dt_ox_wshape(c, s);
    *sm = -1;
    if (!ss || (ss->elem_type != DT_OX_FLOAT))
        return 0;
    if (ss->is_const)
        return dt_ox_is_single(ss) || dt_ox_const_vector(c, s, n, rank);
    if (ss->producer < 0 || !dt_ox_is(node_at(c, ss->producer), "Mul"))
        return 0;
    const dt_ox_node *m = node_at(c, ss->producer);
    for (int k = 0; k < 2 && m->ninputs == 2; k++) {
        const dt_ox_shape *p = dt_ox_wshape(c, m->inputs[k]);
        const dt_ox_shape *q = dt_ox_wshape(c, m->inputs[1 - k]);
        int weight_scale = p && p->is_const &&
                           (dt_ox_is_single(p) || dt_ox_const_vector(c, m->inputs[k], n, rank));
        if (weight_scale && dt_ox_is_single(q) && q->elem_type == DT_OX_FLOAT) {
            *sm = ss->producer;
            return 1;
        }
    }
    return 0;
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
    int cast = dt_ox_sole_consumer(c, nd->outputs[0]);
    const dt_ox_attr *to = cast >= 0 ? dt_ox_attr_find(node_at(c, cast), "to") : NULL;
    int mul = -1, sm = -1, o = -1;
    if (cast >= 0 && dt_ox_is(node_at(c, cast), "Cast") && to && to->type == DT_OX_ATTR_INT &&
        to->i == DT_OX_FLOAT)
        mul = dt_ox_sole_consumer(c, node_at(c, cast)->outputs[0]);
    if (mul >= 0 && dt_ox_is(node_at(c, mul), "Mul"))
        o = dt_ox_other_input(node_at(c, mul), node_at(c, cast)->outputs[0]);
    if (o < 0 || !match_scale(c, node_at(c, mul)->inputs[o], d.n, y->rank, &sm) ||
        !dt_ox_same_dims(dt_ox_wshape(c, node_at(c, mul)->outputs[0]), y))
        return dt_ox_reject(c, i, "the int32 result is not dequantized by Cast(float) → Mul "
                                  "(scales): dtune's int8 writes f32");
    dt_ox_fuse(&d.f, cast);
    dt_ox_fuse(&d.f, mul);
    if (sm >= 0) {
        /* the scale product: the op's own, or shared by several MatMulIntegers
         * (then covered once all its consumers are) */
        if (dt_ox_sole_consumer(c, node_at(c, sm)->outputs[0]) == mul)
            dt_ox_fuse(&d.f, sm);
        else
            c->absorb[sm] = 1;
    }
    d.y = node_at(c, mul)->outputs[0];
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
    const dt_ox_attr *ax = dt_ox_attr_find(dq, "axis");
    int64_t axis = ax && ax->type == DT_OX_ATTR_INT ? ax->i : 1;
    if (axis < 0)
        axis += 2;
    if (!sc || !sc->is_const || sc->elem_type != DT_OX_FLOAT)
        return dt_ox_reject(c, node, "the weight's scale is not a float constant");
    if (!dt_ox_is_single(sc) &&
        (axis != (trans_b ? 0 : 1) || !dt_ox_const_vector(c, dq->inputs[1], d->n, 1)))
        return dt_ox_reject(c, node, "weight scales along K: dtune's int8 and w8a32 have one "
                                     "scale per output channel");
    const dt_ox_shape *a = dt_ox_wshape(c, d->a);
    const dt_ox_node *adq = a->producer >= 0 ? node_at(c, a->producer) : NULL;
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
        d->dtype = DT_DTYPE_INT8;
    } else if (a->elem_type == DT_OX_FLOAT) {
        d->dtype = DT_DTYPE_W8A32;
    } else {
        return dt_ox_reject(c, node, "%s activations with int8 weights",
                            dt_ox_type_name(a->elem_type));
    }
    return dt_ox_finish_dense(c, d);
}

int dt_ox_is_quant_node(const dt_ox_node *n)
{
    return dt_ox_is(n, "DynamicQuantizeLinear") || dt_ox_is(n, "QuantizeLinear") ||
           dt_ox_is(n, "DequantizeLinear");
}
