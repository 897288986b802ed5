"""The ctypes binding of libdtune (include/dtune/dtune.h) and the package's error type.

The library is found lazily, on the first call that needs it, so that
``import dtune`` works without it (the daemon client and ``dtune.tune`` need
only HTTP and the CLI).
"""
import ctypes
import ctypes.util
import math
import os
import threading
from pathlib import Path

# include/dtune/dtune.h's sizes and codes, copied (tests/test_lib.py checks
# them and the struct's layout against the header with the C compiler).
DTUNE_KEY_MAX = 1024
DTUNE_TARGET_MAX = 128
DTUNE_SHAPE_MAX = 128
DTUNE_NAME_MAX = 64
DTUNE_ANNOTATION_MAX = 1024

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


def text(s, what):
    """s as a C string argument: str, checked for NUL bytes."""
    if not isinstance(s, str):
        raise DtuneError(f"{what} must be a str, not {type(s).__name__}", DTUNE_EINVAL)
    if "\0" in s:
        raise DtuneError(f"{what} contains a NUL character", DTUNE_EINVAL)
    return s.encode("utf-8")


def opt_text(s, what):
    return None if s is None else text(s, what)


def check(rc):
    """Raises DtuneError with dtune_errmsg() when rc is not DTUNE_OK."""
    if rc != DTUNE_OK:
        L = lib()
        msg = (L.dtune_errmsg() or b"").decode("utf-8", "replace")
        name = (L.dtune_errstr(rc) or b"").decode("utf-8", "replace")
        raise DtuneError(msg or name or f"libdtune error {rc}", rc)


def int_arg(v, what, lo, hi):
    """v as a Python int in lo..hi (bools and floats refused)."""
    if isinstance(v, bool) or isinstance(v, float):
        raise DtuneError(f"{what} must be an integer, not {v!r}", DTUNE_EINVAL)
    try:
        i = v.__index__()
    except (AttributeError, TypeError):
        raise DtuneError(f"{what} must be an integer, not {type(v).__name__}",
                         DTUNE_EINVAL) from None
    if not lo <= i <= hi:
        raise DtuneError(f"{what} must be from {lo} to {hi}, not {i}", DTUNE_EINVAL)
    return i


def nan_none(x):
    return None if math.isnan(x) else x
