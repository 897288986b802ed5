#if DT_OP_CONV2D
/* ---- conv2d's entry point (microkernel/template/op_conv2d.c) ---------------
 * The implicit GEMM of an NHWC convolution, one per group of channels: M =
 * N·OH·OW output pixels, N = K/G output channels, K = R·S·C/G, A gathered
 * from X block by block (the blocked sketch: into the packed panels; the
 * stream sketch reads it in place, below), never as a whole im2col.  W
 * [K][R][S][C/G] is packed once, group by group: G regions of
 * DT_FN_PACKED_SIZE(K/G, R·S·C/G) bytes, each DT_FN_PACK of its group's
 * rows (the host's hook does it, microkernel/op_conv2d.c; with one group
 * exactly dense's packing of the K×R·S·C matrix).  A 1×1, stride-1,
 * unpadded convolution is a dense layer on X's rows: A in place.
 * geom: N, H, W, C, K, R, S, stride, pad, dilation, groups, stride_w,
 * dilation_w, pad_l, pad_b, pad_r (the first stride, pad and dilation the
 * height's, pad the top's; microkernel/op_conv2d.c) (lower-case
 * names: `dtune export` renames a kernel's dt_ identifiers, so two kernels
 * of one file keep theirs apart; an upper-case DT_ name is taken for a
 * macro). */
enum { dt_cv_n, dt_cv_h, dt_cv_w, dt_cv_c, dt_cv_k, dt_cv_r, dt_cv_s, dt_cv_stride, dt_cv_pad,
       dt_cv_dil, dt_cv_groups, dt_cv_stride_w, dt_cv_dil_w, dt_cv_pad_l, dt_cv_pad_b,
       dt_cv_pad_r };

#ifndef DT_A_ZERO
#define DT_A_ZERO 0
#endif

#if DT_SKETCH_STREAM
/* The stream sketch reads A's rows in place.  With the segmented register
 * kernel (dt_ukr_seg), a dilation of 1 and window rows of whole K groups, a
 * tile's whole window is one call (dt_stream_rows, below).  Otherwise (an
 * AMX tile row, a dilated convolution, a window row that is not whole K
 * groups) A's K is runs of window positions (r, s), Cg channels each: each
 * MR-row tile is summed segment by segment, C's partial sums stored and
 * reloaded between segments, read from X itself where its rows are
 * consecutive pixels of one output row whose segment falls inside the image
 * (at a stride of sw·C), else gathered (MR × the segment: the borders).
 * A segment is a whole window row (S·C elements contiguous in X: one group,
 * dilation 1) where it starts on a whole group of the packed B (a multiple
 * of DT_KPAD: the K group, a tile's K), else one window position (Cg
 * elements, a multiple of DT_KPAD).  Otherwise whole rows are gathered in
 * chunks (about 256 KiB, whole MR tiles) and streamed over as a matrix
 * instead. */

/* Rows [i0, i0 + rows) of the segment of span window positions from p0 (in
 * one window row) lie in X at one stride: *a, *lda. */
static int dt_a_segment(const dt_asrc *as, int64_t i0, int64_t rows, int64_t p0, int64_t span,
                        const dt_ta **a, int64_t *lda)
{
    const int64_t ow = i0 % as->OW, t = i0 / as->OW, oh = t % as->OH, n = t / as->OH;
    if (ow + rows > as->OW)
        return 0;
    const int64_t ih = oh * as->sh - as->pt + p0 / as->S * as->dh;
    const int64_t iw = ow * as->sw - as->pl + p0 % as->S * as->dw;
    if (ih < 0 || ih >= as->H || iw < 0 || iw + span - 1 + (rows - 1) * as->sw >= as->W)
        return 0;
    *a = as->x + ((n * as->H + ih) * as->W + iw) * as->C + as->c0;
    *lda = as->sw * as->C;
    return 1;
}

#if DT_UKR_SEG
/* The segmented register kernel's tile (the whole K in one call: never
 * accumulating, always last); bias NR-padded or NULL.  klo > 0 or khi < kc
 * (a dtype with dt_ukr_seg_edge; rows = MR): row 0 skips each segment's
 * first klo elements, row MR − 1 those from khi. */
