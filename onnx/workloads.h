/* Workload extraction: the GEMMs of a shape-propagated ONNX graph as dtune
 * ops, and what is left untuned (docs/onnx-import.md, "Patterns").
 *
 * Internal to onnx/: import.c turns the result into a model spec.  Every
 * node of the graph ends up either covered by an extracted op (the MatMul,
 * Gemm or MatMulInteger and what is fused into it: the bias Add, the
 * activation, the quantization around it, and the constants only it reads)
 * or counted in exactly one untuned entry, so
 *     g->nnodes == ntuned + sum(untuned[i].nodes).
 *
 * Ownership: a dt_ox_wl owns its ops' expressions and its untuned entries;
 * free it with dt_ox_wl_free (a caller may move the entries out, leaving
 * untuned NULL and nuntuned 0). */
#ifndef DT_ONNX_WORKLOADS_H
#define DT_ONNX_WORKLOADS_H

#include <stdint.h>

#include "common/error.h"
#include "onnx/graph.h"
#include "onnx/import.h"
#include "onnx/shape.h"
#include "dtypes/dtype.h"
#include "ops/op.h"

/* One extracted op: an op of the registry with its dims, its attribute
 * values and its dtype. */
typedef struct {
    int node;                /* the GEMM node: names the op in the spec and in messages */
    const dt_op_desc *op;    /* dense, batch_matmul or conv2d */
    dt_expr *dims[DT_MAX_DIMS]; /* op->ndims canonical exprs over the model variables (owned) */
    int attrs[DT_MAX_ATTRS]; /* attribute a's value as a workload holds it (an index, or the
                                number) when bit a of attrs_set is set (dt_ox_op_attr) */
    unsigned attrs_set;      /* else the attribute has its default */
    dt_dtype dtype;
    int nnodes;              /* graph nodes it covers, the GEMM node included */
    dt_expr *count;          /* times it runs per model run: NULL for once, else a canonical
                                expression over the model variables (a recurrent cell's
                                per-step product: seq; a Loop body's trip count) (owned) */
} dt_ox_op;

/* A node doing GEMM-like work (onnx/flops.h), tuned or not: what the
 * coverage of `dtune import` is counted over. */
typedef struct {
    int node;
    int covered;             /* an extracted op covers it */
    char *why;               /* not covered: the untuned listing's reason (owned) */
} dt_ox_gemm_node;

typedef struct {
    int nops;
    dt_ox_op *ops;           /* in node order */
    int ngemm;
    dt_ox_gemm_node *gemm;   /* in node order */
    int nuntuned;
    dt_ox_untuned *untuned;  /* by kind (compute first), then first appearance */
    int64_t ntuned;          /* nodes covered by ops */
} dt_ox_wl;

/* Extracts the ops of g (shapes from s).  Fails only on a graph the shape
 * propagation should have refused (a tensor without a shape: DT_EINVAL
 * naming the node), an expression that overflows (DT_EINVAL naming the
 * node) or DT_ENOMEM; a GEMM it cannot express becomes an untuned entry
 * saying why. */
int dt_ox_extract(const dt_ox_graph *g, const dt_ox_shapes *s, dt_ox_wl **out, dt_err *e);
void dt_ox_wl_free(dt_ox_wl *w);

/* Sets op's attribute `name` from its text ("bias+relu", "NT", "2"): 0, or
 * -1 when op has no such attribute or value (a bug of the matcher). */
int dt_ox_op_attr(dt_ox_op *op, const char *name, const char *text);
/* The value of op's attribute a: the one set, else the default. */
int dt_ox_op_attr_value(const dt_ox_op *op, int a);

#endif
