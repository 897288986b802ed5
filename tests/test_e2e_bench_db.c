/* End-to-end: `dtune bench WORKLOAD --db PATH` (the dispatched mode) through
 * the real binary, on databases built here with the db/ API — this
 * machine's target, two sampled kernels, a schedule of two ranges — so no
 * tune is needed.  Checks the kernel of every shape, the extrapolated flag
 * past the tuned range, per-shape verification, the summary, the thread
 * count override, each shape's back-end and the peak of its %peak (a bf16
 * schedule with a bf16/amx range where AMX is usable), and the errors (no
 * schedule, unknown workload, missing file, a kernel that cannot run). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/amx.h"
#include "common/target.h"
#include "db/db.h"
#include "space/annotation.h"
#include "backends/backend.h"
#include "dtypes/dtype.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

static char *g_dir;
static int g_cpus;

#define DENSE_KEY "dense(M=1..16,N=32,K=32)"
#define BMM_KEY "batch_matmul(B=2,M=seq,N=seq,K=16,layout=NT;seq=1..8)"

static int setup(void)
{
    g_dir = dt_test_tmpdir();
    dt_target t;
    dt_err e;
    if (dt_target_detect(&t, &e) == 0)
        g_cpus = t.logical_cpus;
    return g_dir ? 0 : 1;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

/* One range of a schedule to store: [lo, hi] of the variable, kernel index. */
typedef struct {
    int64_t lo, hi;
    int kernel;
} range_spec;

typedef struct {
    const char *key;        /* workload key */
    const char *var;        /* its variable */
    int threads;            /* schedule's thread count */
    int nranges;
    range_spec ranges[3];
} schedule_spec;

/* Builds dir/name with this machine's target, the workloads of specs, kernels
 * (two sampled valid ones; a third with a tile too large for any register
 * file when `bad_kernel`) and the schedules; kid[] gets the kernel ids.
 * Returns the malloc'ed path. */
static char *make_db(const char *name, const schedule_spec *specs, int nspecs, int bad_kernel,
                     int64_t kid[3])
{
    size_t n = strlen(g_dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", g_dir, name);
    remove(path);
    dt_db *db = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    dt_target t;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&t, &e), 0);
    char tkey[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&t, tkey, sizeof tkey), 0);
    int64_t tid;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, tkey, dt_isa_name(t.isa), NULL, &tid, &e), 0);
    for (int i = 0; i < nspecs; i++) {
        const schedule_spec *sp = &specs[i];
        dt_workload *w = NULL;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(sp->key, &w, &e), 0);
        char key[DT_KEY_MAX];
        dt_workload_key(w, key, sizeof key);
        int64_t wid;
        CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, key, w->op->name, "{}", &wid, &e), 0);
        /* kernels: sampled for 1 thread (a schedule for T threads runs them with T) */
        dt_rng rng;
        dt_rng_seed(&rng, 7);
        for (int k = 0; k < 2; k++) {
            dt_annotation a;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &t, k, 1, &a, &e), 0);
            char *json = dt_annotation_to_string(&a);
            CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, w->op->name, dt_sketch_name(a.sketch),
                                                      json, NULL, &kid[k], &e), 0);
            free(json);
        }
        if (bad_kernel) {
            char json[512];
            snprintf(json, sizeof json,
                     "{\"sketch\":\"stream\",\"isa\":\"generic\",\"mr\":20,\"nr\":8,\"kc\":0,"
                     "\"mc\":0,\"nc\":8,\"unroll\":1,\"prefetch\":0,\"store\":\"mask\","
                     "\"order\":\"m_inner\",\"par\":\"n\",\"threads\":1}");
            CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, w->op->name, "stream", json, NULL,
                                                      &kid[2], &e), 0);
        }
        dt_db_schedule rows[3];
        char lo[3][64], hi[3][64];
        memset(rows, 0, sizeof rows);
        for (int r = 0; r < sp->nranges; r++) {
            snprintf(lo[r], sizeof lo[r], "%s=%lld", sp->var, (long long)sp->ranges[r].lo);
            snprintf(hi[r], sizeof hi[r], "%s=%lld", sp->var, (long long)sp->ranges[r].hi);
            rows[r].shape_lo = lo[r];
            rows[r].shape_hi = hi[r];
            rows[r].kernel_id = kid[sp->ranges[r].kernel];
            rows[r].predicted_ns = NAN;
            rows[r].measured_ns = 1000.0 * (r + 1);
        }
        int rc = dt_db_schedule_replace(db, wid, tid, sp->threads, rows, (size_t)sp->nranges, &e);
        if (rc)
            fprintf(stderr, "\n  schedule_replace: %s\n", e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        dt_workload_free(w);
    }
    dt_db_close(db);
    return path;
}

