/* f_adapt(shape, micro-kernel): the analytic part of the cost (DESIGN.md,
 * "cost"): predicted time = flops / (f_MK · f_adapt).  It is the product of
 * three factors in (0, 1], each following what the generated driver
 * (microkernel/template/driver.c) does on the concrete shape:
 *
 *   padding  useful / padded work of the register tiles (M to MR, N to NR;
 *            a convolution's stream and channel sketches pad M row by row)
 *   balance  work units / (max units on one thread · threads)
 *   packing  flops / (flops + DT_ADAPT_COPY_FLOPS · packed elements)
 *
 * Exact formulas: docs/cost-model.md. */
#ifndef DT_COSTMODEL_ADAPT_H
#define DT_COSTMODEL_ADAPT_H

#include <stdint.h>

#include "common/error.h"
#include "common/target.h"
#include "space/annotation.h"
#include "ops/op.h"

/* Time of copying one float while packing, in flops of the micro-kernel. */
#define DT_ADAPT_COPY_FLOPS 4.0

typedef struct dt_adapt {
    double padding;     /* (M·N) / (⌈M/MR⌉·MR · ⌈N/NR⌉·NR); per output row for a
                         * convolution's stream (dilation 1) and channel sketches */
    double balance;     /* units / (max units per thread · threads) */
    double packing;     /* flops / (flops + DT_ADAPT_COPY_FLOPS · copies) */
    double total;       /* padding · balance · packing, in (0, 1] */
    int threads;        /* threads the driver uses */
    int64_t units;      /* work units of the whole problem (strips, blocks, grid cells) */
    int64_t items;      /* parallel work items (batch · items per matrix) */
    double copies;      /* floats written by packing (A in blocked, a dynamic B) */
    double flops;       /* 2·batch·M·N·K */
} dt_adapt;

/* f_adapt of annotation a on a GEMM view with sizes (ops/op.h, dt_gemm:
 * the sizes by role, whether B is constant — prepacked, no copies — and
 * whether there is a batch dim, whose matrices the driver shares out).  t
 * supplies the thread count when a->threads <= 0 (its cores).  DT_EINVAL for
 * a NULL argument, a size < 1 or a malformed tile. */
int dt_f_adapt_gemm(const dt_gemm *g, const dt_annotation *a, const dt_target *t,
                    dt_adapt *out, dt_err *e);

/* The GEMM view of op with attribute values attrs (NULL: the defaults) and
 * the sizes of its concrete dims (op->ndims values), for dt_f_adapt_gemm.
 * DT_EINVAL for a dim < 1 or an op without a GEMM view. */
int dt_adapt_gemm_of(const dt_op_desc *op, const int *attrs, const int64_t *dims, dt_gemm *g,
                     dt_err *e);

/* dt_f_adapt_gemm of op's GEMM view with its default attributes (no
 * attribute changes what f_adapt uses) on op's concrete dims (op->ndims
 * values, >= 1, in the op's order).  DT_EINVAL also for an op without a GEMM
 * view or a dim < 1. */
int dt_f_adapt(const dt_op_desc *op, const int64_t *dims, const dt_annotation *a,
               const dt_target *t, dt_adapt *out, dt_err *e);

#endif
