"""What each dataset measures: servers x load points (HTTP), or echo points (the Mina vs Netty chapter)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from . import manifest


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
        return f"{self.tool} {self.mode} c={self.connections}{threads}{pipeline}{n}{rate}{work}{backlog}{idle}"


@dataclass(frozen=True)
class Plan:
    dataset: str
    description: str
    servers: tuple[str, ...]
    points: tuple[Point, ...]
    smoke_points: tuple[Point, ...] = field(default=())  # empty: the first and last point
    battery: bool = True
    restart_each_point: bool = False  # a fresh server for every point, as the source write-ups did
    time_wait_drained: int = 2000     # between servers, wait until fewer TIME_WAIT sockets remain
    link_rtt_ms: float = 0.0          # > 0: servers sit behind an iom-delaylink with this round trip
    link_rate_mbit: float = 0.0       # and, > 0, this bandwidth
    idle_timeout_s: float | None = None  # the servers' --idle-timeout-s (None: their default; 0: never)
    smoke_servers: tuple[str, ...] = ()  # smoke: only these (default: every server)
    measured_s: float = 0.0           # > 0: measured seconds per repeat, at most the profile's
    warmup_s: float = 0.0             # > 0: warm-up seconds per repeat, at most the profile's

    def timing(self, profile, point: Point | None = None) -> tuple[float, float]:
        """(measured, warm-up) seconds of one repeat of `point` under `profile`: a plan (or a point) may ask
        for less than the profile, never more."""
        measured = point.measured_s if point is not None and point.measured_s else self.measured_s
        return profile.timing(measured, self.warmup_s)

    @property
    def holds_idle(self) -> bool:
        """Its points hold idle connections: a server's points then run in order, raising them."""
        return any(p.idle_conns for p in self.points)

    def points_for(self, profile: str) -> tuple[Point, ...]:
        if profile == "smoke":
            return self.smoke_points or tuple(dict.fromkeys((self.points[0], self.points[-1])))
        return self.points

    def servers_for(self, profile: str) -> tuple[str, ...]:
        return self.smoke_servers if profile == "smoke" and self.smoke_servers else self.servers

    def only(self, servers) -> "Plan":
        return dataclasses.replace(self, servers=tuple(servers), smoke_servers=())

    def experiment(self, with_battery: bool | None = None):
        """What measures it (runner.run's experiment)."""
        from .bench import HttpExperiment
        return HttpExperiment(self, with_battery)

    @staticmethod
    def reader():
        """What reads its captured folder."""
        from .dataset import load
        return load


def _sweep(tool: str, keepalive: bool, levels: tuple[int, ...]) -> tuple[Point, ...]:
    return tuple(Point(tool, c, keepalive) for c in levels)


# 16 requests per write, as TechEmpower's plaintext test: with one request per round trip, wrk on one core is the
# bottleneck for every fast server; pipelined, the server is, so this point measures a server's capacity. It also
# catches servers that stall on pipelined requests.
PIPELINED = Point("wrk", 40, True, pipeline=16)

