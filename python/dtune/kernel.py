"""Running a workload's dispatched kernels on NumPy arrays.

``db.kernel(key)`` is a Kernel that, on every call, looks the shape up
(dtune_lookup_values), builds and loads the kernel libdtune dispatches
(dtune_kernel_load: dtune's own builder, kernel cache and names, so the
kernels the tuner compiled on this machine are loaded as they are), packs
the weights once per packed layout (dtune_kernel_pack) and runs it
(dtune_kernel_run).  The package invokes no compiler itself.
"""
import ctypes
import os
import re
from pathlib import Path

import numpy as np

from . import _lib
from ._lib import DtuneError, DTUNE_EINVAL, check, int_arg, float32_arg, lib, text

# element types by bytes per element (dtune_kernel_info: A's and B's)
_A_TYPES = {4: np.float32, 2: np.uint16, 1: np.uint8}
_B_TYPES = {4: np.float32, 2: np.uint16, 1: np.int8}
# each tensor's dims, by name
_DENSE = {"X": ("M", "K"), "W": ("N", "K"), "Y": ("M", "N"), "bias": ("N",), "scale_b": ("N",)}
_BMM = {"A": ("B", "M", "K"), "C": ("B", "M", "N")}
_BMM_B = {"NN": ("B", "K", "N"), "NT": ("B", "N", "K")}

try:  # optional: bf16 arrays as ml_dtypes.bfloat16
    import ml_dtypes
    _BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    _BFLOAT16 = None


def _as_array(a, what):
    try:
        return np.asarray(a)
    except Exception as e:  # ragged lists, objects NumPy cannot take
        raise DtuneError(f"{what}: not an array ({e})", DTUNE_EINVAL) from None


def to_bf16(a):
    """Real numbers (float or integer arrays, lists, scalars) -> uint16 array of
    bf16 bits (round to nearest even; NaN kept NaN). A uint16 array is refused:
    it already holds bf16 bits (from_bf16 widens them); so are bool, complex,
    str and object arrays, which are not numbers to round."""
    x = _as_array(a, "to_bf16's argument")
    if _BFLOAT16 is not None and x.dtype == _BFLOAT16:
        return np.ascontiguousarray(x).view(np.uint16)
    if x.dtype == np.uint16:
        raise DtuneError("to_bf16 takes real numbers, not a uint16 array: uint16 arrays are "
                         "bf16 bits already (dtune.from_bf16 widens them to float32)",
                         DTUNE_EINVAL)
    if x.dtype.kind not in "fiu":
        raise DtuneError(f"to_bf16 takes float or integer numbers, not a {x.dtype} array",
                         DTUNE_EINVAL)
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32)
    r = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), r)


def from_bf16(b):
    """bf16 bits (a uint16 array, or an ml_dtypes.bfloat16 array) -> float32 array.
    Any other dtype is refused rather than reinterpreted (to_bf16 makes the bits)."""
    x = _as_array(b, "from_bf16's argument")
    if _BFLOAT16 is not None and x.dtype == _BFLOAT16:
        x = np.ascontiguousarray(x).view(np.uint16)
    if x.dtype != np.uint16:
        raise DtuneError(f"from_bf16 takes a uint16 array of bf16 bits, not a {x.dtype} array "
                         "(dtune.to_bf16 makes one from floats)", DTUNE_EINVAL)
    u = x.astype(np.uint32)  # an array, also for a 0-d x (a shift of one gives a scalar)
    u <<= np.uint32(16)
    return u.view(np.float32)


def cache_dir():
    """The kernel cache libdtune builds into (dtune's own): $DTUNE_CACHE_DIR, else
    $XDG_CACHE_HOME/dtune/kernels, else ~/.cache/dtune/kernels."""
    d = os.environ.get("DTUNE_CACHE_DIR")
    if d:
        return Path(d)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dtune" / "kernels"


# ---- the canonical key -----------------------------------------------------------

def _split_top(s):
    """s split at the commas outside {...} (a domain's values)."""
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur] if cur else out


