/* Lookups and outcomes shared by the pattern matchers (workloads_match.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "onnx/workloads_match.h"

const dt_ox_shape *dt_ox_wshape(const dt_ox_wctx *c, const char *tensor)
{
    return tensor[0] ? dt_ox_shape_of(c->s, tensor) : NULL;
}

int dt_ox_all_const(const dt_ox_wctx *c, int i)
{
    const dt_ox_node *n = &c->g->nodes[i];
    int outs = 0;
    for (int k = 0; k < n->noutputs; k++) {
        const dt_ox_shape *o = dt_ox_wshape(c, n->outputs[k]);
        if (n->outputs[k][0] && (!o || !o->is_const))
            return 0;
        outs += n->outputs[k][0] != 0;
    }
    return outs > 0;
}

int dt_ox_is(const dt_ox_node *n, const char *op_type)
{
    return (!n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op_type);
}

int dt_ox_is_ms(const dt_ox_node *n, const char *op_type)
{
    return !strcmp(n->domain, "com.microsoft") && !strcmp(n->op_type, op_type);
}

int dt_ox_data_consumers(const dt_ox_wctx *c, const char *tensor, int *out, int max)
{
    int n = 0, k = 0;
    const int *cons = dt_ox_consumers(c->s, tensor, &n);
    for (int i = 0; i < n; i++) {
        if (dt_ox_is(&c->g->nodes[cons[i]], "Shape") || (i > 0 && cons[i] == cons[i - 1]))
            continue;
        if (k < max)
            out[k] = cons[i];
        k++;
    }
    return k;
}

int dt_ox_sole_consumer(const dt_ox_wctx *c, const char *tensor)
{
    int one;
    if (dt_ox_data_consumers(c, tensor, &one, 1) != 1 || dt_ox_is_graph_output(c->s, tensor) ||
        c->cover[one] >= 0)
        return -1;
    return one;
}

int dt_ox_other_input(const dt_ox_node *n, const char *x)
{
    if (n->ninputs != 2)
        return -1;
    if (!strcmp(n->inputs[0], x))
        return 1;
    return strcmp(n->inputs[1], x) ? -1 : 0;
}

/* The stored values of a constant: an initializer, or the value of the
 * Constant node producing it; NULL when neither holds them. */
static const dt_ox_tensor *stored_values(const dt_ox_wctx *c, const char *tensor)
{
    const dt_ox_tensor *t = dt_ox_init_find(c->g, tensor);
    if (!t) {
        const dt_ox_shape *sh = dt_ox_wshape(c, tensor);
        if (!sh || sh->producer < 0 || !dt_ox_is(&c->g->nodes[sh->producer], "Constant"))
            return NULL;
        const dt_ox_attr *a = dt_ox_attr_find(&c->g->nodes[sh->producer], "value");
        t = a && a->type == DT_OX_ATTR_TENSOR ? &a->t : NULL;
    }
    return t && t->has_values ? t : NULL;
}

static int near(double v, double want) { return fabs(v - want) <= 1e-5 * fabs(want); }

int dt_ox_const_near(const dt_ox_wctx *c, const char *tensor, double want)
{
    const dt_ox_shape *sh = dt_ox_wshape(c, tensor);
    if (!sh || !sh->is_const)
        return 0;
    if (sh->has_fval)
        return near(sh->fval, want);
    const dt_ox_tensor *t = stored_values(c, tensor);
    if (!t || !t->fvals || t->numel < 1)
        return 0;
    for (int64_t i = 0; i < t->numel; i++)
        if (!near(t->fvals[i], want))
            return 0;
    return 1;
}

