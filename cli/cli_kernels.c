/* Choosing kernels and shapes on the command line: shared by `dtune bench`
 * and `dtune measure` (--kernel FILE.json | --sample N, --shapes DOMAIN). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/file.h"

int dt_cli_kernels(const char *path, int sample, uint64_t seed, int threads, const dt_target *t,
                   int dtype, dt_annotation **out, int *n, dt_err *e)
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
        for (int i = 0; i < count; i++) {
            int rc = dt_annotation_sample_dtype(&rng, &tt, dtype, -1, threads, &(*out)[i], e);
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

int dt_cli_shapes(const dt_workload *w, const char *text, int max, int64_t **out, int *n,
                  dt_err *e)
{
    *out = NULL;
    *n = 0;
    int nv = w->nvars ? w->nvars : 1;
    if (text) {
        if (w->nvars != 1)
            return dt_errf(e, DT_EINVAL,
                           "--shapes needs a workload with one variable; this one has %d (its "
                           "own shape set is used without --shapes)",
                           w->nvars);
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
