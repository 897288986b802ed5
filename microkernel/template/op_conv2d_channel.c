#if DT_CONV2D_CHANNEL
/* ---- conv2d's channel sketch (microkernel/template/op_conv2d_channel.c) ---
 * A grouped convolution (depthwise above all) vectorised along its output
 * channels: a register tile is MR output pixels of one output row × NV
 * vectors of VL consecutive output channels (NR = NV·VL), its sums in
 * registers over the whole R×S window, each tap's NV weight vectors loaded
 * once for the MR pixels.  Nothing is gathered or copied: an input pixel's
 * channels are read in place from X (NHWC), the padding skipped (it adds
 * nothing: 0, or for int8 its zero point, the real 0).  A kernel has no
 * register kernel and no dtype driver; every dtype is widened to f32 lanes
 * as it is loaded (bf16 by a shift, u8 less its zero point, s8 weights at
 * packing), so one body serves f32, bf16, int8 and w8a32.
 *
 * Lane k of an output channel block reads input channel (k / Kg)·Cg + c
 * for c < Cg (Cg = C/G, Kg = K/G).  Depthwise with one output channel a
 * group (Cg = Kg = 1) reads the vector in place; every other grouping reads
 * its lanes one by one (correct for every group size: the tuner measures
 * whether it beats the GEMM view's kernels).  A 1-D convolution over H
 * (W = S = 1) runs with H and W swapped, so its output pixels, not single
 * ones, fill the tile.
 *
 * Entry points (f32 names; the others take the dtype's suffix, _ch last):
 *   size_t dtk_packed_size_ch(int64_t N, int64_t K);   N = K out, K = R·S·Cg
 *   void   dtk_pack_ch(int64_t N, int64_t K, const dt_tb *W [, const float
 *                      *scale_b], void *packed);        W [N][R·S·Cg], whole
 *   void   dtk_conv2d_ch(const int64_t geom[16], const dt_ta *X [, float
 *                        scale_a, int32_t zp_a], const void *packed,
 *                        const float *bias, float *Y, int nthreads);
 * The packing is f32 [R·S·Cg][Kp], Kp = K rounded up to NR (zero past K),
 * the weights' scales folded in (int8, w8a32).  Threads (par): over the
 * output rows (m), over the channel blocks (n), or over both (mn); a
 * thread's work in passes of NC channels (its input rows stay in cache),
 * in a pass the row's pixel tiles innermost (order m_inner) or each tile's
 * channel blocks (n_inner).  UNROLL: the taps of a window row whose input
 * columns a tile loads once (dt_ch_row), the weights of as many taps in
 * registers. */
#define DT_CH_CAT2(a, b) a##b
#define DT_CH_CAT(a, b) DT_CH_CAT2(a, b)
#define DT_FN_CH_CONV DT_CH_CAT(DT_FN_CONV2D, _ch)
#define DT_FN_CH_PACK DT_CH_CAT(DT_FN_PACK, _ch)
#define DT_FN_CH_SIZE DT_CH_CAT(DT_FN_PACKED_SIZE, _ch)
/* #pragma GCC unroll of a macro's value (the pragma expands none) */
#define DT_CH_PRAGMA(x) _Pragma(#x)
#define DT_CH_UNROLL(n) DT_CH_PRAGMA(GCC unroll n)

/* the loader's check (the dtype driver, which holds it elsewhere, is not here) */
DT_EXPORT const int dtk_abi_version = 1;

enum { dt_ch_n, dt_ch_h, dt_ch_w, dt_ch_c, dt_ch_k, dt_ch_r, dt_ch_s, dt_ch_stride, dt_ch_pad,
       dt_ch_dil, dt_ch_groups, dt_ch_stride_w, dt_ch_dil_w, dt_ch_pad_l, dt_ch_pad_b,
       dt_ch_pad_r };

typedef uint32_t dt_ch_vu32 __attribute__((vector_size(sizeof(vf))));
typedef int32_t dt_ch_vs32 __attribute__((vector_size(sizeof(vf))));

#if DT_QUANT
/* the quantized types' helpers for the GEMM driver, which is not here */
static void (*const dt_ch_unused[])(void) __attribute__((unused)) = {
    (void (*)(void))dt_qctx_init, (void (*)(void))dt_pack_qtail};
