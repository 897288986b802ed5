/* The tuner: dispatch tables, the measurement session (batches planned on
 * hand-made trials; a local run that records every trial exactly once,
 * interns its kernels once, keeps shapes as values, and records failed
 * trials as data), a small real tune whose schedule covers every shape with
 * verified kernels, resuming, the per-shape strategy, the budget split on
 * hand-made cases (minimums, reserve, first rounds, selection shares), and
 * small multi-workload tunes: a tight budget schedules every workload, one
 * below the minimum is refused, and a workload left without trials is
 * skipped while the others are stored.  On hand-made cases with known
 * answers: the objective Σ w_s · min_k time and a kernel's marginal gain
 * (3 shapes x 3 kernels), the selection (fastest measured, tie slack,
 * ranges, unmeasured and failed kernels, the order of its budget) and the
 * bookkeeping of a search round (trial cap, dropped picks, seed,
 * grounding, per-shape and random strategies) against a session whose
 * every trial fails, so the requests made show in the failure records. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "db/db.h"
#include "dt_test.h"
#include "dt_test_measurer.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "microkernel/loader.h"
#include "microkernel/reference.h"
#include "dispatch/dispatch.h"
#include "shape/box.h"
#include "measure/trial.h"
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
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
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

/* The schedule of key on this machine in the database at path, opened
 * read-only into *db (closed by the caller): 0, or an error code. */
static int load_schedule(const char *path, const char *key, dt_db **db, dt_dispatch **d)
{
    dt_err e;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    *db = NULL;
    *d = NULL;
    if (dt_target_detect(&tg, &e) || dt_target_key(&tg, tkey, sizeof tkey) ||
        dt_db_open(path, DT_DB_READONLY, db, &e))
        return -1;
    return dt_dispatch_load(*db, key, tkey, 0, d, &e);
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
    /* the unrestricted selection: every shape's winner measured on it (the
     * kernel budget, which may dispatch a pair it had no trials left to
     * measure, is tests/test_select_budget.c's) */
    o.max_kernels = DT_SELECT_ALL;
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

    dt_db *db = NULL;
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(load_schedule(path, key, &db, &d), 0);
    CU_ASSERT_EQUAL(d->threads, 1);
    /* the ranges cover the whole set, in order, without gaps */
    CU_ASSERT_EQUAL(d->r[0].box.lo[0], 0);
    CU_ASSERT_EQUAL(d->r[d->n - 1].box.hi[0], 11);
    for (int i = 1; i < d->n; i++)
        CU_ASSERT_EQUAL(d->r[i].box.lo[0], d->r[i - 1].box.hi[0] + 1);
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
 * scheduler's order (dt_tune_first_next, dt_tune_first_cap: the code
 * dt_tune runs), each round using its whole cap; returns the trials left
 * after the first rounds. */