/* Runs dtune bench ARGS --json; *exit_code gets the exit status; the JSON
 * (also printed on exit 3) or NULL. */
static json_t *bench_json(const char *args, int *exit_code, char **err)
{
    dt_test_proc p;
    *exit_code = dt_test_run_dtune(&p, "bench %s --repeats 1 --min-time 0.2 --json", args);
    json_error_t jerr;
    json_t *root = json_loads(p.out, 0, &jerr);
    if (*exit_code != 0)
        fprintf(stderr, "\n  dtune bench %s: exit %d: %s\n", args, *exit_code, p.err);
    if (err)
        *err = strdup(p.err);
    dt_test_proc_free(&p);
    return root;
}

static int64_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* Every kernel's back-end is the row its annotation names for dtype d, and
 * every shape's is its kernel's, with fraction_of_peak = gflops / the peak
 * of that back-end's kind (listed under "peaks"; null when the kernel did
 * not run). */
static void check_backends(json_t *r, dt_dtype d)
{
    json_t *kernels = json_object_get(r, "kernels"), *peaks = json_object_get(r, "peaks");
    CU_ASSERT_TRUE(json_is_object(peaks));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(peaks, json_string_value(json_object_get(r, "peak_kind"))));
    size_t i;
    json_t *k;
    json_array_foreach(kernels, i, k)
    {
        dt_annotation a;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_from_json(json_object_get(k, "annotation"), &a, &e), 0);
        const dt_backend *row = dt_backend_of_ann(d, &a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(row);
        char want[48];
        dt_backend_full_name(row, want, sizeof want);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(k, "backend")), want);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(k, "peak_kind")), row->peak);
    }
    json_t *s;
    json_array_foreach(json_object_get(r, "shapes"), i, s)
    {
        json_t *kernel = NULL;
        size_t j;
        json_array_foreach(kernels, j, k)
            if (jint(k, "id") == jint(s, "kernel_id"))
                kernel = k;
        CU_ASSERT_PTR_NOT_NULL_FATAL(kernel);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s, "backend")),
                               json_string_value(json_object_get(kernel, "backend")));
        const char *kind = json_string_value(json_object_get(s, "peak_kind"));
        CU_ASSERT_STRING_EQUAL(kind, json_string_value(json_object_get(kernel, "peak_kind")));
        double gflops = json_number_value(json_object_get(s, "gflops"));
        json_t *frac = json_object_get(s, "fraction_of_peak");
        if (!json_is_real(json_object_get(s, "gflops"))) {
            CU_ASSERT_TRUE(json_is_null(frac));
            continue;
        }
        double peak = json_real_value(json_object_get(json_object_get(peaks, kind), "gops"));
        CU_ASSERT_TRUE_FATAL(peak > 0);
        CU_ASSERT_DOUBLE_EQUAL(json_real_value(frac), gflops / peak, 1e-9 * gflops / peak);
    }
}

/* Every shape of r: the kernel of its range, extrapolated past `tuned_hi`,
 * verified; the summary counts. */
