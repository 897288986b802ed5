#include "bench/bench.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "measure/omp_pin.h"
#include "microkernel/reference.h"
#include "peers/peer.h"
#include "backends/backend.h"

static float *alloc_floats(int64_t n) { return dt_alloc64((size_t)n * sizeof(float)); }

void dt_bench_result_free(dt_bench_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->ncands; i++)
        free(r->cands[i].message);
    if (r->verify_msg)
        for (int i = 0; i < r->ncands * r->nshapes; i++)
            free(r->verify_msg[i]);
    free(r->verify_msg);
    free(r->verified);
    free(r->cands);
    free(r->shapes);
    free(r->dims);
    free(r->gflop);
    free(r->seconds);
    free(r->peer_pack_s);
    free(r->peer_create_s);
    memset(r, 0, sizeof *r);
}

/* Everything one timing loop needs, per candidate. */
typedef struct {
    dt_kernel k;              /* kernels */
    void *packed;             /* constant weights: packed for this kernel's layout (shared) */
    const dt_peer_desc *peer; /* peers */
    const dt_bench_extern *ext; /* the extern candidate */
    void *state;              /* peer state for the current shape, or NULL */
} cand_rt;

/* The problem of one shape — the op's GEMM view (ops/op.h) with the
 * shape's sizes — with buffers large enough for every shape. */
typedef struct {
    dt_gemm g;               /* sizes of the current shape */
    const int64_t *vals;     /* the shape's variable values (extern candidates) */
    dt_dtype dtype;
    dt_operands o;           /* A[batch,M,K], B, bias[N] (and scales) in the dtype; real values */
    float *W32;              /* w8a32: the dequantized weights, what the f32 peers take;
                              * math=bf16: the bf16-rounded weights as f32 */
    const float *A32;        /* math=bf16: the bf16-rounded activations as f32 (o.Aref),
                              * so the f32 peers compute what the reference does */
    float *Y;                /* C[batch,M,N] */
    /* verify_shapes: the reference of the current shape and its scratch */
    double *ref, *mag;
    float *Bt;               /* B of one matrix packed for the reference */
    /* an op whose A is implicit (a_row; conv2d): o.A is its input, o.Aref
     * that input's real values, and Aim the current shape's M×K A gathered
     * from them (verify_shapes), which the reference reads */
    float *Aim;
    int64_t *Aidx;           /* scratch: one row's indices (K) */
    /* an op storing its weights otherwise than the view's N×K (b_row: a
     * grouped convolution): the view's B gathered from them, for the
     * reference; NULL otherwise */
    float *Bview;
} problem;

/* Floats after the largest output that no candidate may write. */
#define GUARD_N 64
#define GUARD_V 12345.0f

/* One call.  Peers report failures (a kernel call cannot fail). */
static int call_cand(const dt_bench_cand *c, cand_rt *rt, const problem *p, int threads,
                     dt_err *e)
{
    const dt_gemm *g = &p->g;
    const float *bias = g->bias ? p->o.bias : NULL;
    if (c->kind == DT_CAND_EXTERN) {
        rt->ext->run(rt->ext->ctx, p->vals, p->o.A, p->o.B, bias, p->o.scale_a, p->o.zp_a,
                     p->Y);
    } else if (c->kind == DT_CAND_PEER) {
        /* constant weights were packed: the bias takes B's place */
        return rt->peer->run(rt->state, p->A32 ? (const void *)p->A32 : p->o.A,
                             g->b_const ? bias : p->o.B, p->Y, e);
    } else {
        dt_gemm_args a = dt_gemm_args_contiguous(g, p->o.A, g->b_const ? rt->packed : p->o.B,
                                                 p->o.bias, p->Y, threads);
        a.scale_a = p->o.scale_a;
        a.zp_a = p->o.zp_a;
        dt_kernel_run(&rt->k, &a);
    }
    return 0;
}

static void set_status(dt_bench_cand *c, const char *status, const char *msg)
{
    snprintf(c->status, sizeof c->status, "%s", status);
    free(c->message);
    c->message = msg ? strdup(msg) : NULL;
}

/* An op whose A is implicit (a_row) is verified on its own dims: the real
 * ones (the first shape's) and two small odd ones, every dim capped at 7
 * and then at 3 (a case that the op's check refuses, such as a window
 * larger than its padded image, is left out). */
static int verify_cand_dims(const dt_kernel *k, const dt_kernel_op *kop, const int64_t *real,
                            int threads, dt_err *e)
{
    static const int64_t caps[] = {0, 7, 3};
    const dt_op_desc *op = kop->op;
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        int64_t d[DT_MAX_DIMS];
        for (int j = 0; j < op->ndims; j++)
            d[j] = caps[i] && real[j] > caps[i] ? caps[i] : real[j];
        if (i > 0 && op->check(d, kop->attrs, NULL))
            continue;
        rc = dt_verify_kernel_dims(k, kop, d, threads, 100 + (uint64_t)i, e);
    }
    return rc;
}

/* Verification sizes for a kernel: boundary cases at small sizes, and one
 * small-M call at the workload's real N and K (real: the first shape's
 * dims). */
