/* The ONNX reader's wire walker: a trimmed, canonical copy of a ModelProto
 * without the weights (onnx/read_internal.h).
 *
 * Why not hand the file to protobuf-c directly: it copies every field it
 * knows, raw_data included, so a 500 MB model would cost 500 MB of heap, and
 * a hostile file of tiny messages far more (a 2-byte NodeProto unpacks into
 * ~100 bytes).  It also cannot say where bytes stop being protobuf.  The
 * walker reads the file once, skips what graph.h does not keep without
 * touching it (a payload's pages are never read), re-encodes the rest and
 * names the byte where parsing failed.
 *
 * Each message kind has a table of its known fields (the numbers of
 * /usr/include/onnx/onnx.proto, ONNX 1.12): kept (re-encoded with minimal
 * varints), walked into, or dropped (only its wire type is checked, as
 * protobuf-c would).  Unknown fields are skipped, as protobuf allows.  Every
 * kept message is walked, so protobuf-c gets valid input and its unpack can
 * fail only for want of memory.  The only cycle of kept kinds is a graph in
 * an attribute of a node of a graph: the bodies of If, Loop and Scan (an
 * attribute's "g" is kept for those ops only, found by a quiet pre-scan of
 * the node), at most DT_OX_MAX_DEPTH below the main graph; nested types are
 * dropped.  So recursion depth is bounded.  The node limit and the memory
 * estimate count every graph. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/read_internal.h"

typedef enum {
    K_MODEL,
    K_GRAPH,
    K_NODE,
    K_ATTR,
    K_TENSOR,      /* initializer or attribute tensor: payload kept when small */
    K_TENSOR_META, /* a sparse tensor's values: payload never kept */
    K_SPARSE,
    K_VALUE_INFO,
    K_TYPE,
    K_TYPE_TENSOR,
    K_SHAPE,
    K_DIM,
    K_OPSET,
    K_NKINDS
} msg_kind;

typedef enum {
    F_DROP,     /* known, not kept: its wire type is still checked */
    F_VARINT,   /* int32, int64 or enum */
    F_FIXED32,  /* float */
    F_STRING,   /* string: copied; a NUL byte in it is refused (names are C strings) */
    F_BYTES,    /* bytes: copied */
    F_VARINTS,  /* repeated varint, packed or not */
    F_FIXED32S, /* repeated float, packed or not */
    F_FIXED64S, /* repeated double, packed or not */
    F_MSG,      /* a message of kind sub, repeated or not */
} field_kind;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct {
    uint32_t num;
    field_kind kind;
    int wt;       /* F_DROP: the wire type the field must have */
    int payload;  /* a TensorProto payload: kept only for small tensors */
    msg_kind sub; /* F_MSG */
    const char *name;
} field_spec;

#define DROP(n, w, nm) {n, F_DROP, w, 0, K_NKINDS, nm}
#define KEEP(n, k, nm) {n, k, 0, 0, K_NKINDS, nm}
#define PAYLOAD(n, k, nm) {n, k, 0, 1, K_NKINDS, nm}
#define MSG(n, s, nm) {n, F_MSG, WT_LEN, 0, s, nm}

static const field_spec model_fields[] = {
    KEEP(1, F_VARINT, "ir_version"),  KEEP(2, F_STRING, "producer_name"),
    KEEP(3, F_STRING, "producer_version"), DROP(4, WT_LEN, "domain"),
    DROP(5, WT_VARINT, "model_version"), DROP(6, WT_LEN, "doc_string"),
    MSG(7, K_GRAPH, "graph"),         MSG(8, K_OPSET, "opset_import"),
    DROP(14, WT_LEN, "metadata_props"), DROP(20, WT_LEN, "training_info"),
    DROP(25, WT_LEN, "functions"),
};
#define GRAPH_NODE 1
static const field_spec graph_fields[] = {
    MSG(GRAPH_NODE, K_NODE, "node"),   KEEP(2, F_STRING, "name"),
    MSG(5, K_TENSOR, "initializer"),   MSG(15, K_SPARSE, "sparse_initializer"),
    DROP(10, WT_LEN, "doc_string"),    MSG(11, K_VALUE_INFO, "input"),
    MSG(12, K_VALUE_INFO, "output"),   MSG(13, K_VALUE_INFO, "value_info"),
    DROP(14, WT_LEN, "quantization_annotation"),
};
#define NODE_OP_TYPE 4
#define NODE_DOMAIN 7
static const field_spec node_fields[] = {
    KEEP(1, F_STRING, "input"),   KEEP(2, F_STRING, "output"), KEEP(3, F_STRING, "name"),
    KEEP(4, F_STRING, "op_type"), MSG(5, K_ATTR, "attribute"), DROP(6, WT_LEN, "doc_string"),
    KEEP(7, F_STRING, "domain"),
};
/* A graph ("g") is kept for the bodies of If, Loop and Scan (the node's
 * ATTR_GRAPH, see walk); other graphs, sparse tensors, type protos and lists
 * of strings, tensors or graphs are kept by name and type only
 * (DT_OX_ATTR_OTHER). */
