"""The python-http-server baseline: python's own http.server, following the server contract.

It is ``python -m http.server`` (ThreadingHTTPServer with SimpleHTTPRequestHandler,
HTTP/1.0, a listen backlog of 5) with two changes the contract asks for: it serves the
book's body for ``/`` from a temporary folder, and it does not log every request
(http.server writes one stderr line per request, which would be measured too).
It prints ``READY port=N`` once listening and exits 0 on SIGTERM, 1 on a setup error
(bad arguments included: argparse's own exit status, 2, is not part of the contract),
naming the failing call on stderr. It never exits 77: http.server runs wherever Python does.
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
    def log_message(self, format, *args):  # format: the base class's name
        pass


class ContractArgumentParser(argparse.ArgumentParser):
    """Bad arguments are a setup error: exit 1, naming the call that failed."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"error: parse arguments: {message}\n")


def port(text: str) -> int:
    number = int(text)  # a ValueError is reported by argparse as "invalid port value"
    if not 0 <= number <= 65535:
        raise ValueError(text)
    return number


def main() -> int:
    parser = ContractArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=port, default=0)
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
