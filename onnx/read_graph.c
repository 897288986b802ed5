/* The main graph and the bodies of its If, Loop and Scan nodes, flattened
 * into one node list (onnx/graph.h, "Subgraphs"; docs/onnx-import.md).
 *
 * A first pass counts what every graph holds — nodes, initializers,
 * declared values, bodies — and the bytes the bodies' paths add to their
 * names, so the arrays are allocated once and a file whose paths would
 * multiply its names' size is refused before anything is copied.  The
 * second pass reads the graphs in order: a control node's bodies first
 * (then_branch, else_branch; nested ones inside), each in a scope that
 * renames the names it defines, then the node itself, to which the bodies'
 * outputs and inputs are appended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/graph.h"
#include "onnx/read_internal.h"

typedef dt_ox_reader reader;

/* ---- a set of names ------------------------------------------------------ */

typedef struct {
    const char **slot;
    size_t mask;
} name_set;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211u;
    return h;
}

static int set_init(name_set *s, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    s->slot = calloc(cap, sizeof *s->slot);
    s->mask = cap - 1;
    return s->slot ? 0 : -1;
}

/* 1 when name is in the set; with add, it is inserted when absent. */
static int set_find(const name_set *s, const char *name, int add)
{
    size_t i = name_hash(name) & s->mask;
    for (; s->slot[i]; i = (i + 1) & s->mask)
        if (!strcmp(s->slot[i], name))
            return 1;
    if (add)
        s->slot[i] = name;
    return 0;
}

/* ---- scopes and paths ----------------------------------------------------- */

struct dt_ox_scope {
    const dt_ox_scope *parent; /* the enclosing body's; NULL: the main graph's */
    const char *path;          /* this body's path */
    name_set names;            /* what this body defines (the file's names) */
};

/* path + "/" + name ("/If/then_branch" + "/x"; one '/' when name starts with
 * one); name alone without a path.  NULL: no memory. */
static char *join(const char *path, const char *name)
{
    if (!path)
        return strdup(name);
    size_t np = strlen(path), nn = strlen(name);
    int slash = name[0] != '/';
    char *s = malloc(np + (size_t)slash + nn + 1);
    if (!s)
        return NULL;
    memcpy(s, path, np);
    if (slash)
        s[np] = '/';
    memcpy(s + np + (size_t)slash, name, nn + 1);
    return s;
}

char *dt_ox_scope_name(const dt_ox_scope *sc, const char *name)
{
    for (const dt_ox_scope *s = name[0] ? sc : NULL; s; s = s->parent)
        if (set_find(&s->names, name, 0))
            return join(s->path, name);
    return strdup(name);
}

/* The name of the k-th node of the graph at path (NULL: the main graph). */
static char *node_name(const char *path, const char *name, const char *op_type, size_t k)
{
    if (name && name[0])
        return join(path, name);
    if (!path)
        return strdup("");
    char *s = NULL;
    return asprintf(&s, "%s/%.64s#%zu", path, op_type ? op_type : "?", k) < 0 ? NULL : s;
}

char *dt_ox_scope_node_name(const dt_ox_scope *sc, const char *name, const char *op_type,
                            size_t k)
{
    return node_name(sc ? sc->path : NULL, name, op_type, k);
}

/* A control node's path: its name (with the enclosing path), or
 * "<OpType>#<k>" when it has none or a name longer than DT_OX_MAX_PATH_NAME. */
static char *control_path(const char *path, const Onnx__NodeProto *p, size_t k)
{
    const char *name = p->name && strlen(p->name) <= DT_OX_MAX_PATH_NAME ? p->name : "";
    if (name[0])
        return join(path, name);
    char *s = NULL;
    int n = path ? asprintf(&s, "%s/%.64s#%zu", path, p->op_type, k)
                 : asprintf(&s, "%.64s#%zu", p->op_type, k);
    return n < 0 ? NULL : s;
}

/* ---- control nodes --------------------------------------------------------- */

typedef struct {
    const char *op;
    int nbodies;
    const char *attrs[2];
} control_op;

static const control_op controls[] = {
    {"If", 2, {"then_branch", "else_branch"}},
    {"Loop", 1, {"body"}},
    {"Scan", 1, {"body"}},
};

