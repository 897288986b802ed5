/* What the shape propagation's files share (internal to onnx/shape*.c and
 * onnx/op_table.c): the tensor table, the context a per-op rule runs in,
 * and the helpers rules use to read attributes and inputs and to set
 * outputs.
 *
 * A rule (shape_ops_*.c) reads c->in[] (NULL for an omitted optional
 * input; every present input has a known shape) and sets each present
 * output with dt_ox_set_out, then optionally its values (dt_ox_set_vals, integer
 * tensors only), its all-equal float value (dt_ox_set_fval) and is_const
 * (dt_ox_set_const; by default an output is constant when every present input
 * is).  Dims and values are symbolic integers (onnx/shape_sym.h); the driver
 * turns them into the public dt_expr form after the rule ran.  A rule fails
 * with dt_ox_fail ("cannot propagate shapes: why", naming the node) or, when a
 * sym_* operation failed, dt_ox_sym_fail. */
#ifndef DT_ONNX_SHAPE_INTERNAL_H
#define DT_ONNX_SHAPE_INTERNAL_H

#include <stdint.h>

#include "onnx/op_table.h"
#include "onnx/shape.h"
#include "onnx/shape_sym.h"

/* The largest constant dim accepted: far above any real tensor, far below
 * what a product of a few dims would need to overflow int64. */
#define OX_DIM_MAX (INT64_C(1) << 40)

typedef struct {
    dt_ox_shape pub;   /* the public view; its exprs are filled once known */
    int known;         /* 1 once the shape is known */
    const sym *dims[DT_OX_MAX_RANK];
    int nv;            /* -1: values unknown; else nv values (constant dims whose
                          product is nv <= DT_OX_MAX_VALUES, an integer type) */
    const sym **vals;  /* nv entries (owned array; the syms belong to the sym_ctx) */
    int is_output;     /* a graph output */
    int unknown;       /* 1: no shape can be derived (an op without a rule and no
                          value_info, or computed from such a tensor); known is 0 */
    const dt_ox_value *vi; /* its declared type in value_info (else as a graph
                          output), or NULL */
    int ncons, capcons;
    int *cons;         /* consuming nodes, ascending, each once */
    unsigned char *cons_read; /* per consumer: OX_READ_ENTRY (a control node's own
                          input, read when its bodies start) and/or OX_READ_NODE */
} ox_tensor;

enum { OX_READ_ENTRY = 1, OX_READ_NODE = 2 };

struct dt_ox_shapes {
    int n;
    ox_tensor *t;
    int *tab;          /* open addressing: name -> index into t, -1 empty */
    size_t tabcap;
    int nnodes;
    unsigned char *how;   /* per node: dt_ox_shapes_how */
    int *unk_in;          /* per node not run by its rule: the tensor (index into t)
                             whose unknown shape kept the rule from running; -1: the
                             node has no rule (then norule says why) */
    const char **norule;  /* per node: why it has no rule (static text, or its
                             entry in failed), or NULL */
    char **failed;        /* per node whose rule refused it: the error (owned, "source:
                             node X: cannot propagate shapes: why"); its outputs are
                             unknown or value_info's */
    const dt_ox_graph *g; /* the graph propagated */
    dt_expr **repeat;     /* per body (g->bodies): its runs per model run, NULL: once */
    unsigned char *dead;  /* per body: 1 for an If's branch its condition, known from the
                             shapes, never takes */
    char **note;          /* per node: a control node's summary (owned), else NULL */
};

typedef struct ox_node {
    const dt_ox_graph *g;
    int idx;                         /* node index */
    const dt_ox_node *n;
    dt_ox_shapes *s;
    sym_ctx *sc;
    dt_err *e;
    int nin, nout;                   /* n->ninputs, n->noutputs */
    ox_tensor *in[DT_OX_MAX_NODE_IO];  /* NULL: omitted */
    ox_tensor *out[DT_OX_MAX_NODE_IO]; /* NULL: omitted */
    int const_set[DT_OX_MAX_NODE_IO];  /* the rule decided is_const of output k */
} ox_node;

/* ---- the table (shape.c) ---- */
/* Index of a tensor by name, -1 when absent. */
int dt_ox_find(const dt_ox_shapes *s, const char *name);

/* ---- variables (shape_vars.c) ---- */
/* The variable of each dynamic dim of the graph inputs, in order of first
 * appearance: one per distinct dim_param, one per unnamed dynamic dim. */
typedef struct {
    const char *param; /* the dim_param (points into the graph), NULL: unnamed */
    int input, axis;   /* unnamed: where it is */
    char name[DT_NAME_MAX]; /* valid, distinct: what --var names */
} ox_varname;
/* The list (*v malloc'd, free it); DT_ENOMEM only. */
int dt_ox_var_list(const dt_ox_graph *g, ox_varname **v, int *n, dt_err *e);
/* Index into the list of input `input`'s dim `axis`, -1 for a static dim. */
int dt_ox_var_of_dim(const ox_varname *v, int n, const dt_ox_graph *g, int input, int axis);
/* Checks vars against the list: every name given once, nothing else. */
int dt_ox_check_vars(const dt_ox_graph *g, const ox_varname *v, int n, const dt_ox_vars *vars,
                     dt_err *e);