static int verify_cand(const dt_kernel *k, const dt_kernel_op *kop, const dt_annotation *a,
                       const int64_t *real, int threads, dt_err *e)
{
    if (kop->op->a_row)
        return verify_cand_dims(k, kop, real, threads, e);
    dt_gemm g;
    int rc = dt_op_gemm(kop->op, kop->attrs, real, &g, e);
    if (rc)
        return rc;
    int64_t rn = g.N, rk = g.K;
    int64_t kc = a->kc > 0 ? a->kc : 64;
    int64_t cases[][4] = {
        /* batch, M, N, K */
        {2, 1, rn, rk},
        {2, a->mr > 1 ? a->mr - 1 : 1, a->nr + 3, 2 * kc + a->unroll + 1},
        {3, 37, 2 * a->nr + 5, 70},
    };
    for (int i = 0; i < 3 && !rc; i++)
        rc = dt_verify_kernel(k, kop, cases[i][0], cases[i][1], cases[i][2], cases[i][3],
                              threads, 100 + (uint64_t)i, e);
    return rc;
}

static int build_kernels(const dt_kernel_op *kop, const dt_annotation *kernels, int n,
                         const dt_target *t, const dt_builder *b, const dt_bench_opts *o,
                         const int64_t *real_dims, dt_bench_cand *cands, cand_rt *rts, dt_err *e)
{
    char **src = calloc((size_t)n, sizeof *src);
    int *which = calloc((size_t)n, sizeof *which); /* built source j is kernel which[j] */
    dt_build_result *br = calloc((size_t)n, sizeof *br);
    int nsrc = 0;
    int rc = (!src || !which || !br) ? dt_errf(e, DT_ENOMEM, "out of memory") : 0;
    for (int i = 0; !rc && i < n; i++) {
        cands[i].kind = DT_CAND_KERNEL;
        cands[i].ann = kernels[i];
        snprintf(cands[i].name, sizeof cands[i].name, "k%d", i);
        cands[i].peak_kind =
            dt_bench_backend(kop->dtype, &kernels[i], cands[i].backend, sizeof cands[i].backend);
        dt_err ve;
        if (dt_annotation_validate(&kernels[i], t, &ve)) {
            set_status(&cands[i], "invalid", ve.msg); /* never built */
            continue;
        }
        which[nsrc] = i;
        rc = dt_codegen(kop, &kernels[i], &src[nsrc++], e);
    }
    if (!rc) {
        if (o->progress)
            fprintf(stderr, "bench: building %d kernels...\n", nsrc);
        double t0 = dt_now_s();
        rc = dt_build_many(b, (const char *const *)src, nsrc, 0, br, e);
        if (o->progress && !rc)
            fprintf(stderr, "bench: built in %.1f s; verifying...\n", dt_now_s() - t0);
    }
    for (int j = 0; !rc && j < nsrc; j++) {
        int i = which[j];
        dt_err ke;
        if (br[j].status != DT_BUILD_OK) {
            set_status(&cands[i], dt_build_status_name(br[j].status), br[j].log);
        } else if (dt_kernel_load(br[j].so_path, &rts[i].k, &ke)) {
            set_status(&cands[i], "load_error", ke.msg);
        } else if (verify_cand(&rts[i].k, kop, &kernels[i], real_dims, o->threads, &ke)) {
            set_status(&cands[i], "wrong_answer", ke.msg);
            dt_kernel_unload(&rts[i].k);
        } else {
            set_status(&cands[i], "ok", NULL);
        }
    }
    for (int j = 0; j < nsrc; j++) {
        free(src[j]);
        dt_build_result_free(&br[j]);
    }
    free(src);
    free(which);
    free(br);
    return rc;
}


/* Kernels share packed constant weights by layout: pack once per row of
 * hooks (the GEMM view's or an op's own sketch's), panel width NR, K group
 * and K padding. */
static int pack_weights(dt_bench_cand *cands, cand_rt *rts, int n, const problem *p, dt_err *e)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(cands[i].status, "ok") != 0)
            continue;
        for (int j = 0; j < i; j++)
            if (rts[j].packed && rts[j].k.op == rts[i].k.op && cands[j].ann.nr == cands[i].ann.nr &&
                dt_mk_packed_kg(rts[j].k.op, &cands[j].ann) ==
                    dt_mk_packed_kg(rts[i].k.op, &cands[i].ann) &&
                dt_mk_packed_kpad(rts[j].k.op, &cands[j].ann) ==
                    dt_mk_packed_kpad(rts[i].k.op, &cands[i].ann)) {
                rts[i].packed = rts[j].packed;
                cands[i].pack_s = cands[j].pack_s;
                break;
            }
        if (rts[i].packed)
            continue;
        size_t sz = dt_kernel_packed_size(&rts[i].k, &p->g);
        rts[i].packed = dt_alloc64(sz ? sz : 64);
        if (!rts[i].packed)
            return dt_errf(e, DT_ENOMEM, "out of memory packing weights");
        double t0 = dt_now_s();
        dt_kernel_pack(&rts[i].k, &p->g, p->o.B, p->o.scale_b, rts[i].packed);
        cands[i].pack_s = dt_now_s() - t0;
    }
    return 0;
}

static int peer_wanted(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        const char *end = strchr(s, ',');
        size_t l = end ? (size_t)(end - s) : strlen(s);
        if (l == n && strncmp(s, name, n) == 0)
            return 1;
        s += l + (end ? 1 : 0);
    }
    return 0;
}

