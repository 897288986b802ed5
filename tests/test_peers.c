/* Tests of peers/: every compiled-in peer against a double-accumulation
 * reference on small dense and batch_matmul problems (every epilogue, 1 and 2
 * threads), in f32, bf16 and int8, re-packing with new weights, refused
 * inputs, and the peak and bandwidth probes (whose numbers are printed, not
 * judged: the machine is shared). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "microkernel/reference.h"
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

/* the micro-kernels' reference activation (a peer's act is a GEMM view's:
 * bench/bench.c asserts the values agree) */
static double ref_act(double v, dt_peer_act act) { return dt_ref_act(v, (int)act); }

/* dense: Y = act(X·Wᵀ + bias); bmm: C[b] = A[b]·B[b] or A[b]·B[b]ᵀ */
static double *reference(const dt_peer_problem *p, const float *x, const float *w,
                         const float *bias)
{
    int64_t B = p->batch, M = p->M, N = p->N, K = p->K;
    double *y = malloc((size_t)(B * M * N) * sizeof(double));
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    if (p->conv.on && p->conv.transpose) { /* every X pixel through every tap */
        const int64_t d = p->conv.dilation, dw = p->conv.dilation_w;
        const int64_t OH = (p->conv.h - 1) * p->conv.stride - p->conv.pad - p->conv.pad_b +
                           d * (p->conv.r - 1) + 1 + p->conv.out_pad_h;
        const int64_t OW = (p->conv.w - 1) * p->conv.stride_w - p->conv.pad_l - p->conv.pad_r +
                           dw * (p->conv.s - 1) + 1 + p->conv.out_pad_w;
        CU_ASSERT_EQUAL_FATAL(M, p->conv.n * OH * OW);
        for (int64_t i = 0; i < M * N; i++)
            y[i] = 0;
        for (int64_t n = 0; n < p->conv.n; n++)
            for (int64_t ih = 0; ih < p->conv.h; ih++)
                for (int64_t iw = 0; iw < p->conv.w; iw++)
                    for (int64_t r = 0; r < p->conv.r; r++)
                        for (int64_t q = 0; q < p->conv.s; q++) {
                            const int64_t oh = ih * p->conv.stride - p->conv.pad + r * d;
                            const int64_t ow = iw * p->conv.stride_w - p->conv.pad_l + q * dw;
                            if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                                continue;
                            const float *xp = x + ((n * p->conv.h + ih) * p->conv.w + iw) *
                                                      p->conv.c;
                            for (int64_t j = 0; j < N; j++) {
                                double acc = 0;
                                for (int64_t c = 0; c < p->conv.c; c++)
                                    acc += (double)xp[c] *
                                           w[((j * p->conv.r + r) * p->conv.s + q) * p->conv.c + c];
                                y[((n * OH + oh) * OW + ow) * N + j] += acc;
                            }
                        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                y[i * N + j] = ref_act(y[i * N + j] + (p->bias ? bias[j] : 0.0), p->act);
        return y;
    }
    if (p->conv.on) { /* Y[n,oh,ow,k] of X[n,h,w,c] and W[k,r,s,c] */
        const int64_t d = p->conv.dilation, dw = p->conv.dilation_w;
        const int64_t OH = (p->conv.h + p->conv.pad + p->conv.pad_b - d * (p->conv.r - 1) - 1) /
                           p->conv.stride + 1;
        const int64_t OW = (p->conv.w + p->conv.pad_l + p->conv.pad_r - dw * (p->conv.s - 1) -
                            1) / p->conv.stride_w + 1;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                const int64_t ow = i % OW, ohh = i / OW % OH, n = i / OW / OH;
                double acc = 0;
                for (int64_t r = 0; r < p->conv.r; r++)
                    for (int64_t q = 0; q < p->conv.s; q++) {
                        int64_t ih = ohh * p->conv.stride - p->conv.pad + r * d;
                        int64_t iw = ow * p->conv.stride_w - p->conv.pad_l + q * dw;
                        if (ih < 0 || ih >= p->conv.h || iw < 0 || iw >= p->conv.w)
                            continue;
                        for (int64_t c = 0; c < p->conv.c; c++)
                            acc += (double)x[((n * p->conv.h + ih) * p->conv.w + iw) *
                                             p->conv.c + c] *
                                   w[((j * p->conv.r + r) * p->conv.s + q) * p->conv.c + c];
                    }
                if (p->bias)
                    acc += bias[j];
                y[i * N + j] = ref_act(acc, p->act);
            }
        return y;
    }
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
    static const char *const names[] = {"none", "relu", "gelu", "relu6", "hardswish"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "?";
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
    return !strcmp(peer, "libxsmm") || !strcmp(peer, "onednn_rt") ||
           !strcmp(peer, "onednn_bf16") || /* math=bf16 problems only */
           !strcmp(peer, "onednn_conv");    /* convolutions only (test_conv) */
}

typedef struct {
    int ran, refused, failed;
} tally;

/* Creates, packs, runs (twice, with Y poisoned by NaN) and checks one
 * problem on one peer. */
static void check_problem(const dt_peer_desc *d, const dt_peer_problem *p, tally *t)
{
    char what[256];
    if (d->conv != p->conv.on) { /* a convolution peer on a GEMM, or the reverse */
        t->refused++;
        return;
    }
    describe(what, sizeof what, d->name, p);
    int dense = p->b_const;
    int64_t nx = p->batch * p->M * p->K;
    if (p->conv.on && p->conv.n * p->conv.h * p->conv.w * p->conv.c > nx)
        nx = p->conv.n * p->conv.h * p->conv.w * p->conv.c;
    float *x = rnd_floats(nx);
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

/* A oneDNN peer that refuses a case here is a check that did not run (the
 * f32-only libraries refusing bf16 or int8 is by design, and is not; nor is
 * a peer with applies() refusing the problems it is not a peer of). */
static void report(const char *peer, const char *what, const tally *t)
{
    printf("    %-10s %-10s ran %d, n/a %d, failed %d\n", peer, what, t->ran, t->refused,
           t->failed);
    const dt_peer_desc *d = dt_peer_find(peer);
    if (t->refused && !strncmp(peer, "onednn", 6) && !(d && d->applies))
        dt_test_skip("%s %s: %d of %d cases refused on this CPU", peer, what, t->refused,
                     t->ran + t->refused);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_registry(void)
{
    int n = -1;
    const dt_peer_desc *const *list = dt_peers(&n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    CU_ASSERT(n >= 0 && n <= 7);
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
                    for (int act = 0; act <= DT_PEER_ACT_HARDSWISH; act++)
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

/* onednn_conv against a direct convolution: strides, padding, dilation
 * (per axis and side too), odd channel counts, every epilogue, 1 and 2
 * threads; transposed ones (oneDNN's deconvolution, the activation apart)
 * with output padding; the GEMM peers are not peers of it (bench lists them
 * as skipped). */
static void test_conv(void)
{
    static const int64_t cases[][18] = {
        /* n, h, w, c, k, r, s, stride, pad, dilation; stride_w, dilation_w, pad_l, pad_b,
         * pad_r; transpose, out_pad_h, out_pad_w */
        {1, 8, 8, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 9, 7, 5, 7, 3, 2, 2, 1, 1, 2, 1, 1, 1, 1},
        {1, 6, 11, 3, 17, 3, 3, 1, 2, 2, 1, 2, 2, 2, 2},
        {3, 5, 5, 8, 8, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0},
        {1, 7, 10, 6, 9, 3, 3, 2, 0, 1, 1, 2, 1, 1, 0}, /* strides [2,1], pads [0,1,1,0] */
        {2, 1, 12, 4, 5, 1, 3, 1, 0, 1, 2, 1, 1, 0, 1}, /* a Conv1d: pads on W only */
        {1, 5, 6, 8, 12, 2, 2, 2, 0, 1, 2, 1, 0, 0, 0, 1, 0, 0},  /* transposed 2x2 s2 */
        {2, 4, 5, 16, 9, 4, 4, 2, 1, 1, 2, 1, 1, 1, 1, 1, 0, 0},  /* 4x4 s2 pad 1 */
        {1, 5, 4, 7, 5, 3, 3, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1},   /* 3x3 s2, out_pad 1 */
    };
    const dt_peer_desc *d = dt_peer_find("onednn_conv");
    if (!d) {
        dt_test_skip("oneDNN is not built in: no onednn_conv peer");
        return;
    }
    CU_ASSERT_TRUE(d->conv);
    tally t = {0, 0, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int epi = 0; epi < 2 * (DT_PEER_ACT_HARDSWISH + 1); epi++)
            for (int th = 1; th <= 2; th++) {
                const int64_t *c = cases[i];
                int64_t oh = (c[1] + c[8] + c[13] - c[9] * (c[5] - 1) - 1) / c[7] + 1;
                int64_t ow = (c[2] + c[12] + c[14] - c[11] * (c[6] - 1) - 1) / c[10] + 1;
                if (c[15]) {
                    oh = (c[1] - 1) * c[7] - c[8] - c[13] + c[9] * (c[5] - 1) + 1 + c[16];
                    ow = (c[2] - 1) * c[10] - c[12] - c[14] + c[11] * (c[6] - 1) + 1 + c[17];
                }
                dt_peer_problem p = {.b_const = 1, .b_trans = 1, .batch = 1,
                                     .M = c[0] * oh * ow, .N = c[4], .K = c[5] * c[6] * c[3],
                                     .bias = epi & 1, .act = (dt_peer_act)(epi >> 1),
                                     .threads = th};
                p.conv.on = 1;
                p.conv.n = c[0], p.conv.h = c[1], p.conv.w = c[2], p.conv.c = c[3];
                p.conv.k = c[4], p.conv.r = c[5], p.conv.s = c[6];
                p.conv.stride = (int)c[7], p.conv.pad = (int)c[8], p.conv.dilation = (int)c[9];
                p.conv.stride_w = (int)c[10], p.conv.dilation_w = (int)c[11];
                p.conv.pad_l = (int)c[12], p.conv.pad_b = (int)c[13], p.conv.pad_r = (int)c[14];
                p.conv.transpose = (int)c[15];
                p.conv.out_pad_h = (int)c[16], p.conv.out_pad_w = (int)c[17];
                check_problem(d, &p, &t);
                CU_ASSERT_FALSE(d->applies && !d->applies(&p));
            }
    report(d->name, "conv2d", &t);
    CU_ASSERT_EQUAL(t.failed, 0);
    CU_ASSERT_EQUAL(t.refused, 0);
    const dt_peer_desc *g = dt_peer_find("onednn");
    if (g)
        CU_ASSERT_FALSE(g->conv);
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
        dt_test_skip("oneDNN is not built in");
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

/* ---- bf16 and int8 ---------------------------------------------------------- */

/* Round to nearest even, as oneDNN and the micro-kernels convert (inputs
 * here are finite). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t *rnd_bf16(int64_t n)
{
    uint16_t *v = malloc((size_t)n * sizeof *v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = to_bf16(rnd());
    return v;
}

static uint64_t rnd_bits(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

/* What a typed case must produce: want[i] ± tol[i] for every output. */
typedef struct typed_case {
    dt_peer_problem p;
    void *x, *w;     /* A; W (dense) or the second operand */
    float *bias;     /* dense only, NULL without bias */
    double *want, *tol;
} typed_case;

static void typed_free(typed_case *c)
{
    free(c->x), free(c->w), free(c->bias), free(c->want), free(c->tol);
}

/* bf16: products of bf16 values are exact in f32, so the only error is the
 * f32 accumulation, about K·2^-24·Σ|a·b| at worst (bounded with room:
 * (K+8)·2^-22); with an epilogue, GELU's slope (at most 1.13) carries that
 * error, and the bias add and the library's GELU add a few ulps of the
 * result (2^-20·|ref| + 1e-6). */
static void bf16_case(typed_case *c)
{
    const dt_peer_problem *p = &c->p;
    int64_t B = p->batch, M = p->M, N = p->N, K = p->K;
    uint16_t *x = rnd_bf16(B * M * K), *w = rnd_bf16(B * N * K);
    c->x = x, c->w = w;
    c->bias = p->b_const && p->bias ? rnd_floats(N) : NULL;
    c->want = malloc((size_t)(B * M * N) * sizeof(double));
    c->tol = malloc((size_t)(B * M * N) * sizeof(double));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->want);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->tol);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double a = from_bf16(x[(b * M + i) * K + k]);
                    double v = p->b_trans ? from_bf16(w[(b * N + j) * K + k])
                                          : from_bf16(w[(b * K + k) * N + j]);
                    acc += a * v;
                    mag += fabs(a * v);
                }
                if (c->bias) {
                    acc += c->bias[j];
                    mag += fabs(c->bias[j]);
                }
                double tol = (double)(K + 8) * ldexp(mag, -22);
                if (p->b_const) {
                    double y = ref_act(acc, p->act);
                    tol = 1.13 * tol + ldexp(fabs(y), -20) +
                          (p->act == DT_PEER_ACT_GELU ? 1e-6 : 0.0);
                    acc = y;
                }
                c->want[(b * M + i) * N + j] = acc;
                c->tol[(b * M + i) * N + j] = tol;
            }
}

/* The error a peer's int8 output may carry beside the exact result.  The
 * u8·s8 sums are exact: VPDPBUSD and AMX's TDPBUSD accumulate in s32, so the
 * raw sum R = Σ x·w and the zero-point compensation Z = zp·Σ w are exact
 * integers.  What a library may order as it likes is the f32 epilogue:
 * s = scale_a·scale_b[j] applied to R − Z at once, or to R and to Z
 * separately and then subtracted (oneDNN's AMX kernels do that), scale_a and
 * scale_b one after the other or their product, then the bias.  With
 * u = 2^-24, each of R and Z takes at most four roundings on its way to
 * s·R and s·Z (its conversion to f32, the scale product, at most two
 * multiplies): 4u·s·(|R| + |Z|) plus second-order terms (the 4.01); the
 * subtraction, the bias add and a final multiply of the difference take
 * fewer than 8u·(|s·(R − Z)| + |bias|) together.  ReLU does not widen an
 * error.  With zp = 0 the first term is 4u·|s·R|: what the separate
 * roundings of the one term can do. */
static double int8_peer_bound(double s, double raw, double comp, double scaled, double bias)
{
    return ldexp(4.01 * fabs(s) * (fabs(raw) + fabs(comp)), -24) +
           ldexp(fabs(scaled) + fabs(bias), -21) + 1e-30;
}

/* int8: the integer sum is exact, so the output is the dequantized exact
 * value up to the float roundings of its epilogue, in whatever order the
 * peer does them (int8_peer_bound). */
static void int8_case(typed_case *c, float *scale_b)
{
    dt_peer_problem *p = &c->p;
    int64_t M = p->M, N = p->N, K = p->K;
    uint8_t *x = malloc((size_t)(M * K));
    int8_t *w = malloc((size_t)(N * K));
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    for (int64_t i = 0; i < M * K; i++)
        x[i] = (uint8_t)(rnd_bits() & 0xff);
    for (int64_t i = 0; i < N * K; i++)
        w[i] = (int8_t)((int)(rnd_bits() % 255) - 127);
    for (int64_t n = 0; n < N; n++) /* from 1/512 to 1/64: channels differ */
        scale_b[n] = (float)ldexp(1.0 + 7.0 * (double)(rnd_bits() % 1000) / 1000.0, -9);
    p->scale_b = scale_b;
    c->x = x, c->w = w;
    c->bias = p->bias ? rnd_floats(N) : NULL;
    c->want = malloc((size_t)(M * N) * sizeof(double));
    c->tol = malloc((size_t)(M * N) * sizeof(double));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->want);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->tol);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            int64_t raw = 0, wsum = 0;
            for (int64_t k = 0; k < K; k++) {
                raw += (int64_t)x[i * K + k] * w[j * K + k];
                wsum += w[j * K + k];
            }
            int64_t comp = (int64_t)p->zp_a * wsum;
            double s = (double)p->scale_a * (double)scale_b[j];
            double scaled = s * (double)(raw - comp);
            double b = c->bias ? c->bias[j] : 0.0;
            c->want[i * N + j] = ref_act(scaled + b, p->act);
            c->tol[i * N + j] =
                int8_peer_bound(s, (double)raw, (double)comp, scaled, b);
        }
}

