/* Tests of common/target: detection on this machine and on fake sysfs trees,
 * ISA selection and XCR0 masking, overrides, the key (format, parse, round
 * trip, malformed keys), JSON, and `dtune info` end to end. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/target.h"
#include "common/target_probe.h"
#include "tests/dt_test.h"

/* ---- helpers --------------------------------------------------------------- */

static dt_target hand_target(const char *arch, dt_isa isa_max, int logical, int cores,
                             uint64_t l1d, uint64_t l2, uint64_t l3)
{
    dt_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.arch, sizeof t.arch, "%s", arch);
    snprintf(t.vendor, sizeof t.vendor, "test");
    snprintf(t.model, sizeof t.model, "Test CPU");
    t.isa_max = isa_max;
    dt_target_set_isa(&t, isa_max);
    t.logical_cpus = logical;
    t.physical_cores = t.cores = cores;
    t.l1d.size = l1d;
    t.l2.size = l2;
    t.l3.size = l3;
    t.line_size = 64;
    return t;
}

static void detect_or_fail(dt_target *t)
{
    dt_err e;
    dt_err_clear(&e);
    int rc = dt_target_detect(t, &e);
    if (rc)
        fprintf(stderr, "detect: %s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static int key_parts_equal(const dt_target_key_parts *a, const dt_target_key_parts *b)
{
    return !strcmp(a->arch, b->arch) && a->isa == b->isa && a->cores == b->cores &&
           a->l1d == b->l1d && a->l2 == b->l2 && a->l3 == b->l3;
}

/* Asserts key(t) == expect (when given), and that parse(key) gives back the
 * same parts and the same string. */
static void check_round_trip(const dt_target *t, const char *expect)
{
    char key[DT_TARGET_KEY_MAX], again[DT_TARGET_KEY_MAX];
    dt_target_key_parts want, got;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_key(t, key, sizeof key), 0);
    if (expect && strcmp(key, expect))
        fprintf(stderr, "key %s, expected %s\n", key, expect);
    if (expect)
        CU_ASSERT_STRING_EQUAL(key, expect);
    dt_target_key_parts_of(t, &want);
    int rc = dt_target_key_parse(key, &got, &e);
    if (rc)
        fprintf(stderr, "parse %s: %s\n", key, e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT(key_parts_equal(&want, &got));
    CU_ASSERT_EQUAL(dt_target_key_format(&got, again, sizeof again), 0);
    CU_ASSERT_STRING_EQUAL(again, key);
}

/* ---- ISA and features ------------------------------------------------------ */

static void test_isa_names(void)
{
    for (int i = 0; i < DT_ISA_COUNT; i++) {
        dt_isa back;
        CU_ASSERT_EQUAL(dt_isa_from_name(dt_isa_name((dt_isa)i), &back), 0);
        CU_ASSERT_EQUAL(back, (dt_isa)i);
    }
    CU_ASSERT_STRING_EQUAL(dt_isa_name(DT_ISA_GENERIC), "generic");
    CU_ASSERT_STRING_EQUAL(dt_isa_name(DT_ISA_AVX2), "avx2");
    CU_ASSERT_STRING_EQUAL(dt_isa_name(DT_ISA_AVX512), "avx512");
    CU_ASSERT_STRING_EQUAL(dt_isa_name((dt_isa)42), "?");
    const char *bad[] = {"", "AVX2", "avx9", "avx512 ", "sse", NULL};
    for (int i = 0; i < 6; i++) {
        dt_isa out = DT_ISA_AVX2;
        CU_ASSERT_EQUAL(dt_isa_from_name(bad[i], &out), DT_EINVAL);
        CU_ASSERT_EQUAL(out, DT_ISA_AVX2);
    }
    CU_ASSERT_EQUAL(dt_isa_vec_floats(DT_ISA_GENERIC), 4);
    CU_ASSERT_EQUAL(dt_isa_vec_floats(DT_ISA_AVX2), 8);
    CU_ASSERT_EQUAL(dt_isa_vec_floats(DT_ISA_AVX512), 16);
    CU_ASSERT_EQUAL(dt_isa_vec_regs(DT_ISA_AVX512, "x86_64"), 32);
    CU_ASSERT_EQUAL(dt_isa_vec_regs(DT_ISA_AVX2, "x86_64"), 16);
    CU_ASSERT_EQUAL(dt_isa_vec_regs(DT_ISA_GENERIC, "x86_64"), 16);
    CU_ASSERT_EQUAL(dt_isa_vec_regs(DT_ISA_GENERIC, "aarch64"), 32);
}

static void test_isa_best(void)
{
    uint32_t avx2 = DT_FEAT_BIT(DT_FEAT_AVX) | DT_FEAT_BIT(DT_FEAT_AVX2);
    uint32_t fma = DT_FEAT_BIT(DT_FEAT_FMA);
    uint32_t f512 = DT_FEAT_BIT(DT_FEAT_AVX512F);
    CU_ASSERT_EQUAL(dt_isa_best(0), DT_ISA_GENERIC);
    CU_ASSERT_EQUAL(dt_isa_best(avx2), DT_ISA_GENERIC);       /* no FMA */
    CU_ASSERT_EQUAL(dt_isa_best(avx2 | fma), DT_ISA_AVX2);
    CU_ASSERT_EQUAL(dt_isa_best(avx2 | f512), DT_ISA_GENERIC); /* no FMA */
    CU_ASSERT_EQUAL(dt_isa_best(f512 | fma), DT_ISA_GENERIC);  /* no AVX2 */
    CU_ASSERT_EQUAL(dt_isa_best(avx2 | fma | f512), DT_ISA_AVX512);
}

static void test_feature_names(void)
{
    for (int i = 0; i < DT_FEAT_COUNT; i++) {
        CU_ASSERT_STRING_NOT_EQUAL(dt_feature_name((dt_feature)i), "?");
        for (int j = 0; j < i; j++)
            CU_ASSERT_STRING_NOT_EQUAL(dt_feature_name((dt_feature)i),
                                       dt_feature_name((dt_feature)j));
    }
    CU_ASSERT_STRING_EQUAL(dt_feature_name(DT_FEAT_AVX512_VNNI), "avx512_vnni");
    CU_ASSERT_STRING_EQUAL(dt_feature_name(DT_FEAT_COUNT), "?");
}

/* The OS must enable a register state before its instructions are usable. */
static void test_usable_features(void)
{
    uint32_t all = (uint32_t)(DT_FEAT_BIT(DT_FEAT_COUNT) - 1) & ~DT_FEAT_BIT(DT_FEAT_NEON);
    uint32_t sse = DT_FEAT_BIT(DT_FEAT_SSE4_2);
    uint32_t u;

    u = dt_target_usable_features(all, 0); /* no OSXSAVE */
    CU_ASSERT_EQUAL(u, sse);
    u = dt_target_usable_features(all, 0x3); /* x87 + SSE, no YMM */
    CU_ASSERT_EQUAL(u, sse);
    u = dt_target_usable_features(all, 0x7); /* YMM, no ZMM */
    CU_ASSERT(u & DT_FEAT_BIT(DT_FEAT_AVX2));
    CU_ASSERT(u & DT_FEAT_BIT(DT_FEAT_FMA));
    CU_ASSERT(u & DT_FEAT_BIT(DT_FEAT_AVX_VNNI));
    CU_ASSERT_FALSE(u & DT_FEAT_BIT(DT_FEAT_AVX512F));
    CU_ASSERT_FALSE(u & DT_FEAT_BIT(DT_FEAT_AVX512_BF16));
    CU_ASSERT_EQUAL(dt_isa_best(u), DT_ISA_AVX2);
    u = dt_target_usable_features(all, 0x67); /* Hi16_ZMM (bit 7) missing */
    CU_ASSERT_FALSE(u & DT_FEAT_BIT(DT_FEAT_AVX512F));
    u = dt_target_usable_features(all, 0xe7); /* full AVX-512 state, no AMX */
    CU_ASSERT(u & DT_FEAT_BIT(DT_FEAT_AVX512F));
    CU_ASSERT(u & DT_FEAT_BIT(DT_FEAT_AVX512VL));
    CU_ASSERT_FALSE(u & DT_FEAT_BIT(DT_FEAT_AMX_TILE));
    CU_ASSERT_EQUAL(dt_isa_best(u), DT_ISA_AVX512);
    u = dt_target_usable_features(all, 0x600e7); /* + XTILECFG, XTILEDATA */
    CU_ASSERT_EQUAL(u, all);
    CU_ASSERT_EQUAL(dt_target_usable_features(0, 0x600e7), 0);
}

/* ---- detection --------------------------------------------------------------- */

static void test_detect_consistent(void)
{
    dt_target t;
    detect_or_fail(&t);
    CU_ASSERT(t.arch[0] != '\0');
    CU_ASSERT(t.vendor[0] != '\0');
    CU_ASSERT(t.model[0] != '\0');
    CU_ASSERT_EQUAL(t.isa, t.isa_max); /* main() clears the override variables */
    CU_ASSERT_EQUAL(t.overrides, 0);
    CU_ASSERT_EQUAL(t.features & ~t.cpu_features, 0);
    CU_ASSERT_EQUAL(t.isa_max, dt_isa_best(t.features));
    if (t.isa == DT_ISA_AVX512) {
        CU_ASSERT(dt_target_has(&t, DT_FEAT_AVX512F));
        CU_ASSERT(dt_target_has(&t, DT_FEAT_AVX2));
        CU_ASSERT(dt_target_has(&t, DT_FEAT_FMA));
    }
    if (t.isa == DT_ISA_AVX2) {
        CU_ASSERT(dt_target_has(&t, DT_FEAT_AVX2));
        CU_ASSERT(dt_target_has(&t, DT_FEAT_FMA));
    }
    CU_ASSERT_EQUAL(t.vec_floats, dt_isa_vec_floats(t.isa));
    CU_ASSERT_EQUAL(t.vec_floats, t.isa == DT_ISA_AVX512 ? 16 : t.isa == DT_ISA_AVX2 ? 8 : 4);
    CU_ASSERT(t.vec_regs == 16 || t.vec_regs == 32);
    CU_ASSERT(t.logical_cpus >= 1);
    CU_ASSERT(t.physical_cores >= 1);
    CU_ASSERT(t.physical_cores <= t.logical_cpus);
    CU_ASSERT_EQUAL(t.cores, t.physical_cores);
    CU_ASSERT(t.l1d.size > 0);
    CU_ASSERT(t.l2.size > 0);
    if (t.l1d.size && t.l2.size)
        CU_ASSERT(t.l1d.size <= t.l2.size);
    if (t.l2.size && t.l3.size)
        CU_ASSERT(t.l2.size <= t.l3.size);
    const dt_cache_level *lv[] = {&t.l1d, &t.l2, &t.l3};
    for (int i = 0; i < 3; i++)
        if (lv[i]->size)
            CU_ASSERT(lv[i]->shared_cpus >= 1 && lv[i]->shared_cpus <= t.logical_cpus);
    CU_ASSERT(t.line_size >= 16 && (t.line_size & (t.line_size - 1)) == 0);
#if defined(__x86_64__)
    CU_ASSERT_STRING_EQUAL(t.arch, "x86_64");
    /* Every x86-64 CPU dtune cares about has CPUID and a vendor string. */
    CU_ASSERT_STRING_NOT_EQUAL(t.vendor, "unknown");
#endif
    fprintf(stderr, "\n    detected: %s, %s, isa %s, %d/%d cores ", t.model, t.arch,
            dt_isa_name(t.isa), t.physical_cores, t.logical_cpus);
}

/* Without sysfs or cpuinfo (a bare container), detection still succeeds and
 * says which values it could not read. */
static void test_detect_without_sysfs(void)
{
    dt_target t, real;
    dt_err e;
    detect_or_fail(&real);
    CU_ASSERT_EQUAL_FATAL(dt_target_detect_from(&t, "/nonexistent/cpu", "/nonexistent/info", &e),
                          0);
    CU_ASSERT_EQUAL(t.cores_src, DT_SRC_OS);
    CU_ASSERT_EQUAL(t.physical_cores, t.logical_cpus);
    CU_ASSERT_EQUAL(t.logical_cpus, (int)sysconf(_SC_NPROCESSORS_ONLN));
    CU_ASSERT_NOT_EQUAL(t.l1d.src, DT_SRC_SYSFS);
    CU_ASSERT_NOT_EQUAL(t.l2.src, DT_SRC_SYSFS);
    CU_ASSERT_NOT_EQUAL(t.l3.src, DT_SRC_SYSFS);
    CU_ASSERT(t.l1d.size > 0 && t.l2.size > 0);
    CU_ASSERT(t.line_size > 0);
    CU_ASSERT_EQUAL(t.isa_max, real.isa_max); /* features never come from sysfs */
    if (t.l1d.src == DT_SRC_CPUID && real.l1d.src == DT_SRC_SYSFS) {
        /* On x86 Linux builds sysfs from the same CPUID leaves. */
        CU_ASSERT_EQUAL(t.l1d.size, real.l1d.size);
        CU_ASSERT_EQUAL(t.l2.size, real.l2.size);
        CU_ASSERT_EQUAL(t.l3.size, real.l3.size);
    }
    if (t.l1d.src == DT_SRC_DEFAULT) {
        CU_ASSERT_EQUAL(t.l1d.size, 32u << 10);
        CU_ASSERT_EQUAL(t.l3.size, 0);
    }
    char key[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL(dt_target_key(&t, key, sizeof key), 0);
}

static void mkdirs(const char *root, const char *rel)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path) {
        CU_FAIL("mkdirs: path too long");
        return;
    }
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    mkdir(path, 0755);
}

/* Writes root/rel, creating rel's directories. */
static void put(const char *root, const char *rel, const char *text)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", rel);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        mkdirs(root, dir);
    }
    free(dt_test_write_file(root, rel, text));
}

