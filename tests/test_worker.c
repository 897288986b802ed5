/* End-to-end: a real `dtune worker` child process on loopback, driven by a
 * client written here with plain blocking sockets.  Correct conversations
 * (handshake, a real batch measured), then abuse — wrong token, BATCH before
 * AUTH, random bytes, truncated frames, a 1 GiB length prefix, an oversized
 * unauthenticated frame, silence past the auth time-out, a batch over
 * --max-batch, an invalid batch, too many connections — after each of which
 * the same worker process must still be alive and serve a correct client.
 * A worker full of unauthenticated connections still serves a real client
 * (the oldest unauthenticated one is evicted; authenticated ones never are).
 * Last, SIGTERM during a batch: its result still arrives and the worker
 * exits 0.  Also the CLI's usage and token-file errors. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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
#include "measure/trial.h"
#include "measure/wire.h"
#include "microkernel/codegen.h"
#include "space/annotation.h"
#include "shape/workload.h"
#include "tests/dt_test.h"

#define WORKLOAD "dense(M=1..8,N=16,K=16)"
/* the same kernel op on bigger dims: a trial here takes its min_time, so a
 * batch is reliably still running when the test acts */
#define SLOW_WORKLOAD "dense(M=64,N=512,K=512)"
#define MAX_BATCH 4
#define AUTH_TIMEOUT_S 2

static char *g_dir;
static char g_token_path[4200], g_log_path[4200];
static const char g_token[] = "dtune-test-token-0123456789abcdef";
static pid_t g_pid = -1;
static int g_port;
static char g_target_key[DT_TARGET_KEY_MAX];
static char *g_source; /* a generated kernel */
static long g_next_id = 1;

/* Waits up to timeout_s for text to appear in the log at path. */
static int log_has_in(const char *path, const char *text, double timeout_s)
{
    double end = dt_now_s() + timeout_s;
    for (;;) {
        char *log = dt_test_slurp(path);
        int found = strstr(log, text) != NULL;
        free(log);
        if (found)
            return 1;
        if (dt_now_s() > end)
            return 0;
        dt_sleep_s(0.02);
    }
}

/* Waits up to timeout_s for text to appear in the worker's log. */
static int log_has(const char *text, double timeout_s)
{
    return log_has_in(g_log_path, text, timeout_s);
}

static void dump_log(void)
{
    char *log = dt_test_slurp(g_log_path);
    fprintf(stderr, "\n---- worker log ----\n%s---- end ----\n", log);
    free(log);
}

/* ---- the worker process ----------------------------------------------------- */

static int alive(void)
{
    if (g_pid <= 0)
        return 0;
    int st;
    return waitpid(g_pid, &st, WNOHANG) == 0 && kill(g_pid, 0) == 0;
}

static int start_worker(void)
{
    char max_batch[16], auth_timeout[16];
    snprintf(max_batch, sizeof max_batch, "%d", MAX_BATCH);
    snprintf(auth_timeout, sizeof auth_timeout, "%d", AUTH_TIMEOUT_S);
    const char *extra[] = {"--max-batch", max_batch, "--auth-timeout", auth_timeout,
                           "--name", "test-worker", NULL};
    dt_test_worker_opts o = {.token_path = g_token_path, .log_path = g_log_path,
                             .extra_args = extra, .timeout_s = 30};
    g_port = dt_test_start_worker(&o, &g_pid, g_target_key, sizeof g_target_key);
    return g_port > 0 ? 0 : -1;
}

/* ---- a blocking client -------------------------------------------------------- */

typedef struct {
    int fd;
    dt_wire_decoder d;
    int eof;
} client;

