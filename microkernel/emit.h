/* Pieces of register-kernel generation that several dtypes share
 * (microkernel/dtype_*.c).  Internal to microkernel/. */
#ifndef DT_MICROKERNEL_EMIT_H
#define DT_MICROKERNEL_EMIT_H

#include "common/strbuf.h"
#include "sketch/annotation.h"

/* The end of a register kernel whose accumulators are f32 vectors named
 * c<i>_<v> (i < MR, v < nv = NR/VL) — f32, bf16, w8a32: adds C's current
 * values when accumulate; when last, pre (may be NULL) then + bias and the
 * activation dt_act; then the store of the m_valid × n_valid part (masked
 * vectors or full stores, per the annotation's store method). */
void dt_emit_store_f32(dt_strbuf *sb, const dt_annotation *a, int nv,
                       void (*pre)(dt_strbuf *sb, const dt_annotation *a, int nv));

#endif
