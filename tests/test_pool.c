/* The worker pool (measure/pool.h) and `dtune measure`, with real sockets on
 * loopback:
 *   - fake workers in this process (a thread speaking the wire protocol)
 *     that answer twice, close on every batch or never answer: each trial
 *     still reaches on_result exactly once;
 *   - the measurement session (tuner/measurer.h) on fake workers: batches
 *     split by the pool and answered twice, each trial recorded once; an ok
 *     without a time recorded as a worker fault (worker_lost);
 *   - fake workers that lie (ok in 1e-12 or 1e-300 ns: worker faults naming
 *     the worker and the value), send a HELLO without "version" (refused),
 *     or go silent once live (dropped within DTUNE_POOL_SILENT_S);
 *   - two real `dtune worker` processes: measure several batches, SIGKILL
 *     one worker while its batch is in flight, every trial delivered and
 *     recorded once; a job for another target and a wrong token refused
 *     with clear messages; nothing reachable fails within the timeout;
 *   - `dtune measure` end to end, locally and with --workers. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/target.h"
#include "common/clock.h"
#include "db/db.h"
#include "measure/pool.h"
#include "measure/trial.h"
#include "measure/wire.h"
#include "microkernel/codegen.h"
#include "space/annotation.h"
#include "shape/workload.h"
#include "tests/dt_test.h"
#include "tests/dt_test_wire.h"
#include "tuner/measurer.h"

#define TOKEN "pool-test-token-0123456789abcdef"
#define WORKLOAD "dense(M=1..64,N=48,K=40)"

static char *g_dir;        /* private temporary directory */
static char *g_token_file; /* holds TOKEN, mode 600 */
static char g_target_key[DT_TARGET_KEY_MAX];
static dt_target g_target;

/* ---- result bookkeeping ---------------------------------------------------- */

#define MAX_TRIALS 256

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;                                  /* trials submitted */
    char uid[MAX_TRIALS][DT_TRIAL_UID_LEN + 1];
    char shape[MAX_TRIALS][128];
    int64_t kernel_id[MAX_TRIALS];
    int count[MAX_TRIALS];                  /* callbacks per trial */
    dt_trial_status status[MAX_TRIALS];
    char error[MAX_TRIALS][200];
    int callbacks, unknown;
    dt_db *db;                              /* when set, every result is inserted */
    int64_t target_id, workload_id;
    int db_errors;
} tally;

static void tally_init(tally *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
}

static void tally_free(tally *t)
{
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

static void tally_add(tally *t, const dt_batch *b, int64_t kernel_id)
{
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < b->ntrials && t->n < MAX_TRIALS; i++) {
        memcpy(t->uid[t->n], b->trials[i].uid, sizeof t->uid[0]);
        memcpy(t->shape[t->n], b->trials[i].shape, sizeof t->shape[0]);
        t->kernel_id[t->n] = kernel_id;
        t->n++;
    }
    pthread_mutex_unlock(&t->mu);
}

static void on_result(const dt_trial_result *r, void *ud)
{
    tally *t = ud;
    pthread_mutex_lock(&t->mu);
    t->callbacks++;
    int k = -1;
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->uid[i], r->uid) == 0)
            k = i;
    if (k < 0) {
        t->unknown++;
    } else {
        t->count[k]++;
        t->status[k] = r->status;
        snprintf(t->error[k], sizeof t->error[k], "%s", r->error ? r->error : "");
        if (t->db) {
            int ok = r->status == DT_TRIAL_OK;
            dt_db_measurement m = {.kernel_id = t->kernel_id[k],
                                   .target_id = t->target_id,
                                   .workload_id = t->workload_id,
                                   .shape = t->shape[k],
                                   .threads = 1,
                                   .status = r->status,
                                   .min_ns = ok ? r->min_ns : NAN,
                                   .median_ns = ok ? r->median_ns : NAN,
                                   .error = r->error,
                                   .trial_uid = r->uid};
            dt_err e;
            if (dt_db_measurement_insert(t->db, &m, NULL, NULL, &e) != 0) {
                fprintf(stderr, "\n  insert: %s\n", e.msg);
                t->db_errors++;
            }
        }
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Every submitted trial exactly once, nothing else. */
static void check_exactly_once(tally *t)
{
    pthread_mutex_lock(&t->mu);
    CU_ASSERT_EQUAL(t->callbacks, t->n);
    CU_ASSERT_EQUAL(t->unknown, 0);
    for (int i = 0; i < t->n; i++) {
        if (t->count[i] != 1)
            fprintf(stderr, "\n  trial %s delivered %d times\n", t->uid[i], t->count[i]);
        CU_ASSERT_EQUAL(t->count[i], 1);
    }
    pthread_mutex_unlock(&t->mu);
}

static int count_status(tally *t, dt_trial_status s)
{
    int n = 0;
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < t->n; i++)
        n += t->count[i] && t->status[i] == s;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* ---- batches --------------------------------------------------------------- */

/* A batch of a sampled valid kernel of WORKLOAD on the given M values. */
static void make_batch(const dt_workload *w, dt_rng *rng, const int *ms, int n, double min_time,
                       dt_batch *b, dt_annotation *ann)
{
    dt_err e;
    memset(b, 0, sizeof *b);
    CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(rng, &g_target, -1, 1, ann, &e), 0);
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    CU_ASSERT_EQUAL_FATAL(dt_codegen(&kop, ann, &b->source, &e), 0);
    dt_workload_key(w, b->workload, sizeof b->workload);
    dt_timing_default(&b->timing);
    b->timing.min_time_s = min_time;
    b->timing.seed = 7;
    b->ntrials = n;
    b->trials = calloc((size_t)n, sizeof *b->trials);
    for (int i = 0; i < n; i++) {
        char shape[32];
        snprintf(shape, sizeof shape, "M=%d", ms[i]);
        CU_ASSERT_EQUAL_FATAL(dt_trial_init(&b->trials[i], w, shape, 1, &e), 0);
    }
}

