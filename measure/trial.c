/* Trials, batches and results: names, defaults, uids and the JSON forms
 * (measure/trial.h).  A batch arriving from the network is untrusted input:
 * dt_batch_from_json checks every type, size and range, re-parses the
 * workload key and the shapes, and re-derives each trial's dims. */
#include "measure/trial.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "microkernel/build.h"

/* Limits of what from_json accepts (documented in docs/measurement.md). */
#define MAX_THREADS 1024
#define MAX_WARMUP 1000000
#define MAX_REPEATS 1000000
#define MAX_MIN_TIME_S 3600.0
#define MAX_RUN_TIMEOUT_S 86400.0
#define MAX_ERROR_TEXT (64u << 10)

void dt_timing_default(dt_timing *t)
{
    memset(t, 0, sizeof *t);
    t->warmup = 1;
    t->min_time_s = 0.02;
    t->min_repeats = 3;
    t->max_repeats = 10000;
    t->flush_cache = 0;
    t->run_timeout_s = 20.0;
    t->seed = 1;
}

void dt_batch_free(dt_batch *b)
{
    if (!b)
        return;
    free(b->source);
    free(b->trials);
    b->source = NULL;
    b->trials = NULL;
    b->ntrials = 0;
}

void dt_trial_result_free(dt_trial_result *r)
{
    if (!r)
        return;
    free(r->error);
    r->error = NULL;
}

void dt_trial_uid_new(char out[DT_TRIAL_UID_LEN + 1])
{
    unsigned char raw[DT_TRIAL_UID_LEN / 2];
    if (sodium_init() < 0)
        abort(); /* libsodium cannot run at all: nothing random is possible */
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(out, DT_TRIAL_UID_LEN + 1, raw, sizeof raw);
}

/* 32 lower-case hex digits. */
static int uid_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return n == DT_TRIAL_UID_LEN;
}

/* The canonical text (canon[128]) and dims of the shape vals of w. */
static int shape_of_values(const dt_workload *w, const int64_t *vals, char canon[128],
                           int64_t *dims, dt_err *e)
{
    if (dt_shape_format(w, vals, canon, 128) >= 128)
        return dt_errf(e, DT_EINVAL, "shape '%.100s...' is too long (max 127 characters)", canon);
    for (int d = 0; d < DT_MAX_DIMS; d++)
        dims[d] = 0;
    int rc = dt_workload_dims(w, vals, dims, e);
    if (rc)
        return rc;
    for (int d = 0; d < w->op->ndims; d++)
        if (dims[d] < 1)
            return dt_errf(e, DT_EINVAL, "shape '%s': dim %s is %lld; every dim must be >= 1",
                           canon, w->op->dims[d], (long long)dims[d]);
    return w->op->check(dims, w->attrs, e);
}

/* Parses shape text against w into vals, canonical text and dims. */
static int parse_shape(const dt_workload *w, const char *shape, int64_t *vals, char canon[128],
                       int64_t *dims, dt_err *e)
{
    int in_domain;
    for (int v = 0; v < DT_MAX_VARS; v++)
        vals[v] = 0;
    int rc = dt_shape_parse(w, shape, vals, &in_domain, e);
    if (rc)
        return rc;
    return shape_of_values(w, vals, canon, dims, e);
}

int dt_trial_init_values(dt_trial *t, const dt_workload *w, const int64_t *vals, int threads,
                         dt_err *e)
{
    memset(t, 0, sizeof *t);
    if (threads < 1 || threads > MAX_THREADS)
        return dt_errf(e, DT_EINVAL, "threads must be 1..%d, not %d", MAX_THREADS, threads);
    for (int v = 0; v < w->nvars; v++)
        t->vals[v] = vals[v];
    int rc = shape_of_values(w, t->vals, t->shape, t->dims, e);
    if (rc)
        return rc;
    t->threads = threads;
    dt_trial_uid_new(t->uid);
    return 0;
}

