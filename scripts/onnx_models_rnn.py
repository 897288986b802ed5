"""Test models of the recurrent cells as workloads (issue 43, point 1;
tests/data/onnx/README.md, "Recurrent cells"): LSTM, GRU and RNN nodes in
the patterns their exporters write -- torch.onnx.export's _generic_rnn
(opset 14: weights reordered and folded into onnx::LSTM_<n> initializers,
a Transpose for batch_first, Transpose + Reshape of a bidirectional Y,
Squeeze of a unidirectional one, Slice of the states per layer, Concat of
the layers' Y_h), tf2onnx's rewrite of a Keras GRU(reset_after=False)
(linear_before_reset=0), a batch-first layout=1 cell with sequence_lens,
and onnxruntime's quantize_dynamic (com.microsoft DynamicQuantizeLSTM with
s8 weights transposed to [dirs, K, 4H] and per-channel scales).

Picked up by scripts/make_onnx_models.py (load_extensions); built with its
helpers, no weight data (external, in a weights.bin that does not exist).
"""
import numpy as np
from onnx import TensorProto, helper

import make_onnx_models as base

F32 = base.F32
F16 = TensorProto.FLOAT16
I32 = TensorProto.INT32
I64 = base.I64
I8 = base.I8
info = base.tensor_info
base.ELEM_BYTES.setdefault(F16, 2)  # the external length of a float16 weight


def zero_states(g, scope, x, batch_axis, ndir, hidden):
    """nn.LSTM/GRU/RNN without hx: torch.zeros(layers * dirs, batch, hidden)
    traced as Expand(0, Concat([dirs], Shape(x)[batch], [hidden]))."""
    b = base.unsqueeze0(g, scope, base.shape_dim(g, scope, x, batch_axis))
    shape = g.op(scope, "Concat", [g.const(scope, [ndir], np.int64), b,
                                   g.const(scope, [hidden], np.int64)], axis=0)
    return g.op(scope, "Expand", [g.const(scope, 0.0, np.float32), shape])


def torch_weights(g, gates, ndir, k, hidden, prefix="onnx::LSTM_"):
    """W [dirs, gates*H, K], R [dirs, gates*H, H], B [dirs, 2*gates*H]: what
    torch's symbolic makes of weight_ih/hh and bias_ih/hh (reordered i,f,g,o
    -> i,o,f,c for an LSTM, r,z,n -> z,r,h for a GRU), constant-folded."""
    return (g.anon_weight([ndir, gates * hidden, k], prefix=prefix),
            g.anon_weight([ndir, gates * hidden, hidden], prefix=prefix),
            g.anon_weight([ndir, 2 * gates * hidden], prefix=prefix))


def bidirectional_y(g, scope, y):
    """torch's [seq, 2, batch, H] -> [seq, batch, 2H]: Transpose [0,2,1,3]
    then Reshape [0, 0, -1]."""
    t = g.op(scope, "Transpose", [y], perm=[0, 2, 1, 3])
    return g.op(scope, "Reshape", [t, g.const(scope, [0, 0, -1], np.int64)])


def squeeze_dirs(g, scope, y):
    """torch's unidirectional [seq, 1, batch, H] -> [seq, batch, H]."""
    return g.op(scope, "Squeeze", [y, g.const(scope, [1], np.int64)])


def make_lstm_bidi_states():
    """nn.LSTM(40, 64, bidirectional=True) called as lstm(x, (h0, c0)),
    exported with input_names [input, h0, c0], output_names [output, hn,
    cn] and dynamic seq and batch: LSTM(input, W, R, B, '', h0, c0) with
    direction=bidirectional, Y -> Transpose -> Reshape."""
    g = base.Graph("main_graph")
    g.inputs = [info("input", F32, ["seq", "batch", 40]), info("h0", F32, [2, "batch", 64]),
                info("c0", F32, [2, "batch", 64])]
    s = "/lstm"
    w, r, b = torch_weights(g, 4, 2, 40, 64)
    y, yh, yc = g.op(s, "LSTM", ["input", w, r, b, "", "h0", "c0"], nout=3,
                     direction="bidirectional", hidden_size=64)
    out = bidirectional_y(g, s, y)
    g.name_output(out, "output")
    g.name_output(yh, "hn")
    g.name_output(yc, "cn")
    g.outputs = [info("output", F32, ["seq", "batch", 128]), info("hn", F32, [2, "batch", 64]),
                 info("cn", F32, [2, "batch", 64])]
    return g.model(14, "torch nn.LSTM(40, 64, bidirectional=True) with initial states (h0, c0).")


