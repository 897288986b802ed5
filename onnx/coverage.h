/* The GEMM-like coverage of an import (onnx/import.h: dt_ox_coverage).
 * Internal to onnx/. */
#ifndef DT_ONNX_COVERAGE_H
#define DT_ONNX_COVERAGE_H

#include "common/error.h"
#include "onnx/graph.h"
#include "onnx/import.h"
#include "onnx/shape.h"
#include "onnx/workloads.h"

/* Counts wl's GEMM-like nodes' work at the largest and the weighted shape of
 * vars[0..nvars) (the model's variables with their domains) into *out
 * (owned; dt_ox_coverage_free).  Fails only with DT_ENOMEM. */
int dt_ox_coverage_count(const dt_ox_graph *g, const dt_ox_shapes *s, const dt_ox_wl *wl,
                         const dt_var *vars, int nvars, dt_ox_coverage *out, dt_err *e);
void dt_ox_coverage_free(dt_ox_coverage *c);

#endif
