"""Test models for subgraphs (issue 43, point 2; tests/data/onnx/README.md):
If, Loop and Scan whose bodies hold the GEMMs.  A silero-vad-style voice
model whose convolutions and LSTM sit in both branches of If(sr == 16000);
torch.jit.script loops (a constant trip count, one from x.size(1), an If
inside a Loop's body, a while loop) as torch.onnx.export writes them — the weights are
main-graph initializers the bodies read from the outer scope; a tf2onnx
SimpleRNN as Scan over the time axis; and hostile files (a body reading a
name nothing defines, Ifs nested past the reader's depth limit, a Loop
whose body has the wrong number of inputs).  Loaded by make_onnx_models.py's
load_extensions()."""
import numpy as np
from onnx import helper

import make_onnx_models as base

F32 = base.F32
I64 = base.I64
BOOL = base.BOOL
info = base.tensor_info


def builder(main, name):
    """A body's node builder numbering its names with the main graph's (torch
    names values once over the whole model: ONNX wants no name of a body to
    repeat one of an enclosing graph)."""
    b = base.Graph(name)
    b.counts = main.counts
    return b


def body(g, name, inputs, outputs):
    """A subgraph from body builder g (its nodes; its Constant nodes hold
    the small values, the weights stay in the main graph)."""
    return helper.make_graph(g.nodes, name, inputs, outputs, initializer=g.inits)


def conv1d(b, main, scope, x, prefix, cout, cin, k, stride=1, pad=0, bias=True):
    """nn.Conv1d as torch exports it, a node of body builder b: Conv with 1-D
    attributes; its weights are main-graph initializers."""
    ins = [x, main.weight(prefix + ".weight", [cout, cin, k])]
    if bias:
        ins.append(main.weight(prefix + ".bias", [cout]))
    return b.op(scope, "Conv", ins, dilations=[1], group=1, kernel_shape=[k], pads=[pad, pad],
                strides=[stride])


def silero_branch(main, b, rate, ctx, filt, hop):
    """One sample rate's model of silero-vad v5, in body builder b (weights
    in the main graph, named by rate): the STFT as a reflect-padded Conv1d
    with the fixed basis [filt+2, 1, filt] and stride hop, the magnitude of
    its real and imaginary halves, four Conv1d+ReLU encoder blocks (kernel
    3, padding 1, strides 1, 2, 2, 1), an LSTM(128, 128) over the frames
    carrying state (h, c), ReLU, a 1x1 Conv1d to one channel, Sigmoid and
    the mean over frames.  Returns (out [batch, 1], stateN [2, batch, 128])."""
    p = "_model%dk" % rate
    s = "/stft"
    x = b.op(s, "Unsqueeze", ["input", b.const(s, [1], np.int64)])
    x = b.op(s, "Pad", [x, b.const(s, [0, 0, 0, 0, 0, ctx], np.int64)], mode="reflect")
    spec = conv1d(b, main, s, x, p + ".stft.forward_basis_buffer", filt + 2, 1, filt, hop, 0,
                  bias=False)
    half = filt // 2 + 1
    re = b.op(s, "Slice", [spec, b.const(s, [0], np.int64), b.const(s, [half], np.int64),
                           b.const(s, [1], np.int64)])
    im = b.op(s, "Slice", [spec, b.const(s, [half], np.int64), b.const(s, [2 * half], np.int64),
                           b.const(s, [1], np.int64)])
    mag = b.op(s, "Sqrt", [b.op(s, "Add", [b.op(s, "Mul", [re, re]), b.op(s, "Mul", [im, im])])])
    chans = [(half, 128, 1), (128, 64, 2), (64, 64, 2), (64, 128, 1)]
    for i, (cin, cout, stride) in enumerate(chans):
        e = "/encoder/%d" % i
        c = conv1d(b, main, e + "/reparam_conv", mag, "%s.encoder.%d.reparam_conv" % (p, i), cout,
                   cin, 3, stride, 1)
        mag = b.op(e, "Relu", [c])
    d = "/decoder"
    xt = b.op(d, "Transpose", [mag], perm=[2, 0, 1])
    h0 = b.op(d, "Slice", ["state", b.const(d, [0], np.int64), b.const(d, [1], np.int64),
                           b.const(d, [0], np.int64)])
    c0 = b.op(d, "Slice", ["state", b.const(d, [1], np.int64), b.const(d, [2], np.int64),
                           b.const(d, [0], np.int64)])
    w = main.anon_weight([1, 512, 128], prefix="onnx::LSTM_")
    r = main.anon_weight([1, 512, 128], prefix="onnx::LSTM_")
    bias = main.anon_weight([1, 1024], prefix="onnx::LSTM_")
    y, yh, yc = b.op(d + "/rnn", "LSTM", [xt, w, r, bias, "", h0, c0], nout=3, hidden_size=128)
    y = b.op(d, "Squeeze", [y, b.const(d, [1], np.int64)])
    y = b.op(d, "Relu", [b.op(d, "Transpose", [y], perm=[1, 2, 0])])
    out = conv1d(b, main, d + "/decoder.2", y, p + ".decoder.decoder.2", 1, 128, 1)
    prob = b.op(d, "Sigmoid", [out])
    mean = b.op("", "ReduceMean", [prob], axes=[2], keepdims=0)
    state = b.op("", "Concat", [yh, yc], axis=0)
    return mean, state