/* Counts outputs outside want ± tol; prints the first few. */
static int compare_tol(const char *what, const typed_case *c, const float *got)
{
    int64_t n = c->p.batch * c->p.M * c->p.N;
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - c->want[i]) <= c->tol[i])) { /* NaN is wrong */
            if (bad < 3)
                fprintf(stderr, "  %s: element %lld: got %.9g want %.9g (tol %.3g)\n", what,
                        (long long)i, (double)got[i], c->want[i], c->tol[i]);
            bad++;
        }
    return bad;
}

static void describe_typed(char *buf, size_t n, const char *peer, const dt_peer_problem *p)
{
    char rest[200];
    describe(rest, sizeof rest, peer, p);
    snprintf(buf, n, "%s [%s%s]", rest,
             p->dtype == DT_PEER_INT8 ? "int8" : p->math_bf16 ? "f32 math=bf16" : "bf16",
             p->dtype == DT_PEER_INT8 ? (p->zp_a ? " zp" : " zp=0") : "");
}

/* Creates, packs, runs twice (Y poisoned with NaN) and checks one typed case
 * on one peer.  A peer may refuse (DT_EUNSUPPORTED, printed) unless
 * must_run. */
static void run_typed(const dt_peer_desc *d, const typed_case *c, int must_run, tally *t)
{
    char what[300];
    describe_typed(what, sizeof what, d->name, &c->p);
    const dt_peer_problem *p = &c->p;
    int64_t ny = p->batch * p->M * p->N;
    float *y = malloc((size_t)ny * sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    void *st = NULL;
    dt_err e;
    dt_err_clear(&e);
    int rc = d->create(p, &st, &e);
    if (rc == DT_EUNSUPPORTED && !must_run) {
        if (t->refused++ == 0)
            printf("    n/a: %s: %s\n", what, e.msg);
        free(y);
        return;
    }
    if (rc) {
        fprintf(stderr, "  %s: create: %s (%d)\n", what, e.msg, rc);
        CU_FAIL("create failed");
        t->failed++;
        free(y);
        return;
    }
    rc = d->pack(st, p->b_const ? c->w : NULL, &e);
    if (rc)
        fprintf(stderr, "  %s: pack: %s\n", what, e.msg);
    CU_ASSERT_EQUAL(rc, 0);
    for (int rep = 0; rep < 2 && rc == 0; rep++) {
        for (int64_t i = 0; i < ny; i++)
            y[i] = NAN;
        rc = d->run(st, c->x, p->b_const ? c->bias : c->w, y, &e);
        if (rc)
            fprintf(stderr, "  %s: run: %s\n", what, e.msg);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc == 0 && compare_tol(what, c, y)) {
            CU_FAIL("wrong result");
            rc = -1;
        }
    }
    t->ran++;
    if (rc)
        t->failed++;
    d->destroy(st);
    free(y);
}

