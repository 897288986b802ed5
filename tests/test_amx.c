/* AMX groundwork: backends/amx/template/amx_tile.h and common/amx.h.
 *
 * On every machine: the tile emulation (compiled into this test with
 * DT_AMX_EMULATE) against a scalar reference written here independently
 * (exact sums as double-double, rounded to f32 bit by bit), on every tile
 * shape (M 1..16 × N 1..16 × K 1..16 dwords) and random ones, data with
 * denormals, ±0, huge and tiny values, infinities, u8/s8 extremes and s32
 * wraparound; tile loads and stores with strides, TILEZERO, LDTILECFG
 * zeroing; the generated-style kernel source built with the project's
 * builder both emulated (-DDT_AMX_EMULATE) and native (-mamx-*), the
 * emulated one compared with the in-process emulation.
 * Where AMX is usable (dt_amx_usable): the native build run on the same
 * cases, 1 thread and 2 threads at once, bit for bit against the emulation. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include "common/amx.h"
#include "common/target.h"
#include "microkernel/build.h"
#include "peers/peer.h"
#include "tests/dt_test.h"

#ifndef DT_AMX_EMULATE
#define DT_AMX_EMULATE 1
#endif
#include "backends/amx/template/amx_tile.h"

/* ---- the kernel: compiled here (emulated) and kept as text for the builder -- */

/* Defines the code and g_kernel_src, its text (the tokens before macro
 * expansion), so the built shared objects run exactly this source. */
#define DT_AMX_TEST_KERNEL(...)                                                            \
    __VA_ARGS__                                                                            \
    static const char g_kernel_src[] = #__VA_ARGS__;

/* op 0 TDPBF16PS, 1 TDPBUSD, 2 TDPBSSD, 3 TDPBSUD, 4 TDPBUUD.  C is M × N
 * dwords, A M × K dwords, B K × N dwords, strides in bytes; C == NULL
 * starts from TILEZERO (and stores nothing: out gets the tile); A2/B2 not
 * NULL: a second product into the same C tile, from tiles 3 and 4. */
DT_AMX_TEST_KERNEL(
void dtk_amx_run(int op, int M, int N, int K, const void *A, long lda, const void *B, long ldb,
                 const void *A2, const void *B2, const void *C, long ldc, void *out) {
    dt_amx_cfg cfg;
    dt_amx_cfg_init(&cfg);
    dt_amx_cfg_tile(&cfg, 0, M, 4 * N);
    dt_amx_cfg_tile(&cfg, 1, M, 4 * K);
    dt_amx_cfg_tile(&cfg, 2, K, 4 * N);
    dt_amx_cfg_tile(&cfg, 3, M, 4 * K);
    dt_amx_cfg_tile(&cfg, 4, K, 4 * N);
    DT_TILE_CONFIG(&cfg);
    if (C)
        DT_TILE_LOAD(0, C, ldc);
    else
        DT_TILE_ZERO(0);
    DT_TILE_LOAD(1, A, lda);
    DT_TILE_LOAD(2, B, ldb);
    if (A2) {
        DT_TILE_LOAD(3, A2, lda);
        DT_TILE_LOAD(4, B2, ldb);
    }
    switch (op) {
    case 0: DT_TILE_DPBF16PS(0, 1, 2); if (A2) DT_TILE_DPBF16PS(0, 3, 4); break;
    case 1: DT_TILE_DPBUSD(0, 1, 2); if (A2) DT_TILE_DPBUSD(0, 3, 4); break;
    case 2: DT_TILE_DPBSSD(0, 1, 2); if (A2) DT_TILE_DPBSSD(0, 3, 4); break;
    case 3: DT_TILE_DPBSUD(0, 1, 2); if (A2) DT_TILE_DPBSUD(0, 3, 4); break;
    default: DT_TILE_DPBUUD(0, 1, 2); if (A2) DT_TILE_DPBUUD(0, 3, 4); break;
    }
    DT_TILE_STORE(0, out, ldc);
    DT_TILE_RELEASE();
}
)

typedef void (*dt_amx_run_fn)(int op, int M, int N, int K, const void *A, long lda,
                              const void *B, long ldb, const void *A2, const void *B2,
                              const void *C, long ldc, void *out);

/* ---- the independent reference ---------------------------------------------- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A bf16 or f32 input with DAZ, from its bits. */
static double ref_in(uint32_t f32_bits)
{
    if (((f32_bits >> 23) & 0xff) == 0)
        return (f32_bits >> 31) ? -0.0 : 0.0;
    return (double)u2f(f32_bits);
}

