/* The avx512_vnni back-end: vpdpbusd on quads of k (KG 4: the packed B
 * holds [K/4][NR][4]), u8 × s8 into s32 accumulators: int8's row. */
#include "backends/rows.h"

static const dt_backend rows[] = {
    {.dtype = DT_DTYPE_INT8, .name = "avx512_vnni", .isa = DT_ISA_AVX512,
     .needs = DT_ROW_FEAT(AVX512_VNNI) | DT_ROW_FEAT(AVX512BW), .key = DT_FEAT_AVX512_VNNI,
     .hint = DT_FEAT_AVX_VNNI, .why_isa = "portable (the isa in use is below avx512)",
     .why_hint = "portable (avx_vnni back-end not written)",
     .why_missing = "portable (no avx512_vnni)", DT_ROW_GEOM_AVX512, .kg = 4,
     .packed_b = "[strip][K/4][NR][4]", .peak = "int8", .cflags = "",
     DT_ROW_CODE_AVX512(dt_mk_ukr_int8_dp)},
};

const dt_backend_reg dt_backend_avx512_vnni = {"avx512_vnni", rows, DT_ROWS_COUNT(rows), NULL};
