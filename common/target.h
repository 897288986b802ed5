/* The target: the hardware a schedule is for, detected at run time.
 *
 * dt_target_detect() fills a dt_target from uname, CPUID + XCR0 (x86),
 * /sys/devices/system/cpu and /proc/cpuinfo.  Every sysfs or procfs read may
 * fail (containers, odd kernels): the value then comes from CPUID or a
 * default, and the struct says where each value came from (dt_target_src).
 *
 * The target key is the canonical string that names a target in the
 * database; it holds exactly what a schedule depends on:
 *
 *     <arch>-<isa>-<cores>c-<L1d>.<L2>.<L3>      e.g. x86_64-avx512-2c-48K.1M.32M
 *
 * Sizes are bytes per cache instance, written with a binary K/M/G suffix only
 * when exact ("1536K", not "1.5M"), "0" for an absent level.  The grammar and
 * the overrides are documented in docs/targets.md.
 *
 * Ownership: dt_target and dt_target_key_parts are plain values (no pointers);
 * dt_target_to_json returns a new reference the caller must json_decref. */
#ifndef DT_COMMON_TARGET_H
#define DT_COMMON_TARGET_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Vector ISA a GEMM micro-kernel is generated for, ordered weakest first so
 * that "lower" and "higher" compare as integers. */
typedef enum dt_isa {
    DT_ISA_GENERIC = 0, /* GCC vector extensions, 4 floats */
    DT_ISA_AVX2 = 1,    /* AVX2 + FMA, 8 floats, 16 ymm registers */
    DT_ISA_AVX512 = 2,  /* AVX-512F (+ AVX2 + FMA), 16 floats, 32 zmm registers */
} dt_isa;
#define DT_ISA_COUNT 3

/* CPU features dtune reports; a dt_target's feature sets are bit masks of
 * DT_FEAT_BIT(f). */
typedef enum dt_feature {
    DT_FEAT_SSE4_2 = 0,
    DT_FEAT_AVX,
    DT_FEAT_AVX2,
    DT_FEAT_FMA,
    DT_FEAT_F16C,
    DT_FEAT_AVX512F,
    DT_FEAT_AVX512CD,
    DT_FEAT_AVX512BW,
    DT_FEAT_AVX512DQ,
    DT_FEAT_AVX512VL,
    DT_FEAT_AVX512_VNNI,
    DT_FEAT_AVX512_BF16,
    DT_FEAT_AVX512_FP16,
    DT_FEAT_AVX_VNNI,
    DT_FEAT_AMX_TILE,
    DT_FEAT_AMX_INT8,
    DT_FEAT_AMX_BF16,
    DT_FEAT_NEON,
    DT_FEAT_COUNT
} dt_feature;
#define DT_FEAT_BIT(f) (UINT32_C(1) << (f))

/* Where a detected value came from. */
typedef enum dt_target_src {
    DT_SRC_SYSFS = 0, /* /sys/devices/system/cpu */
    DT_SRC_CPUID,     /* x86 CPUID cache leaves (4 or 0x8000001D) */
    DT_SRC_OS,        /* sysconf() */
    DT_SRC_DEFAULT,   /* nothing readable: a documented default */
    DT_SRC_OVERRIDE,  /* DTUNE_TARGET_* */
} dt_target_src;

typedef struct dt_cache_level {
    uint64_t size;      /* bytes per instance; 0 = no such level */
    int shared_cpus;    /* logical CPUs sharing one instance (0 when size is 0) */
    dt_target_src src;
} dt_cache_level;

#define DT_TARGET_ARCH_MAX 32    /* [a-z0-9_], at most 31 characters */
#define DT_TARGET_VENDOR_MAX 64
#define DT_TARGET_MODEL_MAX 128
#define DT_TARGET_KEY_MAX 128    /* enough for any key dt_target_key writes */

/* Bits of dt_target.overrides. */
enum { DT_TARGET_OVR_ISA = 1, DT_TARGET_OVR_CORES = 2 };

typedef struct dt_target {
    char arch[DT_TARGET_ARCH_MAX];      /* "x86_64", "aarch64", ... (uname) */
    char vendor[DT_TARGET_VENDOR_MAX];  /* "AuthenticAMD", "GenuineIntel", "ARM", "unknown" */
    char model[DT_TARGET_MODEL_MAX];    /* brand string, trimmed; "unknown" if none */
    int cpu_family, cpu_model;          /* x86 CPUID family / model; 0 unknown */

    uint32_t cpu_features; /* DT_FEAT_BIT mask the CPU reports */
    uint32_t features;     /* the subset the OS also enables (XCR0): usable */
    dt_isa isa_max;        /* best ISA the CPU + OS support */
    dt_isa isa;            /* ISA in use: isa_max unless lowered by override */
    int vec_floats;        /* fp32 lanes per vector register of isa */
    int vec_regs;          /* vector registers of isa */

    int logical_cpus;      /* logical CPUs online */
    int physical_cores;    /* distinct (package, die, core) among online CPUs */
    dt_target_src cores_src;
    int cores;             /* cores used for thread planning and the key */

    dt_cache_level l1d, l2, l3;
    int line_size;         /* cache line bytes */
    dt_target_src line_src;

    unsigned overrides;    /* DT_TARGET_OVR_* bits applied */
} dt_target;

