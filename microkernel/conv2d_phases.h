/* A transposed convolution (conv2d transpose=1, ops/op_conv2d.c) as
 * stride_h·stride_w forward ones, one per output phase: the output pixels
 * (oh, ow) with oh ≡ ph (mod sh), ow ≡ pw (mod sw) receive input pixels
 * through the taps r with r·dh ≡ ph + pt (mod sh) only (likewise along the
 * width), so a phase is a forward convolution of X with that subset of W's
 * taps, reversed, at stride 1 — no zero-stuffed input, no scatter of
 * partial sums, every product one that lands in the output (the sub-pixel
 * decomposition).  Its pixels are every sh-th row and sw-th column of Y:
 * the host computes them into a scratch image and copies them there
 * (microkernel/op_conv2d.c), the kernels themselves being forward ones.
 *
 * The host's packing and its calls read the same phases from here, so the
 * packed layout — phase after phase, each the forward convolution's
 * (groups regions of its K/groups × Rp·Sp·C/groups weights) — and the calls
 * agree by construction. */
#ifndef DT_MICROKERNEL_CONV2D_PHASES_H
#define DT_MICROKERNEL_CONV2D_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "ops/op.h"

/* One axis of a phase. */
typedef struct dt_conv_phase_axis {
    int64_t first;  /* its first output pixel (the phase: 0 .. stride − 1) */
    int64_t stride; /* the step between its output pixels: the axis's stride, or, over an
                     * input of one pixel (whose output does not depend on it), the output's
                     * extent (every phase one pixel, a tap at most) */
    int64_t count;  /* its output pixels (first, first + stride, …); 0: none */
    int64_t taps;   /* its window (>= 1) */
    int64_t r_last; /* W's tap of window position 0 (the reversed taps' last); -1: the
                     * window is one zero tap (no input lands on the phase) */
    int64_t r_step; /* W's taps from window position j to j + 1: − r_step */
    int64_t dil;    /* the forward convolution's dilation */
    int64_t pad0, pad1; /* its pads (>= 0) */
    int64_t crop;   /* input pixels before the ones it reads */
    int64_t used;   /* input pixels it reads from crop on */
} dt_conv_phase_axis;

typedef struct dt_conv_phase {
    dt_conv_phase_axis h, w;
} dt_conv_phase;

/* Phases of c (c->transpose): the product of the axes' strides (as
 * dt_conv_phase_axis.stride takes them). */
int64_t dt_conv_phase_count(const dt_conv_geom *c);
/* Phase p (p < count; ph = p / the width's stride, pw = p % it). */
void dt_conv_phase_at(const dt_conv_geom *c, int64_t p, dt_conv_phase *ph);
/* The kernel geometry (DT_CONV_GEOM_LEN values) of phase ph's forward
 * convolution over one image of ph's used rows and columns. */
void dt_conv_phase_geom(const dt_conv_geom *c, const dt_conv_phase *ph, int64_t *geom);
/* 1 when one forward convolution computes every phase: each reads the same
 * window of X (its taps, pads, crops and output counts alike: a window of
 * the stride's size, unpadded — a decoder's 2×2 stride 2), one group; its
 * output channels are the phases' side by side, K a phase, in phase order,
 * its weights theirs stacked likewise.  Else each phase is a call. */
int dt_conv_phases_merge(const dt_conv_geom *c);
/* Phase ph's weights [K][taps_h][taps_w][C/groups] from W [K][R][S][C/groups],
 * elements of esize bytes (a zero tap: zero bytes). */
void dt_conv_phase_weights(const dt_conv_geom *c, const dt_conv_phase *ph, const void *W,
                           size_t esize, void *Wp);

#endif
