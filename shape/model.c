/* Model spec parsing (docs/model-spec.md). */
#include "shape/model.h"

#include <assert.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_locate.h"
#include "common/json_util.h"

#define MAX_DEPTH 4

typedef struct {
    const char *text;
    size_t len;
    const char *source;
    dt_json_seg path[MAX_DEPTH];
    int depth;
    dt_err *e;
    dt_dtype dtype; /* the model's default dtype ("dtype" at the root; f32) */
} spec_ctx;

static void push_key(spec_ctx *c, const char *key)
{
    c->path[c->depth].key = key;
    c->path[c->depth].index = 0;
    c->depth++;
}

static void push_index(spec_ctx *c, int i)
{
    c->path[c->depth].key = NULL;
    c->path[c->depth].index = i;
    c->depth++;
}

static void pop(spec_ctx *c) { c->depth--; }

/* "source:line:col: path: message", located at the current path (its member
 * name when at_key), col moved right by col_offset characters. */
static int spec_fail(spec_ctx *c, int at_key, int col_offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int spec_fail(spec_ctx *c, int at_key, int col_offset, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX], where[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (int i = 0; i < c->depth; i++) {
        size_t l = strlen(where);
        if (c->path[i].key)
            snprintf(where + l, sizeof where - l, "%s%s", i ? "." : "", c->path[i].key);
        else
            snprintf(where + l, sizeof where - l, "[%d]", c->path[i].index);
    }
    int line, col;
    dt_json_locate(c->text, c->len, c->path, c->depth, at_key, &line, &col);
    return dt_errf(c->e, DT_EINVAL, "%s:%d:%d: %s%s%s", c->source, line, col + col_offset, where,
                   where[0] ? ": " : "", msg);
}

/* Fails on the first member of obj whose name is not in allowed (NULL-ended,
 * extra names in extra[0..nextra)). */
static int check_fields(spec_ctx *c, json_t *obj, const char *const *allowed,
                        const char *const *extra, int nextra, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(allowed[i], k) == 0;
        for (int i = 0; i < nextra && !ok; i++)
            ok = strcmp(extra[i], k) == 0;
        if (!ok) {
            char list[512] = "";
            for (int i = 0; allowed[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, allowed[i], sizeof list - strlen(list) - 1);
            }
            for (int i = 0; i < nextra; i++) {
                strncat(list, ", ", sizeof list - strlen(list) - 1);
                strncat(list, extra[i], sizeof list - strlen(list) - 1);
            }
            push_key(c, k);
            int rc = spec_fail(c, 1, 0, "unknown field '%s' in %s (expected: %s)", k, what, list);
            pop(c);
            return rc;
        }
    }
    return 0;
}

/* ---- variables ---------------------------------------------------------- */

static int get_int(spec_ctx *c, json_t *v, const char *what, int64_t *out)
{
    if (!json_is_integer(v))
        return spec_fail(c, 0, 0, "%s must be an integer, not %s", what, dt_json_type_name(v));
    *out = json_integer_value(v);
    return 0;
}

