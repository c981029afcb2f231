"""What each closed-loop HTTP dataset measures: servers x load points; below them the many-connections plans
(busy and idle connections, book/synthesis/many-connections.md)."""
from __future__ import annotations

from dataclasses import dataclass

from iobench.kinds.http.dataset import COUNT_COLUMNS, WORKER_COLUMNS
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


# ---- many connections: busy and idle ------------------------------------------------------------------
# One connection at a time by design: a single idle connection stops them (book/c/blocking.md): not in the idle study.
ONE_AT_A_TIME = ("c-sequential", "java-blocking")
EVERY_MODEL = ("nginx",) + manifest.ids("C") + JAVA_IDS

# N idle keep-alive connections (each answered once, then silent) beside 40 busy ones: what a connection costs a
# model while it does nothing. One server process per repeat raises them 0 -> 1,000 -> 10,000 -> 100,000 (idle.py),
# so memory per idle connection is measured against the same process at rest with none. No server drops an idle
# connection here (--idle-timeout-s 0). Each level leaves its idle connections in TIME_WAIT (the holder closes
# first): loopback reuses those ports (tcp_tw_reuse=2), and holders use addresses of their own: no drain.
# What every study of idle connections shares: no conformance battery, no server drops an idle connection, no wait
# for TIME_WAIT to drain between servers.
IDLE_STUDY = dict(battery=False, idle_timeout_s=0, time_wait_drained=10**9)
IDLE_LEVELS = (0, 1_000, 10_000, 100_000)
IDLE_CONNECTIONS = HttpPlan(
    dataset="idle-connections",
    description="every model but the one-at-a-time servers, and nginx: 40 busy keep-alive connections "
                "measured while 0, 1,000, 10,000 and 100,000 idle keep-alive connections are held open",
    servers=tuple(s for s in EVERY_MODEL if s not in ONE_AT_A_TIME),
    points=tuple(Point("wrk", 40, True, idle_conns=n) for n in IDLE_LEVELS),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=n) for n in (0, 1_000)),
    # smoke: the servers book/synthesis/many-connections.md names (side-by-side shows "n/a" for the others)
    smoke_servers=("nginx", "c-select", "c-poll", "c-epoll", "c-uring", "c-uring-multishot", "c-coroutine", "c-thread",
                   "c-fork", "java-nio", "java-thread", "java-vthread", "java-netty", "java-mina"),
    **IDLE_STUDY,
)

# What an idle connection costs a JVM, by what holds it: the Java models that hold every idle connection (not the
# fixed pool, which holds only its pool's), raised through five levels in one process as in the idle study, and at
# rest after each level a full collection, the heap left in use and the JVM's native memory by category
# (run/jvmmem.py: thread stacks, direct buffers). Slopes between levels, not totals over N, are the cost of one
# more connection. Native Memory Tracking is on from the JVM's start: its rates are not the idle study's.
JVM_MEMORY_LEVELS = (0, 2_500, 5_000, 10_000, 15_000)
JVM_MEMORY = HttpPlan(
    dataset="jvm-memory",
    description="the Java models that hold idle connections: 40 busy keep-alive connections beside 0, 2,500, "
                "5,000, 10,000 and 15,000 idle ones, and at rest after each level the heap left after a full "
                "collection and the JVM's native memory by category (Native Memory Tracking)",
    servers=tuple(s for s in JAVA_IDS if s not in ONE_AT_A_TIME + ("java-threadpool",)),
    points=tuple(Point("wrk", 40, True, idle_conns=n) for n in JVM_MEMORY_LEVELS),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=n) for n in (0, 500, 1_000)),
    smoke_servers=("java-thread", "java-vthread", "java-netty"),
    **IDLE_STUDY,
    measured_s=3.0,
    warmup_s=1.0,
    jvm_memory=True,
)

