"""Lookups and kernel sources on a tuned database; closing it under threads."""
import json
import os
import subprocess
import sys
import threading

import pytest

import dtune
from dtune import _lib
from conftest import REPO


def test_lookup(db, tuned):
    s = db.lookup(tuned.key, M=3)
    assert isinstance(s, dtune.Schedule)
    assert s.kernel_id >= 1 and s.op == "dense" and s.sketch
    assert s.workload == dtune.canonicalize(tuned.key)
    assert s.target == dtune.machine_key() and s.threads == 1
    assert s.shape == "M=3" and not s.extrapolated
    lo, hi = (int(c.split("=")[1]) for c in s.range)
    assert 1 <= lo <= 3 <= hi <= 8
    assert isinstance(s.annotation, dict) and s.annotation["sketch"] == s.sketch
    assert s.measured_ns is None or s.measured_ns > 0
    assert s.predicted_ns is None or s.predicted_ns > 0
    assert s.backend and s.backend.startswith("f32/")  # f32/avx512, f32/avx2, f32/generic
    assert dtune.backend(s.workload, s.annotation) == s.backend
    # the other spellings of the shape
    assert db.lookup(tuned.key, "M=3") == s
    assert db.lookup(tuned.key, shape={"M": 3}) == s
    assert db.lookup(tuned.key, M=3, threads=1) == s


def test_backend_names(tuned):
    ann = {"sketch": "blocked", "isa": "avx512", "mr": 16, "nr": 32, "kc": 256, "mc": 128,
           "nc": 768, "unroll": 1, "prefetch": 0, "store": "mask", "order": "m_inner",
           "par": "n", "threads": 1, "unit": "amx"}
    assert dtune.backend("dense(M=1..8,N=32,K=32,dtype=bf16)", ann) == "bf16/amx"
    with pytest.raises(dtune.DtuneError, match="no back-end"):
        dtune.backend(tuned.key, ann)  # f32 has no tile row
    with pytest.raises(dtune.DtuneError):
        dtune.backend(tuned.key, "{not json")


def test_lookup_extrapolated(db, tuned):
    s = db.lookup(tuned.key, M=100)
    assert s.extrapolated and s.shape == "M=100"
    assert s.range[1] == "M=8"  # the range of the nearest tuned shape


def test_kernel_source(db, tuned):
    s = db.lookup(tuned.key, M=5)
    src = db.kernel_source(s.kernel_id)
    assert src and "dtk_dense" in src
    assert db.kernel_source(s.kernel_id, tuned.key) == src


def test_lookup_errors(db, tuned):
    with pytest.raises(dtune.DtuneError) as e:
        db.lookup("dense(M=1..8,N=32", M=3)
    assert e.value.code == _lib.DTUNE_EINVAL and "dense(M=1..8,N=32" in str(e.value)
    with pytest.raises(dtune.DtuneError) as e:
        db.lookup("dense(M=1..8,N=64,K=32)", M=3)
    assert e.value.code == _lib.DTUNE_ENOTFOUND and "never been tuned" in str(e.value)
    with pytest.raises(dtune.DtuneError) as e:
        db.lookup(tuned.key, N=3)
    assert "not a variable" in str(e.value)
    for bad in (lambda: db.lookup(tuned.key),                       # no shape
                lambda: db.lookup(tuned.key, M=3.5),                # not an integer
                lambda: db.lookup(tuned.key, "M=3", M=3),           # both
                lambda: db.lookup(tuned.key, M=3, threads=-1),
                lambda: db.lookup(tuned.key, M=3, threads=1 << 20),
                lambda: db.lookup(tuned.key, M=3, target="nosuch-target"),
                lambda: db.kernel_source(0),
                lambda: db.kernel_source(10 ** 12)):
        with pytest.raises(dtune.DtuneError):
            bad()


def test_closed_database(tuned):
    d = dtune.open(tuned.db)
    d.close()
    d.close()
    with pytest.raises(dtune.DtuneError, match="closed"):
        d.lookup(tuned.key, M=3)


def test_closed_database_every_method(tuned, tmp_path):
    d = dtune.open(tuned.db)
    s = d.lookup(tuned.key, M=3)
    d.close()
    assert d.closed and "closed" in repr(d)
    for call in (lambda: d.lookup(tuned.key, M=3), lambda: d.kernel_source(s.kernel_id),
                 lambda: d.export(tuned.key, tmp_path / "x.c"), lambda: d.set_refresh_ms(5),
                 lambda: d.kernel(tuned.key)):
        with pytest.raises(dtune.DtuneError, match="is closed") as e:
            call()
        assert e.value.code == _lib.DTUNE_EINVAL