/* Whether candidate c runs on shape s at all. */
static int cand_runs(const dt_bench_result *r, const cand_rt *rts, int nkernels, int c, int s,
                     const dt_bench_opts *o)
{
    if (strcmp(r->cands[c].status, "ok") != 0)
        return 0;
    if (r->cands[c].kind == DT_CAND_PEER)
        return rts[c].state != NULL;
    return c >= nkernels || !o->shape_kernel || o->shape_kernel[s] == c;
}

/* Rows and columns of one item of the reference's parallel loop. */
#define REF_ROWS 4
#define REF_COLS 64

/* The reference of the current shape into p->ref / p->mag
 * (microkernel/reference.h), its blocks spread over the run's threads. */
static void reference_shape(problem *p, int threads)
{
    const dt_gemm *g = &p->g;
    const int64_t M = g->M, N = g->N;
    const int64_t mt = (M + REF_ROWS - 1) / REF_ROWS, nt = (N + REF_COLS - 1) / REF_COLS;
    const int64_t items = mt * nt;
    int team = threads < 1 ? 1 : threads;
    if (items < 2 * team || (double)M * (double)N * (double)g->K < 1e6)
        team = 1; /* a fork/join costs more than a small problem */
    for (int64_t b = 0; b < g->batch; b++) {
        dt_ref_pack_b(g, p->Bview ? p->Bview : p->o.Bref, b, p->Bt);
        double *ref = p->ref + b * M * N, *mag = p->mag + b * M * N;
        /* item = column block outer, row block inner: neighbours share B */
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
        for (int64_t it = 0; it < items; it++) {
            int64_t i0 = (it % mt) * REF_ROWS, j0 = (it / mt) * REF_COLS;
            int64_t i1 = i0 + REF_ROWS < M ? i0 + REF_ROWS : M;
            int64_t j1 = j0 + REF_COLS < N ? j0 + REF_COLS : N;
            dt_ref_block(g, p->Aim ? p->Aim : p->o.Aref, b, p->Bt, p->o.bias, p->o.colscale, i0, i1, j0, j1,
                         ref + i0 * N + j0, mag + i0 * N + j0, N);
        }
    }
}

/* An op whose A is implicit: the current shape's M×K A gathered from the
 * flat input's real values (laid out as the input), 0 where the op reads
 * padding. */
static void gather_a(problem *p)
{
    const dt_gemm *g = &p->g;
    if (!p->Aim)
        return;
    int64_t *index = p->Aidx;
    for (int64_t i = 0; i < g->M; i++) {
        g->op->a_row(g->dims, g->attrs, i, index);
        float *row = p->Aim + i * g->K;
        for (int64_t k = 0; k < g->K; k++)
            row[k] = index[k] < 0 ? 0.0f : p->o.Aref[index[k]];
    }
}

/* Runs candidate c once on the shape's inputs (output poisoned with NaN,
 * guard values past it) and checks it against the reference. */
static int check_cand(const dt_bench_cand *c, cand_rt *rt, const problem *p, int threads,
                      dt_err *e)
{
    const dt_gemm *g = &p->g;
    int64_t n = g->batch * g->M * g->N;
    for (int64_t i = 0; i < n; i++)
        p->Y[i] = NAN;
    for (int64_t i = n; i < n + GUARD_N; i++)
        p->Y[i] = GUARD_V;
    int rc = call_cand(c, rt, p, threads, e);
    if (rc)
        return rc;
    for (int64_t i = n; i < n + GUARD_N; i++)
        if (p->Y[i] != GUARD_V)
            return dt_errf(e, DT_EINVAL, "wrote past the end of the output (element %lld)",
                           (long long)i);
    for (int64_t b = 0; b < g->batch; b++) {
        int64_t off = b * g->M * g->N;
        rc = dt_check_close_tol(p->Y + off, g->N, p->ref + off, p->mag + off, g->M, g->N,
                                dt_ref_tol_k(p->dtype, g->K), e);
        if (rc)
            return g->batch > 1 ? dt_err_prefix(e, "batch %lld", (long long)b) : rc;
    }
    return 0;
}

/* verify_shapes: every candidate that runs on shape s, checked once. */
static int verify_shape(dt_bench_result *r, cand_rt *rts, int nkernels, problem *p, int s,
                        const dt_bench_opts *o, dt_err *e)
{
    int any = 0;
    for (int c = 0; c < r->ncands; c++)
        any |= cand_runs(r, rts, nkernels, c, s, o);
    if (!any)
        return 0;
    gather_a(p);
    reference_shape(p, o->threads);
    for (int c = 0; c < r->ncands; c++) {
        if (!cand_runs(r, rts, nkernels, c, s, o))
            continue;
        dt_err ce;
        dt_err_clear(&ce);
        int i = c * r->nshapes + s;
        if (check_cand(&r->cands[c], &rts[c], p, o->threads, &ce)) {
            r->verified[i] = -1;
            if (!(r->verify_msg[i] = strdup(ce.msg)))
                return dt_errf(e, DT_ENOMEM, "out of memory");
        } else {
            r->verified[i] = 1;
        }
    }
    return 0;
}

