"""Test models of issue 43's patterns, point 4 (tests/data/onnx/README.md,
"Patterns 2"): torch's scaled_dot_product_attention decompositions (the
scale on both q and K^T, around the Transpose), Convs with large strides and
dilations (an STFT front end, a WaveNet-style dilated stack), ConvTranspose,
the quantized forms ConvInteger, QLinearConv, QDQ Conv and QLinearMatMul, and
onnxruntime's com.microsoft Attention, MultiHeadAttention and
GroupQueryAttention.

Picked up by scripts/make_onnx_models.py (load_extensions); built with its
helpers, no weight data (external, in a weights.bin that does not exist).
"""
import numpy as np
from onnx import helper

import make_onnx_models as base

F32 = base.F32
I64 = base.I64
I8 = base.I8
U8 = base.U8
I32 = 6
base.ELEM_BYTES.setdefault(I32, 4)  # the int32 biases of QDQ and QLinearConv
info = base.tensor_info
INT64_MAX = 9223372036854775807

SD_HIDDEN = 256
SD_HEADS = 4
SD_DIM = 64


def split_heads(g, scope, x, heads, dim):
    """x.view(b, s, heads, dim).transpose(1, 2): [b, heads, s, dim]."""
    r = base.reshape_leading2(g, scope, x, [heads, dim])
    return g.op(scope, "Transpose", [r], perm=[0, 2, 1, 3])


def merge(g, scope, ctx, hidden):
    """ctx.transpose(1, 2).reshape(b, s, hidden)."""
    t = g.op(scope, "Transpose", [ctx], perm=[0, 2, 1, 3])
    return base.reshape_leading2(g, scope, t, [hidden])


def attention_scale(g, scope, q):
    """torch.onnx's _attention_scale (symbolic_opset14): 1/sqrt(q.size(-1))
    as Shape -> Slice[-1:] -> Cast(float) -> Sqrt -> Div(1.0, .) -> Cast."""
    shape = g.op(scope, "Shape", [q])
    last = g.op(scope, "Slice", [shape, g.const(scope, [-1], np.int64),
                                 g.const(scope, [INT64_MAX], np.int64)])
    emb = g.op(scope, "Cast", [last], to=F32)
    scale = g.op(scope, "Div", [g.const(scope, [1.0], np.float32), g.op(scope, "Sqrt", [emb])])
    return g.op(scope, "Cast", [scale], to=F32)


def sdpa_opset14(g, scope, q, k, v, scale=None, mask=None):
    """torch.onnx's scaled_dot_product_attention (symbolic_opset14, torch
    2.1-2.5): K^T = Transpose(k, perm [0, 1, 3, 2]); q and K^T each Mul'd by
    Sqrt(scale) ("scale q, k before matmul for stability"); MatMul, the
    additive mask, Softmax(-1), MatMul with v.  scale None: computed from
    q's shape; else a Python float, written as a Constant."""
    if scale is None:
        scale = attention_scale(g, scope, q)
    else:
        scale = g.const(scope, scale, np.float32)
    kt = g.op(scope, "Transpose", [k], perm=[0, 1, 3, 2])
    qs = g.op(scope, "Mul", [q, g.op(scope, "Sqrt", [scale])])
    ks = g.op(scope, "Mul", [kt, g.op(scope, "Sqrt", [scale])])
    s = g.op(scope, "MatMul", [qs, ks])
    if mask is not None:
        s = g.op(scope, "Add", [s, mask])
    p = g.op(scope, "Softmax", [s], axis=-1)
    return g.op(scope, "MatMul", [p, v])


