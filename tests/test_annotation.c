/* Tests of space/annotation: names, the PRNG, validation (a table of
 * invalid annotations with the reason each must give), sampling (validity,
 * coverage, bias, determinism), mutation, crossover, and JSON.  Targets are
 * built by hand, never detected, so every result is deterministic. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/target.h"
#include "space/annotation.h"
#include "tests/dt_test.h"

/* ---- targets --------------------------------------------------------------- */

static dt_target make_target(const char *arch, dt_isa isa, int cores, uint64_t l1d, uint64_t l2,
                             uint64_t l3)
{
    dt_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.arch, sizeof t.arch, "%s", arch);
    snprintf(t.vendor, sizeof t.vendor, "test");
    snprintf(t.model, sizeof t.model, "Test CPU");
    t.isa_max = isa;
    dt_target_set_isa(&t, isa);
    t.logical_cpus = t.physical_cores = t.cores = cores;
    t.l1d.size = l1d;
    t.l2.size = l2;
    t.l3.size = l3;
    t.line_size = 64;
    return t;
}

#define KiB(x) ((uint64_t)(x) << 10)
#define MiB(x) ((uint64_t)(x) << 20)

/* This machine: AVX-512, 2 cores, 48K / 1M / 32M. */
static dt_target t_avx512(void)
{
    return make_target("x86_64", DT_ISA_AVX512, 2, KiB(48), MiB(1), MiB(32));
}
/* An AVX2 desktop: 16 ymm, 4 cores, 32K / 256K / 8M. */
static dt_target t_avx2(void)
{
    return make_target("x86_64", DT_ISA_AVX2, 4, KiB(32), KiB(256), MiB(8));
}
/* Generic on x86 (16 registers of 4 floats), 1 core, 32K / 512K. */
static dt_target t_generic_x86(void)
{
    return make_target("x86_64", DT_ISA_GENERIC, 1, KiB(32), KiB(512), 0);
}
/* Generic on aarch64 (32 NEON registers), 4 cores, 64K / 1536K, no L3. */
static dt_target t_generic_arm(void)
{
    return make_target("aarch64", DT_ISA_GENERIC, 4, KiB(64), KiB(1536), 0);
}

typedef dt_target (*target_fn)(void);
static const struct {
    const char *name;
    target_fn make;
} targets[] = {
    {"avx512", t_avx512},
    {"avx2", t_avx2},
    {"generic-x86", t_generic_x86},
    {"generic-arm", t_generic_arm},
};
#define NTARGETS ((int)(sizeof targets / sizeof targets[0]))

/* A valid blocked AVX-512 annotation: 6x64 tile (6*4+4+1 = 29 registers),
 * B micro-panel 128*64*4 = 32K <= 48K, A block 96*128*4 = 48K. */
static dt_annotation base_blocked(void)
{
    dt_annotation a = {
        .sketch = DT_SKETCH_BLOCKED,
        .isa = DT_ISA_AVX512,
        .mr = 6,
        .nr = 64,
        .kc = 128,
        .mc = 96,
        .nc = 1024,
        .unroll = 4,
        .prefetch = 8,
        .store = DT_STORE_MASK,
        .order = DT_ORDER_M_INNER,
        .par = DT_PAR_N,
        .threads = 2,
    };
    return a;
}

static dt_annotation base_stream(void)
{
    dt_annotation a = base_blocked();
    a.sketch = DT_SKETCH_STREAM;
    a.mr = 4;
    a.nr = 96;
    a.kc = 0;
    a.mc = 0;
    a.nc = 768;
    return a;
}

static void print_ann(const char *what, const dt_annotation *a)
{
    char *s = dt_annotation_to_string(a);
    fprintf(stderr, "%s: %s\n", what, s ? s : "(null)");
    free(s);
}

static int expect_valid(const dt_annotation *a, const dt_target *t)
{
    dt_err e;
    dt_err_clear(&e);
    int rc = dt_annotation_validate(a, t, &e);
    if (rc) {
        print_ann("unexpectedly invalid", a);
        fprintf(stderr, "  reason: %s\n", e.msg);
    }
    return rc == 0;
}

/* Number of fields in which a and b differ, and their bit mask (bit i =
 * field i in JSON key order). */
static int diff_fields(const dt_annotation *a, const dt_annotation *b, unsigned *mask)
{
    int v[2][13];
    const dt_annotation *x[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int k = 0;
        v[i][k++] = (int)x[i]->sketch;
        v[i][k++] = (int)x[i]->isa;
        v[i][k++] = x[i]->mr;
        v[i][k++] = x[i]->nr;
        v[i][k++] = x[i]->kc;
        v[i][k++] = x[i]->mc;
        v[i][k++] = x[i]->nc;
        v[i][k++] = x[i]->unroll;
        v[i][k++] = x[i]->prefetch;
        v[i][k++] = (int)x[i]->store;
        v[i][k++] = (int)x[i]->order;
        v[i][k++] = (int)x[i]->par;
        v[i][k++] = x[i]->threads;
    }
    int n = 0;
    *mask = 0;
    for (int k = 0; k < 13; k++) {
        if (v[0][k] != v[1][k]) {
            n++;
            *mask |= 1u << k;
        }
    }
    return n;
}
enum { B_SKETCH = 1 << 0, B_ISA = 1 << 1, B_MR = 1 << 2, B_NR = 1 << 3, B_KC = 1 << 4,
       B_MC = 1 << 5, B_NC = 1 << 6, B_UNROLL = 1 << 7, B_PREFETCH = 1 << 8, B_STORE = 1 << 9,
       B_ORDER = 1 << 10, B_PAR = 1 << 11, B_THREADS = 1 << 12 };

/* ---- names and PRNG ---------------------------------------------------------- */

