/* dtune_kernel_source: the stored kernel regenerated as C
 * (export/kernel_source.c), or, for a named workload, generated with that
 * workload's op attributes. */
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "libdtune/internal.h"
#include "microkernel/codegen.h"
#include "sketch/annotation.h"
#include "sketch/workload.h"

/* The source of kernel id for workload key (its op must be the kernel's). */
static int source_for(dt_db *db, int64_t id, const char *key, char **src, dt_err *e)
{
    dt_workload *w = NULL;
    int rc = dt_workload_parse_key(key, &w, e);
    if (rc)
        return rc;
    dt_db_kernel row;
    if ((rc = dt_db_kernel_get(db, id, &row, e))) {
        if (rc == DT_ENOTFOUND)
            dt_errf(e, rc, "no kernel %lld in %s", (long long)id, dt_db_path(db));
        dt_workload_free(w);
        return rc;
    }
    dt_annotation a;
    if (strcmp(row.op, w->op->name) != 0)
        rc = dt_errf(e, DT_EINVAL, "kernel %lld is a %s kernel; %s is a %s workload",
                     (long long)id, row.op, key, w->op->name);
    else if ((rc = dt_annotation_from_text(row.annotation, &a, e)))
        dt_err_prefix(e, "kernel %lld", (long long)id);
    else {
        dt_kernel_op kop = {.op = w->op};
        memcpy(kop.attrs, w->attrs, sizeof kop.attrs);
        rc = dt_codegen(&kop, &a, src, e);
    }
    dt_db_kernel_free(&row);
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
