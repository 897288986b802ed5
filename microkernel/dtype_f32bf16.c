/* The f32_bf16 dtype of the micro-kernels ("math=bf16" on an f32 workload,
 * issue 29 point 7; microkernel/mk_op.h, dt_mk_dtype): f32 in and out, bf16
 * arithmetic.  Its kernels are bf16's — the same register-kernel emitters
 * (rows f32_bf16/portable-generic, portable-avx2, avx512_bf16 and amx of
 * backends/backend.h map to dt_mk_ukr_bf16_portable, dt_mk_ukr_bf16_dp and
 * dt_mk_ukr_amx in microkernel/backend_emit.c), the same driver — under
 * bf16's types block followed by its own (template/types_f32bf16.h), whose f32 entry points
 * round the weights to bf16 when packing them and the activations once per
 * call. */
#include "microkernel/mk_op.h"

#include "dt_tpl_act_h.h"
#include "dt_tpl_driver_c.h"
#include "dt_tpl_prelude_h.h"
#include "dt_tpl_types_bf16_h.h"
#include "dt_tpl_types_f32bf16_h.h"

const dt_mk_dtype dt_mk_dtype_f32_bf16 = {
    .dtype = DT_DTYPE_F32_BF16,
    .prelude = dt_tpl_prelude_h,
    .types_base = dt_tpl_types_bf16_h, /* bf16's element types and helpers */
    .types = dt_tpl_types_f32bf16_h,
    .epilogue = dt_tpl_act_h,
    .driver = dt_tpl_driver_c,
    .qtail_col_bytes = 0,
    .packed_b_bytes = 2, /* the panels hold bf16 */
};
