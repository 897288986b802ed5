/* Reading a canonical workload key for the TVM client (client_key.h).
 * The canonical form is regular (docs/workload-keys.md, "Canonical form"):
 * OP(ITEM,ITEM,...[;VAR=DOMAIN,...]) with no spaces, a dim's value an
 * integer, a domain (then the dim is a variable of its own name) or an
 * expression; attributes and dtype after the dims. */
#include "client_key.h"
#include "client_err.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_name(const char *s, size_t n)
{
    if (n == 0 || n > 32 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

static int is_int(const char *s, size_t n, int64_t *v)
{
    if (n == 0 || n > 19)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    char buf[24];
    memcpy(buf, s, n);
    buf[n] = '\0';
    *v = strtoll(buf, NULL, 10);
    return 1;
}

/* A domain: lo..hi, lo..hi:step or {a,b,...} (the braces' commas are
 * inside the item, see split_items). */
static int is_domain(const char *s, size_t n)
{
    return (n >= 2 && s[0] == '{' && s[n - 1] == '}') || memmem(s, n, "..", 2) != NULL;
}

static int var_index(dt_tvm_key *k, const char *name, size_t n)
{
    for (int i = 0; i < k->nvars; i++)
        if (strlen(k->var[i]) == n && memcmp(k->var[i], name, n) == 0)
            return i;
    if (k->nvars == DT_TVM_MAX_VARS)
        return -1;
    memcpy(k->var[k->nvars], name, n);
    k->var[k->nvars][n] = '\0';
    return k->nvars++;
}

static int cmp_names(const void *a, const void *b) { return strcmp(a, b); }

int dt_tvm_key_read(const char *key, dt_tvm_key *k)
{
    memset(k, 0, sizeof *k);
    /* into a buffer the canonical form fits (it is never much longer than
     * the key), so that one too long for dtune is told as such */
    size_t cap = strlen(key) + DTUNE_KEY_MAX;
    char *canon = malloc(cap);
    if (!canon)
        return dt_tvm_fail(DTUNE_ENOMEM, "out of memory");
    int rc = dtune_canonicalize(key, canon, cap);
    if (rc != DTUNE_OK) {
        free(canon);
        return dt_tvm_fail(rc, "%s", dtune_errmsg());
    }
    size_t clen = strlen(canon);
    if (clen >= sizeof k->canonical) {
        dt_tvm_fail(DTUNE_EINVAL, "the workload key %.64s... is %zu bytes long in canonical "
                    "form, more than dtune's limit of %zu", canon, clen,
                    sizeof k->canonical - 1);
        free(canon);
        return DTUNE_EINVAL;
    }
    memcpy(k->canonical, canon, clen + 1);
    free(canon);
    const char *c = k->canonical, *open = strchr(c, '(');
    size_t len = strlen(c);
    if (!open || c[len - 1] != ')')
        return dt_tvm_fail(DTUNE_EINVAL, "unexpected canonical key %s", c);
    if ((size_t)(open - c) == 5 && !memcmp(c, "dense", 5)) {
        k->op = DT_TVM_DENSE;
        memcpy(k->dims, "MNK", 4);
    } else if ((size_t)(open - c) == 12 && !memcmp(c, "batch_matmul", 12)) {
        k->op = DT_TVM_BMM;
        memcpy(k->dims, "BMNK", 5);
    } else {
        return dt_tvm_fail(DTUNE_EINVAL, "%s: the TVM client runs dense and batch_matmul (not %.*s)", c,
                    (int)(open - c), c);
    }
    k->ndims = (int)strlen(k->dims);
    /* items up to ';' or the closing ')'; a comma inside {...} belongs to the item */
    const char *p = open + 1, *end = c + len - 1, *semi = memchr(p, ';', (size_t)(end - p));
    const char *items_end = semi ? semi : end;
    int dim_seen[4] = {0};
    while (p < items_end) {
        const char *q = p;
        int depth = 0;
        while (q < items_end && (depth || *q != ',')) {
            depth += (*q == '{') - (*q == '}');
            q++;
        }
        const char *eq = memchr(p, '=', (size_t)(q - p));
        if (!eq)
            return dt_tvm_fail(DTUNE_EINVAL, "%s: unexpected item '%.*s'", c, (int)(q - p), p);
        size_t nl = (size_t)(eq - p), vl = (size_t)(q - eq - 1);
        const char *v = eq + 1;
        int d = -1;
        for (int i = 0; i < k->ndims; i++)
            if (nl == 1 && k->dims[i] == *p)
                d = i;
        if (d >= 0) {
            int64_t val;
            dim_seen[d] = 1;
            k->dim_var[d] = -1;
            if (is_int(v, vl, &val)) {
                k->dim_value[d] = val;
            } else if (is_domain(v, vl) || is_name(v, vl)) {
                /* DIM=domain names a variable after the dim */
                int vi = is_name(v, vl) ? var_index(k, v, vl) : var_index(k, p, nl);
                if (vi < 0)
                    return dt_tvm_fail(DTUNE_EINVAL, "%s: more than %d variables", c, DT_TVM_MAX_VARS);
                k->dim_var[d] = vi;
            } else {
                return dt_tvm_fail(DTUNE_EINVAL,
                            "%s: dim %c=%.*s is an expression; the TVM client reads each "
                            "variable from a tensor's shape, so every dim must be a constant "
                            "or one variable (tune the workload with %c=lo..hi)",
                            c, k->dims[d], (int)vl, v, k->dims[d]);
            }
        } else if (nl == 8 && !memcmp(p, "epilogue", 8)) {
            k->bias = vl >= 4 && !memcmp(v, "bias", 4);
        } else if (nl == 6 && !memcmp(p, "layout", 6)) {
            k->nt = vl == 2 && !memcmp(v, "NT", 2);
        } else if (nl == 4 && !memcmp(p, "math", 4)) {
            k->math_bf16 = vl == 4 && !memcmp(v, "bf16", 4);
            if (!k->math_bf16)
                return dt_tvm_fail(DTUNE_EINVAL, "%s: math=%.*s is not served", c, (int)vl, v);
        } else if (nl == 5 && !memcmp(p, "dtype", 5)) {
            return dt_tvm_fail(DTUNE_EINVAL,
                        "%s: dtype=%.*s is not served through TVM yet (f32 and math=bf16 "
                        "are; the Python package and dtune export run every dtype)",
                        c, (int)vl, v);
        } else {
            return dt_tvm_fail(DTUNE_EINVAL, "%s: attribute %.*s is not known to the TVM client", c,
                        (int)nl, p);
        }
        p = q + (q < items_end);
    }
    for (int i = 0; i < k->ndims; i++)
        if (!dim_seen[i])
            return dt_tvm_fail(DTUNE_EINVAL, "%s: dim %c missing", c, k->dims[i]);
    /* dtune_lookup_values takes the variables sorted by name: renumber */
    char sorted[DT_TVM_MAX_VARS][33];
    memcpy(sorted, k->var, sizeof sorted);
    qsort(sorted, (size_t)k->nvars, sizeof sorted[0], cmp_names);
    for (int i = 0; i < k->ndims; i++) {
        if (k->dim_var[i] < 0)
            continue;
        for (int j = 0; j < k->nvars; j++)
            if (!strcmp(sorted[j], k->var[k->dim_var[i]])) {
                k->dim_var[i] = j;
                break;
            }
    }
    memcpy(k->var, sorted, sizeof sorted);
    return 0;
}
