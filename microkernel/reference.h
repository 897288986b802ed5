/* Reference kernels (double accumulation) and the check every generated
 * kernel must pass before its time counts: a wrong answer is a failed trial,
 * never a record.
 *
 * Tolerance: |got - ref| <= (K + 8)·2⁻²³·mag + 1e-6·mag + 1e-30, where mag is
 * Σ_k |x_k·w_k| (+ |bias|) of that output: a rigorous bound on float
 * summation error in any order, plus the activation's approximation. */
#ifndef DT_MICROKERNEL_REFERENCE_H
#define DT_MICROKERNEL_REFERENCE_H

#include <stdint.h>

#include "common/error.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"

/* Y[M,N] (and mag[M,N]) from X[M,K], W[N,K], bias[N] or NULL, act DT_ACT_*. */
void dt_ref_dense(int64_t M, int64_t N, int64_t K, const float *X, const float *W,
                  const float *bias, int act, double *Y, double *mag);
/* C[b][M,N] from A[b][M,K] and B[b][K,N] (NN) or B[b][N,K] (NT). */
void dt_ref_bmm(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                int nt, double *C, double *mag);

/* Compares rows×cols of got (row stride ldg) with ref/mag (row stride cols);
 * DT_EINVAL "wrong answer at [i,j]: ..." on the first miss. */
int dt_check_close(const float *got, int64_t ldg, const double *ref, const double *mag,
                   int64_t rows, int64_t cols, int64_t K, dt_err *e);

/* Runs kernel k (built for kop) on seeded random data of these dims with
 * padded strides and guard values, and checks it against the reference.
 * batch is ignored for dense. */
int dt_verify_kernel(const dt_kernel *k, const dt_kernel_op *kop, int64_t batch, int64_t M,
                     int64_t N, int64_t K, int threads, uint64_t seed, dt_err *e);

/* Fills n floats with uniform values in [-1, 1) from seed (xorshift). */
void dt_fill_random(float *x, int64_t n, uint64_t seed);

#endif
