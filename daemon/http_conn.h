/* One HTTP/1.1 connection's request parsing, without sockets or clocks:
 * bytes in, complete requests (or one error status) out.  The server
 * (daemon/http.c) and the fuzzer (fuzz/fuzz_http.c) both use it.
 *
 * It wraps Debian's http-parser and adds dtune's rules:
 *   - request target longer than limits.max_url             → 414
 *   - header bytes (names + values) over max_header_bytes,
 *     more than DT_HTTP_MAX_HEADERS headers, or http-parser's
 *     own header limit                                     → 431
 *   - Content-Length over max_body                          → 413 (before the body is read)
 *   - Transfer-Encoding: chunked                            → 411 (send a Content-Length)
 *   - any other transfer coding, protocol upgrades, CONNECT → 501
 *   - a version other than HTTP/1.0 and HTTP/1.1            → 505
 *   - anything malformed (http-parser errors, a bad percent
 *     escape or %00 in the path)                            → 400
 *   - and what http-parser lets through (RFC 9112), also 400:
 *     a line of the head (request line, headers, the blank
 *     line, blank lines before a request) not ending in
 *     CR LF (a bare LF or a bare CR); whitespace in a header
 *     name (before its colon); a second Authorization
 *     header; a path, or a query once percent-decoded, that
 *     is not UTF-8 (malformed escapes in the query are left
 *     to the routes)
 * The head is checked byte by byte before http-parser sees it, and handed
 * to it up to its blank line; the body goes to it unchecked.
 * After an error, or after a request that does not keep the connection
 * alive (Connection: close, HTTP/1.0 without keep-alive), the connection is
 * done: further bytes are ignored.
 *
 * Ownership: a dt_http_conn owns its buffers (dt_http_conn_free); a parsed
 * request and every string in it belong to the dt_http_conn and are valid
 * only during the on_request call. */
#ifndef DT_DAEMON_HTTP_CONN_H
#define DT_DAEMON_HTTP_CONN_H

#include <http_parser.h>
#include <stddef.h>

#include "common/error.h"
#include "common/strbuf.h"
#include "daemon/http.h"

#define DT_HTTP_MAX_HEADERS 64

typedef struct dt_http_parsed {
    dt_http_request req;       /* req.peer is the peer given to dt_http_conn_init */
    int keep_alive;            /* the connection stays open after the answer */
    int head;                  /* the method is HEAD */
    int http_major, http_minor;
    const char *authorization; /* the Authorization header's value, or NULL */
} dt_http_parsed;

/* Called for every complete request, in the order they arrive. */
typedef void (*dt_http_on_request)(const dt_http_parsed *r, void *ud);
/* Called when a request's headers say "Expect: 100-continue" and they were
 * accepted (the server answers "100 Continue"); may be NULL. */
typedef void (*dt_http_on_continue)(void *ud);

typedef struct dt_http_conn {
    http_parser p;
    dt_http_limits lim;
    const char *peer;             /* borrowed */
    dt_http_on_request on_request;
    dt_http_on_continue on_continue;
    void *ud;
    dt_strbuf url, hdr, body;     /* the request being parsed */
    dt_strbuf pq;                 /* its decoded path and raw query */
    size_t hoff[DT_HTTP_MAX_HEADERS][2]; /* offsets of name and value in hdr */
    int nheaders;
    size_t hbytes;                /* header name and value bytes of this request */
    int in_value;                 /* the last header callback was a value */
    int in_body;                  /* headers complete, the message not yet */
    int head_cr;                  /* head check: the last byte was a CR */
    int head_bol;                 /* head check: at the start of a line */
    int head_seen;                /* head check: a byte of a request line seen */
    int expect_continue;
    size_t partial;               /* bytes of the request being parsed (0 between requests) */
    int done;                     /* no more requests on this connection */
    int stop;                     /* dt_http_conn_stop was called */
    int status;                   /* the error status (0 = none) */
    char msg[256];                /* its message */
    unsigned long long requests;  /* complete requests so far */
} dt_http_conn;

/* lim is copied; peer is borrowed and must outlive the conn (may be NULL). */
void dt_http_conn_init(dt_http_conn *c, const dt_http_limits *lim, const char *peer,
                       dt_http_on_request on_request, dt_http_on_continue on_continue,
                       void *ud);
void dt_http_conn_free(dt_http_conn *c);

/* Feeds n bytes (n may be 0).  Calls on_request for every request they
 * complete.  Returns 0, or DT_EINVAL when the bytes break a rule above:
 * *status (may be NULL) gets the status to answer (400, 411, 413, 414, 431,
 * 501, 503 when out of memory, 505) and e the message.  Once the connection is done (an error, a request
 * without keep-alive, dt_http_conn_stop) further calls return the same
 * result without parsing. */
int dt_http_conn_feed(dt_http_conn *c, const char *data, size_t n, int *status, dt_err *e);

/* The peer closed its side: DT_EINVAL with status 400 when a request was
 * cut off, else 0. */
int dt_http_conn_eof(dt_http_conn *c, int *status, dt_err *e);

/* Nonzero while a request is partly received (the request time-out runs). */
int dt_http_conn_in_request(const dt_http_conn *c);
/* Nonzero once no more requests will be parsed. */
int dt_http_conn_done(const dt_http_conn *c);
/* From on_request: parse nothing after this request. */
void dt_http_conn_stop(dt_http_conn *c);

#endif
