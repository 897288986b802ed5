/* The ONNX reader: a file or buffer as a dt_ox_graph (onnx/graph.h).
 *
 * dt_ox_trim (read_trim.c) first copies the ModelProto without the weights;
 * protobuf-c unpacks that copy; this file checks the model (IR version,
 * opset, limits; a version newer than dtune knows is a warning) and converts
 * declared values, attributes and nodes; read_graph.c converts the graph
 * with its subgraphs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "onnx/graph.h"
#include "onnx/read_internal.h"

typedef dt_ox_reader reader;

#define fail dt_ox_read_fail
#define node_fail dt_ox_read_node_fail

/* "source: what" */
int dt_ox_read_fail(reader *r, int code, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_errf(r->e, code, "%s: %s", r->source, msg);
}

/* "source: node 'name' (#i, Op): what" */
int dt_ox_read_node_fail(reader *r, int i, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX], label[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dt_errf(r->e, DT_EINVAL, "%s: node %s: %s", r->source,
                   dt_ox_node_label(r->g, i, label, sizeof label), msg);
}

int dt_ox_read_oom(reader *r) { return fail(r, DT_ENOMEM, "out of memory reading the model"); }

#define oom dt_ox_read_oom

static int warn(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds "source: what" to the graph's warnings; 0 or DT_ENOMEM. */
static int warn(reader *r, const char *fmt, ...)
{
    char msg[DT_ERR_MSG_MAX], line[DT_ERR_MSG_MAX + 300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s: %s", r->source, msg);
    dt_ox_graph *g = r->g;
    char **w = realloc(g->warnings, (size_t)(g->nwarnings + 1) * sizeof *w);
    if (!w)
        return oom(r);
    g->warnings = w;
    if (!(w[g->nwarnings] = strdup(line)))
        return oom(r);
    g->nwarnings++;
    return 0;
}

/* A copy of s ("" for NULL) into *dst; 0 or DT_ENOMEM. */
static int copy_str(reader *r, char **dst, const char *s)
{
    *dst = strdup(s ? s : "");
    return *dst ? 0 : oom(r);
}

/* Zero-filled array of n elements (at least one, so NULL means no memory). */
static void *alloc_array(size_t n, size_t size) { return calloc(n ? n : 1, size); }

/* ---- values, tensors, nodes ---------------------------------------------- */

int dt_ox_read_value(reader *r, const Onnx__ValueInfoProto *vi, const char *what, size_t idx,
                     const dt_ox_scope *sc, dt_ox_value *v)
{
    v->rank = -1;
    if (!vi->name || !vi->name[0])
        return fail(r, DT_EINVAL, "%s #%zu has no name", what, idx);
    if (!(v->name = dt_ox_scope_name(sc, vi->name)))
        return oom(r);
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return 0; /* not given, or not a tensor: DT_OX_UNDEFINED, rank -1 */
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    v->elem_type = tt->has_elem_type ? tt->elem_type : DT_OX_UNDEFINED;
    if (!tt->shape)
        return 0;
    size_t n = tt->shape->n_dim;
    if (n > DT_OX_MAX_RANK)
        return fail(r, DT_EINVAL, "%s '%s': rank %zu exceeds the limit of %d", what, v->name, n,
                    DT_OX_MAX_RANK);
    v->dims = alloc_array(n, sizeof *v->dims);
    if (!v->dims)
        return oom(r);
    v->rank = (int)n;
    for (size_t d = 0; d < n; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        v->dims[d].value = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            /* -1 is how older Paddle (and some TF) exports write a dynamic
             * dim: one without a name, as if no value were given */
            if (dim->dim_value < -1)
                return fail(r, DT_EINVAL,
                            "%s '%s': dim %zu is %" PRId64 " (dim_value must be >= 0, or -1 "
                            "for a dynamic dim)",
                            what, v->name, d, dim->dim_value);
            v->dims[d].value = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && dim->dim_param[0] && strcmp(dim->dim_param, "?") != 0) {
            /* "" and "?" name nothing: a dynamic dim without a name, which
             * gets one of its own (onnx/shape.h), not one shared by all */
            if (copy_str(r, &v->dims[d].param, dim->dim_param))
                return DT_ENOMEM;
        }
    }
    return 0;
}

/* The attribute's type: the type field, or (files written before it was
 * required) the field that is set. */
static int attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return a->type;
    if (a->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->has_i)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static int read_attr(reader *r, int i, size_t k, const Onnx__AttributeProto *a, dt_ox_attr *at)
{
    if (!a->name || !a->name[0])
        return node_fail(r, i, "attribute #%zu has no name", k);
    if (copy_str(r, &at->name, a->name))
        return DT_ENOMEM;
    switch (attr_type(a)) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        at->type = DT_OX_ATTR_FLOAT;
        at->f = a->f;
        return 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        at->type = DT_OX_ATTR_INT;
        at->i = a->i;
        return 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        at->type = DT_OX_ATTR_STRING;
        at->s = malloc(a->s.len + 1);
        if (!at->s)
            return oom(r);
        if (a->s.len)
            memcpy(at->s, a->s.data, a->s.len);
        at->s[a->s.len] = '\0';
        return 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!a->t)
            return node_fail(r, i, "attribute '%s' is a TENSOR without a tensor", at->name);
        at->type = DT_OX_ATTR_TENSOR;
        char label[300], where[600];
        snprintf(where, sizeof where, "node %s: attribute '%.200s'",
                 dt_ox_node_label(r->g, i, label, sizeof label), at->name);
        return dt_ox_tensor_from_proto(a->t, r->source, where, &at->t, r->e);
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        int ints = attr_type(a) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        size_t n = ints ? a->n_ints : a->n_floats;
        if (n > DT_OX_MAX_ATTR_INTS)
            return node_fail(r, i, "attribute '%s' has %zu %s; at most %d are accepted", at->name, n,
                             ints ? "ints" : "floats", DT_OX_MAX_ATTR_INTS);
        at->type = ints ? DT_OX_ATTR_INTS : DT_OX_ATTR_FLOATS;
        at->n = (int)n;
        if (ints && !(at->ints = alloc_array(n, sizeof *at->ints)))
            return oom(r);
        if (!ints && !(at->floats = alloc_array(n, sizeof *at->floats)))
            return oom(r);
        for (size_t j = 0; j < n; j++)
            if (ints)
                at->ints[j] = a->ints[j];
            else
                at->floats[j] = a->floats[j];
        return 0;
    }
    default:
        /* graphs (read_graph.c makes a body it read DT_OX_ATTR_GRAPH), lists
         * of strings or tensors, types */
        at->type = DT_OX_ATTR_OTHER;
        return 0;
    }
}

