/* The daemon's HTTP/1.1 server: libuv for the network, Debian's http-parser
 * for the protocol (docs/http.md).  It accepts connections, parses requests
 * (keep-alive, pipelining answered in order, Content-Length bodies; chunked
 * bodies are refused with 411 Length Required, other transfer codings and
 * upgrades with 501), enforces limits and time-outs, checks the bearer token
 * on mutating methods, and hands each complete request to one handler on
 * the loop thread.  Every error it answers itself is a JSON body
 * {"error": {"status": N, "message": "..."}}.
 *
 * HEAD is answered as GET without the body: the handler sees method "GET"
 * and the response keeps the Content-Length of the body it would have had.
 *
 * Threads: every function here runs on the loop's thread (start may also be
 * called before the loop runs); the handler runs there too.
 *
 * Ownership: the request and everything it points to are valid only during
 * the handler call; the handler fills the response and the server takes
 * ownership of res->body (malloc'ed).  A non-NULL body with body_len 0 is
 * taken as a NUL-terminated string (its strlen is sent). */
#ifndef DT_DAEMON_HTTP_H
#define DT_DAEMON_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/error.h"

typedef struct dt_http_header {
    const char *name;  /* lower-cased */
    const char *value;
} dt_http_header;

typedef struct dt_http_request {
    const char *method;         /* "GET", "POST", "DELETE", ... */
    const char *path;           /* percent-decoded path without the query: "/v1/jobs/3" */
    const char *query;          /* raw query string after '?', "" when none */
    const dt_http_header *headers;
    int nheaders;
    const char *body;           /* NUL-terminated copy, "" when none */
    size_t body_len;
    const char *peer;           /* "127.0.0.1:53422" */
} dt_http_request;

typedef struct dt_http_response {
    int status;                 /* default 200 */
    const char *content_type;   /* static string; default "application/json" */
    char *body;                 /* malloc'ed, taken by the server; NULL = empty */
    size_t body_len;
} dt_http_response;

typedef void (*dt_http_handler)(const dt_http_request *req, dt_http_response *res, void *ud);

/* A zero field in the limits given to dt_http_server_start means its default. */
typedef struct dt_http_limits {
    size_t max_url;             /* bytes of the request target (default 2048) → 414 */
    size_t max_header_bytes;    /* header name + value bytes of one request (default 16 KiB),
                                 * or more than 64 headers → 431 */
    size_t max_body;            /* Content-Length (default 1 MiB) → 413 */
    int max_connections;        /* open at once (default 256); see evict_idle_s */
    double idle_timeout_s;      /* keep-alive connection with no request (default 30) */
    double request_timeout_s;   /* a request must arrive whole within this (default 10) → 408 */
    double evict_idle_s;        /* at max_connections, a new connection closes the connection
                                 * idle longest (no request in progress, nothing being
                                 * written) if it has been idle at least this long (default
                                 * 1 s); when none has, the new one is closed at accept */
} dt_http_limits;
void dt_http_limits_default(dt_http_limits *l);

typedef struct dt_http_server_opts {
    const char *listen;         /* "127.0.0.1:8710"; port 0 = ephemeral */
    const char *token;          /* bearer token (token_len bytes, copied) or NULL for none:
                                 * when set, POST/PUT/PATCH/DELETE need "Authorization:
                                 * Bearer TOKEN" → else 401 with "WWW-Authenticate: Bearer"
                                 * (compared whole, in constant time).  A set token is always
                                 * enforced: it must pass dt_http_token_check
                                 * (daemon/http_auth.h), else the server does not start. */
    size_t token_len;
    dt_http_limits limits;
    dt_http_handler handler;
    void *ud;
} dt_http_server_opts;

typedef struct dt_http_server dt_http_server;

typedef struct dt_http_stats {
    uint64_t connections_total, connections_open;
    uint64_t requests_total;    /* handed to the handler */
    uint64_t rejected_total;    /* answered by the server itself (4xx/5xx, docs/http.md) */
    uint64_t refused_total;     /* closed at accept: over max_connections */
    uint64_t evicted_total;     /* idle connections closed to admit a new one */
} dt_http_stats;

/* Parses a listen address: IPV4:PORT, localhost:PORT or [IPV6]:PORT (host
 * names are not resolved), port 0..65535.  DT_EINVAL with "bad WHAT address
 * 'X' (expected HOST:PORT...)" (what: e.g. "--listen"). */
int dt_http_parse_listen(const char *listen, const char *what, struct sockaddr_storage *ss,
                         dt_err *e);

/* Binds and starts listening on loop.  o->listen as dt_http_parse_listen.  Ignores
 * SIGPIPE for the process (a write to a vanished client is then an error on
 * that connection only).  DT_EINVAL for a malformed address or a token that
 * fails dt_http_token_check, DT_EIO when it cannot bind (the half-made
 * server is then freed by the loop's next run). */
int dt_http_server_start(uv_loop_t *loop, const dt_http_server_opts *o, dt_http_server **out,
                         dt_err *e);
int dt_http_server_port(const dt_http_server *s);   /* the bound port */
void dt_http_server_stats_get(const dt_http_server *s, dt_http_stats *st);
/* Stops accepting, closes every connection (a response being written is
 * finished first) and frees s once the loop has closed its handles. */
void dt_http_server_close(dt_http_server *s);

#endif
