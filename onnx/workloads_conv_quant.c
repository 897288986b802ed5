/* Quantized convolutions as conv2d int8 or w8a32 (docs/onnx-import.md,
 * "Patterns"; docs/workload-keys.md, "Dtypes").
 *
 * conv2d's int8 is dense's: u8 activations with one scale and zero point
 * (the padding reads the zero point, the real 0), s8 weights [K][R][S][C/G]
 * with one scale per output channel, f32 out; w8a32 takes f32 activations.
 * Two spellings of it:
 *   QDQ      Conv(DequantizeLinear(x_q u8), DequantizeLinear(W_q s8 const,
 *            scale one or [K] on axis 0)) — onnxruntime's quantize_static;
 *            a float x gives w8a32
 *   dynamic  DynamicQuantizeLinear(x) → ConvInteger(x_q, W_q, x_zp[, W_zp])
 *            → Cast(float) → Mul(scale) (the scale x_scale·W_scale, one
 *            value or one per channel along NCHW's axis 1), then the bias Add
 *            of a [1, K, 1, 1] Reshape of the bias — quantize_dynamic's
 *            ConvInteger
 * The geometry (pads, strides, groups, 1-D) is the float Conv's
 * (dt_ox_conv_geometry), so is the epilogue after the f32 result.
 * ConvInteger's padding is the zero point's (the ONNX reference subtracts
 * x_zero_point and pads with 0): conv2d int8's.  A weight zero point must
 * be 0.  Anything else is listed with the reason. */
#include "onnx/workloads_match.h"

static const dt_ox_node *node_at(const dt_ox_wctx *c, int i) { return &c->g->nodes[i]; }

int dt_ox_match_conv_qdq(dt_ox_wctx *c, int i, int wdq)
{
    const dt_ox_node *nd = node_at(c, i), *dq = node_at(c, wdq);
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]), *w = dt_ox_wshape(c, nd->inputs[1]);
    const char *wzp = dq->ninputs >= 3 ? dq->inputs[2] : "";
    const char *why = dq->ninputs >= 1
                          ? dt_ox_int8_weight_problem(c, dq->inputs[0], wzp, x->rank)
                          : "a DequantizeLinear without an input";
    if (why)
        return dt_ox_reject(c, i, "%s", why);
    /* one scale, or one per output channel: K is axis 0 of [K, C/g, R, S]
     * (DequantizeLinear's axis defaults to 1: given as 0 for per-channel) */
    const dt_ox_shape *sc = dq->ninputs >= 2 ? dt_ox_wshape(c, dq->inputs[1]) : NULL;
    int64_t axis = dt_ox_attr_int_or(dq, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (!sc || !sc->is_const || sc->elem_type != DT_OX_FLOAT)
        return dt_ox_reject(c, i, "the weight's scale is not a float constant");
    if (!dt_ox_is_single(sc) &&
        (axis != 0 || !dt_ox_const_vector(c, dq->inputs[1], w->dims[0], 1)))
        return dt_ox_reject(c, i, "weight scales along the input channels: dtune's int8 and "
                                  "w8a32 have one scale per output channel");
    dt_ox_op op = {.node = i};
    int ok, rc = dt_ox_qdq_activation(c, i, nd->inputs[0], &op.dtype, &ok);
    if (rc || !ok)
        return rc;
    if ((rc = dt_ox_conv_geometry(c, i, nd->inputs[0], nd->inputs[1], &op, &ok)) || !ok)
        return rc;
    /* an int32 bias DequantizeLinear'd is a float constant */
    return dt_ox_finish_conv_node(c, i, &op, w->dims[0]);
}

int dt_ox_match_conv_integer(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    if (nd->ninputs < 2 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "ConvInteger with fewer than two inputs");
    const char *xzp = nd->ninputs >= 3 ? nd->inputs[2] : "";
    const char *wzp = nd->ninputs >= 4 ? nd->inputs[3] : "";
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]), *w = dt_ox_wshape(c, nd->inputs[1]);
    const dt_ox_shape *y = dt_ox_wshape(c, nd->outputs[0]);
    if (!x || !w || !y)
        return dt_ox_reject(c, i, "ConvInteger whose shapes are unknown (shape propagation "
                                  "skipped it)");
    if (y->is_const)
        return 0; /* constant folding */
    if (x->elem_type != DT_OX_UINT8)
        return dt_ox_reject(c, i, "%s activations: dtune's int8 takes u8 activations",
                            dt_ox_type_name(x->elem_type));
    const char *why = dt_ox_int8_weight_problem(c, nd->inputs[1], wzp, x->rank);
    if (why)
        return dt_ox_reject(c, i, "%s", why);
    if (xzp[0] && !dt_ox_is_single(dt_ox_wshape(c, xzp)))
        return dt_ox_reject(c, i, "an activation zero point per channel: dtune's int8 has one "
                                  "per tensor");
    /* int32 → Cast(float) → Mul(scale), the scale along the channels (axis 1) */
    dt_ox_dequant dq;
    if (!dt_ox_match_dequant(c, nd->outputs[0], w->dims[0], 1, &dq))
        return dt_ox_reject(c, i, "the int32 result is not dequantized by Cast(float) → Mul "
                                  "(scales): dtune's int8 writes f32");
    dt_ox_op op = {.node = i, .dtype = DT_DTYPE_INT8};
    int ok, rc = dt_ox_conv_geometry(c, i, nd->inputs[0], nd->inputs[1], &op, &ok);
    if (rc || !ok)
        return rc;
    dt_ox_fused f = {0};
    dt_ox_fuse(&f, i);
    dt_ox_fuse_dequant(c, &f, &dq);
    return dt_ox_finish_conv(c, &op, &f, dq.y, w->dims[0], 0);
}
