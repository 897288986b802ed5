/* dtune model: trains the learned cost model f_MK (costmodel/xgb.h) on the
 * ok measurements of this machine's target, reports its quality on a
 * held-out part, and stores it in the database (table cost_models). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "cli/cli.h"
#include "common/json_util.h"
#include "common/target.h"
#include "costmodel/adapt.h"
#include "costmodel/features.h"
#include "costmodel/point.h"
#include "costmodel/xgb.h"
#include "db/db.h"
#include "space/annotation.h"
#include "ops/op.h"
#include "shape/workload.h"
#include "tuner/predictor.h"

/* Fewest ok records `model train` accepts. */
#define MIN_RECORDS 10

static void usage_top(FILE *out)
{
    fprintf(out,
            "Usage: dtune model COMMAND [OPTIONS]\n"
            "\n"
            "The learned cost model f_MK of this machine's target, trained on the ok\n"
            "measurements recorded by `dtune measure` (docs/cost-model.md).\n"
            "\n"
            "Commands:\n"
            "  train    train on the recorded measurements, evaluate on a held-out part,\n"
            "           store the model in the database\n"
            "  stats    show the latest stored model: records, quality, date, size\n"
            "\n"
            "Run 'dtune model COMMAND --help' for the options of a command.\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input, 3 runtime failure.\n");
}

/* The ops a cost model can be trained for (those with a one-hot feature
 * column: the first DT_CM_OPS of the registry), e.g. "dense|batch_matmul"
 * with sep = last = "|", or "dense or batch_matmul" with sep ", " and last
 * " or ". */
static const char *cm_ops(char *buf, size_t n, const char *sep, const char *last)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < DT_CM_OPS && dt_op_at(i) && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s",
                                i == 0 ? "" : i + 1 == DT_CM_OPS ? last : sep,
                                dt_op_at(i)->name);
    return buf;
}

/* Whether name is one of cm_ops. */
static int cm_op_ok(const char *name)
{
    const dt_op_desc *op = dt_op_find(name);
    int i = op ? dt_op_index(op) : -1;
    return i >= 0 && i < DT_CM_OPS;
}

static void usage_train(FILE *out)
{
    char bar[256], alts[256];
    cm_ops(bar, sizeof bar, "|", "|");
    cm_ops(alts, sizeof alts, ", ", " or ");
    fprintf(out,
            "Usage: dtune model train [--db PATH] [--op %s] [--holdout F]\n"
            "                         [--seed S] [--json]\n"
            "\n"
            "Trains f_MK on the ok measurements of this machine's target for one op. Each\n"
            "record (kernel, shape) is one row: the kernel's features, log2 of the shape's\n"
            "dims, and the label throughput / f_adapt (the rows the tuner trains on). A\n"
            "seeded shuffle holds out a fraction of\n"
            "the rows; the model trained on the rest predicts them, and the Kendall tau\n"
            "of predicted against measured throughput and the top-k recall (k = max(1,\n"
            "n/10)) are reported, as `dtune tune` reports them (n/a when the held-out rows\n"
            "make fewer than 10 pairs). The model is then retrained on every row and stored\n"
            "in the database with these metrics. At least %d ok records are needed.\n"
            "\n"
            "Options:\n"
            "  --db PATH      database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --op OP        %s (default %s)\n"
            "  --dtype D      the op's dtype: f32 (default), bf16, int8, w8a32 (one cost model\n"
            "                 per op and dtype, stored as OP or OP:D)\n"
            "  --holdout F    fraction held out for evaluation, 0..0.9 (default 0.2)\n"
            "  --seed S       seed of the shuffle and of training (default 1)\n"
            "  --json         print one JSON object instead of a summary\n"
            "  -h, --help     show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input (e.g. too few records),\n"
            "3 runtime failure.\n",
            bar, MIN_RECORDS, alts, dt_op_at(0)->name);
}

