/* Raw probes behind dt_target_detect (internal to common/ and its tests).
 *
 * target_cpuid.c reads x86 CPUID and XCR0; on other architectures its
 * functions report nothing.  target_sysfs.c reads /sys/devices/system/cpu and
 * /proc/cpuinfo; every function there tolerates missing files and says so
 * through its return value instead of failing. */
#ifndef DT_COMMON_TARGET_PROBE_H
#define DT_COMMON_TARGET_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* Cache type numbering shared by CPUID leaves 4 / 0x8000001D and sysfs. */
typedef enum { DT_CACHE_DATA = 1, DT_CACHE_INSTRUCTION = 2, DT_CACHE_UNIFIED = 3 } dt_cache_type;

typedef struct dt_probe_cache {
    int level;          /* 1, 2, 3, ... */
    dt_cache_type type;
    uint64_t size;      /* bytes per instance */
    int shared_cpus;    /* logical CPUs sharing it; 0 unknown */
    int line;           /* line bytes; 0 unknown */
} dt_probe_cache;

#define DT_PROBE_MAX_CACHES 16

/* ---- x86 CPUID ------------------------------------------------------------ */

typedef struct dt_cpuid_info {
    int available;       /* 0 on non-x86 builds */
    char vendor[13];     /* "AuthenticAMD", "" when unavailable */
    char brand[49];      /* leaves 0x80000002-4, untrimmed; "" when absent */
    uint32_t features;   /* DT_FEAT_BIT mask as the CPU reports it */
    uint64_t xcr0;       /* XGETBV(0); 0 when the OS has not set OSXSAVE */
    int clflush_line;    /* leaf 1 EBX[15:8]*8; 0 unknown */
    int family, model;   /* leaf 1 EAX, extended fields folded in; 0 unknown */
} dt_cpuid_info;

void dt_probe_cpuid(dt_cpuid_info *out);
/* Cache descriptors from leaf 0x8000001D (AMD/Hygon with TOPOEXT) or leaf 4
 * (others); returns how many were written (0 when unavailable). */
int dt_probe_cpuid_caches(dt_probe_cache *out, int max);

/* ---- sysfs / procfs ------------------------------------------------------ */

/* Caches of cpu0 from <cpu_dir>/cpu0/cache/index*; entries with an unreadable
 * level, type or size are skipped.  Returns the count (0 = nothing usable). */
int dt_probe_sysfs_caches(const char *cpu_dir, dt_probe_cache *out, int max);
/* Logical CPUs in <cpu_dir>/online; 0 when unreadable. */
int dt_probe_sysfs_online(const char *cpu_dir);
/* Distinct (physical_package_id, die_id, core_id) over the online cpuN
 * directories; 0 when any online CPU lacks its topology files. */
int dt_probe_sysfs_cores(const char *cpu_dir);
/* Value of the first "name : value" line of a cpuinfo-style file, trimmed,
 * into buf; returns 1 if found, else 0 (buf then ""). */
int dt_probe_cpuinfo_field(const char *path, const char *name, char *buf, size_t n);

/* ---- parsing helpers (pure) ---------------------------------------------- */

/* Number of CPUs in a kernel cpu list ("0-3,8,10-11"); -1 if malformed. */
int dt_parse_cpu_list(const char *s);
/* A sysfs size: decimal with optional K/M/G suffix (binary), surrounding
 * whitespace allowed; 0 on success, -1 if malformed or overflowing. */
int dt_parse_sysfs_size(const char *s, uint64_t *out);
/* Trims s in place: leading/trailing whitespace removed, inner runs of
 * whitespace collapsed to one space.  Returns s. */
char *dt_str_squeeze(char *s);

#endif
