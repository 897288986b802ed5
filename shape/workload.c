/* Workloads: construction, canonical form, validation, shapes. */
#include "shape/workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

dt_workload *dt_workload_new(const dt_op_desc *op)
{
    dt_workload *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->op = op;
    for (int i = 0; i < op->nattrs; i++)
        w->attrs[i] = op->attrs[i].default_index;
    return w;
}

void dt_workload_free(dt_workload *w)
{
    if (!w)
        return;
    for (int i = 0; i < DT_MAX_DIMS; i++)
        dt_expr_free(w->dims[i]);
    for (int i = 0; i < w->nvars; i++)
        dt_domain_free(&w->vars[i].dom);
    free(w);
}

dt_workload *dt_workload_clone(const dt_workload *w)
{
    dt_workload *c = dt_workload_new(w->op);
    if (!c)
        return NULL;
    memcpy(c->attrs, w->attrs, sizeof c->attrs);
    c->dtype = w->dtype;
    for (int i = 0; i < w->op->ndims; i++)
        if (w->dims[i] && !(c->dims[i] = dt_expr_clone(w->dims[i])))
            goto fail;
    for (int i = 0; i < w->nvars; i++) {
        memcpy(c->vars[i].name, w->vars[i].name, DT_NAME_MAX);
        if (dt_domain_copy(&c->vars[i].dom, &w->vars[i].dom))
            goto fail;
        c->nvars++;
    }
    DT_ASSERT(c->nvars == w->nvars && c->op == w->op, "a clone has the op and variables of its original");
    return c;
fail:
    dt_workload_free(c);
    return NULL;
}

int dt_workload_var_index(const dt_workload *w, const char *name)
{
    for (int i = 0; i < w->nvars; i++)
        if (strcmp(w->vars[i].name, name) == 0)
            return i;
    return -1;
}