/* The exact value s + e (|e| ≤ half an ulp of s, as TwoSum gives) rounded
 * to nearest-even f32 at 24 bits with an unbounded exponent; below 2^-126
 * after that rounding: a zero of its sign (FTZ); 2^128 and up: infinity. */
static float ref_round(double s, double e)
{
    if (isnan(s) || isinf(s))
        return (float)s;
    if (s == 0.0)
        return signbit(s) ? -0.0f : 0.0f;
    int neg = s < 0, ex;
    double f = frexp(fabs(s), &ex);                   /* |s| = f·2^ex, f in [0.5, 1) */
    uint64_t mant = (uint64_t)ldexp(f, 53);           /* 53 bits: |s| = mant·2^(ex-53) */
    uint64_t q = mant >> 29, rem = mant & ((1u << 29) - 1), half = 1u << 28;
    int up;
    if (rem != half)
        up = rem > half;
    else if (e == 0.0)
        up = q & 1;                                   /* a tie: to even */
    else
        up = (e > 0) != neg;                          /* beyond the tie, or short of it */
    q += (uint64_t)up;
    int qex = ex - 24;                                /* result = q·2^qex */
    if (q == (1u << 24)) {
        q >>= 1;
        qex++;
    }
    double r = ldexp((double)q, qex);
    if (r < 0x1p-126)
        return neg ? -0.0f : 0.0f;
    if (r >= 0x1p128)
        return neg ? -INFINITY : INFINITY;
    return neg ? -(float)r : (float)r;
}

/* a + b rounded once (TwoSum: s + e is exactly a + b). */
static float ref_add(double a, double b)
{
    double s = a + b;
    if (isnan(s) || isinf(s))
        return (float)s;
    double bb = s - a, e = (a - (s - bb)) + (b - bb);
    return ref_round(s, e);
}

/* TDPBF16PS by the SDM's pseudo-code, from byte buffers (row strides in bytes). */
static void ref_dpbf16ps(int M, int N, int K, const unsigned char *A, long lda,
                         const unsigned char *B, long ldb, unsigned char *C, long ldc)
{
    for (int m = 0; m < M; m++) {
        float acc[32] = {0};
        for (int k = 0; k < K; k++)
            for (int n = 0; n < N; n++)
                for (int h = 0; h < 2; h++) {
                    uint16_t x, y;
                    memcpy(&x, A + m * lda + 4 * k + 2 * h, 2);
                    memcpy(&y, B + k * ldb + 4 * n + 2 * h, 2);
                    double p = ref_in((uint32_t)x << 16) * ref_in((uint32_t)y << 16); /* exact */
                    acc[2 * n + h] = ref_add(p, acc[2 * n + h]);
                }
        for (int n = 0; n < N; n++) {
            uint32_t cu;
            memcpy(&cu, C + m * ldc + 4 * n, 4);
            float pair = ref_add(acc[2 * n], acc[2 * n + 1]);
            float r = ref_add(ref_in(cu), pair);
            memcpy(C + m * ldc + 4 * n, &r, 4);
        }
    }
}

/* TDPB??D: the s32 sum taken in int64, then reduced modulo 2^32. */
static void ref_dp8(int op, int M, int N, int K, const unsigned char *A, long lda,
                    const unsigned char *B, long ldb, unsigned char *C, long ldc)
{
    int sa = op == 2 || op == 3, sb = op == 1 || op == 2;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t c;
            memcpy(&c, C + m * ldc + 4 * n, 4);
            int64_t sum = c;
            for (int k = 0; k < K; k++)
                for (int i = 0; i < 4; i++) {
                    unsigned char x = A[m * lda + 4 * k + i], y = B[k * ldb + 4 * n + i];
                    sum += (int64_t)(sa ? (int8_t)x : x) * (int64_t)(sb ? (int8_t)y : y);
                }
            uint32_t r = (uint32_t)(uint64_t)sum;
            memcpy(C + m * ldc + 4 * n, &r, 4);
        }
}

/* ---- cases -------------------------------------------------------------------- */

static _Thread_local uint64_t g_rng; /* each thread draws its own cases */

static uint64_t rnd64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int rnd_int(int n) { return (int)(rnd64() % (uint64_t)n); }

/* A bf16 of one of several kinds: moderate normal (most), denormal, ±0,
 * huge (products overflow), tiny (products underflow), ±inf. */