static void check_shapes(json_t *r, const char *var, int64_t first, int64_t last,
                         int64_t tuned_hi, const range_spec *ranges, int nranges,
                         const int64_t kid[3])
{
    json_t *shapes = json_object_get(r, "shapes");
    CU_ASSERT_EQUAL_FATAL(json_array_size(shapes), (size_t)(last - first + 1));
    for (int64_t v = first; v <= last; v++) {
        json_t *s = json_array_get(shapes, (size_t)(v - first));
        CU_ASSERT_EQUAL(jint(json_object_get(s, "vars"), var), v);
        /* the range holding v, or past the last range: the last one */
        int want = ranges[nranges - 1].kernel;
        for (int i = 0; i < nranges; i++)
            if (v >= ranges[i].lo && v <= ranges[i].hi)
                want = ranges[i].kernel;
        CU_ASSERT_EQUAL(jint(s, "kernel_id"), kid[want]);
        CU_ASSERT_EQUAL(json_is_true(json_object_get(s, "extrapolated")), v > tuned_hi);
        CU_ASSERT_TRUE(json_is_true(json_object_get(s, "verified")));
        CU_ASSERT_PTR_NULL(json_object_get(s, "error"));
        CU_ASSERT_TRUE(json_real_value(json_object_get(s, "gflops")) > 0);
        CU_ASSERT_TRUE(json_real_value(json_object_get(s, "gflop")) > 0);
        /* every peer that ran was checked against the reference, and passed */
        const char *name;
        json_t *pv;
        json_object_foreach(json_object_get(s, "peers_verified"), name, pv)
        {
            json_t *g = json_object_get(json_object_get(s, "peers"), name);
            if (json_is_real(g))
                CU_ASSERT_TRUE(json_is_true(pv));
        }
    }
    json_t *sum = json_object_get(r, "summary");
    int64_t ntuned = tuned_hi - first + 1, nextra = last - tuned_hi;
    CU_ASSERT_EQUAL(jint(json_object_get(sum, "tuned"), "shapes"), ntuned);
    CU_ASSERT_EQUAL(jint(json_object_get(sum, "tuned"), "verified"), ntuned);
    CU_ASSERT_EQUAL(jint(json_object_get(sum, "extrapolated"), "shapes"), nextra);
    CU_ASSERT_EQUAL(jint(json_object_get(sum, "extrapolated"), "verified"), nextra);
    CU_ASSERT_EQUAL(jint(json_object_get(sum, "all"), "shapes"), last - first + 1);
    CU_ASSERT_TRUE(json_is_true(json_object_get(r, "all_verified")));
    check_backends(r, DT_DTYPE_F32);
}

