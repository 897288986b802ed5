#!/usr/bin/python3
"""Writes the ONNX test models of `dtune import` (tests/data/onnx/README.md).

    /usr/bin/python3 scripts/make_onnx_models.py [OUTDIR]     # default tests/data/onnx

Needs Debian's python3-onnx (1.12) and python3-numpy, hence /usr/bin/python3
rather than whatever `python3` is first on PATH.

Each good model is built node by node with onnx.helper in the node patterns
torch.onnx.export (opset 14-17) writes for the Hugging Face models (BERT,
GPT-2, ViT), for a small torchvision-style CNN, and for one BERT layer as
onnxruntime's quantize_dynamic leaves it.  Node and tensor names follow the
exporter's scheme ("/encoder/layer.0/attention/self/MatMul",
"..._output_0", "onnx::MatMul_<n>" for the transposed weights).

No weight data: every weight (and every large buffer) is an initializer with
its dims and type whose data is external (data_location = EXTERNAL,
location "weights.bin", with the offset and length it would have) -- and
weights.bin does not exist; dtune's importer never opens it.  Small constants
(shape vectors, axes, Gather indices, the scalars of LayerNorm, GELU and the
masks) carry their values, as Constant nodes or small initializers.

The output is deterministic: the same bytes on every run (no timestamps, no
random names, nothing taken from the environment).  Prints one line per file:
size, nodes, opset and the onnx.checker result.
"""
import os
import re
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
PRODUCER = "dtune scripts/make_onnx_models.py"
WEIGHTS_FILE = "weights.bin"  # never written; only named by the external data

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
I8 = TensorProto.INT8
U8 = TensorProto.UINT8
BOOL = TensorProto.BOOL
ELEM_BYTES = {F32: 4, I64: 8, I8: 1, U8: 1, BOOL: 1}

# BERT-base / GPT-2 small / ViT-base sizes
HIDDEN = 768
HEADS = 12
HEAD_DIM = 64
FFN = 3072


class Graph:
    """A node list in the naming scheme of torch.onnx.export (torch >= 1.13):
    a node is "<scope>/<Op>" (then "_1", "_2", ... within the same scope and
    op), its outputs "<node>_output_<i>"."""

    def __init__(self, name):
        self.name = name
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.counts = {}
        self.ext_offset = 0  # where the next external tensor would start in weights.bin
        self.anon = 1000     # torch's "onnx::MatMul_<n>" numbering (any fixed start)

    # -- nodes -------------------------------------------------------------
    def node_name(self, scope, op_type):
        base = scope + "/" + op_type
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        return base if k == 0 else "%s_%d" % (base, k)

    def op(self, scope, op_type, inputs, nout=1, **attrs):
        name = self.node_name(scope, op_type)
        outs = ["%s_output_%d" % (name, i) for i in range(nout)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if nout == 1 else outs

    def raw(self, op_type, inputs, outputs, name, **attrs):
        """A node with names given in full (onnxruntime's quantizer's scheme)."""
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def name_output(self, tensor, name):
        """Gives the node output `tensor` the graph output's name, as torch does
        with output_names (no Identity node)."""
        for n in self.nodes:
            for i, o in enumerate(n.output):
                if o == tensor:
                    n.output[i] = name
            assert tensor not in n.input, tensor

    def const(self, scope, value, dtype):
        """A Constant node: a scalar when value is a Python number, else a 1-D
        tensor (torch writes its shape vectors, axes and scalars this way)."""
        arr = np.array(value, dtype=dtype)
        return self.op(scope, "Constant", [], value=numpy_helper.from_array(arr))

    # -- initializers --------------------------------------------------------
    def weight(self, name, dims, elem=F32):
        """An initializer with dims and type but no payload: external data in a
        weights.bin that does not exist."""
        t = TensorProto()
        t.name = name
        t.data_type = elem
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        length = int(np.prod(dims, dtype=np.int64)) * ELEM_BYTES[elem]
        for key, val in (("location", WEIGHTS_FILE), ("offset", str(self.ext_offset)),
                         ("length", str(length))):
            e = t.external_data.add()
            e.key = key
            e.value = val
        self.ext_offset += length
        self.inits.append(t)
        return name

    def anon_weight(self, dims, elem=F32, prefix="onnx::MatMul_"):
        """A weight torch folded (a transposed nn.Linear weight): "onnx::MatMul_<n>"."""
        self.anon += 1
        return self.weight("%s%d" % (prefix, self.anon), dims, elem)

    def small(self, name, value, dtype):
        """A small initializer with its values."""
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    # -- model ---------------------------------------------------------------
    def model(self, opset, doc, extra_opsets=(), ir_version=IR_VERSION):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                              initializer=self.inits)
        opsets = [helper.make_operatorsetid("", opset)]
        opsets += [helper.make_operatorsetid(d, v) for d, v in extra_opsets]
        m = helper.make_model(g, opset_imports=opsets, producer_name=PRODUCER,
                              producer_version="1", doc_string=doc)
        m.ir_version = ir_version
        return m


def tensor_info(name, elem, dims):
    """A graph input/output: ints are dim_values, strings dim_params, None a
    dynamic dim with neither."""
    return helper.make_tensor_value_info(name, elem, dims)


