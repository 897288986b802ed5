/* dtune measure: kernels × shapes measured (locally, or on remote workers)
 * and recorded in the database, each trial exactly once. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/file.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/target.h"
#include "db/db.h"
#include "measure/pool.h"
#include "measure/runner.h"
#include "measure/trial.h"
#include "measure/wire.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "sketch/annotation.h"
#include "sketch/workload.h"

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
            "  --sample N          N random valid annotations (default 16; at most 1000)\n"
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
            "refused (other target, other token) or none has been usable for %.0f s.\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input, 3 runtime failure.\n",
            NO_WORKER_GRACE_S);
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

/* The shapes to run, as canonical shape text (dt_cli_shapes, formatted). */
static int pick_shapes(const dt_workload *w, const char *text, char (**out)[128], int *n,
                       dt_err *e)
{
    int64_t *vals;
    int rc = dt_cli_shapes(w, text, DT_BATCH_MAX_TRIALS, &vals, n, e);
    if (rc)
        return rc;
    *out = calloc((size_t)(*n ? *n : 1), sizeof **out);
    if (!*out) {
        free(vals);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < *n; i++)
        dt_shape_format(w, vals + i * w->nvars, (*out)[i], sizeof (*out)[i]);
    free(vals);
    return 0;
}

/* ---- the run ------------------------------------------------------------- */

typedef struct {
    int got;
    dt_trial_status status;
    double min_ns, median_ns;
    int repeats;
    char *error;
} trial_out;

typedef struct {
    int kernel;  /* index */
    int shape;   /* index */
    const char *uid;
} uid_ref;

typedef struct run {
    /* fixed */
    const measure_args *a;
    const dt_workload *w;
    char wkey[DT_KEY_MAX];
    char tkey[DT_TARGET_KEY_MAX];
    int nk, ns;
    dt_annotation *kernels;
    char (*shapes)[128];
    dt_batch *batches;     /* one per kernel */
    int64_t *kernel_ids;
    char (*source_hash)[65];
    int64_t target_id, workload_id;
    uid_ref *index;        /* sorted by uid */
    int64_t total;
    dt_db *db;
    int tty;

    /* results: under mu (the pool delivers on its own thread) */
    pthread_mutex_t mu;
    trial_out *out;        /* [kernel * ns + shape] */
    int64_t done, recorded, already, duplicates;
    int64_t counts[DT_TRIAL_N_STATUS];
    dt_err db_err;         /* first database failure */
    int db_failed;
    double t0, last_progress;
} run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_ref(const void *x, const void *y)
{
    return strcmp(((const uid_ref *)x)->uid, ((const uid_ref *)y)->uid);
}

static void progress(run *r, int final)
{
    if (dt_log_get_level() < DT_LOG_WARN)
        return;
    double t = now_s(), el = t - r->t0;
    if (!final && t - r->last_progress < (r->tty ? 0.5 : 5.0))
        return;
    r->last_progress = t;
    double rate = el > 0 ? (double)r->done * 60.0 / el : 0;
    fprintf(stderr, "%smeasure: %lld/%lld trials, %.1f trials/min, %.1f s%s",
            r->tty ? "\r" : "", (long long)r->done, (long long)r->total, rate, el,
            r->tty && !final ? "   " : "\n");
    fflush(stderr);
}

