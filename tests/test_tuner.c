/* The tuner: dispatch tables, a small real tune whose schedule covers every
 * shape with verified kernels, resuming, and the per-shape strategy. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "db/db.h"
#include "dt_test.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/reference.h"
#include "dispatch/dispatch.h"
#include "tuner/tune.h"

static char *dir;

static int setup(void)
{
    dir = dt_test_tmpdir();
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("DTUNE_CACHE_DIR", cache, 1);
    return dir ? 0 : 1;
}

static int teardown(void)
{
    dt_test_rmtree(dir);
    free(dir);
    return 0;
}

static void test_dispatch_lookup(void)
{
    dt_workload *w = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key("dense(M={5,24,43,62},N=64,K=64)", &w, &e), 0);
    dt_db_schedule rows[] = {
        {.shape_lo = "M=43", .shape_hi = "M=62", .kernel_id = 3, .predicted_ns = 5,
         .measured_ns = 6},
        {.shape_lo = "M=5", .shape_hi = "M=24", .kernel_id = 2, .predicted_ns = NAN,
         .measured_ns = 1},
    };
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, rows, 2, &d, &e), 0);
    CU_ASSERT_EQUAL(d->n, 2);
    CU_ASSERT_EQUAL(d->r[0].kernel_id, 2); /* sorted */
    struct {
        int64_t m, kernel;
        int extrapolated;
    } cases[] = {{5, 2, 0}, {24, 2, 0}, {43, 3, 0}, {62, 3, 0}, {1, 2, 1},
                 {30, 2, 1}, {40, 3, 1}, {63, 3, 1}, {4096, 3, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_dispatch_hit hit;
        CU_ASSERT_EQUAL_FATAL(dt_dispatch_find(d, &cases[i].m, &hit), 0);
        CU_ASSERT_EQUAL(hit.range->kernel_id, cases[i].kernel);
        CU_ASSERT_EQUAL(hit.extrapolated, cases[i].extrapolated);
    }
    dt_dispatch_free(d);

    /* overlapping, reversed, foreign shapes are refused */
    dt_db_schedule bad[] = {{.shape_lo = "M=5", .shape_hi = "M=43", .kernel_id = 1},
                            {.shape_lo = "M=24", .shape_hi = "M=62", .kernel_id = 2}};
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 2, &d, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "overlap"));
    bad[0].shape_lo = "M=62";
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 1, &d, &e), DT_EINVAL);
    bad[0].shape_lo = "M=7";
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 1, &d, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not in the workload's shape set"));
    /* an empty table finds nothing */
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, NULL, 0, &d, &e), 0);
    dt_dispatch_hit hit;
    int64_t m = 5;
    CU_ASSERT_EQUAL(dt_dispatch_find(d, &m, &hit), DT_ENOTFOUND);
    dt_dispatch_free(d);
    dt_workload_free(w);
}

/* Builds and verifies the kernel with db id kid on dense(M, N, K). */
static int verify_db_kernel(dt_db *db, int64_t kid, const dt_workload *w, int64_t M, int64_t N,
                            int64_t K, int threads)
{
    dt_err e;
    dt_db_kernel row;
    if (dt_db_kernel_get(db, kid, &row, &e))
        return -1;
    dt_annotation a;
    int rc = dt_annotation_from_text(row.annotation, &a, &e);
    dt_db_kernel_free(&row);
    if (rc)
        return -1;
    dt_kernel_op kop = {.op = w->op};
    memcpy(kop.attrs, w->attrs, sizeof kop.attrs);
    char *src = NULL;
    dt_builder b;
    dt_build_result br = {0};
    dt_kernel k;
    if (dt_codegen(&kop, &a, &src, &e) || dt_builder_init(&b, NULL, NULL, NULL, &e) ||
        dt_build_one(&b, src, &br, &e) || br.status != DT_BUILD_OK ||
        dt_kernel_load(br.so_path, &k, &e)) {
        free(src);
        dt_build_result_free(&br);
        return -1;
    }
    rc = dt_verify_kernel(&k, &kop, 1, M, N, K, threads, 7, &e);
    dt_kernel_unload(&k);
    free(src);
    dt_build_result_free(&br);
    return rc;
}

