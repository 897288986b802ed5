/* The dispatcher of an exported file: NAME_select, nested ifs that give
 * every shape the kernel dt_dispatch_find gives it.
 *
 * dt_dispatch_find maps each variable to the index of its nearest domain
 * value (ties to the smaller), then the index vector to the box holding it,
 * or, in no box, to the box fewest domain steps away (ties: the first box
 * in table order).  So the kernel depends on the index vector only, and
 * every test `index of x <= C` is the test `x <= T` on the variable itself,
 * T = v_C + (v_{C+1} - v_C) / 2 rounded down (the largest value whose
 * nearest index is <= C): a value below a domain goes with its first value,
 * one beyond it with its last.
 *
 * One variable: over the indices 0..n-1 the table is a list of segments,
 * each ending at an index and naming a kernel (a box, then half of the gap
 * to the next box, ties to the lower one); adjacent segments of one kernel
 * merge.  The ifs are a balanced tree over the segment ends.
 *
 * Several variables: every index vector of the grid is labelled with the
 * kernel dt_dispatch_find gives it (a box's shapes with its kernel, the
 * shapes in no box by dt_dispatch_find itself), then the grid is cut
 * recursively into regions of one label, a decision tree: a region (an
 * interval of indices per variable) of one label is a `return k;`; any
 * other is cut in two at `index of variable v <= C` where the labels change
 * somewhere across C.  The cut chosen separates the fewest pairs of
 * neighbouring shapes of one label (0 for a cut along box boundaries that
 * splits no box), then the most evenly (the sizes of the two halves), then
 * the first variable, then the lowest C: deterministic, and each leaf of
 * the tree is exact for every index vector it covers. */
#include "export/export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t end;  /* last shape index of the segment */
    int kernel;
} segment;

/* The segments of a one-variable table; *n of them, malloc'ed, or NULL when
 * out of memory. */
static segment *segments(const dt_export_plan *p, int *n)
{
    const dt_dispatch *d = p->d;
    segment *s = malloc((size_t)(2 * d->n + 1) * sizeof *s);
    if (!s)
        return NULL;
    int ns = 0;
    int64_t last = dt_workload_nshapes(d->w) - 1;
    for (int r = 0; r < d->n; r++) {
        /* box r serves up to its end, then half the gap to box r+1 */
        int64_t hi = d->r[r].box.hi[0];
        int64_t end = r + 1 < d->n ? hi + (d->r[r + 1].box.lo[0] - hi) / 2 : last;
        int k = p->range_kernel[r];
        if (ns > 0 && s[ns - 1].kernel == k)
            s[ns - 1].end = end;
        else
            s[ns++] = (segment){end, k};
    }
    *n = ns;
    return s;
}

static void indent(dt_strbuf *sb, int depth)
{
    for (int i = 0; i < depth; i++)
        dt_sb_append(sb, "    ");
}

/* The largest value of the variable whose nearest domain index is <= idx. */
static int64_t cut_value(const dt_domain *dom, int64_t idx)
{
    int64_t a = dom->values[idx], b = dom->values[idx + 1];
    return a + (b - a) / 2;
}

static void emit_tree(dt_strbuf *sb, const dt_export_plan *p, const segment *s, int lo, int hi,
                      int depth)
{
    if (lo == hi) {
        indent(sb, depth);
        dt_sb_appendf(sb, "return %d;\n", s[lo].kernel);
        return;
    }
    int mid = lo + (hi - lo) / 2;
    indent(sb, depth);
    dt_sb_appendf(sb, "if (%s <= %lld) {\n", p->var[0],
                  (long long)cut_value(&p->w->vars[0].dom, s[mid].end));
    emit_tree(sb, p, s, lo, mid, depth + 1);
    indent(sb, depth);
    dt_sb_append(sb, "} else {\n");
    emit_tree(sb, p, s, mid + 1, hi, depth + 1);
    indent(sb, depth);
    dt_sb_append(sb, "}\n");
}

/* ---- several variables: the decision tree over the grid ------------------ */

typedef struct {
    int var;          /* the variable tested; -1 for a leaf */
    int64_t cut;      /* the left child holds the indices <= cut */
    int kernel;       /* a leaf's kernel */
    int left, right;  /* children (node numbers) */
} node;

typedef struct {
    const dt_workload *w;
    int nv;
    int64_t stride[DT_MAX_VARS]; /* flat shape number step of each variable */
    int *label;                  /* the kernel of every flat shape */
    int64_t *same[DT_MAX_VARS];  /* per cut C of variable v: neighbour pairs (C, C+1) */
    int64_t *diff[DT_MAX_VARS];  /* of one label and of two */
    node *nodes;
    int nn, cap;
    int tested[DT_MAX_VARS];     /* whether the tree tests variable v */
    int oom;
} grid;