# ---------------------------------------------------------------------------
# Patterns shared by the models
# ---------------------------------------------------------------------------

def shape_dim(g, scope, x, axis):
    """x.size(axis) as torch traces it: Shape -> Gather(scalar index)."""
    s = g.op(scope, "Shape", [x])
    i = g.const(scope, axis, np.int64)
    return g.op(scope, "Gather", [s, i], axis=0)


def unsqueeze0(g, scope, scalar):
    """A traced int into a 1-element shape vector: Unsqueeze(axes=[0]) (the
    axes an input since opset 13)."""
    return g.op(scope, "Unsqueeze", [scalar, g.const(scope, [0], np.int64)])


def reshape_leading2(g, scope, x, tail):
    """x.view(x.size(0), x.size(1), *tail): the target shape from two
    Shape -> Gather -> Unsqueeze chains and constants, concatenated."""
    d0 = shape_dim(g, scope, x, 0)
    d1 = shape_dim(g, scope, x, 1)
    u0 = unsqueeze0(g, scope, d0)
    u1 = unsqueeze0(g, scope, d1)
    parts = [u0, u1] + [g.const(scope, [t], np.int64) for t in tail]
    shape = g.op(scope, "Concat", parts, axis=0)
    return g.op(scope, "Reshape", [x, shape])


def linear(g, scope, x, k, n, bias_name, bias_first=True):
    """nn.Linear on a 3-D input as torch exports it: MatMul with the folded
    transposed weight [K, N] ("onnx::MatMul_<n>"), then Add(bias, out)
    (torch's symbolic puts the bias first)."""
    w = g.anon_weight([k, n])
    mm = g.op(scope, "MatMul", [x, w])
    b = g.weight(bias_name, [n])
    return g.op(scope, "Add", [b, mm] if bias_first else [mm, b])


def layernorm_spelled(g, scope, x, prefix, eps):
    """LayerNorm before opset 17, as torch's native_layer_norm symbolic writes
    it: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma,
    Add beta."""
    mean = g.op(scope, "ReduceMean", [x], axes=[-1])
    sub = g.op(scope, "Sub", [x, mean])
    pw = g.op(scope, "Pow", [sub, g.const(scope, 2.0, np.float32)])
    var = g.op(scope, "ReduceMean", [pw], axes=[-1])
    add = g.op(scope, "Add", [var, g.const(scope, eps, np.float32)])
    sq = g.op(scope, "Sqrt", [add])
    div = g.op(scope, "Div", [sub, sq])
    mul = g.op(scope, "Mul", [div, g.weight(prefix + ".weight", [HIDDEN])])
    return g.op(scope, "Add", [mul, g.weight(prefix + ".bias", [HIDDEN])])


def layernorm_op(g, scope, x, prefix, eps):
    """LayerNorm from opset 17: one LayerNormalization node."""
    return g.op(scope, "LayerNormalization",
                [x, g.weight(prefix + ".weight", [HIDDEN]), g.weight(prefix + ".bias", [HIDDEN])],
                axis=-1, epsilon=eps)


def gelu_erf(g, scope, x):
    """nn.GELU() / ACT2FN["gelu"] as torch exports it:
    Mul(Mul(x, Add(Erf(Div(x, 1.4142135)), 1.0)), 0.5)."""
    div = g.op(scope, "Div", [x, g.const(scope, 1.4142135623730951, np.float32)])
    erf = g.op(scope, "Erf", [div])
    add = g.op(scope, "Add", [erf, g.const(scope, 1.0, np.float32)])
    mul = g.op(scope, "Mul", [x, add])
    return g.op(scope, "Mul", [mul, g.const(scope, 0.5, np.float32)])


def gelu_tanh(g, scope, x):
    """GPT-2's NewGELUActivation: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))),
    in torch's evaluation order (the Mul by 0.5 comes first).  This is the
    tanh approximation, NOT the erf GELU that dtune's gelu epilogue computes:
    an importer must not fuse it as epilogue=gelu."""
    half = g.op(scope, "Mul", [x, g.const(scope, 0.5, np.float32)])
    pw = g.op(scope, "Pow", [x, g.const(scope, 3.0, np.float32)])
    cub = g.op(scope, "Mul", [pw, g.const(scope, 0.044715, np.float32)])
    inner = g.op(scope, "Add", [x, cub])
    scaled = g.op(scope, "Mul", [inner, g.const(scope, 0.7978845608028654, np.float32)])
    th = g.op(scope, "Tanh", [scaled])
    one = g.op(scope, "Add", [th, g.const(scope, 1.0, np.float32)])
    return g.op(scope, "Mul", [half, one])


def heads(g, scope, x, perm):
    """[b, s, 768] -> view [b, s, 12, 64] -> Transpose(perm): [0,2,1,3] for
    q and v, [0,2,3,1] for k (torch fuses permute(0,2,1,3) and
    transpose(-1,-2) into one Transpose)."""
    r = reshape_leading2(g, scope, x, [HEADS, HEAD_DIM])
    return g.op(scope, "Transpose", [r], perm=perm)


