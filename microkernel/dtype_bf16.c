/* The bf16 dtype of the micro-kernels (microkernel/mk_op.h, dt_mk_dtype):
 * A and B bf16, f32 accumulation, C f32 (template/types_bf16.h); its
 * register kernels are the back-ends' (backends/vector/emit_bf16.c). */
#include "microkernel/mk_op.h"

#include "dt_tpl_act_h.h"
#include "dt_tpl_driver_c.h"
#include "dt_tpl_prelude_h.h"
#include "dt_tpl_types_bf16_h.h"

const dt_mk_dtype dt_mk_dtype_bf16 = {
    .dtype = DT_DTYPE_BF16,
    .prelude = dt_tpl_prelude_h,
    .types = dt_tpl_types_bf16_h,
    .epilogue = dt_tpl_act_h,
    .driver = dt_tpl_driver_c,
    .qtail_col_bytes = 0,
};
