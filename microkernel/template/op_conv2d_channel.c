#if DT_CONV2D_CHANNEL
/* ---- conv2d's channel sketch: the driver (template/op_conv2d_channel.c) ---
 * (the definitions: template/op_conv2d_channel_pre.c) */
/* The window rows r in [*lo, *hi) of an output row whose window starts at
 * input row ih0 that fall inside the image. */
static void dt_ch_rows(const dt_chp *c, int64_t ih0, int64_t *lo, int64_t *hi)
{
    *lo = ih0 >= 0 ? 0 : (-ih0 + c->dh - 1) / c->dh;
    *hi = DT_MIN(c->R, ih0 >= c->H ? 0 : (c->H - ih0 + c->dh - 1) / c->dh);
}

/* The output tile of pixels (n, oh, ow[p]), p < MR (npx of them stored:
 * the others repeat the last, computed and dropped), × nv vectors of
 * channels from k0, the last of them rem < VL lanes when rem > 0 (plain
 * only).  nv and cols are constants where it is inlined, so the tile's
 * sums stay in registers.  One load a multiply-add (the inside tiles that
 * reuse columns are generated: dt_ch_in_fns).
 * Window rows outside the image are skipped; with cols, so are the taps
 * left or right of it, pixel by pixel. */
DT_INLINE void dt_ch_tile(const dt_chp *c, int64_t n, int64_t oh, const int64_t *ow, int npx,
                          int64_t k0, int nv, int rem, int cols)
{
    vf acc[MR][NV];
#if DT_CH_ZP
    const vf zpv = VBCAST(c->zp);
#define DT_CH_LOAD(q) (dt_ch_x(q) - zpv)
#define DT_CH_LOAD_N(q, n) (dt_ch_x_n((q), (n)) - zpv)
#else
#define DT_CH_LOAD(q) dt_ch_x(q)
#define DT_CH_LOAD_N(q, n) dt_ch_x_n((q), (n))
#endif
#pragma GCC unroll 16
    for (int p = 0; p < MR; p++)
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            acc[p][v] = VZERO();
    const int64_t ih0 = oh * c->sh - c->pt;
    int64_t iw0[MR], off[MR]; /* pixel p's first tap: its column, its offset in a row */
#pragma GCC unroll 16
    for (int p = 0; p < MR; p++) {
        iw0[p] = ow[p] * c->sw - c->pl;
        off[p] = iw0[p] * c->C;
    }
    int64_t r_lo, r_hi;
    dt_ch_rows(c, ih0, &r_lo, &r_hi);
    const int64_t at = (n * c->H + ih0) * c->W * c->C + k0; /* tap (0, 0) of pixel 0 */
    /* every tap of those rows: one loop over taps r_lo·S .. r_hi·S (tap t's
     * offset in X, tap_x[t]; its weights at t·Kp); with cols a tap left or
     * right of the image is skipped pixel by pixel */
    DT_CH_UNROLL(UNROLL)
    for (int64_t t = r_lo * c->S; t < r_hi * c->S; t++) {
        const int64_t ds = cols ? t % c->S * c->dw : 0;
        const float *wt = c->w + t * c->Kp + k0;
        const dt_ta *xt = c->x + (at + c->tap_x[t]);
        vf wv[NV];
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            if (v < nv)
                wv[v] = VLOAD(wt + v * VL);
#pragma GCC unroll 16
        for (int p = 0; p < MR; p++) {
            if (cols && (iw0[p] + ds < 0 || iw0[p] + ds >= c->W))
                continue;
            const dt_ta *xp = xt + off[p];
#pragma GCC unroll 16
            for (int v = 0; v < NV; v++) {
                if (v < nv - 1 || (v == nv - 1 && !rem))
                    acc[p][v] = VFMA(DT_CH_LOAD(xp + v * VL), wv[v], acc[p][v]);
                else if (v == nv - 1)
                    acc[p][v] = VFMA(DT_CH_LOAD_N(xp + v * VL, rem), wv[v], acc[p][v]);
            }
        }
    }
#undef DT_CH_LOAD
#undef DT_CH_LOAD_N
    /* the epilogue: (int8: times scale_a), + bias, activation */
#pragma GCC unroll 16
    for (int p = 0; p < MR; p++) {
        if (p >= npx)
            break;
        dt_tc *y = c->y + ((n * c->OH + oh) * c->OW + ow[p]) * c->K + k0;
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++) {
            if (v >= nv)
                break;
            vf o = acc[p][v];
#if DT_CH_ZP
            o = o * c->scale;
#endif
#if DT_BIAS
            o = o + VLOAD(c->bias + k0 + v * VL);
#endif
            o = dt_act(o);
            if (v < nv - 1 || !rem) {
                VSTORE(y + v * VL, o);
            } else {
#if DT_STORE_SCRATCH
                float tile[VL];
                VSTORE(tile, o);
                memcpy(y + v * VL, tile, (size_t)rem * sizeof(float));
#else
                VSTORE_N(y + v * VL, o, rem);
#endif
            }
        }
    }
}

