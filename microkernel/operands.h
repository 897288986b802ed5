/* Operands of one GEMM problem in a dtype (dtypes/dtype.h): what a kernel of
 * that dtype reads, in its element types, and the exact real values the
 * double reference (microkernel/reference.h) computes with.
 *
 * Every dtype's kernel result is  C = colscale[n]·Σ_k Aref·Bref + bias, then
 * the activation, where Aref and Bref are exactly representable in float:
 *   f32    Aref = A, Bref = B, no colscale;
 *   bf16   A and B rounded to bf16 (round to nearest even); Aref, Bref their
 *          values (a bf16 is a float with 16 low zero bits);
 *   int8   A u8, B s8; Aref = a − zp_a, Bref = b (small integers: the double
 *          sums are the exact s32 sums); colscale = scale_a·scale_b[n];
 *   w8a32  A f32, B s8; Aref = A, Bref = b; colscale = scale_b[n].
 * So one reference serves every dtype, and int8's is exact in the integers.
 * What is drawn follows the dtype's row (dtypes/dtype.h: its elements, its
 * quantisation layout, its math), so a new dtype of these elements needs
 * no code here.
 * The users: kernel verification, the runner's trials, `dtune bench`, the
 * tests.
 *
 * Ownership: dt_operands_make allocates every array; dt_operands_free
 * releases them (and is safe on a zeroed or half-made struct). */
#ifndef DT_MICROKERNEL_OPERANDS_H
#define DT_MICROKERNEL_OPERANDS_H

#include <stdint.h>

#include "common/error.h"
#include "dtypes/dtype.h"
#include "ops/op.h"

typedef struct dt_operands {
    dt_dtype dtype;
    dt_gemm g;        /* the problem, sizes included */
    int64_t lda;      /* A's row stride in elements (>= K); 0 for an implicit A */
    void *A;          /* [batch·M][lda] of the dtype's A type; past K: poison.  An op
                       * whose A is implicit (ops/op.h, a_row): its input */
    void *B;          /* the whole batch as g stores it, the dtype's B type (an op with
                       * b_row: as the op stores it, b_elems elements) */
    float *bias;      /* [N] */
    float *scale_b;   /* [N] per-column weight scales (int8, w8a32), else NULL */
    float scale_a;    /* int8: A's scale and zero point; else 1 and 0 */
    int32_t zp_a;
    float *Aref;      /* [batch][M][K] the real values of A that enter the sums
                       * (an implicit A: gathered from the input, 0 for padding) */
    float *Bref;      /* like B (an op storing B otherwise, ops/op.h b_row: the view's
                       * N×K gathered from it, 0 off its blocks) */
    double *colscale; /* [N] the columns' dequantization factor, or NULL */
} dt_operands;

/* Random operands for g (its sizes set) in dtype d, A with row stride lda
 * (>= g->K; elements past K hold NaN or 0xA5 bytes: a kernel must not read
 * them), from seed.  For an op whose A is implicit (g from dt_op_gemm with
 * dims, g->op->a_row), A is the op's input instead and lda is unused.  Values: f32 uniform [-1, 1); bf16 those rounded; int8
 * A u8 uniform, zp_a in [96, 160], scale_a 0.02, B s8 in [-127, 127],
 * scale_b[n] in [0.0005, 0.005); w8a32 f32 A, s8 B, those scales.
 * DT_ENOMEM, or DT_EINVAL for a dtype it does not know. */
int dt_operands_make(dt_operands *o, dt_dtype d, const dt_gemm *g, int64_t lda, uint64_t seed,
                     dt_err *e);
/* Operands for a run over many shapes (`dtune bench`): na elements of A
 * and nb of B, contiguous, every element drawn alike (a shape uses the
 * prefix it needs, whatever its layout), nn bias values and column scales;
 * wk: the K of constant weights W[nn][wk] (then nb = nn·wk), 0 for a
 * dynamic B; w8a32_bf16 needs it (its reference weights, bf16(scale_b[n]·w),
 * depend on the column).  o->g is left zero. */
int dt_operands_make_flat(dt_operands *o, dt_dtype d, int64_t na, int64_t nb, int64_t nn,
                          int64_t wk, uint64_t seed, dt_err *e);
void dt_operands_free(dt_operands *o);


/* bf16 <-> f32: round to nearest even (NaN stays NaN); exact widening. */
uint16_t dt_bf16_from_f32(float x);
float dt_bf16_to_f32(uint16_t h);

#endif
