"""The closed-loop echo generator (iom-echoload) against small echo servers written here:
it measures what a good server does, and it catches the ones that corrupt, close, stall
or take a message in two parts."""
import json
import socket
import socketserver
import subprocess

import pytest
from conftest import ThreadedServer

from iobench.load import drivers
from iobench.servers.manifest import CODE, ROOT

ECHOLOAD = CODE / "c" / "build" / "iom-echoload"


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "build/iom-echoload"], check=True)


class Server(ThreadedServer):
    """An echo server on 127.0.0.1, a thread per connection; `mode` says how it misbehaves.
    Every connection's recv() sizes are kept in `recvs`."""
    def __init__(self, mode: str = "echo", size: int = 0):
        self.mode, self.size, self.recvs = mode, size, []
        super().__init__(Handler)


class Handler(socketserver.BaseRequestHandler):
    FLIP_AT = 10000  # the stream offset whose byte the "flip" server changes, once per connection

    def handle(self):
        mode, sizes, total = self.server.mode, [], 0
        self.server.recvs.append(sizes)
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            sizes.append(len(data))
            if mode == "silent":
                continue
            if mode == "flip" and total <= self.FLIP_AT < total + len(data):
                data = bytearray(data)
                data[self.FLIP_AT - total] ^= 0x01
            self.request.sendall(data)
            total += len(data)
            if mode == "close-after-first" and total >= self.server.size:
                return  # socketserver closes it


def run(*args: str, timeout: float = 10) -> tuple[int, dict | None, str]:
    p = subprocess.run([str(ECHOLOAD), *args], capture_output=True, text=True, timeout=timeout)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("ECHOLOAD {")), None)
    return p.returncode, json.loads(line[len("ECHOLOAD "):]) if line else None, p.stderr


def load(srv: Server, *args: str, duration: float = 1.0, timeout: float = 10) -> tuple[int, dict | None, str]:
    return run("--host", "127.0.0.1", "--port", str(srv.server_address[1]), "--duration", str(duration),
               *args, timeout=timeout)


def errors(d: dict) -> int:
    return sum(d[k] for k in ("errors_connect", "errors_read", "errors_write", "errors_timeout", "errors_mismatch"))


