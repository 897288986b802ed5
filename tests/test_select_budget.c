/* The kernel budget of the final selection (tuner/kset.h, tuner/select.h,
 * docs/tuner.md "Kernel budget") on synthetic per-shape times:
 * - the set chooser: known optima of small cases (exact and greedy), the
 *   trap where greedy forward needs swap refinement, the greedy never worse
 *   than the best single kernel nor better than the exact optimum on random
 *   matrices, the budget respected, unusable pairs, the automatic budget
 *   (smallest K within the tolerance);
 * - dt_select_run on a task: K = 1 / 2 / auto / all with the loss against
 *   the per-shape fastest computed right, and dispatch_stats reading the
 *   same figures back from the database; a pair never measured: estimated
 *   from the kernel's calibrated prediction and then measured when trials
 *   are left, else counted no better than 2 % above its shape's fastest
 *   measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "dispatch/dispatch_stats.h"
#include "dt_test.h"
#include "dt_test_measurer.h"
#include "tuner/kset.h"
#include "tuner/predictor.h"
#include "tuner/select.h"
#include "tuner/select_budget.h"

static char *dir;

static int setup(void)
{
    dir = dt_test_tmpdir();
    return dir ? 0 : 1;
}

static int teardown(void)
{
    dt_test_rmtree(dir);
    free(dir);
    return 0;
}

/* ---- the set chooser --------------------------------------------------------- */

static void test_known_optimum(void)
{
    /* 4 shapes (weights 0.4 0.3 0.2 0.1) x 4 kernels; K = 2: {K1, K2}
     * = 0.4·10 + 0.3·10 + 0.2·10 + 0.1·20 = 11 is the optimum */
    const double w[4] = {0.4, 0.3, 0.2, 0.1};
    const double t[4 * 4] = {
        /* K0  K1  K2  K3 */
        30, 10, 40, 25, /* s0 */
        30, 10, 40, 25, /* s1 */
        30, 40, 10, 25, /* s2 */
        30, 40, 20, 25, /* s3 */
    };
    dt_kset p;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_kset_init(&p, 4, 4, w, t, &e), 0);
    int set[DT_KSET_MAX], n;
    double o;
    n = dt_kset_exact(&p, 2, set, &o, &e);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(set[0], 1);
    CU_ASSERT_EQUAL(set[1], 2);
    CU_ASSERT_DOUBLE_EQUAL(o, 11, 1e-9);
    n = dt_kset_greedy(&p, 2, set, &o, &e);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_DOUBLE_EQUAL(o, 11, 1e-9);
    /* K = 1: the best single kernel: K1 = 4 + 3 + 8 + 4 = 19 (K3 = 25,
     * K2 = 16 + 12 + 2 + 2 = 32, K0 = 30) */
    n = dt_kset_choose(&p, 1, set, &o, &e);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(set[0], 1);
    CU_ASSERT_DOUBLE_EQUAL(o, 19, 1e-9);
    /* a budget above what helps returns only the kernels that lower it */
    n = dt_kset_choose(&p, 4, set, &o, &e);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_DOUBLE_EQUAL(o, 11, 1e-9);
    CU_ASSERT(dt_kset_choose(&p, 0, set, &o, &e) < 0);
    dt_kset_free(&p);
}

