/* AMX tiles for generated kernels: one API, native or emulated
 * (docs/microkernels.md, "AMX tiles: native or emulated").
 *
 * Native: with -mamx-tile -mamx-bf16 -mamx-int8 (or -march=native on a CPU
 * with AMX) and without DT_AMX_EMULATE, every DT_TILE_* macro is the
 * <immintrin.h> intrinsic.  Emulated: with DT_AMX_EMULATE defined, or when
 * the compiler does not target AMX, the same macros run on plain arrays
 * (8 tiles of 16 rows × 64 bytes per thread) and follow the Intel SDM's
 * pseudo-code for LDTILECFG, TILELOADD, TILESTORED, TILEZERO, TILERELEASE,
 * TDPBF16PS and TDPB[SU][SU]D, including its faults (a fault prints the
 * instruction and the rule broken on stderr and aborts, as #UD/#GP would
 * end the process).  On AMX hardware both give the same bits
 * (tests/test_amx.c).
 *
 * Tile numbers are compile-time constants (the instructions encode them):
 * integer literals 0..7, or macros that expand to one; anything else fails
 * to compile in both modes.  Strides are in bytes.
 *
 *   dt_amx_cfg cfg;
 *   dt_amx_cfg_init(&cfg);
 *   dt_amx_cfg_tile(&cfg, 0, 16, 64);       tmm0: C, 16 × 16 f32
 *   dt_amx_cfg_tile(&cfg, 1, 16, 64);       tmm1: A, 16 × 32 bf16
 *   dt_amx_cfg_tile(&cfg, 2, 16, 64);       tmm2: B, 16 × (16 × 2) bf16
 *   DT_TILE_CONFIG(&cfg);
 *   DT_TILE_LOAD(0, C, 64); DT_TILE_LOAD(1, A, 64); DT_TILE_LOAD(2, B, 64);
 *   DT_TILE_DPBF16PS(0, 1, 2);
 *   DT_TILE_STORE(0, C, 64);
 *   DT_TILE_RELEASE();
 *
 * The process must have AMX permission before a native tile instruction
 * (common/amx.h, dt_amx_request); the emulation needs none. */
#ifndef DT_AMX_TILE_H
#define DT_AMX_TILE_H

#include <stdint.h>
#include <string.h>

#if !defined(DT_AMX_EMULATE) &&                                                            \
    !(defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_BF16__) &&             \
      defined(__AMX_INT8__))
#define DT_AMX_EMULATE 1
#endif
#ifdef DT_AMX_EMULATE
#define DT_AMX_NATIVE 0
#else
#define DT_AMX_NATIVE 1
#endif

/* The 64-byte LDTILECFG operand, palette 1 (SDM vol. 1, "Tile configuration
 * memory format"): byte 0 palette, byte 1 start_row, bytes 2-15 reserved
 * (0), bytes 16-47 bytes per row of tmm0..tmm7 then 8 reserved words,
 * bytes 48-63 rows of tmm0..tmm7 then 8 reserved bytes.  A tile with 0 rows
 * and 0 bytes is unconfigured. */
typedef struct dt_amx_cfg {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} dt_amx_cfg;
_Static_assert(sizeof(dt_amx_cfg) == 64, "the LDTILECFG operand is 64 bytes");

#define DT_AMX_TILES 8     /* palette 1: tmm0..tmm7 */
/* a kernel uses only some helpers (clang -Wunused-function, -Werror) */
#define DT_AMX_FN static inline __attribute__((unused))
#define DT_AMX_MAX_ROWS 16
#define DT_AMX_MAX_COLSB 64

/* Palette 1, every tile unconfigured. */
DT_AMX_FN void dt_amx_cfg_init(dt_amx_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->palette_id = 1;
}

/* Tile t gets rows × colsb bytes (rows ≤ 16, colsb ≤ 64 and a multiple of 4
 * for every instruction but LDTILECFG itself). */
DT_AMX_FN void dt_amx_cfg_tile(dt_amx_cfg *c, int t, int rows, int colsb)
{
    c->rows[t] = (uint8_t)rows;
    c->colsb[t] = (uint16_t)colsb;
}