static int64_t first_rounds(int64_t left, int64_t reserve, const int *measured, int n,
                            int64_t *cap)
{
    char waiting[16], meas[16];
    for (int i = 0; i < n; i++) {
        waiting[i] = 1;
        meas[i] = (char)measured[i];
    }
    int i;
    while ((i = dt_tune_first_next(waiting, meas, n)) >= 0) {
        cap[i] = dt_tune_first_cap(left, reserve, waiting, meas, n, i);
        waiting[i] = 0;
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
    /* one trial is singular */
    CU_ASSERT_EQUAL(dt_tune_check_budget(1, 0, 0, 1, 1, &e), DT_EINVAL);
    if (!strstr(e.msg, "a budget of 1 trial is"))
        fprintf(stderr, "\n  message: %s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "a budget of 1 trial is"));
}

/* Copies of ok records with impossible times (as a lying worker left them
 * before pool.c rejected such results): the next tune of that workload
 * trains and selects all the same, never choosing a kernel for its
 * impossible time. */
typedef struct {
    dt_db_measurement m[4];
    char shape[4][64];
    int n;
} first_ok;

static int take_ok(const dt_db_measurement *m, void *ud)
{
    first_ok *f = ud;
    if (m->status != DT_TRIAL_OK || f->n == 4)
        return 0;
    f->m[f->n] = *m;
    snprintf(f->shape[f->n], sizeof f->shape[0], "%s", m->shape);
    f->m[f->n].shape = f->shape[f->n];
    f->n++;
    return 0;
}

static void test_poisoned_records_skipped(void)
{
    const char *key = "dense(M=1..6,N=32,K=16)";
    char path[4096];
    snprintf(path, sizeof path, "%s/poisoned.db", dir);
    dt_tune_result r;
    dt_task t;
    CU_ASSERT_EQUAL_FATAL(tune_key(key, path, DT_STRATEGY_JOINT, 16, &r, &t), 0);
    dt_task_free(&t);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, 0, &db, &e), 0);
    first_ok f = {.n = 0};
    dt_db_measurement_filter okf = {.ok_only = true};
    CU_ASSERT_EQUAL_FATAL(dt_db_measurement_list(db, &okf, take_ok, &f, &e), 0);
    CU_ASSERT_FATAL(f.n >= 3);
    static const double bad[] = {1e-300, 1e-12, 1e-6};
    for (int i = 0; i < 3; i++) {
        dt_db_measurement m = f.m[i];
        char uid[DT_TRIAL_UID_LEN + 1];
        dt_trial_uid_new(uid);
        m.trial_uid = uid;
        m.min_ns = m.median_ns = bad[i];
        m.error = NULL;
        CU_ASSERT_EQUAL(dt_db_measurement_insert(db, &m, NULL, NULL, &e), 0);
    }
    dt_db_close(db);
    /* more trials: the tune trains its cost model on every record */
    int rc = tune_key(key, path, DT_STRATEGY_JOINT, 40, &r, &t);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc == 0) {
        CU_ASSERT(r.nscheduled == 1);
        /* the objective is a real time, not one of the impossible ones */
        CU_ASSERT(!(r.sel[0].objective < 1.0));
    }
    dt_task_free(&t);
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

    /* the order of the first rounds: no usable record first, model order */
    char waiting[4] = {1, 1, 1, 1}, meas[4] = {1, 0, 1, 0};
    static const int order[4] = {1, 3, 0, 2};
    for (int j = 0; j < 4; j++) {
        int i = dt_tune_first_next(waiting, meas, 4);
        CU_ASSERT_EQUAL(i, order[j]);
        if (i < 0)
            break;
        waiting[i] = 0;
    }
    CU_ASSERT_EQUAL(dt_tune_first_next(waiting, meas, 4), -1);
    /* the waiting tasks and the unmeasured among them are counted: 10 left,
     * 2 reserved, 2 waiting (one unmeasured) */
    char w2[3] = {0, 1, 1}, m2[3] = {0, 0, 1};
    CU_ASSERT_EQUAL(dt_tune_first_cap(10, 2, w2, m2, 3, 1), dt_tune_first_share(10, 2, 2, 1, 1));
    CU_ASSERT_EQUAL(dt_tune_first_cap(10, 2, w2, m2, 3, 2), dt_tune_first_share(10, 2, 2, 1, 0));
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
    dt_db *db = NULL;
    dt_dispatch *d = NULL;
    int rc = load_schedule(path, small_model[i], &db, &d);
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

/* ---- objective, selection and the search round on hand-made cases --------- */

/* Task on workload key (shapes uniform unless w3 gives 3 weights), attached
 * to the database at path (db may be NULL: not attached). */
static int hand_task(const char *key, const double *w3, dt_task *t, const char *path,
                     dt_db **db, dt_target *tg, char *tkey)
{
    dt_err e;
    dt_workload *w = NULL;
    if (dt_target_detect(tg, &e) || dt_target_key(tg, tkey, DT_TARGET_KEY_MAX) ||
        dt_workload_parse_key(key, &w, &e) || dt_task_init(t, "t", w, 1, 1, &e)) {
        dt_workload_free(w);
        return -1;
    }
    dt_workload_free(w);
    if (w3)
        for (int s = 0; s < 3; s++)
            t->weight[s] = w3[s];
    if (!path)
        return 0;
    if (dt_db_open(path, DT_DB_CREATE, db, &e) || dt_task_attach(t, *db, tg, tkey, &e)) {
        fprintf(stderr, "hand_task: %s\n", e.msg);
        return -1;
    }
    return 0;
}

