"""The conformance battery: what every server of the book must survive.

Each case talks to a running server over raw sockets and says what it saw. After every
case the server must still answer a plain GET; a case passes only if it did its own
check *and* the server still answered.

    from iobench.servers.battery import run_battery
    verdicts = run_battery("127.0.0.1", port)
    verdicts = run_battery("127.0.0.1", port, route=server.route)  # a server with a route of its own (RPC)
"""
from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from iobench.servers.http import (CONTRACT, HttpError, HttpTimeout, Route, parse_status_line, read_response, recv_into,
                   request_bytes)

TIMEOUT = 5.0


@dataclass
class Verdict:
    case: str
    passed: bool
    detail: str
    alive_after: bool
    seconds: float
    counts: dict = field(default_factory=dict)  # what a case counted (concurrent_500: clients, failed)

    def as_dict(self) -> dict:
        return asdict(self)


class CaseFailed(Exception):
    """A case's own check failed: detail says what, counts what it counted."""

    def __init__(self, detail: str, counts: dict | None = None):
        super().__init__(detail)
        self.counts = counts or {}


def _connect(host: str, port: int) -> socket.socket:
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _expect_ok(resp, what: str, route: Route = CONTRACT) -> None:
    if resp.status != 200 or resp.body != route.body:
        raise CaseFailed(f"{what}: got {resp.status} with body {resp.body[:40]!r}")


def _closed_by_peer(sock: socket.socket, wait: float = TIMEOUT) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


# ---- cases ---------------------------------------------------------------------------------

