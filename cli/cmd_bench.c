/* dtune bench: micro-kernels against the peers, side by side, over shapes;
 * with --db, the kernels a tuned schedule dispatches (cli/cmd_bench_db.c). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_stats.h"
#include "cli/cli.h"
#include "cli/cmd_bench.h"
#include "common/file.h"
#include "common/target.h"
#include "peers/peer.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune bench WORKLOAD [--kernel FILE.json | --sample N | --db PATH |\n"
            "                   --export NAME.c [--db PATH]]\n"
            "                   [--seed S] [--shapes DOMAIN] [--threads T] [--repeats R]\n"
            "                   [--min-time MS] [--peers LIST] [--verify] [--json]\n"
            "\n"
            "Times dtune micro-kernels over a workload's shapes and, in the same run and\n"
            "the same interleaved timing loop, the libraries a user would pick instead:\n"
            "oneDNN (matmul per shape: prepacked weights for dense, one 3-D batched\n"
            "primitive for batch_matmul; matmul with run-time dims; dnnl_sgemm; for\n"
            "math=bf16 also its bf16 matmul with the activations converted per call),\n"
            "OpenBLAS cblas_sgemm (a batch loop for batch_matmul) and LIBXSMM. Every\n"
            "kernel is verified against a double-precision reference before it is\n"
            "timed (--verify: every candidate, on every shape). Reports GFLOP/s,\n"
            "the best/median/worst kernel per shape and the best one's back-end (e.g.\n"
            "bf16/amx), ratios against the peers and the fraction of the peak of that\n"
            "kernel's back-end (FMA; vdpbf16ps, vpdpbusd; AMX tdpbf16ps, tdpbusd), every\n"
            "peak a kernel needs measured in the same run.\n"
            "\n"
            "With --db, the dispatched mode: for every shape, the micro-kernel the tuned\n"
            "schedule in the database picks for it (this machine's target, T threads;\n"
            "shapes outside the tuned range go to the nearest range and are flagged\n"
            "extrapolated), verified on that very shape against the reference and timed\n"
            "with the peers; reports per shape the kernel id and back-end, GFLOP/s,\n"
            "%%peak and ratios, and the geometric mean and minimum of the ratio to the\n"
            "strongest oneDNN peer, apart for tuned and extrapolated shapes.\n"
            "\n"
            "With --export NAME.c (written by `dtune export`), the exported file instead:\n"
            "built with the kernels' compiler and flags (-O3 -march=native -fopenmp),\n"
            "loaded, and its entry point called for every shape (it dispatches itself),\n"
            "verified and timed with the peers at the thread count it was exported for;\n"
            "the database's schedule (--db, default $DTUNE_DB, else ./dtune.db) labels\n"
            "each shape's range and kernel. Same report as --db.\n"
            "\n"
            "WORKLOAD is a workload key, e.g. 'dense(M=1..128,N=768,K=768)'.\n"
            "\n"
            "Options:\n"
            "  --kernel FILE.json  annotations to run: one JSON object or an array\n"
            "  --sample N          N random valid annotations (default 16; at most 1000),\n"
            "                      over every back-end the tuner searches for the dtype\n"
            "  --db PATH           dispatched mode: the schedule of WORKLOAD in PATH\n"
            "  --export NAME.c     time the exported C of WORKLOAD's schedule\n"
            "  --seed S            seed of the sample and of the inputs (default 1)\n"
            "  --shapes DOMAIN     values of the workload's variable, e.g. 1..128 or\n"
            "                      {1,8,37,128}; with several variables their grid,\n"
            "                      e.g. 'H={64,600};W=64..512:64' (default: the shape set)\n"
            "  --threads T         threads for kernels and peers (default 1; with --db the\n"
            "                      schedule stored for T threads, default the highest)\n"
            "  --repeats R         interleaved repeats; the minimum counts (default 5)\n"
            "  --min-time MS       minimum length of one timed batch (default 2)\n"
            "  --peers LIST        comma-separated peers, or 'none' (default: all built in)\n"
            "  --verify            check every kernel and peer against the reference on\n"
            "                      every shape before timing it (always on with --db)\n"
            "  --json              print one JSON object instead of tables\n"
            "  -h, --help          show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input (also: no schedule for this\n"
            "workload, target and thread count in --db), 3 runtime failure (also: a\n"
            "dispatched kernel failed on a shape; the report is printed first).\n");
}

typedef dt_bench_args bench_args;

static int parse_args(int argc, char **argv, bench_args *a, const char **key)
{
    static const struct option opts[] = {
        {"kernel", required_argument, NULL, 'k'}, {"sample", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},   {"shapes", required_argument, NULL, 'S'},
        {"threads", required_argument, NULL, 't'}, {"repeats", required_argument, NULL, 'r'},
        {"min-time", required_argument, NULL, 'm'}, {"peers", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {"db", required_argument, NULL, 'd'},      {"verify", no_argument, NULL, 'v'},
        {"export", required_argument, NULL, 'x'},
        {NULL, 0, NULL, 0}};
    *a = (bench_args){.sample = -1, .threads = 1, .repeats = 5, .min_time_ms = 2, .seed = 1};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'k': a->kernel_file = optarg; break;
        case 'S': a->shapes = optarg; break;
        case 'p': a->peers = strcmp(optarg, "none") == 0 ? "" : optarg; break;
        case 'j': a->json = 1; break;
        case 'd': a->db = optarg; break;
        case 'x': a->export_c = optarg; break;
        case 'v': a->verify = 1; break;
        case 'h': usage(stdout); return -1;
        case 'n': rc = dt_cli_int_opt("bench", "--sample", optarg, 1, 1000, &a->sample); break;
        case 's': rc = dt_cli_seed_opt("bench", optarg, &a->seed); break;
        case 't':
            rc = dt_cli_int_opt("bench", "--threads", optarg, 1, 1024, &a->threads);
            a->threads_set = 1;
            break;
        case 'r': rc = dt_cli_int_opt("bench", "--repeats", optarg, 1, 1000, &a->repeats); break;
        case 'm': rc = dt_cli_ms_opt("bench", "--min-time", optarg, 10000, &a->min_time_ms); break;
        default: return dt_cli_usage_error("bench", "unknown option '%s'", argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (a->kernel_file && a->sample > 0)
        return dt_cli_usage_error("bench", "--kernel and --sample exclude each other");
    if ((a->db || a->export_c) && (a->kernel_file || a->sample > 0))
        return dt_cli_usage_error("bench", "--db benchmarks the dispatched kernels; it excludes "
                                           "--kernel and --sample");
    if (argc - optind != 1)
        return dt_cli_usage_error("bench", "expected one WORKLOAD argument");
    *key = argv[optind];
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Per shape: GFLOP/s of the best, median and worst kernel and which is best. */
typedef struct {
    double best, median, worst;
    int best_idx;
    double onednn_best; /* strongest oneDNN peer, NAN if none */
} shape_summary;

