"""The HTTP clients as load generators (clientload.py) and their experiment (kinds/clients): the command
line each point becomes, the summary line parsed from a real run, and a brief live run in which every
offered request is accounted for."""
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import reads_as_prose, reads_like_the_book

from iobench import registry
from iobench.book.pages import http_clients
from iobench.kinds.clients import dataset as clients_dataset
from iobench.kinds.clients import plans as clients_plans
from iobench.kinds.clients.plans import ClientPlan, ClientPoint
from iobench.load import clientload, drivers
from iobench.run import jvmlog, runner

FIXTURES = Path(__file__).parent / "fixtures"


def spec(**kw):
    base = dict(tool="clientload", client="jetty", connections=16, rate=800.0, max_in_flight=64,
                duration_s=4.0, warmup_s=2.0, timeout_s=5.0)
    return drivers.LoadSpec(**{**base, **kw})


def test_an_open_point_is_a_rate_a_pool_and_a_cap_on_requests_in_flight():
    argv = drivers.get("clientload").argv(spec(), "http://127.0.0.1:8080/")
    main = argv.index("iom.clients.OpenLoad")
    assert argv[main + 1:] == ["--client", "jetty", "--mode", "open", "--duration", "4", "--warmup", "2",
                               "--timeout", "5", "--io-threads", "1", "--connections", "16", "--rate", "800",
                               "--max-in-flight", "64", "http://127.0.0.1:8080/"]


def test_a_shipped_pool_names_no_connections_and_the_write_ups_methods_have_their_own_flags():
    d = drivers.get("clientload")
    assert "--shipped" in d.argv(spec(shipped=True), "http://h/") and "--connections" not in d.argv(
        spec(shipped=True), "http://h/")
    burst = d.argv(spec(client_mode="burst", requests=30000), "http://h/")
    assert burst[burst.index("--requests") + 1] == "30000" and "--rate" not in burst
    park = d.argv(spec(client_mode="park", park_us=800), "http://h/")
    assert park[park.index("--park-us") + 1] == "800"


def test_a_setting_adds_its_jvm_flags_before_the_classpath_and_names_its_files():
    point = ClientPoint("apache-hc5", "burst", 10, connections=10_000, mode="burst", requests=30_000,
                        setting="pool-lax")
    argv = drivers.get("clientload").argv(spec(client="apache-hc5", client_mode="burst", requests=30_000,
                                               jvm_flags=point.jvm_flags, hist="raw/x.hlog"), "http://h/")
    assert argv.index("-Diom.apache.poolPolicy=LAX") < argv.index("-cp")
    assert argv[argv.index("--timeline") + 1] == "raw/x.timeline.jsonl"
    assert "pool-lax" in point.label() and ClientPoint("jetty", "burst", 10).jvm_flags == ()
    with pytest.raises(KeyError):
        _ = ClientPoint("jetty", "burst", 10, setting="no-such").jvm_flags
    # the burst study's plan: every client at both pools, Apache at 10,000 with each setting
    points = clients_plans.CLIENT_BURST.points
    assert {(p.client, p.connections) for p in points if not p.setting} == {
        (c, n) for c in clientload.IDS for n in (10_000, 1_000)}
    assert {p.setting for p in points if p.client == "apache-hc5"} == set(clients_plans.SETTINGS)


@pytest.mark.parametrize("bad, match", [(dict(client="curl"), "unknown client"),
                                        (dict(client_mode="closed"), "unknown client mode")])
def test_an_unknown_client_or_mode_is_a_clear_error(bad, match):
    with pytest.raises(ValueError, match=match):
        drivers.get("clientload").argv(spec(**bad), "http://h/")


def test_unbuilt_clients_say_how_to_build_them(tmp_path, monkeypatch):
    monkeypatch.setattr(clientload, "CLIENTS", tmp_path)
    with pytest.raises(RuntimeError, match="make -C .* clients"):
        drivers.get("clientload").argv(spec(), "http://h/")


