/* The w8a32_bf16 dtype of the micro-kernels ("math=bf16" on a w8a32
 * workload, issue 29 point 7; microkernel/mk_op.h, dt_mk_dtype): X and Y
 * f32, W s8 with per-output-channel scales as w8a32 takes them, bf16
 * arithmetic.  The weights are dequantized and rounded to bf16 once, when
 * packed (bf16(scale_b[n]·W[n][k]), what math=bf16 does to an f32 model's
 * dequantized weights), and everything after is f32_bf16's: bf16's
 * register kernels and driver under bf16's types block, f32_bf16's block
 * (its f32 entry points: X rounded once per call), then this dtype's
 * (template/types_w8a32bf16.h: the s8 packing).  The packed weights are
 * bf16 panels, 2 bytes a weight where w8a32 keeps 1: it trades w8a32's
 * memory for bf16's arithmetic (AMX tiles where the CPU has them). */
#include "microkernel/mk_op.h"

#include "dt_tpl_act_h.h"
#include "dt_tpl_driver_c.h"
#include "dt_tpl_prelude_h.h"
#include "dt_tpl_types_bf16_h.h"
#include "dt_tpl_types_f32bf16_h.h"
#include "dt_tpl_types_w8a32bf16_h.h"

const dt_mk_dtype dt_mk_dtype_w8a32_bf16 = {
    .dtype = DT_DTYPE_W8A32_BF16,
    .prelude = dt_tpl_prelude_h,
    .types_base = dt_tpl_types_bf16_h,
    .types = dt_tpl_types_f32bf16_h,
    .types_extra = dt_tpl_types_w8a32bf16_h,
    .epilogue = dt_tpl_act_h,
    .driver = dt_tpl_driver_c,
    .qtail_col_bytes = 0, /* the scales are in the rounded weights */
    .packed_b_bytes = 2,  /* the panels hold bf16 */
};