/* A tile number must be an integer constant 0..7 in both modes. */
#define DT_AMX_CHECK_TILE(t) _Static_assert((t) >= 0 && (t) < DT_AMX_TILES, "tile number 0..7")

#if DT_AMX_NATIVE
/* ---- native: the intrinsics ---------------------------------------------------- */
#include <immintrin.h>

/* GCC's _tile_loadconfig and _tile_loadd tell the compiler they read only 8
 * bytes / nothing from memory, so stores to the operand could be moved past
 * them; the empty asm with a memory clobber keeps them in order. */
#define DT_AMX_MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

#define DT_TILE_CONFIG(cfg)                                                                \
    do {                                                                                   \
        DT_AMX_MEMORY_BARRIER();                                                           \
        _tile_loadconfig(cfg);                                                             \
    } while (0)
#define DT_TILE_RELEASE() _tile_release()
#define DT_TILE_LOAD(t, base, stride)                                                      \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(t);                                                              \
        DT_AMX_MEMORY_BARRIER();                                                           \
        _tile_loadd(t, base, stride);                                                      \
    } while (0)
#define DT_TILE_STORE(t, base, stride)                                                     \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(t);                                                              \
        _tile_stored(t, base, stride);                                                     \
        DT_AMX_MEMORY_BARRIER();                                                           \
    } while (0)
#define DT_TILE_ZERO(t)                                                                    \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(t);                                                              \
        _tile_zero(t);                                                                     \
    } while (0)
#define DT_AMX_DP_(fn, c, a, b)                                                            \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(c);                                                              \
        DT_AMX_CHECK_TILE(a);                                                              \
        DT_AMX_CHECK_TILE(b);                                                              \
        fn(c, a, b);                                                                       \
    } while (0)
#define DT_TILE_DPBF16PS(c, a, b) DT_AMX_DP_(_tile_dpbf16ps, c, a, b)
#define DT_TILE_DPBUSD(c, a, b) DT_AMX_DP_(_tile_dpbusd, c, a, b)
#define DT_TILE_DPBSSD(c, a, b) DT_AMX_DP_(_tile_dpbssd, c, a, b)
#define DT_TILE_DPBSUD(c, a, b) DT_AMX_DP_(_tile_dpbsud, c, a, b)
#define DT_TILE_DPBUUD(c, a, b) DT_AMX_DP_(_tile_dpbuud, c, a, b)

/* The process's permission to use tile data (Linux grants it per process,
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)): asked once by the
 * first kernel call in each loaded kernel, so a kernel runs wherever it is
 * called — a measurement child, dtune bench, libdtune, an exported file.
 * Returns 0, or -1 when the OS refuses (the caller reports it; a tile
 * instruction would then fault). */
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
DT_AMX_FN int dt_amx_permit(void)
{
    static int granted; /* 0 unknown, 1 granted */
    if (__atomic_load_n(&granted, __ATOMIC_ACQUIRE))
        return 0;
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0)
        return -1;
    __atomic_store_n(&granted, 1, __ATOMIC_RELEASE);
    return 0;
}
#else
DT_AMX_FN int dt_amx_permit(void) { return 0; }
#endif

#else
/* ---- emulated: plain arrays ------------------------------------------------------ */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* The tile state of one thread (like the hardware's: per thread, kept
 * between calls until TILERELEASE or the next LDTILECFG).  Bytes outside a
 * tile's configured rows × colsb are kept zero, as the instructions do. */
typedef struct dt_amx_emu {
    int configured;
    unsigned start_row;
    unsigned rows[DT_AMX_TILES], colsb[DT_AMX_TILES];
    unsigned char t[DT_AMX_TILES][DT_AMX_MAX_ROWS][DT_AMX_MAX_COLSB];
} dt_amx_emu;

/* One state per thread, reached through a pthread key of this copy of the
 * header rather than _Thread_local: a generated kernel is a dlopen'ed
 * module, and the dynamic TLS of a module dlclose'd since makes
 * LeakSanitizer's thread scan fault (glibc 2.36, GCC 12's libsanitizer).
 * The key goes with the module (destructor); a thread's state is freed by
 * TILERELEASE (every kernel releases at the end of a thread's work) or when
 * the thread ends. */