def merge_heads(g, scope, ctx):
    """[b, 12, s, 64] -> Transpose [0,2,1,3] -> view [b, s, 768]."""
    t = g.op(scope, "Transpose", [ctx], perm=[0, 2, 1, 3])
    return reshape_leading2(g, scope, t, [HIDDEN])


def extended_mask(g, mask):
    """BERT's get_extended_attention_mask: mask[:, None, None, :] ->
    Cast float -> (1 - m) * -10000: [batch, 1, 1, seq]."""
    u1 = g.op("", "Unsqueeze", [mask, g.const("", [1], np.int64)])
    u2 = g.op("", "Unsqueeze", [u1, g.const("", [2], np.int64)])
    c = g.op("", "Cast", [u2], to=F32)
    sub = g.op("", "Sub", [g.const("", 1.0, np.float32), c])
    return g.op("", "Mul", [sub, g.const("", -10000.0, np.float32)])


def attention_core(g, scope, q, k, v, mask_add=None):
    """scores = MatMul(q, kT) / 8 (+ mask) -> Softmax(-1) -> MatMul(probs, v)."""
    qt = heads(g, scope, q, [0, 2, 1, 3])
    kt = heads(g, scope, k, [0, 2, 3, 1])
    vt = heads(g, scope, v, [0, 2, 1, 3])
    scores = g.op(scope, "MatMul", [qt, kt])
    scores = g.op(scope, "Div", [scores, g.const(scope, 8.0, np.float32)])
    if mask_add is not None:
        scores = g.op(scope, "Add", [scores, mask_add])
    probs = g.op(scope, "Softmax", [scores], axis=-1)
    ctx = g.op(scope, "MatMul", [probs, vt])
    return merge_heads(g, scope, ctx)


# ---------------------------------------------------------------------------
# a. BERT-base encoder, 12 layers, fused QKV
# ---------------------------------------------------------------------------

def bert_layer(g, i, h, mask_add):
    L = "/encoder/layer.%d" % i
    P = "encoder.layer.%d" % i
    sc = L + "/attention/self"
    qkv = linear(g, sc + "/qkv", h, HIDDEN, 3 * HIDDEN, P + ".attention.self.qkv.bias")
    split = g.const(sc, [HIDDEN, HIDDEN, HIDDEN], np.int64)
    q, k, v = g.op(sc, "Split", [qkv, split], nout=3, axis=-1)
    ctx = attention_core(g, sc, q, k, v, mask_add)
    so = L + "/attention/output"
    d = linear(g, so + "/dense", ctx, HIDDEN, HIDDEN, P + ".attention.output.dense.bias")
    r = g.op(so, "Add", [d, h])
    a = layernorm_spelled(g, so + "/LayerNorm", r, P + ".attention.output.LayerNorm", 1e-12)
    up = linear(g, L + "/intermediate/dense", a, HIDDEN, FFN, P + ".intermediate.dense.bias")
    act = gelu_erf(g, L + "/intermediate/intermediate_act_fn", up)
    down = linear(g, L + "/output/dense", act, FFN, HIDDEN, P + ".output.dense.bias")
    r2 = g.op(L + "/output", "Add", [down, a])
    return layernorm_spelled(g, L + "/output/LayerNorm", r2, P + ".output.LayerNorm", 1e-12)


def make_bert_base():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input_ids", I64, ["batch", "seq"]),
                tensor_info("attention_mask", I64, ["batch", "seq"])]
    g.outputs = [tensor_info("last_hidden_state", F32, ["batch", "seq", HIDDEN])]
    E = "/embeddings"
    # seq = input_ids.size(1); batch = input_ids.size(0)
    seq = shape_dim(g, E, "input_ids", 1)
    batch = shape_dim(g, "", "input_ids", 0)
    seq_u = unsqueeze0(g, E, seq)
    # position_ids = self.position_ids[:, 0:seq]  (a [1, 512] buffer)
    pos_buf = g.weight("embeddings.position_ids", [1, 512], I64)
    pos_ids = g.op(E, "Slice", [pos_buf, g.const(E, [0], np.int64), seq_u,
                                g.const(E, [1], np.int64), g.const(E, [1], np.int64)])
    # token_type_ids = self.token_type_ids[:, :seq].expand(batch, seq)
    tt_buf = g.weight("embeddings.token_type_ids", [1, 512], I64)
    tt = g.op(E, "Slice", [tt_buf, g.const(E, [0], np.int64), seq_u,
                           g.const(E, [1], np.int64), g.const(E, [1], np.int64)])
    tt_shape = g.op(E, "Concat", [unsqueeze0(g, E, batch), unsqueeze0(g, E, seq)], axis=0)
    tt = g.op(E, "Expand", [tt, tt_shape])
    words = g.op(E + "/word_embeddings", "Gather",
                 [g.weight("embeddings.word_embeddings.weight", [30522, HIDDEN]), "input_ids"])
    types = g.op(E + "/token_type_embeddings", "Gather",
                 [g.weight("embeddings.token_type_embeddings.weight", [2, HIDDEN]), tt])
    emb = g.op(E, "Add", [words, types])
    pos = g.op(E + "/position_embeddings", "Gather",
               [g.weight("embeddings.position_embeddings.weight", [512, HIDDEN]), pos_ids])
    emb = g.op(E, "Add", [emb, pos])
    h = layernorm_spelled(g, E + "/LayerNorm", emb, "embeddings.LayerNorm", 1e-12)
    mask_add = extended_mask(g, "attention_mask")
    for i in range(12):
        h = bert_layer(g, i, h, mask_add)
    g.name_output(h, "last_hidden_state")
    return g.model(14, "BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072) with a fused "
                   "QKV projection, in torch.onnx.export's opset-14 patterns; weights not included.")