static void dt_tile_seg(int64_t kc, const dt_ta *a, int64_t lda, int64_t nseg, int64_t lds,
                        int64_t klo, int64_t khi, int rows, const dt_tb *b, dt_tc *y,
                        int64_t ldy, int cols, const float *bias, const dt_qctx *q, int64_t col)
{
#if DT_UKR_SEG_EDGE
    if (klo > 0 || khi < kc) {
#if DT_STORE_SCRATCH
        if (cols < NR) {
            dt_tc tile[MR * NR] __attribute__((aligned(64)));
            dt_ukr_seg_edge(kc, a, lda, nseg, lds, klo, khi, b, tile, NR, NR, bias, q, col);
            for (int r = 0; r < rows; r++)
                memcpy(y + r * ldy, tile + r * NR, (size_t)cols * sizeof(dt_tc));
            return;
        }
#endif
        dt_ukr_seg_edge(kc, a, lda, nseg, lds, klo, khi, b, y, ldy, cols, bias, q, col);
        return;
    }
#else
    (void)klo, (void)khi;
#endif
#if DT_STORE_SCRATCH
    if (rows < MR || cols < NR) {
        dt_tc tile[MR * NR] __attribute__((aligned(64)));
        dt_ukr_seg(kc, a, lda, nseg, lds, rows, b, tile, NR, MR, NR, 0, bias, 1, q, col);
        for (int r = 0; r < rows; r++)
            memcpy(y + r * ldy, tile + r * NR, (size_t)cols * sizeof(dt_tc));
        return;
    }
#endif
    dt_ukr_seg(kc, a, lda, nseg, lds, rows, b, y, ldy, rows, cols, 0, bias, 1, q, col);
}

/* Dilation 1: a window row's S·C elements are contiguous in X, and the
 * next window row is W·C further, so a tile of consecutive output pixels of
 * one output row is R segments read in place by one call of the segmented
 * kernel, its sums in registers over the whole window; the window rows
 * outside the image are skipped where the padding value is 0.  A tile whose
 * windows leave the image at the sides (the first and last tiles of an
 * output row) runs in place too where the dtype has dt_ukr_seg_edge (f32,
 * w8a32)
 * and only its first and last pixels leave it: they skip their taps
 * outside, and a row's last tile is its last MR pixels (some computed
 * again) so that its last pixel is the tile's.  Other border tiles, and
 * every tile of a grouped
 * convolution (a group's channels are not contiguous), read a copy of the
 * pixels they need instead, padding included (the padding value):
 * R·((rows − 1)·sw + S)·Cg elements against its rows·K·R·S·Cg
 * multiply-adds, so no border tile is cut short or gathered row by row.
 * Tiles end at the output row's end.  When the windows do not overlap
 * (sw > S: a strided 1×1, an STFT front end's hop over its frame) the
 * copy holds each pixel's S window positions only, rows·S·Cg elements a
 * window row, so it never grows with the stride. */

/* Whether tile copies hold each pixel's window apart (dt_copy_window). */
static int dt_copy_compact(const dt_asrc *as) { return as->sw > as->S; }

/* The pixels tile (n, oh, ow .. ow + rows) reads: R copied rows, Cg
 * channels a pixel, into buf — len = (rows − 1)·sw + S consecutive
 * pixels each, or with dt_copy_compact rows windows of S pixels one after
 * the other; returns the copied row's length in elements (the segments'
 * stride), the pixels' stride being sw·Cg, or S·Cg when compact. */
