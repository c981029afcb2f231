"""What each closed-loop HTTP dataset measures: servers x load points (the many-connections plans are in
scaleplans.py)."""
from __future__ import annotations

from dataclasses import dataclass

from iobench.run import kernelmem
from iobench.run.plan import Plan
from iobench.servers import manifest


@dataclass(frozen=True)
class Point:
    tool: str
    connections: int
    keepalive: bool = True
    work_ms: float = 0.0
    requests: int = 0  # ab only: a request count (-n) instead of the profile's duration
    rate: float = 0.0  # openloop only: requests per second
    backlog: int = 0   # the server's listen backlog (0: its default), for servers that take it
    timeout_s: float = 5.0  # the load generator's per-request timeout
    threads: int = 1   # wrk: threads (the book pins wrk to one core, so 1 unless reproducing a source)
    pipeline: int = 1  # wrk: requests per write (16: TechEmpower's plaintext load, server-bound on 2 cores)
    idle_conns: int = 0  # idle keep-alive connections held open beside the load (idle.py)
    measured_s: float = 0.0  # > 0: this point's measured seconds, instead of its plan's (at most the profile's)
    share: str = ""    # how the server's workers share the port (c-epoll-workers' --share), for servers that take it

    @property
    def mode(self) -> str:
        return "keepalive" if self.keepalive else "close"

    def label(self) -> str:
        work = f" work={self.work_ms:g}ms" if self.work_ms else ""
        n = f" n={self.requests}" if self.requests else ""
        rate = f" rate={self.rate:g}/s" if self.rate else ""
        backlog = f" backlog={self.backlog}" if self.backlog else ""
        threads = f" t={self.threads}" if self.threads != 1 else ""
        pipeline = f" p={self.pipeline}" if self.pipeline != 1 else ""
        idle = f" idle={self.idle_conns}" if self.idle_conns else ""
        share = f" share={self.share}" if self.share else ""
        return f"{self.tool} {self.mode} c={self.connections}{threads}{pipeline}{n}{rate}{work}{backlog}{idle}{share}"


# In an idle study, a server of several processes: how many held connections, and the fewest and most one held.
WORKER_COLUMNS = ["share", "workers_holding", "worker_conns_min", "worker_conns_max", "worker_conns"]
# What its workers said as they stopped (c-epoll-workers --worker-counts): connections accepted, times the
# listening socket woke one, and of those times the ones that found nothing to accept (a thundering herd); and
# the server's context switches (voluntary: it slept; involuntary: it was preempted) and CPU while the idle
# connections were raised, summed over its processes.
COUNT_COLUMNS = ["workers_reported", "accepted_total", "accepted_min", "accepted_max", "listen_wakeups",
                 "listen_empty", "worker_counts_file", "raise_vcsw", "raise_ivcsw", "raise_cpu_s"]


@dataclass(frozen=True, kw_only=True)
class HttpPlan(Plan):
    """Servers x points of closed-loop HTTP load; under smoke, without smoke_points, its first and last point."""
    battery: bool = True
    restart_each_point: bool = False  # a fresh server for every point, as the source write-ups did
    time_wait_drained: int = 2000     # between servers, wait until fewer TIME_WAIT sockets remain
    link_rtt_ms: float = 0.0          # > 0: servers sit behind an iom-delaylink with this round trip
    link_rate_mbit: float = 0.0       # and, > 0, this bandwidth
    idle_timeout_s: float | None = None  # the servers' --idle-timeout-s (None: their default; 0: never)
    pools: tuple[tuple[str, int], ...] = ()  # (server, pool size) for servers run with a pool of their own here
    kernel_memory: bool = False       # at rest after each point, the kernel's memory too (run/kernelmem.py)
    by_process: bool = False          # at rest after each point, the connections each of its processes holds
    worker_counts: bool = False       # a server's workers report what they accepted and how often they woke for it

    def pool(self, server_id: str) -> int | None:
        """The pool size this plan runs a server with (None: the server's default)."""
        return dict(self.pools).get(server_id)

    def measured_columns(self) -> list[str]:
        return (super().measured_columns() + (kernelmem.COLUMNS if self.kernel_memory else [])
                + (WORKER_COLUMNS if self.by_process else []) + (COUNT_COLUMNS if self.worker_counts else []))

    def smoke_default(self) -> tuple[Point, ...]:
        return tuple(dict.fromkeys((self.points[0], self.points[-1])))

    @property
    def holds_idle(self) -> bool:
        """Its points hold idle connections: a server's points then run in order, raising them."""
        return any(p.idle_conns for p in self.points)


