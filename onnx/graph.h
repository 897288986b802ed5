/* The parts of an ONNX model dtune reads: the main graph's nodes, its
 * inputs' declared shapes and element types, and the initializers' dims —
 * never the weights themselves (docs/onnx-import.md) — and the bodies of
 * its If, Loop and Scan nodes, flattened into the same node list (below,
 * "Subgraphs").
 *
 * onnx/read.c fills a dt_ox_graph from a ModelProto (protobuf-c, code
 * generated at build time from Debian's /usr/include/onnx/onnx.proto);
 * onnx/shape.c propagates symbolic shapes through it; onnx/workloads.c
 * turns it into a model spec.  Nothing outside onnx/ includes this header.
 *
 * Ownership: a dt_ox_graph owns every string and array in it; free it with
 * dt_ox_graph_free.  Names are NUL-terminated copies of the file's strings
 * (never NULL; an omitted optional node input is ""). */
#ifndef DT_ONNX_GRAPH_H
#define DT_ONNX_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* ONNX TensorProto.DataType, the numbers the file uses. */
enum {
    DT_OX_UNDEFINED = 0,
    DT_OX_FLOAT = 1,
    DT_OX_UINT8 = 2,
    DT_OX_INT8 = 3,
    DT_OX_UINT16 = 4,
    DT_OX_INT16 = 5,
    DT_OX_INT32 = 6,
    DT_OX_INT64 = 7,
    DT_OX_STRING = 8,
    DT_OX_BOOL = 9,
    DT_OX_FLOAT16 = 10,
    DT_OX_DOUBLE = 11,
    DT_OX_UINT32 = 12,
    DT_OX_UINT64 = 13,
    DT_OX_BFLOAT16 = 16,
};

/* Limits the reader enforces before it allocates (bad input otherwise). */
#define DT_OX_MAX_FILE_BYTES (INT64_C(4) << 30) /* the .onnx file itself */
#define DT_OX_MAX_NODES 200000
#define DT_OX_MAX_RANK 16
#define DT_OX_MAX_IO 64           /* inputs or outputs of one node */
#define DT_OX_MAX_ATTR_INTS 1024  /* elements of an INTS/FLOATS attribute kept */
/* A control node's inputs or outputs once its bodies' outputs and inputs are
 * appended (below): an If's cond and both branches' outputs, a Loop's or
 * Scan's own and its body's. */
#define DT_OX_MAX_NODE_IO (2 * DT_OX_MAX_IO + 2)
/* Subgraphs nested below the main graph (an If in a Loop's body is 2). */
#define DT_OX_MAX_DEPTH 8
/* The bytes the bodies' paths add to the names of their nodes and tensors,
 * computed before anything is copied. */
#define DT_OX_MAX_PATH_BYTES (INT64_C(256) << 20)
/* A control node's name longer than this is not used in its bodies' paths
 * ("If#3" instead). */
#define DT_OX_MAX_PATH_NAME 256
/* A tensor's values (initializer, Constant) are kept only when it has at
 * most this many elements and an integer or float type: shape arithmetic
 * (Reshape targets, Slice bounds, Gather indices, scalar constants of the
 * GELU pattern) needs them, weights never. */
#define DT_OX_MAX_VALUES 64

/* Opsets of the default domain ("" or "ai.onnx") the reader knows: 11 (ONNX
 * 1.6) to 28 (the current onnx package).  Below 11 a file is refused (ops
 * such as Pad, Slice, Squeeze took their axes and pads as attributes with
 * other meanings before 11 and 13); above DT_OX_OPSET_KNOWN it is read
 * anyway (DT_OX_OPSET_MAX: no upper bound), every op by the newest
 * definition dtune knows, with a warning (dt_ox_graph.warnings).  Every op
 * with a shape rule is read by the definition of the file's opset
 * (docs/onnx-import.md, "Versions"). */
#define DT_OX_OPSET_MIN 11
#define DT_OX_OPSET_KNOWN 28
#define DT_OX_OPSET_MAX INT64_MAX
/* IR versions: 3 is the first with opset_import; ONNX 1.6 .. 1.15 write
 * 6 .. 9, 1.16 and 1.17 (and current torch exports) 10, 1.18 11, 1.19 12,
 * 1.20 13, the current onnx package 14.  IR 10 .. 14 added element types
 * (UINT4/INT4, FLOAT4E2M1, FLOAT8E8M0, 2-bit types), function overloads,
 * multi-device configuration and metadata: element types of weights, which
 * are never read (a tensor of a type dtune has no values for keeps its name,
 * type and dims), and fields the reader drops.  A version above
 * DT_OX_IR_KNOWN is read anyway (protobuf skips fields it does not know)
 * with a warning; below DT_OX_IR_MIN, or none given, it is refused. */
#define DT_OX_IR_MIN 3
#define DT_OX_IR_KNOWN 14
#define DT_OX_IR_MAX INT64_MAX /* accepted: no upper bound */