static uint16_t rnd_bf16(int wild)
{
    uint16_t sign = (uint16_t)(rnd64() & 0x8000), man = (uint16_t)(rnd64() & 0x7f);
    int kind = wild ? rnd_int(16) : 0;
    int e;
    switch (kind) {
    case 1: e = 0; break;                                /* denormal or zero */
    case 2: return sign;                                 /* ±0 */
    case 3: e = 200 + rnd_int(54); break;                /* huge */
    case 4: e = 1 + rnd_int(40); break;                  /* tiny */
    case 5: if (rnd_int(4) == 0) return (uint16_t)(sign | 0x7f80); /* ±inf, rarely */
            e = 254; break;
    case 6: e = 60 + rnd_int(10); break;                 /* products near 2^-126 */
    default: e = 117 + rnd_int(21); break;               /* 2^-10 .. 2^10 */
    }
    return (uint16_t)(sign | (e << 7) | man);
}

/* An f32 accumulator of a kind like rnd_bf16's. */
static uint32_t rnd_f32(int wild)
{
    uint32_t sign = (uint32_t)(rnd64() & 0x80000000u), man = (uint32_t)(rnd64() & 0x7fffff);
    int kind = wild ? rnd_int(10) : 0;
    switch (kind) {
    case 1: return sign | man;                           /* denormal */
    case 2: return sign;                                 /* ±0 */
    case 3: return sign | (uint32_t)(230 + rnd_int(24)) << 23 | man;
    case 4: return sign | (uint32_t)(1 + rnd_int(4)) << 23 | man; /* near 2^-126 */
    default: return sign | (uint32_t)(117 + rnd_int(21)) << 23 | man;
    }
}

/* Bytes for the int8 ops: random, or the extremes (255 / -128 / 127). */
static unsigned char rnd_byte(int kind)
{
    switch (kind) {
    case 1: return 0xff;
    case 2: return 0x80;
    case 3: return 0x7f;
    default: return (unsigned char)rnd64();
    }
}

#define GUARD 0xA5
#define BUF (16 * 80 + 64) /* 16 rows of up to 80 bytes (stride padding) */

typedef struct amx_case {
    int op, M, N, K;
    long lda, ldb, ldc;
    int twice, zero;
    unsigned char A[2][BUF], B[2][BUF], C[BUF];
} amx_case;

/* A case of op on the shape, with row padding of 0..12 bytes; wild data
 * (kinds mixed) or moderate; for int8 ops akind/bkind/ckind pick extremes. */
static void make_case(amx_case *c, int op, int M, int N, int K, int wild)
{
    memset(c, 0, sizeof *c);
    c->op = op, c->M = M, c->N = N, c->K = K;
    c->lda = 4 * K + 4 * rnd_int(4);
    c->ldb = 4 * N + 4 * rnd_int(4);
    c->ldc = 4 * N + 4 * rnd_int(4);
    c->twice = rnd_int(4) == 0;
    c->zero = rnd_int(8) == 0;
    memset(c->A, GUARD, sizeof c->A);
    memset(c->B, GUARD, sizeof c->B);
    memset(c->C, GUARD, sizeof c->C);
    int akind = wild ? rnd_int(4) : 0, bkind = wild ? rnd_int(4) : 0;
    for (int t = 0; t < 2; t++) {
        for (int m = 0; m < M; m++)
            for (int j = 0; j < 4 * K; j++) {
                if (op == 0 && j % 2 == 0) {
                    uint16_t h = rnd_bf16(wild);
                    memcpy(&c->A[t][m * c->lda + j], &h, 2);
                } else if (op != 0)
                    c->A[t][m * c->lda + j] = rnd_byte(akind);
            }
        for (int k = 0; k < K; k++)
            for (int j = 0; j < 4 * N; j++) {
                if (op == 0 && j % 2 == 0) {
                    uint16_t h = rnd_bf16(wild);
                    memcpy(&c->B[t][k * c->ldb + j], &h, 2);
                } else if (op != 0)
                    c->B[t][k * c->ldb + j] = rnd_byte(bkind);
            }
    }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            uint32_t v;
            if (op == 0)
                v = rnd_f32(wild);
            else if (wild && rnd_int(3) == 0) /* near the ends: the sums wrap */
                v = rnd_int(2) ? 0x80000000u + (uint32_t)rnd_int(4096)
                               : 0x7fffffffu - (uint32_t)rnd_int(4096);
            else
                v = (uint32_t)rnd64();
            memcpy(&c->C[m * c->ldc + 4 * n], &v, 4);
        }
}

