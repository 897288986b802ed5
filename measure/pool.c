/* The client pool of remote workers (measure/pool.h): its API and its loop
 * thread; the connections are pool_conn.c, the batches pool_sched.c
 * (measure/pool_internal.h).
 *
 * Threads: dt_pool_open starts one thread that runs a libuv loop and owns
 * every connection (a connection set, net/conn.h), timer, queue and batch.
 * Other threads only touch the `shared` part of the pool under its mutex:
 * the list of newly submitted batches, the trial counters, the live/refused
 * counts and each worker's last failure text.  Submitting and closing wake
 * the loop with a uv_async.
 *
 * A batch is either queued (p->queue), in flight on exactly one connection
 * (p->flight, pb->conn) or finished.  Every BATCH frame carries a fresh wire
 * id; a RESULT is accepted only when its id names a batch in flight on the
 * connection it arrived on, so an answer for an attempt that was given up
 * (connection lost, deadline passed) or a repeated answer is dropped, and
 * each trial reaches on_result exactly once: from the one RESULT accepted
 * for its batch, or as worker_lost after the batch was lost twice.
 *
 * What a worker says is not trusted: an ok time that is physically
 * impossible (dt_trial_result_possible) becomes a worker fault (worker_lost,
 * the worker and the value in its error, counted per worker), and a worker
 * that stops answering is dropped within the silence limit (pool.h). */
#include "measure/pool_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/target.h"

/* ---- the loop thread --------------------------------------------------------- */

static void shutdown_loop(dt_pool *p)
{
    p->stopping = 1;
    for (int i = 0; i < p->nworkers; i++) {
        pworker *w = &p->workers[i];
        uv_timer_stop(&w->backoff);
        uv_close((uv_handle_t *)&w->backoff, NULL);
        if (w->gai_pending)
            uv_cancel((uv_req_t *)&w->gai);
    }
    for (dt_net_conn *nc = p->conns.head; nc; nc = nc->next)
        dt_pool_conn_close((pconn *)nc);
    pblist *lists[] = {&p->queue, &p->flight};
    for (int l = 0; l < 2; l++)
        while (lists[l]->head) {
            pbatch *pb = lists[l]->head;
            pool_list_remove(lists[l], pb);
            dt_pool_batch_release(pb);
        }
    uv_close((uv_handle_t *)&p->async, NULL);
}

