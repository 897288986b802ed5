/* The machine's measured compute ceilings, one per dtype (peers/peer.h,
 * docs/peers.md): dt_peak_gops and the f32 wrapper dt_fma_peak_gflops.
 *
 * Each of `threads` OpenMP threads runs PEAK_CHAINS independent chains of one
 * instruction — FMA (f32), vdpbf16ps (bf16), vpdpbusd (int8) — on the widest
 * vectors the CPU and OS support (common/target.h's usable features).  The
 * chains hide the instruction's latency: two pipes × a latency of up to 6
 * cycles needs 12; 16 leave room (and 16 accumulators + 2 operands fit the
 * 32 zmm registers without spills).
 *
 * Two things make such loops lie, and both are guarded against:
 *   - chains the compiler can prove equal are merged (GCC does, and the
 *     probe then reads high): every chain starts from a different value,
 *     read from a volatile, so no two are provably the same;
 *   - a loop whose result is unused is deleted: every accumulator is summed
 *     into a volatile sink at the end.
 * The vector functions are compiled with target attributes, so the file
 * needs no -march flags.
 *
 * AMX (amx_bf16 tdpbf16ps, amx_int8 tdpbusd): each thread asks for the
 * process's tile permission (dt_amx_request; granted once per process, but
 * every thread about to use tiles asks), configures its own 8 tiles as
 * 16 rows × 64 bytes, loads A and B once (tmm6, tmm7) and AMX_CHAINS
 * accumulators (tmm0..5, each from different values), then runs
 * tdpbf16ps / tdpbusd tmm_i, tmm6, tmm7 round-robin: six independent
 * chains cover the instruction's latency (a TMUL op every 16 cycles, a
 * result ~50 cycles later).  The tiles are stored and summed into the sink
 * at the end, and released. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PEAK_X86 1
#endif

#include "common/amx.h"
#include "common/clock.h"
#include "common/mem.h"
#include "common/target.h"
#include "peers/peer.h"
#include "peers/peer_internal.h"

#define PEAK_CHAINS 16
#define PEAK_BLOCK 1024 /* iterations between clock reads (8K+ cycles) */

/* S(i) for each chain i: the unrolled body of one iteration. */
#define PEAK_UNROLL(S)                                                                     \
    S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)

/* Runs BODY (one iteration of every chain) in blocks of PEAK_BLOCK until
 * `seconds` have passed; sets *elapsed and returns the instructions done. */
#define PEAK_TIMED_LOOP(BODY)                                                              \
    uint64_t blocks = 0;                                                                   \
    double t0 = dt_now_s(), t;                                                             \
    do {                                                                                   \
        for (int it = 0; it < PEAK_BLOCK; it++) {                                          \
            PEAK_UNROLL(BODY)                                                              \
        }                                                                                  \
        blocks++;                                                                          \
        t = dt_now_s();                                                                    \
    } while (t - t0 < seconds);                                                            \
    *elapsed = t - t0

#define PEAK_INSTRUCTIONS (blocks * PEAK_BLOCK * PEAK_CHAINS)

/* Inputs from volatiles (not constants the compiler could fold), results
 * into volatiles (so the loops stay). */
static volatile float peak_mul = 0.999999f, peak_add = 1e-6f, peak_seed = 0.5f;
static volatile float peak_bf16_a = 1e-3f, peak_bf16_b = -2e-3f;
static volatile int32_t peak_seed_i = 1, peak_u8 = 3, peak_s8 = -2;
static volatile float peak_sink;
static volatile int32_t peak_sink_i;

/* ---- f32: c = c·a + b (converges to a fixed point: stays normal) ------------ */

#ifdef PEAK_X86
__attribute__((target("avx512f"), noinline)) static uint64_t f32_avx512(double seconds,
                                                                         double *elapsed)
{
    __m512 a = _mm512_set1_ps(peak_mul), b = _mm512_set1_ps(peak_add);
    __m512 c[PEAK_CHAINS];
    for (int i = 0; i < PEAK_CHAINS; i++)
        c[i] = _mm512_set1_ps(peak_seed + 0.01f * (float)i);
#define STEP(i) c[i] = _mm512_fmadd_ps(c[i], a, b);
    PEAK_TIMED_LOOP(STEP);
#undef STEP
    __m512 s = c[0];
    for (int i = 1; i < PEAK_CHAINS; i++)
        s = _mm512_add_ps(s, c[i]);
    peak_sink = _mm512_reduce_add_ps(s);
    return PEAK_INSTRUCTIONS;
}

