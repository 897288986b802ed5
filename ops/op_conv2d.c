/* conv2d: a 2-D convolution over NHWC images,
 *   Y[n,oh,ow,k] = act(Σ_{r,s,c} X[n, oh·sh − pt + r·dh, ow·sw − pl + s·dw, c]
 *                                · W[k,r,s,c] + bias[k])
 * (X read as zero outside the image), X [N,H,W,C], W [K,R,S,C] constant
 * (weights, packed once), Y [N,OH,OW,K] with
 *   OH = (H + pt + pb − dh·(R−1) − 1) / sh + 1, OW likewise over W, S, pl + pr, dw, sw.
 * The key's stride, pad and dilation are the height's and, unless
 * stride_w, pad_w and dilation_w say otherwise, the width's (pad: every
 * side's); pad_b and pad_r are the bottom and right pads where they differ
 * from the top and left (asymmetric padding, TF's SAME): sh = stride, sw =
 * stride_w or stride, pt = pad, pl = pad_w or pad, pb = pad_b or pt, pr =
 * pad_r or pl, dh = dilation, dw = dilation_w or dilation.  An attribute
 * that repeats the value it would take anyway is refused (one key per
 * convolution).
 * Its GEMM view is the implicit GEMM of the convolution: M = N·OH·OW output
 * pixels, N = K output channels, K = R·S·C, A[i][k] the im2col of X (never
 * materialised: a_row names the pixel each element is read from), B = W
 * read as K×(R·S·C), C = Y.  stride, pad, dilation and groups are integer
 * attributes (fixed by the key; a dim must be >= 1, a pad may be 0).  With
 * groups = G the channels form G independent groups: output channel k of
 * group k / (K/G) reads input channels of that group only, and W is
 * [K][R][S][C/G] (depthwise: G = C = K); the view's B is then block
 * diagonal, which b_elems / b_row describe.
 *
 * transpose=1 makes it the transposed convolution (ONNX's ConvTranspose,
 * a decoder's upsampling), the adjoint of the forward one over the same W:
 *   Y[n, ih·sh − pt + r·dh, iw·sw − pl + s·dw, k] += X[n,ih,iw,c] · W[k,r,s,c]
 * (then bias and activation), Y [N,OH,OW,K] with
 *   OH = (H − 1)·sh − pt − pb + dh·(R − 1) + 1 + out_pad, OW likewise with out_pad_w:
 * the pads crop the full output, out_pad / out_pad_w extend it at the
 * bottom / right (each below the axis's stride or dilation, as ONNX's
 * output_padding).  Its GEMM view is the same implicit GEMM over the output
 * pixels, A[i][(r,s,c)] = X[n, (oh + pt − r·dh)/sh, …] where that divides
 * (zero elsewhere: the zero-stuffed input, which no kernel reads — they
 * compute sh·sw forward convolutions, microkernel/conv2d_phases.c). */
#include "ops/op.h"


enum { N, H, W, C, K, R, S };
/* the attributes in key order; the last five are -1 (stride_w, dilation_w:
 * 0) when they take the value they inherit */
enum { STRIDE, PAD, DILATION, GROUPS, EPILOGUE, STRIDE_W, DILATION_W, PAD_W, PAD_B, PAD_R,
       TRANSPOSE, OUT_PAD, OUT_PAD_W };

/* One spatial axis's stride, pads before and after, dilation and (a
 * transposed convolution's) output padding. */
typedef struct {
    int64_t stride, pad0, pad1, dil, out_pad;
} conv_axis;

/* The height's (a = 0) or the width's (a = 1) values, inherited ones
 * resolved. */
static conv_axis axis_of(const int *attrs, int a)
{
    conv_axis x;
    if (a == 0) {
        x.stride = attrs[STRIDE];
        x.dil = attrs[DILATION];
        x.pad0 = attrs[PAD];
        x.pad1 = attrs[PAD_B] >= 0 ? attrs[PAD_B] : x.pad0;
        x.out_pad = attrs[OUT_PAD];
    } else {
        x.stride = attrs[STRIDE_W] > 0 ? attrs[STRIDE_W] : attrs[STRIDE];
        x.dil = attrs[DILATION_W] > 0 ? attrs[DILATION_W] : attrs[DILATION];
        x.pad0 = attrs[PAD_W] >= 0 ? attrs[PAD_W] : attrs[PAD];
        x.pad1 = attrs[PAD_R] >= 0 ? attrs[PAD_R] : x.pad0;
        x.out_pad = attrs[OUT_PAD_W];
    }
    return x;
}

