"""The open-loop experiments: latency against offered load, on the runner's lifecycle.

For each repeat, each server and each amount of work in turn, one server process serves:

  1. the closed loop (iom-openloop --closed): C connections, each sending its next request
     when the last is answered; what it achieves is the server's capacity at C connections
     (with 20 ms of work, Little's bound C / 20 ms, if the model overlaps the work);
  2. the open loop at fractions of that capacity (10 % to 150 %): requests at a constant
     rate, each with an intended start time, latency counted from it, at most C connections;
     a request that finds the generator's in-flight cap full is dropped, never delayed.

A plan may fix its rates instead (the cross-check of iom-openloop against vegeta), and
measure them with more than one open-loop tool. Every row keeps what the generator did not
count as well as what it did: offered = ok + non-2xx + timeouts + connect errors + resets +
dropped, the longest stall with work outstanding, who was served (per connection), and the
kernel's TCP counters around the run (handshakes a full accept queue dropped, retransmits,
resets): a connection whose handshake was dropped looks open to the generator, yet unserved.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from iobench.data.dataset import PSS_SUMMARY, Dataset, Summary, read_folder, spread
from iobench.data.report import number
from iobench.load import drivers
from iobench.run import runner
from iobench.run.lifecycle import ServerProcess
from iobench.run.plan import Plan
from iobench.run.probes import (SYSCALL_SUMMARY, SyscallProbe, TcpProbe, syscall_columns,
                                tcp_columns)
from iobench.run.runner import Experiment, Load, Measured, Run, Serving, Unit
from iobench.run.sampler import TCP_COLUMNS
from iobench.servers import manifest
from iobench.servers.manifest import ServerOptions


@dataclass(frozen=True)
class OpenPoint:
    tool: str               # "openloop" (the book's generator) or "vegeta" (the cross-check)
    loop: str               # "closed": measures the capacity the open points are fractions of; "open"
    connections: int = 40
    work_ms: float = 0.0
    fraction: float = 0.0   # open loop: this share of the closed loop's rate in the same repeat
    rate: float = 0.0       # or this fixed rate (requests per second)
    timeout_s: float = 5.0

    def label(self) -> str:
        level = ("closed" if self.loop == "closed" else f"{self.rate:g}/s" if self.rate
                 else f"{100 * self.fraction:g}% of capacity")
        return f"{self.tool} {level} c={self.connections} work={self.work_ms:g}ms"


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
OPEN_PLANS = {p.dataset: p for p in (OPEN_LOOP, CROSSCHECK, SYSCALLS)}

COLUMNS = [
    "server", "model", "lang", "tool", "loop", "connections", "work_ms", "fraction", "rate", "repeat",
    "capacity_rps", "offered_rps", "achieved_rps",
    "offered", "ok", "non2xx", "timeouts", "errors_connect", "resets", "dropped",
    "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_99_ms", "max_ms", "mean_ms",
    "send_lag_p99_ms", "stall_s", "in_flight_max",
    "conns_served", "conn_min_requests", "conn_median_requests", "conn_max_requests",
    *TCP_COLUMNS,
    "server_cpu_s", "server_cpu_us_per_req", "server_cpu_pct", "server_user_s", "server_sys_s", "server_softirq_s",
    "server_steal_s", "client_steal_s", "server_rss_kib_max", "pss_kib", "server_threads_max", "client_cpu_pct",
    "client_cpu_us_per_req", "generator_bound", "foreign_cpu_cores", "noisy",
    "loop_ms_before", "loop_ms_after", "outlier",
    "ok_run", "failure", "raw_file", "hist_file", "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
KEYS = ["server", "tool", "loop", "connections", "work_ms", "fraction", "rate"]  # a point: its rate
# is a fraction of the capacity the closed loop measured in the same repeat, or fixed by the plan


class OpenLoad:
    """How a point of the open loop becomes one load: what its capacity is kept under, its raw files' name, the
    URL it goes to, its warm-up and the generator's spec. The open experiment's one variable part: a kind built on
    the open loop (rpcrun) hands the experiment its own."""

    def __init__(self, plan: OpenPlan):
        self.plan = plan

    def timing(self, run: Run) -> tuple[float, float]:
        """(measured, warm-up) seconds of a point: the plan's, at most the profile's."""
        return run.profile.timing(self.plan.measured_s, self.plan.warmup_s)

    def key(self, srv: ServerProcess, point, repeat: int) -> tuple:
        """What a closed loop's capacity is kept under: the open points of the same key are fractions of it."""
        return (srv.server.id, point.work_ms, repeat)

    def stem(self, srv: ServerProcess, point, repeat: int, level: str) -> str:
        """The raw files' name, under raw/."""
        return f"{srv.server.id}/{point.tool}-{level}-c{point.connections}-w{point.work_ms:g}-r{repeat}"

    def target(self, at: Serving, point) -> str:
        """The URL a point's load goes to."""
        return at.srv.url

    def warmup_s(self, run: Run, point) -> float:
        """A point's warm-up seconds, before it is measured (0: none)."""
        return self.timing(run)[1]

    def spec(self, run: Run, srv: ServerProcess, point, rate: float, hist: Path | None) -> drivers.LoadSpec:
        """The measured load of a point (its warm-up: the same, for the warm-up's seconds)."""
        return drivers.LoadSpec(tool=point.tool, connections=point.connections, keepalive=True,
                                duration_s=self.timing(run)[0], timeout_s=point.timeout_s,
                                rate=0.0 if point.loop == "closed" else rate, hist=str(hist or ""))


