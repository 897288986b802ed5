/* What dtune does not tune: every node no op covers, grouped by what it is
 * (op type, or a pattern such as a spelled-out LayerNorm) and why; the
 * groups ordered by kind (what costs time first, shape arithmetic and
 * constants last), then by first appearance (docs/onnx-import.md, "What is
 * not tuned"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/workloads_match.h"

static const char *const elementwise[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Exp", "Log", "Erf", "Tanh",
    "Sigmoid", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Gelu", "HardSigmoid",
    "HardSwish", "Softplus", "Softsign", "Mish", "Neg", "Abs", "Ceil", "Floor", "Round", "Sign",
    "Clip", "Max", "Min", "Mean", "Sum", "Mod", "Cast", "CastLike", "Where", "Equal", "Less",
    "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "ThresholdedRelu",
    "Shrink", NULL};
static const char *const movement[] = {
    "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
    "Gather", "GatherElements", "GatherND", "Expand", "Tile", "Pad", "Identity", "Dropout",
    "ScatterND", "ScatterElements", "DepthToSpace", "SpaceToDepth", "Resize", "Upsample",
    "Trilu", "Compress", "OneHot", NULL};
static const char *const reduction[] = {
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "TopK",
    "CumSum", NULL};
static const char *const normalization[] = {
    "LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
    "LpNormalization", "MeanVarianceNormalization", "LRN", NULL};
static const char *const pooling[] = {"MaxPool", "AveragePool", "GlobalAveragePool",
                                      "GlobalMaxPool", "LpPool", "GlobalLpPool", "MaxRoiPool",
                                      NULL};
static const char *const conv[] = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", NULL};

static int in(const char *const *list, const char *op)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], op))
            return 1;
    return 0;
}

/* Kinds of untuned nodes, in the order the list gives them: what costs
 * time first (a GEMM dtune could not express, then the other compute), what
 * does no tensor work last. */
typedef enum {
    K_GEMM, /* a MatMul/Gemm left untuned: its own reason */
    K_CONV,
    K_SOFTMAX,
    K_NORM,
    K_REDUCE,
    K_POOL,
    K_ELEMENTWISE,
    K_QUANT,
    K_MOVEMENT,
    K_OTHER,
    K_SHAPE,
    K_FOLDING,
    K_CONSTANT,
} kind;

static const char *const kind_why[] = {
    [K_GEMM] = NULL,
    [K_CONV] = "conv2d is not a dtune op yet",
    [K_SOFTMAX] = "softmax: not a GEMM",
    [K_NORM] = "normalization: not a GEMM",
    [K_REDUCE] = "reduction: not a GEMM",
    [K_POOL] = "pooling: not a GEMM",
    [K_ELEMENTWISE] = "elementwise: not a GEMM",
    [K_QUANT] = "quantizes for an op dtune does not tune",
    [K_MOVEMENT] = "data movement: not a GEMM",
    [K_OTHER] = "not a GEMM: dtune tunes dense and batch_matmul",
    [K_SHAPE] = "computes shapes and indices from known values: no tensor work",
    [K_FOLDING] = "computed once from initializers",
    [K_CONSTANT] = "a constant: no computation",
};

/* The kind of a default-domain op type. */
static kind kind_of_op(const char *op)
{
    if (in(conv, op))
        return K_CONV;
    if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax") || !strcmp(op, "Hardmax"))
        return K_SOFTMAX;
    if (in(normalization, op))
        return K_NORM;
    if (in(reduction, op))
        return K_REDUCE;
    if (in(pooling, op))
        return K_POOL;
    if (in(elementwise, op))
        return K_ELEMENTWISE;
    if (in(movement, op))
        return K_MOVEMENT;
    if (!strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear") ||
        !strcmp(op, "DynamicQuantizeLinear"))
        return K_QUANT;
    return K_OTHER;
}

/* ---- patterns of several nodes ---- */

#define LN_WHAT "LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div)"

/* label[i]: LABEL_NONE, or the node is in a spelled-out LayerNorm
 * (LABEL_LAYERNORM_FIRST for the pattern's first node, which counts the
 * occurrence; the groups themselves are made in node order). */
