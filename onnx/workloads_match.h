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
/* The same along axis `axis` (-1: the last) of a result of rank `rank`:
 * every other dim 1, leading ones optional ([n, 1, 1], [1, n, 1, 1] along
 * NCHW's channels).  workloads_epilogue.c. */
int dt_ox_axis_vector(const dt_ox_wctx *c, const char *tensor, const dt_expr *n, int rank,
                      int axis);
/* 1 when the tensor has exactly one element (any rank, every dim 1). */
int dt_ox_is_single(const dt_ox_shape *t);
/* 1 and *v when x is a constant (a dim the graph fixes), else 0. */
int dt_ox_const_value(const dt_expr *x, int64_t *v);
/* 1 when every element of an integer tensor is known to be 0 (absent:
 * tensor ""), 0 when one is known not to be, -1 when the values are not
 * known (a tensor over DT_OX_MAX_VALUES elements). */
int dt_ox_known_zero(const dt_ox_wctx *c, const char *tensor);

/* The canonical product of dims[0..n) (1 for n == 0) into *out; fails with
 * DT_EINVAL naming node when it overflows or nests too deeply. */
int dt_ox_product(dt_ox_wctx *c, int node, dt_expr *const *dims, int n, dt_expr **out);
/* The sum of n expressions (0 for none), canonical, into *out; a failure
 * names node.  workloads_util.c. */
int dt_ox_sum(dt_ox_wctx *c, int node, dt_expr *const *terms, int n, dt_expr **out);

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
/* Sets op's dims (op->op set) by their roles in its GEMM view (ops/op.h):
 * batch, M, N, K; takes the expressions, freeing those of roles the op has
 * no dim for (dense's batch).  workloads_gemm.c. */
void dt_ox_set_gemm_dims(dt_ox_op *op, dt_expr *batch, dt_expr *m, dt_expr *n, dt_expr *k);

/* The epilogue after y (a result whose dim `axis` is n, the channels a
 * bias runs along: -1 for the last, a dense's N; 1 for a Conv's NCHW
 * result): an optional bias Add (skipped when has_bias), then an optional
 * Relu or GELU (Gelu, com.microsoft Gelu / BiasGelu, or the erf pattern).
 * Adds the nodes to f and sets *epilogue to an epilogue value of dense and
 * conv2d ("none", "bias", "bias+gelu", ...).  workloads_epilogue.c. */
int dt_ox_match_epilogue(dt_ox_wctx *c, const char *y, const dt_expr *n, int axis,
                         int has_bias, dt_ox_fused *f, const char **epilogue);

/* Conv as conv2d (2-D, or 1-D with H = R = 1), its bias input and the
 * epilogue after it; a weight DequantizeLinear'd from int8 handed to
 * dt_ox_match_conv_qdq; any other Conv rejected with the reason.
 * workloads_conv.c. */
int dt_ox_match_conv(dt_ox_wctx *c, int node);
/* The conv2d a Conv-like node computes from its input x ([N, C, H, W] or
 * [N, C, L]) and constant weight w ([K, C/group, R, S] or [K, C/group, S]):
 * op->op, its dims and stride, pad, dilation and groups set (not the dtype
 * or the epilogue), *ok = 1; or the node rejected with the reason (*ok = 0,
 * op holds no dims).  workloads_conv.c. */
int dt_ox_conv_geometry(dt_ox_wctx *c, int node, const char *x, const char *w, dt_ox_op *op,
                        int *ok);
/* Finishes a conv2d of K output channels from its result y (NCHW) on: the
 * epilogue (a bias already in the node when bias), the op added with the
 * nodes of f.  Frees op's dims on failure.  workloads_conv.c. */
int dt_ox_finish_conv(dt_ox_wctx *c, dt_ox_op *op, dt_ox_fused *f, const char *y,
                      const dt_expr *k, int bias);
/* The same for Conv-like node i (one output, the bias its third input
 * when present, a constant vector of k elements, else the node rejected),
 * the node covered.  workloads_conv.c. */
int dt_ox_finish_conv_node(dt_ox_wctx *c, int i, dt_ox_op *op, const dt_expr *k);
/* Frees op's dims (NULLs them).  workloads_conv.c. */
void dt_ox_op_clear(dt_ox_op *op);
/* ConvTranspose: listed, waiting for conv2d_transpose (its work is counted
 * by onnx/flops.c).  workloads_conv.c. */
int dt_ox_match_conv_transpose(dt_ox_wctx *c, int node);

/* Quantized convolutions as conv2d int8 / w8a32 (workloads_conv_quant.c):
 * a Conv whose weight is DequantizeLinear(int8 constant) wdq (QDQ: int8
 * with a DequantizeLinear'd u8 input, w8a32 with a float one), ConvInteger
 * → Cast → Mul (scales) as onnxruntime's quantize_dynamic writes it; any
 * other form rejected with the reason. */
