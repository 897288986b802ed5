/* Internals of the ONNX reader (onnx/read*.c), shared by its files and its
 * test; nothing else includes this header.
 *
 * The reader works in two steps.  dt_ox_trim walks the protobuf wire format
 * of the file itself and writes a trimmed ModelProto: only the fields
 * graph.h keeps, and no tensor payload of a tensor above DT_OX_MAX_VALUES
 * elements, so a 1 GB model becomes a few hundred kB before protobuf-c
 * allocates anything.  protobuf-c then unpacks the trimmed copy and read.c
 * converts it into a dt_ox_graph. */
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

#endif
