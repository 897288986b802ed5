/* One instruction-set variant of the epilogue's activations, for
 * peers/epilogue.c, which includes this once per variant after defining
 *   EPI_VF, EPI_VI    the variant's float and int32 vector types
 *   EPI_TARGET        its target attribute (empty for baseline x86-64)
 *   EPI_RELU, EPI_GELU, EPI_RELU6, EPI_HSWISH, EPI_EXP, EPI_EXP_POLY,
 *   EPI_RECIP, EPI_CLAMP6, EPI_CLAMP6H  the names given to the kernels'
 *                     dt_act (ReLU, GELU, ReLU6, HardSwish), dt_exp_neg,
 *                     dt_exp_poly, dt_recip and dt_clamp06 (once for ReLU6,
 *                     once for HardSwish)
 * It includes the micro-kernels' vector epilogue (microkernel/template/
 * act.h) under those names, and undefines everything it and the caller
 * defined.  No include guard: meant to be included several times. */
#define DT_INLINE static inline __attribute__((always_inline)) EPI_TARGET
#define vf EPI_VF
#define vx EPI_VF
#define vi EPI_VI
#define DT_ACT 1
#define dt_act EPI_RELU
#include "microkernel/template/act.h"
#undef dt_act
#undef DT_ACT
#define DT_ACT 2
#define dt_act EPI_GELU
#define dt_exp_neg EPI_EXP
#define dt_recip EPI_RECIP
#define dt_exp_poly EPI_EXP_POLY
#include "microkernel/template/act.h"
#undef dt_act
#undef dt_exp_neg
#undef dt_recip
#undef dt_exp_poly
#undef DT_ACT
#define DT_ACT 3
#define dt_act EPI_RELU6
#define dt_clamp06 EPI_CLAMP6
#include "microkernel/template/act.h"
#undef dt_act
#undef dt_clamp06
#undef DT_ACT
#define DT_ACT 4
#define dt_act EPI_HSWISH
#define dt_clamp06 EPI_CLAMP6H
#include "microkernel/template/act.h"
#undef dt_act
#undef dt_clamp06
#undef DT_ACT
#undef vf
#undef vx
#undef vi
#undef DT_INLINE
#undef EPI_VF
#undef EPI_VI
#undef EPI_TARGET
#undef EPI_RELU
#undef EPI_GELU
#undef EPI_RELU6
#undef EPI_HSWISH
#undef EPI_CLAMP6
#undef EPI_CLAMP6H
#undef EPI_EXP
#undef EPI_RECIP
#undef EPI_EXP_POLY