static void test_dense_dispatched(void)
{
    const schedule_spec spec = {DENSE_KEY, "M", 1, 2, {{1, 8, 0}, {9, 16, 1}}};
    int64_t kid[3];
    char *db = make_db("dense.db", &spec, 1, 0, kid);
    char args[2048];
    snprintf(args, sizeof args,
             "'%s' --db '%s' --shapes 1..24 --threads 1 --peers onednn,openblas", DENSE_KEY, db);
    int code;
    json_t *r = bench_json(args, &code, NULL);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r, "mode")), "dispatch");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r, "workload")), DENSE_KEY);
    CU_ASSERT_EQUAL(jint(r, "threads"), 1);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(r, "ranges")), 2);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(r, "kernels")), 2);
    check_shapes(r, "M", 1, 24, 16, spec.ranges, 2, kid);
    /* per kernel: how many shapes it served */
    json_t *k0 = json_array_get(json_object_get(r, "kernels"), 0);
    CU_ASSERT_EQUAL(jint(k0, "id"), kid[0]);
    CU_ASSERT_EQUAL(jint(k0, "shapes"), 8);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(k0, "status")), "ok");
    /* the ratios, when oneDNN is built in */
    json_t *peers = json_object_get(r, "peers");
    int have_onednn = 0;
    size_t i;
    json_t *p;
    json_array_foreach(peers, i, p)
        have_onednn |= !strcmp(json_string_value(json_object_get(p, "name")), "onednn");
    if (have_onednn) {
        json_t *s = json_array_get(json_object_get(r, "shapes"), 20);
        CU_ASSERT_TRUE(json_real_value(json_object_get(s, "ratio_vs_onednn")) > 0);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s, "onednn_best_peer")),
                               "onednn");
        json_t *ex = json_object_get(json_object_get(r, "summary"), "extrapolated");
        CU_ASSERT_TRUE(json_real_value(json_object_get(ex, "geomean_ratio_vs_onednn")) > 0);
        CU_ASSERT_TRUE(json_real_value(json_object_get(ex, "min_ratio_vs_onednn")) > 0);
        CU_ASSERT_PTR_NOT_NULL(json_string_value(json_object_get(ex, "min_shape")));
        CU_ASSERT_EQUAL(jint(ex, "ratios"), 8);
    } else {
        printf("\n    oneDNN is not built in: ratios not checked\n");
    }
    json_decref(r);

    /* the text table marks extrapolated shapes and prints both summaries */
    dt_test_proc tp;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&tp, "bench '%s' --db '%s' --shapes 15..18 --peers none "
                                           "--repeats 1 --min-time 0.2", DENSE_KEY, db), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, "M=17*"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, "extrapolated"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, "tuned"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, "verified 2/2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, "\npeaks: f32 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, " backend "));
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, " f32/")); /* ranges and shapes name their back-end */
    dt_test_proc_free(&tp);
    free(db);
}

static void test_bmm_dispatched(void)
{
    const schedule_spec spec = {BMM_KEY, "seq", 1, 2, {{1, 3, 1}, {4, 8, 0}}};
    int64_t kid[3];
    char *db = make_db("bmm.db", &spec, 1, 0, kid);
    char args[2048];
    snprintf(args, sizeof args, "'%s' --db '%s' --shapes 1..12 --peers onednn", BMM_KEY, db);
    int code;
    json_t *r = bench_json(args, &code, NULL);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    check_shapes(r, "seq", 1, 12, 8, spec.ranges, 2, kid);
    json_decref(r);
    free(db);
}

/* A schedule stored for 2 threads: its kernels (sampled for 1) run with 2;
 * without --threads the highest stored count is taken. */
static void test_threads(void)
{
    if (g_cpus < 2) {
        dt_test_skip("one CPU: a 2-thread schedule cannot run");
        return;
    }
    const schedule_spec specs[2] = {{DENSE_KEY, "M", 1, 1, {{1, 16, 0}}},
                                    {DENSE_KEY, "M", 2, 2, {{1, 4, 1}, {5, 16, 0}}}};
    int64_t kid[3];
    char *db = make_db("threads.db", specs, 2, 0, kid);
    char args[2048];
    for (int explicit_threads = 0; explicit_threads < 2; explicit_threads++) {
        snprintf(args, sizeof args, "'%s' --db '%s' --shapes 3..6 --peers none %s", DENSE_KEY,
                 db, explicit_threads ? "--threads 2" : "");
        int code;
        json_t *r = bench_json(args, &code, NULL);
        CU_ASSERT_EQUAL(code, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        CU_ASSERT_EQUAL(jint(r, "threads"), 2);
        check_shapes(r, "M", 3, 6, 6, specs[1].ranges, 2, kid);
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(r, "kernels"), i, k)
            CU_ASSERT_EQUAL(jint(json_object_get(k, "annotation"), "threads"), 2);
        json_decref(r);
    }
    /* --threads 1 takes the 1-thread schedule: one range, kernel 0 */
    snprintf(args, sizeof args, "'%s' --db '%s' --shapes 3..6 --peers none --threads 1",
             DENSE_KEY, db);
    int code;
    json_t *r = bench_json(args, &code, NULL);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(jint(r, "threads"), 1);
    check_shapes(r, "M", 3, 6, 6, specs[0].ranges, 1, kid);
    json_decref(r);
    free(db);
}