/* A batch for fake workers: any source, n trials. */
static void fake_batch(const dt_workload *w, int n, dt_batch *b)
{
    dt_err e;
    memset(b, 0, sizeof *b);
    b->source = strdup("/* not compiled by fake workers */");
    dt_workload_key(w, b->workload, sizeof b->workload);
    dt_timing_default(&b->timing);
    b->ntrials = n;
    b->trials = calloc((size_t)n, sizeof *b->trials);
    for (int i = 0; i < n; i++) {
        char shape[32];
        snprintf(shape, sizeof shape, "M=%d", i + 1);
        CU_ASSERT_EQUAL_FATAL(dt_trial_init(&b->trials[i], w, shape, 1, &e), 0);
    }
}

/* ---- fake workers ------------------------------------------------------------ */

/* FAKE_ZERO answers like FAKE_DUP, but ok with min_ns 0: an ok without a time;
 * FAKE_LIE ok with min_ns g_lie_ns (impossible); FAKE_NOVERSION sends a HELLO
 * without "version", then behaves like FAKE_DUP */
enum { FAKE_DUP, FAKE_CLOSE, FAKE_SILENT, FAKE_ZERO, FAKE_LIE, FAKE_NOVERSION };
static double g_lie_ns = 1e-12;
#define FAKE_MAX_BATCH 3 /* larger batches are split by the pool */

typedef struct {
    int lfd, port, mode;
    pthread_t th;
    int conn_fd;
    pthread_mutex_t mu;
    int batches, stop;
    int too_big; /* batches over FAKE_MAX_BATCH received */
} fake_worker;

static void fake_serve(fake_worker *f, int fd)
{
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    char wn[65], mac[65];
    dt_nonce_new(wn);
    if (f->mode == FAKE_NOVERSION)
        fake_send(fd, DT_MSG_HELLO,
                  json_pack("{s:s, s:s, s:s, s:i}", "worker", "fake", "target", g_target_key,
                            "nonce", wn, "max_batch", FAKE_MAX_BATCH));
    else
        fake_send(fd, DT_MSG_HELLO,
                  json_pack("{s:s, s:s, s:s, s:s, s:i}", "worker", "fake", "target",
                            g_target_key, "nonce", wn, "version", "dtune " DTUNE_VERSION,
                            "max_batch", FAKE_MAX_BATCH));
    dt_msg_type t;
    json_t *p;
    if (fake_recv(fd, &d, &t, &p) != 1 || t != DT_MSG_AUTH) {
        dt_wire_decoder_free(&d);
        return;
    }
    dt_auth_mac(TOKEN, strlen(TOKEN), "dtune-auth-w",
                json_string_value(json_object_get(p, "nonce")), wn, mac);
    json_decref(p);
    fake_send(fd, DT_MSG_AUTH_OK, json_pack("{s:s}", "mac", mac));
    while (fake_recv(fd, &d, &t, &p) == 1) {
        if (t != DT_MSG_BATCH) {
            json_decref(p);
            continue;
        }
        pthread_mutex_lock(&f->mu);
        f->batches++;
        pthread_mutex_unlock(&f->mu);
        if (f->mode == FAKE_CLOSE) {
            json_decref(p);
            break;
        }
        if (f->mode == FAKE_SILENT) {
            json_decref(p);
            continue;
        }
        dt_batch b;
        json_int_t id = json_integer_value(json_object_get(p, "id"));
        if (dt_batch_from_json(json_object_get(p, "batch"), &b, NULL) == 0) {
            if (b.ntrials > FAKE_MAX_BATCH) {
                pthread_mutex_lock(&f->mu);
                f->too_big++;
                pthread_mutex_unlock(&f->mu);
            }
            json_t *res = json_array();
            for (int i = 0; i < b.ntrials; i++) {
                dt_trial_result r = {.status = DT_TRIAL_OK, .min_ns = 1000, .median_ns = 1100,
                                     .repeats = 3};
                if (f->mode == FAKE_ZERO)
                    r.min_ns = r.median_ns = 0;
                if (f->mode == FAKE_LIE)
                    r.min_ns = r.median_ns = g_lie_ns;
                memcpy(r.uid, b.trials[i].uid, sizeof r.uid);
                json_array_append_new(res, dt_trial_result_to_json(&r));
            }
            /* the answer, the same answer again, and one for a batch never sent */
            fake_send(fd, DT_MSG_RESULT, json_pack("{s:I, s:O}", "id", id, "results", res));
            fake_send(fd, DT_MSG_RESULT, json_pack("{s:I, s:O}", "id", id, "results", res));
            fake_send(fd, DT_MSG_RESULT, json_pack("{s:I, s:o}", "id", id + 1000, "results", res));
            dt_batch_free(&b);
        }
        json_decref(p);
    }
    dt_wire_decoder_free(&d);
}

