/* daemon/http: the request parser without sockets (daemon/http_conn.h), the
 * response and auth helpers, and the libuv server talked to over real
 * loopback sockets: keep-alive, pipelining, limits, time-outs, the bearer
 * token, the connection limit, and replays of the fuzzer's inputs
 * (tests/data/fuzz/http/). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/http.h"
#include "common/clock.h"
#include "daemon/http_auth.h"
#include "daemon/http_conn.h"
#include "daemon/http_msg.h"
#include "tests/dt_test.h"

/* ---- the pure parser ------------------------------------------------------ */

typedef struct {
    int n;
    char method[16][16], path[16][256], query[16][256], body[16][256];
    int keep[16], head[16], nheaders[16];
    char auth[16][64], host[16][64];
    int continues;
} got_t;

static void got_request(const dt_http_parsed *r, void *ud)
{
    got_t *g = ud;
    if (g->n >= 16)
        return;
    int i = g->n++;
    snprintf(g->method[i], sizeof g->method[i], "%s", r->req.method);
    snprintf(g->path[i], sizeof g->path[i], "%s", r->req.path);
    snprintf(g->query[i], sizeof g->query[i], "%s", r->req.query);
    snprintf(g->body[i], sizeof g->body[i], "%.*s", (int)r->req.body_len, r->req.body);
    snprintf(g->auth[i], sizeof g->auth[i], "%s", r->authorization ? r->authorization : "-");
    g->host[i][0] = '\0';
    for (int h = 0; h < r->req.nheaders; h++)
        if (!strcmp(r->req.headers[h].name, "host"))
            snprintf(g->host[i], sizeof g->host[i], "%s", r->req.headers[h].value);
    g->keep[i] = r->keep_alive;
    g->head[i] = r->head;
    g->nheaders[i] = r->req.nheaders;
}

static void got_continue(void *ud) { ((got_t *)ud)->continues++; }

static dt_http_limits small_limits(void)
{
    dt_http_limits l;
    dt_http_limits_default(&l);
    l.max_url = 64;
    l.max_header_bytes = 256;
    l.max_body = 32;
    return l;
}

/* Feeds text in pieces of step bytes (0 = all at once); returns the status
 * (0 = no error). */
static int feed(got_t *g, const char *text, size_t step, int *done)
{
    dt_http_limits l = small_limits();
    dt_http_conn c;
    memset(g, 0, sizeof *g);
    dt_http_conn_init(&c, &l, "peer", got_request, got_continue, g);
    size_t n = strlen(text);
    int status = 0;
    dt_err e;
    for (size_t off = 0; off < n;) {
        size_t k = step ? step : n;
        if (k > n - off)
            k = n - off;
        if (dt_http_conn_feed(&c, text + off, k, &status, &e))
            break;
        off += k;
    }
    if (done)
        *done = dt_http_conn_done(&c);
    dt_http_conn_free(&c);
    return status;
}

static void test_parse_simple(void)
{
    got_t g;
    const char *req = "GET /v1/jobs/3?x=1&y=%41 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  \r\n\r\n";
    for (size_t step = 0; step <= 3; step++) {
        int done = -1;
        CU_ASSERT_EQUAL(feed(&g, req, step, &done), 0);
        CU_ASSERT_EQUAL_FATAL(g.n, 1);
        CU_ASSERT_STRING_EQUAL(g.method[0], "GET");
        CU_ASSERT_STRING_EQUAL(g.path[0], "/v1/jobs/3");
        CU_ASSERT_STRING_EQUAL(g.query[0], "x=1&y=%41");
        CU_ASSERT_STRING_EQUAL(g.host[0], "a");
        CU_ASSERT_EQUAL(g.nheaders[0], 2);
        CU_ASSERT_EQUAL(g.keep[0], 1);
        CU_ASSERT_EQUAL(done, 0);
    }
}

