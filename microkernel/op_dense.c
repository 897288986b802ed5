/* dense's micro-kernel hooks in f32 and bf16: its driver section and entry
 * points (template/op_dense.c), the f32 ABI
 *   size_t dtk_packed_size(int64_t N, int64_t K);
 *   void   dtk_pack(int64_t N, int64_t K, const float *W, float *packed);
 *   void   dtk_dense(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
 *                    const float *packed, const float *bias, float *Y, int64_t ldy,
 *                    int nthreads);
 * and the call of its GEMM view: A = X, B = W (N×K, constant: packed once),
 * C = Y, batch 1.  bf16 has the same call and section under the bf16 types
 * block's names (dtk_dense_bf16, dtk_pack_bf16, dtk_packed_size_bf16; X and
 * W bf16, Y f32), and f32_bf16 (math=bf16) under its types block's f32 ABI
 * (dtk_dense_f32bf16, dtk_pack_f32bf16, dtk_packed_size_f32bf16: X and W f32,
 * rounded to bf16 inside).  The quantized dtypes take scales:
 * op_dense_<dtype>.c. */
#include "microkernel/mk_op.h"

#include "dt_tpl_op_dense_c.h"

extern const dt_op_desc dt_op_dense;
extern const dt_mk_dtype dt_mk_dtype_f32;
extern const dt_mk_dtype dt_mk_dtype_bf16;
extern const dt_mk_dtype dt_mk_dtype_f32_bf16;

enum { SYM_DENSE, SYM_PACK, SYM_PACKED_SIZE };

typedef size_t (*packed_size_fn)(int64_t N, int64_t K);
typedef void (*pack_fn)(int64_t N, int64_t K, const void *W, void *packed);
typedef void (*dense_fn)(int64_t M, int64_t N, int64_t K, const void *X, int64_t ldx,
                         const void *packed, const float *bias, void *Y, int64_t ldy,
                         int nthreads);

static void dense_run(const dt_kernel *k, const dt_gemm_args *a)
{
    ((dense_fn)k->fn[SYM_DENSE])(a->M, a->N, a->K, a->a, a->lda, a->b, a->bias, a->c, a->ldc,
                                 a->threads);
}

static size_t dense_packed_size(const dt_kernel *k, const dt_gemm *g)
{
    return ((packed_size_fn)k->fn[SYM_PACKED_SIZE])(g->N, g->K);
}

static void dense_pack(const dt_kernel *k, const dt_gemm *g, const void *W,
                       const float *scale_b, void *packed)
{
    (void)scale_b;
    ((pack_fn)k->fn[SYM_PACK])(g->N, g->K, W, packed);
}

const dt_mk_op dt_mk_op_dense_f32 = {
    .op = &dt_op_dense,
    .backend = &dt_mk_dtype_f32,
    .group = 1,
    .selector = "DT_OP_DENSE",
    .nmacros = 0,
    .driver = dt_tpl_op_dense_c,
    .nsyms = 3,
    .syms = {"dtk_dense", "dtk_pack", "dtk_packed_size"},
    .run = dense_run,
    .packed_size = dense_packed_size,
    .pack = dense_pack,
};

const dt_mk_op dt_mk_op_dense_bf16 = {
    .op = &dt_op_dense,
    .backend = &dt_mk_dtype_bf16,
    .group = 0,
    .selector = "DT_OP_DENSE",
    .nmacros = 0,
    .driver = dt_tpl_op_dense_c,
    .nsyms = 3,
    .syms = {"dtk_dense_bf16", "dtk_pack_bf16", "dtk_packed_size_bf16"},
    .run = dense_run,
    .packed_size = dense_packed_size,
    .pack = dense_pack,
};

const dt_mk_op dt_mk_op_dense_f32_bf16 = {
    .op = &dt_op_dense,
    .backend = &dt_mk_dtype_f32_bf16,
    .group = 0,
    .selector = "DT_OP_DENSE",
    .nmacros = 0,
    .driver = dt_tpl_op_dense_c,
    .nsyms = 3,
    .syms = {"dtk_dense_f32bf16", "dtk_pack_f32bf16", "dtk_packed_size_f32bf16"},
    .run = dense_run,
    .packed_size = dense_packed_size,
    .pack = dense_pack,
};
