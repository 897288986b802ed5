/* The double-accumulation reference and the verification of a kernel
 * (microkernel/reference.h). */
#include "microkernel/reference.h"
#include "common/mem.h"
#include "microkernel/operands.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void dt_fill_random(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)((double)(s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    }
}

double dt_ref_act(double v, int act)
{
    if (act == DT_ACT_RELU)
        return v > 0 ? v : 0;
    if (act == DT_ACT_GELU)
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    if (act == DT_ACT_RELU6)
        return v < 0 ? 0 : v > 6 ? 6 : v;
    if (act == DT_ACT_HARDSWISH)
        return v * (v < -3 ? 0 : v > 3 ? 6 : v + 3) / 6;
    return v;
}

/* ---- the tiled double GEMM ---------------------------------------------- */

#define TR 4  /* rows of a tile */
#define TC 16 /* columns of a tile: two 8-double vectors */

typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef int64_t v8l __attribute__((vector_size(64)));

int64_t dt_ref_ldb(int64_t N) { return (N + TC - 1) / TC * TC; }

void dt_ref_pack_b(const dt_gemm *g, const float *B, int64_t b, float *bt)
{
    const int64_t N = g->N, K = g->K, ldb = dt_ref_ldb(N);
    const float *src = B + b * N * K;
    for (int64_t k = 0; k < K; k++) {
        float *row = bt + k * ldb;
        if (g->b_trans) {
            for (int64_t j = 0; j < N; j++)
                row[j] = src[j * K + k];
        } else {
            memcpy(row, src + k * N, (size_t)N * sizeof *row);
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

/* Columns [lo, hi) of row r of the tile out to ref/mag. */
#define STORE(r)                                                                 \
    do {                                                                         \
        if (r < rows) {                                                          \
            double sv[TC], mv[TC];                                               \
            memcpy(sv, &s##r##0, sizeof s##r##0);                                \
            memcpy(sv + 8, &s##r##1, sizeof s##r##1);                            \
            memcpy(mv, &m##r##0, sizeof m##r##0);                                \
            memcpy(mv + 8, &m##r##1, sizeof m##r##1);                            \
            memcpy(ref + r * ldr, sv + lo, (size_t)(hi - lo) * sizeof *sv);      \
            memcpy(mag + r * ldr, mv + lo, (size_t)(hi - lo) * sizeof *mv);      \
        }                                                                        \
    } while (0)

/* One tile of rows <= TR rows (of X, row stride K) and the TC columns of bt
 * from its column 0; columns [lo, hi) of it are stored.  Rows past the last
 * one re-read it and are not stored.  16 named accumulators, so they live in
 * registers; the vectors stay local to the function (no vector arguments or
 * returns, whose ABI differs between the clones). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
ref_tile(int64_t rows, int64_t lo, int64_t hi, int64_t K, const float *X, const float *bt,
         int64_t ldb, double *ref, double *mag, int64_t ldr)
{
    const float *x0 = X, *x1 = X + (rows > 1 ? 1 : 0) * K, *x2 = X + (rows > 2 ? 2 : rows - 1) * K,
                *x3 = X + (rows > 3 ? 3 : rows - 1) * K;
    v8d s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0}, s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
    v8d m00 = {0}, m01 = {0}, m10 = {0}, m11 = {0}, m20 = {0}, m21 = {0}, m30 = {0}, m31 = {0};
    for (int64_t k = 0; k < K; k++) {
        v8f wf0, wf1;
        memcpy(&wf0, bt + k * ldb, sizeof wf0);
        memcpy(&wf1, bt + k * ldb + 8, sizeof wf1);
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

void dt_ref_block(const dt_gemm *g, const float *A, int64_t b, const float *bt,
                  const float *bias, const double *colscale, int64_t i0, int64_t i1, int64_t j0,
                  int64_t j1, double *ref, double *mag, int64_t ldr)
{
    const int64_t K = g->K, ldb = dt_ref_ldb(g->N);
    const float *a = A + b * g->M * K;
    if (j1 - j0 < TC / 2) {
        /* a few columns (single outputs the runner samples): one output at
         * a time, the same sums in the same order as a tile's lanes */
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = j0; j < j1; j++) {
                double s = 0, m = 0;
                for (int64_t k = 0; k < K; k++) {
                    double t = (double)bt[k * ldb + j] * (double)a[i * K + k];
                    s += t;
                    m += fabs(t);
                }
                ref[(i - i0) * ldr + (j - j0)] = s;
                mag[(i - i0) * ldr + (j - j0)] = m;
            }
    } else {
        for (int64_t jt = j0 / TC * TC; jt < j1; jt += TC) {
            int64_t lo = jt < j0 ? j0 - jt : 0, hi = j1 - jt < TC ? j1 - jt : TC;
            for (int64_t i = i0; i < i1; i += TR)
                ref_tile(i1 - i < TR ? i1 - i : TR, lo, hi, K, a + i * K, bt + jt, ldb,
                         ref + (i - i0) * ldr + (jt + lo - j0),
                         mag + (i - i0) * ldr + (jt + lo - j0), ldr);
        }
    }
    if (!g->bias && g->act == DT_ACT_NONE && !colscale)
        return;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
            double *s = &ref[(i - i0) * ldr + (j - j0)];
            if (colscale) { /* a quantized dtype's dequantization */
                *s *= colscale[j];
                mag[(i - i0) * ldr + (j - j0)] *= fabs(colscale[j]);
            }
            if (g->bias) {
                *s += bias[j];
                mag[(i - i0) * ldr + (j - j0)] += fabs((double)bias[j]);
            }
            *s = dt_ref_act(*s, g->act);
        }
}

int dt_ref_gemm(const dt_gemm *g, const float *A, const float *B, const float *bias,
                const double *colscale, double *ref, double *mag, dt_err *e)
{
    float *bt = dt_alloc64((size_t)(g->K * dt_ref_ldb(g->N)) * sizeof *bt);
    if (!bt)
        return dt_errf(e, DT_ENOMEM, "out of memory for the reference");
    for (int64_t b = 0; b < g->batch; b++) {
        dt_ref_pack_b(g, B, b, bt);
        int64_t off = b * g->M * g->N;
        dt_ref_block(g, A, b, bt, bias, colscale, 0, g->M, 0, g->N, ref + off, mag + off, g->N);
    }
    free(bt);
    return 0;
}

/* the dtype row's tol_per_k·K + tol_base (dtypes/dtype.c says why each);
 * an unknown dtype: f32's */
double dt_ref_tol_k(dt_dtype d, int64_t K)
{
    const dt_dtype_row *r = dt_dtype_info(d);
    if (!r)
        r = dt_dtype_info(DT_DTYPE_F32);
    return r->tol_per_k * (double)K + r->tol_base;
}

int dt_check_close_tol(const float *got, int64_t ldg, const double *ref, const double *mag,
                       int64_t rows, int64_t cols, double tol_k, dt_err *e)
{
    const double eps = FLT_EPSILON; /* 2^-23 */
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double g = got[i * ldg + j], r = ref[i * cols + j], m = mag[i * cols + j];
            double tol = tol_k * eps * m + 1e-6 * m + 1e-30;
            if (!(fabs(g - r) <= tol)) /* also catches NaN */
                return dt_errf(e, DT_EINVAL,
                               "wrong answer at [%lld,%lld]: got %.9g, expected %.9g "
                               "(tolerance %.3g)",
                               (long long)i, (long long)j, g, r, tol);
        }
    return 0;
}

int dt_check_close(const float *got, int64_t ldg, const double *ref, const double *mag,
                   int64_t rows, int64_t cols, int64_t K, dt_err *e)
{
    return dt_check_close_tol(got, ldg, ref, mag, rows, cols, dt_ref_tol_k(DT_DTYPE_F32, K), e);
}

/* ---- verification of a kernel ----------------------------------------------- */

#define GUARD 12345.0f

/* Checks that the padding columns of a strided output kept their guard. */
static int check_guard(const float *y, int64_t rows, int64_t cols, int64_t ld, dt_err *e)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = cols; j < ld; j++)
            if (y[i * ld + j] != GUARD)
                return dt_errf(e, DT_EINVAL, "kernel wrote outside the output at [%lld,%lld]",
                               (long long)i, (long long)j);
    return 0;
}