/* The fields of a key (what dt_target_key_parse returns). */
typedef struct dt_target_key_parts {
    char arch[DT_TARGET_ARCH_MAX];
    dt_isa isa;
    int cores;
    uint64_t l1d, l2, l3;  /* bytes; 0 = absent */
} dt_target_key_parts;

/* ---- ISA and features ---------------------------------------------------- */

/* "generic", "avx2", "avx512"; "?" for an out-of-range value. */
const char *dt_isa_name(dt_isa isa);
/* Exact, case-sensitive name to ISA: 0, or DT_EINVAL for an unknown name. */
int dt_isa_from_name(const char *name, dt_isa *out);
/* fp32 lanes per vector: 4, 8, 16. */
int dt_isa_vec_floats(dt_isa isa);
/* Vector registers the ISA's code may use: 32 for AVX-512 and for generic
 * code on aarch64 (NEON), else 16. */
int dt_isa_vec_regs(dt_isa isa, const char *arch);
/* Best ISA a usable-feature mask allows: AVX512 needs avx512f+avx2+fma,
 * AVX2 needs avx2+fma. */
dt_isa dt_isa_best(uint32_t features);

/* Lower-case feature name as in /proc/cpuinfo ("avx512_vnni"); "?" if unknown. */
const char *dt_feature_name(dt_feature f);
/* 1 when the target can use f (CPU has it and the OS enables its state). */
int dt_target_has(const dt_target *t, dt_feature f);
/* Masks CPU-reported features by the OS-enabled state in XCR0: AVX-family
 * needs XCR0 bits 1-2 (SSE, YMM), AVX-512 also bits 5-7 (opmask, ZMM),
 * AMX bits 17-18 (tile config, tile data).  Pure, for tests. */
uint32_t dt_target_usable_features(uint32_t cpu_features, uint64_t xcr0);

/* ---- detection ----------------------------------------------------------- */

/* Detects this machine, then applies DTUNE_TARGET_ISA / DTUNE_TARGET_CORES
 * from the environment (unset or empty = no override).  Errors: DT_EINVAL
 * (malformed override), DT_EUNSUPPORTED (override beyond the hardware). */
int dt_target_detect(dt_target *t, dt_err *e);

/* dt_target_detect, then this target's key into key (size n; DT_TARGET_KEY_MAX
 * always fits): the one way a command, the daemon, a worker or the dispatch
 * cache learns "this machine" and its key.  A key that cannot be formed is
 * DT_EINVAL "cannot form this machine's target key". */
int dt_target_detect_key(dt_target *t, char *key, size_t n, dt_err *e);

/* Detection with another sysfs CPU directory and cpuinfo file (tests point
 * them at fake trees or at nothing); no environment overrides.  NULL means
 * the real /sys/devices/system/cpu and /proc/cpuinfo. */
int dt_target_detect_from(dt_target *t, const char *sysfs_cpu_dir, const char *cpuinfo,
                          dt_err *e);

/* Overrides for testing other back-ends and thread counts; NULL or "" leaves
 * a value alone.  isa ("generic", "avx2", "avx512") may only lower the ISA
 * (relative to isa_max; asking for more is DT_EUNSUPPORTED); cores is a
 * decimal 1..logical_cpus.  On error *t is unchanged. */
int dt_target_apply_overrides(dt_target *t, const char *isa, const char *cores, dt_err *e);

/* Recomputes vec_floats / vec_regs from isa and arch (after editing isa). */
void dt_target_set_isa(dt_target *t, dt_isa isa);

/* Name of a source: "sysfs", "cpuid", "sysconf", "default", "override". */
const char *dt_target_src_name(dt_target_src src);

/* ---- key ----------------------------------------------------------------- */

/* The key fields of a target. */
void dt_target_key_parts_of(const dt_target *t, dt_target_key_parts *out);
/* Writes the canonical key of p into buf (DT_TARGET_KEY_MAX always fits).
 * Returns 0, or DT_EINVAL if a field is invalid (arch outside [a-z0-9_]{1,31},
 * cores < 1, unknown isa) or buf is too small. */
int dt_target_key_format(const dt_target_key_parts *p, char *buf, size_t n);
/* dt_target_key_format(dt_target_key_parts_of(t)). */
int dt_target_key(const dt_target *t, char *buf, size_t n);
/* Parses a canonical key.  Only the canonical spelling is accepted ("1M",
 * never "1024K"), so parse and format are exact inverses.  Malformed keys
 * are DT_EINVAL with the 1-based column in the message. */
int dt_target_key_parse(const char *key, dt_target_key_parts *out, dt_err *e);

/* Writes a byte count the way the key does ("48K", "1536K", "32M", "0",
 * "1000"); returns what snprintf returns. */
int dt_target_size_format(uint64_t bytes, char *buf, size_t n);

/* The CPU's name for LLVM's and GCC's -mcpu / -march (what TVM's target
 * takes): AMD by CPUID family and model (family 0x1A znver5, 0x19 znver4 or
 * znver3, 0x17 znver2 or znver1), Intel by features (sapphirerapids with
 * AMX, cooperlake with AVX512_BF16, cascadelake with AVX512_VNNI,
 * skylake-avx512, haswell with AVX2), else "x86-64"; "generic" off x86.
 * (A static string.) */
const char *dt_target_llvm_cpu(const dt_target *t);

/* ---- JSON ---------------------------------------------------------------- */

/* Every field plus "key" and "llvm_cpu"; NULL only when out of memory. */
json_t *dt_target_to_json(const dt_target *t);

#endif
