/* The dispatcher of an exported file: NAME_select, nested ifs that give
 * every shape the kernel dt_dispatch_find gives it.
 *
 * dt_dispatch_find maps a shape to the index of the nearest shape of the set
 * (each variable to its nearest domain value, ties to the smaller; mixed
 * radix, last variable fastest), then to the range holding that index, or
 * in a gap or beyond the ends to the nearer range (ties to the lower one).
 * Over the indices 0..nshapes-1 that is a list of segments, each ending at
 * an index and naming a kernel; adjacent segments of one kernel merge.  The
 * ifs are a balanced tree over the segment ends.  With one variable the
 * tests are on the variable itself (index <= T exactly when x <= the
 * midpoint of values T and T+1, rounded down); with several, the index is
 * computed first. */
#include "export/export_internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int64_t end;  /* last shape index of the segment */
    int kernel;
} segment;

/* The segments of the table; *n of them, malloc'ed, or NULL when out of memory. */
static segment *segments(const dt_export_plan *p, int *n)
{
    const dt_dispatch *d = p->d;
    segment *s = malloc((size_t)(2 * d->n + 1) * sizeof *s);
    if (!s)
        return NULL;
    int ns = 0;
    int64_t last = dt_workload_nshapes(d->w) - 1;
    for (int r = 0; r < d->n; r++) {
        /* range r serves up to its end, then half the gap to range r+1 */
        int64_t end = r + 1 < d->n ? d->r[r].hi + (d->r[r + 1].lo - d->r[r].hi) / 2 : last;
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

/* The largest value of the single variable whose nearest shape index is <= idx. */
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
    if (p->w->nvars == 1)
        dt_sb_appendf(sb, "if (%s <= %lld) {\n", p->var[0],
                      (long long)cut_value(&p->w->vars[0].dom, s[mid].end));
    else
        dt_sb_appendf(sb, "if (dt_idx <= %lld) {\n", (long long)s[mid].end);
    emit_tree(sb, p, s, lo, mid, depth + 1);
    indent(sb, depth);
    dt_sb_append(sb, "} else {\n");
    emit_tree(sb, p, s, mid + 1, hi, depth + 1);
    indent(sb, depth);
    dt_sb_append(sb, "}\n");
}

/* Whether the domain is lo, lo+step, ..., and the step. */
static int progression(const dt_domain *d, int64_t *step)
{
    *step = d->n > 1 ? d->values[1] - d->values[0] : 1;
    for (int i = 1; i < d->n; i++)
        if (d->values[i] - d->values[i - 1] != *step)
            return 0;
    return 1;
}

/* int64_t dt_i<v>: the index of the domain value nearest to variable v. */
static void emit_nearest(dt_strbuf *sb, const dt_export_plan *p, int v)
{
    const dt_domain *d = &p->w->vars[v].dom;
    const char *x = p->var[v];
    long long lo = (long long)d->values[0], hi = (long long)d->values[d->n - 1];
    int64_t step;
    if (progression(d, &step)) {
        dt_sb_appendf(sb, "    const int64_t dt_i%d = %s <= %lld ? 0 : %s >= %lld ? %d : "
                          "(%s - %lld) / %lld + (2 * ((%s - %lld) %% %lld) > %lld);\n",
                      v, x, lo, x, hi, d->n - 1, x, lo, (long long)step, x, lo,
                      (long long)step, (long long)step);
        return;
    }
    dt_sb_appendf(sb, "    static const int64_t dt_val%d[%d] = {", v, d->n);
    for (int i = 0; i < d->n; i++)
        dt_sb_appendf(sb, "%s%lld", i ? ", " : "", (long long)d->values[i]);
    dt_sb_appendf(sb, "};\n    int64_t dt_i%d = 0;\n", v);
    dt_sb_appendf(sb, "    if (%s >= %lld) {\n        dt_i%d = %d;\n    } else if (%s > %lld) {\n",
                  x, hi, v, d->n - 1, x, lo);
    dt_sb_appendf(sb, "        int64_t l = 0, h = %d; /* dt_val%d[l] <= %s < dt_val%d[h] */\n"
                      "        while (h - l > 1) {\n"
                      "            int64_t m = l + (h - l) / 2;\n"
                      "            if (dt_val%d[m] <= %s)\n                l = m;\n"
                      "            else\n                h = m;\n        }\n"
                      "        dt_i%d = %s - dt_val%d[l] <= dt_val%d[h] - %s ? l : h;\n    }\n",
                  d->n - 1, v, x, v, v, x, v, x, v, v, x);
}

void dt_export_emit_select(dt_strbuf *sb, const dt_export_plan *p)
{
    const dt_workload *w = p->w;
    dt_sb_appendf(sb, "/* The dispatch table of %s at %d thread%s: the kernel index for a shape.\n",
                  p->d->key, p->d->threads, p->d->threads == 1 ? "" : "s");
    for (int r = 0; r < p->d->n; r++)
        dt_sb_appendf(sb, " *   %s..%s -> %s_k%d\n", p->d->r[r].shape_lo, p->d->r[r].shape_hi,
                      p->name, p->range_kernel[r]);
    dt_sb_append(sb, " * A shape outside the ranges (before, between, beyond them) goes to the\n"
                     " * range of the nearest shape of the tuned set: extrapolation. */\n");
    dt_sb_appendf(sb, "static inline int %s_select(", p->name);
    for (int v = 0; v < w->nvars; v++)
        dt_sb_appendf(sb, "%sint64_t %s", v ? ", " : "", p->var[v]);
    dt_sb_appendf(sb, "%s)\n{\n", w->nvars ? "" : "void");
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
    } else if (w->nvars > 1) {
        for (int v = 0; v < w->nvars; v++)
            emit_nearest(sb, p, v);
        dt_sb_append(sb, "    const int64_t dt_idx = ");
        for (int v = 0; v < w->nvars; v++) {
            int64_t stride = 1;
            for (int u = v + 1; u < w->nvars; u++)
                stride *= w->vars[u].dom.n;
            dt_sb_appendf(sb, "%sdt_i%d * %lld", v ? " + " : "", v, (long long)stride);
        }
        dt_sb_append(sb, ";\n");
    }
    emit_tree(sb, p, s, 0, ns - 1, 1);
    dt_sb_append(sb, "}\n");
    free(s);
}
