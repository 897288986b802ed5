/* Implementation of include/dtune/dtune.h on top of the internal modules. */
#include "dtune/dtune.h"

#include <stdio.h>
#include <string.h>

#include "common/target.h"
#include "libdtune/lib_internal.h"
#include "backends/backend.h"
#include "shape/workload.h"

DTUNE_API const char *dtune_version(void) { return DTUNE_VERSION; }

/* Records the outcome for dtune_errmsg and, when err can take it (the first
 * versions' buffer), copies the message there too.  Returns rc. */
static int report(int rc, const dt_err *e, char *err, size_t err_size)
{
    dt_lib_status(rc, e);
    if (rc && err && err_size)
        snprintf(err, err_size, "%s", dtune_errmsg());
    return rc;
}

/* dtune_canonicalize with the message also in err (NULL: nowhere else);
 * `fn` names the entry point in messages. */
static int canonicalize(const char *fn, const char *key, char *out, size_t out_size, char *err,
                        size_t err_size)
{
    dt_err e;
    dt_workload *w = NULL;
    if (!key)
        return report(dt_errf(&e, DT_EINVAL, "%s: key is NULL", fn), &e, err, err_size);
    if (!out && out_size)
        return report(dt_errf(&e, DT_EINVAL, "%s: out is NULL but out_size is %zu", fn,
                              out_size),
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

static int machine_key(const char *fn, char *out, size_t out_size, char *err, size_t err_size)
{
    dt_target t;
    dt_err e;
    if (!out)
        return report(dt_errf(&e, DT_EINVAL, "%s: out is NULL", fn), &e, err, err_size);
    int rc = dt_target_detect(&t, &e);
    if (!rc && dt_target_key(&t, out, out_size) != 0)
        rc = dt_errf(&e, DT_EINVAL, "output buffer too small for the target key (%zu bytes; "
                                    "DTUNE_TARGET_MAX is enough)", out_size);
    return report(rc, &e, err, err_size);
}

DTUNE_API int dtune_canonicalize(const char *key, char *out, size_t out_size)
{
    return canonicalize("dtune_canonicalize", key, out, out_size, NULL, 0);
}

DTUNE_API int dtune_machine_key(char *out, size_t out_size)
{
    return machine_key("dtune_machine_key", out, out_size, NULL, 0);
}

DTUNE_API int dtune_backend(const char *workload, const char *annotation, char *out,
                            size_t out_size)
{
    dt_err e;
    if (!workload || !annotation || !out)
        return report(dt_errf(&e, DT_EINVAL, "dtune_backend: %s is NULL",
                              !workload ? "workload" : !annotation ? "annotation" : "out"),
                      &e, NULL, 0);
    dt_workload *w = NULL;
    char name[DTUNE_NAME_MAX];
    int rc = dt_workload_parse_key(workload, &w, &e);
    if (!rc && (rc = dt_backend_name_of_text(w->dtype, annotation, name, (int)sizeof name, &e)))
        dt_err_prefix(&e, "dtune_backend");
    if (!rc) {
        if (strlen(name) >= out_size)
            rc = dt_errf(&e, DT_EINVAL, "output buffer too small: %zu bytes needed",
                         strlen(name) + 1);
        else
            memcpy(out, name, strlen(name) + 1);
    }
    dt_workload_free(w);
    return report(rc, &e, NULL, 0);
}

DTUNE_API int dtune_workload_canonical(const char *key, char *out, size_t out_size, char *err,
                                       size_t err_size)
{
    return canonicalize("dtune_workload_canonical", key, out, out_size, err, err_size);
}

DTUNE_API int dtune_target_key(char *out, size_t out_size, char *err, size_t err_size)
{
    return machine_key("dtune_target_key", out, out_size, err, err_size);
}