int dt_workload_add_var(dt_workload *w, const char *name, dt_domain *dom, dt_err *e)
{
    int rc = 0;
    if (!dt_is_name(name))
        rc = dt_errf(e, DT_EINVAL, "'%s' is not a valid variable name", name);
    else if (dt_workload_var_index(w, name) >= 0)
        rc = dt_errf(e, DT_EINVAL, "variable '%s' is defined twice", name);
    else if (w->nvars >= DT_MAX_VARS)
        rc = dt_errf(e, DT_EINVAL, "too many variables (at most %d)", DT_MAX_VARS);
    if (rc) {
        dt_domain_free(dom);
        return rc;
    }
    DT_ASSERT(dom->n >= 1 && dom->values && dom->weights,
              "a variable's domain (made by dt_domain_*) has at least one value");
    dt_var *v = &w->vars[w->nvars++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->dom = *dom;
    memset(dom, 0, sizeof *dom);
    return 0;
}

static void remove_var(dt_workload *w, int i)
{
    dt_domain_free(&w->vars[i].dom);
    memmove(&w->vars[i], &w->vars[i + 1], (size_t)(w->nvars - i - 1) * sizeof w->vars[0]);
    w->nvars--;
}

/* Number of dims whose expression mentions variable name. */
static int dims_using(const dt_workload *w, const char *name)
{
    int n = 0;
    for (int d = 0; d < w->op->ndims; d++)
        n += dt_expr_uses(w->dims[d], name);
    return n;
}

static int cmp_var(const void *a, const void *b)
{
    return strcmp(((const dt_var *)a)->name, ((const dt_var *)b)->name);
}

int dt_workload_canonicalize(dt_workload *w, dt_err *e)
{
    const dt_op_desc *op = w->op;
    for (int d = 0; d < op->ndims; d++)
        if (!w->dims[d])
            return dt_errf(e, DT_EINVAL, "%s: dim %s is missing", op->name, op->dims[d]);
    /* a variable with one value is a constant */
    for (int i = 0; i < w->nvars;) {
        if (w->vars[i].dom.n == 1) {
            for (int d = 0; d < op->ndims; d++)
                dt_expr_substitute(w->dims[d], w->vars[i].name, w->vars[i].dom.values[0]);
            remove_var(w, i);
        } else {
            i++;
        }
    }
    for (int d = 0; d < op->ndims; d++) {
        int rc = dt_expr_canonicalize(&w->dims[d], e);
        if (rc)
            return dt_err_prefix(e, "dim %s", op->dims[d]);
    }
    for (int i = 0; i < w->nvars;) {
        if (dims_using(w, w->vars[i].name) == 0)
            remove_var(w, i);
        else
            i++;
    }
    /* a dim that is a variable of its own takes the dim's name */
    for (int d = 0; d < op->ndims; d++) {
        dt_expr *x = w->dims[d];
        if (x->kind != DT_EXPR_VAR || strcmp(x->name, op->dims[d]) == 0)
            continue;
        if (dims_using(w, x->name) != 1 || dt_workload_var_index(w, op->dims[d]) >= 0)
            continue;
        int vi = dt_workload_var_index(w, x->name);
        if (vi < 0)
            continue; /* unknown variable: reported by bind below */
        snprintf(w->vars[vi].name, DT_NAME_MAX, "%s", op->dims[d]);
        if (dt_expr_rename(x, x->name, op->dims[d]))
            return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    qsort(w->vars, (size_t)w->nvars, sizeof w->vars[0], cmp_var);
    const char *names[DT_MAX_VARS];
    for (int i = 0; i < w->nvars; i++) {
        names[i] = w->vars[i].name;
        DT_ASSERT(w->vars[i].dom.n >= 2, "a canonical workload's variable takes two values or more");
        DT_ASSERT(i == 0 || strcmp(names[i - 1], names[i]) < 0,
                  "a canonical workload's variables are distinct and sorted by name");
    }
    for (int d = 0; d < op->ndims; d++) {
        int rc = dt_expr_bind(w->dims[d], names, w->nvars, e);
        if (rc)
            return dt_err_prefix(e, "dim %s", op->dims[d]);
    }
    return 0;
}

int64_t dt_workload_nshapes(const dt_workload *w)
{
    int64_t n = 1;
    for (int i = 0; i < w->nvars; i++)
        if (__builtin_mul_overflow(n, (int64_t)w->vars[i].dom.n, &n))
            return INT64_MAX;
    return n;
}

void dt_workload_shape_at(const dt_workload *w, int64_t idx, int64_t *vals, double *weight)
{
    double wt = 1.0;
    DT_ASSERT(idx >= 0, "a flat shape number is not negative");
    for (int i = w->nvars - 1; i >= 0; i--) {
        const dt_domain *d = &w->vars[i].dom;
        int k = (int)(idx % d->n);
        idx /= d->n;
        vals[i] = d->values[k];
        wt *= d->weights[k];
    }
    DT_ASSERT(idx == 0, "a flat shape number is below the number of shapes of the set");
    DT_ASSERT(wt >= 0 && wt <= 1 + 1e-9, "a shape's weight is a product of domain weights in 0..1");
    if (weight)
        *weight = wt;
}

int dt_workload_shape_index(const dt_workload *w, const int64_t *vals, int64_t *idx,
                            int64_t *nearest)
{
    int64_t i = 0;
    int exact = 1;
    for (int v = 0; v < w->nvars; v++) {
        const dt_domain *d = &w->vars[v].dom;
        int k = dt_domain_nearest(d, vals[v]);
        DT_ASSERT(k >= 0 && k < d->n, "the nearest domain index lies inside the domain");
        if (d->values[k] != vals[v])
            exact = 0;
        if (nearest)
            nearest[v] = d->values[k];
        i = i * d->n + k;
    }
    if (idx)
        *idx = i;
    return exact;
}

int dt_workload_dims(const dt_workload *w, const int64_t *vals, int64_t *dims, dt_err *e)
{
    for (int d = 0; d < w->op->ndims; d++) {
        int rc = dt_expr_eval(w->dims[d], vals, &dims[d], e);
        if (rc)
            return dt_err_prefix(e, "dim %s", w->op->dims[d]);
    }
    return 0;
}

size_t dt_shape_format(const dt_workload *w, const int64_t *vals, char *buf, size_t n)
{
    size_t len = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < w->nvars; i++) {
        char item[64];
        int l = snprintf(item, sizeof item, "%s%s=%lld", i ? "," : "", w->vars[i].name,
                         (long long)vals[i]);
        if (len + (size_t)l < n)
            memcpy(buf + len, item, (size_t)l + 1);
        len += (size_t)l;
    }
    return len;
}

/* Checks the dims of one shape: each >= 1 and the op's sizes in int64. */
static int check_shape(const dt_workload *w, const int64_t *vals, dt_err *e)
{
    int64_t dims[DT_MAX_DIMS];
    char shape[256];
    int rc = dt_workload_dims(w, vals, dims, e);
    if (rc) {
        dt_shape_format(w, vals, shape, sizeof shape);
        return dt_err_prefix(e, "at %s", shape[0] ? shape : "every shape");
    }
    for (int d = 0; d < w->op->ndims; d++) {
        if (dims[d] < 1) {
            char ex[256];
            dt_expr_print(w->dims[d], ex, sizeof ex);
            dt_shape_format(w, vals, shape, sizeof shape);
            return dt_errf(e, DT_EINVAL, "dim %s = %s is %lld at %s; every dim must be >= 1",
                           w->op->dims[d], ex, (long long)dims[d], shape[0] ? shape : "every shape");
        }
    }
    if ((rc = w->op->check(dims, w->attrs, e))) {
        dt_shape_format(w, vals, shape, sizeof shape);
        return dt_err_prefix(e, "at %s", shape[0] ? shape : "every shape");
    }
    return 0;
}

int dt_workload_validate(const dt_workload *w, dt_err *e)
{
    int rc = dt_op_check_dtype(w->op, w->dtype, e);
    if (rc)
        return rc;
    int64_t n = dt_workload_nshapes(w);
    DT_ASSERT(n >= 1, "a shape set has at least one shape");
    if (n > DT_MAX_SHAPES)
        return dt_errf(e, DT_EINVAL,
                       "the shape set has %s%lld shapes; at most %d are supported (sample a "
                       "large space with steps, e.g. H=64..512:32: a shape between the samples "
                       "runs the kernel of the nearest sampled one)",
                       n == INT64_MAX ? "over " : "", (long long)n, DT_MAX_SHAPES);
    int64_t vals[DT_MAX_VARS];
    for (int64_t i = 0; i < n; i++) {
        dt_workload_shape_at(w, i, vals, NULL);
        if ((rc = check_shape(w, vals, e)))
            return rc;
    }
    return 0;
}

int dt_shape_parse(const dt_workload *w, const char *text, int64_t *vals, int *in_domain,
                   dt_err *e)
{
    int seen[DT_MAX_VARS] = {0};
    const char *s = text;
    while (*s) {
        const char *eq = strchr(s, '=');
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        if (!eq || eq > end)
            return dt_errf(e, DT_EINVAL, "shape '%s': expected name=value at offset %td", text,
                           s - text);
        char name[DT_NAME_MAX + 1];
        size_t nl = (size_t)(eq - s);
        if (nl == 0 || nl >= sizeof name)
            return dt_errf(e, DT_EINVAL, "shape '%s': bad variable name at offset %td", text,
                           s - text);
        memcpy(name, s, nl);
        name[nl] = '\0';
        int vi = dt_workload_var_index(w, name);
        if (vi < 0) {
            char list[512] = "";
            for (int i = 0; i < w->nvars; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, w->vars[i].name, sizeof list - strlen(list) - 1);
            }
            return dt_errf(e, DT_EINVAL, "shape '%s': '%s' is not a variable of this workload "
                           "(its variables: %s)", text, name, w->nvars ? list : "none");
        }
        if (seen[vi]++)
            return dt_errf(e, DT_EINVAL, "shape '%s': '%s' is given twice", text, name);
        char *num_end;
        errno = 0;
        long long v = strtoll(eq + 1, &num_end, 10);
        if (num_end == eq + 1 || num_end != end || errno == ERANGE)
            return dt_errf(e, DT_EINVAL, "shape '%s': '%.*s' is not an integer", text,
                           (int)(end - eq - 1), eq + 1);
        vals[vi] = v;
        s = *end ? end + 1 : end;
    }
    for (int i = 0; i < w->nvars; i++)
        if (!seen[i])
            return dt_errf(e, DT_EINVAL, "shape '%s': variable '%s' has no value", text,
                           w->vars[i].name);
    int inside = 1;
    for (int i = 0; i < w->nvars; i++)
        inside &= dt_domain_contains(&w->vars[i].dom, vals[i]);
    if (in_domain)
        *in_domain = inside;
    return check_shape(w, vals, e);
}
