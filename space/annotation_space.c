/* The annotation space as a search space: sampling, mutation, crossover.
 *
 * Everything draws from a caller-owned dt_rng, in a fixed order, so the same
 * seed on the same target gives the same sequence.  Candidate values come
 * from short lists of sensible values most of the time and from the whole
 * valid range otherwise, so every valid point stays reachable while most
 * samples are good kernels.  The lists, probabilities and rules are
 * documented in docs/search-space.md. */
#include <stdio.h>
#include <string.h>

#include "space/annotation.h"
#include "space/annotation_internal.h"
#include "backends/backend.h"
#include "backends/unit.h"
#include "common/check.h"

#define SAMPLE_TRIES 10000
#define MUTATE_TRIES 1000
#define MUTATE_KIND_TRIES 8 /* attempts at one drawn kind of mutation */
#define REPAIR_STEPS 64
#define REPAIR_FROM_PARENTS 16 /* repair steps that first try a parent's value */

static const int unroll_values[] = {1, 2, 4, 8};
static const int prefetch_list[] = {0, 2, 4, 8, 16};
static const int kc_list[] = {64, 96, 128, 192, 256, 320, 384, 512, 768, 1024};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef dt_ann_kit space;

/* The kit of unit u's annotations of isa isa on t: the isa's geometry (a
 * tile unit's is its isa's, which its rules do not read). */
static void space_init(space *s, const dt_target *t, dt_isa isa, dt_unit u)
{
    const dt_backend *geom = dt_backend_geometry(isa);
    dt_ann_kit_init(s, t, geom->vec_floats, dt_backend_vec_regs(geom, t->arch),
                    dt_unit_hooks_of(u)->elem_bytes);
}

/* ---- per-field candidates ---------------------------------------------------- */

/* Largest mr whose tile fits the register file with nr = nv vectors (may be
 * < 1: no tile with that nr fits). */
static int max_mr(const space *s, int nv)
{
    int m = (s->regs - nv - 1) / nv;
    return m > DT_ANN_MR_MAX ? DT_ANN_MR_MAX : m;
}

/* nr/VL among those that fit a tile at least min_mr tall; 0 if none.  The
 * stream sketch takes the larger of two draws: it favours wide NR. */
static int draw_nv(dt_rng *r, const space *s, dt_sketch_kind sketch, int min_mr)
{
    int ok[DT_ANN_NV_MAX], n = 0;
    for (int nv = 1; nv <= DT_ANN_NV_MAX; nv++)
        if (max_mr(s, nv) >= min_mr)
            ok[n++] = nv;
    if (!n)
        return 0;
    int i = dt_rng_below(r, n);
    if (sketch != DT_SKETCH_BLOCKED) {
        int j = dt_rng_below(r, n);
        if (j > i)
            i = j;
    }
    return ok[i];
}

/* mr for nr = nv vectors: 3 times in 4 among the tiles with at least 8
 * accumulators (or the tallest tile when even that has fewer), else any. */
static int draw_mr(dt_rng *r, const space *s, int nv)
{
    int hi = max_mr(s, nv);
    if (hi < 1)
        return 0;
    int lo = (8 + nv - 1) / nv;
    if (lo > hi)
        lo = hi;
    if (dt_rng_below(r, 4))
        return lo + dt_rng_below(r, hi - lo + 1);
    return 1 + dt_rng_below(r, hi);
}

/* kc in [8, cap]: 7 times in 8 from kc_list (when some entry fits), else any
 * multiple of 4. */
static int draw_kc(dt_rng *r, int cap)
{
    if (dt_rng_below(r, 8)) {
        int n = 0;
        while (n < COUNT(kc_list) && kc_list[n] <= cap)
            n++;
        if (n)
            return kc_list[dt_rng_below(r, n)];
    }
    return DT_ANN_KC_ALIGN * (DT_ANN_KC_MIN / DT_ANN_KC_ALIGN +
                              dt_rng_below(r, cap / DT_ANN_KC_ALIGN - 1));
}

