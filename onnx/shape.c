/* Shape propagation driver (onnx/shape.h): the tensor table, the
 * topological order of the nodes, one rule per node (op_table.c,
 * shape_ops_*.c; a control node whose bodies were read in two steps,
 * shape_ops_control.c), and the public view of the result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "onnx/shape_internal.h"
#include "shape/model.h"
#include "onnx/shape_ops.h"

static const char *src(const dt_ox_graph *g)
{
    return g->source ? g->source : "model";
}

/* ---- the table ---------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

int dt_ox_find(const dt_ox_shapes *s, const char *name)
{
    if (!s || !name || !name[0] || !s->tabcap)
        return -1;
    for (size_t j = hash_str(name) & (s->tabcap - 1); s->tab[j] >= 0;
         j = (j + 1) & (s->tabcap - 1))
        if (strcmp(s->t[s->tab[j]].pub.name, name) == 0)
            return s->tab[j];
    return -1;
}

/* Adds a tensor; its index, or -1 when the name is already there. */
static int add_tensor(dt_ox_shapes *s, const char *name, int producer)
{
    size_t j = hash_str(name) & (s->tabcap - 1);
    for (; s->tab[j] >= 0; j = (j + 1) & (s->tabcap - 1))
        if (strcmp(s->t[s->tab[j]].pub.name, name) == 0)
            return -1;
    int i = s->n++;
    ox_tensor *t = &s->t[i];
    t->pub.name = name;
    t->pub.producer = producer;
    t->pub.rank = -1;
    t->pub.nvals = -1;
    t->nv = -1;
    s->tab[j] = i;
    return i;
}

/* Records that node reads t (read: OX_READ_ENTRY or OX_READ_NODE): 1 when
 * that is new, 0 when it was known, DT_ENOMEM. */
static int add_consumer(ox_tensor *t, int node, unsigned char read)
{
    if (t->ncons && t->cons[t->ncons - 1] == node) {
        unsigned char *r = &t->cons_read[t->ncons - 1];
        int fresh = !(*r & read);
        *r |= read;
        return fresh;
    }
    if (t->ncons == t->capcons) {
        int cap = t->capcons ? 2 * t->capcons : 2;
        int *c = realloc(t->cons, (size_t)cap * sizeof *c);
        if (!c)
            return DT_ENOMEM;
        t->cons = c;
        unsigned char *r = realloc(t->cons_read, (size_t)cap);
        if (!r)
            return DT_ENOMEM;
        t->cons_read = r;
        t->capcons = cap;
    }
    t->cons_read[t->ncons] = read;
    t->cons[t->ncons++] = node;
    return 1;
}

void dt_ox_shapes_free(dt_ox_shapes *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        ox_tensor *t = &s->t[i];
        for (int k = 0; k < DT_OX_MAX_RANK; k++)
            dt_expr_free(t->pub.dims[k]);
        for (int k = 0; t->pub.vals && k < t->pub.nvals; k++)
            dt_expr_free(t->pub.vals[k]);
        free(t->pub.vals);
        free(t->vals);
        free(t->cons);
        free(t->cons_read);
    }
    free(s->t);
    free(s->tab);
    free(s->how);
    free(s->unk_in);
    free(s->norule);
    for (int i = 0; s->failed && i < s->nnodes; i++)
        free(s->failed[i]);
    free(s->failed);
    for (int i = 0; s->note && i < s->nnodes; i++)
        free(s->note[i]);
    free(s->note);
    for (int i = 0; s->repeat && s->g && i < s->g->nbodies; i++)
        dt_expr_free(s->repeat[i]);
    free(s->repeat);
    free(s->dead);
    free(s);
}

const dt_ox_shape *dt_ox_shape_of(const dt_ox_shapes *s, const char *tensor)
{
    int i = dt_ox_find(s, tensor);
    return i >= 0 && s->t[i].known ? &s->t[i].pub : NULL;
}

const int *dt_ox_consumers(const dt_ox_shapes *s, const char *tensor, int *n)
{
    int i = dt_ox_find(s, tensor);
    *n = i >= 0 ? s->t[i].ncons : 0;
    return i >= 0 ? s->t[i].cons : NULL;
}

int dt_ox_is_graph_output(const dt_ox_shapes *s, const char *tensor)
{
    int i = dt_ox_find(s, tensor);
    return i >= 0 && s->t[i].is_output;
}

dt_ox_shapes_how dt_ox_node_shapes(const dt_ox_shapes *s, int node)
{
    return s && s->how && node >= 0 && node < s->nnodes ? (dt_ox_shapes_how)s->how[node]
                                                        : DT_OX_SHAPES_RULE;
}

const char *dt_ox_node_failure(const dt_ox_shapes *s, int node)
{
    return node >= 0 && node < s->nnodes ? s->failed[node] : NULL;
}

int dt_ox_first_failure(const dt_ox_shapes *s, int *node, dt_err *e)
{
    for (int i = 0; i < s->nnodes; i++)
        if (s->failed[i]) {
            if (node)
                *node = i;
            return dt_errf(e, DT_EINVAL, "%s", s->failed[i]);
        }
    return 0;
}

