/* An output a rule cannot derive (a Resize whose scales are computed at
 * run time) takes the type and shape the model declares for it in its
 * value_info or graph outputs, as onnx/shape.c does for an op without a
 * rule: a declared dim_value is that constant, a dim_param of a graph
 * input is that input's dim (its variable); anything else fails with why
 * the rule could not derive it. */
#include <stdio.h>
#include <string.h>

#include "onnx/shape_ops.h"

/* The declared type and shape of tensor name, NULL when none. */
static const dt_ox_value *declared(const dt_ox_graph *g, const char *name)
{
    for (int i = 0; i < g->nvalue_infos; i++)
        if (strcmp(g->value_infos[i].name, name) == 0)
            return &g->value_infos[i];
    for (int i = 0; i < g->noutputs; i++)
        if (strcmp(g->outputs[i].name, name) == 0)
            return &g->outputs[i];
    return NULL;
}

/* The dim of a graph input declared with dim_param param (its variable),
 * NULL when no graph input has it. */
static const sym *input_dim(ox_node *c, const char *param)
{
    const dt_ox_graph *g = c->g;
    for (int i = 0; i < g->ninputs; i++)
        for (int a = 0; a < g->inputs[i].rank; a++) {
            const char *p = g->inputs[i].dims[a].param;
            if (p && strcmp(p, param) == 0) {
                int t = dt_ox_find(c->s, g->inputs[i].name);
                if (t >= 0 && c->s->t[t].known && a < c->s->t[t].pub.rank)
                    return c->s->t[t].dims[a];
            }
        }
    return NULL;
}

int dt_ox_declared_out(ox_node *c, int k, const char *why)
{
    if (k >= c->nout || !c->out[k])
        return 0;
    const dt_ox_value *v = declared(c->g, c->n->outputs[k]);
    int rank = v ? v->rank : -1;
    const sym *dims[DT_OX_MAX_RANK];
    for (int a = 0; a < rank && a < DT_OX_MAX_RANK; a++) {
        const dt_ox_dim *d = &v->dims[a];
        if (d->param && (dims[a] = input_dim(c, d->param)))
            continue;
        if (!d->param && d->value >= 0 && d->value <= OX_DIM_MAX) {
            dims[a] = dt_ox_sym_const(c->sc, d->value);
            continue;
        }
        rank = -1;
    }
    if (rank < 0 || rank > DT_OX_MAX_RANK)
        return dt_ox_fail(c,
                          "the shape of output '%s' is not known: %s, and the model declares no "
                          "shape of constants and model variables for it (value_info)",
                          c->n->outputs[k], why);
    return dt_ox_set_out(c, k, v->elem_type, rank, dims);
}