# Issue 42 (1): threads looping over the handle's calls while another thread
# closes it. In a child process, so that a use after free that crashes fails
# this test instead of killing the session.
RACE = r"""
import faulthandler, json, random, sys, threading, time
import dtune
faulthandler.dump_traceback_later(30, exit=True)  # a call stuck on a freed lock: fail, not hang
db_path, key, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {"ok": 0, "closed": 0, "bad": [], "reps": 0}
lock = threading.Lock()
for rep in range(reps):
    db = dtune.open(db_path)
    ref = db.lookup(key, M=3)
    go = threading.Barrier(5)
    def worker(i):
        go.wait()
        for n in range(200000):
            try:
                if i == 3 and n % 4 == 1:
                    assert db.kernel_source(ref.kernel_id)
                elif i == 3 and n % 4 == 2:
                    db.set_refresh_ms(100)
                else:
                    s = db.lookup(key, M=3)
                    if s != ref:
                        raise AssertionError(f"lookup gave {s}")
                with lock:
                    out["ok"] += 1
            except dtune.DtuneError as e:
                with lock:
                    if "is closed" in str(e) and e.code == -1:
                        out["closed"] += 1
                    else:
                        out["bad"].append(repr(e)[:200])
                return
            except Exception as e:
                with lock:
                    out["bad"].append(repr(e)[:200])
                return
        with lock:
            out["bad"].append("a thread never saw the database closed")
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    go.wait()
    time.sleep(random.uniform(0, 0.002))
    if rep % 2:
        db.close()
    else:
        db.__exit__(None, None, None)
    for t in ts:
        t.join()
    out["reps"] += 1
print(json.dumps(out))
"""


def test_close_races_lookups(tuned):
    """Four threads loop lookups (and kernel_source, set_refresh_ms) while the
    main thread closes the database, 150 times: every call that loses the race
    raises DtuneError "... is closed", every other one gives the right
    schedule, and the process neither crashes nor reads freed memory (run
    with libdtune built with -DDTUNE_SANITIZE=ON and LD_PRELOAD=libasan.so,
    ASan reports any use after free as a crash of the child)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    r = subprocess.run([sys.executable, "-c", RACE, str(tuned.db), tuned.key, "150"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["bad"] == [] and out["reps"] == 150
    assert out["closed"] == 4 * 150 and out["ok"] > 0, out


def test_close_waits_for_calls_in_flight(tuned):
    d = dtune.open(tuned.db)
    h = d._enter()  # a call in flight on this thread, as inside dtune_lookup
    closer = threading.Thread(target=d.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive() and d._h is not None  # waiting: the handle is still in use
    with pytest.raises(dtune.DtuneError, match="is closed"):
        d.lookup(tuned.key, M=3)   # new calls are refused at once
    d._leave()
    closer.join(10)
    assert not closer.is_alive() and d._h is None and h


def test_close_inside_a_call_defers_release(tuned):
    """close() from inside a call of the same thread (a signal handler) cannot
    wait for that call: it returns, and the call's end releases the handle."""
    d = dtune.open(tuned.db)
    d._enter()
    d.close()
    assert d.closed and d._h is not None
    with pytest.raises(dtune.DtuneError, match="is closed"):
        d.lookup(tuned.key, M=3)
    d._leave()
    assert d._h is None
    d.close()
    # ... and one that interrupts _enter or _leave (their lock held by this thread)
    d = dtune.open(tuned.db)
    with d._lock:
        d.close()  # would deadlock on a plain lock
    assert d.closed and d._h is not None
    with pytest.raises(dtune.DtuneError, match="is closed"):
        d.lookup(tuned.key, M=3)
    d.close()
    assert d._h is None


SIGNAL = r"""
import faulthandler, json, random, signal, sys
import dtune
faulthandler.dump_traceback_later(30, exit=True)
db_path, key, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {"ok": 0, "closed": 0, "bad": []}
for rep in range(reps):
    db = dtune.open(db_path)
    signal.signal(signal.SIGALRM, lambda *a: db.close())
    signal.setitimer(signal.ITIMER_REAL, random.uniform(0.0001, 0.002))
    try:
        while True:
            db.lookup(key, M=3)
            out["ok"] += 1
    except dtune.DtuneError as e:
        if "is closed" in str(e):
            out["closed"] += 1
        else:
            out["bad"].append(repr(e)[:200])
    db.close()
    if db._h is not None:
        out["bad"].append("the handle was not released")
print(json.dumps(out))
"""


def test_close_from_a_signal_handler(tuned):
    """A SIGALRM handler closes the database while the main thread loops lookups
    (so close() runs inside one of them): it neither deadlocks nor leaks the handle."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    r = subprocess.run([sys.executable, "-c", SIGNAL, str(tuned.db), tuned.key, "200"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["bad"] == [] and out["closed"] == 200, out
