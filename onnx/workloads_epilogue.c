/* The epilogue of a dense or a conv2d: the bias Add and the activation
 * after the GEMM or Conv (docs/onnx-import.md, "Patterns").
 *
 * GELU is dtune's erf form, 0.5·x·(1 + erf(x/√2)): the Gelu op (default
 * domain with approximate="none", com.microsoft Gelu, BiasGelu with its
 * bias) or the five nodes PyTorch exports, in any of the three ways the
 * product 0.5 · x · (1 + erf) is associated.  The tanh approximation is a
 * different function and is never fused.  ReLU6 is Clip(0, 6); HardSwish
 * the op (opset 14) or x · HardSigmoid(x) with alpha 1/6, beta 1/2. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx/workloads_match.h"
#include "common/check.h"

#define SQRT2 1.4142135623730951
#define INV_SQRT2 0.7071067811865476

static const dt_ox_node *node_at(const dt_ox_wctx *c, int i) { return &c->g->nodes[i]; }

/* Node i is a binary `op` of x and a constant near want (either order); 1. */
static int binary_with_const(const dt_ox_wctx *c, int i, const char *op, const char *x,
                             double want)
{
    const dt_ox_node *n = node_at(c, i);
    int o = dt_ox_other_input(n, x);
    return dt_ox_is(n, op) && o >= 0 && dt_ox_const_near(c, n->inputs[o], want);
}

/* The elementwise node i keeps the shape of x (no broadcast to a larger
 * result, which would make it something else than an epilogue). */
static int keeps_shape(const dt_ox_wctx *c, int i, const dt_ox_shape *x)
{
    const dt_ox_node *n = node_at(c, i);
    return n->noutputs >= 1 && dt_ox_same_dims(dt_ox_wshape(c, n->outputs[0]), x);
}

/* x/√2 or x·(1/√2) → Erf → + 1: returns the Add's output node, or -1; the
 * three nodes go to nodes[0..3). */
static int match_one_plus_erf(const dt_ox_wctx *c, int scale, const char *x, int *nodes)
{
    const dt_ox_node *s = node_at(c, scale);
    int ok = (dt_ox_is(s, "Div") && s->ninputs == 2 && !strcmp(s->inputs[0], x) &&
              dt_ox_const_near(c, s->inputs[1], SQRT2)) ||
             binary_with_const(c, scale, "Mul", x, INV_SQRT2);
    if (!ok || s->noutputs != 1)
        return -1;
    int erf = dt_ox_sole_consumer(c, s->outputs[0]);
    if (erf < 0 || !dt_ox_is(node_at(c, erf), "Erf"))
        return -1;
    const char *e = node_at(c, erf)->outputs[0];
    int add = dt_ox_sole_consumer(c, e);
    if (add < 0 || !binary_with_const(c, add, "Add", e, 1.0))
        return -1;
    nodes[0] = scale;
    nodes[1] = erf;
    nodes[2] = add;
    return add;
}

/* The erf GELU of x: 0.5 · x · (1 + erf(x/√2)).  x feeds exactly two nodes:
 * the scaling into Erf and a Mul P.  With a = 1 + erf(...):
 *   A  P = x·a,   Q = P·0.5
 *   B  P = x·0.5, Q = P·a
 *   C  T = a·0.5, P = x·T
 * Returns 1 and the five nodes in nodes[]. */
static int match_erf_gelu(const dt_ox_wctx *c, const char *x, int *nodes)
{
    int cons[2];
    if (dt_ox_data_consumers(c, x, cons, 2) != 2 || dt_ox_is_graph_output(c->s, x) ||
        c->cover[cons[0]] >= 0 || c->cover[cons[1]] >= 0)
        return 0;
    const dt_ox_shape *xs = dt_ox_wshape(c, x);
    for (int k = 0; k < 2; k++) {
        int add = match_one_plus_erf(c, cons[k], x, nodes);
        int p = cons[1 - k];
        const dt_ox_node *pn = node_at(c, p);
        if (add < 0 || !dt_ox_is(pn, "Mul") || dt_ox_other_input(pn, x) < 0 ||
            !keeps_shape(c, p, xs))
            continue;
        const char *a = node_at(c, add)->outputs[0], *pout = pn->outputs[0];
        const char *pother = pn->inputs[dt_ox_other_input(pn, x)];
        int q;
        if (!strcmp(pother, a)) { /* A */
            q = dt_ox_sole_consumer(c, pout);
            if (dt_ox_sole_consumer(c, a) != p || q < 0 ||
                !binary_with_const(c, q, "Mul", pout, 0.5) || !keeps_shape(c, q, xs))
                continue;
            nodes[3] = p;
            nodes[4] = q;
        } else if (dt_ox_const_near(c, pother, 0.5)) { /* B */
            q = dt_ox_sole_consumer(c, pout);
            if (q < 0 || dt_ox_sole_consumer(c, a) != q || !dt_ox_is(node_at(c, q), "Mul") ||
                dt_ox_other_input(node_at(c, q), pout) < 0 ||
                strcmp(node_at(c, q)->inputs[dt_ox_other_input(node_at(c, q), pout)], a) ||
                !keeps_shape(c, q, xs))
                continue;
            nodes[3] = p;
            nodes[4] = q;
        } else { /* C: pother = a·0.5 */
            int t = dt_ox_sole_consumer(c, a);
            if (t < 0 || !binary_with_const(c, t, "Mul", a, 0.5) ||
                strcmp(node_at(c, t)->outputs[0], pother) ||
                dt_ox_sole_consumer(c, pother) != p)
                continue;
            nodes[3] = t;
            nodes[4] = p;
        }
        return 1;
    }
    return 0;
}

