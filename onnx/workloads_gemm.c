/* MatMul and Gemm as dense or batch_matmul (docs/onnx-import.md, "Patterns").
 *
 * A constant 2-D second operand is a weight: dense, M the product of the
 * first operand's leading dims.  Two activations of equal rank and equal
 * batch dims are a batch_matmul; its second operand made by a Transpose that
 * puts K on the source's last (contiguous) axis is layout NT, through
 * Reshapes and scalings by one element (attention's q·(kᵀ·√s)) too. */
#include <string.h>

#include "onnx/workloads_match.h"

static int dtype_of(int a, int b, dt_dtype *d)
{
    if (a == DT_OX_FLOAT && b == DT_OX_FLOAT)
        *d = DT_DTYPE_F32;
    else if (a == DT_OX_BFLOAT16 && b == DT_OX_BFLOAT16)
        *d = DT_DTYPE_BF16;
    else
        return -1;
    return 0;
}

/* Sets the op's dims by their roles in its GEMM view (ops/op.h), so no
 * dim is named here.  Takes ownership of the expressions. */
void dt_ox_set_gemm_dims(dt_ox_op *op, dt_expr *batch, dt_expr *m, dt_expr *n, dt_expr *k)
{
    dt_gemm g;
    int attrs[DT_MAX_ATTRS] = {0};
    dt_op_gemm(op->op, attrs, NULL, &g, NULL);
    dt_expr *by_role[DT_ROLE_COUNT] = {batch, m, n, k};
    for (int r = 0; r < DT_ROLE_COUNT; r++) {
        if (g.dim[r] >= 0)
            op->dims[g.dim[r]] = by_role[r];
        else
            dt_expr_free(by_role[r]);
    }
}

static int oom(dt_ox_wctx *c) { return dt_errf(c->e, DT_ENOMEM, "out of memory"); }

int dt_ox_finish_dense(dt_ox_wctx *c, dt_ox_dense *d)
{
    const dt_ox_shape *a = dt_ox_wshape(c, d->a);
    if (a->rank < 1)
        return dt_ox_reject(c, d->node, "a scalar first operand");
    if (!dt_expr_equal(a->dims[a->rank - 1], d->k))
        return dt_ox_reject(c, d->node, "the operands' K dims differ");
    dt_ox_op op = {.node = d->node, .op = dt_op_find("dense"), .dtype = d->dtype};
    dt_expr *m = NULL, *n = NULL, *k = NULL;
    int rc = dt_ox_product(c, d->node, a->dims, a->rank - 1, &m);
    if (rc)
        return rc;
    const char *epilogue;
    if ((rc = dt_ox_match_epilogue(c, d->y, d->n, -1, d->bias, &d->f, &epilogue))) {
        dt_expr_free(m);
        return rc;
    }
    dt_ox_op_attr(&op, "epilogue", epilogue);
    if (!(n = dt_expr_clone(d->n)) || !(k = dt_expr_clone(d->k))) {
        dt_expr_free(m);
        dt_expr_free(n);
        return oom(c);
    }
    dt_ox_set_gemm_dims(&op, NULL, m, n, k);
    return dt_ox_add_op(c, &op, &d->f);
}

/* The permutation of Transpose node t (default: reversed axes) into perm;
 * 0, or -1 when it is not one of rank. */
static int transpose_perm(const dt_ox_node *t, int rank, int64_t *perm)
{
    const dt_ox_attr *p = dt_ox_attr_find(t, "perm");
    if (p && (p->type != DT_OX_ATTR_INTS || p->n != rank))
        return -1;
    for (int i = 0; i < rank; i++)
        perm[i] = p ? p->ints[i] : rank - 1 - i;
    return 0;
}

/* 1 when the product of t's dims after axis equals that of u's dims after
 * ub (the flat-order stride of those axes), 0 when not or not provable,
 * or DT_ENOMEM. */
