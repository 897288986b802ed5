/* Private to space/annotation*.c: the fixed limits of the annotation space
 * and the validation routine that also says which fields broke a rule (used
 * by sampling, mutation and crossover repair).  docs/search-space.md
 * documents every limit and rule. */
#ifndef DT_SPACE_ANNOTATION_INTERNAL_H
#define DT_SPACE_ANNOTATION_INTERNAL_H

#include <stdint.h>

#include "space/annotation.h"

/* Target-independent limits (validate and from_json share them). */
#define DT_ANN_MR_MAX 32
#define DT_ANN_NV_MAX 8              /* nr / VL */
#define DT_ANN_NR_MAX (DT_ANN_NV_MAX * 16) /* widest vector: 16 floats */
#define DT_ANN_KC_MIN 8
#define DT_ANN_KC_MAX 4096
#define DT_ANN_KC_ALIGN 4
#define DT_ANN_MC_MAX 1024
#define DT_ANN_NC_MAX 8192
#define DT_ANN_PREFETCH_MAX 64
/* AMX tiles (palette 1): 8 registers of 16 rows × 64 bytes; a C tile is
 * 16 × 16 f32/s32, an A tile's row 64 bytes of K (32 bf16, 64 u8). */
#define DT_AMX_TILE_REGS 8
#define DT_AMX_TILE_ROWS 16
#define DT_AMX_TILE_COLS 16
#define DT_AMX_TILE_K 64
#define DT_ANN_A_STACK_MAX (UINT64_C(1) << 20) /* packed A block lives on the stack */

/* Used when a target reports an absent cache level (size 0): the detection
 * defaults of docs/targets.md. */
#define DT_ANN_L1D_DEFAULT (UINT64_C(32) << 10)
#define DT_ANN_L2_DEFAULT (UINT64_C(512) << 10)

/* Field identifiers, in JSON key order. */
typedef enum {
    DT_F_SKETCH = 0,
    DT_F_ISA,
    DT_F_MR,
    DT_F_NR,
    DT_F_KC,
    DT_F_MC,
    DT_F_NC,
    DT_F_UNROLL,
    DT_F_PREFETCH,
    DT_F_STORE,
    DT_F_ORDER,
    DT_F_PAR,
    DT_F_THREADS,
    DT_F_COUNT
} dt_ann_field;
#define DT_F_BIT(f) (1u << (f))

/* Bytes per operand element in the cache rules: f32's 4 for vector
 * annotations (the widest dtype's, for every dtype), bf16's 2 for tiles
 * (int8's 1 is less). */
static inline int dt_ann_elem_bytes(const dt_annotation *a)
{
    return a->unit == DT_UNIT_AMX ? 2 : 4;
}

/* dt_annotation_validate, and on failure *bad (if not NULL) gets the
 * DT_F_BIT mask of the fields involved in the first broken rule. */
/* Field f of a, as an int (enums by value); and the reverse. */
int dt_ann_get(const dt_annotation *a, int f);
void dt_ann_set(dt_annotation *a, int f, int v);

int dt_annotation_check(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e);

#endif
