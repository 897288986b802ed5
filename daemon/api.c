/* The router of the daemon's API (daemon/api.h): a request's path and
 * method to one handler of daemon/api_routes.h, 404 and 405 answered here,
 * and each request counted in the metrics by route. */
#include "daemon/api.h"

#include <string.h>

#include "common/clock.h"
#include "daemon/api_routes.h"
#include "daemon/api_util.h"

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
