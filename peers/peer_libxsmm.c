/* The LIBXSMM peer (docs/peers.md): LIBXSMM's JIT-dispatched small-GEMM
 * kernels (libxsmm_smmdispatch, column-major) driven over tiles of at most
 * 64 x 64 outputs with the full K.
 *
 * Mapping: our row-major Y[M,N] is the column-major N x M matrix Yᵀ, so
 * Y = X·Wᵀ is computed as Yᵀ = W·Xᵀ: kernel m = N-tile, n = M-tile, k = K,
 *   "A" = Wᵀ stored row-major K x N (= column-major N x K, lda = N): pack()
 *         transposes W[N,K] with libxsmm_otrans (LIBXSMM 1.17 has no JIT
 *         kernel for a transposed A);
 *   "B" = X row-major M x K (= column-major K x M, ldb = K), used as is;
 *   "C" = Y (column-major N x M, ldc = N).
 * A dynamic B[b] stored K x N (row-major) is "A" directly; one stored N x K
 * has each N-tile transposed into a per-thread scratch first.  Threads: the
 * (batch, N-tile) work items are split statically over an OpenMP team.  The
 * epilogue (constant weights) is applied to each tile right after its
 * kernel call. */
#include "peers/peer_internal.h"

#ifdef DTUNE_HAVE_LIBXSMM

#include <libxsmm.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define XS_TILE 64 /* LIBXSMM's own small-matrix bound (LIBXSMM_MAX_M/N) */

static pthread_once_t xs_once = PTHREAD_ONCE_INIT;
static void xs_init(void) { libxsmm_init(); }

typedef struct xs_state {
    dt_peer_problem p;
    int64_t nb, mb;             /* tile sizes along N (kernel m) and M (kernel n) */
    int64_t ntiles_n, ntiles_m;
    libxsmm_blasint lda;        /* N, or nb for the transposed NT scratch */
    libxsmm_smmfunction kern[2][2]; /* [N-tile is the edge][M-tile is the edge] */
    float *wt;                  /* constant W: Wᵀ, row-major K x N */
    float *scratch;             /* dynamic B stored N x K: threads x (K x nb) */
    int packed;
} xs_state;

static void xs_destroy(void *state)
{
    xs_state *s = state;
    if (s) {
        free(s->wt);
        free(s->scratch);
        free(s);
    }
}

static libxsmm_smmfunction xs_dispatch(int64_t m, int64_t n, int64_t k, libxsmm_blasint lda,
                                       libxsmm_blasint ldb, libxsmm_blasint ldc)
{
    const float alpha = 1.0f, beta = 0.0f;
    const int flags = LIBXSMM_GEMM_FLAG_BETA_0, prefetch = LIBXSMM_PREFETCH_NONE;
    return libxsmm_smmdispatch((libxsmm_blasint)m, (libxsmm_blasint)n, (libxsmm_blasint)k,
                               &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
}

static int xs_create(const dt_peer_problem *p, void **state, dt_err *e)
{
    int rc;
    *state = NULL;
    if ((rc = dt_peer_f32_only("libxsmm", p, e)))
        return rc;
    /* libxsmm_blasint is int (LP64 build) and descriptors hold 32-bit dims
     * and leading dimensions: keep every matrix of one batch below 2^31
     * elements */
    if (p->M * p->K > 0x7fffffff || p->N * p->K > 0x7fffffff || p->M * p->N > 0x7fffffff)
        return dt_errf(e, DT_EUNSUPPORTED, "libxsmm: a matrix has more than 2^31-1 elements "
                       "(M=%lld N=%lld K=%lld)", (long long)p->M, (long long)p->N,
                       (long long)p->K);
    pthread_once(&xs_once, xs_init);

    xs_state *s = calloc(1, sizeof *s);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "libxsmm: out of memory");
    s->p = *p;
    /* N-tiles of XS_TILE, smaller (a multiple of 16) when there would be
     * fewer work items than threads */
    s->nb = p->N < XS_TILE ? p->N : XS_TILE;
    int64_t items = p->batch * ((p->N + s->nb - 1) / s->nb);
    if (items < p->threads && p->N > 16) {
        int64_t per = (p->N + p->threads - 1) / p->threads;
        per = (per + 15) / 16 * 16;
        if (per < s->nb)
            s->nb = per;
    }
    s->mb = p->M < XS_TILE ? p->M : XS_TILE;
    s->ntiles_n = (p->N + s->nb - 1) / s->nb;
    s->ntiles_m = (p->M + s->mb - 1) / s->mb;
    int nt = !p->b_const && p->b_trans;
    s->lda = (libxsmm_blasint)(nt ? s->nb : p->N);

    const int64_t nsz[2] = {s->nb, p->N - (s->ntiles_n - 1) * s->nb};
    const int64_t msz[2] = {s->mb, p->M - (s->ntiles_m - 1) * s->mb};
    /* at most 4 kernels: full / edge tile in each of N and M (LIBXSMM's
     * registry returns the same code when two of them are equal) */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            s->kern[i][j] = xs_dispatch(nsz[i], msz[j], p->K, s->lda,
                                        (libxsmm_blasint)p->K, (libxsmm_blasint)p->N);
            if (!s->kern[i][j]) {
                xs_destroy(s);
                return dt_errf(e, DT_EUNSUPPORTED, "libxsmm: no kernel for m=%lld n=%lld "
                               "k=%lld (libxsmm_smmdispatch returned NULL)",
                               (long long)nsz[i], (long long)msz[j], (long long)p->K);
            }
        }

    if (p->b_const) {
        if (!(s->wt = dt_peer_alloc_floats(p->N * p->K))) {
            xs_destroy(s);
            return dt_errf(e, DT_ENOMEM, "libxsmm: out of memory for packed W");
        }
    } else if (nt) {
        if (!(s->scratch = dt_peer_alloc_floats((int64_t)p->threads * s->nb * p->K))) {
            xs_destroy(s);
            return dt_errf(e, DT_ENOMEM, "libxsmm: out of memory for the NT scratch");
        }
    }
    *state = s;
    return 0;
}

