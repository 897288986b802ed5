/* dense's export hooks for w8a32, weight-only int8, and for w8a32_bf16
 * (`math=bf16` on w8a32), the dtype as data (dense_w8_dtype;
 * export/export_op.h):
 *   size_t NAME_packed_size(void);
 *   int64_t NAME_pack(const int8_t *W, const float *scale_b, void *packed);
 *   void   NAME(<vars>, const float *X, const void *packed, float *Y
 *               [, const float *bias]);
 * Y[m,n] = scale_b[n]·Σ_k X[m,k]·W[n,k] (+ bias) (then ReLU / GELU), X f32,
 * W s8 already quantized by the caller with per-output-channel scales
 * scale_b.  w8a32 dequantizes in registers (f32 sums; each kernel called
 * through its dtk_dense_w8, each packing region filled by its dtk_pack_w8,
 * microkernel/op_dense_w8a32.c); w8a32_bf16 rounds scale_b[n]·W[n,k] to
 * bf16 when packing (dtk_pack_w8bf16) and X on every call
 * (dtk_dense_f32bf16): bf16 products, f32 sums. */
#include <stdio.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_dense;

/* What differs between the two dtypes' exported text. */
typedef struct dense_w8_dtype {
    const char *doc;         /* the doc paragraph's lines on the dtype */
    const char *dense_sfx;   /* the kernel's dense entry point: dtk_dense_<sfx> */
    const char *pack_sfx;    /* its packing: dtk_pack_<sfx> */
} dense_w8_dtype;

static const dense_w8_dtype dense_w8a32 = {
    .doc = " *\n * dtype w8a32 (weight-only int8): X is f32, W is s8 with one scale per\n"
           " * output channel n (scale_b[n]), dequantized in registers; the sums are\n"
           " * f32, Y is f32:\n",
    .dense_sfx = "w8",
    .pack_sfx = "w8",
};

static const dense_w8_dtype dense_w8a32_bf16 = {
    .doc = " *\n * dtype w8a32_bf16 (w8a32 with math=bf16): X is f32, W is s8 with one scale\n"
           " * per output channel n (scale_b[n]); scale_b[n] * W[n,k] is rounded to bf16\n"
           " * (nearest even) when packed and X on every call, the products are bf16's,\n"
           " * the sums f32, Y is f32:\n",
    .dense_sfx = "f32bf16",
    .pack_sfx = "w8bf16",
};

static void dense_params(dt_strbuf *sb, const dt_export_plan *p)
{
    dt_sb_appendf(sb, "const float *X, const void *packed, float *Y%s",
                  p->g.bias ? ", const float *bias" : "");
}

static void dense_doc(dt_strbuf *sb, const dt_export_plan *p, const dense_w8_dtype *d)
{
    dt_sb_appendf(sb,
                  "%s"
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
                  d->doc, p->g.bias ? " + bias[n]" : "", dt_export_act_text(p), p->name,
                  (long long)p->packed_bytes, p->name, p->npack, p->npack == 1 ? "" : "s",
                  p->name, p->name, p->g.bias ? "; bias has N floats" : "");
}

static void dense_call(dt_strbuf *sb, const dt_export_plan *p, int k, const dense_w8_dtype *d)
{
    dt_sb_appendf(sb, "        %s_k%d_dtk_dense_%s(dt_M, dt_N, dt_K, X, dt_K, "
                      "(const char *)packed + %lld, %s, Y, dt_N, %s_THREADS);\n",
                  p->name, k, d->dense_sfx, (long long)p->pack[p->k[k].pack_group].offset,
                  p->g.bias ? "bias" : "NULL", p->name);
}

static void dense_pack(dt_strbuf *sb, const dt_export_plan *p, int g, const dense_w8_dtype *d)
{
    dt_sb_appendf(sb, "    %s_k%d_dtk_pack_%s(%lld, %lld, W, scale_b, (char *)packed + %lld);\n",
                  p->name, p->pack[g].kernel, d->pack_sfx, (long long)p->N, (long long)p->K,
                  (long long)p->pack[g].offset);
}

/* The hooks of dtype DT (dense_DT) and their dt_export_op. */
#define DENSE_W8_EXPORT_OP(dt, DTYPE, TAIL)                                               \
    static void dense_doc_##dt(dt_strbuf *sb, const dt_export_plan *p)                    \
    {                                                                                     \
        dense_doc(sb, p, &dense_##dt);                                                    \
    }                                                                                     \
    static void dense_call_##dt(dt_strbuf *sb, const dt_export_plan *p, int k)            \
    {                                                                                     \
        dense_call(sb, p, k, &dense_##dt);                                                \
    }                                                                                     \
    static void dense_pack_##dt(dt_strbuf *sb, const dt_export_plan *p, int g)            \
    {                                                                                     \
        dense_pack(sb, p, g, &dense_##dt);                                                \
    }                                                                                     \
    const dt_export_op dt_export_op_dense_##dt = {                                        \
        .op = &dt_op_dense,                                                               \
        .dtype = DTYPE,                                                                   \
        .params = {"X", "W", "Y", "packed", "bias", "scale_b"},                           \
        .emit_params = dense_params,                                                      \
        .emit_doc = dense_doc_##dt,                                                       \
        .emit_call = dense_call_##dt,                                                     \
        .pack_params = "const int8_t *W, const float *scale_b, void *packed",             \
        .offset_unit = 1,                                                                 \
        .pack_tail = TAIL,                                                                \
        .emit_pack = dense_pack_##dt,                                                     \
    };

DENSE_W8_EXPORT_OP(w8a32, DT_DTYPE_W8A32, "the scales (float) of every padded column")
/* the scales are in the rounded bf16 weights: nothing after the panels */
DENSE_W8_EXPORT_OP(w8a32_bf16, DT_DTYPE_W8A32_BF16, NULL)
