/* A TensorProto as a dt_ox_tensor: dims, element count and, for the small
 * integer and float tensors shape arithmetic needs, the values
 * (onnx/read_internal.h).  The values come from raw_data (little-endian, as
 * ONNX stores it on every platform) or from the typed field ONNX assigns to
 * the element type. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/read_internal.h"

int dt_ox_type_values(int elem_type)
{
    switch (elem_type) {
    case DT_OX_UINT8:
    case DT_OX_INT8:
    case DT_OX_UINT16:
    case DT_OX_INT16:
    case DT_OX_INT32:
    case DT_OX_INT64:
    case DT_OX_BOOL:
    case DT_OX_UINT32:
    case DT_OX_UINT64:
        return 1;
    case DT_OX_FLOAT:
    case DT_OX_DOUBLE:
    case DT_OX_FLOAT16:
    case DT_OX_BFLOAT16:
        return 2;
    default:
        return 0;
    }
}

/* Bytes per element in raw_data (only for types with values). */
static size_t elem_size(int t)
{
    switch (t) {
    case DT_OX_UINT8:
    case DT_OX_INT8:
    case DT_OX_BOOL:
        return 1;
    case DT_OX_UINT16:
    case DT_OX_INT16:
    case DT_OX_FLOAT16:
    case DT_OX_BFLOAT16:
        return 2;
    case DT_OX_INT32:
    case DT_OX_UINT32:
    case DT_OX_FLOAT:
        return 4;
    default:
        return 8;
    }
}

