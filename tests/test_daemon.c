/* The daemon's pieces without sockets: job request validation and stored
 * jobs (daemon/job_spec.h), query-string decoding and routing through
 * dt_api_handle with hand-made requests (daemon/api.h) on a database whose
 * schedule is written with the db API, the Prometheus text
 * (daemon/metrics.h), and the loopback rule (daemon/daemon.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/target.h"
#include "daemon/api.h"
#include "daemon/api_util.h"
#include "daemon/daemon.h"
#include "daemon/job_spec.h"
#include "daemon/metrics.h"
#include "db/db.h"
#include "dispatch/cache.h"
#include "space/annotation.h"
#include "tests/dt_test.h"

#define KEY "dense(M=1..64,N=64,K=32)"

static char *g_dir;
static char g_db[4096];
static char g_tkey[DT_TARGET_KEY_MAX];
static int64_t g_kid;

/* ---- job requests ------------------------------------------------------------------ */

static int parse(const char *body, char **spec, char **opts, dt_err *e)
{
    return dt_job_request_parse(body, strlen(body), 4, 2, spec, opts, e);
}

/* The request fails with DT_EINVAL and a message containing want. */
static void expect_bad(const char *body, const char *want)
{
    char *spec = NULL, *opts = NULL;
    dt_err e;
    dt_err_clear(&e);
    CU_ASSERT_EQUAL(parse(body, &spec, &opts, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(spec);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want));
    if (!strstr(e.msg, want))
        fprintf(stderr, "\n  body %s: got '%s', wanted '%s'\n", body, e.msg, want);
}

static void test_request_valid(void)
{
    char *spec = NULL, *opts = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(parse("{\"workload\": \"dense(N=64, K=32, M=1..64)\", \"trials\": 50, "
                                "\"time\": \"2m\", \"strategy\": \"per-shape\"}",
                                &spec, &opts, &e),
                          0);
    json_error_t jerr;
    json_t *s = json_loads(spec, 0, &jerr), *o = json_loads(opts, 0, &jerr);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s, "workload")), KEY);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "trials")), 50);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(o, "time_s")), 120, 1e-9);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(o, "strategy")), "per-shape");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(o, "threads")), 2); /* the default */
    json_decref(s);
    json_decref(o);

    /* read back as the runner does */
    dt_job_params p;
    CU_ASSERT_EQUAL_FATAL(dt_job_params_load(spec, opts, &p, &e), 0);
    CU_ASSERT_STRING_EQUAL(p.workload, KEY);
    CU_ASSERT_PTR_NULL(p.model_text);
    CU_ASSERT_EQUAL(p.trials, 50);
    CU_ASSERT_EQUAL(p.strategy, DT_STRATEGY_PER_SHAPE);
    CU_ASSERT_EQUAL(p.threads, 2);
    dt_job_params_free(&p);
    free(spec);
    free(opts);

    /* a model spec; no budget given: 300 trials per workload */
    const char *model = "{\"model\": {\"name\": \"m\", \"variables\": {\"seq\": {\"range\": [1, 8]}},"
                        " \"ops\": [{\"op\": \"dense\", \"M\": \"seq\", \"N\": 64, \"K\": 32},"
                        " {\"op\": \"dense\", \"M\": \"seq\", \"N\": 32, \"K\": 64}]},"
                        " \"threads\": 1, \"time\": 30}";
    CU_ASSERT_EQUAL_FATAL(parse(model, &spec, &opts, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_job_params_load(spec, opts, &p, &e), 0);
    CU_ASSERT_PTR_NOT_NULL(p.model_text);
    CU_ASSERT_EQUAL(p.trials, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.time_s, 30, 1e-9);
    dt_task *t = calloc(64, sizeof *t);
    int n = 0;
    CU_ASSERT_EQUAL(dt_job_params_tasks(&p, t, &n, &e), 0);
    CU_ASSERT_EQUAL(n, 2);
    for (int i = 0; i < n; i++)
        dt_task_free(&t[i]);
    free(t);
    dt_job_params_free(&p);
    json_t *sum = dt_job_spec_summary(spec);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(sum, "model")), "m");
    json_decref(sum);
    free(spec);
    free(opts);

    CU_ASSERT_EQUAL_FATAL(parse("{\"workload\": \"" KEY "\"}", &spec, &opts, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_job_params_load(spec, opts, &p, &e), 0);
    CU_ASSERT_EQUAL(p.trials, 300);
    dt_job_params_free(&p);
    free(spec);
    free(opts);

    /* a dtype travels in the key: canonical, f32 never spelled */
    CU_ASSERT_EQUAL_FATAL(parse("{\"workload\": \"dense(dtype=int8,N=64,K=32,M=1..64)\"}",
                                &spec, &opts, &e), 0);
    CU_ASSERT_EQUAL_FATAL(dt_job_params_load(spec, opts, &p, &e), 0);
    CU_ASSERT_STRING_EQUAL(p.workload, "dense(M=1..64,N=64,K=32,dtype=int8)");
    dt_job_params_free(&p);
    free(spec);
    free(opts);
}

