"""Fixtures: the source tree's package, build/libdtune.so and build/dtune (or
DTUNE_LIB / DTUNE_BIN), a kernel cache in a temporary directory, and one tiny
workload tuned into a temporary database for the whole session."""
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))  # test this tree's package, not an installed one

LIB = Path(os.environ.get("DTUNE_LIB") or REPO / "build" / "libdtune.so").absolute()
BIN = Path(os.environ.get("DTUNE_BIN") or REPO / "build" / "dtune").absolute()
os.environ["DTUNE_LIB"], os.environ["DTUNE_BIN"] = str(LIB), str(BIN)

KEY = "dense(M=1..8,N=32,K=32,epilogue=bias)"  # tuned once per session
SMALL = "dense(M=1..4,N=16,K=16)"              # tuned by test_tune.py


@pytest.fixture(scope="session", autouse=True)
def cache_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cache")
    os.environ["DTUNE_CACHE_DIR"] = str(d)
    return d


@pytest.fixture(scope="session")
def lib():
    if not LIB.exists():
        pytest.skip(f"{LIB} not found: build it (cmake --build build) or set DTUNE_LIB")
    return LIB


@pytest.fixture(scope="session")
def cli():
    if not os.access(BIN, os.X_OK):
        pytest.skip(f"{BIN} not found: build it (cmake --build build) or set DTUNE_BIN")
    return BIN


@pytest.fixture(scope="session")
def tuned(lib, cli, tmp_path_factory):
    """KEY tuned with 16 trials on 1 thread: the db path, the progress lines, the summary."""
    import dtune
    db = tmp_path_factory.mktemp("db") / "tuned.db"
    lines = []
    summary = dtune.tune(KEY, db=db, trials=16, threads=1, progress=lines.append)
    return SimpleNamespace(db=db, lines=lines, summary=summary, key=KEY)


@pytest.fixture
def db(tuned):
    import dtune
    with dtune.open(tuned.db) as d:
        yield d
