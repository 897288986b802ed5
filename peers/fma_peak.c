/* dt_fma_peak_gflops: the machine's measured single-precision FMA ceiling.
 *
 * Each of `threads` OpenMP threads runs 16 independent FMA chains (enough to
 * hide a 4-cycle latency on two FMA pipes) on the widest vectors the CPU and
 * OS support, checked at run time: AVX-512 (16 lanes), else AVX2+FMA (8),
 * else plain multiply-adds (1 lane).  The vector functions are compiled with
 * target attributes, so this file needs no -march flags.  The accumulators
 * converge to a fixed point (a·x + b with 0 < a < 1), stay normal, and are
 * summed into a volatile, so the loop can be neither removed nor folded.
 * GFLOP/s = 2 · lanes · FMAs / seconds, summed over threads; best of 3. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <time.h>

#include "peers/peer.h"
#include "common/clock.h"

#define FMA_CHAINS 16
#define FMA_BLOCK 2048 /* iterations between clock reads (~16 µs at AVX-512 rates) */

static volatile float fma_sink;
static volatile float fma_mul = 0.999999f, fma_add = 1e-6f, fma_seed = 0.5f;

/* Each kernel runs blocks of FMA_BLOCK iterations until `seconds` passed;
 * returns the vector FMAs done and the time taken in *elapsed. */

__attribute__((target("avx512f"), noinline)) static uint64_t fma_avx512(double seconds,
                                                                         double *elapsed)
{
    __m512 a = _mm512_set1_ps(fma_mul), b = _mm512_set1_ps(fma_add);
    __m512 c[FMA_CHAINS];
    for (int i = 0; i < FMA_CHAINS; i++)
        c[i] = _mm512_set1_ps(fma_seed + 0.01f * (float)i);
    uint64_t blocks = 0;
    double t0 = dt_now_s(), t;
    do {
        for (int it = 0; it < FMA_BLOCK; it++) {
            c[0] = _mm512_fmadd_ps(c[0], a, b);
            c[1] = _mm512_fmadd_ps(c[1], a, b);
            c[2] = _mm512_fmadd_ps(c[2], a, b);
            c[3] = _mm512_fmadd_ps(c[3], a, b);
            c[4] = _mm512_fmadd_ps(c[4], a, b);
            c[5] = _mm512_fmadd_ps(c[5], a, b);
            c[6] = _mm512_fmadd_ps(c[6], a, b);
            c[7] = _mm512_fmadd_ps(c[7], a, b);
            c[8] = _mm512_fmadd_ps(c[8], a, b);
            c[9] = _mm512_fmadd_ps(c[9], a, b);
            c[10] = _mm512_fmadd_ps(c[10], a, b);
            c[11] = _mm512_fmadd_ps(c[11], a, b);
            c[12] = _mm512_fmadd_ps(c[12], a, b);
            c[13] = _mm512_fmadd_ps(c[13], a, b);
            c[14] = _mm512_fmadd_ps(c[14], a, b);
            c[15] = _mm512_fmadd_ps(c[15], a, b);
        }
        blocks++;
        t = dt_now_s();
    } while (t - t0 < seconds);
    *elapsed = t - t0;
    __m512 s = c[0];
    for (int i = 1; i < FMA_CHAINS; i++)
        s = _mm512_add_ps(s, c[i]);
    fma_sink = _mm512_reduce_add_ps(s);
    return blocks * FMA_BLOCK * FMA_CHAINS;
}

__attribute__((target("avx2,fma"), noinline)) static uint64_t fma_avx2(double seconds,
                                                                       double *elapsed)
{
    __m256 a = _mm256_set1_ps(fma_mul), b = _mm256_set1_ps(fma_add);
    __m256 c[FMA_CHAINS];
    for (int i = 0; i < FMA_CHAINS; i++)
        c[i] = _mm256_set1_ps(fma_seed + 0.01f * (float)i);
    uint64_t blocks = 0;
    double t0 = dt_now_s(), t;
    do {
        for (int it = 0; it < FMA_BLOCK; it++) {
            c[0] = _mm256_fmadd_ps(c[0], a, b);
            c[1] = _mm256_fmadd_ps(c[1], a, b);
            c[2] = _mm256_fmadd_ps(c[2], a, b);
            c[3] = _mm256_fmadd_ps(c[3], a, b);
            c[4] = _mm256_fmadd_ps(c[4], a, b);
            c[5] = _mm256_fmadd_ps(c[5], a, b);
            c[6] = _mm256_fmadd_ps(c[6], a, b);
            c[7] = _mm256_fmadd_ps(c[7], a, b);
            c[8] = _mm256_fmadd_ps(c[8], a, b);
            c[9] = _mm256_fmadd_ps(c[9], a, b);
            c[10] = _mm256_fmadd_ps(c[10], a, b);
            c[11] = _mm256_fmadd_ps(c[11], a, b);
            c[12] = _mm256_fmadd_ps(c[12], a, b);
            c[13] = _mm256_fmadd_ps(c[13], a, b);
            c[14] = _mm256_fmadd_ps(c[14], a, b);
            c[15] = _mm256_fmadd_ps(c[15], a, b);
        }
        blocks++;
        t = dt_now_s();
    } while (t - t0 < seconds);
    *elapsed = t - t0;
    __m256 s = c[0];
    for (int i = 1; i < FMA_CHAINS; i++)
        s = _mm256_add_ps(s, c[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    float sum = 0.0f;
    for (int i = 0; i < 8; i++)
        sum += lanes[i];
    fma_sink = sum;
    return blocks * FMA_BLOCK * FMA_CHAINS;
}

__attribute__((noinline)) static uint64_t fma_scalar(double seconds, double *elapsed)
{
    float a = fma_mul, b = fma_add, c[FMA_CHAINS];
    for (int i = 0; i < FMA_CHAINS; i++)
        c[i] = fma_seed + 0.01f * (float)i;
    uint64_t blocks = 0;
    double t0 = dt_now_s(), t;
    do {
        for (int it = 0; it < FMA_BLOCK; it++)
            for (int i = 0; i < FMA_CHAINS; i++)
                c[i] = c[i] * a + b;
        blocks++;
        t = dt_now_s();
    } while (t - t0 < seconds);
    *elapsed = t - t0;
    float sum = 0.0f;
    for (int i = 0; i < FMA_CHAINS; i++)
        sum += c[i];
    fma_sink = sum;
    return blocks * FMA_BLOCK * FMA_CHAINS;
}

double dt_fma_peak_gflops(int threads, double seconds)
{
    if (threads < 1)
        threads = 1;
    if (!(seconds > 0.0) || !isfinite(seconds))
        seconds = 0.1;
    const int repeats = 3;
    double each = seconds / repeats;
    if (each < 1e-3)
        each = 1e-3;

    __builtin_cpu_init();
    int lanes;
    uint64_t (*kernel)(double, double *);
    if (__builtin_cpu_supports("avx512f")) {
        kernel = fma_avx512;
        lanes = 16;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        kernel = fma_avx2;
        lanes = 8;
    } else {
        kernel = fma_scalar;
        lanes = 1;
    }

    double best = 0.0;
    for (int r = 0; r < repeats; r++) {
        double total = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            double elapsed = 0.0;
#pragma omp barrier
            uint64_t fmas = kernel(each, &elapsed);
            if (elapsed > 0.0)
                total += 2.0 * (double)lanes * (double)fmas / elapsed * 1e-9;
        }
        if (total > best)
            best = total;
    }
    return best;
}
