/* The routes that read what was tuned: GET /v1/schedules,
 * GET /v1/kernels/{id}/source and GET /v1/workloads (daemon/api_routes.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_util.h"
#include "daemon/api_routes.h"
#include "daemon/api_util.h"

/* The shape text "A=1,B=2" from every parameter other than workload,
 * target and threads, in the order given; vars[NAME]=V names a variable
 * whatever NAME is, so a variable called workload, target or threads can be
 * given too.  0, or -1 with a message. */
static int shape_text(const char *query, char *shape, size_t n, char *why, size_t wn)
{
    size_t o = 0;
    shape[0] = 0;
    for (const char *p = query; *p;) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nl = eq ? (size_t)(eq - p) : len;
        char name[64], val[64];
        if (len > 0) {
            if (!eq || dt_api_decode(p, nl, name, sizeof name)) {
                snprintf(why, wn, "malformed query parameter '%.*s'", (int)(len > 64 ? 64 : len),
                         p);
                return -1;
            }
            size_t dl = strlen(name);
            const char *var = name;
            if (dl > 6 && !strncmp(name, "vars[", 5) && name[dl - 1] == ']') {
                name[dl - 1] = '\0';
                var = name + 5;
            }
            if (var != name ||
                (strcmp(name, "workload") && strcmp(name, "target") && strcmp(name, "threads"))) {
                if (dt_api_decode(eq + 1, len - nl - 1, val, sizeof val)) {
                    snprintf(why, wn, "malformed or over-long value of '%s'", name);
                    return -1;
                }
                int w = snprintf(shape + o, n - o, "%s%s=%s", o ? "," : "", var, val);
                if (w < 0 || (size_t)w >= n - o) {
                    snprintf(why, wn, "the shape in the query is too long");
                    return -1;
                }
                o += (size_t)w;
            }
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

void dt_api_schedules(dt_api *a, const dt_http_request *req, dt_http_response *res)
{
    char key[DT_KEY_MAX], target[DT_TARGET_KEY_MAX], threads_s[16], shape[256], why[256];
    int hk = dt_api_query_param(req->query, "workload", key, sizeof key);
    int ht = dt_api_query_param(req->query, "target", target, sizeof target);
    int hn = dt_api_query_param(req->query, "threads", threads_s, sizeof threads_s);
    int threads = 0;
    const char *bad = NULL;
    if (hk <= 0)
        bad = hk < 0 ? "malformed or over-long 'workload' parameter"
                     : "missing query parameter 'workload' (a workload key)";
    else if (ht < 0)
        bad = "malformed or over-long 'target' parameter";
    else if (hn < 0 || (hn > 0 && ((threads = (int)dt_api_parse_id(threads_s)) < 1 ||
                                   threads > 1024)))
        bad = "'threads' must be an integer from 1 to 1024";
    if (bad) {
        dt_metrics_query(a->metrics, DT_QUERY_INVALID);
        dt_api_error(res, 400, "%s", bad);
        return;
    }
    if (shape_text(req->query, shape, sizeof shape, why, sizeof why)) {
        dt_metrics_query(a->metrics, DT_QUERY_INVALID);
        dt_api_error(res, 400, "%s", why);
        return;
    }
    if (!shape[0]) {
        dt_metrics_query(a->metrics, DT_QUERY_INVALID);
        dt_api_error(res, 400, "no shape: give every variable of the workload as a query "
                               "parameter, e.g. &M=37");
        return;
    }
    dt_dispatch_query q = {.workload_key = key, .shape = shape,
                           .target_key = ht > 0 ? target : a->target_key, .threads = threads};
    dt_dispatch_cache_result r;
    dt_err e;
    dt_err_clear(&e);
    int rc = a->cache ? dt_dispatch_cache_lookup(a->cache, &q, &r, &e)
                      : dt_errf(&e, DT_ENOTFOUND, "no schedule cache");
    if (rc) {
        int st = dt_api_status_of(rc);
        dt_metrics_query(a->metrics, st == 400   ? DT_QUERY_INVALID
                                     : st == 404 ? DT_QUERY_NOT_FOUND
                                                 : DT_QUERY_ERROR);
        dt_api_error(res, st, "%s", e.msg);
        return;
    }
    dt_metrics_query(a->metrics, r.extrapolated ? DT_QUERY_EXTRAPOLATED : DT_QUERY_HIT);
    json_error_t jerr;
    json_t *ann = json_loads(r.annotation, 0, &jerr);
    char src[64];
    snprintf(src, sizeof src, "/v1/kernels/%lld/source", (long long)r.kernel_id);
    dt_api_json(res, 200,
                json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s, s:o, s:[s,s], s:b, s:o, s:o, s:s}",
                          "workload", r.workload_key, "shape", r.shape, "target", r.target_key,
                          "threads", r.threads, "kernel_id", (json_int_t)r.kernel_id, "op", r.op,
                          "sketch", r.sketch, "backend", r.backend,
                          "annotation", ann ? ann : json_null(), "range",
                          r.range_lo, r.range_hi, "extrapolated", r.extrapolated,
                          "predicted_ns", dt_json_num_or_null(r.predicted_ns), "measured_ns",
                          dt_json_num_or_null(r.measured_ns), "source", src));
}

void dt_api_kernel_source(dt_api *a, int64_t id, dt_http_response *res)
{
    char *src = NULL;
    dt_err e;
    dt_err_clear(&e);
    int rc = a->kernel_source ? a->kernel_source(a->db, id, &src, &e)
                              : dt_errf(&e, DT_EUNSUPPORTED, "kernel sources are not available");
    if (rc) {
        dt_api_error(res, dt_api_status_of(rc), "%s", e.msg);
        return;
    }
    res->status = 200;
    res->content_type = "text/plain; charset=utf-8";
    res->body = src;
    res->body_len = strlen(src);
}

void dt_api_workloads(dt_api *a, dt_http_response *res)
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