static int parse_domain(spec_ctx *c, json_t *v, dt_domain *dom)
{
    memset(dom, 0, sizeof *dom);
    int rc;
    if (json_is_integer(v)) {
        int64_t x = json_integer_value(v);
        return dt_domain_values(dom, &x, NULL, 1, c->e);
    }
    if (!json_is_object(v))
        return spec_fail(c, 0, 0,
                         "a variable is an integer or an object with \"range\" or \"values\", "
                         "not %s", dt_json_type_name(v));
    static const char *const fields[] = {"range", "step", "values", "weights", NULL};
    if ((rc = check_fields(c, v, fields, NULL, 0, "a variable")))
        return rc;
    json_t *range = json_object_get(v, "range"), *values = json_object_get(v, "values");
    json_t *step = json_object_get(v, "step"), *weights = json_object_get(v, "weights");
    if (!range == !values)
        return spec_fail(c, 0, 0, "give exactly one of \"range\": [lo, hi] or \"values\": [...]");
    if (range) {
        int64_t lo = 0, hi = 0, st = 1; /* set by get_int before use */
        if (step) {
            push_key(c, "step");
            rc = get_int(c, step, "\"step\"", &st);
            if (!rc && st < 1)
                rc = spec_fail(c, 0, 0, "\"step\" must be >= 1");
            pop(c);
            if (rc)
                return rc;
        }
        push_key(c, "range");
        if (!json_is_array(range) || json_array_size(range) != 2)
            rc = spec_fail(c, 0, 0, "\"range\" must be [lo, hi]");
        else if (!(rc = get_int(c, json_array_get(range, 0), "lo", &lo)) &&
                 !(rc = get_int(c, json_array_get(range, 1), "hi", &hi)) &&
                 (rc = dt_domain_range(dom, lo, hi, st, c->e)))
            rc = spec_fail(c, 0, 0, "%s", c->e->msg);
        pop(c);
    } else {
        push_key(c, "values");
        if (step)
            rc = spec_fail(c, 0, 0, "\"step\" goes with \"range\", not \"values\"");
        else if (!json_is_array(values) || json_array_size(values) == 0)
            rc = spec_fail(c, 0, 0, "\"values\" must be a non-empty array of integers");
        else if (json_array_size(values) > DT_MAX_DOMAIN)
            rc = spec_fail(c, 0, 0, "\"values\" has more than %d entries", DT_MAX_DOMAIN);
        else {
            size_t n = json_array_size(values);
            int64_t *vals = malloc(n * sizeof *vals);
            if (!vals)
                rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
            for (size_t i = 0; !rc && i < n; i++) {
                push_index(c, (int)i);
                rc = get_int(c, json_array_get(values, i), "a value", &vals[i]);
                pop(c);
            }
            if (!rc && (rc = dt_domain_values(dom, vals, NULL, (int)n, c->e)))
                rc = spec_fail(c, 0, 0, "%s", c->e->msg);
            free(vals);
        }
        pop(c);
    }
    if (rc || !weights)
        return rc;
    /* weights follow the values in the order given (ascending for a range) */
    push_key(c, "weights");
    if (!json_is_array(weights) || json_array_size(weights) != (size_t)dom->n) {
        rc = spec_fail(c, 0, 0, "\"weights\" must be an array of %d numbers, one per value",
                       dom->n);
    } else {
        double *w = malloc((size_t)dom->n * sizeof *w);
        int64_t *vals = malloc((size_t)dom->n * sizeof *vals);
        if (!w || !vals)
            rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
        for (int i = 0; !rc && i < dom->n; i++) {
            json_t *x = json_array_get(weights, (size_t)i);
            if (!json_is_number(x)) {
                push_index(c, i);
                rc = spec_fail(c, 0, 0, "a weight must be a number, not %s", dt_json_type_name(x));
                pop(c);
            } else {
                w[i] = json_number_value(x);
            }
        }
        if (!rc) {
            /* values in spec order: the array given, or the range ascending */
            for (int i = 0; i < dom->n; i++)
                vals[i] = values ? json_integer_value(json_array_get(values, (size_t)i))
                                 : dom->values[i];
            dt_domain weighted;
            if ((rc = dt_domain_values(&weighted, vals, w, dom->n, c->e)))
                rc = spec_fail(c, 0, 0, "%s", c->e->msg);
            else {
                dt_domain_free(dom);
                *dom = weighted;
            }
        }
        free(w);
        free(vals);
    }
    pop(c);
    if (rc)
        dt_domain_free(dom);
    return rc;
}

static int parse_variables(spec_ctx *c, json_t *vars, dt_model *m)
{
    if (!vars)
        return 0;
    push_key(c, "variables");
    int rc = 0;
    if (!json_is_object(vars))
        rc = spec_fail(c, 0, 0, "\"variables\" must be an object, not %s", dt_json_type_name(vars));
    const char *name;
    json_t *v;
    json_object_foreach(vars, name, v)
    {
        if (rc)
            break;
        push_key(c, name);
        if (!dt_is_name(name))
            rc = spec_fail(c, 1, 0, "'%s' is not a valid variable name "
                           "(letters, digits, _; at most 32)", name);
        else if (m->nvars >= DT_MAX_VARS)
            rc = spec_fail(c, 1, 0, "too many variables (at most %d)", DT_MAX_VARS);
        else if (!(rc = parse_domain(c, v, &m->vars[m->nvars].dom))) {
            snprintf(m->vars[m->nvars].name, DT_NAME_MAX, "%s", name);
            m->nvars++;
        }
        pop(c);
    }
    pop(c);
    return rc;
}

