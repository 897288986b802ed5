/* Model arguments: JSON specs and ONNX files (cli/cli_model.h). */
#include "cli/cli_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "common/file.h"
#include "sketch/model.h"

int dt_cli_vars_add(dt_cli_vars *v, const char *cmd, const char *arg)
{
    if (!strchr(arg, '='))
        return dt_cli_usage_error(cmd, "--var takes NAME=DOMAIN (e.g. seq=1..128), not '%s'",
                                  arg);
    if (v->n >= DT_CLI_MAX_VAR_ARGS)
        return dt_cli_usage_error(cmd, "at most %d --var flags", DT_CLI_MAX_VAR_ARGS);
    v->args[v->n++] = arg;
    return 0;
}

int dt_cli_is_onnx(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && !strcasecmp(path + n - 5, ".onnx");
}

int dt_cli_model_text(const char *path, const dt_cli_vars *v, char **text, size_t *len,
                      dt_ox_import **imp, dt_err *e)
{
    *text = NULL;
    *len = 0;
    *imp = NULL;
    if (!dt_cli_is_onnx(path)) {
        if (v->n)
            return dt_errf(e, DT_EINVAL,
                           "%s: --var applies to ONNX models (.onnx); a model spec declares "
                           "its variables itself",
                           path);
        int rc = dt_read_file(path, DT_MODEL_MAX_BYTES, text, len, e);
        if (rc == DT_ENOTFOUND)
            e->code = rc = DT_EINVAL; /* a missing model file is bad input: exit 2 */
        return rc;
    }
    int rc = dt_ox_import_file(path, NULL, v->args, v->n, imp, e);
    if (rc == DT_ENOTFOUND)
        e->code = rc = DT_EINVAL;
    if (rc)
        return rc;
    dt_cli_print_import_warnings(*imp);
    *text = strdup((*imp)->spec_json);
    if (!*text) {
        dt_ox_import_free(*imp);
        *imp = NULL;
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    *len = strlen(*text);
    return 0;
}

void dt_cli_print_import_warnings(const dt_ox_import *imp)
{
    for (int i = 0; imp && i < imp->nwarnings; i++)
        fprintf(stderr, "dtune: warning: %s\n", dt_cli_safe(imp->warnings[i]));
}

void dt_cli_print_untuned(FILE *out, const dt_ox_import *imp, const char *path)
{
    if (!imp)
        return;
    fprintf(out, "%s: %lld nodes, %lld in tuned ops", dt_cli_safe(path), (long long)imp->nnodes,
            (long long)imp->ntuned);
    if (!imp->nuntuned) {
        fprintf(out, "; every node is tuned\n");
        return;
    }
    fprintf(out, "; not tuned:\n");
    for (int i = 0; i < imp->nuntuned; i++) {
        const dt_ox_untuned *u = &imp->untuned[i];
        char n[64];
        if (u->instances != u->nodes)
            snprintf(n, sizeof n, "%lld nodes in %lld", (long long)u->nodes,
                     (long long)u->instances);
        else
            snprintf(n, sizeof n, "%lld node%s", (long long)u->nodes, u->nodes == 1 ? "" : "s");
        fprintf(out, "  %-40s %-18s %s\n", dt_cli_safe(u->what), n, dt_cli_safe(u->why));
    }
}

json_t *dt_cli_untuned_json(const dt_ox_import *imp)
{
    if (!imp)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < imp->nuntuned; i++)
        json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:s}", "what",
                                             imp->untuned[i].what, "nodes",
                                             (json_int_t)imp->untuned[i].nodes, "instances",
                                             (json_int_t)imp->untuned[i].instances, "why",
                                             imp->untuned[i].why));
    json_t *warnings = json_array();
    for (int i = 0; i < imp->nwarnings; i++)
        json_array_append_new(warnings, json_string(imp->warnings[i]));
    return json_pack("{s:I, s:I, s:o, s:o}", "nodes", (json_int_t)imp->nnodes, "tuned_nodes",
                     (json_int_t)imp->ntuned, "untuned", arr, "warnings", warnings);
}
