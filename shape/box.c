/* Boxes of a shape set: corners, membership, distance, runs and the
 * partition of a labelled shape set (shape/box.h). */
#include "shape/box.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void dt_box_split(const dt_workload *w, int64_t s, int64_t *idx)
{
    DT_ASSERT(s >= 0, "a flat shape number is not negative");
    for (int v = w->nvars - 1; v >= 0; v--) {
        idx[v] = s % w->vars[v].dom.n;
        s /= w->vars[v].dom.n;
    }
    DT_ASSERT(s == 0, "a flat shape number is below the number of shapes of the set");
}

int64_t dt_box_join(const dt_workload *w, const int64_t *idx)
{
    int64_t s = 0;
    for (int v = 0; v < w->nvars; v++) {
        DT_ASSERT(idx[v] >= 0 && idx[v] < w->vars[v].dom.n,
                  "a shape's domain index lies inside its variable's domain");
        s = s * w->vars[v].dom.n + idx[v];
    }
    return s;
}

/* Domain indices of a stored corner, which must be a shape of the set. */
static int corner(const dt_workload *w, const char *text, int64_t *idx, dt_err *e)
{
    int64_t vals[DT_MAX_VARS];
    int in_domain = 0;
    int rc = dt_shape_parse(w, text, vals, &in_domain, e);
    if (rc)
        return rc;
    if (!in_domain)
        return dt_errf(e, DT_EINVAL, "shape %s is not in the workload's shape set", text);
    for (int v = 0; v < w->nvars; v++) {
        idx[v] = dt_domain_nearest(&w->vars[v].dom, vals[v]);
        DT_ASSERT(w->vars[v].dom.values[idx[v]] == vals[v],
                  "a corner in the shape set is a value of each variable's domain");
    }
    return 0;
}

int dt_box_parse(const dt_workload *w, const char *lo_text, const char *hi_text, dt_box *b,
                 dt_err *e)
{
    memset(b, 0, sizeof *b);
    int rc = corner(w, lo_text, b->lo, e);
    if (!rc)
        rc = corner(w, hi_text, b->hi, e);
    if (rc)
        return rc;
    for (int v = 0; v < w->nvars; v++)
        if (b->hi[v] < b->lo[v])
            return dt_errf(e, DT_EINVAL, "box %s..%s is reversed in %s", lo_text, hi_text,
                           w->vars[v].name);
    return 0;
}

void dt_box_format(const dt_workload *w, const dt_box *b, char *lo, size_t nlo, char *hi,
                   size_t nhi)
{
    int64_t a[DT_MAX_VARS], z[DT_MAX_VARS];
    for (int v = 0; v < w->nvars; v++) {
        DT_ASSERT(0 <= b->lo[v] && b->lo[v] <= b->hi[v] && b->hi[v] < w->vars[v].dom.n,
                  "a box's interval is lo <= hi inside its variable's domain");
        a[v] = w->vars[v].dom.values[b->lo[v]];
        z[v] = w->vars[v].dom.values[b->hi[v]];
    }
    dt_shape_format(w, a, lo, nlo);
    dt_shape_format(w, z, hi, nhi);
}

int64_t dt_box_nshapes(const dt_workload *w, const dt_box *b)
{
    int64_t n = 1;
    for (int v = 0; v < w->nvars; v++) {
        DT_ASSERT(b->lo[v] <= b->hi[v], "a box's interval has lo <= hi");
        n *= b->hi[v] - b->lo[v] + 1;
    }
    return n;
}

int64_t dt_box_shape(const dt_workload *w, const dt_box *b, int64_t j)
{
    int64_t idx[DT_MAX_VARS];
    DT_ASSERT(j >= 0, "a position in a box is not negative");
    for (int v = w->nvars - 1; v >= 0; v--) {
        int64_t len = b->hi[v] - b->lo[v] + 1;
        idx[v] = b->lo[v] + j % len;
        j /= len;
    }
    DT_ASSERT(j == 0, "a position in a box is below the box's number of shapes");
    return dt_box_join(w, idx);
}

int64_t dt_box_position(const dt_workload *w, const dt_box *b, int64_t s)
{
    int64_t idx[DT_MAX_VARS], j = 0;
    dt_box_split(w, s, idx);
    if (!dt_box_contains(w, b, idx))
        return -1;
    for (int v = 0; v < w->nvars; v++)
        j = j * (b->hi[v] - b->lo[v] + 1) + idx[v] - b->lo[v];
    return j;
}

