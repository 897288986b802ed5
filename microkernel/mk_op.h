/* The micro-kernel layer's per-op hooks: one dt_mk_op per (op, dtype) in
 * its own file (microkernel/op_<name>.c), listed once in op_registry.c, and
 * one dt_mk_dtype per element type (microkernel/dtype_<name>.c).  Code
 * generation, the loader and the callers of a kernel reach an op only
 * through these, so a new op or dtype adds files and registry lines, not
 * branches (docs/architecture.md, "Ops and their hooks").
 *
 * A kernel's source (dt_codegen) is, in order:
 *   the annotation's #defines; the op block — for every op of the kernel's
 *   source group, `#define <selector> <1 for this op>` and its macros (0/1),
 *   then DT_BIAS and DT_ACT from the GEMM view; the dtype's prelude (its
 *   "@OP_MACROS@" replaced by the group's selectors and macros), types and
 *   epilogue; dtk_info; the back-end row's register kernel (dt_mk_backend,
 *   microkernel/backend_emit.c: emit_ukr); the pre-driver section of every
 *   op of the group that has one; the dtype's driver (with the constant
 *   weights' packing entry points when the view's B is constant,
 *   DT_CONST_B); the driver section of every op of the group.
 * Ops of one source group (group > 0) carry each other's selectors and
 * driver sections, each compiled only under its selector: that is how the
 * f32 ops' kernels have always been written, and their source hashes are
 * stored (the database, the build cache), so the group stays as it is.  A
 * new op or dtype takes group 0: its kernels hold only its own.
 *
 * Static, immutable data. */
#ifndef DT_MICROKERNEL_MK_OP_H
#define DT_MICROKERNEL_MK_OP_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "microkernel/loader.h"
#include "space/annotation.h"
#include "backends/backend.h"
#include "dtypes/dtype.h"
#include "ops/op.h"

#define DT_MK_MAX_MACROS 4

/* What every op of one dtype shares in its kernels. */
typedef struct dt_mk_dtype {
    dt_dtype dtype;
    const char *prelude;  /* back-end macros; "@OP_MACROS@" is filled in */
    const char *types;    /* element types, K group, entry-point names (template/types_*.h) */
    /* NULL, or a types block emitted before `types` (a dtype built on
     * another's: f32_bf16's on bf16's) */
    const char *types_base;
    /* NULL, or a types block emitted after `types` (w8a32_bf16: f32_bf16's
     * block, then its s8 weights' packing) */
    const char *types_extra;
    const char *epilogue; /* the vector activation dt_act, selected by DT_ACT */
    const char *driver;   /* packing, cache blocking, work items (template/driver.c) */
    /* The bytes per padded column after the packed panels, as its types
     * block defines them (DT_QTAIL_BYTES: int8 8, w8a32 4), for sizes known
     * without a built kernel (export).  The panels' K group is the back-end
     * row's (backends/backend.h, dt_backend.kg). */
    int qtail_col_bytes;
    /* Bytes of one packed B element when the panels hold another type than
     * the caller's B (f32_bf16: 2, f32 weights packed as bf16); 0: the
     * dtype's B size (dt_dtype_b_size). */
    int packed_b_bytes;
} dt_mk_dtype;

/* The code of one back-end row: its macro, intrinsics, emitter and types
 * block (backends/backend.h, dt_backend_code). */
typedef dt_backend_code dt_mk_backend;

/* The hooks of row b, or NULL (b NULL, or a row without code). */
const dt_mk_backend *dt_mk_backend_of(const dt_backend *b);

