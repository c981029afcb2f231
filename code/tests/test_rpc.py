"""The RPC providers (code/java/rpc) under the harness (kinds/rpc): the call's bytes on the wire, every provider
answering it in its own protocol, the conformance battery on each HTTP provider's route, the write-up's consumer
in front of a provider, and a brief live run of the plan that accounts for every request and leaves a flame graph."""
import csv
import gzip
import io
import json
import struct
import subprocess

import pytest
from conftest import reads_as_prose, reads_like_the_book

from iobench import registry
from iobench.book import flames
from iobench.book.pages import rpc as rpc_page
from iobench.kinds.rpc.dataset import load
from iobench.kinds.rpc.plans import GRID, PROVIDERS, RPC_KEEPALIVE, RPC_PROVIDER, RpcPlan
from iobench.load import drivers
from iobench.load.rpcwire import ANSWERS, CALLS, call, protocol
from iobench.run import jvmlog, runner
from iobench.run.lifecycle import ServerProcess
from iobench.servers import http, manifest
from iobench.servers.battery import run_battery
from iobench.servers.manifest import CODE, ServerOptions

OUTCOMES = ("ok", "non2xx", "timeouts", "errors_connect", "resets", "dropped")


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "build/iom-openloop"], check=True)
    subprocess.run(["make", "-s", "-C", str(CODE), "rpc"], check=True)


# ---- without a server -----------------------------------------------------------------------------------

SAFEPOINTS = (  # as JDK 25 writes them with jvmlog.flags (the [gc] line's tag is padded, the safepoint's not)
    "[1795672091770ms][27ms][gc] Using G1\n"
    "[1795672092821ms][1077ms][gc       ] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 26M->3M(512M) 12.278ms\n"
    '[1795672092821ms][1077ms][safepoint] Safepoint "G1CollectForAllocation", Time since last: 993237343 ns, '
    "Reaching safepoint: 6122 ns, At safepoint: 12348161 ns, Leaving safepoint: 37120 ns, Total: 12391403 ns, "
    "Threads: 0 runnable, 10 total\n"
    '[1795672093500ms][1756ms][safepoint] Safepoint "Cleanup", Time since last: 600000000 ns, '
    "Reaching safepoint: 50000 ns, At safepoint: 20000 ns, Leaving safepoint: 1000 ns, Total: 71000 ns, "
    "Threads: 0 runnable, 10 total\n"
    '[1795672099000ms][7256ms][safepoint] Safepoint "G1CollectForAllocation", Time since last: 5000000000 ns, '
    "Reaching safepoint: 9000 ns, At safepoint: 6000000 ns, Leaving safepoint: 3000 ns, Total: 6012000 ns, "
    "Threads: 0 runnable, 10 total\n")


def test_a_jvms_safepoints_are_counted_in_the_window_they_ended_in():
    got = jvmlog.parse(SAFEPOINTS)
    assert [(s.name, s.gc, s.total_ns) for s in got] == [("G1CollectForAllocation", True, 12391403),
                                                         ("Cleanup", False, 71000),
                                                         ("G1CollectForAllocation", True, 6012000)]
    inside = jvmlog.window(got, 1795672092.8, 1795672095.0)  # the first two; the third ended after the window
    assert inside == {"jvm_safepoints": 2, "jvm_gc_pauses": 1, "jvm_safepoint_max_ms": pytest.approx(12.391403),
                      "jvm_safepoint_ms": pytest.approx(12.462403)}
    assert jvmlog.window(got, 1795672100.0, 1795672110.0)["jvm_safepoints"] == 0
    assert jvmlog.gc_pauses(SAFEPOINTS)["gc_pauses"] == 1  # the [gc] pause line, read the clients' way


def test_the_call_is_what_the_java_codecs_write():
    # the same literal as CodecTest.theJsonOnTheWire (JUnit), so both sides agree on the bytes
    assert CALLS["json"] == b'{"service":"iom.rpc.UserService","method":"findById","args":[101]}'
    assert ANSWERS["json"] == b'{"status":true,"data":{"id":101,"name":"user-101"},"error":null}'
    # writeUTF: a 2-byte length, then the bytes; one argument tagged I; an answer: status, tag U, id, name
    assert CALLS["binary"][:2] == struct.pack(">H", len("iom.rpc.UserService"))
    assert CALLS["binary"].endswith(b"\x01I" + struct.pack(">i", 101))
    assert ANSWERS["binary"] == b"\x01U\x00\x00\x00e\x00\x08user-101"


