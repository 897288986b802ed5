/* The per-op shape rules (internal to onnx/shape*.c and onnx/op_table.c,
 * which maps op types to them).  Each reads and sets what
 * onnx/shape_internal.h describes. */
#ifndef DT_ONNX_SHAPE_OPS_H
#define DT_ONNX_SHAPE_OPS_H

#include "onnx/shape_internal.h"

/* shape_ops_elem.c: elementwise ops, casts, quantization */
int dt_ox_rule_unary(ox_node *c);       /* same shape; Not/IsNaN/IsInf -> bool */
int dt_ox_rule_elementwise(ox_node *c); /* numpy broadcasting, integer value arithmetic */
int dt_ox_rule_where(ox_node *c);
int dt_ox_rule_cast(ox_node *c);       /* Cast, CastLike */
int dt_ox_rule_dynquant(ox_node *c);   /* DynamicQuantizeLinear */
int dt_ox_rule_quantize(ox_node *c);   /* QuantizeLinear */
int dt_ox_rule_dequantize(ox_node *c); /* DequantizeLinear */
int dt_ox_rule_bias_act(ox_node *c);   /* com.microsoft Gelu, FastGelu, BiasGelu, QuickGelu */

/* shape_ops_data.c: constants and shape-valued tensors */
int dt_ox_rule_constant(ox_node *c);
int dt_ox_rule_constant_of_shape(ox_node *c);
int dt_ox_rule_shape(ox_node *c);
int dt_ox_rule_size(ox_node *c);
int dt_ox_rule_gather(ox_node *c);
int dt_ox_rule_unsqueeze(ox_node *c);
int dt_ox_rule_squeeze(ox_node *c);
int dt_ox_rule_concat(ox_node *c);
int dt_ox_rule_range(ox_node *c);
int dt_ox_rule_expand(ox_node *c);
int dt_ox_rule_tile(ox_node *c);

/* shape_ops_layout.c: reshaping and slicing */
int dt_ox_rule_reshape(ox_node *c);
int dt_ox_rule_flatten(ox_node *c);
int dt_ox_rule_transpose(ox_node *c);
int dt_ox_rule_slice(ox_node *c);
int dt_ox_rule_split(ox_node *c);
int dt_ox_rule_pad(ox_node *c);

/* shape_ops_nn.c: matrix products, convolutions, pooling, normalisation, reductions */
int dt_ox_rule_matmul(ox_node *c); /* MatMul, MatMulInteger, QLinearMatMul */
int dt_ox_rule_gemm(ox_node *c);
int dt_ox_rule_conv(ox_node *c); /* Conv, ConvInteger, QLinearConv */
int dt_ox_rule_conv_transpose(ox_node *c);
int dt_ox_rule_pool(ox_node *c); /* MaxPool, AveragePool, LpPool */
int dt_ox_rule_global_pool(ox_node *c);
int dt_ox_rule_layer_norm(ox_node *c); /* LayerNormalization (and com.microsoft's) */
int dt_ox_rule_skip_layer_norm(ox_node *c);
int dt_ox_rule_batch_norm(ox_node *c);
int dt_ox_rule_reduce(ox_node *c);     /* Reduce* */
int dt_ox_rule_arg_reduce(ox_node *c); /* ArgMax, ArgMin */
int dt_ox_rule_topk(ox_node *c);

/* shape_ops_index.c: indexing ops */
int dt_ox_rule_gather_nd(ox_node *c);
int dt_ox_rule_scatter_nd(ox_node *c);
int dt_ox_rule_gather_elements(ox_node *c);
int dt_ox_rule_one_hot(ox_node *c);
int dt_ox_rule_depth_space(ox_node *c); /* DepthToSpace, SpaceToDepth */

/* shape_ops_resize.c */
int dt_ox_rule_resize(ox_node *c);

/* shape_ops_rnn.c: recurrent ops */
int dt_ox_rule_rnn(ox_node *c); /* LSTM, GRU, RNN */

/* shape_ops_control.c: If, Loop and Scan whose bodies the reader flattened
 * (n->nbodies > 0; without bodies such a node has no rule).  The driver
 * runs _enter with c's own inputs and its bodies' inputs as outputs (the
 * node's own outputs NULL), then _exit with every input and the node's own
 * outputs.  An output a rule leaves unset takes value_info's shape, else is
 * unknown, for the reason in o. */
typedef struct {
    const sym *trip;  /* enter, Loop and Scan: the body's runs per run of the node,
                         1 to 10^9 at every shape; NULL: not known (then once says
                         why) or an If.  exit: the same, given by the driver */
    char once[200];   /* enter: why the body is counted once ("" for an If) */
    int upper_bound;  /* enter: the trip count is M but the condition may end it sooner */
    int varying;      /* exit: a carried value changes shape across iterations */
    int unk_in;       /* an output was left unset as this tensor (index into the
                         table) is unknown; -1 */
    const char *why;  /* else why an output was left unset (static text), or NULL */
} dt_ox_control_out;
int dt_ox_control_enter(ox_node *c, dt_ox_control_out *o);
/* The branch If node c runs at every shape — 0 then_branch, 1 else_branch —
 * when its condition is a known constant and both branches were kept; else
 * -1 (both may run, or --branch already chose). */
int dt_ox_if_decided(const ox_node *c);
int dt_ox_control_exit(ox_node *c, dt_ox_control_out *o);
/* What control node c holds, for its untuned entry ("holds then_branch (12
 * nodes) and else_branch (9 nodes), each counted once", "holds body (4
 * nodes), run 10 times"): repeat[b] the runs of body b per model run (NULL:
 * once), once[b] why it is counted once (NULL or ""), how the shapes' note
 * ("shapes from value_info") or NULL.  malloc'ed; NULL: no memory. */
char *dt_ox_control_note(const ox_node *c, const dt_expr *const *repeat, const char *const *once,
                         int upper_bound, int varying, const char *how);

/* shape_ops_declared.c: output k of c as the model declares it (value_info,
 * graph outputs), for a rule that cannot derive it; when it is not declared
 * with constants and model variables only, an dt_ox_fail saying why (what the
 * rule could not derive) */
int dt_ox_declared_out(ox_node *c, int k, const char *why);

#endif