static int cl_open(client *c)
{
    memset(c, 0, sizeof *c);
    dt_wire_decoder_init(&c->d);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

static void cl_close(client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    dt_wire_decoder_free(&c->d);
}

static int cl_send_raw(client *c, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends one frame; takes the payload. */
static int cl_send(client *c, dt_msg_type t, json_t *payload)
{
    uint8_t *buf;
    size_t len;
    int rc = dt_wire_encode(t, payload, &buf, &len, NULL);
    json_decref(payload);
    if (rc)
        return -1;
    rc = cl_send_raw(c, buf, len);
    free(buf);
    return rc;
}

/* 1 with a frame, 0 when the worker closed the connection, -1 on a time-out
 * or a protocol error from the worker's side. */
static int cl_recv(client *c, dt_msg_type *t, json_t **p, double timeout_s)
{
    double end = dt_now_s() + timeout_s;
    for (;;) {
        int r = dt_wire_next(&c->d, t, p, NULL);
        if (r != 0)
            return r > 0 ? 1 : -1;
        if (c->eof)
            return 0;
        double left = end - dt_now_s();
        if (left <= 0)
            return -1;
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        char buf[65536];
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* EOF or reset: closed */
            c->eof = 1;
            continue;
        }
        if (dt_wire_feed(&c->d, buf, (size_t)n, NULL))
            return -1;
    }
}

/* Reads until the worker closes; 1 if it did within timeout_s.  The last
 * ERROR message seen (if any) goes to errmsg. */
static int cl_wait_closed(client *c, double timeout_s, char *errmsg, size_t n)
{
    if (errmsg)
        errmsg[0] = '\0';
    double end = dt_now_s() + timeout_s;
    for (;;) {
        dt_msg_type t;
        json_t *p = NULL;
        double left = end - dt_now_s();
        int r = cl_recv(c, &t, &p, left > 0 ? left : 0.001);
        if (r == 0)
            return 1;
        if (r < 0)
            return 0;
        if (t == DT_MSG_ERROR && errmsg)
            snprintf(errmsg, n, "%s", json_string_value(json_object_get(p, "message")));
        json_decref(p);
    }
}

static int is_hex64(const char *s)
{
    return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* Reads HELLO; returns it (new reference) or NULL. */
static json_t *cl_hello(client *c)
{
    dt_msg_type t;
    json_t *p = NULL;
    if (cl_recv(c, &t, &p, 10) != 1)
        return NULL;
    if (t != DT_MSG_HELLO) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* HELLO, AUTH with token, AUTH_OK checked both ways.  0 when authenticated. */
static int cl_handshake_with(client *c, const char *token, size_t token_len)
{
    json_t *hello = cl_hello(c);
    if (!hello)
        return -1;
    const char *wn = json_string_value(json_object_get(hello, "nonce"));
    char wnonce[65];
    snprintf(wnonce, sizeof wnonce, "%s", wn ? wn : "");
    json_decref(hello);
    char cnonce[65], mac[65];
    dt_nonce_new(cnonce);
    dt_auth_mac(token, token_len, "dtune-auth-c", wnonce, cnonce, mac);
    json_t *auth = json_object();
    json_object_set_new(auth, "nonce", json_string(cnonce));
    json_object_set_new(auth, "mac", json_string(mac));
    if (cl_send(c, DT_MSG_AUTH, auth))
        return -1;
    dt_msg_type t;
    json_t *p = NULL;
    if (cl_recv(c, &t, &p, 10) != 1)
        return -1;
    int ok = 0;
    if (t == DT_MSG_AUTH_OK) {
        char want[65];
        dt_auth_mac(token, token_len, "dtune-auth-w", cnonce, wnonce, want);
        ok = dt_auth_equal(want, json_string_value(json_object_get(p, "mac")));
    }
    json_decref(p);
    return ok ? 0 : -2;
}

static int cl_handshake(client *c) { return cl_handshake_with(c, g_token, strlen(g_token)); }

/* ---- batches ---------------------------------------------------------------- */

static void gen_source(void)
{
    dt_err e;
    dt_target t;
    dt_workload *w = NULL;
    if (dt_target_detect(&t, &e) || dt_workload_parse_key(WORKLOAD, &w, &e))
        return;
    dt_rng rng;
    dt_rng_seed(&rng, 7);
    dt_annotation a;
    dt_kernel_op kop = dt_kernel_op_of_workload(w);
    if (dt_annotation_sample(&rng, &t, -1, 1, &a, &e) == 0)
        dt_codegen(&kop, &a, &g_source, &e);
    dt_workload_free(w);
}

/* A BATCH payload of n trials on M = 1, 2, ...; extra is appended to the
 * source (a fresh comment makes a fresh build); uids[] get the trials' uids. */
static json_t *make_batch_of(const char *workload, long id, int n, const char *extra,
                             double min_time_s, char uids[][DT_TRIAL_UID_LEN + 1])
{
    dt_err e;
    dt_workload *w = NULL;
    if (!g_source || dt_workload_parse_key(workload, &w, &e))
        return NULL;
    dt_batch b;
    memset(&b, 0, sizeof b);
    dt_workload_key(w, b.workload, sizeof b.workload);
    size_t sl = strlen(g_source) + (extra ? strlen(extra) : 0) + 1;
    b.source = malloc(sl);
    snprintf(b.source, sl, "%s%s", g_source, extra ? extra : "");
    b.ntrials = n;
    b.trials = calloc((size_t)n, sizeof *b.trials);
    dt_timing_default(&b.timing);
    b.timing.min_time_s = min_time_s;
    b.timing.max_repeats = 1000000;
    b.timing.run_timeout_s = 20;
    json_t *p = NULL;
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        char shape[32] = "";
        if (w->nvars > 0)
            snprintf(shape, sizeof shape, "M=%d", 1 + (i * 3) % 8);
        ok = dt_trial_init(&b.trials[i], w, shape, 1, &e) == 0;
        if (ok && uids)
            snprintf(uids[i], DT_TRIAL_UID_LEN + 1, "%s", b.trials[i].uid);
    }
    if (ok) {
        p = json_object();
        json_object_set_new(p, "id", json_integer(id));
        json_object_set_new(p, "batch", dt_batch_to_json(&b));
    } else {
        fprintf(stderr, "\n  make_batch: %s\n", e.msg);
    }
    dt_batch_free(&b);
    dt_workload_free(w);
    return p;
}

static json_t *make_batch(long id, int n, const char *extra, double min_time_s,
                          char uids[][DT_TRIAL_UID_LEN + 1])
{
    return make_batch_of(WORKLOAD, id, n, extra, min_time_s, uids);
}

/* Reads a RESULT for id and checks every trial of uids is ok; returns the
 * number of ok trials, -1 if no RESULT came. */
static int expect_result(client *c, long id, int n, char uids[][DT_TRIAL_UID_LEN + 1],
                         double timeout_s)
{
    dt_msg_type t;
    json_t *p = NULL;
    int r = cl_recv(c, &t, &p, timeout_s);
    CU_ASSERT_EQUAL(r, 1);
    if (r != 1)
        return -1;
    if (t != DT_MSG_RESULT) {
        fprintf(stderr, "\n  expected RESULT, got %s: %s\n", dt_msg_name(t),
                json_string_value(json_object_get(p, "message")));
        json_decref(p);
        CU_FAIL("not a RESULT");
        return -1;
    }
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "id")), id);
    json_t *rs = json_object_get(p, "results");
    CU_ASSERT_EQUAL(json_array_size(rs), (size_t)n);
    int ok = 0;
    for (size_t i = 0; i < json_array_size(rs); i++) {
        dt_trial_result res;
        dt_err e;
        if (dt_trial_result_from_json(json_array_get(rs, i), &res, &e)) {
            CU_FAIL("result does not parse");
            continue;
        }
        CU_ASSERT_STRING_EQUAL(res.uid, uids[i]);
        if (res.status == DT_TRIAL_OK && res.min_ns > 0 && res.median_ns >= res.min_ns)
            ok++;
        else
            fprintf(stderr, "\n  trial %zu: %s %s\n", i, dt_trial_status_name(res.status),
                    res.error ? res.error : "");
        dt_trial_result_free(&res);
    }
    json_decref(p);
    return ok;
}