def case_http10(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        s.sendall(f"GET {route.path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        _expect_ok(resp, "HTTP/1.0 GET", route)
        if not _closed_by_peer(s):
            raise CaseFailed("HTTP/1.0 without keep-alive: the server kept the connection open")
    return f"200, {resp.version}, closed after the response"


def case_http11(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        s.sendall(request_bytes(route.path, "HTTP/1.1"))
        resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        _expect_ok(resp, "HTTP/1.1 GET", route)
    return f"200, {resp.version}"


def case_keepalive_100(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        buf = bytearray()
        for i in range(100):
            try:
                s.sendall(request_bytes(route.path, "HTTP/1.1"))
                resp = read_response(s, buf, time.monotonic() + TIMEOUT)
            except (HttpError, OSError) as exc:
                raise CaseFailed(f"request {i + 1} of 100 on one connection failed: {exc}") from exc
            _expect_ok(resp, f"request {i + 1}", route)
    return "100 responses on one connection"


def case_pipelined_10(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        s.sendall(request_bytes(route.path, "HTTP/1.1") * 10)
        buf = bytearray()
        for i in range(10):
            try:
                resp = read_response(s, buf, time.monotonic() + TIMEOUT)
            except HttpError as exc:
                raise CaseFailed(f"pipelined response {i + 1} of 10 missing: {exc}") from exc
            _expect_ok(resp, f"pipelined response {i + 1}", route)
    return "10 pipelined requests, 10 responses in order"


def case_byte_by_byte(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        for b in request_bytes(route.path, "HTTP/1.1"):
            s.sendall(bytes([b]))
            time.sleep(0.002)
        resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        _expect_ok(resp, "request sent byte by byte", route)
    return "200 after a request sent one byte at a time"


def _read_until_closed(sock: socket.socket, buf: bytearray, deadline: float) -> bool:
    """Append to ``buf`` until the peer closes (True) or the deadline passes (False)."""
    try:
        while True:
            recv_into(sock, buf, deadline)
    except HttpTimeout:
        return False
    except HttpError:
        return True


def _without_status_line(s: socket.socket, buf: bytearray, deadline: float, what: str, route: Route) -> str:
    """The server answered with bytes that do not start with a status line.

    That is an HTTP/0.9 response: no status line, no headers, the body ends when the
    connection closes. python's http.server answers so when it cannot read an HTTP version
    from the request line: it falls back to its ``default_request_version`` (HTTP/0.9),
    and its ``send_error`` then writes only the HTML error page ("Error code: 400") and
    closes. The contract asks a malformed request for a 400 *or a closed connection*, and
    the server to live on: a page ending in a close rejects the request without anything
    a client could take for a success, so it passes; the detail says exactly what came.
    It fails if the connection stays open (a client cannot tell where such an answer ends)
    or if the bytes are the book's body (the garbage was served as a valid request).
    """
    closed = _read_until_closed(s, buf, deadline)
    if not closed:
        raise CaseFailed(f"{what}: {len(buf)} bytes without a status line, and the connection "
                         f"stayed open for {TIMEOUT:g} s")
    if bytes(buf) == route.body:
        body = "the book's body" if route == CONTRACT else f"the body of GET {route.path}"
        raise CaseFailed(f"{what}: answered {body} without a status line, "
                         "as if the request were a valid HTTP/0.9 GET")
    return f"{what}: a body without a status line (HTTP/0.9-style error page, {len(buf)} bytes), then closed"


def _rejected_or_closed(s: socket.socket, what: str, route: Route) -> str:
    buf = bytearray()  # keeps what arrived, also when read_response gives up
    deadline = time.monotonic() + TIMEOUT
    try:
        resp = read_response(s, buf, deadline)
    except HttpError as exc:
        if buf and not buf.startswith(b"HTTP/"):
            return _without_status_line(s, buf, deadline, what, route)
        if "closed" in str(exc) or "connection error" in str(exc):
            if not buf:
                return f"{what}: connection closed"
            # a status line, then the connection closed before the response was complete
            status_line = bytes(buf).split(b"\r\n", 1)[0].decode("latin-1")
            status = parse_status_line(status_line)
            if status is not None and 400 <= status[1] < 500:
                return f"{what}: {status[1]} {status[2]}".rstrip() + f", cut short after {len(buf)} bytes by a close"
            raise CaseFailed(f"{what}: {status_line!r}, cut short after {len(buf)} bytes by a close") from None
        raise CaseFailed(f"{what}: {exc}") from exc
    if 400 <= resp.status < 500:
        return f"{what}: {resp.status} {resp.reason}".strip()
    raise CaseFailed(f"{what}: answered {resp.status}, expected a 4xx or a closed connection")


def case_malformed_request_line(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        return _rejected_or_closed(s, "malformed request line", route)


def case_header_64k(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        big = "x" * (64 * 1024)
        try:
            s.sendall(request_bytes(route.path, "HTTP/1.1", extra_headers={"X-Big": big}))
        except (BrokenPipeError, ConnectionResetError):
            return "64 KiB header: connection closed while sending"
        try:
            resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        except HttpError as exc:
            if "closed" in str(exc) or "connection error" in str(exc):
                return "64 KiB header: connection closed"
            raise CaseFailed(f"64 KiB header: {exc}") from exc
        if resp.status == 200 or 400 <= resp.status < 500:
            return f"64 KiB header: {resp.status} {resp.reason}".strip()
        raise CaseFailed(f"64 KiB header: answered {resp.status}")


def case_idle_client(host, port, route: Route = CONTRACT):
    idle = _connect(host, port)  # connects and never sends a byte
    try:
        time.sleep(0.2)
        try:
            with _connect(host, port) as s:
                s.sendall(request_bytes(route.path, "HTTP/1.1", close=True))
                resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        except (HttpError, OSError) as exc:
            raise CaseFailed(f"while one client sat idle, another got no answer within {TIMEOUT:g} s: {exc}") from exc
        _expect_ok(resp, "request next to an idle client", route)
    finally:
        idle.close()
    return "served another client while one sat idle"


def case_reset_mid_request(host, port, route: Route = CONTRACT):
    s = _connect(host, port)
    s.sendall(f"GET {route.path} HTTP/1.1\r\nHost: 127.".encode())
    time.sleep(0.05)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # with linger 0: an RST
    time.sleep(0.1)
    return "client sent half a request, then a reset"


def case_half_close(host, port, route: Route = CONTRACT):
    with _connect(host, port) as s:
        s.sendall(request_bytes(route.path, "HTTP/1.1"))
        s.shutdown(socket.SHUT_WR)
        try:
            resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        except HttpError as exc:
            raise CaseFailed(f"no response after the client half-closed: {exc}") from exc
        _expect_ok(resp, "response after half-close", route)
    return "full response after the client's FIN"


def case_concurrent_500(host, port, route: Route = CONTRACT, clients: int = 500):
    async def one(i: int) -> str | None:  # None, or what went wrong for client i
        stage = "connect"
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 3 * TIMEOUT)
            stage = "send"
            writer.write(request_bytes(route.path, "HTTP/1.1", close=True))
            await writer.drain()
            stage = "read"
            data = await asyncio.wait_for(reader.read(), 3 * TIMEOUT)
            writer.close()
            head, _, body = data.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.") or b" 200 " not in head.split(b"\r\n")[0] + b" ":
                return f"{head[:40]!r}"
            if body != route.body:
                return f"body {body[:40]!r}"
            return None
        except (OSError, asyncio.TimeoutError) as exc:
            return f"{exc.__class__.__name__} during {stage} {exc}".rstrip()

    async def all_clients():
        return await asyncio.gather(*(one(i) for i in range(clients)))

    # In its own thread: a notebook kernel already runs an event loop in this one.
    outcome: list = []
    runner = threading.Thread(target=lambda: outcome.extend(asyncio.run(all_clients())))
    runner.start()
    runner.join()
    failures = [(i, what) for i, what in enumerate(outcome) if what]
    counts = {"clients": clients, "failed": len(failures)}
    if failures:
        (i, what), = failures[:1]
        counts.update(first_failed_client=i, first_failure=what)
        raise CaseFailed(f"{len(failures)} of {clients} concurrent clients failed, e.g. client {i}: {what}", counts)
    return f"{clients} concurrent clients, all answered", counts


CASES: list[tuple[str, Callable]] = [
    ("http10_get", case_http10),
    ("http11_get", case_http11),
    ("keepalive_100", case_keepalive_100),
    ("pipelined_10", case_pipelined_10),
    ("byte_by_byte", case_byte_by_byte),
    ("malformed_request_line", case_malformed_request_line),
    ("header_64k", case_header_64k),
    ("idle_client", case_idle_client),
    ("reset_mid_request", case_reset_mid_request),
    ("half_close", case_half_close),
    ("concurrent_500", case_concurrent_500),
]


def still_answers(host: str, port: int, route: Route = CONTRACT) -> tuple[bool, str]:
    try:
        with _connect(host, port) as s:
            s.sendall(request_bytes(route.path, "HTTP/1.1", close=True))
            resp = read_response(s, bytearray(), time.monotonic() + TIMEOUT)
        if resp.status == 200 and resp.body == route.body:
            return True, ""
        return False, f"liveness GET answered {resp.status}"
    except (OSError, HttpError) as exc:
        return False, f"liveness GET failed: {exc}"


def run_battery(host: str, port: int, cases: list[str] | None = None, route: Route = CONTRACT) -> list[Verdict]:
    """Every case (or those named) against a server that answers `route` (GET / with the book's body unless told)."""
    verdicts = []
    for name, fn in CASES:
        if cases and name not in cases:
            continue
        t0 = time.monotonic()
        counts: dict = {}
        try:
            detail, passed = fn(host, port, route), True
            if isinstance(detail, tuple):  # a case that counts returns (detail, counts)
                detail, counts = detail
        except CaseFailed as exc:
            detail, passed, counts = str(exc), False, exc.counts
        except (OSError, HttpError) as exc:
            detail, passed = f"{exc.__class__.__name__}: {exc}", False
        alive, why = still_answers(host, port, route)
        if not alive:
            passed = False
            detail = f"{detail}; then the server stopped answering ({why})"
        verdicts.append(Verdict(name, passed, detail, alive, round(time.monotonic() - t0, 3), counts))
    return verdicts
