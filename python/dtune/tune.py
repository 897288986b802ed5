"""``dtune.tune``: the dtune CLI's ``tune`` as a subprocess, its progress streamed."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ._lib import DtuneError, path_arg


def cli_path():
    """The dtune binary: $DTUNE_BIN, else build/dtune of the source tree, else PATH."""
    env = os.environ.get("DTUNE_BIN")
    if env:
        return env
    tree = Path(__file__).resolve().parents[2] / "build" / "dtune"
    if tree.is_file() and os.access(tree, os.X_OK):
        return str(tree)
    found = shutil.which("dtune")
    if found:
        return found
    raise DtuneError("the dtune CLI was not found: set DTUNE_BIN=/path/to/dtune, or put dtune "
                     "on PATH (cmake --install build)")


def _duration(t):
    return t if isinstance(t, str) else f"{t}s"


def _arg(v, what):
    """One argument of the command line as bytes: a str or path checked like a
    file name (os.fsencode; no NUL), anything else as str(v)."""
    if not isinstance(v, (str, bytes, os.PathLike)):
        v = str(v)
    return path_arg(v, what)


def tune(what, db=None, *, time=None, trials=None, threads=1, strategy=None, seed=None,
         max_kernels=None, math=None, progress=None, args=()):
    """Tunes a workload key or a model file (JSON spec or ONNX) with ``dtune tune --json``.

    ``progress(line)`` is called with each progress line the CLI writes (one
    per search round, then the selection). Returns the CLI's JSON summary as a
    dict. Raises DtuneError with the CLI's message and its exit status as
    ``code`` (``.summary`` holds the summary when one was printed, e.g. after
    SIGINT). If ``progress`` raises (or Ctrl-C), the tune is stopped with
    SIGINT: it stores what it measured, and the exception propagates.
    """
    if not isinstance(what, (str, os.PathLike)):
        raise DtuneError(f"tune takes a workload key or a model file path, not {what!r}", -1)
    cmd = [cli_path(), "tune", _arg(what, "the workload key or model path"), "--json"]
    for flag, v in (("--db", db), ("--time", None if time is None else _duration(time)),
                    ("--trials", trials), ("--threads", threads), ("--strategy", strategy),
                    ("--seed", seed), ("--max-kernels", max_kernels), ("--math", math)):
        if v is not None:
            cmd += [flag, _arg(v, flag[2:].replace("-", "_"))]
    if isinstance(args, (str, bytes)):
        raise DtuneError("args must be a list of arguments, not a str", -1)
    cmd += [_arg(a, f"args[{i}]") for i, a in enumerate(args)]
    lines = []
    with tempfile.TemporaryFile("w+") as out:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True,
                                    errors="replace", bufsize=1)
        except OSError as e:
            raise DtuneError(f"cannot run {cmd[0]}: {e} (set DTUNE_BIN)") from None
        try:
            for line in proc.stderr:
                line = line.rstrip("\n")
                lines.append(line)
                if progress is not None:
                    progress(line)
            rc = proc.wait()
        except BaseException:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            raise
        finally:
            proc.stderr.close()
        out.seek(0)
        text = out.read()
    try:
        summary = json.loads(text) if text.strip() else None
    except ValueError:
        summary = None
    if rc != 0:
        errs = [ln[len("dtune: error: "):] for ln in lines if ln.startswith("dtune: error: ")]
        msg = errs[-1] if errs else ("\n".join(lines[-5:]) or f"dtune tune exited {rc}")
        e = DtuneError(f"dtune tune failed (exit {rc}): {msg}", rc)
        e.summary, e.stderr = summary, "\n".join(lines)
        raise e
    if summary is None:
        raise DtuneError("dtune tune printed no JSON summary", rc)
    return summary