static void usage_stats(FILE *out)
{
    char bar[256], alts[256];
    cm_ops(bar, sizeof bar, "|", "|");
    cm_ops(alts, sizeof alts, ", ", " or ");
    fprintf(out,
            "Usage: dtune model stats [--db PATH] [--op %s] [--json]\n"
            "\n"
            "Shows the latest cost model stored for this machine's target and the op:\n"
            "the records it was trained on, its held-out quality, when it was trained\n"
            "and its size.\n"
            "\n"
            "Options:\n"
            "  --db PATH      database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --op OP        %s (default %s)\n"
            "  --dtype D      the op's dtype: f32 (default), bf16, int8, w8a32 (one cost model\n"
            "                 per op and dtype, stored as OP or OP:D)\n"
            "  --json         print one JSON object instead of text\n"
            "  -h, --help     show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input (e.g. no model), 3 runtime failure.\n",
            bar, alts, dt_op_at(0)->name);
}

typedef struct {
    const char *db, *op;
    dt_dtype dtype;
    char name[48]; /* the cost model's name: op, or op:dtype beyond f32 */
    double holdout;
    uint64_t seed;
    int json;
} cm_args;

/* Returns 0, -1 after --help, or an exit code. */
static int parse_args(const char *cmd, int argc, char **argv, int train, cm_args *a)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},      {"op", required_argument, NULL, 'o'},
        {"holdout", required_argument, NULL, 'H'}, {"seed", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {"dtype", required_argument, NULL, 'D'},   {NULL, 0, NULL, 0}};
    *a = (cm_args){.op = dt_op_at(0)->name, .holdout = 0.2, .seed = 1};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'd': a->db = optarg; break;
        case 'j': a->json = 1; break;
        case 'o':
            if (!cm_op_ok(optarg)) {
                char alts[256];
                return dt_cli_usage_error(cmd, "--op takes %s, not '%s'",
                                          cm_ops(alts, sizeof alts, ", ", " or "), optarg);
            }
            a->op = optarg;
            break;
        case 'D':
            if (dt_dtype_from_name(optarg, &a->dtype))
                return dt_cli_usage_error(cmd, "--dtype takes %s, not '%s'", dt_dtype_names(),
                                          optarg);
            break;
        case 'H':
            if (!train)
                goto unknown;
            a->holdout = strtod(optarg, &end);
            if (*end || !*optarg || !(a->holdout >= 0) || a->holdout > 0.9)
                return dt_cli_usage_error(cmd, "--holdout takes 0..0.9, not '%s'", optarg);
            break;
        case 's':
            if (!train)
                goto unknown;
            a->seed = strtoull(optarg, &end, 10);
            if (*end || !*optarg)
                return dt_cli_usage_error(cmd, "--seed takes an integer, not '%s'", optarg);
            break;
        case 'h':
            if (train)
                usage_train(stdout);
            else
                usage_stats(stdout);
            return -1;
        default:
        unknown:
            return dt_cli_usage_error(cmd, "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind != argc)
        return dt_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (dt_op_check_dtype(dt_op_find(a->op), a->dtype, NULL))
        return dt_cli_usage_error(cmd, "--op %s has no dtype %s", a->op, dt_dtype_name(a->dtype));
    dt_costmodel_name(a->op, a->dtype, a->name, sizeof a->name);
    return 0;
}

/* Opens an existing database; DT_ENOTFOUND when the file is missing. */
static int open_db(const cm_args *a, unsigned flags, dt_db **db, dt_err *e)
{
    return dt_cli_open_existing_db(a->db, flags, "measure", db, e);
}

/* This machine's target and its row in the database. */
static int find_target(dt_db *db, dt_target *t, char *key, size_t keylen, int64_t *id,
                       dt_err *e)
{
    int rc = dt_target_detect_key(t, key, keylen, e);
    if (rc)
        return rc;
    dt_db_target trow;
    rc = dt_db_target_get(db, key, &trow, e);
    if (rc == DT_ENOTFOUND)
        return dt_errf(e, DT_ENOTFOUND,
                       "no measurements for target %s in %s; run dtune measure first", key,
                       dt_db_path(db));
    if (rc)
        return rc;
    *id = trow.id;
    dt_db_target_free(&trow);
    return 0;
}

