/* Kernel-set selection under a budget (see kset.h).
 *
 * Invariant (DT_ASSERT, checked in every build type): a set returned for a
 * budget K holds n kernels, 1 <= n <= min(K, nk), as strictly ascending
 * candidate indices in [0, nk) (so no kernel twice); dt_kset_auto's is such
 * a set for some K <= nk.  The choice only ever adds a candidate, swaps one
 * for another or drops one (prune), so the size never passes K. */
#include "tuner/kset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

int dt_kset_init(dt_kset *p, int64_t ns, int nk, const double *w, const double *t, dt_err *e)
{
    memset(p, 0, sizeof *p);
    if (ns < 1 || nk < 1 || nk > DT_KSET_MAX)
        return dt_errf(e, DT_EINVAL, "kernel set: %lld shapes x %d kernels (1..%d kernels)",
                       (long long)ns, nk, DT_KSET_MAX);
    p->ns = ns;
    p->nk = nk;
    p->w = malloc((size_t)ns * sizeof *p->w);
    p->t = malloc((size_t)ns * (size_t)nk * sizeof *p->t);
    if (!p->w || !p->t) {
        dt_kset_free(p);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int64_t s = 0; s < ns; s++) {
        const double *row = t + s * nk;
        double worst = -1;
        for (int k = 0; k < nk; k++)
            if (isfinite(row[k]) && row[k] > worst)
                worst = row[k];
        p->w[s] = worst >= 0 && isfinite(w[s]) && w[s] > 0 ? w[s] : 0;
        for (int k = 0; k < nk; k++) {
            p->t[s * nk + k] = isfinite(row[k]) ? row[k] : (worst >= 0 ? 2 * worst : 0);
            DT_ASSERT(isfinite(p->t[s * nk + k]), "a kernel set's times are all finite");
        }
        DT_ASSERT(p->w[s] >= 0 && isfinite(p->w[s]), "a kernel set's weights are finite and >= 0");
    }
    return 0;
}

void dt_kset_free(dt_kset *p)
{
    free(p->w);
    free(p->t);
    memset(p, 0, sizeof *p);
}

double dt_kset_objective(const dt_kset *p, const int *set, int n)
{
    if (n < 1)
        return INFINITY;
    for (int i = 0; i < n; i++)
        DT_ASSERT(set[i] >= 0 && set[i] < p->nk, "a set's members are candidate indices");
    double o = 0;
    for (int64_t s = 0; s < p->ns; s++) {
        if (p->w[s] == 0)
            continue;
        const double *row = p->t + s * p->nk;
        double m = row[set[0]];
        for (int i = 1; i < n; i++)
            m = row[set[i]] < m ? row[set[i]] : m;
        o += p->w[s] * m;
    }
    return o;
}

/* The invariant above: set[0..n) a valid set for budget K. */
static void set_check(const dt_kset *p, int K, const int *set, int n)
{
    DT_ASSERT(n >= 1 && n <= K && n <= p->nk, "a chosen set holds 1..min(K, nk) kernels");
    for (int i = 0; i < n; i++) {
        DT_ASSERT(set[i] >= 0 && set[i] < p->nk, "a chosen set's members are candidate indices");
        DT_ASSERT(i == 0 || set[i] > set[i - 1],
                  "a chosen set is strictly ascending, so no kernel is in it twice");
    }
}

