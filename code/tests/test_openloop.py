"""The open-loop generator (iom-openloop): parsed from real outputs, and it sees the
queueing a closed loop hides (coordinated omission)."""
import os
import subprocess

import pytest

from iobench import drivers
from iobench.lifecycle import ServerProcess
from iobench.manifest import CODE, ROOT, ServerOptions, get
from test_parsers import parse


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)


# ---- parsing captured outputs (fixtures/capture.py) -----------------------------------------

def test_openloop_ok():
    r = parse("openloop_ok")
    assert r.ok and r.errors == 0
    assert r.extra["mode"] == "open" and r.extra["offered"] == r.extra["sent"] == r.requests == 2000
    assert r.rps == pytest.approx(2000, rel=0.01)
    assert r.p50_ms <= r.p90_ms <= r.p99_ms <= r.extra["p99_9_ms"] <= r.max_ms
    assert r.extra["conns_served"] == 10 and r.extra["timeline_ms"] == 100


def test_openloop_timeouts():
    # a server that answers after 1.5 s, a timeout of 1 s: nothing is ok, everything offered ends
    r = parse("openloop_timeouts")
    assert not r.ok and r.requests == 0 and r.p99_ms is None
    assert r.errors_timeout == r.errors == r.extra["offered"] - r.extra["dropped"] > 0


def test_openloop_closed():
    r = parse("openloop_closed")
    assert r.ok and r.errors == 0 and r.extra["mode"] == "closed"
    assert r.extra["offered"] == r.extra["sent"] == r.requests and r.extra["dropped"] == 0
    assert r.extra["send_lag_p99_ms"] is None  # no schedule, no lag


def test_openloop_dropped():
    r = parse("openloop_dropped")  # a silent server, at most 50 in flight
    assert r.extra["dropped"] == r.extra["offered"] - 50 and r.errors_timeout == 50


def test_openloop_refused():
    r = parse("openloop_refused")
    assert not r.ok and r.errors_connect == r.errors == r.extra["offered"] > 0


# ---- with the harness ------------------------------------------------------------------------

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
    assert opened.extra["mode"] == "open"
    assert closed.rps == pytest.approx(100, rel=0.15)
    assert closed.p99_ms < 100
    assert opened.p99_ms > 5 * closed.p99_ms, (opened.p99_ms, closed.p99_ms)
    assert opened.extra["in_flight_max"] > 20 and opened.extra["queue_max"] > 15
    assert opened.requests == opened.extra["offered"] == 300  # all answered, late
