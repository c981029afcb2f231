"""The load-generator parsers, against outputs captured from real runs (fixtures/capture.py)."""
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from iobench.load import drivers

FIXTURES = Path(__file__).parent / "fixtures"


def parse(name: str) -> drivers.LoadResult:
    """A captured raw file (results.raw_text's format), read back as the harness reads one."""
    return drivers.parse_raw(name.split("_")[0], (FIXTURES / f"{name}.txt").read_text())


def test_wrk_keepalive():
    r = parse("wrk_ok_keepalive")
    assert r.ok and r.errors == 0
    assert r.requests == 140744
    assert r.duration_s == pytest.approx(1.002619, abs=1e-6)
    assert r.rps == pytest.approx(140744 / 1.002619)
    assert (r.p50_ms, r.p99_ms) == (pytest.approx(0.057), pytest.approx(0.133))


def test_wrk_pipelined_has_no_percentiles():
    # 16 requests per write: wrk ranks its per-batch latencies by responses, and its
    # percentiles read 0 (wg/wrk issue 236); the mean and the maximum are real.
    r = parse("wrk_pipelined")
    assert r.ok and r.errors == 0 and r.requests > 10000
    assert (r.p50_ms, r.p90_ms, r.p99_ms, r.extra["p99_9_ms"]) == (None, None, None, None)
    assert 0 < r.mean_ms <= r.max_ms


def test_wrk_connection_close():
    r = parse("wrk_ok_close")
    assert r.ok and r.requests == 20824 and r.errors == 0
    assert r.p50_ms < r.p90_ms < r.p99_ms <= r.max_ms


def test_wrk_socket_errors_from_a_server_that_does_not_read():
    r = parse("wrk_socket_errors")
    assert r.ok
    assert (r.errors_connect, r.errors_read, r.errors_write, r.errors_timeout) == (0, 182, 25549, 0)
    assert r.errors == 182 + 25549


def test_wrk_non2xx_counts_as_errors():
    r = parse("wrk_non2xx")
    assert r.ok and r.non2xx == r.requests == 107643 and r.errors == r.non2xx


def test_wrk_timeouts_leave_no_latency():
    r = parse("wrk_timeouts")
    assert r.ok and r.errors_timeout == 20 and r.errors == 20
    assert r.p50_ms is None and r.p99_ms is None  # wrk records no latency for timed-out requests


def test_wrk_that_could_not_connect_is_a_failed_run():
    r = parse("wrk_refused")
    assert not r.ok
    assert "exit 1" in r.failure and "Connection refused" in r.failure
    assert r.rps == 0


def test_wrk_parser_rejects_inconsistent_summaries():
    text = (FIXTURES / "wrk_socket_errors.txt").read_text().split("# exit: 0\n", 1)[1]
    tampered = text.replace("write 25549", "write 1")
    with pytest.raises(ValueError, match="disagree"):
        drivers.get("wrk").parse(tampered, 0)


def test_ab_keepalive():
    r = parse("ab_ok_keepalive")
    assert r.ok and r.requests == 145107 and r.errors == 0
    assert r.extra["keepalive_requests"] == 145107
    assert r.rps == pytest.approx(145107, rel=0.01)


def test_ab_close():
    r = parse("ab_ok_close")
    assert r.ok and r.requests == 19901 and r.extra["keepalive_requests"] == 0
    assert r.p99_ms == 1.0  # ab reports whole milliseconds


def test_ab_non2xx():
    r = parse("ab_non2xx")
    assert r.ok and r.non2xx == 2000 and r.errors == 2000


def test_ab_failed_requests_only_length():
    """A copy of data/ab-backlog/raw/c-fork/ab-close-c1000-n10000-w0-b128-r1.txt: 153 of the
    responses had another length than the first one. ab counts them as failed requests; the
    parser keeps them apart, since a different length is not a network error."""
    r = parse("ab_failed_length")
    assert r.ok and r.requests == 10000
    assert r.extra["failed_requests"] == 153 and r.extra["length_failures"] == 153
    assert (r.errors_connect, r.errors_read, r.errors) == (0, 0, 0)


def test_ab_failed_requests_receive_and_exceptions():
    """ab -r against a server that resets every connection: the run goes on, and the breakdown
    reads (Connect: 0, Receive: 100, Length: 0, Exceptions: 100). ab counts each reset twice,
    once when recv() fails and once for the poll error on the same socket, so its "Failed
    requests" (200) exceeds its "Complete requests" (100), and the parser's errors follow ab."""
    r = parse("ab_failed_receive")
    assert r.ok and r.requests == 100
    assert r.extra["failed_requests"] == 200 and r.extra["length_failures"] == 0
    assert (r.errors_connect, r.errors_read) == (0, 100 + 100)  # Receive + Exceptions
    assert r.errors == 200 and r.bytes == 0


@pytest.mark.parametrize("name, code, message", [
    ("ab_refused", 111, "apr_socket_recv: Connection refused (111)"),
    ("ab_timeout", 119, "apr_pollset_poll: The timeout specified has expired (70007)"),
    # against a server that answers without reading the request, and closes: ab stopped on a
    # poll timeout after 40 completed requests, not on a reset
    ("ab_timeout_partial", 119, "apr_pollset_poll: The timeout specified has expired (70007)"),
    # against a server that reads the request, then closes with SO_LINGER 0 (an RST)
    ("ab_reset", 104, "apr_socket_recv: Connection reset by peer (104)"),
])
def test_ab_failed_runs(name, code, message):
    r = parse(name)
    assert not r.ok
    assert r.failure == f"ab exit {code}: {message}"


def test_ab_failed_run_keeps_the_completed_count():
    assert parse("ab_timeout_partial").requests == 40
    assert parse("ab_reset").requests == 0  # the first reset stopped ab: no "Total of" line


