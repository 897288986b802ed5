/* The peer registry (the peers compiled into this build, in a fixed order)
 * and the helpers the peers share: problem checks, the separate epilogue
 * pass, OpenMP thread-count handling. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peers/peer.h"
#include "peers/peer_internal.h"
#include "common/mem.h"

/* ---- registry --------------------------------------------------------------- */

static const dt_peer_desc *const dt_peer_list[] = {
#ifdef DTUNE_HAVE_DNNL
    &dt_peer_onednn_desc,
    &dt_peer_onednn_rt_desc,
    &dt_peer_dnnl_sgemm_desc,
#endif
#ifdef DTUNE_HAVE_OPENBLAS
    &dt_peer_openblas_desc,
#endif
#ifdef DTUNE_HAVE_LIBXSMM
    &dt_peer_libxsmm_desc,
#endif
    NULL, /* keeps the array non-empty when no library was found */
};

const dt_peer_desc *const *dt_peers(int *n)
{
    if (n)
        *n = (int)(sizeof dt_peer_list / sizeof dt_peer_list[0]) - 1;
    return dt_peer_list;
}

const dt_peer_desc *dt_peer_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; dt_peer_list[i]; i++)
        if (!strcmp(dt_peer_list[i]->name, name))
            return dt_peer_list[i];
    return NULL;
}

/* ---- problem checks --------------------------------------------------------- */

static int mul_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int dt_peer_check(const char *peer, const dt_peer_problem *p, dt_err *e)
{
    if (!p)
        return dt_errf(e, DT_EINVAL, "%s: no problem given", peer);
    if (p->op != DT_PEER_DENSE && p->op != DT_PEER_BMM)
        return dt_errf(e, DT_EINVAL, "%s: unknown op %d", peer, (int)p->op);
    if (p->M < 1 || p->N < 1 || p->K < 1 || p->batch < 1)
        return dt_errf(e, DT_EINVAL,
                       "%s: dims must be >= 1 (batch=%lld M=%lld N=%lld K=%lld)", peer,
                       (long long)p->batch, (long long)p->M, (long long)p->N,
                       (long long)p->K);
    if (p->threads < 1)
        return dt_errf(e, DT_EINVAL, "%s: threads must be >= 1 (got %d)", peer, p->threads);
    if (p->op == DT_PEER_DENSE) {
        if (p->batch != 1)
            return dt_errf(e, DT_EINVAL, "%s: dense has batch 1 (got %lld)", peer,
                           (long long)p->batch);
        if (p->act != DT_PEER_ACT_NONE && p->act != DT_PEER_ACT_RELU &&
            p->act != DT_PEER_ACT_GELU)
            return dt_errf(e, DT_EINVAL, "%s: unknown activation %d", peer, (int)p->act);
    } /* bmm: bias and act are ignored (dense only) */
    /* every tensor's element count and byte size must fit */
    const int64_t pairs[3][2] = {{p->M, p->K}, {p->K, p->N}, {p->M, p->N}};
    static const char *const names[3] = {"X/A", "W/Bm", "Y/C"};
    for (int i = 0; i < 3; i++) {
        int64_t n, bytes;
        if (!mul_ok(pairs[i][0], pairs[i][1], &n) || !mul_ok(n, p->batch, &n) ||
            !mul_ok(n, (int64_t)sizeof(float), &bytes) || (uint64_t)bytes > SIZE_MAX)
            return dt_errf(e, DT_EOVERFLOW, "%s: %s has too many elements (batch=%lld "
                           "M=%lld N=%lld K=%lld)", peer, names[i], (long long)p->batch,
                           (long long)p->M, (long long)p->N, (long long)p->K);
    }
    return 0;
}

/* ---- the separate epilogue pass --------------------------------------------- */

/* The pass is written with 16-float GCC vectors and compiled for AVX-512,
 * AVX2 and baseline x86-64 (target_clones: the loader picks one for this
 * CPU), so its cost is that of a tuned user loop, not of scalar libm calls.
 * GELU uses the same erf as dtune's micro-kernels (Abramowitz–Stegun 7.1.26,
 * absolute error <= 1.5e-7; exp by range reduction and a degree-6
 * polynomial), so both sides pay for the same arithmetic. */
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

/* y[0..15] = act(y[0..15] + bias[0..15]).  Vectors stay local (no vector
 * arguments or return values, whose ABI differs between the clones). */