def test_the_reference_generator_offers_the_same_rate_through_the_same_pool_and_cap():
    argv = drivers.get("openloop").argv(drivers.LoadSpec(tool="openloop", connections=16, rate=800,
                                                         max_in_flight=64, duration_s=10), "http://h:1/")
    assert argv[1:] == ["--rate", "800", "--max-in-flight", "64", "--connections", "16", "--pipeline", "1",
                        "--duration", "10", "--timeout", "5", "http://h:1/"]


def test_littles_law_ceiling_of_equal_and_shipped_pools():
    assert clients_plans.ceiling(ClientPoint("jdk", "equal", 10, connections=64)) == 6400
    assert clients_plans.ceiling(ClientPoint("apache-hc5", "shipped", 10)) == 500   # 5 per route
    assert clients_plans.ceiling(ClientPoint("jetty", "shipped", 10)) == 6400       # 64 per destination
    assert clients_plans.ceiling(ClientPoint("ahc", "shipped", 10)) is None         # no bound
    assert clients_plans.ceiling(ClientPoint("jdk", "cpu", 0, connections=16, rate=2000)) is None
    # behind a link the round trip is the wait: 16 connections of 10 ms each, the server answering at once
    behind = ClientPoint("jdk", "link", 0, link_rtt_ms=10, connections=16, fraction=0.5)
    assert clients_plans.ceiling(behind) == 1600 and behind.offered_rps == 800


def test_every_client_is_measured_at_every_level_of_the_full_plan():
    levels = {}
    for p in clients_plans.HTTP_CLIENTS.points:
        levels.setdefault((p.experiment, p.connections, p.offered_rps, p.requests, p.park_us), set()).add(p.client)
    reference = {clients_plans.REFERENCE}
    for (experiment, *_), clients in levels.items():
        # the C generator beside the five wherever the load is a rate through equal pools
        assert clients == set(clientload.IDS) | (reference if experiment in ("equal", "cpu", "link") else set())
    assert {p.experiment for p in clients_plans.HTTP_CLIENTS.points} == {"equal", "shipped", "cpu", "burst", "park",
                                                                     "link"}


