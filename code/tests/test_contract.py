"""The server contract, tested once over every server that follows it, C and Java alike.

Every C server runs twice, optimised and under AddressSanitizer + UndefinedBehaviorSanitizer;
a sanitizer report anywhere in its stderr fails the test. What only one language can show
stays in test_c_servers.py (fuzzing, CPU of exited children) and test_java_servers.py (the
source write-up's servers as published); JUnit keeps what only Java can test in-process (the
request parser and buffer, the echo servers). The server ids come from the manifest, once.
"""
import concurrent.futures
import dataclasses
import math
import re
import socket
import subprocess
import time

import pytest

from conftest import answered_at, rounds
from iobench.run.lifecycle import ServerError, ServerProcess, Unsupported
from iobench.servers import http
from iobench.servers.battery import run_battery
from iobench.servers.http import (BODY, RESPONSE_400, RESPONSE_431, RESPONSE_CLOSE, RESPONSE_KEEP_ALIVE, read_response,
                          request_bytes)
from iobench.servers.manifest import C_BUILD, CODE, ServerOptions, contract_argv, contract_flags, get, ids

C_IDS, JAVA_IDS = ids("C"), ids("Java")
# (server id, build): each C server also in its sanitizer build
VARIANTS = [(sid, "opt") for sid in C_IDS] + [(sid, "asan") for sid in C_IDS] + [(sid, "jvm") for sid in JAVA_IDS]
SANITIZED = [(sid, "asan") for sid in C_IDS] + [(sid, "jvm") for sid in JAVA_IDS]
# c-uring's chain (servers/uring.c, one change per step): the battery in both builds, pipelined work and a stop with
# open connections in the sanitizer build; the other checks are c-uring's, whose code every step shares
STEPS = ids("C", role="step")
STEP_BATTERY = [(sid, build) for sid in STEPS for build in ("opt", "asan")]
STEP_SANITIZED = [(sid, "asan") for sid in STEPS]
# the models whose wait is a real database (role "db"; each start makes a throwaway PostgreSQL): GET / is the
# contract's, so the battery, the closing responses and a stop with open connections run on them too, in both builds
DB_IDS = ids("C", role="db")
DB_VARIANTS = [(sid, build) for sid in DB_IDS for build in ("opt", "asan")]
DB_SANITIZED = [(sid, "asan") for sid in DB_IDS]
SERIAL = {"c-sequential", "java-blocking", "java-nio"}  # one request at a time, by design
# ASan's note at c-coroutine's first swapcontext (it cannot follow a switch of stacks): not a report
ASAN_UCONTEXT_NOTE = "ASan doesn't fully support makecontext/swapcontext"
SANITIZER_REPORT = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehavior")


def _id(param) -> str:
    return param if isinstance(param, str) else "-".join(map(str, param))


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all", "asan"], check=True)
    subprocess.run(["make", "-s", "-C", str(CODE), "java"], check=True)


@pytest.fixture(autouse=True)
def sanitizer_options(monkeypatch):
    monkeypatch.setenv("ASAN_OPTIONS", "halt_on_error=1:exitcode=66:detect_stack_use_after_return=0")
    monkeypatch.setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")


def server(server_id: str, build: str):
    entry = get(server_id)
    if build == "asan":
        entry = dataclasses.replace(entry, argv=contract_argv(C_BUILD / "asan" / server_id))
    return entry


_DATABASE: list = []  # one throwaway PostgreSQL for every database server of this module, started when first needed


@pytest.fixture(scope="module", autouse=True)
def database_for_the_module():
    yield
    while _DATABASE:
        _DATABASE.pop().stop()


def start(server_id: str, build: str, tmp_path, **opts) -> ServerProcess:
    if get(server_id).role == "db":  # the module's database (each server making its own costs a second)
        if not _DATABASE:
            from iobench.run.postgres import Postgres
            _DATABASE.append(Postgres().__enter__())
        opts.setdefault("db", _DATABASE[0].dsn)
    return ServerProcess(server(server_id, build), ServerOptions(**opts), cpus=None, log_dir=tmp_path)


