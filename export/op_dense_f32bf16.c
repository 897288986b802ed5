/* dense's export hooks for f32_bf16, `math=bf16` (export/export_op.h):
 *   size_t NAME_packed_size(void);
 *   void   NAME_pack(const float *W, void *packed);
 *   void   NAME(<vars>, const float *X, const void *packed, float *Y
 *               [, const float *bias]);
 * Y[M,N] = X[M,K]·W[N,K]ᵀ (+ bias) (then ReLU / GELU), all f32, computed
 * with bf16 products: W rounded to bf16 when packed, X on each call; each
 * kernel called through its dtk_dense_f32bf16 (microkernel/op_dense_f32bf16.c),
 * each packing region filled by its dtk_pack_f32bf16. */
#include <stdio.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_dense;

static void dense_params(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb, "const float *X, const void *packed, float *Y%s",
                  p->g.bias ? ", const float *bias" : "");
}

static void dense_doc(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb,
                  " *\n * math=bf16: X, W and Y are f32; W is rounded to bf16 (nearest even) "
                  "when packed\n * and X on every call, the products are bf16's, the sums f32.\n"
                  " * Y[M,N] = X[M,K] * W[N,K]^T%s%s, all row-major and contiguous.\n"
                  " * %s_packed_size(): bytes of the packed weights (%lld, a multiple of 64).\n"
                  " * %s_pack(W, packed): packs W (N x K f32, row-major) once into packed; "
                  "every\n *   layout the dispatcher needs is in it (%d region%s, one per panel "
                  "layout).\n"
                  " * %s(...): Y for any shape; packed as filled by %s_pack%s.\n"
                  " * Pointers are borrowed; packed is best 64-byte aligned (at least 4).\n",
                  p->g.bias ? " + bias[N]" : "", dt_export_act_text(p), p->name,
                  (long long)p->packed_bytes, p->name, p->npack, p->npack == 1 ? "" : "s",
                  p->name, p->name, p->g.bias ? "; bias has N floats" : "");
}

static void dense_call(dt_strbuf *sb, const dt_export_plan *p, int k)
{
    dt_sb_appendf(sb, "        %s_k%d_dtk_dense_f32bf16(dt_M, dt_N, dt_K, X, dt_K, "
                      "(const char *)packed + %lld, %s, Y, dt_N, %s_THREADS);\n",
                  p->name, k, (long long)p->pack[p->k[k].pack_group].offset,
                  p->g.bias ? "bias" : "NULL", p->name);
}

static void dense_pack(dt_strbuf *sb, const dt_export_plan *p, int g)
{
    dt_sb_appendf(sb, "    %s_k%d_dtk_pack_f32bf16(%lld, %lld, W, (char *)packed + %lld);\n",
                  p->name, p->pack[g].kernel, (long long)p->N, (long long)p->K,
                  (long long)p->pack[g].offset);
}

const dt_export_op dt_export_op_dense_f32_bf16 = {
    .op = &dt_op_dense,
    .dtype = DT_DTYPE_F32_BF16,
    .params = {"X", "W", "Y", "packed", "bias"},
    .emit_params = dense_params,
    .emit_doc = dense_doc,
    .emit_call = dense_call,
    .pack_params = "const float *W, void *packed",
    .offset_unit = 1,
    .emit_pack = dense_pack,
};
