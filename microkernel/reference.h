/* The reference: the one double-accumulation computation of an op's result
 * (its GEMM view, ops/op.h), against which every kernel, peer and
 * exported file is checked — a wrong answer is a failed trial, never a
 * record — and the check itself.  Users: dt_verify_kernel (below), the
 * runner's trials (measure/runner_child.c), `dtune bench` on every shape
 * (bench/bench.c), the export tests.
 *
 * For each output it computes the value and mag = Σ_k |a_k·b_k| (+ |bias|),
 * summing in k order in double: a 4×16 register tile of double accumulators
 * over B packed K×ldb (zero-padded), GCC vectors compiled for AVX-512, AVX2
 * and baseline x86-64 (target_clones).  The activation is dt_ref_act.
 *
 * Tolerance: |got - ref| <= (K + 8)·2⁻²³·mag + 1e-6·mag + 1e-30: a rigorous
 * bound on float summation error in any order, plus the activation's
 * approximation.  Other dtypes (microkernel/operands.h: the reference sums
 * their exact real values, times a per-column dequantization factor) scale
 * the first term by dt_ref_tol_k, the dtype row's tol_per_k·K + tol_base
 * (dtypes/dtype.h): bf16 2(K + 8), int8 8 (its s32 sum is exact), w8a32
 * K + 8, math=bf16 bf16's.
 *
 * Ownership: every pointer is borrowed for the call; outputs are
 * caller-allocated. */
#ifndef DT_MICROKERNEL_REFERENCE_H
#define DT_MICROKERNEL_REFERENCE_H

#include <stdint.h>

#include "common/error.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"

/* The activation act (DT_ACT_*) of v, exactly: ReLU, GELU's erf form. */
double dt_ref_act(double v, int act);

/* Row stride of a packed B with N columns: N rounded up to 16. */
int64_t dt_ref_ldb(int64_t N);
/* Packs matrix b of B (the whole batch, contiguous, as g stores it:
 * [batch][N][K] when g->b_trans, else [batch][K][N]) into
 * bt[K][dt_ref_ldb(g->N)], zero-padded. */
void dt_ref_pack_b(const dt_gemm *g, const float *B, int64_t b, float *bt);
/* ref/mag of rows [i0, i1) × columns [j0, j1) of matrix b (0 <= i0 < i1 <=
 * g->M, 0 <= j0 < j1 <= g->N), at ref[(i - i0)·ldr + (j - j0)]: A the whole
 * batch, contiguous [batch][M][K]; bt matrix b's packed B; bias[N] read only
 * when g->bias. */
void dt_ref_block(const dt_gemm *g, const float *A, int64_t b, const float *bt,
                  const float *bias, const double *colscale, int64_t i0, int64_t i1, int64_t j0,
                  int64_t j1, double *ref, double *mag, int64_t ldr);
/* The whole result, ref/mag[batch][M][N], over contiguous tensors.
 * colscale[N] (NULL: none) multiplies each column's sum before the bias
 * (a quantized dtype's dequantization; dt_ref_block likewise).
 * DT_ENOMEM when its scratch cannot be allocated. */
int dt_ref_gemm(const dt_gemm *g, const float *A, const float *B, const float *bias,
                const double *colscale, double *ref, double *mag, dt_err *e);

/* Compares rows×cols of got (row stride ldg) with ref/mag (row stride cols)
 * at the f32 tolerance for K; DT_EINVAL "wrong answer at [i,j]: ..." on the
 * first miss.  _tol: with the first term's factor tol_k (dt_ref_tol_k). */
int dt_check_close(const float *got, int64_t ldg, const double *ref, const double *mag,
                   int64_t rows, int64_t cols, int64_t K, dt_err *e);
int dt_check_close_tol(const float *got, int64_t ldg, const double *ref, const double *mag,
                       int64_t rows, int64_t cols, double tol_k, dt_err *e);
/* The tolerance factor of dtype d's results for K (see above; an
 * out-of-range dtype gets f32's). */
double dt_ref_tol_k(dt_dtype d, int64_t K);

/* Runs kernel k (built for kop, any dtype) on seeded random operands of
 * these sizes by role (microkernel/operands.h; batch is ignored by an op
 * without a batch dim) with padded strides, poison past A's rows and guard
 * values past C's, and checks it against the reference.  "kernel has no <op> entry point" when k is not kop's. */
int dt_verify_kernel(const dt_kernel *k, const dt_kernel_op *kop, int64_t batch, int64_t M,
                     int64_t N, int64_t K, int threads, uint64_t seed, dt_err *e);
/* dt_verify_kernel on the op's own dims (op->ndims values) and kop's
 * attribute values: the one way to verify an op whose A is implicit (a
 * convolution: its image size, window, stride, padding); the op's check
 * refuses impossible dims first. */
int dt_verify_kernel_dims(const dt_kernel *k, const dt_kernel_op *kop, const int64_t *dims,
                          int threads, uint64_t seed, dt_err *e);

/* Fills n floats with uniform values in [-1, 1) from seed (xorshift). */
void dt_fill_random(float *x, int64_t n, uint64_t seed);

#endif