def make_lstm_layout1():
    """A batch-first keyword spotter whose cell reads X [batch, frames, 40]
    directly (layout=1, as the ONNX backend tests write it), direction
    reverse, no initial states, the padded batch's lengths as
    sequence_lens (int32 [batch]); Y_h [batch, 1, 96] -> Flatten -> Gemm
    classifier (12 keywords)."""
    g = base.Graph("kws")
    g.inputs = [info("features", F32, ["batch", "frames", 40]), info("lengths", I32, ["batch"])]
    s = "/encoder"
    w = g.weight("encoder.W", [1, 384, 40])
    r = g.weight("encoder.R", [1, 384, 96])
    b = g.weight("encoder.B", [1, 768])
    _, yh = g.raw("LSTM", ["features", w, r, b, "lengths"], ["", s + "/LSTM_output_1"],
                  s + "/LSTM", direction="reverse", hidden_size=96, layout=1)
    flat = g.op("/head", "Flatten", [yh], axis=1)
    g.nodes.append(helper.make_node("Gemm", [flat, g.weight("head.weight", [12, 96]),
                                             g.weight("head.bias", [12])], ["logits"],
                                    name="/head/Gemm", alpha=1.0, beta=1.0, transB=1))
    g.outputs = [info("logits", F32, ["batch", 12])]
    return g.model(14, "A layout=1 reverse LSTM with sequence_lens and a Gemm classifier.")


def make_gru_lbr0():
    """A Keras Sequential([GRU(64, reset_after=False, return_sequences=True),
    Dense(10)]) as tf2onnx (opset 13) writes it: the batch-major input
    transposed to time-major, GRU with linear_before_reset=0 (tf2onnx's
    names: GRU__<n>, W__<n>, ...), Squeeze, Transpose back, the Dense as
    MatMul + Add; unknown dims named unk__<n>."""
    g = base.Graph("tf2onnx")
    g.inputs = [info("input_1", F32, ["unk__18", "unk__19", 32])]
    xt = g.raw("Transpose", ["input_1"], ["Transpose__12:0"], "Transpose__12", perm=[1, 0, 2])
    y, _ = g.raw("GRU", [xt, g.weight("W__8", [1, 192, 32]), g.weight("R__9", [1, 192, 64]),
                         g.weight("B__10", [1, 384])], ["GRU__11:0", "GRU__11:1"], "GRU__11",
                 hidden_size=64, linear_before_reset=0, direction="forward",
                 activations=["Sigmoid", "Tanh"])
    sq = g.raw("Squeeze", [y, g.small("const_axes__13", [1], np.int64)], ["Squeeze__14:0"],
               "Squeeze__14")
    bt = g.raw("Transpose", [sq], ["sequential/gru/transpose_1:0"], "sequential/gru/transpose_1",
               perm=[1, 0, 2])
    mm = g.raw("MatMul", [bt, g.weight("sequential/dense/Tensordot/Reshape_1:0", [64, 10])],
               ["sequential/dense/Tensordot/MatMul:0"], "sequential/dense/Tensordot/MatMul")
    g.raw("Add", [mm, g.weight("sequential/dense/BiasAdd/ReadVariableOp:0", [10])], ["dense"],
          "sequential/dense/BiasAdd")
    g.outputs = [info("dense", F32, ["unk__18", "unk__19", 10])]
    return g.model(13, "tf2onnx: Keras GRU(reset_after=False) (linear_before_reset=0) + Dense.")


def make_gru_bidi():
    """nn.GRU(64, 32, batch_first=True, bidirectional=True) without h0
    (zero states by Expand) + nn.Linear(64, 8): torch's GRU is
    linear_before_reset=1."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "seq", 64])]
    s = "/gru"
    xt = g.op(s, "Transpose", ["x"], perm=[1, 0, 2])
    h0 = zero_states(g, s, "x", 0, 2, 32)
    w, r, b = torch_weights(g, 3, 2, 64, 32, prefix="onnx::GRU_")
    y, _ = g.op(s, "GRU", [xt, w, r, b, "", h0], nout=2, direction="bidirectional",
                hidden_size=32, linear_before_reset=1)
    bt = g.op(s, "Transpose", [bidirectional_y(g, s, y)], perm=[1, 0, 2])
    out = base.linear(g, "/fc", bt, 64, 8, "fc.bias")
    g.name_output(out, "y")
    g.outputs = [info("y", F32, ["batch", "seq", 8])]
    return g.model(14, "torch nn.GRU(64, 32, batch_first=True, bidirectional=True) + Linear.")


def make_rnn_tanh():
    """nn.RNN(32, 48, nonlinearity='tanh') (time-major, no h0) + nn.Linear(48,
    5) applied to every step: RNN with activations [Tanh], Squeeze."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["seq", "batch", 32])]
    s = "/rnn"
    h0 = zero_states(g, s, "x", 1, 1, 48)
    w, r, b = torch_weights(g, 1, 1, 32, 48, prefix="onnx::RNN_")
    y, hn = g.op(s, "RNN", ["x", w, r, b, "", h0], nout=2, activations=["Tanh"], hidden_size=48)
    out = base.linear(g, "/fc", squeeze_dirs(g, s, y), 48, 5, "fc.bias")
    g.name_output(out, "y")
    g.name_output(hn, "hn")
    g.outputs = [info("y", F32, ["seq", "batch", 5]), info("hn", F32, [1, "batch", 48])]
    return g.model(14, "torch nn.RNN(32, 48) (tanh) + Linear.")


