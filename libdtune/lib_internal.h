/* Private to libdtune/: the handle behind include/dtune/dtune.h and the
 * thread-local error message.  Nothing here is exported (the library is
 * built with -fvisibility=hidden and --exclude-libs,ALL). */
#ifndef DT_LIBDTUNE_INTERNAL_H
#define DT_LIBDTUNE_INTERNAL_H

#include <pthread.h>

#include "common/error.h"
#include "db/db.h"
#include "dispatch/cache.h"
#include "dtune/dtune.h"

struct dtune {
    dt_dispatch_cache *cache; /* lookups (its own read-only connection) */
    pthread_mutex_t mu;       /* guards db */
    dt_db *db;                /* read-only: kernel sources and exports */
    struct dt_builder *builder; /* guarded by mu: the kernel builder, made on the first
                                 * dtune_kernel_load (it runs `cc --version`) */
};

/* The highest thread count a lookup or export accepts: a schedule is tuned
 * for at most the cores of a target, and no machine has more than this. */
#define DT_LIB_MAX_THREADS 65536

/* Checks a call's common arguments: fn names the function in the message;
 * db, workload and out must not be NULL (out: any pointer that must be
 * set), workload and target (when not NULL) must not be empty, threads
 * must be 0..DT_LIB_MAX_THREADS.  Returns 0 or dt_lib_fail(DTUNE_EINVAL). */
int dt_lib_check(const char *fn, const dtune *db, const char *workload, const char *target,
                 int threads, const void *out, const char *out_name);

/* Checks a kernel call's handle and id: db not NULL, kernel_id >= 1.
 * Returns 0 or dt_lib_fail(DTUNE_EINVAL) naming fn. */
int dt_lib_check_kernel_id(const char *fn, const dtune *db, int64_t kernel_id);

/* Records the outcome of a public call for dtune_errmsg: e->msg when rc is
 * an error, "" when rc is 0.  Returns rc. */
int dt_lib_status(int rc, const dt_err *e);

/* dt_lib_status(code, message) without a dt_err. */
int dt_lib_fail(int code, const char *msg);

#endif