static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(dt_sketch_name(DT_SKETCH_BLOCKED), "blocked");
    CU_ASSERT_STRING_EQUAL(dt_sketch_name(DT_SKETCH_STREAM), "stream");
    CU_ASSERT_STRING_EQUAL(dt_sketch_name((dt_sketch_kind)7), "?");
    CU_ASSERT_STRING_EQUAL(dt_par_name(DT_PAR_N), "n");
    CU_ASSERT_STRING_EQUAL(dt_par_name(DT_PAR_M), "m");
    CU_ASSERT_STRING_EQUAL(dt_par_name(DT_PAR_MN), "mn");
    CU_ASSERT_STRING_EQUAL(dt_par_name((dt_par_axis)3), "?");
    CU_ASSERT_STRING_EQUAL(dt_store_name(DT_STORE_MASK), "mask");
    CU_ASSERT_STRING_EQUAL(dt_store_name(DT_STORE_SCRATCH), "scratch");
    CU_ASSERT_STRING_EQUAL(dt_store_name((dt_store_kind)2), "?");
    CU_ASSERT_STRING_EQUAL(dt_order_name(DT_ORDER_M_INNER), "m_inner");
    CU_ASSERT_STRING_EQUAL(dt_order_name(DT_ORDER_N_INNER), "n_inner");
    CU_ASSERT_STRING_EQUAL(dt_order_name((dt_loop_order)2), "?");
    for (int i = 0; i < DT_SKETCH_COUNT; i++) {
        dt_sketch_kind k = DT_SKETCH_COUNT;
        CU_ASSERT_EQUAL(dt_sketch_from_name(dt_sketch_name((dt_sketch_kind)i), &k), 0);
        CU_ASSERT_EQUAL((int)k, i);
    }
    dt_sketch_kind k = DT_SKETCH_STREAM;
    CU_ASSERT_EQUAL(dt_sketch_from_name("Blocked", &k), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_sketch_from_name("", &k), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_sketch_from_name(NULL, &k), DT_EINVAL);
    CU_ASSERT_EQUAL(k, DT_SKETCH_STREAM); /* untouched on error */
}

static void test_rng(void)
{
    dt_rng a, b, c;
    dt_rng_seed(&a, 1);
    dt_rng_seed(&b, 1);
    dt_rng_seed(&c, 2);
    int same = 1, differ = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = dt_rng_next(&a), y = dt_rng_next(&b), z = dt_rng_next(&c);
        same &= x == y;
        differ |= x != z;
    }
    CU_ASSERT(same);
    CU_ASSERT(differ);
    /* splitmix64 reference value: first output for seed 0 */
    dt_rng_seed(&a, 0);
    CU_ASSERT_EQUAL(dt_rng_next(&a), UINT64_C(0xE220A8397B1DCDAF));

    CU_ASSERT_EQUAL(dt_rng_below(&a, 1), 0);
    CU_ASSERT_EQUAL(dt_rng_below(&a, 0), 0);
    CU_ASSERT_EQUAL(dt_rng_below(&a, -5), 0);
    /* uniformity: 60000 draws in 6 bins, each within 5% of 10000 */
    int bins[6] = {0};
    for (int i = 0; i < 60000; i++) {
        int v = dt_rng_below(&a, 6);
        CU_ASSERT_FATAL(v >= 0 && v < 6);
        bins[v]++;
    }
    for (int i = 0; i < 6; i++)
        CU_ASSERT(bins[i] > 9500 && bins[i] < 10500);
    /* large n stays in range */
    for (int i = 0; i < 1000; i++) {
        int v = dt_rng_below(&a, 2147483647);
        CU_ASSERT(v >= 0 && v < 2147483647);
    }
}

/* ---- validation ---------------------------------------------------------------- */

static void test_validate_valid(void)
{
    dt_target t512 = t_avx512(), t2 = t_avx2(), tg = t_generic_x86(), ta = t_generic_arm();
    dt_annotation a = base_blocked();
    CU_ASSERT(expect_valid(&a, &t512));
    a = base_stream();
    CU_ASSERT(expect_valid(&a, &t512));

    /* register-file edges on AVX-512: 30x16 (30+1+1), 14x32, 9x48, 6x64,
     * 5x80, 4x96, 3x112, 2x128 are the tallest tiles per width */
    static const int tallest[9] = {0, 30, 14, 9, 6, 5, 4, 3, 2};
    for (int nv = 1; nv <= 8; nv++) {
        a = base_blocked();
        a.nr = 16 * nv;
        a.mr = tallest[nv];
        a.kc = 64;
        a.mc = a.mr;
        a.nc = a.nr;
        CU_ASSERT(expect_valid(&a, &t512));
        a.mr++;
        a.mc = a.mr;
        CU_ASSERT_EQUAL(dt_annotation_validate(&a, &t512, NULL), DT_EINVAL);
    }
    /* a lower back-end on a higher target is fine: avx2 6x16 on AVX-512 */
    a = base_blocked();
    a.isa = DT_ISA_AVX2;
    a.nr = 16;
    a.nc = 1024;
    CU_ASSERT(expect_valid(&a, &t512));
    a.isa = DT_ISA_GENERIC;
    a.nr = 8; /* 6*2 + 2 + 1 = 15 of 16 registers */
    CU_ASSERT(expect_valid(&a, &t512));

    /* AVX2: 6x16 = 12 + 2 + 1 = 15 <= 16 */
    a = base_blocked();
    a.isa = DT_ISA_AVX2;
    a.nr = 16;
    a.threads = 4;
    CU_ASSERT(expect_valid(&a, &t2));
    /* generic x86: 16 registers; arm: 32 */
    a.isa = DT_ISA_GENERIC;
    a.mr = 6;
    a.nr = 8; /* 12 + 2 + 1 = 15 */
    a.threads = 1;
    CU_ASSERT(expect_valid(&a, &tg));
    a.mr = 14; /* 28 + 2 + 1 = 31: only with 32 registers */
    a.mc = 98;
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &tg, NULL), DT_EINVAL);
    CU_ASSERT(expect_valid(&a, &ta));

    /* limits exactly at the edge: kc*nr*4 == L1d, mc*kc*4 == 1 MiB, nc 8192 */
    a = base_blocked();
    a.nr = 16;
    a.mr = 8;
    a.kc = 768; /* 768*16*4 = 48K */
    a.mc = 336; /* 336*768*4 = 1032192 <= 1M */
    a.nc = 8192;
    CU_ASSERT(expect_valid(&a, &t512));
    /* absent cache levels are taken as 32K / 512K */
    dt_target t0 = t512;
    t0.l1d.size = 0;
    t0.l2.size = 0;
    a = base_blocked();
    a.kc = 128; /* 128*64*4 = 32K: exactly the default L1d */
    CU_ASSERT(expect_valid(&a, &t0));
    a.kc = 132;
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &t0, NULL), DT_EINVAL);
}

