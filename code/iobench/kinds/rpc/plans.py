"""What the RPC datasets measure (experiment.py runs them; the registry finds them here): source write-up 004's
providers, the points each one is measured at, and which points share a provider process (RpcPoint.setting).
"""
from __future__ import annotations

from dataclasses import dataclass

from iobench.run.plan import Plan
from iobench.servers import manifest

# ---- the plan ---------------------------------------------------------------------------------------

PROVIDERS = manifest.ids("Java", role="rpc")  # rpc-tomcat, rpc-tomcat-vt, rpc-webflux, rpc-netty
GRID = ("rpc-netty", "rpc-netty-http-binary", "rpc-netty-frame-json", "rpc-netty-frame-binary")


@dataclass(frozen=True)
class RpcPoint:
    experiment: str                # warmup, writeup, keepalive, sweep, open, work, grid
    loop: str = "closed"
    connections: int = 64
    work_ms: float = 0.0
    fraction: float = 0.0          # open: this share of the same unit's closed-loop rate at these connections
    rate: float = 0.0
    keep_alive_requests: int = 0   # the providers' --keep-alive-requests: 0 never close; -1 as each one ships
    close_every: int = 0           # the generator's: each connection's Nth call asks Connection: close (0: never)
    pool: int = 0                  # the providers' --pool (0: as each one ships)
    via: str = ""                  # "rpc-consumer": the load goes to the write-up's consumer in front
    tool: str = "openloop"         # "wrk" for the write-up's own command
    threads: int = 1
    path: str = "/"                # wrk GETs /?id=101; the book's generator POSTs the call to /
    servers: tuple[str, ...] = PROVIDERS
    window: int = 0                # warmup: which window since the process started (1, 2, ...); keepalive: turn
    jvm: str = ""                  # JVM flags beyond the book's JAVA_FLAGS (a heap setting), space-separated
    timeout_s: float = 5.0
    profiled: bool = False         # its provider's stacks sampled (a plan with kprofile; run/kprofile.py)

    def setting(self) -> tuple:
        """What one provider process is started with: points of one setting share a process."""
        return (self.work_ms, self.keep_alive_requests, self.pool, self.jvm)

    def label(self) -> str:
        level = "closed" if self.loop == "closed" else f"{self.rate:g}/s" if self.rate else f"{100 * self.fraction:g}%"
        ka = {-1: "ka=shipped", 0: "ka=never"}.get(self.keep_alive_requests, f"ka={self.keep_alive_requests}")
        extra = (f" work={self.work_ms:g}ms" if self.work_ms else "") + (f" pool={self.pool}" if self.pool else "")
        extra += (" via consumer" if self.via else "") + (f" window {self.window}" if self.window else "")
        extra += f" close every {self.close_every}" if self.close_every else ""
        extra += f" jvm {self.jvm}" if self.jvm else ""
        extra += " profiled" if self.profiled else ""
        return f"{self.experiment} {self.tool} {level} c={self.connections} {ka}{extra}"


@dataclass(frozen=True, kw_only=True)
class RpcPlan(Plan):
    """Providers x RPC points; points of one setting share a provider process (RpcPoint.setting)."""
    measured_s: float = 5.0
    warmup_s: float = 1.0
    jvm_warmup_s: tuple[tuple[str, float], ...] = (("rpc-netty", 60.0), ("rpc-", 90.0))  # first prefix that fits
    flame_connections: int = 16    # the profiled window's closed loop, after the unit's measured points
    flame_s: float = 10.0          # 0: no flame graph


def _wrk(server: str, keep_alive_requests: int, via: str = "") -> RpcPoint:
    """The write-up's command, wrk -t2 -c10 GET /?id=101, at the provider's keep-alive as shipped."""
    return RpcPoint("writeup", tool="wrk", threads=2, connections=10, path="/?id=101", via=via,
                    keep_alive_requests=keep_alive_requests, servers=(server,))


# Tomcat ships closing a connection every 100 requests, Netty never: the write-up's setup sits in those units.
WRITEUP = tuple(_wrk(s, ka, via) for s, ka in (("rpc-tomcat", 100), ("rpc-netty", 0))
                for via in ("rpc-consumer", ""))
WARMUP = tuple(RpcPoint("warmup", connections=16, window=w) for w in range(1, 10))  # 90 s from the start
# Closing every 100 calls: asked by the generator (each connection's 100th call says Connection: close), right
# after the never-closing point in its process; and told to (--keep-alive-requests 100), in a process of its own.
KEEPALIVE = (RpcPoint("keepalive", connections=10, keep_alive_requests=0),
             RpcPoint("keepalive", connections=10, keep_alive_requests=0, close_every=100),
             RpcPoint("keepalive", connections=10, keep_alive_requests=100, servers=("rpc-tomcat", "rpc-netty")))
