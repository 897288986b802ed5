/* End-to-end: the daemon's API token (issue 27).  Token files are read by
 * dt_token_read (measure/wire.h), which refuses a NUL byte, a line break or
 * another control character anywhere in the token, naming the file and the
 * byte offset; `dtune daemon --api-token-file` also refuses a token that
 * cannot travel as one word in an Authorization header (a space, bytes
 * over 0x7e).  A token file starting with a NUL byte used to switch the
 * token off (every POST accepted without Authorization), and "x\0AAA..."
 * made the one byte "x" the secret.  A good token is enforced on every
 * mutating request and compared with its whole length. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "measure/wire.h"
#include "tests/dt_test.h"

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

/* Writes n bytes to DIR/name with mode 0600; the path (static buffer). */
static const char *token_file(const char *name, const void *bytes, size_t n)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, bytes, n) != (ssize_t)n)
        CU_FAIL("cannot write a token file");
    if (fd >= 0)
        close(fd);
    chmod(path, 0600);
    return path;
}

/* ---- dt_token_read ------------------------------------------------------------------ */

/* dt_token_read on n bytes: its result; *msg the error message. */
static int read_token(const char *name, const char *bytes, size_t n, char *msg, size_t mn,
                      size_t *len)
{
    const char *p = token_file(name, bytes, n);
    char *tok = NULL;
    size_t tl = 0;
    dt_err e;
    dt_err_clear(&e);
    int rc = dt_token_read(p, &tok, &tl, &e);
    snprintf(msg, mn, "%s", rc ? e.msg : "");
    if (!rc) {
        CU_ASSERT_PTR_NOT_NULL(tok);
        CU_ASSERT_EQUAL(strlen(tok), tl); /* what is read has no NUL inside */
    } else {
        CU_ASSERT_PTR_NULL(tok);
    }
    if (len)
        *len = tl;
    free(tok);
    return rc;
}

#define AS32 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

static void test_token_read(void)
{
    char msg[1024];
    size_t len = 0;
    /* a NUL byte anywhere: refused, saying where and how to make a good one */
    static const char nul0[] = "\0" AS32, nul1[] = "x\0" AS32, nul_end[] = AS32 "\0\n";
    CU_ASSERT_EQUAL(read_token("nul0", nul0, sizeof nul0 - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "/nul0 has a NUL byte at byte offset 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "head -c 32 /dev/urandom | base64 > FILE"));
    CU_ASSERT_EQUAL(read_token("nul1", nul1, sizeof nul1 - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "a NUL byte at byte offset 1"));
    CU_ASSERT_EQUAL(read_token("nule", nul_end, sizeof nul_end - 1, msg, sizeof msg, NULL),
                    DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "a NUL byte at byte offset 32"));
    /* control characters and line breaks inside */
    static const char esc[] = "abc\x1b[31m" AS32 "\n", tab[] = AS32 "\tB\n",
                      two[] = "0123456789abcdef\n0123456789abcdef\n", cr[] = AS32 "\rB",
                      del[] = AS32 "\x7f";
    CU_ASSERT_EQUAL(read_token("esc", esc, sizeof esc - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "a control character (0x1b) at byte offset 3"));
    CU_ASSERT_EQUAL(read_token("tab", tab, sizeof tab - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "(0x09) at byte offset 32"));
    CU_ASSERT_EQUAL(read_token("two", two, sizeof two - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "a line break at byte offset 16"));
    CU_ASSERT_EQUAL(read_token("cr", cr, sizeof cr - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "a line break at byte offset 32"));
    CU_ASSERT_EQUAL(read_token("del", del, sizeof del - 1, msg, sizeof msg, NULL), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "(0x7f) at byte offset 32"));
    /* still fine: one line, its newline (LF or CR LF) stripped; spaces and
     * UTF-8 inside (worker tokens are only ever hashed) */
    static const char good[] = "AAAA/+==BBBBcccc1234\r\n", sp[] = "correct horse battery staple\n",
                      utf8[] = "p\xc3\xa4ssw\xc3\xb6rd-p\xc3\xa4ssw\xc3\xb6rd";
    CU_ASSERT_EQUAL(read_token("good", good, sizeof good - 1, msg, sizeof msg, &len), 0);
    CU_ASSERT_EQUAL(len, 20);
    CU_ASSERT_EQUAL(read_token("sp", sp, sizeof sp - 1, msg, sizeof msg, &len), 0);
    CU_ASSERT_EQUAL(len, 28);
    CU_ASSERT_EQUAL(read_token("utf8", utf8, sizeof utf8 - 1, msg, sizeof msg, &len), 0);
    CU_ASSERT_EQUAL(len, sizeof utf8 - 1);
    /* a FIFO (no writer) is refused at once, not waited on; so is a directory */
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/fifo-token", g_dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    char *tok = NULL;
    size_t tl = 0;
    dt_err e;
    double t0 = dt_now_s();
    CU_ASSERT_EQUAL(dt_token_read(fifo, &tok, &tl, &e), DT_EINVAL);
    CU_ASSERT(dt_now_s() - t0 < 2.0);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is not a regular file (a FIFO)"));
    CU_ASSERT_PTR_NULL(tok);
    CU_ASSERT_EQUAL(dt_token_read(g_dir, &tok, &tl, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "token file"));
    CU_ASSERT_EQUAL(dt_token_read("/nonexistent/token", &tok, &tl, &e), DT_ENOTFOUND);
}

