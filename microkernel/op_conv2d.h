/* conv2d's micro-kernel hooks shared by its rows of hooks: the GEMM view's
 * (microkernel/op_conv2d.c) and its own channel sketch's
 * (microkernel/op_conv2d_channel.c).  Every conv2d kernel's entry point 0
 * takes the sixteen geometry values (template/op_conv2d.c). */
#ifndef DT_MICROKERNEL_OP_CONV2D_H
#define DT_MICROKERNEL_OP_CONV2D_H

#include <stddef.h>
#include <stdint.h>

#include "microkernel/loader.h"

/* Every conv2d kernel's entry points, in its row's order: the convolution,
 * the packing of W and its packed size. */
enum { DT_MK_CONV2D_SYM_CONV, DT_MK_CONV2D_SYM_PACK, DT_MK_CONV2D_SYM_PACKED_SIZE };
typedef size_t (*dt_mk_conv2d_packed_size_fn)(int64_t N, int64_t K);
typedef void (*dt_mk_conv2d_pack_fn)(int64_t N, int64_t K, const void *W, void *packed);
typedef void (*dt_mk_conv2d_pack_q_fn)(int64_t N, int64_t K, const void *W, const float *scale_b,
                                       void *packed);

/* The kernel's geometry (DT_CONV_GEOM_LEN values) from the op's dims and
 * attribute values. */
void dt_mk_conv2d_geometry(const int64_t *dims, const int *attrs, int64_t *geom);
/* One call of a conv2d kernel's entry point 0: f32, bf16 and w8a32's
 * signature; _u8 int8's (scale_a, zp_a after X). */
void dt_mk_conv2d_run(const dt_kernel *k, const dt_gemm_args *a);
void dt_mk_conv2d_run_u8(const dt_kernel *k, const dt_gemm_args *a);
/* A transposed convolution (g with dims, transpose=1; 0 otherwise) and its
 * weights as kernel k's rows pack them: its phases' forward convolutions'
 * packings one after the other (conv2d_phases.h), each in the row's own
 * regions (a group each, or the channel sketch's one of all rows); scaled:
 * int8's and w8a32's packing with scale_b. */
int dt_mk_conv2d_transposed(const dt_gemm *g);
size_t dt_mk_conv2d_transposed_size(const dt_kernel *k, const dt_gemm *g);
void dt_mk_conv2d_transposed_pack(const dt_kernel *k, const dt_gemm *g, const void *w,
                                  const float *scale_b, void *packed, int scaled);

#endif
