/* libdtune: the public API as a compiler would call it (include/dtune/dtune.h,
 * through the shared library), and the dispatch cache under it
 * (dispatch/cache.h).  The schedules are written with the db API, so the
 * suite needs no tuning run. */
#include <dtune/dtune.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/target.h"
#include "db/db.h"
#include "dispatch/cache.h"
#include "sketch/annotation.h"
#include "sketch/workload.h"
#include "tests/dt_test.h"

#define KEY "dense(M=1..64,N=64,K=32)"
#define KEY_SPELLED "dense(K=32, N=64, M=seq; seq=1..64)"

static char *g_dir;
static char g_db[4096];
static char g_tkey[DT_TARGET_KEY_MAX];
static int64_t g_kid[2];

/* ---- fixture: a database with a schedule for this machine ------------------- */

static int add_kernel(dt_db *db, const dt_target *tg, int sketch, uint64_t seed, int64_t *id,
                      dt_err *e)
{
    dt_rng r;
    dt_rng_seed(&r, seed);
    dt_annotation a;
    int rc = dt_annotation_sample(&r, tg, sketch, 1, &a, e);
    if (rc)
        return rc;
    char *ann = dt_annotation_to_string(&a);
    rc = dt_db_kernel_intern(db, "dense", dt_sketch_name(a.sketch), ann, NULL, id, e);
    free(ann);
    return rc;
}

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
        (rc = add_kernel(db, &tg, DT_SKETCH_STREAM, 1, &g_kid[0], e)) ||
        (rc = add_kernel(db, &tg, DT_SKETCH_BLOCKED, 2, &g_kid[1], e)))
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
    g_dir = dt_test_tmpdir();
    if (!g_dir)
        return 1;
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    setenv("DTUNE_CACHE_DIR", cache, 1);
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

int main(void)
{
    CU_TestInfo tests[] = {
        {"version", test_version},
        {"workload keys are canonicalized", test_workload_canonical},
        {"target key of this machine", test_target_key},
        {"cache: lookup in range, extrapolated, by values, threads 0", test_cache_lookup},
        {"cache: missing file, unknown workload/target/threads, bad shapes", test_cache_errors},
        {"cache: four threads at once", test_cache_threads},
        {"cache: a schedule replaced elsewhere becomes visible", test_cache_freshness},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"libdtune", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
