/* Canonical workload keys: printing and parsing (docs/workload-keys.md). */
#include "shape/workload.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

typedef struct {
    char *buf;
    size_t n, len;
} sbuf;

static void put(sbuf *b, const char *s)
{
    size_t l = strlen(s);
    if (b->len + l < b->n)
        memcpy(b->buf + b->len, s, l + 1);
    else if (b->n)
        b->buf[b->len < b->n ? b->len : b->n - 1] = '\0';
    b->len += l;
}

/* A dim printed as its variable's domain: the dim is a variable named after
 * it that no other dim uses. */
static int inlined_var(const dt_workload *w, int d)
{
    const dt_expr *x = w->dims[d];
    if (x->kind != DT_EXPR_VAR || strcmp(x->name, w->op->dims[d]) != 0)
        return -1;
    for (int o = 0; o < w->op->ndims; o++)
        if (o != d && dt_expr_uses(w->dims[o], x->name))
            return -1;
    return dt_workload_var_index(w, x->name);
}

size_t dt_workload_key(const dt_workload *w, char *buf, size_t n)
{
    sbuf b = {buf, n, 0};
    if (n)
        buf[0] = '\0';
    const dt_op_desc *op = w->op;
    char tmp[DT_KEY_MAX];
    int inlined[DT_MAX_VARS] = {0};
    put(&b, op->name);
    put(&b, "(");
    for (int d = 0; d < op->ndims; d++) {
        if (d)
            put(&b, ",");
        put(&b, op->dims[d]);
        put(&b, "=");
        int vi = inlined_var(w, d);
        if (vi >= 0) {
            DT_ASSERT(vi < w->nvars, "an inlined dim is one of the workload's variables");
            inlined[vi] = 1;
            dt_domain_print(&w->vars[vi].dom, tmp, sizeof tmp);
        } else {
            dt_expr_print(w->dims[d], tmp, sizeof tmp);
        }
        put(&b, tmp);
    }
    for (int a = 0; a < op->nattrs; a++) {
        const dt_attr_desc *ad = &op->attrs[a];
        if (!ad->always_print && w->attrs[a] == ad->default_index)
            continue;
        char num[16];
        put(&b, ",");
        put(&b, ad->name);
        put(&b, "=");
        put(&b, dt_attr_text(ad, w->attrs[a], num));
    }
    /* f32 is the default: keys without a dtype stay as they are; a dtype
     * with its own arithmetic (f32_bf16) is its storage dtype and math= */
    dt_dtype stored = dt_dtype_storage(w->dtype);
    if (stored != DT_DTYPE_F32) {
        put(&b, ",dtype=");
        put(&b, dt_dtype_name(stored));
    }
    if (dt_dtype_math(w->dtype)) {
        put(&b, ",math=");
        put(&b, dt_dtype_math(w->dtype));
    }
    int first = 1;
    for (int i = 0; i < w->nvars; i++) {
        if (inlined[i])
            continue;
        put(&b, first ? ";" : ",");
        first = 0;
        put(&b, w->vars[i].name);
        put(&b, "=");
        dt_domain_print(&w->vars[i].dom, tmp, sizeof tmp);
        put(&b, tmp);
    }
    put(&b, ")");
    return b.len;
}

/* ---- parsing ------------------------------------------------------------ */

/* Splits s[0..len) at top-level separators sep (outside (), {}); calls fn
 * on each trimmed piece with its offset in the key. */
typedef int (*piece_fn)(const char *piece, size_t offset, void *ctx);

static int split_top(const char *s, size_t len, size_t base, char sep, piece_fn fn, void *ctx)
{
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? s[i] : sep;
        if (c == '(' || c == '{')
            depth++;
        else if (c == ')' || c == '}')
            depth--;
        if (c == sep && depth == 0) {
            size_t a = start, z = i;
            while (a < z && isspace((unsigned char)s[a]))
                a++;
            while (z > a && isspace((unsigned char)s[z - 1]))
                z--;
            char *piece = strndup(s + a, z - a);
            if (!piece)
                return DT_ENOMEM;
            int rc = fn(piece, base + a, ctx);
            free(piece);
            if (rc)
                return rc;
            start = i + 1;
        }
    }
    return 0;
}

typedef struct {
    dt_workload *w;
    const char *key;
    dt_err *e;
    int dim_set[DT_MAX_DIMS];
    int attr_set[DT_MAX_ATTRS];
    int dtype_set;
    char *math;       /* math=, applied to the dtype after every item */
    size_t math_off;
    int declared[DT_MAX_VARS]; /* declared after ';' (as opposed to inline) */
} key_ctx;

