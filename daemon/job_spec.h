/* A tuning job as the daemon receives and stores it.
 *
 * Request (POST /v1/jobs body, a JSON object; docs/daemon.md):
 *   exactly one of  "model": {a model spec, docs/model-spec.md}
 *                   "workload": "dense(M=1..32,N=128,K=128)"
 *   optional        "trials": 1..100000000      (budget, records already in
 *                                                the database included)
 *                   "time": seconds (number) or "90s" / "25m" / "2h"
 *                   "strategy": "joint" | "per-shape" | "random"
 *                   "threads": 1..cores, "seed": >= 0, "topk": 0..16,
 *                   "min_time_ms": (0, 10000],
 *                   "max_kernels": "auto" (default) | "all" | 0..256
 *                                  (the selection's kernel budget; 0 = all)
 * Without trials and time the budget is 300 trials per workload (as
 * `dtune tune`).  Unknown fields are errors.
 *
 * Stored (jobs.spec / jobs.options): {"model": {...}} or {"workload": KEY}
 * (canonical), and every option resolved: {"trials", "time_s", "strategy",
 * "threads", "seed", "topk", "min_time_ms", "max_kernels"}; a job stored
 * without max_kernels (before the field existed) reads back as "all", the
 * default it was submitted under.
 *
 * Ownership: strings returned through char ** are malloc'ed for the caller;
 * a dt_job_params owns its model text (dt_job_params_free). */
#ifndef DT_DAEMON_JOB_SPEC_H
#define DT_DAEMON_JOB_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "shape/workload.h"
#include "tuner/search.h"
#include "tuner/select.h"
#include "tuner/task.h"

#define DT_JOB_MAX_TRIALS 100000000
#define DT_JOB_MAX_TIME_S (30.0 * 86400)

/* Validates a request body (len bytes) for a machine of `cores` cores
 * (default_threads when it names none) and returns what to store.
 * DT_EINVAL with "body:LINE:COL: FIELD: what is wrong" for any fault:
 * malformed JSON, a wrong type, an impossible budget, a bad model spec or
 * workload key. */
int dt_job_request_parse(const char *body, size_t len, int cores, int default_threads,
                         char **spec_json, char **options_json, dt_err *e);

typedef struct dt_job_params {
    char *model_text;            /* the model spec as JSON text, or NULL */
    char workload[DT_KEY_MAX];   /* when model_text is NULL */
    int64_t trials;              /* 0: none */
    double time_s;               /* 0: none */
    dt_strategy strategy;
    int threads, topk;
    uint64_t seed;
    double min_time_ms;
    int max_kernels;             /* K, DT_SELECT_AUTO or DT_SELECT_ALL */
} dt_job_params;

/* Reads a stored job back (DT_EINVAL when the stored JSON is not what
 * dt_job_request_parse writes). */
int dt_job_params_load(const char *spec_json, const char *options_json, dt_job_params *p,
                       dt_err *e);
void dt_job_params_free(dt_job_params *p);

/* The tasks of a job (tuner/model_tasks.h); t has room for
 * DT_TUNE_MAX_TASKS. */
int dt_job_params_tasks(const dt_job_params *p, dt_task *t, int *n, dt_err *e);

/* A short description of a stored spec for listings: {"model": NAME} or
 * {"workload": KEY}; new reference (an empty object when it does not
 * parse). */
json_t *dt_job_spec_summary(const char *spec_json);

#endif
