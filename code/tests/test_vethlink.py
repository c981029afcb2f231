"""The two-host link (netlink.VethLink): MTU 1500 with offloads off really puts
1448-byte segments on the wire, tbf holds the rate near 1 Gbit, the counters of each
namespace are its own, and nothing is left behind, whatever happens inside the block."""
import subprocess
import sys
import time

import pytest
from conftest import require_link

from iobench.run import netlink
from iobench.run.netlink import VethLink
from iobench.run.sampler import netns_counters, parse_snmp


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture
def veth_possible():
    require_link(VethLink)


# A sink in the server namespace: accepts one connection, reads until EOF, prints the
# byte count.
SINK = """
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 5001))
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
total = 0
while True:
    d = c.recv(1 << 20)
    if not d:
        break
    total += len(d)
print(total, flush=True)
"""
SOURCE = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], 5001))
block = b"x" * (1 << 18)
t0 = time.monotonic()
while time.monotonic() - t0 < float(sys.argv[2]):
    s.sendall(block)
s.close()
print(time.monotonic() - t0)
"""


def test_parse_snmp_pairs_names_with_values():
    text = ("TcpExt: SyncookiesSent DelayedACKs\nTcpExt: 0 17\n"
            "Ip: Forwarding\nIp: 1\nTcp: RtoAlgorithm OutSegs\nTcp: 1 99\n")
    assert parse_snmp(text) == {"TcpExtSyncookiesSent": 0, "TcpExtDelayedACKs": 17,
                                "TcpRtoAlgorithm": 1, "TcpOutSegs": 99}


def test_link_has_mtu_offloads_and_rate_and_leaves_nothing(veth_possible):
    before = namespaces()
    with VethLink(rate_mbit=1000) as link:
        assert {link.netns, link.client_netns} <= namespaces()
        s = link.settings()
        assert all(line.endswith(": off") for line in s["server_offloads"] + s["client_offloads"]), s
        assert "tbf" in s["server_qdisc"] and "rate 1Gbit" in s["client_qdisc"]
        mtu = subprocess.run(["ip", "-n", link.netns, "-o", "link", "show", link.server_dev],
                             capture_output=True, text=True, check=True).stdout
        assert "mtu 1500" in mtu
        sink = subprocess.Popen(["ip", "netns", "exec", link.netns, sys.executable, "-c", SINK, link.server_host],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert sink.stdout.readline().strip() == "listening"
            srv0 = netns_counters(link.netns)
            src = subprocess.run(link.in_client([sys.executable, "-c", SOURCE, link.server_host, "1.5"]),
                                 capture_output=True, text=True, timeout=30, check=True)
            received = int(sink.stdout.readline())
            srv1 = netns_counters(link.netns)
        finally:
            sink.kill()
            sink.wait()
        seconds = float(src.stdout)
        mbit = received * 8 / seconds / 1e6
        # tbf at 1 Gbit: TCP goodput over 1500-byte frames is at most ~950 Mbit/s
        assert 600 < mbit < 1000, mbit
        # without GRO the receiver sees every wire segment: about one per 1448 bytes
        segs = srv1["TcpInSegs"] - srv0["TcpInSegs"]
        assert segs >= received / 1448 * 0.95, (segs, received)
    assert namespaces() == before - {link.netns, link.client_netns}


def test_link_is_removed_after_an_exception_inside_the_block(veth_possible):
    before = namespaces()
    with pytest.raises(RuntimeError):
        with VethLink() as link:
            assert link.netns in namespaces()
            raise RuntimeError("boom")
    assert namespaces() == before


def test_a_failing_setup_removes_what_it_made(veth_possible, monkeypatch):
    before = namespaces()
    link = VethLink()
    real = link._run

    def failing(*argv):
        if argv[:1] == ("ethtool",) or "ethtool" in argv:
            raise netlink.LinkError("ethtool: simulated failure")
        return real(*argv)

    monkeypatch.setattr(link, "_run", failing)
    with pytest.raises(netlink.LinkError, match="simulated"):
        with link:
            pass
    assert namespaces() == before


def test_stale_namespaces_of_a_killed_harness_are_removed(veth_possible):
    # A harness killed with SIGKILL cannot clean up: the next link removes what it left.
    dead = subprocess.Popen(["true"])
    dead.wait()
    time.sleep(0.05)
    name = f"iom-cli-{dead.pid}-1"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        with VethLink():
            assert name not in namespaces()
    finally:
        if name in namespaces():
            subprocess.run(["ip", "netns", "del", name])
