/* The client pool's connections (measure/pool_internal.h): one worker's
 * connection from resolving its address to its close — the TCP connect, the
 * HELLO/AUTH handshake under its time-out, frames read and written, the
 * PING of a live worker and the silence that drops it, and the failure path
 * (its batches requeued through pool_sched.c, back-off, refusal for good). */
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

void dt_pool_conn_release(dt_net_conn *nc) { dt_wire_decoder_free(&((pconn *)nc)->dec); }

/* Detaches c from its worker and closes it (no requeue: callers do that). */
void dt_pool_conn_close(pconn *c)
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
        dt_pool_worker_connect(w);
}

/* The connection of w failed (or w is refused for good when permanent):
 * the reason is kept for dt_pool_drain's message, in-flight batches are
 * requeued once, and w reconnects after its back-off. */
void dt_pool_worker_fail(pworker *w, int permanent, const char *fmt, ...)
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
                dt_pool_batch_lost(p, pb, w, lw);
            }
        }
        dt_pool_conn_close(c);
    }
    DT_ASSERT(!w->c, "a failed worker has no connection left");
    w->inflight = 0;
    w->fails++;

    pthread_mutex_lock(&p->mu);
    snprintf(w->reason, sizeof w->reason, "%s%s", permanent ? "refused: " : "", why);
    if (was_live)
        p->live_now--;
    DT_ASSERT(p->live_now >= 0 && p->live_now < p->nworkers + 1,
              "the live count is a count of the pool's workers");
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
    dt_pool_pump(p); /* requeued batches may go elsewhere now */
}

void dt_pool_write_done(dt_net_conn *nc, int status)
{
    pconn *c = (pconn *)nc;
    if (status < 0 && status != UV_ECANCELED && c->w && !c->p->stopping)
        dt_pool_worker_fail(c->w, 0, "write failed: %s", uv_strerror(status));
}

/* Sends one frame; steals payload.  On failure the worker has failed. */
int dt_pool_conn_send(pconn *c, dt_msg_type type, json_t *payload)
{
    uint8_t *buf;
    size_t len;
    dt_err e;
    int rc = dt_wire_encode(type, payload, &buf, &len, &e);
    json_decref(payload);
    if (rc) {
        dt_pool_worker_fail(c->w, 0, "cannot encode %s: %s", dt_msg_name(type), e.msg);
        return rc;
    }
    int urc = dt_net_conn_write(&c->nc, buf, len);
    if (urc == UV_ENOMEM) {
        dt_pool_worker_fail(c->w, 0, "out of memory");
        return DT_ENOMEM;
    }
    if (urc < 0) {
        dt_pool_worker_fail(c->w, 0, "write failed: %s", uv_strerror(urc));
        return DT_EIO;
    }
    return 0;
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
        dt_pool_worker_fail(w, 1, "silent: %s (%d times in a row: not used again)", what, w->silences);
    else
        dt_pool_worker_fail(w, 0, "silent: %s", what);
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
    dt_pool_conn_send(c, DT_MSG_PING, json_object());
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
    DT_ASSERT(w->st == W_HELLO && w->c == c, "a HELLO is taken only while waiting for it");
    if (dt_pool_hello_check(pl, w->addr, p->target_key, &h, &e) != 0) {
        dt_pool_worker_fail(w, 1, "%s", e.msg);
        return;
    }
    w->max_batch = h.max_batch;
    snprintf(w->name, sizeof w->name, "%s", h.name);
    snprintf(c->w_nonce, sizeof c->w_nonce, "%s", h.nonce);
    dt_nonce_new(c->c_nonce);
    char mac[65];
    dt_auth_mac(p->token, p->token_len, "dtune-auth-c", c->w_nonce, c->c_nonce, mac);
    w->st = W_AUTH;
    dt_pool_conn_send(c, DT_MSG_AUTH, json_pack("{s:s, s:s}", "nonce", c->c_nonce, "mac", mac));
}