def make_silero_vad_if():
    """silero-vad v5's graph (opset 16): inputs input [batch, samples], state
    [2, batch, 128] and sr (int64 scalar); If(Equal(sr, 16000)) whose
    then_branch is the 16 kHz model (STFT 256/128, 64 samples of context)
    and else_branch the 8 kHz one (128/64, 32), each reading the outer
    input and state and returning (output, stateN) — so every convolution
    and the LSTM are inside the If.  Both branches' outputs agree: [batch,
    1] and [2, batch, 128]."""
    g = base.Graph("main_graph")
    g.inputs = [info("input", F32, ["batch", "samples"]), info("sr", I64, []),
                info("state", F32, [2, "batch", 128])]
    is16k = g.op("", "Equal", ["sr", g.const("", 16000, np.int64)])
    branches = []
    for rate, ctx, filt, hop in ((16, 64, 256, 128), (8, 32, 128, 64)):
        b = builder(g, "branch%dk" % rate)  # "/stft/Conv", then "/stft/Conv_1"
        out, state = silero_branch(g, b, rate, ctx, filt, hop)
        outs = [info(out, F32, ["batch", 1]), info(state, F32, [2, "batch", 128])]
        branches.append(body(b, "torch_jit_%dk" % rate, [], outs))
    out, state = g.op("", "If", [is16k], nout=2, then_branch=branches[0], else_branch=branches[1])
    g.name_output(out, "output")
    g.name_output(state, "stateN")
    g.outputs = [info("output", F32, ["batch", 1]), info("stateN", F32, [2, "batch", 128])]
    return g.model(16, "silero-vad v5: If(sr == 16000) with a 16 kHz and an 8 kHz model inside.")


def loop_header(g, trip, carried):
    """torch.jit.script's loop: Loop(M, cond=true, carried...)."""
    cond = g.const("", True, np.bool_)
    return [trip, cond] + carried