/* One axis's output extent from its values (a transposed convolution's
 * may come out below 1: its pads crop it all). */
static int64_t geom_extent(int64_t in, int64_t win, int64_t s, int64_t p0, int64_t p1, int64_t d,
                           int64_t out_pad, int64_t transpose)
{
    if (transpose)
        return (in - 1) * s - p0 - p1 + d * (win - 1) + 1 + out_pad;
    const int64_t room = in + p0 + p1 - d * (win - 1) - 1;
    return room < 0 ? 0 : room / s + 1;
}

/* output extent of one spatial axis; 0 when the window does not fit
 * (the transposed convolution's: when the pads crop it all) */
static int64_t out_extent(int64_t in, int64_t win, const int *attrs, int a)
{
    const conv_axis x = axis_of(attrs, a);
    const int64_t o = geom_extent(in, win, x.stride, x.pad0, x.pad1, x.dil, x.out_pad,
                                  attrs[TRANSPOSE]);
    return o < 1 ? 0 : o;
}

/* A transposed convolution's (input pixel, tap) pairs along one axis that
 * land inside the output: 0 <= i·s − p0 + r·d < O, counted tap by tap. */
static int64_t landing_pairs(int64_t in, int64_t win, const int *attrs, int a)
{
    const conv_axis x = axis_of(attrs, a);
    const int64_t o = out_extent(in, win, attrs, a);
    int64_t pairs = 0;
    for (int64_t r = 0; r < win; r++) {
        const int64_t off = r * x.dil - x.pad0; /* output of i: i·s + off */
        const int64_t lo = off >= 0 ? 0 : (-off + x.stride - 1) / x.stride;
        int64_t hi = o - 1 - off < 0 ? -1 : (o - 1 - off) / x.stride;
        if (hi > in - 1)
            hi = in - 1;
        if (hi >= lo)
            pairs += hi - lo + 1;
    }
    return pairs;
}

/* each output channel sums over its group's C/groups input channels; a
 * transposed convolution's products are those that land in the output */
static double conv_flops(const int64_t *d, const int *attrs)
{
    const double cg = (double)(d[C] / attrs[GROUPS]);
    if (attrs[TRANSPOSE])
        return 2.0 * (double)d[N] * (double)landing_pairs(d[H], d[R], attrs, 0) *
               (double)landing_pairs(d[W], d[S], attrs, 1) * (double)d[K] * cg;
    return 2.0 * (double)d[N] * (double)out_extent(d[H], d[R], attrs, 0) *
           (double)out_extent(d[W], d[S], attrs, 1) * (double)d[K] * (double)d[R] * (double)d[S] *
           cg;
}

/* An attribute that says what it would be anyway: refused, so a
 * convolution has one key. */
static int repeats(const int *attrs, dt_err *e)
{
    const int left = (int)axis_of(attrs, 1).pad0;
    const struct {
        int v, base, set;
        const char *name, *base_name;
    } pairs[] = {
        {attrs[STRIDE_W], attrs[STRIDE], attrs[STRIDE_W] > 0, "stride_w", "stride"},
        {attrs[DILATION_W], attrs[DILATION], attrs[DILATION_W] > 0, "dilation_w", "dilation"},
        {attrs[PAD_W], attrs[PAD], attrs[PAD_W] >= 0, "pad_w", "pad"},
        {attrs[PAD_B], attrs[PAD], attrs[PAD_B] >= 0, "pad_b", "the top pad"},
        {attrs[PAD_R], left, attrs[PAD_R] >= 0, "pad_r", "the left pad"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i].set && pairs[i].v == pairs[i].base)
            return dt_errf(e, DT_EINVAL, "conv2d: %s=%d repeats %s (%d): leave it out (one key "
                           "per convolution)", pairs[i].name, pairs[i].v, pairs[i].base_name,
                           pairs[i].base);
    return 0;
}

