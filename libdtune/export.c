/* dtune_export: dt_export_write (export/export.h) on the handle's second
 * connection; a NULL target is the machine detected at dtune_open, as for
 * lookups. */
#include "export/export.h"
#include "libdtune/lib_internal.h"

DTUNE_API int dtune_export(dtune *db, const char *workload, const char *target, int threads,
                           const char *out_c_path)
{
    int rc = dt_lib_check("dtune_export", db, workload, target, threads, out_c_path,
                          "out_c_path");
    if (rc)
        return rc;
    if (!*out_c_path)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_export: out_c_path is empty (a path "
                                         "\".../NAME.c\")");
    dt_export_opts o = {.workload_key = workload,
                        .target_key = target ? target : dt_dispatch_cache_local_target(db->cache),
                        .threads = threads};
    dt_err e;
    pthread_mutex_lock(&db->mu);
    rc = dt_export_write(db->db, &o, out_c_path, &e);
    pthread_mutex_unlock(&db->mu);
    return dt_lib_status(rc, &e);
}
