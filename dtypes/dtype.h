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

/* The element types a dtype's tensors are stored in (dt_elem_size bytes). */
typedef enum dt_elem {
    DT_ELEM_F32 = 0, /* IEEE binary32 */
    DT_ELEM_BF16,    /* the upper half of a binary32 (uint16_t) */
    DT_ELEM_U8,      /* uint8_t, an affine-quantised value (scale, zero point) */
    DT_ELEM_S8,      /* int8_t, a symmetric quantised value (a scale) */
    DT_ELEM_COUNT
} dt_elem;

/* The quantisation parameters a dtype's kernels take, as bits of
 * dt_dtype_row.quant (the layout operands, packing and exports follow). */
#define DT_QUANT_B_SCALE_N (1u << 0) /* B: float scale_b[N], one per output column */
#define DT_QUANT_A_AFFINE (1u << 1)  /* A: one float scale_a and one int32 zp_a per call */

/* A dtype as data: one const row per dtype (dtype.c), everything the
 * shared layers ask of a dtype, so that none of them branches on one —
 * a new dtype is a row here, its back-end rows (backends/) and its
 * per-dtype files (microkernel/dtype_*.c, the ops' dtype masks), not an
 * edit of measure/, bench/, tuner/, cli/ or the operand maker. */
typedef struct dt_dtype_row {
    dt_dtype id;           /* its own index: dt_dtype_info(d)->id == d */
    const char *name;      /* "f32", "f32_bf16", ... (dt_dtype_name) */
    /* Its text beside an op in a name that pairs the two ("dense:bf16",
     * the cost models): "" for f32, the default every key omits. */
    const char *key;
    dt_dtype storage;      /* the dtype stored: itself, f32 for f32_bf16, ... */
    dt_dtype math;         /* the dtype whose arithmetic it runs: itself, bf16 for f32_bf16 */
    dt_elem a, b, c;       /* elements of A, of B as the caller stores it, of C */
    unsigned quant;        /* DT_QUANT_* bits: its quantisation parameters */
    /* The reference's tolerance factor for a sum over K (microkernel/
     * reference.h, dt_ref_tol_k): tol_per_k·K + tol_base units of f32's
     * epsilon times the sum of |terms|. */
    double tol_per_k, tol_base;
    /* The most operations (a multiply-add is 2) any CPU does per core and
     * cycle in this arithmetic: the ceiling of measure/trial.c's check that
     * a reported time is physically possible (dt_peak_ops_per_cycle). */
    double ops_per_cycle;
    /* The dtype (by name) of the problem `dtune bench`'s peers run for it:
     * w8a32's and math=bf16's peers run f32 (bench/bench.c). */
    const char *peer;
    /* The peak kind (peers/peer.h, by name) that is the ceiling of its
     * kernels on a CPU that runs it natively; on others its portable
     * rows' (backends/backend.h). */
    const char *peak;
} dt_dtype_row;

/* Dtype d's row; NULL for an out-of-range value. */
const dt_dtype_row *dt_dtype_info(dt_dtype d);
/* Bytes per element of e; 0 for an out-of-range value. */
int dt_elem_size(dt_elem e);
/* The largest ops_per_cycle of any row: the ceiling when the dtype is unknown. */
double dt_dtype_ops_per_cycle_max(void);

/* "f32", "bf16", "int8", "w8a32"; "?" for an out-of-range value. */
const char *dt_dtype_name(dt_dtype d);
/* Exact name to dtype: 0, or DT_EINVAL (no message) for an unknown name. */
int dt_dtype_from_name(const char *name, dt_dtype *out);
/* "f32, bf16, int8, w8a32": the names of the dtypes that are their own
 * storage (what a key's dtype= takes), for error messages. */
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
