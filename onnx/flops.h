/* The GEMM-like work of an ONNX node: the multiply-adds of MatMul, Gemm,
 * Conv, ConvTranspose, the recurrent cells, Einsum and their quantized and
 * contrib forms, counted from the node's definition and its propagated
 * shapes (never from what dtune made of it), so that `dtune import` can say
 * which share of a model's GEMM FLOPs its tuned workloads hold
 * (docs/onnx-import.md, "Coverage").  Internal to onnx/.
 *
 * The FLOPs of a node are 2 × scale × the product of factors: scale a
 * constant, each factor a dim expression over the model variables (owned by
 * the shapes), evaluated per shape with exact integer dims. */
#ifndef DT_ONNX_FLOPS_H
#define DT_ONNX_FLOPS_H

#include "common/error.h"
#include "onnx/graph.h"
#include "onnx/shape.h"

#define DT_OX_FLOPS_MAX_FACTORS (2 * DT_OX_MAX_RANK + 4)

typedef struct {
    double scale;                                 /* constant multiply-adds per factor product */
    int n;
    const dt_expr *f[DT_OX_FLOPS_MAX_FACTORS];   /* borrowed from the shapes */
} dt_ox_flops;

/* 1 when node n's op type does GEMM-like work (whatever dtune makes of it). */
int dt_ox_gemm_like(const dt_ox_node *n);

/* The multiply-adds of GEMM-like node i: 1 and *out set when its shapes
 * give them, 0 when they cannot be counted (shapes unknown, an Einsum
 * equation dtune cannot read, a contrib op without a formula here). */
int dt_ox_node_flops(const dt_ox_graph *g, const dt_ox_shapes *s, int i, dt_ox_flops *out);

/* 2 × multiply-adds at one shape: vals[k] is the value of variable names[k]
 * (k < n); DT_EINVAL when a factor uses another variable or is below 0. */
int dt_ox_flops_eval(const dt_ox_flops *f, const char *const *names, const int64_t *vals, int n,
                     double *out, dt_err *e);

#endif
