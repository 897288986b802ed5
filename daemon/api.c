/* The router of the daemon's API (daemon/api.h): a request's path and
 * method to one handler of daemon/api_routes.h, 404 and 405 answered here,
 * and each request counted in the metrics by route. */
#include "daemon/api.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "daemon/api_routes.h"
#include "daemon/api_util.h"
#include "daemon/http_msg.h"

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
    size_t plen = strlen(p);
    if (dt_http_utf8_bad(p, plen) != plen) { /* the server refuses these already */
        dt_api_error(res, 400, "the request path '%s' is not UTF-8", p);
        return DT_ROUTE_OTHER;
    }
    if (strcmp(p, "/healthz") == 0) {
        if (method_is(req, "GET"))
            dt_api_healthz(a, res);
        else
            not_allowed(req, res, "GET");
        return DT_ROUTE_HEALTHZ;
    }
    if (strcmp(p, "/metrics") == 0) {
        if (method_is(req, "GET"))
            dt_api_metrics(a, res);
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
            dt_api_error(res, 400, "job id must be " DT_API_ID_RANGE ", not '%.64s'", p + 9);
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
    static const char kpfx[] = "/v1/kernels/", ksfx[] = "/source";
    const size_t kpl = sizeof kpfx - 1, ksl = sizeof ksfx - 1;
    if (strncmp(p, kpfx, kpl) == 0 && pl > kpl + ksl && strcmp(p + pl - ksl, ksfx) == 0 &&
        !memchr(p + kpl, '/', pl - kpl - ksl)) {
        /* any length: an id over INT64_MAX gets the range, not "no route" */
        size_t il = pl - kpl - ksl;
        char idtext[72];
        snprintf(idtext, sizeof idtext, "%.*s", (int)(il < 64 ? il : 64), p + kpl);
        int64_t id = il < 64 ? dt_api_parse_id(idtext) : 0;
        if (!method_is(req, "GET"))
            not_allowed(req, res, "GET");
        else if (id <= 0)
            dt_api_error(res, 400, "kernel id must be " DT_API_ID_RANGE ", not '%s%s'", idtext,
                         il > 64 ? "..." : "");
        else
            dt_api_kernel_source(a, id, res);
        return DT_ROUTE_KERNEL_SOURCE;
    }
    if (strcmp(p, "/v1/workloads") == 0) {
        if (method_is(req, "GET"))
            dt_api_workloads(a, res);
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
    double t0 = dt_now_s();
    dt_route r = route(a, req, res);
    dt_metrics_request(a->metrics, r, req->method, res->status ? res->status : 200,
                       dt_now_s() - t0);
}
