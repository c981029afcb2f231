"""The servers whose wait is a real database (role "db"): TechEmpower's routes answered from the rows the database
holds, a database that is down or silent answered 503 and never a hang, and the server's database gone with it.

The C servers' contract (GET /, the battery, a stop with open connections, in both builds) is test_contract.py's;
the Java servers' battery is here. Tests that leave the database running share one for the module (a start of each
costs a second); those that stop it or silence it start the server with a database of its own."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from iobench.run import procs
from iobench.run.lifecycle import ServerProcess
from iobench.servers import http
from iobench.servers.manifest import CODE, JAVA_DB_SERVERS, ServerOptions, get, ids

C_IDS = ids("C", role="db")
JAVA_IDS = tuple(s[0] for s in JAVA_DB_SERVERS)  # the pinning study's variants of java-db-tomcat-vt have tests below
DB_IDS = C_IDS + JAVA_IDS
EVENT_LOOPS = ("c-db-epoll", "java-db-webflux", "java-db-vertx")
POOLED = ("java-db-tomcat", "java-db-tomcat-vt", "java-db-webflux")  # a request waits for a connection of its own


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)
    subprocess.run(["make", "-s", "-C", str(CODE), "rpc"], check=True)


@pytest.fixture(scope="module")
def shared():
    """One database for the tests that leave it running."""
    from iobench.run.postgres import Postgres
    with Postgres() as db:
        yield db


def serve(server_id: str, tmp_path, cpus: str | None = None, **opts) -> ServerProcess:
    return ServerProcess(get(server_id), ServerOptions(**opts), cpus=cpus, log_dir=tmp_path)


@contextlib.contextmanager
def silenced(db):
    """The database silent: every process of it stopped (SIGSTOP), its sockets open; going on again on the way out."""
    pids = db.pids()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def rows(srv: ServerProcess, target: str, timeout: float = 10) -> list[dict]:
    resp = http.get("127.0.0.1", srv.port, target, timeout=timeout)
    assert resp.status == 200 and resp.header("content-type") == "application/json", resp.raw[:200]
    assert int(resp.header("content-length")) == len(resp.body)
    got = json.loads(resp.body)
    return got if isinstance(got, list) else [got]


def held(db, row: dict) -> bool:
    return db.query(f"SELECT randomnumber FROM world WHERE id = {int(row['id'])}") == str(row["randomNumber"])


@pytest.mark.parametrize("server_id", DB_IDS)
def test_techempower_s_routes_answer_the_rows_the_database_holds(server_id, tmp_path, shared):
    """The rows the table holds, by TechEmpower's rules, with the server's own counts; a Java server passes the
    battery too (the C servers' battery is test_contract.py's, in both builds)."""
    from iobench.kinds.db.experiment import read_stats
    with serve(server_id, tmp_path, pool=4, db=shared.dsn) as srv:
        before = read_stats(srv.port)
        one = rows(srv, "/db")
        assert len(one) == 1 and held(shared, one[0]) and set(one[0]) == {"id", "randomNumber"}
        twenty = rows(srv, "/queries?queries=20")
        assert len(twenty) == 20 and all(held(shared, r) for r in twenty)
        assert len({r["id"] for r in twenty}) > 1  # random ids, not one row twenty times
        # TechEmpower's rule for the count: below 1 or not a number is 1, above 500 is 500
        # one rule in every server: the last queries= counts, read as sent (not percent-decoded); not a number is 1
        for target, n in (("/queries?queries=0", 1), ("/queries?queries=abc", 1), ("/queries?queries=7x", 1),
                          ("/queries", 1), ("/queries?other=3&queries=3", 3), ("/queries?queries=100000", 500),
                          ("/queries?queries=5&queries=7", 7), ("/queries?queries=5&queries=", 1),
                          ("/queries?queries=%32%30", 1), ("/queries?queries=5010x", 1), ("/queries?", 1)):
            assert len(rows(srv, target)) == n, target
        assert len(rows(srv, "/db?x=1")) == 1  # routed on the path
        assert http.get("127.0.0.1", srv.port, "/").body == http.BODY  # the contract's route is unchanged
        # GET /db-stats counted the requests that asked the database (not itself, not GET /), and a wait for a
        # connection only where a request takes one of its own (HikariCP, r2dbc-pool)
        after = read_stats(srv.port)
        assert after["requests"] - before["requests"] == 14 and after["query_ns"] > before["query_ns"]
        assert ("wait_ns" in after) == (server_id in POOLED), after
        if server_id in JAVA_IDS:  # the C servers' battery is test_contract.py's, in both builds
            from iobench.servers.battery import run_battery
            failed = [(v.case, v.detail) for v in run_battery("127.0.0.1", srv.port)
                      if not (v.passed and v.alive_after)]
            assert failed == []
            assert srv.proc.poll() is None
    assert srv.exit_code == 0


def server_backends(db) -> set[int]:
    """The database's backends serving clients on loopback (the servers; the harness's psql comes by socket)."""
    return {int(p) for p in db.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
                                     "AND client_addr IS NOT NULL").split()}


@pytest.mark.parametrize("server_id", JAVA_IDS)
def test_a_java_server_s_pool_is_resized_in_place_and_the_old_one_closed(server_id, tmp_path, shared):
    """GET /db-pool?size=N, as the harness sweeps a pool in one warm process: the new pool serves and the old one's
    connections close; a size that is not from 1 to 10,000 is a 400 and changes nothing."""
    from iobench.kinds.db.experiment import resize
    # one core: Vert.x holds its pool per event loop, and has one loop per core
    with serve(server_id, tmp_path, cpus="0", db=shared.dsn, extra=("--db-pool", "12")) as srv:
        rows(srv, "/queries?queries=20")
        old = server_backends(shared)
        assert len(old) == 12  # every connection of the pool open before it is used
        resize(srv, 3)
        for _ in range(5):
            assert len(rows(srv, "/queries?queries=20")) == 20
        deadline = time.monotonic() + 10
        while (server_backends(shared) & old) or len(server_backends(shared)) != 3:
            assert time.monotonic() < deadline, (old, server_backends(shared))
            time.sleep(0.1)
        for bad in ("0", "10001", "x", ""):
            assert http.get("127.0.0.1", srv.port, f"/db-pool?size={bad}").status == 400, bad
        assert len(rows(srv, "/queries?queries=20")) == 20


@pytest.mark.parametrize("server_id", DB_IDS)
def test_a_database_that_is_down_or_silent_is_a_503_never_a_hang_and_the_server_lives_on(server_id, tmp_path):
    with serve(server_id, tmp_path, pool=2) as srv:
        db = srv.database
        with silenced(db):
            t0 = time.monotonic()
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                s.sendall(http.request_bytes("/db"))
                resp = http.read_response(s, bytearray(), time.monotonic() + 10)
                waited = time.monotonic() - t0
                assert resp.status == 503 and resp.header("connection") == "close"
                assert s.recv(1) == b""  # then the connection closes
            assert 1.5 < waited < 5  # the server's 2-s deadline on a query, not the client's patience
        assert rows(srv, "/db")  # back: the worker connected again
        db.stop()  # down: gone altogether
        t0 = time.monotonic()
        assert http.get("127.0.0.1", srv.port, "/db", timeout=10).status == 503
        assert time.monotonic() - t0 < 3  # at most the 2 s a pool waits for a connection that cannot come
        assert http.get("127.0.0.1", srv.port, "/").status == 200  # the server itself still answers
        assert srv.proc.poll() is None
    assert "database:" in srv.stderr_tail()  # and it said why, in libpq's words


# the pinning study's servers: does a virtual thread blocked in a query hold its carrier?
PINNING = {"java-db-tomcat-vt-21": False, "java-db-tomcat-vt-21-pg425": True, "java-db-tomcat-vt-pg425": False}


@pytest.mark.parametrize("server_id, pins", PINNING.items())
def test_a_query_pins_its_carrier_only_on_jdk_21_inside_pgjdbc_42_5(server_id, pins, tmp_path):
    """With one carrier (as on one core), a virtual thread pinned by a query holds up every other. With the database
    silent, a /db request's virtual thread
    waits in its query; a GET / beside it is answered at once where that thread unmounted (pgjdbc 42.7 waits on a
    ReentrantLock; JDK 25 unmounts inside synchronized too, JEP 491), and only after the query's 2-s timeout where it
    stayed pinned (JDK 21, pgjdbc 42.5's synchronized query path), which JDK 21 reports (jdk.tracePinnedThreads)."""
    out = subprocess.run([str(get(server_id).argv(ServerOptions(), tmp_path)[0]), "-version"], capture_output=True,
                         text=True).stderr
    assert ('version "21.' in out) == server_id.startswith("java-db-tomcat-vt-21"), out
    # one carrier, as on one core (the scheduler's parallelism), without slowing the JVM's start to one core
    one_carrier = ("-Djdk.virtualThreadScheduler.parallelism=1", "-Djdk.tracePinnedThreads=short")
    with serve(server_id, tmp_path, jvm=one_carrier) as srv:
        assert len(rows(srv, "/queries?queries=5")) == 5
        assert http.get("127.0.0.1", srv.port, "/", timeout=10).body == http.BODY  # warm: its first GET / is slow
        with silenced(srv.database), socket.create_connection(("127.0.0.1", srv.port), timeout=10) as waiting:
            waiting.sendall(http.request_bytes("/db"))
            time.sleep(0.5)  # its query sent, and waiting
            t0 = time.monotonic()
            assert http.get("127.0.0.1", srv.port, "/", timeout=10).body == http.BODY
            waited = time.monotonic() - t0
            assert http.read_response(waiting, bytearray(), time.monotonic() + 10).status == 503
        assert (waited > 1.0) == pins, waited
        time.sleep(0.2)
        traced = srv.stdout_tail()
    assert (b"QueryExecutorImpl" in traced) == pins, traced[-2000:]


@pytest.mark.parametrize("server_id", C_IDS + ("java-db-vertx",))  # the harness's code, one JVM enough
def test_the_server_s_database_goes_with_it(server_id, tmp_path):
    with serve(server_id, tmp_path) as srv:
        db = srv.database
        folder, pids = db.folder, db.pids() + [srv.pid]
        assert srv.argv[-2:] == ["--db", db.dsn] and db.cpus is None
    assert not folder.exists()
    deadline = time.monotonic() + 10
    while any(procs.live_group_states(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if os.path.exists(f"/proc/{p}") and procs.stat_fields(p)[0] != b"Z"]


@pytest.mark.parametrize("server_id", DB_IDS)
def test_without_a_database_it_refuses_to_start(server_id, tmp_path):
    argv = get(server_id).argv(ServerOptions(), tmp_path)  # the contract's flags, no --db
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "--db DSN is required" in out.stderr
    if server_id in JAVA_IDS:  # the Java drivers speak TCP only: a socket folder is refused, with the reason
        out = subprocess.run(argv + ["--db", "host=/tmp port=5432"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 1 and "over TCP only" in out.stderr
        out = subprocess.run(argv + ["--db", "127.0.0.1:5432"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 1 and "keyword=value" in out.stderr


def test_a_server_without_a_database_refuses_db():
    out = subprocess.run([str(CODE / "c" / "build" / "c-threadpool"), "--db", "host=/tmp"], capture_output=True,
                         text=True, timeout=10)
    assert out.returncode == 1 and "usage:" in out.stderr  # a server that would ignore it refuses it


def test_a_database_that_cannot_start_stops_the_server_s_start_with_its_words(tmp_path, monkeypatch):
    from iobench.run import postgres
    monkeypatch.setattr(postgres, "SETTINGS", {**postgres.SETTINGS, "shared_buffers": "not-a-size"})
    before = set(Path("/tmp").glob(postgres.PREFIX + "*"))
    srv = serve(DB_IDS[0], tmp_path)
    with pytest.raises(postgres.DatabaseError, match="shared_buffers"):
        with srv:
            pass
    assert srv.proc is None and srv.database is None  # the server never started; nothing of either is left
    assert set(Path("/tmp").glob(postgres.PREFIX + "*")) <= before


def test_the_server_s_counts_become_per_request_columns_and_nothing_when_missing_or_idle():
    from iobench.kinds.db.experiment import stats_columns
    before = {"requests": 10, "wait_ns": 1_000, "query_ns": 5_000}
    assert stats_columns({**before, "held": 0}, {"requests": 14, "wait_ns": 9_000, "query_ns": 45_000, "held": 3}) == {
        "db_requests": 4, "db_wait_us": 2.0, "db_query_us": 10.0, "db_held": 0}
    # no wait where the server has none to count; nothing per request when nothing ran; nothing without a reading
    assert stats_columns({"requests": 1, "query_ns": 0}, {"requests": 3, "query_ns": 4_000}) == {
        "db_requests": 2, "db_wait_us": None, "db_query_us": 2.0, "db_held": None}
    assert stats_columns(before, before) == {"db_requests": 0, "db_wait_us": None, "db_query_us": None,
                                             "db_held": None}
    assert stats_columns(None, before) == {"db_requests": None, "db_wait_us": None, "db_query_us": None,
                                           "db_held": None}


def world(db) -> dict[int, int]:
    """The whole table, as the database holds it."""
    return {int(i): int(v) for i, v in (line.split("|") for line in
                                        db.query("SELECT id, randomnumber FROM world").splitlines())}


@pytest.mark.parametrize("server_id", DB_IDS)
def test_many_clients_at_once_each_get_their_own_rows(server_id, tmp_path, shared):
    """Forty clients, each asking twenty rows five times at once: every row is the one the table holds for its id (a
    loop that matched answers to the wrong request, or a pool that mixed two workers' rows, would say otherwise)."""
    import concurrent.futures
    table = world(shared)
    with serve(server_id, tmp_path, pool=4, db=shared.dsn) as srv:

        def client(_):
            got = []
            with socket.create_connection(("127.0.0.1", srv.port), timeout=20) as s:
                buf = bytearray()
                for _ in range(5):
                    s.sendall(http.request_bytes("/queries?queries=20"))
                    got += json.loads(http.read_response(s, buf, time.monotonic() + 20).body)
            return got

        with concurrent.futures.ThreadPoolExecutor(40) as pool:
            rows_seen = [r for got in pool.map(client, range(40)) for r in got]
    assert len(rows_seen) == 40 * 5 * 20
    assert [r for r in rows_seen if table[r["id"]] != r["randomNumber"]] == []


@pytest.mark.parametrize("server_id", EVENT_LOOPS)
def test_the_event_loop_serves_others_while_a_query_waits(server_id, tmp_path):
    """With the database silent, a /db request waits (then a 503), and meanwhile the server answers GET / at once:
    nothing in its loops blocks on the database."""
    with serve(server_id, tmp_path) as srv:
        assert http.get("127.0.0.1", srv.port, "/", timeout=5).body == http.BODY  # warm: its first request is slow
        with silenced(srv.database), socket.create_connection(("127.0.0.1", srv.port), timeout=10) as waiting:
            waiting.sendall(http.request_bytes("/db"))
            t0 = time.monotonic()
            assert http.get("127.0.0.1", srv.port, "/", timeout=5).body == http.BODY
            assert time.monotonic() - t0 < 1.5  # well before the query's 2-s timeout
            assert http.read_response(waiting, bytearray(), time.monotonic() + 10).status == 503
        deadline = time.monotonic() + 10  # a failed pipe connects again (once a second at most) when asked
        while http.get("127.0.0.1", srv.port, "/db", timeout=10).status != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def test_a_loop_busy_for_longer_than_the_deadline_reads_the_answers_before_it_calls_its_database_silent(tmp_path):
    """c-db-epoll: a request's rows go out, then the loop spins for 3 s on six requests of CPU work (--spin-us) and
    reads nothing meanwhile (a loop busy sending thousands of queries under a sanitizer once did the same). The
    answers came long before and wait on the socket: the rows are answered, not failed
    as "no answer within 2000 ms" because the loop had not looked."""
    with serve("c-db-epoll", tmp_path, spin_us=500_000) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as first, \
                socket.create_connection(("127.0.0.1", srv.port), timeout=10) as waiting, \
                socket.create_connection(("127.0.0.1", srv.port), timeout=10) as busy:
            # while the loop spins on a first request, the rows' request and six more of CPU work arrive, so that the
            # loop takes them in one batch: it sends the rows' queries, then spins 3 s before it looks again
            first.sendall(http.request_bytes("/"))
            time.sleep(0.2)
            waiting.sendall(http.request_bytes("/queries?queries=20"))
            time.sleep(0.05)
            busy.sendall(http.request_bytes("/") * 6)
            resp = http.read_response(waiting, bytearray(), time.monotonic() + 20)
            assert resp.status == 200 and len(json.loads(resp.body)) == 20, resp.raw[:200]


@pytest.mark.parametrize("server_id", ("c-db-epoll", "java-db-vertx"))
def test_pipes_cut_under_requests_answer_every_request_and_connect_again(server_id, tmp_path):
    """The database ends every connection of the server's while requests of twenty rows keep coming: each request
    is answered (its rows, or a 503), none hangs (a row counted twice, as failed when its flush failed and again by
    its pipe, once left a request unanswered for good); then the pipes connect again."""
    import concurrent.futures
    cut = ("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
           "WHERE backend_type = 'client backend' AND client_addr IS NOT NULL")
    with serve(server_id, tmp_path) as srv:
        def ask(_):
            return http.get("127.0.0.1", srv.port, "/queries?queries=20", timeout=10).status
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for _ in range(5):
                waiting = [pool.submit(ask, i) for i in range(16)]
                srv.database.query(cut)
                waiting += [pool.submit(ask, i) for i in range(16)]
                assert {f.result() for f in waiting} <= {200, 503}
        deadline = time.monotonic() + 10  # a cut pipe connects again (once a second at most) when asked
        while ask(0) != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)


@pytest.mark.parametrize("server_id", C_IDS)
def test_clients_that_leave_or_a_stop_while_rows_are_in_flight_leave_nothing_behind(server_id, tmp_path):
    """Sanitizer build: 200 clients ask 500 rows each and close at once; the server goes on answering. Then, with the
    database silent, clients wait on their rows and the server is stopped (c-db-epoll keeps such a connection until
    its queries are done with, then frees it as it exits): exit 0 and no sanitizer report."""
    import dataclasses
    from iobench.servers.manifest import C_BUILD, contract_argv
    entry = dataclasses.replace(get(server_id), argv=contract_argv(C_BUILD / "asan" / server_id))
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), f"build/asan/{server_id}"], check=True)
    srv = ServerProcess(entry, ServerOptions(pool=2), cpus=None, log_dir=tmp_path)
    with srv:
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                s.sendall(http.request_bytes("/queries?queries=100"))
        assert len(rows(srv, "/queries?queries=500", timeout=60)) == 500
        with silenced(srv.database), contextlib.ExitStack() as open_:
            waiting = [open_.enter_context(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
                       for _ in range(2)]
            for s in waiting:
                s.sendall(http.request_bytes("/queries?queries=500"))
            time.sleep(0.3)  # sent, and waiting on the silent database
            os.kill(srv.pid, signal.SIGTERM)  # the server alone: its database stays, stopped, until it has exited
            srv.proc.wait(20)
    log = srv.log_path.read_text(errors="replace")
    assert srv.exit_code == 0 and "Sanitizer" not in log and "runtime error" not in log, log[-3000:]


def test_a_smoke_capture_measures_each_server_on_each_route_with_its_database_beside_it(tmp_path):
    """db-models under the smoke profile: a row per server, route and pool, each with the database's CPU per request
    and memory beside the server's and the server's own counts, the pool each ran with (the Java server's resized in
    its one process, each C server started again for the other size), the database's settings and placement in the
    metadata, the battery on GET /; read back as the kind's dataset, whose chapter's sentences read as prose; no
    database left behind."""
    import csv
    from iobench import registry
    from iobench.run import postgres, runner
    before = set(Path("/tmp").glob(postgres.PREFIX + "*"))
    servers = ("java-db-tomcat", "c-db-epoll")  # a pool resized in place, a server started again per size
    path = runner.run(registry.experiment("db-models", servers=servers), "smoke", dest=tmp_path / "db",
                      progress=lambda m: None)
    rows = list(csv.DictReader(open(path / "results.csv")))
    queries = "/queries?queries=20"
    assert sorted((r["server"], r["path"], r["db_pool"]) for r in rows) == sorted(
        [(s, p, pool) for s, pool in (("java-db-tomcat", "16"), ("c-db-epoll", "2"))
         for p in ("/db", queries)] + [(s, queries, "4") for s in servers])
    for r in rows:
        assert r["ok"] == "True" and int(r["requests"]) > 0 and int(r["non2xx"] or 0) == 0, r
        assert float(r["db_cpu_us_per_req"]) > 0 and float(r["db_pss_kib"]) > 0, r
        # the server's own counts over the measured run: every request it was sent asked the database
        assert int(r["db_requests"]) >= int(r["requests"]) and float(r["db_query_us"]) > 0, r
        assert (r["db_wait_us"] != "") == (r["server"] in POOLED), r
        assert r["db_held"] == ("0" if r["server"] in POOLED else ""), r  # no connection held between points
        command = (path / r["raw_file"]).read_text().splitlines()[0]
        assert command.endswith(r["path"]) and f"-pool{r['db_pool']}" in r["raw_file"], (command, r["raw_file"])
        # twenty rows of JSON (at least 26 bytes each) in a /queries answer, one in a /db answer
        per_answer = int(r["bytes"]) / int(r["requests"])
        assert per_answer > 20 * 26 if r["path"].startswith("/queries") else per_answer < 20 * 26, per_answer
    assert len({r["raw_file"] for r in rows}) == len(rows)  # each point's raw output of its own
    # the JVM warmed up under its first point's load before it was measured, its windows kept; the C servers did not
    warmed = {p.parent.name for p in (path / "raw").glob("*/jvm-warmup-*-w1.txt")}
    assert warmed == {"java-db-tomcat"}, warmed
    meta = json.loads((path / "meta.json").read_text())
    assert sorted((s["server"], s["db_pool"], s.get("db_pools")) for s in meta["stops"]) == [
        ("c-db-epoll", 2, None), ("c-db-epoll", 4, None), ("java-db-tomcat", 16, [16, 4])]
    assert meta["database"]["settings"]["fsync"] == "off" and "PostgreSQL" in meta["database"]["engine"]
    assert meta["database"]["cpus"] == meta["pinning"]["server_cpus"]
    assert meta["plan"]["jvm_warmup_s"] == {"java-db-tomcat": 0.5}  # the smoke profile's cap
    battery = json.loads((path / "battery.json").read_text())
    assert {sid: all(v["passed"] for v in vs) for sid, vs in battery.items()} == {s: True for s in servers}
    captured = registry.reader("db-models")(path)
    summary = captured.summary()
    assert len(summary) == 6 and set(summary["path"]) == {"/db", "/queries?queries=20"}
    assert summary["db_cpu_us_per_req"].notna().all()
    # the chapter's prose from a smoke capture: every sentence reads, none of its claims is checked
    from conftest import reads_as_prose
    from iobench.book.pages import database
    reads_as_prose(database.chapter(captured))
    assert set(Path("/tmp").glob(postgres.PREFIX + "*")) <= before


def test_the_full_plan_measures_each_server_route_load_and_pool_once():
    """The pool sweep's size that is a server's own (16, or 2) is its connection sweep's point already: measured
    once, not twice under one name; a Java server serves every point in one process, the C servers one per size."""
    from types import SimpleNamespace
    from iobench.kinds.db.experiment import DbExperiment
    from iobench.kinds.db.plans import DB_MODELS, IN_PLACE
    from iobench.run.profiles import PROFILES
    ex = DbExperiment(DB_MODELS)
    run = SimpleNamespace(profile=PROFILES["full"])
    turns = list(ex.turns(run, DB_MODELS.points, 1))
    for server in DB_MODELS.servers:
        mine = [t for t in turns if t.server.id == server]
        measured = [(p.path, p.connections, ex.pool_of(server, p)) for t in mine for p in t.points]
        assert len(measured) == len(set(measured)) == 8 + 2 * 5, (server, measured)
        assert len(mine) == (1 if server in IN_PLACE else 6), server



# ---- the open loop (plans.DB_OPENLOOP) ----------------------------------------------------------------------

def test_an_open_point_is_a_fraction_of_a_closed_one_measured_before_it():
    """An open point names its fraction and the book's generator (the only one that keeps a schedule); a plan whose open
    point has no closed one before it on the same route, pool and connections is refused before anything runs."""
    from iobench.kinds.db.experiment import DbExperiment
    from iobench.kinds.db.plans import DB_OPENLOOP, DbPoint
    for bad in (dict(tool="openloop", loop="open"), dict(tool="wrk", loop="open", fraction=0.5),
                dict(tool="wrk", fraction=0.5), dict(tool="openloop", loop="half", fraction=0.5)):
        with pytest.raises(ValueError, match="open"):
            DbPoint(bad.pop("tool"), 16, True, path="/db", **bad)
    import dataclasses
    orphan = dataclasses.replace(DB_OPENLOOP, points=DB_OPENLOOP.points[1:])  # its closed point left out
    with pytest.raises(ValueError, match="needs a closed one before it"):
        DbExperiment(orphan)
    other = dataclasses.replace(DB_OPENLOOP, points=(DbPoint("wrk", 64, True, path="/db"),) + DB_OPENLOOP.points[1:])
    with pytest.raises(ValueError, match="needs a closed one before it"):
        DbExperiment(other)


def test_the_open_plan_measures_each_server_s_capacity_then_every_fraction_once_in_one_process():
    from types import SimpleNamespace
    from iobench.kinds.db.experiment import DbExperiment
    from iobench.kinds.db.plans import DB_OPENLOOP
    from iobench.run.profiles import PROFILES
    ex = DbExperiment(DB_OPENLOOP)
    turns = list(ex.turns(SimpleNamespace(profile=PROFILES["full"]), DB_OPENLOOP.points, 1))
    assert [t.server.id for t in turns] == list(DB_OPENLOOP.servers)  # one process each: the JVM warms up once
    for t in turns:
        assert [(p.loop, p.fraction) for p in t.points] == [("closed", 0.0)] + [
            ("open", f) for f in (0.1, 0.5, 0.8, 1.0, 1.2, 1.5)]
        assert {p.connections for p in t.points} == {256} and {p.path for p in t.points} == {"/queries?queries=20"}


def test_an_open_point_without_a_capacity_is_not_measured_and_says_why():
    """Its closed point answered no 200 (a failed run): nothing is run, the row says why."""
    from types import SimpleNamespace
    from iobench.kinds.db.experiment import DbExperiment
    from iobench.kinds.db.plans import DB_OPENLOOP
    ex = DbExperiment(DB_OPENLOOP)
    at = SimpleNamespace(srv=SimpleNamespace(server=get("c-db-epoll")), repeat=1)
    row = ex.measure(None, at, DB_OPENLOOP.points[2])
    assert row["ok"] is False and "no capacity" in row["failure"] and row["fraction"] == 0.5 and row["db_pool"] == 2


def test_answers_with_rows_per_second_count_the_503s_once_for_either_generator():
    """wrk's rate and requests count every response, 503s included; the open loop's count its 200s, beside its
    non2xx: the same 90 answers with rows and 10 503s a second read 90 and 10 % from both."""
    import pandas as pd
    from iobench.kinds.db.dataset import SUMMARY
    d = pd.DataFrame({"tool": ["wrk", "openloop"], "rps": [100.0, 90.0], "requests": [1000, 900],
                      "non2xx": [100, 100], "server_vcsw": [0, 0], "server_ivcsw": [0, 0]})
    got = SUMMARY.before(d)
    assert list(got.ok_rps) == [90.0, 90.0] and list(got.shed_pct) == [10.0, 10.0]


def test_a_smoke_open_loop_offers_fractions_of_the_capacity_its_closed_point_measured(tmp_path):
    """db-openloop under the smoke profile on c-db-epoll: its capacity from wrk, then the book's generator at half and
    one and a half times it, on the same route and pool, each row with what it offered, dropped and timed out, the
    database's CPU beside the server's; the open rows' raw output named by their fraction; read back, the summary
    keeps the three points apart, and the rows of db-models' dataset (no open loop) still read."""
    import csv
    from iobench import registry
    from iobench.run import runner
    path = runner.run(registry.experiment("db-openloop", servers=("c-db-epoll",)), "smoke", dest=tmp_path / "db",
                      progress=lambda m: None)
    rows = list(csv.DictReader(open(path / "results.csv")))
    assert [(r["tool"], r["loop"], float(r["fraction"])) for r in rows] == [
        ("wrk", "closed", 0.0), ("openloop", "open", 0.5), ("openloop", "open", 1.5)]
    closed, *opens = rows
    capacity = float(closed["rps"]) * (1 - int(closed["non2xx"] or 0) / int(closed["requests"]))
    for r in opens:
        assert r["ok"] == "True" and float(r["capacity_rps"]) == pytest.approx(capacity), r
        assert float(r["offered_rps"]) == pytest.approx(float(r["fraction"]) * capacity, abs=0.1), r
        assert int(r["offered"]) > 0 and r["dropped"] != "" and float(r["db_cpu_us_per_req"]) > 0, r
        assert f"-open{100 * float(r['fraction']):g}-" in r["raw_file"], r["raw_file"]
        assert "--rate" in (path / r["raw_file"]).read_text().splitlines()[0]
        assert int(r["conns_served"]) == 16, r  # the generator's own count: a request on each connection answered
    half = opens[0]  # at half its capacity the server answered what it was offered
    assert int(half["requests"]) + int(half["dropped"]) + int(half["errors_timeout"] or 0) <= int(half["offered"])
    assert float(half["rps"]) > 0.4 * float(half["offered_rps"]), half
    summary = registry.reader("db-openloop")(path).summary()
    assert list(summary.fraction) == [0.0, 0.5, 1.5] and list(summary.loop) == ["closed", "open", "open"]
    assert summary.offered_rps.iloc[1:].notna().all() and summary.ok_rps.notna().all()
