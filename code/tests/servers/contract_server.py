"""A tiny server that follows the server contract, with switches for misbehaving.

Used by the lifecycle tests only. Modes:
  ok            serve the book's response, thread per connection
  unsupported   exit 77 before listening ("model not supported here")
  setup-error   exit 1 naming the failing call
  never-ready   listen but never print READY
  ignore-term   ignore SIGTERM (the harness must SIGKILL)
  fork-child    also fork a child that sleeps (the harness must stop the whole group)
  wrong-body    answer 200 with another body
"""
import argparse
import os
import signal
import socket
import sys
import threading
import time

RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
            b"Connection: keep-alive\r\n\r\nHello, world\n")


def serve(conn, body_response):
    buf = b""
    with conn:
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\r\n\r\n" in buf:
                head, buf = buf.split(b"\r\n\r\n", 1)
                lower = head.lower()
                close = b"connection: close" in lower or (
                    head.split(b"\r\n", 1)[0].endswith(b"HTTP/1.0") and b"connection: keep-alive" not in lower)
                if close:
                    conn.sendall(body_response.replace(b"keep-alive", b"close"))
                    return
                conn.sendall(body_response)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="ok")
    args = ap.parse_args()
    if args.mode == "unsupported":
        print("contract_server: this model needs a feature this kernel lacks", file=sys.stderr)
        return 77
    if args.mode == "setup-error":
        print("contract_server: bind: Address already in use", file=sys.stderr)
        return 1
    response = RESPONSE.replace(b"Hello, world\n", b"Goodbye, all\n") if args.mode == "wrong-body" else RESPONSE
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    if args.mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    if args.mode == "fork-child" and os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a stubborn child
        time.sleep(3600)
        os._exit(0)
    if args.mode != "never-ready":
        print(f"READY port={sock.getsockname()[1]}", flush=True)
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=serve, args=(conn, response), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
