/* The client pool's private parts (measure/pool.h is its interface), shared
 * by its three files and by nothing else:
 *
 *   pool.c        the API (open, submit, drain, cancel, close) and the loop
 *                 thread (its wake-up, its shutdown);
 *   pool_conn.c   a worker's connection: resolving, connecting, the
 *                 HELLO/AUTH handshake, framing, reading and writing,
 *                 liveness (PING, silence, handshake time-out), failure and
 *                 back-off;
 *   pool_sched.c  the batches: queueing, assigning to live workers (split
 *                 to a worker's max_batch), per-batch deadlines, a lost
 *                 batch requeued once, RESULT frames checked and delivered
 *                 exactly once, cancelling.
 *
 * Everything here is touched by the loop thread only, except the `shared`
 * part of struct dt_pool (under its mutex; see pool.c). */
#ifndef DT_MEASURE_POOL_INTERNAL_H
#define DT_MEASURE_POOL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "measure/pool.h"
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

/* ---- the batch lists (loop thread, or p->incoming under p->mu) ------------- */

static inline void pool_list_push_back(pblist *l, pbatch *b)
{
    b->next = NULL;
    b->prev = l->tail;
    if (l->tail)
        l->tail->next = b;
    else
        l->head = b;
    l->tail = b;
}

static inline void pool_list_push_front(pblist *l, pbatch *b)
{
    b->prev = NULL;
    b->next = l->head;
    if (l->head)
        l->head->prev = b;
    else
        l->tail = b;
    l->head = b;
}

static inline void pool_list_insert_after(pblist *l, pbatch *at, pbatch *b)
{
    b->prev = at;
    b->next = at->next;
    if (at->next)
        at->next->prev = b;
    else
        l->tail = b;
    at->next = b;
}

static inline void pool_list_remove(pblist *l, pbatch *b)
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

/* ---- pool_conn.c ------------------------------------------------------------- */

/* Starts resolving and connecting w (from W_IDLE). */
void dt_pool_worker_connect(pworker *w);
/* The connection of w failed (or w is refused for good when permanent): its
 * batches in flight are requeued once (dt_pool_batch_lost), w reconnects
 * after its back-off, the queue is pumped. */
void dt_pool_worker_fail(pworker *w, int permanent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends one frame; steals payload.  On failure the worker has failed. */
int dt_pool_conn_send(pconn *c, dt_msg_type type, json_t *payload);
/* Detaches c from its worker and closes it (no requeue: callers do that). */
void dt_pool_conn_close(pconn *c);
/* The connection set's hooks (dt_net_ops). */
void dt_pool_conn_release(dt_net_conn *nc);
void dt_pool_write_done(dt_net_conn *nc, int status);

/* ---- pool_sched.c ------------------------------------------------------------ */

/* Moves the batches of `in` to the end of the queue. */
void dt_pool_queue_incoming(dt_pool *p, pblist *in);
/* Sends queued batches to live workers with room, round robin. */
void dt_pool_pump(dt_pool *p);
/* pb's attempt on its connection failed: requeued once, else worker_lost. */
void dt_pool_batch_lost(dt_pool *p, pbatch *pb, pworker *w, const char *why);
/* A RESULT frame from the live worker of c. */
void dt_pool_on_result(pconn *c, const json_t *pl);
/* Abandons every queued and in-flight batch (dt_pool_cancel). */
void dt_pool_cancel_all(dt_pool *p);
/* Frees a batch that is on no list and has no timer yet. */
void dt_pool_batch_free(pbatch *pb);
/* Releases a batch that left every list (its timer first, if it has one). */
void dt_pool_batch_release(pbatch *pb);

#endif
