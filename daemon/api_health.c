/* The service's own routes: GET /healthz and GET /metrics (daemon/api_routes.h). */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/strbuf.h"
#include "daemon/api_routes.h"
#include "daemon/api_util.h"

void dt_api_healthz(dt_api *a, dt_http_response *res)
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
                          "schema_version", v, "uptime_s", dt_now_s() - a->started_s,
                          "running_job", running ? json_integer(running) : json_null()));
}

void dt_api_metrics(dt_api *a, dt_http_response *res)
{
    dt_metrics_gauges g = {.uptime_s = dt_now_s() - a->started_s,
                           .schedule_tables_loaded = -1};
    /* One GROUP BY query; on failure every count is -1 and left out. */
    (void)dt_db_job_counts(a->db, g.jobs, NULL);
    g.running_job = a->jobs ? dt_jobs_running(a->jobs) : 0;
    if (a->http_stats) {
        dt_http_stats st = {0};
        a->http_stats(a->http_stats_ud, &st);
        g.connections_total = st.connections_total;
        g.connections_open = st.connections_open;
        g.requests_total = st.requests_total;
        g.rejected_total = st.rejected_total;
        g.evicted_total = st.evicted_total;
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
