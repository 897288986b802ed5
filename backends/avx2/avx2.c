/* The avx2 back-end: AVX2 + FMA, 8 floats a vector, 16 registers.  The
 * rows of every dtype: f32 and
 * w8a32 their own arithmetic; bf16, int8 and the math=bf16 dtypes widened
 * to 32-bit lanes and the f32 FMA (stand-ins, dt_backend.portable). */
#include "backends/rows.h"

#define ROW(DTYPE, NAME, PORTABLE, EMIT)                                                        \
    {.dtype = DTYPE, .name = NAME, .isa = DT_ISA_AVX2, .portable = PORTABLE, DT_ROW_PLAIN,    \
     DT_ROW_GEOM_AVX2, DT_ROW_PANEL_KG1, .peak = "f32", .cflags = "",                         \
     DT_ROW_CODE_AVX2(EMIT)}

static const dt_backend rows[] = {
    ROW(DT_DTYPE_F32, "avx2", 0, dt_mk_ukr_f32),
    ROW(DT_DTYPE_BF16, "portable-avx2", 1, dt_mk_ukr_bf16_portable),
    ROW(DT_DTYPE_INT8, "portable-avx2", 1, dt_mk_ukr_int8_portable),
    ROW(DT_DTYPE_W8A32, "avx2", 0, dt_mk_ukr_w8a32),
    /* math=bf16: bf16's emitter (the dtype's types block converts) */
    ROW(DT_DTYPE_F32_BF16, "portable-avx2", 1, dt_mk_ukr_bf16_portable),
    ROW(DT_DTYPE_W8A32_BF16, "portable-avx2", 1, dt_mk_ukr_bf16_portable),
};

const dt_backend_reg dt_backend_avx2 = {"avx2", rows, DT_ROWS_COUNT(rows), NULL};
