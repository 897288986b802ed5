/* Symbolic shape propagation over a dt_ox_graph (docs/onnx-import.md).
 *
 * The graph inputs' dims that are dim_params (or unnamed dynamic dims, which
 * get a generated name) are the model's variables; every other tensor's dims
 * become canonical sketch/ expressions of them (shape/expr.h).  Small
 * integer tensors whose element values are known (the Shape → Gather →
 * Unsqueeze → Concat → Reshape chains of PyTorch exports, Slice bounds,
 * Range limits) carry those values as expressions too, so a Reshape whose
 * target is computed from a Shape resolves symbolically.
 *
 * Every node is propagated in topological order (a cycle or an input that no
 * node, initializer or graph input produces is an error).  A node whose
 * inputs make no sense (ranks that do not broadcast, a Reshape whose element
 * counts differ, an axis out of range) stops propagation with DT_EINVAL
 * naming the node, its op type and why.
 *
 * Subgraphs (onnx/graph.h): an If, Loop or Scan whose bodies the reader
 * flattened runs in two steps around its bodies' nodes, which see the
 * values of the enclosing scopes: entering, its own inputs give its bodies'
 * inputs (a Loop's iteration number and condition, its carried values like
 * their initial ones; a Scan's states and slices) and the bodies' repeat
 * counts; leaving, the bodies' outputs give its own (an If's when both
 * branches agree; a Loop's scan outputs with the trip count in front; a
 * Scan's with its length inserted).  dt_ox_node_repeat tells how often a
 * body's node runs.
 *
 * Unknown shapes: a node whose op has no rule (Resize, a custom
 * domain's op, ...) or that reads a tensor of unknown shape (the output of
 * such a node, or a graph input declared without a shape) is not run by a
 * rule: each of its outputs takes the type and shape declared for it in
 * the graph's value_info (or as a graph output) when every dim there is a
 * constant or a dim_param of the model's variables; otherwise the output's
 * shape is unknown (dt_ox_shape_of gives NULL).  Such a node is
 * DT_OX_SHAPES_VALUE_INFO or DT_OX_SHAPES_UNKNOWN (dt_ox_node_shapes).  Only
 * a GEMM node that workload extraction would tune — MatMul, Gemm or
 * MatMulInteger of the default domain — reading a tensor of unknown shape is
 * an error: "cannot propagate shapes: input 'x' has unknown dims, and this
 * op is what dtune tunes; they are unknown from: 'lstm' (#3, LSTM: no shape
 * rule, no value_info for 'y') -> 'r' (#4, Reshape) -> this node".
 *
 * Expressions stay small: a dim or value whose expression would be taller
 * than DT_EXPR_MAX_DEPTH levels or too large to write out fails naming the
 * node, instead of being built.  Questions an expression alone does not
 * answer (does this Slice end pass the dim? is this dim 1?) are decided over
 * the variables' domains: by bounds, or by trying every shape when there are
 * few; what stays undecided fails naming the node.
 *
 * Ownership: dt_ox_shapes owns every expression in it; tensor names point
 * into the graph, which must outlive it. */
#ifndef DT_ONNX_SHAPE_H
#define DT_ONNX_SHAPE_H

#include <stdint.h>

#include "common/error.h"
#include "onnx/graph.h"
#include "shape/expr.h"
#include "shape/workload.h"

typedef struct {
    const char *name;   /* the tensor's name (points into the graph) */
    int elem_type;      /* DT_OX_* */
    int rank;
    dt_expr *dims[DT_OX_MAX_RANK]; /* canonical; constant dims are DT_EXPR_CONST */
    int nvals;          /* -1: element values unknown; else the tensor has nvals elements
                           (only integer and bool tensors of constant dims and at most
                           DT_OX_MAX_VALUES elements have values; float tensors have -1) */
    dt_expr **vals;     /* nvals canonical exprs in row-major order (bool: 0 or 1), or NULL */
    int has_fval;       /* 1: a float tensor all of whose elements equal fval */
    double fval;        /*    (the scalars of the erf-GELU pattern: 0.5, 1, √2) */
    int is_const;       /* 1: computed from initializers and Constants only (a weight) */
    int producer;       /* index of the node that outputs it; -1 for graph inputs
                           and initializers */
} dt_ox_shape;

typedef struct dt_ox_shapes dt_ox_shapes; /* opaque */

/* The model variables a propagation runs with: each graph input dim_param
 * (or generated name) with its domain, from the user's --var flags.  The
 * domains let propagation decide bounds questions such as whether a Slice's
 * symbolic end stays inside its input (Slice(mask, 0, seq) of a 1024-long
 * buffer is seq when every value of seq is <= 1024). */
typedef struct {
    int n;
    const dt_var *vars; /* n entries */
} dt_ox_vars;

