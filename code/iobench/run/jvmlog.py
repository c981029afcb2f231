"""A JVM's safepoints, logged as they happen and matched to the measured windows they fell in.

Every stop-the-world pause of a HotSpot JVM (a young collection, a deoptimisation, a biased-lock
revocation in older JDKs) is a safepoint: every Java thread parks until the VM thread is done, so a
server answers nothing meanwhile. With ``flags(path)`` the JVM writes one line per safepoint and per
collection to `path`, each stamped with the wall clock in milliseconds (``timemillis``):

  [1795672092821ms][1077ms][safepoint] Safepoint "G1CollectForAllocation", Time since last: 993237343 ns,
      Reaching safepoint: 6122 ns, At safepoint: 12348161 ns, Leaving safepoint: 37120 ns, Total: 12391403 ns, ...

The line is written when the safepoint ends; it began Total ns earlier. ``window`` counts the safepoints
that ended inside a measured window (the sampler's wall-clock bounds) and sums their time; the log itself
is kept beside the raw output, so every column can be checked against it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r'^\[(\d+)ms\].*\[safepoint\s*\] Safepoint "([^"]+)".*?Reaching safepoint: (\d+) ns.*?'
                  r'At safepoint: (\d+) ns.*?Total: (\d+) ns')
GC = ("G1", "GenCollect", "ParallelGC", "CollectFor", "ZMark", "ZRelocate", "Shenandoah")  # a collection's


def flags(path: Path | str) -> tuple[str, ...]:
    """The JVM flag that writes `path`: collections and safepoints, stamped with the wall clock."""
    return (f"-Xlog:gc,safepoint:file={path}:timemillis,uptimemillis,tags",)


@dataclass(frozen=True)
class Safepoint:
    ended_ms: int     # wall clock (ms since the epoch) when the JVM's threads were let go
    name: str         # the VM operation: "G1CollectForAllocation", "Cleanup", ...
    reaching_ns: int  # from the request until every Java thread had parked
    at_ns: int        # the operation itself
    total_ns: int

    @property
    def gc(self) -> bool:
        return any(k in self.name for k in GC)


def parse(text: str) -> list[Safepoint]:
    """The safepoints of a log written with ``flags`` (lines of other tags are skipped)."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append(Safepoint(int(m[1]), m[2], int(m[3]), int(m[4]), int(m[5])))
    return out


def window(safepoints: list[Safepoint], started_epoch: float, ended_epoch: float) -> dict:
    """The columns of one measured window: how many safepoints ended in it, how many were collections, the
    longest (ms) and their total (ms)."""
    lo, hi = 1000 * started_epoch, 1000 * ended_epoch
    inside = [s for s in safepoints if lo <= s.ended_ms <= hi]
    return {"jvm_safepoints": len(inside), "jvm_gc_pauses": sum(s.gc for s in inside),
            "jvm_safepoint_max_ms": max((s.total_ns for s in inside), default=0) / 1e6,
            "jvm_safepoint_ms": sum(s.total_ns for s in inside) / 1e6}


_PAUSE = re.compile(r"Pause .*?(\d+)M->(\d+)M\(\d+M\) ([\d.]+)ms$")


def gc_pauses(log: str) -> dict:
    """A -Xlog:gc log's pauses over the JVM's whole life: how many, their seconds, the most heap in use after
    one (MiB). (The HTTP clients' logs; a server's safepoints are matched to windows by ``window``.)"""
    found = [m for m in map(_PAUSE.search, log.splitlines()) if m]
    return {"gc_pauses": len(found), "gc_pause_s": sum(float(m[3]) for m in found) / 1000,
            "gc_heap_after_mib": max((int(m[2]) for m in found), default=0)}


def read_window(path: Path | None, started_epoch: float, ended_epoch: float) -> dict:
    """``window`` over the log at `path` as it stands (the JVM flushes each line as it writes it); all None
    without a log (not a JVM's run)."""
    if path is None or not path.exists():
        return dict.fromkeys(("jvm_safepoints", "jvm_gc_pauses", "jvm_safepoint_max_ms", "jvm_safepoint_ms"))
    return window(parse(path.read_text(errors="replace")), started_epoch, ended_epoch)