#include <pthread.h>
static pthread_key_t dt_amx_emu_key;
static pthread_once_t dt_amx_emu_once = PTHREAD_ONCE_INIT;
static int dt_amx_emu_key_ok;
DT_AMX_FN void dt_amx_emu_key_make(void)
{
    dt_amx_emu_key_ok = pthread_key_create(&dt_amx_emu_key, free) == 0;
}
__attribute__((destructor, unused)) static void dt_amx_emu_key_drop(void)
{
    if (dt_amx_emu_key_ok)
        pthread_key_delete(dt_amx_emu_key);
}
DT_AMX_FN dt_amx_emu *dt_amx_emu_get(void)
{
    pthread_once(&dt_amx_emu_once, dt_amx_emu_key_make);
    dt_amx_emu *s = dt_amx_emu_key_ok ? (dt_amx_emu *)pthread_getspecific(dt_amx_emu_key) : NULL;
    if (!s) {
        s = (dt_amx_emu *)calloc(1, sizeof *s);
        if (!s || !dt_amx_emu_key_ok || pthread_setspecific(dt_amx_emu_key, s)) {
            fputs("AMX emulation: no memory for a thread's tile state\n", stderr);
            abort();
        }
    }
    return s;
}
#define dt_amx_emu_state (*dt_amx_emu_get())

/* #UD / #GP: the process ends, with the rule that was broken. */
DT_AMX_FN void dt_amx_emu_fault(const char *insn, const char *why, int t)
{
    fprintf(stderr, "AMX emulation: %s: %s (tmm%d)\n", insn, why, t);
    abort();
}

/* TILERELEASE: the thread's state goes back to the allocator (the next
 * instruction finds none, as after LDTILECFG of palette 0: unconfigured). */
DT_AMX_FN void dt_amx_emu_release(void)
{
    pthread_once(&dt_amx_emu_once, dt_amx_emu_key_make);
    if (!dt_amx_emu_key_ok)
        return;
    free(pthread_getspecific(dt_amx_emu_key));
    pthread_setspecific(dt_amx_emu_key, NULL);
}

/* LDTILECFG: palette 0 releases; palette 1 checks the reserved fields and
 * every tile (rows ≤ 16, bytes ≤ 64, both zero or neither), then zeroes all
 * tile data; any other palette, or a broken rule, is #GP. */
DT_AMX_FN void dt_amx_emu_config(const void *mem)
{
    unsigned char b[64];
    memcpy(b, mem, 64);
    if (b[0] == 0) {
        dt_amx_emu_release();
        return;
    }
    if (b[0] != 1)
        dt_amx_emu_fault("LDTILECFG", "#GP: palette other than 0 and 1", -1);
    for (int i = 2; i < 16; i++)
        if (b[i])
            dt_amx_emu_fault("LDTILECFG", "#GP: reserved bytes 2-15 not zero", -1);
    for (int i = 32; i < 48; i++)
        if (b[i])
            dt_amx_emu_fault("LDTILECFG", "#GP: bytes per row of tiles 8-15 not zero", -1);
    for (int i = 56; i < 64; i++)
        if (b[i])
            dt_amx_emu_fault("LDTILECFG", "#GP: rows of tiles 8-15 not zero", -1);
    unsigned rows[DT_AMX_TILES], colsb[DT_AMX_TILES];
    for (int t = 0; t < DT_AMX_TILES; t++) {
        colsb[t] = (unsigned)b[16 + 2 * t] | (unsigned)b[17 + 2 * t] << 8; /* little endian */
        rows[t] = b[48 + t];
        if (colsb[t] > DT_AMX_MAX_COLSB)
            dt_amx_emu_fault("LDTILECFG", "#GP: more than 64 bytes per row", t);
        if (rows[t] > DT_AMX_MAX_ROWS)
            dt_amx_emu_fault("LDTILECFG", "#GP: more than 16 rows", t);
        if ((rows[t] == 0) != (colsb[t] == 0))
            dt_amx_emu_fault("LDTILECFG", "#GP: rows or bytes per row zero, not both", t);
    }
    dt_amx_emu_release(); /* all tile data zeroed */
    dt_amx_emu_state.configured = 1;
    dt_amx_emu_state.start_row = b[1];
    for (int t = 0; t < DT_AMX_TILES; t++) {
        dt_amx_emu_state.rows[t] = rows[t];
        dt_amx_emu_state.colsb[t] = colsb[t];
    }
}