int dt_ox_match_conv_qdq(dt_ox_wctx *c, int node, int wdq);
int dt_ox_match_conv_integer(dt_ox_wctx *c, int node);
/* QLinearMatMul and QLinearConv: always rejected — the u8 output is
 * requantized — with the other ways they are not dtune's int8 (s8
 * activations, u8 weights, a weight zero point other than 0) after it.
 * workloads_quant.c. */
int dt_ox_match_qlinear(dt_ox_wctx *c, int node);
/* Why the int8 tensor w with zero point zp ("": none) is not a weight of
 * dtune's int8 and w8a32 of rank `rank` (s8, constant, symmetric), or
 * NULL.  workloads_quant.c. */
const char *dt_ox_int8_weight_problem(const dt_ox_wctx *c, const char *w, const char *zp,
                                      int rank);
/* The dtype of a GEMM of DequantizeLinear'd int8 weights by its activation
 * operand a: int8 when a is DequantizeLinear(u8, one scale and zero point),
 * w8a32 when a is float (*ok = 1); else the node rejected (*ok = 0).
 * workloads_quant.c. */
int dt_ox_qdq_activation(dt_ox_wctx *c, int node, const char *a, dt_dtype *dtype, int *ok);
/* The dequantization of an int32 result: Cast(to=float) → Mul(·, scale),
 * the scale a float constant of one element or one per channel (n along
 * axis `axis` of the result, -1 the last: dt_ox_axis_vector), or a Mul of
 * such a constant and a one-element scale (the activation's, from
 * DynamicQuantizeLinear): sm, else -1.  y is the f32 result. */
typedef struct {
    int cast, mul, sm;
    const char *y;
} dt_ox_dequant;
/* 1 and *dq when the int32 tensor yi is dequantized so.  workloads_quant.c. */
int dt_ox_match_dequant(const dt_ox_wctx *c, const char *yi, const dt_expr *n, int axis,
                        dt_ox_dequant *dq);
/* Covers dq's Cast and Mul in f, and its scale product (or marks it to be
 * absorbed once all its readers are covered, when other ops share it).
 * workloads_quant.c. */
void dt_ox_fuse_dequant(dt_ox_wctx *c, dt_ox_fused *f, const dt_ox_dequant *dq);

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

/* Recurrent cells (workloads_rnn.c). */

/* 1 for LSTM, GRU, RNN and com.microsoft DynamicQuantizeLSTM, AttnLSTM. */
int dt_ox_is_recurrent(const dt_ox_node *n);
/* A recurrent cell's products as dense ops per direction (the input
 * projection once, the recurrent product with count T), or the node
 * rejected with the reason (weights not constant, dtypes, dims).  The ops
 * cover no node: the node is listed for its gates (dt_ox_rnn_gates). */
int dt_ox_match_rnn(dt_ox_wctx *c, int node);

/* One product of a cell's direction, as the ONNX definition adds it into
 * the gates: a·w[rows]ᵀ + B[bias0·H ..] of ngates·H columns. */
#define DT_OX_RNN_MAX_PRODUCTS 3
typedef struct {
    char a;      /* its first operand: 'x' X of every step at once, 'h' h_{t-1} (per
                    step), 'r' r_t ⊙ h_{t-1} (GRU with linear_before_reset = 0) */
    char w;      /* its weight, 'W' or 'R' of the direction: [gates·H, K] */
    int gate0;   /* the weight rows it takes: gate0·H .. (gate0+ngates)·H */
    int ngates;  /* N = ngates·H */
    int bias0;   /* its bias: B[bias0·H .. (bias0+ngates)·H) of the direction's row of
                    B = [Wb, Rb] (2·gates·H) */
} dt_ox_rnn_product;

/* The lowering of a cell with `gates` gates (4 LSTM: i,o,f,c; 3 GRU: z,r,h;
 * 1 RNN); split_h for a GRU with linear_before_reset = 0.  Fills out and
 * returns how many products there are (2 or 3). */
int dt_ox_rnn_products(int gates, int split_h, dt_ox_rnn_product out[DT_OX_RNN_MAX_PRODUCTS]);

/* For an uncovered node: 1 when it is a recurrent cell whose products are
 * ops, with its listing entry: *what "LSTM gates (elementwise)" (written
 * into buf) and *why; else 0. */
int dt_ox_rnn_gates(const dt_ox_wctx *c, int node, char *buf, size_t n, const char **what,
                    const char **why);

/* com.microsoft Attention, MultiHeadAttention, GroupQueryAttention
 * (workloads_attention.c): 1 for those. */
int dt_ox_is_attention(const dt_ox_node *n);
/* Their GEMMs: Attention's QKV projection (dense), then per head Q·Kᵀ
 * (batch_matmul NT) and P·V (NN), the node covered by the first; or the
 * node rejected with the reason. */
int dt_ox_match_attention(dt_ox_wctx *c, int node);

/* The untuned list from every node not covered.  workloads_untuned.c. */
int dt_ox_collect_untuned(dt_ox_wctx *c);

#endif