/* n distinct valid stream kernels added to t (interned in db when not NULL). */
static int hand_kernels(dt_task *t, dt_db *db, const dt_target *tg, int n, uint64_t seed)
{
    dt_rng r;
    dt_rng_seed(&r, seed);
    dt_err e;
    for (int tries = 0; n > 0 && tries < 1000; tries++) {
        dt_annotation a;
        if (dt_annotation_sample(&r, tg, DT_SKETCH_STREAM, t->threads, &a, &e) ||
            dt_task_find(t, &a) >= 0)
            continue;
        int64_t id = 0;
        if (db) {
            char *js = dt_annotation_to_string(&a);
            int rc = dt_db_kernel_intern(db, t->w->op->name, dt_sketch_name(a.sketch), js, NULL,
                                         &id, &e);
            free(js);
            if (rc)
                return -1;
        }
        if (dt_task_add(t, &a, id, &e) < 0)
            return -1;
        n--;
    }
    return n == 0 ? 0 : -1;
}

/* Hand-set predictions (ns, every shape) of kernel k. */
static void hand_pred(dt_task *t, int k, const float *ns)
{
    free(t->k[k].pred);
    t->k[k].pred = malloc((size_t)t->nshapes * sizeof *t->k[k].pred);
    for (int64_t s = 0; s < t->nshapes; s++)
        t->k[k].pred[s] = ns[s];
}

