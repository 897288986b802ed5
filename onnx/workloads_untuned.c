/* What dtune does not tune: every node no op covers, grouped by what it is
 * (op type, or a pattern such as a spelled-out LayerNorm) and why; the
 * groups ordered by kind (what costs time first, shape arithmetic and
 * constants last), then by first appearance (docs/onnx-import.md, "What is
 * not tuned"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/flops.h"
#include "onnx/op_table.h"
#include "onnx/workloads_match.h"

typedef dt_ox_kind kind;

/* The reason of each kind (a kind's nodes without a reason of their own). */
static const char *const kind_why[] = {
    [DT_OX_KIND_GEMM] = NULL,
    [DT_OX_KIND_CONV] = "a convolution conv2d does not express (transposed, or quantized "
                         "as ConvInteger or QLinearConv)",
    [DT_OX_KIND_SOFTMAX] = "softmax: not a GEMM",
    [DT_OX_KIND_NORM] = "normalization: not a GEMM",
    [DT_OX_KIND_REDUCE] = "reduction: not a GEMM",
    [DT_OX_KIND_POOL] = "pooling: not a GEMM",
    [DT_OX_KIND_ELEMENTWISE] = "elementwise: not a GEMM",
    [DT_OX_KIND_QUANT] = "quantizes for an op dtune does not tune",
    [DT_OX_KIND_MOVEMENT] = "data movement: not a GEMM",
    [DT_OX_KIND_OTHER] = "not a GEMM: dtune tunes dense and batch_matmul",
    [DT_OX_KIND_SHAPE] = "computes shapes and indices from known values: no tensor work",
    [DT_OX_KIND_FOLDING] = "computed once from initializers",
    [DT_OX_KIND_CONSTANT] = "a constant: no computation",
};

/* The kind of an op type (onnx/op_table.c); a com.microsoft op the table
 * does not list by its name: a LayerNormalization or a Gelu variant. */
static kind kind_of_op(const dt_ox_optype *op, const dt_ox_node *x)
{
    if (op)
        return op->kind;
    if (!strcmp(x->domain, "com.microsoft") && strstr(x->op_type, "LayerNormalization"))
        return DT_OX_KIND_NORM;
    if (!strcmp(x->domain, "com.microsoft") && strstr(x->op_type, "Gelu"))
        return DT_OX_KIND_ELEMENTWISE; /* not after a GEMM, or not the erf GELU (FastGelu) */
    return DT_OX_KIND_OTHER;
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
    const dt_ox_optype *op = dt_ox_optype_find(x->domain, x->op_type);
    kind k;
    if (dflt)
        *what = x->op_type;
    else {
        snprintf(buf, n, "%s.%s", x->domain, x->op_type);
        *what = buf;
    }
    if (op && op->kind == DT_OX_KIND_CONSTANT)
        k = DT_OX_KIND_CONSTANT;
    else if (c->why[i]) {
        *why = c->why[i];
        return DT_OX_KIND_GEMM;
    } else if (op && op->gemm_why && !dt_ox_all_const(c, i)) {
        /* a quantized GEMM in a form dtune has no dtype for */
        *why = op->gemm_why;
        return DT_OX_KIND_GEMM;
    } else if (known_values(c, i) || (op && op->kind == DT_OX_KIND_SHAPE)) {
        /* Range makes indices (position ids) from a length, even when the
         * length is symbolic and its values are not known */
        *what = "shape arithmetic";
        k = DT_OX_KIND_SHAPE;
    } else if (dt_ox_all_const(c, i)) {
        *what = "constant folding";
        k = DT_OX_KIND_FOLDING;
    } else if (dequantizes_embedding(c, i)) {
        *why = EMBEDDING_DQ_WHY;
        return DT_OX_KIND_QUANT;
    } else
        k = kind_of_op(op, x);
    *why = kind_why[k];
    return k;
}

/* Records node i in the GEMM-like nodes of the coverage when it is one:
 * covered, or with the listing's reason.  0, or DT_ENOMEM. */
static int note_gemm(dt_ox_wctx *c, int i, const char *why)
{
    if (!dt_ox_gemm_like(&c->g->nodes[i]))
        return 0;
    dt_ox_wl *wl = c->wl;
    dt_ox_gemm_node *gs = realloc(wl->gemm, (size_t)(wl->ngemm + 1) * sizeof *gs);
    if (!gs)
        return DT_ENOMEM;
    wl->gemm = gs;
    dt_ox_gemm_node *g = &gs[wl->ngemm];
    *g = (dt_ox_gemm_node){.node = i, .covered = why == NULL, .why = NULL};
    if (why && !(g->why = strdup(why)))
        return DT_ENOMEM;
    wl->ngemm++;
    return 0;
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
        if (c->cover[i] >= 0) {
            rc = note_gemm(c, i, NULL) ? -1 : 0;
            continue;
        }
        char buf[300], why_note[640];
        const char *what = LN_WHAT, *why = kind_why[DT_OX_KIND_NORM];
        kind k = DT_OX_KIND_NORM;
        /* a recurrent cell whose products are ops is listed for its gates,
         * and its GEMM work counts as tuned */
        int cell = label[i] == LABEL_NONE && dt_ox_rnn_gates(c, i, buf, sizeof buf, &what, &why);
        if (cell)
            k = DT_OX_KIND_ELEMENTWISE;
        else if (label[i] == LABEL_NONE)
            k = classify(c, i, buf, sizeof buf, &what, &why);
        /* an op without a shape rule (or reading a tensor of unknown
         * shape) says where its shapes came from */
        const char *note = dt_ox_node_shapes_note(c->s, i);
        if (note) {
            snprintf(why_note, sizeof why_note, "%s (%s)", why, note);
            why = why_note;
        }
        if (note_gemm(c, i, cell ? NULL : why)) {
            rc = -1;
            break;
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