static int conv_check(const int64_t *d, const int *attrs, dt_err *e)
{
    static const char *const axis[2] = {"height", "width"};
    const int in[2] = {H, W}, win[2] = {R, S};
    int rc = repeats(attrs, e);
    if (rc)
        return rc;
    for (int a = 0; a < 2; a++) {
        const conv_axis x = axis_of(attrs, a);
        if (x.out_pad && !attrs[TRANSPOSE])
            return dt_errf(e, DT_EINVAL, "conv2d: %s=%d is a transposed convolution's output "
                           "padding: it needs transpose=1", a ? "out_pad_w" : "out_pad",
                           (int)x.out_pad);
        if (x.out_pad && x.out_pad >= x.stride && x.out_pad >= x.dil)
            return dt_errf(e, DT_EINVAL, "conv2d: %s=%d is not below the %s's stride (%d) or "
                           "dilation (%d) (ONNX's output_padding rule)",
                           a ? "out_pad_w" : "out_pad", (int)x.out_pad, axis[a],
                           (int)x.stride, (int)x.dil);
    }
    for (int i = 0; i < 2; i++) {
        const int dim = i ? K : C;
        if (d[dim] % attrs[GROUPS])
            return dt_errf(e, DT_EINVAL, "conv2d: %s=%lld is not a multiple of groups=%d (each "
                           "group takes C/groups input and K/groups output channels)",
                           i ? "K" : "C", (long long)d[dim], attrs[GROUPS]);
    }
    for (int a = 0; a < 2; a++) {
        /* the window's span must fit in int64 before it is compared */
        if (d[win[a]] > INT32_MAX || d[in[a]] > INT32_MAX)
            return dt_errf(e, DT_EOVERFLOW, "conv2d: %s or %s above 2^31", a ? "W" : "H",
                           a ? "S" : "R");
        const conv_axis x = axis_of(attrs, a);
        if (attrs[TRANSPOSE] && out_extent(d[in[a]], d[win[a]], attrs, a) < 1)
            return dt_errf(e, DT_EINVAL,
                           "conv2d: the transposed output %s is 0: its pads %lld and %lld crop "
                           "all of (%s-1)*stride + dilation*(%s-1) + 1 + out_pad = %lld",
                           axis[a], (long long)x.pad0, (long long)x.pad1, a ? "W" : "H",
                           a ? "S" : "R",
                           (long long)((d[in[a]] - 1) * x.stride + x.dil * (d[win[a]] - 1) + 1 +
                                       x.out_pad));
        if (out_extent(d[in[a]], d[win[a]], attrs, a) < 1)
            return dt_errf(e, DT_EINVAL,
                           "conv2d: the output %s is 0: %s=%lld with pads %lld and %lld is "
                           "smaller than the window's span dilation*(%s-1)+1 = %lld",
                           axis[a], a ? "W" : "H", (long long)d[in[a]], (long long)x.pad0,
                           (long long)x.pad1, a ? "S" : "R", (long long)x.dil * (d[win[a]] - 1) + 1);
    }
    int64_t oh = out_extent(d[H], d[R], attrs, 0), ow = out_extent(d[W], d[S], attrs, 1), r;
    int64_t x[] = {d[N], d[H], d[W], d[C]}, w[] = {d[K], d[R], d[S], d[C]}; /* ≥ K·R·S·C/groups */
    int64_t y[] = {d[N], oh, ow, d[K]}, f[] = {2, d[N], oh, ow, d[K], d[R], d[S], d[C]};
    if ((rc = dt_checked_product(x, 4, "X size N*H*W*C", &r, e)) ||
        (rc = dt_checked_product(w, 4, "W size K*R*S*C", &r, e)) ||
        (rc = dt_checked_product(y, 4, "Y size N*OH*OW*K", &r, e)) ||
        (rc = dt_checked_product(f, 8, "flop count 2*N*OH*OW*K*R*S*C", &r, e)))
        return rc;
    return 0;
}