/* Tensor names, each as scope sc names it ("" stays ""). */
static int read_strings(reader *r, char *const *src, size_t n, const dt_ox_scope *sc, char ***dst,
                        int *ndst)
{
    *dst = alloc_array(n, sizeof **dst);
    if (!*dst)
        return oom(r);
    *ndst = (int)n;
    for (size_t j = 0; j < n; j++)
        if (!((*dst)[j] = dt_ox_scope_name(sc, src[j] ? src[j] : "")))
            return oom(r);
    return 0;
}

int dt_ox_read_node(reader *r, int i, const Onnx__NodeProto *p, const dt_ox_scope *sc, size_t k)
{
    dt_ox_node *n = &r->g->nodes[i];
    /* name and op type first: every message below names the node */
    if (copy_str(r, &n->op_type, p->op_type))
        return DT_ENOMEM;
    if (!(n->name = dt_ox_scope_node_name(sc, p->name, n->op_type, k)))
        return oom(r);
    if (!n->op_type[0])
        return node_fail(r, i, "no op_type");
    const char *dom = p->domain ? p->domain : "";
    if (!strcmp(dom, "ai.onnx"))
        dom = ""; /* one spelling of the default domain */
    /* any other domain is read too: an op of a domain without shape rules
     * takes its shapes from value_info or has unknown ones (onnx/shape.h) */
    if (copy_str(r, &n->domain, dom))
        return DT_ENOMEM;
    if (p->n_input > DT_OX_MAX_IO || p->n_output > DT_OX_MAX_IO)
        return node_fail(r, i, "%zu inputs and %zu outputs; at most %d of each are accepted",
                         p->n_input, p->n_output, DT_OX_MAX_IO);
    int rc = read_strings(r, p->input, p->n_input, sc, &n->inputs, &n->ninputs);
    if (!rc)
        rc = read_strings(r, p->output, p->n_output, sc, &n->outputs, &n->noutputs);
    if (rc)
        return rc;
    n->attrs = alloc_array(p->n_attribute, sizeof *n->attrs);
    if (!n->attrs)
        return oom(r);
    n->nattrs = (int)p->n_attribute;
    for (size_t a = 0; a < p->n_attribute; a++)
        if ((rc = read_attr(r, i, a, p->attribute[a], &n->attrs[a])))
            return rc;
    return 0;
}

/* ---- the model ------------------------------------------------------------ */

