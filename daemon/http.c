/* The daemon's HTTP/1.1 server (daemon/http.h) on a libuv loop.
 *
 * Each connection is one of the server's connection set (net/conn.h: a TCP
 * handle, a timer, the close and linger paths) with a request parser
 * (daemon/http_conn.h).  Bytes read are fed to the parser; every complete
 * request is answered at once, on the loop thread, so pipelined requests
 * are answered in order (libuv keeps the writes in order).  The timer is, in
 * turn:
 *
 *   idle     no request in progress: idle_timeout_s after the connection
 *            opened or the last request completed → closed silently
 *   request  from the first byte of a request: request_timeout_s for the
 *            whole request to arrive → 408, then closed
 *   linger   after the last response: the write side is shut down (FIN),
 *            input is read and discarded until the peer closes, at most
 *            DT_HTTP_LINGER_S, so the peer sees the response instead of a
 *            reset
 *
 * Errors found by the parser (400, 411, 413, 414, 431, 501) and the request
 * time-out (408) are answered with a JSON body and "Connection: close";
 * a missing or wrong bearer token (401) keeps the connection.  A peer that
 * does not read its responses stops being read once DT_HTTP_MAX_UNSENT bytes
 * wait to be sent.
 *
 * The connection limit: when max_connections are open, a new connection
 * closes the one idle longest (idle timer running, nothing being written),
 * if that one has been idle at least evict_idle_s; otherwise the new one is
 * closed at accept.  Idle connections therefore cannot lock clients out for
 * the idle time-out, while a burst of fresh connections (whose requests are
 * on their way) does not close its own members. */
#include "daemon/http.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"
#include "daemon/http_auth.h"
#include "daemon/http_conn.h"
#include "daemon/http_msg.h"
#include "net/addr.h"
#include "net/conn.h"

#define DT_HTTP_READ_CHUNK 16384
#define DT_HTTP_MAX_UNSENT (4u << 20)
#define DT_HTTP_LINGER_S 2.0

typedef struct dt_hconn dt_hconn;

struct dt_http_server {
    uv_tcp_t tcp;
    int listen_open;
    int closing;
    int port;
    char *token;      /* token_len bytes, or NULL: no token */
    size_t token_len;
    dt_http_limits lim;
    dt_http_handler handler;
    void *ud;
    dt_net_set conns; /* a closing connection stays until its handles close */
    dt_http_stats st;
};

enum { DT_TIMER_NONE, DT_TIMER_IDLE, DT_TIMER_REQUEST, DT_TIMER_LINGER };

/* nc.shutting: the last response is sent or being sent, input is discarded;
 * nc.since_ms: when the idle timer was set (the eviction order). */
struct dt_hconn {
    dt_net_conn nc; /* first: tcp, timer, peer, closing, shutting, peer_eof */
    dt_http_server *s;
    dt_http_conn parser;
    int timer_kind;
    int completed;    /* a request completed during the last feed */
    int paused;       /* reading stopped: too much unsent */
    char rbuf[DT_HTTP_READ_CHUNK];
};

static uint64_t ms_of(double s) { return s <= 0 ? 1 : (uint64_t)ceil(s * 1000.0); }

/* ---- closing -------------------------------------------------------------- */

static void server_maybe_free(dt_http_server *s)
{
    if (s->closing && !s->listen_open && dt_net_set_count(&s->conns) == 0) {
        if (s->token)
            explicit_bzero(s->token, s->token_len); /* not elided before free */
        free(s->token);
        free(s);
    }
}

static void on_conn_release(dt_net_conn *nc) { dt_http_conn_free(&((dt_hconn *)nc)->parser); }

static void on_conn_gone(dt_net_set *set) { server_maybe_free(set->ud); }

/* Closes now; pending writes are cancelled. */
static void conn_close(dt_hconn *c)
{
    if (c->nc.closing)
        return;
    dt_http_conn_stop(&c->parser);
    dt_net_conn_close(&c->nc);
}