int dt_ox_node_dead(const dt_ox_shapes *s, int node)
{
    if (!s || !s->g || !s->dead || node < 0 || node >= s->nnodes)
        return 0;
    /* the bodies holding the node, innermost first: each one's control node
     * lies in the next */
    for (int b = s->g->nodes[node].body; b > 0 && b <= s->g->nbodies;
         b = s->g->nodes[s->g->bodies[b - 1].control].body)
        if (s->dead[b - 1])
            return 1;
    return 0;
}

const dt_expr *dt_ox_node_repeat(const dt_ox_shapes *s, int node)
{
    int b = s && s->g && node >= 0 && node < s->nnodes ? s->g->nodes[node].body : 0;
    return s && s->repeat && b > 0 && b <= s->g->nbodies ? s->repeat[b - 1] : NULL;
}

/* The note of "how" alone. */
static const char *how_note(dt_ox_shapes_how how)
{
    switch (how) {
    case DT_OX_SHAPES_VALUE_INFO:
        return "shapes from value_info";
    case DT_OX_SHAPES_UNKNOWN:
        return "shapes unknown";
    default:
        return NULL;
    }
}

const char *dt_ox_node_shapes_note(const dt_ox_shapes *s, int node)
{
    if (s && s->note && node >= 0 && node < s->nnodes && s->note[node])
        return s->note[node]; /* a control node: what it holds, and how_note */
    return how_note(dt_ox_node_shapes(s, node));
}

/* ---- the public view of a tensor ---------------------------------------------- */

/* Writes t's dims and values as expressions (the syms die with the
 * propagation).  A failure is named after node c when there is one. */
static int publish(sym_ctx *sc, ox_tensor *t, ox_node *c, dt_err *e)
{
    for (int k = 0; k < t->pub.rank; k++)
        if (!t->pub.dims[k] && !(t->pub.dims[k] = dt_ox_sym_to_expr(sc, t->dims[k])))
            return c ? dt_ox_sym_fail(c) : dt_ox_sym_take_err(sc, e);
    if (t->nv >= 0 && !t->pub.vals) {
        if (!(t->pub.vals = calloc((size_t)(t->nv ? t->nv : 1), sizeof *t->pub.vals)))
            return dt_errf(e, DT_ENOMEM, "out of memory");
        t->pub.nvals = t->nv;
        for (int k = 0; k < t->nv; k++)
            if (!(t->pub.vals[k] = dt_ox_sym_to_expr(sc, t->vals[k])))
                return c ? dt_ox_sym_fail(c) : dt_ox_sym_take_err(sc, e);
    }
    return 0;
}

/* ---- graph inputs and initializers -------------------------------------------- */

static int add_inputs(const dt_ox_graph *g, dt_ox_shapes *s, sym_ctx *sc, const ox_varname *v,
                      int nv, const sym *const *vsym, dt_err *e)
{
    for (int i = 0; i < g->ninputs; i++) {
        const dt_ox_value *in = &g->inputs[i];
        int ti = add_tensor(s, in->name, -1);
        if (ti < 0)
            return dt_errf(e, DT_EINVAL, "%s: graph input '%s' is declared twice", src(g),
                           in->name);
        ox_tensor *t = &s->t[ti];
        t->pub.elem_type = in->elem_type;
        if (in->rank < 0) {
            t->unknown = 1; /* no declared shape: its readers' shapes are unknown */
            continue;
        }
        if (in->rank > DT_OX_MAX_RANK)
            return dt_errf(e, DT_EINVAL, "%s: graph input '%s' has rank %d (at most %d)", src(g),
                           in->name, in->rank, DT_OX_MAX_RANK);
        for (int a = 0; a < in->rank; a++) {
            int k = dt_ox_var_of_dim(v, nv, g, i, a);
            if (k >= 0)
                t->dims[a] = vsym[k];
            else if (in->dims[a].value > OX_DIM_MAX)
                return dt_errf(e, DT_EINVAL,
                               "%s: graph input '%s' has dim %d = %lld (at most 2^40)", src(g),
                               in->name, a, (long long)in->dims[a].value);
            else
                t->dims[a] = dt_ox_sym_const(sc, in->dims[a].value);
        }
        t->known = 1;
        t->pub.rank = in->rank;
    }
    return 0;
}

static int all_equal(const double *v, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return n > 0;
}

static int add_inits(const dt_ox_graph *g, dt_ox_shapes *s, sym_ctx *sc, dt_err *e)
{
    for (int i = 0; i < g->ninits; i++) {
        const dt_ox_tensor *in = &g->inits[i];
        int ti = add_tensor(s, in->name, -1);
        if (ti < 0) /* also a graph input: a default value the caller may override */
            continue;
        ox_tensor *t = &s->t[ti];
        if (in->rank < 0 || in->rank > DT_OX_MAX_RANK)
            return dt_errf(e, DT_EINVAL, "%s: initializer '%s' has rank %d (at most %d)", src(g),
                           in->name, in->rank, DT_OX_MAX_RANK);
        for (int a = 0; a < in->rank; a++) {
            if (in->dims[a] < 0 || in->dims[a] > OX_DIM_MAX)
                return dt_errf(e, DT_EINVAL, "%s: initializer '%s' has dim %d = %lld", src(g),
                               in->name, a, (long long)in->dims[a]);
            t->dims[a] = dt_ox_sym_const(sc, in->dims[a]);
        }
        t->known = 1;
        t->pub.rank = in->rank;
        t->pub.elem_type = in->elem_type;
        t->pub.is_const = 1;
        if (in->has_values && in->ivals && in->numel <= DT_OX_MAX_VALUES) {
            t->vals = calloc((size_t)(in->numel ? in->numel : 1), sizeof *t->vals);
            if (!t->vals)
                return dt_errf(e, DT_ENOMEM, "out of memory");
            for (int64_t k = 0; k < in->numel; k++)
                t->vals[k] = dt_ox_sym_const(sc, in->ivals[k]);
            t->nv = (int)in->numel;
        }
        if (in->has_values && in->fvals && all_equal(in->fvals, in->numel)) {
            t->pub.has_fval = 1;
            t->pub.fval = in->fvals[0];
        }
        if (dt_ox_sym_failed(sc))
            return dt_ox_sym_take_err(sc, e);
    }
    return 0;
}