/* ---- ops ---------------------------------------------------------------- */

typedef struct {
    spec_ctx *c;
    const dt_model *m;
    const char *bad;
} var_check;

static void check_var(const char *name, void *ctx)
{
    var_check *vc = ctx;
    if (vc->bad)
        return;
    for (int i = 0; i < vc->m->nvars; i++)
        if (strcmp(vc->m->vars[i].name, name) == 0)
            return;
    vc->bad = name;
}

static int parse_dim(spec_ctx *c, const dt_model *m, json_t *v, dt_expr **out)
{
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 1)
            return spec_fail(c, 0, 0, "a dim must be >= 1, got %lld",
                             (long long)json_integer_value(v));
        *out = dt_expr_const(json_integer_value(v));
        return *out ? 0 : dt_errf(c->e, DT_ENOMEM, "out of memory");
    }
    if (!json_is_string(v))
        return spec_fail(c, 0, 0, "a dim is an integer or an expression string, not %s",
                         dt_json_type_name(v));
    size_t off = 0;
    dt_err inner;
    if (dt_expr_parse(json_string_value(v), out, &off, &inner))
        return spec_fail(c, 0, 1 + (int)off, "%s", inner.msg);
    var_check vc = {c, m, NULL};
    dt_expr_visit_vars(*out, check_var, &vc);
    if (vc.bad) {
        char list[512] = "";
        for (int i = 0; i < m->nvars; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, m->vars[i].name, sizeof list - strlen(list) - 1);
        }
        const char *at = strstr(json_string_value(v), vc.bad);
        int rc = spec_fail(c, 0, 1 + (int)(at ? at - json_string_value(v) : 0),
                           "unknown variable '%s' in '%s' (model variables: %s)", vc.bad,
                           json_string_value(v), m->nvars ? list : "none");
        dt_expr_free(*out);
        *out = NULL;
        return rc;
    }
    return 0;
}

/* A "dtype" member: one of dt_dtype_names(). */
static int parse_dtype(spec_ctx *c, json_t *v, dt_dtype *out)
{
    if (json_is_string(v) && dt_dtype_from_name(json_string_value(v), out) == 0)
        return 0;
    return spec_fail(c, 0, 0, "dtype must be one of %s, not %s%s%s", dt_dtype_names(),
                     json_is_string(v) ? "'" : "",
                     json_is_string(v) ? json_string_value(v) : dt_json_type_name(v),
                     json_is_string(v) ? "'" : "");
}

