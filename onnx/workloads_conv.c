/* Conv as conv2d (docs/onnx-import.md, "Patterns").
 *
 * ONNX's Conv is NCHW with weights [K, C/group, R, S]; dtune's conv2d is the
 * same arithmetic over NHWC with weights [K][R][S][C/groups] (a layout the
 * runtime's packing chooses, not a different convolution), so a Conv maps
 * onto it dim for dim when conv2d's attributes can say what the node does:
 * its group as groups (depthwise included), its strides, dilations and
 * pads (explicit, auto_pad SAME_* or VALID) per axis and side: stride, pad
 * and dilation the height's (pad the top's), stride_w, dilation_w, pad_w,
 * pad_b and pad_r where the others differ (ops/op_conv2d.c).  A Conv1d
 * ([N, C, L]) is a conv2d with H = R = 1, its pads on W only.  The
 * bias input is the epilogue's bias; the activation after it (and a bias Add
 * along the channels, when the Conv has none) is fused by dense's epilogue
 * matcher, the bias running along axis 1.  Anything else is listed with the
 * reason.  The geometry (dt_ox_conv_geometry) is shared with the quantized
 * forms (workloads_conv_quant.c: a Conv of DequantizeLinear'd int8 weights,
 * ConvInteger).  A ConvTranspose is conv2d's transposed mode (transpose=1):
 * its weight [C, K/group, R, S] names the channels the other way round, its
 * output_padding is out_pad / out_pad_w, auto_pad SAME_* crops
 * output_padding + dilation·(R − 1) + 1 − stride (the output in·stride,
 * whatever the input size), and an output_shape crops what it leaves out of
 * the full output (a constant input size). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "onnx/workloads_match.h"

/* The INTS attribute `name` of count values into v (dflt each when absent):
 * 0, or -1 when it has another count (the shape rule refuses that). */
static int attr_ints(const dt_ox_node *n, const char *name, int count, int64_t dflt, int64_t *v)
{
    const dt_ox_attr *a = dt_ox_attr_find(n, name);
    if (a && (a->type != DT_OX_ATTR_INTS || a->n != count))
        return -1;
    for (int i = 0; i < count; i++)
        v[i] = a ? a->ints[i] : dflt;
    return 0;
}

/* "[1,1,2,2]" */
static const char *ints_text(const int64_t *v, int n, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, i ? "," : "", v[i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
    return buf;
}

/* An attribute's value per spatial axis (strides, dilations; 1 when
 * absent) into v, or the node rejected: *ok = 0. */
static int axis_values(dt_ox_wctx *c, int i, const char *name, int sp, int64_t v[2], int *ok)
{
    v[0] = v[1] = 1;
    *ok = 0;
    if (attr_ints(&c->g->nodes[i], name, sp, 1, v))
        return dt_ox_reject(c, i, "Conv with a malformed '%s'", name);
    *ok = 1;
    return 0;
}

/* 0 and *ok = 1 when the node's pads p (2·sp values) are conv2d pads; else
 * the node rejected with them (negative: why_negative). */
static int pads_in_range(dt_ox_wctx *c, int i, const int64_t *p, int sp, const char *why_negative,
                         int *ok)
{
    const dt_op_desc *conv = dt_op_find("conv2d");
    const dt_attr_desc *lim = &conv->attrs[dt_op_attr_index(conv, "pad")];
    for (int a = 0; a < 2 * sp; a++)
        if (p[a] < 0 || p[a] > lim->max) {
            char buf[96];
            return dt_ox_reject(c, i, "%s with pads=%s (%s)", c->g->nodes[i].op_type,
                                ints_text(p, 2 * sp, buf, sizeof buf),
                                p[a] < 0 ? why_negative : "a pad above conv2d's limit");
        }
    *ok = 1;
    return 0;
}

/* The total padding of auto_pad SAME_* on one axis into *total, or the
 * reason it has none in why. */
static int same_pad(const dt_expr *in, int64_t k, int64_t s, int64_t d, int64_t *total,
                    const char **why)
{
    int64_t span = d * (k - 1) + 1, n;
    if (s == 1)
        *total = span - 1; /* ceil(in/1)·1 - in = 0 for any in */
    else if (dt_ox_const_value(in, &n))
        *total = ((n + s - 1) / s - 1) * s + span - n;
    else {
        *why = "its padding depends on the symbolic input size";
        return -1;
    }
    if (*total < 0)
        *total = 0;
    return 0;
}

/* The pads as ONNX orders them, [begin of each spatial axis, end of each]
 * (explicit, auto_pad SAME_UPPER / SAME_LOWER with the odd one at the end /
 * the beginning, or VALID), into p; or the node rejected: *ok = 0. */
static int node_pads(dt_ox_wctx *c, int i, const dt_ox_shape *x, int sp, const int64_t *k,
                     const int64_t *stride, const int64_t *dil, int64_t p[4], int *ok)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const dt_ox_attr *ap = dt_ox_attr_find(nd, "auto_pad");
    const char *mode = ap && ap->type == DT_OX_ATTR_STRING && ap->s ? ap->s : "NOTSET";
    *ok = 0;
    if (!strcmp(mode, "VALID")) {
        p[0] = p[1] = p[2] = p[3] = 0;
    } else if (!strncmp(mode, "SAME", 4)) {
        for (int a = 0; a < sp; a++) {
            const char *why = NULL;
            int64_t total;
            if (same_pad(x->dims[2 + a], k[a], stride[a], dil[a], &total, &why))
                return dt_ox_reject(c, i, "Conv with auto_pad=%s: %s", mode, why);
            p[a] = !strcmp(mode, "SAME_LOWER") ? (total + 1) / 2 : total / 2;
            p[sp + a] = total - p[a];
        }
    } else if (attr_ints(nd, "pads", 2 * sp, 0, p)) {
        return dt_ox_reject(c, i, "Conv with a malformed 'pads'");
    }
    return pads_in_range(c, i, p, sp, "a negative pad crops the input", ok);
}