int dt_trial_init(dt_trial *t, const dt_workload *w, const char *shape, int threads, dt_err *e)
{
    memset(t, 0, sizeof *t);
    if (threads < 1 || threads > MAX_THREADS)
        return dt_errf(e, DT_EINVAL, "threads must be 1..%d, not %d", MAX_THREADS, threads);
    if (!shape || strlen(shape) >= sizeof t->shape)
        return dt_errf(e, DT_EINVAL, "shape text missing or longer than %zu characters",
                       sizeof t->shape - 1);
    int64_t vals[DT_MAX_VARS] = {0};
    int in_domain;
    int rc = dt_shape_parse(w, shape, vals, &in_domain, e);
    if (rc)
        return rc;
    return dt_trial_init_values(t, w, vals, threads, e);
}

/* ---- JSON out ------------------------------------------------------------ */

/* Dims of the op named at the start of a workload key ("dense(..."). */
static int key_ndims(const char *key)
{
    char name[64];
    size_t n = strcspn(key, "(");
    if (n == 0 || n >= sizeof name)
        return -1;
    memcpy(name, key, n);
    name[n] = '\0';
    const dt_op_desc *op = dt_op_find(name);
    return op ? op->ndims : -1;
}

static json_t *seed_to_json(uint64_t seed)
{
    if (seed <= (uint64_t)INT64_MAX)
        return json_integer((json_int_t)seed);
    char s[32];
    snprintf(s, sizeof s, "%" PRIu64, seed);
    return json_string(s);
}

static json_t *timing_to_json(const dt_timing *t)
{
    return json_pack("{s:i, s:f, s:i, s:i, s:b, s:f, s:o}", "warmup", t->warmup, "min_time_s",
                     t->min_time_s, "min_repeats", t->min_repeats, "max_repeats", t->max_repeats,
                     "flush_cache", t->flush_cache != 0, "run_timeout_s", t->run_timeout_s,
                     "seed", seed_to_json(t->seed));
}

json_t *dt_batch_to_json(const dt_batch *b)
{
    int nd = key_ndims(b->workload);
    json_t *trials = json_array();
    if (!trials)
        return NULL;
    for (int i = 0; i < b->ntrials; i++) {
        const dt_trial *t = &b->trials[i];
        json_t *dims = json_array();
        for (int d = 0; dims && d < DT_MAX_DIMS; d++) {
            if (nd >= 0 ? d >= nd : t->dims[d] == 0)
                break;
            json_array_append_new(dims, json_integer((json_int_t)t->dims[d]));
        }
        json_t *jt = json_pack("{s:s, s:s, s:o*, s:i}", "uid", t->uid, "shape", t->shape, "dims",
                               dims, "threads", t->threads);
        if (!jt || json_array_append_new(trials, jt)) {
            json_decref(trials);
            return NULL;
        }
    }
    return json_pack("{s:s, s:s, s:o*, s:o}", "workload", b->workload, "source",
                     b->source ? b->source : "", "timing", timing_to_json(&b->timing), "trials",
                     trials);
}

json_t *dt_trial_result_to_json(const dt_trial_result *r)
{
    const char *st = dt_trial_status_name(r->status);
    json_t *j = json_pack("{s:s, s:s, s:i}", "uid", r->uid, "status", st ? st : "?", "repeats",
                          r->repeats);
    if (!j)
        return NULL;
    if (isfinite(r->min_ns))
        json_object_set_new(j, "min_ns", json_real(r->min_ns));
    if (isfinite(r->median_ns))
        json_object_set_new(j, "median_ns", json_real(r->median_ns));
    if (r->error)
        json_object_set_new(j, "error", json_string(r->error));
    return j;
}

/* ---- JSON in ------------------------------------------------------------- */

/* Refuses members of obj not named in allowed (NULL-terminated). */
static int only_keys(const json_t *obj, const char *const *allowed, const char *where, dt_err *e)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(key, allowed[i]);
        if (!ok)
            return dt_errf(e, DT_EINVAL, "%s: unknown member '%.64s'", where, key);
    }
    return 0;
}

/* A string member without NUL bytes of at most max bytes. */
static int get_string(const json_t *obj, const char *name, size_t max, const char *where,
                      const char **out, dt_err *e)
{
    json_t *v = json_object_get(obj, name);
    if (!json_is_string(v))
        return dt_errf(e, DT_EINVAL, "%s: '%s' must be a string", where, name);
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    if (len > max)
        return dt_errf(e, DT_EINVAL, "%s: '%s' is %zu bytes, over the limit of %zu", where, name,
                       len, max);
    if (strlen(s) != len)
        return dt_errf(e, DT_EINVAL, "%s: '%s' contains a NUL character", where, name);
    *out = s;
    return 0;
}