/* Runs a case through fn into out (prefilled with the guard, so bytes the
 * store must not touch are checked too). */
static void run_case(dt_amx_run_fn fn, const amx_case *c, unsigned char *out)
{
    memset(out, GUARD, BUF);
    fn(c->op, c->M, c->N, c->K, c->A[0], c->lda, c->B[0], c->ldb, c->twice ? c->A[1] : NULL,
       c->twice ? c->B[1] : NULL, c->zero ? NULL : c->C, c->ldc, out);
}

/* The reference result of a case into out. */
static void ref_case(const amx_case *c, unsigned char *out)
{
    memset(out, GUARD, BUF);
    for (int m = 0; m < c->M; m++)
        if (c->zero)
            memset(out + m * c->ldc, 0, 4 * (size_t)c->N);
        else
            memcpy(out + m * c->ldc, c->C + m * c->ldc, 4 * (size_t)c->N);
    for (int t = 0; t < (c->twice ? 2 : 1); t++) {
        if (c->op == 0)
            ref_dpbf16ps(c->M, c->N, c->K, c->A[t], c->lda, c->B[t], c->ldb, out, c->ldc);
        else
            ref_dp8(c->op, c->M, c->N, c->K, c->A[t], c->lda, c->B[t], c->ldb, out, c->ldc);
    }
}

static const char *const g_op_names[] = {"tdpbf16ps", "tdpbusd", "tdpbssd", "tdpbsud",
                                         "tdpbuud"};

/* 0 when equal; else prints the first differing output and returns 1. */
static int compare(const amx_case *c, const unsigned char *want, const unsigned char *got,
                   const char *what)
{
    if (!memcmp(want, got, BUF))
        return 0;
    for (int i = 0; i < BUF; i++)
        if (want[i] != got[i]) {
            int row = i / (int)c->ldc, col = (i % (int)c->ldc) / 4;
            uint32_t w, g;
            memcpy(&w, want + (i & ~3), 4);
            memcpy(&g, got + (i & ~3), 4);
            printf("\n    %s: %s M=%d N=%d K=%d twice=%d zero=%d: byte %d (row %d, dword %d): "
                   "want %08x (%a) got %08x (%a)\n",
                   what, g_op_names[c->op], c->M, c->N, c->K, c->twice, c->zero, i, row, col,
                   w, (double)u2f(w), g, (double)u2f(g));
            break;
        }
    return 1;
}

/* Every case the suite runs, in a fixed order from one seed: every shape
 * for tdpbf16ps and tdpbusd (wild and moderate data in turn), then random
 * shapes for all five ops. */
#define N_SHAPES (16 * 16 * 16)
#define N_RANDOM 1500
#define N_CASES (2 * N_SHAPES + N_RANDOM)

