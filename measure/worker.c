/* `dtune worker`: the measurement server (measure/worker.h) on one libuv
 * loop.
 *
 * Every connection (one of the worker's connection set, net/conn.h) is a
 * small state machine:
 *
 *   accepted ──HELLO sent──► unauthenticated ──AUTH ok──► authenticated
 *        │                        │  any other frame, bad MAC,
 *        │                        │  auth time-out, frame over 4 KiB,
 *        │                        │  evicted (below)
 *        ▼                        ▼
 *   refused (over the          ERROR (when there is something to say),
 *   connection limit)          then closed
 *
 * The connection limit: when DT_WORKER_MAX_CONNS are open, a new connection
 * closes the oldest unauthenticated one if that one has been connected for
 * at least DT_WORKER_EVICT_AFTER_S (a real client authenticates within a
 * round trip of HELLO); otherwise the new one is refused.  Authenticated
 * connections are never evicted: they proved the token.
 *
 * Authenticated connections send BATCH frames; each is validated
 * (dt_batch_from_json, --max-batch) and queued.  One batch at a time, for the
 * whole worker, runs on a libuv work thread through dt_runner_run; its RESULT
 * goes back to the connection that sent it, or is dropped (and logged) if
 * that connection is gone.  The loop thread never blocks: it only parses,
 * queues and writes.
 *
 * Protocol errors (garbage, wrong version or type, a non-object payload, a
 * length prefix over DT_WIRE_MAX_FRAME, a frame cut off by the peer closing)
 * are logged with the peer's address and close that connection only.
 *
 * SIGTERM / SIGINT: the listening socket closes, queued batches are dropped
 * (their clients see the connection close and requeue them elsewhere), the
 * running batch finishes and its RESULT is sent, then every connection is
 * flushed and closed and dt_worker_run returns 0. */
#include "measure/worker.h"

#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/target.h"
#include "measure/trial.h"
#include "measure/wire.h"
#include "net/addr.h"
#include "net/conn.h"

#define DT_WORKER_MAX_CONNS 64          /* concurrent connections */
#define DT_WORKER_EVICT_AFTER_S 1.0     /* unauthenticated this long: evictable at the limit */
#define DT_WORKER_PREAUTH_MAX 4096      /* largest frame before AUTH (AUTH is ~170 B) */
#define DT_WORKER_READ_CHUNK 65536      /* bytes per read */
#define DT_WORKER_MAX_BATCHES 16           /* batches queued or running per connection */
#define DT_WORKER_MAX_UNSENT (64u << 20) /* bytes written but not taken by the peer */
#define DT_WORKER_FRAME_TIMEOUT_S 120.0 /* a started frame must complete in this time */
#define DT_WORKER_LINGER_S 5.0          /* time to flush the last frames before closing */
#define DT_WORKER_ERROR_TEXT_MAX 8192   /* bytes of error text per trial in a RESULT */
#define DT_WORKER_DEFAULT_MAX_BATCH 256
#define DT_WORKER_DEFAULT_AUTH_TIMEOUT 10.0

typedef struct dt_conn dt_conn;
typedef struct dt_wbatch dt_wbatch;

typedef struct dt_wk {
    uv_loop_t loop;
    uv_tcp_t server;
    uv_signal_t sig_term, sig_int;
    int server_open, signals_open;
    const dt_worker_opts *o;
    char name[256];
    char target_key[DT_TARGET_KEY_MAX];
    json_t *target_info;
    int max_batch;
    double auth_timeout_s;
    dt_net_set conns; /* a closing connection stays until its handles close */
    dt_wbatch *queue_head, *queue_tail; /* batches waiting for the runner */
    dt_wbatch *running;                 /* the batch on the work thread, or NULL */
    int stopping;                    /* a signal arrived */
    int finishing;                   /* the last batch is done: closing everything */
} dt_wk;

/* nc.timer: the auth time-out, then the frame time-out, then linger;
 * nc.shutting: flushing the last frames, then close; nc.since_ms: the
 * accept (never marked again: the eviction order of unauthenticated ones). */
struct dt_conn {
    dt_net_conn nc; /* first: tcp, timer, id, peer, closing, shutting */
    dt_wk *w;
    char nonce[65]; /* the worker's nonce sent in HELLO */
    dt_wire_decoder dec;
    int authed;
    int batches;      /* this connection's batches queued or running */
    char rbuf[DT_WORKER_READ_CHUNK];
};

