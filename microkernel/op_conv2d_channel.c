/* conv2d's own sketch, channel (annotation/annotation.h): the hooks of its
 * kernels in f32, bf16, int8 and w8a32 (template/op_conv2d_channel.c: the
 * whole kernel after the dtype's types and epilogue).  Offered for grouped
 * convolutions only (groups > 1; transposed ones too: their phases' forward
 * convolutions, microkernel/op_conv2d.h): with one group every output channel
 * reads every input channel and the GEMM view's kernels are the ones.
 * Entry points: the dtype's conv2d, pack and packed-size names with _ch;
 * the weights are packed whole (K × R·S·C/groups, as W is stored), not
 * group by group. */
#include "microkernel/mk_op.h"
#include "microkernel/op_conv2d.h"

#include <stdio.h>

#include "annotation/fields.h"
#include "common/check.h"

#include "dt_tpl_op_conv2d_channel_c.h"
#include "dt_tpl_op_conv2d_channel_pre_c.h"

extern const dt_op_desc dt_op_conv2d;
extern const dt_mk_dtype dt_mk_dtype_f32;
extern const dt_mk_dtype dt_mk_dtype_bf16;
extern const dt_mk_dtype dt_mk_dtype_int8;
extern const dt_mk_dtype dt_mk_dtype_w8a32;

enum { ATTR_GROUPS = 3 }; /* ops/op_conv2d.c's attribute order */

/* grouped convolutions (a transposed one: its phases' forward ones, run
 * and packed as the GEMM view's are, microkernel/op_conv2d.h) */
static int offers(const int *attrs) { return attrs[ATTR_GROUPS] > 1; }

/* W as stored, K rows of R·S·C/groups (a g without dims: its view's N × K) */
static void rows_of(const dt_gemm *g, int64_t *n, int64_t *kred)
{
    if (!g->op) {
        *n = g->N;
        *kred = g->K;
        return;
    }
    int64_t geom[DT_CONV_GEOM_LEN];
    dt_mk_conv2d_geometry(g->dims, g->attrs, geom);
    *n = geom[4];
    *kred = geom[5] * geom[6] * (geom[3] / geom[10]);
}

static size_t packed_size(const dt_kernel *k, const dt_gemm *g)
{
    if (dt_mk_conv2d_transposed(g))
        return dt_mk_conv2d_transposed_size(k, g);
    int64_t n, kred;
    rows_of(g, &n, &kred);
    return ((dt_mk_conv2d_packed_size_fn)k->fn[DT_MK_CONV2D_SYM_PACKED_SIZE])(n, kred);
}

static void pack(const dt_kernel *k, const dt_gemm *g, const void *w, const float *scale_b,
                 void *packed)
{
    (void)scale_b;
    if (dt_mk_conv2d_transposed(g)) {
        dt_mk_conv2d_transposed_pack(k, g, w, NULL, packed, 0);
        return;
    }
    int64_t n, kred;
    rows_of(g, &n, &kred);
    ((dt_mk_conv2d_pack_fn)k->fn[DT_MK_CONV2D_SYM_PACK])(n, kred, w, packed);
}

static void pack_q(const dt_kernel *k, const dt_gemm *g, const void *w, const float *scale_b,
                   void *packed)
{
    if (dt_mk_conv2d_transposed(g)) {
        dt_mk_conv2d_transposed_pack(k, g, w, scale_b, packed, 1);
        return;
    }
    int64_t n, kred;
    rows_of(g, &n, &kred);
    ((dt_mk_conv2d_pack_q_fn)k->fn[DT_MK_CONV2D_SYM_PACK])(n, kred, w, scale_b, packed);
}

/* What dtk_packed_size_ch returns: f32 [K][N rounded up to NR] */
static size_t packed_bytes(const dt_annotation *a, int64_t N, int64_t K)
{
    return N < 1 || K < 1 ? 0 : (size_t)(K * ((N + a->nr - 1) / a->nr * a->nr)) * sizeof(float);
}

/* DT_CH_BF16: X and W are bf16 bits; DT_CH_ZP: X is u8 less its zero point */
static int macro_plain(const int *attrs, int i)
{
    (void)attrs;
    (void)i;
    return 0;
}
static int macro_bf16(const int *attrs, int i)
{
    (void)attrs;
    return i == 0;
}
static int macro_u8(const int *attrs, int i)
{
    (void)attrs;
    return i == 1;
}

