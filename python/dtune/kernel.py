"""Running a workload's dispatched kernels on NumPy arrays.

``db.kernel(key)`` exports the schedule with dtune_export (docs/export.md),
compiles NAME.c into a shared object in a cache directory keyed by a hash of
the exported text and the compiler, loads it with ctypes, and reads the
entry points' prototypes and the dims from NAME.h.
"""
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ._lib import DtuneError, DTUNE_EINVAL, int_arg, float32_arg

NAME = "dtpy"  # the exported files' NAME (a C identifier)
CFLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]

# C types of the exported prototypes
_SCALARS = {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32, "float": ctypes.c_float,
            "size_t": ctypes.c_size_t, "void": None}
_ELEMENTS = {"float": np.float32, "uint16_t": np.uint16, "uint8_t": np.uint8, "int8_t": np.int8}
# each tensor's dims, by parameter name (docs/export.md, "ABI")
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
    """DTUNE_CACHE_DIR/python, else $XDG_CACHE_HOME/dtune/python, else ~/.cache/dtune/python."""
    d = os.environ.get("DTUNE_CACHE_DIR")
    if d:
        return Path(d) / "python"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dtune" / "python"


_cc_ids = {}


def _compiler():
    """The compiler command ($CC, else cc) and its --version text (part of the cache key)."""
    cc = os.environ.get("CC") or "cc"
    if cc not in _cc_ids:
        try:
            r = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise DtuneError(f"cannot run the C compiler {cc!r}: {e} (set CC)") from None
        _cc_ids[cc] = r.stdout
    return cc, _cc_ids[cc]


def _build(c_text, h_text):
    """The path of the shared object built from the exported text (cached)."""
    cc, cc_id = _compiler()
    h = hashlib.sha256("\0".join([cc, cc_id, " ".join(CFLAGS), c_text, h_text]).encode())
    d = cache_dir() / h.hexdigest()[:32]
    so = d / f"{NAME}.so"
    if so.exists():
        return so
    try:
        d.mkdir(parents=True, exist_ok=True)
        for ext, t in (("c", c_text), ("h", h_text)):
            tmp = d / f".{NAME}.{ext}.{os.getpid()}"
            tmp.write_text(t)
            os.replace(tmp, d / f"{NAME}.{ext}")
    except OSError as e:
        raise DtuneError(f"cannot write the kernel cache {d}: {e} (set DTUNE_CACHE_DIR)") from None
    tmp = d / f".{NAME}.so.{os.getpid()}"
    cmd = [cc, *CFLAGS, str(d / f"{NAME}.c"), "-o", str(tmp)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.SubprocessError) as e:
        raise DtuneError(f"cannot run {' '.join(cmd)}: {e}") from None
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise DtuneError(f"compiling the exported kernels failed ({' '.join(cmd)}):\n"
                         + r.stderr[-4000:])
    os.replace(tmp, so)
    return so


# ---- the header ------------------------------------------------------------------

def _param(p):
    m = re.fullmatch(r"(const )?(\w+) (\*?)(\w+)", p.strip())
    if not m:
        raise DtuneError(f"unexpected parameter {p!r} in the exported header")
    q = {"const": bool(m.group(1)), "type": m.group(2), "ptr": bool(m.group(3)),
         "name": m.group(4)}
    if q["type"] not in (_ELEMENTS if q["ptr"] else _SCALARS) and q["type"] != "void":
        raise DtuneError(f"unexpected type in {p!r} in the exported header")
    return q


def _parse_header(h):
    info = {"protos": {}, "dims": {}, "vars": []}
    m = re.search(r"^ \* workload: (.+)$", h, re.M)
    info["workload"] = m.group(1) if m else ""
    m = re.search(r"^ \* target:   (\S+), (\d+) thread", h, re.M)
    info["target"], info["threads"] = (m.group(1), int(m.group(2))) if m else ("", 0)
    dims = h.split(" * Dims:\n", 1)[1] if " * Dims:\n" in h else ""
    for line in dims.splitlines():
        m = re.fullmatch(r" \*   (\w+) = (.+)", line)
        if not m:
            break
        info["dims"][m.group(1)] = m.group(2)
    for m in re.finditer(r"^ \* (\w+) \(argument (\w+)\) was tuned over", h, re.M):
        info["vars"].append(m.group(1))
    for m in re.finditer(r"^(void|size_t|int64_t) (\w+)\((.*)\);$", h, re.M):
        params = [] if m.group(3) == "void" else [_param(p) for p in m.group(3).split(",")]
        info["protos"][m.group(2)] = (m.group(1), params)
    if NAME not in info["protos"] or not info["dims"]:
        raise DtuneError("the exported header has no entry point or dims: is this dtune's "
                         "export format?")
    return info


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

