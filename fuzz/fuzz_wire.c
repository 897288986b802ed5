/* libFuzzer target: the worker wire (measure/wire.h) and what is parsed
 * from it, without sockets.
 *
 * The input is a byte stream.  Its first byte picks a chunk size (1..64):
 * the stream is fed to one decoder all at once and to another in chunks of
 * that size, taking frames after every feed.  Invariants:
 *   - both decoders fail (or not) alike, and the frames taken from the
 *     whole stream are a prefix of those taken chunk by chunk (all of them
 *     when nothing failed): how bytes arrive never changes what is decoded
 *     (a bad header refuses the whole stream at once, while a chunked feed
 *     may have taken the frames before it);
 *   - a frame has a known type and an object payload; re-encoding it gives
 *     a frame that decodes to an equal payload;
 *   - a failed decoder refuses every later feed and take.
 * Each payload also goes through the parsers the pool and the worker use:
 * the pool's HELLO check (dt_pool_hello_check), a BATCH's "batch"
 * (dt_batch_from_json: a batch that parses must survive to_json/from_json
 * with the same trials), a RESULT's "results" (dt_trial_result_from_json:
 * an ok result has finite 0 <= min <= median, a failed one an error; the
 * impossible-time check runs on it against the parsed batch or a fixed
 * workload and must never accept a non-positive or non-finite time). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "measure/pool.h"
#include "measure/trial.h"
#include "measure/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

#define MAX_FRAMES 64

typedef struct {
    int n, failed;
    dt_msg_type type[MAX_FRAMES];
    json_t *payload[MAX_FRAMES];
} frames;

static void frames_free(frames *f)
{
    for (int i = 0; i < f->n; i++)
        json_decref(f->payload[i]);
}

/* Takes every complete frame out of d into f. */
static void take_all(dt_wire_decoder *d, frames *f)
{
    for (;;) {
        dt_msg_type t;
        json_t *p = NULL;
        dt_err e;
        int rc = dt_wire_next(d, &t, &p, &e);
        if (rc == 0)
            return;
        if (rc < 0) {
            check(p == NULL && d->failed);
            f->failed = 1;
            return;
        }
        check(rc == 1 && json_is_object(p) && t >= DT_MSG_HELLO && t <= DT_MSG_PONG);
        if (f->n < MAX_FRAMES) {
            f->type[f->n] = t;
            f->payload[f->n++] = p;
        } else {
            json_decref(p);
        }
    }
}

static void feed(dt_wire_decoder *d, frames *f, const uint8_t *p, size_t n)
{
    if (f->failed)
        return;
    dt_err e;
    if (dt_wire_feed(d, p, n, &e) != 0) {
        check(d->failed);
        f->failed = 1;
        return;
    }
    take_all(d, f);
}

static void check_result(const json_t *jr, const dt_workload *w, const dt_trial *t)
{
    dt_trial_result r;
    dt_err e;
    if (dt_trial_result_from_json(jr, &r, &e) != 0)
        return;
    if (r.status == DT_TRIAL_OK) {
        check(isfinite(r.min_ns) && isfinite(r.median_ns) && r.min_ns >= 0 &&
              r.min_ns <= r.median_ns && r.repeats >= 1 && !r.error);
    } else {
        check(r.error && r.error[0]);
    }
    char why[256];
    int ok = dt_trial_result_possible(w, t, &r, 2, why, sizeof why);
    if (r.status == DT_TRIAL_OK && ok)
        check(r.min_ns > 0 && r.min_ns >= dt_trial_min_possible_ns(
                                               w->op->flops(t->dims, w->attrs), w->dtype,
                                               t->threads > 2 ? t->threads : 2));
    json_t *back = dt_trial_result_to_json(&r);
    dt_trial_result r2;
    check(back && dt_trial_result_from_json(back, &r2, &e) == 0);
    check(r2.status == r.status && !strcmp(r2.uid, r.uid));
    json_decref(back);
    dt_trial_result_free(&r2);
    dt_trial_result_free(&r);
}