def make_loop_const_matmul():
    """torch.jit.script of `for i in range(4): h = relu(self.lin(h))` then a
    head Linear (opset 14): Loop(M = Constant 4, cond = true, x) whose body
    (i, cond, h) is Gemm(h, lin.weight, lin.bias, transB=1) -> Relu, the
    condition passed on by Identity; the body reads the weights from the
    main graph."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", 64])]
    w, bias = g.weight("lin.weight", [64, 64]), g.weight("lin.bias", [64])
    b = builder(g, "torch_jit1")
    y = b.op("/lin", "Gemm", ["h.1", w, bias], alpha=1.0, beta=1.0, transB=1)
    y = b.op("", "Relu", [y])
    c = b.op("", "Identity", ["cond.1"])
    lb = body(b, "torch_jit1", [info("i", I64, []), info("cond.1", BOOL, []),
                                info("h.1", F32, ["batch", 64])],
              [info(c, BOOL, []), info(y, F32, ["batch", 64])])
    h = g.op("", "Loop", loop_header(g, g.const("", 4, np.int64), ["x"]), body=lb)
    g.nodes.append(helper.make_node("Gemm", [h, g.weight("head.weight", [10, 64]),
                                             g.weight("head.bias", [10])], ["logits"],
                                    name="/head/Gemm", alpha=1.0, beta=1.0, transB=1))
    g.outputs = [info("logits", F32, ["batch", 10])]
    return g.model(14, "A scripted loop over a constant trip count with a Linear inside.")


def make_loop_seq_rnn():
    """torch.jit.script of an RNN cell unrolled by hand, `for t in
    range(x.size(1)): h = tanh(x[:, t] @ W_ih + h @ W_hh + b)` (opset 14):
    the trip count is Gather(Shape(x), 1), seq; the body gathers the step's
    slice with Gather(x, t, axis=1) and carries h; a head MatMul on the
    final h."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "seq", 64]), info("h0", F32, ["batch", 64])]
    seq = base.shape_dim(g, "", "x", 1)
    w_ih, w_hh = g.anon_weight([64, 64]), g.anon_weight([64, 64])
    bias = g.weight("cell.bias", [64])
    b = builder(g, "torch_jit1")
    xt = b.op("", "Gather", ["x", "t.1"], axis=1)
    s = b.op("", "Add", [b.op("", "MatMul", [xt, w_ih]), b.op("", "MatMul", ["h.1", w_hh])])
    h = b.op("", "Tanh", [b.op("", "Add", [s, bias])])
    c = b.op("", "Identity", ["cond.1"])
    lb = body(b, "torch_jit1", [info("t.1", I64, []), info("cond.1", BOOL, []),
                                info("h.1", F32, ["batch", 64])],
              [info(c, BOOL, []), info(h, F32, ["batch", 64])])
    hn = g.op("", "Loop", loop_header(g, seq, ["h0"]), body=lb)
    out = g.op("/head", "MatMul", [hn, g.anon_weight([64, 8])])
    g.name_output(out, "y")
    g.outputs = [info("y", F32, ["batch", 8])]
    return g.model(14, "A scripted loop over x.size(1) with two MatMuls inside.")


