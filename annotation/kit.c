/* The annotation space's shared arithmetic (annotation/kit.h). */
#include "annotation/kit.h"

#include "annotation/fields.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const int dt_ann_mc_targets[DT_ANN_TARGETS] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512};
const int dt_ann_nc_targets[DT_ANN_TARGETS] = {64,   128,  256,  512,  768,
                                               1024, 1536, 2048, 3072, 4096};

static uint64_t u64min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

void dt_ann_kit_init(dt_ann_kit *s, const dt_target *t, int vl, int regs, int es)
{
    s->t = t;
    s->vl = vl;
    s->regs = regs;
    s->es = es;
    s->cores = t->cores < 1 ? 1 : t->cores;
    s->l1d = t->l1d.size ? t->l1d.size : DT_ANN_L1D_DEFAULT;
    s->l2 = t->l2.size ? t->l2.size : DT_ANN_L2_DEFAULT;
    s->amax = u64min(DT_ANN_A_STACK_MAX, s->l2);
}

/* Largest kc (multiple of 4) the cache rules allow with a's mr, nr, order and
 * its mc and nc (the smallest legal ones, mr and nr, when unset). */
int dt_ann_kc_cap(const dt_ann_kit *s, const dt_annotation *a)
{
    uint64_t mr = a->mr > 0 ? (uint64_t)a->mr : 1, nr = a->nr > 0 ? (uint64_t)a->nr : 1;
    uint64_t mc = a->mc >= a->mr && a->mc > 0 ? (uint64_t)a->mc : mr;
    uint64_t nc = a->nc >= a->nr && a->nc > 0 ? (uint64_t)a->nc : nr;
    uint64_t cap = DT_ANN_KC_MAX, es = (uint64_t)s->es;
    cap = u64min(cap, s->amax / (es * mc));
    if (a->order == DT_ORDER_M_INNER) {
        cap = u64min(cap, s->l1d / (es * nr));
    } else {
        cap = u64min(cap, s->l1d / (es * mr));
        cap = u64min(cap, s->l2 / (es * nc));
    }
    return (int)(cap - cap % DT_ANN_KC_ALIGN);
}

/* Largest mc (multiple of mr) the rules allow with a's kc. */
int dt_ann_mc_cap(const dt_ann_kit *s, const dt_annotation *a)
{
    uint64_t cap = DT_ANN_MC_MAX;
    if (a->kc > 0)
        cap = u64min(cap, s->amax / ((uint64_t)s->es * (uint64_t)a->kc));
    int mr = a->mr > 0 ? a->mr : 1;
    return (int)cap - (int)cap % mr;
}

/* Largest nc (multiple of nr) the rules allow with a's kc and order. */
int dt_ann_nc_cap(const dt_ann_kit *s, const dt_annotation *a)
{
    uint64_t cap = DT_ANN_NC_MAX;
    if (a->sketch == DT_SKETCH_BLOCKED && a->order == DT_ORDER_N_INNER && a->kc > 0)
        cap = u64min(cap, s->l2 / ((uint64_t)s->es * (uint64_t)a->kc));
    int nr = a->nr > 0 ? a->nr : 1;
    return (int)cap - (int)cap % nr;
}

/* unit*k <= cap (cap >= unit): 7 times in 8 k is the nearest whole multiple
 * of one of the targets, else any k. */
int dt_ann_draw_mult(dt_rng *r, int unit, int cap, const int *targets, int ntargets)
{
    int kmax = cap / unit;
    if (kmax <= 1)
        return unit;
    if (dt_rng_below(r, 8)) {
        int ks[16], n = 0;
        for (int i = 0; i < ntargets && n < COUNT(ks); i++) {
            int k = (targets[i] + unit / 2) / unit;
            if (k < 1)
                k = 1;
            if (k > kmax || (n && ks[n - 1] == k))
                continue;
            ks[n++] = k;
        }
        if (n)
            return unit * ks[dt_rng_below(r, n)];
    }
    return unit * (1 + dt_rng_below(r, kmax));
}

/* k*unit near old (same multiple, rounded) that fits cap; 0 if none. */
int dt_ann_refit_mult(int old, int unit, int cap)
{
    int k = (old + unit / 2) / unit;
    int kmax = cap / unit;
    if (k < 1)
        k = 1;
    if (k > kmax)
        k = kmax;
    return k >= 1 ? k * unit : 0;
}

