/* dtune bench WORKLOAD --db PATH: the dispatched mode.  For every shape, the
 * micro-kernel that the workload's tuned schedule (this machine's target, T
 * threads) dispatches it to — shapes outside the tuned set go to the nearest
 * range and are flagged extrapolated — verified against the reference on that
 * shape and timed side by side with the peers in one interleaved loop
 * (bench/bench.h with shape_kernel and verify_shapes). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_export.h"
#include "bench/bench_stats.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"
#include "common/json_util.h"
#include "common/target.h"
#include "db/db.h"
#include "dispatch/dispatch.h"

#define LOW_RATIO 0.9 /* "shapes below 0.9x" */

/* Everything the dispatched run needs, owned here. */
typedef struct {
    dt_workload *w;
    dt_target t;
    char tkey[DT_TARGET_KEY_MAX];
    dt_db *db;
    dt_dispatch *d;
    int64_t *shapes;                  /* nshapes × nvars */
    int nshapes;
    int64_t *kid;                     /* the distinct kernel ids, nk */
    dt_annotation *anns;              /* their annotations, threads = T */
    char (*backend)[32];              /* their back-ends, "bf16/amx" (dt_bench_backend) */
    dt_peak_kind *pkind;              /* their back-ends' peak kinds: the ceiling of %peak */
    int nk;
    int *shape_kernel;                /* nshapes: index into kid */
    int *extrap;                      /* nshapes: 1 when the shape is extrapolated */
    const dt_dispatch_range **range;  /* nshapes: borrowed from d */
    int has_ex;                       /* --export: the exported file is the candidate */
    dt_bench_export ex;
} dispatched;

/* The candidate that serves shape s, and the first peer's index. */
static int cand_of(const dispatched *x, int s) { return x->has_ex ? 0 : x->shape_kernel[s]; }
static int first_peer(const dispatched *x) { return x->has_ex ? 1 : x->nk; }

static void dispatched_free(dispatched *x)
{
    dt_dispatch_free(x->d);
    dt_db_close(x->db);
    dt_workload_free(x->w);
    free(x->shapes);
    free(x->kid);
    free(x->anns);
    free(x->backend);
    free(x->pkind);
    free(x->shape_kernel);
    free(x->extrap);
    free(x->range);
    dt_bench_export_free(&x->ex);
}