static void async_cb(uv_async_t *a)
{
    dt_pool *p = a->data;
    if (p->stopping)
        return;
    pthread_mutex_lock(&p->mu);
    pblist in = p->incoming;
    p->incoming.head = p->incoming.tail = NULL;
    int stop = p->stop;
    uint64_t cancel = p->cancel_req;
    pthread_mutex_unlock(&p->mu);
    dt_pool_queue_incoming(p, &in);
    if (cancel != p->cancel_done_loop) {
        dt_pool_cancel_all(p);
        p->cancel_done_loop = cancel;
        pthread_mutex_lock(&p->mu);
        p->cancel_done = cancel;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    if (stop) {
        shutdown_loop(p);
        return;
    }
    dt_pool_pump(p);
}

static void loop_main(void *arg)
{
    dt_pool *p = arg;
    for (int i = 0; i < p->nworkers; i++)
        dt_pool_worker_connect(&p->workers[i]);
    async_cb(&p->async); /* batches submitted before the thread started */
    uv_run(&p->loop, UV_RUN_DEFAULT);
}

static int batch_copy(const dt_batch *src, dt_batch *dst)
{
    *dst = *src;
    dst->source = strdup(src->source);
    dst->trials = malloc((size_t)src->ntrials * sizeof *dst->trials);
    if (!dst->source || !dst->trials) {
        free(dst->source);
        free(dst->trials);
        dst->source = NULL;
        dst->trials = NULL;
        return DT_ENOMEM;
    }
    memcpy(dst->trials, src->trials, (size_t)src->ntrials * sizeof *dst->trials);
    return 0;
}

static int cmp_uid(const void *a, const void *b)
{
    return strcmp(((const dt_trial *)a)->uid, ((const dt_trial *)b)->uid);
}

/* ---- API ------------------------------------------------------------------------ */

static int parse_addr(const char *s, size_t n, pworker *w, dt_err *e)
{
    if (n == 0 || n >= sizeof w->addr)
        return dt_errf(e, DT_EINVAL, "worker address '%.*s' is empty or too long", (int)n, s);
    memcpy(w->addr, s, n);
    w->addr[n] = '\0';
    const char *host = w->addr, *colon;
    size_t hlen;
    if (host[0] == '[') {
        const char *rb = strchr(host, ']');
        if (!rb || rb[1] != ':')
            return dt_errf(e, DT_EINVAL, "worker address '%s': expected [IPv6]:PORT", w->addr);
        host++;
        hlen = (size_t)(rb - host);
        colon = rb + 1;
    } else {
        colon = strrchr(host, ':');
        if (!colon)
            return dt_errf(e, DT_EINVAL, "worker address '%s': expected HOST:PORT", w->addr);
        hlen = (size_t)(colon - host);
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (hlen == 0 || hlen >= sizeof w->host || !colon[1] || *end || port < 1 || port > 65535)
        return dt_errf(e, DT_EINVAL, "worker address '%s': expected HOST:PORT with a port 1..65535",
                       w->addr);
    memcpy(w->host, host, hlen);
    w->host[hlen] = '\0';
    snprintf(w->port, sizeof w->port, "%ld", port);
    return 0;
}

static void pool_free(dt_pool *p)
{
    if (!p)
        return;
    if (p->token) {
        explicit_bzero(p->token, p->token_len); /* a memset before free may be elided */
        free(p->token);
    }
    free(p->target_key);
    free(p->workers);
    while (p->incoming.head) {
        pbatch *pb = p->incoming.head;
        pool_list_remove(&p->incoming, pb);
        dt_pool_batch_free(pb);
    }
    free(p);
}

int dt_pool_open(const dt_pool_opts *o, dt_pool **out, dt_err *e)
{
    *out = NULL;
    if (!o || !o->workers || !o->on_result || !o->token || o->token_len == 0)
        return dt_errf(e, DT_EINVAL, "pool: workers, token and on_result are required");
    if (o->token_len < DT_TOKEN_MIN) /* the worker's own rule (measure/worker.c) */
        return dt_errf(e, DT_EINVAL, "pool: the token is %zu bytes; at least %d are required",
                       o->token_len, DT_TOKEN_MIN);
    dt_pool *p = calloc(1, sizeof *p);
    if (!p)
        return dt_errf(e, DT_ENOMEM, "pool: out of memory");
    p->token = malloc(o->token_len);
    p->target_key = o->target_key ? strdup(o->target_key) : NULL;
    int count = 1;
    for (const char *q = o->workers; *q; q++)
        count += *q == ',';
    if (count > POOL_MAX_WORKERS) {
        pool_free(p);
        return dt_errf(e, DT_EINVAL, "pool: more than %d workers", POOL_MAX_WORKERS);
    }
    p->workers = calloc((size_t)count, sizeof *p->workers);
    if (!p->token || !p->workers || (o->target_key && !p->target_key)) {
        pool_free(p);
        return dt_errf(e, DT_ENOMEM, "pool: out of memory");
    }
    memcpy(p->token, o->token, o->token_len);
    p->token_len = o->token_len;
    p->inflight = o->inflight > 0 ? o->inflight : 1;
    p->deadline_s = o->batch_deadline_s > 0 ? o->batch_deadline_s : 0;
    p->cores = o->cores;
    p->silent_s = o->silent_s > 0 ? o->silent_s : DT_POOL_SILENT_S;
    const char *env = getenv("DTUNE_POOL_SILENT_S");
    if (!(o->silent_s > 0) && env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end || !(v >= 0.1 && v <= 86400)) {
            pool_free(p);
            return dt_errf(e, DT_EINVAL,
                           "DTUNE_POOL_SILENT_S='%.40s': expected seconds in 0.1..86400", env);
        }
        p->silent_s = v;
    }
    p->on_result = o->on_result;
    p->ud = o->ud;

    for (const char *s = o->workers; *s;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        while (n && (*s == ' ' || *s == '\t'))
            s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        pworker *w = &p->workers[p->nworkers];
        int rc = parse_addr(s, n, w, e);
        if (rc) {
            pool_free(p);
            return rc;
        }
        w->p = p;
        w->index = p->nworkers++;
        w->backoff_s = BACKOFF_MIN_S;
        w->st = W_IDLE;
        snprintf(w->reason, sizeof w->reason, "not connected yet");
        if (!comma)
            break;
        s = comma + 1;
    }
    if (p->nworkers == 0) {
        pool_free(p);
        return dt_errf(e, DT_EINVAL, "pool: no worker address in '%s'", o->workers);
    }

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->mu, NULL);

    int urc = uv_loop_init(&p->loop);
    if (urc < 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        pool_free(p);
        return dt_errf(e, DT_EIO, "pool: cannot create an event loop: %s", uv_strerror(urc));
    }
    uv_async_init(&p->loop, &p->async, async_cb);
    p->async.data = p;
    dt_net_ops ops = {.conn_size = sizeof(pconn), .release = dt_pool_conn_release,
                      .write_done = dt_pool_write_done};
    dt_net_set_init(&p->conns, &p->loop, &ops, p);
    for (int i = 0; i < p->nworkers; i++) {
        uv_timer_init(&p->loop, &p->workers[i].backoff);
        p->workers[i].backoff.data = &p->workers[i];
    }
    urc = uv_thread_create(&p->thread, loop_main, p);
    if (urc < 0) {
        /* nothing runs yet: close the handles on this thread */
        shutdown_loop(p);
        uv_run(&p->loop, UV_RUN_DEFAULT);
        uv_loop_close(&p->loop);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        pool_free(p);
        return dt_errf(e, DT_EIO, "pool: cannot start its thread: %s", uv_strerror(urc));
    }
    *out = p;
    return 0;
}

