/* Bearer-token check (daemon/http_auth.h). */
#include "daemon/http_auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int dt_http_method_mutates(const char *method)
{
    return !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH") ||
           !strcmp(method, "DELETE");
}

int dt_http_token_check(const char *token, size_t len, const char *what, dt_err *e)
{
    if (!what)
        what = "the API token";
    if (!token || len == 0)
        return dt_errf(e, DT_EINVAL, "%s is empty", what);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)token[i];
        if (ch > 0x20 && ch < 0x7f)
            continue;
        char byte[32];
        if (ch == ' ')
            snprintf(byte, sizeof byte, "a space");
        else if (ch == 0)
            snprintf(byte, sizeof byte, "a NUL byte");
        else
            snprintf(byte, sizeof byte, "byte 0x%02x", ch);
        return dt_errf(e, DT_EINVAL,
                       "%s has %s at byte offset %zu; an API token must be one word of "
                       "visible ASCII characters (it is sent in an Authorization header; make "
                       "one with: head -c 32 /dev/urandom | base64 > FILE)",
                       what, byte, i);
    }
    return 0;
}

/* Constant time in the presented value: every byte of the expected token is
 * compared, whatever the presented length, and no branch depends on the
 * bytes. */
static int ct_equal(const char *got, size_t glen, const char *want, size_t wlen)
{
    volatile unsigned char d = (unsigned char)(glen != wlen);
    for (size_t i = 0; i < wlen; i++) {
        unsigned char g = i < glen ? (unsigned char)got[i] : 0;
        d |= (unsigned char)(g ^ (unsigned char)want[i]);
    }
    return d == 0;
}

int dt_http_bearer_ok(const char *authorization, const char *token, size_t token_len)
{
    if (!token)
        return 1;
    if (token_len == 0)
        return 0;
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return 0;
    const char *got = authorization + 7;
    while (*got == ' ')
        got++;
    /* the presented value is the client's, so strlen is fine on it; a header
     * value cannot hold a NUL (http-parser refuses one) */
    return ct_equal(got, strlen(got), token, token_len);
}