static void put_cpu(const char *root, int cpu, int package, int core, const char *online)
{
    char rel[128], val[32];
    if (online) {
        snprintf(rel, sizeof rel, "cpu%d/online", cpu);
        put(root, rel, online);
    }
    snprintf(rel, sizeof rel, "cpu%d/topology/physical_package_id", cpu);
    snprintf(val, sizeof val, "%d\n", package);
    put(root, rel, val);
    snprintf(rel, sizeof rel, "cpu%d/topology/core_id", cpu);
    snprintf(val, sizeof val, "%d\n", core);
    put(root, rel, val);
}

static void put_cache(const char *root, int index, const char *level, const char *type,
                      const char *size, const char *shared)
{
    char rel[128];
    const char *names[] = {"level", "type", "size", "shared_cpu_list", "coherency_line_size"};
    const char *vals[] = {level, type, size, shared, "128\n"};
    for (int i = 0; i < 5; i++) {
        snprintf(rel, sizeof rel, "cpu0/cache/index%d/%s", index, names[i]);
        put(root, rel, vals[i]);
    }
}

/* 4 logical CPUs on 2 SMT cores, one more CPU offline, no L3. */
static void test_detect_fake_sysfs(void)
{
    char *root = dt_test_tmpdir();
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    put(root, "online", "0-3\n");
    put_cpu(root, 0, 0, 0, NULL);
    put_cpu(root, 1, 0, 0, "1\n");
    put_cpu(root, 2, 0, 1, "1\n");
    put_cpu(root, 3, 0, 1, "1\n");
    put(root, "cpu4/online", "0\n"); /* offline: no topology directory */
    mkdirs(root, "cpufreq");
    put_cache(root, 0, "1\n", "Data\n", "64K\n", "0-1\n");
    put_cache(root, 1, "1\n", "Instruction\n", "64K\n", "0-1\n");
    put_cache(root, 2, "2\n", "Unified\n", "1536K\n", "0-1\n");
    char *info = dt_test_write_file(root, "cpuinfo", "processor\t: 0\nmodel name\t:  Fake   CPU \n");

    dt_target t;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_target_detect_from(&t, root, info, &e), 0);
    CU_ASSERT_EQUAL(t.logical_cpus, 4);
    CU_ASSERT_EQUAL(t.physical_cores, 2);
    CU_ASSERT_EQUAL(t.cores, 2);
    CU_ASSERT_EQUAL(t.cores_src, DT_SRC_SYSFS);
    CU_ASSERT_EQUAL(t.l1d.size, 64u << 10);
    CU_ASSERT_EQUAL(t.l1d.shared_cpus, 2);
    CU_ASSERT_EQUAL(t.l1d.src, DT_SRC_SYSFS);
    CU_ASSERT_EQUAL(t.l2.size, 1536u << 10);
    CU_ASSERT_EQUAL(t.l3.size, 0); /* sysfs listed caches, none at level 3 */
    CU_ASSERT_EQUAL(t.l3.src, DT_SRC_SYSFS);
    CU_ASSERT_EQUAL(t.line_size, 128);
    dt_cpuid_info id;
    dt_probe_cpuid(&id);
    if (!id.brand[0])
        CU_ASSERT_STRING_EQUAL(t.model, "Fake CPU");

    /* A CPU without topology files: the core count falls back to sysconf. */
    put(root, "cpu5/online", "1\n");
    CU_ASSERT_EQUAL(dt_target_detect_from(&t, root, info, &e), 0);
    CU_ASSERT_EQUAL(t.cores_src, DT_SRC_OS);
    CU_ASSERT_EQUAL(t.physical_cores, t.logical_cpus);
    free(info);
    dt_test_rmtree(root);
    free(root);
}