static void nth_case(amx_case *c, int i)
{
    g_rng = 0x2545F4914F6CDD1Dull ^ ((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull);
    rnd64();
    if (i < 2 * N_SHAPES) {
        int s = i % N_SHAPES;
        make_case(c, i < N_SHAPES ? 0 : 1, 1 + s / 256, 1 + (s / 16) % 16, 1 + s % 16, s & 1);
    } else {
        make_case(c, rnd_int(5), 1 + rnd_int(16), 1 + rnd_int(16), 1 + rnd_int(16),
                  rnd_int(3) != 0);
    }
}

/* ---- tests -------------------------------------------------------------------- */

static char *g_dir;
static dt_builder g_native_builder, g_emu_builder;
static dt_target g_target;
static int g_fake_no_amx; /* DT_TEST_NO_AMX: g_target's AMX bits cleared */

#define AMX_BITS                                                                           \
    (DT_FEAT_BIT(DT_FEAT_AMX_TILE) | DT_FEAT_BIT(DT_FEAT_AMX_BF16) | DT_FEAT_BIT(DT_FEAT_AMX_INT8))

/* DT_TEST_NO_AMX=1: run as on a CPU without AMX (what Zen machines run). */
static int setup(void)
{
    if (dt_test_kernel_setup(&g_dir, &g_target, &g_native_builder,
                             DT_BUILD_DEFAULT_FLAGS
                             " -mamx-tile -mamx-bf16 -mamx-int8 -Wall -Wextra -Werror"))
        return 1;
    const char *no_amx = getenv("DT_TEST_NO_AMX");
    if (no_amx && *no_amx && strcmp(no_amx, "0") != 0) {
        g_target.cpu_features &= ~AMX_BITS;
        g_target.features &= ~AMX_BITS;
        g_fake_no_amx = 1;
    }
    dt_err e;
    return dt_builder_init(&g_emu_builder, NULL,
                           DT_BUILD_DEFAULT_FLAGS " -DDT_AMX_EMULATE -Wall -Wextra -Werror",
                           g_dir, &e)
               ? 1
               : 0;
}

static int teardown(void) { return dt_test_kernel_teardown(&g_dir); }

/* The emulation (this file's dtk_amx_run) against the reference. */
static void test_emulation_vs_reference(void)
{
    static amx_case c;
    static unsigned char want[BUF], got[BUF];
    int bad = 0, tiles = 0;
    for (int i = 0; i < N_CASES && bad < 5; i++) {
        nth_case(&c, i);
        ref_case(&c, want);
        run_case(dtk_amx_run, &c, got);
        bad += compare(&c, want, got, "emulation vs reference");
        tiles++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    printf("\n    %d tiles: emulation == reference bit for bit\n", tiles);
    dt_test_backend("amx emulation", NULL);
}

/* Hand-checked values: the pair sum is rounded before C is added (the SDM's
 * order), DAZ on inputs, FTZ on the result, wraparound. */
static void test_known_values(void)
{
    /* C = 1, A·B pairs (2^-24, 2^-24): even and odd each 2^-24, the pair
     * sum 2^-23 is exactly representable and 1 + 2^-23 too; adding the
     * products to C one by one would give 1 (each a tie to even). */
    uint16_t a[2] = {0x3380, 0x3380}, b[2] = {0x3f80, 0x3f80}; /* 2^-24, 1 */
    float cin = 1.0f, out = 0;
    dtk_amx_run(0, 1, 1, 1, a, 4, b, 4, NULL, NULL, &cin, 4, &out);
    CU_ASSERT_EQUAL(f2u(out), f2u(1.0f + 0x1p-23f));
    /* a denormal bf16 input counts as zero */
    uint16_t dn[2] = {0x0001, 0x8001};
    cin = 2.0f;
    dtk_amx_run(0, 1, 1, 1, dn, 4, b, 4, NULL, NULL, &cin, 4, &out);
    CU_ASSERT_EQUAL(f2u(out), f2u(2.0f));
    /* a denormal C counts as zero: -denormal + (+0 + +0) is +0 (the
     * accumulators start at +0, and +0 + -0 products stay +0) */
    uint16_t nz[2] = {0x8000, 0x8000};
    cin = u2f(0x80000001u);
    dtk_amx_run(0, 1, 1, 1, nz, 4, b, 4, NULL, NULL, &cin, 4, &out);
    CU_ASSERT_EQUAL(f2u(out), 0x00000000u);
    /* products below 2^-126 are flushed: 2^-70 · 2^-70 */
    uint16_t tiny[2] = {0x1c80, 0x0000};
    uint16_t tb[2] = {0x1c80, 0x0000};
    cin = 0.0f;
    dtk_amx_run(0, 1, 1, 1, tiny, 4, tb, 4, NULL, NULL, &cin, 4, &out);
    CU_ASSERT_EQUAL(f2u(out), 0u);
    /* u8·s8 extremes: 64 products of 255·(-128) from INT32_MIN + 5 wrap */
    unsigned char ua[64], sb[16 * 4];
    memset(ua, 0xff, sizeof ua);
    memset(sb, 0x80, sizeof sb);
    int32_t c32 = INT32_MIN + 5, o32 = 0;
    dtk_amx_run(1, 1, 1, 16, ua, 64, sb, 4, NULL, NULL, &c32, 4, &o32);
    CU_ASSERT_EQUAL((uint32_t)o32, (uint32_t)((int64_t)INT32_MIN + 5 - 64 * 255 * 128));
    CU_ASSERT(o32 > 0);
}

/* Loads and stores with strides, TILEZERO, LDTILECFG clearing old data. */
static void test_load_store(void)
{
    unsigned char src[16 * 80], dst[16 * 80];
    for (int i = 0; i < (int)sizeof src; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    for (int colsb = 4; colsb <= 64; colsb += 4)
        for (int rows = 1; rows <= 16; rows++) {
            dt_amx_cfg cfg;
            dt_amx_cfg_init(&cfg);
            dt_amx_cfg_tile(&cfg, 5, rows, colsb);
            DT_TILE_CONFIG(&cfg);
            DT_TILE_LOAD(5, src, 80);
            memset(dst, GUARD, sizeof dst);
            DT_TILE_STORE(5, dst, 72);
            int ok = 1;
            for (int r = 0; r < 16; r++)
                for (int j = 0; j < 72; j++) {
                    unsigned char want = r < rows && j < colsb ? src[r * 80 + j] : GUARD;
                    ok &= dst[r * 72 + j] == want;
                }
            CU_ASSERT(ok);
            DT_TILE_ZERO(5);
            DT_TILE_STORE(5, dst, 72);
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < colsb; j++)
                    ok &= dst[r * 72 + j] == 0;
            CU_ASSERT(ok);
            /* a new configuration zeroes the tiles */
            DT_TILE_LOAD(5, src, 80);
            DT_TILE_CONFIG(&cfg);
            DT_TILE_STORE(5, dst, 72);
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < colsb; j++)
                    ok &= dst[r * 72 + j] == 0;
            CU_ASSERT(ok);
            DT_TILE_RELEASE();
        }
    /* the configuration operand's layout */
    dt_amx_cfg cfg;
    dt_amx_cfg_init(&cfg);
    dt_amx_cfg_tile(&cfg, 7, 9, 40);
    unsigned char b[64];
    memcpy(b, &cfg, 64);
    CU_ASSERT(b[0] == 1 && b[1] == 0 && b[16 + 14] == 40 && b[16 + 15] == 0 && b[48 + 7] == 9);
}

/* ---- built shared objects ------------------------------------------------------ */

typedef struct built {
    void *handle;
    dt_amx_run_fn fn;
} built;

/* Builds the header and the kernel text with b; 0 or 1 (reason printed). */
static int build_kernel(const dt_builder *b, built *out, const char *what)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/backends/amx/template/amx_tile.h", DTUNE_SOURCE_DIR);
    char *hdr = dt_test_slurp(path);
    size_t n = strlen(hdr) + sizeof g_kernel_src + 64;
    char *src = malloc(n);
    snprintf(src, n, "%s\n%s\n", hdr, g_kernel_src);
    free(hdr);
    dt_build_result r;
    dt_err e;
    int rc = dt_build_one(b, src, &r, &e);
    free(src);
    if (rc || r.status != DT_BUILD_OK) {
        printf("\n    %s build failed: %s\n", what, rc ? e.msg : r.log);
        if (!rc)
            dt_build_result_free(&r);
        return 1;
    }
    out->handle = dlopen(r.so_path, RTLD_NOW | RTLD_LOCAL);
    dt_build_result_free(&r);
    if (!out->handle) {
        printf("\n    %s: dlopen: %s\n", what, dlerror());
        return 1;
    }
    void *sym = dlsym(out->handle, "dtk_amx_run");
    memcpy(&out->fn, &sym, sizeof sym);
    return out->fn ? 0 : 1;
}