static shape_summary summarize(const dt_bench_result *r, int s)
{
    shape_summary ss = {NAN, NAN, NAN, -1, NAN};
    double *g = malloc((size_t)r->ncands * sizeof *g);
    int n = 0;
    for (int c = 0; c < r->ncands; c++) {
        double sec = r->seconds[c * r->nshapes + s];
        if (!(sec > 0) || isinf(sec))
            continue;
        double gf = r->gflop[s] / sec;
        if (r->cands[c].kind == DT_CAND_KERNEL) {
            g[n++] = gf;
            if (!(ss.best >= gf)) {
                ss.best = gf;
                ss.best_idx = c;
            }
        }
    }
    ss.onednn_best = dt_bench_onednn_best(r, s, NULL);
    if (n) {
        qsort(g, (size_t)n, sizeof *g, cmp_double);
        ss.worst = g[0];
        ss.median = g[n / 2];
    }
    free(g);
    return ss;
}

static void shape_label(const dt_workload *w, const dt_bench_result *r, int s, char *buf,
                        size_t n)
{
    dt_shape_format(w, r->shapes + s * r->nvars, buf, n);
    if (!buf[0])
        snprintf(buf, n, "(static)");
}

static void print_text(const dt_workload *w, const dt_bench_result *r, const bench_args *a)
{
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    int ok = 0;
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].kind == DT_CAND_KERNEL) {
            if (strcmp(r->cands[c].status, "ok") == 0)
                ok++;
            else
                printf("kernel %s: %s: %.300s\n", r->cands[c].name, r->cands[c].status,
                       r->cands[c].message ? r->cands[c].message : "");
        }
    char peaks[512];
    printf("%s, %d thread%s; %d kernels ok\npeaks: %s\n", key, a->threads,
           a->threads == 1 ? "" : "s", ok, dt_bench_peaks_text(r, peaks, sizeof peaks));
    int bw = 7; /* the backend column: as wide as the longest ok kernel's */
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].kind == DT_CAND_KERNEL && strcmp(r->cands[c].status, "ok") == 0 &&
            (int)strlen(r->cands[c].backend) > bw)
            bw = (int)strlen(r->cands[c].backend);
    printf("GFLOP/s (min time of %d interleaved repeats); %%peak: the best kernel's GFLOP/s over "
           "the peak of its back-end\n\n%-16s %8s %8s %8s %-5s %-*s", a->repeats, "shape",
           "best", "median", "worst", "k", bw, "backend");
    for (int c = 0; c < r->ncands; c++)
        if (r->cands[c].kind == DT_CAND_PEER)
            printf(" %10s", r->cands[c].name);
    printf(" %9s %6s\n", "vs oneDNN", "%peak");
    double log_sum = 0, min_ratio = INFINITY;
    int nratio = 0, min_at = -1;
    for (int s = 0; s < r->nshapes; s++) {
        shape_summary ss = summarize(r, s);
        char label[128];
        shape_label(w, r, s, label, sizeof label);
        printf("%-16s %8.1f %8.1f %8.1f %-5s %-*s", label, ss.best, ss.median, ss.worst,
               ss.best_idx >= 0 ? r->cands[ss.best_idx].name : "-", bw,
               ss.best_idx >= 0 ? r->cands[ss.best_idx].backend : "-");
        for (int c = 0; c < r->ncands; c++) {
            if (r->cands[c].kind != DT_CAND_PEER)
                continue;
            double sec = r->seconds[c * r->nshapes + s];
            if (sec > 0 && !isinf(sec))
                printf(" %10.1f", r->gflop[s] / sec);
            else
                printf(" %10s", "n/a");
        }
        double ratio = ss.best / ss.onednn_best;
        if (ratio > 0) {
            log_sum += log(ratio);
            nratio++;
            if (ratio < min_ratio) {
                min_ratio = ratio;
                min_at = s;
            }
            printf(" %8.2fx", ratio);
        } else {
            printf(" %9s", "n/a");
        }
        if (ss.best_idx >= 0 && ss.best / dt_bench_cand_peak(r, ss.best_idx) > 0)
            printf(" %5.1f%%\n", 100.0 * ss.best / dt_bench_cand_peak(r, ss.best_idx));
        else
            printf(" %6s\n", "n/a");
    }
    if (nratio) {
        char label[128];
        shape_label(w, r, min_at, label, sizeof label);
        printf("\nbest kernel vs strongest oneDNN peer: geometric mean %.3fx over %d shapes, "
               "lowest %.3fx at %s\n",
               exp(log_sum / nratio), nratio, min_ratio, label);
    }
    for (int c = 0; c < r->ncands; c++) {
        if (r->cands[c].kind != DT_CAND_PEER)
            continue;
        double ls = 0;
        int n = 0;
        for (int s = 0; s < r->nshapes; s++) {
            double sec = r->seconds[c * r->nshapes + s];
            shape_summary ss = summarize(r, s);
            if (sec > 0 && !isinf(sec) && ss.best > 0) {
                ls += log(ss.best / (r->gflop[s] / sec));
                n++;
            }
        }
        if (n)
            printf("best kernel vs %-10s geometric mean %.3fx over %d shapes%s%s\n",
                   r->cands[c].name, exp(ls / n), n, r->cands[c].message ? "; " : "",
                   r->cands[c].message ? r->cands[c].message : "");
        else
            printf("%-10s ran no shape%s%s\n", r->cands[c].name,
                   r->cands[c].message ? ": " : "", r->cands[c].message ? r->cands[c].message : "");
    }
    if (!a->verify)
        return;
    int checked = 0, failed = 0;
    for (int i = 0; i < r->ncands * r->nshapes; i++) {
        checked += r->verified[i] != 0;
        if (r->verified[i] < 0 && failed++ < 10) {
            char label[128];
            shape_label(w, r, i % r->nshapes, label, sizeof label);
            printf("verification failed: %s at %s: %.300s\n", r->cands[i / r->nshapes].name,
                   label, r->verify_msg[i] ? r->verify_msg[i] : "");
        }
    }
    printf("verified on every shape: %d of %d (candidate, shape) runs matched the reference\n",
           checked - failed, checked);
}