/* An unroll for sketch sk: the channel sketch's any window width
 * 1..DT_ANN_CH_UNROLL_MAX, the others' a power of two from unroll_values. */
static int draw_unroll(dt_rng *r, dt_sketch_kind sk)
{
    if (sk == DT_SKETCH_CHANNEL)
        return 1 + dt_rng_below(r, DT_ANN_CH_UNROLL_MAX);
    return unroll_values[dt_rng_below(r, COUNT(unroll_values))];
}

static int draw_prefetch(dt_rng *r)
{
    if (dt_rng_below(r, 8))
        return prefetch_list[dt_rng_below(r, COUNT(prefetch_list))];
    return dt_rng_below(r, DT_ANN_PREFETCH_MAX + 1);
}

/* ---- sampling ---------------------------------------------------------------- */

/* The channel sketch's draw: 1..4 vectors of channels (a depthwise layer
 * has tens to a thousand channels), unroll 3 (a 3×3 window row's taps'
 * weights in registers) half of the time, else 1..8, mr then as tall as
 * the registers left allow three times in four, the next rows' prefetch
 * on or off (docs/search-space.md). */
static int sample_channel(dt_rng *r, const space *s, int threads, dt_annotation *a)
{
    memset(a, 0, sizeof *a);
    a->sketch = DT_SKETCH_CHANNEL;
    a->isa = s->t->isa;
    a->threads = threads > 0 ? threads : 1 + dt_rng_below(r, s->cores);
    a->unroll = dt_rng_below(r, 2) ? 3 : draw_unroll(r, DT_SKETCH_CHANNEL);
    a->store = (dt_store_kind)dt_rng_below(r, DT_STORE_COUNT);
    a->par = (dt_par_axis)dt_rng_below(r, DT_PAR_COUNT);
    a->order = (dt_loop_order)dt_rng_below(r, DT_ORDER_COUNT);
    const int nv = 1 + dt_rng_below(r, DT_ANN_NV_MAX < 4 ? DT_ANN_NV_MAX : 4);
    int hi = (s->regs - 1) / nv - a->unroll;
    if (hi > DT_ANN_MR_MAX)
        hi = DT_ANN_MR_MAX;
    if (hi < 1)
        return -1;
    a->nr = nv * s->vl;
    a->mr = dt_rng_below(r, 4) ? (hi + 1) / 2 + dt_rng_below(r, hi - (hi + 1) / 2 + 1)
                               : 1 + dt_rng_below(r, hi);
    a->nc = dt_ann_draw_mult(r, a->nr, dt_ann_nc_cap(s, a), dt_ann_nc_targets, DT_ANN_TARGETS);
    a->prefetch = dt_rng_below(r, 2);
    return 0;
}

/* One draw; 0 when it produced a complete annotation (still to be validated). */
static int sample_once(dt_rng *r, const space *s, int sketch, int threads, dt_annotation *a)
{
    if (sketch == DT_SKETCH_CHANNEL)
        return sample_channel(r, s, threads, a);
    memset(a, 0, sizeof *a);
    a->sketch = (dt_sketch_kind)(sketch >= 0 ? sketch : dt_rng_below(r, DT_SKETCH_COUNT));
    a->isa = s->t->isa;
    a->threads = threads > 0 ? threads : 1 + dt_rng_below(r, s->cores);
    a->unroll = draw_unroll(r, a->sketch);
    a->prefetch = draw_prefetch(r);
    a->store = (dt_store_kind)dt_rng_below(r, DT_STORE_COUNT);
    a->par = (dt_par_axis)dt_rng_below(r, DT_PAR_COUNT);
    a->order = a->sketch == DT_SKETCH_BLOCKED ? (dt_loop_order)dt_rng_below(r, DT_ORDER_COUNT)
                                              : DT_ORDER_M_INNER;
    int nv = draw_nv(r, s, a->sketch, 1);
    if (!nv)
        return -1;
    a->nr = nv * s->vl;
    a->mr = draw_mr(r, s, nv);
    if (a->sketch == DT_SKETCH_BLOCKED) {
        int cap = dt_ann_kc_cap(s, a);
        if (cap < DT_ANN_KC_MIN)
            return -1;
        a->kc = draw_kc(r, cap);
        a->mc = dt_ann_draw_mult(r, a->mr, dt_ann_mc_cap(s, a), dt_ann_mc_targets, DT_ANN_TARGETS);
    }
    a->nc = dt_ann_draw_mult(r, a->nr, dt_ann_nc_cap(s, a), dt_ann_nc_targets, DT_ANN_TARGETS);
    return 0;
}

