/* Tests of peers/: every compiled-in peer against a double-accumulation
 * reference on small dense and batch_matmul problems (every epilogue, 1 and 2
 * threads), re-packing with new weights, refused inputs, and the FMA-peak
 * probe (whose numbers are printed, not judged: the machine is shared). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peers/peer.h"
#include "tests/dt_test.h"

/* ---- data and reference ----------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static float *rnd_floats(int64_t n)
{
    float *v = malloc((size_t)n * sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = rnd();
    return v;
}

static double ref_act(double v, dt_peer_act act)
{
    if (act == DT_PEER_ACT_RELU)
        return v > 0 ? v : 0;
    if (act == DT_PEER_ACT_GELU)
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    return v;
}

/* dense: Y = act(X·Wᵀ + bias); bmm: C[b] = A[b]·B[b] or A[b]·B[b]ᵀ */
static double *reference(const dt_peer_problem *p, const float *x, const float *w,
                         const float *bias)
{
    int64_t B = p->batch, M = p->M, N = p->N, K = p->K;
    double *y = malloc((size_t)(B * M * N) * sizeof(double));
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++) {
                    double xv = x[b * M * K + i * K + k], wv;
                    if (p->b_trans)
                        wv = w[b * N * K + j * K + k];   /* [N,K] */
                    else
                        wv = w[b * K * N + k * N + j];   /* [K,N] */
                    acc += xv * wv;
                }
                if (p->b_const) {
                    if (p->bias)
                        acc += bias[j];
                    acc = ref_act(acc, p->act);
                }
                y[b * M * N + i * N + j] = acc;
            }
    return y;
}

/* Counts elements off by more than 1e-4 · (K/64) · max(1, |ref|); prints the
 * first few. */
static int compare(const char *what, const dt_peer_problem *p, const float *got,
                   const double *want)
{
    int64_t n = p->batch * p->M * p->N;
    double scale = 1e-4 * (p->K > 64 ? (double)p->K / 64.0 : 1.0);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double tol = scale * fmax(1.0, fabs(want[i]));
        if (!(fabs((double)got[i] - want[i]) <= tol)) { /* NaN counts as wrong */
            if (bad < 3)
                fprintf(stderr, "  %s: element %lld: got %.7g want %.7g\n", what,
                        (long long)i, (double)got[i], want[i]);
            bad++;
        }
    }
    return bad;
}

static const char *act_name(dt_peer_act a)
{
    return a == DT_PEER_ACT_RELU ? "relu" : a == DT_PEER_ACT_GELU ? "gelu" : "none";
}

static void describe(char *buf, size_t n, const char *peer, const dt_peer_problem *p)
{
    if (p->b_const)
        snprintf(buf, n, "%s dense M=%lld N=%lld K=%lld bias=%d act=%s threads=%d", peer,
                 (long long)p->M, (long long)p->N, (long long)p->K, p->bias,
                 act_name(p->act), p->threads);
    else
        snprintf(buf, n, "%s bmm %s B=%lld M=%lld N=%lld K=%lld threads=%d", peer,
                 p->b_trans ? "NT" : "NN", (long long)p->batch, (long long)p->M,
                 (long long)p->N, (long long)p->K, p->threads);
}

/* Only these peers may refuse a problem (DT_EUNSUPPORTED). */
static int may_refuse(const char *peer)
{
    return !strcmp(peer, "libxsmm") || !strcmp(peer, "onednn_rt");
}

typedef struct {
    int ran, refused, failed;
} tally;

/* Creates, packs, runs (twice, with Y poisoned by NaN) and checks one
 * problem on one peer. */
static void check_problem(const dt_peer_desc *d, const dt_peer_problem *p, tally *t)
{
    char what[256];
    describe(what, sizeof what, d->name, p);
    int dense = p->b_const;
    float *x = rnd_floats(p->batch * p->M * p->K);
    float *w = rnd_floats(p->batch * p->N * p->K);
    float *bias = rnd_floats(p->N);
    float *y = malloc((size_t)(p->batch * p->M * p->N) * sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    double *want = reference(p, x, w, bias);

    void *st = NULL;
    dt_err e;
    dt_err_clear(&e);
    int rc = d->create(p, &st, &e);
    if (rc == DT_EUNSUPPORTED && may_refuse(d->name)) {
        printf("    n/a: %s: %s\n", what, e.msg);
        t->refused++;
        goto out;
    }
    if (rc) {
        fprintf(stderr, "  %s: create: %s (%d)\n", what, e.msg, rc);
        CU_FAIL("create failed");
        t->failed++;
        goto out;
    }
    CU_ASSERT_PTR_NOT_NULL(st);
    rc = d->pack(st, dense ? w : NULL, &e);
    if (rc)
        fprintf(stderr, "  %s: pack: %s\n", what, e.msg);
    CU_ASSERT_EQUAL(rc, 0);
    for (int rep = 0; rep < 2 && rc == 0; rep++) {
        for (int64_t i = 0; i < p->batch * p->M * p->N; i++)
            y[i] = NAN;
        rc = d->run(st, x, dense ? (p->bias ? bias : NULL) : w, y, &e);
        if (rc)
            fprintf(stderr, "  %s: run: %s\n", what, e.msg);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc == 0) {
            int bad = compare(what, p, y, want);
            if (bad)
                fprintf(stderr, "  %s: %d wrong elements\n", what, bad);
            CU_ASSERT_EQUAL(bad, 0);
            if (bad)
                rc = -1;
        }
    }
    t->ran++;
    if (rc)
        t->failed++;
    d->destroy(st);
out:
    free(x);
    free(w);
    free(bias);
    free(y);
    free(want);
}

