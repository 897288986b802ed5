/* dtune measure: kernels × shapes measured (locally, or on remote workers)
 * and recorded in the database, each trial exactly once, through the
 * measurement session (tuner/measurer.h) the tuner uses too; this file is
 * the command line and the output. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/target.h"
#include "db/db.h"
#include "measure/pool.h"
#include "measure/trial.h"
#include "space/annotation.h"
#include "shape/workload.h"
#include "tuner/measurer.h"

/* A --workers run gives up when no worker has been usable for this long. */
#define NO_WORKER_GRACE_S 30.0

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune measure WORKLOAD [--kernel FILE.json | --sample N] [--seed S]\n"
            "                     [--shapes DOMAIN] [--threads T] [--min-time MS] [--cold]\n"
            "                     [--workers HOST:PORT,... --token-file FILE] [--db PATH]\n"
            "                     [--json]\n"
            "\n"
            "Measures micro-kernels on a workload's shapes and records every trial in the\n"
            "database (table measurements), exactly once. Each kernel is one batch with one\n"
            "trial per shape. Trials run in an isolated child process: a crash, a hang, a\n"
            "wrong answer or a compiler error becomes the trial's status (ok, compile_error,\n"
            "compile_timeout, run_crash, run_timeout, wrong_answer, worker_lost), never the\n"
            "end of the run. Without --workers the trials run on this machine; with\n"
            "--workers they are sent to `dtune worker` processes, which must have this\n"
            "machine's target and the same token.\n"
            "\n"
            "WORKLOAD is a workload key, e.g. 'dense(M=1..128,N=768,K=768)'.\n"
            "\n"
            "Options:\n"
            "  --kernel FILE.json  annotations to measure: one JSON object or an array\n"
            "  --sample N          N random valid annotations (default 16; at most 1000),\n"
            "                      over every back-end the tuner searches for the dtype\n"
            "  --seed S            seed of the sample and of the inputs (default 1)\n"
            "  --shapes DOMAIN     values of the workload's variable, e.g. 1..128 or\n"
            "                      {1,8,37,128} (default: the workload's shape set)\n"
            "  --threads T         threads per trial (default: the annotation's; sampled\n"
            "                      annotations use 1)\n"
            "  --min-time MS       measure each trial for at least MS milliseconds\n"
            "                      (default 20)\n"
            "  --workers LIST      comma-separated HOST:PORT of dtune workers\n"
            "  --token-file FILE   the shared token of the workers (mode 600)\n"
            "  --db PATH           database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --json              print one JSON object instead of a table\n"
            "  -h, --help          show this help\n"
            "\n"
            "Progress goes to stderr. A --workers run fails (exit 3) when every worker is\n"
            "refused (other target, other token, no version, silent twice) or none has been\n"
            "usable for %.0f s. A worker that stops answering is dropped after %.0f s of\n"
            "silence (DTUNE_POOL_SILENT_S overrides it); a time no CPU could reach is a\n"
            "worker fault (worker_lost), never a result. A run in which every trial ends\n"
            "worker_lost measured nothing: it fails (exit 3) after printing its results.\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input, 3 runtime failure.\n",
            NO_WORKER_GRACE_S, DT_POOL_SILENT_S);
}

typedef struct {
    const char *kernel_file, *shapes, *workers, *token_file, *db;
    int sample, threads, json, cold;
    double min_time_ms;
    uint64_t seed;
} measure_args;