def test_each_provider_s_protocol_comes_from_its_flags():
    assert {sid: protocol(sid) for sid in PROVIDERS + GRID} == {
        "rpc-tomcat": ("http", "json"), "rpc-tomcat-vt": ("http", "json"), "rpc-webflux": ("http", "json"),
        "rpc-netty": ("http", "json"), "rpc-netty-http-binary": ("http", "binary"),
        "rpc-netty-frame-json": ("frame", "json"), "rpc-netty-frame-binary": ("frame", "binary")}
    # the providers are not IO models: no table of the models grows by them
    assert not set(PROVIDERS) & set(manifest.ids("Java"))
    assert [s for s in PROVIDERS if manifest.get(s).conforms] == list(PROVIDERS)  # battery on their route
    assert not any(manifest.get(s).conforms for s in GRID[1:])  # verified by a call in their own protocol


def test_a_server_s_own_flags_follow_the_contract_s():
    argv = manifest.get("rpc-netty-frame-binary").argv(
        ServerOptions(port=0, work_ms=10, extra=("--keep-alive-requests", "100")), CODE)
    main = argv.index("iom.rpc.netty.NettyProvider")
    assert argv[main + 1:] == ["--transport", "frame", "--codec", "binary", "--port", "0", "--host", "127.0.0.1",
                               "--work-ms", "10", "--keep-alive-requests", "100"]


def test_the_plan_runs_each_setting_in_one_process_and_measures_capacity_before_its_fractions():
    ex = registry.experiment(RPC_PROVIDER)
    turns = ex._turns(ex.points("full"), "full")
    for u in turns:
        kar = u.note["keep_alive_requests"]
        assert (("--keep-alive-requests", str(kar)) == u.opts.extra) if kar >= 0 else u.opts.extra == ()
        closed = set()
        for p in u.points:
            assert p.setting() == u.points[0].setting() and u.server.id in p.servers
            if p.loop == "closed":
                closed.add(p.connections)
            else:  # an open point is a fraction of the closed loop at its connections, measured first
                assert p.connections in closed
        # a turn's warm-up windows, if it measures them, come first: they are the JVM's warm-up
        assert all(p.experiment != "warmup" for p in u.points[sum(p.experiment == "warmup" for p in u.points):])
    # the write-up's setup: wrk -t2 -c10 GET /?id=101, Tomcat and Netty each at its keep-alive as shipped (Tomcat
    # closes every 100 requests, Netty never), directly and through the consumer, which starts beside that turn
    writeup = {(u.server.id, u.note["keep_alive_requests"], p.via) for u in turns for p in u.points
               if p.experiment == "writeup"}
    assert writeup == {("rpc-tomcat", 100, "rpc-consumer"), ("rpc-tomcat", 100, ""),
                       ("rpc-netty", 0, "rpc-consumer"), ("rpc-netty", 0, "")}
    assert all(u.note["via"] == "rpc-consumer" for u in turns if any(p.via for p in u.points))
    assert all(p.tool == "wrk" and p.threads == 2 and p.path == "/?id=101" for p in RPC_PROVIDER.points
               if p.experiment == "writeup")
    assert {u.server.id for u in turns if u.points[0].experiment == "warmup"} == set(PROVIDERS)
    assert set(RPC_PROVIDER.smoke_points) <= set(RPC_PROVIDER.points)
    assert isinstance(registry.get("rpc-provider"), RpcPlan)


def test_a_jvm_warms_up_as_its_family_needs_and_never_longer_than_the_profile_allows():
    from iobench.run.profiles import PROFILES
    ex = registry.experiment(RPC_PROVIDER)

    class Run:  # what jvm_warmup reads of a run
        profile = PROFILES["full"]
    assert ex.jvm_warmup(Run, "rpc-netty-frame-json") == 60 and ex.jvm_warmup(Run, "rpc-tomcat") == 90
    Run.profile = PROFILES["smoke"]
    assert ex.jvm_warmup(Run, "rpc-tomcat") == PROFILES["smoke"].server_jvm_warmup_s


def test_wrk_cannot_send_the_call_so_the_plan_never_asks_it_to():
    with pytest.raises(ValueError):
        drivers.get("wrk").argv(drivers.LoadSpec(tool="wrk", connections=1, body_file="x"), "http://h:1/")
    assert all(p.path == "/?id=101" for p in RPC_PROVIDER.points if p.tool == "wrk")