__attribute__((target("avx2,fma"), noinline)) static uint64_t f32_avx2(double seconds,
                                                                       double *elapsed)
{
    __m256 a = _mm256_set1_ps(peak_mul), b = _mm256_set1_ps(peak_add);
    __m256 c[PEAK_CHAINS];
    for (int i = 0; i < PEAK_CHAINS; i++)
        c[i] = _mm256_set1_ps(peak_seed + 0.01f * (float)i);
#define STEP(i) c[i] = _mm256_fmadd_ps(c[i], a, b);
    PEAK_TIMED_LOOP(STEP);
#undef STEP
    __m256 s = c[0];
    for (int i = 1; i < PEAK_CHAINS; i++)
        s = _mm256_add_ps(s, c[i]);
    float lanes[8], sum = 0.0f;
    _mm256_storeu_ps(lanes, s);
    for (int i = 0; i < 8; i++)
        sum += lanes[i];
    peak_sink = sum;
    return PEAK_INSTRUCTIONS;
}
#endif

__attribute__((noinline)) static uint64_t f32_scalar(double seconds, double *elapsed)
{
    float a = peak_mul, b = peak_add, c[PEAK_CHAINS];
    for (int i = 0; i < PEAK_CHAINS; i++)
        c[i] = peak_seed + 0.01f * (float)i;
#define STEP(i) c[i] = c[i] * a + b;
    PEAK_TIMED_LOOP(STEP);
#undef STEP
    float sum = 0.0f;
    for (int i = 0; i < PEAK_CHAINS; i++)
        sum += c[i];
    peak_sink = sum;
    return PEAK_INSTRUCTIONS;
}

/* ---- bf16: c += Σ pairs a·b (vdpbf16ps: 16 lanes × 2 products) -------------- */

#ifdef PEAK_X86
__attribute__((target("avx512f,avx512bf16"), noinline)) static uint64_t
bf16_avx512(double seconds, double *elapsed)
{
    /* the products are small (2e-6): the sums grow slowly and stay finite */
    __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(peak_bf16_a), _mm512_set1_ps(peak_bf16_a));
    __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(peak_bf16_b), _mm512_set1_ps(peak_bf16_b));
    __m512 c[PEAK_CHAINS];
    for (int i = 0; i < PEAK_CHAINS; i++)
        c[i] = _mm512_set1_ps(peak_seed + 0.01f * (float)i);
#define STEP(i) c[i] = _mm512_dpbf16_ps(c[i], a, b);
    PEAK_TIMED_LOOP(STEP);
#undef STEP
    __m512 s = c[0];
    for (int i = 1; i < PEAK_CHAINS; i++)
        s = _mm512_add_ps(s, c[i]);
    peak_sink = _mm512_reduce_add_ps(s);
    return PEAK_INSTRUCTIONS;
}

/* ---- int8: c += Σ quads u8·s8 (vpdpbusd; s32 sums wrap, harmlessly) --------- */

__attribute__((target("avx512f,avx512vnni"), noinline)) static uint64_t
int8_avx512(double seconds, double *elapsed)
{
    __m512i a = _mm512_set1_epi8((char)peak_u8), b = _mm512_set1_epi8((char)peak_s8);
    __m512i c[PEAK_CHAINS];
    for (int i = 0; i < PEAK_CHAINS; i++)
        c[i] = _mm512_set1_epi32(peak_seed_i + i);
#define STEP(i) c[i] = _mm512_dpbusd_epi32(c[i], a, b);
    PEAK_TIMED_LOOP(STEP);
#undef STEP
    __m512i s = c[0];
    for (int i = 1; i < PEAK_CHAINS; i++)
        s = _mm512_add_epi32(s, c[i]);
    /* not _mm512_reduce_add_epi32: GCC writes it with signed int adds, and
     * the wrapped sums overflow (undefined behaviour, UBSan says so) */
    uint32_t lanes[16], sum = 0;
    _mm512_storeu_si512(lanes, s);
    for (int i = 0; i < 16; i++)
        sum += lanes[i];
    peak_sink_i = (int32_t)sum;
    return PEAK_INSTRUCTIONS;
}

