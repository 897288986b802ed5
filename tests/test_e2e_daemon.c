/* End-to-end: the real `dtune daemon` over real sockets — a job submitted
 * over HTTP runs to done, its schedule is queried and its kernel's source
 * fetched; malformed JSON, unknown routes, wrong methods, oversized bodies
 * and a client sending one byte a second are each answered and the daemon
 * lives on; 256 idle connections do not lock a client out; kill -9 in the
 * middle of a job, a restart, and the job completes with an intact database
 * and no record lost; a second daemon on the same database is refused and
 * names the first one's pid; SIGTERM exits 0, a second SIGTERM during the
 * stop exits at once with 143 and a restart resumes the job; a model job on a tight budget
 * reports which workloads got schedules, and one below the minimum budget
 * fails saying so. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db/db.h"
#include "common/clock.h"
#include "tests/dt_test.h"

#define KEY "dense(M=1..32,N=128,K=128)"
#define KEY_Q "dense(M=1..32,N=128,K=128)" /* no character needs escaping */

static char *g_dir;

static int setup(void)
{
    g_dir = dt_test_tmpdir_with_cache();
    if (!g_dir)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

/* ---- the daemon as a child process -------------------------------------------------- */

typedef struct {
    pid_t pid;
    int port;
} daemon_proc;

/* Starts `dtune daemon --db DB --listen 127.0.0.1:0 ...` in its own process
 * group; waits for its ready line on stdout.  0 or -1. */
static const char *g_max_body = "65536"; /* --max-body of the daemons started */

static int start_daemon(daemon_proc *d, const char *db, const char *tag)
{
    char out[4096], log[4096];
    snprintf(out, sizeof out, "%s/%s.out", g_dir, tag);
    snprintf(log, sizeof log, "%s/%s.log", g_dir, tag);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int fl = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    d->port = -1;
    d->pid = fork();
    if (d->pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        dup2(fo, 1);
        dup2(fl, 2);
        setenv("DTUNE_LOG", "info", 1);
        execl(DTUNE_BIN, DTUNE_BIN, "daemon", "--db", db, "--listen", "127.0.0.1:0", "--threads",
              "1", "--request-timeout", "2", "--max-body", g_max_body, (char *)NULL);
        _exit(127);
    }
    close(fo);
    close(fl);
    if (d->pid < 0)
        return -1;
    static const char ready[] = "dtune daemon listening on 127.0.0.1:";
    double t0 = dt_now_s();
    while (dt_now_s() - t0 < 20) {
        char *text = dt_test_slurp(out);
        const char *at = strstr(text, ready);
        if (at)
            d->port = atoi(at + strlen(ready));
        free(text);
        if (d->port > 0)
            return 0;
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
            d->pid = 0;
            return -1;
        }
        dt_sleep_ms(50);
    }
    return -1;
}

/* Runs `dtune daemon --db DB --listen 127.0.0.1:0` expecting it to exit
 * within timeout_s (it is killed otherwise); its exit status (-1 when it had
 * to be killed), *err its stderr (malloc'ed). */
static int run_daemon_to_exit(const char *db, const char *tag, double timeout_s, char **err)
{
    char log[4096];
    snprintf(log, sizeof log, "%s/%s.log", g_dir, tag);
    int fl = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(fl, 2);
        execl(DTUNE_BIN, DTUNE_BIN, "daemon", "--db", db, "--listen", "127.0.0.1:0", "--threads",
              "1", (char *)NULL);
        _exit(127);
    }
    close(fl);
    int st = 0, code = -1;
    double t0 = dt_now_s();
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        if (dt_now_s() - t0 > timeout_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        dt_sleep_ms(20);
    }
    *err = dt_test_slurp(log);
    return code;
}

/* SIGTERM (or SIGKILL to the whole group) and wait; the exit status. */
static int stop_daemon(daemon_proc *d, int sig)
{
    if (d->pid <= 0)
        return -1;
    if (sig == SIGKILL)
        kill(-d->pid, SIGKILL);
    else
        kill(d->pid, sig);
    int st = 0;
    waitpid(d->pid, &st, 0);
    d->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- a minimal HTTP client ------------------------------------------------------------ */

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one response (up to its Content-Length, or EOF); status or -1.
 * *body (may be NULL) receives it malloc'ed. */
static int read_response(int fd, char **body)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    int status = -1;
    for (;;) {
        if (len == cap)
            buf = realloc(buf, (cap *= 2) + 1);
        ssize_t r = recv(fd, buf + len, cap - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = 0;
        char *hend = strstr(buf, "\r\n\r\n");
        if (hend) {
            const char *cl = strcasestr(buf, "\r\ncontent-length:");
            if (cl && cl < hend &&
                len >= (size_t)(hend + 4 - buf) + strtoul(cl + 17, NULL, 10))
                break;
        }
    }
    buf[len] = 0;
    if (len > 12 && strncmp(buf, "HTTP/1.1 ", 9) == 0)
        status = atoi(buf + 9);
    char *hend = strstr(buf, "\r\n\r\n");
    if (body)
        *body = strdup(hend ? hend + 4 : "");
    free(buf);
    return status;
}

/* One request on a new connection; the status, or -1.  body_out may be NULL. */
static int http(int port, const char *method, const char *path, const char *body, char **body_out)
{
    int fd = connect_port(port);
    if (fd < 0)
        return -1;
    char head[8192];
    size_t bl = body ? strlen(body) : 0;
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, bl);
    int status = -1;
    if (send(fd, head, (size_t)hl, 0) == hl && (!bl || send(fd, body, bl, 0) == (ssize_t)bl))
        status = read_response(fd, body_out);
    close(fd);
    return status;
}