/* core_id repeats across dies: die_id keeps the cores apart. */
static void test_detect_dies(void)
{
    char *root = dt_test_tmpdir();
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    put(root, "online", "0-3\n");
    for (int cpu = 0; cpu < 4; cpu++) {
        char rel[64];
        put_cpu(root, cpu, 0, cpu % 2, NULL);
        snprintf(rel, sizeof rel, "cpu%d/topology/die_id", cpu);
        put(root, rel, cpu < 2 ? "0\n" : "1\n");
    }
    CU_ASSERT_EQUAL(dt_probe_sysfs_cores(root), 4);
    CU_ASSERT_EQUAL(dt_probe_sysfs_online(root), 4);
    CU_ASSERT_EQUAL(dt_probe_sysfs_cores("/nonexistent"), 0);
    CU_ASSERT_EQUAL(dt_probe_sysfs_online("/nonexistent"), 0);
    dt_test_rmtree(root);
    free(root);
}

static void test_probe_parsers(void)
{
    struct {
        const char *s;
        int n;
    } lists[] = {{"0", 1},       {"0-3", 4},   {"0-3,8,10-11\n", 7}, {"", 0}, {"\n", 0},
                 {" 5 ", 1},     {"3-1", -1},  {"a", -1},            {"0,,1", -1},
                 {"0-", -1},     {"1 2", -1},  {"-1", -1}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        int got = dt_parse_cpu_list(lists[i].s);
        if (got != lists[i].n)
            fprintf(stderr, "cpu list '%s': %d, expected %d\n", lists[i].s, got, lists[i].n);
        CU_ASSERT_EQUAL(got, lists[i].n);
    }
    struct {
        const char *s;
        int rc;
        uint64_t v;
    } sizes[] = {{"48K\n", 0, 48u << 10}, {"32768K", 0, 32u << 20}, {"512", 0, 512},
                 {"1M", 0, 1u << 20},     {"2G", 0, 2ull << 30},     {"x", -1, 0},
                 {"12Q", -1, 0},          {"", -1, 0},               {"99999999999999999999K", -1, 0}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t v = 0;
        CU_ASSERT_EQUAL(dt_parse_sysfs_size(sizes[i].s, &v), sizes[i].rc);
        if (sizes[i].rc == 0)
            CU_ASSERT_EQUAL(v, sizes[i].v);
    }
    char s[] = "  AMD   EPYC\t 9R45 \n";
    CU_ASSERT_STRING_EQUAL(dt_str_squeeze(s), "AMD EPYC 9R45");
    char blank[] = " \t ";
    CU_ASSERT_STRING_EQUAL(dt_str_squeeze(blank), "");
}

