/* The tuning curve (see curve.h). */
#include "tuner/curve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_util.h"

void dt_tune_curve_init(dt_tune_curve *c) { memset(c, 0, sizeof *c); }

void dt_tune_curve_free(dt_tune_curve *c)
{
    free(c->p);
    memset(c, 0, sizeof *c);
}

/* keeps points 0, 2, 4, ... and the newest */
static void thin(dt_tune_curve *c)
{
    size_t last = c->n - 1, k = 0;
    for (size_t i = 0; i < c->n; i += 2)
        c->p[k++] = c->p[i];
    if (last % 2)
        c->p[k++] = c->p[last];
    c->n = k;
}

static int append(dt_tune_curve *c, const dt_curve_point *q)
{
    if (c->n >= DT_CURVE_MAX)
        thin(c);
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        if (cap > DT_CURVE_MAX)
            cap = DT_CURVE_MAX;
        dt_curve_point *p = realloc(c->p, cap * sizeof *p);
        if (!p)
            return -1;
        c->p = p;
        c->cap = cap;
    }
    c->p[c->n++] = *q;
    return 0;
}

int dt_tune_curve_add(dt_tune_curve *c, const dt_tune_event *ev)
{
    if (ev->kind != DT_TUNE_EV_ROUND)
        return 0;
    dt_curve_point q = {.elapsed_s = c->offset_s + ev->elapsed_s,
                        .trials = ev->trials_used,
                        .task = ev->task_index,
                        .round = ev->task->rounds,
                        .objective_ns = ev->task->objective,
                        .model_latency_ns = ev->model_latency_ns};
    return append(c, &q);
}

/* a number, or NAN for null (dt_json_num_or_null's inverse) */
static double num_or_nan(const json_t *v) { return json_is_number(v) ? json_number_value(v) : NAN; }

void dt_tune_curve_load_json(dt_tune_curve *c, const json_t *a, const dt_task *tasks, int ntasks)
{
    size_t i;
    const json_t *o;
    json_array_foreach(a, i, o) {
        const char *name = json_string_value(json_object_get(o, "workload"));
        int task = -1;
        for (int k = 0; name && k < ntasks && task < 0; k++)
            if (!strcmp(tasks[k].name, name))
                task = k;
        const json_t *el = json_object_get(o, "elapsed_s");
        if (task < 0 || !json_is_number(el))
            continue;
        dt_curve_point q = {.elapsed_s = json_number_value(el),
                            .trials = json_integer_value(json_object_get(o, "trials")),
                            .task = task,
                            .round = (int)json_integer_value(json_object_get(o, "round")),
                            .objective_ns = num_or_nan(json_object_get(o, "objective_ns")),
                            .model_latency_ns = num_or_nan(json_object_get(o, "model_latency_ns"))};
        if (append(c, &q))
            return;
    }
}

json_t *dt_tune_curve_json(const dt_tune_curve *c, const dt_task *tasks, int ntasks)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->n; i++) {
        const dt_curve_point *q = &c->p[i];
        const char *name = q->task >= 0 && q->task < ntasks ? tasks[q->task].name : "";
        json_t *o = json_pack("{s:f, s:I, s:s, s:i, s:o, s:o}", "elapsed_s", q->elapsed_s,
                              "trials", (json_int_t)q->trials, "workload", name, "round",
                              q->round, "objective_ns", dt_json_num_or_null(q->objective_ns),
                              "model_latency_ns", dt_json_num_or_null(q->model_latency_ns));
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}
