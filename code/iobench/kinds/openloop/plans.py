"""What each open-loop dataset measures: servers x rates, fractions of a closed loop's capacity or fixed."""
from __future__ import annotations

from dataclasses import dataclass

from iobench.run.plan import Plan
from iobench.servers import manifest


@dataclass(frozen=True)
class OpenPoint:
    tool: str               # "openloop" (the book's generator) or "vegeta" (the cross-check)
    loop: str               # "closed": measures the capacity the open points are fractions of; "open"
    connections: int = 40
    work_ms: float = 0.0
    fraction: float = 0.0   # open loop: this share of the closed loop's rate in the same repeat
    rate: float = 0.0       # or this fixed rate (requests per second)
    timeout_s: float = 5.0
    pipeline: int = 1       # requests each connection keeps outstanding (a closed loop's pipelining)
    close: bool = False     # a new connection for every request
    profiled: bool = False  # its server's stacks sampled (a plan with kprofile; run/kprofile.py)

    def label(self) -> str:
        level = ("closed" if self.loop == "closed" else f"{self.rate:g}/s" if self.rate
                 else f"{100 * self.fraction:g}% of capacity")
        return (f"{self.tool} {level} c={self.connections} work={self.work_ms:g}ms" + self.suffix().replace("-", " "))

    def suffix(self) -> str:
        """What sets the point apart beyond the classic keys, for its label and its raw files' names ('' for none)."""
        return ((f"-p{self.pipeline}" if self.pipeline > 1 else "") + ("-close" if self.close else "")
                + ("-profiled" if self.profiled else ""))


@dataclass(frozen=True, kw_only=True)
class OpenPlan(Plan):
    """Servers x open-loop points (and the closed-loop point each repeat's rates are fractions of)."""
    measured_s: float = 4.0
    warmup_s: float = 1.0


def _sweep(work_ms: float, fractions: tuple[float, ...], connections: int = 40) -> tuple[OpenPoint, ...]:
    return ((OpenPoint("openloop", "closed", connections, work_ms),)
            + tuple(OpenPoint("openloop", "open", connections, work_ms, fraction=f) for f in fractions))


FRACTIONS = (0.1, 0.5, 0.8, 1.0, 1.2, 1.5)
OPEN_LOOP = OpenPlan(
    dataset="open-loop",
    description="latency against offered load: each server's capacity at 40 connections from the closed "
                "loop, then the open loop at 10 % to 150 % of it, with 0 and 20 ms of work per request",
    servers=("nginx", "c-threadpool", "c-epoll", "java-vthread", "java-netty"),
    points=_sweep(0.0, FRACTIONS) + _sweep(20.0, FRACTIONS),
    smoke_points=_sweep(0.0, (0.5, 1.5)) + _sweep(20.0, (0.5, 1.5)),
    smoke_servers=("nginx", "c-epoll"),
)


def _fixed(work_ms: float, rates: tuple[float, ...]) -> tuple[OpenPoint, ...]:
    return ((OpenPoint("openloop", "closed", 40, work_ms),)
            + tuple(OpenPoint(tool, "open", 40, work_ms, rate=r) for r in rates for tool in ("openloop", "vegeta")))


CROSSCHECK = OpenPlan(
    dataset="open-loop-crosscheck",
    description="iom-openloop against vegeta at the same fixed rates and 40 connections: c-epoll with 20 ms "
                "of work (capacity 2,000/s by Little's law) and nginx without work, up to each tool's ceiling",
    servers=("c-epoll", "nginx"),
    points=_fixed(20.0, (500, 1000, 1500, 1900, 2500)) + _fixed(0.0, (5000, 10000, 20000, 40000)),
    smoke_points=_fixed(20.0, (1000,)) + _fixed(0.0, (5000,)),
)
# What each model asks of the kernel per request: every server that serves 40 connections at once (the two
# sequential ones cannot) at one fixed rate, well below each one's capacity, with its system calls counted by
# kind. The tracepoints cost every call a little: this dataset's CPU columns are not the models' CPU.
SYSCALL_SERVERS = ("nginx", *(s for s in manifest.ids("C") if s != "c-sequential"),
                   *(s for s in manifest.ids("Java") if s != "java-blocking"))
SYSCALLS = OpenPlan(
    dataset="syscalls",
    description="the system calls each server makes per request, by kind (perf stat on the kernel's syscall "
                "tracepoints), at 5,000 requests/s on 40 keep-alive connections (the book's open loop), hello-world",
    servers=SYSCALL_SERVERS,
    points=(OpenPoint("openloop", "open", 40, rate=5000.0),),
    smoke_servers=("nginx", "c-epoll", "java-nio"),
    measured_s=4.0,
    warmup_s=3.0,
    syscalls=True,
)
# Where each model's CPU per request goes, by kernel path and kind of user code (run/kpaths.py): the same servers
# as the system calls', each with its stacks sampled (perf record -e cpu-clock -g on the server's pinned core, its own
# tasks kept) in a closed loop of 40 connections kept alive and pipelined 16 deep; and first kept alive without
# sampling, in the same process, so that what sampling costs is measured beside what it shows (in a JVM the sampled
# run is the warmer one, which may hide some of the cost there; a C server's CPU per request does not warm up).
# Closing after every request leaves each server's turn with tens of thousands of TIME_WAIT sockets, a minute's wait
# before the next: its own dataset, not this one.
def _profiled(**how) -> OpenPoint:
    return OpenPoint("openloop", "closed", 40, profiled=True, **how)


KERNEL_PATHS = OpenPlan(
    dataset="kernel-paths",
    description="where each server's CPU per request goes, by kernel path and kind of user code: its stacks sampled "
                "(perf record -e cpu-clock -g on its processes) in a closed loop of 40 connections, kept alive and "
                "pipelined 16 deep, hello-world; and kept alive unsampled, for what sampling costs",
    servers=SYSCALL_SERVERS,
    points=(OpenPoint("openloop", "closed", 40), _profiled(), _profiled(pipeline=16)),
    smoke_servers=("nginx", "c-epoll", "java-nio"),
    measured_s=4.0,
    warmup_s=3.0,
    kprofile=True,
)
PLANS = {p.dataset: p for p in (OPEN_LOOP, CROSSCHECK, SYSCALLS, KERNEL_PATHS)}

