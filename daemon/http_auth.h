/* The bearer-token rule of the daemon's HTTP server: when a token is
 * configured, POST, PUT, PATCH and DELETE need "Authorization: Bearer TOKEN".
 * The comparison takes the same time wherever the presented token differs. */
#ifndef DT_DAEMON_HTTP_AUTH_H
#define DT_DAEMON_HTTP_AUTH_H

/* Nonzero for the methods that need the token. */
int dt_http_method_mutates(const char *method);

/* Nonzero when authorization (a header value, may be NULL) is
 * "Bearer <token>" (scheme case-insensitive) with exactly token. */
int dt_http_bearer_ok(const char *authorization, const char *token);

#endif
