/* Job requests validated and stored, and stored jobs read back
 * (daemon/job_spec.h). */
#include "daemon/job_spec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_locate.h"
#include "common/json_util.h"
#include "shape/model.h"
#include "tuner/kset.h"
#include "tuner/model_tasks.h"
#include "tuner/tune.h"

static const char *const k_fields[] = {"model", "workload", "trials", "time", "strategy",
                                       "threads", "seed", "topk", "min_time_ms",
                                       "max_kernels", NULL};

typedef struct {
    const char *body;
    size_t len;
    dt_err *e;
} req_ctx;

/* "body:LINE:COL: FIELD: message", at the value of field (or its name). */
static int req_fail(const req_ctx *c, const char *field, int at_key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int req_fail(const req_ctx *c, const char *field, int at_key, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = 1, col = 1;
    dt_json_seg seg = {.key = field};
    dt_json_locate(c->body, c->len, &seg, field ? 1 : 0, at_key, &line, &col);
    return dt_errf(c->e, DT_EINVAL, "body:%d:%d: %s%s%s", line, col, field ? field : "",
                   field ? ": " : "", msg);
}

/* Byte offset of (line, col) in text; col counts UTF-8 characters. */
static size_t offset_of(const char *text, size_t len, int line, int col)
{
    size_t i = 0;
    for (int l = 1; l < line && i < len; i++)
        if (text[i] == '\n')
            l++;
    for (int c = 1; c < col && i < len; c++)
        for (i++; i < len && ((unsigned char)text[i] & 0xC0) == 0x80; i++)
            ;
    return i;
}

/* End (exclusive) of the JSON object or array starting at text[at]. */
static size_t value_end(const char *text, size_t len, size_t at)
{
    int depth = 0;
    for (size_t i = at; i < len; i++) {
        char ch = text[i];
        if (ch == '"') {
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if ((ch == '}' || ch == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return len;
}

/* The model spec parsed from the body itself, with everything around the
 * "model" value blanked out (newlines kept), so that the parser's line and
 * column are the body's. */
static int check_model(const req_ctx *c, int *nworkloads)
{
    int line, col;
    dt_json_seg seg = {.key = "model"};
    if (dt_json_locate(c->body, c->len, &seg, 1, 0, &line, &col))
        return req_fail(c, "model", 0, "cannot find the value");
    size_t a = offset_of(c->body, c->len, line, col), b = value_end(c->body, c->len, a);
    char *masked = malloc(c->len + 1);
    if (!masked)
        return dt_errf(c->e, DT_ENOMEM, "out of memory for a %zu-byte body", c->len);
    for (size_t i = 0; i < c->len; i++)
        masked[i] = (i >= a && i < b) || c->body[i] == '\n' ? c->body[i] : ' ';
    masked[c->len] = 0;
    dt_model *m = NULL;
    int rc = dt_model_parse(masked, c->len, "body", &m, c->e);
    free(masked);
    if (rc)
        return dt_err_prefix(c->e, "model spec");
    *nworkloads = m->nworkloads;
    dt_model_free(m);
    if (*nworkloads > DT_TUNE_MAX_TASKS)
        return req_fail(c, "model", 0, "%d workloads; at most %d per job", *nworkloads,
                        DT_TUNE_MAX_TASKS);
    return 0;
}

static int int_field(const req_ctx *c, json_t *root, const char *name, int64_t lo, int64_t hi,
                     int64_t *out, int *given)
{
    json_t *v = json_object_get(root, name);
    *given = v != NULL;
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return req_fail(c, name, 0, "must be an integer, not %s", dt_json_type_name(v));
    int64_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return req_fail(c, name, 0, "must be from %lld to %lld, not %lld", (long long)lo,
                        (long long)hi, (long long)x);
    *out = x;
    return 0;
}

/* "90", "90s", "25m", "2h" (decimals allowed) into seconds; -1 if malformed. */
static double parse_duration(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return -1;
    double mul = 1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mul = 60, end++;
    else if (*end == 'h')
        mul = 3600, end++;
    return *end ? -1 : v * mul;
}

/* max_kernels: "auto", "all" or 0..DT_KSET_MAX (0: all); -1 when not. */
static int max_kernels_value(const json_t *v, int *out)
{
    if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0)
        *out = DT_SELECT_AUTO;
    else if (json_is_string(v) && strcmp(json_string_value(v), "all") == 0)
        *out = DT_SELECT_ALL;
    else if (json_is_integer(v) && json_integer_value(v) >= 0 &&
             json_integer_value(v) <= DT_KSET_MAX)
        *out = (int)json_integer_value(v);
    else
        return -1;
    return 0;
}

static int max_kernels_field(const req_ctx *c, const json_t *v, int *out)
{
    if (max_kernels_value(v, out))
        return req_fail(c, "max_kernels", 0, "must be \"auto\", \"all\" or an integer "
                                             "0..%d (0: all)", DT_KSET_MAX);
    return 0;
}

/* As stored: "auto", "all" or K. */
static json_t *max_kernels_json(int k)
{
    return k == DT_SELECT_AUTO ? json_string("auto")
           : k == DT_SELECT_ALL ? json_string("all")
                                : json_integer(k);
}

int dt_job_request_parse(const char *body, size_t len, int cores, int default_threads,
                         char **spec_json, char **options_json, dt_err *e)
{
    *spec_json = *options_json = NULL;
    req_ctx c = {body, len, e};
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return dt_errf(e, DT_EINVAL, "body:%d:%d: malformed JSON: %s", jerr.line, jerr.column,
                       jerr.text);
    json_t *spec = NULL, *opts = NULL;
    int rc = 0, given;
    if (!json_is_object(root)) {
        rc = req_fail(&c, NULL, 0, "the body must be a JSON object, not %s",
                      dt_json_type_name(root));
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        int ok = 0;
        for (int i = 0; k_fields[i] && !ok; i++)
            ok = strcmp(k_fields[i], k) == 0;
        if (!ok) {
            rc = req_fail(&c, k, 1,
                          "unknown field (allowed: model, workload, trials, time, strategy, "
                          "threads, seed, topk, min_time_ms, max_kernels)");
            goto out;
        }
    }
    json_t *model = json_object_get(root, "model"), *wl = json_object_get(root, "workload");
    int nworkloads = 1;
    if (!model == !wl) {
        rc = req_fail(&c, NULL, 0, "give exactly one of \"model\" (a model spec) or "
                                   "\"workload\" (a workload key)");
        goto out;
    }
    if (model) {
        if (!json_is_object(model)) {
            rc = req_fail(&c, "model", 0, "must be a model spec object, not %s",
                          dt_json_type_name(model));
            goto out;
        }
        if ((rc = check_model(&c, &nworkloads)))
            goto out;
        spec = json_pack("{s:O}", "model", model);
    } else {
        if (!json_is_string(wl)) {
            rc = req_fail(&c, "workload", 0, "must be a workload key string, not %s",
                          dt_json_type_name(wl));
            goto out;
        }
        dt_workload *w = NULL;
        if ((rc = dt_workload_parse_key(json_string_value(wl), &w, e))) {
            char why[DT_ERR_MSG_MAX];
            snprintf(why, sizeof why, "%s", e->msg);
            rc = req_fail(&c, "workload", 0, "%s", why);
            goto out;
        }
        char key[DT_KEY_MAX];
        dt_workload_key(w, key, sizeof key);
        dt_workload_free(w);
        spec = json_pack("{s:s}", "workload", key);
    }

    int64_t trials = 0, threads = default_threads, seed = 1, topk = 2;
    if ((rc = int_field(&c, root, "trials", 1, DT_JOB_MAX_TRIALS, &trials, &given)) ||
        (rc = int_field(&c, root, "threads", 1, cores, &threads, &given)) ||
        (rc = int_field(&c, root, "seed", 0, INT64_MAX, &seed, &given)) ||
        (rc = int_field(&c, root, "topk", 0, 16, &topk, &given)))
        goto out;
    if (threads < 1 || threads > cores)
        threads = cores;
    double time_s = 0, min_time_ms = 5;
    if ((v = json_object_get(root, "time"))) {
        if (json_is_number(v))
            time_s = json_number_value(v);
        else if (json_is_string(v))
            time_s = parse_duration(json_string_value(v));
        else {
            rc = req_fail(&c, "time", 0, "must be seconds or a duration such as \"90s\", "
                                         "\"25m\", \"2h\", not %s", dt_json_type_name(v));
            goto out;
        }
        if (!(time_s > 0) || time_s > DT_JOB_MAX_TIME_S) {
            rc = req_fail(&c, "time", 0, "must be a duration above 0 and at most 30 days "
                                         "(seconds, or \"90s\", \"25m\", \"2h\")");
            goto out;
        }
    }
    if ((v = json_object_get(root, "min_time_ms"))) {
        if (!json_is_number(v)) {
            rc = req_fail(&c, "min_time_ms", 0, "must be a number, not %s",
                          dt_json_type_name(v));
            goto out;
        }
        min_time_ms = json_number_value(v);
        if (!(min_time_ms > 0) || min_time_ms > 10000) {
            char num[32];
            rc = req_fail(&c, "min_time_ms", 0, "must be above 0 and at most 10000, not %s",
                          dt_real_text(min_time_ms, num));
            goto out;
        }
    }
    int max_kernels = DT_SELECT_AUTO;
    if ((v = json_object_get(root, "max_kernels")) && (rc = max_kernels_field(&c, v, &max_kernels)))
        goto out;
    dt_strategy st = DT_STRATEGY_JOINT;
    if ((v = json_object_get(root, "strategy")) &&
        (!json_is_string(v) || dt_strategy_parse(json_string_value(v), &st))) {
        rc = req_fail(&c, "strategy", 0, "must be \"joint\", \"per-shape\" or \"random\"");
        goto out;
    }
    if (!trials && !(time_s > 0))
        trials = 300 * (int64_t)nworkloads;
    opts = json_object();
    json_object_set_new(opts, "trials", trials ? json_integer(trials) : json_null());
    json_object_set_new(opts, "time_s", time_s > 0 ? json_real(time_s) : json_null());
    json_object_set_new(opts, "strategy", json_string(dt_strategy_name(st)));
    json_object_set_new(opts, "threads", json_integer(threads));
    json_object_set_new(opts, "seed", json_integer(seed));
    json_object_set_new(opts, "topk", json_integer(topk));
    json_object_set_new(opts, "min_time_ms", json_real(min_time_ms));
    json_object_set_new(opts, "max_kernels", max_kernels_json(max_kernels));
    *spec_json = spec ? json_dumps(spec, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    *options_json = json_dumps(opts, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!*spec_json || !*options_json) {
        free(*spec_json);
        free(*options_json);
        *spec_json = *options_json = NULL;
        rc = dt_errf(e, DT_ENOMEM, "out of memory storing the job");
    }
out:
    json_decref(spec);
    json_decref(opts);
    json_decref(root);
    return rc;
}

int dt_job_params_load(const char *spec_json, const char *options_json, dt_job_params *p,
                       dt_err *e)
{
    memset(p, 0, sizeof *p);
    json_error_t jerr;
    json_t *spec = json_loads(spec_json ? spec_json : "", 0, &jerr);
    json_t *opts = json_loads(options_json ? options_json : "{}", 0, &jerr);
    int rc = 0;
    json_t *model = json_object_get(spec, "model"), *wl = json_object_get(spec, "workload");
    if (json_is_object(model)) {
        if (!(p->model_text = json_dumps(model, JSON_INDENT(1) | JSON_PRESERVE_ORDER)))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
    } else if (json_is_string(wl)) {
        snprintf(p->workload, sizeof p->workload, "%s", json_string_value(wl));
    } else {
        rc = dt_errf(e, DT_EINVAL, "stored job spec has neither a model nor a workload");
    }
    json_t *v;
    if (!rc && !json_is_object(opts))
        rc = dt_errf(e, DT_EINVAL, "stored job options are not a JSON object");
    if (!rc) {
        p->trials = json_integer_value(json_object_get(opts, "trials"));
        p->time_s = json_number_value(json_object_get(opts, "time_s"));
        p->threads = (int)json_integer_value(json_object_get(opts, "threads"));
        p->seed = (uint64_t)json_integer_value(json_object_get(opts, "seed"));
        p->topk = (v = json_object_get(opts, "topk")) ? (int)json_integer_value(v) : 2;
        p->min_time_ms = (v = json_object_get(opts, "min_time_ms")) ? json_number_value(v) : 5;
        p->max_kernels = DT_SELECT_ALL; /* jobs stored before the field: the default */
        if ((v = json_object_get(opts, "max_kernels")) && max_kernels_value(v, &p->max_kernels))
            rc = dt_errf(e, DT_EINVAL, "stored job options: max_kernels must be \"auto\", "
                                       "\"all\" or 0..%d", DT_KSET_MAX);
        v = json_object_get(opts, "strategy");
        if (rc)
            ;
        else if (v && dt_strategy_parse(json_string_value(v) ? json_string_value(v) : "", &p->strategy))
            rc = dt_errf(e, DT_EINVAL, "stored job options: unknown strategy");
        else if (p->threads < 1)
            rc = dt_errf(e, DT_EINVAL, "stored job options: threads must be >= 1");
        else if (p->trials <= 0 && !(p->time_s > 0))
            rc = dt_errf(e, DT_EINVAL, "stored job options: no trial or time budget");
    }
    json_decref(spec);
    json_decref(opts);
    if (rc)
        dt_job_params_free(p);
    return rc;
}

void dt_job_params_free(dt_job_params *p)
{
    free(p->model_text);
    p->model_text = NULL;
}

int dt_job_params_tasks(const dt_job_params *p, dt_task *t, int *n, dt_err *e)
{
    if (p->model_text)
        return dt_model_tasks_from_text(p->model_text, strlen(p->model_text), "job model", p->threads,
                                        t, n, e);
    return dt_model_tasks_from_key(p->workload, p->threads, t, n, e);
}

json_t *dt_job_spec_summary(const char *spec_json)
{
    json_error_t jerr;
    json_t *spec = json_loads(spec_json ? spec_json : "", 0, &jerr), *out = json_object();
    json_t *model = json_object_get(spec, "model"), *wl = json_object_get(spec, "workload");
    if (json_is_object(model)) {
        json_t *name = json_object_get(model, "name");
        json_object_set_new(out, "model", json_is_string(name) ? json_copy(name) : json_null());
        json_t *ops = json_object_get(model, "ops");
        json_object_set_new(out, "ops", json_integer((json_int_t)json_array_size(ops)));
    } else if (json_is_string(wl)) {
        json_object_set(out, "workload", wl);
    }
    json_decref(spec);
    return out;
}
