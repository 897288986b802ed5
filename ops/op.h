/* The op registry: each computation family is one dt_op_desc in its own
 * file (ops/op_<name>.c), listed once in op_registry.c.  Nothing outside
 * an op's files knows its name, dims or attributes: the layers above reach
 * an op through this description — above all its GEMM view (dims by role,
 * B's layout, the epilogue) — and through their own per-op hook tables
 * (microkernel/mk_op.h, export/export_op.h), so adding an op adds files and
 * registry lines and touches no other op.  docs/architecture.md, "Ops and
 * their hooks". */
#ifndef DT_OPS_OP_H
#define DT_OPS_OP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "dtypes/dtype.h"

#define DT_MAX_DIMS 8
#define DT_MAX_ATTRS 16
#define DT_MAX_ATTR_VALUES 10

/* An attribute: enumerated, such as layout=NN|NT or epilogue=bias+gelu (a
 * workload holds the index of its value in values[]), or an integer, such
 * as a convolution's stride=2 or pad=0 (a workload holds the number, in
 * min..max): a value fixed by the key, never a variable of the shape set. */
typedef struct dt_attr_desc {
    const char *name;
    int nvalues;
    const char *values[DT_MAX_ATTR_VALUES];
    int default_index; /* enumerated: the default's index; integer: the default value */
    int always_print; /* printed in keys even when it has the default value */
    int integer;      /* 1: an integer attribute (values[] unused) */
    int min, max;     /* an integer attribute's range */
} dt_attr_desc;

/* Activations of an epilogue: ReLU; GELU (erf form); ReLU6, min(max(x, 0),
 * 6); HardSwish, x·min(max(x + 3, 0), 6)/6 (MobileNetV3's, ONNX's). */
enum { DT_ACT_NONE = 0, DT_ACT_RELU = 1, DT_ACT_GELU = 2, DT_ACT_RELU6 = 3, DT_ACT_HARDSWISH = 4 };

/* The epilogue attribute dense and conv2d share: its values (in this order,
 * the index a workload holds) and what each adds (ops/op_epilogue.c). */
#define DT_EPILOGUE_VALUES                                                                     \
    {"none", "bias", "relu", "gelu", "bias+relu", "bias+gelu", "relu6", "bias+relu6",          \
     "hardswish", "bias+hardswish"}
#define DT_EPILOGUE_COUNT 10
/* Epilogue value v's bias (0/1) and activation (DT_ACT_*) */
int dt_epilogue_bias(int v);
int dt_epilogue_act(int v);

/* Roles of an op's dims in its GEMM view. */
typedef enum dt_role { DT_ROLE_BATCH = 0, DT_ROLE_M, DT_ROLE_N, DT_ROLE_K, DT_ROLE_COUNT } dt_role;

/* The GEMM view of an op: how it maps onto the batched GEMM every
 * micro-kernel computes,
 *     C[b] = act(A[b]·B[b] + bias)   for b < batch,
 * A[b] M×K, B[b] K×N (stored N×K when b_trans), C[b] M×N, bias[N], all
 * row-major.  The sizes are the op's to compute from its dims: one dim per
 * role for dense and batch_matmul, derived from several for an op such as a
 * convolution (M = N·OH·OW, K = R·S·C), whose roles then name no single
 * dim.  Plain values; copy freely. */
typedef struct dt_gemm {
    int dim[DT_ROLE_COUNT]; /* index of the op's dim that is the role's size; -1: none
                             * (size 1, or derived from several dims) */
    int batched;            /* a batch of matrices, shared out among the threads */
    int64_t batch, M, N, K; /* sizes by role (dt_op_gemm with dims), else 0 */
    int b_trans;            /* B[b] is stored N×K (K contiguous) */
    int b_const;            /* B is constant across calls (weights): packed once; batch 1 */
    int bias;               /* + bias[N] */
    int act;                /* DT_ACT_* after the bias */
    /* The op's own problem, copied in by dt_op_gemm when given dims (else
     * op NULL): what an op whose A is implicit (dt_op_desc.a_index) needs
     * to lay out its input and call its kernels — a convolution's image
     * size, window, stride and padding. */
    const struct dt_op_desc *op;
    int64_t dims[DT_MAX_DIMS];
    int attrs[DT_MAX_ATTRS];
} dt_gemm;

/* A convolution's geometry, for the layers that hand it on whole (the
 * convolution peers, a kernel's call): its dims and integer attributes by
 * meaning, filled by the op that is a convolution (dt_op_desc.conv). */
typedef struct dt_conv_geom {
    int64_t n, h, w, c, k, r, s; /* images, height, width, channels in and out, window */
    int64_t stride, pad, dilation; /* along the height; pad: the top's */
    int64_t groups;              /* channels in and out split into independent groups */
    int64_t stride_w, dilation_w; /* along the width */
    int64_t pad_l, pad_b, pad_r; /* the left, bottom and right pads */
    /* 1: the transposed convolution (its pads crop the output; out_pad_h,
     * out_pad_w extend it at the bottom and right), which the kernels
     * compute as sh·sw forward ones (microkernel/conv2d_phases.c) */
    int64_t transpose, out_pad_h, out_pad_w;
} dt_conv_geom;

/* The geometry as the conv2d kernels take it (their entry point's geom
 * array, microkernel/template/op_conv2d.c): n, h, w, c, k, r, s, stride,
 * pad, dilation, groups, stride_w, dilation_w, pad_l, pad_b, pad_r.  The
 * one place the host side states that order (ops/op_conv2d.c).  A kernel
 * computes forward convolutions only: a transposed one's values are its
 * phases' (microkernel/conv2d_phases.c). */
