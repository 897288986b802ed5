/* dt_ox_import_file: the --var flags, reading, shape propagation, workload
 * extraction and the spec, checked by loading it (onnx/import.h). */
#include "onnx/import.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "onnx/coverage.h"
#include "onnx/graph.h"
#include "onnx/import_graph.h"
#include "onnx/import_spec.h"
#include "onnx/shape.h"
#include "onnx/workloads.h"
#include "shape/model.h"

void dt_ox_import_free(dt_ox_import *r)
{
    if (!r)
        return;
    free(r->spec_json);
    for (int i = 0; i < r->nvars; i++)
        free(r->var_names[i]);
    free(r->var_names);
    for (int i = 0; i < r->nuntuned; i++) {
        free(r->untuned[i].what);
        free(r->untuned[i].why);
    }
    free(r->untuned);
    dt_ox_coverage_free(&r->coverage);
    for (int i = 0; i < r->nwarnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    free(r);
}

/* ---- --var NAME=DOMAIN ---- */

typedef struct {
    dt_var var;
    const char *arg;
} var_arg;

static void free_var_args(var_arg *va, int n)
{
    for (int i = 0; va && i < n; i++)
        dt_domain_free(&va[i].var.dom);
    free(va);
}

/* A domain of the key grammar (docs/workload-keys.md), or one integer: a
 * fixed value ("batch=1"), as a spec's variable may be. */
static int parse_domain(const char *text, dt_domain *d, dt_err *e)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end != text && !*end && !errno && (isdigit((unsigned char)text[0]) || text[0] == '-')) {
        int64_t one = v;
        return dt_domain_values(d, &one, NULL, 1, e);
    }
    return dt_domain_parse(text, d, e);
}

/* Parses every "name=DOMAIN"; each error names the argument. */
static int parse_var_args(const char *const *args, int n, var_arg **out, dt_err *e)
{
    var_arg *va = calloc((size_t)(n ? n : 1), sizeof *va);
    if (!va)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        const char *arg = args[k], *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : 0;
        va[k].arg = arg;
        if (!eq) {
            rc = dt_errf(e, DT_EINVAL, "--var '%s': expected NAME=DOMAIN (e.g. seq=1..128)", arg);
            break;
        }
        if (len < DT_NAME_MAX) {
            memcpy(va[k].var.name, arg, len);
            va[k].var.name[len] = '\0';
        }
        if (len >= DT_NAME_MAX || !dt_is_name(va[k].var.name))
            rc = dt_errf(e, DT_EINVAL, "--var '%s': '%.*s' is not a variable name (letters, "
                         "digits, _; at most 32)", arg, (int)len, arg);
        for (int j = 0; j < k && !rc; j++)
            if (!strcmp(va[j].var.name, va[k].var.name))
                rc = dt_errf(e, DT_EINVAL, "--var '%s': %s is already given by --var '%s'", arg,
                             va[k].var.name, va[j].arg);
        if (!rc && (rc = parse_domain(eq + 1, &va[k].var.dom, e)))
            dt_err_prefix(e, "--var '%s'", arg);
    }
    if (rc) {
        free_var_args(va, n); /* calloc'ed: entries not reached hold no domain */
        return rc;
    }
    *out = va;
    return 0;
}

/* "a, b, c" of names[0..n) into a malloc'ed string (NULL: no memory). */
static char *join(char *const *names, int n)
{
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_append(&sb, "");
    for (int i = 0; i < n; i++)
        dt_sb_appendf(&sb, "%s%s", i ? ", " : "", names[i]);
    return dt_sb_take(&sb);
}

/* The model variables in the graph's order (names[0..n), every one given:
 * dt_ox_propagate checked), pointing into va. */
static void order_vars(char *const *names, int n, const var_arg *va, int nva, dt_var *vars)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nva; k++)
            if (!strcmp(names[i], va[k].var.name))
                vars[i] = va[k].var;
}

/* ---- the import ---- */

/* The file's base name without ".onnx", as the default model name. */
static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && !strcasecmp(b + n - 5, ".onnx"))
        n -= 5;
    return n ? strndup(b, n) : strdup("model");
}

/* Checks the spec as `dtune workloads` will load it. */
static int check_spec(const dt_ox_graph *g, const char *text, dt_err *e)
{
    dt_model *m = NULL;
    int rc = dt_model_parse(text, strlen(text), g->source, &m, e);
    dt_model_free(m);
    if (rc && rc != DT_ENOMEM)
        dt_err_prefix(e, "internal error: the spec made from %s does not load", g->source);
    return rc;
}

int dt_ox_import_file(const char *path, const char *model_name, const char *const *var_args,
                      int nvar_args, dt_ox_import **out, dt_err *e)
{
    return dt_ox_import_file_branches(path, model_name, var_args, nvar_args, NULL, 0, out, e);
}

int dt_ox_import_file_branches(const char *path, const char *model_name,
                               const char *const *var_args, int nvar_args,
                               const char *const *branch_args, int nbranch_args,
                               dt_ox_import **out, dt_err *e)
{
    *out = NULL;
    dt_ox_graph *g = NULL;
    int rc = dt_ox_read_file(path, &g, e);
    if (!rc && nbranch_args > 0)
        rc = dt_ox_take_branches(g, branch_args, nbranch_args, e);
    if (!rc) {
        char *name = model_name ? NULL : base_name(path);
        if (!model_name && !name)
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
        else
            rc = dt_ox_import_narrowed(g, model_name ? model_name : name, var_args, nvar_args,
                                       out, e);
        free(name);
    }
    dt_ox_graph_free(g);
    return rc;
}

