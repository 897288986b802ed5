/* dtune workloads MODEL.json|MODEL.onnx: the distinct workloads of a model. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_model.h"
#include "common/file.h"
#include "shape/model.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune workloads MODEL.json [--json] [--shapes]\n"
            "       dtune workloads MODEL.onnx --var NAME=DOMAIN... [--branch IF=then|else]...\n"
            "                       [--json] [--shapes]\n"
            "\n"
            "Loads a model spec (docs/model-spec.md), or imports an ONNX model\n"
            "(docs/onnx-import.md), and lists its distinct workloads: identical ops\n"
            "merged with their counts summed, each with its canonical key\n"
            "(docs/workload-keys.md), its shape set and the work it does per model run.\n"
            "For an ONNX model it also lists the nodes that are not tuned.\n"
            "\n"
            "Options:\n"
            "  --var NAME=DOMAIN  (.onnx) the values of a dynamic dim: seq=1..128,\n"
            "                     batch=1, s={1,8,64}; one per dim_param the model has\n"
            DT_CLI_BRANCH_HELP
            "  --json             print one JSON object instead of a table\n"
            "  --shapes           also list every shape with its dims and weight\n"
            "  -h, --help         show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad model spec or ONNX file, 3 runtime\n"
            "failure.\n");
}

typedef struct {
    double min_gflop, max_gflop, expected_gflop; /* per op call; expected = weighted mean */
} flop_stats;

static int workload_flops(const dt_workload *w, flop_stats *fs, dt_err *e)
{
    int64_t n = dt_workload_nshapes(w), vals[DT_MAX_VARS], dims[DT_MAX_DIMS];
    fs->min_gflop = 1e300;
    fs->max_gflop = fs->expected_gflop = 0;
    for (int64_t i = 0; i < n; i++) {
        double weight;
        dt_workload_shape_at(w, i, vals, &weight);
        int rc = dt_workload_dims(w, vals, dims, e);
        if (rc)
            return rc;
        double g = w->op->flops(dims, w->attrs) * 1e-9;
        fs->min_gflop = g < fs->min_gflop ? g : fs->min_gflop;
        fs->max_gflop = g > fs->max_gflop ? g : fs->max_gflop;
        fs->expected_gflop += weight * g;
    }
    return 0;
}

static json_t *shapes_json(const dt_workload *w)
{
    json_t *arr = json_array();
    int64_t n = dt_workload_nshapes(w), vals[DT_MAX_VARS], dims[DT_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        double weight;
        dt_workload_shape_at(w, i, vals, &weight);
        if (dt_workload_dims(w, vals, dims, NULL))
            continue; /* validated at load: cannot fail */
        json_t *s = json_object(), *jv = json_object(), *jd = json_object();
        for (int v = 0; v < w->nvars; v++)
            json_object_set_new(jv, w->vars[v].name, json_integer(vals[v]));
        for (int d = 0; d < w->op->ndims; d++)
            json_object_set_new(jd, w->op->dims[d], json_integer(dims[d]));
        json_object_set_new(s, "vars", jv);
        json_object_set_new(s, "dims", jd);
        json_object_set_new(s, "weight", json_real(weight));
        json_array_append_new(arr, s);
    }
    return arr;
}

static json_t *domain_json(const dt_domain *d)
{
    char text[256];
    dt_domain_print(d, text, sizeof text);
    return json_pack("{s:s, s:I, s:I, s:i}", "domain", text, "min", (json_int_t)d->values[0],
                     "max", (json_int_t)d->values[d->n - 1], "count", d->n);
}