/* ---- the daemon with --api-token-file -------------------------------------------------- */

typedef struct {
    pid_t pid;
    int port;   /* > 0 once it listens */
    int code;   /* its exit status when it exited at start, else -1 */
    char *err;  /* its stderr when it exited (malloc'ed) */
} dproc;

/* Starts `dtune daemon --listen 127.0.0.1:0 --api-token-file TOKEN`; waits
 * until it listens or exits (10 s at most). */
static void dstart(dproc *d, const char *tag, const char *token_path)
{
    char db[4200], out[4200], log[4200];
    snprintf(db, sizeof db, "%s/%s.db", g_dir, tag);
    snprintf(out, sizeof out, "%s/%s.out", g_dir, tag);
    snprintf(log, sizeof log, "%s/%s.log", g_dir, tag);
    memset(d, 0, sizeof *d);
    d->port = -1;
    d->code = -1;
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int fl = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    d->pid = fork();
    if (d->pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        dup2(fo, 1);
        dup2(fl, 2);
        execl(DTUNE_BIN, DTUNE_BIN, "daemon", "--db", db, "--listen", "127.0.0.1:0", "--threads",
              "1", "--api-token-file", token_path, (char *)NULL);
        _exit(127);
    }
    close(fo);
    close(fl);
    static const char ready[] = "dtune daemon listening on 127.0.0.1:";
    double t0 = dt_now_s();
    while (d->pid > 0 && dt_now_s() - t0 < 10) {
        int st = 0;
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            d->pid = 0;
            d->err = dt_test_slurp(log);
            return;
        }
        char *text = dt_test_slurp(out);
        const char *at = text ? strstr(text, ready) : NULL;
        if (at)
            d->port = atoi(at + strlen(ready));
        free(text);
        if (d->port > 0)
            return;
        dt_sleep_ms(30);
    }
}

static void dstop(dproc *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        double t0 = dt_now_s();
        while (waitpid(d->pid, NULL, WNOHANG) != d->pid) {
            if (dt_now_s() - t0 > 10) {
                kill(-d->pid, SIGKILL);
                waitpid(d->pid, NULL, 0);
                break;
            }
            dt_sleep_ms(20);
        }
    }
    d->pid = 0;
    free(d->err);
    d->err = NULL;
}

/* One request on a new connection; the status or -1. */
static int request(int port, const char *text)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    size_t n = strlen(text);
    if (send(fd, text, n, MSG_NOSIGNAL) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    char buf[64] = {0};
    size_t got = 0;
    while (got < 12) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return got >= 12 && !strncmp(buf, "HTTP/1.1 ", 9) ? atoi(buf + 9) : -1;
}

