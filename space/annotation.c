/* Annotations: names, validation against a target, the PRNG, equality.
 * Sampling, mutation and crossover are in annotation_space.c, JSON in
 * annotation_json.c.  Every rule here is documented with its reason in
 * docs/search-space.md; keep the two in step. */
#include "space/annotation.h"

#include <inttypes.h>
#include <string.h>

#include "space/annotation_internal.h"
#include "backends/backend.h"

/* ---- names ----------------------------------------------------------------- */

static const char *const sketch_names[DT_SKETCH_COUNT] = {"blocked", "stream"};
static const char *const par_names[DT_PAR_COUNT] = {"n", "m", "mn"};
static const char *const store_names[DT_STORE_COUNT] = {"mask", "scratch"};
static const char *const order_names[DT_ORDER_COUNT] = {"m_inner", "n_inner"};
static const char *const unit_names[DT_UNIT_COUNT] = {"vec", "amx"};

const char *dt_sketch_name(dt_sketch_kind s)
{
    return (unsigned)s < DT_SKETCH_COUNT ? sketch_names[s] : "?";
}

int dt_sketch_from_name(const char *name, dt_sketch_kind *out)
{
    for (int i = 0; name && i < DT_SKETCH_COUNT; i++) {
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

/* ---- validation ------------------------------------------------------------ */

#define FAIL(mask, ...)                                                                    \
    do {                                                                                   \
        if (bad)                                                                           \
            *bad = (mask);                                                                 \
        return dt_errf(e, DT_EINVAL, __VA_ARGS__);                                         \
    } while (0)

static int check_amx(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e);
static int check_registers(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e);
static int check_rest(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e);

int dt_annotation_check(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e)
{
    if (bad)
        *bad = 0;

    /* back-end first: the vector width and register count follow from it */
    if ((unsigned)a->isa >= DT_ISA_COUNT)
        FAIL(DT_F_BIT(DT_F_ISA), "isa %d out of range (generic, avx2, avx512)", (int)a->isa);
    if ((unsigned)t->isa >= DT_ISA_COUNT)
        FAIL(DT_F_BIT(DT_F_ISA), "target isa %d out of range", (int)t->isa);
    if (!dt_backend_isa_admits(t, a->isa))
        FAIL(DT_F_BIT(DT_F_ISA), "isa %s is above the target's isa %s", dt_isa_name(a->isa),
             dt_isa_name(t->isa));
    if ((unsigned)a->unit >= DT_UNIT_COUNT)
        FAIL(DT_F_BIT(DT_F_ISA), "unit %d out of range (vec, amx)", (int)a->unit);
    if (a->unit == DT_UNIT_AMX) {
        int rc = check_amx(a, t, bad, e);
        if (rc)
            return rc;
    } else {
        int rc = check_registers(a, t, bad, e);
        if (rc)
            return rc;
    }
    return check_rest(a, t, bad, e);
}

/* The AMX tile block (space/annotation.h, dt_unit): mr = 16·mt rows and nr =
 * 16·nt columns of C tiles; the kernel holds the smaller of its A (mt) and B
 * (nt) tiles and streams the other through at least one more register, so
 * mt·nt + min(mt, nt) + 1 tile registers of 8.  The stream sketch reads A in
 * place with its tile rows set to the M tile's valid rows: one tile row
 * (mt = 1). */
static int check_amx(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e)
{
    if (!dt_backend_of_unit(DT_DTYPE_BF16, a->isa, DT_UNIT_AMX))
        FAIL(DT_F_BIT(DT_F_ISA), "amx: no tile back-end on isa %s (the tiles' epilogue is avx512)",
             dt_isa_name(a->isa));
    if (!dt_target_has(t, DT_FEAT_AMX_TILE))
        FAIL(DT_F_BIT(DT_F_ISA), "amx: the target has no AMX tiles");
    if (a->mr < DT_AMX_TILE_ROWS || a->mr % DT_AMX_TILE_ROWS || a->mr > DT_ANN_MR_MAX)
        FAIL(DT_F_BIT(DT_F_MR), "amx: mr %d is not 16, 32 (tile rows of 16)", a->mr);
    if (a->nr < DT_AMX_TILE_COLS || a->nr % DT_AMX_TILE_COLS || a->nr > DT_ANN_NR_MAX)
        FAIL(DT_F_BIT(DT_F_NR), "amx: nr %d is not a multiple of 16 up to %d (tile columns)",
             a->nr, DT_ANN_NR_MAX);
    const int mt = a->mr / DT_AMX_TILE_ROWS, nt = a->nr / DT_AMX_TILE_COLS;
    const int need = mt * nt + (mt < nt ? mt : nt) + 1;
    if (need > DT_AMX_TILE_REGS)
        FAIL(DT_F_BIT(DT_F_MR) | DT_F_BIT(DT_F_NR),
             "amx: a %dx%d block of C tiles needs %d*%d + min(%d,%d) + 1 = %d tile registers > %d",
             mt, nt, mt, nt, mt, nt, need, DT_AMX_TILE_REGS);
    if (a->sketch == DT_SKETCH_STREAM && mt != 1)
        FAIL(DT_F_BIT(DT_F_MR), "amx, stream: mr %d must be 16 (A is read in place, one tile "
                                "row sized to the valid rows)", a->mr);
    if (a->sketch == DT_SKETCH_BLOCKED && a->kc % DT_AMX_TILE_K)
        FAIL(DT_F_BIT(DT_F_KC), "amx, blocked: kc %d is not a multiple of %d (a tile's K bytes)",
             a->kc, DT_AMX_TILE_K);
    if (a->unroll != 1)
        FAIL(DT_F_BIT(DT_F_UNROLL), "amx: unroll %d must be 1", a->unroll);
    if (a->prefetch != 0)
        FAIL(DT_F_BIT(DT_F_PREFETCH), "amx: prefetch %d must be 0", a->prefetch);
    if (a->store != DT_STORE_MASK)
        FAIL(DT_F_BIT(DT_F_STORE), "amx: store %s must be mask (tiles store through a scratch "
                                   "tile of their own)", dt_store_name(a->store));
    return 0;
}

/* The register tile of a vector annotation. */
static int check_registers(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e)
{
    const dt_backend *geom = dt_backend_geometry(a->isa);
    const int vl = geom->vec_floats;
    const int regs = dt_backend_vec_regs(geom, t->arch);
    const char *isa = dt_isa_name(a->isa);

    /* register tile */
    if (a->mr < 1 || a->mr > DT_ANN_MR_MAX)
        FAIL(DT_F_BIT(DT_F_MR), "mr %d out of range 1..%d", a->mr, DT_ANN_MR_MAX);
    if (a->nr < 1 || a->nr % vl)
        FAIL(DT_F_BIT(DT_F_NR), "nr %d is not a positive multiple of the vector width %d (%s)",
             a->nr, vl, isa);
    const int nv = a->nr / vl;
    if (nv > DT_ANN_NV_MAX)
        FAIL(DT_F_BIT(DT_F_NR), "nr %d is %d vectors of %d floats > %d vectors", a->nr, nv, vl,
             DT_ANN_NV_MAX);
    const int need = a->mr * nv + nv + 1;
    if (need > regs)
        FAIL(DT_F_BIT(DT_F_MR) | DT_F_BIT(DT_F_NR),
             "register tile needs mr*(nr/%d) + nr/%d + 1 = %d*%d + %d + 1 = %d vector "
             "registers > %d (%s)",
             vl, vl, a->mr, nv, nv, need, regs, isa);
    return 0;
}

/* What every unit shares: the scalar knobs, the sketch's rules, the caches. */
static int check_rest(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e)
{
    /* scalar knobs */
    if (a->unroll != 1 && a->unroll != 2 && a->unroll != 4 && a->unroll != 8)
        FAIL(DT_F_BIT(DT_F_UNROLL), "unroll %d is not 1, 2, 4 or 8", a->unroll);
    if (a->prefetch < 0 || a->prefetch > DT_ANN_PREFETCH_MAX)
        FAIL(DT_F_BIT(DT_F_PREFETCH), "prefetch %d out of range 0..%d (0 = none)", a->prefetch,
             DT_ANN_PREFETCH_MAX);
    const int cores = t->cores < 1 ? 1 : t->cores;
    if (a->threads < 1 || a->threads > cores)
        FAIL(DT_F_BIT(DT_F_THREADS), "threads %d out of range 1..%d (target cores)", a->threads,
             cores);
    if ((unsigned)a->store >= DT_STORE_COUNT)
        FAIL(DT_F_BIT(DT_F_STORE), "store %d out of range (mask, scratch)", (int)a->store);
    if ((unsigned)a->order >= DT_ORDER_COUNT)
        FAIL(DT_F_BIT(DT_F_ORDER), "order %d out of range (m_inner, n_inner)", (int)a->order);
    if ((unsigned)a->par >= DT_PAR_COUNT)
        FAIL(DT_F_BIT(DT_F_PAR), "par %d out of range (n, m, mn)", (int)a->par);
    if ((unsigned)a->sketch >= DT_SKETCH_COUNT)
        FAIL(DT_F_BIT(DT_F_SKETCH), "sketch %d out of range (blocked, stream)", (int)a->sketch);

    const char *sk = dt_sketch_name(a->sketch);
    if (a->sketch == DT_SKETCH_STREAM) {
        if (a->kc != 0)
            FAIL(DT_F_BIT(DT_F_KC), "stream: kc %d must be 0 (whole K, no K blocking)", a->kc);
        if (a->mc != 0)
            FAIL(DT_F_BIT(DT_F_MC), "stream: mc %d must be 0 (A is not packed)", a->mc);
    } else {
        if (a->kc < DT_ANN_KC_MIN || a->kc > DT_ANN_KC_MAX)
            FAIL(DT_F_BIT(DT_F_KC), "blocked: kc %d out of range %d..%d", a->kc, DT_ANN_KC_MIN,
                 DT_ANN_KC_MAX);
        if (a->kc % DT_ANN_KC_ALIGN)
            FAIL(DT_F_BIT(DT_F_KC), "blocked: kc %d is not a multiple of %d", a->kc,
                 DT_ANN_KC_ALIGN);
        if (a->mc < 1 || a->mc % a->mr)
            FAIL(DT_F_BIT(DT_F_MC) | DT_F_BIT(DT_F_MR),
                 "blocked: mc %d is not a positive multiple of mr %d", a->mc, a->mr);
        if (a->mc > DT_ANN_MC_MAX)
            FAIL(DT_F_BIT(DT_F_MC), "blocked: mc %d > %d", a->mc, DT_ANN_MC_MAX);
    }
    if (a->nc < 1 || a->nc % a->nr)
        FAIL(DT_F_BIT(DT_F_NC) | DT_F_BIT(DT_F_NR), "%s: nc %d is not a positive multiple of nr %d",
             sk, a->nc, a->nr);
    if (a->nc > DT_ANN_NC_MAX)
        FAIL(DT_F_BIT(DT_F_NC), "%s: nc %d > %d", sk, a->nc, DT_ANN_NC_MAX);

    if (a->sketch == DT_SKETCH_STREAM) {
        if (a->order != DT_ORDER_M_INNER)
            FAIL(DT_F_BIT(DT_F_ORDER), "stream: order %s must be m_inner", dt_order_name(a->order));
        return 0;
    }

    /* blocked: cache blocking */
    const uint64_t l1d = t->l1d.size ? t->l1d.size : DT_ANN_L1D_DEFAULT;
    const uint64_t l2 = t->l2.size ? t->l2.size : DT_ANN_L2_DEFAULT;
    const uint64_t kc = (uint64_t)a->kc;
    const int es = dt_ann_elem_bytes(a);
    const uint64_t ablock = (uint64_t)a->mc * kc * (uint64_t)es;
    if (ablock > DT_ANN_A_STACK_MAX)
        FAIL(DT_F_BIT(DT_F_MC) | DT_F_BIT(DT_F_KC),
             "blocked: packed A block mc*kc*%d = %d*%d*%d = %" PRIu64 " bytes > %" PRIu64
             " (1 MiB, it lives on the thread's stack)",
             es, a->mc, a->kc, es, ablock, DT_ANN_A_STACK_MAX);
    if (ablock > l2)
        FAIL(DT_F_BIT(DT_F_MC) | DT_F_BIT(DT_F_KC),
             "blocked: packed A block mc*kc*%d = %d*%d*%d = %" PRIu64 " bytes > L2 %" PRIu64
             " bytes",
             es, a->mc, a->kc, es, ablock, l2);
    if (a->order == DT_ORDER_M_INNER) {
        const uint64_t bpanel = kc * (uint64_t)a->nr * (uint64_t)es;
        if (bpanel > l1d)
            FAIL(DT_F_BIT(DT_F_KC) | DT_F_BIT(DT_F_NR) | DT_F_BIT(DT_F_ORDER),
                 "blocked, m_inner: B micro-panel kc*nr*%d = %d*%d*%d = %" PRIu64
                 " bytes > L1d %" PRIu64 " bytes",
                 es, a->kc, a->nr, es, bpanel, l1d);
    } else {
        const uint64_t apanel = kc * (uint64_t)a->mr * (uint64_t)es;
        if (apanel > l1d)
            FAIL(DT_F_BIT(DT_F_KC) | DT_F_BIT(DT_F_MR) | DT_F_BIT(DT_F_ORDER),
                 "blocked, n_inner: A micro-panel kc*mr*%d = %d*%d*%d = %" PRIu64
                 " bytes > L1d %" PRIu64 " bytes",
                 es, a->kc, a->mr, es, apanel, l1d);
        const uint64_t bblock = kc * (uint64_t)a->nc * (uint64_t)es;
        if (bblock > l2)
            FAIL(DT_F_BIT(DT_F_KC) | DT_F_BIT(DT_F_NC) | DT_F_BIT(DT_F_ORDER),
                 "blocked, n_inner: B block kc*nc*%d = %d*%d*%d = %" PRIu64 " bytes > L2 %" PRIu64
                 " bytes",
                 es, a->kc, a->nc, es, bblock, l2);
    }
    return 0;
}

int dt_annotation_validate(const dt_annotation *a, const dt_target *t, dt_err *e)
{
    return dt_annotation_check(a, t, NULL, e);
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