/* One dim of a declared shape. */
typedef struct {
    char *param;   /* dim_param (a symbolic name), or NULL: no dim_param, an empty
                      one or "?" (a dynamic dim without a name) */
    int64_t value; /* dim_value >= 0 when param == NULL; -1: dynamic (not given,
                      or dim_value -1 as older Paddle exports write it) */
} dt_ox_dim;

/* A graph input or output, or a value_info entry: its declared type. */
typedef struct {
    char *name;
    int elem_type;   /* DT_OX_*; DT_OX_UNDEFINED when not a tensor or not given */
    int rank;        /* -1: shape not given */
    dt_ox_dim *dims; /* rank entries */
} dt_ox_value;

/* An initializer, or a Constant node's / attribute's tensor. */
typedef struct {
    char *name;
    int elem_type;
    int rank;
    int64_t *dims;  /* rank entries, each >= 0 */
    int64_t numel;  /* product of dims (checked for overflow) */
    int has_values; /* 1: values below hold all numel elements */
    int64_t *ivals; /* integer types (and bool): the values; else NULL */
    double *fvals;  /* float types: the values; else NULL */
} dt_ox_tensor;

typedef enum {
    DT_OX_ATTR_OTHER = 0, /* sparse tensors, type protos, lists of strings, tensors or
                             graphs, the graphs of other ops: kept by name only */
    DT_OX_ATTR_INT,
    DT_OX_ATTR_FLOAT,
    DT_OX_ATTR_STRING,
    DT_OX_ATTR_TENSOR,
    DT_OX_ATTR_INTS,
    DT_OX_ATTR_FLOATS,
    DT_OX_ATTR_GRAPH, /* an If's then_branch / else_branch, a Loop's or Scan's body:
                         read into the node list; i is its index in g->bodies */
} dt_ox_attr_type;

typedef struct {
    char *name;
    dt_ox_attr_type type;
    int64_t i;      /* INT */
    double f;       /* FLOAT */
    char *s;        /* STRING (NUL-terminated copy; NULL otherwise) */
    dt_ox_tensor t; /* TENSOR */
    int n;          /* INTS / FLOATS: count */
    int64_t *ints;  /* INTS */
    double *floats; /* FLOATS */
} dt_ox_attr;

typedef struct {
    char *name;    /* "" when the file gives none; messages then use node #index */
    char *op_type;
    char *domain;  /* "" for the default domain ("ai.onnx" is stored as ""); any
                      other domain is kept as written (com.microsoft, custom ops) */
    int ninputs;
    char **inputs; /* "" = an omitted optional input */
    int noutputs;
    char **outputs;
    int nattrs;
    dt_ox_attr *attrs;
    /* Subgraphs (below).  Zero for a node of the main graph that holds none. */
    int body;      /* 0: a node of the main graph; k > 0: of g->bodies[k - 1], the
                      innermost body holding it (dt_ox_node_body) */
    int nbodies;   /* an If (2: then_branch, else_branch) or a Loop or Scan (1: body)
                      whose bodies were read; 0 for every other node */
    int bodies[2]; /* their indices in g->bodies */
    int nin_own, nout_own; /* with nbodies > 0: its own inputs and outputs, the first
                      ones; each body's outputs follow as inputs, each body's inputs
                      (a Loop's or Scan's) as outputs */
} dt_ox_node;

/* Subgraphs.  The reader flattens the bodies of If, Loop and Scan (nested
 * ones too, at most DT_OX_MAX_DEPTH deep) into the main graph's node list:
 * each body's nodes come just before its control node (then_branch first),
 * a nested body's inside its parent's.  Names a body defines (its inputs,
 * initializers and nodes' outputs) get the body's path in front
 * ("/If/then_branch" + "/" + "/conv/Conv_output_0" ->
 * "/If/then_branch/conv/Conv_output_0"), so two branches and nested bodies
 * never collide; names a body reads from an enclosing scope stay as they
 * are (outer scope visible).  Its nodes are named the same way (unnamed
 * ones "<path>/<OpType>#<k>").  The body's initializers join g->inits, its
 * declared inputs, outputs and value_info g->value_infos.
 *
 * The control node ties its bodies to the graph: each body's outputs are
 * appended to its inputs (an If reads both branches' results), each body's
 * inputs — a Loop's iteration number, condition and carried values, a
 * Scan's states and slices — to its outputs (the node defines them for its
 * body).  Shape propagation (onnx/shape.h) runs such a node in two steps:
 * when its own inputs are known it shapes the bodies' inputs, and when the
 * bodies' outputs are known its own outputs. */