typedef struct bad_case {
    const char *what;
    int target; /* index into targets[] */
    dt_annotation a;
    const char *reason; /* substring of the message */
} bad_case;

static void test_validate_invalid(void)
{
    dt_annotation b = base_blocked(), s = base_stream();
    bad_case cases[64];
    int n = 0;
#define CASE(what_, tgt_, base_, edit_, reason_)                                            \
    do {                                                                                   \
        dt_annotation x_ = (base_);                                                        \
        edit_;                                                                             \
        cases[n++] = (bad_case){(what_), (tgt_), x_, (reason_)};                           \
    } while (0)

    CASE("isa above target", 1, b, (void)0, "isa avx512 is above the target's isa avx2");
    CASE("isa out of range", 0, b, x_.isa = (dt_isa)3, "isa 3 out of range");
    CASE("mr 0", 0, b, x_.mr = 0, "mr 0 out of range 1..32");
    CASE("mr 33", 0, b, x_.mr = 33, "mr 33 out of range 1..32");
    CASE("nr not multiple of VL", 0, b, x_.nr = 40,
         "nr 40 is not a positive multiple of the vector width 16 (avx512)");
    CASE("nr 0", 0, b, x_.nr = 0, "nr 0 is not a positive multiple");
    CASE("nr negative", 0, b, x_.nr = -16, "nr -16 is not a positive multiple");
    CASE("nr 9 vectors", 0, b, (x_.mr = 1, x_.nr = 144), "nr 144 is 9 vectors of 16 floats > 8");
    CASE("too many registers", 0, b, x_.mr = 7,
         "mr*(nr/16) + nr/16 + 1 = 7*4 + 4 + 1 = 33 vector registers > 32 (avx512)");
    CASE("too many registers avx2", 1, b, (x_.isa = DT_ISA_AVX2, x_.nr = 32, x_.threads = 4),
         "= 6*4 + 4 + 1 = 29 vector registers > 16 (avx2)");
    CASE("too many registers generic", 2, b,
         (x_.isa = DT_ISA_GENERIC, x_.nr = 8, x_.mr = 7, x_.threads = 1),
         "= 7*2 + 2 + 1 = 17 vector registers > 16 (generic)");
    CASE("unroll 3", 0, b, x_.unroll = 3, "unroll 3 is not 1, 2, 4 or 8");
    CASE("unroll 16", 0, b, x_.unroll = 16, "unroll 16 is not");
    CASE("prefetch 65", 0, b, x_.prefetch = 65, "prefetch 65 out of range 0..64");
    CASE("prefetch -1", 0, b, x_.prefetch = -1, "prefetch -1 out of range");
    CASE("threads > cores", 0, b, x_.threads = 3, "threads 3 out of range 1..2");
    CASE("threads 0", 0, b, x_.threads = 0, "threads 0 out of range");
    CASE("store enum", 0, b, x_.store = (dt_store_kind)2, "store 2 out of range");
    CASE("order enum", 0, b, x_.order = (dt_loop_order)2, "order 2 out of range");
    CASE("par enum", 0, b, x_.par = (dt_par_axis)3, "par 3 out of range");
    CASE("sketch enum", 0, b, x_.sketch = DT_SKETCH_ALL, "sketch 3 out of range");
    CASE("kc 4", 0, b, x_.kc = 4, "kc 4 out of range 8..4096");
    CASE("kc 4100", 0, b, x_.kc = 4100, "kc 4100 out of range 8..4096");
    CASE("kc 0 blocked", 0, b, x_.kc = 0, "kc 0 out of range");
    CASE("kc 130", 0, b, x_.kc = 130, "kc 130 is not a multiple of 4");
    CASE("mc not multiple of mr", 0, b, x_.mc = 100, "mc 100 is not a positive multiple of mr 6");
    CASE("mc 0", 0, b, x_.mc = 0, "mc 0 is not a positive multiple of mr 6");
    CASE("mc > 1024", 0, b, x_.mc = 1026, "mc 1026 > 1024");
    CASE("nc not multiple of nr", 0, b, x_.nc = 1000, "nc 1000 is not a positive multiple of nr 64");
    CASE("nc > 8192", 0, b, x_.nc = 8256, "nc 8256 > 8192");
    CASE("A block > 1 MiB", 3, b,
         (x_.isa = DT_ISA_GENERIC, x_.mr = 6, x_.nr = 16, x_.kc = 1024, x_.mc = 258),
         "packed A block mc*kc*4 = 258*1024*4 = 1056768 bytes > 1048576 (1 MiB");
    CASE("A block > L2", 1, b,
         (x_.isa = DT_ISA_AVX2, x_.nr = 16, x_.kc = 256, x_.mc = 384, x_.threads = 4),
         "packed A block mc*kc*4 = 384*256*4 = 393216 bytes > L2 262144 bytes");
    CASE("m_inner B panel > L1d", 0, b, x_.kc = 512,
         "m_inner: B micro-panel kc*nr*4 = 512*64*4 = 131072 bytes > L1d 49152 bytes");
    CASE("n_inner A panel > L1d", 0, b,
         (x_.order = DT_ORDER_N_INNER, x_.mr = 30, x_.nr = 16, x_.kc = 512, x_.mc = 30),
         "n_inner: A micro-panel kc*mr*4 = 512*30*4 = 61440 bytes > L1d 49152 bytes");
    CASE("n_inner B block > L2", 0, b,
         (x_.order = DT_ORDER_N_INNER, x_.nr = 16, x_.kc = 256, x_.nc = 2048),
         "n_inner: B block kc*nc*4 = 256*2048*4 = 2097152 bytes > L2 1048576 bytes");
    CASE("stream kc", 0, s, x_.kc = 128, "stream: kc 128 must be 0");
    CASE("stream mc", 0, s, x_.mc = 96, "stream: mc 96 must be 0");
    CASE("stream nc", 0, s, x_.nc = 100, "stream: nc 100 is not a positive multiple of nr 96");
    CASE("stream nc 0", 0, s, x_.nc = 0, "stream: nc 0 is not a positive multiple");
    CASE("stream nc big", 0, s, x_.nc = 8256, "stream: nc 8256 > 8192");
    CASE("stream n_inner", 0, s, x_.order = DT_ORDER_N_INNER,
         "stream: order n_inner must be m_inner");
    CASE("stream registers", 0, s, x_.mr = 5, "= 5*6 + 6 + 1 = 37 vector registers > 32");
#undef CASE

    for (int i = 0; i < n; i++) {
        dt_target t = targets[cases[i].target].make();
        dt_err e;
        dt_err_clear(&e);
        int rc = dt_annotation_validate(&cases[i].a, &t, &e);
        int ok = rc == DT_EINVAL && e.code == DT_EINVAL && strstr(e.msg, cases[i].reason);
        if (!ok)
            fprintf(stderr, "case '%s': rc %d, message '%s', expected '%s'\n", cases[i].what, rc,
                    e.msg, cases[i].reason);
        CU_ASSERT(ok);
        /* a NULL dt_err is allowed */
        CU_ASSERT_EQUAL(dt_annotation_validate(&cases[i].a, &t, NULL), DT_EINVAL);
    }
}

