/* Dims that hold for part of a domain only (issue 43, point 3;
 * onnx/import_graph.h, dt_ox_import_narrowed).
 *
 * A model's dims may be valid only over part of what --var gives: a
 * recognizer's Reshape to (width-5)/8+1 columns needs width >= 5, an STFT
 * front end's 256-sample window needs at least 192 samples.  Such an import
 * fails naming the node and the shape.  When it does, each variable's
 * domain is cut from below, then from above: if the import succeeds with
 * that variable at its two extreme values, a binary search over its values
 * (the failing shapes taken to lie at one end: the dims of a model grow
 * with its variables) finds the widest part that imports; the widest such
 * part over all variables and both ends is imported and tuned, and the
 * import says so in a warning that quotes the original error.  A failure
 * that no single variable's cut removes is returned as it was; so is one
 * that only a single value removes (a float Range's limit is a constant at
 * any one value, symbolic over two: that is no part of a domain where the
 * dims hold, only a shape where nothing is symbolic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_graph.h"
#include "shape/workload.h"

/* What --var gave for one variable: its name and its values. */
typedef struct {
    char name[DT_NAME_MAX];
    dt_domain d;
} var_dom;

/* Parses "name=DOMAIN"; 0 when it is not a domain this can cut: one value,
 * or weights that are not all equal (a cut would not keep what the user
 * meant). */
static int parse_arg(const char *arg, var_dom *v)
{
    const char *eq = strchr(arg, '=');
    if (!eq || (size_t)(eq - arg) >= sizeof v->name)
        return 0;
    memcpy(v->name, arg, (size_t)(eq - arg));
    v->name[eq - arg] = '\0';
    if (dt_domain_parse(eq + 1, &v->d, NULL))
        return 0;
    int uniform = 1;
    for (int i = 1; i < v->d.n; i++)
        uniform &= v->d.weights[i] == v->d.weights[0];
    if (v->d.n < 2 || !uniform) {
        dt_domain_free(&v->d);
        return 0;
    }
    return 1;
}

/* "name=" + values [a, b] of v, into buf (NULL: no memory or too long). */
static char *part_arg(const var_dom *v, int a, int b)
{
    dt_domain part = {0};
    if (dt_domain_values(&part, v->d.values + a, NULL, b - a + 1, NULL))
        return NULL;
    char text[4096];
    size_t len = dt_domain_print(&part, text, sizeof text);
    dt_domain_free(&part);
    if (len >= sizeof text)
        return NULL;
    char *arg = malloc(strlen(v->name) + len + 2);
    if (arg)
        sprintf(arg, "%s=%s", v->name, text);
    return arg;
}

/* 1 when g imports with args[j] replaced by values [a, b] of v. */
static int imports_with(const dt_ox_graph *g, const char *name, const char **args, int n, int j,
                        const var_dom *v, int a, int b)
{
    char *arg = part_arg(v, a, b);
    if (!arg)
        return 0;
    const char *saved = args[j];
    args[j] = arg;
    dt_ox_import *imp = NULL;
    dt_err e;
    int ok = dt_ox_import_graph(g, name, args, n, &imp, &e) == 0;
    dt_ox_import_free(imp);
    args[j] = saved;
    free(arg);
    return ok;
}

/* The widest part of variable j's values that imports, cut at one end
 * (top: keep [k, n-1], else [0, k]), at least two values: its first and
 * last index, or -1. */
static int widest_part(const dt_ox_graph *g, const char *name, const char **args, int n, int j,
                       const var_dom *v, int top, int *a, int *b)
{
    const int last = v->d.n - 1;
    /* the two extreme values must import */
    if (!(top ? imports_with(g, name, args, n, j, v, last - 1, last)
              : imports_with(g, name, args, n, j, v, 0, 1)))
        return -1;
    /* top: the smallest k whose [k, last] imports (k = last - 1 does, 0
     * does not: the full domain failed); bottom: the largest k of [0, k] */
    int bad = top ? 0 : last, good = top ? last - 1 : 1;
    while (abs(good - bad) > 1) {
        int mid = (good + bad) / 2;
        if (top ? imports_with(g, name, args, n, j, v, mid, last)
                : imports_with(g, name, args, n, j, v, 0, mid))
            good = mid;
        else
            bad = mid;
    }
    *a = top ? good : 0;
    *b = top ? last : good;
    return 0;
}

int dt_ox_import_narrowed(const dt_ox_graph *g, const char *model_name,
                          const char *const *var_args, int nvar_args, dt_ox_import **out,
                          dt_err *e)
{
    int rc = dt_ox_import_graph(g, model_name, var_args, nvar_args, out, e);
    if (rc != DT_EINVAL || nvar_args <= 0)
        return rc;
    const dt_err first = *e;
    const char **args = malloc((size_t)nvar_args * sizeof *args);
    if (!args)
        return rc;
    memcpy(args, var_args, (size_t)nvar_args * sizeof *args);
    int best_j = -1, best_a = 0, best_b = 0;
    for (int j = 0; j < nvar_args; j++) {
        var_dom v;
        if (!parse_arg(var_args[j], &v))
            continue;
        for (int top = 1; top >= 0; top--) {
            int a, b;
            if (widest_part(g, model_name, args, nvar_args, j, &v, top, &a, &b) == 0 &&
                (best_j < 0 || b - a > best_b - best_a))
                best_j = j, best_a = a, best_b = b;
        }
        dt_domain_free(&v.d);
    }
    var_dom best;
    if (best_j < 0 || !parse_arg(var_args[best_j], &best)) {
        free(args);
        return rc; /* no single variable's cut helps: the first error */
    }
    char *arg = part_arg(&best, best_a, best_b);
    char kept[4096] = "", given[4096] = "";
    if (arg)
        snprintf(kept, sizeof kept, "%s", strchr(arg, '=') + 1);
    dt_domain_print(&best.d, given, sizeof given);
    args[best_j] = arg;
    dt_err inner;
    rc = arg ? dt_ox_import_graph(g, model_name, args, nvar_args, out, &inner) : DT_ENOMEM;
    if (!rc) {
        dt_ox_import *r = *out;
        char **w = realloc(r->warnings, (size_t)(r->nwarnings + 1) * sizeof *w);
        char *msg = NULL;
        if (w) {
            r->warnings = w;
            if (asprintf(&msg, "%s: the model's dims hold only for %s=%s of the given %s=%s: "
                               "imported and tuned for that part (over the whole domain: %s)",
                         g->source, best.name, kept, best.name, given, first.msg) < 0)
                msg = NULL;
        }
        if (!msg) {
            dt_ox_import_free(r);
            *out = NULL;
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
        } else {
            memmove(r->warnings + 1, r->warnings, (size_t)r->nwarnings * sizeof *w);
            r->warnings[0] = msg;
            r->nwarnings++;
        }
    } else {
        *e = first;
        rc = first.code;
    }
    free(arg);
    dt_domain_free(&best.d);
    free(args);
    return rc;
}
