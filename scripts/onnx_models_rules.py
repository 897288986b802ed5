"""Test models for the shape rules of issue 30 (tests/data/onnx/README.md):
Resize in a torchvision FPN, a bidirectional LSTM encoder, a speech model
with If and GRU, a dynamo-exported encoder building masks with GatherND and
a paddle2onnx CRNN text recogniser.  Each graph follows its exporter's
patterns and names; loaded by make_onnx_models.py's load_extensions()."""
import numpy as np
from onnx import helper

import make_onnx_models as base

F32 = base.F32
I64 = base.I64
info = base.tensor_info


def conv(g, scope, x, prefix, cout, cin, k, stride=1, pad=0, bias=True):
    ins = [x, g.weight(prefix + ".weight", [cout, cin, k, k])]
    if bias:
        ins.append(g.weight(prefix + ".bias", [cout]))
    return g.op(scope, "Conv", ins, dilations=[1, 1], group=1, kernel_shape=[k, k],
                pads=[pad] * 4, strides=[stride, stride])


def make_fpn_resize():
    """torchvision's FeaturePyramidNetwork on a two-stage backbone, opset 13:
    the top-down F.interpolate(size=feat.shape[-2:], mode="nearest") is
    Resize(x, roi, scales, sizes) with empty Constants for roi and scales and
    sizes = Concat(Shape(x)[0:2], Shape(lateral)[2:4]); a segmentation-style
    F.interpolate(scale_factor=2) is Resize with scales a Constant
    [1,1,2,2]; LastLevelMaxPool is MaxPool(k 1, s 2); a classifier Gemm."""
    g = base.Graph("main_graph")
    g.inputs = [info("images", F32, ["batch", 3, "height", "width"])]
    c1 = g.op("/backbone/act1", "Relu", [conv(g, "/backbone/conv1", "images", "backbone.conv1", 64, 3, 3, 2, 1)])
    c2 = g.op("/backbone/act2", "Relu", [conv(g, "/backbone/conv2", c1, "backbone.conv2", 128, 64, 3, 2, 1)])
    lat = conv(g, "/fpn/inner_blocks.0/0", c1, "fpn.inner_blocks.0.0", 64, 64, 1)
    last = conv(g, "/fpn/inner_blocks.1/0", c2, "fpn.inner_blocks.1.0", 64, 128, 1)
    s = "/fpn"
    sh_lat = g.op(s, "Shape", [lat])
    hw = g.op(s, "Slice", [sh_lat, g.const(s, [2], np.int64), g.const(s, [4], np.int64),
                           g.const(s, [0], np.int64)])
    sh_last = g.op(s, "Shape", [last])
    nc = g.op(s, "Slice", [sh_last, g.const(s, [0], np.int64), g.const(s, [2], np.int64),
                           g.const(s, [0], np.int64)])
    sizes = g.op(s, "Concat", [nc, hw], axis=0)
    empty = g.const(s, np.zeros([0], np.float32), np.float32)
    top = g.op(s, "Resize", [last, empty, empty, sizes], coordinate_transformation_mode="asymmetric",
               cubic_coeff_a=-0.75, mode="nearest", nearest_mode="floor")
    p1 = conv(g, "/fpn/layer_blocks.0/0", g.op(s, "Add", [lat, top]), "fpn.layer_blocks.0.0", 64, 64, 3, 1, 1)
    p2 = conv(g, "/fpn/layer_blocks.1/0", last, "fpn.layer_blocks.1.0", 64, 64, 3, 1, 1)
    pool = g.op("/fpn/extra_blocks", "MaxPool", [p2], ceil_mode=0, kernel_shape=[1, 1], pads=[0, 0, 0, 0],
                strides=[2, 2])
    up = g.op("/seg", "Resize", [p1, g.const("/seg", np.zeros([0], np.float32), np.float32),
                                 g.const("/seg", [1.0, 1.0, 2.0, 2.0], np.float32)],
              coordinate_transformation_mode="asymmetric", cubic_coeff_a=-0.75, mode="nearest",
              nearest_mode="floor")
    gap = g.op("/head/avgpool", "GlobalAveragePool", [p2])
    flat = g.op("/head", "Flatten", [gap], axis=1)
    g.nodes.append(helper.make_node("Gemm", [flat, g.weight("head.fc.weight", [10, 64]),
                                             g.weight("head.fc.bias", [10])], ["logits"],
                                    name="/head/fc/Gemm", alpha=1.0, beta=1.0, transB=1))
    g.name_output(up, "upsampled")
    g.name_output(pool, "pool")
    g.outputs = [info("logits", F32, ["batch", 10]),
                 info("upsampled", F32, ["batch", 64, None, None]),
                 info("pool", F32, ["batch", 64, None, None])]
    return g.model(13, "torchvision FPN: Resize by sizes (from shapes) and by constant scales.")


