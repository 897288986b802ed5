/* dense's export hooks for every dtype (export/export_op.h), the dtype as
 * data (dense_dtype): what NAME takes, what its comment says and which of a
 * kernel's entry points it calls.
 *   f32:         void NAME(<vars>, const float *X, const float *packed, float *Y
 *                          [, const float *bias]);  NAME_pack(const float *W, float *packed)
 *   bf16:        X, W bf16 (uint16_t); f32 sums; void NAME_pack(const uint16_t *W, void *packed)
 *   f32_bf16:    math=bf16 on f32: X, W f32, rounded to bf16 (W when packed, X per call)
 *   int8:        void NAME(<vars>, const uint8_t *X, float scale_a, int32_t zp_a,
 *                          const void *packed, float *Y[, const float *bias]);
 *                int64_t NAME_pack(const int8_t *W, const float *scale_b, void *packed)
 *   w8a32:       f32 X, s8 W with per-channel scales, dequantized in registers
 *   w8a32_bf16:  math=bf16 on w8a32: bf16(scale_b[n]·W[n,k]) packed, X rounded per call
 * Y[M,N] = X[M,K]·W[N,K]ᵀ (dequantized as the dtype says) (+ bias) (then
 * ReLU / GELU).  Each kernel called through its dtk_dense* entry point
 * (microkernel/op_dense*.c), each packing region filled by its dtk_pack*.
 * The quantized dtypes' NAME_pack takes weights already quantized to s8
 * and their per-output-channel scales — the quantization is the caller's (a
 * model compiler's) choice, never dtune's; int8's computes the zero-point
 * compensation Σ_k W[n,k] itself (docs/export.md). */
#include <stdio.h>
#include <string.h>

#include "export/export_internal.h"

extern const dt_op_desc dt_op_dense;

/* What differs between the dtypes' exported text. */
typedef struct dense_dtype {
    const char *x_params;    /* NAME's parameters before packed */
    const char *packed_type; /* "const float" (f32) or "const void" */
    const char *dense_entry; /* the kernel's entry point NAME calls */
    const char *call_q;      /* its arguments after X, dt_K: "" or ", scale_a, zp_a" */
    const char *pack_entry;  /* the kernel's packing entry point */
    const char *pack_q;      /* its arguments after W: "" or ", scale_b" */
    /* The comment's paragraph, with @NAME@, @BIAS@ (" + bias[N]"), @bias@
     * (" + bias[n]"), @ACT@, @BYTES@, @FLOATS@ (the packed size in bytes, in
     * floats), @NPACK@, @S@ (its plural s) and @BIASNOTE@ ("; bias has N
     * floats") filled in for the plan. */
    const char *doc;
} dense_dtype;

/* the lines every dtype's paragraph but f32's ends with */
#define SIZE_LINE " * @NAME@_packed_size(): bytes of the packed weights (@BYTES@, a multiple of 64).\n"
#define ALIGN_LINE " * Pointers are borrowed; packed is best 64-byte aligned (at least 4).\n"
#define SCALES_REFUSED                                                                   \
    " *   It returns 0, or refuses (writing nothing) a scale_b that is NULL (-1)\n"      \
    " *   or whose scale_b[n] is zero, NaN or infinite (n + 1: the first one).\n"

static const dense_dtype dense_f32 = {
    .x_params = "const float *X",
    .packed_type = "const float",
    .dense_entry = "dtk_dense",
    .call_q = "",
    .pack_entry = "dtk_pack",
    .pack_q = "",
    .doc = " *\n * Y[M,N] = X[M,K] * W[N,K]^T@BIAS@@ACT@, all row-major and contiguous.\n"
           " * @NAME@_packed_size(): bytes of the packed weights (@FLOATS@ floats).\n"
           " * @NAME@_pack(W, packed): packs W (N x K row-major) once into packed; every layout\n"
           " *   the dispatcher needs is in it (@NPACK@ region@S@, one per panel width NR).\n"
           " * @NAME@(...): Y for any shape; packed as filled by @NAME@_pack@BIASNOTE@.\n"
           " * Pointers are borrowed; 64-byte alignment of packed is best, not required.\n",
};

/* bf16 and f32_bf16: one paragraph but for the dtype's lines and W's type */
#define BF16_DOC(DTYPE_LINES, W_NAME)                                                        \
    " *\n" DTYPE_LINES " * Y[M,N] = X[M,K] * W[N,K]^T@BIAS@@ACT@, all row-major and contiguous.\n" \
    SIZE_LINE " * @NAME@_pack(W, packed): packs W (N x K " W_NAME ", row-major) once into packed; "  \
    "every\n *   layout the dispatcher needs is in it (@NPACK@ region@S@, one per panel layout).\n" \
    " * @NAME@(...): Y for any shape; packed as filled by @NAME@_pack@BIASNOTE@.\n" ALIGN_LINE