/* Records one result (any thread); duplicates are dropped. */
static void take_result(run *r, const dt_trial_result *res)
{
    uid_ref key = {.uid = res->uid};
    pthread_mutex_lock(&r->mu);
    uid_ref *ref = bsearch(&key, r->index, (size_t)r->total, sizeof *r->index, cmp_ref);
    if (!ref) {
        dt_log_warn("measure: a result for unknown trial %s was dropped", res->uid);
        pthread_mutex_unlock(&r->mu);
        return;
    }
    trial_out *o = &r->out[ref->kernel * r->ns + ref->shape];
    if (o->got) {
        r->duplicates++;
        dt_log_warn("measure: a second result for trial %s was dropped", res->uid);
        pthread_mutex_unlock(&r->mu);
        return;
    }
    o->got = 1;
    o->status = res->status;
    o->min_ns = res->min_ns;
    o->median_ns = res->median_ns;
    o->repeats = res->repeats;
    o->error = res->error ? strdup(res->error) : NULL;
    r->done++;
    if ((int)res->status >= 0 && res->status < DT_TRIAL_N_STATUS)
        r->counts[res->status]++;

    const dt_trial *t = &r->batches[ref->kernel].trials[ref->shape];
    dt_meas_status ms;
    if (dt_meas_status_parse(dt_trial_status_name(res->status), &ms) != 0)
        ms = DT_MEAS_WORKER_LOST;
    int ok = res->status == DT_TRIAL_OK;
    dt_db_measurement m = {
        .kernel_id = r->kernel_ids[ref->kernel],
        .target_id = r->target_id,
        .workload_id = r->workload_id,
        .shape = t->shape,
        .threads = t->threads,
        .status = ms,
        .min_ns = ok ? res->min_ns : NAN,
        .median_ns = ok ? res->median_ns : NAN,
        .error = res->error,
        .trial_uid = res->uid,
    };
    bool already = false;
    dt_err e;
    if (!r->db_failed) {
        if (dt_db_measurement_insert(r->db, &m, NULL, &already, &e) != 0) {
            r->db_failed = 1;
            r->db_err = e;
        } else if (already) {
            r->already++;
        } else {
            r->recorded++;
        }
    }
    progress(r, 0);
    pthread_mutex_unlock(&r->mu);
}

static void pool_result(const dt_trial_result *res, void *ud) { take_result(ud, res); }

static int measure_local(run *r, dt_err *e)
{
    dt_builder b;
    dt_runner rn;
    int rc;
    if ((rc = dt_builder_init(&b, NULL, NULL, NULL, e)) ||
        (rc = dt_runner_init(&rn, &b, NULL, e)))
        return rc;
    const dt_batch **bp = malloc((size_t)r->nk * sizeof *bp);
    dt_trial_result *res = calloc((size_t)r->ns, sizeof *res);
    if (!bp || !res) {
        free(bp);
        free(res);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int k = 0; k < r->nk; k++)
        bp[k] = &r->batches[k];
    rc = dt_runner_build_many(&rn, bp, r->nk, e);
    for (int k = 0; !rc && k < r->nk; k++) {
        memset(res, 0, (size_t)r->ns * sizeof *res);
        if ((rc = dt_runner_run(&rn, &r->batches[k], res, e)))
            break;
        for (int s = 0; s < r->ns; s++) {
            take_result(r, &res[s]);
            dt_trial_result_free(&res[s]);
        }
        pthread_mutex_lock(&r->mu);
        int failed = r->db_failed;
        pthread_mutex_unlock(&r->mu);
        if (failed)
            break;
    }
    free(bp);
    free(res);
    return rc;
}

/* Between waits for the workers: progress; stop when the database failed. */
static int drain_tick(void *ud)
{
    run *r = ud;
    pthread_mutex_lock(&r->mu);
    progress(r, 0);
    int failed = r->db_failed;
    pthread_mutex_unlock(&r->mu);
    return failed;
}