# ---------------------------------------------------------------------------
# b. GPT-2 style decoder, 2 blocks, opset 17
# ---------------------------------------------------------------------------

def conv1d(g, scope, x, prefix, k, n):
    """GPT-2's Conv1D (weight already [in, out]) as MatMul + Add(out, bias)."""
    mm = g.op(scope, "MatMul", [x, g.weight(prefix + ".weight", [k, n])])
    return g.op(scope, "Add", [mm, g.weight(prefix + ".bias", [n])])


def gpt2_block(g, i, h):
    B = "/transformer/h.%d" % i
    P = "transformer.h.%d" % i
    a = layernorm_op(g, B + "/ln_1", h, P + ".ln_1", 1e-5)
    A = B + "/attn"
    qkv = conv1d(g, A + "/c_attn", a, P + ".attn.c_attn", HIDDEN, 3 * HIDDEN)
    q, k, v = g.op(A, "Split", [qkv, g.const(A, [HIDDEN] * 3, np.int64)], nout=3, axis=2)
    qt = heads(g, A, q, [0, 2, 1, 3])
    kt = heads(g, A, k, [0, 2, 3, 1])
    vt = heads(g, A, v, [0, 2, 1, 3])
    scores = g.op(A, "MatMul", [qt, kt])
    scores = g.op(A, "Div", [scores, g.const(A, 8.0, np.float32)])
    # causal_mask = self.bias[:, :, key_len - query_len : key_len, :key_len]
    qlen = shape_dim(g, A, qt, 2)   # q is [b, 12, s, 64]
    klen = shape_dim(g, A, kt, 3)   # kT is [b, 12, 64, s]
    start = g.op(A, "Sub", [klen, qlen])
    m = g.op(A, "Slice", [g.weight(P + ".attn.bias", [1, 1, 1024, 1024], BOOL),
                          unsqueeze0(g, A, start), unsqueeze0(g, A, klen),
                          g.const(A, [2], np.int64), g.const(A, [1], np.int64)])
    m = g.op(A, "Slice", [m, g.const(A, [0], np.int64), unsqueeze0(g, A, klen),
                          g.const(A, [3], np.int64), g.const(A, [1], np.int64)])
    scores = g.op(A, "Where", [m, scores, g.const(A, -3.4028234663852886e38, np.float32)])
    probs = g.op(A, "Softmax", [scores], axis=-1)
    ctx = g.op(A, "MatMul", [probs, vt])
    merged = merge_heads(g, A, ctx)
    proj = conv1d(g, A + "/c_proj", merged, P + ".attn.c_proj", HIDDEN, HIDDEN)
    h = g.op(B, "Add", [proj, h])
    m2 = layernorm_op(g, B + "/ln_2", h, P + ".ln_2", 1e-5)
    up = conv1d(g, B + "/mlp/c_fc", m2, P + ".mlp.c_fc", HIDDEN, FFN)
    act = gelu_tanh(g, B + "/mlp/act", up)
    down = conv1d(g, B + "/mlp/c_proj", act, P + ".mlp.c_proj", FFN, HIDDEN)
    return g.op(B, "Add", [h, down])


def make_gpt2_block():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input_ids", I64, ["batch", "seq"])]
    g.outputs = [tensor_info("last_hidden_state", F32, ["batch", "seq", HIDDEN])]
    T = "/transformer"
    # input_ids = input_ids.view(-1, input_shape[-1])
    seq = shape_dim(g, T, "input_ids", 1)
    view = g.op(T, "Concat", [g.const(T, [-1], np.int64), unsqueeze0(g, T, seq)], axis=0)
    ids = g.op(T, "Reshape", ["input_ids", view])
    # position_ids = torch.arange(0, seq).unsqueeze(0)
    rng = g.op(T, "Range", [g.const(T, 0, np.int64), seq, g.const(T, 1, np.int64)])
    pos_ids = unsqueeze0(g, T, rng)
    wte = g.op(T + "/wte", "Gather", [g.weight("transformer.wte.weight", [50257, HIDDEN]), ids])
    wpe = g.op(T + "/wpe", "Gather", [g.weight("transformer.wpe.weight", [1024, HIDDEN]), pos_ids])
    h = g.op(T, "Add", [wte, wpe])
    for i in range(2):
        h = gpt2_block(g, i, h)
    out = layernorm_op(g, T + "/ln_f", h, "transformer.ln_f", 1e-5)
    g.name_output(out, "last_hidden_state")
    return g.model(17, "Two GPT-2 (small) decoder blocks, hidden 768, 12 heads: LayerNormalization, "
                   "Conv1D as MatMul+Add, a causal mask sliced from the [1,1,1024,1024] bias buffer, "
                   "tanh GELU; opset 17, weights not included.")