/* The kind of p when it is an If, Loop or Scan of the default domain. */
static const control_op *control_of(const Onnx__NodeProto *p)
{
    const char *d = p->domain ? p->domain : "";
    if (!p->op_type || (d[0] && strcmp(d, "ai.onnx")))
        return NULL;
    for (size_t i = 0; i < sizeof controls / sizeof controls[0]; i++)
        if (!strcmp(p->op_type, controls[i].op))
            return &controls[i];
    return NULL;
}

/* The graph of p's first attribute named attr, NULL when there is none. */
static const Onnx__GraphProto *body_graph(const Onnx__NodeProto *p, const char *attr, size_t *at)
{
    for (size_t a = 0; a < p->n_attribute; a++)
        if (p->attribute[a]->name && !strcmp(p->attribute[a]->name, attr)) {
            *at = a;
            return p->attribute[a]->g;
        }
    return NULL;
}

/* ---- the first pass: counts ----------------------------------------------- */

typedef struct {
    int64_t nodes, inits, values, bodies;
    uint64_t path_bytes; /* what the paths add to names */
} counts;

/* The strings of graph gp that get its path in front (an upper bound: a
 * name read from an outer scope keeps its own). */
static uint64_t graph_strings(const Onnx__GraphProto *gp)
{
    uint64_t n = gp->n_initializer + gp->n_sparse_initializer;
    n += 2 * ((uint64_t)gp->n_input + gp->n_output) + gp->n_value_info; /* + the appended */
    for (size_t i = 0; i < gp->n_node; i++)
        n += 1 + gp->node[i]->n_input + gp->node[i]->n_output;
    return n;
}

