/* dtune_kernel_source: the stored kernel regenerated as C from its kernels
 * row (export/kernel_source.c).  A workload, when given, must be the one the
 * kernel was generated for (its op and attribute values): the row decides
 * the source, and a workload that disagrees is an error, not a second
 * source (docs/libdtune.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "libdtune/lib_internal.h"
#include "microkernel/codegen.h"
#include "shape/workload.h"

/* DT_EINVAL unless workload key is the op and attributes of kernel id. */
static int check_workload(dt_db *db, int64_t id, const char *key, dt_err *e)
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
    dt_kernel_op kop, wop = dt_kernel_op_of_workload(w);
    if ((rc = dt_kernel_op_from_row(row.op, row.dtype, row.attrs, &kop, e))) {
        dt_err_prefix(e, "kernel %lld", (long long)id);
    } else if (kop.op != wop.op || kop.dtype != wop.dtype ||
               memcmp(kop.attrs, wop.attrs, (size_t)kop.op->nattrs * sizeof kop.attrs[0])) {
        char k[DT_KOP_DESCRIBE_MAX], x[DT_KOP_DESCRIBE_MAX];
        dt_kernel_op_describe(&kop, k, sizeof k);
        dt_kernel_op_describe(&wop, x, sizeof x);
        rc = dt_errf(e, DT_EINVAL,
                     "kernel %lld is a '%s' kernel, workload %s is '%s'; look the kernel up "
                     "for this workload (dtune_lookup) or pass no workload",
                     (long long)id, k, key, x);
    }
    dt_db_kernel_free(&row);
    dt_workload_free(w);
    return rc;
}

DTUNE_API int dtune_kernel_source(dtune *db, int64_t kernel_id, const char *workload,
                                  char **src)
{
    if (!src)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_kernel_source: src is NULL");
    *src = NULL;
    int rc = dt_lib_check_kernel_id("dtune_kernel_source", db, kernel_id);
    if (rc)
        return rc;
    if (workload && !*workload)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_kernel_source: workload is empty (NULL, or "
                                         "the workload key the kernel was looked up for)");
    dt_err e;
    pthread_mutex_lock(&db->mu);
    rc = workload ? check_workload(db->db, kernel_id, workload, &e) : 0;
    if (rc == 0)
        rc = dt_export_kernel_source(db->db, kernel_id, src, &e);
    pthread_mutex_unlock(&db->mu);
    return dt_lib_status(rc, &e);
}