static void *fake_main(void *arg)
{
    fake_worker *f = arg;
    for (;;) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            break;
        pthread_mutex_lock(&f->mu);
        int stop = f->stop;
        f->conn_fd = fd;
        pthread_mutex_unlock(&f->mu);
        if (!stop)
            fake_serve(f, fd);
        pthread_mutex_lock(&f->mu);
        f->conn_fd = -1;
        pthread_mutex_unlock(&f->mu);
        close(fd);
    }
    return NULL;
}

static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static void fake_start(fake_worker *f, int mode)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->conn_fd = -1;
    pthread_mutex_init(&f->mu, NULL);
    f->lfd = listen_loopback(&f->port);
    CU_ASSERT_FATAL(f->lfd >= 0);
    pthread_create(&f->th, NULL, fake_main, f);
}

static void fake_stop(fake_worker *f)
{
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    if (f->conn_fd >= 0)
        shutdown(f->conn_fd, SHUT_RDWR);
    pthread_mutex_unlock(&f->mu);
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->lfd);
    pthread_mutex_destroy(&f->mu);
}

static int fake_batches(fake_worker *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->batches;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static dt_pool *open_pool(const char *workers, const char *token, const char *target,
                          double deadline, tally *t)
{
    dt_pool_opts o = {.workers = workers,
                      .token = token,
                      .token_len = strlen(token),
                      .target_key = target,
                      .inflight = 1,
                      .batch_deadline_s = deadline,
                      .on_result = on_result,
                      .ud = t};
    dt_pool *p = NULL;
    dt_err e;
    int rc = dt_pool_open(&o, &p, &e);
    if (rc)
        fprintf(stderr, "\n  dt_pool_open: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return p;
}

static void test_fake_duplicates_dropped(void)
{
    fake_worker f;
    fake_start(&f, FAKE_DUP);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    tally t;
    tally_init(&t);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 30, &t);
    dt_err e;
    for (int i = 0; i < 3; i++) {
        dt_batch b;
        fake_batch(w, 4, &b);
        tally_add(&t, &b, 0);
        CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
        dt_batch_free(&b);
    }
    CU_ASSERT_EQUAL(dt_pool_drain(p, 20, &e), 0);
    usleep(200 * 1000); /* let the repeated answers arrive: they must be dropped */
    CU_ASSERT_EQUAL(dt_pool_live_workers(p), 1);
    dt_pool_close(p);
    check_exactly_once(&t);
    CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_OK), 12);
    CU_ASSERT_EQUAL(fake_batches(&f), 6); /* 4 trials each: split as 3 + 1 */
    CU_ASSERT_EQUAL(f.too_big, 0);
    fake_stop(&f);
    tally_free(&t);
    dt_workload_free(w);
}

/* A worker that drops the connection on every batch: requeued once, then
 * worker_lost; with a good worker beside it, everything ends ok. */
static void test_fake_lost_twice(void)
{
    fake_worker f;
    fake_start(&f, FAKE_CLOSE);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    tally t;
    tally_init(&t);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 30, &t);
    dt_batch b;
    fake_batch(w, 3, &b);
    tally_add(&t, &b, 0);
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    CU_ASSERT_EQUAL(dt_pool_drain(p, 20, &e), 0);
    dt_pool_close(p);
    check_exactly_once(&t);
    CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_WORKER_LOST), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.error[0], "lost twice"));
    CU_ASSERT_EQUAL(fake_batches(&f), 2);
    tally_free(&t);

    /* the same bad worker beside a good one */
    fake_worker good;
    fake_start(&good, FAKE_DUP);
    tally_init(&t);
    snprintf(addr, sizeof addr, "127.0.0.1:%d,127.0.0.1:%d", f.port, good.port);
    p = open_pool(addr, TOKEN, g_target_key, 30, &t);
    for (int i = 0; i < 4; i++) {
        fake_batch(w, 2, &b);
        tally_add(&t, &b, 0);
        CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
        dt_batch_free(&b);
    }
    CU_ASSERT_EQUAL(dt_pool_drain(p, 30, &e), 0);
    dt_pool_close(p);
    check_exactly_once(&t);
    CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_OK), 8);
    fake_stop(&good);
    fake_stop(&f);
    tally_free(&t);
    dt_workload_free(w);
}