struct dt_wbatch {
    uv_work_t req; /* first: the request is the batch */
    dt_wk *w;
    dt_conn *c;       /* NULL once the connection is gone */
    uint64_t conn_id; /* for the log when it is gone */
    json_int_t id;
    dt_batch batch;
    dt_trial_result *results;
    int rc;
    dt_err err;
    double seconds;
    dt_wbatch *next;
};

static uint64_t dt_ms(double s) { return (uint64_t)ceil(s * 1000.0); }

/* ---- batches held (queued or running) ------------------------------------ */

static void dt_wbatch_free(dt_wbatch *j)
{
    if (!j)
        return;
    if (j->results)
        for (int i = 0; i < j->batch.ntrials; i++)
            dt_trial_result_free(&j->results[i]);
    free(j->results);
    dt_batch_free(&j->batch);
    free(j);
}

/* Forgets every batch of c: queued ones are dropped, the running one will
 * have its result dropped. */
static void dt_conn_detach_batches(dt_conn *c)
{
    dt_wk *w = c->w;
    dt_wbatch **pp = &w->queue_head;
    w->queue_tail = NULL;
    while (*pp) {
        dt_wbatch *j = *pp;
        if (j->c == c) {
            *pp = j->next;
            dt_log_info("connection #%llu closed: its queued batch %lld is dropped",
                        (unsigned long long)c->nc.id, (long long)j->id);
            dt_wbatch_free(j);
        } else {
            w->queue_tail = j;
            pp = &j->next;
        }
    }
    if (w->running && w->running->c == c)
        w->running->c = NULL;
    c->batches = 0;
}

/* ---- connections: closing ------------------------------------------------- */

static void dt_on_conn_release(dt_net_conn *nc) { dt_wire_decoder_free(&((dt_conn *)nc)->dec); }

/* Closes now; pending writes are cancelled. */
static void dt_conn_close(dt_conn *c)
{
    if (c->nc.closing)
        return;
    dt_conn_detach_batches(c);
    dt_net_conn_close(&c->nc);
}

/* Control characters (from a peer's text) would forge log lines. */
static void dt_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F)
            *s = ' ';
}