static int count_graph(reader *r, const Onnx__GraphProto *gp, const char *path, counts *c)
{
    c->nodes += (int64_t)gp->n_node;
    c->inits += (int64_t)(gp->n_initializer + gp->n_sparse_initializer);
    c->values += (int64_t)gp->n_value_info;
    if (path) {
        c->values += (int64_t)(gp->n_input + gp->n_output);
        c->path_bytes += graph_strings(gp) * (strlen(path) + 1);
    }
    if (c->path_bytes > (uint64_t)DT_OX_MAX_PATH_BYTES)
        return dt_ox_read_fail(r, DT_EINVAL,
                               "the paths of its subgraphs would add more than %lld MiB to the "
                               "names of their nodes and tensors",
                               (long long)(DT_OX_MAX_PATH_BYTES >> 20));
    for (size_t k = 0; k < gp->n_node; k++) {
        const control_op *op = control_of(gp->node[k]);
        for (int b = 0; op && b < op->nbodies; b++) {
            size_t at;
            const Onnx__GraphProto *bg = body_graph(gp->node[k], op->attrs[b], &at);
            if (!bg)
                continue; /* refused by the second pass, naming the node */
            char *cp = control_path(path, gp->node[k], k);
            char *bp = cp ? join(cp, op->attrs[b]) : NULL;
            free(cp);
            if (!bp)
                return dt_ox_read_oom(r);
            c->bodies++;
            int rc = count_graph(r, bg, bp, c);
            free(bp);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---- the second pass --------------------------------------------------------- */

static int read_graph_nodes(reader *r, const Onnx__GraphProto *gp, const dt_ox_scope *sc,
                            int body);

/* Initializers, then sparse initializers (dims and type only), appended to
 * g->inits with their names as sc gives them; names (not NULL for the main
 * graph) gets the file's names. */
static int read_inits(reader *r, const Onnx__GraphProto *gp, const dt_ox_scope *sc,
                      name_set *names)
{
    dt_ox_graph *g = r->g;
    size_t n = gp->n_initializer + gp->n_sparse_initializer;
    for (size_t i = 0; i < n; i++) {
        const Onnx__TensorProto *t;
        const int64_t *dims;
        size_t ndims;
        int sparse = i >= gp->n_initializer;
        if (!sparse) {
            t = gp->initializer[i];
            dims = t->dims;
            ndims = t->n_dims;
        } else {
            const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i - gp->n_initializer];
            t = sp->values;
            dims = sp->dims;
            ndims = sp->n_dims;
        }
        const char *what = sparse ? "sparse initializer" : "initializer";
        if (!t || !t->name || !t->name[0])
            return dt_ox_read_fail(r, DT_EINVAL, "%s #%zu has no name", what,
                                   sparse ? i - gp->n_initializer : i);
        char where[300];
        snprintf(where, sizeof where, "%s '%.200s'", what, t->name);
        dt_ox_tensor *o = &g->inits[g->ninits++];
        int rc;
        if (!sparse) {
            rc = dt_ox_tensor_from_proto(t, r->source, where, o, r->e);
        } else { /* the dense shape; no values (the reader never densifies) */
            o->elem_type = t->has_data_type ? t->data_type : DT_OX_UNDEFINED;
            rc = dt_ox_tensor_dims(dims, ndims, r->source, where, o, r->e);
        }
        if (rc)
            return rc;
        if (sc) {
            free(o->name);
            if (!(o->name = dt_ox_scope_name(sc, t->name)))
                return dt_ox_read_oom(r);
        } else if (sparse && !(o->name = strdup(t->name))) {
            return dt_ox_read_oom(r);
        }
        if (names && set_find(names, t->name, 1))
            return dt_ox_read_fail(r, DT_EINVAL, "%s: a second initializer of that name", where);
    }
    return 0;
}

/* Declared values vis[0..n) into dst[0..n), named as sc names them (NULL:
 * as they are). */
static int read_into(reader *r, Onnx__ValueInfoProto *const *vis, size_t n, const char *what,
                     const dt_ox_scope *sc, dt_ox_value *dst)
{
    for (size_t i = 0; i < n; i++) {
        int rc = dt_ox_read_value(r, vis[i], what, i, sc, &dst[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* ... appended to g->value_infos (allocated for every graph's at once). */
static int append_values(reader *r, Onnx__ValueInfoProto *const *vis, size_t n, const char *what,
                         const dt_ox_scope *sc)
{
    dt_ox_value *dst = &r->g->value_infos[r->g->nvalue_infos];
    r->g->nvalue_infos += (int)n; /* counted as read, so a failure frees what is there */
    return read_into(r, vis, n, what, sc, dst);
}

/* ... into a new array *out of *nout. */
static int read_values(reader *r, Onnx__ValueInfoProto *const *vis, size_t n, const char *what,
                       dt_ox_value **out, int *nout)
{
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out)
        return dt_ox_read_oom(r);
    *nout = (int)n;
    return read_into(r, vis, n, what, NULL, *out);
}

/* A body read, waiting for its control node: the names of its outputs and
 * inputs as they will be appended to the node. */
typedef struct {
    int b; /* index in g->bodies */
    char **outs, **ins;
    size_t nouts, nins;
} pending;

static void pending_free(pending *p)
{
    for (size_t i = 0; p->outs && i < p->nouts; i++)
        free(p->outs[i]);
    for (size_t i = 0; p->ins && i < p->nins; i++)
        free(p->ins[i]);
    free(p->outs);
    free(p->ins);
}

/* The names vis[0..n) have in scope sc, into *out. */
static int scope_names(reader *r, Onnx__ValueInfoProto *const *vis, size_t n,
                       const dt_ox_scope *sc, char ***out)
{
    if (!(*out = calloc(n ? n : 1, sizeof **out)))
        return dt_ox_read_oom(r);
    for (size_t i = 0; i < n; i++)
        if (!((*out)[i] = dt_ox_scope_name(sc, vis[i]->name ? vis[i]->name : "")))
            return dt_ox_read_oom(r);
    return 0;
}

/* Reads body graph bg (attribute attr of control node p, at path cpath) and
 * its nested bodies into the node list; *pd gets what its control node
 * needs. */
static int read_body(reader *r, const Onnx__GraphProto *bg, const char *cpath, const char *attr,
                     const dt_ox_scope *outer, pending *pd)
{
    dt_ox_graph *g = r->g;
    int b = pd->b = g->nbodies++;
    dt_ox_body *body = &g->bodies[b];
    body->attr = attr;
    body->control = -1;
    body->taken = 1;
    body->first = g->nnodes;
    if (!(body->path = join(cpath, attr)))
        return dt_ox_read_oom(r);
    dt_ox_scope sc = {.parent = outer, .path = body->path};
    size_t nnames = bg->n_input + bg->n_initializer + bg->n_sparse_initializer;
    for (size_t k = 0; k < bg->n_node; k++)
        nnames += bg->node[k]->n_output;
    if (set_init(&sc.names, nnames))
        return dt_ox_read_oom(r);
    for (size_t i = 0; i < bg->n_input; i++)
        if (bg->input[i]->name && bg->input[i]->name[0])
            set_find(&sc.names, bg->input[i]->name, 1);
    for (size_t i = 0; i < bg->n_initializer; i++)
        if (bg->initializer[i]->name && bg->initializer[i]->name[0])
            set_find(&sc.names, bg->initializer[i]->name, 1);
    for (size_t i = 0; i < bg->n_sparse_initializer; i++) {
        const Onnx__TensorProto *t = bg->sparse_initializer[i]->values;
        if (t && t->name && t->name[0])
            set_find(&sc.names, t->name, 1);
    }
    for (size_t k = 0; k < bg->n_node; k++)
        for (size_t o = 0; o < bg->node[k]->n_output; o++)
            if (bg->node[k]->output[o] && bg->node[k]->output[o][0])
                set_find(&sc.names, bg->node[k]->output[o], 1);
    char in_what[300], out_what[300];
    snprintf(in_what, sizeof in_what, "input of '%.200s'", body->path);
    snprintf(out_what, sizeof out_what, "output of '%.200s'", body->path);
    int rc = read_inits(r, bg, &sc, NULL);
    if (!rc)
        rc = append_values(r, bg->input, bg->n_input, in_what, &sc);
    if (!rc)
        rc = append_values(r, bg->output, bg->n_output, out_what, &sc);
    if (!rc)
        rc = append_values(r, bg->value_info, bg->n_value_info, "value_info", &sc);
    if (!rc)
        rc = read_graph_nodes(r, bg, &sc, b + 1);
    pd->nouts = bg->n_output;
    pd->nins = bg->n_input;
    if (!rc)
        rc = scope_names(r, bg->output, bg->n_output, &sc, &pd->outs);
    if (!rc)
        rc = scope_names(r, bg->input, bg->n_input, &sc, &pd->ins);
    g->bodies[b].nnodes = g->nnodes - g->bodies[b].first;
    free(sc.names.slot);
    return rc;
}

/* Checks that control node i (of kind op) and its bodies agree as ONNX
 * requires (the counts dtune's shape rules rely on). */
static int check_control(reader *r, int i, const control_op *op, const pending *pd,
                         const Onnx__NodeProto *p)
{
    const dt_ox_node *n = &r->g->nodes[i];
    int nin = n->ninputs, nout = n->noutputs;
    if (!strcmp(op->op, "If")) {
        if (nin != 1)
            return dt_ox_read_node_fail(r, i, "an If has one input (its condition), not %d", nin);
        for (int b = 0; b < 2; b++) {
            if (pd[b].nins)
                return dt_ox_read_node_fail(r, i, "its %s has %zu inputs; an If's branches have "
                                                  "none",
                                            op->attrs[b], pd[b].nins);
            if ((int)pd[b].nouts != nout)
                return dt_ox_read_node_fail(r, i, "its %s has %zu outputs, the If %d",
                                            op->attrs[b], pd[b].nouts, nout);
        }
        return 0;
    }
    if (!strcmp(op->op, "Loop")) {
        int carried = nin - 2;
        if (nin < 2)
            return dt_ox_read_node_fail(r, i, "a Loop has at least 2 inputs (its trip count and "
                                              "condition, either may be \"\"), not %d",
                                        nin);
        const char *pl = carried == 1 ? "" : "s";
        if ((int)pd->nins != nin)
            return dt_ox_read_node_fail(r, i, "its body has %zu inputs; a Loop with %d carried "
                                              "value%s needs %d (iteration number, condition, "
                                              "the values)",
                                        pd->nins, carried, pl, nin);
        if ((int)pd->nouts != 1 + nout || nout < carried)
            return dt_ox_read_node_fail(r, i, "its body has %zu outputs; a Loop with %d carried "
                                              "value%s and %d outputs needs %d (condition, the "
                                              "values, the scan outputs)",
                                        pd->nouts, carried, pl, nout, 1 + nout);
        return 0;
    }
    int64_t m = -1; /* Scan: num_scan_inputs */
    for (size_t a = 0; a < p->n_attribute; a++)
        if (p->attribute[a]->name && !strcmp(p->attribute[a]->name, "num_scan_inputs"))
            m = p->attribute[a]->i;
    if (m < 1 || m > nin)
        return dt_ox_read_node_fail(r, i, "num_scan_inputs is %lld; a Scan needs 1 to its %d "
                                          "inputs",
                                    (long long)m, nin);
    int states = nin - (int)m;
    if ((int)pd->nins != nin || (int)pd->nouts != nout || nout < states)
        return dt_ox_read_node_fail(r, i, "its body has %zu inputs and %zu outputs; a Scan with "
                                          "%d states, %lld scan inputs and %d outputs needs %d and "
                                          "%d",
                                    pd->nins, pd->nouts, states, (long long)m, nout, nin, nout);
    return 0;
}

/* Appends the bodies' outputs to control node i's inputs and their inputs
 * to its outputs, and records where. */
static int append_io(reader *r, int i, const control_op *op, pending *pd)
{
    dt_ox_graph *g = r->g;
    dt_ox_node *n = &g->nodes[i];
    size_t nin = (size_t)n->ninputs, nout = (size_t)n->noutputs;
    for (int b = 0; b < op->nbodies; b++)
        nin += pd[b].nouts, nout += pd[b].nins;
    if (nin > DT_OX_MAX_NODE_IO || nout > DT_OX_MAX_NODE_IO) /* the checks above bound them */
        return dt_ox_read_node_fail(r, i, "too many inputs or outputs with its bodies'");
    char **in = realloc(n->inputs, (nin ? nin : 1) * sizeof *in);
    if (!in)
        return dt_ox_read_oom(r);
    n->inputs = in;
    char **out = realloc(n->outputs, (nout ? nout : 1) * sizeof *out);
    if (!out)
        return dt_ox_read_oom(r);
    n->outputs = out;
    n->nin_own = n->ninputs;
    n->nout_own = n->noutputs;
    for (int b = 0; b < op->nbodies; b++) {
        dt_ox_body *body = &g->bodies[pd[b].b];
        body->control = i;
        body->out_at = n->ninputs;
        body->nout = (int)pd[b].nouts;
        body->in_at = n->noutputs;
        body->nin = (int)pd[b].nins;
        for (size_t k = 0; k < pd[b].nouts; k++) { /* moved: the node owns them */
            n->inputs[n->ninputs++] = pd[b].outs[k];
            pd[b].outs[k] = NULL;
        }
        for (size_t k = 0; k < pd[b].nins; k++) {
            n->outputs[n->noutputs++] = pd[b].ins[k];
            pd[b].ins[k] = NULL;
        }
        n->bodies[b] = pd[b].b;
    }
    n->nbodies = op->nbodies;
    return 0;
}

/* The k-th node of graph gp (scope sc), a control node: its bodies, then
 * itself. */
static int read_control(reader *r, const Onnx__GraphProto *gp, size_t k, const dt_ox_scope *sc,
                        int body, const control_op *op)
{
    const Onnx__NodeProto *p = gp->node[k];
    pending pd[2] = {{.b = -1}, {.b = -1}};
    size_t at[2] = {0, 0};
    char *cpath = control_path(sc ? sc->path : NULL, p, k);
    int rc = cpath ? 0 : dt_ox_read_oom(r);
    for (int b = 0; b < op->nbodies && !rc; b++) {
        const Onnx__GraphProto *bg = body_graph(p, op->attrs[b], &at[b]);
        if (!bg)
            rc = dt_ox_read_fail(r, DT_EINVAL, "node '%.200s' (%s): an %s needs its %s graph",
                                 cpath, op->op, op->op, op->attrs[b]);
        else
            rc = read_body(r, bg, cpath, op->attrs[b], sc, &pd[b]);
    }
    free(cpath);
    int i = r->g->nnodes;
    if (!rc) {
        r->g->nnodes++;
        rc = dt_ox_read_node(r, i, p, sc, k);
    }
    if (!rc) {
        r->g->nodes[i].body = body;
        rc = check_control(r, i, op, pd, p);
    }
    if (!rc)
        rc = append_io(r, i, op, pd);
    for (int b = 0; !rc && b < op->nbodies; b++) {
        dt_ox_attr *a = &r->g->nodes[i].attrs[at[b]];
        a->type = DT_OX_ATTR_GRAPH;
        a->i = pd[b].b;
    }
    for (int b = 0; b < op->nbodies; b++)
        pending_free(&pd[b]);
    return rc;
}

/* The nodes of graph gp (scope sc; NULL for the main graph), each marked
 * with body (1 + its index in g->bodies, 0: the main graph). */
static int read_graph_nodes(reader *r, const Onnx__GraphProto *gp, const dt_ox_scope *sc,
                            int body)
{
    for (size_t k = 0; k < gp->n_node; k++) {
        const control_op *op = control_of(gp->node[k]);
        if (op) {
            int rc = read_control(r, gp, k, sc, body, op);
            if (rc)
                return rc;
            continue;
        }
        int i = r->g->nnodes++;
        int rc = dt_ox_read_node(r, i, gp->node[k], sc, k);
        if (rc)
            return rc;
        r->g->nodes[i].body = body;
    }
    return 0;
}

int dt_ox_read_graph(reader *r, const Onnx__GraphProto *gp)
{
    dt_ox_graph *g = r->g;
    if (!(g->graph_name = strdup(gp->name ? gp->name : "")))
        return dt_ox_read_oom(r);
    counts c = {0};
    int rc = count_graph(r, gp, NULL, &c);
    if (rc)
        return rc;
    if (c.nodes > DT_OX_MAX_NODES) /* dt_ox_trim already refused it; kept for clarity */
        return dt_ox_read_fail(r, DT_EINVAL, "%lld nodes; at most %d are accepted",
                               (long long)c.nodes, DT_OX_MAX_NODES);
    /* the counts are bounded by the trimmed structure's size */
    g->nodes = calloc((size_t)c.nodes + 1, sizeof *g->nodes);
    g->inits = calloc((size_t)c.inits + 1, sizeof *g->inits);
    g->value_infos = calloc((size_t)c.values + 1, sizeof *g->value_infos);
    g->bodies = calloc((size_t)c.bodies + 1, sizeof *g->bodies);
    if (!g->nodes || !g->inits || !g->value_infos || !g->bodies)
        return dt_ox_read_oom(r);
    name_set names = {0};
    if (set_init(&names, gp->n_initializer + gp->n_sparse_initializer))
        return dt_ox_read_oom(r);
    rc = read_inits(r, gp, NULL, &names);
    if (rc) {
        free(names.slot);
        return rc;
    }
    /* Graph inputs that are initializers (IR < 4 lists them all) are
     * weights, not inputs: they are left out of g->inputs. */
    size_t nin = 0;
    Onnx__ValueInfoProto **ins = calloc(gp->n_input ? gp->n_input : 1, sizeof *ins);
    if (!ins) {
        free(names.slot);
        return dt_ox_read_oom(r);
    }
    for (size_t i = 0; i < gp->n_input; i++)
        if (!gp->input[i]->name || !set_find(&names, gp->input[i]->name, 0))
            ins[nin++] = gp->input[i];
    free(names.slot);
    rc = read_values(r, ins, nin, "graph input", &g->inputs, &g->ninputs);
    free(ins);
    if (!rc)
        rc = read_values(r, gp->output, gp->n_output, "graph output", &g->outputs, &g->noutputs);
    if (!rc)
        rc = append_values(r, gp->value_info, gp->n_value_info, "value_info", NULL);
    if (!rc)
        rc = read_graph_nodes(r, gp, NULL, 0);
    return rc;
}