/* #UD unless the tiles are configured and t is a configured tile whose rows
 * are whole dwords. */
DT_AMX_FN void dt_amx_emu_check(const char *insn, int t)
{
    if (!dt_amx_emu_state.configured)
        dt_amx_emu_fault(insn, "#UD: tiles not configured", t);
    if (dt_amx_emu_state.rows[t] == 0)
        dt_amx_emu_fault(insn, "#UD: tile not configured", t);
    if (dt_amx_emu_state.colsb[t] % 4)
        dt_amx_emu_fault(insn, "#UD: bytes per row not a multiple of 4", t);
}

/* Zero what lies outside tile t's rows × colsb. */
DT_AMX_FN void dt_amx_emu_zero_outside(int t, unsigned rows, unsigned colsb)
{
    for (unsigned r = 0; r < DT_AMX_MAX_ROWS; r++) {
        if (r >= rows)
            memset(dt_amx_emu_state.t[t][r], 0, DT_AMX_MAX_COLSB);
        else
            memset(dt_amx_emu_state.t[t][r] + colsb, 0, DT_AMX_MAX_COLSB - colsb);
    }
}

/* TILELOADD: rows start_row .. rows-1 from base + row·stride, colsb bytes
 * each; the rest of the tile zeroed; start_row back to 0. */
DT_AMX_FN void dt_amx_emu_load(int t, const void *base, ptrdiff_t stride)
{
    dt_amx_emu_check("TILELOADD", t);
    unsigned rows = dt_amx_emu_state.rows[t], colsb = dt_amx_emu_state.colsb[t];
    if (dt_amx_emu_state.start_row >= rows)
        dt_amx_emu_fault("TILELOADD", "#UD: start_row past the tile's rows", t);
    for (unsigned r = dt_amx_emu_state.start_row; r < rows; r++)
        memcpy(dt_amx_emu_state.t[t][r], (const unsigned char *)base + (ptrdiff_t)r * stride,
               colsb);
    dt_amx_emu_zero_outside(t, rows, colsb);
    dt_amx_emu_state.start_row = 0;
}

/* TILESTORED: rows start_row .. rows-1 to base + row·stride, colsb bytes each. */
DT_AMX_FN void dt_amx_emu_store(int t, void *base, ptrdiff_t stride)
{
    dt_amx_emu_check("TILESTORED", t);
    unsigned rows = dt_amx_emu_state.rows[t], colsb = dt_amx_emu_state.colsb[t];
    if (dt_amx_emu_state.start_row >= rows)
        dt_amx_emu_fault("TILESTORED", "#UD: start_row past the tile's rows", t);
    for (unsigned r = dt_amx_emu_state.start_row; r < rows; r++)
        memcpy((unsigned char *)base + (ptrdiff_t)r * stride, dt_amx_emu_state.t[t][r], colsb);
    dt_amx_emu_state.start_row = 0;
}

/* TILEZERO */
DT_AMX_FN void dt_amx_emu_zero(int t)
{
    if (!dt_amx_emu_state.configured || dt_amx_emu_state.rows[t] == 0)
        dt_amx_emu_fault("TILEZERO", "#UD: tile not configured", t);
    memset(dt_amx_emu_state.t[t], 0, sizeof dt_amx_emu_state.t[t]);
}

/* The shape rules every tile dot product checks (#UD): three distinct
 * configured tiles of whole dwords, C = M × N dwords, A = M × K dwords,
 * B = K × N dwords (N, K ≤ 16 follow from the configuration limits).
 * Sets *m, *n, *k. */
