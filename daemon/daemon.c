/* The daemon's main loop (daemon/daemon.h). */
#include "daemon/daemon.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/clock.h"
#include "common/lockfile.h"
#include "common/log.h"
#include "common/target.h"
#include "daemon/api.h"
#include "daemon/http.h"
#include "daemon/http_auth.h"
#include "daemon/jobs.h"
#include "daemon/metrics.h"
#include "db/db.h"
#include "dispatch/cache.h"
#include "export/export.h"

typedef struct {
    uv_loop_t loop;
    uv_signal_t sig_term, sig_int;
    uv_async_t runner_done;
    dt_http_server *srv;
    dt_jobs *jobs;
    int stopping, runner_failed;
} daemon_state;

int dt_daemon_is_loopback(const char *listen)
{
    char host[256];
    const char *colon = strrchr(listen ? listen : "", ':');
    size_t hl = colon ? (size_t)(colon - listen) : strlen(listen ? listen : "");
    if (hl >= sizeof host)
        return 0;
    memcpy(host, listen, hl);
    host[hl] = 0;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    if (strcmp(host, "localhost") == 0)
        return 1;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

int dt_daemon_check_listen(const char *listen, dt_err *e)
{
    struct sockaddr_storage ss;
    return dt_http_parse_listen(listen ? listen : DT_DAEMON_DEFAULT_LISTEN, "--listen", &ss, e);
}

/* The database's real path (symbolic links resolved, also of its directory
 * when the file does not exist yet) + ".lock": every spelling of one
 * database names one lock file.  Malloc'ed, NULL when out of memory. */
char *dt_daemon_lock_path(const char *db_path)
{
    char *real = realpath(db_path, NULL), *out = NULL;
    if (!real && errno == ENOENT) {
        char *d = strdup(db_path), *b = strdup(db_path);
        char *rdir = d && b ? realpath(dirname(d), NULL) : NULL;
        if (rdir) {
            const char *base = basename(b);
            size_t n = strlen(rdir) + strlen(base) + 2;
            if ((real = malloc(n)))
                snprintf(real, n, "%s%s%s", rdir, strcmp(rdir, "/") ? "/" : "", base);
        }
        free(rdir);
        free(d);
        free(b);
    }
    const char *p = real ? real : db_path;
    size_t n = strlen(p) + sizeof ".lock";
    if ((out = malloc(n)))
        snprintf(out, n, "%s.lock", p);
    free(real);
    return out;
}

/* Takes the database's lock (docs/daemon.md, "One daemon per database"). */
static int lock_database(const char *db_path, dt_lockfile **out, dt_err *e)
{
    char *path = dt_daemon_lock_path(db_path);
    if (!path)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    dt_lock_holder h;
    int rc = dt_lockfile_acquire(path, out, &h, e);
    if (rc == DT_EBUSY) {
        char pid[32] = "an unknown pid";
        if (h.pid > 0)
            snprintf(pid, sizeof pid, "pid %ld", h.pid);
        rc = dt_errf(e, DT_EBUSY,
                     "database %s is in use by another dtune daemon (%s%s%s%s%s; lock file "
                     "%s): one daemon per database; stop that one first or give this one "
                     "another --db",
                     db_path, pid, h.host[0] ? " on host " : "", h.host,
                     h.started[0] ? ", started " : "", h.started, path);
    } else if (rc == 0) {
        dt_log_info("daemon: holding %s", path);
    }
    free(path);
    return rc;
}

static void http_stats(void *ud, dt_http_stats *st)
{
    daemon_state *d = ud;
    if (d->srv)
        dt_http_server_stats_get(d->srv, st);
}

/* A second SIGTERM or SIGINT exits at once with 128 + signum, doing nothing
 * else: no job is requeued, no file is tidied.  Every database write is a
 * transaction in WAL mode, so an abrupt exit leaves the database as it was
 * after its last commit (as after kill -9) and the next start resumes the
 * job that was running.  _exit and write are async-signal-safe. */
static void exit_at_once(int signum)
{
    static const char term[] = "dtune: daemon: second SIGTERM: exiting at once (exit 143)\n";
    static const char intr[] = "dtune: daemon: second SIGINT: exiting at once (exit 130)\n";
    ssize_t w = signum == SIGINT ? write(STDERR_FILENO, intr, sizeof intr - 1)
                                 : write(STDERR_FILENO, term, sizeof term - 1);
    (void)w;
    _exit(128 + signum);
}

static void begin_stop(daemon_state *d)
{
    if (d->stopping)
        return;
    d->stopping = 1;
    dt_http_server_close(d->srv);
    d->srv = NULL;
    dt_jobs_stop(d->jobs);
    /* the signal handles stay open until the runner has ended, so that a
     * second signal meanwhile reaches on_signal */
}

static void on_signal(uv_signal_t *s, int signum)
{
    daemon_state *d = s->data;
    if (d->stopping)
        exit_at_once(signum);
    dt_log_warn("daemon: %s: stopping (the running job goes on at the next start; "
                "a second signal exits at once)",
                signum == SIGTERM ? "SIGTERM" : "SIGINT");
    begin_stop(d);
}

/* Closes the loop's signal handles (libuv restores the default actions as
 * it does) and installs exit_at_once for what is left of the shutdown. */
static void close_signals(daemon_state *d)
{
    uv_close((uv_handle_t *)&d->sig_term, NULL);
    uv_close((uv_handle_t *)&d->sig_int, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_at_once;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* The runner thread ended: after a stop, or because it could not run. */
static void on_runner_done(uv_async_t *a)
{
    daemon_state *d = a->data;
    if (!d->stopping) {
        d->runner_failed = 1;
        dt_log_error("daemon: the job runner stopped; shutting down");
        begin_stop(d);
    }
    close_signals(d);
    uv_close((uv_handle_t *)a, NULL);
}

static void runner_exit(void *ud)
{
    daemon_state *d = ud;
    uv_async_send(&d->runner_done);
}

int dt_daemon_run(const dt_daemon_opts *o, dt_err *e)
{
    const char *listen = o->listen ? o->listen : DT_DAEMON_DEFAULT_LISTEN;
    int rc;
    /* a malformed address is that, not a missing token */
    if ((rc = dt_daemon_check_listen(listen, e)))
        return rc;
    /* a token that is set is enforced: one the server could not compare
     * (empty, a NUL, ...) is an error, never "no token" */
    if (o->api_token &&
        (rc = dt_http_token_check(o->api_token, o->api_token_len, "the API token", e)))
        return rc;
    if (!dt_daemon_is_loopback(listen) && !o->api_token)
        return dt_errf(e, DT_EINVAL,
                       "listening on %s (not a loopback address) requires --api-token-file: "
                       "a bearer token for every mutating request",
                       listen);
    dt_target tg;
    char tkey[DT_TARGET_KEY_MAX];
    if ((rc = dt_target_detect_key(&tg, tkey, sizeof tkey, e)))
        return rc;
    int threads = o->threads > 0 ? o->threads : tg.cores;
    if (threads > tg.cores)
        return dt_errf(e, DT_EINVAL, "--threads %d: this machine has %d cores", threads,
                       tg.cores);

    /* one daemon per database: nothing is read or resumed before the lock */
    dt_lockfile *lock = NULL;
    if ((rc = lock_database(o->db_path, &lock, e)))
        return rc;

    daemon_state *d = calloc(1, sizeof *d);
    dt_db *db = NULL;
    dt_dispatch_cache *cache = NULL;
    dt_metrics *metrics = dt_metrics_new();
    int loop_ok = 0;
    if (!d || !metrics) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = dt_db_open(o->db_path, DT_DB_CREATE, &db, e)) ||
        (rc = dt_dispatch_cache_open(o->db_path, &cache, e)))
        goto out;
    if (uv_loop_init(&d->loop)) {
        rc = dt_errf(e, DT_EIO, "cannot start the event loop");
        goto out;
    }
    loop_ok = 1;
    uv_async_init(&d->loop, &d->runner_done, on_runner_done);
    d->runner_done.data = d;
    uv_signal_init(&d->loop, &d->sig_term);
    uv_signal_init(&d->loop, &d->sig_int);
    d->sig_term.data = d->sig_int.data = d;

    dt_api api = {.db = db, .cache = cache, .target_key = tkey, .cores = tg.cores,
                  .default_threads = threads, .metrics = metrics,
                  .kernel_source = dt_export_kernel_source, .http_stats = http_stats,
                  .http_stats_ud = d, .started_s = dt_now_s()};
    dt_http_server_opts so = {.listen = listen, .token = o->api_token,
                              .token_len = o->api_token_len, .handler = dt_api_handle,
                              .ud = &api};
    so.limits.request_timeout_s = o->request_timeout_s;
    so.limits.idle_timeout_s = o->idle_timeout_s;
    so.limits.max_body = o->max_body;
    if ((rc = dt_http_server_start(&d->loop, &so, &d->srv, e))) {
        uv_close((uv_handle_t *)&d->runner_done, NULL);
        uv_close((uv_handle_t *)&d->sig_term, NULL);
        uv_close((uv_handle_t *)&d->sig_int, NULL);
        uv_run(&d->loop, UV_RUN_DEFAULT);
        goto out;
    }
    dt_jobs_opts jo = {.db_path = o->db_path, .tg = &tg, .target_key = tkey,
                       .workers = o->workers, .token_file = o->token_file,
                       .runner_exe = o->runner_exe, .metrics = metrics, .on_exit = runner_exit,
                       .keep_jobs = o->keep_jobs,
                       .ud = d};
    if ((rc = dt_jobs_start(&jo, &d->jobs, e))) {
        dt_http_server_close(d->srv);
        uv_close((uv_handle_t *)&d->runner_done, NULL);
        uv_close((uv_handle_t *)&d->sig_term, NULL);
        uv_close((uv_handle_t *)&d->sig_int, NULL);
        uv_run(&d->loop, UV_RUN_DEFAULT);
        goto out;
    }
    api.jobs = d->jobs;
    uv_signal_start(&d->sig_term, on_signal, SIGTERM);
    uv_signal_start(&d->sig_int, on_signal, SIGINT);

    char host[256];
    const char *colon = strrchr(listen, ':');
    int hl = colon ? (int)(colon - listen) : (int)strlen(listen);
    snprintf(host, sizeof host, "%.*s", hl, listen);
    printf("dtune daemon listening on %s:%d (target %s, db %s)\n", host,
           dt_http_server_port(d->srv), tkey, o->db_path);
    fflush(stdout);
    dt_log_info("daemon: %d core%s, jobs default to %d thread%s%s%s", tg.cores,
                tg.cores == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
                o->workers ? ", measuring on workers " : "", o->workers ? o->workers : "");

    uv_run(&d->loop, UV_RUN_DEFAULT);
    dt_jobs_join(d->jobs);
    d->jobs = NULL;
    rc = d->runner_failed ? dt_errf(e, DT_EIO, "the job runner could not run (see the log)") : 0;
out:
    if (loop_ok && uv_loop_close(&d->loop))
        dt_log_warn("daemon: event loop closed with handles open");
    dt_dispatch_cache_close(cache);
    dt_db_close(db);
    dt_metrics_free(metrics);
    free(d);
    dt_lockfile_release(lock);
    return rc;
}
