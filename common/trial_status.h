/* The outcome of one trial (a micro-kernel measured on one shape): the one
 * status enum shared by measure/ (the runner, the wire, the pool) and db/
 * (measurements.status).  It lives in common/ because common/ is below both
 * and neither may include the other.
 *
 * The names are the values stored in the database (the CHECK constraint on
 * measurements.status) and sent on the wire (docs/measurement.md). */
#ifndef DT_COMMON_TRIAL_STATUS_H
#define DT_COMMON_TRIAL_STATUS_H

typedef enum {
    DT_TRIAL_OK = 0,
    DT_TRIAL_COMPILE_ERROR,
    DT_TRIAL_COMPILE_TIMEOUT,
    DT_TRIAL_RUN_CRASH,
    DT_TRIAL_RUN_TIMEOUT,
    DT_TRIAL_WRONG_ANSWER,
    DT_TRIAL_WORKER_LOST,
    DT_TRIAL_N_STATUS
} dt_trial_status;

/* "ok", "compile_error", ...; NULL for a value outside the enum. */
const char *dt_trial_status_name(dt_trial_status s);
/* Parses a name; DT_EINVAL if unknown (or NULL). */
int dt_trial_status_parse(const char *name, dt_trial_status *out);

#endif
