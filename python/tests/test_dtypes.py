"""The other dtypes and ops: one small model of int8, bf16 and w8a32 dense and
f32 NT / bf16 NN batch_matmul over two variables, tuned once (40 trials)."""
import json

import numpy as np
import pytest

import dtune

MODEL = {
    "name": "pymix", "variables": {"b": {"values": [1, 2]}, "s": {"range": [1, 4]}},
    "ops": [
        {"name": "q8", "op": "dense", "M": "b*s", "N": 40, "K": 24, "epilogue": "bias+relu",
         "dtype": "int8"},
        {"name": "bf", "op": "dense", "M": "b*s", "N": 40, "K": 24, "epilogue": "bias",
         "dtype": "bf16"},
        {"name": "w8", "op": "dense", "M": "b*s", "N": 48, "K": 45, "dtype": "w8a32"},
        {"name": "nt", "op": "batch_matmul", "B": "2*b", "M": "s", "N": "s", "K": 16,
         "layout": "NT"},
        {"name": "nn", "op": "batch_matmul", "B": "b", "M": "s", "N": 24, "K": "s",
         "layout": "NN", "dtype": "bf16"},
    ]}
SHAPES = [(1, 1), (1, 4), (2, 3), (3, 5)]  # (b, s); (3, 5) is extrapolated