def make_sdpa_torch():
    """Two encoder layers (hidden 256, 4 heads of 64) whose attention is
    F.scaled_dot_product_attention, as torch.onnx.export (TorchScript,
    opset 14) decomposes it: layer 0 with the default scale (computed from
    Shape(q)), layer 1 with scale=0.125 and a float attn_mask input
    [1, 1, seq, seq].  Both scores are q.K^T with K^T scaled between the
    Transpose and the MatMul: batch_matmul layout NT."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "seq", SD_HIDDEN]),
                info("attn_mask", F32, [1, 1, "seq", "seq"])]
    g.outputs = [info("y", F32, ["batch", "seq", SD_HIDDEN])]
    h = "x"
    for i in range(2):
        L = "/layers.%d/self_attn" % i
        P = "layers.%d.self_attn" % i
        q = base.linear(g, L + "/q_proj", h, SD_HIDDEN, SD_HIDDEN, P + ".q_proj.bias")
        k = base.linear(g, L + "/k_proj", h, SD_HIDDEN, SD_HIDDEN, P + ".k_proj.bias")
        v = base.linear(g, L + "/v_proj", h, SD_HIDDEN, SD_HIDDEN, P + ".v_proj.bias")
        qh = split_heads(g, L, q, SD_HEADS, SD_DIM)
        kh = split_heads(g, L, k, SD_HEADS, SD_DIM)
        vh = split_heads(g, L, v, SD_HEADS, SD_DIM)
        ctx = sdpa_opset14(g, L, qh, kh, vh, None if i == 0 else 0.125,
                           None if i == 0 else "attn_mask")
        h = base.linear(g, L + "/out_proj", merge(g, L, ctx, SD_HIDDEN), SD_HIDDEN, SD_HIDDEN,
                        P + ".out_proj.bias")
    g.name_output(h, "y")
    return g.model(14, "Two encoder layers (hidden 256, 4 heads) using "
                   "F.scaled_dot_product_attention as torch.onnx.export (opset 14) decomposes "
                   "it: Transpose(k, [0,1,3,2]), Mul(q, Sqrt(scale)), Mul(K^T, Sqrt(scale)), "
                   "MatMul, Softmax, MatMul; the default scale from Shape(q) and scale=0.125 "
                   "with an additive mask; weights not included.")


def make_sdpa_dynamo():
    """One layer (hidden 256, 4 heads of 64) as torch.onnx.export(dynamo=True)
    writes F.scaled_dot_product_attention (torchlib's
    aten_scaled_dot_product_attention, opset 18): K^T as Reshape(k, [-1,
    s, d]) -> Transpose [0, 2, 1] -> Reshape(b, h, d, s), the scale
    CastLike(Shape(q)[-1]) -> Sqrt -> Div(1, .) -> Sqrt on q and on K^T.
    Node names "node_<Op>_<n>", values "val_<n>"."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "seq", SD_HIDDEN])]
    g.outputs = [info("y", F32, ["batch", "seq", SD_HIDDEN])]
    n = [0]

    def op(op_type, ins, nout=1, **attrs):
        outs = ["val_%d" % (n[0] + i) for i in range(nout)]
        g.raw(op_type, ins, outs, "node_%s_%d" % (op_type, n[0]), **attrs)
        n[0] += nout
        return outs[0] if nout == 1 else outs

    def const(value, dtype):
        from onnx import numpy_helper
        return op("Constant", [], value=numpy_helper.from_array(np.array(value, dtype=dtype)))

    def linear(x, name):
        w = g.weight(name + ".weight", [SD_HIDDEN, SD_HIDDEN])
        t = op("Transpose", [w], perm=[1, 0])
        y = op("MatMul", [x, t])
        return op("Add", [y, g.weight(name + ".bias", [SD_HIDDEN])])

    def heads(x):
        r = op("Reshape", [x, const([0, 0, SD_HEADS, SD_DIM], np.int64)])
        return op("Transpose", [r], perm=[0, 2, 1, 3])

    P = "layers.0.self_attn"
    q = heads(linear("x", P + ".q_proj"))
    k = heads(linear("x", P + ".k_proj"))
    v = heads(linear("x", P + ".v_proj"))
    ks = op("Shape", [k])
    last = op("Slice", [ks, const([-1], np.int64), const([INT64_MAX], np.int64)])
    second = op("Slice", [ks, const([-2], np.int64), const([-1], np.int64)])
    first = op("Slice", [ks, const([0], np.int64), const([-2], np.int64)])
    squeezed = op("Reshape", [k, op("Concat", [const([-1], np.int64), second, last], axis=0)])
    st = op("Transpose", [squeezed], perm=[0, 2, 1])
    kt = op("Reshape", [st, op("Concat", [first, last, second], axis=0)])
    qs_ = op("Shape", [q])
    emb = op("CastLike", [op("Slice", [qs_, const([-1], np.int64),
                                       const([INT64_MAX], np.int64)]), q])
    scale = op("Div", [const(1.0, np.float32), op("Sqrt", [emb])])
    qsc = op("Mul", [q, op("Sqrt", [scale])])
    ksc = op("Mul", [kt, op("Sqrt", [scale])])
    p = op("Softmax", [op("MatMul", [qsc, ksc])], axis=-1)
    ctx = op("MatMul", [p, v])
    ctx = op("Reshape", [op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                         const([0, 0, SD_HIDDEN], np.int64)])
    w = g.weight(P + ".out_proj.weight", [SD_HIDDEN, SD_HIDDEN])
    y = op("MatMul", [ctx, op("Transpose", [w], perm=[1, 0])])
    g.raw("Add", [y, g.weight(P + ".out_proj.bias", [SD_HIDDEN])], ["y"], "node_Add_out")
    return g.model(18, "One encoder layer (hidden 256, 4 heads) using "
                   "F.scaled_dot_product_attention as torch.onnx.export(dynamo=True) writes it "
                   "(opset 18): K^T as Reshape -> Transpose [0,2,1] -> Reshape, then Mul by "
                   "Sqrt(scale) on q and K^T; weights not included.", ir_version=10)