static void report(const char *peer, const char *what, const tally *t)
{
    printf("    %-10s %-6s ran %d, n/a %d, failed %d\n", peer, what, t->ran, t->refused,
           t->failed);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_registry(void)
{
    int n = -1;
    const dt_peer_desc *const *list = dt_peers(&n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    CU_ASSERT(n >= 0 && n <= 5);
    printf("\n    peers compiled in (%d):", n);
    for (int i = 0; i < n; i++) {
        const dt_peer_desc *d = list[i];
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        printf(" %s", d->name);
        CU_ASSERT_PTR_NOT_NULL(d->description);
        CU_ASSERT(d->create && d->pack && d->run && d->destroy);
        CU_ASSERT_PTR_EQUAL(dt_peer_find(d->name), d);
        for (int j = 0; j < i; j++)
            CU_ASSERT_STRING_NOT_EQUAL(list[j]->name, d->name);
    }
    printf("\n");
    CU_ASSERT_PTR_NULL(list[n]);
    CU_ASSERT_PTR_NULL(dt_peer_find("no-such-peer"));
    CU_ASSERT_PTR_NULL(dt_peer_find(NULL));
}

static void test_dense(void)
{
    static const int64_t Ms[] = {1, 7, 37};
    static const int64_t NKs[][2] = {{48, 64}, {100, 70}};
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    printf("\n");
    for (int i = 0; i < n; i++) {
        tally t = {0, 0, 0};
        for (int mi = 0; mi < 3; mi++)
            for (int nk = 0; nk < 2; nk++)
                for (int bias = 0; bias < 2; bias++)
                    for (int act = 0; act < 3; act++)
                        for (int th = 1; th <= 2; th++) {
                            dt_peer_problem p = {
                                .b_const = 1, .b_trans = 1, .batch = 1, .M = Ms[mi],
                                .N = NKs[nk][0], .K = NKs[nk][1], .bias = bias,
                                .act = (dt_peer_act)act, .threads = th};
                            check_problem(list[i], &p, &t);
                        }
        /* several tiles in M and N, edge tiles in both */
        dt_peer_problem big = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 130, .N = 200, .K = 33,
                               .bias = 1, .act = DT_PEER_ACT_GELU, .threads = 2};
        check_problem(list[i], &big, &t);
        report(list[i]->name, "dense", &t);
        CU_ASSERT_EQUAL(t.failed, 0);
    }
}

static void test_bmm(void)
{
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    printf("\n");
    for (int i = 0; i < n; i++) {
        tally t = {0, 0, 0};
        for (int nt = 0; nt < 2; nt++)
            for (int th = 1; th <= 2; th++) {
                dt_peer_problem p = {.batch = 3, .M = 5, .N = 17, .K = 9,
                                     .b_trans = nt, .threads = th};
                check_problem(list[i], &p, &t);
            }
        for (int nt = 0; nt < 2; nt++) {
            /* tiles and edge tiles; fewer batches than threads */
            dt_peer_problem p = {.batch = 1, .M = 70, .N = 150, .K = 40,
                                 .b_trans = nt, .threads = 2};
            check_problem(list[i], &p, &t);
        }
        report(list[i]->name, "bmm", &t);
        CU_ASSERT_EQUAL(t.failed, 0);
    }
}

/* oneDNN's batched matmul (onednn: one 3-D primitive per exact shape;
 * onednn_rt: run-time dims) and the dnnl_sgemm batch loop on BERT's
 * attention shapes — scores Q·Kᵀ (NT: B=12, M=N=seq, K=64) and context P·V
 * (NN: B=12, M=seq, N=64, K=seq) — including shapes past the tuned range;
 * then the same state with new operands in both slots, which must be used
 * (both operands are dynamic: nothing may be cached from an earlier call). */
static void test_onednn_batched(void)
{
    static const char *const names[] = {"onednn", "onednn_rt", "dnnl_sgemm"};
    static const int64_t seqs[] = {1, 13, 64, 129};
    if (!dt_peer_find("onednn")) {
        printf("\n    oneDNN is not built in: skipped\n");
        return;
    }
    printf("\n");
    for (int i = 0; i < 3; i++) {
        const dt_peer_desc *d = dt_peer_find(names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        tally t = {0, 0, 0};
        for (int si = 0; si < 4; si++)
            for (int nt = 0; nt < 2; nt++)
                for (int th = 1; th <= 2; th++) {
                    int64_t seq = seqs[si];
                    dt_peer_problem p = {.batch = 12, .M = seq,
                                         .N = nt ? seq : 64, .K = nt ? 64 : seq,
                                         .b_trans = nt, .threads = th};
                    check_problem(d, &p, &t);
                }
        report(d->name, "attn", &t);
        CU_ASSERT_EQUAL(t.failed, 0);
        CU_ASSERT_EQUAL(t.refused, 0); /* oneDNN 2.6 takes every one of them */

        /* new A and B through the same state */
        for (int nt = 0; nt < 2; nt++) {
            dt_peer_problem p = {.batch = 12, .M = 37, .N = nt ? 37 : 64,
                                 .K = nt ? 64 : 37, .b_trans = nt, .threads = 2};
            char what[256];
            describe(what, sizeof what, d->name, &p);
            int64_t na = p.batch * p.M * p.K, nb = p.batch * p.N * p.K, nc = p.batch * p.M * p.N;
            float *a1 = rnd_floats(na), *b1 = rnd_floats(nb), *a2 = rnd_floats(na),
                  *b2 = rnd_floats(nb), *c = rnd_floats(nc);
            double *want1 = reference(&p, a1, b1, NULL), *want2 = reference(&p, a2, b2, NULL);
            void *st = NULL;
            dt_err e;
            CU_ASSERT_EQUAL_FATAL(d->create(&p, &st, &e), 0);
            CU_ASSERT_EQUAL(d->pack(st, NULL, &e), 0); /* bmm: nothing to pack */
            CU_ASSERT_EQUAL(d->run(st, a1, b1, c, &e), 0);
            CU_ASSERT_EQUAL(compare(what, &p, c, want1), 0);
            CU_ASSERT_EQUAL(d->run(st, a2, b2, c, &e), 0);
            CU_ASSERT_EQUAL(compare(what, &p, c, want2), 0);
            CU_ASSERT_EQUAL(d->run(st, a1, b2, c, &e), 0); /* mixed: neither result */
            int same1 = 1, same2 = 1;
            for (int64_t k = 0; k < nc; k++) {
                same1 &= fabs((double)c[k] - want1[k]) < 1e-3;
                same2 &= fabs((double)c[k] - want2[k]) < 1e-3;
            }
            CU_ASSERT_FALSE(same1 || same2);
            d->destroy(st);
            free(a1), free(b1), free(a2), free(b2), free(c), free(want1), free(want2);
        }
    }
}

/* pack() again with new weights: run() must use them. */
static void test_repack(void)
{
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    for (int i = 0; i < n; i++) {
        const dt_peer_desc *d = list[i];
        for (int th = 1; th <= 2; th++) {
            dt_peer_problem p = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 7, .N = 100, .K = 70,
                                 .bias = 1, .act = DT_PEER_ACT_RELU, .threads = th};
            char what[256];
            describe(what, sizeof what, d->name, &p);
            float *x = rnd_floats(p.M * p.K), *bias = rnd_floats(p.N);
            float *w1 = rnd_floats(p.N * p.K), *w2 = rnd_floats(p.N * p.K);
            float *y = malloc((size_t)(p.M * p.N) * sizeof(float));
            double *want1 = reference(&p, x, w1, bias), *want2 = reference(&p, x, w2, bias);
            void *st = NULL;
            dt_err e;
            int rc = d->create(&p, &st, &e);
            if (rc == DT_EUNSUPPORTED && may_refuse(d->name)) {
                printf("\n    n/a: %s: %s", what, e.msg);
            } else {
                CU_ASSERT_EQUAL_FATAL(rc, 0);
                /* dense before pack is refused, not run on garbage */
                CU_ASSERT_EQUAL(d->run(st, x, bias, y, &e), DT_EINVAL);
                CU_ASSERT_EQUAL(d->pack(st, w1, &e), 0);
                CU_ASSERT_EQUAL(d->run(st, x, bias, y, &e), 0);
                CU_ASSERT_EQUAL(compare(what, &p, y, want1), 0);
                CU_ASSERT_EQUAL(d->pack(st, w2, &e), 0);
                memset(y, 0xff, (size_t)(p.M * p.N) * sizeof(float)); /* NaNs */
                CU_ASSERT_EQUAL(d->run(st, x, bias, y, &e), 0);
                CU_ASSERT_EQUAL(compare(what, &p, y, want2), 0);
                /* the packed copy does not alias the caller's buffer */
                memset(w2, 0, (size_t)(p.N * p.K) * sizeof(float));
                CU_ASSERT_EQUAL(d->run(st, x, bias, y, &e), 0);
                CU_ASSERT_EQUAL(compare(what, &p, y, want2), 0);
                d->destroy(st);
            }
            free(x), free(bias), free(w1), free(w2), free(y), free(want1), free(want2);
        }
    }
}

/* Malformed problems are DT_EINVAL with a message, for every peer. */
static void test_invalid(void)
{
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    const dt_peer_problem ok = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 4, .N = 8, .K = 8,
                                .threads = 1};
    for (int i = 0; i < n; i++) {
        const dt_peer_desc *d = list[i];
        dt_peer_problem bad[5];
        for (int j = 0; j < 5; j++)
            bad[j] = ok;
        bad[0].threads = 0;
        bad[1].M = 0;
        bad[2].K = -3;
        bad[3].batch = 2; /* dense has batch 1 */
        bad[4].act = (dt_peer_act)7;
        for (int j = 0; j < 5; j++) {
            void *st = (void *)&ok;
            dt_err e;
            dt_err_clear(&e);
            CU_ASSERT_EQUAL(d->create(&bad[j], &st, &e), DT_EINVAL);
            CU_ASSERT_PTR_NULL(st);
            CU_ASSERT(strlen(e.msg) > 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, d->name));
        }
        /* a missing operand is an error, not a crash */
        void *st = NULL;
        dt_err e;
        int rc = d->create(&ok, &st, &e);
        if (rc == 0) {
            float w[64] = {0}, x[32] = {0}, y[32];
            CU_ASSERT_EQUAL(d->pack(st, NULL, &e), DT_EINVAL);
            CU_ASSERT_EQUAL(d->pack(st, w, &e), 0);
            CU_ASSERT_EQUAL(d->run(st, NULL, NULL, y, &e), DT_EINVAL);
            CU_ASSERT_EQUAL(d->run(st, x, NULL, NULL, &e), DT_EINVAL);
            CU_ASSERT_EQUAL(d->run(st, x, NULL, y, &e), 0);
            d->destroy(st);
        } else {
            CU_ASSERT(rc == DT_EUNSUPPORTED && may_refuse(d->name));
        }
        d->destroy(NULL); /* allowed, does nothing */

        /* tensors too large for int64 / size_t: refused before any allocation */
        dt_peer_problem huge = ok;
        huge.M = huge.N = huge.K = (int64_t)1 << 32;
        st = (void *)&ok;
        CU_ASSERT_EQUAL(d->create(&huge, &st, &e), DT_EOVERFLOW);
        CU_ASSERT_PTR_NULL(st);
    }
    /* LIBXSMM's descriptors hold 32-bit sizes: a 2^32-element Y is refused
     * (reported as n/a by the bench), before anything is allocated */
    const dt_peer_desc *xs = dt_peer_find("libxsmm");
    if (xs) {
        dt_peer_problem big = ok;
        big.M = big.N = 65536;
        void *st = (void *)&ok;
        dt_err e;
        CU_ASSERT_EQUAL(xs->create(&big, &st, &e), DT_EUNSUPPORTED);
        CU_ASSERT_PTR_NULL(st);
        printf("\n    libxsmm refuses M=N=65536: %s\n", e.msg);
    }
}

static void test_fma_peak(void)
{
    double g1 = dt_fma_peak_gflops(1, 0.3);
    double g2 = dt_fma_peak_gflops(2, 0.3);
    printf("\n    FMA peak: 1 thread %.1f GFLOP/s, 2 threads %.1f GFLOP/s (ratio %.2f)\n", g1,
           g2, g1 > 0 ? g2 / g1 : 0.0);
    CU_ASSERT(isfinite(g1) && g1 > 1.0);
    CU_ASSERT(isfinite(g2) && g2 > 1.0);
    /* nonsense arguments still give a number */
    double g0 = dt_fma_peak_gflops(0, -1.0);
    CU_ASSERT(isfinite(g0) && g0 > 1.0);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"registry", test_registry},
        {"dense against the reference", test_dense},
        {"batch_matmul against the reference", test_bmm},
        {"oneDNN batched matmul on attention shapes", test_onednn_batched},
        {"pack twice with new weights", test_repack},
        {"invalid problems and operands", test_invalid},
        {"FMA peak", test_fma_peak},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"peers", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
