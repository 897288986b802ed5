"""dtune.tune: the CLI as a subprocess, with progress."""
import numpy as np
import pytest

import dtune
from conftest import SMALL


def test_tune_reported_progress(tuned):
    assert tuned.lines, "the progress callback got no line"
    assert any("round" in ln for ln in tuned.lines)
    assert tuned.summary["workloads_scheduled"] == 1
    assert tuned.summary["workloads"][0]["workload"] == dtune.canonicalize(tuned.key)


def test_tune_then_run(cli, tmp_path):
    got = []
    s = dtune.tune(SMALL, db=str(tmp_path / "small.db"), trials=8, threads=1,
                   progress=got.append)
    assert got and s["trials_total"] >= 8
    with dtune.open(tmp_path / "small.db") as db:
        k = db.kernel(SMALL)
    W = np.random.default_rng(2).standard_normal((16, 16)).astype(np.float32)
    X = np.random.default_rng(3).standard_normal((7, 16)).astype(np.float32)
    np.testing.assert_allclose(k.pack(W)(X), X @ W.T, rtol=1e-4, atol=1e-5)


def test_tune_failure_has_cli_message(cli, tmp_path):
    with pytest.raises(dtune.DtuneError) as e:
        dtune.tune("dense(M=1..8", db=tmp_path / "bad.db", trials=4)
    assert e.value.code == 2 and "dense(M=1..8" in str(e.value)


def test_progress_callback_exception_stops_tune(cli, tmp_path):
    def stop(line):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        dtune.tune(SMALL, db=tmp_path / "stop.db", trials=50, threads=1, progress=stop)
