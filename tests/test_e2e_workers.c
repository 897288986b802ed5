/* End-to-end: what a lying or silent worker can do to `dtune measure` and
 * `dtune tune` (the real binary), with fake workers in this process on
 * 127.0.0.1 (a thread speaking the wire protocol):
 *   - one that accepts TCP and never says a word: `dtune measure` ends in
 *     bounded time with exit 3 and a message saying the worker is silent;
 *   - one that authenticates, then never answers a batch nor a PING:
 *     dropped by the pool's silence limit (DTUNE_POOL_SILENT_S, small here),
 *     `dtune measure` ends with exit 3, nothing recorded as ok;
 *   - the same silent worker under `dtune tune --time 4s`: the time budget
 *     holds with the batch in flight;
 *   - one that answers every trial ok in 1e-12 ns or 1e-300 ns: recorded as
 *     worker faults (worker_lost, the worker and the value named), never
 *     ok; a local tune of that workload afterwards succeeds.
 * Every dtune run is bounded by `timeout`, so a regression fails instead of
 * hanging the suite. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/target.h"
#include "db/db.h"
#include "measure/trial.h"
#include "measure/wire.h"
#include "tests/dt_test.h"
#include "tests/dt_test_wire.h"

#define TOKEN "e2e-workers-token-0123456789abcdef"
#define KEY "dense(M=1..4,N=16,K=16)"

static char *g_dir;
static char *g_token_file;
static char g_target_key[DT_TARGET_KEY_MAX];

/* ---- fake workers ------------------------------------------------------------ */

enum {
    FAKE_MUTE,   /* accepts, never sends anything */
    FAKE_SILENT, /* HELLO, AUTH_OK, then nothing (no RESULT, no PONG) */
    FAKE_LIE,    /* answers every trial ok with min_ns = lie_ns */
};

typedef struct {
    int lfd, port, mode;
    double lie_ns;
    pthread_t th;
    pthread_mutex_t mu;
    int fds[64], nfds;
    int batches;
} fake_worker;

/* Serves one connection until the peer closes it. */
static void fake_serve(fake_worker *f, int fd)
{
    char junk[4096];
    if (f->mode == FAKE_MUTE) {
        while (recv(fd, junk, sizeof junk, 0) > 0)
            ;
        return;
    }
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    char wn[65], mac[65];
    dt_nonce_new(wn);
    fake_send(fd, DT_MSG_HELLO,
              json_pack("{s:s, s:s, s:s, s:s, s:i}", "worker", "fake", "target", g_target_key,
                        "nonce", wn, "version", "dtune " DTUNE_VERSION, "max_batch", 64));
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
        if (t != DT_MSG_BATCH || f->mode == FAKE_SILENT) {
            if (t == DT_MSG_BATCH) {
                pthread_mutex_lock(&f->mu);
                f->batches++;
                pthread_mutex_unlock(&f->mu);
            }
            json_decref(p);
            continue; /* silent: not even a PONG */
        }
        pthread_mutex_lock(&f->mu);
        f->batches++;
        pthread_mutex_unlock(&f->mu);
        dt_batch b;
        json_int_t id = json_integer_value(json_object_get(p, "id"));
        if (dt_batch_from_json(json_object_get(p, "batch"), &b, NULL) == 0) {
            json_t *res = json_array();
            for (int i = 0; i < b.ntrials; i++) {
                dt_trial_result r = {.status = DT_TRIAL_OK, .min_ns = f->lie_ns,
                                     .median_ns = f->lie_ns, .repeats = 3};
                memcpy(r.uid, b.trials[i].uid, sizeof r.uid);
                json_array_append_new(res, dt_trial_result_to_json(&r));
            }
            fake_send(fd, DT_MSG_RESULT, json_pack("{s:I, s:o}", "id", id, "results", res));
            dt_batch_free(&b);
        }
        json_decref(p);
    }
    dt_wire_decoder_free(&d);
}

typedef struct {
    fake_worker *f;
    int fd;
} conn_arg;

static void *conn_main(void *arg)
{
    conn_arg *a = arg;
    fake_serve(a->f, a->fd);
    free(a);
    return NULL;
}

static void *fake_main(void *arg)
{
    fake_worker *f = arg;
    for (;;) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            break;
        pthread_mutex_lock(&f->mu);
        if (f->nfds == (int)(sizeof f->fds / sizeof f->fds[0])) {
            pthread_mutex_unlock(&f->mu);
            close(fd);
            continue;
        }
        f->fds[f->nfds++] = fd;
        pthread_mutex_unlock(&f->mu);
        conn_arg *a = malloc(sizeof *a);
        a->f = f;
        a->fd = fd;
        pthread_t th;
        pthread_create(&th, NULL, conn_main, a);
        pthread_detach(th);
    }
    return NULL;
}