/* Whether `peer` must run dtype d here: oneDNN's matmul peers, when the CPU
 * has the native instruction (oneDNN 2.6 runs both on any AVX-512 CPU, but
 * the tests only insist where dtune's native back-end would run too). */
static int must_run(const char *peer, dt_peer_dtype d)
{
    static dt_target t;
    static int detected;
    if (!detected) {
        dt_err e;
        detected = dt_target_detect(&t, &e) == 0 ? 1 : -1;
    }
    if (detected < 0 || (strcmp(peer, "onednn") && strcmp(peer, "onednn_rt")))
        return 0;
    return d == DT_PEER_BF16 ? dt_target_has(&t, DT_FEAT_AVX512_BF16)
                             : dt_target_has(&t, DT_FEAT_AVX512_VNNI);
}

static const int64_t typed_Ms[] = {1, 7, 37};
static const int64_t typed_NKs[][2] = {{48, 64}, {768, 100}, {48, 100}};

/* bf16 dense (bias + GELU, and plain) and batch_matmul NN / NT. */
static void test_bf16(void)
{
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    printf("\n");
    if (n == 0)
        dt_test_skip("no peer is built in");
    for (int i = 0; i < n; i++) {
        const dt_peer_desc *d = list[i];
        int must = must_run(d->name, DT_PEER_BF16);
        tally t = {0, 0, 0};
        for (int mi = 0; mi < 3; mi++)
            for (int nk = 0; nk < 3; nk++) {
                int th = 1 + (mi + nk) % 2, epi = nk != 2;
                typed_case c = {.p = {.b_const = 1, .b_trans = 1, .batch = 1, .M = typed_Ms[mi],
                                      .N = typed_NKs[nk][0], .K = typed_NKs[nk][1], .bias = epi,
                                      .act = epi ? DT_PEER_ACT_GELU : DT_PEER_ACT_NONE,
                                      .threads = th, .dtype = DT_PEER_BF16}};
                bf16_case(&c);
                run_typed(d, &c, must, &t);
                typed_free(&c);
            }
        report(d->name, "bf16 dense", &t);
        CU_ASSERT_EQUAL(t.failed, 0);
        tally tb = {0, 0, 0};
        for (int mi = 0; mi < 3; mi++)
            for (int nt = 0; nt < 2; nt++) {
                int64_t K = mi == 1 ? 100 : 64;
                typed_case c = {.p = {.batch = 3, .M = typed_Ms[mi], .N = 48, .K = K,
                                      .b_trans = nt, .threads = 1 + nt, .dtype = DT_PEER_BF16}};
                bf16_case(&c);
                run_typed(d, &c, must, &tb);
                typed_free(&c);
            }
        report(d->name, "bf16 bmm", &tb);
        CU_ASSERT_EQUAL(tb.failed, 0);
    }
}