/* One run of k on g's sizes in dtype d: A (row stride K + 3, poison past
 * K), B contiguous (packed first when constant), bias, C (row stride N + 5,
 * guard values past N), checked against the reference per matrix. */
static int verify_run(const dt_kernel *k, const dt_gemm *g, dt_dtype d, int threads,
                      uint64_t seed, dt_err *e)
{
    const int64_t bt = g->batch, M = g->M, N = g->N, K = g->K;
    /* strides wider than the rows; an op whose A is implicit takes its input
     * and output whole (ldc = N) */
    const int implicit = g->op && g->op->a_row;
    const int64_t lda = implicit ? 0 : K + 3, ldc = implicit ? N : N + 5;
    dt_operands o;
    int rc = dt_operands_make(&o, d, g, lda, seed, e);
    if (rc)
        return rc;
    float *C = malloc((size_t)(bt * M * ldc) * sizeof *C);
    double *ref = malloc((size_t)(bt * M * N) * sizeof *ref);
    double *mag = malloc((size_t)(bt * M * N) * sizeof *mag);
    size_t psz = g->b_const ? dt_kernel_packed_size(k, g) : 0;
    void *packed = g->b_const ? dt_alloc64(psz ? psz : 64) : NULL;
    if (!C || !ref || !mag || (g->b_const && !packed)) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory verifying a kernel");
        goto out;
    }
    for (int64_t i = 0; i < bt * M * ldc; i++)
        C[i] = GUARD;
    dt_gemm_args args = {.batch = bt, .M = M, .N = N, .K = K, .a = o.A, .lda = lda,
                         .sa = M * lda, .b = o.B, .ldb = g->b_trans ? K : N, .sb = N * K,
                         .bias = g->bias ? o.bias : NULL, .c = C, .ldc = ldc, .sc = M * ldc,
                         .threads = threads, .scale_a = o.scale_a, .zp_a = o.zp_a,
                         .dims = g->op ? g->dims : NULL, .attrs = g->op ? g->attrs : NULL};
    if (g->b_const) {
        dt_kernel_pack(k, g, o.B, o.scale_b, packed);
        args.b = packed;
    }
    dt_kernel_run(k, &args);
    if ((rc = dt_ref_gemm(g, o.Aref, o.Bref, o.bias, o.colscale, ref, mag, e)))
        goto out;
    for (int64_t b = 0; b < bt && !rc; b++) {
        rc = dt_check_close_tol(C + b * M * ldc, ldc, ref + b * M * N, mag + b * M * N, M, N,
                                dt_ref_tol_k(d, K), e);
        if (rc && g->batched)
            dt_err_prefix(e, "batch %lld", (long long)b);
        else if (!rc)
            rc = check_guard(C + b * M * ldc, M, N, ldc, e);
    }