json_t *dt_bench_peaks_json(const dt_bench_result *r)
{
    json_t *o = json_object();
    for (int k = 0; k < DT_PEAK_COUNT; k++)
        if (r->peaks[k] > 0)
            json_object_set_new(o, dt_peak_kind_name((dt_peak_kind)k),
                                json_pack("{s:f, s:f, s:s}", "gops", r->peaks[k], "gops_1thread",
                                          r->peaks1[k] > 0 ? r->peaks1[k] : 0.0, "unit",
                                          dt_peak_unit((dt_peak_kind)k)));
    return o;
}

static int print_json(const dt_workload *w, const dt_bench_result *r, const bench_args *a)
{
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    json_t *root = json_object(), *cands = json_array(), *shapes = json_array();
    json_object_set_new(root, "workload", json_string(key));
    json_object_set_new(root, "threads", json_integer(a->threads));
    json_object_set_new(root, "repeats", json_integer(a->repeats));
    json_object_set_new(root, "peak_kind", json_string(dt_peak_kind_name(r->peak_kind)));
    json_object_set_new(root, "peak_gops", json_real(r->peak_gops));
    json_object_set_new(root, "peak_1thread_gops", json_real(r->peak1_gops));
    json_object_set_new(root, "peaks", dt_bench_peaks_json(r));
    for (int c = 0; c < r->ncands; c++) {
        const dt_bench_cand *bc = &r->cands[c];
        json_t *jc = json_object();
        json_object_set_new(jc, "name", json_string(bc->name));
        json_object_set_new(jc, "kind", json_string(bc->kind == DT_CAND_PEER ? "peer" : "kernel"));
        json_object_set_new(jc, "status", json_string(bc->status));
        if (bc->message)
            json_object_set_new(jc, "message", json_string(bc->message));
        if (bc->kind == DT_CAND_KERNEL) {
            json_object_set_new(jc, "annotation", dt_annotation_to_json(&bc->ann));
            json_object_set_new(jc, "backend", json_string(bc->backend));
            json_object_set_new(jc, "peak_kind", json_string(dt_peak_kind_name(bc->peak_kind)));
            json_object_set_new(jc, "pack_seconds", json_real(bc->pack_s));
        }
        json_array_append_new(cands, jc);
    }
    for (int s = 0; s < r->nshapes; s++) {
        json_t *js = json_object(), *vars = json_object(), *dims = json_object(),
               *gf = json_object(), *pack = json_object(), *create = json_object();
        for (int v = 0; v < r->nvars; v++)
            json_object_set_new(vars, w->vars[v].name, json_integer(r->shapes[s * r->nvars + v]));
        for (int d = 0; d < w->op->ndims; d++)
            json_object_set_new(dims, w->op->dims[d],
                                json_integer(r->dims[s * w->op->ndims + d]));
        for (int c = 0; c < r->ncands; c++) {
            double sec = r->seconds[c * r->nshapes + s];
            json_object_set_new(gf, r->cands[c].name,
                                sec > 0 && !isinf(sec) ? json_real(r->gflop[s] / sec) : json_null());
            double ps = r->peer_pack_s[c * r->nshapes + s];
            if (r->cands[c].kind == DT_CAND_PEER && ps >= 0)
                json_object_set_new(pack, r->cands[c].name, json_real(ps));
            /* a peer that builds per exact shape (onednn_conv's primitive):
             * what a dynamic-shape server pays on each new shape */
            double cs = r->peer_create_s[c * r->nshapes + s];
            if (r->cands[c].kind == DT_CAND_PEER && cs >= 0)
                json_object_set_new(create, r->cands[c].name, json_real(cs));
        }
        shape_summary ss = summarize(r, s);
        json_object_set_new(js, "vars", vars);
        json_object_set_new(js, "dims", dims);
        json_object_set_new(js, "gflop", json_real(r->gflop[s]));
        json_object_set_new(js, "gflops", gf);
        json_object_set_new(js, "peer_pack_seconds", pack);
        json_object_set_new(js, "peer_create_seconds", create);
        json_object_set_new(js, "best", json_real(ss.best));
        json_object_set_new(js, "median", json_real(ss.median));
        json_object_set_new(js, "worst", json_real(ss.worst));
        json_object_set_new(js, "best_kernel",
                            ss.best_idx >= 0 ? json_string(r->cands[ss.best_idx].name) : json_null());
        json_object_set_new(js, "onednn_best", ss.onednn_best > 0 ? json_real(ss.onednn_best) : json_null());
        json_object_set_new(js, "ratio_vs_onednn", ss.onednn_best > 0 && ss.best > 0 ? json_real(ss.best / ss.onednn_best) : json_null());
        const dt_bench_cand *best = ss.best_idx >= 0 ? &r->cands[ss.best_idx] : NULL;
        double peak = best ? dt_bench_cand_peak(r, ss.best_idx) : NAN;
        json_object_set_new(js, "backend", best ? json_string(best->backend) : json_null());
        json_object_set_new(js, "peak_kind",
                            best ? json_string(dt_peak_kind_name(best->peak_kind)) : json_null());
        json_object_set_new(js, "fraction_of_peak",
                            ss.best / peak > 0 ? json_real(ss.best / peak) : json_null());
        if (a->verify) { /* true / false per candidate checked on this shape */
            json_t *jv = json_object(), *jm = json_object();
            for (int c = 0; c < r->ncands; c++) {
                int i = c * r->nshapes + s;
                if (r->verified[i])
                    json_object_set_new(jv, r->cands[c].name, json_boolean(r->verified[i] > 0));
                if (r->verify_msg[i])
                    json_object_set_new(jm, r->cands[c].name, json_string(r->verify_msg[i]));
            }
            json_object_set_new(js, "verified", jv);
            json_object_set_new(js, "verify_errors", jm);
        }
        json_array_append_new(shapes, js);
    }
    json_object_set_new(root, "candidates", cands);
    json_object_set_new(root, "shapes", shapes);
    return dt_cli_print_json(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME
                                                                          : DT_EXIT_OK;
}

int dt_cmd_bench(int argc, char **argv)
{
    bench_args a;
    const char *key = NULL;
    int rc = parse_args(argc, argv, &a, &key);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    if (a.db || a.export_c)
        return dt_cmd_bench_db(&a, key);
    dt_err e;
    dt_workload *w = NULL;
    dt_target t;
    dt_builder b;
    dt_annotation *kernels = NULL;
    int64_t *shapes = NULL;
    int nk = 0, nshapes = 0;
    if ((rc = dt_workload_parse_key(key, &w, &e)) || (rc = dt_target_detect(&t, &e)) ||
        (rc = dt_cli_shapes(w, a.shapes, 4096, &shapes, &nshapes, &e)))
        goto fail;
    if (a.threads > t.logical_cpus) {
        rc = dt_errf(&e, DT_EINVAL, "--threads %d: this machine has %d CPUs", a.threads,
                     t.logical_cpus);
        goto fail;
    }
    t = dt_cli_dtype_target(w, &t);
    if ((rc = dt_cli_kernels(a.kernel_file, a.sample, a.seed, a.threads, &t, w, &kernels,
                              &nk, &e)))
        goto fail;
    if ((rc = dt_builder_init(&b, NULL, NULL, NULL, &e)))
        goto fail;
    dt_bench_opts o = {.threads = a.threads, .repeats = a.repeats,
                       .min_time_s = a.min_time_ms * 1e-3, .peers = a.peers,
                       .progress = !a.json, .seed = a.seed, .verify_shapes = a.verify};
    dt_bench_result r;
    if ((rc = dt_bench_run(w, shapes, nshapes, kernels, nk, &t, &b, &o, &r, &e)))
        goto fail;
    rc = a.json ? print_json(w, &r, &a) : (print_text(w, &r, &a), DT_EXIT_OK);
    dt_bench_result_free(&r);
    free(kernels);
    free(shapes);
    dt_workload_free(w);
    return rc;
fail:
    free(kernels);
    free(shapes);
    dt_workload_free(w);
    return dt_cli_fail(&e);
}
