/* ---- dtune micro-kernel driver (microkernel/template/driver.c) ------------
 * Follows the generated register kernel dt_ukr().  Everything here is fixed
 * C selected by the macros the generator defined; M, N, K, batch and strides
 * are run-time arguments, so one build serves every shape.
 *
 * One driver for every dtype: the dtype's types block (template/types_*.h)
 * names the element types — dt_ta (A as the caller stores it, and A's packed
 * panels), dt_tb (B as stored and packed), dt_tc (C) — and KG, the K elements
 * one packed group holds (1; 2 for bf16 pairs and 4 for int8 quads in the
 * layouts vdpbf16ps and vpdpbusd read).  Panels hold K rounded up to whole
 * groups, zero-filled (local padding along K too). */

#define DT_STRIPS(n) (((n) + NR - 1) / NR)
/* K padding of the packed panels: whole groups (DT_KPAD = KG), or for a
 * tile back-end whole tiles of K (its register kernel defines DT_KPAD) */
#ifndef DT_KPAD
#define DT_KPAD KG
#endif
#define DT_KP(k) (((k) + DT_KPAD - 1) / DT_KPAD * DT_KPAD) /* k rounded up to DT_KPAD */
/* What each thread does before and after its work items (a tile back-end:
 * its permission and tile configuration, then the tiles' release) */
#ifndef DT_THREAD_BEGIN
#define DT_THREAD_BEGIN() ((void)0)
#define DT_THREAD_END() ((void)0)
#endif
/* An op whose A is implicit (a convolution's A is the im2col of its
 * image: its op block defines DT_IMPLICIT_A 1, and the section its hooks
 * emit before this driver defines dt_asrc and dt_gather_row, which writes
 * A[i][k0, k0 + kc) of the view, and declares dt_stream_implicit, the
 * stream sketch's loops over its rows, which its driver section defines)
 * passes dt_gemm_range the source of A's rows; a NULL source there reads A
 * as the matrix x. */
#ifndef DT_IMPLICIT_A
#define DT_IMPLICIT_A 0
#endif
#if DT_IMPLICIT_A
#define DT_ASRC_PARAM , const dt_asrc *asrc
#else
#define DT_ASRC_PARAM
#endif

/* Transposes a VL×VL block: dst[c*ldd + r] = src[r*lds + c] for r, c < VL
 * (rows r >= rows read as zeros).  Used by dt_pack_b when K is the
 * contiguous dimension (dense weights, NT batch_matmul's B), where a scalar
 * gather with a row stride costs as much as the multiply on small shapes;
 * its elements are moved as 32-bit words, so it also transposes KG-groups
 * of bf16 pairs and s8 quads. */
