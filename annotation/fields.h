/* The fields of an annotation by index and the fixed limits of the
 * annotation space, shared by the search space (space/) and the units'
 * rules of the back-ends (backends/unit.h).  docs/search-space.md
 * documents every limit and rule. */
#ifndef DT_ANNOTATION_FIELDS_H
#define DT_ANNOTATION_FIELDS_H

#include <stdint.h>

#include "annotation/annotation.h"
#include "common/error.h"

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
/* the channel sketch's unroll: the widest window row whose taps a tile
 * holds (its generated tiles cover window widths 1..unroll) */
#define DT_ANN_CH_UNROLL_MAX 8
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

/* Field f of a, as an int (enums by value); and the reverse. */
int dt_ann_get(const dt_annotation *a, int f);
void dt_ann_set(dt_annotation *a, int f, int v);

/* A rule broken: *bad (when not NULL) gets the fields involved, e the
 * reason; returns DT_EINVAL.  For rule functions with (…, unsigned *bad,
 * dt_err *e) parameters: the search space's and a unit's (backends/unit.h). */
#define DT_ANN_FAIL(mask, ...)                                                                 \
    do {                                                                                       \
        if (bad)                                                                               \
            *bad = (mask);                                                                     \
        return dt_errf(e, DT_EINVAL, __VA_ARGS__);                                             \
    } while (0)

#endif
