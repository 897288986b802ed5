/* libdtune: the public API as a compiler would call it (include/dtune/dtune.h,
 * through the shared library), and the dispatch cache under it
 * (dispatch/cache.h).  The schedules are written with the db API, so the
 * suite needs no tuning run. */
#include <dirent.h>
#include <dtune/dtune.h>
#include <errno.h>
#include <grp.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/target.h"
#include "db/db.h"
#include "dispatch/cache.h"
#include "export/export.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "space/annotation.h"
#include "shape/expr.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

#define KEY "dense(M=1..64,N=64,K=32)"
#define KEY_SPELLED "dense(K=32, N=64, M=seq; seq=1..64)"

static char *g_dir;
static char g_db[4096];
static char g_tkey[DT_TARGET_KEY_MAX];
static int64_t g_kid[2];

/* ---- fixture: a database with a schedule for this machine ------------------- */

/* Replaces the 1-thread schedule of KEY on target tid by (lo..hi -> kernel). */
static int put_schedule(dt_db *db, int64_t wid, int64_t tid, int threads,
                        const dt_db_schedule *rows, size_t n, dt_err *e)
{
    return dt_db_schedule_replace(db, wid, tid, threads, rows, n, e);
}

static int make_db(const char *path, int64_t *wid, int64_t *tid, dt_err *e)
{
    dt_target tg;
    dt_workload *w = NULL;
    dt_db *db = NULL;
    int rc;
    if ((rc = dt_target_detect(&tg, e)) || (rc = dt_workload_parse_key(KEY, &w, e)) ||
        (rc = dt_db_open(path, DT_DB_CREATE, &db, e)))
        goto out;
    char *ss = dt_workload_shape_set_json(w);
    rc = dt_db_workload_upsert(db, KEY, "dense", ss, wid, e);
    free(ss);
    if (rc || (rc = dt_db_target_upsert(db, g_tkey, dt_isa_name(tg.isa), NULL, tid, e)) ||
        (rc = dt_test_add_sampled_kernel(db, &tg, DT_SKETCH_STREAM, 1, &g_kid[0], e)) ||
        (rc = dt_test_add_sampled_kernel(db, &tg, DT_SKETCH_BLOCKED, 2, &g_kid[1], e)))
        goto out;
    dt_db_schedule rows[] = {
        {.shape_lo = "M=1", .shape_hi = "M=16", .kernel_id = g_kid[0], .predicted_ns = 100,
         .measured_ns = 110},
        {.shape_lo = "M=17", .shape_hi = "M=64", .kernel_id = g_kid[1], .predicted_ns = 300,
         .measured_ns = NAN},
    };
    dt_db_schedule two[] = {{.shape_lo = "M=1", .shape_hi = "M=64", .kernel_id = g_kid[1],
                             .predicted_ns = 90, .measured_ns = 95}};
    if ((rc = put_schedule(db, *wid, *tid, 1, rows, 2, e)))
        goto out;
    rc = put_schedule(db, *wid, *tid, 2, two, 1, e);
out:
    dt_db_close(db);
    dt_workload_free(w);
    return rc;
}

static int64_t g_wid, g_tid;

static int setup(void)
{
    g_dir = dt_test_tmpdir_with_cache();
    if (!g_dir)
        return 1;
    snprintf(g_db, sizeof g_db, "%s/t.db", g_dir);
    dt_err e;
    dt_target tg;
    if (dt_target_detect(&tg, &e) || dt_target_key(&tg, g_tkey, sizeof g_tkey))
        return 1;
    if (make_db(g_db, &g_wid, &g_tid, &e)) {
        fprintf(stderr, "fixture: %s\n", e.msg);
        return 1;
    }
    return 0;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

/* ---- identity --------------------------------------------------------------- */

static void test_version(void) { CU_ASSERT_STRING_EQUAL(dtune_version(), DTUNE_VERSION); }

static void test_workload_canonical(void)
{
    char out[256], err[256];
    CU_ASSERT_EQUAL(dtune_workload_canonical("dense(K=768, N=768, M=seq; seq=1..128)", out,
                                             sizeof out, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(out, "dense(M=1..128,N=768,K=768)");
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical("dense(M=1..128)", out, sizeof out, err,
                                                 sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "dim N is missing"));
    /* too small an output buffer is an error, with the size needed */
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical("dense(M=1..128,N=768,K=768)", out, 10, err,
                                                 sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "28 bytes needed"));
    /* NULL err is allowed */
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical("nope", out, sizeof out, NULL, 0), 0);
    /* NULL key or output is an argument error, not a crash */
    CU_ASSERT_EQUAL(dtune_workload_canonical(NULL, out, sizeof out, err, sizeof err),
                    DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "key is NULL"));
    CU_ASSERT_EQUAL(dtune_workload_canonical("dense(M=1..4,N=8,K=8)", NULL, 8, err, sizeof err),
                    DTUNE_EINVAL);
}

/* issue 33: the one error style — dtune_canonicalize and dtune_machine_key
 * report through dtune_errmsg() only, and agree with the first versions'
 * calls (kept working, their err buffer too). */
