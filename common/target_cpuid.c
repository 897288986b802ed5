/* x86 CPUID and XCR0 probes (see target_probe.h).  The bit positions are
 * from the Intel SDM vol. 2A (CPUID) and the AMD APM vol. 3 (leaf
 * 0x8000001D); they are the same ones Linux uses for /proc/cpuinfo flags. */
#include "common/target_probe.h"

#include <string.h>

#include "common/target.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

typedef struct {
    unsigned a, b, c, d;
} dt_regs;

/* CPUID(leaf, sub); all zero when the leaf is beyond the maximum. */
static dt_regs dt_cpuid(unsigned leaf, unsigned sub)
{
    dt_regs r = {0, 0, 0, 0};
    if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d))
        memset(&r, 0, sizeof r);
    return r;
}

/* XGETBV with ECX=0 reads XCR0, the state components the OS saves on a
 * context switch.  Written as asm so the file needs no -mxsave. */
static uint64_t dt_xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

#define BIT(x, n) (((x) >> (n)) & 1u)
#define SET(mask, cond, f) ((mask) |= (cond) ? DT_FEAT_BIT(f) : 0)

static uint32_t dt_cpuid_features(uint64_t *xcr0)
{
    uint32_t f = 0;
    dt_regs l1 = dt_cpuid(1, 0);
    dt_regs l7 = dt_cpuid(7, 0);
    dt_regs l71 = l7.a >= 1 ? dt_cpuid(7, 1) : (dt_regs){0, 0, 0, 0};

    SET(f, BIT(l1.c, 20), DT_FEAT_SSE4_2);
    SET(f, BIT(l1.c, 28), DT_FEAT_AVX);
    SET(f, BIT(l1.c, 12), DT_FEAT_FMA);
    SET(f, BIT(l1.c, 29), DT_FEAT_F16C);
    SET(f, BIT(l7.b, 5), DT_FEAT_AVX2);
    SET(f, BIT(l7.b, 16), DT_FEAT_AVX512F);
    SET(f, BIT(l7.b, 17), DT_FEAT_AVX512DQ);
    SET(f, BIT(l7.b, 28), DT_FEAT_AVX512CD);
    SET(f, BIT(l7.b, 30), DT_FEAT_AVX512BW);
    SET(f, BIT(l7.b, 31), DT_FEAT_AVX512VL);
    SET(f, BIT(l7.c, 11), DT_FEAT_AVX512_VNNI);
    SET(f, BIT(l7.d, 22), DT_FEAT_AMX_BF16);
    SET(f, BIT(l7.d, 23), DT_FEAT_AVX512_FP16);
    SET(f, BIT(l7.d, 24), DT_FEAT_AMX_TILE);
    SET(f, BIT(l7.d, 25), DT_FEAT_AMX_INT8);
    SET(f, BIT(l71.a, 4), DT_FEAT_AVX_VNNI);
    SET(f, BIT(l71.a, 5), DT_FEAT_AVX512_BF16);

    /* OSXSAVE: the OS has enabled XSETBV/XGETBV, so XCR0 is readable. */
    *xcr0 = BIT(l1.c, 27) ? dt_xgetbv0() : 0;
    return f;
}

static void dt_cpuid_brand(char brand[49])
{
    memset(brand, 0, 49);
    if (dt_cpuid(0x80000000u, 0).a < 0x80000004u)
        return;
    for (unsigned i = 0; i < 3; i++) {
        dt_regs r = dt_cpuid(0x80000002u + i, 0);
        memcpy(brand + 16 * i, &r, 16); /* a, b, c, d in order */
    }
    brand[48] = '\0';
}

void dt_probe_cpuid(dt_cpuid_info *out)
{
    memset(out, 0, sizeof *out);
    dt_regs l0;
    if (!__get_cpuid(0, &l0.a, &l0.b, &l0.c, &l0.d))
        return;
    out->available = 1;
    /* The vendor string is EBX, EDX, ECX in that order. */
    memcpy(out->vendor, &l0.b, 4);
    memcpy(out->vendor + 4, &l0.d, 4);
    memcpy(out->vendor + 8, &l0.c, 4);
    out->vendor[12] = '\0';
    dt_cpuid_brand(out->brand);
    out->features = dt_cpuid_features(&out->xcr0);
    dt_regs l1 = dt_cpuid(1, 0);
    out->clflush_line = (int)((l1.b >> 8) & 0xff) * 8;
    /* the displayed family and model (Intel SDM / AMD APM): the extended
     * family is added when the base family is 0xF, the extended model
     * prepended for families 0x6 and 0xF */
    unsigned fam = (l1.a >> 8) & 0xf, mod = (l1.a >> 4) & 0xf;
    if (fam == 0xf)
        fam += (l1.a >> 20) & 0xff;
    if (fam == 0x6 || fam >= 0xf)
        mod |= ((l1.a >> 16) & 0xf) << 4;
    out->family = (int)fam;
    out->model = (int)mod;
}

/* AMD reserves leaf 4 and describes caches in 0x8000001D instead, when the
 * TOPOEXT bit (0x80000001 ECX[22]) says that leaf exists. */
static unsigned dt_cache_leaf(void)
{
    dt_cpuid_info id;
    dt_probe_cpuid(&id);
    if (!id.available)
        return 0;
    int amd = !strcmp(id.vendor, "AuthenticAMD") || !strcmp(id.vendor, "HygonGenuine");
    if (amd)
        return (dt_cpuid(0x80000000u, 0).a >= 0x8000001Du &&
                BIT(dt_cpuid(0x80000001u, 0).c, 22))
                   ? 0x8000001Du
                   : 0;
    return 4;
}

int dt_probe_cpuid_caches(dt_probe_cache *out, int max)
{
    unsigned leaf = dt_cache_leaf();
    int n = 0;
    for (unsigned sub = 0; leaf && sub < 32 && n < max; sub++) {
        dt_regs r = dt_cpuid(leaf, sub);
        unsigned type = r.a & 0x1f;
        if (type == 0) /* no more caches */
            break;
        if (type > DT_CACHE_UNIFIED)
            continue;
        uint64_t line = (r.b & 0xfff) + 1;
        uint64_t parts = ((r.b >> 12) & 0x3ff) + 1;
        uint64_t ways = ((r.b >> 22) & 0x3ff) + 1;
        uint64_t sets = (uint64_t)r.c + 1;
        out[n++] = (dt_probe_cache){
            .level = (int)((r.a >> 5) & 7),
            .type = (dt_cache_type)type,
            .size = ways * parts * line * sets,
            /* An upper bound on Intel (addressable IDs); callers clamp it. */
            .shared_cpus = (int)((r.a >> 14) & 0xfff) + 1,
            .line = (int)line,
        };
    }
    return n;
}

#else /* not x86 */

void dt_probe_cpuid(dt_cpuid_info *out)
{
    memset(out, 0, sizeof *out);
}

int dt_probe_cpuid_caches(dt_probe_cache *out, int max)
{
    (void)out, (void)max;
    return 0;
}

#endif
