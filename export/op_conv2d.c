/* conv2d's export hooks for every dtype it has kernels in (export/export_op.h),
 * the dtype as data (conv_dtype): what NAME takes, what its comment says and
 * which of a kernel's entry points it calls.
 *   f32:    void NAME(<vars>, const float *X, const float *packed, float *Y
 *                     [, const float *bias]);  NAME_pack(const float *W, float *packed)
 *   bf16:   X, W bf16 (uint16_t); f32 sums; void NAME_pack(const uint16_t *W, void *packed)
 *   int8:   void NAME(<vars>, const uint8_t *X, float scale_a, int32_t zp_a,
 *                     const void *packed, float *Y[, const float *bias]);
 *           int64_t NAME_pack(const int8_t *W, const float *scale_b, void *packed)
 *   w8a32:  f32 X, s8 W with per-channel scales, dequantized in registers
 * Y[n,oh,ow,k] = Σ_{r,s,c} X[n, oh·stride − pad + r·dilation, ow·stride − pad
 * + s·dilation, c] · W[k,r,s,c] (dequantized as the dtype says) (+ bias[k])
 * (then ReLU / GELU), X NHWC, W [K][R][S][C/groups], Y [N][OH][OW][K] (with
 * groups > 1, output channel k of group g = k / (K/groups) reads channels
 * [g·C/groups, (g+1)·C/groups) only).  Each kernel is called through its
 * dtk_conv2d* entry point (microkernel/op_conv2d.c) with the geometry
 * {N, H, W, C, K, R, S, stride, pad, dilation, groups, stride_w,
 * dilation_w, pad_l, pad_b, pad_r}: the dims
 * of the shape and the workload's attributes, constants in the text; each
 * packing region is filled by the kernel's dtk_pack* with the GEMM view's N
 * = K and K = R·S·C (constant: export/export_plan.c refuses a workload whose
 * K, R, S or C vary); with groups = G > 1 the view's B is block diagonal
 * and a region is G packings of K/G x R·S·C/G, group i's at i times the
 * kernel's dtk_packed_size* of that (as microkernel/op_conv2d.c's
 * conv_pack_groups lays them out and the kernel reads them).  The quantized
 * dtypes' NAME_pack takes weights already quantized to s8 and their
 * per-output-channel scales, as dense's does. */
#include <stdio.h>
#include <string.h>

#include "export/export_internal.h"
#include "microkernel/mk_op.h"

extern const dt_op_desc dt_op_conv2d;

/* conv2d's groups attribute (ops/op_conv2d.c), in the workload's attrs;
 * the strides, pads and dilations are read resolved, per axis, from the
 * op's geometry (conv_geom) */
enum { GROUPS = 3 };

/* The plan's strides, pads and dilations (its dims do not matter). */
static dt_conv_geom conv_geom(const dt_export_plan *p)
{
    const int64_t dims[DT_MAX_DIMS] = {0};
    dt_conv_geom c;
    dt_op_conv2d.conv(dims, p->kop.attrs, &c);
    return c;
}

/* 1 when the width's stride, pads or dilation, or the bottom pad, differ
 * from the height's top values the paragraph states. */
static int per_axis(const dt_conv_geom *c)
{
    return c->stride_w != c->stride || c->dilation_w != c->dilation || c->pad_l != c->pad ||
           c->pad_b != c->pad || c->pad_r != c->pad;
}
/* conv2d's dim C (ops/op_conv2d.c: N, H, W, C, K, R, S) */
enum { DIM_C = 3 };

