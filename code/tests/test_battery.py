"""The conformance battery: nginx passes every case; python's http.server fails exactly the
cases its design predicts; a server that answers the wrong body fails them all."""
import socket
import subprocess
import sys
import threading

import pytest

from iobench.run.lifecycle import ServerProcess
from iobench.servers import battery
from iobench.servers.battery import CASES, CaseFailed, case_malformed_request_line, run_battery
from iobench.servers.http import BODY
from iobench.servers.manifest import CODE, get
from test_lifecycle import contract_server

ALL = {name for name, _ in CASES}


def verdicts(server) -> dict:
    with ServerProcess(server, cpus=None) as srv:
        return {v.case: v for v in run_battery("127.0.0.1", srv.port)}


def test_nginx_passes_every_case():
    v = verdicts(get("nginx"))
    assert set(v) == ALL
    failed = {k: x.detail for k, x in v.items() if not x.passed}
    assert failed == {}
    assert v["malformed_request_line"].detail.startswith("malformed request line: 400")
    assert v["concurrent_500"].counts == {"clients": 500, "failed": 0}


def test_python_http_server_fails_what_http10_and_a_backlog_of_5_predict():
    v = verdicts(get("python-http-server"))
    failed = {k for k, x in v.items() if not x.passed}
    # HTTP/1.0 only: no keep-alive, so no second request on a connection and no pipelining.
    # listen(5): 500 clients overflow the accept queue; the unlucky ones wait past the timeout.
    assert failed == {"keepalive_100", "pipelined_10", "concurrent_500"}
    assert "request 2 of 100" in v["keepalive_100"].detail
    assert "of 500 concurrent clients failed" in v["concurrent_500"].detail
    counts = v["concurrent_500"].counts  # counted, not only said: chapters read these
    assert counts["clients"] == 500 and 0 < counts["failed"] <= 500
    assert counts["first_failure"] in v["concurrent_500"].detail
    assert v["http11_get"].counts == {}  # a case that counts nothing
    assert all(x.alive_after for x in v.values())  # slow or limited, but it never crashed
    # No HTTP version in the request line: http.server falls back to HTTP/0.9 and answers
    # its HTML error page with no status line and no headers, then closes. It passes (the
    # request was rejected and the connection closed) and the detail says what arrived.
    malformed = v["malformed_request_line"]
    assert malformed.passed
    assert malformed.detail.startswith(
        "malformed request line: a body without a status line (HTTP/0.9-style error page, ")
    assert malformed.detail.endswith(" bytes), then closed")
    assert v["header_64k"].detail == "64 KiB header: 431 Line too long"


def test_a_wrong_body_fails_every_case_that_reads_a_body():
    v = verdicts(contract_server("wrong-body"))
    assert not any(x.passed for x in v.values())
    assert all("stopped answering" in x.detail or "Goodbye" in x.detail or "body" in x.detail
               for x in v.values()), {k: x.detail for k, x in v.items()}


def test_battery_runs_inside_a_running_event_loop():
    """Notebook kernels run cells inside an event loop; the battery must work there too."""
    import asyncio

    async def from_a_notebook_cell():
        return verdicts(get("nginx"))

    v = asyncio.run(from_a_notebook_cell())
    assert v["concurrent_500"].passed, v["concurrent_500"].detail


def one_answer_server(answer: bytes, close: bool = True):
    """Accept one connection, read the request, write ``answer`` and (maybe) close."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = lsock.accept()
        conn.recv(65536)
        conn.sendall(answer)
        if not close:
            conn.recv(1)  # keep the connection open until the client gives up
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return lsock


@pytest.mark.parametrize("answer, close, passed, detail", [
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", True, True,
     "malformed request line: 400 Bad Request"),
    (b"", True, True, "malformed request line: connection closed"),
    (b"<html>Error code: 400</html>\n", True, True,
     "malformed request line: a body without a status line (HTTP/0.9-style error page, 29 bytes), then closed"),
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 100\r\n\r\nshort", True, True,
     "malformed request line: 400 Bad Request, cut short after "),
    (BODY, True, False, "answered the book's body without a status line"),
    (b"<html>Error code: 400</html>\n", False, False,
     "29 bytes without a status line, and the connection stayed open for 1 s"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n" + BODY, True, False, "answered 200"),
])
def test_malformed_request_line_reports_what_arrived(answer, close, passed, detail, monkeypatch):
    """Each way of answering a malformed request line, told apart: a 400, a bare close, an
    HTTP/0.9-style page and a cut-short 400 pass; the book's body, an answer that never ends
    and a 200 fail."""
    monkeypatch.setattr(battery, "TIMEOUT", 1.0)  # the answer that never ends waits this long
    with one_answer_server(answer, close) as lsock:
        port = lsock.getsockname()[1]
        try:
            got, ok = case_malformed_request_line("127.0.0.1", port), True
        except CaseFailed as exc:
            got, ok = str(exc), False
    assert ok == passed, got
    assert detail in got


@pytest.mark.parametrize("args, named", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--port", "abc"], "argument --port: invalid port value: 'abc'"),
    (["--port", "70000"], "argument --port: invalid port value: '70000'"),
    (["--port"], "argument --port: expected one argument"),
])
def test_python_http_server_bad_arguments_are_a_setup_error(args, named):
    """The server contract: exit 1 on a setup error, naming the failing call (argparse alone exits 2)."""
    server = CODE / "iobench" / "servers" / "baselines" / "python_http_server.py"
    p = subprocess.run([sys.executable, str(server), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and p.stdout == ""
    assert f"error: parse arguments: {named}\n" in p.stderr and p.stderr.startswith("usage:")