def assert_clean_exit(srv: ServerProcess) -> None:
    """Exit 0 on SIGTERM, and nothing on stderr: no sanitizer report, no stack trace, no log line."""
    log = srv.log_path.read_text(errors="replace")
    assert not any(marker in log for marker in SANITIZER_REPORT), log[-4000:]
    assert srv.exit_code == 0, f"{srv.server.id} exited {srv.exit_code} on SIGTERM; stderr: {log[-2000:]}"
    said = [ln for ln in log.splitlines() if ln.strip() and ASAN_UCONTEXT_NOTE not in ln]
    assert said == [], f"{srv.server.id} wrote to stderr: {log[-2000:]}"


def one_request(port: int) -> None:
    resp = http.get("127.0.0.1", port, timeout=20)
    assert resp.status == 200 and resp.body == BODY


@pytest.mark.parametrize("work_ms", [0, 5])
@pytest.mark.parametrize("server_id, build", VARIANTS + STEP_BATTERY + DB_VARIANTS, ids=_id)
def test_battery(server_id, build, work_ms, tmp_path):
    """With work, the models' other path runs too (worker pools, Netty's business group, Mina's ExecutorFilter); a
    database server's wait is its database, not the work, so it runs without."""
    if work_ms and get(server_id).role == "db":
        pytest.skip("a database server's wait is its database: --work-ms plays no part")
    srv = start(server_id, build, tmp_path, work_ms=work_ms)
    try:
        with srv:
            srv.verify()
            verdicts = run_battery("127.0.0.1", srv.port)
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert {v.case: v.detail for v in verdicts if not v.passed} == {}, srv.stderr_tail()
    assert_clean_exit(srv)


@pytest.mark.parametrize("server_id, build", VARIANTS, ids=_id)
def test_exact_bytes_and_work_on_one_keepalive_connection(server_id, build, tmp_path):
    """50 requests with 1 ms of sleep and 100 µs of spin each on one connection, each answered with
    the same bytes in every language; then HTTP/1.0 without keep-alive gets Connection: close."""
    srv = start(server_id, build, tmp_path, work_ms=1, spin_us=100)
    try:
        with srv:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                buf = bytearray()
                for i in range(50):
                    s.sendall(request_bytes("/", "HTTP/1.1"))
                    assert read_response(s, buf, time.monotonic() + 10).raw == RESPONSE_KEEP_ALIVE, f"request {i + 1}"
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
                assert read_response(s, bytearray(), time.monotonic() + 10).raw == RESPONSE_CLOSE
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert_clean_exit(srv)


@pytest.mark.parametrize("server_id, build", VARIANTS + STEP_SANITIZED, ids=_id)
def test_pipelined_requests_with_work(server_id, build, tmp_path):
    """10 requests in one write, 5 ms of work each: all answered, in order, on one connection."""
    srv = start(server_id, build, tmp_path, work_ms=5)
    try:
        with srv:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                s.sendall(request_bytes("/", "HTTP/1.1") * 10)
                buf = bytearray()
                for i in range(10):
                    assert read_response(s, buf, time.monotonic() + 10).raw == RESPONSE_KEEP_ALIVE, f"response {i + 1}"
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert_clean_exit(srv)


