/* Where an AMX register kernel's time goes (docs/microkernels.md, "Where the
 * time goes"): the tile loop of dtune's 2×2 bf16 block (32×32 of C, four C
 * tiles, two A and two B tiles a K step) run stand-alone over operands in
 * L1, L2 or L3, with and without what ends each register-kernel call (the C
 * tiles stored to a scratch tile, then copied row by row to C), K split
 * into blocks with the C tiles stored to C and loaded back between them (as
 * dtune's blocked driver does when kc < K), 1×2 blocks (16×32 of C) with
 * one C tile set, or two sets that alternate so a block's tiles are stored
 * while the next block computes, the next B panel prefetched into L2 during
 * each panel, and the single-thread read bandwidth of a buffer of the size
 * of ffn_up's weights.
 * Percentages are of the tdpbf16ps peak given on the command line (dtune
 * info --peaks).  Built and run by scripts/bench_amx_probe.sh, on an AMX
 * CPU only: this is a measurement of the machine, not part of dtune. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Zeroed operands of an M×N×K product: A (M×K) and B (K×N) bf16, C f32;
 * each layout a caller uses fits in those sizes. */
static void operands(int M, int N, int64_t K, uint16_t **A, uint16_t **B, float **C)
{
    *A = aligned_alloc(64, (size_t)M * K * 2);
    *B = aligned_alloc(64, (size_t)N * K * 2);
    *C = aligned_alloc(64, (size_t)M * N * 4);
    memset(*A, 0, (size_t)M * K * 2), memset(*B, 0, (size_t)N * K * 2);
    memset(*C, 0, (size_t)M * N * 4);
}

/* Repeats of a timed product of flop operations: ~20 GFLOP in all, at least 3. */
static int reps_for(double flop) { return (int)(2e10 / flop) + 3; }

typedef struct {
    uint8_t palette, start, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) tile_cfg;

/* The K steps of a 2x2 block: C tiles 0-3 += A (tiles 4, 5; rows as bytes
 * apart) times B (tiles 6, 7; a [steps][16][32][2] panel), each held tile
 * loaded just before its first product, as dtune's kernels order them. */
static inline void steps_2x2(const uint16_t *a, const uint16_t *b, int steps, int64_t as)
{
    for (int s = 0; s < steps; s++) {
        _tile_loadd(4, a + s * 32, as);
        _tile_loadd(6, b + s * 1024, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + s * 1024 + 32, 128);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a + 16 * as / 2 + s * 32, as);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
}

enum { END_NONE, END_SCRATCH, END_ROWS };

/* One 32×32 block over `steps` K steps of 32 bf16: A packed [32][steps·32],
 * B a [steps][16][32][2] panel; then the end of the call. */
static void block(const uint16_t *a, const uint16_t *b, int steps, int end, float *c, int64_t ldc)
{
    const int64_t as = steps * 64;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    steps_2x2(a, b, steps, as);
    if (end == END_NONE)
        return;
    float ct[32 * 32] __attribute__((aligned(64)));
    _tile_stored(0, ct, 128);
    _tile_stored(1, ct + 16, 128);
    _tile_stored(2, ct + 512, 128);
    _tile_stored(3, ct + 528, 128);
    if (end == END_ROWS)
        for (int r = 0; r < 32; r++) {
            _mm512_storeu_ps(c + r * ldc, _mm512_load_ps(ct + r * 32));
            _mm512_storeu_ps(c + r * ldc + 16, _mm512_load_ps(ct + r * 32 + 16));
        }
    else
        __asm__ volatile("" : : "r"(ct) : "memory");
}

/* Lines of the next B panel each block prefetches into L2 (prefetcht1) per
 * K step of its own, issued before it starts; 0: none.  Set by gemm_pf.
 * (Spreading them over the steps measured the same.) */
static int pf_lines;

/* C (M×N, M a multiple of 32, N of 32) = A·B with K = 32·steps, B panels
 * outer and the M blocks inner (each B panel read once): % of peak. */
static double gemm(int M, int N, int steps, int end, double peak)
{
    size_t apanel = (size_t)32 * steps * 32, bpanel = (size_t)steps * 1024;
    int mb = M / 32, nb = N / 32;
    uint16_t *A, *B;
    float *C;
    operands(M, N, 32 * steps, &A, &B, &C);
    double best = 1e30, flop = 2.0 * M * N * 32.0 * steps;
    int reps = reps_for(flop);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int j = 0; j < nb; j++)
            for (int i = 0; i < mb; i++) {
                /* the M blocks of panel j share the prefetch of panel j+1 */
                const char *next = (const char *)(B + (size_t)((j + 1) % nb) * bpanel) +
                                   (size_t)i * pf_lines * steps * 64;
                for (int l = 0; l < pf_lines * steps; l++)
                    _mm_prefetch(next + (size_t)l * 64, _MM_HINT_T1);
                block(A + i * apanel, B + j * bpanel, steps, end, C + (size_t)i * 32 * N + j * 32, N);
            }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    free(A), free(B), free(C);
    return 100.0 * flop / best / 1e9 / peak;
}