static void test_one_error_style(void)
{
    char out[256], old[256], err[256];
    CU_ASSERT_EQUAL(dtune_canonicalize("dense(K=768, N=768, M=seq; seq=1..128)", out, sizeof out),
                    DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(out, "dense(M=1..128,N=768,K=768)");
    CU_ASSERT_STRING_EQUAL(dtune_errmsg(), "");
    CU_ASSERT_EQUAL(dtune_canonicalize("dense(M=1..128)", out, sizeof out), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dim N is missing"));
    CU_ASSERT_EQUAL(dtune_workload_canonical("dense(M=1..128)", old, sizeof old, err, sizeof err),
                    DTUNE_EINVAL);
    CU_ASSERT_STRING_EQUAL(err, dtune_errmsg()); /* the same message both ways */
    CU_ASSERT_EQUAL(dtune_canonicalize("dense(M=1..128,N=768,K=768)", out, 10), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "28 bytes needed"));
    CU_ASSERT_EQUAL(dtune_canonicalize(NULL, out, sizeof out), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dtune_canonicalize: key is NULL"));
    CU_ASSERT_EQUAL(dtune_canonicalize("dense(M=1..4,N=8,K=8)", NULL, 8), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_canonicalize("dense(M=1..4,N=8,K=8)", out, 0), DTUNE_EINVAL);

    CU_ASSERT_EQUAL(dtune_machine_key(out, sizeof out), DTUNE_OK);
    CU_ASSERT_EQUAL(dtune_target_key(old, sizeof old, NULL, 0), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(out, old);
    CU_ASSERT_EQUAL(dtune_machine_key(out, 4), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "too small"));
    CU_ASSERT_EQUAL(dtune_machine_key(NULL, 64), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dtune_machine_key: out is NULL"));
}

/* "dense(M=1..64,N=" + n '(' + "64" + n ')' + ",K=32)": a hostile key */
static char *deep_key(int n)
{
    char *k = malloc((size_t)n * 2 + 64), *q = k;
    q += sprintf(q, "dense(M=1..64,N=");
    memset(q, '(', (size_t)n);
    q += n;
    q += sprintf(q, "64");
    memset(q, ')', (size_t)n);
    q += n;
    sprintf(q, ",K=32)");
    return k;
}

typedef struct {
    int bad;
} deep_ctx;

/* Runs on a thread with a 256 KB stack (what some runtimes give their
 * compiler threads): keys nested to the limit work, deeper ones are refused. */
static void *deep_thread(void *arg)
{
    deep_ctx *c = arg;
    char out[256], err[512];
    char *k = deep_key(DT_EXPR_MAX_DEPTH);
    if (dtune_workload_canonical(k, out, sizeof out, err, sizeof err) != 0 ||
        strcmp(out, "dense(M=1..64,N=64,K=32)") != 0)
        c->bad++;
    free(k);
    int depths[] = {600, 100000};
    for (int i = 0; i < 2; i++) {
        k = deep_key(depths[i]);
        if (dtune_workload_canonical(k, out, sizeof out, err, sizeof err) != DTUNE_EINVAL ||
            !strstr(err, "nested too deeply"))
            c->bad++;
        dtune *db = NULL;
        dtune_schedule s;
        if (dtune_open(g_db, &db) != DTUNE_OK ||
            dtune_lookup(db, k, "M=2", NULL, 0, &s) != DTUNE_EINVAL ||
            !strstr(dtune_errmsg(), "nested too deeply"))
            c->bad++;
        dtune_close(db);
        free(k);
    }
    return NULL;
}

static void test_deep_keys_small_stack(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    CU_ASSERT_EQUAL_FATAL(pthread_attr_setstacksize(&a, 256 * 1024), 0);
    pthread_t th;
    deep_ctx c = {0};
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, &a, deep_thread, &c), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&a);
    CU_ASSERT_EQUAL(c.bad, 0);
}

static void test_target_key(void)
{
    char key[128], err[256];
    CU_ASSERT_EQUAL(dtune_target_key(key, sizeof key, err, sizeof err), 0);
    CU_ASSERT_TRUE(strlen(key) > 5);
    CU_ASSERT_PTR_NOT_NULL(strchr(key, '-'));
    CU_ASSERT_NOT_EQUAL(dtune_target_key(key, 4, err, sizeof err), 0);
}

/* ---- the dispatch cache ------------------------------------------------------ */

static void test_cache_lookup(void)
{
    dt_err e;
    dt_dispatch_cache *c = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_open(g_db, &c, &e), 0);
    CU_ASSERT_STRING_EQUAL(dt_dispatch_cache_local_target(c), g_tkey);
    dt_dispatch_cache_result r;
    dt_dispatch_query q = {.workload_key = KEY_SPELLED, .shape = "M=7", .threads = 1};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);
    CU_ASSERT_EQUAL(r.kernel_id, g_kid[0]);
    CU_ASSERT_STRING_EQUAL(r.workload_key, KEY);
    CU_ASSERT_STRING_EQUAL(r.target_key, g_tkey);
    CU_ASSERT_STRING_EQUAL(r.op, "dense");
    CU_ASSERT_STRING_EQUAL(r.sketch, "stream");
    CU_ASSERT_STRING_EQUAL(r.shape, "M=7");
    CU_ASSERT_STRING_EQUAL(r.range_lo, "M=1");
    CU_ASSERT_STRING_EQUAL(r.range_hi, "M=16");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.annotation, "\"mr\""));
    CU_ASSERT_EQUAL(r.extrapolated, 0);
    CU_ASSERT_EQUAL(r.threads, 1);
    CU_ASSERT_DOUBLE_EQUAL(r.predicted_ns, 100, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r.measured_ns, 110, 1e-9);
    /* by values; beyond the range: the nearest range, extrapolated */
    int64_t m = 1000;
    q = (dt_dispatch_query){.workload_key = KEY, .vals = &m, .nvals = 1, .threads = 1};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);
    CU_ASSERT_EQUAL(r.kernel_id, g_kid[1]);
    CU_ASSERT_EQUAL(r.extrapolated, 1);
    CU_ASSERT_TRUE(isnan(r.measured_ns));
    CU_ASSERT_STRING_EQUAL(r.shape, "M=1000");
    /* threads 0: the highest count with a schedule (2) */
    q = (dt_dispatch_query){.workload_key = KEY, .shape = "M=3", .target_key = g_tkey};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);
    CU_ASSERT_EQUAL(r.threads, 2);
    CU_ASSERT_EQUAL(r.kernel_id, g_kid[1]);
    uint64_t loads;
    dt_dispatch_cache_stats(c, &loads, NULL);
    CU_ASSERT_EQUAL(loads, 3);
    /* repeated lookups load nothing */
    for (int i = 1; i <= 64; i++) {
        char s[16];
        snprintf(s, sizeof s, "M=%d", i);
        q = (dt_dispatch_query){.workload_key = KEY_SPELLED, .shape = s, .threads = 1};
        CU_ASSERT_EQUAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);
        CU_ASSERT_EQUAL(r.kernel_id, g_kid[i > 16]);
    }
    dt_dispatch_cache_stats(c, &loads, NULL);
    CU_ASSERT_EQUAL(loads, 3);
    dt_dispatch_cache_close(c);
}

