/* The tuner's side of remote measurement: a pool of worker connections
 * (libuv, on its own thread) that batches are submitted to.
 *
 * - Connects to every "HOST:PORT", checks the HELLO target against the
 *   pool's target key (a mismatch refuses that worker with a clear message),
 *   authenticates both ways (measure/wire.h).
 * - At most `inflight` batches per worker; a batch not answered within its
 *   deadline counts as a lost worker for that batch.
 * - A worker that disconnects or times out is reconnected with exponential
 *   back-off (0.2 s doubling to 10 s); its in-flight batches are requeued on
 *   another worker once; a batch lost twice reports worker_lost for its
 *   trials.
 * - Every trial's result is delivered exactly once through on_result, even
 *   if a lost worker's late answer arrives after the batch was requeued.
 *
 * Ownership: the pool copies submitted batches; results passed to the
 * callback are borrowed for the call. */
#ifndef DT_MEASURE_POOL_H
#define DT_MEASURE_POOL_H

#include "common/error.h"
#include "measure/trial.h"

typedef struct dt_pool dt_pool;

typedef void (*dt_pool_result_fn)(const dt_trial_result *r, void *ud);

typedef struct dt_pool_opts {
    const char *workers;      /* "HOST:PORT,HOST:PORT" */
    const char *token;        /* borrowed */
    size_t token_len;
    const char *target_key;   /* workers must announce this target */
    int inflight;             /* per worker (default 1) */
    double batch_deadline_s;  /* default 300 */
    dt_pool_result_fn on_result; /* called on the pool's thread */
    void *ud;
} dt_pool_opts;

int dt_pool_open(const dt_pool_opts *o, dt_pool **out, dt_err *e);
/* Queues a batch (copied). */
int dt_pool_submit(dt_pool *p, const dt_batch *b, dt_err *e);
/* Waits until every submitted trial has a result, or timeout_s passes
 * (DT_EBUSY then).  DT_EIO if no worker could ever be used (the message says
 * why: refused target, bad token, unreachable). */
int dt_pool_drain(dt_pool *p, double timeout_s, dt_err *e);
/* dt_pool_drain until every trial has a result, patiently: waits of at most
 * 5 s, giving up (DT_EIO) only when every worker was refused or none has been
 * usable for grace_s in a row.  tick (may be NULL) runs after each wait that
 * did not end it; a nonzero return stops waiting (0 is returned, trials may
 * be outstanding). */
int dt_pool_drain_patient(dt_pool *p, double grace_s, int (*tick)(void *ud), void *ud,
                          dt_err *e);
/* Connected and authenticated workers right now. */
int dt_pool_live_workers(dt_pool *p);
void dt_pool_close(dt_pool *p);

#endif
