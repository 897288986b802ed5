/* Benchmark peers: the libraries a user would pick instead of dtune
 * (oneDNN, OpenBLAS, LIBXSMM), wrapped behind one interface so `dtune bench`
 * can time them side by side with dtune's micro-kernels, and the FMA-peak
 * probe that gives the machine's ceiling.
 *
 * Every peer computes exactly the problem (same output as the reference):
 * where a library cannot fuse the epilogue, the peer applies it in a separate
 * pass over Y, as a user of that library would.
 *
 * Ownership: a peer state is created by create() and freed by destroy();
 * input pointers are borrowed for the duration of each call. */
#ifndef DT_PEERS_PEER_H
#define DT_PEERS_PEER_H

#include <stdint.h>

#include "common/error.h"

typedef enum { DT_PEER_ACT_NONE = 0, DT_PEER_ACT_RELU, DT_PEER_ACT_GELU } dt_peer_act;

/* One concrete problem: a batched GEMM (an op's GEMM view, sketch/op.h,
 * which `dtune bench` turns into this), all row-major and contiguous:
 *   C[b] = A[b]·B[b] for b < batch, A[batch,M,K], C[batch,M,N],
 *   B[batch,K,N], or B[batch,N,K] when b_trans;
 * with constant weights (b_const: batch 1, B = W[N,K], so b_trans) the
 * epilogue follows: + bias[N] (if bias), then the activation.
 * GELU is the erf form: 0.5·x·(1 + erf(x/√2)). */
typedef struct dt_peer_problem {
    int64_t batch, M, N, K;
    int b_trans;            /* B[b] stored N×K */
    int b_const;            /* B is the constant W[N,K]: pack() takes it, once */
    int bias;               /* b_const only */
    dt_peer_act act;        /* b_const only */
    int threads;            /* >= 1 */
} dt_peer_problem;

typedef struct dt_peer_desc {
    const char *name;        /* "onednn", "onednn_rt", "dnnl_sgemm", "openblas", "libxsmm" */
    const char *description; /* one line for tables and --help */
    /* Prepares for p (primitive creation, dispatch).  DT_EUNSUPPORTED when the
     * peer does not handle this problem (the bench then reports "n/a"). */
    int (*create)(const dt_peer_problem *p, void **state, dt_err *e);
    /* b_const: prepares the constant weights W[N,K] (reorder / prepack),
     * timed apart from run.  Else a no-op.  May be called again with new
     * weights. */
    int (*pack)(void *state, const float *W, dt_err *e);
    /* One call: b_const run(state, A, bias, C); else run(state, A, B, C) —
     * `b` is the bias with constant weights, else the second operand. */
    int (*run)(void *state, const float *x, const float *b, float *y, dt_err *e);
    void (*destroy)(void *state);
} dt_peer_desc;

/* The peers compiled into this build (those whose library CMake found), in a
 * fixed order; *n gets the count. */
const dt_peer_desc *const *dt_peers(int *n);
const dt_peer_desc *dt_peer_find(const char *name);

/* Measured single-precision FMA throughput of this machine with `threads`
 * threads, in GFLOP/s (2 flops per FMA lane): an unrolled loop of independent
 * FMA chains on the widest vectors the target supports, run for about
 * `seconds`, best of a few repeats. */
double dt_fma_peak_gflops(int threads, double seconds);

#endif
