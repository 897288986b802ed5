/* dtune_lookup, dtune_lookup_values: the dispatch cache's answer copied into
 * the caller's dtune_schedule. */
#include <stdio.h>
#include <string.h>

#include "libdtune/lib_internal.h"

_Static_assert(DTUNE_KEY_MAX == DT_KEY_MAX && DTUNE_TARGET_MAX == DT_TARGET_KEY_MAX &&
                   DTUNE_SHAPE_MAX == DT_DISPATCH_SHAPE_MAX &&
                   DTUNE_NAME_MAX == DT_DISPATCH_NAME_MAX &&
                   DTUNE_ANNOTATION_MAX == DT_DISPATCH_ANNOTATION_MAX,
               "dtune_schedule sizes must match dt_dispatch_cache_result's");

/* Copies a NUL-terminated string that fits (the sizes above match). */
#define COPY(dst, src) memcpy((dst), (src), strlen(src) + 1)

static int lookup(dtune *db, const char *fn, const dt_dispatch_query *q, dtune_schedule *out)
{
    int rc = dt_lib_check(fn, db, q->workload_key, q->target_key, q->threads, out, "out");
    if (rc)
        return rc;
    dt_err e;
    dt_dispatch_cache_result r;
    rc = dt_dispatch_cache_lookup(db->cache, q, &r, &e);
    if (rc)
        return dt_lib_status(rc, &e);
    out->kernel_id = r.kernel_id;
    COPY(out->op, r.op);
    COPY(out->sketch, r.sketch);
    COPY(out->annotation, r.annotation);
    out->predicted_ns = r.predicted_ns;
    out->measured_ns = r.measured_ns;
    out->extrapolated = r.extrapolated;
    out->threads = r.threads;
    COPY(out->shape, r.shape);
    COPY(out->range_lo, r.range_lo);
    COPY(out->range_hi, r.range_hi);
    COPY(out->workload, r.workload_key);
    COPY(out->target, r.target_key);
    return dt_lib_status(0, NULL);
}

DTUNE_API int dtune_lookup(dtune *db, const char *workload, const char *shape,
                           const char *target, int threads, dtune_schedule *out)
{
    if (!shape)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_lookup: shape is NULL (dtune_lookup_values "
                                         "takes values)");
    dt_dispatch_query q = {.workload_key = workload, .shape = shape, .target_key = target,
                           .threads = threads};
    return lookup(db, "dtune_lookup", &q, out);
}

DTUNE_API int dtune_lookup_values(dtune *db, const char *workload, const int64_t *vals,
                                  int nvals, const char *target, int threads,
                                  dtune_schedule *out)
{
    char msg[128];
    if (nvals < 0 || nvals > DT_MAX_VARS) {
        snprintf(msg, sizeof msg, "dtune_lookup_values: nvals is %d; a workload has 0..%d "
                 "variables", nvals, DT_MAX_VARS);
        return dt_lib_fail(DTUNE_EINVAL, msg);
    }
    if (!vals && nvals > 0)
        return dt_lib_fail(DTUNE_EINVAL, "dtune_lookup_values: vals is NULL");
    dt_dispatch_query q = {.workload_key = workload, .vals = vals, .nvals = nvals,
                           .target_key = target, .threads = threads};
    return lookup(db, "dtune_lookup_values", &q, out);
}