/* ---- order -------------------------------------------------------------------- */

static void heap_push(int *h, int *n, int v)
{
    int i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], v = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

static int node_err(const dt_ox_graph *g, int i, dt_err *e, const char *what, const char *name)
{
    char label[320];
    dt_ox_node_label(g, i, label, sizeof label);
    return dt_errf(e, DT_EINVAL, "%s: node %s: %s '%s'%s", src(g), label, what, name,
                   strcmp(what, "input") == 0
                       ? " is produced by no node and is neither a graph input nor an initializer "
                         "(dangling input)"
                       : " is already defined (by another node, a graph input or an initializer)");
}

/* A node on a cycle among the nodes Kahn's algorithm could not order
 * (indeg > 0: not run; a control node keeps 1 until its entry ran): walk
 * back through unordered producers — or, for a node of a body, to the
 * body's control node — until a node repeats. */
static int cycle_node(const dt_ox_graph *g, const dt_ox_shapes *s, const int *indeg, int *seen)
{
    int u = 0;
    while (indeg[u] == 0)
        u++;
    while (!seen[u]) {
        seen[u] = 1;
        const dt_ox_node *n = &g->nodes[u];
        int next = -1;
        for (int k = 0; k < n->ninputs && next < 0; k++) {
            int ti = dt_ox_find(s, n->inputs[k]);
            int p = ti >= 0 ? s->t[ti].pub.producer : -1;
            if (p >= 0 && p != u && indeg[p] > 0)
                next = p;
        }
        const dt_ox_body *b = dt_ox_node_body(g, u);
        if (next < 0 && b && indeg[b->control] > 0)
            next = b->control;
        if (next < 0)
            break; /* cannot happen: an unordered node waits for an unordered one */
        u = next;
    }
    return u;
}

/* Kahn's algorithm over keys: 2*i + 1 runs node i (for a control node, its
 * exit: its own outputs from its bodies' outputs), 2*i is the entry of
 * control node i (its bodies' inputs from its own inputs).  A control node's
 * own inputs are read by its entry, the rest by its exit; its exit and the
 * nodes of its bodies (a nested control node's entry) wait for its entry. */
typedef struct {
    const dt_ox_graph *g;
    const dt_ox_shapes *s;
    int *indeg, *inent; /* what node i / the entry of control node i waits for */
    int *heap, nh;
} kahn;

static void ready(kahn *k, int *count, int key)
{
    if (--*count == 0)
        heap_push(k->heap, &k->nh, key);
}

/* Outputs [from, to) of node u are known: their readers wait for one less. */
static void release(kahn *k, int u, int from, int to)
{
    const dt_ox_node *n = &k->g->nodes[u];
    for (int o = from; o < to; o++) {
        int ti = dt_ox_find(k->s, n->outputs[o]);
        if (ti < 0 || k->s->t[ti].pub.producer != u)
            continue;
        const ox_tensor *t = &k->s->t[ti];
        for (int c = 0; c < t->ncons; c++) {
            if (t->cons_read[c] & OX_READ_ENTRY)
                ready(k, &k->inent[t->cons[c]], 2 * t->cons[c]);
            if (t->cons_read[c] & OX_READ_NODE)
                ready(k, &k->indeg[t->cons[c]], 2 * t->cons[c] + 1);
        }
    }
}

/* The entry of control node u ran: its exit and its bodies' nodes may run. */
static void entered(kahn *k, int u)
{
    const dt_ox_graph *g = k->g;
    const dt_ox_node *n = &g->nodes[u];
    release(k, u, n->nout_own, n->noutputs);
    ready(k, &k->indeg[u], 2 * u + 1);
    for (int b = 0; b < n->nbodies; b++) {
        const dt_ox_body *body = &g->bodies[n->bodies[b]];
        for (int j = body->first; body->taken && j < body->first + body->nnodes; j++)
            if (g->nodes[j].body == n->bodies[b] + 1) {
                if (g->nodes[j].nbodies)
                    ready(k, &k->inent[j], 2 * j);
                else
                    ready(k, &k->indeg[j], 2 * j + 1);
            }
    }
}

/* Consumers, and the keys above in topological order (ties by file order;
 * *norder of them). */
