/* libFuzzer target: the ONNX reader (onnx/graph.h).  The input is read as
 * a .onnx file; it must be refused with DT_EINVAL and a message naming the
 * file, or read into a graph that keeps every promise of graph.h (limits,
 * dims >= 0, element counts, values only for small tensors, the default or
 * com.microsoft domain only).  A graph that was read then goes through
 * shape propagation with every variable over 1..4.  tests/test_onnx_read.c
 * replays the seeds (fuzz/corpus/onnx) through this same harness. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/graph.h"
#include "onnx/shape.h"
#include "shape/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static void check_tensor(const dt_ox_tensor *t)
{
    check(t->name != NULL && t->rank >= 0 && t->rank <= DT_OX_MAX_RANK && t->numel >= 0);
    int64_t numel = 1;
    for (int d = 0; d < t->rank; d++) {
        check(t->dims[d] >= 0);
        if (numel && t->dims[d] && numel > INT64_MAX / t->dims[d])
            numel = INT64_MAX; /* only possible with a zero dim later on */
        else
            numel *= t->dims[d];
    }
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] == 0)
            numel = 0;
    check(numel == t->numel);
    if (t->has_values) {
        check(t->numel <= DT_OX_MAX_VALUES && (t->ivals != NULL) != (t->fvals != NULL));
        volatile double sink = 0; /* every value readable (ASan) */
        for (int64_t i = 0; i < t->numel; i++)
            sink += t->ivals ? (double)t->ivals[i] : t->fvals[i];
        (void)sink;
    } else {
        check(!t->ivals && !t->fvals);
    }
}

static void check_values(const dt_ox_value *v, int n)
{
    for (int i = 0; i < n; i++) {
        check(v[i].name && v[i].name[0] && v[i].rank >= -1 && v[i].rank <= DT_OX_MAX_RANK);
        for (int d = 0; d < v[i].rank; d++)
            check(v[i].dims[d].param ? v[i].dims[d].param[0] != '\0' : v[i].dims[d].value >= -1);
    }
}

static void check_graph(const dt_ox_graph *g)
{
    check(g->ir_version >= DT_OX_IR_MIN && g->ir_version <= DT_OX_IR_MAX);
    check(g->opset >= DT_OX_OPSET_MIN && g->opset <= DT_OX_OPSET_MAX);
    check(g->source && g->producer && g->graph_name);
    check(g->nnodes >= 0 && g->nnodes <= DT_OX_MAX_NODES);
    check_values(g->inputs, g->ninputs);
    check_values(g->outputs, g->noutputs);
    check_values(g->value_infos, g->nvalue_infos);
    for (int i = 0; i < g->ninputs; i++) /* an initializer is not an input */
        check(dt_ox_init_find(g, g->inputs[i].name) == NULL);
    for (int i = 0; i < g->ninits; i++) {
        check_tensor(&g->inits[i]);
        check(g->inits[i].name[0] && dt_ox_init_find(g, g->inits[i].name) == &g->inits[i]);
    }
    for (int i = 0; i < g->nnodes; i++) {
        const dt_ox_node *n = &g->nodes[i];
        check(n->name && n->op_type && n->op_type[0] && n->domain);
        /* any domain is read; the default one is stored as "" */
        check(strcmp(n->domain, "ai.onnx") != 0);
        /* a control node's bodies' outputs and inputs are appended to its own */
        check(n->ninputs <= DT_OX_MAX_NODE_IO && n->noutputs <= DT_OX_MAX_NODE_IO);
        check(n->nbodies == 0 ? n->ninputs <= DT_OX_MAX_IO && n->noutputs <= DT_OX_MAX_IO
                              : n->nin_own <= DT_OX_MAX_IO && n->nout_own <= DT_OX_MAX_IO &&
                                    n->nin_own <= n->ninputs && n->nout_own <= n->noutputs);
        check(n->nbodies >= 0 && n->nbodies <= 2 && n->body >= 0 && n->body <= g->nbodies);
        for (int b = 0; b < n->nbodies; b++) {
            check(n->bodies[b] >= 0 && n->bodies[b] < g->nbodies);
            const dt_ox_body *bd = &g->bodies[n->bodies[b]];
            /* its nodes come just before it, inside its own body */
            check(bd->control == i && bd->path && bd->attr);
            check(!bd->taken || (bd->first >= 0 && bd->nnodes >= 0 &&
                                 bd->first + bd->nnodes <= i));
            check(!bd->taken || (bd->in_at >= n->nout_own && bd->in_at + bd->nin <= n->noutputs &&
                                 bd->out_at >= n->nin_own &&
                                 bd->out_at + bd->nout <= n->ninputs));
            for (int k = bd->taken ? bd->first : 0; bd->taken && k < bd->first + bd->nnodes; k++)
                check(g->nodes[k].body != n->body); /* deeper than the control node */
        }
        if (n->body) /* the innermost body holding it holds it in its range */
            check(g->bodies[n->body - 1].first <= i &&
                  i < g->bodies[n->body - 1].first + g->bodies[n->body - 1].nnodes);
        for (int k = 0; k < n->ninputs; k++)
            check(n->inputs[k] != NULL);
        for (int k = 0; k < n->noutputs; k++)
            check(n->outputs[k] != NULL);
        for (int k = 0; k < n->nattrs; k++) {
            const dt_ox_attr *a = &n->attrs[k];
            check(a->name && a->name[0] && dt_ox_attr_find(n, a->name) != NULL);
            check((a->type == DT_OX_ATTR_STRING) == (a->s != NULL));
            if (a->type == DT_OX_ATTR_TENSOR)
                check_tensor(&a->t);
            if (a->type == DT_OX_ATTR_INTS || a->type == DT_OX_ATTR_FLOATS)
                check(a->n >= 0 && a->n <= DT_OX_MAX_ATTR_INTS);
        }
        char label[300];
        check(strlen(dt_ox_node_label(g, i, label, sizeof label)) < sizeof label);
    }
}