@pytest.mark.parametrize("server_id, build", SANITIZED + STEP_SANITIZED + DB_SANITIZED, ids=_id)
def test_sigterm_with_open_connections_is_clean(server_id, build, tmp_path):
    """Stopped while clients hold connections (idle, mid-request, mid-work): exit 0, no leak report.

    The harness stops a server while wrk's connections may still be open, so this is the
    normal shutdown, not an edge case."""
    srv = start(server_id, build, tmp_path, work_ms=300)
    socks = []
    try:
        with srv:
            srv.verify()
            for payload in (b"", b"GET / HTTP/1.1\r\nHost: x\r\n", request_bytes("/", "HTTP/1.1")):
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
                socks.append(s)
                if payload:
                    s.sendall(payload)
            time.sleep(0.1)  # let the server accept them, read, and start the work
    except Unsupported as exc:
        pytest.skip(str(exc))
    finally:
        for s in socks:
            s.close()
    assert_clean_exit(srv)


@pytest.mark.parametrize("server_id", C_IDS + JAVA_IDS)
def test_simulated_work_overlaps_in_concurrent_models(server_id, tmp_path):
    """20 clients, 200 ms of work each: concurrent models answer them in about one round; the
    serial ones (the work sleeps on the only thread that serves) in 20 rounds, 200 ms apart:
    Little's law in miniature. java-nio-multi overlaps as many requests as it has reactors:
    given 20 here. Counted in rounds (conftest.rounds), not seconds, so a slow host cannot fail it."""
    srv = start(server_id, "opt", tmp_path, work_ms=200, pool=20 if server_id == "java-nio-multi" else None)
    try:
        with srv:
            one_request(srv.port)  # warm up: a JVM loads its classes, a pool starts its threads
            t0 = time.monotonic()
            finished = answered_at(lambda: one_request(srv.port), 20)
    except Unsupported as exc:
        pytest.skip(str(exc))
    took = rounds([t0] + finished, 0.200) - 1  # the first "round" is the sending
    if server_id in SERIAL:
        assert took == 20, f"{server_id}: 20 requests of 200 ms answered in {took} rounds"
    else:
        assert took <= 3, f"{server_id}: 20 requests of 200 ms answered in {took} rounds, not overlapped"