static void test_request_invalid(void)
{
    expect_bad("{\"workload\": ", "body:1:13: malformed JSON");
    expect_bad("[1, 2]", "must be a JSON object, not an array");
    expect_bad("{}", "exactly one of");
    expect_bad("{\"workload\": \"" KEY "\", \"model\": {}}", "exactly one of");
    expect_bad("{\"workload\": 3}", "workload: must be a workload key string, not an integer");
    expect_bad("{\"workload\": \"dense(M=1..4,N=1,K=1,dtype=fp8)\"}", "unknown dtype");
    expect_bad("{\"workload\": \"dense(M=0..4,N=1,K=1)\"}", "body:1:14: workload:");
    expect_bad("{\"workload\": \"" KEY "\", \"trials\": 0}", "trials: must be from 1 to");
    expect_bad("{\"workload\": \"" KEY "\", \"trials\": 1.5}", "trials: must be an integer, not a real");
    expect_bad("{\"workload\": \"" KEY "\", \"time\": -3}", "time: must be a duration above 0");
    expect_bad("{\"workload\": \"" KEY "\", \"time\": \"5x\"}", "time: must be a duration");
    expect_bad("{\"workload\": \"" KEY "\", \"time\": \"999h\"}", "at most 30 days");
    expect_bad("{\"workload\": \"" KEY "\", \"threads\": 5}", "threads: must be from 1 to 4");
    expect_bad("{\"workload\": \"" KEY "\", \"strategy\": \"best\"}", "strategy: must be");
    expect_bad("{\"workload\": \"" KEY "\", \"min_time_ms\": 0}", "min_time_ms: must be above 0");
    /* issue 42: the value is quoted as given, not rounded by %g to "not 10000" */
    expect_bad("{\"workload\": \"" KEY "\", \"min_time_ms\": 10000.0001}",
               "at most 10000, not 10000.0001");
    expect_bad("{\"workload\": \"" KEY "\",\n \"budget\": 5}", "body:2:2: budget: unknown field");
    expect_bad("{\"workload\": \"" KEY "\", \"trials\": 5, \"trials\": 6}", "malformed JSON");
    /* model errors carry the body's line and column and the spec path */
    expect_bad("{\"trials\": 10,\n \"model\": {\"name\": \"x\", \"ops\": [{\"op\": \"dense\", "
               "\"M\": \"seq\", \"N\": 4, \"K\": 4}]}}",
               "model spec: body:2:");
    expect_bad("{\"model\": {\"name\": \"x\", \"ops\": [{\"op\": \"dense\", \"M\": \"seq\", "
               "\"N\": 4, \"K\": 4}]}}",
               "ops[0].M: unknown variable 'seq'");
    expect_bad("{\"model\": \"bert\"}", "model: must be a model spec object, not a string");
}

/* max_kernels: "auto" by default, "all" (unrestricted) for jobs stored
 * before the field, 0 too; K kept; anything else refused */
