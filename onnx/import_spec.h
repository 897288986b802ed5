/* The model spec of an import (docs/model-spec.md): the extracted ops as
 * workloads, checked and merged, written as JSON.  Internal to onnx/. */
#ifndef DT_ONNX_IMPORT_SPEC_H
#define DT_ONNX_IMPORT_SPEC_H

#include "common/error.h"
#include "onnx/graph.h"
#include "onnx/workloads.h"
#include "shape/workload.h"

/* Writes the spec text (*out, malloc'ed): "name", a "description" saying
 * where it came from and what was not tuned, the variables vars[0..nvars)
 * and one op per distinct workload of wl (the first node's name, its count).
 * Each op is checked as a workload over the variables' domains first, so a
 * dim below 1 or a shape set too large is DT_EINVAL naming the node
 * ("x.onnx: node '/fc/MatMul' (#3, MatMul): dense with M=seq-1, N=10,
 * K=128: dim M = seq-1 is 0 at seq=1; every dim must be >= 1"); no op at
 * all is DT_EINVAL listing what was not tuned. */
int dt_ox_spec_write(const dt_ox_graph *g, const dt_ox_wl *wl, const char *name,
                     const dt_var *vars, int nvars, char **out, dt_err *e);

#endif
