/* Target detection, ISA selection, overrides and JSON (see target.h).
 * The raw probes live in target_cpuid.c and target_sysfs.c; the key in
 * target_key.c. */
#include "common/target.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/log.h"
#include "common/target_probe.h"

#define DT_SYSFS_CPU_DIR "/sys/devices/system/cpu"
#define DT_PROC_CPUINFO "/proc/cpuinfo"

/* Defaults when neither sysfs nor CPUID describes a cache.  Deliberately on
 * the small side: tiles blocked for a smaller cache still run well, tiles
 * blocked for a cache that is not there thrash.  No L3 is assumed. */
#define DT_DEFAULT_L1D (32u << 10)
#define DT_DEFAULT_L2 (512u << 10)
#define DT_DEFAULT_L3 0u
#define DT_DEFAULT_LINE 64

/* ---- ISA and features ---------------------------------------------------- */

static const char *const dt_isa_names[DT_ISA_COUNT] = {"generic", "avx2", "avx512"};

const char *dt_isa_name(dt_isa isa)
{
    return ((unsigned)isa < DT_ISA_COUNT) ? dt_isa_names[isa] : "?";
}

int dt_isa_from_name(const char *name, dt_isa *out)
{
    for (int i = 0; name && i < DT_ISA_COUNT; i++) {
        if (!strcmp(name, dt_isa_names[i])) {
            *out = (dt_isa)i;
            return 0;
        }
    }
    return DT_EINVAL;
}

int dt_isa_vec_floats(dt_isa isa)
{
    switch (isa) {
    case DT_ISA_AVX512: return 16;
    case DT_ISA_AVX2: return 8;
    default: return 4;
    }
}

int dt_isa_vec_regs(dt_isa isa, const char *arch)
{
    if (isa == DT_ISA_AVX512)
        return 32;
    /* Generic code is GCC vector extensions: on aarch64 those are NEON
     * registers, of which there are 32; on x86 code for AVX2 or SSE has 16. */
    if (isa == DT_ISA_GENERIC && arch && !strcmp(arch, "aarch64"))
        return 32;
    return 16;
}

dt_isa dt_isa_best(uint32_t f)
{
    const uint32_t avx2 = DT_FEAT_BIT(DT_FEAT_AVX2) | DT_FEAT_BIT(DT_FEAT_FMA);
    const uint32_t avx512 = avx2 | DT_FEAT_BIT(DT_FEAT_AVX512F);
    if ((f & avx512) == avx512)
        return DT_ISA_AVX512;
    if ((f & avx2) == avx2)
        return DT_ISA_AVX2;
    return DT_ISA_GENERIC;
}

static const char *const dt_feature_names[DT_FEAT_COUNT] = {
    [DT_FEAT_SSE4_2] = "sse4_2",
    [DT_FEAT_AVX] = "avx",
    [DT_FEAT_AVX2] = "avx2",
    [DT_FEAT_FMA] = "fma",
    [DT_FEAT_F16C] = "f16c",
    [DT_FEAT_AVX512F] = "avx512f",
    [DT_FEAT_AVX512CD] = "avx512cd",
    [DT_FEAT_AVX512BW] = "avx512bw",
    [DT_FEAT_AVX512DQ] = "avx512dq",
    [DT_FEAT_AVX512VL] = "avx512vl",
    [DT_FEAT_AVX512_VNNI] = "avx512_vnni",
    [DT_FEAT_AVX512_BF16] = "avx512_bf16",
    [DT_FEAT_AVX512_FP16] = "avx512_fp16",
    [DT_FEAT_AVX_VNNI] = "avx_vnni",
    [DT_FEAT_AMX_TILE] = "amx_tile",
    [DT_FEAT_AMX_INT8] = "amx_int8",
    [DT_FEAT_AMX_BF16] = "amx_bf16",
    [DT_FEAT_NEON] = "neon",
};

const char *dt_feature_name(dt_feature f)
{
    return ((unsigned)f < DT_FEAT_COUNT) ? dt_feature_names[f] : "?";
}

int dt_target_has(const dt_target *t, dt_feature f)
{
    return (unsigned)f < DT_FEAT_COUNT && (t->features & DT_FEAT_BIT(f)) != 0;
}