/* ---- the inside tiles ---------------------------------------------------------
 * Two functions a window width s = 1 .. UNROLL and stride w = 1, 2
 * (dilation 1), dt_ch_in_S<s>_W<w> (every column inside the image, read
 * one after another) and dt_ch_ed_S<s>_W<w> (an edge tile: its first
 * column at iw0 of the image row, the columns outside the image skipped —
 * the padding adds nothing, 0 or int8's zero point less itself — and npx
 * of its pixels stored): MR consecutive output pixels × NV vectors of nb
 * consecutive channel blocks (NR channels each, one after another in one
 * call: the tile's pointers and column offsets are set up once for them
 * all), named accumulators a<p>_<v>, each window row's s taps' weights
 * w<t>_<v> in registers, and each of its (MR − 1)·w + s input columns
 * loaded once (x<v>, kept in a register) for every (pixel, tap) that reads
 * it: p·w + t = j.  The registers: (MR + s)·NV + 1, within the channel
 * sketch's budget (space/annotation.c) since s <= UNROLL. */
static void emit_inside(dt_strbuf *sb, const dt_annotation *a, int vl, int S, int SW, int edge)
{
    const int mr = a->mr, nv = a->nr / vl;
    dt_sb_appendf(sb, "static void dt_ch_%s_S%d_W%d(const dt_chp *c, const dt_ta *x0, const float *w0,"
                      " int64_t rows, const float *bias, dt_tc *y, int64_t iw0, int npx,"
                      " int64_t nb)\n"
                      "{\n    (void)iw0;\n    (void)npx;\n", edge ? "ed" : "in", S, SW);
    dt_sb_append(sb, "    const int64_t C = c->C, Kp = c->Kp, rs = c->dh * c->W * c->C;\n    (void)C;\n"
                     "#if DT_CH_ZP\n    const vf zpv = VBCAST(c->zp);\n#endif\n"
                     "    const int64_t lo = -iw0, hi = c->W - iw0; /* the columns inside */\n"
                     "    (void)lo;\n    (void)hi;\n"
                     "    for (int64_t b = 0; b < nb; b++, x0 += NR, w0 += NR, y += NR) {\n"
                     "    const dt_ta *x = x0;\n    const float *w = w0;\n");
    for (int p = 0; p < mr; p++)
        for (int v = 0; v < nv; v++)
            dt_sb_appendf(sb, "    vf a%d_%d = VZERO();\n", p, v);
    dt_sb_appendf(sb, "    for (int64_t r = 0; r < rows; r++, x += rs, w += %d * Kp) {\n", S);
    /* an inside tile keeps the row's weights in registers (else the
     * compiler folds each into its multiply-adds: a load per pixel); an
     * edge tile, whose column pointers need registers too, leaves it free */
    for (int t = 0; t < S; t++)
        for (int v = 0; v < nv; v++) {
            dt_sb_appendf(sb, "        vf w%d_%d = VLOAD(w + %d * Kp + %d);\n", t, v, t, v * vl);
            if (!edge)
                dt_sb_appendf(sb, "        DT_CH_IN_REGISTER(w%d_%d);\n", t, v);
        }
    if (!edge)
        dt_sb_append(sb, "        const dt_ta *xj = x;\n");
    const int cols = (mr - 1) * SW + S;
    for (int j = 0; j < cols; j++) {
        if (edge) /* a column outside the image reads the padding */
            dt_sb_appendf(sb, "        if (%d >= lo && %d < hi) {\n"
                              "        const dt_ta *xj = x + (iw0 + %d) * C;\n", j, j, j);
        for (int v = 0; v < nv; v++) {
            dt_sb_appendf(sb, "        {\n            vf x%d = DT_CH_XLOAD(xj + %d);\n"
                              "            DT_CH_IN_REGISTER(x%d);\n", v, v * vl, v);
            for (int t = 0; t < S; t++) {
                const int p = (j - t) / SW;
                if (j >= t && (j - t) % SW == 0 && p < mr)
                    dt_sb_appendf(sb, "            a%d_%d = VFMA(x%d, w%d_%d, a%d_%d);\n", p, v, v,
                                  t, v, p, v);
            }
            dt_sb_append(sb, "        }\n");
        }
        if (edge)
            dt_sb_append(sb, "        }\n");
        else if (j + 1 < cols)
            dt_sb_append(sb, "        xj += C;\n");
    }
    dt_sb_append(sb, "    }\n");
    for (int v = 0; v < nv; v++)
        dt_sb_appendf(sb, "#if DT_BIAS\n    const vf b%d = VLOAD(bias + b * NR + %d);\n#endif\n", v,
                      v * vl);
    for (int p = 0; p < mr; p++)
        for (int v = 0; v < nv; v++) {
            char guard[32] = ""; /* an edge tile stores its npx pixels only */
            if (edge && p)
                snprintf(guard, sizeof guard, "if (npx > %d) ", p);
            dt_sb_appendf(sb, "    %s{\n        vf o = a%d_%d;\n#if DT_CH_ZP\n        o = o * c->scale;\n"
                              "#endif\n#if DT_BIAS\n        o = o + b%d;\n#endif\n"
                              "        VSTORE(y + %d * c->K + %d, dt_act(o));\n    }\n",
                          guard, p, v, v, p, v * vl);
        }
    dt_sb_append(sb, "    }\n    (void)bias;\n}\n\n");
}