/* What differs between the dtypes' exported text. */
typedef struct conv_dtype {
    const char *x_params;    /* NAME's parameters before packed */
    const char *packed_type; /* "const float" (f32) or "const void" */
    const char *conv_entry;  /* the kernel's entry point NAME calls */
    const char *call_q;      /* its arguments after X: "" or ", scale_a, zp_a" */
    const char *pack_entry;  /* the kernel's packing entry point */
    const char *pack_q;      /* its arguments after W: "" or ", scale_b" */
    /* The comment's paragraph, with @NAME@, @BIAS@ (" + bias[k]"), @ACT@,
     * @STRIDE@, @PAD@, @DIL@ (the workload's attributes), @NK@ (K*R*S*C/groups:
     * W's elements), @RSC@ (R*S*C/groups: one output channel's sum), @BYTES@,
     * @FLOATS@ (the packed size in bytes, in floats), @NPACK@, @S@ (its
     * plural s), @BIASNOTE@ ("; bias has K floats"), @CG@ ("/groups" after
     * W's C, "" with one group), @GROUPS@ (the lines saying which channels a
     * group reads) and @GPACK@ (how a region holds the groups; both "" with
     * one group) filled in for the plan. */
    const char *doc;
} conv_dtype;

/* the convolution every paragraph states, after its dtype's lines: XEL and
 * WEL the elements as the dtype reads them, SCALE its dequantization, ZERO
 * what X is read as in the padding */
#define CONV_LINES(XEL, WEL, SCALE, ZERO)                                                    \
    " *   Y[n,oh,ow,k] = " SCALE "sum_{r,s,c} " XEL " * " WEL "@BIAS@@ACT@,\n"                  \
    " *   ih = oh*@STRIDE@ - @PAD@ + r*@DIL@, iw = ow*@STRIDE@ - @PAD@ + s*@DIL@ (stride @STRIDE@, "  \
    "pad @PAD@,\n *   dilation @DIL@), X read as " ZERO " outside the image; X is N x H x W x C "  \
    "(NHWC),\n *   W is K x R x S x C@CG@, Y is N x OH x OW x K, all row-major and contiguous, with\n" \
    " *   OH = (H + 2*@PAD@ - @DIL@*(R-1) - 1) / @STRIDE@ + 1 and OW likewise of W and S.\n@GROUPS@"

/* the lines every dtype's paragraph but f32's ends with */
#define SIZE_LINE " * @NAME@_packed_size(): bytes of the packed weights (@BYTES@, a multiple of 64).\n"
#define ALIGN_LINE " * Pointers are borrowed; packed is best 64-byte aligned (at least 4).\n"
#define SCALES_REFUSED                                                                   \
    " *   It returns 0, or refuses (writing nothing) a scale_b that is NULL (-1)\n"      \
    " *   or whose scale_b[k] is zero, NaN or infinite (k + 1: the first one).\n"
#define CALL_LINE(EXTRA)                                                                 \
    " * @NAME@(...): Y for any shape (any N, H, W with an output of at least one pixel)" \
    EXTRA ";\n *   packed as filled by @NAME@_pack@BIASNOTE@.\n"

static const conv_dtype conv_f32 = {
    .x_params = "const float *X",
    .packed_type = "const float",
    .conv_entry = "dtk_conv2d",
    .call_q = "",
    .pack_entry = "dtk_pack",
    .pack_q = "",
    .doc = " *\n" CONV_LINES("X[n,ih,iw,c]", "W[k,r,s,c]", "", "0")
           " * @NAME@_packed_size(): bytes of the packed weights (@FLOATS@ floats).\n"
           " * @NAME@_pack(W, packed): packs W (K x R x S x C@CG@, @NK@ floats) once into packed;\n"
           " *   every layout the dispatcher needs is in it (@NPACK@ region@S@, one per panel\n"
           " *   width NR).\n@GPACK@" CALL_LINE("")
           " * Pointers are borrowed; 64-byte alignment of packed is best, not required.\n",
};

