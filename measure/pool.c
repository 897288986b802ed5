/* The client pool of remote workers (measure/pool.h).
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
#include "measure/pool.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/target.h"
#include "measure/wire.h"
#include "net/conn.h"

#define POOL_MAX_WORKERS 256
#define BACKOFF_MIN_S 0.2
#define BACKOFF_MAX_S 10.0
#define HANDSHAKE_TIMEOUT_S 10.0 /* connect + HELLO + AUTH (at most the silence limit) */
#define PING_EVERY_MAX_S 5.0     /* a live worker is sent a PING this often (or a third of
                                  * the silence limit when that is shorter) */
#define REASON_MAX 320

typedef enum {
    W_IDLE,       /* waiting for the back-off timer */
    W_RESOLVING,  /* getaddrinfo */
    W_CONNECTING, /* TCP connect */
    W_HELLO,      /* connected, waiting for HELLO */
    W_AUTH,       /* AUTH sent, waiting for AUTH_OK */
    W_LIVE,
    W_REFUSED,    /* for good: wrong target, version, token, protocol */
} wstate;

struct pworker;
struct pbatch;

/* nc.timer: the handshake time-out (connect + HELLO + AUTH). */
typedef struct pconn {
    dt_net_conn nc; /* first: tcp, timer, closing */
    dt_pool *p;
    struct pworker *w; /* NULL once the connection is given up */
    uv_connect_t creq;
    dt_wire_decoder dec;
    char c_nonce[65], w_nonce[65];
} pconn;

typedef struct pworker {
    dt_pool *p;
    int index;
    char addr[300]; /* as given: "host:port" */
    char host[256], port[16];
    wstate st;
    pconn *c;
    uv_timer_t backoff;
    uv_getaddrinfo_t gai;
    int gai_pending;
    double backoff_s;
    int fails;      /* consecutive failed attempts (for quieter logs) */
    int inflight;
    int max_batch;
    int silences;   /* consecutive silences (handshake or live) without a RESULT or PONG */
    int64_t faults; /* impossible results it sent */
    double last_rx; /* dt_now_s of the last bytes from it */
    char name[128];
    char reason[REASON_MAX]; /* last failure; written under p->mu */
} pworker;

typedef enum { PB_NEW, PB_QUEUED, PB_FLIGHT } pbstate;

typedef struct pbatch {
    struct pbatch *prev, *next;
    dt_pool *p;
    dt_batch b;        /* owned deep copy */
    pbstate st;
    int timer_init;
    uv_timer_t deadline;
    double deadline_s; /* of the attempt in flight */
    pconn *conn;       /* in flight on */
    pworker *w;
    uint64_t wire_id;
    int losses;
    pworker *lost_on;
    char lost_why[REASON_MAX];
} pbatch;

typedef struct pblist {
    pbatch *head, *tail;
} pblist;

struct dt_pool {
    /* fixed after open */
    char *token;
    size_t token_len;
    char *target_key; /* NULL: any */
    int inflight;
    double deadline_s; /* 0: per batch, dt_batch_deadline_s */
    double silent_s;
    int cores;
    dt_pool_result_fn on_result;
    void *ud;
    int nworkers;
    pworker *workers;

    /* loop thread only */
    uv_loop_t loop;
    uv_async_t async;
    uv_thread_t thread;
    dt_net_set conns; /* every connection until its handles closed */
    pblist queue, flight;
    uint64_t cancel_done_loop;
    uint64_t next_wire_id;
    int rr;
    int stopping;

    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pblist incoming;
    int stop;
    int64_t submitted, delivered;
    int live_now, refused;
    uint64_t live_events;
    int64_t faults;               /* impossible results, every worker */
    uint64_t cancel_req, cancel_done;
};

/* ---- small helpers -------------------------------------------------------- */

static void list_push_back(pblist *l, pbatch *b)
{
    b->next = NULL;
    b->prev = l->tail;
    if (l->tail)
        l->tail->next = b;
    else
        l->head = b;
    l->tail = b;
}

static void list_push_front(pblist *l, pbatch *b)
{
    b->prev = NULL;
    b->next = l->head;
    if (l->head)
        l->head->prev = b;
    else
        l->tail = b;
    l->head = b;
}

static void list_insert_after(pblist *l, pbatch *at, pbatch *b)
{
    b->prev = at;
    b->next = at->next;
    if (at->next)
        at->next->prev = b;
    else
        l->tail = b;
    at->next = b;
}

