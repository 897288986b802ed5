/* Implementation of include/dtune/dtune.h on top of the internal modules. */
#include "dtune/dtune.h"

#include <stdio.h>

#include "common/target.h"
#include "libdtune/internal.h"
#include "sketch/workload.h"

DTUNE_API const char *dtune_version(void) { return DTUNE_VERSION; }

/* Records the outcome for dtune_errmsg and, when err can take it, copies the
 * message there too.  Returns rc. */
static int report(int rc, const dt_err *e, char *err, size_t err_size)
{
    dt_lib_status(rc, e);
    if (rc && err && err_size)
        snprintf(err, err_size, "%s", dtune_errmsg());
    return rc;
}

DTUNE_API int dtune_workload_canonical(const char *key, char *out, size_t out_size, char *err,
                                       size_t err_size)
{
    dt_err e;
    dt_workload *w = NULL;
    if (!key)
        return report(dt_errf(&e, DT_EINVAL, "dtune_workload_canonical: key is NULL"), &e, err,
                      err_size);
    if (!out && out_size)
        return report(dt_errf(&e, DT_EINVAL, "dtune_workload_canonical: out is NULL but "
                                             "out_size is %zu", out_size),
                      &e, err, err_size);
    int rc = dt_workload_parse_key(key, &w, &e);
    if (rc)
        return report(rc, &e, err, err_size);
    size_t need = dt_workload_key(w, out, out_size);
    dt_workload_free(w);
    if (need >= out_size)
        return report(dt_errf(&e, DT_EINVAL, "output buffer too small: %zu bytes needed",
                              need + 1),
                      &e, err, err_size);
    return report(0, NULL, err, err_size);
}

DTUNE_API int dtune_target_key(char *out, size_t out_size, char *err, size_t err_size)
{
    dt_target t;
    dt_err e;
    if (!out)
        return report(dt_errf(&e, DT_EINVAL, "dtune_target_key: out is NULL"), &e, err,
                      err_size);
    int rc = dt_target_detect(&t, &e);
    if (!rc && dt_target_key(&t, out, out_size) != 0)
        rc = dt_errf(&e, DT_EINVAL, "output buffer too small for the target key (%zu bytes; "
                                    "DTUNE_TARGET_MAX is enough)", out_size);
    return report(rc, &e, err, err_size);
}
