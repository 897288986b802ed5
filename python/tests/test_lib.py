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


def test_schedule_struct_matches_header(lib, tmp_path):
    """sizeof and every offsetof of dtune_schedule, from the C compiler and dtune.h."""
    cc = shutil.which("cc")
    header = REPO / "include" / "dtune" / "dtune.h"
    if not cc or not header.exists():
        pytest.skip("no cc or no include/dtune/dtune.h to compare the struct with")
    fields = [f for f, _ in _lib.dtune_schedule._fields_]
    src = tmp_path / "layout.c"
    src.write_text('#include <stdio.h>\n#include <stddef.h>\n#include "dtune/dtune.h"\n'
                   "int main(void) {\n"
                   '  printf("%zu\\n", sizeof(dtune_schedule));\n'
                   + "".join(f'  printf("%zu\\n", offsetof(dtune_schedule, {f}));\n'
                             for f in fields)
                   + "  return 0;\n}\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-I", str(REPO / "include"), str(src), "-o", str(exe)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    want = [ctypes.sizeof(_lib.dtune_schedule)] + [getattr(_lib.dtune_schedule, f).offset
                                                   for f in fields]
    assert got == want


def test_bf16_helpers():
    x = np.array([1.0, -2.5, 3.14159, 1e-3, np.inf], dtype=np.float32)
    b = dtune.to_bf16(x)
    assert b.dtype == np.uint16
    assert np.allclose(dtune.from_bf16(b), x, rtol=1 / 128)
    assert dtune.from_bf16(dtune.to_bf16([np.nan]))[0] != dtune.from_bf16(dtune.to_bf16([np.nan]))[0]