static void test_objective_bookkeeping(void)
{
    /* 3 shapes weighted 0.5 / 0.3 / 0.2, kernels measured by hand:
     *        s0   s1   s2
     *   K0  100  300  400
     *   K1  200  100  400
     *   K2  300  200  100   (added last) */
    const double w3[] = {0.5, 0.3, 0.2};
    dt_task t;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL_FATAL(hand_task("dense(M={8,16,24},N=32,K=32)", w3, &t, NULL, NULL, &tg,
                                    tkey), 0);
    CU_ASSERT_EQUAL_FATAL(t.nshapes, 3);
    double best[3];
    int arg[3];
    /* nothing known: +inf everywhere, no winner */
    CU_ASSERT(isinf(dt_task_best(&t, best, arg)));
    CU_ASSERT_EQUAL(arg[0], -1);
    CU_ASSERT_EQUAL_FATAL(hand_kernels(&t, NULL, &tg, 5, 11), 0);
    const double tm[3][3] = {{100, 300, 400}, {200, 100, 400}, {300, 200, 100}};
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 3; s++)
            CU_ASSERT_EQUAL(dt_task_record(&t, k, s, tm[k][s]), 0);
    /* best set {K0, K1}: min per shape 100, 100, 400 -> 50 + 30 + 80 = 160 */
    double before = dt_task_best(&t, best, arg);
    CU_ASSERT_DOUBLE_EQUAL(before, 160, 1e-9);
    CU_ASSERT_EQUAL(arg[0], 0);
    CU_ASSERT_EQUAL(arg[1], 1);
    CU_ASSERT_DOUBLE_EQUAL(best[2], 400, 1e-9);
    /* K2 lowers only s2: its value is 0.2 · (400 − 100) = 60 -> 100 */
    for (int s = 0; s < 3; s++)
        dt_task_record(&t, 2, s, tm[2][s]);
    double after = dt_task_best(&t, best, arg);
    CU_ASSERT_DOUBLE_EQUAL(before - after, 0.2 * (400 - 100), 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(after, 100, 1e-9);
    CU_ASSERT_EQUAL(arg[2], 2);
    /* ranking on s2: K2 (100), then the 400s in index order (a tie keeps order) */
    int top[4];
    double val[4];
    CU_ASSERT_EQUAL(dt_task_topk(&t, 2, 4, top, val), 3);
    CU_ASSERT_EQUAL(top[0], 2);
    CU_ASSERT_EQUAL(top[1], 0);
    CU_ASSERT_EQUAL(top[2], 1);
    CU_ASSERT_DOUBLE_EQUAL(val[1], 400, 1e-9);
    CU_ASSERT_EQUAL(dt_task_topk(&t, 0, 2, top, val), 2); /* capped at k */
    CU_ASSERT_EQUAL(top[0], 0);
    CU_ASSERT_EQUAL(top[1], 1);

    /* K3, only predicted (50, 500, 500): counts where it is not measured */
    const float p3[] = {50, 500, 500};
    hand_pred(&t, 3, p3);
    CU_ASSERT_DOUBLE_EQUAL(dt_task_best(&t, best, arg), 100 - 0.5 * (100 - 50), 1e-9);
    CU_ASSERT_EQUAL(arg[0], 3);
    CU_ASSERT_DOUBLE_EQUAL(dt_task_known(&t, 3, 1), 500, 1e-9);
    /* a measurement replaces its prediction: 80 on s0 -> 0.5 · 80 + 30 + 20 */
    dt_task_record(&t, 3, 0, 80);
    CU_ASSERT_DOUBLE_EQUAL(dt_task_best(&t, best, arg), 90, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(dt_task_known(&t, 3, 0), 80, 1e-9);
    CU_ASSERT(isnan(dt_task_measured(&t, 3, 1)));
    /* a kernel with a failed trial is never the best, however fast elsewhere */
    dt_task_record(&t, 4, 0, 1);
    dt_task_record(&t, 4, 1, INFINITY);
    CU_ASSERT(t.k[4].failed);
    CU_ASSERT(isinf(dt_task_known(&t, 4, 0)));
    CU_ASSERT_DOUBLE_EQUAL(dt_task_best(&t, best, arg), 90, 1e-9);
    CU_ASSERT_EQUAL(arg[0], 3);
    CU_ASSERT_EQUAL(dt_task_topk(&t, 0, 16, top, NULL), 4); /* K4 excluded */
    /* a first time of 0 is a failure too (it cannot be the fastest) */
    dt_task_record(&t, 3, 2, 0);
    CU_ASSERT(t.k[3].failed);
    CU_ASSERT(isinf(dt_task_measured(&t, 3, 2)));
    /* a repeat on a shape keeps the better time */
    dt_task_record(&t, 0, 1, 250);
    CU_ASSERT_DOUBLE_EQUAL(dt_task_measured(&t, 0, 1), 250, 1e-9);
    dt_task_record(&t, 0, 1, 260);
    CU_ASSERT_DOUBLE_EQUAL(dt_task_measured(&t, 0, 1), 250, 1e-9);
    CU_ASSERT_EQUAL(t.k[0].nm, 3);
    dt_task_free(&t);
}

static void test_select_ranges(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/select.db", dir);
    dt_task t;
    dt_db *db = NULL;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(
        hand_task("dense(M={8,16,24,32,40,48},N=32,K=32)", NULL, &t, path, &db, &tg, tkey), 0);
    CU_ASSERT_EQUAL_FATAL(t.nshapes, 6);
    CU_ASSERT_EQUAL_FATAL(hand_kernels(&t, db, &tg, 4, 21), 0);
    enum { A, B, C, F };
    /*       s0   s1   s2   s3   s4   s5
     *   A  100  100  101  200    .    .
     *   B  150  120  100  100    .    .
     *   C    .    .    .    .    .  600
     *   F  inf    .    .    .    .   10   (failed: never chosen)
     * s2: B is fastest but A is within DT_SELECT_TIE (101 <= 102): A stays;
     * s3: A is 2x slower: B; s4: nothing measured: the nearest shape's
     * winner, the left one first at equal distance (s3: B); s5: C.  (C's
     * 600 ns on M=48 keeps its estimates elsewhere near A's and B's times:
     * at 50 ns they would be DT_SELECT_DISTRUST below them, and C would
     * be dispatched there unmeasured.) */
    const double nan_ = NAN;
    const double tm[4][6] = {{100, 100, 101, 200, nan_, nan_},
                             {150, 120, 100, 100, nan_, nan_},
                             {nan_, nan_, nan_, nan_, nan_, 600},
                             {INFINITY, nan_, nan_, nan_, nan_, 10}};
    for (int k = 0; k < 4; k++)
        for (int s = 0; s < 6; s++)
            if (!isnan(tm[k][s]))
                CU_ASSERT_EQUAL(dt_task_record(&t, k, s, tm[k][s]), 0);
    dt_predictor p;
    dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
    dt_select_info info;
    CU_ASSERT_EQUAL_FATAL(dt_select_final(&t, &p, NULL, 0, 0, db, &info, &e), 0);
    CU_ASSERT_EQUAL(info.trials, 0);
    CU_ASSERT_EQUAL(info.ranges, 3);
    CU_ASSERT_EQUAL(info.kernels, 3);
    CU_ASSERT_EQUAL(info.unmeasured, 1);
    CU_ASSERT(isnan(info.objective)); /* s4's time is unknown */
    dt_db_schedule *rows = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(db, t.workload_id, t.target_id, 1, &rows, &n, &e),
                          0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    const char *lo[] = {"M=8", "M=32", "M=48"}, *hi[] = {"M=24", "M=40", "M=48"};
    const int kw[] = {A, B, C};
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_STRING_EQUAL(rows[i].shape_lo, lo[i]);
        CU_ASSERT_STRING_EQUAL(rows[i].shape_hi, hi[i]);
        CU_ASSERT_EQUAL(rows[i].kernel_id, t.k[kw[i]].id);
    }
    CU_ASSERT_DOUBLE_EQUAL(rows[0].measured_ns, (100 + 100 + 101) / 3.0, 1e-9);
    CU_ASSERT(isnan(rows[1].measured_ns)); /* includes s4 */
    CU_ASSERT_DOUBLE_EQUAL(rows[2].measured_ns, 600, 1e-9);
    CU_ASSERT(rows[0].predicted_ns > 0); /* f_adapt-only predictions of the winners */
    dt_db_schedules_free(rows, n);

    /* B measured on s4 (90): every time known; the objective is the
     * weighted sum of the winners' times, (100+100+101+100+90+600) / 6 */
    dt_task_record(&t, B, 4, 90);
    CU_ASSERT_EQUAL_FATAL(dt_select_final(&t, &p, NULL, 0, 0, db, &info, &e), 0);
    CU_ASSERT_EQUAL(info.unmeasured, 0);
    CU_ASSERT_EQUAL(info.ranges, 3);
    CU_ASSERT_DOUBLE_EQUAL(info.objective, 1091.0 / 6, 1e-9);
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(db, t.workload_id, t.target_id, 1, &rows, &n, &e),
                          0);
    CU_ASSERT_EQUAL_FATAL(n, 3); /* replaced, not appended */
    CU_ASSERT_DOUBLE_EQUAL(rows[1].measured_ns, (100 + 90) / 2.0, 1e-9);
    dt_db_schedules_free(rows, n);

    /* A measured at 1 ns on s4 and s5: winners A A A B A A, the same
     * kernel in two ranges (2 distinct kernels, 3 ranges) */
    dt_task_record(&t, A, 4, 1);
    dt_task_record(&t, A, 5, 1);
    CU_ASSERT_EQUAL_FATAL(dt_select_final(&t, &p, NULL, 0, 0, db, &info, &e), 0);
    CU_ASSERT_EQUAL(info.ranges, 3);
    CU_ASSERT_EQUAL(info.kernels, 2);
    CU_ASSERT_DOUBLE_EQUAL(info.objective, (100 + 100 + 101 + 100 + 1 + 1) / 6.0, 1e-9);
    dt_predictor_free(&p);
    dt_task_free(&t);

    /* no kernel ever ran: DT_ENOTFOUND, nothing stored */
    snprintf(path, sizeof path, "%s/select0.db", dir);
    dt_db *db2 = NULL;
    CU_ASSERT_EQUAL_FATAL(hand_task("dense(M={8,16},N=32,K=32)", NULL, &t, path, &db2, &tg, tkey),
                          0);
    CU_ASSERT_EQUAL_FATAL(hand_kernels(&t, db2, &tg, 1, 3), 0);
    dt_task_record(&t, 0, 0, INFINITY);
    dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
    CU_ASSERT_EQUAL(dt_select_final(&t, &p, NULL, 0, 0, db2, &info, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no kernel ran"));
    CU_ASSERT_EQUAL(dt_db_schedule_list(db2, t.workload_id, t.target_id, 1, &rows, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 0);
    dt_db_schedules_free(rows, n);
    CU_ASSERT_EQUAL(dt_select_reserve(&t, 3, DT_SELECT_ALL), 6);
    CU_ASSERT_EQUAL(dt_select_reserve(&t, 0, DT_SELECT_ALL), 0);
    /* a kernel budget: one more per shape, held back for verification */
    CU_ASSERT_EQUAL(dt_select_reserve(&t, 3, DT_SELECT_AUTO), 8);
    CU_ASSERT_EQUAL(dt_select_reserve(&t, 0, 4), 0);
    CU_ASSERT_EQUAL(dt_select_verify_share(&t, 3, DT_SELECT_ALL, 8), 0);
    CU_ASSERT_EQUAL(dt_select_verify_share(&t, 3, DT_SELECT_AUTO, 8), 2);
    CU_ASSERT_EQUAL(dt_select_verify_share(&t, 3, 2, 4), 2);
    CU_ASSERT_EQUAL(dt_select_verify_share(&t, 3, 2, 1), 1);
    CU_ASSERT_EQUAL(dt_select_verify_share(&t, 3, 2, 0), 0);
    dt_predictor_free(&p);
    dt_task_free(&t);
    dt_db_close(db2);
    dt_db_close(db);
}

/* K0 measured at 1000 ns on the 3 shapes (weights 0.2 / 0.5 / 0.3); K1 never
 * measured, predicted at 10 ns everywhere: the top kernel of every shape. */
static int pred_task(const char *name, dt_task *t, dt_db **db, dt_target *tg, char *tkey)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    const double w3[] = {0.2, 0.5, 0.3};
    if (hand_task("dense(M={8,16,24},N=32,K=32)", w3, t, path, db, tg, tkey) ||
        hand_kernels(t, *db, tg, 1, 5) || hand_kernels(t, NULL, tg, 1, 6))
        return -1;
    for (int s = 0; s < 3; s++)
        dt_task_record(t, 0, s, 1000);
    const float p1[] = {10, 10, 10};
    hand_pred(t, 1, p1);
    return 0;
}

static void test_select_budget_order(void)
{
    dt_task t;
    dt_db *db = NULL;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(pred_task("selbudget", &t, &db, &tg, tkey), 0);
    dt_measurer *m = dt_test_failing_measurer(db, &tg, tkey);
    CU_ASSERT_FATAL(m != NULL);
    dt_predictor p;
    dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
    dt_select_info info;
    /* top 2, one trial: K1 (the top kernel) on the heaviest shape (s1, weight
     * 0.5 · 10 ns) before any other shape; K0 is measured everywhere already */
    CU_ASSERT_EQUAL_FATAL(dt_select_final(&t, &p, m, 2, 1, db, &info, &e), 0);
    CU_ASSERT_EQUAL(info.trials, 1);
    CU_ASSERT(isinf(dt_task_measured(&t, 1, 1)));
    CU_ASSERT(isnan(dt_task_measured(&t, 1, 0)));
    CU_ASSERT(isnan(dt_task_measured(&t, 1, 2)));
    /* K1 failed: K0 wins everywhere, one range */
    CU_ASSERT_EQUAL(info.ranges, 1);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT_DOUBLE_EQUAL(info.objective, 1000, 1e-6);
    dt_measurer_close(m);
    dt_predictor_free(&p);
    dt_task_free(&t);
    dt_db_close(db);

    /* a budget for all: one request per shape for the top kernel, then none
     * for the second (K0 is measured): 3 trials */
    CU_ASSERT_EQUAL_FATAL(pred_task("selbudget2", &t, &db, &tg, tkey), 0);
    m = dt_test_failing_measurer(db, &tg, tkey);
    CU_ASSERT_FATAL(m != NULL);
    dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
    CU_ASSERT_EQUAL_FATAL(dt_select_final(&t, &p, m, 2, 100, db, &info, &e), 0);
    CU_ASSERT_EQUAL(info.trials, 3);
    for (int s = 0; s < 3; s++)
        CU_ASSERT(isinf(dt_task_measured(&t, 1, s)));
    dt_measurer_close(m);
    dt_predictor_free(&p);
    dt_task_free(&t);
    dt_db_close(db);
}

static void search_opts(dt_search_opts *o)
{
    dt_search_opts_default(o);
    o->kernels_per_round = 4;
    o->shapes_per_kernel = 2;
    o->epsilon = 0.25; /* 1 random pick of 4 */
    o->candidates = 32;
}

static void test_search_round_bookkeeping(void)
{
    dt_task t;
    dt_db *db = NULL;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_err e;
    dt_search_opts o;
    search_opts(&o);
    const int64_t focus[] = {0, 1, 2};
    dt_round_info info;
    dt_rng r;

    /* a cap of one trial: one new kernel measured, the picks left without
     * a trial dropped from the task */
    dt_annotation first;
    for (int run = 0; run < 2; run++) {
        char name[32];
        snprintf(name, sizeof name, "round_cap%d", run);
        CU_ASSERT_EQUAL_FATAL(pred_task(name, &t, &db, &tg, tkey), 0);
        dt_measurer *m = dt_test_failing_measurer(db, &tg, tkey);
        CU_ASSERT_FATAL(m != NULL);
        dt_predictor p;
        dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
        dt_rng_seed(&r, 42);
        CU_ASSERT_EQUAL_FATAL(
            dt_search_round(&t, &p, m, &o, focus, 3, 1, &r, &tg, &info, &e), 0);
        CU_ASSERT_EQUAL(info.trials, 1);
        CU_ASSERT_EQUAL(info.failed, 1);
        CU_ASSERT_EQUAL(info.kernels, 1);
        CU_ASSERT_EQUAL_FATAL(t.nk, 3);
        CU_ASSERT_EQUAL(t.k[2].nm, 1);
        CU_ASSERT(t.k[2].failed);
        /* the objective after the round: the task's, on the refreshed
         * predictions (K1, an elite, is predicted again by the model) */
        double best[3];
        CU_ASSERT_DOUBLE_EQUAL(info.objective, dt_task_best(&t, best, NULL), 1e-9);
        CU_ASSERT(isfinite(info.objective) && info.objective <= 1000);
        /* same seed, same state: the same kernel */
        if (run == 0)
            first = t.k[2].a;
        else
            CU_ASSERT(dt_annotation_equal(&first, &t.k[2].a));
        dt_measurer_close(m);
        dt_predictor_free(&p);
        dt_task_free(&t);
        dt_db_close(db);
    }

    /* a budget for all: 3 greedy + 1 random kernels on <= 2 shapes each, and
     * grounding: K1's predicted bests measured on the kpr/2 = 2 heaviest
     * shapes by weight · best (s1: 0.5, s2: 0.3), not on s0 (0.2) */
    CU_ASSERT_EQUAL_FATAL(pred_task("round_all", &t, &db, &tg, tkey), 0);
    dt_measurer *m = dt_test_failing_measurer(db, &tg, tkey);
    CU_ASSERT_FATAL(m != NULL);
    dt_predictor p;
    dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
    dt_rng_seed(&r, 7);
    CU_ASSERT_EQUAL_FATAL(dt_search_round(&t, &p, m, &o, focus, 3, 100, &r, &tg, &info, &e), 0);
    CU_ASSERT(isinf(dt_task_measured(&t, 1, 1)));
    CU_ASSERT(isinf(dt_task_measured(&t, 1, 2)));
    CU_ASSERT(isnan(dt_task_measured(&t, 1, 0)));
    CU_ASSERT_EQUAL(t.nk, 2 + 4);
    CU_ASSERT_EQUAL(info.kernels, 4 + 1); /* the 4 picks and K1, never measured before */
    CU_ASSERT(info.trials >= 4 + 2 && info.trials <= 4 * 2 + 2);
    CU_ASSERT_EQUAL(info.failed, info.trials);
    int64_t per = 0;
    for (int k = 2; k < t.nk; k++) {
        CU_ASSERT(t.k[k].nm >= 1 && t.k[k].nm <= 2); /* shapes_per_kernel */
        per += t.k[k].nm;
    }
    CU_ASSERT_EQUAL(per + 2, info.trials);
    CU_ASSERT_EQUAL(t.trials, info.trials);
    /* a kernel's requests are on distinct shapes */
    for (int k = 2; k < t.nk; k++)
        if (t.k[k].nm == 2)
            CU_ASSERT(t.k[k].m[0].shape != t.k[k].m[1].shape);
    dt_measurer_close(m);
    dt_predictor_free(&p);
    dt_task_free(&t);
    dt_db_close(db);
}

/* Per-shape and random rounds: per-shape measures its picks on its one
 * focus shape only; neither grounds predicted bests (joint only). */
static void test_search_round_strategies(void)
{
    dt_err e;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    for (int st = DT_STRATEGY_PER_SHAPE; st <= DT_STRATEGY_RANDOM; st++) {
        dt_task t;
        dt_db *db = NULL;
        char name[32];
        snprintf(name, sizeof name, "round_st%d", st);
        CU_ASSERT_EQUAL_FATAL(pred_task(name, &t, &db, &tg, tkey), 0);
        dt_measurer *m = dt_test_failing_measurer(db, &tg, tkey);
        CU_ASSERT_FATAL(m != NULL);
        dt_predictor p;
        dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
        dt_search_opts o;
        search_opts(&o);
        o.strategy = (dt_strategy)st;
        const int64_t one[] = {2}, all[] = {0, 1, 2};
        int per = st == DT_STRATEGY_PER_SHAPE;
        dt_rng r;
        dt_rng_seed(&r, 3);
        dt_round_info info;
        CU_ASSERT_EQUAL_FATAL(dt_search_round(&t, &p, m, &o, per ? one : all, per ? 1 : 3, 100,
                                              &r, &tg, &info, &e), 0);
        CU_ASSERT_EQUAL(t.nk, 2 + 4);      /* kernels_per_round new kernels */
        CU_ASSERT_EQUAL(info.kernels, 4);
        CU_ASSERT_EQUAL(t.k[1].nm, 0);     /* no grounding */
        int64_t n = 0;
        for (int k = 2; k < t.nk; k++) {
            n += t.k[k].nm;
            if (per) { /* one shape per kernel: the focus */
                CU_ASSERT_EQUAL(t.k[k].nm, 1);
                CU_ASSERT_EQUAL(t.k[k].m[0].shape, 2);
            } else {
                CU_ASSERT(t.k[k].nm >= 1 && t.k[k].nm <= 2);
            }
        }
        CU_ASSERT_EQUAL(n, info.trials);
        dt_measurer_close(m);
        dt_predictor_free(&p);
        dt_task_free(&t);
        dt_db_close(db);
    }
}

static void test_strategy_names(void)
{
    dt_strategy st;
    const char *names[] = {"joint", "per-shape", "random"};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(dt_strategy_parse(names[i], &st), 0);
        CU_ASSERT_EQUAL((int)st, i);
        CU_ASSERT_STRING_EQUAL(dt_strategy_name(st), names[i]);
    }
    CU_ASSERT_EQUAL(dt_strategy_parse("greedy", &st), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(dt_strategy_name((dt_strategy)7), "?");
    dt_search_opts o;
    dt_search_opts_default(&o);
    CU_ASSERT_EQUAL(o.kernels_per_round, 8);
    CU_ASSERT_DOUBLE_EQUAL(o.epsilon, 0.2, 1e-12);
}

/* Two variables: the schedule is boxes that cover the grid, each shape of
 * the set in one (not extrapolated) and given a kernel verified on it;
 * shapes outside the domains go to the nearest box, flagged. */
static void test_two_var_tune_boxes(void)
{
    const char *key = "dense(M=b*s,N=24,K=16;b=1..3,s={1,3,5,8})";
    char path[4096];
    snprintf(path, sizeof path, "%s/boxes.db", dir);
    dt_tune_result r;
    dt_task t;
    CU_ASSERT_EQUAL_FATAL(tune_key(key, path, DT_STRATEGY_RANDOM, 24, &r, &t), 0);
    dt_task_free(&t);
    dt_db *db = NULL;
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(load_schedule(path, key, &db, &d), 0);
    int64_t covered = 0;
    for (int i = 0; i < d->n; i++)
        covered += dt_box_nshapes(d->w, &d->r[i].box);
    CU_ASSERT_EQUAL(covered, 12); /* disjoint (the table refuses overlaps) and covering */
    for (int64_t b = 0; b <= 4; b++)
        for (int64_t s = 0; s <= 9; s++) {
            int64_t vals[2] = {b, s};
            dt_dispatch_hit hit;
            CU_ASSERT_EQUAL_FATAL(dt_dispatch_find(d, vals, &hit), 0);
            int in_set = b >= 1 && b <= 3 && (s == 1 || s == 3 || s == 5 || s == 8);
            CU_ASSERT_EQUAL(hit.extrapolated, !in_set);
            if (b >= 1 && s >= 1)
                CU_ASSERT_EQUAL(verify_db_kernel(db, hit.range->kernel_id, d->w, b * s, 24, 16, 1),
                                0);
        }
    dt_dispatch_free(d);
    dt_db_close(db);
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
        {"two variables: boxes cover the grid, every kernel verified", test_two_var_tune_boxes},
        {"objective and marginal gain on 3 shapes x 3 kernels", test_objective_bookkeeping},
        {"selection: fastest, tie slack, ranges, unmeasured, failed", test_select_ranges},
        {"selection under a budget: heaviest shape's top kernel first", test_select_budget_order},
        {"search round: trial cap, dropped picks, seed, grounding", test_search_round_bookkeeping},
        {"search round: per-shape and random strategies", test_search_round_strategies},
        {"strategy names and search defaults", test_strategy_names},
        {"budget minimums and their refusal", test_budget_minimums},
        {"records with impossible times: skipped by training and selection",
         test_poisoned_records_skipped},
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
