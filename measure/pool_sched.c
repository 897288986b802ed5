/* The client pool's scheduling (measure/pool_internal.h): a batch is either
 * queued (p->queue), in flight on exactly one connection (p->flight,
 * pb->conn) or finished.  Queued batches go to live workers with room,
 * round robin, split to a worker's max_batch; each attempt has its deadline
 * and a fresh wire id; a batch lost on its connection is requeued once (at
 * the front, avoiding the worker it was lost on while another is live),
 * then its trials are worker_lost; a RESULT is accepted only for a batch in
 * flight on the connection it came on, its times checked
 * (dt_trial_result_possible), and every trial delivered exactly once. */
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

void dt_pool_batch_free(pbatch *pb)
{
    free(pb->b.source);
    free(pb->b.trials);
    free(pb);
}

static void pbatch_timer_closed(uv_handle_t *h) { dt_pool_batch_free(h->data); }

/* Releases a batch that left both lists (its timer first, if it has one). */
void dt_pool_batch_release(pbatch *pb)
{
    if (pb->timer_init) {
        uv_timer_stop(&pb->deadline);
        uv_close((uv_handle_t *)&pb->deadline, pbatch_timer_closed);
    } else {
        dt_pool_batch_free(pb);
    }
}

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
void dt_pool_batch_lost(dt_pool *p, pbatch *pb, pworker *w, const char *why)
{
    DT_ASSERT(pb->st == PB_FLIGHT && pb->losses <= 1, "a batch is lost only in flight, at most twice");
    uv_timer_stop(&pb->deadline);
    pool_list_remove(&p->flight, pb);
    pb->conn = NULL;
    pb->w = NULL;
    if (pb->losses == 0) {
        pb->losses = 1;
        pb->lost_on = w;
        snprintf(pb->lost_why, sizeof pb->lost_why, "%s", why);
        pb->st = PB_QUEUED;
        pool_list_push_front(&p->queue, pb); /* a requeued batch goes first */
        dt_log_info("pool: requeued a batch of %d trial(s) lost on %s", pb->b.ntrials, why);
        return;
    }
    deliver_lost(p, pb, why);
    dt_pool_batch_release(pb);
}

/* ---- queueing --------------------------------------------------------------- */

/* Newly submitted batches (taken from p->incoming under p->mu) join the
 * end of the queue, each with its deadline timer. */
void dt_pool_queue_incoming(dt_pool *p, pblist *in)
{
    while (in->head) {
        pbatch *pb = in->head;
        pool_list_remove(in, pb);
        DT_ASSERT(pb->st == PB_NEW && !pb->timer_init, "a submitted batch is new, without a timer");
        uv_timer_init(&p->loop, &pb->deadline);
        pb->deadline.data = pb;
        pb->timer_init = 1;
        pb->st = PB_QUEUED;
        pool_list_push_back(&p->queue, pb);
    }
}

/* ---- sending batches ------------------------------------------------------- */

