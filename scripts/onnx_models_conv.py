"""Test models of ONNX Conv as dtune's conv2d (issue 31, point 5;
tests/data/onnx/README.md): a Conv + bias + Relu on a dynamic image, a
ResNet-style strided 7x7 stem, a 1x1, Conv1d, and the Convs conv2d does not
express (depthwise, asymmetric pads or strides, 3-D, a padded Conv1d).

Picked up by scripts/make_onnx_models.py (load_extensions); built with its
helpers, no weight data (external, in a weights.bin that does not exist).
"""
import make_onnx_models as base

F32 = base.F32


def conv(g, scope, x, prefix, wdims, bias=True, **attrs):
    ins = [x, g.weight(prefix + ".weight", wdims)]
    if bias:
        ins.append(g.weight(prefix + ".bias", [wdims[0]]))
    return g.op(scope, "Conv", ins, **attrs)


def make_conv_dynamic():
    """[batch, 3, height, width]:
      conv1  3x3 pad 1, bias input, Relu                -> bias+relu
      conv2  3x3 stride 2, auto_pad SAME_UPPER (pad 0 or 1 by the size:
             listed), no bias
      conv3  3x3 auto_pad SAME_LOWER stride 1 (pad 1), no bias input, then
             Add of a [32, 1, 1] bias and Relu          -> bias+relu
      conv4  1x1, no bias, dilations 2 (ignored by a 1x1) -> none"""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("image", F32, ["batch", 3, "height", "width"])]
    g.outputs = [base.tensor_info("features", F32, ["batch", 8, "oh", "ow"])]
    x = conv(g, "/conv1", "image", "conv1", [16, 3, 3, 3], kernel_shape=[3, 3],
             pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1)
    x = g.op("/relu1", "Relu", [x])
    x = conv(g, "/conv2", x, "conv2", [32, 16, 3, 3], bias=False, kernel_shape=[3, 3],
             auto_pad="SAME_UPPER", strides=[2, 2])
    x = conv(g, "/conv3", x, "conv3", [32, 32, 3, 3], bias=False, kernel_shape=[3, 3],
             auto_pad="SAME_LOWER")
    x = g.op("/conv3", "Add", [x, g.weight("conv3.bias", [32, 1, 1])])
    x = g.op("/relu3", "Relu", [x])
    x = conv(g, "/conv4", x, "conv4", [8, 32, 1, 1], bias=False, dilations=[2, 2])
    g.name_output(x, "features")
    return g.model(17, "Convs on a dynamic [batch, 3, height, width] image: 3x3 pad 1 + bias + "
                   "Relu, a strided SAME_UPPER 3x3 (listed: its padding depends on the size), a "
                   "SAME_LOWER 3x3 with a bias Add and Relu after it, a 1x1; weights not "
                   "included.")


def make_conv_stem():
    """ResNet-style [batch, 3, 224, 224]:
      stem   7x7 stride 2 pad 3, bias, Relu              -> bias+relu
      MaxPool 3x3 stride 2 pad 1                        -> 56x56
      proj   1x1 64 -> 256, bias                        -> bias
      dw     3x3 depthwise, group=256                   -> listed
      asym   2x2 stride 2, pads [0, 0, 1, 1]            -> listed
      rect   1x1 strides [1, 2]                         -> listed
    and on a second input [batch, 3, 8, 32, 32] a 3-D Conv -> listed."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("pixels", F32, ["batch", 3, 224, 224]),
                base.tensor_info("clip", F32, ["batch", 3, 8, 32, 32])]
    g.outputs = [base.tensor_info("features", F32, ["batch", 256, 29, 15]),
                 base.tensor_info("clip_features", F32, ["batch", 16, 8, 32, 32])]
    x = conv(g, "/stem", "pixels", "stem", [64, 3, 7, 7], kernel_shape=[7, 7],
             pads=[3, 3, 3, 3], strides=[2, 2])
    x = g.op("/stem", "Relu", [x])
    x = g.op("/pool", "MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    x = conv(g, "/proj", x, "proj", [256, 64, 1, 1])
    x = conv(g, "/dw", x, "dw", [256, 1, 3, 3], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             group=256)
    x = conv(g, "/asym", x, "asym", [256, 256, 2, 2], kernel_shape=[2, 2], pads=[0, 0, 1, 1],
             strides=[2, 2])
    x = conv(g, "/rect", x, "rect", [256, 256, 1, 1], strides=[1, 2])
    g.name_output(x, "features")
    y = conv(g, "/conv3d", "clip", "conv3d", [16, 3, 3, 3, 3], kernel_shape=[3, 3, 3],
             pads=[1] * 6)
    g.name_output(y, "clip_features")
    return g.model(17, "A ResNet-style 7x7 stride-2 pad-3 stem with bias and Relu, MaxPool, a "
                   "1x1 projection, then Convs conv2d does not express: depthwise (group=256), "
                   "asymmetric pads, unequal strides, and a 3-D Conv on a second input; weights "
                   "not included.")


def make_conv1d():
    """[batch, 80, frames] (a speech front end):
      c1  k=3, no padding, bias, Relu                   -> conv2d H=1, R=1, bias+relu
      c2  k=1 stride 1, bias, erf GELU                  -> bias+gelu
      c3  k=3 pads [1, 1]                               -> listed (padded Conv1d)"""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("feats", F32, ["batch", 80, "frames"])]
    g.outputs = [base.tensor_info("hidden", F32, ["batch", 256, "out_frames"])]
    x = conv(g, "/c1", "feats", "c1", [256, 80, 3], kernel_shape=[3], pads=[0, 0],
             strides=[1])
    x = g.op("/c1", "Relu", [x])
    x = conv(g, "/c2", x, "c2", [256, 256, 1], kernel_shape=[1])
    x = base.gelu_erf(g, "/c2/gelu", x)
    x = conv(g, "/c3", x, "c3", [256, 256, 3], kernel_shape=[3], pads=[1, 1])
    g.name_output(x, "hidden")
    return g.model(17, "Conv1d on [batch, 80, frames]: k=3 unpadded + bias + Relu, k=1 + bias + "
                   "erf GELU, a padded k=3 (listed); weights not included.")


GOOD = [
    ("conv-dynamic.onnx", make_conv_dynamic),
    ("conv-stem.onnx", make_conv_stem),
    ("conv1d.onnx", make_conv1d),
]
BAD = []
