/* `dtune export` (export/): databases built here with the db/ API hold, for
 * each BERT-base workload kind, a schedule of four ranges with a gap over
 * three distinct kernels (stream and blocked sketches, different MR, NR, KC,
 * stores, loop orders and parallel axes).  Each is exported, compiled with
 * plain `cc -O3 -march=native -fopenmp` (plus -Wall -Wextra -Werror) into a
 * shared object together with its header, and checked:
 *   - NAME_select picks, for every M (seq) in 1..600, the kernel
 *     dt_dispatch_find picks (in the gap and beyond the tuned range too);
 *   - NAME matches the double-accumulation reference for every M in 1..512
 *     (dense: the first M rows of one 512-row reference; batch_matmul NT: the
 *     top-left block of one 512-size reference; NN: A lower-triangular so
 *     that the first seq rows of the 512-size product are the seq-size one),
 *     with nothing written past the output.
 * The same for the other dtypes at small N and K (dense bf16 bias+gelu,
 * int8 bias with a non-zero zero point and varied scales, w8a32; batch_matmul
 * bf16 NT and NN), with kernels of two packed layouts of one NR (the native
 * K group and the portable one) so that NAME_pack fills several regions:
 * every M (seq) in 1..200 and 512 against the double reference of their
 * operands (microkernel/operands.h), `dtune bench --export` on two of them,
 * and dt_kernel_pack_checked refusing bad weight scales.
 * Schedules of boxes: NAME_select of one variable is the text it was before
 * boxes; of two and three variables (hand-made and random tables, covering
 * the set or with gaps), compiled, it picks dt_dispatch_find's kernel on every
 * shape of the set and on shapes between and beyond the domains; and a
 * two-variable schedule stored as boxes is exported, compiled and run.
 * Then the errors (bad NAME, missing schedule / workload / database, an
 * unwritable output: no file left behind) and one end-to-end run through the
 * real binary: a tiny `dtune tune`, `dtune export --json`, compile, run, and
 * `dtune bench --export` on it. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "common/file.h"
#include "common/mem.h"
#include "common/target.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "export/export.h"
#include "export/export_internal.h"
#include "microkernel/codegen.h"
#include "microkernel/build.h"
#include "microkernel/loader.h"
#include "microkernel/mk_op.h"
#include "microkernel/operands.h"
#include "microkernel/reference.h"
#include "space/annotation.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir, *g_db;
static dt_target g_t;
static char g_tkey[DT_TARGET_KEY_MAX];
static int g_threads;

#define MAX_M 512

static const char *const g_keys[] = {
    "dense(M=1..128,N=2304,K=768,epilogue=bias)",
    "dense(M=1..128,N=768,K=768,epilogue=bias)",
    "dense(M=1..128,N=3072,K=768,epilogue=bias+gelu)",
    "dense(M=1..128,N=768,K=3072,epilogue=bias)",
    "batch_matmul(B=12,M=seq,N=seq,K=64,layout=NT;seq=1..128)",
    "batch_matmul(B=12,M=seq,N=64,K=seq,layout=NN;seq=1..128)",
};
#define NKEYS 6

/* Three kernels of this machine's ISA: a stream one and two blocked ones
 * with different MR, NR, KC, stores, orders and parallel axes. */
static void annotation(int i, char *buf, size_t n)
{
    int vl = dt_isa_vec_floats(g_t.isa);
    const char *isa = dt_isa_name(g_t.isa);
    if (i == 0)
        snprintf(buf, n, "{\"sketch\":\"stream\",\"isa\":\"%s\",\"mr\":4,\"nr\":%d,\"kc\":0,"
                 "\"mc\":0,\"nc\":%d,\"unroll\":4,\"prefetch\":4,\"store\":\"mask\","
                 "\"order\":\"m_inner\",\"par\":\"n\",\"threads\":1}", isa, 2 * vl, 8 * vl);
    else if (i == 1)
        snprintf(buf, n, "{\"sketch\":\"blocked\",\"isa\":\"%s\",\"mr\":6,\"nr\":%d,\"kc\":128,"
                 "\"mc\":48,\"nc\":%d,\"unroll\":2,\"prefetch\":0,\"store\":\"scratch\","
                 "\"order\":\"n_inner\",\"par\":\"m\",\"threads\":1}", isa, vl, 8 * vl);
    else
        snprintf(buf, n, "{\"sketch\":\"blocked\",\"isa\":\"%s\",\"mr\":4,\"nr\":%d,\"kc\":96,"
                 "\"mc\":32,\"nc\":%d,\"unroll\":4,\"prefetch\":2,\"store\":\"mask\","
                 "\"order\":\"m_inner\",\"par\":\"mn\",\"threads\":1}", isa, 3 * vl, 6 * vl);
}

/* The ranges of every schedule: a gap 41..59 and kernel 0 twice. */
static const struct {
    int lo, hi, kernel;
} g_ranges[] = {{1, 3, 0}, {4, 40, 1}, {60, 100, 2}, {101, 128, 0}};
#define NRANGES 4

static void make_db(const char *path)
{
    dt_db *db = NULL;
    dt_err e;
    remove(path);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t tid;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, g_tkey, dt_isa_name(g_t.isa), NULL, &tid, &e), 0);
    for (int i = 0; i < NKEYS; i++) {
        dt_workload *w = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(g_keys[i], &w, &e), 0);
        char key[DT_KEY_MAX];
        dt_workload_key(w, key, sizeof key);
        int64_t wid, kid[3];
        CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, key, w->op->name, "{}", &wid, &e), 0);
        for (int k = 0; k < 3; k++) {
            char json[512];
            annotation(k, json, sizeof json);
            dt_annotation a;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_from_text(json, &a, &e), 0);
            int rc = dt_annotation_validate(&a, &g_t, &e);
            if (rc)
                fprintf(stderr, "\n  annotation %d: %s\n", k, e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, w->op->name, dt_sketch_name(a.sketch),
                                                      json, NULL, &kid[k], &e), 0);
        }
        dt_db_schedule rows[NRANGES];
        char lo[NRANGES][64], hi[NRANGES][64];
        memset(rows, 0, sizeof rows);
        for (int r = 0; r < NRANGES; r++) {
            snprintf(lo[r], sizeof lo[r], "%s=%d", w->vars[0].name, g_ranges[r].lo);
            snprintf(hi[r], sizeof hi[r], "%s=%d", w->vars[0].name, g_ranges[r].hi);
            rows[r] = (dt_db_schedule){.shape_lo = lo[r], .shape_hi = hi[r],
                                       .kernel_id = kid[g_ranges[r].kernel],
                                       .predicted_ns = NAN, .measured_ns = 1000.0 * (r + 1)};
        }
        int rc = dt_db_schedule_replace(db, wid, tid, g_threads, rows, NRANGES, &e);
        if (rc)
            fprintf(stderr, "\n  schedule_replace: %s\n", e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        dt_workload_free(w);
    }
    dt_db_close(db);
}

static int setup(void)
{
    dt_err e;
    g_dir = dt_test_tmpdir();
    if (!g_dir || dt_target_detect(&g_t, &e) || dt_target_key(&g_t, g_tkey, sizeof g_tkey))
        return 1;
    g_threads = g_t.logical_cpus >= 2 ? 2 : 1;
    size_t n = strlen(g_dir) + 16;
    g_db = malloc(n);
    snprintf(g_db, n, "%s/x.db", g_dir);
    return 0;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    free(g_db);
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Compiles dir/NAME_wrap.c, the text src, into dir/NAME.so with plain cc
 * (-Wall -Wextra -Werror); returns the dlopen handle or NULL. */
static void *compile_wrapped(const char *dir, const char *name, const char *src)
{
    char cmd[10000], so[4096];
    char fname[128];
    snprintf(fname, sizeof fname, "%s_wrap.c", name);
    free(dt_test_write_file(dir, fname, src));
    snprintf(so, sizeof so, "%s/%s.so", dir, name);
    const char *cc = getenv("CC") ? getenv("CC") : "cc";
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s -O3 -march=native -fopenmp -Wall -Wextra -Werror -fPIC -shared "
             "-o '%s' '%s' 2>'%s.log'",
             dir, cc, so, fname, name);
    int rc = system(cmd);
    if (rc != 0) {
        char log[4400];
        snprintf(log, sizeof log, "%s/%s.log", dir, name);
        char *text = dt_test_slurp(log);
        fprintf(stderr, "\n  compile of %s failed:\n%.3000s\n", name, text);
        free(text);
        return NULL;
    }
    /* never unloaded: libgomp's idle threads must outlive nothing */
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h)
        fprintf(stderr, "\n  dlopen %s: %s\n", so, dlerror());
    return h;
}

/* Compiles dir/NAME.c with its header (and a hook exposing NAME_select)
 * into dir/NAME.so; returns the dlopen handle or NULL. */
static void *compile_export(const char *dir, const char *name)
{
    char src[512];
    snprintf(src, sizeof src,
             "#include \"%s.h\"\n#include \"%s.c\"\n"
             "int %s_test_select(int64_t v);\n"
             "int %s_test_select(int64_t v) { return %s_select(v); }\n",
             name, name, name, name, name);
    return compile_wrapped(dir, name, src);
}

static void *sym(void *h, const char *name, const char *suffix)
{
    char s[256];
    snprintf(s, sizeof s, "%s%s", name, suffix);
    void *p = dlsym(h, s);
    if (!p)
        fprintf(stderr, "\n  no symbol %s\n", s);
    return p;
}

typedef size_t (*packed_size_fn)(void);
typedef void (*pack_fn)(const float *W, float *packed);
typedef void (*dense_bias_fn)(int64_t M, const float *X, const float *packed, float *Y,
                              const float *bias);
typedef void (*dense_fn)(int64_t M, const float *X, const float *packed, float *Y);
typedef void (*bmm_fn)(int64_t seq, const float *A, const float *B, float *C);
typedef int (*select_fn)(int64_t v);

#define GUARD_N 64
#define GUARD_V 4321.0f

static void poison(float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = NAN;
    for (int64_t i = n; i < n + GUARD_N; i++)
        y[i] = GUARD_V;
}

static int guard_ok(const float *y, int64_t n)
{
    for (int64_t i = n; i < n + GUARD_N; i++)
        if (y[i] != GUARD_V)
            return 0;
    return 1;
}

/* 1 (and why on stderr) when the M×N output Y wrote past its end or is not
 * the reference's; what names the call in the message. */
static int dense_out_bad(const char *what, const float *Y, const double *ref, const double *mag,
                         int64_t M, int64_t N, int64_t K)
{
    dt_err e;
    if (!guard_ok(Y, M * N)) {
        fprintf(stderr, "\n  %s wrote past the output\n", what);
        return 1;
    }
    if (dt_check_close(Y, N, ref, mag, M, N, K, &e) != 0) {
        fprintf(stderr, "\n  %s: %s\n", what, e.msg);
        return 1;
    }
    return 0;
}

/* Every M in 1..MAX_M of an exported dense workload against the reference. */
static void check_dense(void *h, const char *name, const dt_workload *w)
{
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    int bias_on, act;
    dt_kernel_op_epilogue(&kop, &bias_on, &act);
    int64_t N = w->dims[1]->value, K = w->dims[2]->value;
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(w->op, w->attrs, NULL, &g, NULL), 0);
    g.batch = 1, g.M = MAX_M, g.N = N, g.K = K;
    packed_size_fn psize = (packed_size_fn)sym(h, name, "_packed_size");
    pack_fn pack = (pack_fn)sym(h, name, "_pack");
    void *entry = sym(h, name, "");
    CU_ASSERT_FATAL(psize && pack && entry);
    float *X = dt_alloc64((size_t)(MAX_M * K) * sizeof(float));
    float *W = dt_alloc64((size_t)(N * K) * sizeof(float));
    float *bias = dt_alloc64((size_t)N * sizeof(float));
    float *Y = dt_alloc64((size_t)(MAX_M * N + GUARD_N) * sizeof(float));
    double *ref = dt_alloc64((size_t)(MAX_M * N) * sizeof(double));
    double *mag = dt_alloc64((size_t)(MAX_M * N) * sizeof(double));
    float *packed = dt_alloc64(psize());
    CU_ASSERT_FATAL(X && W && bias && Y && ref && mag && packed);
    CU_ASSERT(g.bias == bias_on && g.act == act);
    dt_fill_random(X, MAX_M * K, 11);
    dt_fill_random(W, N * K, 12);
    dt_fill_random(bias, N, 13);
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, X, W, bias, NULL, ref, mag, NULL), 0);
    pack(W, packed);
    int failures = 0;
    for (int64_t M = 1; M <= MAX_M && failures < 3; M++) {
        poison(Y, M * N);
        if (bias_on)
            ((dense_bias_fn)entry)(M, X, packed, Y, bias);
        else
            ((dense_fn)entry)(M, X, packed, Y);
        char what[96];
        snprintf(what, sizeof what, "%s: M=%lld", name, (long long)M);
        failures += dense_out_bad(what, Y, ref, mag, M, N, K);
    }
    CU_ASSERT_EQUAL(failures, 0);
    free(X);
    free(W);
    free(bias);
    free(Y);
    free(ref);
    free(mag);
    free(packed);
}

/* Every seq in 1..MAX_M of an exported batch_matmul (B=12, K=64 NT or
 * N=64 NN) against one reference at seq = MAX_M. */
