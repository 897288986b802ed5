/* dense's export hooks for bf16 and f32_bf16 (`math=bf16`), the dtype as
 * data (dense_bf16_dtype; export/export_op.h):
 *   size_t NAME_packed_size(void);
 *   void   NAME_pack(const T *W, void *packed);
 *   void   NAME(<vars>, const T *X, const void *packed, float *Y
 *               [, const float *bias]);
 * Y[M,N] = X[M,K]·W[N,K]ᵀ (+ bias) (then ReLU / GELU), bf16 products summed
 * in f32, Y f32.  bf16: T is uint16_t (X and W bf16).  f32_bf16: T is float,
 * W rounded to bf16 when packed and X on each call.  Each kernel called
 * through its dtk_dense_<suffix> (microkernel/op_dense.c), each packing
 * region filled by its dtk_pack_<suffix>. */
#include <stdio.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_dense;

/* What differs between the two dtypes' exported text. */
typedef struct dense_bf16_dtype {
    const char *elem;   /* C type of X and W */
    const char *doc;    /* the doc paragraph's lines on the dtype */
    const char *w_name; /* W's element type in the doc */
    const char *suffix; /* of the kernel's entry points */
} dense_bf16_dtype;

static const dense_bf16_dtype dense_bf16 = {
    .elem = "uint16_t",
    .doc = " * dtype bf16: X and W are bf16 (uint16_t, the upper 16 bits of an IEEE float;\n"
           " * convert with round to nearest even), the sums are f32, Y is f32.\n",
    .w_name = "bf16",
    .suffix = "bf16",
};

static const dense_bf16_dtype dense_f32_bf16 = {
    .elem = "float",
    .doc = " * math=bf16: X, W and Y are f32; W is rounded to bf16 (nearest even) when packed\n"
           " * and X on every call, the products are bf16's, the sums f32.\n",
    .w_name = "f32",
    .suffix = "f32bf16",
};

static void dense_params(dt_strbuf *sb, const dt_export_plan *p, const dense_bf16_dtype *d)
{
    dt_sb_appendf(sb, "const %s *X, const void *packed, float *Y%s", d->elem,
                  p->g.bias ? ", const float *bias" : "");
}

static void dense_doc(dt_strbuf *sb, const dt_export_plan *p, const dense_bf16_dtype *d)
{
    dt_sb_appendf(sb,
                  " *\n%s"
                  " * Y[M,N] = X[M,K] * W[N,K]^T%s%s, all row-major and contiguous.\n"
                  " * %s_packed_size(): bytes of the packed weights (%lld, a multiple of 64).\n"
                  " * %s_pack(W, packed): packs W (N x K %s, row-major) once into packed; "
                  "every\n *   layout the dispatcher needs is in it (%d region%s, one per panel "
                  "layout).\n"
                  " * %s(...): Y for any shape; packed as filled by %s_pack%s.\n"
                  " * Pointers are borrowed; packed is best 64-byte aligned (at least 4).\n",
                  d->doc, p->g.bias ? " + bias[N]" : "", dt_export_act_text(p), p->name,
                  (long long)p->packed_bytes, p->name, d->w_name, p->npack,
                  p->npack == 1 ? "" : "s", p->name, p->name,
                  p->g.bias ? "; bias has N floats" : "");
}

static void dense_call(dt_strbuf *sb, const dt_export_plan *p, int k, const dense_bf16_dtype *d)
{
    dt_sb_appendf(sb, "        %s_k%d_dtk_dense_%s(dt_M, dt_N, dt_K, X, dt_K, "
                      "(const char *)packed + %lld, %s, Y, dt_N, %s_THREADS);\n",
                  p->name, k, d->suffix, (long long)p->pack[p->k[k].pack_group].offset,
                  p->g.bias ? "bias" : "NULL", p->name);
}

static void dense_pack(dt_strbuf *sb, const dt_export_plan *p, int g, const dense_bf16_dtype *d)
{
    dt_sb_appendf(sb, "    %s_k%d_dtk_pack_%s(%lld, %lld, W, (char *)packed + %lld);\n", p->name,
                  p->pack[g].kernel, d->suffix, (long long)p->N, (long long)p->K,
                  (long long)p->pack[g].offset);
}

/* The hooks of dtype DT (dense_DT) and their dt_export_op. */
#define DENSE_EXPORT_OP(dt, DTYPE, PACK_PARAMS)                                           \
    static void dense_params_##dt(dt_strbuf *sb, const dt_export_plan *p)                 \
    {                                                                                     \
        dense_params(sb, p, &dense_##dt);                                                 \
    }                                                                                     \
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
        .params = {"X", "W", "Y", "packed", "bias"},                                      \
        .emit_params = dense_params_##dt,                                                 \
        .emit_doc = dense_doc_##dt,                                                       \
        .emit_call = dense_call_##dt,                                                     \
        .pack_params = PACK_PARAMS,                                                       \
        .offset_unit = 1,                                                                 \
        .emit_pack = dense_pack_##dt,                                                     \
    };

DENSE_EXPORT_OP(bf16, DT_DTYPE_BF16, "const uint16_t *W, void *packed")
DENSE_EXPORT_OP(f32_bf16, DT_DTYPE_F32_BF16, "const float *W, void *packed")
