/* Trials, batches and their results: what the local runner measures and what
 * travels to remote workers (measure/wire.h).
 *
 * A trial is one micro-kernel measured on one shape.  A batch is one kernel
 * (its C source: sources travel, never binaries) with the op it computes (a
 * workload key) and the trials to run, plus the timing settings.  Every
 * trial carries a uid, unique across the whole tuning history, by which it is
 * recorded exactly once (db: measurements.trial_uid).
 *
 * Ownership: a dt_batch owns its source and trials; a dt_trial_result owns
 * its error text.  Free with dt_batch_free / dt_trial_result_free. */
#ifndef DT_MEASURE_TRIAL_H
#define DT_MEASURE_TRIAL_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "sketch/op.h"
#include "sketch/workload.h"

/* The names are the values stored in the database (measurements.status). */
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

const char *dt_trial_status_name(dt_trial_status s);
int dt_trial_status_parse(const char *name, dt_trial_status *out);

#define DT_TRIAL_UID_LEN 32 /* hex characters */

typedef struct dt_trial {
    char uid[DT_TRIAL_UID_LEN + 1];
    char shape[128];            /* canonical shape text of the workload, "M=37" */
    int64_t dims[DT_MAX_DIMS];  /* the op's concrete dims for that shape */
    int threads;                /* >= 1 */
} dt_trial;

typedef struct dt_timing {
    int warmup;           /* calls before timing (default 1) */
    double min_time_s;    /* repeat until this much time was measured (default 0.02) */
    int min_repeats;      /* at least this many timed calls (default 3) */
    int max_repeats;      /* at most (default 10000) */
    int flush_cache;      /* evict caches before each timed call: cold-cache numbers */
    double run_timeout_s; /* one trial's limit in the child, then kill (default 20) */
    uint64_t seed;        /* inputs */
} dt_timing;

void dt_timing_default(dt_timing *t);

typedef struct dt_batch {
    char workload[DT_KEY_MAX]; /* canonical workload key: the op, attrs and dims */
    char *source;              /* the kernel's C source (owned) */
    int ntrials;
    dt_trial *trials;          /* owned */
    dt_timing timing;
} dt_batch;

typedef struct dt_trial_result {
    char uid[DT_TRIAL_UID_LEN + 1];
    dt_trial_status status;
    double min_ns, median_ns;  /* NAN unless ok */
    int repeats;               /* timed calls */
    char *error;               /* what went wrong (owned), NULL when ok */
} dt_trial_result;

void dt_batch_free(dt_batch *b);
void dt_trial_result_free(dt_trial_result *r);

/* A fresh random uid (libsodium randombytes). */
void dt_trial_uid_new(char out[DT_TRIAL_UID_LEN + 1]);

/* Fills a trial for shape text of workload w (dims evaluated). */
int dt_trial_init(dt_trial *t, const dt_workload *w, const char *shape, int threads, dt_err *e);

/* JSON forms, used on the wire and in logs.  from_json validates types,
 * sizes (at most DT_BATCH_MAX_TRIALS trials, DT_BATCH_MAX_SOURCE bytes of
 * source) and re-parses the workload key. */
#define DT_BATCH_MAX_TRIALS 4096
#define DT_BATCH_MAX_SOURCE (4u << 20)
json_t *dt_batch_to_json(const dt_batch *b);
int dt_batch_from_json(const json_t *j, dt_batch *out, dt_err *e);
json_t *dt_trial_result_to_json(const dt_trial_result *r);
int dt_trial_result_from_json(const json_t *j, dt_trial_result *out, dt_err *e);

#endif
