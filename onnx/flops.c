/* GEMM-like FLOPs of ONNX nodes (onnx/flops.h). */
#include "onnx/flops.h"

#include <ctype.h>
#include <string.h>

static int is_default(const dt_ox_node *n) { return !n->domain[0] || !strcmp(n->domain, "ai.onnx"); }
static int is_ms(const dt_ox_node *n) { return !strcmp(n->domain, "com.microsoft"); }

int dt_ox_gemm_like(const dt_ox_node *n)
{
    static const char *const dflt[] = {"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul",
                                       "Conv", "ConvInteger", "QLinearConv", "ConvTranspose",
                                       "LSTM", "GRU", "RNN", "Einsum", NULL};
    static const char *const ms[] = {"MatMulNBits", "MatMulInteger16", "DynamicQuantizeMatMul",
                                     "DynamicQuantizeLSTM", "QAttention", "Attention",
                                     "MultiHeadAttention", "GroupQueryAttention",
                                     "FusedMatMul", "FusedConv", "QLinearConv", NULL};
    const char *const *list = is_default(n) ? dflt : is_ms(n) ? ms : NULL;
    for (int k = 0; list && list[k]; k++)
        if (!strcmp(n->op_type, list[k]))
            return 1;
    return 0;
}

static int push(dt_ox_flops *f, const dt_expr *x)
{
    if (!x || f->n == DT_OX_FLOPS_MAX_FACTORS)
        return 0;
    if (x->kind == DT_EXPR_CONST)
        f->scale *= (double)x->value;
    else
        f->f[f->n++] = x;
    return 1;
}

/* every dim of tensor t from axis `from` on */
static int push_dims(dt_ox_flops *f, const dt_ox_shape *t, int from)
{
    if (!t)
        return 0;
    for (int d = from; d < t->rank; d++)
        if (!push(f, t->dims[d]))
            return 0;
    return 1;
}

static const dt_ox_shape *in(const dt_ox_shapes *s, const dt_ox_node *n, int k)
{
    return k < n->ninputs && n->inputs[k][0] ? dt_ox_shape_of(s, n->inputs[k]) : NULL;
}

static const dt_ox_shape *out0(const dt_ox_shapes *s, const dt_ox_node *n)
{
    return n->noutputs && n->outputs[0][0] ? dt_ox_shape_of(s, n->outputs[0]) : NULL;
}

/* Einsum: one multiply-add per combination of the distinct letters of the
 * inputs (an output letter or a summed one alike); the letters' sizes from
 * the inputs' dims.  Ellipses and more than two inputs are not counted. */
static int einsum(const dt_ox_shapes *s, const dt_ox_node *n, dt_ox_flops *f)
{
    const dt_ox_attr *a = dt_ox_attr_find(n, "equation");
    if (!a || !a->s || strstr(a->s, "...") || n->ninputs < 1 || n->ninputs > 2)
        return 0;
    const dt_expr *size[26] = {0};
    const char *p = a->s;
    for (int k = 0; k < n->ninputs; k++) {
        const dt_ox_shape *t = in(s, n, k);
        if (!t)
            return 0;
        int d = 0;
        for (; *p && *p != ',' && *p != '-'; p++) {
            if (isspace((unsigned char)*p))
                continue;
            if (!islower((unsigned char)*p) || d >= t->rank)
                return 0;
            const dt_expr *x = t->dims[d++];
            const dt_expr **slot = &size[*p - 'a'];
            if (!*slot || ((*slot)->kind == DT_EXPR_CONST && (*slot)->value == 1))
                *slot = x; /* a broadcast 1 gives way to the real size */
        }
        if (d != t->rank)
            return 0;
        if (*p == ',')
            p++;
    }
    for (int l = 0; l < 26; l++)
        if (size[l] && !push(f, size[l]))
            return 0;
    return 1;
}

