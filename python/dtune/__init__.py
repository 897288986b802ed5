"""Python bindings of dtune: schedules through libdtune (ctypes), exported kernels on
NumPy arrays, tuning through the dtune CLI, and the daemon's HTTP API.

    import dtune
    with dtune.open("dtune.db") as db:
        s = db.lookup("dense(M=1..128,N=768,K=768)", M=37)
        k = db.kernel("dense(M=1..128,N=768,K=768)")
        k.pack(W)
        Y = k(X)

docs/python.md in the repository is the guide.
"""
from ._lib import DtuneError, LibraryNotFound
from .db import Database, Schedule, backend, canonicalize, machine_key, open, version
from .kernel import Kernel, from_bf16, to_bf16
from .tune import tune
from .daemon import DaemonClient

__all__ = ["DtuneError", "LibraryNotFound", "Database", "Schedule", "Kernel", "DaemonClient",
           "open", "version", "canonicalize", "machine_key", "backend", "tune", "to_bf16", "from_bf16"]
__version__ = "0.1.0"
