/* Routing, shared helpers, and the small routes: /healthz, /metrics,
 * /v1/workloads (daemon/api.h). */
#include "daemon/api.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"
#include "daemon/api_internal.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- helpers -------------------------------------------------------------------- */

void dt_api_json(dt_http_response *res, int status, json_t *body)
{
    char *s = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (!s) {
        static const char oom[] = "{\"error\":{\"status\":500,\"message\":\"out of memory\"}}";
        res->status = 500;
        res->body = strdup(oom);
    } else {
        res->status = status;
        res->body = s;
    }
    res->body_len = res->body ? strlen(res->body) : 0;
    res->content_type = "application/json";
}

void dt_api_error(dt_http_response *res, int status, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dt_api_json(res, status, json_pack("{s:{s:i, s:s}}", "error", "status", status, "message", msg));
}

int dt_api_status_of(int code)
{
    switch (code) {
    case DT_EINVAL:
    case DT_EOVERFLOW: return 400;
    case DT_ENOTFOUND: return 404;
    case DT_EBUSY: return 503;
    case DT_EUNSUPPORTED: return 422;
    default: return 500;
    }
}

int64_t dt_api_parse_id(const char *text)
{
    if (!text || !*text || strlen(text) > 18)
        return 0;
    int64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return 0;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int dt_api_decode(const char *s, size_t len, char *buf, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            int h = i + 2 < len ? hexval(s[i + 1]) : -1, l = i + 2 < len ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                return -1;
            ch = h * 16 + l;
            i += 2;
        }
        if (o + 1 >= n)
            return -1;
        buf[o++] = (char)ch;
    }
    buf[o] = 0;
    return 0;
}

int dt_api_query_param(const char *query, const char *name, char *buf, size_t n)
{
    size_t nl = strlen(name);
    for (const char *p = query ? query : ""; *p;) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=')
            return dt_api_decode(p + nl + 1, len - nl - 1, buf, n) ? -1 : 1;
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

/* ---- small routes ----------------------------------------------------------------- */

static void healthz(dt_api *a, dt_http_response *res)
{
    int v = dt_db_schema_version(a->db);
    if (v < 0) {
        dt_api_error(res, 503, "database %s cannot be read: %s", dt_db_path(a->db),
                     dt_strerror(v));
        return;
    }
    int64_t running = a->jobs ? dt_jobs_running(a->jobs) : 0;
    dt_api_json(res, 200,
                json_pack("{s:s, s:s, s:s, s:s, s:i, s:f, s:o}", "status", "ok", "version",
                          DTUNE_VERSION, "target", a->target_key, "db", dt_db_path(a->db),
                          "schema_version", v, "uptime_s", mono_s() - a->started_s,
                          "running_job", running ? json_integer(running) : json_null()));
}

static void metrics(dt_api *a, dt_http_response *res)
{
    dt_metrics_gauges g = {.uptime_s = mono_s() - a->started_s, .schedule_tables_loaded = -1};
    dt_db_job *jobs = NULL;
    size_t n = 0;
    if (dt_db_job_list(a->db, DT_JOB_MASK_ALL, &jobs, &n, NULL) == 0) {
        for (size_t i = 0; i < n; i++)
            if (jobs[i].state >= 0 && jobs[i].state < DT_JOB_N_STATES)
                g.jobs[jobs[i].state]++;
        dt_db_jobs_free(jobs, n);
    } else {
        for (int s = 0; s < DT_JOB_N_STATES; s++)
            g.jobs[s] = -1;
    }
    g.running_job = a->jobs ? dt_jobs_running(a->jobs) : 0;
    if (a->http_stats) {
        dt_http_stats st = {0};
        a->http_stats(a->http_stats_ud, &st);
        g.connections_total = st.connections_total;
        g.connections_open = st.connections_open;
        g.requests_total = st.requests_total;
        g.rejected_total = st.rejected_total;
    }
    if (a->cache) {
        uint64_t loads = 0;
        dt_dispatch_cache_stats(a->cache, &loads, NULL);
        g.schedule_tables_loaded = (int64_t)loads;
    }
    dt_strbuf sb;
    dt_sb_init(&sb);
    if (a->metrics)
        dt_metrics_render(a->metrics, &g, &sb);
    char *text = dt_sb_take(&sb);
    if (!text) {
        dt_api_error(res, 500, "out of memory rendering metrics");
        return;
    }
    res->status = 200;
    res->content_type = "text/plain; version=0.0.4; charset=utf-8";
    res->body = text;
    res->body_len = strlen(text);
}

static void workloads(dt_api *a, dt_http_response *res)
{
    dt_err e;
    dt_db_workload *ws = NULL;
    size_t n = 0;
    int rc = dt_db_workload_list(a->db, &ws, &n, &e);
    if (rc) {
        dt_api_error(res, dt_api_status_of(rc) == 503 ? 503 : 500, "%s", e.msg);
        return;
    }
    dt_db_target t;
    int64_t tid = 0;
    if (dt_db_target_get(a->db, a->target_key, &t, NULL) == 0) {
        tid = t.id;
        dt_db_target_free(&t);
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_error_t jerr;
        json_t *ss = json_loads(ws[i].shape_set, 0, &jerr), *threads = json_array();
        dt_db_schedule *rows = NULL;
        size_t nr = 0;
        if (tid && dt_db_schedule_list(a->db, ws[i].id, tid, 0, &rows, &nr, NULL) == 0) {
            int last = 0;
            for (size_t r = 0; r < nr; r++)
                if (rows[r].threads != last)
                    json_array_append_new(threads, json_integer(last = rows[r].threads));
            dt_db_schedules_free(rows, nr);
        }
        json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:o, s:o}", "id",
                                             (json_int_t)ws[i].id, "key", ws[i].key, "op",
                                             ws[i].op, "shape_set", ss ? ss : json_null(),
                                             "scheduled_threads", threads));
    }
    dt_db_workloads_free(ws, n);
    dt_api_json(res, 200, json_pack("{s:s, s:o}", "target", a->target_key, "workloads", arr));
}

