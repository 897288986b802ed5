/* Counters, a latency histogram and their Prometheus text (daemon/metrics.h). */
#include "daemon/metrics.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds (seconds) of the latency buckets; +Inf is implicit. */
static const double k_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                  0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
#define NB ((int)(sizeof k_bounds / sizeof k_bounds[0]))

enum { M_GET = 0, M_POST, M_DELETE, M_OTHER, M_N };
static const char *const k_methods[M_N] = {"GET", "POST", "DELETE", "other"};

static const char *const k_routes[DT_ROUTE_N] = {
    "/v1/jobs", "/v1/jobs/{id}", "/v1/schedules", "/v1/kernels/{id}/source",
    "/v1/workloads", "/healthz", "/metrics", "other"};
static const char *const k_query[DT_QUERY_N] = {"hit", "extrapolated", "not_found", "invalid",
                                                "error"};

struct dt_metrics {
    /* loop thread */
    uint64_t status[DT_ROUTE_N][M_N][500];      /* by status - 100 */
    uint64_t bucket[DT_ROUTE_N][NB + 1];        /* not cumulative; last is +Inf */
    double sum[DT_ROUTE_N];
    uint64_t count[DT_ROUTE_N];
    uint64_t queries[DT_QUERY_N];
    /* any thread */
    _Atomic uint64_t trials, submitted, finished[DT_JOB_N_STATES];
};

dt_metrics *dt_metrics_new(void)
{
    return calloc(1, sizeof(dt_metrics));
}

void dt_metrics_free(dt_metrics *m)
{
    free(m);
}

static int method_index(const char *method)
{
    for (int i = 0; i < M_OTHER; i++)
        if (method && strcmp(method, k_methods[i]) == 0)
            return i;
    return M_OTHER;
}

void dt_metrics_request(dt_metrics *m, dt_route r, const char *method, int status,
                        double seconds)
{
    if (!m)
        return;
    if (r < 0 || r >= DT_ROUTE_N)
        r = DT_ROUTE_OTHER;
    if (status >= 100 && status < 600)
        m->status[r][method_index(method)][status - 100]++;
    int b = 0;
    while (b < NB && seconds > k_bounds[b])
        b++;
    m->bucket[r][b]++;
    m->sum[r] += seconds;
    m->count[r]++;
}

void dt_metrics_query(dt_metrics *m, dt_query_result q)
{
    if (m && q >= 0 && q < DT_QUERY_N)
        m->queries[q]++;
}

void dt_metrics_trials(dt_metrics *m, int64_t n)
{
    if (m && n > 0)
        atomic_fetch_add(&m->trials, (uint64_t)n);
}

void dt_metrics_job_submitted(dt_metrics *m)
{
    if (m)
        atomic_fetch_add(&m->submitted, 1);
}

void dt_metrics_job_finished(dt_metrics *m, dt_job_state s)
{
    if (m && s >= 0 && s < DT_JOB_N_STATES)
        atomic_fetch_add(&m->finished[s], 1);
}

