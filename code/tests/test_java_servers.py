"""What only the Java servers show: java-nio-multi's reactors per core, and the source write-up's
three servers (seed 000) as published, pinned down here. The contract every corrected server
follows is tested once, for C and Java alike, in test_contract.py."""
import socket
import subprocess
import time

import pytest

from conftest import answered_at, rounds
from iobench.run.lifecycle import ServerProcess
from iobench.servers import http
from iobench.servers.battery import run_battery
from iobench.servers.http import BODY, request_bytes
from iobench.servers.manifest import CODE, ServerOptions, get, ids

SEED_IDS = ids("Java", conforms=False)
SEED_RESPONSE = b"HTTP/1.1 200\nContent-Type: text/html\nContent-Length:12\n\nhello,lehman"


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(CODE), "java"], check=True)


def _one_request(port: int) -> None:
    resp = http.get("127.0.0.1", port, timeout=20)
    assert resp.status == 200 and resp.body == BODY


def test_nio_multi_overlaps_one_request_per_reactor():
    """Without --pool it has one reactor per core: the work of 2 x cores requests takes two rounds
    (conftest.rounds: an order of events, which a slow host does not change)."""
    import os
    cores = len(os.sched_getaffinity(0))
    with ServerProcess(get("java-nio-multi"), ServerOptions(work_ms=200), cpus=None) as srv:
        _one_request(srv.port)
        t0 = time.monotonic()
        finished = answered_at(lambda: _one_request(srv.port), 2 * cores)
    took = rounds([t0] + finished, 0.200) - 1
    assert took == 2, f"{2 * cores} requests on {cores} reactors answered in {took} rounds"


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
    printed = srv.stdout_tail()  # all of it: stop() waited for the end of its stdout
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