static json_t *http_json(int port, const char *method, const char *path, const char *body,
                         int *status)
{
    char *out = NULL;
    *status = http(port, method, path, body, &out);
    json_error_t jerr;
    json_t *v = out ? json_loads(out, 0, &jerr) : NULL;
    free(out);
    return v;
}

/* The error body's message, or "" when the body is not a JSON error. */
static int is_error_body(json_t *v, int status)
{
    json_t *err = json_object_get(v, "error");
    return json_is_object(err) && json_integer_value(json_object_get(err, "status")) == status &&
           json_is_string(json_object_get(err, "message"));
}

/* Polls GET /v1/jobs/{id} until its state is one of the ended ones; the
 * final job (caller decrefs) or NULL after timeout_s. */
static json_t *wait_job(int port, int64_t id, double timeout_s)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    double t0 = dt_now_s();
    while (dt_now_s() - t0 < timeout_s) {
        int st;
        json_t *j = http_json(port, "GET", path, NULL, &st);
        const char *s = json_string_value(json_object_get(j, "state"));
        if (st == 200 && s && (!strcmp(s, "done") || !strcmp(s, "failed") || !strcmp(s, "cancelled")))
            return j;
        json_decref(j);
        dt_sleep_ms(200);
    }
    return NULL;
}

/* ---- tests ------------------------------------------------------------------------------- */

static daemon_proc g_d;