DT_AMX_FN void dt_amx_emu_dp_check(const char *insn, int c, int a, int b, unsigned *m,
                                       unsigned *n, unsigned *k)
{
    if (c == a || c == b || a == b)
        dt_amx_emu_fault(insn, "#UD: source and destination tiles not distinct", c);
    dt_amx_emu_check(insn, c);
    dt_amx_emu_check(insn, a);
    dt_amx_emu_check(insn, b);
    const dt_amx_emu *s = &dt_amx_emu_state;
    *m = s->rows[c];
    *n = s->colsb[c] / 4;
    *k = s->rows[b];
    if (s->colsb[b] / 4 != *n)
        dt_amx_emu_fault(insn, "#UD: B's bytes per row differ from C's", b);
    if (s->rows[a] != *m)
        dt_amx_emu_fault(insn, "#UD: A's rows differ from C's", a);
    if (s->colsb[a] / 4 != *k)
        dt_amx_emu_fault(insn, "#UD: A's dwords per row differ from B's rows", a);
}

/* ---- TDPB[SU][SU]D: s32 += four byte products, modulo 2^32 ---------------------- */

/* sa, sb: 1 when A's / B's bytes are signed.  Every product fits an int32
 * (|255·(-128)| < 2^15) and the sums wrap, so any order gives the same
 * bits; the SDM's order (k, then the four bytes) is kept. */
DT_AMX_FN void dt_amx_emu_dp8(const char *insn, int c, int a, int b, int sa, int sb)
{
    unsigned mm, nn, kk;
    dt_amx_emu_dp_check(insn, c, a, b, &mm, &nn, &kk);
    dt_amx_emu *s = &dt_amx_emu_state;
    for (unsigned m = 0; m < mm; m++)
        for (unsigned n = 0; n < nn; n++) {
            uint32_t acc;
            memcpy(&acc, &s->t[c][m][4 * n], 4);
            for (unsigned k = 0; k < kk; k++)
                for (unsigned i = 0; i < 4; i++) {
                    unsigned char x = s->t[a][m][4 * k + i], y = s->t[b][k][4 * n + i];
                    int32_t xv = sa ? (int32_t)(int8_t)x : (int32_t)x;
                    int32_t yv = sb ? (int32_t)(int8_t)y : (int32_t)y;
                    acc += (uint32_t)(xv * yv);
                }
            memcpy(&s->t[c][m][4 * n], &acc, 4);
        }
    dt_amx_emu_zero_outside(c, mm, 4 * nn);
}

/* ---- TDPBF16PS ------------------------------------------------------------------- */

/* A bf16 as the f32 with its bits on top (make_fp32); denormals are zero
 * (DAZ), keeping the sign. */
DT_AMX_FN float dt_amx_emu_bf16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t u = (uint32_t)h << 16;
    if ((u & 0x7f800000u) == 0)
        u &= 0x80000000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* An f32 input with DAZ. */
