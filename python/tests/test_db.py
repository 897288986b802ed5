"""Lookups and kernel sources on a tuned database."""
import pytest

import dtune
from dtune import _lib


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