static void test_greedy_trap(void)
{
    /* A generalist (5, 5) is the best single kernel, so greedy forward
     * starts with it; the optimum of 2 is the two specialists (1, 10) and
     * (10, 1): swap refinement must find it */
    const double w[2] = {0.5, 0.5};
    const double t[2 * 3] = {5, 1, 10, 5, 10, 1};
    dt_kset p;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_kset_init(&p, 2, 3, w, t, &e), 0);
    int set[DT_KSET_MAX];
    double o;
    CU_ASSERT_EQUAL(dt_kset_greedy(&p, 1, set, &o, &e), 1);
    CU_ASSERT_EQUAL(set[0], 0);
    CU_ASSERT_DOUBLE_EQUAL(o, 5, 1e-9);
    CU_ASSERT_EQUAL(dt_kset_greedy(&p, 2, set, &o, &e), 2);
    CU_ASSERT_EQUAL(set[0], 1);
    CU_ASSERT_EQUAL(set[1], 2);
    CU_ASSERT_DOUBLE_EQUAL(o, 1, 1e-9);
    dt_kset_free(&p);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void test_random_matrices(void)
{
    uint64_t seed = 7;
    dt_err e;
    for (int trial = 0; trial < 40; trial++) {
        int ns = 3 + (int)(lcg(&seed) % 30), nk = 2 + (int)(lcg(&seed) % 9);
        double *w = malloc((size_t)ns * sizeof *w), *t = malloc((size_t)(ns * nk) * sizeof *t);
        double ws = 0;
        for (int s = 0; s < ns; s++)
            ws += w[s] = 1 + (double)(lcg(&seed) % 100);
        for (int s = 0; s < ns; s++)
            w[s] /= ws;
        for (int i = 0; i < ns * nk; i++)
            t[i] = 10 + (double)(lcg(&seed) % 1000);
        dt_kset p;
        CU_ASSERT_EQUAL_FATAL(dt_kset_init(&p, ns, nk, w, t, &e), 0);
        int set[DT_KSET_MAX], all[DT_KSET_MAX];
        for (int k = 0; k < nk; k++)
            all[k] = k;
        double single, o, ox, oall = dt_kset_objective(&p, all, nk);
        CU_ASSERT_EQUAL(dt_kset_greedy(&p, 1, set, &single, &e), 1);
        for (int k = 0; k < nk; k++) /* K = 1 is the best single kernel */
            CU_ASSERT(single <= dt_kset_objective(&p, &k, 1) + 1e-9);
        for (int K = 1; K <= nk; K++) {
            int n = dt_kset_greedy(&p, K, set, &o, &e);
            CU_ASSERT(n >= 1 && n <= K);
            CU_ASSERT_DOUBLE_EQUAL(o, dt_kset_objective(&p, set, n), 1e-6);
            CU_ASSERT(o <= single + 1e-9);
            CU_ASSERT(o >= oall - 1e-9);
            int nx = dt_kset_exact(&p, K, set, &ox, &e);
            CU_ASSERT(nx >= 1 && nx <= K);
            CU_ASSERT(ox <= o + 1e-9); /* the exact optimum is never beaten */
            for (int i = 1; i < nx; i++)
                CU_ASSERT(set[i - 1] < set[i]);
        }
        /* the automatic budget: within 1 % of every kernel together, and
         * one kernel fewer (as chosen) would not be */
        int n = dt_kset_auto(&p, 0.01, set, &o, &e);
        CU_ASSERT(n >= 1 && n <= nk);
        CU_ASSERT(o <= oall * 1.01 + 1e-9);
        if (n > 1) {
            double prev;
            CU_ASSERT(dt_kset_choose(&p, n - 1, set, &prev, &e) >= 1);
            CU_ASSERT(prev > oall * 1.01);
        }
        dt_kset_free(&p);
        free(w);
        free(t);
    }
}

static void test_unusable_and_auto(void)
{
    /* K0 cannot run s1 (inf): alone it pays twice the slowest usable time
     * there, so the kernel that covers both shapes is the best single */
    const double w[2] = {0.5, 0.5};
    const double t[2 * 2] = {1, 10, INFINITY, 10};
    dt_kset p;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_kset_init(&p, 2, 2, w, t, &e), 0);
    int set[DT_KSET_MAX];
    double o;
    CU_ASSERT_EQUAL(dt_kset_choose(&p, 1, set, &o, &e), 1);
    CU_ASSERT_EQUAL(set[0], 1);
    CU_ASSERT_EQUAL(dt_kset_choose(&p, 2, set, &o, &e), 2);
    CU_ASSERT_DOUBLE_EQUAL(o, 0.5 * 1 + 0.5 * 10, 1e-9);
    dt_kset_free(&p);

    /* auto: every kernel together gives 100 on each shape; {K1} alone
     * loses 0.33 %, {K0, K1} nothing (K2 never helps) */
    const double w3[3] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
    const double t3[3 * 3] = {100, 100.5, 105, 100, 100.5, 105, 115, 100, 105};
    CU_ASSERT_EQUAL_FATAL(dt_kset_init(&p, 3, 3, w3, t3, &e), 0);
    int n = dt_kset_auto(&p, 0.01, set, &o, &e);
    /* {K1} = (100.5 + 100.5 + 100) / 3 = 100.33: within 1 % of 100 */
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(set[0], 1);
    n = dt_kset_auto(&p, 0.001, set, &o, &e);
    CU_ASSERT_EQUAL(n, 2); /* {K0, K1} = 100 exactly */
    CU_ASSERT_DOUBLE_EQUAL(o, 100, 1e-9);
    dt_kset_free(&p);
}

