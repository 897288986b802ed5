/* The op registry: each computation family (dense, batch_matmul, later
 * conv2d) is one dt_op_desc in its own file, listed once in op_registry.c.
 * Nothing outside an op's file knows its dims or attributes, so adding an op
 * touches no other op. */
#ifndef DT_SKETCH_OP_H
#define DT_SKETCH_OP_H

#include <stdint.h>

#include "common/error.h"

#define DT_MAX_DIMS 8
#define DT_MAX_ATTRS 4
#define DT_MAX_ATTR_VALUES 8

/* An enumerated attribute such as layout=NN|NT or epilogue=bias+gelu. */
typedef struct dt_attr_desc {
    const char *name;
    int nvalues;
    const char *values[DT_MAX_ATTR_VALUES];
    int default_index;
    int always_print; /* printed in keys even when it has the default value */
} dt_attr_desc;

typedef struct dt_op_desc {
    const char *name;
    const char *summary; /* one line for --help and docs */
    int ndims;
    const char *dims[DT_MAX_DIMS]; /* in canonical key order */
    int nattrs;
    dt_attr_desc attrs[DT_MAX_ATTRS];
    /* Useful floating-point operations for concrete dims (all >= 1). */
    double (*flops)(const int64_t *dims, const int *attrs);
    /* Checks that every tensor's element count and the flop count of these
     * dims fit in int64 (DT_EOVERFLOW with a message naming the product). */
    int (*check)(const int64_t *dims, const int *attrs, dt_err *e);
} dt_op_desc;

const dt_op_desc *dt_op_find(const char *name);
int dt_op_count(void);
const dt_op_desc *dt_op_at(int i);

/* Index of dim/attr `name` in op, or -1. */
int dt_op_dim_index(const dt_op_desc *op, const char *name);
int dt_op_attr_index(const dt_op_desc *op, const char *name);
/* Index of value in attr, or -1. */
int dt_attr_value_index(const dt_attr_desc *a, const char *value);

/* Checked product of n factors (helper for ops' check functions). */
int dt_checked_product(const int64_t *factors, int n, const char *what, int64_t *out, dt_err *e);

#endif
