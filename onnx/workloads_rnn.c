/* Recurrent cells as dense ops (docs/onnx-import.md, "Recurrent cells"):
 * LSTM, GRU, RNN and onnxruntime's com.microsoft DynamicQuantizeLSTM.
 *
 * Per direction, a cell of G gates (LSTM 4: i,o,f,c; GRU 3: z,r,h; RNN 1)
 * and hidden size H over X [T, batch, input] (layout 1: [batch, T, input])
 * does, in the ONNX definition,
 *   gates_t = X_t·Wᵀ + Wb + h_{t-1}·Rᵀ + Rb        (G·H columns)
 * then the gates' elementwise part (sigmoid, tanh, the peepholes, the state
 * update).  The products become dense ops (dt_ox_rnn_products is the
 * lowering, the one table of which weight rows and which half of B each
 * product takes):
 *   - the input projection X·Wᵀ + Wb, of every step at once: M = T·batch,
 *     N = G·H, K = input, once per run;
 *   - the recurrent product h_{t-1}·Rᵀ + Rb, at each step: M = batch,
 *     N = G·H, K = H, count T (an expression of the variables: seq).
 * Each bias is the one the definition adds to that product (Wb to X·Wᵀ, Rb
 * to h·Rᵀ), so an epilogue never moves a bias across products.  GRU with
 * linear_before_reset = 0 computes h̃ = g(X_t·Whᵀ + Wbh + (r ⊙ h_{t-1})·Rhᵀ
 * + Rbh): its h-gate product reads r, which the z,r product makes in the
 * same step, so the recurrent product is two denses, N = 2H for z,r (bias
 * Rbz,Rbr) and N = H on r ⊙ h (bias Rbh), both count T; with
 * linear_before_reset = 1 (torch's GRU) Rbh is added to h·Rhᵀ before the
 * reset, and one dense N = 3H takes all of Rb.
 *
 * Two directions are two identical sets of ops (the same dims), merged by
 * the spec into count 2 and 2·T.  The node itself is counted once, in the
 * untuned listing, as "LSTM gates (elementwise)" (dt_ox_rnn_gates): its
 * products are ops of their own that cover no node, so nodes = tuned + Σ
 * untuned still holds.  A cell whose weights are not constants, whose
 * element types dtune has no dtype for, or whose dims cannot be derived is
 * listed with why (dt_ox_reject). */
#include <stdio.h>
#include <string.h>

#include "onnx/workloads_match.h"

typedef struct {
    const char *op;
    int gates;
    int ms;      /* a com.microsoft op */
    int wt;      /* weights stored [dirs, K, G·H] (DynamicQuantizeLSTM), not [dirs, G·H, K] */
    int quant;   /* s8 weights with scales and zero points (inputs 8..11) */
    int mapped;  /* 0: always listed (AttnLSTM) */
} cell_kind;

static const cell_kind kinds[] = {
    {"LSTM", 4, 0, 0, 0, 1},
    {"GRU", 3, 0, 0, 0, 1},
    {"RNN", 1, 0, 0, 0, 1},
    {"DynamicQuantizeLSTM", 4, 1, 1, 1, 1},
    {"AttnLSTM", 4, 1, 0, 0, 0},
};

static const cell_kind *kind_of(const dt_ox_node *n)
{
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (kinds[k].ms ? dt_ox_is_ms(n, kinds[k].op) : dt_ox_is(n, kinds[k].op))
            return &kinds[k];
    return NULL;
}

int dt_ox_is_recurrent(const dt_ox_node *n) { return kind_of(n) != NULL; }