SWEEP = tuple(RpcPoint("sweep", connections=c) for c in (1, 4, 16, 64, 256))
OPEN = tuple(RpcPoint("open", loop="open", connections=64, fraction=f) for f in (0.5, 0.8, 1.0, 1.2))
WORK = (tuple(RpcPoint("work", connections=c, work_ms=10.0) for c in (16, 256, 1000))
        + tuple(RpcPoint("work", connections=c, work_ms=10.0, pool=200, servers=("rpc-webflux",)) for c in (256, 1000)))
GRID_POINTS = (RpcPoint("grid", connections=64, servers=GRID[1:]),)  # rpc-netty at 64: the sweep's point

RPC_PROVIDER = RpcPlan(
    dataset="rpc-provider",
    description="source write-up 004: one RPC call (findById, JSON) served by Spring MVC on Tomcat (platform and "
                "virtual threads), Spring WebFlux and plain Netty: each JVM's warm-up, the write-up's setup through "
                "its consumer, keep-alive matched, a closed-loop sweep, the open loop, 10 ms of blocking work, "
                "Netty's 2 x 2 of transport and codec, and a flame graph of each after its measured points",
    servers=PROVIDERS + GRID[1:],
    points=WARMUP + WRITEUP + KEEPALIVE + SWEEP + OPEN + WORK + GRID_POINTS,
    smoke_points=(WARMUP[0], WRITEUP[0], WRITEUP[2], KEEPALIVE[1], KEEPALIVE[2], SWEEP[3], OPEN[1], WORK[0],
                  GRID_POINTS[0]),
    smoke_servers=("rpc-tomcat", "rpc-netty", "rpc-netty-frame-binary"),
)
# What a new connection every 100 calls costs: in one process, windows that never close and windows that ask to
# close take turns, so that the host is the same for both; then each provider told to close every 100. The closed
# loop's turns run as fast as each provider can; the open loop's at the same two fixed rates for both, below either
# one's capacity, so that the extra CPU per connection can be compared at one rate and across rates.
KEEPALIVE_TURNS = tuple(RpcPoint("keepalive", connections=10, close_every=every, window=w,
                                 servers=("rpc-tomcat", "rpc-netty")) for w in (1, 2, 3) for every in (0, 100))
KEEPALIVE_OPEN_TURNS = tuple(RpcPoint("keepalive", loop="open", connections=10, rate=rate, close_every=every,
                                      window=w, servers=("rpc-tomcat", "rpc-netty"))
                             for rate in (2000.0, 5000.0) for w in (1, 2) for every in (0, 100))
RPC_KEEPALIVE = RpcPlan(
    dataset="rpc-keepalive",
    description="source write-up 004's two providers (Spring MVC on Tomcat, plain Netty), on what closing a "
                "connection every 100 calls costs them: never against every 100th call asking to close, in turns "
                "in one process (a closed loop, then an open loop at 2,000 and 5,000 calls/s), then each provider "
                "closing every 100 itself; every run with the core's user, system and softirq time",
    servers=("rpc-tomcat", "rpc-netty"),
    points=KEEPALIVE_TURNS + KEEPALIVE_OPEN_TURNS + (KEEPALIVE[2],),
    # smoke: one turn of each kind the chapter reads (closed, 2,000/s, 5,000/s), so that its page runs under it
    smoke_points=KEEPALIVE_TURNS[:2] + KEEPALIVE_OPEN_TURNS[:2] + KEEPALIVE_OPEN_TURNS[4:6] + (KEEPALIVE[2],),
    smoke_servers=("rpc-netty",),
    flame_s=0.0,
)
# Why the providers' p99 at half their capacity reaches milliseconds: the open loop at a quarter and at half of
# the closed loop's rate, each run beside the JVM's safepoints in its window (every unit logs them) and the core's
# busy share, so that a tail can be set against the pauses that fell in it and the spare time that drains them.
TAIL_POINTS = (RpcPoint("tail", connections=64),
               *(RpcPoint("tail", loop="open", connections=64, fraction=f) for f in (0.25, 0.5)))
