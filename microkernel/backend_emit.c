/* The code of the back-end rows (backends/backend.h): per row, the macro its
 * templates are compiled under, whether it uses intrinsics, and its
 * register-kernel emitter (microkernel/dtype_*.c).  A new back-end is a row
 * of backends/backend.c, a row here and its emitter's file. */
#include "microkernel/emit.h"
#include "microkernel/mk_op.h"

#define GENERIC(fn) {.macro = "DT_ISA_GENERIC", .intrinsics = 0, .emit_ukr = fn}
#define AVX2(fn) {.macro = "DT_ISA_AVX2", .intrinsics = 1, .emit_ukr = fn}
#define AVX512(fn) {.macro = "DT_ISA_AVX512", .intrinsics = 1, .emit_ukr = fn}

static const dt_mk_backend hooks[DT_BACKEND_COUNT] = {
    [DT_BACKEND_F32_GENERIC] = GENERIC(dt_mk_ukr_f32),
    [DT_BACKEND_F32_AVX2] = AVX2(dt_mk_ukr_f32),
    [DT_BACKEND_F32_AVX512] = AVX512(dt_mk_ukr_f32),
    [DT_BACKEND_BF16_GENERIC] = GENERIC(dt_mk_ukr_bf16_portable),
    [DT_BACKEND_BF16_AVX2] = AVX2(dt_mk_ukr_bf16_portable),
    [DT_BACKEND_BF16_AVX512BF16] = AVX512(dt_mk_ukr_bf16_dp),
    [DT_BACKEND_INT8_GENERIC] = GENERIC(dt_mk_ukr_int8_portable),
    [DT_BACKEND_INT8_AVX2] = AVX2(dt_mk_ukr_int8_portable),
    [DT_BACKEND_INT8_AVX512VNNI] = AVX512(dt_mk_ukr_int8_dp),
    [DT_BACKEND_W8A32_GENERIC] = GENERIC(dt_mk_ukr_w8a32),
    [DT_BACKEND_W8A32_AVX2] = AVX2(dt_mk_ukr_w8a32),
    [DT_BACKEND_W8A32_AVX512] = AVX512(dt_mk_ukr_w8a32),
    /* the tiles' epilogue is AVX-512's (their types block: KG 2, 4) */
    [DT_BACKEND_BF16_AMX] = AVX512(dt_mk_ukr_amx),
    [DT_BACKEND_INT8_AMX] = AVX512(dt_mk_ukr_amx),
    /* math=bf16: bf16's emitters (its types block converts the f32 operands) */
    [DT_BACKEND_F32BF16_GENERIC] = GENERIC(dt_mk_ukr_bf16_portable),
    [DT_BACKEND_F32BF16_AVX2] = AVX2(dt_mk_ukr_bf16_portable),
    [DT_BACKEND_F32BF16_AVX512BF16] = AVX512(dt_mk_ukr_bf16_dp),
    [DT_BACKEND_F32BF16_AMX] = AVX512(dt_mk_ukr_amx),
    /* math=bf16 on w8a32: the same (its types block dequantizes when packing) */
    [DT_BACKEND_W8A32BF16_GENERIC] = GENERIC(dt_mk_ukr_bf16_portable),
    [DT_BACKEND_W8A32BF16_AVX2] = AVX2(dt_mk_ukr_bf16_portable),
    [DT_BACKEND_W8A32BF16_AVX512BF16] = AVX512(dt_mk_ukr_bf16_dp),
    [DT_BACKEND_W8A32BF16_AMX] = AVX512(dt_mk_ukr_amx),
};

const dt_mk_backend *dt_mk_backend_of(const dt_backend *b)
{
    if (!b || (unsigned)b->id >= DT_BACKEND_COUNT || !hooks[b->id].emit_ukr)
        return NULL;
    return &hooks[b->id];
}