/* The builder's emulated build against this file's emulation. */
static void test_built_emulated(void)
{
    built k;
    CU_ASSERT_EQUAL_FATAL(build_kernel(&g_emu_builder, &k, "emulated (-DDT_AMX_EMULATE)"), 0);
    static amx_case c;
    static unsigned char want[BUF], got[BUF];
    int bad = 0;
    for (int i = 0; i < N_CASES && bad < 5; i += 7) {
        nth_case(&c, i);
        run_case(dtk_amx_run, &c, want);
        run_case(k.fn, &c, got);
        bad += compare(&c, want, got, "built emulated vs in-process emulation");
    }
    CU_ASSERT_EQUAL(bad, 0);
    dlclose(k.handle);
}

typedef struct native_job {
    dt_amx_run_fn fn;
    int first, step;
    int tiles, bad;
    int amx_rc;
} native_job;

static void *native_thread(void *arg)
{
    native_job *j = arg;
    amx_case *c = malloc(sizeof *c);
    unsigned char *want = malloc(BUF), *got = malloc(BUF);
    j->amx_rc = dt_amx_request(NULL); /* per process, but asked by each thread */
    for (int i = j->first; !j->amx_rc && i < N_CASES && j->bad < 5; i += j->step) {
        nth_case(c, i);
        run_case(dtk_amx_run, c, want);
        run_case(j->fn, c, got);
        j->bad += compare(c, want, got, "native vs emulation");
        j->tiles++;
    }
    free(c);
    free(want);
    free(got);
    return NULL;
}

