/* dtune_errmsg and dtune_errstr: one message per thread (thread-local), so
 * threads that share a handle never read each other's errors. */
#include <stdio.h>

#include "libdtune/internal.h"

static _Thread_local char tls_msg[DT_ERR_MSG_MAX];

int dt_lib_status(int rc, const dt_err *e)
{
    if (rc == 0)
        tls_msg[0] = '\0';
    else
        snprintf(tls_msg, sizeof tls_msg, "%s", e && e->msg[0] ? e->msg : dt_strerror(rc));
    return rc;
}

int dt_lib_fail(int code, const char *msg)
{
    snprintf(tls_msg, sizeof tls_msg, "%s", msg);
    return code;
}

DTUNE_API const char *dtune_errmsg(void) { return tls_msg; }

DTUNE_API const char *dtune_errstr(int code) { return dt_strerror(code); }