/* K split in kblocks of `steps` each: C tiles loaded from and stored to C
 * (row stride N) between K blocks, as dtune's blocked driver does; order:
 * for each K block, B panels outer, M blocks inner. */
static void block_kb(const uint16_t *a, const uint16_t *b, int steps, int first, float *c, int64_t ldc,
                     int64_t as)
{
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, c, ldc * 4);
        _tile_loadd(1, c + 16, ldc * 4);
        _tile_loadd(2, c + 16 * ldc, ldc * 4);
        _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
    }
    steps_2x2(a, b, steps, as);
    _tile_stored(0, c, ldc * 4);
    _tile_stored(1, c + 16, ldc * 4);
    _tile_stored(2, c + 16 * ldc, ldc * 4);
    _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
}

static double gemm_kb(int M, int N, int steps, int kblocks, double peak)
{
    int64_t K = (int64_t)steps * kblocks * 32;
    int mb = M / 32, nb = N / 32;
    uint16_t *A, *B;
    float *C;
    operands(M, N, K, &A, &B, &C);
    double best = 1e30, flop = 2.0 * M * N * (double)K;
    int reps = reps_for(flop);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int kb = 0; kb < kblocks; kb++)
            for (int j = 0; j < nb; j++)
                for (int i = 0; i < mb; i++)
                    /* A packed per K block: [M][steps*32] rows; B strip j: [K/2][32][2] */
                    block_kb(A + (size_t)kb * M * steps * 32 + (size_t)i * 32 * steps * 32,
                             B + (size_t)j * K * 32 + (size_t)kb * steps * 1024, steps, kb == 0,
                             C + (size_t)i * 32 * N + j * 32, N, steps * 64);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    free(A), free(B), free(C);
    return 100.0 * flop / best / 1e9 / peak;
}

/* One K step of a 1×2 block: C tiles ca, cb += A (tile at: a's step s,
 * rows as bytes apart) times B (tiles 6, 7 of a [steps][16][32][2] panel). */
#define STEP_1X2(ca, cb, at, s)                                                            \
    do {                                                                                   \
        _tile_loadd(at, a + (s) * 32, as);                                                 \
        _tile_loadd(6, b + (s) * 1024, 128);                                               \
        _tile_dpbf16ps(ca, at, 6);                                                         \
        _tile_loadd(7, b + (s) * 1024 + 32, 128);                                          \
        _tile_dpbf16ps(cb, at, 7);                                                         \
    } while (0)

/* A 1×2 block into C tiles ca, cb whose first two steps are followed by
 * the store of the other set (oa, ob: the block before) to scratch `out`,
 * then the rest of its steps: tile numbers are instruction constants. */
#define BLOCK_1X2_OVERLAPPED(ca, cb, oa, ob, out)                                          \
    do {                                                                                   \
        _tile_zero(ca);                                                                    \
        _tile_zero(cb);                                                                    \
        STEP_1X2(ca, cb, 4, 0);                                                            \
        STEP_1X2(ca, cb, 5, 1);                                                            \
        _tile_stored(oa, out, 128);                                                        \
        _tile_stored(ob, (out) + 16, 128);                                                 \
        for (int s = 2; s < steps; s += 2) {                                               \
            STEP_1X2(ca, cb, 4, s);                                                        \
            STEP_1X2(ca, cb, 5, s + 1);                                                    \
        }                                                                                  \
    } while (0)

/* The rows of a 16×32 scratch block to C (row stride ldc). */
static void rows_out(const float *t, float *c, int64_t ldc)
{
    for (int r = 0; r < 16; r++) {
        _mm512_storeu_ps(c + r * ldc, _mm512_load_ps(t + r * 32));
        _mm512_storeu_ps(c + r * ldc + 16, _mm512_load_ps(t + r * 32 + 16));
    }
}

/* C = A·B (M×N×K, K in one block) in 1×2 blocks, B strips outer: with one C
 * set (tiles 0, 1; stored when the block ends) or two alternating (0, 1 and
 * 2, 3; a block's tiles stored after the next block's first two steps).  A
 * tiles 4, 5 alternate by step.  Each block's scratch goes to C by rows. */
static double gemm_1x2(int M, int N, int K, int two_sets, double peak)
{
    const int steps = K / 32;
    const int64_t as = (int64_t)K * 2;
    static float ct[2][16 * 32] __attribute__((aligned(64)));
    uint16_t *A, *B;
    float *C;
    operands(M, N, K, &A, &B, &C);
    double best = 1e30, flop = 2.0 * M * N * (double)K;
    int reps = reps_for(flop);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        int n = 0;
        for (int j = 0; j < N / 32; j++)
            for (int i = 0; i < M / 16; i++, n++) {
                const uint16_t *a = A + (size_t)i * 16 * K, *b = B + (size_t)j * K * 32;
                float *c = C + (size_t)i * 16 * N + j * 32;
                if (!two_sets) {
                    _tile_zero(0);
                    _tile_zero(1);
                    for (int s = 0; s < steps; s += 2) {
                        STEP_1X2(0, 1, 4, s);
                        STEP_1X2(0, 1, 5, s + 1);
                    }
                    _tile_stored(0, ct[0], 128);
                    _tile_stored(1, ct[0] + 16, 128);
                } else if (n % 2 == 0) { /* set 0 computes, set 1 (the block before) goes out */
                    BLOCK_1X2_OVERLAPPED(0, 1, 2, 3, ct[1]);
                } else {
                    BLOCK_1X2_OVERLAPPED(2, 3, 0, 1, ct[0]);
                }
                rows_out(ct[two_sets ? (n + 1) % 2 : 0], c, N); /* a block's rows: timing only */
            }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    free(A), free(B), free(C);
    return 100.0 * flop / best / 1e9 / peak;
}

