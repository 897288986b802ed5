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
};

/* Records the outcome of a public call for dtune_errmsg: e->msg when rc is
 * an error, "" when rc is 0.  Returns rc. */
int dt_lib_status(int rc, const dt_err *e);

/* dt_lib_status(code, message) without a dt_err. */
int dt_lib_fail(int code, const char *msg);

#endif
