/* The amx back-end: tdpbf16ps, tdpbusd on 16×16 C tiles.  The packed B is
 * the vector rows' [K/g][NR][g] panel with K padded to a tile's 16 groups;
 * -march=native enables the tiles on a CPU with AMX, elsewhere the kernels
 * build on the tile emulation (backends/amx/amx_tile.h).  The tiles'
 * epilogue is AVX-512's (their types blocks: KG 2, 4).  Rows: bf16 and
 * int8, and the math=bf16 dtypes on bf16's tiles; its unit's rules are
 * unit_amx.c. */
#include "backends/amx/amx.h"
#include "backends/rows.h"

#define ROW_BF16(DTYPE)                                                                         \
    {.dtype = DTYPE, .name = "amx", .isa = DT_ISA_AVX512,                                       \
     .needs = DT_ROW_FEAT(AMX_TILE) | DT_ROW_FEAT(AMX_BF16), .key = DT_FEAT_AMX_BF16, .hint = -1, \
     .why_isa = "the isa in use is below avx512", .why_missing = "no amx_bf16",                 \
     DT_ROW_GEOM_AVX512, .tiles = 8, .kg = 2, .packed_b = "[strip][K/2][NR][2], K padded to 32", \
     .peak = "amx_bf16", .cflags = "", .unit = DT_UNIT_AMX, .kpad = 32,                         \
     DT_ROW_CODE_AVX512(dt_mk_ukr_amx)}

static const dt_backend rows[] = {
    ROW_BF16(DT_DTYPE_BF16),
    {.dtype = DT_DTYPE_INT8, .name = "amx", .isa = DT_ISA_AVX512,
     .needs = DT_ROW_FEAT(AMX_TILE) | DT_ROW_FEAT(AMX_INT8), .key = DT_FEAT_AMX_INT8, .hint = -1,
     .why_isa = "the isa in use is below avx512", .why_missing = "no amx_int8",
     DT_ROW_GEOM_AVX512, .tiles = 8, .kg = 4, .packed_b = "[strip][K/4][NR][4], K padded to 64",
     .peak = "amx_int8", .cflags = "", .unit = DT_UNIT_AMX, .kpad = 64,
     DT_ROW_CODE_AVX512(dt_mk_ukr_amx)},
    ROW_BF16(DT_DTYPE_F32_BF16),
    ROW_BF16(DT_DTYPE_W8A32_BF16),
};

const dt_backend_reg dt_backend_amx = {"amx", rows, DT_ROWS_COUNT(rows), &dt_unit_amx};
