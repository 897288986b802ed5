/* `dtune info [--json] [--peaks]`: the detected target and its key, how each
 * dtype runs here, and (--peaks) the measured ceilings per dtype and the
 * read bandwidth (peers/peer.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/amx.h"
#include "common/target.h"
#include "peers/peer.h"
#include "backends/backend.h"
#include "dtypes/dtype.h"

/* Seconds each probe runs (best of its repeats); --peaks takes about
 * (5 kinds + bandwidth) × thread counts × this, plus the buffer's first touch. */
#define DT_INFO_PROBE_S 0.25
#define DT_INFO_MAX_COUNTS 32

static void dt_info_usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune info [--json] [--peaks]\n"
            "\n"
            "Show the target detected on this machine: CPU model, architecture, the\n"
            "vector ISA chosen for micro-kernels and the CPU features behind it,\n"
            "whether AMX is present and this process may use it (where it is, the tile\n"
            "back-ends bf16/amx and int8/amx are searched too), how each dtype runs\n"
            "(f32, bf16, int8, w8a32: its native back-end, or portable), physical\n"
            "and logical cores, cache sizes and sharing, and the target key under\n"
            "which schedules for this machine are stored (docs/targets.md).\n"
            "\n"
            "Options:\n"
            "  --json       print one JSON object instead of text\n"
            "  --peaks      also measure (a few seconds) the compute peak of each dtype's\n"
            "               instruction (f32 FMA, bf16 vdpbf16ps, int8 vpdpbusd; where AMX\n"
            "               is usable, amx_bf16 tdpbf16ps and amx_int8 tdpbusd) and the\n"
            "               memory read bandwidth, at 1, 2, 4, ... up to the cores\n"
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

/* "f32 avx512, bf16 avx512_bf16, int8 avx512_vnni, w8a32 avx512" */
static void dt_print_dtypes(const dt_target *t)
{
    printf("%-12s", "dtypes:");
    for (int d = 0; d < DT_DTYPE_COUNT; d++) {
        const char *how;
        dt_dtype_native((dt_dtype)d, t, &how);
        printf("%s %s %s", d ? "," : "", dt_dtype_name((dt_dtype)d), how);
    }
    printf("\n");
}

/* Whether this target runs some row of back-end g, and the reason of its
 * first row when it runs none. */
static int dt_reg_runs(const dt_backend_reg *g, const dt_target *t, const char **why)
{
    *why = NULL;
    for (int i = 0; i < g->nrows; i++) {
        const char *w = NULL;
        if (dt_backend_usable(&g->rows[i], t, &w))
            return 1;
        if (!*why)
            *why = w;
    }
    return 0;
}

/* "generic, avx2, avx512, avx512_bf16, ..., amx (no amx_bf16)": the
 * registered back-ends (backends/registry.c), each with why this target
 * runs none of its rows. */
static void dt_print_backends(const dt_target *t)
{
    printf("%-12s", "back-ends:");
    for (int r = 0; r < dt_backend_reg_count(); r++) {
        const dt_backend_reg *g = dt_backend_reg_at(r);
        const char *why;
        int runs = dt_reg_runs(g, t, &why);
        printf("%s %s", r ? "," : "", g->name);
        if (!runs)
            printf(" (%s)", why ? why : "not here");
    }
    printf("\n");
}

/* AMX is named even when absent: where it is usable, the tuner, `dtune
 * bench --sample` and `dtune measure` also search the tile back-ends
 * bf16/amx and int8/amx (backends/backend.h), and a reader comparing with a
 * library that uses AMX should see at once whether dtune could.  "usable"
 * means this process was granted tile data (common/amx.h). */