#define F(name) DT_FEAT_BIT(DT_FEAT_##name)
/* VEX-encoded features use YMM state; the AVX-512 ones also opmask + ZMM. */
static const uint32_t dt_vex_features = F(AVX) | F(AVX2) | F(FMA) | F(F16C) | F(AVX_VNNI);
static const uint32_t dt_avx512_features = F(AVX512F) | F(AVX512CD) | F(AVX512BW) |
                                           F(AVX512DQ) | F(AVX512VL) | F(AVX512_VNNI) |
                                           F(AVX512_BF16) | F(AVX512_FP16);
static const uint32_t dt_amx_features = F(AMX_TILE) | F(AMX_INT8) | F(AMX_BF16);
#undef F

uint32_t dt_target_usable_features(uint32_t cpu, uint64_t xcr0)
{
    const uint64_t ymm_state = (1u << 1) | (1u << 2);  /* SSE, AVX */
    const uint64_t zmm_state = ymm_state | (7u << 5);  /* opmask, ZMM_Hi256, Hi16_ZMM */
    const uint64_t amx_state = UINT64_C(3) << 17;      /* XTILECFG, XTILEDATA */
    uint32_t usable = cpu;
    if ((xcr0 & ymm_state) != ymm_state)
        usable &= ~dt_vex_features;
    if ((xcr0 & zmm_state) != zmm_state)
        usable &= ~dt_avx512_features;
    if ((xcr0 & amx_state) != amx_state)
        usable &= ~dt_amx_features;
    return usable;
}

void dt_target_set_isa(dt_target *t, dt_isa isa)
{
    t->isa = isa;
    t->vec_floats = dt_isa_vec_floats(isa);
    t->vec_regs = dt_isa_vec_regs(isa, t->arch);
}

const char *dt_target_src_name(dt_target_src src)
{
    switch (src) {
    case DT_SRC_SYSFS: return "sysfs";
    case DT_SRC_CPUID: return "cpuid";
    case DT_SRC_OS: return "sysconf";
    case DT_SRC_DEFAULT: return "default";
    case DT_SRC_OVERRIDE: return "override";
    }
    return "?";
}

/* ---- identity: arch, vendor, model, features ----------------------------- */

static const char *dt_compiled_arch(void)
{
#if defined(__x86_64__)
    return "x86_64";
#elif defined(__aarch64__)
    return "aarch64";
#elif defined(__i386__)
    return "i686";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
    return "ppc64le";
#else
    return "unknown";
#endif
}

/* uname's machine, reduced to the key alphabet [a-z0-9_]. */
static void dt_detect_arch(dt_target *t)
{
    struct utsname u;
    const char *src = (uname(&u) == 0 && u.machine[0]) ? u.machine : dt_compiled_arch();
    size_t i = 0;
    for (; src[i] && i < sizeof t->arch - 1; i++) {
        char c = (char)tolower((unsigned char)src[i]);
        t->arch[i] = (isalnum((unsigned char)c) || c == '_') ? c : '_';
    }
    t->arch[i] = '\0';
}

/* ARM's "CPU implementer" codes (MIDR_EL1 bits 31:24) for the common ones. */
static const char *dt_arm_implementer(const char *code)
{
    static const struct {
        unsigned code;
        const char *name;
    } table[] = {
        {0x41, "ARM"},      {0x42, "Broadcom"}, {0x43, "Cavium"}, {0x46, "Fujitsu"},
        {0x48, "HiSilicon"}, {0x4e, "NVIDIA"},  {0x50, "APM"},    {0x51, "Qualcomm"},
        {0x61, "Apple"},    {0xc0, "Ampere"},
    };
    unsigned long v = strtoul(code, NULL, 0);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == v)
            return table[i].name;
    return NULL;
}

static void dt_detect_vendor(dt_target *t, const dt_cpuid_info *id, const char *cpuinfo)
{
    char buf[DT_TARGET_VENDOR_MAX];
    const char *arm;
    if (id->vendor[0])
        snprintf(t->vendor, sizeof t->vendor, "%s", id->vendor);
    else if (dt_probe_cpuinfo_field(cpuinfo, "vendor_id", buf, sizeof buf))
        snprintf(t->vendor, sizeof t->vendor, "%s", buf);
    else if (dt_probe_cpuinfo_field(cpuinfo, "CPU implementer", buf, sizeof buf))
        snprintf(t->vendor, sizeof t->vendor, "%s", (arm = dt_arm_implementer(buf)) ? arm : buf);
    else
        snprintf(t->vendor, sizeof t->vendor, "unknown");
}

