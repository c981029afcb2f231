"""The server contract, tested once over every server that follows it, C and Java alike.

Every C server runs twice, optimised and under AddressSanitizer + UndefinedBehaviorSanitizer;
a sanitizer report anywhere in its stderr fails the test. What only one language can show
stays in test_c_servers.py (fuzzing, CPU of exited children) and test_java_servers.py (the
source write-up's servers as published); JUnit keeps what only Java can test in-process (the
request parser and buffer, the echo servers). The server ids come from the manifest, once.
"""
import concurrent.futures
import dataclasses
import socket
import subprocess
import time

import pytest

from iobench import http
from iobench.battery import run_battery
from iobench.http import (BODY, RESPONSE_400, RESPONSE_431, RESPONSE_CLOSE, RESPONSE_KEEP_ALIVE, read_response,
                          request_bytes)
from iobench.lifecycle import ServerError, ServerProcess, Unsupported
from iobench.manifest import C_BUILD, CODE, ServerOptions, contract_argv, get, ids

C_IDS, JAVA_IDS = ids("C"), ids("Java")
# (server id, build): each C server also in its sanitizer build
VARIANTS = [(sid, "opt") for sid in C_IDS] + [(sid, "asan") for sid in C_IDS] + [(sid, "jvm") for sid in JAVA_IDS]
SANITIZED = [(sid, "asan") for sid in C_IDS] + [(sid, "jvm") for sid in JAVA_IDS]
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


def start(server_id: str, build: str, tmp_path, **opts) -> ServerProcess:
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
@pytest.mark.parametrize("server_id, build", VARIANTS, ids=_id)
def test_battery(server_id, build, work_ms, tmp_path):
    """With work, the models' other path runs too (worker pools, Netty's business group, Mina's ExecutorFilter)."""
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


@pytest.mark.parametrize("server_id, build", VARIANTS, ids=_id)
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


@pytest.mark.parametrize("server_id, build", SANITIZED, ids=_id)
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
    """20 clients, 200 ms of work each: concurrent models finish in about one round; the serial
    ones (the work sleeps on the only thread that serves) take 20 rounds: Little's law in
    miniature. java-nio-multi overlaps as many requests as it has reactors: given 20 here."""
    srv = start(server_id, "opt", tmp_path, work_ms=200, pool=20 if server_id == "java-nio-multi" else None)
    try:
        with srv:
            one_request(srv.port)  # warm up: a JVM loads its classes, a pool starts its threads
            t0 = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(20) as pool:
                list(pool.map(lambda _: one_request(srv.port), range(20)))
            elapsed = time.monotonic() - t0
    except Unsupported as exc:
        pytest.skip(str(exc))
    if server_id in SERIAL:
        assert elapsed >= 20 * 0.200, f"{server_id}: 20 requests of 200 ms took only {elapsed:.2f} s"
    else:
        assert elapsed < 1.5, f"{server_id}: 20 requests of 200 ms took {elapsed:.2f} s"


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
    ("9 pipelined requests, then one with Connection: close", GET * 9 + GET_CLOSE, RESPONSE_KEEP_ALIVE * 9 + RESPONSE_CLOSE),
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


@pytest.mark.parametrize("server_id, build", VARIANTS, ids=_id)
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
    ACK of the first (~40 ms) every batch: 10 batches would take 400 ms instead of a few."""
    depth, batches, budget_s = 16, 10, 0.250
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
                t0 = time.monotonic()
                for _ in range(batches):
                    batch()
                took = time.monotonic() - t0
    except Unsupported as exc:
        pytest.skip(str(exc))
    assert took < budget_s, f"{batches} batches of {depth} pipelined requests took {took * 1e3:.0f} ms: a stall per batch?"
    assert_clean_exit(srv)