/* Opens the database, loads the schedule and resolves every shape. */
static int prepare(const dt_bench_args *a, const char *key, const dt_builder *b, dispatched *x,
                   dt_err *e)
{
    int rc;
    if ((rc = dt_workload_parse_key(key, &x->w, e)) ||
        (rc = dt_target_detect_key(&x->t, x->tkey, sizeof x->tkey, e)) ||
        (rc = dt_cli_shapes(x->w, a->shapes, 4096, &x->shapes, &x->nshapes, e)))
        return rc;
    if (a->threads_set && a->threads > x->t.logical_cpus)
        return dt_errf(e, DT_EINVAL, "--threads %d: this machine has %d CPUs", a->threads,
                       x->t.logical_cpus);
    int want_threads = a->threads_set ? a->threads : 0;
    if (a->export_c) {
        /* the file runs with the thread count it was exported for */
        if ((rc = dt_bench_export_load(a->export_c, x->w, b, &x->ex, e)))
            return rc;
        x->has_ex = 1;
        if (a->threads_set && a->threads != x->ex.threads)
            return dt_errf(e, DT_EINVAL, "%s was exported for %d thread%s; --threads %d",
                           a->export_c, x->ex.threads, x->ex.threads == 1 ? "" : "s",
                           a->threads);
        want_threads = x->ex.threads;
    }
    if ((rc = dt_db_open(a->db ? a->db : dt_cli_default_db(), DT_DB_READONLY, &x->db, e)))
        return rc;
    if ((rc = dt_dispatch_load(x->db, key, x->tkey, want_threads, &x->d, e)))
        return rc;
    int threads = x->d->threads;
    if (threads > x->t.logical_cpus)
        return dt_errf(e, DT_EINVAL, "the schedule is for %d threads; this machine has %d CPUs",
                       threads, x->t.logical_cpus);
    x->kid = malloc((size_t)x->d->n * sizeof *x->kid);
    x->shape_kernel = malloc((size_t)x->nshapes * sizeof *x->shape_kernel);
    x->extrap = malloc((size_t)x->nshapes * sizeof *x->extrap);
    x->range = malloc((size_t)x->nshapes * sizeof *x->range);
    if (!x->kid || !x->shape_kernel || !x->extrap || !x->range)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int s = 0; s < x->nshapes; s++) {
        dt_dispatch_hit hit;
        if (dt_dispatch_find(x->d, x->shapes + s * x->w->nvars, &hit))
            return dt_errf(e, DT_ENOTFOUND, "the schedule of %s has no range", x->d->key);
        x->range[s] = hit.range;
        x->extrap[s] = hit.extrapolated;
        int k = 0;
        while (k < x->nk && x->kid[k] != hit.range->kernel_id)
            k++;
        if (k == x->nk)
            x->kid[x->nk++] = hit.range->kernel_id;
        x->shape_kernel[s] = k;
    }
    x->anns = calloc((size_t)(x->nk ? x->nk : 1), sizeof *x->anns);
    x->backend = calloc((size_t)(x->nk ? x->nk : 1), sizeof *x->backend);
    x->pkind = calloc((size_t)(x->nk ? x->nk : 1), sizeof *x->pkind);
    if (!x->anns || !x->backend || !x->pkind)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int k = 0; k < x->nk; k++) {
        if ((rc = dt_dispatch_kernel_annotation(x->db, x->kid[k], x->w, &x->anns[k], e))) {
            dt_err_prefix(e, "the schedule");
            return rc;
        }
        x->anns[k].threads = threads; /* the schedule for T threads: its kernels run with T */
        x->pkind[k] = dt_bench_backend(x->w->dtype, &x->anns[k], x->backend[k],
                                       sizeof x->backend[k]);
    }
    return 0;
}

/* ---- per shape and summary figures ----------------------------------------- */

typedef struct {
    double gflops;      /* the dispatched kernel; NAN when it did not run */
    double peak;        /* the peak of its back-end (x->pkind), NAN when not measured */
    double onednn;      /* strongest oneDNN peer; NAN when none ran */
    int onednn_at;      /* its candidate index, -1 */
    double ratio;       /* gflops / onednn */
    int verified;       /* the dispatched kernel matched the reference on this shape */
    const char *error;  /* why not, or NULL */
} shape_fig;

static shape_fig figures(const dispatched *x, const dt_bench_result *r, int s)
{
    shape_fig f;
    int c = cand_of(x, s);
    f.gflops = dt_bench_gflops(r, c, s);
    f.peak = r->peaks[x->pkind[x->shape_kernel[s]]];
    f.onednn = dt_bench_onednn_best(r, s, &f.onednn_at);
    f.ratio = f.gflops / f.onednn;
    f.verified = strcmp(r->cands[c].status, "ok") == 0 && r->verified[c * r->nshapes + s] > 0;
    f.error = NULL;
    if (strcmp(r->cands[c].status, "ok") != 0)
        f.error = r->cands[c].message ? r->cands[c].message : r->cands[c].status;
    else if (!f.verified)
        f.error = r->verify_msg[c * r->nshapes + s] ? r->verify_msg[c * r->nshapes + s]
                                                    : "not checked";
    return f;
}

/* A group of shapes: tuned (extrapolated 0), extrapolated (1), all (-1). */
typedef struct {
    int shapes, verified;
    dt_ratio_stats onednn;
    dt_ratio_stats *peer; /* per candidate index (peers only) */
} group;

