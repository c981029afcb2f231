"""The response every book server sends, and a minimal HTTP/1.x client to check it.

Every contract server in every language answers ``GET /`` with exactly
``RESPONSE_KEEP_ALIVE`` (or ``RESPONSE_CLOSE`` when the connection is to close).
Baselines (nginx, python's http.server) send the same body with their own headers.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

BODY = b"Hello, world\n"


def _response(connection: str) -> bytes:
    return (b"HTTP/1.1 200 OK\r\n"
            b"Content-Type: text/plain\r\n"
            b"Content-Length: " + str(len(BODY)).encode() + b"\r\n"
            b"Connection: " + connection.encode() + b"\r\n"
            b"\r\n" + BODY)


@dataclass(frozen=True)
class Route:
    """What a server answers a plain GET with: the request's path and the body it must send back."""
    path: str
    body: bytes


# Every contract server: GET / answers the book's body. The RPC providers answer a call on their own route.
CONTRACT = Route("/", BODY)

RESPONSE_KEEP_ALIVE = _response("keep-alive")
RESPONSE_CLOSE = _response("close")
# What a contract server answers before it closes a connection whose request it cannot serve:
# not HTTP, or a body (the book's servers take none): 400; headers over 8 KiB: 431.
RESPONSE_400 = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
                b"Connection: close\r\n\r\nBad Request\n")
RESPONSE_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
                b"Content-Length: 16\r\nConnection: close\r\n\r\nHeader Too Large\n")


@dataclass
class Response:
    status: int
    reason: str
    version: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    raw: bytes = b""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class HttpError(Exception):
    """The peer closed, timed out or answered something that is not HTTP/1.x."""


def request_bytes(path: str = "/", version: str = "HTTP/1.1", close: bool = False,
                  extra_headers: dict[str, str] | None = None) -> bytes:
    lines = [f"GET {path} {version}", "Host: 127.0.0.1"]
    if close:
        lines.append("Connection: close")
    elif version == "HTTP/1.0":
        lines.append("Connection: keep-alive")
    for k, v in (extra_headers or {}).items():
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class HttpTimeout(HttpError):
    """No (complete) answer before the deadline."""


def recv_into(sock: socket.socket, buf: bytearray, deadline: float) -> None:
    """Append what arrives next to ``buf``; HttpTimeout at the deadline, HttpError when
    the peer closes or resets the connection."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise HttpTimeout("timed out waiting for a response")
    sock.settimeout(remaining)
    try:
        chunk = sock.recv(65536)
    except socket.timeout as exc:
        raise HttpTimeout("timed out waiting for a response") from exc
    except ConnectionError as exc:
        raise HttpError(f"connection error: {exc}") from exc
    if not chunk:
        raise HttpError("connection closed before a complete response")
    buf.extend(chunk)


def parse_status_line(line: str) -> tuple[str, int, str] | None:
    """("HTTP/1.1", 200, "OK") from an HTTP/1.x status line, or None if it is not one."""
    parts = line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1]), parts[2] if len(parts) > 2 else ""


def read_response(sock: socket.socket, buf: bytearray, deadline: float) -> Response:
    """Read one response from ``sock``; ``buf`` keeps bytes that belong to the next one."""
    while b"\r\n\r\n" not in buf:
        recv_into(sock, buf, deadline)
    head_end = buf.index(b"\r\n\r\n") + 4
    head = bytes(buf[:head_end]).decode("latin-1")
    status_line, *header_lines = head[:-4].split("\r\n")
    status = parse_status_line(status_line)
    if status is None:
        raise HttpError(f"not an HTTP/1.x status line: {status_line!r}")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(buf) < head_end + length:
        recv_into(sock, buf, deadline)
    raw = bytes(buf[:head_end + length])
    del buf[:head_end + length]
    version, code, reason = status
    return Response(status=code, reason=reason, version=version, headers=headers, body=raw[head_end:], raw=raw)


def get(host: str, port: int, path: str = "/", version: str = "HTTP/1.1",
        timeout: float = 5.0) -> Response:
    """One request on a new connection, closed afterwards."""
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request_bytes(path, version, close=True))
        return read_response(sock, bytearray(), deadline)