/* Any grouping (Cg or Kg above 1): each lane's input channel read by
 * itself, one pixel at a time. */
static void dt_ch_pixel_any(const dt_chp *c, int64_t n, int64_t oh, int64_t ow, int64_t k0,
                            int64_t k1)
{
    const int64_t ih0 = oh * c->sh - c->pt, iw0 = ow * c->sw - c->pl;
    for (int64_t kv = k0; kv < k1; kv += VL) {
        const int lanes = (int)DT_MIN(VL, k1 - kv);
        vf acc = VZERO();
        for (int64_t r = 0; r < c->R; r++) {
            const int64_t ih = ih0 + r * c->dh;
            if (ih < 0 || ih >= c->H)
                continue;
            for (int64_t s = 0; s < c->S; s++) {
                const int64_t iw = iw0 + s * c->dw;
                if (iw < 0 || iw >= c->W)
                    continue;
                const dt_ta *px = c->x + ((n * c->H + ih) * c->W + iw) * c->C;
                for (int64_t ci = 0; ci < c->Cg; ci++) {
                    float lane[VL];
                    for (int l = 0; l < VL; l++) {
                        const int64_t k = kv + (l < lanes ? l : 0);
                        lane[l] = dt_ch_x1(px[k / c->Kg * c->Cg + ci]) - c->zp;
                    }
                    acc = VFMA(VLOAD(lane), VLOAD(c->w + ((r * c->S + s) * c->Cg + ci) * c->Kp + kv),
                               acc);
                }
            }
        }
#if DT_CH_ZP
        acc = acc * c->scale;
#endif
#if DT_BIAS
        acc = acc + VLOAD(c->bias + kv);
#endif
        float out[VL];
        VSTORE(out, dt_act(acc));
        memcpy(c->y + ((n * c->OH + oh) * c->OW + ow) * c->K + kv, out,
               (size_t)lanes * sizeof(float));
    }
}

/* One tile (pixels ow[0 .. MR), npx of them stored) of every channel block
 * of the pass [pb, pe): the whole blocks in one call of a generated tile
 * where there is one (its rows, column offsets and pointers found once for
 * them all), the last partial block vector by vector. */