/* A worker that never answers: the deadline gives the batch up twice. */
static void test_fake_deadline(void)
{
    fake_worker f;
    fake_start(&f, FAKE_SILENT);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    tally t;
    tally_init(&t);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    dt_batch b;
    dt_err e;
    /* a long deadline: drain times out (DT_EBUSY, the worker is live), and
     * the pool closes with the batch in flight */
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 30, &t);
    fake_batch(w, 2, &b);
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    CU_ASSERT_EQUAL(dt_pool_drain(p, 0.5, &e), DT_EBUSY);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "0 of 2 trials"));
    CU_ASSERT_EQUAL(dt_pool_live_workers(p), 1);
    dt_pool_close(p);
    CU_ASSERT_EQUAL(t.callbacks, 0);

    p = open_pool(addr, TOKEN, g_target_key, 0.3, &t);
    fake_batch(w, 2, &b);
    tally_add(&t, &b, 0);
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(dt_pool_drain(p, 20, &e), 0);
    CU_ASSERT_TRUE(dt_now_s() - t0 < 10);
    dt_pool_close(p);
    check_exactly_once(&t);
    CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_WORKER_LOST), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.error[0], "deadline"));
    fake_stop(&f);
    tally_free(&t);
    dt_workload_free(w);
}

/* A worker answering ok in an impossible time: each trial a worker fault
 * (worker_lost, the worker and the value in its error), never ok. */
static void test_fake_lies(void)
{
    static const double lies[] = {1e-12, 1e-300};
    static const char *const texts[] = {"1e-12", "1e-300"};
    for (int l = 0; l < 2; l++) {
        g_lie_ns = lies[l];
        fake_worker f;
        fake_start(&f, FAKE_LIE);
        dt_workload *w;
        CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
        tally t;
        tally_init(&t);
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
        dt_pool *p = open_pool(addr, TOKEN, g_target_key, 30, &t);
        dt_batch b;
        fake_batch(w, 3, &b);
        tally_add(&t, &b, 0);
        dt_err e;
        CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
        dt_batch_free(&b);
        CU_ASSERT_EQUAL(dt_pool_drain(p, 20, &e), 0);
        dt_pool_close(p);
        check_exactly_once(&t);
        CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_OK), 0);
        CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_WORKER_LOST), 3);
        if (!strstr(t.error[0], "impossible") || !strstr(t.error[0], addr) ||
            !strstr(t.error[0], texts[l]))
            fprintf(stderr, "\n  error: %s\n", t.error[0]);
        CU_ASSERT_PTR_NOT_NULL(strstr(t.error[0], "impossible"));
        CU_ASSERT_PTR_NOT_NULL(strstr(t.error[0], addr));
        CU_ASSERT_PTR_NOT_NULL(strstr(t.error[0], texts[l]));
        fake_stop(&f);
        tally_free(&t);
        dt_workload_free(w);
    }
    g_lie_ns = 1e-12;
}

/* A HELLO without "version": not a dtune worker of a known protocol
 * version; refused with a clear message, nothing sent to it. */
static void test_fake_no_version(void)
{
    fake_worker f;
    fake_start(&f, FAKE_NOVERSION);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    tally t;
    tally_init(&t);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 30, &t);
    dt_batch b;
    fake_batch(w, 2, &b);
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    CU_ASSERT_EQUAL(dt_pool_drain(p, 10, &e), DT_EIO);
    if (!strstr(e.msg, "version"))
        fprintf(stderr, "\n  message: %s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "version"));
    CU_ASSERT_EQUAL(dt_pool_live_workers(p), 0);
    dt_pool_close(p);
    CU_ASSERT_EQUAL(t.callbacks, 0);
    CU_ASSERT_EQUAL(fake_batches(&f), 0);
    fake_stop(&f);
    tally_free(&t);
    dt_workload_free(w);
}

/* A live worker that stops answering (no RESULT, no PONG) is dropped within
 * the silence limit, long before its batch deadline: the batch is lost
 * twice (worker_lost) and the worker refused after going silent twice. */
static void test_fake_silent_dropped(void)
{
    fake_worker f;
    fake_start(&f, FAKE_SILENT);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    tally t;
    tally_init(&t);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    setenv("DTUNE_POOL_SILENT_S", "0.5", 1);
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 300, &t);
    unsetenv("DTUNE_POOL_SILENT_S");
    dt_batch b;
    fake_batch(w, 2, &b);
    tally_add(&t, &b, 0);
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    double t0 = dt_now_s();
    int rc = dt_pool_drain(p, 20, &e);
    if (rc)
        fprintf(stderr, "\n  drain: %s\n", e.msg);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(dt_now_s() - t0 < 10);
    check_exactly_once(&t);
    CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_WORKER_LOST), 2);
    if (!strstr(t.error[0], "silent"))
        fprintf(stderr, "\n  error: %s\n", t.error[0]);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.error[0], "silent"));
    /* silent twice in a row: refused for good, the message says why */
    fake_batch(w, 1, &b);
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    CU_ASSERT_EQUAL(dt_pool_drain(p, 10, &e), DT_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "silent"));
    dt_pool_close(p);
    fake_stop(&f);
    tally_free(&t);
    dt_workload_free(w);
}