static void list_remove(pblist *l, pbatch *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        l->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    else
        l->tail = b->prev;
    b->prev = b->next = NULL;
}

static void pbatch_free(pbatch *pb)
{
    free(pb->b.source);
    free(pb->b.trials);
    free(pb);
}

static void pbatch_timer_closed(uv_handle_t *h) { pbatch_free(h->data); }

/* Releases a batch that left both lists (its timer first, if it has one). */
static void pbatch_release(pbatch *pb)
{
    if (pb->timer_init) {
        uv_timer_stop(&pb->deadline);
        uv_close((uv_handle_t *)&pb->deadline, pbatch_timer_closed);
    } else {
        pbatch_free(pb);
    }
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

static void pump(dt_pool *p);
static void worker_connect(pworker *w);

/* ---- delivery ------------------------------------------------------------- */

static void count_delivered(dt_pool *p, int n)
{
    pthread_mutex_lock(&p->mu);
    p->delivered += n;
    if (p->delivered >= p->submitted)
        pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Every trial of pb becomes worker_lost (the batch was lost twice). */
static void deliver_lost(dt_pool *p, pbatch *pb, const char *why)
{
    char msg[2 * REASON_MAX + 64];
    snprintf(msg, sizeof msg, "batch lost twice: %s; then %s", pb->lost_why, why);
    dt_log_warn("pool: %d trial(s) of a batch for %s are worker_lost (%s)", pb->b.ntrials,
                pb->b.workload, msg);
    for (int i = 0; i < pb->b.ntrials; i++) {
        dt_trial_result r = {.status = DT_TRIAL_WORKER_LOST, .min_ns = NAN, .median_ns = NAN,
                             .error = msg};
        memcpy(r.uid, pb->b.trials[i].uid, sizeof r.uid);
        p->on_result(&r, p->ud);
    }
    count_delivered(p, pb->b.ntrials);
}

/* pb's attempt on its connection failed: requeue it once, else worker_lost. */
static void batch_lost(dt_pool *p, pbatch *pb, pworker *w, const char *why)
{
    uv_timer_stop(&pb->deadline);
    list_remove(&p->flight, pb);
    pb->conn = NULL;
    pb->w = NULL;
    if (pb->losses == 0) {
        pb->losses = 1;
        pb->lost_on = w;
        snprintf(pb->lost_why, sizeof pb->lost_why, "%s", why);
        pb->st = PB_QUEUED;
        list_push_front(&p->queue, pb); /* a requeued batch goes first */
        dt_log_info("pool: requeued a batch of %d trial(s) lost on %s", pb->b.ntrials, why);
        return;
    }
    deliver_lost(p, pb, why);
    pbatch_release(pb);
}

/* ---- connections ---------------------------------------------------------- */

static void conn_release(dt_net_conn *nc) { dt_wire_decoder_free(&((pconn *)nc)->dec); }

/* Detaches c from its worker and closes it (no requeue: callers do that). */
static void conn_close(pconn *c)
{
    if (c->w && c->w->c == c)
        c->w->c = NULL;
    c->w = NULL;
    dt_net_conn_close(&c->nc);
}

static void backoff_fired(uv_timer_t *t)
{
    pworker *w = t->data;
    if (!w->p->stopping && w->st == W_IDLE)
        worker_connect(w);
}

/* The connection of w failed (or w is refused for good when permanent):
 * the reason is kept for dt_pool_drain's message, in-flight batches are
 * requeued once, and w reconnects after its back-off. */
static void worker_fail(pworker *w, int permanent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void worker_fail(pworker *w, int permanent, const char *fmt, ...)
{
    dt_pool *p = w->p;
    char why[REASON_MAX - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);

    int was_live = w->st == W_LIVE;
    pconn *c = w->c;
    if (c) {
        for (pbatch *pb = p->flight.head, *next; pb; pb = next) {
            next = pb->next;
            if (pb->conn == c) {
                char lw[REASON_MAX];
                snprintf(lw, sizeof lw, "worker %.100s: %.200s", w->addr, why);
                batch_lost(p, pb, w, lw);
            }
        }
        conn_close(c);
    }
    w->inflight = 0;
    w->fails++;

    pthread_mutex_lock(&p->mu);
    snprintf(w->reason, sizeof w->reason, "%s%s", permanent ? "refused: " : "", why);
    if (was_live)
        p->live_now--;
    if (permanent)
        p->refused++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);

    if (permanent) {
        w->st = W_REFUSED;
        dt_log_error("pool: not using worker %s: %s", w->addr, why);
    } else {
        w->st = W_IDLE;
        if (was_live || w->fails == 1)
            dt_log_warn("pool: worker %s: %s; reconnecting in %.1f s", w->addr, why,
                        w->backoff_s);
        else
            dt_log_debug("pool: worker %s: %s; reconnecting in %.1f s", w->addr, why,
                         w->backoff_s);
        if (!p->stopping) {
            uv_timer_start(&w->backoff, backoff_fired, (uint64_t)(w->backoff_s * 1000.0), 0);
            w->backoff_s = w->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : w->backoff_s * 2;
        }
    }
    pump(p); /* requeued batches may go elsewhere now */
}

static void write_done(dt_net_conn *nc, int status)
{
    pconn *c = (pconn *)nc;
    if (status < 0 && status != UV_ECANCELED && c->w && !c->p->stopping)
        worker_fail(c->w, 0, "write failed: %s", uv_strerror(status));
}

/* Sends one frame; steals payload.  On failure the worker has failed. */
static int conn_send(pconn *c, dt_msg_type type, json_t *payload)
{
    uint8_t *buf;
    size_t len;
    dt_err e;
    int rc = dt_wire_encode(type, payload, &buf, &len, &e);
    json_decref(payload);
    if (rc) {
        worker_fail(c->w, 0, "cannot encode %s: %s", dt_msg_name(type), e.msg);
        return rc;
    }
    int urc = dt_net_conn_write(&c->nc, buf, len);
    if (urc == UV_ENOMEM) {
        worker_fail(c->w, 0, "out of memory");
        return DT_ENOMEM;
    }
    if (urc < 0) {
        worker_fail(c->w, 0, "write failed: %s", uv_strerror(urc));
        return DT_EIO;
    }
    return 0;
}

/* ---- sending batches ------------------------------------------------------- */

/* Splits pb so that it has at most n trials; the rest follows it in the queue. */
static int batch_split(dt_pool *p, pbatch *pb, int n)
{
    pbatch *tail = calloc(1, sizeof *tail);
    if (!tail)
        return DT_ENOMEM;
    tail->p = p;
    tail->b = pb->b;
    tail->b.ntrials = pb->b.ntrials - n;
    tail->b.source = strdup(pb->b.source);
    tail->b.trials = malloc((size_t)tail->b.ntrials * sizeof *tail->b.trials);
    if (!tail->b.source || !tail->b.trials) {
        pbatch_free(tail);
        return DT_ENOMEM;
    }
    memcpy(tail->b.trials, pb->b.trials + n, (size_t)tail->b.ntrials * sizeof *tail->b.trials);
    pb->b.ntrials = n;
    tail->losses = pb->losses;
    tail->lost_on = pb->lost_on;
    memcpy(tail->lost_why, pb->lost_why, sizeof tail->lost_why);
    tail->st = PB_QUEUED;
    uv_timer_init(&p->loop, &tail->deadline);
    tail->deadline.data = tail;
    tail->timer_init = 1;
    list_insert_after(&p->queue, pb, tail);
    return 0;
}

static void deadline_fired(uv_timer_t *t)
{
    pbatch *pb = t->data;
    if (pb->st != PB_FLIGHT || !pb->w)
        return;
    pworker *w = pb->w;
    worker_fail(w, 0, "no answer to a batch of %d trial(s) within its %g s deadline",
                pb->b.ntrials, pb->deadline_s);
}

static void send_batch(dt_pool *p, pworker *w, pbatch *pb)
{
    if (w->max_batch > 0 && pb->b.ntrials > w->max_batch &&
        batch_split(p, pb, w->max_batch) != 0) {
        dt_log_error("pool: out of memory splitting a batch");
        return;
    }
    list_remove(&p->queue, pb);
    pb->st = PB_FLIGHT;
    pb->conn = w->c;
    pb->w = w;
    pb->wire_id = ++p->next_wire_id;
    list_push_back(&p->flight, pb);
    w->inflight++;
    pb->deadline_s = p->deadline_s > 0 ? p->deadline_s : dt_batch_deadline_s(&pb->b);
    uv_timer_start(&pb->deadline, deadline_fired, (uint64_t)(pb->deadline_s * 1000.0), 0);

    json_t *jb = dt_batch_to_json(&pb->b);
    json_t *msg = json_object();
    json_object_set_new(msg, "id", json_integer((json_int_t)pb->wire_id));
    json_object_set_new(msg, "batch", jb ? jb : json_null());
    dt_log_debug("pool: batch %" PRIu64 " (%d trials) -> %s", pb->wire_id, pb->b.ntrials,
                 w->addr);
    conn_send(w->c, DT_MSG_BATCH, msg); /* a failure requeues pb */
}

static int other_live(dt_pool *p, const pworker *w)
{
    for (int i = 0; i < p->nworkers; i++)
        if (&p->workers[i] != w && p->workers[i].st == W_LIVE)
            return 1;
    return 0;
}

/* The first queued batch w may take: a requeued batch avoids the worker it
 * was lost on while another worker is live. */
static pbatch *pick(dt_pool *p, pworker *w)
{
    int other = -1;
    for (pbatch *pb = p->queue.head; pb; pb = pb->next) {
        if (pb->lost_on != w)
            return pb;
        if (other < 0)
            other = other_live(p, w);
        if (!other)
            return pb;
    }
    return NULL;
}

static void pump(dt_pool *p)
{
    if (p->stopping || p->nworkers == 0)
        return;
    int progress = 1;
    while (progress && p->queue.head) {
        progress = 0;
        for (int k = 0; k < p->nworkers && p->queue.head; k++) {
            pworker *w = &p->workers[(p->rr + k) % p->nworkers];
            if (w->st != W_LIVE || w->inflight >= p->inflight)
                continue;
            pbatch *pb = pick(p, w);
            if (!pb)
                continue;
            send_batch(p, w, pb);
            progress = 1;
        }
        p->rr = (p->rr + 1) % p->nworkers;
    }
}

/* ---- frames ---------------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : NULL;
}

static int is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (const char *q = s; *q; q++)
        if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F')))
            return 0;
    return 1;
}

/* ---- liveness ---------------------------------------------------------------- */

/* w said nothing for the silence limit (live) or the handshake limit (after
 * connecting): dropped like any failure; the second time in a row without
 * a RESULT or PONG in between it is refused for good. */
static void worker_silent(pworker *w, const char *what)
{
    w->silences++;
    if (w->silences >= DT_POOL_MAX_SILENCES)
        worker_fail(w, 1, "silent: %s (%d times in a row: not used again)", what, w->silences);
    else
        worker_fail(w, 0, "silent: %s", what);
}

static void heartbeat_tick(uv_timer_t *t)
{
    pconn *c = t->data;
    pworker *w = c->w;
    dt_pool *p = c->p;
    if (!w || w->st != W_LIVE || p->stopping)
        return;
    double quiet = dt_now_s() - w->last_rx;
    if (quiet >= p->silent_s) {
        char what[160];
        snprintf(what, sizeof what, "no answer for %.1f s (silence limit %g s, PING unanswered)",
                 quiet, p->silent_s);
        worker_silent(w, what);
        return;
    }
    conn_send(c, DT_MSG_PING, json_object());
}

/* Every ping interval: a PING, or the worker dropped when nothing came
 * back for the silence limit.  The worker answers PING while it measures
 * (its loop never blocks), so this does not depend on the batch's length. */
static void heartbeat_start(pconn *c)
{
    dt_pool *p = c->p;
    double every = p->silent_s / 3 < PING_EVERY_MAX_S ? p->silent_s / 3 : PING_EVERY_MAX_S;
    uint64_t ms = (uint64_t)(every * 1000.0);
    c->w->last_rx = dt_now_s();
    uv_timer_start(&c->nc.timer, heartbeat_tick, ms ? ms : 1, ms ? ms : 1);
}

int dt_pool_hello_check(const json_t *pl, const char *addr, const char *target_key,
                        dt_pool_hello *out, dt_err *e)
{
    memset(out, 0, sizeof *out);
    const char *target = jstr(pl, "target"), *nonce = jstr(pl, "nonce"),
               *version = jstr(pl, "version"), *name = jstr(pl, "worker");
    if (!target || !is_hex64(nonce))
        return dt_errf(e, DT_EINVAL, "worker %s sent a malformed HELLO (target, nonce)", addr);
    static const char mine[] = "dtune " DTUNE_VERSION;
    if (!version)
        return dt_errf(e, DT_EINVAL,
                       "worker %s sent a HELLO without \"version\": not a dtune worker of a "
                       "known protocol version (this is %s; run the same dtune version there)",
                       addr, mine);
    if (strcmp(version, mine) != 0)
        return dt_errf(e, DT_EINVAL, "worker %s runs %.100s but this is %s; use the same dtune "
                       "version", addr, version, mine);
    if (target_key && strcmp(target, target_key) != 0)
        return dt_errf(e, DT_EINVAL, "worker %s has target %.100s but the job is for %s", addr,
                       target, target_key);
    json_t *mb = json_object_get(pl, "max_batch");
    out->max_batch = json_is_integer(mb) && json_integer_value(mb) > 0 &&
                             json_integer_value(mb) < DT_BATCH_MAX_TRIALS
                         ? (int)json_integer_value(mb)
                         : DT_BATCH_MAX_TRIALS;
    snprintf(out->name, sizeof out->name, "%s", name ? name : "?");
    snprintf(out->nonce, sizeof out->nonce, "%s", nonce);
    return 0;
}

static void on_hello(pconn *c, const json_t *pl)
{
    pworker *w = c->w;
    dt_pool *p = c->p;
    dt_pool_hello h;
    dt_err e;
    if (dt_pool_hello_check(pl, w->addr, p->target_key, &h, &e) != 0) {
        worker_fail(w, 1, "%s", e.msg);
        return;
    }
    w->max_batch = h.max_batch;
    snprintf(w->name, sizeof w->name, "%s", h.name);
    snprintf(c->w_nonce, sizeof c->w_nonce, "%s", h.nonce);
    dt_nonce_new(c->c_nonce);
    char mac[65];
    dt_auth_mac(p->token, p->token_len, "dtune-auth-c", c->w_nonce, c->c_nonce, mac);
    w->st = W_AUTH;
    conn_send(c, DT_MSG_AUTH, json_pack("{s:s, s:s}", "nonce", c->c_nonce, "mac", mac));
}

static void on_auth_ok(pconn *c, const json_t *pl)
{
    pworker *w = c->w;
    dt_pool *p = c->p;
    const char *mac = jstr(pl, "mac");
    char want[65];
    dt_auth_mac(p->token, p->token_len, "dtune-auth-w", c->c_nonce, c->w_nonce, want);
    if (!mac || strlen(mac) != 64 || !dt_auth_equal(mac, want)) {
        worker_fail(w, 1,
                    "worker %s failed authentication: it does not know our token (auth MAC "
                    "mismatch; use the same token file on both sides)",
                    w->addr);
        return;
    }
    uv_timer_stop(&c->nc.timer);
    w->st = W_LIVE;
    w->fails = 0;
    heartbeat_start(c);
    w->backoff_s = BACKOFF_MIN_S;
    pthread_mutex_lock(&p->mu);
    p->live_now++;
    p->live_events++;
    snprintf(w->reason, sizeof w->reason, "live");
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    dt_log_info("pool: worker %s (%s) is live, up to %d trials per batch", w->addr, w->name,
                w->max_batch);
    pump(p);
}

static int cmp_uid(const void *a, const void *b)
{
    return strcmp(((const dt_trial *)a)->uid, ((const dt_trial *)b)->uid);
}

static int trial_index(const dt_batch *b, const char *uid, int guess)
{
    if (guess < b->ntrials && strcmp(b->trials[guess].uid, uid) == 0)
        return guess;
    for (int i = 0; i < b->ntrials; i++)
        if (strcmp(b->trials[i].uid, uid) == 0)
            return i;
    return -1;
}

static void on_result(pconn *c, const json_t *pl)
{
    pworker *w = c->w;
    dt_pool *p = c->p;
    json_t *jid = json_object_get(pl, "id");
    if (!json_is_integer(jid)) {
        worker_fail(w, 0, "RESULT without an integer id");
        return;
    }
    uint64_t id = (uint64_t)json_integer_value(jid);
    pbatch *pb = p->flight.head;
    while (pb && !(pb->conn == c && pb->wire_id == id))
        pb = pb->next;
    if (!pb) {
        dt_log_debug("pool: dropping a RESULT for batch %" PRIu64 " from %s: not in flight "
                     "there (late or duplicate)",
                     id, w->addr);
        return;
    }
    json_t *arr = json_object_get(pl, "results");
    int n = pb->b.ntrials;
    if (!json_is_array(arr) || json_array_size(arr) != (size_t)n) {
        worker_fail(w, 0, "RESULT for batch %" PRIu64 " has %zu results for %d trials", id,
                    json_array_size(arr), n);
        return;
    }
    dt_trial_result *res = calloc((size_t)n, sizeof *res);
    int *slot = malloc((size_t)n * sizeof *slot);
    char *seen = calloc((size_t)n, 1);
    char bad[REASON_MAX] = "";
    int parsed = 0;
    if (!res || !slot || !seen)
        snprintf(bad, sizeof bad, "out of memory");
    for (int i = 0; !bad[0] && i < n; i++) {
        dt_trial_result r;
        dt_err e;
        if (dt_trial_result_from_json(json_array_get(arr, (size_t)i), &r, &e)) {
            snprintf(bad, sizeof bad, "result %d: %.250s", i, e.msg);
            break;
        }
        int k = trial_index(&pb->b, r.uid, i);
        if (k < 0 || seen[k]) {
            snprintf(bad, sizeof bad, "result %d: %s trial uid %s", i,
                     k < 0 ? "unknown" : "repeated", r.uid);
            dt_trial_result_free(&r);
            break;
        }
        seen[k] = 1;
        slot[k] = parsed;
        res[parsed++] = r;
    }
    if (bad[0]) {
        for (int i = 0; i < parsed; i++)
            dt_trial_result_free(&res[i]);
        free(res);
        free(slot);
        free(seen);
        worker_fail(w, 0, "malformed RESULT for batch %" PRIu64 ": %s", id, bad);
        return;
    }
    /* what is physically impossible is the worker's fault, never a result */
    dt_workload *wl = NULL;
    dt_err we;
    if (dt_workload_parse_key(pb->b.workload, &wl, &we) != 0)
        wl = NULL; /* cannot happen (we made the key); the bound is then 0 */
    int nfaults = 0;
    for (int k = 0; k < n; k++) {
        dt_trial_result *r = &res[slot[k]];
        char why[256];
        if (dt_trial_result_possible(wl, &pb->b.trials[k], r, p->cores, why, sizeof why))
            continue;
        char msg[1024];
        snprintf(msg, sizeof msg,
                 "worker fault: worker %.300s (%.127s) reported an impossible time for shape "
                 "%.127s: %.255s",
                 w->addr, w->name, pb->b.trials[k].shape, why);
        if (nfaults++ == 0)
            dt_log_warn("pool: %s; recorded as worker_lost, never as a result", msg);
        char *copy = strdup(msg);
        free(r->error);
        r->error = copy;
        r->status = DT_TRIAL_WORKER_LOST;
        r->min_ns = r->median_ns = NAN;
    }
    dt_workload_free(wl);
    if (nfaults) {
        w->faults += nfaults;
        pthread_mutex_lock(&p->mu);
        p->faults += nfaults;
        pthread_mutex_unlock(&p->mu);
        dt_log_warn("pool: worker %s: %d impossible result(s) in batch %" PRIu64
                    " (%lld from it so far)",
                    w->addr, nfaults, id, (long long)w->faults);
    }
    w->silences = 0;
    uv_timer_stop(&pb->deadline);
    list_remove(&p->flight, pb);
    w->inflight--;
    dt_log_debug("pool: batch %" PRIu64 " answered by %s", id, w->addr);
    /* the next batch goes out before the callbacks run */
    pump(p);
    for (int k = 0; k < n; k++)
        p->on_result(&res[slot[k]], p->ud);
    count_delivered(p, n);
    for (int i = 0; i < n; i++)
        dt_trial_result_free(&res[i]);
    free(res);
    free(slot);
    free(seen);
    pbatch_release(pb);
}

static void on_frame(pconn *c, dt_msg_type type, const json_t *pl)
{
    pworker *w = c->w;
    const char *msg = type == DT_MSG_ERROR ? jstr(pl, "message") : NULL;
    switch (w->st) {
    case W_HELLO:
        if (type == DT_MSG_HELLO)
            on_hello(c, pl);
        else if (type == DT_MSG_ERROR)
            worker_fail(w, 0, "worker says: %s", msg ? msg : "(no message)");
        else
            worker_fail(w, 1, "worker %s sent %s before HELLO: not a dtune worker?", w->addr,
                        dt_msg_name(type));
        return;
    case W_AUTH:
        if (type == DT_MSG_AUTH_OK)
            on_auth_ok(c, pl);
        else if (type == DT_MSG_ERROR)
            worker_fail(w, 1,
                        "worker %s refused our authentication: %s (use the same token file on "
                        "both sides)",
                        w->addr, msg ? msg : "(no message)");
        else
            worker_fail(w, 1, "worker %s sent %s instead of AUTH_OK during authentication",
                        w->addr, dt_msg_name(type));
        return;
    case W_LIVE:
        switch (type) {
        case DT_MSG_RESULT: on_result(c, pl); return;
        case DT_MSG_PING: conn_send(c, DT_MSG_PONG, json_object()); return;
        case DT_MSG_PONG: w->silences = 0; return;
        case DT_MSG_ERROR: worker_fail(w, 0, "worker says: %s", msg ? msg : "(no message)"); return;
        default: worker_fail(w, 0, "unexpected %s from a live worker", dt_msg_name(type)); return;
        }
    default: return;
    }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    if (suggested > 256 * 1024)
        suggested = 256 * 1024;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    pconn *c = s->data;
    if (!c->w || c->p->stopping) {
        free(buf->base);
        return;
    }
    pworker *w = c->w;
    if (nread < 0) {
        free(buf->base);
        const char *when = w->st == W_HELLO  ? " before HELLO"
                           : w->st == W_AUTH ? " during authentication (wrong token?)"
                                             : "";
        if (nread == UV_EOF)
            worker_fail(w, 0, "connection closed by the worker%s", when);
        else
            worker_fail(w, 0, "connection lost%s: %s", when, uv_strerror((int)nread));
        return;
    }
    if (nread == 0) {
        free(buf->base);
        return;
    }
    w->last_rx = dt_now_s();
    dt_err e;
    int rc = dt_wire_feed(&c->dec, buf->base, (size_t)nread, &e);
    free(buf->base);
    while (rc == 0 && c->w == w) {
        dt_msg_type type;
        json_t *pl = NULL;
        rc = dt_wire_next(&c->dec, &type, &pl, &e);
        if (rc == 1) {
            on_frame(c, type, pl);
            json_decref(pl);
            rc = 0;
        } else if (rc == 0) {
            break;
        }
    }
    if (rc < 0 && c->w == w)
        worker_fail(w, w->st != W_LIVE, "protocol error from worker %s: %s", w->addr, e.msg);
}

static double handshake_s(const dt_pool *p)
{
    return p->silent_s < HANDSHAKE_TIMEOUT_S ? p->silent_s : HANDSHAKE_TIMEOUT_S;
}

static void hs_timeout(uv_timer_t *t)
{
    pconn *c = t->data;
    pworker *w = c->w;
    if (!w || w->st == W_LIVE)
        return;
    char what[160];
    if (w->st == W_HELLO || w->st == W_AUTH) {
        /* connected, but the peer does not talk: the same as a silent worker */
        snprintf(what, sizeof what, "connected, but no %s within %g s (not a dtune worker, or "
                 "a stopped one?)", w->st == W_HELLO ? "HELLO" : "AUTH_OK", handshake_s(c->p));
        worker_silent(w, what);
    } else {
        worker_fail(w, 0, "no connection within %g s", handshake_s(c->p));
    }
}

static void connect_cb(uv_connect_t *req, int status)
{
    pconn *c = req->data;
    if (!c->w || c->p->stopping)
        return;
    pworker *w = c->w;
    if (status < 0) {
        worker_fail(w, 0, "cannot connect: %s", uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&c->nc.tcp, 1);
    w->st = W_HELLO;
    int rc = uv_read_start((uv_stream_t *)&c->nc.tcp, alloc_cb, read_cb);
    if (rc < 0)
        worker_fail(w, 0, "cannot read: %s", uv_strerror(rc));
}

static void gai_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    pworker *w = req->data;
    dt_pool *p = w->p;
    w->gai_pending = 0;
    if (p->stopping || status == UV_ECANCELED) {
        uv_freeaddrinfo(res);
        return;
    }
    if (status < 0 || !res) {
        uv_freeaddrinfo(res);
        worker_fail(w, 0, "cannot resolve %s: %s", w->host, uv_strerror(status));
        return;
    }
    pconn *c = (pconn *)dt_net_conn_new(&p->conns);
    if (!c) {
        uv_freeaddrinfo(res);
        worker_fail(w, 0, "out of memory");
        return;
    }
    c->p = p;
    c->w = w;
    dt_wire_decoder_init(&c->dec);
    c->creq.data = c;
    w->c = c;
    w->st = W_CONNECTING;
    uv_timer_start(&c->nc.timer, hs_timeout, (uint64_t)(handshake_s(p) * 1000.0), 0);
    int rc = uv_tcp_connect(&c->creq, &c->nc.tcp, res->ai_addr, connect_cb);
    uv_freeaddrinfo(res);
    if (rc < 0)
        worker_fail(w, 0, "cannot connect: %s", uv_strerror(rc));
}

static void worker_connect(pworker *w)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    w->gai.data = w;
    w->st = W_RESOLVING;
    int rc = uv_getaddrinfo(&w->p->loop, &w->gai, gai_cb, w->host, w->port, &hints);
    if (rc < 0) {
        worker_fail(w, 0, "cannot resolve %s: %s", w->host, uv_strerror(rc));
        return;
    }
    w->gai_pending = 1;
}

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
        conn_close((pconn *)nc);
    pblist *lists[] = {&p->queue, &p->flight};
    for (int l = 0; l < 2; l++)
        while (lists[l]->head) {
            pbatch *pb = lists[l]->head;
            list_remove(lists[l], pb);
            pbatch_release(pb);
        }
    uv_close((uv_handle_t *)&p->async, NULL);
}

