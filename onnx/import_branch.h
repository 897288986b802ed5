/* dtune import's --branch NAME=then|else|both (issue 43): the import of an
 * ONNX file with some If branches left out (onnx/graph.h,
 * dt_ox_take_branches). */
#ifndef DT_ONNX_IMPORT_BRANCH_H
#define DT_ONNX_IMPORT_BRANCH_H

#include "onnx/import.h"

/* As dt_ox_import_file (onnx/import.h), the If branches branch_args say
 * are not taken ("/If=then", "/Loop/body/If=else") dropped after reading:
 * each If's untuned entry says which branch was taken.  No branch_args: the
 * same as dt_ox_import_file.  A malformed arg or one naming no If is
 * DT_EINVAL. */
int dt_ox_import_file_branches(const char *path, const char *model_name,
                               const char *const *var_args, int nvar_args,
                               const char *const *branch_args, int nbranch_args,
                               dt_ox_import **out, dt_err *e);

#endif