static const dense_dtype dense_bf16 = {
    .x_params = "const uint16_t *X",
    .packed_type = "const void",
    .dense_entry = "dtk_dense_bf16",
    .call_q = "",
    .pack_entry = "dtk_pack_bf16",
    .pack_q = "",
    .doc = BF16_DOC(" * dtype bf16: X and W are bf16 (uint16_t, the upper 16 bits of an IEEE float;\n"
                    " * convert with round to nearest even), the sums are f32, Y is f32.\n",
                    "bf16"),
};

static const dense_dtype dense_f32_bf16 = {
    .x_params = "const float *X",
    .packed_type = "const void",
    .dense_entry = "dtk_dense_f32bf16",
    .call_q = "",
    .pack_entry = "dtk_pack_f32bf16",
    .pack_q = "",
    .doc = BF16_DOC(" * math=bf16: X, W and Y are f32; W is rounded to bf16 (nearest even) when packed\n"
                    " * and X on every call, the products are bf16's, the sums f32.\n",
                    "f32"),
};

static const dense_dtype dense_int8 = {
    .x_params = "const uint8_t *X, float scale_a, int32_t zp_a",
    .packed_type = "const void",
    .dense_entry = "dtk_dense_u8s8",
    .call_q = ", scale_a, zp_a",
    .pack_entry = "dtk_pack_u8s8",
    .pack_q = ", scale_b",
    .doc = " *\n * dtype int8: X is u8 with one scale and zero point (its real value is\n"
           " * scale_a * (X - zp_a)), W is s8 with one scale per output channel n\n"
           " * (scale_b[n]), the sums are int32, Y is f32:\n"
           " *   Y[m,n] = scale_a * scale_b[n] * sum_k (X[m,k] - zp_a) * W[n,k]@bias@@ACT@,\n"
           " * all row-major and contiguous.  The int32 sums are exact while\n"
           " * |sum_k (X[m,k] - zp_a) * W[n,k]| < 2^31 (always for K <= 65793).\n" SIZE_LINE
           " * @NAME@_pack(W, scale_b, packed): packs the already-quantized W (N x K s8,\n"
           " *   row-major) and its N per-channel scales once into packed, with the\n"
           " *   zero-point compensation sum_k W[n,k] it computes itself; every layout\n"
           " *   the dispatcher needs is in it (@NPACK@ region@S@, one per panel layout).\n"
           SCALES_REFUSED
           " * @NAME@(...): Y for any shape, scale_a and zp_a X's quantization (scale_a\n"
           " *   finite); packed as filled by @NAME@_pack@BIASNOTE@.\n" ALIGN_LINE,
};

/* w8a32 and w8a32_bf16: one paragraph but for the dtype's lines */
#define W8_DOC(DTYPE_LINES)                                                                  \
    " *\n" DTYPE_LINES " *   Y[m,n] = scale_b[n] * sum_k X[m,k] * W[n,k]@bias@@ACT@,\n"          \
    " * all row-major and contiguous.\n" SIZE_LINE                                           \
    " * @NAME@_pack(W, scale_b, packed): packs the already-quantized W (N x K s8,\n"          \
    " *   row-major) and its N per-channel scales once into packed; every layout\n"          \
    " *   the dispatcher needs is in it (@NPACK@ region@S@, one per panel layout).\n"        \
    SCALES_REFUSED " * @NAME@(...): Y for any shape; packed as filled by @NAME@_pack@BIASNOTE@.\n" \
    ALIGN_LINE

static const dense_dtype dense_w8a32 = {
    .x_params = "const float *X",
    .packed_type = "const void",
    .dense_entry = "dtk_dense_w8",
    .call_q = "",
    .pack_entry = "dtk_pack_w8",
    .pack_q = ", scale_b",
    .doc = W8_DOC(" * dtype w8a32 (weight-only int8): X is f32, W is s8 with one scale per\n"
                  " * output channel n (scale_b[n]), dequantized in registers; the sums are\n"
                  " * f32, Y is f32:\n"),
};

static const dense_dtype dense_w8a32_bf16 = {
    .x_params = "const float *X",
    .packed_type = "const void",
    .dense_entry = "dtk_dense_f32bf16",
    .call_q = "",
    .pack_entry = "dtk_pack_w8bf16",
    .pack_q = ", scale_b",
    .doc = W8_DOC(" * dtype w8a32_bf16 (w8a32 with math=bf16): X is f32, W is s8 with one scale\n"
                  " * per output channel n (scale_b[n]); scale_b[n] * W[n,k] is rounded to bf16\n"
                  " * (nearest even) when packed and X on every call, the products are bf16's,\n"
                  " * the sums f32, Y is f32:\n"),
};

static void dense_params(dt_strbuf *sb, const dt_export_plan *p, const dense_dtype *d)
{
    dt_sb_appendf(sb, "%s, %s *packed, float *Y%s", d->x_params, d->packed_type,
                  p->g.bias ? ", const float *bias" : "");
}

