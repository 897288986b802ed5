/* A set of libuv TCP connections (net/conn.h): the list, the counts, the
 * close and finish paths, writes, and the choice of a connection to evict. */
#include "net/conn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "net/addr.h"

typedef struct {
    uv_write_t req; /* first */
    void *data;
} dt_net_write;

static uint64_t ms_of(double s) { return s > 0 ? (uint64_t)ceil(s * 1000.0) : 0; }

/* ---- the set -------------------------------------------------------------- */

void dt_net_set_init(dt_net_set *s, uv_loop_t *loop, const dt_net_ops *ops, void *ud)
{
    *s = (dt_net_set){.loop = loop, .ops = *ops, .ud = ud};
    if (s->ops.conn_size < sizeof(dt_net_conn))
        s->ops.conn_size = sizeof(dt_net_conn);
}

int dt_net_set_count(const dt_net_set *s) { return s->count; }

int dt_net_set_active(const dt_net_set *s)
{
    DT_ASSERT(0 <= s->nclosing && s->nclosing <= s->count,
              "the closing connections are some of the set's connections");
    return s->count - s->nclosing;
}

dt_net_conn *dt_net_set_victim(dt_net_set *s, double min_wait_s)
{
    if (!s->ops.evictable)
        return NULL;
    uint64_t now = uv_now(s->loop), grace = ms_of(min_wait_s);
    dt_net_conn *victim = NULL;
    for (dt_net_conn *c = s->head; c; c = c->next) {
        DT_ASSERT(c->set == s, "a connection on a set's list belongs to that set");
        if (c->closing || c->shutting || now - c->since_ms < grace || !s->ops.evictable(c))
            continue;
        if (!victim || c->since_ms < victim->since_ms)
            victim = c;
    }
    return victim;
}

/* ---- one connection --------------------------------------------------------- */

dt_net_conn *dt_net_conn_new(dt_net_set *s)
{
    dt_net_conn *c = calloc(1, s->ops.conn_size);
    if (!c)
        return NULL;
    c->set = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    c->id = ++s->next_id;
    c->since_ms = uv_now(s->loop);
    snprintf(c->peer, sizeof c->peer, "?");
    c->next = s->head;
    if (s->head)
        s->head->prev = c;
    s->head = c;
    s->count++;
    DT_ASSERT(s->count >= 1 && !c->prev, "a new connection heads a non-empty list");
    return c;
}

int dt_net_conn_accept(dt_net_conn *c, uv_stream_t *server)
{
    int r = uv_accept(server, (uv_stream_t *)&c->tcp);
    if (r)
        return r;
    dt_net_peer_name(&c->tcp, c->peer, sizeof c->peer);
    uv_tcp_nodelay(&c->tcp, 1);
    return 0;
}

static void on_handle_closed(uv_handle_t *h)
{
    dt_net_conn *c = h->data;
    DT_ASSERT(c->closing && c->open_handles >= 1,
              "a handle closes only on a closing connection with handles still open");
    if (--c->open_handles > 0)
        return;
    dt_net_set *s = c->set;
    DT_ASSERT(s->count >= 1 && s->nclosing >= 1,
              "a connection that finishes closing is counted, and counted as closing");
    DT_ASSERT(c->prev ? c->prev->next == c : s->head == c,
              "a connection is linked from its predecessor, or is the head");
    if (c->prev)
        c->prev->next = c->next;
    else
        s->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->count--;
    s->nclosing--;
    if (s->ops.release)
        s->ops.release(c);
    free(c);
    if (s->ops.gone)
        s->ops.gone(s); /* last: it may free s */
}

int dt_net_conn_close(dt_net_conn *c)
{
    if (c->closing)
        return 0;
    c->closing = 1;
    c->set->nclosing++;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    return 1;
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    dt_net_conn *c = req->handle->data;
    free(req);
    /* a drained connection waits for the peer's end (or the linger timer) */
    if (status < 0 || !c->drain || c->peer_eof)
        dt_net_conn_close(c);
}

void dt_net_conn_finish(dt_net_conn *c, int drain, double linger_s, uv_timer_cb on_linger)
{
    if (c->closing || c->shutting)
        return;
    DT_ASSERT(!c->closing, "a connection finishes gracefully only before it closes");
    c->shutting = 1;
    c->drain = drain;
    if (!drain)
        uv_read_stop((uv_stream_t *)&c->tcp);
    uv_shutdown_t *req = malloc(sizeof *req);
    if (!req || uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        free(req);
        dt_net_conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_linger, ms_of(linger_s), 0);
}

static void on_write(uv_write_t *req, int status)
{
    dt_net_write *w = (dt_net_write *)req;
    dt_net_conn *c = req->handle->data;
    free(w->data);
    free(w);
    if (c->set->ops.write_done)
        c->set->ops.write_done(c, status);
}

int dt_net_conn_write(dt_net_conn *c, void *data, size_t len)
{
    if (c->closing) {
        free(data);
        return UV_ECANCELED;
    }
    dt_net_write *w = malloc(sizeof *w);
    if (!w) {
        free(data);
        return UV_ENOMEM;
    }
    w->data = data;
    uv_buf_t b = uv_buf_init(data, (unsigned)len);
    int r = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (r) {
        free(data);
        free(w);
    }
    return r;
}

size_t dt_net_conn_unsent(const dt_net_conn *c)
{
    return uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp);
}

void dt_net_conn_mark(dt_net_conn *c) { c->since_ms = uv_now(c->set->loop); }

uint64_t dt_net_conn_waited_ms(const dt_net_conn *c)
{
    return uv_now(c->set->loop) - c->since_ms;
}

/* ---- refusing ----------------------------------------------------------------- */

static void free_handle(uv_handle_t *h) { free(h); }

int dt_net_refuse(uv_stream_t *server, char *peer, size_t n)
{
    if (peer && n)
        snprintf(peer, n, "?");
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t)
        return UV_ENOMEM;
    uv_tcp_init(server->loop, t);
    int r = uv_accept(server, (uv_stream_t *)t);
    if (r == 0 && peer && n)
        dt_net_peer_name(t, peer, n);
    uv_close((uv_handle_t *)t, free_handle);
    return r;
}