#if defined(DT_ISA_AVX512)
DT_INLINE void dt_transpose_block(const float *src, int64_t lds, int rows, float *dst,
                                  int64_t ldd)
{
    __m512 r[16], t[16];
    if (rows == 0) { /* a block of padding columns */
        for (int j = 0; j < 16; j++)
            _mm512_storeu_ps(dst + j * ldd, _mm512_setzero_ps());
        return;
    }
    for (int i = 0; i < 16; i++)
        r[i] = i < rows ? _mm512_loadu_ps(src + i * lds) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 4; j++) {
            t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + 4 + j], 0x88);
            t[i + 4 + j] = _mm512_shuffle_f32x4(r[i + j], r[i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    }
    for (int j = 0; j < 16; j++) /* r[j] is column j */
        _mm512_storeu_ps(dst + j * ldd, r[j]);
}
#define DT_HAVE_TRANSPOSE 1
#elif defined(DT_ISA_AVX2)
DT_INLINE void dt_transpose_block(const float *src, int64_t lds, int rows, float *dst,
                                  int64_t ldd)
{
    __m256 r[8], t[8];
    if (rows == 0) { /* a block of padding columns */
        for (int j = 0; j < 8; j++)
            _mm256_storeu_ps(dst + j * ldd, _mm256_setzero_ps());
        return;
    }
    for (int i = 0; i < 8; i++)
        r[i] = i < rows ? _mm256_loadu_ps(src + i * lds) : _mm256_setzero_ps();
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps(dst + j * ldd, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
        _mm256_storeu_ps(dst + (4 + j) * ldd, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
    }
}
#define DT_HAVE_TRANSPOSE 1
#endif

/* Packs columns [0, n) of a K×n operand, element (k, j) at src[j*s_n + k*s_k],
 * into NR-wide panels [strip][DT_KP(K)/KG][NR][KG], zero-padding the last
 * strip and the last K group (local padding: boundary tiles then compute in
 * full on zeros).  With KG = 1 the two layouts that occur get a fast path:
 * s_n == 1 (rows of the panel are contiguous in src: copies) and s_k == 1
 * (K contiguous: VL×VL block transposes, f32 only); with KG > 1 and K
 * contiguous, block transposes of the 32-bit groups. */
static void dt_pack_b(int64_t K, int64_t n, const dt_tb *src, int64_t s_n, int64_t s_k,
                      dt_tb *dst)
{
    for (int64_t j = 0; j < n; j += NR) {
        int64_t nv = DT_MIN(NR, n - j);
        dt_tb *panel = dst + (j / NR) * DT_KP(K) * NR;
#if KG == 1
        int64_t k0 = 0;
        if (s_n == 1) {
            for (int64_t k = 0; k < K; k++) {
                memcpy(panel + k * NR, src + j + k * s_k, (size_t)nv * sizeof(dt_tb));
                memset(panel + k * NR + nv, 0, (size_t)(NR - nv) * sizeof(dt_tb));
            }
            continue;
        }
#if DT_HAVE_TRANSPOSE && DT_TB_F32
        if (s_k == 1) {
            /* full VL-wide k blocks by transposes; the k tail below */
            for (; k0 + VL <= K; k0 += VL)
                for (int64_t q = 0; q < NR; q += VL) {
                    int rows = (int)(nv - q < 0 ? 0 : DT_MIN(VL, nv - q));
                    dt_transpose_block(src + (j + q) * s_n + k0, s_n, rows, panel + k0 * NR + q,
                                       NR);
                }
        }
#endif
#if !DT_TB_F32
        if (s_k == 1) {
            /* narrow weights (s8) with K contiguous: 64 k of one column at a
             * time, so each source line is read once, not once per k */
            for (int64_t kb = 0; kb < K; kb += 64)
                for (int64_t q = 0; q < NR; q++)
                    for (int64_t k = kb; k < DT_MIN(K, kb + 64); k++)
                        panel[k * NR + q] = q < nv ? src[(j + q) * s_n + k] : 0;
            continue;
        }
#endif
        for (int64_t k = k0; k < K; k++) {
            dt_tb *row = panel + k * NR;
            int64_t q = 0;
            for (; q < nv; q++)
                row[q] = src[(j + q) * s_n + k * s_k];
            for (; q < NR; q++)
                row[q] = 0;
        }
#else
        /* groups of KG consecutive k of one column are adjacent: the group
         * of k (a multiple of KG) is the NR×KG block at panel + k * NR */
        const int64_t kfull = K / KG * KG;
        int64_t kv = 0; /* groups below kv (padding columns too) done by transposes */
#if DT_HAVE_TRANSPOSE
        if (s_k == 1 && KG * sizeof(dt_tb) == sizeof(float) && s_n % KG == 0) {
            /* a group is one 32-bit word (a bf16 pair, an s8 quad), so the
             * panel is a transpose of 32-bit words: VL×VL blocks as in f32.
             * The scalar group copies and per-k zero fills below cost several
             * times the multiply on attention's Q·Kᵀ (K = 64) shapes. */
            for (; kv + VL * KG <= kfull; kv += VL * KG)
                for (int64_t q = 0; q < NR; q += VL) {
                    int rows = (int)(nv - q < 0 ? 0 : DT_MIN(VL, nv - q));
                    dt_transpose_block((const float *)(const void *)(src + (j + q) * s_n + kv),
                                       s_n / KG, rows, (float *)(void *)(panel + kv * NR + q * KG),
                                       NR);
                }
        }
#endif
        if (s_k == 1) { /* a column's group is KG contiguous elements */
            for (int64_t q = 0; q < nv; q++)
                for (int64_t k = kv; k < kfull; k += KG)
                    memcpy(panel + k * NR + q * KG, src + (j + q) * s_n + k,
                           KG * sizeof(dt_tb));
        } else {
            for (int64_t k = kv; k < kfull; k += KG)
                for (int64_t q = 0; q < nv; q++)
                    for (int g = 0; g < KG; g++)
                        panel[k * NR + q * KG + g] = src[(j + q) * s_n + (k + g) * s_k];
        }
        if (nv < NR && kv < kfull) {
            /* one zero fill per group row would be a short memset each */
            for (int64_t k = kv; k < kfull; k += KG)
                for (int64_t e = nv * KG; e < NR * KG; e++)
                    panel[k * NR + e] = 0;
        }
        /* the last, partial group: zero-padded */
        for (int64_t k = kfull; k < DT_KP(K); k += KG)
            for (int64_t q = 0; q < NR; q++)
                for (int g = 0; g < KG; g++)
                    panel[k * NR + q * KG + g] =
                        q < nv && k + g < K ? src[(j + q) * s_n + (k + g) * s_k] : 0;
#endif
    }
}

#if !DT_SKETCH_STREAM
/* Packs rows [0, mc) × columns [0, kc) of x into MR-tall panels
 * [mc/MR][DT_KP(kc)/KG][MR][KG], zero-padding the rows past mc and the last
 * K group (local padding). */
static void dt_pack_a(const dt_ta *x, int64_t ldx, int64_t mc, int64_t kc, dt_ta *dst)
{
    const int64_t kp = DT_KP(kc);
#if DT_AMX
    /* tiles read A's rows as they are: MR-tall panels [MR][kp], row-major,
     * the rows past mc and the K past kc zero */
    for (int64_t i = 0; i < mc; i += MR) {
        int64_t mv = DT_MIN(MR, mc - i);
        dt_ta *panel = dst + (i / MR) * kp * MR;
        for (int64_t r = 0; r < MR; r++) {
            if (r < mv) {
                memcpy(panel + r * kp, x + (i + r) * ldx, (size_t)kc * sizeof(dt_ta));
                memset(panel + r * kp + kc, 0, (size_t)(kp - kc) * sizeof(dt_ta));
            } else {
                memset(panel + r * kp, 0, (size_t)kp * sizeof(dt_ta));
            }
        }
    }
    return;
#endif
    for (int64_t i = 0; i < mc; i += MR) {
        int64_t mv = DT_MIN(MR, mc - i);
        dt_ta *panel = dst + (i / MR) * kp * MR;
        for (int64_t r = 0; r < MR; r++) {
            int64_t k = 0;
            if (r < mv) {
                const dt_ta *src = x + (i + r) * ldx;
#if KG > 1
                /* whole groups: one KG-element copy each (a 32-bit move) */
                for (; k + KG <= kc; k += KG)
                    memcpy(panel + (k / KG * MR + r) * KG, src + k, KG * sizeof(dt_ta));
#endif
                for (; k < kc; k++)
                    panel[(k / KG * MR + r) * KG + k % KG] = src[k];
            }
            for (; k < kp; k++)
                panel[(k / KG * MR + r) * KG + k % KG] = 0;
        }
    }
}
#endif

#if DT_IMPLICIT_A && !DT_SKETCH_STREAM
/* dt_pack_a of the implicit A's rows [i0, i0 + mc) × columns [k0, k0 + kc):
 * MR rows at a time gathered into rows (MR×kc), then packed as a matrix */
static void dt_pack_a_gathered(const dt_asrc *as, int64_t i0, int64_t k0, int64_t mc,
                               int64_t kc, dt_ta *rows, dt_ta *dst)
{
    for (int64_t i = 0; i < mc; i += MR) {
        int64_t mv = DT_MIN(MR, mc - i);
        for (int64_t r = 0; r < mv; r++)
            dt_gather_row(as, i0 + i + r, k0, kc, rows + r * kc);
        dt_pack_a(rows, kc, mv, kc, dst + (i / MR) * DT_KP(kc) * MR);
    }
}
#endif

/* One MR×NR output tile: rows_valid × cols_valid of it are real. */
static inline void dt_tile(int64_t kc, const dt_ta *a, int64_t lda, int rows_valid,
                           const dt_tb *b, dt_tc *y, int64_t ldy, int cols_valid, int accumulate,
                           const float *bias, int last, const dt_qctx *q, int64_t col)
{
    const float *bias_p = NULL;
#if DT_BIAS
    float bias_pad[NR] __attribute__((aligned(64)));
    if (last) {
        if (cols_valid == NR) {
            bias_p = bias;
        } else {
            memcpy(bias_pad, bias, (size_t)cols_valid * sizeof(float));
            memset(bias_pad + cols_valid, 0, (size_t)(NR - cols_valid) * sizeof(float));
            bias_p = bias_pad;
        }
    }
#else
    (void)bias;
#endif
#if DT_STORE_SCRATCH
    if (rows_valid < MR || cols_valid < NR) {
        /* boundary tile: compute in full into a local tile, copy out the valid part */
        dt_tc tile[MR * NR] __attribute__((aligned(64)));
        if (accumulate) {
            memset(tile, 0, sizeof tile);
            for (int r = 0; r < rows_valid; r++)
                memcpy(tile + r * NR, y + r * ldy, (size_t)cols_valid * sizeof(dt_tc));
        }
        dt_ukr(kc, a, lda, rows_valid, b, tile, NR, MR, NR, accumulate, bias_p, last, q, col);
        for (int r = 0; r < rows_valid; r++)
            memcpy(y + r * ldy, tile + r * NR, (size_t)cols_valid * sizeof(dt_tc));
        return;
    }
#endif
    dt_ukr(kc, a, lda, rows_valid, b, y, ldy, rows_valid, cols_valid, accumulate, bias_p, last, q,
           col);
}

/* The NC-blocked column loop of the blocked sketch: C[m0:m1, n0:n1] of one
 * matrix; bp holds B's packed strips for all of N (strip s at bp + s*K*NR);
 * n0 is a multiple of NR.  An implicit A (asrc not NULL): x unused. */
static void dt_gemm_range(int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K,
                          const dt_ta *x, int64_t ldx, const dt_tb *bp, const float *bias,
                          dt_tc *y, int64_t ldy, const dt_qctx *q DT_ASRC_PARAM)
{
    const int64_t kp = DT_KP(K);
#if DT_SKETCH_STREAM
#if DT_IMPLICIT_A
    if (asrc) { /* the op's own loops over its implicit rows (its driver section) */
        dt_stream_implicit(asrc, m0, m1, n0, n1, K, bp, bias, y, ldy, q);
        return;
    }
#endif
    /* the weights stream once per M tile group; A rows are read in place */
    for (int64_t jr = n0; jr < n1; jr += NR)
        for (int64_t ir = m0; ir < m1; ir += MR)
            dt_tile(K, x + ir * ldx, ldx, (int)DT_MIN(MR, m1 - ir), bp + (jr / NR) * kp * NR,
                    y + ir * ldy + jr, ldy, (int)DT_MIN(NR, n1 - jr), 0, bias ? bias + jr : NULL,
                    1, q, jr);
#else
    dt_ta abuf[((MC + MR - 1) / MR) * MR * KC] __attribute__((aligned(64)));
#if DT_IMPLICIT_A
    dt_ta *rows = NULL; /* an implicit A's MR rows, gathered before packing */
    if (asrc && !(rows = (dt_ta *)malloc((size_t)MR * KC * sizeof(dt_ta) + 64)))
        abort();
#endif
    for (int64_t jc = n0; jc < n1; jc += NC) {
        int64_t jc1 = DT_MIN(n1, jc + NC);
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = DT_MIN(KC, K - pc);
            int acc = pc > 0, last = pc + kc >= K;
            for (int64_t ic = m0; ic < m1; ic += MC) {
                int64_t mc = DT_MIN(MC, m1 - ic);
#if DT_IMPLICIT_A
                if (asrc)
                    dt_pack_a_gathered(asrc, ic, pc, mc, kc, rows, abuf);
                else
#endif
                    dt_pack_a(x + ic * ldx + pc, ldx, mc, kc, abuf);
#if DT_ORDER_N_INNER
                for (int64_t ir = 0; ir < mc; ir += MR)
                    for (int64_t jr = jc; jr < jc1; jr += NR)
#else
                for (int64_t jr = jc; jr < jc1; jr += NR)
                    for (int64_t ir = 0; ir < mc; ir += MR)
#endif
                        dt_tile(kc, abuf + (ir / MR) * DT_KP(kc) * MR, 0, (int)DT_MIN(MR, mc - ir),
                                bp + (jr / NR) * kp * NR + pc * NR, y + (ic + ir) * ldy + jr,
                                ldy, (int)DT_MIN(NR, jc1 - jr), acc, bias ? bias + jr : NULL,
                                last, q, jr);
            }
        }
    }
#if DT_IMPLICIT_A
    free(rows);
#endif
#endif
}