DT_AMX_FN float dt_amx_emu_f32(const unsigned char *p)
{
    uint32_t u;
    memcpy(&u, p, 4);
    if ((u & 0x7f800000u) == 0)
        u &= 0x80000000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* s (the exact result, or its double rounding — see below) rounded to
 * nearest-even f32 with FTZ: a result whose rounded magnitude (24 bits,
 * unbounded exponent: x86 detects tininess after rounding) is below 2^-126
 * becomes a zero of its sign.  Overflow rounds to ±inf.
 *
 * Every caller's s is the double sum of two values of at most 24
 * significant bits (an f32, or a bf16·bf16 product: 16 bits, exact in
 * double), and rounding such a sum to 53 bits then to 24 gives the
 * correctly rounded result (53 ≥ 2·24 + 2), so this is the single RNE
 * rounding the SDM asks for.  Assumes the default rounding mode, which
 * dtune never changes. */
DT_AMX_FN float dt_amx_emu_round(double s)
{
    if (!(fabs(s) < 0x1p-126)) /* normal, ±inf, NaN */
        return (float)s;
    /* tiny before rounding: round at 24 bits in the normal range, exactly
     * scaled; only a rounding up to 2^-126 survives */
    float r = (float)(s * 0x1p64);
    if (fabsf(r) >= 0x1p-62f)
        return signbit(s) ? -0x1p-126f : 0x1p-126f;
    return signbit(s) ? -0.0f : 0.0f;
}

/* TDPBF16PS, as the SDM's pseudo-code: per row m of C, 2·N f32
 * accumulators start at +0; for k = 0 .. K-1 and each column n, the even
 * one takes A[m].bf16[2k]·B[k].bf16[2n] and the odd one
 * A[m].bf16[2k+1]·B[k].bf16[2n+1], each an FMA (the product exact, one
 * rounding); then C[m][n] = C[m][n] + (even + odd), two more roundings.
 * Every step RNE, DAZ, FTZ; MXCSR neither read nor written. */
DT_AMX_FN void dt_amx_emu_dpbf16ps(int c, int a, int b)
{
    unsigned mm, nn, kk;
    dt_amx_emu_dp_check("TDPBF16PS", c, a, b, &mm, &nn, &kk);
    dt_amx_emu *s = &dt_amx_emu_state;
    for (unsigned m = 0; m < mm; m++) {
        float acc[2 * 16];
        for (unsigned i = 0; i < 2 * nn; i++)
            acc[i] = 0.0f;
        for (unsigned k = 0; k < kk; k++)
            for (unsigned n = 0; n < nn; n++)
                for (unsigned h = 0; h < 2; h++) {
                    double x = dt_amx_emu_bf16(&s->t[a][m][4 * k + 2 * h]);
                    double y = dt_amx_emu_bf16(&s->t[b][k][4 * n + 2 * h]);
                    acc[2 * n + h] = dt_amx_emu_round(x * y + (double)acc[2 * n + h]);
                }
        for (unsigned n = 0; n < nn; n++) {
            float pair = dt_amx_emu_round((double)acc[2 * n] + (double)acc[2 * n + 1]);
            float cv = dt_amx_emu_f32(&s->t[c][m][4 * n]);
            float r = dt_amx_emu_round((double)cv + (double)pair);
            memcpy(&s->t[c][m][4 * n], &r, 4);
        }
    }
    dt_amx_emu_zero_outside(c, mm, 4 * nn);
}

#define DT_TILE_CONFIG(cfg) dt_amx_emu_config(cfg)
#define DT_TILE_RELEASE() dt_amx_emu_release()
#define DT_TILE_LOAD(t, base, stride)                                                      \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(t);                                                              \
        dt_amx_emu_load(t, base, (ptrdiff_t)(stride));                                     \
    } while (0)
#define DT_TILE_STORE(t, base, stride)                                                     \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(t);                                                              \
        dt_amx_emu_store(t, base, (ptrdiff_t)(stride));                                    \
    } while (0)
#define DT_TILE_ZERO(t)                                                                    \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(t);                                                              \
        dt_amx_emu_zero(t);                                                                \
    } while (0)
#define DT_TILE_DPBF16PS(c, a, b)                                                          \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(c);                                                              \
        DT_AMX_CHECK_TILE(a);                                                              \
        DT_AMX_CHECK_TILE(b);                                                              \
        dt_amx_emu_dpbf16ps(c, a, b);                                                      \
    } while (0)
#define DT_AMX_DP8_(name, c, a, b, sa, sb)                                                 \
    do {                                                                                   \
        DT_AMX_CHECK_TILE(c);                                                              \
        DT_AMX_CHECK_TILE(a);                                                              \
        DT_AMX_CHECK_TILE(b);                                                              \
        dt_amx_emu_dp8(name, c, a, b, sa, sb);                                             \
    } while (0)
#define DT_TILE_DPBUSD(c, a, b) DT_AMX_DP8_("TDPBUSD", c, a, b, 0, 1)
#define DT_TILE_DPBSSD(c, a, b) DT_AMX_DP8_("TDPBSSD", c, a, b, 1, 1)
#define DT_TILE_DPBSUD(c, a, b) DT_AMX_DP8_("TDPBSUD", c, a, b, 1, 0)
#define DT_TILE_DPBUUD(c, a, b) DT_AMX_DP8_("TDPBUUD", c, a, b, 0, 0)

/* the emulation needs no permission */
DT_AMX_FN int dt_amx_permit(void) { return 0; }

#endif /* DT_AMX_NATIVE */

#endif
