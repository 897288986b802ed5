/* Variable domains: the values a model variable takes, with weights. */
#include "shape/workload.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/json_util.h"

void dt_domain_free(dt_domain *d)
{
    if (!d)
        return;
    free(d->values);
    free(d->weights);
    d->values = NULL;
    d->weights = NULL;
    d->n = 0;
}

static int domain_alloc(dt_domain *d, int64_t n, dt_err *e)
{
    d->n = 0;
    d->values = NULL;
    d->weights = NULL;
    if (n < 1)
        return dt_errf(e, DT_EINVAL, "a domain needs at least one value");
    if (n > DT_MAX_DOMAIN)
        return dt_errf(e, DT_EINVAL, "domain has %lld values; at most %d are supported",
                       (long long)n, DT_MAX_DOMAIN);
    d->values = malloc((size_t)n * sizeof *d->values);
    d->weights = malloc((size_t)n * sizeof *d->weights);
    if (!d->values || !d->weights) {
        dt_domain_free(d);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    d->n = (int)n;
    return 0;
}

int dt_domain_range(dt_domain *d, int64_t lo, int64_t hi, int64_t step, dt_err *e)
{
    memset(d, 0, sizeof *d);
    if (step < 1)
        return dt_errf(e, DT_EINVAL, "range step must be >= 1, got %lld", (long long)step);
    if (lo > hi)
        return dt_errf(e, DT_EINVAL, "empty range %lld..%lld: the start is above the end",
                       (long long)lo, (long long)hi);
    int64_t span;
    if (__builtin_sub_overflow(hi, lo, &span))
        return dt_errf(e, DT_EINVAL, "range %lld..%lld is too wide", (long long)lo,
                       (long long)hi);
    int rc = domain_alloc(d, span / step + 1, e);
    if (rc)
        return rc;
    for (int i = 0; i < d->n; i++) {
        d->values[i] = lo + (int64_t)i * step;
        d->weights[i] = 1.0 / d->n;
    }
    DT_ASSERT(d->values[d->n - 1] <= hi && hi - d->values[d->n - 1] < step,
              "a range's last value is its end rounded down to the step");
    return 0;
}

typedef struct {
    int64_t v;
    double w;
} vw_pair;

static int cmp_pair(const void *a, const void *b)
{
    int64_t x = ((const vw_pair *)a)->v, y = ((const vw_pair *)b)->v;
    return (x > y) - (x < y);
}

int dt_domain_values(dt_domain *d, const int64_t *values, const double *weights, int n,
                     dt_err *e)
{
    int rc = domain_alloc(d, n, e);
    if (rc)
        return rc;
    vw_pair *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        dt_domain_free(d);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    double total = 0;
    for (int i = 0; i < n; i++) {
        p[i].v = values[i];
        p[i].w = weights ? weights[i] : 1.0;
        if (!(p[i].w >= 0) || p[i].w > 1e300) { /* also rejects NaN */
            char num[32];
            rc = dt_errf(e, DT_EINVAL, "weight %s of value %lld must be a finite number >= 0",
                         dt_real_text(p[i].w, num), (long long)values[i]);
            goto out;
        }
        total += p[i].w;
    }
    if (!(total > 0)) {
        rc = dt_errf(e, DT_EINVAL, "weights are all zero");
        goto out;
    }
    qsort(p, (size_t)n, sizeof *p, cmp_pair);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && p[i].v == p[i - 1].v) {
            rc = dt_errf(e, DT_EINVAL, "value %lld appears twice", (long long)p[i].v);
            goto out;
        }
        d->values[i] = p[i].v;
        d->weights[i] = p[i].w / total;
        sum += d->weights[i];
    }
    DT_ASSERT(sum > 1 - 1e-9 && sum < 1 + 1e-9, "a domain's weights sum to 1");
out:
    free(p);
    if (rc)
        dt_domain_free(d);
    return rc;
}

int dt_domain_copy(dt_domain *dst, const dt_domain *src)
{
    if (domain_alloc(dst, src->n, NULL))
        return DT_ENOMEM;
    memcpy(dst->values, src->values, (size_t)src->n * sizeof *src->values);
    memcpy(dst->weights, src->weights, (size_t)src->n * sizeof *src->weights);
    return 0;
}

int dt_domain_nearest(const dt_domain *d, int64_t v)
{
    DT_ASSERT(d->n >= 1, "a domain has at least one value");
    int lo = 0, hi = d->n - 1;
    if (v <= d->values[0])
        return 0;
    if (v >= d->values[hi])
        return hi;
    while (hi - lo > 1) { /* values[lo] < v < values[hi] */
        DT_ASSERT(d->values[lo] < v && v < d->values[hi],
                  "a domain's values are sorted, so the search keeps v between its ends");
        int mid = lo + (hi - lo) / 2;
        if (d->values[mid] == v)
            return mid;
        if (d->values[mid] < v)
            lo = mid;
        else
            hi = mid;
    }
    /* ties go to the smaller value */
    return v - d->values[lo] <= d->values[hi] - v ? lo : hi;
}