# ---------------------------------------------------------------------------
# c. ViT-base style: patch embedding + one encoder layer, opset 17
# ---------------------------------------------------------------------------

def make_vit_block():
    g = Graph("main_graph")
    g.inputs = [tensor_info("pixel_values", F32, ["batch", 3, 224, 224])]
    g.outputs = [tensor_info("last_hidden_state", F32, ["batch", 197, HIDDEN])]
    E = "/embeddings"
    PE = E + "/patch_embeddings"
    conv = g.op(PE + "/projection", "Conv",
                ["pixel_values",
                 g.weight("embeddings.patch_embeddings.projection.weight", [HIDDEN, 3, 16, 16]),
                 g.weight("embeddings.patch_embeddings.projection.bias", [HIDDEN])],
                dilations=[1, 1], group=1, kernel_shape=[16, 16], pads=[0, 0, 0, 0],
                strides=[16, 16])
    # .flatten(2): Shape -> Slice [0:2] -> Concat with [-1] -> Reshape   ([b, 768, 196])
    shp = g.op(PE, "Shape", [conv])
    lead = g.op(PE, "Slice", [shp, g.const(PE, [0], np.int64), g.const(PE, [2], np.int64),
                              g.const(PE, [0], np.int64)])
    flat = g.op(PE, "Concat", [lead, g.const(PE, [-1], np.int64)], axis=0)
    x = g.op(PE, "Reshape", [conv, flat])
    x = g.op(PE, "Transpose", [x], perm=[0, 2, 1])  # [b, 196, 768]
    # cls_token.expand(batch, -1, -1): torch writes the -1s as 1 (Expand
    # broadcasts both ways), so the target is [batch, 1, 1]
    batch = shape_dim(g, E, "pixel_values", 0)
    eshape = g.op(E, "Concat", [unsqueeze0(g, E, batch), g.const(E, [1], np.int64),
                                g.const(E, [1], np.int64)], axis=0)
    cls = g.op(E, "Expand", [g.weight("embeddings.cls_token", [1, 1, HIDDEN]), eshape])
    x = g.op(E, "Concat", [cls, x], axis=1)  # [b, 197, 768]
    h = g.op(E, "Add", [x, g.weight("embeddings.position_embeddings", [1, 197, HIDDEN])])

    L = "/encoder/layer.0"
    P = "encoder.layer.0"
    a = layernorm_op(g, L + "/layernorm_before", h, P + ".layernorm_before", 1e-12)
    A = L + "/attention/attention"
    q = linear(g, A + "/query", a, HIDDEN, HIDDEN, P + ".attention.attention.query.bias")
    k = linear(g, A + "/key", a, HIDDEN, HIDDEN, P + ".attention.attention.key.bias")
    v = linear(g, A + "/value", a, HIDDEN, HIDDEN, P + ".attention.attention.value.bias")
    ctx = attention_core(g, A, q, k, v)
    o = linear(g, L + "/attention/output/dense", ctx, HIDDEN, HIDDEN,
               P + ".attention.output.dense.bias")
    h = g.op(L, "Add", [o, h])
    m = layernorm_op(g, L + "/layernorm_after", h, P + ".layernorm_after", 1e-12)
    up = linear(g, L + "/intermediate/dense", m, HIDDEN, FFN, P + ".intermediate.dense.bias")
    act = gelu_erf(g, L + "/intermediate/intermediate_act_fn", up)
    down = linear(g, L + "/output/dense", act, FFN, HIDDEN, P + ".output.dense.bias")
    h = g.op(L + "/output", "Add", [down, h])
    out = layernorm_op(g, "/layernorm", h, "layernorm", 1e-12)
    g.name_output(out, "last_hidden_state")
    return g.model(17, "ViT-base style: 16x16 patch embedding (Conv), class token, position "
                   "embedding and one encoder layer with separate Q/K/V; dynamic batch, 197 tokens; "
                   "opset 17, weights not included.")


# ---------------------------------------------------------------------------
# d. a small CNN with a dynamic image size
# ---------------------------------------------------------------------------

def make_cnn_small():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", 3, "height", "width"])]
    g.outputs = [tensor_info("logits", F32, ["batch", 10])]

    def conv(scope, x, prefix, cout, cin, k, stride, pad):
        return g.op(scope, "Conv", [x, g.weight(prefix + ".weight", [cout, cin, k, k]),
                                    g.weight(prefix + ".bias", [cout])],
                    dilations=[1, 1], group=1, kernel_shape=[k, k], pads=[pad] * 4,
                    strides=[stride, stride])

    x = conv("/conv1", "input", "conv1", 32, 3, 3, 1, 1)
    x = g.op("/relu1", "Relu", [x])
    x = g.op("/pool1", "MaxPool", [x], ceil_mode=0, kernel_shape=[2, 2], pads=[0, 0, 0, 0],
             strides=[2, 2])
    x = conv("/conv2", x, "conv2", 64, 32, 3, 2, 1)
    x = g.op("/relu2", "Relu", [x])
    x = conv("/conv3", x, "conv3", 128, 64, 1, 1, 0)
    x = g.op("/pool2", "AveragePool", [x], ceil_mode=0, count_include_pad=1, kernel_shape=[3, 3],
             pads=[1, 1, 1, 1], strides=[1, 1])
    x = g.op("/gap", "GlobalAveragePool", [x])
    x = g.op("", "Flatten", [x], axis=1)
    g.nodes.append(helper.make_node("Gemm", [x, g.weight("fc.weight", [10, 128]),
                                             g.weight("fc.bias", [10])], ["logits"],
                                    name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1))
    return g.model(14, "A small CNN on [batch, 3, height, width]: Conv/Relu, MaxPool, strided Conv, "
                   "1x1 Conv, AveragePool, GlobalAveragePool, Flatten, Gemm (transB=1) to 10 logits; "
                   "weights not included.")


