/* The measurement session: the one path from kernels to records, used by
 * `dtune measure`, `dtune tune`, the daemon's jobs (through dt_tune) and the
 * tests.
 *
 * A session registers the target (dt_measurer_open); a run (dt_mrun) names
 * a workload (registered when its id is 0), kernels (interned with their
 * sketch, canonical annotation and source hash when their id is 0) and
 * trials (a kernel, a shape as values, a thread count).  The run builds one
 * batch per kernel (dt_measurer_plan), measures the batches locally
 * (measure/runner.h: built in parallel, then run one at a time, each in an
 * isolated child) or on remote workers (measure/pool.h), and records every
 * trial exactly once (measurements.trial_uid): each batch in one
 * transaction as soon as its last result arrives.  A failed trial (compile
 * error, crash, time-out, wrong answer, lost worker) is a record like any
 * other, with its status.  A result that says ok with a time no CPU could
 * reach (dt_trial_result_possible: not finite, <= 0, min over median, under
 * the FLOP bound) is a worker fault, recorded as worker_lost with the value
 * in its error (the pool already turns those from workers into faults naming
 * the worker; this catches the local runner): nothing downstream may mistake
 * it for the fastest kernel.  A trial whose result never arrived (the pool
 * gave up, or the session's deadline passed) is not recorded: it was not
 * measured.
 *
 * Shapes travel as values in process (dt_trial.vals); their canonical text
 * is derived once, for the wire (docs/workers.md keeps text there), the
 * messages and the database, which stores text.
 *
 * Ownership: a dt_measurer borrows the database handle and the target (close
 * the measurer first).  A run's arrays belong to the caller; the error texts
 * the run stores in its trials are freed by dt_mtrials_free.  Not
 * thread-safe: one thread drives a session (pool results arrive on the
 * pool's thread and are recorded there, under the session's lock, while the
 * driving thread waits). */
#ifndef DT_TUNER_MEASURER_H
#define DT_TUNER_MEASURER_H

#include <stdint.h>

#include "common/error.h"
#include "common/target.h"
#include "db/db.h"
#include "measure/trial.h"
#include "space/annotation.h"
#include "shape/workload.h"
#include "tuner/task.h"

typedef struct dt_measurer_opts {
    const char *workers;       /* "HOST:PORT,..." or NULL: this machine */
    const char *token_file;    /* with workers */
    double min_time_s;         /* per trial (default 0.005) */
    uint64_t seed;             /* inputs */
    int flush_cache;           /* cold-cache trials (dt_timing.flush_cache) */
    double no_worker_grace_s;  /* give up when no worker is usable this long (30) */
    double batch_deadline_s;   /* a worker's limit for one batch (0: derived from each
                                * batch, dt_batch_deadline_s) */
    const char *runner_exe;    /* the dtune binary for local trials (NULL: this one) */
    /* Progress (may be NULL): after every result and between waits for
     * workers, with the session's lock held, on the thread that took the
     * result or waits; done of total trials of the current run. */
    void (*progress)(int64_t done, int64_t total, void *ud);
    void *ud;
} dt_measurer_opts;

typedef struct dt_measurer dt_measurer;

/* Registers tg (key target_key) in db and, when w is not NULL, workload w:
 * the upserts every session and every task (dt_task_attach) go through.
 * target_id / workload_id may be NULL when not wanted. */
int dt_measurer_register(dt_db *db, const dt_target *tg, const char *target_key,
                         const dt_workload *w, int64_t *target_id, int64_t *workload_id,
                         dt_err *e);

/* Opens a session on db for target tg: registers the target, then readies
 * the local runner (o->workers NULL) or connects the pool (workers must
 * announce target_key).  A token file that cannot be used is DT_EINVAL. */
int dt_measurer_open(const dt_measurer_opts *o, dt_db *db, const dt_target *tg,
                     const char *target_key, dt_measurer **out, dt_err *e);
