"""What a load generator does not say: connections it never got an answer on, event loops that
stall, pipelined requests held back by Nagle's algorithm, and repeats far from their median.

The load tests run real servers under real wrk, unpinned and briefly; their thresholds are
far from what a correct server does (see each test), so a loaded test machine does not make
them flaky, while the defects they guard against (a hung loop at a quarter of the rate, a
Nagle stall at 1/50th) cannot pass.
"""
import os
import statistics
import subprocess
from pathlib import Path

import pytest

from iobench.kinds.http.experiment import served_columns
from iobench.kinds.http.dataset import POINT_KEYS
from iobench.kinds.http.plans import Point
from iobench.load import drivers
from iobench.run import sampler
from iobench.run.lifecycle import ServerProcess, Unsupported
from iobench.run.results import flag_outliers
from iobench.servers.manifest import C_SERVERS, CODE, JAVA_SERVERS, ROOT, ServerOptions, get

FIXTURES = Path(__file__).parent / "fixtures"
C_IDS = [sid for sid, *_ in C_SERVERS]
JAVA_IDS = [sid for sid, *_ in JAVA_SERVERS]
# Servers whose simulated work is a timer on an event loop (or a coroutine's sleep on one).
TIMER_LOOPS = ["c-select", "c-poll", "c-epoll", "c-epoll-reuseport", "c-coroutine"]


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)
    subprocess.run(["make", "-s", "-C", str(CODE), "java"], check=True)


def wrk(port: int, connections: int, duration_s: float, pipeline: int = 1, timeout_s: float = 5.0):
    spec = drivers.LoadSpec("wrk", connections, duration_s=duration_s, pipeline=pipeline, timeout_s=timeout_s)
    driver = drivers.get("wrk")
    run = subprocess.run(driver.argv(spec, f"http://127.0.0.1:{port}/"), env=os.environ | driver.env(spec),
                         cwd=ROOT, capture_output=True, text=True, timeout=duration_s + timeout_s + 30)
    result = driver.parse(run.stdout, run.returncode)
    assert result.ok, result.failure
    return result


# --- who was served ------------------------------------------------------------------------------

def test_parse_ss_reads_bytes_received_per_socket():
    # Captured from `ss -tinHe state established ( dport = :PORT )` while wrk -c4 loaded
    # c-sequential: one connection served, three sent their request and wait in the backlog.
    received = sampler.parse_ss((FIXTURES / "ss-c-sequential-wrk-c4.txt").read_text())
    assert received == {173416: 1499808, 173417: 0, 173418: 0, 173419: 0}
    stats = sampler.ConnStats.from_bytes(received, bytes_per_response=102, samples=1)
    assert (stats.conns_seen, stats.conns_served) == (4, 1)
    assert (stats.conn_min_requests, stats.conn_max_requests) == (0, 14704)


def measure_served(server_id: str, connections: int):
    with ServerProcess(get(server_id), cpus=None) as srv:
        conns = sampler.ConnSampler(srv.port, interval_s=0.2).start()
        result = wrk(srv.port, connections, 2)
        received = conns.stop()
    return result, served_columns(Point("wrk", connections), result, received, conns.samples)


def test_starved_connections_are_counted(built):
    """wrk reports c-sequential at 10 keep-alive connections as fast and error-free: only the
    first connection is ever answered, and wrk counts only what completes."""
    result, served = measure_served("c-sequential", 10)
    assert result.errors == 0 and result.requests > 1000  # what wrk alone says: all is well
    assert served["conns_served"] == 1
    assert served["unserved"] is True
    assert served["conn_min_requests"] == 0
    # ... and that one connection did nearly all of wrk's requests. The sampler reads the sockets every 0.2 s,
    # so the last reading can come 0.2 s (and the time `ss` takes) before the 2 s run ends: up to a tenth and
    # more of the requests fall after it (CI once saw 0.896 of them counted against a bound of 0.9).
    assert 0.8 * result.requests <= served["conn_max_requests"] <= result.requests

    result, served = measure_served("c-epoll", 10)
    assert served["conns_served"] == 10 and served["unserved"] is False
    assert served["conn_min_requests"] > 0.5 * result.requests / 10


def test_close_mode_has_no_per_connection_columns():
    served = served_columns(Point("wrk", 10, keepalive=False), drivers.LoadResult(ok=True), {1: 0}, 3)
    assert served["conns_served"] is None and served["unserved"] is False


def test_replaced_connections_have_no_per_connection_columns(built):
    """The source write-up 000's blocking server answers one request and closes: wrk counts a
    read error and opens a new connection each time, so no socket lives the run and none
    can stand for a connection. Before this rule the point was marked unserved (0 of 10)."""
    result, served = measure_served("java-seed000-blocking", 10)
    assert result.errors_read > 0 and result.requests > 0
    assert served["conns_served"] is None and served["unserved"] is False

    opened = drivers.LoadResult(ok=True, requests=100, bytes=10_000)
    served = served_columns(Point("wrk", 2), opened, {1: 5000, 2: 5000, 3: 0}, 3)  # 3 sockets for 2
    assert served["conns_served"] is None and served["unserved"] is False