static int order_nodes(const dt_ox_graph *g, dt_ox_shapes *s, int *order, int *norder, dt_err *e)
{
    int rc = 0, no = 0, nkeys = g->nnodes;
    kahn k = {.g = g, .s = s};
    k.indeg = calloc((size_t)g->nnodes + 1, sizeof *k.indeg);
    k.inent = calloc((size_t)g->nnodes + 1, sizeof *k.inent);
    k.heap = calloc(2 * (size_t)g->nnodes + 1, sizeof *k.heap);
    if (!k.indeg || !k.inent || !k.heap) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < g->nnodes && !rc; i++) {
        const dt_ox_node *n = &g->nodes[i];
        int ctl = n->nbodies > 0, own = dt_ox_own_inputs(n);
        for (int j = 0; j < n->ninputs && !rc; j++) {
            if (!n->inputs[j][0])
                continue;
            int ti = dt_ox_find(s, n->inputs[j]);
            if (ti < 0) {
                rc = node_err(g, i, e, "input", n->inputs[j]);
                break;
            }
            ox_tensor *t = &s->t[ti];
            int entry = ctl && j < own;
            int fresh = add_consumer(t, i, entry ? OX_READ_ENTRY : OX_READ_NODE);
            if (fresh < 0)
                rc = dt_errf(e, DT_ENOMEM, "out of memory");
            else if (fresh && t->pub.producer >= 0)
                (entry ? k.inent : k.indeg)[i]++;
        }
        nkeys += ctl;
        k.indeg[i] += ctl; /* the exit after the entry */
        if (n->body > 0) /* after its body's entry */
            (ctl ? k.inent : k.indeg)[i]++;
    }
    for (int i = 0; i < g->nnodes && !rc; i++) {
        if (g->nodes[i].nbodies ? k.inent[i] == 0 : k.indeg[i] == 0)
            heap_push(k.heap, &k.nh, 2 * i + !g->nodes[i].nbodies);
    }
    while (k.nh > 0 && !rc) {
        int key = heap_pop(k.heap, &k.nh), u = key / 2;
        order[no++] = key;
        if (!(key & 1))
            entered(&k, u);
        else
            release(&k, u, 0, dt_ox_own_outputs(&g->nodes[u]));
    }
    if (!rc && no < nkeys) {
        memset(k.heap, 0, (size_t)g->nnodes * sizeof *k.heap);
        int u = cycle_node(g, s, k.indeg, k.heap);
        char label[320];
        dt_ox_node_label(g, u, label, sizeof label);
        rc = dt_errf(e, DT_EINVAL, "%s: node %s: the graph has a cycle through this node", src(g),
                     label);
    }
    *norder = no;
out:
    free(k.indeg);
    free(k.inent);
    free(k.heap);
    return rc;
}

/* ---- propagation ---------------------------------------------------------------- */

static const char no_rule_domain[] = "no shape rule for domain";

/* What a propagation runs with. */
typedef struct {
    const dt_ox_graph *g;
    dt_ox_shapes *s;
    sym_ctx *sc;
    dt_err *e;
    ox_varname *vn; /* the model variables */
    int nvn;
    const sym **vsym; /* each one's sym (constant when it has one value) */
    /* per body (g->bodies), set when its control node's entry ran: */
    const sym **rep;  /* its runs per model run, NULL: once */
    const sym **trip; /* its runs per run of its control node (Loop, Scan), NULL: unknown */
    char **once;      /* why it is counted once (owned), or NULL */
    unsigned char *upper; /* 1: trip is M, an upper bound (the condition may end it sooner) */
} prop;

/* The ops workload extraction tunes (onnx/workloads.c tries exactly these):
 * their dims must be known. */
static int is_tuned_op(const dt_ox_node *n)
{
    static const char *const ops[] = {"MatMul", "Gemm", "MatMulInteger"};
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(n->op_type, ops[k]) == 0)
            return 1;
    return 0;
}

/* The dims value_info declares for t, when every one is a constant or a
 * dim_param of a model variable: 1 and t's shape set; else 0. */
static int declared_shape(prop *p, ox_tensor *t)
{
    const dt_ox_value *vi = t->vi;
    if (!vi || vi->rank < 0 || vi->rank > DT_OX_MAX_RANK)
        return 0;
    const sym *dims[DT_OX_MAX_RANK];
    for (int a = 0; a < vi->rank; a++) {
        const dt_ox_dim *d = &vi->dims[a];
        dims[a] = NULL;
        if (d->param) {
            for (int k = 0; k < p->nvn && !dims[a]; k++)
                if (p->vn[k].param && strcmp(p->vn[k].param, d->param) == 0)
                    dims[a] = p->vsym[k];
        } else if (d->value >= 0 && d->value <= OX_DIM_MAX) {
            dims[a] = dt_ox_sym_const(p->sc, d->value);
        }
        if (!dims[a])
            return 0; /* unnamed, not a model variable, or out of range */
    }
    memcpy(t->dims, dims, (size_t)vi->rank * sizeof dims[0]);
    t->pub.rank = vi->rank;
    t->pub.elem_type = vi->elem_type;
    t->known = 1;
    return 1;
}

/* Node c not run by a rule (unk_in: the input of unknown shape, or -1 when
 * the op has none, norule saying why): its outputs from value_info, else
 * unknown. */