out:
    dt_operands_free(&o);
    free(C);
    free(ref);
    free(mag);
    free(packed);
    return rc;
}

int dt_verify_kernel(const dt_kernel *k, const dt_kernel_op *kop, int64_t batch, int64_t M,
                     int64_t N, int64_t K, int threads, uint64_t seed, dt_err *e)
{
    if (!dt_kernel_computes(k, kop))
        return dt_errf(e, DT_EINVAL, "kernel has no %s entry point", kop->op->name);
    if (kop->op->a_row)
        return dt_errf(e, DT_EINVAL, "%s's A is implicit: verify it on its dims "
                       "(dt_verify_kernel_dims)", kop->op->name);
    dt_gemm g;
    int rc = dt_kernel_op_gemm(kop, &g, e);
    if (rc)
        return rc;
    g.batch = g.batched ? batch : 1;
    g.M = M;
    g.N = N;
    g.K = K;
    rc = verify_run(k, &g, kop->dtype, threads, seed, e);
    if (rc)
        dt_err_prefix(e, "M=%lld N=%lld K=%lld batch=%lld threads=%d", (long long)M,
                      (long long)N, (long long)K, (long long)batch, threads);
    return rc;
}

int dt_verify_kernel_dims(const dt_kernel *k, const dt_kernel_op *kop, const int64_t *dims,
                          int threads, uint64_t seed, dt_err *e)
{
    if (!dt_kernel_computes(k, kop))
        return dt_errf(e, DT_EINVAL, "kernel has no %s entry point", kop->op->name);
    int rc = kop->op->check(dims, kop->attrs, e);
    dt_gemm g;
    if (!rc)
        rc = dt_op_gemm(kop->op, kop->attrs, dims, &g, e);
    if (!rc)
        rc = verify_run(k, &g, kop->dtype, threads, seed, e);
    if (rc) {
        char at[256];
        size_t len = 0;
        at[0] = 0;
        for (int d = 0; d < kop->op->ndims && len < sizeof at; d++)
            len += (size_t)snprintf(at + len, sizeof at - len, "%s%s=%lld", d ? " " : "",
                                    kop->op->dims[d], (long long)dims[d]);
        dt_err_prefix(e, "%s threads=%d", at, threads);
    }
    return rc;
}