static const conv_dtype conv_bf16 = {
    .x_params = "const uint16_t *X",
    .packed_type = "const void",
    .conv_entry = "dtk_conv2d_bf16",
    .call_q = "",
    .pack_entry = "dtk_pack_bf16",
    .pack_q = "",
    .doc = " *\n * dtype bf16: X and W are bf16 (uint16_t, the upper 16 bits of an IEEE float;\n"
           " * convert with round to nearest even), the sums are f32, Y is f32:\n"
           CONV_LINES("X[n,ih,iw,c]", "W[k,r,s,c]", "", "0") SIZE_LINE
           " * @NAME@_pack(W, packed): packs W (K x R x S x C@CG@ bf16, @NK@ values) once into\n"
           " *   packed; every layout the dispatcher needs is in it (@NPACK@ region@S@, one\n"
           " *   per panel layout).\n@GPACK@" CALL_LINE("") ALIGN_LINE,
};

static const conv_dtype conv_int8 = {
    .x_params = "const uint8_t *X, float scale_a, int32_t zp_a",
    .packed_type = "const void",
    .conv_entry = "dtk_conv2d_u8s8",
    .call_q = ", scale_a, zp_a",
    .pack_entry = "dtk_pack_u8s8",
    .pack_q = ", scale_b",
    .doc = " *\n * dtype int8: X is u8 with one scale and zero point (its real value is\n"
           " * scale_a * (X - zp_a)), W is s8 with one scale per output channel k\n"
           " * (scale_b[k]), the sums are int32, Y is f32:\n"
           CONV_LINES("(X[n,ih,iw,c] - zp_a)", "W[k,r,s,c]", "scale_a * scale_b[k] * ",
                      "zp_a (the real 0)")
           " * The int32 sums are exact while |sum (X - zp_a) * W| < 2^31 (always for\n"
           " * R*S*C@CG@ <= 65793; here @RSC@).\n" SIZE_LINE
           " * @NAME@_pack(W, scale_b, packed): packs the already-quantized W (K x R x S x C@CG@\n"
           " *   s8) and its K per-channel scales once into packed, with the zero-point\n"
           " *   compensation sum_{r,s,c} W[k,r,s,c] it computes itself; every layout the\n"
           " *   dispatcher needs is in it (@NPACK@ region@S@, one per panel layout).\n"
           "@GPACK@" SCALES_REFUSED CALL_LINE(", scale_a and zp_a X's\n *   quantization (scale_a finite)")
           ALIGN_LINE,
};

static const conv_dtype conv_w8a32 = {
    .x_params = "const float *X",
    .packed_type = "const void",
    .conv_entry = "dtk_conv2d_w8",
    .call_q = "",
    .pack_entry = "dtk_pack_w8",
    .pack_q = ", scale_b",
    .doc = " *\n * dtype w8a32 (weight-only int8): X is f32, W is s8 with one scale per\n"
           " * output channel k (scale_b[k]), dequantized in registers; the sums are\n"
           " * f32, Y is f32:\n"
           CONV_LINES("X[n,ih,iw,c]", "W[k,r,s,c]", "scale_b[k] * ", "0") SIZE_LINE
           " * @NAME@_pack(W, scale_b, packed): packs the already-quantized W (K x R x S x C@CG@\n"
           " *   s8) and its K per-channel scales once into packed; every layout the\n"
           " *   dispatcher needs is in it (@NPACK@ region@S@, one per panel layout).\n"
           "@GPACK@" SCALES_REFUSED CALL_LINE("") ALIGN_LINE,
};

static void conv_params(dt_strbuf *sb, const dt_export_plan *p, const conv_dtype *d)
{
    dt_sb_appendf(sb, "%s, %s *packed, float *Y%s", d->x_params, d->packed_type,
                  p->g.bias ? ", const float *bias" : "");
}

/* Whether the plan's weights are grouped: G > 1 diagonal blocks (a plan
 * without constant weights, or a test's zeroed one, has G 0). */
static int grouped(const dt_export_plan *p) { return p->G > 1; }

/* Whether some packing region is an own sketch's whole packing. */
static int whole_regions(const dt_export_plan *p)
{
    for (int g = 0; g < p->npack; g++)
        if (p->pack[g].whole)
            return 1;
    return 0;
}

/* d's paragraph with the plan's values in its @...@ fields; with one group
 * the text it always was (exported files are hashed by the tests) */
