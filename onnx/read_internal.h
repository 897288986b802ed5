/* Internals of the ONNX reader (onnx/read*.c), shared by its files and its
 * test; nothing else includes this header.
 *
 * The reader works in two steps.  dt_ox_trim walks the protobuf wire format
 * of the file itself and writes a trimmed ModelProto: only the fields
 * graph.h keeps, and no tensor payload of a tensor above DT_OX_MAX_VALUES
 * elements, so a 1 GB model becomes a few hundred kB before protobuf-c
 * allocates anything.  protobuf-c then unpacks the trimmed copy and read.c
 * (values, attributes, nodes) and read_graph.c (the graph, its subgraphs
 * flattened into it) convert it into a dt_ox_graph. */
#ifndef DT_ONNX_READ_INTERNAL_H
#define DT_ONNX_READ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "onnx/graph.h"
#include "onnx/onnx.pb-c.h"

/* What the trimmed model (its bytes, protobuf-c's structs and the graph made
 * from them) may need, estimated while trimming: bounds what a hostile file
 * full of tiny messages makes the reader allocate. */
#define DT_OX_MAX_META_BYTES (INT64_C(1) << 30)

/* Writes the trimmed copy of the ModelProto in buf[0..len) into *out
 * (malloc'ed, *out_len bytes; canonical protobuf: every varint minimal).
 * Bad wire format is DT_EINVAL "source: not an ONNX model (protobuf parse
 * failed at byte N: why)"; more than DT_OX_MAX_NODES nodes or
 * DT_OX_MAX_META_BYTES of structure is DT_EINVAL too. */
int dt_ox_trim(const uint8_t *buf, size_t len, const char *source, uint8_t **out, size_t *out_len,
               dt_err *e);

/* Fills *o (zeroed by the caller) from t: name, type, dims, numel and, for
 * a tensor of at most DT_OX_MAX_VALUES elements of an integer or float type
 * whose payload is present, its values.  where names it in messages
 * ("initializer 'w'", "node 'c' (#3, Constant): attribute 'value'").  On
 * failure *o may hold part of it: dt_ox_tensor_clear frees it. */
int dt_ox_tensor_from_proto(const Onnx__TensorProto *t, const char *source, const char *where,
                            dt_ox_tensor *o, dt_err *e);
/* Frees what *t owns (not t itself). */
void dt_ox_tensor_clear(dt_ox_tensor *t);

/* Checks rank, dims >= 0 and the element count of a tensor's dims; fills
 * o->rank, o->dims (malloc'ed) and o->numel. */
int dt_ox_tensor_dims(const int64_t *dims, size_t n, const char *source, const char *where,
                      dt_ox_tensor *o, dt_err *e);

/* ---- converting the unpacked model (read.c, read_graph.c) ---- */

typedef struct {
    const char *source;
    dt_err *e;
    dt_ox_graph *g; /* being filled; dt_ox_graph_free frees it at any stage */
} dt_ox_reader;

/* The names a body defines, and where they go (read_graph.c); NULL stands
 * for the main graph, whose names are kept as they are. */
typedef struct dt_ox_scope dt_ox_scope;

/* The name tensor `name` has in scope sc: a name defined by sc's body or an
 * enclosing one gets that body's path in front ("/If/then_branch/y"), any
 * other (the main graph's, "") is copied as it is.  malloc'ed; NULL: no
 * memory. */
char *dt_ox_scope_name(const dt_ox_scope *sc, const char *name);
/* The name of the k-th node of sc's body: its path and the file's name, or
 * "<OpType>#<k>" for a node without one; the file's name (or "") in the main
 * graph.  malloc'ed; NULL: no memory. */
char *dt_ox_scope_node_name(const dt_ox_scope *sc, const char *name, const char *op_type,
                            size_t k);

/* "source: what"; "source: node LABEL: what" (node i); out of memory. */
int dt_ox_read_fail(dt_ox_reader *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int dt_ox_read_node_fail(dt_ox_reader *r, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int dt_ox_read_oom(dt_ox_reader *r);
/* A graph input or output or value_info entry, its name as sc names it;
 * what/idx name it in messages. */
int dt_ox_read_value(dt_ox_reader *r, const Onnx__ValueInfoProto *vi, const char *what, size_t idx,
                     const dt_ox_scope *sc, dt_ox_value *v);
/* The k-th node of sc's graph into r->g->nodes[i] (zeroed): its name, op
 * type, domain, inputs and outputs as sc names them, attributes (a graph
 * one as DT_OX_ATTR_OTHER: read_graph.c marks the bodies it read). */
int dt_ox_read_node(dt_ox_reader *r, int i, const Onnx__NodeProto *p, const dt_ox_scope *sc,
                    size_t k);
/* The main graph with every body flattened into it (read_graph.c). */
int dt_ox_read_graph(dt_ox_reader *r, const Onnx__GraphProto *gp);

#endif