/* A POST /v1/jobs with an empty object: 400 once past the token check. */
static int post_job(int port, const char *authorization)
{
    char req[512];
    snprintf(req, sizeof req,
             "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Length: 2\r\n"
             "Connection: close\r\n\r\n{}",
             authorization ? "Authorization: " : "", authorization ? authorization : "",
             authorization ? "\r\n" : "");
    return request(port, req);
}

/* The daemon must refuse to start on this token file (exit 2, a message
 * containing want); when it starts anyway (the bug), what an unauthenticated
 * POST gets is reported. */
static void expect_refused(const char *tag, const char *bytes, size_t n, const char *want)
{
    const char *p = token_file(tag, bytes, n);
    dproc d;
    dstart(&d, tag, p);
    CU_ASSERT_EQUAL(d.code, 2);
    if (d.code == 2) {
        CU_ASSERT_PTR_NOT_NULL(strstr(d.err, "--api-token-file"));
        CU_ASSERT_PTR_NOT_NULL(strstr(d.err, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(d.err, "head -c 32 /dev/urandom | base64 > FILE"));
        if (!strstr(d.err, want))
            fprintf(stderr, "\n  %s: stderr '%s', wanted '%s'\n", tag, d.err, want);
    } else if (d.port > 0) {
        fprintf(stderr, "\n  %s: the daemon started; a POST without a token got %d\n", tag,
                post_job(d.port, NULL));
    }
    dstop(&d);
}

static void test_bad_token_refused(void)
{
    static const char nul0[] = "\0" AS32, nul1[] = "x\0" AS32, esc[] = AS32 "\x1b[0m\n",
                      space[] = "AAAAAAAA AAAAAAAAAAAAAAAA\n",
                      utf8[] = "p\xc3\xa4ssw\xc3\xb6rd-p\xc3\xa4ssw\xc3\xb6rd\n";
    expect_refused("nul0", nul0, sizeof nul0 - 1, "a NUL byte at byte offset 0");
    expect_refused("nul1", nul1, sizeof nul1 - 1, "a NUL byte at byte offset 1");
    expect_refused("esc", esc, sizeof esc - 1, "a control character (0x1b) at byte offset 32");
    /* fine for a worker, not for an Authorization header */
    expect_refused("space", space, sizeof space - 1, "a space at byte offset 8");
    expect_refused("utf8", utf8, sizeof utf8 - 1, "byte 0xc3 at byte offset 1");
}

/* A good token is enforced on every mutating request, whole. */
static void test_token_enforced(void)
{
    static const char tok[] = "s3cret-T0ken_with.all+kinds/of=chars~!\n";
    const char *p = token_file("good", tok, sizeof tok - 1);
    dproc d;
    dstart(&d, "good", p);
    CU_ASSERT_FATAL(d.port > 0);
    CU_ASSERT_EQUAL(post_job(d.port, NULL), 401);
    CU_ASSERT_EQUAL(post_job(d.port, "Bearer s"), 401);
    CU_ASSERT_EQUAL(post_job(d.port, "Bearer s3cret-T0ken_with.all+kinds/of=chars~"), 401);
    CU_ASSERT_EQUAL(post_job(d.port, "Bearer s3cret-T0ken_with.all+kinds/of=chars~!!"), 401);
    CU_ASSERT_EQUAL(post_job(d.port, "Basic s3cret-T0ken_with.all+kinds/of=chars~!"), 401);
    /* past the check: the empty job is the client's mistake */
    CU_ASSERT_EQUAL(post_job(d.port, "Bearer s3cret-T0ken_with.all+kinds/of=chars~!"), 400);
    CU_ASSERT_EQUAL(request(d.port, "DELETE /v1/jobs/1 HTTP/1.1\r\nConnection: close\r\n\r\n"),
                    401);
    CU_ASSERT_EQUAL(request(d.port, "GET /v1/jobs HTTP/1.1\r\nConnection: close\r\n\r\n"), 200);
    dstop(&d);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"token files: NUL, control characters, line breaks", test_token_read},
        {"the daemon refuses a token it cannot enforce", test_bad_token_refused},
        {"a good token is enforced, whole", test_token_enforced},
        CU_TEST_INFO_NULL};
    CU_SuiteInfo suites[] = {{"e2e_daemon_auth", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
