/* dense's export hooks for w8a32, weight-only int8 (export/export_op.h):
 *   size_t NAME_packed_size(void);
 *   void   NAME_pack(const int8_t *W, const float *scale_b, void *packed);
 *   void   NAME(<vars>, const float *X, const void *packed, float *Y
 *               [, const float *bias]);
 * Y[m,n] = scale_b[n]·Σ_k X[m,k]·W[n,k] (+ bias) (then ReLU / GELU), X f32,
 * W s8 already quantized by the caller with per-output-channel scales
 * scale_b (dequantized in registers).  Each kernel called through its
 * dtk_dense_w8 (microkernel/op_dense_w8a32.c), each packing region filled
 * by its dtk_pack_w8. */
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
                  " *\n * dtype w8a32 (weight-only int8): X is f32, W is s8 with one scale per\n"
                  " * output channel n (scale_b[n]), dequantized in registers; the sums are\n"
                  " * f32, Y is f32:\n"
                  " *   Y[m,n] = scale_b[n] * sum_k X[m,k] * W[n,k]%s%s,\n"
                  " * all row-major and contiguous.\n"
                  " * %s_packed_size(): bytes of the packed weights (%lld, a multiple of 64).\n"
                  " * %s_pack(W, scale_b, packed): packs the already-quantized W (N x K s8,\n"
                  " *   row-major) and its N per-channel scales once into packed; every layout\n"
                  " *   the dispatcher needs is in it (%d region%s, one per panel layout).\n"
                  " *   It returns 0, or refuses (writing nothing) a scale_b that is NULL (-1)\n"
                  " *   or whose scale_b[n] is zero, NaN or infinite (n + 1: the first one).\n"
                  " * %s(...): Y for any shape; packed as filled by %s_pack%s.\n"
                  " * Pointers are borrowed; packed is best 64-byte aligned (at least 4).\n",
                  p->g.bias ? " + bias[n]" : "", dt_export_act_text(p), p->name,
                  (long long)p->packed_bytes, p->name, p->npack, p->npack == 1 ? "" : "s",
                  p->name, p->name, p->g.bias ? "; bias has N floats" : "");
}

static void dense_call(dt_strbuf *sb, const dt_export_plan *p, int k)
{
    dt_sb_appendf(sb, "        %s_k%d_dtk_dense_w8(dt_M, dt_N, dt_K, X, dt_K, "
                      "(const char *)packed + %lld, %s, Y, dt_N, %s_THREADS);\n",
                  p->name, k, (long long)p->pack[p->k[k].pack_group].offset,
                  p->g.bias ? "bias" : "NULL", p->name);
}

static void dense_pack(dt_strbuf *sb, const dt_export_plan *p, int g)
{
    dt_sb_appendf(sb, "    %s_k%d_dtk_pack_w8(%lld, %lld, W, scale_b, (char *)packed + %lld);\n",
                  p->name, p->pack[g].kernel, (long long)p->N, (long long)p->K,
                  (long long)p->pack[g].offset);
}

const dt_export_op dt_export_op_dense_w8a32 = {
    .op = &dt_op_dense,
    .dtype = DT_DTYPE_W8A32,
    .params = {"X", "W", "Y", "packed", "bias", "scale_b"},
    .emit_params = dense_params,
    .emit_doc = dense_doc,
    .emit_call = dense_call,
    .pack_params = "const int8_t *W, const float *scale_b, void *packed",
    .offset_unit = 1,
    .pack_tail = "the scales (float) of every padded column",
    .emit_pack = dense_pack,
};
