/* `dtune info [--json]`: the detected target and its key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/target.h"

static void dt_info_usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune info [--json]\n"
            "\n"
            "Show the target detected on this machine: CPU model, architecture, the\n"
            "vector ISA chosen for micro-kernels and the CPU features behind it,\n"
            "physical and logical cores, cache sizes and sharing, and the target key\n"
            "under which schedules for this machine are stored (docs/targets.md).\n"
            "\n"
            "Options:\n"
            "  --json       print one JSON object instead of text\n"
            "  -h, --help   show this help\n"
            "\n"
            "Environment:\n"
            "  DTUNE_TARGET_ISA=generic|avx2|avx512  use a lower ISA than the CPU's best\n"
            "  DTUNE_TARGET_CORES=N                  plan threads for N cores (1..logical CPUs)\n");
}

/* "48 KiB", "1536 KiB", "32 MiB", "none" for 0. */
static const char *dt_human_size(uint64_t bytes, char *buf, size_t n)
{
    char key[32];
    if (bytes == 0)
        return "none";
    dt_target_size_format(bytes, key, sizeof key);
    size_t len = strlen(key);
    char unit = key[len - 1];
    if (unit == 'K' || unit == 'M' || unit == 'G')
        snprintf(buf, n, "%.*s %ciB", (int)(len - 1), key, unit);
    else
        snprintf(buf, n, "%s bytes", key);
    return buf;
}

/* " [cpuid]" etc. when a value did not come from sysfs, the normal source. */
static const char *dt_src_note(dt_target_src src, char *buf, size_t n)
{
    if (src == DT_SRC_SYSFS)
        return "";
    snprintf(buf, n, " [%s]", dt_target_src_name(src));
    return buf;
}

static void dt_print_features(const char *label, uint32_t mask)
{
    printf("%-12s", label);
    for (int f = 0; f < DT_FEAT_COUNT; f++)
        if (mask & DT_FEAT_BIT(f))
            printf(" %s", dt_feature_name((dt_feature)f));
    printf(mask ? "\n" : " none\n");
}

static void dt_print_cache(const char *label, const dt_cache_level *c)
{
    char size[48], note[32];
    printf("%-12s %s", label, dt_human_size(c->size, size, sizeof size));
    if (c->size)
        printf(", shared by %d CPU%s", c->shared_cpus, c->shared_cpus == 1 ? "" : "s");
    printf("%s\n", dt_src_note(c->src, note, sizeof note));
}

static void dt_print_target(const dt_target *t, const char *key)
{
    char note[32];
    printf("%-12s %s (%s)\n", "model:", t->model, t->vendor);
    printf("%-12s %s\n", "arch:", t->arch);
    printf("%-12s %s: %d floats per vector, %d vector registers\n", "isa:", dt_isa_name(t->isa),
           t->vec_floats, t->vec_regs);
    if (t->overrides & DT_TARGET_OVR_ISA)
        printf("%-12s set by DTUNE_TARGET_ISA; the CPU supports %s\n", "",
               dt_isa_name(t->isa_max));
    dt_print_features("features:", t->features);
    if (t->cpu_features & ~t->features)
        dt_print_features("os-disabled:", t->cpu_features & ~t->features);
    printf("%-12s %d physical, %d logical%s", "cores:", t->physical_cores, t->logical_cpus,
           dt_src_note(t->cores_src, note, sizeof note));
    if (t->overrides & DT_TARGET_OVR_CORES)
        printf("; planning for %d (DTUNE_TARGET_CORES)", t->cores);
    printf("\n");
    dt_print_cache("L1d cache:", &t->l1d);
    dt_print_cache("L2 cache:", &t->l2);
    dt_print_cache("L3 cache:", &t->l3);
    printf("%-12s %d bytes%s\n", "line:", t->line_size,
           dt_src_note(t->line_src, note, sizeof note));
    printf("%-12s %s\n", "key:", key);
}

static int dt_print_json(const dt_target *t)
{
    if (dt_cli_print_json(dt_target_to_json(t), JSON_INDENT(2))) {
        dt_err e;
        dt_errf(&e, DT_ENOMEM, "out of memory while writing JSON");
        return dt_cli_fail(&e);
    }
    return DT_EXIT_OK;
}

int dt_cmd_info(int argc, char **argv)
{
    int json = 0;
    if (dt_cli_wants_help(argc, argv)) {
        dt_info_usage(stdout);
        return DT_EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--") && i + 1 == argc)
            break;
        else if (!strcmp(argv[i], "--"))
            return dt_cli_usage_error("info", "unexpected argument '%s'", argv[i + 1]);
        else if (argv[i][0] == '-')
            return dt_cli_usage_error("info", "unknown option '%s'", argv[i]);
        else
            return dt_cli_usage_error("info", "unexpected argument '%s'", argv[i]);
    }

    dt_target t;
    dt_err e;
    dt_err_clear(&e);
    if (dt_target_detect(&t, &e))
        return dt_cli_fail(&e);
    if (json)
        return dt_print_json(&t);
    char key[DT_TARGET_KEY_MAX];
    if (dt_target_key(&t, key, sizeof key)) {
        dt_errf(&e, DT_EUNSUPPORTED, "cannot form a target key for arch '%s'", t.arch);
        return dt_cli_fail(&e);
    }
    dt_print_target(&t, key);
    return DT_EXIT_OK;
}
