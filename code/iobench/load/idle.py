"""Idle keep-alive connections held open beside a server while busy ones are measured.

What separates the IO models at scale is what a connection costs while it does nothing:
a thread and its stack, a process, a coroutine's stack, a buffer, a slot in a select set.
`IdleConnections` raises the number of idle connections a server holds step by step
(0, 1,000, 10,000, 100,000), each step one more `iom-idle` process (code/c/tools/idle.c), or
several when the step is more than one process may hold (its descriptor limit: `per_process`),
each of which opens its share, sends one request on each, reads the answer and then holds them
silent until it is told to stop. Each process uses its own block of source addresses in
127.0.0.0/8 (a /24 each, up to 20,000 connections per address), since one address has
only ~28,000 ephemeral ports. Every holder's output is kept as raw output.
"""
from __future__ import annotations

import json
import re
import resource
import signal
import subprocess
import threading
from dataclasses import dataclass, field

from iobench.run.metadata import now
from iobench.servers.manifest import C_BUILD

IDLE_BIN = C_BUILD / "iom-idle"
PER_SOURCE = 20_000
SETUP_WAIT_S = 30  # iom-idle waits at most this long for answers (a full pool never answers the rest)
SETUP_TIMEOUT_S = 120.0
SPARE_FDS = 64  # what one iom-idle keeps for itself beyond its connections (stdio, epoll, signalfd, libc)
COUNTS = ("connections", "established", "answered", "unanswered", "failed", "held")


def per_process() -> int:
    """The idle connections one iom-idle may hold: the hard descriptor limit it inherits (it raises its soft
    limit to it), less what it keeps for itself. The harness raises its own first (limits.raise_nofile)."""
    return max(1, resource.getrlimit(resource.RLIMIT_NOFILE)[1] - SPARE_FDS)


def merged(reports: list[dict]) -> dict:
    """Several holders' IDLE reports as one: the counts summed, the errors summed by kind, the sources
    in order, the longest set-up."""
    if not reports:
        return {}
    errors: dict[str, int] = {}
    for r in reports:
        for k, v in r.get("errors", {}).items():
            errors[k] = errors.get(k, 0) + v
    return {**{k: sum(r[k] for r in reports) for k in COUNTS}, "errors": errors,
            "sources": [a for r in reports for a in r.get("sources", [])],
            "setup_s": max(r.get("setup_s", 0) for r in reports), "holders": len(reports)}


def parse_line(tag: str, text: str) -> dict | None:
    """The JSON object of iom-idle's `TAG {...}` line, or None if it printed none."""
    m = re.search(rf"^{tag} (\{{.*\}})\s*$", text, re.M)
    return json.loads(m.group(1)) if m else None


def established(port: int) -> int:
    """Server-side connections of `port` established now (the idle ones, between loads)."""
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=60).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def established_by_process(port: int) -> dict[int, int]:
    """Server-side connections of `port` established now, by the process holding each ({pid: count}): how a
    server of several worker processes has spread them. A socket two processes share counts for each."""
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=120).stdout
    held: dict[int, int] = {}
    for line in out.splitlines():
        for pid in {int(p) for p in re.findall(r"pid=(\d+)", line)}:
            held[pid] = held.get(pid, 0) + 1
    return held


@dataclass
class Holder:
    """One iom-idle process and what it reported."""
    argv: list[str]
    proc: subprocess.Popen
    output: list[str] = field(default_factory=list)
    setup: dict | None = None
    end: dict | None = None
    started: str = ""
    reader: threading.Thread | None = None


class IdleConnections:
    """The idle connections beside one server process, from its start to its stop."""

    def __init__(self, host: str, port: int, prefix: list[str], keep_raw, wait_s: float = SETUP_WAIT_S):
        self.host, self.port, self.prefix = host, port, prefix
        self.wait_s = min(wait_s, SETUP_WAIT_S)
        self.keep_raw = keep_raw  # (index, Holder) -> None: stores its raw output
        self.holders: list[Holder] = []
        self.base_pss_kib: int | None = None  # at rest with no idle connection, after a load
        self.stopped_at: int | None = None  # the idle count at which some went unanswered
        self.why_stopped = ""

    @property
    def asked(self) -> int:
        return sum(h.setup["connections"] for h in self.holders if h.setup)

    @property
    def answered(self) -> int:
        return sum(h.setup["answered"] for h in self.holders if h.setup)

    def hold(self, n: int) -> dict:
        """Raise the idle connections to n (never lowers them), in as many new holders as one process's
        descriptor limit needs; returns their reports merged, or {} when none was needed. A holder whose
        connections were not all answered ends the raise: the server goes no further."""
        reports = []
        while (more := n - self.asked) > 0 and self.stopped_at is None:
            reports.append(self._start(min(more, per_process()), n))
        return merged(reports)

    def _start(self, more: int, n: int) -> dict:
        """One more holder of `more` connections, on its own block of source addresses; its report."""
        k = len(self.holders) + 1
        argv = self.prefix + [str(IDLE_BIN), "--host", self.host, "--port", str(self.port),
                              "--connections", str(more), "--source", f"127.0.{k}.1",
                              "--per-source", str(PER_SOURCE), "--timeout-s", f"{self.wait_s:g}"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                stdin=subprocess.DEVNULL)
        h = Holder(argv, proc, started=now())
        self.holders.append(h)
        ready = threading.Event()

        def drain() -> None:
            for line in proc.stdout:
                h.output.append(line)
                if line.startswith("IDLE "):
                    ready.set()
            ready.set()
        h.reader = threading.Thread(target=drain, daemon=True)
        h.reader.start()
        ready.wait(SETUP_TIMEOUT_S)
        h.setup = parse_line("IDLE", "".join(h.output))
        if h.setup is None:
            raise RuntimeError(f"iom-idle reported no setup (exit {proc.poll()}): {''.join(h.output)[-500:]}")
        if h.setup["unanswered"] or h.setup["failed"]:  # as far as this server goes: no more after it
            self.stopped_at = n
            self.why_stopped = (f"of {more:,} more, {h.setup['unanswered']:,} unanswered, {h.setup['failed']:,} "
                                f"failed {h.setup['errors']}")
        return h.setup

    def __enter__(self) -> "IdleConnections":
        return self

    def __exit__(self, *exc) -> None:
        """Stop every holder (each reports how many of its connections the server closed),
        keep its output; a holder that ignores SIGTERM is killed."""
        for h in self.holders:
            if h.proc.poll() is None:
                h.proc.send_signal(signal.SIGTERM)
        for i, h in enumerate(self.holders, 1):
            try:
                h.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                h.proc.kill()
                h.proc.wait()
                h.output.append("[iobench] iom-idle killed: no exit 30 s after SIGTERM\n")
            h.reader.join(timeout=10)
            h.end = parse_line("IDLE_END", "".join(h.output))
            if self.keep_raw is not None:
                self.keep_raw(i, h)