static void test_job_query_source(void)
{
    char db[4096];
    snprintf(db, sizeof db, "%s/a.db", g_dir);
    CU_ASSERT_EQUAL_FATAL(start_daemon(&g_d, db, "a"), 0);
    int st;
    json_t *h = http_json(g_d.port, "GET", "/healthz", NULL, &st);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(h, "status")), "ok");
    json_decref(h);

    json_t *r = http_json(g_d.port, "POST", "/v1/jobs",
                          "{\"workload\": \"" KEY "\", \"trials\": 24, \"threads\": 1, "
                          "\"min_time_ms\": 0.5}",
                          &st);
    CU_ASSERT_EQUAL_FATAL(st, 202);
    int64_t id = json_integer_value(json_object_get(r, "id"));
    CU_ASSERT(id > 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r, "state")), "queued");
    json_decref(r);

    json_t *j = wait_job(g_d.port, id, 90);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "state")), "done");
    json_t *p = json_object_get(j, "progress");
    CU_ASSERT(json_integer_value(json_object_get(p, "trials")) > 0);
    CU_ASSERT(json_integer_value(json_object_get(p, "trials")) <= 24);
    json_t *w = json_array_get(json_object_get(p, "workloads"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "workload")), KEY);
    CU_ASSERT(json_integer_value(json_object_get(json_object_get(w, "selected"), "ranges")) >= 1);
    /* the tuning curve: a point per round */
    CU_ASSERT(dt_test_check_curve(json_object_get(p, "curve"), 24) >= 1);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(p, "curve")),
                    (size_t)json_integer_value(json_object_get(p, "rounds")));
    json_decref(j);

    /* the list has it */
    json_t *l = http_json(g_d.port, "GET", "/v1/jobs?state=done", NULL, &st);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(l, "jobs")), 1);
    json_decref(l);

    /* a schedule in the tuned range, and one beyond it */
    json_t *q = http_json(g_d.port, "GET", "/v1/schedules?workload=" KEY_Q "&M=7", NULL, &st);
    CU_ASSERT_EQUAL_FATAL(st, 200);
    int64_t kid = json_integer_value(json_object_get(q, "kernel_id"));
    CU_ASSERT(kid > 0);
    CU_ASSERT_TRUE(json_is_false(json_object_get(q, "extrapolated")));
    CU_ASSERT_TRUE(json_is_object(json_object_get(q, "annotation")));
    CU_ASSERT_TRUE(json_is_number(json_object_get(q, "predicted_ns")) ||
                   json_is_number(json_object_get(q, "measured_ns")));
    json_decref(q);
    /* vars[NAME]= names a variable whatever its name (a variable called
     * workload, target or threads could not be given otherwise: issue 42) */
    static const char *const spelled[] = {"/v1/schedules?workload=" KEY_Q "&vars[M]=7",
                                          "/v1/schedules?vars%5BM%5D=7&workload=" KEY_Q};
    for (int k = 0; k < 2; k++) {
        q = http_json(g_d.port, "GET", spelled[k], NULL, &st);
        CU_ASSERT_EQUAL(st, 200);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(q, "kernel_id")), kid);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(q, "shape")), "M=7");
        json_decref(q);
    }
    q = http_json(g_d.port, "GET", "/v1/schedules?workload=" KEY_Q "&vars[threads]=7", NULL, &st);
    CU_ASSERT_EQUAL(st, 400); /* a variable of that name: this workload has none */
    CU_ASSERT_TRUE(is_error_body(q, 400));
    json_decref(q);
    q = http_json(g_d.port, "GET", "/v1/schedules?workload=" KEY_Q "&M=500&threads=1", NULL, &st);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT_TRUE(json_is_true(json_object_get(q, "extrapolated")));
    json_decref(q);
    q = http_json(g_d.port, "GET", "/v1/schedules?workload=dense(M=1..8,N=8,K=8)&M=3", NULL, &st);
    CU_ASSERT_EQUAL(st, 404);
    CU_ASSERT_TRUE(is_error_body(q, 404));
    json_decref(q);

    /* its kernel's C source */
    char path[128], *src = NULL;
    snprintf(path, sizeof path, "/v1/kernels/%lld/source", (long long)kid);
    CU_ASSERT_EQUAL(http(g_d.port, "GET", path, NULL, &src), 200);
    CU_ASSERT(src && strstr(src, "dtune micro-kernel"));
    free(src);
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/v1/kernels/999999/source", NULL, NULL), 404);

    json_t *ws = http_json(g_d.port, "GET", "/v1/workloads", NULL, &st);
    CU_ASSERT_EQUAL(st, 200);
    CU_ASSERT(json_array_size(json_object_get(ws, "workloads")) >= 1);
    json_decref(ws);

    char *m = NULL;
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/metrics", NULL, &m), 200);
    CU_ASSERT(m && strstr(m, "dtune_jobs{state=\"done\"} 1"));
    /* M=7 and its two vars[M]=7 spellings */
    CU_ASSERT(m && strstr(m, "dtune_schedule_queries_total{result=\"hit\"} 3"));
    CU_ASSERT(m && strstr(m, "dtune_http_request_duration_seconds_bucket"));
    CU_ASSERT(m && !strstr(m, "dtune_trials_total 0\n"));
    free(m);
}

static void test_bad_requests(void)
{
    CU_ASSERT_FATAL(g_d.pid > 0);
    int st;
    json_t *v = http_json(g_d.port, "POST", "/v1/jobs", "{\"workload\": ", &st);
    CU_ASSERT_EQUAL(st, 400);
    CU_ASSERT_TRUE(is_error_body(v, 400));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
               "malformed JSON"));
    json_decref(v);
    v = http_json(g_d.port, "POST", "/v1/jobs", "{\"workload\": \"" KEY "\", \"trials\": \"9\"}",
                  &st);
    CU_ASSERT_EQUAL(st, 400);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
               "trials: must be an integer"));
    json_decref(v);
    v = http_json(g_d.port, "POST", "/v1/jobs", "{\"workload\": \"dense(M=0..4)\"}", &st);
    CU_ASSERT_EQUAL(st, 400);
    json_decref(v);

    v = http_json(g_d.port, "GET", "/v1/nothing", NULL, &st);
    CU_ASSERT_EQUAL(st, 404);
    CU_ASSERT_TRUE(is_error_body(v, 404));
    json_decref(v);
    v = http_json(g_d.port, "PUT", "/v1/jobs", "{}", &st);
    CU_ASSERT_EQUAL(st, 405);
    CU_ASSERT_TRUE(is_error_body(v, 405));
    json_decref(v);
    v = http_json(g_d.port, "DELETE", "/v1/jobs/424242", NULL, &st);
    CU_ASSERT_EQUAL(st, 404);
    json_decref(v);

    /* a body over --max-body 65536: refused from its Content-Length */
    int fd = connect_port(g_d.port);
    CU_ASSERT_FATAL(fd >= 0);
    const char head[] = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n";
    CU_ASSERT_EQUAL(send(fd, head, strlen(head), 0), (ssize_t)strlen(head));
    char *body = NULL;
    CU_ASSERT_EQUAL(read_response(fd, &body), 413);
    json_error_t jerr;
    json_t *eb = json_loads(body ? body : "", 0, &jerr);
    CU_ASSERT_TRUE(is_error_body(eb, 413));
    json_decref(eb);
    free(body);
    close(fd);

    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/healthz", NULL, NULL), 200);
}