/* Nothing in validation depends on a shape: same verdict however the other
 * target fields (model, vendor, line size, L3) are set. */
static void test_validate_ignores_irrelevant(void)
{
    dt_target t = t_avx512();
    dt_annotation a = base_blocked();
    t.l3.size = 0;
    t.line_size = 128;
    snprintf(t.model, sizeof t.model, "other");
    CU_ASSERT(expect_valid(&a, &t));
}

/* ---- sampling ------------------------------------------------------------------ */

static int max_mr_for(const dt_target *t, int nv)
{
    int m = (t->vec_regs - nv - 1) / nv;
    return m > 32 ? 32 : m;
}

static void check_sampling(int ti, int sketch)
{
    dt_target t = targets[ti].make();
    dt_rng r;
    dt_rng_seed(&r, 1000 + (uint64_t)ti * 10 + (uint64_t)sketch);
    enum { N = 10000 };
    int seen_store[DT_STORE_COUNT] = {0}, seen_order[DT_ORDER_COUNT] = {0};
    int seen_par[DT_PAR_COUNT] = {0}, seen_unroll[9] = {0}, seen_threads[64] = {0};
    int seen_tile[33][9];
    memset(seen_tile, 0, sizeof seen_tile);
    int seen_nv[9] = {0}, sensible = 0, kc_list = 0, prefetch_zero = 0, invalid = 0;
    int vl = t.vec_floats;
    for (int i = 0; i < N; i++) {
        dt_annotation a;
        dt_err e;
        int rc = dt_annotation_sample(&r, &t, sketch, 0, &a, &e);
        if (rc) {
            fprintf(stderr, "%s sample: %s\n", targets[ti].name, e.msg);
            CU_FAIL_FATAL("sample failed");
        }
        if (!expect_valid(&a, &t)) {
            invalid++;
            continue;
        }
        CU_ASSERT_EQUAL((int)a.sketch, sketch);
        CU_ASSERT_EQUAL(a.isa, t.isa);
        seen_store[a.store]++;
        seen_order[a.order]++;
        seen_par[a.par]++;
        seen_unroll[a.unroll]++;
        seen_threads[a.threads]++;
        int nv = a.nr / vl;
        seen_nv[nv]++;
        seen_tile[a.mr][nv]++;
        int top = max_mr_for(&t, nv) * nv, acc = a.mr * nv;
        if (acc >= (top < 8 ? top : 8))
            sensible++;
        if (sketch == DT_SKETCH_BLOCKED) {
            static const int list[] = {64, 96, 128, 192, 256, 320, 384, 512, 768, 1024};
            for (int k = 0; k < 10; k++)
                kc_list += a.kc == list[k];
        }
        prefetch_zero += a.prefetch == 0;
    }
    CU_ASSERT_EQUAL(invalid, 0);
    for (int i = 0; i < DT_STORE_COUNT; i++)
        CU_ASSERT(seen_store[i] > N / 4);
    for (int i = 0; i < DT_PAR_COUNT; i++)
        CU_ASSERT(seen_par[i] > N / 6);
    if (sketch == DT_SKETCH_BLOCKED) {
        for (int i = 0; i < DT_ORDER_COUNT; i++)
            CU_ASSERT(seen_order[i] > N / 4);
        /* most kc come from the list, but not all */
        CU_ASSERT(kc_list > N / 2);
        CU_ASSERT(kc_list < N);
    } else {
        CU_ASSERT_EQUAL(seen_order[DT_ORDER_M_INNER], N);
    }
    for (int u = 1; u <= 8; u *= 2)
        CU_ASSERT(seen_unroll[u] > N / 8);
    for (int c = 1; c <= t.cores; c++)
        CU_ASSERT(seen_threads[c] > 0);
    CU_ASSERT(prefetch_zero > N / 10 && prefetch_zero < N / 2);
    /* every nr width that can hold a tile appears, and only those */
    for (int nv = 1; nv <= 8; nv++) {
        if (max_mr_for(&t, nv) >= 1) {
            CU_ASSERT(seen_nv[nv] > 0);
        } else {
            CU_ASSERT_EQUAL(seen_nv[nv], 0);
        }
    }
    /* blocked: every register tile that fits is reached; stream: a spread */
    int tiles = 0, possible = 0;
    for (int nv = 1; nv <= 8; nv++) {
        for (int mr = 1; mr <= max_mr_for(&t, nv); mr++) {
            possible++;
            tiles += seen_tile[mr][nv] > 0;
        }
    }
    if (sketch == DT_SKETCH_BLOCKED) {
        if (tiles != possible)
            fprintf(stderr, "%s: %d of %d tiles reached\n", targets[ti].name, tiles, possible);
        CU_ASSERT_EQUAL(tiles, possible);
    } else {
        CU_ASSERT(tiles >= possible / 2);
    }
    /* the bias: most tiles use most of the register file */
    if (sensible < N * 6 / 10)
        fprintf(stderr, "%s %s: only %d sensible tiles\n", targets[ti].name,
                dt_sketch_name((dt_sketch_kind)sketch), sensible);
    CU_ASSERT(sensible >= N * 6 / 10);
}