/* gemm with the next B panel prefetched into L2 while the current one
 * computes: each of the M/32 blocks of a panel issues 1/(M/32) of it. */
static double gemm_pf(int M, int N, int steps, int end, double peak)
{
    pf_lines = steps * 2048 / 64 / (M / 32) / steps;
    double r = gemm(M, N, steps, end, peak);
    pf_lines = 0;
    return r;
}

static double read_gbps(size_t bytes)
{
    float *p = aligned_alloc(64, bytes);
    memset(p, 1, bytes);
    __m512 s0 = _mm512_set1_ps(1), s1 = _mm512_set1_ps(2); /* different starts: two chains */
    double best = 1e30;
    for (int r = 0; r < 20; r++) {
        double t0 = now();
        for (size_t i = 0; i < bytes / 4; i += 32) {
            s0 = _mm512_add_ps(s0, _mm512_load_ps(p + i));
            s1 = _mm512_add_ps(s1, _mm512_load_ps(p + i + 16));
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    float out[16];
    _mm512_storeu_ps(out, _mm512_add_ps(s0, s1));
    free(p);
    return out[0] == 12345.f ? 0 : (double)bytes / best / 1e9;
}

int main(int argc, char **argv)
{
    double peak = argc > 1 ? atof(argv[1]) : 0;
    if (peak <= 0) {
        fprintf(stderr, "usage: %s AMX_BF16_PEAK_GFLOPS (dtune info --peaks)\n", argv[0]);
        return 1;
    }
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */)) {
        perror("arch_prctl(ARCH_REQ_XCOMP_PERM)");
        return 3;
    }
    tile_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++)
        cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
    static const char *ends[] = {"no end (C stays in tiles)", "C tiles -> scratch",
                                 "C tiles -> scratch -> rows of C"};
    printf("%% of the tdpbf16ps peak (%.0f GFLOP/s), 1 thread, 32x32 blocks, B panels outer\n",
           peak);
    printf("%-34s %18s %18s %18s\n", "", "128x768x256", "128x768x768", "128x3072x768");
    printf("%-34s %18s %18s %18s\n", "", "(A+B in L1/L2)", "(B 1.2 MB, L2)", "(B 4.7 MB, L3)");
    for (int end = END_NONE; end <= END_ROWS; end++)
        printf("%-34s %17.1f%% %17.1f%% %17.1f%%\n", ends[end], gemm(128, 768, 8, end, peak),
               gemm(128, 768, 24, end, peak), gemm(128, 3072, 24, end, peak));
    printf("128x768x768, K in blocks, C stored to C and loaded back between them (no "
           "epilogue): 3 x 256: %.1f%%, 1 x 768: %.1f%%, 6 x 128: %.1f%%\n",
           gemm_kb(128, 768, 8, 3, peak), gemm_kb(128, 768, 24, 1, peak), gemm_kb(128, 768, 4, 6, peak));
    printf("1x2 blocks, scratch -> rows of C, one C set / two alternating (stores overlapped): "
           "128x768x256 %.1f%% / %.1f%%, 128x768x768 %.1f%% / %.1f%%, 128x3072x768 %.1f%% / "
           "%.1f%%\n",
           gemm_1x2(128, 768, 256, 0, peak), gemm_1x2(128, 768, 256, 1, peak),
           gemm_1x2(128, 768, 768, 0, peak), gemm_1x2(128, 768, 768, 1, peak),
           gemm_1x2(128, 3072, 768, 0, peak), gemm_1x2(128, 3072, 768, 1, peak));
    printf("the same with the next B panel prefetched into L2 (prefetcht1) during each panel: "
           "no end %.1f%% / %.1f%%, rows of C %.1f%% / %.1f%% (128x768x768 / 128x3072x768)\n",
           gemm_pf(128, 768, 24, END_NONE, peak), gemm_pf(128, 3072, 24, END_NONE, peak),
           gemm_pf(128, 768, 24, END_ROWS, peak), gemm_pf(128, 3072, 24, END_ROWS, peak));
    double bw = read_gbps((size_t)8 << 20);
    double bytes = 3072.0 * 768 * 2 + 128.0 * 3072 * 4, flop = 2.0 * 128 * 3072 * 768;
    printf("read bandwidth, 8 MiB (L3): %.1f GB/s; ffn_up M=128 moves >= %.1f MB (B read, C "
           "written): %.0f us at that rate, %.0f us of tdpbf16ps at peak\n",
           bw, bytes / 1e6, bytes / bw / 1e3, flop / peak / 1e3);
    return 0;
}
