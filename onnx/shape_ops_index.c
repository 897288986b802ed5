/* Shape rules of the indexing ops detectors, OCR and the torch dynamo
 * exporter write: GatherND (the dynamo exporter's attention mask), ScatterND
 * (index_put), GatherElements, OneHot, DepthToSpace, SpaceToDepth.  Each
 * follows the ONNX operator definition; GatherND and ScatterND also carry
 * small integer values through when every input's values are known. */
#include <string.h>

#include "onnx/shape_ops.h"

static int is(const ox_node *c, const char *op)
{
    return strcmp(c->n->op_type, op) == 0;
}

static const sym *k_(ox_node *c, int64_t v)
{
    return dt_ox_sym_const(c->sc, v);
}

/* The first b dims of data and indices must be equal (GatherND, ScatterND). */
static int same_batch(ox_node *c, const ox_tensor *x, const ox_tensor *ind, int b)
{
    char s1[128], s2[128];
    for (int i = 0; i < b; i++)
        if (!dt_ox_equal(c, x->dims[i], ind->dims[i]))
            return dt_ox_fail(c, "batch dim %d differs: %s in the data, %s in the indices", i,
                              dt_ox_str(c, x->dims[i], s1, sizeof s1),
                              dt_ox_str(c, ind->dims[i], s2, sizeof s2));
    return 0;
}

/* The index tuple length k = indices.shape[-1], constant, 1..r-b. */
static int tuple_len(ox_node *c, const ox_tensor *x, const ox_tensor *ind, int b, int *k)
{
    int r = x->pub.rank, q = ind->pub.rank;
    int64_t v;
    char s[128];
    if (r < 1 || q < 1)
        return dt_ox_fail(c, "the data and the indices need rank >= 1 (ranks %d and %d)", r, q);
    if (b < 0 || b >= (r < q ? r : q))
        return dt_ox_fail(c, "batch_dims %d must be below both ranks (%d and %d)", b, r, q);
    if (!dt_ox_sym_is_const(ind->dims[q - 1], &v))
        return dt_ox_fail(c, "the last dim of the indices, %s, must be a constant",
                          dt_ox_str(c, ind->dims[q - 1], s, sizeof s));
    if (v < 1 || v > r - b)
        return dt_ox_fail(c,
                          "the last dim of the indices is %lld, it must be 1..%d (data rank %d - "
                          "batch_dims %d)",
                          (long long)v, r - b, r, b);
    *k = (int)v;
    return same_batch(c, x, ind, b);
}

/* The flat offset into x of index tuple t (k entries) and the element
 * count of a slice after it; -1 when an index is unknown or out of range. */
static int64_t tuple_offset(ox_node *c, const int64_t *d, int r, const sym *const *t, int k,
                            int64_t *slice)
{
    int64_t off = 0;
    for (int i = 0; i < k; i++) {
        int64_t v;
        if (!dt_ox_sym_is_const(t[i], &v) || v < -d[i] || v >= d[i])
            return -1;
        off = off * d[i] + (v < 0 ? v + d[i] : v);
    }
    *slice = 1;
    for (int i = k; i < r; i++) {
        *slice *= d[i];
        off *= d[i];
    }
    (void)c;
    return off;
}

/* GatherND: output = indices.shape[:-1] + data.shape[b + k:] (the batch
 * dims are the first b of both). */
int dt_ox_rule_gather_nd(ox_node *c)
{
    ox_tensor *x, *ind;
    int64_t b64;
    int k, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &ind)) || (rc = dt_ox_attr_int(c, "batch_dims", 0, &b64)))
        return rc;
    int b = b64 < 0 || b64 > DT_OX_MAX_RANK ? -1 : (int)b64;
    if ((rc = tuple_len(c, x, ind, b, &k)))
        return rc;
    int r = x->pub.rank, q = ind->pub.rank, ro = q - 1 + r - b - k;
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, ind->dims, (size_t)(q - 1) * sizeof dims[0]);
    memcpy(dims + q - 1, x->dims + b + k, (size_t)(r - b - k) * sizeof dims[0]);
    if ((rc = dt_ox_set_out(c, 0, x->pub.elem_type, ro, dims)))
        return rc;
    if (x->pub.has_fval)
        dt_ox_set_fval(c, 0, x->pub.fval);
    /* values: b = 0, everything known */
    int64_t d[DT_OX_MAX_RANK];
    if (b != 0 || x->nv < 0 || ind->nv < 0 || !dt_ox_const_dims(x, d))
        return 0;
    const sym *v[DT_OX_MAX_VALUES];
    int n = 0;
    for (int t = 0; t + k <= ind->nv; t += k) {
        int64_t slice, off = tuple_offset(c, d, r, ind->vals + t, k, &slice);
        if (off < 0 || n + slice > DT_OX_MAX_VALUES)
            return 0;
        for (int64_t i = 0; i < slice; i++)
            v[n++] = x->vals[off + i];
    }
    return dt_ox_set_vals(c, 0, n, v);
}

/* ScatterND: output = data's shape; updates must be indices.shape[:-1] +
 * data.shape[k:]. */