static void check_bmm(void *h, const char *name, int nt)
{
    bmm_fn f = (bmm_fn)sym(h, name, "");
    CU_ASSERT_FATAL(f != NULL);
    const int64_t batch = 12, S = MAX_M, D = 64;
    /* full operands: NT A[b] S×D, B[b] S×D; NN A[b] S×S lower-triangular, B[b] S×D */
    int64_t a_cols = nt ? D : S, c_cols = nt ? S : D;
    float *Af = dt_alloc64((size_t)(batch * S * a_cols) * sizeof(float));
    float *Bf = dt_alloc64((size_t)(batch * S * D) * sizeof(float));
    float *A = dt_alloc64((size_t)(batch * S * a_cols) * sizeof(float));
    float *B = dt_alloc64((size_t)(batch * S * D) * sizeof(float));
    float *C = dt_alloc64((size_t)(batch * S * c_cols + GUARD_N) * sizeof(float));
    double *ref = dt_alloc64((size_t)(batch * S * c_cols) * sizeof(double));
    double *mag = dt_alloc64((size_t)(batch * S * c_cols) * sizeof(double));
    CU_ASSERT_FATAL(Af && Bf && A && B && C && ref && mag);
    dt_fill_random(Af, batch * S * a_cols, 21);
    dt_fill_random(Bf, batch * S * D, 22);
    if (!nt)
        for (int64_t b = 0; b < batch; b++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t k = i + 1; k < S; k++)
                    Af[(b * S + i) * S + k] = 0.0f;
    /* NT: C = A·Bᵀ, N = S, K = D; NN: C = A·B, N = D, K = S */
    dt_gemm g = {.dim = {0, 1, 2, 3}, .batched = 1, .batch = batch, .M = S, .N = nt ? S : D,
                 .K = nt ? D : S, .b_trans = nt};
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, Af, Bf, NULL, NULL, ref, mag, NULL), 0);
    int failures = 0;
    for (int64_t s = 1; s <= S && failures < 3; s++) {
        int64_t ac = nt ? D : s, cc = nt ? s : D; /* columns of A and C at this seq */
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t i = 0; i < s; i++)
                memcpy(A + (b * s + i) * ac, Af + (b * S + i) * a_cols,
                       (size_t)ac * sizeof(float));
            memcpy(B + b * s * D, Bf + b * S * D, (size_t)(s * D) * sizeof(float));
        }
        poison(C, batch * s * cc);
        f(s, A, B, C);
        int bad = !guard_ok(C, batch * s * cc);
        if (bad)
            fprintf(stderr, "\n  %s: seq=%lld wrote past the output\n", name, (long long)s);
        for (int64_t b = 0; b < batch && !bad; b++)
            for (int64_t i = 0; i < s && !bad; i++) {
                dt_err e;
                /* row i of the seq-size product is the start of row i of the full one */
                if (dt_check_close(C + (b * s + i) * cc, cc, ref + (b * S + i) * c_cols,
                                   mag + (b * S + i) * c_cols, 1, cc, nt ? D : s, &e)) {
                    fprintf(stderr, "\n  %s: seq=%lld batch %lld row %lld: %s\n", name,
                            (long long)s, (long long)b, (long long)i, e.msg);
                    bad = 1;
                }
            }
        failures += bad;
    }
    CU_ASSERT_EQUAL(failures, 0);
    free(Af);
    free(Bf);
    free(A);
    free(B);
    free(C);
    free(ref);
    free(mag);
}

/* NAME_select agrees with dt_dispatch_find on 1..600 and far beyond. */
static void check_select(void *h, const char *name, dt_db *db, const char *key, json_t *info)
{
    select_fn sel = (select_fn)sym(h, name, "_test_select");
    CU_ASSERT_FATAL(sel != NULL);
    dt_dispatch *d = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, key, g_tkey, 0, &d, &e), 0);
    json_t *ranges = json_object_get(info, "ranges");
    CU_ASSERT_EQUAL_FATAL((int)json_array_size(ranges), d->n);
    int64_t vals[] = {1000, 4096, 1 << 20};
    int wrong = 0, kernels_seen = 0;
    for (int64_t v = 1; v <= 603; v++) {
        int64_t x = v <= 600 ? v : vals[v - 601];
        dt_dispatch_hit hit;
        CU_ASSERT_EQUAL_FATAL(dt_dispatch_find(d, &x, &hit), 0);
        int want = (int)json_integer_value(
            json_object_get(json_array_get(ranges, (size_t)(hit.range - d->r)), "kernel"));
        int got = sel(x);
        kernels_seen |= 1 << got;
        if (got != want && wrong++ < 3)
            fprintf(stderr, "\n  %s: value %lld: select %d, dispatch %d\n", name, (long long)x,
                    got, want);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(kernels_seen, 7); /* all three kernels serve some value */
    dt_dispatch_free(d);
}

/* ---- the other dtypes ------------------------------------------------------ */

#define DT_MAX_M 200 /* every M (seq) up to here, then DT_BIG_M */
#define DT_BIG_M 512

static const struct {
    const char *key, *name;
} g_dt[] = {
    {"dense(M=1..128,N=72,K=53,epilogue=bias+gelu,dtype=bf16)", "d_bf16"},
    {"dense(M=1..128,N=80,K=67,epilogue=bias,dtype=int8)", "d_int8"},
    {"dense(M=1..128,N=48,K=45,dtype=w8a32)", "d_w8a32"},
    {"dense(M=1..128,N=40,K=45,dtype=w8a32,math=bf16)", "d_w8bf16"},
    {"batch_matmul(B=3,M=seq,N=seq,K=37,layout=NT,dtype=bf16;seq=1..128)", "bmm_nt_bf16"},
    {"batch_matmul(B=3,M=seq,N=48,K=seq,layout=NN,dtype=bf16;seq=1..128)", "bmm_nn_bf16"},
};
#define NDT ((int)(sizeof g_dt / sizeof g_dt[0]))

/* Three kernels for dtype d on this machine (the ISA d's kernels use here,
 * dt_dtype_target): a stream one, a blocked one with NR = one vector and
 * KC 32, and a blocked one of the ISA below it (AVX2 under AVX-512) with the
 * same NR — another K group for bf16 and int8 (2, 4 natively; 1 portable):
 * two packed layouts of one NR. */
static void annotation_dt(dt_dtype d, int i, char *buf, size_t n)
{
    dt_target t = dt_dtype_target(d, &g_t);
    int vl = dt_isa_vec_floats(t.isa);
    const char *isa = dt_isa_name(t.isa);
    if (i == 0) {
        snprintf(buf, n, "{\"sketch\":\"stream\",\"isa\":\"%s\",\"mr\":4,\"nr\":%d,\"kc\":0,"
                 "\"mc\":0,\"nc\":%d,\"unroll\":4,\"prefetch\":4,\"store\":\"mask\","
                 "\"order\":\"m_inner\",\"par\":\"n\",\"threads\":1}", isa, 2 * vl, 8 * vl);
    } else if (i == 1) {
        snprintf(buf, n, "{\"sketch\":\"blocked\",\"isa\":\"%s\",\"mr\":6,\"nr\":%d,\"kc\":32,"
                 "\"mc\":48,\"nc\":%d,\"unroll\":2,\"prefetch\":0,\"store\":\"scratch\","
                 "\"order\":\"n_inner\",\"par\":\"m\",\"threads\":1}", isa, vl, 8 * vl);
    } else {
        dt_isa low = t.isa == DT_ISA_AVX512 ? DT_ISA_AVX2 : t.isa;
        snprintf(buf, n, "{\"sketch\":\"blocked\",\"isa\":\"%s\",\"mr\":4,\"nr\":%d,\"kc\":24,"
                 "\"mc\":32,\"nc\":%d,\"unroll\":4,\"prefetch\":2,\"store\":\"mask\","
                 "\"order\":\"m_inner\",\"par\":\"mn\",\"threads\":1}", dt_isa_name(low), vl,
                 4 * vl);
    }
}

/* The database of the g_dt workloads: kernels stored with their dtype and
 * attributes, the schedule of g_ranges. */
static void make_db_dt(const char *path)
{
    dt_db *db = NULL;
    dt_err e;
    remove(path);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t tid;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, g_tkey, dt_isa_name(g_t.isa), NULL, &tid, &e), 0);
    for (int i = 0; i < NDT; i++) {
        dt_workload *w = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(g_dt[i].key, &w, &e), 0);
        char key[DT_KEY_MAX];
        dt_workload_key(w, key, sizeof key);
        CU_ASSERT_STRING_EQUAL(key, g_dt[i].key); /* the keys above are canonical */
        dt_kernel_op kop = dt_kernel_op_of_workload(w);
        char *attrs = dt_kernel_op_attrs_json(&kop);
        CU_ASSERT_PTR_NOT_NULL_FATAL(attrs);
        int64_t wid, kid[3];
        CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, key, w->op->name, "{}", &wid, &e), 0);
        dt_target t = dt_dtype_target(w->dtype, &g_t);
        for (int k = 0; k < 3; k++) {
            char json[512];
            annotation_dt(w->dtype, k, json, sizeof json);
            dt_annotation a;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_from_text(json, &a, &e), 0);
            int rc = dt_annotation_validate(&a, &t, &e);
            if (rc)
                fprintf(stderr, "\n  %s annotation %d: %s\n", key, k, e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern_attrs(db, w->op->name,
                                                            dt_dtype_name(w->dtype), attrs,
                                                            dt_sketch_name(a.sketch), json, NULL,
                                                            &kid[k], &e), 0);
        }
        free(attrs);
        dt_db_schedule rows[NRANGES];
        char lo[NRANGES][64], hi[NRANGES][64];
        memset(rows, 0, sizeof rows);
        for (int r = 0; r < NRANGES; r++) {
            snprintf(lo[r], sizeof lo[r], "%s=%d", w->vars[0].name, g_ranges[r].lo);
            snprintf(hi[r], sizeof hi[r], "%s=%d", w->vars[0].name, g_ranges[r].hi);
            rows[r] = (dt_db_schedule){.shape_lo = lo[r], .shape_hi = hi[r],
                                       .kernel_id = kid[g_ranges[r].kernel],
                                       .predicted_ns = NAN, .measured_ns = 1000.0 * (r + 1)};
        }
        CU_ASSERT_EQUAL_FATAL(dt_db_schedule_replace(db, wid, tid, g_threads, rows, NRANGES, &e),
                              0);
        dt_workload_free(w);
    }
    dt_db_close(db);
}

/* The exported ABI of each dtype (docs/export.md, "ABI"). */
typedef void (*pack_bf16_fn)(const uint16_t *W, void *packed);
typedef int64_t (*pack_q_fn)(const int8_t *W, const float *scale_b, void *packed);
typedef void (*dense_bf16_bias_fn)(int64_t M, const uint16_t *X, const void *packed, float *Y,
                                   const float *bias);
typedef void (*dense_int8_bias_fn)(int64_t M, const uint8_t *X, float scale_a, int32_t zp_a,
                                   const void *packed, float *Y, const float *bias);
typedef void (*dense_w8a32_fn)(int64_t M, const float *X, const void *packed, float *Y);
typedef void (*bmm_bf16_fn)(int64_t seq, const uint16_t *A, const uint16_t *B, float *C);

/* The M values checked: 1..DT_MAX_M, then DT_BIG_M. */
static int64_t dt_m(int i) { return i < DT_MAX_M ? i + 1 : DT_BIG_M; }
#define DT_NM (DT_MAX_M + 1)

/* Every M of an exported dense workload of a dtype against the reference
 * of its operands (the first M rows of a DT_BIG_M-row problem). */