static int xs_pack(void *state, const void *W, dt_err *e)
{
    xs_state *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "libxsmm: pack: no state");
    if (!s->p.b_const)
        return 0;
    if (!W)
        return dt_errf(e, DT_EINVAL, "libxsmm: pack: no weights");
    /* W[N,K] row-major = column-major K x N (ld K) -> its transpose, column-
     * major N x K (ld N) = row-major K x N */
    libxsmm_otrans(s->wt, W, sizeof(float), (libxsmm_blasint)s->p.K,
                   (libxsmm_blasint)s->p.N, (libxsmm_blasint)s->p.K, (libxsmm_blasint)s->p.N);
    s->packed = 1;
    return 0;
}

/* All M-tiles of one (batch, N-tile) item. a: the column-major N-tile of
 * "A" (lda s->lda), bx: X or A[b] (row-major M x K), y: Y or C[b]. */
static void xs_item(const xs_state *s, const float *a, const float *bx, float *y, int64_t n0,
                    const float *bias)
{
    const dt_peer_problem *p = &s->p;
    int in = n0 + s->nb > p->N;
    int64_t ncols = in ? p->N - n0 : s->nb;
    for (int64_t t = 0; t < s->ntiles_m; t++) {
        int64_t m0 = t * s->mb;
        int im = m0 + s->mb > p->M;
        float *c = y + m0 * p->N + n0;
        s->kern[in][im](a, bx + m0 * p->K, c);
        if (bias || p->act != DT_PEER_ACT_NONE)
            dt_peer_epilogue_tile(c, im ? p->M - m0 : s->mb, ncols, p->N,
                                  bias ? bias + n0 : NULL, p->act);
    }
}

static int xs_run(void *state, const void *xv, const void *bv, void *yv, dt_err *e)
{
    const float *x = xv, *b = bv;
    float *y = yv;
    xs_state *s = state;
    if (!s)
        return dt_errf(e, DT_EINVAL, "libxsmm: run: no state");
    const dt_peer_problem *p = &s->p;
    int wconst = p->b_const;
    if (!x || !y || (!wconst && !b) || (wconst && p->bias && !b))
        return dt_errf(e, DT_EINVAL, "libxsmm: run: missing operand");
    if (wconst && !s->packed)
        return dt_errf(e, DT_EINVAL, "libxsmm: run before pack");
    const float *bias = wconst && p->bias ? b : NULL;
    const int64_t items = p->batch * s->ntiles_n;
    const int team = items < p->threads ? (int)items : p->threads;
    const int nt = !wconst && p->b_trans;

#pragma omp parallel num_threads(team) if (team > 1)
    {
        int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t lo = items * tid / nth, hi = items * (tid + 1) / nth;
        float *scratch = nt ? s->scratch + (int64_t)tid * s->nb * p->K : NULL;
        for (int64_t it = lo; it < hi; it++) {
            int64_t bi = it / s->ntiles_n, n0 = (it % s->ntiles_n) * s->nb;
            const float *bx = x + bi * p->M * p->K;
            float *yb = y + bi * p->M * p->N;
            const float *a;
            if (wconst) {
                a = s->wt + n0;
            } else if (!nt) {
                a = b + bi * p->K * p->N + n0;
            } else {
                /* rows n0.. of Bm[b] ([N,K] row-major = column-major K x N, ld K)
                 * -> column-major ncols x K with ld nb */
                int64_t ncols = n0 + s->nb > p->N ? p->N - n0 : s->nb;
                libxsmm_otrans(scratch, b + bi * p->K * p->N + n0 * p->K, sizeof(float),
                               (libxsmm_blasint)p->K, (libxsmm_blasint)ncols,
                               (libxsmm_blasint)p->K, (libxsmm_blasint)s->nb);
                a = scratch;
            }
            xs_item(s, a, bx, yb, n0, bias);
        }
    }
    return 0;
}

const dt_peer_desc dt_peer_libxsmm_desc = {
    .name = "libxsmm",
    .description = "LIBXSMM JIT small-GEMM kernels over <=64x64 tiles, full K, "
                   "epilogue per tile",
    .create = xs_create,
    .pack = xs_pack,
    .run = xs_run,
    .destroy = xs_destroy,
};

#else
typedef int dt_peer_libxsmm_unused; /* LIBXSMM not found: no peer */
#endif