static void emit_tiles(dt_strbuf *sb, const dt_annotation *a, int vl)
{
    DT_ASSERT(a->nr % vl == 0 && a->unroll >= 1 && a->unroll <= DT_ANN_CH_UNROLL_MAX,
              "a channel annotation's nr is whole vectors, its unroll 1..DT_ANN_CH_UNROLL_MAX");
    dt_sb_appendf(sb, "/* ---- the inside tiles, generated (microkernel/op_conv2d_channel.c) ---- */\n"
                      "#define DT_CH_IN_MAX_S %d\n", a->unroll);
    for (int edge = 0; edge <= 1; edge++)
        for (int sw = 1; sw <= 2; sw++)
            for (int s = 1; s <= a->unroll; s++)
                emit_inside(sb, a, vl, s, sw, edge);
    /* [edge][stride - 1][window width] */
    dt_sb_append(sb, "static const dt_ch_in_fn dt_ch_in_fns[2][2][DT_CH_IN_MAX_S + 1] = {\n");
    for (int edge = 0; edge <= 1; edge++) {
        dt_sb_append(sb, "    {");
        for (int sw = 1; sw <= 2; sw++) {
            dt_sb_append(sb, "{NULL");
            for (int s = 1; s <= a->unroll; s++)
                dt_sb_appendf(sb, ", dt_ch_%s_S%d_W%d", edge ? "ed" : "in", s, sw);
            dt_sb_append(sb, sw == 1 ? "}, " : "}");
        }
        dt_sb_append(sb, "},\n");
    }
    dt_sb_append(sb, "};\n\n");
}

#define CHANNEL_HOOKS(dtype_, suffix, run_, pack_, macro_)                                     \
    {                                                                                          \
        .op = &dt_op_conv2d, .backend = &dtype_, .group = 0, .sketch = DT_SKETCH_CHANNEL,      \
        .offers = offers, .selector = "DT_CONV2D_CHANNEL", .nmacros = 2,                       \
        .macros = {"DT_CH_BF16", "DT_CH_ZP"}, .macro_value = macro_,                           \
        .driver_pre = dt_tpl_op_conv2d_channel_pre_c, .emit = emit_tiles,                      \
        .driver = dt_tpl_op_conv2d_channel_c, .nsyms = 3,                                      \
        .syms = {"dtk_conv2d" suffix "_ch", "dtk_pack" suffix "_ch",                           \
                 "dtk_packed_size" suffix "_ch"},                                              \
        .run = run_, .packed_size = packed_size, .pack = pack_, .packed_bytes = packed_bytes,  \
    }

const dt_mk_op dt_mk_op_conv2d_channel_f32 =
    CHANNEL_HOOKS(dt_mk_dtype_f32, "", dt_mk_conv2d_run, pack, macro_plain);
const dt_mk_op dt_mk_op_conv2d_channel_bf16 =
    CHANNEL_HOOKS(dt_mk_dtype_bf16, "_bf16", dt_mk_conv2d_run, pack, macro_bf16);
const dt_mk_op dt_mk_op_conv2d_channel_int8 =
    CHANNEL_HOOKS(dt_mk_dtype_int8, "_u8s8", dt_mk_conv2d_run_u8, pack_q, macro_u8);
const dt_mk_op dt_mk_op_conv2d_channel_w8a32 =
    CHANNEL_HOOKS(dt_mk_dtype_w8a32, "_w8", dt_mk_conv2d_run, pack_q, macro_plain);