/* ---- key --------------------------------------------------------------------- */

static void test_size_format(void)
{
    struct {
        uint64_t v;
        const char *s;
    } cases[] = {{0, "0"},           {1, "1"},          {1000, "1000"},         {1024, "1K"},
                 {1536u << 10, "1536K"}, {48u << 10, "48K"}, {1u << 20, "1M"}, {1025u << 10, "1025K"},
                 {32u << 20, "32M"}, {3ull << 30, "3G"}, {1024ull << 30, "1024G"},
                 {(1ull << 30) + 1024, "1048577K"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        dt_target_size_format(cases[i].v, buf, sizeof buf);
        CU_ASSERT_STRING_EQUAL(buf, cases[i].s);
    }
}

static void test_key_detected_round_trip(void)
{
    dt_target t;
    detect_or_fail(&t);
    check_round_trip(&t, NULL);
    char key[DT_TARGET_KEY_MAX];
    CU_ASSERT_EQUAL(dt_target_key(&t, key, sizeof key), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(key, dt_isa_name(t.isa)));
    fprintf(stderr, "\n    key: %s ", key);
}

/* dt_target_detect_key: the detected target and its key, or an error. */
static void test_detect_key(void)
{
    dt_target t, again;
    char key[DT_TARGET_KEY_MAX], want[DT_TARGET_KEY_MAX];
    dt_err e;
    dt_err_clear(&e);
    CU_ASSERT_EQUAL_FATAL(dt_target_detect_key(&t, key, sizeof key, &e), 0);
    detect_or_fail(&again);
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&again, want, sizeof want), 0);
    CU_ASSERT_STRING_EQUAL(key, want);
    CU_ASSERT_EQUAL(t.cores, again.cores);
    char small[8];
    CU_ASSERT_EQUAL(dt_target_detect_key(&t, small, sizeof small, &e), DT_EINVAL);
    CU_ASSERT(strstr(e.msg, "target key") != NULL);
}