int dt_ox_same_dims(const dt_ox_shape *a, const dt_ox_shape *b)
{
    if (!a || !b || a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (!dt_expr_equal(a->dims[i], b->dims[i]))
            return 0;
    return 1;
}

static int is_one(const dt_expr *x) { return x->kind == DT_EXPR_CONST && x->value == 1; }

int dt_ox_const_vector(const dt_ox_wctx *c, const char *tensor, const dt_expr *n, int rank)
{
    const dt_ox_shape *sh = dt_ox_wshape(c, tensor);
    if (!sh || !sh->is_const || sh->rank < 1 || sh->rank > rank ||
        (sh->elem_type != DT_OX_FLOAT && sh->elem_type != DT_OX_BFLOAT16))
        return 0;
    for (int i = 0; i < sh->rank - 1; i++)
        if (!is_one(sh->dims[i]))
            return 0;
    return dt_expr_equal(sh->dims[sh->rank - 1], n);
}

int dt_ox_is_single(const dt_ox_shape *t)
{
    if (!t)
        return 0;
    for (int i = 0; i < t->rank; i++)
        if (!is_one(t->dims[i]))
            return 0;
    return 1;
}

int dt_ox_const_value(const dt_expr *x, int64_t *v)
{
    if (x->kind != DT_EXPR_CONST)
        return 0;
    *v = x->value;
    return 1;
}

int dt_ox_known_zero(const dt_ox_wctx *c, const char *tensor)
{
    if (!tensor[0])
        return 1;
    const dt_ox_shape *sh = dt_ox_wshape(c, tensor);
    if (sh && sh->nvals >= 0 && sh->vals) {
        for (int i = 0; i < sh->nvals; i++)
            if (sh->vals[i]->kind != DT_EXPR_CONST || sh->vals[i]->value != 0)
                return sh->vals[i]->kind == DT_EXPR_CONST ? 0 : -1;
        return 1;
    }
    const dt_ox_tensor *t = stored_values(c, tensor);
    if (!t || !t->ivals)
        return -1;
    for (int64_t i = 0; i < t->numel; i++)
        if (t->ivals[i] != 0)
            return 0;
    return 1;
}

/* "(a)*(b)*..." or "(a)+(b)+..." canonicalised into *out ("1" or "0" for
 * none), through the text form: the parser enforces DT_EXPR_MAX_DEPTH on
 * the result as it does on every expression from a user. */
static int join(dt_ox_wctx *c, int node, dt_expr *const *dims, int n, char op, dt_expr **out)
{
    const char *what = op == '*' ? "the product of the leading dims" : "the sum";
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_append(&sb, n ? "" : op == '*' ? "1" : "0");
    for (int i = 0; i < n; i++) {
        size_t need = dt_expr_print(dims[i], NULL, 0) + 1;
        char *t = malloc(need);
        if (!t) {
            dt_sb_free(&sb);
            return dt_errf(c->e, DT_ENOMEM, "out of memory");
        }
        dt_expr_print(dims[i], t, need);
        dt_sb_appendf(&sb, "%s(%s)", i ? (op == '*' ? "*" : "+") : "", t);
        free(t);
    }
    char *text = dt_sb_take(&sb);
    if (!text)
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    dt_err inner;
    int rc = dt_expr_parse(text, out, NULL, &inner);
    if (!rc && (rc = dt_expr_canonicalize(out, &inner))) {
        dt_expr_free(*out);
        *out = NULL;
    }
    if (rc == DT_ENOMEM)
        rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
    else if (rc)
        rc = dt_ox_wfail(c, node, "%s %s: %s", what, text, inner.msg);
    free(text);
    return rc;
}

int dt_ox_product(dt_ox_wctx *c, int node, dt_expr *const *dims, int n, dt_expr **out)
{
    return join(c, node, dims, n, '*', out);
}

int dt_ox_sum(dt_ox_wctx *c, int node, dt_expr *const *terms, int n, dt_expr **out)
{
    return join(c, node, terms, n, '+', out);
}

int dt_ox_reject(dt_ox_wctx *c, int node, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    free(c->why[node]);
    if (!(c->why[node] = strdup(msg)))
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    return 0;
}

int dt_ox_wfail(dt_ox_wctx *c, int node, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX], label[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dt_ox_node_label(c->g, node, label, sizeof label);
    return dt_errf(c->e, DT_EINVAL, "%s: node %s: %s", c->g->source, label, msg);
}

int dt_ox_fuse(dt_ox_fused *f, int node)
{
    if (f->n >= DT_OX_MAX_FUSED)
        return -1;
    f->nodes[f->n++] = node;
    return 0;
}

/* op->count times the runs of its GEMM node per model run (a node of a
 * Loop's or Scan's body: dt_ox_node_repeat), the one place an op's count
 * gets them. */
static int repeat_count(dt_ox_wctx *c, dt_ox_op *op)
{
    const dt_expr *rep = dt_ox_node_repeat(c->s, op->node);
    if (!rep)
        return 0;
    if (!op->count)
        return (op->count = dt_expr_clone(rep)) ? 0 : dt_errf(c->e, DT_ENOMEM, "out of memory");
    dt_expr *both[2] = {(dt_expr *)rep, op->count}, *x = NULL;
    int rc = dt_ox_product(c, op->node, both, 2, &x);
    if (!rc) {
        dt_expr_free(op->count);
        op->count = x;
    }
    return rc;
}

int dt_ox_add_op(dt_ox_wctx *c, dt_ox_op *op, const dt_ox_fused *f)
{
    dt_ox_wl *wl = c->wl;
    int rc = repeat_count(c, op);
    dt_ox_op *ops = rc ? NULL : realloc(wl->ops, (size_t)(wl->nops + 1) * sizeof *ops);
    if (!ops) {
        for (int i = 0; i < DT_MAX_DIMS; i++)
            dt_expr_free(op->dims[i]);
        dt_expr_free(op->count);
        memset(op, 0, sizeof *op);
        return rc ? rc : dt_errf(c->e, DT_ENOMEM, "out of memory");
    }
    wl->ops = ops;
    op->nnodes = f->n;
    ops[wl->nops] = *op;
    for (int i = 0; i < f->n; i++)
        c->cover[f->nodes[i]] = wl->nops;
    wl->ntuned += f->n;
    wl->nops++;
    /* the GEMM node may have been rejected by an earlier attempt */
    free(c->why[op->node]);
    c->why[op->node] = NULL;
    memset(op, 0, sizeof *op);
    return 0;
}