static int outputs_declared(prop *p, ox_node *c, int unk_in, const char *norule)
{
    dt_ox_shapes *s = p->s;
    int all = 1, all_const = 1, rc = 0;
    for (int k = 0; k < c->nin; k++)
        if (c->in[k] && !(c->in[k]->known && c->in[k]->pub.is_const))
            all_const = 0;
    for (int k = 0; k < c->nout; k++) {
        ox_tensor *t = c->out[k];
        if (!t)
            continue;
        if (!declared_shape(p, t)) {
            t->unknown = 1;
            all = 0;
            continue;
        }
        t->pub.is_const = all_const;
        if (dt_ox_sym_failed(p->sc))
            return dt_ox_sym_take_err(p->sc, p->e);
        if ((rc = publish(p->sc, t, c, p->e)))
            return rc;
    }
    s->how[c->idx] = all ? DT_OX_SHAPES_VALUE_INFO : DT_OX_SHAPES_UNKNOWN;
    s->unk_in[c->idx] = unk_in;
    s->norule[c->idx] = norule;
    return 0;
}

/* One step of the chain: node i's label, and for a node without a rule why
 * and which output value_info did not give. */
static void chain_step(prop *p, dt_strbuf *sb, int i)
{
    const dt_ox_graph *g = p->g;
    char label[320];
    dt_ox_node_label(g, i, label, sizeof label);
    const char *why = p->s->norule[i];
    if (!why) {
        dt_sb_append(sb, label);
        return;
    }
    size_t n = strlen(label);
    if (n && label[n - 1] == ')') /* "'x' (#3, LSTM)" -> "'x' (#3, LSTM: no shape rule ...)" */
        label[n - 1] = '\0';
    const char *out = "";
    for (int k = 0; k < g->nodes[i].noutputs && !out[0]; k++) {
        int ti = dt_ox_find(p->s, g->nodes[i].outputs[k]);
        if (ti >= 0 && p->s->t[ti].unknown)
            out = g->nodes[i].outputs[k];
    }
    if (why == no_rule_domain)
        dt_sb_appendf(sb, "%s: %s '%.100s', no value_info for '%.200s'%s", label, why,
                      g->nodes[i].domain, out, n ? ")" : "");
    else
        dt_sb_appendf(sb, "%s: %s, no value_info for '%.200s'%s", label, why, out, n ? ")" : "");
}

/* "input 'x' has unknown dims ...; they are unknown from: A -> B -> this
 * node" for tuned node c reading tensor ti of unknown shape. */
static int unknown_chain_fail(prop *p, ox_node *c, int k, int ti)
{
    enum { MAXSTEPS = 64, SHOWN_END = 6 };
    int steps[MAXSTEPS], n = 0, input = -1;
    for (int t = ti; n < MAXSTEPS;) {
        int pr = p->s->t[t].pub.producer;
        if (pr < 0) {
            input = t;
            break;
        }
        steps[n++] = pr;
        if (p->s->unk_in[pr] < 0)
            break;
        t = p->s->unk_in[pr];
    }
    dt_strbuf sb;
    dt_sb_init(&sb);
    dt_sb_append(&sb, "");
    if (input >= 0)
        dt_sb_appendf(&sb, "graph input '%.200s' (declared without a shape) -> ",
                      p->s->t[input].pub.name);
    /* origin first; a long chain keeps its origin and its last steps */
    for (int j = n - 1; j >= 0; j--) {
        if (n > SHOWN_END + 1 && j < n - 1 && j >= SHOWN_END) {
            if (j == n - 2)
                dt_sb_appendf(&sb, "... (%d more) -> ", n - 1 - SHOWN_END);
            continue;
        }
        chain_step(p, &sb, steps[j]);
        dt_sb_append(&sb, " -> ");
    }
    dt_sb_append(&sb, "this node");
    int rc = sb.oom ? dt_errf(p->e, DT_ENOMEM, "out of memory")
                    : dt_ox_fail(c,
                                 "input '%.200s' has unknown dims, and this op is what dtune tunes "
                                 "(its dims must be known); they are unknown from: %s",
                                 c->n->inputs[k], sb.data);
    dt_sb_free(&sb);
    return rc;
}

/* Why (domain, op) has no rule, for the chain: static text (the domain is
 * added when the chain is written). */
static const char *no_rule_why(const char *domain, const char *why)
{
    if (!why)
        return domain[0] ? no_rule_domain : "no shape rule";
    if (strcmp(why, "this op type is not supported") == 0)
        return "no shape rule";
    return why;
}

/* Node c's rule refused it (a Range with a float limit, a Reshape or Slice
 * whose bounds cannot be decided over the domains, dims that disagree): its
 * outputs are made unknown — value_info's shapes where it has them — and the
 * reason is kept for the chain a tuned op reading them would report, so a
 * node that feeds nothing tuned never refuses the model. */
static int rule_failed(prop *p, ox_node *c)
{
    static const char sep[] = "cannot propagate shapes: ";
    char *owned = strdup(p->e->msg);
    if (!owned)
        return dt_errf(p->e, DT_ENOMEM, "out of memory");
    free(p->s->failed[c->idx]);
    p->s->failed[c->idx] = owned;
    const char *why = strstr(owned, sep);
    why = why ? why + sizeof sep - 1 : owned;
    dt_err_clear(p->e);
    if (dt_ox_sym_failed(p->sc)) {
        dt_err se;
        if (dt_ox_sym_take_err(p->sc, &se) == DT_ENOMEM)
            return dt_errf(p->e, DT_ENOMEM, "out of memory");
    }
    for (int k = 0; k < c->nout; k++) { /* what the rule set before it failed */
        ox_tensor *t = c->out[k];
        if (!t)
            continue;
        t->known = 0;
        t->nv = -1;
        free(t->vals);
        t->vals = NULL;
        c->const_set[k] = 0;
    }
    return outputs_declared(p, c, -1, why);
}