static void test_cache_errors(void)
{
    dt_err e;
    dt_dispatch_cache *c = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/missing.db", g_dir);
    CU_ASSERT_EQUAL(dt_dispatch_cache_open(path, &c, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_open(g_db, &c, &e), 0);
    dt_dispatch_cache_result r;
    struct {
        dt_dispatch_query q;
        int rc;
        const char *msg;
    } cases[] = {
        {{.workload_key = "dense(M=1..8,N=64,K=32)", .shape = "M=2"}, DT_ENOTFOUND,
         "has never been tuned"},
        {{.workload_key = KEY, .shape = "M=2", .target_key = "x86_64-avx2-64c-1K.1M.1M"},
         DT_ENOTFOUND, "target x86_64-avx2-64c-1K.1M.1M has never been tuned"},
        {{.workload_key = KEY, .shape = "M=2", .threads = 3}, DT_ENOTFOUND, "at 3 threads"},
        {{.workload_key = "dense(M=1..", .shape = "M=2"}, DT_EINVAL, NULL},
        {{.workload_key = KEY, .shape = "Q=2"}, DT_EINVAL, "not a variable"},
        {{.workload_key = KEY, .shape = "M=x"}, DT_EINVAL, "not an integer"},
        {{.workload_key = KEY, .shape = "M=0"}, DT_EINVAL, ">= 1"},
        {{.workload_key = KEY, .vals = NULL, .nvals = 2}, DT_EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int rep = 0; rep < 2; rep++) { /* the second time from the cached miss */
            CU_ASSERT_EQUAL(dt_dispatch_cache_lookup(c, &cases[i].q, &r, &e), cases[i].rc);
            if (cases[i].msg && !strstr(e.msg, cases[i].msg)) {
                fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, e.msg, cases[i].msg);
                CU_FAIL("error message");
            }
        }
    dt_dispatch_cache_close(c);
}

typedef struct {
    dt_dispatch_cache *c;
    int bad;
} thr_ctx;

static void *lookup_thread(void *arg)
{
    thr_ctx *t = arg;
    dt_err e;
    for (int i = 0; i < 20000; i++) {
        int64_t m = 1 + i % 80;
        dt_dispatch_cache_result r;
        dt_dispatch_query q = {.workload_key = (i & 1) ? KEY : KEY_SPELLED, .vals = &m,
                               .nvals = 1, .threads = 1};
        if (dt_dispatch_cache_lookup(t->c, &q, &r, &e) != 0 ||
            r.kernel_id != g_kid[m > 16] || r.extrapolated != (m > 64))
            t->bad++;
    }
    return NULL;
}

static void test_cache_threads(void)
{
    dt_err e;
    dt_dispatch_cache *c = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_open(g_db, &c, &e), 0);
    dt_dispatch_cache_set_check_interval(c, 0); /* exercise the checks as well */
    pthread_t th[4];
    thr_ctx ctx[4];
    for (int i = 0; i < 4; i++) {
        ctx[i] = (thr_ctx){c, 0};
        pthread_create(&th[i], NULL, lookup_thread, &ctx[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(ctx[i].bad, 0);
    }
    dt_dispatch_cache_close(c);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Another connection replaces the schedule: visible after the interval. */
static void test_cache_freshness(void)
{
    dt_err e;
    dt_dispatch_cache *c = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_open(g_db, &c, &e), 0);
    dt_dispatch_cache_result r;
    dt_dispatch_query q = {.workload_key = KEY, .shape = "M=40", .threads = 1};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);
    CU_ASSERT_EQUAL(r.kernel_id, g_kid[1]);

    dt_db *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(g_db, 0, &db, &e), 0);
    dt_db_schedule one[] = {{.shape_lo = "M=1", .shape_hi = "M=64", .kernel_id = g_kid[0],
                             .predicted_ns = 7, .measured_ns = 8}};
    CU_ASSERT_EQUAL_FATAL(put_schedule(db, g_wid, g_tid, 1, one, 1, &e), 0);
    sleep_ms(DT_DISPATCH_CACHE_CHECK_MS + 30);
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);
    CU_ASSERT_EQUAL(r.kernel_id, g_kid[0]);
    CU_ASSERT_DOUBLE_EQUAL(r.predicted_ns, 7, 1e-9);
    uint64_t changes;
    dt_dispatch_cache_stats(c, NULL, &changes);
    CU_ASSERT(changes >= 1);

    /* a cached miss turns into a hit once the schedule appears */
    q.threads = 4;
    CU_ASSERT_EQUAL(dt_dispatch_cache_lookup(c, &q, &r, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL_FATAL(put_schedule(db, g_wid, g_tid, 4, one, 1, &e), 0);
    sleep_ms(DT_DISPATCH_CACHE_CHECK_MS + 30);
    CU_ASSERT_EQUAL(dt_dispatch_cache_lookup(c, &q, &r, &e), 0);

    /* put the fixture back */
    dt_db_schedule rows[] = {
        {.shape_lo = "M=1", .shape_hi = "M=16", .kernel_id = g_kid[0], .predicted_ns = 100,
         .measured_ns = 110},
        {.shape_lo = "M=17", .shape_hi = "M=64", .kernel_id = g_kid[1], .predicted_ns = 300,
         .measured_ns = NAN},
    };
    CU_ASSERT_EQUAL(put_schedule(db, g_wid, g_tid, 1, rows, 2, &e), 0);
    CU_ASSERT_EQUAL(put_schedule(db, g_wid, g_tid, 4, NULL, 0, &e), 0);
    dt_db_close(db);
    dt_dispatch_cache_close(c);
}

/* ---- the public API ------------------------------------------------------------ */

static void test_open_errors(void)
{
    dtune *db = (dtune *)&g_dir; /* must be reset to NULL */
    char path[4096];
    snprintf(path, sizeof path, "%s/missing.db", g_dir);
    CU_ASSERT_EQUAL(dtune_open(path, &db), DTUNE_ENOTFOUND);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "missing.db"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "does not exist"));
    char *txt = dt_test_write_file(g_dir, "notes.txt", "this is not a database\n");
    CU_ASSERT_EQUAL(dtune_open(txt, &db), DTUNE_ENOTDTUNE);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "notes.txt"));
    free(txt);
    CU_ASSERT_EQUAL(dtune_open(NULL, &db), DTUNE_EINVAL);
    CU_ASSERT_STRING_EQUAL(dtune_errstr(DTUNE_ENOTFOUND), "not found");
    dtune_close(NULL);
    /* success clears the message */
    CU_ASSERT_EQUAL_FATAL(dtune_open(g_db, &db), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(dtune_errmsg(), "");
    dtune_close(db);
}