static int measure_remote(run *r, dt_err *e)
{
    char *token = NULL;
    size_t token_len = 0;
    int rc = dt_token_read(r->a->token_file, &token, &token_len, e);
    if (rc)
        return rc == DT_ENOTFOUND ? (e->code = DT_EINVAL) : rc;
    /* the longest a worker may legitimately take for one batch: its build,
     * then every trial up to its time limit */
    double deadline = 300;
    for (int k = 0; k < r->nk; k++) {
        double d = DT_BUILD_DEFAULT_TIMEOUT + 60 +
                   r->batches[k].ntrials * (r->batches[k].timing.run_timeout_s + 1);
        if (d > deadline)
            deadline = d;
    }
    dt_pool_opts o = {.workers = r->a->workers,
                      .token = token,
                      .token_len = token_len,
                      .target_key = r->tkey,
                      .inflight = 1,
                      .batch_deadline_s = deadline,
                      .on_result = pool_result,
                      .ud = r};
    dt_pool *p = NULL;
    rc = dt_pool_open(&o, &p, e);
    memset(token, 0, token_len);
    free(token);
    if (rc)
        return rc;
    for (int k = 0; !rc && k < r->nk; k++)
        rc = dt_pool_submit(p, &r->batches[k], e);
    if (!rc)
        rc = dt_pool_drain_patient(p, NO_WORKER_GRACE_S, drain_tick, r, e);
    dt_pool_close(p);
    return rc;
}

/* ---- output ---------------------------------------------------------------- */

