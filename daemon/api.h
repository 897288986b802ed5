/* The daemon's HTTP/JSON API (docs/daemon.md): the context its handlers
 * share and the router (daemon/api.c) over the handlers of
 * daemon/api_routes.h:
 *   POST /v1/jobs, GET /v1/jobs, GET|DELETE /v1/jobs/{id},
 *   GET /v1/schedules?workload=KEY&VAR=N...[&target=KEY][&threads=T],
 *   GET /v1/kernels/{id}/source, GET /v1/workloads, GET /healthz, GET /metrics.
 * Every error is {"error": {"status": N, "message": "..."}} with the right
 * 4xx/5xx: 400 malformed request or body, 404 unknown route or missing
 * thing, 405 a method the route does not have, 409 cancelling a job that has
 * ended, 500/503 database failures.
 *
 * dt_api_handle is the server's handler (daemon/http.h): it runs on the loop
 * thread, answers from the loop's own database connection and the dispatch
 * cache, and never blocks on the tuner (WAL: readers do not wait for the
 * writer; writes — a new job, a cancel — wait at most the busy timeout).
 *
 * Ownership: dt_api borrows everything it points to. */
#ifndef DT_DAEMON_API_H
#define DT_DAEMON_API_H

#include <stdint.h>

#include "daemon/http.h"
#include "daemon/jobs.h"
#include "daemon/metrics.h"
#include "db/db.h"
#include "dispatch/cache.h"

typedef struct dt_api {
    dt_db *db;                     /* the loop thread's read-write connection */
    dt_dispatch_cache *cache;      /* schedule lookups */
    const char *target_key;        /* this machine's */
    int cores, default_threads;    /* bounds and default of a job's threads */
    dt_jobs *jobs;                 /* NULL: jobs are only queued in the table */
    dt_metrics *metrics;           /* may be NULL */
    /* the C source of a kernel (export/export.h: dt_export_kernel_source) */
    int (*kernel_source)(dt_db *db, int64_t kernel_id, char **src, dt_err *e);
    /* the server's counters for /metrics; may be NULL */
    void (*http_stats)(void *ud, dt_http_stats *st);
    void *http_stats_ud;
    double started_s;              /* CLOCK_MONOTONIC seconds at start */
} dt_api;

/* The server's handler; ud is a dt_api. */
void dt_api_handle(const dt_http_request *req, dt_http_response *res, void *ud);

#endif
