/* dtune_errmsg and dtune_errstr: one message per thread (thread-local), so
 * threads that share a handle never read each other's errors.  A message
 * quotes what the caller passed (a key, a path, a shape); its control
 * characters are escaped (common/escape.h) as the CLI does, so a caller that
 * prints or logs dtune_errmsg() cannot be made to write a forged line. */
#include <stdio.h>

#include "common/escape.h"
#include "libdtune/lib_internal.h"

static _Thread_local char tls_msg[DT_ERR_MSG_MAX];

int dt_lib_status(int rc, const dt_err *e)
{
    if (rc == 0)
        tls_msg[0] = '\0';
    else
        dt_escape(e && e->msg[0] ? e->msg : dt_strerror(rc), tls_msg, sizeof tls_msg);
    return rc;
}

int dt_lib_fail(int code, const char *msg)
{
    dt_escape(msg, tls_msg, sizeof tls_msg);
    return code;
}

int dt_lib_check(const char *fn, const dtune *db, const char *workload, const char *target,
                 int threads, const void *out, const char *out_name)
{
    char msg[160];
    if (!db)
        snprintf(msg, sizeof msg, "%s: db is NULL (open one with dtune_open)", fn);
    else if (!workload || !*workload)
        snprintf(msg, sizeof msg, "%s: workload is %s (a workload key, e.g. "
                 "\"dense(M=1..128,N=768,K=768)\")", fn, workload ? "empty" : "NULL");
    else if (target && !*target)
        snprintf(msg, sizeof msg, "%s: target is empty (a target key, or NULL for this "
                 "machine)", fn);
    else if (threads < 0 || threads > DT_LIB_MAX_THREADS)
        snprintf(msg, sizeof msg, "%s: threads is %d; it must be 0..%d (0: the highest tuned "
                 "count)", fn, threads, DT_LIB_MAX_THREADS);
    else if (!out)
        snprintf(msg, sizeof msg, "%s: %s is NULL", fn, out_name);
    else
        return 0;
    return dt_lib_fail(DTUNE_EINVAL, msg);
}

int dt_lib_check_kernel_id(const char *fn, const dtune *db, int64_t kernel_id)
{
    char msg[160];
    if (!db)
        snprintf(msg, sizeof msg, "%s: db is NULL (open one with dtune_open)", fn);
    else if (kernel_id < 1)
        snprintf(msg, sizeof msg, "%s: kernel id %lld is not one (ids are >= 1, from "
                 "dtune_lookup)", fn, (long long)kernel_id);
    else
        return 0;
    return dt_lib_fail(DTUNE_EINVAL, msg);
}

DTUNE_API const char *dtune_errmsg(void) { return tls_msg; }

DTUNE_API const char *dtune_errstr(int code) { return dt_strerror(code); }
