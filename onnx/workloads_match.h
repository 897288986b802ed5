/* Shared state and helpers of the pattern matchers behind dt_ox_extract
 * (onnx/workloads*.c).  Internal to onnx/.
 *
 * Matching walks forward from a GEMM node with dt_ox_consumers and back
 * with each tensor's producer.  A matcher collects the nodes an op would
 * cover in a dt_ox_fused and commits them with dt_ox_add_op only when the
 * whole op matched; a GEMM it cannot express gets a reason (dt_ox_reject)
 * and is listed as untuned. */
#ifndef DT_ONNX_WORKLOADS_MATCH_H
#define DT_ONNX_WORKLOADS_MATCH_H

#include "onnx/workloads.h"

/* The most nodes one op covers: the GEMM, a scale Mul and a Cast, a bias
 * Add, a 5-node GELU, with room to spare. */
#define DT_OX_MAX_FUSED 16

typedef struct {
    int n;
    int nodes[DT_OX_MAX_FUSED];
} dt_ox_fused;

typedef struct {
    const dt_ox_graph *g;
    const dt_ox_shapes *s;
    dt_err *e;
    int *cover;            /* per node: index of the op that covers it, or -1 */
    unsigned char *absorb; /* per node: 1 = covered as soon as all its consumers are
                              (a scale Mul shared by several MatMulIntegers) */
    char **why;            /* per GEMM node left untuned: the reason (owned), else NULL */
    dt_ox_wl *wl;
} dt_ox_wctx;

/* ---- lookups (workloads_util.c) ---- */

/* The shape of a tensor; NULL for "" or a tensor propagation did not reach. */
const dt_ox_shape *dt_ox_wshape(const dt_ox_wctx *c, const char *tensor);
/* 1 when node i has an output and every output is computed from constants
 * only (weights, their scales, GELU's scalars). */
int dt_ox_all_const(const dt_ox_wctx *c, int i);
/* 1 when node n is op_type of the default domain ("" or "ai.onnx"). */
int dt_ox_is(const dt_ox_node *n, const char *op_type);
/* 1 when node n is op_type of the com.microsoft domain. */
int dt_ox_is_ms(const dt_ox_node *n, const char *op_type);
/* The nodes reading the data of tensor: its consumers but Shape nodes
 * (which read only its dims, known here: a torch export takes the key
 * length from Shape(kᵀ)), each once.  Writes at most max into out and
 * returns how many there are. */
int dt_ox_data_consumers(const dt_ox_wctx *c, const char *tensor, int *out, int max);
/* The one node reading tensor's data, or -1 when it has none, several, is a
 * graph output (a fused intermediate must be neither) or its reader is
 * already covered. */
int dt_ox_sole_consumer(const dt_ox_wctx *c, const char *tensor);
/* The input of binary node n that is not x: its index, or -1 when x is not
 * one of its two inputs.  (x·x gives 1: both are x.) */
int dt_ox_other_input(const dt_ox_node *n, const char *x);
/* 1 when tensor is a float constant all of whose elements are within 1e-5
 * (relative) of want. */
int dt_ox_const_near(const dt_ox_wctx *c, const char *tensor, double want);
/* 1 when a and b have the same rank and equal dims. */
int dt_ox_same_dims(const dt_ox_shape *a, const dt_ox_shape *b);
/* 1 when tensor is a constant float vector of n elements along the last
 * axis of a result of rank `rank`: dims [n], [1, n], ... (leading ones),
 * what a bias or a per-channel scale looks like. */
int dt_ox_const_vector(const dt_ox_wctx *c, const char *tensor, const dt_expr *n, int rank);
/* 1 when the tensor has exactly one element (any rank, every dim 1). */
int dt_ox_is_single(const dt_ox_shape *t);
/* 1 when every element of an integer tensor is known to be 0 (absent:
 * tensor ""), 0 when one is known not to be, -1 when the values are not
 * known (a tensor over DT_OX_MAX_VALUES elements). */
int dt_ox_known_zero(const dt_ox_wctx *c, const char *tensor);

/* The canonical product of dims[0..n) (1 for n == 0) into *out; fails with
 * DT_EINVAL naming node when it overflows or nests too deeply. */
int dt_ox_product(dt_ox_wctx *c, int node, dt_expr *const *dims, int n, dt_expr **out);

