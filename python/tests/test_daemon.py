"""DaemonClient against a `dtune daemon` on the tuned database."""
import os
import re
import select
import signal
import subprocess
import time

import numpy as np
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
    assert c.kernel_source(str(s.kernel_id)) == db.kernel_source(s.kernel_id)  # digits are an id
    assert c.query(tuned.key, "M=37", threads=0) == s  # 0: the highest, as db.lookup
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


LONE = "\ud800"
KEY = "dense(M=1..8,N=16,K=16)"


def test_daemon_client_refuses_before_any_request():
    """Issue 42 (9): ids that are not plain decimal integers, strs that cannot
    be encoded, query parameters that would spell others, bodies that are not
    JSON: DtuneError before any request (the address is unreachable, so a
    request would say "cannot reach")."""
    c = dtune.DaemonClient("http://127.0.0.1:9", timeout=2)

    def refused(call, *names):
        with pytest.raises(dtune.DtuneError) as e:
            call()
        assert "cannot reach" not in str(e.value) and e.value.code == -1, e.value
        for n in names:
            assert n in str(e.value), (n, str(e.value))

    for bad in ("1/..", "..", "1?x", "1#x", "1/../../healthz", " 1", "1 ", "+1", "1_0", "0x1",
                "\u0661", "", "0", 0, -1, 2 ** 63, 1.0, 1.5, True, None, b"1", LONE):
        refused(lambda: c.kernel_source(bad), "kernel_id")
        refused(lambda: c.job(bad), "job_id")
        refused(lambda: c.cancel(bad), "job_id")
    refused(lambda: c.query(KEY + LONE, M=3), "key")
    refused(lambda: c.query(KEY, "M=3" + LONE), "shape")
    refused(lambda: c.query(KEY, M=3, target=LONE), "target")
    refused(lambda: c.query(KEY, M=3, threads="2"), "threads")
    refused(lambda: c.query(KEY, "M=3,M=4"), "twice")
    refused(lambda: c.query(KEY, "M=3,workload=dense(M=1..2,N=1,K=1)"), "workload")
    refused(lambda: c.query(KEY, shape={"target": 1}), "target")
    refused(lambda: c.query(KEY, shape={"M&x": 1}), "variable name")
    refused(lambda: c.jobs(state="running" + LONE), "state")
    refused(lambda: c.submit(workload=KEY + LONE), "workload")
    refused(lambda: c.submit(model={"name": "m", "ops": [{"name": LONE}]}), "model.ops[0].name")
    refused(lambda: c.submit(workload=KEY, trials=float("nan")), "trials")
    refused(lambda: c.submit(workload=KEY, seed=object()), "seed")
    for bad in ({"url": "http://h" + LONE}, {"url": "ftp://127.0.0.1:9"}, {"url": "127.0.0.1:9"},
                {"url": "http://127.0.0.1:9/x?y=1"}, {"url": "http://127.0.0.1 :9"},
                {"token": "a\r\nX-Injected: 1"}, {"token": "t" + LONE}, {"token": 5},
                {"timeout": "2"}, {"timeout": 0}):
        with pytest.raises(dtune.DtuneError, match=next(iter(bad))):
            dtune.DaemonClient(**{"url": "http://127.0.0.1:9", **bad})
    # what is accepted reaches the (absent) daemon
    for ok in (lambda: c.kernel_source("12"), lambda: c.job(np.int64(3)), lambda: c.cancel(7),
               lambda: c.submit(workload=KEY, trials=np.int64(5), time=90.0),
               lambda: c.query(KEY, M=3, threads=0)):
        with pytest.raises(dtune.DtuneError, match="cannot reach"):
            ok()
