"""Test models of issue 30 (tests/data/onnx/README.md): the IR versions and
opsets current tools write, ops without a shape rule (with and without
value_info), and dynamic dims written as "?" or dim_value -1.

Loaded by make_onnx_models.py's load_extensions(); built with its helpers.
Run /usr/bin/python3 scripts/make_onnx_models.py (Debian's python3-onnx 1.12
writes IR 8 by itself: the newer IR versions and opsets are set by hand, the
fields those versions added are ones these models do not use).
"""
import numpy as np
from onnx import TensorProto, helper

import make_onnx_models as base

F32 = base.F32
I64 = base.I64
tensor_info = base.tensor_info


def make_ir14_opset28():
    """What the current onnx package's helpers write (onnx 1.23: IR 14, opset
    28 by default): nodes without names, initializers named by the user.  Only
    ops whose definition onnx 1.12's checker knows at opset 28 (its newest
    one of each), so the file is checked; the opset-18+ forms (Split's
    num_outputs, Reduce axes as inputs, the opset-20 Gelu) are covered by the
    shape tests instead."""
    g = base.Graph("mlp")
    g.inputs = [tensor_info("x", F32, ["batch", "seq", 64])]
    g.outputs = [tensor_info("y", F32, ["batch", "seq", 64])]
    g.small("ln_scale", np.ones([64]), np.float32)
    g.small("ln_bias", np.zeros([64]), np.float32)
    g.small("sqrt2", 1.4142135, np.float32)
    g.small("one", 1.0, np.float32)
    g.small("half", 0.5, np.float32)
    n = g.nodes
    mk = helper.make_node
    n.append(mk("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["h"], axis=-1, epsilon=1e-5))
    n.append(mk("MatMul", ["h", g.weight("W1", [64, 256])], ["a"]))
    n.append(mk("Add", ["a", g.weight("b1", [256])], ["a_b"]))
    n.append(mk("Div", ["a_b", "sqrt2"], ["d"]))
    n.append(mk("Erf", ["d"], ["e"]))
    n.append(mk("Add", ["e", "one"], ["e1"]))
    n.append(mk("Mul", ["a_b", "e1"], ["m"]))
    n.append(mk("Mul", ["m", "half"], ["gelu"]))
    n.append(mk("MatMul", ["gelu", g.weight("W2", [256, 64])], ["o"]))
    n.append(mk("Add", ["o", g.weight("b2", [64])], ["o_b"]))
    n.append(mk("Add", ["o_b", "x"], ["y"]))
    return g.model(28, "An MLP as the current onnx helpers write it: IR 14, opset 28.",
                   ir_version=14)


def custom_op_graph(value_info):
    """dense -> com.example FusedNorm (a custom op, as torch.onnx exports a
    custom symbolic: its own domain, no schema) -> dense.  With value_info,
    the custom op's output shape is declared, as onnxruntime's and torch's
    shape inference leave it."""
    g = base.Graph("main_graph")
    h = base.HIDDEN
    g.inputs = [tensor_info("input", F32, ["batch", "seq", h])]
    g.outputs = [tensor_info("output", F32, ["batch", "seq", h])]
    a = g.op("/up", "MatMul", ["input", g.anon_weight([h, h])])
    a = g.op("/up", "Add", [g.weight("up.bias", [h]), a])
    node = helper.make_node("FusedNorm", [a, g.weight("norm.weight", [h])],
                            ["/norm/FusedNorm_output_0"], name="/norm/FusedNorm",
                            domain="com.example", epsilon=1e-6)
    g.nodes.append(node)
    m = g.op("/down", "MatMul", ["/norm/FusedNorm_output_0", g.anon_weight([h, h])])
    g.nodes.append(helper.make_node("Add", [g.weight("down.bias", [h]), m], ["output"],
                                    name="/down/Add"))
    if value_info:
        vi = [tensor_info("/norm/FusedNorm_output_0", F32, ["batch", "seq", h])]
    else:
        vi = []
    model = g.model(17, "dense -> a custom-domain op -> dense%s." %
                    (" (value_info declares its output)" if value_info else
                     " (no value_info: its output shape is unknown)"),
                    extra_opsets=[("com.example", 1)])
    model.graph.value_info.extend(vi)
    return model


def make_custom_op_value_info():
    return custom_op_graph(True)


def make_bad_custom_op_unknown():
    return custom_op_graph(False)


def make_nms_unknown():
    """A detection head as torchvision's export leaves it: a dense
    classifier, then NonMaxSuppression (a data-dependent shape, no rule)
    whose selected indices feed a Gather; nothing tuned depends on them."""
    g = base.Graph("main_graph")
    g.inputs = [tensor_info("boxes", F32, ["batch", "num_boxes", 4]),
                tensor_info("features", F32, ["batch", "num_boxes", 256])]
    g.outputs = [tensor_info("scores", F32, ["batch", "num_boxes", 91]),
                 tensor_info("selected", I64, [None, 3]),
                 tensor_info("box_index", I64, [None])]
    logits = g.op("/cls", "MatMul", ["features", g.anon_weight([256, 91])])
    logits = g.op("/cls", "Add", [logits, g.weight("cls.bias", [91])])
    g.nodes.append(helper.make_node("Sigmoid", [logits], ["scores"], name="/Sigmoid"))
    t = g.op("", "Transpose", ["scores"], perm=[0, 2, 1])
    g.nodes.append(helper.make_node(
        "NonMaxSuppression",
        ["boxes", t, g.small("max_output", [100], np.int64), g.small("iou", [0.5], np.float32),
         g.small("score_threshold", [0.05], np.float32)],
        ["selected"], name="/NonMaxSuppression", center_point_box=0))
    g.nodes.append(helper.make_node("Gather", ["selected", g.const("", 2, np.int64)],
                                    ["box_index"], name="/Gather", axis=1))
    return g.model(17, "A dense classifier, then NonMaxSuppression (no shape rule, no "
                   "value_info) -> Gather: shapes unknown where nothing tuned needs them.")


def image_graph(name, dims, out_dims):
    """Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm, an image input
    with dynamic batch, height and width."""
    g = base.Graph(name)
    g.inputs = [tensor_info("image", F32, dims)]
    g.outputs = [tensor_info("logits", F32, out_dims)]
    c = g.op("/conv", "Conv", ["image", g.weight("conv.weight", [16, 3, 3, 3]),
                              g.weight("conv.bias", [16])],
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    r = g.op("/relu", "Relu", [c])
    p = g.op("/gap", "GlobalAveragePool", [r])
    f = g.op("", "Flatten", [p], axis=1)
    g.nodes.append(helper.make_node("Gemm", [f, g.weight("fc.weight", [10, 16]),
                                             g.weight("fc.bias", [10])], ["logits"],
                                    name="/fc/Gemm", transB=1))
    return g


def make_image_question_dims():
    # dim_param "?" for each unknown dim, as some converters write it
    g = image_graph("main_graph", ["?", 3, "?", "?"], ["?", 10])
    return g.model(13, "An image classifier whose input dims are [\"?\", 3, \"?\", \"?\"].")


def make_image_minus1_dims():
    # paddle2onnx (before 1.0) writes a dynamic dim as dim_value -1, on the
    # inputs and on the outputs; its names: "x", "p2o.Conv.0", "conv2d_0.w_0"
    g = image_graph("paddle-infer", [-1, 3, -1, -1], [-1, 10])
    return g.model(11, "An image classifier exported by Paddle: dynamic dims as dim_value -1.",
                   ir_version=6)


def make_ir15_future():
    """A file from a future onnx: IR 15, newer than dtune knows.  It is read
    (protobuf skips what it does not know) with a warning."""
    g = base.small_dense_graph("main_graph", ["batch", base.HIDDEN])
    return g.model(21, "A dense in a file of IR 15, newer than dtune knows.", ir_version=15)


GOOD = [
    ("ir14-opset28-mlp.onnx", make_ir14_opset28),
    ("ir15-future.onnx", make_ir15_future),
    ("custom-op-value-info.onnx", make_custom_op_value_info),
    ("nms-unknown.onnx", make_nms_unknown),
    ("image-question-dims.onnx", make_image_question_dims),
    ("image-minus1-dims.onnx", make_image_minus1_dims),
]
BAD = [
    ("bad-custom-op-unknown.onnx", make_bad_custom_op_unknown),
]