/* As many idle connections as the daemon takes (256), some after a
 * keep-alive request and some silent: a new client is still answered at
 * once, because the connection idle longest makes room (docs/http.md). */
static void test_idle_connections(void)
{
    enum { N = 256 };
    CU_ASSERT_FATAL(g_d.pid > 0);
    static int fds[N];
    int opened = 0;
    for (int i = 0; i < N; i++) {
        fds[i] = connect_port(g_d.port);
        if (fds[i] < 0)
            break;
        opened++;
        if (i % 8 == 0) { /* a keep-alive request, answered, then silence */
            const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
            CU_ASSERT_EQUAL(send(fds[i], req, strlen(req), 0), (ssize_t)strlen(req));
            CU_ASSERT_EQUAL(read_response(fds[i], NULL), 200);
        }
    }
    CU_ASSERT_EQUAL_FATAL(opened, N);
    dt_sleep_ms(1300); /* past the 1 s an idle connection is spared for */
    double t0 = dt_now_s();
    char *m = NULL;
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/metrics", NULL, &m), 200);
    CU_ASSERT(dt_now_s() - t0 < 5.0);
    /* the daemon was full when it answered */
    const char *open_line = m ? strstr(m, "\ndtune_http_connections_open ") : NULL;
    CU_ASSERT_PTR_NOT_NULL(open_line);
    if (open_line)
        CU_ASSERT(atoi(open_line + strlen("\ndtune_http_connections_open ")) >= N);
    free(m);
    /* and again: another idle connection makes room */
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/healthz", NULL, NULL), 200);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    dt_sleep_ms(200);
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/healthz", NULL, NULL), 200);
}

/* DELETE of a running job: it stops at its next round boundary, becomes
 * cancelled, and what it measured is kept (its schedule is stored). */
/* A hostile job body: a workload key nested 100,000 deep (200 KB, under a
 * 1 MiB --max-body) once killed the daemon by stack overflow.  Now it is a
 * 400 saying why, and the daemon goes on answering. */
static void test_deep_body(void)
{
    char db[4096];
    snprintf(db, sizeof db, "%s/deep.db", g_dir);
    daemon_proc d;
    g_max_body = "1048576";
    int started = start_daemon(&d, db, "deep");
    g_max_body = "65536";
    CU_ASSERT_EQUAL_FATAL(started, 0);
    const int n = 100000;
    /* parentheses, unary minus and a chain of binary '-' (a run of '+' or
     * '*' is one flat n-ary node since 91548b1, so no longer deep: below) */
    const char *pieces[][3] = {{"(", "8", ")"}, {"-", "8", ""}, {"1-", "1", ""}};
    for (int k = 0; k < 3; k++) {
        size_t lo = strlen(pieces[k][0]), lc = strlen(pieces[k][2]);
        char *body = malloc((size_t)n * (lo + lc) + 128), *q = body;
        q += sprintf(q, "{\"workload\": \"dense(M=1..4,N=");
        for (int i = 0; i < n; i++, q += lo)
            memcpy(q, pieces[k][0], lo);
        q += sprintf(q, "%s", pieces[k][1]);
        for (int i = 0; i < n; i++, q += lc)
            memcpy(q, pieces[k][2], lc);
        sprintf(q, ",K=8)\", \"trials\": 1}");
        int st = 0;
        json_t *v = http_json(d.port, "POST", "/v1/jobs", body, &st);
        CU_ASSERT_EQUAL(st, 400);
        CU_ASSERT_TRUE(is_error_body(v, 400));
        const char *msg = json_string_value(json_object_get(json_object_get(v, "error"), "message"));
        CU_ASSERT(msg && strstr(msg, "nested too deeply"));
        json_decref(v);
        free(body);
        CU_ASSERT_EQUAL(http(d.port, "GET", "/healthz", NULL, NULL), 200);
    }
    /* 100,000 terms of one '+' run: answered (a key or a 400), the daemon lives */
    char *body = malloc((size_t)n * 2 + 128), *q = body;
    q += sprintf(q, "{\"workload\": \"dense(M=1..4,N=");
    for (int i = 0; i < n; i++, q += 2)
        memcpy(q, "1+", 2);
    sprintf(q, "1,K=8)\", \"trials\": 1}");
    int st = 0;
    json_t *v = http_json(d.port, "POST", "/v1/jobs", body, &st);
    CU_ASSERT(st == 202 || (st == 400 && is_error_body(v, 400)));
    json_decref(v);
    free(body);
    CU_ASSERT_EQUAL(http(d.port, "GET", "/healthz", NULL, NULL), 200);
    CU_ASSERT_EQUAL(stop_daemon(&d, SIGTERM), 0);
}

