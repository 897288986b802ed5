/* dtune export WORKLOAD -o NAME.c: the tuned kernels of a workload, their
 * weight packing and a shape dispatcher as one self-contained C file plus
 * its header (export/export.h, docs/export.md). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "db/db.h"
#include "export/export.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune export WORKLOAD -o FILE.c [--name NAME] [--db PATH] [--target KEY]\n"
            "                    [--threads T] [--json]\n"
            "\n"
            "Writes FILE.c and FILE.h: every micro-kernel the workload's tuned schedule\n"
            "selects, the weight packing, and one entry point NAME (FILE unless --name\n"
            "says otherwise) that dispatches any shape with nested ifs over the tuned\n"
            "shape ranges (a shape outside them goes to the nearest range:\n"
            "extrapolation). FILE.c compiles with plain\n"
            "`cc -O3 -march=native -fopenmp -c FILE.c` and needs no dtune header or\n"
            "library. A dense workload gets:\n"
            "  size_t NAME_packed_size(void);\n"
            "  void   NAME_pack(const float *W, float *packed);\n"
            "  void   NAME(int64_t M, const float *X, const float *packed, float *Y\n"
            "              [, const float *bias]);\n"
            "a batch_matmul workload: void NAME(int64_t seq, const float *A, const float *B,\n"
            "float *C); the leading arguments are the workload's variables. Other dtypes\n"
            "take their element types (a table per dtype: docs/export.md, \"ABI\"): bf16\n"
            "uint16_t tensors in, float out, NAME_pack(const uint16_t *W, void *packed);\n"
            "int8\n"
            "  void NAME_pack(const int8_t *W, const float *scale_b, void *packed);\n"
            "  void NAME(int64_t M, const uint8_t *X, float scale_a, int32_t zp_a,\n"
            "            const void *packed, float *Y[, const float *bias]);\n"
            "w8a32 float X and int8's NAME_pack. W is already quantized, with one finite\n"
            "non-zero scale per output channel.\n"            "\n"
            "Options:\n"
            "  -o, --output FILE.c  the C file; the header FILE.h is written beside it\n"
            "  --name NAME          the functions' name (default: FILE): a C identifier that is\n"
            "                       no C library, POSIX or OpenMP name (exp, free, time, ...)\n"
            "                       and does not begin with _, dt_ or dtune_\n"
            "  --db PATH            database (default $DTUNE_DB, else ./dtune.db)\n"
            "  --target KEY         the schedule of this target (default: this machine's)\n"
            "  --threads T          the schedule tuned for T threads (default: the highest)\n"
            "  --json               print what was written (paths, kernels, ranges) as JSON\n"
            "  -h, --help           show this help\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad input (a NAME that is not a C\n"
            "identifier or is a library's name; no such database, workload, target or schedule), 3 runtime\n"
            "failure (a file cannot be written; nothing partial is left behind).\n");
}

typedef struct {
    const char *out, *db, *target, *name;
    int threads, json;
} export_args;

static int parse_args(int argc, char **argv, export_args *a, const char **key)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"db", required_argument, NULL, 'd'},
        {"target", required_argument, NULL, 'T'}, {"threads", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
        {"name", required_argument, NULL, 'n'},   {NULL, 0, NULL, 0}};
    *a = (export_args){0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'd': a->db = optarg; break;
        case 'T': a->target = optarg; break;
        case 'n': a->name = optarg; break;
        case 'j': a->json = 1; break;
        case 't': rc = dt_cli_int_opt("export", "--threads", optarg, 1, 1024, &a->threads); break;
        case 'h': usage(stdout); return -1;
        default: return dt_cli_usage_error("export", "unknown option or missing value '%s'",
                                           argv[optind - 1]);
        }
        if (rc)
            return rc;
    }
    if (argc - optind != 1)
        return dt_cli_usage_error("export", "expected one WORKLOAD argument");
    if (!a->out)
        return dt_cli_usage_error("export", "-o NAME.c is required");
    *key = argv[optind];
    return 0;
}

int dt_cmd_export(int argc, char **argv)
{
    export_args a;
    const char *key = NULL;
    int rc = parse_args(argc, argv, &a, &key);
    if (rc)
        return rc < 0 ? DT_EXIT_OK : rc;
    dt_err e;
    dt_err_clear(&e);
    dt_db *db = NULL;
    if ((rc = dt_cli_open_db(a.db, DT_DB_READONLY, &db)))
        return rc;
    dt_export_opts o = {.workload_key = key, .target_key = a.target, .threads = a.threads,
                        .name = a.name};
    json_t *info = NULL;
    rc = dt_export_write_info(db, &o, a.out, &info, &e);
    dt_db_close(db);
    if (rc)
        return dt_cli_fail(&e);
    if (a.json)
        return dt_cli_print_json(info, JSON_INDENT(1) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME
                                                                              : DT_EXIT_OK;
    json_t *ks = json_object_get(info, "kernels"), *rs = json_object_get(info, "ranges");
    printf("wrote %s and %s: %s for %s, %lld thread%s, %zu kernel%s over %zu range%s\n",
           json_string_value(json_object_get(info, "c")),
           json_string_value(json_object_get(info, "h")),
           json_string_value(json_object_get(info, "workload")),
           json_string_value(json_object_get(info, "target")),
           (long long)json_integer_value(json_object_get(info, "threads")),
           json_integer_value(json_object_get(info, "threads")) == 1 ? "" : "s",
           json_array_size(ks), json_array_size(ks) == 1 ? "" : "s", json_array_size(rs),
           json_array_size(rs) == 1 ? "" : "s");
    size_t i;
    json_t *r;
    json_array_foreach(rs, i, r)
        printf("  %s..%s -> kernel %lld\n", json_string_value(json_object_get(r, "shape_lo")),
               json_string_value(json_object_get(r, "shape_hi")),
               (long long)json_integer_value(json_object_get(r, "kernel_id")));
    json_decref(info);
    return DT_EXIT_OK;
}