/* The worker is the same process and serves a correct client. */
static void check_serving(void)
{
    CU_ASSERT_TRUE_FATAL(alive());
    client c;
    int rc = -1;
    /* connections of the previous test may still be closing */
    for (int attempt = 0; attempt < 50 && rc != 0; attempt++) {
        if (cl_open(&c) == 0) {
            rc = cl_handshake(&c);
            if (rc == 0) {
                CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_PING, json_object()), 0);
                dt_msg_type t;
                json_t *p = NULL;
                CU_ASSERT_EQUAL(cl_recv(&c, &t, &p, 10), 1);
                CU_ASSERT_EQUAL(t, DT_MSG_PONG);
                json_decref(p);
            }
        }
        cl_close(&c);
        if (rc != 0)
            dt_sleep_s(0.05);
    }
    CU_ASSERT_EQUAL(rc, 0);
}

/* ---- suite ------------------------------------------------------------------------ */

static int suite_setup(void)
{
    g_dir = dt_test_tmpdir_with_cache();
    if (!g_dir)
        return 1;
    setenv("DTUNE_LOG", "info", 1);
    snprintf(g_token_path, sizeof g_token_path, "%s/token", g_dir);
    snprintf(g_log_path, sizeof g_log_path, "%s/worker.log", g_dir);
    FILE *f = fopen(g_token_path, "w");
    if (!f)
        return 1;
    fprintf(f, "%s\n", g_token);
    fclose(f);
    chmod(g_token_path, 0600);
    gen_source();
    if (!g_source)
        return 1;
    if (start_worker()) {
        dump_log();
        return 1;
    }
    return 0;
}