static void test_lookup(void)
{
    dtune *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_open(g_db, &db), DTUNE_OK);
    dtune_schedule s;
    CU_ASSERT_EQUAL_FATAL(dtune_lookup(db, KEY_SPELLED, "M=16", NULL, 1, &s), DTUNE_OK);
    CU_ASSERT_EQUAL(s.kernel_id, g_kid[0]);
    CU_ASSERT_EQUAL(s.extrapolated, 0);
    CU_ASSERT_STRING_EQUAL(s.workload, KEY);
    CU_ASSERT_STRING_EQUAL(s.target, g_tkey);
    CU_ASSERT_STRING_EQUAL(s.sketch, "stream");
    CU_ASSERT_STRING_EQUAL(s.range_hi, "M=16");
    CU_ASSERT_DOUBLE_EQUAL(s.measured_ns, 110, 1e-9);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.annotation, "\"sketch\":\"stream\""));
    /* in range vs extrapolated */
    CU_ASSERT_EQUAL_FATAL(dtune_lookup(db, KEY, "M=17", g_tkey, 1, &s), DTUNE_OK);
    CU_ASSERT_EQUAL(s.kernel_id, g_kid[1]);
    CU_ASSERT_EQUAL(s.extrapolated, 0);
    CU_ASSERT_EQUAL_FATAL(dtune_lookup(db, KEY, "M=65", g_tkey, 1, &s), DTUNE_OK);
    CU_ASSERT_EQUAL(s.kernel_id, g_kid[1]);
    CU_ASSERT_EQUAL(s.extrapolated, 1);
    CU_ASSERT_STRING_EQUAL(s.range_lo, "M=17");
    int64_t m = 2;
    CU_ASSERT_EQUAL_FATAL(dtune_lookup_values(db, KEY, &m, 1, NULL, 0, &s), DTUNE_OK);
    CU_ASSERT_EQUAL(s.threads, 2);
    CU_ASSERT_STRING_EQUAL(dtune_errmsg(), "");
    /* errors, each with a message that says what is missing */
    CU_ASSERT_EQUAL(dtune_lookup(db, "dense(M=1..64,N=64,K=33)", "M=2", NULL, 0, &s),
                    DTUNE_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(),
                                  "workload dense(M=1..64,N=64,K=33) has never been tuned"));
    CU_ASSERT_EQUAL(dtune_lookup(db, KEY, "M=2", "aarch64-generic-4c", 0, &s), DTUNE_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "target aarch64-generic-4c"));
    CU_ASSERT_EQUAL(dtune_lookup(db, KEY, "N=2", NULL, 0, &s), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "'N' is not a variable"));
    CU_ASSERT_EQUAL(dtune_lookup(db, "dense(", "M=2", NULL, 0, &s), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_lookup(db, KEY, NULL, NULL, 0, &s), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_lookup(db, KEY, "M=2", NULL, -1, &s), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_lookup_values(db, KEY, &m, 2, NULL, 0, &s), DTUNE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "2 values given"));
    dtune_close(db);
}

typedef struct {
    dtune *db;
    int id, bad;
} pub_ctx;

/* Even threads look up valid shapes, odd ones an unknown workload too: the
 * messages stay per thread. */
static void *pub_thread(void *arg)
{
    pub_ctx *t = arg;
    for (int i = 0; i < 5000; i++) {
        dtune_schedule s;
        int64_t m = 1 + (i * 7 + t->id) % 70;
        if (dtune_lookup_values(t->db, KEY, &m, 1, NULL, 1, &s) != DTUNE_OK ||
            s.kernel_id != g_kid[m > 16] || s.extrapolated != (m > 64) ||
            dtune_errmsg()[0] != '\0')
            t->bad++;
        if (t->id & 1) {
            if (dtune_lookup(t->db, "dense(M=1..64,N=64,K=31)", "M=1", NULL, 0, &s) !=
                    DTUNE_ENOTFOUND ||
                !strstr(dtune_errmsg(), "K=31"))
                t->bad++;
        } else if (dtune_errmsg()[0] != '\0') {
            t->bad++;
        }
    }
    return NULL;
}