/* The reader's warnings, then one per node whose shape rule refused it (at
 * most MAX_FAILED_WARNINGS, then their count): its outputs are unknown and
 * nothing tuned reads them, or the import would have failed.  A node of an
 * If branch that never runs (its condition decided by the shapes) warns of
 * nothing: its shapes would be wrong where it is never computed. */
#define MAX_FAILED_WARNINGS 8
static int collect_warnings(const dt_ox_graph *g, const dt_ox_shapes *s, dt_ox_import *r,
                            dt_err *e)
{
    int nfailed = 0;
    for (int i = 0; i < g->nnodes; i++)
        nfailed += dt_ox_node_failure(s, i) != NULL && !dt_ox_node_dead(s, i);
    int n = g->nwarnings + (nfailed < MAX_FAILED_WARNINGS ? nfailed : MAX_FAILED_WARNINGS + 1);
    if (n && !(r->warnings = calloc((size_t)n, sizeof *r->warnings)))
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int i = 0; i < g->nwarnings; i++) {
        if (!(r->warnings[r->nwarnings] = strdup(g->warnings[i])))
            return dt_errf(e, DT_ENOMEM, "out of memory");
        r->nwarnings++;
    }
    for (int i = 0, shown = 0; i < g->nnodes && r->nwarnings < n; i++) {
        const char *why = dt_ox_node_failure(s, i);
        if (!why || dt_ox_node_dead(s, i))
            continue;
        char *w = NULL;
        int len = shown++ < MAX_FAILED_WARNINGS
                      ? asprintf(&w, "%s; its outputs are unknown, and no tuned op reads them", why)
                      : asprintf(&w, "%s: %d more nodes whose shapes could not be propagated feed "
                                     "no tuned op", g->source, nfailed - MAX_FAILED_WARNINGS);
        if (len < 0)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        r->warnings[r->nwarnings++] = w;
        if (shown > MAX_FAILED_WARNINGS)
            break;
    }
    return 0;
}

int dt_ox_import_graph(const dt_ox_graph *g, const char *model_name, const char *const *var_args,
                       int nvar_args, dt_ox_import **out, dt_err *e)
{
    *out = NULL;
    var_arg *va = NULL;
    dt_ox_shapes *s = NULL;
    dt_ox_wl *wl = NULL;
    char **names = NULL, *spec = NULL;
    dt_var *given = NULL, vars[DT_MAX_VARS];
    int nnames = 0;
    dt_ox_import *r = NULL;
    if (!model_name)
        model_name = "model";
    int rc = parse_var_args(var_args, nvar_args, &va, e);
    if (rc)
        return rc;
    if ((rc = dt_ox_graph_var_names(g, &names, &nnames, e)))
        goto out;
    if (nnames > DT_MAX_VARS) {
        char *list = join(names, nnames);
        rc = dt_errf(e, DT_EINVAL, "%s: %d dynamic dims (%s); dtune takes at most %d variables",
                     g->source, nnames, list ? list : "", DT_MAX_VARS);
        free(list);
        goto out;
    }
    /* the --var list as given: propagation names what is missing or unknown */
    if (!(given = calloc((size_t)(nvar_args ? nvar_args : 1), sizeof *given))) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < nvar_args; k++)
        given[k] = va[k].var;
    dt_ox_vars ov = {nvar_args, given};
    if ((rc = dt_ox_propagate(g, &ov, &s, e)))
        goto out;
    order_vars(names, nnames, va, nvar_args, vars);
    if ((rc = dt_ox_extract(g, s, &wl, e)) ||
        (rc = dt_ox_spec_write(g, wl, model_name, vars, nnames, &spec, e)) ||
        (rc = check_spec(g, spec, e))) {
        dt_err first;
        if (rc == DT_EINVAL && wl && wl->nops == 0 && dt_ox_first_failure(s, NULL, &first)) {
            char was[DT_ERR_MSG_MAX];
            snprintf(was, sizeof was, "%s", e->msg);
            rc = dt_errf(e, DT_EINVAL, "%s; shapes stopped at %s", was, first.msg);
        }
        goto out;
    }
    if (!(r = calloc(1, sizeof *r))) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    r->spec_json = spec;
    spec = NULL;
    r->var_names = names;
    r->nvars = nnames;
    names = NULL;
    r->untuned = wl->untuned;
    r->nuntuned = wl->nuntuned;
    wl->untuned = NULL;
    wl->nuntuned = 0;
    r->nnodes = g->nnodes;
    r->ntuned = wl->ntuned;
    if ((rc = dt_ox_coverage_count(g, s, wl, vars, nnames, &r->coverage, e)))
        goto out;
    if ((rc = collect_warnings(g, s, r, e)))
        goto out;
out:
    if (rc && r) {
        dt_ox_import_free(r);
        r = NULL;
        *out = NULL;
    } else if (!rc) {
        *out = r;
    }
    free(spec);
    dt_ox_wl_free(wl);
    if (s)
        dt_ox_shapes_free(s);
    for (int i = 0; names && i < nnames; i++)
        free(names[i]);
    free(names);
    free(given);
    free_var_args(va, nvar_args);
    return rc;
}
