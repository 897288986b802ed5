/* The micro-kernel layer's registry of (op, dtype) hooks (mk_op.h): a new
 * op or dtype is a new file plus one line here.  The order is the order of
 * the selectors and driver sections in a source group's kernels: append
 * only (a group 0 op may go anywhere: it shares no kernel) — and the order
 * the loader tries them in (first match). */
#include "microkernel/mk_op.h"

#include <pthread.h>
#include <string.h>

#include "common/check.h"

extern const dt_mk_op dt_mk_op_dense_f32;
extern const dt_mk_op dt_mk_op_batch_matmul_f32;
extern const dt_mk_op dt_mk_op_dense_bf16;
extern const dt_mk_op dt_mk_op_batch_matmul_bf16;
extern const dt_mk_op dt_mk_op_dense_w8a32;
extern const dt_mk_op dt_mk_op_dense_int8;
extern const dt_mk_op dt_mk_op_dense_f32_bf16;
extern const dt_mk_op dt_mk_op_dense_w8a32_bf16;
extern const dt_mk_op dt_mk_op_conv2d_f32;
extern const dt_mk_op dt_mk_op_conv2d_bf16;
extern const dt_mk_op dt_mk_op_conv2d_int8;
extern const dt_mk_op dt_mk_op_conv2d_w8a32;
extern const dt_mk_op dt_mk_op_conv2d_channel_f32;
extern const dt_mk_op dt_mk_op_conv2d_channel_bf16;
extern const dt_mk_op dt_mk_op_conv2d_channel_int8;
extern const dt_mk_op dt_mk_op_conv2d_channel_w8a32;

static const dt_mk_op *const registry[] = {
    &dt_mk_op_dense_f32,
    &dt_mk_op_batch_matmul_f32,
    &dt_mk_op_dense_bf16,
    &dt_mk_op_batch_matmul_bf16,
    &dt_mk_op_dense_w8a32,
    &dt_mk_op_dense_int8,
    /* before f32_bf16: its kernels carry f32_bf16's entry points too (its
     * types block is built on f32_bf16's), and the loader binds a kernel to
     * the first op whose entry points all resolve; an f32_bf16 kernel lacks
     * dtk_pack_w8bf16.  Group 0 ops: the order changes no kernel's text. */
    &dt_mk_op_dense_w8a32_bf16,
    &dt_mk_op_dense_f32_bf16,
    &dt_mk_op_conv2d_f32,
    &dt_mk_op_conv2d_bf16,
    &dt_mk_op_conv2d_int8,
    &dt_mk_op_conv2d_w8a32,
    /* conv2d's own sketch (channel vectors): entry points of their own */
    &dt_mk_op_conv2d_channel_f32,
    &dt_mk_op_conv2d_channel_bf16,
    &dt_mk_op_conv2d_channel_int8,
    &dt_mk_op_conv2d_channel_w8a32,
};

#define NREG ((int)(sizeof registry / sizeof registry[0]))

/* The (op, dtype) pairs are the ops' (ops/op.h: each op's dtypes): every
 * pair an op declares has exactly one row here, every row is a declared
 * pair, and its dtype runs on some back-end row with code.  Checked once,
 * at the first lookup. */