static void dt_ch_blocks(const dt_chp *c, int64_t n, int64_t oh, const int64_t *ow, int npx,
                         int64_t pb, int64_t pe, int cols)
{
    if (!c->plain) {
        for (int64_t b = pb; b < pe; b++)
            for (int p = 0; p < npx; p++)
                dt_ch_pixel_any(c, n, oh, ow[p], b * NR, DT_MIN(c->K, (b + 1) * NR));
        return;
    }
    const int64_t whole = DT_MIN(pe, c->K / NR); /* blocks [pb, whole) are whole */
    int64_t b = pb;
    if (whole > pb && c->in_fn) {
        /* a generated tile (pixels ow[0] .. ow[0] + npx, consecutive): the
         * window rows inside the image */
        const int64_t ih0 = oh * c->sh - c->pt, k0 = pb * NR, nb = whole - pb;
        int64_t r_lo, r_hi;
        dt_ch_rows(c, ih0, &r_lo, &r_hi);
        const dt_ta *xr = c->x + ((n * c->H + ih0 + r_lo * c->dh) * c->W) * c->C + k0;
        const float *wr = c->w + r_lo * c->S * c->Kp + k0;
        const float *bk = c->bias ? c->bias + k0 : NULL;
        dt_tc *yk = c->y + ((n * c->OH + oh) * c->OW + ow[0]) * c->K + k0;
        const int64_t iw0 = ow[0] * c->sw - c->pl;
#if PF
        {   /* the rows the next output row adds, these pixels' columns, into L2
             * (an image that leaves the caches: its rows stream from DRAM) */
            const int64_t pr = ih0 + c->R * c->dh;
            const int64_t j0 = iw0 > 0 ? iw0 : 0, j1 = DT_MIN(c->W, iw0 + MR * c->sw);
            const int64_t bytes = nb * NR * (int64_t)sizeof(dt_ta);
            for (int64_t q = 0; q < c->sh; q++) {
                if (pr + q < 0 || pr + q >= c->H)
                    continue;
                const char *base =
                    (const char *)(c->x + ((n * c->H + pr + q) * c->W) * c->C + k0);
                for (int64_t j = j0; j < j1; j++)
                    for (int64_t o = 0; o < bytes; o += 64)
                        __builtin_prefetch(base + j * c->C * (int64_t)sizeof(dt_ta) + o, 0, 2);
            }
        }
#endif
        if (r_hi <= r_lo) { /* every window row outside: the bias alone */
            for (; b < whole; b++)
                if (cols)
                    dt_ch_tile(c, n, oh, ow, npx, b * NR, NV, 0, 1);
                else
                    dt_ch_tile(c, n, oh, ow, npx, b * NR, NV, 0, 0);
        } else if (!cols && npx == MR) {
            c->in_fn(c, xr + iw0 * c->C, wr, r_hi - r_lo, bk, yk, iw0, MR, nb);
        } else {
            c->ed_fn(c, xr, wr, r_hi - r_lo, bk, yk, iw0, npx, nb);
        }
        b = whole;
    }
    for (; b < pe; b++) {
        const int64_t k0 = b * NR;
        if (c->K - k0 >= NR) {
            if (cols)
                dt_ch_tile(c, n, oh, ow, npx, k0, NV, 0, 1);
            else
                dt_ch_tile(c, n, oh, ow, npx, k0, NV, 0, 0);
            continue;
        }
        /* the last block: vector by vector, the last one partial */
        for (int64_t k = k0; k < c->K; k += VL) {
            const int rem = c->K - k >= VL ? 0 : (int)(c->K - k);
            if (cols)
                dt_ch_tile(c, n, oh, ow, npx, k, 1, rem, 1);
            else
                dt_ch_tile(c, n, oh, ow, npx, k, 1, rem, 0);
        }
    }
}

/* Output rows [r0, r1) (of N·OH) × channel blocks [b0, b1) (NR each).
 * With generated tiles for the window, a row is tiles of MR pixels from
 * its start, the last one its last MR pixels (computing again some of the
 * tile before it, rather than a partial tile), those that reach outside the
 * image their edge tiles.  Otherwise the row's inside (the pixels whose windows stay in
 * the image along W) is cut into tiles of at most MR pixels as even as
 * they go (a tile drops at most one of its pixels), and its border pixels,
 * left and right together, make tiles of their own, whose taps are
 * checked one by one. */
