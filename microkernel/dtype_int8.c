/* The int8 dtype of the micro-kernels (microkernel/mk_op.h, dt_mk_dtype):
 * u8 activations × s8 weights, s32 accumulation (template/types_int8.h);
 * its register kernels are the back-ends' (backends/vector/emit_int8.c). */
#include "microkernel/mk_op.h"

#include "dt_tpl_act_h.h"
#include "dt_tpl_driver_c.h"
#include "dt_tpl_prelude_h.h"
#include "dt_tpl_types_int8_h.h"

const dt_mk_dtype dt_mk_dtype_int8 = {
    .dtype = DT_DTYPE_INT8,
    .prelude = dt_tpl_prelude_h,
    .types = dt_tpl_types_int8_h,
    .epilogue = dt_tpl_act_h,
    .driver = dt_tpl_driver_c,
    .qtail_col_bytes = 8, /* colsum int32 + scale_b float per padded column */
};