/* Logs why, then closes now. */
static void dt_conn_drop(dt_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dt_conn_drop(dt_conn *c, const char *fmt, ...)
{
    if (c->nc.closing)
        return;
    char why[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    dt_one_line(why);
    dt_log_warn("connection #%llu from %s: %s; closing", (unsigned long long)c->nc.id, c->nc.peer,
                why);
    dt_conn_close(c);
}

static void dt_on_conn_timer(uv_timer_t *t)
{
    dt_conn *c = t->data;
    if (c->nc.shutting)
        dt_conn_drop(c, "the peer did not take its last frames within %.0f s",
                     DT_WORKER_LINGER_S);
    else if (!c->authed)
        dt_conn_drop(c, "no authentication within %g s", c->w->auth_timeout_s);
    else
        dt_conn_drop(c, "a frame stayed incomplete for %.0f s (%zu bytes buffered)",
                     DT_WORKER_FRAME_TIMEOUT_S, c->dec.len);
}

/* Stops reading, lets what was written reach the peer, then closes (a
 * linger timer closes it anyway if the peer does not read). */
static void dt_conn_finish(dt_conn *c)
{
    dt_net_conn_finish(&c->nc, 0, DT_WORKER_LINGER_S, dt_on_conn_timer);
}

/* ---- connections: writing ------------------------------------------------- */

static void dt_on_write_done(dt_net_conn *nc, int status)
{
    if (status < 0 && status != UV_ECANCELED)
        dt_conn_drop((dt_conn *)nc, "write failed: %s", uv_strerror(status));
}

/* Sends one frame; takes the payload reference.  Failures close c. */
static int dt_conn_send(dt_conn *c, dt_msg_type type, json_t *payload)
{
    if (c->nc.closing || !payload) {
        json_decref(payload);
        if (!c->nc.closing)
            dt_conn_drop(c, "out of memory building a %s frame", dt_msg_name(type));
        return DT_EIO;
    }
    uint8_t *data;
    size_t len;
    dt_err e;
    int rc = dt_wire_encode(type, payload, &data, &len, &e);
    json_decref(payload);
    if (rc) {
        dt_log_error("connection #%llu: cannot send %s: %s", (unsigned long long)c->nc.id,
                     dt_msg_name(type), e.msg);
        dt_conn_close(c);
        return rc;
    }
    int r = dt_net_conn_write(&c->nc, data, len);
    if (r == UV_ENOMEM) {
        dt_conn_drop(c, "out of memory sending %s", dt_msg_name(type));
        return DT_ENOMEM;
    }
    if (r < 0) {
        dt_conn_drop(c, "write failed: %s", uv_strerror(r));
        return DT_EIO;
    }
    size_t unsent = dt_net_conn_unsent(&c->nc);
    if (unsent > DT_WORKER_MAX_UNSENT) {
        dt_conn_drop(c, "the peer is not reading (%zu bytes unsent)", unsent);
        return DT_EIO;
    }
    return 0;
}

/* Sends ERROR {"message", "id"?}, logs it, then closes c gracefully. */
static void dt_conn_fail(dt_conn *c, const json_int_t *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void dt_conn_fail(dt_conn *c, const json_int_t *id, const char *fmt, ...)
{
    if (c->nc.closing || c->nc.shutting)
        return;
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dt_one_line(msg);
    dt_log_warn("connection #%llu from %s: %s; closing", (unsigned long long)c->nc.id,
                c->nc.peer, msg);
    json_t *p = json_object();
    if (p) {
        json_object_set_new(p, "message", json_string(msg));
        if (id)
            json_object_set_new(p, "id", json_integer(*id));
    }
    if (dt_conn_send(c, DT_MSG_ERROR, p) == 0)
        dt_conn_finish(c);
}

/* ---- the runner: one batch at a time --------------------------------------- */

static void dt_start_next(dt_wk *w);
static void dt_stop_finish(dt_wk *w);

static void dt_wbatch_work(uv_work_t *req)
{
    dt_wbatch *j = (dt_wbatch *)req;
    /* SIGTERM/SIGINT belong to the loop thread (uv_signal): blocked here,
     * they cannot interrupt the runner's system calls while it measures. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    double t0 = dt_now_s();
    dt_err_clear(&j->err);
    j->results = calloc((size_t)j->batch.ntrials, sizeof *j->results);
    if (!j->results)
        j->rc = dt_errf(&j->err, DT_ENOMEM, "out of memory for %d results", j->batch.ntrials);
    else
        j->rc = dt_runner_run(j->w->o->runner, &j->batch, j->results, &j->err);
    j->seconds = dt_now_s() - t0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Cuts s to at most max bytes (on a UTF-8 character boundary) and marks it. */
static void dt_truncate_text(char **s, size_t max)
{
    static const char mark[] = " [truncated]";
    size_t n = strlen(*s);
    if (n <= max)
        return;
    size_t cut = max > sizeof mark ? max - sizeof mark : 0;
    while (cut > 0 && ((unsigned char)(*s)[cut] & 0xC0) == 0x80)
        cut--;
    memcpy(*s + cut, mark, sizeof mark);
}

/* Replaces bytes that are not printable ASCII (or \n, \t) by '?': a compiler
 * log with stray bytes must not make the whole RESULT unencodable. */
static void dt_ascii_only(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x7F || ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t'))
            *s = '?';
}

static json_t *dt_result_payload(dt_wbatch *j)
{
    int n = j->batch.ntrials;
    size_t per = n > 0 ? (DT_WIRE_MAX_FRAME / 2) / (size_t)n : DT_WORKER_ERROR_TEXT_MAX;
    if (per > DT_WORKER_ERROR_TEXT_MAX)
        per = DT_WORKER_ERROR_TEXT_MAX;
    if (per < 256)
        per = 256;
    json_t *arr = json_array();
    json_t *p = json_object();
    if (!arr || !p) {
        json_decref(arr);
        json_decref(p);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        dt_trial_result *r = &j->results[i];
        if (r->error)
            dt_truncate_text(&r->error, per);
        json_t *jr = dt_trial_result_to_json(r);
        if (!jr && r->error) {
            dt_ascii_only(r->error);
            jr = dt_trial_result_to_json(r);
        }
        if (!jr || json_array_append_new(arr, jr)) {
            json_decref(arr);
            json_decref(p);
            return NULL;
        }
    }
    json_object_set_new(p, "id", json_integer(j->id));
    json_object_set_new(p, "results", arr);
    return p;
}

static void dt_wbatch_done(uv_work_t *req, int status)
{
    dt_wbatch *j = (dt_wbatch *)req;
    dt_wk *w = j->w;
    dt_conn *c = j->c;
    (void)status; /* work is never cancelled */
    w->running = NULL;
    if (c)
        c->batches--;
    if (j->rc) {
        dt_log_error("batch %lld (%d trials) from connection #%llu could not be measured: %s",
                     (long long)j->id, j->batch.ntrials, (unsigned long long)j->conn_id,
                     j->err.msg);
        if (c)
            dt_conn_fail(c, &j->id, "cannot measure batch %lld: %s", (long long)j->id,
                         j->err.msg);
    } else {
        int ok = 0;
        for (int i = 0; i < j->batch.ntrials; i++)
            ok += j->results[i].status == DT_TRIAL_OK;
        dt_log_info("batch %lld from connection #%llu: %d trials, %d ok, in %.2f s",
                    (long long)j->id, (unsigned long long)j->conn_id, j->batch.ntrials, ok,
                    j->seconds);
        if (!c) {
            dt_log_warn("batch %lld finished after connection #%llu closed; its result "
                        "(%d trials) is dropped",
                        (long long)j->id, (unsigned long long)j->conn_id, j->batch.ntrials);
        } else if (!c->nc.closing) {
            json_t *p = dt_result_payload(j);
            if (!p)
                dt_conn_fail(c, &j->id, "cannot encode the result of batch %lld",
                             (long long)j->id);
            else
                dt_conn_send(c, DT_MSG_RESULT, p);
        }
    }
    dt_wbatch_free(j);
    if (w->stopping)
        dt_stop_finish(w);
    else
        dt_start_next(w);
}

static void dt_start_next(dt_wk *w)
{
    if (w->running || !w->queue_head || w->stopping)
        return;
    dt_wbatch *j = w->queue_head;
    w->queue_head = j->next;
    if (!w->queue_head)
        w->queue_tail = NULL;
    j->next = NULL;
    w->running = j;
    int r = uv_queue_work(&w->loop, &j->req, dt_wbatch_work, dt_wbatch_done);
    if (r) { /* cannot happen with a valid work callback; answer anyway */
        j->rc = dt_errf(&j->err, DT_EIO, "cannot start a work thread: %s", uv_strerror(r));
        dt_wbatch_done(&j->req, r);
    }
}

/* ---- frames from a connection ---------------------------------------------- */

static int dt_is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

static void dt_handle_auth(dt_conn *c, json_t *p)
{
    dt_wk *w = c->w;
    const char *cnonce = json_string_value(json_object_get(p, "nonce"));
    const char *mac = json_string_value(json_object_get(p, "mac"));
    if (!dt_is_hex64(cnonce) || !dt_is_hex64(mac)) {
        dt_conn_fail(c, NULL,
                     "malformed AUTH: \"nonce\" and \"mac\" must be 64 lower-case hex digits");
        return;
    }
    char want[65];
    dt_auth_mac(w->o->token, w->o->token_len, "dtune-auth-c", c->nonce, cnonce, want);
    if (!dt_auth_equal(want, mac)) {
        dt_conn_fail(c, NULL, "authentication failed");
        return;
    }
    c->authed = 1;
    uv_timer_stop(&c->nc.timer);
    char reply[65];
    dt_auth_mac(w->o->token, w->o->token_len, "dtune-auth-w", cnonce, c->nonce, reply);
    json_t *ok = json_object();
    if (ok)
        json_object_set_new(ok, "mac", json_string(reply));
    if (dt_conn_send(c, DT_MSG_AUTH_OK, ok) == 0)
        dt_log_info("connection #%llu from %s: authenticated", (unsigned long long)c->nc.id,
                    c->nc.peer);
}

static void dt_handle_batch(dt_conn *c, json_t *p)
{
    dt_wk *w = c->w;
    json_t *jid = json_object_get(p, "id");
    if (!json_is_integer(jid)) {
        dt_conn_fail(c, NULL, "BATCH needs an integer \"id\"");
        return;
    }
    json_int_t id = json_integer_value(jid);
    json_t *jb = json_object_get(p, "batch");
    if (!json_is_object(jb)) {
        dt_conn_fail(c, &id, "BATCH %lld needs a \"batch\" object", (long long)id);
        return;
    }
    if (w->stopping) {
        dt_conn_fail(c, &id, "the worker is shutting down; batch %lld is not taken", (long long)id);
        return;
    }
    if (c->batches >= DT_WORKER_MAX_BATCHES) {
        dt_conn_fail(c, &id, "batch %lld: already %d batches in flight on this connection",
                     (long long)id, c->batches);
        return;
    }
    /* cheap check before parsing thousands of trials */
    json_t *jt = json_object_get(jb, "trials");
    if (json_is_array(jt) && json_array_size(jt) > (size_t)w->max_batch) {
        dt_conn_fail(c, &id, "batch %lld has %zu trials; this worker takes at most %d (max_batch)",
                     (long long)id, json_array_size(jt), w->max_batch);
        return;
    }
    dt_wbatch *j = calloc(1, sizeof *j);
    if (!j) {
        dt_conn_fail(c, &id, "out of memory queueing batch %lld", (long long)id);
        return;
    }
    dt_err e;
    dt_err_clear(&e);
    if (dt_batch_from_json(jb, &j->batch, &e)) {
        free(j);
        dt_conn_fail(c, &id, "invalid batch %lld: %s", (long long)id, e.msg);
        return;
    }
    if (j->batch.ntrials > w->max_batch) {
        dt_conn_fail(c, &id, "batch %lld has %d trials; this worker takes at most %d (max_batch)",
                     (long long)id, j->batch.ntrials, w->max_batch);
        dt_wbatch_free(j);
        return;
    }
    j->w = w;
    j->c = c;
    j->conn_id = c->nc.id;
    j->id = id;
    if (j->batch.ntrials == 0) { /* nothing to measure */
        json_t *r = json_object();
        if (r) {
            json_object_set_new(r, "id", json_integer(id));
            json_object_set_new(r, "results", json_array());
        }
        dt_conn_send(c, DT_MSG_RESULT, r);
        dt_wbatch_free(j);
        return;
    }
    if (w->queue_tail)
        w->queue_tail->next = j;
    else
        w->queue_head = j;
    w->queue_tail = j;
    c->batches++;
    dt_log_info("connection #%llu: batch %lld (%d trials of %s) queued",
                (unsigned long long)c->nc.id, (long long)id, j->batch.ntrials, j->batch.workload);
    dt_start_next(w);
}

static void dt_handle_frame(dt_conn *c, dt_msg_type t, json_t *p)
{
    if (!c->authed) {
        if (t == DT_MSG_AUTH)
            dt_handle_auth(c, p);
        else
            dt_conn_fail(c, NULL, "authentication required: got %s before AUTH", dt_msg_name(t));
        return;
    }
    switch (t) {
    case DT_MSG_BATCH: dt_handle_batch(c, p); break;
    case DT_MSG_PING: dt_conn_send(c, DT_MSG_PONG, json_object()); break;
    case DT_MSG_PONG: break;
    case DT_MSG_ERROR: {
        const char *m = json_string_value(json_object_get(p, "message"));
        dt_conn_drop(c, "the peer reported an error: %.300s", m ? m : "(no message)");
        break;
    }
    default: dt_conn_fail(c, NULL, "unexpected %s frame from a client", dt_msg_name(t)); break;
    }
}

static void dt_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    dt_conn *c = h->data;
    (void)suggested;
    buf->base = c->rbuf;
    buf->len = sizeof c->rbuf;
}

/* Before AUTH only a small frame is acceptable: a peer announcing more is
 * closed on the length prefix, before its frame is buffered or parsed. */
static int dt_preauth_too_big(dt_conn *c)
{
    if (c->authed || c->dec.len < 4 || dt_wire_frame_len(c->dec.buf) <= DT_WORKER_PREAUTH_MAX)
        return 0;
    dt_conn_drop(c, "unauthenticated peer announced a frame of %u bytes (at most %d before AUTH)",
                 dt_wire_frame_len(c->dec.buf), DT_WORKER_PREAUTH_MAX);
    return 1;
}

static void dt_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    dt_conn *c = s->data;
    if (nread == 0 || c->nc.closing)
        return;
    if (nread < 0) {
        if (c->dec.len > 0)
            dt_conn_drop(c, "connection ended inside a frame (%zu bytes of a truncated frame)",
                         c->dec.len);
        else if (nread != UV_EOF && nread != UV_ECONNRESET)
            dt_conn_drop(c, "read failed: %s", uv_strerror((int)nread));
        else { /* between frames: an ordinary end */
            dt_log_info("connection #%llu from %s: %s by the peer", (unsigned long long)c->nc.id,
                        c->nc.peer, nread == UV_EOF ? "closed" : "reset");
            dt_conn_close(c);
        }
        return;
    }
    if (c->nc.shutting)
        return;
    dt_err e;
    dt_err_clear(&e);
    if (dt_wire_feed(&c->dec, buf->base, (size_t)nread, &e)) {
        dt_conn_drop(c, "%s", e.msg);
        return;
    }
    if (dt_preauth_too_big(c))
        return;
    int got = 0;
    while (!c->nc.closing && !c->nc.shutting) {
        dt_msg_type t;
        json_t *p;
        int r = dt_wire_next(&c->dec, &t, &p, &e);
        if (r < 0) {
            dt_conn_drop(c, "%s", e.msg);
            return;
        }
        if (r == 0)
            break;
        got = 1;
        dt_handle_frame(c, t, p);
        json_decref(p);
    }
    if (c->nc.closing || c->nc.shutting)
        return;
    if (!c->authed) {
        dt_preauth_too_big(c); /* the auth timer bounds the time */
        return;
    }
    if (c->dec.len == 0)
        uv_timer_stop(&c->nc.timer);
    else if (got || !uv_is_active((uv_handle_t *)&c->nc.timer))
        uv_timer_start(&c->nc.timer, dt_on_conn_timer, dt_ms(DT_WORKER_FRAME_TIMEOUT_S), 0);
}

/* ---- accepting -------------------------------------------------------------- */

/* Accepts and closes at once: the connection limit or a shutdown. */
static void dt_refuse(uv_stream_t *server, const char *why)
{
    char peer[96];
    if (dt_net_refuse(server, peer, sizeof peer) == 0)
        dt_log_warn("refusing a connection from %s: %s", peer, why);
}

/* Not authenticated: evictable at the limit once DT_WORKER_EVICT_AFTER_S
 * has passed since the accept. */
static int dt_conn_evictable(const dt_net_conn *nc) { return !((const dt_conn *)nc)->authed; }

/* At the limit: closes the oldest unauthenticated connection if it has been
 * connected for DT_WORKER_EVICT_AFTER_S; 1 when one was closed. */
static int dt_evict_unauthenticated(dt_wk *w)
{
    dt_conn *victim = (dt_conn *)dt_net_set_victim(&w->conns, DT_WORKER_EVICT_AFTER_S);
    if (!victim)
        return 0;
    dt_conn_drop(victim,
                 "not authenticated after %.1f s, and a new connection needs the slot "
                 "(already %d connections)",
                 (double)dt_net_conn_waited_ms(&victim->nc) / 1000.0,
                 dt_net_set_active(&w->conns));
    return 1;
}

static void dt_on_connection(uv_stream_t *server, int status)
{
    dt_wk *w = server->data;
    if (status < 0) {
        dt_log_warn("accepting a connection failed: %s", uv_strerror(status));
        return;
    }
    if (dt_net_set_active(&w->conns) >= DT_WORKER_MAX_CONNS)
        dt_evict_unauthenticated(w);
    if (dt_net_set_active(&w->conns) >= DT_WORKER_MAX_CONNS) {
        char why[96];
        snprintf(why, sizeof why, "already %d connections, and none has waited %.0f s "
                 "without authenticating", dt_net_set_active(&w->conns),
                 DT_WORKER_EVICT_AFTER_S);
        dt_refuse(server, why);
        return;
    }
    dt_conn *c = (dt_conn *)dt_net_conn_new(&w->conns);
    if (!c) {
        dt_refuse(server, "out of memory");
        return;
    }
    c->w = w;
    dt_wire_decoder_init(&c->dec);
    int r = dt_net_conn_accept(&c->nc, server);
    if (r) {
        dt_log_warn("accepting a connection failed: %s", uv_strerror(r));
        dt_conn_close(c);
        return;
    }
    dt_log_info("connection #%llu from %s", (unsigned long long)c->nc.id, c->nc.peer);

    dt_nonce_new(c->nonce);
    json_t *h = json_object();
    if (h) {
        json_object_set_new(h, "worker", json_string(w->name));
        json_object_set_new(h, "target", json_string(w->target_key));
        json_object_set(h, "target_info", w->target_info);
        json_object_set_new(h, "nonce", json_string(c->nonce));
        json_object_set_new(h, "version", json_string("dtune " DTUNE_VERSION));
        json_object_set_new(h, "max_batch", json_integer(w->max_batch));
    }
    if (dt_conn_send(c, DT_MSG_HELLO, h))
        return;
    uv_timer_start(&c->nc.timer, dt_on_conn_timer, dt_ms(w->auth_timeout_s), 0);
    r = uv_read_start((uv_stream_t *)&c->nc.tcp, dt_on_alloc, dt_on_read);
    if (r)
        dt_conn_drop(c, "cannot read: %s", uv_strerror(r));
}

/* ---- stopping ----------------------------------------------------------------- */

/* The last batch is answered (or there was none): flush and close everything. */
static void dt_stop_finish(dt_wk *w)
{
    if (w->finishing)
        return;
    w->finishing = 1;
    for (dt_net_conn *nc = w->conns.head; nc; nc = nc->next)
        dt_conn_finish((dt_conn *)nc);
    if (w->signals_open) {
        uv_close((uv_handle_t *)&w->sig_term, NULL);
        uv_close((uv_handle_t *)&w->sig_int, NULL);
        w->signals_open = 0;
    }
    dt_log_info("stopped: closing %d connection(s)", dt_net_set_count(&w->conns));
}

static void dt_on_signal(uv_signal_t *s, int signum)
{
    dt_wk *w = s->data;
    if (w->stopping) {
        dt_log_warn("%s again: still finishing batch %lld", strsignal(signum),
                    w->running ? (long long)w->running->id : -1LL);
        return;
    }
    w->stopping = 1;
    dt_log_info("%s: stopping%s", strsignal(signum),
                w->running ? " after the running batch" : "");
    if (w->server_open) {
        uv_close((uv_handle_t *)&w->server, NULL);
        w->server_open = 0;
    }
    /* queued batches are dropped: their clients requeue them elsewhere */
    while (w->queue_head) {
        dt_wbatch *j = w->queue_head;
        w->queue_head = j->next;
        if (j->c)
            j->c->batches--;
        dt_log_info("stopping: batch %lld from connection #%llu is not run",
                    (long long)j->id, (unsigned long long)j->conn_id);
        dt_wbatch_free(j);
    }
    w->queue_tail = NULL;
    for (dt_net_conn *nc = w->conns.head; nc; nc = nc->next) {
        dt_conn *c = (dt_conn *)nc;
        if (c->nc.closing)
            continue;
        if (w->running && w->running->c == c)
            uv_read_stop((uv_stream_t *)&c->nc.tcp); /* keep it to send the result */
        else
            dt_conn_finish(c);
    }
    if (!w->running)
        dt_stop_finish(w);
}

/* ---- set-up ------------------------------------------------------------------ */

/* "HOST:PORT": IPv4 or IPv6 literal (IPv6 optionally in brackets),
 * "localhost", or a host name resolved once at start-up. */
static int dt_parse_listen(const char *s, struct sockaddr_storage *ss, dt_err *e)
{
    /* every message starts the same way; a detail may follow */
#define BAD(...) dt_errf(e, DT_EINVAL, "bad --listen address '%s' (expected HOST:PORT)" __VA_ARGS__)
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1])
        return BAD(, s);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || colon[1] < '0' || colon[1] > '9' || port < 0 || port > 65535)
        return BAD(": the port must be a number 0..65535", s);
    char host[256];
    size_t hl = (size_t)(colon - s);
    if (hl >= sizeof host)
        return BAD(": the host is too long", s);
    memcpy(host, s, hl);
    host[hl] = '\0';
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[') {
        if (hl < 3 || host[hl - 1] != ']')
            return BAD(": unbalanced '['", s);
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
        if (uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) != 0)
            return BAD(": '%s' is not an IPv6 address", s, host);
        return 0;
    }
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0)
        return 0;
    if (strchr(host, ':') && uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) == 0)
        return 0;
    /* a host name: the loop is not running yet, so resolving may block */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int r = getaddrinfo(host, NULL, &hints, &res);
    if (r != 0 || !res)
        return BAD(": cannot resolve the host '%s': %s", s, host,
                   r ? gai_strerror(r) : "no address");