/* ---- work items: the parallel loop ----------------------------------------
 * par n:  N's NR strips split evenly into one range per thread;
 * par m:  M's blocks (MC rows, MR rows in stream) split evenly likewise;
 * par mn: a grid of MC×NC (MR×NC in stream) blocks, dealt out in contiguous
 *         runs.  NC is a cache block inside a range (blocked sketch) and the
 *         grid's column width (mn), never a reason to leave a thread idle. */

#if DT_SKETCH_STREAM
#define DT_MBLK MR
#else
#define DT_MBLK MC
#endif

typedef struct {
    int64_t b, m0, m1, n0, n1;
} dt_item;

static int64_t dt_items_per_matrix(int64_t M, int64_t N, int nt)
{
#if defined(DT_PAR_N)
    (void)M;
    return DT_MIN((int64_t)nt, DT_STRIPS(N));
#elif defined(DT_PAR_M)
    (void)N;
    return DT_MIN((int64_t)nt, (M + DT_MBLK - 1) / DT_MBLK);
#else
    (void)nt;
    return ((M + DT_MBLK - 1) / DT_MBLK) * ((N + NC - 1) / NC);
#endif
}

static dt_item dt_item_at(int64_t idx, int64_t per, int64_t M, int64_t N)
{
    int64_t i = idx % per;
    dt_item it = {idx / per, 0, M, 0, N};
#if defined(DT_PAR_N)
    int64_t strips = DT_STRIPS(N);
    it.n0 = strips * i / per * NR;
    it.n1 = DT_MIN(N, strips * (i + 1) / per * NR);
#elif defined(DT_PAR_M)
    int64_t blocks = (M + DT_MBLK - 1) / DT_MBLK;
    it.m0 = blocks * i / per * DT_MBLK;
    it.m1 = DT_MIN(M, blocks * (i + 1) / per * DT_MBLK);
#else
    int64_t nn = (N + NC - 1) / NC;
    it.m0 = (i / nn) * DT_MBLK;
    it.n0 = (i % nn) * NC;
    it.n1 = DT_MIN(N, it.n0 + NC);
    it.m1 = DT_MIN(M, it.m0 + DT_MBLK);
#endif
    return it;
}

