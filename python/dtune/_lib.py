"""The ctypes binding of libdtune (include/dtune/dtune.h), the package's error type
and the checks of every argument the package passes on (to C, a URL or a command).

The library is found lazily, on the first call that needs it, so that
``import dtune`` works without it (the daemon client and ``dtune.tune`` need
only HTTP and the CLI).
"""
import ctypes
import ctypes.util
import json
import math
import operator
import os
import re
import threading
from pathlib import Path

import numpy as np

# include/dtune/dtune.h's sizes and codes, copied (tests/test_lib.py checks
# them and the struct's layout against the header with the C compiler).
DTUNE_KEY_MAX = 1024
DTUNE_TARGET_MAX = 128
DTUNE_SHAPE_MAX = 128
DTUNE_NAME_MAX = 64
DTUNE_ANNOTATION_MAX = 1024
DTUNE_PATH_MAX = 4096

DTUNE_OK = 0
DTUNE_EINVAL = -1
DTUNE_ENOTFOUND = -5


class DtuneError(Exception):
    """A failure of libdtune, of the dtune CLI, of the daemon or of an argument.

    ``message`` is the text (for libdtune calls: ``dtune_errmsg()``), ``code``
    the libdtune code (negative ``DTUNE_E*``) or the CLI's exit status, or
    None; ``status`` the HTTP status for daemon errors.
    """

    def __init__(self, message, code=None, status=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class LibraryNotFound(DtuneError, ImportError):
    """libdtune.so could not be loaded (also an ImportError)."""


class dtune_schedule(ctypes.Structure):
    """``dtune_schedule`` of dtune.h, field for field."""
    _fields_ = [
        ("kernel_id", ctypes.c_int64),
        ("op", ctypes.c_char * DTUNE_NAME_MAX),
        ("sketch", ctypes.c_char * DTUNE_NAME_MAX),
        ("annotation", ctypes.c_char * DTUNE_ANNOTATION_MAX),
        ("predicted_ns", ctypes.c_double),
        ("measured_ns", ctypes.c_double),
        ("extrapolated", ctypes.c_int),
        ("threads", ctypes.c_int),
        ("shape", ctypes.c_char * DTUNE_SHAPE_MAX),
        ("range_lo", ctypes.c_char * DTUNE_SHAPE_MAX),
        ("range_hi", ctypes.c_char * DTUNE_SHAPE_MAX),
        ("workload", ctypes.c_char * DTUNE_KEY_MAX),
        ("target", ctypes.c_char * DTUNE_TARGET_MAX),
    ]


class dtune_kernel_info(ctypes.Structure):
    """``dtune_kernel_info`` of dtune.h, field for field."""
    _fields_ = [
        ("kernel_id", ctypes.c_int64),
        ("op", ctypes.c_char * DTUNE_NAME_MAX),
        ("dtype", ctypes.c_char * DTUNE_NAME_MAX),
        ("backend", ctypes.c_char * DTUNE_NAME_MAX),
        ("packed_layout", ctypes.c_char * DTUNE_NAME_MAX),
        ("ndims", ctypes.c_int),
        ("dims", ctypes.c_char * DTUNE_NAME_MAX),
        ("packs_weights", ctypes.c_int),
        ("bias", ctypes.c_int),
        ("scale_a", ctypes.c_int),
        ("scale_b", ctypes.c_int),
        ("a_bytes", ctypes.c_int),
        ("b_bytes", ctypes.c_int),
        ("c_bytes", ctypes.c_int),
        ("cache_hit", ctypes.c_int),
        ("path", ctypes.c_char * DTUNE_PATH_MAX),
    ]


class dtune_kernel_args(ctypes.Structure):
    """``dtune_kernel_args`` of dtune.h, field for field."""
    _fields_ = [
        ("dims", ctypes.POINTER(ctypes.c_int64)),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("c", ctypes.c_void_p),
        ("threads", ctypes.c_int),
        ("scale_a", ctypes.c_float),
        ("zp_a", ctypes.c_int32),
    ]


_c = ctypes
_PROTOTYPES = {
    # name: (restype, argtypes)
    "dtune_version": (_c.c_char_p, []),
    "dtune_canonicalize": (_c.c_int, [_c.c_char_p, _c.c_char_p, _c.c_size_t]),
    "dtune_machine_key": (_c.c_int, [_c.c_char_p, _c.c_size_t]),
    "dtune_backend": (_c.c_int, [_c.c_char_p, _c.c_char_p, _c.c_char_p, _c.c_size_t]),
    "dtune_errmsg": (_c.c_char_p, []),
    "dtune_errstr": (_c.c_char_p, [_c.c_int]),
    "dtune_open": (_c.c_int, [_c.c_char_p, _c.POINTER(_c.c_void_p)]),
    "dtune_close": (None, [_c.c_void_p]),
    "dtune_set_refresh_ms": (None, [_c.c_void_p, _c.c_int]),
    "dtune_lookup": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p, _c.c_char_p, _c.c_int,
                                _c.POINTER(dtune_schedule)]),
    "dtune_lookup_values": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.POINTER(_c.c_int64), _c.c_int,
                                       _c.c_char_p, _c.c_int, _c.POINTER(dtune_schedule)]),
    "dtune_kernel_source": (_c.c_int, [_c.c_void_p, _c.c_int64, _c.c_char_p,
                                       _c.POINTER(_c.c_void_p)]),
    "dtune_free": (None, [_c.c_void_p]),
    "dtune_export": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p, _c.c_int, _c.c_char_p]),
    "dtune_kernel_load": (_c.c_int, [_c.c_void_p, _c.c_int64, _c.POINTER(_c.c_void_p)]),
    "dtune_kernel_close": (None, [_c.c_void_p]),
    "dtune_kernel_info_get": (_c.c_int, [_c.c_void_p, _c.POINTER(dtune_kernel_info)]),
    "dtune_kernel_packed_size": (_c.c_int, [_c.c_void_p, _c.POINTER(_c.c_int64), _c.c_int,
                                            _c.POINTER(_c.c_size_t)]),
    "dtune_kernel_pack": (_c.c_int, [_c.c_void_p, _c.POINTER(_c.c_int64), _c.c_int, _c.c_void_p,
                                     _c.c_void_p, _c.c_void_p, _c.c_size_t]),
    "dtune_kernel_run": (_c.c_int, [_c.c_void_p, _c.POINTER(dtune_kernel_args)]),
}