static void test_bad_options(void)
{
    tally t;
    tally_init(&t);
    dt_pool_opts o = {.workers = "127.0.0.1", .token = TOKEN, .token_len = strlen(TOKEN),
                      .on_result = on_result, .ud = &t};
    dt_pool *p = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_open(&o, &p, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "HOST:PORT"));
    o.workers = "127.0.0.1:99999";
    CU_ASSERT_EQUAL(dt_pool_open(&o, &p, &e), DT_EINVAL);
    o.workers = "";
    CU_ASSERT_EQUAL(dt_pool_open(&o, &p, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(p);
    tally_free(&t);
}

/* ---- real workers --------------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int port;
    char log[4096];
} real_worker;

static real_worker g_workers[2];

static int count_substr(const char *s, const char *sub)
{
    int n = 0;
    for (const char *q = strstr(s, sub); q; q = strstr(q + 1, sub))
        n++;
    return n;
}

static int start_worker(real_worker *rw, int i)
{
    snprintf(rw->log, sizeof rw->log, "%s/worker%d.log", g_dir, i);
    const char *extra[] = {"--name", i ? "worker-b" : "worker-a", NULL};
    /* up to 60 s (ASan start-up); the caller stops it on failure */
    dt_test_worker_opts o = {.token_path = g_token_file, .log_path = rw->log,
                             .extra_args = extra, .log_level = "info", .timeout_s = 60};
    rw->port = dt_test_start_worker(&o, &rw->pid, NULL, 0);
    return rw->port > 0 ? 0 : -1;
}

static void stop_worker(real_worker *rw)
{
    if (rw->pid <= 0)
        return;
    kill(-rw->pid, SIGKILL);
    kill(rw->pid, SIGKILL);
    waitpid(rw->pid, NULL, 0);
    rw->pid = 0;
}

static int real_setup(void)
{
    for (int i = 0; i < 2; i++)
        if (start_worker(&g_workers[i], i) != 0) {
            char *log = dt_test_slurp(g_workers[i].log);
            fprintf(stderr, "worker %d did not start: %s\n", i, log);
            free(log);
            /* CUnit skips the teardown of a suite whose setup failed */
            stop_worker(&g_workers[0]);
            stop_worker(&g_workers[1]);
            return 1;
        }
    return 0;
}

static int real_teardown(void)
{
    for (int i = 0; i < 2; i++)
        stop_worker(&g_workers[i]);
    return 0;
}

static void both_addrs(char *buf, size_t n)
{
    snprintf(buf, n, "127.0.0.1:%d,127.0.0.1:%d", g_workers[0].port, g_workers[1].port);
}

static void test_other_target_refused(void)
{
    tally t;
    tally_init(&t);
    char addr[128];
    both_addrs(addr, sizeof addr);
    const char *other = strstr(g_target_key, "avx512") ? "x86_64-avx2-999c-32K.1M.8M"
                                                       : "x86_64-avx512-999c-32K.1M.8M";
    dt_pool *p = open_pool(addr, TOKEN, other, 30, &t);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    dt_batch b;
    fake_batch(w, 2, &b);
    tally_add(&t, &b, 0);
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(dt_pool_drain(p, 30, &e), DT_EIO);
    CU_ASSERT_TRUE(dt_now_s() - t0 < 15);
    char want[256];
    snprintf(want, sizeof want, "worker 127.0.0.1:%d has target %s but the job is for %s",
             g_workers[0].port, g_target_key, other);
    if (!strstr(e.msg, want))
        fprintf(stderr, "\n  message: %s\n  wanted: %s\n", e.msg, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want));
    CU_ASSERT_EQUAL(dt_pool_live_workers(p), 0);
    dt_pool_close(p);
    CU_ASSERT_EQUAL(t.callbacks, 0);
    tally_free(&t);
    dt_workload_free(w);
}

static void test_wrong_token_refused(void)
{
    tally t;
    tally_init(&t);
    char addr[128];
    both_addrs(addr, sizeof addr);
    dt_pool *p = open_pool(addr, "not-the-token-but-long-enough", g_target_key, 30, &t);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    dt_batch b;
    fake_batch(w, 2, &b);
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(dt_pool_drain(p, 30, &e), DT_EIO);
    CU_ASSERT_TRUE(dt_now_s() - t0 < 15);
    if (!strstr(e.msg, "authentication"))
        fprintf(stderr, "\n  message: %s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "authentication"));
    dt_pool_close(p);
    CU_ASSERT_EQUAL(t.callbacks, 0);
    tally_free(&t);
    dt_workload_free(w);
}

static void test_unreachable(void)
{
    int port;
    int fd = listen_loopback(&port);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd); /* nothing listens there now */
    tally t;
    tally_init(&t);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 30, &t);
    dt_workload *w;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    dt_batch b;
    fake_batch(w, 2, &b);
    dt_err e;
    CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
    dt_batch_free(&b);
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(dt_pool_drain(p, 2.0, &e), DT_EIO);
    double el = dt_now_s() - t0;
    CU_ASSERT_TRUE(el >= 1.9 && el < 5);
    if (!strstr(e.msg, "connection refused"))
        fprintf(stderr, "\n  message: %s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "connection refused"));
    dt_pool_close(p);
    tally_free(&t);
    dt_workload_free(w);
}