static void check_pairs(void)
{
    for (int i = 0; i < NREG; i++) {
        const dt_mk_op *m = registry[i];
        DT_ASSERT(m->op && m->backend && m->selector && m->driver && m->run,
                  "an (op, dtype) row has its op, dtype, selector, driver and run");
        DT_ASSERT(dt_op_check_dtype(m->op, m->backend->dtype, NULL) == 0,
                  "a micro-kernel row is an (op, dtype) pair its op declares");
        DT_ASSERT(m->nsyms >= 1 && m->nsyms <= DT_KERNEL_MAX_SYMS, "a row binds 1..max entry points");
        int runs = 0;
        for (int b = 0; b < dt_backend_count(); b++)
            runs += dt_backend_at(b)->dtype == m->backend->dtype &&
                    dt_backend_at(b)->code.emit_ukr != NULL;
        DT_ASSERT(runs > 0, "a row's dtype has a back-end row with an emitter");
        DT_ASSERT(m->sketch == DT_SKETCH_BLOCKED ||
                      (m->sketch >= DT_SKETCH_COUNT && m->sketch < DT_SKETCH_ALL),
                  "a row builds the GEMM view's sketches or one own sketch");
        DT_ASSERT(m->sketch != DT_SKETCH_BLOCKED || !m->offers,
                  "the GEMM view's sketches are offered to every key");
        for (int j = 0; j < i; j++) {
            DT_ASSERT(registry[j]->op != m->op || registry[j]->backend != m->backend ||
                          registry[j]->sketch != m->sketch,
                      "one row per (op, dtype, sketch)");
            for (int s = 0; s < m->nsyms; s++)
                DT_ASSERT(strcmp(registry[j]->syms[0], m->syms[s]) != 0 ||
                              registry[j]->backend != m->backend || m->sketch == registry[j]->sketch,
                          "an own sketch's row has entry points of its own");
        }
    }
    for (int o = 0; o < dt_op_count(); o++)
        for (int d = 0; d < DT_DTYPE_COUNT; d++) {
            if (dt_op_check_dtype(dt_op_at(o), (dt_dtype)d, NULL))
                continue;
            int n = 0;
            for (int i = 0; i < NREG; i++)
                n += registry[i]->op == dt_op_at(o) && (int)registry[i]->backend->dtype == d &&
                     registry[i]->sketch == DT_SKETCH_BLOCKED;
            DT_ASSERT(n == 1, "every (op, dtype) an op declares has one micro-kernel row");
        }
}

static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;

int dt_mk_op_count(void)
{
    pthread_once(&pairs_once, check_pairs);
    return NREG;
}

const dt_mk_op *dt_mk_op_at(int i) { return i >= 0 && i < dt_mk_op_count() ? registry[i] : NULL; }

const dt_mk_op *dt_mk_op_find(const dt_op_desc *op, dt_dtype dtype)
{
    pthread_once(&pairs_once, check_pairs);
    for (int i = 0; i < dt_mk_op_count(); i++)
        if (registry[i]->op == op && registry[i]->backend->dtype == dtype &&
            registry[i]->sketch == DT_SKETCH_BLOCKED)
            return registry[i];
    return NULL;
}

const dt_mk_op *dt_mk_op_for(const dt_op_desc *op, dt_dtype dtype, const dt_annotation *a)
{
    const dt_sketch_kind family = a->sketch < DT_SKETCH_COUNT ? DT_SKETCH_BLOCKED : a->sketch;
    for (int i = 0; i < dt_mk_op_count(); i++)
        if (registry[i]->op == op && registry[i]->backend->dtype == dtype &&
            registry[i]->sketch == family)
            return registry[i];
    return NULL;
}

int dt_mk_op_offers(const dt_op_desc *op, dt_dtype dtype, const int *attrs, dt_sketch_kind s)
{
    const dt_annotation a = {.sketch = s};
    const dt_mk_op *m = (unsigned)s < DT_SKETCH_ALL ? dt_mk_op_for(op, dtype, &a) : NULL;
    return m && (!m->offers || m->offers(attrs));
}

int dt_mk_packed_kg(const dt_mk_op *m, const dt_annotation *a)
{
    const dt_backend *b = dt_backend_of_ann(m->backend->dtype, a);
    return b ? b->kg : 1;
}

int dt_mk_packed_kpad(const dt_mk_op *m, const dt_annotation *a)
{
    const dt_backend *b = dt_backend_of_ann(m->backend->dtype, a);
    return b ? dt_backend_kpad(b) : 1;
}

size_t dt_mk_packed_bytes(const dt_mk_op *m, const dt_annotation *a, int64_t N, int64_t K)
{
    if (m->packed_bytes)
        return m->packed_bytes(a, N, K);
    int kpad = dt_mk_packed_kpad(m, a);
    size_t cols = (size_t)((N + a->nr - 1) / a->nr) * (size_t)a->nr;
    size_t kp = (size_t)((K + kpad - 1) / kpad * kpad);
    int bs = m->backend->packed_b_bytes ? m->backend->packed_b_bytes
                                        : dt_dtype_b_size(m->backend->dtype);
    return cols * kp * (size_t)bs +
           cols * (size_t)m->backend->qtail_col_bytes;
}

const dt_mk_backend *dt_mk_backend_of(const dt_backend *b)
{
    return b && b->code.emit_ukr ? &b->code : NULL;
}