/* The native build (compiled everywhere the compiler targets x86-64, run
 * only where AMX is usable) against the emulation, 1 then 2 threads. */
static void test_native_vs_emulation(void)
{
#if !defined(__x86_64__)
    dt_test_backend("amx native tiles", "not an x86-64 machine");
    return;
#else
    built k;
    CU_ASSERT_EQUAL_FATAL(build_kernel(&g_native_builder, &k, "native (-mamx-*)"), 0);
    const char *why;
    if (!dt_amx_usable(&g_target, &why)) {
        dt_test_backend("amx native tiles", why);
        dlclose(k.handle);
        return;
    }
    native_job one = {k.fn, 0, 1, 0, 0, 0};
    native_thread(&one);
    CU_ASSERT_EQUAL(one.amx_rc, 0);
    CU_ASSERT_EQUAL(one.bad, 0);
    printf("\n    1 thread: %d tiles, native == emulation bit for bit\n", one.tiles);
    dlclose(k.handle);
    dt_test_backend("amx native tiles", one.bad ? "native and emulated tiles differ" : NULL);
#endif
}

/* Two threads using tiles at once, each from its own permission request,
 * each with its own tile state (native where usable; the emulation's
 * thread-local state everywhere). */
static void test_two_threads(void)
{
    built k;
    dt_amx_run_fn fn = dtk_amx_run;
    const char *why = "no AMX";
    int native = 0;
#if defined(__x86_64__)
    native = dt_amx_usable(&g_target, &why);
    if (native) {
        CU_ASSERT_EQUAL_FATAL(build_kernel(&g_native_builder, &k, "native (-mamx-*)"), 0);
        fn = k.fn;
    }
#endif
    if (!native)
        dt_test_skip("two threads on native AMX tiles: %s (the emulation runs instead)", why);
    native_job j[2] = {{fn, 0, 2, 0, 0, 0}, {fn, 1, 2, 0, 0, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, native_thread, &j[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(j[i].bad, 0);
        CU_ASSERT(native ? j[i].amx_rc == 0 : 1);
    }
    printf("\n    2 threads: %d + %d tiles (%s) equal\n", j[0].tiles, j[1].tiles,
           native ? "native vs emulation" : "emulation vs emulation");
#if defined(__x86_64__)
    if (native)
        dlclose(k.handle);
#endif
}

/* dt_amx_request and dt_amx_usable agree with the CPU, and repeat. */
static void test_permission(void)
{
    dt_err e1, e2;
    dt_err_clear(&e1);
    dt_err_clear(&e2);
    int r1 = dt_amx_request(&e1), r2 = dt_amx_request(&e2);
    CU_ASSERT_EQUAL(r1, r2);
    CU_ASSERT_STRING_EQUAL(e1.msg, e2.msg);
    const char *why = NULL;
    int usable = dt_amx_usable(&g_target, &why);
    CU_ASSERT_EQUAL(usable, usable ? 1 : 0);
    CU_ASSERT(usable ? why == NULL : why != NULL && *why);
    if (!dt_amx_present(&g_target)) {
        CU_ASSERT(!usable);
        if (!g_fake_no_amx) /* the request asks the real CPU */
            CU_ASSERT_NOT_EQUAL(r1, 0);
    }
    if (usable)
        CU_ASSERT_EQUAL(r1, 0);
    printf("\n    amx: present %d, usable %d%s%s\n", dt_amx_present(&g_target), usable,
           why ? ": " : "", why ? why : "");
    /* the reasons, on targets made up from this one */
    dt_target t = g_target;
    t.cpu_features |= AMX_BITS;
    t.features &= ~AMX_BITS;
    CU_ASSERT(!dt_amx_usable(&t, &why));
    CU_ASSERT(why && strstr(why, "XCR0"));
    CU_ASSERT(dt_amx_present(&t));
    t.cpu_features &= ~AMX_BITS;
    CU_ASSERT(!dt_amx_usable(&t, &why));
    CU_ASSERT(why && !strcmp(why, "this CPU has no AMX"));
    CU_ASSERT(!dt_amx_present(&t));
    t.cpu_features |= DT_FEAT_BIT(DT_FEAT_AMX_TILE);
    t.features |= DT_FEAT_BIT(DT_FEAT_AMX_TILE);
    CU_ASSERT(!dt_amx_usable(&t, &why));
    CU_ASSERT(why && strstr(why, "only part of AMX"));
}

/* `dtune info` and its JSON say what dt_amx_usable says. */
static void test_cli_info(void)
{
    if (g_fake_no_amx) {
        dt_test_skip("dtune info on a CPU without AMX: DT_TEST_NO_AMX changes only this test");
        return;
    }
    const char *why = NULL;
    int usable = dt_amx_usable(&g_target, &why);
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "info"), 0);
    const char *line = strstr(p.out, "\namx:");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    const char *want = usable                       ? "\namx:         present and usable (tile "
                                                      "data permission granted); the bf16/amx "
                                                      "and int8/amx back-ends are searched\n"
                       : dt_amx_present(&g_target) ? "\namx:         present but unusable: "
                                                   : "\namx:         not present\n";
    CU_ASSERT(!strncmp(line, want, strlen(want)));
    CU_ASSERT_PTR_NULL(strstr(p.out, "no AMX GEMM kernels"));
    dt_test_proc_free(&p);
    int code = -1;
    json_t *j = dt_test_run_dtune_json(&code, "info --json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *amx = json_object_get(j, "amx");
    CU_ASSERT(json_is_boolean(json_object_get(amx, "present")));
    CU_ASSERT_EQUAL(json_is_true(json_object_get(amx, "present")), dt_amx_present(&g_target));
    CU_ASSERT_EQUAL(json_is_true(json_object_get(amx, "usable")), usable);
    json_t *reason = json_object_get(amx, "reason");
    CU_ASSERT(usable ? json_is_null(reason)
                     : json_is_string(reason) && !strcmp(json_string_value(reason), why));
    json_decref(j);
}

/* The AMX peak probes: "amx_bf16" / "amx_int8", and where AMX is usable a
 * short measurement at 1 and 2 threads (each OpenMP thread requesting and
 * configuring its own tiles); elsewhere NAN and the reason. */
static void test_peaks(void)
{
    CU_ASSERT_STRING_EQUAL(dt_peak_kind_name(DT_PEAK_AMX_BF16), "amx_bf16");
    CU_ASSERT_STRING_EQUAL(dt_peak_kind_name(DT_PEAK_AMX_INT8), "amx_int8");
    CU_ASSERT_STRING_EQUAL(dt_peak_unit(DT_PEAK_AMX_BF16), "GFLOP/s");
    CU_ASSERT_STRING_EQUAL(dt_peak_unit(DT_PEAK_AMX_INT8), "GOP/s");
    const char *why = NULL;
    /* the probes look at the real machine: DT_TEST_NO_AMX does not apply */
    dt_target real;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect(&real, &e), 0);
    int usable = dt_amx_usable(&real, &why);
    for (int k = DT_PEAK_AMX_BF16; k <= DT_PEAK_AMX_INT8; k++) {
        const char *ins = dt_peak_instruction((dt_peak_kind)k);
        CU_ASSERT_EQUAL(ins != NULL, usable);
        CU_ASSERT_EQUAL(dt_peak_why_not((dt_peak_kind)k) == NULL, usable);
        double one = dt_peak_gops((dt_peak_kind)k, 1, 0.06);
        double two = dt_peak_gops((dt_peak_kind)k, 2, 0.06);
        if (!usable) {
            CU_ASSERT(isnan(one) && isnan(two));
            continue;
        }
        /* every AMX CPU so far does ≥ 1 TOP/s per core; the machine may be
         * shared, so only sanity is judged */
        CU_ASSERT(one > 100.0);
        CU_ASSERT(two > 100.0);
        printf("\n    %s: 1 thread %.0f, 2 threads %.0f %s (%s)", dt_peak_kind_name((dt_peak_kind)k),
               one, two, dt_peak_unit((dt_peak_kind)k), ins);
    }
    if (!usable)
        dt_test_skip("AMX peak probes: %s", why);
    printf("\n");
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"permission: dt_amx_request, dt_amx_usable", test_permission},
        {"emulation vs independent reference, every tile shape", test_emulation_vs_reference},
        {"known values: SDM order, DAZ, FTZ, wraparound", test_known_values},
        {"tile loads and stores with strides, zero, config", test_load_store},
        {"the builder's emulated build == in-process emulation", test_built_emulated},
        {"native tiles == emulation, bit for bit", test_native_vs_emulation},
        {"two threads", test_two_threads},
        {"dtune info: the amx line and JSON", test_cli_info},
        {"peak probes amx_bf16, amx_int8", test_peaks},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"amx", setup, teardown, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