/* ---- rules by op (op_table.c) ---- */
/* The rule of (domain, op_type), or NULL with *why saying why it has none
 * (NULL *why: no op of that domain has one). */
dt_ox_rule dt_ox_rule_find(const char *domain, const char *op_type, const char **why);

/* ---- failures (shape_util.c) ---- */
/* DT_EINVAL "SOURCE: node LABEL: cannot propagate shapes: what". */
int dt_ox_fail(ox_node *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The sym_ctx's sticky error as an dt_ox_fail (DT_ENOMEM stays DT_ENOMEM). */
int dt_ox_sym_fail(ox_node *c);
/* Canonical text of p for messages. */
const char *dt_ox_str(ox_node *c, const sym *p, char *buf, size_t n);

/* ---- attributes (shape_util.c): a wrong attribute type is an dt_ox_fail ---- */
const dt_ox_attr *dt_ox_attr_get(const ox_node *c, const char *name);
int dt_ox_attr_int(ox_node *c, const char *name, int64_t def, int64_t *out);
/* *s = the string, or def when absent. */
int dt_ox_attr_str(ox_node *c, const char *name, const char *def, const char **s);
/* *n = -1 when absent; else the INTS values in *v (pointing into the graph). */
int dt_ox_attr_ints(ox_node *c, const char *name, const int64_t **v, int *n);

/* ---- inputs (shape_util.c) ---- */
/* Input i, failing "input #i is missing" when omitted. */
int dt_ox_need(ox_node *c, int i, ox_tensor **t);
/* The constant integer values of optional input i (at most max): every
 * value known and a constant, else an dt_ox_fail naming what; *n = -1 when it
 * is omitted. */
int dt_ox_opt_input_ints(ox_node *c, int i, const char *what, int64_t *buf, int max, int *n);
/* The known values of input i (at most max), symbolic ones included. */
int dt_ox_input_syms(ox_node *c, int i, const char *what, const sym **buf, int max, int *n);
/* Integer list from attribute attr if given, else from input i if present
 * (dt_ox_opt_input_ints), else *n = -1.  The opset-dependent "axes"/"split": older
 * opsets give attributes, newer ones inputs; either is accepted. */
int dt_ox_ints_attr_or_input(ox_node *c, const char *attr, int i, int64_t *buf, int max, int *n);
/* Normalises axis (negative counts from the end) into [0, rank). */
int dt_ox_axis(ox_node *c, int64_t axis, int rank, int *out);
/* Normalises and checks a list of distinct axes; mask gets bit per axis. */
int dt_ox_axes(ox_node *c, const int64_t *axes, int n, int rank, uint32_t *mask);

/* ---- outputs (shape_util.c) ---- */
/* Sets output k (nothing when it is omitted): type, rank and dims. */
int dt_ox_set_out(ox_node *c, int k, int elem_type, int rank, const sym *const *dims);
/* Output k gets input t's type and shape. */
int dt_ox_same_shape(ox_node *c, int k, const ox_tensor *t);
/* Values of output k (after dt_ox_set_out); kept only for integer types with
 * constant dims whose product is nv (dropped otherwise).  A NULL entry
 * means unknown values (dropped); so does a sym_ctx that failed with an
 * int64 overflow (the error is cleared); any other failure (an expression
 * too large or too deep, no memory) fails naming the node. */
int dt_ox_set_vals(ox_node *c, int k, int nv, const sym *const *vals);
void dt_ox_set_fval(ox_node *c, int k, double v);
void dt_ox_set_const(ox_node *c, int k, int is_const);
/* Output k gets t's values (integer values and all-equal float value). */
int dt_ox_pass_values(ox_node *c, int k, const ox_tensor *t);

/* ---- shapes (shape_util.c) ---- */
/* numpy broadcasting of a and b into out (rank max(ra, rb)): equal dims,
 * or one of them 1; anything else is an dt_ox_fail naming both. */
int dt_ox_broadcast(ox_node *c, int ra, const sym *const *a, int rb, const sym *const *b, int *r,
                    const sym **out);
/* 1 when a and b are equal at every shape of the domains. */
int dt_ox_equal(ox_node *c, const sym *a, const sym *b);
/* The product of dims[0..n). */
const sym *dt_ox_dims_product(ox_node *c, const sym *const *dims, int n);
/* 1 and the constant dims of t when they are all constant. */
int dt_ox_const_dims(const ox_tensor *t, int64_t *dims);

/* For broadcasting values: map[i] = the flat index into a tensor of dims
 * da (rank ra) read by output element i of dims dout (rank r). */
void dt_ox_bcast_map(int r, const int64_t *dout, int ra, const int64_t *da, int64_t nout,
                     int64_t *map);

/* ---- element types (shape_util.c) ---- */
int dt_ox_is_int_type(int t); /* integers and bool */
int dt_ox_is_float_type(int t);

#endif
