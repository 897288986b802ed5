/* The child side of the local runner: `dtune __run-trials SO_PATH`.
 *
 * Reads one batch (JSON) from stdin, loads the kernel, and for each trial
 * writes one dt_trial_result JSON line to the protocol stream, flushing after
 * each, so the parent knows which trial was running if this process dies.
 * Protocol (docs/measurement.md):
 *   {"ready": N}           the kernel is loaded; trial clocks start now
 *   {"uid": ..., ...}      one result per trial, in batch order
 * The protocol stream is a private duplicate of the original stdout; fd 1 is
 * pointed at stderr, so a kernel that prints cannot corrupt the protocol. */
#include "measure/runner.h"
#include "common/clock.h"
#include "common/mem.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/target.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "measure/omp_pin.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"

#define MAX_STDIN ((size_t)DT_BATCH_MAX_SOURCE + (64u << 20))
#define FULL_CHECK_LIMIT (1 << 24) /* M·N·K·batch up to this: every output checked */
#define SAMPLE_RANDOM 4096         /* random outputs checked above it */
#define ERROR_MAX 4096

/* ---- inputs, the call, verification ---------------------------------------
 * The trial's op is reached through its GEMM view (ops/op.h): A, B, C
 * of batch matrices, B packed once first when it is constant. */

typedef struct {
    const dt_kernel *k;
    dt_dtype dtype;
    dt_gemm g;                /* with the trial's sizes */
    int threads;
    dt_operands o;            /* A, B, bias (and scales) in the dtype, and their real values */
    void *packed;
    float *C;
    float *bt;                /* the reference's packed B, every matrix (verify) */
} call_ctx;

static void call_once(const call_ctx *c)
{
    dt_gemm_args a = dt_gemm_args_contiguous(&c->g, c->o.A, c->g.b_const ? c->packed : c->o.B,
                                             c->o.bias, c->C, c->threads);
    a.scale_a = c->o.scale_a;
    a.zp_a = c->o.zp_a;
    dt_kernel_run(c->k, &a);
}

/* Checks outputs (b, i, j0..j1) × (rows i0..i1) of matrix b against the
 * reference (microkernel/reference.h), one at a time. */
static int check_block(const call_ctx *c, int64_t b, int64_t i0, int64_t i1, int64_t j0,
                       int64_t j1, double *ref, double *mag, dt_err *e)
{
    const dt_gemm *g = &c->g;
    const int64_t M = g->M, N = g->N, K = g->K, ld = j1 - j0;
    dt_ref_block(g, c->o.Aref, b, c->bt + b * K * dt_ref_ldb(N), c->o.bias, c->o.colscale, i0, i1,
                 j0, j1, ref, mag, ld);
    const double tol_k = dt_ref_tol_k(c->dtype, K);
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
            const double s = ref[(i - i0) * ld + (j - j0)], m = mag[(i - i0) * ld + (j - j0)];
            const float *got = c->C + (b * M + i) * N + j;
            if (dt_check_close_tol(got, 1, &s, &m, 1, 1, tol_k, NULL) == 0)
                continue;
            if (!g->batched)
                return dt_errf(e, DT_EINVAL, "wrong answer at [%lld,%lld]: got %.9g, expected %.9g",
                               (long long)i, (long long)j, (double)*got, s);
            return dt_errf(e, DT_EINVAL,
                           "wrong answer at batch %lld [%lld,%lld]: got %.9g, expected %.9g",
                           (long long)b, (long long)i, (long long)j, (double)*got, s);
        }
    return 0;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Rows of one reference block when every output is checked. */
#define CHECK_ROWS 4

/* Every output for small problems (CHECK_ROWS rows at a time); else the
 * whole last row and last column (of the last batch) plus SAMPLE_RANDOM
 * seeded random outputs.  ref/mag hold max(CHECK_ROWS·N, M) doubles each. */
static int verify(const call_ctx *c, uint64_t seed, int64_t *checked, double *ref, double *mag,
                  dt_err *e)
{
    const int64_t B = c->g.batch, M = c->g.M, N = c->g.N;
    double work = (double)B * (double)M * (double)N * (double)c->g.K;
    int rc = 0;
    *checked = 0;
    for (int64_t b = 0; b < B; b++)
        dt_ref_pack_b(&c->g, c->o.Bref, b, c->bt + b * c->g.K * dt_ref_ldb(N));
    if (work <= FULL_CHECK_LIMIT) {
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < M; i += CHECK_ROWS)
                if ((rc = check_block(c, b, i, i + CHECK_ROWS < M ? i + CHECK_ROWS : M, 0, N,
                                      ref, mag, e)))
                    return rc;
        *checked = B * M * N;
        return 0;
    }
    if ((rc = check_block(c, B - 1, M - 1, M, 0, N, ref, mag, e)) ||
        (rc = check_block(c, B - 1, 0, M, N - 1, N, ref, mag, e)))
        return rc;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x5DEECE66Dull;
    for (int r = 0; r < SAMPLE_RANDOM; r++) {
        int64_t b = (int64_t)(xorshift(&s) % (uint64_t)B);
        int64_t i = (int64_t)(xorshift(&s) % (uint64_t)M);
        int64_t j = (int64_t)(xorshift(&s) % (uint64_t)N);
        if ((rc = check_block(c, b, i, i + 1, j, j + 1, ref, mag, e)))
            return rc;
    }
    *checked = M + N + SAMPLE_RANDOM;
    return 0;
}

