/* The job runner thread (daemon/jobs.h). */
#include "daemon/jobs.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "common/log.h"
#include "daemon/job_spec.h"
#include "tuner/curve.h"
#include "tuner/tune.h"
#include "tuner/tune_json.h"

struct dt_jobs {
    char *db_path, *target_key, *workers, *token_file, *runner_exe;
    dt_target tg;
    dt_metrics *metrics;
    double interval_s;
    dt_db_job_retention keep_jobs;
    double pruned_at;               /* runner thread: last retention prune (dt_now_s) */
    void (*on_exit)(void *ud);
    void *ud;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    int stopping, wake;
    int64_t current;
    int cancel;                     /* the current job is being cancelled */
    volatile sig_atomic_t stop_flag; /* the tuner's stop: cancel or shutdown */
};

/* ---- one job ------------------------------------------------------------------ */

typedef struct {
    dt_jobs *j;
    dt_db *db;
    int64_t id;
    dt_task *tasks;
    int n;
    dt_select_info sel[DT_TUNE_MAX_TASKS];
    int selected[DT_TUNE_MAX_TASKS];
    const char *skipped[DT_TUNE_MAX_TASKS]; /* why (the tune result's text), when skipped */
    int nselected, nskipped;
    double prior_s;                 /* elapsed in earlier runs */
    int runs;                       /* this one included */
    int64_t rounds, trials_new;
    double last_write;
    const char *phase;
    dt_tune_event last;             /* model-level numbers of the last event */
    int have_last;
    dt_tune_curve curve;            /* every round, earlier runs' included */
} run_ctx;

static json_t *progress_json(const run_ctx *c)
{
    json_t *p = json_object(), *ws = json_array();
    const dt_tune_event *ev = c->have_last ? &c->last : NULL;
    json_object_set_new(p, "phase", json_string(c->phase));
    json_object_set_new(p, "rounds", json_integer(c->rounds));
    json_object_set_new(p, "trials", json_integer(ev ? ev->trials_used : 0));
    json_object_set_new(p, "trials_budget",
                        ev && ev->trials_budget > 0 ? json_integer(ev->trials_budget) : json_null());
    json_object_set_new(p, "trials_this_run", json_integer(c->trials_new));
    json_object_set_new(p, "elapsed_s", json_real(c->prior_s + (ev ? ev->elapsed_s : 0)));
    json_object_set_new(p, "trials_per_min", json_real(ev ? ev->trials_per_min : 0));
    json_object_set_new(p, "model_latency_ns",
                        dt_json_num_or_null(ev ? ev->model_latency_ns : NAN));
    json_object_set_new(p, "runs", json_integer(c->runs));
    json_object_set_new(p, "workloads_scheduled", json_integer(c->nselected));
    json_object_set_new(p, "workloads_skipped", json_integer(c->nskipped));
    for (int i = 0; i < c->n; i++) {
        /* outcome null until its selection: scheduled (a schedule stored) or skipped */
        json_t *w = dt_tune_workload_json(&c->tasks[i], DT_TUNE_JSON_PROGRESS,
                                          c->selected[i]  ? "scheduled"
                                          : c->skipped[i] ? "skipped"
                                                          : NULL,
                                          c->skipped[i], c->selected[i] ? &c->sel[i] : NULL);
        json_array_append_new(ws, w);
    }
    json_object_set_new(p, "workloads", ws);
    json_t *cj = dt_tune_curve_json(&c->curve, c->tasks, c->n);
    json_object_set_new(p, "curve", cj ? cj : json_null());
    return p;
}