/* Times every usable candidate on the current shape, interleaved. */
static void time_shape(dt_bench_result *r, cand_rt *rts, int nkernels, const problem *p, int s,
                       const dt_bench_opts *o)
{
    int n = r->ncands;
    int64_t *calls = calloc(n > 0 ? (size_t)n : 1, sizeof *calls);
    for (int c = 0; c < n; c++) {
        r->seconds[c * r->nshapes + s] = NAN;
        if (!calls || !cand_runs(r, rts, nkernels, c, s, o) || r->verified[c * r->nshapes + s] < 0)
            continue;
        call_cand(&r->cands[c], &rts[c], p, o->threads, NULL); /* warm-up */
        double t0 = dt_now_s();
        call_cand(&r->cands[c], &rts[c], p, o->threads, NULL);
        double t1 = dt_now_s() - t0;
        calls[c] = t1 > 0 ? (int64_t)(o->min_time_s / t1) + 1 : 1000;
        if (calls[c] > 100000)
            calls[c] = 100000;
        r->seconds[c * r->nshapes + s] = INFINITY;
    }
    for (int rep = 0; calls && rep < o->repeats; rep++) {
        for (int q = 0; q < n; q++) {
            int c = (q + rep * 7) % n; /* rotate the order between repeats */
            if (!calls[c])
                continue;
            double t0 = dt_now_s();
            for (int64_t i = 0; i < calls[c]; i++)
                call_cand(&r->cands[c], &rts[c], p, o->threads, NULL);
            double per = (dt_now_s() - t0) / (double)calls[c];
            double *best = &r->seconds[c * r->nshapes + s];
            if (per < *best)
                *best = per;
        }
    }
    free(calls);
}

/* The peak kind named name (a dtype's or a back-end row's `peak`). */
static dt_peak_kind peak_kind_named(const char *name)
{
    for (int k = 0; name && k < DT_PEAK_COUNT; k++)
        if (strcmp(dt_peak_kind_name((dt_peak_kind)k), name) == 0)
            return (dt_peak_kind)k;
    DT_ASSERT(0, "every dtype and back-end row names a peak kind of peers/peer.h");
}

/* Native: the dtype's own arithmetic's ceiling (its row's peak, the peak of
 * each of its vector rows: tests/test_bench.c); else what its portable
 * rows run at (their widened f32). */
dt_peak_kind dt_bench_dtype_peak(dt_dtype d, const dt_target *t)
{
    const dt_backend *row = dt_backend_of(d, t->isa);
    if (!row)
        return DT_PEAK_F32_FMA;
    if (!dt_dtype_native(d, t, NULL))
        return peak_kind_named(dt_backend_portable(d)->peak);
    return peak_kind_named(dt_dtype_info(d)->peak);
}

dt_peak_kind dt_bench_backend(dt_dtype d, const dt_annotation *a, char *buf, int n)
{
    const dt_backend *row = dt_backend_of_ann(d, a);
    if (buf && n > 0) {
        if (row)
            dt_backend_full_name(row, buf, n);
        else
            snprintf(buf, (size_t)n, "?");
    }
    return row ? peak_kind_named(row->peak) : DT_PEAK_F32_FMA;
}

double dt_bench_cand_peak(const dt_bench_result *r, int c)
{
    dt_peak_kind k = r->cands[c].peak_kind;
    return k >= 0 && k < DT_PEAK_COUNT ? r->peaks[k] : NAN;
}

const char *dt_bench_peaks_text(const dt_bench_result *r, char *buf, int n)
{
    int len = 0;
    if (n > 0)
        buf[0] = 0;
    for (int i = -1; i < DT_PEAK_COUNT; i++) {
        /* the dtype's kind first, then the others in kind order */
        dt_peak_kind k = i < 0 ? r->peak_kind : (dt_peak_kind)i;
        if ((i >= 0 && k == r->peak_kind) || !(r->peaks[k] > 0) || len >= n)
            continue;
        len += snprintf(buf + len, (size_t)(n - len), "%s%s %.1f %s (1 thread %.1f)",
                        len ? ", " : "", dt_peak_kind_name(k), r->peaks[k], dt_peak_unit(k),
                        r->peaks1[k]);
    }
    if (!buf[0] && n > 0)
        snprintf(buf, (size_t)n, "%s n/a", dt_peak_kind_name(r->peak_kind));
    return buf;
}

/* The peak kinds to measure (bit 1u << kind): the dtype's, every ok
 * kernel's and o->extra_peaks. */
static unsigned peaks_wanted(const dt_bench_result *r, const dt_bench_opts *o)
{
    unsigned m = (1u << r->peak_kind) | o->extra_peaks;
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].kind == DT_CAND_KERNEL && strcmp(r->cands[c].status, "ok") == 0)
            m |= 1u << r->cands[c].peak_kind;
    return m & ((1u << DT_PEAK_COUNT) - 1);
}

/* The peaks, probed before and again after the shapes: clock boost drifts
 * during a long run, and the higher reading is the ceiling. */
static void measure_peak(dt_bench_result *r, const dt_bench_opts *o)
{
    unsigned want = peaks_wanted(r, o);
    int threads = o->threads;
    for (int k = 0; k < DT_PEAK_COUNT; k++) {
        if (!(want & (1u << k)))
            continue;
        double one = dt_peak_gops((dt_peak_kind)k, 1, 0.2);
        double all = threads > 1 ? dt_peak_gops((dt_peak_kind)k, threads, 0.2) : one;
        if (one > r->peaks1[k] || isnan(r->peaks1[k]))
            r->peaks1[k] = one;
        if (all > r->peaks[k] || isnan(r->peaks[k]))
            r->peaks[k] = all;
    }
    r->peak_gops = r->peaks[r->peak_kind];
    r->peak1_gops = r->peaks1[r->peak_kind];
}

