/* dt_export_kernel_source (export/export.h): the C source of a stored
 * kernel, regenerated from its kernels row the way the tuner generated it
 * (tuner/measurer.c: dt_codegen of the workload's op and attributes and the
 * annotation).
 *
 * A kernels row keeps the op's name, the sketch and the annotation, not the
 * op's attribute values (an epilogue, a layout).  They are
 * recovered from source_hash, the hash of the source the tuner built
 * (dt_hash_strings of the source alone): every attribute combination of the
 * op is generated until one hashes to it.  A row without a hash, or whose
 * hash matches none (another generator version), gets the op's default
 * attributes. */
#include "export/export.h"

#include <stdlib.h>
#include <string.h>

#include "microkernel/build.h"
#include "microkernel/codegen.h"
#include "sketch/annotation.h"
#include "sketch/op.h"

/* Regenerates the source of (op, annotation) whose hash is want (NULL: the
 * default attributes). */
static int regenerate(const dt_op_desc *op, const dt_annotation *a, const char *want,
                      char **src, dt_err *e)
{
    dt_kernel_op kop = {.op = op};
    if (want && *want) {
        do {
            char *s = NULL;
            int rc = dt_codegen(&kop, a, &s, e);
            if (rc)
                return rc;
            char hash[65];
            const char *parts = s;
            dt_hash_strings(&parts, 1, hash);
            if (strcmp(hash, want) == 0) {
                *src = s;
                return 0;
            }
            free(s);
        } while (dt_op_next_attrs(op, kop.attrs));
    }
    for (int i = 0; i < op->nattrs; i++)
        kop.attrs[i] = op->attrs[i].default_index;
    return dt_codegen(&kop, a, src, e);
}

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
    const dt_op_desc *op = dt_op_find(row.op);
    dt_annotation a;
    if (!op)
        rc = dt_errf(e, DT_EUNSUPPORTED, "kernel %lld: unknown op '%s'", (long long)kernel_id,
                     row.op);
    else if ((rc = dt_annotation_from_text(row.annotation, &a, e)))
        dt_err_prefix(e, "kernel %lld", (long long)kernel_id);
    else if ((rc = regenerate(op, &a, row.source_hash, src, e)))
        dt_err_prefix(e, "generating kernel %lld", (long long)kernel_id);
    dt_db_kernel_free(&row);
    return rc;
}