static void conv_doc(dt_strbuf *sb, const dt_export_plan *p, const conv_dtype *d)
{
    char bytes[32], floats[32], npack[16], nk[32], rsc[32], stride[16], pad[16], dil[16];
    char groups[800] = "", axes[480] = "";
    const int gr = grouped(p);
    const dt_conv_geom cg = conv_geom(p);
    snprintf(bytes, sizeof bytes, "%lld", (long long)p->packed_bytes);
    snprintf(floats, sizeof floats, "%lld", (long long)(p->packed_bytes / 4));
    snprintf(npack, sizeof npack, "%d", p->npack);
    /* W holds the G diagonal blocks of the view's N x K only */
    snprintf(nk, sizeof nk, "%lld", (long long)(gr ? p->G * p->Ng * p->Kg : p->N * p->K));
    snprintf(rsc, sizeof rsc, "%lld", (long long)(gr ? p->Kg : p->K));
    if (gr) /* C is a constant: export/export_plan.c refuses varying weights */
        snprintf(groups, sizeof groups,
                 " *   groups = %d: output channel k is in group g = k / (K/groups)\n"
                 " *   (K/groups = %lld) and reads input channels [g*C/groups,\n"
                 " *   (g+1)*C/groups) only (C/groups = %lld): the sum's c runs over\n"
                 " *   them, with W[k,r,s,c - g*C/groups].\n",
                 p->kop.attrs[GROUPS], (long long)p->Ng,
                 (long long)(p->w->dims[DIM_C]->value / p->kop.attrs[GROUPS]));
    snprintf(stride, sizeof stride, "%lld", (long long)cg.stride);
    snprintf(pad, sizeof pad, "%lld", (long long)cg.pad);
    snprintf(dil, sizeof dil, "%lld", (long long)cg.dilation);
    if (per_axis(&cg)) /* the lines above hold for the height; these override them */
        snprintf(axes, sizeof axes,
                 " *   Per axis: along H stride %lld, dilation %lld, pads %lld (top) and %lld\n"
                 " *   (bottom); along W stride %lld, dilation %lld, pads %lld (left) and\n"
                 " *   %lld (right): ih = oh*%lld - %lld + r*%lld, iw = ow*%lld - %lld + s*%lld,\n"
                 " *   OH = (H + %lld - %lld*(R-1) - 1) / %lld + 1, OW = (W + %lld - %lld*(S-1)\n"
                 " *   - 1) / %lld + 1.\n",
                 (long long)cg.stride, (long long)cg.dilation, (long long)cg.pad,
                 (long long)cg.pad_b, (long long)cg.stride_w, (long long)cg.dilation_w,
                 (long long)cg.pad_l, (long long)cg.pad_r, (long long)cg.stride,
                 (long long)cg.pad, (long long)cg.dilation, (long long)cg.stride_w,
                 (long long)cg.pad_l, (long long)cg.dilation_w, (long long)(cg.pad + cg.pad_b),
                 (long long)cg.dilation, (long long)cg.stride, (long long)(cg.pad_l + cg.pad_r),
                 (long long)cg.dilation_w, (long long)cg.stride_w);
    /* the groups' lines, then the per-axis ones, where the paragraph has @GROUPS@ */
    strncat(groups, axes, sizeof groups - strlen(groups) - 1);
    char gpack[200] = ""; /* the regions of grouped weights (and whole ones) */
    if (gr)
        snprintf(gpack, sizeof gpack,
                 " *   A region is the groups' packings one after another, group\n"
                 " *   g's K/groups rows at g times one group's packed size%s\n",
                 whole_regions(p) ? ", or\n *   (a channel kernel's) one packing of all K rows."
                                  : ".");
    const dt_export_field fill[] = {
        {"@NAME@", p->name},
        {"@BIAS@", p->g.bias ? " + bias[k]" : ""},
        {"@ACT@", dt_export_act_text(p)},
        {"@STRIDE@", stride},
        {"@PAD@", pad},
        {"@DIL@", dil},
        {"@NK@", nk},
        {"@RSC@", rsc},
        {"@BYTES@", bytes},
        {"@FLOATS@", floats},
        {"@NPACK@", npack},
        {"@S@", p->npack == 1 ? "" : "s"},
        {"@BIASNOTE@", p->g.bias ? "; bias has K floats" : ""},
        {"@CG@", gr ? "/groups" : ""},
        {"@GROUPS@", groups},
        {"@GPACK@", gpack},
    };
    dt_export_fill(sb, d->doc, fill, sizeof fill / sizeof fill[0]);
}

/* The geometry as a compound literal: the shape's dims, then the workload's
 * strides, pads, dilations and groups as the kernel's geometry orders them. */
/* The entry point kernel k is called by: its row of hooks' (an own sketch's
 * kernels have their own, dt_mk_op_for) — the call's first, the packing's
 * second. */
static const char *entry_of(const dt_export_plan *p, int k, int which, const conv_dtype *d)
{
    const dt_mk_op *m = p->w ? dt_mk_op_for(p->w->op, p->kop.dtype, &p->k[k].ann) : NULL;
    if (m && m->sketch != DT_SKETCH_BLOCKED)
        return m->syms[which];
    return which ? d->pack_entry : d->conv_entry;
}

static void conv_call(dt_strbuf *sb, const dt_export_plan *p, int k, const conv_dtype *d,
                      int unit)
{
    char at[64];
    const dt_conv_geom c = conv_geom(p);
    int64_t v[DT_CONV_GEOM_LEN]; /* the dims (0..6) are the shape's variables in the text */
    dt_conv_geom_values(&c, v);
    _Static_assert(DT_CONV_GEOM_LEN == 16, "the literal below writes 16 values");
    dt_export_offset_text(at, sizeof at, unit, "const char *",
                          p->pack[p->k[k].pack_group].offset);
    dt_sb_appendf(sb, "        %s_k%d_%s((const int64_t[16]){dt_N, dt_H, dt_W, dt_C, dt_K, "
                      "dt_R, dt_S, %lld, %lld, %lld, %lld,\n"
                      "                %lld, %lld, %lld, %lld, %lld},\n"
                      "            X%s, %s, %s, Y, %s_THREADS);\n",
                  p->name, k, entry_of(p, k, 0, d), (long long)v[7], (long long)v[8],
                  (long long)v[9],
                  (long long)v[10], (long long)v[11], (long long)v[12], (long long)v[13],
                  (long long)v[14], (long long)v[15], d->call_q, at,
                  p->g.bias ? "bias" : "NULL", p->name);
}

/* Fills packing region g: one call of the kernel's pack entry point, or
 * with G groups a loop of one per group, group dt_g's rows of W (and its
 * scales) into the region at dt_g times one group's packed size (the
 * kernel's own packed_size of Ng x Kg, not rounded: where it reads them). */
static void conv_pack(dt_strbuf *sb, const dt_export_plan *p, int g, const conv_dtype *d,
                      int unit)
{
    char at[64];
    dt_export_offset_text(at, sizeof at, unit, "char *", p->pack[g].offset);
    if (p->pack[g].whole) { /* an own sketch's kernels: all K rows of W in one call */
        dt_sb_appendf(sb, "    %s_k%d_%s(%lld, %lld, W%s, %s);\n", p->name, p->pack[g].kernel,
                      entry_of(p, p->pack[g].kernel, 1, d), (long long)p->N, (long long)p->Kg,
                      d->pack_q, at);
        return;
    }
    if (!grouped(p)) {
        dt_sb_appendf(sb, "    %s_k%d_%s(%lld, %lld, W%s, %s);\n", p->name, p->pack[g].kernel,
                      d->pack_entry, (long long)p->N, (long long)p->K, d->pack_q, at);
        return;
    }
    char q[64] = ""; /* the group's Ng scales */
    if (d->pack_q[0])
        snprintf(q, sizeof q, "%s + dt_g * %lld", d->pack_q, (long long)p->Ng);
    /* f32's offsets count floats: its packed sizes are whole floats */
    dt_sb_appendf(sb, "    for (int64_t dt_g = 0; dt_g < %lld; dt_g++) /* group dt_g's rows */\n"
                      "        %s_k%d_%s(%lld, %lld, W + dt_g * %lld%s, %s + dt_g * %lld);\n",
                  (long long)p->G, p->name, p->pack[g].kernel, d->pack_entry, (long long)p->Ng,
                  (long long)p->Kg, (long long)(p->Ng * p->Kg), q, at,
                  (long long)(p->pack[g].group_bytes / unit));
}

