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
#include "common/trial_status.h"
#include "ops/op.h"
#include "shape/workload.h"

/* A trial's outcome is a dt_trial_status (common/trial_status.h): the same
 * enum the database stores in measurements.status. */

#define DT_TRIAL_UID_LEN 32 /* hex characters */

/* In process a shape is its values (one per workload variable, in the
 * workload's variable order); the canonical text is derived from them and is
 * what travels on the wire, appears in messages and is stored in the
 * database. */
typedef struct dt_trial {
    char uid[DT_TRIAL_UID_LEN + 1];
    int64_t vals[DT_MAX_VARS];  /* the shape's values */
    char shape[128];            /* their canonical text, "M=37" (wire, messages, records) */
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

/* Fills a trial (fresh uid) for the shape vals[w->nvars] of workload w:
 * the canonical text is formatted and the dims evaluated, never parsed.
 * Values outside the domains are fine (any kernel runs any shape); dims
 * below 1 or past the op's limits are DT_EINVAL. */
int dt_trial_init_values(dt_trial *t, const dt_workload *w, const int64_t *vals, int threads,
                         dt_err *e);
/* The same from shape text ("M=37", any order of variables): parsed once,
 * then as dt_trial_init_values.  For text from outside (tests, the wire). */
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

/* ---- what is physically possible ----------------------------------------- */

/* The bound on a trial's time: no CPU runs faster than
 *   cores × DT_PEAK_MAX_CLOCK_HZ × dt_peak_ops_per_cycle(dtype) × DT_PEAK_SAFETY
 * operations per second, so a trial of `flops` useful operations cannot take
 * less than dt_trial_min_possible_ns.  See measure/trial.c for why each
 * number is generous; docs/measurement.md, "Impossible times". */
#define DT_PEAK_MAX_CLOCK_HZ 10e9 /* no CPU core clocks near this (records are ~6 GHz) */
#define DT_PEAK_SAFETY 8.0        /* on top of every other ceiling */

/* The most operations (2 per multiply-add) per cycle per core that any unit
 * of any CPU can do on the arithmetic of dtype d: its row's ops_per_cycle
 * (dtypes/dtype.h; f32 / w8a32: 64, bf16: 1024, int8: 2048); an
 * out-of-range value gets the largest of any row. */
double dt_peak_ops_per_cycle(dt_dtype d);

/* The shortest time (ns) in which any CPU could do `flops` operations of
 * dtype d on `cores` cores (at least 1): the bound above.  0 for flops <= 0
 * or not finite. */
double dt_trial_min_possible_ns(double flops, dt_dtype d, int cores);

/* Whether an ok result's times are possible for trial t of workload w:
 * finite, > 0, min_ns <= median_ns, and min_ns >= dt_trial_min_possible_ns
 * of the trial's FLOPs on max(t->threads, cores) cores (cores: the
 * target's, 0 when unknown).  1 if possible; 0 with why (what is wrong and
 * the values, no prefix) otherwise.  Results that are not ok are possible. */
int dt_trial_result_possible(const dt_workload *w, const dt_trial *t, const dt_trial_result *r,
                             int cores, char *why, size_t n);

/* The same test on a recorded time (a stored record, a cost-model label):
 * 1 if min_ns is finite, > 0 and at least the bound for `flops` of d on
 * `cores` cores. */
int dt_time_possible(double min_ns, double flops, dt_dtype d, int cores);

/* How long a worker may take on batch b before it is given up, derived from
 * the batch itself: the build's limit (DT_BUILD_DEFAULT_TIMEOUT), then every
 * trial up to its run_timeout_s plus a second, plus DT_BATCH_DEADLINE_SLACK_S;
 * never below DT_BATCH_DEADLINE_FLOOR_S.  An honest worker always answers
 * before it: the runner kills a trial at run_timeout_s and a build at its
 * limit. */
#define DT_BATCH_DEADLINE_FLOOR_S 60.0
#define DT_BATCH_DEADLINE_SLACK_S 30.0
double dt_batch_deadline_s(const dt_batch *b);

#endif