def conv(g, scope, x, prefix, wdims, bias=True, **attrs):
    ins = [x, g.weight(prefix + ".weight", wdims)]
    if bias:
        ins.append(g.weight(prefix + ".bias", [wdims[0]]))
    return g.op(scope, "Conv", ins, **attrs)


def make_stft_frontend():
    """A learned-STFT speech front end as torch.onnx.export (opset 17)
    writes nnAudio's / asteroid's conv STFT: waveform [batch, samples] ->
    unsqueeze(1) -> F.pad(reflect, n_fft/2 = 256 each side) -> Conv1d with
    the 257 cosine and 257 sine kernels of a 512-point frame (weight
    [514, 1, 512], stride = hop 128, no bias) -> real/imag Slices -> power
    and Sqrt (the magnitude); then an encoder: Conv1d k=3 pads [1,1] (listed:
    a padded Conv1d), Relu, Conv1d k=3 stride 2 unpadded + bias + Relu."""
    g = base.Graph("main_graph")
    g.inputs = [info("waveform", F32, ["batch", "samples"])]
    g.outputs = [info("features", F32, ["batch", 256, "out_frames"])]
    S = "/stft"
    x = g.op(S, "Unsqueeze", ["waveform", g.const(S, [1], np.int64)])
    x = g.op(S, "Pad", [x, g.const(S, [0, 0, 256, 0, 0, 256], np.int64)], mode="reflect")
    spec = conv(g, S, x, "stft.kernels", [514, 1, 512], bias=False, dilations=[1], group=1,
                kernel_shape=[512], pads=[0, 0], strides=[128])
    real = g.op(S, "Slice", [spec, g.const(S, [0], np.int64), g.const(S, [257], np.int64),
                             g.const(S, [1], np.int64)])
    imag = g.op(S, "Slice", [spec, g.const(S, [257], np.int64), g.const(S, [514], np.int64),
                             g.const(S, [1], np.int64)])
    power = g.op(S, "Add", [g.op(S, "Pow", [real, g.const(S, 2.0, np.float32)]),
                            g.op(S, "Pow", [imag, g.const(S, 2.0, np.float32)])])
    mag = g.op(S, "Sqrt", [power])
    h = conv(g, "/encoder/conv0", mag, "encoder.conv0", [256, 257, 3], dilations=[1], group=1,
             kernel_shape=[3], pads=[1, 1], strides=[1])
    h = g.op("/encoder/act0", "Relu", [h])
    h = conv(g, "/encoder/conv1", h, "encoder.conv1", [256, 256, 3], dilations=[1], group=1,
             kernel_shape=[3], pads=[0, 0], strides=[2])
    h = g.op("/encoder/act1", "Relu", [h])
    g.name_output(h, "features")
    return g.model(17, "A conv-STFT speech front end (512-point frames, hop 128: a Conv1d of "
                   "stride 128 after a reflect Pad), the magnitude, and two Conv1d encoder "
                   "layers (one padded, listed; one strided); weights not included.")


def make_wavenet_dilated():
    """A WaveNet-style causal stack (torch, opset 17): each layer F.pad(x,
    (d, 0)) -> Conv1d(64 -> 128, k=2, dilation d, unpadded) -> Split into
    tanh and sigmoid halves -> their product -> 1x1 Conv1d + bias -> the
    residual Add; dilations 1, 128 and 512 (above conv2d's old limit of
    64).  The causal padding is the Pad node's, so each Conv is unpadded."""
    g = base.Graph("main_graph")
    g.inputs = [info("audio", F32, ["batch", 64, "time"])]
    g.outputs = [info("residual", F32, ["batch", 64, "time"])]
    x = "audio"
    for i, d in enumerate([1, 128, 512]):
        L = "/layers.%d" % i
        p = g.op(L, "Pad", [x, g.const(L, [0, 0, d, 0, 0, 0], np.int64)], mode="constant")
        h = conv(g, L + "/dilated", p, "layers.%d.dilated" % i, [128, 64, 2], dilations=[d],
                 group=1, kernel_shape=[2], pads=[0, 0], strides=[1])
        t, s = g.op(L, "Split", [h, g.const(L, [64, 64], np.int64)], nout=2, axis=1)
        z = g.op(L, "Mul", [g.op(L, "Tanh", [t]), g.op(L, "Sigmoid", [s])])
        o = conv(g, L + "/res", z, "layers.%d.res" % i, [64, 64, 1], dilations=[1], group=1,
                 kernel_shape=[1], pads=[0, 0], strides=[1])
        x = g.op(L, "Add", [x, o])
    g.name_output(x, "residual")
    return g.model(17, "A WaveNet-style causal stack: Pad (d, 0) -> Conv1d k=2 dilation 1, 128, "
                   "512 -> gated tanh x sigmoid -> 1x1 Conv1d -> residual Add; weights not "
                   "included.")