/* An integer member in [lo, hi]; absent members keep *out when optional. */
static int get_int(const json_t *obj, const char *name, long long lo, long long hi, int optional,
                   const char *where, long long *out, dt_err *e)
{
    json_t *v = json_object_get(obj, name);
    if (!v && optional)
        return 0;
    if (!json_is_integer(v))
        return dt_errf(e, DT_EINVAL, "%s: '%s' must be an integer", where, name);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return dt_errf(e, DT_EINVAL, "%s: '%s' = %lld is out of range %lld..%lld", where, name, x,
                       lo, hi);
    *out = x;
    return 0;
}

/* A finite number member in [lo, hi] (lo excluded when lo_open). */
static int get_num(const json_t *obj, const char *name, double lo, int lo_open, double hi,
                   const char *where, double *out, dt_err *e)
{
    json_t *v = json_object_get(obj, name);
    if (!v)
        return 0; /* optional: keeps the default */
    if (!json_is_number(v))
        return dt_errf(e, DT_EINVAL, "%s: '%s' must be a number", where, name);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return dt_errf(e, DT_EINVAL, "%s: '%s' = %g is out of range %s%g..%g", where, name, x,
                       lo_open ? "(" : "", lo, hi);
    *out = x;
    return 0;
}

static int timing_from_json(const json_t *j, dt_timing *t, dt_err *e)
{
    static const char *const keys[] = {"warmup",        "min_time_s", "min_repeats",
                                       "max_repeats",   "flush_cache", "run_timeout_s",
                                       "seed",          NULL};
    const char *where = "batch timing";
    dt_timing_default(t);
    if (!json_is_object(j))
        return dt_errf(e, DT_EINVAL, "batch: 'timing' must be an object");
    int rc = only_keys(j, keys, where, e);
    long long v;
    if (rc)
        return rc;
    v = t->warmup;
    if ((rc = get_int(j, "warmup", 0, MAX_WARMUP, 1, where, &v, e)))
        return rc;
    t->warmup = (int)v;
    v = t->min_repeats;
    if ((rc = get_int(j, "min_repeats", 1, MAX_REPEATS, 1, where, &v, e)))
        return rc;
    t->min_repeats = (int)v;
    v = t->max_repeats;
    if ((rc = get_int(j, "max_repeats", 1, MAX_REPEATS, 1, where, &v, e)))
        return rc;
    t->max_repeats = (int)v;
    if (t->max_repeats < t->min_repeats)
        return dt_errf(e, DT_EINVAL, "%s: max_repeats %d is below min_repeats %d", where,
                       t->max_repeats, t->min_repeats);
    if ((rc = get_num(j, "min_time_s", 0, 0, MAX_MIN_TIME_S, where, &t->min_time_s, e)) ||
        (rc = get_num(j, "run_timeout_s", 0, 1, MAX_RUN_TIMEOUT_S, where, &t->run_timeout_s, e)))
        return rc;
    json_t *fc = json_object_get(j, "flush_cache");
    if (fc) {
        if (!json_is_boolean(fc))
            return dt_errf(e, DT_EINVAL, "%s: 'flush_cache' must be true or false", where);
        t->flush_cache = json_is_true(fc);
    }
    json_t *sd = json_object_get(j, "seed");
    if (json_is_integer(sd)) {
        if (json_integer_value(sd) < 0)
            return dt_errf(e, DT_EINVAL, "%s: 'seed' must not be negative", where);
        t->seed = (uint64_t)json_integer_value(sd);
    } else if (json_is_string(sd)) {
        /* seeds above INT64_MAX travel as decimal strings */
        const char *s = json_string_value(sd);
        char *end;
        errno = 0;
        unsigned long long x = strtoull(s, &end, 10);
        if (!isdigit((unsigned char)s[0]) || *end || errno || json_string_length(sd) > 20)
            return dt_errf(e, DT_EINVAL, "%s: 'seed' must be an unsigned 64-bit integer", where);
        t->seed = (uint64_t)x;
    } else if (sd) {
        return dt_errf(e, DT_EINVAL, "%s: 'seed' must be an integer", where);
    }
    return 0;
}