static void test_cancel_running(void)
{
    CU_ASSERT_FATAL(g_d.pid > 0);
    int st;
    json_t *r = http_json(g_d.port, "POST", "/v1/jobs",
                          "{\"workload\": \"dense(M=1..20,N=96,K=64)\", \"trials\": 5000, "
                          "\"threads\": 1, \"min_time_ms\": 0.5}",
                          &st);
    CU_ASSERT_EQUAL_FATAL(st, 202);
    int64_t id = json_integer_value(json_object_get(r, "id"));
    json_decref(r);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    int64_t trials = 0;
    for (double t0 = dt_now_s(); dt_now_s() - t0 < 60 && trials < 10;) {
        json_t *j = http_json(g_d.port, "GET", path, NULL, &st);
        trials = json_integer_value(json_object_get(json_object_get(j, "progress"), "trials"));
        json_decref(j);
        dt_sleep_ms(100);
    }
    CU_ASSERT(trials >= 10);
    json_t *c = http_json(g_d.port, "DELETE", path, NULL, &st);
    CU_ASSERT_EQUAL(st, 202);
    CU_ASSERT_TRUE(json_is_true(json_object_get(c, "cancel_requested")));
    json_decref(c);
    json_t *j = wait_job(g_d.port, id, 60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "state")), "cancelled");
    CU_ASSERT(json_integer_value(json_object_get(json_object_get(j, "progress"), "trials")) < 5000);
    json_decref(j);
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/v1/schedules?workload=dense(M=1..20,N=96,K=64)&M=3",
                         NULL, NULL),
                    200);
    json_t *again = http_json(g_d.port, "DELETE", path, NULL, &st);
    CU_ASSERT_EQUAL(st, 200); /* cancelled already: the same answer */
    json_decref(again);
}

/* A model job on a tight budget: done, and GET /v1/jobs/{id} reports which
 * workloads got a schedule; a budget below the minimum ends failed, saying
 * the minimum. */
static void test_model_job_report(void)
{
    CU_ASSERT_FATAL(g_d.pid > 0);
    static const char model[] =
        "{\"name\": \"tiny\", \"variables\": {\"seq\": {\"range\": [1, 6]}}, \"ops\": ["
        "{\"name\": \"proj\", \"op\": \"dense\", \"M\": \"seq\", \"N\": 32, \"K\": 16}, "
        "{\"name\": \"scores\", \"op\": \"batch_matmul\", \"B\": 2, \"M\": \"seq\", \"N\": "
        "\"seq\", \"K\": 8, \"layout\": \"NT\"}]}";
    char body[2048];
    snprintf(body, sizeof body,
             "{\"model\": %s, \"trials\": 4, \"threads\": 1, \"min_time_ms\": 0.5}", model);
    int st;
    json_t *r = http_json(g_d.port, "POST", "/v1/jobs", body, &st);
    CU_ASSERT_EQUAL_FATAL(st, 202);
    int64_t id = json_integer_value(json_object_get(r, "id"));
    json_decref(r);
    json_t *j = wait_job(g_d.port, id, 120);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "state")), "done");
    CU_ASSERT_TRUE(json_is_null(json_object_get(j, "error")));
    json_t *p = json_object_get(j, "progress");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "workloads_scheduled")), 2);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "workloads_skipped")), 0);
    CU_ASSERT(json_integer_value(json_object_get(p, "trials")) <= 4);
    json_t *w;
    size_t i;
    json_array_foreach(json_object_get(p, "workloads"), i, w) {
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(w, "outcome")), "scheduled");
        CU_ASSERT_TRUE(json_is_null(json_object_get(w, "skip_reason")));
        CU_ASSERT(json_integer_value(json_object_get(json_object_get(w, "selected"), "ranges")) >=
                  1);
    }
    CU_ASSERT_EQUAL(json_array_size(json_object_get(p, "workloads")), 2);
    json_decref(j);
    /* the list keeps the counts */
    json_t *l = http_json(g_d.port, "GET", "/v1/jobs?state=done", NULL, &st);
    json_t *lj;
    int seen = 0;
    json_array_foreach(json_object_get(l, "jobs"), i, lj)
        if (json_integer_value(json_object_get(lj, "id")) == id) {
            seen = 1;
            CU_ASSERT_EQUAL(json_integer_value(json_object_get(
                                json_object_get(lj, "progress"), "workloads_scheduled")),
                            2);
        }
    CU_ASSERT_TRUE(seen);
    json_decref(l);

    /* 3 trials for 2 workloads with no records yet (seq 1..5: other
     * workloads than above): below the minimum of 2 each */
    snprintf(body, sizeof body,
             "{\"model\": %s, \"trials\": 3, \"threads\": 1, \"min_time_ms\": 0.5}", model);
    char *at = strstr(body, "[1, 6]");
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    memcpy(at, "[1, 5]", 6);
    r = http_json(g_d.port, "POST", "/v1/jobs", body, &st);
    CU_ASSERT_EQUAL_FATAL(st, 202);
    id = json_integer_value(json_object_get(r, "id"));
    json_decref(r);
    j = wait_job(g_d.port, id, 60);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "state")), "failed");
    const char *err = json_string_value(json_object_get(j, "error"));
    CU_ASSERT(err && strstr(err, "at least 4"));
    json_decref(j);
}