__attribute__((target("avx2,avxvnni"), noinline)) static uint64_t int8_avxvnni(double seconds,
                                                                               double *elapsed)
{
    __m256i a = _mm256_set1_epi8((char)peak_u8), b = _mm256_set1_epi8((char)peak_s8);
    __m256i c[PEAK_CHAINS];
    for (int i = 0; i < PEAK_CHAINS; i++)
        c[i] = _mm256_set1_epi32(peak_seed_i + i);
#define STEP(i) c[i] = _mm256_dpbusd_avx_epi32(c[i], a, b);
    PEAK_TIMED_LOOP(STEP);
#undef STEP
    __m256i s = c[0];
    for (int i = 1; i < PEAK_CHAINS; i++)
        s = _mm256_add_epi32(s, c[i]);
    uint32_t lanes[8], sum = 0; /* unsigned: wraps without undefined behaviour */
    _mm256_storeu_si256((__m256i *)lanes, s);
    for (int i = 0; i < 8; i++)
        sum += lanes[i];
    peak_sink_i = (int32_t)sum;
    return PEAK_INSTRUCTIONS;
}
#endif

/* ---- AMX: tile dot products (16×16 accumulators, K = 32 bf16 or 64 bytes) --- */

#if defined(__x86_64__)
#define PEAK_AMX 1
#define AMX_CHAINS 6
#define AMX_BLOCK 256 /* iterations (6 instructions, ~100 cycles each) between clock reads */

/* The 64-byte LDTILECFG operand, palette 1: every tile 16 rows × 64 bytes. */
static void amx_config(unsigned char cfg[64])
{
    memset(cfg, 0, 64);
    cfg[0] = 1;
    for (int t = 0; t < 8; t++) {
        cfg[16 + 2 * t] = 64;
        cfg[48 + t] = 16;
    }
}

/* A (tmm6) and B (tmm7) tiles of one repeated 32-bit pattern; C tiles
 * (tmm0..5) of chain-specific 32-bit values. */
typedef struct amx_tiles {
    _Alignas(64) uint32_t ab[16][16];
    _Alignas(64) uint32_t ba[16][16];
    _Alignas(64) uint32_t c[AMX_CHAINS][16][16];
} amx_tiles;

#define AMX_LOOP(INSN)                                                                     \
    uint64_t blocks = 0;                                                                   \
    double t0 = dt_now_s(), t;                                                             \
    do {                                                                                   \
        for (int it = 0; it < AMX_BLOCK; it++) {                                           \
            INSN(0, 6, 7);                                                                 \
            INSN(1, 6, 7);                                                                 \
            INSN(2, 6, 7);                                                                 \
            INSN(3, 6, 7);                                                                 \
            INSN(4, 6, 7);                                                                 \
            INSN(5, 6, 7);                                                                 \
        }                                                                                  \
        blocks++;                                                                          \
        t = dt_now_s();                                                                    \
    } while (t - t0 < seconds);                                                            \
    *elapsed = t - t0

#define AMX_LOAD_ALL(x)                                                                    \
    do {                                                                                   \
        __asm__ volatile("" ::: "memory");                                                 \
        _tile_loadd(0, (x)->c[0], 64);                                                     \
        _tile_loadd(1, (x)->c[1], 64);                                                     \
        _tile_loadd(2, (x)->c[2], 64);                                                     \
        _tile_loadd(3, (x)->c[3], 64);                                                     \
        _tile_loadd(4, (x)->c[4], 64);                                                     \
        _tile_loadd(5, (x)->c[5], 64);                                                     \
        _tile_loadd(6, (x)->ab, 64);                                                       \
        _tile_loadd(7, (x)->ba, 64);                                                       \
    } while (0)

