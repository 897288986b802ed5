/* The per-shape reference of `dtune bench`: the exact problem of one shape
 * (the benchmark's own inputs, at the shape's real size) computed with
 * double accumulation, against which every candidate's output on that shape
 * is checked before its time counts (dt_bench_opts.verify_shapes).
 *
 * It computes what microkernel/reference.h computes — the value and
 * mag = Σ|x·w| (+ |bias|) of every output, for the same tolerance
 * (dt_check_close) — but fast enough for every shape of a run: a 4×16
 * register tile of double accumulators over the second operand packed as
 * K×ldb (transposed, zero-padded), written with GCC vectors and compiled
 * for AVX-512, AVX2 and baseline x86-64 (target_clones), tiles spread over
 * OpenMP threads.
 *
 * Ownership: every pointer is borrowed for the call; outputs are
 * caller-allocated. */
#ifndef DT_BENCH_BENCH_REF_H
#define DT_BENCH_BENCH_REF_H

#include <stdint.h>

/* Row stride of a packed second operand with N columns: N rounded up to 16. */
int64_t dt_bench_ref_ldb(int64_t N);

/* Packs the second operand into Bt[K][dt_bench_ref_ldb(N)], zero-padded:
 * from B[N,K] (nk = 1: dense weights W, bmm NT) or from B[K,N] (nk = 0: bmm
 * NN). */
void dt_bench_ref_pack(int64_t N, int64_t K, const float *B, int nk, float *Bt);

/* ref/mag[M,N] (row-major, contiguous) of act(X[M,K] · B + bias), X
 * row-major with row stride K, Bt from dt_bench_ref_pack, bias[N] or NULL,
 * act DT_ACT_* of microkernel/codegen.h; threads >= 1. */
void dt_bench_ref_rows(int64_t M, int64_t N, int64_t K, const float *X, const float *Bt,
                       const float *bias, int act, double *ref, double *mag, int threads);

#endif