static void dt_detect_model(dt_target *t, const dt_cpuid_info *id, const char *cpuinfo)
{
    char brand[sizeof id->brand];
    memcpy(brand, id->brand, sizeof brand);
    dt_str_squeeze(brand);
    if (brand[0])
        snprintf(t->model, sizeof t->model, "%s", brand);
    else if (!dt_probe_cpuinfo_field(cpuinfo, "model name", t->model, sizeof t->model) ||
             !t->model[0])
        snprintf(t->model, sizeof t->model, "unknown");
}

static void dt_detect_features(dt_target *t, const dt_cpuid_info *id)
{
    if (id->available) {
        t->cpu_features = id->features;
        t->features = dt_target_usable_features(id->features, id->xcr0);
    } else {
#if defined(__aarch64__)
        /* Advanced SIMD is mandatory in AArch64. */
        t->cpu_features = t->features = DT_FEAT_BIT(DT_FEAT_NEON);
#endif
    }
    t->isa_max = dt_isa_best(t->features);
    dt_target_set_isa(t, t->isa_max);
}

/* ---- counts ---------------------------------------------------------------- */

static void dt_detect_cpus(dt_target *t, const char *cpu_dir)
{
    t->logical_cpus = dt_probe_sysfs_online(cpu_dir);
    if (t->logical_cpus <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        t->logical_cpus = n > 0 ? (int)n : 1;
    }
    t->physical_cores = dt_probe_sysfs_cores(cpu_dir);
    t->cores_src = DT_SRC_SYSFS;
    if (t->physical_cores <= 0) {
        /* Without topology SMT siblings cannot be told apart: count each
         * logical CPU as a core. */
        t->physical_cores = t->logical_cpus;
        t->cores_src = DT_SRC_OS;
        dt_log_info("target: no CPU topology in %s; assuming %d cores", cpu_dir,
                    t->physical_cores);
    }
    if (t->physical_cores > t->logical_cpus) /* offline siblings, partial trees */
        t->physical_cores = t->logical_cpus;
    t->cores = t->physical_cores;
}

/* ---- caches ---------------------------------------------------------------- */

static dt_cache_level *dt_level(dt_target *t, int level)
{
    return level == 1 ? &t->l1d : level == 2 ? &t->l2 : level == 3 ? &t->l3 : NULL;
}

static int dt_clamp_shared(int shared, int fallback, int logical)
{
    if (shared <= 0)
        shared = fallback;
    return shared < 1 ? 1 : shared > logical ? logical : shared;
}

/* Takes the levels still unknown (bit L of *known) from one source's list.
 * A source that lists some cache but no L3 is trusted to mean "no L3". */
static void dt_take_caches(dt_target *t, const dt_probe_cache *c, int n, dt_target_src src,
                           unsigned *known)
{
    for (int i = 0; i < n; i++) {
        dt_cache_level *lv = dt_level(t, c[i].level);
        if (!lv || c[i].type == DT_CACHE_INSTRUCTION || c[i].size == 0)
            continue;
        unsigned bit = 1u << c[i].level;
        if (c[i].level == 1 && t->line_size == 0 && c[i].line > 0) {
            t->line_size = c[i].line;
            t->line_src = src;
        }
        if (*known & bit)
            continue;
        lv->size = c[i].size;
        lv->shared_cpus = dt_clamp_shared(c[i].shared_cpus, c[i].level == 3 ? t->logical_cpus : 1,
                                          t->logical_cpus);
        lv->src = src;
        *known |= bit;
    }
    if (n > 0 && !(*known & (1u << 3))) {
        t->l3 = (dt_cache_level){.size = 0, .shared_cpus = 0, .src = src};
        *known |= 1u << 3;
    }
}

static void dt_default_level(dt_target *t, int level, uint64_t size, int shared)
{
    dt_cache_level *lv = dt_level(t, level);
    lv->size = size;
    lv->shared_cpus = size ? shared : 0;
    lv->src = DT_SRC_DEFAULT;
    dt_log_info("target: L%d cache size unknown; assuming %llu bytes", level,
                (unsigned long long)size);
}

