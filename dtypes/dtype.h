/* Element types.  A dtype is the second axis of every per-op hook table
 * (ops/op.h; microkernel/mk_op.h, export/export_op.h): each (op, dtype)
 * is one registry line of a layer, so a new dtype adds lines and files, not
 * branches.  A workload without a dtype is f32 (docs/workload-keys.md).
 *
 * A dtype names the whole precision recipe of a GEMM, not one tensor:
 *   f32    A, B, C f32; f32 FMA.
 *   bf16   A, B bf16; f32 accumulation; C f32.
 *   int8   A u8 with a scale and zero point, B s8 with per-output-channel
 *          (per-N) scales; s32 accumulation; C f32 = scale_a·scale_b[n]·
 *          (Σ (a - zp)·b), then bias and activation.
 *   w8a32  weight-only int8: A f32, B s8 with per-N scales, dequantized in
 *          registers; f32 accumulation; C f32.
 * The back-ends of each dtype, and which CPU features they need, are rows of
 * backends/backend.h; without its own back-end's features a dtype's kernels
 * use its portable row (correct on any x86-64/aarch64, only slower). */
#ifndef DT_DTYPES_DTYPE_H
#define DT_DTYPES_DTYPE_H

#include "common/target.h"

typedef enum dt_dtype {
    DT_DTYPE_F32 = 0,
    DT_DTYPE_BF16,
    DT_DTYPE_INT8,
    DT_DTYPE_W8A32,
    DT_DTYPE_F32_BF16,
    DT_DTYPE_W8A32_BF16,
    DT_DTYPE_COUNT
} dt_dtype;

/* "f32", "bf16", "int8", "w8a32"; "?" for an out-of-range value. */
const char *dt_dtype_name(dt_dtype d);
/* Exact name to dtype: 0, or DT_EINVAL (no message) for an unknown name. */
int dt_dtype_from_name(const char *name, dt_dtype *out);
/* "f32, bf16, int8, w8a32": every name, for error messages. */
const char *dt_dtype_names(void);

/* A dtype that is another dtype's storage with a different arithmetic
 * (f32_bf16: f32 stored, bf16 math): dt_dtype_storage gives the storage
 * dtype (d itself for the others) and dt_dtype_math the arithmetic's name
 * ("bf16"; NULL for a dtype whose arithmetic is its storage's).
 * dt_dtype_with_math finds the dtype storing `storage` with arithmetic
 * math: 0, or DT_EINVAL (no message) when there is none. */
dt_dtype dt_dtype_storage(dt_dtype d);
const char *dt_dtype_math(dt_dtype d);
/* Whether math names the arithmetic of some dtype ("bf16"), exactly; and
 * every such name, for error messages. */
int dt_dtype_math_known(const char *math);
const char *dt_dtype_math_names(void);
int dt_dtype_with_math(dt_dtype storage, const char *math, dt_dtype *out);

/* Bytes per element of A (activations), of B (weights / second operand) as
 * the caller stores it, and of C (output).  0 for an out-of-range value. */
int dt_dtype_a_size(dt_dtype d);
int dt_dtype_b_size(dt_dtype d);
int dt_dtype_c_size(dt_dtype d);
/* Whether the dtype carries quantization parameters: per-column weight
 * scales (int8, w8a32); _a: also A's scale and zero point, run-time
 * arguments of its kernels (int8). */
int dt_dtype_quantized(dt_dtype d);
int dt_dtype_a_quantized(dt_dtype d);

#endif