static int dt_threads(int requested) { return requested > 0 ? requested : THREADS; }

/* ---- exported entry points ----------------------------------------------- */

DT_EXPORT const int dtk_abi_version = 1;

#if DT_CONST_B
/* ---- constant weights: packed once by the caller ----------------------------
 * The entry points' names and the quantized dtypes' extra parameters come
 * from the dtype's types block: DT_FN_PACK, DT_FN_PACKED_SIZE (with a
 * dtype suffix beyond f32), DT_PACK_QPARAMS (per-column weight scales: int8,
 * w8a32), and for a quantized dtype (DT_QUANT) the tail of the packed
 * weights after the panels (DT_QTAIL_BYTES, dt_pack_qtail, dt_qctx_init). */
#define DT_PANELS_BYTES(N, K) ((size_t)DT_STRIPS(N) * NR * (size_t)DT_KP(K) * sizeof(dt_tb))

/* Bytes of the packed weights for N×K. */
DT_EXPORT size_t DT_FN_PACKED_SIZE(int64_t N, int64_t K)
{
    return DT_PANELS_BYTES(N, K) + DT_QTAIL_BYTES(N);
}

/* Packs W (N×K row-major) once; packed must hold DT_FN_PACKED_SIZE bytes. */
DT_EXPORT void DT_FN_PACK(int64_t N, int64_t K, const dt_tb *W DT_PACK_QPARAMS, void *packed)
{
    dt_pack_b(K, N, W, K, 1, (dt_tb *)packed);
#if DT_QUANT
    dt_pack_qtail(N, K, W DT_PACK_QARGS, (char *)packed + DT_PANELS_BYTES(N, K));
#endif
}
#endif