static void on_auth_ok(pconn *c, const json_t *pl)
{
    pworker *w = c->w;
    dt_pool *p = c->p;
    DT_ASSERT(w->st == W_AUTH && w->c == c, "an AUTH_OK is taken only while waiting for it");
    const char *mac = jstr(pl, "mac");
    char want[65];
    dt_auth_mac(p->token, p->token_len, "dtune-auth-w", c->c_nonce, c->w_nonce, want);
    if (!mac || strlen(mac) != 64 || !dt_auth_equal(mac, want)) {
        dt_pool_worker_fail(w, 1,
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
    dt_pool_pump(p);
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
            dt_pool_worker_fail(w, 0, "worker says: %s", msg ? msg : "(no message)");
        else
            dt_pool_worker_fail(w, 1, "worker %s sent %s before HELLO: not a dtune worker?", w->addr,
                        dt_msg_name(type));
        return;
    case W_AUTH:
        if (type == DT_MSG_AUTH_OK)
            on_auth_ok(c, pl);
        else if (type == DT_MSG_ERROR)
            dt_pool_worker_fail(w, 1,
                        "worker %s refused our authentication: %s (use the same token file on "
                        "both sides)",
                        w->addr, msg ? msg : "(no message)");
        else
            dt_pool_worker_fail(w, 1, "worker %s sent %s instead of AUTH_OK during authentication",
                        w->addr, dt_msg_name(type));
        return;
    case W_LIVE:
        switch (type) {
        case DT_MSG_RESULT: dt_pool_on_result(c, pl); return;
        case DT_MSG_PING: dt_pool_conn_send(c, DT_MSG_PONG, json_object()); return;
        case DT_MSG_PONG: w->silences = 0; return;
        case DT_MSG_ERROR: dt_pool_worker_fail(w, 0, "worker says: %s", msg ? msg : "(no message)"); return;
        default: dt_pool_worker_fail(w, 0, "unexpected %s from a live worker", dt_msg_name(type)); return;
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
            dt_pool_worker_fail(w, 0, "connection closed by the worker%s", when);
        else
            dt_pool_worker_fail(w, 0, "connection lost%s: %s", when, uv_strerror((int)nread));
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
        dt_pool_worker_fail(w, w->st != W_LIVE, "protocol error from worker %s: %s", w->addr, e.msg);
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
        dt_pool_worker_fail(w, 0, "no connection within %g s", handshake_s(c->p));
    }
}

static void connect_cb(uv_connect_t *req, int status)
{
    pconn *c = req->data;
    if (!c->w || c->p->stopping)
        return;
    pworker *w = c->w;
    if (status < 0) {
        dt_pool_worker_fail(w, 0, "cannot connect: %s", uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&c->nc.tcp, 1);
    w->st = W_HELLO;
    int rc = uv_read_start((uv_stream_t *)&c->nc.tcp, alloc_cb, read_cb);
    if (rc < 0)
        dt_pool_worker_fail(w, 0, "cannot read: %s", uv_strerror(rc));
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
        dt_pool_worker_fail(w, 0, "cannot resolve %s: %s", w->host, uv_strerror(status));
        return;
    }
    DT_ASSERT(w->st == W_RESOLVING && !w->c, "a worker has at most one connection");
    pconn *c = (pconn *)dt_net_conn_new(&p->conns);
    if (!c) {
        uv_freeaddrinfo(res);
        dt_pool_worker_fail(w, 0, "out of memory");
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
        dt_pool_worker_fail(w, 0, "cannot connect: %s", uv_strerror(rc));
}

void dt_pool_worker_connect(pworker *w)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    w->gai.data = w;
    w->st = W_RESOLVING;
    int rc = uv_getaddrinfo(&w->p->loop, &w->gai, gai_cb, w->host, w->port, &hints);
    if (rc < 0) {
        dt_pool_worker_fail(w, 0, "cannot resolve %s: %s", w->host, uv_strerror(rc));
        return;
    }
    w->gai_pending = 1;
}
