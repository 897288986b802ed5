/* The tuner: dispatch tables, the measurement session (batches planned on
 * hand-made trials; a local run that records every trial exactly once,
 * interns its kernels once, keeps shapes as values, and records failed
 * trials as data), a small real tune whose schedule covers every shape with
 * verified kernels, resuming, the per-shape strategy, the budget split on
 * hand-made cases (minimums, reserve, first rounds, selection shares), and
 * small multi-workload tunes: a tight budget schedules every workload, one
 * below the minimum is refused, and a workload left without trials is
 * skipped while the others are stored. */
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

/* ---- the measurement session ------------------------------------------------------ */

static void test_measurer_plan(void)
{
    /* kernels in trial order: 2 0 2 1 0 2 2 */
    dt_mtrial t[7] = {{.kernel = 2}, {.kernel = 0}, {.kernel = 2}, {.kernel = 1},
                      {.kernel = 0}, {.kernel = 2}, {.kernel = 2}};
    int b[7];
    /* one batch per kernel, in the order of first appearance */
    CU_ASSERT_EQUAL(dt_measurer_plan(t, 7, 0, b), 3);
    int want1[7] = {0, 1, 0, 2, 1, 0, 0};
    for (int i = 0; i < 7; i++)
        CU_ASSERT_EQUAL(b[i], want1[i]);
    /* at most 2 trials a batch: kernel 2's four trials take batches 0 and 1 */
    CU_ASSERT_EQUAL(dt_measurer_plan(t, 7, 2, b), 4);
    int want2[7] = {0, 2, 0, 3, 2, 1, 1};
    for (int i = 0; i < 7; i++)
        CU_ASSERT_EQUAL(b[i], want2[i]);
    /* one trial a batch: in order within each kernel */
    CU_ASSERT_EQUAL(dt_measurer_plan(t, 7, 1, b), 7);
    int want3[7] = {0, 4, 1, 6, 5, 2, 3};
    for (int i = 0; i < 7; i++)
        CU_ASSERT_EQUAL(b[i], want3[i]);
    CU_ASSERT_EQUAL(dt_measurer_plan(t, 0, 0, b), 0);
    t[3].kernel = -1;
    CU_ASSERT_EQUAL(dt_measurer_plan(t, 7, 0, b), DT_EINVAL);
}

typedef struct {
    int n;
    char uid[16][DT_TRIAL_UID_LEN + 1];
    char shape[16][128];
    int64_t kernel[16];
    int ok;
} rec_list;

static int collect_rec(const dt_db_measurement *m, void *ud)
{
    rec_list *l = ud;
    if (l->n < 16) {
        snprintf(l->uid[l->n], sizeof l->uid[0], "%s", m->trial_uid);
        snprintf(l->shape[l->n], sizeof l->shape[0], "%s", m->shape);
        l->kernel[l->n++] = m->kernel_id;
    }
    l->ok += m->status == DT_TRIAL_OK;
    return 0;
}

/* A session of two kernels on interleaved shapes, run locally: every trial
 * recorded once under its uid, each kernel interned once. */