_lock = threading.Lock()
_lib = None


def _candidates():
    """(where, path) pairs to try, in order."""
    env = os.environ.get("DTUNE_LIB")
    if env:
        return [("DTUNE_LIB", env)]
    out = []
    tree = Path(__file__).resolve().parents[2] / "build" / "libdtune.so"
    if tree.exists():
        out.append(("the source tree", str(tree)))
    found = ctypes.util.find_library("dtune")
    if found:
        out.append(("find_library", found))
    out.append(("the loader's path", "libdtune.so"))
    return out


def lib():
    """The loaded libdtune, its prototypes set; LibraryNotFound if it cannot be loaded."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in _candidates():
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({where}): {e}")
                continue
            missing = [n for n in _PROTOTYPES if not hasattr(handle, n)]
            if missing:
                tried.append(f"{path} ({where}): not libdtune, lacks {', '.join(missing)}")
                continue
            for name, (res, args) in _PROTOTYPES.items():
                fn = getattr(handle, name)
                fn.restype, fn.argtypes = res, args
            _lib = handle
            return _lib
        raise LibraryNotFound(
            "libdtune could not be loaded; tried " + "; ".join(tried) +
            ". Build it (cmake --build build) and set DTUNE_LIB=/path/to/libdtune.so, "
            "or install it (cmake --install build --component libdtune) where the "
            "dynamic loader finds it (LD_LIBRARY_PATH, ldconfig).")


# ---- arguments: every value passed from Python to C, a URL or a command line is
# checked by one of these, so a bad one is a DtuneError naming it, never a
# UnicodeEncodeError, a ValueError or a reinterpreted value.

def _refuse(msg):
    raise DtuneError(msg, DTUNE_EINVAL)


def _utf8(s, what):
    """str s as UTF-8 bytes (lone surrogates refused); no NUL check."""
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        _refuse(f"{what} cannot be encoded as UTF-8: {e.reason} "
                f"({s[e.start:e.end]!r} at index {e.start})")


def text(s, what):
    """s as a C string argument: a str without NUL characters, as UTF-8 bytes."""
    if not isinstance(s, str):
        _refuse(f"{what} must be a str, not {type(s).__name__}")
    if "\0" in s:
        _refuse(f"{what} contains a NUL character")
    return _utf8(s, what)


def opt_text(s, what):
    return None if s is None else text(s, what)


def path_arg(p, what):
    """A file path (str, bytes or os.PathLike) as the bytes the OS takes
    (os.fsencode: a str from os.listdir with undecodable bytes round-trips)."""
    try:
        p = os.fspath(p)
    except TypeError:
        _refuse(f"{what} must be a path (str, bytes or os.PathLike), not {type(p).__name__}")
    if isinstance(p, str):
        try:
            p = os.fsencode(p)
        except UnicodeEncodeError as e:
            _refuse(f"{what} cannot be encoded for the OS (os.fsencode): {e.reason} "
                    f"({p[e.start:e.end]!r} at index {e.start})")
    if b"\0" in p:
        _refuse(f"{what} contains a NUL character")
    if not p:
        _refuse(f"{what} is empty")
    return p


def json_value(v, what):
    """v as a plain JSON value (dict with str keys, list, str, int, finite float,
    bool, None; NumPy scalars become Python ones), every str checked as text()."""
    if isinstance(v, np.generic) and not isinstance(v, str):
        v = v.item()  # np.int64(3) -> 3, np.float32 -> float, np.bool_ -> bool
    if v is None or isinstance(v, (bool, int)):
        return v
    if isinstance(v, str):
        text(v, what)
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            _refuse(f"{what} = {v!r} is not a finite number")
        return v
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                _refuse(f"{what} has a key {k!r} that is not a str")
            text(k, f"key {k!r} of {what}")
            out[k] = json_value(x, f"{what}.{k}")
        return out
    if isinstance(v, (list, tuple)):
        return [json_value(x, f"{what}[{i}]") for i, x in enumerate(v)]
    _refuse(f"{what} cannot be sent as JSON: {type(v).__name__} {v!r:.60}")


def json_text(v, what):
    """json_value(v) as UTF-8 JSON bytes."""
    return json.dumps(json_value(v, what), ensure_ascii=False, allow_nan=False).encode("utf-8")


def check(rc):
    """Raises DtuneError with dtune_errmsg() when rc is not DTUNE_OK."""
    if rc != DTUNE_OK:
        L = lib()
        msg = (L.dtune_errmsg() or b"").decode("utf-8", "replace")
        name = (L.dtune_errstr(rc) or b"").decode("utf-8", "replace")
        raise DtuneError(msg or name or f"libdtune error {rc}", rc)


def int_arg(v, what, lo, hi):
    """v as a Python int in lo..hi (bools, NumPy bools, floats and strs refused)."""
    if isinstance(v, (bool, np.bool_, float, str, bytes)):
        _refuse(f"{what} must be an integer, not {v!r}")
    try:
        i = operator.index(v)
    except TypeError:
        _refuse(f"{what} must be an integer, not {type(v).__name__}")
    if not lo <= i <= hi:
        _refuse(f"{what} must be from {lo} to {hi}, not {i}")
    return i


_DECIMAL = re.compile(r"[0-9]+")


def id_arg(v, what):
    """A database id (kernel, job): an int, or a str of plain ASCII decimal
    digits, from 1 to 2^63-1 -- so it can go into a URL path as it is."""
    if isinstance(v, str):
        if not _DECIMAL.fullmatch(v):
            _refuse(f"{what} must be a decimal integer, not {v!r}")
        v = int(v)
    return int_arg(v, what, 1, 2**63 - 1)


def float32_arg(v, what):
    """v (a real number: int, float, a NumPy real scalar; not a bool, str or
    complex) as a finite float32 value."""
    if isinstance(v, (bool, np.bool_, str, bytes, complex, np.complexfloating)) or \
            isinstance(v, np.ndarray) and (v.ndim or v.dtype.kind not in "iuf"):
        _refuse(f"{what} must be a real number, not {v!r}")
    try:
        with np.errstate(over="ignore"):
            f = np.float32(float(v))
    except OverflowError:  # an int beyond a double
        f = np.float32(np.inf)
    except (TypeError, ValueError):
        _refuse(f"{what} must be a real number, not {type(v).__name__}")
    if not np.isfinite(f):
        _refuse(f"{what} = {v!r} is not a finite float32")
    return float(f)


def nan_none(x):
    return None if math.isnan(x) else x