/* A change counts only when it lowers the objective by more than rounding. */
static int lower(double a, double b)
{
    return a < b - 1e-12 * fabs(b);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Drops every kernel whose removal does not raise the objective (the last
 * first), so a set holds no passenger; returns the new size. */
static int prune(const dt_kset *p, int *set, int n, double *obj)
{
    DT_ASSERT(n >= 1, "prune is given a set of at least one kernel");
    double cur = dt_kset_objective(p, set, n);
    for (int i = n - 1; i >= 0 && n > 1; i--) {
        int k = set[i];
        memmove(set + i, set + i + 1, (size_t)(n - i - 1) * sizeof *set);
        double o = dt_kset_objective(p, set, n - 1);
        if (!lower(cur, o)) { /* not needed */
            n--;
            cur = o;
        } else {
            memmove(set + i + 1, set + i, (size_t)(n - i - 1) * sizeof *set);
            set[i] = k;
        }
    }
    qsort(set, (size_t)n, sizeof *set, cmp_int);
    *obj = cur;
    return n;
}

typedef struct {
    double *b1, *b2; /* best and second best time of each shape in the set */
    int *a1;         /* which kernel is the best */
    char *in;        /* [nk] member of the set */
} scratch;

static void set_mins(const dt_kset *p, const int *set, int n, scratch *x)
{
    for (int64_t s = 0; s < p->ns; s++) {
        const double *row = p->t + s * p->nk;
        double b1 = INFINITY, b2 = INFINITY;
        int a1 = -1;
        for (int i = 0; i < n; i++) {
            double v = row[set[i]];
            if (v < b1) {
                b2 = b1;
                b1 = v;
                a1 = set[i];
            } else if (v < b2) {
                b2 = v;
            }
        }
        x->b1[s] = b1;
        x->b2[s] = b2;
        x->a1[s] = a1;
    }
}

/* Best kernel to add to set[0..n): its index, or -1 when none lowers cur. */
static int best_add(const dt_kset *p, int n, const scratch *x, double cur, double *out)
{
    int best = -1;
    double bo = cur;
    for (int c = 0; c < p->nk; c++) {
        if (x->in[c])
            continue;
        double o = 0;
        for (int64_t s = 0; s < p->ns; s++) {
            double v = p->t[s * p->nk + c];
            o += p->w[s] * (n == 0 || v < x->b1[s] ? v : x->b1[s]);
        }
        if (n == 0 ? o < bo : lower(o, bo)) {
            bo = o;
            best = c;
        }
    }
    DT_ASSERT(n > 0 || best >= 0,
              "a first kernel is always found: finite times and weights give a finite sum");
    *out = bo;
    return best;
}

/* Swap refinement: the best (position, candidate) replacement while it
 * lowers the objective. */
static double refine(const dt_kset *p, int *set, int n, scratch *x, double cur)
{
    for (int iter = 0; iter < 1000; iter++) {
        set_mins(p, set, n, x);
        int bi = -1, bc = -1;
        double bo = cur;
        for (int i = 0; i < n; i++)
            for (int c = 0; c < p->nk; c++) {
                if (x->in[c])
                    continue;
                double o = 0;
                for (int64_t s = 0; s < p->ns; s++) {
                    double without = x->a1[s] == set[i] ? x->b2[s] : x->b1[s];
                    double v = p->t[s * p->nk + c];
                    o += p->w[s] * (v < without ? v : without);
                }
                if (lower(o, bo)) {
                    bo = o;
                    bi = i;
                    bc = c;
                }
            }
        if (bi < 0)
            break;
        DT_ASSERT(x->in[set[bi]] && !x->in[bc], "a swap replaces a member by a non-member");
        x->in[set[bi]] = 0;
        x->in[bc] = 1;
        set[bi] = bc;
        cur = bo;
    }
    return cur;
}

static int scratch_init(scratch *x, const dt_kset *p, dt_err *e)
{
    x->b1 = malloc((size_t)p->ns * sizeof *x->b1);
    x->b2 = malloc((size_t)p->ns * sizeof *x->b2);
    x->a1 = malloc((size_t)p->ns * sizeof *x->a1);
    x->in = calloc((size_t)p->nk, 1);
    if (!x->b1 || !x->b2 || !x->a1 || !x->in)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    return 0;
}

static void scratch_free(scratch *x)
{
    free(x->b1);
    free(x->b2);
    free(x->a1);
    free(x->in);
}

int dt_kset_greedy(const dt_kset *p, int K, int *set, double *obj, dt_err *e)
{
    if (K < 1)
        return dt_errf(e, DT_EINVAL, "a kernel budget of %d: it takes at least 1", K);
    if (K > p->nk)
        K = p->nk;
    scratch x = {0};
    int rc = scratch_init(&x, p, e);
    if (rc) {
        scratch_free(&x);
        return rc;
    }
    int n = 0;
    double cur = INFINITY;
    while (n < K) {
        set_mins(p, set, n, &x);
        double o;
        int c = best_add(p, n, &x, cur, &o);
        if (c < 0)
            break;
        set[n++] = c;
        x.in[c] = 1;
        cur = o;
    }
    DT_ASSERT(n >= 1 && n <= K, "the greedy choice adds 1..K kernels");
    cur = refine(p, set, n, &x, cur);
    scratch_free(&x);
    n = prune(p, set, n, &cur);
    set_check(p, K, set, n);
    if (obj)
        *obj = cur;
    return n;
}

/* C(n, k), saturated at cap + 1. */
static int64_t binom_capped(int n, int k, int64_t cap)
{
    if (k < 0 || k > n)
        return 0;
    if (k > n - k)
        k = n - k;
    double c = 1;
    for (int i = 1; i <= k; i++) {
        c = c * (n - k + i) / i;
        if (c > (double)cap)
            return cap + 1;
    }
    return (int64_t)llround(c);
}

int dt_kset_exact(const dt_kset *p, int K, int *set, double *obj, dt_err *e)
{
    if (K < 1)
        return dt_errf(e, DT_EINVAL, "a kernel budget of %d: it takes at least 1", K);
    if (K > p->nk)
        K = p->nk;
    int idx[DT_KSET_MAX];
    for (int i = 0; i < K; i++)
        idx[i] = i;
    double best = INFINITY;
    for (;;) {
        double o = dt_kset_objective(p, idx, K);
        if (lower(o, best) || best == INFINITY) {
            best = o;
            memcpy(set, idx, (size_t)K * sizeof *set);
        }
        int i = K - 1;
        while (i >= 0 && idx[i] == p->nk - K + i)
            i--;
        if (i < 0)
            break;
        idx[i]++;
        for (int j = i + 1; j < K; j++)
            idx[j] = idx[j - 1] + 1;
        DT_ASSERT(idx[K - 1] < p->nk, "the next K-subset's indices stay below nk");
    }
    int n = prune(p, set, K, &best);
    set_check(p, K, set, n);
    if (obj)
        *obj = best;
    return n;
}

int dt_kset_choose(const dt_kset *p, int K, int *set, double *obj, dt_err *e)
{
    if (K >= 1 && K < p->nk && binom_capped(p->nk, K, DT_KSET_EXACT_MAX) <= DT_KSET_EXACT_MAX)
        return dt_kset_exact(p, K, set, obj, e);
    return dt_kset_greedy(p, K, set, obj, e);
}

int dt_kset_auto(const dt_kset *p, double tol, int *set, double *obj, dt_err *e)
{
    int all[DT_KSET_MAX];
    for (int k = 0; k < p->nk; k++)
        all[k] = k;
    double target = dt_kset_objective(p, all, p->nk) * (1 + (tol > 0 ? tol : 0));
    int n = 0;
    double o = INFINITY;
    for (int K = 1; K <= p->nk; K++) {
        n = dt_kset_choose(p, K, set, &o, e);
        if (n < 0)
            return n;
        if (o <= target * (1 + 1e-12) || n < K) /* n < K: more would not help */
            break;
    }
    set_check(p, p->nk, set, n);
    if (obj)
        *obj = o;
    return n;
}