static void test_lookup_threads(void)
{
    dtune *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_open(g_db, &db), DTUNE_OK);
    dtune_set_refresh_ms(db, 0);
    pthread_t th[4];
    pub_ctx ctx[4];
    for (int i = 0; i < 4; i++) {
        ctx[i] = (pub_ctx){db, i, 0};
        pthread_create(&th[i], NULL, pub_thread, &ctx[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(ctx[i].bad, 0);
    }
    dtune_close(db);
}

/* ---- a compiler running as another user ------------------------------------------ */

#define NOBODY 65534

/* Checks in a child process: print and fail with exit status 1. */
#define CHILD_CHECK(cond)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: in the child: %s (%s)\n", __FILE__, __LINE__, #cond, \
                    dtune_errmsg());                                                     \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

typedef struct {
    const char *path;
    int64_t before, after;  /* kernel of M=40 before and after the parent's change */
    int to_child[2], to_parent[2];
} other_ctx;

static bool side_file(const char *path, const char *suffix)
{
    char p[8192];
    struct stat sb;
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return stat(p, &sb) == 0;
}

/* Entries of dir owned by uid. */
static int files_owned_by(const char *dir, uid_t uid)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char p[8192];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (de->d_name[0] != '.' && lstat(p, &sb) == 0 && sb.st_uid == uid)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* As NOBODY: open, look up, read a kernel's source; then, after the parent
 * changed the schedule, see the change within the refresh interval. */
static int child_lookups(other_ctx *c)
{
    dtune *db = NULL;
    CHILD_CHECK(dtune_open(c->path, &db) == DTUNE_OK);
    bool had_wal = side_file(c->path, "-wal");
    dtune_schedule s;
    CHILD_CHECK(dtune_lookup(db, KEY_SPELLED, "M=40", NULL, 1, &s) == DTUNE_OK);
    CHILD_CHECK(s.kernel_id == c->before);
    CHILD_CHECK(dtune_lookup(db, KEY, "M=3", NULL, 1, &s) == DTUNE_OK);
    char *src = NULL;
    CHILD_CHECK(dtune_kernel_source(db, s.kernel_id, NULL, &src) == DTUNE_OK);
    CHILD_CHECK(strstr(src, "dtk_abi_version") != NULL);
    dtune_free(src);
    CHILD_CHECK(had_wal || !side_file(c->path, "-wal"));  /* created nothing */
    CHILD_CHECK(had_wal || !side_file(c->path, "-shm"));
    dt_test_signal_fd(c->to_parent[1]);
    CHILD_CHECK(dt_test_await_fd(c->to_child[0]));  /* the schedule changed */
    sleep_ms(DT_DISPATCH_CACHE_CHECK_MS + 50);
    CHILD_CHECK(dtune_lookup(db, KEY, "M=40", NULL, 1, &s) == DTUNE_OK);
    CHILD_CHECK(s.kernel_id == c->after);
    dtune_close(db);
    return 0;
}

/* Runs child_lookups as NOBODY while this process replaces the 1-thread
 * schedule of path by rows; the writer is open before the child starts (a
 * running daemon) or only after (the child starts from a stopped one). */
static int other_round(other_ctx *c, bool writer_first, const dt_db_schedule *rows, size_t n)
{
    dt_err e;
    dt_db *w = NULL;
    if (pipe(c->to_child) || pipe(c->to_parent))
        return -1;
    if (writer_first && dt_db_open(c->path, 0, &w, &e))
        return -2;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
            _exit(99);
        _exit(child_lookups(c));
    }
    close(c->to_child[0]);
    close(c->to_parent[1]);
    int rc = 0;
    if (!dt_test_await_fd(c->to_parent[0]))
        rc = -3;
    if (!rc && !w && dt_db_open(c->path, 0, &w, &e))
        rc = -4;
    if (!rc && put_schedule(w, 1, 1, 1, rows, n, &e))
        rc = -5;
    dt_test_signal_fd(c->to_child[1]);
    int st = -1;
    waitpid(pid, &st, 0);
    dt_db_close(w);
    close(c->to_child[1]);
    close(c->to_parent[0]);
    if (rc)
        return rc;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The store in a 0755 directory of its owner (root here), read through the
 * public API by another uid: with the daemon stopped, and running. */