static inline __attribute__((always_inline)) void epi16(float *y, const float *bias,
                                                        dt_peer_act act)
{
    v16f v;
    memcpy(&v, y, sizeof v);
    if (bias) {
        v16f b;
        memcpy(&b, bias, sizeof b);
        v += b;
    }
    if (act == DT_PEER_ACT_RELU) {
        v = (v16f)((v16i)v & (v16i)(v > 0.0f));
    } else if (act == DT_PEER_ACT_GELU) {
        v16f z = v * 0.70710678118654752f;
        v16i sign = (v16i)z & (int32_t)0x80000000;
        v16f az = (v16f)((v16i)z & 0x7fffffff);
        /* e = exp(-az²): x = n·ln2 + r, degree-6 polynomial, 2^n through the
         * exponent bits; below -87 clamped (exp(-87) is still normal) */
        v16f x = (v16f){0} - az * az;
        v16f lo = (v16f){0} - 87.0f;
        v16i small = x < lo;
        x = (v16f)(((v16i)x & ~small) | ((v16i)lo & small));
        v16f t = x * 1.44269504088896341f;
        v16i n = __builtin_convertvector(t - 0.5f, v16i); /* t <= 0: round to nearest */
        v16f fn = __builtin_convertvector(n, v16f);
        v16f r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
        v16f q = (v16f){0} + 1.0f / 720.0f;
        q = q * r + 1.0f / 120.0f;
        q = q * r + 1.0f / 24.0f;
        q = q * r + 1.0f / 6.0f;
        q = q * r + 0.5f;
        q = q * r + 1.0f;
        q = q * r + 1.0f;
        v16f e = (v16f)((v16u)q + ((v16u)n << 23)); /* unsigned: n < 0 */
        /* erf(|z|) = 1 - poly(t)·exp(-z²), t = 1/(1 + p·|z|) */
        v16f u = 1.0f / (1.0f + 0.3275911f * az);
        v16f poly = ((((1.061405429f * u - 1.453152027f) * u + 1.421413741f) * u -
                      0.284496736f) * u + 0.254829592f) * u;
        v16f erf = (v16f)((v16i)(1.0f - poly * e) | sign);
        v = 0.5f * v * (1.0f + erf);
    }
    memcpy(y, &v, sizeof v);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
epi_row(float *y, int64_t n, const float *bias, dt_peer_act act)
{
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        epi16(y + j, bias ? bias + j : NULL, act);
    if (j < n) { /* the tail through zero-padded copies */
        size_t rest = (size_t)(n - j) * sizeof(float);
        float yt[16] = {0}, bt[16] = {0};
        memcpy(yt, y + j, rest);
        if (bias)
            memcpy(bt, bias + j, rest);
        epi16(yt, bias ? bt : NULL, act);
        memcpy(y + j, yt, rest);
    }
}

void dt_peer_epilogue_tile(float *y, int64_t rows, int64_t cols, int64_t ldy,
                           const float *bias, dt_peer_act act)
{
    if (!bias && act == DT_PEER_ACT_NONE)
        return;
    for (int64_t i = 0; i < rows; i++)
        epi_row(y + i * ldy, cols, bias, act);
}

void dt_peer_epilogue(float *y, int64_t M, int64_t N, int64_t ldy, const float *bias,
                      dt_peer_act act, int threads)
{
    if (!bias && act == DT_PEER_ACT_NONE)
        return;
    if (threads < 1)
        threads = 1;
    /* below ~16K elements the fork/join costs more than the pass itself */
    int team = (M * N >= 16384 && M > 1) ? threads : 1;
    if (team > M)
        team = (int)M;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t i = 0; i < M; i++)
        dt_peer_epilogue_tile(y + i * ldy, 1, N, ldy, bias, act);
}

/* ---- threads and memory ----------------------------------------------------- */

int dt_peer_omp_enter(int threads)
{
    int previous = omp_get_max_threads();
    omp_set_num_threads(threads < 1 ? 1 : threads);
    return previous;
}

void dt_peer_omp_leave(int previous)
{
    omp_set_num_threads(previous < 1 ? 1 : previous);
}

float *dt_peer_alloc_floats(int64_t n)
{
    if (n < 1)
        n = 1;
    size_t bytes = (size_t)n * sizeof(float);
    float *v = dt_alloc64(bytes);
    if (v) /* touched here, so pack() times the copy, not the page faults */
        memset(v, 0, bytes);
    return v;
}
