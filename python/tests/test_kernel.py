"""The exported kernels run on NumPy arrays."""
import numpy as np
import pytest

import dtune


@pytest.fixture
def kernel(db, tuned):
    return db.kernel(tuned.key)


def test_dense_matches_numpy(kernel, cache_dir):
    rng = np.random.default_rng(1)
    W = rng.standard_normal((32, 32)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    kernel.pack(W)
    assert kernel.variables == ("M",) and kernel.threads == 1
    # built by libdtune into dtune's own kernel cache, under the builder's name
    assert kernel.library_path.parent == cache_dir and kernel.library_path.suffix == ".so"
    assert len(kernel.library_path.stem) == 64  # hex BLAKE2b-256
    for M in range(1, 13):
        X = rng.standard_normal((M, 32)).astype(np.float32)
        Y = kernel(X, bias)
        assert Y.shape == (M, 32) and Y.dtype == np.float32
        np.testing.assert_allclose(Y, X @ W.T + bias, rtol=1e-4, atol=1e-4)
    # float64 input is converted; a non-contiguous view is copied; out= is filled
    X = rng.standard_normal((12, 64))[:, ::2]
    out = np.empty((12, 32), np.float32)
    assert kernel(X, bias=bias, out=out) is out
    np.testing.assert_allclose(out, X.astype(np.float32) @ W.T + bias, rtol=1e-4, atol=1e-4)


def test_kernel_is_cached(db, tuned, kernel):
    again = db.kernel(tuned.key)
    assert again.library_path == kernel.library_path
    assert again.kernels_built == 0  # loaded from the kernel cache, not compiled again


def test_bad_arguments(kernel):
    W = np.ones((32, 32), np.float32)
    bias = np.zeros(32, np.float32)
    X = np.ones((4, 32), np.float32)
    with pytest.raises(dtune.DtuneError, match="pack"):
        kernel(X, bias)                                   # not packed yet
    with pytest.raises(dtune.DtuneError, match="shape"):
        kernel.pack(np.ones((32, 31), np.float32))
    kernel.pack(W)
    cases = [
        ((np.ones((4, 31), np.float32), bias), {}, "K=31"),
        ((np.ones(32, np.float32), bias), {}, "2 dimensions"),
        ((np.ones((0, 32), np.float32), bias), {}, ">= 1"),
        ((np.ones((4, 32), np.int8), bias), {}, "float32"),
        ((X, np.zeros(31, np.float32)), {}, "N=31"),
        ((X,), {}, "bias"),
        ((X, bias), {"M": 5}, "M=4"),
        ((X, bias), {"batch": 2}, "unknown argument"),
        ((X, bias), {"scale_a": 1.0}, "scale_a"),
        ((X, bias), {"out": np.empty((4, 32), np.float64)}, "out"),
        ((X, bias, bias), {}, "takes"),
        (("hello", bias), {}, "X"),
    ]
    for args, kw, msg in cases:
        with pytest.raises(dtune.DtuneError, match=msg):
            kernel(*args, **kw)
    # still works after all that
    np.testing.assert_allclose(kernel(X, bias), X @ W.T + bias, rtol=1e-4)


def test_kernel_of_untuned_workload(db):
    with pytest.raises(dtune.DtuneError) as e:
        db.kernel("dense(M=1..8,N=64,K=32)")
    assert e.value.code == dtune._lib.DTUNE_ENOTFOUND