class OpenExperiment(Experiment):
    columns = COLUMNS
    outlier_keys = tuple(KEYS)
    outlier_value = "achieved_rps"
    require_clean_exit = True

    def __init__(self, plan: OpenPlan, load: OpenLoad | None = None):
        self.plan = plan
        self.dataset = plan.dataset
        self.description = plan.description
        self.load = load or OpenLoad(plan)
        self.columns = COLUMNS + plan.measured_columns()  # and, where the plan asks, the system calls by kind
        self.capacity: dict[tuple, float] = {}  # load.key(...) -> the closed loop's rate in that repeat

    def points(self, profile: str):
        return self.plan.points_for(profile)

    def meta(self, run: Run) -> dict:
        measured_s, warmup_s = self.load.timing(run)
        servers = [manifest.get(s) for s in self.plan.servers]
        return {"plan": {"servers": list(self.plan.servers), "points": [asdict(p) for p in run.points],
                         "measured_s": measured_s, "warmup_s": warmup_s},
                "servers": {s.id: {"model": s.model, "lang": s.lang, "summary": s.summary} for s in servers}}

    def _units(self, points, profile: str) -> list[Unit]:
        """One server process per server and amount of work (a baseline cannot simulate work),
        every server at one amount of work before the next amount."""
        return [Unit(server, [p for p in points if p.work_ms == work_ms], ServerOptions(work_ms=work_ms),
                     note={"work_ms": work_ms})
                for work_ms in dict.fromkeys(p.work_ms for p in points) for server in self.plan.serving(profile)
                if not work_ms or "work_ms" in server.supports]

    def count(self, run: Run, points) -> int:
        return sum(len(u.points) for u in self._units(points, run.profile.name))

    def units(self, run: Run, points, repeat: int):
        yield from self._units(points, run.profile.name)

    def measure(self, run: Run, at: Serving, point: OpenPoint) -> dict:
        return self.measure_open(run, at, point)[0]

    def measure_open(self, run: Run, at: Serving, point: OpenPoint) -> tuple[dict, Measured]:
        """One point's run: its row, and what was sampled meanwhile (for a kind built on this one, its own columns)."""
        srv, repeat, how = at.srv, at.repeat, self.load
        key = how.key(srv, point, repeat)
        rate = point.rate or point.fraction * self.capacity.get(key, 0.0)
        level = "closed" if point.loop == "closed" else f"r{rate:.0f}"
        stem = how.stem(srv, point, repeat, level)
        hist = run.writer.raw_path(stem + ".hist.csv") if point.tool == "openloop" else None
        spec = how.spec(run, srv, point, rate, hist)
        driver = drivers.get(point.tool)
        warmup_s = how.warmup_s(run, point)
        warm = drivers.LoadSpec(**{**asdict(spec), "duration_s": warmup_s, "hist": ""})
        url = how.target(at, point)
        load = Load(warmup=run.client_prefix + driver.argv(warm, url) if warmup_s > 0 else [],
                    measured=run.client_prefix + driver.argv(spec, url), threads=spec.threads,
                    timeout_s=spec.duration_s * 2 + point.timeout_s + 60)
        probes = {"tcp": TcpProbe(run.netns)}
        perf = stem + ".perf.txt"  # perf's own output, under raw/
        if self.plan.syscalls:
            probes["syscalls"] = SyscallProbe(srv.pid, run.writer.raw_path(perf))
        m = run.measure_load(srv, stem, load, probes, warmup_s=warmup_s)
        r = driver.parse(m.output, m.code)
        x = r.extra
        # achieved: answers per second of the whole run, drain included (ok / duration would
        # credit an overloaded server with the answers it gave after the schedule ended)
        elapsed = x.get("elapsed_s") or r.duration_s
        achieved = r.requests / elapsed if elapsed else 0.0
        if point.loop == "closed" and r.ok:
            self.capacity[key] = achieved
        u = m.usage
        lc = runner.load_columns(m)
        row = {
            "server": srv.server.id, "model": srv.server.model, "lang": srv.server.lang, "tool": point.tool,
            "loop": point.loop, "connections": point.connections, "work_ms": point.work_ms,
            "fraction": point.fraction, "rate": point.rate, "repeat": repeat,
            "capacity_rps": self.capacity.get(key), "offered_rps": rate if point.loop == "open" else None,
            "achieved_rps": achieved, "offered": x.get("offered"), "ok": r.requests, "non2xx": r.non2xx,
            "timeouts": r.errors_timeout, "errors_connect": r.errors_connect, "resets": r.errors_read,
            "dropped": x.get("dropped"),
            "p50_ms": r.p50_ms, "p90_ms": r.p90_ms, "p99_ms": r.p99_ms, "p99_9_ms": x.get("p99_9_ms"),
            "p99_99_ms": x.get("p99_99_ms"), "max_ms": r.max_ms, "mean_ms": r.mean_ms,
            "send_lag_p99_ms": x.get("send_lag_p99_ms"), "stall_s": x.get("stall_s"),
            "in_flight_max": x.get("in_flight_max"),
            "conns_served": x.get("conns_served"), "conn_min_requests": x.get("conn_min_requests"),
            "conn_median_requests": x.get("conn_median_requests"), "conn_max_requests": x.get("conn_max_requests"),
            **tcp_columns(m.probes["tcp"]),
            **{k: lc[k] for k in ("server_cpu_s", "server_cpu_pct", "server_user_s", "server_sys_s",
                                  "server_softirq_s", "server_steal_s", "client_steal_s", "server_rss_kib_max",
                                  "server_threads_max",
                                  "client_cpu_pct", "generator_bound", "foreign_cpu_cores", "noisy",
                                  "loop_ms_before", "loop_ms_after", "raw_file", "started_at")},
            "server_cpu_us_per_req": 1e6 * u.cpu_s / r.requests if r.requests else None,
            "pss_kib": u.pss_kib_max or None,  # the server's PSS, its highest sample (every process of it)
            "client_cpu_us_per_req": 1e6 * m.client_cpu_s / r.requests if r.requests else None,
            "outlier": False, "ok_run": r.ok, "failure": r.failure,
            "hist_file": str(Path("raw") / (stem + ".hist.csv")) if hist else None,
            "server_cpus": srv.cpus or "", "client_cpus": run.client_cpus or "",
            "profile": run.profile.name, "run_id": run.run_id,
        }
        if self.plan.syscalls:
            row.update(syscall_columns(m.probes["syscalls"], r.requests),
                       syscalls_file=str(Path("raw") / perf))
        return row, m

    def describe(self, row: dict) -> str:
        offered = (f"offered {number(row['offered_rps'])}/s " if number(row["offered_rps"]) not in ("n/a", "0")
                   else "closed loop ")
        return (f"{offered}-> {number(row['achieved_rps'])}/s  p99 {number(row['p99_ms'], '.2f')} ms  "
                f"dropped {number(row['dropped'])}  stall {number(row['stall_s'], '.3f')} s  "
                f"gen cpu {number(row['client_cpu_pct'], '.0f')}%")