static void dt_print_amx(const dt_target *t)
{
    const char *why = NULL;
    int usable = dt_amx_usable(t, &why);
    printf("%-12s", "amx:");
    if (usable)
        printf(" present and usable (tile data permission granted); the bf16/amx and "
               "int8/amx back-ends are searched\n");
    else if (dt_amx_present(t))
        printf(" present but unusable: %s\n", why);
    else
        printf(" not present\n");
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
    dt_print_amx(t);
    dt_print_dtypes(t);
    dt_print_backends(t);
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

/* ---- --peaks ---------------------------------------------------------------- */

/* What --peaks measured: each kind's peak and the read bandwidth at each
 * thread count (NAN where a kind has no instruction here). */
typedef struct dt_info_peaks {
    int ncounts;
    int threads[DT_INFO_MAX_COUNTS];
    double peak[DT_PEAK_COUNT][DT_INFO_MAX_COUNTS];
    double read_gbps[DT_INFO_MAX_COUNTS];
} dt_info_peaks;

/* 1, 2, 4, ... and the core count itself (every count up to the cores would
 * take minutes on a big machine). */
static void dt_info_measure(const dt_target *t, dt_info_peaks *m)
{
    int cores = t->cores > 0 ? t->cores : 1;
    m->ncounts = 0;
    for (int n = 1; n < cores && m->ncounts < DT_INFO_MAX_COUNTS - 1; n *= 2)
        m->threads[m->ncounts++] = n;
    m->threads[m->ncounts++] = cores;
    for (int i = 0; i < m->ncounts; i++) {
        for (int k = 0; k < DT_PEAK_COUNT; k++)
            m->peak[k][i] = dt_peak_gops((dt_peak_kind)k, m->threads[i], DT_INFO_PROBE_S);
        m->read_gbps[i] = dt_stream_read_gbps(m->threads[i], DT_INFO_PROBE_S);
    }
}

static void dt_print_values(const double *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (isfinite(v[i]))
            printf(" %8.1f", v[i]);
        else
            printf(" %8s", "n/a");
    }
}

/*  peaks:       threads        1        2
 *    f32        GFLOP/s    116.3    232.9   avx512 vfmadd231ps zmm
 *  bandwidth:   GB/s        32.6     36.1   read, 256 MiB buffer */
static void dt_print_peaks(const dt_info_peaks *m)
{
    printf("%-12s %-8s", "peaks:", "threads");
    for (int i = 0; i < m->ncounts; i++)
        printf(" %8d", m->threads[i]);
    printf("\n");
    for (int k = 0; k < DT_PEAK_COUNT; k++) {
        const char *ins = dt_peak_instruction((dt_peak_kind)k);
        printf("  %-10s %-8s", dt_peak_kind_name((dt_peak_kind)k),
               dt_peak_unit((dt_peak_kind)k));
        dt_print_values(m->peak[k], m->ncounts);
        if (ins)
            printf("   %s\n", ins);
        else if (k == DT_PEAK_AMX_BF16 || k == DT_PEAK_AMX_INT8)
            printf("   no AMX: %s\n", dt_peak_why_not((dt_peak_kind)k));
        else
            printf("   %s\n", dt_peak_why_not((dt_peak_kind)k));
    }
    printf("%-12s %-8s", "bandwidth:", "GB/s");
    dt_print_values(m->read_gbps, m->ncounts);
    printf("   read, %llu MiB buffer\n", (unsigned long long)(dt_stream_buffer_bytes() >> 20));
}

/* ---- JSON ------------------------------------------------------------------- */

/* A number to one decimal, or null when not measured. */
static json_t *dt_json_measured(double v)
{
    return isfinite(v) ? json_real(round(v * 10.0) / 10.0) : json_null();
}

static json_t *dt_json_values(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, dt_json_measured(v[i]));
    return a;
}

static json_t *dt_json_threads(const dt_info_peaks *m)
{
    json_t *a = json_array();
    for (int i = 0; a && i < m->ncounts; i++)
        json_array_append_new(a, json_integer(m->threads[i]));
    return a;
}

/* {"f32": {"native": true, "backend": "avx512"}, ...} */
static json_t *dt_json_dtypes(const dt_target *t)
{
    json_t *o = json_object();
    for (int d = 0; o && d < DT_DTYPE_COUNT; d++) {
        const char *how;
        int native = dt_dtype_native((dt_dtype)d, t, &how);
        json_object_set_new(o, dt_dtype_name((dt_dtype)d),
                            json_pack("{s:b, s:s}", "native", native, "backend", how));
    }
    return o;
}

