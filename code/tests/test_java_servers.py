"""Every corrected Java server follows the contract and passes the conformance battery; the
source write-up's three servers (seed 000) behave as published, and this file pins down how."""
import concurrent.futures
import socket
import subprocess
import time

import pytest

from iobench.battery import run_battery
from iobench.http import BODY, read_response, request_bytes
from iobench.lifecycle import ServerError, ServerProcess
from iobench.manifest import CODE, JAVA_SEED_SERVERS, JAVA_SERVERS, ServerOptions, get

IDS = [sid for sid, *_ in JAVA_SERVERS]
SEED_IDS = [sid for sid, *_ in JAVA_SEED_SERVERS]
SERIAL = {"java-blocking", "java-nio"}  # one request at a time, by design
SEED_RESPONSE = b"HTTP/1.1 200\nContent-Type: text/html\nContent-Length:12\n\nhello,lehman"


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(CODE), "java"], check=True)


@pytest.mark.parametrize("work_ms", [0, 5])
@pytest.mark.parametrize("server_id", IDS)
def test_battery(server_id, work_ms, tmp_path):
    """With work, the models' other path runs too (worker pools, Netty's business group, Mina's ExecutorFilter)."""
    srv = ServerProcess(get(server_id), ServerOptions(work_ms=work_ms), cpus=None, log_dir=tmp_path)
    with srv:
        srv.verify()
        verdicts = run_battery("127.0.0.1", srv.port)
    failed = {v.case: v.detail for v in verdicts if not v.passed}
    log = srv.log_path.read_text(errors="replace")
    assert failed == {}, f"{server_id} failed: {failed}\nstderr: {log[-2000:]}"
    assert srv.exit_code == 0, f"{server_id} exited {srv.exit_code} on SIGTERM; stderr: {log[-2000:]}"
    assert log.strip() == "", f"{server_id} wrote to stderr: {log[-2000:]}"


@pytest.mark.parametrize("server_id", IDS)
def test_exact_bytes_and_work_on_one_keepalive_connection(server_id):
    """50 requests with 1 ms of work each on one connection, each answered with the C servers' bytes;
    then HTTP/1.0 without keep-alive gets Connection: close."""
    from iobench.http import RESPONSE_CLOSE, RESPONSE_KEEP_ALIVE
    with ServerProcess(get(server_id), ServerOptions(work_ms=1, spin_us=100), cpus=None) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            buf = bytearray()
            for i in range(50):
                s.sendall(request_bytes("/", "HTTP/1.1"))
                assert read_response(s, buf, time.monotonic() + 10).raw == RESPONSE_KEEP_ALIVE, f"request {i + 1}"
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            assert read_response(s, bytearray(), time.monotonic() + 10).raw == RESPONSE_CLOSE
    assert srv.exit_code == 0


@pytest.mark.parametrize("server_id", IDS)
def test_sigterm_with_open_connections_is_clean(server_id, tmp_path):
    """Stopped while clients hold connections (idle, mid-request, mid-work): exit 0."""
    srv = ServerProcess(get(server_id), ServerOptions(work_ms=300), cpus=None, log_dir=tmp_path)
    socks = []
    try:
        with srv:
            srv.verify()
            for payload in (b"", b"GET / HTTP/1.1\r\nHost: x\r\n", request_bytes("/", "HTTP/1.1")):
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
                socks.append(s)
                if payload:
                    s.sendall(payload)
            time.sleep(0.1)
    finally:
        for s in socks:
            s.close()
    assert srv.exit_code == 0, f"{server_id} exited {srv.exit_code}; stderr: {srv.stderr_tail()}"


def _one_request(port: int) -> float:
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(request_bytes("/", "HTTP/1.1", close=True))
        resp = read_response(s, bytearray(), time.monotonic() + 20)
    assert resp.status == 200 and resp.body == BODY
    return time.monotonic() - t0


@pytest.mark.parametrize("server_id", IDS)
def test_simulated_work_overlaps_in_concurrent_models(server_id):
    """20 clients, 200 ms of work each: concurrent models finish in about one round; java-blocking
    and java-nio (the work sleeps on the only thread that serves) take 20 rounds. java-nio-multi
    overlaps as many requests as it has reactors: given 20 here (--pool)."""
    opts = ServerOptions(work_ms=200, pool=20 if server_id == "java-nio-multi" else None)
    with ServerProcess(get(server_id), opts, cpus=None) as srv:
        _one_request(srv.port)  # warm up: classes loaded, JIT started
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            list(pool.map(lambda _: _one_request(srv.port), range(20)))
        elapsed = time.monotonic() - t0
    if server_id in SERIAL:
        assert elapsed >= 20 * 0.200, f"{server_id}: 20 requests of 200 ms took only {elapsed:.2f} s"
    else:
        assert elapsed < 1.5, f"{server_id}: 20 requests of 200 ms took {elapsed:.2f} s"