int dt_ox_rule_scatter_nd(ox_node *c)
{
    ox_tensor *x, *ind, *upd;
    const char *red;
    int k, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &ind)) || (rc = dt_ox_need(c, 2, &upd)) ||
        (rc = dt_ox_attr_str(c, "reduction", "none", &red)) || (rc = tuple_len(c, x, ind, 0, &k)))
        return rc;
    int r = x->pub.rank, q = ind->pub.rank, ru = q - 1 + r - k;
    char s1[128], s2[128];
    if (upd->pub.rank != ru)
        return dt_ox_fail(c,
                          "the updates have rank %d, %d expected (indices rank %d - 1 + data "
                          "rank %d - %d)",
                          upd->pub.rank, ru, q, r, k);
    for (int i = 0; i < ru; i++) {
        const sym *want = i < q - 1 ? ind->dims[i] : x->dims[k + i - (q - 1)];
        if (!dt_ox_equal(c, upd->dims[i], want))
            return dt_ox_fail(c, "dim %d of the updates is %s, %s expected", i,
                              dt_ox_str(c, upd->dims[i], s1, sizeof s1),
                              dt_ox_str(c, want, s2, sizeof s2));
    }
    if ((rc = dt_ox_same_shape(c, 0, x)))
        return rc;
    /* values: reduction none, everything known */
    int64_t d[DT_OX_MAX_RANK];
    if (strcmp(red, "none") != 0 || x->nv < 0 || ind->nv < 0 || upd->nv < 0 ||
        !dt_ox_const_dims(x, d))
        return 0;
    const sym *v[DT_OX_MAX_VALUES];
    memcpy(v, x->vals, (size_t)x->nv * sizeof v[0]);
    for (int t = 0, u = 0; t + k <= ind->nv; t += k) {
        int64_t slice, off = tuple_offset(c, d, r, ind->vals + t, k, &slice);
        if (off < 0 || off + slice > x->nv || u + slice > upd->nv)
            return 0;
        for (int64_t i = 0; i < slice; i++)
            v[off + i] = upd->vals[u++];
    }
    return dt_ox_set_vals(c, 0, x->nv, v);
}

/* GatherElements: the indices' shape, the data's type. */
int dt_ox_rule_gather_elements(ox_node *c)
{
    ox_tensor *x, *ind;
    int64_t axis;
    int a, rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_need(c, 1, &ind)) || (rc = dt_ox_attr_int(c, "axis", 0, &axis)))
        return rc;
    if (ind->pub.rank != x->pub.rank || x->pub.rank < 1)
        return dt_ox_fail(c, "the indices have rank %d, the data %d: they must be equal and >= 1",
                          ind->pub.rank, x->pub.rank);
    if ((rc = dt_ox_axis(c, axis, x->pub.rank, &a)))
        return rc;
    return dt_ox_set_out(c, 0, x->pub.elem_type, ind->pub.rank, ind->dims);
}

/* OneHot(indices, depth, values): depth inserted into the indices' shape
 * at axis (default -1: last); the values' type. */
int dt_ox_rule_one_hot(ox_node *c)
{
    ox_tensor *ind, *val;
    const sym *depth;
    int64_t axis;
    int n, a, rc = dt_ox_need(c, 0, &ind);
    if (rc || (rc = dt_ox_need(c, 2, &val)) ||
        (rc = dt_ox_input_syms(c, 1, "the depth", &depth, 1, &n)) ||
        (rc = dt_ox_attr_int(c, "axis", -1, &axis)))
        return rc;
    int r = ind->pub.rank;
    if (r + 1 > DT_OX_MAX_RANK)
        return dt_ox_fail(c, "the result would have rank %d (at most %d)", r + 1, DT_OX_MAX_RANK);
    if ((rc = dt_ox_axis(c, axis, r + 1, &a)))
        return rc;
    char s[128];
    if (dt_ox_sym_signs(c->sc, depth) & (SYM_LT | SYM_EQ))
        return dt_ox_fail(c, "the depth %s may be below 1", dt_ox_str(c, depth, s, sizeof s));
    const sym *dims[DT_OX_MAX_RANK];
    for (int i = 0, j = 0; i <= r; i++)
        dims[i] = i == a ? depth : ind->dims[j++];
    return dt_ox_set_out(c, 0, val->pub.elem_type, r + 1, dims);
}

/* DepthToSpace [N, C*b*b, H, W] -> [N, C, H*b, W*b]; SpaceToDepth the
 * other way ([N, C, H, W] -> [N, C*b*b, H/b, W/b], H and W multiples of b). */
int dt_ox_rule_depth_space(ox_node *c)
{
    ox_tensor *x;
    int64_t bs;
    int rc = dt_ox_need(c, 0, &x);
    if (rc || (rc = dt_ox_attr_int(c, "blocksize", 0, &bs)))
        return rc;
    if (bs < 1 || bs > (1 << 20))
        return dt_ox_fail(c, "attribute 'blocksize' is %lld: it must be given and >= 1",
                          (long long)bs);
    if (x->pub.rank != 4)
        return dt_ox_fail(c, "the input has rank %d, 4 (NCHW) is needed", x->pub.rank);
    const sym *b = k_(c, bs), *bb = k_(c, bs * bs), *dims[4];
    char s[128];
    dims[0] = x->dims[0];
    if (is(c, "DepthToSpace")) {
        if (dt_ox_sym_divexact(c->sc, x->dims[1], bb, &dims[1]) != 1)
            return dt_ox_fail(c, "the channels, %s, are not a multiple of blocksize^2 = %lld",
                              dt_ox_str(c, x->dims[1], s, sizeof s), (long long)(bs * bs));
        dims[2] = dt_ox_sym_mul(c->sc, x->dims[2], b);
        dims[3] = dt_ox_sym_mul(c->sc, x->dims[3], b);
    } else {
        dims[1] = dt_ox_sym_mul(c->sc, x->dims[1], bb);
        for (int i = 2; i < 4; i++)
            if (dt_ox_sym_divexact(c->sc, x->dims[i], b, &dims[i]) != 1)
                return dt_ox_fail(c, "dim %d, %s, is not a multiple of the blocksize %lld", i,
                                  dt_ox_str(c, x->dims[i], s, sizeof s), (long long)bs);
    }
    return dt_ox_set_out(c, 0, x->pub.elem_type, 4, dims);
}