/* One byte a second: the request time-out (2 s here) answers or closes it,
 * while other clients are served all along. */
static void test_slow_client(void)
{
    CU_ASSERT_FATAL(g_d.pid > 0);
    int fd = connect_port(g_d.port);
    CU_ASSERT_FATAL(fd >= 0);
    const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    double t0 = dt_now_s();
    int ended = 0, status = 0;
    for (size_t i = 0; i < strlen(req) && !ended; i++) {
        if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1) {
            ended = 1;
            break;
        }
        /* meanwhile a normal client is served */
        CU_ASSERT_EQUAL(http(g_d.port, "GET", "/healthz", NULL, NULL), 200);
        double t1 = dt_now_s();
        while (dt_now_s() - t1 < 1.0 && !ended) {
            char buf[512];
            ssize_t r = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                ended = 1;
            } else if (r > 0) {
                buf[r] = 0;
                if (strncmp(buf, "HTTP/1.1 ", 9) == 0)
                    status = atoi(buf + 9);
                ended = 1;
            } else {
                dt_sleep_ms(50);
            }
        }
    }
    double took = dt_now_s() - t0;
    close(fd);
    CU_ASSERT_TRUE(ended);
    CU_ASSERT(took < 8);
    CU_ASSERT(status == 0 || status == 408);
    CU_ASSERT_EQUAL(http(g_d.port, "GET", "/healthz", NULL, NULL), 200);
    /* SIGTERM: a clean exit */
    CU_ASSERT_EQUAL(stop_daemon(&g_d, SIGTERM), 0);
}

static int integrity_ok(const char *path)
{
    sqlite3 *s = NULL;
    int ok = 0;
    if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            ok = strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
        sqlite3_finalize(st);
    }
    sqlite3_close(s);
    return ok;
}

/* POSTs a job body to the daemon on port (202 expected, else -1) and waits up
 * to 60 s until the database has at least `records` records; *n gets the
 * count reached.  Returns the job id. */
static int64_t submit_and_wait_records(int port, const char *db, const char *body,
                                       int64_t records, int64_t *n)
{
    int st;
    json_t *r = http_json(port, "POST", "/v1/jobs", body, &st);
    int64_t id = st == 202 ? json_integer_value(json_object_get(r, "id")) : -1;
    json_decref(r);
    *n = 0;
    for (int i = 0; id >= 0 && i < 1200 && *n < records; i++) {
        dt_sleep_ms(50);
        *n = dt_test_count_records(db);
    }
    return id;
}

static void test_kill9_resume(void)
{
    char db[4096];
    snprintf(db, sizeof db, "%s/k.db", g_dir);
    daemon_proc d;
    CU_ASSERT_EQUAL_FATAL(start_daemon(&d, db, "k1"), 0);
    int64_t n;
    int64_t id = submit_and_wait_records(
        d.port, db,
        "{\"workload\": \"dense(M=1..24,N=64,K=96)\", \"trials\": 110, "
        "\"threads\": 1, \"min_time_ms\": 0.5}",
        12, &n);
    CU_ASSERT_FATAL(id >= 0);
    CU_ASSERT_EQUAL(stop_daemon(&d, SIGKILL), 128 + SIGKILL);
    int64_t before = dt_test_count_records(db);
    CU_ASSERT(before >= 12);
    CU_ASSERT(before < 110);
    CU_ASSERT_TRUE(integrity_ok(db));

    CU_ASSERT_EQUAL_FATAL(start_daemon(&d, db, "k2"), 0);
    json_t *j = wait_job(d.port, id, 100);
    CU_ASSERT_PTR_NOT_NULL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "state")), "done");
    json_t *p = json_object_get(j, "progress");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "runs")), 2);
    CU_ASSERT(json_integer_value(json_object_get(p, "trials")) <= 110);
    json_decref(j);
    CU_ASSERT(http(d.port, "GET", "/v1/schedules?workload=dense(M=1..24,N=64,K=96)&M=5", NULL,
                   NULL) == 200);
    CU_ASSERT_EQUAL(stop_daemon(&d, SIGTERM), 0);
    int64_t after = dt_test_count_records(db);
    CU_ASSERT(after >= before);
    CU_ASSERT_TRUE(integrity_ok(db));
}