/* n floats, 64-byte aligned; NULL when too large or out of memory. */
static float *alloc_floats(int64_t n)
{
    size_t bytes;
    if (n < 1 || __builtin_mul_overflow((size_t)n, sizeof(float), &bytes) ||
        bytes > SIZE_MAX - 64)
        return NULL;
    return dt_alloc64(bytes);
}

/* ---- cache flush ------------------------------------------------------------ */

typedef struct {
    unsigned char *buf;
    size_t size;
} flusher;

/* Twice the last-level cache (8 MiB .. 1 GiB; 64 MiB when unknown). */
static size_t flush_size(void)
{
    dt_target t;
    dt_err e;
    uint64_t llc = 0;
    if (dt_target_detect(&t, &e) == 0)
        llc = t.l3.size ? t.l3.size : t.l2.size;
    size_t sz = llc ? (size_t)(2 * llc) : (64u << 20);
    if (sz < (8u << 20))
        sz = 8u << 20;
    if (sz > (1u << 30))
        sz = 1u << 30;
    return sz;
}

/* Writes then reads every cache line of the buffer. */
static void flush_caches(flusher *f)
{
    unsigned char *p = f->buf;
    unsigned acc = 0;
    for (size_t i = 0; i < f->size; i += 64)
        p[i] = (unsigned char)(i >> 6);
    for (size_t i = 0; i < f->size; i += 64)
        acc += p[i];
    /* keep the reads: an empty asm that claims to use acc (no global sink) */
    __asm__ __volatile__("" : : "r"(acc) : "memory");
}

/* ---- one trial ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void set_error(dt_trial_result *r, dt_trial_status st, const char *msg)
{
    r->status = st;
    free(r->error);
    size_t n = strnlen(msg, ERROR_MAX);
    r->error = strndup(msg, n);
}

static void run_trial(const dt_kernel *k, const dt_kernel_op *kop, const dt_trial *t,
                      const dt_timing *tm, flusher *fl, dt_trial_result *r)
{
    memset(r, 0, sizeof *r);
    memcpy(r->uid, t->uid, sizeof r->uid);
    r->min_ns = r->median_ns = NAN;
    call_ctx c = {.k = k, .dtype = kop->dtype, .threads = t->threads};
    double *times = NULL, *ref = NULL, *mag = NULL;
    dt_err e;
    if (dt_op_gemm(kop->op, kop->attrs, t->dims, &c.g, &e)) { /* the loader checked the op */
        set_error(r, DT_TRIAL_RUN_CRASH, e.msg);
        return;
    }
    const dt_gemm *g = &c.g;
    /* element counts fit in int64: the workload's op check passed */
    int64_t na = g->batch * g->M * g->K, nb = g->batch * g->N * g->K, nc = g->batch * g->M * g->N;
    int64_t longest = g->M > CHECK_ROWS * g->N ? g->M : CHECK_ROWS * g->N;
    int made = dt_operands_make(&c.o, kop->dtype, g, g->K, tm->seed, &e) == 0;
    c.C = alloc_floats(nc);
    c.bt = alloc_floats(g->batch * g->K * dt_ref_ldb(g->N));
    ref = malloc((size_t)longest * sizeof *ref);
    mag = malloc((size_t)longest * sizeof *mag);
    if (g->b_const && made) {
        size_t psz = dt_kernel_packed_size(k, g);
        c.packed = psz ? dt_alloc64(psz) : NULL;
    }
    times = malloc((size_t)tm->max_repeats * sizeof *times);
    if (!made || !c.C || !c.bt || !ref || !mag || (g->b_const && !c.packed) || !times) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "out of memory allocating the inputs and outputs (%lld + %lld + %lld elements)",
                 (long long)na, (long long)nb, (long long)nc);
        set_error(r, DT_TRIAL_RUN_CRASH, msg);
        goto out;
    }
    for (int64_t i = 0; i < nc; i++)
        c.C[i] = NAN; /* an output the kernel does not write is a wrong answer */
    if (g->b_const)
        dt_kernel_pack(k, g, c.o.B, c.o.scale_b, c.packed);

    /* first call: checked */
    call_once(&c);
    int64_t checked;
    if (verify(&c, tm->seed + 3, &checked, ref, mag, &e)) {
        char msg[DT_ERR_MSG_MAX + 256];
        snprintf(msg, sizeof msg, "%s (shape %s, threads %d)", e.msg, t->shape, t->threads);
        set_error(r, DT_TRIAL_WRONG_ANSWER, msg);
        goto out;
    }
    for (int w = 0; w < tm->warmup; w++)
        call_once(&c);
    int n = 0;
    double total = 0;
    while (n < tm->max_repeats && (n < tm->min_repeats || total < tm->min_time_s)) {
        if (fl->buf)
            flush_caches(fl);
        double t0 = dt_now_s();
        call_once(&c);
        double dt = dt_now_s() - t0;
        times[n++] = dt * 1e9;
        total += dt;
    }
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    r->status = DT_TRIAL_OK;
    r->repeats = n;
    r->min_ns = times[0];
    r->median_ns = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
