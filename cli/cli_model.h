/* A model argument of the CLI: a JSON model spec, or an ONNX file imported
 * with the --var flags (onnx/import.h), as model-spec text.  Shared by
 * `dtune import`, `dtune workloads` and `dtune tune`. */
#ifndef DT_CLI_MODEL_H
#define DT_CLI_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "common/error.h"
#include "onnx/import.h"
#include "shape/workload.h"

/* The --var NAME=DOMAIN flags of a command, in order, and its --branch
 * IF=then|else|both flags (the If branches an ONNX model takes). */
#define DT_CLI_MAX_VAR_ARGS (2 * DT_MAX_VARS)
typedef struct {
    int n;
    const char *args[DT_CLI_MAX_VAR_ARGS];
    int nbranches;
    const char *branches[DT_CLI_MAX_VAR_ARGS];
} dt_cli_vars;

/* Adds one --var value; a usage error (exit 1) when there are too many or it
 * has no '='. */
int dt_cli_vars_add(dt_cli_vars *v, const char *cmd, const char *arg);
/* Adds one --branch value (checked when the model is read); a usage error
 * when there are too many. */
int dt_cli_branch_add(dt_cli_vars *v, const char *cmd, const char *arg);
/* The --branch option's help lines, shared by the commands that take it. */
#define DT_CLI_BRANCH_HELP                                                              \
    "  --branch IF=then|else|both\n"                                                    \
    "                     (.onnx) the branch of If node IF (its path: /If,\n"            \
    "                     /Loop/body/If) the model takes; the other is dropped\n"        \
    "                     (default: both, each counted once)\n"

/* 1 when path names an ONNX file (ends in .onnx, any case). */
int dt_cli_is_onnx(const char *path);

/* The model at path as spec text (*text malloc'ed, *len bytes): the file
 * itself for a spec, the imported spec for an .onnx file (then *imp holds
 * the import — what was not tuned — for the caller to report and free; NULL
 * otherwise).  --var with a JSON spec is bad input, as is a missing file. */
int dt_cli_model_text(const char *path, const dt_cli_vars *v, char **text, size_t *len,
                      dt_ox_import **imp, dt_err *e);

/* --math M (issue 29, point 7): every workload of a model whose dtype has
 * a variant with M arithmetic that its op admits (for "bf16": f32 dense ->
 * f32_bf16, w8a32 dense -> w8a32_bf16) gets that dtype.  _spec rewrites spec text (*text
 * replaced, malloc'ed, *len updated; the ops' own "dtype" and the spec's
 * default both read); *marked (may be NULL) gets how many ops were marked.
 * _key does it to one workload key (out: the canonical key, size n).
 * DT_EINVAL for an unknown M ("--math takes bf16") or text that is no spec
 * object. */
int dt_cli_spec_math(char **text, size_t *len, const char *math, int *marked, dt_err *e);
int dt_cli_key_math(const char *key, const char *math, char *out, size_t n, dt_err *e);
/* Whether math names an arithmetic --math takes (for a usage error). */
int dt_cli_math_known(const char *math);

/* The import's warnings (what was read despite a doubt: an IR version or
 * opset newer than dtune knows), one "dtune: warning: ..." line each on
 * stderr, escaped. */
void dt_cli_print_import_warnings(const dt_ox_import *imp);
/* What an import did not tune, after a header line ("x.onnx: 1234 nodes,
 * 96 in tuned ops; not tuned:"), one line per kind with its node count and
 * why; nothing for imp == NULL. */
void dt_cli_print_untuned(FILE *out, const dt_ox_import *imp, const char *path);
/* The same as JSON: {"nodes": N, "tuned_nodes": T, "warnings": [...], "untuned": [{"what",
 * "nodes", "instances", "why"}, ...]}; NULL for imp == NULL. */
json_t *dt_cli_untuned_json(const dt_ox_import *imp);

#endif