# ---- reading a captured open-loop dataset ---------------------------------------------------------

class OpenDataset(Dataset):
    """An open-loop dataset: the HTTP datasets' provenance and caption, its own summary."""

    summarised = Summary(
        keys=tuple(KEYS), ok="ok_run", dropna=False,
        columns={
            "repeats": ("repeat", "count"), "capacity_rps": ("capacity_rps", "median"),
            "offered_rps": ("offered_rps", "median"), **spread("achieved_rps"),
            "p50_ms": ("p50_ms", "median"), **spread("p99_ms"), "p99_9_ms": ("p99_9_ms", "median"),
            "max_ms": ("max_ms", "median"),
            "dropped": ("dropped", "median"), "timeouts": ("timeouts", "median"), "offered": ("offered", "median"),
            "stall_s": ("stall_s", "median"), "send_lag_p99_ms": ("send_lag_p99_ms", "median"),
            "conns_served": ("conns_served", "min"), "conn_min_requests": ("conn_min_requests", "min"),
            "conn_max_requests": ("conn_max_requests", "max"),
            "cpu_us_per_req": ("server_cpu_us_per_req", "median"),
            "client_cpu_us_per_req": ("client_cpu_us_per_req", "median"),
            "client_cpu_pct": ("client_cpu_pct", "median"), "generator_bound": ("generator_bound", "any"),
            "noisy": ("noisy", "any"), "outliers": ("outlier", "sum"),
        },
        after=lambda agg: agg.assign(unserved=agg["conns_served"] < agg["connections"]),  # a connection never answered
        optional={**SYSCALL_SUMMARY, **PSS_SUMMARY},
        shown=("server", "tool", "loop", "work_ms", "fraction", "rate", "offered_rps", "repeats", "achieved_rps",
               "p50_ms", "p99_ms", "p99_9_ms", "dropped", "timeouts", "stall_s", "conns_served", "generator_bound"),
    )

