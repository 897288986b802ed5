/* A set of libuv TCP connections: the bookkeeping that the HTTP server
 * (daemon/http.c), `dtune worker` (measure/worker.c) and the client pool
 * (measure/pool.c) share (docs/architecture.md, net/).
 *
 * A connection is one TCP handle and one timer (the user's: time-outs,
 * linger), linked into its set from dt_net_conn_new until both handles have
 * closed.  The set keeps the list and the counts (linked, closing), closes a
 * connection at once (dt_net_conn_close: pending writes are cancelled) or
 * after flushing (dt_net_conn_finish: FIN, then a linger timer), writes
 * buffers it takes over, names peers, and at a connection limit picks the
 * connection to evict: among those the user calls evictable, the one waiting
 * longest since its mark (dt_net_conn_mark; the creation time until then).
 *
 * Embedding: the user's connection struct starts with a dt_net_conn (first
 * member); the set allocates ops.conn_size zeroed bytes.  Both handles'
 * .data point to that dt_net_conn, so a libuv callback on them casts
 * handle->data to the user's struct.
 *
 * Errors: the functions that can fail return 0 or a negative libuv code,
 * not a DT_E* code: this is a thin layer over libuv, and each caller words
 * its own message with uv_strerror (net/ links nothing but libuv).
 *
 * Threads: everything runs on the loop's thread.
 *
 * Ownership: the set owns its connections' memory.  dt_net_conn_new
 * allocates; once both handles of a closed connection have closed, the set
 * unlinks it, calls ops.release (the user frees its own fields), frees it,
 * then calls ops.gone.  The set itself is embedded in its owner, which may
 * free it (from ops.gone, say) once dt_net_set_count is 0.  The fields of
 * both structs are for reading; change them only through these functions
 * (peer_eof excepted). */
#ifndef DT_NET_CONN_H
#define DT_NET_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct dt_net_set dt_net_set;
typedef struct dt_net_conn dt_net_conn;

typedef struct dt_net_ops {
    size_t conn_size; /* of the user's struct, which starts with a dt_net_conn */
    /* May be NULL.  Frees the user's fields of c: c is unlinked, its
     * handles are closed, and its memory is freed right after. */
    void (*release)(dt_net_conn *c);
    /* May be NULL.  After each write of dt_net_conn_write completed (status
     * 0) or failed (negative uv code; UV_ECANCELED when c was closed with the
     * write pending); the buffer is already freed. */
    void (*write_done)(dt_net_conn *c, int status);
    /* May be NULL (no connection is evictable).  Whether c may be closed to
     * admit a new connection (dt_net_set_victim); closing and finishing
     * connections are never asked. */
    int (*evictable)(const dt_net_conn *c);
    /* May be NULL.  After a connection was released and freed, last thing;
     * the set's owner may free the set here. */
    void (*gone)(dt_net_set *s);
} dt_net_ops;

struct dt_net_conn {
    uv_tcp_t tcp;              /* .data = this */
    uv_timer_t timer;          /* .data = this; started and stopped by the user */
    dt_net_set *set;
    dt_net_conn *prev, *next;  /* the set's list, newest first */
    uint64_t id;               /* 1, 2, ... in the order of creation, per set */
    uint64_t since_ms;         /* loop time of creation or of the last dt_net_conn_mark */
    char peer[96];             /* "1.2.3.4:5678", "[::1]:5678"; "?" until accepted */
    int closing;               /* dt_net_conn_close was called */
    int shutting;              /* dt_net_conn_finish was called */
    int drain;                 /* finishing: input is still read (and discarded) */
    int peer_eof;              /* set by the user when the peer ended its side */
    int open_handles;          /* of tcp and timer, not closed yet */
};

struct dt_net_set {
    uv_loop_t *loop;
    dt_net_ops ops;
    void *ud;                  /* the owner's, for its callbacks */
    dt_net_conn *head;         /* newest first */
    int count;                 /* linked: open or closing */
    int nclosing;              /* of count, the closing ones */
    uint64_t next_id;
};

void dt_net_set_init(dt_net_set *s, uv_loop_t *loop, const dt_net_ops *ops, void *ud);
/* Connections linked: open or closing (their handles not closed yet). */
int dt_net_set_count(const dt_net_set *s);
/* Connections not closing: what counts against a connection limit. */
int dt_net_set_active(const dt_net_set *s);
/* Among the open connections (not closing, not finishing) that ops.evictable
 * accepts and that have waited at least min_wait_s since their mark, the one
 * waiting longest (on a tie, the newer); NULL when none.  Nothing is closed:
 * the caller logs and closes it. */
dt_net_conn *dt_net_set_victim(dt_net_set *s, double min_wait_s);

/* A new connection in s: ops.conn_size zeroed bytes, tcp and timer
 * initialised on the set's loop, linked, id assigned, marked now, peer "?".
 * NULL when out of memory (nothing is linked then).  Connect it
 * (uv_tcp_connect on &c->tcp) or accept into it (dt_net_conn_accept);
 * either way it is closed with dt_net_conn_close. */
dt_net_conn *dt_net_conn_new(dt_net_set *s);
/* Accepts server's pending connection into c, names the peer and sets
 * TCP_NODELAY.  0, or the negative uv code of uv_accept (c stays linked:
 * close it). */
int dt_net_conn_accept(dt_net_conn *c, uv_stream_t *server);
/* Closes c now: both handles are closed and pending writes cancelled; the
 * set releases it once they have closed.  1 when this call started the
 * close, 0 when c was already closing. */
int dt_net_conn_close(dt_net_conn *c);
/* Ends c gracefully: what was written is flushed, then the write side is
 * shut down (FIN).  With drain, input is still read (the user discards it)
 * and c closes once the shutdown is done and the peer has ended its side
 * (peer_eof); without, reading stops and c closes once the shutdown is
 * done.  The timer is started with on_linger after linger_s, which should
 * close c (a peer that takes neither the data nor its end).  A failed
 * shutdown closes c at once.  No-op when closing or finishing already. */
void dt_net_conn_finish(dt_net_conn *c, int drain, double linger_s, uv_timer_cb on_linger);
/* Sends len bytes of data and takes data (malloc'ed) in every case.  0, or
 * a negative uv code (UV_ENOMEM, uv_write's, UV_ECANCELED when c is
 * closing): nothing was queued, and ops.write_done is not called for it. */
int dt_net_conn_write(dt_net_conn *c, void *data, size_t len);
/* Bytes written but not yet taken by the kernel. */
size_t dt_net_conn_unsent(const dt_net_conn *c);
/* Sets since_ms to the loop's now (for dt_net_set_victim). */
void dt_net_conn_mark(dt_net_conn *c);
/* Milliseconds since c's mark (loop time). */
uint64_t dt_net_conn_waited_ms(const dt_net_conn *c);

/* Accepts server's pending connection and closes it at once (a connection
 * limit, a shutdown).  0 when one was accepted, with its address in peer
 * (when not NULL; "?" if unknown); else a negative uv code. */
int dt_net_refuse(uv_stream_t *server, char *peer, size_t n);

#endif
