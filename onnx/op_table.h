/* The ONNX op types dtune knows, in one table (onnx/op_table.c; internal to
 * onnx/): per op type of the default domain and of com.microsoft, its shape
 * rule (onnx/shape_ops.h) or why it has none, and the kind the untuned
 * listing (onnx/workloads_untuned.c) gives a node of it.  Adding an op is
 * adding its row. */
#ifndef DT_ONNX_OP_TABLE_H
#define DT_ONNX_OP_TABLE_H

struct ox_node; /* onnx/shape_internal.h */

/* A shape rule: sets the outputs of the node c runs (onnx/shape_internal.h). */
typedef int (*dt_ox_rule)(struct ox_node *c);

/* Kinds of untuned nodes, in the order the untuned listing gives them: what
 * costs time first (a GEMM dtune could not express, then the other
 * compute), what does no tensor work last. */
typedef enum {
    DT_OX_KIND_GEMM, /* a MatMul/Gemm left untuned: its own reason */
    DT_OX_KIND_CONV,
    DT_OX_KIND_SOFTMAX,
    DT_OX_KIND_NORM,
    DT_OX_KIND_REDUCE,
    DT_OX_KIND_POOL,
    DT_OX_KIND_ELEMENTWISE,
    DT_OX_KIND_QUANT,
    DT_OX_KIND_MOVEMENT,
    DT_OX_KIND_OTHER,
    DT_OX_KIND_SHAPE,    /* shape arithmetic (Range: always) */
    DT_OX_KIND_FOLDING,
    DT_OX_KIND_CONSTANT, /* Constant */
} dt_ox_kind;

typedef struct {
    const char *op;       /* the op type */
    dt_ox_rule rule;      /* its shape rule, NULL: none */
    const char *norule;   /* no rule: why (static text); NULL: "this op type is
                             not supported" */
    dt_ox_kind kind;      /* in the untuned listing (an op type of no
                             kind of its own: DT_OX_KIND_OTHER) */
    const char *gemm_why; /* a quantized GEMM in a form dtune has no dtype for:
                             why it stays untuned; else NULL */
} dt_ox_optype;

/* The row of (domain, op_type), or NULL: an op type the table does not
 * list, or a domain other than the default ("" or "ai.onnx") and
 * com.microsoft. */
const dt_ox_optype *dt_ox_optype_find(const char *domain, const char *op_type);

#endif