static void test_parse_pipelined_and_body(void)
{
    got_t g;
    const char *req = "POST /a HTTP/1.1\r\nContent-Length: 5\r\nAuthorization: Bearer x\r\n\r\nhello"
                      "GET /b%20c HTTP/1.1\r\n\r\n"
                      "\r\nHEAD / HTTP/1.1\r\n\r\n";
    for (size_t step = 0; step <= 2; step++) {
        CU_ASSERT_EQUAL(feed(&g, req, step, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(g.n, 3);
        CU_ASSERT_STRING_EQUAL(g.method[0], "POST");
        CU_ASSERT_STRING_EQUAL(g.body[0], "hello");
        CU_ASSERT_STRING_EQUAL(g.auth[0], "Bearer x");
        CU_ASSERT_STRING_EQUAL(g.path[1], "/b c");
        CU_ASSERT_STRING_EQUAL(g.auth[1], "-");
        CU_ASSERT_STRING_EQUAL(g.body[1], "");
        CU_ASSERT_EQUAL(g.head[2], 1);
    }
}

static void test_parse_connection_close(void)
{
    got_t g;
    int done = 0;
    CU_ASSERT_EQUAL(feed(&g,
                         "GET /1 HTTP/1.1\r\nConnection: close\r\n\r\n"
                         "GET /2 HTTP/1.1\r\n\r\n",
                         0, &done),
                    0);
    CU_ASSERT_EQUAL(g.n, 1);
    CU_ASSERT_EQUAL(g.keep[0], 0);
    CU_ASSERT_EQUAL(done, 1);
    CU_ASSERT_EQUAL(feed(&g, "GET /1 HTTP/1.0\r\n\r\n", 0, &done), 0);
    CU_ASSERT_EQUAL(g.keep[0], 0);
    CU_ASSERT_EQUAL(feed(&g, "GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, &done), 0);
    CU_ASSERT_EQUAL(g.keep[0], 1);
}

static void test_parse_errors(void)
{
    got_t g;
    char big[512];
    int done = 0;
    CU_ASSERT_EQUAL(feed(&g, "HELLO\r\n\r\n", 0, &done), 400);
    CU_ASSERT_EQUAL(done, 1);
    CU_ASSERT_EQUAL(feed(&g, "GET / HTTP/1.1\r\nBad Header\r\n\r\n", 0, NULL), 400);
    CU_ASSERT_EQUAL(feed(&g, "GET /%zz HTTP/1.1\r\n\r\n", 0, NULL), 400);
    CU_ASSERT_EQUAL(feed(&g, "GET /a%00b HTTP/1.1\r\n\r\n", 0, NULL), 400);
    CU_ASSERT_EQUAL(feed(&g, "GET /a% HTTP/1.1\r\n\r\n", 0, NULL), 400);
    snprintf(big, sizeof big, "GET /%080d HTTP/1.1\r\n\r\n", 0);
    CU_ASSERT_EQUAL(feed(&g, big, 0, NULL), 414);
    CU_ASSERT_EQUAL(feed(&g, big, 1, NULL), 414);
    snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX: %0300d\r\n\r\n", 0);
    CU_ASSERT_EQUAL(feed(&g, big, 0, NULL), 431);
    CU_ASSERT_EQUAL(feed(&g, big, 7, NULL), 431);
    CU_ASSERT_EQUAL(feed(&g, "POST / HTTP/1.1\r\nContent-Length: 33\r\n\r\n", 0, NULL), 413);
    CU_ASSERT_EQUAL(g.n, 0);
    CU_ASSERT_EQUAL(
        feed(&g, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
             0, NULL),
        411);
    CU_ASSERT_EQUAL(feed(&g, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 0, NULL),
                    501);
    CU_ASSERT_EQUAL(
        feed(&g, "GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n", 0, NULL),
        501);
    CU_ASSERT_EQUAL(feed(&g, "CONNECT a:80 HTTP/1.1\r\n\r\n", 0, NULL), 501);
    /* only origin-form paths and absolute URLs (the fuzzer's "*\/x") */
    CU_ASSERT_EQUAL(feed(&g, "PUT */x HTTP/1.1\r\n\r\n", 0, NULL), 400);
    CU_ASSERT_EQUAL(feed(&g, "OPTIONS * HTTP/1.1\r\n\r\n", 0, NULL), 400);
    CU_ASSERT_EQUAL(feed(&g, "GET http://h:1 HTTP/1.1\r\n\r\n", 0, NULL), 0);
    CU_ASSERT_STRING_EQUAL(g.path[0], "/");
    /* an error after a good request: the first one is still delivered */
    CU_ASSERT_EQUAL(feed(&g, "GET /ok HTTP/1.1\r\n\r\nGARBAGE\r\n\r\n", 0, NULL), 400);
    CU_ASSERT_EQUAL(g.n, 1);
}

/* RFC 9112 framing that http-parser lets through: whitespace between a
 * field name and its colon (§5.1), bare LF or bare CR line endings (§2.2),
 * versions other than HTTP/1.0 and 1.1; and a second Authorization header,
 * which would make "which one was checked" ambiguous.  Each case fed whole
 * and in pieces of 1..3 bytes. */
static void test_parse_strict(void)
{
    struct {
        const char *req;
        int status;
    } cases[] = {
        {"POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n{}", 400},
        {"POST / HTTP/1.1\r\nContent-Length\t: 2\r\n\r\n{}", 400},
        {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nauthorization: Bearer a\r\nX: 1\r\nAUTHORIZATION: Bearer a\r\n\r\n",
         400},
        {"GET / HTTP/9.9\r\n\r\n", 505},
        {"GET / HTTP/2.0\r\n\r\n", 505},
        {"GET / HTTP/1.2\r\n\r\n", 505},
        {"GET / HTTP/0.9\r\n\r\n", 505},
        {"GET / HTTP/1.1\nHost: a\n\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\n\n", 400},
        {"GET / HTTP/1.1\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n\r\n\nGET / HTTP/1.1\r\n\r\n", 400}, /* bare LF between requests */
        {"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\na\nbGET / HTTP/1.1\n\n", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t step = 0; step <= 3; step++) {
            got_t g;
            int done = 0;
            int st = feed(&g, cases[i].req, step, &done);
            CU_ASSERT_EQUAL(st, cases[i].status);
            if (st != cases[i].status)
                fprintf(stderr, "\n  case %zu step %zu: %d, want %d\n", i, step, st,
                        cases[i].status);
            CU_ASSERT_EQUAL(done, 1);
        }
    }
    /* what stays accepted: a body with bare LFs (only the head is checked),
     * blank CRLF lines between requests, one Authorization, HTTP/1.0 */
    for (size_t step = 0; step <= 3; step++) {
        got_t g;
        CU_ASSERT_EQUAL(feed(&g,
                             "POST /a HTTP/1.1\r\nAuthorization: Bearer x\r\nContent-Length: 5\r\n"
                             "\r\na\nb\rc"
                             "\r\n\r\nGET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                             "POST /c HTTP/1.1\r\nContent-Length: 1\r\n\r\n\n",
                             step, NULL),
                        0);
        CU_ASSERT_EQUAL_FATAL(g.n, 3);
        CU_ASSERT_STRING_EQUAL(g.body[0], "a\nb\rc");
        CU_ASSERT_STRING_EQUAL(g.auth[0], "Bearer x");
        CU_ASSERT_STRING_EQUAL(g.path[1], "/b");
        CU_ASSERT_STRING_EQUAL(g.body[2], "\n");
    }
}

/* A path or query whose percent-decoded bytes are not UTF-8 is 400 at the
 * parser: the routes quote them in JSON, which must be UTF-8. */
static void test_parse_utf8(void)
{
    const char *bad[] = {
        "GET /v1/jobs/%ff HTTP/1.1\r\n\r\n",
        "GET /v1/jobs/\xff HTTP/1.1\r\n\r\n",
        "GET /a%c3 HTTP/1.1\r\n\r\n",            /* cut short */
        "GET /a%c0%af HTTP/1.1\r\n\r\n",         /* overlong '/' */
        "GET /a%ed%a0%80 HTTP/1.1\r\n\r\n",      /* a UTF-16 surrogate */
        "GET /a%f4%90%80%80 HTTP/1.1\r\n\r\n",   /* over U+10FFFF */
        "GET /v1/schedules?workload=%ff&M=1 HTTP/1.1\r\n\r\n",
        "GET /v1/schedules?workload=x&M=%e2%82 HTTP/1.1\r\n\r\n",
        "GET /x?\xc3 HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        got_t g;
        int st = feed(&g, bad[i], 0, NULL);
        CU_ASSERT_EQUAL(st, 400);
        if (st != 400)
            fprintf(stderr, "\n  case %zu: %d\n", i, st);
        CU_ASSERT_EQUAL(g.n, 0);
    }
    got_t g;
    CU_ASSERT_EQUAL(feed(&g, "GET /caf%c3%a9?w=%e2%82%ac&x=%zz HTTP/1.1\r\n\r\n", 0, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(g.n, 1);
    CU_ASSERT_STRING_EQUAL(g.path[0], "/caf\xc3\xa9");
    CU_ASSERT_STRING_EQUAL(g.query[0], "w=%e2%82%ac&x=%zz"); /* raw; bad escapes are the routes' */
    CU_ASSERT_EQUAL(feed(&g, "GET /%f0%9f%98%80 HTTP/1.1\r\n\r\n", 0, NULL), 0);
    CU_ASSERT_STRING_EQUAL(g.path[0], "/\xf0\x9f\x98\x80");
}

static void test_parse_many_headers(void)
{
    char req[4096] = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < DT_HTTP_MAX_HEADERS + 1; i++)
        snprintf(req + strlen(req), sizeof req - strlen(req), "h%d:\r\n", i);
    strcat(req, "\r\n");
    dt_http_limits l;
    dt_http_limits_default(&l);
    got_t g;
    memset(&g, 0, sizeof g);
    dt_http_conn c;
    dt_http_conn_init(&c, &l, NULL, got_request, NULL, &g);
    int status = 0;
    CU_ASSERT_EQUAL(dt_http_conn_feed(&c, req, strlen(req), &status, NULL), DT_EINVAL);
    CU_ASSERT_EQUAL(status, 431);
    dt_http_conn_free(&c);
    /* empty values are kept as "" */
    CU_ASSERT_EQUAL(feed(&g, "GET / HTTP/1.1\r\nA:\r\nB: 2\r\nC:\r\n\r\n", 0, NULL), 0);
    CU_ASSERT_EQUAL(g.nheaders[0], 3);
}

static void test_parse_eof_and_continue(void)
{
    dt_http_limits l = small_limits();
    got_t g;
    memset(&g, 0, sizeof g);
    dt_http_conn c;
    dt_http_conn_init(&c, &l, NULL, got_request, got_continue, &g);
    const char *part = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
    int status = -1;
    CU_ASSERT_EQUAL(dt_http_conn_in_request(&c), 0);
    CU_ASSERT_EQUAL(dt_http_conn_feed(&c, part, strlen(part), &status, NULL), 0);
    CU_ASSERT_EQUAL(status, 0);
    CU_ASSERT_EQUAL(g.continues, 1);
    CU_ASSERT_EQUAL(dt_http_conn_in_request(&c), 1);
    CU_ASSERT_EQUAL(dt_http_conn_eof(&c, &status, NULL), DT_EINVAL);
    CU_ASSERT_EQUAL(status, 400);
    dt_http_conn_free(&c);
}

static void test_msg_and_auth(void)
{
    size_t n = 0;
    char *j = dt_http_error_json(404, "no \"such\" route", &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(j, "{\"error\":{\"status\":404,\"message\":\"no \\\"such\\\" route\"}}");
    CU_ASSERT_EQUAL(n, strlen(j));
    char *out;
    size_t len;
    CU_ASSERT_EQUAL(dt_http_format_response(404, NULL, j, n, 1, 1, "X-A: b\r\n", &out, &len, NULL),
                    0);
    CU_ASSERT_EQUAL(len, strlen(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "HTTP/1.1 404 Not Found\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Server: dtune/"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "X-A: b\r\n\r\n"));
    char cl[64];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", n);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, cl));
    CU_ASSERT_PTR_NULL(strstr(out, "{")); /* HEAD: no body */
    free(out);
    free(j);

    CU_ASSERT_TRUE(dt_http_method_mutates("POST"));
    CU_ASSERT_TRUE(dt_http_method_mutates("DELETE"));
    CU_ASSERT_FALSE(dt_http_method_mutates("GET"));
#define OK(auth, tok) dt_http_bearer_ok(auth, tok, sizeof tok - 1)
    CU_ASSERT_TRUE(dt_http_bearer_ok(NULL, NULL, 0));
    CU_ASSERT_TRUE(dt_http_bearer_ok("whatever", NULL, 0));
    CU_ASSERT_TRUE(OK("Bearer s3cret", "s3cret"));
    CU_ASSERT_TRUE(OK("bearer s3cret", "s3cret"));
    CU_ASSERT_TRUE(OK("Bearer   s3cret", "s3cret"));
    CU_ASSERT_FALSE(OK(NULL, "s3cret"));
    CU_ASSERT_FALSE(OK("Bearer s3cre", "s3cret"));
    CU_ASSERT_FALSE(OK("Bearer s3cretX", "s3cret"));
    CU_ASSERT_FALSE(OK("Basic s3cret", "s3cret"));
    CU_ASSERT_FALSE(OK("Bearer ", "s3cret"));
    /* the token is its length, not its strlen: a NUL inside (had one got
     * this far) neither ends it nor switches it off */
    CU_ASSERT_FALSE(OK("Bearer x", "x\0AAAAAAAAAAAAAAAA"));
    CU_ASSERT_FALSE(OK("Bearer ", "\0AAAAAAAAAAAAAAAA"));
    CU_ASSERT_FALSE(OK(NULL, "\0AAAAAAAAAAAAAAAA"));
    CU_ASSERT_FALSE(dt_http_bearer_ok("Bearer ", "", 0)); /* empty matches nothing */
    CU_ASSERT_FALSE(dt_http_bearer_ok("Bearer s3cret", "s3cretXYZ", 6) &&
                    dt_http_bearer_ok("Bearer s3cretXYZ", "s3cretXYZ", 6));
    CU_ASSERT_TRUE(dt_http_bearer_ok("Bearer s3cret", "s3cretXYZ", 6));
#undef OK
    /* which tokens can be API tokens */
    dt_err e;
    CU_ASSERT_EQUAL(dt_http_token_check("abc+/=-_.~!AZ09", 15, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_http_token_check("x\0AAAA", 6, "T", &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "T has a NUL byte at byte offset 1"));
    CU_ASSERT_EQUAL(dt_http_token_check("ab cd", 5, "T", &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "a space at byte offset 2"));
    CU_ASSERT_EQUAL(dt_http_token_check("ab\tcd", 5, "T", &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "byte 0x09 at byte offset 2"));
    CU_ASSERT_EQUAL(dt_http_token_check("abc\xc3\xa4", 5, "T", &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "byte 0xc3 at byte offset 3"));
    CU_ASSERT_EQUAL(dt_http_token_check("abc\x7f", 4, "T", &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_http_token_check("", 0, "T", &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "T is empty"));
    CU_ASSERT_EQUAL(dt_http_token_check(NULL, 0, "T", &e), DT_EINVAL);
}

/* Every file under tests/data/fuzz/http/ (inputs the fuzzer found, and
 * seeds) goes through the fuzzer's own harness, included below: its first
 * byte picks the limits and the read size, the rest is the byte stream; a
 * crash, a sanitizer report or a broken invariant (abort) fails the suite. */
#include "fuzz/fuzz_http.c"

static void replay_http(const char *path, void *ud)
{
    (void)ud;
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    /* and with every read size and the end of input */
    for (unsigned mode = 0; mode < 256 && n > 0; mode += 0x15) {
        uint8_t keep = buf[0];
        buf[0] = (uint8_t)mode;
        LLVMFuzzerTestOneInput(buf, n);
        buf[0] = keep;
    }
}

static void test_fuzz_replay(void)
{
    CU_ASSERT(dt_test_for_each_file("tests/data/fuzz/http", replay_http, NULL) >= 3);
}

/* ---- the server on a loop in a thread ----------------------------------------- */

typedef struct {
    uv_loop_t loop;
    uv_async_t stop;
    dt_http_server *srv;
    pthread_t th;
    int port;
} tsrv;

static void echo_handler(const dt_http_request *req, dt_http_response *res, void *ud)
{
    tsrv *t = ud;
    json_t *o;
    if (!strcmp(req->path, "/stats")) {
        dt_http_stats st;
        dt_http_server_stats_get(t->srv, &st);
        o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "connections_total",
                      (json_int_t)st.connections_total, "connections_open",
                      (json_int_t)st.connections_open, "requests_total",
                      (json_int_t)st.requests_total, "rejected_total",
                      (json_int_t)st.rejected_total, "refused_total",
                      (json_int_t)st.refused_total, "evicted_total",
                      (json_int_t)st.evicted_total);
    } else if (!strcmp(req->path, "/text")) {
        res->content_type = "text/plain; charset=utf-8";
        res->body = strdup("plain\n");
        return;
    } else {
        o = json_pack("{s:s,s:s,s:s,s:s%,s:s}", "method", req->method, "path", req->path,
                      "query", req->query, "body", req->body, req->body_len, "peer", req->peer);
    }
    res->body = json_dumps(o, JSON_COMPACT);
    res->body_len = strlen(res->body);
    json_decref(o);
    if (!strcmp(req->path, "/created"))
        res->status = 201;
}

static void on_stop(uv_async_t *a)
{
    tsrv *t = a->data;
    dt_http_server_close(t->srv);
    uv_close((uv_handle_t *)a, NULL);
}

static void *loop_main(void *arg)
{
    tsrv *t = arg;
    uv_run(&t->loop, UV_RUN_DEFAULT);
    return NULL;
}

static tsrv *srv_start(const dt_http_limits *lim, const char *token)
{
    tsrv *t = calloc(1, sizeof *t);
    uv_loop_init(&t->loop);
    dt_http_server_opts o;
    memset(&o, 0, sizeof o);
    o.listen = "127.0.0.1:0";
    o.token = token;
    o.token_len = token ? strlen(token) : 0;
    if (lim)
        o.limits = *lim;
    o.handler = echo_handler;
    o.ud = t;
    dt_err e;
    if (dt_http_server_start(&t->loop, &o, &t->srv, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        uv_loop_close(&t->loop);
        free(t);
        return NULL;
    }
    t->port = dt_http_server_port(t->srv);
    uv_async_init(&t->loop, &t->stop, on_stop);
    t->stop.data = t;
    pthread_create(&t->th, NULL, loop_main, t);
    return t;
}

static void srv_stop(tsrv *t)
{
    if (!t)
        return;
    uv_async_send(&t->stop);
    pthread_join(t->th, NULL);
    CU_ASSERT_EQUAL(uv_loop_close(&t->loop), 0);
    free(t);
}

typedef struct {
    int fd;
    char buf[1 << 17];
    size_t len;
} client;

static client *cl_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    client *c = calloc(1, sizeof *c);
    c->fd = fd;
    return c;
}

static void cl_close(client *c)
{
    if (c) {
        close(c->fd);
        free(c);
    }
}

static int cl_send(client *c, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

static int cl_sends(client *c, const char *s) { return cl_send(c, s, strlen(s)); }

/* Reads more into the buffer within timeout_s: >0 bytes read, 0 EOF, -1
 * time-out or error (a reset counts as EOF: returns 0). */
static int cl_fill(client *c, double timeout_s)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int r = poll(&p, 1, (int)(timeout_s * 1000));
    if (r <= 0)
        return -1;
    if (c->len >= sizeof c->buf - 1)
        return -1;
    ssize_t k = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
    if (k < 0)
        return errno == ECONNRESET ? 0 : -1;
    c->len += (size_t)k;
    c->buf[c->len] = '\0';
    return (int)k;
}

typedef struct {
    int status;
    char headers[8192];
    char *body;
    size_t body_len;
} resp;

/* Reads one response (head without body when head_only); status -1 on
 * time-out or EOF. */
static resp cl_read_ex(client *c, double timeout_s, int head_only)
{
    resp r;
    memset(&r, 0, sizeof r);
    r.status = -1;
    double end = dt_now_s() + timeout_s;
    for (;;) {
        c->buf[c->len] = '\0';
        char *eoh = strstr(c->buf, "\r\n\r\n");
        if (eoh) {
            size_t hlen = (size_t)(eoh - c->buf) + 4;
            size_t clen = 0;
            char *cl = strcasestr(c->buf, "\r\ncontent-length:");
            if (cl && cl < eoh)
                clen = strtoul(cl + 17, NULL, 10);
            if (head_only)
                clen = 0;
            if (c->len >= hlen + clen) {
                snprintf(r.headers, sizeof r.headers, "%.*s", (int)hlen, c->buf);
                r.status = atoi(c->buf + 9);
                r.body = malloc(clen + 1);
                memcpy(r.body, c->buf + hlen, clen);
                r.body[clen] = '\0';
                r.body_len = clen;
                memmove(c->buf, c->buf + hlen + clen, c->len - hlen - clen);
                c->len -= hlen + clen;
                return r;
            }
        }
        double left = end - dt_now_s();
        if (left <= 0 || cl_fill(c, left) <= 0)
            return r;
    }
}

static resp cl_read(client *c) { return cl_read_ex(c, 5.0, 0); }

static void resp_free(resp *r) { free(r->body); }

/* Waits for the server to close: 1 when EOF (or reset) came within timeout_s. */
static int cl_eof(client *c, double timeout_s)
{
    double end = dt_now_s() + timeout_s;
    for (;;) {
        double left = end - dt_now_s();
        if (left <= 0)
            return 0;
        c->len = 0;
        int r = cl_fill(c, left);
        if (r == 0)
            return 1;
        if (r < 0 && dt_now_s() >= end)
            return 0;
    }
}

static json_t *resp_json(const resp *r)
{
    return r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
}

/* The status and message of a JSON error body. */
static int error_status(const resp *r)
{
    json_t *j = resp_json(r);
    int s = (int)json_integer_value(json_object_get(json_object_get(j, "error"), "status"));
    const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    if (!m || !*m)
        s = -1;
    json_decref(j);
    return s;
}

static const char *jstr(json_t *j, const char *k) { return json_string_value(json_object_get(j, k)); }

static dt_http_limits test_limits(void)
{
    dt_http_limits l;
    dt_http_limits_default(&l);
    l.max_body = 1024;
    l.max_url = 2048;
    l.max_header_bytes = 16 * 1024;
    l.max_connections = 32;
    return l;
}

/* A GET answered with 200 on a new connection. */
static int quick_get(int port)
{
    client *c = cl_open(port);
    if (!c)
        return -1;
    cl_sends(c, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
    resp r = cl_read(c);
    int s = r.status;
    resp_free(&r);
    cl_close(c);
    return s;
}

static void test_server_get_post(void)
{
    dt_http_limits l = test_limits();
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT(t->port > 0);
    client *c = cl_open(t->port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    cl_sends(c, "GET /hello/w%6Frld?x=1&y=2 HTTP/1.1\r\nHost: x\r\n\r\n");
    resp r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Server: dtune/" DTUNE_VERSION "\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Content-Type: application/json\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Date: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Connection: keep-alive\r\n"));
    json_t *j = resp_json(&r);
    CU_ASSERT_STRING_EQUAL(jstr(j, "method"), "GET");
    CU_ASSERT_STRING_EQUAL(jstr(j, "path"), "/hello/world");
    CU_ASSERT_STRING_EQUAL(jstr(j, "query"), "x=1&y=2");
    CU_ASSERT_PTR_NOT_NULL(strstr(jstr(j, "peer") ? jstr(j, "peer") : "", "127.0.0.1:"));
    json_decref(j);
    resp_free(&r);

    /* POST with a body, on the same connection */
    cl_sends(c, "POST /created HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n{\"a\": true}");
    r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 201);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "HTTP/1.1 201 Created\r\n"));
    j = resp_json(&r);
    CU_ASSERT_STRING_EQUAL(jstr(j, "method"), "POST");
    CU_ASSERT_STRING_EQUAL(jstr(j, "body"), "{\"a\": true}");
    json_decref(j);
    resp_free(&r);

    /* HEAD: GET's headers and length, no body */
    cl_sends(c, "GET /text HTTP/1.1\r\n\r\n");
    r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_STRING_EQUAL(r.body, "plain\n");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Content-Type: text/plain; charset=utf-8\r\n"));
    resp_free(&r);
    cl_sends(c, "HEAD /text HTTP/1.1\r\n\r\n");
    r = cl_read_ex(c, 5.0, 1);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Content-Length: 6\r\n"));
    resp_free(&r);

    /* Expect: 100-continue */
    cl_sends(c, "PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    r = cl_read_ex(c, 5.0, 1);
    CU_ASSERT_EQUAL(r.status, 100);
    resp_free(&r);
    cl_sends(c, "ok");
    r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "\"body\":\"ok\""));
    resp_free(&r);
    cl_close(c);
    srv_stop(t);
}

static void test_server_pipelined(void)
{
    dt_http_limits l = test_limits();
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    client *c = cl_open(t->port);
    cl_sends(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
                "POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                "GET /third HTTP/1.1\r\nHost: x\r\n\r\n");
    const char *want[] = {"/first", "/second", "/third"};
    for (int i = 0; i < 3; i++) {
        resp r = cl_read(c);
        CU_ASSERT_EQUAL(r.status, 200);
        json_t *j = resp_json(&r);
        CU_ASSERT_STRING_EQUAL(jstr(j, "path") ? jstr(j, "path") : "", want[i]);
        json_decref(j);
        resp_free(&r);
    }
    /* the connection stays open for more */
    cl_sends(c, "GET /fourth HTTP/1.1\r\n\r\n");
    resp r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    resp_free(&r);

    /* Connection: close → answered, then closed; what follows is ignored */
    cl_sends(c, "GET /last HTTP/1.1\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n");
    r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Connection: close\r\n"));
    resp_free(&r);
    CU_ASSERT_TRUE(cl_eof(c, 5.0));
    cl_close(c);

    /* HTTP/1.0 without keep-alive closes too */
    c = cl_open(t->port);
    cl_sends(c, "GET /old HTTP/1.0\r\n\r\n");
    r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Connection: close\r\n"));
    resp_free(&r);
    CU_ASSERT_TRUE(cl_eof(c, 5.0));
    cl_close(c);
    srv_stop(t);
}

/* Sends text on a new connection; expects status with a JSON error body,
 * then the connection closed. */
static void expect_error_close(int port, const char *text, size_t len, int status)
{
    client *c = cl_open(port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    cl_send(c, text, len);
    resp r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, status);
    if (r.status != status)
        fprintf(stderr, "expected %d, got %d: %s%s\n", status, r.status, r.headers,
                r.body ? r.body : "");
    CU_ASSERT_EQUAL(error_status(&r), status);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Connection: close\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Content-Type: application/json\r\n"));
    resp_free(&r);
    CU_ASSERT_TRUE(cl_eof(c, 5.0));
    cl_close(c);
}

static void test_server_limits(void)
{
    dt_http_limits l = test_limits();
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    char *buf = malloc(64 * 1024);

    /* body over max_body: refused on the Content-Length, body sent or not */
    const char *big = "POST /x HTTP/1.1\r\nContent-Length: 2000\r\n\r\n";
    expect_error_close(t->port, big, strlen(big), 413);
    int n = snprintf(buf, 64 * 1024, "%s", big);
    memset(buf + n, 'a', 2000);
    expect_error_close(t->port, buf, (size_t)n + 2000, 413);

    /* URL over max_url */
    n = snprintf(buf, 64 * 1024, "GET /");
    memset(buf + n, 'u', 3000);
    n += 3000;
    n += snprintf(buf + n, 64 * 1024 - (size_t)n, " HTTP/1.1\r\n\r\n");
    expect_error_close(t->port, buf, (size_t)n, 414);

    /* headers over max_header_bytes */
    n = snprintf(buf, 64 * 1024, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < 40; i++) {
        n += snprintf(buf + n, 64 * 1024 - (size_t)n, "X-Filler-%d: ", i);
        memset(buf + n, 'h', 500);
        n += 500;
        n += snprintf(buf + n, 64 * 1024 - (size_t)n, "\r\n");
    }
    n += snprintf(buf + n, 64 * 1024 - (size_t)n, "\r\n");
    expect_error_close(t->port, buf, (size_t)n, 431);

    /* garbage */
    const char *g = "HELLO THERE\r\n\r\n";
    expect_error_close(t->port, g, strlen(g), 400);
    const char bin[] = "\x00\x01\x02\xff\xfe GET / HTTP/1.1\r\n\r\n";
    expect_error_close(t->port, bin, sizeof bin - 1, 400);
    const char *badver = "GET / HTTP/9x\r\n\r\n";
    expect_error_close(t->port, badver, strlen(badver), 400);

    /* chunked request bodies: 411 */
    const char *ch = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    expect_error_close(t->port, ch, strlen(ch), 411);

    /* a good request first, then garbage on the same connection */
    client *c = cl_open(t->port);
    cl_sends(c, "GET /ok HTTP/1.1\r\n\r\nBAD\r\n\r\n");
    resp r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    resp_free(&r);
    r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 400);
    resp_free(&r);
    CU_ASSERT_TRUE(cl_eof(c, 5.0));
    cl_close(c);

    /* a client that vanishes after a big pipelined burst */
    c = cl_open(t->port);
    n = 0;
    for (int i = 0; i < 500; i++)
        n += snprintf(buf + n, 64 * 1024 - (size_t)n, "GET /burst HTTP/1.1\r\n\r\n");
    cl_send(c, buf, (size_t)n);
    cl_close(c);

    free(buf);
    CU_ASSERT_EQUAL(quick_get(t->port), 200);

    /* the server counted what it refused itself */
    c = cl_open(t->port);
    cl_sends(c, "GET /stats HTTP/1.1\r\n\r\n");
    r = cl_read(c);
    json_t *j = resp_json(&r);
    CU_ASSERT(json_integer_value(json_object_get(j, "rejected_total")) >= 9);
    CU_ASSERT(json_integer_value(json_object_get(j, "requests_total")) >= 2);
    json_decref(j);
    resp_free(&r);
    cl_close(c);
    srv_stop(t);
}

static void test_server_timeouts(void)
{
    dt_http_limits l = test_limits();
    l.request_timeout_s = 1.0;
    l.idle_timeout_s = 0.6;
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);

    /* a slow client: one byte every 0.3 s → 408 about 1 s after the first */
    client *c = cl_open(t->port);
    const char *req = "GET /slow HTTP/1.1\r\nHost: x\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    double t0 = dt_now_s();
    int got408 = 0;
    for (size_t i = 0; i < strlen(req) && dt_now_s() - t0 < 5; i++) {
        if (cl_send(c, req + i, 1))
            break;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 300) > 0) {
            resp r = cl_read(c);
            got408 = r.status == 408 && error_status(&r) == 408;
            resp_free(&r);
            break;
        }
    }
    double took = dt_now_s() - t0;
    CU_ASSERT_TRUE(got408);
    CU_ASSERT(took > 0.9 && took < 3.0);
    CU_ASSERT_TRUE(cl_eof(c, 3.0));
    cl_close(c);

    /* idle keep-alive connections close: after a request, and without one */
    c = cl_open(t->port);
    cl_sends(c, "GET /once HTTP/1.1\r\n\r\n");
    resp r = cl_read(c);
    CU_ASSERT_EQUAL(r.status, 200);
    resp_free(&r);
    t0 = dt_now_s();
    CU_ASSERT_TRUE(cl_eof(c, 3.0));
    took = dt_now_s() - t0;
    CU_ASSERT(took > 0.4 && took < 2.5);
    cl_close(c);
    c = cl_open(t->port);
    t0 = dt_now_s();
    CU_ASSERT_TRUE(cl_eof(c, 3.0));
    CU_ASSERT(dt_now_s() - t0 < 2.5);
    cl_close(c);

    /* blank lines between requests do not keep an idle connection open */
    c = cl_open(t->port);
    t0 = dt_now_s();
    int closed = 0;
    for (int i = 0; i < 12 && !closed; i++) {
        if (cl_sends(c, "\r\n"))
            closed = 1;
        else
            closed = cl_eof(c, 0.2);
    }
    CU_ASSERT_TRUE(closed);
    CU_ASSERT(dt_now_s() - t0 < 2.0);
    cl_close(c);

    CU_ASSERT_EQUAL(quick_get(t->port), 200);
    srv_stop(t);
}

static void test_server_token(void)
{
    dt_http_limits l = test_limits();
    tsrv *t = srv_start(&l, "s3cret-token");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    client *c = cl_open(t->port);
    struct {
        const char *req;
        int status;
    } cases[] = {
        {"POST /jobs HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 401},
        {"POST /jobs HTTP/1.1\r\nAuthorization: Bearer wrong\r\nContent-Length: 2\r\n\r\n{}", 401},
        {"DELETE /jobs/1 HTTP/1.1\r\nAuthorization: Bearer s3cret-toke\r\n\r\n", 401},
        {"PUT /x HTTP/1.1\r\nAuthorization: Basic czNjcmV0\r\n\r\n", 401},
        {"POST /jobs HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\nContent-Length: 2\r\n\r\n{}",
         200},
        {"DELETE /jobs/1 HTTP/1.1\r\nAuthorization: bearer s3cret-token\r\n\r\n", 200},
        {"GET /jobs HTTP/1.1\r\n\r\n", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cl_sends(c, cases[i].req);
        resp r = cl_read(c);
        CU_ASSERT_EQUAL(r.status, cases[i].status);
        if (cases[i].status == 401) {
            CU_ASSERT_EQUAL(error_status(&r), 401);
            CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "WWW-Authenticate: Bearer"));
            CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Connection: keep-alive")); /* kept */
        }
        resp_free(&r);
    }
    cl_close(c);
    srv_stop(t);
}

/* The strict-framing answers over a socket: each a JSON error and a closed
 * connection; the server goes on serving. */
static void test_server_strict(void)
{
    dt_http_limits l = test_limits();
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    struct {
        const char *req;
        int status;
    } cases[] = {
        {"GET / HTTP/9.9\r\n\r\n", 505},
        {"GET /v1/jobs/%ff HTTP/1.1\r\n\r\n", 400},
        {"GET /v1/schedules?workload=%ff&M=1 HTTP/1.1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n{}", 400},
        {"GET / HTTP/1.1\nHost: x\n\n", 400},
        {"POST / HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n"
         "Content-Length: 0\r\n\r\n",
         400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        client *c = cl_open(t->port);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        cl_sends(c, cases[i].req);
        resp r = cl_read(c);
        CU_ASSERT_EQUAL(r.status, cases[i].status);
        CU_ASSERT_EQUAL(error_status(&r), cases[i].status);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.headers, "Connection: close"));
        resp_free(&r);
        CU_ASSERT_TRUE(cl_eof(c, 5));
        cl_close(c);
    }
    CU_ASSERT_EQUAL(quick_get(t->port), 200);
    srv_stop(t);
}

static void test_server_max_connections(void)
{
    dt_http_limits l = test_limits();
    l.max_connections = 3;
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    client *cs[3];
    for (int i = 0; i < 3; i++) { /* each one answered: accepted */
        cs[i] = cl_open(t->port);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cs[i]);
        cl_sends(cs[i], "GET /held HTTP/1.1\r\n\r\n");
        resp r = cl_read(cs[i]);
        CU_ASSERT_EQUAL(r.status, 200);
        resp_free(&r);
    }
    client *extra = cl_open(t->port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(extra);
    cl_sends(extra, "GET /refused HTTP/1.1\r\n\r\n");
    double t0 = dt_now_s();
    resp rr = cl_read(extra); /* no response: closed at accept */
    CU_ASSERT_EQUAL(rr.status, -1);
    CU_ASSERT_EQUAL(extra->len, 0);
    CU_ASSERT(dt_now_s() - t0 < 4.0);
    resp_free(&rr);
    cl_close(extra);
    /* one held connection goes away: there is room again */
    cl_close(cs[0]);
    int ok = 0;
    for (int i = 0; i < 50 && !ok; i++) {
        ok = quick_get(t->port) == 200;
        if (!ok)
            dt_sleep_s(0.05);
    }
    CU_ASSERT_TRUE(ok);
    cl_sends(cs[1], "GET /stats HTTP/1.1\r\n\r\n");
    resp r = cl_read(cs[1]);
    json_t *j = resp_json(&r);
    CU_ASSERT(json_integer_value(json_object_get(j, "refused_total")) >= 1);
    json_decref(j);
    resp_free(&r);
    cl_close(cs[1]);
    cl_close(cs[2]);
    srv_stop(t);
}

/* A full server of idle connections does not lock a new client out: the
 * connection idle longest goes (a keep-alive one or one that never sent a
 * byte), a connection with a request in progress never does. */
static void test_server_idle_eviction(void)
{
    enum { N = 32 };
    dt_http_limits l = test_limits();
    l.max_connections = N;
    l.evict_idle_s = 0.3;
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    client *cs[N];
    /* #0: a request in progress (oldest of all); #1..N-1: idle, the odd ones
     * after a keep-alive request, the even ones never having sent a byte */
    for (int i = 0; i < N; i++) {
        cs[i] = cl_open(t->port);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cs[i]);
        if (i == 0) {
            cl_sends(cs[i], "GET /partial HTTP/1.1\r\n");
        } else if (i % 2) {
            cl_sends(cs[i], "GET /kept HTTP/1.1\r\n\r\n");
            resp r = cl_read(cs[i]);
            CU_ASSERT_EQUAL(r.status, 200);
            resp_free(&r);
        }
        dt_sleep_s(0.005); /* distinct idle times, in order */
    }
    dt_sleep_s(0.5); /* every idle connection is now past evict_idle_s */

    /* a new client is served promptly: #1 (idle longest) makes room */
    client *n1 = cl_open(t->port), *n2 = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(n1);
    double t0 = dt_now_s();
    cl_sends(n1, "GET /new1 HTTP/1.1\r\n\r\n");
    resp r = cl_read(n1);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT(dt_now_s() - t0 < 2.0);
    resp_free(&r);
    CU_ASSERT_TRUE(cl_eof(cs[1], 3.0));
    /* and the next one (n1 stays open): #2, which never sent a byte, goes */
    n2 = cl_open(t->port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n2);
    cl_sends(n2, "GET /new2 HTTP/1.1\r\n\r\n");
    r = cl_read(n2);
    CU_ASSERT_EQUAL(r.status, 200);
    resp_free(&r);
    CU_ASSERT_TRUE(cl_eof(cs[2], 3.0));
    /* the request in progress survived and completes */
    cl_sends(cs[0], "Host: x\r\n\r\n");
    r = cl_read(cs[0]);
    CU_ASSERT_EQUAL(r.status, 200);
    resp_free(&r);
    /* the newest keep-alive connection is still there */
    cl_sends(cs[N - 1], "GET /stats HTTP/1.1\r\n\r\n");
    r = cl_read(cs[N - 1]);
    CU_ASSERT_EQUAL(r.status, 200);
    json_t *j = resp_json(&r);
    CU_ASSERT(json_integer_value(json_object_get(j, "evicted_total")) >= 2);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "refused_total")), 0);
    json_decref(j);
    resp_free(&r);
    for (int i = 0; i < N; i++)
        cl_close(cs[i]);
    cl_close(n1);
    cl_close(n2);
    srv_stop(t);
}

