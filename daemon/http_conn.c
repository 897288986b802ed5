/* Socket-free HTTP/1.1 request parsing (daemon/http_conn.h) on top of
 * Debian's http-parser.  The callbacks accumulate the request target, the
 * headers ("name\0value\0" pairs in one buffer, names lower-cased) and the
 * body into per-connection buffers bounded by the limits; a callback that
 * finds a rule broken records the status and fails, which stops
 * http_parser_execute. */
#include "daemon/http_conn.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/http_msg.h"

/* Here rather than in http.c so that the parser links without libuv. */
void dt_http_limits_default(dt_http_limits *l)
{
    l->max_url = 2048;
    l->max_header_bytes = 16 * 1024;
    l->max_body = 1024 * 1024;
    l->max_connections = 256;
    l->idle_timeout_s = 30;
    l->request_timeout_s = 10;
    l->evict_idle_s = 1;
}

static dt_http_conn *conn_of(http_parser *p) { return p->data; }

/* Records the first error; returns -1 for the callback to fail with. */
static int fail(dt_http_conn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(dt_http_conn *c, int status, const char *fmt, ...)
{
    if (!c->status) {
        c->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, sizeof c->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int on_message_begin(http_parser *p)
{
    dt_http_conn *c = conn_of(p);
    c->url.len = c->hdr.len = c->body.len = 0;
    c->nheaders = 0;
    c->hbytes = 0;
    c->in_value = 0;
    c->in_body = 0;
    c->expect_continue = 0;
    c->partial = 1;
    return 0;
}

static int oom(dt_http_conn *c) { return fail(c, 503, "out of memory reading the request"); }

static int on_url(http_parser *p, const char *at, size_t len)
{
    dt_http_conn *c = conn_of(p);
    c->partial += len;
    if (c->url.len + len > c->lim.max_url)
        return fail(c, 414, "request target longer than %zu bytes", c->lim.max_url);
    dt_sb_appendn(&c->url, at, len);
    return c->url.oom ? oom(c) : 0;
}

/* Ends the header being parsed: NUL after its value (an empty value when
 * http-parser never reported one). */
static void end_header(dt_http_conn *c)
{
    if (c->nheaders == 0)
        return;
    if (!c->in_value) {
        dt_sb_appendn(&c->hdr, "", 1);
        c->hoff[c->nheaders - 1][1] = c->hdr.len;
    }
    dt_sb_appendn(&c->hdr, "", 1);
    c->in_value = 0;
}

static int count_header_bytes(dt_http_conn *c, size_t len)
{
    c->partial += len;
    c->hbytes += len;
    if (c->hbytes > c->lim.max_header_bytes)
        return fail(c, 431, "request headers larger than %zu bytes", c->lim.max_header_bytes);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    dt_http_conn *c = conn_of(p);
    if (c->nheaders == 0 || c->in_value) { /* a new header starts */
        end_header(c);
        if (c->nheaders >= DT_HTTP_MAX_HEADERS)
            return fail(c, 431, "more than %d request headers", DT_HTTP_MAX_HEADERS);
        c->hoff[c->nheaders][0] = c->hdr.len;
        c->hoff[c->nheaders][1] = 0;
        c->nheaders++;
    }
    if (count_header_bytes(c, len))
        return -1;
    /* http-parser (built lenient) takes "Content-Length : 5" as a name with a
     * space; RFC 9112 §5.1 says such a request must be rejected with 400 */
    if (memchr(at, ' ', len) || memchr(at, '\t', len))
        return fail(c, 400, "whitespace in a header name or before its colon (RFC 9112 5.1)");
    size_t start = c->hdr.len;
    dt_sb_appendn(&c->hdr, at, len);
    if (c->hdr.oom)
        return oom(c);
    for (size_t i = start; i < c->hdr.len; i++)
        c->hdr.data[i] = (char)tolower((unsigned char)c->hdr.data[i]);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    dt_http_conn *c = conn_of(p);
    if (c->nheaders == 0)
        return fail(c, 400, "header value without a name");
    if (!c->in_value) {
        dt_sb_appendn(&c->hdr, "", 1);
        c->hoff[c->nheaders - 1][1] = c->hdr.len;
        c->in_value = 1;
    }
    if (count_header_bytes(c, len))
        return -1;
    dt_sb_appendn(&c->hdr, at, len);
    return c->hdr.oom ? oom(c) : 0;
}

/* The value of header name (lower-case), or NULL; after end_header. */
static const char *find_header(const dt_http_conn *c, const char *name)
{
    for (int i = 0; i < c->nheaders; i++)
        if (!strcmp(c->hdr.data + c->hoff[i][0], name))
            return c->hdr.data + c->hoff[i][1];
    return NULL;
}

static void trim_values(dt_http_conn *c)
{
    for (int i = 0; i < c->nheaders; i++) {
        char *v = c->hdr.data + c->hoff[i][1];
        size_t n = strlen(v);
        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            v[--n] = '\0';
    }
}

/* How many headers are called name (lower-case); after end_header. */
static int count_headers(const dt_http_conn *c, const char *name)
{
    int n = 0;
    for (int i = 0; i < c->nheaders; i++)
        n += !strcmp(c->hdr.data + c->hoff[i][0], name);
    return n;
}

static int on_headers_complete(http_parser *p)
{
    dt_http_conn *c = conn_of(p);
    end_header(c);
    if (c->hdr.oom)
        return oom(c);
    if (p->http_major != 1 || p->http_minor > 1)
        return fail(c, 505, "HTTP/%u.%u is not supported: send HTTP/1.1 or HTTP/1.0",
                    (unsigned)p->http_major, (unsigned)p->http_minor);
    if (c->nheaders > 0)
        trim_values(c);
    /* two credentials: which one was checked would be the parser's choice */
    if (c->nheaders > 1 && count_headers(c, "authorization") > 1)
        return fail(c, 400, "more than one Authorization header");
    if (p->flags & F_CHUNKED)
        return fail(c, 411, "chunked request bodies are not accepted: send a Content-Length");
    if (p->uses_transfer_encoding)
        return fail(c, 501, "request transfer codings are not supported: send a Content-Length");
    if (p->upgrade)
        return fail(c, 501, "protocol upgrades and CONNECT are not supported");
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > c->lim.max_body)
        return fail(c, 413, "request body of %llu bytes is over the limit of %zu bytes",
                    (unsigned long long)p->content_length, c->lim.max_body);
    const char *expect = c->nheaders ? find_header(c, "expect") : NULL;
    if (expect && !strcasecmp(expect, "100-continue") && p->http_major == 1 &&
        p->http_minor >= 1 && p->content_length > 0 && (p->flags & F_CONTENTLENGTH))
        c->expect_continue = 1;
    if (c->expect_continue && c->on_continue)
        c->on_continue(c->ud);
    c->in_body = 1;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    dt_http_conn *c = conn_of(p);
    c->partial += len;
    if (c->body.len + len > c->lim.max_body)
        return fail(c, 413, "request body over the limit of %zu bytes", c->lim.max_body);
    dt_sb_appendn(&c->body, at, len);
    return c->body.oom ? oom(c) : 0;
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* Percent-decodes n bytes of s into dst (dst may equal s);
 * returns the decoded length or -1 for a bad escape or %00. */
static long pct_decode(char *dst, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            dst[o++] = s[i];
            continue;
        }
        if (i + 2 >= n)
            return -1;
        int hi = hexval((unsigned char)s[i + 1]), lo = hexval((unsigned char)s[i + 2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return -1;
        dst[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    return (long)o;
}

/* 1 when the query s[0..n), its well-formed percent escapes decoded, is
 * UTF-8; 0 when not; -1 when out of memory.  ('&' and '=' are ASCII, so
 * every parameter's name and value then is UTF-8 too; malformed escapes and
 * %00 are left for the routes to refuse.) */
static int query_utf8(const char *s, size_t n)
{
    char *buf = malloc(n + 1);
    if (!buf)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = -1, lo = -1;
        if (s[i] == '%' && i + 2 < n) {
            hi = hexval((unsigned char)s[i + 1]);
            lo = hexval((unsigned char)s[i + 2]);
        }
        if (hi >= 0 && lo >= 0) {
            buf[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            buf[o++] = s[i];
        }
    }
    int ok = dt_http_utf8_bad(buf, o) == o;
    free(buf);
    return ok;
}

/* Splits the target into a decoded path and the raw query, both copied into
 * c->pq: "path\0query\0".  (A separate buffer: appending a piece of url to
 * url itself would read freed memory when the append reallocates; the
 * fuzzer found that.) */
static int split_target(dt_http_conn *c, const char **path, const char **query)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    size_t tlen = c->url.len;
    if (tlen == 0 || http_parser_parse_url(c->url.data, tlen, 0, &u) != 0)
        return fail(c, 400, "malformed request target");
    size_t poff = 0, plen = 0, qoff = 0, qlen = 0;
    if (u.field_set & (1 << UF_PATH)) {
        poff = u.field_data[UF_PATH].off;
        plen = u.field_data[UF_PATH].len;
    }
    if (u.field_set & (1 << UF_QUERY)) {
        qoff = u.field_data[UF_QUERY].off;
        qlen = u.field_data[UF_QUERY].len;
    }
    if (plen > 0 && c->url.data[poff] != '/')
        return fail(c, 400, "request target must be a path (/...) or an absolute URL");
    c->pq.len = 0;
    if (plen == 0)
        dt_sb_appendn(&c->pq, "/", 1);
    else
        dt_sb_appendn(&c->pq, c->url.data + poff, plen);
    if (c->pq.oom)
        return oom(c);
    long dl = pct_decode(c->pq.data, c->pq.data, c->pq.len);
    if (dl < 0)
        return fail(c, 400, "malformed percent escape in the request path");
    c->pq.len = (size_t)dl;
    size_t bad = dt_http_utf8_bad(c->pq.data, c->pq.len);
    if (bad < c->pq.len)
        return fail(c, 400,
                    "the request path is not UTF-8 (byte 0x%02x at offset %zu once "
                    "percent-decoded)",
                    (unsigned char)c->pq.data[bad], bad);
    dt_sb_appendn(&c->pq, "", 1);
    size_t qstart = c->pq.len;
    dt_sb_appendn(&c->pq, c->url.data + qoff, qlen);
    if (c->pq.oom)
        return oom(c);
    c->pq.data[c->pq.len] = '\0';
    int qu = query_utf8(c->pq.data + qstart, c->pq.len - qstart);
    if (qu < 0)
        return oom(c);
    if (!qu)
        return fail(c, 400, "the request query is not UTF-8 once percent-decoded");
    *path = c->pq.data;
    *query = c->pq.data + qstart;
    return 0;
}

static int on_message_complete(http_parser *p)
{
    dt_http_conn *c = conn_of(p);
    dt_http_parsed r;
    memset(&r, 0, sizeof r);
    if (split_target(c, &r.req.path, &r.req.query))
        return -1;
    dt_http_header hs[DT_HTTP_MAX_HEADERS];
    for (int i = 0; i < c->nheaders; i++) {
        hs[i].name = c->hdr.data + c->hoff[i][0];
        hs[i].value = c->hdr.data + c->hoff[i][1];
    }
    r.req.method = http_method_str((enum http_method)p->method);
    r.req.headers = hs;
    r.req.nheaders = c->nheaders;
    r.req.body = c->body.data ? c->body.data : "";
    r.req.body_len = c->body.data ? c->body.len : 0;
    if (c->body.data)
        c->body.data[c->body.len] = '\0';
    r.req.peer = c->peer ? c->peer : "";
    r.keep_alive = http_should_keep_alive(p);
    r.head = p->method == HTTP_HEAD;
    r.http_major = p->http_major;
    r.http_minor = p->http_minor;
    r.authorization = c->nheaders ? find_header(c, "authorization") : NULL;
    c->partial = 0;
    c->in_body = 0;
    c->requests++;
    if (c->on_request)
        c->on_request(&r, c->ud);
    if (!r.keep_alive || c->stop)
        c->done = 1;
    /* always: dt_http_conn_feed checks the next request's head before
     * http-parser sees it */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings dt_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Checks the head's line endings in d[0..n) (RFC 9112 2.2: every line of
 * the head, and each blank line before a request, ends in CR LF; a bare LF
 * or CR is an error here, not a line end as http-parser would take it).
 * Returns how many bytes belong to the head: up to and including the LF of
 * its blank line (the check then starts over for the next request), or n;
 * on a bad byte it fails (c->status) and returns its offset. */
static size_t check_head(dt_http_conn *c, const char *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = d[i];
        if (c->head_cr) {
            c->head_cr = 0;
            if (ch != '\n') {
                fail(c, 400, "a CR not followed by LF in the request head: lines end with CR LF");
                return i;
            }
            if (c->head_bol && c->head_seen) { /* the blank line: the head is whole */
                c->head_seen = 0;
                return i + 1;
            }
            c->head_bol = 1;
        } else if (ch == '\r') {
            c->head_cr = 1;
        } else if (ch == '\n') {
            fail(c, 400, "a bare LF in the request head: lines end with CR LF");
            return i;
        } else {
            c->head_seen = 1;
            c->head_bol = 0;
        }
    }
    return n;
}

void dt_http_conn_init(dt_http_conn *c, const dt_http_limits *lim, const char *peer,
                       dt_http_on_request on_request, dt_http_on_continue on_continue,
                       void *ud)
{
    memset(c, 0, sizeof *c);
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    c->lim = *lim;
    c->peer = peer;
    c->on_request = on_request;
    c->on_continue = on_continue;
    c->ud = ud;
    c->head_bol = 1;
    dt_sb_init(&c->url);
    dt_sb_init(&c->hdr);
    dt_sb_init(&c->body);
    dt_sb_init(&c->pq);
}

void dt_http_conn_free(dt_http_conn *c)
{
    dt_sb_free(&c->url);
    dt_sb_free(&c->hdr);
    dt_sb_free(&c->body);
    dt_sb_free(&c->pq);
}

static int result(const dt_http_conn *c, int *status, dt_err *e)
{
    if (status)
        *status = c->status;
    if (!c->status)
        return 0;
    return dt_errf(e, DT_EINVAL, "%s", c->msg);
}

static int map_errno(dt_http_conn *c, enum http_errno err)
{
    switch (err) {
    case HPE_HEADER_OVERFLOW:
        return fail(c, 431, "request line and headers over the parser's limit");
    case HPE_INVALID_TRANSFER_ENCODING:
        return fail(c, 501, "request transfer codings are not supported: send a Content-Length");
    default:
        return fail(c, 400, "malformed request: %s", http_errno_description(err));
    }
}

int dt_http_conn_feed(dt_http_conn *c, const char *data, size_t n, int *status, dt_err *e)
{
    if (c->done || n == 0)
        return result(c, status, e);
    size_t off = 0;
    while (off < n && !c->done) {
        size_t len = n - off;
        if (!c->in_body) {
            /* the head goes to http-parser only once checked, up to its end
             * (the bytes before a bad one are not given: the error is the
             * request's answer either way) */
            len = check_head(c, data + off, len);
            if (c->status) {
                c->done = 1;
                break;
            }
        }
        size_t np = http_parser_execute(&c->p, &dt_settings, data + off, len);
        enum http_errno err = HTTP_PARSER_ERRNO(&c->p);
        if (c->status) {
            c->done = 1;
        } else if (err == HPE_PAUSED) { /* a request completed */
            if (!c->done)
                http_parser_pause(&c->p, 0);
            off += np;
            continue;
        } else if (err != HPE_OK) {
            map_errno(c, err);
            c->done = 1;
        } else if (c->p.upgrade) {
            fail(c, 501, "protocol upgrades and CONNECT are not supported");
            c->done = 1;
        } else if (np != len) {
            fail(c, 400, "malformed request: the parser stopped early");
            c->done = 1;
        }
        off += np;
    }
    if (c->status)
        c->partial = 0;
    return result(c, status, e);
}

int dt_http_conn_eof(dt_http_conn *c, int *status, dt_err *e)
{
    if (!c->done && c->partial) {
        fail(c, 400, "connection closed inside a request");
        c->done = 1;
        c->partial = 0;
    }
    return result(c, status, e);
}

int dt_http_conn_in_request(const dt_http_conn *c) { return !c->done && c->partial > 0; }

int dt_http_conn_done(const dt_http_conn *c) { return c->done; }

void dt_http_conn_stop(dt_http_conn *c)
{
    c->stop = 1;
    c->done = 1;
}