def make_scan_rnn():
    """A Keras SimpleRNN(64) as tf2onnx writes it (opset 13): the input
    transposed to [seq, batch, 64], a zero initial state from
    ConstantOfShape(Concat(Shape(x)[0], 64)), Scan(num_scan_inputs=1) whose
    body (state, x_t) is Tanh(x_t @ kernel + state @ recurrent_kernel + bias)
    giving both the new state and the step's output; the stacked outputs
    [seq, batch, 64] transposed back and a Dense(10) on every step."""
    g = base.Graph("tf2onnx")
    g.inputs = [info("input_1:0", F32, ["unk__6", "unk__7", 64])]
    s = "sequential/simple_rnn"
    xt = g.raw("Transpose", ["input_1:0"], [s + "/transpose:0"], s + "/transpose", perm=[1, 0, 2])
    bsz = g.raw("Shape", ["input_1:0"], [s + "/Shape:0"], s + "/Shape")
    n0 = g.raw("Gather", [bsz, g.small(s + "/strided_slice/stack:0", [0], np.int64)],
               [s + "/strided_slice:0"], s + "/strided_slice", axis=0)
    dims = g.raw("Concat", [n0, g.small(s + "/zeros/packed/1:0", [64], np.int64)],
                 [s + "/zeros/packed:0"], s + "/zeros/packed", axis=0)
    zero = helper.make_tensor("value", F32, [1], [0.0])
    h0 = g.raw("ConstantOfShape", [dims], [s + "/zeros:0"], s + "/zeros", value=zero)
    kern = g.weight(s + "/simple_rnn_cell/MatMul/ReadVariableOp:0", [64, 64])
    rec = g.weight(s + "/simple_rnn_cell/MatMul_1/ReadVariableOp:0", [64, 64])
    bias = g.weight(s + "/simple_rnn_cell/BiasAdd/ReadVariableOp:0", [64])
    b = builder(g, "body")
    w = s + "/while/simple_rnn_cell"
    mm = b.raw("MatMul", ["x_t:0", kern], [w + "/MatMul:0"], w + "/MatMul")
    mm1 = b.raw("MatMul", ["state:0", rec], [w + "/MatMul_1:0"], w + "/MatMul_1")
    ba = b.raw("Add", [mm, bias], [w + "/BiasAdd:0"], w + "/BiasAdd")
    add = b.raw("Add", [ba, mm1], [w + "/add:0"], w + "/add")
    h = b.raw("Tanh", [add], [w + "/Tanh:0"], w + "/Tanh")
    out = b.raw("Identity", [h], [w + "/Identity:0"], w + "/Identity")
    sb = body(b, s + "/while_body", [info("state:0", F32, ["unk__8", 64]),
                                     info("x_t:0", F32, ["unk__8", 64])],
              [info(h, F32, ["unk__8", 64]), info(out, F32, ["unk__8", 64])])
    hn, ys = g.raw("Scan", [h0, xt], [s + "/Scan:0", s + "/Scan:1"], s + "/Scan", body=sb,
                   num_scan_inputs=1)
    yb = g.raw("Transpose", [ys], [s + "/transpose_1:0"], s + "/transpose_1", perm=[1, 0, 2])
    d = g.raw("MatMul", [yb, g.weight("sequential/dense/Tensordot/ReadVariableOp:0", [64, 10])],
              ["sequential/dense/Tensordot:0"], "sequential/dense/Tensordot")
    g.raw("Add", [d, g.weight("sequential/dense/BiasAdd/ReadVariableOp:0", [10])], ["dense"],
          "sequential/dense/BiasAdd")
    g.outputs = [info("dense", F32, ["unk__6", "unk__7", 10]), info(hn, F32, ["unk__6", 64])]
    return g.model(13, "A tf2onnx SimpleRNN: Scan over the time axis with two MatMuls per step.")