/* {"generic": {"runs": true, "dtypes": ["f32", ...], "reason": null}, ...} */
static json_t *dt_json_backends(const dt_target *t)
{
    json_t *o = json_object();
    for (int r = 0; o && r < dt_backend_reg_count(); r++) {
        const dt_backend_reg *g = dt_backend_reg_at(r);
        const char *why;
        int runs = dt_reg_runs(g, t, &why);
        json_t *dtypes = json_array();
        for (int i = 0; dtypes && i < g->nrows; i++)
            json_array_append_new(dtypes, json_string(dt_dtype_name(g->rows[i].dtype)));
        json_object_set_new(o, g->name, json_pack("{s:b, s:o, s:s?}", "runs", runs, "dtypes",
                                                  dtypes, "reason", runs ? NULL : why));
    }
    return o;
}

/* "amx": {"present": true, "usable": false, "reason": "..."}: reason null when
 * usable. */
static json_t *dt_json_amx(const dt_target *t)
{
    const char *why = NULL;
    int usable = dt_amx_usable(t, &why);
    return json_pack("{s:b, s:b, s:o}", "present", dt_amx_present(t), "usable", usable,
                     "reason", why ? json_string(why) : json_null());
}

/* "peaks": {"threads": [1, 2], "f32": {"unit", "instruction", "values"}, ...};
 * a kind without an instruction here (every AMX kind where AMX is unusable)
 * has "instruction": null and null values. */
static json_t *dt_json_peaks(const dt_info_peaks *m)
{
    json_t *o = json_pack("{s:o, s:f}", "threads", dt_json_threads(m), "seconds_per_probe",
                          DT_INFO_PROBE_S);
    for (int k = 0; o && k < DT_PEAK_COUNT; k++) {
        const char *ins = dt_peak_instruction((dt_peak_kind)k);
        json_object_set_new(o, dt_peak_kind_name((dt_peak_kind)k),
                            json_pack("{s:s, s:o, s:o}", "unit", dt_peak_unit((dt_peak_kind)k),
                                      "instruction", ins ? json_string(ins) : json_null(),
                                      "values", dt_json_values(m->peak[k], m->ncounts)));
    }
    return o;
}

/* "bandwidth": {"kind": "read", "unit": "GB/s", "buffer_bytes", "threads", "values"} */
static json_t *dt_json_bandwidth(const dt_info_peaks *m)
{
    return json_pack("{s:s, s:s, s:I, s:o, s:o}", "kind", "read", "unit", "GB/s",
                     "buffer_bytes", (json_int_t)dt_stream_buffer_bytes(), "threads",
                     dt_json_threads(m), "values", dt_json_values(m->read_gbps, m->ncounts));
}

static int dt_print_json(const dt_target *t, const dt_info_peaks *m)
{
    json_t *root = dt_target_to_json(t);
    int ok = root && !json_object_set_new(root, "dtypes", dt_json_dtypes(t)) &&
             !json_object_set_new(root, "backends", dt_json_backends(t)) &&
             !json_object_set_new(root, "amx", dt_json_amx(t));
    if (ok && m)
        ok = !json_object_set_new(root, "peaks", dt_json_peaks(m)) &&
             !json_object_set_new(root, "bandwidth", dt_json_bandwidth(m));
    if (!ok) {
        json_decref(root);
        root = NULL; /* dt_cli_print_json reports it */
    }
    if (dt_cli_print_json(root, JSON_INDENT(2))) {
        dt_err e;
        dt_errf(&e, DT_ENOMEM, "out of memory while writing JSON");
        return dt_cli_fail(&e);
    }
    return DT_EXIT_OK;
}

int dt_cmd_info(int argc, char **argv)
{
    int json = 0, peaks = 0;
    if (dt_cli_wants_help(argc, argv)) {
        dt_info_usage(stdout);
        return DT_EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--peaks"))
            peaks = 1;
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
    dt_info_peaks m;
    if (peaks)
        dt_info_measure(&t, &m);
    if (json)
        return dt_print_json(&t, peaks ? &m : NULL);
    char key[DT_TARGET_KEY_MAX];
    if (dt_target_key(&t, key, sizeof key)) {
        dt_errf(&e, DT_EUNSUPPORTED, "cannot form a target key for arch '%s'", t.arch);
        return dt_cli_fail(&e);
    }
    dt_print_target(&t, key);
    if (peaks)
        dt_print_peaks(&m);
    return DT_EXIT_OK;
}