/* ---- train ------------------------------------------------------------------ */

/* v with 3 decimals, or "n/a" when it could not be computed */
static const char *fmt_metric(double v, char *buf, size_t n)
{
    if (isfinite(v))
        snprintf(buf, n, "%.3f", v);
    else
        snprintf(buf, n, "n/a");
    return buf;
}

static int cmd_train(int argc, char **argv)
{
    cm_args a;
    int rc = parse_args("model train", argc, argv, 1, &a);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    dt_db *db = NULL;
    dt_target t;
    char tkey[DT_TARGET_KEY_MAX];
    int64_t tid = 0;
    dt_predictor pr;
    int have_pr = 0;
    void *blob = NULL;
    size_t blen = 0;
    char *mtext = NULL;
    int n = 0, skipped = 0;
    if ((rc = open_db(&a, 0, &db, &e)) || (rc = find_target(db, &t, tkey, sizeof tkey, &tid, &e)))
        goto fail;
    /* every ok record of the op on this target, as the tuner's cost model sees it */
    dt_target dtg = dt_dtype_target(a.dtype, &t);
    dt_predictor_init(&pr, a.op, a.dtype, &dtg, tid);
    have_pr = 1;
    if ((rc = dt_predictor_load(&pr, db, &e)))
        goto fail;
    n = pr.n;
    skipped = pr.skipped;
    if (n < MIN_RECORDS) {
        rc = dt_errf(&e, DT_EINVAL,
                     "%d ok %s record%s for target %s in %s; at least %d are needed to train "
                     "(run dtune measure on more kernels or shapes)",
                     n, a.name, n == 1 ? "" : "s", tkey, dt_db_path(db), MIN_RECORDS);
        goto fail;
    }

    /* the held-out quality, as `dtune tune` reports it, then the model on every row */
    pr.params.seed = (int)(a.seed & 0x7fffffff);
    dt_quality q;
    if ((rc = dt_predictor_evaluate(&pr, a.holdout, a.seed, &q, &e)) ||
        (rc = dt_predictor_train(&pr, NULL, &e)) ||
        (rc = dt_xgb_save(pr.costmodel, &blob, &blen, &e)))
        goto fail;
    json_t *mj = dt_quality_json(&q);
    mtext = mj ? json_dumps(mj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(mj);
    if (!mtext) {
        rc = dt_errf(&e, DT_ENOMEM, "out of memory");
        goto fail;
    }
    int64_t mid = 0;
    if ((rc = dt_db_cost_model_save(db, tid, a.name, blob, blen, n, mtext, &mid, &e)))
        goto fail;

    if (a.json) {
        json_t *root = json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:o, s:o, s:i, s:I}",
                                 "target", tkey, "op", a.name, "db", dt_db_path(db), "model_id",
                                 (json_int_t)mid, "records", n, "skipped", skipped, "holdout",
                                 q.holdout, "kendall_tau", dt_json_num_or_null(q.tau), "topk_recall",
                                 dt_json_num_or_null(q.recall), "k", q.k, "model_bytes",
                                 (json_int_t)blen);
        if (dt_cli_print_json(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) {
            rc = dt_errf(&e, DT_ENOMEM, "out of memory");
            goto fail;
        }
    } else {
        printf("cost model for %s on %s\n", a.name, tkey);
        printf("records:      %d (%d skipped)\n", n, skipped);
        char tb[16], rb[16];
        if (q.holdout > 0)
            printf("holdout:      %d rows: Kendall tau %s, top-%d recall %s%s\n", q.holdout,
                   fmt_metric(q.tau, tb, sizeof tb), q.k, fmt_metric(q.recall, rb, sizeof rb),
                   isfinite(q.tau) ? "" : " (too few records to evaluate)");
        else
            printf("holdout:      none\n");
        printf("model:        %zu bytes, id %lld, trained on all %d records, in %s\n", blen,
               (long long)mid, n, dt_db_path(db));
    }
    rc = DT_EXIT_OK;
    goto done;
fail:
    rc = dt_cli_fail(&e);
done:
    if (have_pr)
        dt_predictor_free(&pr);
    free(blob);
    free(mtext);
    dt_db_close(db);
    return rc;
}