#define ATTR_GRAPH 6
static const field_spec attr_fields[] = {
    KEEP(1, F_STRING, "name"),      DROP(21, WT_LEN, "ref_attr_name"),
    DROP(13, WT_LEN, "doc_string"), KEEP(20, F_VARINT, "type"),
    KEEP(2, F_FIXED32, "f"),        KEEP(3, F_VARINT, "i"),
    KEEP(4, F_BYTES, "s"),          MSG(5, K_TENSOR, "t"),
    MSG(ATTR_GRAPH, K_GRAPH, "g"),  DROP(22, WT_LEN, "sparse_tensor"),
    DROP(14, WT_LEN, "tp"),         KEEP(7, F_FIXED32S, "floats"),
    KEEP(8, F_VARINTS, "ints"),     DROP(9, WT_LEN, "strings"),
    DROP(10, WT_LEN, "tensors"),    DROP(11, WT_LEN, "graphs"),
    DROP(23, WT_LEN, "sparse_tensors"), DROP(15, WT_LEN, "type_protos"),
};
#define TENSOR_DIMS 1
#define TENSOR_DATA_TYPE 2
/* external_data (13) and data_location (14) are dropped: the referenced
 * file is never opened; dims and type are all the reader needs. */
static const field_spec tensor_fields[] = {
    KEEP(TENSOR_DIMS, F_VARINTS, "dims"),  KEEP(TENSOR_DATA_TYPE, F_VARINT, "data_type"),
    DROP(3, WT_LEN, "segment"),            PAYLOAD(4, F_FIXED32S, "float_data"),
    PAYLOAD(5, F_VARINTS, "int32_data"),   DROP(6, WT_LEN, "string_data"),
    PAYLOAD(7, F_VARINTS, "int64_data"),   KEEP(8, F_STRING, "name"),
    DROP(12, WT_LEN, "doc_string"),        PAYLOAD(9, F_BYTES, "raw_data"),
    DROP(13, WT_LEN, "external_data"),     DROP(14, WT_VARINT, "data_location"),
    PAYLOAD(10, F_FIXED64S, "double_data"), PAYLOAD(11, F_VARINTS, "uint64_data"),
};
static const field_spec sparse_fields[] = {
    MSG(1, K_TENSOR_META, "values"),
    DROP(2, WT_LEN, "indices"),
    KEEP(3, F_VARINTS, "dims"),
};
static const field_spec value_info_fields[] = {
    KEEP(1, F_STRING, "name"), MSG(2, K_TYPE, "type"), DROP(3, WT_LEN, "doc_string"),
};
/* Only tensor types are kept; a sequence, map, optional or sparse input is
 * read as "not a tensor" (DT_OX_UNDEFINED, rank -1). */
static const field_spec type_fields[] = {
    MSG(1, K_TYPE_TENSOR, "tensor_type"), DROP(4, WT_LEN, "sequence_type"),
    DROP(5, WT_LEN, "map_type"),          DROP(9, WT_LEN, "optional_type"),
    DROP(8, WT_LEN, "sparse_tensor_type"), DROP(6, WT_LEN, "denotation"),
};
static const field_spec type_tensor_fields[] = {
    KEEP(1, F_VARINT, "elem_type"),
    MSG(2, K_SHAPE, "shape"),
};
static const field_spec shape_fields[] = {
    MSG(1, K_DIM, "dim"),
};
static const field_spec dim_fields[] = {
    KEEP(1, F_VARINT, "dim_value"),
    KEEP(2, F_STRING, "dim_param"),
    DROP(3, WT_LEN, "denotation"),
};
static const field_spec opset_fields[] = {
    KEEP(1, F_STRING, "domain"),
    KEEP(2, F_VARINT, "version"),
};