/* onednn_bf16, the peer of math=bf16 (issue 29, point 8): an f32 dense
 * problem whose operands are bf16 values held in floats, run as oneDNN's
 * bf16 matmul with the activations converted in every call.  The answer is
 * bf16_case's (the conversion of a bf16 value is exact); it runs wherever
 * oneDNN's bf16 peers must, is a peer of math=bf16 problems only (applies),
 * and refuses the others at create. */
static void test_onednn_bf16(void)
{
    const dt_peer_desc *d = dt_peer_find("onednn_bf16");
    if (!d) {
        dt_test_skip("oneDNN is not built in: no onednn_bf16 peer");
        return;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(d->applies);
    dt_peer_problem f32 = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 7, .N = 48, .K = 64,
                           .threads = 1};
    CU_ASSERT_FALSE(d->applies(&f32)); /* f32 arithmetic asked: not its problem */
    void *st = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(d->create(&f32, &st, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "math=bf16"));
    dt_peer_problem bmm = f32;
    bmm.b_const = 0, bmm.math_bf16 = 1;
    CU_ASSERT_FALSE(d->applies(&bmm));
    dt_peer_problem bf = f32;
    bf.dtype = DT_PEER_BF16, bf.math_bf16 = 1;
    CU_ASSERT_FALSE(d->applies(&bf));
    f32.math_bf16 = 1;
    CU_ASSERT_TRUE(d->applies(&f32));
    /* the other peers stay peers of math=bf16 problems (they run its f32) */
    CU_ASSERT_TRUE(!dt_peer_find("onednn")->applies ||
                   dt_peer_find("onednn")->applies(&f32));

    int must = must_run("onednn", DT_PEER_BF16);
    tally t = {0, 0, 0};
    printf("\n");
    for (int mi = 0; mi < 3; mi++)
        for (int nk = 0; nk < 3; nk++) {
            int epi = nk != 2;
            typed_case c = {.p = {.b_const = 1, .b_trans = 1, .batch = 1, .M = typed_Ms[mi],
                                  .N = typed_NKs[nk][0], .K = typed_NKs[nk][1], .bias = epi,
                                  .act = epi ? DT_PEER_ACT_GELU : DT_PEER_ACT_NONE,
                                  .threads = 1 + (mi + nk) % 2, .dtype = DT_PEER_BF16}};
            bf16_case(&c);
            /* the same values as floats: what a math=bf16 workload hands its peers */
            int64_t nx = c.p.M * c.p.K, nw = c.p.N * c.p.K;
            float *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w);
            CU_ASSERT_PTR_NOT_NULL_FATAL(x);
            CU_ASSERT_PTR_NOT_NULL_FATAL(w);
            for (int64_t i = 0; i < nx; i++)
                x[i] = (float)from_bf16(((const uint16_t *)c.x)[i]);
            for (int64_t i = 0; i < nw; i++)
                w[i] = (float)from_bf16(((const uint16_t *)c.w)[i]);
            free(c.x), free(c.w);
            c.x = x, c.w = w;
            c.p.dtype = DT_PEER_F32, c.p.math_bf16 = 1;
            run_typed(d, &c, must, &t);
            typed_free(&c);
        }
    report(d->name, "math=bf16", &t);
    CU_ASSERT_EQUAL(t.failed, 0);
    CU_ASSERT(t.ran + t.refused == 9);
}

