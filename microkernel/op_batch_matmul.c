/* batch_matmul's micro-kernel hooks in f32 and bf16: its driver section and
 * entry point (template/op_batch_matmul.c), the f32 ABI
 *   void dtk_bmm(int64_t batch, int64_t M, int64_t N, int64_t K,
 *                const float *A, int64_t lda, int64_t sa,
 *                const float *B, int64_t ldb, int64_t sb,
 *                float *C, int64_t ldc, int64_t sc, int nthreads);
 * (NN: B[b] is K×N, NT: N×K — the DT_LAYOUT_NT macro), and the call of its
 * GEMM view, which is the ABI itself.  B is packed inside the call.  bf16
 * has the same call under the name dtk_bmm_bf16 (A, B bf16, C f32). */
#include "microkernel/mk_op.h"

#include "dt_tpl_op_batch_matmul_c.h"

extern const dt_op_desc dt_op_batch_matmul;
extern const dt_mk_dtype dt_mk_dtype_f32;
extern const dt_mk_dtype dt_mk_dtype_bf16;

typedef void (*bmm_fn)(int64_t batch, int64_t M, int64_t N, int64_t K, const void *A,
                       int64_t lda, int64_t sa, const void *B, int64_t ldb, int64_t sb,
                       void *C, int64_t ldc, int64_t sc, int nthreads);

static void bmm_run(const dt_kernel *k, const dt_gemm_args *a)
{
    ((bmm_fn)k->fn[0])(a->batch, a->M, a->N, a->K, a->a, a->lda, a->sa, a->b, a->ldb, a->sb,
                       a->c, a->ldc, a->sc, a->threads);
}

/* DT_LAYOUT_NT: B[b] stored N×K */
static int bmm_macro(const int *attrs, int i)
{
    (void)i;
    dt_gemm g;
    return dt_op_gemm(&dt_op_batch_matmul, attrs, NULL, &g, NULL) == 0 && g.b_trans;
}

const dt_mk_op dt_mk_op_batch_matmul_f32 = {
    .op = &dt_op_batch_matmul,
    .backend = &dt_mk_dtype_f32,
    .group = 1,
    .selector = "DT_OP_BMM",
    .nmacros = 1,
    .macros = {"DT_LAYOUT_NT"},
    .macro_value = bmm_macro,
    .driver = dt_tpl_op_batch_matmul_c,
    .nsyms = 1,
    .syms = {"dtk_bmm"},
    .run = bmm_run,
};

const dt_mk_op dt_mk_op_batch_matmul_bf16 = {
    .op = &dt_op_batch_matmul,
    .backend = &dt_mk_dtype_bf16,
    .group = 0,
    .selector = "DT_OP_BMM",
    .nmacros = 1,
    .macros = {"DT_LAYOUT_NT"},
    .macro_value = bmm_macro,
    .driver = dt_tpl_op_batch_matmul_c,
    .nsyms = 1,
    .syms = {"dtk_bmm_bf16"},
    .run = bmm_run,
};
