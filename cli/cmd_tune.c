/* dtune tune: a model's workloads (or one workload) tuned into dispatch
 * schedules in the database (tuner/tune.h). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/target.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "backends/backend.h"
#include "tuner/model_tasks.h"
#include "cli/cli_model.h"
#include "tuner/curve.h"
#include "tuner/kset.h"
#include "tuner/tune.h"
#include "tuner/tune_json.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune tune MODEL.json|MODEL.onnx|WORKLOAD [--var NAME=DOMAIN...]\n"
            "                  [--branch IF=then|else|both...]\n"
            "                  [--db PATH] [--trials N] [--time DURATION]\n"
            "                  [--strategy joint|per-shape|random] [--threads T] [--seed S]\n"
            "                  [--topk K] [--max-kernels K|auto|all] [--min-time MS]\n"
            "                  [--workers HOST:PORT,... --token-file F] [--math bf16] [--json]\n"
            "\n"
            "Tunes every workload of a model spec, of an ONNX model (imported as\n"
            "`dtune import` does, with its --var flags), or the one workload key given, on this\n"
            "machine's target and stores, per workload, a dispatch schedule: shape ranges\n"
            "and the micro-kernel measured fastest on them. Every trial is recorded in the\n"
            "database as it is measured; running the same command again on the same\n"
            "database goes on from the records (nothing is measured twice) and, once the\n"
            "budget is spent, only redoes the final selection.\n"
            "\n"
            "Strategies:\n"
            "  joint      DietCode: kernels evolved for the whole shape set at once, valued\n"
            "             by how much they lower sum_s w_s * min_k time(s, k), guided by\n"
            "             the XGBoost cost model (default)\n"
            "  per-shape  Ansor-style baseline: each shape tuned on its own, with an\n"
            "             equal share of the trials\n"
            "  random     random kernels on random shapes\n"
            "At the end, for every shape the top K predicted kernels are measured on it\n"
            "and the fastest wins (per-shape: its best measured kernel), within a kernel\n"
            "budget: the set of at most --max-kernels kernels that minimises\n"
            "sum_s w_s * min_k time(s, k), every shape dispatched to its fastest member.\n"
            "The default (auto) is the smallest set within %g %% of that objective over\n"
            "every kernel (the unrestricted choice); the summary reports the loss.\n"
            "The back-end is searched too: bf16 and int8 kernels are drawn among their\n"
            "own instruction (vdpbf16ps, vpdpbusd), widened to the f32 FMA, and AMX tiles\n"
            "where `dtune info` says AMX is usable; the summary ends with the back-end\n"
            "dispatched on each range of shapes.\n"
            "\n"
            "Options:\n"
            "  --var NAME=DOMAIN  (.onnx) the values of a dynamic dim, e.g. seq=1..128,\n"
            "                     batch=1 (docs/onnx-import.md)\n"
            DT_CLI_BRANCH_HELP
            "  --db PATH          database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --trials N         trial budget over the model, records already in the\n"
            "                     database included (default 300 per workload unless\n"
            "                     --time is given)\n"
            "  --time DURATION    wall-time budget of this run: 90s, 25m, 2h\n"
            "  --strategy S       joint, per-shape or random (default joint)\n"
            "  --threads T        threads of the tuned kernels (default: all cores)\n"
            "  --seed S           seed of the search (default 1)\n"
            "  --topk K           kernels measured per shape at the end (default 2)\n"
            "  --max-kernels K    at most K distinct kernels per workload; auto\n"
            "                     (default): the fewest within 1 %% of the unrestricted\n"
            "                     objective; all / 0: unrestricted.  Both dispatch\n"
            "                     kernels measured on their shapes, unless an unmeasured\n"
            "                     one is estimated more than 4x faster (docs/tuner.md)\n"
            "  --min-time MS      minimum timed length of one trial (default 5)\n"
            "  --workers LIST     measure on dtune workers (HOST:PORT,...) instead of here\n"
            "  --token-file FILE  the workers' shared token (mode 600)\n"
            "  --math bf16        bf16 arithmetic for every f32 and w8a32 GEMM of the model\n"
            "                     that has it (dtypes f32_bf16, w8a32_bf16; keys with\n"
            "                     math=bf16): f32 in and out, weights packed as bf16\n"
            "                     (w8a32's dequantized first), activations rounded per call\n"
            "  --json             print one JSON summary on stdout\n"
            "  -h, --help         show this help\n"
            "\n"
            "Every workload gets a first round before the final selection's reserve\n"
            "(at most a quarter of the budget) is held back. A budget too small to give\n"
            "each unmeasured workload %d trials (or %g s) is refused. A workload none of\n"
            "whose trials ran successfully is skipped with a warning; the others are\n"
            "stored, and the summary says which workloads got a schedule.\n"
            "\n"
            "Progress goes to stderr: a live line on a terminal, one line per round\n"
            "otherwise. SIGINT (Ctrl-C) or SIGTERM stops the search after the current\n"
            "round, stores schedules from what was measured (nothing more is measured),\n"
            "prints the summary and exits 130 (SIGINT) or 143 (SIGTERM); a second one\n"
            "ends it at once (every recorded trial is kept).\n"
            "\n"
            "Exit codes: 0 ok (some workloads may be skipped: see the summary), 1 usage\n"
            "error, 2 bad input (a budget below the minimum included), 3 runtime failure\n"
            "(no workload got a schedule included), 128+N stopped by signal N.\n",
            100 * DT_SELECT_LOSS_TOL, DT_TUNE_MIN_FIRST_TRIALS, DT_TUNE_MIN_SECONDS_PER_TASK);
}

/* --max-kernels: K (1..DT_KSET_MAX), "auto", or "all" / 0 */
static int max_kernels_opt(const char *arg, int *out)
{
    if (strcmp(arg, "auto") == 0) {
        *out = DT_SELECT_AUTO;
        return 0;
    }
    if (strcmp(arg, "all") == 0) {
        *out = DT_SELECT_ALL;
        return 0;
    }
    return dt_cli_int_opt("tune", "--max-kernels", arg, 0, DT_KSET_MAX, out);
}

