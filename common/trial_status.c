/* Trial status names (see trial_status.h). */
#include "common/trial_status.h"

#include <string.h>

#include "common/error.h"

/* Must match the CHECK constraint on measurements.status (db/db_schema.c). */
static const char *const status_names[DT_TRIAL_N_STATUS] = {
    [DT_TRIAL_OK] = "ok",
    [DT_TRIAL_COMPILE_ERROR] = "compile_error",
    [DT_TRIAL_COMPILE_TIMEOUT] = "compile_timeout",
    [DT_TRIAL_RUN_CRASH] = "run_crash",
    [DT_TRIAL_RUN_TIMEOUT] = "run_timeout",
    [DT_TRIAL_WRONG_ANSWER] = "wrong_answer",
    [DT_TRIAL_WORKER_LOST] = "worker_lost",
};

const char *dt_trial_status_name(dt_trial_status s)
{
    return (unsigned)s < DT_TRIAL_N_STATUS ? status_names[s] : NULL;
}

int dt_trial_status_parse(const char *name, dt_trial_status *out)
{
    for (int i = 0; name && i < DT_TRIAL_N_STATUS; i++)
        if (strcmp(name, status_names[i]) == 0) {
            *out = (dt_trial_status)i;
            return DT_OK;
        }
    return DT_EINVAL;
}