class Kernel:
    """The dispatched kernels of one workload, callable on NumPy arrays.

    dense: ``k.pack(W[, scale_b])`` once, then ``Y = k(X[, bias][, scale_a=, zp_a=])``;
    batch_matmul: ``C = k(A, B)``. Variables that are not plain dims of an
    input (``M=batch*seq``) are keywords: ``k(X, batch=2, seq=37)``.
    """

    @classmethod
    def _build(cls, db, key, target, threads):
        from .db import canonicalize
        key = canonicalize(key)
        root = cache_dir()
        try:
            root.mkdir(parents=True, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=".export-", dir=root)
        except OSError as e:
            raise DtuneError(f"cannot create the kernel cache {root}: {e} "
                             "(set DTUNE_CACHE_DIR)") from None
        try:
            db.export(key, os.path.join(tmp, f"{NAME}.c"), target=target, threads=threads)
            c_text = Path(tmp, f"{NAME}.c").read_text()
            h_text = Path(tmp, f"{NAME}.h").read_text()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return cls(key, c_text, h_text)

    def __init__(self, key, c_text, h_text):
        self.key = key
        self.header = h_text
        info = _parse_header(h_text)
        self.workload, self.target, self.threads = info["workload"], info["target"], info["threads"]
        self.dims = info["dims"]               # dim -> expression text, e.g. {"M": "batch*seq"}
        self.variables = tuple(info["vars"])   # the key's variables, in argument order
        m = re.search(r"[(,]dtype=(\w+)", key)
        self.dtype = m.group(1) if m else "f32"
        self.library_path = _build(c_text, h_text)
        try:
            self._so = ctypes.CDLL(str(self.library_path))
        except OSError as e:
            raise DtuneError(f"cannot load {self.library_path}: {e}") from None
        self._fn = {}
        self._params = {}
        for name, (ret, params) in info["protos"].items():
            fn = getattr(self._so, name)
            fn.restype = _SCALARS[ret]
            fn.argtypes = [ctypes.c_void_p if p["ptr"] else _SCALARS[p["type"]] for p in params]
            self._fn[name[len(NAME) + 1:] or "run"] = fn
            self._params[name[len(NAME) + 1:] or "run"] = params
        self._run = self._params["run"][len(self.variables):]
        names = [p["name"] for p in self._run]
        if key.lstrip().startswith("conv2d("):
            # its X is an NHWC image, not an M x K matrix: the shape checks
            # below are dense's
            raise DtuneError("conv2d kernels are not run from Python yet; call the exported C "
                             "(dtune export) or look the schedule up with db.lookup",
                             DTUNE_EINVAL)
        if "X" in names:
            self.op, self._shapes = "dense", dict(_DENSE)
        elif "A" in names:
            m = re.search(r"layout=(NN|NT)", key)
            self.op = "batch_matmul"
            self._shapes = dict(_BMM, B=_BMM_B[m.group(1) if m else "NN"])
        else:
            raise DtuneError(f"unknown entry point {names} in the exported header")
        self.has_bias = "bias" in names
        self._packed = None

    def __repr__(self):
        return (f"<dtune.Kernel {self.workload} target={self.target} threads={self.threads} "
                f"{self.library_path}>")

    # -- arrays --
    def _array(self, a, p, what):
        """a as a C-contiguous array of parameter p's element type."""
        want = np.dtype(_ELEMENTS[p["type"]])
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
        """Packs dense weights once (int8/w8a32: s8 W and per-channel scale_b[N])."""
        if "pack" not in self._fn:
            raise DtuneError(f"{self.op} has no constant weights to pack", DTUNE_EINVAL)
        params = self._params["pack"]
        names = [p["name"] for p in params]
        if scale_b is not None and "scale_b" not in names:
            raise DtuneError(f"a {self.dtype} kernel takes no scale_b", DTUNE_EINVAL)
        consts = {d: _eval(e, {}) for d, e in self.dims.items() if d in ("N", "K")}
        given = {"W": W, "scale_b": scale_b}
        arrays = {}
        for p in params:
            n = p["name"]
            if n == "packed":
                continue
            if given.get(n) is None:
                raise DtuneError(f"{n} is required to pack a {self.dtype} kernel", DTUNE_EINVAL)
            a = arrays[n] = self._array(given[n], p, n)
            want = tuple(consts[d] for d in self._shapes[n])
            if a.shape != want:
                raise DtuneError(f"{n} must have shape {want}, not {a.shape}", DTUNE_EINVAL)
        size = self._fn["packed_size"]()
        buf = np.zeros(size + 64, dtype=np.uint8)
        packed = buf[(-buf.ctypes.data) % 64:][:size]  # 64-byte aligned
        rc = self._fn["pack"](*[packed.ctypes.data if n == "packed" else arrays[n].ctypes.data
                                for n in names])
        if rc:  # int8 / w8a32: n + 1 for the first bad scale_b[n] (-1: NULL, not passed here)
            raise DtuneError(f"scale_b[{rc - 1}] = {arrays['scale_b'][rc - 1]} is not a finite "
                             "non-zero number", DTUNE_EINVAL)
        self._packed = packed
        return self

    # -- a call --
    def __call__(self, *arrays, bias=None, scale_a=None, zp_a=None, out=None, **variables):
        inputs = [p for p in self._run if p["const"] and p["ptr"] and p["name"] in self._shapes
                  and p["name"] != "bias"]
        if self.op == "dense" and len(arrays) == 2 and bias is None:
            arrays, bias = arrays[:1], arrays[1]
        if len(arrays) != len(inputs):
            want = ", ".join(p["name"] for p in inputs) + (", bias" if self.has_bias else "")
            raise DtuneError(f"{self.workload} takes {want}; got {len(arrays)} arrays",
                             DTUNE_EINVAL)
        if bias is not None and not self.has_bias:
            raise DtuneError(f"{self.workload} has no bias (its epilogue has none)", DTUNE_EINVAL)
        if bias is None and self.has_bias:
            raise DtuneError(f"{self.workload} needs bias= (its epilogue has one)", DTUNE_EINVAL)
        if self.op == "dense" and self._packed is None:
            raise DtuneError("call k.pack(W) before running a dense kernel", DTUNE_EINVAL)
        quant = self._quantization(scale_a, zp_a)
        observed, given = {}, {}
        for p, a in zip(inputs, arrays):
            given[p["name"]] = a = self._array(a, p, p["name"])
            self._shaped(a, p["name"], observed)
        if bias is not None:
            bp = next(p for p in self._run if p["name"] == "bias")
            given["bias"] = a = self._array(bias, bp, "bias")
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
        args = [env[v] for v in self.variables]
        for p in self._run:
            n = p["name"]
            if n == "packed":
                args.append(self._packed.ctypes.data)
            elif n == oname:
                args.append(out.ctypes.data)
            elif n in quant:
                args.append(quant[n])
            else:
                args.append(given[n].ctypes.data)
        self._fn["run"](*args)
        return out

    def _quantization(self, scale_a, zp_a):
        """The activations' quantization arguments of the entry point, checked:
        int8's X is u8, so its zero point is 0..255 (passed as int32_t zp_a,
        which would take anything and compute garbage), scale_a a finite float32."""
        names = {p["name"] for p in self._run}
        if "scale_a" not in names:
            if scale_a is not None or zp_a is not None and \
                    int_arg(zp_a, "zp_a", 0, 255) != 0:
                raise DtuneError(f"a {self.dtype} kernel takes no scale_a or zp_a", DTUNE_EINVAL)
            return {}
        if scale_a is None:
            raise DtuneError("an int8 kernel needs scale_a= (and zp_a=, default 0)", DTUNE_EINVAL)
        q = {"scale_a": float32_arg(scale_a, "scale_a")}
        if "zp_a" in names:
            # the zero point is an activation value: a u8, like X's elements
            q["zp_a"] = 0 if zp_a is None else int_arg(zp_a, "zp_a (X's u8 zero point)", 0, 255)
        return q