/* The budget as given: "auto", "all" or K. */
static json_t *max_kernels_json(int k)
{
    return k == DT_SELECT_AUTO ? json_string("auto")
           : k == DT_SELECT_ALL ? json_string("all")
                                : json_integer(k);
}

typedef struct {
    const char *db, *workers, *token_file;
    const char *math; /* --math bf16, or NULL */
    dt_cli_vars vars;
    int64_t trials;
    double time_s, min_time_ms;
    int threads, json, topk, max_kernels;
    dt_strategy strategy;
    uint64_t seed;
} tune_args;

static int parse_args(int argc, char **argv, tune_args *a, const char **what)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},      {"trials", required_argument, NULL, 'n'},
        {"time", required_argument, NULL, 'T'},    {"strategy", required_argument, NULL, 'S'},
        {"threads", required_argument, NULL, 't'}, {"seed", required_argument, NULL, 's'},
        {"topk", required_argument, NULL, 'k'},    {"min-time", required_argument, NULL, 'm'},
        {"workers", required_argument, NULL, 'w'}, {"token-file", required_argument, NULL, 'F'},
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {"var", required_argument, NULL, 'v'},     {"max-kernels", required_argument, NULL, 'K'},
        {"math", required_argument, NULL, 'M'},    {"branch", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0}};
    *a = (tune_args){.seed = 1, .topk = 2, .min_time_ms = 5, .max_kernels = DT_SELECT_AUTO};
    int c, v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'd': a->db = optarg; break;
        case 'w': a->workers = optarg; break;
        case 'F': a->token_file = optarg; break;
        case 'j': a->json = 1; break;
        case 'M':
            if (!dt_cli_math_known(optarg))
                return dt_cli_usage_error("tune", "--math takes %s, not '%s'",
                                          dt_dtype_math_names(), optarg);
            a->math = optarg;
            break;
        case 'v': rc = dt_cli_vars_add(&a->vars, "tune", optarg); break;
        case 'B': rc = dt_cli_branch_add(&a->vars, "tune", optarg); break;
        case 'h': usage(stdout); return -1;
        case 'n':
            rc = dt_cli_int_opt("tune", "--trials", optarg, 1, 100000000, &v);
            a->trials = v;
            break;
        case 'T': rc = dt_cli_duration_opt("tune", "--time", optarg, &a->time_s); break;
        case 'S':
            if (dt_strategy_parse(optarg, &a->strategy))
                return dt_cli_usage_error("tune", "--strategy takes joint, per-shape or random, "
                                                  "not '%s'", optarg);
            break;
        case 't': rc = dt_cli_int_opt("tune", "--threads", optarg, 1, 1024, &a->threads); break;
        case 's': rc = dt_cli_seed_opt("tune", optarg, &a->seed); break;
        case 'k': rc = dt_cli_int_opt("tune", "--topk", optarg, 0, 16, &a->topk); break;
        case 'K': rc = max_kernels_opt(optarg, &a->max_kernels); break;
        case 'm': rc = dt_cli_ms_opt("tune", "--min-time", optarg, 10000, &a->min_time_ms); break;
        default:
            return dt_cli_usage_error("tune", "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (!a->workers != !a->token_file)
        return dt_cli_usage_error("tune", "--workers and --token-file go together");
    if (argc - optind != 1)
        return dt_cli_usage_error("tune", "expected one MODEL.json, MODEL.onnx or WORKLOAD "
                                          "argument");
    *what = argv[optind];
    return 0;
}