static int suite_teardown(void)
{
    if (g_pid > 0 && alive()) {
        kill(g_pid, SIGKILL);
        waitpid(g_pid, NULL, 0);
    }
    free(g_source);
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static void test_hello_and_auth(void)
{
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    json_t *h = cl_hello(&c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    dt_target t;
    char key[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL(dt_target_detect(&t, NULL), 0);
    dt_target_key(&t, key, sizeof key);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(h, "target")), key);
    CU_ASSERT_STRING_EQUAL(g_target_key, key);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(h, "worker")), "test-worker");
    CU_ASSERT_TRUE(json_is_object(json_object_get(h, "target_info")));
    CU_ASSERT_TRUE(is_hex64(json_string_value(json_object_get(h, "nonce"))));
    CU_ASSERT_EQUAL(strncmp(json_string_value(json_object_get(h, "version")), "dtune ", 6), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(h, "max_batch")), MAX_BATCH);
    json_decref(h);
    cl_close(&c);

    /* every connection gets a fresh nonce; the full handshake works */
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL(cl_handshake(&c), 0);
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_PING, json_object()), 0);
    dt_msg_type ty;
    json_t *p = NULL;
    CU_ASSERT_EQUAL(cl_recv(&c, &ty, &p, 10), 1);
    CU_ASSERT_EQUAL(ty, DT_MSG_PONG);
    json_decref(p);
    cl_close(&c);
}

static void test_batch(void)
{
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
    char uids[3][DT_TRIAL_UID_LEN + 1];
    long id = g_next_id++;
    json_t *b = make_batch(id, 3, NULL, 0.001, uids);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, b), 0);
    int ok = expect_result(&c, id, 3, uids, 120);
    CU_ASSERT_EQUAL(ok, 3);
    if (ok != 3)
        dump_log();
    /* two batches back to back on one connection: answered in order */
    char u1[2][DT_TRIAL_UID_LEN + 1], u2[1][DT_TRIAL_UID_LEN + 1];
    long id1 = g_next_id++, id2 = g_next_id++;
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, make_batch(id1, 2, NULL, 0.001, u1)), 0);
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, make_batch(id2, 1, NULL, 0.001, u2)), 0);
    CU_ASSERT_EQUAL(expect_result(&c, id1, 2, u1, 60), 2);
    CU_ASSERT_EQUAL(expect_result(&c, id2, 1, u2, 60), 1);
    cl_close(&c);
}