/* The main one: several real batches on two workers, one worker SIGKILLed
 * while it measures; every trial delivered and recorded exactly once. */
static void test_kill_one_worker(void)
{
    dt_workload *w;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, &e), 0);
    char dbpath[4200];
    snprintf(dbpath, sizeof dbpath, "%s/kill.db", g_dir);
    tally t;
    tally_init(&t);
    CU_ASSERT_EQUAL_FATAL(dt_db_open(dbpath, DT_DB_CREATE, &t.db, &e), 0);
    json_t *tj = dt_target_to_json(&g_target);
    char *tinfo = json_dumps(tj, JSON_COMPACT);
    json_decref(tj);
    CU_ASSERT_EQUAL_FATAL(dt_db_target_upsert(t.db, g_target_key, dt_isa_name(g_target.isa), tinfo,
                                              &t.target_id, &e),
                          0);
    free(tinfo);
    CU_ASSERT_EQUAL_FATAL(
        dt_db_workload_upsert(t.db, WORKLOAD, "dense", "{}", &t.workload_id, &e), 0);

    char addr[128];
    both_addrs(addr, sizeof addr);
    dt_pool *p = open_pool(addr, TOKEN, g_target_key, 120, &t);
    dt_rng rng;
    dt_rng_seed(&rng, 42);
    static const int ms[] = {1, 7, 16, 33};
    enum { NBATCH = 6 };
    for (int i = 0; i < NBATCH; i++) {
        dt_batch b;
        dt_annotation ann;
        make_batch(w, &rng, ms, 4, 0.25, &b, &ann);
        char *as = dt_annotation_to_string(&ann);
        int64_t kid = 0;
        CU_ASSERT_EQUAL(dt_db_kernel_intern(t.db, "dense", dt_sketch_name(ann.sketch), as, NULL,
                                            &kid, &e),
                        0);
        free(as);
        tally_add(&t, &b, kid);
        CU_ASSERT_EQUAL(dt_pool_submit(p, &b, &e), 0);
        dt_batch_free(&b);
    }
    /* wait for the first answer: both workers then hold a batch */
    pthread_mutex_lock(&t.mu);
    double t0 = dt_now_s();
    while (t.callbacks == 0 && dt_now_s() - t0 < 180) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&t.cv, &t.mu, &ts);
    }
    pthread_mutex_unlock(&t.mu);
    CU_ASSERT_FATAL(t.callbacks > 0);
    usleep(300 * 1000);
    CU_ASSERT_EQUAL(dt_pool_live_workers(p), 2);
    stop_worker(&g_workers[0]); /* SIGKILL, its runner child too */

    int rc = dt_pool_drain(p, 300, &e);
    if (rc)
        fprintf(stderr, "\n  drain: %s\n", e.msg);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(dt_pool_live_workers(p), 1);
    dt_pool_close(p);
    check_exactly_once(&t);
    CU_ASSERT_EQUAL(t.n, NBATCH * 4);
    /* the killed worker's batch went to the other one and was measured */
    CU_ASSERT_EQUAL(count_status(&t, DT_TRIAL_OK), NBATCH * 4);
    CU_ASSERT_EQUAL(t.db_errors, 0);

    /* the killed worker had taken a batch it never answered */
    char *log = dt_test_slurp(g_workers[0].log);
    int queued = count_substr(log, ") queued"), answered = count_substr(log, " ok, in ");
    if (queued <= answered)
        fprintf(stderr, "\n  killed worker log:\n%s\n", log);
    CU_ASSERT_TRUE(queued > answered);
    free(log);

    int64_t n = 0;
    dt_db_measurement_filter all = {0};
    CU_ASSERT_EQUAL(dt_db_measurement_count(t.db, &all, &n, &e), 0);
    CU_ASSERT_EQUAL(n, NBATCH * 4);
    dt_db_close(t.db);
    tally_free(&t);
    dt_workload_free(w);
}

/* ---- dtune measure end to end ------------------------------------------------------ */

static int collect_uid(const dt_db_measurement *m, void *ud)
{
    json_t *set = ud;
    json_object_set_new(set, m->trial_uid, json_true());
    return 0;
}

/* Measurements in the db and distinct uids. */
static void db_counts(const char *path, int64_t *n, size_t *distinct)
{
    dt_db *db;
    dt_err e;
    *n = -1;
    *distinct = 0;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, 0, &db, &e), 0);
    dt_db_measurement_filter all = {0};
    CU_ASSERT_EQUAL(dt_db_measurement_count(db, &all, n, &e), 0);
    json_t *set = json_object();
    CU_ASSERT_EQUAL(dt_db_measurement_list(db, &all, collect_uid, set, &e), 0);
    *distinct = json_object_size(set);
    json_decref(set);
    dt_db_close(db);
}