static int64_t dt_copy_window(const dt_asrc *as, int64_t n, int64_t oh, int64_t ow, int64_t rows,
                              dt_ta *buf)
{
    const int64_t Cg = as->Cg, iw0 = ow * as->sw - as->pl;
    if (dt_copy_compact(as)) {
        const int64_t lds = rows * as->S * Cg;
        for (int64_t r = 0; r < as->R; r++) {
            const int64_t ih = oh * as->sh - as->pt + r;
            for (int64_t j = 0; j < rows; j++)
                for (int64_t s = 0; s < as->S; s++) {
                    const int64_t iw = iw0 + j * as->sw + s;
                    dt_ta *dst = buf + r * lds + (j * as->S + s) * Cg;
                    if (ih < 0 || ih >= as->H || iw < 0 || iw >= as->W) {
                        for (int64_t e = 0; e < Cg; e++)
                            dst[e] = as->zero;
                    } else {
                        memcpy(dst, as->x + ((n * as->H + ih) * as->W + iw) * as->C + as->c0,
                               (size_t)Cg * sizeof(dt_ta));
                    }
                }
        }
        return lds;
    }
    const int64_t len = (rows - 1) * as->sw + as->S, lds = len * Cg;
    /* pixels [pl, pr) of a copied row are inside the image */
    const int64_t pl = DT_MIN(len, iw0 < 0 ? -iw0 : 0), right = DT_MIN(len, as->W - iw0);
    const int64_t pr = right < pl ? pl : right;
    for (int64_t r = 0; r < as->R; r++) {
        const int64_t ih = oh * as->sh - as->pt + r;
        dt_ta *dst = buf + r * lds;
        const int out = ih < 0 || ih >= as->H;
        for (int64_t e = 0; e < (out ? len : pl) * Cg; e++)
            dst[e] = as->zero;
        if (out)
            continue;
        const dt_ta *src = as->x + ((n * as->H + ih) * as->W + iw0) * as->C + as->c0;
        if (Cg == as->C)
            memcpy(dst + pl * Cg, src + pl * Cg, (size_t)((pr - pl) * Cg) * sizeof(dt_ta));
        else
            for (int64_t p = pl; p < pr; p++)
                memcpy(dst + p * Cg, src + p * as->C, (size_t)Cg * sizeof(dt_ta));
        for (int64_t e = pr * Cg; e < lds; e++)
            dst[e] = as->zero;
    }
    return lds;
}

static void dt_stream_rows(const dt_asrc *as, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                           int64_t K, const dt_tb *bp, const float *bias, dt_tc *y, int64_t ldy,
                           const dt_qctx *q)
{
    const int64_t kp = DT_KP(K), Cg = as->Cg, sk = as->S * Cg;
    const int compact = dt_copy_compact(as);
    const int64_t span = compact ? MR * as->S : (MR - 1) * as->sw + as->S;
    dt_ta *buf = (dt_ta *)malloc((size_t)(as->R * span * Cg) * sizeof(dt_ta) + 64);
    float *bpad = NULL;
    if (!buf || (bias && !(bpad = (float *)calloc((size_t)(DT_STRIPS(n1) * NR), sizeof(float)))))
        abort();
    if (bias)
        memcpy(bpad + n0, bias + n0, (size_t)(n1 - n0) * sizeof(float));
    for (int64_t jr = n0; jr < n1; jr += NR) {
        const dt_tb *b = bp + (jr / NR) * kp * NR;
        const int cols = (int)DT_MIN(NR, n1 - jr);
        for (int64_t i = m0; i < m1;) {
            const int64_t ow0 = i % as->OW, t = i / as->OW, oh = t % as->OH, n = t / as->OH;
            const int64_t end = DT_MIN(m1, i - ow0 + as->OW), ih = oh * as->sh - as->pt;
            /* the window rows [r0, r1) inside the image: the others are
             * padding, skipped — their products add nothing when the
             * padding value is 0 (int8's zero point is, only at 0: its
             * epilogue corrects by the zero point times B's whole column) */
            int64_t r0 = 0, r1 = as->R;
            if (as->zero == (dt_ta)0 && ih + as->R > 0 && ih < as->H) {
                r0 = ih < 0 ? -ih : 0;
                r1 = ih + as->R > as->H ? as->H - ih : as->R;
            }
            /* in place: one group (a window row's S·C elements contiguous) */
            const int rows_in = ih + r0 >= 0 && ih + r1 <= as->H && Cg == as->C;
            const dt_tb *br = b + r0 * sk * NR; /* K from window row r0 (whole K groups) */
            for (int64_t j = i; j < end; j += MR) {
                int64_t jt = j, rows = DT_MIN(MR, end - j);
#if DT_UKR_SEG_EDGE
                if (rows < MR && end - i >= MR) { /* the run's last MR pixels, some again */
                    jt = end - MR;
                    rows = MR;
                }
#endif
                const int64_t ow = ow0 + (jt - i), iw = ow * as->sw - as->pl;
                const int64_t iwl = iw + (rows - 1) * as->sw; /* the last pixel's first column */
                const dt_ta *a = as->x + ((n * as->H + ih + r0) * as->W + iw) * as->C + as->c0;
                int64_t lds = as->W * as->C, lda = as->sw * as->C, klo = 0, khi = sk;
                int inplace = rows_in && iw >= 0 && iwl + as->S <= as->W;
#if DT_UKR_SEG_EDGE
                /* a border tile in place where only its first pixel's window
                 * leaves the image on the left and only its last one's on the
                 * right: those pixels skip the taps outside (klo, khi), which
                 * are padding (0) and never read */
                if (!inplace && rows_in && rows == MR && as->zero == (dt_ta)0 &&
                    (MR == 1 || (iw + as->sw >= 0 && iwl - as->sw + as->S <= as->W))) {
                    klo = iw < 0 ? -iw * Cg : 0;
                    khi = iwl + as->S > as->W ? (as->W - iwl) * Cg : sk;
                    inplace = klo <= khi;
                }
#endif
                if (!inplace) {
                    klo = 0, khi = sk;
                    lds = dt_copy_window(as, n, oh, ow, rows, buf);
                    lda = compact ? sk : as->sw * Cg;
                    a = buf + r0 * lds;
                }
                dt_tile_seg(sk, a, lda, r1 - r0, lds, klo, khi, (int)rows, br,
                            y + jt * ldy + jr, ldy, cols, bpad ? bpad + jr : NULL, q, jr);
            }
            i = end;
        }
    }
    free(bpad);
    free(buf);
}
#endif