static void test_key_hand_built(void)
{
    dt_target t = hand_target("aarch64", DT_ISA_GENERIC, 4, 4, 64u << 10, 1536u << 10, 0);
    check_round_trip(&t, "aarch64-generic-4c-64K.1536K.0");
    t = hand_target("x86_64", DT_ISA_AVX512, 2, 2, 48u << 10, 1u << 20, 32u << 20);
    check_round_trip(&t, "x86_64-avx512-2c-48K.1M.32M");
    t = hand_target("x86_64", DT_ISA_AVX2, 128, 96, 32u << 10, 2u << 20, 105u << 20);
    check_round_trip(&t, "x86_64-avx2-96c-32K.2M.105M");
    t = hand_target("riscv64", DT_ISA_GENERIC, 1, 1, 1000, 0, 3ull << 30);
    check_round_trip(&t, "riscv64-generic-1c-1000.0.3G");
    t = hand_target("ppc64le", DT_ISA_GENERIC, 1, 1, 0, 0, 0);
    check_round_trip(&t, "ppc64le-generic-1c-0.0.0");
    t = hand_target("x86_64", DT_ISA_AVX512, 1, 999999999, 1, UINT64_MAX, (1ull << 30) + 1024);
    check_round_trip(&t, "x86_64-avx512-999999999c-1.18446744073709551615.1048577K");
    t = hand_target("a_very_long_arch_name_of_31_chr", DT_ISA_GENERIC, 1, 1, 1023u << 20,
                    1024ull << 30, 7);
    check_round_trip(&t, "a_very_long_arch_name_of_31_chr-generic-1c-1023M.1024G.7");
}

static void test_key_format_rejects(void)
{
    char buf[DT_TARGET_KEY_MAX];
    dt_target t = hand_target("x86_64", DT_ISA_AVX2, 2, 2, 32u << 10, 1u << 20, 0);
    CU_ASSERT_EQUAL(dt_target_key(&t, buf, 10), DT_EINVAL); /* buffer too small */
    t.cores = 0;
    CU_ASSERT_EQUAL(dt_target_key(&t, buf, sizeof buf), DT_EINVAL);
    t.cores = 2;
    t.isa = (dt_isa)7;
    CU_ASSERT_EQUAL(dt_target_key(&t, buf, sizeof buf), DT_EINVAL);
    const char *arches[] = {"", "X86_64", "x86-64", "arm.v7", "arm v7"};
    for (int i = 0; i < 5; i++) {
        t = hand_target(arches[i], DT_ISA_GENERIC, 1, 1, 0, 0, 0);
        CU_ASSERT_EQUAL(dt_target_key(&t, buf, sizeof buf), DT_EINVAL);
    }
}

