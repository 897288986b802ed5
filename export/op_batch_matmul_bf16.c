/* batch_matmul's export hooks for bf16 (export/export_op.h):
 *   void NAME(<vars>, const uint16_t *A, const uint16_t *B, float *C);
 * C[b] = A[b]·B[b] (NN) or A[b]·B[b]ᵀ (NT), A and B bf16, C f32, contiguous;
 * each kernel called through its dtk_bmm_bf16
 * (microkernel/op_batch_matmul_bf16.c).  Nothing to pack. */
#include <stdio.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_batch_matmul;

static void bmm_params(dt_strbuf *sb, const dt_export_plan *p)
{
    (void)p;
    dt_sb_append(sb, "const uint16_t *A, const uint16_t *B, float *C");
}

static void bmm_doc(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb,
                  " *\n * dtype bf16: A and B are bf16 (uint16_t, the upper 16 bits of an IEEE "
                  "float;\n * convert with round to nearest even), the sums are f32, C is f32.\n"
                  " * C[b] = A[b] * %s for b < B; A is B x M x K, B is %s, C is B x M x N,\n"
                  " * all row-major and contiguous.  Pointers are borrowed.\n",
                  p->g.b_trans ? "B[b]^T" : "B[b]", p->g.b_trans ? "B x N x K" : "B x K x N");
}

static void bmm_call(dt_strbuf *sb, const dt_export_plan *p, int k)
{
    dt_sb_appendf(sb, "        %s_k%d_dtk_bmm_bf16(dt_B, dt_M, dt_N, dt_K, A, dt_K, dt_M * dt_K, "
                      "B, %s, dt_N * dt_K, C, dt_N, dt_M * dt_N, %s_THREADS);\n",
                  p->name, k, p->g.b_trans ? "dt_K" : "dt_N", p->name);
}

const dt_export_op dt_export_op_batch_matmul_bf16 = {
    .op = &dt_op_batch_matmul,
    .dtype = DT_DTYPE_BF16,
    .params = {"A", "B", "C"},
    .emit_params = bmm_params,
    .emit_doc = bmm_doc,
    .emit_call = bmm_call,
};