/* int8 dense: bias, a non-zero zero point (and zero), per-channel scales;
 * then pack twice with new weights.  int8 with a dynamic B is refused. */
static void test_int8(void)
{
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    printf("\n");
    if (n == 0)
        dt_test_skip("no peer is built in");
    for (int i = 0; i < n; i++) {
        const dt_peer_desc *d = list[i];
        int must = must_run(d->name, DT_PEER_INT8);
        tally t = {0, 0, 0};
        for (int mi = 0; mi < 3; mi++)
            for (int nk = 0; nk < 3; nk++) {
                float *scale_b = malloc((size_t)typed_NKs[nk][0] * sizeof(float));
                CU_ASSERT_PTR_NOT_NULL_FATAL(scale_b);
                typed_case c = {.p = {.b_const = 1, .b_trans = 1, .batch = 1, .M = typed_Ms[mi],
                                      .N = typed_NKs[nk][0], .K = typed_NKs[nk][1],
                                      .bias = nk != 2, .act = mi == 2 ? DT_PEER_ACT_RELU
                                                                      : DT_PEER_ACT_NONE,
                                      .threads = 1 + (mi + nk) % 2, .dtype = DT_PEER_INT8,
                                      .scale_a = 0.037f, .zp_a = mi == 1 ? 0 : 131}};
                int8_case(&c, scale_b);
                run_typed(d, &c, must, &t);
                typed_free(&c);
                free(scale_b);
            }
        report(d->name, "int8 dense", &t);
        CU_ASSERT_EQUAL(t.failed, 0);

        /* new weights through the same state (the reorder recomputes the
         * zero-point compensation); scale_b is freed after create */
        float *scale_b = malloc(48 * sizeof(float));
        CU_ASSERT_PTR_NOT_NULL_FATAL(scale_b);
        typed_case c1 = {.p = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 7, .N = 48, .K = 64,
                               .bias = 1, .threads = 2, .dtype = DT_PEER_INT8,
                               .scale_a = 0.5f, .zp_a = 7}};
        int8_case(&c1, scale_b);
        void *st = NULL;
        dt_err e;
        int rc = d->create(&c1.p, &st, &e);
        if (rc == 0) {
            int8_t *w2 = malloc(48 * 64);
            CU_ASSERT_PTR_NOT_NULL_FATAL(w2);
            for (int k = 0; k < 48 * 64; k++)
                w2[k] = (int8_t)(-((int8_t *)c1.w)[k]); /* negated: the sum negates */
            float *y = malloc(7 * 48 * sizeof(float));
            CU_ASSERT_PTR_NOT_NULL_FATAL(y);
            memset(scale_b, 0xff, 48 * sizeof(float)); /* create() made its own copy */
            CU_ASSERT_EQUAL(d->pack(st, c1.w, &e), 0);
            CU_ASSERT_EQUAL(d->run(st, c1.x, c1.bias, y, &e), 0);
            CU_ASSERT_EQUAL(compare_tol("int8 repack 1", &c1, y), 0);
            CU_ASSERT_EQUAL(d->pack(st, w2, &e), 0);
            memset(c1.w, 0, 48 * 64); /* the packed copy does not alias it */
            CU_ASSERT_EQUAL(d->run(st, c1.x, c1.bias, y, &e), 0);
            for (int k = 0; k < 7 * 48; k++) /* scale·(−acc) + bias */
                c1.want[k] = 2.0 * c1.bias[k % 48] - c1.want[k];
            CU_ASSERT_EQUAL(compare_tol("int8 repack 2", &c1, y), 0);
            d->destroy(st);
            free(w2), free(y);
        } else {
            CU_ASSERT(rc == DT_EUNSUPPORTED && !must);
        }
        typed_free(&c1);
        free(scale_b);

        /* int8 is for constant weights: a batched B is refused, not guessed */
        float one = 1.0f;
        dt_peer_problem bmm = {.batch = 2, .M = 3, .N = 1, .K = 4, .threads = 1,
                               .dtype = DT_PEER_INT8, .scale_a = 1.0f, .scale_b = &one};
        st = (void *)&one;
        CU_ASSERT_EQUAL(d->create(&bmm, &st, &e), DT_EUNSUPPORTED);
        CU_ASSERT_PTR_NULL(st);
    }
}