static void test_request_max_kernels(void)
{
    const char *bodies[] = {"{\"workload\": \"" KEY "\"}",
                            "{\"workload\": \"" KEY "\", \"max_kernels\": \"all\"}",
                            "{\"workload\": \"" KEY "\", \"max_kernels\": 0}",
                            "{\"workload\": \"" KEY "\", \"max_kernels\": 3}",
                            "{\"workload\": \"" KEY "\", \"max_kernels\": \"auto\"}"};
    const int want[] = {DT_SELECT_AUTO, DT_SELECT_ALL, DT_SELECT_ALL, 3, DT_SELECT_AUTO};
    for (int i = 0; i < 5; i++) {
        char *spec = NULL, *opts = NULL;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(parse(bodies[i], &spec, &opts, &e), 0);
        dt_job_params p;
        CU_ASSERT_EQUAL_FATAL(dt_job_params_load(spec, opts, &p, &e), 0);
        CU_ASSERT_EQUAL(p.max_kernels, want[i]);
        dt_job_params_free(&p);
        free(spec);
        free(opts);
    }
    dt_job_params p;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_job_params_load("{\"workload\": \"" KEY "\"}",
                                             "{\"trials\": 10, \"threads\": 1}", &p, &e), 0);
    CU_ASSERT_EQUAL(p.max_kernels, DT_SELECT_ALL); /* stored before the field */
    dt_job_params_free(&p);
    expect_bad("{\"workload\": \"" KEY "\", \"max_kernels\": -1}", "max_kernels: must be");
    expect_bad("{\"workload\": \"" KEY "\", \"max_kernels\": \"few\"}", "max_kernels: must be");
    expect_bad("{\"workload\": \"" KEY "\", \"max_kernels\": 1000}", "max_kernels: must be");
}

/* ---- query strings, loopback --------------------------------------------------------- */

