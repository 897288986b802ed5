/* Annotations: validation against a target.  Sampling, mutation and
 * crossover are in annotation_space.c; the values, names and JSON are
 * annotation/; a unit's own rules its back-end's (backends/unit.h).  Every rule here is documented with its reason in
 * docs/search-space.md; keep the two in step. */
#include "space/annotation.h"

#include <inttypes.h>
#include <string.h>

#include "space/annotation_internal.h"
#include "backends/backend.h"

/* ---- validation ------------------------------------------------------------ */

#define FAIL DT_ANN_FAIL

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
        FAIL(DT_F_BIT(DT_F_ISA), "unit %d out of range (%s)", (int)a->unit, dt_unit_names());
    const dt_unit_hooks *h = dt_unit_hooks_of(a->unit);
    if (h->check) {
        int rc = h->check(a, t, bad, e);
        if (rc)
            return rc;
    } else {
        int rc = check_registers(a, t, bad, e);
        if (rc)
            return rc;
    }
    return check_rest(a, t, bad, e);
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
    if (a->sketch == DT_SKETCH_CHANNEL ? a->unroll < 1 || a->unroll > DT_ANN_CH_UNROLL_MAX
                                       : a->unroll != 1 && a->unroll != 2 && a->unroll != 4 &&
                                             a->unroll != 8)
        FAIL(DT_F_BIT(DT_F_UNROLL), "unroll %d is not %s", a->unroll,
             a->sketch == DT_SKETCH_CHANNEL ? "1..8 (channel: the widest window row whose taps "
                                              "a tile holds)"
                                            : "1, 2, 4 or 8");
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
    if ((unsigned)a->sketch >= DT_SKETCH_ALL)
        FAIL(DT_F_BIT(DT_F_SKETCH), "sketch %d out of range (blocked, stream, channel)",
             (int)a->sketch);

    const char *sk = dt_sketch_name(a->sketch);
    if (a->sketch == DT_SKETCH_CHANNEL) {
        /* vectors along the output channels: f32 FMAs on values widened as
         * they are loaded, whatever the dtype's own unit */
        if (a->unit != DT_UNIT_VEC)
            FAIL(DT_F_BIT(DT_F_ISA), "channel: unit %s must be vec (the channel kernels widen "
                 "every dtype to f32 lanes)", dt_unit_name(a->unit));
        if (a->prefetch != 0 && a->prefetch != 1)
            FAIL(DT_F_BIT(DT_F_PREFETCH), "channel: prefetch %d must be 0 or 1 (1: each tile "
                 "prefetches into L2 the input rows the next output row adds)", a->prefetch);
        /* the tile's sums, `unroll` taps' weights and the input column */
        const dt_backend *geom = dt_backend_geometry(a->isa);
        const int nv = a->nr / geom->vec_floats, regs = dt_backend_vec_regs(geom, t->arch);
        if ((a->mr + a->unroll) * nv + 1 > regs)
            FAIL(DT_F_BIT(DT_F_MR) | DT_F_BIT(DT_F_NR) | DT_F_BIT(DT_F_UNROLL),
                 "channel: (mr + unroll)*(nr/%d) + 1 = (%d + %d)*%d + 1 = %d vector registers "
                 "> %d (%s)", geom->vec_floats, a->mr, a->unroll, nv,
                 (a->mr + a->unroll) * nv + 1, regs, dt_isa_name(a->isa));
    }
    if (a->sketch != DT_SKETCH_BLOCKED) {
        if (a->kc != 0)
            FAIL(DT_F_BIT(DT_F_KC), "%s: kc %d must be 0 (whole K, no K blocking)", sk, a->kc);
        if (a->mc != 0)
            FAIL(DT_F_BIT(DT_F_MC), "%s: mc %d must be 0 (A is not packed)", sk, a->mc);
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

    if (a->sketch != DT_SKETCH_BLOCKED) { /* no cache blocks (channel: both orders) */
        if (a->sketch == DT_SKETCH_STREAM && a->order != DT_ORDER_M_INNER)
            FAIL(DT_F_BIT(DT_F_ORDER), "%s: order %s must be m_inner", sk,
                 dt_order_name(a->order));
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

