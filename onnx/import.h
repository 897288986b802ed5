/* An ONNX file as a dtune model spec: the front end `dtune import`,
 * `dtune workloads X.onnx` and `dtune tune X.onnx` share
 * (docs/onnx-import.md).
 *
 * The result is the text of a model spec (docs/model-spec.md), which the
 * caller loads with dt_model_parse like any hand-written spec — nothing
 * below this folder knows that ONNX exists — plus what was not tuned. */
#ifndef DT_ONNX_IMPORT_H
#define DT_ONNX_IMPORT_H

#include <stdint.h>

#include "common/error.h"

/* One kind of node the spec does not tune, with how many there are. */
typedef struct {
    char *what;    /* op type ("Conv", "com.microsoft.FastGelu"), a pattern ("LayerNorm
                      (ReduceMean/Sub/Pow/Sqrt/Div)"), "shape arithmetic" or
                      "constant folding" */
    int64_t nodes; /* node count in the graph */
    char *why;     /* "conv2d is not a dtune op yet", "softmax: not a GEMM", or a
                      MatMul's own reason ("broadcast batch dims: ...") */
    int64_t instances; /* occurrences: == nodes for an op type, the number of
                          matches for a pattern of several nodes (a LayerNorm) */
} dt_ox_untuned;

/* A GEMM-like node (onnx/flops.h) no tuned op covers, with its work. */
typedef struct {
    char *node;        /* its label: "'/dec/ConvTranspose' (#12, ConvTranspose)" */
    char *why;         /* the untuned listing's reason */
    double gflop[2];   /* at dt_ox_coverage.shape[0] and [1]; -1: not counted */
} dt_ox_gemm_left;

/* Which share of the model's GEMM-like work (MatMul, Gemm, Conv,
 * ConvTranspose, recurrent cells, Einsum, quantized forms) lies in nodes the
 * tuned ops cover, counted from the nodes' definitions at two shapes: every
 * variable at its largest value, and each at the domain value nearest its
 * weighted mean. */
typedef struct {
    char *shape[2];        /* "batch=4,seq=128" (the largest), the weighted one */
    double gflop[2];       /* GEMM-like GFLOP of the counted nodes at each shape */
    double tuned_gflop[2]; /* of them, in nodes a tuned op covers */
    int ngemm;             /* GEMM-like nodes */
    int nuncounted;        /* of them, whose work could not be counted (shapes unknown,
                              a contrib attention op): listed with gflop -1 when untuned */
    int nleft;
    dt_ox_gemm_left *left; /* the untuned ones, most work first (weighted shape) */
} dt_ox_coverage;

typedef struct {
    char *spec_json;   /* the model spec, pretty-printed JSON text (malloc'd) */
    int nvars;
    char **var_names;  /* the model's variables (graph dim_params / generated) */
    int nuntuned;
    dt_ox_untuned *untuned; /* compute first (GEMMs left out, conv, softmax, norms,
                               elementwise, data movement), shape arithmetic and
                               constants last; first appearance within a kind */
    int64_t nnodes;    /* nodes in the graph: ntuned + the untuned entries' nodes */
    int64_t ntuned;    /* nodes covered by the spec's ops (MatMul/Gemm and
                          what was fused into them: bias Add, GELU, quantization,
                          the constants only they read) */
    dt_ox_coverage coverage;
    int nwarnings;
    char **warnings;   /* "x.onnx: IR version 15 is newer than dtune knows (14): ...":
                          what the import read despite a doubt (onnx/graph.h's
                          dt_ox_graph.warnings); the CLI prints them on stderr */
} dt_ox_import;

/* Reads path (.onnx), propagates shapes with the variables given as
 * var_args ("name=DOMAIN": "seq=1..128", "batch=1", "s={1,8,64}": one
 * integer or the domain grammar of docs/workload-keys.md) and extracts the
 * workloads; the spec is checked with dt_model_parse before it is returned.
 * model_name: the spec's "name" (NULL: the file's base name without .onnx).
 * Errors: DT_EIO (cannot read the file), DT_EINVAL for everything about its
 * content or the var_args, with a message naming the file and, where one is
 * at fault, the node ("x.onnx: node 'MatMul_12' (#40, MatMul): ..."); a
 * dim_param without a --var lists every name to give. */
int dt_ox_import_file(const char *path, const char *model_name, const char *const *var_args,
                      int nvar_args, dt_ox_import **out, dt_err *e);
/* The same with the If branches branch_args say are not taken ("/If=then",
 * "/Loop/body/If=else", "NAME=both") dropped after reading (dtune's
 * --branch; onnx/graph.h, dt_ox_take_branches): each If's untuned entry
 * says which branch was taken.  A malformed arg or one naming no If is
 * DT_EINVAL. */
int dt_ox_import_file_branches(const char *path, const char *model_name,
                               const char *const *var_args, int nvar_args,
                               const char *const *branch_args, int nbranch_args,
                               dt_ox_import **out, dt_err *e);
void dt_ox_import_free(dt_ox_import *r);

#endif
