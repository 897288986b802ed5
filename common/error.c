#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int dt_errf(dt_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int dt_err_prefix(dt_err *e, const char *fmt, ...)
{
    if (!e)
        return DT_EINVAL;
    char prefix[DT_ERR_MSG_MAX], old[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* the message may be cut at DT_ERR_MSG_MAX: the start says the most */
    int room = (int)sizeof e->msg;
    snprintf(e->msg, sizeof e->msg, "%.*s: %.*s", room / 2, prefix, room / 2 - 3, old);
    return e->code;
}

void dt_err_clear(dt_err *e)
{
    if (e) {
        e->code = DT_OK;
        e->msg[0] = '\0';
    }
}

const char *dt_strerror(int code)
{
    switch (code) {
    case DT_OK: return "ok";
    case DT_EINVAL: return "invalid input";
    case DT_ENOMEM: return "out of memory";
    case DT_EIO: return "I/O error";
    case DT_EDB: return "database error";
    case DT_ENOTFOUND: return "not found";
    case DT_ENOTDTUNE: return "not a dtune database";
    case DT_EVERSION: return "database version not supported";
    case DT_EOVERFLOW: return "integer overflow";
    case DT_EUNSUPPORTED: return "unsupported";
    case DT_EBUSY: return "busy";
    default: return "unknown error";
    }
}

int dt_exit_code(int code)
{
    switch (code) {
    case DT_OK: return 0;
    case DT_EINVAL:
    case DT_ENOTFOUND:
    case DT_ENOTDTUNE:
    case DT_EVERSION:
    case DT_EOVERFLOW:
    case DT_EUNSUPPORTED:
        return 2;
    default:
        return 3;
    }
}