static int trial_from_json(const json_t *j, const dt_workload *w, int index, dt_trial *t,
                           dt_err *e)
{
    static const char *const keys[] = {"uid", "shape", "dims", "threads", NULL};
    char where[48];
    snprintf(where, sizeof where, "batch trials[%d]", index);
    memset(t, 0, sizeof *t);
    if (!json_is_object(j))
        return dt_errf(e, DT_EINVAL, "%s must be an object", where);
    int rc = only_keys(j, keys, where, e);
    const char *uid, *shape;
    if (rc || (rc = get_string(j, "uid", DT_TRIAL_UID_LEN, where, &uid, e)))
        return rc;
    if (!uid_valid(uid))
        return dt_errf(e, DT_EINVAL, "%s: uid '%.40s' is not %d lower-case hex digits", where,
                       uid, DT_TRIAL_UID_LEN);
    memcpy(t->uid, uid, DT_TRIAL_UID_LEN + 1);
    if ((rc = get_string(j, "shape", sizeof t->shape - 1, where, &shape, e)))
        return rc;
    long long th = 0;
    if ((rc = get_int(j, "threads", 1, MAX_THREADS, 0, where, &th, e)))
        return rc;
    t->threads = (int)th;
    json_t *dims = json_object_get(j, "dims");
    if (!json_is_array(dims))
        return dt_errf(e, DT_EINVAL, "%s: 'dims' must be an array", where);
    int nd = w->op->ndims;
    if ((int)json_array_size(dims) != nd)
        return dt_errf(e, DT_EINVAL, "%s: 'dims' has %zu values; %s has %d dims", where,
                       json_array_size(dims), w->op->name, nd);
    int64_t given[DT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        json_t *v = json_array_get(dims, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return dt_errf(e, DT_EINVAL, "%s: dim %s must be an integer >= 1", where,
                           w->op->dims[d]);
        given[d] = json_integer_value(v);
    }
    if ((rc = parse_shape(w, shape, t->vals, t->shape, t->dims, e)))
        return dt_err_prefix(e, "%s", where);
    for (int d = 0; d < nd; d++)
        if (given[d] != t->dims[d])
            return dt_errf(e, DT_EINVAL,
                           "%s: dim %s is %lld but shape '%s' gives %lld for this workload",
                           where, w->op->dims[d], (long long)given[d], t->shape,
                           (long long)t->dims[d]);
    return 0;
}

static int cmp_uid(const void *a, const void *b)
{
    return strcmp(((const dt_trial *)a)->uid, ((const dt_trial *)b)->uid);
}

int dt_batch_from_json(const json_t *j, dt_batch *out, dt_err *e)
{
    static const char *const keys[] = {"workload", "source", "timing", "trials", NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(j))
        return dt_errf(e, DT_EINVAL, "batch must be a JSON object");
    int rc = only_keys(j, keys, "batch", e);
    const char *key, *source;
    if (rc || (rc = get_string(j, "workload", DT_KEY_MAX - 1, "batch", &key, e)) ||
        (rc = get_string(j, "source", DT_BATCH_MAX_SOURCE, "batch", &source, e)))
        return rc;
    json_t *trials = json_object_get(j, "trials");
    if (!json_is_array(trials))
        return dt_errf(e, DT_EINVAL, "batch: 'trials' must be an array");
    size_t n = json_array_size(trials);
    if (n < 1 || n > DT_BATCH_MAX_TRIALS)
        return dt_errf(e, DT_EINVAL, "batch: %zu trials; a batch has 1..%d", n,
                       DT_BATCH_MAX_TRIALS);
    dt_timing timing;
    if ((rc = timing_from_json(json_object_get(j, "timing"), &timing, e)))
        return rc;
    dt_workload *w = NULL;
    if ((rc = dt_workload_parse_key(key, &w, e)))
        return dt_err_prefix(e, "batch");
    if (dt_workload_key(w, out->workload, sizeof out->workload) >= sizeof out->workload) {
        dt_workload_free(w);
        return dt_errf(e, DT_EINVAL, "batch: canonical workload key is too long");
    }
    out->timing = timing;
    out->source = strdup(source);
    out->trials = calloc(n, sizeof *out->trials);
    dt_trial *sorted = malloc(n * sizeof *sorted);
    if (!out->source || !out->trials || !sorted) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory reading a batch");
        goto fail;
    }
    out->ntrials = (int)n;
    for (size_t i = 0; i < n; i++)
        if ((rc = trial_from_json(json_array_get(trials, i), w, (int)i, &out->trials[i], e)))
            goto fail;
    memcpy(sorted, out->trials, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_uid);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(sorted[i].uid, sorted[i - 1].uid)) {
            rc = dt_errf(e, DT_EINVAL, "batch: uid %s is given to two trials", sorted[i].uid);
            goto fail;
        }
    free(sorted);
    dt_workload_free(w);
    return 0;