# ---------------------------------------------------------------------------
# e. one BERT layer after onnxruntime.quantization.quantize_dynamic
# ---------------------------------------------------------------------------

def make_bert_layer_int8():
    """Every weighted MatMul as quantize_dynamic (QOperator, MatMulInteger)
    rewrites it: DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zp[, W_zp])
    -> Cast float -> Mul(., Mul(x_scale, W_scale)); the bias Add stays.  The
    four MatMuls cover the variants quantize_dynamic writes: per-tensor with
    a weight zero point (qkv, ffn_down), per-tensor without one (attention
    output), per-channel scale and zero point [N] (ffn_up).  Attention
    MatMuls stay float."""
    g = Graph("main_graph")
    g.inputs = [tensor_info("hidden_states", F32, ["batch", "seq", HIDDEN]),
                tensor_info("attention_mask", I64, ["batch", "seq"])]
    g.outputs = [tensor_info("output", F32, ["batch", "seq", HIDDEN])]

    def qlinear(scope, x, k, n, bias_name, wzp="scalar", wscale="scalar"):
        mm_name = scope + "/MatMul"
        mm_out = mm_name + "_output_0"
        g.anon += 1
        w = "onnx::MatMul_%d" % g.anon
        xq, xs, xzp = g.raw("DynamicQuantizeLinear", [x],
                            [x + "_quantized", x + "_scale", x + "_zero_point"],
                            x + "_QuantizeLinear")
        wq = g.weight(w + "_quantized", [k, n], I8)
        if wscale == "scalar":
            ws = g.small(w + "_scale", 0.0008, np.float32)
        else:
            ws = g.weight(w + "_scale", [n], F32)
        ins = [xq, wq, xzp]
        if wzp == "scalar":
            ins.append(g.small(w + "_zero_point", 0, np.int8))
        elif wzp == "channel":
            ins.append(g.weight(w + "_zero_point", [n], I8))
        qi = g.raw("MatMulInteger", ins, [mm_out + "_output_quantized"], mm_name + "_quant")
        cast = g.raw("Cast", [qi], [qi + "_cast_output"], qi + "_cast", to=F32)
        scales = g.raw("Mul", [xs, ws], [mm_name + "_quant_scales_mul:0"],
                       mm_name + "_quant_scales_mul")
        y = g.raw("Mul", [cast, scales], [mm_out], mm_name + "_quant_output_scale_mul")
        return g.op(scope, "Add", [g.weight(bias_name, [n]), y])

    h = "hidden_states"
    mask_add = extended_mask(g, "attention_mask")
    sc = "/attention/self"
    qkv = qlinear(sc + "/qkv", h, HIDDEN, 3 * HIDDEN, "attention.self.qkv.bias")
    q, k, v = g.op(sc, "Split", [qkv, g.const(sc, [HIDDEN] * 3, np.int64)], nout=3, axis=-1)
    ctx = attention_core(g, sc, q, k, v, mask_add)
    so = "/attention/output"
    d = qlinear(so + "/dense", ctx, HIDDEN, HIDDEN, "attention.output.dense.bias", wzp="none")
    r = g.op(so, "Add", [d, h])
    a = layernorm_spelled(g, so + "/LayerNorm", r, "attention.output.LayerNorm", 1e-12)
    up = qlinear("/intermediate/dense", a, HIDDEN, FFN, "intermediate.dense.bias",
                 wzp="channel", wscale="channel")
    act = gelu_erf(g, "/intermediate/intermediate_act_fn", up)
    down = qlinear("/output/dense", act, FFN, HIDDEN, "output.dense.bias")
    r2 = g.op("/output", "Add", [down, a])
    out = layernorm_spelled(g, "/output/LayerNorm", r2, "output.LayerNorm", 1e-12)
    g.name_output(out, "output")
    # quantize_dynamic adds the com.microsoft opset import even when no
    # contrib op is used
    return g.model(14, "One BERT-base layer (fused QKV) as onnxruntime's quantize_dynamic leaves it: "
                   "DynamicQuantizeLinear + MatMulInteger (u8 x s8) + Cast + scale Mul per weighted "
                   "MatMul, attention in float; weights not included.",
                   extra_opsets=[("com.microsoft", 1)])


# ---------------------------------------------------------------------------
# f. bad files
# ---------------------------------------------------------------------------

