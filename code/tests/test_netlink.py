"""The slow link (iom-delaylink + netlink.DelayLink): it has the round trip and the rate
it was asked for, a server behind it answers the harness unchanged, and it leaves no
namespace, device or process behind, whatever happens inside the block."""
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import require_link

from iobench.run import netlink
from iobench.run.lifecycle import ServerProcess
from iobench.run.netlink import DELAYLINK, DelayLink
from iobench.servers import http
from iobench.servers.manifest import CODE, ServerOptions, get

RTT_MS = 40.0


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "build/iom-delaylink", "build/c-sequential"], check=True)


@pytest.fixture
def link_possible(built):
    require_link(DelayLink)


# A listener inside the namespace: it accepts, sends argv[2] bytes, closes; port on stdout.
LISTENER = """
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 0))
s.listen(128)
print(s.getsockname()[1], flush=True)
data = b"x" * int(sys.argv[2])
while True:
    c, _ = s.accept()
    c.sendall(data)
    c.close()
"""


class Listener:
    """LISTENER run in the link's namespace (ip netns exec, from an argument list)."""

    def __init__(self, link: DelayLink, nbytes: int = 0):
        self.proc = subprocess.Popen(["ip", "netns", "exec", link.netns, sys.executable, "-c", LISTENER,
                                      link.server_host, str(nbytes)], stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.host = link.server_host

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def connect_ms(host: str, port: int) -> float:
    t0 = time.perf_counter()
    with socket.create_connection((host, port), timeout=5):
        return (time.perf_counter() - t0) * 1e3


def fetch_all(host: str, port: int) -> tuple[int, float]:
    """Bytes received until the peer closes, and seconds from connected to closed."""
    with socket.create_connection((host, port), timeout=10) as s:
        t0, n = time.perf_counter(), 0
        while chunk := s.recv(1 << 16):
            n += len(chunk)
        return n, time.perf_counter() - t0


def leftovers(link: DelayLink, pid: int) -> list[str]:
    found = []
    if link.netns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
        found.append(f"namespace {link.netns}")
    for dev in (link.client_dev, link.server_dev):
        if Path(f"/sys/class/net/{dev}").exists():
            found.append(f"device {dev}")
    if Path(f"/proc/{pid}").exists():
        found.append(f"process {pid}")
    for entry in Path("/proc").iterdir():  # any iom-delaylink at all that runs for this link
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"iom-delaylink" in cmdline and link.client_dev.encode() in cmdline:
            found.append(f"process {entry.name}: {cmdline!r}")
    return found


# ---- the link ------------------------------------------------------------------------------

def test_connect_takes_one_round_trip(link_possible):
    """connect() returns when the SYN-ACK is back: one RTT, RTT_MS / 2 each way."""
    with DelayLink(RTT_MS) as link, Listener(link) as srv:
        assert link.measured_rtt_ms == pytest.approx(RTT_MS, abs=3)
        times = [connect_ms(srv.host, srv.port) for _ in range(10)]
    assert statistics.median(times) == pytest.approx(RTT_MS, abs=3), times
    assert min(times) >= RTT_MS  # the program never lets a packet through early


def test_sequential_server_pays_two_round_trips_per_request(link_possible):
    """The source's "public IP" case. A request on a new connection costs k = 2 RTTs:
    one for the handshake (SYN out, SYN-ACK back: connect() returns), one for the
    request going out and the response coming back. The rest costs no waiting: the
    client's final ACK travels with the request, and the FINs of the close cross the
    link while the next connection's SYN is already on its way (a sequential server
    is free again half an RTT after the response left, when the FIN arrives, long
    before the next request does). So ~80 ms a request at 40 ms RTT, ~12 req/s, for a
    server that does 9000 req/s on 127.0.0.1: the wait is the network, not the server."""
    k = 2
    with DelayLink(RTT_MS) as link:
        with ServerProcess(get("c-sequential"), ServerOptions(host=link.server_host), netns=link.netns) as srv:
            # ip netns exec execs the server: the pid is the server's own, in the namespace (the same file, not the
            # same path text: a path printed across mount namespaces may be a longer one, as under a chroot)
            assert os.path.samefile(f"/proc/{srv.pid}/exe", CODE / "c" / "build" / "c-sequential")
            assert os.readlink(f"/proc/{srv.pid}/ns/net") != os.readlink("/proc/self/ns/net")
            srv.verify()
            t0 = time.perf_counter()
            for _ in range(20):
                resp = http.get(srv.opts.host, srv.port)
                assert resp.status == 200 and resp.body == http.BODY
            per_request_ms = (time.perf_counter() - t0) * 1e3 / 20
        rtt = link.measured_rtt_ms
    assert per_request_ms == pytest.approx(k * rtt, rel=0.08), (per_request_ms, rtt)


def test_tcp_counters_are_read_where_the_server_is(link_possible):
    """Behind a link the server's accept queue lives in its own namespace: an overflow is
    counted there, so the HTTP rows' TCP counters (probes.TcpProbe) add that namespace's
    to this one's. c-sequential with a backlog of 1, busy with a first client that sends
    nothing, and nine more connecting: the queue overflows."""
    from iobench.run.probes import TcpProbe
    from iobench.run import sampler
    with DelayLink(20) as link:
        with ServerProcess(get("c-sequential"), ServerOptions(host=link.server_host, backlog=1),
                           netns=link.netns) as srv:
            probe, here = TcpProbe(link.netns), sampler.tcp_counters()
            probe.start()
            socks = []
            for _ in range(10):
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex((srv.host, srv.port))
                socks.append(s)
            time.sleep(1.0)
            seen, here_after = probe.stop(), sampler.tcp_counters()
            for s in socks:
                s.close()
    assert seen["ListenOverflows"] > 0
    assert here_after["ListenOverflows"] == here["ListenOverflows"]  # not where the harness runs


def test_rate_limit_sets_the_transfer_time(link_possible):
    """1 MB at 10 Mbit/s: 691 full packets of 1500 bytes (1448 of payload each, with TCP
    timestamps) take 0.83 s to serialise; slow start adds a few round trips at first.
    Without the limit the same transfer is a handful of round trips."""
    nbytes = 1_000_000
    packets = -(-nbytes // 1448)
    wire_s = packets * 1500 * 8 / 10e6
    with DelayLink(20, rate_mbit=10) as link, Listener(link, nbytes) as srv:
        got, limited_s = fetch_all(srv.host, srv.port)
    assert got == nbytes
    assert "queue full 0," in link.counters, link.counters
    assert wire_s <= limited_s <= wire_s + 0.25, (limited_s, wire_s)
    with DelayLink(20) as link, Listener(link, nbytes) as srv:
        got, free_s = fetch_all(srv.host, srv.port)
    assert got == nbytes
    assert free_s < limited_s / 2, (free_s, limited_s)


def test_full_queue_drops_and_tcp_recovers(link_possible):
    """With room for only 20 packets the queue overflows; the drops are counted and TCP
    retransmits, so every byte still arrives."""
    with DelayLink(20, rate_mbit=10, limit=20) as link, Listener(link, 300_000) as srv:
        got, _ = fetch_all(srv.host, srv.port)
    assert got == 300_000
    full = int(link.counters.split("queue full ")[1].split(",")[0])
    assert full > 0, link.counters


# ---- nothing left behind ---------------------------------------------------------------------

def test_nothing_left_after_the_block(link_possible):
    with DelayLink(RTT_MS) as link:
        pid = link.proc.pid
        assert link.netns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert Path(f"/sys/class/net/{link.client_dev}").exists()
    assert leftovers(link, pid) == []
    assert "forwarded" in link.counters  # it stopped on SIGTERM and said what it did


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_nothing_left_after_an_exception(link_possible, exc):
    with pytest.raises(exc):
        with DelayLink(RTT_MS) as link:
            with ServerProcess(get("c-sequential"), ServerOptions(host=link.server_host), netns=link.netns) as srv:
                pid, server_pid = link.proc.pid, srv.pid
                raise exc("inside the block")
    assert leftovers(link, pid) == []
    assert not Path(f"/proc/{server_pid}").exists()


def test_nothing_left_when_setup_fails_half_way(link_possible, monkeypatch):
    real_ip = netlink._ip
    pids = []

    def failing_ip(*args):
        if args[:1] == ("-n",) and "addr" in args:  # the namespace side's address
            pids.append(link.proc.pid)  # by now the program runs and one device has moved
            raise netlink.LinkError("injected failure")
        real_ip(*args)

    monkeypatch.setattr(netlink, "_ip", failing_ip)
    link = DelayLink(RTT_MS)
    with pytest.raises(netlink.LinkError, match="injected"):
        with link:
            pass
    assert len(pids) == 1 and link.proc is None
    assert leftovers(link, pids[0]) == []


# ---- iom-delaylink itself -------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    [],
    ["--delay-ms", "20", "onlyone"],
    ["--delay-ms", "-1", "a", "b"],
    ["--delay-ms", "abc", "a", "b"],
    ["--delay-ms", "20", "--rate-mbit", "x", "a", "b"],
    ["--delay-ms", "20", "--limit", "0", "a", "b"],
    ["--delay-ms", "20", "same", "same"],
    ["--delay-ms", "20", "a-name-longer-than-15", "b"],
    ["--bogus", "a", "b"],
    ["a", "b"],  # no delay given
])
def test_bad_arguments_exit_1_with_usage(built, args):
    p = subprocess.run([str(DELAYLINK), *args], capture_output=True, text=True, timeout=10)
    assert p.returncode == 1
    assert "usage:" in p.stderr and p.stdout == ""