/* ---- control nodes ------------------------------------------------------------ */

/* Control node i entered: each taken body's runs per model run (its
 * control node's times its own trip count), and why one is counted once. */
static int set_repeats(prop *p, const ox_node *c, const dt_ox_control_out *o)
{
    const dt_ox_node *n = c->n;
    const sym *outer = n->body > 0 ? p->rep[n->body - 1] : NULL;
    int loop = strcmp(n->op_type, "If") != 0;
    for (int b = 0; b < n->nbodies; b++) {
        int bi = n->bodies[b];
        const sym *r = outer;
        int64_t lo, hi, v;
        if (loop && o->trip) {
            p->trip[bi] = o->trip; /* the scan outputs' length, whatever the product */
            r = outer ? dt_ox_sym_mul(p->sc, outer, o->trip) : o->trip;
            if (!r || !dt_ox_sym_bounds(r, &lo, &hi) || hi > DT_MODEL_COUNT_MAX) {
                dt_err se;
                if (dt_ox_sym_failed(p->sc) && dt_ox_sym_take_err(p->sc, &se) == DT_ENOMEM)
                    return dt_errf(p->e, DT_ENOMEM, "out of memory");
                r = outer;
                free(p->once[bi]);
                if (!(p->once[bi] = strdup("with its enclosing loops it runs more than 10^9 times")))
                    return dt_errf(p->e, DT_ENOMEM, "out of memory");
            }
        } else if (loop) {
            free(p->once[bi]);
            if (!(p->once[bi] = strdup(o->once[0] ? o->once : "its trip count is not known")))
                return dt_errf(p->e, DT_ENOMEM, "out of memory");
        }
        p->rep[bi] = r;
        p->upper[bi] = (unsigned char)o->upper_bound;
        dt_expr_free(p->s->repeat[bi]);
        p->s->repeat[bi] = NULL;
        if (r && !(dt_ox_sym_is_const(r, &v) && v == 1) &&
            !(p->s->repeat[bi] = dt_ox_sym_to_expr(p->sc, r)))
            return dt_ox_sym_take_err(p->sc, p->e);
    }
    return 0;
}

static dt_ox_shapes_how worse(dt_ox_shapes_how a, dt_ox_shapes_how b) { return a > b ? a : b; }

/* One step of control node i (onnx/shape_ops.h): its entry (its bodies'
 * inputs, and their repeats) or its exit (its own outputs, and its note).
 * What the rule leaves unset takes value_info's shape, else is unknown; a
 * rule that fails is treated as any rule that fails (rule_failed). */
static int run_control(prop *p, int i, int entry)
{
    const dt_ox_graph *g = p->g;
    dt_ox_shapes *s = p->s;
    const dt_ox_node *n = &g->nodes[i];
    ox_node c = {.g = g, .idx = i, .n = n, .s = s, .sc = p->sc, .e = p->e};
    c.nin = entry ? n->nin_own : n->ninputs;
    c.nout = entry ? n->noutputs : n->nout_own;
    if (c.nin > DT_OX_MAX_NODE_IO || c.nout > DT_OX_MAX_NODE_IO || n->nbodies > 2)
        return dt_ox_fail(&c, "more than %d inputs or outputs", DT_OX_MAX_NODE_IO);
    for (int k = 0; k < c.nin; k++) {
        int ti = dt_ox_find(s, n->inputs[k]);
        c.in[k] = ti >= 0 ? &s->t[ti] : NULL;
    }
    for (int k = entry ? n->nout_own : 0; k < c.nout; k++) {
        int ti = dt_ox_find(s, n->outputs[k]);
        c.out[k] = ti >= 0 && s->t[ti].pub.producer == i ? &s->t[ti] : NULL;
    }
    dt_ox_control_out o = {.unk_in = -1, .trip = entry ? NULL : p->trip[n->bodies[0]]};
    dt_ox_shapes_how before = (dt_ox_shapes_how)s->how[i];
    int rc = entry ? dt_ox_control_enter(&c, &o) : dt_ox_control_exit(&c, &o);
    if (rc == DT_EINVAL) {
        if ((rc = rule_failed(p, &c)))
            return rc;
        snprintf(o.once, sizeof o.once, "its shapes could not be propagated");
        o.trip = NULL;
        s->how[i] = (unsigned char)worse(before, (dt_ox_shapes_how)s->how[i]);
    } else if (rc) {
        return rc;
    } else {
        dt_ox_shapes_how how = DT_OX_SHAPES_RULE;
        if (dt_ox_sym_failed(p->sc)) {
            dt_err se = {0};
            int code = dt_ox_sym_take_err(p->sc, &se);
            if (code == DT_ENOMEM)
                return dt_errf(p->e, DT_ENOMEM, "out of memory");
            if (code != DT_EOVERFLOW)
                return dt_ox_fail(&c, "%s", se.msg);
        }
        for (int k = 0; k < c.nout; k++) {
            ox_tensor *t = c.out[k];
            if (!t)
                continue;
            if (!t->known && declared_shape(p, t))
                how = worse(how, DT_OX_SHAPES_VALUE_INFO);
            if (!t->known) {
                t->unknown = 1;
                how = DT_OX_SHAPES_UNKNOWN;
                continue;
            }
            if (!c.const_set[k])
                t->pub.is_const = 0;
            if ((rc = publish(p->sc, t, &c, p->e)))
                return rc;
        }
        if (how > before) { /* the reason a tuned op reading an unknown output gives */
            s->unk_in[i] = o.unk_in;
            s->norule[i] = o.unk_in >= 0 ? NULL : o.why ? o.why : "its shape rule left it unset";
        }
        s->how[i] = (unsigned char)worse(before, how);
    }
    if (entry)
        return set_repeats(p, &c, &o);
    /* an If whose condition the shapes decide: the other branch never runs */
    const int runs = dt_ox_if_decided(&c);
    if (runs >= 0)
        s->dead[n->bodies[1 - runs]] = 1;
    const dt_expr *reps[2] = {NULL, NULL};
    const char *once[2] = {NULL, NULL};
    for (int b = 0; b < n->nbodies; b++) {
        reps[b] = s->repeat[n->bodies[b]];
        once[b] = p->once[n->bodies[b]];
    }
    free(s->note[i]);
    s->note[i] = dt_ox_control_note(&c, reps, once, p->upper[n->bodies[0]], o.varying,
                                    how_note((dt_ox_shapes_how)s->how[i]));
    return s->note[i] ? 0 : dt_errf(p->e, DT_ENOMEM, "out of memory");
}