static void test_key_malformed(void)
{
    static const struct {
        const char *key;
        size_t column; /* 1-based column the error must name; 0 = don't check */
    } bad[] = {
        {"", 1},
        {"x86_64", 7},
        {"x86_64-", 8},
        {"-avx2-2c-32K.1M.0", 1},
        {"X86_64-avx2-2c-32K.1M.0", 1},
        {"x86_64-avx9-2c-48K.1M.32M", 8},
        {"x86_64-AVX2-2c-32K.1M.0", 8},
        {"x86_64-avx2-0c-32K.1M.0", 13},
        {"x86_64-avx2-02c-32K.1M.0", 13},
        {"x86_64-avx2-c-32K.1M.0", 13},
        {"x86_64-avx2-2-32K.1M.0", 14},
        {"x86_64-avx2-2c32K.1M.0", 15},
        {"x86_64-avx2-1234567890c-32K.1M.0", 13},
        {"x86_64-avx2-2c-32K.1M", 22},
        {"x86_64-avx2-2c-32K-1M-0", 19},
        {"x86_64-avx2-2c-32K.1M.0.0", 24},
        {"x86_64-avx2-2c-32K.1M.0 ", 24},
        {"x86_64-avx2-2c-1024K.1M.0", 16},
        {"x86_64-avx2-2c-32K.1M.0K", 23},
        {"x86_64-avx2-2c-032K.1M.0", 16},
        {"x86_64-avx2-2c-2048.1M.0", 16},
        {"x86_64-avx2-2c-32k.1M.0", 18},
        {"x86_64-avx2-2c-32K.1.5M.0", 24},
        {"x86_64-avx2-2c-32K..0", 20},
        {"x86_64-avx2-2c--32K.1M.0", 16},
        {"x86_64-avx2-2c-32K.1M.99999999999999999999", 23},
        {"x86_64-avx2-2c-32K.1M.17179869184G", 23},
        {"x86_64-avx2-2c-32K.1M.32T", 25},
        {"a_very_long_arch_name_of_32_char-generic-1c-0.0.0", 1},
        {"x86_64--avx2-2c-32K.1M.0", 8},
        {"x86_64-avx2-2c-32K.1M.0\n", 24},
        {" x86_64-avx2-2c-32K.1M.0", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_target_key_parts p;
        dt_err e;
        dt_err_clear(&e);
        int rc = dt_target_key_parse(bad[i].key, &p, &e);
        char want[64];
        snprintf(want, sizeof want, "at column %zu:", bad[i].column);
        if (rc != DT_EINVAL || !strstr(e.msg, want))
            fprintf(stderr, "\n    key '%s': rc %d, '%s' (want %s)", bad[i].key, rc, e.msg, want);
        CU_ASSERT_EQUAL(rc, DT_EINVAL);
        CU_ASSERT_EQUAL(e.code, DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want));
    }
    dt_target_key_parts p;
    CU_ASSERT_EQUAL(dt_target_key_parse(NULL, &p, NULL), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_target_key_parse("x86_64", &p, NULL), DT_EINVAL); /* NULL err is fine */
}

/* ---- overrides ------------------------------------------------------------- */

static void test_override_lowers_isa(void)
{
    dt_err e;
    dt_target t = hand_target("x86_64", DT_ISA_AVX512, 4, 2, 48u << 10, 1u << 20, 32u << 20);
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, NULL, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "", "", &e), 0);
    CU_ASSERT_EQUAL(t.overrides, 0);
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "avx2", NULL, &e), 0);
    CU_ASSERT_EQUAL(t.isa, DT_ISA_AVX2);
    CU_ASSERT_EQUAL(t.isa_max, DT_ISA_AVX512);
    CU_ASSERT_EQUAL(t.vec_floats, 8);
    CU_ASSERT_EQUAL(t.vec_regs, 16);
    CU_ASSERT_EQUAL(t.overrides, DT_TARGET_OVR_ISA);
    check_round_trip(&t, "x86_64-avx2-2c-48K.1M.32M");
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "generic", NULL, &e), 0);
    CU_ASSERT_EQUAL(t.isa, DT_ISA_GENERIC);
    CU_ASSERT_EQUAL(t.vec_floats, 4);
    /* The bound is what the CPU supports, not the current choice. */
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "avx512", NULL, &e), 0);
    CU_ASSERT_EQUAL(t.isa, DT_ISA_AVX512);
    CU_ASSERT_EQUAL(t.vec_regs, 32);
}

static void test_override_refuses_raise(void)
{
    dt_err e;
    dt_target t = hand_target("x86_64", DT_ISA_AVX2, 2, 2, 32u << 10, 1u << 20, 0), before = t;
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "avx512", NULL, &e), DT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "avx512"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at most avx2"));
    CU_ASSERT_EQUAL(memcmp(&t, &before, sizeof t), 0);
    t = hand_target("aarch64", DT_ISA_GENERIC, 2, 2, 32u << 10, 1u << 20, 0);
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "avx2", NULL, &e), DT_EUNSUPPORTED);
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "generic", NULL, &e), 0);
}

static void test_override_nonsense(void)
{
    dt_err e;
    dt_target t = hand_target("x86_64", DT_ISA_AVX512, 4, 2, 48u << 10, 1u << 20, 0), before = t;
    const char *isas[] = {"avx9", "AVX2", " avx2", "avx2 ", "sse"};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, isas[i], NULL, &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "DTUNE_TARGET_ISA"));
    }
    const char *cores[] = {"0", "-3", "abc", "1.5", "2x", " 2", "+2", "0x2", "99999999999"};
    for (int i = 0; i < 9; i++) {
        CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, NULL, cores[i], &e), DT_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "DTUNE_TARGET_CORES"));
    }
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, NULL, "5", &e), DT_EUNSUPPORTED);
    /* Atomic: a valid ISA with invalid cores changes nothing. */
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "generic", "0", &e), DT_EINVAL);
    CU_ASSERT_EQUAL(memcmp(&t, &before, sizeof t), 0);
}

