/* Annotations: names, the PRNG, equality, fields by index.  JSON is in
 * annotation_json.c; the rules are the search space's (space/). */
#include "annotation/annotation.h"

#include <string.h>

#include "annotation/fields.h"

/* ---- names ----------------------------------------------------------------- */

static const char *const sketch_names[DT_SKETCH_ALL] = {"blocked", "stream", "channel"};
static const char *const par_names[DT_PAR_COUNT] = {"n", "m", "mn"};
static const char *const store_names[DT_STORE_COUNT] = {"mask", "scratch"};
static const char *const order_names[DT_ORDER_COUNT] = {"m_inner", "n_inner"};
static const char *const unit_names[DT_UNIT_COUNT] = {"vec", "amx", "fma"};

const char *dt_sketch_name(dt_sketch_kind s)
{
    return (unsigned)s < DT_SKETCH_ALL ? sketch_names[s] : "?";
}

int dt_sketch_from_name(const char *name, dt_sketch_kind *out)
{
    for (int i = 0; name && i < DT_SKETCH_ALL; i++) {
        if (!strcmp(name, sketch_names[i])) {
            *out = (dt_sketch_kind)i;
            return 0;
        }
    }
    return DT_EINVAL;
}

const char *dt_par_name(dt_par_axis p)
{
    return (unsigned)p < DT_PAR_COUNT ? par_names[p] : "?";
}

const char *dt_store_name(dt_store_kind s)
{
    return (unsigned)s < DT_STORE_COUNT ? store_names[s] : "?";
}

const char *dt_order_name(dt_loop_order o)
{
    return (unsigned)o < DT_ORDER_COUNT ? order_names[o] : "?";
}

const char *dt_unit_name(dt_unit u)
{
    return (unsigned)u < DT_UNIT_COUNT ? unit_names[u] : "?";
}

const char *dt_unit_names(void) { return "vec, amx, fma"; }

int dt_unit_from_name(const char *name, dt_unit *out)
{
    for (int i = 0; name && i < DT_UNIT_COUNT; i++) {
        if (!strcmp(name, unit_names[i])) {
            *out = (dt_unit)i;
            return 0;
        }
    }
    return DT_EINVAL;
}

/* ---- PRNG: splitmix64 ------------------------------------------------------ */

void dt_rng_seed(dt_rng *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t dt_rng_next(dt_rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Exactly uniform: draws below the largest multiple of n are kept (at most
 * one redraw in 2^32 for any int n).  n <= 1 gives 0 without drawing. */
int dt_rng_below(dt_rng *r, int n)
{
    if (n <= 1)
        return 0;
    uint64_t bound = (uint64_t)n;
    uint64_t threshold = (0 - bound) % bound; /* 2^64 mod n */
    for (;;) {
        uint64_t x = dt_rng_next(r);
        if (x >= threshold)
            return (int)(x % bound);
    }
}

int dt_annotation_equal(const dt_annotation *a, const dt_annotation *b)
{
    return a->sketch == b->sketch && a->isa == b->isa && a->mr == b->mr && a->nr == b->nr &&
           a->kc == b->kc && a->mc == b->mc && a->nc == b->nc && a->unroll == b->unroll &&
           a->prefetch == b->prefetch && a->store == b->store && a->order == b->order &&
           a->par == b->par && a->threads == b->threads && a->unit == b->unit;
}

/* ---- fields by index (annotation_internal.h) -------------------------------- */

int dt_ann_get(const dt_annotation *a, int f)
{
    switch ((dt_ann_field)f) {
    case DT_F_SKETCH: return (int)a->sketch;
    case DT_F_ISA: return (int)a->isa;
    case DT_F_MR: return a->mr;
    case DT_F_NR: return a->nr;
    case DT_F_KC: return a->kc;
    case DT_F_MC: return a->mc;
    case DT_F_NC: return a->nc;
    case DT_F_UNROLL: return a->unroll;
    case DT_F_PREFETCH: return a->prefetch;
    case DT_F_STORE: return (int)a->store;
    case DT_F_ORDER: return (int)a->order;
    case DT_F_PAR: return (int)a->par;
    case DT_F_THREADS: return a->threads;
    case DT_F_COUNT: break;
    }
    return 0;
}

void dt_ann_set(dt_annotation *a, int f, int v)
{
    switch ((dt_ann_field)f) {
    case DT_F_SKETCH: a->sketch = (dt_sketch_kind)v; break;
    case DT_F_ISA: a->isa = (dt_isa)v; break;
    case DT_F_MR: a->mr = v; break;
    case DT_F_NR: a->nr = v; break;
    case DT_F_KC: a->kc = v; break;
    case DT_F_MC: a->mc = v; break;
    case DT_F_NC: a->nc = v; break;
    case DT_F_UNROLL: a->unroll = v; break;
    case DT_F_PREFETCH: a->prefetch = v; break;
    case DT_F_STORE: a->store = (dt_store_kind)v; break;
    case DT_F_ORDER: a->order = (dt_loop_order)v; break;
    case DT_F_PAR: a->par = (dt_par_axis)v; break;
    case DT_F_THREADS: a->threads = v; break;
    case DT_F_COUNT: break;
    }
}