static int print_json(const dt_model *m, int with_shapes, const dt_ox_import *imp)
{
    json_t *root = json_object(), *vars = json_object(), *wls = json_array();
    json_object_set_new(root, "model", json_string(m->name));
    if (m->description)
        json_object_set_new(root, "description", json_string(m->description));
    for (int i = 0; i < m->nvars; i++)
        json_object_set_new(vars, m->vars[i].name, domain_json(&m->vars[i].dom));
    json_object_set_new(root, "variables", vars);
    json_object_set_new(root, "shapes", json_integer(dt_model_nshapes(m)));
    for (int i = 0; i < m->nworkloads; i++) {
        const dt_model_workload *mw = &m->workloads[i];
        flop_stats fs;
        dt_err e;
        if (workload_flops(mw->w, &fs, &e)) {
            json_decref(root);
            return dt_cli_fail(&e);
        }
        json_t *jw = json_object(), *ops = json_array(), *wv = json_object();
        for (int k = 0; k < mw->nops; k++)
            json_array_append_new(ops, json_string(mw->ops[k]));
        for (int v = 0; v < mw->w->nvars; v++)
            json_object_set_new(wv, mw->w->vars[v].name, domain_json(&mw->w->vars[v].dom));
        json_object_set_new(jw, "key", json_string(mw->key));
        json_object_set_new(jw, "op", json_string(mw->w->op->name));
        json_object_set_new(jw, "count", dt_cli_count_json(mw->count));
        json_object_set_new(jw, "ops", ops);
        json_object_set_new(jw, "variables", wv);
        json_object_set_new(jw, "shapes", json_integer(dt_workload_nshapes(mw->w)));
        json_object_set_new(jw, "gflop", json_pack("{s:f, s:f, s:f, s:f}", "min", fs.min_gflop,
                                                   "max", fs.max_gflop, "expected",
                                                   fs.expected_gflop, "expected_per_run",
                                                   fs.expected_gflop * (double)mw->count));
        if (with_shapes)
            json_object_set_new(jw, "shape_set", shapes_json(mw->w));
        json_array_append_new(wls, jw);
    }
    json_object_set_new(root, "workloads", wls);
    if (imp)
        json_object_set_new(root, "onnx", dt_cli_untuned_json(imp));
    return dt_cli_print_json(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME
                                                                          : DT_EXIT_OK;
}

static void print_shapes_text(const dt_workload *w)
{
    int64_t n = dt_workload_nshapes(w), vals[DT_MAX_VARS], dims[DT_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        double weight;
        char shape[256];
        dt_workload_shape_at(w, i, vals, &weight);
        if (dt_workload_dims(w, vals, dims, NULL))
            continue;
        dt_shape_format(w, vals, shape, sizeof shape);
        printf("      %-20s", shape[0] ? shape : "(static)");
        for (int d = 0; d < w->op->ndims; d++)
            printf(" %s=%lld", w->op->dims[d], (long long)dims[d]);
        printf("  weight %.6g\n", weight);
    }
}

static int print_text(const dt_model *m, int with_shapes, const dt_ox_import *imp, const char *path)
{
    printf("model %s: %d distinct workload%s, %lld shape%s of", dt_cli_safe(m->name), m->nworkloads,
           m->nworkloads == 1 ? "" : "s", (long long)dt_model_nshapes(m),
           dt_model_nshapes(m) == 1 ? "" : "s");
    for (int i = 0; i < m->nvars; i++) {
        char d[256];
        if (m->vars[i].dom.n == 1)
            snprintf(d, sizeof d, "%lld", (long long)m->vars[i].dom.values[0]);
        else
            dt_domain_print(&m->vars[i].dom, d, sizeof d);
        printf(" %s=%s", dt_cli_safe(m->vars[i].name), d);
    }
    printf("\n\n %3s  %-64s %5s %7s  %-21s %s\n", "#", "workload", "count", "shapes",
           "GFLOP/call min..max", "ops");
    double total = 0;
    for (int i = 0; i < m->nworkloads; i++) {
        const dt_model_workload *mw = &m->workloads[i];
        flop_stats fs;
        dt_err e;
        if (workload_flops(mw->w, &fs, &e))
            return dt_cli_fail(&e);
        total += fs.expected_gflop * (double)mw->count;
        char range[64];
        snprintf(range, sizeof range, "%.4g..%.4g", fs.min_gflop, fs.max_gflop);
        char cnt[32];
        printf(" %3d  %-64s %5s %7lld  %-21s", i + 1, dt_cli_safe(mw->key),
               dt_cli_count_text(mw->count, cnt),
               (long long)dt_workload_nshapes(mw->w), range);
        for (int k = 0; k < mw->nops; k++)
            printf("%s%s", k ? "," : "", dt_cli_safe(mw->ops[k]));
        printf("\n");
        if (with_shapes)
            print_shapes_text(mw->w);
    }
    printf("\nexpected work per model run (weighted over the shape set): %.4g GFLOP\n", total);
    if (imp) {
        printf("\n");
        dt_cli_print_untuned(stdout, imp, path);
    }
    return DT_EXIT_OK;
}

int dt_cmd_workloads(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"shapes", no_argument, NULL, 's'},
                                         {"var", required_argument, NULL, 'v'},
                                         {"branch", required_argument, NULL, 'B'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int json = 0, shapes = 0, c;
    dt_cli_vars vars = {0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 's': shapes = 1; break;
        case 'v':
            if (dt_cli_vars_add(&vars, "workloads", optarg))
                return DT_EXIT_USAGE;
            break;
        case 'B':
            if (dt_cli_branch_add(&vars, "workloads", optarg))
                return DT_EXIT_USAGE;
            break;
        case 'h': usage(stdout); return DT_EXIT_OK;
        default:
            return dt_cli_usage_error("workloads", "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return dt_cli_usage_error("workloads", "expected one MODEL.json or MODEL.onnx argument");
    const char *path = argv[optind];
    char *text;
    size_t len;
    dt_err e;
    dt_ox_import *imp = NULL;
    if (dt_cli_model_text(path, &vars, &text, &len, &imp, &e))
        return dt_cli_fail(&e);
    dt_model *m = NULL;
    int rc = dt_model_parse(text, len, path, &m, &e);
    free(text);
    if (!rc) {
        rc = json ? print_json(m, shapes, imp) : print_text(m, shapes, imp, path);
        dt_model_free(m);
    } else {
        rc = dt_cli_fail(&e);
    }
    if (imp)
        dt_ox_import_free(imp);
    return rc;
}
