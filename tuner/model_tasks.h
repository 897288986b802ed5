/* What to tune, as tasks: the workloads of a model spec (a file or its JSON
 * text), or one workload key, each made a dt_task at a thread count.  One
 * copy for `dtune tune` (cli/cmd_tune.c) and the daemon's jobs
 * (daemon/jobs.c).
 *
 * Ownership: the tasks written into t[0..*n) are the caller's (dt_task_free
 * each); on failure the ones already made are freed here and *n is 0. */
#ifndef DT_TUNER_MODEL_TASKS_H
#define DT_TUNER_MODEL_TASKS_H

#include <stddef.h>

#include "common/error.h"
#include "tuner/task.h"

/* Tasks of the model spec text[0..len) (docs/model-spec.md); source names it
 * in messages ("source:line:col: path: what").  At most DT_TUNE_MAX_TASKS
 * workloads (DT_EINVAL beyond).  t has room for DT_TUNE_MAX_TASKS tasks. */
int dt_model_tasks_from_text(const char *text, size_t len, const char *source, int threads,
                             dt_task *t, int *n, dt_err *e);

/* One task for a workload key (any spelling; canonicalised). */
int dt_model_tasks_from_key(const char *key, int threads, dt_task *t, int *n, dt_err *e);

/* `dtune tune`'s argument: a workload key when no file of that name exists
 * and it contains '(', else a model spec file. */
int dt_model_tasks_from_arg(const char *what, int threads, dt_task *t, int *n, dt_err *e);

#endif
