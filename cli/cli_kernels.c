/* Choosing kernels and shapes on the command line: shared by `dtune bench`
 * and `dtune measure` (--kernel FILE.json | --sample N, --shapes DOMAIN). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/file.h"
#include "microkernel/mk_op.h"

int dt_cli_kernels(const char *path, int sample, uint64_t seed, int threads, const dt_target *t,
                   const dt_workload *w, dt_annotation **out, int *n, dt_err *e)
{
    *out = NULL;
    *n = 0;
    if (!path) {
        int count = sample > 0 ? sample : 16;
        *out = calloc((size_t)count, sizeof **out);
        if (!*out)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        dt_rng rng;
        dt_rng_seed(&rng, seed);
        /* the run's thread count for every sample: one per sample would mix them */
        dt_target tt = *t;
        if (tt.cores < threads)
            tt.cores = threads;
        int own = -1;
        for (int s = DT_SKETCH_COUNT; s < DT_SKETCH_ALL; s++)
            if (dt_mk_op_offers(w->op, w->dtype, w->attrs, (dt_sketch_kind)s))
                own = s;
        for (int i = 0; i < count; i++) {
            int rc = dt_annotation_sample_dtype(&rng, &tt, (int)w->dtype,
                                                own >= 0 && i % 3 == 2 ? own : -1, threads,
                                                &(*out)[i], e);
            if (rc) {
                free(*out);
                *out = NULL;
                return rc;
            }
        }
        *n = count;
        return 0;
    }
    char *text;
    size_t len;
    int rc = dt_read_file(path, 64u << 20, &text, &len, e);
    if (rc == DT_ENOTFOUND) /* a missing kernel file is bad input: exit 2 */
        return e->code = DT_EINVAL;
    if (rc)
        return rc;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root)
        return dt_errf(e, DT_EINVAL, "%s:%d:%d: malformed JSON: %s", path, jerr.line,
                       jerr.column, jerr.text);
    size_t count = json_is_array(root) ? json_array_size(root) : 1;
    *out = calloc(count ? count : 1, sizeof **out);
    for (size_t i = 0; !rc && i < count; i++) {
        json_t *j = json_is_array(root) ? json_array_get(root, i) : root;
        if ((rc = dt_annotation_from_json(j, &(*out)[i], e)) ||
            (rc = dt_annotation_validate(&(*out)[i], t, e)))
            dt_err_prefix(e, "%s: kernel %zu", path, i);
        else
            (*n)++;
    }
    json_decref(root);
    if (!rc && *n == 0)
        rc = dt_errf(e, DT_EINVAL, "%s holds no annotation", path);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* --shapes "a=D1;b=D2" of a workload with several variables: every
 * variable once, the grid of their domains (the first variable the most
 * significant), each shape as dt_shape_parse takes it. */
static int grid_shapes(const dt_workload *w, const char *text, int max, int64_t **out, int *n,
                       dt_err *e)
{
    dt_domain d[DT_MAX_VARS];
    int have[DT_MAX_VARS] = {0}, rc = 0;
    int64_t total = 1;
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (char *part = strtok_r(copy, ";", &save); part && !rc;
         part = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(part, '=');
        int v = -1;
        if (eq) {
            *eq = 0;
            for (int i = 0; i < w->nvars; i++)
                if (strcmp(w->vars[i].name, part) == 0)
                    v = i;
        }
        if (v < 0 || have[v])
            rc = dt_errf(e, DT_EINVAL, "--shapes: '%s' is not one of the variables (%s%s%s) "
                         "given once as NAME=DOMAIN", part, w->vars[0].name,
                         w->nvars > 1 ? ", " : "", w->nvars > 1 ? w->vars[1].name : "");
        else if ((rc = dt_domain_parse(eq + 1, &d[v], e)) == 0)
            have[v] = 1;
        else
            dt_err_prefix(e, "--shapes %s", part);
    }
    free(copy);
    for (int v = 0; !rc && v < w->nvars; v++) {
        if (!have[v])
            rc = dt_errf(e, DT_EINVAL, "--shapes: no domain for variable %s (give each as "
                         "NAME=DOMAIN, separated by ';')", w->vars[v].name);
        else if ((total *= d[v].n) > max)
            rc = dt_errf(e, DT_EINVAL, "--shapes has over %d shapes", max);
    }
    if (!rc && !(*out = malloc((size_t)(total * w->nvars) * sizeof **out)))
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    for (int64_t i = 0; !rc && i < total; i++) {
        char shape[512];
        size_t len = 0;
        shape[0] = 0;
        for (int v = 0; v < w->nvars; v++) { /* the last variable varies fastest */
            int64_t stride = 1;
            for (int u = v + 1; u < w->nvars; u++)
                stride *= d[u].n;
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%s=%lld", v ? "," : "",
                                    w->vars[v].name,
                                    (long long)d[v].values[i / stride % d[v].n]);
        }
        int inside;
        if ((rc = dt_shape_parse(w, shape, *out + i * w->nvars, &inside, e)))
            dt_err_prefix(e, "--shapes");
    }
    for (int v = 0; v < w->nvars; v++)
        if (have[v])
            dt_domain_free(&d[v]);
    if (rc) {
        free(*out);
        *out = NULL;
        return rc;
    }
    *n = (int)total;
    return 0;
}

int dt_cli_shapes(const dt_workload *w, const char *text, int max, int64_t **out, int *n,
                  dt_err *e)
{
    *out = NULL;
    *n = 0;
    int nv = w->nvars ? w->nvars : 1;
    if (text && w->nvars > 1)
        return grid_shapes(w, text, max, out, n, e);
    if (text) {
        if (w->nvars != 1)
            return dt_errf(e, DT_EINVAL,
                           "--shapes needs a workload with variables; this one has none (its "
                           "one shape is used without --shapes)");
        dt_domain d;
        int rc = dt_domain_parse(text, &d, e);
        if (rc)
            return dt_err_prefix(e, "--shapes");
        if (d.n > max) {
            dt_domain_free(&d);
            return dt_errf(e, DT_EINVAL, "--shapes has %d values; at most %d", d.n, max);
        }
        *out = malloc((size_t)d.n * sizeof **out);
        for (int i = 0; *out && i < d.n; i++) {
            char shape[128];
            int64_t v;
            int in;
            snprintf(shape, sizeof shape, "%s=%lld", w->vars[0].name, (long long)d.values[i]);
            if ((rc = dt_shape_parse(w, shape, &v, &in, e))) {
                free(*out);
                *out = NULL;
                dt_domain_free(&d);
                return dt_err_prefix(e, "--shapes");
            }
            (*out)[i] = v;
        }
        *n = d.n;
        dt_domain_free(&d);
        return *out ? 0 : dt_errf(e, DT_ENOMEM, "out of memory");
    }
    int64_t nshapes = dt_workload_nshapes(w);
    if (nshapes > max)
        return dt_errf(e, DT_EINVAL, "the workload has %lld shapes (at most %d here); pick "
                                     "fewer with --shapes",
                       (long long)nshapes, max);
    *out = malloc((size_t)(nshapes * nv) * sizeof **out);
    if (!*out)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int64_t i = 0; i < nshapes; i++)
        dt_workload_shape_at(w, i, *out + i * w->nvars, NULL);
    *n = (int)nshapes;
    return 0;
}