typedef struct {
    const char *name; /* in messages */
    size_t size;      /* sizeof protobuf-c's struct, for the memory estimate */
    const field_spec *fields;
    int nfields;
} msg_spec;

#define SPEC(nm, type, f) {nm, sizeof(type), f, (int)(sizeof f / sizeof f[0])}
static const msg_spec specs[K_NKINDS] = {
    [K_MODEL] = SPEC("ModelProto", Onnx__ModelProto, model_fields),
    [K_GRAPH] = SPEC("GraphProto", Onnx__GraphProto, graph_fields),
    [K_NODE] = SPEC("NodeProto", Onnx__NodeProto, node_fields),
    [K_ATTR] = SPEC("AttributeProto", Onnx__AttributeProto, attr_fields),
    [K_TENSOR] = SPEC("TensorProto", Onnx__TensorProto, tensor_fields),
    [K_TENSOR_META] = SPEC("TensorProto", Onnx__TensorProto, tensor_fields),
    [K_SPARSE] = SPEC("SparseTensorProto", Onnx__SparseTensorProto, sparse_fields),
    [K_VALUE_INFO] = SPEC("ValueInfoProto", Onnx__ValueInfoProto, value_info_fields),
    [K_TYPE] = SPEC("TypeProto", Onnx__TypeProto, type_fields),
    [K_TYPE_TENSOR] = SPEC("TypeProto.Tensor", Onnx__TypeProto__Tensor, type_tensor_fields),
    [K_SHAPE] = SPEC("TensorShapeProto", Onnx__TensorShapeProto, shape_fields),
    [K_DIM] = SPEC("TensorShapeProto.Dimension", Onnx__TensorShapeProto__Dimension, dim_fields),
    [K_OPSET] = SPEC("OperatorSetIdProto", Onnx__OperatorSetIdProto, opset_fields),
};

/* Estimated heap cost beyond the bytes themselves: malloc's header, the
 * parent's pointer slot, and the reader's own copy of each name. */
#define MSG_OVERHEAD 64
#define STR_OVERHEAD 48

typedef struct {
    const uint8_t *in;
    const char *source;
    dt_err *e;
    int quiet; /* 1 while pre-scanning a tensor: malformed input is left to the walk */
    uint8_t *out;
    size_t n, cap;
    int oom;
    uint64_t est;  /* estimated bytes the kept structure costs once unpacked and read */
    int64_t nodes; /* nodes so far, of every graph */
    int depth;     /* graphs being walked: 1 in the main graph, 2 in a body, ... */
    int control;   /* 1 while walking a node that is an If, Loop or Scan of the default
                      domain: its attributes' graphs are kept */
} trim_ctx;

/* One field as found in the input: its key and the extent of its value. */
typedef struct {
    uint32_t num;
    int wt;
    size_t at;         /* offset of the key */
    size_t start, end; /* the value (for WT_LEN: without its length) */
    uint64_t v;        /* WT_VARINT: the value; WT_LEN: the length */
} wire_field;

