/* dtune_kernel_source: the stored kernel regenerated as C
 * (export/kernel_source.c), or, for a named workload, generated with that
 * workload's op attributes. */
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "export/export.h"
#include "libdtune/internal.h"
#include "microkernel/codegen.h"
#include "sketch/workload.h"

/* The source of kernel id for workload key (its op must be the kernel's). */
static int source_for(dt_db *db, int64_t id, const char *key, char **src, dt_err *e)
{
    dt_workload *w = NULL;
    int rc = dt_workload_parse_key(key, &w, e);
    if (rc)
        return rc;
    dt_annotation a;
    if (!(rc = dt_dispatch_kernel_annotation(db, id, w, &a, e))) {
        dt_kernel_op kop = {.op = w->op};
        memcpy(kop.attrs, w->attrs, sizeof kop.attrs);
        rc = dt_codegen(&kop, &a, src, e);
    }
    dt_workload_free(w);
    return rc;
}

DTUNE_API int dtune_kernel_source(dtune *db, int64_t kernel_id, const char *workload,
                                  char **src)
{
    if (!db || !src)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_kernel_source: db and src must not be NULL");
    *src = NULL;
    dt_err e;
    pthread_mutex_lock(&db->mu);
    int rc = workload ? source_for(db->db, kernel_id, workload, src, &e)
                      : dt_export_kernel_source(db->db, kernel_id, src, &e);
    pthread_mutex_unlock(&db->mu);
    return dt_lib_status(rc, &e);
}