def test_echo_measures_a_good_server(built):
    with Server() as srv:
        rc, d, err = load(srv, "--connections", "4", "--size", "5120", "--hist")
    assert rc == 0, err
    assert d["messages"] > 0 and errors(d) == 0, d
    assert d["connections"] == 4 and d["size"] == 5120 and d["nodelay"] == 0 and d["warmup_s"] == 0
    assert d["duration_s"] == pytest.approx(1.0, abs=0.1)
    assert d["tps"] == pytest.approx(d["messages"] / d["duration_s"], rel=1e-3)
    assert d["bytes_per_s"] == pytest.approx(d["tps"] * 5120, rel=1e-3)
    assert 0 < d["p50_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["p99_9_ms"] <= d["max_ms"]
    assert d["mean_ms"] <= d["max_ms"]
    assert sum(count for _, count in d["hist"]) == d["messages"]
    bounds = [b for b, _ in d["hist"]]
    assert bounds == sorted(bounds) and all(b & (b - 1) == 0 for b in bounds)  # powers of two, in µs
    assert bounds[-1] >= d["max_ms"] * 1000 > bounds[-1] / 2 - 1


def test_warmup_is_not_counted(built):
    with Server() as srv:
        rc, d, err = load(srv, "--connections", "2", "--size", "1024", "--warmup", "0.5", duration=0.5)
    assert rc == 0, err
    assert d["warmup_s"] == 0.5 and d["duration_s"] == pytest.approx(0.5, abs=0.1)
    assert d["messages"] > 0 and errors(d) == 0
    assert d["tps"] == pytest.approx(d["messages"] / d["duration_s"], rel=1e-3)


def test_100k_messages_and_nodelay(built):
    with Server() as srv:
        rc, d, err = load(srv, "--connections", "2", "--size", str(100 * 1024), "--nodelay")
    assert rc == 0, err
    assert d["messages"] > 0 and errors(d) == 0, d
    assert d["nodelay"] == 1 and d["size"] == 102400
    assert d["bytes_per_s"] == pytest.approx(d["tps"] * 102400, rel=1e-3)


def test_a_changed_byte_is_a_mismatch(built):
    with Server("flip") as srv:
        rc, d, err = load(srv, "--connections", "2", "--size", "5120")
    assert rc == 0, err  # the first message of each connection still comes back whole
    assert d["errors_mismatch"] > 0 and d["messages"] > 0, d


def test_a_server_that_closes_is_a_read_error_and_the_run_goes_on(built):
    with Server("close-after-first", size=5120) as srv:
        rc, d, err = load(srv, "--connections", "2", "--size", "5120")
    assert rc == 0, err
    assert d["errors_read"] > 0, d
    assert d["messages"] > 0  # every new connection gets its first echo
    assert len(srv.recvs) > 2  # and it reconnected


def test_a_silent_server_times_out(built):
    with Server("silent") as srv:
        rc, d, err = load(srv, "--connections", "2", "--size", "512", "--timeout", "0.3")
    assert rc == 1 and "no message completed" in err
    assert d["errors_timeout"] > 0 and d["messages"] == 0, d
    assert len(srv.recvs) > 2  # a timed-out connection is replaced


def test_no_listener_fails_clearly(built):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # a port nobody listens on (bound, so nobody else takes it)
        port = s.getsockname()[1]
        rc, d, err = run("--port", str(port), "--connections", "2", "--duration", "0.3")
    assert rc == 1
    assert "no connection to 127.0.0.1:%d ever succeeded" % port in err
    assert d is not None and d["messages"] == 0 and d["errors_connect"] > 0


@pytest.mark.parametrize("args, flag", [
    (["--port", "1", "--bogus"], "--bogus"),
    (["--port", "1", "--size", "abc"], "--size"),
    (["--port", "1", "--connections", "0"], "--connections"),
    (["--size", "10"], "--port"),
    (["--port", "1", "--split-every", "2"], "--split-at"),
    (["--port", "1", "--split-at", "10"], "--split-every"),
])
def test_bad_usage_exits_2_and_names_the_flag(built, args, flag):
    rc, d, err = run(*args)
    assert rc == 2 and d is None
    assert flag in err and "usage:" in err


def test_split_writes_arrive_in_two_parts(built):
    """Every message goes as 1000 bytes, then the other 4120 bytes 20 ms later: the server's
    first recv() holds at most those 1000 bytes, and every latency includes the pause."""
    with Server() as srv:
        rc, d, err = load(srv, "--connections", "1", "--size", "5120", "--split-every", "1",
                          "--split-at", "1000", "--split-pause-us", "20000")
    assert rc == 0, err
    assert errors(d) == 0 and d["messages"] > 10, d
    assert (d["split_every"], d["split_at"], d["split_pause_us"]) == (1, 1000, 20000)
    assert srv.recvs[0][0] <= 1000, srv.recvs[0][:5]
    offsets, total = set(), 0
    for n in srv.recvs[0]:
        total += n
        offsets.add(total)
    split = sum(m * 5120 + 1000 in offsets for m in range(10))
    assert split >= 5, srv.recvs[0][:20]  # the pause is seen in (nearly) every message
    assert 20 <= d["p50_ms"] < 200


def test_the_driver_reads_the_line(built):
    with Server() as srv:
        d = drivers.get("echo")
        spec = drivers.LoadSpec("echo", 2, duration_s=0.5, size=1024)
        argv = d.argv(spec, f"tcp://127.0.0.1:{srv.server_address[1]}")
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=10)
        r = d.parse(p.stdout + p.stderr, p.returncode)
    assert r.ok, r.failure
    assert r.requests > 0 and r.errors == 0 and r.extra["hist"]