fail:
    free(sorted);
    dt_workload_free(w);
    dt_batch_free(out);
    return rc;
}

int dt_trial_result_from_json(const json_t *j, dt_trial_result *out, dt_err *e)
{
    static const char *const keys[] = {"uid", "status", "min_ns", "median_ns", "repeats", "error",
                                       NULL};
    const char *where = "trial result";
    memset(out, 0, sizeof *out);
    out->min_ns = out->median_ns = NAN;
    if (!json_is_object(j))
        return dt_errf(e, DT_EINVAL, "trial result must be a JSON object");
    int rc = only_keys(j, keys, where, e);
    const char *uid, *status;
    if (rc || (rc = get_string(j, "uid", DT_TRIAL_UID_LEN, where, &uid, e)))
        return rc;
    if (!uid_valid(uid))
        return dt_errf(e, DT_EINVAL, "%s: uid '%.40s' is not %d lower-case hex digits", where, uid,
                       DT_TRIAL_UID_LEN);
    if ((rc = get_string(j, "status", 32, where, &status, e)))
        return rc;
    if (dt_trial_status_parse(status, &out->status))
        return dt_errf(e, DT_EINVAL, "%s: unknown status '%s'", where, status);
    long long reps = 0;
    if ((rc = get_int(j, "repeats", 0, MAX_REPEATS, 1, where, &reps, e)))
        return rc;
    out->repeats = (int)reps;
    json_t *jmin = json_object_get(j, "min_ns"), *jmed = json_object_get(j, "median_ns");
    json_t *jerr = json_object_get(j, "error");
    if (out->status == DT_TRIAL_OK) {
        if (!json_is_number(jmin) || !json_is_number(jmed))
            return dt_errf(e, DT_EINVAL, "%s: status ok needs numbers min_ns and median_ns",
                           where);
        double mn = json_number_value(jmin), md = json_number_value(jmed);
        if (!isfinite(mn) || !isfinite(md) || mn < 0 || md < mn || md > 1e15)
            return dt_errf(e, DT_EINVAL,
                           "%s: times must satisfy 0 <= min_ns <= median_ns (got %g, %g)", where,
                           mn, md);
        if (out->repeats < 1)
            return dt_errf(e, DT_EINVAL, "%s: status ok needs repeats >= 1", where);
        if (jerr && !json_is_null(jerr))
            return dt_errf(e, DT_EINVAL, "%s: status ok cannot carry an error", where);
        out->min_ns = mn;
        out->median_ns = md;
    } else {
        if ((jmin && !json_is_null(jmin)) || (jmed && !json_is_null(jmed)))
            return dt_errf(e, DT_EINVAL, "%s: status %s has no times", where, status);
        const char *err;
        if ((rc = get_string(j, "error", MAX_ERROR_TEXT, where, &err, e)))
            return rc;
        if (!*err)
            return dt_errf(e, DT_EINVAL, "%s: status %s needs a non-empty error", where, status);
        if (!(out->error = strdup(err)))
            return dt_errf(e, DT_ENOMEM, "out of memory reading a trial result");
    }
    memcpy(out->uid, uid, DT_TRIAL_UID_LEN + 1);
    return 0;
}

/* ---- what is physically possible ------------------------------------------- */