/* Abandons every queued and in-flight batch (dt_pool_cancel): their
 * trials count as delivered without a callback; a late RESULT for one is
 * dropped (its id is no longer in flight). */
static void cancel_all(dt_pool *p)
{
    int64_t n = 0;
    pblist *lists[] = {&p->queue, &p->flight};
    for (int l = 0; l < 2; l++)
        while (lists[l]->head) {
            pbatch *pb = lists[l]->head;
            list_remove(lists[l], pb);
            if (pb->st == PB_FLIGHT && pb->w && pb->w->inflight > 0)
                pb->w->inflight--;
            n += pb->b.ntrials;
            pbatch_release(pb);
        }
    if (n)
        dt_log_info("pool: %lld trial(s) abandoned unanswered", (long long)n);
    count_delivered(p, (int)n);
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
    while (in.head) {
        pbatch *pb = in.head;
        list_remove(&in, pb);
        uv_timer_init(&p->loop, &pb->deadline);
        pb->deadline.data = pb;
        pb->timer_init = 1;
        pb->st = PB_QUEUED;
        list_push_back(&p->queue, pb);
    }
    if (cancel != p->cancel_done_loop) {
        cancel_all(p);
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
    pump(p);
}

static void loop_main(void *arg)
{
    dt_pool *p = arg;
    for (int i = 0; i < p->nworkers; i++)
        worker_connect(&p->workers[i]);
    async_cb(&p->async); /* batches submitted before the thread started */
    uv_run(&p->loop, UV_RUN_DEFAULT);
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
        list_remove(&p->incoming, pb);
        pbatch_free(pb);
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
    dt_net_ops ops = {.conn_size = sizeof(pconn), .release = conn_release,
                      .write_done = write_done};
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
            pbatch_free(pb);
            return dt_errf(e, DT_EINVAL, "pool: trial %d has no uid", i);
        }
    /* uids must be distinct within the batch: check on a sorted copy */
    dt_trial *sorted = malloc((size_t)b->ntrials * sizeof *sorted);
    if (!sorted) {
        pbatch_free(pb);
        return dt_errf(e, DT_ENOMEM, "pool: out of memory");
    }
    memcpy(sorted, b->trials, (size_t)b->ntrials * sizeof *sorted);
    qsort(sorted, (size_t)b->ntrials, sizeof *sorted, cmp_uid);
    int dup = uid_cmp_sorted(sorted, b->ntrials);
    if (dup) {
        int rc = dt_errf(e, DT_EINVAL, "pool: trial uid %s appears twice in one batch",
                         sorted[dup].uid);
        free(sorted);
        pbatch_free(pb);
        return rc;
    }
    free(sorted);
    pthread_mutex_lock(&p->mu);
    if (p->stop) {
        pthread_mutex_unlock(&p->mu);
        pbatch_free(pb);
        return dt_errf(e, DT_EINVAL, "pool: submit after close");
    }
    list_push_back(&p->incoming, pb);
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
