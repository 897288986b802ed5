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
 * geom: N, H, W, C, K, R, S, stride, pad, dilation, groups (lower-case
 * names: `dtune export` renames a kernel's dt_ identifiers, so two kernels
 * of one file keep theirs apart; an upper-case DT_ name is taken for a
 * macro). */
enum { dt_cv_n, dt_cv_h, dt_cv_w, dt_cv_c, dt_cv_k, dt_cv_r, dt_cv_s, dt_cv_stride, dt_cv_pad,
       dt_cv_dil, dt_cv_groups };

#ifndef DT_A_ZERO
#define DT_A_ZERO 0
#endif

#if DT_SKETCH_STREAM
/* The stream sketch reads A's rows in place.  A's K is R·S segments of Cg
 * (the window positions (r, s)): each MR-row tile is summed segment by
 * segment, read from X itself where its rows are consecutive pixels of one
 * output row whose window position falls inside the image (at a stride of
 * stride·C), else gathered (MR × Cg: the borders).  When a segment does not
 * start on a whole group of the packed B (Cg not a multiple of DT_KPAD: the
 * K group, a tile's K), whole rows are gathered in chunks (about 256 KiB,
 * whole MR tiles) and streamed over as a matrix instead. */

/* Rows [i0, i0 + rows) of segment g lie in X at one stride: *a, *lda. */
static int dt_a_segment(const dt_asrc *as, int64_t i0, int64_t rows, int64_t g,
                        const dt_ta **a, int64_t *lda)
{
    const int64_t ow = i0 % as->OW, t = i0 / as->OW, oh = t % as->OH, n = t / as->OH;
    if (ow + rows > as->OW)
        return 0;
    const int64_t ih = oh * as->stride - as->pad + g / as->S * as->dil;
    const int64_t iw = ow * as->stride - as->pad + g % as->S * as->dil;
    if (ih < 0 || ih >= as->H || iw < 0 || iw + (rows - 1) * as->stride >= as->W)
        return 0;
    *a = as->x + ((n * as->H + ih) * as->W + iw) * as->C + as->c0;
    *lda = as->stride * as->C;
    return 1;
}

static void dt_stream_implicit(const dt_asrc *as, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                               int64_t K, const dt_tb *bp, const float *bias, dt_tc *y,
                               int64_t ldy, const dt_qctx *q)
{
    const int64_t kp = DT_KP(K), nseg = as->R * as->S, sk = as->Cg;
    if (sk % DT_KPAD == 0) {
        dt_ta *buf = (dt_ta *)malloc((size_t)(MR * sk) * sizeof(dt_ta) + 64);
        if (!buf)
            abort();
        for (int64_t jr = n0; jr < n1; jr += NR)
            for (int64_t ir = m0; ir < m1; ir += MR) {
                const int rows = (int)DT_MIN(MR, m1 - ir);
                for (int64_t g = 0; g < nseg; g++) {
                    const dt_ta *a;
                    int64_t lda;
                    if (!dt_a_segment(as, ir, rows, g, &a, &lda)) {
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
    const int64_t R = geom[dt_cv_r], S = geom[dt_cv_s], dil = geom[dt_cv_dil];
    const int64_t stride = geom[dt_cv_stride], pad = geom[dt_cv_pad], G = geom[dt_cv_groups];
    const int64_t C = geom[dt_cv_c], Kout = geom[dt_cv_k];
    if (stride < 1 || pad < 0 || dil < 1 || G < 1 || C % G || Kout % G ||
        geom[dt_cv_h] + 2 * pad < dil * (R - 1) + 1 || geom[dt_cv_w] + 2 * pad < dil * (S - 1) + 1)
        return;
    const int64_t OH = (geom[dt_cv_h] + 2 * pad - dil * (R - 1) - 1) / stride + 1;
    const int64_t OW = (geom[dt_cv_w] + 2 * pad - dil * (S - 1) - 1) / stride + 1;
    const int64_t M = geom[dt_cv_n] * OH * OW, Kg = Kout / G, Kred = R * S * (C / G);
    if (M <= 0 || Kg <= 0 || Kred <= 0)
        return;
    const dt_asrc src = {X, geom[dt_cv_h], geom[dt_cv_w], C, C / G, 0, R, S, OH, OW,
                         stride, pad, dil, (dt_ta)(DT_A_ZERO)};
    /* 1×1, stride 1, no padding: A's rows are X's */
    const int direct = R == 1 && S == 1 && stride == 1 && pad == 0;
    const size_t region = DT_FN_PACKED_SIZE(Kg, Kred);
    int nt = dt_threads(nthreads);
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