static void check_dense_dt(void *h, const char *name, const dt_workload *w, json_t *info)
{
    const dt_dtype d = w->dtype;
    int64_t N = w->dims[1]->value, K = w->dims[2]->value;
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(w->op, w->attrs, NULL, &g, NULL), 0);
    g.batch = 1, g.M = DT_BIG_M, g.N = N, g.K = K;
    packed_size_fn psize = (packed_size_fn)sym(h, name, "_packed_size");
    void *pack = sym(h, name, "_pack"), *entry = sym(h, name, "");
    CU_ASSERT_FATAL(psize && pack && entry);
    /* the packed size: a multiple of 64, what the JSON says, one region per
     * layout (NR, K group) at its offset */
    size_t bytes = psize();
    CU_ASSERT_EQUAL(bytes % 64, 0);
    CU_ASSERT_EQUAL((json_int_t)bytes, json_integer_value(json_object_get(info, "packed_bytes")));
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(info, "dtype")), dt_dtype_name(d));
    json_t *ks = json_object_get(info, "kernels");
    const dt_mk_op *m = dt_mk_op_find(w->op, d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    int64_t want = 0, offs[3];
    int regions = 0;
    for (size_t k = 0; k < json_array_size(ks); k++) {
        json_t *jk = json_array_get(ks, k);
        CU_ASSERT_PTR_NULL(json_object_get(jk, "pack_offset_floats")); /* f32 only */
        offs[k] = json_integer_value(json_object_get(jk, "pack_offset_bytes"));
        CU_ASSERT_EQUAL(offs[k] % 64, 0);
        int seen = 0;
        for (size_t j = 0; j < k; j++)
            seen |= offs[j] == offs[k];
        if (seen)
            continue;
        dt_annotation a;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_from_json(json_object_get(jk, "annotation"), &a, &e),
                              0);
        want += ((int64_t)dt_mk_packed_bytes(m, &a, N, K) + 63) / 64 * 64;
        regions++;
    }
    CU_ASSERT_EQUAL((int64_t)bytes, want);
    /* kernels 1 and 2 have one NR: one region unless their K groups differ
     * (bf16, int8 natively on AVX-512) */
    int two_kg = dt_backend_of(d, dt_dtype_target(d, &g_t).isa)->kg > 1;
    CU_ASSERT_EQUAL(regions, two_kg ? 3 : 2);

    dt_operands o;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_operands_make(&o, d, &g, K, 41, &e), 0);
    if (d == DT_DTYPE_INT8) { /* another scale_a than the default, with zp_a != 0 */
        CU_ASSERT(o.zp_a != 0);
        o.scale_a = 0.037f;
        for (int64_t n = 0; n < N; n++)
            o.colscale[n] = (double)o.scale_a * (double)o.scale_b[n];
    }
    float *Y = dt_alloc64((size_t)(DT_BIG_M * N + GUARD_N) * sizeof(float));
    double *ref = dt_alloc64((size_t)(DT_BIG_M * N) * sizeof(double));
    double *mag = dt_alloc64((size_t)(DT_BIG_M * N) * sizeof(double));
    unsigned char *packed = dt_alloc64(bytes);
    CU_ASSERT_FATAL(Y && ref && mag && packed);
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, o.Aref, o.Bref, o.bias, o.colscale, ref, mag, &e), 0);
    if (dt_dtype_quantized(d)) {
        /* a scale that is zero, NaN or infinite, or none, is refused: the
         * return names it and nothing is written */
        float *bad = malloc((size_t)N * sizeof *bad);
        CU_ASSERT_FATAL(bad != NULL);
        memset(packed, 0x5A, bytes);
        const float wrong[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY};
        for (int v = 0; v < 5; v++) {
            memcpy(bad, o.scale_b, (size_t)N * sizeof *bad);
            bad[(v * 7) % N] = wrong[v];
            CU_ASSERT_EQUAL(((pack_q_fn)pack)(o.B, bad, packed), (v * 7) % N + 1);
        }
        CU_ASSERT_EQUAL(((pack_q_fn)pack)(o.B, NULL, packed), -1);
        int untouched = 1;
        for (size_t i = 0; i < bytes; i++)
            untouched &= packed[i] == 0x5A;
        CU_ASSERT_TRUE(untouched);
        free(bad);
        CU_ASSERT_EQUAL(((pack_q_fn)pack)(o.B, o.scale_b, packed), 0);
    } else {
        ((pack_bf16_fn)pack)(o.B, packed);
    }
    int failures = 0;
    for (int i = 0; i < DT_NM && failures < 3; i++) {
        int64_t M = dt_m(i);
        poison(Y, M * N);
        if (d == DT_DTYPE_BF16)
            ((dense_bf16_bias_fn)entry)(M, o.A, packed, Y, o.bias);
        else if (d == DT_DTYPE_INT8)
            ((dense_int8_bias_fn)entry)(M, o.A, o.scale_a, o.zp_a, packed, Y, o.bias);
        else
            ((dense_w8a32_fn)entry)(M, o.A, packed, Y);
        int bad = !guard_ok(Y, M * N);
        if (bad)
            fprintf(stderr, "\n  %s: M=%lld wrote past the output\n", name, (long long)M);
        else if ((bad = dt_check_close_tol(Y, N, ref, mag, M, N, dt_ref_tol_k(d, K), &e) != 0))
            fprintf(stderr, "\n  %s: M=%lld: %s\n", name, (long long)M, e.msg);
        failures += bad;
    }
    CU_ASSERT_EQUAL(failures, 0);
    dt_operands_free(&o);
    free(Y);
    free(ref);
    free(mag);
    free(packed);
}

/* Every seq of an exported bf16 batch_matmul (B=3; NT: K=37, NN: N=48)
 * against one reference at seq = DT_BIG_M, as check_bmm does for f32. */
static void check_bmm_dt(void *h, const char *name, const dt_workload *w)
{
    bmm_bf16_fn f = (bmm_bf16_fn)sym(h, name, "");
    CU_ASSERT_FATAL(f != NULL);
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(w->op, w->attrs, NULL, &g, NULL), 0);
    const int nt = g.b_trans;
    const int64_t batch = w->dims[0]->value, S = DT_BIG_M, D = nt ? w->dims[3]->value
                                                                   : w->dims[2]->value;
    /* NT: C = A·Bᵀ, N = S, K = D; NN: C = A·B, N = D, K = S (A lower-triangular) */
    g.batch = batch, g.M = S, g.N = nt ? S : D, g.K = nt ? D : S;
    int64_t a_cols = g.K, c_cols = g.N;
    dt_operands o;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_operands_make(&o, w->dtype, &g, a_cols, 51, &e), 0);
    uint16_t *Af = o.A, *Bf = o.B; /* B: S×D either way (NT: N×K, NN: K×N) */
    if (!nt)
        for (int64_t b = 0; b < batch; b++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t k = i + 1; k < S; k++) {
                    Af[(b * S + i) * S + k] = 0;
                    o.Aref[(b * S + i) * S + k] = 0.0f;
                }
    uint16_t *A = dt_alloc64((size_t)(batch * S * a_cols) * sizeof(uint16_t));
    uint16_t *B = dt_alloc64((size_t)(batch * S * D) * sizeof(uint16_t));
    float *C = dt_alloc64((size_t)(batch * S * c_cols + GUARD_N) * sizeof(float));
    double *ref = dt_alloc64((size_t)(batch * S * c_cols) * sizeof(double));
    double *mag = dt_alloc64((size_t)(batch * S * c_cols) * sizeof(double));
    CU_ASSERT_FATAL(A && B && C && ref && mag);
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, o.Aref, o.Bref, NULL, NULL, ref, mag, &e), 0);
    int failures = 0;
    for (int t = 0; t < DT_NM && failures < 3; t++) {
        int64_t s = dt_m(t);
        int64_t ac = nt ? D : s, cc = nt ? s : D; /* columns of A and C at this seq */
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t i = 0; i < s; i++)
                memcpy(A + (b * s + i) * ac, Af + (b * S + i) * a_cols,
                       (size_t)ac * sizeof(uint16_t));
            memcpy(B + b * s * D, Bf + b * S * D, (size_t)(s * D) * sizeof(uint16_t));
        }
        poison(C, batch * s * cc);
        f(s, A, B, C);
        int bad = !guard_ok(C, batch * s * cc);
        if (bad)
            fprintf(stderr, "\n  %s: seq=%lld wrote past the output\n", name, (long long)s);
        for (int64_t b = 0; b < batch && !bad; b++)
            for (int64_t i = 0; i < s && !bad; i++) {
                /* row i of the seq-size product is the start of row i of the full one */
                if (dt_check_close_tol(C + (b * s + i) * cc, cc, ref + (b * S + i) * c_cols,
                                       mag + (b * S + i) * c_cols, 1, cc,
                                       dt_ref_tol_k(w->dtype, nt ? D : s), &e)) {
                    fprintf(stderr, "\n  %s: seq=%lld batch %lld row %lld: %s\n", name,
                            (long long)s, (long long)b, (long long)i, e.msg);
                    bad = 1;
                }
            }
        failures += bad;
    }
    CU_ASSERT_EQUAL(failures, 0);
    dt_operands_free(&o);
    free(A);
    free(B);
    free(C);
    free(ref);
    free(mag);
}

static void test_export_dtypes(void)
{
    char dbp[4096];
    snprintf(dbp, sizeof dbp, "%s/dtypes.db", g_dir);
    make_db_dt(dbp);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dbp, DT_DB_READONLY, &db, &e), 0);
    /* the exact prototypes of each dtype's ABI */
    static const char *const protos[NDT][3] = {
        {"size_t d_bf16_packed_size(void);", "void d_bf16_pack(const uint16_t *W, void *packed);",
         "void d_bf16(int64_t M, const uint16_t *X, const void *packed, float *Y, "
         "const float *bias);"},
        {"size_t d_int8_packed_size(void);",
         "int64_t d_int8_pack(const int8_t *W, const float *scale_b, void *packed);",
         "void d_int8(int64_t M, const uint8_t *X, float scale_a, int32_t zp_a, "
         "const void *packed, float *Y, const float *bias);"},
        {"size_t d_w8a32_packed_size(void);",
         "int64_t d_w8a32_pack(const int8_t *W, const float *scale_b, void *packed);",
         "void d_w8a32(int64_t M, const float *X, const void *packed, float *Y);"},
        {"size_t d_w8bf16_packed_size(void);",
         "int64_t d_w8bf16_pack(const int8_t *W, const float *scale_b, void *packed);",
         "void d_w8bf16(int64_t M, const float *X, const void *packed, float *Y);"},
        {"void bmm_nt_bf16(int64_t seq, const uint16_t *A, const uint16_t *B, float *C);", NULL,
         NULL},
        {"void bmm_nn_bf16(int64_t seq, const uint16_t *A, const uint16_t *B, float *C);", NULL,
         NULL},
    };
    for (int i = 0; i < NDT; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.c", g_dir, g_dt[i].name);
        dt_export_opts o = {.workload_key = g_dt[i].key};
        json_t *info = NULL;
        int rc = dt_export_write_info(db, &o, path, &info, &e);
        if (rc)
            fprintf(stderr, "\n  export %s: %s\n", g_dt[i].key, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(json_array_size(json_object_get(info, "kernels")), 3);
        dt_workload *w = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(g_dt[i].key, &w, &e), 0);
        char *c_text = dt_test_slurp(path);
        path[strlen(path) - 1] = 'h';
        char *h_text = dt_test_slurp(path);
        CU_ASSERT_FATAL(c_text && h_text);
        for (int k = 0; k < 3 && protos[i][k]; k++) {
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, protos[i][k]));
            if (!strstr(h_text, protos[i][k]))
                fprintf(stderr, "\n  %s.h lacks %s\n", g_dt[i].name, protos[i][k]);
        }
        /* the comments say the dtype and, for quantized weights, what the
         * pack function takes and the precondition on the scales */
        char dline[64];
        snprintf(dline, sizeof dline, "dtype %s", dt_dtype_name(w->dtype));
        CU_ASSERT_PTR_NOT_NULL(strstr(h_text, dline));
        CU_ASSERT_PTR_NOT_NULL(strstr(c_text, dline));
        if (dt_dtype_quantized(w->dtype)) {
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, "already-quantized"));
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, "zero, NaN or infinite (n + 1: the first one)"));
        }
        CU_ASSERT_PTR_NULL(strstr(h_text, "dtune/"));
        free(c_text);
        free(h_text);
        void *h = compile_export(g_dir, g_dt[i].name);
        CU_ASSERT_PTR_NOT_NULL(h);
        if (h) {
            check_select(h, g_dt[i].name, db, g_dt[i].key, info);
            if (w->op->ndims == 3)
                check_dense_dt(h, g_dt[i].name, w, info);
            else
                check_bmm_dt(h, g_dt[i].name, w);
        }
        json_decref(info);
        dt_workload_free(w);
    }
    dt_db_close(db);

    /* dtune bench --export: the file gets the dtype's data (int8: u8 X, its
     * scale and zero point, s8 W and scales; bf16: bf16 A and B) and is
     * verified on every shape */
    static const int bench_dt[] = {1, 5}; /* int8, bmm_nn_bf16 */
    for (int j = 0; j < 2; j++) {
        int i = bench_dt[j], code;
        char args[8192];
        snprintf(args, sizeof args, "bench '%s' --export '%s/%s.c' --db '%s' --shapes "
                 "'{1,50,77,200}' --repeats 1 --min-time 0.02 --peers none --json",
                 g_dt[i].key, g_dir, g_dt[i].name, dbp);
        json_t *b = dt_test_run_dtune_json(&code, args);
        CU_ASSERT_EQUAL(code, 0);
        if (!b)
            continue;
        json_t *x = json_object_get(b, "export");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(x, "status")), "ok");
        if (!json_is_true(json_object_get(b, "all_verified"))) {
            char *dump = json_dumps(b, JSON_COMPACT);
            fprintf(stderr, "\n  bench %s: %.2000s\n", g_dt[i].name, dump);
            free(dump);
        }
        CU_ASSERT(json_is_true(json_object_get(b, "all_verified")));
        CU_ASSERT_EQUAL(json_array_size(json_object_get(b, "shapes")), 4);
        json_decref(b);
    }
}

/* dt_kernel_pack_checked: a quantized dtype's pack refuses a NULL, zero,
 * NaN or infinite weight scale (and writes nothing); bf16 ignores them. */
