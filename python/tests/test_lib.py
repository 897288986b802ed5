"""The binding itself: identity calls, the struct's layout, errors of arguments."""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import dtune
from dtune import _lib
from conftest import REPO


def test_version_and_identity(lib):
    assert dtune.version()
    assert dtune.canonicalize("dense( M=1..8, N=32,K=32 )") == "dense(M=1..8,N=32,K=32)"
    key = dtune.machine_key()
    assert key and "-" in key


def test_bad_key_has_libdtune_message(lib):
    with pytest.raises(dtune.DtuneError) as e:
        dtune.canonicalize("dense(M=1..8")
    assert e.value.code == _lib.DTUNE_EINVAL
    assert "dense(M=1..8" in str(e.value) and "expected" in str(e.value)
    # the message is libdtune's own: the same text dtune_errmsg() gives right after
    assert str(e.value) == _lib.lib().dtune_errmsg().decode()


def test_bad_arguments_raise(lib):
    for bad in (lambda: dtune.canonicalize(None), lambda: dtune.canonicalize("dense\0(M=1)"),
                lambda: dtune.canonicalize(b"dense(M=1..8,N=32,K=32)"),
                lambda: dtune.canonicalize("")):
        with pytest.raises(dtune.DtuneError):
            bad()


def test_open_missing_file(lib, tmp_path):
    with pytest.raises(dtune.DtuneError) as e:
        dtune.open(tmp_path / "nope.db")
    assert e.value.code == _lib.DTUNE_ENOTFOUND and "nope.db" in str(e.value)


def test_not_a_database(lib, tmp_path):
    p = tmp_path / "x.db"
    p.write_text("not sqlite\n" * 100)
    with pytest.raises(dtune.DtuneError) as e:
        dtune.open(p)
    assert e.value.code < 0 and str(e.value)


