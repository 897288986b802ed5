/* sysfs and procfs probes (see target_probe.h).  Containers and minimal
 * kernels often lack parts of /sys/devices/system/cpu, so nothing here
 * fails: a missing or malformed file just yields "unknown" to the caller. */
#include "common/target_probe.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_PATH_MAX 4096

char *dt_str_squeeze(char *s)
{
    char *w = s;
    int pending_space = 0;
    for (const char *r = s; *r; r++) {
        if (isspace((unsigned char)*r)) {
            pending_space = (w != s);
            continue;
        }
        if (pending_space)
            *w++ = ' ';
        pending_space = 0;
        *w++ = *r;
    }
    *w = '\0';
    return s;
}

/* Reads the first line of dir/name (trimmed) into buf; 0 or -1. */
static int dt_read_line(const char *dir, const char *name, char *buf, size_t n)
{
    char path[DT_PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *got = fgets(buf, (int)n, f);
    fclose(f);
    if (!got)
        return -1;
    dt_str_squeeze(buf);
    return 0;
}

/* Parses a whole string as a decimal int (sign allowed); 0 or -1. */
static int dt_parse_int(const char *s, int *out)
{
    char *end;
    if (!*s)
        return -1;
    long v = strtol(s, &end, 10);
    if (*end || v < INT_MIN || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int dt_read_int(const char *dir, const char *name, int *out)
{
    char buf[64];
    return dt_read_line(dir, name, buf, sizeof buf) == 0 ? dt_parse_int(buf, out) : -1;
}

/* Reads a non-negative decimal at *p, advancing it; -1 if none or too big. */
static long dt_take_uint(const char **p)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    long v = 0;
    while (isdigit((unsigned char)**p)) {
        v = v * 10 + (**p - '0');
        if (v > INT_MAX)
            return -1;
        (*p)++;
    }
    return v;
}

int dt_parse_cpu_list(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    long count = 0;
    while (*s && !isspace((unsigned char)*s)) {
        long lo = dt_take_uint(&s), hi = lo;
        if (lo < 0)
            return -1;
        if (*s == '-') {
            s++;
            hi = dt_take_uint(&s);
            if (hi < lo)
                return -1;
        }
        count += hi - lo + 1;
        if (count > INT_MAX)
            return -1;
        if (*s == ',')
            s++;
        else if (*s && !isspace((unsigned char)*s))
            return -1;
    }
    while (isspace((unsigned char)*s))
        s++;
    return *s ? -1 : (int)count;
}

int dt_parse_sysfs_size(const char *s, uint64_t *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*s); s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    unsigned shift = 0;
    switch (*s) {
    case 'K': shift = 10; s++; break;
    case 'M': shift = 20; s++; break;
    case 'G': shift = 30; s++; break;
    default: break;
    }
    while (isspace((unsigned char)*s))
        s++;
    if (*s || v > (UINT64_MAX >> shift))
        return -1;
    *out = v << shift;
    return 0;
}

static int dt_cache_type_of(const char *s)
{
    if (!strcmp(s, "Data"))
        return DT_CACHE_DATA;
    if (!strcmp(s, "Instruction"))
        return DT_CACHE_INSTRUCTION;
    if (!strcmp(s, "Unified"))
        return DT_CACHE_UNIFIED;
    return 0;
}

/* Reads one cache index directory; 0 if usable, else -1. */
static int dt_read_cache_index(const char *dir, dt_probe_cache *c)
{
    char buf[256];
    int type;
    memset(c, 0, sizeof *c);
    if (dt_read_int(dir, "level", &c->level) || c->level < 1)
        return -1;
    if (dt_read_line(dir, "type", buf, sizeof buf) || !(type = dt_cache_type_of(buf)))
        return -1;
    c->type = (dt_cache_type)type;
    if (dt_read_line(dir, "size", buf, sizeof buf) || dt_parse_sysfs_size(buf, &c->size))
        return -1;
    if (dt_read_line(dir, "shared_cpu_list", buf, sizeof buf) == 0) {
        int shared = dt_parse_cpu_list(buf);
        c->shared_cpus = shared > 0 ? shared : 0;
    }
    if (dt_read_int(dir, "coherency_line_size", &c->line) || c->line < 0)
        c->line = 0;
    return 0;
}

int dt_probe_sysfs_caches(const char *cpu_dir, dt_probe_cache *out, int max)
{
    int n = 0;
    /* Index directories are numbered densely, but a gap costs nothing. */
    for (int i = 0; i < 32 && n < max; i++) {
        char dir[DT_PATH_MAX];
        if ((size_t)snprintf(dir, sizeof dir, "%s/cpu0/cache/index%d", cpu_dir, i) >= sizeof dir)
            break;
        if (dt_read_cache_index(dir, &out[n]) == 0)
            n++;
    }
    return n;
}

int dt_probe_sysfs_online(const char *cpu_dir)
{
    char buf[4096];
    if (dt_read_line(cpu_dir, "online", buf, sizeof buf))
        return 0;
    int n = dt_parse_cpu_list(buf);
    return n > 0 ? n : 0;
}

typedef struct {
    int package, die, core;
} dt_core_id;

static int dt_core_id_cmp(const void *pa, const void *pb)
{
    const dt_core_id *a = pa, *b = pb;
    if (a->package != b->package)
        return a->package < b->package ? -1 : 1;
    if (a->die != b->die)
        return a->die < b->die ? -1 : 1;
    return (a->core > b->core) - (a->core < b->core);
}

/* "cpu" followed by digits only (skips cpufreq, cpuidle, ...). */
static int dt_is_cpu_dir(const char *name)
{
    if (strncmp(name, "cpu", 3) || !name[3])
        return 0;
    for (const char *p = name + 3; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    return 1;
}

/* Topology of one cpuN directory: 1 read, 0 offline (skip), -1 unknown. */
static int dt_read_core_id(const char *cpu_dir, const char *name, dt_core_id *id)
{
    char dir[DT_PATH_MAX];
    int online;
    if ((size_t)snprintf(dir, sizeof dir, "%s/%s", cpu_dir, name) >= sizeof dir)
        return -1;
    /* cpu0 often has no "online" file: it cannot be taken offline. */
    if (dt_read_int(dir, "online", &online) == 0 && online == 0)
        return 0;
    if (dt_read_int(dir, "topology/physical_package_id", &id->package) ||
        dt_read_int(dir, "topology/core_id", &id->core))
        return -1;
    /* die_id (Linux 5.2+) separates cores whose core_id is only unique per die. */
    if (dt_read_int(dir, "topology/die_id", &id->die))
        id->die = 0;
    return 1;
}

/* Collects the topology of every online CPU; returns the count, -1 unknown. */
static int dt_collect_core_ids(const char *cpu_dir, dt_core_id **ids_out)
{
    DIR *d = opendir(cpu_dir);
    if (!d)
        return -1;
    dt_core_id *ids = NULL;
    int n = 0, cap = 0, status = 0;
    struct dirent *ent;
    while (status >= 0 && (ent = readdir(d))) {
        if (!dt_is_cpu_dir(ent->d_name))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            dt_core_id *grown = realloc(ids, (size_t)cap * sizeof *ids);
            if (!grown) {
                status = -1;
                break;
            }
            ids = grown;
        }
        status = dt_read_core_id(cpu_dir, ent->d_name, &ids[n]);
        n += status > 0;
    }
    closedir(d);
    if (status < 0) {
        free(ids);
        return -1;
    }
    *ids_out = ids;
    return n;
}

int dt_probe_sysfs_cores(const char *cpu_dir)
{
    dt_core_id *ids = NULL;
    int n = dt_collect_core_ids(cpu_dir, &ids);
    if (n <= 0) {
        free(ids);
        return 0;
    }
    qsort(ids, (size_t)n, sizeof *ids, dt_core_id_cmp);
    int distinct = 1;
    for (int i = 1; i < n; i++)
        distinct += dt_core_id_cmp(&ids[i - 1], &ids[i]) != 0;
    free(ids);
    return distinct;
}

int dt_probe_cpuinfo_field(const char *path, const char *name, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        if (strcmp(dt_str_squeeze(line), name))
            continue;
        snprintf(buf, n, "%s", dt_str_squeeze(colon + 1));
        found = 1;
    }
    free(line);
    fclose(f);
    return found;
}