/* A convolution's shape (g from dt_op_gemm with dims; the op's conv hook)
 * as the convolution peers take it (dt_peer_problem.conv: peers/ knows no
 * op); nothing for an op that is not a convolution. */
static void peer_conv(const dt_gemm *g, dt_peer_problem *pp)
{
    if (!g->op || !g->op->conv)
        return;
    dt_conv_geom c;
    g->op->conv(g->dims, g->attrs, &c);
    pp->conv.on = 1;
    pp->conv.n = c.n, pp->conv.h = c.h, pp->conv.w = c.w, pp->conv.c = c.c;
    pp->conv.k = c.k, pp->conv.r = c.r, pp->conv.s = c.s;
    pp->conv.stride = (int)c.stride, pp->conv.pad = (int)c.pad, pp->conv.dilation = (int)c.dilation;
    pp->conv.groups = c.groups;
    pp->conv.stride_w = (int)c.stride_w, pp->conv.dilation_w = (int)c.dilation_w;
    pp->conv.pad_l = (int)c.pad_l, pp->conv.pad_b = (int)c.pad_b, pp->conv.pad_r = (int)c.pad_r;
    pp->conv.transpose = (int)c.transpose;
    pp->conv.out_pad_h = (int)c.out_pad_h, pp->conv.out_pad_w = (int)c.out_pad_w;
}

/* The peers' dtype (peers/peer.h) named name: a dtype row's `peer`. */
static dt_peer_dtype peer_dtype_named(const char *name)
{
    static const struct {
        const char *name;
        dt_peer_dtype d;
    } peer_dtypes[] = {{"f32", DT_PEER_F32}, {"bf16", DT_PEER_BF16}, {"int8", DT_PEER_INT8}};
    for (size_t i = 0; i < sizeof peer_dtypes / sizeof peer_dtypes[0]; i++)
        if (strcmp(peer_dtypes[i].name, name) == 0)
            return peer_dtypes[i].d;
    DT_ASSERT(0, "every dtype row's peer is a dtype the peers compute (peers/peer.h)");
}

_Static_assert((int)DT_PEER_ACT_RELU == (int)DT_ACT_RELU &&
                   (int)DT_PEER_ACT_GELU == (int)DT_ACT_GELU &&
                   (int)DT_PEER_ACT_RELU6 == (int)DT_ACT_RELU6 &&
                   (int)DT_PEER_ACT_HARDSWISH == (int)DT_ACT_HARDSWISH,
               "a GEMM view's act is its peers' activation");

/* The peers' problem for the GEMM view g in dtype d: the dtype its row
 * names as its peers' (dtypes/dtype.c says why w8a32's and math=bf16's are
 * f32); the int8 peers take the quantisation parameters too. */
static dt_peer_problem peer_problem(const dt_gemm *g, const problem *p, int threads)
{
    dt_peer_problem pp = {.batch = g->batch, .M = g->M, .N = g->N, .K = g->K,
                          .b_trans = g->b_trans, .b_const = g->b_const, .bias = g->bias,
                          .act = (dt_peer_act)g->act, .threads = threads,
                          .math_bf16 = dt_dtype_math(p->dtype) != NULL};
    pp.dtype = peer_dtype_named(dt_dtype_info(p->dtype)->peer);
    if (pp.dtype == DT_PEER_INT8) {
        pp.scale_a = p->o.scale_a;
        pp.zp_a = p->o.zp_a;
        pp.scale_b = p->o.scale_b;
    }
    peer_conv(g, &pp);
    return pp;
}

/* The result's arrays for nshapes shapes and r->ncands candidates. */
static int alloc_result(dt_bench_result *r, const dt_workload *w, int nshapes, dt_err *e)
{
    int nd = w->op->ndims;
    r->shapes = malloc((size_t)(nshapes * (w->nvars ? w->nvars : 1)) * sizeof *r->shapes);
    r->dims = malloc((size_t)(nshapes * nd) * sizeof *r->dims);
    r->gflop = malloc((size_t)nshapes * sizeof *r->gflop);
    r->cands = calloc((size_t)r->ncands, sizeof *r->cands);
    r->seconds = malloc((size_t)(r->ncands * nshapes) * sizeof *r->seconds);
    r->peer_pack_s = malloc((size_t)(r->ncands * nshapes) * sizeof *r->peer_pack_s);
    r->peer_create_s = malloc((size_t)(r->ncands * nshapes) * sizeof *r->peer_create_s);
    r->verified = calloc((size_t)(r->ncands * nshapes) + 1, sizeof *r->verified);
    r->verify_msg = calloc((size_t)(r->ncands * nshapes) + 1, sizeof *r->verify_msg);
    if (!r->shapes || !r->dims || !r->gflop || !r->cands || !r->seconds || !r->peer_pack_s ||
        !r->peer_create_s || !r->verified || !r->verify_msg)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    return 0;
}

/* The largest tensors any shape needs (elements). */
typedef struct {
    int64_t x, w, y, n, k;
    int64_t mk;              /* an op whose A is implicit: the largest M×K (else 0) */
} max_sizes;

/* Fills the result's shapes, dims and GFLOP per shape and the largest
 * sizes; p->g becomes the first shape's GEMM view (the weights' N and K,
 * which constant weights need the same in every shape). */
