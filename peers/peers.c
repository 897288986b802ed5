/* The peer registry (the peers compiled into this build, in a fixed order)
 * and the helpers the peers share: problem checks, OpenMP thread-count
 * handling, allocation (the separate epilogue pass: peers/epilogue.c). */
#include <math.h>
#include <omp.h>
#include <pthread.h>
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
    &dt_peer_onednn_bf16_desc,
    &dt_peer_dnnl_sgemm_desc,
    &dt_peer_onednn_conv_desc,
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

/* Bytes per element of A, of B and of C for a dtype (0: unknown dtype). */
static void elem_sizes(dt_peer_dtype d, int64_t sz[3])
{
    static const int64_t sizes[][3] = {[DT_PEER_F32] = {4, 4, 4},
                                       [DT_PEER_BF16] = {2, 2, 4},
                                       [DT_PEER_INT8] = {1, 1, 4}};
    for (int i = 0; i < 3; i++)
        sz[i] = d >= DT_PEER_F32 && d <= DT_PEER_INT8 ? sizes[d][i] : 0;
}

/* int8's quantization parameters (the scales are read here, once). */
static int check_quant(const char *peer, const dt_peer_problem *p, dt_err *e)
{
    if (!p->b_const)
        return dt_errf(e, DT_EUNSUPPORTED, "%s: int8 is defined for constant weights only "
                       "(dense), not a dynamic B", peer);
    if (!(isfinite(p->scale_a) && p->scale_a > 0.0f))
        return dt_errf(e, DT_EINVAL, "%s: int8 scale_a must be finite and > 0 (got %g)", peer,
                       (double)p->scale_a);
    if (p->zp_a < 0 || p->zp_a > 255)
        return dt_errf(e, DT_EINVAL, "%s: int8 zp_a must be in 0..255 (got %d)", peer,
                       (int)p->zp_a);
    if (!p->scale_b)
        return dt_errf(e, DT_EINVAL, "%s: int8 needs the per-channel scales scale_b[N]", peer);
    for (int64_t n = 0; n < p->N; n++)
        if (!(isfinite(p->scale_b[n]) && p->scale_b[n] > 0.0f))
            return dt_errf(e, DT_EINVAL, "%s: int8 scale_b[%lld] must be finite and > 0 "
                           "(got %g)", peer, (long long)n, (double)p->scale_b[n]);
    return 0;
}

int dt_peer_check(const char *peer, const dt_peer_problem *p, dt_err *e)
{
    if (!p)
        return dt_errf(e, DT_EINVAL, "%s: no problem given", peer);
    if (p->M < 1 || p->N < 1 || p->K < 1 || p->batch < 1)
        return dt_errf(e, DT_EINVAL,
                       "%s: dims must be >= 1 (batch=%lld M=%lld N=%lld K=%lld)", peer,
                       (long long)p->batch, (long long)p->M, (long long)p->N,
                       (long long)p->K);
    if (p->threads < 1)
        return dt_errf(e, DT_EINVAL, "%s: threads must be >= 1 (got %d)", peer, p->threads);
    int64_t sz[3];
    elem_sizes(p->dtype, sz);
    if (!sz[0])
        return dt_errf(e, DT_EINVAL, "%s: unknown dtype %d", peer, (int)p->dtype);
    if (p->b_const) {
        if (p->batch != 1)
            return dt_errf(e, DT_EINVAL, "%s: constant weights have batch 1 (got %lld)", peer,
                           (long long)p->batch);
        if (!p->b_trans)
            return dt_errf(e, DT_EINVAL, "%s: constant weights are stored N x K (b_trans)",
                           peer);
        if ((unsigned)p->act > DT_PEER_ACT_HARDSWISH)
            return dt_errf(e, DT_EINVAL, "%s: unknown activation %d", peer, (int)p->act);
    } /* dynamic B: bias and act are ignored (constant weights only) */
    /* every tensor's element count and byte size must fit */
    const int64_t pairs[3][2] = {{p->M, p->K}, {p->K, p->N}, {p->M, p->N}};
    static const char *const names[3] = {"A[batch,M,K]", "B[batch,K,N]", "C[batch,M,N]"};
    for (int i = 0; i < 3; i++) {
        int64_t n, bytes;
        if (!mul_ok(pairs[i][0], pairs[i][1], &n) || !mul_ok(n, p->batch, &n) ||
            !mul_ok(n, sz[i], &bytes) || (uint64_t)bytes > SIZE_MAX)
            return dt_errf(e, DT_EOVERFLOW, "%s: %s has too many elements (batch=%lld "
                           "M=%lld N=%lld K=%lld)", peer, names[i], (long long)p->batch,
                           (long long)p->M, (long long)p->N, (long long)p->K);
    }
    if (p->dtype == DT_PEER_INT8)
        return check_quant(peer, p, e);
    return 0;
}

int dt_peer_f32_only(const char *peer, const dt_peer_problem *p, dt_err *e)
{
    int rc = dt_peer_check(peer, p, e);
    if (rc == 0 && p->dtype != DT_PEER_F32)
        rc = dt_errf(e, DT_EUNSUPPORTED, "%s: f32 only (not %s)", peer,
                     dt_peer_dtype_name(p->dtype));
    return rc;
}

const char *dt_peer_dtype_name(dt_peer_dtype d)
{
    switch (d) {
    case DT_PEER_F32: return "f32";
    case DT_PEER_BF16: return "bf16";
    case DT_PEER_INT8: return "int8";
    }
    return "?";
}

/* ---- this machine ----------------------------------------------------------- */

static pthread_once_t machine_once = PTHREAD_ONCE_INIT;
static dt_target machine;

static void machine_detect(void)
{
    dt_err e;
    /* the hardware itself: DTUNE_TARGET_* overrides do not apply to probes;
     * detection does not fail (unreadable sources give defaults) */
    if (dt_target_detect_from(&machine, NULL, NULL, &e))
        memset(&machine, 0, sizeof machine);
}

const dt_target *dt_peer_machine(void)
{
    pthread_once(&machine_once, machine_detect);
    return &machine;
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
