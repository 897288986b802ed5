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
 * dtk_conv2d_w8 (X f32, W s8 with scale_b); the packing is dense's. */
#include "microkernel/op_conv2d.h"

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

void dt_mk_conv2d_run(const dt_kernel *k, const dt_gemm_args *a)
{
    int64_t geom[GEOM];
    dt_mk_conv2d_geometry(a->dims, a->attrs, geom);
    ((conv_fn)k->fn[DT_MK_CONV2D_SYM_CONV])(geom, a->a, a->b, a->bias, a->c, a->threads);
}

void dt_mk_conv2d_run_u8(const dt_kernel *k, const dt_gemm_args *a)
{
    int64_t geom[GEOM];
    dt_mk_conv2d_geometry(a->dims, a->attrs, geom);
    ((conv_u8_fn)k->fn[DT_MK_CONV2D_SYM_CONV])(geom, a->a, a->scale_a, a->zp_a, a->b, a->bias, a->c,
                                  a->threads);
}

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

/* One region per group, each the dense packing of its rows (the kernel's
 * DT_FN_PACKED_SIZE, DT_FN_PACK): template/op_conv2d.c reads them so. */
static size_t conv_packed_size(const dt_kernel *k, const dt_gemm *g)
{
    groups gr = groups_of(g);
    return (size_t)gr.G * ((dt_mk_conv2d_packed_size_fn)k->fn[DT_MK_CONV2D_SYM_PACKED_SIZE])(gr.Kg, gr.Kred);
}

static void conv_pack_groups(const dt_kernel *k, const dt_gemm *g, const void *w,
                             const float *scale_b, void *packed, int scaled)
{
    groups gr = groups_of(g);
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
