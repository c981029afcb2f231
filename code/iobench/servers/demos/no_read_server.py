"""A server with the classic tutorial bug: it answers without reading the request.

    python code/iobench/servers/demos/no_read_server.py --port 0     (prints READY port=N)

It accepts, writes a response and closes, one connection at a time. The client's
request is still unread in the socket's receive buffer when close() runs, and Linux
answers a close with unread data by sending a reset (RST) instead of a FIN: the client
may lose the response and sees "connection reset by peer". book/c/source-reproduction.md
runs ab against it.
"""
from __future__ import annotations

import argparse
import signal
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # run as a script: find iobench
from iobench.servers.http import RESPONSE_CLOSE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        lsock = socket.create_server((args.host, args.port), backlog=128)
    except OSError as exc:
        print(f"bind {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"READY port={lsock.getsockname()[1]}", flush=True)
    while True:
        conn, _ = lsock.accept()
        try:
            conn.sendall(RESPONSE_CLOSE)  # the bug: the request was never read
        except OSError:
            pass
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
