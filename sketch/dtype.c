/* Element types (sketch/dtype.h). */
#include "sketch/dtype.h"

#include <string.h>

#include "common/error.h"

static const struct {
    const char *name;
    int a, b, c; /* bytes per element of A, B, C */
    int quantized;
    const char *summary;
} dtypes[DT_DTYPE_COUNT] = {
    [DT_DTYPE_F32] = {"f32", 4, 4, 4, 0, "f32 inputs and output, f32 FMA"},
    [DT_DTYPE_BF16] = {"bf16", 2, 2, 4, 0, "bf16 inputs, f32 accumulation and output"},
    [DT_DTYPE_INT8] = {"int8", 1, 1, 4, 1,
                       "u8 activations (scale, zero point), s8 weights (per-channel scales), "
                       "s32 accumulation, dequantized f32 output"},
    [DT_DTYPE_W8A32] = {"w8a32", 4, 1, 4, 1,
                        "weight-only int8: f32 activations, s8 weights (per-channel scales) "
                        "dequantized in registers, f32 output"},
};

static int valid(dt_dtype d) { return d >= 0 && d < DT_DTYPE_COUNT; }

const char *dt_dtype_name(dt_dtype d) { return valid(d) ? dtypes[d].name : "?"; }

int dt_dtype_from_name(const char *name, dt_dtype *out)
{
    for (int d = 0; name && d < DT_DTYPE_COUNT; d++)
        if (strcmp(name, dtypes[d].name) == 0) {
            *out = (dt_dtype)d;
            return 0;
        }
    return DT_EINVAL;
}

const char *dt_dtype_names(void) { return "f32, bf16, int8, w8a32"; }

const char *dt_dtype_summary(dt_dtype d) { return valid(d) ? dtypes[d].summary : "?"; }

int dt_dtype_a_size(dt_dtype d) { return valid(d) ? dtypes[d].a : 0; }
int dt_dtype_b_size(dt_dtype d) { return valid(d) ? dtypes[d].b : 0; }
int dt_dtype_c_size(dt_dtype d) { return valid(d) ? dtypes[d].c : 0; }
int dt_dtype_size(dt_dtype d) { return dt_dtype_a_size(d); }
int dt_dtype_quantized(dt_dtype d) { return valid(d) ? dtypes[d].quantized : 0; }
int dt_dtype_a_quantized(dt_dtype d) { return d == DT_DTYPE_INT8; }

int dt_dtype_native(dt_dtype d, const dt_target *t, const char **how)
{
    const char *dummy;
    if (!how)
        how = &dummy;
    switch (d) {
    case DT_DTYPE_BF16:
        if (t->isa >= DT_ISA_AVX512 && dt_target_has(t, DT_FEAT_AVX512_BF16) &&
            dt_target_has(t, DT_FEAT_AVX512BW) && dt_target_has(t, DT_FEAT_AVX512VL)) {
            *how = "avx512_bf16";
            return 1;
        }
        *how = t->isa < DT_ISA_AVX512 && dt_target_has(t, DT_FEAT_AVX512_BF16)
                   ? "portable (the isa in use is below avx512)"
                   : "portable (no avx512_bf16)";
        return 0;
    case DT_DTYPE_INT8:
        if (t->isa >= DT_ISA_AVX512 && dt_target_has(t, DT_FEAT_AVX512_VNNI) &&
            dt_target_has(t, DT_FEAT_AVX512BW)) {
            *how = "avx512_vnni";
            return 1;
        }
        /* AVX-VNNI (256-bit vpdpbusd) has no back-end yet: portable there too */
        *how = t->isa < DT_ISA_AVX512 && dt_target_has(t, DT_FEAT_AVX512_VNNI)
                   ? "portable (the isa in use is below avx512)"
               : dt_target_has(t, DT_FEAT_AVX_VNNI) ? "portable (avx_vnni back-end not written)"
                                                    : "portable (no avx512_vnni)";
        return 0;
    case DT_DTYPE_F32:
    case DT_DTYPE_W8A32:
        *how = dt_isa_name(t->isa);
        return 1;
    default:
        *how = "?";
        return 0;
    }
}

dt_target dt_dtype_target(dt_dtype d, const dt_target *t)
{
    dt_target out = *t;
    if (!dt_dtype_native(d, t, NULL))
        dt_target_set_isa(&out, DT_ISA_GENERIC);
    return out;
}
