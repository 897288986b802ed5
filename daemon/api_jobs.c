/* The job routes: POST /v1/jobs, GET /v1/jobs, GET|DELETE /v1/jobs/{id}
 * (daemon/api_routes.h). */
#include <stdlib.h>
#include <string.h>

#include "daemon/api_routes.h"
#include "daemon/api_util.h"
#include "daemon/job_spec.h"

/* A failed jobs-table call: 404 for a missing job (id), 503 while the
 * database is busy, else 500. */
static void db_failed(dt_http_response *res, int rc, int64_t id, const dt_err *e)
{
    if (rc == DT_ENOTFOUND)
        dt_api_error(res, 404, "no job %lld", (long long)id);
    else
        dt_api_error(res, rc == DT_EBUSY ? 503 : 500, "%s", e->msg);
}

static json_t *parsed_or_null(const char *text)
{
    json_error_t jerr;
    json_t *v = text ? json_loads(text, 0, &jerr) : NULL;
    return v ? v : json_null();
}

/* full: the whole spec, progress and checkpoint; else a summary. */
static json_t *job_json(const dt_db_job *j, int full)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(j->id));
    json_object_set_new(o, "state", json_string(dt_job_state_name(j->state)));
    json_object_set_new(o, "created_at", json_integer(j->created_at));
    json_object_set_new(o, "updated_at", json_integer(j->updated_at));
    json_object_set_new(o, "spec", full ? parsed_or_null(j->spec) : dt_job_spec_summary(j->spec));
    json_object_set_new(o, "options", parsed_or_null(j->options));
    json_t *p = parsed_or_null(j->progress);
    if (!full && json_is_object(p))
        json_object_del(p, "workloads");
    json_object_set_new(o, "progress", p);
    if (full)
        json_object_set_new(o, "checkpoint", parsed_or_null(j->checkpoint));
    json_object_set_new(o, "error", j->error ? json_string(j->error) : json_null());
    return o;
}

void dt_api_jobs_list(dt_api *a, const dt_http_request *req, dt_http_response *res)
{
    unsigned mask = DT_JOB_MASK_ALL;
    char st[64];
    int q = dt_api_query_param(req->query, "state", st, sizeof st);
    if (q < 0) {
        dt_api_error(res, 400, "malformed 'state' query parameter");
        return;
    }
    if (q > 0) {
        mask = 0;
        for (char *save = NULL, *tok = strtok_r(st, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            dt_job_state s;
            if (dt_job_state_parse(tok, &s)) {
                dt_api_error(res, 400,
                             "state '%s' is not one of queued, running, done, failed, cancelled",
                             tok);
                return;
            }
            mask |= DT_JOB_MASK(s);
        }
    }
    dt_db_job *jobs = NULL;
    size_t n = 0;
    dt_err e;
    int rc = dt_db_job_list(a->db, mask, &jobs, &n, &e);
    if (rc) {
        db_failed(res, rc, 0, &e);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, job_json(&jobs[i], 0));
    dt_db_jobs_free(jobs, n);
    dt_api_json(res, 200, json_pack("{s:o}", "jobs", arr));
}

void dt_api_jobs_create(dt_api *a, const dt_http_request *req, dt_http_response *res)
{
    dt_err e;
    dt_err_clear(&e);
    char *spec = NULL, *opts = NULL;
    int rc = dt_job_request_parse(req->body, req->body_len, a->cores, a->default_threads, &spec,
                                  &opts, &e);
    if (rc) {
        dt_api_error(res, rc == DT_ENOMEM ? 500 : 400, "%s", e.msg);
        return;
    }
    int64_t id = 0;
    rc = dt_db_job_create(a->db, spec, opts, &id, &e);
    free(spec);
    free(opts);
    if (rc) {
        db_failed(res, rc, 0, &e);
        return;
    }
    dt_metrics_job_submitted(a->metrics);
    if (a->jobs)
        dt_jobs_wake(a->jobs);
    char url[64];
    snprintf(url, sizeof url, "/v1/jobs/%lld", (long long)id);
    dt_api_json(res, 202,
                json_pack("{s:I, s:s, s:s}", "id", (json_int_t)id, "state", "queued", "url", url));
}

void dt_api_job_get(dt_api *a, int64_t id, dt_http_response *res)
{
    dt_db_job j;
    dt_err e;
    int rc = dt_db_job_get(a->db, id, &j, &e);
    if (rc) {
        db_failed(res, rc, id, &e);
        return;
    }
    json_t *o = job_json(&j, 1);
    if (a->jobs && j.state == DT_JOB_RUNNING)
        json_object_set_new(o, "active", json_boolean(dt_jobs_running(a->jobs) == id));
    dt_db_job_free(&j);
    dt_api_json(res, 200, o);
}

void dt_api_job_cancel(dt_api *a, int64_t id, dt_http_response *res)
{
    dt_err e;
    dt_job_state now = DT_JOB_QUEUED;
    int rc;
    if (a->jobs) {
        rc = dt_jobs_cancel(a->jobs, a->db, id, &now, &e);
    } else {
        /* no runner (tests): a queued or running job is cancelled in the table */
        dt_db_job j;
        if (!(rc = dt_db_job_get(a->db, id, &j, &e))) {
            now = j.state;
            dt_db_job_free(&j);
            dt_db_job_update u = {.set_state = true, .state = DT_JOB_CANCELLED};
            if ((now == DT_JOB_QUEUED || now == DT_JOB_RUNNING) &&
                !(rc = dt_db_job_update_fields(a->db, id, &u, &e)))
                now = DT_JOB_CANCELLED;
        }
    }
    if (rc) {
        db_failed(res, rc, id, &e);
        return;
    }
    if (now == DT_JOB_RUNNING) {
        dt_api_json(res, 202, json_pack("{s:I, s:s, s:b}", "id", (json_int_t)id, "state",
                                        "running", "cancel_requested", 1));
        return;
    }
    if (now == DT_JOB_CANCELLED) {
        /* just cancelled, or cancelled before: either way that is the answer,
         * unless it had ended otherwise */
        dt_api_json(res, 200,
                    json_pack("{s:I, s:s}", "id", (json_int_t)id, "state", "cancelled"));
        return;
    }
    dt_api_error(res, 409, "job %lld has already ended: %s", (long long)id,
                 dt_job_state_name(now));
}