int dt_box_contains(const dt_workload *w, const dt_box *b, const int64_t *idx)
{
    for (int v = 0; v < w->nvars; v++)
        if (idx[v] < b->lo[v] || idx[v] > b->hi[v])
            return 0;
    return 1;
}

int64_t dt_box_gap(const dt_workload *w, const dt_box *b, const int64_t *idx)
{
    int64_t g = 0;
    for (int v = 0; v < w->nvars; v++)
        g += idx[v] < b->lo[v] ? b->lo[v] - idx[v] : idx[v] > b->hi[v] ? idx[v] - b->hi[v] : 0;
    return g;
}

int dt_box_overlap(const dt_workload *w, const dt_box *a, const dt_box *b)
{
    for (int v = 0; v < w->nvars; v++)
        if (a->hi[v] < b->lo[v] || b->hi[v] < a->lo[v])
            return 0;
    return 1;
}

int dt_box_before(const dt_workload *w, const dt_box *a, const dt_box *b)
{
    for (int v = 0; v < w->nvars; v++)
        if (a->lo[v] != b->lo[v])
            return a->lo[v] < b->lo[v];
    return 0;
}

/* ---- runs ------------------------------------------------------------------ */

/* The boxes of the run ia..ib whose variables before v are equal (fixed). */
static int run_boxes(const dt_workload *w, int v, const int64_t *ia, const int64_t *ib,
                     dt_box *out)
{
    const int nv = w->nvars;
    dt_box b = {{0}, {0}};
    for (int u = 0; u < v; u++)
        b.lo[u] = b.hi[u] = ia[u];
    if (v == nv - 1 || ia[v] == ib[v]) {
        if (v == nv - 1) {
            b.lo[v] = ia[v];
            b.hi[v] = ib[v];
            out[0] = b;
            return 1;
        }
        return run_boxes(w, v + 1, ia, ib, out);
    }
    /* ia's slice from ia to its end, whole slices, ib's slice up to ib */
    int head_full = 1, tail_full = 1, n = 0;
    for (int u = v + 1; u < nv; u++) {
        head_full &= ia[u] == 0;
        tail_full &= ib[u] == w->vars[u].dom.n - 1;
    }
    int64_t first = ia[v], last = ib[v];
    DT_ASSERT(ia[v] < ib[v], "a run's last shape follows its first");
    if (!head_full) {
        int64_t end[DT_MAX_VARS];
        memcpy(end, ia, sizeof end);
        for (int u = v + 1; u < nv; u++)
            end[u] = w->vars[u].dom.n - 1;
        n += run_boxes(w, v + 1, ia, end, out + n);
        first++;
    }
    if (!tail_full)
        last--;
    if (first <= last) {
        b.lo[v] = first;
        b.hi[v] = last;
        for (int u = v + 1; u < nv; u++) {
            b.lo[u] = 0;
            b.hi[u] = w->vars[u].dom.n - 1;
        }
        out[n++] = b;
    }
    if (!tail_full) {
        int64_t start[DT_MAX_VARS];
        memcpy(start, ib, sizeof start);
        for (int u = v + 1; u < nv; u++)
            start[u] = 0;
        n += run_boxes(w, v + 1, start, ib, out + n);
    }
    return n;
}

int dt_box_from_run(const dt_workload *w, int64_t a, int64_t b, dt_box *out)
{
    int64_t ia[DT_MAX_VARS], ib[DT_MAX_VARS];
    if (w->nvars == 0) {
        memset(out, 0, sizeof *out);
        return 1;
    }
    DT_ASSERT(a <= b, "a run's first shape is not after its last");
    dt_box_split(w, a, ia);
    dt_box_split(w, b, ib);
    int n = run_boxes(w, 0, ia, ib, out);
    DT_ASSERT(n >= 1 && n <= DT_BOX_RUN_MAX, "a run decomposes into 1..DT_BOX_RUN_MAX boxes");
    int64_t covered = 0;
    for (int i = 0; i < n; i++)
        covered += dt_box_nshapes(w, &out[i]);
    DT_ASSERT(covered == b - a + 1, "a run's boxes cover exactly its shapes");
    DT_ASSERT(dt_box_shape(w, &out[0], 0) == a, "a run's first box starts at the run's first shape");
    return n;
}

/* ---- partition ---------------------------------------------------------------- */

typedef struct {
    dt_box *b;
    int *lab;
    int n, cap;
} box_list;

