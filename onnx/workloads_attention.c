/* onnxruntime's fused attention ops as their GEMMs (docs/onnx-import.md,
 * "Patterns"): com.microsoft Attention, MultiHeadAttention and
 * GroupQueryAttention, as the transformers optimizer and onnxruntime-genai's
 * model builder write them.
 *
 * Per the ops' definitions (onnxruntime's ContribOperators.md), with
 * head_size = hidden / num_heads and L the key length (the past's plus the
 * new tokens'):
 *   Attention           Q,K,V = input·weights + bias: a dense, M = the
 *                       input's leading dims (batch·seq), N = the three
 *                       hidden sizes (qkv_hidden_sizes), K = input_hidden,
 *                       epilogue bias when the node has one; then per head
 *   all three           scores = Q·Kᵀ: batch_matmul B = batch·num_heads,
 *                       M = seq, N = L, K = head_size, layout NT (a head's
 *                       keys are rows of head_size contiguous elements,
 *                       BSNH or BNSH alike);
 *                       out = softmax(scores)·V: batch_matmul B =
 *                       batch·num_heads, M = seq, N = v_head_size, K = L,
 *                       layout NN.
 * GroupQueryAttention's kv_num_heads < num_heads heads share each key and
 * value head: the group of num_heads/kv_num_heads query heads of one kv
 * head is one product with that head's K and V, B = batch·kv_num_heads,
 * M = group·seq (the group's rows stacked), the same FLOPs without copying
 * K and V per query head (batch_matmul needs equal batch dims).
 * The scale, the masks, the softmax and rotary embeddings inside the node
 * are not GEMMs and not tuned; the node counts as covered by its first op
 * (the others cover no node).  What the ops cannot say — float16, weights
 * that are not constants, a past/present buffer shared with the present
 * (the key length is then a value known at run time only), dims propagation
 * did not reach — leaves the node listed with the reason. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/workloads_match.h"

static const dt_ox_node *node_at(const dt_ox_wctx *c, int i) { return &c->g->nodes[i]; }

/* Input k of node n's shape, NULL when omitted or unknown. */
static const dt_ox_shape *input(const dt_ox_wctx *c, const dt_ox_node *n, int k)
{
    return k < n->ninputs ? dt_ox_wshape(c, n->inputs[k]) : NULL;
}

/* a·b or a+b canonicalised into *out (a or b NULL: the other alone). */
static int combine(dt_ox_wctx *c, int node, const dt_expr *a, const char *op, const dt_expr *b,
                   dt_expr **out)
{
    dt_expr *const pair[2] = {(dt_expr *)a, (dt_expr *)b};
    if (!a || !b) {
        *out = dt_expr_clone(a ? a : b);
        return *out ? 0 : dt_errf(c->e, DT_ENOMEM, "out of memory");
    }
    assert(!strcmp(op, "*") || !strcmp(op, "+"));
    return !strcmp(op, "*") ? dt_ox_product(c, node, pair, 2, out)
                            : dt_ox_sum(c, node, pair, 2, out);
}

/* Adds op `name` with its dims by role (batch, M, N, K: owned, freed on
 * failure), covering the nodes of f (n = 0: none). */
static int add_gemm(dt_ox_wctx *c, int node, const char *name, dt_dtype dtype,
                    const char *attr, const char *value, dt_expr *b, dt_expr *m, dt_expr *n,
                    dt_expr *k, const dt_ox_fused *f)
{
    dt_ox_op op = {.node = node, .op = dt_op_find(name), .dtype = dtype};
    if (!m || !n || !k || (!strcmp(name, "batch_matmul") && !b)) {
        dt_expr_free(b);
        dt_expr_free(m);
        dt_expr_free(n);
        dt_expr_free(k);
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    }
    dt_ox_set_gemm_dims(&op, b, m, n, k);
    if (attr && dt_ox_op_attr(&op, attr, value)) {
        dt_ox_op_clear(&op);
        return dt_ox_wfail(c, node, "%s has no %s=%s", name, attr, value);
    }
    return dt_ox_add_op(c, &op, f);
}

/* The two products of heads: B = batch·groups, M = rows·seq, N = L, K =
 * head (Q·Kᵀ, NT), then N = v_head, K = L (P·V, NN).  The first covers the
 * nodes of f. */