static int scan_shapes(const dt_workload *w, const int64_t *shapes, int nshapes,
                       dt_bench_result *r, problem *p, max_sizes *mx, dt_err *e)
{
    int nd = w->op->ndims;
    *mx = (max_sizes){1, 1, 1, 1, 1, 0};
    dt_gemm first = {0};
    for (int s = 0; s < nshapes; s++) {
        memcpy(r->shapes + s * w->nvars, shapes + s * w->nvars, (size_t)w->nvars * sizeof *shapes);
        int64_t *d = r->dims + s * nd;
        int rc;
        if ((rc = dt_workload_dims(w, shapes + s * w->nvars, d, e)) ||
            (rc = dt_op_gemm(w->op, w->attrs, d, &p->g, e)))
            return rc;
        r->gflop[s] = w->op->flops(d, w->attrs) * 1e-9;
        const dt_gemm *g = &p->g;
        /* an op whose A is implicit: A is its input, a_elems elements */
        const int64_t nx = w->op->a_row ? w->op->a_elems(d, w->attrs) : g->batch * g->M * g->K;
        if (nx > mx->x)
            mx->x = nx;
        if (w->op->a_row && g->M * g->K > mx->mk)
            mx->mk = g->M * g->K;
        if (g->batch * g->N * g->K > mx->w)
            mx->w = g->batch * g->N * g->K;
        if (g->batch * g->M * g->N > mx->y)
            mx->y = g->batch * g->M * g->N;
        mx->n = g->N > mx->n ? g->N : mx->n;
        mx->k = g->K > mx->k ? g->K : mx->k;
        if (s == 0)
            first = *g;
        if (g->b_const && (g->N != first.N || g->K != first.K))
            return dt_errf(e, DT_EUNSUPPORTED, "%s benchmarks need constant N and K",
                           w->op->name);
    }
    p->g = first;
    return 0;
}

/* The problem's operands and buffers at the largest sizes. */
static int alloc_problem(problem *p, dt_dtype dtype, const max_sizes *mx, const dt_bench_opts *o,
                         dt_err *e)
{
    int rc;
    p->dtype = dtype;
    if ((rc = dt_operands_make_flat(&p->o, dtype, mx->x, mx->w, mx->n,
                                    p->g.b_const ? p->g.K : 0, o->seed, e)))
        return rc;
    p->Y = alloc_floats(mx->y + GUARD_N);
    /* the weights as the op stores them: N rows of wk (the view's K, or a
     * grouped convolution's R·S·C/groups) */
    const dt_gemm *g0 = &p->g;
    const int64_t wk = g0->op && g0->op->b_row ? g0->op->b_elems(g0->dims, g0->attrs) / g0->N
                                                : g0->K;
    /* the peers' weights when they are not the kernels': the dequantised
     * f32 weights of a dtype whose peers run f32 on scaled s8 ones (w8a32),
     * or math=bf16's rounded operands below */
    const int math = dt_dtype_math(dtype) != NULL;
    const dt_dtype_row *row = dt_dtype_info(dtype);
    const int dequant = !math && peer_dtype_named(row->peer) == DT_PEER_F32 &&
                        (row->quant & DT_QUANT_B_SCALE_N);
    if (dequant && (p->W32 = alloc_floats(mx->w)))
        for (int64_t i = 0; i < mx->w; i++) /* W[n][k] of the constant weights */
            p->W32[i] = (float)p->o.colscale[i / wk] * p->o.Bref[i];
    /* math=bf16: the f32 peers get the rounded operands (flat operands:
     * Aref and Bref are laid out as A and B) — the same speed, and the
     * answer the reference of the rounded operands checks */
    if (math && (p->W32 = alloc_floats(mx->w))) {
        memcpy(p->W32, p->o.Bref, (size_t)mx->w * sizeof(float));
        p->A32 = p->o.Aref;
    }
    if (o->verify_shapes) {
        size_t cells = (size_t)mx->y * sizeof(double);
        p->ref = dt_alloc64(cells);
        p->mag = dt_alloc64(cells);
        p->Bt = alloc_floats(mx->k * dt_ref_ldb(mx->n));
        if (mx->mk) {
            p->Aim = alloc_floats(mx->mk);
            p->Aidx = malloc((size_t)mx->k * sizeof *p->Aidx);
        }
        if (g0->op && g0->op->b_row && p->Aidx && (p->Bview = alloc_floats(g0->N * g0->K)))
            for (int64_t n = 0; n < g0->N; n++) { /* the weights are constant: once */
                g0->op->b_row(g0->dims, g0->attrs, n, p->Aidx);
                for (int64_t k = 0; k < g0->K; k++)
                    p->Bview[n * g0->K + k] = p->Aidx[k] < 0 ? 0.0f : p->o.Bref[p->Aidx[k]];
            }
    }
    if (!p->Y || ((dequant || math) && !p->W32) ||
        (o->verify_shapes && (!p->ref || !p->mag || !p->Bt)) ||
        (o->verify_shapes && mx->mk && (!p->Aim || !p->Aidx)) ||
        (o->verify_shapes && g0->op && g0->op->b_row && !p->Bview))
        return dt_errf(e, DT_ENOMEM, "out of memory for the benchmark's tensors");
    return 0;
}