#endif

/* A weight and an input element as f32 */
#if DT_CH_BF16
DT_INLINE float dt_ch_w1(dt_tb w)
{
    uint32_t u = (uint32_t)w << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#define dt_ch_x1(x) dt_ch_w1(x)
typedef uint16_t dt_ch_vin __attribute__((vector_size(VL * 2)));
/* VL input channels from p as f32 lanes */
DT_INLINE vf dt_ch_x(const dt_ta *p)
{
    dt_ch_vin h;
    memcpy(&h, p, sizeof h);
    return (vf)(__builtin_convertvector(h, dt_ch_vu32) << 16);
}
#elif DT_CH_ZP
#define dt_ch_w1(w) ((float)(w))
#define dt_ch_x1(x) ((float)(x))
typedef uint8_t dt_ch_vin __attribute__((vector_size(VL)));
/* widened only: the tile takes the zero point off each load (an exact
 * integer in f32) */
DT_INLINE vf dt_ch_x(const dt_ta *p)
{
    dt_ch_vin h;
    memcpy(&h, p, sizeof h);
    return (vf)__builtin_convertvector(__builtin_convertvector(h, dt_ch_vs32), vx);
}
#else
#define dt_ch_w1(w) ((float)(w))
#define dt_ch_x1(x) ((float)(x))
#define dt_ch_x(p) VLOAD(p)
#endif

/* the first n < VL lanes of a vector of input channels, the rest 0 */
DT_INLINE vf dt_ch_x_n(const dt_ta *p, int n)
{
    dt_ta buf[VL];
    memset(buf, 0, sizeof buf);
    memcpy(buf, p, (size_t)n * sizeof(dt_ta));
    return dt_ch_x(buf);
}

static int64_t dt_ch_kp(int64_t n) { return (n + NR - 1) / NR * NR; }

DT_EXPORT size_t DT_FN_CH_SIZE(int64_t N, int64_t K)
{
    return N < 1 || K < 1 ? 0 : (size_t)(K * dt_ch_kp(N)) * sizeof(float);
}

DT_EXPORT void DT_FN_CH_PACK(int64_t N, int64_t K, const dt_tb *W DT_PACK_QPARAMS, void *packed)
{
    float *wp = (float *)packed;
    const int64_t kp = dt_ch_kp(N);
    for (int64_t t = 0; t < K; t++)
        for (int64_t n = 0; n < kp; n++) {
#if DT_QUANT
            const float sc = n < N ? scale_b[n] : 0.0f;
#else
            const float sc = 1.0f;
#endif
            wp[t * kp + n] = n < N ? dt_ch_w1(W[n * K + t]) * sc : 0.0f;
        }
}

/* One call's geometry, resolved (1-D over H already turned into W). */
typedef struct {
    const dt_ta *x;
    const float *w, *bias; /* bias: Kp floats, zero past K, or NULL */
    const int64_t *tap_x;  /* R·S: tap (r, s)'s offset in X, (r·dh·W + s·dw)·C */
    dt_tc *y;
    int64_t N, H, W, C, K, Kp, Cg, Kg, R, S, OH, OW, sh, sw, pt, pl, dh, dw;
    int plain;             /* Cg = Kg = 1: lane k reads channel k */
    int reuse;             /* inside tiles reuse columns (dt_ch_row): the stride 1 or 2, else 0 */
    float zp, scale;       /* int8: the zero point and scale_a; else 0, 1 */
} dt_chp;

/* A loaded vector kept in a register: the compiler would otherwise fold
 * its load into each of its multiply-adds, one load per use again. */
#if defined(__x86_64__) && !defined(DT_ISA_GENERIC)
#define DT_CH_IN_REGISTER(v) __asm__("" : "+v"(v))
#else
#define DT_CH_IN_REGISTER(v) ((void)0)
#endif

/* Taps s0 .. s0 + SC of one window row for a tile of MR consecutive
 * output pixels at stride SW (1 or 2), dilation 1, all NV vectors: the
 * SC taps' weights held in registers and each input column the tile
 * reads loaded once, for every (pixel, tap) that reads it (p·SW + s = j),
 * so a column costs one load for up to SC multiply-adds.  xr: pixel 0's
 * tap s0 (channel k0); every one of the MR pixels is inside the image. */
DT_INLINE void dt_ch_row(vf acc[MR][NV], const dt_ta *xr, int64_t C, const float *wr,
                         int64_t Kp, const int SC, const int SW, vf zpv)
{
    vf wv[8][NV];
#pragma GCC unroll 8
    for (int s = 0; s < SC; s++)
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            wv[s][v] = VLOAD(wr + s * Kp + v * VL);
    const dt_ta *xj = xr;
#pragma GCC unroll 64
    for (int j = 0; j < (MR - 1) * SW + SC; j++, xj += C) {
#pragma GCC unroll 16
        for (int v = 0; v < NV; v++) {
#if DT_CH_ZP
            vf xv = dt_ch_x(xj + v * VL) - zpv;
#else
            vf xv = dt_ch_x(xj + v * VL);
            (void)zpv;
#endif
            DT_CH_IN_REGISTER(xv);
#pragma GCC unroll 8
            for (int s = 0; s < SC; s++) {
                const int p = (j - s) / SW;
                if (j >= s && (j - s) % SW == 0 && p < MR)
                    acc[p][v] = VFMA(xv, wv[s][v], acc[p][v]);
            }
        }
    }
}

/* The output tile of pixels (n, oh, ow[p]), p < MR (npx of them stored:
 * the others repeat the last, computed and dropped), × nv vectors of
 * channels from k0, the last of them rem < VL lanes when rem > 0 (plain
 * only).  nv and cols are constants where it is inlined, so the tile's
 * sums stay in registers.  reuse (a constant, 0 or the stride 1 or 2 of a
 * tile of consecutive pixels, dilation 1, nv = NV): each window row in
 * blocks of UNROLL taps by dt_ch_row; otherwise one load a multiply-add. *
 * Window rows outside the image are skipped; with cols, so are the taps
 * left or right of it, pixel by pixel. */
DT_INLINE void dt_ch_tile(const dt_chp *c, int64_t n, int64_t oh, const int64_t *ow, int npx,
                          int64_t k0, int nv, int rem, int cols, int reuse)
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
    /* the window rows inside the image: r in [r_lo, r_hi) */
    const int64_t r_lo = ih0 >= 0 ? 0 : (-ih0 + c->dh - 1) / c->dh;
    const int64_t r_hi = DT_MIN(c->R, ih0 >= c->H ? 0 : (c->H - ih0 + c->dh - 1) / c->dh);
    const int64_t at = (n * c->H + ih0) * c->W * c->C + k0; /* tap (0, 0) of pixel 0 */
    if (reuse) {
#if !DT_CH_ZP
        const vf zpv = VZERO();
#endif
        for (int64_t r = r_lo; r < r_hi; r++) {
            const dt_ta *xr = c->x + (at + c->tap_x[r * c->S] + off[0]);
            const float *wr = c->w + r * c->S * c->Kp + k0;
            for (int64_t s0 = 0; s0 < c->S; s0 += UNROLL) {
                const int sc = (int)DT_MIN(UNROLL, c->S - s0);
                const dt_ta *xs = xr + s0 * c->C;
                const float *ws = wr + s0 * c->Kp;
                switch (sc) {
#define DT_CH_ROW_CASE(n)                                                                      \
    case n: dt_ch_row(acc, xs, c->C, ws, c->Kp, n, reuse, zpv); break;
                    DT_CH_ROW_CASE(1)
#if UNROLL >= 2
                    DT_CH_ROW_CASE(2)
#endif
#if UNROLL >= 4
                    DT_CH_ROW_CASE(3)
                    DT_CH_ROW_CASE(4)
#endif
#if UNROLL >= 8
                    DT_CH_ROW_CASE(5)
                    DT_CH_ROW_CASE(6)
                    DT_CH_ROW_CASE(7)
                    DT_CH_ROW_CASE(8)
#endif
#undef DT_CH_ROW_CASE
                default: break;
                }
            }
        }
    } else if (!cols) {
        /* every tap of those rows: one loop over taps r_lo·S .. r_hi·S
         * (tap t's offset in X, tap_x[t]; its weights at t·Kp) */
        DT_CH_UNROLL(UNROLL)
        for (int64_t t = r_lo * c->S; t < r_hi * c->S; t++) {
            const float *wt = c->w + t * c->Kp + k0;
            const dt_ta *xt = c->x + (at + c->tap_x[t]);
            vf wv[NV];
#pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                if (v < nv)
                    wv[v] = VLOAD(wt + v * VL);
#pragma GCC unroll 16
            for (int p = 0; p < MR; p++) {
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
    } else {
        for (int64_t r = r_lo; r < r_hi; r++)
            for (int64_t s = 0; s < c->S; s++) {
                const int64_t t = r * c->S + s, ds = s * c->dw;
                const float *wt = c->w + t * c->Kp + k0;
                const dt_ta *xt = c->x + (at + c->tap_x[t]);
                vf wv[NV];
#pragma GCC unroll 16
                for (int v = 0; v < NV; v++)
                    if (v < nv)
                        wv[v] = VLOAD(wt + v * VL);
#pragma GCC unroll 16
                for (int p = 0; p < MR; p++) {
                    if (iw0[p] + ds < 0 || iw0[p] + ds >= c->W)
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
 * of the pass [pb, pe). */
static void dt_ch_blocks(const dt_chp *c, int64_t n, int64_t oh, const int64_t *ow, int npx,
                         int64_t pb, int64_t pe, int cols)
{
    for (int64_t b = pb; b < pe; b++) {
        const int64_t k0 = b * NR, left = c->K - k0;
        if (!c->plain) {
            for (int p = 0; p < npx; p++)
                dt_ch_pixel_any(c, n, oh, ow[p], k0, k0 + DT_MIN(NR, left));
        } else if (left >= NR) {
            if (cols)
                dt_ch_tile(c, n, oh, ow, npx, k0, NV, 0, 1, 0);
            else if (c->reuse == 1 && npx == MR)
                dt_ch_tile(c, n, oh, ow, npx, k0, NV, 0, 0, 1);
            else if (c->reuse == 2 && npx == MR)
                dt_ch_tile(c, n, oh, ow, npx, k0, NV, 0, 0, 2);
            else
                dt_ch_tile(c, n, oh, ow, npx, k0, NV, 0, 0, 0);
        } else { /* the last block: vector by vector, the last one partial */
            for (int64_t k = k0; k < c->K; k += VL) {
                const int rem = c->K - k >= VL ? 0 : (int)(c->K - k);
                if (cols)
                    dt_ch_tile(c, n, oh, ow, npx, k, 1, rem, 1, 0);
                else
                    dt_ch_tile(c, n, oh, ow, npx, k, 1, rem, 0, 0);
            }
        }
    }
}

/* Output rows [r0, r1) (of N·OH) × channel blocks [b0, b1) (NR each).  A
 * row's inside (the pixels whose windows stay in the image along W) is
 * cut into tiles of at most MR consecutive pixels, as even as they go, so
 * a tile drops at most one of its pixels; its border pixels (left and
 * right together) make tiles of their own, whose taps are checked one by
 * one. */
static void dt_ch_range(const dt_chp *c, int64_t r0, int64_t r1, int64_t b0, int64_t b1)
{
    const int64_t per_pass = NC / NR;
    const int64_t room = c->W - 1 - (c->S - 1) * c->dw + c->pl; /* iw of tap 0 ≤ this */
    const int64_t ow_hi = room < 0 ? 0 : DT_MIN(c->OW, room / c->sw + 1);
    const int64_t ow_lo = DT_MIN(ow_hi, (c->pl + c->sw - 1) / c->sw);
    const int64_t inside = ow_hi - ow_lo, tiles = (inside + MR - 1) / MR;
    const int64_t full = c->reuse ? inside / MR : 0; /* tiles of MR pixels first */
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
                for (int64_t t = 0; t < tiles; t++) {
                    /* reusing columns: MR pixels a tile, the rest last; else
                     * tiles as even as they go */
                    const int64_t a = full ? ow_lo + t * MR : ow_lo + inside * t / tiles;
                    const int64_t e =
                        full ? DT_MIN(ow_hi, a + MR) : ow_lo + inside * (t + 1) / tiles;
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
    c.reuse = c.dw == 1 && c.sw <= 2 ? (int)c.sw : 0;
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