# --- outliers ------------------------------------------------------------------------------------

def row(rps, repeat, server="c-epoll", ok=True, **point):
    base = {"server": server, "tool": "wrk", "mode": "keepalive", "connections": 40, "work_ms": 20.0,
            "requested": 0, "backlog": 0, "pipeline": 1}
    return {**base, **point, "rps": rps, "repeat": repeat, "ok": ok}


def test_a_repeat_far_from_its_median_is_flagged():
    # data/c-servers' c-epoll at 20 ms of work before the timer fix: one repeat hung.
    rows = [row(1910, 1), row(1913, 2), row(463, 3), row(1000, 1, server="c-poll"), row(1100, 2, server="c-poll"),
            row(1190, 3, server="c-poll"), row(50, 1, connections=1), row(60, 2, connections=1)]
    flagged = flag_outliers(rows, POINT_KEYS, "rps")
    assert [(r["server"], r["repeat"]) for r in flagged] == [("c-epoll", 3)]
    assert [r["outlier"] for r in rows] == [False, False, True, False, False, False, False, False]
    # a failed repeat is an outlier of its point; 21 % off is, 19 % is not
    rows = [row(100, 1), row(101, 2), row(121.5, 3),
            row(100, 1, connections=1), row(119, 2, connections=1), row(100, 3, connections=1),
            row(100, 1, connections=2), row(100, 2, connections=2), row(0, 3, connections=2, ok=False)]
    assert [(r["connections"], r["repeat"]) for r in flag_outliers(rows, POINT_KEYS, "rps")] == [(40, 3), (2, 3)]


# --- event loops never hang ------------------------------------------------------------------------

@pytest.mark.live  # a rate, 40 wrk runs of 2 s: make test-live (test_contract checks the answers every run)
@pytest.mark.parametrize("server_id", TIMER_LOOPS)
def test_timer_loops_never_stall(server_id, built):
    """20 ms of work at 40 connections: at most 40 / 0.020 = 2000 req/s. Many short runs, a
    fresh server each: every run above 80 % of that, no request waiting a quarter second.

    A hang is far below: the loop sleeps until wrk gives up on the parked requests (errors), and
    even a stall of half a second in a 2 s run costs a quarter of the rate. Healthy runs sit near
    92 %: a wait rounded up to the next whole millisecond (epoll_wait, poll and select take ms)
    and the host's wake-up latency put p50 at about 21.2 ms on this 2-core VM, where even
    c-thread's nanosleep answers at 20.6-21.4 ms. A 90 % floor failed CI at 89 % with p99.9 at
    28 ms: no stall, only a slower host.

    Before common/timers.c, a deadline that fell due between the loop's scan of its timers
    and its computing of the wait made the wait "forever" while every connection was parked
    on a timer: c-epoll hung in about 1 run in 25 (data/c-servers of 2026-11-22, repeat 3)."""
    runs = []
    for _ in range(8):
        with ServerProcess(get(server_id), ServerOptions(work_ms=20), cpus=None) as srv:
            result = wrk(srv.port, 40, 2, timeout_s=2.0)
        runs.append(result)
        assert result.errors == 0, f"{server_id}: {result.errors} errors ({result.errors_timeout} timeouts)"
        assert result.rps >= 0.8 * 2000, f"{server_id}: {result.rps:.0f} req/s in run {len(runs)}"
        assert result.max_ms < 250, f"{server_id}: a request waited {result.max_ms:.0f} ms"
    assert statistics.median(r.rps for r in runs) <= 2000 * 1.02  # the bound holds: work really is 20 ms


# --- pipelining ------------------------------------------------------------------------------------

@pytest.mark.live  # a ratio of two wrk rates: make test-live (make test: test_contract's Nagle batches)
@pytest.mark.parametrize("server_id", C_IDS + JAVA_IDS)
def test_pipelined_requests_are_answered_without_stalls(server_id, built):
    """16 requests per write (TechEmpower's plaintext load) must go no slower than one at a
    time. A server that writes each response separately with Nagle's algorithm on has the
    second response of a batch held until the first is acknowledged, and the client delays
    that ACK by ~40 ms: before TCP_NODELAY and batched writes, ten servers fell to ~1/50th."""
    connections = 1 if server_id in ("c-sequential", "java-blocking") else 10
    try:
        with ServerProcess(get(server_id), cpus=None) as srv:
            wrk(srv.port, connections, 1)  # warm-up (the JIT, for Java)
            single = wrk(srv.port, connections, 1)
            pipelined = wrk(srv.port, connections, 1, pipeline=16)
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert pipelined.errors == 0
    ratio = pipelined.rps / single.rps
    assert ratio >= 1.0, (f"{server_id}: {pipelined.rps:,.0f} req/s pipelined vs {single.rps:,.0f} one at a "
                          f"time ({ratio:.2f}x); max latency {pipelined.max_ms} ms")