# ---- live ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("server_id", PROVIDERS + GRID[1:])
def test_every_provider_answers_the_call_in_its_own_protocol_and_stops_cleanly(built, server_id, tmp_path):
    with ServerProcess(manifest.get(server_id), cpus=None, log_dir=tmp_path) as srv:
        srv.verify()
        assert call("127.0.0.1", srv.port, server_id) == ANSWERS[protocol(server_id)[1]]
    assert srv.exit_code == 0, srv.stderr_tail()


@pytest.mark.parametrize("server_id", PROVIDERS)
def test_every_http_provider_passes_the_battery_on_its_route(built, server_id, tmp_path):
    with ServerProcess(manifest.get(server_id), cpus=None, log_dir=tmp_path) as srv:
        srv.verify()
        verdicts = run_battery("127.0.0.1", srv.port, route=manifest.get(server_id).route)
    assert {v.case: v.detail for v in verdicts if not v.passed} == {}, srv.stderr_tail()
    assert srv.exit_code == 0


def test_an_exercise_cell_loads_a_provider_on_its_route(built):
    # lab.closed_loop GETs the path it is given: the provider's route answers, "/" (no call named) does not
    from iobench.book import lab
    with lab.server("rpc-netty") as srv:
        on_route = lab.closed_loop(srv.port, connections=4, seconds=2, path=manifest.RPC_ROUTE.path)
        no_call = lab.closed_loop(srv.port, connections=4, seconds=0.5)
    assert on_route["ok"] > 10 and on_route["non2xx"] == 0  # a cold JVM: few, but every one answered
    assert no_call["ok"] == 0 and no_call["non2xx"] > 0


def test_the_write_ups_consumer_calls_the_provider_and_fails_clearly_without_one(built, tmp_path):
    with ServerProcess(manifest.get("rpc-netty"), cpus=None, log_dir=tmp_path) as provider:
        call("127.0.0.1", provider.port, "rpc-netty")  # a cold JVM's first call can take longer than 200 ms
        opts = ServerOptions(extra=("--provider", provider.url))
        with ServerProcess(manifest.get("rpc-consumer"), opts, cpus=None, log_dir=tmp_path) as consumer:
            resp = http.get("127.0.0.1", consumer.port, "/?id=5")
            assert resp.status == 200 and json.loads(resp.body) == {"id": 5, "name": "user-5"}
            provider.stop()  # the provider gone: after its retries the consumer answers 502, and lives on
            assert http.get("127.0.0.1", consumer.port, "/?id=5", timeout=10).status == 502
    assert consumer.exit_code == 0, consumer.stderr_tail()


@pytest.mark.live  # a minute: make test-live (make test runs an RPC plan end to end in the keep-alive test below)
def test_a_brief_run_accounts_for_every_request_and_leaves_a_flame_graph(built, tmp_path):
    plan = RPC_PROVIDER.only(("rpc-netty", "rpc-netty-frame-binary"))
    path = runner.run(registry.experiment(plan, with_battery=False), "smoke", dest=tmp_path / "rpc",
                      progress=lambda m: None)
    rows = list(csv.DictReader(open(path / "results.csv")))
    assert {r["experiment"] for r in rows} == {p.experiment for p in RPC_PROVIDER.smoke_points}
    assert [r["window"] for r in rows if r["experiment"] == "warmup"] == ["1"]  # rpc-netty's first window
    for r in rows:
        assert r["ok_run"] == "True", r
        if r["tool"] == "openloop":
            assert sum(int(r[k]) for k in OUTCOMES) == int(r["offered"]), r
    via = [r for r in rows if r["via"]]
    assert via and all(float(r["consumer_cpu_s"]) > 0 for r in via)
    frame = [r for r in rows if r["server"] == "rpc-netty-frame-binary"]
    assert frame and all(r["transport"] == "frame" and r["codec"] == "binary" for r in frame)
    assert (path / "raw" / "requests" / "findById-binary.bin").read_bytes() == CALLS["binary"]
    for sid in ("rpc-netty", "rpc-netty-frame-binary"):
        flame = path / "flame" / f"{sid}-flame.html"
        assert flame.exists() and b"<html" in flame.read_bytes()[:2000].lower()
        assert not (path / "flame" / f"{sid}.collapsed").exists()  # kept gzipped only
        stacks = flames.read(path / "flame" / f"{sid}.collapsed.gz").splitlines()
        assert stacks and all(line.rsplit(" ", 1)[1].isdigit() for line in stacks)  # "frame;frame;... count"
    meta = json.loads((path / "meta.json").read_text())
    assert any(s["server"] == "rpc-consumer" and s["exit_code"] == 0 for s in meta["stops"])
    ds = load(path)
    assert not ds.summary().empty
    reads_like_the_book(ds, "rpc-provider")
    reads_as_prose(rpc_page.provider(ds))  # the chapter reads a smoke capture, however little it measured
    verdicts = {"rpc-netty": [{"case": "http10_get", "passed": True}]}  # the battery's file, as finish() writes it
    (path / "battery.json").write_text(json.dumps(verdicts))
    assert load(path).battery == verdicts


