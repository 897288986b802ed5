/* dt_stream_read_gbps: the machine's measured read bandwidth from memory
 * (peers/peer.h, docs/peers.md), the roof of weight streaming — small-M
 * dense layers whose big weights are read once per call.
 *
 * Like STREAM, but read only (weight streaming reads; it writes a few rows):
 * the buffer is several times all of the L3 together, so every pass comes
 * from DRAM; each thread sums its own contiguous part with vector loads into
 * 8 independent accumulators; the best pass counts.  The buffer is first
 * touched by the same threads and partition that read it (the pages land on
 * their NUMA nodes) and is 2 MiB aligned and advised for transparent huge
 * pages (fewer TLB misses, as a big weight tensor would have). */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/clock.h"
#include "peers/peer.h"
#include "peers/peer_internal.h"

#define STREAM_MIN_BYTES (UINT64_C(256) << 20)
#define STREAM_ALIGN (UINT64_C(2) << 20)
#define STREAM_UNIT 1024 /* floats: a thread's part is whole 4 KiB units */

static volatile float stream_sink;

/* Sum of p[0..n) (n a multiple of 128, p 64-byte aligned) with 8 vectors of
 * `vbytes` bytes in flight; one copy per ISA, as peers/epilogue.c does. */
#define STREAM_SUM(name, attr, vbytes)                                                     \
    attr static float name(const float *p, size_t n)                                      \
    {                                                                                      \
        typedef float vec __attribute__((vector_size(vbytes)));                            \
        enum { L = (vbytes) / (int)sizeof(float) };                                        \
        const vec *v = (const vec *)(const void *)p;                                       \
        vec s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0}; \
        for (size_t i = 0; i < n / L; i += 8) {                                            \
            s0 += v[i];                                                                    \
            s1 += v[i + 1];                                                                \
            s2 += v[i + 2];                                                                \
            s3 += v[i + 3];                                                                \
            s4 += v[i + 4];                                                                \
            s5 += v[i + 5];                                                                \
            s6 += v[i + 6];                                                                \
            s7 += v[i + 7];                                                                \
        }                                                                                  \
        vec s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));                         \
        float sum = 0.0f;                                                                  \
        for (int l = 0; l < L; l++)                                                        \
            sum += s[l];                                                                   \
        return sum;                                                                        \
    }

#if defined(__x86_64__) || defined(__i386__)
STREAM_SUM(sum_avx512, __attribute__((target("avx512f"), noinline)), 64)
STREAM_SUM(sum_avx2, __attribute__((target("avx2"), noinline)), 32)
#endif
STREAM_SUM(sum_base, __attribute__((noinline)), 16)

typedef float (*sum_fn)(const float *, size_t);

static sum_fn pick_sum(void)
{
#if defined(__x86_64__) || defined(__i386__)
    const dt_target *t = dt_peer_machine();
    if (dt_target_has(t, DT_FEAT_AVX512F))
        return sum_avx512;
    if (dt_target_has(t, DT_FEAT_AVX2))
        return sum_avx2;
#endif
    return sum_base;
}

uint64_t dt_stream_buffer_bytes(void)
{
    const dt_target *t = dt_peer_machine();
    /* the L3 of the whole machine: one instance per shared_cpus CPUs */
    uint64_t instances = 1;
    if (t->l3.shared_cpus > 0 && t->logical_cpus > t->l3.shared_cpus)
        instances = (uint64_t)((t->logical_cpus + t->l3.shared_cpus - 1) / t->l3.shared_cpus);
    uint64_t bytes = 4 * t->l3.size * instances;
    if (bytes < STREAM_MIN_BYTES)
        bytes = STREAM_MIN_BYTES;
    return (bytes + STREAM_ALIGN - 1) / STREAM_ALIGN * STREAM_ALIGN;
}

/* Thread tid's part [*lo, *hi) of n floats, in whole units. */
static void part(size_t n, int tid, int nth, size_t *lo, size_t *hi)
{
    size_t units = n / STREAM_UNIT;
    *lo = units * (size_t)tid / (size_t)nth * STREAM_UNIT;
    *hi = units * (size_t)(tid + 1) / (size_t)nth * STREAM_UNIT;
}

double dt_stream_read_gbps(int threads, double seconds)
{
    if (threads < 1)
        threads = 1;
    if (!(seconds > 0.0) || !isfinite(seconds))
        seconds = 0.3;
    uint64_t bytes = dt_stream_buffer_bytes();
    if (bytes > SIZE_MAX)
        return NAN;
    void *mem = NULL;
    if (posix_memalign(&mem, STREAM_ALIGN, (size_t)bytes))
        return NAN;
#ifdef MADV_HUGEPAGE
    madvise(mem, (size_t)bytes, MADV_HUGEPAGE); /* a hint: failure is fine */
#endif
    float *buf = mem;
    size_t n = (size_t)(bytes / sizeof(float));
    sum_fn sum = pick_sum();

#pragma omp parallel num_threads(threads)
    {
        size_t lo, hi;
        part(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            buf[i] = (float)(i & 7) * 0.125f;
    }

    double best = 0.0, end = dt_now_s() + seconds;
    for (int pass = 0; pass < 3 || dt_now_s() < end; pass++) {
        float total = 0.0f;
        double t0 = dt_now_s();
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            size_t lo, hi;
            part(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
            total += sum(buf + lo, hi - lo);
        }
        double dt = dt_now_s() - t0;
        stream_sink = total;
        if (dt > 0.0 && (double)bytes / dt * 1e-9 > best)
            best = (double)bytes / dt * 1e-9;
    }
    free(mem);
    return best;
}