/* ---- dt_select_run on a task --------------------------------------------------- */

/* A task on 6 shapes (uniform weights) with n stream kernels interned in db. */
static int budget_task(const char *name, dt_task *t, dt_db **db, dt_target *tg, char *tkey,
                       int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    dt_err e;
    dt_workload *w = NULL;
    if (dt_target_detect(tg, &e) || dt_target_key(tg, tkey, DT_TARGET_KEY_MAX) ||
        dt_workload_parse_key("dense(M={8,16,24,32,40,48},N=32,K=32)", &w, &e) ||
        dt_task_init(t, "t", w, 1, 1, &e)) {
        dt_workload_free(w);
        return -1;
    }
    dt_workload_free(w);
    if (dt_db_open(path, DT_DB_CREATE, db, &e) || dt_task_attach(t, *db, tg, tkey, &e))
        return -1;
    dt_rng r;
    dt_rng_seed(&r, 11);
    for (int tries = 0; n > 0 && tries < 1000; tries++) {
        dt_annotation a;
        if (dt_annotation_sample(&r, tg, DT_SKETCH_STREAM, t->threads, &a, &e) ||
            dt_task_find(t, &a) >= 0)
            continue;
        int64_t id = 0;
        char *js = dt_annotation_to_string(&a);
        int rc = dt_db_kernel_intern(*db, t->w->op->name, dt_sketch_name(a.sketch), js, NULL,
                                     &id, &e);
        free(js);
        if (rc || dt_task_add(t, &a, id, &e) < 0)
            return -1;
        n--;
    }
    return n == 0 ? 0 : -1;
}

/* Records kernel k's times on the 6 shapes (NAN: not measured) in the task
 * and as ok measurements in db (so dispatch_stats sees them too). */
static void record(dt_task *t, dt_db *db, int k, const double *ns)
{
    static int uid;
    dt_err e;
    for (int64_t s = 0; s < t->nshapes; s++) {
        if (isnan(ns[s]))
            continue;
        CU_ASSERT_EQUAL(dt_task_record(t, k, s, ns[s]), 0);
        int64_t vals[DT_MAX_VARS];
        char shape[64], tu[64];
        dt_workload_shape_at(t->w, s, vals, NULL);
        dt_shape_format(t->w, vals, shape, sizeof shape);
        snprintf(tu, sizeof tu, "budget-%d", uid++);
        dt_db_measurement m = {.kernel_id = t->k[k].id, .target_id = t->target_id,
                               .workload_id = t->workload_id, .shape = shape,
                               .threads = t->threads, .status = DT_TRIAL_OK, .min_ns = ns[s],
                               .median_ns = ns[s], .trial_uid = tu};
        CU_ASSERT_EQUAL(dt_db_measurement_insert(db, &m, NULL, NULL, &e), 0);
    }
}

static int run_budget(dt_task *t, dt_predictor *p, dt_db *db, int max_kernels,
                      dt_select_info *info)
{
    dt_err e;
    dt_select_opts o = {.topk = 0, .max_trials = 0, .max_kernels = max_kernels};
    int rc = dt_select_run(t, p, NULL, &o, db, info, &e);
    if (rc)
        fprintf(stderr, "dt_select_run: %s\n", e.msg);
    return rc;
}

