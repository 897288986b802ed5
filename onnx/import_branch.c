/* dt_ox_import_file with --branch choices (onnx/import_branch.h): read,
 * drop the branches not taken, import the graph. */
#include "onnx/import_branch.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnx/graph.h"
#include "onnx/import_graph.h"

/* The file's base name without ".onnx", as dt_ox_import_file names a model. */
static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && !strcasecmp(b + n - 5, ".onnx"))
        n -= 5;
    return n ? strndup(b, n) : strdup("model");
}

int dt_ox_import_file_branches(const char *path, const char *model_name,
                               const char *const *var_args, int nvar_args,
                               const char *const *branch_args, int nbranch_args,
                               dt_ox_import **out, dt_err *e)
{
    if (nbranch_args <= 0)
        return dt_ox_import_file(path, model_name, var_args, nvar_args, out, e);
    *out = NULL;
    dt_ox_graph *g = NULL;
    int rc = dt_ox_read_file(path, &g, e);
    if (!rc)
        rc = dt_ox_take_branches(g, branch_args, nbranch_args, e);
    if (!rc) {
        char *name = model_name ? NULL : base_name(path);
        if (!model_name && !name)
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
        else
            rc = dt_ox_import_graph(g, model_name ? model_name : name, var_args, nvar_args, out,
                                    e);
        free(name);
    }
    dt_ox_graph_free(g);
    return rc;
}