BASELINES = Plan(
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

C_SERVERS = Plan(
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
             smoke_points: tuple[Point, ...]) -> Plan:
    """A fresh server for every point, no battery, TIME_WAIT never drained (see above)."""
    return Plan(dataset, description, servers, points, smoke_points, battery=False,
                restart_each_point=True, time_wait_drained=10**9)


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
DELAY_LINK = Plan(
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

JAVA_SERVERS = Plan(
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
SEED_000 = Plan(
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


def __getattr__(name: str):
    """The scale plans (many connections, busy and idle) live in scaleplans.py: plans.IDLE_CONNECTIONS finds them."""
    from . import scaleplans
    try:
        return getattr(scaleplans, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def every() -> dict:
    """Every plan by dataset, of every kind: HTTP and echo (here), scale (scaleplans.py), open-loop (openrun.py),
    HTTP clients (clientrun.py), RPC providers (rpcrun.py)."""
    from .clientrun import CLIENT_PLANS
    from .openrun import OPEN_PLANS
    from .rpcrun import RPC_PLANS
    from .scaleplans import SCALE_PLANS
    return {**PLANS, **SCALE_PLANS, **ECHO_PLANS, **OPEN_PLANS, **CLIENT_PLANS, **RPC_PLANS}


def get(name: str):
    """The plan of dataset `name`, of any kind: each knows its experiment and its reader."""
    plan = every().get(name)
    if plan is None:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(names())}")
    return plan


def names() -> list[str]:
    """Every dataset the harness can measure."""
    return sorted(every())


def experiment(name: str, servers: tuple[str, ...] | None = None, with_battery: bool | None = None):
    """The experiment that measures dataset `name`, for runner.run (`servers`: only these)."""
    plan = get(name)
    if servers:
        plan = plan.only(servers)
    return plan.experiment(with_battery)


# ---- the echo datasets (the Mina vs Netty chapter; measured by echorun.py) ----------------

ECHO_VERSIONS = tuple(manifest.ECHO_SERVERS)
SIZES = (1024, 2048, 5120, 10240, 51200, 102400)
CONNECTIONS = 32  # the source's JMeter thread count is unknown; ~30 fits its TPS x mean latency


@dataclass(frozen=True)
class EchoPoint:
    server: str
    size: int
    link: str = "lo"                      # "lo" or "veth" (VethLink: 1 Gbit, MTU 1500)
    connections: int = CONNECTIONS
    flags: tuple[str, ...] = ()           # extra server flags, e.g. ("--nodelay", "true")
    nodelay: bool = False                 # the generator's TCP_NODELAY (JMeter's default: off)
    split: tuple[int, int, int] = (0, 0, 0)  # generator: every K-th message as B bytes, U µs pause, rest
    capture: str = ""                     # "", "tcpdump" or "jfr"
    experiment: str = "sweep"

    def variant(self) -> str:
        v = " ".join(self.flags) or "defaults"
        if self.nodelay:
            v += "; client nodelay"
        if self.split[0]:
            v += f"; client splits 1 in {self.split[0]} at {self.split[1]} B"
        return v

    def label(self) -> str:
        """The progress line's description (the runner puts the server id before it)."""
        return f"{self.size:>6} B {self.link:4s} c={self.connections} [{self.variant()}]"

    def stem(self, repeat: int) -> str:
        short = {"--read-buffer": "rb", "--min-read-buffer": "min", "--max-read-buffer": "max",
                 "--nodelay": "nodelay", "--allocator": "alloc"}
        flags = "".join(short.get(f, f.strip("-")) for f in self.flags) or "default"
        client = ("-nd" if self.nodelay else "") + (f"-s{self.split[0]}x{self.split[1]}" if self.split[0] else "")
        cap = f"-{self.capture}" if self.capture else ""
        return (f"{self.experiment}/{self.server}/{self.link}-{self.size}-c{self.connections}-{flags}"
                f"{client}{cap}-r{repeat}")


@dataclass(frozen=True)
class EchoPlan:
    dataset: str
    description: str
    points: tuple[EchoPoint, ...]
    smoke_points: tuple[EchoPoint, ...] = field(default=())

    def points_for(self, profile: str) -> tuple[EchoPoint, ...]:
        return self.smoke_points if profile == "smoke" and self.smoke_points else self.points

    def only(self, servers) -> "EchoPlan":
        keep = lambda points: tuple(p for p in points if p.server in servers)  # noqa: E731
        return dataclasses.replace(self, points=keep(self.points), smoke_points=keep(self.smoke_points))

    def experiment(self, with_battery: bool | None = None):
        """What measures it (no battery: the echo servers are not HTTP servers)."""
        from .echorun import EchoExperiment
        return EchoExperiment(self)

    @staticmethod
    def reader():
        """What reads its captured folder: an echo dataset has a table of its own."""
        from .echo import load
        return load


SWEEP = EchoPlan(
    dataset="echo-sweep",
    description="source write-up 001's sweep: Mina 2.0.7, Netty 3.6.2, Mina 2.2.10 and Netty 4.2.20 echo "
                "servers (framework defaults, IO threads = executor threads = cores), messages of 1 KiB "
                "to 100 KiB, 32 connections, on loopback and on a 1 Gbit MTU-1500 veth link",
    points=tuple(EchoPoint(s, size, link) for link in ("lo", "veth") for size in SIZES for s in ECHO_VERSIONS),
    # smoke: the sizes the chapter quotes, so that its page runs under every profile
    smoke_points=tuple(EchoPoint(s, size, link) for link in ("lo", "veth") for size in (5120, 102400)
                       for s in ECHO_VERSIONS),
)

# The mechanism, one factor at a time (all at 5 KiB on the veth link unless said):
def _pinned(n: int) -> tuple[str, ...]:  # Mina's read buffer fixed at n bytes (first size included)
    return ("--read-buffer", str(n), "--min-read-buffer", str(n), "--max-read-buffer", str(n))


_FORCED = _pinned(4096)      # every 5 KiB message: 4096 + 1024
_FORCED_10K = _pinned(8192)  # every 10 KiB message: 8192 + 2048
_PARTIAL = (10, 1448, 200)  # 1 message in 10 arrives as one segment, then the rest 200 µs later
EXPERIMENTS = EchoPlan(
    dataset="echo-experiments",
    description="the 5 KiB mechanism on the 1 Gbit veth link: Mina's read buffer forced to split "
                "messages, with Nagle on and off; partial arrivals forced by the generator, with and "
                "without Mina's fixes; a packet trace of one stall; JFR allocation profiles on loopback",
    points=(
        # split x Nagle: is the cost the split, or the split meeting Nagle and delayed ACKs?
        EchoPoint("mina-2.0.7", 5120, "veth", flags=_FORCED, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "veth", flags=_FORCED + ("--nodelay", "true"), experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "veth", flags=_FORCED, nodelay=True, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 10240, "veth", flags=_FORCED_10K, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 10240, "veth", flags=_FORCED_10K + ("--nodelay", "true"), experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "lo", flags=_FORCED, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "lo", flags=_FORCED + ("--nodelay", "true"), experiment="split-nagle"),
        # 100 KiB on loopback: Mina's buffer stops at 65536, so every message is read (and echoed) in two parts
        EchoPoint("mina-2.0.7", 102400, "lo", experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 102400, "lo", flags=("--nodelay", "true"), experiment="split-nagle"),
        # natural trigger: some messages arrive in two parts; what does each framework do?
        *(EchoPoint(s, 5120, "veth", split=_PARTIAL, experiment="partial") for s in ECHO_VERSIONS),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--min-read-buffer", "8192"),
                  experiment="partial"),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--nodelay", "true"), experiment="partial"),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--allocator", "cached"), experiment="partial"),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--allocator", "direct"), experiment="partial"),
        EchoPoint("netty-4.2.20", 5120, "veth", split=_PARTIAL, flags=("--nodelay", "false"), experiment="partial"),
        # one connection, packets captured: the stall itself
        EchoPoint("mina-2.0.7", 5120, "veth", connections=1, flags=_FORCED, capture="tcpdump", experiment="trace"),
        EchoPoint("mina-2.0.7", 10240, "veth", connections=1, flags=_FORCED_10K, capture="tcpdump",
                  experiment="trace"),
        # what each framework allocates per message (loopback: no stalls, only work)
        *(EchoPoint(s, 5120, "lo", capture="jfr", experiment="alloc") for s in ECHO_VERSIONS),
        # and at 50 KiB, where Netty 4.2 needs twice the CPU per message of the others on loopback
        *(EchoPoint(s, 51200, "lo", capture="jfr", experiment="alloc") for s in ("netty-3.6.2", "netty-4.2.20")),
        EchoPoint("netty-4.2.20", 51200, "lo", flags=("--nodelay", "false"), experiment="alloc"),
    ),
    # smoke: every point, briefly (the chapter reads each one)
)

# Which sizes does a partial arrival make Mina split by capacity? Its sizing says: the sizes
# less than one segment (1448 bytes) above a power of two (book/java/mina-netty.md).
SPLIT_SIZES = (2048, 3072, 3584, 5120, 6144, 9216, 10240)
SPLIT_RATE = EchoPlan(
    dataset="echo-split-rate",
    description="Mina 2.0.7 on the 1 Gbit veth link, 1 message in 10 arriving in two parts: how often "
                "each message size is split by a full read buffer, and what that costs",
    points=tuple(EchoPoint("mina-2.0.7", size, "veth", split=_PARTIAL, experiment="split-rate")
                 for size in SPLIT_SIZES),
)

ECHO_PLANS = {p.dataset: p for p in (SWEEP, EXPERIMENTS, SPLIT_RATE)}