static int tune_key(const char *key, const char *db_path, dt_strategy st, int64_t trials,
                    dt_tune_result *r, dt_task *t)
{
    dt_err e;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_workload *w = NULL;
    dt_db *db = NULL;
    if (dt_target_detect(&tg, &e) || dt_target_key(&tg, tkey, sizeof tkey) ||
        dt_workload_parse_key(key, &w, &e) || dt_task_init(t, "t", w, 1, 1, &e) ||
        dt_db_open(db_path, DT_DB_CREATE, &db, &e)) {
        dt_workload_free(w);
        return -1;
    }
    dt_tune_opts o;
    dt_tune_opts_default(&o);
    o.trials = trials;
    o.strategy = st;
    o.meas.min_time_s = 0.0005;
    o.meas.runner_exe = DTUNE_BIN;
    o.search.kernels_per_round = 4;
    o.search.candidates = 64;
    int rc = dt_tune(db, &tg, tkey, t, 1, &o, r, &e);
    if (rc)
        fprintf(stderr, "tune failed: %s\n", e.msg);
    dt_db_close(db);
    dt_workload_free(w);
    return rc;
}

static void test_small_tune_covers_and_verifies(void)
{
    const char *key = "dense(M=1..12,N=40,K=24,epilogue=bias+relu)";
    char path[4096];
    snprintf(path, sizeof path, "%s/small.db", dir);
    dt_tune_result r;
    dt_task t;
    CU_ASSERT_EQUAL_FATAL(tune_key(key, path, DT_STRATEGY_JOINT, 40, &r, &t), 0);
    CU_ASSERT(r.trials_new > 0);
    CU_ASSERT(r.trials_total <= 40);
    CU_ASSERT(r.sel[0].ranges >= 1);
    CU_ASSERT(t.trials == r.trials_total);
    dt_task_free(&t);

    dt_err e;
    dt_db *db = NULL;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&tg, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&tg, tkey, sizeof tkey), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, key, tkey, 0, &d, &e), 0);
    CU_ASSERT_EQUAL(d->threads, 1);
    /* the ranges cover the whole set, in order, without gaps */
    CU_ASSERT_EQUAL(d->r[0].lo, 0);
    CU_ASSERT_EQUAL(d->r[d->n - 1].hi, 11);
    for (int i = 1; i < d->n; i++)
        CU_ASSERT_EQUAL(d->r[i].lo, d->r[i - 1].hi + 1);
    /* every dispatched kernel is right on every shape, extrapolated ones too */
    for (int64_t m = 1; m <= 20; m++) {
        dt_dispatch_hit hit;
        CU_ASSERT_EQUAL_FATAL(dt_dispatch_find(d, &m, &hit), 0);
        CU_ASSERT_EQUAL(hit.extrapolated, m > 12);
        CU_ASSERT_EQUAL(verify_db_kernel(db, hit.range->kernel_id, d->w, m, 40, 24, 1), 0);
        if (m <= 12)
            CU_ASSERT_TRUE(isfinite(hit.range->measured_ns));
    }
    dt_dispatch_free(d);
    dt_db_close(db);

    /* resuming a finished tune measures nothing new and keeps the schedule */
    CU_ASSERT_EQUAL_FATAL(tune_key(key, path, DT_STRATEGY_JOINT, 40, &r, &t), 0);
    CU_ASSERT_EQUAL(r.trials_new, 0);
    CU_ASSERT(t.resumed > 0);
    dt_task_free(&t);
}

static void test_per_shape_and_random(void)
{
    const char *key = "dense(M={3,9},N=32,K=32)";
    char path[4096];
    dt_tune_result r;
    dt_task t;
    snprintf(path, sizeof path, "%s/ps.db", dir);
    CU_ASSERT_EQUAL_FATAL(tune_key(key, path, DT_STRATEGY_PER_SHAPE, 16, &r, &t), 0);
    /* per-shape: an equal share per shape, no selection trials */
    int64_t on[2] = {0, 0};
    for (int k = 0; k < t.nk; k++)
        for (int i = 0; i < t.k[k].nm; i++)
            on[t.k[k].m[i].shape]++;
    CU_ASSERT_EQUAL(on[0], 8);
    CU_ASSERT_EQUAL(on[1], 8);
    CU_ASSERT_EQUAL(r.sel[0].trials, 0);
    dt_task_free(&t);
    snprintf(path, sizeof path, "%s/rnd.db", dir);
    CU_ASSERT_EQUAL_FATAL(tune_key(key, path, DT_STRATEGY_RANDOM, 12, &r, &t), 0);
    CU_ASSERT(r.trials_total <= 12);
    CU_ASSERT(r.sel[0].ranges >= 1);
    dt_task_free(&t);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"dispatch table lookup and extrapolation", test_dispatch_lookup},
        {"small joint tune: full cover, verified kernels, resume", test_small_tune_covers_and_verifies},
        {"per-shape and random strategies", test_per_shape_and_random},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"tuner", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