static int parse_args(int argc, char **argv, measure_args *a, const char **key)
{
    static const struct option opts[] = {
        {"kernel", required_argument, NULL, 'k'},  {"sample", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},    {"shapes", required_argument, NULL, 'S'},
        {"threads", required_argument, NULL, 't'}, {"min-time", required_argument, NULL, 'm'},
        {"workers", required_argument, NULL, 'w'}, {"token-file", required_argument, NULL, 'T'},
        {"db", required_argument, NULL, 'd'},      {"json", no_argument, NULL, 'j'},
        {"cold", no_argument, NULL, 'c'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *a = (measure_args){.sample = -1, .min_time_ms = -1, .seed = 1};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'k': a->kernel_file = optarg; break;
        case 'S': a->shapes = optarg; break;
        case 'w': a->workers = optarg; break;
        case 'T': a->token_file = optarg; break;
        case 'd': a->db = optarg; break;
        case 'j': a->json = 1; break;
        case 'c': a->cold = 1; break;
        case 'h': usage(stdout); return -1;
        case 'n': rc = dt_cli_int_opt("measure", "--sample", optarg, 1, 1000, &a->sample); break;
        case 's': rc = dt_cli_seed_opt("measure", optarg, &a->seed); break;
        case 't': rc = dt_cli_int_opt("measure", "--threads", optarg, 1, 1024, &a->threads); break;
        case 'm':
            rc = dt_cli_ms_opt("measure", "--min-time", optarg, 60000, &a->min_time_ms);
            break;
        default:
            return dt_cli_usage_error("measure", "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (a->kernel_file && a->sample > 0)
        return dt_cli_usage_error("measure", "--kernel and --sample exclude each other");
    if (!a->workers != !a->token_file)
        return dt_cli_usage_error("measure", "--workers and --token-file go together");
    if (argc - optind != 1)
        return dt_cli_usage_error("measure", "expected one WORKLOAD argument");
    *key = argv[optind];
    return 0;
}

/* ---- the run ------------------------------------------------------------- */

typedef struct run {
    const measure_args *a;
    const dt_workload *w;
    char wkey[DT_KEY_MAX];
    char tkey[DT_TARGET_KEY_MAX];
    int nk, nshapes;
    dt_mkernel *kernels;   /* [nk] */
    dt_mtrial *trials;     /* [kernel * nshapes + shape] */
    int64_t total;
    dt_db *db;
    int tty;
    int64_t done;          /* results so far (the session's progress) */
    double t0, last_progress;
} run;

static void progress(run *r, int final)
{
    if (dt_log_get_level() < DT_LOG_WARN)
        return;
    double t = dt_now_s(), el = t - r->t0;
    if (!final && t - r->last_progress < (r->tty ? 0.5 : 5.0))
        return;
    r->last_progress = t;
    double rate = el > 0 ? (double)r->done * 60.0 / el : 0;
    fprintf(stderr, "%smeasure: %lld/%lld trials, %.1f trials/min, %.1f s%s",
            r->tty ? "\r" : "", (long long)r->done, (long long)r->total, rate, el,
            r->tty && !final ? "   " : "\n");
    fflush(stderr);
}

static void on_progress(int64_t done, int64_t total, void *ud)
{
    run *r = ud;
    (void)total;
    r->done = done;
    progress(r, 0);
}

/* Trials with a result, recorded new, found recorded, and per status. */
typedef struct {
    int64_t got, recorded, already;
    int64_t counts[DT_TRIAL_N_STATUS];
} tally;

static tally count_trials(const run *r)
{
    tally c = {0};
    for (int64_t i = 0; i < r->total; i++) {
        const dt_mtrial *t = &r->trials[i];
        if (!t->got)
            continue;
        c.got++;
        if (t->recorded && t->already)
            c.already++;
        else if (t->recorded)
            c.recorded++;
        if ((unsigned)t->res.status < DT_TRIAL_N_STATUS)
            c.counts[t->res.status]++;
    }
    return c;
}

/* ---- output ---------------------------------------------------------------- */

static int print_json(run *r, const char *mode, double wall)
{
    tally c = count_trials(r);
    json_t *root = json_object(), *ks = json_array(), *counts = json_object();
    json_object_set_new(root, "workload", json_string(r->wkey));
    json_object_set_new(root, "target", json_string(r->tkey));
    json_object_set_new(root, "db", json_string(dt_db_path(r->db)));
    json_object_set_new(root, "mode", json_string(mode));
    if (r->a->workers)
        json_object_set_new(root, "workers", json_string(r->a->workers));
    json_object_set_new(root, "trials", json_integer(r->total));
    json_object_set_new(root, "measured", json_integer(c.got));
    json_object_set_new(root, "recorded", json_integer(c.recorded));
    json_object_set_new(root, "wall_seconds", json_real(wall));
    json_object_set_new(root, "trials_per_minute",
                        json_real(wall > 0 ? (double)c.got * 60.0 / wall : 0));
    for (int s = 0; s < DT_TRIAL_N_STATUS; s++)
        json_object_set_new(counts, dt_trial_status_name((dt_trial_status)s),
                            json_integer(c.counts[s]));
    json_object_set_new(root, "status_counts", counts);
    for (int k = 0; k < r->nk; k++) {
        json_t *jk = json_object(), *jsh = json_array();
        json_object_set_new(jk, "kernel_id", json_integer(r->kernels[k].id));
        json_object_set_new(jk, "sketch", json_string(dt_sketch_name(r->kernels[k].a.sketch)));
        json_object_set_new(jk, "annotation", dt_annotation_to_json(&r->kernels[k].a));
        json_object_set_new(jk, "source_hash", json_string(r->kernels[k].source_hash));
        for (int s = 0; s < r->nshapes; s++) {
            const dt_mtrial *t = &r->trials[k * r->nshapes + s];
            const dt_trial_result *o = &t->res;
            json_t *js = json_object();
            json_object_set_new(js, "shape", json_string(t->text));
            json_object_set_new(js, "trial_uid", json_string(t->uid));
            json_object_set_new(js, "threads", json_integer(t->threads));
            json_object_set_new(js, "status",
                                t->got ? json_string(dt_trial_status_name(o->status))
                                       : json_null());
            json_object_set_new(js, "min_ns", t->got ? dt_json_num_or_null(o->min_ns) : json_null());
            json_object_set_new(js, "median_ns", t->got ? dt_json_num_or_null(o->median_ns) : json_null());
            json_object_set_new(js, "repeats", json_integer(t->got ? o->repeats : 0));
            if (t->got && o->error)
                json_object_set_new(js, "error", json_string(o->error));
            json_array_append_new(jsh, js);
        }
        json_object_set_new(jk, "shapes", jsh);
        json_array_append_new(ks, jk);
    }
    json_object_set_new(root, "kernels", ks);
    return dt_cli_print_json(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME
                                                                          : DT_EXIT_OK;
}

static void print_table(run *r)
{
    printf("%-4s %-8s %-16s %-14s %12s %12s  %s\n", "k", "sketch", "shape", "status", "min us",
           "median us", "");
    for (int k = 0; k < r->nk; k++)
        for (int s = 0; s < r->nshapes; s++) {
            const dt_mtrial *t = &r->trials[k * r->nshapes + s];
            const dt_trial_result *o = &t->res;
            printf("%-4d %-8s %-16s %-14s", k, dt_sketch_name(r->kernels[k].a.sketch),
                   t->text[0] ? t->text : "(static)",
                   t->got ? dt_trial_status_name(o->status) : "(none)");
            if (t->got && o->status == DT_TRIAL_OK)
                printf(" %12.2f %12.2f\n", o->min_ns * 1e-3, o->median_ns * 1e-3);
            else
                printf(" %12s %12s  %.120s\n", "-", "-", t->got && o->error ? o->error : "");
        }
}

static void print_summary(run *r, FILE *f, const char *mode, double wall)
{
    tally c = count_trials(r);
    fprintf(f, "%lld of %lld trial%s measured %s in %.1f s (%.1f trials/min); recorded %lld "
               "new in %s",
            (long long)c.got, (long long)r->total, r->total == 1 ? "" : "s", mode, wall,
            wall > 0 ? (double)c.got * 60.0 / wall : 0, (long long)c.recorded,
            dt_db_path(r->db));
    if (c.already)
        fprintf(f, " (%lld already there)", (long long)c.already);
    fprintf(f, "\nstatus:");
    for (int s = 0; s < DT_TRIAL_N_STATUS; s++)
        if (c.counts[s])
            fprintf(f, " %s %lld", dt_trial_status_name((dt_trial_status)s),
                    (long long)c.counts[s]);
    fprintf(f, "\n");
}

/* ---- setup ------------------------------------------------------------------- */

/* The kernels (dt_cli_kernels) and the trials: every kernel on every shape
 * (values from dt_cli_shapes), kernel-major. */
static int make_trials(run *r, dt_annotation *ann, const int64_t *vals, dt_err *e)
{
    r->total = (int64_t)r->nk * r->nshapes;
    r->kernels = calloc((size_t)r->nk, sizeof *r->kernels);
    r->trials = calloc((size_t)(r->total ? r->total : 1), sizeof *r->trials);
    if (!r->kernels || !r->trials)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int k = 0; k < r->nk; k++) {
        r->kernels[k].a = ann[k];
        int threads = r->a->threads > 0 ? r->a->threads : ann[k].threads;
        for (int s = 0; s < r->nshapes; s++) {
            dt_mtrial *t = &r->trials[k * r->nshapes + s];
            t->kernel = k;
            t->threads = threads;
            memcpy(t->shape, vals + (size_t)s * r->w->nvars,
                   (size_t)r->w->nvars * sizeof *t->shape);
        }
    }
    return 0;
}

static void run_free(run *r)
{
    dt_mtrials_free(r->trials, (int)r->total);
    free(r->trials);
    free(r->kernels);
    dt_db_close(r->db);
}

int dt_cmd_measure(int argc, char **argv)
{
    measure_args a;
    const char *key = NULL;
    int rc = parse_args(argc, argv, &a, &key);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    dt_workload *w = NULL;
    dt_target t;
    dt_annotation *ann = NULL;
    int64_t *vals = NULL;
    dt_measurer *m = NULL;
    run r = {.a = &a};
    r.tty = isatty(2);
    if ((rc = dt_workload_parse_key(key, &w, &e)) ||
        (rc = dt_target_detect_key(&t, r.tkey, sizeof r.tkey, &e)))
        goto fail;
    r.w = w;
    dt_workload_key(w, r.wkey, sizeof r.wkey);
    if ((rc = dt_cli_shapes(w, a.shapes, DT_BATCH_MAX_TRIALS, &vals, &r.nshapes, &e)))
        goto fail;
    if (a.threads > t.logical_cpus) {
        rc = dt_errf(&e, DT_EINVAL, "--threads %d: this machine has %d CPUs", a.threads,
                     t.logical_cpus);
        goto fail;
    }
    dt_target kt = dt_cli_dtype_target(w, &t);
    if ((rc = dt_cli_kernels(a.kernel_file, a.sample, a.seed, a.threads > 0 ? a.threads : 1, &kt, w, &ann, &r.nk, &e)) ||
        (rc = make_trials(&r, ann, vals, &e)))
        goto fail;
    if ((rc = dt_db_open(a.db ? a.db : dt_cli_default_db(), DT_DB_CREATE, &r.db, &e)))
        goto fail;
    dt_timing timing;
    dt_timing_default(&timing);
    dt_measurer_opts mo = {.workers = a.workers,
                           .token_file = a.token_file,
                           .min_time_s = a.min_time_ms > 0 ? a.min_time_ms * 1e-3
                                                           : timing.min_time_s,
                           .seed = a.seed,
                           .flush_cache = a.cold,
                           .no_worker_grace_s = NO_WORKER_GRACE_S,
                           .progress = on_progress,
                           .ud = &r};
    if ((rc = dt_measurer_open(&mo, r.db, &t, r.tkey, &m, &e)))
        goto fail;

    const char *mode = a.workers ? "on workers" : "locally";
    if (dt_log_get_level() >= DT_LOG_WARN)
        fprintf(stderr, "measure: %d kernel%s x %d shape%s = %lld trial%s of %s on %s\n", r.nk,
                r.nk == 1 ? "" : "s", r.nshapes, r.nshapes == 1 ? "" : "s", (long long)r.total,
                r.total == 1 ? "" : "s", r.wkey, a.workers ? a.workers : "this machine");
    r.t0 = dt_now_s();
    dt_mrun mr = {.w = w, .kernels = r.kernels, .nk = r.nk, .trials = r.trials,
                  .n = (int)r.total};
    rc = dt_measurer_measure(m, &mr, &e);
    double wall = dt_now_s() - r.t0;
    int64_t faults = dt_measurer_faults(m);
    dt_measurer_close(m);
    m = NULL;
    progress(&r, 1);
    if (rc)
        goto fail;
    if (a.json) {
        print_summary(&r, stderr, mode, wall);
        rc = print_json(&r, a.workers ? "workers" : "local", wall);
    } else {
        print_table(&r);
        printf("\n");
        print_summary(&r, stdout, mode, wall);
        rc = DT_EXIT_OK;
    }
    if (faults > 0)
        fprintf(stderr, "measure: warning: %lld impossible time%s refused as worker fault%s "
                        "(recorded worker_lost)\n",
                (long long)faults, faults == 1 ? "" : "s", faults == 1 ? "" : "s");
    tally done = count_trials(&r);
    if (rc == DT_EXIT_OK && r.total > 0 && done.counts[DT_TRIAL_WORKER_LOST] == r.total) {
        /* nothing measured: every trial's worker was lost, silent or lying */
        const char *why = "";
        for (int64_t i = 0; i < r.total && !why[0]; i++)
            if (r.trials[i].res.error)
                why = r.trials[i].res.error;
        fprintf(stderr, "dtune: error: nothing was measured: all %lld trial%s ended worker_lost%s%.600s\n",
                (long long)r.total, r.total == 1 ? "" : "s", why[0] ? ": " : "", why);
        rc = DT_EXIT_RUNTIME;
    }
    run_free(&r);
    free(ann);
    free(vals);
    dt_workload_free(w);
    return rc;
fail:
    dt_measurer_close(m);
    if (r.db && r.trials) {
        tally c = count_trials(&r);
        if (c.recorded + c.already)
            fprintf(stderr, "measure: %lld of %lld trial%s were measured and recorded before "
                            "the failure\n",
                    (long long)(c.recorded + c.already), (long long)r.total,
                    r.total == 1 ? "" : "s");
    }
    run_free(&r);
    free(ann);
    free(vals);
    dt_workload_free(w);
    return dt_cli_fail(&e);
}
