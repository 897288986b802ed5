/* Private to backends/: the pieces of a row that several back-ends share,
 * so that each folder's registration reads as its table. */
#ifndef DT_BACKENDS_ROWS_H
#define DT_BACKENDS_ROWS_H

#include "backends/backend.h"
#include "backends/vector/emit.h"

#define DT_ROW_FEAT(x) DT_FEAT_BIT(DT_FEAT_##x)

/* The vector geometry of each isa, shared by every dtype's row of it. */
#define DT_ROW_GEOM_GENERIC .vec_floats = 4, .vec_regs = 16, .vec_regs_aarch64 = 32
#define DT_ROW_GEOM_AVX2 .vec_floats = 8, .vec_regs = 16
#define DT_ROW_GEOM_AVX512 .vec_floats = 16, .vec_regs = 32

#define DT_ROW_PANEL_KG1 .kg = 1, .packed_b = "[strip][K][NR]"

/* A row that needs nothing beyond its isa (dt_dtype_native never asks why). */
#define DT_ROW_PLAIN .key = -1, .hint = -1

/* The code of a row compiled under an isa's vector macro. */
#define DT_ROW_CODE_GENERIC(fn) .code = {.macro = "DT_ISA_GENERIC", .intrinsics = 0, .emit_ukr = fn}
#define DT_ROW_CODE_AVX2(fn) .code = {.macro = "DT_ISA_AVX2", .intrinsics = 1, .emit_ukr = fn}
#define DT_ROW_CODE_AVX512(fn) .code = {.macro = "DT_ISA_AVX512", .intrinsics = 1, .emit_ukr = fn}

#define DT_ROWS_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif
