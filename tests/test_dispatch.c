/* Dispatch tables (dispatch/dispatch.c) from hand-made schedules: a shape
 * inside a range, at its edges, in a gap between ranges (the nearer range,
 * the left one on a tie), before the first and beyond the last tuned shape
 * (the nearest range, flagged extrapolated), shapes of two variables (the
 * last varies fastest; each variable clamped to its domain) in boxes, in
 * schema-2 runs read as boxes and in a gap (the box fewest domain steps
 * away), rows refused (reversed, overlapping, a shape outside the set),
 * every lookup of a committed schema-2 file as the previous dtune gave it, a schedule kernel whose
 * annotation belongs to another op refused, and the figures of a stored
 * table recomputed from hand-made records (dispatch/dispatch_stats.c:
 * objective, unrestricted choice, loss, unmeasured shapes, failed kernels
 * and other thread counts left out). */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/target.h"
#include "daemon/api.h"
#include "daemon/api_routes.h"
#include "db/db.h"
#include "dispatch/cache.h"
#include "dispatch/dispatch.h"
#include "dispatch/dispatch_stats.h"
#include "dt_test.h"
#include "dtune/dtune.h"
#include "space/annotation.h"
#include "shape/workload.h"

#define TARGET "x86_64-test-1c"
#define WKEY "dense(M=1..4,N=16,K=16)"

static dt_workload *parse(const char *key)
{
    dt_workload *w = NULL;
    dt_err e;
    if (dt_workload_parse_key(key, &w, &e))
        fprintf(stderr, "\n  %s: %s\n", key, e.msg);
    return w;
}

/* The kernel id and flag dt_dispatch_find gives for vals. */
static int64_t find(const dt_dispatch *d, const int64_t *vals, int *extrapolated,
                    int64_t *shape_idx)
{
    dt_dispatch_hit hit;
    if (dt_dispatch_find(d, vals, &hit) != 0)
        return -1;
    *extrapolated = hit.extrapolated;
    if (shape_idx)
        *shape_idx = hit.shape_idx;
    return hit.range->kernel_id;
}

typedef struct {
    int64_t m, kernel;
    int extrapolated;
} case1;

static void check_cases(const dt_dispatch *d, const case1 *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int ex = -1;
        int64_t k = find(d, &c[i].m, &ex, NULL);
        if (k != c[i].kernel || ex != c[i].extrapolated)
            fprintf(stderr, "\n  M=%lld: kernel %lld (want %lld), extrapolated %d (want %d)\n",
                    (long long)c[i].m, (long long)k, (long long)c[i].kernel, ex,
                    c[i].extrapolated);
        CU_ASSERT_EQUAL(k, c[i].kernel);
        CU_ASSERT_EQUAL(ex, c[i].extrapolated);
    }
}

/* Inside ranges, at their edges, before the first and past the last. */
static void test_lookup_ranges(void)
{
    dt_workload *w = parse("dense(M=1..8,N=16,K=16)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    /* given out of order: the table sorts them */
    dt_db_schedule rows[] = {
        {.shape_lo = "M=6", .shape_hi = "M=8", .kernel_id = 30, .predicted_ns = NAN,
         .measured_ns = 3},
        {.shape_lo = "M=1", .shape_hi = "M=2", .kernel_id = 10, .predicted_ns = 1,
         .measured_ns = 1},
        {.shape_lo = "M=3", .shape_hi = "M=5", .kernel_id = 20, .predicted_ns = 2,
         .measured_ns = NAN},
    };
    dt_dispatch *d = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 2, rows, 3, &d, &e), 0);
    CU_ASSERT_EQUAL(d->n, 3);
    CU_ASSERT_EQUAL(d->threads, 2);
    CU_ASSERT_STRING_EQUAL(d->key, "dense(M=1..8,N=16,K=16)");
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(d->r[i].kernel_id, 10 * (i + 1)); /* sorted */
    CU_ASSERT_EQUAL(d->r[1].box.lo[0], 2);
    CU_ASSERT_EQUAL(d->r[1].box.hi[0], 4);
    CU_ASSERT_STRING_EQUAL(d->r[1].shape_lo, "M=3");
    CU_ASSERT_STRING_EQUAL(d->r[1].shape_hi, "M=5");
    CU_ASSERT(isnan(d->r[1].measured_ns));
    CU_ASSERT_EQUAL(d->r[2].measured_ns, 3);
    static const case1 cases[] = {
        {1, 10, 0}, {2, 10, 0},             /* first range, both edges */
        {3, 20, 0}, {4, 20, 0}, {5, 20, 0}, /* inside and at the edges */
        {6, 30, 0}, {8, 30, 0},             /* the last range's edges */
        {0, 10, 1}, {-5, 10, 1},            /* before the tuned range */
        {9, 30, 1}, {100000, 30, 1},        /* beyond it */
    };
    check_cases(d, cases, sizeof cases / sizeof *cases);
    /* beyond the tuned range: the nearest shape of the set is reported */
    int ex;
    int64_t idx = -1;
    CU_ASSERT_EQUAL(find(d, (int64_t[]){4096}, &ex, &idx), 30);
    CU_ASSERT_EQUAL(idx, 7);
    CU_ASSERT_EQUAL(find(d, (int64_t[]){0}, &ex, &idx), 10);
    CU_ASSERT_EQUAL(idx, 0);
    dt_dispatch_free(d);

    /* one range covering the set: everything goes to it */
    dt_db_schedule one = {.shape_lo = "M=1", .shape_hi = "M=8", .kernel_id = 7};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, &one, 1, &d, &e), 0);
    static const case1 all[] = {{1, 7, 0}, {8, 7, 0}, {4, 7, 0}, {0, 7, 1}, {9, 7, 1}};
    check_cases(d, all, sizeof all / sizeof *all);
    dt_dispatch_free(d);
    dt_workload_free(w);
}

/* Gaps between ranges (a table loaded from elsewhere may have them): the
 * nearer neighbour, the left one on a tie, flagged; shapes before the first
 * range go to it. */
static void test_lookup_gaps(void)
{
    dt_workload *w = parse("dense(M=1..10,N=16,K=16)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    dt_db_schedule rows[] = {
        {.shape_lo = "M=3", .shape_hi = "M=4", .kernel_id = 1},
        {.shape_lo = "M=8", .shape_hi = "M=8", .kernel_id = 2},
    };
    dt_dispatch *d = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, rows, 2, &d, &e), 0);
    static const case1 cases[] = {
        {1, 1, 1}, {2, 1, 1},  /* shapes of the set before the first range */
        {3, 1, 0}, {4, 1, 0},
        {5, 1, 1},             /* gap 5..7: nearer the left range */
        {6, 1, 1},             /* a tie (2 and 2): the left one */
        {7, 2, 1},             /* nearer the right one */
        {8, 2, 0},
        {9, 2, 1}, {10, 2, 1}, /* shapes of the set past the last range */
        {11, 2, 1},
    };
    check_cases(d, cases, sizeof cases / sizeof *cases);
    dt_dispatch_free(d);

    /* a sparse set: a value between two of the set goes to the nearest one */
    dt_workload *s = parse("dense(M={5,24,43,62},N=16,K=16)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    dt_db_schedule srows[] = {{.shape_lo = "M=5", .shape_hi = "M=24", .kernel_id = 1},
                              {.shape_lo = "M=43", .shape_hi = "M=62", .kernel_id = 2}};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(s, 1, srows, 2, &d, &e), 0);
    static const case1 sparse[] = {{5, 1, 0}, {24, 1, 0}, {43, 2, 0}, {62, 2, 0},
                                   {30, 1, 1}, {40, 2, 1}, {6, 1, 1}, {1000, 2, 1}};
    check_cases(d, sparse, sizeof sparse / sizeof *sparse);
    dt_dispatch_free(d);
    dt_workload_free(s);
    dt_workload_free(w);
}

/* Two variables: shapes in mixed radix, the last variable fastest; a
 * schema-2 run may cross a row of the first variable (read as the boxes of
 * the run); out-of-domain values clamp. */
static void test_lookup_two_vars(void)
{
    dt_workload *w = parse("dense(M=batch*seq,N=16,K=16;batch=1..3,seq=1..4)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_EQUAL(dt_workload_nshapes(w), 12);
    dt_db_schedule rows[] = {
        {.shape_lo = "batch=1,seq=1", .shape_hi = "batch=1,seq=4", .kernel_id = 1},
        {.shape_lo = "batch=2,seq=1", .shape_hi = "batch=3,seq=2", .kernel_id = 2},
        {.shape_lo = "batch=3,seq=3", .shape_hi = "batch=3,seq=4", .kernel_id = 3},
    };
    dt_dispatch *d = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, rows, 3, &d, &e), 0);
    CU_ASSERT_EQUAL_FATAL(d->n, 4); /* the run batch=2,seq=1..batch=3,seq=2: two boxes */
    CU_ASSERT_EQUAL(d->r[1].box.lo[0], 1);
    CU_ASSERT_EQUAL(d->r[1].box.hi[0], 1);
    CU_ASSERT_EQUAL(d->r[1].box.lo[1], 0);
    CU_ASSERT_EQUAL(d->r[1].box.hi[1], 3);
    CU_ASSERT_STRING_EQUAL(d->r[2].shape_lo, "batch=3,seq=1");
    CU_ASSERT_STRING_EQUAL(d->r[2].shape_hi, "batch=3,seq=2");
    CU_ASSERT_EQUAL(d->r[2].kernel_id, 2);
    struct {
        int64_t v[2], kernel, idx;
        int extrapolated;
    } cases[] = {
        {{1, 1}, 1, 0, 0},   {{1, 4}, 1, 3, 0},   {{2, 1}, 2, 4, 0},
        {{2, 4}, 2, 7, 0},   {{3, 2}, 2, 9, 0},   {{3, 3}, 3, 10, 0},
        {{3, 4}, 3, 11, 0},  {{1, 9}, 1, 3, 1},   /* seq clamped to 4 */
        {{9, 1}, 2, 8, 1},   /* batch clamped to 3 */
        {{9, 9}, 3, 11, 1},  {{0, 0}, 1, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int ex = -1;
        int64_t idx = -1;
        CU_ASSERT_EQUAL(find(d, cases[i].v, &ex, &idx), cases[i].kernel);
        CU_ASSERT_EQUAL(idx, cases[i].idx);
        CU_ASSERT_EQUAL(ex, cases[i].extrapolated);
    }
    dt_dispatch_free(d);

    /* the same table as boxes; then a table with a gap: the box fewest
     * domain steps away, the first on a tie */
    dt_db_schedule boxes[] = {
        {.shape_lo = "batch=1,seq=1", .shape_hi = "batch=1,seq=4", .box = 1, .kernel_id = 1},
        {.shape_lo = "batch=2,seq=1", .shape_hi = "batch=2,seq=4", .box = 1, .kernel_id = 2},
        {.shape_lo = "batch=3,seq=1", .shape_hi = "batch=3,seq=2", .box = 1, .kernel_id = 2},
        {.shape_lo = "batch=3,seq=3", .shape_hi = "batch=3,seq=4", .box = 1, .kernel_id = 3},
    };
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, boxes, 4, &d, &e), 0);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int ex = -1;
        CU_ASSERT_EQUAL(find(d, cases[i].v, &ex, NULL), cases[i].kernel);
        CU_ASSERT_EQUAL(ex, cases[i].extrapolated);
    }
    dt_dispatch_free(d);
    dt_db_schedule gap[] = {
        {.shape_lo = "batch=1,seq=1", .shape_hi = "batch=1,seq=2", .box = 1, .kernel_id = 1},
        {.shape_lo = "batch=3,seq=3", .shape_hi = "batch=3,seq=4", .box = 1, .kernel_id = 3},
    };
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, gap, 2, &d, &e), 0);
    struct {
        int64_t v[2], kernel;
        int extrapolated;
    } gcases[] = {
        {{1, 2}, 1, 0}, {{3, 3}, 3, 0}, {{1, 4}, 1, 1}, /* 2 steps to box 1, 2 to box 3 */
        {{2, 1}, 1, 1}, {{3, 2}, 3, 1}, {{2, 4}, 3, 1}, {{9, 9}, 3, 1},
    };
    for (size_t i = 0; i < sizeof gcases / sizeof *gcases; i++) {
        int ex = -1;
        CU_ASSERT_EQUAL(find(d, gcases[i].v, &ex, NULL), gcases[i].kernel);
        CU_ASSERT_EQUAL(ex, gcases[i].extrapolated);
    }
    dt_dispatch_free(d);

    /* rows that break the table are refused */
    boxes[2].shape_lo = "batch=2,seq=2"; /* overlaps the second box */
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, boxes, 4, &d, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "overlap"));
    boxes[2].shape_lo = "batch=3,seq=4"; /* reversed in seq */
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, boxes + 2, 1, &d, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reversed in seq"));
    dt_db_schedule bad[] = {
        {.shape_lo = "batch=1,seq=1", .shape_hi = "batch=2,seq=1", .kernel_id = 1},
        {.shape_lo = "batch=2,seq=1", .shape_hi = "batch=3,seq=4", .kernel_id = 2},
    };
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 2, &d, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "overlap"));
    CU_ASSERT_PTR_NULL(d);
    bad[0].shape_lo = "batch=3,seq=1"; /* reversed */
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 1, &d, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reversed"));
    bad[0].shape_lo = "batch=1,seq=5"; /* not a shape of the set */
    CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 1, &d, &e), DT_EINVAL);
    bad[0].shape_lo = "batch=1"; /* a variable missing */
    CU_ASSERT_NOT_EQUAL(dt_dispatch_from_rows(w, 1, bad, 1, &d, &e), 0);
    dt_workload_free(w);
}

/* ---- with a database --------------------------------------------------------- */

static void record(dt_db *db, int64_t k, int64_t t, int64_t w, int m, int threads,
                   dt_trial_status st, double ns)
{
    static int uid;
    char shape[32], u[32];
    snprintf(shape, sizeof shape, "M=%d", m);
    snprintf(u, sizeof u, "dispatch-test-%d", ++uid);
    dt_db_measurement r = {.kernel_id = k, .target_id = t, .workload_id = w, .shape = shape,
                           .threads = threads, .status = st, .min_ns = ns, .median_ns = ns,
                           .trial_uid = u, .error = st == DT_TRIAL_OK ? NULL : "boom"};
    if (st != DT_TRIAL_OK)
        r.min_ns = r.median_ns = NAN;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_measurement_insert(db, &r, NULL, NULL, &e), 0);
}

static int64_t kernel(dt_db *db, const char *op, int i)
{
    char ann[64];
    snprintf(ann, sizeof ann, "{\"MR\":%d,\"NR\":16}", i);
    int64_t id = 0;
    dt_err e;
    CU_ASSERT_EQUAL(dt_db_kernel_intern(db, op, "direct", ann, NULL, &id, &e), 0);
    return id;
}

/* A stored table's figures recomputed from hand-made records (weights
 * uniform over M=1..4). */
static void test_stats(void)
{
    const char *path = dt_test_path("stats.db");
    unlink(path);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t tid, wid, k[5];
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, TARGET, "generic", NULL, &tid, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, WKEY, "dense", "{}", &wid, &e), 0);
    for (int i = 1; i <= 4; i++)
        k[i] = kernel(db, "dense", i);
    /* k1: 100 on M=1..2 (its best of two records on M=1), slower beyond */
    record(db, k[1], tid, wid, 1, 1, DT_TRIAL_OK, 120);
    record(db, k[1], tid, wid, 1, 1, DT_TRIAL_OK, 100);
    record(db, k[1], tid, wid, 2, 1, DT_TRIAL_OK, 100);
    record(db, k[1], tid, wid, 3, 1, DT_TRIAL_OK, 300);
    record(db, k[1], tid, wid, 4, 1, DT_TRIAL_OK, 400);
    /* k2: 200 on M=3..4; far faster at 2 threads, which does not count */
    record(db, k[2], tid, wid, 3, 1, DT_TRIAL_OK, 200);
    record(db, k[2], tid, wid, 4, 1, DT_TRIAL_OK, 200);
    record(db, k[2], tid, wid, 1, 2, DT_TRIAL_OK, 1);
    /* k3: fastest on M=1, but it failed once at 1 thread: counts for nothing */
    record(db, k[3], tid, wid, 1, 1, DT_TRIAL_OK, 50);
    record(db, k[3], tid, wid, 2, 1, DT_TRIAL_RUN_CRASH, NAN);
    /* k4: the fastest on M=4, not dispatched */
    record(db, k[4], tid, wid, 4, 1, DT_TRIAL_OK, 100);
    dt_db_schedule rows[] = {
        {.shape_lo = "M=1", .shape_hi = "M=2", .kernel_id = k[1], .predicted_ns = 1,
         .measured_ns = 100},
        {.shape_lo = "M=3", .shape_hi = "M=4", .kernel_id = k[2], .predicted_ns = 1,
         .measured_ns = 200},
    };
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_replace(db, wid, tid, 1, rows, 2, &e), 0);

    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_load(db, WKEY, TARGET, 0, &d, &e), 0);
    CU_ASSERT_EQUAL(d->threads, 1); /* threads 0: the highest count with a schedule */
    dt_dispatch_stats st;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_stats_load(db, d, TARGET, &st, &e), 0);
    CU_ASSERT_EQUAL(st.ranges, 2);
    CU_ASSERT_EQUAL(st.kernels, 2);
    CU_ASSERT_EQUAL(st.nids, 2);
    CU_ASSERT_EQUAL(st.kernel_ids[0], k[1]);
    CU_ASSERT_EQUAL(st.kernel_ids[1], k[2]);
    CU_ASSERT_EQUAL(st.shapes, 4);
    CU_ASSERT_EQUAL(st.unmeasured, 0);
    /* dispatched 100 100 200 200; fastest 100 100 200 100 (k1 k1 k2 k4) */
    CU_ASSERT_DOUBLE_EQUAL(st.objective_ns, 150, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(st.best_objective_ns, 125, 1e-9);
    CU_ASSERT_EQUAL(st.best_kernels, 3);
    CU_ASSERT_DOUBLE_EQUAL(st.loss, 0.2, 1e-12);
    dt_dispatch_free(d);

    /* one range of k2: M=1..2 unmeasured, the loss over M=3..4 only */
    dt_workload *w = parse(WKEY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    dt_db_schedule one = {.shape_lo = "M=1", .shape_hi = "M=4", .kernel_id = k[2]};
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, &one, 1, &d, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_stats_load(db, d, TARGET, &st, &e), 0);
    CU_ASSERT_EQUAL(st.kernels, 1);
    CU_ASSERT_EQUAL(st.unmeasured, 2);
    CU_ASSERT(isnan(st.objective_ns));
    CU_ASSERT_DOUBLE_EQUAL(st.best_objective_ns, 125, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(st.loss, 400.0 / 300.0 - 1, 1e-12);
    dt_dispatch_free(d);
    /* an unknown target */
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_from_rows(w, 1, &one, 1, &d, &e), 0);
    CU_ASSERT_EQUAL(dt_dispatch_stats_load(db, d, "x86_64-none-1c", &st, &e), DT_ENOTFOUND);
    dt_dispatch_free(d);
    dt_workload_free(w);

    /* what a load says is missing */
    CU_ASSERT_EQUAL(dt_dispatch_load(db, "dense(M=1..5,N=16,K=16)", TARGET, 1, &d, &e),
                    DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "never been tuned"));
    CU_ASSERT_EQUAL(dt_dispatch_load(db, WKEY, TARGET, 4, &d, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at 4 threads"));
    dt_db_close(db);
}

/* A schedule's kernel must be a kernel of the workload's op. */
static void test_kernel_annotation(void)
{
    const char *path = dt_test_path("ann.db");
    unlink(path);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    dt_target tg;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&tg, &e), 0);
    dt_rng rng;
    dt_rng_seed(&rng, 7);
    dt_annotation a, back;
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &tg, -1, 1, &a, &e), 0);
    char *text = dt_annotation_to_string(&a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    int64_t kd = 0, kb = 0;
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, "dense", "direct", text, NULL, &kd, &e), 0);
    CU_ASSERT_EQUAL_FATAL(
        dt_db_kernel_intern(db, "batch_matmul", "direct", text, NULL, &kb, &e), 0);
    free(text);
    dt_workload *w = parse(WKEY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_EQUAL(dt_dispatch_kernel_annotation(db, kd, w, &back, &e), 0);
    CU_ASSERT(dt_annotation_equal(&a, &back));
    /* another op's kernel: refused, saying whose it is */
    CU_ASSERT_EQUAL(dt_dispatch_kernel_annotation(db, kb, w, &back, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "batch_matmul kernel"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "the workload is dense"));
    /* no such kernel */
    CU_ASSERT_EQUAL(dt_dispatch_kernel_annotation(db, kb + 100, w, &back, &e), DT_ENOTFOUND);
    /* the same op, but not an annotation: refused with the kernel named */
    int64_t kx = kernel(db, "dense", 3);
    CU_ASSERT_NOT_EQUAL(dt_dispatch_kernel_annotation(db, kx, w, &back, &e), 0);
    char id[32];
    snprintf(id, sizeof id, "kernel %lld", (long long)kx);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, id));
    dt_workload_free(w);
    dt_db_close(db);
}

/* ---- a schema-2 file of the previous dtune (tests/data/v2/README.md) --------- */

/* Every lookup the schema-2 code gave for tests/data/v2/v2.db, the same
 * after this dtune opens (migrates) a copy: its multi-variable runs, some
 * crossing a row, are read as the boxes of their runs. */
static void test_schema2_file(void)
{
    char src[1024], cmd[2200];
    snprintf(src, sizeof src, "%s/tests/data/v2/v2.db", DTUNE_SOURCE_DIR);
    const char *path = dt_test_path("v2.db");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, path);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, 0, &db, &e), 0);
    snprintf(src, sizeof src, "%s/tests/data/v2/lookups.txt", DTUNE_SOURCE_DIR);
    FILE *f = fopen(src, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[512];
    int n = 0, multi = 0;
    while (fgets(line, sizeof line, f)) {
        char *key = strtok(line, "\t"), *shape = strtok(NULL, "\t"), *kid = strtok(NULL, "\t"),
             *ex = strtok(NULL, "\t\n");
        CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
        dt_dispatch *d = NULL;
        int64_t vals[DT_MAX_VARS];
        int in = 0;
        CU_ASSERT_EQUAL_FATAL(
            dt_dispatch_load(db, key, "x86_64-avx512-2c-48K.2M.480M", 0, &d, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_shape_parse(d->w, shape, vals, &in, &e), 0);
        int got_ex = -1;
        int64_t k = find(d, vals, &got_ex, NULL);
        if (k != atoll(kid) || got_ex != atoi(ex))
            fprintf(stderr, "\n  %s %s: kernel %lld extrapolated %d, schema 2 gave %s %s\n", key,
                    shape, (long long)k, got_ex, kid, ex);
        CU_ASSERT_EQUAL(k, atoll(kid));
        CU_ASSERT_EQUAL(got_ex, atoi(ex));
        multi += d->w->nvars > 1;
        dt_dispatch_free(d);
        n++;
    }
    fclose(f);
    CU_ASSERT_EQUAL(n, 104);
    CU_ASSERT_EQUAL(multi, 82);
    dt_db_close(db);
}

/* ---- issue 42: a stored row dispatch cannot read is damage ------------------- */

#define DKEY1 "dense(M=1..8,N=16,K=16)"
#define DKEY2 "dense(M=b*s,N=16,K=16;b=1..3,s=1..4)"
#define DKEY3 "dense(M=1..4,N=8,K=8)"

static void sql_exec(const char *path, const char *sql)
{
    sqlite3 *s = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &s), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(s, sql, NULL, NULL, &err) != SQLITE_OK)
        fprintf(stderr, "\n  %s: %s\n", sql, err ? err : "");
    sqlite3_free(err);
    sqlite3_close(s);
}

/* Three tuned workloads, then one row of each given corners that name other
 * variables (schedules rows 2, 4, 5), as a hostile or broken writer might:
 * DKEY1's second box b=1..b=1, DKEY2's second b=1,s=3,z=1..b=3,s=4,z=1,
 * DKEY3's only row ''..''. */
static void make_damaged_db(const char *path)
{
    unlink(path);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t tid, w1, w2, w3;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, TARGET, "generic", NULL, &tid, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, DKEY1, "dense", "{}", &w1, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, DKEY2, "dense", "{}", &w2, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, DKEY3, "dense", "{}", &w3, &e), 0);
    int64_t k1 = kernel(db, "dense", 1), k2 = kernel(db, "dense", 2);
    dt_db_schedule r1[] = {
        {.shape_lo = "M=1", .shape_hi = "M=4", .box = 1, .kernel_id = k1, .predicted_ns = NAN,
         .measured_ns = NAN},
        {.shape_lo = "M=5", .shape_hi = "M=8", .box = 1, .kernel_id = k2, .predicted_ns = NAN,
         .measured_ns = NAN},
    };
    dt_db_schedule r2[] = {
        {.shape_lo = "b=1,s=1", .shape_hi = "b=3,s=2", .box = 1, .kernel_id = k1,
         .predicted_ns = NAN, .measured_ns = NAN},
        {.shape_lo = "b=1,s=3", .shape_hi = "b=3,s=4", .box = 1, .kernel_id = k2,
         .predicted_ns = NAN, .measured_ns = NAN},
    };
    dt_db_schedule r3[] = {{.shape_lo = "M=1", .shape_hi = "M=4", .box = 1, .kernel_id = k1,
                            .predicted_ns = NAN, .measured_ns = NAN}};
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w1, tid, 1, r1, 2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w2, tid, 1, r2, 2, &e), 0);
    CU_ASSERT_EQUAL(dt_db_schedule_replace(db, w3, tid, 1, r3, 1, &e), 0);
    dt_db_close(db);
    sql_exec(path, "UPDATE schedules SET shape_lo = 'b=1', shape_hi = 'b=1' WHERE id = 2;"
                   "UPDATE schedules SET shape_lo = 'b=1,s=3,z=1', shape_hi = 'b=3,s=4,z=1'"
                   " WHERE id = 4;"
                   "UPDATE schedules SET shape_lo = '', shape_hi = '' WHERE id = 5;");
}

