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

/* the same values as ops/op.h's DT_ACT_* (bench passes a GEMM view's act) */
typedef enum {
    DT_PEER_ACT_NONE = 0,
    DT_PEER_ACT_RELU,
    DT_PEER_ACT_GELU,
    DT_PEER_ACT_RELU6,
    DT_PEER_ACT_HARDSWISH
} dt_peer_act;

/* The element types of a problem (the peers' copy of dtypes/dtype.h's
 * recipes; peers/ may not include dtypes/).  0 is f32, so a problem built
 * before dtypes existed keeps its meaning.
 *   DT_PEER_F32   A, B float; C float.
 *   DT_PEER_BF16  A, B bf16 (uint16_t, the upper half of a float); f32
 *                 accumulation; C, bias float.
 *   DT_PEER_INT8  constant weights only: A u8, W s8, s32 accumulation;
 *                 C[m,n] = scale_a·scale_b[n]·Σ_k (A[m,k] − zp_a)·W[n,k]
 *                 + bias[n], then the activation; C, bias float. */
typedef enum { DT_PEER_F32 = 0, DT_PEER_BF16, DT_PEER_INT8 } dt_peer_dtype;

/* One concrete problem: a batched GEMM (an op's GEMM view, ops/op.h,
 * which `dtune bench` turns into this), all row-major and contiguous:
 *   C[b] = A[b]·B[b] for b < batch, A[batch,M,K], C[batch,M,N],
 *   B[batch,K,N], or B[batch,N,K] when b_trans;
 * with constant weights (b_const: batch 1, B = W[N,K], so b_trans) the
 * epilogue follows: + bias[N] (if bias), then the activation.
 * GELU is the erf form: 0.5·x·(1 + erf(x/√2)).
 * A and B have the dtype's element type; C and bias are always float. */
typedef struct dt_peer_problem {
    int64_t batch, M, N, K;
    int b_trans;            /* B[b] stored N×K */
    int b_const;            /* B is the constant W[N,K]: pack() takes it, once */
    int bias;               /* b_const only */
    dt_peer_act act;        /* b_const only */
    int threads;            /* >= 1 */
    dt_peer_dtype dtype;    /* 0 = f32 */
    /* DT_PEER_INT8 only (ignored otherwise): A's scale (finite, > 0) and
     * zero point (0..255), and W's per-output-channel scales scale_b[N]
     * (finite, > 0).  create() copies scale_b; the caller keeps ownership
     * and may free it once create() returned. */
    float scale_a;
    int32_t zp_a;
    const float *scale_b;
    /* DT_PEER_F32 only: the workload accepts bf16 arithmetic (math=bf16):
     * its operands are bf16 values held in floats, so a peer may convert
     * them to bf16 without changing the problem (onednn_bf16 does, and
     * runs only then; the f32 peers ignore it). */
    int math_bf16;
    /* A 2-D convolution (conv.on; conv2d, ops/op_conv2d.c): the GEMM
     * above is its implicit GEMM (M = n·oh·ow, N = k, K = r·s·c, constant
     * weights), but x is the NHWC input X[n,h,w,c] — the view's A (the
     * im2col of X) exists nowhere —, the weights W[k,r,s,c/groups] (OHWI;
     * with one group the view's B N×K, else its diagonal blocks) and y
     * Y[n,oh,ow,k]; oh = (h + pad + pad_b − dilation·(r−1) − 1) / stride + 1,
     * ow = (w + pad_l + pad_r − dilation_w·(s−1) − 1) / stride_w + 1.  Only
     * a peer with dt_peer_desc.conv computes it. */
    struct {
        int on;
        int64_t n, h, w, c, k, r, s;
        int stride, pad, dilation;       /* the height's; pad: the top's */
        int64_t groups;                  /* 0 or 1: one group */
        int stride_w, dilation_w;        /* the width's */
        int pad_l, pad_b, pad_r;         /* the other sides' pads */
        /* 1: the transposed convolution (a deconvolution: the pads crop the
         * full output, out_pad_h / out_pad_w extend it), oh = (h − 1)·stride
         * − pad − pad_b + dilation·(r − 1) + 1 + out_pad_h, ow likewise */
        int transpose, out_pad_h, out_pad_w;
    } conv;
} dt_peer_problem;