static int run_node(prop *p, int i)
{
    const dt_ox_graph *g = p->g;
    dt_ox_shapes *s = p->s;
    sym_ctx *sc = p->sc;
    dt_err *e = p->e;
    const dt_ox_node *n = &g->nodes[i];
    if (n->nbodies)
        return run_control(p, i, 0);
    ox_node c = {.g = g, .idx = i, .n = n, .s = s, .sc = sc, .e = e};
    if (n->ninputs > DT_OX_MAX_IO || n->noutputs > DT_OX_MAX_IO)
        return dt_ox_fail(&c, "more than %d inputs or outputs", DT_OX_MAX_IO);
    c.nin = n->ninputs;
    c.nout = n->noutputs;
    int unk_in = -1, unk_k = -1;
    for (int k = 0; k < c.nin; k++) {
        int ti = dt_ox_find(s, n->inputs[k]);
        c.in[k] = ti >= 0 ? &s->t[ti] : NULL;
        if (c.in[k] && !c.in[k]->known && unk_in < 0) {
            unk_in = ti;
            unk_k = k;
        }
    }
    for (int k = 0; k < c.nout; k++) {
        int ti = dt_ox_find(s, n->outputs[k]);
        c.out[k] = ti >= 0 && s->t[ti].pub.producer == i ? &s->t[ti] : NULL;
    }
    if (unk_in >= 0) {
        if (is_tuned_op(n))
            return unknown_chain_fail(p, &c, unk_k, unk_in);
        return outputs_declared(p, &c, unk_in, NULL);
    }
    const char *why = NULL;
    dt_ox_rule rule = dt_ox_rule_find(n->domain, n->op_type, &why);
    if (!rule)
        return outputs_declared(p, &c, -1, no_rule_why(n->domain, why));
    int rc = rule(&c);
    if (rc == DT_EINVAL && !is_tuned_op(n))
        return rule_failed(p, &c);
    if (rc)
        return rc;
    if (dt_ox_sym_failed(sc)) { /* left by a value computation: an overflow leaves it unknown */
        dt_err se = {0};
        int code = dt_ox_sym_take_err(sc, &se);
        if (code == DT_ENOMEM)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        if (code != DT_EOVERFLOW)
            return dt_ox_fail(&c, "%s", se.msg);
    }
    int all_const = 0;
    for (int k = 0; k < c.nin; k++)
        if (c.in[k]) {
            all_const = c.in[k]->pub.is_const;
            if (!all_const)
                break;
        }
    for (int k = 0; k < c.nout; k++) {
        ox_tensor *t = c.out[k];
        if (!t)
            continue;
        if (!t->known)
            return dt_ox_fail(&c, "output #%d ('%s') is not supported", k, t->pub.name);
        if (!c.const_set[k])
            t->pub.is_const = all_const;
        if ((rc = publish(sc, t, &c, e)))
            return rc;
    }
    return 0;
}

static int count_tensors(const dt_ox_graph *g, int *count)
{
    int64_t n = (int64_t)g->ninputs + g->ninits;
    for (int i = 0; i < g->nnodes; i++)
        n += g->nodes[i].noutputs;
    if (n > INT32_MAX / 4)
        return DT_EINVAL;
    *count = (int)n;
    return 0;
}