/* 1 when tensor is a constant float vector of n elements along axis `axis`
 * (-1: the last) of a result x of rank `rank`: every other dim 1, with
 * numpy broadcasting's leading ones optional ([n], [1, n] along the last
 * axis; [n, 1, 1], [1, n, 1, 1] along NCHW's channels). */
int dt_ox_axis_vector(const dt_ox_wctx *c, const char *tensor, const dt_expr *n, int rank,
                      int axis)
{
    if (axis < 0 || axis == rank - 1)
        return dt_ox_const_vector(c, tensor, n, rank);
    const dt_ox_shape *sh = dt_ox_wshape(c, tensor);
    if (!sh || !sh->is_const || sh->rank < rank - axis || sh->rank > rank ||
        (sh->elem_type != DT_OX_FLOAT && sh->elem_type != DT_OX_BFLOAT16))
        return 0;
    int at = sh->rank - (rank - axis); /* axis, right-aligned */
    for (int i = 0; i < sh->rank; i++) {
        const dt_expr *d = sh->dims[i];
        if (i == at ? !dt_expr_equal(d, n) : d->kind != DT_EXPR_CONST || d->value != 1)
            return 0;
    }
    return 1;
}

/* Clip node nd as ReLU6: min 0 and max 6, as attributes (opset < 11) or as
 * constant inputs (opset 11 on). */
static int is_relu6_clip(const dt_ox_wctx *c, const dt_ox_node *nd)
{
    if (nd->ninputs >= 3 && nd->inputs[1][0] && nd->inputs[2][0])
        return dt_ox_const_near(c, nd->inputs[1], 0.0) && dt_ox_const_near(c, nd->inputs[2], 6.0);
    if (nd->ninputs > 1 && nd->inputs[1][0])
        return 0; /* a min without a max */
    const dt_ox_attr *lo = dt_ox_attr_find(nd, "min"), *hi = dt_ox_attr_find(nd, "max");
    return lo && hi && lo->type == DT_OX_ATTR_FLOAT && hi->type == DT_OX_ATTR_FLOAT &&
           lo->f == 0.0 && hi->f == 6.0;
}

/* Node i as a single-node activation of x: 1 with *act ("relu", "gelu",
 * "relu6" for Clip(0, 6), "hardswish"), *adds_bias set for BiasGelu (bias
 * and GELU in one node). */
static int match_act_node(const dt_ox_wctx *c, int i, const char *x, const dt_expr *n,
                          int axis, const char **act, int *adds_bias)
{
    const dt_ox_node *nd = node_at(c, i);
    *adds_bias = 0;
    if (nd->ninputs < 1 || nd->noutputs < 1 || strcmp(nd->inputs[0], x))
        return 0;
    if (dt_ox_is(nd, "Relu")) {
        *act = "relu";
        return 1;
    }
    if (dt_ox_is(nd, "Clip") && is_relu6_clip(c, nd)) {
        *act = "relu6";
        return 1;
    }
    if (dt_ox_is(nd, "HardSwish")) {
        *act = "hardswish";
        return 1;
    }
    if (dt_ox_is(nd, "Gelu")) {
        const dt_ox_attr *ap = dt_ox_attr_find(nd, "approximate");
        if (ap && ap->s && strcmp(ap->s, "none"))
            return 0; /* tanh */
        *act = "gelu";
        return 1;
    }
    if (dt_ox_is_ms(nd, "Gelu")) {
        *act = "gelu";
        return 1;
    }
    if (dt_ox_is_ms(nd, "BiasGelu") && nd->ninputs == 2) {
        const dt_ox_shape *xs = dt_ox_wshape(c, x);
        if (!xs || !dt_ox_axis_vector(c, nd->inputs[1], n, xs->rank, axis))
            return 0;
        *act = "gelu";
        *adds_bias = 1;
        return 1;
    }
    return 0;
}