def small_dense_graph(name, x_dims):
    """x -> MatMul [768, 768] -> Add bias -> y."""
    g = Graph(name)
    g.inputs = [tensor_info("input", F32, x_dims)]
    g.outputs = [tensor_info("output", F32, x_dims)]
    mm = g.op("/dense", "MatMul", ["input", g.weight("dense.weight_t", [HIDDEN, HIDDEN])])
    g.nodes.append(helper.make_node("Add", [mm, g.weight("dense.bias", [HIDDEN])], ["output"],
                                    name="/dense/Add"))
    return g


def make_bad_cycle():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", HIDDEN])]
    g.outputs = [tensor_info("output", F32, ["batch", HIDDEN])]
    # /a/Add reads /b/Relu's output, /b/Relu reads /a/Add's: a cycle
    g.raw("Add", ["input", "/b/Relu_output_0"], ["/a/Add_output_0"], "/a/Add")
    g.raw("Relu", ["/a/Add_output_0"], ["/b/Relu_output_0"], "/b/Relu")
    g.raw("Identity", ["/b/Relu_output_0"], ["output"], "/Identity")
    return g.model(14, "Bad: two nodes feed each other (a cycle).")


def make_bad_dangling():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", HIDDEN])]
    g.outputs = [tensor_info("output", F32, ["batch", HIDDEN])]
    mm = g.op("/dense", "MatMul", ["input", g.weight("dense.weight_t", [HIDDEN, HIDDEN])])
    # "dense.bias" is neither an initializer, a graph input nor a node output
    g.raw("Add", [mm, "dense.bias"], ["output"], "/dense/Add")
    return g.model(14, "Bad: the Add reads 'dense.bias', which nothing produces.")


def make_bad_opset10():
    g = small_dense_graph("main_graph", ["batch", HIDDEN])
    # ONNX 1.5 wrote opset 10 with IR version 5 (inside the accepted IR range)
    return g.model(10, "Bad: opset 10 (dtune accepts 11..18).", ir_version=5)


def make_bad_unsupported_op():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", HIDDEN])]
    g.outputs = [tensor_info("output", I64, [None])]
    mm = g.op("/dense", "MatMul", ["input", g.weight("dense.weight_t", [HIDDEN, HIDDEN])])
    nz = g.op("", "NonZero", [mm])  # [2, n]: n depends on the data
    g.nodes.append(helper.make_node("Reshape", [nz, g.const("", [-1], np.int64)], ["output"],
                                    name="/Reshape"))
    return g.model(14, "Bad: NonZero (a data-dependent shape) feeding a Reshape.")


def make_bad_huge_dims():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", 1 << 40])]
    g.outputs = [tensor_info("output", F32, ["batch", 1 << 40])]
    t = TensorProto()
    t.name = "huge.weight"
    t.data_type = F32
    t.dims.extend([1 << 40, 1 << 40])  # 2^80 elements: the product overflows int64
    g.inits.append(t)                   # and no data at all, not even external
    g.raw("MatMul", ["input", "huge.weight"], ["output"], "/huge/MatMul")
    return g.model(14, "Bad: an initializer with dims [2^40, 2^40] and no data.")


def make_bad_unnamed_dim():
    g = small_dense_graph("main_graph", [None, HIDDEN])
    return g.model(14, "A graph input whose first dim is dynamic with neither dim_value nor "
                   "dim_param.")


# ---------------------------------------------------------------------------
# g. newer IR versions, hostile names
# ---------------------------------------------------------------------------

def make_ir10():
    g = small_dense_graph("main_graph", ["batch", HIDDEN])
    # what onnx >= 1.16 saves (torch's exporter included): IR version 10
    return g.model(17, "A dense layer saved with IR version 10 (onnx 1.16, 1.17).", ir_version=10)


def make_ir11():
    g = small_dense_graph("main_graph", ["batch", HIDDEN])
    return g.model(18, "A dense layer saved with IR version 11 (onnx 1.18).", ir_version=11)


# ESC (a colour and a window title), CR, LF, BEL and a C1 CSI: names a
# terminal or a log must never receive raw
EVIL = "\x1b[31m\x1b]0;pwned\x07\r\nFAKE LINE\u009b2J"


def make_ctrl_names():
    g = Graph("main" + EVIL)
    g.inputs = [tensor_info("input" + EVIL, F32, ["batch", HIDDEN])]
    g.outputs = [tensor_info("output", F32, ["batch", HIDDEN])]
    w = g.weight("dense.weight" + EVIL, [HIDDEN, HIDDEN])
    mm = g.raw("MatMul", ["input" + EVIL, w], ["/mm" + EVIL + "_output_0"], "/dense" + EVIL + "/MatMul")
    g.raw("Relu", [mm], ["output"], "/act" + EVIL + "/Relu")
    return g.model(14, "Node, tensor and graph names with ESC, CR, LF, BEL and a C1 control.")