@pytest.mark.parametrize("server_id", C_IDS + JAVA_IDS)
def test_setup_errors_exit_1_and_name_the_call(server_id, tmp_path):
    """A port in use: exit 1 and `error: bind ...: Address already in use`; a bad flag value or an
    unknown flag: exit 1 and a message naming it, never a stack trace."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServerError, match=r"exit 1.*error: bind( 127\.0\.0\.1:\d+)?: Address already in use"):
            with start(server_id, "opt", tmp_path, port=port):
                pass
    argv = get(server_id).argv(ServerOptions(), CODE)
    bad = subprocess.run(argv + ["--work-ms", "lots"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "--work-ms wants a number" in bad.stderr, bad.stderr
    bad = subprocess.run(argv + ["--no-such-flag", "1"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "usage:" in bad.stderr and "Exception" not in bad.stderr, bad.stderr


GET, GET_CLOSE = request_bytes("/", "HTTP/1.1"), request_bytes("/", "HTTP/1.1", close=True)
CLOSING = [  # a request that ends its connection, and exactly what comes back before the close
    ("Connection: close", GET_CLOSE, RESPONSE_CLOSE),
    ("9 pipelined requests, then one with Connection: close", GET * 9 + GET_CLOSE,
     RESPONSE_KEEP_ALIVE * 9 + RESPONSE_CLOSE),
    ("not HTTP", b"THIS IS NOT HTTP\r\n\r\n", RESPONSE_400),
    ("a request body", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", RESPONSE_400),
    ("headers over 8 KiB", b"GET / HTTP/1.1\r\nX-Big: " + b"x" * 8200, RESPONSE_431),
]


def read_to_end(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything until the server closes; a server that never closes fails the test."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except socket.timeout:
        pytest.fail(f"not closed within {timeout:g} s; received {data[:200]!r}")
    except ConnectionResetError:
        pass  # closed with unread bytes left (the 8 KiB header): the answer came before the reset
    return data


@pytest.mark.parametrize("server_id, build", VARIANTS + DB_VARIANTS, ids=_id)
def test_closing_responses_exact_bytes_then_close(server_id, build, tmp_path):
    """Each on a connection of its own: the same bytes in every language, then the close."""
    srv = start(server_id, build, tmp_path)
    try:
        with srv:
            for what, request, expected in CLOSING:
                with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                    s.sendall(request)
                    assert read_to_end(s) == expected, what
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert_clean_exit(srv)


@pytest.mark.parametrize("work_ms", [0, 0.05])
@pytest.mark.parametrize("server_id", C_IDS + JAVA_IDS)
def test_pipelined_batches_without_nagle_stalls(server_id, work_ms, tmp_path):
    """wrk's pipelined load, as a test: 16 requests in one write get 16 answers at once. A server
    that writes them one by one without TCP_NODELAY has the second wait for the client's delayed
    ACK of the first (at least 40 ms on Linux) every batch. The median batch, not the sum: a
    stall is in every batch, while a slow or stolen host delays a few. With work, a server may serve a
    connection's requests one after another (c-coroutine: one coroutine per connection), each wait
    on a millisecond timer: up to a millisecond per request is its own time, not a stall."""
    depth, batches, stall_s = 16, 10, 0.040
    own_s = depth * math.ceil(work_ms) / 1000  # the timers count whole milliseconds
    srv = start(server_id, "opt", tmp_path, work_ms=work_ms, spin_us=5 if work_ms else 0)
    try:
        with srv:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as wrk: any stall is the server's
                buf = bytearray()

                def batch() -> None:
                    s.sendall(GET * depth)
                    for i in range(depth):
                        assert read_response(s, buf, time.monotonic() + 10).raw == RESPONSE_KEEP_ALIVE, i
                for _ in range(3):  # warm up (a JVM compiles its hot paths)
                    batch()
                took = []
                for _ in range(batches):
                    t0 = time.monotonic()
                    batch()
                    took.append(time.monotonic() - t0)
    except Unsupported as exc:
        pytest.skip(str(exc))
    median = sorted(took)[batches // 2]
    assert median < own_s + stall_s / 2, (
        f"a batch of {depth} pipelined requests took {median * 1e3:.0f} ms (median of {batches}: "
        f"{', '.join(f'{t * 1e3:.0f}' for t in took)} ms), {own_s * 1e3:.0f} ms of it the server's own: "
        "a stall per batch?")
    assert_clean_exit(srv)


# The models that block a thread (or a process) on each connection drop one that stays silent:
# SO_RCVTIMEO in C, Socket.setSoTimeout in Java. The event loops keep it at no cost, and take
# --idle-timeout-s only to ignore it.
DROPS_IDLE = {"c-sequential", "c-fork", "c-prefork", "c-thread", "c-threadpool",
              "java-blocking", "java-thread", "java-threadpool", "java-vthread"}
IDLE_WAIT_S = 3.0


def idle_after_one_request(server_id: str, idle_timeout_s: float, tmp_path) -> str | None:
    """One request answered, then silence on the connection: with a timeout it must be closed
    by the server (not at once, by 3 s); with 0, or on a server without one, still open after
    3 s and still answering. Returns what went wrong, or None."""
    log_dir = tmp_path / f"{server_id}-{idle_timeout_s:g}"
    log_dir.mkdir()
    try:
        with start(server_id, "opt", log_dir, idle_timeout_s=idle_timeout_s) as srv:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
                buf = bytearray()
                s.sendall(GET)
                if read_response(s, buf, time.monotonic() + 10).raw != RESPONSE_KEEP_ALIVE:
                    return "wrong answer to the first request"
                answered = time.monotonic()
                if server_id in DROPS_IDLE and idle_timeout_s:
                    s.settimeout(IDLE_WAIT_S)
                    try:
                        if s.recv(1) != b"":
                            return "sent bytes nobody asked for"
                    except socket.timeout:
                        return f"still open {IDLE_WAIT_S:g} s after the answer"
                    except ConnectionResetError:
                        pass  # closed all the same
                    after = time.monotonic() - answered
                    return None if after >= 0.5 * idle_timeout_s else f"closed after only {after:.2f} s"
                time.sleep(IDLE_WAIT_S)
                try:
                    closed = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                except (BlockingIOError, TimeoutError):  # nothing to read: open (TimeoutError: a socket with a timeout)
                    closed = False
                except ConnectionError:
                    closed = True
                if closed:
                    return f"closed within {IDLE_WAIT_S:g} s"
                s.sendall(GET)
                if read_response(s, buf, time.monotonic() + 10).raw != RESPONSE_KEEP_ALIVE:
                    return f"no answer after {IDLE_WAIT_S:g} s of silence"
    except ServerError as exc:  # before the flag existed: usage, exit 1
        return str(exc)[-300:]
    return None


@pytest.mark.parametrize("lang", ["C", "Java"])
def test_idle_timeout_flag(lang, tmp_path):
    """--idle-timeout-s 1: the blocking models close a connection silent after its answer, within
    3 s; --idle-timeout-s 0: every server keeps it (and the event loops ignore the flag either
    way). All servers of a language at once, so that the 3 s of silence are waited only once."""
    # C servers start at once; ten JVMs at a time start on two cores within their 30 s
    jobs = [(sid, t) for sid in ids(lang) for t in (1, 0)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs) if lang == "C" else 10) as pool:
        verdicts = dict(zip(jobs, pool.map(lambda job: idle_after_one_request(*job, tmp_path), jobs)))
    assert {f"{sid} --idle-timeout-s {t}": v for (sid, t), v in verdicts.items() if v} == {}


def test_idle_timeout_option_none_is_the_default_and_0_is_never(tmp_path):
    """None leaves the flag out (each server's default); 0 is passed (never drop), unlike the
    other flags, where 0 means the default. nginx gets it as keepalive_timeout, where 0 would
    turn keep-alive off: its "never" is a day. The as-published Java servers never get it."""
    assert "--idle-timeout-s" not in contract_flags(ServerOptions())
    assert contract_flags(ServerOptions(idle_timeout_s=0))[-2:] == ["--idle-timeout-s", "0"]
    assert contract_flags(ServerOptions(idle_timeout_s=1.5))[-2:] == ["--idle-timeout-s", "1.5"]
    assert "--idle-timeout-s" not in get("java-seed000-netty").argv(ServerOptions(idle_timeout_s=0), tmp_path)
    for idle, line in ((None, "keepalive_timeout 75s;"), (0, "keepalive_timeout 1d;"),
                       (2, "keepalive_timeout 2000ms;")):
        workdir = tmp_path / f"nginx-{idle}"
        get("nginx").prepare(ServerOptions(port=8080, idle_timeout_s=idle), workdir)
        assert line in (workdir / "nginx.conf").read_text()


def test_the_uring_chain_is_the_makefiles_steps_in_order():
    """Each step of c-uring's chain is servers/uring.c built with its own URING_STEP, numbered in the chain's order,
    so that each adds one change to the one before it; the chain runs from c-uring to c-uring-multishot."""
    from iobench.servers.manifest import URING_CHAIN
    make = (CODE / "c" / "Makefile").read_text()
    numbered = dict(re.findall(r"^STEP_(\w+)\s*:=\s*(\d+)$", make, re.M))
    assert [f"c-uring-{name}" for name, _ in sorted(numbered.items(), key=lambda kv: int(kv[1]))] == list(STEPS)
    assert sorted(int(n) for n in numbered.values()) == list(range(1, len(STEPS) + 1))
    assert URING_CHAIN == ("c-uring", *STEPS, "c-uring-multishot")
    source = (CODE / "c" / "servers" / "uring.c").read_text()
    assert all(f"URING_STEP >= {n}" in source for n in range(1, len(STEPS) + 1))