static void test_measurer_records_once(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/session.db", dir);
    dt_err e;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_workload *w = NULL;
    dt_db *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&tg, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&tg, tkey, sizeof tkey), 0);
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key("dense(M=1..8,N=16,K=16)", &w, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    dt_measurer_opts o = {.min_time_s = 0.0005, .runner_exe = DTUNE_BIN, .seed = 3};
    dt_measurer *m = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_measurer_open(&o, db, &tg, tkey, &m, &e), 0);

    dt_rng rng;
    dt_rng_seed(&rng, 11);
    dt_mkernel k[2];
    memset(k, 0, sizeof k);
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &tg, -1, 1, &k[i].a, &e), 0);
    /* (kernel, M): interleaved, and M = 40 outside the domain (any kernel
     * runs any shape) */
    static const int plan[5][2] = {{0, 1}, {1, 1}, {0, 3}, {1, 5}, {0, 40}};
    dt_mtrial t[5];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 5; i++) {
        t[i].kernel = plan[i][0];
        t[i].shape[0] = plan[i][1];
        t[i].threads = 1;
    }
    dt_mrun r = {.w = w, .kernels = k, .nk = 2, .trials = t, .n = 5};
    int rc = dt_measurer_measure(m, &r, &e);
    if (rc)
        fprintf(stderr, "\n  measure: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT(r.workload_id > 0);
    CU_ASSERT(k[0].id > 0 && k[1].id > 0 && k[0].id != k[1].id);
    CU_ASSERT_EQUAL(strlen(k[0].source_hash), 64);
    CU_ASSERT_EQUAL(dt_measurer_trials(m), 5);
    for (int i = 0; i < 5; i++) {
        char want[16];
        snprintf(want, sizeof want, "M=%d", plan[i][1]);
        CU_ASSERT_STRING_EQUAL(t[i].text, want);
        CU_ASSERT(t[i].got && t[i].recorded && !t[i].already);
        CU_ASSERT_EQUAL(t[i].res.status, DT_TRIAL_OK);
        CU_ASSERT(t[i].res.min_ns > 0);
        CU_ASSERT_EQUAL(strlen(t[i].uid), DT_TRIAL_UID_LEN);
        for (int j = 0; j < i; j++)
            CU_ASSERT(strcmp(t[i].uid, t[j].uid) != 0);
    }
    rec_list l = {0};
    dt_db_measurement_filter f = {.workload_id = r.workload_id};
    CU_ASSERT_EQUAL(dt_db_measurement_list(db, &f, collect_rec, &l, &e), 0);
    CU_ASSERT_EQUAL(l.n, 5);
    CU_ASSERT_EQUAL(l.ok, 5);
    /* each trial once, under its uid, with its shape and kernel */
    for (int i = 0; i < 5; i++) {
        int found = 0;
        for (int j = 0; j < l.n; j++)
            if (!strcmp(l.uid[j], t[i].uid)) {
                found++;
                CU_ASSERT_STRING_EQUAL(l.shape[j], t[i].text);
                CU_ASSERT_EQUAL(l.kernel[j], k[t[i].kernel].id);
            }
        CU_ASSERT_EQUAL(found, 1);
    }

    /* the same run again: new trials (new uids), the same kernels */
    int64_t k0 = k[0].id, k1 = k[1].id;
    k[0].id = 0; /* interned again: the same row */
    CU_ASSERT_EQUAL_FATAL(dt_measurer_measure(m, &r, &e), 0);
    CU_ASSERT_EQUAL(k[0].id, k0);
    CU_ASSERT_EQUAL(k[1].id, k1);
    int64_t n = 0;
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 10);
    CU_ASSERT_EQUAL(dt_measurer_trials(m), 10);
    dt_mtrials_free(t, 5);
    dt_measurer_close(m);

    /* a runner that runs nothing: every trial fails, and is a record all the same */
    o.runner_exe = "/bin/false";
    CU_ASSERT_EQUAL_FATAL(dt_measurer_open(&o, db, &tg, tkey, &m, &e), 0);
    memset(t, 0, sizeof t);
    for (int i = 0; i < 3; i++) {
        t[i].kernel = i % 2;
        t[i].shape[0] = i + 2;
        t[i].threads = 1;
    }
    r.n = 3;
    CU_ASSERT_EQUAL_FATAL(dt_measurer_measure(m, &r, &e), 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT(t[i].recorded);
        CU_ASSERT(t[i].res.status != DT_TRIAL_OK);
        CU_ASSERT(t[i].res.error && t[i].res.error[0]);
        CU_ASSERT(isnan(t[i].res.min_ns));
    }
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 13);
    f.ok_only = true;
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &f, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 10);
    /* a trial naming no kernel is refused before anything runs */
    t[0].kernel = 5;
    CU_ASSERT_EQUAL(dt_measurer_measure(m, &r, &e), DT_EINVAL);
    dt_mtrials_free(t, 3);
    dt_measurer_close(m);
    dt_db_close(db);
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


/* ---- the budget split ------------------------------------------------------------ */

/* The first-round caps of tasks whose usable records are measured[i], in the
 * scheduler's order (no usable record first), each round using its whole
 * cap; returns the trials left after the first rounds. */
