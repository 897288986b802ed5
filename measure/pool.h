/* The tuner's side of remote measurement: a pool of worker connections
 * (libuv, on its own thread) that batches are submitted to.
 *
 * - Connects to every "HOST:PORT", checks the HELLO target against the
 *   pool's target key (a mismatch refuses that worker with a clear message),
 *   authenticates both ways (measure/wire.h).
 * - A HELLO without "version", or with another dtune version, refuses that
 *   worker (it is not a dtune worker of this protocol version).
 * - At most `inflight` batches per worker; a batch not answered within its
 *   deadline counts as a lost worker for that batch.  The deadline is
 *   batch_deadline_s when given, else derived from the batch itself
 *   (dt_batch_deadline_s: build limit + every trial's run limit + slack,
 *   at least DT_BATCH_DEADLINE_FLOOR_S).
 * - Liveness: a live worker is sent a PING every min(5 s, silent_s / 3); one
 *   from which nothing arrived for silent_s (default DT_POOL_SILENT_S,
 *   environment DTUNE_POOL_SILENT_S) is dropped ("silent"), whatever its
 *   batches' deadlines: `dtune worker` answers PING while it measures.  A
 *   connection that stays mute for min(10 s, silent_s) after the TCP connect
 *   (no HELLO, no AUTH_OK) is silent too.  DT_POOL_MAX_SILENCES silences in a
 *   row (no RESULT or PONG in between) refuse the worker for good.
 * - Results are checked (dt_trial_result_possible): an ok time that no CPU
 *   could reach (not finite, <= 0, min over median, or under the FLOP
 *   bound for the trial on max(threads, cores) cores) is a worker fault:
 *   delivered as worker_lost with an error naming the worker and the value,
 *   logged, and counted (dt_pool_faults).
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

/* A live worker that sends nothing for this long is dropped (s). */
#define DT_POOL_SILENT_S 30.0
/* Silences in a row after which a worker is refused for good. */
#define DT_POOL_MAX_SILENCES 2

typedef struct dt_pool dt_pool;

typedef void (*dt_pool_result_fn)(const dt_trial_result *r, void *ud);

typedef struct dt_pool_opts {
    const char *workers;      /* "HOST:PORT,HOST:PORT" */
    const char *token;        /* borrowed */
    size_t token_len;
    const char *target_key;   /* workers must announce this target */
    int inflight;             /* per worker (default 1) */
    double batch_deadline_s;  /* 0: per batch, dt_batch_deadline_s */
    double silent_s;          /* 0: $DTUNE_POOL_SILENT_S, else DT_POOL_SILENT_S */
    int cores;                /* the target's cores, for the impossible-time bound (0: unknown) */
    dt_pool_result_fn on_result; /* called on the pool's thread */
    void *ud;
} dt_pool_opts;

int dt_pool_open(const dt_pool_opts *o, dt_pool **out, dt_err *e);

/* A worker's HELLO as the pool reads it (socket-free, for tests and the
 * wire fuzzer): "target" a string, "nonce" 64 hex digits, "version" a
 * string equal to "dtune " DTUNE_VERSION, target equal to target_key (when
 * not NULL); "worker" and "max_batch" optional (max_batch outside
 * 1..DT_BATCH_MAX_TRIALS-1 means DT_BATCH_MAX_TRIALS).  0 and *out filled,
 * or DT_EINVAL with why (the worker named by addr). */
typedef struct dt_pool_hello {
    char name[128];
    char nonce[65];
    int max_batch;
} dt_pool_hello;
int dt_pool_hello_check(const json_t *hello, const char *addr, const char *target_key,
                        dt_pool_hello *out, dt_err *e);
/* Queues a batch (copied). */
int dt_pool_submit(dt_pool *p, const dt_batch *b, dt_err *e);
/* Waits until every submitted trial has a result, or timeout_s passes
 * (DT_EBUSY then).  DT_EIO if no worker could ever be used (the message says
 * why: refused target, bad token, unreachable). */
int dt_pool_drain(dt_pool *p, double timeout_s, dt_err *e);
/* dt_pool_drain until every trial has a result, patiently: waits of at most
 * 5 s, giving up (DT_EIO) only when every worker was refused or none has been
 * usable for grace_s in a row.  until > 0 (a dt_now_s time): DT_EBUSY once
 * it passes with trials outstanding (the message says how many).  tick (may
 * be NULL) runs after each wait that did not end it; a nonzero return stops
 * waiting (0 is returned, trials may be outstanding). */
int dt_pool_drain_patient(dt_pool *p, double grace_s, double until, int (*tick)(void *ud),
                          void *ud, dt_err *e);
/* Abandons every submitted batch without a result yet (queued or in
 * flight): no callback for their trials, a late answer is dropped.  Returns
 * how many trials were outstanding.  For a caller that stops waiting. */
int64_t dt_pool_cancel(dt_pool *p);
/* Trials submitted and not delivered (nor abandoned). */
int64_t dt_pool_outstanding(dt_pool *p);
/* Impossible results received so far, from every worker (worker faults). */
int64_t dt_pool_faults(dt_pool *p);
/* Connected and authenticated workers right now. */
int dt_pool_live_workers(dt_pool *p);
void dt_pool_close(dt_pool *p);

#endif
