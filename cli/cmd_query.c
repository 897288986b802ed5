/* dtune query: which micro-kernel a tuned schedule dispatches for a shape. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json_util.h"
#include "common/target.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "dispatch/dispatch_stats.h"
#include "backends/backend.h"

#define MAX_SHAPES 256

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune query WORKLOAD --shape SHAPE [--shape SHAPE ...] [--db PATH]\n"
            "                   [--threads T] [--target KEY] [--json]\n"
            "\n"
            "Looks up the tuned schedule of a workload: for each shape, the micro-kernel\n"
            "dispatched, its annotation and back-end (e.g. bf16/amx), the range it was\n"
            "chosen for (a box: one interval per variable, given by its two corners;\n"
            "--json: \"range\" as the corners, \"box\" as {variable: [first, last]}),\n"
            "the predicted and measured time (mean over the range, and the measurement\n"
            "on this very shape when there is one), and whether the shape is\n"
            "extrapolated (not in the tuned shape set: it runs the kernel of the range\n"
            "of the nearest shape of the set). Every shape gets a kernel.  Then the\n"
            "schedule as a whole: its ranges, its distinct kernels, its objective (sum\n"
            "over the shape set of weight x measured time of the dispatched kernel) and\n"
            "its loss against the unrestricted choice (each shape's fastest measured\n"
            "kernel), as the tune summary reports them.\n"
            "\n"
            "WORKLOAD is a workload key, e.g. 'dense(M=1..128,N=768,K=768)'; SHAPE names\n"
            "every variable: M=37, or batch=2,seq=37.\n"
            "\n"
            "Options:\n"
            "  --shape SHAPE    a shape to look up (repeatable, at most %d)\n"
            "  --db PATH        database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --threads T      the schedule tuned for T threads (default: the highest)\n"
            "  --target KEY     another target's schedule (default: this machine's)\n"
            "  --json           print JSON\n"
            "  -h, --help       show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input (e.g. no schedule), 3 runtime\n"
            "failure.\n",
            MAX_SHAPES);
}

typedef struct {
    const char *db, *target;
    const char *shapes[MAX_SHAPES];
    int nshapes, threads, json;
} query_args;

static int parse_args(int argc, char **argv, query_args *a, const char **key)
{
    static const struct option opts[] = {
        {"shape", required_argument, NULL, 'S'},   {"db", required_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 't'}, {"target", required_argument, NULL, 'T'},
        {"json", no_argument, NULL, 'j'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'S':
            if (a->nshapes == MAX_SHAPES)
                return dt_cli_usage_error("query", "at most %d --shape", MAX_SHAPES);
            a->shapes[a->nshapes++] = optarg;
            break;
        case 'd': a->db = optarg; break;
        case 'T': a->target = optarg; break;
        case 'j': a->json = 1; break;
        case 't': rc = dt_cli_int_opt("query", "--threads", optarg, 1, 1024, &a->threads); break;
        case 'h': usage(stdout); return -1;
        default:
            return dt_cli_usage_error("query", "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (argc - optind != 1)
        return dt_cli_usage_error("query", "expected one WORKLOAD argument");
    if (a->nshapes == 0)
        return dt_cli_usage_error("query", "give at least one --shape");
    *key = argv[optind];
    return 0;
}

typedef struct {
    const char *shape;
    int threads;
    double ns;
} exact_ctx;

static int find_exact(const dt_db_measurement *m, void *ud)
{
    exact_ctx *x = ud;
    if (m->shape && strcmp(m->shape, x->shape) == 0 && m->threads == x->threads &&
        (isnan(x->ns) || m->min_ns < x->ns))
        x->ns = m->min_ns;
    return 0;
}

/* The box as {variable: [first value, last value]}: what "range" gives as
 * two corner texts, one interval per variable for a script. */
static json_t *box_json(const dt_workload *w, const dt_box *b)
{
    json_t *o = json_object();
    for (int v = 0; o && v < w->nvars; v++)
        json_object_set_new(o, w->vars[v].name,
                            json_pack("[I,I]", (json_int_t)w->vars[v].dom.values[b->lo[v]],
                                      (json_int_t)w->vars[v].dom.values[b->hi[v]]));
    return o;
}

/* The kernel a range of the schedule names, checked, and its annotation
 * (*a): a kernel row that is missing, of another op, or whose annotation
 * is not a valid annotation means the database is damaged (DT_EDB, exit 3,
 * as every damaged stored row: not the caller's bad input). */
