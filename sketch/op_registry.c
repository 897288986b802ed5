#include "sketch/op.h"

#include <stdio.h>
#include <string.h>

extern const dt_op_desc dt_op_dense;
extern const dt_op_desc dt_op_batch_matmul;

/* The one list of ops: a new op is a new file plus one line here. */
static const dt_op_desc *const registry[] = {
    &dt_op_dense,
    &dt_op_batch_matmul,
};

int dt_op_count(void) { return (int)(sizeof registry / sizeof registry[0]); }

const dt_op_desc *dt_op_at(int i) { return (i >= 0 && i < dt_op_count()) ? registry[i] : NULL; }

const dt_op_desc *dt_op_find(const char *name)
{
    for (int i = 0; i < dt_op_count(); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

int dt_op_dim_index(const dt_op_desc *op, const char *name)
{
    for (int i = 0; i < op->ndims; i++)
        if (strcmp(op->dims[i], name) == 0)
            return i;
    return -1;
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

int dt_checked_product(const int64_t *factors, int n, const char *what, int64_t *out, dt_err *e)
{
    int64_t acc = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(acc, factors[i], &acc))
            return dt_errf(e, DT_EOVERFLOW, "%s overflows int64", what);
    *out = acc;
    return 0;
}