#undef BAD
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return 0;
}

int dt_worker_check_listen(const char *listen, dt_err *e)
{
    struct sockaddr_storage ss;
    return dt_parse_listen(listen && *listen ? listen : DT_WORKER_DEFAULT_LISTEN, &ss, e);
}

static void dt_close_any(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* Closes whatever is still open and releases the loop. */
static void dt_loop_teardown(dt_wk *w)
{
    uv_walk(&w->loop, dt_close_any, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&w->loop) != 0)
        dt_log_warn("the event loop still had handles at exit");
}

int dt_worker_run(const dt_worker_opts *o, dt_err *e)
{
    if (!o || !o->runner)
        return dt_errf(e, DT_EINVAL, "worker: no runner given");
    if (!o->token || o->token_len < DT_TOKEN_MIN)
        return dt_errf(e, DT_EINVAL, "worker: the token must have at least %d bytes",
                       DT_TOKEN_MIN);
    if (o->max_batch < 0 || o->max_batch > DT_BATCH_MAX_TRIALS)
        return dt_errf(e, DT_EINVAL, "worker: max_batch must be 1..%d, not %d",
                       DT_BATCH_MAX_TRIALS, o->max_batch);
    if (!(o->auth_timeout_s >= 0) || o->auth_timeout_s > 86400)
        return dt_errf(e, DT_EINVAL, "worker: auth timeout must be 0 (default) .. 86400 s");
    struct sockaddr_storage addr;
    const char *where = o->listen && *o->listen ? o->listen : DT_WORKER_DEFAULT_LISTEN;
    int rc = dt_parse_listen(where, &addr, e);
    if (rc)
        return rc;

    dt_wk *w = calloc(1, sizeof *w);
    if (!w)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    w->o = o;
    w->max_batch = o->max_batch > 0 ? o->max_batch : DT_WORKER_DEFAULT_MAX_BATCH;
    w->auth_timeout_s = o->auth_timeout_s > 0 ? o->auth_timeout_s : DT_WORKER_DEFAULT_AUTH_TIMEOUT;
    if (o->name && *o->name)
        snprintf(w->name, sizeof w->name, "%s", o->name);
    else if (gethostname(w->name, sizeof w->name - 1) != 0)
        snprintf(w->name, sizeof w->name, "worker");
    dt_target t;
    if ((rc = dt_target_detect_key(&t, w->target_key, sizeof w->target_key, e))) {
        free(w);
        return rc;
    }
    w->target_info = dt_target_to_json(&t);
    if (!w->target_info) {
        free(w);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }

    /* a peer that goes away mid-write must be an error code, not a signal */
    signal(SIGPIPE, SIG_IGN);

    int r = uv_loop_init(&w->loop);
    if (r) {
        json_decref(w->target_info);
        free(w);
        return dt_errf(e, DT_EIO, "cannot create the event loop: %s", uv_strerror(r));
    }
    dt_net_ops ops = {.conn_size = sizeof(dt_conn), .release = dt_on_conn_release,
                      .write_done = dt_on_write_done, .evictable = dt_conn_evictable};
    dt_net_set_init(&w->conns, &w->loop, &ops, w);
    w->server_open = 1;
    int port = 0;
    r = dt_net_listen(&w->loop, &w->server, w, (const struct sockaddr *)&addr, dt_on_connection,
                      &port);
    if (r) {
        rc = dt_errf(e, DT_EIO, "cannot listen on %s: %s", where, uv_strerror(r));
        dt_loop_teardown(w);
        json_decref(w->target_info);
        free(w);
        return rc;
    }
    uv_signal_init(&w->loop, &w->sig_term);
    uv_signal_init(&w->loop, &w->sig_int);
    w->sig_term.data = w->sig_int.data = w;
    w->signals_open = 1;
    uv_signal_start(&w->sig_term, dt_on_signal, SIGTERM);
    uv_signal_start(&w->sig_int, dt_on_signal, SIGINT);
    dt_log_info("worker '%s' listening on %s (port %d), target %s, max_batch %d", w->name,
                where, port, w->target_key, w->max_batch);
    if (o->on_listening)
        o->on_listening(port, o->ud);

    uv_run(&w->loop, UV_RUN_DEFAULT);

    dt_loop_teardown(w);
    json_decref(w->target_info);
    free(w);
    return 0;
}