static int64_t first_rounds(int64_t left, int64_t reserve, const int *measured, int n,
                            int64_t *cap)
{
    int done[16] = {0};
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if (measured[i] != pass)
                continue;
            int waiting = 0, uw = 0;
            for (int j = 0; j < n; j++)
                if (!done[j]) {
                    waiting++;
                    uw += !measured[j];
                }
            cap[i] = dt_tune_first_share(left, reserve, waiting, uw, !measured[i]);
            done[i] = 1;
            left -= cap[i];
        }
    return left;
}

static void test_budget_minimums(void)
{
    dt_err e;
    CU_ASSERT_EQUAL(dt_tune_min_trials(0, 6), 6 * DT_TUNE_MIN_FIRST_TRIALS);
    CU_ASSERT_EQUAL(dt_tune_min_trials(30, 2), 30 + 2 * DT_TUNE_MIN_FIRST_TRIALS);
    CU_ASSERT_EQUAL(dt_tune_min_trials(30, 0), 30);
    /* BERT-base: 6 workloads, none measured */
    CU_ASSERT_EQUAL(dt_tune_check_budget(12, 0, 0, 6, 6, &e), 0);
    CU_ASSERT_EQUAL(dt_tune_check_budget(11, 0, 0, 6, 6, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at least 12"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "6 workloads"));
    /* records count against the budget: 4 workloads measured with 30 trials */
    CU_ASSERT_EQUAL(dt_tune_check_budget(33, 0, 30, 2, 6, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at least 34"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "30 already recorded"));
    CU_ASSERT_EQUAL(dt_tune_check_budget(34, 0, 30, 2, 6, &e), 0);
    /* everything measured: any budget, at worst the selection is redone */
    CU_ASSERT_EQUAL(dt_tune_check_budget(1, 0.5, 300, 0, 6, &e), 0);
    /* time */
    CU_ASSERT_EQUAL(dt_tune_min_seconds(6), 6 * DT_TUNE_MIN_SECONDS_PER_TASK);
    CU_ASSERT_EQUAL(dt_tune_check_budget(0, 6 * DT_TUNE_MIN_SECONDS_PER_TASK - 0.1, 0, 6, 6, &e),
                    DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at least 12 s"));
    CU_ASSERT_EQUAL(dt_tune_check_budget(0, 30, 0, 6, 6, &e), 0);
    /* no budget at all (a caller's default applies elsewhere) */
    CU_ASSERT_EQUAL(dt_tune_check_budget(0, 0, 0, 6, 6, &e), 0);
}

static void test_budget_split(void)
{
    int none[6] = {0, 0, 0, 0, 0, 0};
    int64_t cap[6];
    /* the reserve scales with the budget: at most a quarter of it */
    int64_t need = 6 * 128 * 2; /* BERT-base: shapes x topk */
    CU_ASSERT_EQUAL(dt_tune_reserve(need, 20), 5);
    CU_ASSERT_EQUAL(dt_tune_reserve(need, 100), 25);
    CU_ASSERT_EQUAL(dt_tune_reserve(need, 100000), need);
    CU_ASSERT_EQUAL(dt_tune_reserve(need, 0), need); /* no trial budget */
    CU_ASSERT_EQUAL(dt_tune_reserve(24, 40), 10);

    /* --trials 20 over BERT-base: every workload gets a first round of at
     * least the minimum, and the reserve is what is left */
    int64_t left = first_rounds(20, 5, none, 6, cap);
    int64_t sum = 0;
    for (int i = 0; i < 6; i++) {
        CU_ASSERT(cap[i] >= DT_TUNE_MIN_FIRST_TRIALS);
        sum += cap[i];
    }
    CU_ASSERT_EQUAL(sum + left, 20);
    CU_ASSERT_EQUAL(left, 5);
    CU_ASSERT_EQUAL(cap[0], 2);
    CU_ASSERT_EQUAL(cap[5], 3);
    /* the selection's 5 shared out in order, carried over: 0,1,1,1,1,1 */
    int64_t sel = left, got = 0;
    for (int i = 0; i < 6; i++) {
        int64_t a = dt_tune_select_share(sel, 6 - i);
        CU_ASSERT(a <= 1);
        sel -= a;
        got += a;
    }
    CU_ASSERT_EQUAL(got, 5);

    /* --trials 100: fair shares of what the reserve (25) leaves */
    left = first_rounds(100, 25, none, 6, cap);
    for (int i = 0; i < 6; i++)
        CU_ASSERT(cap[i] == 12 || cap[i] == 13);
    CU_ASSERT_EQUAL(left, 25);

    /* the minimum budget: the reserve gives way to the first rounds */
    left = first_rounds(12, 3, none, 6, cap);
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(cap[i], DT_TUNE_MIN_FIRST_TRIALS);
    CU_ASSERT_EQUAL(left, 0);

    /* a resumed tune: 4 workloads measured, 2 not, 4 trials left: the two
     * unmeasured ones get their minimum first, the others nothing new */
    int some[6] = {1, 0, 1, 1, 0, 1};
    left = first_rounds(4, dt_tune_reserve(need, 34), some, 6, cap);
    CU_ASSERT_EQUAL(cap[1], 2);
    CU_ASSERT_EQUAL(cap[4], 2);
    CU_ASSERT_EQUAL(cap[0] + cap[2] + cap[3] + cap[5], 0);
    CU_ASSERT_EQUAL(left, 0);

    /* below the minimum (a resumed daemon job is not checked): one trial
     * each while they last, then none */
    left = first_rounds(2, 0, none, 3, cap);
    CU_ASSERT_EQUAL(cap[0], 1);
    CU_ASSERT_EQUAL(cap[1], 1);
    CU_ASSERT_EQUAL(cap[2], 0);
    CU_ASSERT_EQUAL(dt_tune_first_share(0, 0, 1, 1, 1), 0);
    CU_ASSERT_EQUAL(dt_tune_select_share(0, 3), 0);
    CU_ASSERT_EQUAL(dt_tune_select_share(10, 3), 3);
}

/* ---- multi-workload tunes -------------------------------------------------------- */

static const char *const small_model[] = {
    "dense(M=1..6,N=32,K=16)",
    "batch_matmul(B=2,M=1..4,N=16,K=8,layout=NN)",
    "dense(M={2,8},N=16,K=32,epilogue=bias)",
};

static int tune_many(const char *db_path, int64_t trials, int no_min_check, const char *runner,
                     dt_task *t, dt_tune_result *r, dt_err *e)
{
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_db *db = NULL;
    int n = 0, rc;
    if ((rc = dt_target_detect(&tg, e)) || (rc = dt_target_key(&tg, tkey, sizeof tkey)))
        return rc;
    for (; n < 3; n++) {
        dt_workload *w = NULL;
        char name[16];
        snprintf(name, sizeof name, "w%d", n);
        rc = dt_workload_parse_key(small_model[n], &w, e);
        if (!rc)
            rc = dt_task_init(&t[n], name, w, 1, 1, e);
        dt_workload_free(w);
        if (rc)
            goto out;
    }
    if ((rc = dt_db_open(db_path, DT_DB_CREATE, &db, e)))
        goto out;
    dt_tune_opts o;
    dt_tune_opts_default(&o);
    o.trials = trials;
    o.no_min_check = no_min_check;
    o.meas.min_time_s = 0.0005;
    o.meas.runner_exe = runner;
    o.search.kernels_per_round = 4;
    o.search.candidates = 64;
    rc = dt_tune(db, &tg, tkey, t, 3, &o, r, e);
    dt_db_close(db);
    if (!rc)
        return 0;
out:
    for (int i = 0; i < n; i++)
        dt_task_free(&t[i]);
    return rc;
}

/* The schedule of small_model[i] in the database at path: 0, or DT_ENOTFOUND. */
static int schedule_of(const char *path, int i)
{
    dt_err e;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_db *db = NULL;
    dt_dispatch *d = NULL;
    if (dt_target_detect(&tg, &e) || dt_target_key(&tg, tkey, sizeof tkey) ||
        dt_db_open(path, DT_DB_READONLY, &db, &e))
        return -1;
    int rc = dt_dispatch_load(db, small_model[i], tkey, 0, &d, &e);
    dt_dispatch_free(d);
    dt_db_close(db);
    return rc;
}

static void test_tight_budget_schedules_all(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/many.db", dir);
    dt_task t[3];
    dt_tune_result r;
    dt_err e;
    /* below the minimum (2 per workload): refused before measuring */
    CU_ASSERT_EQUAL(tune_many(path, 5, 0, DTUNE_BIN, t, &r, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at least 6"));
    CU_ASSERT(dt_test_count_records(path) <= 0);
    /* the minimum: each workload its first round, each scheduled */
    CU_ASSERT_EQUAL_FATAL(tune_many(path, 6, 0, DTUNE_BIN, t, &r, &e), 0);
    CU_ASSERT(r.trials_total <= 6);
    CU_ASSERT_EQUAL(r.nscheduled, 3);
    CU_ASSERT_EQUAL(r.nskipped, 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(r.outcome[i], DT_TUNE_SCHEDULED);
        CU_ASSERT(t[i].trials >= 1);
        CU_ASSERT(r.sel[i].ranges >= 1);
        CU_ASSERT_EQUAL(schedule_of(path, i), 0);
        dt_task_free(&t[i]);
    }
}

static void test_task_without_trials_skipped(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/skip.db", dir);
    dt_task t[3];
    dt_tune_result r;
    dt_err e;
    /* 2 trials for 3 workloads, unchecked (as a resumed daemon job): the
     * third gets none and is skipped; the others are stored */
    CU_ASSERT_EQUAL_FATAL(tune_many(path, 2, 1, DTUNE_BIN, t, &r, &e), 0);
    CU_ASSERT_EQUAL(r.trials_total, 2);
    CU_ASSERT_EQUAL(r.nscheduled, 2);
    CU_ASSERT_EQUAL(r.nskipped, 1);
    CU_ASSERT_EQUAL(r.outcome[0], DT_TUNE_SCHEDULED);
    CU_ASSERT_EQUAL(r.outcome[1], DT_TUNE_SCHEDULED);
    CU_ASSERT_EQUAL(r.outcome[2], DT_TUNE_SKIPPED);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.reason[2], "no trials"));
    CU_ASSERT_EQUAL(r.reason[0][0], 0);
    CU_ASSERT_EQUAL(schedule_of(path, 0), 0);
    CU_ASSERT_EQUAL(schedule_of(path, 1), 0);
    CU_ASSERT_EQUAL(schedule_of(path, 2), DT_ENOTFOUND);
    for (int i = 0; i < 3; i++)
        dt_task_free(&t[i]);

    /* every trial failing (a runner that runs nothing): each workload
     * skipped, saying so, and the tune itself does not fail */
    snprintf(path, sizeof path, "%s/fail.db", dir);
    CU_ASSERT_EQUAL_FATAL(tune_many(path, 6, 0, "/bin/false", t, &r, &e), 0);
    CU_ASSERT_EQUAL(r.nscheduled, 0);
    CU_ASSERT_EQUAL(r.nskipped, 3);
    CU_ASSERT(r.trials_total > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.reason[0], "ran successfully"));
    CU_ASSERT_EQUAL(schedule_of(path, 0), DT_ENOTFOUND);
    for (int i = 0; i < 3; i++)
        dt_task_free(&t[i]);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"dispatch table lookup and extrapolation", test_dispatch_lookup},
        {"measurement session: batches planned per kernel", test_measurer_plan},
        {"measurement session: every trial recorded once, kernels interned once",
         test_measurer_records_once},
        {"small joint tune: full cover, verified kernels, resume", test_small_tune_covers_and_verifies},
        {"per-shape and random strategies", test_per_shape_and_random},
        {"budget minimums and their refusal", test_budget_minimums},
        {"budget split: reserve, first rounds, selection shares", test_budget_split},
        {"tight budget: every workload scheduled; below it refused",
         test_tight_budget_schedules_all},
        {"a workload without trials is skipped, the others stored",
         test_task_without_trials_skipped},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"tuner", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