static void expect_damage_msg(const char *msg, const char *row, const char *key)
{
    static const char *const want[] = {"is damaged", "dtune db check", TARGET, "1 thread"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(msg, want[i]))
            fprintf(stderr, "\n  '%s' lacks '%s'\n", msg, want[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, want[i]));
    }
    if (!strstr(msg, row) || !strstr(msg, key))
        fprintf(stderr, "\n  '%s' lacks '%s' or '%s'\n", msg, row, key);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, row));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, key));
}

/* A lookup with a correct shape of a workload whose stored row names other
 * variables fails as the database's damage (DT_EDB: exit 3, HTTP 500,
 * DTUNE_EDB) naming the row, the workload and the target and suggesting
 * `dtune db check`; never as the caller's bad shape (DT_EINVAL, exit 2,
 * HTTP 400).  The same rows handed in by a caller stay DT_EINVAL. */
static void test_damaged_row_is_damage(void)
{
    const char *path = dt_test_path("damaged-rows.db");
    make_damaged_db(path);
    static const struct {
        const char *key, *shape, *row;
    } cases[] = {
        {DKEY1, "M=3", "schedules row 2 "},
        {DKEY2, "b=2,s=1", "schedules row 4 "},
        {DKEY3, "M=2", "schedules row 5 "},
    };
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_READONLY, &db, &e), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_dispatch *d = NULL;
        dt_err_clear(&e);
        CU_ASSERT_EQUAL(dt_dispatch_load(db, cases[i].key, TARGET, 1, &d, &e), DT_EDB);
        CU_ASSERT_PTR_NULL(d);
        expect_damage_msg(e.msg, cases[i].row, cases[i].key);
        dt_dispatch_free(d);
        /* threads 0 (the highest) says the same */
        CU_ASSERT_EQUAL(dt_dispatch_load(db, cases[i].key, TARGET, 0, &d, &e), DT_EDB);
        dt_dispatch_free(d);
        /* the caller's own rows: bad input, as before */
        dt_workload *w = parse(cases[i].key);
        dt_db_workload wrow;
        dt_db_target trow;
        CU_ASSERT_EQUAL_FATAL(dt_db_workload_get(db, cases[i].key, &wrow, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_db_target_get(db, TARGET, &trow, &e), 0);
        dt_db_schedule *rows = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL_FATAL(dt_db_schedule_list(db, wrow.id, trow.id, 1, &rows, &n, &e), 0);
        CU_ASSERT_EQUAL(dt_dispatch_from_rows(w, 1, rows, n, &d, &e), DT_EINVAL);
        dt_db_schedules_free(rows, n);
        dt_db_workload_free(&wrow);
        dt_db_target_free(&trow);
        dt_workload_free(w);
        /* the real dtune query: exit 3 naming the row, nothing on stdout */
        dt_test_proc p;
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '%s' --shape %s --db %s --target %s",
                                          cases[i].key, cases[i].shape, path, TARGET),
                        3);
        expect_damage_msg(p.err, cases[i].row, cases[i].key);
        CU_ASSERT_STRING_EQUAL(p.out, "");
        dt_test_proc_free(&p);
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "query '%s' --shape %s --db %s --target %s --json",
                                          cases[i].key, cases[i].shape, path, TARGET),
                        3);
        dt_test_proc_free(&p);
        /* and dtune export of it */
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "export '%s' -o %s --db %s --target %s",
                                          cases[i].key, dt_test_path("damaged_export.c"), path,
                                          TARGET),
                        3);
        if (p.exit_code != 3)
            fprintf(stderr, "\n  export said (%d): %s%s\n", p.exit_code, p.out, p.err);
        expect_damage_msg(p.err, cases[i].row, cases[i].key);
        dt_test_proc_free(&p);
    }
    dt_db_close(db);

    /* the dispatch cache (libdtune's and the daemon's path) */
    dt_dispatch_cache *c = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_dispatch_cache_open(path, &c, &e), 0);
    dt_dispatch_query q = {.workload_key = DKEY1, .shape = "M=3", .target_key = TARGET};
    dt_dispatch_cache_result r;
    for (int again = 0; again < 2; again++) {
        dt_err_clear(&e);
        CU_ASSERT_EQUAL(dt_dispatch_cache_lookup(c, &q, &r, &e), DT_EDB);
        expect_damage_msg(e.msg, "schedules row 2 ", DKEY1);
    }

    /* GET /v1/schedules with a correct shape: a 500 naming the row, not a 400 */
    dt_api api = {.cache = c, .target_key = TARGET};
    dt_http_request req = {.method = "GET", .path = "/v1/schedules",
                           .query = "workload=dense%28M%3D1..8%2CN%3D16%2CK%3D16%29&M=3",
                           .body = "", .peer = "127.0.0.1:1"};
    dt_http_response res = {0};
    dt_api_schedules(&api, &req, &res);
    CU_ASSERT_EQUAL(res.status, 500);
    CU_ASSERT_PTR_NOT_NULL_FATAL(res.body);
    expect_damage_msg(res.body, "schedules row 2 ", DKEY1);
    free(res.body);
    dt_dispatch_cache_close(c);

    /* libdtune: DTUNE_EDB with the same message */
    dtune *h = NULL;
    CU_ASSERT_EQUAL_FATAL(dtune_open(path, &h), DTUNE_OK);
    dtune_schedule s;
    CU_ASSERT_EQUAL(dtune_lookup(h, DKEY1, "M=3", TARGET, 1, &s), DTUNE_EDB);
    expect_damage_msg(dtune_errmsg(), "schedules row 2 ", DKEY1);
    CU_ASSERT_EQUAL(dtune_lookup(h, DKEY2, "b=2,s=1", TARGET, 0, &s), DTUNE_EDB);
    expect_damage_msg(dtune_errmsg(), "schedules row 4 ", DKEY2);
    dtune_close(h);
}