/* The kernel of every shape of the grid: dt_dispatch_find's, computed for
 * the shapes of each box from the box (the boxes are disjoint, and a shape
 * of a box is in no other), for the others by dt_dispatch_find. */
static int label_grid(grid *g, const dt_export_plan *p)
{
    const dt_dispatch *d = p->d;
    const dt_workload *w = g->w;
    int64_t n = dt_workload_nshapes(w);
    g->label = malloc((size_t)n * sizeof *g->label);
    if (!g->label)
        return -1;
    for (int64_t s = 0; s < n; s++)
        g->label[s] = -1;
    for (int r = 0; r < d->n; r++) {
        int64_t m = dt_box_nshapes(w, &d->r[r].box);
        for (int64_t j = 0; j < m; j++)
            g->label[dt_box_shape(w, &d->r[r].box, j)] = p->range_kernel[r];
    }
    for (int64_t s = 0; s < n; s++) {
        if (g->label[s] >= 0)
            continue;
        int64_t idx[DT_MAX_VARS], vals[DT_MAX_VARS];
        dt_box_split(w, s, idx);
        for (int v = 0; v < g->nv; v++)
            vals[v] = w->vars[v].dom.values[idx[v]];
        dt_dispatch_hit hit;
        /* a table with no box at all (never exported) labels all with 0 */
        g->label[s] = dt_dispatch_find(d, vals, &hit) ? 0 : p->range_kernel[hit.range - d->r];
    }
    return 0;
}

static int new_node(grid *g)
{
    if (g->nn == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            g->oom = 1;
            return -1;
        }
        g->nodes = nodes;
        g->cap = cap;
    }
    g->nodes[g->nn] = (node){.var = -1, .left = -1, .right = -1};
    return g->nn++;
}

/* The node of the region lo[v]..hi[v] (domain indices of every variable),
 * or -1 when out of memory. */
static int build(grid *g, const int64_t *lo, const int64_t *hi)
{
    const int nv = g->nv;
    int64_t size = 1;
    for (int v = 0; v < nv; v++) {
        size *= hi[v] - lo[v] + 1;
        for (int64_t c = lo[v]; c < hi[v]; c++)
            g->same[v][c] = g->diff[v][c] = 0;
    }
    /* every shape of the region against its next neighbour along each variable */
    int64_t idx[DT_MAX_VARS], changes = 0;
    memcpy(idx, lo, (size_t)nv * sizeof *idx);
    int first = -1;
    for (;;) {
        int64_t s = 0;
        for (int v = 0; v < nv; v++)
            s += idx[v] * g->stride[v];
        int k = g->label[s];
        if (first < 0)
            first = k;
        for (int v = 0; v < nv; v++) {
            if (idx[v] == hi[v])
                continue;
            if (g->label[s + g->stride[v]] == k) {
                g->same[v][idx[v]]++;
            } else {
                g->diff[v][idx[v]]++;
                changes++;
            }
        }
        int v = nv - 1;
        while (v >= 0 && ++idx[v] > hi[v]) {
            idx[v] = lo[v];
            v--;
        }
        if (v < 0)
            break;
    }
    int self = new_node(g);
    if (self < 0)
        return -1;
    if (changes == 0) { /* a connected region without a change: one label */
        g->nodes[self].kernel = first;
        return self;
    }
    /* the cut: fewest same-label pairs separated, then the most even halves,
     * then the first variable and the lowest index */
    int bv = -1;
    int64_t bc = 0, bsame = 0, bimb = 0;
    for (int v = 0; v < nv; v++) {
        int64_t ext = hi[v] - lo[v] + 1, cross = size / ext;
        for (int64_t c = lo[v]; c < hi[v]; c++) {
            if (g->diff[v][c] == 0)
                continue;
            int64_t l = c - lo[v] + 1, r = hi[v] - c;
            int64_t imb = (l > r ? l - r : r - l) * cross;
            int64_t sm = g->same[v][c];
            if (bv < 0 || sm < bsame || (sm == bsame && imb < bimb)) {
                bv = v;
                bc = c;
                bsame = sm;
                bimb = imb;
            }
        }
    }
    g->nodes[self].var = bv;
    g->nodes[self].cut = bc;
    g->tested[bv] = 1;
    int64_t mid[DT_MAX_VARS];
    memcpy(mid, hi, (size_t)nv * sizeof *mid);
    mid[bv] = bc;
    int left = build(g, lo, mid);
    if (left < 0)
        return -1;
    memcpy(mid, lo, (size_t)nv * sizeof *mid);
    mid[bv] = bc + 1;
    int right = build(g, mid, hi);
    if (right < 0)
        return -1;
    g->nodes[self].left = left;
    g->nodes[self].right = right;
    return self;
}

