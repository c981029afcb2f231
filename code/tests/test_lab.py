"""What the exercise cells stand on: iobench.lab starts a server, loads it with the book's
closed-loop generator and reads the server's CPU; and a page that reads another page's
dataset under smoke reuses that page's capture of the same commit instead of measuring again."""
import json
import shutil

import pytest

from iobench import registry
from iobench.book import lab
from iobench.run import metadata, profiles, runner
from iobench.run.profiles import DATA


def test_a_closed_loop_against_a_lab_server_counts_requests_connections_and_server_cpu():
    with lab.server("c-epoll") as srv, lab.cpu_of(srv) as used:
        run = lab.closed_loop(srv.port, connections=20, seconds=1)
    assert run["ok"] > 100 and run["conns_served"] == 20
    assert used.seconds > 0 and 0 < used.us_per(run["ok"]) < 10_000


def test_without_keep_alive_every_request_is_a_new_connection_and_costs_more():
    per = {}
    for close in (False, True):
        with lab.server("c-epoll") as srv, lab.cpu_of(srv) as used:
            run = lab.closed_loop(srv.port, connections=10, seconds=1, close=close)
        assert run["ok"] > 100
        per[close] = used.us_per(run["ok"])
    assert per[True] > per[False]  # an accept, a handshake and a teardown per request


def test_a_generator_that_prints_nothing_is_an_error_not_a_none():
    with pytest.raises(RuntimeError, match="OPENLOOP"):
        lab.closed_loop(8080, connections=0, seconds=0.2)  # iom-openloop refuses 0 connections


HEAD = "1" * 40


def _capture(tmp_path, monkeypatch, commit, dirty=False, now_dirty=False):
    """A smoke capture of io-uring made from `commit` (`dirty`), with HEAD checked out now (`now_dirty`)."""
    monkeypatch.setattr(profiles, "SCRATCH", tmp_path)
    monkeypatch.setattr(metadata, "git", lambda: {"commit": HEAD, "dirty": now_dirty})
    dest = profiles.PROFILES["smoke"].dest("io-uring")
    shutil.copytree(DATA / "io-uring", dest)
    meta = json.loads((dest / "meta.json").read_text())
    meta["git"] = {"commit": commit, "dirty": dirty}
    (dest / "meta.json").write_text(json.dumps(meta))
    return dest


def test_a_smoke_capture_of_this_commit_is_reused_when_asked(tmp_path, monkeypatch):
    dest = _capture(tmp_path, monkeypatch, HEAD)
    monkeypatch.setattr(runner, "run", lambda *a, **k: pytest.fail("measured again"))
    assert registry.obtain("io-uring", "smoke", reuse=True).path == dest


@pytest.mark.parametrize("commit, dirty, now_dirty, reuse", [
    ("0" * 40, False, False, True),   # another commit
    (HEAD, True, False, True),        # this commit, but measured with edits on top
    (HEAD, False, True, True),        # this commit, but edited since
    (HEAD, False, False, False),      # reuse not asked for
])
def test_a_capture_that_may_not_be_this_code_or_an_unasked_reuse_measures_again(
        tmp_path, monkeypatch, commit, dirty, now_dirty, reuse):
    _capture(tmp_path, monkeypatch, commit, dirty, now_dirty)
    calls = []
    monkeypatch.setattr(runner, "run", lambda *a, **k: calls.append(a) or DATA / "io-uring")
    registry.obtain("io-uring", "smoke", reuse=reuse)
    assert len(calls) == 1


def test_a_java_client_against_a_lab_server_reports_every_request_it_was_offered():
    with lab.server("c-epoll", work_ms=5) as srv:
        run = lab.client_load(srv.port, "jdk", seconds=1, warmup_s=0.5, rate=100, connections=4)
    assert run["client"] == "jdk" and abs(run["offered"] - 100) <= 1
    answered = run["ok"] + run["non2xx"] + run["timeouts"] + run["rejected"] + run["errors"] + run["dropped"]
    assert answered == run["offered"]
    assert run["p50_ms"] >= 5  # the server's timer
