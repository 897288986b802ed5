#if DT_CONV2D_CHANNEL
/* ---- conv2d's channel sketch (microkernel/template/op_conv2d_channel_pre.c) -
 * Its definitions: the entry points' names, the element loads, the packing
 * and one call's geometry; then the inside tiles the generator writes for
 * the annotation (microkernel/op_conv2d_channel.c: dt_ch_in_S<s>_W<sw>),
 * then the driver (template/op_conv2d_channel.c).
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
typedef struct dt_chp {
    const dt_ta *x;
    const float *w, *bias; /* bias: Kp floats, zero past K, or NULL */
    const int64_t *tap_x;  /* R·S: tap (r, s)'s offset in X, (r·dh·W + s·dw)·C */
    dt_tc *y;
    int64_t N, H, W, C, K, Kp, Cg, Kg, R, S, OH, OW, sh, sw, pt, pl, dh, dw;
    int plain;             /* Cg = Kg = 1: lane k reads channel k */
    /* the generated inside tile of this stride and window width, or NULL */
    void (*in_fn)(const struct dt_chp *c, const dt_ta *x, const float *w, int64_t rows,
                  const float *bias, dt_tc *y, int64_t iw0, int npx, int64_t nb);
    /* its edge tile (its first column iw0 given: those outside the image
     * skipped) */
    void (*ed_fn)(const struct dt_chp *c, const dt_ta *x, const float *w, int64_t rows,
                  const float *bias, dt_tc *y, int64_t iw0, int npx, int64_t nb);
    float zp, scale;       /* int8: the zero point and scale_a; else 0, 1 */
} dt_chp;

/* A loaded vector kept in a register: the compiler would otherwise fold
 * its load into each of its multiply-adds, one load per use again. */
#if defined(__x86_64__) && !defined(DT_ISA_GENERIC)
#define DT_CH_IN_REGISTER(v) __asm__("" : "+v"(v))
#else
#define DT_CH_IN_REGISTER(v) ((void)0)
#endif

/* An inside tile's loads of X as f32 lanes (int8: less the zero point). */
#if DT_CH_ZP
#define DT_CH_XLOAD(q) (dt_ch_x(q) - zpv)
#else
#define DT_CH_XLOAD(q) dt_ch_x(q)
#endif

/* A generated tile: MR consecutive output pixels × NV vectors, the window
 * rows from x (inside: pixel 0's tap (r, 0); edge: the image row's column
 * 0; at channel k0, rows of them), their weights from w (tap (r, 0) at
 * k0), output pixel 0 at y, the bias at k0 (NULL without); an edge tile's
 * first column iw0 (of the image row) and its stored pixels npx; nb
 * channel blocks from k0, one after another. */
typedef void (*dt_ch_in_fn)(const struct dt_chp *c, const dt_ta *x, const float *w,
                            int64_t rows, const float *bias, dt_tc *y, int64_t iw0, int npx,
                            int64_t nb);
#endif /* DT_CONV2D_CHANNEL */