def make_loop_while():
    """torch.jit.script of `while bool(h.sum() > 0): h = tanh(self.lin(h))`
    (opset 14): a while loop is Loop(M = Constant INT64_MAX, cond =
    Greater(ReduceSum(x), 0)), the body computing its next condition the
    same way — how often it runs is not known."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", 64])]
    w, bias = g.weight("lin.weight", [64, 64]), g.weight("lin.bias", [64])

    def positive(b, x):
        return b.op("", "Greater", [b.op("", "ReduceSum", [x], keepdims=0),
                                    b.const("", 0.0, np.float32)])
    cond0 = positive(g, "x")
    b = builder(g, "torch_jit1")
    h = b.op("", "Tanh", [b.op("/lin", "Gemm", ["h.1", w, bias], alpha=1.0, beta=1.0, transB=1)])
    c = positive(b, h)
    lb = body(b, "torch_jit1", [info("i", I64, []), info("cond.1", BOOL, []),
                                info("h.1", F32, ["batch", 64])],
              [info(c, BOOL, []), info(h, F32, ["batch", 64])])
    out = g.op("", "Loop", [g.const("", np.iinfo(np.int64).max, np.int64), cond0, "x"], body=lb)
    g.name_output(out, "y")
    g.outputs = [info("y", F32, ["batch", 64])]
    return g.model(14, "A scripted while loop: its trip count is not known.")


def make_loop_if_nested():
    """torch.jit.script of `for i in range(3): h = self.a(h) if i % 2 == 0
    else relu(self.b(h))` (opset 14): the Loop's body computes Equal(Mod(i,
    2), 0) and an If whose branches read the body's carried h (an enclosing
    scope's name) and the main graph's weights."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", 64])]
    wa, ba = g.weight("a.weight", [64, 64]), g.weight("a.bias", [64])
    wb, bb = g.weight("b.weight", [64, 64]), g.weight("b.bias", [64])
    lb = builder(g, "torch_jit1")
    even = lb.op("", "Equal", [lb.op("", "Mod", ["i.1", lb.const("", 2, np.int64)]),
                               lb.const("", 0, np.int64)])
    t = builder(g, "torch_jit2")
    ya = t.op("/a", "Gemm", ["h.1", wa, ba], alpha=1.0, beta=1.0, transB=1)
    e = builder(g, "torch_jit3")
    yb = e.op("", "Relu", [e.op("/b", "Gemm", ["h.1", wb, bb], alpha=1.0, beta=1.0, transB=1)])
    yb_named = yb + "_else"
    e.name_output(yb, yb_named)
    then_g = body(t, "torch_jit2", [], [info(ya, F32, ["batch", 64])])
    else_g = body(e, "torch_jit3", [], [info(yb_named, F32, ["batch", 64])])
    h = lb.op("", "If", [even], then_branch=then_g, else_branch=else_g)
    c = lb.op("", "Identity", ["cond.1"])
    loop_body = body(lb, "torch_jit1", [info("i.1", I64, []), info("cond.1", BOOL, []),
                                        info("h.1", F32, ["batch", 64])],
                     [info(c, BOOL, []), info(h, F32, ["batch", 64])])
    out = g.op("", "Loop", loop_header(g, g.const("", 3, np.int64), ["x"]), body=loop_body)
    g.name_output(out, "y")
    g.outputs = [info("y", F32, ["batch", 64])]
    return g.model(14, "A scripted loop whose body holds an If with a Linear in each branch.")


def make_bad_if_undefined():
    """An If whose then_branch adds a name no scope defines ("ghost")."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", 8]), info("flag", BOOL, [])]
    t = builder(g, "then")
    y = t.op("", "Add", ["x", "ghost"])
    e = builder(g, "else")
    z = e.op("", "Identity", ["x"])
    out = g.op("", "If", ["flag"], then_branch=body(t, "then", [], [info(y, F32, ["batch", 8])]),
               else_branch=body(e, "else", [], [info(z, F32, ["batch", 8])]))
    g.name_output(out, "y")
    g.outputs = [info("y", F32, ["batch", 8])]
    return g.model(16, "An If branch reading a name nothing defines.")


def make_bad_nested_too_deep():
    """Nine Ifs each in the then_branch of the one before: one level past the
    reader's limit of 8 (an otherwise valid model)."""
    def level(depth):
        b = builder(g, "level%d" % depth)
        if depth == 9:
            y = b.op("", "Identity", ["x"])
        else:
            e = builder(g, "else%d" % depth)
            z = e.op("", "Identity", ["x"])
            y = b.op("", "If", ["flag"], then_branch=level(depth + 1),
                     else_branch=body(e, "else%d" % depth, [], [info(z, F32, [4])]))
        return body(b, "level%d" % depth, [], [info(y, F32, [4])])
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, [4]), info("flag", BOOL, [])]
    e = builder(g, "else0")
    z = e.op("", "Identity", ["x"])
    out = g.op("", "If", ["flag"], then_branch=level(1),
               else_branch=body(e, "else0", [], [info(z, F32, [4])]))
    g.name_output(out, "y")
    g.outputs = [info("y", F32, [4])]
    return g.model(16, "Ifs nested nine deep.")