static int add_heads(dt_ox_wctx *c, int node, dt_dtype dtype, const dt_expr *batch,
                     int64_t groups, int64_t rows, const dt_expr *seq, const dt_expr *len,
                     int64_t head, int64_t v_head, const dt_ox_fused *f)
{
    const dt_ox_fused none = {0};
    for (int p = 0; p < 2; p++) {
        dt_expr *g = dt_expr_const(groups), *r = dt_expr_const(rows);
        dt_expr *b = NULL, *m = NULL, *n = NULL, *k = NULL;
        int rc = g && r ? 0 : dt_errf(c->e, DT_ENOMEM, "out of memory");
        if (!rc)
            rc = combine(c, node, batch, "*", g, &b);
        if (!rc)
            rc = combine(c, node, r, "*", seq, &m);
        if (!rc)
            rc = combine(c, node, len, "*", NULL, p ? &k : &n);
        dt_expr_free(g);
        dt_expr_free(r);
        if (!rc && !(p ? (n = dt_expr_const(v_head)) : (k = dt_expr_const(head))))
            rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
        if (rc) {
            dt_expr_free(b);
            dt_expr_free(m);
            dt_expr_free(n);
            dt_expr_free(k);
            return rc;
        }
        if ((rc = add_gemm(c, node, "batch_matmul", dtype, "layout", p ? "NN" : "NT", b, m, n,
                           k, p ? &none : f)))
            return rc;
    }
    return 0;
}

/* f32 or bf16 from the query's element type, or why not. */
static const char *dtype_of(const dt_ox_shape *q, dt_dtype *d)
{
    if (q->elem_type == DT_OX_FLOAT)
        *d = DT_DTYPE_F32;
    else if (q->elem_type == DT_OX_BFLOAT16)
        *d = DT_DTYPE_BF16;
    else
        return dt_ox_type_name(q->elem_type);
    return NULL;
}

/* hidden / heads as a constant, or 0 when it is not one. */
static int64_t per_head(const dt_expr *hidden, int64_t heads)
{
    int64_t h;
    return heads > 0 && dt_ox_const_value(hidden, &h) && h > 0 && h % heads == 0 ? h / heads : 0;
}

static int attention(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    const dt_ox_shape *x = input(c, nd, 0), *w = input(c, nd, 1), *bias = input(c, nd, 2);
    const dt_ox_shape *past = input(c, nd, 4);
    int64_t heads = dt_ox_attr_int_or(nd, "num_heads", 0), sizes[3];
    dt_dtype dtype = DT_DTYPE_F32;
    const char *why;
    if (!x || !w || x->rank != 3 || w->rank != 2)
        return dt_ox_reject(c, i, "Attention whose input or weights are not [batch, seq, "
                                  "hidden] and [hidden, 3*hidden] (or their shapes unknown)");
    if ((why = dtype_of(x, &dtype)))
        return dt_ox_reject(c, i, "%s Attention: dtune's ops take float (f32) or bfloat16", why);
    if (!w->is_const || w->elem_type != x->elem_type)
        return dt_ox_reject(c, i, "Attention whose weights are not a constant of the input's "
                                  "type (dense packs constant weights)");
    const dt_ox_attr *qkv = dt_ox_attr_find(nd, "qkv_hidden_sizes");
    int64_t total;
    if (!dt_ox_const_value(w->dims[1], &total) || heads < 1)
        return dt_ox_reject(c, i, "Attention without num_heads or with a symbolic hidden size");
    for (int k = 0; k < 3; k++)
        sizes[k] = qkv && qkv->type == DT_OX_ATTR_INTS && qkv->n == 3 ? qkv->ints[k] : total / 3;
    dt_expr *qk = dt_expr_const(sizes[0]), *vh = dt_expr_const(sizes[2]);
    int64_t head = qk ? per_head(qk, heads) : 0, v_head = vh ? per_head(vh, heads) : 0;
    dt_expr_free(qk);
    dt_expr_free(vh);
    if (sizes[0] + sizes[1] + sizes[2] != total || sizes[0] != sizes[1] || !head || !v_head)
        return dt_ox_reject(c, i, "Attention whose hidden sizes are not num_heads=%" PRId64
                                  " heads each (qkv_hidden_sizes, weights [.., %" PRId64 "])",
                            heads, total);
    if (bias && !dt_ox_const_vector(c, nd->inputs[2], w->dims[1], 1))
        return dt_ox_reject(c, i, "Attention whose bias is not a constant of %" PRId64
                                  " elements",
                            total);
    if (!dt_expr_equal(x->dims[2], w->dims[0]))
        return dt_ox_reject(c, i, "the input's and the weights' hidden sizes differ");
    const dt_expr *seq = x->dims[1], *past_len = NULL;
    if (past) {
        if (dt_ox_attr_int_or(nd, "past_present_share_buffer", 0))
            return dt_ox_reject(c, i, "Attention with past_present_share_buffer: the key length "
                                      "is past_sequence_length's value at run time");
        if (past->rank != 5)
            return dt_ox_reject(c, i, "Attention whose past is not [2, batch, heads, past, "
                                      "head]");
        past_len = past->dims[3];
    }
    dt_expr *m = NULL, *len = NULL;
    int rc = dt_ox_product(c, i, x->dims, 2, &m);
    if (!rc)
        rc = combine(c, i, past_len, "+", seq, &len);
    dt_ox_fused f = {0};
    dt_ox_fuse(&f, i);
    const dt_ox_fused none = {0};
    if (!rc) {
        rc = add_gemm(c, i, "dense", dtype, "epilogue", bias ? "bias" : "none", NULL, m,
                      dt_expr_clone(w->dims[1]), dt_expr_clone(w->dims[0]), &f);
        m = NULL;
    }
    if (!rc)
        rc = add_heads(c, i, dtype, x->dims[0], heads, 1, seq, len, head, v_head, &none);
    dt_expr_free(m);
    dt_expr_free(len);
    return rc;
}

