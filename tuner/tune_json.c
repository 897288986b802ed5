/* The tune result as JSON (see tune_json.h). */
#include "tuner/tune_json.h"

#include <math.h>

#include "common/json_util.h"

/* The selection's fields, each written under the style's key. */
typedef enum {
    SF_RANGES,
    SF_KERNELS,
    SF_KERNEL_IDS,
    SF_TRIALS,
    SF_UNMEASURED,
    SF_OBJECTIVE,
    SF_ESTIMATE,
    SF_UNR_KERNELS,
    SF_UNR_OBJECTIVE,
    SF_LOSS,
} sel_field;

typedef struct {
    sel_field f;
    const char *key;
} sel_key;

/* in the order each output has always had */
static const sel_key result_keys[] = {
    {SF_RANGES, "ranges"},
    {SF_KERNELS, "dispatched_kernels"},
    {SF_KERNEL_IDS, "kernel_ids"},
    {SF_UNR_KERNELS, "unrestricted_kernels"},
    {SF_UNR_OBJECTIVE, "unrestricted_objective_ns"},
    {SF_LOSS, "loss"},
    {SF_TRIALS, "selection_trials"},
    {SF_UNMEASURED, "unmeasured_shapes"},
    {SF_OBJECTIVE, "objective_ns"},
    {SF_ESTIMATE, "estimated_objective_ns"},
};
static const sel_key progress_keys[] = {
    {SF_RANGES, "ranges"},
    {SF_KERNELS, "kernels"},
    {SF_TRIALS, "trials"},
    {SF_UNMEASURED, "unmeasured"},
    {SF_OBJECTIVE, "objective_ns"},
    {SF_ESTIMATE, "estimated_objective_ns"},
    {SF_UNR_KERNELS, "unrestricted_kernels"},
    {SF_UNR_OBJECTIVE, "unrestricted_objective_ns"},
    {SF_LOSS, "loss"},
};

static json_t *sel_value(const dt_select_info *s, sel_field f)
{
    switch (f) {
    case SF_RANGES:
        return json_integer(s->ranges);
    case SF_KERNELS:
        return json_integer(s->kernels);
    case SF_KERNEL_IDS: {
        json_t *ids = json_array();
        for (int j = 0; j < s->nids; j++)
            json_array_append_new(ids, json_integer(s->kernel_ids[j]));
        return ids;
    }
    case SF_TRIALS:
        return json_integer(s->trials);
    case SF_UNMEASURED:
        return json_integer(s->unmeasured);
    case SF_OBJECTIVE:
        return dt_json_num_or_null(s->objective);
    case SF_ESTIMATE:
        return dt_json_num_or_null(s->estimate);
    case SF_UNR_KERNELS:
        return json_integer(s->best_kernels);
    case SF_UNR_OBJECTIVE:
        return dt_json_num_or_null(s->best_objective);
    case SF_LOSS:
        return dt_json_num_or_null(s->loss);
    }
    return json_null();
}

static void put_selection(json_t *o, const dt_select_info *s, const sel_key *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, keys[i].key, sel_value(s, keys[i].f));
}

double dt_tune_task_gflops(const dt_task *t)
{
    double f = 0;
    for (int64_t s = 0; s < t->nshapes; s++)
        f += t->weight[s] * t->flops[s];
    return isfinite(t->objective) && t->objective > 0 ? f / t->objective : NAN;
}

json_t *dt_tune_workload_json(const dt_task *t, dt_tune_json_style style, const char *outcome,
                              const char *skip_reason, const dt_select_info *sel)
{
    int result = style == DT_TUNE_JSON_RESULT;
    json_t *w = json_object();
    json_object_set_new(w, "name", json_string(t->name));
    json_object_set_new(w, "workload", json_string(t->key));
    json_object_set_new(w, "count", json_real(t->count));
    json_object_set_new(w, "shapes", json_integer(t->nshapes));
    json_object_set_new(w, "kernels", json_integer(t->nk));
    json_object_set_new(w, "trials", json_integer(t->trials));
    if (result)
        json_object_set_new(w, "resumed_trials", json_integer(t->resumed));
    json_object_set_new(w, "rounds", json_integer(t->rounds));
    if (!result) {
        json_object_set_new(w, "objective_ns", dt_json_num_or_null(t->objective));
        json_object_set_new(w, "best_objective_ns", dt_json_num_or_null(t->best_objective));
        json_object_set_new(w, "finished", json_boolean(t->done));
    }
    json_object_set_new(w, "outcome", outcome ? json_string(outcome) : json_null());
    json_object_set_new(w, "skip_reason", skip_reason ? json_string(skip_reason) : json_null());
    if (result) {
        if (sel)
            put_selection(w, sel, result_keys, sizeof result_keys / sizeof *result_keys);
        json_object_set_new(w, "gflops", dt_json_num_or_null(dt_tune_task_gflops(t)));
    } else if (sel) {
        json_t *s = json_object();
        put_selection(s, sel, progress_keys, sizeof progress_keys / sizeof *progress_keys);
        json_object_set_new(w, "selected", s);
    }
    return w;
}

void dt_tune_latency_json(json_t *root, const dt_task *t, int n, const dt_tune_result *r)
{
    double lat = 0, ulat = 0, elat = 0;
    for (int i = 0; i < n; i++)
        if (r->outcome[i] == DT_TUNE_SCHEDULED) {
            lat += t[i].count * r->sel[i].objective;
            ulat += t[i].count * r->sel[i].best_objective;
            elat += t[i].count * r->sel[i].estimate;
        }
    /* over the scheduled workloads; null when none or when a winner's time
     * on some shape is unknown */
    json_object_set_new(root, "model_latency_ns",
                        dt_json_num_or_null(r->nscheduled > 0 ? lat : NAN));
    json_object_set_new(root, "model_latency_unrestricted_ns",
                        dt_json_num_or_null(r->nscheduled > 0 ? ulat : NAN));
    /* the same with every unmeasured shape at its prediction: a number
     * whenever model_latency_ns is null for that reason */
    json_object_set_new(root, "model_latency_estimated_ns",
                        dt_json_num_or_null(r->nscheduled > 0 ? elat : NAN));
}

json_t *dt_tune_cost_models_json(const dt_tune_result *r)
{
    json_t *ms = json_array();
    for (int j = 0; j < r->ncms; j++)
        json_array_append_new(ms, json_pack("{s:s, s:I, s:o, s:o, s:o}", "op", r->cm[j].op,
                                            "records", (json_int_t)r->cm[j].records,
                                            "kendall_tau_within_shape",
                                            dt_json_num_or_null(r->cm[j].tau_within_shape),
                                            "kendall_tau", dt_json_num_or_null(r->cm[j].tau_all),
                                            "topk_recall", dt_json_num_or_null(r->cm[j].recall)));
    return ms;
}