int dt_annotation_sample(dt_rng *r, const dt_target *t, int sketch, int threads,
                         dt_annotation *out, dt_err *e)
{
    if (sketch >= DT_SKETCH_ALL)
        return dt_errf(e, DT_EINVAL, "sample: sketch %d out of range (blocked, stream, channel)",
                       sketch);
    if ((unsigned)t->isa >= DT_ISA_COUNT)
        return dt_errf(e, DT_EINVAL, "sample: target isa %d out of range", (int)t->isa);
    space s;
    space_init(&s, t, t->isa, DT_UNIT_VEC);
    if (threads > s.cores)
        return dt_errf(e, DT_EINVAL, "sample: threads %d > target cores %d", threads, s.cores);
    dt_annotation a;
    dt_err last;
    dt_err_clear(&last);
    snprintf(last.msg, sizeof last.msg, "no tile fits %d vector registers", s.regs);
    for (int i = 0; i < SAMPLE_TRIES; i++) {
        if (sample_once(r, &s, sketch, threads, &a))
            continue;
        if (!dt_annotation_check(&a, t, NULL, &last)) {
            *out = a;
            return 0;
        }
    }
    return dt_errf(e, DT_EUNSUPPORTED,
                   "sample: no valid %s annotation for target isa %s after %d tries (last: %s)",
                   sketch >= 0 ? dt_sketch_name((dt_sketch_kind)sketch) : "any", dt_isa_name(t->isa),
                   SAMPLE_TRIES, last.msg);
}

/* ---- units with rules of their own (backends/unit.h) ---------------------- */

int dt_annotation_sample_unit(dt_rng *r, const dt_target *t, dt_unit unit, int sketch,
                              int threads, dt_annotation *out, dt_err *e)
{
    if ((unsigned)unit >= DT_UNIT_COUNT)
        return dt_errf(e, DT_EINVAL, "sample: unit %d out of range (%s)", (int)unit,
                       dt_unit_names());
    const dt_unit_hooks *h = dt_unit_hooks_of(unit);
    if (!h->sample_once) { /* the vector rules: exactly dt_annotation_sample's draws */
        int rc = dt_annotation_sample(r, t, sketch, threads, out, e);
        if (!rc)
            out->unit = unit;
        return rc;
    }
    if (sketch >= DT_SKETCH_COUNT)
        return dt_errf(e, DT_EINVAL, "sample: sketch %d out of range (blocked, stream)", sketch);
    const char *why = "the target cannot run the unit";
    if (h->target_ok && !h->target_ok(t, &why))
        return dt_errf(e, DT_EUNSUPPORTED, "sample: %s", why);
    space s;
    space_init(&s, t, h->isa, unit);
    if (threads > s.cores)
        return dt_errf(e, DT_EINVAL, "sample: threads %d > target cores %d", threads, s.cores);
    dt_annotation a;
    dt_err last;
    dt_err_clear(&last);
    snprintf(last.msg, sizeof last.msg, "no tile block fits the caches");
    for (int i = 0; i < SAMPLE_TRIES; i++) {
        if (h->sample_once(r, &s, sketch, threads, &a))
            continue;
        DT_ASSERT(a.unit == unit, "a unit's sampler draws annotations of its unit");
        if (!dt_annotation_check(&a, t, NULL, &last)) {
            *out = a;
            return 0;
        }
    }
    return dt_errf(e, DT_EUNSUPPORTED, "sample: no valid %s annotation after %d tries (last: %s)",
                   dt_unit_name(unit), SAMPLE_TRIES, last.msg);
}

