/* AMX's unit (backends/unit.h): the tile rules of its annotations —
 * check, sample, mutate, crossover — and its register pressure, which the
 * search space and the cost model ask for through dt_unit_hooks_of.  Every
 * rule is documented in docs/search-space.md. */
#include "backends/amx/amx.h"

#include <string.h>

#include "annotation/fields.h"
#include "backends/backend.h"
#include "common/check.h"

#define FAIL DT_ANN_FAIL
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef dt_ann_kit space;

/* The AMX tile block (annotation/annotation.h, dt_unit): mr = 16·mt rows and nr =
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

/* ---- sampling ------------------------------------------------------------------
 * The tile block (mt × nt C tiles) from the shapes that fit the 8 tile
 * registers (dt_annotation_check), kc from multiples of the tile's K, mc and
 * nc as for vectors; unroll, prefetch and store are fixed. */

static const int amx_kc_list[] = {64, 128, 192, 256, 384, 512, 768, 1024};

/* A tile block for the sketch: (mt, nt) drawn among those that fit. */
static void draw_amx_block(dt_rng *r, dt_sketch_kind sketch, dt_annotation *a)
{
    static const int blocks[][2] = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {2, 1}, {2, 2}};
    int n = sketch == DT_SKETCH_STREAM ? 6 : COUNT(blocks);
    int i = dt_rng_below(r, n);
    a->mr = DT_AMX_TILE_ROWS * blocks[i][0];
    a->nr = DT_AMX_TILE_COLS * blocks[i][1];
}

static int draw_amx_kc(dt_rng *r, const space *s, const dt_annotation *a)
{
    int cap = dt_ann_kc_cap(s, a), n = 0;
    while (n < COUNT(amx_kc_list) && amx_kc_list[n] <= cap)
        n++;
    return n ? amx_kc_list[dt_rng_below(r, n)] : 0;
}

static int sample_once_amx(dt_rng *r, const space *s, int sketch, int threads, dt_annotation *a)
{
    memset(a, 0, sizeof *a);
    a->unit = DT_UNIT_AMX;
    a->sketch = (dt_sketch_kind)(sketch >= 0 ? sketch : dt_rng_below(r, DT_SKETCH_COUNT));
    a->isa = DT_ISA_AVX512;
    a->threads = threads > 0 ? threads : 1 + dt_rng_below(r, s->cores);
    a->unroll = 1;
    a->store = DT_STORE_MASK;
    a->par = (dt_par_axis)dt_rng_below(r, DT_PAR_COUNT);
    a->order = a->sketch == DT_SKETCH_BLOCKED ? (dt_loop_order)dt_rng_below(r, DT_ORDER_COUNT)
                                              : DT_ORDER_M_INNER;
    draw_amx_block(r, a->sketch, a);
    if (a->sketch == DT_SKETCH_BLOCKED) {
        a->kc = draw_amx_kc(r, s, a);
        if (!a->kc)
            return -1;
        a->mc = dt_ann_draw_mult(r, a->mr, dt_ann_mc_cap(s, a), dt_ann_mc_targets, DT_ANN_TARGETS);
    }
    a->nc = dt_ann_draw_mult(r, a->nr, dt_ann_nc_cap(s, a), dt_ann_nc_targets, DT_ANN_TARGETS);
    return 0;
}

static void mutate_once_amx(dt_rng *r, const space *s, dt_annotation *a)
{
    switch (dt_rng_below(r, 6)) {
    case 0: draw_amx_block(r, a->sketch, a); break;
    case 1:
        if (a->sketch == DT_SKETCH_BLOCKED)
            a->kc = draw_amx_kc(r, s, a);
        break;
    case 2:
        if (a->sketch == DT_SKETCH_BLOCKED)
            a->mc = dt_ann_draw_mult(r, a->mr, dt_ann_mc_cap(s, a), dt_ann_mc_targets, DT_ANN_TARGETS);
        break;
    case 3: a->nc = dt_ann_draw_mult(r, a->nr, dt_ann_nc_cap(s, a), dt_ann_nc_targets, DT_ANN_TARGETS); break;
    case 4:
        if (a->sketch == DT_SKETCH_BLOCKED && dt_rng_below(r, 2))
            a->order = (dt_loop_order)((a->order + 1) % DT_ORDER_COUNT);
        else
            a->par = (dt_par_axis)((a->par + 1 + dt_rng_below(r, DT_PAR_COUNT - 1)) % DT_PAR_COUNT);
        break;
    default: a->threads = 1 + dt_rng_below(r, s->cores); break;
    }
    /* a new block may leave mc and nc off its multiples: refit them */
    if (a->sketch == DT_SKETCH_BLOCKED && a->mc % a->mr)
        a->mc = dt_ann_refit_mult(a->mc, a->mr, dt_ann_mc_cap(s, a));
    if (a->nc % a->nr)
        a->nc = dt_ann_refit_mult(a->nc, a->nr, dt_ann_nc_cap(s, a));
}

/* Each of the tile block, kc, mc, nc, par, order and threads from one parent
 * or the other (the search space keeps a valid mix, else a parent). */
static void cross_once_amx(dt_rng *r, const dt_annotation *a, const dt_annotation *b,
                           dt_annotation *out)
{
    dt_annotation c = *a;
    if (dt_rng_below(r, 2)) {
        c.mr = b->mr;
        c.nr = b->nr;
    }
    if (dt_rng_below(r, 2))
        c.kc = b->kc;
    if (dt_rng_below(r, 2))
        c.mc = b->mc;
    if (dt_rng_below(r, 2))
        c.nc = b->nc;
    if (dt_rng_below(r, 2))
        c.par = b->par;
    if (dt_rng_below(r, 2))
        c.order = b->order;
    if (dt_rng_below(r, 2))
        c.threads = b->threads;
    *out = c;
}

static int target_ok_amx(const dt_target *t, const char **why)
{
    if (!dt_target_has(t, DT_FEAT_AMX_TILE) || !dt_backend_isa_admits(t, DT_ISA_AVX512)) {
        *why = "the target has no AMX tiles";
        return 0;
    }
    return 1;
}

/* tile registers of 8: C tiles, the held set, one more */
static double reg_pressure_amx(const dt_annotation *a)
{
    double mt = a->mr / 16.0, nt = a->nr / 16.0;
    return (mt * nt + (mt < nt ? mt : nt) + 1) / 8;
}

const dt_unit_hooks dt_unit_amx = {
    .unit = DT_UNIT_AMX,
    .elem_bytes = 2,
    .tile = 1,
    .isa = DT_ISA_AVX512,
    .target_ok = target_ok_amx,
    .check = check_amx,
    .sample_once = sample_once_amx,
    .mutate_once = mutate_once_amx,
    .cross_once = cross_once_amx,
    .reg_pressure = reg_pressure_amx,
};
