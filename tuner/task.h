/* A task: one workload being tuned on one target at one thread count — the
 * in-memory state of the search, rebuilt from the database's records when a
 * tune starts again (records are the state; nothing else is needed to go on).
 *
 * Shapes are indices into the workload's shape set (dt_workload_shape_at).
 * A kernel's time on a shape is "known" when it was measured there (a failed
 * trial is +inf) and otherwise predicted by the cost model.
 *
 * Ownership: a dt_task owns its workload clone, kernels and arrays
 * (dt_task_free).  Not thread-safe. */
#ifndef DT_TUNER_TASK_H
#define DT_TUNER_TASK_H

#include <stdint.h>

#include "common/error.h"
#include "common/target.h"
#include "db/db.h"
#include "space/annotation.h"
#include "shape/workload.h"

typedef struct dt_tmeas {
    int32_t shape;
    float ns;             /* min ns; INFINITY for a failed trial */
} dt_tmeas;

typedef struct dt_tkernel {
    dt_annotation a;
    int64_t id;           /* kernels.id */
    int nm, cap;
    dt_tmeas *m;          /* measured shapes, in measuring order */
    float *pred;          /* [task->nshapes] predicted ns (NULL until predicted) */
    int failed;           /* a trial of it failed: never chosen */
} dt_tkernel;

typedef struct dt_task {
    char name[64];        /* the model's op names, e.g. "ffn_up" */
    char key[DT_KEY_MAX];
    dt_workload *w;       /* owned clone */
    double count;         /* occurrences per model run: its weight in the model */
    int threads;
    int64_t workload_id, target_id;
    int64_t nshapes;      /* shapes in the set */
    double *weight;       /* [nshapes], summing to 1 */
    int64_t *dims;        /* [nshapes * DT_MAX_DIMS] concrete dims */
    double *flops;        /* [nshapes] */
    int nk, kcap;
    dt_tkernel *k;
    /* search progress */
    int rounds, stale;
    int64_t trials;       /* recorded trials of this task (resumed ones included) */
    int64_t resumed;      /* of which were in the database at the start */
    double objective;     /* Σ w_s · best known ns; INFINITY before any */
    double best_objective;
    double last_gain[3];  /* relative improvement of the last rounds */
    int done;             /* early-stopped or finished */
} dt_task;

/* A task for workload w (cloned) of a model: shapes, weights, dims.  The
 * database ids are filled by dt_task_attach. */
int dt_task_init(dt_task *t, const char *name, const dt_workload *w, double count, int threads,
                 dt_err *e);
void dt_task_free(dt_task *t);

/* Registers the target and workload in db (ids into t) and loads every
 * recorded trial of (workload, target) at t->threads: kernels and their
 * measured shapes.  Records whose kernel does not parse are skipped. */
int dt_task_attach(dt_task *t, dt_db *db, const dt_target *tg, const char *target_key,
                   dt_err *e);

/* Index of the kernel with annotation a, or -1. */
int dt_task_find(const dt_task *t, const dt_annotation *a);
/* Adds a kernel (not yet in the task); returns its index or a negative code. */
int dt_task_add(dt_task *t, const dt_annotation *a, int64_t id, dt_err *e);
/* Records a result of kernel k on shape s (in memory only). */
int dt_task_record(dt_task *t, int k, int64_t s, double ns);
/* Measured ns of kernel k on shape s; NAN when not measured. */
double dt_task_measured(const dt_task *t, int k, int64_t s);
/* Known ns: measured, else predicted, else +inf. */
double dt_task_known(const dt_task *t, int k, int64_t s);

/* The (at most k <= 16) kernels with the lowest finite known ns on shape s,
 * fastest first, into out[] (their times into val[], may be NULL); returns
 * how many. */
int dt_task_topk(const dt_task *t, int64_t s, int k, int *out, double *val);

/* Best known ns per shape into best[nshapes] (and its kernel into arg, may be
 * NULL; -1 when none) and returns the objective Σ w_s · best[s]. */
double dt_task_best(const dt_task *t, double *best, int *arg);

#endif