@pytest.mark.live  # a measuring smoke run: make test-live (make test stays within 35 minutes)
def test_keep_alive_turns_open_a_connection_every_100_calls_where_asked_and_never_where_not(built, tmp_path):
    """rpc-keepalive: in one process a window that never closes, then one whose 100th call on each connection
    asks to close, in the closed loop and in the open loop at each of its two rates; then the provider told to
    close every 100 itself. The generator's own count of the
    connections it opened (kept in the raw output) is the proof: 10, or one per 100 calls."""
    path = runner.run(registry.experiment(RPC_KEEPALIVE, with_battery=False), "smoke", dest=tmp_path / "ka",
                      progress=lambda m: None)
    rows = list(csv.DictReader(open(path / "results.csv")))
    assert [(r["loop"], r["rate"], r["close_every"], r["keep_alive_requests"]) for r in rows] == [
        ("closed", "0", "0", "0"), ("closed", "0", "100", "0"),  # a turn of the closed loop's,
        ("open", "2000", "0", "0"), ("open", "2000", "100", "0"),  # one at each of the open loop's rates,
        ("open", "5000", "0", "0"), ("open", "5000", "100", "0"), ("closed", "0", "0", "100")]  # then told
    for r in rows:
        assert r["ok_run"] == "True" and int(r["ok"]) > 0, r
        raw = (path / r["raw_file"]).read_text()
        line = next(ln for ln in raw.splitlines() if ln.startswith("OPENLOOP {"))
        d = json.loads(line[len("OPENLOOP "):])
        assert ("--close-every 100" in raw.splitlines()[0]) == (r["close_every"] == "100") and d["resets"] == 0
        if r["close_every"] == "0" and r["keep_alive_requests"] == "0":
            assert d["connects"] == 10, d["connects"]
        else:  # whoever closes, a connection carries 100 calls: one connect per 100, up to ten of them cut short
            assert d["ok"] // 100 <= d["connects"] <= d["ok"] / 100 + 11, (d["connects"], d["ok"])
    assert not (path / "flame").exists()  # this plan draws no flame graph
    ds = load(path)
    assert set(ds.summary().close_every) == {0, 100}
    reads_like_the_book(ds, "rpc-keepalive")
    reads_as_prose(rpc_page.keepalive_turns(ds))  # the chapter reads a smoke capture, however little it measured
    # every run: its CPU split, and the safepoints that ended in its window, counted from the JVM's own log
    for r in rows:
        assert float(r["server_user_s"]) + float(r["server_sys_s"]) == pytest.approx(float(r["server_cpu_s"]),
                                                                                    rel=0.1, abs=0.05), r
        assert float(r["server_sys_s"]) >= 0 and float(r["server_softirq_s"]) >= 0
        assert float(r["server_steal_s"]) >= 0 and float(r["client_steal_s"]) >= 0
        log = path / r["jvm_log_file"]
        safepoints = jvmlog.parse(log.read_text())
        assert any(s.gc for s in safepoints)  # the JVM's warm-up alone allocates enough for a young collection
        assert 0 <= int(r["jvm_gc_pauses"]) <= int(r["jvm_safepoints"]) <= len(safepoints)
    assert len({r["jvm_log_file"] for r in rows}) == 2  # one log per process: the turns share one
    # cgroup v1 splits CPU time by clock tick (1/100 s): one short smoke window can see no tick in the kernel
    # (CI on 2026-11-27 read 0.0 for one of seven), but seven windows of reads and writes cannot all miss
    assert sum(float(r["server_sys_s"]) for r in rows) > 0