def _domain_low(d):
    """The lowest value of a domain: lo..hi[:step] or {a,b,...}."""
    if d.startswith("{"):
        return min(int(x) for x in d.strip("{}").split(","))
    return int(d.split("..", 1)[0])


def _is_domain(v):
    return v.startswith("{") or ".." in v


def _parse_key(key):
    """A canonical key's items (name -> value text, a domain DIM=lo..hi as the
    variable DIM) and its variables' lowest values, sorted by name (the order
    dtune_lookup_values takes)."""
    m = re.fullmatch(r"(\w+)\((.*)\)", key)
    if not m:
        raise DtuneError(f"unexpected canonical key {key!r}")
    items, _, vars_ = m.group(2).partition(";")
    values, lows = {}, {}
    for it in _split_top(items):
        name, _, v = it.partition("=")
        if _is_domain(v):
            values[name], lows[name] = name, _domain_low(v)
        else:
            values[name] = v
    for it in _split_top(vars_):
        name, _, v = it.partition("=")
        lows[name] = _domain_low(v)
    return m.group(1), values, dict(sorted(lows.items()))


def _eval(expr, env):
    """A dims expression of a workload key (+ - * /, / floor division) with env's values."""
    toks = re.findall(r"\d+|[A-Za-z_]\w*|\S", expr)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def factor():
        t = take() if peek() is not None else None
        if t is None:
            raise DtuneError(f"bad dims expression {expr!r}")
        if t == "-":
            return -factor()
        if t == "(":
            v = add()
            if take() != ")":
                raise DtuneError(f"bad dims expression {expr!r}")
            return v
        if t.isdigit():
            return int(t)
        if t in env:
            return env[t]
        raise DtuneError(f"unknown variable {t!r} in {expr!r}")

    def mul():
        v = factor()
        while peek() in ("*", "/"):
            op, r = take(), factor()
            if op == "/" and r == 0:
                raise DtuneError(f"division by zero in {expr!r} with {env}", DTUNE_EINVAL)
            v = v * r if op == "*" else v // r
        return v

    def add():
        v = mul()
        while peek() in ("+", "-"):
            v = v + mul() if take() == "+" else v - mul()
        return v

    v = add()
    if peek() is not None:
        raise DtuneError(f"bad dims expression {expr!r}")
    return v


def _env_text(env):
    return ", ".join(f"{v}={x}" for v, x in env.items())


# ---- the kernel ------------------------------------------------------------------

class _Loaded:
    """One kernel loaded through libdtune (dtune_kernel_load), closed with it."""

    def __init__(self, db, kernel_id):
        self.h = ctypes.c_void_p()
        h = db._enter()
        try:
            check(lib().dtune_kernel_load(h, kernel_id, ctypes.byref(self.h)))
        finally:
            db._leave()
        self.info = _lib.dtune_kernel_info()
        check(lib().dtune_kernel_info_get(self.h, ctypes.byref(self.info)))
        dec = lambda b: b.decode("utf-8", "replace")
        self.op, self.dtype = dec(self.info.op), dec(self.info.dtype)
        self.layout, self.path = dec(self.info.packed_layout), dec(self.info.path)
        self.dims = tuple(dec(self.info.dims).split(","))

    def close(self):
        if self.h:
            lib().dtune_kernel_close(self.h)
            self.h = None

    __del__ = close


def _dims_arg(values):
    return (ctypes.c_int64 * len(values))(*values)