/* ---- stats ------------------------------------------------------------------ */

static int cmd_stats(int argc, char **argv)
{
    cm_args a;
    int rc = parse_args("model stats", argc, argv, 0, &a);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    dt_db *db = NULL;
    dt_target t;
    char tkey[DT_TARGET_KEY_MAX];
    int64_t tid = 0;
    dt_db_cost_model m;
    int have = 0;
    if ((rc = open_db(&a, DT_DB_READONLY, &db, &e)))
        goto fail;
    rc = find_target(db, &t, tkey, sizeof tkey, &tid, &e);
    if (!rc) {
        rc = dt_db_cost_model_load_latest(db, tid, a.name, &m, &e);
        have = rc == 0;
    }
    if (rc == DT_ENOTFOUND) {
        rc = dt_errf(&e, DT_ENOTFOUND, "no cost model for %s on target %s in %s; run dtune model "
                                       "train",
                     a.name, tkey, dt_db_path(db));
        goto fail;
    }
    if (rc)
        goto fail;
    json_error_t jerr;
    json_t *metrics = m.metrics ? json_loads(m.metrics, 0, &jerr) : NULL;
    if (a.json) {
        json_t *root = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:I, s:I}", "target", tkey, "op",
                                 a.name, "db", dt_db_path(db), "model_id", (json_int_t)m.id,
                                 "records", (json_int_t)m.n_records, "metrics",
                                 metrics ? metrics : json_null(), "created_at",
                                 (json_int_t)m.created_at, "model_bytes",
                                 (json_int_t)m.model_size);
        if (dt_cli_print_json(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) {
            rc = dt_errf(&e, DT_ENOMEM, "out of memory");
            goto fail;
        }
    } else {
        char when[64] = "?";
        time_t ts = (time_t)m.created_at;
        struct tm tmv;
        if (gmtime_r(&ts, &tmv))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tmv);
        printf("cost model for %s on %s\n", a.name, tkey);
        printf("model id:     %lld\n", (long long)m.id);
        printf("records:      %lld\n", (long long)m.n_records);
        printf("trained at:   %s\n", when);
        printf("size:         %zu bytes\n", m.model_size);
        json_t *tau = json_object_get(metrics, "kendall_tau");
        json_t *rec_ = json_object_get(metrics, "topk_recall");
        json_int_t hold = json_integer_value(json_object_get(metrics, "holdout"));
        char tb[16], rb[16];
        if (json_is_number(tau) || hold > 0)
            printf("holdout:      %lld rows: Kendall tau %s, top-%lld recall %s\n",
                   (long long)hold,
                   fmt_metric(json_is_number(tau) ? json_number_value(tau) : NAN, tb, sizeof tb),
                   (long long)json_integer_value(json_object_get(metrics, "k")),
                   fmt_metric(json_is_number(rec_) ? json_number_value(rec_) : NAN, rb,
                              sizeof rb));
        else
            printf("holdout:      none\n");
        json_decref(metrics);
    }
    rc = DT_EXIT_OK;
    goto done;
fail:
    rc = dt_cli_fail(&e);
done:
    if (have)
        dt_db_cost_model_free(&m);
    dt_db_close(db);
    return rc;
}

int dt_cmd_model(int argc, char **argv)
{
    if (argc < 2) {
        usage_top(stderr);
        return DT_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage_top(stdout);
        return DT_EXIT_OK;
    }
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "stats"))
        return cmd_stats(argc - 1, argv + 1);
    return dt_cli_usage_error("model", "unknown command '%s' (train or stats)", argv[1]);
}