#if DT_UKR_T
/* Fewer output channels a group than a vector (f32, stride 1, dilation 1:
 * an image-to-image net's last layer — ESPCN's 9 channels, an RGB output's
 * 3 — and depthwise or other narrow grouped convolutions): along NR the
 * channels would leave most lanes idle, so a tile of output channels ×
 * output pixels instead, the pixels along the vector (dt_ukr_t).  Its B is
 * the image's rows transposed, channel by channel: each input row once
 * into a ring of R rows per thread (C × (pl + W + pr + NR) floats each,
 * the padding zero); segment (r, s) of group g is window row r's Cg
 * transposed rows from channel g·Cg, shifted by s.  Its A is the groups'
 * weights, unpacked once per thread.  The output pixels are shared among
 * the threads (every group of a pixel in one thread, so each input row is
 * transposed once per thread, not once per group). */
typedef struct dt_tring {
    int64_t wp;   /* a transposed row's length: pl + W + pr + NR */
    float *rows;  /* R + 1 slots of C × wp; slot R stays zero */
    int64_t *tag; /* the row (n·H + ih) each slot holds, −1 none */
    float *wt;    /* the weights, G·Kg × K row-major (K = R·S·Cg) */
} dt_tring;

static void dt_tring_free(dt_tring *tr)
{
    free(tr->rows);
    free(tr->tag);
    free(tr->wt);
}

/* A ring for the convolution of as whose G groups of Kg output channels
 * (K = R·S·Cg each) are packed in regions of region bytes. */
static void dt_tring_init(dt_tring *tr, const dt_asrc *as, int64_t G, int64_t Kg, int64_t K,
                          const char *packed, size_t region)
{
    tr->wp = as->W + as->pl + as->pr + NR;
    tr->rows = (float *)calloc((size_t)((as->R + 1) * as->C * tr->wp), sizeof(float));
    tr->tag = (int64_t *)malloc((size_t)as->R * sizeof(int64_t));
    tr->wt = (float *)malloc((size_t)(G * Kg * K) * sizeof(float));
    if (!tr->rows || !tr->tag || !tr->wt)
        abort();
    for (int64_t r = 0; r < as->R; r++)
        tr->tag[r] = -1;
    for (int64_t g = 0; g < G; g++) {
        const float *pk = (const float *)(const void *)(packed + (size_t)g * region);
        for (int64_t j = 0; j < Kg; j++) /* one strip (Kg < VL <= NR), KG 1 */
            for (int64_t k = 0; k < K; k++)
                tr->wt[(g * Kg + j) * K + k] = pk[k * NR + j];
    }
}