typedef struct dt_mk_op {
    const dt_op_desc *op;
    const dt_mk_dtype *backend; /* its dtype's back-end */
    int group;                  /* source group (see above), 0 for none */
    /* The sketches its kernels are built from: DT_SKETCH_BLOCKED (0) for
     * the GEMM view's (blocked and stream: one row per (op, dtype), built
     * as above), or an op's own sketch (DT_SKETCH_CHANNEL: at most one row
     * per (op, dtype, sketch)), whose kernel is, after the dtype's types and
     * epilogue and dtk_info, its driver section alone: no register kernel,
     * no dtype driver, no pre-driver section.  Its entry points are its own
     * (the loader tells the rows apart by them) and so is its packing. */
    dt_sketch_kind sketch;
    /* An own sketch's rows: 1 when a key's attribute values admit it (NULL:
     * every key); the tuner draws the sketch only where this says so. */
    int (*offers)(const int *attrs);
    /* An own sketch's rows, or NULL: the code it generates for annotation a
     * (VL floats a vector), emitted between its pre-driver section and its
     * driver (conv2d's channel sketch: its inside tiles). */
    void (*emit)(dt_strbuf *sb, const dt_annotation *a, int vl);
    /* ---- code generation ---- */
    const char *selector;       /* macro compiling its driver section: "DT_OP_<NAME>" */
    int nmacros;                /* further 0/1 macros of the op block, from the attributes */
    const char *macros[DT_MK_MAX_MACROS];
    int (*macro_value)(const int *attrs, int i);
    const char *driver;         /* its driver section: the entry points, under the selector */
    /* NULL, or a section emitted before the dtype's driver, under the
     * selector: an op with an implicit A (DT_IMPLICIT_A, one of its macros)
     * defines there the source of A's rows the driver gathers from */
    const char *driver_pre;
    /* its stream kernels' register kernel sums segments of A (emit.h,
     * dt_emit_ukr_signature's seg): an implicit A read in place */
    int segmented_a;
    /* ---- ABI ---- */
    int nsyms;                  /* entry points of its kernels; all exported = a kernel of it */
    const char *syms[DT_KERNEL_MAX_SYMS];
    void (*run)(const dt_kernel *k, const dt_gemm_args *a);
    /* The constant B's packing (ops with dt_gemm.b_const), else NULL: for
     * the problem g (its N and K; an op whose B is stored otherwise than
     * the view's N×K, such as a grouped convolution, reads g->dims and
     * g->attrs, and a g without them, g->op NULL, is its one-group case). */
    size_t (*packed_size)(const dt_kernel *k, const dt_gemm *g);
    void (*pack)(const dt_kernel *k, const dt_gemm *g, const void *B, const float *scale_b,
                 void *packed);
    /* NULL, or the bytes of the N×K constant B its kernels with annotation
     * a pack (their packed_size entry point's value) where the layout is
     * not the GEMM view's panels (an own sketch's): dt_mk_packed_bytes. */
    size_t (*packed_bytes)(const dt_annotation *a, int64_t N, int64_t K);
} dt_mk_op;

/* The K group of the packed layout of m's kernels with annotation a: the
 * back-end row's (dt_backend_of_ann(dtype, a)->kg: 1; bf16's vdpbf16ps
 * row 2, int8's vpdpbusd row 4).  Two kernels share a packing of constant
 * weights exactly when their NR and K group agree. */
int dt_mk_packed_kg(const dt_mk_op *m, const dt_annotation *a);
/* The K padding of that layout (the K group; a tile back-end's whole tiles
 * of K): kernels share a packing when NR, K group and padding agree. */
int dt_mk_packed_kpad(const dt_mk_op *m, const dt_annotation *a);
/* Bytes of the constant B (N×K) packed by a kernel of m with annotation a:
 * what its packed_size entry point returns, computed without building it. */
size_t dt_mk_packed_bytes(const dt_mk_op *m, const dt_annotation *a, int64_t N, int64_t K);

/* The hooks of (op, dtype) for the GEMM view's sketches, or NULL. */
const dt_mk_op *dt_mk_op_find(const dt_op_desc *op, dt_dtype dtype);
/* The hooks that build kernels of (op, dtype) with annotation a: the GEMM
 * view's row for blocked and stream, the op's own row for its own sketch;
 * NULL when there is none. */
const dt_mk_op *dt_mk_op_for(const dt_op_desc *op, dt_dtype dtype, const dt_annotation *a);
/* 1 when kernels of (op, dtype) with attribute values attrs can be built
 * with sketch s (blocked and stream: whenever the op has a row; an own
 * sketch: where its row offers it). */
int dt_mk_op_offers(const dt_op_desc *op, dt_dtype dtype, const int *attrs, dt_sketch_kind s);
int dt_mk_op_count(void);
const dt_mk_op *dt_mk_op_at(int i);

#endif