@pytest.mark.parametrize("name", ["dtune_schedule", "dtune_kernel_info", "dtune_kernel_args"])
def test_struct_matches_header(lib, tmp_path, name):
    """sizeof and every offsetof of each struct the package mirrors, from the C
    compiler and dtune.h."""
    cc = shutil.which("cc")
    header = REPO / "include" / "dtune" / "dtune.h"
    if not cc or not header.exists():
        pytest.skip("no cc or no include/dtune/dtune.h to compare the struct with")
    struct = getattr(_lib, name)
    fields = [f for f, _ in struct._fields_]
    src = tmp_path / "layout.c"
    src.write_text('#include <stdio.h>\n#include <stddef.h>\n#include "dtune/dtune.h"\n'
                   "int main(void) {\n"
                   f'  printf("%zu\\n", sizeof({name}));\n'
                   + "".join(f'  printf("%zu\\n", offsetof({name}, {f}));\n'
                             for f in fields)
                   + "  return 0;\n}\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-I", str(REPO / "include"), str(src), "-o", str(exe)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    want = [ctypes.sizeof(struct)] + [getattr(struct, f).offset for f in fields]
    assert got == want


def test_bf16_helpers():
    x = np.array([1.0, -2.5, 3.14159, 1e-3, np.inf], dtype=np.float32)
    b = dtune.to_bf16(x)
    assert b.dtype == np.uint16
    assert np.allclose(dtune.from_bf16(b), x, rtol=1 / 128)
    assert dtune.from_bf16(dtune.to_bf16([np.nan]))[0] != dtune.from_bf16(dtune.to_bf16([np.nan]))[0]


LONE = "\ud800"  # a lone surrogate: a str that has no UTF-8 encoding


def _refused(call, *names):
    """call() raises DtuneError (code -1) whose message names every one of names."""
    with pytest.raises(dtune.DtuneError) as e:
        call()
    assert e.value.code == _lib.DTUNE_EINVAL, e.value
    for n in names:
        assert n in str(e.value), (n, str(e.value))
    return e.value


def test_unencodable_str_arguments_refused(lib, tuned, tmp_path):
    """Issue 42 (9): every str argument that cannot be encoded is a DtuneError
    naming the argument, never a UnicodeEncodeError (or a TypeError, ValueError)."""
    key = "dense(M=1..8,N=16,K=16)"
    _refused(lambda: dtune.canonicalize(key + LONE), "key", "UTF-8")
    _refused(lambda: dtune.backend(key + LONE, "{}"), "workload")
    _refused(lambda: dtune.backend(key, "{\"isa\": \"" + LONE + "\"}"), "annotation")
    _refused(lambda: dtune.backend(key, {"isa": LONE}), "annotation")
    _refused(lambda: dtune.backend(key, {LONE: 1}), "annotation")
    _refused(lambda: dtune.backend(key, {"isa": object()}), "annotation")
    _refused(lambda: dtune.open(tmp_path / ("x" + LONE + ".db")), "path")
    _refused(lambda: dtune.open(str(tmp_path) + "/x\0.db"), "path", "NUL")
    _refused(lambda: dtune.open(17), "path")
    with dtune.open(tuned.db) as db:
        _refused(lambda: db.lookup(key + LONE, M=3), "key")
        _refused(lambda: db.lookup(tuned.key, "M=3" + LONE), "shape")
        _refused(lambda: db.lookup(tuned.key, M=3, target=LONE), "target")
        _refused(lambda: db.lookup(tuned.key, shape={"M=3,N": 3}), "variable name")
        _refused(lambda: db.lookup(tuned.key, shape={LONE: 3}), "variable name")
        _refused(lambda: db.lookup(tuned.key, M=np.True_), "M")
        _refused(lambda: db.kernel_source(1, tuned.key + LONE), "workload")
        _refused(lambda: db.export(tuned.key + LONE, tmp_path / "a.c"), "key")
        _refused(lambda: db.export(tuned.key, str(tmp_path / "a") + LONE + ".c"), "out_c_path")
        _refused(lambda: db.kernel(tuned.key + LONE), "key")
        assert db.lookup(tuned.key, M=3).shape == "M=3"  # the handle is fine afterwards
    # the CLI's arguments, refused before it is started
    _refused(lambda: dtune.tune(key + LONE, db=tmp_path / "t.db"), "workload key")
    _refused(lambda: dtune.tune(key, db=str(tmp_path) + "/t" + LONE + ".db"), "db")
    _refused(lambda: dtune.tune(key, db=tmp_path / "t.db", strategy="joint\0"), "strategy")
    _refused(lambda: dtune.tune(key, db=tmp_path / "t.db", args=["--seed", LONE]), "args[1]")
    _refused(lambda: dtune.tune(key, db=tmp_path / "t.db", args="--seed 1"), "args")


def test_bf16_helpers_refuse_other_dtypes():
    """Issue 42 (9): from_bf16 takes bf16 bits (uint16) only -- a float32 array
    used to be cast to uint16 and widened, silently another tensor -- and
    to_bf16 only real numbers to round."""
    x = np.array([1.0, -2.5, 3.0], np.float32)
    for bad in (x, x.astype(np.float64), x.astype(np.int32), [16256, 49184], np.int16(1),
                np.array(["1"]), np.array([1 + 1j])):
        _refused(lambda: dtune.from_bf16(bad), "from_bf16", "uint16")
    for bad in (dtune.to_bf16(x), np.array([True]), np.array([1 + 1j]), np.array(["1.5"]),
                np.array([{}], dtype=object), "1.5", [[1.0], [2.0, 3.0]]):
        _refused(lambda: dtune.to_bf16(bad), "to_bf16")
    # what they take
    assert np.array_equal(dtune.from_bf16(dtune.to_bf16(x)), x)
    assert np.array_equal(dtune.from_bf16(dtune.to_bf16([1, 2, -3])), [1.0, 2.0, -3.0])
    assert dtune.to_bf16(2.0)[()] == 0x4000 and dtune.to_bf16(np.float16(2.0))[()] == 0x4000
    assert dtune.from_bf16(np.uint16(0x3F80))[()] == 1.0