static void test_override_cores(void)
{
    dt_err e;
    dt_target t = hand_target("x86_64", DT_ISA_AVX2, 4, 2, 32u << 10, 1u << 20, 8u << 20);
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, NULL, "1", &e), 0);
    CU_ASSERT_EQUAL(t.cores, 1);
    CU_ASSERT_EQUAL(t.physical_cores, 2);
    CU_ASSERT_EQUAL(t.overrides, DT_TARGET_OVR_CORES);
    check_round_trip(&t, "x86_64-avx2-1c-32K.1M.8M");
    CU_ASSERT_EQUAL(dt_target_apply_overrides(&t, "generic", "4", &e), 0); /* SMT threads */
    CU_ASSERT_EQUAL(t.cores, 4);
    CU_ASSERT_EQUAL(t.overrides, DT_TARGET_OVR_CORES | DT_TARGET_OVR_ISA);
    check_round_trip(&t, "x86_64-generic-4c-32K.1M.8M");
}

/* ---- JSON ------------------------------------------------------------------ */

static void test_to_json(void)
{
    dt_target t;
    char key[DT_TARGET_KEY_MAX];
    detect_or_fail(&t);
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&t, key, sizeof key), 0);
    json_t *j = dt_target_to_json(&t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "key")), key);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "isa")), dt_isa_name(t.isa));
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "arch")), t.arch);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "cores")), t.cores);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "vector_floats")), t.vec_floats);
    json_t *l1d = json_object_get(json_object_get(j, "caches"), "l1d");
    CU_ASSERT_EQUAL((uint64_t)json_integer_value(json_object_get(l1d, "size")), t.l1d.size);
    json_t *features = json_object_get(j, "features");
    CU_ASSERT(json_is_array(features));
    int n = 0;
    for (int f = 0; f < DT_FEAT_COUNT; f++)
        n += dt_target_has(&t, (dt_feature)f);
    CU_ASSERT_EQUAL((int)json_array_size(features), n);
    json_decref(j);

    /* A target whose key cannot be formed still serializes, with key null. */
    t = hand_target("Bad-Arch", DT_ISA_GENERIC, 1, 1, 0, 0, 0);
    j = dt_target_to_json(&t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT(json_is_null(json_object_get(j, "key")));
    json_decref(j);
}

/* -mcpu names: AMD by family and model, Intel by features; this machine's
 * name in the JSON */
static void test_llvm_cpu(void)
{
    dt_target t;
    memset(&t, 0, sizeof t);
    strcpy(t.arch, "x86_64");
    strcpy(t.vendor, "AuthenticAMD");
    uint32_t avx2 = DT_FEAT_BIT(DT_FEAT_AVX2) | DT_FEAT_BIT(DT_FEAT_FMA);
    uint32_t avx512 = avx2 | DT_FEAT_BIT(DT_FEAT_AVX512F) | DT_FEAT_BIT(DT_FEAT_AVX512_VNNI);
    const struct {
        int family, model;
        uint32_t f;
        const char *want;
    } amd[] = {{0x1a, 0x02, avx512, "znver5"}, {0x19, 0x11, avx512, "znver4"},
               {0x19, 0x61, avx512, "znver4"}, {0x19, 0x21, avx2, "znver3"},
               {0x19, 0x01, avx2, "znver3"},   {0x17, 0x31, avx2, "znver2"},
               {0x17, 0x01, avx2, "znver1"},   {0x15, 0x02, avx2, "znver1"}};
    for (size_t i = 0; i < sizeof amd / sizeof amd[0]; i++) {
        t.cpu_family = amd[i].family;
        t.cpu_model = amd[i].model;
        t.cpu_features = amd[i].f;
        CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), amd[i].want);
    }
    strcpy(t.vendor, "GenuineIntel");
    t.cpu_family = 6;
    t.cpu_model = 0x8f;
    t.cpu_features = avx512 | DT_FEAT_BIT(DT_FEAT_AVX512_BF16) | DT_FEAT_BIT(DT_FEAT_AMX_TILE);
    CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), "sapphirerapids");
    t.cpu_features = avx512;
    CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), "cascadelake");
    t.cpu_features = avx512 & ~DT_FEAT_BIT(DT_FEAT_AVX512_VNNI);
    CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), "skylake-avx512");
    t.cpu_features = avx2;
    CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), "haswell");
    t.cpu_features = 0;
    CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), "x86-64");
    strcpy(t.arch, "aarch64");
    CU_ASSERT_STRING_EQUAL(dt_target_llvm_cpu(&t), "generic");

    detect_or_fail(&t);
    json_t *j = dt_target_to_json(&t);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "llvm_cpu")),
                           dt_target_llvm_cpu(&t));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "cpu_family")), t.cpu_family);
    if (!strcmp(t.arch, "x86_64"))
        CU_ASSERT(t.cpu_family > 0);
    json_decref(j);
}

/* ---- dtune info, end to end -------------------------------------------------- */

