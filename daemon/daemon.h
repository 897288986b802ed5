/* `dtune daemon`: one libuv loop for the network (the HTTP server and the
 * API handlers, daemon/api.h) and the job runner's thread for tuning
 * (daemon/jobs.h), over one database file.
 *
 * Start: the database's lock file DB.lock is taken (one daemon per
 * database; a second one is refused with DT_EBUSY naming the holder's pid),
 * then the database is opened (created or migrated), the query cache
 * opened beside it, the runner started (it resumes unfinished jobs first),
 * the server bound; then one line on stdout:
 *   dtune daemon listening on HOST:PORT (target KEY, db PATH)
 * SIGTERM / SIGINT: the server closes (open connections finish the
 * response they are writing), the runner takes no more jobs and stops the
 * running tune at its next round boundary (the job goes back to queued and
 * resumes at the next start), then dt_daemon_run returns 0.
 *
 * Safety: the listen address must be loopback unless api_token is set
 * (every mutating request then needs "Authorization: Bearer TOKEN").  A set
 * token is always enforced, compared with its length; one that fails
 * dt_http_token_check (daemon/http_auth.h: empty, a NUL, a space, a control
 * or non-ASCII byte) is refused before anything starts.
 *
 * Ownership: options are borrowed for the call. */
#ifndef DT_DAEMON_DAEMON_H
#define DT_DAEMON_DAEMON_H

#include <stddef.h>

#include "common/error.h"

typedef struct dt_daemon_opts {
    const char *db_path;
    const char *listen;           /* NULL: "127.0.0.1:8710" */
    const char *api_token;        /* bearer token (api_token_len bytes) or NULL: none */
    size_t api_token_len;
    const char *workers, *token_file; /* remote measurement (both) or NULL */
    int threads;                  /* default threads of a job's kernels; 0: all cores */
    double request_timeout_s;     /* 0: the server's default */
    double idle_timeout_s;        /* 0: the server's default */
    size_t max_body;              /* 0: the server's default */
    const char *runner_exe;       /* NULL: this executable */
    const char *keep_jobs;        /* finished-job retention (dt_db_job_retention_parse);
                                   * NULL: DT_DB_KEEP_JOBS_DEFAULT */
} dt_daemon_opts;

#define DT_DAEMON_DEFAULT_LISTEN "127.0.0.1:8710"

/* 1 when the host of a HOST:PORT address is loopback (127.0.0.0/8, ::1,
 * localhost), else 0. */
int dt_daemon_is_loopback(const char *listen);

/* 0 when listen (NULL: the default) is a HOST:PORT the server can bind;
 * else DT_EINVAL with "bad --listen address 'X' (expected HOST:PORT...)". */
int dt_daemon_check_listen(const char *listen, dt_err *e);

/* The lock file of a database: its real path + ".lock" (malloc'ed; NULL
 * when out of memory). */
char *dt_daemon_lock_path(const char *db_path);

/* Runs until SIGTERM or SIGINT.  DT_EINVAL for a bad address, a token
 * that cannot be enforced, or a non-loopback address without a token
 * (checked in that order); DT_EBUSY when
 * another process holds the database's lock file (the message names its
 * pid); other codes when the database, the target or the socket fail at
 * start, or the job runner cannot run.  A second SIGTERM or SIGINT while
 * it stops calls _exit(128 + signum) (the database stays consistent: every
 * write is a WAL transaction); once the runner has ended, the process keeps
 * that handler for both signals, so dt_daemon_run is meant to be the last
 * thing a process does. */
int dt_daemon_run(const dt_daemon_opts *o, dt_err *e);

#endif