/* 1 when v is a value of conv2d's integer attribute `name`; else rejects. */
static int in_range(dt_ox_wctx *c, int i, const dt_op_desc *op, const char *name, int64_t v,
                    int *rc)
{
    const dt_attr_desc *a = &op->attrs[dt_op_attr_index(op, name)];
    if (v >= a->min && v <= a->max)
        return 1;
    *rc = dt_ox_reject(c, i, "Conv with %s %" PRId64 " (conv2d's %s is in %d..%d)", name, v,
                       name, a->min, a->max);
    return 0;
}

static int set_int_attr(dt_ox_op *op, const char *name, int64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%" PRId64, v);
    return dt_ox_op_attr(op, name, t);
}

void dt_ox_op_clear(dt_ox_op *op)
{
    for (int d = 0; d < DT_MAX_DIMS; d++) {
        dt_expr_free(op->dims[d]);
        op->dims[d] = NULL;
    }
}

/* A ConvTranspose's pads [begins, ends] into p (explicit, VALID, SAME_*,
 * or those output_shape implies), or the node rejected: *ok = 0. */
static int transposed_pads(dt_ox_wctx *c, int i, const dt_ox_shape *x, int sp, const int64_t *k,
                           const int64_t *stride, const int64_t *dil, const int64_t *out_pad,
                           int64_t p[4], int *ok)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const dt_ox_attr *ap = dt_ox_attr_find(nd, "auto_pad");
    const char *mode = ap && ap->type == DT_OX_ATTR_STRING && ap->s ? ap->s : "NOTSET";
    const dt_ox_attr *os = dt_ox_attr_find(nd, "output_shape");
    *ok = 0;
    if (os && (os->type != DT_OX_ATTR_INTS || os->n != sp))
        return dt_ox_reject(c, i, "ConvTranspose with a malformed 'output_shape'");
    if (!os && strncmp(mode, "SAME", 4) != 0) {
        if (!strcmp(mode, "VALID"))
            p[0] = p[1] = p[2] = p[3] = 0;
        else if (attr_ints(nd, "pads", 2 * sp, 0, p))
            return dt_ox_reject(c, i, "ConvTranspose with a malformed 'pads'");
    } else {
        /* the full output's extent less the one asked for, cropped as SAME_*
         * places it (SAME_UPPER: the odd one at the end) */
        for (int a = 0; a < sp; a++) {
            int64_t in = 0, total = out_pad[a] + dil[a] * (k[a] - 1) + 1 - stride[a];
            if (os) {
                if (!dt_ox_const_value(x->dims[2 + a], &in))
                    return dt_ox_reject(c, i, "ConvTranspose with an output_shape over a "
                                              "symbolic input size");
                total = stride[a] * (in - 1) + out_pad[a] + dil[a] * (k[a] - 1) + 1 -
                        os->ints[a];
            }
            if (total < 0)
                return dt_ox_reject(c, i, "ConvTranspose whose %s asks for more than its full "
                                          "output (conv2d crops, it does not extend)",
                                    os ? "output_shape" : "auto_pad");
            p[a] = !strcmp(mode, "SAME_UPPER") ? total / 2 : total - total / 2;
            p[sp + a] = total - p[a];
        }
    }
    return pads_in_range(c, i, p, sp, "a negative pad extends the output", ok);
}

