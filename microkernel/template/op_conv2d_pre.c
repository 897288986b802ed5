#if DT_OP_CONV2D
/* ---- conv2d: the implicit A (microkernel/template/op_conv2d_pre.c) ---------
 * One group's A[i][k], i = (n·OH + oh)·OW + ow, k = (r·S + s)·Cg + c, is
 * X[n][oh·sh − pt + r·dh][ow·sw − pl + s·dw][c0 + c] of the
 * NHWC image (C channels a pixel, the group's Cg from c0), or the padding
 * value outside it (0; int8: its zero point, the real 0).  Along k a row is
 * runs of Cg contiguous channels, one per (r, s). */
typedef struct dt_asrc {
    const dt_ta *x;
    int64_t H, W, C, Cg, c0, R, S, OH, OW;
    int64_t sh, sw, pt, pl, dh, dw; /* strides, top and left pads, dilations */
    int64_t pr;                     /* the right pad (the transposed tiles' ring) */
    dt_ta zero;
} dt_asrc;

/* A[i][k0, k0 + kc) into dst */
static void dt_gather_row(const dt_asrc *as, int64_t i, int64_t k0, int64_t kc, dt_ta *dst)
{
    const int64_t ow = i % as->OW, t = i / as->OW, oh = t % as->OH, n = t / as->OH;
    const int64_t end = k0 + kc;
    int64_t seg = k0 / as->Cg, c = k0 % as->Cg;
    for (int64_t k = k0; k < end; seg++, c = 0) {
        const int64_t r = seg / as->S, s = seg % as->S;
        const int64_t len = DT_MIN(as->Cg - c, end - k);
        const int64_t ih = oh * as->sh - as->pt + r * as->dh;
        const int64_t iw = ow * as->sw - as->pl + s * as->dw;
        if (ih >= 0 && ih < as->H && iw >= 0 && iw < as->W) {
            memcpy(dst, as->x + ((n * as->H + ih) * as->W + iw) * as->C + as->c0 + c,
                   (size_t)len * sizeof(dt_ta));
        } else {
            for (int64_t j = 0; j < len; j++)
                dst[j] = as->zero;
        }
        dst += len;
        k += len;
    }
}

#if DT_SKETCH_STREAM
/* The stream sketch's loops over rows [m0, m1) × columns [n0, n1) of the
 * implicit A (op_conv2d.c; driver.c's dt_gemm_range calls it). */
static void dt_stream_implicit(const dt_asrc *as, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                               int64_t K, const dt_tb *bp, const float *bias, dt_tc *y,
                               int64_t ldy, const dt_qctx *q);
#endif
#endif /* DT_OP_CONV2D */
