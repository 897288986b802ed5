"""Test models for nodes whose shapes cannot be propagated (issue 43, point
3; tests/data/onnx/README.md): a YOLO-style anchor grid built with a float
Range beside a tuned MatMul (imports: the Range feeds nothing tuned), and the
same Range feeding a MatMul (refused, naming the chain and the Range's
reason).  Loaded by make_onnx_models.py's load_extensions()."""
import numpy as np

import make_onnx_models as base

F32 = base.F32
I64 = base.I64
info = base.tensor_info


def anchors(g, x):
    """The anchor row of a detector head as torch exports
    torch.arange(0, w * 0.5): Shape -> Gather(2) -> Cast(float) -> Mul(0.5)
    -> Range(0.0, limit, 1.0), a float Range whose length is not an integer
    expression of the dims."""
    w = base.shape_dim(g, "/anchors", x, 2)
    wf = g.op("/anchors", "Cast", [w], to=F32)
    lim = g.op("/anchors", "Mul", [wf, g.const("/anchors", 0.5, np.float32)])
    return g.op("/anchors", "Range", [g.const("/anchors", 0.0, np.float32), lim,
                                      g.const("/anchors", 1.0, np.float32)])


def make_range_float_anchors():
    """x [batch, h, w, 64] -> a head MatMul [64, 32] (tuned), and the anchor
    Range as a second output that nothing tuned reads."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "h", "w", 64])]
    y = g.op("/head", "MatMul", [g.inputs[0].name, g.anon_weight([64, 32])])
    a = anchors(g, "x")
    g.name_output(y, "y")
    g.name_output(a, "grid")
    g.outputs = [info("y", F32, ["batch", "h", "w", 32]), info("grid", F32, [None])]
    return g.model(17, "A detector head with a float-Range anchor grid beside it.")


def make_bad_range_feeds_matmul():
    """The float Range's row, unsqueezed to [1, n] and multiplied by a weight
    [n?, 8]: the MatMul reads dims nothing can know."""
    g = base.Graph("main_graph")
    g.inputs = [info("x", F32, ["batch", "h", "w", 64])]
    a = anchors(g, "x")
    row = g.op("/anchors", "Unsqueeze", [a, g.const("/anchors", [0], np.int64)])
    y = g.op("/proj", "MatMul", [row, g.anon_weight([16, 8])])
    g.name_output(y, "y")
    g.outputs = [info("y", F32, [1, 8])]
    return g.model(17, "A float Range feeding a MatMul: its dims cannot be known.")


GOOD = [("range-float-anchors.onnx", make_range_float_anchors)]
BAD = [("bad-range-feeds-matmul.onnx", make_bad_range_feeds_matmul)]