static void test_sample_all_targets(void)
{
    for (int ti = 0; ti < NTARGETS; ti++)
        for (int sk = 0; sk < DT_SKETCH_COUNT; sk++)
            check_sampling(ti, sk);
}

static void test_sample_any_sketch_and_threads(void)
{
    dt_target t = t_avx2();
    dt_rng r;
    dt_rng_seed(&r, 5);
    int seen[DT_SKETCH_COUNT] = {0};
    for (int i = 0; i < 2000; i++) {
        dt_annotation a;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &t, -1, 3, &a, NULL), 0);
        CU_ASSERT(expect_valid(&a, &t));
        CU_ASSERT_EQUAL(a.threads, 3);
        seen[a.sketch]++;
    }
    CU_ASSERT(seen[DT_SKETCH_BLOCKED] > 800 && seen[DT_SKETCH_STREAM] > 800);

    dt_annotation a;
    dt_err e;
    CU_ASSERT_EQUAL(dt_annotation_sample(&r, &t, -1, 5, &a, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "threads 5 > target cores 4"));
    CU_ASSERT_EQUAL(dt_annotation_sample(&r, &t, DT_SKETCH_ALL, 0, &a, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "sketch 3 out of range"));
}

static void test_sample_determinism(void)
{
    dt_target t = t_avx512();
    dt_rng r1, r2, r3;
    dt_rng_seed(&r1, 42);
    dt_rng_seed(&r2, 42);
    dt_rng_seed(&r3, 43);
    int same = 1, differ = 0;
    for (int i = 0; i < 1000; i++) {
        dt_annotation a, b, c;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r1, &t, -1, 0, &a, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r2, &t, -1, 0, &b, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r3, &t, -1, 0, &c, NULL), 0);
        same &= dt_annotation_equal(&a, &b);
        differ += !dt_annotation_equal(&a, &c);
    }
    CU_ASSERT(same);
    CU_ASSERT(differ > 900);
    /* mutate and crossover are deterministic too */
    dt_rng_seed(&r1, 7);
    dt_rng_seed(&r2, 7);
    dt_annotation p = base_blocked(), q = base_blocked(), m1, m2;
    q.mr = 14;
    q.nr = 32;
    q.mc = 28;
    q.nc = 512;
    for (int i = 0; i < 200; i++) {
        CU_ASSERT_EQUAL_FATAL(dt_annotation_mutate(&r1, &t, &p, &m1, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_mutate(&r2, &t, &p, &m2, NULL), 0);
        CU_ASSERT(dt_annotation_equal(&m1, &m2));
        CU_ASSERT_EQUAL_FATAL(dt_annotation_crossover(&r1, &t, &p, &q, &m1, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(dt_annotation_crossover(&r2, &t, &p, &q, &m2, NULL), 0);
        CU_ASSERT(dt_annotation_equal(&m1, &m2));
    }
}

/* Sampling a target whose register file cannot hold any tile fails cleanly
 * (a hand-edited target: avx512 with a bogus arch is still 32 registers, so
 * use an out-of-range ISA instead). */
static void test_sample_bad_target(void)
{
    dt_target t = t_avx512();
    t.isa = (dt_isa)9;
    dt_rng r;
    dt_rng_seed(&r, 1);
    dt_annotation a;
    dt_err e;
    CU_ASSERT_EQUAL(dt_annotation_sample(&r, &t, -1, 0, &a, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "target isa 9"));
}

/* ---- mutation ------------------------------------------------------------------ */

static void test_mutate(void)
{
    for (int ti = 0; ti < NTARGETS; ti++) {
        dt_target t = targets[ti].make();
        dt_rng r;
        dt_rng_seed(&r, 77 + (uint64_t)ti);
        int tile = 0, cache = 0, unroll = 0, prefetch = 0, knobs = 0, total = 0;
        for (int i = 0; i < 3000; i++) {
            dt_annotation in, out;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &t, i % 2, 0, &in, NULL), 0);
            dt_err e;
            int rc = dt_annotation_mutate(&r, &t, &in, &out, &e);
            if (rc)
                fprintf(stderr, "mutate: %s\n", e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT(expect_valid(&out, &t));
            unsigned mask;
            int nd = diff_fields(&in, &out, &mask);
            CU_ASSERT(nd >= 1 && nd <= 2);
            CU_ASSERT_EQUAL(mask & (B_SKETCH | B_ISA | B_THREADS), 0);
            /* two fields only when a tile size drags its block along */
            if (nd == 2)
                CU_ASSERT(mask == (B_MR | B_MC) || mask == (B_NR | B_NC));
            total++;
            if (mask & (B_MR | B_NR))
                tile++;
            else if (mask & (B_KC | B_MC | B_NC))
                cache++;
            else if (mask & B_UNROLL)
                unroll++;
            else if (mask & B_PREFETCH)
                prefetch++;
            else
                knobs++;
        }
        /* the documented proportions 35/30/10/10/15 %, within a few points */
        fprintf(stderr, "  %s mutations: tile %d cache %d unroll %d prefetch %d knobs %d\n",
                targets[ti].name, tile, cache, unroll, prefetch, knobs);
        CU_ASSERT(tile > total * 28 / 100 && tile < total * 42 / 100);
        CU_ASSERT(cache > total * 24 / 100 && cache < total * 36 / 100);
        CU_ASSERT(unroll > total * 7 / 100 && unroll < total * 13 / 100);
        CU_ASSERT(prefetch > total * 7 / 100 && prefetch < total * 13 / 100);
        CU_ASSERT(knobs > total * 11 / 100 && knobs < total * 19 / 100);
    }

    /* an invalid input is refused */
    dt_target t = t_avx512();
    dt_rng r;
    dt_rng_seed(&r, 1);
    dt_annotation in = base_blocked(), out;
    in.mr = 7;
    dt_err e;
    CU_ASSERT_EQUAL(dt_annotation_mutate(&r, &t, &in, &out, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "mutate: input annotation: register tile"));
}

/* Repeated mutation is a random walk that stays valid. */
static void test_mutate_walk(void)
{
    dt_target t = t_avx512();
    dt_rng r;
    dt_rng_seed(&r, 9);
    dt_annotation a = base_blocked(), b;
    for (int i = 0; i < 5000; i++) {
        CU_ASSERT_EQUAL_FATAL(dt_annotation_mutate(&r, &t, &a, &b, NULL), 0);
        CU_ASSERT_FATAL(expect_valid(&b, &t));
        CU_ASSERT(!dt_annotation_equal(&a, &b));
        a = b;
    }
}

/* ---- crossover ----------------------------------------------------------------- */

static void test_crossover(void)
{
    for (int ti = 0; ti < NTARGETS; ti++) {
        dt_target t = targets[ti].make();
        dt_rng r;
        dt_rng_seed(&r, 300 + (uint64_t)ti);
        int repaired = 0, total = 0;
        for (int i = 0; i < 3000; i++) {
            int sk = i % 2;
            dt_annotation a, b, c;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &t, sk, 0, &a, NULL), 0);
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &t, sk, 0, &b, NULL), 0);
            dt_err e;
            int rc = dt_annotation_crossover(&r, &t, &a, &b, &c, &e);
            if (rc)
                fprintf(stderr, "crossover: %s\n", e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT(expect_valid(&c, &t));
            CU_ASSERT_EQUAL(c.sketch, a.sketch);
            CU_ASSERT_EQUAL(c.isa, a.isa);
            unsigned ma, mb;
            diff_fields(&c, &a, &ma);
            diff_fields(&c, &b, &mb);
            total++;
            if (ma & mb) /* some field from neither parent: repaired */
                repaired++;
        }
        fprintf(stderr, "  %s crossover: %d of %d children repaired with new values\n",
                targets[ti].name, repaired, total);
        CU_ASSERT(repaired < total / 20);
    }
}