static int group_fill(const dispatched *x, const dt_bench_result *r, int which, group *g)
{
    memset(g, 0, sizeof *g);
    dt_ratio_stats_init(&g->onednn, LOW_RATIO);
    g->peer = calloc((size_t)r->ncands, sizeof *g->peer);
    if (!g->peer)
        return DT_ENOMEM;
    for (int c = 0; c < r->ncands; c++)
        dt_ratio_stats_init(&g->peer[c], LOW_RATIO);
    for (int s = 0; s < x->nshapes; s++) {
        if (which >= 0 && x->extrap[s] != which)
            continue;
        shape_fig f = figures(x, r, s);
        g->shapes++;
        g->verified += f.verified;
        dt_ratio_stats_add(&g->onednn, f.ratio, s);
        for (int c = 0; c < r->ncands; c++)
            if (r->cands[c].kind == DT_CAND_PEER)
                dt_ratio_stats_add(&g->peer[c], f.gflops / dt_bench_gflops(r, c, s), s);
    }
    return 0;
}

static void label_of(const dispatched *x, int s, char *buf, size_t n)
{
    dt_shape_format(x->w, x->shapes + s * x->w->nvars, buf, n);
    if (!buf[0])
        snprintf(buf, n, "(static)");
}

/* ---- text ------------------------------------------------------------------ */

static void print_group_text(const dispatched *x, const dt_bench_result *r, const char *name,
                             const group *g)
{
    if (!g->shapes)
        return;
    printf("%-13s %3d shapes: ", name, g->shapes);
    if (g->onednn.n) {
        char label[128];
        label_of(x, g->onednn.min_at, label, sizeof label);
        printf("geometric mean %.3fx vs the strongest oneDNN peer, lowest %.3fx at %s, %d "
               "below %.1fx; ", dt_ratio_stats_geomean(&g->onednn), g->onednn.min, label,
               g->onednn.below, LOW_RATIO);
    } else {
        printf("no oneDNN ratio; ");
    }
    printf("verified %d/%d\n", g->verified, g->shapes);
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].kind == DT_CAND_PEER && g->peer[c].n)
            printf("%-13s             vs %-10s geometric mean %.3fx, lowest %.3fx\n", "",
                   r->cands[c].name, dt_ratio_stats_geomean(&g->peer[c]), g->peer[c].min);
}