/* A second SIGTERM while the first is stopping the running job exits at
 * once with 128 + SIGTERM (an exit, not death by the signal); the database
 * is intact and a restarted daemon resumes the job. */
static void test_second_sigterm(void)
{
    char db[4096], log[4200];
    snprintf(db, sizeof db, "%s/s2.db", g_dir);
    snprintf(log, sizeof log, "%s/s2a.log", g_dir);
    daemon_proc d;
    CU_ASSERT_EQUAL_FATAL(start_daemon(&d, db, "s2a"), 0);
    int64_t n;
    int64_t id = submit_and_wait_records(
        d.port, db,
        "{\"workload\": \"dense(M=1..24,N=96,K=64)\", \"trials\": 100000, "
        "\"threads\": 1, \"min_time_ms\": 0.5}",
        8, &n);
    CU_ASSERT_FATAL(id >= 0);
    CU_ASSERT_FATAL(n >= 8); /* running, measuring */

    /* the first SIGTERM: wait until the daemon has taken it (two signals
     * sent back to back may merge into one) */
    CU_ASSERT_EQUAL_FATAL(kill(d.pid, SIGTERM), 0);
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++) {
        char *text = dt_test_slurp(log);
        seen = text && strstr(text, "SIGTERM: stopping") != NULL;
        free(text);
        if (!seen)
            dt_sleep_ms(10);
    }
    CU_ASSERT_FATAL(seen);
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(kill(d.pid, SIGTERM), 0);
    int ws = 0;
    pid_t w = 0;
    while ((w = waitpid(d.pid, &ws, WNOHANG)) == 0 && dt_now_s() - t0 < 10)
        dt_sleep_ms(10);
    double took = dt_now_s() - t0;
    if (w == 0) {
        kill(-d.pid, SIGKILL);
        waitpid(d.pid, &ws, 0);
    }
    d.pid = 0;
    CU_ASSERT_EQUAL(w > 0, 1);
    CU_ASSERT(took < 2.0);
    CU_ASSERT(WIFEXITED(ws));
    CU_ASSERT_EQUAL(WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, 128 + SIGTERM);
    char *text = dt_test_slurp(log);
    CU_ASSERT(text && strstr(text, "second SIGTERM: exiting at once") != NULL);
    free(text);
    int64_t before = dt_test_count_records(db);
    CU_ASSERT(before >= n);
    CU_ASSERT_TRUE(integrity_ok(db));

    /* a restarted daemon takes the job up again as its second run */
    CU_ASSERT_EQUAL_FATAL(start_daemon(&d, db, "s2b"), 0);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    int resumed = 0, st;
    for (double t1 = dt_now_s(); dt_now_s() - t1 < 60 && !resumed;) {
        json_t *j = http_json(d.port, "GET", path, NULL, &st);
        const char *state = json_string_value(json_object_get(j, "state"));
        resumed = st == 200 && state && !strcmp(state, "running") &&
                  json_is_true(json_object_get(j, "active")) &&
                  json_integer_value(json_object_get(json_object_get(j, "progress"), "runs")) == 2;
        json_decref(j);
        if (!resumed)
            dt_sleep_ms(100);
    }
    CU_ASSERT(resumed);
    CU_ASSERT(dt_test_count_records(db) >= before);
    CU_ASSERT_EQUAL(stop_daemon(&d, SIGKILL), 128 + SIGKILL);
    CU_ASSERT_TRUE(integrity_ok(db));
}

/* One daemon per database: a second one is refused (exit 3) naming the
 * first one's pid, and touches no job; after kill -9 of the first, a new
 * daemon starts and finishes the job within its budget. */
