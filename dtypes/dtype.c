/* Element types (dtypes/dtype.h). */
#include "dtypes/dtype.h"

#include <string.h>

#include "common/check.h"
#include "common/error.h"

/* Tolerances (in f32 epsilons of the sum of |terms|, microkernel/reference.h):
 * f32's FMA chain rounds once per step (K) and the epilogue a few times (8);
 * vdpbf16ps rounds after each product of a pair, twice f32's; int8's s32 sum
 * is exact, only the dequantisation rounds; math=bf16 runs bf16's kernels on
 * the rounded operands, so takes bf16's.
 *
 * Ceilings (ops per core and cycle, a multiply-add counted 2 as op->flops
 * counts, measure/trial.c): the widest unit of any CPU for the arithmetic —
 * f32 (and w8a32, f32 FMA after dequantising): 64 = two 512-bit FMA ports ×
 * 16 lanes × 2 (AVX-512 / AVX10; Arm SVE/SME cores of today do less); bf16:
 * 1024 = AMX-BF16 (TDPBF16PS: 16×16×32 multiply-adds in 16 cycles); int8:
 * 2048 = AMX-INT8 (TDPBUSD, twice bf16's).  The math=bf16 dtypes keep 2048,
 * the value the shared switch's default gave them before this table (more
 * generous than their bf16 arithmetic needs, so no honest time is refused).
 *
 * Peers: oneDNN has no weight-only int8 matmul (w8a32 runs f32 on the
 * dequantised weights) and 2.6 ignores fpmath_mode=bf16 for matmul
 * (math=bf16 runs f32: what an f32 model runs without bf16 math). */
#define TOL(per_k, base) .tol_per_k = per_k, .tol_base = base
static const dt_dtype_row rows[DT_DTYPE_COUNT] = {
    [DT_DTYPE_F32] = {.id = DT_DTYPE_F32, .name = "f32", .key = "", .storage = DT_DTYPE_F32,
                      .math = DT_DTYPE_F32, .a = DT_ELEM_F32, .b = DT_ELEM_F32,
                      .c = DT_ELEM_F32, .quant = 0, TOL(1, 8), .ops_per_cycle = 64,
                      .peer = "f32", .peak = "f32"},
    [DT_DTYPE_BF16] = {.id = DT_DTYPE_BF16, .name = "bf16", .key = "bf16",
                       .storage = DT_DTYPE_BF16, .math = DT_DTYPE_BF16, .a = DT_ELEM_BF16,
                       .b = DT_ELEM_BF16, .c = DT_ELEM_F32, .quant = 0, TOL(2, 16),
                       .ops_per_cycle = 1024, .peer = "bf16", .peak = "bf16"},
    [DT_DTYPE_INT8] = {.id = DT_DTYPE_INT8, .name = "int8", .key = "int8",
                       .storage = DT_DTYPE_INT8, .math = DT_DTYPE_INT8, .a = DT_ELEM_U8,
                       .b = DT_ELEM_S8, .c = DT_ELEM_F32,
                       .quant = DT_QUANT_B_SCALE_N | DT_QUANT_A_AFFINE, TOL(0, 8),
                       .ops_per_cycle = 2048, .peer = "int8", .peak = "int8"},
    [DT_DTYPE_W8A32] = {.id = DT_DTYPE_W8A32, .name = "w8a32", .key = "w8a32",
                        .storage = DT_DTYPE_W8A32, .math = DT_DTYPE_W8A32, .a = DT_ELEM_F32,
                        .b = DT_ELEM_S8, .c = DT_ELEM_F32, .quant = DT_QUANT_B_SCALE_N,
                        TOL(1, 8), .ops_per_cycle = 64, .peer = "f32", .peak = "f32"},
    [DT_DTYPE_F32_BF16] = {.id = DT_DTYPE_F32_BF16, .name = "f32_bf16", .key = "f32_bf16",
                           .storage = DT_DTYPE_F32, .math = DT_DTYPE_BF16, .a = DT_ELEM_F32,
                           .b = DT_ELEM_F32, .c = DT_ELEM_F32, .quant = 0, TOL(2, 16),
                           .ops_per_cycle = 2048, .peer = "f32", .peak = "bf16"},
    [DT_DTYPE_W8A32_BF16] = {.id = DT_DTYPE_W8A32_BF16, .name = "w8a32_bf16",
                             .key = "w8a32_bf16", .storage = DT_DTYPE_W8A32,
                             .math = DT_DTYPE_BF16, .a = DT_ELEM_F32, .b = DT_ELEM_S8,
                             .c = DT_ELEM_F32, .quant = DT_QUANT_B_SCALE_N, TOL(2, 16),
                             .ops_per_cycle = 2048, .peer = "f32", .peak = "bf16"},
};
#undef TOL