static int uid_cmp_sorted(const dt_trial *t, int n)
{
    for (int i = 1; i < n; i++)
        if (strcmp(t[i - 1].uid, t[i].uid) == 0)
            return i;
    return 0;
}

int dt_pool_submit(dt_pool *p, const dt_batch *b, dt_err *e)
{
    if (!b || b->ntrials < 1 || b->ntrials > DT_BATCH_MAX_TRIALS || !b->trials || !b->source)
        return dt_errf(e, DT_EINVAL, "pool: a batch needs a source and 1..%d trials",
                       DT_BATCH_MAX_TRIALS);
    if (strlen(b->source) > DT_BATCH_MAX_SOURCE)
        return dt_errf(e, DT_EINVAL, "pool: batch source is over %u bytes", DT_BATCH_MAX_SOURCE);
    pbatch *pb = calloc(1, sizeof *pb);
    if (!pb || batch_copy(b, &pb->b)) {
        free(pb);
        return dt_errf(e, DT_ENOMEM, "pool: out of memory copying a batch");
    }
    pb->p = p;
    for (int i = 0; i < b->ntrials; i++)
        if (strnlen(b->trials[i].uid, sizeof b->trials[i].uid) != DT_TRIAL_UID_LEN) {
            dt_pool_batch_free(pb);
            return dt_errf(e, DT_EINVAL, "pool: trial %d has no uid", i);
        }
    /* uids must be distinct within the batch: check on a sorted copy */
    dt_trial *sorted = malloc((size_t)b->ntrials * sizeof *sorted);
    if (!sorted) {
        dt_pool_batch_free(pb);
        return dt_errf(e, DT_ENOMEM, "pool: out of memory");
    }
    memcpy(sorted, b->trials, (size_t)b->ntrials * sizeof *sorted);
    qsort(sorted, (size_t)b->ntrials, sizeof *sorted, cmp_uid);
    int dup = uid_cmp_sorted(sorted, b->ntrials);
    if (dup) {
        int rc = dt_errf(e, DT_EINVAL, "pool: trial uid %s appears twice in one batch",
                         sorted[dup].uid);
        free(sorted);
        dt_pool_batch_free(pb);
        return rc;
    }
    free(sorted);
    pthread_mutex_lock(&p->mu);
    if (p->stop) {
        pthread_mutex_unlock(&p->mu);
        dt_pool_batch_free(pb);
        return dt_errf(e, DT_EINVAL, "pool: submit after close");
    }
    pool_list_push_back(&p->incoming, pb);
    p->submitted += b->ntrials;
    pthread_mutex_unlock(&p->mu);
    uv_async_send(&p->async);
    return 0;
}

