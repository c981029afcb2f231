"""Links to a server that are not loopback.

DelayLink, a slow link: a network namespace joined to this one through iom-delaylink.

    with DelayLink(rtt_ms=40) as link:
        with ServerProcess(get("c-sequential"), ServerOptions(host=link.server_host),
                           netns=link.netns) as srv:
            srv.verify()
            ... drive load at srv.url, from here, unchanged ...

The source measured its server over the internet; this kernel has no netem, so the
delay comes from a user-space program (code/c/tools/delaylink.c) that owns two TUN
devices and forwards IP packets between them late. One device stays in the root
namespace (the client side, 10.77.0.1); the other moves into a new namespace that only
the server lives in (10.77.0.2). Every packet between them crosses the program once.

Leaving the block, by success, exception or Ctrl-C, stops the program (its TUN devices
die with it) and deletes the namespace; so does a setup that fails half-way.
Needs root, ``ip`` and /dev/net/tun, or raises LinkUnavailable (callers skip).
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import socket
import statistics
import subprocess
import time
from pathlib import Path

from iobench.run import procs
from iobench.servers.manifest import CODE

DELAYLINK = CODE / "c" / "build" / "iom-delaylink"
CLIENT_HOST = "10.77.0.1"
SERVER_HOST = "10.77.0.2"
_serial = itertools.count(1)


class LinkUnavailable(Exception):
    """This machine cannot make the link (not root, no ip, no /dev/net/tun): a skip."""


class LinkError(Exception):
    """The link was possible here but setting it up failed."""


def _ip(*args: str) -> None:
    p = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise LinkError(f"ip {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")


def refused_connect_ms(host: str, port: int = 9, timeout: float = 5.0) -> float:
    """One round trip, timed with TCP and no listener: our SYN crosses the link, the
    peer's kernel answers RST (nothing listens on `port`), connect() fails at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        t0 = time.perf_counter()
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            return (time.perf_counter() - t0) * 1e3
    raise LinkError(f"something listens on {host}:{port}; cannot time the round trip with it")


def remove_stale_namespaces() -> list[str]:
    """Namespaces of ours whose process is gone (a harness killed with SIGKILL cannot
    clean up; its iom-delaylink died with it, the namespace's name stayed): delete them."""
    p = subprocess.run(["ip", "netns", "list"], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=10)
    removed = []
    for line in p.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) == 4 and name.startswith(("iom-srv-", "iom-cli-")) and parts[2].isdigit():
            if not Path(f"/proc/{parts[2]}").exists():
                _ip("netns", "del", name)
                removed.append(name)
    return removed