static void on_timer(uv_timer_t *t);

static void timer_set(dt_hconn *c, int kind, double seconds)
{
    DT_ASSERT(kind == DT_TIMER_IDLE || kind == DT_TIMER_REQUEST,
              "timer_set sets the idle or the request timer (conn_finish the linger one)");
    DT_ASSERT(!c->nc.closing && !c->nc.shutting, "only an open connection waits for requests");
    c->timer_kind = kind;
    if (kind == DT_TIMER_IDLE)
        dt_net_conn_mark(&c->nc);
    uv_timer_start(&c->nc.timer, on_timer, ms_of(seconds), 0);
}

/* No more requests: what was written is flushed, then FIN; input is
 * discarded until the peer closes or the linger time ends. */
static void conn_finish(dt_hconn *c)
{
    if (c->nc.closing || c->nc.shutting)
        return;
    dt_http_conn_stop(&c->parser);
    c->timer_kind = DT_TIMER_LINGER;
    dt_net_conn_finish(&c->nc, 1, DT_HTTP_LINGER_S, on_timer);
    DT_ASSERT(c->nc.shutting || c->nc.closing, "a finished connection is shutting down or closed");
}

/* ---- writing ---------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void on_write_done(dt_net_conn *nc, int status)
{
    dt_hconn *c = (dt_hconn *)nc;
    if (c->nc.closing)
        return;
    if (status < 0) { /* the peer went away: nothing more to say to it */
        dt_log_debug("http: write to %s failed: %s", c->nc.peer, uv_strerror(status));
        conn_close(c);
        return;
    }
    if (c->paused && dt_net_conn_unsent(&c->nc) < DT_HTTP_MAX_UNSENT / 2) {
        c->paused = 0;
        if (uv_read_start((uv_stream_t *)&c->nc.tcp, on_alloc, on_read) != 0)
            conn_close(c);
    }
}

/* Sends len bytes of data (taken). */
static void conn_write(dt_hconn *c, char *data, size_t len)
{
    if (dt_net_conn_write(&c->nc, data, len) != 0)
        conn_close(c); /* nothing when it is closing already */
}

static void conn_respond(dt_hconn *c, int status, const char *ctype, const char *body,
                         size_t body_len, int keep_alive, int head, const char *extra)
{
    char *out;
    size_t len;
    dt_err e;
    if (dt_http_format_response(status, ctype, body, body_len, keep_alive, head, extra, &out,
                                &len, &e)) {
        dt_log_error("http: %s", e.msg);
        conn_close(c);
        return;
    }
    conn_write(c, out, len);
}

/* A response made by the server itself: the JSON error body. */
static void conn_error(dt_hconn *c, int status, const char *msg, int keep_alive, int head,
                       const char *extra)
{
    c->s->st.rejected_total++;
    dt_log_info("http: %s: %d %s", c->nc.peer, status, msg);
    size_t blen = 0;
    char *body = dt_http_error_json(status, msg, &blen);
    if (!body) {
        conn_close(c);
        return;
    }
    conn_respond(c, status, NULL, body, blen, keep_alive, head, extra);
    free(body);
}

/* ---- requests ---------------------------------------------------------------- */

static void on_continue(void *ud)
{
    dt_hconn *c = ud;
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    char *d = malloc(sizeof cont - 1);
    if (!d) {
        conn_close(c);
        return;
    }
    memcpy(d, cont, sizeof cont - 1);
    conn_write(c, d, sizeof cont - 1);
}