static int schedule_kernel(dt_db *db, const dt_dispatch *d, const dt_dispatch_range *r,
                           dt_db_kernel *k, dt_annotation *a, dt_err *e)
{
    int rc = dt_db_kernel_get(db, r->kernel_id, k, e);
    if (rc == DT_ENOTFOUND)
        return dt_errf(e, DT_EDB,
                       "database %s is damaged: the schedule of %s (range %s .. %s) names "
                       "kernel %lld, which is not in its kernels table; run 'dtune db check "
                       "--db %s'",
                       dt_db_path(db), d->key, r->shape_lo, r->shape_hi,
                       (long long)r->kernel_id, dt_db_path(db));
    if (rc)
        return rc;
    if ((rc = dt_dispatch_kernel_annotation(db, r->kernel_id, d->w, a, e))) {
        dt_db_kernel_free(k);
        if (rc == DT_EINVAL || rc == DT_ENOTFOUND) {
            dt_err_prefix(e, "database %s is damaged (run 'dtune db check --db %s'): in the "
                          "schedule of %s", dt_db_path(db), dt_db_path(db), d->key);
            e->code = rc = DT_EDB;
        }
        return rc;
    }
    return DT_OK;
}

/* The schedule as a whole (dispatch/dispatch_stats.h); new reference. */
static json_t *stats_json(const dt_dispatch_stats *st)
{
    json_t *ids = json_array();
    for (int i = 0; i < st->nids; i++)
        json_array_append_new(ids, json_integer(st->kernel_ids[i]));
    json_t *o = json_object();
    json_object_set_new(o, "ranges", json_integer(st->ranges));
    json_object_set_new(o, "kernels", json_integer(st->kernels));
    json_object_set_new(o, "kernel_ids", ids);
    json_object_set_new(o, "shapes", json_integer(st->shapes));
    json_object_set_new(o, "unmeasured_shapes", json_integer(st->unmeasured));
    json_object_set_new(o, "objective_ns", dt_json_num_or_null(st->objective_ns));
    json_object_set_new(o, "unrestricted_kernels", json_integer(st->best_kernels));
    json_object_set_new(o, "unrestricted_objective_ns",
                        dt_json_num_or_null(st->best_objective_ns));
    json_object_set_new(o, "loss", dt_json_num_or_null(st->loss));
    return o;
}

static void print_stats(const dt_dispatch *d, const dt_dispatch_stats *st)
{
    printf("schedule of %s at %d thread%s: %d range%s, %d kernel%s (", dt_cli_safe(d->key), d->threads,
           d->threads == 1 ? "" : "s", st->ranges, st->ranges == 1 ? "" : "s", st->kernels,
           st->kernels == 1 ? "" : "s");
    for (int i = 0; i < st->nids; i++)
        printf("%s%lld", i ? ", " : "", (long long)st->kernel_ids[i]);
    printf("%s)\n", st->nids < st->kernels ? ", ..." : "");
    printf("  objective  ");
    if (isfinite(st->objective_ns))
        printf("%.2f us", st->objective_ns * 1e-3);
    else
        printf("n/a (%lld of %lld shapes not measured)", (long long)st->unmeasured,
               (long long)st->shapes);
    printf("; unrestricted ");
    if (isfinite(st->best_objective_ns))
        printf("%.2f us", st->best_objective_ns * 1e-3);
    else
        printf("n/a");
    printf(" with %d kernel%s; loss ", st->best_kernels, st->best_kernels == 1 ? "" : "s");
    if (isfinite(st->loss))
        printf("%.2f %%\n", 100 * st->loss);
    else
        printf("n/a\n");
}

/* " predicted 1.23 us" or " not predicted" ("measured" likewise). */
static void print_time(const char *what, json_t *ns)
{
    if (json_is_number(ns))
        printf("%s %.2f us", what, json_number_value(ns) * 1e-3);
    else
        printf("not %s", what);
}

