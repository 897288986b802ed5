/* conv2d's micro-kernel hooks in f32, bf16, int8 and w8a32: the implicit-A
 * section (template/op_conv2d_pre.c: the gather of A's rows from the NHWC
 * image) and the entry point (template/op_conv2d.c), the f32 ABI
 *   size_t dtk_packed_size(int64_t N, int64_t K);            N = K, K = R·S·C
 *   void   dtk_pack(int64_t N, int64_t K, const float *W, float *packed);
 *   void   dtk_conv2d(const int64_t geom[16], const float *X, const void *packed,
 *                     const float *bias, float *Y, int nthreads);
 * geom = {N, H, W, C, K, R, S, stride, pad, dilation, groups, stride_w,
 * dilation_w, pad_l, pad_b, pad_r} (stride, pad, dilation: the height's; pad
 * the top's; every value resolved, ops/op_conv2d.c); X [N][H][W][C],
 * W [K][R][S][C/groups], Y [N][OH][OW][K]; packed: one region per group,
 * dtk_pack(K/groups, R·S·C/groups, the group's rows) each (the pack hook
 * below does it).  The other dtypes take their types
 * block's names and parameters: dtk_conv2d_bf16 (X, W bf16), dtk_conv2d_u8s8
 * (X u8 with scale_a, zp_a after X; W s8 packed with scale_b),
 * dtk_conv2d_w8 (X f32, W s8 with scale_b); the packing is dense's.
 * A transposed convolution runs as its phases' forward ones, each over one
 * image into a scratch image whose pixels are then copied into every
 * stride-th row and column of Y (conv2d_phases.h); its packing is the
 * phases', one after the other. */
#include "microkernel/op_conv2d.h"

#include <stdlib.h>
#include <string.h>

#include "microkernel/conv2d_phases.h"
#include "microkernel/mk_op.h"

#include "dt_tpl_op_conv2d_c.h"
#include "dt_tpl_op_conv2d_pre_c.h"

extern const dt_op_desc dt_op_conv2d;
extern const dt_mk_dtype dt_mk_dtype_f32;
extern const dt_mk_dtype dt_mk_dtype_bf16;
extern const dt_mk_dtype dt_mk_dtype_int8;
extern const dt_mk_dtype dt_mk_dtype_w8a32;


typedef void (*conv_fn)(const int64_t *geom, const void *X, const void *packed,
                        const float *bias, void *Y, int nthreads);
typedef void (*conv_u8_fn)(const int64_t *geom, const void *X, float scale_a, int32_t zp_a,
                           const void *packed, const float *bias, void *Y, int nthreads);

enum { GEOM = DT_CONV_GEOM_LEN };

/* The kernel's geometry from the op's dims and attributes. */
void dt_mk_conv2d_geometry(const int64_t *dims, const int *attrs, int64_t *geom)
{
    dt_conv_geom c;
    dt_op_conv2d.conv(dims, attrs, &c);
    dt_conv_geom_values(&c, geom);
}

/* One call of the kernel's entry point: geom over x, packed into y; u8:
 * int8's signature (scale_a, zp_a after X). */
static void call(const dt_kernel *k, const dt_gemm_args *a, const int64_t *geom, const void *x,
                 const void *packed, const float *bias, void *y, int u8)
{
    if (u8)
        ((conv_u8_fn)k->fn[DT_MK_CONV2D_SYM_CONV])(geom, x, a->scale_a, a->zp_a, packed, bias, y,
                                                   a->threads);
    else
        ((conv_fn)k->fn[DT_MK_CONV2D_SYM_CONV])(geom, x, packed, bias, y, a->threads);
}

/* The forward convolutions a transposed one runs (conv2d_phases.h): one per
 * phase, or one for all (merged: every phase's K output channels side by
 * side).  Call i: the phase whose geometry it has, the phases it computes
 * from there, its output channels. */
typedef struct {
    dt_conv_phase ph;
    int64_t p0, phases, kout;
} phase_call;

static int64_t call_count(const dt_conv_geom *c, int merged)
{
    return merged ? 1 : dt_conv_phase_count(c);
}

static phase_call call_at(const dt_conv_geom *c, int merged, int64_t i)
{
    phase_call pc = {.p0 = i, .phases = merged ? dt_conv_phase_count(c) : 1};
    pc.kout = pc.phases * c->k;
    dt_conv_phase_at(c, i, &pc.ph);
    return pc;
}

/* The regions a call's weights are packed in: one per group (the GEMM
 * view's kernels), or one of all its rows (the channel sketch's, which
 * packs W whole). */
static int64_t call_regions(const dt_kernel *k, const dt_conv_geom *c)
{
    return k->op->sketch == DT_SKETCH_BLOCKED ? c->groups : 1;
}

