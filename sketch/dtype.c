/* Element types (sketch/dtype.h). */
#include "sketch/dtype.h"

static const struct {
    const char *name;
    int size;
} dtypes[DT_DTYPE_COUNT] = {
    [DT_DTYPE_F32] = {"f32", 4},
};

const char *dt_dtype_name(dt_dtype d)
{
    return d >= 0 && d < DT_DTYPE_COUNT ? dtypes[d].name : "?";
}

int dt_dtype_size(dt_dtype d) { return d >= 0 && d < DT_DTYPE_COUNT ? dtypes[d].size : 0; }