/* Splits pb so that it has at most n trials; the rest follows it in the queue. */
static int batch_split(dt_pool *p, pbatch *pb, int n)
{
    DT_ASSERT(n >= 1 && n < pb->b.ntrials, "a batch is split into two non-empty parts");
    pbatch *tail = calloc(1, sizeof *tail);
    if (!tail)
        return DT_ENOMEM;
    tail->p = p;
    tail->b = pb->b;
    tail->b.ntrials = pb->b.ntrials - n;
    tail->b.source = strdup(pb->b.source);
    tail->b.trials = malloc((size_t)tail->b.ntrials * sizeof *tail->b.trials);
    if (!tail->b.source || !tail->b.trials) {
        dt_pool_batch_free(tail);
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
    pool_list_insert_after(&p->queue, pb, tail);
    return 0;
}

static void deadline_fired(uv_timer_t *t)
{
    pbatch *pb = t->data;
    if (pb->st != PB_FLIGHT || !pb->w)
        return;
    pworker *w = pb->w;
    dt_pool_worker_fail(w, 0, "no answer to a batch of %d trial(s) within its %g s deadline",
                pb->b.ntrials, pb->deadline_s);
}

static void send_batch(dt_pool *p, pworker *w, pbatch *pb)
{
    if (w->max_batch > 0 && pb->b.ntrials > w->max_batch &&
        batch_split(p, pb, w->max_batch) != 0) {
        dt_log_error("pool: out of memory splitting a batch");
        return;
    }
    DT_ASSERT(pb->st == PB_QUEUED && w->st == W_LIVE && w->c,
              "a queued batch goes only to a live worker's connection");
    pool_list_remove(&p->queue, pb);
    pb->st = PB_FLIGHT;
    pb->conn = w->c;
    pb->w = w;
    pb->wire_id = ++p->next_wire_id;
    pool_list_push_back(&p->flight, pb);
    w->inflight++;
    DT_ASSERT(w->inflight <= p->inflight, "a worker has at most `inflight` batches out");
    pb->deadline_s = p->deadline_s > 0 ? p->deadline_s : dt_batch_deadline_s(&pb->b);
    uv_timer_start(&pb->deadline, deadline_fired, (uint64_t)(pb->deadline_s * 1000.0), 0);

    json_t *jb = dt_batch_to_json(&pb->b);
    json_t *msg = json_object();
    json_object_set_new(msg, "id", json_integer((json_int_t)pb->wire_id));
    json_object_set_new(msg, "batch", jb ? jb : json_null());
    dt_log_debug("pool: batch %" PRIu64 " (%d trials) -> %s", pb->wire_id, pb->b.ntrials,
                 w->addr);
    dt_pool_conn_send(w->c, DT_MSG_BATCH, msg); /* a failure requeues pb */
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

void dt_pool_pump(dt_pool *p)
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

/* ---- results ------------------------------------------------------------------ */

static int trial_index(const dt_batch *b, const char *uid, int guess)
{
    if (guess < b->ntrials && strcmp(b->trials[guess].uid, uid) == 0)
        return guess;
    for (int i = 0; i < b->ntrials; i++)
        if (strcmp(b->trials[i].uid, uid) == 0)
            return i;
    return -1;
}

void dt_pool_on_result(pconn *c, const json_t *pl)
{
    pworker *w = c->w;
    dt_pool *p = c->p;
    json_t *jid = json_object_get(pl, "id");
    if (!json_is_integer(jid)) {
        dt_pool_worker_fail(w, 0, "RESULT without an integer id");
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
        dt_pool_worker_fail(w, 0, "RESULT for batch %" PRIu64 " has %zu results for %d trials", id,
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
        dt_pool_worker_fail(w, 0, "malformed RESULT for batch %" PRIu64 ": %s", id, bad);
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
    DT_ASSERT(pb->st == PB_FLIGHT && pb->w == w && w->inflight >= 1,
              "an accepted RESULT answers a batch in flight on its worker");
    uv_timer_stop(&pb->deadline);
    pool_list_remove(&p->flight, pb);
    w->inflight--;
    dt_log_debug("pool: batch %" PRIu64 " answered by %s", id, w->addr);
    /* the next batch goes out before the callbacks run */
    dt_pool_pump(p);
    for (int k = 0; k < n; k++)
        p->on_result(&res[slot[k]], p->ud);
    count_delivered(p, n);
    for (int i = 0; i < n; i++)
        dt_trial_result_free(&res[i]);
    free(res);
    free(slot);
    free(seen);
    dt_pool_batch_release(pb);
}

/* Abandons every queued and in-flight batch (dt_pool_cancel): their
 * trials count as delivered without a callback; a late RESULT for one is
 * dropped (its id is no longer in flight). */
void dt_pool_cancel_all(dt_pool *p)
{
    int64_t n = 0;
    pblist *lists[] = {&p->queue, &p->flight};
    for (int l = 0; l < 2; l++)
        while (lists[l]->head) {
            pbatch *pb = lists[l]->head;
            pool_list_remove(lists[l], pb);
            if (pb->st == PB_FLIGHT && pb->w && pb->w->inflight > 0)
                pb->w->inflight--;
            n += pb->b.ntrials;
            dt_pool_batch_release(pb);
        }
    if (n)
        dt_log_info("pool: %lld trial(s) abandoned unanswered", (long long)n);
    count_delivered(p, (int)n);
}