#define LABEL_NONE (-1)
#define LABEL_LAYERNORM (-2)
#define LABEL_LAYERNORM_FIRST (-3)

static const dt_ox_node *nd(const dt_ox_wctx *c, int i) { return &c->g->nodes[i]; }

/* The one uncovered, unlabelled consumer of tensor that is op_type (with
 * an input and an output), or -1. */
static int next(const dt_ox_wctx *c, const int *label, const char *tensor, const char *op)
{
    int n = 0;
    const int *cons = dt_ox_consumers(c->s, tensor, &n);
    int found = -1;
    for (int k = 0; k < n; k++) {
        int j = cons[k];
        if (c->cover[j] < 0 && label[j] == LABEL_NONE && dt_ox_is(nd(c, j), op) &&
            nd(c, j)->ninputs >= 1 && nd(c, j)->noutputs >= 1) {
            if (found >= 0 && found != j)
                return -1;
            found = j;
        }
    }
    return found;
}

/* A LayerNorm spelled out from ReduceMean node r: mean, x - mean, its
 * square's mean plus epsilon, square root, division, then optionally the
 * scale Mul and shift Add.  Fills nodes[] (7 or 9) and returns the count, or
 * 0. */
static int match_layernorm(const dt_ox_wctx *c, const int *label, int r, int *nodes)
{
    const dt_ox_node *rn = nd(c, r);
    if (!dt_ox_is(rn, "ReduceMean") || rn->ninputs < 1 || rn->noutputs < 1)
        return 0;
    const char *x = rn->inputs[0];
    int sub = next(c, label, rn->outputs[0], "Sub");
    if (sub < 0 || nd(c, sub)->ninputs != 2 || strcmp(nd(c, sub)->inputs[0], x))
        return 0;
    const char *d = nd(c, sub)->outputs[0];
    int sq = next(c, label, d, "Pow");
    if (sq < 0)
        sq = next(c, label, d, "Mul");
    int div = next(c, label, d, "Div");
    if (sq < 0 || div < 0 || nd(c, div)->ninputs != 2 || strcmp(nd(c, div)->inputs[0], d))
        return 0;
    int r2 = next(c, label, nd(c, sq)->outputs[0], "ReduceMean");
    int add = r2 >= 0 ? next(c, label, nd(c, r2)->outputs[0], "Add") : -1;
    int root = add >= 0 ? next(c, label, nd(c, add)->outputs[0], "Sqrt") : -1;
    if (root < 0 || strcmp(nd(c, div)->inputs[1], nd(c, root)->outputs[0]))
        return 0;
    int k = 0;
    nodes[k++] = r;
    nodes[k++] = sub;
    nodes[k++] = sq;
    nodes[k++] = r2;
    nodes[k++] = add;
    nodes[k++] = root;
    nodes[k++] = div;
    int mul = next(c, label, nd(c, div)->outputs[0], "Mul");
    int shift = mul >= 0 ? next(c, label, nd(c, mul)->outputs[0], "Add") : -1;
    if (shift >= 0) {
        nodes[k++] = mul;
        nodes[k++] = shift;
    }
    return k;
}

/* ---- grouping ---- */

typedef struct {
    dt_ox_wctx *c;
    int cap;
    kind *kinds; /* of each group */
} groups;

/* The index of the (what, why) group, added when new. */
static int group(groups *gs, const char *what, const char *why, kind k)
{
    dt_ox_wl *wl = gs->c->wl;
    for (int i = 0; i < wl->nuntuned; i++)
        if (!strcmp(wl->untuned[i].what, what) && !strcmp(wl->untuned[i].why, why))
            return i;
    if (wl->nuntuned == gs->cap) {
        int cap = gs->cap ? 2 * gs->cap : 16;
        dt_ox_untuned *u = realloc(wl->untuned, (size_t)cap * sizeof *u);
        if (u)
            wl->untuned = u;
        kind *ks = u ? realloc(gs->kinds, (size_t)cap * sizeof *ks) : NULL;
        if (!ks)
            return DT_ENOMEM;
        gs->kinds = ks;
        gs->cap = cap;
    }
    gs->kinds[wl->nuntuned] = k;
    dt_ox_untuned *u = &wl->untuned[wl->nuntuned];
    u->nodes = 0;
    u->instances = 0;
    u->what = strdup(what);
    u->why = strdup(why);
    if (!u->what || !u->why) {
        free(u->what);
        free(u->why);
        return DT_ENOMEM;
    }
    return wl->nuntuned++;
}