int dt_domain_contains(const dt_domain *d, int64_t v)
{
    int lo = 0, hi = d->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (d->values[mid] == v)
            return 1;
        if (d->values[mid] < v)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return 0;
}

size_t dt_domain_print(const dt_domain *d, char *buf, size_t n)
{
    DT_ASSERT(d->n >= 1, "a domain has at least one value");
    int64_t step = d->n >= 2 ? d->values[1] - d->values[0] : 0;
    int progression = d->n >= 2;
    for (int i = 2; i < d->n && progression; i++)
        progression = d->values[i] - d->values[i - 1] == step;
    long long lo = (long long)d->values[0], hi = (long long)d->values[d->n - 1];
    if (progression && step == 1)
        return (size_t)snprintf(buf, n, "%lld..%lld", lo, hi);
    if (progression && d->n >= 3)
        return (size_t)snprintf(buf, n, "%lld..%lld:%lld", lo, hi, (long long)step);
    size_t len = 0;
    for (int i = 0; i < d->n; i++) {
        char item[32];
        snprintf(item, sizeof item, "%s%lld", i ? "," : "{", (long long)d->values[i]);
        size_t l = strlen(item);
        if (len + l < n)
            memcpy(buf + len, item, l + 1);
        len += l;
    }
    if (len + 1 < n)
        memcpy(buf + len, "}", 2);
    else if (n)
        buf[n - 1] = '\0';
    return len + 1;
}

/* Parses one (optionally signed) int64 at *s, advancing it. */
static int parse_int(const char **s, int64_t *out)
{
    const char *p = *s;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (!isdigit((unsigned char)*p))
        return -1;
    int64_t v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        int dgt = *p - '0';
        if (v > (INT64_MAX - dgt) / 10)
            return -1;
        v = v * 10 + dgt;
    }
    *out = neg ? -v : v;
    *s = p;
    return 0;
}

int dt_domain_parse(const char *text, dt_domain *d, dt_err *e)
{
    memset(d, 0, sizeof *d);
    const char *s = text;
    if (*s == '{') {
        int cap = 16, n = 0;
        int64_t *vals = malloc((size_t)cap * sizeof *vals);
        if (!vals)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        s++;
        for (;;) {
            if (n == cap) {
                if (cap >= DT_MAX_DOMAIN) {
                    free(vals);
                    return dt_errf(e, DT_EINVAL, "domain '%s' has too many values", text);
                }
                cap *= 2;
                int64_t *nv = realloc(vals, (size_t)cap * sizeof *vals);
                if (!nv) {
                    free(vals);
                    return dt_errf(e, DT_ENOMEM, "out of memory");
                }
                vals = nv;
            }
            if (parse_int(&s, &vals[n])) {
                free(vals);
                return dt_errf(e, DT_EINVAL, "expected an integer at offset %td of domain '%s'",
                               s - text, text);
            }
            n++;
            if (*s == ',') {
                s++;
                continue;
            }
            if (*s == '}' && s[1] == '\0')
                break;
            free(vals);
            return dt_errf(e, DT_EINVAL, "expected ',' or a final '}' at offset %td of domain '%s'",
                           s - text, text);
        }
        int rc = dt_domain_values(d, vals, NULL, n, e);
        free(vals);
        return rc ? dt_err_prefix(e, "domain '%s'", text) : 0;
    }
    int64_t lo, hi, step = 1;
    if (parse_int(&s, &lo) || strncmp(s, "..", 2) != 0)
        return dt_errf(e, DT_EINVAL, "domain '%s' is neither lo..hi, lo..hi:step nor {a,b,...}",
                       text);
    s += 2;
    if (parse_int(&s, &hi))
        return dt_errf(e, DT_EINVAL, "expected the end of the range at offset %td of '%s'",
                       s - text, text);
    if (*s == ':') {
        s++;
        if (parse_int(&s, &step))
            return dt_errf(e, DT_EINVAL, "expected a step at offset %td of '%s'", s - text, text);
    }
    if (*s != '\0')
        return dt_errf(e, DT_EINVAL, "unexpected '%c' at offset %td of domain '%s'", *s,
                       s - text, text);
    int rc = dt_domain_range(d, lo, hi, step, e);
    return rc ? dt_err_prefix(e, "domain '%s'", text) : 0;
}
