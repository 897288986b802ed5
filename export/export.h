/* `dtune export`: one self-contained C file (plus its header) for a tuned
 * workload: every micro-kernel its dispatch table selects, the weight
 * packing, and one entry point that dispatches any shape with nested ifs over
 * the shape ranges (the nearest range's kernel beyond them: extrapolation).
 * The output compiles with plain `cc -O3 -march=native -fopenmp` and needs no
 * dtune header or library.  NAME (from the output path) is the entry point:
 *   void NAME(<the workload's variables as int64_t>, <the op's tensors>);
 * and, for an op with constant weights (B of its GEMM view),
 *   size_t NAME_packed_size(void);
 *   void   NAME_pack(<the weights in the dtype's B type>[, scale_b], packed);
 * (f32: NAME_pack(const float *W, float *packed)).  Each (op, dtype)'s
 * tensors and their C types are its export hooks' (export/export_op.h,
 * export/op_<name>*.c), documented in docs/export.md ("ABI", a table per
 * dtype) and in the generated header.
 *
 * Ownership: every pointer argument is borrowed. */
#ifndef DT_EXPORT_EXPORT_H
#define DT_EXPORT_EXPORT_H

#include "common/error.h"
#include "db/db.h"

#include <jansson.h>

#include <stdint.h>

typedef struct dt_export_opts {
    const char *workload_key; /* any spelling of the key; canonicalised */
    const char *target_key;   /* NULL: the machine this runs on */
    int threads;              /* 0: the highest thread count with a schedule */
    const char *name;         /* C identifier; NULL: the basename of out_c_path without ".c" */
} dt_export_opts;

/* Writes out_c_path (…/NAME.c) and the header next to it (…/NAME.h).
 * DT_ENOTFOUND when the workload, target or schedule is missing; DT_EINVAL
 * for a name that is not a C identifier; DT_EIO when a file cannot be
 * written (no partial file is left behind). */
int dt_export_write(dt_db *db, const dt_export_opts *o, const char *out_c_path, dt_err *e);

/* dt_export_write, and when info is not NULL, *info (the caller's reference)
 * says what was written: {"name", "c", "h", "workload", "dtype", "target",
 * "threads", "packed_bytes" (constant weights; else null), "kernels":
 * [{"index", "id", "annotation", "pack_offset_bytes" (constant weights),
 * "pack_offset_floats" (constant f32 weights only)}], "ranges": [{"shape_lo",
 * "shape_hi", "kernel_id", "kernel" (index)}]}. */
int dt_export_write_info(dt_db *db, const dt_export_opts *o, const char *out_c_path,
                         json_t **info, dt_err *e);

/* The C source of kernel kernel_id as stored (regenerated from its op and
 * annotation: the translation unit the tuner built and measured), for
 * `GET /v1/kernels/{id}/source` and dtune_kernel_source.  *src is
 * malloc'ed; DT_ENOTFOUND when there is no such kernel. */
int dt_export_kernel_source(dt_db *db, int64_t kernel_id, char **src, dt_err *e);

#endif