static void on_request(const dt_http_parsed *r, void *ud)
{
    dt_hconn *c = ud;
    dt_http_server *s = c->s;
    c->completed = 1;
    if (c->nc.closing)
        return;
    int keep = r->keep_alive && !s->closing;
    if (s->token && dt_http_method_mutates(r->req.method) &&
        !dt_http_bearer_ok(r->authorization, s->token, s->token_len)) {
        conn_error(c, 401,
                   r->authorization ? "wrong bearer token"
                                    : "this method needs an Authorization: Bearer token",
                   keep, r->head, "WWW-Authenticate: Bearer realm=\"dtune\"\r\n");
        return;
    }
    dt_http_request req = r->req;
    if (r->head)
        req.method = "GET"; /* HEAD is GET without the body */
    dt_http_response res = {.status = 200, .content_type = NULL, .body = NULL, .body_len = 0};
    s->st.requests_total++;
    if (s->handler) {
        s->handler(&req, &res, s->ud);
    } else {
        res.status = 404;
        res.body = dt_http_error_json(404, "no handler", &res.body_len);
    }
    if (res.status < 200 || res.status > 599) {
        dt_log_error("http: the handler answered %s %s with status %d; sending 500",
                     req.method, req.path, res.status);
        free(res.body);
        res.body = dt_http_error_json(500, "the handler gave an invalid status", &res.body_len);
        res.status = 500;
        res.content_type = NULL;
    }
    if (res.body && res.body_len == 0)
        res.body_len = strlen(res.body);
    conn_respond(c, res.status, res.content_type, res.body, res.body_len, keep, r->head, NULL);
    free(res.body);
    if (!keep)
        dt_http_conn_stop(&c->parser);
}

/* ---- reading ------------------------------------------------------------------ */