@pytest.fixture(scope="module")
def mix(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("mix")
    spec = d / "mix.json"
    spec.write_text(json.dumps(MODEL))
    summary = dtune.tune(spec, db=d / "mix.db", trials=40, threads=1)
    keys = {w["name"]: w["workload"] for w in summary["workloads"]}
    assert len(keys) == 5 and summary["workloads_scheduled"] == 5, summary
    with dtune.open(d / "mix.db") as db:
        yield db, keys


def close(got, want, tol=2e-3):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_int8_dense(mix):
    db, keys = mix
    k = db.kernel(keys["q8"])
    assert k.dtype == "int8" and k.variables == ("b", "s")
    rng = np.random.default_rng(4)
    W = rng.integers(-128, 128, (40, 24), dtype=np.int8)
    sb = rng.uniform(0.01, 0.1, 40).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    with pytest.raises(dtune.DtuneError, match="scale_b"):
        k.pack(W)
    with pytest.raises(dtune.DtuneError, match=r"scale_b\[3\]"):
        k.pack(W, np.where(np.arange(40) == 3, np.nan, sb).astype(np.float32))
    with pytest.raises(dtune.DtuneError, match="int8"):
        k.pack(W.astype(np.int16), sb)
    k.pack(W, sb)
    for b, s in SHAPES:
        X = rng.integers(0, 256, (b * s, 24), dtype=np.uint8)
        Y = k(X, bias, scale_a=0.05, zp_a=7, b=b, s=s)
        ref = 0.05 * sb * ((X.astype(np.int64) - 7) @ W.T.astype(np.int64)) + bias
        close(Y, np.maximum(ref, 0))
    with pytest.raises(dtune.DtuneError, match="scale_a"):
        k(X, bias, b=b, s=s)
    with pytest.raises(dtune.DtuneError, match="zp_a"):
        k(X, bias, scale_a=1.0, zp_a=2 ** 31, b=b, s=s)
    with pytest.raises(dtune.DtuneError, match="pass b=..., s=..."):
        k(X, bias, scale_a=1.0)
    with pytest.raises(dtune.DtuneError, match="M = b\\*s"):
        k(X, bias, scale_a=1.0, b=2, s=2)


def test_bf16_dense(mix):
    db, keys = mix
    k = db.kernel(keys["bf"])
    rng = np.random.default_rng(5)
    W = dtune.to_bf16(rng.standard_normal((40, 24)))
    bias = rng.standard_normal(40).astype(np.float32)
    with pytest.raises(dtune.DtuneError, match="to_bf16"):
        k.pack(rng.standard_normal((40, 24)).astype(np.float32))
    k.pack(W)
    for b, s in SHAPES:
        X = dtune.to_bf16(rng.standard_normal((b * s, 24)))
        ref = dtune.from_bf16(X).astype(np.float64) @ dtune.from_bf16(W).T + bias
        close(k(X, bias=bias, b=b, s=s), ref)


def test_w8a32_dense(mix):
    db, keys = mix
    k = db.kernel(keys["w8"])
    rng = np.random.default_rng(6)
    W = rng.integers(-128, 128, (48, 45), dtype=np.int8)
    sb = rng.uniform(0.01, 0.1, 48).astype(np.float32)
    k.pack(W, scale_b=sb)
    for b, s in SHAPES:
        X = rng.standard_normal((b * s, 45)).astype(np.float32)
        close(k(X, b=b, s=s), sb * (X.astype(np.float64) @ W.T.astype(np.float64)))
    with pytest.raises(dtune.DtuneError, match="bias"):
        k(X, np.zeros(48, np.float32), b=b, s=s)


def test_batch_matmul_nt_f32(mix):
    db, keys = mix
    k = db.kernel(keys["nt"])
    assert k.op == "batch_matmul" and k.dims["B"] == "2*b"
    rng = np.random.default_rng(7)
    with pytest.raises(dtune.DtuneError, match="pack"):
        k.pack(np.zeros((2, 2), np.float32))
    for b, s in SHAPES:
        A = rng.standard_normal((2 * b, s, 16)).astype(np.float32)
        B = rng.standard_normal((2 * b, s, 16)).astype(np.float32)
        close(k(A, B, b=b), A @ B.transpose(0, 2, 1), 1e-4)  # s from M, b given
    with pytest.raises(dtune.DtuneError, match="N="):
        k(A, B[:, :-1], b=b)
    with pytest.raises(dtune.DtuneError, match="takes A, B"):
        k(A, b=b)


def test_batch_matmul_nn_bf16(mix):
    db, keys = mix
    k = db.kernel(keys["nn"])
    assert k.variables == ("B", "s")  # B is a variable named like a tensor (B_var in C)
    rng = np.random.default_rng(8)
    for b, s in SHAPES:
        A = dtune.to_bf16(rng.standard_normal((b, s, s)))
        B = dtune.to_bf16(rng.standard_normal((b, s, 24)))
        close(k(A, B), dtune.from_bf16(A).astype(np.float64) @ dtune.from_bf16(B))


def test_int8_quantization_args_checked(mix):
    """Issue 42 (2): int8's zero point is X's u8 (0..255) although the C argument
    is an int32_t, and scale_a a finite float32: anything else is refused, not
    computed with (zp_a = 2**24 used to give a silently wrong Y)."""
    db, keys = mix
    k = db.kernel(keys["q8"])
    rng = np.random.default_rng(9)
    W = rng.integers(-128, 128, (40, 24), dtype=np.int8)
    sb = rng.uniform(0.01, 0.1, 40).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    k.pack(W, sb)
    X = rng.integers(0, 256, (2, 24), dtype=np.uint8)

    def ref(zp, sa=0.05):
        r = sa * sb * ((X.astype(np.int64) - zp) @ W.T.astype(np.int64)) + bias
        return np.maximum(r, 0)

    for zp in (2 ** 24, 256, -1, -2 ** 31, 2 ** 31 - 1, 2 ** 40):
        with pytest.raises(dtune.DtuneError, match=r"zp_a.*0 to 255") as e:
            k(X, bias, scale_a=0.05, zp_a=zp, b=1, s=2)
        assert e.value.code == -1
    for zp in (True, np.True_, 7.0, np.float32(7), "7", [7], np.array([7, 8])):
        with pytest.raises(dtune.DtuneError, match="zp_a"):
            k(X, bias, scale_a=0.05, zp_a=zp, b=1, s=2)
    for sa in (True, np.False_, "0.05", b"1", 1 + 2j, np.complex64(1), 1e39, -1e39, 10 ** 400,
               float("nan"), float("inf"), [0.05], np.array([0.05, 0.1]), object()):
        with pytest.raises(dtune.DtuneError, match="scale_a"):
            k(X, bias, scale_a=sa, zp_a=0, b=1, s=2)
    # the limits themselves, and NumPy scalars, run and are right
    for zp in (0, 255, np.uint8(255), np.int64(128)):
        close(k(X, bias, scale_a=0.05, zp_a=zp, b=1, s=2), ref(int(zp)))
    for sa in (np.float32(0.05), np.float64(0.05), np.array(0.05), 1):
        close(k(X, bias, scale_a=sa, b=1, s=2), ref(0, float(sa)))


def test_quantization_args_refused_where_there_are_none(mix):
    """A kernel without activation quantization (w8a32, bf16, f32) takes no
    scale_a or zp_a; w8a32's only quantization parameter, scale_b, goes through
    the pack's check (a float64 beyond float32 is infinite there)."""
    db, keys = mix
    k = db.kernel(keys["w8"])
    W = np.ones((48, 45), np.int8)
    with pytest.raises(dtune.DtuneError, match=r"scale_b\[2\]"):
        k.pack(W, np.where(np.arange(48) == 2, 1e300, 0.5))
    with pytest.raises(dtune.DtuneError, match="scale_b"):
        k.pack(W, np.ones(48, bool))
    k.pack(W, np.full(48, 0.5))
    X = np.ones((3, 45), np.float32)
    close(k(X, b=1, s=3), np.full((3, 48), 22.5))
    close(k(X, zp_a=0, b=1, s=3), np.full((3, 48), 22.5))
    for kw in ({"scale_a": 1.0}, {"zp_a": 3}, {"zp_a": 2 ** 24}):
        with pytest.raises(dtune.DtuneError, match="scale_a or zp_a|0 to 255"):
            k(X, b=1, s=3, **kw)
