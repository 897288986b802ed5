/* dtune import MODEL.onnx: an ONNX model as a model spec to read and edit. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_model.h"
#include "shape/model.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: dtune import MODEL.onnx --var NAME=DOMAIN... [-o SPEC.json] [--name NAME]\n"
            "                    [--math bf16] [--branch IF=then|else|both]... [--json]\n"
            "\n"
            "Reads an ONNX model's graph, shapes and dtypes (never its weights), propagates\n"
            "its dynamic dims symbolically and writes the model spec dtune tunes\n"
            "(docs/model-spec.md): every MatMul/Gemm against a constant weight as a dense\n"
            "(bias Add and GELU/ReLU fused as its epilogue, quantized patterns as int8),\n"
            "every MatMul of two activations as a batch_matmul (NN or NT), identical ones\n"
            "merged with counts. What is not tuned (softmax, layer norms, convolutions,\n"
            "...) is listed with its node count. docs/onnx-import.md has the details.\n"
            "\n"
            "Options:\n"
            "  --var NAME=DOMAIN  the values of a dynamic dim (a dim_param of the model's\n"
            "                     inputs): seq=1..128, batch=1, s={1,8,64}, len=8..512:8;\n"
            "                     every dim_param needs one (the error lists them)\n"
            "  -o, --output FILE  write the spec to FILE (default: standard output)\n"
            "  --name NAME        the spec's model name (default: the file's base name)\n"
            "  --math bf16        bf16 arithmetic for every f32 and w8a32 GEMM that has\n"
            "                     it: those workloads get dtype f32_bf16 / w8a32_bf16,\n"
            "                     keys show math=bf16 (f32 in and out, bf16 products;\n"
            "                     docs/workload-keys.md)\n"
            DT_CLI_BRANCH_HELP
            "  --json             report as JSON on standard output (with -o)\n"
            "  -h, --help         show this help\n"
            "\n"
            "The report (workloads, what is not tuned) goes to standard error, or with\n"
            "--json and -o to standard output as {\"spec\": FILE, \"workloads\": [...],\n"
            "\"onnx\": {\"nodes\", \"tuned_nodes\", \"untuned\": [...]}}.\n"
            "\n"
            "Exit codes: 0 ok, 1 usage error, 2 bad ONNX file or --var, 3 runtime failure\n"
            "(e.g. the spec cannot be written).\n");
}

static int write_file(const char *path, const char *text, dt_err *e)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return dt_errf(e, DT_EIO, "%s: cannot write: %s", path, strerror(errno));
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fputc('\n', f) == EOF;
    int saved = errno;
    bad |= fclose(f) != 0;
    if (bad) {
        /* no half-written spec left behind (a full disk); never unlink what
         * is not a regular file (-o /dev/full as root) */
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            unlink(path);
        return dt_errf(e, DT_EIO, "%s: cannot write: %s", path, strerror(saved ? saved : errno));
    }
    return 0;
}

static void report_text(const dt_model *m, const dt_ox_import *imp, const char *path)
{
    fprintf(stderr, "%s: model %s, variables", dt_cli_safe(path), dt_cli_safe(m->name));
    for (int i = 0; i < m->nvars; i++) {
        char d[256];
        dt_domain_print(&m->vars[i].dom, d, sizeof d);
        fprintf(stderr, " %s=%s", dt_cli_safe(m->vars[i].name), d);
    }
    fprintf(stderr, "; %d distinct workload%s:\n", m->nworkloads, m->nworkloads == 1 ? "" : "s");
    for (int i = 0; i < m->nworkloads; i++) {
        char cnt[32];
        fprintf(stderr, "  %-72s x%s\n", dt_cli_safe(m->workloads[i].key),
                dt_cli_count_text(m->workloads[i].count, cnt));
    }
    dt_cli_print_untuned(stderr, imp, path);
}

