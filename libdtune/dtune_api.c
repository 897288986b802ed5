/* Implementation of include/dtune/dtune.h on top of the internal modules. */
#include "dtune/dtune.h"

#include <stdio.h>

#include "common/target.h"
#include "sketch/workload.h"

DTUNE_API const char *dtune_version(void) { return DTUNE_VERSION; }

DTUNE_API int dtune_workload_canonical(const char *key, char *out, size_t out_size, char *err,
                                       size_t err_size)
{
    dt_err e;
    dt_workload *w = NULL;
    if (!key || (!out && out_size)) {
        if (err && err_size)
            snprintf(err, err_size, "%s is NULL", key ? "out" : "key");
        return DT_EINVAL;
    }
    int rc = dt_workload_parse_key(key, &w, &e);
    if (rc) {
        if (err && err_size)
            snprintf(err, err_size, "%s", e.msg);
        return rc;
    }
    size_t need = dt_workload_key(w, out, out_size);
    dt_workload_free(w);
    if (need >= out_size) {
        if (err && err_size)
            snprintf(err, err_size, "output buffer too small: %zu bytes needed", need + 1);
        return DT_EINVAL;
    }
    return 0;
}

DTUNE_API int dtune_target_key(char *out, size_t out_size, char *err, size_t err_size)
{
    dt_target t;
    dt_err e;
    int rc = dt_target_detect(&t, &e);
    if (!rc && dt_target_key(&t, out, out_size) != 0)
        rc = dt_errf(&e, DT_EINVAL, "output buffer too small for the target key");
    if (rc && err && err_size)
        snprintf(err, err_size, "%s", e.msg);
    return rc;
}