/* Shape propagation (onnx/shape.h) over what was read, every variable
 * over 1..4: it succeeds, or fails with a message naming the file. */
static void propagate(const dt_ox_graph *g)
{
    char **names = NULL;
    int n = 0;
    dt_err e;
    check(dt_ox_graph_var_names(g, &names, &n, &e) == 0);
    dt_var *vars = calloc((size_t)n + 1, sizeof *vars);
    check(vars != NULL);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        check(names[i] && names[i][0]);
        if (strlen(names[i]) >= DT_NAME_MAX)
            ok = 0; /* not a name dtune takes; the importer refuses it */
        else
            strcpy(vars[i].name, names[i]);
        check(dt_domain_range(&vars[i].dom, 1, 4, 1, &e) == 0);
    }
    dt_ox_vars ov = {n, vars};
    dt_ox_shapes *s = NULL;
    if (ok) {
        int rc = dt_ox_propagate(g, &ov, &s, &e);
        check(rc == 0 ? s != NULL : rc != DT_ENOMEM && !strncmp(e.msg, "fuzz.onnx: ", 11));
        for (int i = 0; rc == 0 && i < g->nnodes; i++)
            for (int k = 0; k < g->nodes[i].noutputs; k++)
                dt_ox_shape_of(s, g->nodes[i].outputs[k]);
        dt_ox_shapes_free(s);
    }
    for (int i = 0; i < n; i++) {
        dt_domain_free(&vars[i].dom);
        free(names[i]);
    }
    free(vars);
    free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_ox_graph *g = NULL;
    dt_err e;
    int rc = dt_ox_read(data, size, "fuzz.onnx", &g, &e);
    if (rc) {
        /* never DT_ENOMEM: the walker lets through only what protobuf-c takes */
        check(rc == DT_EINVAL && g == NULL && !strncmp(e.msg, "fuzz.onnx: ", 11));
        return 0;
    }
    check(g != NULL);
    check_graph(g);
    propagate(g);
    dt_ox_graph_free(g);
    return 0;
}
