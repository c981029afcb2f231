"""The python-http-server baseline: python's own http.server, following the server contract.

It is ``python -m http.server`` (ThreadingHTTPServer with SimpleHTTPRequestHandler,
HTTP/1.0, a listen backlog of 5) with two changes the contract asks for: it serves the
book's body for ``/`` from a temporary folder, and it does not log every request
(http.server writes one stderr line per request, which would be measured too).
It prints ``READY port=N`` once listening and exits 0 on SIGTERM.
"""
from __future__ import annotations

import argparse
import functools
import signal
import sys
import tempfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BODY = b"Hello, world\n"  # iobench.http.BODY; kept here so the server has no dependency


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="python-http-server-") as docroot:
        (Path(docroot) / "index.html").write_bytes(BODY)
        handler = functools.partial(QuietHandler, directory=docroot)
        try:
            httpd = ThreadingHTTPServer((args.host, args.port), handler)
        except OSError as exc:
            print(f"error: bind {args.host}:{args.port}: {exc}", file=sys.stderr)
            return 1

        def stop(signum, frame):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)
        print(f"READY port={httpd.server_address[1]}", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