static void test_pack_checked(void)
{
    static const char *const keys[] = {"dense(M=1..8,N=21,K=13,dtype=int8)",
                                       "dense(M=1..8,N=21,K=13,dtype=w8a32)",
                                       "dense(M=1..8,N=21,K=13,dtype=bf16)"};
    dt_builder b;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_builder_init(&b, NULL, NULL, g_dir, &e), 0);
    char *src[3] = {0};
    dt_kernel_op kops[3];
    dt_target gen = g_t;
    gen.isa = DT_ISA_GENERIC; /* the portable back-ends: quick to build */
    for (int i = 0; i < 3; i++) {
        dt_workload *w = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(keys[i], &w, &e), 0);
        kops[i] = dt_kernel_op_of_workload(w);
        dt_workload_free(w);
        dt_annotation a;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_from_text(
                                  "{\"sketch\":\"stream\",\"isa\":\"generic\",\"mr\":2,\"nr\":8,"
                                  "\"kc\":0,\"mc\":0,\"nc\":16,\"unroll\":1,\"prefetch\":0,"
                                  "\"store\":\"mask\",\"order\":\"m_inner\",\"par\":\"n\","
                                  "\"threads\":1}", &a, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_validate(&a, &gen, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kops[i], &a, &src[i], &e), 0);
    }
    dt_build_result br[3];
    CU_ASSERT_EQUAL_FATAL(dt_build_many(&b, (const char *const *)src, 3, 0, br, &e), 0);
    const int64_t N = 21, K = 13;
    int8_t W[21 * 13];
    float scale[21];
    for (int i = 0; i < N * K; i++)
        W[i] = (int8_t)(i % 255 - 127);
    for (int n = 0; n < N; n++)
        scale[n] = 0.001f * (float)(n + 1);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(br[i].status, DT_BUILD_OK);
        dt_kernel k;
        CU_ASSERT_EQUAL_FATAL(dt_kernel_load(br[i].so_path, &k, &e), 0);
        CU_ASSERT_TRUE(dt_kernel_computes(&k, &kops[i]));
        size_t sz = dt_kernel_packed_size(&k, DT_GEMM_NK(N, K));
        unsigned char *p1 = dt_alloc64(sz), *p2 = dt_alloc64(sz);
        CU_ASSERT_FATAL(p1 && p2);
        const void *B = W; /* bf16: its own weights below */
        uint16_t Wh[21 * 13];
        if (kops[i].dtype == DT_DTYPE_BF16) {
            for (int j = 0; j < N * K; j++)
                Wh[j] = dt_bf16_from_f32((float)W[j] / 128.0f);
            B = Wh;
        }
        if (dt_dtype_quantized(kops[i].dtype)) {
            const float bad[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY};
            const char *want[] = {"scale_b[7] = 0 is", "scale_b[7] = -0 is", "scale_b[7] = nan",
                                  "scale_b[7] = inf", "scale_b[7] = -inf"};
            for (int j = 0; j < 5; j++) {
                float s[21];
                memcpy(s, scale, sizeof s);
                s[7] = bad[j];
                memset(p1, 0xCD, sz);
                CU_ASSERT_EQUAL(dt_kernel_pack_checked(&k, DT_GEMM_NK(N, K), B, s, p1, &e), DT_EINVAL);
                CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want[j]));
                CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is not a finite non-zero number"));
                if (!strstr(e.msg, want[j]))
                    fprintf(stderr, "\n  %s: %s\n", keys[i], e.msg);
                CU_ASSERT_EQUAL(p1[0], 0xCD); /* nothing packed */
                CU_ASSERT_EQUAL(p1[sz - 1], 0xCD);
            }
            CU_ASSERT_EQUAL(dt_kernel_pack_checked(&k, DT_GEMM_NK(N, K), B, NULL, p1, &e), DT_EINVAL);
            CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "scale_b is NULL"));
        } else {
            CU_ASSERT_EQUAL(dt_kernel_pack_checked(&k, DT_GEMM_NK(N, K), B, NULL, p1, &e), 0);
        }
        /* good scales: exactly dt_kernel_pack */
        memset(p1, 0, sz);
        memset(p2, 0, sz);
        CU_ASSERT_EQUAL(dt_kernel_pack_checked(&k, DT_GEMM_NK(N, K), B, scale, p1, &e), 0);
        dt_kernel_pack(&k, DT_GEMM_NK(N, K), B, scale, p2);
        CU_ASSERT_EQUAL(memcmp(p1, p2, sz), 0);
        free(p1);
        free(p2);
        dt_kernel_unload(&k);
        dt_build_result_free(&br[i]);
        free(src[i]);
    }
}

static void test_export_workloads(void)
{
    make_db(g_db);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(g_db, DT_DB_READONLY, &db, &e), 0);
    static const char *const names[NKEYS] = {"qkv_proj", "attn_out", "ffn_up",
                                             "ffn_down", "attn_scores", "attn_ctx"};
    for (int i = 0; i < NKEYS; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.c", g_dir, names[i]);
        dt_export_opts o = {.workload_key = g_keys[i]};
        json_t *info = NULL;
        int rc = dt_export_write_info(db, &o, path, &info, &e);
        if (rc)
            fprintf(stderr, "\n  export %s: %s\n", g_keys[i], e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(json_array_size(json_object_get(info, "kernels")), 3);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(info, "threads")), g_threads);
        char *h_text = NULL;
        path[strlen(path) - 1] = 'h';
        h_text = dt_test_slurp(path);
        dt_workload *w = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(g_keys[i], &w, &e), 0);
        char proto[256];
        if (i < 4) {
            /* the exact dense ABI of the issue */
            snprintf(proto, sizeof proto, "size_t %s_packed_size(void);", names[i]);
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, proto));
            snprintf(proto, sizeof proto, "void %s_pack(const float *W, float *packed);",
                     names[i]);
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, proto));
            snprintf(proto, sizeof proto, "void %s(int64_t M, const float *X, const float "
                     "*packed, float *Y, const float *bias);", names[i]);
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, proto));
            /* three NR values: three packed regions */
            CU_ASSERT(json_integer_value(json_object_get(info, "packed_bytes")) >=
                      (json_int_t)(w->dims[1]->value * w->dims[2]->value * 4 * 3));
        } else {
            snprintf(proto, sizeof proto, "void %s(int64_t seq, const float *A, const float "
                     "*B, float *C);", names[i]);
            CU_ASSERT_PTR_NOT_NULL(strstr(h_text, proto));
        }
        CU_ASSERT_PTR_NULL(strstr(h_text, "dtune/")); /* needs no dtune header */
        free(h_text);
        void *h = compile_export(g_dir, names[i]);
        CU_ASSERT_PTR_NOT_NULL(h);
        if (h) {
            check_select(h, names[i], db, g_keys[i], info);
            if (i < 4)
                check_dense(h, names[i], w);
            else
                check_bmm(h, names[i], i == 4);
        }
        json_decref(info);
        dt_workload_free(w);
    }
    dt_db_close(db);
}

/* ---- several variables: a schedule of boxes ------------------------------ */

/* The values probed for variable v of w: every domain value, the values
 * between two of them that go to either (the last one nearer the lower,
 * the first nearer the upper: a tie goes to the lower), and values outside
 * the domain (below, 0, negative, just beyond, 2·last+1, 2^40).  At most
 * 3·n + 6. */
static int probes(const dt_workload *w, int v, int64_t *out)
{
    const dt_domain *d = &w->vars[v].dom;
    int n = 0;
    for (int i = 0; i < d->n; i++) {
        out[n++] = d->values[i];
        if (i + 1 < d->n && d->values[i + 1] - d->values[i] > 1) {
            int64_t a = d->values[i], b = d->values[i + 1];
            out[n++] = a + (b - a) / 2;
            out[n++] = a + (b - a) / 2 + 1;
        }
    }
    int64_t first = d->values[0], last = d->values[d->n - 1];
    out[n++] = first - 1;
    out[n++] = 0;
    out[n++] = -7;
    out[n++] = last + 1;
    out[n++] = 2 * last + 1;
    out[n++] = (int64_t)1 << 40;
    return n;
}

typedef int (*select_vec_fn)(const int64_t *vals);

/* sel (NAME_select over the values vals[nvars]) against dt_dispatch_find on
 * every combination of the probed values of each variable: every shape of
 * the set, and shapes between and beyond the domains.  range_kernel maps
 * the table's ranges to the kernel numbers sel returns.  Returns the
 * number of shapes of the set in no box (served by the nearest-box rule). */