static dt_workload *g_w;
static dt_trial g_t;

static void check_payload(dt_msg_type type, const json_t *p)
{
    dt_err e;
    if (type == DT_MSG_HELLO) {
        dt_pool_hello h;
        if (dt_pool_hello_check(p, "fuzz:1", NULL, &h, &e) == 0)
            check(strlen(h.nonce) == 64 && h.max_batch >= 1 &&
                  h.max_batch <= DT_BATCH_MAX_TRIALS);
    }
    if (type == DT_MSG_BATCH) {
        dt_batch b;
        if (dt_batch_from_json(json_object_get(p, "batch"), &b, &e) == 0) {
            check(b.ntrials >= 1 && b.ntrials <= DT_BATCH_MAX_TRIALS && b.source);
            json_t *j = dt_batch_to_json(&b);
            dt_batch b2;
            check(j && dt_batch_from_json(j, &b2, &e) == 0);
            check(b2.ntrials == b.ntrials && !strcmp(b2.workload, b.workload));
            for (int i = 0; i < b.ntrials; i++)
                check(!strcmp(b.trials[i].uid, b2.trials[i].uid) &&
                      !strcmp(b.trials[i].shape, b2.trials[i].shape));
            dt_workload *w = NULL;
            if (dt_workload_parse_key(b.workload, &w, &e) == 0) {
                check(dt_batch_deadline_s(&b) >= DT_BATCH_DEADLINE_FLOOR_S);
                dt_workload_free(w);
            }
            json_decref(j);
            dt_batch_free(&b2);
            dt_batch_free(&b);
        }
    }
    if (type == DT_MSG_RESULT) {
        const json_t *arr = json_object_get(p, "results");
        for (size_t i = 0; i < json_array_size(arr) && i < 64; i++)
            check_result(json_array_get(arr, i), g_w, &g_t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_w) {
        dt_err e;
        check(dt_workload_parse_key("dense(M=1..64,N=48,K=40)", &g_w, &e) == 0);
        check(dt_trial_init(&g_t, g_w, "M=7", 1, &e) == 0);
    }
    if (size < 1)
        return 0;
    size_t chunk = 1 + data[0] % 64;
    data++;
    size--;

    dt_wire_decoder whole, part;
    dt_wire_decoder_init(&whole);
    dt_wire_decoder_init(&part);
    frames fw = {0}, fp = {0};
    feed(&whole, &fw, data, size);
    for (size_t off = 0; off < size; off += chunk)
        feed(&part, &fp, data + off, size - off < chunk ? size - off : chunk);

    check(fw.failed == fp.failed && fw.n <= fp.n && (fw.failed || fw.n == fp.n));
    for (int i = 0; i < fp.n; i++) {
        if (i < fw.n)
            check(fw.type[i] == fp.type[i] && json_equal(fw.payload[i], fp.payload[i]));
        uint8_t *buf;
        size_t len;
        dt_err e;
        check(dt_wire_encode(fp.type[i], fp.payload[i], &buf, &len, &e) == 0);
        dt_wire_decoder again;
        dt_wire_decoder_init(&again);
        check(dt_wire_feed(&again, buf, len, &e) == 0);
        dt_msg_type t;
        json_t *p = NULL;
        check(dt_wire_next(&again, &t, &p, &e) == 1 && t == fp.type[i] &&
              json_equal(p, fp.payload[i]));
        json_decref(p);
        check(dt_wire_next(&again, &t, &p, &e) == 0 && again.len == 0);
        dt_wire_decoder_free(&again);
        free(buf);
        check_payload(fp.type[i], fp.payload[i]);
    }
    if (fw.failed) {
        dt_err e;
        uint8_t z = 0;
        check(dt_wire_feed(&whole, &z, 1, &e) != 0);
    }
    frames_free(&fw);
    frames_free(&fp);
    dt_wire_decoder_free(&whole);
    dt_wire_decoder_free(&part);
    return 0;
}