/* The server stops with connections open and a response being read. */
static void test_server_close_with_clients(void)
{
    dt_http_limits l = test_limits();
    tsrv *t = srv_start(&l, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    client *a = cl_open(t->port), *b = cl_open(t->port);
    cl_sends(a, "GET /a HTTP/1.1\r\n\r\n");
    resp r = cl_read(a);
    CU_ASSERT_EQUAL(r.status, 200);
    resp_free(&r);
    cl_sends(b, "GET /partial HTTP/1.1\r\nHost:");
    dt_sleep_s(0.1);
    srv_stop(t);
    CU_ASSERT_TRUE(cl_eof(a, 3.0));
    CU_ASSERT_TRUE(cl_eof(b, 3.0));
    cl_close(a);
    cl_close(b);
}

static void test_server_bad_listen(void)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    dt_http_server_opts o;
    memset(&o, 0, sizeof o);
    o.handler = echo_handler;
    dt_http_server *s = NULL;
    dt_err e;
    const char *bad[] = {"nonsense", "127.0.0.1:99999", "host.invalid.:80", "[::1:80", ":80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.listen = bad[i];
        CU_ASSERT_EQUAL(dt_http_server_start(&loop, &o, &s, &e), DT_EINVAL);
        CU_ASSERT_PTR_NULL(s);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "(expected HOST:PORT)"));
    }
    /* the message names the option and the address */
    struct sockaddr_storage ss;
    CU_ASSERT_EQUAL(dt_http_parse_listen("bogus", "--listen", &ss, &e), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(e.msg, "bad --listen address 'bogus' (expected HOST:PORT)");
    CU_ASSERT_EQUAL(dt_http_parse_listen("127.0.0.1:0", "--listen", &ss, &e), 0);
    CU_ASSERT_EQUAL(dt_http_parse_listen("[::1]:8710", "--listen", &ss, &e), 0);
    CU_ASSERT_EQUAL(dt_http_parse_listen("localhost:8710", NULL, &ss, &e), 0);
    /* a set token is enforced or the server does not start: never "a NUL
     * first means no token" or "the bytes before the NUL are the token" */
    o.listen = "127.0.0.1:0";
    static const char nul0[] = "\0AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nul1[] = "x\0AAAAAAAAAAAAAAAA";
    o.token = nul0;
    o.token_len = sizeof nul0 - 1;
    CU_ASSERT_EQUAL(dt_http_server_start(&loop, &o, &s, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "a NUL byte at byte offset 0"));
    o.token = nul1;
    o.token_len = sizeof nul1 - 1;
    CU_ASSERT_EQUAL(dt_http_server_start(&loop, &o, &s, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "a NUL byte at byte offset 1"));
    o.token = "";
    o.token_len = 0;
    CU_ASSERT_EQUAL(dt_http_server_start(&loop, &o, &s, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "empty"));
    o.token = NULL;
    uv_run(&loop, UV_RUN_DEFAULT);
    CU_ASSERT_EQUAL(uv_loop_close(&loop), 0);
}