def test_a_flame_graph_s_samples_go_to_the_library_that_spent_them(tmp_path):
    folded = tmp_path / "rpc-x.collapsed"
    folded.write_text("\n".join([
        # Spring calling the JDK: Spring's; Jackson under Spring: Jackson's (innermost library wins)
        "java/lang/Thread.run;org/springframework/web/A.b;java/util/concurrent/ConcurrentHashMap.get 5",
        "java/lang/Thread.run;org/springframework/web/A.b;tools/jackson/databind/C.d;java/lang/String.equals 3",
        # a system call from Netty's event loop: the kernel's
        "java/lang/Thread.run;io/netty/channel/nio/NioIoHandler.run;sun/nio/ch/IOUtil.write;tcp_sendmsg_[k] 4",
        # the JVM's own threads
        "thread_native_entry;CompileBroker::compiler_thread_loop;C2Compiler::compile_method 7",
        "thread_native_entry;WorkerThread::run;G1ParScanThreadState::trim_queue 2",
        "thread_native_entry;VMThread::run 1",
        "java/lang/Thread.run;java/util/concurrent/ThreadPoolExecutor.runWorker 1",  # no library: the JDK's
        "garbage line without a count",
    ]) + "\n")
    s = flames.shares(folded)
    assert s.to_dict() == {"kernel": 4, "JSON (Jackson)": 3, "Spring": 5, "Tomcat": 0, "Reactor": 0, "Netty": 0,
                           "OkHttp": 0, "RPC code": 0, "JDK": 1, "JIT compiler": 7, "GC": 2, "JVM": 1}
    t = flames.table(tmp_path)
    assert t.loc["rpc-x", "samples"] == 23 and abs(t.loc["rpc-x", list(flames.SHARES)].sum() - 100) < 1e-9
    # the same stacks gzipped, as rpcrun keeps them, count the same under their server's name
    (tmp_path / "rpc-y.collapsed.gz").write_bytes(gzip.compress(folded.read_bytes()))
    t = flames.table(tmp_path)
    assert list(t.index) == ["rpc-x", "rpc-y"] and (t.loc["rpc-x"] == t.loc["rpc-y"]).all()


def test_a_flame_graph_draws_each_frame_as_wide_as_its_samples_above_its_caller(tmp_path):
    folded = tmp_path / "rpc-x.collapsed.gz"
    folded.write_bytes(gzip.compress("\n".join([
        "java/lang/Thread.run;org/springframework/web/A.b;tools/jackson/databind/C$$Lambda.d 3",
        "java/lang/Thread.run;org/springframework/web/A.b;sun/nio/ch/IOUtil.write;tcp_sendmsg_[k] 5",
        "java/lang/Thread.run;io/netty/X.y 1",
        "thread_native_entry;VMThread::run 1",
    ]).encode()))
    got = {(f, round(x, 6), d, round(w, 6)) for x, d, w, f in flames.boxes(folded, min_share=0.15)}
    # siblings in alphabetical order; Netty's and the VM thread's 10 % are under 15 %: left out, their place kept
    assert got == {
        ("java/lang/Thread.run", 0.0, 0, 0.9),
        ("org/springframework/web/A.b", 0.1, 1, 0.8),  # after io/netty/X.y's 0.1
        ("sun/nio/ch/IOUtil.write", 0.1, 2, 0.5),  # "sun/..." sorts before "tools/..."
        ("tcp_sendmsg_[k]", 0.1, 3, 0.5),
        ("tools/jackson/databind/C$$Lambda.d", 0.6, 2, 0.3),
    }
    assert [flames.frame_kind(f) for f in ("tcp_sendmsg_[k]", "tools/jackson/databind/C.d", "java/lang/Thread.run",
                                           "VMThread::run", "io/netty/X.y")] == \
        ["kernel", "JSON (Jackson)", "JDK", "native (JVM, libc)", "Netty"]
    fig = flames.figure(tmp_path, ("rpc-x",))
    ax = fig.axes[0]
    assert len(ax.patches) == len(flames.boxes(folded)) == 8 and ax.get_ylim() == (0, 4)
    fig.savefig(io.BytesIO(), format="png")  # a lambda's "$$" in a named frame draws as text, not as TeX
    with pytest.raises(FileNotFoundError, match="rpc-y"):
        flames.figure(tmp_path, ("rpc-x", "rpc-y"))