static int64_t check_select_vec(select_vec_fn sel, const char *name, const dt_dispatch *d,
                                const int *range_kernel)
{
    const dt_workload *w = d->w;
    const int nv = w->nvars;
    int64_t *pv[DT_MAX_VARS];
    int np[DT_MAX_VARS], at[DT_MAX_VARS];
    for (int v = 0; v < nv; v++) {
        pv[v] = malloc((size_t)(3 * w->vars[v].dom.n + 6) * sizeof *pv[v]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(pv[v]);
        np[v] = probes(w, v, pv[v]);
        at[v] = 0;
    }
    int64_t wrong = 0, in_gap = 0, checked = 0;
    for (;;) {
        int64_t vals[DT_MAX_VARS];
        for (int v = 0; v < nv; v++)
            vals[v] = pv[v][at[v]];
        dt_dispatch_hit hit;
        CU_ASSERT_EQUAL_FATAL(dt_dispatch_find(d, vals, &hit), 0);
        int want = range_kernel[hit.range - d->r], got = sel(vals);
        if (got != want && wrong++ < 3) {
            char shape[256];
            dt_shape_format(w, vals, shape, sizeof shape);
            fprintf(stderr, "\n  %s: %s: select %d, dispatch %d\n", name, shape, got, want);
        }
        int64_t idx;
        if (dt_workload_shape_index(w, vals, &idx, NULL) && hit.extrapolated)
            in_gap++; /* a shape of the set, in no box */
        checked++;
        int v = nv - 1;
        while (v >= 0 && ++at[v] == np[v])
            at[v--] = 0;
        if (v < 0)
            break;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    int64_t want_checked = 1;
    for (int v = 0; v < nv; v++) {
        want_checked *= np[v];
        free(pv[v]);
    }
    CU_ASSERT_EQUAL(checked, want_checked);
    return in_gap;
}

/* Deterministic pseudo-random numbers in 0..n-1. */
static uint64_t g_rng = 12345;
static int64_t rnd(int64_t n)
{
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)((g_rng >> 33) % (uint64_t)n);
}

/* Whether every shape of b is free (free_[s] != 0). */
static int box_free(const dt_workload *w, const dt_box *b, const char *free_)
{
    for (int64_t j = 0; j < dt_box_nshapes(w, b); j++)
        if (!free_[dt_box_shape(w, b, j)])
            return 0;
    return 1;
}

/* Up to 8 disjoint random boxes of w with kernels 0..3; with cover, the
 * shapes left are then covered too, each free shape in order growing a box
 * along the last variable, then each earlier one.  Returns the count;
 * out and kern hold room for every shape of w. */
static int random_boxes(const dt_workload *w, int cover, dt_box *out, int *kern)
{
    int64_t ns = dt_workload_nshapes(w);
    char *free_ = malloc((size_t)ns);
    CU_ASSERT_PTR_NOT_NULL_FATAL(free_);
    memset(free_, 1, (size_t)ns);
    int n = 0;
    for (int t = 0; t < 40 && n < 8; t++) {
        dt_box b;
        memset(&b, 0, sizeof b);
        for (int v = 0; v < w->nvars; v++) {
            int64_t dn = w->vars[v].dom.n;
            b.lo[v] = rnd(dn);
            b.hi[v] = b.lo[v] + rnd(dn / 2 + 1);
            if (b.hi[v] > dn - 1)
                b.hi[v] = dn - 1;
        }
        if (!box_free(w, &b, free_))
            continue;
        for (int64_t j = 0; j < dt_box_nshapes(w, &b); j++)
            free_[dt_box_shape(w, &b, j)] = 0;
        kern[n] = (int)rnd(4);
        out[n++] = b;
    }
    for (int64_t s = 0; cover && s < ns; s++) {
        if (!free_[s])
            continue;
        dt_box b;
        memset(&b, 0, sizeof b);
        dt_box_split(w, s, b.lo);
        memcpy(b.hi, b.lo, sizeof b.hi);
        for (int v = w->nvars - 1; v >= 0; v--)
            for (;;) {
                dt_box slab = b;
                if (b.hi[v] + 1 >= w->vars[v].dom.n)
                    break;
                slab.lo[v] = slab.hi[v] = b.hi[v] + 1;
                if (!box_free(w, &slab, free_))
                    break;
                b.hi[v]++;
            }
        for (int64_t j = 0; j < dt_box_nshapes(w, &b); j++)
            free_[dt_box_shape(w, &b, j)] = 0;
        kern[n] = (int)rnd(4);
        out[n++] = b;
    }
    free(free_);
    return n;
}

#define BOX_CASES 40

typedef struct {
    const char *what;
    dt_workload *w;        /* borrowed */
    dt_dispatch *d;
    int range_kernel[256]; /* the kernel number of each range: its kernel id - 1 */
    int gap;               /* 1: some shape of the set is in no box */
    char *text;            /* NAME_select as exported */
} box_case;

/* NAME_select of table d as dt_export_emit_select writes it (malloc'ed),
 * the variables' own names as parameters. */
static char *select_text(const dt_dispatch *d, int *range_kernel, const char *name)
{
    dt_export_plan p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.d = (dt_dispatch *)d;
    p.w = d->w;
    p.range_kernel = range_kernel;
    char var[DT_MAX_VARS][48];
    for (int v = 0; v < d->w->nvars; v++)
        snprintf(var[v], sizeof var[v], "%s", d->w->vars[v].name);
    p.var = var;
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_export_emit_select(&sb, &p);
    char *text = dt_sb_take(&sb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    return text;
}

/* The table of boxes b[n] with kernels kern[n] (rows with .box = 1, given
 * in reverse order: rows may come in any order). */
static void box_table(box_case *c, dt_workload *w, const dt_box *b, const int *kern, int n,
                      const char *what, int gap)
{
    dt_db_schedule *rows = calloc((size_t)n, sizeof *rows);
    char (*lo)[128] = calloc((size_t)n, sizeof *lo), (*hi)[128] = calloc((size_t)n, sizeof *hi);
    CU_ASSERT_FATAL(rows && lo && hi);
    for (int i = 0; i < n; i++) {
        int r = n - 1 - i;
        dt_box_format(w, &b[i], lo[i], sizeof lo[i], hi[i], sizeof hi[i]);
        rows[r] = (dt_db_schedule){.shape_lo = lo[i], .shape_hi = hi[i], .box = 1,
                                   .kernel_id = 1 + kern[i], .predicted_ns = NAN,
                                   .measured_ns = NAN};
    }
    dt_err e;
    c->what = what;
    c->w = w;
    c->gap = gap;
    int rc = dt_dispatch_from_rows(w, 1, rows, (size_t)n, &c->d, &e);
    if (rc)
        fprintf(stderr, "\n  %s: %s\n", what, e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_FATAL(c->d->n == n && n <= 256);
    for (int r = 0; r < n; r++)
        c->range_kernel[r] = (int)c->d->r[r].kernel_id - 1;
    free(rows);
    free(lo);
    free(hi);
}

/* The same from corner texts. */
static void box_table_text(box_case *c, dt_workload *w, const char *const *corners,
                           const int *kern, int n, const char *what, int gap)
{
    dt_box b[16];
    dt_err e;
    for (int i = 0; i < n; i++) {
        int rc = dt_box_parse(w, corners[2 * i], corners[2 * i + 1], &b[i], &e);
        if (rc)
            fprintf(stderr, "\n  %s: %s\n", what, e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
    }
    box_table(c, w, b, kern, n, what, gap);
}

/* With one variable NAME_select is, byte for byte, the text it was before
 * schedules were boxes (a gap, and a sparse domain). */
static void test_select_one_var_text(void)
{
    static const char *const want[2] = {
        "/* The dispatch table of dense(M=1..128,N=768,K=768,epilogue=bias) at 1 thread: the "
        "kernel index for a shape.\n"
        " *   M=1..M=3 -> nm_k0\n"
        " *   M=4..M=40 -> nm_k1\n"
        " *   M=60..M=100 -> nm_k2\n"
        " *   M=101..M=128 -> nm_k0\n"
        " * A shape outside the ranges (before, between, beyond them) goes to the\n"
        " * range of the nearest shape of the tuned set: extrapolation. */\n"
        "static inline int nm_select(int64_t M)\n"
        "{\n"
        "    if (M <= 50) {\n"
        "        if (M <= 3) {\n"
        "            return 0;\n"
        "        } else {\n"
        "            return 1;\n"
        "        }\n"
        "    } else {\n"
        "        if (M <= 100) {\n"
        "            return 2;\n"
        "        } else {\n"
        "            return 0;\n"
        "        }\n"
        "    }\n"
        "}\n",
        "/* The dispatch table of dense(M={1,2,4,8,16,32,128},N=768,K=768) at 1 thread: the "
        "kernel index for a shape.\n"
        " *   M=1..M=1 -> nm_k1\n"
        " *   M=2..M=4 -> nm_k0\n"
        " *   M=8..M=16 -> nm_k1\n"
        " *   M=32..M=128 -> nm_k2\n"
        " * A shape outside the ranges (before, between, beyond them) goes to the\n"
        " * range of the nearest shape of the tuned set: extrapolation. */\n"
        "static inline int nm_select(int64_t M)\n"
        "{\n"
        "    if (M <= 6) {\n"
        "        if (M <= 1) {\n"
        "            return 1;\n"
        "        } else {\n"
        "            return 0;\n"
        "        }\n"
        "    } else {\n"
        "        if (M <= 24) {\n"
        "            return 1;\n"
        "        } else {\n"
        "            return 2;\n"
        "        }\n"
        "    }\n"
        "}\n"};
    static const char *const keys[2] = {"dense(M=1..128,N=768,K=768,epilogue=bias)",
                                        "dense(M={1,2,4,8,16,32,128},N=768,K=768)"};
    static const char *const corners[2][8] = {
        {"M=1", "M=3", "M=4", "M=40", "M=60", "M=100", "M=101", "M=128"},
        {"M=1", "M=1", "M=2", "M=4", "M=8", "M=16", "M=32", "M=128"}};
    static const int kern[2][4] = {{0, 1, 2, 0}, {1, 0, 1, 2}};
    for (int i = 0; i < 2; i++) {
        dt_workload *w = NULL;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(keys[i], &w, &e), 0);
        box_case c;
        memset(&c, 0, sizeof c);
        box_table_text(&c, w, corners[i], kern[i], 4, keys[i], 1);
        char *text = select_text(c.d, c.range_kernel, "nm");
        CU_ASSERT_STRING_EQUAL(text, want[i]);
        free(text);
        dt_dispatch_free(c.d);
        dt_workload_free(w);
    }
}

/* NAME_select of tables of boxes over two and three variables (sparse
 * domains among them), hand-made and random, covering the set or with
 * gaps: each exported, all compiled in one file, each checked against
 * dt_dispatch_find on every shape of the set and on shapes between and
 * beyond the domains. */
static void test_select_boxes(void)
{
    dt_workload *w2 = NULL, *w3 = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key("dense(M=b*s,N=32,K=32;b={1,2,4},s=1..24)",
                                                &w2, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(
                              "batch_matmul(B=h,M=seq,N=seq,K=c;c={8,16,64},h={1,2,4},seq=1..20)",
                              &w3, &e), 0);
    /* canonical: the variables are b, s and B, K, seq (h and c named after
     * the dims they are) */
    CU_ASSERT_FATAL(w2->nvars == 2 && w3->nvars == 3);
    box_case *c = calloc(BOX_CASES, sizeof *c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    int nc = 0;
    {   /* gaps everywhere; b=1,s=8 is 3 steps from the first two boxes (a
         * tie: the first one) */
        static const char *const k[] = {"b=1,s=1", "b=1,s=5", "b=1,s=11", "b=1,s=15",
                                        "b=2,s=1", "b=4,s=3", "b=4,s=20", "b=4,s=24"};
        static const int kern[] = {0, 1, 2, 3};
        box_table_text(&c[nc++], w2, k, kern, 4, "two variables, gaps", 1);
    }
    {   /* a pinwheel covering the set: every cut splits a box */
        static const char *const k[] = {"b=1,s=1", "b=2,s=8", "b=4,s=1", "b=4,s=16",
                                        "b=1,s=9", "b=1,s=24", "b=2,s=17", "b=4,s=24",
                                        "b=2,s=9", "b=2,s=16"};
        static const int kern[] = {0, 1, 2, 3, 0};
        box_table_text(&c[nc++], w2, k, kern, 5, "two variables, a pinwheel", 0);
    }
    {   /* one box: every shape gets its kernel, the shape is not looked at */
        static const char *const k[] = {"b=2,s=3", "b=4,s=7"};
        static const int kern[] = {2};
        box_table_text(&c[nc++], w2, k, kern, 1, "two variables, one box", 1);
    }
    {
        static const char *const k[] = {"B=1,K=8,seq=1", "B=2,K=16,seq=10",
                                        "B=1,K=64,seq=1", "B=4,K=64,seq=20",
                                        "B=4,K=8,seq=12", "B=4,K=16,seq=20",
                                        "B=1,K=16,seq=15", "B=2,K=16,seq=18"};
        static const int kern[] = {0, 1, 2, 3};
        box_table_text(&c[nc++], w3, k, kern, 4, "three variables, gaps", 1);
    }
    {   /* two boxes of one kernel with a gap between them */
        static const char *const k[] = {"B=1,K=8,seq=1", "B=4,K=8,seq=5",
                                        "B=2,K=64,seq=9", "B=4,K=64,seq=20"};
        static const int kern[] = {1, 1};
        box_table_text(&c[nc++], w3, k, kern, 2, "three variables, one kernel", 1);
    }
    /* random tables: with gaps and covering, over both workloads */
    dt_box *rb = malloc((size_t)dt_workload_nshapes(w3) * sizeof *rb);
    int *rk = malloc((size_t)dt_workload_nshapes(w3) * sizeof *rk);
    CU_ASSERT_FATAL(rb && rk && dt_workload_nshapes(w2) <= dt_workload_nshapes(w3));
    while (nc < BOX_CASES) {
        dt_workload *w = nc % 2 ? w3 : w2;
        int cover = (nc / 2) % 2;
        int n = random_boxes(w, cover, rb, rk);
        box_table(&c[nc++], w, rb, rk, n, cover ? "random, covering" : "random, gaps", -1);
    }
    free(rb);
    free(rk);

    /* every NAME_select in one file, each with a hook taking the values */
    dt_strbuf src;
    dt_sb_init(&src);
    dt_sb_append(&src, "#include <stdint.h>\n");
    for (int i = 0; i < nc; i++) {
        const dt_workload *w = c[i].d->w;
        char name[32];
        snprintf(name, sizeof name, "bx%d", i);
        c[i].text = select_text(c[i].d, c[i].range_kernel, name);
        dt_sb_append(&src, c[i].text);
        dt_sb_appendf(&src, "int bx%d_test(const int64_t *v);\n"
                            "int bx%d_test(const int64_t *v) { return bx%d_select(", i, i, i);
        for (int v = 0; v < w->nvars; v++)
            dt_sb_appendf(&src, "%sv[%d]", v ? ", " : "", v);
        dt_sb_append(&src, "); }\n");
        /* the header lists the boxes; the tests are on the variables */
        CU_ASSERT_PTR_NOT_NULL(strstr(c[i].text, "Each line is a box"));
        CU_ASSERT_PTR_NULL(strstr(c[i].text, "dt_idx"));
    }
    char *text = dt_sb_take(&src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    void *h = compile_wrapped(g_dir, "boxes", text);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    int gaps = 0;
    for (int i = 0; i < nc; i++) {
        char name[32];
        snprintf(name, sizeof name, "bx%d", i);
        select_vec_fn sel = (select_vec_fn)sym(h, name, "_test");
        CU_ASSERT_PTR_NOT_NULL_FATAL(sel);
        int64_t in_gap = check_select_vec(sel, c[i].what, c[i].d, c[i].range_kernel);
        if (c[i].gap >= 0)
            CU_ASSERT_EQUAL(in_gap > 0, c[i].gap);
        gaps += in_gap > 0;
        /* one kernel for every shape: no test at all */
        int one = 1;
        for (int r = 1; r < c[i].d->n; r++)
            one &= c[i].range_kernel[r] == c[i].range_kernel[0];
        CU_ASSERT_EQUAL(strstr(c[i].text, "if (") == NULL, one);
        if (one)
            for (int v = 0; v < c[i].w->nvars; v++) {
                char cast[64];
                snprintf(cast, sizeof cast, "(void)%s;", c[i].w->vars[v].name);
                CU_ASSERT_PTR_NOT_NULL(strstr(c[i].text, cast));
            }
        dt_dispatch_free(c[i].d);
        free(c[i].text);
    }
    CU_ASSERT(gaps >= 10); /* the random tables have gaps too */
    free(c);
    dt_workload_free(w2);
    dt_workload_free(w3);
}

/* A workload of two variables exported through the database: a schedule
 * of boxes stored as boxes, with a gap, over three kernels; the whole file
 * compiled, NAME_select checked against the loaded table as above, and the
 * entry point (M = b*s) against the reference on every shape of the set
 * and on shapes between and beyond its values. */
#define BOX_KEY "dense(M=b*s,N=40,K=24,epilogue=bias;b={1,2,4},s=1..16)"
#define BOX_MAX_M 160

typedef void (*dense_bias2_fn)(int64_t b, int64_t s, const float *X, const float *packed,
                               float *Y, const float *bias);

static void test_export_boxes(void)
{
    char dbp[4096], path[4096];
    snprintf(dbp, sizeof dbp, "%s/boxes.db", g_dir);
    snprintf(path, sizeof path, "%s/bxf.c", g_dir);
    remove(dbp);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dbp, DT_DB_CREATE, &db, &e), 0);
    int64_t tid, wid, kid[3];
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, g_tkey, dt_isa_name(g_t.isa), NULL, &tid, &e), 0);
    dt_workload *w = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(BOX_KEY, &w, &e), 0);
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    CU_ASSERT_STRING_EQUAL(key, BOX_KEY);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, key, w->op->name, "{}", &wid, &e), 0);
    for (int k = 0; k < 3; k++) {
        char json[512];
        annotation(k, json, sizeof json);
        dt_annotation a;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_from_text(json, &a, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, w->op->name, dt_sketch_name(a.sketch), json,
                                                  NULL, &kid[k], &e), 0);
    }
    /* b in {1,2} with s in 7..9 is in no box */
    static const struct {
        const char *lo, *hi;
        int kernel;
    } boxes[] = {{"b=1,s=1", "b=2,s=6", 0}, {"b=4,s=1", "b=4,s=16", 1}, {"b=1,s=10", "b=2,s=16", 2}};
    dt_db_schedule rows[3];
    for (int r = 0; r < 3; r++)
        rows[r] = (dt_db_schedule){.shape_lo = boxes[r].lo, .shape_hi = boxes[r].hi, .box = 1,
                                   .kernel_id = kid[boxes[r].kernel], .predicted_ns = NAN,
                                   .measured_ns = 1000.0 * (r + 1)};
    int rc = dt_db_schedule_replace(db, wid, tid, g_threads, rows, 3, &e);
    if (rc)
        fprintf(stderr, "\n  schedule_replace: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);

    dt_export_opts o = {.workload_key = BOX_KEY};
    json_t *info = NULL;
    rc = dt_export_write_info(db, &o, path, &info, &e);
    if (rc)
        fprintf(stderr, "\n  export %s: %s\n", BOX_KEY, e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    json_t *ranges = json_object_get(info, "ranges");
    CU_ASSERT_EQUAL_FATAL(json_array_size(ranges), 3);
    char *c_text = dt_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c_text);
    CU_ASSERT_PTR_NOT_NULL(strstr(c_text, " *   b=1,s=1..b=2,s=6 -> bxf_k0\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(c_text, "static inline int bxf_select(int64_t b, int64_t s)"));
    CU_ASSERT_PTR_NULL(strstr(c_text, "dt_idx"));
    free(c_text);
    void *h = compile_wrapped(g_dir, "bxf",
                              "#include \"bxf.h\"\n#include \"bxf.c\"\n"
                              "int bxf_test(const int64_t *v);\n"
                              "int bxf_test(const int64_t *v) { return bxf_select(v[0], v[1]); }\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);

    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, key, g_tkey, 0, &d, &e), 0);
    CU_ASSERT_EQUAL_FATAL(d->n, 3);
    int rk[3];
    for (int r = 0; r < 3; r++)
        rk[r] = (int)json_integer_value(json_object_get(json_array_get(ranges, (size_t)r),
                                                        "kernel"));
    select_vec_fn sel = (select_vec_fn)sym(h, "bxf", "_test");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sel);
    CU_ASSERT(check_select_vec(sel, "bxf", d, rk) > 0);
    dt_dispatch_free(d);

    /* the entry point on every shape of the set, and between and beyond */
    packed_size_fn psize = (packed_size_fn)sym(h, "bxf", "_packed_size");
    pack_fn pack = (pack_fn)sym(h, "bxf", "_pack");
    dense_bias2_fn f = (dense_bias2_fn)sym(h, "bxf", "");
    CU_ASSERT_FATAL(psize && pack && f);
    const int64_t N = 40, K = 24;
    float *X = dt_alloc64((size_t)(BOX_MAX_M * K) * sizeof(float));
    float *W = dt_alloc64((size_t)(N * K) * sizeof(float));
    float *bias = dt_alloc64((size_t)N * sizeof(float));
    float *Y = dt_alloc64((size_t)(BOX_MAX_M * N + GUARD_N) * sizeof(float));
    double *ref = dt_alloc64((size_t)(BOX_MAX_M * N) * sizeof(double));
    double *mag = dt_alloc64((size_t)(BOX_MAX_M * N) * sizeof(double));
    float *packed = dt_alloc64(psize());
    CU_ASSERT_FATAL(X && W && bias && Y && ref && mag && packed);
    dt_fill_random(X, BOX_MAX_M * K, 61);
    dt_fill_random(W, N * K, 62);
    dt_fill_random(bias, N, 63);
    dt_gemm g;
    CU_ASSERT_EQUAL_FATAL(dt_op_gemm(w->op, w->attrs, NULL, &g, NULL), 0);
    g.batch = 1, g.M = BOX_MAX_M, g.N = N, g.K = K;
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, X, W, bias, NULL, ref, mag, NULL), 0);
    pack(W, packed);
    static const int64_t bs[] = {1, 2, 3, 4, 5, 8};
    int failures = 0;
    for (int i = 0; i < 6; i++)
        for (int64_t s = 1; s <= 20 && failures < 3; s++) {
            int64_t M = bs[i] * s;
            poison(Y, M * N);
            f(bs[i], s, X, packed, Y, bias);
            char what[64];
            snprintf(what, sizeof what, "bxf: b=%lld,s=%lld", (long long)bs[i], (long long)s);
            failures += dense_out_bad(what, Y, ref, mag, M, N, K);
        }
    CU_ASSERT_EQUAL(failures, 0);
    free(X);
    free(W);
    free(bias);
    free(Y);
    free(ref);
    free(mag);
    free(packed);
    json_decref(info);
    dt_workload_free(w);
    dt_db_close(db);
}