/* Per core per cycle, the widest unit of any CPU for the dtype's arithmetic
 * (a multiply-add counted 2, as op->flops counts): the dtype's row
 * (dtypes/dtype.c says why each value); an unknown dtype gets the largest.
 * No back-end of this project reaches them, and DT_PEAK_SAFETY (8×) on top
 * leaves room for a matrix unit doing f32 at up to 512 per cycle (AMX-TF32
 * style, Arm SME) before anything honest could come near the bound. */
double dt_peak_ops_per_cycle(dt_dtype d)
{
    const dt_dtype_row *r = dt_dtype_info(d);
    return r ? r->ops_per_cycle : dt_dtype_ops_per_cycle_max();
}

/* The lower bound on a trial's time.  Why it never rejects an honest time:
 * a trial does at least its useful operations (local padding only adds
 * work), on at most `cores` cores (threads of the trial or cores of the
 * target, the larger), each at most DT_PEAK_MAX_CLOCK_HZ (no shipping CPU
 * exceeds ~6.2 GHz even in single-core boost) and at most
 * dt_peak_ops_per_cycle(d) operations per cycle; DT_PEAK_SAFETY multiplies
 * the resulting peak by 8 more.  On a 2-core AMX machine a bf16 trial is
 * refused only when it claims over 2 × 10 GHz × 1024 × 8 = 164 TFLOP/s,
 * over 20× what AMX peaks at there (2 × ~3.5 GHz × 1024 = 7 TFLOP/s); an f32
 * trial over 10 TFLOP/s, 20× AVX-512's peak.  And 1e-12 ns is refused for
 * any trial: 2 operations of int8 on 1024 cores still take over 1e-8 ns. */
double dt_trial_min_possible_ns(double flops, dt_dtype d, int cores)
{
    if (!(flops > 0) || !isfinite(flops))
        return 0;
    if (cores < 1)
        cores = 1;
    double ops_per_s = (double)cores * DT_PEAK_MAX_CLOCK_HZ * dt_peak_ops_per_cycle(d) *
                       DT_PEAK_SAFETY;
    return flops / ops_per_s * 1e9;
}

int dt_time_possible(double min_ns, double flops, dt_dtype d, int cores)
{
    return isfinite(min_ns) && min_ns > 0 && min_ns >= dt_trial_min_possible_ns(flops, d, cores);
}

int dt_trial_result_possible(const dt_workload *w, const dt_trial *t, const dt_trial_result *r,
                             int cores, char *why, size_t n)
{
    if (r->status != DT_TRIAL_OK)
        return 1;
    if (!isfinite(r->min_ns) || !isfinite(r->median_ns) || !(r->min_ns > 0)) {
        snprintf(why, n, "ok with min_ns %g, median_ns %g (not a positive finite time)",
                 r->min_ns, r->median_ns);
        return 0;
    }
    if (r->min_ns > r->median_ns) {
        snprintf(why, n, "ok with min_ns %g above median_ns %g", r->min_ns, r->median_ns);
        return 0;
    }
    double flops = w && w->op && w->op->flops ? w->op->flops(t->dims, w->attrs) : 0;
    int c = t->threads > cores ? t->threads : cores;
    /* no workload: no dtype, so the most generous ceiling of any */
    double bound = dt_trial_min_possible_ns(flops, w ? w->dtype : DT_DTYPE_COUNT, c);
    if (r->min_ns < bound) {
        snprintf(why, n,
                 "ok with min_ns %g for %.4g operations of %s on %d core%s: at least %.3g ns on "
                 "any CPU (%.3g TFLOP/s claimed)",
                 r->min_ns, flops, w ? dt_dtype_name(w->dtype) : "?", c, c == 1 ? "" : "s",
                 bound, flops / r->min_ns * 1e-3);
        return 0;
    }
    return 1;
}

double dt_batch_deadline_s(const dt_batch *b)
{
    double d = DT_BUILD_DEFAULT_TIMEOUT + DT_BATCH_DEADLINE_SLACK_S;
    double per = b->timing.run_timeout_s > 0 ? b->timing.run_timeout_s : 20.0;
    d += (double)(b->ntrials > 0 ? b->ntrials : 0) * (per + 1.0);
    return d > DT_BATCH_DEADLINE_FLOOR_S ? d : DT_BATCH_DEADLINE_FLOOR_S;
}