static void dt_detect_caches(dt_target *t, const char *cpu_dir, const dt_cpuid_info *id)
{
    dt_probe_cache c[DT_PROBE_MAX_CACHES];
    const unsigned all = (1u << 1) | (1u << 2) | (1u << 3);
    unsigned known = 0;
    dt_take_caches(t, c, dt_probe_sysfs_caches(cpu_dir, c, DT_PROBE_MAX_CACHES), DT_SRC_SYSFS,
                   &known);
    if (known != all || t->line_size == 0)
        dt_take_caches(t, c, dt_probe_cpuid_caches(c, DT_PROBE_MAX_CACHES), DT_SRC_CPUID, &known);
    if (!(known & (1u << 1)))
        dt_default_level(t, 1, DT_DEFAULT_L1D, 1);
    if (!(known & (1u << 2)))
        dt_default_level(t, 2, DT_DEFAULT_L2, 1);
    if (!(known & (1u << 3)))
        dt_default_level(t, 3, DT_DEFAULT_L3, t->logical_cpus);
    if (t->line_size == 0 && id->clflush_line > 0) {
        t->line_size = id->clflush_line;
        t->line_src = DT_SRC_CPUID;
    }
    if (t->line_size == 0) {
        t->line_size = DT_DEFAULT_LINE;
        t->line_src = DT_SRC_DEFAULT;
    }
}

/* ---- detection ------------------------------------------------------------- */

int dt_target_detect_from(dt_target *t, const char *cpu_dir, const char *cpuinfo, dt_err *e)
{
    (void)e; /* detection itself always succeeds, with defaults if need be */
    if (!cpu_dir)
        cpu_dir = DT_SYSFS_CPU_DIR;
    if (!cpuinfo)
        cpuinfo = DT_PROC_CPUINFO;
    memset(t, 0, sizeof *t);
    dt_cpuid_info id;
    dt_probe_cpuid(&id);
    dt_detect_arch(t);
    dt_detect_vendor(t, &id, cpuinfo);
    dt_detect_model(t, &id, cpuinfo);
    t->cpu_family = id.family;
    t->cpu_model = id.model;
    dt_detect_features(t, &id);
    dt_detect_cpus(t, cpu_dir);
    dt_detect_caches(t, cpu_dir, &id);
    return 0;
}

int dt_target_detect(dt_target *t, dt_err *e)
{
    int rc = dt_target_detect_from(t, NULL, NULL, e);
    if (rc == 0)
        rc = dt_target_apply_overrides(t, getenv("DTUNE_TARGET_ISA"),
                                       getenv("DTUNE_TARGET_CORES"), e);
    return rc;
}

int dt_target_detect_key(dt_target *t, char *key, size_t n, dt_err *e)
{
    int rc = dt_target_detect(t, e);
    if (rc)
        return rc;
    if ((rc = dt_target_key(t, key, n)))
        return dt_errf(e, rc, "cannot form this machine's target key (arch '%s')", t->arch);
    return 0;
}

/* ---- overrides ------------------------------------------------------------- */

static int dt_parse_isa_override(const dt_target *t, const char *s, dt_isa *out, dt_err *e)
{
    if (dt_isa_from_name(s, out))
        return dt_errf(e, DT_EINVAL,
                       "DTUNE_TARGET_ISA: unknown ISA '%.64s' (expected generic, avx2 or avx512)",
                       s);
    if (*out > t->isa_max)
        return dt_errf(e, DT_EUNSUPPORTED,
                       "DTUNE_TARGET_ISA=%s: this CPU (%s) supports at most %s; the override can "
                       "only lower the ISA",
                       s, t->model, dt_isa_name(t->isa_max));
    return 0;
}

static int dt_parse_cores_override(const dt_target *t, const char *s, int *out, dt_err *e)
{
    /* Digits only: no sign, spaces or hex; 9 digits cannot overflow an int. */
    size_t len = strspn(s, "0123456789");
    int n = (len > 0 && len <= 9 && !s[len]) ? atoi(s) : 0;
    if (n < 1)
        return dt_errf(e, DT_EINVAL,
                       "DTUNE_TARGET_CORES: '%.64s' is not a core count (a whole number from 1 "
                       "to %d)",
                       s, t->logical_cpus);
    if (n > t->logical_cpus)
        return dt_errf(e, DT_EUNSUPPORTED,
                       "DTUNE_TARGET_CORES=%s: only %d logical CPUs are online", s,
                       t->logical_cpus);
    *out = n;
    return 0;
}