/* The extern candidate (o->ext) at index c, its weights packed once. */
static void add_extern(dt_bench_result *r, cand_rt *rts, int c, const problem *p,
                       const dt_bench_opts *o)
{
    dt_bench_cand *xc = &r->cands[c];
    xc->kind = DT_CAND_EXTERN;
    xc->peak_kind = r->peak_kind;
    snprintf(xc->name, sizeof xc->name, "%s", o->ext->name);
    rts[c].ext = o->ext;
    set_status(xc, "ok", NULL);
    if (p->g.b_const && o->ext->pack) {
        dt_err pe;
        double t0 = dt_now_s();
        if (o->ext->pack(o->ext->ctx, p->o.B, p->o.scale_b, &pe))
            set_status(xc, "pack_error", pe.msg);
        xc->pack_s = dt_now_s() - t0;
    }
}

/* Whether peer d is wanted and a peer of problems like pp at all (a GEMM
 * peer is, of a convolution's GEMM view, to be listed as skipped). */
static int peer_included(const dt_peer_desc *d, const dt_peer_problem *pp, const dt_bench_opts *o)
{
    return peer_wanted(o->peers, d->name) && (!d->applies || d->applies(pp));
}

/* The wanted peers that apply to the problem, from index c on; returns how
 * many.  A GEMM peer on a convolution (an op whose A is implicit: the
 * peers get its NHWC input, never the im2col) is listed, as "skipped". */
static int add_peers(dt_bench_result *r, cand_rt *rts, int c, const dt_peer_desc *const *peers,
                     int npeers_all, const dt_peer_problem *pp, const dt_bench_opts *o)
{
    int added = 0;
    for (int i = 0; i < npeers_all; i++) {
        if (!peer_included(peers[i], pp, o))
            continue;
        added++;
        r->cands[c].kind = DT_CAND_PEER;
        r->cands[c].peak_kind = r->peak_kind;
        snprintf(r->cands[c].name, sizeof r->cands[c].name, "%s", peers[i]->name);
        if (pp->conv.on && !peers[i]->conv)
            set_status(&r->cands[c], "skipped",
                       "skipped: a GEMM peer, and conv2d's GEMM view has an implicit A (the "
                       "im2col of its NHWC input, which only dtune's kernels gather); its "
                       "oneDNN peer is onednn_conv");
        else
            set_status(&r->cands[c], "ok", NULL);
        rts[c++].peer = peers[i];
    }
    return added;
}

/* Creates the peers' state for shape s (p->g its GEMM view) and packs their
 * weights, timed; a peer refusing a shape stays in for the others (no
 * state), its first reason kept. */
static void peers_prepare(dt_bench_result *r, cand_rt *rts, int first_peer, const problem *p,
                          int s, int threads)
{
    dt_peer_problem pp = peer_problem(&p->g, p, threads);
    for (int c = first_peer; c < r->ncands; c++) {
        dt_err pe;
        r->peer_pack_s[c * r->nshapes + s] = NAN;
        r->peer_create_s[c * r->nshapes + s] = NAN;
        if (strcmp(r->cands[c].status, "ok") != 0)
            continue; /* skipped */
        double tc = dt_now_s();
        if (rts[c].peer->create(&pp, &rts[c].state, &pe)) {
            rts[c].state = NULL;
            if (!r->cands[c].message)
                r->cands[c].message = strdup(pe.msg);
            continue;
        }
        r->peer_create_s[c * r->nshapes + s] = dt_now_s() - tc;
        double t0 = dt_now_s();
        if (rts[c].peer->pack(rts[c].state, p->W32 ? (const void *)p->W32 : p->o.B, &pe)) {
            rts[c].peer->destroy(rts[c].state);
            rts[c].state = NULL;
            if (!r->cands[c].message)
                r->cands[c].message = strdup(pe.msg);
            continue;
        }
        r->peer_pack_s[c * r->nshapes + s] = dt_now_s() - t0;
    }
}

/* The convolution peers (dt_peer_desc.conv): their primitive creation time
 * per shape — what a server with dynamic shapes pays on every new shape —
 * summarised in their message (mean, min, max; per shape in
 * r->peer_create_s), after any reason a shape was refused. */
static void peers_note_creation(dt_bench_result *r, const cand_rt *rts, int first_peer)
{
    for (int c = first_peer; c < r->ncands; c++) {
        if (!rts[c].peer || !rts[c].peer->conv || strcmp(r->cands[c].status, "ok") != 0)
            continue;
        double sum = 0, lo = INFINITY, hi = 0, pack = 0;
        int n = 0;
        for (int s = 0; s < r->nshapes; s++) {
            double t = r->peer_create_s[c * r->nshapes + s];
            if (!(t >= 0))
                continue;
            n++;
            sum += t;
            lo = t < lo ? t : lo;
            hi = t > hi ? t : hi;
            if (r->peer_pack_s[c * r->nshapes + s] >= 0)
                pack += r->peer_pack_s[c * r->nshapes + s];
        }
        if (!n)
            continue;
        char buf[256];
        snprintf(buf, sizeof buf, "primitive creation per shape %.3f ms mean, %.3f min, %.3f max "
                 "over %d shape%s (weights reorder %.3f ms mean), outside the timing",
                 1e3 * sum / n, 1e3 * lo, 1e3 * hi, n, n == 1 ? "" : "s", 1e3 * pack / n);
        const char *old = r->cands[c].message;
        size_t len = strlen(buf) + (old ? strlen(old) + 2 : 0) + 1;
        char *m = malloc(len);
        if (!m)
            continue;
        snprintf(m, len, "%s%s%s", old ? old : "", old ? "; " : "", buf);
        free(r->cands[c].message);
        r->cands[c].message = m;
    }
}