/* Parents that differ only in fields free of cross-field rules: every child
 * field comes from a parent, and both parents' values appear. */
static void test_crossover_free_fields(void)
{
    dt_target t = t_avx512();
    dt_rng r;
    dt_rng_seed(&r, 11);
    dt_annotation a = base_blocked(), b = a;
    b.unroll = 1;
    b.prefetch = 0;
    b.store = DT_STORE_SCRATCH;
    b.par = DT_PAR_MN;
    b.threads = 1;
    b.kc = 64;
    b.mc = 48;
    b.nc = 256;
    int from_b[13] = {0};
    for (int i = 0; i < 1000; i++) {
        dt_annotation c;
        CU_ASSERT_EQUAL_FATAL(dt_annotation_crossover(&r, &t, &a, &b, &c, NULL), 0);
        unsigned ma, mb;
        diff_fields(&c, &a, &ma);
        diff_fields(&c, &b, &mb);
        CU_ASSERT_EQUAL(ma & mb, 0);
        for (int k = 0; k < 13; k++)
            from_b[k] += (ma >> k) & 1;
    }
    /* unroll, prefetch, store, par, threads, kc, mc, nc each from b about half the time */
    const int fields[] = {4, 5, 6, 7, 8, 9, 11, 12};
    for (int i = 0; i < 8; i++)
        CU_ASSERT(from_b[fields[i]] > 400 && from_b[fields[i]] < 600);
}

