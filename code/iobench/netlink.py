"""A slow link to a server: a network namespace joined to this one through iom-delaylink.

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
import select
import shutil
import signal
import socket
import statistics
import subprocess
import time
from pathlib import Path

from .lifecycle import _child_setup
from .manifest import CODE

DELAYLINK = CODE / "c" / "build" / "iom-delaylink"
CLIENT_HOST = "10.77.0.1"
SERVER_HOST = "10.77.0.2"
EXIT_UNSUPPORTED = 77
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
        if len(parts) == 4 and name.startswith("iom-srv-") and parts[2].isdigit():
            if not Path(f"/proc/{parts[2]}").exists():
                _ip("netns", "del", name)
                removed.append(name)
    return removed


class DelayLink:
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
    def __enter__(self) -> "DelayLink":
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
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True,
                                     preexec_fn=_child_setup)
        # READY means both devices exist: only then can they be moved and configured.
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.ready_timeout
        buf = b""
        while b"READY\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LinkError(f"iom-delaylink printed no READY within {self.ready_timeout:g} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            chunk = os.read(fd, 256) if ready else b""
            if ready and not chunk:
                code = self.proc.wait()
                err = self.proc.stderr.read().decode(errors="replace").strip()
                if code == EXIT_UNSUPPORTED:
                    raise LinkUnavailable(f"iom-delaylink: not supported here: {err}")
                raise LinkError(f"iom-delaylink exited {code} before READY: {err}; argv={argv}")
            buf += chunk

    def measure_rtt(self, samples: int = 5) -> float:
        """The median of a few TCP round trips across the link, in ms."""
        return statistics.median(refused_connect_ms(self.server_host) for _ in range(samples))

    # -- tear down -----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the program (its devices go with it), then delete the namespace."""
        errors = []
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
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