/* Builds the workload of one op object (already known to be an object). */
static int parse_op_workload(spec_ctx *c, const dt_model *m, json_t *obj,
                             const dt_op_desc *op, dt_workload **out)
{
    static const char *const base[] = {"name", "op", "count", "dtype", NULL};
    const char *extra[DT_MAX_DIMS + DT_MAX_ATTRS];
    int nextra = 0;
    for (int d = 0; d < op->ndims; d++)
        extra[nextra++] = op->dims[d];
    for (int a = 0; a < op->nattrs; a++)
        extra[nextra++] = op->attrs[a].name;
    char what[64];
    snprintf(what, sizeof what, "a %s op", op->name);
    int rc = check_fields(c, obj, base, extra, nextra, what);
    if (rc)
        return rc;
    dt_workload *w = dt_workload_new(op);
    if (!w)
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    w->dtype = c->dtype;
    json_t *jdtype = json_object_get(obj, "dtype");
    if (jdtype) {
        push_key(c, "dtype");
        rc = parse_dtype(c, jdtype, &w->dtype);
        pop(c);
    }
    if (!rc && dt_op_check_dtype(op, w->dtype, c->e))
        rc = spec_fail(c, 0, 0, "%s", c->e->msg);
    for (int d = 0; !rc && d < op->ndims; d++) {
        json_t *v = json_object_get(obj, op->dims[d]);
        if (!v) {
            char dims[128] = "";
            for (int i = 0; i < op->ndims; i++) {
                strncat(dims, i ? ", " : "", sizeof dims - strlen(dims) - 1);
                strncat(dims, op->dims[i], sizeof dims - strlen(dims) - 1);
            }
            rc = spec_fail(c, 0, 0, "missing dim %s (%s needs %s)", op->dims[d], op->name, dims);
            break;
        }
        push_key(c, op->dims[d]);
        rc = parse_dim(c, m, v, &w->dims[d]);
        pop(c);
    }
    for (int a = 0; !rc && a < op->nattrs; a++) {
        const dt_attr_desc *ad = &op->attrs[a];
        json_t *v = json_object_get(obj, ad->name);
        if (!v)
            continue;
        push_key(c, ad->name);
        int vi = -1;
        if (dt_attr_parse_json(ad, v, &vi)) {
            char allowed[256];
            dt_attr_allowed(ad, allowed, sizeof allowed);
            rc = spec_fail(c, 0, 0, "%s must be %s", ad->name, allowed);
        } else {
            w->attrs[a] = vi;
        }
        pop(c);
    }
    /* the workload gets the model variables its dims use, weights included */
    for (int i = 0; !rc && i < m->nvars; i++) {
        int used = 0;
        for (int d = 0; d < op->ndims; d++)
            used |= dt_expr_uses(w->dims[d], m->vars[i].name);
        dt_domain dom;
        if (!used)
            continue;
        if (dt_domain_copy(&dom, &m->vars[i].dom))
            rc = dt_errf(c->e, DT_ENOMEM, "out of memory");
        else
            rc = dt_workload_add_var(w, m->vars[i].name, &dom, c->e);
    }
    if (!rc && (dt_workload_canonicalize(w, c->e) || dt_workload_validate(w, c->e)))
        rc = spec_fail(c, 0, 0, "%s", c->e->msg);
    if (rc) {
        dt_workload_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* The most joint shapes of a count expression's variables that are
 * enumerated to average it. */
#define COUNT_MAX_SHAPES (1 << 20)

/* An op's count that is an expression over the model's variables ("seq" for
 * a recurrent cell's per-step product, "2*seq"): its mean over the product of
 * the variables' weights into *mean, and for each variable v it uses the
 * weights reweighted by it (w'(v=x) ∝ Σ over the shapes with v=x of
 * weight·count) into weights[v] (malloc'ed; NULL for the others), so that
 * Σ_s w'(s)·time(s)·mean is the op's time per model run.  The count must be
 * 1..DT_MODEL_COUNT_MAX at every shape.  x is bound here. */
static int expected_count(const dt_model *m, dt_expr *x, double *mean,
                          double *weights[DT_MAX_VARS], dt_err *e)
{
    const char *names[DT_MAX_VARS];
    int used[DT_MAX_VARS], nused = 0;
    int64_t nshapes = 1;
    for (int v = 0; v < m->nvars; v++) {
        names[v] = m->vars[v].name;
        weights[v] = NULL;
        if (dt_expr_uses(x, m->vars[v].name)) {
            used[nused++] = v;
            if (__builtin_mul_overflow(nshapes, m->vars[v].dom.n, &nshapes) ||
                nshapes > COUNT_MAX_SHAPES)
                return dt_errf(e, DT_EINVAL, "the count is an expression over more than %d "
                               "shapes of its variables", COUNT_MAX_SHAPES);
        }
    }
    int rc = dt_expr_bind(x, names, m->nvars, e);
    for (int u = 0; u < nused && !rc; u++)
        if (!(weights[used[u]] = calloc((size_t)m->vars[used[u]].dom.n, sizeof(double))))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
    int64_t vals[DT_MAX_VARS] = {0};
    int idx[DT_MAX_VARS] = {0};
    double total = 0;
    for (int64_t s = 0; s < nshapes && !rc; s++) {
        double p = 1;
        for (int u = nused - 1, r = (int)s; u >= 0; u--) { /* mixed radix, last fastest */
            const dt_domain *d = &m->vars[used[u]].dom;
            idx[u] = r % d->n;
            r /= d->n;
        }
        for (int u = 0; u < nused; u++) {
            const dt_domain *d = &m->vars[used[u]].dom;
            vals[used[u]] = d->values[idx[u]];
            p *= d->weights[idx[u]];
        }
        int64_t cnt;
        if ((rc = dt_expr_eval(x, vals, &cnt, e)))
            break;
        if (cnt < 1 || cnt > DT_MODEL_COUNT_MAX) {
            char shape[256];
            int len = 0;
            for (int u = 0; u < nused && len < (int)sizeof shape - 40; u++)
                len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%s=%lld",
                                u ? "," : "", m->vars[used[u]].name, (long long)vals[used[u]]);
            rc = dt_errf(e, DT_EINVAL, "the count is %lld at %s; it must be 1 to %d at every "
                         "shape", (long long)cnt, nused ? shape : "every shape",
                         DT_MODEL_COUNT_MAX);
            break;
        }
        total += p * (double)cnt;
        for (int u = 0; u < nused; u++)
            weights[used[u]][idx[u]] += p * (double)cnt;
    }
    for (int u = 0; u < nused && !rc; u++) /* each variable's mass sums to the mean */
        for (int k = 0; k < m->vars[used[u]].dom.n; k++)
            weights[used[u]][k] /= total;
    if (rc)
        for (int v = 0; v < m->nvars; v++) {
            free(weights[v]);
            weights[v] = NULL;
        }
    *mean = total;
    return rc;
}

/* Adds an op's workload to the model, merging it with an identical one:
 * counts add up and each variable's weights become the count-weighted mix.
 * count: the op's (mean) count. */
static int add_workload(dt_model *m, dt_workload *w, double count, const char *opname,
                        dt_err *e)
{
    char key[DT_KEY_MAX];
    dt_workload_key(w, key, sizeof key);
    dt_model_workload *mw = NULL;
    for (int i = 0; i < m->nworkloads && !mw; i++)
        if (strcmp(m->workloads[i].key, key) == 0)
            mw = &m->workloads[i];
    if (mw) {
        for (int v = 0; v < w->nvars; v++) {
            dt_domain *a = &mw->w->vars[v].dom;
            const dt_domain *b = &w->vars[v].dom;
            for (int k = 0; k < a->n; k++)
                a->weights[k] = ((double)mw->count * a->weights[k] +
                                 (double)count * b->weights[k]) /
                                ((double)mw->count + (double)count);
        }
        dt_workload_free(w);
        mw->count += count;
    } else {
        dt_model_workload *ws =
            realloc(m->workloads, (size_t)(m->nworkloads + 1) * sizeof *ws);
        if (!ws) {
            dt_workload_free(w);
            return dt_errf(e, DT_ENOMEM, "out of memory");
        }
        m->workloads = ws;
        mw = &ws[m->nworkloads++];
        memset(mw, 0, sizeof *mw);
        memcpy(mw->key, key, sizeof key);
        mw->w = w;
        mw->count = count;
    }
    char **ops = realloc(mw->ops, (size_t)(mw->nops + 1) * sizeof *ops);
    if (!ops || !(ops[mw->nops] = strdup(opname))) {
        if (ops)
            mw->ops = ops;
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    mw->ops = ops;
    mw->nops++;
    return 0;
}

static int parse_op(spec_ctx *c, dt_model *m, json_t *ops, size_t i)
{
    json_t *obj = json_array_get(ops, i);
    if (!json_is_object(obj))
        return spec_fail(c, 0, 0, "an op must be an object, not %s", dt_json_type_name(obj));
    json_t *jop = json_object_get(obj, "op");
    if (!jop)
        return spec_fail(c, 0, 0, "missing \"op\" (one of the op names, e.g. \"%s\")",
                         dt_op_at(0)->name);
    push_key(c, "op");
    const dt_op_desc *op = json_is_string(jop) ? dt_op_find(json_string_value(jop)) : NULL;
    if (!op) {
        char known[256] = "";
        for (int k = 0; k < dt_op_count(); k++) {
            strncat(known, k ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, dt_op_at(k)->name, sizeof known - strlen(known) - 1);
        }
        int rc = json_is_string(jop)
                     ? spec_fail(c, 0, 0, "unknown op '%s' (known ops: %s)",
                                 json_string_value(jop), known)
                     : spec_fail(c, 0, 0, "\"op\" must be a string (known ops: %s)", known);
        pop(c);
        return rc;
    }
    pop(c);
    /* name: given, or "<op><index>"; unique in the model */
    char name[128];
    json_t *jname = json_object_get(obj, "name");
    if (jname) {
        push_key(c, "name");
        int rc = 0;
        if (!json_is_string(jname) || json_string_length(jname) == 0 ||
            json_string_length(jname) >= sizeof name)
            rc = spec_fail(c, 0, 0, "\"name\" must be a non-empty string of under %zu bytes",
                           sizeof name);
        for (int w = 0; !rc && w < m->nworkloads; w++)
            for (int k = 0; !rc && k < m->workloads[w].nops; k++)
                if (strcmp(m->workloads[w].ops[k], json_string_value(jname)) == 0)
                    rc = spec_fail(c, 0, 0, "duplicate op name '%s'", json_string_value(jname));
        pop(c);
        if (rc)
            return rc;
        snprintf(name, sizeof name, "%s", json_string_value(jname));
    } else {
        snprintf(name, sizeof name, "%s%zu", op->name, i);
    }
    double count = 1;
    dt_expr *count_expr = NULL;
    json_t *jcount = json_object_get(obj, "count");
    if (jcount) {
        push_key(c, "count");
        int rc = 0;
        if (json_is_string(jcount)) {
            size_t off = 0;
            if ((rc = dt_expr_parse(json_string_value(jcount), &count_expr, &off, c->e)) ||
                (rc = dt_expr_canonicalize(&count_expr, c->e)))
                rc = spec_fail(c, 0, 0, "count '%s': %s", json_string_value(jcount), c->e->msg);
        } else if (!json_is_integer(jcount) || json_integer_value(jcount) < 1 ||
                   json_integer_value(jcount) > DT_MODEL_COUNT_MAX) {
            rc = spec_fail(c, 0, 0, "\"count\" must be an integer from 1 to %d, or an "
                           "expression of the variables (\"seq\")", DT_MODEL_COUNT_MAX);
        } else {
            count = (double)json_integer_value(jcount);
        }
        pop(c);
        if (rc) {
            dt_expr_free(count_expr);
            return rc;
        }
    }
    /* an expression count: the op's workload sees the variables it uses
     * reweighted by it (a copy of the model with those weights) */
    double *weights[DT_MAX_VARS] = {0};
    dt_model reweighted = *m;
    int rc = 0;
    if (count_expr && (rc = expected_count(m, count_expr, &count, weights, c->e))) {
        push_key(c, "count");
        rc = spec_fail(c, 0, 0, "count '%s': %s", json_string_value(jcount), c->e->msg);
        pop(c);
    }
    for (int v = 0; v < m->nvars; v++)
        if (weights[v])
            reweighted.vars[v].dom.weights = weights[v];
    dt_workload *w = NULL;
    if (!rc)
        rc = parse_op_workload(c, &reweighted, obj, op, &w);
    if (!rc && (rc = add_workload(m, w, count, name, c->e)))
        rc = spec_fail(c, 0, 0, "%s", c->e->msg);
    for (int v = 0; v < m->nvars; v++)
        free(weights[v]);
    dt_expr_free(count_expr);
    return rc;
}

static int parse_ops(spec_ctx *c, json_t *ops, dt_model *m)
{
    push_key(c, "ops");
    int rc = 0;
    if (!ops)
        rc = spec_fail(c, 0, 0, "missing \"ops\" (the model's operators)");
    else if (!json_is_array(ops) || json_array_size(ops) == 0)
        rc = spec_fail(c, 0, 0, "\"ops\" must be a non-empty array");
    else if (json_array_size(ops) > DT_MODEL_MAX_OPS)
        rc = spec_fail(c, 0, 0, "more than %d ops", DT_MODEL_MAX_OPS);
    for (size_t i = 0; !rc && ops && i < json_array_size(ops); i++) {
        push_index(c, (int)i);
        rc = parse_op(c, m, ops, i);
        pop(c);
    }
    pop(c);
    return rc;
}

/* ---- the model ---------------------------------------------------------- */

void dt_model_free(dt_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nworkloads; i++) {
        dt_workload_free(m->workloads[i].w);
        for (int k = 0; k < m->workloads[i].nops; k++)
            free(m->workloads[i].ops[k]);
        free(m->workloads[i].ops);
    }
    free(m->workloads);
    for (int i = 0; i < m->nvars; i++)
        dt_domain_free(&m->vars[i].dom);
    free(m->name);
    free(m->description);
    free(m);
}

int64_t dt_model_nshapes(const dt_model *m)
{
    int64_t n = 1;
    for (int i = 0; i < m->nvars; i++)
        if (__builtin_mul_overflow(n, (int64_t)m->vars[i].dom.n, &n))
            return INT64_MAX;
    return n;
}

static int parse_root(spec_ctx *c, json_t *root, dt_model *m)
{
    if (!json_is_object(root))
        return spec_fail(c, 0, 0, "a model spec is a JSON object, not %s", dt_json_type_name(root));
    static const char *const fields[] = {"name", "description", "dtype", "variables", "ops",
                                         NULL};
    int rc = check_fields(c, root, fields, NULL, 0, "a model spec");
    if (rc)
        return rc;
    json_t *name = json_object_get(root, "name"), *desc = json_object_get(root, "description");
    if (!name)
        return spec_fail(c, 0, 0, "missing \"name\" (the model's name)");
    push_key(c, "name");
    rc = json_is_string(name) && json_string_length(name) > 0
             ? 0
             : spec_fail(c, 0, 0, "\"name\" must be a non-empty string");
    pop(c);
    if (rc)
        return rc;
    if (desc && !json_is_string(desc)) {
        push_key(c, "description");
        rc = spec_fail(c, 0, 0, "\"description\" must be a string");
        pop(c);
        return rc;
    }
    m->name = strdup(json_string_value(name));
    m->description = desc ? strdup(json_string_value(desc)) : NULL;
    if (!m->name || (desc && !m->description))
        return dt_errf(c->e, DT_ENOMEM, "out of memory");
    json_t *dtype = json_object_get(root, "dtype");
    if (dtype) {
        push_key(c, "dtype");
        rc = parse_dtype(c, dtype, &c->dtype);
        pop(c);
        if (rc)
            return rc;
    }
    if ((rc = parse_variables(c, json_object_get(root, "variables"), m)))
        return rc;
    return parse_ops(c, json_object_get(root, "ops"), m);
}

int dt_model_parse(const char *text, size_t len, const char *source, dt_model **out, dt_err *e)
{
    *out = NULL;
    if (len > DT_MODEL_MAX_BYTES)
        return dt_errf(e, DT_EINVAL, "%s: model spec is %zu bytes; at most %u are accepted",
                       source, len, DT_MODEL_MAX_BYTES);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return dt_errf(e, DT_EINVAL, "%s:%d:%d: malformed JSON: %s", source, jerr.line,
                       jerr.column, jerr.text);
    dt_model *m = calloc(1, sizeof *m);
    dt_err local; /* spec_fail reads messages back, so never NULL inside */
    dt_err_clear(&local);
    spec_ctx c = {.text = text, .len = len, .source = source, .depth = 0, .e = &local};
    int rc = m ? parse_root(&c, root, m) : dt_errf(&local, DT_ENOMEM, "out of memory");
    json_decref(root);
    if (rc) {
        if (e)
            *e = local;
        dt_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}