typedef struct dt_peer_desc {
    const char *name;        /* "onednn", "onednn_rt", "onednn_bf16", "dnnl_sgemm",
                              * "onednn_conv", "openblas", "libxsmm" */
    const char *description; /* one line for tables and --help */
    /* 1: a peer of convolutions (dt_peer_problem.conv.on) only; 0: a GEMM
     * peer, which cannot run a convolution (its A is implicit): `dtune
     * bench` lists it as skipped on conv2d */
    int conv;
    /* Whether the peer is a peer of problems like p at all (its kind: dtype,
     * math, constant weights; not its sizes), so a report leaves out a
     * column that could only say n/a.  NULL: every problem (create() may
     * still refuse one). */
    int (*applies)(const dt_peer_problem *p);
    /* Prepares for p (primitive creation, dispatch).  DT_EUNSUPPORTED when the
     * peer does not handle this problem, its dtype included (the bench then
     * reports "n/a"). */
    int (*create)(const dt_peer_problem *p, void **state, dt_err *e);
    /* b_const: prepares the constant weights W[N,K] (reorder / prepack),
     * timed apart from run.  Else a no-op.  May be called again with new
     * weights.  W's elements have the dtype's B type (float, bf16 as
     * uint16_t, int8_t). */
    int (*pack)(void *state, const void *W, dt_err *e);
    /* One call: b_const run(state, A, bias, C); else run(state, A, B, C) —
     * `b` is the bias (float[N]) with constant weights, else the second
     * operand.  x and a second operand have the dtype's element types; y is
     * always float. */
    int (*run)(void *state, const void *x, const void *b, void *y, dt_err *e);
    void (*destroy)(void *state);
} dt_peer_desc;

/* The peers compiled into this build (those whose library CMake found), in a
 * fixed order; *n gets the count. */
const dt_peer_desc *const *dt_peers(int *n);
const dt_peer_desc *dt_peer_find(const char *name);

/* ---- machine ceilings (peers/peak.c, peers/stream.c) ---------------------- */

/* What a peak probe runs: independent chains of one instruction per dtype,
 * on the widest vectors the CPU and OS support (docs/peers.md). */
typedef enum {
    DT_PEAK_F32_FMA = 0, /* vfmadd231ps: 2 flops per lane */
    DT_PEAK_BF16_DP,     /* vdpbf16ps (avx512_bf16): 32 bf16 multiply-adds per zmm, 2 flops each */
    DT_PEAK_INT8_DP,     /* vpdpbusd (avx512_vnni zmm: 64, avx_vnni ymm: 32 u8·s8
                          * multiply-adds), 2 ops each */
    DT_PEAK_AMX_BF16,    /* tdpbf16ps on 16×16 f32 tiles, K = 32 bf16: 8192 multiply-adds */
    DT_PEAK_AMX_INT8,    /* tdpbusd on 16×16 s32 tiles, K = 64 u8·s8: 16384 multiply-adds */
    DT_PEAK_COUNT
} dt_peak_kind;

/* "f32", "bf16", "int8", "amx_bf16", "amx_int8"; "?" for an out-of-range value. */
const char *dt_peak_kind_name(dt_peak_kind k);
/* "GFLOP/s" (f32, bf16, amx_bf16) or "GOP/s" (int8, amx_int8). */
const char *dt_peak_unit(dt_peak_kind k);
/* The instruction the probe of k runs on this machine, e.g. "avx512_bf16
 * vdpbf16ps zmm"; NULL when the CPU (or OS) lacks every instruction for k.
 * The AMX kinds also need the process's tile permission (common/amx.h). */
const char *dt_peak_instruction(dt_peak_kind k);
/* Why k has no probe here (NULL when it has one): "no instruction on this
 * CPU", or for the AMX kinds dt_amx_usable's reason ("this CPU has no AMX",
 * "Linux refused AMX tile data: ..."); a static string. */
const char *dt_peak_why_not(dt_peak_kind k);

/* Measured peak of k with `threads` threads (OpenMP, each running its own
 * chains; an AMX thread asks dt_amx_request first and configures its own
 * tiles), in GFLOP/s or GOP/s (2 per multiply-add), summed over threads:
 * run for about `seconds`, best of 3 repeats.  NAN when the CPU lacks the
 * instruction (dt_peak_instruction is NULL) or k is out of range.
 * f32 always has a probe (AVX-512, AVX2+FMA, or scalar). */
double dt_peak_gops(dt_peak_kind k, int threads, double seconds);

/* dt_peak_gops(DT_PEAK_F32_FMA, threads, seconds): the single-precision FMA
 * ceiling (kept for callers of the f32-only probe). */
double dt_fma_peak_gflops(int threads, double seconds);

/* Measured read bandwidth from memory with `threads` threads, in GB/s
 * (10^9 bytes/s): vectorized sums over a buffer of dt_stream_buffer_bytes()
 * (several times the L3, so it streams from DRAM), each thread its own
 * contiguous part, passes repeated for about `seconds`, the best pass
 * counted.  The roof of weight streaming (small-M layers with big weights).
 * NAN when the buffer cannot be allocated. */
double dt_stream_read_gbps(int threads, double seconds);
/* The buffer size the bandwidth probe uses here: max(4 × L3, 256 MiB). */
uint64_t dt_stream_buffer_bytes(void);

#endif
