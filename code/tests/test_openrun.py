"""The open-loop experiment on the runner: the closed loop measures a capacity, the open
points are fractions of it, every offered request is accounted for, raw output and
histograms are kept, and the dataset reads back."""
import csv
import subprocess

import pandas as pd
import pytest
from conftest import reads_as_prose, reads_like_the_book

from iobench import registry
from iobench.book.pages import open_loop as page
from iobench.kinds.openloop.dataset import load
from iobench.kinds.openloop.plans import OpenPlan, OpenPoint
from iobench.run import runner
from iobench.servers.manifest import CODE

OUTCOMES = ("ok", "non2xx", "timeouts", "errors_connect", "resets", "dropped")


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)


def test_closed_capacity_then_open_fractions_of_it(built, tmp_path):
    # c-epoll with 20 ms of work at 10 connections: Little's bound is 500 requests per second
    points = (OpenPoint("openloop", "closed", 10, 20.0), OpenPoint("openloop", "open", 10, 20.0, fraction=0.5),
              OpenPoint("openloop", "open", 10, 20.0, fraction=2.0, timeout_s=0.5))
    plan = OpenPlan(dataset="tiny-open", description="a test plan", servers=("c-epoll",), points=points,
                    smoke_points=points, measured_s=1.0, warmup_s=0.2)
    path = runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "tiny-open", progress=lambda m: None)
    rows = list(csv.DictReader(open(path / "results.csv")))
    closed, half, double = rows
    capacity = float(closed["achieved_rps"])
    assert capacity == pytest.approx(500, rel=0.15)
    assert float(half["offered_rps"]) == pytest.approx(0.5 * capacity, rel=1e-4)
    assert float(double["offered_rps"]) == pytest.approx(2.0 * capacity, rel=1e-4)
    for row in (half, double):
        assert float(row["capacity_rps"]) == pytest.approx(capacity, rel=1e-4)
        assert sum(int(row[k]) for k in OUTCOMES) == int(row["offered"]), row  # nothing unaccounted
        assert (path / row["hist_file"]).exists() and (path / row["raw_file"]).exists()
    for row in rows:  # the kernel's counters around every run (a full accept queue, retransmits, resets)
        assert min(int(row[k]) for k in ("listen_overflows", "listen_drops", "tcp_retrans_segs", "tcp_out_rsts")) >= 0
        assert int(row["pss_kib"]) > 100  # the server's memory, every process of it (c-epoll: a few hundred KiB)
    # at half the capacity every request is answered, in about the work's time;
    # at twice, requests wait (from their intended start) and, past 0.5 s, time out
    assert int(half["ok"]) == int(half["offered"]) and float(half["p99_ms"]) < 100
    assert float(double["p99_ms"]) > 5 * float(half["p99_ms"])
    assert int(double["timeouts"]) + int(double["dropped"]) > 0
    assert int(half["conns_served"]) == 10
    hist = pd.read_csv(path / half["hist_file"])
    assert list(hist.columns) == ["upper_us", "count"] and hist["count"].sum() == int(half["ok"])
    ds = load(path)
    assert ds.value("p99_ms", loop="open", fraction=0.5) == pytest.approx(float(half["p99_ms"]))
    assert ds.value("pss_mib", loop="open", fraction=0.5) == pytest.approx(int(half["pss_kib"]) / 1024)
    reads_like_the_book(ds, "open-loop")
    reads_as_prose({k: v for part in (page.hockey, page.no_work, page.flagged, page.fairness, page.generator)
                    for k, v in part(ds).items()})  # the page's prose, from a smoke capture


def test_every_plan_kind_is_found_by_name():
    assert isinstance(registry.get("open-loop"), OpenPlan)
    assert {"open-loop", "open-loop-crosscheck", "baselines", "echo-sweep"} <= set(registry.names())
    with pytest.raises(KeyError, match="unknown dataset"):
        registry.get("no-such-dataset")


def test_what_the_chapter_reads_from_a_summary():
    from iobench.kinds.openloop.dataset import highest_on_time, knee, on_time
    s = pd.DataFrame([
        # server, loop, fraction, offered, achieved, dropped, timeouts, p99
        ("a", "closed", 0.0, None, 1000, 0, 0, 10.0),
        ("a", "open", 0.5, 500, 500, 0, 0, 9.0),
        ("a", "open", 1.0, 1000, 995, 0, 0, 15.0),
        ("a", "open", 1.2, 1200, 1000, 0, 0, 400.0),
        ("a", "open", 1.5, 1500, 1000, 300, 0, 900.0),
    ], columns=["server", "loop", "fraction", "offered_rps", "achieved_rps", "dropped", "timeouts", "p99_ms"])
    s["tool"], s["work_ms"] = "openloop", 20.0
    assert list(on_time(s)["fraction"]) == [0.5, 1.0]  # 1.2: answered 83 %; 1.5: dropped
    assert highest_on_time(s)["offered_rps"] == 1000
    assert highest_on_time(s, server="b") is None
    assert knee(s, "a", 20.0) == 1.2          # first p99 over twice the closed loop's 10 ms
    assert knee(s, "a", 20.0, factor=100) is None
    assert knee(s, "a", 0.0) is None          # no closed point there


@pytest.mark.live  # a measuring smoke run: make test-live (make test stays within 35 minutes)
def test_vegeta_and_iom_openloop_agree_where_the_server_is_the_limit(built):
    """The cross-check in small: c-epoll with 20 ms of work, 10 connections (capacity 500/s),
    offered 200/s by each tool: both see the work's 20 ms at the median, and every request
    answered; above capacity (800/s) both see requests wait far longer than the work."""
    from iobench.load import drivers
    from iobench.run.lifecycle import ServerProcess
    from iobench.servers.manifest import ROOT, ServerOptions, get
    seen = {}
    with ServerProcess(get("c-epoll"), ServerOptions(work_ms=20), cpus=None) as srv:
        for tool in ("openloop", "vegeta"):
            for rate in (200, 800):
                d = drivers.get(tool)
                spec = drivers.LoadSpec(tool, 10, True, 2.0, timeout_s=5.0, rate=rate)
                p = subprocess.run(d.argv(spec, srv.url), cwd=ROOT, capture_output=True, text=True, timeout=60)
                seen[tool, rate] = d.parse(p.stdout + p.stderr, p.returncode)
    for tool in ("openloop", "vegeta"):
        low, high = seen[tool, 200], seen[tool, 800]
        assert low.ok and low.errors == 0 and low.requests == pytest.approx(400, abs=4), (tool, low)
        assert 19.0 < low.p50_ms < 30.0, (tool, low.p50_ms)
        assert high.p50_ms > 5 * low.p50_ms, (tool, high.p50_ms)  # the queue, seen by both
    assert seen["openloop", 200].p50_ms == pytest.approx(seen["vegeta", 200].p50_ms, rel=0.25)
