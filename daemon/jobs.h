/* The daemon's job runner: one thread that takes unfinished jobs from the
 * jobs table in id order and tunes them (tuner/tune.h), one at a time
 * (measurements run one at a time per machine anyway).
 *
 * Lifecycle of a job (docs/daemon.md):
 *   queued -> running -> done | failed | cancelled
 * - running: set when the thread takes it; progress JSON (rounds, trials,
 *   objectives per workload) and a checkpoint ({"elapsed_s", "runs"}) are
 *   written at most every progress_interval_s and at every selection.
 * - cancel (dt_jobs_cancel): a queued job becomes cancelled at once; a
 *   running one stops at its next round boundary, keeps what was measured
 *   (the schedules are selected from it) and becomes cancelled.
 * - stop (dt_jobs_stop, the daemon's SIGTERM): no job is taken any more; the
 *   running tune stops at its next round boundary, stores schedules from
 *   what it measured, and its job goes back to queued, so that the next
 *   daemon resumes it from its records (nothing is measured twice).
 * - crash or kill -9: the job stays running in the table; a starting daemon
 *   takes queued and running jobs alike.
 * A job's time budget counts the time of all its runs (checkpoint).
 *
 * Threads: the runner opens its own database connection.  dt_jobs_cancel,
 * dt_jobs_wake and dt_jobs_running are called from the loop thread, with the
 * loop's connection for cancel.  on_exit is called on the runner thread when
 * it ends (after dt_jobs_stop), e.g. to uv_async_send the loop.
 * Ownership: dt_jobs_start copies the strings of its options;
 * dt_jobs_join frees the runner. */
#ifndef DT_DAEMON_JOBS_H
#define DT_DAEMON_JOBS_H

#include <stdint.h>

#include "common/error.h"
#include "common/target.h"
#include "daemon/metrics.h"
#include "db/db.h"

typedef struct dt_jobs_opts {
    const char *db_path;
    const dt_target *tg;            /* copied */
    const char *target_key;
    const char *workers, *token_file; /* remote measurement (both) or NULL */
    const char *runner_exe;         /* dtune binary for local trials; NULL: this one */
    dt_metrics *metrics;            /* may be NULL; borrowed */
    double progress_interval_s;     /* 0: 0.5 */
    /* finished jobs kept (dt_db_job_retention_parse; NULL: the default);
     * the runner prunes the rest at start and hourly while idle */
    const char *keep_jobs;
    void (*on_exit)(void *ud);      /* may be NULL */
    void *ud;
} dt_jobs_opts;

typedef struct dt_jobs dt_jobs;

int dt_jobs_start(const dt_jobs_opts *o, dt_jobs **out, dt_err *e);

/* A job was queued: look at the table again. */
void dt_jobs_wake(dt_jobs *j);

/* Cancels job id.  *now receives its state after the call: cancelled (it
 * was queued), running (it stops at its next round boundary and then
 * becomes cancelled), or done / failed / cancelled when it had already
 * ended (nothing changed).  DT_ENOTFOUND when there is no such job. */
int dt_jobs_cancel(dt_jobs *j, dt_db *db, int64_t id, dt_job_state *now, dt_err *e);

/* Id of the job being tuned, 0 when idle. */
int64_t dt_jobs_running(dt_jobs *j);

/* Takes no more jobs and stops the running tune at its next round boundary
 * (its job is queued again).  Returns at once. */
void dt_jobs_stop(dt_jobs *j);

/* Waits for the runner thread to end (call dt_jobs_stop first) and frees j. */
void dt_jobs_join(dt_jobs *j);

#endif