static int read_model(reader *r, const Onnx__ModelProto *m)
{
    dt_ox_graph *g = r->g;
    if (!m->graph)
        return fail(r, DT_EINVAL, "not an ONNX model (the ModelProto has no graph)");
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    if (g->ir_version < DT_OX_IR_MIN)
        return fail(r, DT_EINVAL, "IR version %" PRId64 "%s is not accepted (at least %d)",
                    g->ir_version, m->has_ir_version ? "" : " (none given)", DT_OX_IR_MIN);
    if (g->ir_version > DT_OX_IR_KNOWN &&
        warn(r, "IR version %" PRId64 " is newer than dtune knows (%d): read as IR %d, its new "
                "fields skipped",
             g->ir_version, DT_OX_IR_KNOWN, DT_OX_IR_KNOWN))
        return DT_ENOMEM;
    int found = 0;
    for (size_t i = 0; i < m->n_opset_import && !found; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *d = o->domain ? o->domain : "";
        if (!d[0] || !strcmp(d, "ai.onnx")) {
            found = 1;
            g->opset = o->has_version ? o->version : 0;
        }
    }
    if (!found)
        return fail(r, DT_EINVAL, "no opset_import for the default domain (\"\" or \"ai.onnx\")");
    if (g->opset < DT_OX_OPSET_MIN)
        return fail(r, DT_EINVAL,
                    "opset %" PRId64 " of the default domain is older than dtune reads "
                    "(%d..%d; export the model with opset %d or newer)",
                    g->opset, DT_OX_OPSET_MIN, DT_OX_OPSET_KNOWN, DT_OX_OPSET_MIN);
    if (g->opset > DT_OX_OPSET_KNOWN &&
        warn(r, "opset %" PRId64 " of the default domain is newer than dtune knows (%d): every op "
                "is read by its opset-%d definition",
             g->opset, DT_OX_OPSET_KNOWN, DT_OX_OPSET_KNOWN))
        return DT_ENOMEM;
    const char *pv = m->producer_version ? m->producer_version : "";
    size_t plen = strlen(m->producer_name ? m->producer_name : "") + 1 + strlen(pv) + 1;
    g->producer = malloc(plen);
    if (!g->producer)
        return oom(r);
    snprintf(g->producer, plen, "%s%s%s", m->producer_name ? m->producer_name : "", pv[0] ? " " : "",
             pv);
    return dt_ox_read_graph(r, m->graph);
}

int dt_ox_read(const void *buf, size_t len, const char *source, dt_ox_graph **out, dt_err *e)
{
    *out = NULL;
    if (!source)
        source = "<onnx>";
    if (len == 0)
        return dt_errf(e, DT_EINVAL, "%s: empty file, not an ONNX model", source);
    uint8_t *trimmed;
    size_t tlen;
    int rc = dt_ox_trim(buf, len, source, &trimmed, &tlen, e);
    if (rc)
        return rc;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, tlen, trimmed ? trimmed : (const uint8_t *)"");
    free(trimmed);
    if (!m) /* the trimmed copy is valid protobuf: only memory can be missing */
        return dt_errf(e, DT_ENOMEM, "%s: protobuf-c could not unpack the model (out of memory)",
                       source);
    dt_ox_graph *g = calloc(1, sizeof *g);
    reader r = {source, e, g};
    if (!g || !(g->source = strdup(source)))
        rc = oom(&r);
    else
        rc = read_model(&r, m);
    onnx__model_proto__free_unpacked(m, NULL);
    if (rc) {
        dt_ox_graph_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* ---- files ---------------------------------------------------------------- */

/* A regular file is mapped, not read: the walker skips the weights without
 * touching their pages, so a 2 GB model costs the pages of its structure.
 * (common/file.h's dt_read_file would read all of it into the heap.)  It is
 * opened by common/file.h's dt_open_regular, the one checked opening of a
 * user's file: a FIFO, a device (/dev/zero), a socket or a directory is
 * refused before a byte is read.  A file truncated by someone else while
 * mapped would raise SIGBUS; dtune does not guard against concurrent writers
 * of its inputs. */
int dt_ox_read_file(const char *path, dt_ox_graph **out, dt_err *e)
{
    *out = NULL;
    int fd;
    int64_t size;
    int rc = dt_open_regular(path, &fd, &size, e);
    if (rc == DT_ENOTFOUND)
        /* a path that names no file is bad input, not a failure of the
         * machine: the CLI exits 2 for it (so for a non-regular file) */
        e->code = rc = DT_EINVAL;
    if (rc)
        return rc;
    if (size > DT_OX_MAX_FILE_BYTES) {
        close(fd);
        return dt_errf(e, DT_EINVAL, "%s is %lld bytes; at most %" PRId64 " are accepted", path,
                       (long long)size, (int64_t)DT_OX_MAX_FILE_BYTES);
    }
    if (size == 0) {
        close(fd);
        return dt_ox_read("", 0, path, out, e);
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return dt_errf(e, DT_EIO, "cannot read %s: %s", path, strerror(err));
    rc = dt_ox_read(map, (size_t)size, path, out, e);
    munmap(map, (size_t)size);
    return rc;
}
