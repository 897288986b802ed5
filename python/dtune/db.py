"""Identity calls, a database handle, lookups and kernel sources."""
import ctypes
import json
import os
from dataclasses import dataclass, field
from typing import Optional

from . import _lib
from ._lib import DtuneError, lib, check, text, opt_text, int_arg


def version():
    """libdtune's version, e.g. "0.1.0"."""
    return lib().dtune_version().decode()


def canonicalize(key):
    """The canonical form of a workload key (docs/workload-keys.md); DtuneError if malformed."""
    k = text(key, "key")
    buf = ctypes.create_string_buffer(_lib.DTUNE_KEY_MAX + 1)
    check(lib().dtune_canonicalize(k, buf, len(buf)))
    return buf.value.decode()


def machine_key():
    """This machine's target key (honours DTUNE_TARGET_ISA / DTUNE_TARGET_CORES)."""
    buf = ctypes.create_string_buffer(_lib.DTUNE_TARGET_MAX)
    check(lib().dtune_machine_key(buf, len(buf)))
    return buf.value.decode()


def backend(workload, annotation):
    """The back-end a kernel runs on, e.g. "bf16/amx", from the workload key it
    serves and its annotation (a dict or JSON text), as a lookup gives them."""
    w = text(workload, "workload")
    a = annotation if isinstance(annotation, str) else json.dumps(annotation)
    buf = ctypes.create_string_buffer(_lib.DTUNE_NAME_MAX)
    check(lib().dtune_backend(w, text(a, "annotation"), buf, len(buf)))
    return buf.value.decode()


@dataclass
class Schedule:
    """The micro-kernel a tuned schedule dispatches for one shape, with the
    back-end it runs on (``backend``, e.g. "f32/avx512", from dtune_backend)."""
    kernel_id: int
    op: str
    sketch: str
    annotation: dict
    predicted_ns: Optional[float]   # None when unknown
    measured_ns: Optional[float]    # None when unknown
    extrapolated: bool              # the shape is outside the tuned shape set
    threads: int
    shape: str                      # canonical, e.g. "M=37"
    range: tuple                    # the tuned range's two corners, e.g. ("M=33", "M=40")
    workload: str                   # canonical key
    target: str
    source: Optional[str] = field(default=None, repr=False)  # daemon: the source's URL path
    backend: Optional[str] = None   # "bf16/amx", "f32/avx512", ...

    @classmethod
    def _from_c(cls, s):
        dec = lambda b: b.decode("utf-8", "replace")
        ann = dec(s.annotation)
        try:
            be = backend(dec(s.workload), ann)
        except DtuneError:
            be = None
        try:
            ann = json.loads(ann) if ann else {}
        except ValueError:
            ann = {"_raw": ann}
        return cls(backend=be, kernel_id=s.kernel_id, op=dec(s.op), sketch=dec(s.sketch), annotation=ann,
                   predicted_ns=_lib.nan_none(s.predicted_ns),
                   measured_ns=_lib.nan_none(s.measured_ns),
                   extrapolated=bool(s.extrapolated), threads=s.threads, shape=dec(s.shape),
                   range=(dec(s.range_lo), dec(s.range_hi)), workload=dec(s.workload),
                   target=dec(s.target))


def shape_text(shape, values):
    """A shape as libdtune's text: "M=37" from "M=37", {"M": 37} or M=37 keywords."""
    if shape is not None and values:
        raise DtuneError("give the shape either as shape= or as keywords, not both",
                         _lib.DTUNE_EINVAL)
    if isinstance(shape, str):
        return shape
    items = shape if shape is not None else values
    if not isinstance(items, dict):
        raise DtuneError(f"shape must be a str or a dict, not {type(items).__name__}",
                         _lib.DTUNE_EINVAL)
    if not items:
        raise DtuneError("no shape given: pass e.g. M=37, \"M=37\" or shape={\"M\": 37}",
                         _lib.DTUNE_EINVAL)
    parts = []
    for name, v in items.items():
        if not isinstance(name, str):
            raise DtuneError(f"variable name {name!r} is not a str", _lib.DTUNE_EINVAL)
        parts.append(f"{name}={int_arg(v, name, -2**63, 2**63 - 1)}")
    return ",".join(parts)


class Database:
    """A dtune database opened read-only through libdtune (``dtune.open(path)``)."""

    def __init__(self, path):
        p = text(os.fspath(path), "path")
        h = ctypes.c_void_p()
        check(lib().dtune_open(p, ctypes.byref(h)))
        self._h = h
        self.path = os.fspath(path)

    def _handle(self):
        if not self._h:
            raise DtuneError(f"database {self.path} is closed", _lib.DTUNE_EINVAL)
        return self._h

    def close(self):
        """Releases the handle (idempotent)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            lib().dtune_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<dtune.Database {self.path!r}{'' if self._h else ' closed'}>"

    def set_refresh_ms(self, ms):
        """How often (ms) lookups check for schedules committed by another process."""
        lib().dtune_set_refresh_ms(self._handle(), int_arg(ms, "ms", 0, 2**31 - 1))

    def lookup(self, key, shape=None, *, target=None, threads=0, **values):
        """The Schedule of workload ``key`` for one shape.

        ``db.lookup(key, M=37)``, ``db.lookup(key, "batch=2,seq=37")`` or
        ``db.lookup(key, shape={"batch": 2, "seq": 37})``; ``target`` a target
        key (None: this machine), ``threads`` the schedule's thread count (0:
        the highest tuned).
        """
        s = _lib.dtune_schedule()
        check(lib().dtune_lookup(self._handle(), text(key, "key"),
                                 text(shape_text(shape, values), "shape"),
                                 opt_text(target, "target"),
                                 int_arg(threads, "threads", 0, 65536), ctypes.byref(s)))
        return Schedule._from_c(s)

    def kernel_source(self, kernel_id, workload=None):
        """The C source of kernel ``kernel_id`` (a Schedule's kernel_id)."""
        out = ctypes.c_void_p()
        check(lib().dtune_kernel_source(self._handle(), int_arg(kernel_id, "kernel_id", 1, 2**63 - 1),
                                        opt_text(workload, "workload"), ctypes.byref(out)))
        try:
            return ctypes.string_at(out.value).decode("utf-8", "replace")
        finally:
            lib().dtune_free(out)

    def export(self, key, out_c_path, *, target=None, threads=0):
        """Writes NAME.c and NAME.h (docs/export.md) for the schedule of ``key``."""
        check(lib().dtune_export(self._handle(), text(key, "key"), opt_text(target, "target"),
                                 int_arg(threads, "threads", 0, 65536),
                                 text(os.fspath(out_c_path), "out_c_path")))

    def kernel(self, key, *, target=None, threads=0):
        """A callable Kernel running the dispatched kernels of ``key`` on NumPy arrays."""
        from .kernel import Kernel
        return Kernel._build(self, key, target, threads)


def open(path):  # noqa: A001 - the package's entry point, as dtune_open
    """Opens a dtune database read-only; use as a context manager or close()."""
    return Database(path)