/* The int8 peer check itself, on any CPU: results dequantized in f32 in
 * each order a library may pick (the one scale on R − Z; the scales on R
 * and Z separately, as oneDNN's AMX kernels do; scale_a then scale_b; the
 * bias before the subtraction) are within int8_peer_bound, while one
 * element off by 1.5 bounds, or a dropped zero-point compensation, fails. */
static void test_int8_bound(void)
{
    float scale_b[768];
    int orders = 0;
    for (int nk = 0; nk < 3; nk++)
        for (int zp = 0; zp < 2; zp++) {
            typed_case c = {.p = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 37,
                                  .N = typed_NKs[nk][0], .K = typed_NKs[nk][1], .bias = 1,
                                  .act = nk == 1 ? DT_PEER_ACT_RELU : DT_PEER_ACT_NONE,
                                  .threads = 1, .dtype = DT_PEER_INT8, .scale_a = 0.037f,
                                  .zp_a = zp ? 131 : 0}};
            int8_case(&c, scale_b);
            const dt_peer_problem *p = &c.p;
            int64_t ny = p->M * p->N;
            float *got = malloc((size_t)ny * sizeof(float));
            float *nocomp = malloc((size_t)ny * sizeof(float));
            CU_ASSERT_PTR_NOT_NULL_FATAL(got);
            CU_ASSERT_PTR_NOT_NULL_FATAL(nocomp);
            const uint8_t *x = c.x;
            const int8_t *w = c.w;
            for (int order = 0; order < 4; order++, orders++) {
                for (int64_t i = 0; i < p->M; i++)
                    for (int64_t j = 0; j < p->N; j++) {
                        int32_t raw = 0, wsum = 0;
                        for (int64_t k = 0; k < p->K; k++) {
                            raw += (int32_t)x[i * p->K + k] * w[j * p->K + k];
                            wsum += w[j * p->K + k];
                        }
                        int32_t comp = p->zp_a * wsum;
                        volatile float sa = p->scale_a, sb = scale_b[j], b = c.bias[j];
                        volatile float s = sa * sb, r, z, y;
                        switch (order) {
                        case 0: y = (float)(raw - comp) * s + b; break;
                        case 1: r = (float)raw * s, z = (float)comp * s, y = r - z + b; break;
                        case 2:
                            r = (float)raw * sa, r = r * sb, z = (float)comp * sa, z = z * sb;
                            y = r - z;
                            y = y + b;
                            break;
                        default: r = (float)raw * s + b, z = (float)comp * s, y = r - z; break;
                        }
                        float v = y;
                        if (p->act == DT_PEER_ACT_RELU && v < 0)
                            v = 0;
                        got[i * p->N + j] = v;
                        volatile float n0 = (float)raw * s + b;
                        nocomp[i * p->N + j] = n0;
                    }
                int bad = compare_tol("int8 bound, reordered", &c, got);
                if (bad)
                    printf("\n    order %d N=%lld K=%lld zp=%d: %d outside the bound", order,
                           (long long)p->N, (long long)p->K, p->zp_a, bad);
                CU_ASSERT_EQUAL(bad, 0);
            }
            /* one element beyond the bound is caught */
            int64_t at = ny / 2;
            while (at < ny - 1 && c.want[at] == 0) /* relu's zeros: take a live one */
                at++;
            got[at] = (float)(c.want[at] + 1.5 * c.tol[at]);
            CU_ASSERT_EQUAL(compare_tol("int8 bound, 1.5x off (expected)", &c, got), 1);
            /* so is a library that forgets the zero point's compensation */
            if (p->zp_a)
                CU_ASSERT(compare_tol("int8 bound, no compensation (expected)", &c, nocomp) >
                          ny / 2);
            free(got), free(nocomp);
            typed_free(&c);
        }
    printf("\n    %d dequantisation orders within the bound; off-bound results caught\n", orders);
}