def make_lstm_stacked():
    """nn.LSTM(80, 128, num_layers=2, batch_first=True) called with (h0, c0)
    [2, batch, 128]: one LSTM node per layer, each layer's states a Slice of
    h0/c0, Squeeze between the layers, Transpose back, hn/cn the Concat of
    the layers' Y_h/Y_c."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "seq", 80]), info("h0", F32, [2, "batch", 128]),
                info("c0", F32, [2, "batch", 128])]
    s = "/lstm"
    cur = g.op(s, "Transpose", ["x"], perm=[1, 0, 2])
    hs, cs = [], []
    for layer, k in enumerate((80, 128)):
        def state(t):
            return g.op(s, "Slice", [t, g.const(s, [layer], np.int64), g.const(s, [layer + 1], np.int64),
                                     g.const(s, [0], np.int64)])
        w, r, b = torch_weights(g, 4, 1, k, 128)
        y, yh, yc = g.op(s, "LSTM", [cur, w, r, b, "", state("h0"), state("c0")], nout=3,
                         hidden_size=128)
        cur = squeeze_dirs(g, s, y)
        hs.append(yh)
        cs.append(yc)
    out = g.op(s, "Transpose", [cur], perm=[1, 0, 2])
    hn = g.op(s, "Concat", hs, axis=0)
    cn = g.op(s, "Concat", cs, axis=0)
    g.name_output(out, "output")
    g.name_output(hn, "hn")
    g.name_output(cn, "cn")
    g.outputs = [info("output", F32, ["batch", "seq", 128]), info("hn", F32, [2, "batch", 128]),
                 info("cn", F32, [2, "batch", 128])]
    return g.model(14, "torch nn.LSTM(80, 128, num_layers=2, batch_first=True) with (h0, c0).")


def dq_lstm(g, name, x, k, hidden, outputs):
    """quantize_dynamic's LSTM (operators/lstm.py, per_channel=True): W and R
    s8, transposed to [dirs, K, 4H] / [dirs, H, 4H], per-channel scales and
    zero points [dirs, 4H], B float; inputs X, W, R, B, sequence_lens,
    initial_h, initial_c, P, W_scale, W_zero_point, R_scale, R_zero_point."""
    g.anon += 1
    wn = "onnx::LSTM_%d" % g.anon
    g.anon += 1
    rn = "onnx::LSTM_%d" % g.anon
    ins = [x, g.weight(wn + "_quantized", [1, k, 4 * hidden], I8),
           g.weight(rn + "_quantized", [1, hidden, 4 * hidden], I8),
           g.anon_weight([1, 8 * hidden], prefix="onnx::LSTM_"), "", "", "", "",
           g.weight(wn + "_scale", [1, 4 * hidden]), g.weight(wn + "_zero_point", [1, 4 * hidden], I8),
           g.weight(rn + "_scale", [1, 4 * hidden]), g.weight(rn + "_zero_point", [1, 4 * hidden], I8)]
    g.nodes.append(helper.make_node("DynamicQuantizeLSTM", ins, outputs, name=name,
                                    domain="com.microsoft", hidden_size=hidden))
    return outputs


def make_lstm_int8_dynamic():
    """A torch LSTM encoder (nn.LSTM(80, 128) time-major + nn.Linear(128,
    256)) after onnxruntime's quantize_dynamic(per_channel=True): the LSTM
    becomes com.microsoft DynamicQuantizeLSTM '/lstm/LSTM_quant', the Linear
    DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul scales -> Add
    bias.  The cell's outputs keep the value_info torch's export gave the
    float model (the quantizer reuses the output names)."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["seq", "batch", 80])]
    s = "/lstm"
    y, _, _ = dq_lstm(g, s + "/LSTM_quant", "x", 80, 128,
                      [s + "/LSTM_output_0", s + "/LSTM_output_1", s + "/LSTM_output_2"])
    sq = squeeze_dirs(g, s, y)
    xq, xs, xzp = g.raw("DynamicQuantizeLinear", [sq], [sq + "_quantized", sq + "_scale",
                                                          sq + "_zero_point"],
                        sq + "_QuantizeLinear")
    g.anon += 1
    w = "onnx::MatMul_%d" % g.anon
    mm = "/proj/MatMul"
    qi = g.raw("MatMulInteger", [xq, g.weight(w + "_quantized", [128, 256], I8), xzp,
                                 g.weight(w + "_zero_point", [256], I8)],
               [mm + "_output_0_output_quantized"], mm + "_quant")
    cast = g.raw("Cast", [qi], [qi + "_cast_output"], qi + "_cast", to=F32)
    scales = g.raw("Mul", [xs, g.weight(w + "_scale", [256])], [mm + "_quant_scales_mul:0"],
                   mm + "_quant_scales_mul")
    yq = g.raw("Mul", [cast, scales], [mm + "_output_0"], mm + "_quant_output_scale_mul")
    out = g.op("/proj", "Add", [g.weight("proj.bias", [256]), yq])
    g.name_output(out, "encoded")
    g.name_output(s + "/LSTM_output_1", "hn")
    g.outputs = [info("encoded", F32, ["seq", "batch", 256]), info("hn", F32, [1, "batch", 128])]
    m = g.model(14, "A torch LSTM encoder after onnxruntime quantize_dynamic: DynamicQuantizeLSTM "
                "and MatMulInteger.", extra_opsets=[("com.microsoft", 1)])
    m.graph.value_info.extend([info(s + "/LSTM_output_0", F32, ["seq", 1, "batch", 128]),
                               info(s + "/LSTM_output_2", F32, [1, "batch", 128])])
    return m