static int split_assign(const char *piece, size_t off, key_ctx *k, char **name, char **value)
{
    const char *eq = strchr(piece, '=');
    if (!eq)
        return dt_errf(k->e, DT_EINVAL, "expected name=value at offset %zu, got '%s'", off, piece);
    *name = strndup(piece, (size_t)(eq - piece));
    *value = strdup(eq + 1);
    if (!*name || !*value) {
        free(*name);
        free(*value);
        return dt_errf(k->e, DT_ENOMEM, "out of memory");
    }
    /* trim around '=' */
    for (char *p = *name + strlen(*name); p > *name && isspace((unsigned char)p[-1]);)
        *--p = '\0';
    char *v = *value;
    while (isspace((unsigned char)*v))
        v++;
    memmove(*value, v, strlen(v) + 1);
    return 0;
}

static int looks_like_domain(const char *v) { return v[0] == '{' || strstr(v, "..") != NULL; }

static int parse_item(const char *piece, size_t off, void *ctx)
{
    key_ctx *k = ctx;
    const dt_op_desc *op = k->w->op;
    char *name, *value;
    int rc = split_assign(piece, off, k, &name, &value);
    if (rc)
        return rc;
    int d = dt_op_dim_index(op, name), a = dt_op_attr_index(op, name);
    if (strcmp(name, "dtype") == 0) {
        if (k->dtype_set++)
            rc = dt_errf(k->e, DT_EINVAL, "dtype is given twice (offset %zu)", off);
        else if (dt_dtype_from_name(value, &k->w->dtype))
            rc = dt_errf(k->e, DT_EINVAL, "dtype=%s at offset %zu: unknown dtype (expected one of %s)",
                         value, off, dt_dtype_names());
        else
            rc = dt_op_check_dtype(op, k->w->dtype, k->e) ? dt_err_prefix(k->e, "offset %zu", off) : 0;
    } else if (strcmp(name, "math") == 0) {
        if (k->math)
            rc = dt_errf(k->e, DT_EINVAL, "math is given twice (offset %zu)", off);
        else {
            k->math = value;
            k->math_off = off;
            value = NULL;
        }
    } else if (d >= 0) {
        if (k->dim_set[d]++) {
            rc = dt_errf(k->e, DT_EINVAL, "dim %s is given twice (offset %zu)", name, off);
        } else if (looks_like_domain(value)) {
            dt_domain dom;
            if (!(rc = dt_domain_parse(value, &dom, k->e)) &&
                !(rc = dt_workload_add_var(k->w, name, &dom, k->e)))
                k->w->dims[d] = dt_expr_var(name);
            else
                rc = dt_err_prefix(k->e, "dim %s (offset %zu)", name, off);
        } else {
            size_t eoff = 0;
            rc = dt_expr_parse(value, &k->w->dims[d], &eoff, k->e);
            if (rc)
                dt_err_prefix(k->e, "dim %s (offset %zu)", name, off + strlen(name) + 1 + eoff);
        }
    } else if (a >= 0) {
        const dt_attr_desc *ad = &op->attrs[a];
        int vi = -1;
        if (k->attr_set[a]++) {
            rc = dt_errf(k->e, DT_EINVAL, "attribute %s is given twice (offset %zu)", name, off);
        } else if (dt_attr_parse(ad, value, &vi)) {
            char allowed[256];
            dt_attr_allowed(ad, allowed, sizeof allowed);
            rc = dt_errf(k->e, DT_EINVAL, "%s=%s at offset %zu: expected %s", name, value, off,
                         allowed);
        } else {
            k->w->attrs[a] = vi;
        }
    } else {
        char known[256] = "";
        for (int i = 0; i < op->ndims; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, op->dims[i], sizeof known - strlen(known) - 1);
        }
        for (int i = 0; i < op->nattrs; i++) {
            strncat(known, ", ", sizeof known - strlen(known) - 1);
            strncat(known, op->attrs[i].name, sizeof known - strlen(known) - 1);
        }
        rc = dt_errf(k->e, DT_EINVAL,
                     "'%s' at offset %zu is not a dim or attribute of %s (%s, dtype, math)", name, off,
                     op->name, known);
    }
    free(name);
    free(value);
    return rc;
}

static int parse_var(const char *piece, size_t off, void *ctx)
{
    key_ctx *k = ctx;
    char *name, *value;
    int rc = split_assign(piece, off, k, &name, &value);
    if (rc)
        return rc;
    dt_domain dom;
    if ((rc = dt_domain_parse(value, &dom, k->e)))
        dt_err_prefix(k->e, "variable %s (offset %zu)", name, off);
    else if ((rc = dt_workload_add_var(k->w, name, &dom, k->e)))
        dt_err_prefix(k->e, "offset %zu", off);
    else
        k->declared[k->w->nvars - 1] = 1;
    free(name);
    free(value);
    return rc;
}

static int missing_dim(const dt_op_desc *op, int d, dt_err *e)
{
    char dims[128] = "";
    for (int i = 0; i < op->ndims; i++) {
        strncat(dims, i ? "," : "", sizeof dims - strlen(dims) - 1);
        strncat(dims, op->dims[i], sizeof dims - strlen(dims) - 1);
    }
    return dt_errf(e, DT_EINVAL, "dim %s is missing (%s needs %s)", op->dims[d], op->name, dims);
}

