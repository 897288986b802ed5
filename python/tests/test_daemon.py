"""DaemonClient against a `dtune daemon` on the tuned database."""
import os
import re
import select
import signal
import subprocess
import time

import pytest

import dtune


@pytest.fixture(scope="module")
def daemon(tuned, cli):
    p = subprocess.Popen([str(cli), "daemon", "--db", str(tuned.db), "--listen", "127.0.0.1:0",
                          "--threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line, deadline = "", time.time() + 15
    while time.time() < deadline and p.poll() is None:
        if select.select([p.stdout], [], [], 0.2)[0]:
            line = p.stdout.readline()
            if "listening on" in line:
                break
    m = re.search(r"listening on (\S+)", line)
    if not m:
        p.kill()
        p.wait()
        pytest.skip(f"dtune daemon did not start: {line!r}")
    yield f"http://{m.group(1)}"
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def test_daemon_query(daemon, db, tuned):
    c = dtune.DaemonClient(daemon)
    s = c.query(tuned.key, M=37)
    ref = db.lookup(tuned.key, M=37)
    assert (s.kernel_id, s.range, s.extrapolated, s.shape, s.workload, s.target) == \
        (ref.kernel_id, ref.range, ref.extrapolated, ref.shape, ref.workload, ref.target)
    assert s.annotation == ref.annotation
    assert c.kernel_source(s.kernel_id) == db.kernel_source(s.kernel_id)
    assert c.health()["status"] == "ok"
    assert any(w["key"] == ref.workload for w in c.workloads()["workloads"])


def test_daemon_errors(daemon, tuned):
    c = dtune.DaemonClient(daemon)
    with pytest.raises(dtune.DtuneError) as e:
        c.query("dense(M=1..8", M=3)
    assert e.value.status == 400 and "dense(M=1..8" in str(e.value)
    with pytest.raises(dtune.DtuneError) as e:
        c.query("dense(M=1..8,N=64,K=32)", M=3)
    assert e.value.status == 404
    with pytest.raises(dtune.DtuneError, match="cannot reach"):
        dtune.DaemonClient("http://127.0.0.1:9", timeout=2).health()