def test_driver_argv_is_a_list_without_shell():
    spec = drivers.LoadSpec("wrk", 40, keepalive=False, duration_s=10)
    argv = drivers.get("wrk").argv(spec, "http://127.0.0.1:8080/")
    assert argv[:5] == ["wrk", "-t", "1", "-c", "40"]
    assert drivers.get("wrk").env(spec) == {"IOBENCH_CONNECTION_CLOSE": "1"}
    ab = drivers.get("ab").argv(drivers.LoadSpec("ab", 10, duration_s=3), "http://127.0.0.1:8080/")
    assert ab[:5] == ["ab", "-t", "3", "-n", "10000000"] and "-k" in ab


def test_wrk_is_asked_for_a_duration_it_can_parse():
    """wrk reads -d in whole seconds and stops at "0.5s" with its usage text (the smoke profile's JVM warm-up
    windows asked for that and were never run): a shorter window is asked for as 1 s, which wrk runs."""
    argv = drivers.get("wrk").argv(drivers.LoadSpec("wrk", 1, duration_s=0.5), "http://127.0.0.1:9/")
    assert argv[argv.index("-d") + 1] == "1s"
    assert drivers.get("wrk").argv(drivers.LoadSpec("wrk", 1, duration_s=10), "http://127.0.0.1:9/")[6] == "10s"
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)  # port 9: nobody listens
    assert "Usage: wrk" not in out.stdout + out.stderr and "unable to connect" in out.stdout + out.stderr


def test_openloop_argv_sends_a_body_or_frames():
    d, url = drivers.get("openloop"), "http://127.0.0.1:8080/"
    plain = d.argv(drivers.LoadSpec("openloop", 4, rate=100), url)
    assert "--body-file" not in plain and "--frame" not in plain
    post = d.argv(drivers.LoadSpec("openloop", 4, rate=100, body_file="data/req.json", hist="h.csv"), url)
    assert post[post.index("--body-file") + 1] == "data/req.json" and "--frame" not in post
    assert post[-3:] == ["--hist", "h.csv", url]  # the flags before the URL
    framed = d.argv(drivers.LoadSpec("openloop", 4, pipeline=8, frame_file="data/req.bin"), url)
    assert framed[framed.index("--frame") + 1] == "data/req.bin" and "--body-file" not in framed
    assert framed[1] == "--closed" and framed[-1] == url
    for bad in (dict(body_file="a.json"), dict(keepalive=False)):  # refused here, before a server starts
        with pytest.raises(ValueError, match="frames carry no body and no Connection: close"):
            d.argv(drivers.LoadSpec("openloop", 4, frame_file="data/req.bin", **bad), url)


@pytest.mark.parametrize("tool", ["wrk", "ab", "vegeta"])
@pytest.mark.parametrize("field", ["body_file", "frame_file"])
def test_generators_that_only_get_refuse_a_body_or_frames(tool, field):
    spec = drivers.LoadSpec(tool, 4, rate=100, **{field: "req.json"})
    with pytest.raises(ValueError, match=f"{tool} sends only GET"):
        drivers.get(tool).argv(spec, "http://127.0.0.1:8080/")
    drivers.get(tool).argv(drivers.LoadSpec(tool, 4, rate=100), "http://127.0.0.1:8080/")  # without: fine


@pytest.mark.parametrize("field", ["body_file", "frame_file"])
def test_the_java_clients_refuse_a_body_or_frames_too(field):
    spec = drivers.LoadSpec("clientload", 4, rate=100, client="jetty", **{field: "req.json"})
    with pytest.raises(ValueError, match="clientload sends only GET"):
        drivers.get("clientload").argv(spec, "http://127.0.0.1:8080/")


def test_ab_connection_times_and_the_share_of_time_in_unanswered_requests():
    from iobench.load.drivers import ab_connection_times, unfinished_share

    # data/delay-link: 100 clients, 50 ms away; c-epoll, then python's http.server (backlog 5)
    ok, stuck = ((FIXTURES / f"ab_delay_{n}.txt").read_text() for n in ("ok", "backlog5"))
    assert ab_connection_times(stuck)["Total"] == {"min": 100.0, "mean": 134.0, "sd": 398.4, "median": 101.0,
                                                   "max": 8394.0}
    assert set(ab_connection_times(ok)) == {"Connect", "Processing", "Waiting", "Total"}
    # every request of the healthy run completed: its clients' time is all in completed requests
    assert unfinished_share(ok, 100) == pytest.approx(0.0, abs=0.02)
    # behind a queue of 5, 4,185 requests of 134 ms fill 561 of the 1,001 client-seconds
    assert unfinished_share(stuck, 100) == pytest.approx(0.44, abs=0.01)
    assert unfinished_share("ab: connect refused", 1) is None


def test_vegeta_ok():
    r = parse("vegeta_ok")
    assert r.ok and r.errors == 0 and r.non2xx == 0
    assert r.requests == r.extra["offered"] == 1998
    assert r.extra["offered_rps"] == pytest.approx(2000, rel=0.01)
    assert r.p50_ms <= r.p90_ms <= r.p99_ms <= r.max_ms
    assert r.requests / r.duration_s == pytest.approx(r.rps)  # answers per second of attack and wait


def test_vegeta_timeouts_are_errors_not_latencies():
    """A server slower than the timeout: every request fails (status 0 in vegeta's report)."""
    r = parse("vegeta_timeouts")
    assert not r.ok and r.requests == 0 and r.p99_ms is None
    assert "no request answered 2xx" in r.failure
    assert r.errors == r.errors_timeout == 20 and r.extra["dropped"] == 0
