/* batch_matmul's export hooks (export/export_op.h), one per dtype, the
 * dtype as data (bmm_dtype):
 *   void NAME(<vars>, const T *A, const T *B, float *C);
 * C[b] = A[b]·B[b] (NN) or A[b]·B[b]ᵀ (NT), contiguous; T is float (f32) or
 * uint16_t (bf16: A and B bf16, C f32); each kernel called through its
 * dtk_bmm[_<dtype>] (microkernel/op_batch_matmul.c).  Nothing to pack. */
#include <stdio.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_batch_matmul;

/* What differs between the dtypes' exported text. */
typedef struct bmm_dtype {
    const char *elem;      /* C type of A and B */
    const char *doc;       /* the doc paragraph's lines on the dtype, or "" */
    const char *entry;     /* the kernel's entry point */
} bmm_dtype;

static const bmm_dtype bmm_f32 = {
    .elem = "float",
    .doc = "",
    .entry = "dtk_bmm",
};

static const bmm_dtype bmm_bf16 = {
    .elem = "uint16_t",
    .doc = " * dtype bf16: A and B are bf16 (uint16_t, the upper 16 bits of an IEEE float;\n"
           " * convert with round to nearest even), the sums are f32, C is f32.\n",
    .entry = "dtk_bmm_bf16",
};

static void bmm_params(dt_strbuf *sb, const bmm_dtype *d)
{
    dt_sb_appendf(sb, "const %s *A, const %s *B, float *C", d->elem, d->elem);
}

static void bmm_doc(dt_strbuf *sb, const dt_export_plan *p, const bmm_dtype *d)
{
    dt_sb_appendf(sb,
                  " *\n%s * C[b] = A[b] * %s for b < B; A is B x M x K, B is %s, C is B x M x N,\n"
                  " * all row-major and contiguous.  Pointers are borrowed.\n",
                  d->doc, p->g.b_trans ? "B[b]^T" : "B[b]",
                  p->g.b_trans ? "B x N x K" : "B x K x N");
}

static void bmm_call(dt_strbuf *sb, const dt_export_plan *p, int k, const bmm_dtype *d)
{
    dt_sb_appendf(sb, "        %s_k%d_%s(dt_B, dt_M, dt_N, dt_K, A, dt_K, dt_M * dt_K, "
                      "B, %s, dt_N * dt_K, C, dt_N, dt_M * dt_N, %s_THREADS);\n",
                  p->name, k, d->entry, p->g.b_trans ? "dt_K" : "dt_N", p->name);
}

/* The hooks of dtype DT (bmm_DT) and their dt_export_op. */
#define BMM_EXPORT_OP(dt, DTYPE)                                                          \
    static void bmm_params_##dt(dt_strbuf *sb, const dt_export_plan *p)                  \
    {                                                                                     \
        (void)p;                                                                          \
        bmm_params(sb, &bmm_##dt);                                                        \
    }                                                                                     \
    static void bmm_doc_##dt(dt_strbuf *sb, const dt_export_plan *p)                     \
    {                                                                                     \
        bmm_doc(sb, p, &bmm_##dt);                                                        \
    }                                                                                     \
    static void bmm_call_##dt(dt_strbuf *sb, const dt_export_plan *p, int k)             \
    {                                                                                     \
        bmm_call(sb, p, k, &bmm_##dt);                                                    \
    }                                                                                     \
    const dt_export_op dt_export_op_batch_matmul_##dt = {                                 \
        .op = &dt_op_batch_matmul,                                                        \
        .dtype = DTYPE,                                                                   \
        .params = {"A", "B", "C"},                                                        \
        .emit_params = bmm_params_##dt,                                                   \
        .emit_doc = bmm_doc_##dt,                                                         \
        .emit_call = bmm_call_##dt,                                                       \
    };

BMM_EXPORT_OP(f32, DT_DTYPE_F32)
BMM_EXPORT_OP(bf16, DT_DTYPE_BF16)
