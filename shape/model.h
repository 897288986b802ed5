/* Model specs: a model's variables and ops (JSON, docs/model-spec.md),
 * reduced to its distinct workloads with their shape sets and counts.
 *
 * Parsing is pure (text in, model out); reading the file is the caller's
 * (common/file.h).  Ownership: dt_model_parse returns a dt_model that owns
 * everything in it; free it with dt_model_free. */
#ifndef DT_SHAPE_MODEL_H
#define DT_SHAPE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "shape/workload.h"

#define DT_MODEL_MAX_OPS 4096
#define DT_MODEL_MAX_BYTES (16u << 20)
/* The largest count an op may have at any shape (a recurrent product's
 * steps, a Loop body's trip count). */
#define DT_MODEL_COUNT_MAX 1000000000

typedef struct dt_model_workload {
    char key[DT_KEY_MAX];  /* canonical workload key */
    dt_workload *w;        /* canonical, validated; weights from the model */
    double count;          /* occurrences per model run: the merged ops' counts summed,
                              an expression count ("seq") as its mean over the
                              variables' weights (the variables it uses reweighted by
                              it: docs/model-spec.md) */
    int nops;
    char **ops;            /* names of the spec's ops merged into this workload */
} dt_model_workload;

typedef struct dt_model {
    char *name;
    char *description;     /* may be NULL */
    int nvars;
    dt_var vars[DT_MAX_VARS];  /* the model's variables, in spec order */
    int nworkloads;
    dt_model_workload *workloads;  /* in order of first appearance */
} dt_model;

/* Parses a model spec.  source names the text in messages (a path); errors
 * are DT_EINVAL with "source:line:col: where: what". */
int dt_model_parse(const char *text, size_t len, const char *source, dt_model **out, dt_err *e);
void dt_model_free(dt_model *m);

/* Number of distinct joint assignments of the model's variables. */
int64_t dt_model_nshapes(const dt_model *m);

#endif
