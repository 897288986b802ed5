/* The route handlers of the daemon's API, one per route and method; the
 * router (daemon/api.c) picks one, having checked the method and parsed the
 * id of /v1/jobs/{id} and /v1/kernels/{id}/source.  Each fills res (body
 * malloc'ed, taken by the server), errors included (daemon/api_util.h).
 *
 *   daemon/api_jobs.c       POST|GET /v1/jobs, GET|DELETE /v1/jobs/{id}
 *   daemon/api_schedules.c  GET /v1/schedules, /v1/kernels/{id}/source, /v1/workloads
 *   daemon/api_health.c     GET /healthz, /metrics
 *
 * Threads: the loop thread (daemon/api.h). */
#ifndef DT_DAEMON_API_ROUTES_H
#define DT_DAEMON_API_ROUTES_H

#include <stdint.h>

#include "daemon/api.h"

void dt_api_jobs_list(dt_api *a, const dt_http_request *req, dt_http_response *res);
void dt_api_jobs_create(dt_api *a, const dt_http_request *req, dt_http_response *res);
void dt_api_job_get(dt_api *a, int64_t id, dt_http_response *res);
void dt_api_job_cancel(dt_api *a, int64_t id, dt_http_response *res);
void dt_api_schedules(dt_api *a, const dt_http_request *req, dt_http_response *res);
void dt_api_kernel_source(dt_api *a, int64_t id, dt_http_response *res);
void dt_api_workloads(dt_api *a, dt_http_response *res);
void dt_api_healthz(dt_api *a, dt_http_response *res);
void dt_api_metrics(dt_api *a, dt_http_response *res);

#endif
