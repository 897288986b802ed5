/* Element types.  A dtype is the second axis of every per-op hook table
 * (sketch/op.h; microkernel/mk_op.h, export/export_op.h): each (op, dtype)
 * is one registry line of a layer, so a new dtype adds lines and files, not
 * branches.  Only f32 exists today; a workload without a dtype is f32. */
#ifndef DT_SKETCH_DTYPE_H
#define DT_SKETCH_DTYPE_H

typedef enum dt_dtype { DT_DTYPE_F32 = 0, DT_DTYPE_COUNT } dt_dtype;

/* "f32"; "?" for an out-of-range value. */
const char *dt_dtype_name(dt_dtype d);
/* Bytes per element (4 for f32); 0 for an out-of-range value. */
int dt_dtype_size(dt_dtype d);

#endif
