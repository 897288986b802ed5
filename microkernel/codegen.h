/* C code generation: one translation unit per micro-kernel (op + attributes
 * + annotation), exporting the op's ABI.  The generated part is the
 * register-blocked kernel dt_ukr() with MR, NR, the unroll and the prefetch
 * distance as literals; the driver around it (packing, cache blocking, the
 * parallel loop, boundary tiles) is microkernel/template/driver.c, selected
 * by macros, followed by the op's own driver section (its entry points,
 * microkernel/template/op_<name>.c).  Back-ends: AVX-512 and AVX2
 * intrinsics, GCC vector extensions.
 *
 * What is generated for an op is reached through its (op, dtype) hooks
 * (microkernel/mk_op.h); nothing here knows an op.  Every kernel exports
 *   const int dtk_abi_version;                      == DT_KERNEL_ABI
 *   const char dtk_info[];                          "<op> <attr>=<value>; <annotation>"
 * and its op's entry points (docs/microkernels.md, "ABI"). */
#ifndef DT_MICROKERNEL_CODEGEN_H
#define DT_MICROKERNEL_CODEGEN_H

#include <stddef.h>

#include "common/error.h"
#include "space/annotation.h"
#include "dtypes/dtype.h"
#include "ops/op.h"
#include "shape/workload.h"

#define DT_KERNEL_ABI 1

/* What a kernel computes: the op, its attribute values (a workload's op and
 * attrs; the dims do not matter) and the element type.  A zero dtype is f32,
 * so {.op = w->op} with the attrs copied is complete. */
typedef struct dt_kernel_op {
    const dt_op_desc *op;
    int attrs[DT_MAX_ATTRS];
    dt_dtype dtype;
} dt_kernel_op;

/* What the kernels of workload w compute: its op, attribute values and
 * dtype.  The one way to describe a workload's
 * kernels; nothing else fills a dt_kernel_op from a workload by hand. */
dt_kernel_op dt_kernel_op_of_workload(const dt_workload *w);

/* Generates the C source (malloc'ed, caller frees) of the micro-kernel.
 * The annotation must be valid (dt_annotation_validate); DT_EUNSUPPORTED for
 * an (op, dtype) without a generator. */
int dt_codegen(const dt_kernel_op *kop, const dt_annotation *a, char **source, dt_err *e);

/* The GEMM view of kop (dim roles and flags, no sizes): dt_op_gemm. */
int dt_kernel_op_gemm(const dt_kernel_op *kop, dt_gemm *g, dt_err *e);
/* The epilogue of kop: bias (0/1) and activation (DT_ACT_*, ops/op.h);
 * none for an op without a GEMM view. */
void dt_kernel_op_epilogue(const dt_kernel_op *kop, int *bias, int *act);

/* "<op> <attr>=<value> ..." description of kop (its dtype when not f32), for
 * logs, JSON and the kernels' dtk_info; DT_KOP_DESCRIBE_MAX bytes hold any
 * (conv2d's thirteen attributes and a dtype). */
#define DT_KOP_DESCRIBE_MAX 256
void dt_kernel_op_describe(const dt_kernel_op *kop, char *buf, size_t n);

/* The identity kop is stored with (db/db.h, dt_db_kernel.attrs): a canonical
 * JSON object naming every attribute of the op with its value, e.g.
 * {"epilogue":"bias+gelu"}.  malloc'ed; NULL when out of memory. */
char *dt_kernel_op_attrs_json(const dt_kernel_op *kop);
/* The dt_kernel_op of a kernels row: op and dtype by name (dtype NULL is
 * f32), attrs a JSON object (an attribute it leaves out has its default
 * value; NULL is "{}").  DT_EUNSUPPORTED for an unknown op or dtype,
 * DT_EINVAL for an attribute or value the op does not have. */
int dt_kernel_op_from_row(const char *op, const char *dtype, const char *attrs_json,
                          dt_kernel_op *kop, dt_err *e);

#endif
