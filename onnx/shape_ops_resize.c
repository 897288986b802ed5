/* Shape rule of Resize (opsets 10, 11, 13, 18, 19): the FPN upsampling of
 * detectors and the paddle2onnx OCR heads.
 *
 * Inputs: opset 10 (X, scales); 11+ (X, roi, scales, sizes), where an input
 * that is omitted or has 0 elements is not given (torch writes an empty
 * Constant for the unused one).  The attribute axes (opset 18+) names the
 * axes scales and sizes refer to (default: all).  For each resized axis:
 *   sizes given:  the size (a shape value, symbolic or constant); with
 *                 keep_aspect_ratio_policy not_larger / not_smaller (18+)
 *                 scale = min / max of sizes[i] / in[i] over the axes and
 *                 out = round(scale * in) (halves up), which needs constant
 *                 input dims;
 *   scales given: floor(in * scale) (tf_crop_and_resize: floor(in *
 *                 (roi_end - roi_start) * scale)), the scales being known
 *                 constants.  A scale p/2^k with k <= 30 (2, 0.5, 1.5, 0.25:
 *                 every float32 scale above 2^-7) gives floor(in*p/2^k) for
 *                 a symbolic dim too; any other needs a constant dim.
 * Other axes keep their dim.  An output dim that cannot be derived takes
 * the output's declared shape (value_info), else fails saying why. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx/shape_ops.h"

/* by_sizes / by_scales: output 0 was set from its declaration */
#define UNKNOWN_DECLARED 1

/* The float values of input i when it is a known constant: an initializer
 * with values, a Constant node's tensor, or a tensor all of whose n
 * elements are one known value.  1 and *n (at most max), 0 when unknown. */
static int const_floats(ox_node *c, int i, double *buf, int max, int *n)
{
    const ox_tensor *t = c->in[i];
    int64_t d[DT_OX_MAX_RANK], numel = 1;
    if (!t || !dt_ox_const_dims(t, d))
        return 0;
    for (int k = 0; k < t->pub.rank; k++)
        numel *= d[k]; /* small: checked below before any use */
    if (t->pub.rank > 1 || numel > max)
        return 0;
    *n = (int)numel;
    const dt_ox_tensor *v = NULL;
    if (t->pub.producer < 0) {
        v = dt_ox_init_find(c->g, t->pub.name);
    } else {
        const dt_ox_node *p = &c->g->nodes[t->pub.producer];
        const dt_ox_attr *a = p->nattrs == 1 ? &p->attrs[0] : NULL;
        if (strcmp(p->op_type, "Constant") == 0 && a && a->type == DT_OX_ATTR_TENSOR)
            v = &a->t;
        else if (strcmp(p->op_type, "Constant") == 0 && a && a->type == DT_OX_ATTR_FLOATS &&
                 a->n == numel) {
            memcpy(buf, a->floats, (size_t)numel * sizeof *buf);
            return 1;
        }
    }
    if (v && v->has_values && v->fvals && v->numel == numel) {
        memcpy(buf, v->fvals, (size_t)numel * sizeof *buf);
        return 1;
    }
    if (t->pub.has_fval) {
        for (int k = 0; k < numel; k++)
            buf[k] = t->pub.fval;
        return 1;
    }
    return 0;
}

/* 1 and p/q == s exactly, q a power of two up to 2^30 (every float scale
 * with few mantissa bits: 2, 0.5, 1.5, 0.25), p/q in lowest terms; 0 else. */
static int fraction(double s, int64_t *p, int64_t *q)
{
    for (int k = 0; k <= 30; k++) {
        double d = ldexp(1.0, k), n = s * d;
        if (n == floor(n) && fabs(n) < 1e15) {
            *p = (int64_t)n;
            *q = (int64_t)d;
            return 1; /* the first k is the lowest terms: p is odd unless k = 0 */
        }
    }
    return 0;
}

/* The element count of input i: 0 when omitted or empty (not given). */
static int given(ox_node *c, int i, int64_t *count)
{
    *count = 0;
    if (i >= c->nin || !c->in[i])
        return 0;
    const ox_tensor *t = c->in[i];
    int64_t d[DT_OX_MAX_RANK];
    if (t->pub.rank != 1 || !dt_ox_const_dims(t, d)) {
        *count = -1; /* not a vector of known length */
        return 1;
    }
    *count = d[0];
    return d[0] > 0;
}

/* Output dim `axis` cannot be derived: the output as declared, if it is. */
static int unknown(ox_node *c, int axis, const char *why)
{
    char msg[400];
    snprintf(msg, sizeof msg, "dim %d of the output is not known: %s", axis, why);
    int rc = dt_ox_declared_out(c, 0, msg);
    return rc ? rc : UNKNOWN_DECLARED;
}