#define DT_CONV_GEOM_LEN 16
void dt_conv_geom_values(const dt_conv_geom *c, int64_t v[DT_CONV_GEOM_LEN]);
/* The output's extents *oh, *ow of convolution c (forward or transposed;
 * < 1 where the window does not fit or the pads crop it all). */
void dt_conv_geom_out(const dt_conv_geom *c, int64_t *oh, int64_t *ow);

typedef struct dt_op_desc {
    const char *name;
    const char *summary; /* one line for --help and docs */
    int ndims;
    const char *dims[DT_MAX_DIMS]; /* in canonical key order */
    int nattrs;
    dt_attr_desc attrs[DT_MAX_ATTRS];
    /* Useful floating-point operations for concrete dims (all >= 1). */
    double (*flops)(const int64_t *dims, const int *attrs);
    /* Checks that every tensor's element count and the flop count of these
     * dims fit in int64 (DT_EOVERFLOW with a message naming the product). */
    int (*check)(const int64_t *dims, const int *attrs, dt_err *e);
    /* The GEMM view for these attribute values: dim roles and flags, and
     * when dims is not NULL (op->ndims concrete values) the sizes by role
     * (1 for a role without a size).  NULL for an op that is not a GEMM. */
    void (*gemm)(const int *attrs, const int64_t *dims, dt_gemm *g);
    /* The dtypes it is defined for: DT_DTYPE_BIT mask (f32 always). */
    unsigned dtypes;
    /* An op whose GEMM view's A is implicit: gathered from the op's own
     * input, as a convolution's A (N·OH·OW × R·S·C) is the im2col of its
     * NHWC image, which no kernel materialises.  The input's element count,
     * and for row i of A the index in the input of each A[i][k] (k < the
     * view's K), or -1 where A holds a zero (padding).  NULL for an op whose
     * A is the matrix itself. */
    int64_t (*a_elems)(const int64_t *dims, const int *attrs);
    void (*a_row)(const int64_t *dims, const int *attrs, int64_t i, int64_t *index);
    /* An op whose constant B is stored otherwise than the view's N×K: a
     * grouped convolution's W is K×(R·S·C/groups), its view's B block
     * diagonal.  The stored element count, and for row n of the view's B
     * (stored N×K, b_trans) the index in the stored B of each B[n][k] (k <
     * the view's K), or -1 where the view holds a zero.  NULL: B is stored
     * as the view says. */
    int64_t (*b_elems)(const int64_t *dims, const int *attrs);
    void (*b_row)(const int64_t *dims, const int *attrs, int64_t n, int64_t *index);
    /* A convolution (conv2d): its geometry for these dims and attribute
     * values.  NULL for an op that is not one. */
    void (*conv)(const int64_t *dims, const int *attrs, dt_conv_geom *g);
} dt_op_desc;

#define DT_DTYPE_BIT(d) (1u << (d))

const dt_op_desc *dt_op_find(const char *name);
/* The registry's length (ops/op_registry.c checks it at compile time): a
 * constant for what is sized by the ops, the cost model's one-hot columns. */
#define DT_N_OPS 3
int dt_op_count(void);
const dt_op_desc *dt_op_at(int i);

/* Index of op in the registry (its position in every per-op table), or -1. */
int dt_op_index(const dt_op_desc *op);

/* The GEMM view of op with attribute values attrs (NULL: the defaults) and,
 * when dims is not NULL (op->ndims concrete values), the sizes by role (1
 * for a role without a dim).  DT_EUNSUPPORTED for an op without one. */
int dt_op_gemm(const dt_op_desc *op, const int *attrs, const int64_t *dims, dt_gemm *g,
               dt_err *e);

/* For an op's gemm hook whose every role is one dim (g->dim filled): the
 * sizes by role from dims, 1 for a role without a dim. */
void dt_gemm_sizes_by_role(const int64_t *dims, dt_gemm *g);

/* Advances attrs (op->nattrs values) to the next combination of op's
 * enumerated attributes' values, last attribute fastest; 0 (and all
 * zeros) after the last one.  Integer attributes stay at their default
 * (they are the kernel's arguments, not its code). */
int dt_op_next_attrs(const dt_op_desc *op, int *attrs);

/* 0 when op is defined for dtype d, else DT_EINVAL "dtype int8 is not
 * available for batch_matmul (it has f32, bf16)". */
int dt_op_check_dtype(const dt_op_desc *op, dt_dtype d, dt_err *e);

/* Index of dim/attr `name` in op, or -1. */
int dt_op_dim_index(const dt_op_desc *op, const char *name);
int dt_op_attr_index(const dt_op_desc *op, const char *name);
/* Index of value in attr, or -1 (an enumerated attribute). */
int dt_attr_value_index(const dt_attr_desc *a, const char *value);
/* The value of attribute a written as text ("bias+gelu"; "2" for an integer
 * one): 0 and *value (an index, or the number), or -1 when a has no such
 * value (an unknown name; not a decimal integer in min..max). */
int dt_attr_parse(const dt_attr_desc *a, const char *text, int *value);
/* dt_attr_parse of a JSON value (a model spec's or a kernel row's): a
 * string, or for an integer attribute also a JSON integer.  0, or -1 when
 * v is neither or holds no value of a. */
struct json_t;
int dt_attr_parse_json(const dt_attr_desc *a, const struct json_t *v, int *value);
/* The text of value v of attribute a: values[v], or the number written to
 * buf (at least 16 bytes) and returned. */
const char *dt_attr_text(const dt_attr_desc *a, int v, char *buf);
/* What a value of a may be, for messages: "one of none, bias, relu" or "an
 * integer in 0..64". */
void dt_attr_allowed(const dt_attr_desc *a, char *buf, size_t n);

/* Checked product of n factors (helper for ops' check functions). */
int dt_checked_product(const int64_t *factors, int n, const char *what, int64_t *out, dt_err *e);

#endif
