#include "microkernel/reference.h"
#include "common/mem.h"

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

static double apply_act(double v, int act)
{
    if (act == DT_ACT_RELU)
        return v > 0 ? v : 0;
    if (act == DT_ACT_GELU)
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    return v;
}

void dt_ref_dense(int64_t M, int64_t N, int64_t K, const float *X, const float *W,
                  const float *bias, int act, double *Y, double *mag)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                double t = (double)X[i * K + k] * (double)W[j * K + k];
                s += t;
                m += fabs(t);
            }
            if (bias) {
                s += bias[j];
                m += fabs(bias[j]);
            }
            Y[i * N + j] = apply_act(s, act);
            mag[i * N + j] = m;
        }
}

void dt_ref_bmm(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                int nt, double *C, double *mag)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, m = 0;
                for (int64_t k = 0; k < K; k++) {
                    double w = nt ? B[b * N * K + j * K + k] : B[b * K * N + k * N + j];
                    double t = (double)A[b * M * K + i * K + k] * w;
                    s += t;
                    m += fabs(t);
                }
                C[(b * M + i) * N + j] = s;
                mag[(b * M + i) * N + j] = m;
            }
}

int dt_check_close(const float *got, int64_t ldg, const double *ref, const double *mag,
                   int64_t rows, int64_t cols, int64_t K, dt_err *e)
{
    const double eps = FLT_EPSILON; /* 2^-23 */
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double g = got[i * ldg + j], r = ref[i * cols + j], m = mag[i * cols + j];
            double tol = ((double)K + 8) * eps * m + 1e-6 * m + 1e-30;
            if (!(fabs(g - r) <= tol)) /* also catches NaN */
                return dt_errf(e, DT_EINVAL,
                               "wrong answer at [%lld,%lld]: got %.9g, expected %.9g "
                               "(tolerance %.3g)",
                               (long long)i, (long long)j, g, r, tol);
        }
    return 0;
}

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

static int verify_dense(const dt_kernel *k, const dt_kernel_op *kop, int64_t M, int64_t N,
                        int64_t K, int threads, uint64_t seed, dt_err *e)
{
    int bias_on, act;
    dt_kernel_op_epilogue(kop, &bias_on, &act);
    int64_t ldx = K + 3, ldy = N + 5; /* strides wider than the rows */
    float *X = malloc((size_t)(M * ldx) * sizeof *X), *Xd = malloc((size_t)(M * K) * sizeof *Xd);
    float *W = malloc((size_t)(N * K) * sizeof *W), *bias = malloc((size_t)N * sizeof *bias);
    float *Y = malloc((size_t)(M * ldy) * sizeof *Y);
    double *ref = malloc((size_t)(M * N) * sizeof *ref), *mag = malloc((size_t)(M * N) * sizeof *mag);
    size_t psz = k->packed_size(N, K);
    float *packed = dt_alloc64(psz);
    int rc = 0;
    if (!X || !Xd || !W || !bias || !Y || !ref || !mag || !packed) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory verifying a kernel");
        goto out;
    }
    dt_fill_random(Xd, M * K, seed);
    dt_fill_random(W, N * K, seed + 1);
    dt_fill_random(bias, N, seed + 2);
    for (int64_t i = 0; i < M; i++) {
        memcpy(X + i * ldx, Xd + i * K, (size_t)K * sizeof *X);
        for (int64_t j = K; j < ldx; j++)
            X[i * ldx + j] = NAN; /* must never be read */
    }
    for (int64_t i = 0; i < M * ldy; i++)
        Y[i] = GUARD;
    k->pack(N, K, W, packed);
    k->dense(M, N, K, X, ldx, packed, bias_on ? bias : NULL, Y, ldy, threads);
    dt_ref_dense(M, N, K, Xd, W, bias_on ? bias : NULL, act, ref, mag);
    rc = dt_check_close(Y, ldy, ref, mag, M, N, K, e);
    if (!rc)
        rc = check_guard(Y, M, N, ldy, e);
out:
    free(X);
    free(Xd);
    free(W);
    free(bias);
    free(Y);
    free(ref);
    free(mag);
    free(packed);
    return rc;
}

static int verify_bmm(const dt_kernel *k, const dt_kernel_op *kop, int64_t batch, int64_t M,
                      int64_t N, int64_t K, int threads, uint64_t seed, dt_err *e)
{
    int nt = dt_kernel_op_layout_nt(kop);
    int64_t ldc = N + 3, sc = M * ldc;
    float *A = malloc((size_t)(batch * M * K) * sizeof *A);
    float *B = malloc((size_t)(batch * N * K) * sizeof *B);
    float *C = malloc((size_t)(batch * sc) * sizeof *C);
    double *ref = malloc((size_t)(batch * M * N) * sizeof *ref);
    double *mag = malloc((size_t)(batch * M * N) * sizeof *mag);
    int rc = 0;
    if (!A || !B || !C || !ref || !mag) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory verifying a kernel");
        goto out;
    }
    dt_fill_random(A, batch * M * K, seed);
    dt_fill_random(B, batch * N * K, seed + 1);
    for (int64_t i = 0; i < batch * sc; i++)
        C[i] = GUARD;
    k->bmm(batch, M, N, K, A, K, M * K, B, nt ? K : N, N * K, C, ldc, sc, threads);
    dt_ref_bmm(batch, M, N, K, A, B, nt, ref, mag);
    for (int64_t b = 0; b < batch && !rc; b++) {
        rc = dt_check_close(C + b * sc, ldc, ref + b * M * N, mag + b * M * N, M, N, K, e);
        if (rc)
            dt_err_prefix(e, "batch %lld", (long long)b);
        else
            rc = check_guard(C + b * sc, M, N, ldc, e);
    }
out:
    free(A);
    free(B);
    free(C);
    free(ref);
    free(mag);
    return rc;
}

int dt_verify_kernel(const dt_kernel *k, const dt_kernel_op *kop, int64_t batch, int64_t M,
                     int64_t N, int64_t K, int threads, uint64_t seed, dt_err *e)
{
    int rc;
    if (dt_kernel_op_is_dense(kop)) {
        if (!k->dense)
            return dt_errf(e, DT_EINVAL, "kernel has no dense entry point");
        rc = verify_dense(k, kop, M, N, K, threads, seed, e);
    } else {
        if (!k->bmm)
            return dt_errf(e, DT_EINVAL, "kernel has no batch_matmul entry point");
        rc = verify_bmm(k, kop, batch, M, N, K, threads, seed, e);
    }
    if (rc)
        dt_err_prefix(e, "M=%lld N=%lld K=%lld batch=%lld threads=%d", (long long)M,
                      (long long)N, (long long)K, (long long)batch, threads);
    return rc;
}