static void test_open_as_other_uid(void)
{
    if (geteuid() != 0) {
        dt_test_skip("switching uids needs root");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(chmod(g_dir, 0755), 0);
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/svc", g_dir);
    snprintf(path, sizeof path, "%s/t.db", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
    CU_ASSERT_EQUAL_FATAL(chmod(dir, 0755), 0);
    int64_t wid, tid;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(make_db(path, &wid, &tid, &e), 0);
    CU_ASSERT_EQUAL_FATAL(wid, 1);
    CU_ASSERT_EQUAL_FATAL(tid, 1);
    CU_ASSERT_FALSE(side_file(path, "-wal"));
    dt_db_schedule one[] = {{.shape_lo = "M=1", .shape_hi = "M=64", .kernel_id = g_kid[0],
                             .predicted_ns = 7, .measured_ns = 8}};
    dt_db_schedule two[] = {
        {.shape_lo = "M=1", .shape_hi = "M=16", .kernel_id = g_kid[0], .predicted_ns = 100},
        {.shape_lo = "M=17", .shape_hi = "M=64", .kernel_id = g_kid[1], .predicted_ns = 300},
    };
    /* the daemon is stopped when the compiler opens the store */
    other_ctx c = {.path = path, .before = g_kid[1], .after = g_kid[0]};
    CU_ASSERT_EQUAL(other_round(&c, false, one, 1), 0);
    /* the daemon is running */
    c = (other_ctx){.path = path, .before = g_kid[0], .after = g_kid[1]};
    CU_ASSERT_EQUAL(other_round(&c, true, two, 2), 0);
    CU_ASSERT_EQUAL(files_owned_by(dir, NOBODY), 0);
}

/* Permission errors are I/O errors with the reason, not "not a dtune database". */
static void test_open_errors_other_uid(void)
{
    if (geteuid() != 0) {
        dt_test_skip("switching uids needs root");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(chmod(g_dir, 0755), 0);
    char path[4300];
    snprintf(path, sizeof path, "%s/svc/t.db", g_dir);
    CU_ASSERT_EQUAL_FATAL(chmod(path, 0600), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
            _exit(99);
        dtune *db = (dtune *)&g_dir;
        int rc = dtune_open(path, &db);
        const char *m = dtune_errmsg();
        if (rc != DTUNE_EIO || db != NULL || !strstr(m, "Permission denied") ||
            strstr(m, "not a dtune database")) {
            fprintf(stderr, "dtune_open as another uid: %d: %s\n", rc, m);
            _exit(1);
        }
        _exit(0);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CU_ASSERT_EQUAL(chmod(path, 0644), 0);
}

/* Runs a shell command; returns its exit status (-1 if it did not run). */
static int sh(const char *cmd)
{
    int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_kernel_source(void)
{
    dt_err e;
    dtune *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_open(g_db, &db), DTUNE_OK);
    char *src = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_source(db, g_kid[0], NULL, &src), DTUNE_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(src, "dtk_abi_version"));
    CU_ASSERT_PTR_NOT_NULL(strstr(src, "dtk_pack"));
    CU_ASSERT_PTR_NOT_NULL(strstr(src, "dtk_dense"));
    /* it is C the compiler accepts */
    char *c = dt_test_write_file(g_dir, "k.c", src);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cc -fsyntax-only -O2 -march=native -fopenmp '%s'", c);
    CU_ASSERT_EQUAL(sh(cmd), 0);
    free(c);
    /* the row decides: its own workload gives the same source, another
     * epilogue is refused (that would be another kernel) */
    char *same = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_kernel_source(db, g_kid[0], KEY_SPELLED, &same), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(src, same);
    dtune_free(same);
    char *bias = NULL;
    CU_ASSERT_EQUAL(dtune_kernel_source(db, g_kid[0],
                                        "dense(M=1..64,N=64,K=32,epilogue=bias+relu)", &bias),
                    DTUNE_EINVAL);
    CU_ASSERT_PTR_NULL(bias);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "epilogue=none"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "epilogue=bias+relu"));
    dtune_free(src);
    CU_ASSERT_EQUAL(dtune_kernel_source(db, 999999, NULL, &src), DTUNE_ENOTFOUND);
    CU_ASSERT_PTR_NULL(src);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "no kernel 999999"));
    CU_ASSERT_EQUAL(dtune_kernel_source(db, g_kid[0], "batch_matmul(batch=2,M=1..8,N=8,K=8)",
                                        &src), DTUNE_EINVAL);
    dtune_close(db);

    /* one sketch and annotation with two epilogues: two rows, each its source */
    char path[4096];
    snprintf(path, sizeof path, "%s/two.db", g_dir);
    dt_db *h = NULL;
    dt_target tg;
    dt_rng r;
    dt_annotation a;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &h, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&tg, &e), 0);
    dt_rng_seed(&r, 5);
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &tg, -1, 1, &a, &e), 0);
    char *ann = dt_annotation_to_string(&a);
    int64_t kid[2];
    const char *epi[2] = {"none", "bias+gelu"};
    char *want[2];
    for (int i = 0; i < 2; i++) {
        dt_kernel_op kop = {.op = dt_op_find("dense")};
        kop.attrs[0] = dt_attr_value_index(&kop.op->attrs[0], epi[i]);
        char *attrs = dt_kernel_op_attrs_json(&kop);
        CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, &a, &want[i], &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern_attrs(h, "dense", "f32", attrs,
                                                        dt_sketch_name(a.sketch), ann, NULL,
                                                        &kid[i], &e), 0);
        free(attrs);
    }
    CU_ASSERT_NOT_EQUAL(kid[0], kid[1]);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL_FATAL(dt_export_kernel_source(h, kid[i], &src, &e), 0);
        CU_ASSERT_STRING_EQUAL(src, want[i]);
        free(src);
        free(want[i]);
    }
    CU_ASSERT_STRING_NOT_EQUAL(epi[0], epi[1]);
    CU_ASSERT_EQUAL(dt_export_kernel_source(h, kid[1] + 1, &src, &e), DT_ENOTFOUND);
    free(ann);
    dt_db_close(h);
}

/* ---- a schema-1 database made by the previous dtune (tests/data/v1) ---------- */

#define V1_TARGET "x86_64-avx512-2c-32K.1M.32M"

static char *v1_copy(const char *name)
{
    char src[4096], *dst = malloc(4096), cmd[8192 + 64];
    snprintf(src, sizeof src, "%s/tests/data/v1/v1.db", DTUNE_SOURCE_DIR);
    snprintf(dst, 4096, "%s/%s", g_dir, name);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
    CU_ASSERT_EQUAL(sh(cmd), 0);
    return dst;
}