# C100K on this machine: 100,000 idle connections beside 40 busy ones, held the way nginx holds them: the epoll
# reactor in worker processes (c-epoll-workers, each its own SO_REUSEPORT listener) and nginx with as many workers,
# beside every single-process model that holds every idle connection, up to its own limit here: one process may
# have RLIMIT_NOFILE descriptors (20,000 here, not raisable), so 19,000 is the most each of them is asked to hold,
# and the 50,000 and 100,000 levels are skipped for them with the limit named (meta.json's skipped_points; c-fork
# meets kernel.pid_max instead). Eight workers: 100,000 / 8 = 12,500 each, room for SO_REUSEPORT's uneven hash.
# At rest after each level the kernel's memory too (slab, kernel stacks, socket buffers: run/kernelmem.py) and how
# the server's processes share what it holds. The servers that stop at a pool or at select's FD_SETSIZE
# (c-select, c-prefork, c-threadpool, java-threadpool) are the idle study's: they stop long before 19,000.
C100K_LEVELS = (0, 19_000, 50_000, 100_000)
C100K_WORKERS = 8
C100K_SINGLE = ("nginx", "c-fork", "c-thread", "c-coroutine", "c-poll", "c-epoll", "c-epoll-et", "c-epoll-reuseport",
                "c-uring", "c-uring-multishot", "java-thread", "java-nio", "java-nio-workers", "java-nio-multi",
                "java-nio2", "java-vthread", "java-netty", "java-mina")
C100K = HttpPlan(
    dataset="c100k",
    description=f"40 busy keep-alive connections beside 0, 19,000, 50,000 and 100,000 idle ones: nginx and "
                f"c-epoll-workers with {C100K_WORKERS} worker processes each, and every single-process model that "
                "holds every idle connection up to the one-process descriptor limit; at rest after each level the "
                "server's PSS, the kernel's memory and the connections each of the server's processes holds",
    servers=("nginx-workers", "c-epoll-workers") + C100K_SINGLE,
    points=tuple(Point("wrk", 40, True, idle_conns=n) for n in C100K_LEVELS),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=n) for n in (0, 1_000, 3_000)),
    smoke_servers=("nginx-workers", "c-epoll-workers", "nginx", "c-epoll", "c-thread", "java-netty"),
    pools=(("nginx-workers", C100K_WORKERS), ("c-epoll-workers", C100K_WORKERS)),
    kernel_memory=True,
    by_process=True,
    **IDLE_STUDY,
    measured_s=4.0,
    warmup_s=1.0,
)

# How the kernel spreads new connections over c-epoll-workers' eight workers, for each way of sharing the port:
# a listening socket each (SO_REUSEPORT: the kernel hashes each connection to one), one inherited socket watched
# with EPOLLEXCLUSIVE (the kernel wakes one waiting worker), or watched plainly (it wakes every waiting worker:
# the thundering herd). 10,000 idle connections beside the 40 busy ones, one server process per mode and repeat;
# the workers report, as they stop, what each accepted and how often its listening socket woke it for nothing.
SHARES = ("reuseport", "exclusive", "herd")
ACCEPT_SPREAD = HttpPlan(
    dataset="accept-spread",
    description=f"c-epoll-workers with {C100K_WORKERS} worker processes, the port shared by SO_REUSEPORT, by "
                "EPOLLEXCLUSIVE on one listening socket, or by one plainly shared socket: 10,000 idle "
                "connections beside 40 busy ones, and what each worker accepted and how often it woke to accept",
    servers=("c-epoll-workers",),
    points=tuple(Point("wrk", 40, True, idle_conns=10_000, share=m) for m in SHARES),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=1_000, share=m) for m in SHARES),
    pools=(("c-epoll-workers", C100K_WORKERS),),
    by_process=True,
    worker_counts=True,
    **IDLE_STUDY,
    measured_s=4.0,
    warmup_s=1.0,
)

# io_uring as its authors advise against the first io_uring server and epoll, in one run: CPU per request.
IO_URING = HttpPlan(
    dataset="io-uring",
    description="c-uring-multishot against c-uring, c-epoll and nginx: hello-world at 40 and 1,000 "
                "keep-alive connections, and 16 pipelined requests per write at 40",
    servers=("nginx", "c-epoll", "c-uring", "c-uring-multishot"),
    points=(Point("wrk", 40, True), Point("wrk", 1000, True), PIPELINED),
    smoke_points=(Point("wrk", 40, True), Point("wrk", 1000, True), PIPELINED),  # the chapter reads all three
)