out:
    free(times);
    free(ref);
    free(mag);
    dt_operands_free(&c.o);
    free(c.C);
    free(c.bt);
    free(c.packed);
}

/* ---- the protocol ----------------------------------------------------------- */

static void emit(FILE *out, json_t *j)
{
    if (j) {
        json_dumpf(j, out, JSON_COMPACT);
        json_decref(j);
    }
    fputc('\n', out);
    fflush(out);
}

static void emit_result(FILE *out, const dt_trial_result *r)
{
    emit(out, dt_trial_result_to_json(r));
}

/* Reads all of stdin (at most MAX_STDIN bytes). */
static char *read_stdin(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= MAX_STDIN) {
                free(buf);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(0, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(buf);
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *len = n;
    return buf;
}

int dt_runner_child_main(int argc, char **argv)
{
    /* no core files from crashing kernels (core_pattern may write into the
     * working directory), and no orphan if the runner dies */
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc != 2) {
        fprintf(stderr, "usage: dtune __run-trials SO_PATH < batch.json (internal)\n");
        return 1;
    }
    /* the protocol goes to a private copy of stdout; fd 1 joins stderr */
    int pfd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    FILE *out = pfd >= 0 ? fdopen(pfd, "w") : NULL;
    if (!out || dup2(2, 1) < 0) {
        fprintf(stderr, "__run-trials: cannot set up the protocol stream\n");
        return 3;
    }
    size_t len = 0;
    char *text = read_stdin(&len);
    if (!text) {
        fprintf(stderr, "__run-trials: cannot read the batch from stdin\n");
        fclose(out);
        return 3;
    }
    json_error_t jerr;
    json_t *j = json_loadb(text, len, 0, &jerr);
    free(text);
    dt_batch batch;
    dt_err e;
    if (!j) {
        fprintf(stderr, "__run-trials: batch is not JSON: %s\n", jerr.text);
        fclose(out);
        return 2;
    }
    int rc = dt_batch_from_json(j, &batch, &e);
    json_decref(j);
    if (rc) {
        fprintf(stderr, "__run-trials: %s\n", e.msg);
        fclose(out);
        return 2;
    }
    dt_workload *w = NULL;
    if (dt_workload_parse_key(batch.workload, &w, &e)) { /* cannot fail: from_json parsed it */
        fprintf(stderr, "__run-trials: %s\n", e.msg);
        dt_batch_free(&batch);
        fclose(out);
        return 2;
    }
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    dt_workload_free(w);

    dt_kernel k;
    int load_rc = dt_kernel_load(argv[1], &k, &e);
    if (!load_rc) {
        if (!dt_kernel_computes(&k, &kop)) {
            load_rc = dt_errf(&e, DT_EINVAL, "the kernel does not export the %s entry points",
                              kop.op->name);
            dt_kernel_unload(&k);
        }
    }
    if (load_rc) {
        /* the build produced something that is not a usable kernel */
        for (int i = 0; i < batch.ntrials; i++) {
            dt_trial_result r = {.status = DT_TRIAL_COMPILE_ERROR, .min_ns = NAN,
                                 .median_ns = NAN, .error = e.msg};
            memcpy(r.uid, batch.trials[i].uid, sizeof r.uid);
            emit_result(out, &r);
        }
        dt_batch_free(&batch);
        fclose(out);
        return 0;
    }
    flusher fl = {0};
    if (batch.timing.flush_cache) {
        fl.size = flush_size();
        fl.buf = malloc(fl.size);
        if (fl.buf)
            memset(fl.buf, 1, fl.size);
        else
            fprintf(stderr, "__run-trials: no memory for the cache flush buffer\n");
    }
    int most = 0;
    for (int i = 0; i < batch.ntrials; i++)
        most = batch.trials[i].threads > most ? batch.trials[i].threads : most;
    dt_omp_pin_threads(most); /* 2-thread trials: no 8-ms stalls (omp_pin.h) */
    emit(out, json_pack("{s:i}", "ready", batch.ntrials));
    for (int i = 0; i < batch.ntrials; i++) {
        dt_trial_result r;
        run_trial(&k, &kop, &batch.trials[i], &batch.timing, &fl, &r);
        emit_result(out, &r);
        dt_trial_result_free(&r);
    }
    free(fl.buf);
    dt_kernel_unload(&k);
    dt_batch_free(&batch);
    fclose(out);
    return 0;
}
