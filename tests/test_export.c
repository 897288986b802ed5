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

#include "common/file.h"
#include "common/mem.h"
#include "common/target.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "export/export.h"
#include "export/export_internal.h"
#include "microkernel/codegen.h"
#include "microkernel/mk_op.h"
#include "microkernel/reference.h"
#include "sketch/annotation.h"
#include "sketch/workload.h"
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

/* Compiles dir/NAME.c with its header (and a hook exposing NAME_select)
 * into dir/NAME.so with plain cc; returns the dlopen handle or NULL. */
static void *compile_export(const char *dir, const char *name)
{
    char src[256], cmd[10000], so[4096];
    snprintf(src, sizeof src,
             "#include \"%s.h\"\n#include \"%s.c\"\n"
             "int %s_test_select(int64_t v);\n"
             "int %s_test_select(int64_t v) { return %s_select(v); }\n",
             name, name, name, name, name);
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
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, X, W, bias, ref, mag, NULL), 0);
    pack(W, packed);
    int failures = 0;
    for (int64_t M = 1; M <= MAX_M && failures < 3; M++) {
        poison(Y, M * N);
        if (bias_on)
            ((dense_bias_fn)entry)(M, X, packed, Y, bias);
        else
            ((dense_fn)entry)(M, X, packed, Y);
        dt_err e;
        int bad = !guard_ok(Y, M * N);
        if (bad)
            fprintf(stderr, "\n  %s: M=%lld wrote past the output\n", name, (long long)M);
        else if ((bad = dt_check_close(Y, N, ref, mag, M, N, K, &e) != 0))
            fprintf(stderr, "\n  %s: M=%lld: %s\n", name, (long long)M, e.msg);
        failures += bad;
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
    dt_gemm g = {.dim = {0, 1, 2, 3}, .batch = batch, .M = S, .N = nt ? S : D,
                 .K = nt ? D : S, .b_trans = nt};
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, Af, Bf, NULL, ref, mag, NULL), 0);
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
    CU_ASSERT_EQUAL_FATAL(dt_ref_gemm(&g, X, W, bias, ref, mag, NULL), 0);
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
    }
    CU_ASSERT_PTR_NULL(dt_export_op_find(dt_mk_op_at(0)->op, DT_DTYPE_COUNT));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"export every BERT-base workload kind, M 1..512", test_export_workloads},
        {"export errors", test_export_errors},
        {"tune, export, compile, run", test_tune_export_run},
        {"export hooks of every op with kernels", test_export_hooks},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"export", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
