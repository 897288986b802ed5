/* The export layer's per-op hooks: one dt_export_op per (op, dtype), in the
 * op's one file (export/op_<name>.c, the dtypes as data), listed once in
 * export/op_registry.c.  The rest of export/ is op- and dtype-agnostic: the
 * dims come from the op's description, the packing of constant weights from
 * its GEMM view (dt_gemm.b_const) and the packed sizes from the micro-kernel
 * layer (dt_mk_packed_bytes), and what differs per (op, dtype) — the entry
 * point's tensor parameters and their C types, NAME_pack's parameters, the
 * paragraph saying what it computes, and how it calls a kernel's entry
 * points (microkernel/op_<name>*.c) — from these hooks.
 *
 * Inside NAME's body the dims are `const int64_t dt_<dim>` (the op's dim
 * names) and kernel k's entry points are NAME_k<k>_<entry point>.
 *
 * Static, immutable data. */
#ifndef DT_EXPORT_EXPORT_OP_H
#define DT_EXPORT_EXPORT_OP_H

#include "common/strbuf.h"
#include "dtypes/dtype.h"
#include "ops/op.h"

struct dt_export_plan;

#define DT_EXPORT_MAX_PARAMS 8

typedef struct dt_export_op {
    const dt_op_desc *op;
    dt_dtype dtype;
    /* C names the op's exported functions take as tensor parameters (a
     * variable of any workload with one of these names, of any op, gets
     * "_var" appended, so a name never depends on the op) */
    const char *params[DT_EXPORT_MAX_PARAMS];
    /* The tensor parameters of NAME after the variables, without the ")". */
    void (*emit_params)(dt_strbuf *sb, const struct dt_export_plan *p);
    /* The comment's paragraph on what NAME computes, after the dims
     * (" *\n * ..." lines). */
    void (*emit_doc)(dt_strbuf *sb, const struct dt_export_plan *p);
    /* Kernel k's call in NAME's switch (one statement and its newline). */
    void (*emit_call)(dt_strbuf *sb, const struct dt_export_plan *p, int k);
    /* ---- constant weights (dt_gemm.b_const); unused otherwise ---- */
    /* NAME_pack's parameter list, e.g. "const float *W, float *packed". */
    const char *pack_params;
    /* The unit of the packing offsets written in the text: 4 (floats: f32,
     * whose text predates the other dtypes and stays as it was) or 1
     * (bytes).  The plan itself counts bytes. */
    int offset_unit;
    /* What a region holds after its panels (a comment fragment), or NULL. */
    const char *pack_tail;
    /* Region g's fill in NAME_pack (one statement and its newline): the
     * pack entry point of kernel p->pack[g].kernel at p->pack[g].offset. */
    void (*emit_pack)(dt_strbuf *sb, const struct dt_export_plan *p, int g);
    /* NULL, or why kernels of these attribute values are not exported (NULL:
     * they are): what the kernels do not compute alone, run from the host
     * (conv2d's transposed convolution, its phases). */
    const char *(*refuses)(const int *attrs);
} dt_export_op;

/* The hooks of (op, dtype), or NULL. */
const dt_export_op *dt_export_op_find(const dt_op_desc *op, dt_dtype dtype);
int dt_export_op_count(void);
const dt_export_op *dt_export_op_at(int i);

#endif