def load(path: Path, shown_under: str = "replay") -> OpenDataset:
    path, df, meta = read_folder(path, ("ok_run", "generator_bound", "noisy", "outlier"))
    return OpenDataset(path.name, path, df, meta, {}, shown_under)


# ---- what the chapter reads from a summary ---------------------------------------------------------

ON_TIME = 0.99  # "delivered on time": at least this share of the offered load answered, none dropped


def on_time(summary, tool: str = "openloop", **where):
    """The open-loop points of `tool` (and `where`) that were delivered on time: no request
    dropped or timed out, and answers at ON_TIME or more of the offered rate."""
    s = summary[(summary["tool"] == tool) & (summary["loop"] == "open")]
    for k, v in where.items():
        s = s[s[k] == v]
    return s[(s["dropped"] == 0) & (s["timeouts"] == 0) & (s["achieved_rps"] >= ON_TIME * s["offered_rps"])]


def highest_on_time(summary, tool: str = "openloop", **where):
    """The on-time point with the highest offered rate (a row of the summary), or None."""
    s = on_time(summary, tool, **where)
    return None if s.empty else s.loc[s["offered_rps"].idxmax()]


def knee(summary, server: str, work_ms: float, factor: float = 2.0, tool: str = "openloop"):
    """The lowest fraction of capacity at which the open loop's p99 exceeds `factor` times the
    p99 the closed loop reported for the same server, work and connections; None if none did."""
    s = summary[(summary["tool"] == tool) & (summary["server"] == server) & (summary["work_ms"] == work_ms)]
    closed = s[s["loop"] == "closed"]
    if closed.empty:
        return None
    over = s[(s["loop"] == "open") & (s["p99_ms"] > factor * closed["p99_ms"].iloc[0])]
    return None if over.empty else float(over["fraction"].min())
