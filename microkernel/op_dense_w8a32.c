/* dense's micro-kernel hooks for w8a32 (weight-only int8), and for
 * w8a32_bf16 (math=bf16 on w8a32: the f32_bf16 entry point on weights
 * packed by dtk_pack_w8bf16, which takes the same s8 W and scale_b): the same driver
 * section as f32 (template/op_dense.c) with the names and the extra pack
 * parameter of template/types_w8a32.h, the ABI
 *   size_t dtk_packed_size_w8(int64_t N, int64_t K);
 *   void   dtk_pack_w8(int64_t N, int64_t K, const int8_t *W, const float *scale_b,
 *                      void *packed);
 *   void   dtk_dense_w8(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
 *                       const void *packed, const float *bias, float *Y, int64_t ldy,
 *                       int nthreads);
 * (Y = scale_b[n]·X·Wᵀ + bias, then the activation; the packed weights are
 * the s8 panels followed by scale_b), and the call of its GEMM view:
 * A = X (f32), B = W (s8, N×K, constant: packed once with its scales),
 * C = Y, batch 1. */
#include "microkernel/mk_op.h"

#include "dt_tpl_op_dense_c.h"

extern const dt_op_desc dt_op_dense;
extern const dt_mk_dtype dt_mk_dtype_w8a32;
extern const dt_mk_dtype dt_mk_dtype_w8a32_bf16;

enum { SYM_DENSE, SYM_PACK, SYM_PACKED_SIZE };

typedef size_t (*packed_size_fn)(int64_t N, int64_t K);
typedef void (*pack_fn)(int64_t N, int64_t K, const int8_t *W, const float *scale_b,
                        void *packed);
typedef void (*dense_fn)(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                         const void *packed, const float *bias, float *Y, int64_t ldy,
                         int nthreads);

static void dense_run(const dt_kernel *k, const dt_gemm_args *a)
{
    ((dense_fn)k->fn[SYM_DENSE])(a->M, a->N, a->K, (const float *)a->a, a->lda, a->b, a->bias,
                                 (float *)a->c, a->ldc, a->threads);
}

static size_t dense_packed_size(const dt_kernel *k, const dt_gemm *g)
{
    return ((packed_size_fn)k->fn[SYM_PACKED_SIZE])(g->N, g->K);
}

static void dense_pack(const dt_kernel *k, const dt_gemm *g, const void *W,
                       const float *scale_b, void *packed)
{
    ((pack_fn)k->fn[SYM_PACK])(g->N, g->K, (const int8_t *)W, scale_b, packed);
}

const dt_mk_op dt_mk_op_dense_w8a32 = {
    .op = &dt_op_dense,
    .backend = &dt_mk_dtype_w8a32,
    .group = 0,
    .selector = "DT_OP_DENSE",
    .nmacros = 0,
    .driver = dt_tpl_op_dense_c,
    .nsyms = 3,
    .syms = {"dtk_dense_w8", "dtk_pack_w8", "dtk_packed_size_w8"},
    .run = dense_run,
    .packed_size = dense_packed_size,
    .pack = dense_pack,
};

const dt_mk_op dt_mk_op_dense_w8a32_bf16 = {
    .op = &dt_op_dense,
    .backend = &dt_mk_dtype_w8a32_bf16,
    .group = 0,
    .selector = "DT_OP_DENSE",
    .nmacros = 0,
    .driver = dt_tpl_op_dense_c,
    .nsyms = 3,
    .syms = {"dtk_dense_f32bf16", "dtk_pack_w8bf16", "dtk_packed_size_f32bf16"},
    .run = dense_run,
    .packed_size = dense_packed_size,
    .pack = dense_pack,
};