/* HardSwish before opset 14: x · HardSigmoid(x) with alpha 1/6, beta 1/2
 * (x feeds exactly the two; the HardSigmoid only the Mul).  Returns 1 and
 * the two nodes in nodes[]. */
static int match_hardsigmoid_swish(const dt_ox_wctx *c, const char *x, int *nodes)
{
    int cons[2];
    if (dt_ox_data_consumers(c, x, cons, 2) != 2 || dt_ox_is_graph_output(c->s, x) ||
        c->cover[cons[0]] >= 0 || c->cover[cons[1]] >= 0)
        return 0;
    for (int k = 0; k < 2; k++) {
        const dt_ox_node *h = node_at(c, cons[k]), *m = node_at(c, cons[1 - k]);
        if (!dt_ox_is(h, "HardSigmoid") || h->noutputs != 1 || !dt_ox_is(m, "Mul") ||
            m->ninputs != 2)
            continue;
        const dt_ox_attr *al = dt_ox_attr_find(h, "alpha"), *be = dt_ox_attr_find(h, "beta");
        const double alpha = al && al->type == DT_OX_ATTR_FLOAT ? al->f : 0.2;
        const double beta = be && be->type == DT_OX_ATTR_FLOAT ? be->f : 0.5;
        if (fabs(alpha - 1.0 / 6.0) > 1e-6 || fabs(beta - 0.5) > 1e-6 ||
            dt_ox_sole_consumer(c, h->outputs[0]) != cons[1 - k] ||
            dt_ox_other_input(m, x) < 0 ||
            strcmp(m->inputs[dt_ox_other_input(m, x)], h->outputs[0]) ||
            !keeps_shape(c, cons[1 - k], dt_ox_wshape(c, x)))
            continue;
        nodes[0] = cons[k];
        nodes[1] = cons[1 - k];
        return 1;
    }
    return 0;
}

int dt_ox_match_epilogue(dt_ox_wctx *c, const char *y, const dt_expr *n, int axis,
                         int has_bias, dt_ox_fused *f, const char **epilogue)
{
    int bias = has_bias;
    const char *cur = y;
    const dt_ox_shape *ys = dt_ox_wshape(c, y);
    *epilogue = bias ? "bias" : "none";
    if (!ys)
        return 0;
    if (!bias) {
        int add = dt_ox_sole_consumer(c, cur);
        const dt_ox_node *an = add >= 0 ? node_at(c, add) : NULL;
        int o = an ? dt_ox_other_input(an, cur) : -1;
        if (an && dt_ox_is(an, "Add") && o >= 0 &&
            dt_ox_axis_vector(c, an->inputs[o], n, ys->rank, axis) && keeps_shape(c, add, ys) &&
            dt_ox_fuse(f, add) == 0) {
            bias = 1;
            cur = an->outputs[0];
        }
    }
    const char *act = NULL;
    int act_node = dt_ox_sole_consumer(c, cur), adds_bias = 0;
    int gelu[5], hswish[2];
    if (act_node >= 0 && match_act_node(c, act_node, cur, n, axis, &act, &adds_bias) &&
        !(adds_bias && bias) && f->n + 1 <= DT_OX_MAX_FUSED) {
        dt_ox_fuse(f, act_node);
        bias |= adds_bias;
    } else if (f->n + 2 <= DT_OX_MAX_FUSED && match_hardsigmoid_swish(c, cur, hswish)) {
        dt_ox_fuse(f, hswish[0]);
        dt_ox_fuse(f, hswish[1]);
        act = "hardswish";
    } else if (f->n + 5 <= DT_OX_MAX_FUSED && match_erf_gelu(c, cur, gelu)) {
        for (int i = 0; i < 5; i++)
            dt_ox_fuse(f, gelu[i]);
        act = "gelu";
    } else {
        act = NULL;
    }
    /* the value of the ops' epilogue attribute (ops/op.h's one table) */
    static const char *const values[DT_EPILOGUE_COUNT] = DT_EPILOGUE_VALUES;
    char want[32];
    snprintf(want, sizeof want, "%s%s%s", bias ? "bias" : act ? "" : "none",
             bias && act ? "+" : "", act ? act : "");
    *epilogue = NULL;
    for (int i = 0; i < DT_EPILOGUE_COUNT && !*epilogue; i++)
        if (!strcmp(values[i], want))
            *epilogue = values[i];
    DT_ASSERT(*epilogue, "a matched epilogue is one of the ops' values");
    return 0;
}