@pytest.mark.live  # a measuring smoke run: make test-live (make test stays within 35 minutes)
def test_a_live_run_accounts_for_every_offered_request(tmp_path):
    points = (ClientPoint("jdk", "equal", 10, connections=4, fraction=0.5),      # 200/s
              ClientPoint("okhttp", "equal", 10, connections=4, fraction=0.5),
              ClientPoint(clients_plans.REFERENCE, "equal", 10, connections=4, fraction=0.5),
              ClientPoint("ahc", "burst", 10, connections=50, mode="burst", requests=300))
    plan = ClientPlan(dataset="tiny-clients", description="a test plan", points=points, smoke_points=points,
                      measured_s=1.0)
    ds = clients_dataset.load(runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "c",
                                         progress=lambda m: None))
    df = ds.df.set_index(["client", "mode"])
    assert len(df) == 4 and df.accounted.all() and df.ok_run.all()
    reads_like_the_book(ds, "http-clients")
    reads_as_prose(http_clients.dataset(ds))  # the chapter's prose from a smoke capture
    c = df.loc[(clients_plans.REFERENCE, "open")]     # the C generator: the same columns, its CPU from the harness
    assert abs(c.offered - 200) <= 2 and c.ok + c.failed + c.dropped == c.offered and c.max_in_flight == 16
    assert 10 <= c.p50_ms < 200 and 0 < c.client_cpu_us_per_req and c.client_threads_max == 1
    assert pd.isna(c.hlog_file) and pd.isna(c.thread_dump_file) and pd.isna(c.pss_kib)
    for client in ("jdk", "okhttp"):
        row = df.loc[(client, "open")]
        # a cold JVM (0.5 s of warm-up under smoke) may drop or delay a few, never lose one
        assert abs(row.offered - 200) <= 2 and row.ok >= 150 and row.ok + row.failed + row.dropped == row.offered
        assert 10 <= row.p50_ms < 200 and row.client_cpu_us_per_req > 0   # the server's 10 ms timer, at least
        assert (ds.path / row.hlog_file).stat().st_size > 0
        assert 10_000 < row.pss_kib < 8 << 20        # the client JVM's own memory (KiB), read by itself after the run
        assert "Using G1" in (ds.path / row.gc_log_file).read_text()   # the collector's log (its pauses) beside it
        threads = ds.threads(row).set_index("group")        # and what every thread was doing halfway through
        assert threads.loc["openload-sampler", "threads"] == 1 and (threads.cpu_ms >= 0).all()
    # the JDK client waits for all its sockets in one selector thread, caught in the JDK's own code: most
    # often in epoll_wait, but one dump is one instant, and the loop also expires timeouts, hands out what it
    # read, re-registers (HttpClientImpl.purgeTimeoutsAndReturnNextDeadline caught it once in CI)
    jdk = ds.threads(df.loc[("jdk", "open")]).set_index("group").loc["HttpClient-#-SelectorManager"]
    assert jdk.threads == 1 and jdk.library == "", jdk.library
    assert jdk.waiting_in.startswith(("sun.nio.ch.", "jdk.internal.net.http.", "java.")), jdk.waiting_in
    burst = df.loc[("ahc", "burst")]
    assert burst.offered == 300 and burst.ok + burst.failed == 300
    assert burst.listen_overflows >= 0 and burst.tcp_out_rsts >= 0   # the kernel's counters, on every row
    # the connections opened meanwhile: the client's (at least one; the counter is the machine's, so anything
    # else that connects during the run adds to it, and no upper bound holds on a shared host)
    assert burst.tcp_active_opens >= 1
    timeline = ds.timeline(burst)    # every 100 ms; its last line after every request ended
    assert timeline.ok.iloc[-1] == burst.ok and timeline.sent.iloc[-1] == 300 and timeline.d_ok.sum() == burst.ok
    assert timeline.opened.iloc[-1] >= 1 and timeline.opened.is_monotonic_increasing
    assert timeline["d_cpu_AsyncHttpClient-#-#"].sum() > 0      # the event loop's CPU, by group of threads
    assert (ds.summary().server_cpu_pct < 50).all()  # the server is not what is measured
    # each client's PSS in the summary, the median of its repeats (here one), in MiB; none for the C generator
    assert ds.value("pss_mib", client="jdk", mode="open") == pytest.approx(df.loc[("jdk", "open")].pss_kib / 1024)
    assert pd.isna(ds.value("pss_mib", client=clients_plans.REFERENCE, mode="open"))


def test_behind_a_delay_link_the_wait_is_the_round_trip_and_the_link_is_taken_down(tmp_path):
    from iobench.run import netlink
    try:
        netlink.DelayLink.check_available()
    except netlink.LinkUnavailable as exc:
        pytest.skip(str(exc))
    points = (ClientPoint("jdk", "link", 0, link_rtt_ms=10, connections=4, fraction=0.5),)   # 200/s
    plan = ClientPlan(dataset="tiny-link", description="a test plan", points=points, smoke_points=points,
                      measured_s=1.0)
    ds = clients_dataset.load(runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "c",
                                         progress=lambda m: None))
    row = ds.df.iloc[0]
    assert row.accounted and row.ok_run and row.link_rtt_ms == 10 and row.ceiling_rps == 400
    assert 10 <= row.p50_ms < 100            # the server answers at once: the wait is the link's round trip
    assert list(ds.meta["links"]) == ["delay-10ms"] and ds.meta["links"]["delay-10ms"]["after"]
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert f"iom-srv-{os.getpid()}-" not in names   # the namespace went with the run


def test_the_summary_of_a_real_run_becomes_a_result_and_keeps_what_a_result_has_no_column_for():
    r = drivers.get("clientload").parse((FIXTURES / "clientload_okhttp_open.txt").read_text(), 0)
    x = r.extra
    assert r.ok and r.requests == x["offered"] - x["dropped"] - r.errors and r.errors == 0
    assert 0 < r.p50_ms <= r.p99_ms <= r.max_ms and x["client"] == "okhttp" and x["client_version"]
    assert x["cpu_us_per_req"] > 0 and x["threads_max"] > 0 and x["warmup"]["offered"] > 0