/* Rows that each read but overlap as a table (a schema-2 run of two
 * variables beside a box, which db/'s own rules do not compare) are named
 * both. */
static void test_damaged_overlap_names_rows(void)
{
    const char *path = dt_test_path("damaged-overlap.db");
    unlink(path);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    int64_t tid, wid;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, TARGET, "generic", NULL, &tid, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, DKEY2, "dense", "{}", &wid, &e), 0);
    int64_t k1 = kernel(db, "dense", 1);
    /* the run b=1,s=1..b=2,s=1 holds b=1,s=4, which the box b=1,s=3..b=1,s=4 holds too */
    dt_db_schedule rows[] = {
        {.shape_lo = "b=1,s=1", .shape_hi = "b=2,s=1", .box = 0, .kernel_id = k1},
        {.shape_lo = "b=1,s=3", .shape_hi = "b=1,s=4", .box = 1, .kernel_id = k1},
    };
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_replace(db, wid, tid, 1, rows, 2, &e), 0);
    dt_dispatch *d = NULL;
    CU_ASSERT_EQUAL(dt_dispatch_load(db, DKEY2, TARGET, 1, &d, &e), DT_EDB);
    expect_damage_msg(e.msg, "schedules rows 1 and 2 ", DKEY2);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "overlap"));
    dt_db_close(db);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"lookup inside ranges, at the edges and beyond", test_lookup_ranges},
        {"lookup in gaps and on a sparse set", test_lookup_gaps},
        {"lookup of two-variable shapes; bad rows refused", test_lookup_two_vars},
        {"stats of a stored table from hand-made records", test_stats},
        {"a kernel of another op refused", test_kernel_annotation},
        {"a schema-2 file: every lookup as the previous dtune gave it", test_schema2_file},
        {"issue 42: a stored row naming other variables is damage (exit 3, HTTP 500, "
         "DTUNE_EDB), not bad input", test_damaged_row_is_damage},
        {"issue 42: stored rows that overlap as a table are named as damage",
         test_damaged_overlap_names_rows},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"dispatch", dt_test_suite_init, dt_test_suite_cleanup, NULL, NULL, tests},
        CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