int dt_ox_rnn_products(int gates, int split_h, dt_ox_rnn_product out[DT_OX_RNN_MAX_PRODUCTS])
{
    int n = 0;
    out[n++] = (dt_ox_rnn_product){.a = 'x', .w = 'W', .gate0 = 0, .ngates = gates, .bias0 = 0};
    if (split_h) {
        out[n++] = (dt_ox_rnn_product){.a = 'h', .w = 'R', .gate0 = 0, .ngates = 2,
                                       .bias0 = gates};
        out[n++] = (dt_ox_rnn_product){.a = 'r', .w = 'R', .gate0 = 2, .ngates = 1,
                                       .bias0 = gates + 2};
    } else {
        out[n++] = (dt_ox_rnn_product){.a = 'h', .w = 'R', .gate0 = 0, .ngates = gates,
                                       .bias0 = gates};
    }
    return n;
}

/* ---- attributes and dims ---- */

static const char *attr_s(const dt_ox_node *n, const char *name, const char *dflt)
{
    const dt_ox_attr *a = dt_ox_attr_find(n, name);
    return a && a->type == DT_OX_ATTR_STRING && a->s ? a->s : dflt;
}

static int is_value(const dt_expr *x, int64_t v)
{
    return x->kind == DT_EXPR_CONST && x->value == v;
}

/* "[2,512,seq]" of a shape into buf. */
static const char *dims_text(const dt_ox_shape *t, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t->rank && len + 2 < n; d++) {
        if (d)
            len += (size_t)snprintf(buf + len, n - len, ",");
        len += dt_expr_print(t->dims[d], buf + len, n - len - 1);
    }
    if (len + 1 < n)
        snprintf(buf + len, n - len, "]");
    return buf;
}

/* 1 when t is [a, b, c] with a, b constants and c equal to the expression cx
 * (cx NULL: the constant cv). */
static int dims_are(const dt_ox_shape *t, int64_t a, int64_t b, const dt_expr *cx, int64_t cv)
{
    return t->rank == 3 && is_value(t->dims[0], a) && is_value(t->dims[1], b) &&
           (cx ? dt_expr_equal(t->dims[2], cx) : is_value(t->dims[2], cv));
}

/* The same with the last two axes swapped: [a, cx or cv, b]. */
static int dims_are_t(const dt_ox_shape *t, int64_t a, int64_t b, const dt_expr *cx, int64_t cv)
{
    return t->rank == 3 && is_value(t->dims[0], a) && is_value(t->dims[2], b) &&
           (cx ? dt_expr_equal(t->dims[1], cx) : is_value(t->dims[1], cv));
}

/* What the matcher found out about a cell. */
typedef struct {
    const cell_kind *k;
    int ndir;
    int64_t hidden;
    const dt_expr *steps, *batch, *input; /* X's dims (owned by the shapes) */
    int bias;     /* B given and constant: each product's half fused */
    int split_h;  /* GRU with linear_before_reset = 0 */
    dt_dtype dtype;
} cell;

/* X's dims by layout, the direction and hidden size: 0, or a reason in why. */
static int read_cell(const dt_ox_wctx *c, int i, cell *cl, char *why, size_t nwhy)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]), *r = dt_ox_wshape(c, nd->inputs[2]);
    const char *dir = attr_s(nd, "direction", "forward");
    int64_t layout = dt_ox_attr_int_or(nd, "layout", 0);
    cl->ndir = !strcmp(dir, "bidirectional") ? 2
               : !strcmp(dir, "forward") || !strcmp(dir, "reverse") ? 1 : 0;
    if (!x) {
        snprintf(why, nwhy, "X's shape is unknown: the dims of its products cannot be derived");
        return -1;
    }
    if (!cl->ndir) {
        snprintf(why, nwhy, "direction '%.40s' is not forward, reverse or bidirectional", dir);
        return -1;
    }
    if (layout != 0 && layout != 1) {
        snprintf(why, nwhy, "layout %lld is not 0 or 1", (long long)layout);
        return -1;
    }
    if (x->rank != 3) {
        snprintf(why, nwhy, "X has rank %d, 3 is needed", x->rank);
        return -1;
    }
    cl->steps = x->dims[layout ? 1 : 0];
    cl->batch = x->dims[layout ? 0 : 1];
    cl->input = x->dims[2];
    cl->hidden = dt_ox_attr_int_or(nd, "hidden_size", -1);
    if (cl->hidden < 0 && r && r->rank == 3) { /* not given: R's H axis */
        const dt_expr *h = r->dims[cl->k->wt ? 1 : 2];
        cl->hidden = h->kind == DT_EXPR_CONST ? h->value : -1;
    }
    /* far below int64 once multiplied by the gates (and the dims' own limits) */
    if (cl->hidden < 1 || cl->hidden > ((int64_t)1 << 40)) {
        snprintf(why, nwhy, "hidden_size %lld is not a valid dim (or R's last dim is not a "
                 "constant)", (long long)cl->hidden);
        return -1;
    }
    return 0;
}

