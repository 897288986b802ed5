/* dt_ox_graph: freeing it, the lookups and the names messages use
 * (onnx/graph.h). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/graph.h"
#include "onnx/read_internal.h"

void dt_ox_tensor_clear(dt_ox_tensor *t)
{
    free(t->name);
    free(t->dims);
    free(t->ivals);
    free(t->fvals);
    memset(t, 0, sizeof *t);
}

static void free_values(dt_ox_value *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].name);
        for (int d = 0; v[i].dims && d < v[i].rank; d++)
            free(v[i].dims[d].param);
        free(v[i].dims);
    }
    free(v);
}

static void free_strings(char **s, int n)
{
    for (int i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

/* Also frees a graph the reader gave up on half way: its arrays are
 * zero-filled when allocated, so unset entries hold NULLs. */
void dt_ox_node_clear(dt_ox_node *n)
{
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free_strings(n->inputs, n->ninputs);
    free_strings(n->outputs, n->noutputs);
    for (int a = 0; n->attrs && a < n->nattrs; a++) {
        free(n->attrs[a].name);
        free(n->attrs[a].s);
        dt_ox_tensor_clear(&n->attrs[a].t);
        free(n->attrs[a].ints);
        free(n->attrs[a].floats);
    }
    free(n->attrs);
}

void dt_ox_graph_free(dt_ox_graph *g)
{
    if (!g)
        return;
    free(g->source);
    free(g->producer);
    free(g->graph_name);
    free_values(g->inputs, g->ninputs);
    free_values(g->outputs, g->noutputs);
    free_values(g->value_infos, g->nvalue_infos);
    free_strings(g->warnings, g->nwarnings);
    for (int i = 0; g->inits && i < g->ninits; i++)
        dt_ox_tensor_clear(&g->inits[i]);
    free(g->inits);
    for (int i = 0; g->nodes && i < g->nnodes; i++)
        dt_ox_node_clear(&g->nodes[i]);
    free(g->nodes);
    for (int i = 0; g->bodies && i < g->nbodies; i++)
        free(g->bodies[i].path);
    free(g->bodies);
    free(g);
}

const dt_ox_body *dt_ox_node_body(const dt_ox_graph *g, int i)
{
    int b = i >= 0 && i < g->nnodes ? g->nodes[i].body : 0;
    return b > 0 && b <= g->nbodies ? &g->bodies[b - 1] : NULL;
}

int dt_ox_own_inputs(const dt_ox_node *n) { return n->nbodies ? n->nin_own : n->ninputs; }

int dt_ox_own_outputs(const dt_ox_node *n) { return n->nbodies ? n->nout_own : n->noutputs; }

const dt_ox_attr *dt_ox_attr_find(const dt_ox_node *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (!strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

size_t dt_ox_if_path(const dt_ox_graph *g, int i, const char **path)
{
    const dt_ox_node *n = &g->nodes[i];
    if (n->nbodies != 2 || strcmp(n->op_type, "If") != 0)
        return 0;
    /* the then_branch's path is the If's and "/then_branch" (read_graph.c) */
    const char *p = g->bodies[n->bodies[0]].path;
    const size_t len = strlen(p), tail = strlen("/then_branch");
    assert(len > tail && !strcmp(p + len - tail, "/then_branch"));
    *path = p;
    return len - tail;
}

int64_t dt_ox_attr_int_or(const dt_ox_node *n, const char *name, int64_t dflt)
{
    const dt_ox_attr *a = dt_ox_attr_find(n, name);
    return a && a->type == DT_OX_ATTR_INT ? a->i : dflt;
}

/* A linear search: callers that look up many names build their own index. */
const dt_ox_tensor *dt_ox_init_find(const dt_ox_graph *g, const char *name)
{
    for (int i = 0; i < g->ninits; i++)
        if (!strcmp(g->inits[i].name, name))
            return &g->inits[i];
    return NULL;
}

/* Names are cut to 200 and op types to 64 characters, so the label fits
 * the 300 bytes callers reserve. */
const char *dt_ox_node_label(const dt_ox_graph *g, int i, char *buf, size_t n)
{
    const dt_ox_node *node = g && i >= 0 && i < g->nnodes ? &g->nodes[i] : NULL;
    const char *name = node && node->name ? node->name : "";
    const char *op = node && node->op_type ? node->op_type : "?";
    if (name[0])
        snprintf(buf, n, "'%.200s' (#%d, %.64s)", name, i, op);
    else
        snprintf(buf, n, "#%d (%.64s)", i, op);
    return buf;
}

const char *dt_ox_type_name(int elem_type)
{
    static const char *const names[] = {
        [DT_OX_UNDEFINED] = "undefined", [DT_OX_FLOAT] = "float",     [DT_OX_UINT8] = "uint8",
        [DT_OX_INT8] = "int8",           [DT_OX_UINT16] = "uint16",   [DT_OX_INT16] = "int16",
        [DT_OX_INT32] = "int32",         [DT_OX_INT64] = "int64",     [DT_OX_STRING] = "string",
        [DT_OX_BOOL] = "bool",           [DT_OX_FLOAT16] = "float16", [DT_OX_DOUBLE] = "double",
        [DT_OX_UINT32] = "uint32",       [DT_OX_UINT64] = "uint64",   [14] = "complex64",
        [15] = "complex128",             [DT_OX_BFLOAT16] = "bfloat16", [17] = "float8e4m3fn",
        [18] = "float8e4m3fnuz",         [19] = "float8e5m2",       [20] = "float8e5m2fnuz",
        [21] = "uint4",                  [22] = "int4",             [23] = "float4e2m1",
    };
    /* Numbers past ONNX's list get "type N" from a table, not a buffer: the
     * result stays valid and the function stays free of mutable state. */
#define T10(d) "type " #d "0", "type " #d "1", "type " #d "2", "type " #d "3", "type " #d "4", \
               "type " #d "5", "type " #d "6", "type " #d "7", "type " #d "8", "type " #d "9"
    static const char *const others[] = {T10(2), T10(3), T10(4), T10(5), T10(6), T10(7), T10(8), T10(9)};
#undef T10
    int nn = (int)(sizeof names / sizeof names[0]);
    if (elem_type >= 0 && elem_type < nn)
        return names[elem_type];
    if (elem_type >= 20 && elem_type < 100)
        return others[elem_type - 20];
    return elem_type < 0 ? "type <0" : "type >99";
}
