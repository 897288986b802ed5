/* ---- f32 element types (microkernel/template/types_f32.h) -----------------
 * What the driver and the op sections read from a dtype: element types, the
 * K group and the entry points' names (the f32 names carry no suffix). */
typedef float dt_ta;
typedef float dt_tb;
typedef float dt_tc;
#define KG 1
#define DT_TB_F32 1
#define DT_QUANT 0
#define DT_QTAIL_BYTES(n) 0
#define DT_RUN_QPARAMS
#define DT_RUN_QARGS
#define DT_PACK_QPARAMS
#define DT_PACK_QARGS
#define DT_FN_DENSE dtk_dense
#define DT_FN_PACK dtk_pack
#define DT_FN_PACKED_SIZE dtk_packed_size
#define DT_FN_BMM dtk_bmm
#define DT_FN_CONV2D dtk_conv2d