def test_setup_error_names_the_call(built, link_possible):
    """A device name that is taken by something that is not a TUN device: TUNSETIFF fails."""
    p = subprocess.run([str(DELAYLINK), "--delay-ms", "1", "lo", "iomtestb"], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 1
    assert p.stderr.startswith("iom-delaylink: TUNSETIFF lo: "), p.stderr
    assert not Path("/sys/class/net/iomtestb").exists()


def test_a_plan_behind_the_link_records_it_in_the_metadata(link_possible, tmp_path):
    """The runner enters the plan's link, describes it in meta.json as set up and as it was
    after the last point, and the dataset reads it back by name; nothing is left behind."""
    import json

    from iobench.kinds.http import dataset
    from iobench.kinds.http import plans
    from iobench.kinds.http.experiment import HttpExperiment
    from iobench.run import runner
    plan = plans.HttpPlan(dataset="tiny-link", description="a test plan behind the link", servers=("c-epoll",),
                          points=(plans.Point("ab", 2, True, timeout_s=10.0),), battery=False, link_rtt_ms=20.0)
    before = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    path = runner.run(HttpExperiment(plan), "smoke", dest=tmp_path / "tiny-link", progress=lambda m: None)
    link = json.loads((path / "meta.json").read_text())["links"]["delay"]
    assert link["rtt_ms"] == 20.0 and abs(link["measured_rtt_ms"] - 20.0) < 5.0
    assert abs(link["after"]["measured_rtt_ms"] - 20.0) < 5.0
    assert dataset.load(path).link("delay") == link and dataset.load(path).link("veth") is None
    assert set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()) <= before