static void test_wrong_token(void)
{
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    static const char wrong[] = "dtune-test-token-0123456789abcdeX";
    dt_msg_type t;
    json_t *p = NULL;
    json_t *hello = cl_hello(&c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hello);
    char cnonce[65], mac[65];
    dt_nonce_new(cnonce);
    dt_auth_mac(wrong, strlen(wrong), "dtune-auth-c",
                json_string_value(json_object_get(hello, "nonce")), cnonce, mac);
    json_decref(hello);
    json_t *auth = json_object();
    json_object_set_new(auth, "nonce", json_string(cnonce));
    json_object_set_new(auth, "mac", json_string(mac));
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_AUTH, auth), 0);
    CU_ASSERT_EQUAL(cl_recv(&c, &t, &p, 10), 1);
    CU_ASSERT_EQUAL(t, DT_MSG_ERROR);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(p, "message")),
                           "authentication failed");
    json_decref(p);
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, NULL, 0));
    cl_close(&c);
    CU_ASSERT_TRUE(log_has("authentication failed; closing", 5));

    /* a malformed AUTH, and a replayed MAC for another nonce */
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    hello = cl_hello(&c);
    json_decref(hello);
    auth = json_object();
    json_object_set_new(auth, "nonce", json_string(cnonce));
    json_object_set_new(auth, "mac", json_string(mac)); /* made for the old worker nonce */
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_AUTH, auth), 0);
    char msg[256];
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, msg, sizeof msg));
    CU_ASSERT_STRING_EQUAL(msg, "authentication failed");
    cl_close(&c);
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    json_decref(cl_hello(&c));
    auth = json_object();
    json_object_set_new(auth, "nonce", json_integer(5));
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_AUTH, auth), 0);
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, msg, sizeof msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "malformed AUTH"));
    cl_close(&c);
    check_serving();
}

static void test_batch_before_auth(void)
{
    client c;
    /* a small frame that is not AUTH: ERROR, close */
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    json_decref(cl_hello(&c));
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_PING, json_object()), 0);
    char msg[256];
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, msg, sizeof msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "authentication required"));
    cl_close(&c);
    CU_ASSERT_TRUE(log_has("got PING before AUTH", 5));

    /* a real batch (tens of KiB): refused on its size, never parsed */
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    json_decref(cl_hello(&c));
    char uids[1][DT_TRIAL_UID_LEN + 1];
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, make_batch(g_next_id++, 1, NULL, 0.001, uids)), 0);
    dt_msg_type t;
    json_t *p = NULL;
    int r;
    /* nothing but an ERROR, then the close */
    while ((r = cl_recv(&c, &t, &p, 5)) == 1) {
        CU_ASSERT_EQUAL(t, DT_MSG_ERROR);
        json_decref(p);
    }
    CU_ASSERT_EQUAL(r, 0);
    cl_close(&c);
    CU_ASSERT_TRUE(log_has("before AUTH)", 5));
    check_serving();
}

static void test_random_bytes(void)
{
    uint64_t s = 12345;
    for (int round = 0; round < 3; round++) {
        client c;
        CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
        if (round == 2) { /* garbage after authentication */
            CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
        }
        uint8_t buf[4096];
        for (size_t i = 0; i < sizeof buf; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            buf[i] = (uint8_t)(s >> 56);
        }
        if (round == 1) /* a plausible small header, garbage body */
            memcpy(buf, "\x00\x00\x00\x40\x01\x04", 6);
        cl_send_raw(&c, buf, sizeof buf);
        double t0 = dt_now_s();
        CU_ASSERT_TRUE(cl_wait_closed(&c, AUTH_TIMEOUT_S + 3, NULL, 0));
        CU_ASSERT_TRUE(dt_now_s() - t0 < 2.0);
        cl_close(&c);
    }
    check_serving();
}

static void test_truncated_frame(void)
{
    for (int authed = 0; authed < 2; authed++) {
        client c;
        CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
        if (authed) {
            CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
        } else {
            json_decref(cl_hello(&c));
        }
        /* a PING claiming 100 bytes, 10 sent, then our side closes */
        uint8_t buf[16] = {0, 0, 0, 100, DT_WIRE_VERSION, DT_MSG_PING, '{', '"', 'a', '"'};
        CU_ASSERT_EQUAL(cl_send_raw(&c, buf, 10), 0);
        shutdown(c.fd, SHUT_WR);
        CU_ASSERT_TRUE(cl_wait_closed(&c, 5, NULL, 0));
        cl_close(&c);
    }
    CU_ASSERT_TRUE(log_has("truncated frame", 5));
    check_serving();
}