static const int elem_sizes[DT_ELEM_COUNT] = {
    [DT_ELEM_F32] = 4, [DT_ELEM_BF16] = 2, [DT_ELEM_U8] = 1, [DT_ELEM_S8] = 1};

static int valid(dt_dtype d) { return d >= 0 && d < DT_DTYPE_COUNT; }

/* What every reader of a row relies on (tests/test_dtype.c checks the
 * rest of the table): the slot is the row's own, and its storage and math
 * name rows that are their own storage and math. */
const dt_dtype_row *dt_dtype_info(dt_dtype d)
{
    if (!valid(d))
        return NULL;
    const dt_dtype_row *r = &rows[d];
    DT_ASSERT(r->id == d, "a dtype's row sits at its own index");
    DT_ASSERT(valid(r->storage) && rows[r->storage].storage == r->storage,
              "a dtype's storage dtype is its own storage");
    DT_ASSERT(valid(r->math) && rows[r->math].math == r->math,
              "a dtype's math dtype is its own arithmetic");
    return r;
}

int dt_elem_size(dt_elem e) { return e >= 0 && e < DT_ELEM_COUNT ? elem_sizes[e] : 0; }

double dt_dtype_ops_per_cycle_max(void)
{
    double m = 0;
    for (int d = 0; d < DT_DTYPE_COUNT; d++)
        if (rows[d].ops_per_cycle > m)
            m = rows[d].ops_per_cycle;
    return m;
}

const char *dt_dtype_name(dt_dtype d) { return valid(d) ? rows[d].name : "?"; }

int dt_dtype_from_name(const char *name, dt_dtype *out)
{
    for (int d = 0; name && d < DT_DTYPE_COUNT; d++)
        if (strcmp(name, rows[d].name) == 0) {
            *out = (dt_dtype)d;
            return 0;
        }
    return DT_EINVAL;
}

/* literals, so the strings need no storage of their own; tests/test_dtype.c
 * checks they list exactly the rows they describe */
const char *dt_dtype_names(void) { return "f32, bf16, int8, w8a32"; }

const char *dt_dtype_math_names(void) { return "bf16"; }

dt_dtype dt_dtype_storage(dt_dtype d) { return valid(d) ? rows[d].storage : d; }

const char *dt_dtype_math(dt_dtype d)
{
    return valid(d) && rows[d].math != d ? rows[rows[d].math].name : NULL;
}

int dt_dtype_math_known(const char *math)
{
    for (int d = 0; math && d < DT_DTYPE_COUNT; d++)
        if (dt_dtype_math((dt_dtype)d) && strcmp(dt_dtype_math((dt_dtype)d), math) == 0)
            return 1;
    return 0;
}

int dt_dtype_with_math(dt_dtype storage, const char *math, dt_dtype *out)
{
    for (int d = 0; math && d < DT_DTYPE_COUNT; d++) {
        const char *m = dt_dtype_math((dt_dtype)d);
        if (rows[d].storage == storage && m && strcmp(m, math) == 0) {
            *out = (dt_dtype)d;
            return 0;
        }
    }
    return DT_EINVAL;
}

int dt_dtype_a_size(dt_dtype d) { return valid(d) ? dt_elem_size(rows[d].a) : 0; }
int dt_dtype_b_size(dt_dtype d) { return valid(d) ? dt_elem_size(rows[d].b) : 0; }
int dt_dtype_c_size(dt_dtype d) { return valid(d) ? dt_elem_size(rows[d].c) : 0; }
int dt_dtype_quantized(dt_dtype d) { return valid(d) && (rows[d].quant & DT_QUANT_B_SCALE_N); }
int dt_dtype_a_quantized(dt_dtype d) { return valid(d) && (rows[d].quant & DT_QUANT_A_AFFINE); }
