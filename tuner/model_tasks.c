/* Model specs and workload keys made into tuning tasks (tuner/model_tasks.h). */
#include "tuner/model_tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "shape/model.h"
#include "tuner/tune.h"

static void free_made(dt_task *t, int *n)
{
    for (int i = 0; i < *n; i++)
        dt_task_free(&t[i]);
    *n = 0;
}

int dt_model_tasks_from_key(const char *key, int threads, dt_task *t, int *n, dt_err *e)
{
    *n = 0;
    dt_workload *w = NULL;
    int rc = dt_workload_parse_key(key, &w, e);
    if (rc)
        return rc;
    rc = dt_task_init(&t[0], w->op->name, w, 1, threads, e);
    dt_workload_free(w);
    if (!rc)
        *n = 1;
    return rc;
}

int dt_model_tasks_from_text(const char *text, size_t len, const char *source, int threads,
                             dt_task *t, int *n, dt_err *e)
{
    *n = 0;
    dt_model *m = NULL;
    int rc = dt_model_parse(text, len, source, &m, e);
    if (rc)
        return rc;
    if (m->nworkloads > DT_TUNE_MAX_TASKS)
        rc = dt_errf(e, DT_EINVAL, "%s: %d workloads; at most %d per tune", source, m->nworkloads,
                     DT_TUNE_MAX_TASKS);
    for (int i = 0; !rc && i < m->nworkloads; i++) {
        const dt_model_workload *mw = &m->workloads[i];
        char name[64] = "";
        for (int j = 0; j < mw->nops && strlen(name) + 2 < sizeof name; j++)
            snprintf(name + strlen(name), sizeof name - strlen(name), "%s%s", j ? "+" : "",
                     mw->ops[j]);
        rc = dt_task_init(&t[i], name, mw->w, (double)mw->count, threads, e);
        if (!rc)
            (*n)++;
    }
    dt_model_free(m);
    if (rc)
        free_made(t, n);
    return rc;
}

int dt_model_tasks_from_arg(const char *what, int threads, dt_task *t, int *n, dt_err *e)
{
    *n = 0;
    if (access(what, F_OK) != 0 && strchr(what, '('))
        return dt_model_tasks_from_key(what, threads, t, n, e);
    char *text = NULL;
    size_t len = 0;
    int rc = dt_read_file(what, DT_MODEL_MAX_BYTES, &text, &len, e);
    if (rc)
        return rc;
    rc = dt_model_tasks_from_text(text, len, what, threads, t, n, e);
    free(text);
    return rc;
}