static void on_timer(uv_timer_t *t)
{
    dt_hconn *c = t->data;
    if (c->nc.closing)
        return;
    switch (c->timer_kind) {
    case DT_TIMER_REQUEST: {
        char msg[128];
        snprintf(msg, sizeof msg, "the request did not arrive whole within %g s",
                 c->s->lim.request_timeout_s);
        conn_error(c, 408, msg, 0, 0, NULL);
        conn_finish(c);
        break;
    }
    case DT_TIMER_IDLE:
        dt_log_debug("http: %s idle for %g s; closing", c->nc.peer, c->s->lim.idle_timeout_s);
        conn_close(c);
        break;
    default:
        DT_ASSERT(c->timer_kind == DT_TIMER_LINGER,
                  "the timer fires only once set: idle, request or linger");
        conn_close(c);
        break;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    dt_hconn *c = h->data;
    (void)suggested;
    buf->base = c->rbuf;
    buf->len = sizeof c->rbuf;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    dt_hconn *c = st->data;
    if (nread == 0 || c->nc.closing)
        return;
    if (nread < 0) {
        if (nread == UV_EOF && !c->nc.shutting) {
            c->nc.peer_eof = 1;
            dt_http_conn_eof(&c->parser, NULL, NULL);
            conn_finish(c); /* answers already written still reach a half-closed peer */
        } else {
            conn_close(c);
        }
        return;
    }
    if (c->nc.shutting)
        return; /* lingering: input is discarded */
    int status = 0;
    dt_err e;
    dt_err_clear(&e);
    c->completed = 0;
    int rc = dt_http_conn_feed(&c->parser, buf->base, (size_t)nread, &status, &e);
    if (c->nc.closing)
        return;
    if (rc) {
        conn_error(c, status ? status : 400, e.msg, 0, 0, NULL);
        conn_finish(c);
        return;
    }
    if (dt_http_conn_done(&c->parser)) {
        conn_finish(c);
        return;
    }
    if (dt_http_conn_in_request(&c->parser)) {
        if (c->timer_kind != DT_TIMER_REQUEST || c->completed)
            timer_set(c, DT_TIMER_REQUEST, c->s->lim.request_timeout_s);
    } else if (c->completed || c->timer_kind != DT_TIMER_IDLE) {
        timer_set(c, DT_TIMER_IDLE, c->s->lim.idle_timeout_s);
    }
    if (dt_net_conn_unsent(&c->nc) > DT_HTTP_MAX_UNSENT) {
        c->paused = 1;
        uv_read_stop(st);
    }
}

/* ---- accepting ------------------------------------------------------------------ */

/* Accepts and closes at once (over the connection limit). */
static void refuse(dt_http_server *s, uv_stream_t *server)
{
    s->st.refused_total++;
    /* logged once per 100 so that a flood does not flood the log */
    if (dt_net_refuse(server, NULL, 0) == 0 && s->st.refused_total % 100 == 1)
        dt_log_warn("http: refusing a connection: already %d open, none idle for %g s "
                    "(%llu refused so far)",
                    dt_net_set_active(&s->conns), s->lim.evict_idle_s,
                    (unsigned long long)s->st.refused_total);
}

/* Idle: no request in progress (the idle timer runs), nothing being written,
 * reading not paused.  Its mark is when the idle timer was set. */
static int conn_evictable(const dt_net_conn *nc)
{
    const dt_hconn *c = (const dt_hconn *)nc;
    return !c->paused && c->timer_kind == DT_TIMER_IDLE &&
           !dt_http_conn_in_request(&c->parser) && dt_net_conn_unsent(nc) == 0;
}

/* At the limit: closes the connection idle longest if it has been idle for
 * evict_idle_s; 1 when one was closed. */
static int evict_idle(dt_http_server *s)
{
    dt_hconn *victim = (dt_hconn *)dt_net_set_victim(&s->conns, s->lim.evict_idle_s);
    if (!victim)
        return 0;
    s->st.evicted_total++;
    /* logged once per 100 so that a flood does not flood the log */
    dt_log(s->st.evicted_total % 100 == 1 ? DT_LOG_WARN : DT_LOG_DEBUG,
           "http: %d connections open: closing %s, idle for %.1f s, to admit a new one "
           "(%llu closed so far)",
           dt_net_set_active(&s->conns), victim->nc.peer,
           (double)dt_net_conn_waited_ms(&victim->nc) / 1000.0,
           (unsigned long long)s->st.evicted_total);
    conn_close(victim);
    return 1;
}

static void on_connection(uv_stream_t *server, int status)
{
    dt_http_server *s = server->data;
    if (status < 0) {
        dt_log_warn("http: accepting a connection failed: %s", uv_strerror(status));
        return;
    }
    if (!s->closing && dt_net_set_active(&s->conns) >= s->lim.max_connections)
        evict_idle(s);
    if (s->closing || dt_net_set_active(&s->conns) >= s->lim.max_connections) {
        refuse(s, server);
        return;
    }
    dt_hconn *c = (dt_hconn *)dt_net_conn_new(&s->conns);
    if (!c) {
        refuse(s, server);
        return;
    }
    c->s = s;
    dt_http_conn_init(&c->parser, &s->lim, c->nc.peer, on_request, on_continue, c);
    if (dt_net_conn_accept(&c->nc, server) != 0) {
        conn_close(c);
        return;
    }
    s->st.connections_total++;
    timer_set(c, DT_TIMER_IDLE, s->lim.idle_timeout_s);
    if (uv_read_start((uv_stream_t *)&c->nc.tcp, on_alloc, on_read) != 0)
        conn_close(c);
}

/* ---- set-up --------------------------------------------------------------------- */

/* "HOST:PORT" with an IPv4 literal, "localhost" or an IPv6 literal in
 * brackets. */
int dt_http_parse_listen(const char *str, const char *what, struct sockaddr_storage *ss,
                         dt_err *e)
{
#define BAD(...) dt_errf(e, DT_EINVAL, "bad %s address '%s' (expected HOST:PORT)" __VA_ARGS__)
    if (!what)
        what = "listen";
    if (!str)
        str = "";
    const char *colon = strrchr(str, ':');
    if (!colon || colon == str || !colon[1])
        return BAD(, what, str);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || colon[1] < '0' || colon[1] > '9' || port < 0 || port > 65535)
        return BAD(": the port must be a number 0..65535", what, str);
    char host[128];
    size_t hl = (size_t)(colon - str);
    if (hl >= sizeof host)
        return BAD(": the host is too long", what, str);
    memcpy(host, str, hl);
    host[hl] = '\0';
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[' || strchr(host, ']')) {
        if (hl < 3 || host[0] != '[' || host[hl - 1] != ']')
            return BAD(": unbalanced '[' ']'", what, str);
        host[hl - 1] = '\0';
        if (uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)ss) != 0)
            return BAD(": '%s' is not an IPv6 address", what, str, host + 1);
        return 0;
    }
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0)
        return 0;
    return BAD(": '%s' is not an IPv4 address, localhost or [IPv6] (IPv6 goes in brackets)",
               what, str, host);