static void head(dt_strbuf *o, const char *name, const char *type, const char *help)
{
    dt_sb_appendf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void dt_metrics_render(const dt_metrics *m, const dt_metrics_gauges *g, dt_strbuf *o)
{
    head(o, "dtune_up", "gauge", "1 while the daemon serves");
    dt_sb_append(o, "dtune_up 1\n");
    head(o, "dtune_uptime_seconds", "gauge", "seconds since the daemon started");
    dt_sb_appendf(o, "dtune_uptime_seconds %.3f\n", g->uptime_s);

    head(o, "dtune_jobs", "gauge", "jobs in the database by state");
    for (int s = 0; s < DT_JOB_N_STATES; s++)
        if (g->jobs[s] >= 0)
            dt_sb_appendf(o, "dtune_jobs{state=\"%s\"} %lld\n", dt_job_state_name((dt_job_state)s),
                          (long long)g->jobs[s]);
    head(o, "dtune_job_running", "gauge", "id of the job being tuned, 0 when idle");
    dt_sb_appendf(o, "dtune_job_running %lld\n", (long long)g->running_job);
    head(o, "dtune_jobs_submitted_total", "counter", "jobs accepted by POST /v1/jobs");
    dt_sb_appendf(o, "dtune_jobs_submitted_total %llu\n",
                  (unsigned long long)atomic_load(&m->submitted));
    head(o, "dtune_jobs_finished_total", "counter", "jobs this daemon ended, by final state");
    for (int s = DT_JOB_DONE; s < DT_JOB_N_STATES; s++)
        dt_sb_appendf(o, "dtune_jobs_finished_total{state=\"%s\"} %llu\n",
                      dt_job_state_name((dt_job_state)s),
                      (unsigned long long)atomic_load(&m->finished[s]));
    head(o, "dtune_trials_total", "counter", "trials measured and recorded by this daemon's jobs");
    dt_sb_appendf(o, "dtune_trials_total %llu\n",
                  (unsigned long long)atomic_load(&m->trials));

    head(o, "dtune_schedule_queries_total", "counter", "GET /v1/schedules lookups by result");
    for (int q = 0; q < DT_QUERY_N; q++)
        dt_sb_appendf(o, "dtune_schedule_queries_total{result=\"%s\"} %llu\n", k_query[q],
                      (unsigned long long)m->queries[q]);
    if (g->schedule_tables_loaded >= 0) {
        head(o, "dtune_schedule_table_loads_total", "counter",
             "dispatch tables loaded from the database by the query cache");
        dt_sb_appendf(o, "dtune_schedule_table_loads_total %lld\n",
                      (long long)g->schedule_tables_loaded);
    }

    head(o, "dtune_http_connections_total", "counter", "connections accepted");
    dt_sb_appendf(o, "dtune_http_connections_total %llu\n",
                  (unsigned long long)g->connections_total);
    head(o, "dtune_http_connections_open", "gauge", "connections open now");
    dt_sb_appendf(o, "dtune_http_connections_open %llu\n", (unsigned long long)g->connections_open);
    head(o, "dtune_http_rejected_total", "counter",
         "requests answered by the server layer itself (limits, time-outs, auth, bad HTTP)");
    dt_sb_appendf(o, "dtune_http_rejected_total %llu\n", (unsigned long long)g->rejected_total);
    head(o, "dtune_http_evicted_total", "counter",
         "idle connections closed to admit a new one at the connection limit");
    dt_sb_appendf(o, "dtune_http_evicted_total %llu\n", (unsigned long long)g->evicted_total);

    head(o, "dtune_http_requests_total", "counter", "requests answered by the API, by status");
    for (int r = 0; r < DT_ROUTE_N; r++)
        for (int me = 0; me < M_N; me++)
            for (int s = 0; s < 500; s++)
                if (m->status[r][me][s])
                    dt_sb_appendf(o,
                                  "dtune_http_requests_total{route=\"%s\",method=\"%s\","
                                  "code=\"%d\"} %llu\n",
                                  k_routes[r], k_methods[me], s + 100,
                                  (unsigned long long)m->status[r][me][s]);

    head(o, "dtune_http_request_duration_seconds", "histogram",
         "time to answer a complete request (routing, database, JSON)");
    for (int r = 0; r < DT_ROUTE_N; r++) {
        if (!m->count[r])
            continue;
        uint64_t cum = 0;
        for (int b = 0; b <= NB; b++) {
            cum += m->bucket[r][b];
            if (b < NB)
                dt_sb_appendf(o,
                              "dtune_http_request_duration_seconds_bucket{route=\"%s\","
                              "le=\"%g\"} %llu\n",
                              k_routes[r], k_bounds[b], (unsigned long long)cum);
            else
                dt_sb_appendf(o,
                              "dtune_http_request_duration_seconds_bucket{route=\"%s\","
                              "le=\"+Inf\"} %llu\n",
                              k_routes[r], (unsigned long long)cum);
        }
        dt_sb_appendf(o, "dtune_http_request_duration_seconds_sum{route=\"%s\"} %.9f\n",
                      k_routes[r], m->sum[r]);
        dt_sb_appendf(o, "dtune_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                      k_routes[r], (unsigned long long)m->count[r]);
    }
}
