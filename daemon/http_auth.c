/* Bearer-token check (daemon/http_auth.h). */
#include "daemon/http_auth.h"

#include <string.h>
#include <strings.h>

int dt_http_method_mutates(const char *method)
{
    return !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH") ||
           !strcmp(method, "DELETE");
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

int dt_http_bearer_ok(const char *authorization, const char *token)
{
    if (!token)
        return 1;
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return 0;
    const char *got = authorization + 7;
    while (*got == ' ')
        got++;
    return ct_equal(got, strlen(got), token, strlen(token));
}