def test_nio_multi_overlaps_one_request_per_reactor():
    """Without --pool it has one reactor per core: the work of 2 x cores requests takes two rounds."""
    import os
    cores = len(os.sched_getaffinity(0))
    with ServerProcess(get("java-nio-multi"), ServerOptions(work_ms=200), cpus=None) as srv:
        _one_request(srv.port)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(2 * cores) as pool:
            list(pool.map(lambda _: _one_request(srv.port), range(2 * cores)))
        elapsed = time.monotonic() - t0
    assert 2 * 0.200 <= elapsed < 3 * 0.200 + 0.5, f"{2 * cores} requests on {cores} reactors took {elapsed:.2f} s"


@pytest.mark.parametrize("server_id", ["java-blocking", "java-nio", "java-nio2", "java-netty", "java-mina"])
def test_setup_errors_exit_1_and_name_the_call(server_id):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServerError, match=rf"exit 1.*error: bind 127.0.0.1:{port}: Address already in use"):
            with ServerProcess(get(server_id), ServerOptions(port=port), cpus=None):
                pass
    argv = get(server_id).argv(ServerOptions(), CODE)
    bad = subprocess.run(argv + ["--work-ms", "lots"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "--work-ms wants a number" in bad.stderr
    bad = subprocess.run(argv + ["--no-such-flag", "1"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and bad.stderr.startswith("usage:")


# ---- the source write-up's servers, as published ---------------------------------------------

def _read_all(sock: socket.socket, timeout: float) -> tuple[bytes, str]:
    """Everything the server sends until it closes ('eof'), resets ('reset') or goes quiet ('open')."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
        return data, "eof"
    except socket.timeout:
        return data, "open"
    except ConnectionResetError:
        return data, "reset"


@pytest.mark.parametrize("server_id", ["java-seed000-blocking", "java-seed000-threadpool"])
def test_seed_blocking_servers_answer_unasked_then_close(server_id):
    """They never read the request: a client that sends nothing still gets the answer after 20 ms;
    the answer is the write-up's bytes (bare \\n line ends, no reason phrase); then the server closes,
    with no Connection: close, so a keep-alive client (wrk) finds out on its next request."""
    with ServerProcess(get(server_id), ServerOptions(work_ms=20), cpus=None) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            assert _read_all(s, 5) == (SEED_RESPONSE, "eof")  # not a byte sent
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            s.sendall(request_bytes("/", "HTTP/1.1") * 3)
            assert _read_all(s, 5) == (SEED_RESPONSE, "eof")  # three asked, one answered
        verdicts = {v.case: v for v in run_battery("127.0.0.1", srv.port, cases=["http11_get", "keepalive_100"])}
    assert srv.exit_code == 0
    assert not verdicts["keepalive_100"].passed and not verdicts["http11_get"].passed
    assert "closed before a complete response" in verdicts["http11_get"].detail  # no \r\n\r\n ever comes


def test_seed_netty_answers_each_read_and_prints_it():
    """The write-up's Netty handler answers every read (not every request), after sleeping on its
    event loop, never closes, and prints each request and response to stdout."""
    with ServerProcess(get("java-seed000-netty"), ServerOptions(work_ms=20), cpus=None) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            assert _read_all(s, 0.5) == (b"", "open")  # nothing until it reads something
            s.sendall(request_bytes("/", "HTTP/1.1") * 10)  # one write: one read on the server
            data, state = _read_all(s, 1.0)
            assert state == "open" and data.startswith(SEED_RESPONSE)
            assert data.count(SEED_RESPONSE) < 10, "one answer per read, not per request"
            for i in range(5):  # one request per read: one answer each, on the same connection
                s.sendall(request_bytes("/", "HTTP/1.1"))
                assert _read_all(s, 0.5) == (SEED_RESPONSE, "open"), f"request {i + 1}"
        time.sleep(0.2)
        printed = b"".join(srv._stdout_tail)
    assert srv.exit_code == 0
    assert b"Client received: GET / HTTP/1.1" in printed and b"hello,lehman" in printed


@pytest.mark.parametrize("server_id", SEED_IDS)
def test_harness_can_start_the_as_published_servers(server_id):
    """The harness's start check accepts what they send (the write-up's bytes), so a dataset
    can measure them; the strict check of the book's own servers still rejects it."""
    with ServerProcess(get(server_id), ServerOptions(work_ms=1), cpus=None) as srv:
        answer = srv.verify()
        assert isinstance(answer, bytes) and answer.startswith(b"HTTP/1.1 200")
        assert b"hello,lehman" in answer
    assert not get(server_id).conforms