def _sweep(tool: str, keepalive: bool, levels: tuple[int, ...]) -> tuple[Point, ...]:
    return tuple(Point(tool, c, keepalive) for c in levels)


# 16 requests per write, as TechEmpower's plaintext test: with one request per round trip, wrk on one core is the
# bottleneck for every fast server; pipelined, the server is, so this point measures a server's capacity. It also
# catches servers that stall on pipelined requests.
PIPELINED = Point("wrk", 40, True, pipeline=16)

BASELINES = HttpPlan(
    dataset="baselines",
    description="nginx (one worker) and python's http.server on hello-world: the anchors of every "
                "chapter (and 16 pipelined requests per write at 40 connections)",
    servers=("nginx", "python-http-server"),
    points=(_sweep("wrk", True, (1, 10, 40, 100, 400, 1000))
            + _sweep("wrk", False, (1, 10, 40, 100, 400))
            + (Point("ab", 40, True), Point("ab", 40, False), PIPELINED)),
    smoke_points=(Point("wrk", 1, True), Point("wrk", 40, True), Point("wrk", 40, False),
                  Point("ab", 40, True), Point("ab", 40, False), PIPELINED),
)

# The C servers data/c-servers and data/ab-grid measured, in the manifest's order; not manifest.ids("C"): a later
# server (c-uring-multishot) has no data there, and the chapters replay those captures as they are.
C_MEASURED = ("c-sequential", "c-fork", "c-prefork", "c-thread", "c-threadpool", "c-coroutine",
              "c-select", "c-poll", "c-epoll", "c-epoll-et", "c-epoll-reuseport", "c-uring")

C_SERVERS = HttpPlan(
    dataset="c-servers",
    description="every C server and nginx, keep-alive: hello-world at 1, 40 and 1000 connections, "
                "20 ms of simulated work at 40 connections, and 16 pipelined requests per write at 40",
    servers=("nginx",) + C_MEASURED,
    points=(_sweep("wrk", True, (1, 40, 1000)) + (Point("wrk", 40, True, work_ms=20.0), PIPELINED)),
    smoke_points=(Point("wrk", 40, True), Point("wrk", 40, True, work_ms=20.0), PIPELINED),
    battery=True,
)

# Source write-up 002, reproduced: its ab grid (HTTP/1.0, a new connection per request, count-bound) on loopback,
# against every C server and python's http.server. ab's own default timeout (30 s) as the source ran it; a fresh
# server for every point, as its notes say it had to restart them. Loopback reuses TIME_WAIT ports (tcp_tw_reuse=2),
# so the tens of thousands of TIME_WAIT sockets this grid leaves (up to the kernel's tcp_max_tw_buckets) need no
# drain in between: waiting for 60 s after every point would turn a 30-minute grid into hours.
def _ab_close(connections: int, requests: int, backlog: int = 0) -> Point:
    """ab as source 002 ran it: HTTP/1.0, a new connection per request, -n requests, its 30 s timeout."""
    return Point("ab", connections, False, requests=requests, timeout_s=30.0, backlog=backlog)


def _ab_plan(dataset: str, description: str, servers: tuple[str, ...], points: tuple[Point, ...],
             smoke_points: tuple[Point, ...]) -> HttpPlan:
    """A fresh server for every point, no battery, TIME_WAIT never drained (see above)."""
    return HttpPlan(dataset=dataset, description=description, servers=servers, points=points,
                    smoke_points=smoke_points, battery=False, restart_each_point=True, time_wait_drained=10**9)