/* The hash sources.txt gives for (v1 kernel id, workload key or "-"), or NULL. */
static const char *v1_hash(char lines[][3][256], int n, int64_t id, const char *key)
{
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    for (int i = 0; i < n; i++)
        if (!strcmp(lines[i][0], ids) && !strcmp(lines[i][1], key))
            return lines[i][2];
    return NULL;
}

/* Reads a `<v1 kernel id> <workload key or -> <hash>` file of tests/data/v1/. */
static int v1_read_hashes(const char *name, char lines[][3][256], int max)
{
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/tests/data/v1/%s", DTUNE_SOURCE_DIR, name);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *a = line, *c = strrchr(line, ' '), *b = strchr(line, ' ');
        CU_ASSERT_FATAL(b != NULL && c != NULL && b != c);
        *b++ = 0;
        *c++ = 0;
        snprintf(lines[n][0], 256, "%s", a);
        snprintf(lines[n][1], 256, "%s", b);
        snprintf(lines[n][2], 256, "%s", c);
        n++;
    }
    fclose(f);
    return n;
}

static void test_v1_migration(void)
{
    /* sources.txt: what v1 gave (and stored as source_hash); sources-now.txt:
     * what this dtune gives for the same pairs since the templates became
     * dtype-generic (tests/data/v1/README.md) */
    static char lines[128][3][256], now[128][3][256];
    char path[4096], buf[1024];
    int n = v1_read_hashes("sources.txt", lines, 128);
    CU_ASSERT_EQUAL_FATAL(n, 60);
    int nn = v1_read_hashes("sources-now.txt", now, 128);
    CU_ASSERT_FATAL(nn > 24);
    FILE *f;

    /* a read-only open cannot migrate: it refuses, and says what to run */
    char *db1 = v1_copy("v1.db");
    dtune *db = NULL;
    CU_ASSERT_EQUAL(dtune_open(db1, &db), DTUNE_EVERSION);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "schema version 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "dtune db init"));

    /* a writer's open migrates it in place */
    dt_err e;
    dt_db *w = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(db1, 0, &w, &e), 0);
    CU_ASSERT_EQUAL(dt_db_opened_version(w), 1);
    CU_ASSERT_EQUAL(dt_db_schema_version(w), DT_DB_SCHEMA_VERSION);
    /* every row has its op's attributes; v1's 24 rows keep their ids, the 12
     * dense kernels both epilogues used get a second row (25..36) */
    int64_t nk = 0;
    for (int64_t id = 1;; id++) {
        dt_db_kernel k;
        int rc = dt_db_kernel_get(w, id, &k, &e);
        if (rc == DT_ENOTFOUND)
            break;
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        nk = id;
        CU_ASSERT_STRING_EQUAL(k.dtype, "f32");
        dt_kernel_op kop;
        CU_ASSERT_EQUAL(dt_kernel_op_from_row(k.op, k.dtype, k.attrs, &kop, &e), 0);
        CU_ASSERT(strstr(k.attrs, !strcmp(k.op, "dense") ? "\"epilogue\":" : "\"layout\":") !=
                  NULL);
        CU_ASSERT((id <= 24) == (k.source_hash != NULL));
        if (id <= 24) {
            /* v1's rows: the source v1 gave without a workload, and the hash
             * v1 stored is that source's */
            char *src = NULL, hash[65];
            CU_ASSERT_EQUAL_FATAL(dt_export_kernel_source(w, id, &src, &e), 0);
            const char *p = src;
            dt_hash_strings(&p, 1, hash);
            const char *want = v1_hash(now, nn, id, "-");
            if (!want || strcmp(hash, want)) /* for tests/data/v1/README.md's refresh */
                fprintf(stderr, "\n  sources-now: %s -> %s\n", want ? want : "?", hash);
            CU_ASSERT(want != NULL && !strcmp(hash, want));
            /* the row keeps the hash v1 stored (informational since schema 2) */
            CU_ASSERT_STRING_EQUAL(v1_hash(lines, n, id, "-"), k.source_hash);
            free(src);
        }
        dt_db_kernel_free(&k);
    }
    CU_ASSERT_EQUAL(nk, 36);
    dt_db_close(w);

    /* read-only now: every (kernel, workload) v1 paired has a v2 kernel whose
     * source alone is what v1 gave for the pair; lookups give it */
    CU_ASSERT_EQUAL_FATAL(dtune_open(db1, &db), DTUNE_OK);
    snprintf(path, sizeof path, "%s/tests/data/v1/lookups.txt", DTUNE_SOURCE_DIR);
    f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int nl = 0, two = 0;
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = 0;
        char *key = buf, *shape = strchr(buf, '\t'), *v1id;
        *shape++ = 0;
        v1id = strchr(shape, '\t');
        *v1id++ = 0;
        dtune_schedule s;
        CU_ASSERT_EQUAL_FATAL(dtune_lookup(db, key, shape, V1_TARGET, 0, &s), DTUNE_OK);
        char *src = NULL, hash[65];
        CU_ASSERT_EQUAL_FATAL(dtune_kernel_source(db, s.kernel_id, NULL, &src), DTUNE_OK);
        const char *p = src;
        dt_hash_strings(&p, 1, hash);
        const char *want = v1_hash(now, nn, atoll(v1id), key);
        if (!want || strcmp(hash, want))
            fprintf(stderr, "\n  sources-now: %s -> %s\n", want ? want : "?", hash);
        CU_ASSERT(want != NULL && !strcmp(hash, want));
        dtune_free(src);
        /* the workload it was looked up for agrees with the row */
        CU_ASSERT_EQUAL(dtune_kernel_source(db, s.kernel_id, key, &src), DTUNE_OK);
        dtune_free(src);
        /* v1 kernel 8 serves both epilogues at M=1: now two kernels, two sources */
        if (!strcmp(shape, "M=1") && atoll(v1id) == 8) {
            two++;
            CU_ASSERT_EQUAL(s.kernel_id, strstr(key, "epilogue") ? 32 : 8);
        }
        nl++;
    }
    fclose(f);
    CU_ASSERT_EQUAL(nl, 27);
    CU_ASSERT_EQUAL(two, 2);
    CU_ASSERT_STRING_NOT_EQUAL(v1_hash(lines, n, 8, "dense(M=1..8,N=32,K=32)"),
                               v1_hash(lines, n, 8, "dense(M=1..8,N=32,K=32,epilogue=bias+gelu)"));
    /* kernel 8 is the epilogue-free one: the gelu workload no longer fits it */
    char *src = NULL;
    CU_ASSERT_EQUAL(dtune_kernel_source(db, 8, "dense(M=1..8,N=32,K=32,epilogue=bias+gelu)",
                                        &src), DTUNE_EINVAL);
    dtune_close(db);
    free(db1);
}