/* d's paragraph with the plan's values in its @...@ fields */
static void dense_doc(dt_strbuf *sb, const dt_export_plan *p, const dense_dtype *d)
{
    char bytes[32], floats[32], npack[16];
    snprintf(bytes, sizeof bytes, "%lld", (long long)p->packed_bytes);
    snprintf(floats, sizeof floats, "%lld", (long long)(p->packed_bytes / 4));
    snprintf(npack, sizeof npack, "%d", p->npack);
    const dt_export_field fill[] = {
        {"@NAME@", p->name},
        {"@BIAS@", p->g.bias ? " + bias[N]" : ""},
        {"@bias@", p->g.bias ? " + bias[n]" : ""},
        {"@ACT@", dt_export_act_text(p)},
        {"@BYTES@", bytes},
        {"@FLOATS@", floats},
        {"@NPACK@", npack},
        {"@S@", p->npack == 1 ? "" : "s"},
        {"@BIASNOTE@", p->g.bias ? "; bias has N floats" : ""},
    };
    dt_export_fill(sb, d->doc, fill, sizeof fill / sizeof fill[0]);
}

static void dense_call(dt_strbuf *sb, const dt_export_plan *p, int k, const dense_dtype *d,
                       int unit)
{
    char at[64];
    dt_export_offset_text(at, sizeof at, unit, "const char *",
                          p->pack[p->k[k].pack_group].offset);
    dt_sb_appendf(sb, "        %s_k%d_%s(dt_M, dt_N, dt_K, X, dt_K%s, %s, %s, Y, dt_N, "
                      "%s_THREADS);\n",
                  p->name, k, d->dense_entry, d->call_q, at, p->g.bias ? "bias" : "NULL",
                  p->name);
}

static void dense_pack(dt_strbuf *sb, const dt_export_plan *p, int g, const dense_dtype *d,
                       int unit)
{
    char at[64];
    dt_export_offset_text(at, sizeof at, unit, "char *", p->pack[g].offset);
    dt_sb_appendf(sb, "    %s_k%d_%s(%lld, %lld, W%s, %s);\n", p->name, p->pack[g].kernel,
                  d->pack_entry, (long long)p->N, (long long)p->K, d->pack_q, at);
}

/* The hooks of dtype DT (dense_DT) and their dt_export_op. */
#define DENSE_EXPORT_OP(dt, DTYPE, PARAMS, PACK_PARAMS, UNIT, TAIL)                       \
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
        dense_call(sb, p, k, &dense_##dt, UNIT);                                          \
    }                                                                                     \
    static void dense_pack_##dt(dt_strbuf *sb, const dt_export_plan *p, int g)            \
    {                                                                                     \
        dense_pack(sb, p, g, &dense_##dt, UNIT);                                          \
    }                                                                                     \
    const dt_export_op dt_export_op_dense_##dt = {                                        \
        .op = &dt_op_dense,                                                               \
        .dtype = DTYPE,                                                                   \
        .params = PARAMS,                                                                 \
        .emit_params = dense_params_##dt,                                                 \
        .emit_doc = dense_doc_##dt,                                                       \
        .emit_call = dense_call_##dt,                                                     \
        .pack_params = PACK_PARAMS,                                                       \
        .offset_unit = UNIT,                                                              \
        .pack_tail = TAIL,                                                                \
        .emit_pack = dense_pack_##dt,                                                     \
    };

#define PLAIN_PARAMS {"X", "W", "Y", "packed", "bias"}
#define SCALED_PARAMS {"X", "W", "Y", "packed", "bias", "scale_b"}
#define INT8_PARAMS {"X", "W", "Y", "packed", "bias", "scale_a", "zp_a", "scale_b"}
#define QUANT_PACK "const int8_t *W, const float *scale_b, void *packed"

/* f32's offsets count floats (unit 4), as they always did; the others bytes */
DENSE_EXPORT_OP(f32, DT_DTYPE_F32, PLAIN_PARAMS, "const float *W, float *packed", 4, NULL)
DENSE_EXPORT_OP(bf16, DT_DTYPE_BF16, PLAIN_PARAMS, "const uint16_t *W, void *packed", 1, NULL)
DENSE_EXPORT_OP(f32_bf16, DT_DTYPE_F32_BF16, PLAIN_PARAMS, "const float *W, void *packed", 1,
                NULL)
DENSE_EXPORT_OP(int8, DT_DTYPE_INT8, INT8_PARAMS, QUANT_PACK, 1,
                "the column sums (int32) and the scales (float) of every padded column")
DENSE_EXPORT_OP(w8a32, DT_DTYPE_W8A32, SCALED_PARAMS, QUANT_PACK, 1,
                "the scales (float) of every padded column")
/* the scales are in the rounded bf16 weights: nothing after the panels */
DENSE_EXPORT_OP(w8a32_bf16, DT_DTYPE_W8A32_BF16, SCALED_PARAMS, QUANT_PACK, 1, NULL)
