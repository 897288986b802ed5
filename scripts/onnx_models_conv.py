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


def make_resnet50():
    """ResNet-50 v1.5 as torch.onnx.export writes it in eval mode with
    constant folding: batch norm folded into each Conv's bias, Relu, the
    residual Add, MaxPool, GlobalAveragePool, Flatten and the fc Gemm; input
    [batch, 3, 224, 224].  dtune import gives models/resnet50.json's
    workloads (tests/test_e2e_onnx.c checks it)."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("input", F32, ["batch", 3, 224, 224])]
    g.outputs = [base.tensor_info("logits", F32, ["batch", 1000])]
    x = conv(g, "/conv1/Conv", "input", "conv1", [64, 3, 7, 7], kernel_shape=[7, 7],
             pads=[3, 3, 3, 3], strides=[2, 2])
    x = g.op("/relu/Relu", "Relu", [x])
    x = g.op("/maxpool/MaxPool", "MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             strides=[2, 2])
    cin = 64
    for li, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                  (512, 3, 2)]):
        for b in range(blocks):
            s = stride if b == 0 else 1
            p = "/layer%d/layer%d.%d" % (li + 1, li + 1, b)
            w = "layer%d.%d" % (li + 1, b)
            y = conv(g, p + "/conv1/Conv", x, w + ".conv1", [width, cin, 1, 1],
                     kernel_shape=[1, 1])
            y = g.op(p + "/relu/Relu", "Relu", [y])
            y = conv(g, p + "/conv2/Conv", y, w + ".conv2", [width, width, 3, 3],
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[s, s])
            y = g.op(p + "/relu_1/Relu", "Relu", [y])
            y = conv(g, p + "/conv3/Conv", y, w + ".conv3", [4 * width, width, 1, 1],
                     kernel_shape=[1, 1])
            short = x
            if b == 0:
                short = conv(g, p + "/downsample/downsample.0/Conv", x, w + ".downsample.0",
                             [4 * width, cin, 1, 1], kernel_shape=[1, 1], strides=[s, s])
            x = g.op(p + "/Add", "Add", [y, short])
            x = g.op(p + "/relu_2/Relu", "Relu", [x])
            cin = 4 * width
    x = g.op("/avgpool/GlobalAveragePool", "GlobalAveragePool", [x])
    x = g.op("/Flatten", "Flatten", [x], axis=1)
    x = g.op("/fc/Gemm", "Gemm", [x, g.weight("fc.weight", [1000, 2048]),
                                   g.weight("fc.bias", [1000])], alpha=1.0, beta=1.0, transB=1)
    g.name_output(x, "logits")
    return g.model(17, "ResNet-50 v1.5 (torchvision) as exported for inference: batch norm "
                   "folded into the convolutions' bias, dynamic batch, 224x224; weights not "
                   "included.")


def make_espcn():
    """The super-resolution net of PyTorch's ONNX export tutorial (ESPCN,
    upscale 3) on a dynamic [1, 1, height, width] luminance image: 5x5 64,
    3x3 64, 3x3 32, each with bias and Relu, a 3x3 to 9 channels with bias,
    then DepthToSpace (the pixel shuffle).  dtune import gives
    models/espcn.json's workloads."""
    g = base.Graph("main_graph")
    g.inputs = [base.tensor_info("lr", F32, [1, 1, "height", "width"])]
    g.outputs = [base.tensor_info("sr", F32, [1, 1, "out_h", "out_w"])]
    x = "lr"
    for i, (cin, cout, k) in enumerate([(1, 64, 5), (64, 64, 3), (64, 32, 3)]):
        x = conv(g, "/conv%d/Conv" % (i + 1), x, "conv%d" % (i + 1), [cout, cin, k, k],
                 kernel_shape=[k, k], pads=[k // 2] * 4)
        x = g.op("/relu%d/Relu" % (i + 1), "Relu", [x])
    x = conv(g, "/conv4/Conv", x, "conv4", [9, 32, 3, 3], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = g.op("/pixel_shuffle/DepthToSpace", "DepthToSpace", [x], blocksize=3, mode="CRD")
    g.name_output(x, "sr")
    return g.model(17, "The super-resolution net of PyTorch's ONNX tutorial (ESPCN, x3) on a "
                   "luminance image of any size: 5x5, 3x3, 3x3 convolutions with Relu, a 3x3 to "
                   "9 channels and the pixel shuffle (DepthToSpace); weights not included.")


GOOD = [
    ("conv-dynamic.onnx", make_conv_dynamic),
    ("resnet50.onnx", make_resnet50),
    ("espcn.onnx", make_espcn),
    ("conv-stem.onnx", make_conv_stem),
    ("conv1d.onnx", make_conv1d),
]
BAD = []