static void test_crossover_errors(void)
{
    dt_target t = t_avx512();
    dt_rng r;
    dt_rng_seed(&r, 1);
    dt_annotation a = base_blocked(), b = base_stream(), c;
    dt_err e;
    CU_ASSERT_EQUAL(dt_annotation_crossover(&r, &t, &a, &b, &c, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "different sketches (blocked, stream)"));
    b = base_blocked();
    b.isa = DT_ISA_AVX2;
    b.nr = 16;
    CU_ASSERT_EQUAL(dt_annotation_crossover(&r, &t, &a, &b, &c, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "different isas (avx512, avx2)"));
    b = base_blocked();
    b.threads = 9;
    CU_ASSERT_EQUAL(dt_annotation_crossover(&r, &t, &a, &b, &c, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "crossover: parent b: threads 9"));
    CU_ASSERT_EQUAL(dt_annotation_crossover(&r, &t, &b, &a, &c, NULL), DT_EINVAL);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void test_json_example(void)
{
    dt_annotation a = base_blocked();
    char *s = dt_annotation_to_string(&a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s, "{\"sketch\":\"blocked\",\"isa\":\"avx512\",\"mr\":6,\"nr\":64,"
                              "\"kc\":128,\"mc\":96,\"nc\":1024,\"unroll\":4,\"prefetch\":8,"
                              "\"store\":\"mask\",\"order\":\"m_inner\",\"par\":\"n\","
                              "\"threads\":2}");
    free(s);
    a = base_stream();
    a.store = DT_STORE_SCRATCH;
    a.par = DT_PAR_MN;
    s = dt_annotation_to_string(&a);
    CU_ASSERT_STRING_EQUAL(s, "{\"sketch\":\"stream\",\"isa\":\"avx512\",\"mr\":4,\"nr\":96,"
                              "\"kc\":0,\"mc\":0,\"nc\":768,\"unroll\":4,\"prefetch\":8,"
                              "\"store\":\"scratch\",\"order\":\"m_inner\",\"par\":\"mn\","
                              "\"threads\":2}");
    free(s);
    /* key order of the object itself */
    json_t *j = dt_annotation_to_json(&a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    static const char *const order[] = {"sketch", "isa",      "mr",    "nr",    "kc",
                                        "mc",     "nc",       "unroll", "prefetch", "store",
                                        "order",  "par",      "threads"};
    int i = 0;
    for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it), i++)
        CU_ASSERT_STRING_EQUAL(json_object_iter_key(it), order[i]);
    CU_ASSERT_EQUAL(i, 13);
    json_decref(j);
}

static void test_json_round_trip(void)
{
    int n = 0;
    for (int ti = 0; ti < NTARGETS; ti++) {
        dt_target t = targets[ti].make();
        dt_rng r;
        dt_rng_seed(&r, 500 + (uint64_t)ti);
        for (int i = 0; i < 1500; i++) {
            dt_annotation a, b;
            CU_ASSERT_EQUAL_FATAL(dt_annotation_sample(&r, &t, -1, 0, &a, NULL), 0);
            json_t *j = dt_annotation_to_json(&a);
            CU_ASSERT_PTR_NOT_NULL_FATAL(j);
            dt_err e;
            int rc = dt_annotation_from_json(j, &b, &e);
            if (rc)
                fprintf(stderr, "from_json: %s\n", e.msg);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT(dt_annotation_equal(&a, &b));
            json_decref(j);

            /* the string form: stable, and parses back to the same annotation */
            char *s1 = dt_annotation_to_string(&a), *s2 = dt_annotation_to_string(&b);
            CU_ASSERT_PTR_NOT_NULL_FATAL(s1);
            CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
            CU_ASSERT_STRING_EQUAL(s1, s2);
            json_error_t jerr;
            json_t *p = json_loads(s1, 0, &jerr);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            CU_ASSERT_EQUAL(dt_annotation_from_json(p, &b, NULL), 0);
            CU_ASSERT(dt_annotation_equal(&a, &b));
            json_decref(p);
            free(s1);
            free(s2);
            n++;
        }
    }
    CU_ASSERT_EQUAL(n, NTARGETS * 1500);
}

/* Parses text, expects DT_EINVAL with the substring. */
static void expect_json_error(const char *text, const char *reason)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j) {
        fprintf(stderr, "bad test JSON %s: %s\n", text, jerr.text);
        CU_FAIL("test JSON");
        return;
    }
    dt_annotation a = base_blocked(), before = a;
    dt_err e;
    dt_err_clear(&e);
    int rc = dt_annotation_from_json(j, &a, &e);
    int ok = rc == DT_EINVAL && strstr(e.msg, reason) != NULL;
    if (!ok)
        fprintf(stderr, "from_json(%s): rc %d '%s', expected '%s'\n", text, rc, e.msg, reason);
    CU_ASSERT(ok);
    CU_ASSERT(dt_annotation_equal(&a, &before)); /* out untouched on error */
    CU_ASSERT_EQUAL(dt_annotation_from_json(j, &a, NULL), DT_EINVAL);
    json_decref(j);
}

#define GOOD_HEAD "\"sketch\":\"blocked\",\"isa\":\"avx512\","
#define GOOD_TAIL                                                                          \
    "\"unroll\":4,\"prefetch\":8,\"store\":\"mask\",\"order\":\"m_inner\",\"par\":\"n\","  \
    "\"threads\":2"