static void test_gib_prefix(void)
{
    for (int authed = 0; authed < 2; authed++) {
        client c;
        CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
        if (authed) {
            CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
        } else {
            json_decref(cl_hello(&c));
        }
        static const uint8_t gib[] = {0x40, 0x00, 0x00, 0x00, DT_WIRE_VERSION, DT_MSG_BATCH};
        double t0 = dt_now_s();
        CU_ASSERT_EQUAL(cl_send_raw(&c, gib, sizeof gib), 0);
        CU_ASSERT_TRUE(cl_wait_closed(&c, 5, NULL, 0));
        CU_ASSERT_TRUE(dt_now_s() - t0 < 1.0);
        cl_close(&c);
    }
    CU_ASSERT_TRUE(log_has("frame length 1073741824", 5));
    check_serving();
}

static void test_oversized_before_auth(void)
{
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    json_decref(cl_hello(&c));
    /* 1 MiB is under the frame limit, but far over what AUTH needs */
    static const uint8_t big[] = {0x00, 0x10, 0x00, 0x00, DT_WIRE_VERSION, DT_MSG_AUTH, '{'};
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(cl_send_raw(&c, big, sizeof big), 0);
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, NULL, 0));
    CU_ASSERT_TRUE(dt_now_s() - t0 < 1.0);
    cl_close(&c);
    CU_ASSERT_TRUE(log_has("announced a frame of 1048576 bytes", 5));
    check_serving();
}

static void test_auth_timeout(void)
{
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    json_decref(cl_hello(&c));
    double t0 = dt_now_s();
    CU_ASSERT_TRUE(cl_wait_closed(&c, AUTH_TIMEOUT_S + 5, NULL, 0));
    double dt = dt_now_s() - t0;
    CU_ASSERT_TRUE(dt > AUTH_TIMEOUT_S - 0.5 && dt < AUTH_TIMEOUT_S + 2);
    cl_close(&c);
    CU_ASSERT_TRUE(log_has("no authentication within", 5));
    check_serving();
}

static void test_max_batch(void)
{
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
    char uids[MAX_BATCH + 1][DT_TRIAL_UID_LEN + 1];
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, make_batch(g_next_id++, MAX_BATCH + 1, NULL, 0.001,
                                                         uids)),
                    0);
    char msg[512];
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, msg, sizeof msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "at most 4"));
    cl_close(&c);
    check_serving();
}

static void test_invalid_batch(void)
{
    const char *bad[] = {
        "{\"id\":1,\"batch\":{\"workload\":\"nonsense(\",\"source\":\"\",\"trials\":[]}}",
        "{\"id\":\"one\",\"batch\":{}}",
        "{\"id\":2}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        client c;
        CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
        CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
        json_error_t jerr;
        CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, json_loads(bad[i], 0, &jerr)), 0);
        char msg[512];
        CU_ASSERT_TRUE(cl_wait_closed(&c, 5, msg, sizeof msg));
        CU_ASSERT_TRUE(msg[0] != '\0');
        cl_close(&c);
    }
    /* frames a client must not send */
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_RESULT, json_object()), 0);
    char msg[512];
    CU_ASSERT_TRUE(cl_wait_closed(&c, 5, msg, sizeof msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "unexpected RESULT"));
    cl_close(&c);
    check_serving();
}