static void test_select_run(void)
{
    dt_task t;
    dt_db *db = NULL;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL_FATAL(budget_task("selrun", &t, &db, &tg, tkey, 3), 0);
    enum { A, B, C };
    /* A fast on the small shapes, B on the large ones, C a generalist:
     * per-shape fastest 100 everywhere; {C} = 140 (loss 40 %); {A, B} = 100 */
    const double ta[6] = {100, 100, 100, 200, 200, 200}, tb[6] = {200, 200, 200, 100, 100, 100},
                 tc[6] = {140, 140, 140, 140, 140, 140};
    record(&t, db, A, ta);
    record(&t, db, B, tb);
    record(&t, db, C, tc);
    dt_predictor p;
    dt_predictor_init(&p, t.w->op->name, DT_DTYPE_F32, &tg, t.target_id);
    dt_select_info info;

    CU_ASSERT_EQUAL_FATAL(run_budget(&t, &p, db, 1, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT_EQUAL(info.ranges, 1);
    CU_ASSERT_EQUAL(info.nids, 1);
    CU_ASSERT_EQUAL(info.kernel_ids[0], t.k[C].id);
    CU_ASSERT_EQUAL(info.max_kernels, 1);
    CU_ASSERT_DOUBLE_EQUAL(info.objective, 140, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(info.best_objective, 100, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(info.loss, 0.4, 1e-12);
    CU_ASSERT_EQUAL(info.best_kernels, 2);
    CU_ASSERT_EQUAL(info.unmeasured, 0);
    /* the same figures from the database (query, export) */
    dt_dispatch *d = NULL;
    dt_dispatch_stats st;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, t.key, tkey, 1, &d, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_stats_load(db, d, tkey, &st, &e), 0);
    CU_ASSERT_EQUAL(st.kernels, 1);
    CU_ASSERT_EQUAL(st.ranges, 1);
    CU_ASSERT_EQUAL(st.kernel_ids[0], t.k[C].id);
    CU_ASSERT_DOUBLE_EQUAL(st.objective_ns, 140, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(st.best_objective_ns, 100, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(st.loss, 0.4, 1e-12);
    CU_ASSERT_EQUAL(st.best_kernels, 2);
    CU_ASSERT_EQUAL(st.unmeasured, 0);
    dt_dispatch_free(d);

    /* K = 2 and auto: {A, B}, no loss, two ranges */
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL_FATAL(run_budget(&t, &p, db, i ? DT_SELECT_AUTO : 2, &info), 0);
        CU_ASSERT_EQUAL(info.kernels, 2);
        CU_ASSERT_EQUAL(info.ranges, 2);
        CU_ASSERT_DOUBLE_EQUAL(info.objective, 100, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(info.loss, 0, 1e-12);
    }
    /* a generalist within 1 %: auto takes it alone */
    const double tc2[6] = {100.5, 100.5, 100.5, 100.5, 100.5, 100.5};
    for (int64_t s = 0; s < 6; s++)
        t.k[C].m[s].ns = (float)tc2[s];
    CU_ASSERT_EQUAL_FATAL(run_budget(&t, &p, db, DT_SELECT_AUTO, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT(info.loss <= DT_SELECT_LOSS_TOL);
    CU_ASSERT_DOUBLE_EQUAL(info.loss, 0.005, 1e-6);
    /* unrestricted: today's per-shape choice (C never fastest) */
    CU_ASSERT_EQUAL_FATAL(run_budget(&t, &p, db, DT_SELECT_ALL, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 2);
    CU_ASSERT_EQUAL(info.max_kernels, DT_SELECT_ALL);
    dt_predictor_free(&p);
    dt_task_free(&t);
    dt_db_close(db);
}

/* Two kernels on a 6-shape task: A measured everywhere at 1 ms, D on s0
 * only, at d0 ns — its other shapes are estimated from its prediction
 * there, scaled by measured / predicted on s0 (the same flops: about d0). */
typedef struct est_case {
    dt_task t;
    dt_db *db;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_predictor p;
} est_case;

static void estimates_task(const char *name, double d0, est_case *c)
{
    c->db = NULL;
    CU_ASSERT_EQUAL_FATAL(budget_task(name, &c->t, &c->db, &c->tg, c->tkey, 2), 0);
    const double ta[6] = {1e6, 1e6, 1e6, 1e6, 1e6, 1e6};
    const double td[6] = {d0, NAN, NAN, NAN, NAN, NAN};
    record(&c->t, c->db, 0, ta);
    record(&c->t, c->db, 1, td);
    dt_predictor_init(&c->p, c->t.w->op->name, DT_DTYPE_F32, &c->tg, c->t.target_id);
}

static void test_select_estimates(void)
{
    /* D measured at 50 ns on s0: a few hundred ns at most elsewhere */
    est_case c;
    estimates_task("selest", 50, &c);
    dt_select_info info;
    /* nothing can be measured: the set is chosen on measured times, an
     * unmeasured pair counted at its estimate but at least 2 % above its
     * shape's fastest measured unless the estimate is DT_SELECT_DISTRUST
     * times below that — D's few hundred ns against A's 1 ms are: K = 1 is
     * D, its 5 other shapes unmeasured (objective unknown, the loss over s0
     * alone: 0) */
    CU_ASSERT_EQUAL_FATAL(run_budget(&c.t, &c.p, c.db, 1, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT_EQUAL(info.kernel_ids[0], c.t.k[1].id);
    CU_ASSERT_EQUAL(info.unmeasured, 5);
    CU_ASSERT_EQUAL(info.trials, 0);
    CU_ASSERT(isnan(info.objective));
    CU_ASSERT_DOUBLE_EQUAL(info.loss, 0, 1e-12);
    CU_ASSERT_EQUAL(info.best_kernels, 2);
    /* K = 2 too: D's estimates on s1..s5 are more than DT_SELECT_DISTRUST
     * times below A's measured 1 ms, so they are not floored to it and each
     * of those shapes goes to D unmeasured rather than to A measured */
    CU_ASSERT_EQUAL_FATAL(run_budget(&c.t, &c.p, c.db, 2, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT_EQUAL(info.kernel_ids[0], c.t.k[1].id);
    CU_ASSERT_EQUAL(info.unmeasured, 5);
    /* unrestricted, the same distrust: s1..s5 to D unmeasured, not to A,
     * the only kernel measured there */
    CU_ASSERT_EQUAL_FATAL(run_budget(&c.t, &c.p, c.db, DT_SELECT_ALL, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT_EQUAL(info.kernel_ids[0], c.t.k[1].id);
    CU_ASSERT_EQUAL(info.unmeasured, 5);
    /* with trials to spend, the estimates choose D and its 5 unmeasured
     * shapes are measured (here they fail: D is dropped, A is chosen again
     * on what was measured) */
    dt_measurer *m = dt_test_failing_measurer(c.db, &c.tg, c.tkey);
    CU_ASSERT_FATAL(m != NULL);
    dt_select_opts o = {.topk = 2, .max_trials = 100, .max_kernels = 1};
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_select_run(&c.t, &c.p, m, &o, c.db, &info, &e), 0);
    CU_ASSERT(c.t.k[1].failed);
    for (int64_t s = 1; s < 6; s++)
        CU_ASSERT(isinf(dt_task_measured(&c.t, 1, s)));
    CU_ASSERT_EQUAL(info.trials, 5);
    CU_ASSERT_EQUAL(info.kernels, 1);
    CU_ASSERT_EQUAL(info.kernel_ids[0], c.t.k[0].id);
    CU_ASSERT_DOUBLE_EQUAL(info.loss, 0, 1e-12); /* D failed: it counts nowhere */
    dt_measurer_close(m);
    dt_predictor_free(&c.p);
    dt_task_free(&c.t);
    dt_db_close(c.db);
}

/* An estimate within DT_SELECT_DISTRUST of what was measured does not
 * override it: D measured on s0 at half of A's time, so its estimates
 * elsewhere are about half of A's measured 1 ms (the same flops) — floored,
 * and with K = 2 every shape goes to a measured kernel. */
static void test_select_estimates_trusted(void)
{
    est_case c;
    estimates_task("seltrust", 5e5, &c);
    dt_select_info info;
    CU_ASSERT_EQUAL_FATAL(run_budget(&c.t, &c.p, c.db, 2, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 2);
    CU_ASSERT_EQUAL(info.unmeasured, 0);
    CU_ASSERT_DOUBLE_EQUAL(info.objective, (5e5 + 5e6) / 6, 1e-6);
    /* unrestricted: each shape to its fastest measured */
    CU_ASSERT_EQUAL_FATAL(run_budget(&c.t, &c.p, c.db, DT_SELECT_ALL, &info), 0);
    CU_ASSERT_EQUAL(info.kernels, 2);
    CU_ASSERT_EQUAL(info.unmeasured, 0);
    CU_ASSERT_DOUBLE_EQUAL(info.objective, (5e5 + 5e6) / 6, 1e-6);
    dt_predictor_free(&c.p);
    dt_task_free(&c.t);
    dt_db_close(c.db);
}

/* The estimates' scale: measured / predicted over the kernel's measured
 * shapes, but not those whose prediction is at the model's floor. */
static void test_select_estimates_floor(void)
{
    dt_task t;
    dt_db *db = NULL;
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL_FATAL(budget_task("selfloor", &t, &db, &tg, tkey, 1), 0);
    const double ns[6] = {1000, NAN, NAN, NAN, NAN, 5e6};
    record(&t, db, 0, ns);
    t.k[0].pred = malloc((size_t)t.nshapes * sizeof *t.k[0].pred);
    CU_ASSERT_FATAL(t.k[0].pred != NULL);
    for (int64_t s = 0; s < t.nshapes; s++)
        t.k[0].pred[s] = (float)(t.flops[s] / 10); /* 10 GFLOP/s */
    t.k[0].pred[0] = 2000; /* the model 2x slow where it has a label */
    t.k[0].pred[5] = (float)(t.flops[5] / DT_PREDICTOR_FLOOR); /* at the floor */
    CU_ASSERT(dt_predictor_at_floor(t.flops[5], t.k[0].pred[5]));
    CU_ASSERT(!dt_predictor_at_floor(t.flops[0], t.k[0].pred[0]));
    double est[6];
    dt_select_estimates(&t, 0, est);
    CU_ASSERT_DOUBLE_EQUAL(est[0], 1000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(est[5], 5e6, 1e-3);
    for (int64_t s = 1; s < 5; s++) /* scaled by s0's 0.5 alone */
        CU_ASSERT_DOUBLE_EQUAL(est[s], 0.5 * t.k[0].pred[s], 1e-6 * t.k[0].pred[s]);
    /* only floor predictions: no scale */
    t.k[0].pred[0] = (float)(t.flops[0] / DT_PREDICTOR_FLOOR);
    dt_select_estimates(&t, 0, est);
    CU_ASSERT_DOUBLE_EQUAL(est[2], t.k[0].pred[2], 1e-6 * t.k[0].pred[2]);
    dt_task_free(&t);
    dt_db_close(db);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"known optimum of a small case, exact and greedy", test_known_optimum},
        {"greedy trap: swap refinement finds the two specialists", test_greedy_trap},
        {"random matrices: greedy between exact and the best single; budget kept",
         test_random_matrices},
        {"unusable pairs; the automatic budget's tolerance", test_unusable_and_auto},
        {"dt_select_run: K = 1, 2, auto, all; loss; dispatch_stats agrees", test_select_run},
        {"dt_select_run: unmeasured pairs: estimated and measured, or measured only",
         test_select_estimates},
        {"dt_select_run: an estimate within DT_SELECT_DISTRUST of a measurement does not win "
         "(budgeted and unrestricted)",
         test_select_estimates_trusted},
        {"dt_select_estimates: a prediction at the model's floor gives no scale",
         test_select_estimates_floor},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"select budget", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