def make_lstm_int8_bare():
    """The quantized cell alone, its outputs graph outputs whose dims are
    all unnamed and no value_info: dtune has no shape rule for
    DynamicQuantizeLSTM, so its outputs' shapes are unknown; nothing reads
    them, and the cell's products still come from X, W and R."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["seq", "batch", 80])]
    dq_lstm(g, "/lstm/LSTM_quant", "x", 80, 128, ["y", "hn"])
    g.outputs = [info("y", F32, [None] * 4), info("hn", F32, [None] * 3)]
    return g.model(14, "DynamicQuantizeLSTM whose outputs have no shape anywhere.",
                   extra_opsets=[("com.microsoft", 1)])


def make_rnn_listed():
    """Two cells dtune lists with why: an LSTM exported with
    export_params=False (W, R and B are graph inputs, fed at run time) and
    a GRU made float16 by onnxconverter-common's convert_float_to_float16
    (keep_io_types: Cast in and out); the Linear head on the LSTM is the
    model's one dense."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["seq", "batch", 16]), info("lstm.W", F32, [1, 128, 16]),
                info("lstm.R", F32, [1, 128, 32]), info("lstm.B", F32, [1, 256])]
    s = "/lstm"
    y, _, _ = g.op(s, "LSTM", ["x", "lstm.W", "lstm.R", "lstm.B"], nout=3, hidden_size=32)
    out = base.linear(g, "/fc", squeeze_dirs(g, s, y), 32, 4, "fc.bias")
    g.name_output(out, "y")
    s = "/gru"
    x16 = g.raw("Cast", ["x"], ["x_fp16"], "graph_input_cast0", to=F16)
    w, r, b = (g.anon_weight(d, elem=F16, prefix="onnx::GRU_") for d in ([1, 48, 16], [1, 48, 16],
                                                                         [1, 96]))
    _, hn = g.op(s, "GRU", [x16, w, r, b], nout=2, hidden_size=16, linear_before_reset=1)
    g.raw("Cast", [hn], ["hn"], "graph_output_cast0", to=F32)
    g.outputs = [info("y", F32, ["seq", "batch", 4]), info("hn", F32, [1, "batch", 16])]
    return g.model(14, "A cell with weights as graph inputs and a float16 GRU: both listed.")


GOOD = [
    ("lstm-bidi-states.onnx", make_lstm_bidi_states),
    ("lstm-layout1.onnx", make_lstm_layout1),
    ("gru-lbr0.onnx", make_gru_lbr0),
    ("gru-bidi.onnx", make_gru_bidi),
    ("rnn-tanh.onnx", make_rnn_tanh),
    ("lstm-stacked.onnx", make_lstm_stacked),
    ("lstm-int8-dynamic.onnx", make_lstm_int8_dynamic),
    ("lstm-int8-bare.onnx", make_lstm_int8_bare),
    ("rnn-listed.onnx", make_rnn_listed),
]