int main(void)
{
    static CU_TestInfo parser[] = {
        {"simple request, fed in pieces", test_parse_simple},
        {"pipelined requests and bodies", test_parse_pipelined_and_body},
        {"Connection: close and HTTP/1.0", test_parse_connection_close},
        {"errors map to statuses", test_parse_errors},
        {"RFC 9112 framing: colon, line ends, version, one Authorization", test_parse_strict},
        {"paths and queries must be UTF-8", test_parse_utf8},
        {"header count limit and empty values", test_parse_many_headers},
        {"eof inside a request, 100-continue", test_parse_eof_and_continue},
        {"response bytes, error JSON, bearer check", test_msg_and_auth},
        {"fuzz inputs replayed", test_fuzz_replay},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo server[] = {
        {"GET, POST, HEAD, 100-continue", test_server_get_post},
        {"pipelining, keep-alive, Connection: close", test_server_pipelined},
        {"limits, garbage, chunked", test_server_limits},
        {"slow client 408, idle time-out", test_server_timeouts},
        {"bearer token", test_server_token},
        {"strict framing, version, UTF-8 over a socket", test_server_strict},
        {"connection limit", test_server_max_connections},
        {"idle connections evicted at the limit", test_server_idle_eviction},
        {"close with clients connected", test_server_close_with_clients},
        {"bad listen addresses", test_server_bad_listen},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"http_parser", NULL, NULL, NULL, NULL, parser},
        {"http_server", NULL, NULL, NULL, NULL, server},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
