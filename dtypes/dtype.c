/* Element types (dtypes/dtype.h). */
#include "dtypes/dtype.h"

#include <string.h>

#include "common/error.h"

/* what each dtype computes: dtypes/dtype.h's head comment */
static const struct {
    const char *name;
    int a, b, c; /* bytes per element of A, B, C */
    int quantized;
    dt_dtype storage; /* the dtype stored (itself; f32 for f32_bf16, w8a32 for w8a32_bf16) */
    const char *math; /* the arithmetic when it is not the storage's, else NULL */
} dtypes[DT_DTYPE_COUNT] = {
    [DT_DTYPE_F32] = {"f32", 4, 4, 4, 0, DT_DTYPE_F32, NULL},
    [DT_DTYPE_BF16] = {"bf16", 2, 2, 4, 0, DT_DTYPE_BF16, NULL},
    [DT_DTYPE_INT8] = {"int8", 1, 1, 4, 1, DT_DTYPE_INT8, NULL},
    [DT_DTYPE_W8A32] = {"w8a32", 4, 1, 4, 1, DT_DTYPE_W8A32, NULL},
    [DT_DTYPE_F32_BF16] = {"f32_bf16", 4, 4, 4, 0, DT_DTYPE_F32, "bf16"},
    [DT_DTYPE_W8A32_BF16] = {"w8a32_bf16", 4, 1, 4, 1, DT_DTYPE_W8A32, "bf16"},
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

dt_dtype dt_dtype_storage(dt_dtype d) { return valid(d) ? dtypes[d].storage : d; }

const char *dt_dtype_math(dt_dtype d) { return valid(d) ? dtypes[d].math : NULL; }

int dt_dtype_math_known(const char *math)
{
    for (int d = 0; math && d < DT_DTYPE_COUNT; d++)
        if (dtypes[d].math && strcmp(dtypes[d].math, math) == 0)
            return 1;
    return 0;
}

const char *dt_dtype_math_names(void) { return "bf16"; }

int dt_dtype_with_math(dt_dtype storage, const char *math, dt_dtype *out)
{
    for (int d = 0; math && d < DT_DTYPE_COUNT; d++)
        if (dtypes[d].storage == storage && dtypes[d].math && strcmp(dtypes[d].math, math) == 0) {
            *out = (dt_dtype)d;
            return 0;
        }
    return DT_EINVAL;
}

int dt_dtype_a_size(dt_dtype d) { return valid(d) ? dtypes[d].a : 0; }
int dt_dtype_b_size(dt_dtype d) { return valid(d) ? dtypes[d].b : 0; }
int dt_dtype_c_size(dt_dtype d) { return valid(d) ? dtypes[d].c : 0; }
int dt_dtype_quantized(dt_dtype d) { return valid(d) ? dtypes[d].quantized : 0; }
int dt_dtype_a_quantized(dt_dtype d) { return d == DT_DTYPE_INT8; }