def lstm_states(g, scope, x, batch_axis, ndir, hidden):
    """torch's zero initial states of nn.LSTM: Expand(0, [ndir, batch, hidden])."""
    b = base.unsqueeze0(g, scope, base.shape_dim(g, scope, x, batch_axis))
    shape = g.op(scope, "Concat", [g.const(scope, [ndir], np.int64), b, g.const(scope, [hidden], np.int64)],
                 axis=0)
    return g.op(scope, "Expand", [g.const(scope, 0.0, np.float32), shape])


def make_lstm_encoder():
    """nn.LSTM(80, 128, batch_first=True, bidirectional=True) + nn.Linear(256,
    512) as torch.onnx.export writes it at opset 14: Transpose to [seq, batch,
    80], LSTM with the reordered weights (onnx::LSTM_<n>) and zero states,
    Transpose(Y, [0,2,1,3]) -> Reshape [0,0,-1], Transpose back, MatMul + Add."""
    g = base.Graph("main_graph")
    g.inputs = [info("features", F32, ["batch", "seq", 80])]
    s = "/encoder/lstm"
    xt = g.op(s, "Transpose", ["features"], perm=[1, 0, 2])
    h0 = lstm_states(g, s, "features", 0, 2, 128)
    c0 = lstm_states(g, s + "_c", "features", 0, 2, 128)
    w = g.anon_weight([2, 512, 80], prefix="onnx::LSTM_")
    r = g.anon_weight([2, 512, 128], prefix="onnx::LSTM_")
    b = g.anon_weight([2, 1024], prefix="onnx::LSTM_")
    y, yh, yc = g.op(s, "LSTM", [xt, w, r, b, "", h0, c0], nout=3, direction="bidirectional",
                     hidden_size=128)
    yt = g.op(s, "Transpose", [y], perm=[0, 2, 1, 3])
    ys = g.op(s, "Reshape", [yt, g.const(s, [0, 0, -1], np.int64)])
    bt = g.op("/encoder", "Transpose", [ys], perm=[1, 0, 2])
    out = base.linear(g, "/proj", bt, 256, 512, "proj.bias")
    g.name_output(out, "encoded")
    g.name_output(yh, "h_n")
    g.outputs = [info("encoded", F32, ["batch", "seq", 512]), info("h_n", F32, [2, "batch", 128])]
    return g.model(14, "A bidirectional LSTM encoder and a projection, as torch exports them.")


