/* The avx512_fma back-end (issue 44's proof of a back-end as a folder and a
 * row): bf16 widened to f32 and the AVX-512 FMA, for bf16 and the math=bf16
 * dtypes f32_bf16 and w8a32_bf16.  On a CPU whose vdpbf16ps is slower than
 * its f32 FMA (an Intel Xeon whose hypervisor hides AMX: 78 against 135–170
 * GFLOP/s) the tuner had only avx512_bf16's pairs and the 8-lane AVX2
 * widening to choose from; this row widens on 16 lanes and 32 registers.
 * Its annotations name it with the unit fma (the vector rules); its packed
 * B is a single-k panel, its types block (template/
 * types_bf16_fma.h), its emitter the vector widening one.  The tuner
 * searches it beside avx512_bf16 and picks by measurement. */
#include "backends/rows.h"
#include "backends/unit.h"

#include "dt_tpl_types_bf16_fma_h.h"

#define ROW(DTYPE)                                                                              \
    {.dtype = DTYPE, .name = "avx512_fma", .isa = DT_ISA_AVX512, .portable = 1, DT_ROW_PLAIN,   \
     DT_ROW_GEOM_AVX512, DT_ROW_PANEL_KG1, .peak = "f32", .cflags = "", .unit = DT_UNIT_FMA,    \
     .code = {.macro = "DT_ISA_AVX512", .intrinsics = 1, .emit_ukr = dt_mk_ukr_bf16_portable,   \
              .types = dt_tpl_types_bf16_fma_h}}

static const dt_backend rows[] = {
    ROW(DT_DTYPE_BF16),
    ROW(DT_DTYPE_F32_BF16),
    ROW(DT_DTYPE_W8A32_BF16),
};

/* Its unit: the vector rules (no hooks of its own), f32's element size in
 * the cache rules (the kernels pack bf16, the rules count the widest). */
static const dt_unit_hooks unit_fma = {.unit = DT_UNIT_FMA, .elem_bytes = 4, .isa = DT_ISA_AVX512};

const dt_backend_reg dt_backend_avx512_fma = {"avx512_fma", rows, DT_ROWS_COUNT(rows), &unit_fma};