/* The packed bytes of a call's forward convolution: its regions. */
static size_t call_bytes(const dt_kernel *k, const dt_conv_geom *c, const phase_call *pc)
{
    const int64_t kred = pc->ph.h.taps * pc->ph.w.taps * (c->c / c->groups);
    const int64_t regions = call_regions(k, c);
    return (size_t)regions *
           ((dt_mk_conv2d_packed_size_fn)k->fn[DT_MK_CONV2D_SYM_PACKED_SIZE])(
               pc->kout / regions, kred);
}

/* n copies of v[0..len) one after the other in a new array (NULL: NULL) */
static float *repeated(const float *v, int64_t len, int64_t n)
{
    if (!v)
        return NULL;
    float *r = malloc((size_t)(len * n) * sizeof *r);
    if (!r)
        abort();
    for (int64_t i = 0; i < n; i++)
        memcpy(r + i * len, v, (size_t)len * sizeof *r);
    return r;
}

/* Pixels [crop, crop + used) of the rows and columns of one image x (w
 * pixels a row, esize·C bytes a pixel) into dst. */
static void copy_window(const char *x, const dt_conv_geom *c, const dt_conv_phase *ph,
                        size_t pixel, char *dst)
{
    for (int64_t r = 0; r < ph->h.used; r++)
        memcpy(dst + (size_t)(r * ph->w.used) * pixel,
               x + (size_t)((ph->h.crop + r) * c->w + ph->w.crop) * pixel,
               (size_t)ph->w.used * pixel);
}

/* The images a call takes: all of them where its phase reads whole images
 * (no cropped row or column: X's images one after the other), as many as
 * keep its scratch output within about 4 MiB; else one. */
static int64_t images_per_call(const dt_conv_geom *c, const dt_conv_phase *ph, size_t ypix)
{
    if (ph->h.crop || ph->h.used != c->h || ph->w.crop || ph->w.used != c->w)
        return 1;
    const size_t per = (size_t)(ph->h.count * ph->w.count) * ypix;
    const int64_t fit = per ? (int64_t)((4u << 20) / per) : c->n;
    return fit < 1 ? 1 : fit < c->n ? fit : c->n;
}

/* The transposed convolution: call by call, over a run of images
 * (images_per_call) into the scratch, each phase's channels copied into its
 * pixels of Y. */
static void run_phases(const dt_kernel *k, const dt_gemm_args *a, const dt_conv_geom *c, int u8)
{
    const dt_dtype d = k->op->backend->dtype;
    const size_t xpix = (size_t)c->c * (size_t)dt_dtype_a_size(d);
    const size_t ypix = (size_t)c->k * (size_t)dt_dtype_c_size(d); /* one phase's channels */
    int64_t oh, ow;
    dt_conv_geom_out(c, &oh, &ow);
    const int64_t nph = dt_conv_phase_count(c);
    const int merged = nph > 1 && dt_conv_phases_merge(c);
    size_t xmax = 0, ymax = 0;
    for (int64_t i = 0; i < call_count(c, merged); i++) {
        const phase_call pc = call_at(c, merged, i);
        const size_t cpix = (size_t)pc.phases * ypix;
        const size_t xs = (size_t)(pc.ph.h.used * pc.ph.w.used) * xpix;
        const size_t ys = (size_t)(images_per_call(c, &pc.ph, cpix) * pc.ph.h.count *
                                   pc.ph.w.count) * cpix;
        xmax = xs > xmax ? xs : xmax;
        ymax = ys > ymax ? ys : ymax;
    }
    char *xbuf = malloc(xmax + 64), *ybuf = malloc(ymax + 64);
    float *own = merged ? repeated(a->bias, c->k, nph) : NULL;
    const float *bias = merged ? own : a->bias;
    if (!xbuf || !ybuf)
        abort(); /* as the kernels' own scratch: a call has no error path */
    const char *packed = a->b;
    for (int64_t i = 0; i < call_count(c, merged); i++) {
        const phase_call pc = call_at(c, merged, i);
        const dt_conv_phase *ph = &pc.ph;
        const size_t cpix = (size_t)pc.phases * ypix;
        const int64_t per = images_per_call(c, ph, cpix), pix = ph->h.count * ph->w.count;
        int64_t geom[GEOM];
        dt_conv_phase_geom(c, ph, geom);
        geom[4] = pc.kout; /* K: the phases' channels side by side */
        for (int64_t n0 = 0; pix && n0 < c->n; n0 += per) {
            const int64_t imgs = per < c->n - n0 ? per : c->n - n0;
            const char *x = (const char *)a->a + (size_t)(n0 * c->h * c->w) * xpix;
            char *y = (char *)a->c + (size_t)(n0 * oh * ow) * ypix;
            const char *xp = x + (size_t)(ph->h.crop * c->w) * xpix;
            if (ph->w.crop || ph->w.used != c->w) { /* its columns are not whole rows */
                copy_window(x, c, ph, xpix, xbuf);
                xp = xbuf;
            }
            geom[0] = imgs; /* N */
            if (nph == 1) { /* stride 1: the phase's pixels are Y's, in order */
                call(k, a, geom, xp, packed, bias, y, u8);
                continue;
            }
            call(k, a, geom, xp, packed, bias, ybuf, u8);
            for (int64_t q = 0; q < pc.phases; q++) {
                dt_conv_phase at;
                dt_conv_phase_at(c, pc.p0 + q, &at);
                const char *src = ybuf + (size_t)q * ypix;
                for (int64_t n = 0; n < imgs; n++)
                    for (int64_t r = 0; r < at.h.count; r++)
                        for (int64_t j = 0; j < at.w.count; j++, src += cpix)
                            memcpy(y + (size_t)(((n * oh) + at.h.first + r * at.h.stride) * ow +
                                                at.w.first + j * at.w.stride) * ypix,
                                   src, ypix);
            }
        }
        packed += call_bytes(k, c, &pc);
    }
    free(own);
    free(xbuf);
    free(ybuf);
}