static int multi_head(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    const dt_ox_shape *q = input(c, nd, 0), *k = input(c, nd, 1), *v = input(c, nd, 2);
    const dt_ox_shape *past = input(c, nd, 6);
    int64_t heads = dt_ox_attr_int_or(nd, "num_heads", 0), head = 0, v_head = 0;
    dt_dtype dtype = DT_DTYPE_F32;
    const char *why;
    if (!q || (q->rank != 3 && q->rank != 5) || heads < 1)
        return dt_ox_reject(c, i, "MultiHeadAttention whose query is not [batch, seq, hidden] "
                                  "or packed [batch, seq, heads, 3, head] (or without "
                                  "num_heads)");
    if ((why = dtype_of(q, &dtype)))
        return dt_ox_reject(c, i, "%s MultiHeadAttention: dtune's ops take float (f32) or "
                                  "bfloat16",
                            why);
    const dt_expr *kv_len = NULL;
    if (q->rank == 5) { /* packed QKV: [batch, seq, heads, 3, head] */
        if (!dt_ox_const_value(q->dims[4], &head))
            return dt_ox_reject(c, i, "MultiHeadAttention with a symbolic head size");
        v_head = head;
        kv_len = q->dims[1];
    } else if (k && k->rank == 5) { /* packed KV: [batch, kv_seq, heads, 2, head] */
        if (!dt_ox_const_value(k->dims[4], &head) || !(v_head = per_head(q->dims[2], heads)) ||
            v_head != head)
            return dt_ox_reject(c, i, "MultiHeadAttention whose packed key/value heads are not "
                                      "the query's");
        kv_len = k->dims[1];
    } else if (k && v && k->rank == 4 && v->rank == 4) { /* BNSH, e.g. a cross-attention cache */
        if (!dt_ox_const_value(k->dims[3], &head) || !dt_ox_const_value(v->dims[3], &v_head))
            return dt_ox_reject(c, i, "MultiHeadAttention with a symbolic head size");
        kv_len = k->dims[2];
    } else if (k && v && k->rank == 3 && v->rank == 3) {
        head = per_head(q->dims[2], heads);
        v_head = per_head(v->dims[2], heads);
        if (!head || !v_head || per_head(k->dims[2], heads) != head)
            return dt_ox_reject(c, i, "MultiHeadAttention whose hidden sizes are not "
                                      "num_heads=%" PRId64 " heads each",
                                heads);
        kv_len = k->dims[1];
    } else {
        return dt_ox_reject(c, i, "MultiHeadAttention whose key and value are neither [batch, "
                                  "kv_seq, hidden] nor [batch, heads, kv_seq, head] (or their "
                                  "shapes unknown)");
    }
    const dt_expr *past_len = NULL;
    if (past) {
        if (past->rank != 4)
            return dt_ox_reject(c, i, "MultiHeadAttention whose past_key is not [batch, heads, "
                                      "past, head]");
        past_len = past->dims[2];
    }
    dt_expr *len = NULL;
    int rc = combine(c, i, past_len, "+", kv_len, &len);
    dt_ox_fused f = {0};
    dt_ox_fuse(&f, i);
    if (!rc)
        rc = add_heads(c, i, dtype, q->dims[0], heads, 1, q->dims[1], len, head, v_head, &f);
    dt_expr_free(len);
    return rc;
}