/* W, R and B against the cell's dims, constness and element types: 0, or a
 * reason in why. */
static int check_weights(const dt_ox_wctx *c, int i, cell *cl, char *why, size_t nwhy)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]);
    const dt_ox_shape *w = dt_ox_wshape(c, nd->inputs[1]), *r = dt_ox_wshape(c, nd->inputs[2]);
    const dt_ox_shape *b = nd->ninputs > 3 ? dt_ox_wshape(c, nd->inputs[3]) : NULL;
    int64_t gh = cl->k->gates * cl->hidden;
    char t[160];
    const char *layout = cl->k->wt ? "[directions, K, gates*hidden]"
                                   : "[directions, gates*hidden, K]";
    if (!w || !r) {
        snprintf(why, nwhy, "W or R has no shape");
        return -1;
    }
    int w_ok = cl->k->wt ? dims_are_t(w, cl->ndir, gh, cl->input, 0)
                         : dims_are(w, cl->ndir, gh, cl->input, 0);
    int r_ok = cl->k->wt ? dims_are_t(r, cl->ndir, gh, NULL, cl->hidden)
                         : dims_are(r, cl->ndir, gh, NULL, cl->hidden);
    if (!w_ok || !r_ok) {
        snprintf(why, nwhy, "%s is %s: %s expected (directions %d, gates %d, hidden_size %lld)",
                 w_ok ? "R" : "W", dims_text(w_ok ? r : w, t, sizeof t), layout, cl->ndir,
                 cl->k->gates, (long long)cl->hidden);
        return -1;
    }
    if (!w->is_const || !r->is_const) {
        snprintf(why, nwhy, "%s is not a constant (an initializer): its products would be dense "
                 "ops, which need a constant weight", w->is_const ? "R" : "W");
        return -1;
    }
    if (b && (b->rank != 2 || !is_value(b->dims[0], cl->ndir) || !is_value(b->dims[1], 2 * gh))) {
        snprintf(why, nwhy, "B is %s: [directions, 2*gates*hidden] expected", dims_text(b, t,
                                                                                       sizeof t));
        return -1;
    }
    /* a B computed at run time is added with the gates, not fused */
    cl->bias = b && b->is_const;
    if (cl->k->quant)
        return 0; /* the dtype is check_quant's */
    if (x->elem_type == DT_OX_FLOAT && w->elem_type == DT_OX_FLOAT && r->elem_type == DT_OX_FLOAT)
        cl->dtype = DT_DTYPE_F32;
    else if (x->elem_type == DT_OX_BFLOAT16 && w->elem_type == DT_OX_BFLOAT16 &&
             r->elem_type == DT_OX_BFLOAT16)
        cl->dtype = DT_DTYPE_BF16;
    else {
        snprintf(why, nwhy, "%s operands: dense takes float (f32) or bfloat16",
                 dt_ox_type_name(x->elem_type == w->elem_type ? x->elem_type : w->elem_type));
        return -1;
    }
    return 0;
}

/* 1 when a weight scale of a DynamicQuantizeLSTM is one per direction
 * ([dirs], or one element for one direction) or one per output channel
 * ([dirs, gates*hidden]): the scales dtune's int8 takes. */