static int dims_unused(const dt_workload *w, const char *name)
{
    for (int d = 0; d < w->op->ndims; d++)
        if (w->dims[d] && dt_expr_uses(w->dims[d], name))
            return 0;
    return 1;
}

static int parse_key(const char *key, dt_workload **out, dt_err *e)
{
    const char *open = strchr(key, '(');
    size_t len = strlen(key);
    while (len > 0 && isspace((unsigned char)key[len - 1]))
        len--;
    if (!open || len == 0 || key[len - 1] != ')')
        return dt_errf(e, DT_EINVAL, "expected op(dims...), e.g. dense(M=1..128,N=768,K=768)");
    const char *s = key;
    while (isspace((unsigned char)*s))
        s++;
    size_t oplen = (size_t)(open - s);
    while (oplen > 0 && isspace((unsigned char)s[oplen - 1]))
        oplen--;
    char opname[64];
    if (oplen == 0 || oplen >= sizeof opname)
        return dt_errf(e, DT_EINVAL, "missing op name before '('");
    memcpy(opname, s, oplen);
    opname[oplen] = '\0';
    const dt_op_desc *op = dt_op_find(opname);
    if (!op) {
        char known[256] = "";
        for (int i = 0; i < dt_op_count(); i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, dt_op_at(i)->name, sizeof known - strlen(known) - 1);
        }
        return dt_errf(e, DT_EINVAL, "unknown op '%s' (known ops: %s)", opname, known);
    }
    key_ctx k = {.w = dt_workload_new(op), .key = key, .e = e};
    if (!k.w)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    const char *body = open + 1;
    size_t body_len = (size_t)(key + len - 1 - body);
    const char *semi = NULL;
    int depth = 0;
    for (size_t i = 0; i < body_len && !semi; i++) {
        if (body[i] == '(' || body[i] == '{')
            depth++;
        else if (body[i] == ')' || body[i] == '}')
            depth--;
        else if (body[i] == ';' && depth == 0)
            semi = body + i;
    }
    size_t items_len = semi ? (size_t)(semi - body) : body_len;
    size_t base = (size_t)(body - key);
    int rc = split_top(body, items_len, base, ',', parse_item, &k);
    if (!rc && semi)
        rc = split_top(semi + 1, body_len - items_len - 1, base + items_len + 1, ',', parse_var,
                       &k);
    if (!rc && k.math) {
        /* math=bf16: the dtype storing the key's dtype with that arithmetic */
        dt_dtype d;
        if (!dt_dtype_math_known(k.math))
            rc = dt_errf(e, DT_EINVAL,
                         "math=%s at offset %zu: unknown math '%s' (known: %s; without math= a "
                         "dtype computes in its own precision)",
                         k.math, k.math_off, k.math, dt_dtype_math_names());
        else if (dt_dtype_math(k.w->dtype) ? strcmp(dt_dtype_math(k.w->dtype), k.math) != 0
                                      : dt_dtype_with_math(k.w->dtype, k.math, &d) != 0)
            rc = dt_errf(e, DT_EINVAL,
                         "math=%s at offset %zu is not available for dtype %s (math=bf16 "
                         "takes f32 and w8a32)", k.math, k.math_off, dt_dtype_name(k.w->dtype));
        else if (!dt_dtype_math(k.w->dtype) &&
                 !(rc = dt_op_check_dtype(op, d, e) ? dt_err_prefix(e, "offset %zu", k.math_off)
                                                    : 0))
            k.w->dtype = d;
    }
    free(k.math);
    for (int d = 0; !rc && d < op->ndims; d++)
        if (!k.dim_set[d])
            rc = missing_dim(op, d, e);
    for (int i = 0; !rc && i < k.w->nvars; i++)
        if (k.declared[i] && dims_unused(k.w, k.w->vars[i].name))
            rc = dt_errf(e, DT_EINVAL, "variable %s is declared but no dim uses it",
                         k.w->vars[i].name);
    if (rc) {
        dt_workload_free(k.w);
        return rc;
    }
    for (int d = 0; d < op->ndims; d++)
        DT_ASSERT(k.w->dims[d], "a parsed key has an expression for every dim of its op");
    *out = k.w;
    return 0;
}

int dt_workload_parse_key(const char *key, dt_workload **out, dt_err *e)
{
    *out = NULL;
    dt_workload *w = NULL;
    int rc = parse_key(key, &w, e);
    if (!rc && !(rc = dt_workload_canonicalize(w, e)))
        rc = dt_workload_validate(w, e);
    if (rc) {
        dt_workload_free(w);
        /* quote a hostile (long) key by its start only, so the reason fits */
        return dt_err_prefix(e, "workload key '%.120s%s'", key, strlen(key) > 120 ? "..." : "");
    }
    DT_ASSERT(w->op && w->nvars >= 0 && w->nvars <= DT_MAX_VARS,
              "a parsed workload has its op and at most DT_MAX_VARS variables");
    *out = w;
    return 0;
}