/* Malformed dtypes and quantization parameters are DT_EINVAL; the f32-only
 * peers refuse bf16 and int8 with DT_EUNSUPPORTED. */
static void test_typed_invalid(void)
{
    int n;
    const dt_peer_desc *const *list = dt_peers(&n);
    float scales[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const dt_peer_problem ok = {.b_const = 1, .b_trans = 1, .batch = 1, .M = 4, .N = 8, .K = 8,
                                .threads = 1, .dtype = DT_PEER_INT8, .scale_a = 0.1f,
                                .zp_a = 128, .scale_b = scales};
    for (int i = 0; i < n; i++) {
        const dt_peer_desc *d = list[i];
        dt_peer_problem bad[6];
        for (int j = 0; j < 6; j++)
            bad[j] = ok;
        bad[0].dtype = (dt_peer_dtype)9;
        bad[1].scale_a = 0.0f;
        bad[2].scale_a = NAN;
        bad[3].zp_a = 256;
        bad[4].scale_b = NULL;
        bad[5].zp_a = -1;
        for (int j = 0; j < 6; j++) {
            void *st = (void *)&ok;
            dt_err e;
            dt_err_clear(&e);
            CU_ASSERT_EQUAL(d->create(&bad[j], &st, &e), DT_EINVAL);
            CU_ASSERT_PTR_NULL(st);
            CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, d->name));
        }
        scales[5] = -2.0f; /* every channel's scale is checked */
        void *st = (void *)&ok;
        dt_err e;
        CU_ASSERT_EQUAL(d->create(&ok, &st, &e), DT_EINVAL);
        CU_ASSERT_PTR_NULL(st);
        scales[5] = 1.0f;
        if (strcmp(d->name, "onednn") && strcmp(d->name, "onednn_rt")) {
            dt_peer_problem bf = ok;
            bf.dtype = DT_PEER_BF16;
            for (int k = 0; k < 2; k++) {
                st = (void *)&ok;
                CU_ASSERT_EQUAL(d->create(k ? &bf : &ok, &st, &e), DT_EUNSUPPORTED);
                CU_ASSERT_PTR_NULL(st);
            }
            printf("\n    %s refuses bf16 and int8: %s", d->name, e.msg);
        }
    }
    printf("\n");
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

/* Every dtype's probe: a number where the instruction exists, NAN where it
 * does not; the printed ratios to f32 are what a %peak divides by. */
