/* The per-shape double-accumulation reference of `dtune bench`
 * (bench/bench_ref.h). */
#include "bench/bench_ref.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "microkernel/codegen.h"

#define TR 4  /* rows of a tile */
#define TC 16 /* columns of a tile: two 8-double vectors */

typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef int64_t v8l __attribute__((vector_size(64)));

int64_t dt_bench_ref_ldb(int64_t N) { return (N + TC - 1) / TC * TC; }

void dt_bench_ref_pack(int64_t N, int64_t K, const float *B, int nk, float *Bt)
{
    int64_t ldb = dt_bench_ref_ldb(N);
    for (int64_t k = 0; k < K; k++) {
        float *row = Bt + k * ldb;
        if (nk) {
            for (int64_t j = 0; j < N; j++)
                row[j] = B[j * K + k];
        } else {
            memcpy(row, B + k * N, (size_t)N * sizeof *row);
        }
        for (int64_t j = N; j < ldb; j++)
            row[j] = 0.0f;
    }
}

/* |v|: a macro, so no function takes or returns a vector */
#define VABS(v) ((v8d)((v8l)(v) & (int64_t)0x7fffffffffffffffLL))

/* One row of the tile at step k: s += x·w, m += |x·w| on both vectors. */
#define ROW(r)                                                                   \
    do {                                                                         \
        double xv = x##r[k];                                                     \
        v8d t0 = w0 * xv, t1 = w1 * xv;                                          \
        s##r##0 += t0;                                                           \
        s##r##1 += t1;                                                           \
        m##r##0 += VABS(t0);                                                     \
        m##r##1 += VABS(t1);                                                     \
    } while (0)

/* Row r of the tile out to ref/mag (cols valid columns). */
#define STORE(r)                                                                 \
    do {                                                                         \
        if (r < rows) {                                                          \
            double sv[TC], mv[TC];                                               \
            memcpy(sv, &s##r##0, sizeof s##r##0);                                \
            memcpy(sv + 8, &s##r##1, sizeof s##r##1);                            \
            memcpy(mv, &m##r##0, sizeof m##r##0);                                \
            memcpy(mv + 8, &m##r##1, sizeof m##r##1);                            \
            memcpy(ref + r * N, sv, (size_t)cols * sizeof *sv);                  \
            memcpy(mag + r * N, mv, (size_t)cols * sizeof *mv);                  \
        }                                                                        \
    } while (0)

/* One tile: rows <= TR rows, cols <= TC columns; rows past the last one
 * re-read it and are not stored.  16 named accumulators, so they live in
 * registers; the vectors stay local to the function (no vector arguments or
 * returns, whose ABI differs between the clones). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
ref_tile(int64_t rows, int64_t cols, int64_t N, int64_t K, const float *X, const float *Bt,
         int64_t ldb, double *ref, double *mag)
{
    const float *x0 = X, *x1 = X + (rows > 1 ? 1 : 0) * K, *x2 = X + (rows > 2 ? 2 : rows - 1) * K,
                *x3 = X + (rows > 3 ? 3 : rows - 1) * K;
    v8d s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
    v8d m00 = {0}, m01 = {0}, m10 = {0}, m11 = {0}, m20 = {0}, m21 = {0}, m30 = {0}, m31 = {0};
    for (int64_t k = 0; k < K; k++) {
        v8f wf0, wf1;
        memcpy(&wf0, Bt + k * ldb, sizeof wf0);
        memcpy(&wf1, Bt + k * ldb + 8, sizeof wf1);
        v8d w0 = __builtin_convertvector(wf0, v8d), w1 = __builtin_convertvector(wf1, v8d);
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
    }
    STORE(0);
    STORE(1);
    STORE(2);
    STORE(3);
}

static double act_of(double v, int act)
{
    if (act == DT_ACT_RELU)
        return v > 0 ? v : 0;
    if (act == DT_ACT_GELU)
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    return v;
}

void dt_bench_ref_rows(int64_t M, int64_t N, int64_t K, const float *X, const float *Bt,
                       const float *bias, int act, double *ref, double *mag, int threads)
{
    int64_t ldb = dt_bench_ref_ldb(N);
    int64_t mt = (M + TR - 1) / TR, nt = ldb / TC, items = mt * nt;
    int team = threads < 1 ? 1 : threads;
    if (items < 2 * team || (double)M * (double)N * (double)K < 1e6)
        team = 1; /* a fork/join costs more than a small problem */
    /* item = column strip outer, row block inner: neighbours share the strip */
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t jb = it / mt, ib = it % mt;
        int64_t i0 = ib * TR, j0 = jb * TC;
        int64_t rows = M - i0 < TR ? M - i0 : TR, cols = N - j0 < TC ? N - j0 : TC;
        ref_tile(rows, cols, N, K, X + i0 * K, Bt + j0, ldb, ref + i0 * N + j0,
                 mag + i0 * N + j0);
    }
    if (!bias && act == DT_ACT_NONE)
        return;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double *s = &ref[i * N + j];
            if (bias) {
                *s += bias[j];
                mag[i * N + j] += fabs((double)bias[j]);
            }
            *s = act_of(*s, act);
        }
}