static int bad(trim_ctx *c, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(trim_ctx *c, size_t at, const char *fmt, ...)
{
    if (c->quiet)
        return DT_EINVAL;
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return dt_errf(c->e, DT_EINVAL, "%s: not an ONNX model (protobuf parse failed at byte %zu: %s)",
                   c->source, at, why);
}

/* Reads the varint at *p (< end): 0; -1 when it is cut off by end; -2 when
 * it is longer than the 10 bytes a 64-bit value takes. */
static int get_varint(const uint8_t *in, size_t *p, size_t end, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (*p >= end)
            return -1;
        uint8_t b = in[(*p)++];
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -2;
}

static int next_field(trim_ctx *c, size_t *p, size_t end, const char *msg, wire_field *f)
{
    uint64_t key;
    f->at = *p;
    int r = get_varint(c->in, p, end, &key);
    if (r)
        return bad(c, f->at, "%s field key in %s", r == -1 ? "truncated" : "over-long", msg);
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return bad(c, f->at, "field number %llu in %s", (unsigned long long)(key >> 3), msg);
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    f->start = *p;
    switch (f->wt) {
    case WT_VARINT:
        r = get_varint(c->in, p, end, &f->v);
        if (r)
            return bad(c, f->start, "%s varint of field %u in %s", r == -1 ? "truncated" : "over-long",
                       f->num, msg);
        break;
    case WT_I64:
    case WT_I32: {
        size_t w = f->wt == WT_I64 ? 8 : 4;
        if (end - *p < w)
            return bad(c, f->start, "truncated %zu-byte value of field %u in %s", w, f->num, msg);
        *p += w;
        break;
    }
    case WT_LEN:
        r = get_varint(c->in, p, end, &f->v);
        if (r)
            return bad(c, f->start, "%s length of field %u in %s", r == -1 ? "truncated" : "over-long",
                       f->num, msg);
        f->start = *p;
        if (f->v > end - *p)
            return bad(c, f->at, "field %u of %s claims %llu bytes, only %zu remain", f->num, msg,
                       (unsigned long long)f->v, end - *p);
        *p += (size_t)f->v;
        break;
    default:
        return bad(c, f->at, "wire type %d of field %u in %s (ONNX uses 0, 1, 2 and 5)", f->wt, f->num,
                   msg);
    }
    f->end = *p;
    return 0;
}

/* ---- output --------------------------------------------------------------- */

static void put(trim_ctx *c, const void *p, size_t len)
{
    if (c->oom || len == 0)
        return;
    if (len > c->cap - c->n) {
        size_t cap = c->cap ? c->cap : 4096;
        while (len > cap - c->n) /* n + len is bounded by DT_OX_MAX_META_BYTES */
            cap *= 2;
        uint8_t *q = realloc(c->out, cap);
        if (!q) {
            c->oom = 1;
            return;
        }
        c->out = q;
        c->cap = cap;
    }
    memcpy(c->out + c->n, p, len);
    c->n += len;
}

static size_t varint_encode(uint64_t v, uint8_t *b)
{
    size_t i = 0;
    for (; v >= 0x80; v >>= 7)
        b[i++] = (uint8_t)(v | 0x80);
    b[i++] = (uint8_t)v;
    return i;
}

static void put_varint(trim_ctx *c, uint64_t v)
{
    uint8_t b[10];
    put(c, b, varint_encode(v, b));
}

static void put_key(trim_ctx *c, uint32_t num, int wt) { put_varint(c, (uint64_t)num << 3 | (uint64_t)wt); }

/* A length-delimited field whose length is known only once its content is
 * written: five bytes are reserved for the length (enough below 32 GiB),
 * then the content is moved up against the minimal varint. */
static size_t open_len(trim_ctx *c, uint32_t num)
{
    put_key(c, num, WT_LEN);
    size_t at = c->n;
    put(c, "\0\0\0\0\0", 5);
    return at;
}

static void close_len(trim_ctx *c, size_t at)
{
    if (c->oom)
        return;
    size_t len = c->n - at - 5;
    uint8_t b[10];
    size_t k = varint_encode(len, b);
    memmove(c->out + at + k, c->out + at + 5, len);
    memcpy(c->out + at, b, k);
    c->n = at + k + len;
}

/* ---- walking -------------------------------------------------------------- */

static int walk(trim_ctx *c, msg_kind kind, size_t p, size_t end);

/* What small_tensor learns of a tensor's dims. */
typedef struct {
    int rank, neg, zero;
    int64_t numel; /* saturates at DT_OX_MAX_VALUES + 1 (zero dims aside) */
} dims_scan;

static void scan_dim(dims_scan *s, int64_t d)
{
    s->rank++;
    if (d < 0)
        s->neg = 1;
    else if (d == 0)
        s->zero = 1;
    else if (s->numel <= DT_OX_MAX_VALUES)
        s->numel = d > DT_OX_MAX_VALUES ? DT_OX_MAX_VALUES + 1 : s->numel * d;
}

/* 1 when the TensorProto in [p, end) has at most DT_OX_MAX_VALUES elements
 * (rank <= DT_OX_MAX_RANK, every dim >= 0) of a type whose values the
 * reader keeps: its payload is then copied, else skipped unread.  A
 * malformed field ends the scan; the walk that follows reports it. */
static int small_tensor(trim_ctx *c, size_t p, size_t end)
{
    dims_scan s = {.numel = 1};
    int dtype = DT_OX_UNDEFINED;
    c->quiet = 1;
    while (p < end) {
        wire_field w;
        if (next_field(c, &p, end, "", &w))
            break;
        if (w.num == TENSOR_DATA_TYPE && w.wt == WT_VARINT)
            dtype = (int32_t)(uint32_t)w.v; /* protobuf's int32: the low 32 bits */
        else if (w.num == TENSOR_DIMS && w.wt == WT_VARINT)
            scan_dim(&s, (int64_t)w.v);
        else if (w.num == TENSOR_DIMS && w.wt == WT_LEN) /* packed */
            for (size_t q = w.start; q < w.end;) {
                uint64_t v;
                if (get_varint(c->in, &q, w.end, &v))
                    break;
                scan_dim(&s, (int64_t)v);
            }
    }
    c->quiet = 0;
    return !s.neg && s.rank <= DT_OX_MAX_RANK && (s.zero || s.numel <= DT_OX_MAX_VALUES) &&
           dt_ox_type_values(dtype) != 0;
}

/* 1 when the NodeProto in [p, end) is an If, Loop or Scan of the default
 * domain (the last op_type and domain given win, as in protobuf): the ops
 * whose bodies the reader flattens.  A malformed field ends the scan; the
 * walk that follows reports it. */
static int control_node(trim_ctx *c, size_t p, size_t end)
{
    size_t op = 0, oplen = 0, dom = 0, domlen = 0;
    c->quiet = 1;
    while (p < end) {
        wire_field w;
        if (next_field(c, &p, end, "", &w))
            break;
        if (w.wt != WT_LEN)
            continue;
        if (w.num == NODE_OP_TYPE)
            op = w.start, oplen = w.end - w.start;
        else if (w.num == NODE_DOMAIN)
            dom = w.start, domlen = w.end - w.start;
    }
    c->quiet = 0;
    const char *o = (const char *)c->in + op, *d = (const char *)c->in + dom;
    int dflt = domlen == 0 || (domlen == 7 && !memcmp(d, "ai.onnx", 7));
    return dflt && ((oplen == 2 && !memcmp(o, "If", 2)) || (oplen == 4 && !memcmp(o, "Loop", 4)) ||
                    (oplen == 4 && !memcmp(o, "Scan", 4)));
}

static const field_spec *find_field(const msg_spec *m, uint32_t num)
{
    for (int i = 0; i < m->nfields; i++)
        if (m->fields[i].num == num)
            return &m->fields[i];
    return NULL;
}

/* The wire type a field's scalar occurrences have (packed ones are WT_LEN). */
static int scalar_wt(const field_spec *f)
{
    switch (f->kind) {
    case F_DROP:
        return f->wt;
    case F_VARINT:
    case F_VARINTS:
        return WT_VARINT;
    case F_FIXED32:
    case F_FIXED32S:
        return WT_I32;
    case F_FIXED64S:
        return WT_I64;
    default:
        return WT_LEN;
    }
}

/* Copies a repeated scalar field, packed (re-encoded) or one occurrence. */
static int keep_repeated(trim_ctx *c, const msg_spec *m, const field_spec *f, const wire_field *w)
{
    size_t len = w->end - w->start;
    if (w->wt != WT_LEN) {
        put_key(c, f->num, w->wt);
        if (w->wt == WT_VARINT)
            put_varint(c, w->v);
        else
            put(c, c->in + w->start, len);
        c->est += 16;
        return 0;
    }
    if (f->kind != F_VARINTS) {
        size_t size = f->kind == F_FIXED32S ? 4 : 8;
        if (len % size)
            return bad(c, w->at, "packed %s.%s is %zu bytes long, not a multiple of %zu", m->name,
                       f->name, len, size);
        put_key(c, f->num, WT_LEN);
        put_varint(c, len);
        put(c, c->in + w->start, len);
        c->est += len / size * 16;
        return 0;
    }
    size_t at = open_len(c, f->num);
    for (size_t q = w->start; q < w->end;) {
        size_t vat = q;
        uint64_t v;
        int r = get_varint(c->in, &q, w->end, &v);
        if (r)
            return bad(c, vat, "%s varint in packed %s.%s", r == -1 ? "truncated" : "over-long",
                       m->name, f->name);
        put_varint(c, v);
        c->est += 16;
    }
    close_len(c, at);
    return 0;
}

static int keep_field(trim_ctx *c, const msg_spec *m, const field_spec *f, const wire_field *w)
{
    size_t len = w->end - w->start;
    switch (f->kind) {
    case F_VARINT:
        put_key(c, f->num, WT_VARINT);
        put_varint(c, w->v);
        return 0;
    case F_FIXED32:
        put_key(c, f->num, WT_I32);
        put(c, c->in + w->start, 4);
        return 0;
    case F_STRING:
        if (memchr(c->in + w->start, 0, len))
            return bad(c, w->start, "%s.%s contains a NUL byte", m->name, f->name);
        /* fall through */
    case F_BYTES:
        put_key(c, f->num, WT_LEN);
        put_varint(c, len);
        put(c, c->in + w->start, len);
        c->est += 2 * (uint64_t)len + STR_OVERHEAD;
        return 0;
    case F_VARINTS:
    case F_FIXED32S:
    case F_FIXED64S:
        return keep_repeated(c, m, f, w);
    case F_MSG: {
        size_t at = open_len(c, f->num);
        int rc = walk(c, f->sub, w->start, w->end);
        if (rc)
            return rc;
        close_len(c, at);
        return 0;
    }
    case F_DROP:
        break;
    }
    return 0;
}

/* Refuses a model whose kept structure would cost more than
 * DT_OX_MAX_META_BYTES once unpacked, counting extra bytes about to be
 * copied (checked before a long string is copied, not after). */
static int too_big(trim_ctx *c, uint64_t extra)
{
    if (c->est + c->n + extra <= (uint64_t)DT_OX_MAX_META_BYTES)
        return 0;
    return dt_errf(c->e, DT_EINVAL,
                   "%s: the graph's structure (without weights) would take more than %lld MiB of "
                   "memory",
                   c->source, (long long)(DT_OX_MAX_META_BYTES >> 20));
}

static int walk_fields(trim_ctx *c, msg_kind kind, size_t p, size_t end);

/* Walks one message of kind in [p, end): a graph one level deeper, a node
 * with its own control flag (restored after, for its parent's siblings). */
static int walk(trim_ctx *c, msg_kind kind, size_t p, size_t end)
{
    int control = c->control;
    if (kind == K_GRAPH && c->depth > DT_OX_MAX_DEPTH)
        return dt_errf(c->e, DT_EINVAL,
                       "%s: subgraphs are nested more than %d deep (an If, Loop or Scan body "
                       "inside another, %d levels below the main graph)",
                       c->source, DT_OX_MAX_DEPTH, DT_OX_MAX_DEPTH + 1);
    if (kind == K_GRAPH)
        c->depth++;
    else if (kind == K_NODE)
        c->control = control_node(c, p, end);
    int rc = walk_fields(c, kind, p, end);
    if (kind == K_GRAPH)
        c->depth--;
    c->control = control;
    return rc;
}

static int walk_fields(trim_ctx *c, msg_kind kind, size_t p, size_t end)
{
    const msg_spec *m = &specs[kind];
    int keep_payload = kind == K_TENSOR && small_tensor(c, p, end);
    c->est += m->size + MSG_OVERHEAD;
    while (p < end) {
        wire_field w;
        int rc = next_field(c, &p, end, m->name, &w);
        if (rc)
            return rc;
        const field_spec *f = find_field(m, w.num);
        if (!f)
            continue;
        int packable = f->kind == F_VARINTS || f->kind == F_FIXED32S || f->kind == F_FIXED64S;
        if (w.wt != scalar_wt(f) && !(packable && w.wt == WT_LEN))
            return bad(c, w.at, "%s.%s (field %u) has wire type %d, not %d", m->name, f->name, w.num,
                       w.wt, scalar_wt(f));
        if (f->kind == F_DROP || (f->payload && !keep_payload))
            continue;
        if (kind == K_ATTR && w.num == ATTR_GRAPH && !c->control)
            continue; /* another op's graph: not read */
        if (kind == K_GRAPH && w.num == GRAPH_NODE && ++c->nodes > DT_OX_MAX_NODES)
            return dt_errf(c->e, DT_EINVAL, "%s: the graph has more than %d nodes%s", c->source,
                           DT_OX_MAX_NODES, c->depth > 1 ? " (its subgraphs' counted)" : "");
        if ((w.wt == WT_LEN && f->kind != F_MSG && (rc = too_big(c, 3 * (uint64_t)w.v))) ||
            (rc = keep_field(c, m, f, &w)) || (rc = too_big(c, 0)))
            return rc;
        if (c->oom)
            return dt_errf(c->e, DT_ENOMEM, "%s: out of memory reading the model", c->source);
    }
    return 0;
}

int dt_ox_trim(const uint8_t *buf, size_t len, const char *source, uint8_t **out, size_t *out_len,
               dt_err *e)
{
    *out = NULL;
    *out_len = 0;
    trim_ctx c = {.in = buf, .source = source, .e = e};
    int rc = walk(&c, K_MODEL, 0, len);
    if (rc) {
        free(c.out);
        return rc;
    }
    *out = c.out;
    *out_len = c.n;
    return 0;
}