static int by_sizes(ox_node *c, const ox_tensor *x, int si, const int *axes, int na,
                    const sym **dims)
{
    const sym *sz[DT_OX_MAX_RANK];
    const char *policy;
    char s[128];
    int n, rc;
    if ((rc = dt_ox_attr_str(c, "keep_aspect_ratio_policy", "stretch", &policy)))
        return rc;
    if (si >= c->nin || c->in[si]->nv < 0)
        return unknown(c, axes[0], "the sizes are not known values (computed from shapes and "
                                   "constants)");
    if ((rc = dt_ox_input_syms(c, si, "the sizes", sz, DT_OX_MAX_RANK, &n)))
        return rc;
    if (n != na)
        return dt_ox_fail(c, "%d sizes for %d axes", n, na);
    for (int i = 0; i < n; i++)
        if (dt_ox_sym_signs(c->sc, sz[i]) & SYM_LT)
            return dt_ox_fail(c, "size %d is %s, which may be negative", i,
                              dt_ox_str(c, sz[i], s, sizeof s));
    if (strcmp(policy, "stretch") == 0) {
        for (int i = 0; i < n; i++)
            dims[axes[i]] = sz[i];
        return 0;
    }
    int larger = strcmp(policy, "not_smaller") == 0;
    if (!larger && strcmp(policy, "not_larger") != 0)
        return dt_ox_fail(c,
                          "keep_aspect_ratio_policy '%.40s' is not stretch, not_larger or "
                          "not_smaller",
                          policy);
    double scale = 0;
    int64_t in[DT_OX_MAX_RANK], want;
    for (int i = 0; i < n; i++) {
        if (!dt_ox_sym_is_const(x->dims[axes[i]], &in[i]) || !dt_ox_sym_is_const(sz[i], &want))
            return unknown(c, axes[i], "keep_aspect_ratio_policy needs constant input dims and "
                                       "sizes");
        if (in[i] == 0)
            return dt_ox_fail(c, "input dim %d is 0: no aspect ratio", axes[i]);
        double r = (double)want / (double)in[i];
        if (i == 0 || (larger ? r > scale : r < scale))
            scale = r;
    }
    for (int i = 0; i < n; i++)
        dims[axes[i]] = dt_ox_sym_const(c->sc, (int64_t)floor(scale * (double)in[i] + 0.5));
    return 0;
}

static int by_scales(ox_node *c, const ox_tensor *x, int si, const int *axes, int na,
                     const sym **dims)
{
    double sc[DT_OX_MAX_RANK], roi[2 * DT_OX_MAX_RANK];
    const char *mode;
    int n, nroi = 0, rc;
    if ((rc = dt_ox_attr_str(c, "coordinate_transformation_mode", "half_pixel", &mode)))
        return rc;
    if (!const_floats(c, si, sc, DT_OX_MAX_RANK, &n))
        return unknown(c, axes[0], "the scales are not known constants");
    if (n != na)
        return dt_ox_fail(c, "%d scales for %d axes", n, na);
    int crop = strcmp(mode, "tf_crop_and_resize") == 0 && c->g->opset >= 11;
    if (crop && (!const_floats(c, 1, roi, 2 * DT_OX_MAX_RANK, &nroi) || nroi != 2 * na))
        return unknown(c, axes[0], "tf_crop_and_resize needs the roi as known constants (start "
                                   "and end per axis)");
    for (int i = 0; i < n; i++) {
        int a = axes[i];
        double f = crop ? (roi[na + i] - roi[i]) * sc[i] : sc[i];
        int64_t p, q, d;
        char s[128];
        if (!(f > 0) || !isfinite(f) || f > 1e6)
            return dt_ox_fail(c, "scale %d is %g: it must be positive", i, f);
        if (dt_ox_sym_is_const(x->dims[a], &d)) {
            double o = floor((double)d * f);
            if (o > (double)OX_DIM_MAX)
                return dt_ox_fail(c, "dim %d would be %g (at most 2^40)", a, o);
            dims[a] = dt_ox_sym_const(c->sc, (int64_t)o);
        } else if (fraction(f, &p, &q)) {
            dims[a] = dt_ox_sym_floordiv(
                c->sc, dt_ox_sym_mul(c->sc, x->dims[a], dt_ox_sym_const(c->sc, p)),
                dt_ox_sym_const(c->sc, q));
        } else {
            char why[200];
            snprintf(why, sizeof why, "scale %g is no exact fraction, and the input dim is %s", f,
                     dt_ox_str(c, x->dims[a], s, sizeof s));
            return unknown(c, a, why);
        }
    }
    return 0;
}

int dt_ox_rule_resize(ox_node *c)
{
    ox_tensor *x;
    int rc = dt_ox_need(c, 0, &x);
    if (rc)
        return rc;
    int r = x->pub.rank, axes[DT_OX_MAX_RANK], na = r;
    const int64_t *av;
    int nav;
    if ((rc = dt_ox_attr_ints(c, "axes", &av, &nav)))
        return rc;
    if (nav >= 0) {
        uint32_t mask;
        if (nav > r || (rc = dt_ox_axes(c, av, nav, r, &mask)))
            return rc ? rc : dt_ox_fail(c, "%d axes for rank %d", nav, r);
        for (int i = 0; i < nav; i++)
            axes[i] = (int)(av[i] < 0 ? av[i] + r : av[i]);
        na = nav;
    } else {
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (r < 1 || na < 1)
        return dt_ox_fail(c, "nothing to resize (rank %d, %d axes)", r, na);
    const sym *dims[DT_OX_MAX_RANK];
    memcpy(dims, x->dims, (size_t)r * sizeof dims[0]);
    int old = c->g->opset < 11; /* opset 10: (X, scales) */
    int64_t nsc, nsz;
    int has_scales = given(c, old ? 1 : 2, &nsc), has_sizes = !old && given(c, 3, &nsz);
    if (has_scales && has_sizes)
        return dt_ox_fail(c, "both scales and sizes are given (only one may be)");
    if (has_sizes)
        rc = by_sizes(c, x, 3, axes, na, dims);
    else if (has_scales)
        rc = by_scales(c, x, old ? 1 : 2, axes, na, dims);
    else
        rc = dt_ox_fail(c, "neither scales nor sizes are given");
    if (rc == UNKNOWN_DECLARED)
        return 0;
    return rc ? rc : dt_ox_set_out(c, 0, x->pub.elem_type, r, dims);
}