/* Each tensor's declared type: value_info first, else as a graph output. */
static void add_declared(const dt_ox_graph *g, dt_ox_shapes *s)
{
    for (int i = 0; i < g->nvalue_infos; i++) {
        int ti = dt_ox_find(s, g->value_infos[i].name);
        if (ti >= 0 && !s->t[ti].vi)
            s->t[ti].vi = &g->value_infos[i];
    }
    for (int i = 0; i < g->noutputs; i++) {
        int ti = dt_ox_find(s, g->outputs[i].name);
        if (ti >= 0 && !s->t[ti].vi)
            s->t[ti].vi = &g->outputs[i];
    }
}

static int setup(prop *p, const dt_ox_vars *vars)
{
    const dt_ox_graph *g = p->g;
    dt_ox_shapes *s = p->s;
    sym_ctx *sc = p->sc;
    dt_err *e = p->e;
    int rc = dt_ox_var_list(g, &p->vn, &p->nvn, e);
    if (rc || (rc = dt_ox_check_vars(g, p->vn, p->nvn, vars, e)))
        return rc;
    if (!(p->vsym = calloc((size_t)p->nvn + 1, sizeof *p->vsym)))
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int k = 0; k < p->nvn; k++)
        for (int j = 0; j < vars->n; j++)
            if (strcmp(vars->vars[j].name, p->vn[k].name) == 0)
                p->vsym[k] = dt_ox_sym_var(sc, p->vn[k].name, &vars->vars[j].dom);
    if (dt_ox_sym_failed(sc))
        return dt_ox_sym_take_err(sc, e);
    if ((rc = add_inputs(g, s, sc, p->vn, p->nvn, p->vsym, e)) || (rc = add_inits(g, s, sc, e)))
        return rc;
    for (int i = 0; i < g->nnodes; i++) {
        const dt_ox_node *n = &g->nodes[i];
        for (int k = 0; k < n->noutputs; k++)
            if (n->outputs[k][0] && add_tensor(s, n->outputs[k], i) < 0)
                return node_err(g, i, e, "output", n->outputs[k]);
    }
    for (int i = 0; i < g->noutputs; i++) {
        int ti = dt_ox_find(s, g->outputs[i].name);
        if (ti >= 0)
            s->t[ti].is_output = 1;
    }
    add_declared(g, s);
    return 0;
}

int dt_ox_propagate(const dt_ox_graph *g, const dt_ox_vars *vars, dt_ox_shapes **out, dt_err *e)
{
    *out = NULL;
    int count, rc;
    if (count_tensors(g, &count))
        return dt_errf(e, DT_EINVAL, "%s: too many tensors", src(g));
    dt_ox_shapes *s = calloc(1, sizeof *s);
    sym_ctx *sc = dt_ox_sym_ctx_new();
    int *order = malloc((2 * (size_t)g->nnodes + 1) * sizeof *order), norder = 0;
    size_t cap = 16, nn = (size_t)g->nnodes + 1;
    while (cap < 2 * (size_t)count + 2)
        cap *= 2;
    if (s) {
        s->t = calloc((size_t)count + 1, sizeof *s->t);
        s->tab = malloc(cap * sizeof *s->tab);
        s->tabcap = cap;
        s->nnodes = g->nnodes;
        s->how = calloc(nn, sizeof *s->how);
        s->unk_in = calloc(nn, sizeof *s->unk_in);
        s->norule = calloc(nn, sizeof *s->norule);
        s->failed = calloc(nn, sizeof *s->failed);
        s->note = calloc(nn, sizeof *s->note);
        s->g = g;
        s->repeat = calloc((size_t)g->nbodies + 1, sizeof *s->repeat);
        s->dead = calloc((size_t)g->nbodies + 1, 1);
    }
    size_t nb = (size_t)g->nbodies + 1;
    prop p = {.g = g, .s = s, .sc = sc, .e = e, .rep = calloc(nb, sizeof *p.rep),
              .trip = calloc(nb, sizeof *p.trip), .once = calloc(nb, sizeof *p.once),
              .upper = calloc(nb, 1)};
    if (!s || !sc || !order || !s->t || !s->tab || !s->how || !s->unk_in || !s->norule ||
        !s->failed || !s->note || !s->repeat || !s->dead || !p.rep || !p.trip || !p.once || !p.upper) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    memset(s->tab, 0xff, cap * sizeof *s->tab); /* -1: empty */
    if ((rc = setup(&p, vars)) || (rc = order_nodes(g, s, order, &norder, e)))
        goto out;
    for (int i = 0; i < s->n && !rc; i++)
        if (s->t[i].known && s->t[i].pub.producer < 0)
            rc = publish(sc, &s->t[i], NULL, e);
    for (int k = 0; k < norder && !rc; k++) /* entries are even keys, nodes odd */
        rc = order[k] & 1 ? run_node(&p, order[k] / 2) : run_control(&p, order[k] / 2, 1);
out:
    if (s && s->t)
        for (int i = 0; i < s->n; i++) { /* the syms die with sc */
            free(s->t[i].vals);
            s->t[i].vals = NULL;
            memset(s->t[i].dims, 0, sizeof s->t[i].dims);
        }
    free(p.vsym);
    free(p.vn);
    free(p.rep);
    free(p.trip);
    for (size_t b = 0; p.once && b < nb; b++)
        free(p.once[b]);
    free(p.once);
    free(p.upper);
    dt_ox_sym_ctx_free(sc);
    free(order);
    if (rc) {
        dt_ox_shapes_free(s);
        return rc;
    }
    *out = s;
    return 0;
}
