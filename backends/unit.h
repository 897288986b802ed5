/* Execution units and their rules (issue 44, point 1): what an annotation's
 * unit (annotation/annotation.h, dt_unit) adds to the search space's
 * common rules.  The vector units (vec, and fma: the f32 FMA on widened
 * values) follow the search space's own register-tile rules; a unit with
 * rules of its own — AMX's tiles — registers them with its back-end
 * (backends/amx/); every unit but vec is registered by the back-end that
 * brings it (fma's by backends/avx512_fma/, NULL rules), and the search space (space/annotation*.c), the cost
 * model's features and codegen ask for them here rather than naming the
 * unit.
 *
 * The hooks draw from the caller's PRNG in a fixed order and never check:
 * the search space validates every draw (dt_annotation_check) and keeps
 * only valid ones. */
#ifndef DT_BACKENDS_UNIT_H
#define DT_BACKENDS_UNIT_H

#include "annotation/annotation.h"
#include "annotation/kit.h"
#include "common/error.h"
#include "common/target.h"

typedef struct dt_unit_hooks {
    dt_unit unit;
    /* the cache rules' bytes per element: the widest operand the unit
     * packs (vector units: f32's 4, for every dtype; tiles: bf16's 2) */
    int elem_bytes;
    /* 1: a tile unit, whose register pressure is reg_pressure's (the cost
     * model's unit_amx column) */
    int tile;
    /* the isa whose geometry the unit's kit gets (tiles: their epilogue's) */
    dt_isa isa;
    /* Whether t can run the unit at all; *why gets the reason (NULL hook:
     * always).  Pure: it asks the target, it requests nothing. */
    int (*target_ok)(const dt_target *t, const char **why);
    /* The unit's register rules in place of the vector register tile's
     * (NULL: the vector rules); DT_ANN_FAIL on a broken one. */
    int (*check)(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e);
    /* One draw of a complete annotation (0), or -1; NULL: the vector
     * sampler's draws with the unit set. */
    int (*sample_once)(dt_rng *r, const dt_ann_kit *k, int sketch, int threads,
                       dt_annotation *a);
    /* One or two fields of a changed (NULL: the vector mutation). */
    void (*mutate_once)(dt_rng *r, const dt_ann_kit *k, dt_annotation *a);
    /* c mixed from a and b (NULL: the vector crossover with repair). */
    void (*cross_once)(dt_rng *r, const dt_annotation *a, const dt_annotation *b,
                       dt_annotation *c);
    /* Registers in use / registers of the unit, for a tile unit. */
    double (*reg_pressure)(const dt_annotation *a);
} dt_unit_hooks;

/* The hooks of unit u (the vector rules' hooks for vec), from the back-end
 * registry; u must be in range (checked: an invariant, callers validate). */
const dt_unit_hooks *dt_unit_hooks_of(dt_unit u);

#endif