void dt_measurer_close(dt_measurer *m);

typedef struct dt_mkernel {
    dt_annotation a;           /* the kernel: sketch and annotation */
    int64_t id;                /* kernels.id; 0: interned by the run and filled in */
    char source_hash[65];      /* filled by the run: BLAKE2b of its generated C source */
} dt_mkernel;

typedef struct dt_mtrial {
    /* given */
    int kernel;                  /* index into the run's kernels */
    int64_t shape[DT_MAX_VARS];  /* the shape's values, one per workload variable */
    int threads;                 /* >= 1 */
    /* filled by dt_measurer_measure */
    char uid[DT_TRIAL_UID_LEN + 1];
    char text[128];              /* the shape's canonical text, as recorded */
    int got;                     /* a result arrived: res holds it */
    int recorded;                /* its record is committed (or already was) */
    int already;                 /* the record was there before: a repeated delivery */
    dt_trial_result res;         /* status, times, repeats, error (owned) */
} dt_mtrial;

typedef struct dt_mrun {
    const dt_workload *w;
    int64_t workload_id;       /* 0: registered by the run and filled in */
    dt_mkernel *kernels;
    int nk;
    dt_mtrial *trials;
    int n;
    int timed_out;             /* out: the session's deadline passed with trials of
                                * this run unanswered (they are not recorded) */
} dt_mrun;

/* Measures and records every trial of r (see the top of this file); the
 * trials' outputs are reset first, so they must be zeroed or left by an
 * earlier run.  0 when
 * the machinery worked, whatever the trials' statuses; DT_EIO when no worker
 * could be used; a code generation, runner or database error as it is (the
 * batches recorded before it stay recorded; trials record what happened to
 * them in got / recorded). */
int dt_measurer_measure(dt_measurer *m, dt_mrun *r, dt_err *e);

/* Frees the error texts a run left in trials[0..n). */
void dt_mtrials_free(dt_mtrial *trials, int n);

/* The batches of trials[0..n): one per kernel, in the order the kernels
 * first appear, each with that kernel's trials in their order, split after
 * every max_trials trials (<= 0: DT_BATCH_MAX_TRIALS).  batch_of[i]
 * receives trial i's batch; returns the number of batches, or DT_EINVAL
 * (a negative kernel index) / DT_ENOMEM. */
int dt_measurer_plan(const dt_mtrial *trials, int n, int max_trials, int *batch_of);

/* After at (a dt_now_s time; 0: never) runs on workers stop waiting: batches
 * still in flight are abandoned, their trials not recorded (r->timed_out);
 * a run started after it sends nothing.  For a time budget (dt_tune's
 * --time).  Local runs are not cut: each trial has its own time limit. */
void dt_measurer_set_deadline(dt_measurer *m, double at);
/* Results refused as impossible (worker faults) in this session. */
int64_t dt_measurer_faults(const dt_measurer *m);

/* Trials recorded and seconds spent in dt_measurer_measure by this session. */
int64_t dt_measurer_trials(const dt_measurer *m);
double dt_measurer_seconds(const dt_measurer *m);

/* ---- the tuner's form: trials of a task's kernels on its shapes ---------- */

typedef struct dt_mreq {
    int k;                     /* kernel index in the task */
    int64_t s;                 /* shape index in the task's set */
    /* filled by dt_measurer_run */
    dt_trial_status status;    /* worker_lost when not recorded */
    double ns;                 /* min ns when ok, else NAN */
    int recorded;              /* its record exists (0: no result came, e.g. the
                                * session's deadline passed) */
} dt_mreq;

/* Measures reqs[0..n) of task t at t->threads through dt_measurer_measure
 * (the task's shape indices become values; kernels not yet in the database
 * are interned and their ids kept in t), and adds every recorded trial to t
 * (dt_task_record, t->trials). */
int dt_measurer_run(dt_measurer *m, dt_task *t, dt_mreq *reqs, int n, dt_err *e);

#endif
