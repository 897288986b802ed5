/* The avx512 back-end: AVX-512F, 16 floats a vector, 32 registers: f32's
 * and w8a32's FMA rows (bf16's and int8's own instructions are the
 * avx512_bf16 and avx512_vnni back-ends; bf16 widened here is avx512_fma). */
#include "backends/rows.h"

#define ROW(DTYPE, EMIT)                                                                        \
    {.dtype = DTYPE, .name = "avx512", .isa = DT_ISA_AVX512, DT_ROW_PLAIN, DT_ROW_GEOM_AVX512,  \
     DT_ROW_PANEL_KG1, .peak = "f32", .cflags = "", DT_ROW_CODE_AVX512(EMIT)}

static const dt_backend rows[] = {
    ROW(DT_DTYPE_F32, dt_mk_ukr_f32),
    ROW(DT_DTYPE_W8A32, dt_mk_ukr_w8a32),
};

const dt_backend_reg dt_backend_avx512 = {"avx512", rows, DT_ROWS_COUNT(rows), NULL};