/* Where input row ih of image n lies transposed in the ring (filled if it
 * is not there): its offset from tr->rows. */
static int64_t dt_tring_row(dt_tring *tr, const dt_asrc *as, int64_t n, int64_t ih)
{
    const int64_t C = as->C, wp = tr->wp;
    if (ih < 0 || ih >= as->H)
        return as->R * C * wp;
    const int64_t slot = ih % as->R;
    float *dst = tr->rows + slot * C * wp + as->pl;
    if (tr->tag[slot] != n * as->H + ih) {
        const float *src = as->x + (n * as->H + ih) * as->W * C;
        int64_t c0 = 0;
#if DT_HAVE_TRANSPOSE
        /* VL pixels × VL channels at a time; a last partial block of pixels
         * writes zeros past W (padding, or the slack of NR) */
        for (; c0 + VL <= C; c0 += VL)
            for (int64_t iw = 0; iw < as->W; iw += VL)
                dt_transpose_block(src + iw * C + c0, C, (int)DT_MIN(VL, as->W - iw),
                                   dst + c0 * wp + iw, wp);
#endif
        for (int64_t c = c0; c < C; c++)
            for (int64_t iw = 0; iw < as->W; iw++)
                dst[c * wp + iw] = src[iw * C + c];
        tr->tag[slot] = n * as->H + ih;
    }
    return slot * C * wp;
}

/* Output pixels [m0, m1), every group: Y (row stride ldy) = conv, + bias,
 * then the activation. */
static void dt_stream_t(dt_tring *tr, const dt_asrc *as, int64_t m0, int64_t m1, int64_t G,
                        int64_t Kg, int64_t K, const float *bias, float *y, int64_t ldy)
{
    const int64_t Cg = as->Cg, wp = tr->wp, nseg = as->R * as->S;
    int64_t row[nseg], boff[nseg];
    float tile[MR * NR] __attribute__((aligned(64)));
    for (int64_t i = m0; i < m1;) {
        const int64_t ow0 = i % as->OW, t = i / as->OW, oh = t % as->OH, n = t / as->OH;
        const int64_t end = DT_MIN(m1, i - ow0 + as->OW);
        /* segment (r, s): window row r's transposed input row, shifted by s
         * (output pixel ow reads input pixel ow − pl + s: index ow + s) */
        for (int64_t r = 0; r < as->R; r++)
            row[r] = dt_tring_row(tr, as, n, oh - as->pt + r);
        for (int64_t g = 0; g < G; g++) {
            for (int64_t r = 0; r < as->R; r++)
                for (int64_t s = 0; s < as->S; s++)
                    boff[r * as->S + s] = row[r] + g * Cg * wp + s;
            for (int64_t j = i; j < end; j += NR) {
                const int64_t ow = ow0 + (j - i), px = DT_MIN(NR, end - j);
                for (int64_t ch = g * Kg; ch < (g + 1) * Kg; ch += MR) {
                    const int rows = (int)DT_MIN(MR, (g + 1) * Kg - ch);
                    dt_ukr_t(Cg, tr->wt + ch * K, K, rows, nseg, boff, tr->rows + ow, wp, tile);
                    /* bias and activation by channel, then the tile
                     * transposed into Y's pixels */
                    for (int r = 0; r < rows; r++)
                        for (int64_t v = 0; v < NR; v += VL) {
                            vf x = VLOAD(tile + r * NR + v);
                            if (bias)
                                x = x + VBCAST(bias[ch + r]);
                            VSTORE(tile + r * NR + v, dt_act(x));
                        }
                    for (int64_t p = 0; p < px; p++)
                        for (int r = 0; r < rows; r++)
                            y[(j + p) * ldy + ch + r] = tile[r * NR + p];
                }
            }
        }
        i = end;
    }
}

/* The transposed tiles' convolution, the output pixels split among nt
 * threads (whole NR tiles). */
