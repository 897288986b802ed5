/* The model variables of an ONNX graph: the graph inputs' dim_params and
 * unnamed dynamic dims, each under a valid variable name, and the check of
 * the user's --var list against them (onnx/shape.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "onnx/shape_internal.h"

#define NAME_LEN (DT_NAME_MAX - 1) /* 32 characters */

/* s made a valid name of at most max characters: every character outside
 * [A-Za-z0-9_] becomes '_', a leading digit gets a '_' before it, "" is
 * "_".  ("1.x" -> "_1_x", "batch size" -> "batch_size".) */
static void sanitize(const char *s, char *out, size_t max)
{
    size_t k = 0;
    if (isdigit((unsigned char)s[0]) && k < max)
        out[k++] = '_';
    for (size_t i = 0; s[i] && k < max; i++)
        out[k++] = (isalnum((unsigned char)s[i]) || s[i] == '_') ? s[i] : '_';
    if (k == 0)
        out[k++] = '_';
    out[k] = '\0';
}

static int same_dim(const ox_varname *v, const char *param, int input, int axis)
{
    if (param || v->param)
        return param && v->param && strcmp(param, v->param) == 0;
    return v->input == input && v->axis == axis;
}

static int name_taken(const ox_varname *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return 1;
    return 0;
}

/* The name of a new entry: the sanitised dim_param, or "<input>_d<axis>"
 * with the input's name cut to leave room for the suffix; "_2", "_3", ...
 * added when two dims would get the same name. */
static void make_name(const ox_varname *v, int n, const char *param, const char *input, int axis,
                      char *out)
{
    char base[DT_NAME_MAX];
    if (param) {
        sanitize(param, base, NAME_LEN);
    } else {
        char suffix[24];
        int ls = snprintf(suffix, sizeof suffix, "_d%d", axis);
        sanitize(input, base, NAME_LEN - (size_t)ls);
        strcat(base, suffix);
    }
    memcpy(out, base, strlen(base) + 1);
    for (int k = 2; name_taken(v, n, out); k++) {
        char suffix[24];
        size_t ls = (size_t)snprintf(suffix, sizeof suffix, "_%d", k);
        size_t lb = strlen(base);
        if (lb > NAME_LEN - ls)
            lb = NAME_LEN - ls;
        memcpy(out, base, lb);
        memcpy(out + lb, suffix, ls + 1);
    }
}

int dt_ox_var_list(const dt_ox_graph *g, ox_varname **out, int *nout, dt_err *e)
{
    ox_varname *v = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < g->ninputs; i++) {
        const dt_ox_value *in = &g->inputs[i];
        for (int a = 0; a < in->rank; a++) {
            const dt_ox_dim *d = &in->dims[a];
            const char *param = d->param && d->param[0] ? d->param : NULL;
            if (!param && d->value >= 0)
                continue;
            int seen = 0;
            for (int k = 0; k < n && !seen; k++)
                seen = same_dim(&v[k], param, i, a);
            if (seen)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                ox_varname *nv = realloc(v, (size_t)cap * sizeof *nv);
                if (!nv) {
                    free(v);
                    return dt_errf(e, DT_ENOMEM, "out of memory");
                }
                v = nv;
            }
            v[n].param = param;
            v[n].input = i;
            v[n].axis = a;
            make_name(v, n, param, in->name ? in->name : "", a, v[n].name);
            n++;
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

int dt_ox_var_of_dim(const ox_varname *v, int n, const dt_ox_graph *g, int input, int axis)
{
    const dt_ox_dim *d = &g->inputs[input].dims[axis];
    const char *param = d->param && d->param[0] ? d->param : NULL;
    if (!param && d->value >= 0)
        return -1;
    for (int k = 0; k < n; k++)
        if (same_dim(&v[k], param, input, axis))
            return k;
    return -1;
}

int dt_ox_graph_var_names(const dt_ox_graph *g, char ***names, int *n, dt_err *e)
{
    ox_varname *v;
    int nv;
    *names = NULL;
    *n = 0;
    int rc = dt_ox_var_list(g, &v, &nv, e);
    if (rc)
        return rc;
    char **out = calloc((size_t)(nv ? nv : 1), sizeof *out);
    for (int i = 0; out && i < nv; i++)
        if (!(out[i] = strdup(v[i].name))) {
            for (int k = 0; k < i; k++)
                free(out[k]);
            free(out);
            out = NULL;
        }
    free(v);
    if (!out)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    *names = out;
    *n = nv;
    return 0;
}

static const char *src(const dt_ox_graph *g)
{
    return g->source ? g->source : "model";
}

static const char *sbs(const dt_strbuf *sb)
{
    return sb->data ? sb->data : "";
}

int dt_ox_check_vars(const dt_ox_graph *g, const ox_varname *v, int n, const dt_ox_vars *vars,
                     dt_err *e)
{
    int nvars = vars ? vars->n : 0;
    for (int i = 0; i < nvars; i++) {
        for (int k = 0; k < i; k++)
            if (strcmp(vars->vars[k].name, vars->vars[i].name) == 0)
                return dt_errf(e, DT_EINVAL, "%s: --var %s is given twice", src(g),
                               vars->vars[i].name);
        if (vars->vars[i].dom.n < 1)
            return dt_errf(e, DT_EINVAL, "%s: --var %s has no values", src(g), vars->vars[i].name);
    }
    dt_strbuf all, missing;
    dt_sb_init(&all);
    dt_sb_init(&missing);
    int nmissing = 0;
    for (int k = 0; k < n; k++) {
        int found = 0;
        for (int i = 0; i < nvars && !found; i++)
            found = strcmp(vars->vars[i].name, v[k].name) == 0;
        dt_sb_appendf(&all, " --var %s=...", v[k].name);
        if (!found)
            dt_sb_appendf(&missing, "%s%s", nmissing++ ? ", " : "", v[k].name);
    }
    int rc = 0;
    if (nmissing)
        rc = dt_errf(e, DT_EINVAL, "%s: give a range for every dynamic dim:%s (missing: %s)",
                     src(g), sbs(&all), sbs(&missing));
    for (int i = 0; i < nvars && !rc; i++) {
        int found = 0;
        for (int k = 0; k < n && !found; k++)
            found = strcmp(vars->vars[i].name, v[k].name) == 0;
        if (found)
            continue;
        dt_sb_free(&missing);
        dt_sb_init(&missing);
        for (int k = 0; k < n; k++)
            dt_sb_appendf(&missing, "%s%s", k ? ", " : "", v[k].name);
        rc = dt_errf(e, DT_EINVAL, "%s: --var %s: the graph has no dynamic dim of that name (%s%s)",
                     src(g), vars->vars[i].name, n ? "its dynamic dims: " : "it has none",
                     sbs(&missing));
    }
    if (!rc && (all.oom || missing.oom))
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    dt_sb_free(&all);
    dt_sb_free(&missing);
    return rc;
}