static void test_query_and_loopback(void)
{
    char buf[64];
    CU_ASSERT_EQUAL(dt_api_query_param("a=1&workload=dense(M%3D1..4)&b", "workload", buf,
                                       sizeof buf),
                    1);
    CU_ASSERT_STRING_EQUAL(buf, "dense(M=1..4)");
    CU_ASSERT_EQUAL(dt_api_query_param("x=bias+gelu", "x", buf, sizeof buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "bias+gelu");
    CU_ASSERT_EQUAL(dt_api_query_param("a=1", "b", buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(dt_api_query_param("", "b", buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(dt_api_query_param("b=%4", "b", buf, sizeof buf), -1);
    CU_ASSERT_EQUAL(dt_api_query_param("b=%00", "b", buf, sizeof buf), -1);
    CU_ASSERT_EQUAL(dt_api_query_param("b=123456789", "b", buf, 4), -1);

    CU_ASSERT_TRUE(dt_daemon_is_loopback("127.0.0.1:8710"));
    CU_ASSERT_TRUE(dt_daemon_is_loopback("127.1.2.3:0"));
    CU_ASSERT_TRUE(dt_daemon_is_loopback("localhost:8710"));
    CU_ASSERT_TRUE(dt_daemon_is_loopback("[::1]:8710"));
    CU_ASSERT_FALSE(dt_daemon_is_loopback("0.0.0.0:8710"));
    CU_ASSERT_FALSE(dt_daemon_is_loopback("10.1.2.3:8710"));
    CU_ASSERT_FALSE(dt_daemon_is_loopback("[::]:8710"));
    CU_ASSERT_FALSE(dt_daemon_is_loopback("example.com:80"));
}

/* ---- metrics ------------------------------------------------------------------------------ */

static void test_metrics_text(void)
{
    dt_metrics *m = dt_metrics_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    dt_metrics_request(m, DT_ROUTE_SCHEDULES, "GET", 200, 0.00005);
    dt_metrics_request(m, DT_ROUTE_SCHEDULES, "GET", 200, 0.003);
    dt_metrics_request(m, DT_ROUTE_SCHEDULES, "GET", 404, 5.0);
    dt_metrics_request(m, DT_ROUTE_JOBS, "POST", 202, 0.001);
    dt_metrics_query(m, DT_QUERY_HIT);
    dt_metrics_query(m, DT_QUERY_HIT);
    dt_metrics_trials(m, 7);
    dt_metrics_trials(m, 5);
    dt_metrics_job_submitted(m);
    dt_metrics_job_finished(m, DT_JOB_DONE);
    dt_metrics_gauges g = {.jobs = {1, 0, 2, 0, 3}, .running_job = 4, .connections_open = 2,
                           .evicted_total = 5,
                           .schedule_tables_loaded = -1, .uptime_s = 1.5};
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_metrics_render(m, &g, &sb);
    char *t = dt_sb_take(&sb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    const char *want[] = {
        "# TYPE dtune_jobs gauge\n",
        "dtune_jobs{state=\"queued\"} 1\n",
        "dtune_jobs{state=\"cancelled\"} 3\n",
        "dtune_job_running 4\n",
        "dtune_trials_total 12\n",
        "dtune_jobs_submitted_total 1\n",
        "dtune_jobs_finished_total{state=\"done\"} 1\n",
        "dtune_schedule_queries_total{result=\"hit\"} 2\n",
        "dtune_http_connections_open 2\n",
        "# TYPE dtune_http_evicted_total counter\n",
        "dtune_http_evicted_total 5\n",
        "dtune_http_requests_total{route=\"/v1/schedules\",method=\"GET\",code=\"200\"} 2\n",
        "dtune_http_requests_total{route=\"/v1/schedules\",method=\"GET\",code=\"404\"} 1\n",
        "dtune_http_requests_total{route=\"/v1/jobs\",method=\"POST\",code=\"202\"} 1\n",
        "# TYPE dtune_http_request_duration_seconds histogram\n",
        "dtune_http_request_duration_seconds_bucket{route=\"/v1/schedules\",le=\"0.0001\"} 1\n",
        "dtune_http_request_duration_seconds_bucket{route=\"/v1/schedules\",le=\"0.005\"} 2\n",
        "dtune_http_request_duration_seconds_bucket{route=\"/v1/schedules\",le=\"1\"} 2\n",
        "dtune_http_request_duration_seconds_bucket{route=\"/v1/schedules\",le=\"+Inf\"} 3\n",
        "dtune_http_request_duration_seconds_count{route=\"/v1/schedules\"} 3\n",
        NULL};
    for (int i = 0; want[i]; i++) {
        CU_ASSERT_PTR_NOT_NULL(strstr(t, want[i]));
        if (!strstr(t, want[i]))
            fprintf(stderr, "\n  missing: %s", want[i]);
    }
    CU_ASSERT_PTR_NULL(strstr(t, "schedule_table_loads")); /* -1: not shown */
    CU_ASSERT_PTR_NULL(strstr(t, "route=\"/healthz\"")); /* no requests, no lines */
    /* every non-comment line is "name{labels} value" or "name value" */
    for (char *line = t; *line;) {
        char *nl = strchr(line, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(nl);
        if (line[0] != '#') {
            char *sp = memrchr(line, ' ', (size_t)(nl - line));
            CU_ASSERT_PTR_NOT_NULL(sp);
            char *end;
            strtod(sp + 1, &end);
            CU_ASSERT_PTR_EQUAL(end, nl);
        }
        line = nl + 1;
    }
    free(t);
    dt_metrics_free(m);
}

/* ---- routing through dt_api_handle ------------------------------------------------------ */

static int make_db(dt_err *e)
{
    dt_target tg;
    dt_workload *w = NULL;
    dt_db *db = NULL;
    int64_t wid, tid;
    int rc;
    if ((rc = dt_target_detect_key(&tg, g_tkey, sizeof g_tkey, e)) ||
        (rc = dt_workload_parse_key(KEY, &w, e)) ||
        (rc = dt_db_open(g_db, DT_DB_CREATE, &db, e)))
        goto out;
    char *ss = dt_workload_shape_set_json(w);
    rc = dt_db_workload_upsert(db, KEY, "dense", ss, &wid, e);
    free(ss);
    dt_rng r;
    dt_rng_seed(&r, 3);
    dt_annotation a;
    if (rc || (rc = dt_db_target_upsert(db, g_tkey, dt_isa_name(tg.isa), NULL, &tid, e)) ||
        (rc = dt_annotation_sample(&r, &tg, DT_SKETCH_BLOCKED, 1, &a, e)))
        goto out;
    char *ann = dt_annotation_to_string(&a);
    rc = dt_db_kernel_intern(db, "dense", dt_sketch_name(a.sketch), ann, NULL, &g_kid, e);
    free(ann);
    dt_db_schedule rows[] = {{.shape_lo = "M=1", .shape_hi = "M=64", .kernel_id = g_kid,
                              .predicted_ns = 100, .measured_ns = 110}};
    if (!rc)
        rc = dt_db_schedule_replace(db, wid, tid, 1, rows, 1, e);
out:
    dt_db_close(db);
    dt_workload_free(w);
    return rc;
}

static int fake_source(dt_db *db, int64_t id, char **src, dt_err *e)
{
    (void)db;
    if (id != g_kid)
        return dt_errf(e, DT_ENOTFOUND, "no kernel %lld", (long long)id);
    *src = strdup("/* kernel */\n");
    return 0;
}

typedef struct {
    int status;
    json_t *json;
    char *text;
    const char *ctype;
} answer;

static dt_api g_api;
static dt_db *g_apidb;
static dt_dispatch_cache *g_cache;
static dt_metrics *g_metrics;

static answer call(const char *method, const char *path, const char *query, const char *body)
{
    dt_http_request req = {.method = method, .path = path, .query = query ? query : "",
                           .body = body ? body : "", .body_len = body ? strlen(body) : 0,
                           .peer = "127.0.0.1:1"};
    dt_http_response res = {0};
    dt_api_handle(&req, &res, &g_api);
    answer a = {.status = res.status ? res.status : 200, .ctype = res.content_type};
    json_error_t jerr;
    a.json = res.body ? json_loads(res.body, 0, &jerr) : NULL;
    a.text = res.body;
    return a;
}

static void done(answer *a)
{
    json_decref(a->json);
    free(a->text);
}

static int err_status(const answer *a)
{
    json_t *err = json_object_get(a->json, "error");
    return json_is_string(json_object_get(err, "message"))
               ? (int)json_integer_value(json_object_get(err, "status"))
               : -1;
}

static void test_routes(void)
{
    answer a = call("GET", "/healthz", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a.json, "status")), "ok");
    done(&a);
    a = call("GET", "/nope", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    CU_ASSERT_EQUAL(err_status(&a), 404);
    done(&a);
    a = call("PATCH", "/v1/jobs", NULL, "{}");
    CU_ASSERT_EQUAL(a.status, 405);
    CU_ASSERT_EQUAL(err_status(&a), 405);
    done(&a);
    a = call("POST", "/healthz", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 405);
    done(&a);
    a = call("GET", "/v1/jobs/abc", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);
    a = call("GET", "/v1/jobs/1/x", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    done(&a);

    /* jobs: create, read, list, cancel */
    a = call("POST", "/v1/jobs", NULL, "{\"workload\": \"" KEY "\", \"trials\": 10");
    CU_ASSERT_EQUAL(a.status, 400);
    CU_ASSERT_EQUAL(err_status(&a), 400);
    done(&a);
    a = call("POST", "/v1/jobs", NULL, "{\"workload\": \"" KEY "\", \"trials\": 10}");
    CU_ASSERT_EQUAL_FATAL(a.status, 202);
    int64_t id = json_integer_value(json_object_get(a.json, "id"));
    CU_ASSERT(id > 0);
    done(&a);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    a = call("GET", path, NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a.json, "state")), "queued");
    CU_ASSERT_STRING_EQUAL(
        json_string_value(json_object_get(json_object_get(a.json, "spec"), "workload")), KEY);
    done(&a);
    a = call("GET", "/v1/jobs", "state=queued,running", NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(a.json, "jobs")), 1);
    done(&a);
    a = call("GET", "/v1/jobs", "state=sleeping", NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);
    a = call("DELETE", path, NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a.json, "state")), "cancelled");
    done(&a);
    a = call("DELETE", "/v1/jobs/999", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    done(&a);

    /* schedules */
    a = call("GET", "/v1/schedules", "workload=" KEY "&M=7", NULL);
    CU_ASSERT_EQUAL_FATAL(a.status, 200);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(a.json, "kernel_id")), g_kid);
    CU_ASSERT_TRUE(json_is_false(json_object_get(a.json, "extrapolated")));
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(a.json, "measured_ns")), 110, 1e-9);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a.json, "shape")), "M=7");
    /* the back-end its annotation names for f32 (this machine's vector row) */
    const char *be = json_string_value(json_object_get(a.json, "backend"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(be);
    CU_ASSERT_EQUAL(strncmp(be, "f32/", 4), 0);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=dense(K%3D32,N%3D64,M%3D1..64)&M=100&threads=1",
             NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_TRUE(json_is_true(json_object_get(a.json, "extrapolated")));
    done(&a);
    a = call("GET", "/v1/schedules", "M=7", NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=" KEY, NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=" KEY "&Q=3", NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=" KEY "&M=3&threads=0", NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=" KEY "&M=3&threads=2", NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=dense(M=1..4,N=4,K=4)&M=3", NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    CU_ASSERT_EQUAL(err_status(&a), 404);
    done(&a);
    a = call("GET", "/v1/schedules", "workload=dense(M=1..4&M=3", NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);

    /* kernel source */
    snprintf(path, sizeof path, "/v1/kernels/%lld/source", (long long)g_kid);
    a = call("GET", path, NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_STRING_EQUAL(a.text, "/* kernel */\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(a.ctype, "text/plain"));
    done(&a);
    a = call("GET", "/v1/kernels/77777/source", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    done(&a);
    a = call("GET", "/v1/kernels/x/source", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    done(&a);

    a = call("GET", "/v1/workloads", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    json_t *w = json_array_get(json_object_get(a.json, "workloads"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "key")), KEY);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(json_object_get(w, "scheduled_threads"), 0)),
                    1);
    done(&a);

    a = call("GET", "/metrics", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(a.ctype, "version=0.0.4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a.text, "dtune_jobs{state=\"cancelled\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a.text, "dtune_schedule_queries_total{result=\"hit\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(a.text, "dtune_schedule_queries_total{result=\"extrapolated\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(a.text, "dtune_http_requests_total{route=\"/v1/jobs\",method=\"POST\",code=\"202\"} 1\n"));
    done(&a);
}

/* The message of a JSON error answer ("" when there is none). */
static const char *err_message(const answer *a)
{
    const char *m =
        json_string_value(json_object_get(json_object_get(a->json, "error"), "message"));
    return m ? m : "";
}

/* Ids up to INT64_MAX are ids (404 when there is no such one); past it the
 * message says the range.  (9223372036854775807 used to be "must be a
 * positive integer".) */
static void test_id_range(void)
{
    answer a = call("GET", "/v1/kernels/9223372036854775807/source", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    CU_ASSERT_EQUAL(err_status(&a), 404);
    done(&a);
    a = call("GET", "/v1/jobs/9223372036854775807", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    CU_ASSERT_EQUAL(err_status(&a), 404);
    done(&a);
    a = call("DELETE", "/v1/jobs/9223372036854775807", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    done(&a);
    a = call("GET", "/v1/jobs/1000000000000000000", NULL, NULL); /* 19 digits */
    CU_ASSERT_EQUAL(a.status, 404);
    done(&a);
    const char *over[] = {"/v1/kernels/9223372036854775808/source",
                          "/v1/kernels/99999999999999999999999/source",
                          "/v1/kernels/1234567890123456789012345678901234567890/source",
                          "/v1/jobs/9223372036854775808"};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        a = call("GET", over[i], NULL, NULL);
        CU_ASSERT_EQUAL(a.status, 400);
        CU_ASSERT_PTR_NOT_NULL(strstr(err_message(&a), "from 1 to 9223372036854775807"));
        done(&a);
    }
    const char *bad[] = {"/v1/kernels/0/source", "/v1/kernels/-1/source",
                         "/v1/kernels/+1/source", "/v1/jobs/0", "/v1/jobs/1x", "/v1/jobs/ 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = call("GET", bad[i], NULL, NULL);
        CU_ASSERT_EQUAL(a.status, 400);
        CU_ASSERT_PTR_NOT_NULL(strstr(err_message(&a), "from 1 to 9223372036854775807"));
        done(&a);
    }
    /* leading zeros are still the number */
    char path[64];
    snprintf(path, sizeof path, "/v1/kernels/000%lld/source", (long long)g_kid);
    a = call("GET", path, NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 200);
    done(&a);
    CU_ASSERT_EQUAL(dt_api_parse_id("9223372036854775807"), INT64_MAX);
    CU_ASSERT_EQUAL(dt_api_parse_id("9223372036854775808"), 0);
    CU_ASSERT_EQUAL(dt_api_parse_id("18446744073709551617"), 0);
    CU_ASSERT_EQUAL(dt_api_parse_id("42"), 42);
}

/* Bytes that are not UTF-8 in a path or a query are the client's mistake:
 * 400 with a message, never a 500 (jansson refuses such strings, so every
 * answer that quoted them used to fail as "out of memory"). */
static void test_bad_utf8(void)
{
    struct {
        const char *path, *query;
    } cases[] = {
        {"/v1/jobs/\xff", NULL},
        {"/v1/kernels/\xff/source", NULL},
        {"/nope/\xc3", NULL},
        {"/healthz\xff", NULL},
        {"/v1/schedules", "workload=%ff&M=1"},
        {"/v1/schedules", "workload=" KEY "&M=%ff"},
        {"/v1/schedules", "workload=" KEY "&%ff=1"},
        {"/v1/schedules", "workload=" KEY "&M=1&target=%c0%af"},
        {"/v1/schedules", "workload=" KEY "&M=1&threads=%ed%a0%80"},
        {"/v1/jobs", "state=%ff"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        answer a = call("GET", cases[i].path, cases[i].query, NULL);
        CU_ASSERT_EQUAL(a.status, 400);
        CU_ASSERT_EQUAL(err_status(&a), 400);
        if (a.status != 400)
            fprintf(stderr, "\n  case %zu: %d %s\n", i, a.status, a.text ? a.text : "");
        done(&a);
    }
    /* a job id that is not UTF-8 is named in the answer, made readable */
    answer a = call("DELETE", "/v1/jobs/1\xff", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    CU_ASSERT_PTR_NOT_NULL(strstr(err_message(&a), "1\\xff"));
    done(&a);
    /* UTF-8 itself is fine */
    a = call("GET", "/v1/schedules", "workload=" KEY "&M=%c3%a9", NULL);
    CU_ASSERT_EQUAL(a.status, 400);
    CU_ASSERT_PTR_NULL(strstr(err_message(&a), "UTF-8"));
    done(&a);
    a = call("GET", "/caf\xc3\xa9", NULL, NULL);
    CU_ASSERT_EQUAL(a.status, 404);
    CU_ASSERT_PTR_NOT_NULL(strstr(err_message(&a), "/caf\xc3\xa9"));
    done(&a);
}

static int setup(void)
{
    g_dir = dt_test_tmpdir();
    if (!g_dir)
        return 1;
    snprintf(g_db, sizeof g_db, "%s/t.db", g_dir);
    dt_err e;
    if (make_db(&e) || dt_db_open(g_db, 0, &g_apidb, &e) ||
        dt_dispatch_cache_open(g_db, &g_cache, &e)) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return 1;
    }
    g_metrics = dt_metrics_new();
    g_api = (dt_api){.db = g_apidb, .cache = g_cache, .target_key = g_tkey, .cores = 4,
                     .default_threads = 1, .metrics = g_metrics, .kernel_source = fake_source,
                     .started_s = dt_now_s()};
    return 0;
}

static int teardown(void)
{
    dt_dispatch_cache_close(g_cache);
    dt_db_close(g_apidb);
    dt_metrics_free(g_metrics);
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

int main(void)
{
    CU_TestInfo tests[] = {{"valid job requests, stored and read back", test_request_valid},
                           {"invalid job requests say what and where", test_request_invalid},
                           {"job requests: max_kernels", test_request_max_kernels},
                           {"query strings and the loopback rule", test_query_and_loopback},
                           {"Prometheus text", test_metrics_text},
                           {"routing, status codes and JSON errors", test_routes},
                           {"ids up to INT64_MAX", test_id_range},
                           {"paths and queries that are not UTF-8 are 400", test_bad_utf8},
                           CU_TEST_INFO_NULL};
    CU_SuiteInfo suites[] = {{"daemon", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
