"""The package installed into a fresh venv (offline: system setuptools, no index)."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, KEY


def test_pip_install_into_venv(tuned, tmp_path):
    py = sys.executable
    probe = subprocess.run([py, "-c", "import importlib.util as u, sys; sys.exit(not all("
                            "u.find_spec(m) for m in ('venv', 'pip', 'setuptools', 'wheel')))"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("venv, pip, setuptools or wheel missing for an offline install "
                    "(Debian: python3-venv python3-pip)")
    src = tmp_path / "src"
    shutil.copytree(REPO / "python", src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", ".pytest_cache", "tests"))
    venv = tmp_path / "venv"
    subprocess.run([py, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True)
    vpy = str(venv / "bin" / "python")
    r = subprocess.run([vpy, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                        "--no-index", "--quiet", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    script = ("import dtune, numpy as np\n"
              "assert dtune.__file__.startswith(%r), dtune.__file__\n"
              "db = dtune.open(%r)\n"
              "s = db.lookup(%r, M=37)\n"
              "k = db.kernel(%r); W = np.ones((32, 32), np.float32); k.pack(W)\n"
              "X = np.ones((3, 32), np.float32); b = np.zeros(32, np.float32)\n"
              "assert np.allclose(k(X, b), X @ W.T)\n"
              "try:\n    db.lookup('dense(M=1', M=1)\nexcept dtune.DtuneError as e:\n"
              "    print('bad key:', e)\n"
              "print(s.kernel_id, s.extrapolated)\n") % (str(venv), str(tuned.db), KEY, KEY)
    env = dict(os.environ)
    r = subprocess.run([vpy, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bad key:" in r.stdout