static void test_peaks(void)
{
    dt_target t;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&t, &e), 0);
    double f32 = NAN;
    printf("\n");
    for (int k = 0; k < DT_PEAK_COUNT; k++) {
        const char *ins = dt_peak_instruction((dt_peak_kind)k);
        double g = dt_peak_gops((dt_peak_kind)k, 1, 0.3);
        if (k == DT_PEAK_F32_FMA)
            f32 = g;
        printf("    %-4s peak, 1 thread: %7.1f %-7s (%s)", dt_peak_kind_name((dt_peak_kind)k), g,
               dt_peak_unit((dt_peak_kind)k), ins ? ins : "no instruction here");
        if (k != DT_PEAK_F32_FMA && isfinite(g) && f32 > 0)
            printf(", %.2f x f32", g / f32);
        printf("\n");
        CU_ASSERT(ins ? isfinite(g) && g > 1.0 : isnan(g));
    }
    /* the instruction is there exactly when the target says so */
    CU_ASSERT_PTR_NOT_NULL(dt_peak_instruction(DT_PEAK_F32_FMA));
    CU_ASSERT_EQUAL(dt_peak_instruction(DT_PEAK_BF16_DP) != NULL,
                    dt_target_has(&t, DT_FEAT_AVX512F) && dt_target_has(&t, DT_FEAT_AVX512_BF16));
    CU_ASSERT_EQUAL(dt_peak_instruction(DT_PEAK_INT8_DP) != NULL,
                    (dt_target_has(&t, DT_FEAT_AVX512F) &&
                     dt_target_has(&t, DT_FEAT_AVX512_VNNI)) ||
                        dt_target_has(&t, DT_FEAT_AVX_VNNI));
    CU_ASSERT(isnan(dt_peak_gops((dt_peak_kind)DT_PEAK_COUNT, 1, 0.1)));
    CU_ASSERT_STRING_EQUAL(dt_peak_kind_name((dt_peak_kind)-1), "?");
    CU_ASSERT_STRING_EQUAL(dt_peak_unit(DT_PEAK_INT8_DP), "GOP/s");
    CU_ASSERT_STRING_EQUAL(dt_peak_unit(DT_PEAK_BF16_DP), "GFLOP/s");
}

static void test_stream(void)
{
    uint64_t bytes = dt_stream_buffer_bytes();
    CU_ASSERT(bytes >= (UINT64_C(256) << 20));
    double b1 = dt_stream_read_gbps(1, 0.2), b2 = dt_stream_read_gbps(2, 0.2);
    printf("\n    read bandwidth (%llu MiB): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n",
           (unsigned long long)(bytes >> 20), b1, b2);
    CU_ASSERT(isfinite(b1) && b1 > 0.1);
    CU_ASSERT(isfinite(b2) && b2 > 0.1);
}

/* `dtune info` names how each dtype runs and whether AMX is there; --peaks
 * adds the measured peaks and bandwidth (JSON: "peaks", "bandwidth"). */
static void test_cli_info_peaks(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "info"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "dtypes:      f32 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, ", w8a32 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "amx:"));
    CU_ASSERT_PTR_NULL(strstr(p.out, "peaks:"));
    dt_test_proc_free(&p);

    int code = -1;
    json_t *j = dt_test_run_dtune_json(&code, "info --json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *f32 = json_object_get(json_object_get(j, "dtypes"), "f32");
    CU_ASSERT(json_is_true(json_object_get(f32, "native")));
    CU_ASSERT_PTR_NULL(json_object_get(j, "peaks"));
    json_decref(j);

    j = dt_test_run_dtune_json(&code, "info --json --peaks");
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *peaks = json_object_get(j, "peaks"), *bw = json_object_get(j, "bandwidth");
    size_t counts = json_array_size(json_object_get(peaks, "threads"));
    CU_ASSERT(counts >= 1);
    json_t *v = json_object_get(json_object_get(peaks, "f32"), "values");
    CU_ASSERT_EQUAL(json_array_size(v), counts);
    CU_ASSERT(json_real_value(json_array_get(v, 0)) > 1.0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(peaks, "bf16"));
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(peaks, "int8"),
                                                             "unit")), "GOP/s");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(bw, "values")), counts);
    CU_ASSERT(json_real_value(json_array_get(json_object_get(bw, "values"), 0)) > 0.1);
    json_decref(j);

    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "info --peaks"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "peaks:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "bandwidth:"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "info --peak"), 1); /* usage error */
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "info --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "--peaks"));
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"registry", test_registry},
        {"dense against the reference", test_dense},
        {"batch_matmul against the reference", test_bmm},
        {"onednn_conv against a direct convolution", test_conv},
        {"oneDNN batched matmul on attention shapes", test_onednn_batched},
        {"pack twice with new weights", test_repack},
        {"invalid problems and operands", test_invalid},
        {"bf16 dense and batch_matmul against the reference", test_bf16},
        {"onednn_bf16: math=bf16's peer, activations converted per call", test_onednn_bf16},
        {"int8 dense against the exact integer result", test_int8},
        {"int8 peer bound: any dequantisation order in, an error out", test_int8_bound},
        {"invalid dtypes and quantization parameters", test_typed_invalid},
        {"FMA peak", test_fma_peak},
        {"peak per dtype", test_peaks},
        {"read bandwidth", test_stream},
        {"dtune info: dtypes, AMX, --peaks", test_cli_info_peaks},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"peers", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
