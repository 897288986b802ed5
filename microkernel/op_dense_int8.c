/* dense's micro-kernel hooks for int8 (u8 activations, s8 weights, s32
 * accumulation, f32 output; template/types_int8.h): the same driver section
 * as f32 (template/op_dense.c) with the int8 types, the ABI
 *   size_t dtk_packed_size_u8s8(int64_t N, int64_t K);
 *   void   dtk_pack_u8s8(int64_t N, int64_t K, const int8_t *W, const float *scale_b,
 *                        void *packed);
 *   void   dtk_dense_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *X, int64_t ldx,
 *                         float scale_a, int32_t zp_a, const void *packed,
 *                         const float *bias, float *Y, int64_t ldy, int nthreads);
 *   Y[m,n] = act(scale_a·scale_b[n]·Σ_k (X[m,k] − zp_a)·W[n,k] + bias[n])
 * and the call of its GEMM view: A = X (u8), B = W (s8, N×K, constant:
 * packed once with its per-column scales), C = Y (f32), batch 1. */
#include "microkernel/mk_op.h"

#include "dt_tpl_op_dense_c.h"

extern const dt_op_desc dt_op_dense;
extern const dt_mk_dtype dt_mk_dtype_int8;

enum { SYM_DENSE, SYM_PACK, SYM_PACKED_SIZE };

typedef size_t (*packed_size_fn)(int64_t N, int64_t K);
typedef void (*pack_fn)(int64_t N, int64_t K, const void *W, const float *scale_b,
                        void *packed);
typedef void (*dense_fn)(int64_t M, int64_t N, int64_t K, const void *X, int64_t ldx,
                         float scale_a, int32_t zp_a, const void *packed, const float *bias,
                         void *Y, int64_t ldy, int nthreads);

static void dense_run(const dt_kernel *k, const dt_gemm_args *a)
{
    ((dense_fn)k->fn[SYM_DENSE])(a->M, a->N, a->K, a->a, a->lda, a->scale_a, a->zp_a, a->b,
                                 a->bias, a->c, a->ldc, a->threads);
}

static size_t dense_packed_size(const dt_kernel *k, const dt_gemm *g)
{
    return ((packed_size_fn)k->fn[SYM_PACKED_SIZE])(g->N, g->K);
}

static void dense_pack(const dt_kernel *k, const dt_gemm *g, const void *W,
                       const float *scale_b, void *packed)
{
    ((pack_fn)k->fn[SYM_PACK])(g->N, g->K, W, scale_b, packed);
}

const dt_mk_op dt_mk_op_dense_int8 = {
    .op = &dt_op_dense,
    .backend = &dt_mk_dtype_int8,
    .group = 0,
    .selector = "DT_OP_DENSE",
    .nmacros = 0,
    .driver = dt_tpl_op_dense_c,
    .nsyms = 3,
    .syms = {"dtk_dense_u8s8", "dtk_pack_u8s8", "dtk_packed_size_u8s8"},
    .run = dense_run,
    .packed_size = dense_packed_size,
    .pack = dense_pack,
};