static void test_connection_limit(void)
{
    enum { N = 64 };
    static client cs[N];
    dt_sleep_s(0.3); /* earlier connections finish closing */
    int opened = 0;
    for (int i = 0; i < N; i++) {
        if (cl_open(&cs[i]) != 0)
            break;
        json_t *h = cl_hello(&cs[i]);
        if (!h) {
            cl_close(&cs[i]);
            break;
        }
        json_decref(h);
        opened++;
    }
    CU_ASSERT_EQUAL(opened, N);
    client extra;
    CU_ASSERT_EQUAL_FATAL(cl_open(&extra), 0); /* accepted by the kernel, then closed */
    dt_msg_type t;
    json_t *p = NULL;
    CU_ASSERT_EQUAL(cl_recv(&extra, &t, &p, 5), 0);
    json_decref(p);
    cl_close(&extra);
    for (int i = 0; i < opened; i++)
        cl_close(&cs[i]);
    CU_ASSERT_TRUE(log_has("already 64 connections", 5));
    check_serving();
}

/* A second worker with a long auth time-out, full of connections that never
 * authenticate (the oldest one authenticated): a real client still gets in
 * within a moment, by evicting the oldest unauthenticated connection. */
static void test_unauthenticated_evicted(void)
{
    enum { N = 64 };
    char log[4300];
    snprintf(log, sizeof log, "%s/worker-evict.log", g_dir);
    const char *extra[] = {"--auth-timeout", "60", NULL};
    dt_test_worker_opts o = {.token_path = g_token_path, .log_path = log, .extra_args = extra,
                             .timeout_s = 30};
    pid_t pid = 0;
    int port = dt_test_start_worker(&o, &pid, NULL, 0);
    CU_ASSERT_FATAL(port > 0);
    int saved_port = g_port;
    g_port = port;
    static client cs[N];
    int opened = 0;
    for (int i = 0; i < N; i++) {
        if (cl_open(&cs[i]) != 0)
            break;
        if (i == 0) { /* authenticated: never evicted */
            if (cl_handshake(&cs[i]) != 0) {
                cl_close(&cs[i]);
                break;
            }
        } else {
            json_t *h = cl_hello(&cs[i]);
            if (!h) {
                cl_close(&cs[i]);
                break;
            }
            json_decref(h);
        }
        opened++;
        dt_sleep_s(0.002); /* distinct ages, in order */
    }
    CU_ASSERT_EQUAL(opened, N);
    dt_sleep_s(1.3); /* past the 1 s a fresh connection is spared for */

    /* a real client: in, authenticated and answered promptly */
    double t0 = dt_now_s();
    client c;
    CU_ASSERT_EQUAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL(cl_handshake(&c), 0);
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_PING, json_object()), 0);
    dt_msg_type t;
    json_t *p = NULL;
    CU_ASSERT_EQUAL(cl_recv(&c, &t, &p, 5), 1);
    CU_ASSERT_EQUAL(t, DT_MSG_PONG);
    json_decref(p);
    CU_ASSERT(dt_now_s() - t0 < 3.0);
    /* the victim was #1, the oldest unauthenticated connection */
    CU_ASSERT_TRUE(cl_wait_closed(&cs[1], 5, NULL, 0));
    CU_ASSERT_TRUE(log_has_in(log, "not authenticated after", 5));
    /* the authenticated #0 is still served */
    CU_ASSERT_EQUAL(cl_send(&cs[0], DT_MSG_PING, json_object()), 0);
    p = NULL;
    CU_ASSERT_EQUAL(cl_recv(&cs[0], &t, &p, 5), 1);
    CU_ASSERT_EQUAL(t, DT_MSG_PONG);
    json_decref(p);
    cl_close(&c);
    for (int i = 0; i < opened; i++)
        cl_close(&cs[i]);
    g_port = saved_port;
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_result_dropped(void)
{
    /* the client goes away while its batch runs: the result is dropped */
    client c;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
    long id = g_next_id++;
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, make_batch_of(SLOW_WORKLOAD, id, 2, NULL, 0.5, NULL)),
                    0);
    char queued[64];
    snprintf(queued, sizeof queued, "batch %ld (2 trials", id);
    CU_ASSERT_TRUE(log_has(queued, 10));
    cl_close(&c);
    char dropped[64];
    snprintf(dropped, sizeof dropped, "batch %ld finished after connection", id);
    int was_dropped = log_has(dropped, 60);
    CU_ASSERT_TRUE(was_dropped);
    if (!was_dropped)
        dump_log();
    check_serving();
}