/* Lists the variables the graph's inputs need: each distinct dim_param, and
 * a generated name ("<input>_d<axis>") for each dynamic dim without one, in
 * order of first appearance.  Names are made valid ([A-Za-z_][A-Za-z0-9_],
 * at most 32): other characters become '_', a leading digit gets a '_'
 * before it, longer names are cut ("input.1" -> "input_1_d0", "1.seq" ->
 * "_1_seq"); two dims that would share a name get "_2", "_3", ... .  These
 * are the names --var takes.  names[i] are malloc'd; free each and the
 * array.  Pure; never fails except DT_ENOMEM. */
int dt_ox_graph_var_names(const dt_ox_graph *g, char ***names, int *n, dt_err *e);

/* Propagates shapes.  Every name from dt_ox_graph_var_names must be in vars
 * (else DT_EINVAL "SOURCE: give a range for every dynamic dim: --var
 * batch=... --var seq=... (missing: seq)"); vars not used by the graph are
 * DT_EINVAL too.  A variable with a single value is substituted as a
 * constant.  Errors about a node read "SOURCE: node LABEL: ..."
 * (dt_ox_node_label): "cannot propagate shapes: why", "input 'x' is
 * produced by no node ... (dangling input)", "the graph has a cycle through
 * this node". */
int dt_ox_propagate(const dt_ox_graph *g, const dt_ox_vars *vars, dt_ox_shapes **out, dt_err *e);
void dt_ox_shapes_free(dt_ox_shapes *s);

/* The shape of a tensor by name, NULL if it has none (an omitted optional
 * input "" or an unknown name). */
const dt_ox_shape *dt_ox_shape_of(const dt_ox_shapes *s, const char *tensor);

/* The nodes consuming a tensor: *n of them, indices in node order (valid
 * until dt_ox_shapes_free).  Pattern matching walks forward with it. */
const int *dt_ox_consumers(const dt_ox_shapes *s, const char *tensor, int *n);

/* 1 when the tensor is a graph output (a pattern must not fuse it away). */
int dt_ox_is_graph_output(const dt_ox_shapes *s, const char *tensor);

/* How a node's output shapes were found. */
typedef enum {
    DT_OX_SHAPES_RULE = 0,   /* by the op's shape rule */
    DT_OX_SHAPES_VALUE_INFO, /* from the graph's value_info / outputs (no rule, or
                                an input of unknown shape) */
    DT_OX_SHAPES_UNKNOWN,    /* at least one output's shape is unknown */
} dt_ox_shapes_how;

/* How node i's outputs got their shapes (DT_OX_SHAPES_RULE for an index out
 * of range). */
dt_ox_shapes_how dt_ox_node_shapes(const dt_ox_shapes *s, int node);
/* The first node (in node order) whose shape rule refused it — its outputs
 * were then made unknown, or taken from value_info, and only a tuned op
 * reading them fails —: DT_EINVAL with the rule's error ("source: node X:
 * cannot propagate shapes: why") and *node (when not NULL) its index; 0 when
 * every rule that ran succeeded. */
int dt_ox_first_failure(const dt_ox_shapes *s, int *node, dt_err *e);
/* That error of node i, or NULL when its rule did not refuse it. */
const char *dt_ox_node_failure(const dt_ox_shapes *s, int node);
/* The note the untuned list adds to such a node: "shapes from value_info",
 * "shapes unknown", or NULL for a node run by its rule.  For an If, Loop or
 * Scan whose bodies were read, what it holds first: "holds then_branch (12
 * nodes) and else_branch (9 nodes), each counted once", "holds body (4
 * nodes), run 10*seq times", "holds body (4 nodes), counted once: its trip
 * count M ('m') is not known: ...", "holds then_branch (12 nodes), taken
 * (--branch); else_branch (9 nodes) not taken, dropped". */
const char *dt_ox_node_shapes_note(const dt_ox_shapes *s, int node);

/* How many times node i runs per model run (issue 43): NULL for once — a
 * node of the main graph or of an If's branch there, or of a body whose
 * trip count is not known (its control node's note says so) — else a
 * canonical expression over the model variables, 1 to 10^9 at every shape:
 * a Loop's trip count M (a constant, or an expression such as seq from
 * Gather(Shape(x), 1)), a Scan's scanned length, their product for nested
 * bodies.  Valid until dt_ox_shapes_free. */
const dt_expr *dt_ox_node_repeat(const dt_ox_shapes *s, int node);

/* 1 when node i lies in an If branch that never runs: its If's condition
 * is known from the shapes and takes the other branch (or in a body inside
 * such a branch).  Its rule's failures are no warning (import.c).  Valid
 * until dt_ox_shapes_free. */
int dt_ox_node_dead(const dt_ox_shapes *s, int node);

#endif