static void print_text(const dispatched *x, const dt_bench_result *r, const dt_bench_args *a,
                       const group *tuned, const group *extra)
{
    if (x->has_ex)
        printf("%s: exported %s (%s_THREADS %d), ranges of %s\n", x->d->key, a->export_c,
               x->ex.name, x->ex.threads, dt_db_path(x->db));
    else
        printf("%s: dispatched kernels of %s\n", x->d->key, dt_db_path(x->db));
    char peaks[512];
    printf("target %s, %d thread%s, %d range%s, %d kernel%s on these shapes\npeaks: %s\n",
           x->tkey, x->d->threads, x->d->threads == 1 ? "" : "s", x->d->n,
           x->d->n == 1 ? "" : "s", x->nk, x->nk == 1 ? "" : "s",
           dt_bench_peaks_text(r, peaks, sizeof peaks));
    for (int i = 0; i < x->d->n; i++) {
        const dt_dispatch_range *rg = &x->d->r[i];
        int k = 0;
        while (k < x->nk && x->kid[k] != rg->kernel_id)
            k++;
        char *ann = k < x->nk ? dt_annotation_to_string(&x->anns[k]) : NULL;
        char span[300];
        if (strcmp(rg->shape_lo, rg->shape_hi) == 0)
            snprintf(span, sizeof span, "%s", rg->shape_lo);
        else
            snprintf(span, sizeof span, "%s..%s", rg->shape_lo, rg->shape_hi);
        if (ann)
            printf("  %-20s kernel %lld %s %s\n", span, (long long)rg->kernel_id, x->backend[k],
                   ann);
        else
            printf("  %-20s kernel %lld (no shape of this run)\n", span,
                   (long long)rg->kernel_id);
        free(ann);
    }
    for (int k = 0; !x->has_ex && k < x->nk; k++)
        if (strcmp(r->cands[k].status, "ok") != 0)
            printf("kernel %lld: %s: %.300s\n", (long long)x->kid[k], r->cands[k].status,
                   r->cands[k].message ? r->cands[k].message : "");
    if (x->has_ex && strcmp(r->cands[0].status, "ok") != 0)
        printf("%s: %s: %.300s\n", a->export_c, r->cands[0].status,
               r->cands[0].message ? r->cands[0].message : "");
    int bw = 7; /* the backend column: as wide as the longest back-end's name */
    for (int k = 0; k < x->nk; k++)
        if ((int)strlen(x->backend[k]) > bw)
            bw = (int)strlen(x->backend[k]);
    printf("GFLOP/s (min time of %d interleaved repeats); * = extrapolated shape; %%peak: over "
           "the peak of the kernel's back-end\n\n%-14s %8s %-*s %8s", a->repeats, "shape",
           "kernel", bw, "backend", "GFLOP/s");
    for (int c = first_peer(x); c < r->ncands; c++)
        printf(" %10s", r->cands[c].name);
    printf(" %9s %6s  %s\n", "vs oneDNN", "%peak", "verified");
    for (int s = 0; s < x->nshapes; s++) {
        shape_fig f = figures(x, r, s);
        char label[128], kid[32];
        label_of(x, s, label, sizeof label - 1);
        if (x->extrap[s])
            strcat(label, "*");
        snprintf(kid, sizeof kid, "%lld", (long long)x->kid[x->shape_kernel[s]]);
        printf("%-14s %8s %-*s", label, kid, bw, x->backend[x->shape_kernel[s]]);
        if (f.gflops > 0)
            printf(" %8.1f", f.gflops);
        else
            printf(" %8s", "n/a");
        for (int c = first_peer(x); c < r->ncands; c++) {
            double g = dt_bench_gflops(r, c, s);
            if (g > 0)
                printf(" %10.1f", g);
            else
                printf(" %10s", r->verified[c * r->nshapes + s] < 0 ? "WRONG" : "n/a");
        }
        if (f.ratio > 0)
            printf(" %8.2fx", f.ratio);
        else
            printf(" %9s", "n/a");
        if (f.gflops / f.peak > 0)
            printf(" %5.1f%%", 100.0 * f.gflops / f.peak);
        else
            printf(" %6s", "n/a");
        printf("  %s\n", f.verified ? "yes" : "NO");
    }
    printf("\n");
    print_group_text(x, r, "tuned", tuned);
    print_group_text(x, r, "extrapolated", extra);
    for (int s = 0, shown = 0; s < x->nshapes && shown < 10; s++) {
        shape_fig f = figures(x, r, s);
        if (f.verified)
            continue;
        char label[128];
        label_of(x, s, label, sizeof label);
        printf("kernel %lld at %s: %.300s\n", (long long)x->kid[x->shape_kernel[s]], label,
               f.error);
        shown++;
    }
    for (int c = first_peer(x); c < r->ncands; c++) {
        int wrong = 0, first = -1;
        for (int s = 0; s < x->nshapes; s++)
            if (r->verified[c * r->nshapes + s] < 0 && wrong++ == 0)
                first = s;
        if (wrong) {
            char label[128];
            label_of(x, first, label, sizeof label);
            printf("peer %s failed the reference on %d shape%s (not timed there), first %s: "
                   "%.300s\n", r->cands[c].name, wrong, wrong == 1 ? "" : "s", label,
                   r->verify_msg[c * r->nshapes + first]);
        } else if (r->cands[c].message) {
            printf("peer %s: %.300s\n", r->cands[c].name, r->cands[c].message);
        }
    }
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *group_json(const dispatched *x, const dt_bench_result *r, const group *g)
{
    json_t *j = json_object(), *peers = json_object();
    json_object_set_new(j, "shapes", json_integer(g->shapes));
    json_object_set_new(j, "verified", json_integer(g->verified));
    json_object_set_new(j, "all_verified", json_boolean(g->verified == g->shapes));
    json_object_set_new(j, "ratios", json_integer(g->onednn.n));
    json_object_set_new(j, "geomean_ratio_vs_onednn", dt_json_num_or_null(dt_ratio_stats_geomean(&g->onednn)));
    json_object_set_new(j, "min_ratio_vs_onednn", dt_json_num_or_null(g->onednn.n ? g->onednn.min : NAN));
    if (g->onednn.n) {
        char label[128];
        label_of(x, g->onednn.min_at, label, sizeof label);
        json_object_set_new(j, "min_shape", json_string(label));
    } else {
        json_object_set_new(j, "min_shape", json_null());
    }
    json_object_set_new(j, "below_0_9", json_integer(g->onednn.below));
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].kind == DT_CAND_PEER)
            json_object_set_new(peers, r->cands[c].name,
                                dt_json_num_or_null(dt_ratio_stats_geomean(&g->peer[c])));
    json_object_set_new(j, "geomean_ratio_vs_peers", peers);
    return j;
}

