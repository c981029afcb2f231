"""What each dataset measures: servers x load points. Chapters add their own plans."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Point:
    tool: str
    connections: int
    keepalive: bool = True
    work_ms: float = 0.0
    requests: int = 0  # ab only: a request count (-n) instead of the profile's duration
    rate: float = 0.0  # openloop only: requests per second

    @property
    def mode(self) -> str:
        return "keepalive" if self.keepalive else "close"

    def label(self) -> str:
        work = f" work={self.work_ms:g}ms" if self.work_ms else ""
        n = f" n={self.requests}" if self.requests else ""
        rate = f" rate={self.rate:g}/s" if self.rate else ""
        return f"{self.tool} {self.mode} c={self.connections}{n}{rate}{work}"


@dataclass(frozen=True)
class Plan:
    dataset: str
    description: str
    servers: tuple[str, ...]
    points: tuple[Point, ...]
    smoke_points: tuple[Point, ...] = field(default=())  # empty: the first and last point
    battery: bool = True

    def points_for(self, profile: str) -> tuple[Point, ...]:
        if profile == "smoke":
            return self.smoke_points or tuple(dict.fromkeys((self.points[0], self.points[-1])))
        return self.points


def _sweep(tool: str, keepalive: bool, levels: tuple[int, ...]) -> tuple[Point, ...]:
    return tuple(Point(tool, c, keepalive) for c in levels)


BASELINES = Plan(
    dataset="baselines",
    description="nginx (one worker) and python's http.server on hello-world: the anchors of every chapter",
    servers=("nginx", "python-http-server"),
    points=(_sweep("wrk", True, (1, 10, 40, 100, 400, 1000))
            + _sweep("wrk", False, (1, 10, 40, 100, 400))
            + (Point("ab", 40, True), Point("ab", 40, False))),
    smoke_points=(Point("wrk", 1, True), Point("wrk", 40, True), Point("wrk", 40, False),
                  Point("ab", 40, True), Point("ab", 40, False)),
)

C_IDS = ("c-sequential", "c-fork", "c-prefork", "c-thread", "c-threadpool", "c-coroutine",
         "c-select", "c-poll", "c-epoll", "c-epoll-et", "c-epoll-reuseport", "c-uring")

C_SERVERS = Plan(
    dataset="c-servers",
    description="every C server and nginx, keep-alive: hello-world at 1, 40 and 1000 connections, "
                "and 20 ms of simulated work at 40 connections",
    servers=("nginx",) + C_IDS,
    points=(_sweep("wrk", True, (1, 40, 1000)) + (Point("wrk", 40, True, work_ms=20.0),)),
    smoke_points=(Point("wrk", 40, True), Point("wrk", 40, True, work_ms=20.0)),
    battery=True,
)

PLANS = {p.dataset: p for p in (BASELINES, C_SERVERS)}


def get(name: str) -> Plan:
    try:
        return PLANS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(PLANS))}") from None
