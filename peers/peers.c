/* The peer registry (the peers compiled into this build, in a fixed order)
 * and the helpers the peers share: problem checks, OpenMP thread-count
 * handling, allocation (the separate epilogue pass: peers/epilogue.c). */
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
    if (p->M < 1 || p->N < 1 || p->K < 1 || p->batch < 1)
        return dt_errf(e, DT_EINVAL,
                       "%s: dims must be >= 1 (batch=%lld M=%lld N=%lld K=%lld)", peer,
                       (long long)p->batch, (long long)p->M, (long long)p->N,
                       (long long)p->K);
    if (p->threads < 1)
        return dt_errf(e, DT_EINVAL, "%s: threads must be >= 1 (got %d)", peer, p->threads);
    if (p->b_const) {
        if (p->batch != 1)
            return dt_errf(e, DT_EINVAL, "%s: constant weights have batch 1 (got %lld)", peer,
                           (long long)p->batch);
        if (!p->b_trans)
            return dt_errf(e, DT_EINVAL, "%s: constant weights are stored N x K (b_trans)",
                           peer);
        if (p->act != DT_PEER_ACT_NONE && p->act != DT_PEER_ACT_RELU &&
            p->act != DT_PEER_ACT_GELU)
            return dt_errf(e, DT_EINVAL, "%s: unknown activation %d", peer, (int)p->act);
    } /* dynamic B: bias and act are ignored (constant weights only) */
    /* every tensor's element count and byte size must fit */
    const int64_t pairs[3][2] = {{p->M, p->K}, {p->K, p->N}, {p->M, p->N}};
    static const char *const names[3] = {"A[batch,M,K]", "B[batch,K,N]", "C[batch,M,N]"};
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