/* ---- progress ------------------------------------------------------------------- */

typedef struct {
    int tty, quiet;
    int last_len;
    dt_tune_curve curve; /* every round, for --json */
} progress_state;

static void fmt_ns(double ns, char *buf, size_t n)
{
    if (!isfinite(ns))
        snprintf(buf, n, "-");
    else if (ns >= 1e6)
        snprintf(buf, n, "%.3f ms", ns * 1e-6);
    else
        snprintf(buf, n, "%.1f us", ns * 1e-3);
}

static void fmt_clock(double s, char *buf, size_t n)
{
    int t = (int)s;
    snprintf(buf, n, "%d:%02d", t / 60, t % 60);
}

static void on_event(const dt_tune_event *ev, void *ud)
{
    progress_state *ps = ud;
    dt_tune_curve_add(&ps->curve, ev);
    if (ps->quiet)
        return;
    char obj[32], lat[32], el[32], tb[48], budget[32] = "";
    fmt_ns(ev->task->objective, obj, sizeof obj);
    fmt_ns(ev->model_latency_ns, lat, sizeof lat);
    fmt_clock(ev->elapsed_s, el, sizeof el);
    if (ev->trials_budget > 0)
        snprintf(budget, sizeof budget, "/%lld", (long long)ev->trials_budget);
    if (ev->kind == DT_TUNE_EV_RESUMED) {
        fprintf(stderr, "tune: %s: resuming from %lld recorded trial%s of %d kernel%s\n",
                ev->task->name, (long long)ev->task->resumed, ev->task->resumed == 1 ? "" : "s",
                ev->task->nk, ev->task->nk == 1 ? "" : "s");
        return;
    }
    if (ev->kind == DT_TUNE_EV_SKIPPED) {
        if (ps->tty && ps->last_len)
            fprintf(stderr, "\r%*s\r", ps->last_len, "");
        ps->last_len = 0;
        fprintf(stderr, "tune: warning: %s (%s): skipped, no schedule stored: %s\n",
                ev->task->name, ev->task->key, ev->reason);
        return;
    }
    if (ev->kind == DT_TUNE_EV_SELECTED) {
        char loss[24] = "n/a";
        if (isfinite(ev->select.loss))
            snprintf(loss, sizeof loss, "%.2f %%", 100 * ev->select.loss);
        if (ps->tty && ps->last_len)
            fprintf(stderr, "\r%*s\r", ps->last_len, "");
        ps->last_len = 0;
        fprintf(stderr,
                "tune: %s: selected %d range%s, %d kernel%s of %d (%lld selection trial%s), "
                "objective %s, loss %s\n",
                ev->task->name, ev->select.ranges, ev->select.ranges == 1 ? "" : "s",
                ev->select.kernels, ev->select.kernels == 1 ? "" : "s",
                ev->select.best_kernels, (long long)ev->select.trials,
                ev->select.trials == 1 ? "" : "s", obj, loss);
        return;
    }
    char tau[16] = "n/a";
    if (isfinite(ev->round.tau))
        snprintf(tau, sizeof tau, "%.2f", ev->round.tau);
    if (ev->time_budget_s > 0) {
        char t2[32];
        fmt_clock(ev->time_budget_s, t2, sizeof t2);
        snprintf(tb, sizeof tb, "/%s", t2);
    } else {
        tb[0] = 0;
    }
    /* the objective holds the cost model's prediction on every shape not
     * measured yet: say which it is (a prediction can be far off) */
    char what[64];
    if (ev->predicted_shapes <= 0)
        snprintf(what, sizeof what, "measured");
    else if (ev->predicted_shapes >= ev->task->nshapes)
        snprintf(what, sizeof what, "predicted");
    else
        snprintf(what, sizeof what, "predicted on %lld/%lld shapes",
                 (long long)ev->predicted_shapes, (long long)ev->task->nshapes);
    char line[640];
    int len = snprintf(line, sizeof line,
                       "[%d/%d %s] round %d | trials %lld%s | best %s %s | model %s | "
                       "%.0f trials/min | tau %s | %s%s",
                       ev->task_index + 1, ev->ntasks, dt_cli_safe(ev->task->name),
                       ev->task->rounds, (long long)ev->trials_used, budget, obj, what, lat,
                       ev->trials_per_min, tau, el, tb);
    if (ps->tty) {
        int pad = ps->last_len > len ? ps->last_len - len : 0;
        fprintf(stderr, "\r%s%*s", line, pad, "");
        ps->last_len = len;
    } else {
        fprintf(stderr, "tune: %s\n", line);
    }
    fflush(stderr);
}