/* dt_ox_conv_geometry's, of a Conv (transpose 0) or a ConvTranspose. */
static int conv_geometry(dt_ox_wctx *c, int i, const char *xname, const char *wname,
                         int transpose, dt_ox_op *op, int *ok)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const dt_ox_shape *x = dt_ox_wshape(c, xname), *w = dt_ox_wshape(c, wname);
    *ok = 0;
    int sp = x->rank - 2;
    if (sp != 1 && sp != 2)
        return dt_ox_reject(c, i, "%s over %d spatial axes (conv2d is 2-D; a 1-D Conv is "
                                  "one with H=1)",
                            nd->op_type, sp);
    if (!w->is_const)
        return dt_ox_reject(c, i, "%s with a weight that is not a constant (conv2d packs "
                                  "constant weights)",
                            nd->op_type);
    const dt_op_desc *op_desc = dt_op_find("conv2d");
    op->op = op_desc;
    int64_t group = dt_ox_attr_int_or(nd, "group", 1);
    /* the weight [K, C, R, S] (or [K, C, L]) is an initializer: constant dims */
    int64_t kdim[2], kc, cc;
    for (int a = 0; a < sp; a++)
        if (!dt_ox_const_value(w->dims[2 + a], &kdim[a]))
            return dt_ox_reject(c, i, "Conv with a symbolic kernel size");
    if (!dt_ox_const_value(w->dims[0], &kc) || !dt_ox_const_value(w->dims[1], &cc))
        return dt_ox_reject(c, i, "Conv with symbolic channel counts");
    int64_t st[2], dl[2], p[4], op_pad[2] = {0, 0};
    int good, rc = 0;
    if ((rc = axis_values(c, i, "strides", sp, st, &good)) || !good ||
        (rc = axis_values(c, i, "dilations", sp, dl, &good)) || !good)
        return rc;
    if (transpose && attr_ints(nd, "output_padding", sp, 0, op_pad))
        return dt_ox_reject(c, i, "ConvTranspose with a malformed 'output_padding'");
    if ((rc = transpose ? transposed_pads(c, i, x, sp, kdim, st, dl, op_pad, p, &good)
                        : node_pads(c, i, x, sp, kdim, st, dl, p, &good)) ||
        !good)
        return rc;
    /* conv2d's values by axis (0 H, 1 W) and side: a Conv1d's are its
     * width's, over an unpadded unit height */
    int64_t sh, sw, dh, dw, pt, pb, pl, pr, oph = 0, opw = op_pad[sp - 1];
    if (sp == 1) {
        sh = sw = st[0];
        dh = dw = dl[0];
        pt = pb = 0;
        pl = p[0];
        pr = p[1];
    } else {
        sh = st[0], sw = st[1], dh = dl[0], dw = dl[1];
        pt = p[0], pl = p[1], pb = p[2], pr = p[3];
        oph = op_pad[0];
    }
    /* values that change nothing take their neighbour's, so one convolution
     * has one key: a window of one along an axis has no dilation there; an
     * unpadded axis of one input pixel and a window of one has one output
     * pixel whatever its stride */
    int64_t hin = 0;
    const int h_one = sp == 1 || (dt_ox_const_value(x->dims[2], &hin) && hin == 1);
    if (sp == 1 || kdim[0] == 1)
        dh = dw;
    if (kdim[sp - 1] == 1)
        dw = dh;
    if (kdim[0] == 1 && kdim[sp - 1] == 1)
        dh = dw = 1;
    if (h_one && (sp == 1 || kdim[0] == 1) && !pt && !pb && !oph)
        sh = sw;
    const struct {
        const char *name;
        int64_t v;
        int set;
    } attrs[] = {
        {"stride", sh, 1},        {"pad", pt, 1},          {"dilation", dh, 1},
        {"groups", group, 1},     {"stride_w", sw, sw != sh}, {"dilation_w", dw, dw != dh},
        {"pad_w", pl, pl != pt},  {"pad_b", pb, pb != pt}, {"pad_r", pr, pr != pl},
        {"transpose", 1, transpose}, {"out_pad", oph, oph != 0}, {"out_pad_w", opw, opw != 0},
    };
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++)
        if (attrs[a].set && !in_range(c, i, op_desc, attrs[a].name, attrs[a].v, &rc))
            return rc;
    /* ONNX's weight is [K, C/group, R, S] (ConvTranspose's [C, K/group, R,
     * S]): conv2d's C is the input's */
    if (transpose) {
        const int64_t t = kc;
        kc = cc;
        cc = t;
    }
    if (kc % group && !transpose)
        return dt_ox_reject(c, i, "Conv with group=%" PRId64 " and %" PRId64 " output channels "
                                  "(not a multiple)", group, kc);
    if (transpose && cc % group)
        return dt_ox_reject(c, i, "ConvTranspose with group=%" PRId64 " and %" PRId64 " input "
                                  "channels (not a multiple)", group, cc);
    if (transpose)
        kc *= group;
    else
        cc *= group;
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++)
        if (attrs[a].set && set_int_attr(op, attrs[a].name, attrs[a].v))
            return dt_ox_wfail(c, i, "conv2d has no such attribute value");
    /* N, H, W from the input: the model's variables where they are symbolic */
    struct {
        const char *name;
        dt_expr *x;
    } dims[] = {
        {"N", dt_expr_clone(x->dims[0])},
        {"H", sp == 2 ? dt_expr_clone(x->dims[2]) : dt_expr_const(1)},
        {"W", dt_expr_clone(x->dims[1 + sp])},
        {"C", dt_expr_const(cc)},
        {"K", dt_expr_const(kc)},
        {"R", dt_expr_const(sp == 2 ? kdim[0] : 1)},
        {"S", dt_expr_const(kdim[sp - 1])},
    };
    int n = (int)(sizeof dims / sizeof dims[0]), oom = 0;
    for (int d = 0; d < n; d++) {
        int at = dt_op_dim_index(op_desc, dims[d].name);
        oom |= !dims[d].x;
        if (at >= 0)
            op->dims[at] = dims[d].x;
        else
            dt_expr_free(dims[d].x);
    }
    if (oom) {
        dt_ox_op_clear(op);
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    }
    *ok = 1;
    return 0;
}

