/* Loading a built micro-kernel (dlopen) and calling it through its op's
 * hooks (microkernel/mk_op.h), so that no caller branches on the op: every
 * kernel computes the batched GEMM of its op's view (ops/op.h, dt_gemm).
 *
 * Ownership: dt_kernel_load fills a dt_kernel that owns the dlopen handle;
 * dt_kernel_unload closes it (function pointers are invalid afterwards).
 * dt_gemm_args borrows every pointer for the call. */
#ifndef DT_MICROKERNEL_LOADER_H
#define DT_MICROKERNEL_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "microkernel/codegen.h"

#define DT_KERNEL_MAX_SYMS 4

struct dt_mk_op;

typedef struct dt_kernel {
    void *handle;
    const char *info;                    /* dtk_info: "<op> <attrs>; {annotation}" */
    const struct dt_mk_op *op;           /* the (op, dtype) whose entry points it exports */
    void (*fn[DT_KERNEL_MAX_SYMS])(void); /* those entry points (op->syms) */
} dt_kernel;

/* One call: C[b] = act(A[b]·B[b] + bias) for b < batch (the op's GEMM view).
 * ld* are row strides, s* batch strides, in elements of each tensor's type
 * (dtypes/dtype.h: f32 float; bf16 uint16_t A and B; int8 uint8_t A and
 * int8_t B; w8a32 float A and int8_t B; C float for all).  For an op whose B
 * is constant (dt_gemm.b_const), b is the packed B (dt_kernel_pack) and
 * ldb/sb are unused. */
typedef struct dt_gemm_args {
    int64_t batch, M, N, K;
    const void *a;
    int64_t lda, sa;
    const void *b;
    int64_t ldb, sb;
    const float *bias; /* NULL without the bias epilogue */
    void *c;
    int64_t ldc, sc;
    int threads;       /* <= 0: the annotation's thread count */
    /* int8: A's quantization, real = scale_a·(a − zp_a); ignored otherwise */
    float scale_a;
    int32_t zp_a;
    /* The op's own dims and attribute values (dt_gemm.dims, .attrs), which
     * a kernel whose A is implicit needs (a convolution: a is its NHWC
     * input, lda/sa unused; c is its output, ldc = N); NULL otherwise. */
    const int64_t *dims;
    const int *attrs;
} dt_gemm_args;

/* The arguments of g's sizes over contiguous tensors: A[batch][M][K],
 * B[batch][K][N] (or [N][K] when g->b_trans; the packed B when
 * g->b_const), bias[N] (passed only when g->bias), C[batch][M][N]; dims
 * and attrs g's own when it has them (borrowed: g must outlive the call). */
dt_gemm_args dt_gemm_args_contiguous(const dt_gemm *g, const void *A, const void *B,
                                     const float *bias, void *C, int threads);

/* Loads a kernel: the first registered (op, dtype) whose entry points it
 * all exports.  DT_EIO when it cannot be loaded, DT_EINVAL when it is not a
 * dtune kernel of this ABI or exports no known entry points. */
int dt_kernel_load(const char *so_path, dt_kernel *k, dt_err *e);
void dt_kernel_unload(dt_kernel *k);

/* 1 when k is a kernel of kop's op and dtype (it exports those entry points). */
int dt_kernel_computes(const dt_kernel *k, const dt_kernel_op *kop);

/* One call of k (a->b packed when the op's B is constant). */
void dt_kernel_run(const dt_kernel *k, const dt_gemm_args *a);
/* Bytes of the constant B of problem g (the op's weights: the view's N×K,
 * or as the op stores them, e.g. a grouped convolution's) packed for k; 0
 * when k's op does not prepack B.  g: from dt_op_gemm with dims, or for a
 * GEMM op's N×K weights DT_GEMM_NK(N, K). */
size_t dt_kernel_packed_size(const dt_kernel *k, const dt_gemm *g);
/* Packs the constant B of problem g (as the op stores it, in the dtype's B
 * type) into packed (dt_kernel_packed_size bytes); scale_b[N] are the
 * per-column weight scales of a quantized dtype (int8, w8a32), ignored
 * (may be NULL) otherwise.  Nothing for an op without packing. */
void dt_kernel_pack(const dt_kernel *k, const dt_gemm *g, const void *B, const float *scale_b,
                    void *packed);
/* dt_kernel_pack for data from a user (libdtune, an export's caller): for a
 * quantized dtype (int8, w8a32) it first refuses a NULL scale_b or any
 * scale_b[n] (n < N) that is zero, NaN or infinite — DT_EINVAL "scale_b[n]
 * = … is not a finite non-zero number" — and packs nothing then.  Other
 * dtypes ignore scale_b, as dt_kernel_pack does. */
int dt_kernel_pack_checked(const dt_kernel *k, const dt_gemm *g, const void *B,
                           const float *scale_b, void *packed, dt_err *e);
/* The problem of a GEMM op's constant N×K weights alone (no op dims), for
 * dt_kernel_pack and dt_kernel_packed_size. */
#define DT_GEMM_NK(n, k) (&(const dt_gemm){.N = (n), .K = (k), .b_const = 1})

#endif