int dt_cmd_query(int argc, char **argv)
{
    query_args a;
    const char *key = NULL;
    int rc = parse_args(argc, argv, &a, &key);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    char tkey[DT_TARGET_KEY_MAX];
    dt_db *db = NULL;
    dt_dispatch *d = NULL;
    json_t *out = json_array();
    if (a.target) {
        snprintf(tkey, sizeof tkey, "%s", a.target);
    } else {
        dt_target tg;
        if ((rc = dt_target_detect_key(&tg, tkey, sizeof tkey, &e)))
            goto fail;
    }
    if ((rc = dt_cli_open_existing_db(a.db, DT_DB_READONLY, "tune", &db, &e)) ||
        (rc = dt_dispatch_load(db, key, tkey, a.threads, &d, &e)))
        goto fail;
    dt_db_workload wrow;
    dt_db_target trow;
    int64_t wid = 0, tid = 0;
    if (dt_db_workload_get(db, d->key, &wrow, &e) == 0) {
        wid = wrow.id;
        dt_db_workload_free(&wrow);
    }
    if (dt_db_target_get(db, tkey, &trow, &e) == 0) {
        tid = trow.id;
        dt_db_target_free(&trow);
    }
    dt_dispatch_stats st;
    if ((rc = dt_dispatch_stats_load(db, d, tkey, &st, &e)))
        goto fail;
    for (int i = 0; i < a.nshapes; i++) {
        int64_t vals[DT_MAX_VARS];
        int in_domain;
        if ((rc = dt_shape_parse(d->w, a.shapes[i], vals, &in_domain, &e))) {
            dt_err_prefix(&e, "--shape %s", a.shapes[i]);
            goto fail;
        }
        char shape[128];
        dt_shape_format(d->w, vals, shape, sizeof shape);
        dt_dispatch_hit hit;
        if ((rc = dt_dispatch_find(d, vals, &hit))) {
            rc = dt_errf(&e, DT_ENOTFOUND, "the schedule of %s is empty", d->key);
            goto fail;
        }
        dt_db_kernel k;
        dt_annotation ka;
        if ((rc = schedule_kernel(db, d, hit.range, &k, &ka, &e)))
            goto fail;
        /* the back-end its annotation names for the workload's dtype */
        char backend[48];
        const dt_backend *row = dt_backend_of_ann(d->w->dtype, &ka);
        if (row)
            dt_backend_full_name(row, backend, sizeof backend);
        else
            snprintf(backend, sizeof backend, "?");
        exact_ctx x = {shape, d->threads, NAN};
        dt_db_measurement_filter f = {.workload_id = wid, .target_id = tid,
                                      .kernel_id = hit.range->kernel_id, .ok_only = true};
        if (!hit.extrapolated && (rc = dt_db_measurement_list(db, &f, find_exact, &x, &e))) {
            dt_db_kernel_free(&k);
            goto fail;
        }
        json_error_t jerr;
        json_t *ann = json_loads(k.annotation, 0, &jerr);
        json_t *o = json_object();
        json_object_set_new(o, "workload", json_string(d->key));
        json_object_set_new(o, "shape", json_string(shape));
        json_object_set_new(o, "target", json_string(tkey));
        json_object_set_new(o, "threads", json_integer(d->threads));
        json_object_set_new(o, "kernel_id", json_integer(k.id));
        json_object_set_new(o, "sketch", json_string(k.sketch));
        json_object_set_new(o, "annotation", ann ? ann : json_null());
        json_object_set_new(o, "backend", json_string(backend));
        json_object_set_new(o, "range", json_pack("[s,s]", hit.range->shape_lo,
                                                  hit.range->shape_hi));
        json_object_set_new(o, "box", box_json(d->w, &hit.range->box));
        json_object_set_new(o, "extrapolated", json_boolean(hit.extrapolated));
        json_object_set_new(o, "predicted_ns", dt_json_num_or_null(hit.range->predicted_ns));
        json_object_set_new(o, "measured_ns", dt_json_num_or_null(hit.range->measured_ns));
        json_object_set_new(o, "measured_ns_this_shape", dt_json_num_or_null(x.ns));
        json_object_set_new(o, "schedule", stats_json(&st));
        dt_db_kernel_free(&k);
        json_array_append_new(out, o);
    }
    if (a.json) {
        rc = dt_cli_print_json(out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME : 0;
        out = NULL;
    } else {
        size_t i;
        json_t *o;
        json_array_foreach(out, i, o)
        {
            char *ann = json_dumps(json_object_get(o, "annotation"), JSON_COMPACT);
            json_t *pr = json_object_get(o, "predicted_ns"), *me = json_object_get(o, "measured_ns"),
                   *ex = json_object_get(o, "measured_ns_this_shape");
            printf("%s %s -> kernel %lld (%s%s)\n",
                   dt_cli_safe(json_string_value(json_object_get(o, "workload"))),
                   dt_cli_safe(json_string_value(json_object_get(o, "shape"))),
                   (long long)json_integer_value(json_object_get(o, "kernel_id")),
                   dt_cli_safe(json_string_value(json_object_get(o, "sketch"))),
                   json_is_true(json_object_get(o, "extrapolated")) ? ", extrapolated" : "");
            const char *lo = json_string_value(json_array_get(json_object_get(o, "range"), 0));
            const char *hi = json_string_value(json_array_get(json_object_get(o, "range"), 1));
            if (lo && *lo) /* "": the one shape of a workload without variables */
                printf("  range      %s .. %s, %d thread%s\n", dt_cli_safe(lo), dt_cli_safe(hi),
                       d->threads, d->threads == 1 ? "" : "s");
            else
                printf("  range      the one shape (no variables), %d thread%s\n", d->threads,
                       d->threads == 1 ? "" : "s");
            printf("  annotation %s\n", ann ? dt_cli_safe(ann) : "?");
            printf("  backend    %s\n",
                   dt_cli_safe(json_string_value(json_object_get(o, "backend"))));
            printf("  time       ");
            print_time("predicted", pr);
            printf(", ");
            print_time("measured", me);
            printf(" (range means)");
            if (json_is_real(ex))
                printf("; measured on this shape %.2f us", json_real_value(ex) * 1e-3);
            printf("\n");
            free(ann);
        }
        print_stats(d, &st);
        rc = 0;
    }
    json_decref(out);
    dt_dispatch_free(d);
    dt_db_close(db);
    return rc;
fail:
    json_decref(out);
    dt_dispatch_free(d);
    dt_db_close(db);
    return dt_cli_fail(&e);
}