#define AMX_STORE_ALL(x)                                                                   \
    do {                                                                                   \
        _tile_stored(0, (x)->c[0], 64);                                                    \
        _tile_stored(1, (x)->c[1], 64);                                                    \
        _tile_stored(2, (x)->c[2], 64);                                                    \
        _tile_stored(3, (x)->c[3], 64);                                                    \
        _tile_stored(4, (x)->c[4], 64);                                                    \
        _tile_stored(5, (x)->c[5], 64);                                                    \
        __asm__ volatile("" ::: "memory");                                                 \
    } while (0)

/* The bits of a float as a uint32 */
static uint32_t peak_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Two bf16 (round-to-nearest-even of f) in one dword. */
static uint32_t peak_bf16_pair(float f)
{
    uint32_t u = peak_f32_bits(f);
    uint32_t h = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return h | h << 16;
}

__attribute__((target("amx-tile,amx-bf16"), noinline)) static uint64_t amx_bf16(double seconds,
                                                                              double *elapsed)
{
    *elapsed = 0.0;
    if (dt_amx_request(NULL))
        return 0;
    amx_tiles *x = dt_alloc64(sizeof *x);
    if (!x)
        return 0;
    /* products 2e-6 per pair: the sums grow slowly and stay finite */
    uint32_t a = peak_bf16_pair(peak_bf16_a), b = peak_bf16_pair(peak_bf16_b);
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < 16; j++) {
            x->ab[r][j] = a;
            x->ba[r][j] = b;
            for (int i = 0; i < AMX_CHAINS; i++)
                x->c[i][r][j] = peak_f32_bits(peak_seed + 0.01f * (float)i);
        }
    unsigned char cfg[64];
    amx_config(cfg);
    __asm__ volatile("" ::: "memory");
    _tile_loadconfig(cfg);
    AMX_LOAD_ALL(x);
    AMX_LOOP(_tile_dpbf16ps);
    AMX_STORE_ALL(x);
    _tile_release();
    float sum = 0.0f;
    for (int i = 0; i < AMX_CHAINS; i++) {
        float f;
        memcpy(&f, &x->c[i][i][i], 4);
        sum += f;
    }
    peak_sink = sum;
    free(x);
    return blocks * AMX_BLOCK * AMX_CHAINS;
}

__attribute__((target("amx-tile,amx-int8"), noinline)) static uint64_t amx_int8(double seconds,
                                                                              double *elapsed)
{
    *elapsed = 0.0;
    if (dt_amx_request(NULL))
        return 0;
    amx_tiles *x = dt_alloc64(sizeof *x);
    if (!x)
        return 0;
    uint32_t a = (uint8_t)peak_u8 * 0x01010101u, b = (uint8_t)(int8_t)peak_s8 * 0x01010101u;
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < 16; j++) {
            x->ab[r][j] = a;
            x->ba[r][j] = b;
            for (int i = 0; i < AMX_CHAINS; i++)
                x->c[i][r][j] = (uint32_t)(peak_seed_i + i);
        }
    unsigned char cfg[64];
    amx_config(cfg);
    __asm__ volatile("" ::: "memory");
    _tile_loadconfig(cfg);
    AMX_LOAD_ALL(x);
    AMX_LOOP(_tile_dpbusd);
    AMX_STORE_ALL(x);
    _tile_release();
    uint32_t sum = 0; /* unsigned: the s32 sums wrap */
    for (int i = 0; i < AMX_CHAINS; i++)
        sum += x->c[i][i][i];
    peak_sink_i = (int32_t)sum;
    free(x);
    return blocks * AMX_BLOCK * AMX_CHAINS;
}
#endif

/* ---- the probes, best first per kind ------------------------------------------ */

typedef struct peak_probe {
    dt_peak_kind kind;
    uint32_t needs;      /* DT_FEAT_BIT mask of usable features */
    int amx;             /* also needs the process's AMX tile permission */
    int madds;           /* multiply-adds per instruction */
    const char *instruction;
    uint64_t (*kernel)(double seconds, double *elapsed);
} peak_probe;

