/* C code generation: one translation unit per micro-kernel (op + attributes
 * + annotation), exporting the ABI below.  The generated part is the
 * register-blocked kernel dt_ukr() with MR, NR, the unroll and the prefetch
 * distance as literals; the driver around it (packing, cache blocking, the
 * parallel loop, boundary tiles) is microkernel/template/driver.c, selected
 * by macros.  Back-ends: AVX-512 and AVX2 intrinsics, GCC vector extensions.
 *
 * ABI of every kernel (see docs/microkernels.md):
 *   const int dtk_abi_version;                      == DT_KERNEL_ABI
 *   dense:  size_t dtk_packed_size(int64_t N, int64_t K);
 *           void   dtk_pack(int64_t N, int64_t K, const float *W, float *packed);
 *           void   dtk_dense(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
 *                            const float *packed, const float *bias, float *Y, int64_t ldy,
 *                            int nthreads);
 *   batch_matmul:
 *           void   dtk_bmm(int64_t batch, int64_t M, int64_t N, int64_t K,
 *                          const float *A, int64_t lda, int64_t sa,
 *                          const float *B, int64_t ldb, int64_t sb,
 *                          float *C, int64_t ldc, int64_t sc, int nthreads);
 * nthreads <= 0 means the annotation's thread count. */
#ifndef DT_MICROKERNEL_CODEGEN_H
#define DT_MICROKERNEL_CODEGEN_H

#include "common/error.h"
#include "sketch/annotation.h"
#include "sketch/op.h"

#define DT_KERNEL_ABI 1

/* What a kernel computes: the op and its attribute values (a workload's op
 * and attrs; the dims do not matter). */
typedef struct dt_kernel_op {
    const dt_op_desc *op;
    int attrs[DT_MAX_ATTRS];
} dt_kernel_op;

/* Generates the C source (malloc'ed, caller frees) of the micro-kernel.
 * The annotation must be valid (dt_annotation_validate); DT_EUNSUPPORTED for
 * an op without a generator. */
int dt_codegen(const dt_kernel_op *kop, const dt_annotation *a, char **source, dt_err *e);

enum { DT_ACT_NONE = 0, DT_ACT_RELU = 1, DT_ACT_GELU = 2 };
/* The epilogue of kop: bias (0/1) and activation (DT_ACT_*); none for ops
 * without an epilogue attribute. */
void dt_kernel_op_epilogue(const dt_kernel_op *kop, int *bias, int *act);
int dt_kernel_op_is_dense(const dt_kernel_op *kop);
/* batch_matmul with layout NT. */
int dt_kernel_op_layout_nt(const dt_kernel_op *kop);

/* "dense epilogue=bias+gelu" style description of kop, for logs and JSON. */
void dt_kernel_op_describe(const dt_kernel_op *kop, char *buf, size_t n);

#endif
