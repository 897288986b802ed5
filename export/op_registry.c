/* The export layer's registry of (op, dtype) hooks (export_op.h): a new op
 * is a new file plus its lines here, a new dtype a row of data in its op's
 * file plus one line here. */
#include "export/export_op.h"

#include <pthread.h>

#include "common/check.h"

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

#define NREG ((int)(sizeof registry / sizeof registry[0]))

/* The (op, dtype) pairs are the ops' (ops/op.h): every pair an op declares
 * has exactly one export row, and every row is a declared pair.  Checked
 * once, at the first lookup. */
static void check_pairs(void)
{
    for (int i = 0; i < NREG; i++)
        DT_ASSERT(registry[i]->op &&
                      dt_op_check_dtype(registry[i]->op, registry[i]->dtype, NULL) == 0,
                  "an export row is an (op, dtype) pair its op declares");
    for (int o = 0; o < dt_op_count(); o++)
        for (int d = 0; d < DT_DTYPE_COUNT; d++) {
            if (dt_op_check_dtype(dt_op_at(o), (dt_dtype)d, NULL))
                continue;
            int n = 0;
            for (int i = 0; i < NREG; i++)
                n += registry[i]->op == dt_op_at(o) && (int)registry[i]->dtype == d;
            DT_ASSERT(n == 1, "every (op, dtype) an op declares has one export row");
        }
}

static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;

int dt_export_op_count(void)
{
    pthread_once(&pairs_once, check_pairs);
    return NREG;
}

const dt_export_op *dt_export_op_at(int i)
{
    return i >= 0 && i < dt_export_op_count() ? registry[i] : NULL;
}

const dt_export_op *dt_export_op_find(const dt_op_desc *op, dt_dtype dtype)
{
    pthread_once(&pairs_once, check_pairs);
    for (int i = 0; i < dt_export_op_count(); i++)
        if (registry[i]->op == op && registry[i]->dtype == dtype)
            return registry[i];
    return NULL;
}
