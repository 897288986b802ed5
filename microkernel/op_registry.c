/* The micro-kernel layer's registry of (op, dtype) hooks (mk_op.h): a new
 * op or dtype is a new file plus one line here.  The order is the order of
 * the selectors and driver sections in a source group's kernels: append
 * only. */
#include "microkernel/mk_op.h"

extern const dt_mk_op dt_mk_op_dense_f32;
extern const dt_mk_op dt_mk_op_batch_matmul_f32;

static const dt_mk_op *const registry[] = {
    &dt_mk_op_dense_f32,
    &dt_mk_op_batch_matmul_f32,
};

int dt_mk_op_count(void) { return (int)(sizeof registry / sizeof registry[0]); }

const dt_mk_op *dt_mk_op_at(int i) { return i >= 0 && i < dt_mk_op_count() ? registry[i] : NULL; }

const dt_mk_op *dt_mk_op_find(const dt_op_desc *op, dt_dtype dtype)
{
    for (int i = 0; i < dt_mk_op_count(); i++)
        if (registry[i]->op == op && registry[i]->backend->dtype == dtype)
            return registry[i];
    return NULL;
}
