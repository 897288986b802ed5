/* dtune_open, dtune_close, dtune_set_refresh_ms: a handle is a dispatch
 * cache (dispatch/cache.h) plus one more read-only connection for kernel
 * sources and exports. */
#include <stdlib.h>

#include "libdtune/lib_internal.h"

/* The public codes are the internal ones. */
_Static_assert((int)DTUNE_EINVAL == (int)DT_EINVAL &&
                   (int)DTUNE_ENOMEM == (int)DT_ENOMEM &&
                   (int)DTUNE_EIO == (int)DT_EIO &&
                   (int)DTUNE_EDB == (int)DT_EDB &&
                   (int)DTUNE_ENOTFOUND == (int)DT_ENOTFOUND &&
                   (int)DTUNE_ENOTDTUNE == (int)DT_ENOTDTUNE &&
                   (int)DTUNE_EVERSION == (int)DT_EVERSION &&
                   (int)DTUNE_EOVERFLOW == (int)DT_EOVERFLOW &&
                   (int)DTUNE_EUNSUPPORTED == (int)DT_EUNSUPPORTED &&
                   (int)DTUNE_EBUSY == (int)DT_EBUSY,
               "DTUNE_E* must equal DT_E*");

DTUNE_API int dtune_open(const char *path, dtune **out)
{
    if (!out)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_open: out is NULL");
    *out = NULL;
    if (!path || !*path)
        return dt_lib_fail(DTUNE_EINVAL, path ? "dtune_open: path is empty"
                                              : "dtune_open: path is NULL");
    dt_err e;
    dtune *h = calloc(1, sizeof *h);
    if (!h)
        return dt_lib_fail(DTUNE_ENOMEM, "dtune_open: out of memory");
    pthread_mutex_init(&h->mu, NULL);
    int rc = dt_dispatch_cache_open(path, &h->cache, &e);
    if (!rc)
        rc = dt_db_open(path, DT_DB_READONLY, &h->db, &e);
    if (rc) {
        dtune_close(h);
        return dt_lib_status(rc, &e);
    }
    *out = h;
    return dt_lib_status(0, NULL);
}

DTUNE_API void dtune_close(dtune *db)
{
    if (!db)
        return;
    dt_dispatch_cache_close(db->cache);
    dt_db_close(db->db);
    free(db->builder);
    pthread_mutex_destroy(&db->mu);
    free(db);
}

DTUNE_API void dtune_set_refresh_ms(dtune *db, int ms)
{
    if (db)
        dt_dispatch_cache_set_check_interval(db->cache, ms);
}

DTUNE_API void dtune_free(void *p) { free(p); }