static void conv_run(const dt_kernel *k, const dt_gemm_args *a, int u8)
{
    dt_conv_geom c;
    dt_op_conv2d.conv(a->dims, a->attrs, &c);
    if (c.transpose) {
        run_phases(k, a, &c, u8);
        return;
    }
    int64_t geom[GEOM];
    dt_conv_geom_values(&c, geom);
    call(k, a, geom, a->a, a->b, a->bias, a->c, u8);
}

void dt_mk_conv2d_run(const dt_kernel *k, const dt_gemm_args *a) { conv_run(k, a, 0); }

void dt_mk_conv2d_run_u8(const dt_kernel *k, const dt_gemm_args *a) { conv_run(k, a, 1); }

/* The weights of problem g in groups: G groups of Kg output channels, each
 * Kg × Kred stored ([K][R][S][C/G]); a g without dims, one group of its
 * view's N × K. */
typedef struct {
    int64_t G, Kg, Kred;
} groups;

static groups groups_of(const dt_gemm *g)
{
    if (!g->op)
        return (groups){1, g->N, g->K};
    int64_t geom[GEOM];
    dt_mk_conv2d_geometry(g->dims, g->attrs, geom);
    const int64_t G = geom[10];
    return (groups){G, geom[4] / G, geom[5] * geom[6] * (geom[3] / G)};
}

int dt_mk_conv2d_transposed(const dt_gemm *g)
{
    dt_conv_geom c;
    if (!g->op)
        return 0;
    dt_op_conv2d.conv(g->dims, g->attrs, &c);
    return (int)c.transpose;
}

size_t dt_mk_conv2d_transposed_size(const dt_kernel *k, const dt_gemm *g)
{
    dt_conv_geom c;
    dt_op_conv2d.conv(g->dims, g->attrs, &c);
    const int merged = dt_conv_phases_merge(&c);
    size_t bytes = 0; /* the calls' packings, one after the other */
    for (int64_t i = 0; i < call_count(&c, merged); i++) {
        const phase_call pc = call_at(&c, merged, i);
        bytes += call_bytes(k, &c, &pc);
    }
    return bytes;
}

/* One region per group, each the dense packing of its rows (the kernel's
 * DT_FN_PACKED_SIZE, DT_FN_PACK): template/op_conv2d.c reads them so. */
static size_t conv_packed_size(const dt_kernel *k, const dt_gemm *g)
{
    if (dt_mk_conv2d_transposed(g))
        return dt_mk_conv2d_transposed_size(k, g);
    groups gr = groups_of(g);
    return (size_t)gr.G * ((dt_mk_conv2d_packed_size_fn)k->fn[DT_MK_CONV2D_SYM_PACKED_SIZE])(gr.Kg, gr.Kred);
}

/* G regions, each the dense packing of a group's Kg × Kred weights */
static void pack_regions(const dt_kernel *k, groups gr, const void *w, const float *scale_b,
                         void *packed, int scaled)
{
    const size_t region = ((dt_mk_conv2d_packed_size_fn)k->fn[DT_MK_CONV2D_SYM_PACKED_SIZE])(gr.Kg, gr.Kred);
    const size_t wbytes = (size_t)(gr.Kg * gr.Kred) * dt_dtype_b_size(k->op->backend->dtype);
    for (int64_t i = 0; i < gr.G; i++) {
        const void *wi = (const char *)w + (size_t)i * wbytes;
        void *pi = (char *)packed + (size_t)i * region;
        if (scaled)
            ((dt_mk_conv2d_pack_q_fn)k->fn[DT_MK_CONV2D_SYM_PACK])(gr.Kg, gr.Kred, wi, scale_b + i * gr.Kg, pi);
        else
            ((dt_mk_conv2d_pack_fn)k->fn[DT_MK_CONV2D_SYM_PACK])(gr.Kg, gr.Kred, wi, pi);
    }
}