static void peers_release(const dt_bench_result *r, cand_rt *rts, int first_peer)
{
    for (int c = first_peer; c < r->ncands; c++)
        if (rts[c].state) {
            rts[c].peer->destroy(rts[c].state);
            rts[c].state = NULL;
        }
}

/* Verifies (o->verify_shapes) and times every candidate at each shape in
 * turn, the peak measured again after the last. */
static int run_shapes(const dt_workload *w, const int64_t *shapes, dt_bench_result *r,
                      cand_rt *rts, int nkernels, int first_peer, problem *p,
                      const dt_bench_opts *o, dt_err *e)
{
    int nshapes = r->nshapes, nd = w->op->ndims;
    for (int s = 0; s < nshapes; s++) {
        dt_op_gemm(w->op, w->attrs, r->dims + s * nd, &p->g, NULL); /* checked above */
        /* the peers' problem is the op's GEMM view */
        peers_prepare(r, rts, first_peer, p, s, o->threads);
        p->vals = shapes + s * w->nvars;
        int rc = 0;
        if (!o->verify_shapes || !(rc = verify_shape(r, rts, nkernels, p, s, o, e)))
            time_shape(r, rts, nkernels, p, s, o);
        peers_release(r, rts, first_peer);
        if (rc)
            return rc;
        if (s + 1 == nshapes)
            measure_peak(r, o);
        if (o->progress) {
            char shape[128];
            dt_shape_format(w, shapes + s * w->nvars, shape, sizeof shape);
            fprintf(stderr, "\rbench: %d/%d shapes (%s)   ", s + 1, nshapes, shape);
            if (s + 1 == nshapes)
                fprintf(stderr, "\n");
        }
    }
    return 0;
}

/* Unloads the kernels and frees their packed weights (shared between
 * kernels of one layout) and the problem's buffers. */
static void free_run(cand_rt *rts, int ncands, int nkernels, problem *p)
{
    if (rts) {
        for (int i = 0; i < ncands; i++) {
            if (i < nkernels) {
                int shared = 0;
                for (int j = 0; j < i; j++)
                    shared |= rts[j].packed == rts[i].packed;
                if (!shared)
                    free(rts[i].packed);
                dt_kernel_unload(&rts[i].k);
            }
        }
        free(rts);
    }
    dt_operands_free(&p->o);
    free(p->W32);
    free(p->Y);
    free(p->ref);
    free(p->mag);
    free(p->Bt);
    free(p->Bview);
    free(p->Aim);
    free(p->Aidx);
}

int dt_bench_run(const dt_workload *w, const int64_t *shapes, int nshapes,
                 const dt_annotation *kernels, int nkernels, const dt_target *t,
                 const dt_builder *b, const dt_bench_opts *o, dt_bench_result *r, dt_err *e)
{
    memset(r, 0, sizeof *r);
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    int npeers_all = 0;
    const dt_peer_desc *const *peers = dt_peers(&npeers_all);
    int npeers = 0; /* the wanted peers; those that apply are fewer or as many */
    for (int i = 0; i < npeers_all; i++)
        npeers += peer_wanted(o->peers, peers[i]->name);
    int next = o->ext ? 1 : 0; /* the extern candidate sits at index nkernels */
    r->nshapes = nshapes;
    r->nvars = w->nvars;
    r->ncands = nkernels + next + npeers;
    r->peak_kind = dt_bench_dtype_peak(w->dtype, t);
    r->peak_gops = r->peak1_gops = NAN;
    for (int k = 0; k < DT_PEAK_COUNT; k++)
        r->peaks[k] = r->peaks1[k] = NAN;
    problem p = {0};
    max_sizes mx;
    int rc = alloc_result(r, w, nshapes, e);
    cand_rt *rts = calloc((size_t)r->ncands, sizeof *rts);
    if (!rc && !rts)
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    if (rc || (rc = scan_shapes(w, shapes, nshapes, r, &p, &mx, e)) ||
        (rc = alloc_problem(&p, w->dtype, &mx, o, e)))
        goto out;

    if ((rc = build_kernels(&kop, kernels, nkernels, t, b, o, r->dims, r->cands, rts, e)))
        goto out;
    if (p.g.b_const && (rc = pack_weights(r->cands, rts, nkernels, &p, e)))
        goto out;
    if (o->ext)
        add_extern(r, rts, nkernels, &p, o);
    {
        const dt_peer_problem pp = peer_problem(&p.g, &p, 1);
        r->ncands = nkernels + next + add_peers(r, rts, nkernels + next, peers, npeers_all, &pp, o);
    }
    if (o->progress) {
        unsigned want = peaks_wanted(r, o);
        fprintf(stderr, "bench: measuring the peak%s:", (want & (want - 1)) ? "s" : "");
        for (int k = 0; k < DT_PEAK_COUNT; k++)
            if (want & (1u << k))
                fprintf(stderr, " %s", dt_peak_kind_name((dt_peak_kind)k));
        fprintf(stderr, "...\n");
    }
    dt_omp_pin_threads(o->threads); /* kernels and peers alike (omp_pin.h) */
    measure_peak(r, o);
    rc = run_shapes(w, shapes, r, rts, nkernels, nkernels + next, &p, o, e);
    if (!rc)
        peers_note_creation(r, rts, nkernels + next);
out:
    free_run(rts, r->ncands, nkernels, &p);
    if (rc)
        dt_bench_result_free(r);
    return rc;
}