static int print_json(run *r, const char *mode, double wall)
{
    json_t *root = json_object(), *ks = json_array(), *counts = json_object();
    json_object_set_new(root, "workload", json_string(r->wkey));
    json_object_set_new(root, "target", json_string(r->tkey));
    json_object_set_new(root, "db", json_string(dt_db_path(r->db)));
    json_object_set_new(root, "mode", json_string(mode));
    if (r->a->workers)
        json_object_set_new(root, "workers", json_string(r->a->workers));
    json_object_set_new(root, "trials", json_integer(r->total));
    json_object_set_new(root, "measured", json_integer(r->done));
    json_object_set_new(root, "recorded", json_integer(r->recorded));
    json_object_set_new(root, "wall_seconds", json_real(wall));
    json_object_set_new(root, "trials_per_minute",
                        json_real(wall > 0 ? (double)r->done * 60.0 / wall : 0));
    for (int s = 0; s < DT_TRIAL_N_STATUS; s++)
        json_object_set_new(counts, dt_trial_status_name((dt_trial_status)s),
                            json_integer(r->counts[s]));
    json_object_set_new(root, "status_counts", counts);
    for (int k = 0; k < r->nk; k++) {
        json_t *jk = json_object(), *jsh = json_array();
        json_object_set_new(jk, "kernel_id", json_integer(r->kernel_ids[k]));
        json_object_set_new(jk, "sketch", json_string(dt_sketch_name(r->kernels[k].sketch)));
        json_object_set_new(jk, "annotation", dt_annotation_to_json(&r->kernels[k]));
        json_object_set_new(jk, "source_hash", json_string(r->source_hash[k]));
        for (int s = 0; s < r->ns; s++) {
            const trial_out *o = &r->out[k * r->ns + s];
            const dt_trial *t = &r->batches[k].trials[s];
            json_t *js = json_object();
            json_object_set_new(js, "shape", json_string(t->shape));
            json_object_set_new(js, "trial_uid", json_string(t->uid));
            json_object_set_new(js, "threads", json_integer(t->threads));
            json_object_set_new(js, "status",
                                o->got ? json_string(dt_trial_status_name(o->status))
                                       : json_null());
            json_object_set_new(js, "min_ns", o->got ? dt_json_num_or_null(o->min_ns) : json_null());
            json_object_set_new(js, "median_ns", o->got ? dt_json_num_or_null(o->median_ns) : json_null());
            json_object_set_new(js, "repeats", json_integer(o->got ? o->repeats : 0));
            if (o->error)
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
        for (int s = 0; s < r->ns; s++) {
            const trial_out *o = &r->out[k * r->ns + s];
            const char *shape = r->batches[k].trials[s].shape;
            printf("%-4d %-8s %-16s %-14s", k, dt_sketch_name(r->kernels[k].sketch),
                   shape[0] ? shape : "(static)",
                   o->got ? dt_trial_status_name(o->status) : "(none)");
            if (o->got && o->status == DT_TRIAL_OK)
                printf(" %12.2f %12.2f\n", o->min_ns * 1e-3, o->median_ns * 1e-3);
            else
                printf(" %12s %12s  %.120s\n", "-", "-", o->error ? o->error : "");
        }
}

static void print_summary(run *r, FILE *f, const char *mode, double wall)
{
    fprintf(f, "%lld of %lld trials measured %s in %.1f s (%.1f trials/min); recorded %lld "
               "new in %s",
            (long long)r->done, (long long)r->total, mode, wall,
            wall > 0 ? (double)r->done * 60.0 / wall : 0, (long long)r->recorded,
            dt_db_path(r->db));
    if (r->already)
        fprintf(f, " (%lld already there)", (long long)r->already);
    fprintf(f, "\nstatus:");
    for (int s = 0; s < DT_TRIAL_N_STATUS; s++)
        if (r->counts[s])
            fprintf(f, " %s %lld", dt_trial_status_name((dt_trial_status)s),
                    (long long)r->counts[s]);
    fprintf(f, "\n");
}

/* ---- setup ------------------------------------------------------------------- */

static void run_free(run *r)
{
    if (r->batches)
        for (int k = 0; k < r->nk; k++)
            dt_batch_free(&r->batches[k]);
    if (r->out)
        for (int64_t i = 0; i < r->total; i++)
            free(r->out[i].error);
    free(r->batches);
    free(r->out);
    free(r->kernel_ids);
    free(r->source_hash);
    free(r->index);
    free(r->kernels);
    free(r->shapes);
    dt_db_close(r->db);
    pthread_mutex_destroy(&r->mu);
}

/* Sources, batches, uids. */
static int make_batches(run *r, const dt_target *t, dt_err *e)
{
    dt_kernel_op kop = {.op = r->w->op};
    memcpy(kop.attrs, r->w->attrs, sizeof kop.attrs);
    r->total = (int64_t)r->nk * r->ns;
    r->batches = calloc((size_t)r->nk, sizeof *r->batches);
    r->kernel_ids = calloc((size_t)r->nk, sizeof *r->kernel_ids);
    r->source_hash = calloc((size_t)r->nk, sizeof *r->source_hash);
    r->out = calloc((size_t)r->total, sizeof *r->out);
    r->index = calloc((size_t)r->total, sizeof *r->index);
    if (!r->batches || !r->kernel_ids || !r->source_hash || !r->out || !r->index)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    (void)t;
    for (int k = 0; k < r->nk; k++) {
        dt_batch *b = &r->batches[k];
        int rc = dt_codegen(&kop, &r->kernels[k], &b->source, e);
        if (rc)
            return dt_err_prefix(e, "kernel %d", k);
        const char *src = b->source;
        dt_hash_strings(&src, 1, r->source_hash[k]);
        snprintf(b->workload, sizeof b->workload, "%s", r->wkey);
        dt_timing_default(&b->timing);
        if (r->a->min_time_ms > 0)
            b->timing.min_time_s = r->a->min_time_ms * 1e-3;
        b->timing.seed = r->a->seed;
        b->timing.flush_cache = r->a->cold;
        b->trials = calloc((size_t)r->ns, sizeof *b->trials);
        if (!b->trials)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        b->ntrials = r->ns;
        int threads = r->a->threads > 0 ? r->a->threads : r->kernels[k].threads;
        for (int s = 0; s < r->ns; s++) {
            if ((rc = dt_trial_init(&b->trials[s], r->w, r->shapes[s], threads, e)))
                return dt_err_prefix(e, "shape %s", r->shapes[s]);
            dt_trial_uid_new(b->trials[s].uid);
            r->index[k * r->ns + s] = (uid_ref){k, s, b->trials[s].uid};
        }
    }
    qsort(r->index, (size_t)r->total, sizeof *r->index, cmp_ref);
    return 0;
}

/* Target, workload and kernels in the database. */
static int prepare_db(run *r, const dt_target *t, dt_err *e)
{
    int rc = dt_db_open(r->a->db ? r->a->db : dt_cli_default_db(), DT_DB_CREATE, &r->db, e);
    if (rc)
        return rc;
    json_t *tj = dt_target_to_json(t);
    char *tinfo = tj ? json_dumps(tj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(tj);
    char *sset = dt_workload_shape_set_json(r->w);
    if (!tinfo || !sset) {
        free(tinfo);
        free(sset);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    if ((rc = dt_db_begin(r->db, e)) == 0) {
        rc = dt_db_target_upsert(r->db, r->tkey, dt_isa_name(t->isa), tinfo, &r->target_id, e);
        if (!rc)
            rc = dt_db_workload_upsert(r->db, r->wkey, r->w->op->name, sset, &r->workload_id, e);
        for (int k = 0; !rc && k < r->nk; k++) {
            char *ann = dt_annotation_to_string(&r->kernels[k]);
            if (!ann) {
                rc = dt_errf(e, DT_ENOMEM, "out of memory");
                break;
            }
            rc = dt_db_kernel_intern(r->db, r->w->op->name, dt_sketch_name(r->kernels[k].sketch),
                                     ann, r->source_hash[k], &r->kernel_ids[k], e);
            free(ann);
        }
        if (rc)
            dt_db_rollback(r->db, NULL);
        else
            rc = dt_db_commit(r->db, e);
    }
    free(tinfo);
    free(sset);
    return rc;
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
    run r = {.a = &a};
    pthread_mutex_init(&r.mu, NULL);
    r.tty = isatty(2);
    if ((rc = dt_workload_parse_key(key, &w, &e)) || (rc = dt_target_detect(&t, &e)))
        goto fail;
    r.w = w;
    dt_workload_key(w, r.wkey, sizeof r.wkey);
    if ((rc = dt_target_key(&t, r.tkey, sizeof r.tkey))) {
        rc = dt_errf(&e, rc, "cannot form this machine's target key");
        goto fail;
    }
    if ((rc = pick_shapes(w, a.shapes, &r.shapes, &r.ns, &e)))
        goto fail;
    if (a.threads > t.logical_cpus) {
        rc = dt_errf(&e, DT_EINVAL, "--threads %d: this machine has %d CPUs", a.threads,
                     t.logical_cpus);
        goto fail;
    }
    if ((rc = dt_cli_kernels(a.kernel_file, a.sample, a.seed, a.threads > 0 ? a.threads : 1, &t,
                             &r.kernels, &r.nk, &e)))
        goto fail;
    if ((rc = make_batches(&r, &t, &e)) || (rc = prepare_db(&r, &t, &e)))
        goto fail;

    const char *mode = a.workers ? "on workers" : "locally";
    if (dt_log_get_level() >= DT_LOG_WARN)
        fprintf(stderr, "measure: %d kernel%s x %d shape%s = %lld trials of %s on %s\n", r.nk,
                r.nk == 1 ? "" : "s", r.ns, r.ns == 1 ? "" : "s", (long long)r.total, r.wkey,
                a.workers ? a.workers : "this machine");
    r.t0 = now_s();
    rc = a.workers ? measure_remote(&r, &e) : measure_local(&r, &e);
    double wall = now_s() - r.t0;
    pthread_mutex_lock(&r.mu);
    progress(&r, 1);
    pthread_mutex_unlock(&r.mu);
    if (!rc && r.db_failed) {
        e = r.db_err;
        rc = e.code ? e.code : DT_EDB;
    }
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
    run_free(&r);
    dt_workload_free(w);
    return rc;
fail:
    if (r.db && r.done)
        fprintf(stderr, "measure: %lld of %lld trials were measured and recorded before the "
                        "failure\n",
                (long long)r.done, (long long)r.total);
    run_free(&r);
    dt_workload_free(w);
    return dt_cli_fail(&e);
}
