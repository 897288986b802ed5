/* The tuner's measurements: trials of a task's kernels, measured locally
 * (measure/runner.h, an isolated child per batch) or on remote workers
 * (measure/pool.h), and recorded in the database exactly once, as they
 * arrive, so that a killed tune loses nothing it measured.
 *
 * One batch per kernel carries its trials; builds run in parallel.  A failed
 * trial (compile error, crash, time-out, wrong answer, lost worker) is a
 * record like any other, with its status: the kernel is never chosen.
 *
 * Ownership: a dt_measurer borrows the database handle; close it before the
 * database.  Not thread-safe (one tune drives it). */
#ifndef DT_TUNER_MEASURER_H
#define DT_TUNER_MEASURER_H

#include <stdint.h>

#include "common/error.h"
#include "db/db.h"
#include "measure/trial.h"
#include "tuner/task.h"

typedef struct dt_mreq {
    int k;                     /* kernel index in the task */
    int64_t s;                 /* shape index */
    /* filled by dt_measurer_run */
    dt_trial_status status;
    double ns;                 /* min ns when ok, else NAN */
} dt_mreq;

typedef struct dt_measurer_opts {
    const char *workers;       /* "HOST:PORT,..." or NULL: this machine */
    const char *token_file;    /* with workers */
    double min_time_s;         /* per trial (default 0.005) */
    uint64_t seed;             /* inputs */
    double no_worker_grace_s;  /* give up when no worker is usable this long (30) */
    const char *runner_exe;    /* the dtune binary for local trials (NULL: this one) */
} dt_measurer_opts;

typedef struct dt_measurer dt_measurer;

int dt_measurer_open(const dt_measurer_opts *o, const char *target_key, dt_db *db,
                     dt_measurer **out, dt_err *e);

/* Measures reqs[0..n) of task t (kernels not yet in the database are
 * interned first), records every result in the database and in t
 * (dt_task_record, t->trials).  Returns 0 when the machinery worked (trial
 * failures are statuses); DT_EIO when no worker could be used; a database
 * error as it is. */
int dt_measurer_run(dt_measurer *m, dt_task *t, dt_mreq *reqs, int n, dt_err *e);

/* Trials measured and seconds spent by this measurer so far. */
int64_t dt_measurer_trials(const dt_measurer *m);
double dt_measurer_seconds(const dt_measurer *m);

void dt_measurer_close(dt_measurer *m);

#endif