static void test_export_errors(void)
{
    if (!file_exists(g_db))
        make_db(g_db);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(g_db, DT_DB_READONLY, &db, &e), 0);
    char path[4096];
    dt_export_opts o = {.workload_key = g_keys[1]};
    /* NAME not a C identifier: from the path, or given */
    snprintf(path, sizeof path, "%s/bad-name.c", g_dir);
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "C identifier"));
    CU_ASSERT_FALSE(file_exists(path));
    snprintf(path, sizeof path, "%s/int.c", g_dir);
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EINVAL);
    snprintf(path, sizeof path, "%s/ok.txt", g_dir);
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EINVAL);
    /* issue 42, defect 6: a NAME that is (or makes) a C library, POSIX,
     * OpenMP or dtune name, or that the C standard reserves, is refused with
     * the reason and writes nothing (exp.c did not compile: "conflicting
     * types for 'exp'"; free.c took libc's free at link time) */
    static const struct {
        const char *name, *why;
    } taken[] = {
        {"exp", "<math.h> function"},   {"expf", "<math.h> function"},
        {"memcpy", "C library"},        {"free", "C library"},
        {"abs", "C library"},           {"time", "C library"},
        {"errno", "C library"},         {"isdigit", "C library"},
        {"size_t", "ending in _t"},     {"_kernel", "reserved for the C implementation"},
        {"__x", "reserved for the C implementation"}, {"dtune_open", "dtune's own"},
        {"dt_kernel", "dtune's own"},   {"omp_kernel", "OpenMP"},
        {"atomic_add", "C library"},    {"EINVAL", "C library"},
    };
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.c", g_dir, taken[i].name);
        CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EINVAL);
        if (!strstr(e.msg, taken[i].why) || !strstr(e.msg, "--name"))
            fprintf(stderr, "\n  %s: %s\n", taken[i].name, e.msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, taken[i].why));
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "--name"));
        CU_ASSERT_FALSE(file_exists(path));
        o.name = taken[i].name; /* as a name given apart from the file */
        snprintf(path, sizeof path, "%s/kernel_file.c", g_dir);
        CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, taken[i].why));
        CU_ASSERT_FALSE(file_exists(path));
        o.name = NULL;
    }
    /* names that merely look alike are fine: stream (str+lowercase), total,
     * expert, free_list, times */
    static const char *fine[] = {"stream", "total", "expert", "free_list", "times", "memo"};
    char why[256];
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        int ok = dt_export_name_check(fine[i], why, sizeof why);
        if (!ok)
            fprintf(stderr, "\n  %s: %s\n", fine[i], why);
        CU_ASSERT_TRUE(ok);
    }
    /* the file may keep a library's name when the functions take another:
     * exp.c with --name exp_kernel compiles beside <math.h>'s exp */
    snprintf(path, sizeof path, "%s/exp.c", g_dir);
    o.name = "exp_kernel";
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), 0);
    o.name = NULL;
    void *h = compile_wrapped(g_dir, "exp",
                              "#include <math.h>\n#include \"exp.h\"\n#include \"exp.c\"\n"
                              "double exp_test(double x);\n"
                              "double exp_test(double x) { return exp(x) + (double)exp_kernel_packed_size(); }\n");
    CU_ASSERT_PTR_NOT_NULL(h);
    if (h)
        CU_ASSERT_PTR_NOT_NULL(dlsym(h, "exp_kernel"));
    /* missing schedule: another thread count, another target, another workload */
    snprintf(path, sizeof path, "%s/none.c", g_dir);
    o.threads = g_threads + 1;
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no schedule"));
    o.threads = 0;
    o.target_key = "x86_64-avx2-64c-32K.1M.64M";
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "target"));
    o.target_key = NULL;
    o.workload_key = "dense(M=1..128,N=64,K=64)";
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "never been tuned"));
    CU_ASSERT_FALSE(file_exists(path));
    /* an unwritable place: DT_EIO and nothing left */
    o.workload_key = g_keys[1];
    snprintf(path, sizeof path, "%s/no/such/dir/x.c", g_dir);
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EIO);
    /* NAME.h cannot be put in place (a directory there): no new NAME.c either,
     * and an existing NAME.c is kept as it was */
    char hdir[4096];
    snprintf(hdir, sizeof hdir, "%s/halfway.h", g_dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(hdir, 0755), 0);
    snprintf(path, sizeof path, "%s/halfway.c", g_dir);
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "halfway.h"));
    CU_ASSERT_FALSE(file_exists(path));
    FILE *old = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(old);
    fputs("old\n", old);
    fclose(old);
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EIO);
    char *kept = NULL;
    size_t klen = 0;
    CU_ASSERT_EQUAL(dt_read_file(path, 1 << 20, &kept, &klen, &e), 0);
    CU_ASSERT(kept && strcmp(kept, "old\n") == 0);
    free(kept);
    rmdir(hdir);
    unlink(path);
    dt_db_close(db);

    /* the CLI: exit 2 with the reason, no files */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' --db '%s' -o '%s/bad-name.c'", g_keys[1],
                                      g_db, g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "C identifier"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' --db '%s' -o '%s/free.c'", g_keys[1],
                                      g_db, g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "'free' is a name of the C library"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' --db '%s' -o '%s/free.c' --name free_k",
                                      g_keys[1], g_db, g_dir), 0);
    dt_test_proc_free(&p);
    snprintf(path, sizeof path, "%s/free.h", g_dir);
    char *hdr = dt_test_slurp(path);
    CU_ASSERT(hdr && strstr(hdr, "free_k_packed_size"));
    free(hdr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' --db '%s' --threads 64 -o '%s/t64.c'",
                                      g_keys[1], g_db, g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "no schedule"));
    dt_test_proc_free(&p);
    snprintf(path, sizeof path, "%s/t64.c", g_dir);
    CU_ASSERT_FALSE(file_exists(path));
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' --db '%s/missing.db' -o '%s/m.c'",
                                      g_keys[1], g_dir, g_dir), 2);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' --db '%s'", g_keys[1], g_db), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "NAME_packed_size"));
    dt_test_proc_free(&p);
}

/* conv2d over two variables (H, N), N=1..2, H=5..8, W=6, R=S=3, stride 2,
 * pad 1, bias+relu: a hand-made schedule of three boxes covering the set,
 * each with its own kernel (a stream one and two blocked ones of different
 * NR: three packing regions), exported, compiled, NAME_select against
 * dt_dispatch_find, NAME on every shape of the set and on shapes outside it
 * against a direct convolution in double that honours groups.  Of f32 with
 * one group (and a workload whose C varies refused: its weights could not
 * be packed once), grouped (groups=2) and depthwise f32, and grouped int8
 * (powers of two as scales, so that the dequantized operands of the
 * reference are exact). */
#define CONV_KEY "conv2d(N=1..2,H=5..8,W=6,C=3,K=8,R=3,S=3,stride=2,pad=1,epilogue=bias+relu)"
#define CONV_BAD_KEY "conv2d(N=1,H=6,W=6,C=1..4,K=8,R=3,S=3,stride=1,pad=1)"

typedef void (*conv_fn)(int64_t H, int64_t N, const float *X, const float *packed, float *Y,
                        const float *bias);
typedef void (*conv_int8_fn)(int64_t H, int64_t N, const uint8_t *X, float scale_a,
                             int32_t zp_a, const void *packed, float *Y, const float *bias);

/* Y = relu(conv(X, W) + bias), stride 2, pad 1, dilation 1, in double, W
 * [Ko][R][S][C/groups] (output channel k of group g = k / (Ko/groups) reads
 * channels g*C/groups..); mag the sums of the terms' magnitudes.  Returns
 * the number of output pixels. */
/* A case's strides and pads: {stride H, stride W, pad top, bottom, left,
 * right}; all 0: stride 2, pad 1 everywhere. */
typedef struct conv_geo {
    int64_t sh, sw, pt, pb, pl, pr;
} conv_geo;

static conv_geo geo_of(const conv_geo *g)
{
    return g->sh ? *g : (conv_geo){2, 2, 1, 1, 1, 1};
}

static int64_t conv_ref(int64_t n_img, int64_t H, int64_t Wd, int64_t C, int64_t Ko, int64_t R,
                        int64_t S, int64_t groups, const conv_geo *geo, const float *X,
                        const float *W, const float *bias, double *ref, double *mag)
{
    const conv_geo g = geo_of(geo);
    const int64_t cg = C / groups, kg = Ko / groups;
    const int64_t OH = (H + g.pt + g.pb - R) / g.sh + 1, OW = (Wd + g.pl + g.pr - S) / g.sw + 1;
    for (int64_t n = 0; n < n_img; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t k = 0; k < Ko; k++) {
                    double acc = bias[k], m = fabs((double)bias[k]);
                    const int64_t c0 = k / kg * cg;
                    for (int64_t r = 0; r < R; r++)
                        for (int64_t s = 0; s < S; s++) {
                            int64_t ih = oh * g.sh - g.pt + r, iw = ow * g.sw - g.pl + s;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= Wd)
                                continue;
                            for (int64_t c = 0; c < cg; c++) {
                                double t = (double)X[((n * H + ih) * Wd + iw) * C + c0 + c] *
                                           (double)W[((k * R + r) * S + s) * cg + c];
                                acc += t;
                                m += fabs(t);
                            }
                        }
                    int64_t i = ((n * OH + oh) * OW + ow) * Ko + k;
                    ref[i] = acc > 0 ? acc : 0;
                    mag[i] = m;
                }
    return n_img * OH * OW;
}

typedef struct conv_case {
    const char *key, *name; /* the workload (its dtype in it), NAME */
    dt_dtype dtype;         /* f32 or int8 */
    int64_t C, K, groups;   /* as in key */
    const char *want[8];    /* texts the exported file holds (NULL-ended) */
    const char *bad_key;    /* or NULL: a workload refused, "C vary" */
    conv_geo geo;           /* as in key (all 0: stride=2,pad=1) */
    int channel;            /* 1: kernels 0 and 2 of the channel sketch (f32) */
} conv_case;

/* The case's database: its workload (and bad_key's) with three kernels of
 * the dtype, one per box; the kernels' ids in kid. */