static int scale_ok(const dt_ox_shape *s, int ndir, int64_t gh)
{
    if (!s)
        return 0;
    if ((s->rank == 1 && is_value(s->dims[0], ndir)) || (ndir == 1 && dt_ox_is_single(s)))
        return 1;
    return s->rank == 2 && is_value(s->dims[0], ndir) && is_value(s->dims[1], gh);
}

/* DynamicQuantizeLSTM: onnxruntime quantizes X and h_{t-1} per tensor to u8
 * with a zero point at every product (rnn_helpers.cc) and multiplies them
 * by the s8 weights with per-tensor or per-column scales, dequantized to
 * f32: dtune's int8.  0, or a reason in why. */
static int check_quant(const dt_ox_wctx *c, int i, cell *cl, char *why, size_t nwhy)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    if (nd->ninputs < 12) {
        snprintf(why, nwhy, "%d inputs: W_scale, W_zero_point, R_scale and R_zero_point "
                 "(inputs 9 to 12) are needed", nd->ninputs);
        return -1;
    }
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]);
    if (x->elem_type != DT_OX_FLOAT) {
        snprintf(why, nwhy, "%s X: DynamicQuantizeLSTM quantizes float",
                 dt_ox_type_name(x->elem_type));
        return -1;
    }
    int64_t gh = cl->k->gates * cl->hidden;
    for (int k = 0; k < 2; k++) {
        const char *wn = k ? "R" : "W";
        const dt_ox_shape *w = dt_ox_wshape(c, nd->inputs[1 + k]);
        const dt_ox_shape *s = dt_ox_wshape(c, nd->inputs[8 + 2 * k]);
        if (w->elem_type == DT_OX_UINT8) {
            snprintf(why, nwhy, "uint8 weights (%s): dtune's int8 takes s8 weights", wn);
            return -1;
        }
        if (w->elem_type != DT_OX_INT8) {
            snprintf(why, nwhy, "%s weights (%s): dtune's int8 takes s8 weights",
                     dt_ox_type_name(w->elem_type), wn);
            return -1;
        }
        if (!scale_ok(s, cl->ndir, gh)) {
            char t[160];
            snprintf(why, nwhy, "%s_scale is %s: dtune's int8 takes one weight scale per tensor "
                     "or per output channel", wn, s ? dims_text(s, t, sizeof t) : "not given");
            return -1;
        }
        /* a zero point of more than DT_OX_MAX_VALUES elements is not read:
         * taken to be 0, as quantize_dynamic writes s8 weights */
        if (dt_ox_known_zero(c, nd->inputs[9 + 2 * k]) == 0) {
            snprintf(why, nwhy, "a non-zero %s_zero_point: dtune's int8 takes symmetric s8 "
                     "weights", wn);
            return -1;
        }
    }
    cl->dtype = DT_DTYPE_INT8;
    return 0;
}

/* ---- ops ---- */

/* One product p of one direction as a dense op. */
static int add_product(dt_ox_wctx *c, int i, const cell *cl, const dt_ox_rnn_product *p)
{
    dt_ox_op op = {.node = i, .op = dt_op_find("dense"), .dtype = cl->dtype};
    int once = p->a == 'x';
    dt_expr *m = NULL, *n = dt_expr_const(p->ngates * cl->hidden);
    dt_expr *k = once ? dt_expr_clone(cl->input) : dt_expr_const(cl->hidden);
    int rc = 0;
    if (once) {
        dt_expr *tb[2] = {(dt_expr *)cl->steps, (dt_expr *)cl->batch};
        rc = dt_ox_product(c, i, tb, 2, &m);
    } else if (!(m = dt_expr_clone(cl->batch)))
        rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
    /* per step: T times a run (a count of 1 is no count: it merges with
     * the ops that run once) */
    if (!rc && !once && !is_value(cl->steps, 1) && !(op.count = dt_expr_clone(cl->steps)))
        rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
    if (!rc && (!n || !k))
        rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
    if (rc) {
        dt_expr_free(m);
        dt_expr_free(n);
        dt_expr_free(k);
        dt_expr_free(op.count);
        return rc;
    }
    if (cl->bias)
        dt_ox_op_attr(&op, "epilogue", "bias");
    dt_ox_set_gemm_dims(&op, NULL, m, n, k);
    dt_ox_fused none = {0}; /* the node is listed for its gates (dt_ox_rnn_gates) */
    return dt_ox_add_op(c, &op, &none);
}