/* The hooks of dtype DT (conv_DT) and their dt_export_op. */
#define CONV_EXPORT_OP(dt, DTYPE, PARAMS, PACK_PARAMS, UNIT, TAIL)                        \
    static void conv_params_##dt(dt_strbuf *sb, const dt_export_plan *p)                  \
    {                                                                                     \
        conv_params(sb, p, &conv_##dt);                                                   \
    }                                                                                     \
    static void conv_doc_##dt(dt_strbuf *sb, const dt_export_plan *p)                     \
    {                                                                                     \
        conv_doc(sb, p, &conv_##dt);                                                      \
    }                                                                                     \
    static void conv_call_##dt(dt_strbuf *sb, const dt_export_plan *p, int k)             \
    {                                                                                     \
        conv_call(sb, p, k, &conv_##dt, UNIT);                                            \
    }                                                                                     \
    static void conv_pack_##dt(dt_strbuf *sb, const dt_export_plan *p, int g)             \
    {                                                                                     \
        conv_pack(sb, p, g, &conv_##dt, UNIT);                                            \
    }                                                                                     \
    const dt_export_op dt_export_op_conv2d_##dt = {                                       \
        .op = &dt_op_conv2d,                                                              \
        .dtype = DTYPE,                                                                   \
        .params = PARAMS,                                                                 \
        .emit_params = conv_params_##dt,                                                  \
        .emit_doc = conv_doc_##dt,                                                        \
        .emit_call = conv_call_##dt,                                                      \
        .pack_params = PACK_PARAMS,                                                       \
        .offset_unit = UNIT,                                                              \
        .pack_tail = TAIL,                                                                \
        .emit_pack = conv_pack_##dt,                                                      \
        .refuses = conv_refuses,                                                          \
    };

/* A transposed convolution's phases are run by the host (microkernel/
 * op_conv2d.c): its kernels alone compute forward convolutions. */
static const char *conv_refuses(const int *attrs)
{
    enum { TRANSPOSE = 10 }; /* ops/op_conv2d.c's attribute order */
    return attrs[TRANSPOSE] ? "a transposed conv2d runs its phases from dtune's runtime "
                              "(libdtune), not from exported code"
                            : NULL;
}

#define PLAIN_PARAMS {"X", "W", "Y", "packed", "bias"}
#define SCALED_PARAMS {"X", "W", "Y", "packed", "bias", "scale_b"}
#define INT8_PARAMS {"X", "W", "Y", "packed", "bias", "scale_a", "zp_a", "scale_b"}
#define QUANT_PACK "const int8_t *W, const float *scale_b, void *packed"

/* f32's offsets count floats (unit 4), as dense f32's do; the others bytes */
CONV_EXPORT_OP(f32, DT_DTYPE_F32, PLAIN_PARAMS, "const float *W, float *packed", 4, NULL)
CONV_EXPORT_OP(bf16, DT_DTYPE_BF16, PLAIN_PARAMS, "const uint16_t *W, void *packed", 1, NULL)
CONV_EXPORT_OP(int8, DT_DTYPE_INT8, INT8_PARAMS, QUANT_PACK, 1,
               "the column sums (int32) and the scales (float) of every padded column")
CONV_EXPORT_OP(w8a32, DT_DTYPE_W8A32, SCALED_PARAMS, QUANT_PACK, 1,
               "the scales (float) of every padded column")
