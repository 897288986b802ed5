/* The pieces every route of the daemon's API uses (daemon/api.c routes,
 * daemon/api_*.c answer): JSON responses and errors, the HTTP status of an
 * error code, ids in paths, query parameters.  They know HTTP responses,
 * not routes or the dt_api context.
 *
 * Ownership: the bodies these functions put in a response are malloc'ed;
 * the server takes them (daemon/http.h). */
#ifndef DT_DAEMON_API_UTIL_H
#define DT_DAEMON_API_UTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/http.h"

/* Sets res to status with body (reference stolen), as compact JSON; 500
 * "out of memory" when body is NULL or cannot be dumped. */
void dt_api_json(dt_http_response *res, int status, json_t *body);
/* Sets res to {"error": {"status": status, "message": ...}}. */
void dt_api_error(dt_http_response *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The HTTP status for a DT_E* code: 400, 404, 422, 503 (busy) or 500. */
int dt_api_status_of(int code);
/* A positive decimal id from text (digits only, 1..INT64_MAX); 0 when it
 * is not one. */
int64_t dt_api_parse_id(const char *text);
#define DT_API_ID_RANGE "an integer from 1 to 9223372036854775807" /* INT64_MAX */

/* Percent-decodes s[0..len) into buf (size n; '+' stays '+'); -1 when
 * malformed (a bad escape, %00, bytes that are not UTF-8) or too long. */
int dt_api_decode(const char *s, size_t len, char *buf, size_t n);
/* Value of query parameter name in a raw query string, percent-decoded
 * ('+' stays '+': workload keys use it); into buf (size n).  Returns 1 when
 * found, 0 when absent, -1 when malformed (as dt_api_decode) or too long. */
int dt_api_query_param(const char *query, const char *name, char *buf, size_t n);

#endif