class _Link:
    """What both links share: a context manager whose setup, if it fails half-way, takes
    down what it made before the error goes on; leaving the block takes down the rest."""

    def __enter__(self):
        self.check_available()
        try:
            self._setup()
        except BaseException:
            try:
                self.close()
            except LinkError:
                pass  # the setup's own error is the one to report
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def check_available() -> None:
        raise NotImplementedError

    def _setup(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class DelayLink(_Link):
    """A point-to-point link with rtt_ms of round trip (half each way) and, when
    rate_mbit > 0, that bandwidth. A context manager: leaving it leaves nothing behind."""

    def __init__(self, rtt_ms: float, rate_mbit: float = 0, cpus: str | None = "1",
                 limit: int = 1000, tolerance_ms: float | None = None, ready_timeout: float = 10.0):
        if rtt_ms < 0 or rate_mbit < 0:
            raise ValueError("rtt_ms and rate_mbit must not be negative")
        self.rtt_ms = rtt_ms
        self.rate_mbit = rate_mbit
        self.cpus = cpus
        self.limit = limit
        # The program, the scheduler and the two stacks add a little; never much.
        self.tolerance_ms = tolerance_ms if tolerance_ms is not None else max(5.0, 0.1 * rtt_ms)
        self.ready_timeout = ready_timeout
        n = next(_serial)
        pid = os.getpid()
        self.netns = f"iom-srv-{pid}-{n}"
        # Device names: at most 15 characters (IFNAMSIZ - 1); pids have at most 7 digits.
        self.client_dev = f"iomc{pid}x{n % 1000}"
        self.server_dev = f"ioms{pid}x{n % 1000}"
        self.server_host = SERVER_HOST
        self.client_host = CLIENT_HOST
        self.measured_rtt_ms: float | None = None
        self.counters = ""  # iom-delaylink's last line: packets forwarded and dropped
        self.proc: subprocess.Popen | None = None
        self._netns_made = False

    # -- set up --------------------------------------------------------------------------
    @staticmethod
    def check_available() -> None:
        if os.geteuid() != 0:
            raise LinkUnavailable("a namespace and TUN devices need root (euid is not 0)")
        if shutil.which("ip") is None:
            raise LinkUnavailable("the `ip` command (iproute2) is not installed")
        if not Path("/dev/net/tun").exists():
            raise LinkUnavailable("/dev/net/tun does not exist: no TUN support")
        if not DELAYLINK.exists():
            raise LinkError(f"{DELAYLINK} is not built: make -C code/c build/iom-delaylink")

    def _setup(self) -> None:
        remove_stale_namespaces()
        if any(f"inet {CLIENT_HOST}" in line for line in self._root_addresses()):
            raise LinkError(f"{CLIENT_HOST} is already in use here: is another DelayLink up?")
        _ip("netns", "add", self.netns)
        self._netns_made = True
        self._start_program()
        _ip("link", "set", self.server_dev, "netns", self.netns)
        _ip("addr", "add", CLIENT_HOST, "peer", SERVER_HOST, "dev", self.client_dev)
        _ip("link", "set", self.client_dev, "mtu", "1500", "up")
        _ip("-n", self.netns, "addr", "add", SERVER_HOST, "peer", CLIENT_HOST, "dev", self.server_dev)
        _ip("-n", self.netns, "link", "set", self.server_dev, "mtu", "1500", "up")
        _ip("-n", self.netns, "link", "set", "lo", "up")
        self.measured_rtt_ms = self.measure_rtt()
        if abs(self.measured_rtt_ms - self.rtt_ms) > self.tolerance_ms:
            raise LinkError(f"the link's round trip is {self.measured_rtt_ms:.2f} ms, "
                            f"expected {self.rtt_ms:g} ms ± {self.tolerance_ms:g}")

    @staticmethod
    def _root_addresses() -> list[str]:
        p = subprocess.run(["ip", "-4", "-o", "addr", "show"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=10)
        return p.stdout.splitlines()

    def _start_program(self) -> None:
        argv = [str(DELAYLINK), "--delay-ms", f"{self.rtt_ms / 2:g}", "--rate-mbit", f"{self.rate_mbit:g}",
                "--limit", str(self.limit), self.client_dev, self.server_dev]
        if self.cpus is not None:
            argv = ["taskset", "-c", self.cpus] + argv
        self.argv = argv
        self.proc = procs.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # READY means both devices exist: only then can they be moved and configured.
        try:
            procs.wait_line(self.proc, re.compile(rb"^READY$"), time.monotonic() + self.ready_timeout)
        except procs.NotReady as exc:
            if exc.why == "timeout":
                raise LinkError(f"iom-delaylink printed no READY within {self.ready_timeout:g} s") from None
            code = self.proc.wait()
            err = self.proc.stderr.read().decode(errors="replace").strip()
            if code == procs.EXIT_UNSUPPORTED:
                raise LinkUnavailable(f"iom-delaylink: not supported here: {err}") from None
            raise LinkError(f"iom-delaylink exited {code} before READY: {err}; argv={argv}") from None

    def settings(self) -> dict:
        """What the metadata records about the link, with its round trip measured now."""
        return {"rtt_ms": self.rtt_ms, "measured_rtt_ms": round(self.measure_rtt(), 2),
                "rate_mbit": self.rate_mbit, "server_host": self.server_host,
                "how": "server in its own network namespace; iom-delaylink (code/c/tools/delaylink.c) "
                       "forwards every packet between two TUN devices after rtt/2"}

    def measure_rtt(self, samples: int = 5) -> float:
        """The median of a few TCP round trips across the link, in ms."""
        return statistics.median(refused_connect_ms(self.server_host) for _ in range(samples))

    # -- tear down -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the program (its devices go with it), then delete the namespace."""
        errors = []
        if self.proc is not None:
            procs.stop_group(self.proc, 5.0)
            self.counters = self.proc.stderr.read().decode(errors="replace").strip()
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.proc = None
        if self._netns_made:
            try:
                _ip("netns", "del", self.netns)
                self._netns_made = False
            except LinkError as exc:
                errors.append(str(exc))
        # A device the program's exit did not take away (it never should) goes here.
        for dev in (self.client_dev,):
            if Path(f"/sys/class/net/{dev}").exists():
                try:
                    _ip("link", "del", dev)
                except LinkError as exc:
                    errors.append(str(exc))
        if errors:
            raise LinkError("; ".join(errors))


VETH_CLIENT_HOST = "10.78.0.1"
VETH_SERVER_HOST = "10.78.0.2"


class VethLink(_Link):
    """Two hosts on one machine: a server namespace and a client namespace joined by a
    veth pair, with what a 2013 gigabit LAN had and loopback has not:

    - MTU 1500 (loopback's is 65536, so a 5 KiB message is one segment there);
    - TSO, GSO and GRO off, so the stack sends and receives real 1448-byte segments
      (with them on, veth would pass 64 KiB super-segments as loopback does);
    - a token bucket (tc tbf) of rate_mbit on each end, so the wire is the limit it was.

        with VethLink(rate_mbit=1000) as link:
            with ServerProcess(server, ServerOptions(host=link.server_host), netns=link.netns) as srv:
                subprocess.run(link.in_client(["iom-echoload", "--host", link.server_host, ...]))

    Processes started through in_client() run in the client namespace; `ip netns exec`
    execs them, so their pid is theirs. Leaving the block deletes both namespaces, and
    the veth pair goes with them. Needs root and iproute2 (LinkUnavailable otherwise)."""

    def __init__(self, rate_mbit: float = 1000, mtu: int = 1500, offloads: bool = False,
                 burst_bytes: int = 15000, latency_ms: float = 5.0):
        if rate_mbit < 0 or mtu < 576:
            raise ValueError("rate_mbit must not be negative and mtu must be at least 576")
        self.rate_mbit = rate_mbit
        self.mtu = mtu
        self.offloads = offloads
        self.burst_bytes = burst_bytes
        self.latency_ms = latency_ms
        n = next(_serial)
        pid = os.getpid()
        self.netns = f"iom-srv-{pid}-{n}"
        self.client_netns = f"iom-cli-{pid}-{n}"
        self.server_dev, self.client_dev = "veth-srv", "veth-cli"  # each alone in its namespace
        self.server_host, self.client_host = VETH_SERVER_HOST, VETH_CLIENT_HOST
        self.commands: list[list[str]] = []  # every `ip`, `ethtool` and `tc` call, for the metadata
        self._made: list[str] = []

    @staticmethod
    def check_available() -> None:
        if os.geteuid() != 0:
            raise LinkUnavailable("network namespaces and veth devices need root (euid is not 0)")
        for tool in ("ip", "tc", "ethtool"):
            if shutil.which(tool) is None:
                raise LinkUnavailable(f"the `{tool}` command is not installed")

    def _run(self, *argv: str) -> str:
        self.commands.append(list(argv))
        p = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
        if p.returncode != 0:
            raise LinkError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def _setup(self) -> None:
        remove_stale_namespaces()
        for ns in (self.netns, self.client_netns):
            self._run("ip", "netns", "add", ns)
            self._made.append(ns)
        self._run("ip", "-n", self.netns, "link", "add", self.server_dev, "type", "veth",
                  "peer", "name", self.client_dev, "netns", self.client_netns)
        for ns, dev, me in ((self.netns, self.server_dev, self.server_host),
                            (self.client_netns, self.client_dev, self.client_host)):
            self._run("ip", "-n", ns, "link", "set", "lo", "up")
            self._run("ip", "-n", ns, "link", "set", dev, "mtu", str(self.mtu))
            self._run("ip", "-n", ns, "addr", "add", f"{me}/24", "dev", dev)
            if not self.offloads:
                self._run("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
            if self.rate_mbit > 0:
                self._run("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
                          "rate", f"{self.rate_mbit:g}mbit", "burst", str(self.burst_bytes),
                          "latency", f"{self.latency_ms:g}ms")
            self._run("ip", "-n", ns, "link", "set", dev, "up")

    def in_client(self, argv: list[str]) -> list[str]:
        """The argument list that runs argv in the client namespace."""
        return ["ip", "netns", "exec", self.client_netns, *argv]

    def settings(self) -> dict:
        """What the metadata records about the link, read back from the devices."""
        out = {"rate_mbit": self.rate_mbit, "mtu": self.mtu, "offloads": self.offloads,
               "tbf_burst_bytes": self.burst_bytes, "tbf_latency_ms": self.latency_ms,
               "server_host": self.server_host, "client_host": self.client_host,
               "commands": [" ".join(c) for c in self.commands]}
        for ns, dev, key in ((self.netns, self.server_dev, "server"), (self.client_netns, self.client_dev, "client")):
            out[f"{key}_qdisc"] = self._run("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev).strip()
            features = self._run("ip", "netns", "exec", ns, "ethtool", "-k", dev)
            out[f"{key}_offloads"] = sorted(ln.strip() for ln in features.splitlines()
                                            if ln.split(":")[0].strip() in (
                                                "tcp-segmentation-offload", "generic-segmentation-offload",
                                                "generic-receive-offload"))
        return out

    def close(self) -> None:
        errors = []
        for ns in list(reversed(self._made)):
            try:
                _ip("netns", "del", ns)
                self._made.remove(ns)
            except LinkError as exc:
                errors.append(str(exc))
        if errors:
            raise LinkError("; ".join(errors))
