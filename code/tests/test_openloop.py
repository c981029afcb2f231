"""The open-loop generator: parsed from real outputs, and it sees the queueing a closed
loop hides (coordinated omission)."""
import os
import subprocess
from pathlib import Path

import pytest

from iobench import drivers
from iobench.lifecycle import ServerProcess
from iobench.manifest import CODE, ROOT, ServerOptions, get
from test_parsers import parse


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)


def test_openloop_ok():
    r = parse("openloop_ok")
    assert r.ok and r.errors == 0
    assert r.extra["intended"] == 2000 and r.extra["sent"] == 2000 and r.requests == 2000
    assert r.p50_ms <= r.p99_ms <= r.max_ms


def test_openloop_timeouts():
    r = parse("openloop_timeouts")
    assert r.errors_timeout > 0 and r.errors >= r.errors_timeout


def run(tool: str, spec: drivers.LoadSpec, url: str) -> drivers.LoadResult:
    d = drivers.get(tool)
    p = subprocess.run(d.argv(spec, url), env=os.environ | d.env(spec), cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    return d.parse(p.stdout + p.stderr, p.returncode)


def test_open_loop_sees_the_queue_a_closed_loop_hides(built):
    """One worker, 10 ms per request: capacity 100 req/s. Offered 150 req/s, requests pile
    up and wait longer and longer; a closed loop of 4 connections never offers more than
    the server takes, so its latencies stay near 4 x 10 ms."""
    with ServerProcess(get("c-threadpool"), ServerOptions(work_ms=10, pool=1), cpus=None) as srv:
        closed = run("wrk", drivers.LoadSpec("wrk", 4, keepalive=False, duration_s=2), srv.url)
        opened = run("openloop", drivers.LoadSpec("openloop", 4, keepalive=False, duration_s=2,
                                                  timeout_s=10, rate=150), srv.url)
    assert closed.ok and opened.ok, (closed.failure, opened.failure)
    assert closed.rps == pytest.approx(100, rel=0.15)
    assert closed.p99_ms < 100
    assert opened.p99_ms > 5 * closed.p99_ms, (opened.p99_ms, closed.p99_ms)
    assert opened.extra["backlog_max"] > 20