static void test_cli_info_json(void)
{
    dt_target t;
    char key[DT_TARGET_KEY_MAX];
    detect_or_fail(&t);
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&t, key, sizeof key), 0);
    dt_test_proc p;
    dt_test_run_dtune(&p, "info --json");
    CU_ASSERT_EQUAL(p.exit_code, 0);
    json_error_t jerr;
    json_t *j = json_loads(p.out, 0, &jerr);
    if (!j)
        fprintf(stderr, "\n    bad JSON (%s): %s\n%s", jerr.text, p.out, p.err);
    CU_ASSERT_PTR_NOT_NULL(j);
    if (j) {
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "key")), key);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "isa")), dt_isa_name(t.isa));
        json_decref(j);
    }
    dt_test_proc_free(&p);
}

static void test_cli_info_text(void)
{
    dt_target t;
    char key[DT_TARGET_KEY_MAX];
    detect_or_fail(&t);
    CU_ASSERT_EQUAL_FATAL(dt_target_key(&t, key, sizeof key), 0);
    dt_test_proc p;
    dt_test_run_dtune(&p, "info");
    CU_ASSERT_EQUAL(p.exit_code, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, key));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, t.model));
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "L1d"));
    dt_test_proc_free(&p);

    dt_test_run_dtune(&p, "info --help");
    CU_ASSERT_EQUAL(p.exit_code, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "Usage: dtune info"));
    dt_test_proc_free(&p);
}

static void test_cli_info_usage_errors(void)
{
    dt_test_proc p;
    dt_test_run_dtune(&p, "info --bogus");
    CU_ASSERT_EQUAL(p.exit_code, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--bogus"));
    CU_ASSERT_STRING_EQUAL(p.out, "");
    dt_test_proc_free(&p);
    dt_test_run_dtune(&p, "info extra");
    CU_ASSERT_EQUAL(p.exit_code, 1);
    dt_test_proc_free(&p);
}

/* The environment overrides reach the binary; a bad one is exit code 2. */
static void test_cli_info_env(void)
{
    dt_test_proc p;
    setenv("DTUNE_TARGET_ISA", "generic", 1);
    setenv("DTUNE_TARGET_CORES", "1", 1);
    dt_test_run_dtune(&p, "info --json");
    CU_ASSERT_EQUAL(p.exit_code, 0);
    json_t *j = json_loads(p.out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL(j);
    if (j) {
        const char *key = json_string_value(json_object_get(j, "key"));
        CU_ASSERT(key && strstr(key, "-generic-1c-"));
        CU_ASSERT(json_is_true(json_object_get(json_object_get(j, "overrides"), "isa")));
        json_decref(j);
    }
    dt_test_proc_free(&p);

    setenv("DTUNE_TARGET_ISA", "avx9", 1);
    dt_test_run_dtune(&p, "info");
    CU_ASSERT_EQUAL(p.exit_code, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "DTUNE_TARGET_ISA"));
    dt_test_proc_free(&p);
    unsetenv("DTUNE_TARGET_ISA");

    setenv("DTUNE_TARGET_CORES", "0", 1);
    dt_test_run_dtune(&p, "info --json");
    CU_ASSERT_EQUAL(p.exit_code, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "DTUNE_TARGET_CORES"));
    dt_test_proc_free(&p);
    unsetenv("DTUNE_TARGET_CORES");
}

int main(void)
{
    /* Detection tests expect the machine's own target. */
    unsetenv("DTUNE_TARGET_ISA");
    unsetenv("DTUNE_TARGET_CORES");

    CU_TestInfo isa_tests[] = {
        {"isa names and widths", test_isa_names},
        {"best isa from features", test_isa_best},
        {"feature names", test_feature_names},
        {"xcr0 masks features", test_usable_features},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo detect_tests[] = {
        {"detection is consistent", test_detect_consistent},
        {"detection without sysfs", test_detect_without_sysfs},
        {"fake sysfs tree", test_detect_fake_sysfs},
        {"cores split by die", test_detect_dies},
        {"probe parsers", test_probe_parsers},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo key_tests[] = {
        {"size format", test_size_format},
        {"detected key round-trips", test_key_detected_round_trip},
        {"detect and key in one call", test_detect_key},
        {"hand-built keys round-trip", test_key_hand_built},
        {"format rejects bad fields", test_key_format_rejects},
        {"malformed keys rejected", test_key_malformed},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo override_tests[] = {
        {"isa override lowers", test_override_lowers_isa},
        {"isa override never raises", test_override_refuses_raise},
        {"nonsense overrides rejected", test_override_nonsense},
        {"cores override", test_override_cores},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo json_tests[] = {
        {"to_json", test_to_json},
        {"llvm_cpu: -mcpu names", test_llvm_cpu},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo cli_tests[] = {
        {"info --json matches detection", test_cli_info_json},
        {"info text and --help", test_cli_info_text},
        {"info usage errors", test_cli_info_usage_errors},
        {"info honours overrides", test_cli_info_env},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"target.isa", NULL, NULL, NULL, NULL, isa_tests},
        {"target.detect", NULL, NULL, NULL, NULL, detect_tests},
        {"target.key", NULL, NULL, NULL, NULL, key_tests},
        {"target.overrides", NULL, NULL, NULL, NULL, override_tests},
        {"target.json", NULL, NULL, NULL, NULL, json_tests},
        {"target.cli", NULL, NULL, NULL, NULL, cli_tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