static int group_query(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    const dt_ox_shape *q = input(c, nd, 0), *k = input(c, nd, 1), *past = input(c, nd, 3);
    const dt_ox_shape *total = input(c, nd, 6);
    int64_t heads = dt_ox_attr_int_or(nd, "num_heads", 0), kv_heads = dt_ox_attr_int_or(nd, "kv_num_heads", 0), head;
    dt_dtype dtype = DT_DTYPE_F32;
    const char *why;
    if (!q || q->rank != 3 || heads < 1 || kv_heads < 1 || heads % kv_heads)
        return dt_ox_reject(c, i, "GroupQueryAttention whose query is not [batch, seq, hidden] "
                                  "or whose num_heads is not a multiple of kv_num_heads");
    if ((why = dtype_of(q, &dtype)))
        return dt_ox_reject(c, i, "%s GroupQueryAttention: dtune's ops take float (f32) or "
                                  "bfloat16",
                            why);
    /* packed QKV when key is absent: hidden = (heads + 2·kv_heads)·head */
    head = per_head(q->dims[2], k ? heads : heads + 2 * kv_heads);
    if (!head || (k && (k->rank != 3 || per_head(k->dims[2], kv_heads) != head)))
        return dt_ox_reject(c, i, "GroupQueryAttention whose hidden sizes are not its heads' "
                                  "(num_heads=%" PRId64 ", kv_num_heads=%" PRId64 ")",
                            heads, kv_heads);
    /* L: total_sequence_length when its value is known, else the past's
     * length plus the new tokens' */
    dt_expr *len = NULL;
    int rc = 0;
    if (total && total->nvals == 1 && total->vals)
        len = dt_expr_clone(total->vals[0]);
    else if (past && past->rank == 4)
        rc = combine(c, i, past->dims[2], "+", q->dims[1], &len);
    else if (past)
        return dt_ox_reject(c, i, "GroupQueryAttention whose past_key is not [batch, "
                                  "kv_heads, past, head]");
    else
        len = dt_expr_clone(q->dims[1]);
    if (!rc && !len)
        rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
    dt_ox_fused f = {0};
    dt_ox_fuse(&f, i);
    if (!rc)
        rc = add_heads(c, i, dtype, q->dims[0], kv_heads, heads / kv_heads, q->dims[1], len,
                       head, head, &f);
    dt_expr_free(len);
    return rc;
}

int dt_ox_is_attention(const dt_ox_node *n)
{
    return dt_ox_is_ms(n, "Attention") || dt_ox_is_ms(n, "MultiHeadAttention") ||
           dt_ox_is_ms(n, "GroupQueryAttention");
}

int dt_ox_match_attention(dt_ox_wctx *c, int i)
{
    const dt_ox_node *nd = node_at(c, i);
    const dt_ox_shape *y = nd->noutputs ? dt_ox_wshape(c, nd->outputs[0]) : NULL;
    if (y && y->is_const)
        return 0; /* constant folding */
    if (dt_ox_is_ms(nd, "Attention"))
        return attention(c, i);
    if (dt_ox_is_ms(nd, "MultiHeadAttention"))
        return multi_head(c, i);
    return group_query(c, i);
}
