/* The avx512_bf16 back-end: vdpbf16ps on pairs of k (KG 2: the packed B
 * holds [K/2][NR][2], one zmm is 16 columns × 2 k), f32 accumulation.
 * Rows: bf16, and the math=bf16 dtypes f32_bf16 and w8a32_bf16, whose
 * types blocks round their f32 operands to bf16 before the same kernels. */
#include "backends/rows.h"

#define ROW(DTYPE)                                                                              \
    {.dtype = DTYPE, .name = "avx512_bf16", .isa = DT_ISA_AVX512,                               \
     .needs = DT_ROW_FEAT(AVX512_BF16) | DT_ROW_FEAT(AVX512BW) | DT_ROW_FEAT(AVX512VL),          \
     .key = DT_FEAT_AVX512_BF16, .hint = -1,                                                     \
     .why_isa = "portable (the isa in use is below avx512)",                                    \
     .why_missing = "portable (no avx512_bf16)", DT_ROW_GEOM_AVX512, .kg = 2,                   \
     .packed_b = "[strip][K/2][NR][2]", .peak = "bf16", .cflags = "",                            \
     DT_ROW_CODE_AVX512(dt_mk_ukr_bf16_dp)}

static const dt_backend rows[] = {
    ROW(DT_DTYPE_BF16),
    ROW(DT_DTYPE_F32_BF16),
    ROW(DT_DTYPE_W8A32_BF16),
};

const dt_backend_reg dt_backend_avx512_bf16 = {"avx512_bf16", rows, DT_ROWS_COUNT(rows), NULL};