static void test_no_schedule(void)
{
    const schedule_spec spec = {DENSE_KEY, "M", 1, 1, {{1, 16, 0}}};
    int64_t kid[3];
    char *db = make_db("one.db", &spec, 1, 0, kid);
    dt_test_proc p;
    if (g_cpus >= 2) { /* the workload and target are there, not at 2 threads */
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench '%s' --db '%s' --threads 2", DENSE_KEY, db),
                        2);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "no schedule"));
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "2 threads"));
        CU_ASSERT_STRING_EQUAL(p.out, "");
        dt_test_proc_free(&p);
    }
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench 'dense(M=1..16,N=64,K=32)' --db '%s'", db), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "never been tuned"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench '%s' --db '%s/missing.db'", DENSE_KEY, g_dir), 2);
    dt_test_proc_free(&p);
    /* the dispatched kernels exclude --kernel and --sample */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "bench '%s' --db '%s' --sample 2", DENSE_KEY, db), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--db"));
    dt_test_proc_free(&p);
    free(db);
}

/* A range whose kernel cannot run here: the report is printed with those
 * shapes unverified, and the exit code is 3. */
static void test_unverified_kernel(void)
{
    const schedule_spec spec = {DENSE_KEY, "M", 1, 2, {{1, 8, 0}, {9, 16, 2}}};
    int64_t kid[3];
    char *db = make_db("bad.db", &spec, 1, 1, kid);
    char args[2048], *err = NULL;
    snprintf(args, sizeof args, "'%s' --db '%s' --shapes 7..10 --peers none", DENSE_KEY, db);
    int code;
    json_t *r = bench_json(args, &code, &err);
    CU_ASSERT_EQUAL(code, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not verified on 2 of 4 shapes"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(json_is_false(json_object_get(r, "all_verified")));
    json_t *shapes = json_object_get(r, "shapes");
    CU_ASSERT_TRUE(json_is_true(json_object_get(json_array_get(shapes, 1), "verified")));
    json_t *s = json_array_get(shapes, 2); /* M=9: the bad kernel */
    CU_ASSERT_EQUAL(jint(s, "kernel_id"), kid[2]);
    CU_ASSERT_TRUE(json_is_false(json_object_get(s, "verified")));
    CU_ASSERT_PTR_NOT_NULL(strstr(json_string_value(json_object_get(s, "error")), "register"));
    CU_ASSERT_TRUE(json_is_null(json_object_get(s, "gflops")));
    json_t *tuned = json_object_get(json_object_get(r, "summary"), "tuned");
    CU_ASSERT_EQUAL(jint(tuned, "verified"), 2);
    check_backends(r, DT_DTYPE_F32); /* the bad kernel's shapes: no fraction of peak */
    json_decref(r);
    free(err);
    free(db);
}

/* A bf16 schedule: M=1..4 on a vector kernel of the isa bench runs bf16 at
 * here, M=5..16 on a bf16/amx kernel where AMX is usable (else the vector
 * kernel again): each shape's back-end, peak kind and %peak follow its
 * kernel, and every kind used is measured. */
#define BF16_KEY "dense(M=1..16,N=64,K=64,dtype=bf16)"
static void test_backend_per_shape(void)
{
    dt_target t;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&t, &e), 0);
    char vec[512];
    dt_test_bf16_vector_kernel_json(&t, vec, sizeof vec);
    const char *amx_ann = "{\"sketch\":\"stream\",\"isa\":\"avx512\",\"mr\":16,\"nr\":32,"
                          "\"kc\":0,\"mc\":0,\"nc\":64,\"unroll\":1,\"prefetch\":0,"
                          "\"store\":\"mask\",\"order\":\"m_inner\",\"par\":\"n\","
                          "\"threads\":1,\"unit\":\"amx\"}";
    const char *why = NULL;
    const dt_backend *amx = dt_backend_of_unit(DT_DTYPE_BF16, DT_ISA_AVX512, DT_UNIT_AMX);
    int use_amx = amx && dt_backend_usable(amx, &t, &why);
    if (!use_amx)
        dt_test_skip("bench --db of a bf16/amx range: %s", why ? why : "no bf16/amx row");

    char path[4096];
    snprintf(path, sizeof path, "%s/bf16.db", g_dir);
    remove(path);
    dt_db *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    char tkey[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&t, tkey, sizeof tkey), 0);
    int64_t tid, wid, kv, ka;
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(db, tkey, dt_isa_name(t.isa), NULL, &tid, &e), 0);
    dt_workload *w = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(BF16_KEY, &w, &e), 0);
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    CU_ASSERT_EQUAL_FATAL(dt_db_workload_upsert(db, key, w->op->name, "{}", &wid, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_db_kernel_intern(db, w->op->name, "stream", vec, NULL, &kv, &e), 0);
    ka = kv;
    if (use_amx)
        CU_ASSERT_EQUAL_FATAL(
            dt_db_kernel_intern(db, w->op->name, "stream", amx_ann, NULL, &ka, &e), 0);
    dt_db_schedule rows[2] = {
        {.shape_lo = "M=1", .shape_hi = "M=4", .kernel_id = kv, .predicted_ns = NAN,
         .measured_ns = 1000},
        {.shape_lo = "M=5", .shape_hi = "M=16", .kernel_id = ka, .predicted_ns = NAN,
         .measured_ns = 2000},
    };
    CU_ASSERT_EQUAL_FATAL(dt_db_schedule_replace(db, wid, tid, 1, rows, 2, &e), 0);
    dt_db_close(db);
    dt_workload_free(w);

    char args[8192];
    snprintf(args, sizeof args, "'%s' --db '%s' --shapes '{2,16}' --peers none", key, path);
    int code;
    json_t *r = bench_json(args, &code, NULL);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(json_is_true(json_object_get(r, "all_verified")));
    check_backends(r, DT_DTYPE_BF16);
    json_t *s16 = json_array_get(json_object_get(r, "shapes"), 1);
    if (use_amx) {
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s16, "backend")), "bf16/amx");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s16, "peak_kind")), "amx_bf16");
        CU_ASSERT_PTR_NOT_NULL(json_object_get(json_object_get(r, "peaks"), "amx_bf16"));
        json_t *rg = json_array_get(json_object_get(r, "ranges"), 1);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(rg, "backend")), "bf16/amx");
    }
    json_decref(r);
    if (use_amx) { /* the text names it in the ranges, the table and the peaks */
        dt_test_proc tp;
        CU_ASSERT_EQUAL(dt_test_run_dtune(&tp, "bench '%s' --db '%s' --shapes '{16}' --peers none "
                                               "--repeats 1 --min-time 0.2", key, path), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, " amx_bf16 "));
        CU_ASSERT_PTR_NOT_NULL(strstr(tp.out, " bf16/amx "));
        dt_test_proc_free(&tp);
    }
}

int main(void)
{
    /* kernels built by these tests go to a private cache */
    char *dir = dt_test_tmpdir();
    setenv("DTUNE_CACHE_DIR", dir, 1);
    CU_TestInfo tests[] = {
        {"dense: dispatched kernels, extrapolated past the range, verified", test_dense_dispatched},
        {"batch_matmul: dispatched kernels, extrapolated", test_bmm_dispatched},
        {"schedule per thread count, annotations run with T", test_threads},
        {"no schedule, unknown workload, missing file: exit 2", test_no_schedule},
        {"a dispatched kernel that cannot run: exit 3 with the report", test_unverified_kernel},
        {"each shape's back-end and the peak of its %peak (bf16, amx)", test_backend_per_shape},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e bench --db", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    dt_test_rmtree(dir);
    free(dir);
    return rc;
}
