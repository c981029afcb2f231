"""Three ways to run the same notebook cell.

replay  (default) show what a full run captured in data/; run nothing long.
smoke   run every benchmark briefly into a scratch folder (tests and CI).
full    publication runs, written into data/ (refusing to overwrite unless asked).

The profile comes from the IOBENCH_PROFILE environment variable, so a reader can
re-measure a chapter with ``IOBENCH_PROFILE=full make book`` without editing it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from iobench.servers.manifest import ROOT

DATA = ROOT / "data"
SCRATCH = ROOT / "_build" / "bench"


@dataclass(frozen=True)
class Profile:
    name: str
    duration_s: float      # one measured wrk run
    warmup_s: float        # one discarded run of the same load before it
    repeats: int           # per point, interleaved across servers
    quiet_wait_s: float    # how long to wait for a quiet machine before measuring
    time_wait_max_s: float  # how long to wait for TIME_WAIT sockets to drain between servers
    # A Java load generator (the HTTP clients) warms up inside its own JVM, on its one core, for this long
    # before it measures: its JIT must be done, or it is measured compiling (checked: after 2 s at 1,440/s a
    # client spent 4x the CPU per request and queued requests it answered on time after 10 s).
    jvm_warmup_s: float = 0.5
    # A JVM *server* warms up for at most this long under load before its first measured point (the RPC
    # providers: Spring MVC on one core took some 80 s to reach its steady rate, plain Netty some 50 s,
    # compiling on the core it serves from), in windows of at most jvm_window_s whose rates are kept.
    server_jvm_warmup_s: float = 0.5
    jvm_window_s: float = 0.5
    brief: bool = False    # each plan's brief selection (its smoke points and servers) instead of every point

    def timing(self, measured_s: float = 0.0, warmup_s: float = 0.0) -> tuple[float, float]:
        """(measured, warm-up) seconds of one repeat for a plan that asks for `measured_s` and `warmup_s`
        (0: the profile's): a plan may ask for less than its profile, never more."""
        def cap(mine, theirs):
            return min(mine, theirs) if mine > 0 else theirs
        return cap(measured_s, self.duration_s), cap(warmup_s, self.warmup_s)

    def dest(self, dataset: str) -> Path:
        return (DATA if self.name == "full" else SCRATCH / self.name) / dataset


PROFILES = {
    "smoke": Profile("smoke", duration_s=1.0, warmup_s=0.5, repeats=1, quiet_wait_s=2.0, time_wait_max_s=5.0,
                     brief=True),
    # A reader's own machine beside the book's (book/mine.py, iobench mine): the brief selection of every results
    # page's datasets, each point measured once for 2 s after a 1 s warm-up, so that all of them take about half an
    # hour on the book's 2-core machine; never written into data/.
    "mine": Profile("mine", duration_s=2.0, warmup_s=1.0, repeats=1, quiet_wait_s=5.0, time_wait_max_s=20.0,
                    jvm_warmup_s=2.0, server_jvm_warmup_s=10.0, jvm_window_s=2.0, brief=True),
    "full": Profile("full", duration_s=10.0, warmup_s=2.0, repeats=3, quiet_wait_s=30.0, time_wait_max_s=75.0,
                    jvm_warmup_s=10.0, server_jvm_warmup_s=90.0, jvm_window_s=10.0),
}
NAMES = ("replay", "smoke", "full")


def current() -> str:
    name = os.environ.get("IOBENCH_PROFILE", "replay")
    if name not in NAMES:
        raise ValueError(f"IOBENCH_PROFILE={name!r}: expected one of {', '.join(NAMES)}")
    return name