static json_t *shape_json(const dispatched *x, const dt_bench_result *r, int s)
{
    const dt_workload *w = x->w;
    shape_fig f = figures(x, r, s);
    json_t *js = json_object(), *vars = json_object(), *dims = json_object();
    json_t *peers = json_object(), *ratios = json_object(), *pver = json_object();
    char label[128];
    label_of(x, s, label, sizeof label);
    for (int v = 0; v < w->nvars; v++)
        json_object_set_new(vars, w->vars[v].name, json_integer(x->shapes[s * w->nvars + v]));
    for (int d = 0; d < w->op->ndims; d++)
        json_object_set_new(dims, w->op->dims[d], json_integer(r->dims[s * w->op->ndims + d]));
    for (int c = first_peer(x); c < r->ncands; c++) {
        double g = dt_bench_gflops(r, c, s);
        json_object_set_new(peers, r->cands[c].name, dt_json_num_or_null(g));
        json_object_set_new(ratios, r->cands[c].name, dt_json_num_or_null(f.gflops / g));
        signed char v = r->verified[c * r->nshapes + s];
        json_object_set_new(pver, r->cands[c].name, v ? json_boolean(v > 0) : json_null());
    }
    json_object_set_new(js, "shape", json_string(label));
    json_object_set_new(js, "vars", vars);
    json_object_set_new(js, "dims", dims);
    json_object_set_new(js, "gflop", json_real(r->gflop[s]));
    json_object_set_new(js, "kernel_id", json_integer(x->kid[x->shape_kernel[s]]));
    json_object_set_new(js, "backend", json_string(x->backend[x->shape_kernel[s]]));
    json_object_set_new(js, "peak_kind",
                        json_string(dt_peak_kind_name(x->pkind[x->shape_kernel[s]])));
    json_object_set_new(js, "range", json_sprintf("%s..%s", x->range[s]->shape_lo,
                                                  x->range[s]->shape_hi));
    json_object_set_new(js, "extrapolated", json_boolean(x->extrap[s]));
    json_object_set_new(js, "verified", json_boolean(f.verified));
    if (f.error)
        json_object_set_new(js, "error", json_string(f.error));
    json_object_set_new(js, "gflops", dt_json_num_or_null(f.gflops));
    json_object_set_new(js, "fraction_of_peak", dt_json_num_or_null(f.gflops / f.peak));
    json_object_set_new(js, "onednn_best", dt_json_num_or_null(f.onednn));
    json_object_set_new(js, "onednn_best_peer",
                        f.onednn_at >= 0 ? json_string(r->cands[f.onednn_at].name) : json_null());
    json_object_set_new(js, "ratio_vs_onednn", dt_json_num_or_null(f.ratio));
    json_object_set_new(js, "peers", peers);
    json_object_set_new(js, "ratios", ratios);
    json_object_set_new(js, "peers_verified", pver);
    return js;
}