/* A unit's neighbour: its mutation draws until a valid different one. */
static int mutate_unit(dt_rng *r, const dt_target *t, const dt_unit_hooks *h,
                       const dt_annotation *in, dt_annotation *out, dt_err *e)
{
    space s;
    space_init(&s, t, h->isa, h->unit);
    for (int i = 0; i < MUTATE_TRIES; i++) {
        dt_annotation a = *in;
        h->mutate_once(r, &s, &a);
        if (!dt_annotation_equal(&a, in) && !dt_annotation_check(&a, t, NULL, NULL)) {
            *out = a;
            return 0;
        }
    }
    return dt_errf(e, DT_EUNSUPPORTED, "mutate: no valid %s neighbour found in %d tries",
                   dt_unit_name(h->unit), MUTATE_TRIES);
}

/* A unit's child: its crossover draws until a valid one; a parent when no
 * mix is valid in a few tries. */
static int crossover_unit(dt_rng *r, const dt_target *t, const dt_unit_hooks *h,
                          const dt_annotation *a, const dt_annotation *b, dt_annotation *out)
{
    for (int tries = 0; tries < REPAIR_STEPS; tries++) {
        dt_annotation c;
        h->cross_once(r, a, b, &c);
        if (!dt_annotation_check(&c, t, NULL, NULL)) {
            *out = c;
            return 0;
        }
    }
    *out = dt_rng_below(r, 2) ? *b : *a;
    return 0;
}

int dt_annotation_sample_dtype(dt_rng *r, const dt_target *t, int dtype, int sketch, int threads,
                               dt_annotation *out, dt_err *e)
{
    const dt_backend *rows[16];
    int n = dt_backend_searched((dt_dtype)dtype, t, rows, 16);
    /* one back-end, or the channel sketch (its kernels widen every dtype to
     * f32 lanes on the isa's vector row): exactly dt_annotation_sample's draws */
    if (n <= 1 || sketch == DT_SKETCH_CHANNEL)
        return dt_annotation_sample(r, t, sketch, threads, out, e);
    const dt_backend *b = rows[dt_rng_below(r, n)];
    dt_target tt = *t; /* a portable row below the isa in use: its isa */
    dt_target_set_isa(&tt, b->isa);
    return dt_annotation_sample_unit(r, &tt, b->unit, sketch, threads, out, e);
}

/* One or two fields of a tile annotation changed (unchecked). */
/* ---- mutation ---------------------------------------------------------------- */

/* v moved by -2, -1, +1 or +2 (may leave the range: the caller checks). */
static int step_int(dt_rng *r, int v)
{
    static const int d[] = {-2, -1, 1, 2};
    return v + d[dt_rng_below(r, COUNT(d))];
}

/* New k for value = unit*k (k in 1..kmax): a neighbour (k±1, 2k, k/2) or a
 * fresh draw. */
static int mutate_mult(dt_rng *r, int value, int unit, int cap, const int *targets, int ntargets)
{
    int k = value / unit, kmax = cap / unit;
    if (kmax < 1)
        return value;
    if (dt_rng_below(r, 2)) {
        int opts[4] = {k - 1, k + 1, 2 * k, k / 2};
        int nk = opts[dt_rng_below(r, 4)];
        return nk >= 1 && nk <= kmax ? nk * unit : value;
    }
    return dt_ann_draw_mult(r, unit, cap, targets, ntargets);
}

