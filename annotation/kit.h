/* What the rules of the annotation space need to know of a target for one
 * unit, and the arithmetic every unit's sampler shares: the caps the cache
 * rules put on kc, mc and nc, and the draws of block multiples.  Shared by
 * the search space (space/annotation_space.c) and the units' rules of the
 * back-ends (backends/unit.h); every rule is documented in
 * docs/search-space.md. */
#ifndef DT_ANNOTATION_KIT_H
#define DT_ANNOTATION_KIT_H

#include <stdint.h>

#include "annotation/annotation.h"
#include "common/target.h"

typedef struct dt_ann_kit {
    const dt_target *t;
    int vl, regs, cores; /* the unit's geometry: f32 lanes, vector registers */
    int es;              /* the cache rules' bytes per element (the unit's) */
    uint64_t l1d, l2, amax; /* amax: packed A block limit, min(1 MiB, L2) */
} dt_ann_kit;

void dt_ann_kit_init(dt_ann_kit *k, const dt_target *t, int vl, int regs, int es);

/* Largest kc (multiple of 4) the cache rules allow with a's mr, nr, order
 * and its mc and nc (the smallest legal ones, mr and nr, when unset). */
int dt_ann_kc_cap(const dt_ann_kit *k, const dt_annotation *a);
/* Largest mc (multiple of mr) the rules allow with a's kc. */
int dt_ann_mc_cap(const dt_ann_kit *k, const dt_annotation *a);
/* Largest nc (multiple of nr) the rules allow with a's kc and order. */
int dt_ann_nc_cap(const dt_ann_kit *k, const dt_annotation *a);

/* unit*k <= cap (cap >= unit): 7 times in 8 k is the nearest whole multiple
 * of one of the targets, else any k. */
int dt_ann_draw_mult(dt_rng *r, int unit, int cap, const int *targets, int ntargets);
/* k*unit near old (same multiple, rounded) that fits cap; 0 if none. */
int dt_ann_refit_mult(int old, int unit, int cap);

/* mc = mr*k and nc = nr*k with k the nearest whole multiple of these */
#define DT_ANN_TARGETS 10
extern const int dt_ann_mc_targets[DT_ANN_TARGETS];
extern const int dt_ann_nc_targets[DT_ANN_TARGETS];

#endif
