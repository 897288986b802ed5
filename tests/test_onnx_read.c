/* onnx/read: ModelProtos packed here with protobuf-c read back into a
 * dt_ox_graph (nodes, attributes, declared shapes, initializer values);
 * weights never copied; every kind of bad input refused with a message
 * naming the file, and the node where one is at fault. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "onnx/graph.h"
#include "onnx/read_internal.h"
#include "onnx/shape.h"
#include "tests/dt_test.h"

/* ---- building models ------------------------------------------------------ */

/* Everything a test builds is allocated here and freed by free_all(). */
static void *allocs[4096];
static int nallocs;

static void *talloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    CU_ASSERT_FATAL(p != NULL && nallocs < (int)(sizeof allocs / sizeof allocs[0]));
    allocs[nallocs++] = p;
    return p;
}

static void free_all(void)
{
    while (nallocs)
        free(allocs[--nallocs]);
}

#define LIST(...) ((void *[]){__VA_ARGS__, NULL})
#define STRS(...) ((const char *[]){__VA_ARGS__, NULL})

/* A NULL-terminated list as a protobuf-c array and its count. */
static void *array(void *const *list, size_t *n)
{
    *n = 0;
    while (list && list[*n])
        (*n)++;
    void **a = talloc((*n + 1) * sizeof *a); /* never 0 bytes: gcc -O2 -Warray-bounds */
    for (size_t i = 0; i < *n; i++)
        a[i] = list[i];
    return a;
}

static char *str(const char *s) { return s ? strcpy(talloc(strlen(s) + 1), s) : NULL; }

/* dims: "N" a dim_value, "?" no value, anything else a dim_param; NULL: no
 * shape at all. */
