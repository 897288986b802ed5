/* The local runner: measures a batch honestly and safely on this machine.
 *
 * 1. The batch's source is built (microkernel/build.h, cached): a compiler
 *    failure or time-out becomes compile_error / compile_timeout on every
 *    trial of the batch.
 * 2. The trials run in a child process — a fresh `dtune __run-trials`
 *    (fork + exec of the dtune executable, never a bare fork of a threaded
 *    process) that loads the kernel and writes one result line per trial as
 *    soon as it has it.  A signal in the child is run_crash for the trial it
 *    was running; no result within timing.run_timeout_s is run_timeout (the
 *    child is killed); either way a new child carries on with the remaining
 *    trials, so one bad trial never costs the others.
 * 3. In the child, per trial: inputs from timing.seed; the first call is
 *    checked against the reference (microkernel/reference.h — all outputs
 *    when M·N·K·batch <= 2^24, else a seeded sample of at least 4096 outputs
 *    that includes the last row and column); a miss is wrong_answer.  Then
 *    warm-up, timed calls until min_time_s and min_repeats (max_repeats at
 *    most), optional cache flush before each timed call; min and median.
 *
 * Batches are measured one at a time per machine (callers serialise); builds
 * of several batches may run in parallel (dt_runner_build_many). */
#ifndef DT_MEASURE_RUNNER_H
#define DT_MEASURE_RUNNER_H

#include "measure/trial.h"
#include "microkernel/build.h"

typedef struct dt_runner {
    const dt_builder *builder; /* borrowed */
    char exe[4096];            /* the dtune executable run as the child */
} dt_runner;

/* exe NULL: /proc/self/exe (right inside the dtune binary; tests pass theirs). */
int dt_runner_init(dt_runner *r, const dt_builder *b, const char *exe, dt_err *e);

/* Runs every trial of the batch; results[i] answers batch->trials[i] (uid
 * copied).  Returns 0 when the runner itself worked — per-trial failures are
 * statuses — or a negative code if it could not run at all (cannot spawn). */
int dt_runner_run(const dt_runner *r, const dt_batch *batch, dt_trial_result *results, dt_err *e);

/* Builds the sources of n batches in parallel (warming the cache) before
 * they are run one by one. */
int dt_runner_build_many(const dt_runner *r, const dt_batch *const *batches, int n, dt_err *e);

/* The child's entry point (`dtune __run-trials SO_PATH`): reads one batch as
 * JSON from stdin, writes one dt_trial_result JSON per line to stdout,
 * flushing after each.  Returns the process exit code. */
int dt_runner_child_main(int argc, char **argv);

#endif
