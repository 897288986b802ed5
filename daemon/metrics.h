/* The daemon's metrics, rendered as Prometheus text for GET /metrics.
 *
 * What is counted: HTTP requests by route, method and status with a
 * histogram of the time spent answering them (routing, SQL, JSON: from the
 * complete request to the response handed back, parsing and socket time
 * excluded); schedule queries by result; trials measured by this daemon's
 * jobs; jobs submitted and finished by final state.  Gauges read at scrape
 * time (jobs by state in the database, open connections, ...) are passed in
 * a dt_metrics_gauges.
 *
 * Thread safety: dt_metrics_request and dt_metrics_query belong to the loop
 * thread; dt_metrics_trials, dt_metrics_job_* are atomic and may be called
 * from any thread; dt_metrics_render runs on the loop thread.
 * Ownership: dt_metrics_new's result is freed with dt_metrics_free. */
#ifndef DT_DAEMON_METRICS_H
#define DT_DAEMON_METRICS_H

#include <stdint.h>

#include "common/strbuf.h"
#include "db/db.h"

typedef enum {
    DT_ROUTE_JOBS = 0,        /* /v1/jobs */
    DT_ROUTE_JOB,             /* /v1/jobs/{id} */
    DT_ROUTE_SCHEDULES,       /* /v1/schedules */
    DT_ROUTE_KERNEL_SOURCE,   /* /v1/kernels/{id}/source */
    DT_ROUTE_WORKLOADS,       /* /v1/workloads */
    DT_ROUTE_HEALTHZ,         /* /healthz */
    DT_ROUTE_METRICS,         /* /metrics */
    DT_ROUTE_OTHER,           /* anything else (404) */
    DT_ROUTE_N
} dt_route;

typedef enum {
    DT_QUERY_HIT = 0,         /* a shape of the tuned set */
    DT_QUERY_EXTRAPOLATED,    /* answered with the nearest range */
    DT_QUERY_NOT_FOUND,       /* no such workload, target or schedule */
    DT_QUERY_INVALID,         /* malformed query */
    DT_QUERY_ERROR,           /* database failure */
    DT_QUERY_N
} dt_query_result;

typedef struct dt_metrics dt_metrics;

dt_metrics *dt_metrics_new(void);
void dt_metrics_free(dt_metrics *m);

void dt_metrics_request(dt_metrics *m, dt_route r, const char *method, int status,
                        double seconds);
void dt_metrics_query(dt_metrics *m, dt_query_result q);
void dt_metrics_trials(dt_metrics *m, int64_t n);
void dt_metrics_job_submitted(dt_metrics *m);
void dt_metrics_job_finished(dt_metrics *m, dt_job_state s);

/* Read at scrape time by the caller. */
typedef struct dt_metrics_gauges {
    int64_t jobs[DT_JOB_N_STATES];  /* jobs in the database by state; -1: unknown */
    int64_t running_job;            /* id of the job being tuned, 0 when none */
    uint64_t connections_total, connections_open, requests_total, rejected_total;
    uint64_t evicted_total;         /* idle connections closed to admit a new one */
    int64_t schedule_tables_loaded; /* dispatch cache loads, -1: unknown */
    double uptime_s;
} dt_metrics_gauges;

/* Appends the Prometheus text exposition (format 0.0.4) to out. */
void dt_metrics_render(const dt_metrics *m, const dt_metrics_gauges *g, dt_strbuf *out);

#endif