/* 1 when every output of node i has known element values (integer shape
 * arithmetic: Shape, Gather of a shape, Unsqueeze, Concat, ...). */
static int known_values(const dt_ox_wctx *c, int i)
{
    const dt_ox_node *n = nd(c, i);
    int outs = 0;
    for (int k = 0; k < n->noutputs; k++) {
        const dt_ox_shape *o = dt_ox_wshape(c, n->outputs[k]);
        if (n->outputs[k][0] && (!o || o->nvals < 0))
            return 0;
        outs += n->outputs[k][0] != 0;
    }
    return outs > 0;
}

/* Quantized GEMMs in forms dtune has no dtype for (a MatMul, Gemm or
 * MatMulInteger a pattern did not take has its own reason instead). */
static const struct {
    const char *domain, *op, *why;
} quant_gemms[] = {
    {"com.microsoft", "MatMulNBits", "4-bit weights: no dtune dtype"},
    {"com.microsoft", "MatMulBnb4", "4-bit weights (bitsandbytes NF4/FP4): no dtune dtype"},
    {"com.microsoft", "MatMulFpQ4", "4-bit weights: no dtune dtype"},
    {"com.microsoft", "GatherBlockQuantized", "a block-quantized embedding table: not a GEMM"},
    {"", "QLinearMatMul", "its u8 output is requantized: dtune's int8 writes f32"},
    {"com.microsoft", "QOrderedMatMul", "int8 in a CUDA-ordered layout: no dtune dtype"},
    {"com.microsoft", "DynamicQuantizeMatMul",
     "a fused dynamic-quantization MatMul: dtune takes its int8 from the "
     "DynamicQuantizeLinear → MatMulInteger pattern"},
    {"com.microsoft", "MatMulIntegerToFloat",
     "a fused MatMulInteger with dequantization: dtune takes its int8 from the "
     "MatMulInteger → Cast → Mul pattern"},
};

/* The reason a quantized GEMM of a kind dtune has no dtype for stays
 * untuned, or NULL. */
static const char *quant_gemm_why(const dt_ox_node *x, int dflt)
{
    for (size_t k = 0; k < sizeof quant_gemms / sizeof quant_gemms[0]; k++)
        if ((quant_gemms[k].domain[0] ? !strcmp(x->domain, quant_gemms[k].domain) : dflt) &&
            !strcmp(x->op_type, quant_gemms[k].op))
            return quant_gemms[k].why;
    return NULL;
}

/* 1 when node i is a DequantizeLinear of rows gathered from a constant
 * table: a quantized embedding lookup (Gather(table_q, ids) →
 * DequantizeLinear), not the input of a GEMM. */
static int dequantizes_embedding(const dt_ox_wctx *c, int i)
{
    const dt_ox_node *x = nd(c, i);
    if (!dt_ox_is(x, "DequantizeLinear") || x->ninputs < 1)
        return 0;
    const dt_ox_shape *in = dt_ox_wshape(c, x->inputs[0]);
    const dt_ox_node *p = in && in->producer >= 0 ? nd(c, in->producer) : NULL;
    if (!p || p->ninputs < 1 || (!dt_ox_is(p, "Gather") && !dt_ox_is(p, "GatherElements")))
        return 0;
    const dt_ox_shape *table = dt_ox_wshape(c, p->inputs[0]);
    return table && table->is_const;
}

#define EMBEDDING_DQ_WHY "dequantizes an embedding table (Gather): not a GEMM"

/* The kind and (what, why) of a single uncovered node; what may be written
 * into buf. */
