#include "ops/op.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const dt_op_desc dt_op_dense;
extern const dt_op_desc dt_op_batch_matmul;
extern const dt_op_desc dt_op_conv2d;

/* The one list of ops: a new op is a new file plus one line here. */
static const dt_op_desc *const registry[] = {
    &dt_op_dense,
    &dt_op_batch_matmul,
    &dt_op_conv2d,
};

_Static_assert(sizeof registry / sizeof registry[0] == DT_N_OPS,
               "DT_N_OPS (ops/op.h) is the registry's length");

int dt_op_count(void) { return (int)(sizeof registry / sizeof registry[0]); }

const dt_op_desc *dt_op_at(int i) { return (i >= 0 && i < dt_op_count()) ? registry[i] : NULL; }

const dt_op_desc *dt_op_find(const char *name)
{
    for (int i = 0; i < dt_op_count(); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

int dt_op_index(const dt_op_desc *op)
{
    for (int i = 0; i < dt_op_count(); i++)
        if (registry[i] == op)
            return i;
    return -1;
}

int dt_op_gemm(const dt_op_desc *op, const int *attrs, const int64_t *dims, dt_gemm *g,
               dt_err *e)
{
    memset(g, 0, sizeof *g);
    if (!op || !op->gemm)
        return dt_errf(e, DT_EUNSUPPORTED, "op %s is not a GEMM", op ? op->name : "(none)");
    int defaults[DT_MAX_ATTRS] = {0};
    if (!attrs) {
        for (int i = 0; i < op->nattrs; i++)
            defaults[i] = op->attrs[i].default_index;
        attrs = defaults;
    }
    op->gemm(attrs, dims, g);
    if (dims) {
        g->op = op;
        memcpy(g->dims, dims, (size_t)op->ndims * sizeof *dims);
        memcpy(g->attrs, attrs, (size_t)op->nattrs * sizeof *attrs);
    }
    return 0;
}

void dt_gemm_sizes_by_role(const int64_t *dims, dt_gemm *g)
{
    int64_t *size[DT_ROLE_COUNT] = {&g->batch, &g->M, &g->N, &g->K};
    for (int r = 0; r < DT_ROLE_COUNT; r++)
        *size[r] = g->dim[r] >= 0 ? dims[g->dim[r]] : 1;
}

int dt_op_next_attrs(const dt_op_desc *op, int *attrs)
{
    for (int i = op->nattrs - 1; i >= 0; i--) {
        if (op->attrs[i].integer) {
            attrs[i] = op->attrs[i].default_index;
            continue;
        }
        if (++attrs[i] < op->attrs[i].nvalues)
            return 1;
        attrs[i] = 0;
    }
    return 0;
}

int dt_op_dim_index(const dt_op_desc *op, const char *name)
{
    for (int i = 0; i < op->ndims; i++)
        if (strcmp(op->dims[i], name) == 0)
            return i;
    return -1;
}

int dt_op_check_dtype(const dt_op_desc *op, dt_dtype d, dt_err *e)
{
    unsigned mask = op->dtypes | DT_DTYPE_BIT(DT_DTYPE_F32);
    if (d >= 0 && d < DT_DTYPE_COUNT && (mask & DT_DTYPE_BIT(d)))
        return 0;
    char have[128] = "";
    for (int i = 0; i < DT_DTYPE_COUNT; i++)
        if (mask & DT_DTYPE_BIT(i)) {
            strncat(have, have[0] ? ", " : "", sizeof have - strlen(have) - 1);
            strncat(have, dt_dtype_name((dt_dtype)i), sizeof have - strlen(have) - 1);
        }
    return dt_errf(e, DT_EINVAL, "dtype %s is not available for %s (it has %s)",
                   dt_dtype_name(d), op->name, have);
}

int dt_op_attr_index(const dt_op_desc *op, const char *name)
{
    for (int i = 0; i < op->nattrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0)
            return i;
    return -1;
}

int dt_attr_value_index(const dt_attr_desc *a, const char *value)
{
    for (int i = 0; i < a->nvalues; i++)
        if (strcmp(a->values[i], value) == 0)
            return i;
    return -1;
}

int dt_attr_parse(const dt_attr_desc *a, const char *text, int *value)
{
    if (!a->integer) {
        int i = dt_attr_value_index(a, text);
        if (i < 0)
            return -1;
        *value = i;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || !isdigit((unsigned char)text[text[0] == '-']) ||
        v < a->min || v > a->max)
        return -1;
    *value = (int)v;
    return 0;
}

int dt_attr_parse_json(const dt_attr_desc *a, const json_t *v, int *value)
{
    if (json_is_string(v))
        return dt_attr_parse(a, json_string_value(v), value);
    if (!a->integer || !json_is_integer(v))
        return -1;
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    return dt_attr_parse(a, num, value);
}

const char *dt_attr_text(const dt_attr_desc *a, int v, char *buf)
{
    if (!a->integer)
        return v >= 0 && v < a->nvalues ? a->values[v] : "?";
    snprintf(buf, 16, "%d", v);
    return buf;
}

void dt_attr_allowed(const dt_attr_desc *a, char *buf, size_t n)
{
    if (a->integer) {
        snprintf(buf, n, "an integer in %d..%d", a->min, a->max);
        return;
    }
    size_t len = (size_t)snprintf(buf, n, "one of ");
    for (int i = 0; i < a->nvalues && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", a->values[i]);
}

int dt_checked_product(const int64_t *factors, int n, const char *what, int64_t *out, dt_err *e)
{
    int64_t acc = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(acc, factors[i], &acc))
            return dt_errf(e, DT_EOVERFLOW, "%s overflows int64", what);
    *out = acc;
    return 0;
}