static dt_db *conv_db(const conv_case *cc, const dt_workload *w, const char *key)
{
    char dbp[4096];
    snprintf(dbp, sizeof dbp, "%s/%s.db", g_dir, cc->name);
    remove(dbp);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dbp, DT_DB_CREATE, &db, &e), 0);
    int64_t tid, wid, kid[3];
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, g_tkey, dt_isa_name(g_t.isa), NULL, &tid, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, key, w->op->name, "{}", &wid, &e), 0);
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    char *attrs = dt_kernel_op_attrs_json(&kop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(attrs);
    for (int k = 0; k < 3; k++) {
        char json[512];
        if (cc->channel && k != 1) /* conv2d's own sketch: its weights packed whole */
            snprintf(json, sizeof json,
                     "{\"sketch\":\"channel\",\"isa\":\"%s\",\"mr\":%d,\"nr\":%d,\"kc\":0,"
                     "\"mc\":0,\"nc\":%d,\"unroll\":3,\"prefetch\":0,\"store\":\"mask\","
                     "\"order\":\"%s\",\"par\":\"m\",\"threads\":1}",
                     dt_isa_name(g_t.isa), k ? 2 : 4, dt_isa_vec_floats(g_t.isa),
                     dt_isa_vec_floats(g_t.isa), k ? "n_inner" : "m_inner");
        else if (cc->dtype == DT_DTYPE_F32)
            annotation(k, json, sizeof json);
        else
            annotation_dt(cc->dtype, k, json, sizeof json);
        dt_annotation a;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_from_text(json, &a, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern_attrs(db, w->op->name,
                                                        dt_dtype_name(cc->dtype), attrs,
                                                        dt_sketch_name(a.sketch), json, NULL,
                                                        &kid[k], &e), 0);
    }
    free(attrs);
    /* the variables in key order: H, N; three kernels, one per box (the
     * template's identifiers are renamed per kernel in one file) */
    static const struct {
        const char *lo, *hi;
        int kernel;
    } boxes[] = {{"H=5,N=1", "H=6,N=2", 1}, {"H=7,N=1", "H=8,N=1", 0}, {"H=7,N=2", "H=8,N=2", 2}};
    dt_db_schedule rows[3];
    for (int r = 0; r < 3; r++)
        rows[r] = (dt_db_schedule){.shape_lo = boxes[r].lo, .shape_hi = boxes[r].hi, .box = 1,
                                   .kernel_id = kid[boxes[r].kernel], .predicted_ns = NAN,
                                   .measured_ns = 1000.0 * (r + 1)};
    int rc = dt_db_schedule_replace(db, wid, tid, g_threads, rows, 3, &e);
    if (rc)
        fprintf(stderr, "\n  schedule_replace: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    if (cc->bad_key) {
        int64_t bad_wid;
        CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, cc->bad_key, w->op->name, "{}",
                                                    &bad_wid, &e), 0);
        dt_db_schedule bad_row = {.shape_lo = "C=1", .shape_hi = "C=4", .kernel_id = kid[0],
                                  .predicted_ns = NAN, .measured_ns = 1000.0};
        CU_ASSERT_EQUAL_FATAL(dt_db_schedule_replace(db, bad_wid, tid, g_threads, &bad_row, 1,
                                                     &e), 0);
    }
    return db;
}

/* The operands of a case: X, W (float; int8: the dequantized values of Xq,
 * Wq, exact) and bias; for int8 also Xq, Wq and the scales. */
typedef struct conv_data {
    float *X, *W, *bias, *scale_b, scale_a;
    uint8_t *Xq;
    int8_t *Wq;
    int32_t zp_a;
} conv_data;

static void conv_data_fill(conv_data *o, dt_dtype d, int64_t nx, int64_t nw, int64_t K)
{
    dt_fill_random(o->X, nx, 71);
    dt_fill_random(o->W, nw, 72);
    dt_fill_random(o->bias, K, 73);
    if (d != DT_DTYPE_INT8)
        return;
    o->scale_a = 1.0f / 64;
    o->zp_a = 131;
    for (int64_t i = 0; i < nx; i++) {
        o->Xq[i] = (uint8_t)rnd(256);
        o->X[i] = o->scale_a * (float)(o->Xq[i] - o->zp_a);
    }
    for (int64_t k = 0; k < K; k++)
        o->scale_b[k] = ldexpf(1.0f, -5 - (int)(k % 3));
    for (int64_t i = 0; i < nw; i++) {
        o->Wq[i] = (int8_t)(rnd(255) - 127);
        o->W[i] = o->scale_b[i / (nw / K)] * (float)o->Wq[i];
    }
}

static void conv_case_run(const conv_case *cc)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.c", g_dir, cc->name);
    dt_err e;
    dt_workload *w = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(cc->key, &w, &e), 0);
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    dt_db *db = conv_db(cc, w, key);

    dt_export_opts o = {.workload_key = cc->bad_key};
    if (cc->bad_key) { /* C varies: K = R*S*C of the weights would too */
        char bad_path[4096];
        snprintf(bad_path, sizeof bad_path, "%s/%s_bad.c", g_dir, cc->name);
        CU_ASSERT_EQUAL(dt_export_write(db, &o, bad_path, &e), DT_EUNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "C vary"));
        CU_ASSERT_FALSE(file_exists(bad_path));
    }
    o.workload_key = key;
    json_t *info = NULL;
    int rc = dt_export_write_info(db, &o, path, &info, &e);
    if (rc)
        fprintf(stderr, "\n  export %s: %s\n", key, e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    json_t *ranges = json_object_get(info, "ranges");
    CU_ASSERT_EQUAL_FATAL(json_array_size(ranges), 3);
    char *c_text = dt_test_slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c_text);
    char want[256];
    snprintf(want, sizeof want, "static inline int %s_select(int64_t H, int64_t N)", cc->name);
    CU_ASSERT_PTR_NOT_NULL(strstr(c_text, want));
    /* the geometry: stride, pad, dilation, groups, then the width's stride
     * and dilation and the left, bottom and right pads, resolved */
    const conv_geo g = geo_of(&cc->geo);
    snprintf(want, sizeof want, "dt_K, dt_R, dt_S, %lld, %lld, 1, %lld,\n                %lld, 1, "
             "%lld, %lld, %lld},", (long long)g.sh, (long long)g.pt, (long long)cc->groups,
             (long long)g.sw, (long long)g.pl, (long long)g.pb, (long long)g.pr);
    if (!strstr(c_text, want))
        fprintf(stderr, "\n  %s.c lacks \"%s\"\n", cc->name, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(c_text, want));
    if (!cc->geo.sh)
        CU_ASSERT_PTR_NOT_NULL(strstr(c_text, "(stride 2, pad 1,\n *   dilation 1)"));
    /* one pack call per region, a loop over the groups when grouped (and a
     * GEMM view's kernel packs them) */
    CU_ASSERT_EQUAL(strstr(c_text, "for (int64_t dt_g = 0;") != NULL, cc->groups > 1);
    for (int i = 0; cc->want[i]; i++)
        if (!strstr(c_text, cc->want[i])) {
            fprintf(stderr, "\n  %s.c lacks \"%s\"\n", cc->name, cc->want[i]);
            CU_FAIL("a text of the exported file");
        }
    free(c_text);
    char src[1024];
    snprintf(src, sizeof src,
             "#include \"%s.h\"\n#include \"%s.c\"\n"
             "int %s_test(const int64_t *v);\n"
             "int %s_test(const int64_t *v) { return %s_select(v[0], v[1]); }\n",
             cc->name, cc->name, cc->name, cc->name, cc->name);
    void *h = compile_wrapped(g_dir, cc->name, src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, key, g_tkey, 0, &d, &e), 0);
    CU_ASSERT_EQUAL_FATAL(d->n, 3);
    int rk[3];
    for (int r = 0; r < 3; r++)
        rk[r] = (int)json_integer_value(json_object_get(json_array_get(ranges, (size_t)r),
                                                        "kernel"));
    select_vec_fn sel = (select_vec_fn)sym(h, cc->name, "_test");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sel);
    CU_ASSERT_EQUAL(check_select_vec(sel, cc->name, d, rk), 0); /* the boxes cover the set */
    dt_dispatch_free(d);

    packed_size_fn psize = (packed_size_fn)sym(h, cc->name, "_packed_size");
    void *pack = sym(h, cc->name, "_pack"), *f = sym(h, cc->name, "");
    CU_ASSERT_FATAL(psize && pack && f);
    enum { MAX_N = 3, MAX_H = 11, WD = 6, R = 3, S = 3, PGUARD = 256 };
    const int64_t C = cc->C, KO = cc->K, G = cc->groups;
    const int64_t max_m = MAX_N * MAX_H * WD, nx = MAX_N * MAX_H * WD * C; /* max_m: N*OH*OW */
    const int64_t nw = KO * R * S * (C / G);
    conv_data od = {
        .X = dt_alloc64((size_t)nx * sizeof(float)),
        .W = dt_alloc64((size_t)nw * sizeof(float)),
        .bias = dt_alloc64((size_t)KO * sizeof(float)),
        .scale_b = dt_alloc64((size_t)KO * sizeof(float)),
        .Xq = dt_alloc64((size_t)nx),
        .Wq = dt_alloc64((size_t)nw),
    };
    float *Y = dt_alloc64((size_t)(max_m * KO + GUARD_N) * sizeof(float));
    double *ref = dt_alloc64((size_t)(max_m * KO) * sizeof(double));
    double *mag = dt_alloc64((size_t)(max_m * KO) * sizeof(double));
    /* NAME_pack writes NAME_packed_size() bytes, none past them */
    const size_t pbytes = psize();
    unsigned char *packed = dt_alloc64(pbytes + PGUARD);
    CU_ASSERT_FATAL(od.X && od.W && od.bias && od.scale_b && od.Xq && od.Wq && Y && ref && mag &&
                    packed);
    memset(packed + pbytes, 0xA5, PGUARD);
    conv_data_fill(&od, cc->dtype, nx, nw, KO);
    if (cc->dtype == DT_DTYPE_INT8) {
        CU_ASSERT_EQUAL(((pack_q_fn)pack)(od.Wq, od.scale_b, packed), 0);
    } else {
        ((pack_fn)pack)(od.W, (float *)packed);
    }
    int guard_kept = 1;
    for (int i = 0; i < PGUARD; i++)
        guard_kept &= packed[pbytes + (size_t)i] == 0xA5;
    CU_ASSERT(guard_kept);
    /* every shape of the set, then N=3 and H=11, H=2 outside it */
    static const int64_t shapes[][2] = {{5, 1}, {6, 1}, {7, 1}, {8, 1}, {5, 2}, {6, 2},
                                        {7, 2}, {8, 2}, {11, 3}, {2, 1}, {6, 3}};
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && failures < 3; i++) {
        int64_t H = shapes[i][0], n_img = shapes[i][1];
        int64_t M = conv_ref(n_img, H, WD, C, KO, R, S, G, &cc->geo, od.X, od.W, od.bias, ref,
                             mag);
        poison(Y, M * KO);
        if (cc->dtype == DT_DTYPE_INT8)
            ((conv_int8_fn)f)(H, n_img, od.Xq, od.scale_a, od.zp_a, packed, Y, od.bias);
        else
            ((conv_fn)f)(H, n_img, od.X, (const float *)packed, Y, od.bias);
        char what[96];
        snprintf(what, sizeof what, "%s: H=%lld,N=%lld", cc->name, (long long)H,
                 (long long)n_img);
        failures += dense_out_bad(what, Y, ref, mag, M, KO, R * S * (C / G));
    }
    CU_ASSERT_EQUAL(failures, 0);
    free(od.X);
    free(od.W);
    free(od.bias);
    free(od.scale_b);
    free(od.Xq);
    free(od.Wq);
    free(Y);
    free(ref);
    free(mag);
    free(packed);
    json_decref(info);
    dt_workload_free(w);
    dt_db_close(db);
}

static void test_export_conv2d(void)
{
    const conv_case cc = {
        .key = CONV_KEY, .name = "cvf", .dtype = DT_DTYPE_F32, .C = 3, .K = 8, .groups = 1,
        .want = {"cvf_k0_dtk_pack(8, 27, W, packed + 0);",
                 "X, packed + 0, bias, Y, cvf_THREADS);",
                 " *   W is K x R x S x C, Y is N x OH x OW x K,",
                 "packs W (K x R x S x C, 216 floats)"},
        .bad_key = CONV_BAD_KEY,
    };
    conv_case_run(&cc);
}

/* Grouped weights: W [K][R][S][C/groups], packed group by group (a loop of
 * the kernel's pack per region, group g's rows at g times its packed size):
 * a depthwise f32 convolution and a two-group int8 one with a zero point. */