static void check_measure_json(const char *out)
{
    json_error_t jerr;
    json_t *r = json_loads(out, 0, &jerr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(r, "trials")), 4);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(r, "status_counts"), "ok")),
                    4);
    json_t *ks = json_object_get(r, "kernels");
    CU_ASSERT_EQUAL_FATAL(json_array_size(ks), 2);
    for (size_t k = 0; k < 2; k++) {
        json_t *sh = json_object_get(json_array_get(ks, k), "shapes");
        CU_ASSERT_EQUAL_FATAL(json_array_size(sh), 2);
        json_t *s1 = json_array_get(sh, 1);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s1, "shape")), "M=5");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s1, "status")), "ok");
        CU_ASSERT_TRUE(json_real_value(json_object_get(s1, "min_ns")) > 0);
        CU_ASSERT_TRUE(json_real_value(json_object_get(s1, "median_ns")) >=
                       json_real_value(json_object_get(s1, "min_ns")));
    }
    json_decref(r);
}

static void run_measure_twice(const char *db, const char *extra)
{
    for (int round = 1; round <= 2; round++) {
        dt_test_proc pr;
        int code = dt_test_run_dtune(&pr,
                                     "measure 'dense(M=1..8,N=32,K=32)' --sample 2 --seed 3 "
                                     "--shapes '{1,5}' --min-time 1 --db '%s' --json %s",
                                     db, extra);
        if (code != 0)
            fprintf(stderr, "\n  dtune measure %s: exit %d: %s\n", extra, code, pr.err);
        CU_ASSERT_EQUAL(code, 0);
        if (code == 0) {
            check_measure_json(pr.out);
            CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "trials/min"));
        }
        dt_test_proc_free(&pr);
        int64_t n;
        size_t distinct;
        db_counts(db, &n, &distinct);
        CU_ASSERT_EQUAL(n, 4 * round);
        CU_ASSERT_EQUAL(distinct, (size_t)(4 * round));
    }
}

static void test_measure_local(void)
{
    char db[4200];
    snprintf(db, sizeof db, "%s/local.db", g_dir);
    run_measure_twice(db, "");
}

static void test_measure_workers(void)
{
    char db[4200], extra[4400], addr[128];
    snprintf(db, sizeof db, "%s/workers.db", g_dir);
    both_addrs(addr, sizeof addr);
    snprintf(extra, sizeof extra, "--workers %s --token-file '%s'", addr, g_token_file);
    run_measure_twice(db, extra);
}

static void test_measure_errors(void)
{
    dt_test_proc pr;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "measure --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.out, "--workers"));
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "measure"), 1);
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "measure 'dense(M=1..4,N=16,K=16)' --workers "
                                           "127.0.0.1:1"),
                    1);
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "measure 'dense(M=1..4,N=16,K=16)' --sample 0"), 1);
    dt_test_proc_free(&pr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr, "measure 'dense(M=1..4,N=16)' --db '%s/x.db'", g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "dim K is missing"));
    dt_test_proc_free(&pr);
    /* a wrong token on the workers' side: refused, exit 3 with the reason */
    char *bad = dt_test_write_file(g_dir, "bad.token", "another-token-0123456789abcdef\n");
    chmod(bad, 0600);
    char addr[128];
    both_addrs(addr, sizeof addr);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&pr,
                                      "measure 'dense(M=1..4,N=16,K=16)' --sample 1 --shapes "
                                      "'{1}' --db '%s/x.db' --workers %s --token-file '%s'",
                                      g_dir, addr, bad),
                    3);
    CU_ASSERT_PTR_NOT_NULL(strstr(pr.err, "authentication"));
    dt_test_proc_free(&pr);
    free(bad);
}

/* The measurement session on fake workers that answer every batch twice
 * (and split it: at most 3 trials each): every trial recorded once; and on
 * one that says ok without a time: recorded as a worker fault. */