def make_conv_transpose():
    """A decoder with transposed convolutions (torch, opset 17): a DCGAN-style
    2-D upsampler ConvTranspose(64 -> 32, k=4, stride 2, pad 1) + Relu, then
    a 3x3 Conv; and a HiFi-GAN-style 1-D upsampler ConvTranspose(128 -> 64,
    k=16, stride 8, pad 4) on a second input.  Both ConvTransposes are
    conv2d's transposed mode (transpose=1)."""
    g = base.Graph("main_graph")
    g.inputs = [info("latent", F32, ["batch", 64, "h", "w"]),
                info("mel", F32, ["batch", 128, "frames"])]
    g.outputs = [info("image", F32, ["batch", 3, "oh", "ow"]),
                 info("wave", F32, ["batch", 64, "samples"])]
    up = g.op("/up", "ConvTranspose",
              ["latent", g.weight("up.weight", [64, 32, 4, 4]), g.weight("up.bias", [32])],
              dilations=[1, 1], group=1, kernel_shape=[4, 4], output_padding=[0, 0],
              pads=[1, 1, 1, 1], strides=[2, 2])
    up = g.op("/up", "Relu", [up])
    img = conv(g, "/out", up, "out", [3, 32, 3, 3], dilations=[1, 1], group=1,
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    g.name_output(img, "image")
    wave = g.op("/ups.0", "ConvTranspose",
                ["mel", g.weight("ups.0.weight", [128, 64, 16]), g.weight("ups.0.bias", [64])],
                dilations=[1], group=1, kernel_shape=[16], output_padding=[0], pads=[4, 4],
                strides=[8])
    g.name_output(wave, "wave")
    return g.model(17, "A 2-D ConvTranspose (k=4, stride 2, pad 1) + Relu + a 3x3 Conv, and a "
                   "1-D ConvTranspose (k=16, stride 8, pad 4) as torch exports them; weights "
                   "not included.")


def dynamic_conv(g, name, out, x, wdims, bias_name, weight_type=I8, x_q=None):
    """A Conv as onnxruntime's quantize_dynamic (QOperator) rewrites it
    (operators/conv.py, ConvInteger): DynamicQuantizeLinear(x) (shared when
    x_q is given) -> ConvInteger(x_q, W_q, x_zp, W_zp) "<name>_quant" ->
    Cast "<out>_output_quantized_cast" -> Mul(., Mul(x_scale, W_scale))
    "<name>_quant_output_scale_mul" -> Add of Reshape(bias, [1, -1, 1, 1])
    "<out>_bias_add".  Per-tensor weights, zero point 0."""
    if x_q is None:
        x_q = g.raw("DynamicQuantizeLinear", [x],
                    [x + "_quantized", x + "_scale", x + "_zero_point"], x + "_QuantizeLinear")
    xq, xs, xzp = x_q
    w = name.strip("/").replace("/", ".") + ".weight"
    wq = g.weight(w + "_quantized", wdims, weight_type)
    ws = g.small(w + "_scale", 0.003, np.float32)
    wzp = g.small(w + "_zero_point", 0 if weight_type == I8 else 128,
                  np.int8 if weight_type == I8 else np.uint8)
    k = wdims[2]
    qi = g.raw("ConvInteger", [xq, wq, xzp, wzp], [out + "_output_quantized"], name + "_quant",
               dilations=[1, 1], group=1, kernel_shape=[k, k], pads=[k // 2] * 4,
               strides=[1, 1])
    cast = g.raw("Cast", [qi], [qi + "_cast_output"], qi + "_cast", to=F32)
    scales = g.raw("Mul", [xs, ws], [name + "_quant_scales_mul:0"], name + "_quant_scales_mul")
    scaled = g.raw("Mul", [cast, scales], [out + "quant_scaled_output"],
                   name + "_quant_output_scale_mul")
    shape = g.small(out + "_bias_reshape_shape", [1, -1, 1, 1], np.int64)
    b = g.raw("Reshape", [g.weight(bias_name, [wdims[0]]), shape],
              [out + "_bias_reshape_output"], out + "_bias_reshape")
    return g.raw("Add", [scaled, b], [out], out + "_bias_add"), x_q


def make_conv_int8_dynamic():
    """A small CNN as onnxruntime's quantize_dynamic(weight_type=QInt8)
    leaves it: conv1 (3x3, 3 -> 32) and conv2 (3x3, 32 -> 32) as
    DynamicQuantizeLinear -> ConvInteger (s8 weights, zero point 0) -> Cast
    -> scale Mul -> bias Add -> Relu; conv3 as quantize_dynamic with
    weight_type=QUInt8 writes it (u8 weights, zero point 128: listed)."""
    g = base.Graph("main_graph")
    g.inputs = [info("input", F32, ["batch", 3, "height", "width"])]
    g.outputs = [info("output", F32, ["batch", 16, "height", "width"])]
    x, _ = dynamic_conv(g, "/conv1/Conv", "/conv1/Conv_output_0", "input", [32, 3, 3, 3],
                        "conv1.bias")
    x = g.op("/relu1", "Relu", [x])
    x, _ = dynamic_conv(g, "/conv2/Conv", "/conv2/Conv_output_0", x, [32, 32, 3, 3], "conv2.bias")
    x = g.op("/relu2", "Relu", [x])
    x, _ = dynamic_conv(g, "/conv3/Conv", "output", x, [16, 32, 3, 3], "conv3.bias",
                        weight_type=U8)
    return g.model(14, "A three-Conv CNN as onnxruntime's quantize_dynamic writes it: "
                   "DynamicQuantizeLinear + ConvInteger + Cast + scale Mul + bias Add (s8 weights "
                   "twice, then u8 weights); weights not included.",
                   extra_opsets=[("com.microsoft", 1)])


def make_conv_int8_qdq():
    """A CNN as onnxruntime's quantize_static (QDQ format, per_channel=True)
    leaves it: every activation QuantizeLinear -> DequantizeLinear (u8, one
    scale and zero point), every weight DequantizeLinear(W s8, scale [K],
    zero point [K] of 0, axis 0), the bias DequantizeLinear(int32, scale
    [K]); conv1 3x3 + Relu, conv2 1x1 stride 2; conv3 with QInt8 activations
    (listed: s8 activations); conv4 on the float input with only its weight
    quantized (w8a32)."""
    g = base.Graph("main_graph")
    g.inputs = [info("input", F32, ["batch", 16, 32, 32])]
    g.outputs = [info("output", F32, ["batch", 32, 16, 16]),
                 info("side", F32, ["batch", 8, 32, 32])]

    def qdq(x, elem=U8):
        s = g.small(x + "_scale", 0.02, np.float32)
        z = g.small(x + "_zero_point", 128 if elem == U8 else 0,
                    np.uint8 if elem == U8 else np.int8)
        q = g.raw("QuantizeLinear", [x, s, z], [x + "_QuantizeLinear_Output"],
                  x + "_QuantizeLinear")
        return g.raw("DequantizeLinear", [q, s, z], [x + "_DequantizeLinear_Output"],
                     x + "_DequantizeLinear")

    def wdq(name, dims):
        wq = g.weight(name + "_quantized", dims, I8)
        s = g.weight(name + "_scale", [dims[0]], F32)
        z = g.weight(name + "_zero_point", [dims[0]], I8)
        return g.raw("DequantizeLinear", [wq, s, z], [name + "_DequantizeLinear_Output"],
                     name + "_DequantizeLinear", axis=0)

    def bdq(name, k):
        bq = g.weight(name + "_quantized", [k], I32)
        s = g.weight(name + "_quantized_scale", [k], F32)
        z = g.weight(name + "_quantized_zero_point", [k], I32)
        return g.raw("DequantizeLinear", [bq, s, z], [name + "_DequantizeLinear_Output"],
                     name + "_DequantizeLinear", axis=0)

    def qconv(scope, x, name, dims, stride, pad):
        return g.op(scope, "Conv", [x, wdq(name + ".weight", dims), bdq(name + ".bias", dims[0])],
                    dilations=[1, 1], group=1, kernel_shape=dims[2:], pads=[pad] * 4,
                    strides=[stride, stride])

    x = qconv("/conv1", qdq("input"), "conv1", [32, 16, 3, 3], 1, 1)
    x = g.op("/relu1", "Relu", [x])
    x = qconv("/conv2", qdq(x), "conv2", [32, 32, 1, 1], 2, 0)
    x = qconv("/conv3", qdq(x, I8), "conv3", [32, 32, 3, 3], 1, 1)
    g.name_output(x, "output")
    y = qconv("/conv4", "input", "conv4", [8, 16, 3, 3], 1, 1)
    g.name_output(y, "side")
    return g.model(14, "A CNN as onnxruntime's quantize_static (QDQ, per-channel s8 weights) "
                   "leaves it: u8 QDQ activations into conv1 3x3 + Relu and conv2 1x1 stride 2, "
                   "s8 activations into conv3 (listed), and a weight-only conv4 on the float "
                   "input; weights not included.")


def make_qlinear_ops():
    """onnxruntime's quantize_static in QOperator format: QuantizeLinear(x) ->
    QLinearConv (u8 x s8 per-channel, u8 out) -> QLinearConv with u8 weights
    of zero point 128 -> DequantizeLinear -> Flatten -> QuantizeLinear ->
    QLinearMatMul (u8 x s8, u8 out) -> DequantizeLinear.  All listed: their
    results are requantized."""
    g = base.Graph("main_graph")
    g.inputs = [info("input", F32, ["batch", 8, 8, 8])]
    g.outputs = [info("output", F32, ["batch", 10])]
    xs = g.small("input_scale", 0.02, np.float32)
    xz = g.small("input_zero_point", 128, np.uint8)
    xq = g.raw("QuantizeLinear", ["input", xs, xz], ["input_quantized"], "input_QuantizeLinear")

    def qconv(name, x, xs_, xz_, dims, wtype):
        wq = g.weight(name + ".weight_quantized", dims, wtype)
        ws = g.weight(name + ".weight_scale", [dims[0]], F32)
        wz = g.weight(name + ".weight_zero_point", [dims[0]], wtype)
        ys = g.small(name + "_output_scale", 0.05, np.float32)
        yz = g.small(name + "_output_zero_point", 0, np.uint8)
        b = g.weight(name + ".bias_quantized", [dims[0]], I32)
        out = g.raw("QLinearConv", [x, xs_, xz_, wq, ws, wz, ys, yz, b],
                    ["/%s/Conv_output_0_quantized" % name], "/%s/Conv_quant" % name,
                    dilations=[1, 1], group=1, kernel_shape=dims[2:], pads=[1, 1, 1, 1],
                    strides=[1, 1])
        return out, ys, yz

    y, ys, yz = qconv("conv1", xq, xs, xz, [16, 8, 3, 3], I8)
    y, ys, yz = qconv("conv2", y, ys, yz, [16, 16, 3, 3], U8)
    d = g.raw("DequantizeLinear", [y, ys, yz], ["/conv2/Conv_output_0"],
              "/conv2/Conv_output_0_DequantizeLinear")
    f = g.op("/Flatten", "Flatten", [d], axis=1)
    fs = g.small("/Flatten_output_0_scale", 0.05, np.float32)
    fz = g.small("/Flatten_output_0_zero_point", 0, np.uint8)
    fq = g.raw("QuantizeLinear", [f, fs, fz], ["/Flatten_output_0_quantized"],
               "/Flatten_output_0_QuantizeLinear")
    wq = g.weight("onnx::MatMul_2001_quantized", [1024, 10], I8)
    ws = g.small("onnx::MatMul_2001_scale", 0.001, np.float32)
    wz = g.small("onnx::MatMul_2001_zero_point", 0, np.int8)
    os_ = g.small("output_scale", 0.1, np.float32)
    oz = g.small("output_zero_point", 128, np.uint8)
    mq = g.raw("QLinearMatMul", [fq, fs, fz, wq, ws, wz, os_, oz], ["/fc/MatMul_output_0_quantized"],
               "/fc/MatMul_quant")
    h = g.raw("DequantizeLinear", [mq, os_, oz], ["/fc/MatMul_output_0"],
              "/fc/MatMul_output_0_DequantizeLinear")
    # the classifier left float (nodes_to_exclude)
    y = g.op("/head", "MatMul", [h, g.anon_weight([10, 10])])
    y = g.op("/head", "Add", [g.weight("head.bias", [10]), y])
    g.name_output(y, "output")
    return g.model(14, "Two QLinearConv (s8 and u8 weights) and a QLinearMatMul as "
                   "onnxruntime's quantize_static writes them in QOperator format, then a float "
                   "classifier; weights not included.", extra_opsets=[("com.microsoft", 1)])


def ms_node(g, op_type, ins, outs, name, **attrs):
    g.nodes.append(helper.make_node(op_type, ins, outs, name=name, domain="com.microsoft",
                                    **attrs))
    return outs[0]


def make_ms_attention():
    """onnxruntime's transformers optimizer output (optimizer.optimize_model,
    model_type "bert", opset 14 + com.microsoft) for an encoder layer and a
    decoder block, hidden 256, 4 heads of 64:
      Attention_0  com.microsoft Attention(input, weights [256, 768], bias
                   [768], mask_index [batch, seq] int32), num_heads 4;
                   then the output MatMul, SkipLayerNormalization (with the
                   bias), MatMul + BiasGelu, MatMul, SkipLayerNormalization
      MHA self     com.microsoft MultiHeadAttention(q, k, v [batch, seq,
                   256], bias [768], past_key, past_value [batch, 4,
                   past_seq, 64]) of a decoder with a KV cache
      MHA cross    MultiHeadAttention(q, k, v) with k, v from the encoder
                   output [batch, enc_seq, 256] (cross attention)
    The optimizer runs symbolic shape inference; its value_info declares the
    attention ops' outputs (no shape rule in dtune)."""
    g = base.Graph("main_graph")
    H = SD_HIDDEN
    g.inputs = [info("input_states", F32, ["batch", "seq", H]),
                info("attention_mask", I32, ["batch", "seq"]),
                info("decoder_states", F32, ["batch", "dec_seq", H]),
                info("past_key", F32, ["batch", SD_HEADS, "past_seq", SD_DIM]),
                info("past_value", F32, ["batch", SD_HEADS, "past_seq", SD_DIM])]
    g.outputs = [info("encoder_out", F32, ["batch", "seq", H]),
                 info("decoder_out", F32, ["batch", "dec_seq", H]),
                 info("present_key", F32, ["batch", SD_HEADS, "total_seq", SD_DIM]),
                 info("present_value", F32, ["batch", SD_HEADS, "total_seq", SD_DIM])]
    vi = []
    P = "encoder.layer.0"
    att = ms_node(g, "Attention", ["input_states", g.weight("Attention_0_qkv_weight", [H, 3 * H]),
                                   g.weight("Attention_0_qkv_bias", [3 * H]), "attention_mask"],
                  ["Attention_0_output"], "Attention_0", num_heads=SD_HEADS)
    vi.append(info(att, F32, ["batch", "seq", H]))
    d = g.op("/%s/attention/output/dense" % P, "MatMul", [att, g.anon_weight([H, H])])
    ln = ms_node(g, "SkipLayerNormalization",
                 [d, "input_states", g.weight(P + ".attention.output.LayerNorm.weight", [H]),
                  g.weight(P + ".attention.output.LayerNorm.beta", [H]),
                  g.weight(P + ".attention.output.dense.bias", [H])],
                 ["SkipLayerNorm_0_output"], "SkipLayerNorm_0", epsilon=1e-12)
    up = g.op("/%s/intermediate/dense" % P, "MatMul", [ln, g.anon_weight([H, 4 * H])])
    act = ms_node(g, "BiasGelu", [up, g.weight(P + ".intermediate.dense.bias", [4 * H])],
                  ["BiasGelu_0_output"], "BiasGelu_0")
    down = g.op("/%s/output/dense" % P, "MatMul", [act, g.anon_weight([4 * H, H])])
    enc = ms_node(g, "SkipLayerNormalization",
                  [down, ln, g.weight(P + ".output.LayerNorm.weight", [H]),
                   g.weight(P + ".output.LayerNorm.bias", [H]),
                   g.weight(P + ".output.dense.bias", [H])],
                  ["encoder_out"], "SkipLayerNorm_1", epsilon=1e-12)
    D = "/decoder/block.0"
    q = g.op(D + "/self_attn/q_proj", "MatMul", ["decoder_states", g.anon_weight([H, H])])
    k = g.op(D + "/self_attn/k_proj", "MatMul", ["decoder_states", g.anon_weight([H, H])])
    v = g.op(D + "/self_attn/v_proj", "MatMul", ["decoder_states", g.anon_weight([H, H])])
    sa = ms_node(g, "MultiHeadAttention",
                 [q, k, v, g.weight("MultiHeadAttention_0_bias", [3 * H]), "", "",
                  "past_key", "past_value"],
                 ["MultiHeadAttention_0_output", "present_key", "present_value"],
                 "MultiHeadAttention_0", num_heads=SD_HEADS, unidirectional=1)
    vi.append(info(sa, F32, ["batch", "dec_seq", H]))
    o = g.op(D + "/self_attn/out_proj", "MatMul", [sa, g.anon_weight([H, H])])
    cq = g.op(D + "/cross_attn/q_proj", "MatMul", [o, g.anon_weight([H, H])])
    ck = g.op(D + "/cross_attn/k_proj", "MatMul", ["encoder_out", g.anon_weight([H, H])])
    cv = g.op(D + "/cross_attn/v_proj", "MatMul", ["encoder_out", g.anon_weight([H, H])])
    ca = ms_node(g, "MultiHeadAttention", [cq, ck, cv], ["MultiHeadAttention_1_output"],
                 "MultiHeadAttention_1", num_heads=SD_HEADS)
    vi.append(info(ca, F32, ["batch", "dec_seq", H]))
    out = g.op(D + "/cross_attn/out_proj", "MatMul", [ca, g.anon_weight([H, H])])
    g.name_output(out, "decoder_out")
    m = g.model(14, "onnxruntime's transformers optimizer output: a BERT-style encoder layer "
                "with com.microsoft Attention, SkipLayerNormalization and BiasGelu, and a "
                "decoder block with MultiHeadAttention (self, with a KV cache; cross, on the "
                "encoder output); value_info from symbolic shape inference; weights not "
                "included.", extra_opsets=[("com.microsoft", 1)])
    m.graph.value_info.extend(vi)
    return m


def make_ms_gqa():
    """A Llama-style decoder layer as onnxruntime-genai's model builder
    writes it (opset 21 + com.microsoft): SimplifiedLayerNormalization, q,
    k, v MatMuls (8 query heads, 2 kv heads of 64), GroupQueryAttention(q,
    k, v, past_key, past_value [batch, 2, past_sequence_length, 64],
    seqlens_k, total_sequence_length, cos_cache, sin_cache) with do_rotary,
    the o_proj MatMul, the residual and a SwiGLU MLP.  value_info declares
    the attention output."""
    g = base.Graph("main_graph")
    H, KV, HD = 512, 128, 64
    g.inputs = [info("inputs_embeds", F32, ["batch_size", "sequence_length", H]),
                info("past_key_values.0.key", F32, ["batch_size", 2, "past_sequence_length", HD]),
                info("past_key_values.0.value", F32,
                     ["batch_size", 2, "past_sequence_length", HD]),
                info("seqlens_k", I32, ["batch_size"]),
                info("total_sequence_length", I32, [])]
    g.outputs = [info("hidden", F32, ["batch_size", "sequence_length", H]),
                 info("present.0.key", F32, ["batch_size", 2, "total_sequence_length", HD]),
                 info("present.0.value", F32, ["batch_size", 2, "total_sequence_length", HD])]
    L = "/model/layers.0"
    # the builder writes it in the default domain, where onnxruntime registers
    # it; onnx's checker does not know it there, so here it is com.microsoft's
    n = ms_node(g, "SimplifiedLayerNormalization",
                ["inputs_embeds", g.weight("model.layers.0.input_layernorm.weight", [H])],
                [L + "/input_layernorm/output_0"], L + "/input_layernorm/LayerNorm", axis=-1,
                epsilon=1e-5, stash_type=1)

    def mm(name, x, k, n_):
        return g.raw("MatMul", [x, g.weight(name.strip("/").replace("/", ".") + ".weight",
                                              [k, n_])],
                     [name + "/MatMul/output_0"], name + "/MatMul")

    q = mm(L + "/attn/q_proj", n, H, H)
    k = mm(L + "/attn/k_proj", n, H, KV)
    v = mm(L + "/attn/v_proj", n, H, KV)
    att = ms_node(g, "GroupQueryAttention",
                  [q, k, v, "past_key_values.0.key", "past_key_values.0.value", "seqlens_k",
                   "total_sequence_length", g.weight("cos_cache", [2048, HD // 2]),
                   g.weight("sin_cache", [2048, HD // 2])],
                  [L + "/attn/GroupQueryAttention/output_0", "present.0.key", "present.0.value"],
                  L + "/attn/GroupQueryAttention", num_heads=8, kv_num_heads=2, do_rotary=1,
                  local_window_size=-1, rotary_interleaved=0, scale=0.125, softcap=0.0)
    o = mm(L + "/attn/o_proj", att, H, H)
    r = g.raw("Add", ["inputs_embeds", o], [L + "/residual_add/output_0"], L + "/residual_add")
    gate = mm(L + "/mlp/gate_proj", r, H, 1024)
    up = mm(L + "/mlp/up_proj", r, H, 1024)
    sg = g.raw("Sigmoid", [gate], [L + "/mlp/act_fn/Sigmoid/output_0"], L + "/mlp/act_fn/Sigmoid")
    si = g.raw("Mul", [gate, sg], [L + "/mlp/act_fn/Mul/output_0"], L + "/mlp/act_fn/Mul")
    gu = g.raw("Mul", [si, up], [L + "/mlp/Mul/output_0"], L + "/mlp/Mul")
    d = mm(L + "/mlp/down_proj", gu, 1024, H)
    g.raw("Add", [r, d], ["hidden"], L + "/residual_add_1")
    m = g.model(21, "A Llama-style layer as onnxruntime-genai's model builder writes it: "
                "com.microsoft GroupQueryAttention (8 query heads, 2 kv heads of 64, rotary, a "
                "KV cache), SimplifiedLayerNormalization, SwiGLU MLP; weights not included.",
                extra_opsets=[("com.microsoft", 1)], ir_version=10)
    m.graph.value_info.extend([info(att, F32, ["batch_size", "sequence_length", H])])
    return m


GOOD = [
    ("sdpa-torch.onnx", make_sdpa_torch),
    ("sdpa-dynamo.onnx", make_sdpa_dynamo),
    ("stft-frontend.onnx", make_stft_frontend),
    ("wavenet-dilated.onnx", make_wavenet_dilated),
    ("conv-transpose.onnx", make_conv_transpose),
    ("conv-int8-dynamic.onnx", make_conv_int8_dynamic),
    ("conv-int8-qdq.onnx", make_conv_int8_qdq),
    ("qlinear-ops.onnx", make_qlinear_ops),
    ("ms-attention.onnx", make_ms_attention),
    ("ms-gqa.onnx", make_ms_gqa),
]
BAD = []