static void emit_node(dt_strbuf *sb, const dt_export_plan *p, const grid *g, int n, int depth)
{
    const node *x = &g->nodes[n];
    indent(sb, depth);
    if (x->var < 0) {
        dt_sb_appendf(sb, "return %d;\n", x->kernel);
        return;
    }
    dt_sb_appendf(sb, "if (%s <= %lld) {\n", p->var[x->var],
                  (long long)cut_value(&p->w->vars[x->var].dom, x->cut));
    emit_node(sb, p, g, x->left, depth + 1);
    indent(sb, depth);
    dt_sb_append(sb, "} else {\n");
    emit_node(sb, p, g, x->right, depth + 1);
    indent(sb, depth);
    dt_sb_append(sb, "}\n");
}

static void grid_free(grid *g)
{
    free(g->label);
    for (int v = 0; v < g->nv; v++) {
        free(g->same[v]);
        free(g->diff[v]);
    }
    free(g->nodes);
}

/* The body of NAME_select for several variables; -1 when out of memory. */
static int emit_grid(dt_strbuf *sb, const dt_export_plan *p)
{
    const dt_workload *w = p->w;
    grid g;
    memset(&g, 0, sizeof g);
    g.w = w;
    g.nv = w->nvars;
    int rc = -1;
    for (int v = g.nv - 1; v >= 0; v--) {
        g.stride[v] = v == g.nv - 1 ? 1 : g.stride[v + 1] * w->vars[v + 1].dom.n;
        g.same[v] = malloc((size_t)w->vars[v].dom.n * sizeof *g.same[v]);
        g.diff[v] = malloc((size_t)w->vars[v].dom.n * sizeof *g.diff[v]);
        if (!g.same[v] || !g.diff[v])
            goto done;
    }
    if (label_grid(&g, p))
        goto done;
    int64_t lo[DT_MAX_VARS], hi[DT_MAX_VARS];
    for (int v = 0; v < g.nv; v++) {
        lo[v] = 0;
        hi[v] = w->vars[v].dom.n - 1;
    }
    int root = build(&g, lo, hi);
    if (root < 0)
        goto done;
    /* a variable no test looks at (every one when a single kernel serves
     * every shape) */
    for (int v = 0; v < g.nv; v++)
        if (!g.tested[v])
            dt_sb_appendf(sb, "    (void)%s;\n", p->var[v]);
    emit_node(sb, p, &g, root, 1);
    rc = 0;
done:
    grid_free(&g);
    return rc;
}

void dt_export_emit_select(dt_strbuf *sb, const dt_export_plan *p)
{
    const dt_workload *w = p->w;
    dt_sb_appendf(sb, "/* The dispatch table of %s at %d thread%s: the kernel index for a shape.\n",
                  p->d->key, p->d->threads, p->d->threads == 1 ? "" : "s");
    for (int r = 0; r < p->d->n; r++)
        dt_sb_appendf(sb, " *   %s..%s -> %s_k%d\n", p->d->r[r].shape_lo, p->d->r[r].shape_hi,
                      p->name, p->range_kernel[r]);
    if (w->nvars <= 1)
        dt_sb_append(sb, " * A shape outside the ranges (before, between, beyond them) goes to the\n"
                         " * range of the nearest shape of the tuned set: extrapolation. */\n");
    else
        dt_sb_append(sb, " * Each line is a box: the shapes with every variable between its values\n"
                         " * in the two corners.  A shape outside the boxes goes to the box of the\n"
                         " * nearest shape of the tuned set (each variable to its nearest value,\n"
                         " * ties to the smaller), or when that shape is in no box, to the box fewest\n"
                         " * domain steps away (ties: the one listed first): extrapolation. */\n");
    dt_sb_appendf(sb, "static inline int %s_select(", p->name);
    for (int v = 0; v < w->nvars; v++)
        dt_sb_appendf(sb, "%sint64_t %s", v ? ", " : "", p->var[v]);
    dt_sb_appendf(sb, "%s)\n{\n", w->nvars ? "" : "void");
    if (w->nvars > 1) {
        if (emit_grid(sb, p))
            sb->oom = 1;
        else
            dt_sb_append(sb, "}\n");
        return;
    }
    int ns = 0;
    segment *s = segments(p, &ns);
    if (!s) {
        sb->oom = 1;
        return;
    }
    if (ns == 1) {
        /* one kernel for every shape (a kernel budget of 1, or one winner):
         * the shape is not looked at */
        for (int v = 0; v < w->nvars; v++)
            dt_sb_appendf(sb, "    (void)%s;\n", p->var[v]);
    }
    emit_tree(sb, p, s, 0, ns - 1, 1);
    dt_sb_append(sb, "}\n");
    free(s);
}
