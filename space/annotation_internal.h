/* Private to space/annotation*.c: the validation routine that also says
 * which fields broke a rule (used by sampling, mutation and crossover
 * repair), and the cache rules' element size of a unit. */
#ifndef DT_SPACE_ANNOTATION_INTERNAL_H
#define DT_SPACE_ANNOTATION_INTERNAL_H

#include "annotation/fields.h"
#include "backends/unit.h"
#include "space/annotation.h"

/* Bytes per operand element in the cache rules: the unit's (f32's 4 for
 * vector annotations, the widest dtype's; bf16's 2 for tiles). */
static inline int dt_ann_elem_bytes(const dt_annotation *a)
{
    return dt_unit_hooks_of(a->unit)->elem_bytes;
}

/* dt_annotation_validate, and on failure *bad (if not NULL) gets the
 * DT_F_BIT mask of the fields involved in the first broken rule. */
int dt_annotation_check(const dt_annotation *a, const dt_target *t, unsigned *bad, dt_err *e);

#endif
