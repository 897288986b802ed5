/* The register-kernel emitters of the back-end rows and the pieces of
 * register-kernel generation that they share (backends/vector/emit*.c,
 * backends/amx/emit_amx.c).  Internal to backends/. */
#ifndef DT_BACKENDS_VECTOR_EMIT_H
#define DT_BACKENDS_VECTOR_EMIT_H

#include "common/strbuf.h"
#include "annotation/annotation.h"
#include "backends/backend.h"

/* The register-kernel emitters of the back-end rows
 * (the rows of each back-end folder): f32's and w8a32's for each of their rows;
 * bf16's and int8's portable one (widening to 32-bit lanes) and their dot
 * product one (vdpbf16ps pairs, vpdpbusd quads). */
/* seg (the stream sketch of an op whose A is implicit, mk_op.h's
 * segmented_a): the kernel sums segments of A (below); an emitter without
 * them ignores it. */
void dt_mk_ukr_f32(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);
void dt_mk_ukr_w8a32(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);
void dt_mk_ukr_bf16_portable(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);
void dt_mk_ukr_bf16_dp(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);
void dt_mk_ukr_int8_portable(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);
void dt_mk_ukr_int8_dp(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);
/* The tile rows' kernel (backends/amx/emit_amx.c): tdpbf16ps, tdpbusd. */
void dt_mk_ukr_amx(dt_strbuf *sb, const dt_backend *b, const dt_annotation *a, int seg);

/* A register kernel's signature and opening brace, the same for every
 * dtype: `static … void dt_ukr(int64_t kc, const TA *restrict a, int64_t lda,
 * int a_rows, const TB *restrict b, TC *restrict c, …, const dt_qctx *q,
 * int64_t col)` with the element types given (f32 names float; the others
 * their types block's dt_ta, dt_tb, dt_tc).
 *
 * With seg, a segmented kernel instead: `#define DT_UKR_SEG 1` and dt_ukr_seg,
 * whose A after lda is `int64_t nseg, int64_t lds`: the tile sums nseg
 * segments of kc, segment s's rows at a + s·lds (row stride lda), its B
 * panel after the previous one's kc (the K of one window row of a
 * convolution each, read from the image in place, so the accumulators stay
 * in registers over the whole window); dt_emit_seg_begin/end wrap the K
 * loop, and dt_emit_ukr_seg_call then defines dt_ukr as its one-segment
 * call, so the driver's tiles stay as they are.  K of a segment: whole K
 * groups (its B panel starts on one). */
void dt_emit_ukr_signature(dt_strbuf *sb, const char *ta, const char *tb, const char *tc,
                           int seg);
void dt_emit_seg_begin(dt_strbuf *sb, int seg);
void dt_emit_seg_end(dt_strbuf *sb, const dt_annotation *a, int seg);
void dt_emit_ukr_seg_call(dt_strbuf *sb, const char *ta, const char *tb, const char *tc, int seg);

/* The start of a register kernel's body, after its signature: the MR×NV
 * accumulators c<i>_<v> set to zero (f32 vectors), then in the stream
 * sketch one row pointer a<i> of type `atype *` per tile row (rows past
 * a_rows re-read the last valid row: computed in full, never stored), or in
 * the blocked sketch the unused lda and a_rows voided. */
void dt_emit_ukr_start(dt_strbuf *sb, const dt_annotation *a, int nv, const char *atype);

/* One K step u (0..UNROLL-1) of a register kernel (a dtype's generator). */
typedef void (*dt_emit_step_fn)(dt_strbuf *sb, const dt_annotation *a, int nv, int u,
                                int stream);
/* The K loop over kc: UNROLL steps per iteration, then the remainder one
 * step at a time. */
void dt_emit_k_loop(dt_strbuf *sb, const dt_annotation *a, int nv, int stream,
                    dt_emit_step_fn step);

/* One K step u of a stream kernel over the tile's rows [r0, r1) only (its
 * B row k at b + k·NR; the rows' pointers a<i>). */
typedef void (*dt_emit_rows_step_fn)(dt_strbuf *sb, const dt_annotation *a, int nv, int u,
                                     int r0, int r1);
/* The segmented kernel's tile at the sides of an image, for a dtype whose
 * accumulators are f32 vectors (pre as dt_emit_store_f32's): `#define
 * DT_UKR_SEG_EDGE 1` and dt_ukr_seg_edge(kc, a, lda, nseg, lds, klo, khi,
 * b, c, ldc, n_valid, bias, q, col) — MR rows, never accumulating, always
 * last; in every segment row 0 skips the first klo elements and row MR − 1
 * those from khi (0 ≤ klo ≤ khi ≤ kc): a border tile's first and last
 * pixels leave out their taps left and right of the image, which are never
 * read, so the tile runs in place instead of on a padded copy
 * (template/op_conv2d.c, dt_stream_rows).  K elements, not K groups: for
 * dtypes whose K step is one element. */
void dt_emit_ukr_seg_edge(dt_strbuf *sb, const dt_annotation *a, int nv, const char *ta,
                          const char *tb, const char *tc, dt_emit_rows_step_fn step,
                          void (*pre)(dt_strbuf *sb, const dt_annotation *a, int nv));

/* The end of a register kernel whose accumulators are f32 vectors named
 * c<i>_<v> (i < MR, v < nv = NR/VL) — f32, bf16, w8a32: adds C's current
 * values when accumulate; when last, pre (may be NULL) then + bias and the
 * activation dt_act; then the store of the m_valid × n_valid part (masked
 * vectors or full stores, per the annotation's store method). */
void dt_emit_store_f32(dt_strbuf *sb, const dt_annotation *a, int nv,
                       void (*pre)(dt_strbuf *sb, const dt_annotation *a, int nv));

/* The end of int8's register kernels, whose accumulators c<i>_<v> are s32
 * vectors (dt_acc): adds C's partial s32 sums when accumulate; when last,
 * compensates the zero point, dequantizes, bias and activation; stores the
 * bits (backends/vector/emit_int8.c). */
void dt_emit_store_s32(dt_strbuf *sb, const dt_annotation *a, int nv, int vl);

#endif