static int report_json(const dt_model *m, const dt_ox_import *imp, const char *out)
{
    json_t *wl = json_array();
    for (int i = 0; i < m->nworkloads; i++) {
        json_t *ops = json_array();
        for (int k = 0; k < m->workloads[i].nops; k++)
            json_array_append_new(ops, json_string(m->workloads[i].ops[k]));
        json_array_append_new(wl, json_pack("{s:s, s:o, s:o}", "key", m->workloads[i].key,
                                            "count", dt_cli_count_json(m->workloads[i].count),
                                            "ops", ops));
    }
    json_t *root = json_pack("{s:s, s:s, s:o, s:o}", "model", m->name, "spec", out,
                             "workloads", wl, "onnx", dt_cli_untuned_json(imp));
    return dt_cli_print_json(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ? DT_EXIT_RUNTIME
                                                                          : DT_EXIT_OK;
}

int dt_cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {{"var", required_argument, NULL, 'v'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"math", required_argument, NULL, 'M'},
                                         {"branch", required_argument, NULL, 'B'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    dt_cli_vars vars = {0};
    const char *out = NULL, *name = NULL, *math = NULL;
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'v':
            if (dt_cli_vars_add(&vars, "import", optarg))
                return DT_EXIT_USAGE;
            break;
        case 'o': out = optarg; break;
        case 'n':
            if (!dt_is_name(optarg))
                return dt_cli_usage_error("import", "--name takes a name like bert_base "
                                                    "([A-Za-z_][A-Za-z0-9_]*), not '%s'",
                                          optarg);
            name = optarg;
            break;
        case 'j': json = 1; break;
        case 'M':
            if (!dt_cli_math_known(optarg))
                return dt_cli_usage_error("import", "--math takes %s, not '%s'",
                                          dt_dtype_math_names(), optarg);
            math = optarg;
            break;
        case 'B':
            if (dt_cli_branch_add(&vars, "import", optarg))
                return DT_EXIT_USAGE;
            break;
        case 'h': usage(stdout); return DT_EXIT_OK;
        default:
            return dt_cli_usage_error("import", "unknown option or missing value: '%s'",
                                      argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return dt_cli_usage_error("import", "expected one MODEL.onnx argument");
    if (json && !out)
        return dt_cli_usage_error("import", "--json reports on standard output: give the spec "
                                            "a file with -o");
    const char *path = argv[optind];
    dt_err e;
    if (!dt_cli_is_onnx(path)) {
        dt_errf(&e, DT_EINVAL, "%s: not an .onnx file (a model spec needs no import)", path);
        return dt_cli_fail(&e);
    }
    dt_ox_import *imp = NULL;
    int rc = dt_ox_import_file_branches(path, name, vars.args, vars.n, vars.branches,
                                        vars.nbranches, &imp, &e);
    if (rc == DT_ENOTFOUND)
        e.code = DT_EINVAL;
    if (rc)
        return dt_cli_fail(&e);
    dt_cli_print_import_warnings(imp);
    if (math) { /* every f32 / w8a32 GEMM the arithmetic applies to: f32_bf16, w8a32_bf16 */
        size_t slen = strlen(imp->spec_json);
        if ((rc = dt_cli_spec_math(&imp->spec_json, &slen, math, NULL, &e))) {
            dt_ox_import_free(imp);
            return dt_cli_fail(&e);
        }
    }
    /* the import checked its spec loads; loading again gives the report */
    dt_model *m = NULL;
    if ((rc = dt_model_parse(imp->spec_json, strlen(imp->spec_json), path, &m, &e)) ||
        (out && (rc = write_file(out, imp->spec_json, &e)))) {
        dt_ox_import_free(imp);
        dt_model_free(m);
        return dt_cli_fail(&e);
    }
    if (!out) {
        printf("%s\n", imp->spec_json);
        rc = fflush(stdout) ? DT_EXIT_RUNTIME : DT_EXIT_OK;
    }
    if (json) {
        rc = report_json(m, imp, out);
    } else {
        report_text(m, imp, path);
        if (out)
            fprintf(stderr, "wrote %s\n", out);
    }
    dt_model_free(m);
    dt_ox_import_free(imp);
    return rc;
}