int dt_target_apply_overrides(dt_target *t, const char *isa, const char *cores, dt_err *e)
{
    dt_isa new_isa = t->isa;
    int new_cores = t->cores, rc;
    int want_isa = isa && *isa, want_cores = cores && *cores;
    /* Validate both before touching *t, so a failure leaves it unchanged. */
    if (want_isa && (rc = dt_parse_isa_override(t, isa, &new_isa, e)))
        return rc;
    if (want_cores && (rc = dt_parse_cores_override(t, cores, &new_cores, e)))
        return rc;
    if (want_isa) {
        dt_target_set_isa(t, new_isa);
        t->overrides |= DT_TARGET_OVR_ISA;
    }
    if (want_cores) {
        t->cores = new_cores;
        t->overrides |= DT_TARGET_OVR_CORES;
    }
    return 0;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *dt_features_json(uint32_t mask)
{
    json_t *a = json_array();
    for (int f = 0; a && f < DT_FEAT_COUNT; f++)
        if ((mask & DT_FEAT_BIT(f)) && json_array_append_new(a, json_string(dt_feature_name(f)))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *dt_cache_json(const dt_cache_level *c)
{
    return json_pack("{s:I, s:i, s:s}", "size", (json_int_t)c->size, "shared_cpus",
                     c->shared_cpus, "source", dt_target_src_name(c->src));
}

const char *dt_target_llvm_cpu(const dt_target *t)
{
    if (strcmp(t->arch, "x86_64") != 0)
        return "generic";
    uint32_t f = t->cpu_features;
    int has_512 = (f & DT_FEAT_BIT(DT_FEAT_AVX512F)) != 0;
    if (!strcmp(t->vendor, "AuthenticAMD") || !strcmp(t->vendor, "HygonGenuine")) {
        int m = t->cpu_model;
        switch (t->cpu_family) {
        case 0x1a: return "znver5";
        case 0x19: /* Zen 4: Raphael, Genoa, Phoenix, Bergamo, Storm Peak */
            return has_512 || (m >= 0x10 && m <= 0x1f) || (m >= 0x60 && m <= 0x7f) ||
                           (m >= 0xa0 && m <= 0xaf)
                       ? "znver4"
                       : "znver3";
        case 0x18: /* Hygon Dhyana: Zen 1 */
        case 0x17: return m >= 0x30 ? "znver2" : "znver1";
        default: break;
        }
    }
    if (f & DT_FEAT_BIT(DT_FEAT_AMX_TILE))
        return "sapphirerapids";
    if (has_512)
        return f & DT_FEAT_BIT(DT_FEAT_AVX512_BF16)   ? "cooperlake"
               : f & DT_FEAT_BIT(DT_FEAT_AVX512_VNNI) ? "cascadelake"
                                                      : "skylake-avx512";
    if (f & DT_FEAT_BIT(DT_FEAT_AVX2))
        return !strcmp(t->vendor, "AuthenticAMD") ? "znver1" : "haswell";
    return "x86-64";
}

json_t *dt_target_to_json(const dt_target *t)
{
    char key[DT_TARGET_KEY_MAX];
    json_t *key_json = dt_target_key(t, key, sizeof key) == 0 ? json_string(key) : json_null();
    /* json_pack steals the "o" references even when it fails. */
    return json_pack(
        "{s:o, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o,"
        " s:i, s:i, s:s, s:i, s:{s:o, s:o, s:o}, s:i, s:s, s:{s:b, s:b}, s:i, s:i, s:s}",
        "key", key_json, "arch", t->arch, "vendor", t->vendor, "model", t->model, "isa",
        dt_isa_name(t->isa), "isa_max", dt_isa_name(t->isa_max), "vector_floats", t->vec_floats,
        "vector_registers", t->vec_regs, "features", dt_features_json(t->features),
        "features_disabled_by_os", dt_features_json(t->cpu_features & ~t->features),
        "logical_cpus", t->logical_cpus, "physical_cores", t->physical_cores,
        "physical_cores_source", dt_target_src_name(t->cores_src), "cores", t->cores, "caches",
        "l1d", dt_cache_json(&t->l1d), "l2", dt_cache_json(&t->l2), "l3", dt_cache_json(&t->l3),
        "cache_line", t->line_size, "cache_line_source", dt_target_src_name(t->line_src),
        "overrides", "isa", (t->overrides & DT_TARGET_OVR_ISA) != 0, "cores",
        (t->overrides & DT_TARGET_OVR_CORES) != 0, "cpu_family", t->cpu_family, "cpu_model",
        t->cpu_model, "llvm_cpu", dt_target_llvm_cpu(t));
}
