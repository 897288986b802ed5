/* The export layer's registry of (op, dtype) hooks (export_op.h): a new op
 * is a new file plus its lines here, a new dtype a row of data in its op's
 * file plus one line here. */
#include "export/export_op.h"

extern const dt_export_op dt_export_op_dense_f32;
extern const dt_export_op dt_export_op_batch_matmul_f32;
extern const dt_export_op dt_export_op_dense_bf16;
extern const dt_export_op dt_export_op_dense_int8;
extern const dt_export_op dt_export_op_dense_w8a32;
extern const dt_export_op dt_export_op_dense_w8a32_bf16;
extern const dt_export_op dt_export_op_batch_matmul_bf16;
extern const dt_export_op dt_export_op_dense_f32_bf16;
extern const dt_export_op dt_export_op_conv2d_f32;
extern const dt_export_op dt_export_op_conv2d_bf16;
extern const dt_export_op dt_export_op_conv2d_int8;
extern const dt_export_op dt_export_op_conv2d_w8a32;

static const dt_export_op *const registry[] = {
    &dt_export_op_dense_f32,
    &dt_export_op_batch_matmul_f32,
    &dt_export_op_dense_bf16,
    &dt_export_op_dense_int8,
    &dt_export_op_dense_w8a32,
    &dt_export_op_dense_w8a32_bf16,
    &dt_export_op_batch_matmul_bf16,
    &dt_export_op_dense_f32_bf16,
    &dt_export_op_conv2d_f32,
    &dt_export_op_conv2d_bf16,
    &dt_export_op_conv2d_int8,
    &dt_export_op_conv2d_w8a32,
};

int dt_export_op_count(void) { return (int)(sizeof registry / sizeof registry[0]); }

const dt_export_op *dt_export_op_at(int i)
{
    return i >= 0 && i < dt_export_op_count() ? registry[i] : NULL;
}

const dt_export_op *dt_export_op_find(const dt_op_desc *op, dt_dtype dtype)
{
    for (int i = 0; i < dt_export_op_count(); i++)
        if (registry[i]->op == op && registry[i]->dtype == dtype)
            return registry[i];
    return NULL;
}