/* Roles name no single dim: M, N·OH·OW; K, R·S·C (N is the dim K). */
static void conv_gemm(const int *attrs, const int64_t *dims, dt_gemm *g)
{
    g->dim[DT_ROLE_BATCH] = -1;
    g->dim[DT_ROLE_M] = -1;
    g->dim[DT_ROLE_N] = K;
    g->dim[DT_ROLE_K] = -1;
    g->batched = 0;
    if (dims) {
        g->batch = 1;
        g->M = dims[N] * out_extent(dims[H], dims[R], attrs, 0) *
               out_extent(dims[W], dims[S], attrs, 1);
        g->N = dims[K];
        g->K = dims[R] * dims[S] * dims[C];
    }
    g->b_trans = 1;
    g->b_const = 1;
    g->bias = dt_epilogue_bias(attrs[EPILOGUE]);
    g->act = dt_epilogue_act(attrs[EPILOGUE]);
}

static int64_t conv_a_elems(const int64_t *d, const int *attrs)
{
    (void)attrs;
    return d[N] * d[H] * d[W] * d[C];
}

/* The input pixel output pixel o reads through tap r along one axis, or
 * -1 (the padding; a transposed convolution's: no input pixel lands on o
 * through r). */
static int64_t input_of(int64_t o, int64_t r, const conv_axis *x, int64_t in, int transpose)
{
    int64_t i = o * x->stride - x->pad0 + r * x->dil;
    if (transpose) {
        const int64_t t = o + x->pad0 - r * x->dil; /* = i·stride */
        i = t >= 0 && t % x->stride == 0 ? t / x->stride : -1;
    }
    return i >= 0 && i < in ? i : -1;
}

/* Row i of A: i = (n·OH + oh)·OW + ow, column k = (r·S + s)·C + c. */
static void conv_a_row(const int64_t *d, const int *attrs, int64_t i, int64_t *index)
{
    const int64_t oh_n = out_extent(d[H], d[R], attrs, 0), ow_n = out_extent(d[W], d[S], attrs, 1);
    const int64_t ow = i % ow_n, oh = i / ow_n % oh_n, n = i / ow_n / oh_n;
    const conv_axis y = axis_of(attrs, 0), x = axis_of(attrs, 1);
    for (int64_t r = 0; r < d[R]; r++)
        for (int64_t s = 0; s < d[S]; s++) {
            const int64_t ih = input_of(oh, r, &y, d[H], attrs[TRANSPOSE]);
            const int64_t iw = input_of(ow, s, &x, d[W], attrs[TRANSPOSE]);
            const int inside = ih >= 0 && iw >= 0;
            const int64_t at = ((n * d[H] + ih) * d[W] + iw) * d[C];
            for (int64_t c = 0; c < d[C]; c++)
                *index++ = inside ? at + c : -1;
        }
}

static void conv_geometry(const int64_t *d, const int *attrs, dt_conv_geom *g)
{
    const conv_axis y = axis_of(attrs, 0), x = axis_of(attrs, 1);
    *g = (dt_conv_geom){.n = d[N], .h = d[H], .w = d[W], .c = d[C], .k = d[K], .r = d[R],
                        .s = d[S], .stride = y.stride, .pad = y.pad0, .dilation = y.dil,
                        .groups = attrs[GROUPS], .stride_w = x.stride, .dilation_w = x.dil,
                        .pad_l = x.pad0, .pad_b = y.pad1, .pad_r = x.pad1,
                        .transpose = attrs[TRANSPOSE], .out_pad_h = y.out_pad,
                        .out_pad_w = x.out_pad};
}

void dt_conv_geom_values(const dt_conv_geom *c, int64_t v[DT_CONV_GEOM_LEN])
{
    const int64_t in_order[DT_CONV_GEOM_LEN] = {
        c->n,      c->h,   c->w,        c->c,          c->k,     c->r,     c->s,    c->stride,
        c->pad,    c->dilation, c->groups, c->stride_w, c->dilation_w, c->pad_l, c->pad_b,
        c->pad_r};
    for (int i = 0; i < DT_CONV_GEOM_LEN; i++)
        v[i] = in_order[i];
}

