/* HTTP/1.1 response bytes: the status line, dtune's standard headers
 * (Server, Date, Content-Type, Content-Length, Connection) and the body;
 * and the JSON error body every server-made error carries:
 * {"error": {"status": N, "message": "..."}}.
 *
 * Ownership: the returned buffers are malloc'ed and belong to the caller. */
#ifndef DT_DAEMON_HTTP_MSG_H
#define DT_DAEMON_HTTP_MSG_H

#include <stddef.h>

#include "common/error.h"

#define DT_HTTP_SERVER_NAME "dtune/" DTUNE_VERSION

/* The reason phrase of status ("Not Found"); "Unknown" for others. */
const char *dt_http_reason(int status);

/* Serialises one response into *out (*out_len bytes).  content_type NULL
 * means "application/json"; head omits the body but keeps its
 * Content-Length; extra_headers are complete "Name: value\r\n" lines or
 * NULL.  DT_ENOMEM when out of memory. */
int dt_http_format_response(int status, const char *content_type, const char *body,
                            size_t body_len, int keep_alive, int head,
                            const char *extra_headers, char **out, size_t *out_len, dt_err *e);

/* The JSON error body for status and message (malloc'ed, NUL-terminated,
 * *len bytes), or NULL when out of memory.  A message that is not UTF-8 is
 * sent as dt_http_utf8_text makes it. */
char *dt_http_error_json(int status, const char *message, size_t *len);

/* Offset of the first byte of s[0..n) that is not part of well-formed UTF-8
 * (RFC 3629: no overlong forms, no surrogates, nothing over U+10FFFF; a
 * sequence cut off by the end counts), or n when it all is. */
size_t dt_http_utf8_bad(const char *s, size_t n);

/* Copies the NUL-terminated in to out (size n > 0, always terminated),
 * writing each byte that is not part of well-formed UTF-8 as the four
 * characters \xNN, so that the text can go into JSON (jansson refuses
 * anything else); cut at a character boundary when out is too small.
 * Returns out. */
char *dt_http_utf8_text(const char *in, char *out, size_t n);

#endif