static int mutate_tile(dt_rng *r, const space *s, dt_annotation *a)
{
    int nv = a->nr / s->vl;
    if (dt_rng_below(r, 2)) {
        int hi = max_mr(s, nv);
        int mr = dt_rng_below(r, 2) ? step_int(r, a->mr) : 1 + dt_rng_below(r, hi);
        if (mr < 1 || mr > hi || mr == a->mr)
            return -1;
        a->mr = mr;
        if (a->sketch == DT_SKETCH_BLOCKED && a->mc % mr) {
            a->mc = dt_ann_refit_mult(a->mc, mr, dt_ann_mc_cap(s, a));
            if (!a->mc)
                return -1;
        }
        return 0;
    }
    int nnv;
    if (dt_rng_below(r, 2)) {
        nnv = nv + (dt_rng_below(r, 2) ? 1 : -1);
    } else {
        nnv = draw_nv(r, s, a->sketch, a->mr);
    }
    if (nnv < 1 || nnv > DT_ANN_NV_MAX || nnv == nv || max_mr(s, nnv) < a->mr)
        return -1;
    a->nr = nnv * s->vl;
    if (a->nc % a->nr) {
        a->nc = dt_ann_refit_mult(a->nc, a->nr, dt_ann_nc_cap(s, a));
        if (!a->nc)
            return -1;
    }
    return 0;
}

static int mutate_kc(dt_rng *r, const space *s, dt_annotation *a)
{
    int cap = dt_ann_kc_cap(s, a);
    if (cap < DT_ANN_KC_MIN)
        return -1;
    int kc;
    if (dt_rng_below(r, 2)) {
        static const int num[] = {1, 3, 5, 3, 2}, den[] = {2, 4, 4, 2, 1};
        int i = dt_rng_below(r, COUNT(num));
        kc = (a->kc * num[i] / den[i] + DT_ANN_KC_ALIGN / 2) / DT_ANN_KC_ALIGN * DT_ANN_KC_ALIGN;
        if (kc < DT_ANN_KC_MIN)
            kc = DT_ANN_KC_MIN;
        if (kc > cap)
            kc = cap;
    } else {
        kc = draw_kc(r, cap);
    }
    if (kc == a->kc)
        return -1;
    a->kc = kc;
    return 0;
}

static int mutate_cache(dt_rng *r, const space *s, dt_annotation *a)
{
    int which = a->sketch == DT_SKETCH_BLOCKED ? dt_rng_below(r, 3) : 2;
    if (which == 0)
        return mutate_kc(r, s, a);
    if (which == 1) {
        int mc = mutate_mult(r, a->mc, a->mr, dt_ann_mc_cap(s, a), dt_ann_mc_targets, DT_ANN_TARGETS);
        if (mc == a->mc)
            return -1;
        a->mc = mc;
        return 0;
    }
    int nc = mutate_mult(r, a->nc, a->nr, dt_ann_nc_cap(s, a), dt_ann_nc_targets, DT_ANN_TARGETS);
    if (nc == a->nc)
        return -1;
    a->nc = nc;
    return 0;
}

/* Mutation kinds and their probabilities in percent. */
enum { MUT_TILE, MUT_CACHE, MUT_UNROLL, MUT_PREFETCH, MUT_KNOB, MUT_COUNT };
static const int mut_percent[MUT_COUNT] = {35, 30, 10, 10, 15};

static int draw_kind(dt_rng *r)
{
    int p = dt_rng_below(r, 100), k = 0;
    while (k < MUT_COUNT - 1 && p >= mut_percent[k])
        p -= mut_percent[k++];
    return k;
}

/* One attempt at a mutation of the given kind: 0 when a changed (still to
 * be validated), -1 when the draw was a no-op or out of range. */
