/* The bearer-token rule of the daemon's HTTP server: when a token is
 * configured, POST, PUT, PATCH and DELETE need "Authorization: Bearer TOKEN".
 * The token is carried with its length and compared whole, in the same time
 * wherever the presented token differs; it is never a C string here. */
#ifndef DT_DAEMON_HTTP_AUTH_H
#define DT_DAEMON_HTTP_AUTH_H

#include <stddef.h>

#include "common/error.h"

/* Nonzero for the methods that need the token. */
int dt_http_method_mutates(const char *method);

/* 0 when token[0..len) can be an API token: at least one byte, every byte a
 * visible ASCII character 0x21..0x7e (the token travels as one word in an
 * Authorization header: a NUL would cut it, a control character cannot be
 * sent, spaces and tabs at its ends are stripped by the parser, and bytes
 * over 0x7e are not portable in header values).  Else DT_EINVAL saying which
 * byte at which offset (what, e.g. "the API token", starts the message). */
int dt_http_token_check(const char *token, size_t len, const char *what, dt_err *e);

/* Nonzero when authorization (a header value, may be NULL) is
 * "Bearer <token>" (scheme case-insensitive, spaces after it skipped) with
 * exactly the token_len bytes of token.  token NULL: no token is
 * configured, always nonzero.  A token of length 0 matches nothing. */
int dt_http_bearer_ok(const char *authorization, const char *token, size_t token_len);

#endif
