"""Test models of issue 30's patterns and labels (tests/data/onnx/README.md):
weight-only int8 as torch's exporter writes it, an attention whose K^T is a
Reshape -> Transpose -> Reshape chain, an int8 embedding table dequantized
after its Gather, a com.microsoft MatMulNBits (4-bit weights) and a Range.

Picked up by scripts/make_onnx_models.py (load_extensions); built with its
helpers, no weight data (external, in a weights.bin that does not exist).
"""
import numpy as np
from onnx import TensorProto, helper

import make_onnx_models as base

F32 = base.F32
I64 = base.I64
I8 = base.I8
U8 = base.U8


def make_w8a32_torch():
    """A weight-only int8 MLP as torch.onnx.export(dynamo=True) writes a
    Linear whose weight is stored int8 with its scales (torchao's
    int8_weight_only, or a hand-written W.to(float) * scale): the weight is
    dequantized in the graph as Mul(Cast(W_int8, to=FLOAT), scale), then fed
    to MatMul.  Node names are the dynamo exporter's ("node_<Op>_<n>"),
    values "val_<n>" or the aten op's name.  Three spellings:
      fc1  W [256, 1024] int8, scale [1, 1024] per output channel,
           Mul(Cast(W), scale), + bias, Relu
      fc2  W [1024, 256] int8, scale [] per tensor, Mul(scale, Cast(W))
           (the scalar first), + bias
      fc3  W [128, 256] int8 in nn.Linear's [out, in] layout, scale [128, 1],
           Mul(Cast(W), scale) -> Transpose -> MatMul (F.linear's W^T)."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("x", F32, ["batch", "seq", 256])]
    g.outputs = [base.tensor_info("fc3", F32, ["batch", "seq", 128])]
    n = [0]

    def raw(op, ins, out, **attrs):
        name = "node_%s_%d" % (op, n[0])
        n[0] += 1
        return g.raw(op, ins, [out], name, **attrs)

    w1 = g.weight("fc1.weight_int8", [256, 1024], I8)
    s1 = g.weight("fc1.scale", [1, 1024], F32)
    c1 = raw("Cast", [w1], "val_0", to=F32)
    d1 = raw("Mul", [c1, s1], "val_1")
    y = raw("MatMul", ["x", d1], "val_2")
    y = raw("Add", [y, g.weight("fc1.bias", [1024])], "linear")
    y = raw("Relu", [y], "relu")

    w2 = g.weight("fc2.weight_int8", [1024, 256], I8)
    s2 = g.small("fc2.scale", 0.0125, np.float32)
    c2 = raw("Cast", [w2], "val_3", to=F32)
    d2 = raw("Mul", [s2, c2], "val_4")
    y = raw("MatMul", [y, d2], "val_5")
    y = raw("Add", [y, g.weight("fc2.bias", [256])], "linear_1")

    w3 = g.weight("fc3.weight_int8", [128, 256], I8)
    s3 = g.weight("fc3.scale", [128, 1], F32)
    c3 = raw("Cast", [w3], "val_6", to=F32)
    d3 = raw("Mul", [c3, s3], "val_7")
    t3 = raw("Transpose", [d3], "val_8", perm=[1, 0])
    raw("MatMul", [y, t3], "fc3")
    return g.model(17, "A weight-only int8 MLP (256 -> 1024 -> 256 -> 128) in the patterns of "
                   "torch.onnx.export(dynamo=True): Mul(Cast(int8 W), scale) per channel [1, N], "
                   "per tensor [] with the scale first, and per channel [N, 1] on an [N, K] weight "
                   "transposed after; weights not included.", ir_version=10)


MINILM = "/model/model.0/auto_model/encoder/layer.0/attention"
MINI_HIDDEN = 384
MINI_HEADS = 12
MINI_DIM = 32


def make_attn_reshape_kt():
    """One MiniLM attention block (hidden 384, 12 heads of 32), names as the
    sentence-transformers export has them ("/model/model.0/auto_model/..."),
    in the patterns of the older torch exports that run nn.Linear on a 2-D
    view: x.view(-1, 384) -> Gemm(transB=1) per projection.  K^T is built as
    k.view(b, s, 384).transpose(1, 2).reshape(b, 12, 32, s):
    Reshape -> Transpose(perm [0, 2, 1]) -> Reshape, which keeps the head dim
    contiguous in the Gemm's output: q.k^T is NT."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("hidden_states", F32, ["batch", "seq", MINI_HIDDEN])]
    g.outputs = [base.tensor_info("attention_output", F32, ["batch", "seq", MINI_HIDDEN])]
    S = MINILM + "/self"
    flat = g.op(S, "Reshape", ["hidden_states", g.const(S, [-1, MINI_HIDDEN], np.int64)])

    def proj(scope, name, x):
        return g.op(scope, "Gemm", [x, g.weight(name + ".weight", [MINI_HIDDEN, MINI_HIDDEN]),
                                    g.weight(name + ".bias", [MINI_HIDDEN])],
                    alpha=1.0, beta=1.0, transB=1)

    P = "0.auto_model.encoder.layer.0.attention"
    q = proj(S + "/query", P + ".self.query", flat)
    k = proj(S + "/key", P + ".self.key", flat)
    v = proj(S + "/value", P + ".self.value", flat)

    def bs(scope):
        b = base.unsqueeze0(g, scope, base.shape_dim(g, scope, "hidden_states", 0))
        s = base.unsqueeze0(g, scope, base.shape_dim(g, scope, "hidden_states", 1))
        return b, s

    def heads(x, perm):
        b, s = bs(S)
        shape = g.op(S, "Concat", [b, s, g.const(S, [MINI_HEADS], np.int64),
                                   g.const(S, [MINI_DIM], np.int64)], axis=0)
        return g.op(S, "Transpose", [g.op(S, "Reshape", [x, shape])], perm=perm)

    qh = heads(q, [0, 2, 1, 3])
    vh = heads(v, [0, 2, 1, 3])
    # k.view(b, s, 384).transpose(1, 2).reshape(b, 12, 32, s)
    b, s = bs(S)
    k3 = g.op(S, "Reshape", [k, g.op(S, "Concat", [b, s, g.const(S, [MINI_HIDDEN], np.int64)],
                                     axis=0)])
    kt = g.op(S, "Transpose", [k3], perm=[0, 2, 1])
    b, s = bs(S)
    kt = g.op(S, "Reshape", [kt, g.op(S, "Concat", [b, g.const(S, [MINI_HEADS], np.int64),
                                                    g.const(S, [MINI_DIM], np.int64), s],
                                      axis=0)])
    scores = g.op(S, "MatMul", [qh, kt])
    scores = g.op(S, "Div", [scores, g.const(S, float(np.sqrt(MINI_DIM)), np.float32)])
    probs = g.op(S, "Softmax", [scores], axis=-1)
    ctx = g.op(S, "MatMul", [probs, vh])
    ctx = g.op(S, "Transpose", [ctx], perm=[0, 2, 1, 3])
    ctx = g.op(S, "Reshape", [ctx, g.const(S, [-1, MINI_HIDDEN], np.int64)])
    O = MINILM + "/output/dense"
    out = g.op(O, "Gemm", [ctx, g.weight(P + ".output.dense.weight", [MINI_HIDDEN, MINI_HIDDEN]),
                           g.weight(P + ".output.dense.bias", [MINI_HIDDEN])],
               alpha=1.0, beta=1.0, transB=1)
    b, s = bs(O)
    shape = g.op(O, "Concat", [b, s, g.const(O, [MINI_HIDDEN], np.int64)], axis=0)
    out = g.op(O, "Reshape", [out, shape])
    g.name_output(out, "attention_output")
    return g.model(14, "One MiniLM attention block (hidden 384, 12 heads), projections as Gemm "
                   "on a 2-D view, K^T as Reshape -> Transpose [0,2,1] -> Reshape; node names "
                   "as in the sentence-transformers export; weights not included.")


