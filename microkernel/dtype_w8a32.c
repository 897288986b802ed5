/* The w8a32 dtype of the micro-kernels (microkernel/mk_op.h, dt_mk_dtype):
 * weight-only int8 (template/types_w8a32.h); its register kernels are the
 * back-ends' (backends/vector/emit_w8a32.c). */
#include "microkernel/mk_op.h"

#include "dt_tpl_act_h.h"
#include "dt_tpl_driver_c.h"
#include "dt_tpl_prelude_h.h"
#include "dt_tpl_types_w8a32_h.h"

const dt_mk_dtype dt_mk_dtype_w8a32 = {
    .dtype = DT_DTYPE_W8A32,
    .prelude = dt_tpl_prelude_h,
    .types = dt_tpl_types_w8a32_h,
    .epilogue = dt_tpl_act_h,
    .driver = dt_tpl_driver_c,
    .qtail_col_bytes = 4,
};
