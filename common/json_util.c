#include "common/json_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *dt_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

json_t *dt_json_num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

const char *dt_real_text(double v, char buf[32])
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return buf;
    }
    return buf; /* NaN: "nan" at any precision */
}