/* "A: reason; B: reason" for every worker (under p->mu). */
static void reasons(dt_pool *p, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->nworkers && used + 1 < n; i++) {
        const pworker *w = &p->workers[i];
        const char *why = w->reason[0] ? w->reason : "not connected yet";
        int k = strstr(why, w->addr) ? snprintf(buf + used, n - used, "%s%s", i ? "; " : "", why)
                                     : snprintf(buf + used, n - used, "%s%s: %s", i ? "; " : "",
                                                w->addr, why);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

int dt_pool_drain(dt_pool *p, double timeout_s, dt_err *e)
{
    double end = dt_now_s() + (timeout_s > 0 ? timeout_s : 0);
    struct timespec ts;
    double whole;
    ts.tv_nsec = (long)(modf(end, &whole) * 1e9);
    ts.tv_sec = (time_t)whole;
    int rc = 0;
    pthread_mutex_lock(&p->mu);
    int live_at_start = p->live_now > 0;
    uint64_t events = p->live_events;
    while (p->delivered < p->submitted) {
        if (p->refused == p->nworkers) {
            char why[DT_ERR_MSG_MAX - 64];
            reasons(p, why, sizeof why);
            rc = dt_errf(e, DT_EIO, "no worker can be used: %s", why);
            break;
        }
        int w = pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        if (w == ETIMEDOUT && p->delivered < p->submitted) {
            if (!live_at_start && p->live_events == events && p->live_now == 0) {
                char why[DT_ERR_MSG_MAX - 96];
                reasons(p, why, sizeof why);
                rc = dt_errf(e, DT_EIO, "no worker could be used for %.1f s: %s", timeout_s,
                             why);
            } else {
                rc = dt_errf(e, DT_EBUSY,
                             "pool: %lld of %lld trials measured after %.1f s (%d live "
                             "worker%s)",
                             (long long)p->delivered, (long long)p->submitted, timeout_s,
                             p->live_now, p->live_now == 1 ? "" : "s");
            }
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int dt_pool_drain_patient(dt_pool *p, double grace_s, double until, int (*tick)(void *ud),
                          void *ud, dt_err *e)
{
    double unusable_since = dt_now_s();
    for (;;) {
        double t = dt_now_s(), slice = 5.0;
        if (dt_pool_live_workers(p) == 0) {
            slice = grace_s - (t - unusable_since);
            if (slice < 0.5)
                slice = 0.5;
        }
        int capped = 0;
        if (until > 0 && until - t < slice) {
            slice = until - t;
            capped = 1;
        }
        int rc = slice > 0 ? dt_pool_drain(p, slice, e) : DT_EBUSY;
        if (rc == 0)
            return 0;
        if (until > 0 && dt_now_s() >= until - 1e-3 && (capped || slice <= 0) &&
            (rc == DT_EBUSY || rc == DT_EIO)) {
            int64_t left = dt_pool_outstanding(p);
            return dt_errf(e, DT_EBUSY, "the time is up with %lld trial%s unanswered",
                           (long long)left, left == 1 ? "" : "s");
        }
        if (rc == DT_EBUSY) {
            unusable_since = dt_now_s(); /* a worker was live: the grace period starts again */
        } else if (!(rc == DT_EIO && dt_now_s() - t >= slice - 0.05 &&
                     dt_now_s() - unusable_since < grace_s - 0.05)) {
            return rc; /* every worker refused, or none usable for the grace period */
        }
        /* else none usable in this slice, but the grace period is not over */
        if (tick && tick(ud))
            return 0;
    }
}

int64_t dt_pool_outstanding(dt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int64_t n = p->submitted - p->delivered;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int64_t dt_pool_faults(dt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int64_t n = p->faults;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int64_t dt_pool_cancel(dt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int64_t left = p->submitted - p->delivered;
    uint64_t gen = ++p->cancel_req;
    pthread_mutex_unlock(&p->mu);
    uv_async_send(&p->async);
    pthread_mutex_lock(&p->mu);
    while (p->cancel_done < gen && !p->stop)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return left;
}

int dt_pool_live_workers(dt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->live_now;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void dt_pool_close(dt_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_mutex_unlock(&p->mu);
    uv_async_send(&p->async);
    uv_thread_join(&p->thread);
    uv_loop_close(&p->loop);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    pool_free(p);
}