static void test_export(void)
{
    dtune *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_open(g_db, &db), DTUNE_OK);
    char c[4096], cmd[8192];
    snprintf(c, sizeof c, "%s/dense_small.c", g_dir);
    if (dtune_export(db, KEY_SPELLED, NULL, 1, c) != DTUNE_OK)
        fprintf(stderr, "dtune_export: %s\n", dtune_errmsg());
    char *h = NULL;
    snprintf(cmd, sizeof cmd, "%s/dense_small.h", g_dir);
    h = dt_test_slurp(cmd);
    CU_ASSERT_PTR_NOT_NULL(strstr(h, "dense_small_pack"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h, "dense_small_packed_size"));
    free(h);
    snprintf(cmd, sizeof cmd, "cc -c -O1 -march=native -fopenmp '%s' -o '%s/dense_small.o'", c,
             g_dir);
    CU_ASSERT_EQUAL(sh(cmd), 0);
    CU_ASSERT_EQUAL(dtune_export(db, "dense(M=1..64,N=64,K=30)", NULL, 0, c), DTUNE_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "K=30"));
    snprintf(c, sizeof c, "%s/9-not-a-name.c", g_dir);
    CU_ASSERT_EQUAL(dtune_export(db, KEY, NULL, 0, c), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(dtune_export(db, KEY, NULL, -1, c), DTUNE_EINVAL);
    dtune_close(db);
}

/* What examples/README.md tells a compiler engineer: install, then build
 * examples/query.c with pkg-config only, and run it. */
static void test_install_and_pkg_config(void)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "set -e; P='%s/prefix'; "
             "'%s' --install '%s' --prefix \"$P\" --component libdtune >'%s/install.log' 2>&1; "
             "test -f \"$P/include/dtune/dtune.h\"; "
             /* the library exports dtune_* and nothing else */
             "test -z \"$(nm -D --defined-only \"$(find \"$P\" -name libdtune.so)\" | "
             "  awk '$3 !~ /^dtune_/ {print $3}')\"; "
             "PC=$(dirname \"$(find \"$P\" -name dtune.pc)\"); "
             "cc -O2 %s '%s/examples/query.c' -o '%s/query' "
             "  $(PKG_CONFIG_PATH=\"$PC\" pkg-config --cflags --libs dtune); "
             "LD_LIBRARY_PATH=\"$PC/..\" '%s/query' '%s' '" KEY_SPELLED "' M=3 M=40 M=99 "
             "  >'%s/query.out'",
             g_dir, DTUNE_CMAKE, DTUNE_BUILD_DIR, g_dir,
#ifdef DTUNE_TEST_SANITIZE
             "-fsanitize=address,undefined",
#else
             "",
#endif
             DTUNE_SOURCE_DIR, g_dir, g_dir, g_db, g_dir);
    CU_ASSERT_EQUAL_FATAL(sh(cmd), 0);
    char out_path[4096];
    snprintf(out_path, sizeof out_path, "%s/query.out", g_dir);
    char *out = dt_test_slurp(out_path);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "M=3 -> kernel"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "M=99 -> kernel"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "extrapolated"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "exports dtk_abi_version"));
    free(out);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"version", test_version},
        {"hostile nested keys on a 256 KB stack", test_deep_keys_small_stack},
        {"workload keys are canonicalized", test_workload_canonical},
        {"one error style: dtune_canonicalize, dtune_machine_key", test_one_error_style},
        {"target key of this machine", test_target_key},
        {"cache: lookup in range, extrapolated, by values, threads 0", test_cache_lookup},
        {"cache: missing file, unknown workload/target/threads, bad shapes", test_cache_errors},
        {"cache: four threads at once", test_cache_threads},
        {"cache: a schedule replaced elsewhere becomes visible", test_cache_freshness},
        {"dtune_open: missing file, not a dtune file, errmsg", test_open_errors},
        {"dtune_lookup: in range, extrapolated, by values, errors", test_lookup},
        {"dtune_lookup from four threads, errmsg per thread", test_lookup_threads},
        {"another uid, no write access: open, lookup, source, freshness",
         test_open_as_other_uid},
        {"another uid: permission denied is DTUNE_EIO", test_open_errors_other_uid},
        {"dtune_kernel_source: ABI symbols, compiles, attributes", test_kernel_source},
        {"dtune_export: C file and header that compile; errors", test_export},
        {"a schema-1 file of the previous dtune: migrated, same sources", test_v1_migration},
        {"cmake --install + pkg-config build of examples/query.c", test_install_and_pkg_config},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"libdtune", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