int dt_ox_match_rnn(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    cell cl = {.k = kind_of(nd)};
    char why[400];
    if (!cl.k->mapped)
        return dt_ox_reject(c, i, "an LSTM that attends over a memory at every step "
                                  "(onnxruntime's AttnLSTM): not mapped; dtune maps LSTM, GRU, "
                                  "RNN and DynamicQuantizeLSTM");
    if (nd->ninputs < 3 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "fewer than three inputs (X, W, R)");
    if (dt_ox_all_const(c, i))
        return 0; /* computed from constants once: listed as constant folding */
    if (read_cell(c, i, &cl, why, sizeof why) || check_weights(c, i, &cl, why, sizeof why) ||
        (cl.k->quant && check_quant(c, i, &cl, why, sizeof why)))
        return dt_ox_reject(c, i, "%s", why);
    cl.split_h = cl.k->gates == 3 && dt_ox_attr_int_or(nd, "linear_before_reset", 0) == 0;
    dt_ox_rnn_product p[DT_OX_RNN_MAX_PRODUCTS];
    int np = dt_ox_rnn_products(cl.k->gates, cl.split_h, p);
    int rc = 0;
    for (int d = 0; d < cl.ndir && !rc; d++)
        for (int k = 0; k < np && !rc; k++)
            rc = add_product(c, i, &cl, &p[k]);
    return rc;
}

/* ---- the listing ---- */

#define GATES_WHY                                                                             \
    "a recurrent cell's gates (sigmoid, tanh, the state update): elementwise, not a GEMM; "   \
    "its products are tuned as dense ops (the input projection once, the recurrent product "  \
    "once per step)"
#define BOUND_WHY                                                                             \
    "; sequence_lens is given, so a sequence may stop before the last step: the recurrent "   \
    "product's count is an upper bound"

/* 1 when the cell has a sequence_lens input not known to be T for every
 * sequence. */
static int steps_bounded(const dt_ox_wctx *c, const dt_ox_node *nd)
{
    const dt_ox_shape *sl = nd->ninputs > 4 ? dt_ox_wshape(c, nd->inputs[4]) : NULL;
    const dt_ox_shape *x = dt_ox_wshape(c, nd->inputs[0]);
    if (!sl)
        return 0;
    if (!x || x->rank != 3 || sl->nvals < 1 || !sl->vals)
        return 1;
    const dt_expr *t = x->dims[dt_ox_attr_int_or(nd, "layout", 0) ? 1 : 0];
    for (int k = 0; k < sl->nvals; k++)
        if (!dt_expr_equal(sl->vals[k], t))
            return 1;
    return 0;
}

int dt_ox_rnn_gates(const dt_ox_wctx *c, int i, char *buf, size_t n, const char **what,
                    const char **why)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    const cell_kind *k = kind_of(nd);
    int mapped = 0;
    for (int o = 0; k && o < c->wl->nops && !mapped; o++)
        mapped = c->wl->ops[o].node == i;
    if (!mapped)
        return 0;
    snprintf(buf, n, "%s%s gates (elementwise)", k->ms ? "com.microsoft." : "", k->op);
    *what = buf;
    *why = steps_bounded(c, nd) ? GATES_WHY BOUND_WHY : GATES_WHY;
    return 1;
}
