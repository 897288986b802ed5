/* dt_export_kernel_source (export/export.h): the C source of a stored
 * kernel, regenerated from its kernels row alone the way the tuner generated
 * it (tuner/measurer.c: dt_codegen of the op, dtype and attribute values
 * and the annotation).  Since schema 2 the row holds the op's dtype and
 * attribute values (docs/database.md, "kernels"), so the row decides the
 * source: one sketch and annotation generated for two epilogues are two
 * rows. */
#include "export/export.h"

#include <stdlib.h>

#include "microkernel/codegen.h"
#include "space/annotation.h"

int dt_export_kernel_source(dt_db *db, int64_t kernel_id, char **src, dt_err *e)
{
    *src = NULL;
    dt_db_kernel row;
    int rc = dt_db_kernel_get(db, kernel_id, &row, e);
    if (rc) {
        if (rc == DT_ENOTFOUND)
            dt_errf(e, rc, "no kernel %lld in %s", (long long)kernel_id, dt_db_path(db));
        return rc;
    }
    dt_kernel_op kop;
    dt_annotation a;
    if ((rc = dt_kernel_op_from_row(row.op, row.dtype, row.attrs, &kop, e)) ||
        (rc = dt_annotation_from_text(row.annotation, &a, e)))
        dt_err_prefix(e, "kernel %lld", (long long)kernel_id);
    else if ((rc = dt_codegen(&kop, &a, src, e)))
        dt_err_prefix(e, "generating kernel %lld", (long long)kernel_id);
    dt_db_kernel_free(&row);
    return rc;
}
