/* dense's export hooks (export/export_op.h):
 *   void NAME(<vars>, const float *X, const float *packed, float *Y
 *             [, const float *bias]);
 * Y[M,N] = X[M,K]·W[N,K]ᵀ (+ bias) (then ReLU / GELU), W packed by the
 * generic NAME_pack; each kernel called through its dtk_dense. */
#include <stdio.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_dense;

static void dense_params(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb, "const float *X, const float *packed, float *Y%s",
                  p->g.bias ? ", const float *bias" : "");
}

static void dense_doc(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb,
                  " *\n * Y[M,N] = X[M,K] * W[N,K]^T%s%s, all row-major and contiguous.\n"
                  " * %s_packed_size(): bytes of the packed weights (%lld floats).\n"
                  " * %s_pack(W, packed): packs W (N x K row-major) once into packed; "
                  "every layout\n *   the dispatcher needs is in it (%d region%s, one per "
                  "panel width NR).\n"
                  " * %s(...): Y for any shape; packed as filled by %s_pack%s.\n"
                  " * Pointers are borrowed; 64-byte alignment of packed is best, not "
                  "required.\n",
                  p->g.bias ? " + bias[N]" : "", dt_export_act_text(p),
                  p->name, (long long)(p->packed_bytes / 4), p->name, p->npack,
                  p->npack == 1 ? "" : "s", p->name, p->name,
                  p->g.bias ? "; bias has N floats" : "");
}

/* the offsets in the text are in floats, as they always were */
static void dense_call(dt_strbuf *sb, const dt_export_plan *p, int k)
{
    dt_sb_appendf(sb, "        %s_k%d_dtk_dense(dt_M, dt_N, dt_K, X, dt_K, packed + %lld, "
                      "%s, Y, dt_N, %s_THREADS);\n",
                  p->name, k, (long long)(p->pack[p->k[k].pack_group].offset / 4),
                  p->g.bias ? "bias" : "NULL", p->name);
}

static void dense_pack(dt_strbuf *sb, const dt_export_plan *p, int g)
{
    dt_sb_appendf(sb, "    %s_k%d_dtk_pack(%lld, %lld, W, packed + %lld);\n", p->name,
                  p->pack[g].kernel, (long long)p->N, (long long)p->K,
                  (long long)(p->pack[g].offset / 4));
}

const dt_export_op dt_export_op_dense_f32 = {
    .op = &dt_op_dense,
    .dtype = DT_DTYPE_F32,
    .params = {"X", "W", "Y", "packed", "bias"},
    .emit_params = dense_params,
    .emit_doc = dense_doc,
    .emit_call = dense_call,
    .pack_params = "const float *W, float *packed",
    .offset_unit = 4,
    .emit_pack = dense_pack,
};