static void dt_conv_t(const dt_asrc *as, int64_t M, int64_t G, int64_t Kg, int64_t K,
                      const char *packed, size_t region, const float *bias, float *Y, int64_t ldy,
                      int nt)
{
    const int64_t tiles = (M + NR - 1) / NR;
    if (nt > tiles)
        nt = (int)tiles;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int tid = nt > 1 ? omp_get_thread_num() : 0, n = nt > 1 ? omp_get_num_threads() : 1;
        const int64_t m0 = tiles * tid / n * NR, m1 = DT_MIN(M, tiles * (tid + 1) / n * NR);
        if (m0 < m1) {
            dt_tring tr;
            dt_tring_init(&tr, as, G, Kg, K, packed, region);
            dt_stream_t(&tr, as, m0, m1, G, Kg, K, bias, Y, ldy);
            dt_tring_free(&tr);
        }
    }
}
#endif

static void dt_stream_implicit(const dt_asrc *as, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                               int64_t K, const dt_tb *bp, const float *bias, dt_tc *y,
                               int64_t ldy, const dt_qctx *q)
{
    const int64_t kp = DT_KP(K);
#if DT_UKR_SEG
    if (as->dh == 1 && as->dw == 1 && as->S * as->Cg % DT_KPAD == 0) {
        dt_stream_rows(as, m0, m1, n0, n1, K, bp, bias, y, ldy, q);
        return;
    }
#endif
    int64_t span = 0; /* window positions a segment */
    if (as->dw == 1 && as->Cg == as->C && as->S * as->C % DT_KPAD == 0)
        span = as->S;
    else if (as->Cg % DT_KPAD == 0)
        span = 1;
    if (span) {
        const int64_t sk = span * as->Cg, nseg = as->R * as->S / span;
        dt_ta *buf = (dt_ta *)malloc((size_t)(MR * sk) * sizeof(dt_ta) + 64);
        if (!buf)
            abort();
        for (int64_t jr = n0; jr < n1; jr += NR)
            for (int64_t ir = m0; ir < m1; ir += MR) {
                const int rows = (int)DT_MIN(MR, m1 - ir);
                for (int64_t g = 0; g < nseg; g++) {
                    const dt_ta *a;
                    int64_t lda;
                    if (!dt_a_segment(as, ir, rows, g * span, span, &a, &lda)) {
                        for (int r = 0; r < rows; r++)
                            dt_gather_row(as, ir + r, g * sk, sk, buf + r * sk);
                        a = buf;
                        lda = sk;
                    }
                    dt_tile(sk, a, lda, rows, bp + (jr / NR) * kp * NR + g * sk * NR,
                            y + ir * ldy + jr, ldy, (int)DT_MIN(NR, n1 - jr), g > 0,
                            bias ? bias + jr : NULL, g == nseg - 1, q, jr);
                }
            }
        free(buf);
        return;
    }
    int64_t chunk = (int64_t)(262144 / ((size_t)K * sizeof(dt_ta))) / MR * MR;
    if (chunk < MR)
        chunk = MR;
    dt_ta *rows = (dt_ta *)malloc((size_t)(chunk * K) * sizeof(dt_ta) + 64);
    if (!rows)
        abort();
    for (int64_t c0 = m0; c0 < m1; c0 += chunk) {
        int64_t mv = DT_MIN(chunk, m1 - c0);
        for (int64_t i = 0; i < mv; i++)
            dt_gather_row(as, c0 + i, 0, K, rows + i * K);
        dt_gemm_range(0, mv, n0, n1, K, rows, K, bp, bias, y + c0 * ldy, ldy, q, NULL);
    }
    free(rows);
}
#endif

/* The work items of every group: item i of group i / per (dt_item_at's
 * b), each over its group's packed region, bias, output columns and input
 * channels.  direct: A is X's rows (a 1×1 convolution), C apart. */