int dt_ox_node_flops(const dt_ox_graph *g, const dt_ox_shapes *s, int i, dt_ox_flops *f)
{
    const dt_ox_node *n = &g->nodes[i];
    const char *op = n->op_type;
    const dt_ox_shape *y = out0(s, n), *a = in(s, n, 0);
    *f = (dt_ox_flops){.scale = 1, .n = 0};
    if (!dt_ox_gemm_like(n))
        return 0;
    if (!strcmp(op, "MatMul") || !strcmp(op, "MatMulInteger") || !strcmp(op, "FusedMatMul") ||
        !strcmp(op, "MatMulInteger16") || !strcmp(op, "DynamicQuantizeMatMul") ||
        !strcmp(op, "MatMulNBits")) {
        /* every output element is a dot product along A's last dim */
        if (!y || !a || a->rank < 1)
            return 0;
        return push_dims(f, y, 0) && push(f, a->dims[a->rank - 1]);
    }
    if (!strcmp(op, "QLinearMatMul")) { /* a, a_scale, a_zp, b, ... */
        return y && a && a->rank >= 1 && push_dims(f, y, 0) && push(f, a->dims[a->rank - 1]);
    }
    if (!strcmp(op, "Gemm")) {
        const dt_ox_attr *ta = dt_ox_attr_find(n, "transA");
        if (!y || !a || a->rank != 2)
            return 0;
        return push_dims(f, y, 0) && push(f, a->dims[ta && ta->i ? 0 : 1]);
    }
    if (!strcmp(op, "Conv") || !strcmp(op, "ConvInteger") || !strcmp(op, "FusedConv") ||
        !strcmp(op, "QLinearConv")) {
        /* each output element: C/group × the kernel's taps (W's dims after the first) */
        const dt_ox_shape *w = in(s, n, !strcmp(op, "QLinearConv") ? 3 : 1);
        return y && w && push_dims(f, y, 0) && push_dims(f, w, 1);
    }
    if (!strcmp(op, "ConvTranspose")) {
        /* each input element scatters into K/group × the taps (W [C, K/g, taps...]) */
        const dt_ox_shape *w = in(s, n, 1);
        return a && w && push_dims(f, a, 0) && push_dims(f, w, 1);
    }
    if (!strcmp(op, "LSTM") || !strcmp(op, "GRU") || !strcmp(op, "RNN") ||
        !strcmp(op, "DynamicQuantizeLSTM")) {
        /* per step and batch row: X_t·Wᵀ and h·Rᵀ for every direction, gate
         * and hidden unit: (input + hidden) × gates·hidden × directions */
        const dt_ox_shape *w = in(s, n, 1), *r = in(s, n, 2);
        const dt_ox_attr *lay = dt_ox_attr_find(n, "layout");
        if (!a || a->rank != 3 || !w || !r || w->rank != 3 || r->rank != 3)
            return 0;
        double wr = 0;
        for (int k = 0; k < 2; k++) {
            const dt_ox_shape *m = k ? r : w;
            double e = 1;
            for (int d = 0; d < 3; d++) {
                if (m->dims[d]->kind != DT_EXPR_CONST)
                    return 0;
                e *= (double)m->dims[d]->value;
            }
            wr += e;
        }
        (void)lay; /* T·batch is X's first two dims in either layout */
        f->scale = wr;
        return push(f, a->dims[0]) && push(f, a->dims[1]);
    }
    if (!strcmp(op, "Einsum"))
        return einsum(s, n, f);
    /* the contrib attention ops: not counted here */
    return 0;
}

int dt_ox_flops_eval(const dt_ox_flops *f, const char *const *names, const int64_t *vals, int n,
                     double *out, dt_err *e)
{
    double v = 2 * f->scale;
    for (int k = 0; k < f->n; k++) {
        dt_expr *x = dt_expr_clone(f->f[k]);
        int64_t d = 0;
        int rc = x ? dt_expr_bind(x, names, n, e) : dt_errf(e, DT_ENOMEM, "out of memory");
        if (!rc)
            rc = dt_expr_eval(x, vals, &d, e);
        dt_expr_free(x);
        if (rc)
            return rc;
        if (d < 0)
            return dt_errf(e, DT_EINVAL, "a dim is %lld", (long long)d);
        v *= (double)d;
    }
    *out = v;
    return 0;
}