static void fake_start(fake_worker *f, int mode, double lie_ns)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->lie_ns = lie_ns;
    pthread_mutex_init(&f->mu, NULL);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CU_ASSERT_FATAL(f->lfd >= 0 && bind(f->lfd, (struct sockaddr *)&a, sizeof a) == 0 &&
                    listen(f->lfd, 16) == 0 &&
                    getsockname(f->lfd, (struct sockaddr *)&a, &len) == 0);
    f->port = ntohs(a.sin_port);
    pthread_create(&f->th, NULL, fake_main, f);
}

/* Closes the listener and every connection; the detached connection threads
 * end on their own (they only touch f->mu, which stays valid: f is static
 * storage of the test until the process ends). */
static void fake_stop(fake_worker *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->lfd);
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nfds; i++)
        shutdown(f->fds[i], SHUT_RDWR);
    pthread_mutex_unlock(&f->mu);
    usleep(100 * 1000);
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nfds; i++)
        close(f->fds[i]);
    f->nfds = 0;
    pthread_mutex_unlock(&f->mu);
}

/* ---- running dtune with a time limit --------------------------------------------- */

/* Runs `timeout LIMIT DTUNE_BIN args` with stdout / stderr captured; the
 * exit code (124 when the limit killed it) and the seconds it took. */
static int run_bounded(double limit_s, double *took, char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int run_bounded(double limit_s, double *took, char **out, char **err, const char *fmt, ...)
{
    char args[4096], cmd[16384], op[4200], ep[4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(op, sizeof op, "%s/run.out", g_dir);
    snprintf(ep, sizeof ep, "%s/run.err", g_dir);
    snprintf(cmd, sizeof cmd, "timeout -s KILL %.0f '%s' %s >'%s' 2>'%s' </dev/null", limit_s,
             DTUNE_BIN, args, op, ep);
    double t0 = dt_now_s();
    int st = system(cmd);
    *took = dt_now_s() - t0;
    *out = dt_test_slurp(op);
    *err = dt_test_slurp(ep);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (code == 137)
        code = 124; /* killed by timeout -s KILL */
    return code;
}

typedef struct {
    int64_t ok, lost, other;
    char lost_error[512];
} db_tally;

static int tally_row(const dt_db_measurement *m, void *ud)
{
    db_tally *t = ud;
    if (m->status == DT_TRIAL_OK)
        t->ok++;
    else if (m->status == DT_TRIAL_WORKER_LOST) {
        t->lost++;
        snprintf(t->lost_error, sizeof t->lost_error, "%s", m->error ? m->error : "");
    } else
        t->other++;
    return 0;
}

static db_tally count_db(const char *path)
{
    db_tally t = {0};
    dt_db *db = NULL;
    dt_err e;
    if (dt_db_open(path, DT_DB_READONLY, &db, &e) != 0)
        return t;
    dt_db_measurement_filter all = {0};
    dt_db_measurement_list(db, &all, tally_row, &t, &e);
    dt_db_close(db);
    return t;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_measure_mute_worker(void)
{
    static fake_worker f;
    fake_start(&f, FAKE_MUTE, 0);
    setenv("DTUNE_POOL_SILENT_S", "1", 1);
    double took;
    char *out, *err;
    int code = run_bounded(60, &took, &out, &err,
                           "measure '" KEY "' --sample 1 --shapes '{1,2}' --db '%s/mute.db' "
                           "--workers 127.0.0.1:%d --token-file '%s'",
                           g_dir, f.port, g_token_file);
    unsetenv("DTUNE_POOL_SILENT_S");
    if (code != 3 || took > 15)
        fprintf(stderr, "\n  exit %d after %.1f s: %s\n", code, took, err);
    CU_ASSERT_EQUAL(code, 3);
    CU_ASSERT(took < 15);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "silent"));
    fake_stop(&f);
    free(out);
    free(err);
}

static void test_measure_silent_worker(void)
{
    static fake_worker f;
    fake_start(&f, FAKE_SILENT, 0);
    setenv("DTUNE_POOL_SILENT_S", "1", 1);
    double took;
    char *out, *err;
    char db[4200];
    snprintf(db, sizeof db, "%s/silent.db", g_dir);
    int code = run_bounded(60, &took, &out, &err,
                           "measure '" KEY "' --sample 1 --shapes '{1,2}' --db '%s' "
                           "--workers 127.0.0.1:%d --token-file '%s'",
                           db, f.port, g_token_file);
    unsetenv("DTUNE_POOL_SILENT_S");
    if (code != 3 || took > 15)
        fprintf(stderr, "\n  exit %d after %.1f s: %s\n", code, took, err);
    CU_ASSERT_EQUAL(code, 3);
    CU_ASSERT(took < 15);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "silent"));
    CU_ASSERT(f.batches >= 1);
    db_tally t = count_db(db);
    CU_ASSERT_EQUAL(t.ok, 0);
    fake_stop(&f);
    free(out);
    free(err);
}