class Kernel:
    """The dispatched kernels of one workload, callable on NumPy arrays.

    dense: ``k.pack(W[, scale_b])`` once, then ``Y = k(X[, bias][, scale_a=, zp_a=])``;
    batch_matmul: ``C = k(A, B)``. Variables that are not plain dims of an
    input (``M=batch*seq``) are keywords: ``k(X, batch=2, seq=37)``. Each call
    runs the kernel libdtune dispatches for its shape; kernels are built and
    loaded once, weights packed once per packed layout. The Kernel keeps its
    own read-only handle on the database: it outlives the Database's close().
    """

    @classmethod
    def _build(cls, db, key, target, threads):
        from .db import Database, canonicalize
        key = canonicalize(key)
        if key.startswith("conv2d("):
            # its X is an NHWC image, not an M x K matrix: the shape checks
            # below are dense's
            raise DtuneError("conv2d kernels are not run from Python yet; call the exported C "
                             "(dtune export) or look the schedule up with db.lookup",
                             DTUNE_EINVAL)
        db._enter()  # "is closed" when it is
        db._leave()
        return cls(Database(db.path), key, target, threads)

    def __init__(self, db, key, target, threads):
        self._db, self.key, self.workload = db, key, key
        self._target = None if target is None else text(target, "target")
        self._threads = int_arg(threads, "threads", 0, 65536)
        self._kernels, self._packs, self._weights = {}, {}, None
        op, self._items, lows = _parse_key(key)
        self.variables = tuple(lows)
        s = self._lookup(list(lows.values()))   # the lowest shape: ENOTFOUND if untuned
        self.target, self.threads = s.target.decode(), s.threads
        first = self._kernel(s.kernel_id)
        self.op, self.dtype, self._info = first.op, first.dtype, first.info
        self.dims = {d: self._items[d] for d in first.dims}  # e.g. {"M": "batch*seq"}
        self.library_path = Path(first.path)
        if self.op == "dense":
            self._shapes = dict(_DENSE)
        else:
            self._shapes = dict(_BMM, B=_BMM_B[self._items.get("layout", "NN")])
        self.has_bias = bool(first.info.bias)
        self._first = s.kernel_id

    def __repr__(self):
        return (f"<dtune.Kernel {self.workload} target={self.target} threads={self.threads} "
                f"{len(self._kernels)} kernel(s) loaded>")

    def close(self):
        """Unloads the kernels and closes the Kernel's database handle."""
        for k in self._kernels.values():
            k.close()
        self._kernels.clear()
        self._db.close()

    @property
    def kernels_built(self):
        """How many of the loaded kernels libdtune compiled (the rest were in the cache)."""
        return sum(not k.info.cache_hit for k in self._kernels.values())

    @property
    def library_paths(self):
        """kernel id -> its shared object in dtune's kernel cache, for the loaded kernels."""
        return {i: Path(k.path) for i, k in self._kernels.items()}

    # -- libdtune --
    def _lookup(self, vals):
        s = _lib.dtune_schedule()
        v = (ctypes.c_int64 * max(1, len(vals)))(*vals)
        h = self._db._enter()
        try:
            check(lib().dtune_lookup_values(h, text(self.key, "key"), v, len(vals),
                                            self._target, self._threads, ctypes.byref(s)))
        finally:
            self._db._leave()
        return s

    def _kernel(self, kernel_id):
        if kernel_id not in self._kernels:
            self._kernels[kernel_id] = _Loaded(self._db, kernel_id)
        return self._kernels[kernel_id]

    def _packed(self, k, dims):
        """The weights packed for k's layout (packed on first use)."""
        if k.layout not in self._packs:
            W, sb = self._weights
            d = _dims_arg(dims)
            size = ctypes.c_size_t()
            check(lib().dtune_kernel_packed_size(k.h, d, len(dims), ctypes.byref(size)))
            buf = np.zeros(size.value + 64, dtype=np.uint8)
            packed = buf[(-buf.ctypes.data) % 64:][:size.value]  # 64-byte aligned
            check(lib().dtune_kernel_pack(k.h, d, len(dims), W.ctypes.data,
                                          None if sb is None else sb.ctypes.data,
                                          packed.ctypes.data, size.value))
            self._packs[k.layout] = packed
        return self._packs[k.layout]

    # -- arrays --
    def _array(self, a, name, what):
        """a as a C-contiguous array of tensor name's element type."""
        if name in ("bias", "scale_b", "Y", "C"):
            want = np.dtype(np.float32)
        elif name in ("X", "A"):
            want = np.dtype(_A_TYPES[self._info.a_bytes])
        else:
            want = np.dtype(_B_TYPES[self._info.b_bytes])
        if not isinstance(a, np.ndarray):
            try:
                a = np.asarray(a)
            except Exception as e:
                raise DtuneError(f"{what}: not an array ({e})", DTUNE_EINVAL) from None
        if a.dtype == want:
            pass
        elif want == np.float32 and a.dtype.kind == "f" and a.dtype.itemsize <= 8:
            with np.errstate(over="ignore"):  # beyond float32: inf, which pack refuses
                a = a.astype(np.float32)
        elif want == np.uint16 and _BFLOAT16 is not None and a.dtype == _BFLOAT16:
            a = np.ascontiguousarray(a).view(np.uint16)
        else:
            hint = " (convert with dtune.to_bf16)" if want == np.uint16 else ""
            raise DtuneError(f"{what} must be a {want} array for this {self.dtype} kernel, "
                             f"not {a.dtype}{hint}", DTUNE_EINVAL)
        return np.ascontiguousarray(a)

    def _shaped(self, a, name, observed):
        dims = self._shapes[name]
        if a.ndim != len(dims):
            raise DtuneError(f"{name} must have {len(dims)} dimensions "
                             f"({' x '.join(dims)}), not shape {a.shape}", DTUNE_EINVAL)
        for d, n in zip(dims, a.shape):
            if d in observed and observed[d][0] != n:
                raise DtuneError(f"{name} has {d}={n} but {observed[d][1]} has {d}="
                                 f"{observed[d][0]} (shape {a.shape})", DTUNE_EINVAL)
            observed.setdefault(d, (n, name))

    def _values(self, observed, given):
        """The variables' values (keywords, else from plain dims), every dim checked."""
        env = {}
        for v, x in given.items():
            if v not in self.variables:
                raise DtuneError(f"unknown argument {v!r}: the variables of {self.workload} "
                                 f"are {', '.join(self.variables) or 'none'}", DTUNE_EINVAL)
            env[v] = int_arg(x, v, -2**63, 2**63 - 1)
        for d, e in self.dims.items():
            if e in self.variables and e not in env and d in observed:
                env[e] = observed[d][0]
        missing = [v for v in self.variables if v not in env]
        if missing:
            raise DtuneError(f"cannot tell {', '.join(missing)} from the arrays (dims "
                             + ", ".join(f"{d} = {e}" for d, e in self.dims.items())
                             + f"): pass {', '.join(m + '=...' for m in missing)}", DTUNE_EINVAL)
        dims = {}
        for d, e in self.dims.items():
            n = _eval(e, env)
            what = f"{d} = {e}" + (f" with {_env_text(env)}" if not e.isdigit() else "")
            if n < 1:
                raise DtuneError(f"{what} is {n}: every dim must be >= 1", DTUNE_EINVAL)
            if d in observed and observed[d][0] != n:
                raise DtuneError(f"{observed[d][1]} has {d}={observed[d][0]}, but the "
                                 f"workload's {what} is {n}", DTUNE_EINVAL)
            dims[d] = n
        return env, dims

    # -- dense weights --
    def pack(self, W, scale_b=None):
        """Packs dense weights (int8/w8a32: s8 W and per-channel scale_b[N]): at once
        for the first kernel's layout, for another layout when a call first needs it."""
        if not self._info.packs_weights:
            raise DtuneError(f"{self.op} has no constant weights to pack", DTUNE_EINVAL)
        if scale_b is not None and not self._info.scale_b:
            raise DtuneError(f"a {self.dtype} kernel takes no scale_b", DTUNE_EINVAL)
        if scale_b is None and self._info.scale_b:
            raise DtuneError(f"scale_b is required to pack a {self.dtype} kernel", DTUNE_EINVAL)
        consts = {d: _eval(e, {}) for d, e in self.dims.items() if d in ("N", "K")}
        arrays = {}
        for n, a in (("W", W), ("scale_b", scale_b)):
            if a is None:
                continue
            a = arrays[n] = self._array(a, n, n)
            want = tuple(consts[d] for d in self._shapes[n])
            if a.shape != want:
                raise DtuneError(f"{n} must have shape {want}, not {a.shape}", DTUNE_EINVAL)
        old = self._weights, self._packs
        self._weights, self._packs = (arrays["W"], arrays.get("scale_b")), {}
        try:  # libdtune checks the scales (finite, non-zero) as it packs
            self._packed(self._kernels[self._first], (1, consts["N"], consts["K"]))
        except DtuneError:
            self._weights, self._packs = old
            raise
        return self

    # -- a call --
    def __call__(self, *arrays, bias=None, scale_a=None, zp_a=None, out=None, **variables):
        inputs = ["X"] if self.op == "dense" else ["A", "B"]
        if self.op == "dense" and len(arrays) == 2 and bias is None:
            arrays, bias = arrays[:1], arrays[1]
        if len(arrays) != len(inputs):
            want = ", ".join(inputs) + (", bias" if self.has_bias else "")
            raise DtuneError(f"{self.workload} takes {want}; got {len(arrays)} arrays",
                             DTUNE_EINVAL)
        if bias is not None and not self.has_bias:
            raise DtuneError(f"{self.workload} has no bias (its epilogue has none)", DTUNE_EINVAL)
        if bias is None and self.has_bias:
            raise DtuneError(f"{self.workload} needs bias= (its epilogue has one)", DTUNE_EINVAL)
        if self.op == "dense" and self._weights is None:
            raise DtuneError("call k.pack(W) before running a dense kernel", DTUNE_EINVAL)
        quant = self._quantization(scale_a, zp_a)
        observed, given = {}, {}
        for n, a in zip(inputs, arrays):
            given[n] = a = self._array(a, n, n)
            self._shaped(a, n, observed)
        if bias is not None:
            given["bias"] = a = self._array(bias, "bias", "bias")
            self._shaped(a, "bias", observed)
        env, dims = self._values(observed, variables)
        oname = "Y" if self.op == "dense" else "C"
        oshape = tuple(dims[d] for d in self._shapes[oname])
        if out is None:
            out = np.empty(oshape, dtype=np.float32)
        elif not (isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == oshape
                  and out.flags.c_contiguous and out.flags.writeable):
            raise DtuneError(f"out must be a writable C-contiguous float32 array of shape "
                             f"{oshape}", DTUNE_EINVAL)
        k = self._kernel(self._lookup([env[v] for v in self.variables]).kernel_id)
        op_dims = [dims[d] for d in k.dims]
        b = self._packed(k, op_dims) if self.op == "dense" else given["B"]
        args = _lib.dtune_kernel_args(
            dims=_dims_arg(op_dims), a=given[inputs[0]].ctypes.data, b=b.ctypes.data,
            bias=given["bias"].ctypes.data if bias is not None else None, c=out.ctypes.data,
            threads=0, scale_a=quant.get("scale_a", 0.0), zp_a=quant.get("zp_a", 0))
        check(lib().dtune_kernel_run(k.h, ctypes.byref(args)))
        return out

    def _quantization(self, scale_a, zp_a):
        """The activations' quantization arguments, checked: int8's X is u8, so its
        zero point is 0..255, scale_a a finite float32."""
        if not self._info.scale_a:
            if scale_a is not None or zp_a is not None and \
                    int_arg(zp_a, "zp_a", 0, 255) != 0:
                raise DtuneError(f"a {self.dtype} kernel takes no scale_a or zp_a", DTUNE_EINVAL)
            return {}
        if scale_a is None:
            raise DtuneError("an int8 kernel needs scale_a= (and zp_a=, default 0)", DTUNE_EINVAL)
        # the zero point is an activation value: a u8, like X's elements
        return {"scale_a": float32_arg(scale_a, "scale_a"),
                "zp_a": 0 if zp_a is None else int_arg(zp_a, "zp_a (X's u8 zero point)", 0, 255)}