static int mutate_once(dt_rng *r, const space *s, int kind, dt_annotation *a)
{
    if (kind == MUT_TILE)
        return mutate_tile(r, s, a);
    if (kind == MUT_CACHE)
        return mutate_cache(r, s, a);
    if (kind == MUT_UNROLL) {
        int u = draw_unroll(r, a->sketch);
        if (u == a->unroll)
            return -1;
        a->unroll = u;
        return 0;
    }
    if (kind == MUT_PREFETCH) {
        if (a->sketch == DT_SKETCH_CHANNEL) { /* the next rows' prefetch on or off */
            a->prefetch = !a->prefetch;
            return 0;
        }
        int pf;
        if (dt_rng_below(r, 2)) {
            int opts[4] = {a->prefetch * 2, a->prefetch / 2, a->prefetch + 1, a->prefetch - 1};
            pf = opts[dt_rng_below(r, 4)];
        } else {
            pf = draw_prefetch(r);
        }
        if (pf < 0 || pf > DT_ANN_PREFETCH_MAX || pf == a->prefetch)
            return -1;
        a->prefetch = pf;
        return 0;
    }
    int which = dt_rng_below(r, a->sketch != DT_SKETCH_STREAM ? 3 : 2);
    if (which == 0)
        a->par = (dt_par_axis)((a->par + 1 + dt_rng_below(r, DT_PAR_COUNT - 1)) % DT_PAR_COUNT);
    else if (which == 1)
        a->store = (dt_store_kind)((a->store + 1) % DT_STORE_COUNT);
    else
        a->order = (dt_loop_order)((a->order + 1) % DT_ORDER_COUNT);
    return 0;
}

int dt_annotation_mutate(dt_rng *r, const dt_target *t, const dt_annotation *in,
                         dt_annotation *out, dt_err *e)
{
    if (dt_annotation_validate(in, t, e))
        return e ? dt_err_prefix(e, "mutate: input annotation") : DT_EINVAL;
    const dt_unit_hooks *h = dt_unit_hooks_of(in->unit);
    if (h->mutate_once)
        return mutate_unit(r, t, h, in, out, e);
    space s;
    space_init(&s, t, in->isa, in->unit);
    /* A kind is drawn with its probability and tried a few times before
     * another kind is drawn, so the realised proportions stay close to the
     * documented ones even though some kinds fail validation more often. */
    for (int i = 0; i < MUTATE_TRIES;) {
        int kind = draw_kind(r);
        for (int j = 0; j < MUTATE_KIND_TRIES && i < MUTATE_TRIES; j++, i++) {
            dt_annotation a = *in;
            if (mutate_once(r, &s, kind, &a))
                continue;
            if (!dt_annotation_equal(&a, in) && !dt_annotation_check(&a, t, NULL, NULL)) {
                *out = a;
                return 0;
            }
        }
    }
    return dt_errf(e, DT_EUNSUPPORTED, "mutate: no valid neighbour found in %d tries",
                   MUTATE_TRIES);
}

/* ---- crossover --------------------------------------------------------------- */

/* Draws field f afresh, keeping the other fields (the next repair step fixes
 * whatever the new value breaks). */
static void resample_field(dt_rng *r, const space *s, dt_annotation *c, int f)
{
    const int blocked = c->sketch == DT_SKETCH_BLOCKED;
    switch ((dt_ann_field)f) {
    case DT_F_MR: {
        int mr = draw_mr(r, s, c->nr / s->vl);
        if (mr)
            c->mr = mr;
        break;
    }
    case DT_F_NR: {
        int nv = draw_nv(r, s, c->sketch, c->mr);
        if (!nv)
            nv = draw_nv(r, s, c->sketch, 1);
        if (nv)
            c->nr = nv * s->vl;
        break;
    }
    case DT_F_KC: {
        if (!blocked) {
            c->kc = 0;
            break;
        }
        int cap = dt_ann_kc_cap(s, c);
        if (cap < DT_ANN_KC_MIN) { /* mc or nc is what is too big: allow any kc */
            dt_annotation bare = *c;
            bare.mc = bare.nc = 0;
            cap = dt_ann_kc_cap(s, &bare);
        }
        c->kc = cap < DT_ANN_KC_MIN ? DT_ANN_KC_MIN : draw_kc(r, cap);
        break;
    }
    case DT_F_MC: {
        if (!blocked) {
            c->mc = 0;
            break;
        }
        int cap = dt_ann_mc_cap(s, c);
        c->mc = cap < c->mr ? c->mr : dt_ann_draw_mult(r, c->mr, cap, dt_ann_mc_targets, DT_ANN_TARGETS);
        break;
    }
    case DT_F_NC: {
        int cap = dt_ann_nc_cap(s, c);
        c->nc = cap < c->nr ? c->nr : dt_ann_draw_mult(r, c->nr, cap, dt_ann_nc_targets, DT_ANN_TARGETS);
        break;
    }
    case DT_F_UNROLL: c->unroll = draw_unroll(r, c->sketch); break;
    case DT_F_PREFETCH:
        c->prefetch = c->sketch == DT_SKETCH_CHANNEL ? dt_rng_below(r, 2) : draw_prefetch(r);
        break;
    case DT_F_STORE: c->store = (dt_store_kind)dt_rng_below(r, DT_STORE_COUNT); break;
    case DT_F_ORDER:
        c->order = blocked || c->sketch == DT_SKETCH_CHANNEL
                       ? (dt_loop_order)dt_rng_below(r, DT_ORDER_COUNT)
                       : DT_ORDER_M_INNER;
        break;
    case DT_F_PAR: c->par = (dt_par_axis)dt_rng_below(r, DT_PAR_COUNT); break;
    case DT_F_THREADS: c->threads = 1 + dt_rng_below(r, s->cores); break;
    case DT_F_SKETCH:
    case DT_F_ISA:
    case DT_F_COUNT: break;
    }
}