static void test_json_errors(void)
{
    /* the good object parses (in any key order) */
    json_error_t jerr;
    json_t *j = json_loads("{\"threads\":2,\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                           GOOD_HEAD GOOD_TAIL "}",
                           0, &jerr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    dt_annotation a, want = base_blocked();
    CU_ASSERT_EQUAL(dt_annotation_from_json(j, &a, NULL), 0);
    CU_ASSERT(dt_annotation_equal(&a, &want));
    json_decref(j);
    CU_ASSERT_EQUAL(dt_annotation_from_json(NULL, &a, NULL), DT_EINVAL);

    expect_json_error("[1,2]", "expected an object, got an array");
    expect_json_error("\"blocked\"", "expected an object, got a string");
    expect_json_error("{}", "missing key \"sketch\"");
    expect_json_error("{" GOOD_HEAD "\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024," GOOD_TAIL "}",
                      "missing key \"mr\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      "\"unroll\":4,\"prefetch\":8,\"store\":\"mask\",\"order\":\"m_inner\","
                      "\"par\":\"n\"}",
                      "missing key \"threads\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024," GOOD_TAIL
                      ",\"vector\":1}",
                      "unknown key \"vector\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      "\"unroll\":4,\"prefetch\":8,\"store\":\"mask\",\"order\":\"m_inner\","
                      "\"par\":\"n\",\"Threads\":2}",
                      "unknown key \"Threads\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":\"6\",\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      GOOD_TAIL "}",
                      "key \"mr\": expected an integer, got a string");
    expect_json_error("{" GOOD_HEAD "\"mr\":6.0,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      GOOD_TAIL "}",
                      "key \"mr\": expected an integer, got a real number");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":true,\"mc\":96,\"nc\":1024,"
                      GOOD_TAIL "}",
                      "key \"kc\": expected an integer, got a boolean");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":null,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      GOOD_TAIL "}",
                      "key \"nr\": expected an integer, got null");
    expect_json_error("{\"sketch\":0,\"isa\":\"avx512\",\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,"
                      "\"nc\":1024," GOOD_TAIL "}",
                      "key \"sketch\": expected a string, got an integer");
    expect_json_error("{\"sketch\":\"tiled\",\"isa\":\"avx512\",\"mr\":6,\"nr\":64,\"kc\":128,"
                      "\"mc\":96,\"nc\":1024," GOOD_TAIL "}",
                      "key \"sketch\": unknown sketch \"tiled\"");
    expect_json_error("{\"sketch\":\"blocked\",\"isa\":\"sse\",\"mr\":6,\"nr\":64,\"kc\":128,"
                      "\"mc\":96,\"nc\":1024," GOOD_TAIL "}",
                      "key \"isa\": unknown isa \"sse\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      "\"unroll\":4,\"prefetch\":8,\"store\":\"masked\",\"order\":\"m_inner\","
                      "\"par\":\"n\",\"threads\":2}",
                      "key \"store\": unknown store \"masked\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      "\"unroll\":4,\"prefetch\":8,\"store\":\"mask\",\"order\":\"k_inner\","
                      "\"par\":\"n\",\"threads\":2}",
                      "key \"order\": unknown order \"k_inner\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      "\"unroll\":4,\"prefetch\":8,\"store\":\"mask\",\"order\":\"m_inner\","
                      "\"par\":\"k\",\"threads\":2}",
                      "key \"par\": unknown par \"k\"");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      "\"unroll\":4,\"prefetch\":8,\"store\":[],\"order\":\"m_inner\","
                      "\"par\":\"n\",\"threads\":2}",
                      "key \"store\": expected a string, got an array");
    expect_json_error("{" GOOD_HEAD "\"mr\":0,\"nr\":64,\"kc\":128,\"mc\":96,\"nc\":1024,"
                      GOOD_TAIL "}",
                      "key \"mr\": 0 out of range 1..32");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":128,\"mc\":96,"
                      "\"nc\":1000000000000," GOOD_TAIL "}",
                      "key \"nc\": 1000000000000 out of range 1..8192");
    expect_json_error("{" GOOD_HEAD "\"mr\":6,\"nr\":64,\"kc\":-4,\"mc\":96,\"nc\":1024,"
                      GOOD_TAIL "}",
                      "key \"kc\": -4 out of range 0..4096");

    /* from_json does not check the target: an avx512 annotation with a tile
     * too big for any register file still parses; validate rejects it */
    j = json_loads("{" GOOD_HEAD "\"mr\":32,\"nr\":128,\"kc\":128,\"mc\":96,\"nc\":1024," GOOD_TAIL
                   "}",
                   0, &jerr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(dt_annotation_from_json(j, &a, NULL), 0);
    dt_target t = t_avx512();
    CU_ASSERT_EQUAL(dt_annotation_validate(&a, &t, NULL), DT_EINVAL);
    json_decref(j);
}

static void test_equal(void)
{
    dt_annotation a = base_blocked(), b = a;
    CU_ASSERT(dt_annotation_equal(&a, &b));
    b.threads = 1;
    CU_ASSERT(!dt_annotation_equal(&a, &b));
    b = a;
    b.order = DT_ORDER_N_INNER;
    CU_ASSERT(!dt_annotation_equal(&a, &b));
    b = a;
    b.isa = DT_ISA_AVX2;
    CU_ASSERT(!dt_annotation_equal(&a, &b));
}

/* dt_unit_names lists every unit's name, in order (its error messages'). */
static void test_unit_names(void)
{
    char all[128] = "";
    for (int u = 0; u < DT_UNIT_COUNT; u++) {
        strcat(all, u ? ", " : "");
        strcat(all, dt_unit_name((dt_unit)u));
        dt_unit back;
        CU_ASSERT_EQUAL(dt_unit_from_name(dt_unit_name((dt_unit)u), &back), 0);
        CU_ASSERT_EQUAL(back, (dt_unit)u);
    }
    CU_ASSERT_STRING_EQUAL(dt_unit_names(), all);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"names", test_names},
        {"unit names", test_unit_names},
        {"rng", test_rng},
        {"validate: valid and edge annotations", test_validate_valid},
        {"validate: invalid annotations and reasons", test_validate_invalid},
        {"validate: only the relevant target fields", test_validate_ignores_irrelevant},
        {"sample: 10000 per target and sketch", test_sample_all_targets},
        {"sample: any sketch, fixed threads, errors", test_sample_any_sketch_and_threads},
        {"sample: determinism", test_sample_determinism},
        {"sample: bad target", test_sample_bad_target},
        {"mutate", test_mutate},
        {"mutate: random walk", test_mutate_walk},
        {"crossover", test_crossover},
        {"crossover: free fields", test_crossover_free_fields},
        {"crossover: errors", test_crossover_errors},
        {"json: example and key order", test_json_example},
        {"json: round trip", test_json_round_trip},
        {"json: errors", test_json_errors},
        {"equal", test_equal},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"annotation", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