static void test_session_on_fake_workers(void)
{
    dt_workload *w;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_workload_parse_key(WORKLOAD, &w, NULL), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/session.db", g_dir);
    dt_db *db = NULL;
    CU_ASSERT_EQUAL_FATAL(dt_db_open(path, DT_DB_CREATE, &db, &e), 0);
    dt_rng rng;
    dt_rng_seed(&rng, 5);
    dt_mkernel k[2];
    memset(k, 0, sizeof k);
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&rng, &g_target, -1, 1, &k[i].a, &e), 0);
    for (int mode = 0; mode < 2; mode++) {
        fake_worker f;
        fake_start(&f, mode ? FAKE_ZERO : FAKE_DUP);
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
        dt_measurer_opts o = {.workers = addr, .token_file = g_token_file,
                              .no_worker_grace_s = 20};
        dt_measurer *m = NULL;
        int rc = dt_measurer_open(&o, db, &g_target, g_target_key, &m, &e);
        if (rc)
            fprintf(stderr, "\n  open: %s\n", e.msg);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        /* kernel 0 on M = 1..4, kernel 1 on M = 1..4, interleaved */
        dt_mtrial t[8];
        memset(t, 0, sizeof t);
        for (int i = 0; i < 8; i++) {
            t[i].kernel = i % 2;
            t[i].shape[0] = i / 2 + 1;
            t[i].threads = 1;
        }
        dt_mrun r = {.w = w, .kernels = k, .nk = 2, .trials = t, .n = 8};
        rc = dt_measurer_measure(m, &r, &e);
        if (rc)
            fprintf(stderr, "\n  measure: %s\n", e.msg);
        CU_ASSERT_EQUAL(rc, 0);
        usleep(200 * 1000); /* the repeated answers arrive: dropped */
        dt_measurer_close(m);
        CU_ASSERT_EQUAL(fake_batches(&f), 4); /* 2 batches of 4, split as 3 + 1 */
        CU_ASSERT_EQUAL(f.too_big, 0);
        fake_stop(&f);
        for (int i = 0; i < 8; i++) {
            CU_ASSERT(t[i].got && t[i].recorded && !t[i].already);
            if (mode == 0) {
                CU_ASSERT_EQUAL(t[i].res.status, DT_TRIAL_OK);
                CU_ASSERT_DOUBLE_EQUAL(t[i].res.min_ns, 1000, 1e-9);
            } else {
                /* a worker fault: the worker and the value named, never ok */
                CU_ASSERT_EQUAL(t[i].res.status, DT_TRIAL_WORKER_LOST);
                CU_ASSERT(isnan(t[i].res.min_ns));
                if (!(t[i].res.error && strstr(t[i].res.error, "impossible") &&
                      strstr(t[i].res.error, addr)))
                    fprintf(stderr, "\n  error: %s\n", t[i].res.error);
                CU_ASSERT_TRUE(t[i].res.error && strstr(t[i].res.error, "impossible") &&
                               strstr(t[i].res.error, addr));
            }
        }
        int64_t n = 0;
        size_t distinct = 0;
        dt_db_measurement_filter okf = {.workload_id = r.workload_id, .ok_only = true};
        CU_ASSERT_EQUAL(dt_db_measurement_count(db, &okf, &n, &e), 0);
        CU_ASSERT_EQUAL(n, 8); /* the first run's: the second adds none */
        if (mode == 1) {
            dt_db_measurement_filter lostf = {.workload_id = r.workload_id};
            CU_ASSERT_EQUAL(dt_db_measurement_count(db, &lostf, &n, &e), 0);
            CU_ASSERT_EQUAL(n, 16);
        }
        dt_mtrials_free(t, 8);
        dt_db_close(db);
        db_counts(path, &n, &distinct);
        CU_ASSERT_EQUAL(n, 8 * (mode + 1));
        CU_ASSERT_EQUAL(distinct, (size_t)(8 * (mode + 1)));
        CU_ASSERT_EQUAL_FATAL(dt_db_open(path, 0, &db, &e), 0);
    }
    dt_db_close(db);
    dt_workload_free(w);
}

int main(void)
{
    dt_err e;
    if (dt_target_detect_key(&g_target, g_target_key, sizeof g_target_key, &e)) {
        fprintf(stderr, "no target: %s\n", e.msg);
        return 1;
    }
    g_dir = dt_test_tmpdir_with_private_cache(); /* workers and dtune measure build there;
                                                  * never a warm cache: a batch must be slow
                                                  * enough to kill a worker mid-way */
    if (!g_dir)
        return 1;
    g_token_file = dt_test_write_file(g_dir, "token", TOKEN "\n");
    chmod(g_token_file, 0600);
    signal(SIGPIPE, SIG_IGN);

    CU_TestInfo fake[] = {
        {"bad options", test_bad_options},
        {"repeated and unknown RESULTs are dropped", test_fake_duplicates_dropped},
        {"a batch lost twice is worker_lost; requeued elsewhere it is ok", test_fake_lost_twice},
        {"deadline", test_fake_deadline},
        {"impossible times are worker faults, never ok", test_fake_lies},
        {"a HELLO without version is refused", test_fake_no_version},
        {"a live worker gone silent is dropped within the silence limit",
         test_fake_silent_dropped},
        {"measurement session: answered twice, recorded once; ok without a time",
         test_session_on_fake_workers},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo real[] = {
        {"job for another target: workers refused", test_other_target_refused},
        {"wrong token: refused", test_wrong_token_refused},
        {"nothing reachable: DT_EIO within the timeout", test_unreachable},
        {"dtune measure locally, twice", test_measure_local},
        {"dtune measure on two workers, twice", test_measure_workers},
        {"dtune measure errors", test_measure_errors},
        {"SIGKILL a worker mid-batch: every trial exactly once", test_kill_one_worker},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"pool with fake workers", NULL, NULL, NULL, NULL, fake},
                             {"pool with dtune workers", real_setup, real_teardown, NULL, NULL,
                              real},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    dt_test_rmtree(g_dir);
    free(g_dir);
    free(g_token_file);
    return rc;
}
