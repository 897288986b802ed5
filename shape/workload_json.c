/* The JSON summary of a workload's shape set (workloads.shape_set). */
#include <jansson.h>

#include "shape/workload.h"

char *dt_workload_shape_set_json(const dt_workload *w)
{
    json_t *vars = json_object();
    for (int v = 0; v < w->nvars; v++) {
        const dt_domain *d = &w->vars[v].dom;
        char text[256];
        dt_domain_print(d, text, sizeof text);
        json_object_set_new(vars, w->vars[v].name,
                            json_pack("{s:s, s:I, s:I, s:i}", "domain", text, "min",
                                      (json_int_t)d->values[0], "max",
                                      (json_int_t)d->values[d->n - 1], "count", d->n));
    }
    json_t *root = json_pack("{s:o, s:I}", "vars", vars, "shapes",
                             (json_int_t)dt_workload_nshapes(w));
    char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    return s;
}