# c-uring-multishot changes several things at once: the chain takes them one at a time (servers/uring.c, URING_STEP),
# from c-uring to c-uring-multishot, beside c-epoll, in one run: CPU per request at 40 and 1,000 connections and
# pipelined, and memory per idle connection: 10,000 held open beside the 40, against the 40 alone. Each point in a
# fresh server, so that what one point allocated (1,000 connections' buffers, kept by malloc) is not in another's
# memory, nor 10,000 idle connections beside another's load.
IO_URING_CHAIN = HttpPlan(
    dataset="io-uring-chain",
    description="c-uring to c-uring-multishot one change at a time (four steps), beside c-epoll: hello-world at 40 "
                "and 1,000 keep-alive connections, 16 pipelined requests per write at 40, and 40 while 10,000 idle "
                "connections are held open",
    servers=("c-epoll",) + manifest.URING_CHAIN,
    points=(Point("wrk", 40, True), Point("wrk", 1000, True), PIPELINED, Point("wrk", 40, True, idle_conns=10_000)),
    smoke_points=(Point("wrk", 40, True), PIPELINED, Point("wrk", 40, True, idle_conns=1_000)),
    restart_each_point=True,
    idle_timeout_s=0,
    # no wait for TIME_WAIT to drain between servers, as in the idle studies: each server's first point follows the
    # previous server's 10,000 closed idle connections alike (a wait would add 75 s to each server and repeat)
    time_wait_drained=10**9,
    measured_s=5.0,
    warmup_s=2.0,
)

# 10,000 busy keep-alive connections against the models a first check saw stop short (c-select, c-fork, java-thread)
# and others: who serves every connection, and the kernel's evidence where one does not (accept queue overflows,
# resets, the server's stderr). Loopback reuses TIME_WAIT ports (tcp_tw_reuse=2): no drain needed.
TEN_THOUSAND = HttpPlan(
    dataset="ten-thousand",
    description="10,000 busy keep-alive connections (wrk, 5 s timeout) against c-select, c-poll, c-epoll, "
                "c-uring-multishot, c-fork, c-thread, java-thread, java-vthread, java-netty and nginx",
    servers=("nginx", "c-select", "c-poll", "c-epoll", "c-uring-multishot", "c-fork", "c-thread", "java-thread",
             "java-vthread", "java-netty"),
    points=(Point("wrk", 10_000, True),),
    battery=False,
    time_wait_drained=10**9,
)

# Every model side by side, in one run so that each is read against nginx in the same time window
# (book/synthesis/side-by-side.md): hello-world keep-alive from 1 to 10,000 connections, a new connection per
# request at 100 and 1,000, 20 ms of work at 40 and 1,000, and the pipelined load that makes the server the
# bottleneck. 24 servers x 9 points x 3 repeats is 640 wrk runs: at the full profile's 10 s (+2 s warm-up) the run
# takes over two hours, so each repeat measures 4 s after a 1 s warm-up (still 10^4 to 10^6 requests per run),
# but 10 s at 10,000 connections: a SYN the full accept queue drops is sent again 1 s and 3 s later, and every
# connection must have had the time to be answered.
# Loopback reuses TIME_WAIT ports (tcp_tw_reuse=2): no drain.
_SCALE_POINTS = (tuple(Point("wrk", c, True) for c in (1, 100, 1000)) + (Point("wrk", 10_000, True, measured_s=10.0),)
                 + tuple(Point("wrk", c, False) for c in (100, 1000))
                 + tuple(Point("wrk", c, True, work_ms=20.0) for c in (40, 1000))
                 + (PIPELINED,))
SCALE = HttpPlan(
    dataset="scale",
    description="every C and Java server and nginx in one run: hello-world keep-alive at 1, 100, 1,000 and "
                "10,000 connections, Connection: close at 100 and 1,000, 20 ms of work at 40 and 1,000, "
                "and 16 pipelined requests per write at 40",
    servers=EVERY_MODEL,
    points=_SCALE_POINTS,
    smoke_points=_SCALE_POINTS,  # the chapter reads every point
    smoke_servers=("nginx", "c-epoll", "c-thread", "java-netty"),  # the smoke book build: 4 models
    battery=False,
    time_wait_drained=10**9,
    measured_s=4.0,
    warmup_s=1.0,
)

PLANS = {p.dataset: p for p in (BASELINES, C_SERVERS, AB_GRID, AB_BACKLOG, DELAY_LINK, JAVA_SERVERS, SEED_000,
                                IDLE_CONNECTIONS, JVM_MEMORY, C100K, ACCEPT_SPREAD, IO_URING, IO_URING_CHAIN,
                                TEN_THOUSAND, SCALE)}
