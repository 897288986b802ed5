/* client_err.h: one message per thread, as libdtune keeps its own. */
#include "client_err.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char tls_msg[2048];

int dt_tvm_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_msg, sizeof tls_msg, fmt, ap);
    va_end(ap);
    return code;
}

const char *dt_tvm_errmsg(void) { return tls_msg; }