def make_gru_if():
    """A voice-activity model in the style of silero-vad: If(sr == 16000)
    picks the input or a rescaled copy (two branches reading the outer x),
    then a GRU over [seq, batch, 64] carrying the state h, a ReLU MLP and a
    Sigmoid; the If's output is declared in value_info, as torch writes it."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "seq", 64]), info("sr", I64, []),
                info("h", F32, [1, "batch", 64])]
    is16k = g.op("", "Equal", ["sr", g.const("", 16000, np.int64)])
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["then_out"], name="/then/Identity")],
                               "then_branch", [], [info("then_out", F32, ["batch", "seq", 64])])
    half = helper.make_tensor("half", F32, [], [0.5])
    else_g = helper.make_graph(
        [helper.make_node("Constant", [], ["half_c"], name="/else/Constant", value=half),
         helper.make_node("Mul", ["x", "half_c"], ["else_out"], name="/else/Mul")],
        "else_branch", [], [info("else_out", F32, ["batch", "seq", 64])])
    xi = g.op("", "If", [is16k], then_branch=then_g, else_branch=else_g)
    xt = g.op("/rnn", "Transpose", [xi], perm=[1, 0, 2])
    y, hn = g.op("/rnn", "GRU", [xt, g.anon_weight([1, 192, 64], prefix="onnx::GRU_"),
                                 g.anon_weight([1, 192, 64], prefix="onnx::GRU_"),
                                 g.anon_weight([1, 384], prefix="onnx::GRU_"), "", "h"],
                 nout=2, hidden_size=64, linear_before_reset=1)
    sq = g.op("/rnn", "Squeeze", [y, g.const("/rnn", [1], np.int64)])
    bt = g.op("/rnn", "Transpose", [sq], perm=[1, 0, 2])
    h1 = g.op("/decoder/act", "Relu", [base.linear(g, "/decoder/fc1", bt, 64, 32, "decoder.fc1.bias")])
    p = g.op("/decoder", "Sigmoid", [base.linear(g, "/decoder/fc2", h1, 32, 1, "decoder.fc2.bias")])
    g.name_output(p, "prob")
    g.name_output(hn, "hn")
    g.outputs = [info("prob", F32, ["batch", "seq", 1]), info("hn", F32, [1, "batch", 64])]
    m = g.model(16, "Voice activity: If on the sample rate, a GRU, an MLP.")
    m.graph.value_info.extend([info(xi, F32, ["batch", "seq", 64])])
    return m


def make_dynamo_gathernd():
    """A 4-head text encoder layer as torch's dynamo exporter writes it
    (opset 17 here; names node_<Op>_<n> / val_<n> collapsed into scopes):
    the causal rows are GatherND(buffer [512,512], Unsqueeze(Range(0, seq),
    -1)) sliced to [seq, seq], and the pooled last token is GatherND(h,
    ReduceSum(mask) - 1, batch_dims=1) feeding a classifier."""
    g = base.Graph("main_graph")
    g.inputs = [info("input_ids", I64, ["batch", "seq"]), info("attention_mask", I64, ["batch", "seq"])]
    h = g.op("/embed", "Gather", [g.weight("embed.weight", [30522, 256]), "input_ids"])
    s = "/mask"
    seq = base.shape_dim(g, s, "input_ids", 1)
    pos = g.op(s, "Range", [g.const(s, 0, np.int64), seq, g.const(s, 1, np.int64)])
    idx = g.op(s, "Unsqueeze", [pos, g.const(s, [-1], np.int64)])
    rows = g.op(s, "GatherND", [g.weight("causal_mask", [512, 512]), idx], batch_dims=0)
    causal = g.op(s, "Slice", [rows, g.const(s, [0], np.int64), base.unsqueeze0(g, s, seq),
                               g.const(s, [1], np.int64)])
    a = "/layer/attn"
    q, k, v = (base.linear(g, a + "/" + n, h, 256, 256, "attn.%s.bias" % n) for n in "qkv")

    def heads(x, perm):
        r = base.reshape_leading2(g, a, x, [4, 64])
        return g.op(a, "Transpose", [r], perm=perm)
    sc = g.op(a, "MatMul", [heads(q, [0, 2, 1, 3]), heads(k, [0, 2, 3, 1])])
    sc = g.op(a, "Add", [g.op(a, "Mul", [sc, g.const(a, 0.125, np.float32)]), causal])
    ctx = g.op(a, "MatMul", [g.op(a, "Softmax", [sc], axis=-1), heads(v, [0, 2, 1, 3])])
    merged = base.reshape_leading2(g, a, g.op(a, "Transpose", [ctx], perm=[0, 2, 1, 3]), [256])
    o = base.linear(g, a + "/o", merged, 256, 256, "attn.o.bias")
    p = "/pool"
    n = g.op(p, "ReduceSum", ["attention_mask", g.const(p, [1], np.int64)], keepdims=1)
    last = g.op(p, "Sub", [n, g.const(p, 1, np.int64)])
    pooled = g.op(p, "GatherND", [o, last], batch_dims=1)
    logits = base.linear(g, "/classifier", pooled, 256, 2, "classifier.bias")
    g.name_output(logits, "logits")
    g.outputs = [info("logits", F32, ["batch", 2])]
    return g.model(17, "A dynamo-style encoder layer: GatherND for causal rows and last-token pooling.")


def make_paddle_ocr_rec():
    """A CRNN text recogniser as paddle2onnx writes it (opset 14, HardSwish's
    first; dims named
    p2o.DynamicDimension.<n>): Pad, Conv + BatchNormalization + HardSwish,
    MaxPool down to height 1, Squeeze, Transpose, a bidirectional LSTM,
    Transpose + Reshape, the CTC head MatMul + Add, Softmax and ArgMax."""
    g = base.Graph("paddle-infer")
    g.inputs = [info("x", F32, ["p2o.DynamicDimension.0", 3, 48, "p2o.DynamicDimension.1"])]

    def raw(op, ins, name, **kw):
        return g.raw(op, ins, [name + ".tmp_0"], name, **kw)

    def cbh(x, i, cout, cin, stride, pad):
        c = raw("Conv", [x, g.weight("conv%d_weights" % i, [cout, cin, 3, 3])], "conv2d_%d" % i,
                dilations=[1, 1], group=1, kernel_shape=[3, 3], pads=[pad] * 4, strides=[stride, stride])
        bn = raw("BatchNormalization", [c] + [g.weight("bn%d_%s" % (i, t), [cout]) for t in
                                              ("scale", "offset", "mean", "variance")],
                 "batch_norm_%d" % i, epsilon=1e-5, momentum=0.9)
        return raw("HardSwish", [bn], "hardswish_%d" % i)

    pads = g.small("pad_0.pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)
    x = raw("Pad", ["x", pads], "pad_0", mode="constant")
    x = cbh(x, 0, 16, 3, 2, 0)
    x = raw("MaxPool", [x], "pool2d_0", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    x = cbh(x, 1, 32, 16, 1, 1)
    x = raw("MaxPool", [x], "pool2d_1", kernel_shape=[12, 2], strides=[12, 2], pads=[0, 0, 0, 0])
    x = raw("Squeeze", [x, g.small("squeeze_0.axes", [2], np.int64)], "squeeze_0")
    x = raw("Transpose", [x], "transpose_0", perm=[2, 0, 1])
    y, _, _ = g.raw("LSTM", [x, g.weight("lstm_0.w_0", [2, 192, 32]), g.weight("lstm_0.w_1", [2, 192, 48]),
                             g.weight("lstm_0.b_0", [2, 384])],
                    ["lstm_0.tmp_0", "lstm_0.tmp_1", "lstm_0.tmp_2"], "lstm_0",
                    direction="bidirectional", hidden_size=48)
    y = raw("Transpose", [y], "transpose_1", perm=[0, 2, 1, 3])
    y = raw("Reshape", [y, g.small("reshape_0.shape", [0, 0, 96], np.int64)], "reshape2_0")
    y = raw("Transpose", [y], "transpose_2", perm=[1, 0, 2])
    fc = raw("MatMul", [y, g.weight("ctc_fc.w_0", [96, 97])], "matmul_0")
    fc = raw("Add", [fc, g.weight("ctc_fc.b_0", [97])], "elementwise_add_0")
    prob = g.raw("Softmax", [fc], ["softmax_0.tmp_0"], "softmax_0", axis=2)
    g.raw("ArgMax", [prob], ["argmax_0.tmp_0"], "arg_max_0", axis=2, keepdims=0)
    g.outputs = [info("softmax_0.tmp_0", F32, ["p2o.DynamicDimension.0", None, 97]),
                 info("argmax_0.tmp_0", I64, ["p2o.DynamicDimension.0", None])]
    return g.model(14, "paddle2onnx CRNN recogniser: Conv/BN/HardSwish, LSTM, CTC head.")


GOOD = [
    ("fpn-resize.onnx", make_fpn_resize),
    ("lstm-encoder.onnx", make_lstm_encoder),
    ("gru-if-vad.onnx", make_gru_if),
    ("dynamo-gathernd.onnx", make_dynamo_gathernd),
    ("paddle-ocr-rec.onnx", make_paddle_ocr_rec),
]
