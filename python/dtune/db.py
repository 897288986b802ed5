"""Identity calls, a database handle, lookups and kernel sources."""
import ctypes
import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Optional

from . import _lib
from ._lib import DtuneError, lib, check, text, opt_text, int_arg, path_arg, json_text


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
    a = text(annotation, "annotation") if isinstance(annotation, str) else \
        json_text(annotation, "annotation")
    buf = ctypes.create_string_buffer(_lib.DTUNE_NAME_MAX)
    check(lib().dtune_backend(w, a, buf, len(buf)))
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


_get_ident = threading.get_ident
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shape_text(shape, values):
    """A shape as libdtune's text: "M=37" from "M=37", {"M": 37} or M=37 keywords
    (a name must be an identifier, so that it cannot spell another shape)."""
    if shape is not None and values:
        raise DtuneError("give the shape either as shape= or as keywords, not both",
                         _lib.DTUNE_EINVAL)
    if isinstance(shape, str):
        text(shape, "shape")
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
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise DtuneError(f"variable name {name!r} is not an identifier", _lib.DTUNE_EINVAL)
        parts.append(f"{name}={int_arg(v, name, -2**63, 2**63 - 1)}")
    return ",".join(parts)


class Database:
    """A dtune database opened read-only through libdtune (``dtune.open(path)``).

    Any number of threads may call its methods at once (libdtune runs the
    lookups in parallel). ``close()`` may race them: it marks the database
    closed (calls that start after it raise DtuneError "... is closed"), waits
    for the calls already inside libdtune to return, then releases the handle,
    so no call ever touches a closed handle.
    """

    def __init__(self, path):
        # reentrant: close() from a signal handler that interrupted this thread
        # inside _enter or _leave must not deadlock on it
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._busy = 0           # calls inside libdtune with the handle
        self._threads = {}       # thread ident -> its calls among them
        self._closing = True     # until opened
        self._h = None
        p = path_arg(path, "path")
        self.path = os.fsdecode(p)
        h = ctypes.c_void_p()
        check(lib().dtune_open(p, ctypes.byref(h)))
        self._h, self._closing = h, False

    # Every use of the handle is _enter() ... finally _leave(): an in-flight
    # count under a lock held only to count, so that the C calls themselves
    # run concurrently; the last call to leave a closing database releases it.
    def _enter(self):
        with self._lock:
            if self._closing:
                raise DtuneError(f"database {self.path} is closed", _lib.DTUNE_EINVAL)
            self._busy += 1
            t, d = _get_ident(), self._threads
            d[t] = d.get(t, 0) + 1
            return self._h

    def _leave(self):
        with self._lock:
            self._busy -= 1
            t, d = _get_ident(), self._threads
            n = d[t] - 1
            if n:
                d[t] = n
            else:
                del d[t]
            if self._closing and not self._busy:
                self._release()

    def _release(self):
        """With the lock held and no call in flight: dtune_close, once."""
        h, self._h = self._h, None
        if h:
            lib().dtune_close(h)
        self._cond.notify_all()

    def close(self):
        """Releases the handle (idempotent, thread-safe): calls after it raise
        DtuneError; calls in flight on other threads finish first, and close
        returns once the handle is released. Called from inside a call of the
        same thread (a signal handler), it returns at once and the handle is
        released when that call ends."""
        cond = getattr(self, "_cond", None)
        if cond is None:  # __init__ failed before the handle existed
            return
        if self._lock._is_owned():
            # a signal handler interrupted this thread inside _enter or _leave:
            # the call in flight (or the next close) releases the handle
            self._closing = True
            return
        with cond:
            self._closing = True
            if not self._busy:
                self._release()
            elif threading.get_ident() not in self._threads:
                while self._h:
                    cond.wait()

    @property
    def closed(self):
        """True once close() was called (the handle may still be in use by calls
        in flight on the thread that called it)."""
        return self._closing

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
        return f"<dtune.Database {self.path!r}{' closed' if self.closed else ''}>"

    def set_refresh_ms(self, ms):
        """How often (ms) lookups check for schedules committed by another process."""
        ms = int_arg(ms, "ms", 0, 2**31 - 1)
        h = self._enter()
        try:
            lib().dtune_set_refresh_ms(h, ms)
        finally:
            self._leave()

    def lookup(self, key, shape=None, *, target=None, threads=0, **values):
        """The Schedule of workload ``key`` for one shape.

        ``db.lookup(key, M=37)``, ``db.lookup(key, "batch=2,seq=37")`` or
        ``db.lookup(key, shape={"batch": 2, "seq": 37})``; ``target`` a target
        key (None: this machine), ``threads`` the schedule's thread count (0:
        the highest tuned).
        """
        args = (text(key, "key"), text(shape_text(shape, values), "shape"),
                opt_text(target, "target"), int_arg(threads, "threads", 0, 65536))
        s = _lib.dtune_schedule()
        h = self._enter()
        try:
            check(lib().dtune_lookup(h, *args, ctypes.byref(s)))
        finally:
            self._leave()
        return Schedule._from_c(s)

    def kernel_source(self, kernel_id, workload=None):
        """The C source of kernel ``kernel_id`` (a Schedule's kernel_id)."""
        args = (int_arg(kernel_id, "kernel_id", 1, 2**63 - 1), opt_text(workload, "workload"))
        out = ctypes.c_void_p()
        h = self._enter()
        try:
            check(lib().dtune_kernel_source(h, *args, ctypes.byref(out)))
        finally:
            self._leave()
        try:
            return ctypes.string_at(out.value).decode("utf-8", "replace")
        finally:
            lib().dtune_free(out)

    def export(self, key, out_c_path, *, target=None, threads=0):
        """Writes NAME.c and NAME.h (docs/export.md) for the schedule of ``key``."""
        args = (text(key, "key"), opt_text(target, "target"), int_arg(threads, "threads", 0, 65536),
                path_arg(out_c_path, "out_c_path"))
        h = self._enter()
        try:
            check(lib().dtune_export(h, *args))
        finally:
            self._leave()

    def kernel(self, key, *, target=None, threads=0):
        """A callable Kernel running the dispatched kernels of ``key`` on NumPy arrays,
        built and loaded through libdtune (it opens its own handle on this database
        file: it outlives close())."""
        from .kernel import Kernel
        return Kernel._build(self, key, target, threads)


def open(path):  # noqa: A001 - the package's entry point, as dtune_open
    """Opens a dtune database read-only; use as a context manager or close()."""
    return Database(path)