static int print_json(const dispatched *x, const dt_bench_result *r, const dt_bench_args *a,
                      const group *tuned, const group *extra, const group *all)
{
    json_t *root = json_object(), *ranges = json_array(), *kernels = json_array();
    json_t *peers = json_array(), *shapes = json_array(), *summary = json_object();
    json_object_set_new(root, "mode", json_string(x->has_ex ? "export" : "dispatch"));
    if (x->has_ex) {
        json_t *jx = json_object();
        json_object_set_new(jx, "path", json_string(a->export_c));
        json_object_set_new(jx, "name", json_string(x->ex.name));
        json_object_set_new(jx, "so", json_string(x->ex.so_path));
        json_object_set_new(jx, "threads", json_integer(x->ex.threads));
        json_object_set_new(jx, "status", json_string(r->cands[0].status));
        if (r->cands[0].message)
            json_object_set_new(jx, "message", json_string(r->cands[0].message));
        json_object_set_new(jx, "pack_seconds", json_real(r->cands[0].pack_s));
        json_object_set_new(root, "export", jx);
    }
    json_object_set_new(root, "workload", json_string(x->d->key));
    json_object_set_new(root, "db", json_string(dt_db_path(x->db)));
    json_object_set_new(root, "target", json_string(x->tkey));
    json_object_set_new(root, "threads", json_integer(x->d->threads));
    json_object_set_new(root, "repeats", json_integer(a->repeats));
    json_object_set_new(root, "min_time_ms", json_real(a->min_time_ms));
    json_object_set_new(root, "peak_kind", json_string(dt_peak_kind_name(r->peak_kind)));
    json_object_set_new(root, "peak_gops", dt_json_num_or_null(r->peak_gops));
    json_object_set_new(root, "peak_1thread_gops", dt_json_num_or_null(r->peak1_gops));
    json_object_set_new(root, "peaks", dt_bench_peaks_json(r));
    for (int i = 0; i < x->d->n; i++) {
        const dt_dispatch_range *rg = &x->d->r[i];
        json_t *jr = json_object();
        json_object_set_new(jr, "shape_lo", json_string(rg->shape_lo));
        json_object_set_new(jr, "shape_hi", json_string(rg->shape_hi));
        json_object_set_new(jr, "kernel_id", json_integer(rg->kernel_id));
        int k = 0; /* its back-end when a shape of this run uses it */
        while (k < x->nk && x->kid[k] != rg->kernel_id)
            k++;
        json_object_set_new(jr, "backend", k < x->nk ? json_string(x->backend[k]) : json_null());
        json_object_set_new(jr, "predicted_ns", dt_json_num_or_null(rg->predicted_ns));
        json_object_set_new(jr, "measured_ns", dt_json_num_or_null(rg->measured_ns));
        json_array_append_new(ranges, jr);
    }
    for (int k = 0; k < x->nk; k++) {
        json_t *jk = json_object();
        int used = 0;
        for (int s = 0; s < x->nshapes; s++)
            used += x->shape_kernel[s] == k;
        json_object_set_new(jk, "id", json_integer(x->kid[k]));
        /* with --export the kernels run inside the exported file */
        int c = x->has_ex ? 0 : k;
        json_object_set_new(jk, "status", json_string(r->cands[c].status));
        if (r->cands[c].message)
            json_object_set_new(jk, "message", json_string(r->cands[c].message));
        json_object_set_new(jk, "annotation", dt_annotation_to_json(&x->anns[k]));
        json_object_set_new(jk, "backend", json_string(x->backend[k]));
        json_object_set_new(jk, "peak_kind", json_string(dt_peak_kind_name(x->pkind[k])));
        json_object_set_new(jk, "pack_seconds", json_real(r->cands[c].pack_s));
        json_object_set_new(jk, "shapes", json_integer(used));
        json_array_append_new(kernels, jk);
    }
    for (int c = first_peer(x); c < r->ncands; c++) {
        json_t *jp = json_object();
        json_object_set_new(jp, "name", json_string(r->cands[c].name));
        json_object_set_new(jp, "status", json_string(r->cands[c].status));
        if (r->cands[c].message)
            json_object_set_new(jp, "message", json_string(r->cands[c].message));
        json_array_append_new(peers, jp);
    }
    for (int s = 0; s < x->nshapes; s++)
        json_array_append_new(shapes, shape_json(x, r, s));
    json_object_set_new(summary, "tuned", group_json(x, r, tuned));
    json_object_set_new(summary, "extrapolated", group_json(x, r, extra));
    json_object_set_new(summary, "all", group_json(x, r, all));
    json_object_set_new(root, "ranges", ranges);
    json_object_set_new(root, "kernels", kernels);
    json_object_set_new(root, "peers", peers);
    json_object_set_new(root, "shapes", shapes);
    json_object_set_new(root, "summary", summary);
    json_object_set_new(root, "all_verified", json_boolean(all->verified == all->shapes));
    return dt_cli_print_json(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
}

/* ---- the command ----------------------------------------------------------- */

int dt_cmd_bench_db(const dt_bench_args *a, const char *key)
{
    dispatched x;
    memset(&x, 0, sizeof x);
    dt_err e;
    dt_err_clear(&e);
    dt_builder b;
    dt_bench_result r;
    memset(&r, 0, sizeof r);
    group g[3];
    memset(g, 0, sizeof g);
    int rc = dt_builder_init(&b, NULL, NULL, NULL, &e);
    if (!rc)
        rc = prepare(a, key, &b, &x, &e);
    if (rc) {
        dispatched_free(&x);
        return dt_cli_fail(&e);
    }
    dt_target tt = x.t; /* the schedule's thread count validates on this target */
    if (tt.cores < x.d->threads)
        tt.cores = x.d->threads;
    dt_bench_opts o = {.threads = x.d->threads, .repeats = a->repeats,
                       .min_time_s = a->min_time_ms * 1e-3, .peers = a->peers,
                       .progress = !a->json, .seed = a->seed, .verify_shapes = 1,
                       .shape_kernel = x.shape_kernel};
    if (x.has_ex) { /* the exported file is the one candidate besides the peers */
        o.shape_kernel = NULL;
        o.ext = &x.ex.ext;
        for (int k = 0; k < x.nk; k++) /* the peaks of the kernels inside it */
            o.extra_peaks |= 1u << x.pkind[k];
    }
    if ((rc = dt_bench_run(x.w, x.shapes, x.nshapes, x.anns, x.has_ex ? 0 : x.nk, &tt, &b, &o, &r,
                           &e))) {
        dispatched_free(&x);
        return dt_cli_fail(&e);
    }
    int exit_code = DT_EXIT_OK;
    for (int i = 0; i < 3; i++)
        if (group_fill(&x, &r, i == 2 ? -1 : i, &g[i]) && exit_code == DT_EXIT_OK) {
            dt_errf(&e, DT_ENOMEM, "out of memory");
            exit_code = dt_cli_fail(&e);
        }
    if (exit_code == DT_EXIT_OK) {
        if (a->json) {
            if (print_json(&x, &r, a, &g[0], &g[1], &g[2]))
                exit_code = DT_EXIT_RUNTIME;
        } else {
            print_text(&x, &r, a, &g[0], &g[1]);
        }
    }
    if (exit_code == DT_EXIT_OK && g[2].verified < g[2].shapes) {
        int first = 0;
        while (first < x.nshapes && figures(&x, &r, first).verified)
            first++;
        char label[128];
        label_of(&x, first, label, sizeof label);
        dt_errf(&e, DT_EIO, "the dispatched kernel is not verified on %d of %d shapes (first %s, "
                "kernel %lld: %.300s)", g[2].shapes - g[2].verified, g[2].shapes, label,
                (long long)x.kid[x.shape_kernel[first]], figures(&x, &r, first).error);
        exit_code = dt_cli_fail(&e);
    }
    for (int i = 0; i < 3; i++)
        free(g[i].peer);
    dt_bench_result_free(&r);
    dispatched_free(&x);
    return exit_code;
}
