/* --branch NAME=then|else|both: an If's branch a user says is not taken
 * leaves the flattened graph (onnx/graph.h, dt_ox_take_branches). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "onnx/graph.h"
#include "onnx/read_internal.h"

enum { TAKE_BOTH = 0, TAKE_THEN = 1, TAKE_ELSE = 2 };

/* 1 when node i is an If whose bodies were read and whose path is name
 * (its then_branch's path without "/then_branch"). */
static int if_named(const dt_ox_graph *g, int i, const char *name)
{
    const char *path;
    size_t len = dt_ox_if_path(g, i, &path);
    return len && strlen(name) == len && !strncmp(path, name, len);
}

/* "the If nodes: /If, /Loop/body/If" (the first eight), into sb. */
static void list_ifs(const dt_ox_graph *g, dt_strbuf *sb)
{
    int shown = 0, all = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const char *path;
        const size_t len = dt_ox_if_path(g, i, &path);
        if (!len)
            continue;
        all++;
        if (shown < 8)
            dt_sb_appendf(sb, "%s%.*s", shown++ ? ", " : "", len < 200 ? (int)len : 200, path);
    }
    if (!all)
        dt_sb_append(sb, "none: the model has no If whose branches were read");
    else if (all > shown)
        dt_sb_appendf(sb, ", ... (%d in all)", all);
}

/* Parses arg into its If (*node) and choice. */
static int parse_arg(const dt_ox_graph *g, const char *arg, int *node, int *take, dt_err *e)
{
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg)
        return dt_errf(e, DT_EINVAL, "--branch '%s': expected NAME=then, NAME=else or NAME=both "
                                     "(NAME an If node's name)",
                       arg);
    const char *v = eq + 1;
    if (!strcmp(v, "then"))
        *take = TAKE_THEN;
    else if (!strcmp(v, "else"))
        *take = TAKE_ELSE;
    else if (!strcmp(v, "both"))
        *take = TAKE_BOTH;
    else
        return dt_errf(e, DT_EINVAL, "--branch '%s': '%s' is not then, else or both", arg, v);
    char *name = strndup(arg, (size_t)(eq - arg));
    if (!name)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    *node = -1;
    for (int i = 0; i < g->nnodes && *node < 0; i++)
        if (if_named(g, i, name))
            *node = i;
    free(name);
    if (*node >= 0)
        return 0;
    dt_strbuf sb;
    dt_sb_init(&sb);
    list_ifs(g, &sb);
    int rc = sb.oom ? dt_errf(e, DT_ENOMEM, "out of memory")
                    : dt_errf(e, DT_EINVAL, "%s: --branch '%s': no If node of that name (the If "
                                            "nodes: %s)",
                              g->source, arg, sb.data);
    dt_sb_free(&sb);
    return rc;
}

/* Drops body b of If node i: its outputs leave the If's inputs; its nodes
 * are marked in gone[]. */
static void drop_body(dt_ox_graph *g, int i, int b, unsigned char *gone)
{
    dt_ox_node *n = &g->nodes[i];
    dt_ox_body *body = &g->bodies[n->bodies[b]];
    for (int k = body->out_at; k < body->out_at + body->nout; k++)
        free(n->inputs[k]);
    memmove(&n->inputs[body->out_at], &n->inputs[body->out_at + body->nout],
            (size_t)(n->ninputs - body->out_at - body->nout) * sizeof *n->inputs);
    n->ninputs -= body->nout;
    for (int o = 0; o < n->nbodies; o++) {
        dt_ox_body *other = &g->bodies[n->bodies[o]];
        if (other != body && other->out_at > body->out_at)
            other->out_at -= body->nout;
    }
    body->out_at = 0;
    body->nout = 0;
    body->taken = 0;
    memset(gone + body->first, 1, (size_t)body->nnodes);
}

/* Removes the nodes marked in gone, renumbering what refers to nodes. */
static void compact(dt_ox_graph *g, const unsigned char *gone, int *newidx)
{
    int k = 0;
    for (int i = 0; i < g->nnodes; i++) {
        newidx[i] = gone[i] ? -1 : k;
        if (gone[i])
            dt_ox_node_clear(&g->nodes[i]);
        else
            g->nodes[k++] = g->nodes[i];
    }
    newidx[g->nnodes] = k;
    for (int b = 0; b < g->nbodies; b++) {
        dt_ox_body *body = &g->bodies[b];
        if (!body->taken || body->control < 0 || newidx[body->control] < 0) {
            body->taken = 0; /* dropped, or inside a dropped branch */
            if (body->control >= 0 && newidx[body->control] < 0)
                body->control = -1;
            else if (body->control >= 0)
                body->control = newidx[body->control];
            continue;
        }
        int end = body->first + body->nnodes, first = body->first;
        while (first < end && newidx[first] < 0)
            first++;
        int kept = 0;
        for (int j = first; j < end; j++)
            kept += newidx[j] >= 0;
        body->first = first < end ? newidx[first] : newidx[body->control];
        body->nnodes = kept;
        body->control = newidx[body->control];
    }
    g->nnodes = k;
}

int dt_ox_take_branches(dt_ox_graph *g, const char *const *args, int n, dt_err *e)
{
    if (n <= 0)
        return 0;
    int *node = calloc((size_t)n, sizeof *node), *take = calloc((size_t)n, sizeof *take);
    unsigned char *gone = calloc((size_t)g->nnodes + 1, 1);
    int *newidx = malloc(((size_t)g->nnodes + 1) * sizeof *newidx);
    int rc = node && take && gone && newidx ? 0 : dt_errf(e, DT_ENOMEM, "out of memory");
    for (int a = 0; a < n && !rc; a++) {
        rc = parse_arg(g, args[a], &node[a], &take[a], e);
        for (int b = 0; b < a && !rc; b++)
            if (node[b] == node[a])
                rc = dt_errf(e, DT_EINVAL, "--branch '%s': that If is already given by --branch "
                                           "'%s'",
                             args[a], args[b]);
    }
    /* an If inside a branch another choice leaves out cannot be chosen */
    for (int a = 0; a < n && !rc; a++)
        for (int b = 0; b < n && !rc && take[a]; b++) {
            if (!take[b] || b == a)
                continue;
            const dt_ox_body *out = &g->bodies[g->nodes[node[b]].bodies[take[b] == TAKE_THEN]];
            if (node[a] >= out->first && node[a] < out->first + out->nnodes)
                rc = dt_errf(e, DT_EINVAL, "--branch '%s': that If is inside %s, which --branch "
                                           "'%s' leaves out",
                             args[a], out->path, args[b]);
        }
    if (!rc) {
        for (int a = 0; a < n; a++)
            if (take[a])
                drop_body(g, node[a], take[a] == TAKE_THEN, gone);
        compact(g, gone, newidx);
    }
    free(node);
    free(take);
    free(gone);
    free(newidx);
    return rc;
}
