/* `dtune worker`: a measurement worker over TCP (libuv).
 *
 * Listens (loopback by default), greets every connection with HELLO (its
 * target and a nonce), requires AUTH (measure/wire.h) before anything else,
 * then takes BATCH frames: each batch is measured with the local runner
 * (measure/runner.h) on a libuv work thread — one batch at a time for the
 * whole worker, others queue — and answered with RESULT.  Garbage,
 * truncated or oversized frames, a wrong token or a slow peer close that
 * connection with a logged reason; the worker lives on.  At the connection
 * limit (64) a new connection closes the oldest one that has not
 * authenticated for 1 s, if any (docs/workers.md, Limits).  SIGTERM/SIGINT:
 * stop accepting, finish the batch being measured, send its result, exit 0. */
#ifndef DT_MEASURE_WORKER_H
#define DT_MEASURE_WORKER_H

#include "common/error.h"
#include "measure/runner.h"

typedef struct dt_worker_opts {
    const char *listen;      /* "127.0.0.1:7720" (default); "HOST:PORT", port 0 = any */
    const char *token;       /* shared secret (borrowed), at least DT_TOKEN_MIN bytes */
    size_t token_len;
    int max_batch;           /* most trials accepted in one batch (default 256) */
    double auth_timeout_s;   /* connections that do not authenticate in time close (10) */
    const dt_runner *runner; /* borrowed */
    const char *name;        /* announced in HELLO (default: hostname) */
    /* When not NULL, called once listening with the bound port (tests use
     * port 0 and learn the port here; the CLI prints it). */
    void (*on_listening)(int port, void *ud);
    void *ud;
} dt_worker_opts;

#define DT_WORKER_DEFAULT_LISTEN "127.0.0.1:7720"

/* 0 when listen (NULL or "": the default) is an address the worker can
 * listen on (a host name is resolved); else DT_EINVAL with "bad --listen
 * address 'X' (expected HOST:PORT)..." */
int dt_worker_check_listen(const char *listen, dt_err *e);

/* Runs the worker until SIGTERM/SIGINT; returns 0 on a clean stop.
 * DT_EINVAL for bad options or a bad listen address. */
int dt_worker_run(const dt_worker_opts *o, dt_err *e);

#endif