RPC_TAIL = RpcPlan(
    dataset="rpc-tail",
    description="source write-up 004's four providers at a quarter and at half of their closed-loop rate on 64 "
                "connections (the book's open loop), each run with the JVM's safepoints that fell in its window "
                "and the server core's user, system and softirq time",
    servers=PROVIDERS,
    points=TAIL_POINTS,
    smoke_points=(TAIL_POINTS[0], TAIL_POINTS[2]),
    smoke_servers=("rpc-netty",),
    flame_s=0.0,
)
# What each provider asks of the kernel per call, where rpc-tail measured Tomcat's kernel time at three times
# Netty's: the open loop at two fixed rates on 64 connections that never close, the system calls counted by kind.
# The tracepoints cost every call a little: this dataset's CPU columns are not the providers' CPU (rpc-tail's are).
SYSCALL_POINTS = tuple(RpcPoint("syscalls", loop="open", connections=64, rate=r, servers=PROVIDERS + GRID[1:])
                       for r in (2000.0, 5000.0))
RPC_SYSCALLS = RpcPlan(
    dataset="rpc-syscalls",
    description="source write-up 004's providers and Netty's transport and codec variants, their system calls "
                "per call by kind (perf stat on the kernel's syscall tracepoints) at 2,000 and 5,000 calls/s on "
                "64 keep-alive connections (the book's open loop)",
    servers=PROVIDERS + GRID[1:],
    points=SYSCALL_POINTS,
    smoke_points=SYSCALL_POINTS[:1],
    smoke_servers=("rpc-tomcat", "rpc-netty"),
    jvm_warmup_s=(("rpc-", 20.0),),  # system calls per call settle long before the JIT's last compile
    measured_s=4.0,
    flame_s=0.0,
    syscalls=True,
)
# Source write-up 004 ran its Netty provider on 3,000 worker event loops and said they cost memory, not time per call.
# Netty's default is two per core the JVM sees (two here, pinned to one core); io.netty.eventLoopThreads sets the
# count for every group built without one, the provider's workers (its one boss loop is built with one). Each setting
# in a process of its own: a closed loop at 64 and 256 connections, the open loop at two fixed rates on 64, and
# after each point the JVM's memory at rest (Native Memory Tracking on in both: their CPU is comparable to each other,
# not to rpc-provider's).
WRITEUP_LOOPS = "-Dio.netty.eventLoopThreads=3000"
LOOPS_POINTS = tuple(p for j in ("", WRITEUP_LOOPS) for p in
                     (*(RpcPoint("loops", connections=c, jvm=j, servers=("rpc-netty",)) for c in (64, 256)),
                      *(RpcPoint("loops", loop="open", connections=64, rate=r, jvm=j, servers=("rpc-netty",))
                        for r in (5000.0, 20000.0))))
RPC_LOOPS = RpcPlan(
    dataset="rpc-loops",
    description="source write-up 004's 3,000 worker event loops against Netty's default (two per core the JVM "
                "sees), plain Netty: a closed loop at 64 and 256 connections and the open loop at 5,000 and 20,000 "
                "calls/s on 64, each setting in a process of its own, with the JVM's heap after a full collection "
                "and its native memory by category after each point",
    servers=("rpc-netty",),
    points=LOOPS_POINTS,
    smoke_points=(LOOPS_POINTS[0], LOOPS_POINTS[4]),
    jvm_warmup_s=(("rpc-netty", 30.0),),
    flame_s=0.0,
    jvm_memory=True,
)
# Where a call's CPU goes in the kernel and in user code, where rpc-syscalls counted what each provider asks of the
# kernel: the open loop at the same two fixed rates on 64 keep-alive connections, the providers' stacks sampled
# (run/kprofile.py, grouped by run/kpaths.py); at 5,000 calls/s the same load unsampled first, in the same process,
# so that the sampling's cost is measured beside what it samples.
KPATH_POINTS = (RpcPoint("kpaths", loop="open", connections=64, rate=5000.0),
                *(RpcPoint("kpaths", loop="open", connections=64, rate=r, profiled=True) for r in (5000.0, 2000.0)))
RPC_KERNEL_PATHS = RpcPlan(
    dataset="rpc-kernel-paths",
    description="source write-up 004's four providers at 2,000 and 5,000 calls/s on 64 keep-alive connections (the "
                "book's open loop), each provider's CPU per call by kernel path and user library from its sampled "
                "stacks (perf record -e cpu-clock -g on its core), and at 5,000/s the same load unsampled",
    servers=PROVIDERS,
    points=KPATH_POINTS,
    smoke_points=KPATH_POINTS[:2],
    smoke_servers=("rpc-netty",),
    measured_s=4.0,  # after each provider's warm-up as rpc-provider's: 60 s for rpc-netty, 90 for the others
    flame_s=0.0,
    kprofile=True,
)
PLANS = {plan.dataset: plan for plan in (RPC_PROVIDER, RPC_KEEPALIVE, RPC_TAIL, RPC_SYSCALLS, RPC_LOOPS,
                                         RPC_KERNEL_PATHS)}
