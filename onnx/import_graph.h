/* The import of a graph already in memory: dt_ox_import_file after the
 * read.  Internal to onnx/ (it takes a dt_ox_graph, onnx/graph.h) and its
 * tests, which import graphs built node by node. */
#ifndef DT_ONNX_IMPORT_GRAPH_H
#define DT_ONNX_IMPORT_GRAPH_H

#include "onnx/graph.h"
#include "onnx/import.h"

/* As dt_ox_import_file (onnx/import.h) for g (the caller's; not changed);
 * model_name is the spec's "name" and required. */
int dt_ox_import_graph(const dt_ox_graph *g, const char *model_name, const char *const *var_args,
                       int nvar_args, dt_ox_import **out, dt_err *e);

/* The same; when it fails with DT_EINVAL, the widest part of one
 * variable's domain (cut at either end) over which g imports, imported
 * with a warning first in (*out)->warnings naming the part and quoting the
 * first error; else that first error (import_narrow.c). */
int dt_ox_import_narrowed(const dt_ox_graph *g, const char *model_name,
                          const char *const *var_args, int nvar_args, dt_ox_import **out,
                          dt_err *e);

#endif