def make_embedding_int8_gather():
    """A quantized token embedding as onnxruntime's quantize_dynamic leaves
    it when Gather is among the ops to quantize (QOperator format): the table
    is stored int8 ("<w>_quantized", scale and zero point per tensor), the
    Gather reads it and a DequantizeLinear after it ("<out>_DequantizeLinear")
    gives the float rows.  Position ids from Range(0, seq, 1) as torch writes
    torch.arange(seq), then a float dense (MatMul + Add) on the sum."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("input_ids", I64, ["batch", "seq"])]
    g.outputs = [base.tensor_info("output", F32, ["batch", "seq", 256])]
    E = "/embeddings"
    table = g.weight("embeddings.word_embeddings.weight_quantized", [1000, 256], I8)
    words_q = g.raw("Gather", [table, "input_ids"],
                    ["/embeddings/word_embeddings/Gather_output_0_quantized"],
                    "/embeddings/word_embeddings/Gather_quant")
    scale = g.small("embeddings.word_embeddings.weight_scale", 0.004, np.float32)
    zp = g.small("embeddings.word_embeddings.weight_zero_point", 0, np.int8)
    words = g.raw("DequantizeLinear", [words_q, scale, zp],
                  ["/embeddings/word_embeddings/Gather_output_0"],
                  "/embeddings/word_embeddings/Gather_output_0_DequantizeLinear")
    seq = base.shape_dim(g, E, "input_ids", 1)
    rng = g.op(E, "Range", [g.const(E, 0, np.int64), seq, g.const(E, 1, np.int64)])
    pos_ids = base.unsqueeze0(g, E, rng)
    pos = g.op(E + "/position_embeddings", "Gather",
               [g.weight("embeddings.position_embeddings.weight", [512, 256]), pos_ids])
    h = g.op(E, "Add", [words, pos])
    mm = g.op("/dense", "MatMul", [h, g.anon_weight([256, 256])])
    out = g.op("/dense", "Add", [g.weight("dense.bias", [256]), mm])
    g.name_output(out, "output")
    return g.model(14, "An int8 token embedding (quantize_dynamic with Gather quantized: Gather of "
                   "the int8 table, then DequantizeLinear), Range position ids, a float dense; "
                   "weights not included.", extra_opsets=[("com.microsoft", 1)])


def make_matmulnbits_4bit():
    """A block whose LM head onnxruntime's MatMul4BitsQuantizer (or
    onnxruntime-genai's model builder) turned into com.microsoft MatMulNBits:
    B packed uint8 [N, K/32, 16] (4-bit, block 32), scales [N*K/32],
    attributes K, N, bits 4, block_size 32.  Before it, a float dense
    (MatMul + Add) that dtune tunes."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("hidden_states", F32, ["batch", "seq", 256])]
    g.outputs = [base.tensor_info("logits", F32, ["batch", "seq", 1024])]
    mm = g.op("/model/dense", "MatMul", ["hidden_states", g.anon_weight([256, 256])])
    h = g.op("/model/dense", "Add", [g.weight("model.dense.bias", [256]), mm])
    K, N, BLOCK = 256, 1024, 32
    g.nodes.append(helper.make_node(
        "MatMulNBits",
        [h, g.weight("lm_head.MatMul.weight_Q4", [N, K // BLOCK, BLOCK // 2], U8),
         g.weight("lm_head.MatMul.weight_scales", [N * K // BLOCK], F32)],
        ["logits"], name="/lm_head/MatMul_Q4", domain="com.microsoft",
        K=K, N=N, bits=4, block_size=BLOCK))
    return g.model(14, "A float dense, then an LM head as com.microsoft MatMulNBits (4-bit "
                   "weights, block 32) as onnxruntime's MatMul4BitsQuantizer writes it; weights "
                   "not included.", extra_opsets=[("com.microsoft", 1)])


GOOD = [
    ("w8a32-torch.onnx", make_w8a32_torch),
    ("attn-reshape-kt.onnx", make_attn_reshape_kt),
    ("embedding-int8-gather.onnx", make_embedding_int8_gather),
    ("matmulnbits-4bit.onnx", make_matmulnbits_4bit),
]
BAD = []