static void test_export_conv2d_grouped(void)
{
    const conv_case cases[] = {
        {.key = "conv2d(N=1..2,H=5..8,W=6,C=6,K=6,R=3,S=3,stride=2,pad=1,groups=6,"
                "epilogue=bias+relu)",
         .name = "cvdw", .dtype = DT_DTYPE_F32, .C = 6, .K = 6, .groups = 6,
         .want = {"        cvdw_k0_dtk_pack(1, 9, W + dt_g * 9, packed + 0 + dt_g * ",
                  "packs W (K x R x S x C/groups, 54 floats)", "(C/groups = 1)"}},
        {.key = "conv2d(N=1..2,H=5..8,W=6,C=4,K=8,R=3,S=3,stride=2,pad=1,groups=2,"
                "epilogue=bias+relu,dtype=int8)",
         .name = "cvq", .dtype = DT_DTYPE_INT8, .C = 4, .K = 8, .groups = 2,
         .want = {"    for (int64_t dt_g = 0; dt_g < 2; dt_g++)",
                  "cvq_k0_dtk_pack_u8s8(4, 18, W + dt_g * 72, scale_b + dt_g * 4, "
                  "(char *)packed + 0 + dt_g * ",
                  " * R*S*C/groups <= 65793; here 18).",
                  " *   W is K x R x S x C/groups, Y is N x OH x OW x K,",
                  " *   groups = 2: output channel k is in group g = k / (K/groups)\n"
                  " *   (K/groups = 4) and reads input channels [g*C/groups,\n"
                  " *   (g+1)*C/groups) only (C/groups = 2): the sum's c runs over\n"
                  " *   them, with W[k,r,s,c - g*C/groups].\n",
                  " *   A region is the groups' packings one after another, group\n"}},
        /* channel kernels (0 and 2: one whole packing, shared) beside a GEMM
         * view's (1: group by group), in one file */
        {.key = "conv2d(N=1..2,H=5..8,W=6,C=40,K=40,R=3,S=3,stride=2,pad=1,groups=40,"
                "epilogue=bias+relu)",
         .name = "cvch", .dtype = DT_DTYPE_F32, .C = 40, .K = 40, .groups = 40, .channel = 1,
         /* the file numbers kernels by their first box: k0 the GEMM view's */
         .want = {"    cvch_k1_dtk_pack_ch(40, 9, W, packed + ",
                  "cvch_k1_dtk_conv2d_ch((const int64_t[16])",
                  "cvch_k2_dtk_conv2d_ch((const int64_t[16])",
                  "cvch_k0_dtk_pack(1, 9, W + dt_g * 9, packed + 0 + dt_g * ",
                  " *   (a channel kernel's) one packing of all K rows.\n"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        conv_case_run(&cases[i]);
}

/* Strides and pads per axis and side (an asymmetric, TF-style padding with
 * a stride along H only): the geometry's sixteen values, the comment's
 * per-axis lines, the exported kernel run against the definition. */
static void test_export_conv2d_per_axis(void)
{
    const conv_case cc = {
        .key = "conv2d(N=1..2,H=5..8,W=6,C=3,K=8,R=3,S=3,stride=2,pad=0,epilogue=bias+relu,"
               "stride_w=1,pad_w=1,pad_b=1,pad_r=2)",
        .name = "cvax", .dtype = DT_DTYPE_F32, .C = 3, .K = 8, .groups = 1,
        .want = {" *   Per axis: along H stride 2, dilation 1, pads 0 (top) and 1\n"
                 " *   (bottom); along W stride 1, dilation 1, pads 1 (left) and\n"
                 " *   2 (right): ih = oh*2 - 0 + r*1, iw = ow*1 - 1 + s*1,\n"},
        .geo = {2, 1, 0, 1, 1, 2},
    };
    conv_case_run(&cc);
}

/* A transposed convolution's kernels are forward ones its phases call from
 * the runtime: refused with the reason, no file written. */
static void test_export_conv2d_transposed(void)
{
    const conv_case cc = {.key = "conv2d(N=1..2,H=5..8,W=6,C=3,K=8,R=4,S=4,stride=2,pad=1,"
                                 "transpose=1)",
                          .name = "cvtr", .dtype = DT_DTYPE_F32, .C = 3, .K = 8, .groups = 1};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.c", g_dir, cc.name);
    dt_err e;
    dt_workload *w = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(cc.key, &w, &e), 0);
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    dt_db *db = conv_db(&cc, w, key);
    dt_export_opts o = {.workload_key = key};
    CU_ASSERT_EQUAL(dt_export_write(db, &o, path, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not exported: a transposed conv2d"));
    CU_ASSERT_FALSE(file_exists(path));
    dt_db_close(db);
    dt_workload_free(w);
}

/* A real tune of a small workload, exported by the binary, compiled, run. */
#define E2E_KEY "dense(M=1..12,N=40,K=24,epilogue=bias+relu)"

static void test_tune_export_run(void)
{
    char args[4096];
    int code;
    snprintf(args, sizeof args, "tune '" E2E_KEY "' --db '%s/e2e.db' --trials 16 --threads 1 "
             "--min-time 0.5 --json", g_dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    json_decref(t);
    snprintf(args, sizeof args, "export '" E2E_KEY "' --db '%s/e2e.db' -o '%s/tiny.c' --json",
             g_dir, g_dir);
    json_t *info = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(info, "name")), "tiny");
    CU_ASSERT(json_array_size(json_object_get(info, "ranges")) >= 1);
    json_decref(info);
    void *h = compile_export(g_dir, "tiny");
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    packed_size_fn psize = (packed_size_fn)sym(h, "tiny", "_packed_size");
    pack_fn pack = (pack_fn)sym(h, "tiny", "_pack");
    dense_bias_fn f = (dense_bias_fn)sym(h, "tiny", "");
    CU_ASSERT_FATAL(psize && pack && f);
    const int64_t N = 40, K = 24, MM = 40; /* beyond the tuned 1..12 too */
    float X[40 * 24], W[40 * 24], bias[40], Y[40 * 40 + GUARD_N];
    double ref[40 * 40], mag[40 * 40];
    float *packed = dt_alloc64(psize());
    CU_ASSERT_FATAL(packed != NULL);
    dt_fill_random(X, MM * K, 31);
    dt_fill_random(W, N * K, 32);
    dt_fill_random(bias, N, 33);
    pack(W, packed);
    dt_gemm g = {.dim = {-1, 0, 1, 2}, .batch = 1, .M = MM, .N = N, .K = K, .b_trans = 1,
                 .b_const = 1, .bias = 1, .act = DT_ACT_RELU};
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, X, W, bias, NULL, ref, mag, NULL), 0);
    for (int64_t M = 1; M <= MM; M++) {
        poison(Y, M * N);
        f(M, X, packed, Y, bias);
        dt_err e;
        CU_ASSERT(guard_ok(Y, M * N));
        int rc = dt_check_close(Y, N, ref, mag, M, N, K, &e);
        if (rc)
            fprintf(stderr, "\n  tiny M=%lld: %s\n", (long long)M, e.msg);
        CU_ASSERT_EQUAL(rc, 0);
    }
    free(packed);

    /* dtune bench --export: the file built, verified on every shape and timed */
    snprintf(args, sizeof args, "bench '" E2E_KEY "' --export '%s/tiny.c' --db '%s/e2e.db' "
             "--shapes '{1,7,12,30}' --repeats 1 --min-time 0.2 --peers none --json",
             g_dir, g_dir);
    json_t *b = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(b, "mode")), "export");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(b, "export"),
                                                             "status")), "ok");
    CU_ASSERT(json_is_true(json_object_get(b, "all_verified")));
    json_t *shapes = json_object_get(b, "shapes");
    CU_ASSERT_EQUAL(json_array_size(shapes), 4);
    CU_ASSERT(json_is_true(json_object_get(json_array_get(shapes, 3), "extrapolated")));
    CU_ASSERT(json_number_value(json_object_get(json_array_get(shapes, 0), "gflops")) > 0);
    json_decref(b);
    /* the file of another workload is refused */
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..12,N=40,K=24)' --export '%s/tiny.c' "
                                      "--db '%s/e2e.db' --peers none", g_dir, g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "exports"));
    dt_test_proc_free(&p);
}

/* Every op a kernel can be generated for can be exported: its export hooks
 * exist, name their tensors, and write a parameter list, a doc paragraph
 * and a call of kernel k's entry points. */
static void test_export_hooks(void)
{
    for (int i = 0; i < dt_mk_op_count(); i++) {
        const dt_mk_op *m = dt_mk_op_at(i);
        if (m->sketch != DT_SKETCH_BLOCKED) /* own sketches are refused by export_plan.c */
            continue;
        const dt_export_op *x = dt_export_op_find(m->op, m->backend->dtype);
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        CU_ASSERT_PTR_NOT_NULL(x->params[0]);
        CU_ASSERT(x->emit_params && x->emit_doc && x->emit_call);
        /* the call uses the kernel's first entry point, renamed */
        dt_export_plan p;
        memset(&p, 0, sizeof p);
        snprintf(p.name, sizeof p.name, "nm");
        dt_export_pack pack = {0};
        dt_export_kernel k = {0};
        p.pack = &pack;
        p.k = &k;
        p.nk = 1;
        CU_ASSERT_EQUAL_FATAL(dt_op_gemm(m->op, NULL, NULL, &p.g, NULL), 0);
        dt_strbuf sb;
        dt_sb_init(&sb);
        x->emit_call(&sb, &p, 0);
        char *text = dt_sb_take(&sb);
        char want[96];
        snprintf(want, sizeof want, "nm_k0_%s(", m->syms[0]);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "nm_THREADS"));
        free(text);
        if (p.g.b_const) { /* NAME_pack's parameters and the kernel's pack entry point */
            CU_ASSERT_PTR_NOT_NULL_FATAL(x->pack_params);
            CU_ASSERT_PTR_NOT_NULL(strstr(x->pack_params, "*W"));
            CU_ASSERT_PTR_NOT_NULL(strstr(x->pack_params, "packed"));
            CU_ASSERT(x->offset_unit == 1 || x->offset_unit == 4);
            CU_ASSERT_PTR_NOT_NULL_FATAL(x->emit_pack);
            dt_sb_init(&sb);
            x->emit_pack(&sb, &p, 0);
            text = dt_sb_take(&sb);
            snprintf(want, sizeof want, "nm_k0_%s(", m->syms[1]);
            CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
            free(text);
        }
    }
    CU_ASSERT_PTR_NULL(dt_export_op_find(dt_mk_op_at(0)->op, DT_DTYPE_COUNT));
}

/* The exported text of batch_matmul in f32 and bf16 (NN and NT) is the
 * text the two dtypes' hooks wrote before they shared one file: parameters,
 * doc paragraph and a kernel's call, byte for byte. */
static void test_export_bmm_text(void)
{
    extern const dt_op_desc dt_op_batch_matmul;
    static const struct {
        dt_dtype dtype;
        int b_trans;
        const char *want;
    } cases[] = {
        {DT_DTYPE_F32, 0,
         "const float *A, const float *B, float *C| *\n"
         " * C[b] = A[b] * B[b] for b < B; A is B x M x K, B is B x K x N, C is B x M x N,\n"
         " * all row-major and contiguous.  Pointers are borrowed.\n"
         "|        nm_k3_dtk_bmm(dt_B, dt_M, dt_N, dt_K, A, dt_K, dt_M * dt_K, "
         "B, dt_N, dt_N * dt_K, C, dt_N, dt_M * dt_N, nm_THREADS);\n"},
        {DT_DTYPE_F32, 1,
         "const float *A, const float *B, float *C| *\n"
         " * C[b] = A[b] * B[b]^T for b < B; A is B x M x K, B is B x N x K, C is B x M x N,\n"
         " * all row-major and contiguous.  Pointers are borrowed.\n"
         "|        nm_k3_dtk_bmm(dt_B, dt_M, dt_N, dt_K, A, dt_K, dt_M * dt_K, "
         "B, dt_K, dt_N * dt_K, C, dt_N, dt_M * dt_N, nm_THREADS);\n"},
        {DT_DTYPE_BF16, 0,
         "const uint16_t *A, const uint16_t *B, float *C| *\n"
         " * dtype bf16: A and B are bf16 (uint16_t, the upper 16 bits of an IEEE float;\n"
         " * convert with round to nearest even), the sums are f32, C is f32.\n"
         " * C[b] = A[b] * B[b] for b < B; A is B x M x K, B is B x K x N, C is B x M x N,\n"
         " * all row-major and contiguous.  Pointers are borrowed.\n"
         "|        nm_k3_dtk_bmm_bf16(dt_B, dt_M, dt_N, dt_K, A, dt_K, dt_M * dt_K, "
         "B, dt_N, dt_N * dt_K, C, dt_N, dt_M * dt_N, nm_THREADS);\n"},
        {DT_DTYPE_BF16, 1,
         "const uint16_t *A, const uint16_t *B, float *C| *\n"
         " * dtype bf16: A and B are bf16 (uint16_t, the upper 16 bits of an IEEE float;\n"
         " * convert with round to nearest even), the sums are f32, C is f32.\n"
         " * C[b] = A[b] * B[b]^T for b < B; A is B x M x K, B is B x N x K, C is B x M x N,\n"
         " * all row-major and contiguous.  Pointers are borrowed.\n"
         "|        nm_k3_dtk_bmm_bf16(dt_B, dt_M, dt_N, dt_K, A, dt_K, dt_M * dt_K, "
         "B, dt_K, dt_N * dt_K, C, dt_N, dt_M * dt_N, nm_THREADS);\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const dt_export_op *x = dt_export_op_find(&dt_op_batch_matmul, cases[i].dtype);
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        CU_ASSERT_STRING_EQUAL(x->params[0], "A");
        CU_ASSERT_STRING_EQUAL(x->params[1], "B");
        CU_ASSERT_STRING_EQUAL(x->params[2], "C");
        CU_ASSERT_PTR_NULL(x->params[3]);
        CU_ASSERT_PTR_NULL(x->pack_params);
        CU_ASSERT_PTR_NULL(x->emit_pack);
        dt_export_plan p;
        memset(&p, 0, sizeof p);
        snprintf(p.name, sizeof p.name, "nm");
        p.g.b_trans = cases[i].b_trans;
        dt_strbuf sb;
        dt_sb_init(&sb);
        x->emit_params(&sb, &p);
        dt_sb_append(&sb, "|");
        x->emit_doc(&sb, &p);
        dt_sb_append(&sb, "|");
        x->emit_call(&sb, &p, 3);
        char *text = dt_sb_take(&sb);
        CU_ASSERT_STRING_EQUAL(text, cases[i].want);
        free(text);
    }
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"export every BERT-base workload kind, M 1..512", test_export_workloads},
        {"NAME_select of one variable: the text of before boxes", test_select_one_var_text},
        {"NAME_select of boxes over two and three variables, every shape", test_select_boxes},
        {"export a schedule of boxes over two variables, compile, run", test_export_boxes},
        {"export bf16, int8, w8a32 dense and bf16 batch_matmul, M 1..200 and 512",
         test_export_dtypes},
        {"dt_kernel_pack_checked refuses bad weight scales", test_pack_checked},
        {"export errors", test_export_errors},
        {"tune, export, compile, run", test_tune_export_run},
        {"export hooks of every op with kernels", test_export_hooks},
        {"export conv2d f32 over boxes of two variables, compile, run", test_export_conv2d},
        {"export grouped and depthwise conv2d (f32, int8), compile, run",
         test_export_conv2d_grouped},
        {"export conv2d with strides and pads per axis and side, compile, run",
         test_export_conv2d_per_axis},
        {"export of a transposed conv2d refused with the reason", test_export_conv2d_transposed},
        {"batch_matmul's exported text in f32 and bf16", test_export_bmm_text},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"export", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
