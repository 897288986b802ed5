/* The AMX back-end (issue 44: a back-end is a folder and a row): its rows
 * (bf16, int8 and the math=bf16 dtypes on tdpbf16ps / tdpbusd tiles), its
 * unit's rules and its register-kernel emitter. */
#ifndef DT_BACKENDS_AMX_AMX_H
#define DT_BACKENDS_AMX_AMX_H

#include "backends/unit.h"

/* AMX tiles (palette 1): 8 registers of 16 rows × 64 bytes; a C tile is
 * 16 × 16 f32/s32, an A tile's row 64 bytes of K (32 bf16, 64 u8). */
#define DT_AMX_TILE_REGS 8
#define DT_AMX_TILE_ROWS 16
#define DT_AMX_TILE_COLS 16
#define DT_AMX_TILE_K 64

/* The tile unit's rules (backends/unit.h). */
extern const dt_unit_hooks dt_unit_amx;

#endif