static int same_inner(dt_ox_wctx *c, int node, const dt_ox_shape *t, int a,
                      const dt_ox_shape *u, int ub)
{
    dt_expr *x = NULL, *y = NULL;
    dt_err keep = *c->e;
    int rc = dt_ox_product(c, node, t->dims + a + 1, t->rank - a - 1, &x);
    if (!rc)
        rc = dt_ox_product(c, node, u->dims + ub + 1, u->rank - ub - 1, &y);
    int eq = !rc && dt_expr_equal(x, y);
    dt_expr_free(x);
    dt_expr_free(y);
    if (rc == DT_ENOMEM)
        return DT_ENOMEM;
    *c->e = keep; /* an overflowing product only means "not provably NT" */
    return eq;
}

/* 1 when d divides whole (equal, or constants with no remainder). */
static int divides(const dt_expr *d, const dt_expr *whole)
{
    if (dt_expr_equal(d, whole))
        return 1;
    return d->kind == DT_EXPR_CONST && whole->kind == DT_EXPR_CONST && d->value > 0 &&
           whole->value % d->value == 0;
}

static int reshape_like(const dt_ox_node *n)
{
    return dt_ox_is(n, "Reshape") || dt_ox_is(n, "Flatten") || dt_ox_is(n, "Squeeze") ||
           dt_ox_is(n, "Unsqueeze") || dt_ox_is(n, "Identity");
}

/* The input of p, an elementwise scaling of t by a scalar — Mul(x, s),
 * Mul(s, x) or Div(x, s), s one float (or bfloat16) element, a constant or
 * computed (torch's sqrt(1/sqrt(head_dim)) from Shape(q)) — whose dims are
 * t's: the scaled operand x, or NULL.  The product through it is s times
 * the product of x, so the GEMM's layout is x's. */
static const char *scaled_input(const dt_ox_wctx *c, const dt_ox_node *p, const dt_ox_shape *t)
{
    int div = dt_ox_is(p, "Div");
    if ((!div && !dt_ox_is(p, "Mul")) || p->ninputs != 2)
        return NULL;
    for (int k = 0; k < (div ? 1 : 2); k++) {
        const dt_ox_shape *x = dt_ox_wshape(c, p->inputs[k]);
        const dt_ox_shape *s = dt_ox_wshape(c, p->inputs[1 - k]);
        if (x && s && dt_ox_same_dims(x, t) && dt_ox_is_single(s) &&
            (s->elem_type == DT_OX_FLOAT || s->elem_type == DT_OX_BFLOAT16))
            return p->inputs[k];
    }
    return NULL;
}

/* The most Transpose, Reshape and scalar Mul/Div nodes followed back from
 * a batch_matmul's second operand. */
#define NT_MAX_CHAIN 8

/* 1 when axis a of tensor t (K of a batch_matmul's second operand) has
 * stride 1 in the memory of the tensor its Transpose/Reshape chain starts
 * from: the op reads that source as N×K (layout NT).  Walking back:
 *   Transpose(perm)  axis a of the output is axis perm[a] of the input;
 *   Reshape-like     (flat order kept) axis a is the inner part of the
 *                    input's axis b when both have the same inner stride
 *                    (the product of the dims after them) and dim a
 *                    divides dim b: a run along a is a run along b;
 *   Mul/Div scalar   (scaled_input) the same axis of the scaled tensor: the
 *                    scale commutes with the product (q·(kᵀ·s) = s·(q·kᵀ)),
 *                    and the Mul stays listed as elementwise work on a
 *                    tensor of the graph;
 *   anything else    the source, laid out row-major: a must be its last
 *                    axis but for trailing 1s, and a Transpose must have
 *                    moved it there.
 * So Kᵀ as Reshape → Transpose([0,2,1]) → Reshape, or [b,s,12,64] →
 * Transpose([0,2,3,1]), are NT, and so is torch's scaled attention
 * Mul(Transpose(k, [0,1,3,2]), √scale); a chain that leaves K strided is
 * NN.
 * Returns 0/1, or DT_ENOMEM. */