/* The time budget holds while a batch is in flight on a worker that never
 * answers (the silence limit stays at its default, far beyond the budget). */
static void test_tune_time_budget_silent_worker(void)
{
    static fake_worker f;
    fake_start(&f, FAKE_SILENT, 0);
    double took;
    char *out, *err;
    char db[4200];
    snprintf(db, sizeof db, "%s/tune-silent.db", g_dir);
    int code = run_bounded(90, &took, &out, &err,
                           "tune '" KEY "' --time 4s --threads 1 --db '%s' "
                           "--workers 127.0.0.1:%d --token-file '%s'",
                           db, f.port, g_token_file);
    if (code == 0 || code == 124 || took > 20)
        fprintf(stderr, "\n  exit %d after %.1f s: %s\n", code, took, err);
    CU_ASSERT(code != 0 && code != 124);
    CU_ASSERT(took < 20);
    db_tally t = count_db(db);
    CU_ASSERT_EQUAL(t.ok, 0);
    fake_stop(&f);
    free(out);
    free(err);
}

static void lying_worker(double lie_ns, const char *lie_text)
{
    static fake_worker f;
    fake_start(&f, FAKE_LIE, lie_ns);
    double took;
    char *out, *err;
    char db[4200];
    snprintf(db, sizeof db, "%s/lie-%s.db", g_dir, lie_text);
    int code = run_bounded(60, &took, &out, &err,
                           "measure '" KEY "' --sample 2 --shapes '{1,3}' --db '%s' "
                           "--workers 127.0.0.1:%d --token-file '%s'",
                           db, f.port, g_token_file);
    /* nothing was measured: a runtime failure */
    if (code != 3)
        fprintf(stderr, "\n  exit %d after %.1f s: %s\n", code, took, err);
    CU_ASSERT_EQUAL(code, 3);
    db_tally t = count_db(db);
    CU_ASSERT_EQUAL(t.ok, 0);
    CU_ASSERT(t.lost >= 4);
    char port[32];
    snprintf(port, sizeof port, "127.0.0.1:%d", f.port);
    if (!strstr(t.lost_error, "impossible") || !strstr(t.lost_error, port) ||
        !strstr(t.lost_error, lie_text))
        fprintf(stderr, "\n  recorded error: %s\n", t.lost_error);
    CU_ASSERT_PTR_NOT_NULL(strstr(t.lost_error, "impossible"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.lost_error, port));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.lost_error, lie_text));
    fake_stop(&f);
    free(out);
    free(err);

    /* a local tune of the same workload in the same database works */
    code = run_bounded(120, &took, &out, &err,
                       "tune '" KEY "' --trials 12 --threads 1 --min-time 0.5 --db '%s'", db);
    if (code != 0)
        fprintf(stderr, "\n  local tune: exit %d: %s\n", code, err);
    CU_ASSERT_EQUAL(code, 0);
    free(out);
    free(err);
}

static void test_lying_worker_tiny(void) { lying_worker(1e-12, "1e-12"); }
static void test_lying_worker_denormal(void) { lying_worker(1e-300, "1e-300"); }

int main(void)
{
    dt_err e;
    dt_target tg;
    if (dt_target_detect_key(&tg, g_target_key, sizeof g_target_key, &e)) {
        fprintf(stderr, "no target: %s\n", e.msg);
        return 1;
    }
    g_dir = dt_test_tmpdir_with_cache();
    if (!g_dir)
        return 1;
    g_token_file = dt_test_write_file(g_dir, "token", TOKEN "\n");
    chmod(g_token_file, 0600);
    signal(SIGPIPE, SIG_IGN);
    CU_TestInfo tests[] = {
        {"a worker that never speaks: measure exits 3, bounded", test_measure_mute_worker},
        {"a worker silent after auth: measure exits 3, bounded", test_measure_silent_worker},
        {"tune --time holds with a batch in flight on a silent worker",
         test_tune_time_budget_silent_worker},
        {"ok in 1e-12 ns: a worker fault, never ok; tune afterwards works",
         test_lying_worker_tiny},
        {"ok in 1e-300 ns: a worker fault, never ok; tune afterwards works",
         test_lying_worker_denormal},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"lying and silent workers", NULL, NULL, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    dt_test_rmtree(g_dir);
    free(g_dir);
    free(g_token_file);
    return rc;
}
