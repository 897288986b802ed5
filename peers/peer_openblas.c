/* The OpenBLAS peer (docs/peers.md): cblas_sgemm, row-major; constant
 * weights are (NoTrans, Trans) on the user's W[N,K]; a dynamic B loops over
 * the batch; the
 * epilogue is a separate pass.  Debian's default libopenblas is the pthreads
 * build: its thread count is set with openblas_set_num_threads before every
 * call (it is process-wide in OpenBLAS). */
#include "peers/peer_internal.h"

#ifdef DTUNE_HAVE_OPENBLAS

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

typedef struct openblas_state {
    dt_peer_problem p;
    float *w; /* constant W: a copy of W[N,K] (cblas has no prepacked format) */
    int packed;
} openblas_state;

static void ob_destroy(void *state)
{
    openblas_state *s = state;
    if (s) {
        free(s->w);
        free(s);
    }
}

static int ob_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    int rc;
    *state = NULL;
    /* Debian's OpenBLAS 0.3.21 declares cblas_sbgemm in cblas.h but is built
     * without BUILD_BFLOAT16: the library has no sbgemm symbol */
    if ((rc = dt_peer_f32_only("openblas", p, e)))
        return rc;
    /* cblas takes blasint (int in Debian's 32-bit-index build) dims and ld's */
    if (p->M > 0x7fffffff || p->N > 0x7fffffff || p->K > 0x7fffffff)
        return dt_errf(e, DT_EUNSUPPORTED, "openblas: dims beyond int (M=%lld N=%lld K=%lld)",
                       (long long)p->M, (long long)p->N, (long long)p->K);
    openblas_state *s = calloc(1, sizeof *s);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "openblas: out of memory");
    s->p = *p;
    if (p->b_const && !(s->w = dt_peer_alloc_floats(p->N * p->K))) {
        free(s);
        return dt_errf(e, DT_ENOMEM, "openblas: out of memory for W");
    }
    *state = s;
    return 0;
}

static int ob_pack(void *state, const void *W, dt_err *e)
{
    openblas_state *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "openblas: pack: no state");
    if (!s->p.b_const)
        return 0;
    if (!W)
        return dt_errf(e, DT_EINVAL, "openblas: pack: no weights");
    memcpy(s->w, W, (size_t)(s->p.N * s->p.K) * sizeof(float));
    s->packed = 1;
    return 0;
}

static int ob_run(void *state, const void *xv, const void *bv, void *yv, dt_err *e)
{
    const float *x = xv, *b = bv;
    float *y = yv;
    openblas_state *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "openblas: run: no state");
    const dt_peer_problem *p = &s->p;
    int wconst = p->b_const;
    if (!x || !y || (!wconst && !b) || (wconst && p->bias && !b))
        return dt_errf(e, DT_EINVAL, "openblas: run: missing operand");
    if (wconst && !s->packed)
        return dt_errf(e, DT_EINVAL, "openblas: run before pack");
    const int M = (int)p->M, N = (int)p->N, K = (int)p->K;
    openblas_set_num_threads(p->threads);
    if (wconst) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, s->w, K,
                    0.0f, y, N);
        /* in the calling thread only: an OpenMP team here would spin on the
         * cores OpenBLAS's own pthreads need for the next call (measured with
         * 2 threads on 128x768x768 + GELU: 1.36 ms per call instead of 0.77) */
        dt_peer_epilogue(y, p->M, p->N, p->N, p->bias ? b : NULL, p->act, 1);
    } else {
        int64_t sa = p->M * p->K, sb = p->K * p->N, sc = p->M * p->N;
        for (int64_t i = 0; i < p->batch; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, p->b_trans ? CblasTrans : CblasNoTrans,
                        M, N, K, 1.0f, x + i * sa, K, b + i * sb, p->b_trans ? K : N, 0.0f,
                        y + i * sc, N);
    }
    return 0;
}

const dt_peer_desc dt_peer_openblas_desc = {
    .name = "openblas",
    .description = "OpenBLAS cblas_sgemm (row-major), a batch loop, separate epilogue pass",
    .create = ob_create,
    .pack = ob_pack,
    .run = ob_run,
    .destroy = ob_destroy,
};

#else
typedef int dt_peer_openblas_unused; /* OpenBLAS not found: no peer */
#endif