static double half_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(man, -24); /* subnormal */
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp(man + 1024, exp - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_value(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* An element's bits (size bytes, or an integer field's value) as the value
 * of type t. */
static int64_t int_value(uint64_t bits, int t)
{
    switch (t) {
    case DT_OX_INT8:
        return (int8_t)(uint8_t)bits;
    case DT_OX_INT16:
        return (int16_t)(uint16_t)bits;
    case DT_OX_INT32:
        return (int32_t)(uint32_t)bits;
    case DT_OX_UINT8:
    case DT_OX_BOOL:
        return (uint8_t)bits;
    case DT_OX_UINT16:
        return (uint16_t)bits;
    case DT_OX_UINT32:
        return (uint32_t)bits;
    default: /* int64; uint64 above INT64_MAX wraps, which no shape uses */
        return (int64_t)bits;
    }
}

static double float_value(uint64_t bits, int t)
{
    switch (t) {
    case DT_OX_FLOAT: {
        uint32_t b = (uint32_t)bits;
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    case DT_OX_FLOAT16:
        return half_value((uint16_t)bits);
    case DT_OX_BFLOAT16:
        return bf16_value((uint16_t)bits);
    default: {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    }
}

/* The typed field ONNX stores type t's values in: its count, and the
 * element i's bits. */
typedef struct {
    const char *name;
    size_t n;
    const Onnx__TensorProto *t;
    int which; /* 0 none, 4 float_data, 5 int32_data, 7 int64_data, 10 double, 11 uint64 */
} typed_field;

static typed_field typed_for(const Onnx__TensorProto *t, int type)
{
    switch (type) {
    case DT_OX_FLOAT:
        return (typed_field){"float_data", t->n_float_data, t, 4};
    case DT_OX_DOUBLE:
        return (typed_field){"double_data", t->n_double_data, t, 10};
    case DT_OX_INT64:
        return (typed_field){"int64_data", t->n_int64_data, t, 7};
    case DT_OX_UINT32:
    case DT_OX_UINT64:
        return (typed_field){"uint64_data", t->n_uint64_data, t, 11};
    case DT_OX_INT32:
    case DT_OX_INT16:
    case DT_OX_INT8:
    case DT_OX_UINT16:
    case DT_OX_UINT8:
    case DT_OX_BOOL:
    case DT_OX_FLOAT16:  /* the half's bits in the low 16 */
    case DT_OX_BFLOAT16: /* likewise */
        return (typed_field){"int32_data", t->n_int32_data, t, 5};
    default:
        return (typed_field){"", 0, t, 0};
    }
}

static uint64_t typed_bits(const typed_field *f, size_t i)
{
    switch (f->which) {
    case 4: {
        uint32_t b;
        memcpy(&b, &f->t->float_data[i], sizeof b);
        return b;
    }
    case 5:
        return (uint32_t)f->t->int32_data[i];
    case 7:
        return (uint64_t)f->t->int64_data[i];
    case 10: {
        uint64_t b;
        memcpy(&b, &f->t->double_data[i], sizeof b);
        return b;
    }
    default:
        return f->t->uint64_data[i];
    }
}

/* Fills o's values when the payload holds them; a payload whose size does
 * not match the dims is bad input. */
static int read_values(const Onnx__TensorProto *t, const char *source, const char *where,
                       dt_ox_tensor *o, dt_err *e)
{
    int kind = dt_ox_type_values(o->elem_type);
    size_t n = (size_t)o->numel, size = elem_size(o->elem_type);
    typed_field f = typed_for(t, o->elem_type);
    const uint8_t *raw = t->has_raw_data ? t->raw_data.data : NULL;
    if (kind == 0 || o->numel > DT_OX_MAX_VALUES || (!t->has_raw_data && f.n == 0 && n > 0))
        return 0; /* no values kept, or none given (external data, or dropped) */
    if (t->has_raw_data && t->raw_data.len != n * size)
        return dt_errf(e, DT_EINVAL, "%s: %s: raw_data has %zu bytes; %zu elements of %s take %zu",
                       source, where, t->raw_data.len, n, dt_ox_type_name(o->elem_type), n * size);
    if (!t->has_raw_data && f.n != n)
        return dt_errf(e, DT_EINVAL, "%s: %s: %s has %zu values; its dims hold %zu", source, where,
                       f.name, f.n, n);
    if (kind == 1)
        o->ivals = malloc((n ? n : 1) * sizeof *o->ivals);
    else
        o->fvals = malloc((n ? n : 1) * sizeof *o->fvals);
    if (!o->ivals && !o->fvals)
        return dt_errf(e, DT_ENOMEM, "%s: out of memory", source);
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = 0;
        if (raw)
            for (size_t b = size; b-- > 0;) /* little-endian */
                bits = bits << 8 | raw[i * size + b];
        else
            bits = typed_bits(&f, i);
        if (kind == 1)
            o->ivals[i] = int_value(bits, o->elem_type);
        else
            o->fvals[i] = float_value(bits, o->elem_type);
    }
    o->has_values = 1;
    return 0;
}

int dt_ox_tensor_dims(const int64_t *dims, size_t n, const char *source, const char *where,
                      dt_ox_tensor *o, dt_err *e)
{
    if (n > DT_OX_MAX_RANK)
        return dt_errf(e, DT_EINVAL, "%s: %s: rank %zu exceeds the limit of %d", source, where, n,
                       DT_OX_MAX_RANK);
    int zero = 0;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0)
            return dt_errf(e, DT_EINVAL, "%s: %s: dim %zu is %" PRId64 "; dims must be >= 0",
                           source, where, i, dims[i]);
        zero |= dims[i] == 0;
    }
    int64_t numel = 1;
    for (size_t i = 0; i < n && !zero; i++)
        if (__builtin_mul_overflow(numel, dims[i], &numel)) {
            char list[DT_OX_MAX_RANK * 21 + 2] = "";
            for (size_t j = 0; j < n; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%" PRId64,
                         j ? "x" : "", dims[j]);
            return dt_errf(e, DT_EINVAL, "%s: %s: its element count (%s) overflows int64", source,
                           where, list);
        }
    o->dims = malloc((n ? n : 1) * sizeof *o->dims);
    if (!o->dims)
        return dt_errf(e, DT_ENOMEM, "%s: out of memory", source);
    if (n)
        memcpy(o->dims, dims, n * sizeof *dims);
    o->rank = (int)n;
    o->numel = zero ? 0 : numel;
    return 0;
}

int dt_ox_tensor_from_proto(const Onnx__TensorProto *t, const char *source, const char *where,
                            dt_ox_tensor *o, dt_err *e)
{
    o->name = strdup(t->name ? t->name : "");
    if (!o->name)
        return dt_errf(e, DT_ENOMEM, "%s: out of memory", source);
    o->elem_type = t->has_data_type ? t->data_type : DT_OX_UNDEFINED;
    int rc = dt_ox_tensor_dims(t->dims, t->n_dims, source, where, o, e);
    return rc ? rc : read_values(t, source, where, o, e);
}
