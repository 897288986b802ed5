/* dt_ox_extract: every GEMM node tried against the patterns, then the
 * nodes that only feed extracted ops absorbed into them, then the rest
 * listed as untuned (onnx/workloads.h). */
#include <stdlib.h>
#include <string.h>

#include "onnx/workloads_match.h"

void dt_ox_wl_free(dt_ox_wl *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->nops; i++) {
        for (int d = 0; d < DT_MAX_DIMS; d++)
            dt_expr_free(w->ops[i].dims[d]);
        dt_expr_free(w->ops[i].count);
    }
    free(w->ops);
    for (int i = 0; i < w->nuntuned; i++) {
        free(w->untuned[i].what);
        free(w->untuned[i].why);
    }
    free(w->untuned);
    for (int i = 0; i < w->ngemm; i++)
        free(w->gemm[i].why);
    free(w->gemm);
    free(w);
}

int dt_ox_op_attr(dt_ox_op *op, const char *name, const char *text)
{
    int a = dt_op_attr_index(op->op, name), v;
    if (a < 0 || dt_attr_parse(&op->op->attrs[a], text, &v))
        return -1;
    op->attrs[a] = v;
    op->attrs_set |= 1u << a;
    return 0;
}

int dt_ox_op_attr_value(const dt_ox_op *op, int a)
{
    return op->attrs_set & (1u << a) ? op->attrs[a] : op->op->attrs[a].default_index;
}

/* How node i may be absorbed: 0 not at all, 1 into any op, 2 only into a
 * quantized op (it quantizes that op's input). */
static int absorb_kind(const dt_ox_wctx *c, int i)
{
    const dt_ox_node *n = &c->g->nodes[i];
    if (c->absorb[i])
        return 1;
    if (dt_ox_is_quant_node(n)) {
        /* a DequantizeLinear of a constant weight is constant folding */
        const dt_ox_shape *o = n->noutputs ? dt_ox_wshape(c, n->outputs[0]) : NULL;
        return o && o->is_const ? 1 : 2;
    }
    return dt_ox_all_const(c, i);
}

/* Absorbs node i when it can be: 1 when it was. */
static int absorb_one(dt_ox_wctx *c, int i)
{
    int kind = c->cover[i] < 0 ? absorb_kind(c, i) : 0;
    if (!kind)
        return 0;
    const dt_ox_node *n = &c->g->nodes[i];
    int op = -1, ok = 1;
    for (int k = 0; k < n->noutputs && ok; k++) {
        if (!n->outputs[k][0])
            continue;
        int ncons = 0;
        const int *cons = dt_ox_consumers(c->s, n->outputs[k], &ncons);
        ok = !dt_ox_is_graph_output(c->s, n->outputs[k]);
        for (int j = 0; j < ncons && ok; j++) {
            int by = c->cover[cons[j]];
            ok = by >= 0 && (kind == 1 || dt_dtype_quantized(c->wl->ops[by].dtype));
            if (op < 0)
                op = by;
        }
    }
    if (!ok || op < 0)
        return 0;
    c->cover[i] = op;
    c->wl->ops[op].nnodes++;
    c->wl->ntuned++;
    return 1;
}

/* Covers the nodes whose every output goes only to covered nodes of one
 * kind that fits (absorb_kind).  In reverse node order, so a chain
 * (QuantizeLinear → DequantizeLinear → MatMul) is absorbed in one pass when
 * the file lists its nodes in topological order, as ONNX requires; another
 * pass runs while one absorbed something, for files that do not. */
static void absorb(dt_ox_wctx *c)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = c->g->nnodes - 1; i >= 0; i--)
            changed |= absorb_one(c, i);
    }
}

int dt_ox_extract(const dt_ox_graph *g, const dt_ox_shapes *s, dt_ox_wl **out, dt_err *e)
{
    *out = NULL;
    size_t n = (size_t)g->nnodes;
    dt_ox_wctx c = {.g = g, .s = s, .e = e};
    c.cover = malloc((n ? n : 1) * sizeof *c.cover);
    c.absorb = calloc(n ? n : 1, 1);
    c.why = calloc(n ? n : 1, sizeof *c.why);
    c.wl = calloc(1, sizeof *c.wl);
    int rc = 0;
    if (!c.cover || !c.absorb || !c.why || !c.wl)
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        c.cover[i] = -1;
    for (int i = 0; !rc && i < g->nnodes; i++) {
        const dt_ox_node *nd = &g->nodes[i];
        if (c.cover[i] >= 0)
            continue;
        if (dt_ox_is(nd, "MatMul") || dt_ox_is(nd, "Gemm"))
            rc = dt_ox_match_matmul(&c, i);
        else if (dt_ox_is(nd, "MatMulInteger"))
            rc = dt_ox_match_matmul_integer(&c, i);
        else if (dt_ox_is(nd, "Conv"))
            rc = dt_ox_match_conv(&c, i);
        else if (dt_ox_is(nd, "ConvInteger"))
            rc = dt_ox_match_conv_integer(&c, i);
        else if (dt_ox_is(nd, "QLinearMatMul") || dt_ox_is(nd, "QLinearConv"))
            rc = dt_ox_match_qlinear(&c, i);
        else if (dt_ox_is(nd, "ConvTranspose"))
            rc = dt_ox_match_conv_transpose(&c, i);
        else if (dt_ox_is_attention(nd))
            rc = dt_ox_match_attention(&c, i);
        else if (dt_ox_is_recurrent(nd))
            rc = dt_ox_match_rnn(&c, i);
    }
    if (!rc) {
        absorb(&c);
        rc = dt_ox_collect_untuned(&c);
    }
    for (size_t i = 0; c.why && i < n; i++)
        free(c.why[i]);
    free(c.why);
    free(c.absorb);
    free(c.cover);
    if (rc) {
        dt_ox_wl_free(c.wl);
        return rc;
    }
    *out = c.wl;
    return 0;
}