int dt_annotation_crossover(dt_rng *r, const dt_target *t, const dt_annotation *a,
                            const dt_annotation *b, dt_annotation *out, dt_err *e)
{
    if (a->sketch != b->sketch)
        return dt_errf(e, DT_EINVAL, "crossover: parents have different sketches (%s, %s)",
                       dt_sketch_name(a->sketch), dt_sketch_name(b->sketch));
    if (a->isa != b->isa)
        return dt_errf(e, DT_EINVAL, "crossover: parents have different isas (%s, %s)",
                       dt_isa_name(a->isa), dt_isa_name(b->isa));
    if (dt_annotation_validate(a, t, e))
        return e ? dt_err_prefix(e, "crossover: parent a") : DT_EINVAL;
    if (dt_annotation_validate(b, t, e))
        return e ? dt_err_prefix(e, "crossover: parent b") : DT_EINVAL;
    if (a->unit != b->unit)
        return dt_errf(e, DT_EINVAL, "crossover: parents have different units (%s, %s)",
                       dt_unit_name(a->unit), dt_unit_name(b->unit));
    const dt_unit_hooks *h = dt_unit_hooks_of(a->unit);
    if (h->cross_once)
        return crossover_unit(r, t, h, a, b, out);

    space s;
    space_init(&s, t, a->isa, a->unit);
    dt_annotation c = *a;
    for (int f = 0; f < DT_F_COUNT; f++)
        if (dt_rng_below(r, 2))
            dt_ann_set(&c, f, dt_ann_get(b, f));

    /* Repair: one offending field per step, first from a parent that has
     * another value for it, later drawn afresh. */
    for (int step = 0; step < REPAIR_STEPS; step++) {
        unsigned bad = 0;
        if (!dt_annotation_check(&c, t, &bad, NULL)) {
            *out = c;
            return 0;
        }
        bad &= ~(DT_F_BIT(DT_F_SKETCH) | DT_F_BIT(DT_F_ISA));
        int fields[DT_F_COUNT], n = 0;
        for (int f = 0; f < DT_F_COUNT; f++)
            if (bad & DT_F_BIT(f))
                fields[n++] = f;
        if (!n)
            break;
        int f = fields[dt_rng_below(r, n)];
        int cur = dt_ann_get(&c, f), va = dt_ann_get(a, f), vb = dt_ann_get(b, f);
        if (step < REPAIR_FROM_PARENTS && (va != cur || vb != cur)) {
            int v = va == cur ? vb : vb == cur ? va : (dt_rng_below(r, 2) ? va : vb);
            dt_ann_set(&c, f, v);
        } else {
            resample_field(r, &s, &c, f);
        }
    }
    /* not repaired in time: a parent is a valid child */
    *out = dt_rng_below(r, 2) ? *b : *a;
    return 0;
}
