"""conv2d through the package: a two-variable conv2d key tuned (12 trials),
looked up inside and beyond its boxes; running its kernels from Python is
refused with a clear error (its X is an NHWC image, not a matrix)."""
import pytest

import dtune
from dtune import DtuneError

KEY = "conv2d(N=1..2,H=6..10:4,W=8,C=8,K=16,R=3,S=3,stride=1,pad=1,epilogue=bias+relu)"


@pytest.fixture(scope="module")
def conv_db(cli, tmp_path_factory):
    db = tmp_path_factory.mktemp("conv") / "conv.db"
    summary = dtune.tune(KEY, db=db, trials=12, threads=1)
    assert summary["workloads_scheduled"] == 1, summary
    return db


def test_conv_lookup(conv_db):
    with dtune.open(conv_db) as db:
        s = db.lookup(KEY, N=2, H=10)
        assert s.kernel_id > 0 and not s.extrapolated
        assert s.backend.startswith("f32/")
        far = db.lookup(KEY, N=1, H=600)
        assert far.extrapolated and far.kernel_id > 0


def test_conv_kernel_refused(conv_db):
    with dtune.open(conv_db) as db:
        with pytest.raises(DtuneError) as e:
            db.kernel(KEY)
        assert "conv2d kernels are not run from Python yet" in str(e.value)