#undef BAD
}

static void on_listen_closed(uv_handle_t *h)
{
    dt_http_server *s = h->data;
    s->listen_open = 0;
    server_maybe_free(s);
}

static void limits_fill(dt_http_limits *l, const dt_http_limits *in)
{
    dt_http_limits_default(l);
    if (in->max_url)
        l->max_url = in->max_url;
    if (in->max_header_bytes)
        l->max_header_bytes = in->max_header_bytes;
    if (in->max_body)
        l->max_body = in->max_body;
    if (in->max_connections > 0)
        l->max_connections = in->max_connections;
    if (in->idle_timeout_s > 0)
        l->idle_timeout_s = in->idle_timeout_s;
    if (in->request_timeout_s > 0)
        l->request_timeout_s = in->request_timeout_s;
    if (in->evict_idle_s > 0)
        l->evict_idle_s = in->evict_idle_s;
}

int dt_http_server_start(uv_loop_t *loop, const dt_http_server_opts *o, dt_http_server **out,
                         dt_err *e)
{
    *out = NULL;
    /* a write to a client that went away must be an error, not a signal */
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_storage addr;
    int rc = dt_http_parse_listen(o->listen, "listen", &addr, e);
    if (rc)
        return rc;
    /* a token that is set is enforced, whatever its bytes: one that could not
     * be presented is refused here rather than quietly weakened */
    if (o->token && (rc = dt_http_token_check(o->token, o->token_len, "the bearer token", e)))
        return rc;
    dt_http_server *s = calloc(1, sizeof *s);
    if (!s)
        return dt_errf(e, DT_ENOMEM, "out of memory starting the HTTP server");
    s->handler = o->handler;
    s->ud = o->ud;
    limits_fill(&s->lim, &o->limits);
    if (o->token) {
        if (!(s->token = malloc(o->token_len))) {
            free(s);
            return dt_errf(e, DT_ENOMEM, "out of memory starting the HTTP server");
        }
        memcpy(s->token, o->token, o->token_len);
        s->token_len = o->token_len;
    }
    dt_net_ops ops = {.conn_size = sizeof(dt_hconn), .release = on_conn_release,
                      .write_done = on_write_done, .evictable = conn_evictable,
                      .gone = on_conn_gone};
    dt_net_set_init(&s->conns, loop, &ops, s);
    s->listen_open = 1;
    int r = dt_net_listen(loop, &s->tcp, s, (const struct sockaddr *)&addr, on_connection,
                          &s->port);
    if (r) {
        rc = dt_errf(e, DT_EIO, "cannot listen on %s: %s", o->listen, uv_strerror(r));
        s->closing = 1;
        uv_close((uv_handle_t *)&s->tcp, on_listen_closed);
        return rc;
    }
    *out = s;
    return 0;
}

int dt_http_server_port(const dt_http_server *s) { return s->port; }

void dt_http_server_stats_get(const dt_http_server *s, dt_http_stats *st)
{
    *st = s->st;
    st->connections_open = (uint64_t)dt_net_set_count(&s->conns);
}

void dt_http_server_close(dt_http_server *s)
{
    if (!s || s->closing)
        return;
    s->closing = 1;
    uv_close((uv_handle_t *)&s->tcp, on_listen_closed);
    for (dt_net_conn *nc = s->conns.head; nc; nc = nc->next) {
        if (dt_net_conn_unsent(nc) > 0)
            conn_finish((dt_hconn *)nc);
        else
            conn_close((dt_hconn *)nc);
    }
    server_maybe_free(s);
}
