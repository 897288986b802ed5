/* Shared by the daemon's API handlers (daemon/api*.c); not a public header. */
#ifndef DT_DAEMON_API_INTERNAL_H
#define DT_DAEMON_API_INTERNAL_H

#include <jansson.h>

#include "daemon/api.h"

/* Sets res to status with body (reference stolen), as compact JSON. */
void dt_api_json(dt_http_response *res, int status, json_t *body);
/* Sets res to {"error": {"status": status, "message": ...}}. */
void dt_api_error(dt_http_response *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The HTTP status for a DT_E* code: 400, 404, 503 (busy) or 500. */
int dt_api_status_of(int code);
/* A positive decimal id from text; 0 when it is not one. */
int64_t dt_api_parse_id(const char *text);

/* Percent-decodes s[0..len) into buf (size n; '+' stays '+'); -1 when
 * malformed (a bad escape, %00) or too long. */
int dt_api_decode(const char *s, size_t len, char *buf, size_t n);

/* Route handlers. */
void dt_api_jobs_list(dt_api *a, const dt_http_request *req, dt_http_response *res);
void dt_api_jobs_create(dt_api *a, const dt_http_request *req, dt_http_response *res);
void dt_api_job_get(dt_api *a, int64_t id, dt_http_response *res);
void dt_api_job_cancel(dt_api *a, int64_t id, dt_http_response *res);
void dt_api_schedules(dt_api *a, const dt_http_request *req, dt_http_response *res);
void dt_api_kernel_source(dt_api *a, int64_t id, dt_http_response *res);

#endif