AB_GRID = _ab_plan(
    "ab-grid",
    "source write-up 002's ab grid on loopback: -n 1000/5000/10000 x -c 1/10/100/1000, "
    "HTTP/1.0 without keep-alive, a fresh server per point",
    C_MEASURED + ("python-http-server",),
    tuple(_ab_close(c, n) for n in (1000, 5000, 10000) for c in (1, 10, 100, 1000)),
    (_ab_close(1, 1000), _ab_close(100, 1000)))

# What the listen backlog does to a burst of 1000 new connections: the C servers default to
# 4096; tutorials (and python's socketserver, request_queue_size = 5) use 5.
AB_BACKLOG = _ab_plan(
    "ab-backlog",
    "ab -n 10000 at 100 and 1000 connections against c-sequential, c-fork and c-thread "
    "with listen backlogs of 5, 128 and 4096",
    ("c-sequential", "c-fork", "c-thread"),
    tuple(_ab_close(c, 10000, backlog=b) for b in (5, 128, 4096) for c in (100, 1000)),
    (_ab_close(1000, 1000, backlog=5), _ab_close(1000, 1000, backlog=4096)))

# Source write-up 002's "public IP" case: its server was a round trip away (about 97 ms per request on a new
# connection, i.e. two round trips of ~48 ms). Here the server sits in a network namespace behind iom-delaylink with
# a 50 ms round trip; ab runs for a fixed time, since the sequential server manages only a few requests per second.
DELAY_LINK = HttpPlan(
    dataset="delay-link",
    description="the source's four servers (and c-epoll, python's http.server) behind a 50 ms "
                "round trip: ab without keep-alive at 1, 10 and 100 connections, and ab -k at 10",
    servers=("c-sequential", "c-fork", "c-thread", "c-coroutine", "c-epoll", "python-http-server"),
    points=(Point("ab", 1, False, timeout_s=30.0), Point("ab", 10, False, timeout_s=30.0),
            Point("ab", 100, False, timeout_s=30.0), Point("ab", 10, True, timeout_s=30.0)),
    smoke_points=(Point("ab", 1, False, timeout_s=30.0), Point("ab", 10, False, timeout_s=30.0),
                  Point("ab", 10, True, timeout_s=30.0)),
    battery=False,
    link_rtt_ms=50.0,
)

JAVA_IDS = manifest.ids("Java")  # java-blocking ... java-mina, as registered

JAVA_SERVERS = HttpPlan(
    dataset="java-servers",
    description="every corrected Java server and nginx, keep-alive: hello-world at 40 and 1000 "
                "connections, 20 ms of simulated blocking work at 40 connections, and 16 pipelined "
                "requests per write at 40",
    servers=("nginx",) + JAVA_IDS,
    points=(Point("wrk", 40, True), Point("wrk", 1000, True), Point("wrk", 40, True, work_ms=20.0), PIPELINED),
    smoke_points=(Point("wrk", 40, True), Point("wrk", 40, True, work_ms=20.0), PIPELINED),
)

# Source write-up 000, reproduced: its three servers as published and their corrected
# counterparts, each sleeping 20 ms per request, under its own wrk settings (-t8 -c40).
SEED_000 = HttpPlan(
    dataset="seed-000",
    description="source write-up 000: its blocking, thread-pool and Netty servers as published, and "
                "the book's corrected ones, 20 ms of work per request, wrk -t8 -c40",
    servers=("java-seed000-blocking", "java-seed000-threadpool", "java-seed000-netty",
             "java-blocking", "java-threadpool", "java-netty"),
    points=(Point("wrk", 40, True, work_ms=20.0, threads=8),),
    battery=False,
    time_wait_drained=10**9,  # the as-published servers close every connection; loopback reuses the ports
)

PLANS = {p.dataset: p for p in (BASELINES, C_SERVERS, AB_GRID, AB_BACKLOG, DELAY_LINK, JAVA_SERVERS, SEED_000)}
