"""An RPC call on the wire, as iom.rpc.Codec (code/java/rpc) writes it: findById(101) in JSON and in the compact
binary form, the answer every provider must give, which protocol each provider speaks (read from its flags in the
manifest), and one call on a new connection in that protocol (the rpc experiment's verify, the tests)."""
from __future__ import annotations

import json
import socket
import struct
import time

from iobench.servers import http, manifest

SERVICE, METHOD, USER_ID = "iom.rpc.UserService", "findById", 101


def _utf(s: str) -> bytes:
    """java.io.DataOutput.writeUTF of an ASCII string: a 2-byte length, then the bytes."""
    b = s.encode("ascii")
    return struct.pack(">H", len(b)) + b


CALLS = {  # the request body (or frame payload) of findById(101), per codec
    "json": json.dumps({"service": SERVICE, "method": METHOD, "args": [USER_ID]}, separators=(",", ":")).encode(),
    "binary": _utf(SERVICE) + _utf(METHOD) + b"\x01" + b"I" + struct.pack(">i", USER_ID),
}
ANSWERS = {  # what every provider must answer it with
    "json": manifest.RPC_JSON_101,
    "binary": b"\x01" + b"U" + struct.pack(">i", USER_ID) + _utf(f"user-{USER_ID}"),
}


def protocol(server_id: str) -> tuple[str, str]:
    """(transport, codec) of a provider, read from its fixed flags in the manifest."""
    flags = next(f for sid, _, f, *_ in manifest.RPC_SERVERS if sid == server_id)
    transport = flags[flags.index("--transport") + 1] if "--transport" in flags else "http"
    codec = flags[flags.index("--codec") + 1] if "--codec" in flags else "json"
    return transport, codec


def call(host: str, port: int, server_id: str, timeout: float = 10.0) -> bytes:
    """One findById(101) in the provider's own protocol, on a new connection; the answer's body (or frame)."""
    transport, codec = protocol(server_id)
    body = CALLS[codec]
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as s:
        if transport == "frame":
            s.sendall(struct.pack(">I", len(body)) + body)
            buf = bytearray()
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
                chunk = s.recv(65536)
                if not chunk:
                    raise http.HttpError(f"{server_id}: the connection closed after {len(buf)} bytes of a frame")
                buf += chunk
            return bytes(buf[4:4 + struct.unpack(">I", buf[:4])[0]])
        ctype = "application/json" if codec == "json" else "application/octet-stream"
        s.sendall(f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                  f"Connection: close\r\n\r\n".encode() + body)
        resp = http.read_response(s, bytearray(), deadline)
        if resp.status != 200:
            raise http.HttpError(f"{server_id}: the call answered {resp.status}")
        return resp.body