static void dt_conv_worker(int tid, int nt, int64_t items, int64_t per, int64_t M, int64_t Kg,
                           int64_t Kred, const dt_asrc *src, int direct, const char *packed,
                           size_t region, const float *bias, dt_tc *Y,
                           int64_t ldy DT_RUN_QPARAMS)
{
    int64_t i0 = items * tid / nt, i1 = items * (tid + 1) / nt;
    if (i0 >= i1)
        return;
    DT_THREAD_BEGIN();
    for (int64_t i = i0; i < i1; i++) {
        dt_item it = dt_item_at(i, per, M, Kg);
        const char *pk = packed + (size_t)it.b * region;
        dt_asrc as = *src;
        as.c0 = it.b * src->Cg;
#if DT_QUANT
        dt_qctx qc;
        dt_qctx_init(&qc, pk + DT_PANELS_BYTES(Kg, Kred), Kg DT_RUN_QARGS);
        const dt_qctx *q = &qc;
#else
        const dt_qctx *q = NULL;
#endif
        dt_gemm_range(it.m0, it.m1, it.n0, it.n1, Kred, src->x + as.c0, src->C,
                      (const dt_tb *)(const void *)pk, bias ? bias + it.b * Kg : NULL,
                      Y + it.b * Kg, ldy, q, direct ? NULL : &as);
    }
    DT_THREAD_END();
}

/* Y[N·OH·OW][K] = conv(X[N][H][W][C], W) (+bias) (then the activation), W
 * given packed (see above). */
DT_EXPORT void DT_FN_CONV2D(const int64_t *geom, const dt_ta *X DT_RUN_QPARAMS,
                            const void *packed, const float *bias, dt_tc *Y, int nthreads)
{
    const int64_t R = geom[dt_cv_r], S = geom[dt_cv_s], G = geom[dt_cv_groups];
    const int64_t sh = geom[dt_cv_stride], sw = geom[dt_cv_stride_w];
    const int64_t dh = geom[dt_cv_dil], dw = geom[dt_cv_dil_w];
    const int64_t pt = geom[dt_cv_pad], pb = geom[dt_cv_pad_b];
    const int64_t pl = geom[dt_cv_pad_l], pr = geom[dt_cv_pad_r];
    const int64_t C = geom[dt_cv_c], Kout = geom[dt_cv_k];
    if (sh < 1 || sw < 1 || pt < 0 || pb < 0 || pl < 0 || pr < 0 || dh < 1 || dw < 1 || G < 1 ||
        C % G || Kout % G || geom[dt_cv_h] + pt + pb < dh * (R - 1) + 1 ||
        geom[dt_cv_w] + pl + pr < dw * (S - 1) + 1)
        return;
    const int64_t OH = (geom[dt_cv_h] + pt + pb - dh * (R - 1) - 1) / sh + 1;
    const int64_t OW = (geom[dt_cv_w] + pl + pr - dw * (S - 1) - 1) / sw + 1;
    const int64_t M = geom[dt_cv_n] * OH * OW, Kg = Kout / G, Kred = R * S * (C / G);
    if (M <= 0 || Kg <= 0 || Kred <= 0)
        return;
    const dt_asrc src = {X,  geom[dt_cv_h], geom[dt_cv_w], C,  C / G, 0,  R, S,
                         OH, OW, sh, sw, pt, pl, dh, dw, pr, (dt_ta)(DT_A_ZERO)};
    /* 1×1, stride 1, no padding: A's rows are X's */
    const int direct = R == 1 && S == 1 && sh == 1 && sw == 1 && !pt && !pb && !pl && !pr;
    const size_t region = DT_FN_PACKED_SIZE(Kg, Kred);
    int nt = dt_threads(nthreads);
#if DT_UKR_T
    if (Kg < VL && sh == 1 && sw == 1 && dh == 1 && dw == 1) {
        dt_conv_t(&src, M, G, Kg, Kred, (const char *)packed, region, bias, Y, Kout, nt);
        return;
    }
#endif
    const int64_t per = dt_items_per_matrix(M, Kg, nt), items = G * per;
    if (items < nt)
        nt = (int)items;
    if (nt <= 1) {
        dt_conv_worker(0, 1, items, per, M, Kg, Kred, &src, direct, (const char *)packed, region,
                       bias, Y, Kout DT_RUN_QARGS);
        return;
    }
#pragma omp parallel num_threads(nt)
    dt_conv_worker(omp_get_thread_num(), omp_get_num_threads(), items, per, M, Kg, Kred, &src,
                   direct, (const char *)packed, region, bias, Y, Kout DT_RUN_QARGS);
}
#endif /* DT_OP_CONV2D */