static kind classify(const dt_ox_wctx *c, int i, char *buf, size_t n, const char **what,
                     const char **why)
{
    const dt_ox_node *x = nd(c, i);
    int dflt = !x->domain[0] || !strcmp(x->domain, "ai.onnx");
    kind k;
    if (dflt)
        *what = x->op_type;
    else {
        snprintf(buf, n, "%s.%s", x->domain, x->op_type);
        *what = buf;
    }
    if (dflt && !strcmp(x->op_type, "Constant"))
        k = K_CONSTANT;
    else if (c->why[i]) {
        *why = c->why[i];
        return K_GEMM;
    } else if (quant_gemm_why(x, dflt) && !dt_ox_all_const(c, i)) {
        *why = quant_gemm_why(x, dflt);
        return K_GEMM;
    } else if (known_values(c, i) || (dflt && !strcmp(x->op_type, "Range"))) {
        /* Range makes indices (position ids) from a length, even when the
         * length is symbolic and its values are not known */
        *what = "shape arithmetic";
        k = K_SHAPE;
    } else if (dt_ox_all_const(c, i)) {
        *what = "constant folding";
        k = K_FOLDING;
    } else if (dequantizes_embedding(c, i)) {
        *why = EMBEDDING_DQ_WHY;
        return K_QUANT;
    } else if (dflt)
        k = kind_of_op(x->op_type);
    else if (!strcmp(x->domain, "com.microsoft") && strstr(x->op_type, "LayerNormalization"))
        k = K_NORM;
    else if (!strcmp(x->domain, "com.microsoft") && strstr(x->op_type, "Gelu"))
        k = K_ELEMENTWISE; /* not after a GEMM, or not the erf GELU (FastGelu) */
    else
        k = K_OTHER;
    *why = kind_why[k];
    return k;
}

/* Orders the groups by kind, keeping first appearance within a kind
 * (insertion sort: stable, and there are few groups). */
static void sort_groups(dt_ox_wl *wl, kind *kinds)
{
    for (int i = 1; i < wl->nuntuned; i++) {
        dt_ox_untuned u = wl->untuned[i];
        kind k = kinds[i];
        int j = i;
        for (; j > 0 && kinds[j - 1] > k; j--) {
            wl->untuned[j] = wl->untuned[j - 1];
            kinds[j] = kinds[j - 1];
        }
        wl->untuned[j] = u;
        kinds[j] = k;
    }
}

int dt_ox_collect_untuned(dt_ox_wctx *c)
{
    int nn = c->g->nnodes;
    int *label = malloc((size_t)(nn ? nn : 1) * sizeof *label);
    if (!label)
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    for (int i = 0; i < nn; i++)
        label[i] = LABEL_NONE;
    /* patterns first: their nodes leave the per-op-type groups */
    for (int i = 0; i < nn; i++) {
        int nodes[9];
        int k = c->cover[i] < 0 && label[i] == LABEL_NONE ? match_layernorm(c, label, i, nodes)
                                                          : 0;
        for (int j = 0; j < k; j++)
            label[nodes[j]] = j ? LABEL_LAYERNORM : LABEL_LAYERNORM_FIRST;
    }
    groups gs = {.c = c, .cap = 0, .kinds = NULL};
    int rc = 0;
    for (int i = 0; i < nn && rc >= 0; i++) {
        if (c->cover[i] >= 0)
            continue;
        char buf[300], why_note[640];
        const char *what = LN_WHAT, *why = kind_why[K_NORM];
        kind k = K_NORM;
        if (label[i] == LABEL_NONE)
            k = classify(c, i, buf, sizeof buf, &what, &why);
        /* an op without a shape rule (or reading a tensor of unknown
         * shape) says where its shapes came from */
        const char *note = dt_ox_node_shapes_note(c->s, i);
        if (note) {
            snprintf(why_note, sizeof why_note, "%s (%s)", why, note);
            why = why_note;
        }
        if ((rc = group(&gs, what, why, k)) >= 0) {
            c->wl->untuned[rc].nodes++;
            /* an op type counts its nodes, a pattern its occurrences */
            c->wl->untuned[rc].instances += label[i] != LABEL_LAYERNORM;
        }
    }
    if (rc >= 0)
        sort_groups(c->wl, gs.kinds);
    free(gs.kinds);
    free(label);
    return rc < 0 ? dt_errf(c->e, DT_ENOMEM, "out of memory") : 0;
}