/* the signal that asked to stop (0: none); the exit code is 128 + it */
static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
    stop_flag = sig;
}

/* ---- output ------------------------------------------------------------------------ */

static int print_json(const char *what, const char *tkey, const char *db, const tune_args *a,
                      int threads, const dt_task *t, int n, const dt_tune_result *r,
                      const dt_tune_curve *curve)
{
    json_t *root = json_object(), *ws = json_array();
    json_object_set_new(root, "model", json_string(what));
    json_object_set_new(root, "target", json_string(tkey));
    json_object_set_new(root, "db", json_string(db));
    json_object_set_new(root, "strategy", json_string(dt_strategy_name(a->strategy)));
    json_object_set_new(root, "threads", json_integer(threads));
    json_object_set_new(root, "trials_new", json_integer(r->trials_new));
    json_object_set_new(root, "trials_total", json_integer(r->trials_total));
    json_object_set_new(root, "seconds", json_real(r->seconds));
    json_object_set_new(root, "stopped", json_boolean(r->stopped));
    json_object_set_new(root, "workloads_scheduled", json_integer(r->nscheduled));
    json_object_set_new(root, "workloads_skipped", json_integer(r->nskipped));
    json_object_set_new(root, "max_kernels", max_kernels_json(a->max_kernels));
    for (int i = 0; i < n; i++)
        json_array_append_new(
            ws, dt_tune_workload_json(&t[i], DT_TUNE_JSON_RESULT,
                                      dt_tune_outcome_name(r->outcome[i]),
                                      r->outcome[i] == DT_TUNE_SKIPPED ? r->reason[i] : NULL,
                                      &r->sel[i]));
    dt_tune_latency_json(root, t, n, r);
    json_object_set_new(root, "workloads", ws);
    json_t *ms = dt_tune_cost_models_json(r);
    json_object_set_new(root, "cost_models", ms);
    json_t *cj = dt_tune_curve_json(curve, t, n);
    json_object_set_new(root, "curve", cj ? cj : json_null());
    return dt_cli_print_json(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME
                                                                          : DT_EXIT_OK;
}

/* v with `decimals` decimals, or "n/a" when it could not be computed */
static void fmt_metric(double v, int decimals, char *buf, size_t n)
{
    if (isfinite(v))
        snprintf(buf, n, "%.*f", decimals, v);
    else
        snprintf(buf, n, "n/a");
}

/* The widest workload name of the summary, in characters. */
#define NAME_COL_MAX 40

/* Characters (not bytes) of UTF-8 text. */
static int utf8_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* Bytes of the path prefix ("a/b/") that every name shares, so the summary
 * shows what tells ONNX node names apart ("/model/model.0/auto_model/
 * encoder/layer.0/attention/self/query/MatMul" and ".../key/MatMul" share
 * 57 bytes); 0 when fewer than two names or no '/' is shared. */
static size_t shared_prefix(const dt_task *t, int n)
{
    if (n < 2)
        return 0;
    size_t len = strlen(t[0].name);
    for (int i = 1; i < n; i++) {
        size_t k = 0;
        while (k < len && t[i].name[k] == t[0].name[k])
            k++;
        len = k;
    }
    while (len > 0 && t[0].name[len - 1] != '/')
        len--;
    /* a name that is all prefix keeps it whole */
    for (int i = 0; i < n; i++)
        if (!t[i].name[len])
            return 0;
    return len;
}

/* The summary's name of a task, escaped: without the shared prefix, and
 * when still longer than NAME_COL_MAX characters its tail after a "…"
 * (names differ at their end: ".../query/MatMul", ".../MatMul_1"). */
static void display_name(const char *name, size_t prefix, char *out, size_t n)
{
    const char *s = name + prefix;
    const char *safe = dt_cli_safe(s);
    int w = utf8_width(safe);
    if (w <= NAME_COL_MAX) {
        snprintf(out, n, "%s", safe);
        return;
    }
    const char *p = safe;
    for (int drop = w - (NAME_COL_MAX - 1); drop > 0; drop--) /* skip characters */
        for (p++; ((unsigned char)*p & 0xC0) == 0x80; p++)
            ;
    snprintf(out, n, "\xe2\x80\xa6%s", p); /* U+2026 */
}

/* "bf16/amx": the back-end of range k's kernel ("?" when unreadable). */
static void backend_of_range(dt_db *db, const dt_dispatch *d, int k, char *out, int n)
{
    dt_annotation a;
    dt_err e;
    snprintf(out, (size_t)n, "?");
    if (!dt_dispatch_kernel_annotation(db, d->r[k].kernel_id, d->w, &a, &e))
        dt_backend_full_name(dt_backend_of_ann(d->w->dtype, &a), out, n);
}

/* The back-end of every dispatched box (issue 29: the tuner's choice of
 * back-end per shape), consecutive boxes of one back-end merged:
 * "  3 attn_out_proj: bf16/avx512_bf16 M=1..M=4, bf16/amx M=5..M=128".
 * With several variables the boxes of a run do not make one box: it is
 * printed as its first box's corners and the count of the others. */
static void print_backends(dt_db *db, const char *tkey, const dt_task *t, int n,
                           const dt_tune_result *r, int threads)
{
    printf("back-ends dispatched:\n");
    for (int i = 0; i < n; i++) {
        if (r->outcome[i] != DT_TUNE_SCHEDULED)
            continue;
        dt_dispatch *d = NULL;
        dt_err e;
        if (dt_dispatch_load(db, t[i].key, tkey, threads, &d, &e))
            continue;
        printf("%3d %s:", i + 1, dt_cli_safe(t[i].name));
        /* runs of ranges with one back-end, each range's kernel read once:
         * the run [k0, k) is printed when range k's back-end differs */
        char run[64] = "", be[64];
        for (int k0 = 0, k = 0; k <= d->n; k++) {
            if (k < d->n)
                backend_of_range(db, d, k, be, sizeof be);
            if (k > 0 && (k == d->n || strcmp(be, run))) {
                int one = d->w->nvars <= 1 || k - k0 == 1;
                const char *lo = d->r[k0].shape_lo, *hi = d->r[one ? k - 1 : k0].shape_hi;
                printf("%s %s %s%s%s", k0 ? "," : "", run, lo, strcmp(lo, hi) ? ".." : "",
                       strcmp(lo, hi) ? hi : "");
                if (!one)
                    printf(" and %d more box%s", k - k0 - 1, k - k0 - 1 == 1 ? "" : "es");
                k0 = k;
            }
            if (k < d->n)
                snprintf(run, sizeof run, "%s", be);
        }
        printf("\n");
        dt_dispatch_free(d);
    }
}

static void print_table(const char *db, const dt_task *t, int n, const dt_tune_result *r,
                        int threads, int max_kernels)
{
    size_t prefix = shared_prefix(t, n);
    char(*names)[4 * NAME_COL_MAX + 8] = calloc((size_t)(n ? n : 1), sizeof *names);
    int col = 8; /* "workload" */
    for (int i = 0; names && i < n; i++) {
        display_name(t[i].name, prefix, names[i], sizeof names[i]);
        if (utf8_width(names[i]) > col)
            col = utf8_width(names[i]);
    }
    if (prefix) {
        char pre[sizeof t[0].name];
        snprintf(pre, sizeof pre, "%.*s", (int)prefix, t[0].name);
        printf("workloads (# as in dtune workloads; names without their shared prefix %s):\n",
               dt_cli_safe(pre));
    }
    printf("%3s  %-*s %6s %7s %7s %7s %6s %8s %12s %8s %7s  %s\n", "#", col, "workload", "shapes",
           "kernels", "trials", "rounds", "ranges", "kernels*", "mean time", "GFLOP/s", "loss",
           "outcome");
    double lat = 0, ulat = 0, elat = 0;
    int64_t unmeasured = 0, shapes = 0;
    for (int i = 0; i < n; i++) {
        char obj[40], gf[32] = "-";
        int sched = r->outcome[i] == DT_TUNE_SCHEDULED;
        fmt_ns(sched ? r->sel[i].objective : NAN, obj, sizeof obj);
        if (sched && isnan(r->sel[i].objective) && isfinite(r->sel[i].estimate)) {
            char est[32];
            fmt_ns(r->sel[i].estimate, est, sizeof est);
            snprintf(obj, sizeof obj, "~%s", est); /* some shapes at their prediction */
        }
        if (isfinite(dt_tune_task_gflops(&t[i])))
            snprintf(gf, sizeof gf, "%.1f", dt_tune_task_gflops(&t[i]));
        char loss[16] = "-", ks[24];
        if (sched && isfinite(r->sel[i].loss))
            snprintf(loss, sizeof loss, "%.2f%%", 100 * r->sel[i].loss);
        snprintf(ks, sizeof ks, "%d/%d", r->sel[i].kernels, r->sel[i].best_kernels);
        const char *nm = names ? names[i] : dt_cli_safe(t[i].name);
        /* %-*s pads bytes: pad by characters (a name may hold UTF-8) */
        printf("%3d  %s%*s %6lld %7d %7lld %7d %6d %8s %12s %8s %7s  %s\n", i + 1, nm,
               col - utf8_width(nm), "", (long long)t[i].nshapes, t[i].nk, (long long)t[i].trials,
               t[i].rounds, r->sel[i].ranges, ks, obj, gf, loss, dt_tune_outcome_name(r->outcome[i]));
        if (sched) {
            lat += t[i].count * r->sel[i].objective;
            ulat += t[i].count * r->sel[i].best_objective;
            elat += t[i].count * r->sel[i].estimate;
            unmeasured += r->sel[i].unmeasured;
            shapes += t[i].nshapes;
        }
    }
    for (int i = 0; i < n; i++)
        if (r->outcome[i] == DT_TUNE_SKIPPED)
            printf("skipped %s (%s): %s\n", dt_cli_safe(t[i].name), t[i].key, r->reason[i]);
    char l[40], ul[32], kb[32];
    fmt_ns(r->nscheduled > 0 ? lat : NAN, l, sizeof l);
    if (r->nscheduled > 0 && isnan(lat) && isfinite(elat)) {
        char el[32];
        fmt_ns(elat, el, sizeof el);
        snprintf(l, sizeof l, "~%s", el);
    }
    fmt_ns(r->nscheduled > 0 ? ulat : NAN, ul, sizeof ul);
    if (max_kernels == DT_SELECT_AUTO)
        snprintf(kb, sizeof kb, "auto (loss <= %g %%)", 100 * DT_SELECT_LOSS_TOL);
    else if (max_kernels == DT_SELECT_ALL)
        snprintf(kb, sizeof kb, "all");
    else
        snprintf(kb, sizeof kb, "%d", max_kernels);
    printf("\n(kernels* = distinct kernels dispatched / of the unrestricted per-shape choice; "
           "mean time = weighted over the shape set, measured; ~ = some shapes at the cost "
           "model's prediction, not measured; loss = its excess over the unrestricted "
           "choice's)\n");
    printf("kernel budget %s; unrestricted model latency %s\n", kb, ul);
    printf("%d of %d workload%s scheduled, %d skipped\n", r->nscheduled, n, n == 1 ? "" : "s",
           r->nskipped);
    printf("model latency (sum of count x mean time%s): %s at %d thread%s\n",
           r->nskipped ? ", scheduled workloads only" : "", l, threads, threads == 1 ? "" : "s");
    if (unmeasured > 0) {
        /* say which shapes the number predicts, and why they were not measured */
        printf("  %lld of %lld shapes are the cost model's prediction, not measured: the "
               "budget ended before the selection measured the kernel dispatched on them (",
               (long long)unmeasured, (long long)shapes);
        const char *sep = "";
        for (int i = 0; i < n; i++)
            if (r->outcome[i] == DT_TUNE_SCHEDULED && r->sel[i].unmeasured > 0) {
                printf("%s#%d %s: %lld", sep, i + 1, names ? names[i] : dt_cli_safe(t[i].name),
                       (long long)r->sel[i].unmeasured);
                sep = ", ";
            }
        printf("); the same command again with a larger --trials or --time measures them\n");
    }
    printf("%lld trial%s measured in %.1f s (%lld recorded in total) into %s\n",
           (long long)r->trials_new, r->trials_new == 1 ? "" : "s", r->seconds,
           (long long)r->trials_total, db);
    for (int j = 0; j < r->ncms; j++) {
        char tw[16], ta[16], rc[16];
        fmt_metric(r->cm[j].tau_within_shape, 3, tw, sizeof tw);
        fmt_metric(r->cm[j].tau_all, 3, ta, sizeof ta);
        fmt_metric(r->cm[j].recall, 2, rc, sizeof rc);
        printf("cost model %s: %lld records, held-out Kendall tau %s within shapes, %s "
               "overall, top-10%% recall %s%s\n",
               r->cm[j].op, (long long)r->cm[j].records, tw, ta, rc,
               isfinite(r->cm[j].tau_all) ? "" : " (too few records to evaluate)");
    }
    if (r->stopped)
        printf("stopped by a signal: schedules hold what was measured\n");
    free(names);
}

/* ---- setup ----------------------------------------------------------------------------- */

int dt_cmd_tune(int argc, char **argv)
{
    tune_args a;
    const char *what = NULL;
    int rc = parse_args(argc, argv, &a, &what);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    dt_task *tasks = calloc(DT_TUNE_MAX_TASKS, sizeof *tasks);
    int n = 0;
    dt_db *db = NULL;
    dt_tune_result *res = calloc(1, sizeof *res);
    progress_state ps = {.tty = isatty(2), .quiet = dt_log_get_level() < DT_LOG_WARN};
    dt_tune_curve_init(&ps.curve);
    if (!tasks || !res) {
        rc = dt_errf(&e, DT_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = dt_target_detect_key(&tg, tkey, sizeof tkey, &e)))
        goto fail;
    int threads = a.threads > 0 ? a.threads : tg.cores;
    if (threads > tg.cores) {
        rc = dt_errf(&e, DT_EINVAL, "--threads %d: this machine has %d cores", threads, tg.cores);
        goto fail;
    }
    char mkey[DT_KEY_MAX];
    if (a.math && !dt_cli_is_onnx(what) && !a.vars.n && !a.vars.nbranches && access(what, F_OK) != 0 &&
        strchr(what, '(')) {
        /* --math on one workload key: the key with its arithmetic */
        if ((rc = dt_cli_key_math(what, a.math, mkey, sizeof mkey, &e)) ||
            (rc = dt_model_tasks_from_arg(mkey, threads, tasks, &n, &e)))
            goto fail;
    } else if (dt_cli_is_onnx(what) || a.vars.n || a.vars.nbranches || a.math) {
        /* a model file: ONNX imported here (tuner/ reads specs only); --math
         * marks its f32 GEMMs */
        char *text = NULL;
        size_t len = 0;
        dt_ox_import *imp = NULL;
        if ((rc = dt_cli_model_text(what, &a.vars, &text, &len, &imp, &e)))
            goto fail;
        if (a.math && (rc = dt_cli_spec_math(&text, &len, a.math, NULL, &e))) {
            free(text);
            if (imp)
                dt_ox_import_free(imp);
            goto fail;
        }
        if (imp && dt_log_get_level() >= DT_LOG_WARN)
            dt_cli_print_untuned(stderr, imp, what);
        if (imp)
            dt_ox_import_free(imp);
        rc = dt_model_tasks_from_text(text, len, what, threads, tasks, &n, &e);
        free(text);
        if (rc)
            goto fail;
    } else if ((rc = dt_model_tasks_from_arg(what, threads, tasks, &n, &e))) {
        goto fail;
    }
    for (int i = 0; i < n; i++) { /* one warning per dtype that is not native here */
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= tasks[j].w->dtype == tasks[i].w->dtype;
        if (!seen)
            (void)dt_cli_dtype_target(tasks[i].w, &tg);
    }
    const char *path = a.db ? a.db : dt_cli_default_db();
    if ((rc = dt_db_open(path, DT_DB_CREATE, &db, &e)))
        goto fail;

    dt_tune_opts o;
    dt_tune_opts_default(&o);
    o.trials = a.trials;
    if (!a.trials && !(a.time_s > 0))
        o.trials = 300 * (int64_t)n;
    o.time_s = a.time_s;
    o.strategy = a.strategy;
    o.seed = a.seed;
    o.topk = a.topk;
    o.max_kernels = a.max_kernels;
    o.meas.min_time_s = a.min_time_ms * 1e-3;
    o.meas.seed = a.seed;
    o.meas.workers = a.workers;
    o.meas.token_file = a.token_file;
    o.on_event = on_event;
    o.ud = &ps;
    o.stop = &stop_flag;
    /* SA_RESETHAND: a second signal ends the process at once */
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    if (!ps.quiet)
        fprintf(stderr, "tune: %d workload%s of %s, strategy %s, %d thread%s, target %s, db %s\n",
                n, n == 1 ? "" : "s", what, dt_strategy_name(a.strategy), threads,
                threads == 1 ? "" : "s", tkey, path);
    rc = dt_tune(db, &tg, tkey, tasks, n, &o, res, &e);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (ps.tty && ps.last_len)
        fprintf(stderr, "\n");
    if (rc)
        goto fail;
    if (a.json)
        rc = print_json(what, tkey, path, &a, threads, tasks, n, res, &ps.curve);
    else {
        print_table(path, tasks, n, res, threads, a.max_kernels);
        print_backends(db, tkey, tasks, n, res, threads);
        rc = DT_EXIT_OK;
    }
    if (stop_flag) {
        /* stopped: what was kept is printed above; 128 + the signal */
        if (!ps.quiet)
            fprintf(stderr, "tune: stopped by signal %d: %lld trial%s recorded, %d of %d "
                            "workload%s scheduled\n",
                    (int)stop_flag, (long long)res->trials_total,
                    res->trials_total == 1 ? "" : "s", res->nscheduled, n, n == 1 ? "" : "s");
        rc = 128 + (int)stop_flag;
    } else if (rc == DT_EXIT_OK && res->nscheduled == 0) {
        fprintf(stderr, "dtune: error: no workload got a schedule (every one was skipped: "
                        "see above)\n");
        rc = DT_EXIT_RUNTIME;
    }
    for (int i = 0; i < n; i++)
        dt_task_free(&tasks[i]);
    free(tasks);
    free(res);
    dt_tune_curve_free(&ps.curve);
    dt_db_close(db);
    return rc;
fail:
    for (int i = 0; tasks && i < n; i++)
        dt_task_free(&tasks[i]);
    free(tasks);
    free(res);
    dt_tune_curve_free(&ps.curve);
    dt_db_close(db);
    return dt_cli_fail(&e);
}