static void test_one_daemon_per_db(void)
{
    char db[4096], lock[4200];
    snprintf(db, sizeof db, "%s/one.db", g_dir);
    snprintf(lock, sizeof lock, "%s.lock", db);
    daemon_proc a;
    CU_ASSERT_EQUAL_FATAL(start_daemon(&a, db, "one-a"), 0);
    char want[64];
    snprintf(want, sizeof want, "pid %d\n", (int)a.pid);
    char *text = dt_test_slurp(lock);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
    free(text);

    int64_t n;
    int64_t id = submit_and_wait_records(
        a.port, db,
        "{\"workload\": \"dense(M=1..16,N=64,K=64)\", \"trials\": 40, "
        "\"threads\": 1, \"min_time_ms\": 0.5}",
        4, &n);
    CU_ASSERT_FATAL(id >= 0);
    CU_ASSERT(n >= 4);

    /* the second daemon: refused at once, naming the holder */
    char *err = NULL;
    CU_ASSERT_EQUAL(run_daemon_to_exit(db, "one-b", 30, &err), 3);
    snprintf(want, sizeof want, "pid %d", (int)a.pid);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "in use by another dtune daemon"));
    CU_ASSERT_PTR_NULL(strstr(err, "listening on"));
    free(err);
    /* the same database under another spelling is the same lock */
    char other[4200];
    snprintf(other, sizeof other, "%s/./one.db", g_dir);
    CU_ASSERT_EQUAL(run_daemon_to_exit(other, "one-b2", 30, &err), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    free(err);
    /* the first one still runs the job, alone */
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    int st;
    json_t *j = http_json(a.port, "GET", path, NULL, &st);
    CU_ASSERT_EQUAL(st, 200);
    const char *state = json_string_value(json_object_get(j, "state"));
    CU_ASSERT_PTR_NOT_NULL(state);
    if (state && strcmp(state, "done") != 0) {
        CU_ASSERT_STRING_EQUAL(state, "running");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "progress"),
                                                           "runs")),
                        1);
    }
    json_decref(j);

    /* kill -9: the lock goes with the process; a new daemon starts */
    CU_ASSERT_EQUAL(stop_daemon(&a, SIGKILL), 128 + SIGKILL);
    daemon_proc c;
    CU_ASSERT_EQUAL_FATAL(start_daemon(&c, db, "one-c"), 0);
    snprintf(want, sizeof want, "pid %d\n", (int)c.pid);
    text = dt_test_slurp(lock);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
    free(text);
    j = wait_job(c.port, id, 100);
    CU_ASSERT_PTR_NOT_NULL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "state")), "done");
    CU_ASSERT(json_integer_value(json_object_get(json_object_get(j, "progress"), "trials")) <=
              40);
    json_decref(j);
    CU_ASSERT(dt_test_count_records(db) <= 40);
    CU_ASSERT_EQUAL(stop_daemon(&c, SIGTERM), 0);
    CU_ASSERT_TRUE(integrity_ok(db));
    /* a clean stop leaves the file without a holder */
    text = dt_test_slurp(lock);
    CU_ASSERT_STRING_EQUAL(text, "");
    free(text);
}

/* A malformed --listen is reported as such (exit 2), not as a missing
 * --api-token-file. */
static void test_bad_listen(void)
{
    dt_test_proc p;
    const char *bad[] = {"bogus", "127.0.0.1", "127.0.0.1:99999", "example.com:80", "[::1:80",
                         ":8710"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --db '%s/bl.db' --listen '%s'", g_dir,
                                          bad[i]),
                        2);
        char want[128];
        snprintf(want, sizeof want, "bad --listen address '%s' (expected HOST:PORT)", bad[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(p.err, want));
        CU_ASSERT_PTR_NULL(strstr(p.err, "--api-token-file"));
        dt_test_proc_free(&p);
    }
    /* even with a token file that does not exist: the address comes first */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --db '%s/bl.db' --listen bogus "
                                          "--api-token-file '%s/none'",
                                      g_dir, g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "bad --listen address 'bogus'"));
    dt_test_proc_free(&p);
    /* nothing was created for a refused start */
    char db[4200];
    snprintf(db, sizeof db, "%s/bl.db", g_dir);
    CU_ASSERT_NOT_EQUAL(access(db, F_OK), 0);
}

static void test_cli_refusals(void)
{
    dt_test_proc p;
    /* a non-loopback address without a token: refused before anything starts */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --db '%s/r.db' --listen 0.0.0.0:0", g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--api-token-file"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --bogus"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --workers 127.0.0.1:1"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "daemon --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "/v1/schedules"));
    dt_test_proc_free(&p);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"a job over HTTP, its schedule and kernel source", test_job_query_source},
        {"malformed JSON, 404, 405, 413", test_bad_requests},
        {"256 idle connections do not lock a client out", test_idle_connections},
        {"a 100,000-deep key in a job body is a 400, the daemon lives", test_deep_body},
        {"cancel a running job, keeping what it measured", test_cancel_running},
        {"a model job on a tight budget reports its workloads", test_model_job_report},
        {"a one-byte-a-second client; SIGTERM exits 0", test_slow_client},
        {"kill -9 mid-job, restart, the job completes", test_kill9_resume},
        {"a second SIGTERM exits at once (143); restart resumes the job", test_second_sigterm},
        {"CLI refusals", test_cli_refusals},
        {"one daemon per database; a restart after kill -9", test_one_daemon_per_db},
        {"a bad --listen is a bad address", test_bad_listen},
        CU_TEST_INFO_NULL};
    CU_SuiteInfo suites[] = {{"e2e_daemon", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    if (g_d.pid > 0)
        stop_daemon(&g_d, SIGKILL);
    return rc;
}