void dt_mk_conv2d_transposed_pack(const dt_kernel *k, const dt_gemm *g, const void *w,
                                  const float *scale_b, void *packed, int scaled)
{
    dt_conv_geom c;
    dt_op_conv2d.conv(g->dims, g->attrs, &c);
    /* each call's weights gathered from W (its phases' stacked), then
     * packed as its forward convolution's */
    const size_t esize = (size_t)dt_dtype_b_size(k->op->backend->dtype);
    const int merged = dt_conv_phases_merge(&c);
    char *at = packed;
    for (int64_t i = 0; i < call_count(&c, merged); i++) {
        const phase_call pc = call_at(&c, merged, i);
        const int64_t kred = pc.ph.h.taps * pc.ph.w.taps * (c.c / c.groups);
        const size_t one = (size_t)(c.k * kred) * esize; /* a phase's weights */
        char *wp = malloc((size_t)pc.phases * one + 64);
        float *scales = scaled ? repeated(scale_b, c.k, pc.phases) : NULL;
        if (!wp)
            abort();
        for (int64_t q = 0; q < pc.phases; q++) {
            dt_conv_phase ph;
            dt_conv_phase_at(&c, pc.p0 + q, &ph);
            dt_conv_phase_weights(&c, &ph, w, esize, wp + (size_t)q * one);
        }
        const int64_t regions = call_regions(k, &c);
        const groups gr = {regions, pc.kout / regions, kred};
        pack_regions(k, gr, wp, scales, at, scaled);
        at += call_bytes(k, &c, &pc);
        free(scales);
        free(wp);
    }
}

static void conv_pack_groups(const dt_kernel *k, const dt_gemm *g, const void *w,
                             const float *scale_b, void *packed, int scaled)
{
    if (dt_mk_conv2d_transposed(g))
        dt_mk_conv2d_transposed_pack(k, g, w, scale_b, packed, scaled);
    else
        pack_regions(k, groups_of(g), w, scale_b, packed, scaled);
}

static void conv_pack(const dt_kernel *k, const dt_gemm *g, const void *w,
                      const float *scale_b, void *packed)
{
    (void)scale_b;
    conv_pack_groups(k, g, w, NULL, packed, 0);
}

static void conv_pack_q(const dt_kernel *k, const dt_gemm *g, const void *w,
                        const float *scale_b, void *packed)
{
    conv_pack_groups(k, g, w, scale_b, packed, 1);
}

/* DT_IMPLICIT_A: A gathered (the driver's hook) */
static int conv_macro(const int *attrs, int i)
{
    (void)attrs;
    (void)i;
    return 1;
}

#define CONV_HOOKS(dtype_, syms_conv, syms_pack, syms_size, run_, pack_)                       \
    {                                                                                          \
        .op = &dt_op_conv2d, .backend = &dtype_, .group = 0, .selector = "DT_OP_CONV2D",      \
        .nmacros = 1, .macros = {"DT_IMPLICIT_A"}, .macro_value = conv_macro,                 \
        .driver = dt_tpl_op_conv2d_c, .driver_pre = dt_tpl_op_conv2d_pre_c, .segmented_a = 1, \
        .nsyms = 3, .syms = {syms_conv, syms_pack, syms_size}, .run = run_,                   \
        .packed_size = conv_packed_size, .pack = pack_,                                       \
    }

const dt_mk_op dt_mk_op_conv2d_f32 =
    CONV_HOOKS(dt_mk_dtype_f32, "dtk_conv2d", "dtk_pack", "dtk_packed_size", dt_mk_conv2d_run,
               conv_pack);
const dt_mk_op dt_mk_op_conv2d_bf16 =
    CONV_HOOKS(dt_mk_dtype_bf16, "dtk_conv2d_bf16", "dtk_pack_bf16", "dtk_packed_size_bf16",
               dt_mk_conv2d_run, conv_pack);
const dt_mk_op dt_mk_op_conv2d_int8 =
    CONV_HOOKS(dt_mk_dtype_int8, "dtk_conv2d_u8s8", "dtk_pack_u8s8", "dtk_packed_size_u8s8",
               dt_mk_conv2d_run_u8, conv_pack_q);
const dt_mk_op dt_mk_op_conv2d_w8a32 =
    CONV_HOOKS(dt_mk_dtype_w8a32, "dtk_conv2d_w8", "dtk_pack_w8", "dtk_packed_size_w8",
               dt_mk_conv2d_run, conv_pack_q);