/* Writes progress and checkpoint (and the state, when set) in one update. */
static void write_progress(run_ctx *c, const dt_db_job_update *extra)
{
    json_t *p = progress_json(c);
    json_t *cp = json_pack("{s:f, s:i}", "elapsed_s",
                           c->prior_s + (c->have_last ? c->last.elapsed_s : 0), "runs", c->runs);
    char *ps = p ? json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    char *cs = cp ? json_dumps(cp, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    dt_db_job_update u = extra ? *extra : (dt_db_job_update){0};
    u.progress = ps;
    u.checkpoint = cs;
    dt_err e;
    if (dt_db_job_update_fields(c->db, c->id, &u, &e))
        dt_log_warn("daemon: job %lld: cannot record progress: %s", (long long)c->id, e.msg);
    free(ps);
    free(cs);
    json_decref(p);
    json_decref(cp);
    c->last_write = dt_now_s();
}

static void on_event(const dt_tune_event *ev, void *ud)
{
    run_ctx *c = ud;
    c->last = *ev;
    c->have_last = 1;
    int force = 0;
    if (ev->kind == DT_TUNE_EV_ROUND) {
        dt_tune_curve_add(&c->curve, ev);
        c->rounds++;
        c->trials_new += ev->round.trials;
        dt_metrics_trials(c->j->metrics, ev->round.trials);
    } else if (ev->kind == DT_TUNE_EV_SELECTED) {
        c->phase = "selection";
        c->sel[ev->task_index] = ev->select;
        c->selected[ev->task_index] = 1;
        c->nselected++;
        c->trials_new += ev->select.trials;
        dt_metrics_trials(c->j->metrics, ev->select.trials);
        force = 1;
    } else if (ev->kind == DT_TUNE_EV_SKIPPED) {
        c->phase = "selection";
        c->skipped[ev->task_index] = ev->reason; /* lives in the tune result */
        c->nskipped++;
        dt_log_warn("daemon: job %lld: %s (%s) skipped, no schedule stored: %s",
                    (long long)c->id, ev->task->name, ev->task->key, ev->reason);
        force = 1;
    }
    if (force || dt_now_s() - c->last_write >= c->j->interval_s)
        write_progress(c, NULL);
}

static void set_final(dt_jobs *j, dt_db *db, int64_t id, dt_job_state s, const char *error)
{
    DT_ASSERT(dt_job_state_name(s), "a job's final state is one of the job states");
    dt_db_job_update u = {.set_state = true, .state = s, .error = error};
    dt_err e;
    if (dt_db_job_update_fields(db, id, &u, &e))
        dt_log_error("daemon: job %lld: cannot set state %s: %s", (long long)id,
                     dt_job_state_name(s), e.msg);
    if (s != DT_JOB_QUEUED && s != DT_JOB_RUNNING)
        dt_metrics_job_finished(j->metrics, s);
}

static void run_job(dt_jobs *j, dt_db *db, const dt_db_job *job)
{
    dt_err e;
    dt_err_clear(&e);
    dt_job_params p;
    run_ctx *c = calloc(1, sizeof *c);
    dt_task *tasks = calloc(DT_TUNE_MAX_TASKS, sizeof *tasks);
    dt_tune_result *r = calloc(1, sizeof *r);
    int n = 0, rc, have_params = 0;
    if (!c || !tasks || !r) {
        rc = dt_errf(&e, DT_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = dt_job_params_load(job->spec, job->options, &p, &e)))
        goto out;
    have_params = 1;
    if (p.threads > j->tg.cores) {
        rc = dt_errf(&e, DT_EINVAL, "the job asks for %d threads; this machine has %d cores",
                     p.threads, j->tg.cores);
        goto out;
    }
    if ((rc = dt_job_params_tasks(&p, tasks, &n, &e)))
        goto out;
    DT_ASSERT(n >= 1 && n <= DT_TUNE_MAX_TASKS, "a job's tasks fill 1..DT_TUNE_MAX_TASKS slots");
    json_error_t jerr;
    json_t *cp = job->checkpoint ? json_loads(job->checkpoint, 0, &jerr) : NULL;
    *c = (run_ctx){.j = j, .db = db, .id = job->id, .tasks = tasks, .n = n,
                   .prior_s = json_number_value(json_object_get(cp, "elapsed_s")),
                   .runs = (int)json_integer_value(json_object_get(cp, "runs")) + 1,
                   .phase = "search"};
    json_decref(cp);
    /* the curve goes on from the earlier runs' */
    dt_tune_curve_init(&c->curve);
    c->curve.offset_s = c->prior_s;
    json_t *prog = job->progress ? json_loads(job->progress, 0, &jerr) : NULL;
    dt_tune_curve_load_json(&c->curve, json_object_get(prog, "curve"), tasks, n);
    json_decref(prog);

    dt_tune_opts o;
    dt_tune_opts_default(&o);
    o.trials = p.trials;
    if (p.time_s > 0)
        o.time_s = p.time_s - c->prior_s > 0.001 ? p.time_s - c->prior_s : 0.001;
    o.strategy = p.strategy;
    o.seed = p.seed;
    o.topk = p.topk;
    o.max_kernels = p.max_kernels;
    o.meas.min_time_s = p.min_time_ms * 1e-3;
    o.meas.seed = p.seed;
    o.meas.workers = j->workers;
    o.meas.token_file = j->token_file;
    o.meas.runner_exe = j->runner_exe;
    o.on_event = on_event;
    o.ud = c;
    o.stop = &j->stop_flag;
    /* the minimum budget is checked when the job first runs; a resumed run
     * (its time mostly spent) goes on from its records */
    o.no_min_check = c->runs > 1;
    dt_log_info("daemon: job %lld: tuning %d workload%s (run %d)", (long long)job->id, n,
                n == 1 ? "" : "s", c->runs);
    write_progress(c, NULL);
    rc = dt_tune(db, &j->tg, j->target_key, tasks, n, &o, r, &e);
    if (rc)
        goto out;
    c->phase = "done";
    c->last.elapsed_s = r->seconds;
    pthread_mutex_lock(&j->mu);
    int cancelled = j->cancel, stopping = j->stopping;
    pthread_mutex_unlock(&j->mu);
    dt_job_state s = DT_JOB_DONE;
    char err[DT_ERR_MSG_MAX] = "";
    if (r->stopped && cancelled)
        s = DT_JOB_CANCELLED;
    else if (r->stopped && stopping) {
        s = DT_JOB_QUEUED;
        c->phase = "interrupted";
    } else if (r->nscheduled == 0) {
        /* nothing to show for it: failed, with every workload's reason;
         * some skipped and others scheduled is done (progress says which) */
        s = DT_JOB_FAILED;
        int len = snprintf(err, sizeof err, "no workload got a schedule:");
        for (int i = 0; i < n && len > 0 && (size_t)len < sizeof err; i++)
            len += snprintf(err + len, sizeof err - (size_t)len, "%s %s: %s", i ? ";" : "",
                            tasks[i].name, r->reason[i]);
    }
    DT_ASSERT(s == DT_JOB_DONE || s == DT_JOB_CANCELLED || s == DT_JOB_QUEUED || s == DT_JOB_FAILED,
              "a run ends done, cancelled, failed, or queued again when the daemon stops");
    DT_ASSERT(s != DT_JOB_FAILED || err[0], "a failed job says why");
    dt_db_job_update u = {.set_state = true, .state = s, .error = err[0] ? err : NULL};
    write_progress(c, &u);
    if (s != DT_JOB_QUEUED)
        dt_metrics_job_finished(j->metrics, s);
    dt_log_info("daemon: job %lld: %s after %lld trials in %.1f s (%d workload%s scheduled, %d "
                "skipped)",
                (long long)job->id, dt_job_state_name(s), (long long)r->trials_new, r->seconds,
                r->nscheduled, r->nscheduled == 1 ? "" : "s", r->nskipped);
out:
    if (rc) {
        dt_log_error("daemon: job %lld failed: %s", (long long)job->id, e.msg);
        set_final(j, db, job->id, DT_JOB_FAILED, e.msg[0] ? e.msg : dt_strerror(rc));
    }
    for (int i = 0; i < n; i++)
        dt_task_free(&tasks[i]);
    if (have_params)
        dt_job_params_free(&p);
    free(tasks);
    free(r);
    if (c)
        dt_tune_curve_free(&c->curve);
    free(c);
}

/* ---- the thread ---------------------------------------------------------------- */

/* Under mu: the first unfinished job, marked running; 0 when there is none. */
static int take_next(dt_db *db, dt_db_job *out)
{
    dt_db_job *list = NULL;
    size_t n = 0;
    dt_err e;
    if (dt_db_job_list_unfinished(db, &list, &n, &e)) {
        dt_log_warn("daemon: cannot read the job queue: %s", e.msg);
        return -1;
    }
    int got = 0;
    DT_ASSERT(n == 0 || list[0].state == DT_JOB_QUEUED || list[0].state == DT_JOB_RUNNING,
              "the job taken next is an unfinished one");
    if (n > 0) {
        dt_db_job_update u = {.set_state = true, .state = DT_JOB_RUNNING, .error = ""};
        if (dt_db_job_update_fields(db, list[0].id, &u, &e)) {
            dt_log_warn("daemon: cannot start job %lld: %s", (long long)list[0].id, e.msg);
            got = -1;
        } else {
            *out = list[0];
            memset(&list[0], 0, sizeof list[0]); /* its strings now belong to *out */
            got = 1;
        }
    }
    dt_db_jobs_free(list, n);
    return got;
}

/* Finished jobs past the retention are deleted at start and then hourly,
 * while the runner is idle (docs/daemon.md, "Job history"). */
#define JOB_PRUNE_PERIOD_S 3600.0

static void prune_jobs(dt_jobs *j, dt_db *db)
{
    int64_t n = 0;
    dt_err e;
    j->pruned_at = dt_now_s();
    if (dt_db_job_prune(db, &j->keep_jobs, 0, false, &n, &e))
        dt_log_warn("daemon: cannot prune the job history: %s", e.msg);
    else if (n > 0)
        dt_log_info("daemon: pruned %lld finished job%s past the retention", (long long)n,
                    n == 1 ? "" : "s");
}

static void *runner_main(void *arg)
{
    dt_jobs *j = arg;
    dt_db *db = NULL;
    dt_err e;
    if (dt_db_open(j->db_path, DT_DB_CREATE, &db, &e)) {
        dt_log_error("daemon: job runner: %s", e.msg);
        goto done;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->stopping) {
        dt_db_job job;
        int got = take_next(db, &job);
        if (got <= 0 && (j->pruned_at == 0 || dt_now_s() - j->pruned_at >= JOB_PRUNE_PERIOD_S)) {
            pthread_mutex_unlock(&j->mu);
            prune_jobs(j, db);
            pthread_mutex_lock(&j->mu);
        }
        if (got <= 0) {
            if (!j->wake || got < 0) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += got < 0 ? 1 : 5; /* the table is looked at again anyway */
                pthread_cond_timedwait(&j->cv, &j->mu, &ts);
            }
            j->wake = 0;
            continue;
        }
        j->current = job.id;
        j->cancel = 0;
        j->stop_flag = 0;
        pthread_mutex_unlock(&j->mu);
        run_job(j, db, &job);
        dt_db_job_free(&job);
        pthread_mutex_lock(&j->mu);
        j->current = 0;
    }
    pthread_mutex_unlock(&j->mu);
done:
    dt_db_close(db);
    if (j->on_exit)
        j->on_exit(j->ud);
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void free_jobs(dt_jobs *j)
{
    free(j->db_path);
    free(j->target_key);
    free(j->workers);
    free(j->token_file);
    free(j->runner_exe);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

int dt_jobs_start(const dt_jobs_opts *o, dt_jobs **out, dt_err *e)
{
    *out = NULL;
    dt_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->db_path = dup_or_null(o->db_path);
    j->target_key = dup_or_null(o->target_key);
    j->workers = dup_or_null(o->workers);
    j->token_file = dup_or_null(o->token_file);
    j->runner_exe = dup_or_null(o->runner_exe);
    j->tg = *o->tg;
    j->metrics = o->metrics;
    j->interval_s = o->progress_interval_s > 0 ? o->progress_interval_s : 0.5;
    if (dt_db_job_retention_parse(o->keep_jobs ? o->keep_jobs : DT_DB_KEEP_JOBS_DEFAULT,
                                  &j->keep_jobs, e)) {
        free_jobs(j);
        return DT_EINVAL;
    }
    j->on_exit = o->on_exit;
    j->ud = o->ud;
    if (!j->db_path || !j->target_key) {
        free_jobs(j);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    /* SIGTERM/SIGINT belong to the loop thread: blocked in the runner (its
     * trial children get a clean mask from the runner). */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(&j->thread, NULL, runner_main, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        free_jobs(j);
        return dt_errf(e, DT_EIO, "cannot start the job runner thread: %s", strerror(rc));
    }
    j->started = 1;
    *out = j;
    return 0;
}

void dt_jobs_wake(dt_jobs *j)
{
    pthread_mutex_lock(&j->mu);
    j->wake = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

int dt_jobs_cancel(dt_jobs *j, dt_db *db, int64_t id, dt_job_state *now, dt_err *e)
{
    pthread_mutex_lock(&j->mu);
    dt_db_job job;
    int rc = dt_db_job_get(db, id, &job, e);
    if (rc)
        goto out;
    *now = job.state;
    if (id == j->current) {
        j->cancel = 1;
        j->stop_flag = 1;
        *now = DT_JOB_RUNNING;
    } else if (job.state == DT_JOB_QUEUED || job.state == DT_JOB_RUNNING) {
        /* not taken by this runner (yet): the runner takes jobs under mu */
        dt_db_job_update u = {.set_state = true, .state = DT_JOB_CANCELLED};
        if (!(rc = dt_db_job_update_fields(db, id, &u, e))) {
            *now = DT_JOB_CANCELLED;
            dt_metrics_job_finished(j->metrics, DT_JOB_CANCELLED);
        }
    }
    dt_db_job_free(&job);
out:
    pthread_mutex_unlock(&j->mu);
    return rc;
}

int64_t dt_jobs_running(dt_jobs *j)
{
    pthread_mutex_lock(&j->mu);
    int64_t id = j->current;
    pthread_mutex_unlock(&j->mu);
    return id;
}

void dt_jobs_stop(dt_jobs *j)
{
    pthread_mutex_lock(&j->mu);
    j->stopping = 1;
    j->stop_flag = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void dt_jobs_join(dt_jobs *j)
{
    if (!j)
        return;
    if (j->started)
        pthread_join(j->thread, NULL);
    free_jobs(j);
}