static int k_contiguous(dt_ox_wctx *c, int node, const dt_ox_shape *t, int a)
{
    int moved = 0; /* a Transpose moved K: without one, K is never the last axis but N = 1 */
    for (int step = 0; step <= NT_MAX_CHAIN; step++) {
        const dt_ox_node *p = t->producer >= 0 ? &c->g->nodes[t->producer] : NULL;
        const dt_ox_shape *u = p && p->ninputs >= 1 ? dt_ox_wshape(c, p->inputs[0]) : NULL;
        if (step < NT_MAX_CHAIN && u && dt_ox_is(p, "Transpose") && u->rank == t->rank) {
            int64_t perm[DT_OX_MAX_RANK];
            if (transpose_perm(p, t->rank, perm) || perm[a] < 0 || perm[a] >= u->rank)
                return 0;
            moved |= perm[a] != a;
            a = (int)perm[a];
            t = u;
            continue;
        }
        if (step < NT_MAX_CHAIN && u && reshape_like(p)) {
            int found = -1;
            for (int b = u->rank - 1; b >= 0 && found < 0; b--) {
                if (!divides(t->dims[a], u->dims[b]))
                    continue;
                int r = same_inner(c, node, t, a, u, b);
                if (r < 0)
                    return r;
                if (r)
                    found = b;
            }
            if (found < 0)
                return 0;
            a = found;
            t = u;
            continue;
        }
        const char *x = step < NT_MAX_CHAIN && p ? scaled_input(c, p, t) : NULL;
        if (x) {
            t = dt_ox_wshape(c, x);
            continue;
        }
        for (int d = a + 1; d < t->rank; d++)
            if (t->dims[d]->kind != DT_EXPR_CONST || t->dims[d]->value != 1)
                return 0;
        return moved;
    }
    return 0;
}

/* Two activations: batch_matmul.  trans_b: Gemm's transB (B is [N, K]). */
static int match_bmm(dt_ox_wctx *c, int i, const dt_ox_shape *a, const dt_ox_shape *b, int trans_b)
{
    dt_ox_op op = {.node = i, .op = dt_op_find("batch_matmul")};
    if (dtype_of(a->elem_type, b->elem_type, &op.dtype))
        return dt_ox_reject(c, i, "%s operands: batch_matmul takes float (f32) or bfloat16",
                            dt_ox_type_name(a->elem_type));
    if (a->rank < 2 || b->rank < 2)
        return dt_ox_reject(c, i, "a 1-D operand: batch_matmul needs matrices");
    if (a->rank != b->rank)
        return dt_ox_reject(c, i,
                            "activations of rank %d and %d (a weight that is not a constant, or "
                            "broadcast batch dims): batch_matmul needs equal batch dims",
                            a->rank, b->rank);
    int r = a->rank;
    for (int d = 0; d < r - 2; d++)
        if (!dt_expr_equal(a->dims[d], b->dims[d]))
            return dt_ox_reject(c, i, "broadcast batch dims: batch_matmul needs equal batch dims");
    const dt_expr *m = a->dims[r - 2], *k = a->dims[r - 1];
    const dt_expr *n = trans_b ? b->dims[r - 2] : b->dims[r - 1];
    if (!dt_expr_equal(k, trans_b ? b->dims[r - 1] : b->dims[r - 2]))
        return dt_ox_reject(c, i, "the operands' K dims differ");
    dt_ox_fused f = {0};
    dt_ox_fuse(&f, i);
    dt_ox_op_attr(&op, "layout", trans_b ? "NT" : "NN");
    /* B made by Transposes and Reshapes that take K (B's axis r-2) from the
     * last axis of the tensor they start from: the op reads that source as
     * N×K.  The Transposes and Reshapes stay listed (data movement), as the
     * other heads' do: which of them a runtime folds into strides is its
     * choice, not the GEMM's.  A scalar Mul/Div on the way stays listed too
     * (elementwise): batch_matmul has no scale, and the scaling is the same
     * work on the source k as on kᵀ. */
    if (!trans_b) {
        int nt = k_contiguous(c, i, b, r - 2);
        if (nt < 0)
            return nt;
        if (nt)
            dt_ox_op_attr(&op, "layout", "NT");
    }
    dt_expr *bx = NULL, *mx = NULL, *nx = NULL, *kx = NULL;
    int rc = dt_ox_product(c, i, a->dims, r - 2, &bx);
    if (rc)
        return rc;
    if (!(mx = dt_expr_clone(m)) || !(nx = dt_expr_clone(n)) || !(kx = dt_expr_clone(k))) {
        dt_expr_free(bx);
        dt_expr_free(mx);
        dt_expr_free(nx);
        return oom(c);
    }
    dt_ox_set_gemm_dims(&op, bx, mx, nx, kx);
    return dt_ox_add_op(c, &op, &f);
}