void dt_conv_geom_out(const dt_conv_geom *c, int64_t *oh, int64_t *ow)
{
    *oh = geom_extent(c->h, c->r, c->stride, c->pad, c->pad_b, c->dilation, c->out_pad_h,
                      c->transpose);
    *ow = geom_extent(c->w, c->s, c->stride_w, c->pad_l, c->pad_r, c->dilation_w, c->out_pad_w,
                      c->transpose);
}

/* W is [K][R][S][C/groups]; the view's B (K×R·S·C) is block diagonal */
static int64_t conv_b_elems(const int64_t *d, const int *attrs)
{
    return d[K] * d[R] * d[S] * (d[C] / attrs[GROUPS]);
}

/* Row n of the view's B: output channel n of group n / (K/groups) reads
 * that group's C/groups input channels only. */
static void conv_b_row(const int64_t *d, const int *attrs, int64_t n, int64_t *index)
{
    const int64_t cg = d[C] / attrs[GROUPS], grp = n / (d[K] / attrs[GROUPS]);
    for (int64_t rs = 0; rs < d[R] * d[S]; rs++)
        for (int64_t c = 0; c < d[C]; c++)
            *index++ = c / cg == grp ? (n * d[R] * d[S] + rs) * cg + c - grp * cg : -1;
}

const dt_op_desc dt_op_conv2d = {
    .name = "conv2d",
    .summary = "Y[N,OH,OW,K] = X[N,H,W,C] (*) W[K,R,S,C/groups], NHWC, "
               "stride/pad/dilation (per axis and side: _w, pad_b, pad_r)/groups, optional "
               "bias/relu/gelu/relu6/hardswish; transpose=1: the transposed convolution "
               "(out_pad, out_pad_w)",
    .ndims = 7,
    .dims = {"N", "H", "W", "C", "K", "R", "S"},
    .nattrs = 13,
    /* stride and dilation up to 1024, as pad: an STFT front end's hop (128,
     * 256, 512) or a WaveNet's dilation (512); the kernels' arithmetic is
     * int64 and their tile copies do not grow with either (template/
     * op_conv2d.c: a strided copy holds each pixel's window apart) */
    .attrs = {{.name = "stride", .integer = 1, .min = 1, .max = 1024, .default_index = 1,
               .always_print = 1},
              {.name = "pad", .integer = 1, .min = 0, .max = 1024, .default_index = 0,
               .always_print = 1},
              {.name = "dilation", .integer = 1, .min = 1, .max = 1024, .default_index = 1},
              {.name = "groups", .integer = 1, .min = 1, .max = 65536, .default_index = 1},
              {.name = "epilogue",
               .nvalues = DT_EPILOGUE_COUNT,
               .values = DT_EPILOGUE_VALUES,
               .default_index = 0,
               .always_print = 0},
              /* the width's where they differ from the height's (0 / -1: the same) */
              {.name = "stride_w", .integer = 1, .min = 0, .max = 1024, .default_index = 0},
              {.name = "dilation_w", .integer = 1, .min = 0, .max = 1024, .default_index = 0},
              {.name = "pad_w", .integer = 1, .min = -1, .max = 1024, .default_index = -1},
              {.name = "pad_b", .integer = 1, .min = -1, .max = 1024, .default_index = -1},
              {.name = "pad_r", .integer = 1, .min = -1, .max = 1024, .default_index = -1},
              /* the transposed convolution and its output padding per axis */
              {.name = "transpose", .integer = 1, .min = 0, .max = 1, .default_index = 0},
              {.name = "out_pad", .integer = 1, .min = 0, .max = 1023, .default_index = 0},
              {.name = "out_pad_w", .integer = 1, .min = 0, .max = 1023, .default_index = 0}},
    .flops = conv_flops,
    .check = conv_check,
    .gemm = conv_gemm,
    .dtypes = DT_DTYPE_BIT(DT_DTYPE_F32) | DT_DTYPE_BIT(DT_DTYPE_BF16) |
              DT_DTYPE_BIT(DT_DTYPE_INT8) | DT_DTYPE_BIT(DT_DTYPE_W8A32),
    .a_elems = conv_a_elems,
    .a_row = conv_a_row,
    .b_elems = conv_b_elems,
    .b_row = conv_b_row,
    .conv = conv_geometry,
};