def test_a_queue_behind_a_shipped_pool_shows_as_latency_not_as_loss():
    r = drivers.get("clientload").parse((FIXTURES / "clientload_apache_shipped.txt").read_text(), 0)
    assert r.extra["shipped"] and r.requests == r.extra["offered"]   # every request answered ...
    assert r.p99_ms > 10 * 10                                       # ... long after its 10 ms


def test_a_run_that_printed_no_summary_is_a_failure_with_its_last_word():
    r = drivers.get("clientload").parse("OpenLoad: --client must be one of [ahc, ...]\n", 2)
    assert not r.ok and "exit 2" in r.failure and "--client" in r.failure


def test_the_collectors_log_gives_its_pauses_and_the_heap_left_after_them():
    log = ("[0.004s] Using G1\n"
           "[1.772s] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 103M->69M(2048M) 109.833ms\n"
           "[3.668s] GC(3) Pause Young (Normal) (G1 Evacuation Pause) 299M->300M(2048M) 280.340ms\n"
           "[4.000s] GC(4) Pause Remark 310M->305M(2048M) 1.500ms\n")
    got = jvmlog.gc_pauses(log)
    assert got["gc_pauses"] == 3 and got["gc_heap_after_mib"] == 305
    assert got["gc_pause_s"] == pytest.approx(0.391673)
    assert jvmlog.gc_pauses("[0.004s] Using G1\n") == {"gc_pauses": 0, "gc_pause_s": 0, "gc_heap_after_mib": 0}


def test_a_thread_dump_gives_each_thread_its_group_state_cpu_and_where_it_waits():
    dump = ('OpenLoad okhttp 4.12.1 open: every thread, halfway through the measured window\n2 threads\n\n'
            '"OkHttp http://127.0.0.1:4000/..." #31 daemon RUNNABLE cpu=12.5ms\n'
            '\tat java.base@25.0.3/sun.nio.ch.Net.poll(Native Method)\n'
            '\tat java.base@25.0.3/sun.nio.ch.NioSocketImpl.park(NioSocketImpl.java:191)\n'
            '\tat app//okio.InputStreamSource.read(JvmOkio.kt:93)\n\n'
            '"HttpClient@6d3af739-41" #40 TIMED_WAITING cpu=0.3ms on java.lang.Object@1b2c\n'
            '\tat java.base@25.0.3/jdk.internal.misc.Unsafe.park(Native Method)\n\n'
            '"HttpClient-1-SelectorManager" #20 daemon RUNNABLE cpu=4.0ms\n'     # a class loader before the module
            '\tat platform/java.net.http@25.0.3/'
            'jdk.internal.net.http.HttpClientImpl.purgeTimeouts(HttpClientImpl.java:9)\n'
            '\tat platform/java.net.http@25.0.3/'
            'jdk.internal.net.http.HttpClientImpl$SelectorManager.run(HttpClientImpl.java:1)\n\n'
            '"Signal Dispatcher" #13 daemon RUNNABLE cpu=0.0ms\n')
    got = clientload.thread_dump(dump)
    assert [t["group"] for t in got] == ["OkHttp http", "HttpClient-#", "HttpClient-#-SelectorManager",
                                         "Signal Dispatcher"]
    assert got[0] == {"name": "OkHttp http://127.0.0.1:4000/...", "group": "OkHttp http", "state": "RUNNABLE",
                      "cpu_ms": 12.5, "top": "sun.nio.ch.Net.poll", "library": "okio.InputStreamSource.read"}
    assert got[1]["library"] == "" and got[3]["top"] == ""   # only the JDK's frames; no frames at all
    # a frame of a module the platform class loader loads names the loader first: both come off
    assert got[2]["top"] == "jdk.internal.net.http.HttpClientImpl.purgeTimeouts" and got[2]["library"] == ""