typedef struct {
    char *path;       /* "/If/then_branch", "/Loop/body/If/else_branch": the control
                         node's path (its name, else "<OpType>#<k>"), '/', the attribute */
    const char *attr; /* "then_branch", "else_branch" or "body" (static text) */
    int control;      /* the If, Loop or Scan node (index into nodes) */
    int first, nnodes; /* its nodes, nested bodies' included: nodes[first, first + nnodes) */
    int in_at, nin;   /* its inputs: the control node's outputs [in_at, in_at + nin) */
    int out_at, nout; /* its outputs: the control node's inputs [out_at, out_at + nout) */
    int taken;        /* 1; 0: a branch --branch left out (dt_ox_take_branches): its
                         nnodes nodes were dropped, first, in_at and out_at mean nothing */
} dt_ox_body;

typedef struct {
    char *source;   /* the path or label messages use */
    int64_t ir_version;
    int64_t opset;  /* the default domain's opset version */
    char *producer; /* producer_name (+ " " + producer_version), may be "" */
    char *graph_name;
    int ninputs;    /* graph inputs that are not initializers */
    dt_ox_value *inputs;
    int noutputs;
    dt_ox_value *outputs;
    int nvalue_infos;
    dt_ox_value *value_infos;
    int ninits;
    dt_ox_tensor *inits;
    int nnodes;
    dt_ox_node *nodes; /* in file order (ONNX requires topological order; shape.c checks),
                          each control node's bodies just before it */
    int nbodies;
    dt_ox_body *bodies; /* in the order they were read (a parent before its nested ones) */
    int nwarnings;
    char **warnings; /* what was read despite a doubt: an IR version or opset newer
                        than dtune knows ("source: IR version 15 is newer than ...") */
} dt_ox_graph;

/* Parses an ONNX ModelProto from buf[0..len).  source names it in messages.
 * Bad input (not protobuf, not an ONNX model, truncated, IR version below 3
 * or none, opset below 11, limits above exceeded, an initializer whose dims
 * overflow, a dim_value below -1) is DT_EINVAL with a message
 * "source: what" (and the node, "source: node 'name' (#i, Op): what"). */
int dt_ox_read(const void *buf, size_t len, const char *source, dt_ox_graph **out, dt_err *e);
/* Reads path (at most DT_OX_MAX_FILE_BYTES; DT_EINVAL when it names no file
 * or something that is not a regular file after symlinks are followed — a
 * directory, FIFO, device or socket, refused without reading or waiting:
 * common/file.h's dt_open_regular — DT_EIO when it cannot be read) and
 * parses it with dt_ox_read. */
int dt_ox_read_file(const char *path, dt_ox_graph **out, dt_err *e);
void dt_ox_graph_free(dt_ox_graph *g);
/* Frees what node n owns (not n itself). */
void dt_ox_node_clear(dt_ox_node *n);

/* Lookups (NULL when absent). */
const dt_ox_attr *dt_ox_attr_find(const dt_ox_node *n, const char *name);
/* The path --branch names If node i by ("/If", "/Loop/body/If"): its
 * first *len bytes of *path (its then_branch's path); 0 when node i is no
 * If whose bodies were read. */
size_t dt_ox_if_path(const dt_ox_graph *g, int i, const char **path);
/* Node n's INT attribute name, or dflt when it has none of that type. */
int64_t dt_ox_attr_int_or(const dt_ox_node *n, const char *name, int64_t dflt);
const dt_ox_tensor *dt_ox_init_find(const dt_ox_graph *g, const char *name);
/* The innermost body holding node i, NULL for a node of the main graph. */
const dt_ox_body *dt_ox_node_body(const dt_ox_graph *g, int i);
/* Node n's own inputs / outputs: all of them but what its bodies appended. */
int dt_ox_own_inputs(const dt_ox_node *n);
int dt_ox_own_outputs(const dt_ox_node *n);
/* The --branch choices (issue 43): each arg "NAME=then", "NAME=else" or
 * "NAME=both", NAME an If's path (its name: "/If", "/Loop/body/If"; an unnamed
 * one "If#3").  The branch not taken is dropped — its nodes (nested bodies'
 * too) leave the node list, its outputs the If's inputs, its record stays
 * with taken = 0 — so the If's outputs are the taken branch's.  DT_EINVAL
 * for a malformed arg, a NAME no If has, a NAME given twice; g is then
 * unchanged.  (graph_branch.c) */
int dt_ox_take_branches(dt_ox_graph *g, const char *const *args, int n, dt_err *e);
/* "'name' (#i, Op)" or "#i (Op)" for messages; buf of at least 300 bytes. */
const char *dt_ox_node_label(const dt_ox_graph *g, int i, char *buf, size_t n);
/* The kind of an element type: 1 integers (the reader keeps their values
 * in ivals: the int and uint types, bool), 2 floats (fvals: float, double,
 * float16, bfloat16), 0 neither (string, complex, unknown). */
int dt_ox_type_values(int elem_type);
/* "float", "int64", ... ; "type N" for others. */
const char *dt_ox_type_name(int elem_type);

#endif
