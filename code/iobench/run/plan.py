"""The one shape of a plan: what a dataset measures. Every kind's plan extends it with only what differs.

A plan names its dataset, says what it measures, and lists its points (one load each: a point is the
kind's own frozen dataclass, with a label() for the progress line), the smaller set a smoke run takes,
and the servers it measures (a kind whose points name their own server, or their client, leaves
`servers` empty and says which field of a point `only` filters on). A plan may ask for fewer measured
and warm-up seconds than the profile gives, never more.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from iobench.run import jvmmem
from iobench.run.kpaths import KPROFILE_COLUMNS
from iobench.run.probes import SYSCALL_COLUMNS
from iobench.run.profiles import PROFILES
from iobench.servers import manifest


@dataclass(frozen=True, kw_only=True)
class Plan:
    dataset: str
    description: str
    points: tuple = ()
    smoke_points: tuple = ()           # smoke: these (none: smoke_default())
    servers: tuple[str, ...] = ()      # the servers measured, in order (none: each point names its own)
    smoke_servers: tuple[str, ...] = ()  # smoke: only these (none: every server)
    measured_s: float = 0.0            # > 0: measured seconds per point, at most the profile's
    warmup_s: float = 0.0              # > 0: warm-up seconds per point, at most the profile's
    syscalls: bool = False             # count the server's system calls by kind in each measured run (a
                                       # tracepoint's cost on every call: its CPU columns are not comparable)
    kprofile: bool = False             # sample the server's stacks, kernel and user, in the points that ask
                                       # (point.profiled): its CPU per request by path (run/kprofile.py, kpaths.py)
    jvm_memory: bool = False           # a Java server's heap after a full collection and its native memory by
                                       # category, read at rest after each point (run/jvmmem.py; its rates are
                                       # measured with Native Memory Tracking on: not comparable either)

    member: ClassVar[str] = "server"   # the field of a point that `only` keeps, where the plan has no servers

    def smoke_default(self) -> tuple:
        """The points a smoke run takes when the plan names none: every point."""
        return self.points

    def measured_columns(self) -> list[str]:
        """The columns its optional measurements add to a row of any kind: system calls, CPU by path, a JVM's memory."""
        return ((SYSCALL_COLUMNS if self.syscalls else []) + (KPROFILE_COLUMNS if self.kprofile else [])
                + (jvmmem.COLUMNS if self.jvm_memory else []))

    def points_for(self, profile: str) -> tuple:
        """The points a run under this profile measures: a brief profile's (smoke, mine) the smoke selection."""
        if PROFILES[profile].brief:
            return self.smoke_points or self.smoke_default()
        return self.points

    def servers_for(self, profile: str) -> tuple[str, ...]:
        return self.smoke_servers if PROFILES[profile].brief and self.smoke_servers else self.servers

    def serving(self, profile: str) -> list:
        """The servers (manifest entries) a run under this profile measures."""
        return [manifest.get(s) for s in self.servers_for(profile)]

    def members(self) -> tuple[str, ...]:
        """What `only` can keep: the plan's servers, or the members its points name (its clients), in order."""
        if self.servers:
            return self.servers
        return tuple(dict.fromkeys(getattr(p, self.member) for p in self.points + self.smoke_points))

    def only(self, names) -> "Plan":
        """The same plan for these servers (or clients) only: a reader's run of one server. A name the plan does
        not measure is refused (KeyError, naming the ones it does)."""
        names = tuple(names)
        unknown = [n for n in names if n not in self.members()]
        if unknown:
            which = (f"{unknown[0]!r} is not a {self.member}" if len(unknown) == 1 else
                     f"{', '.join(map(repr, unknown[:-1]))} and {unknown[-1]!r} are not {self.member}s")
            raise KeyError(f"{which} of {self.dataset}; its {self.member}s: {', '.join(self.members())}")
        if self.servers:
            return dataclasses.replace(self, servers=names, smoke_servers=())
        def keep(points):
            return tuple(p for p in points if getattr(p, self.member) in names)
        return dataclasses.replace(self, points=keep(self.points), smoke_points=keep(self.smoke_points))

    def timing(self, profile, point=None) -> tuple[float, float]:
        """(measured, warm-up) seconds of one repeat of `point` under `profile`: the point's own measured
        seconds if it has any, else the plan's; never more than the profile's."""
        measured = getattr(point, "measured_s", 0.0) or self.measured_s
        return profile.timing(measured, self.warmup_s)