static void test_sigterm_during_batch(void)
{
    client c, idle;
    CU_ASSERT_EQUAL_FATAL(cl_open(&c), 0);
    CU_ASSERT_EQUAL_FATAL(cl_handshake(&c), 0);
    CU_ASSERT_EQUAL_FATAL(cl_open(&idle), 0);
    CU_ASSERT_EQUAL_FATAL(cl_handshake(&idle), 0);
    /* a fresh source: the build alone takes a while */
    char extra[96];
    snprintf(extra, sizeof extra, "\n/* sigterm test %ld */\n", (long)time(NULL));
    char uids[2][DT_TRIAL_UID_LEN + 1];
    long id = g_next_id++;
    json_t *b = make_batch_of(SLOW_WORKLOAD, id, 2, extra, 0.5, uids);
    CU_ASSERT_EQUAL(cl_send(&c, DT_MSG_BATCH, b), 0);
    char queued[64];
    snprintf(queued, sizeof queued, "batch %ld (2 trials", id);
    CU_ASSERT_TRUE(log_has(queued, 10));
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(kill(g_pid, SIGTERM), 0);
    /* the idle connection is closed, new ones are not accepted */
    CU_ASSERT_TRUE(cl_wait_closed(&idle, 10, NULL, 0));
    cl_close(&idle);
    /* the running batch still answers, and it was running when the signal came */
    CU_ASSERT_EQUAL(expect_result(&c, id, 2, uids, 120), 2);
    CU_ASSERT_TRUE(log_has("stopping after the running batch", 1));
    CU_ASSERT_TRUE(dt_now_s() - t0 > 0.3);
    CU_ASSERT_TRUE(cl_wait_closed(&c, 10, NULL, 0));
    cl_close(&c);
    int st = 0;
    pid_t r = 0;
    while ((r = waitpid(g_pid, &st, WNOHANG)) == 0 && dt_now_s() - t0 < 60)
        dt_sleep_s(0.02);
    CU_ASSERT_EQUAL(r, g_pid);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (r == g_pid)
        g_pid = -1;
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        dump_log();
}

static void test_cli_errors(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "--token-file"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--token-file is required"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s' --max-batch 0", g_token_path),
                    1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s' --bogus", g_token_path), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s/none'", g_dir), 2);
    dt_test_proc_free(&p);
    char *open = dt_test_write_file(g_dir, "open-token", "0123456789abcdef0123456789\n");
    chmod(open, 0644);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s'", open), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "chmod 600"));
    dt_test_proc_free(&p);
    free(open);
    char *shorty = dt_test_write_file(g_dir, "short-token", "short\n");
    chmod(shorty, 0600);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s'", shorty), 2);
    dt_test_proc_free(&p);
    free(shorty);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s' --listen nonsense",
                                      g_token_path),
                    2);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s' --listen 127.0.0.1:99999",
                                      g_token_path),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad --listen address '127.0.0.1:99999'"));
    dt_test_proc_free(&p);
    /* the address is checked before the token file is read */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "worker --token-file '%s/none' --listen bogus", g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad --listen address 'bogus' (expected HOST:PORT)"));
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"HELLO and the handshake", test_hello_and_auth},
        {"a real batch measured", test_batch},
        {"wrong token refused", test_wrong_token},
        {"BATCH before AUTH closes", test_batch_before_auth},
        {"random bytes close", test_random_bytes},
        {"truncated frame closes", test_truncated_frame},
        {"1 GiB length prefix closes at once", test_gib_prefix},
        {"oversized frame before AUTH", test_oversized_before_auth},
        {"auth time-out", test_auth_timeout},
        {"batch over --max-batch", test_max_batch},
        {"invalid batches and frames", test_invalid_batch},
        {"connection limit", test_connection_limit},
        {"unauthenticated connections evicted at the limit", test_unauthenticated_evicted},
        {"result of a vanished client dropped", test_result_dropped},
        {"SIGTERM during a batch", test_sigterm_during_batch},
        {"CLI usage and token-file errors", test_cli_errors},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"worker", suite_setup, suite_teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