static Onnx__ValueInfoProto *vi(const char *name, int elem, const char *const *dims)
{
    Onnx__ValueInfoProto *v = talloc(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = str(name);
    Onnx__TypeProto *tp = talloc(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = talloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    if (!dims)
        return v;
    Onnx__TensorShapeProto *sh = talloc(sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    while (dims[sh->n_dim])
        sh->n_dim++;
    sh->dim = talloc(sh->n_dim * sizeof *sh->dim);
    for (size_t i = 0; i < sh->n_dim; i++) {
        Onnx__TensorShapeProto__Dimension *d = talloc(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i][0] >= '0' && dims[i][0] <= '9') {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = strtoll(dims[i], NULL, 10);
        } else if (strcmp(dims[i], "?")) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = str(dims[i]);
        }
        sh->dim[i] = d;
    }
    tt->shape = sh;
    return v;
}

static Onnx__TensorProto *tensor(const char *name, int dtype, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = talloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = str(name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = talloc((size_t)rank * sizeof *t->dims);
    if (rank)
        memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    return t;
}

static Onnx__TensorProto *tensor_i64(const char *name, int n, const int64_t *vals)
{
    Onnx__TensorProto *t = tensor(name, DT_OX_INT64, 1, (int64_t[]){n});
    t->n_int64_data = (size_t)n;
    t->int64_data = talloc((size_t)n * sizeof *t->int64_data);
    memcpy(t->int64_data, vals, (size_t)n * sizeof *vals);
    return t;
}

static void set_raw(Onnx__TensorProto *t, const void *bytes, size_t n)
{
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = memcpy(talloc(n), bytes, n);
}

static Onnx__AttributeProto *attr(const char *name, int type)
{
    Onnx__AttributeProto *a = talloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = str(name);
    a->has_type = 1;
    a->type = type;
    return a;
}

static Onnx__NodeProto *node(const char *name, const char *op, const char *domain,
                             const char *const *in, const char *const *out, void *const *attrs)
{
    Onnx__NodeProto *n = talloc(sizeof *n);
    onnx__node_proto__init(n);
    n->name = str(name);
    n->op_type = str(op);
    n->domain = str(domain);
    n->input = array((void *const *)in, &n->n_input);
    n->output = array((void *const *)out, &n->n_output);
    n->attribute = array(attrs, &n->n_attribute);
    return n;
}

static Onnx__GraphProto *graph(void *const *nodes, void *const *inits, void *const *inputs,
                               void *const *outputs)
{
    Onnx__GraphProto *g = talloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = str("g");
    g->node = array(nodes, &g->n_node);
    g->initializer = array(inits, &g->n_initializer);
    g->input = array(inputs, &g->n_input);
    g->output = array(outputs, &g->n_output);
    return g;
}

/* A ModelProto: IR version ir, one opset import (domain, version) unless
 * domain is NULL. */
static Onnx__ModelProto *model(int64_t ir, const char *domain, int64_t opset, Onnx__GraphProto *g)
{
    Onnx__ModelProto *m = talloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = ir;
    m->producer_name = str("test");
    m->producer_version = str("1.0");
    m->graph = g;
    if (domain) {
        Onnx__OperatorSetIdProto *o = talloc(sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = str(domain);
        o->has_version = 1;
        o->version = opset;
        m->opset_import = array(LIST(o), &m->n_opset_import);
    }
    return m;
}

static uint8_t *pack(const Onnx__ModelProto *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *b = talloc(*len);
    onnx__model_proto__pack(m, b);
    return b;
}

/* A one-node graph (x -> Relu -> y) in a model with the given versions. */
static Onnx__ModelProto *tiny(int64_t ir, const char *domain, int64_t opset)
{
    return model(ir, domain, opset,
                 graph(LIST(node("r", "Relu", "", STRS("x"), STRS("y"), NULL)), NULL,
                       LIST(vi("x", DT_OX_FLOAT, STRS("n", "4"))),
                       LIST(vi("y", DT_OX_FLOAT, STRS("n", "4")))));
}

/* The model every round-trip check reads (see test_roundtrip). */
static Onnx__ModelProto *rich(void)
{
    static const int64_t shape_vals[] = {0, -1, 64};
    Onnx__TensorProto *w = tensor("w", DT_OX_FLOAT, 2, (int64_t[]){128, 64});
    Onnx__TensorProto *shape = tensor_i64("shape", 3, shape_vals);
    Onnx__TensorProto *raw_i = tensor("raw_i", DT_OX_INT64, 1, (int64_t[]){2});
    set_raw(raw_i, "\x05\0\0\0\0\0\0\0\xfe\xff\xff\xff\xff\xff\xff\xff", 16); /* 5, -2 */
    Onnx__TensorProto *raw_f = tensor("raw_f", DT_OX_FLOAT, 1, (int64_t[]){2});
    set_raw(raw_f, "\0\0\xc0\x3f\0\0\0\xc0", 8); /* 1.5, -2 */
    Onnx__TensorProto *half = tensor("half", DT_OX_FLOAT16, 1, (int64_t[]){2});
    half->n_int32_data = 2;
    half->int32_data = talloc(2 * sizeof(int32_t));
    half->int32_data[0] = 0x3c00; /* 1.0 */
    half->int32_data[1] = 0xc100; /* -2.5 */
    Onnx__TensorProto *bf = tensor("bf", DT_OX_BFLOAT16, 0, NULL);
    set_raw(bf, "\xc0\x3f", 2); /* 1.5 */
    Onnx__TensorProto *d = tensor("d", DT_OX_DOUBLE, 1, (int64_t[]){1});
    d->n_double_data = 1;
    d->double_data = talloc(sizeof(double));
    d->double_data[0] = 0.125;
    Onnx__TensorProto *u8 = tensor("u8", DT_OX_UINT8, 1, (int64_t[]){3});
    set_raw(u8, "\x01\xff\x80", 3);
    Onnx__TensorProto *i8 = tensor("i8", DT_OX_INT8, 1, (int64_t[]){2});
    set_raw(i8, "\xff\x80", 2);
    Onnx__TensorProto *b = tensor("b", DT_OX_BOOL, 1, (int64_t[]){2});
    b->n_int32_data = 2;
    b->int32_data = talloc(2 * sizeof(int32_t));
    b->int32_data[1] = 1;
    Onnx__TensorProto *u64 = tensor("u64", DT_OX_UINT64, 1, (int64_t[]){1});
    u64->n_uint64_data = 1;
    u64->uint64_data = talloc(sizeof(uint64_t));
    u64->uint64_data[0] = 7;
    Onnx__TensorProto *empty = tensor("empty", DT_OX_INT64, 1, (int64_t[]){0});
    Onnx__TensorProto *big = tensor("big", DT_OX_FLOAT, 1, (int64_t[]){65});
    big->n_float_data = 65; /* one more than DT_OX_MAX_VALUES: dropped */
    big->float_data = talloc(65 * sizeof(float));
    Onnx__TensorProto *str_t = tensor("names", DT_OX_STRING, 1, (int64_t[]){1});
    str_t->n_string_data = 1;
    str_t->string_data = talloc(sizeof(ProtobufCBinaryData));
    str_t->string_data[0].len = 1;
    str_t->string_data[0].data = (uint8_t *)str("a");

    Onnx__AttributeProto *alpha = attr("alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    alpha->has_f = 1;
    alpha->f = 0.5f;
    Onnx__AttributeProto *transb = attr("transB", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    transb->has_i = 1;
    transb->i = -3;
    Onnx__AttributeProto *mode = attr("mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    mode->has_s = 1;
    mode->s.len = 4;
    mode->s.data = (uint8_t *)str("tanh");
    Onnx__AttributeProto *perm = attr("perm", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    perm->n_ints = 3;
    perm->ints = talloc(3 * sizeof(int64_t));
    perm->ints[0] = 2, perm->ints[1] = 0, perm->ints[2] = 1;
    Onnx__AttributeProto *scales = attr("scales", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    scales->n_floats = 2;
    scales->floats = talloc(2 * sizeof(float));
    scales->floats[0] = 1.0f, scales->floats[1] = 0.25f;
    Onnx__AttributeProto *body = attr("body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    body->g = graph(LIST(node("inner", "Relu", "", STRS("a"), STRS("b"), NULL)), NULL, NULL, NULL);
    Onnx__AttributeProto *value = attr("value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    value->t = tensor_i64("", 2, (int64_t[]){1, 2});
    /* no type field (as old exporters wrote): inferred from the field set */
    Onnx__AttributeProto *old = attr("axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED);
    old->has_type = 0;
    old->has_i = 1;
    old->i = 1;

    Onnx__GraphProto *g = graph(
        LIST(node("mm", "MatMul", "", STRS("x", "w"), STRS("y"), NULL),
             node("", "Reshape", "ai.onnx", STRS("y", "shape"), STRS("z"), NULL),
             node("c", "Constant", NULL, NULL, STRS("k"), LIST(value)),
             node("all", "Attrs", "", STRS("z", "", "k"), STRS("o1", "o2"),
                  LIST(alpha, transb, mode, perm, scales, body, old)),
             node("fm", "FusedMatMul", "com.microsoft", STRS("o1", "w"), STRS("out"), NULL)),
        LIST(w, shape, raw_i, raw_f, half, bf, d, u8, i8, b, u64, empty, big, str_t),
        LIST(vi("x", DT_OX_FLOAT, STRS("batch", "128", "?")), vi("w", DT_OX_FLOAT, STRS("128", "64")),
             vi("mask", DT_OX_INT64, NULL)),
        LIST(vi("out", DT_OX_FLOAT, STRS("batch", "64"))));
    g->value_info = array(LIST(vi("y", DT_OX_FLOAT, STRS("batch", "?", "64"))), &g->n_value_info);
    return model(8, "", 13, g);
}

/* Reads buf; 0 or the error code, with the graph in *g. */
static int read_buf(const void *buf, size_t len, dt_ox_graph **g, dt_err *e)
{
    return dt_ox_read(buf, len, "t.onnx", g, e);
}

/* Packs m and expects reading it to fail with DT_EINVAL and a message that
 * starts with "t.onnx: " and contains want. */
static void expect_fail(const Onnx__ModelProto *m, const char *want)
{
    size_t len;
    uint8_t *b = pack(m, &len);
    dt_ox_graph *g = NULL;
    dt_err e;
    int rc = read_buf(b, len, &g, &e);
    CU_ASSERT_EQUAL(rc, DT_EINVAL);
    CU_ASSERT_PTR_NULL(g);
    if (rc == 0)
        dt_ox_graph_free(g);
    else if (strncmp(e.msg, "t.onnx: ", 8) || !strstr(e.msg, want)) {
        fprintf(stderr, "\nwanted '%s' in: %s\n", want, e.msg);
        CU_FAIL("message");
    }
}

/* ---- round trip ----------------------------------------------------------- */

static const dt_ox_tensor *init(const dt_ox_graph *g, const char *name)
{
    const dt_ox_tensor *t = dt_ox_init_find(g, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t;
}

static void check_values_and_dims(const dt_ox_graph *g)
{
    const dt_ox_tensor *t = init(g, "w");
    CU_ASSERT_EQUAL(t->elem_type, DT_OX_FLOAT);
    CU_ASSERT_EQUAL(t->rank, 2);
    CU_ASSERT_EQUAL(t->dims[0], 128);
    CU_ASSERT_EQUAL(t->numel, 128 * 64);
    CU_ASSERT_EQUAL(t->has_values, 0);
    t = init(g, "shape");
    CU_ASSERT_FATAL(t->has_values && t->ivals && !t->fvals);
    CU_ASSERT(t->ivals[0] == 0 && t->ivals[1] == -1 && t->ivals[2] == 64);
    t = init(g, "raw_i");
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->ivals[0] == 5 && t->ivals[1] == -2);
    t = init(g, "raw_f");
    CU_ASSERT_FATAL(t->has_values && t->fvals && !t->ivals);
    CU_ASSERT(t->fvals[0] == 1.5 && t->fvals[1] == -2.0);
    t = init(g, "half");
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->fvals[0] == 1.0 && t->fvals[1] == -2.5);
    t = init(g, "bf");
    CU_ASSERT_EQUAL(t->rank, 0);
    CU_ASSERT_EQUAL(t->numel, 1);
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->fvals[0] == 1.5);
    t = init(g, "d");
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->fvals[0] == 0.125);
    t = init(g, "u8");
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->ivals[0] == 1 && t->ivals[1] == 255 && t->ivals[2] == 128);
    t = init(g, "i8");
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->ivals[0] == -1 && t->ivals[1] == -128);
    t = init(g, "b");
    CU_ASSERT_FATAL(t->has_values);
    CU_ASSERT(t->ivals[0] == 0 && t->ivals[1] == 1);
    t = init(g, "u64");
    CU_ASSERT(t->has_values && t->ivals[0] == 7);
    t = init(g, "empty"); /* zero elements: all of them are present */
    CU_ASSERT(t->numel == 0 && t->has_values == 1);
    t = init(g, "big");
    CU_ASSERT(t->numel == 65 && t->has_values == 0 && !t->fvals && t->dims[0] == 65);
    t = init(g, "names");
    CU_ASSERT(t->elem_type == DT_OX_STRING && t->has_values == 0);
    CU_ASSERT_PTR_NULL(dt_ox_init_find(g, "x"));
}

static void check_io(const dt_ox_graph *g)
{
    /* w is an initializer too: not an input */
    CU_ASSERT_EQUAL_FATAL(g->ninputs, 2);
    const dt_ox_value *x = &g->inputs[0];
    CU_ASSERT_STRING_EQUAL(x->name, "x");
    CU_ASSERT_EQUAL(x->elem_type, DT_OX_FLOAT);
    CU_ASSERT_EQUAL_FATAL(x->rank, 3);
    CU_ASSERT_STRING_EQUAL(x->dims[0].param, "batch");
    CU_ASSERT(x->dims[1].param == NULL && x->dims[1].value == 128);
    CU_ASSERT(x->dims[2].param == NULL && x->dims[2].value == -1);
    CU_ASSERT_STRING_EQUAL(g->inputs[1].name, "mask");
    CU_ASSERT_EQUAL(g->inputs[1].rank, -1);
    CU_ASSERT_EQUAL(g->inputs[1].elem_type, DT_OX_INT64);
    CU_ASSERT_EQUAL_FATAL(g->noutputs, 1);
    CU_ASSERT_STRING_EQUAL(g->outputs[0].name, "out");
    CU_ASSERT_EQUAL_FATAL(g->nvalue_infos, 1);
    CU_ASSERT_EQUAL(g->value_infos[0].rank, 3);
    CU_ASSERT_EQUAL(g->value_infos[0].dims[2].value, 64);
}

static void check_nodes(const dt_ox_graph *g)
{
    CU_ASSERT_EQUAL_FATAL(g->nnodes, 5);
    const dt_ox_node *n = &g->nodes[0];
    CU_ASSERT_STRING_EQUAL(n->name, "mm");
    CU_ASSERT_STRING_EQUAL(n->op_type, "MatMul");
    CU_ASSERT_STRING_EQUAL(n->domain, "");
    CU_ASSERT(n->ninputs == 2 && !strcmp(n->inputs[1], "w"));
    CU_ASSERT(n->noutputs == 1 && !strcmp(n->outputs[0], "y"));
    CU_ASSERT_STRING_EQUAL(g->nodes[1].name, "");
    CU_ASSERT_STRING_EQUAL(g->nodes[1].domain, ""); /* "ai.onnx" is the default domain */
    const dt_ox_attr *a = dt_ox_attr_find(&g->nodes[2], "value");
    CU_ASSERT_FATAL(a && a->type == DT_OX_ATTR_TENSOR);
    CU_ASSERT(a->t.has_values && a->t.numel == 2 && a->t.ivals[1] == 2 && !strcmp(a->t.name, ""));
    n = &g->nodes[3];
    CU_ASSERT(n->ninputs == 3 && !strcmp(n->inputs[1], "")); /* an omitted optional input */
    CU_ASSERT_EQUAL(n->nattrs, 7);
    CU_ASSERT_PTR_NULL(dt_ox_attr_find(n, "nope"));
    a = dt_ox_attr_find(n, "alpha");
    CU_ASSERT(a && a->type == DT_OX_ATTR_FLOAT && a->f == 0.5 && !a->s);
    a = dt_ox_attr_find(n, "transB");
    CU_ASSERT(a && a->type == DT_OX_ATTR_INT && a->i == -3);
    a = dt_ox_attr_find(n, "mode");
    CU_ASSERT(a && a->type == DT_OX_ATTR_STRING && !strcmp(a->s, "tanh"));
    a = dt_ox_attr_find(n, "perm");
    CU_ASSERT(a && a->type == DT_OX_ATTR_INTS && a->n == 3 && a->ints[0] == 2 && a->ints[2] == 1);
    a = dt_ox_attr_find(n, "scales");
    CU_ASSERT(a && a->type == DT_OX_ATTR_FLOATS && a->n == 2 && a->floats[1] == 0.25);
    a = dt_ox_attr_find(n, "body");
    CU_ASSERT(a && a->type == DT_OX_ATTR_OTHER);
    a = dt_ox_attr_find(n, "axis");
    CU_ASSERT(a && a->type == DT_OX_ATTR_INT && a->i == 1);
    CU_ASSERT_STRING_EQUAL(g->nodes[4].domain, "com.microsoft");
}

static void test_roundtrip(void)
{
    size_t len;
    uint8_t *b = pack(rich(), &len);
    dt_ox_graph *g = NULL;
    dt_err e;
    int rc = read_buf(b, len, &g, &e);
    if (rc)
        fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_STRING_EQUAL(g->source, "t.onnx");
    CU_ASSERT_EQUAL(g->ir_version, 8);
    CU_ASSERT_EQUAL(g->opset, 13);
    CU_ASSERT_STRING_EQUAL(g->producer, "test 1.0");
    CU_ASSERT_STRING_EQUAL(g->graph_name, "g");
    check_values_and_dims(g);
    check_io(g);
    check_nodes(g);
    char label[300];
    CU_ASSERT_STRING_EQUAL(dt_ox_node_label(g, 0, label, sizeof label), "'mm' (#0, MatMul)");
    CU_ASSERT_STRING_EQUAL(dt_ox_node_label(g, 1, label, sizeof label), "#1 (Reshape)");
    dt_ox_graph_free(g);
    free_all();
}

static void test_type_names(void)
{
    CU_ASSERT_STRING_EQUAL(dt_ox_type_name(DT_OX_FLOAT), "float");
    CU_ASSERT_STRING_EQUAL(dt_ox_type_name(DT_OX_INT64), "int64");
    CU_ASSERT_STRING_EQUAL(dt_ox_type_name(DT_OX_BFLOAT16), "bfloat16");
    CU_ASSERT_STRING_EQUAL(dt_ox_type_name(DT_OX_FLOAT16), "float16");
    CU_ASSERT_STRING_EQUAL(dt_ox_type_name(42), "type 42");
    CU_ASSERT_STRING_EQUAL(dt_ox_type_name(99), "type 99");
    CU_ASSERT_PTR_NOT_NULL(dt_ox_type_name(-5));
    CU_ASSERT_PTR_NOT_NULL(dt_ox_type_name(1000));
}

/* ---- weights are never loaded ---------------------------------------------- */

static size_t put_varint(uint8_t *b, uint64_t v)
{
    size_t i = 0;
    for (; v >= 0x80; v >>= 7)
        b[i++] = (uint8_t)(v | 0x80);
    b[i++] = (uint8_t)v;
    return i;
}

static size_t put_key(uint8_t *b, unsigned num, unsigned wt) { return put_varint(b, num << 3 | wt); }

/* A model whose initializer 'big' (float [25, 1024, 1024], packed dims) has
 * 100 MB of raw_data that the reader may not touch: the payload's pages are
 * mapped PROT_NONE, so reading one byte of them crashes the test.  A
 * value_info entry follows the payload, so the walk must resume after it. */
static void test_big_payload_untouched(void)
{
    const uint64_t payload = (uint64_t)25 * 1024 * 1024 * 4;
    uint8_t head[64], *p = head;
    p += put_key(p, 1, 2); /* dims, packed */
    uint8_t dims[16];
    size_t nd = put_varint(dims, 25);
    nd += put_varint(dims + nd, 1024);
    nd += put_varint(dims + nd, 1024);
    p += put_varint(p, nd);
    memcpy(p, dims, nd), p += nd;
    p += put_key(p, 2, 0), p += put_varint(p, DT_OX_FLOAT);
    p += put_key(p, 8, 2), p += put_varint(p, 3), memcpy(p, "big", 3), p += 3;
    p += put_key(p, 9, 2), p += put_varint(p, payload);
    size_t nhead = (size_t)(p - head);

    Onnx__GraphProto *gp = graph(LIST(node("mm", "MatMul", "", STRS("x", "big"), STRS("y"), NULL)),
                                 NULL, LIST(vi("x", DT_OX_FLOAT, STRS("n", "1048576"))),
                                 LIST(vi("y", DT_OX_FLOAT, STRS("n", "25"))));
    size_t ng = onnx__graph_proto__get_packed_size(gp);
    Onnx__ValueInfoProto *tail_vi = vi("t", DT_OX_FLOAT, STRS("7"));
    uint8_t tail[256];
    size_t ntail = put_key(tail, 13, 2);
    size_t nvi = onnx__value_info_proto__get_packed_size(tail_vi);
    ntail += put_varint(tail + ntail, nvi);
    onnx__value_info_proto__pack(tail_vi, tail + ntail);
    ntail += nvi;

    uint64_t tensor_len = nhead + payload;
    uint8_t init_key[16];
    size_t ninit = put_key(init_key, 5, 2);
    ninit += put_varint(init_key + ninit, tensor_len);
    uint64_t graph_len = ng + ninit + tensor_len + ntail;
    Onnx__ModelProto *m = model(8, "", 13, NULL);
    size_t nm = onnx__model_proto__get_packed_size(m);
    uint8_t graph_key[16];
    size_t ngk = put_key(graph_key, 7, 2);
    ngk += put_varint(graph_key + ngk, graph_len);
    size_t total = nm + ngk + (size_t)graph_len;

    uint8_t *buf = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(buf != MAP_FAILED);
    size_t at = 0;
    onnx__model_proto__pack(m, buf), at += nm;
    memcpy(buf + at, graph_key, ngk), at += ngk;
    onnx__graph_proto__pack(gp, buf + at), at += ng;
    memcpy(buf + at, init_key, ninit), at += ninit;
    memcpy(buf + at, head, nhead), at += nhead;
    size_t pay = at;
    at += payload;
    memcpy(buf + at, tail, ntail), at += ntail;
    CU_ASSERT_EQUAL_FATAL(at, total);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t lo = (pay + page - 1) / page * page, hi = (pay + payload) / page * page;
    CU_ASSERT_EQUAL_FATAL(mprotect(buf + lo, hi - lo, PROT_NONE), 0);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dt_err e;
    uint8_t *trimmed;
    size_t tlen;
    CU_ASSERT_EQUAL_FATAL(dt_ox_trim(buf, total, "big.onnx", &trimmed, &tlen, &e), 0);
    CU_ASSERT(tlen < 1024); /* of a 100 MB model */
    free(trimmed);
    dt_ox_graph *g = NULL;
    int rc = dt_ox_read(buf, total, "big.onnx", &g, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc)
        fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9 < 1.0);
    const dt_ox_tensor *t = init(g, "big");
    CU_ASSERT(t->rank == 3 && t->dims[0] == 25 && t->dims[2] == 1024);
    CU_ASSERT(t->numel == 25 * 1024 * 1024 && t->has_values == 0 && !t->fvals);
    CU_ASSERT(g->nvalue_infos == 1 && !strcmp(g->value_infos[0].name, "t"));
    CU_ASSERT(g->ninputs == 1 && g->nnodes == 1);
    dt_ox_graph_free(g);
    munmap(buf, total);
    free_all();
}

/* A Constant's big tensor loses its payload too; a big initializer's
 * float_data is not copied into the trimmed model. */
static void test_big_typed_payload_dropped(void)
{
    Onnx__TensorProto *w = tensor("w", DT_OX_FLOAT, 2, (int64_t[]){1000, 100});
    w->n_float_data = 100000;
    w->float_data = talloc(100000 * sizeof(float));
    Onnx__AttributeProto *value = attr("value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    value->t = tensor("", DT_OX_INT64, 1, (int64_t[]){100000});
    value->t->n_int64_data = 100000;
    value->t->int64_data = talloc(100000 * sizeof(int64_t));
    Onnx__ModelProto *m =
        model(8, "", 13,
              graph(LIST(node("c", "Constant", "", NULL, STRS("k"), LIST(value)),
                         node("mm", "MatMul", "", STRS("k", "w"), STRS("y"), NULL)),
                    LIST(w), NULL, LIST(vi("y", DT_OX_FLOAT, NULL))));
    size_t len;
    uint8_t *b = pack(m, &len);
    CU_ASSERT(len > 500000);
    uint8_t *trimmed;
    size_t tlen;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_ox_trim(b, len, "t.onnx", &trimmed, &tlen, &e), 0);
    CU_ASSERT(tlen < 512);
    free(trimmed);
    dt_ox_graph *g = NULL;
    CU_ASSERT_EQUAL_FATAL(read_buf(b, len, &g, &e), 0);
    CU_ASSERT(g->inits[0].numel == 100000 && !g->inits[0].has_values);
    CU_ASSERT(g->nodes[0].attrs[0].t.numel == 100000 && !g->nodes[0].attrs[0].t.has_values);
    dt_ox_graph_free(g);
    free_all();
}

/* External data: the referenced file is never opened; dims and type are read. */
static void test_external_data(void)
{
    Onnx__TensorProto *w = tensor("w", DT_OX_FLOAT, 2, (int64_t[]){4096, 4096});
    Onnx__TensorProto *s = tensor("s", DT_OX_INT64, 1, (int64_t[]){4});
    Onnx__TensorProto *list[] = {w, s};
    for (int i = 0; i < 2; i++) {
        list[i]->has_data_location = 1;
        list[i]->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        Onnx__StringStringEntryProto *loc = talloc(sizeof *loc);
        onnx__string_string_entry_proto__init(loc);
        loc->key = str("location");
        loc->value = str("/nonexistent/dtune-weights.bin");
        list[i]->external_data = array(LIST(loc), &list[i]->n_external_data);
    }
    Onnx__ModelProto *m =
        model(8, "", 13,
              graph(LIST(node("mm", "MatMul", "", STRS("x", "w"), STRS("y"), NULL)), LIST(w, s),
                    LIST(vi("x", DT_OX_FLOAT, STRS("n", "4096"))), LIST(vi("y", DT_OX_FLOAT, NULL))));
    size_t len;
    uint8_t *b = pack(m, &len);
    dt_ox_graph *g = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(read_buf(b, len, &g, &e), 0);
    const dt_ox_tensor *t = init(g, "w");
    CU_ASSERT(t->elem_type == DT_OX_FLOAT && t->numel == 4096 * 4096 && !t->has_values);
    t = init(g, "s"); /* small, but its values are elsewhere */
    CU_ASSERT(t->elem_type == DT_OX_INT64 && t->numel == 4 && !t->has_values && !t->ivals);
    dt_ox_graph_free(g);
    free_all();
}

/* ---- bad input ------------------------------------------------------------- */

/* Reading must fail cleanly or succeed; never DT_ENOMEM (the walker lets
 * through only what protobuf-c accepts), never a crash (ASan watches). */
static int read_any(const uint8_t *b, size_t len, int *parse_fail)
{
    uint8_t *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees an over-read */
    if (len)
        memcpy(copy, b, len);
    dt_ox_graph *g = NULL;
    dt_err e;
    int rc = dt_ox_read(copy, len, "t.onnx", &g, &e);
    free(copy);
    if (rc == 0) {
        CU_ASSERT_PTR_NOT_NULL(g);
        dt_ox_graph_free(g);
    } else {
        CU_ASSERT_PTR_NULL(g);
        CU_ASSERT(rc == DT_EINVAL && !strncmp(e.msg, "t.onnx: ", 8));
        if (rc != DT_EINVAL)
            fprintf(stderr, "\n%s\n", e.msg);
        if (parse_fail && strstr(e.msg, "protobuf parse failed at byte "))
            (*parse_fail)++;
    }
    return rc;
}

static void test_truncated_everywhere(void)
{
    size_t len;
    uint8_t *b = pack(rich(), &len);
    int parse_fail = 0, ok = 0;
    for (size_t k = 0; k < len; k++)
        ok += read_any(b, k, &parse_fail) == 0;
    CU_ASSERT_EQUAL(read_any(b, len, NULL), 0);
    /* every cut inside the graph field breaks the protobuf itself */
    CU_ASSERT(parse_fail > (int)len / 2);
    CU_ASSERT(ok < 8);
    free_all();
}

static void test_garbage(void)
{
    uint64_t s = 0x9e3779b97f4a7c15u;
    uint8_t buf[512];
    for (int i = 0; i < 3000; i++) {
        size_t len = 1 + (size_t)(s % sizeof buf);
        for (size_t j = 0; j < len; j++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            buf[j] = (uint8_t)s;
        }
        read_any(buf, len, NULL);
    }
    /* one random byte at each position of a valid model */
    size_t len;
    uint8_t *b = pack(rich(), &len);
    uint8_t *m = talloc(len);
    for (size_t k = 0; k < len; k++) {
        memcpy(m, b, len);
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        m[k] = (uint8_t)s;
        read_any(m, len, NULL);
    }
    dt_ox_graph *g = NULL;
    dt_err e;
    const char *text = "{\"this\": \"is JSON\"}\n";
    CU_ASSERT_EQUAL(read_buf(text, strlen(text), &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "t.onnx: not an ONNX model (protobuf parse failed at byte 0"));
    /* valid protobuf, but no graph in it */
    CU_ASSERT_EQUAL(read_buf("\x08\x07", 2, &g, &e), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(e.msg, "t.onnx: not an ONNX model (the ModelProto has no graph)");
    free_all();
}

static void test_wire_errors(void)
{
    dt_ox_graph *g = NULL;
    dt_err e;
    /* graph (field 7) as a varint */
    CU_ASSERT_EQUAL(read_buf("\x08\x07\x38\x01", 4, &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at byte 2: ModelProto.graph (field 7) has wire type 0"));
    /* a length past the end */
    CU_ASSERT_EQUAL(read_buf("\x08\x07\x3a\x05\x0a", 5, &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at byte 2: field 7 of ModelProto claims 5 bytes, only 1 remain"));
    /* a group (wire type 3) */
    CU_ASSERT_EQUAL(read_buf("\x08\x07\x0b", 3, &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at byte 2: wire type 3"));
    /* a NUL inside a name */
    Onnx__ModelProto *m = tiny(8, "", 13);
    m->graph->node[0]->name = str("a");
    size_t len;
    uint8_t *b = pack(m, &len);
    uint8_t *at = memchr(b, 'a', len);
    CU_ASSERT_FATAL(at != NULL && at[-1] == 1);
    *at = 0;
    CU_ASSERT_EQUAL(read_buf(b, len, &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "NodeProto.name contains a NUL byte"));
    /* over-long but valid varints and unknown fields are fine */
    static const uint8_t padded[] = {0x08, 0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
                                     0xf8, 0x07, 0x01};
    CU_ASSERT_EQUAL(read_buf(padded, sizeof padded, &g, &e), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(e.msg, "t.onnx: not an ONNX model (the ModelProto has no graph)");
    free_all();
}

/* Reads m; 0 and the graph, or fails the test. */
static dt_ox_graph *read_ok(const Onnx__ModelProto *m)
{
    size_t len;
    uint8_t *b = pack(m, &len);
    dt_ox_graph *g = NULL;
    dt_err e;
    int rc = read_buf(b, len, &g, &e);
    if (rc)
        fprintf(stderr, "\n%s\n", e.msg);
    CU_ASSERT_EQUAL(rc, 0);
    return g;
}

static void test_versions(void)
{
    expect_fail(tiny(2, "", 13), "IR version 2 is not accepted (at least 3)");
    expect_fail(tiny(8, "", 10), "opset 10 of the default domain is older than dtune reads (11..28");
    expect_fail(tiny(8, NULL, 0), "no opset_import for the default domain");
    expect_fail(tiny(8, "com.microsoft", 1), "no opset_import for the default domain");
    /* issue 30: every IR version and opset current tools write is read
     * without a doubt: torch (IR 10, opset 17/18), onnx 1.18 (11, 23), 1.19
     * (12, 24), 1.20 (13, 25), the current onnx package (14, 28) */
    int64_t known[][2] = {{3, 11}, {9, 18}, {10, 18}, {11, 23}, {12, 24}, {13, 25}, {14, 28}};
    for (int i = 0; i < 7; i++) {
        dt_ox_graph *g = read_ok(tiny(known[i][0], i % 2 ? "ai.onnx" : "", known[i][1]));
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT(g->ir_version == known[i][0] && g->opset == known[i][1]);
        CU_ASSERT_EQUAL(g->nwarnings, 0);
        dt_ox_graph_free(g);
    }
    /* newer than dtune knows: read anyway, with a warning each */
    dt_ox_graph *g = read_ok(tiny(15, "", 29));
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(g->nwarnings, 2);
    CU_ASSERT_STRING_EQUAL(g->warnings[0], "t.onnx: IR version 15 is newer than dtune knows (14): "
                                           "read as IR 14, its new fields skipped");
    CU_ASSERT_STRING_EQUAL(g->warnings[1], "t.onnx: opset 29 of the default domain is newer than "
                                           "dtune knows (28): every op is read by its opset-28 "
                                           "definition");
    dt_ox_graph_free(g);
    Onnx__ModelProto *m = tiny(8, "", 13);
    m->has_ir_version = 0;
    expect_fail(m, "IR version 0 (none given)");
    m = tiny(8, "", 13);
    m->graph = NULL;
    expect_fail(m, "not an ONNX model (the ModelProto has no graph)");
    /* the element types IR 10 and 11 added (UINT4 21, INT4 22, FLOAT4E2M1
     * 23) in initializers: name, type and dims kept, no values read */
    Onnx__TensorProto *t4[3];
    for (int k = 0; k < 3; k++) {
        char name[8];
        snprintf(name, sizeof name, "w%d", 21 + k);
        t4[k] = tensor(name, 21 + k, 1, (int64_t[]){4});
        set_raw(t4[k], "\x12\x34", 2); /* 4 elements of 4 bits */
    }
    m = model(11, "", 18,
              graph(LIST(node("r", "Relu", "", STRS("x"), STRS("y"), NULL)),
                    LIST(t4[0], t4[1], t4[2]), LIST(vi("x", DT_OX_FLOAT, STRS("n", "4"))),
                    LIST(vi("y", DT_OX_FLOAT, STRS("n", "4")))));
    g = read_ok(m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (int k = 0; k < 3; k++) {
        char name[8];
        snprintf(name, sizeof name, "w%d", 21 + k);
        const dt_ox_tensor *w = init(g, name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        CU_ASSERT_EQUAL(w->elem_type, 21 + k);
        CU_ASSERT_EQUAL(w->numel, 4);
        CU_ASSERT_FALSE(w->has_values);
    }
    dt_ox_graph_free(g);
    free_all();
}

static void test_domains_and_nodes(void)
{
    Onnx__ModelProto *m = tiny(8, "", 13);
    Onnx__NodeProto *n = node("cu", "MyOp", "custom.ops", STRS("y"), STRS("z"), NULL);
    m->graph->node = array(LIST(m->graph->node[0], n), &m->graph->n_node);
    /* issue 30: a custom domain's op is read (its shapes come from value_info
     * or are unknown: onnx/shape.h), not refused */
    dt_ox_graph *g = read_ok(m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_STRING_EQUAL(g->nodes[1].domain, "custom.ops");
    dt_ox_graph_free(g);
    n->domain = str("com.microsoft");
    size_t len;
    uint8_t *b = pack(m, &len);
    g = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(read_buf(b, len, &g, &e), 0);
    CU_ASSERT_STRING_EQUAL(g->nodes[1].domain, "com.microsoft");
    dt_ox_graph_free(g);
    n->domain = str("");
    n->name = NULL;
    n->op_type = NULL;
    expect_fail(m, "t.onnx: node #1 (): no op_type");
    n->op_type = str("Wide");
    const char *many[DT_OX_MAX_IO + 2];
    for (int i = 0; i <= DT_OX_MAX_IO; i++)
        many[i] = "y";
    many[DT_OX_MAX_IO + 1] = NULL;
    n->input = array((void *const *)many, &n->n_input);
    expect_fail(m, "t.onnx: node #1 (Wide): 65 inputs and 1 outputs; at most 64 of each");
    n->input = array((void *const *)STRS("y"), &n->n_input);
    Onnx__AttributeProto *a = attr("pads", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = DT_OX_MAX_ATTR_INTS + 1;
    a->ints = talloc(a->n_ints * sizeof *a->ints);
    n->attribute = array(LIST(a), &n->n_attribute);
    expect_fail(m, "node #1 (Wide): attribute 'pads' has 1025 ints; at most 1024");
    a->name = NULL;
    expect_fail(m, "node #1 (Wide): attribute #0 has no name");
    free_all();
}

static void test_tensor_errors(void)
{
    Onnx__ModelProto *m = tiny(8, "", 13);
    Onnx__GraphProto *g = m->graph;
    g->initializer = array(LIST(tensor("neg", DT_OX_FLOAT, 2, (int64_t[]){-1, 3})), &g->n_initializer);
    expect_fail(m, "t.onnx: initializer 'neg': dim 0 is -1; dims must be >= 0");
    g->initializer[0] = tensor("huge", DT_OX_FLOAT, 2, (int64_t[]){INT64_C(1) << 62, 4});
    expect_fail(m, "initializer 'huge': its element count (4611686018427387904x4) overflows int64");
    int64_t d17[17];
    for (int i = 0; i < 17; i++)
        d17[i] = 1;
    g->initializer[0] = tensor("r17", DT_OX_FLOAT, 17, d17);
    expect_fail(m, "initializer 'r17': rank 17 exceeds the limit of 16");
    g->initializer[0] = tensor("", DT_OX_FLOAT, 1, (int64_t[]){1});
    expect_fail(m, "initializer #0 has no name");
    g->initializer[0] = tensor("i", DT_OX_INT64, 1, (int64_t[]){3});
    set_raw(g->initializer[0], "12345678", 8);
    expect_fail(m, "initializer 'i': raw_data has 8 bytes; 3 elements of int64 take 24");
    g->initializer[0] = tensor_i64("i", 2, (int64_t[]){1, 2});
    g->initializer[0]->dims[0] = 3;
    expect_fail(m, "initializer 'i': int64_data has 2 values; its dims hold 3");
    g->initializer = array(LIST(tensor("a", 1, 0, NULL), tensor("a", 1, 0, NULL)), &g->n_initializer);
    expect_fail(m, "initializer 'a': a second initializer of that name");
    /* a zero dim makes the count 0, however big the others */
    g->initializer = array(LIST(tensor("z", 1, 3, (int64_t[]){INT64_C(1) << 62, 4, 0})),
                           &g->n_initializer);
    size_t len;
    uint8_t *b = pack(m, &len);
    dt_ox_graph *gr = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(read_buf(b, len, &gr, &e), 0);
    CU_ASSERT(gr->inits[0].numel == 0 && gr->inits[0].has_values == 1); /* all 0 of them */
    dt_ox_graph_free(gr);
    /* the same rules for a Constant's tensor, named by its node */
    g->initializer = NULL;
    g->n_initializer = 0;
    Onnx__AttributeProto *v = attr("value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    v->t = tensor("", DT_OX_INT64, 1, (int64_t[]){-2});
    g->node = array(LIST(node("k", "Constant", "", NULL, STRS("c"), LIST(v))), &g->n_node);
    expect_fail(m, "t.onnx: node 'k' (#0, Constant): attribute 'value': dim 0 is -2");
    free_all();
}

static void test_value_errors(void)
{
    Onnx__ModelProto *m = tiny(8, "", 13);
    const char *r17[18];
    for (int i = 0; i < 17; i++)
        r17[i] = "2";
    r17[17] = NULL;
    m->graph->input[0] = vi("x", DT_OX_FLOAT, r17);
    expect_fail(m, "t.onnx: graph input 'x': rank 17 exceeds the limit of 16");
    m->graph->input[0] = vi("x", DT_OX_FLOAT, STRS("n"));
    m->graph->input[0]->type->tensor_type->shape->dim[0]->value_case =
        ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    m->graph->input[0]->type->tensor_type->shape->dim[0]->dim_value = -4;
    expect_fail(m, "graph input 'x': dim 0 is -4 (dim_value must be >= 0, or -1 for a dynamic "
                   "dim)");
    m->graph->input[0] = vi("", DT_OX_FLOAT, NULL);
    expect_fail(m, "graph input #0 has no name");
    free_all();
}

/* Dim i of value v set to a dim_value (param NULL) or a dim_param. */
static void set_dim(Onnx__ValueInfoProto *v, int i, int64_t value, const char *param)
{
    Onnx__TensorShapeProto__Dimension *d = v->type->tensor_type->shape->dim[i];
    d->value_case = param ? ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                          : ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    if (param) /* dim_value and dim_param share a union (a oneof) */
        d->dim_param = str(param);
    else
        d->dim_value = value;
}

/* issue 30: dim_value -1 (older Paddle exports), dim_param "?" and "" are
 * dynamic dims without a name, on inputs, outputs and value_info alike. */
static void test_unnamed_dims(void)
{
    Onnx__ModelProto *m = tiny(8, "", 13);
    Onnx__ValueInfoProto *x = vi("x", DT_OX_FLOAT, STRS("a", "b", "c", "d", "4"));
    set_dim(x, 0, -1, NULL);
    set_dim(x, 1, 0, "?");
    set_dim(x, 2, 0, "");
    set_dim(x, 3, 0, "h");
    m->graph->input[0] = x;
    Onnx__ValueInfoProto *y = vi("y", DT_OX_FLOAT, STRS("a", "4"));
    set_dim(y, 0, -1, NULL);
    m->graph->output[0] = y;
    dt_ox_graph *g = read_ok(m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const dt_ox_value *in = &g->inputs[0];
    CU_ASSERT_EQUAL_FATAL(in->rank, 5);
    for (int d = 0; d < 3; d++) {
        CU_ASSERT_PTR_NULL(in->dims[d].param);
        CU_ASSERT_EQUAL(in->dims[d].value, -1);
    }
    CU_ASSERT_STRING_EQUAL(in->dims[3].param, "h");
    CU_ASSERT_EQUAL(in->dims[4].value, 4);
    CU_ASSERT_EQUAL(g->outputs[0].dims[0].value, -1);
    CU_ASSERT_PTR_NULL(g->outputs[0].dims[0].param);
    /* each unnamed dim is a variable of its own: x_d0, x_d1, x_d2, then h */
    char **names = NULL;
    int n = 0;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_ox_graph_var_names(g, &names, &n, &e), 0);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    CU_ASSERT_STRING_EQUAL(names[0], "x_d0");
    CU_ASSERT_STRING_EQUAL(names[1], "x_d1");
    CU_ASSERT_STRING_EQUAL(names[2], "x_d2");
    CU_ASSERT_STRING_EQUAL(names[3], "h");
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    dt_ox_graph_free(g);
    /* below -1 is not a dim */
    set_dim(y, 0, -2, NULL);
    expect_fail(m, "graph output 'y': dim 0 is -2 (dim_value must be >= 0, or -1");
    free_all();
}

/* Node count is checked while walking, before anything is unpacked. */
static void test_too_many_nodes(void)
{
    size_t n = DT_OX_MAX_NODES + 1, glen = 2 * n;
    uint8_t *buf = talloc(16 + glen), *p = buf;
    *p++ = 0x08, *p++ = 0x08;     /* ir_version 8 */
    p += put_key(p, 7, 2);        /* graph */
    p += put_varint(p, glen);
    for (size_t i = 0; i < n; i++)
        *p++ = 0x0a, *p++ = 0x00; /* an empty NodeProto */
    dt_ox_graph *g = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(read_buf(buf, (size_t)(p - buf), &g, &e), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(e.msg, "t.onnx: the graph has more than 200000 nodes");
    free_all();
}

/* A file of millions of empty messages (2 bytes each, ~330 unpacked) is
 * refused by the walker's estimate before protobuf-c allocates them. */
static void test_structure_estimate(void)
{
    size_t n = (size_t)(DT_OX_MAX_META_BYTES / (sizeof(Onnx__AttributeProto) + 64)) + 1000;
    uint8_t tmp[10];
    size_t nlen = 2 * n, glen = 1 + put_varint(tmp, nlen) + nlen;
    uint8_t *buf = malloc(32 + glen), *p = buf;
    CU_ASSERT_FATAL(buf != NULL);
    *p++ = 0x08, *p++ = 0x08;                     /* ir_version 8 */
    p += put_key(p, 7, 2), p += put_varint(p, glen); /* the graph */
    p += put_key(p, 1, 2), p += put_varint(p, nlen); /* its one node */
    for (size_t i = 0; i < n; i++)
        *p++ = 0x2a, *p++ = 0x00; /* an empty AttributeProto */
    dt_ox_graph *g = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(read_buf(buf, (size_t)(p - buf), &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "t.onnx: the graph's structure (without weights) would "
                                         "take more than 1024 MiB of memory"));
    free(buf);
}

static void test_files(void)
{
    char *dir = dt_test_tmpdir();
    dt_ox_graph *g = NULL;
    dt_err e;
    char path[1024];
    snprintf(path, sizeof path, "%s/none.onnx", dir);
    CU_ASSERT_EQUAL(dt_ox_read_file(path, &g, &e), DT_EINVAL); /* no such file: bad input */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "No such file"));
    CU_ASSERT_EQUAL(dt_ox_read_file(dir, &g, &e), DT_EINVAL); /* a directory: bad input */
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is not a regular file (a directory)"));
    /* issue 27: a FIFO (no writer: the open must not wait) and a device are
     * refused before a byte is read */
    char fifo[1100], zero[1100];
    snprintf(fifo, sizeof fifo, "%s/f.onnx", dir);
    snprintf(zero, sizeof zero, "%s/z.onnx", dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("/dev/zero", zero), 0);
    alarm(20);
    CU_ASSERT_EQUAL(dt_ox_read_file(fifo, &g, &e), DT_EINVAL);
    alarm(0);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is not a regular file (a FIFO)"));
    CU_ASSERT_EQUAL(dt_ox_read_file(zero, &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is not a regular file (a character device)"));
    char *empty = dt_test_write_file(dir, "empty.onnx", "");
    CU_ASSERT_EQUAL(dt_ox_read_file(empty, &g, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "empty.onnx: empty file, not an ONNX model"));
    CU_ASSERT_EQUAL(dt_ox_read(NULL, 0, "x.onnx", &g, &e), DT_EINVAL);

    size_t len;
    uint8_t *b = pack(rich(), &len);
    snprintf(path, sizeof path, "%s/rich.onnx", dir);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f && fwrite(b, 1, len, f) == len);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(dt_ox_read_file(path, &g, &e), 0);
    CU_ASSERT_STRING_EQUAL(g->source, path);
    CU_ASSERT_EQUAL(g->nnodes, 5);
    check_values_and_dims(g);
    dt_ox_graph_free(g);
    /* a truncated file names itself and the byte */
    CU_ASSERT_EQUAL(truncate(path, (off_t)len - 3), 0);
    CU_ASSERT_EQUAL(dt_ox_read_file(path, &g, &e), DT_EINVAL);
    CU_ASSERT(!strncmp(e.msg, path, strlen(path)) && strstr(e.msg, "protobuf parse failed at byte"));
    free(empty);
    dt_test_rmtree(dir);
    free(dir);
    free_all();
}

/* The fuzzer's harness over its seeds (fuzz/corpus/onnx): a crash, a
 * sanitizer report or a broken invariant fails the suite. */
#include "fuzz/fuzz_onnx.c"

static void replay(const char *path, void *ud)
{
    (void)ud;
    char *text;
    size_t len;
    dt_err e;
    if (dt_read_file(path, 1 << 20, &text, &len, &e)) {
        CU_FAIL(e.msg);
        return;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)text, len);
    free(text);
}

static void test_fuzz_replay(void)
{
    CU_ASSERT(dt_test_for_each_file("fuzz/corpus/onnx", replay, NULL) >= 3);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"a small graph round-trips", test_roundtrip},
        {"element type names", test_type_names},
        {"a 100 MB payload is skipped unread", test_big_payload_untouched},
        {"big typed payloads are dropped", test_big_typed_payload_dropped},
        {"external data is never opened", test_external_data},
        {"truncated at every byte", test_truncated_everywhere},
        {"garbage and mutated models", test_garbage},
        {"wire errors name the byte", test_wire_errors},
        {"IR version and opset ranges", test_versions},
        {"domains and node limits", test_domains_and_nodes},
        {"tensor errors", test_tensor_errors},
        {"graph input errors", test_value_errors},
        {"dim_value -1, dim_param \"?\" and \"\": unnamed dims", test_unnamed_dims},
        {"node count limit", test_too_many_nodes},
        {"structure memory estimate", test_structure_estimate},
        {"files: missing, directory, empty, valid, truncated", test_files},
        {"fuzz seeds replayed", test_fuzz_replay},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"onnx_read", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