/* ---- routing ----------------------------------------------------------------------- */

static int method_is(const dt_http_request *req, const char *m)
{
    return strcmp(req->method, m) == 0;
}

static void not_allowed(const dt_http_request *req, dt_http_response *res, const char *allowed)
{
    dt_api_error(res, 405, "method %s is not allowed on %s (allowed: %s)", req->method, req->path,
                 allowed);
}

/* Routes req; returns the route for the metrics. */
static dt_route route(dt_api *a, const dt_http_request *req, dt_http_response *res)
{
    const char *p = req->path;
    if (strcmp(p, "/healthz") == 0) {
        if (method_is(req, "GET"))
            healthz(a, res);
        else
            not_allowed(req, res, "GET");
        return DT_ROUTE_HEALTHZ;
    }
    if (strcmp(p, "/metrics") == 0) {
        if (method_is(req, "GET"))
            metrics(a, res);
        else
            not_allowed(req, res, "GET");
        return DT_ROUTE_METRICS;
    }
    if (strcmp(p, "/v1/jobs") == 0) {
        if (method_is(req, "GET"))
            dt_api_jobs_list(a, req, res);
        else if (method_is(req, "POST"))
            dt_api_jobs_create(a, req, res);
        else
            not_allowed(req, res, "GET, POST");
        return DT_ROUTE_JOBS;
    }
    if (strncmp(p, "/v1/jobs/", 9) == 0 && p[9] && !strchr(p + 9, '/')) {
        int64_t id = dt_api_parse_id(p + 9);
        if (!method_is(req, "GET") && !method_is(req, "DELETE"))
            not_allowed(req, res, "GET, DELETE");
        else if (id <= 0)
            dt_api_error(res, 400, "job id must be a positive integer, not '%s'", p + 9);
        else if (method_is(req, "GET"))
            dt_api_job_get(a, id, res);
        else
            dt_api_job_cancel(a, id, res);
        return DT_ROUTE_JOB;
    }
    if (strcmp(p, "/v1/schedules") == 0) {
        if (method_is(req, "GET"))
            dt_api_schedules(a, req, res);
        else
            not_allowed(req, res, "GET");
        return DT_ROUTE_SCHEDULES;
    }
    size_t pl = strlen(p);
    static const char ksfx[] = "/source";
    if (strncmp(p, "/v1/kernels/", 12) == 0 && pl > 12 + strlen(ksfx) &&
        strcmp(p + pl - strlen(ksfx), ksfx) == 0) {
        char idtext[32];
        size_t il = pl - 12 - strlen(ksfx);
        if (il < sizeof idtext && !memchr(p + 12, '/', il)) {
            memcpy(idtext, p + 12, il);
            idtext[il] = 0;
            int64_t id = dt_api_parse_id(idtext);
            if (!method_is(req, "GET"))
                not_allowed(req, res, "GET");
            else if (id <= 0)
                dt_api_error(res, 400, "kernel id must be a positive integer, not '%s'", idtext);
            else
                dt_api_kernel_source(a, id, res);
            return DT_ROUTE_KERNEL_SOURCE;
        }
    }
    if (strcmp(p, "/v1/workloads") == 0) {
        if (method_is(req, "GET"))
            workloads(a, res);
        else
            not_allowed(req, res, "GET");
        return DT_ROUTE_WORKLOADS;
    }
    dt_api_error(res, 404,
                 "no route %s (routes: /v1/jobs, /v1/jobs/{id}, /v1/schedules, "
                 "/v1/kernels/{id}/source, /v1/workloads, /healthz, /metrics)",
                 p);
    return DT_ROUTE_OTHER;
}

void dt_api_handle(const dt_http_request *req, dt_http_response *res, void *ud)
{
    dt_api *a = ud;
    double t0 = mono_s();
    dt_route r = route(a, req, res);
    dt_metrics_request(a->metrics, r, req->method, res->status ? res->status : 200,
                       mono_s() - t0);
}
