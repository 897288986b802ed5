/* libFuzzer target: the HTTP request path without sockets.  The input's
 * first byte picks the limits (small or default) and how the rest is cut
 * into reads; the rest goes through the connection parser
 * (daemon/http_conn.h) as the server feeds it, and every outcome through
 * what the server does next, minus libuv and the router: the bearer check
 * (daemon/http_auth.h), an echo handler's JSON, the response bytes and the
 * JSON error body (daemon/http_msg.h).  Besides crashes and sanitizer
 * reports it aborts when a parsed request breaks the parser's promises
 * (path starts with '/' and is UTF-8, sizes within the limits, lower-case
 * names, a status in the documented set). */
#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http_auth.h"
#include "daemon/http_conn.h"
#include "daemon/http_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    dt_http_limits lim;
    int requests;
} fuzz_ctx;

static void check(int ok)
{
    if (!ok)
        abort();
}

static void respond(int status, const char *body, size_t len, int keep, int head)
{
    char *out = NULL;
    size_t olen = 0;
    if (dt_http_format_response(status, NULL, body, len, keep, head, NULL, &out, &olen, NULL) == 0) {
        check(olen >= 17 && !memcmp(out, "HTTP/1.1 ", 9));
        free(out);
    }
}

static void on_request(const dt_http_parsed *r, void *ud)
{
    fuzz_ctx *f = ud;
    f->requests++;
    const dt_http_request *q = &r->req;
    check(q->method && q->path && q->query && q->body && q->peer);
    check(q->path[0] == '/');
    check(dt_http_utf8_bad(q->path, strlen(q->path)) == strlen(q->path));
    check(q->body_len <= f->lim.max_body && q->body[q->body_len] == '\0');
    check(strlen(q->query) <= f->lim.max_url);
    check(q->nheaders >= 0 && q->nheaders <= DT_HTTP_MAX_HEADERS);
    size_t hbytes = 0;
    int nauth = 0;
    for (int i = 0; i < q->nheaders; i++) {
        for (const char *s = q->headers[i].name; *s; s++)
            check(!isupper((unsigned char)*s) && *s != ' ' && *s != '\t');
        if (!strcmp(q->headers[i].name, "authorization"))
            nauth++;
        hbytes += strlen(q->headers[i].name) + strlen(q->headers[i].value);
    }
    check(hbytes <= f->lim.max_header_bytes);
    check(nauth <= 1);
    if (dt_http_method_mutates(q->method) && !dt_http_bearer_ok(r->authorization, "tok", 3)) {
        size_t n;
        char *b = dt_http_error_json(401, "no token", &n);
        respond(401, b, b ? n : 0, r->keep_alive, r->head);
        free(b);
        return;
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:s%}", "method", q->method, "path", q->path, "query",
                          q->query, "body", q->body, q->body_len);
    char *b = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    respond(200, b, b ? strlen(b) : 0, r->keep_alive, r->head);
    free(b);
}

static void on_continue(void *ud) { (void)ud; }

static void answer_error(int rc, int status, const dt_err *e)
{
    if (!rc)
        return;
    check(status == 400 || status == 411 || status == 413 || status == 414 || status == 431 ||
          status == 501 || status == 503 || status == 505);
    size_t n;
    char *b = dt_http_error_json(status, e->msg, &n);
    respond(status, b, b ? n : 0, 0, 0);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    data++;
    size--;
    fuzz_ctx f;
    memset(&f, 0, sizeof f);
    dt_http_limits_default(&f.lim);
    if (mode & 0x80) {
        f.lim.max_url = 64;
        f.lim.max_header_bytes = 256;
        f.lim.max_body = 64;
    }
    size_t step = mode & 0x3f; /* 0: all at once */
    dt_http_conn c;
    dt_http_conn_init(&c, &f.lim, "fuzz", on_request, on_continue, &f);
    int status = 0, rc = 0;
    dt_err e;
    dt_err_clear(&e);
    for (size_t off = 0; off < size;) {
        size_t k = step ? step : size;
        if (k > size - off)
            k = size - off;
        rc = dt_http_conn_feed(&c, (const char *)data + off, k, &status, &e);
        if (rc || dt_http_conn_done(&c))
            break;
        off += k;
    }
    if (!rc && (mode & 0x40))
        rc = dt_http_conn_eof(&c, &status, &e);
    answer_error(rc, status, &e);
    dt_http_conn_free(&c);
    return 0;
}