#define F(x) DT_FEAT_BIT(DT_FEAT_##x)
static const peak_probe probes[] = {
#ifdef PEAK_X86
    {DT_PEAK_F32_FMA, F(AVX512F) | F(FMA), 0, 16, "avx512 vfmadd231ps zmm", f32_avx512},
    {DT_PEAK_F32_FMA, F(AVX2) | F(FMA), 0, 8, "avx2 vfmadd231ps ymm", f32_avx2},
#endif
    {DT_PEAK_F32_FMA, 0, 0, 1, "scalar multiply-add", f32_scalar},
#ifdef PEAK_X86
    {DT_PEAK_BF16_DP, F(AVX512F) | F(AVX512_BF16), 0, 32, "avx512_bf16 vdpbf16ps zmm",
     bf16_avx512},
    {DT_PEAK_INT8_DP, F(AVX512F) | F(AVX512_VNNI), 0, 64, "avx512_vnni vpdpbusd zmm",
     int8_avx512},
    {DT_PEAK_INT8_DP, F(AVX2) | F(AVX_VNNI), 0, 32, "avx_vnni vpdpbusd ymm", int8_avxvnni},
#endif
#ifdef PEAK_AMX
    {DT_PEAK_AMX_BF16, F(AMX_TILE) | F(AMX_BF16), 1, 16 * 16 * 32,
     "amx_bf16 tdpbf16ps tmm (16x16 f32, K=32 bf16)", amx_bf16},
    {DT_PEAK_AMX_INT8, F(AMX_TILE) | F(AMX_INT8), 1, 16 * 16 * 64,
     "amx_int8 tdpbusd tmm (16x16 s32, K=64 u8*s8)", amx_int8},
#endif
};
#undef F

/* The first probe of k this machine can run, or NULL. */
static const peak_probe *probe_for(dt_peak_kind k)
{
    uint32_t have = dt_peer_machine()->features;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        if (probes[i].kind == k && (have & probes[i].needs) == probes[i].needs &&
            (!probes[i].amx || dt_amx_usable(dt_peer_machine(), NULL)))
            return &probes[i];
    return NULL;
}

static int kind_is_amx(dt_peak_kind k)
{
    return k == DT_PEAK_AMX_BF16 || k == DT_PEAK_AMX_INT8;
}

const char *dt_peak_why_not(dt_peak_kind k)
{
    if (probe_for(k))
        return NULL;
    const char *why = NULL;
    if (kind_is_amx(k) && !dt_amx_usable(dt_peer_machine(), &why) && why)
        return why;
    return "no instruction on this CPU";
}

const char *dt_peak_kind_name(dt_peak_kind k)
{
    static const char *const names[DT_PEAK_COUNT] = {"f32", "bf16", "int8", "amx_bf16",
                                                     "amx_int8"};
    return k >= 0 && k < DT_PEAK_COUNT ? names[k] : "?";
}

const char *dt_peak_unit(dt_peak_kind k)
{
    return k == DT_PEAK_INT8_DP || k == DT_PEAK_AMX_INT8 ? "GOP/s" : "GFLOP/s";
}

const char *dt_peak_instruction(dt_peak_kind k)
{
    const peak_probe *pr = probe_for(k);
    return pr ? pr->instruction : NULL;
}

double dt_peak_gops(dt_peak_kind k, int threads, double seconds)
{
    const peak_probe *pr = probe_for(k);
    if (!pr)
        return NAN;
    if (threads < 1)
        threads = 1;
    if (!(seconds > 0.0) || !isfinite(seconds))
        seconds = 0.1;
    const int repeats = 3;
    double each = seconds / repeats;
    if (each < 1e-3)
        each = 1e-3;

    double best = 0.0;
    for (int r = 0; r < repeats; r++) {
        double total = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            double elapsed = 0.0;
#pragma omp barrier
            uint64_t n = pr->kernel(each, &elapsed);
            if (elapsed > 0.0)
                total += 2.0 * (double)pr->madds * (double)n / elapsed * 1e-9;
        }
        if (total > best)
            best = total;
    }
    return best;
}

double dt_fma_peak_gflops(int threads, double seconds)
{
    return dt_peak_gops(DT_PEAK_F32_FMA, threads, seconds);
}