static void dt_ch_range(const dt_chp *c, int64_t r0, int64_t r1, int64_t b0, int64_t b1)
{
    const int64_t per_pass = NC / NR;
    const int64_t room = c->W - 1 - (c->S - 1) * c->dw + c->pl; /* iw of tap 0 ≤ this */
    const int64_t ow_hi = room < 0 ? 0 : DT_MIN(c->OW, room / c->sw + 1);
    const int64_t ow_lo = DT_MIN(ow_hi, (c->pl + c->sw - 1) / c->sw);
    const int64_t inside = ow_hi - ow_lo;
    const int64_t tiles = (inside + MR - 1) / MR;
    int64_t edge[MR], ne = 0, ow[MR];
    for (int64_t pb = b0; pb < b1; pb += per_pass) {
        const int64_t pe = DT_MIN(b1, pb + per_pass);
        for (int64_t row = r0; row < r1; row++) {
            const int64_t oh = row % c->OH, n = row / c->OH;
            /* order n_inner: a tile's channel blocks innermost; m_inner: the
             * row's tiles innermost, block by block */
#if DT_ORDER_N_INNER
            for (int64_t bb = pb, be = pe; bb < pe; bb = pe) {
#else
            for (int64_t bb = pb, be = pb + 1; bb < pe; bb++, be++) {
#endif
                if (c->in_fn) { /* generated tiles: MR pixels from 0, edges checked */
                    for (int64_t o = 0; o < c->OW; o += MR) {
                        int64_t a = o;
                        int npx = (int)DT_MIN(MR, c->OW - o);
                        if (npx < MR && c->OW >= MR) { /* the row's last MR pixels: */
                            a = c->OW - MR;            /* some again, all of one tile */
                            npx = MR;
                        }
                        for (int p = 0; p < MR; p++)
                            ow[p] = a + (p < npx ? p : npx - 1);
                        dt_ch_blocks(c, n, oh, ow, npx, bb, be, a < ow_lo || a + npx > ow_hi);
                    }
                    continue;
                }
                for (int64_t t = 0; t < tiles; t++) {
                    const int64_t a = ow_lo + inside * t / tiles;
                    const int64_t e = ow_lo + inside * (t + 1) / tiles;
                    for (int p = 0; p < MR; p++)
                        ow[p] = a + p < e ? a + p : e - 1;
                    dt_ch_blocks(c, n, oh, ow, (int)(e - a), bb, be, 0);
                }
                /* the border: [0, ow_lo) and [ow_hi, OW), MR pixels a tile */
                for (int64_t x = 0; x <= c->OW; x++) {
                    if (x == ow_lo && ow_hi > ow_lo)
                        x = ow_hi;
                    if (x < c->OW)
                        edge[ne++] = x;
                    if (ne && (ne == MR || x >= c->OW - 1)) {
                        for (int p = 0; p < MR; p++)
                            ow[p] = edge[p < ne ? p : ne - 1];
                        dt_ch_blocks(c, n, oh, ow, (int)ne, bb, be, 1);
                        ne = 0;
                    }
                }
            }
        }
    }
}

/* Y[N·OH·OW][K] = conv(X[N][H][W][C], W) (+bias) (then the activation). */
DT_EXPORT void DT_FN_CH_CONV(const int64_t *geom, const dt_ta *X DT_RUN_QPARAMS,
                             const void *packed, const float *bias, dt_tc *Y, int nthreads)
{
    int64_t g[16];
    memcpy(g, geom, sizeof g);
    const int64_t G = g[dt_ch_groups], C = g[dt_ch_c], K = g[dt_ch_k];
    if (g[dt_ch_stride] < 1 || g[dt_ch_stride_w] < 1 || g[dt_ch_pad] < 0 || g[dt_ch_pad_b] < 0 ||
        g[dt_ch_pad_l] < 0 || g[dt_ch_pad_r] < 0 || g[dt_ch_dil] < 1 || g[dt_ch_dil_w] < 1 ||
        G < 1 || C % G || K % G || g[dt_ch_n] < 1 || K < 1)
        return;
    /* 1-D over H (W = S = 1, no pads along W): the same memory as 1-D over W */
    if (g[dt_ch_w] == 1 && g[dt_ch_s] == 1 && !g[dt_ch_pad_l] && !g[dt_ch_pad_r]) {
        int64_t t;
#define DT_CH_SWAP(a, b) (t = g[a], g[a] = g[b], g[b] = t)
        DT_CH_SWAP(dt_ch_h, dt_ch_w);
        DT_CH_SWAP(dt_ch_r, dt_ch_s);
        DT_CH_SWAP(dt_ch_stride, dt_ch_stride_w);
        DT_CH_SWAP(dt_ch_dil, dt_ch_dil_w);
        DT_CH_SWAP(dt_ch_pad, dt_ch_pad_l);
        DT_CH_SWAP(dt_ch_pad_b, dt_ch_pad_r);
#undef DT_CH_SWAP
    }
    dt_chp c = {.x = X, .w = (const float *)packed, .y = Y, .N = g[dt_ch_n], .H = g[dt_ch_h],
                .W = g[dt_ch_w], .C = C, .K = K, .Kp = dt_ch_kp(K), .Cg = C / G, .Kg = K / G,
                .R = g[dt_ch_r], .S = g[dt_ch_s], .sh = g[dt_ch_stride], .sw = g[dt_ch_stride_w],
                .pt = g[dt_ch_pad], .pl = g[dt_ch_pad_l], .dh = g[dt_ch_dil], .dw = g[dt_ch_dil_w],
                .zp = 0.0f, .scale = 1.0f};
    if (c.H + c.pt + g[dt_ch_pad_b] < c.dh * (c.R - 1) + 1 ||
        c.W + c.pl + g[dt_ch_pad_r] < c.dw * (c.S - 1) + 1)
        return;
    c.OH = (c.H + c.pt + g[dt_ch_pad_b] - c.dh * (c.R - 1) - 1) / c.sh + 1;
    c.OW = (c.W + c.pl + g[dt_ch_pad_r] - c.dw * (c.S - 1) - 1) / c.sw + 1;
    c.plain = c.Cg == 1 && c.Kg == 1;
    /* generated tiles: stride 1 or 2, dilation 1, a window row of at most UNROLL */
    const int gen = c.dw == 1 && c.sw <= 2 && c.S <= DT_CH_IN_MAX_S;
    c.in_fn = gen ? dt_ch_in_fns[0][c.sw - 1][c.S] : NULL;
    c.ed_fn = gen ? dt_ch_in_fns[1][c.sw - 1][c.S] : NULL;
#if DT_CH_ZP
    c.zp = (float)zp_a;
    c.scale = scale_a;
#endif
    float *bpad = NULL;
#if DT_BIAS
    bpad = (float *)calloc((size_t)c.Kp, sizeof(float));
    if (!bpad)
        abort();
    memcpy(bpad, bias, (size_t)K * sizeof(float));
#else
    (void)bias;
#endif
    c.bias = bpad;
    int64_t *tap_x = (int64_t *)malloc((size_t)(c.R * c.S) * sizeof(int64_t));
    if (!tap_x)
        abort();
    for (int64_t r = 0; r < c.R; r++)
        for (int64_t s = 0; s < c.S; s++)
            tap_x[r * c.S + s] = (r * c.dh * c.W + s * c.dw) * c.C;
    c.tap_x = tap_x;
    const int64_t rows = c.N * c.OH, blocks = c.Kp / NR;
    int nt = nthreads > 0 ? nthreads : THREADS;
#if DT_PAR_N
    if (nt > blocks)
        nt = (int)blocks;
#elif DT_PAR_M
    if (nt > rows)
        nt = (int)rows;
#else
    if (nt > rows * blocks)
        nt = (int)(rows * blocks);
#endif
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int tid = nt > 1 ? omp_get_thread_num() : 0;
        const int n = nt > 1 ? omp_get_num_threads() : 1;
#if DT_PAR_N
        dt_ch_range(&c, 0, rows, blocks * tid / n, blocks * (tid + 1) / n);
#elif DT_PAR_M
        dt_ch_range(&c, rows * tid / n, rows * (tid + 1) / n, 0, blocks);
#else
        /* the (row, block) grid in row-major order, split evenly: whole
         * rows of blocks where the split falls between rows */
        const int64_t i0 = rows * blocks * tid / n, i1 = rows * blocks * (tid + 1) / n;
        for (int64_t i = i0; i < i1;) {
            const int64_t row = i / blocks, b = i % blocks, e = DT_MIN(i1, (row + 1) * blocks);
            dt_ch_range(&c, row, row + 1, b, b + (e - i));
            i = e;
        }
#endif
    }
    free(tap_x);
    free(bpad);
}
#endif /* DT_CONV2D_CHANNEL */
