/* The search space over annotations (DESIGN.md, "CPU micro-kernels"): the
 * rules a valid annotation follows on a target, sampling, mutation and
 * crossover.  The values themselves are annotation/annotation.h; a unit's
 * own rules (AMX tiles) its back-end's (backends/unit.h), which the space
 * asks through the back-end registry. */
#ifndef DT_SPACE_ANNOTATION_H
#define DT_SPACE_ANNOTATION_H

#include "annotation/annotation.h"

/* Checks a against the target: ISA supported, tile fits the vector register
 * file (accumulators + NR/VL B vectors + 1 broadcast <= registers), blocks
 * fit the cache level they are meant for, values in range.  DT_EINVAL with
 * the first reason ("mr*nr/16 + ... = 35 vector registers > 32") otherwise. */
int dt_annotation_validate(const dt_annotation *a, const dt_target *t, dt_err *e);

/* Samples a valid annotation for the target: sketch chosen uniformly unless
 * sketch >= 0 pins it; threads fixed to `threads` when > 0.  Same seed, same
 * sequence.  Fails only if no valid annotation is found in many tries. */
int dt_annotation_sample(dt_rng *r, const dt_target *t, int sketch, int threads,
                         dt_annotation *out, dt_err *e);
/* dt_annotation_sample for an execution unit: DT_UNIT_VEC is exactly
 * dt_annotation_sample (same draws); DT_UNIT_AMX samples tile annotations
 * (the target must have AMX tiles: DT_EUNSUPPORTED otherwise). */
int dt_annotation_sample_unit(dt_rng *r, const dt_target *t, dt_unit unit, int sketch,
                              int threads, dt_annotation *out, dt_err *e);
/* A sample for a workload of dtype d: the back-end row drawn uniformly
 * among those the tuner searches on t (backends/backend.h,
 * dt_backend_searched: the row at the isa in use; for bf16 and int8 on
 * their own instruction also their widened portable row and, where AMX is
 * usable, their tile row), then an annotation of that row's isa and unit.
 * With one row it draws nothing more than dt_annotation_sample (same
 * sequence). */
int dt_annotation_sample_dtype(dt_rng *r, const dt_target *t, int dtype, int sketch, int threads,
                               dt_annotation *out, dt_err *e);
/* Changes one or two fields (tile sizes most often, then unroll, prefetch,
 * parallel axis, store, order) into a valid annotation. */
int dt_annotation_mutate(dt_rng *r, const dt_target *t, const dt_annotation *in,
                         dt_annotation *out, dt_err *e);
/* Each field from one parent or the other (same sketch and isa required),
 * repaired into a valid annotation. */
int dt_annotation_crossover(dt_rng *r, const dt_target *t, const dt_annotation *a,
                            const dt_annotation *b, dt_annotation *out, dt_err *e);

#endif