static int push(box_list *l, const dt_box *b, int lab)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        dt_box *nb = realloc(l->b, (size_t)cap * sizeof *nb);
        if (!nb)
            return -1;
        l->b = nb;
        int *nl = realloc(l->lab, (size_t)cap * sizeof *nl);
        if (!nl)
            return -1;
        l->lab = nl;
        l->cap = cap;
    }
    l->b[l->n] = *b;
    l->lab[l->n++] = lab;
    return 0;
}

static void list_free(box_list *l)
{
    free(l->b);
    free(l->lab);
}

/* Whether a and b span the same intervals in the variables after v. */
static int same_tail(const dt_workload *w, int v, const dt_box *a, const dt_box *b)
{
    for (int u = v + 1; u < w->nvars; u++)
        if (a->lo[u] != b->lo[u] || a->hi[u] != b->hi[u])
            return 0;
    return 1;
}

/* Whether a's first shape comes before b's in the variables after v. */
static int tail_before(const dt_workload *w, int v, const dt_box *a, const dt_box *b)
{
    for (int u = v + 1; u < w->nvars; u++)
        if (a->lo[u] != b->lo[u])
            return a->lo[u] < b->lo[u];
    return 0;
}

/* Appends to out the partition of the slice where the variables before v
 * are fixed at idx[0..v). */
static int partition(const dt_workload *w, const int *label, int v, int64_t *idx, box_list *out)
{
    const int nv = w->nvars;
    const int64_t n = w->vars[v].dom.n;
    if (v == nv - 1) {
        idx[v] = 0;
        int64_t base = dt_box_join(w, idx);
        for (int64_t i = 0; i < n;) {
            int64_t j = i;
            while (j + 1 < n && label[base + j + 1] == label[base + i])
                j++;
            DT_ASSERT(i <= j && j < n, "a run of one label lies inside the last variable's domain");
            dt_box b = {{0}, {0}};
            for (int u = 0; u < v; u++)
                b.lo[u] = b.hi[u] = idx[u];
            b.lo[v] = i;
            b.hi[v] = j;
            if (push(out, &b, label[base + i]))
                return -1;
            i = j + 1;
        }
        return 0;
    }
    /* prev: the indices in out of the boxes covering slice i-1, in the
     * order of that slice's partition (sorted by first shape) */
    int *prev = NULL, nprev = 0, rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        idx[v] = i;
        box_list sub = {0};
        rc = partition(w, label, v + 1, idx, &sub);
        int *cur = rc ? NULL : malloc((size_t)(sub.n ? sub.n : 1) * sizeof *cur);
        if (!cur)
            rc = -1;
        int p = 0;
        for (int k = 0; k < sub.n && !rc; k++) {
            /* both lists are sorted by first shape: walk prev alongside */
            while (p < nprev && tail_before(w, v, &out->b[prev[p]], &sub.b[k]))
                p++;
            if (p < nprev && out->lab[prev[p]] == sub.lab[k] &&
                same_tail(w, v, &out->b[prev[p]], &sub.b[k])) {
                out->b[prev[p]].hi[v] = i;
                cur[k] = prev[p++];
            } else {
                cur[k] = out->n;
                rc = push(out, &sub.b[k], sub.lab[k]);
            }
        }
        list_free(&sub);
        free(prev);
        prev = cur;
        nprev = sub.n;
    }
    free(prev);
    return rc;
}

int dt_box_partition(const dt_workload *w, const int *label, dt_box **boxes, int **labels,
                     int *n, dt_err *e)
{
    *boxes = NULL;
    *labels = NULL;
    *n = 0;
    box_list out = {0};
    int64_t idx[DT_MAX_VARS] = {0};
    int rc;
    if (w->nvars == 0) {
        dt_box b = {{0}, {0}};
        rc = push(&out, &b, label[0]);
    } else {
        rc = partition(w, label, 0, idx, &out);
    }
    if (rc) {
        list_free(&out);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    /* boxes are created in the order of their first shapes at every level
     * (a box made at slice i starts at i; earlier ones start before), so
     * out is already sorted; the boxes just made cover the set once */
    int64_t covered = 0;
    for (int i = 0; i < out.n; i++) {
        covered += dt_box_nshapes(w, &out.b[i]);
        DT_ASSERT(label[dt_box_shape(w, &out.b[i], 0)] == out.lab[i],
                  "a partition's box has the label of its shapes");
        DT_ASSERT(i == 0 || dt_box_before(w, &out.b[i - 1], &out.b[i]),
                  "a partition's boxes are sorted by first shape");
    }
    DT_ASSERT(covered == dt_workload_nshapes(w), "a partition's boxes cover the shape set exactly");
    *boxes = out.b;
    *labels = out.lab;
    *n = out.n;
    return 0;
}