int dt_ox_conv_geometry(dt_ox_wctx *c, int i, const char *xname, const char *wname,
                        dt_ox_op *op, int *ok)
{
    return conv_geometry(c, i, xname, wname, 0, op, ok);
}

int dt_ox_finish_conv(dt_ox_wctx *c, dt_ox_op *op, dt_ox_fused *f, const char *y,
                      const dt_expr *k, int bias)
{
    const char *epilogue;
    int rc = dt_ox_match_epilogue(c, y, k, 1, bias, f, &epilogue);
    if (!rc && dt_ox_op_attr(op, "epilogue", epilogue))
        rc = dt_ox_wfail(c, op->node, "conv2d has no such attribute value");
    if (rc) {
        dt_ox_op_clear(op);
        return rc;
    }
    return dt_ox_add_op(c, op, f);
}

int dt_ox_finish_conv_node(dt_ox_wctx *c, int i, dt_ox_op *op, const dt_expr *k)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const char *b = nd->ninputs >= 3 ? nd->inputs[2] : "";
    if (b[0] && !dt_ox_const_vector(c, b, k, 1)) {
        dt_ox_op_clear(op);
        return dt_ox_reject(c, i, "%s whose bias B is not a constant vector of K elements",
                            nd->op_type);
    }
    dt_ox_fused f = {0};
    dt_ox_fuse(&f, i);
    return dt_ox_finish_conv(c, op, &f, nd->outputs[0], k, b[0] != '\0');
}