/* ---- outcomes (workloads_util.c) ---- */

/* Leaves a GEMM node untuned with the reason (printf-style); returns 0, or
 * DT_ENOMEM. */
int dt_ox_reject(dt_ox_wctx *c, int node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* DT_EINVAL "source: node LABEL: what" for a graph the matchers cannot read. */
int dt_ox_wfail(dt_ox_wctx *c, int node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a node to f (0), or -1 when f is full. */
int dt_ox_fuse(dt_ox_fused *f, int node);
/* Appends op (its dims move into the list) covering the nodes of f. */
int dt_ox_add_op(dt_ox_wctx *c, dt_ox_op *op, const dt_ox_fused *f);

/* ---- matchers ---- */

/* A dense in the making: what the GEMM matchers found, before M and the
 * epilogue. */
typedef struct {
    int node;              /* the GEMM node */
    const char *a;         /* the activation operand (its leading dims make M) */
    const dt_expr *n, *k;  /* from the constant weight */
    int bias;              /* the GEMM itself adds the bias (Gemm's C) */
    dt_dtype dtype;
    const char *y;         /* the f32 result the epilogue starts from */
    dt_ox_fused f;         /* nodes covered so far, the GEMM node first */
} dt_ox_dense;

/* Finishes a dense: M from d->a, the epilogue from d->y on (bias Add,
 * activation), the op added.  workloads_gemm.c. */
int dt_ox_finish_dense(dt_ox_wctx *c, dt_ox_dense *d);

/* The epilogue after y (a result whose dim `axis` is n, the channels a
 * bias runs along: -1 for the last, a dense's N; 1 for a Conv's NCHW
 * result): an optional bias Add (skipped when has_bias), then an optional
 * Relu or GELU (Gelu, com.microsoft Gelu / BiasGelu, or the erf pattern).
 * Adds the nodes to f and sets *epilogue to an epilogue value of dense and
 * conv2d ("none", "bias", "bias+gelu", ...).  workloads_epilogue.c. */
int dt_ox_match_epilogue(dt_ox_wctx *c, const char *y, const dt_expr *n, int axis,
                         int has_bias, dt_ox_fused *f, const char **epilogue);

/* Conv as conv2d (2-D, or 1-D with H = R = 1), its bias input and the
 * epilogue after it; any other Conv rejected with the reason.
 * workloads_conv.c. */
int dt_ox_match_conv(dt_ox_wctx *c, int node);

/* MatMul and Gemm: dense (constant weight), batch_matmul (two activations),
 * or a weight DequantizeLinear'd from int8 (handed to dt_ox_match_qdq).
 * workloads_gemm.c. */
int dt_ox_match_matmul(dt_ox_wctx *c, int node);

/* MatMulInteger → Cast → Mul (scales) as an int8 dense.  workloads_quant.c. */
int dt_ox_match_matmul_integer(dt_ox_wctx *c, int node);
/* A MatMul/Gemm whose weight w (its B operand, [K,N], or [N,K] when
 * trans_b) is DequantizeLinear(int8 constant): int8 dense when the
 * activation is DequantizeLinear(uint8), w8a32 when it is float.
 * workloads_quant.c. */
int dt_ox_match_qdq(dt_ox_wctx *c, int node, int wdq, int trans_b, dt_ox_dense *d);

/* A MatMul/Gemm whose weight (its B operand) is Mul(Cast(int W, to=float),
 * scale), the Mul's operands in either order, with 2-D Transposes before
 * or after it: *matched = 1, and a w8a32 dense added or the GEMM rejected
 * with the reason (u8 or 4-bit weights, scales along K); *matched = 0 when
 * the weight is not made so.  workloads_quant.c. */
int dt_ox_match_cast_weight(dt_ox_wctx *c, int node, int trans_b, dt_ox_dense *d, int *matched);

/* 1 for the quantization nodes (DynamicQuantizeLinear, QuantizeLinear,
 * DequantizeLinear): covered only by quantized ops whose inputs they make.
 * workloads_quant.c. */
int dt_ox_is_quant_node(const dt_ox_node *n);

/* The untuned list from every node not covered.  workloads_untuned.c. */
int dt_ox_collect_untuned(dt_ox_wctx *c);

#endif