def make_bad_ctrl_names():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", HIDDEN])]
    g.outputs = [tensor_info("output", F32, ["batch", HIDDEN])]
    mm = g.op("/dense", "MatMul", ["input", g.weight("dense.weight_t", [HIDDEN, HIDDEN])])
    # the dangling input's name, and the node's, go into the error message
    g.raw("Add", [mm, "bias" + EVIL], ["output"], "/dense" + EVIL + "/Add")
    return g.model(14, "Bad: a dangling input; its name and the node's hold control characters.")


def make_bad_transpose_perm():
    g = Graph("main_graph")
    g.inputs = [tensor_info("input", F32, ["batch", HIDDEN])]
    g.outputs = [tensor_info("output", F32, [HIDDEN, "batch"])]
    # -1 is not an axis of a permutation: perm must be a permutation of 0..rank-1
    g.raw("Transpose", ["input"], ["output"], "/t/Transpose", perm=[-1, 0])
    return g.model(14, "Bad: Transpose with perm [-1, 0] (negative entries are invalid).")


# ---------------------------------------------------------------------------

GOOD = [
    ("bert-base.onnx", make_bert_base),
    ("gpt2-block.onnx", make_gpt2_block),
    ("vit-block.onnx", make_vit_block),
    ("cnn-small.onnx", make_cnn_small),
    ("bert-layer-int8-dynamic.onnx", make_bert_layer_int8),
    ("ir10-dense.onnx", make_ir10),
    ("ir11-dense.onnx", make_ir11),
    ("ctrl-names.onnx", make_ctrl_names),
]
BAD = [
    ("bad-cycle.onnx", make_bad_cycle),
    ("bad-dangling.onnx", make_bad_dangling),
    ("bad-opset10.onnx", make_bad_opset10),
    ("bad-unsupported-op.onnx", make_bad_unsupported_op),
    ("bad-huge-dims.onnx", make_bad_huge_dims),
    ("bad-unnamed-dim.onnx", make_bad_unnamed_dim),
    ("bad-ctrl-names.onnx", make_bad_ctrl_names),
    ("bad-transpose-perm.onnx", make_bad_transpose_perm),
]


def load_extensions():
    """Adds the GOOD and BAD lists of every scripts/onnx_models_*.py (sorted by
    name): each such module builds its models with this file's helpers
    (`import make_onnx_models as base`), so a family of test models lives in
    a file of its own."""
    import glob
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    for path in sorted(glob.glob(os.path.join(here, "onnx_models_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        GOOD.extend(getattr(mod, "GOOD", []))
        BAD.extend(getattr(mod, "BAD", []))


def check(model, data):
    """onnx.checker.check_model(full_check=False): each node against its
    schema at the model's opset, topological order, names, tensors.  The
    checker stat()s every external data file in the model's directory, so the
    model is checked from a temporary directory holding an empty stand-in
    weights.bin (it reads nothing from it)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        write(path, data)
        write(os.path.join(tmp, WEIGHTS_FILE), b"")
        try:
            onnx.checker.check_model(path, full_check=False)
            return "checker ok"
        except Exception as ex:  # noqa: BLE001 -- the checker raises several types
            msg = " ".join(str(ex).split()) or type(ex).__name__
            # the message quotes names, some with control characters
            msg = re.sub("[\x00-\x1f\x7f-\x9f]", lambda c: "\\x%02x" % ord(c.group()), msg)
            return "checker fails: " + msg[:200]


def loads(data):
    """Whether onnx.load parses the bytes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # protobuf's "Unexpected end-group tag"
        try:
            onnx.load_from_string(data)
            return "onnx.load parses it"
        except Exception as ex:  # noqa: BLE001
            return "onnx.load fails: " + type(ex).__name__


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: make_onnx_models.py [OUTDIR]   (default tests/data/onnx)", file=sys.stderr)
        return 1
    out = args[0] if args else os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx"))
    os.makedirs(out, exist_ok=True)
    load_extensions()
    failures = 0
    for fname, make in GOOD + BAD:
        m = make()
        data = m.SerializeToString()
        write(os.path.join(out, fname), data)
        if m.ir_version > onnx.IR_VERSION:
            # this onnx's checker refuses IR versions it does not know; the
            # file is otherwise the same, so check it at the checker's own
            older = onnx.ModelProto()
            older.CopyFrom(m)
            older.ir_version = onnx.IR_VERSION
            res = check(older, older.SerializeToString()) + " (at IR %d)" % onnx.IR_VERSION
        else:
            res = check(m, data)
        good = fname in dict(GOOD)
        if good and not res.startswith("checker ok"):
            failures += 1
        print("%-30s %7d bytes  %4d nodes  opset %2d  %s%s"
              % (fname, len(data), len(m.graph.node), m.opset_import[0].version, res,
                 "" if good or not res.startswith("checker ok") else " (bad for dtune, valid ONNX)"))
        if fname == "bert-base.onnx":
            bert = data
    # the first half of bert-base.onnx: the cut falls inside the graph's bytes
    for fname, data in (("bad-truncated.onnx", bert[:len(bert) // 2]),
                        ("bad-not-onnx.onnx",
                         b"This is not an ONNX model, just a few bytes of text.\n")):
        write(os.path.join(out, fname), data)
        res = loads(data)
        if res == "onnx.load parses it":
            failures += 1
        print("%-30s %7d bytes  %s" % (fname, len(data), res))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