int dt_ox_match_conv(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    if (nd->ninputs < 2 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "Conv with fewer than two inputs");
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]), *w = dt_ox_wshape(c, nd->inputs[1]);
    const dt_ox_shape *y = dt_ox_wshape(c, nd->outputs[0]);
    if (!x || !w || !y)
        return dt_ox_reject(c, i, "Conv whose shapes are unknown (shape propagation skipped "
                                  "it)");
    if (y->is_const)
        return 0; /* computed from constants once: listed as constant folding */
    const dt_ox_node *wp = w->producer >= 0 ? &c->g->nodes[w->producer] : NULL;
    if (wp && w->is_const && dt_ox_is(wp, "DequantizeLinear") && x->rank >= 3 &&
        x->rank <= 4)
        return dt_ox_match_conv_qdq(c, i, w->producer); /* int8 weights: QDQ */
    dt_ox_op op = {.node = i};
    int ok, rc;
    if (x->rank < 3 || x->rank > 4 || !w->is_const)
        return dt_ox_conv_geometry(c, i, nd->inputs[0], nd->inputs[1], &op, &ok);
    if (x->elem_type == DT_OX_FLOAT && w->elem_type == DT_OX_FLOAT)
        op.dtype = DT_DTYPE_F32;
    else if (x->elem_type == DT_OX_BFLOAT16 && w->elem_type == DT_OX_BFLOAT16)
        op.dtype = DT_DTYPE_BF16;
    else
        return dt_ox_reject(c, i, "Conv of %s tensors: conv2d takes float (f32) or bfloat16",
                            dt_ox_type_name(x->elem_type));
    if ((rc = dt_ox_conv_geometry(c, i, nd->inputs[0], nd->inputs[1], &op, &ok)) || !ok)
        return rc;
    return dt_ox_finish_conv_node(c, i, &op, w->dims[0]);
}

int dt_ox_match_conv_transpose(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    if (nd->ninputs < 2 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "ConvTranspose with fewer than two inputs");
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]), *w = dt_ox_wshape(c, nd->inputs[1]);
    const dt_ox_shape *y = dt_ox_wshape(c, nd->outputs[0]);
    if (!x || !w || !y)
        return dt_ox_reject(c, i, "ConvTranspose whose shapes are unknown (shape propagation "
                                  "skipped it)");
    if (y->is_const)
        return 0; /* constant folding */
    dt_ox_op op = {.node = i};
    int ok, rc;
    if (x->rank < 3 || x->rank > 4 || !w->is_const)
        return conv_geometry(c, i, nd->inputs[0], nd->inputs[1], 1, &op, &ok);
    if (x->elem_type == DT_OX_FLOAT && w->elem_type == DT_OX_FLOAT)
        op.dtype = DT_DTYPE_F32;
    else if (x->elem_type == DT_OX_BFLOAT16 && w->elem_type == DT_OX_BFLOAT16)
        op.dtype = DT_DTYPE_BF16;
    else
        return dt_ox_reject(c, i, "ConvTranspose of %s tensors: conv2d takes float (f32) or "
                                  "bfloat16", dt_ox_type_name(x->elem_type));
    if ((rc = conv_geometry(c, i, nd->inputs[0], nd->inputs[1], 1, &op, &ok)) || !ok)
        return rc;
    /* its output channels: conv2d's K, the weight's second dim times group */
    dt_expr *k = dt_expr_clone(op.dims[dt_op_dim_index(op.op, "K")]);
    if (!k) {
        dt_ox_op_clear(&op);
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    }
    rc = dt_ox_finish_conv_node(c, i, &op, k);
    dt_expr_free(k);
    return rc;
}