def make_bad_loop_body_inputs():
    """A Loop with one carried value whose body declares two inputs (it
    needs three: the iteration number, the condition, the value)."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", 8])]
    b = builder(g, "body")
    y = b.op("", "Relu", ["h"])
    c = b.op("", "Identity", ["cond"])
    lb = body(b, "body", [info("cond", BOOL, []), info("h", F32, ["batch", 8])],
              [info(c, BOOL, []), info(y, F32, ["batch", 8])])
    out = g.op("", "Loop", loop_header(g, g.const("", 2, np.int64), ["x"]), body=lb)
    g.name_output(out, "y")
    g.outputs = [info("y", F32, ["batch", 8])]
    return g.model(14, "A Loop whose body has one input too few.")


def make_lstm_if_rank():
    """torch.jit.script of nn.LSTM's forward (opset 14): `if x.dim() == 2:
    x = x.unsqueeze(1)` (unbatched input) is If(Equal(Size(Shape(x)), 2))
    whose then_branch Unsqueezes and whose else_branch is Identity — their
    outputs disagree in rank, but the condition is known from x's shape,
    so only the else_branch runs — then the LSTM(64, 64) over [seq, batch,
    64], a head Linear over the last step, and torch's `if not is_batched:
    output = output.squeeze(1)` on the output: an If whose then_branch
    Squeezes the batch axis, which would fail (batch is not 1) if it ran —
    it never does, so it is no warning."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["seq", "batch", 64])]
    rank = g.op("", "Size", [g.op("", "Shape", ["x"])])
    unbatched = g.op("", "Equal", [rank, g.const("", 2, np.int64)])
    t = builder(g, "torch_jit1")
    xu = t.op("", "Unsqueeze", ["x", t.const("", [1], np.int64)])
    e = builder(g, "torch_jit2")
    xi = e.op("", "Identity", ["x"])
    xb = g.op("", "If", [unbatched],
              then_branch=body(t, "torch_jit1", [], [info(xu, F32, ["seq", 1, "batch", 64])]),
              else_branch=body(e, "torch_jit2", [], [info(xi, F32, ["seq", "batch", 64])]))
    w = g.anon_weight([1, 256, 64], prefix="onnx::LSTM_")
    r = g.anon_weight([1, 256, 64], prefix="onnx::LSTM_")
    bias = g.anon_weight([1, 512], prefix="onnx::LSTM_")
    y, yh, _ = g.op("/rnn", "LSTM", [xb, w, r, bias], nout=3, hidden_size=64)
    h = g.op("", "Squeeze", [yh, g.const("", [0], np.int64)])
    out = g.op("/head", "Gemm", [h, g.weight("head.weight", [8, 64]), g.weight("head.bias", [8])],
               alpha=1.0, beta=1.0, transB=1)
    g.name_output(out, "y")
    seq_out = g.op("", "Squeeze", [y, g.const("", [1], np.int64)])  # [seq, batch, 64]
    t2 = builder(g, "torch_jit3")
    ys = t2.op("", "Squeeze", [seq_out, t2.const("", [1], np.int64)])
    e2 = builder(g, "torch_jit4")
    yi = e2.op("", "Identity", [seq_out])
    seq_y = g.op("", "If", [unbatched],
                 then_branch=body(t2, "torch_jit3", [], [info(ys, F32, ["seq", 64])]),
                 else_branch=body(e2, "torch_jit4", [], [info(yi, F32, ["seq", "batch", 64])]))
    g.name_output(seq_y, "output")
    g.outputs = [info("y", F32, ["batch", 8]), info("output", F32, ["seq", "batch", 64])]
    return g.model(14, "A scripted LSTM whose If on the input's rank is decided by its shape.")


GOOD = [
    ("silero-vad-if.onnx", make_silero_vad_if),
    ("loop-const-matmul.onnx", make_loop_const_matmul),
    ("loop-seq-rnn.onnx", make_loop_seq_rnn),
    ("scan-rnn.onnx", make_scan_rnn),
    ("loop-if-nested.onnx", make_loop_if_nested),
    ("loop-while.onnx", make_loop_while),
    ("lstm-if-rank.onnx", make_lstm_if_rank),
]
BAD = [
    ("bad-if-undefined.onnx", make_bad_if_undefined),
    ("bad-nested-too-deep.onnx", make_bad_nested_too_deep),
    ("bad-loop-body-inputs.onnx", make_bad_loop_body_inputs),
]