static double attr_f(const dt_ox_node *n, const char *name, double dflt)
{
    const dt_ox_attr *a = dt_ox_attr_find(n, name);
    return a && a->type == DT_OX_ATTR_FLOAT ? a->f : dflt;
}

int dt_ox_match_matmul(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = &c->g->nodes[i];
    int gemm = dt_ox_is(nd, "Gemm");
    if (nd->ninputs < 2 || nd->noutputs < 1)
        return dt_ox_reject(c, i, "fewer than two inputs");
    const dt_ox_shape *a = dt_ox_wshape(c, nd->inputs[0]), *b = dt_ox_wshape(c, nd->inputs[1]);
    const dt_ox_shape *y = dt_ox_wshape(c, nd->outputs[0]);
    if (!a || !b || !y)
        return dt_ox_wfail(c, i, "an operand or the result has no shape (shape propagation "
                                 "skipped it)");
    if (y->is_const)
        return 0; /* computed from constants once: listed as constant folding */
    int trans_b = 0;
    const char *cin = gemm && nd->ninputs >= 3 ? nd->inputs[2] : "";
    if (gemm) {
        if (dt_ox_attr_int_or(nd, "transA", 0))
            return dt_ox_reject(c, i, "Gemm with transA=1: dtune's ops read A as M×K");
        if (attr_f(nd, "alpha", 1.0) != 1.0)
            return dt_ox_reject(c, i, "Gemm with alpha=%g: dtune's ops have no scale",
                                attr_f(nd, "alpha", 1.0));
        if (cin[0] && attr_f(nd, "beta", 1.0) != 1.0)
            return dt_ox_reject(c, i, "Gemm with beta=%g: dtune's bias is added unscaled",
                                attr_f(nd, "beta", 1.0));
        trans_b = dt_ox_attr_int_or(nd, "transB", 0) != 0;
    }
    if (b->rank != 2 && b->is_const)
        return dt_ox_reject(c, i, "a constant second operand of rank %d: dense needs a 2-D "
                                  "weight",
                            b->rank);
    dt_ox_dense d = {.node = i, .a = nd->inputs[0], .y = nd->outputs[0]};
    dt_ox_fuse(&d.f, i);
    const dt_ox_node *wp = b->producer >= 0 ? &c->g->nodes[b->producer] : NULL;
    int qdq = wp && dt_ox_is(wp, "DequantizeLinear") && b->is_const;
    if (b->is_const) {
        d.n = b->dims[trans_b ? 0 : 1];
        d.k = b->dims[trans_b ? 1 : 0];
        if (cin[0]) {
            if (!dt_ox_const_vector(c, cin, d.n, 2))
                return dt_ox_reject(c, i, "Gemm's C is not a constant bias vector of N "
                                          "elements");
            d.bias = 1;
        }
        if (qdq)
            return dt_ox_match_qdq(c, i, b->producer, trans_b, &d);
        int cast_w = 0, rc = dt_ox_match_cast_weight(c, i, trans_b, &d, &cast_w);
        if (rc || cast_w)
            return rc;
        if (dtype_of(a->elem_type, b->elem_type, &d.dtype))
            return dt_ox_reject(c, i, "%s operands: dense takes float (f32) or bfloat16 (or "
                                      "int8 through the quantization patterns)",
                                dt_ox_type_name(a->elem_type));
        return dt_ox_finish_dense(c, &d);
    }
    if (a->is_const)
        return dt_ox_reject(c, i, "the constant is the first operand (W·X): dense needs "
                                  "X·W with the weight second");
    if (cin[0])
        return dt_ox_reject(c, i, "Gemm of two activations with C: batch_matmul has no bias");
    return match_bmm(c, i, a, b, trans_b);
}
