"""The HTTP clients' experiments (source write-up 003): five Java clients against one server held fixed.

The server is `c-epoll`, the book's epoll loop: its delay per request is a timer (--work-ms arms
one and the loop answers when it fires, so 10 ms of delay costs no thread), every connection has
TCP_NODELAY, it runs alone on CPU 0 and each row records its CPU (it must stay far from a full
core: the client is what is measured). The client runs on CPU 1 in a JVM of its own
(clientload.ClientLoad), which warms up at the same load before it measures.

For each repeat and each delay, one server process serves every point at that delay, the five
clients one after the other at each level (interleaved, so drift between minutes hits all five):

  * equal pools: N connections for every client (N = 16 and 64), offered at fractions of the
    Little's-law ceiling N / delay, with at most 4 N requests in flight (beyond: dropped);
  * shipped pools: each client as its library ships it, at one rate above the smallest ceiling;
  * CPU per request against the 0 ms server, at fixed rates;
  * the write-up's two methods: all requests at once with no bound (burst), and one submit
    every park_us without waiting for the answer (park, the shape of its JMH benchmark);
  * the write-up's server was another machine: equal pools again behind an iom-delaylink of 10 ms
    round trip (netlink.DelayLink), the server answering at once (the wait is the network's, not a
    timer's, and every new connection pays a round trip to open) and after its 10 ms timer.

Each run leaves beside its .hlog the collector's log and one dump of every thread (name, state,
CPU, stack) halfway through its measured window: what each client's threads do.

Each row carries the kernel's TCP counters over its window (listen overflows, resets, segments
sent again): the burst's failures are read from them.

Every row accounts for every offered request: ok + failed + dropped = offered (`accounted`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import ClassVar
from pathlib import Path

import pandas as pd

from iobench.data.dataset import PSS_SUMMARY, Dataset, Summary, read_folder, spread
from iobench.data.report import number
from iobench.load import drivers
from iobench.load.clientload import BESIDE_HLOG, IDS, beside_hlog, thread_dump, timeline
from iobench.run import runner
from iobench.run.jvmlog import gc_pauses
from iobench.run.plan import Plan
from iobench.run.probes import TcpProbe, tcp_columns
from iobench.run.sampler import TCP_COLUMNS
from iobench.run.runner import Experiment, Load, Run, Serving, Unit
from iobench.servers import manifest
from iobench.servers.manifest import ServerOptions

SERVER = "c-epoll"

# The connections each client allows one server when left as shipped (research notes, checked in
# the libraries' sources): Apache HttpClient 5 per route, OkHttp's dispatcher 5 requests per host,
# Jetty 64 connections per destination; async-http-client and the JDK client have no bound.
SHIPPED_CONNECTIONS = {"ahc": None, "apache-hc5": 5, "jdk": None, "jetty": 64, "okhttp": 5}


@dataclass(frozen=True)
class ClientPoint:
    client: str               # clientload.IDS
    experiment: str           # equal, shipped, cpu, burst, park
    delay_ms: float           # the server's delay per request (a timer)
    link_rtt_ms: float = 0.0  # > 0: the server behind an iom-delaylink of this round trip
    connections: int = 0      # N for every client; 0: the client's pool as shipped
    fraction: float = 0.0     # open: offered rate as this share of N / delay
    rate: float = 0.0         # open: or this fixed rate
    mode: str = "open"        # open, burst, park
    requests: int = 0         # burst: this many at once
    park_us: int = 0          # park: this pause before each submit
    warmup_rate: float = 0.0  # open: the warm-up's rate, when the measured one would leave a queue behind
    io_threads: int = 1       # where the client has IO threads (not OkHttp, whose calls each take a thread)
    timeout_s: float = 5.0
    setting: str = ""         # a named change to the client's JVM or library: SETTINGS (empty: as the chapter runs it)

    @property
    def jvm_flags(self) -> tuple[str, ...]:
        return SETTINGS[self.setting]

    @property
    def offered_rps(self) -> float:
        return self.rate or (self.fraction * self.connections * 1000.0 / self.wait_ms if self.wait_ms else 0.0)

    @property
    def wait_ms(self) -> float:
        """What each request waits for at the least: the server's delay and the link's round trip."""
        return self.delay_ms + self.link_rtt_ms

    @property
    def max_in_flight(self) -> int:
        return 4 * self.connections if self.connections else 100_000

    def label(self) -> str:
        how = {"open": f"{self.offered_rps:,.0f}/s", "burst": f"{self.requests:,} at once",
               "park": f"park {self.park_us} us"}[self.mode]
        pool = f"N={self.connections}" if self.connections else "shipped pool"
        link = f", link {self.link_rtt_ms:g} ms" if self.link_rtt_ms else ""
        setting = f", {self.setting}" if self.setting else ""
        return f"{self.client} {self.experiment}: {how}, {pool}, delay {self.delay_ms:g} ms{link}{setting}"


# Changes to one run's client, each testing one candidate cause of Apache HttpClient's collapse in the
# burst (30,000 requests at once on a pool of 10,000): its pool's lock (LAX: a lock per route instead of
# one over the pool), its reactor's timeout sweep (every 10 ms over every connection here; 1 s as
# shipped), and its collector (a young generation of 6 GiB, larger than everything the burst allocates:
# no collection during the run, checked in its log). The pool's size is the points' own `connections`.
SETTINGS: dict[str, tuple[str, ...]] = {
    "": (),
    "pool-lax": ("-Diom.apache.poolPolicy=LAX",),
    "select-1s": ("-Diom.apache.selectIntervalMs=1000",),
    "no-gc": ("-Xms8g", "-Xmx8g", "-Xmn6g"),
}


# The reference: the book's C open-loop generator (iom-openloop) offering the same load through the same
# number of connections, one request on each at a time: what the server, the kernel and the link take,
# with no Java client in the way. Each client's latency and CPU beyond it are the client's own.
REFERENCE = "iom-openloop"


def _each(reference: bool = False, **kw) -> tuple[ClientPoint, ...]:
    return tuple(ClientPoint(client, **kw) for client in IDS + ((REFERENCE,) if reference else ()))


# Offered rates as shares of N / delay, from 10 % to 150 %: light, half, near and beyond the ceiling
# (N = 16: 1,600/s; N = 64: 6,400/s, where one core of client is itself a limit).
FRACTIONS = {16: (0.1, 0.5, 0.9, 1.2, 1.5), 64: (0.1, 0.5, 0.9, 1.2, 1.5)}
LINK_RTT_MS = 10.0
POINTS = (
    *(p for n, fs in FRACTIONS.items() for f in fs
      for p in _each(True, experiment="equal", delay_ms=10, connections=n, fraction=f)),
    # above the ceiling of the smallest shipped pools (5 connections: 500/s), below Jetty's (6,400/s); warmed up
    # below every ceiling (at 2,000/s, 10 s of warm-up left those two 15,000 requests behind: none measured was
    # answered within its window)
    *_each(experiment="shipped", delay_ms=10, rate=2000, warmup_rate=400),
    *_each(True, experiment="cpu", delay_ms=0, connections=16, rate=2000),
    # the write-up's manual loop: 30,000 requests at once, pools as wide as it set them
    *_each(experiment="burst", delay_ms=10, connections=10_000, mode="burst", requests=30_000),
    # the write-up's JMH shape: park, submit, never wait
    *(p for us in (100, 800) for p in _each(experiment="park", delay_ms=10, connections=64, mode="park",
                                            park_us=us)),
    # equal pools again behind the link: its round trip alone, then with the server's 10 ms timer too
    *(p for d in (0, 10) for f in (0.5, 0.9) for p in _each(True, experiment="link", delay_ms=d,
                                                            link_rtt_ms=LINK_RTT_MS, connections=16, fraction=f)),
)
# smoke (the book's test build): every client where the chapter compares all five, two elsewhere
_TWO = ("apache-hc5", "jetty")
_TWO_AND_REFERENCE = (*_TWO, REFERENCE)
SMOKE_POINTS = (
    *_each(True, experiment="equal", delay_ms=10, connections=16, fraction=0.5),
    *(ClientPoint(c, "equal", 10, connections=16, fraction=0.1) for c in _TWO_AND_REFERENCE),
    *_each(experiment="shipped", delay_ms=10, rate=1000, warmup_rate=400),
    *(ClientPoint(c, "cpu", 0, connections=16, rate=1000) for c in _TWO_AND_REFERENCE),
    *(ClientPoint(c, "burst", 10, connections=1000, mode="burst", requests=2000) for c in _TWO),
    *(ClientPoint(c, "park", 10, connections=64, mode="park", park_us=800) for c in _TWO),
    *(ClientPoint(c, "link", d, LINK_RTT_MS, connections=16, fraction=0.5) for d in (0, 10)
      for c in _TWO_AND_REFERENCE),
)


@dataclass(frozen=True, kw_only=True)
class ClientPlan(Plan):
    """Client points against one server held fixed; `only` keeps clients. The client's JVM warms up for the
    profile's jvm_warmup_s before each point, at the same load."""
    server: str = SERVER
    measured_s: float = 4.0

    member: ClassVar[str] = "client"


HTTP_CLIENTS = ClientPlan(
    dataset="http-clients",
    description="five Java HTTP clients (async-http-client, Apache HttpClient 5, the JDK's, Jetty, OkHttp) "
                "against c-epoll answering after a timer: equal pools at fractions of N / delay, shipped "
                "pools, CPU per request, and source 003's two methods (burst, park)",
    points=POINTS,
    smoke_points=SMOKE_POINTS,
)
# The burst again, to find why Apache HttpClient collapses in it: every client with the chapter's pool of
# 10,000 and with the write-up's other, 1,000, each run's timeline and count of connections opened kept;
# then Apache at 10,000 with each candidate cause taken away in turn (SETTINGS).
BURST = dict(experiment="burst", delay_ms=10, mode="burst", requests=30_000)
CLIENT_BURST = ClientPlan(
    dataset="client-burst",
    description="the write-up's burst (30,000 requests at once) for every client with pools of 10,000 and 1,000, "
                "then Apache HttpClient 5 at 10,000 without each candidate cause of its collapse in turn: a lock "
                "per route instead of one pool lock, the shipped 1 s reactor tick, no collection; every run's "
                "timeline (100 ms) kept",
    points=(
        *(p for n in (10_000, 1_000) for p in _each(connections=n, **BURST)),
        *(ClientPoint("apache-hc5", connections=10_000, setting=s, **BURST) for s in SETTINGS if s),
    ),
    smoke_points=tuple(ClientPoint("apache-hc5", "burst", 10, connections=500, mode="burst", requests=1000, setting=s)
                       for s in ("", "pool-lax")),
)
CLIENT_PLANS = {p.dataset: p for p in (HTTP_CLIENTS, CLIENT_BURST)}

COLUMNS = [
    "client", "client_version", "experiment", "pool", "connections", "io_threads", "delay_ms", "link_rtt_ms",
    "mode",
    "fraction", "offered_rps", "warmup_rate", "ceiling_rps", "max_in_flight", "requests", "park_us", "repeat",
    "offered", "sent", "ok", "failed", "non2xx", "timeouts", "rejected", "errors", "dropped", "accounted",
    "achieved_rps", "submit_rps", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms", "mean_ms",
    "send_lag_p99_ms", "send_lag_max_ms", "in_flight_max",
    "client_cpu_s", "client_cpu_us_per_req", "client_cpu_pct", "client_threads_max", "pss_kib", "thread_groups",
    "error_kinds", *TCP_COLUMNS,
    "java_version", "server", "server_cpu_s", "server_cpu_pct", "server_cpu_us_per_req",
    "server_threads_max", "foreign_cpu_cores", "noisy", "loop_ms_before", "loop_ms_after", "outlier", "ok_run",
    "failure", "raw_file", "hlog_file",
    "gc_log_file", "thread_dump_file", "timeline_file", "setting",
    "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
KEYS = ["client", "setting", "experiment", "pool", "connections", "delay_ms", "link_rtt_ms", "mode", "fraction",
        "offered_rps", "requests", "park_us"]


def ceiling(point: ClientPoint) -> float | None:
    """Little's law: at most `connections` requests in flight, each taking the delay (and the
    link's round trip), allow connections / wait per second; None where the pool has no bound
    (or there is no wait)."""
    n = point.connections or SHIPPED_CONNECTIONS[point.client]
    return n * 1000.0 / point.wait_ms if n and point.wait_ms else None


class ClientExperiment(Experiment):
    columns = COLUMNS
    outlier_keys = tuple(KEYS)
    outlier_value = "achieved_rps"
    require_clean_exit = True

    def __init__(self, plan: ClientPlan):
        self.plan = plan
        self.dataset = plan.dataset
        self.description = plan.description
        self.server = manifest.get(plan.server)

    def points(self, profile: str):
        return self.plan.points_for(profile)

    def timing(self, run: Run) -> tuple[float, float]:
        return run.profile.timing(self.plan.measured_s)[0], run.profile.jvm_warmup_s

    def meta(self, run: Run) -> dict:
        measured_s, warmup_s = self.timing(run)
        return {"plan": {"server": self.server.id, "points": [asdict(p) for p in run.points],
                         "measured_s": measured_s, "warmup_s": warmup_s,
                         "shipped_connections": SHIPPED_CONNECTIONS},
                "servers": {self.server.id: {"model": self.server.model, "lang": self.server.lang,
                                             "summary": self.server.summary}}}

    def settings(self, run: Run):
        """Loopback, then (when the plan has such points) the server behind a delay link, whose
        forwarding program shares the server's core (the client's core stays the client's)."""
        here = [p for p in run.points if not p.link_rtt_ms]
        if here:
            yield "loopback", None, here
        for rtt in dict.fromkeys(p.link_rtt_ms for p in run.points if p.link_rtt_ms):
            from iobench.run.netlink import DelayLink

            yield f"delay-{rtt:g}ms", DelayLink(rtt, cpus=run.server_cpus or "0"), \
                [p for p in run.points if p.link_rtt_ms == rtt]

    def _units(self, points) -> list[Unit]:
        """One server process per delay, serving every point at that delay."""
        return [Unit(self.server, [p for p in points if p.delay_ms == d], ServerOptions(work_ms=d),
                     note={"delay_ms": d})
                for d in dict.fromkeys(p.delay_ms for p in points)]

    def count(self, run: Run, points) -> int:
        return len(points)

    def units(self, run: Run, points, repeat: int):
        yield from self._units(points)

    def measure(self, run: Run, at: Serving, point: ClientPoint) -> dict:
        srv, repeat = at.srv, at.repeat
        measured_s, warmup_s = self.timing(run)
        level = {"open": f"r{point.offered_rps:.0f}", "burst": f"n{point.requests}", "park": f"p{point.park_us}"}
        link = f"-l{point.link_rtt_ms:g}" if point.link_rtt_ms else ""
        setting = f"-{point.setting}" if point.setting else ""
        stem = (f"{point.client}/{point.experiment}-{level[point.mode]}-c{point.connections or 'shipped'}"
                f"-d{point.delay_ms:g}{link}{setting}-r{repeat}")
        hlog = run.writer.raw_path(stem + ".hlog")
        reference = point.client == REFERENCE
        if reference:   # a C program: nothing to warm up (the server is warm), its CPU the harness's account
            spec = drivers.LoadSpec(tool="openloop", connections=point.connections, rate=point.offered_rps,
                                    max_in_flight=point.max_in_flight, duration_s=measured_s, timeout_s=point.timeout_s)
        else:
            spec = drivers.LoadSpec(
                tool="clientload", client=point.client, client_mode=point.mode, connections=point.connections,
                shipped=not point.connections, threads=point.io_threads, rate=point.offered_rps,
                max_in_flight=point.max_in_flight, requests=point.requests, park_us=point.park_us,
                warmup_rate=point.warmup_rate, jvm_flags=point.jvm_flags,
                # relative to the repository root, the generator's working directory: no machine path in the output
                duration_s=measured_s, warmup_s=warmup_s, timeout_s=point.timeout_s,
                hist=str(hlog.relative_to(manifest.ROOT) if hlog.is_relative_to(manifest.ROOT) else hlog))
        driver = drivers.get(spec.tool)
        load = Load(warmup=[], measured=run.client_prefix + driver.argv(spec, srv.url),
                    timeout_s=warmup_s + measured_s + 3 * point.timeout_s + 120)
        m = run.measure_load(srv, stem, load, {"tcp": TcpProbe(run.netns)})
        r = driver.parse(m.output, m.code)
        x = r.extra
        failed = r.errors
        offered = x.get("offered")
        if reference and r.ok:
            answered = r.requests + r.non2xx
            x = {**x, "client_version": "C (this book)", "cpu_s": m.client_cpu_s, "threads_max": 1, "rejected": 0,
                 "errors": r.errors_connect + r.errors_read,
                 "cpu_us_per_req": 1e6 * m.client_cpu_s / answered if answered else None}
        lc = runner.load_columns(m)
        return {
            "client": point.client, "setting": point.setting, "client_version": x.get("client_version"),
            "experiment": point.experiment,
            "pool": "equal" if point.connections else "shipped", "connections": point.connections,
            "io_threads": point.io_threads, "delay_ms": point.delay_ms, "link_rtt_ms": point.link_rtt_ms,
            "mode": point.mode,
            "fraction": point.fraction, "offered_rps": point.offered_rps if point.mode == "open" else None,
            "warmup_rate": point.warmup_rate or None, "ceiling_rps": ceiling(point),
            "max_in_flight": point.max_in_flight if point.mode == "open" else None,
            "requests": point.requests, "park_us": point.park_us, "repeat": repeat,
            "offered": offered, "sent": x.get("sent"), "ok": r.requests,
            "failed": failed if offered is not None else None,
            "non2xx": r.non2xx, "timeouts": r.errors_timeout, "rejected": x.get("rejected"),
            "errors": x.get("errors"), "dropped": x.get("dropped"),
            "accounted": offered is not None and r.requests + failed + x.get("dropped", 0) == offered,
            # answers per second until the last one (or the cut-off), drain included: ok / measured window
            # would credit a client that fell behind with the answers it gave after its schedule ended
            "achieved_rps": r.requests / x["elapsed_s"] if offered is not None and x.get("elapsed_s") else None,
            "submit_rps": x.get("submit_rps"),
            "p50_ms": r.p50_ms, "p90_ms": r.p90_ms, "p99_ms": r.p99_ms, "p99_9_ms": x.get("p99_9_ms"),
            "max_ms": r.max_ms, "mean_ms": r.mean_ms,
            "send_lag_p99_ms": x.get("send_lag_p99_ms"), "send_lag_max_ms": x.get("send_lag_max_ms"),
            "in_flight_max": x.get("in_flight_max"),
            # the JVM's own account of the measured window (the harness's client_cpu_pct is the whole
            # process: start-up and warm-up included)
            "client_cpu_s": x.get("cpu_s"), "client_cpu_us_per_req": x.get("cpu_us_per_req"),
            "client_cpu_pct": lc["client_cpu_pct"], "client_threads_max": x.get("threads_max"),
            # the client JVM's PSS when its run ended, read by itself (the C reference's: not read)
            "pss_kib": x.get("pss_kib"),
            "thread_groups": json.dumps(x.get("thread_groups") or {}, sort_keys=True),
            "error_kinds": json.dumps(x.get("error_kinds") or {}, sort_keys=True),
            **tcp_columns(m.probes["tcp"]),
            "java_version": x.get("java_version"), "server": srv.server.id,
            **{k: lc[k] for k in ("server_cpu_s", "server_cpu_pct", "server_threads_max", "foreign_cpu_cores",
                                  "noisy", "loop_ms_before", "loop_ms_after", "raw_file", "started_at")},
            "server_cpu_us_per_req": 1e6 * m.usage.cpu_s / r.requests if r.requests else None,
            "outlier": False, "ok_run": r.ok, "failure": r.failure,
            "hlog_file": str(Path("raw") / (stem + ".hlog")) if hlog.exists() else None,
            **{f"{what}_file": str(Path("raw") / (stem + ext)) if Path(beside_hlog(str(hlog), what)).exists() else None
               for what, ext in BESIDE_HLOG.items()},
            "server_cpus": srv.cpus or "", "client_cpus": run.client_cpus or "",
            "profile": run.profile.name, "run_id": run.run_id,
        }

    def describe(self, row: dict) -> str:
        got = (f"{number(row['achieved_rps'])}/s ok" if number(row["achieved_rps"]) != "n/a" else "no summary")
        return (f"{got}  p99 {number(row['p99_ms'], '.3f')} ms  failed {number(row['failed'])}  "
                f"dropped {number(row['dropped'])}  client cpu {number(row['client_cpu_us_per_req'], '.1f')} us/req  "
                f"server cpu {number(row['server_cpu_pct'], '.0f')}%")


# ---- reading a captured clients dataset ------------------------------------------------------------

class ClientDataset(Dataset):
    """The clients dataset: the HTTP datasets' provenance and caption, its own summary."""

    summarised = Summary(
        keys=tuple(KEYS), ok="ok_run", dropna=False,
        columns={
            "repeats": ("repeat", "count"), "ceiling_rps": ("ceiling_rps", "first"),
            **spread("achieved_rps"), "submit_rps": ("submit_rps", "median"),
            **spread("p50_ms"), **spread("p99_ms"), **spread("p99_9_ms"), "max_ms": ("max_ms", "median"),
            "offered": ("offered", "median"), "ok": ("ok", "median"), "failed": ("failed", "median"),
            "timeouts": ("timeouts", "median"), "rejected": ("rejected", "median"), "errors": ("errors", "median"),
            "dropped": ("dropped", "median"), "accounted": ("accounted", "all"),
            **spread("client_cpu_us_per_req"),
            "client_threads_max": ("client_threads_max", "max"), "server_cpu_pct": ("server_cpu_pct", "max"),
            "noisy": ("noisy", "any"), "outliers": ("outlier", "sum"),
        },
        optional=PSS_SUMMARY,  # the client JVM's PSS after its run (none for the C generator, nor in older captures)
        shown=("client", "experiment", "mode", "connections", "delay_ms", "fraction", "offered_rps", "repeats",
               "achieved_rps", "p50_ms", "p99_ms", "timeouts", "dropped", "client_cpu_us_per_req", "accounted"),
    )

    def with_gc(self, rows):
        """These rows with what the collector's log of each run says (gc_log_file): the pauses
        (`gc_pauses`), the seconds the JVM stood still in them (`gc_pause_s`), and the most heap
        still in use after one (`gc_heap_after_mib`), the JVM's whole life (warm-up included)."""
        got = [gc_pauses((self.path / f).read_text()) if isinstance(f, str) else {} for f in rows["gc_log_file"]]
        return rows.assign(**{k: [g.get(k) for g in got] for k in ("gc_pauses", "gc_pause_s", "gc_heap_after_mib")})

    def threads(self, row) -> pd.DataFrame:
        """What the client's threads were doing halfway through the row's measured window (its
        thread_dump_file), one line per group of threads named alike: how many, in which states,
        the CPU they had used, and the frame most of them were in."""
        got = pd.DataFrame(thread_dump((self.path / row["thread_dump_file"]).read_text()))
        return (got.groupby("group", sort=False)
                .agg(threads=("name", "count"), states=("state", lambda s: ", ".join(sorted(set(s)))),
                     cpu_ms=("cpu_ms", "sum"), waiting_in=("top", lambda s: s.mode().iloc[0]),
                     library=("library", lambda s: s[s != ""].mode().iloc[0] if (s != "").any() else ""))
                .reset_index().sort_values("cpu_ms", ascending=False, ignore_index=True))


    def timeline(self, row) -> pd.DataFrame:
        """The row's run every 100 ms (its timeline_file; clientload.timeline says what each column
        is), with what happened in each tenth of a second beside the running totals: `d_<column>` for
        the answers, failures, pauses and every thread group's CPU (ms in that interval)."""
        got = pd.DataFrame(timeline((self.path / row["timeline_file"]).read_text()))
        got = got.fillna({c: 0 for c in got.columns if c != "busy"})
        running = [c for c in got.columns
                   if c.startswith("cpu_") or c in ("ok", "failed", "opened", "gc_ms", "gc_count")]
        return got.join(got[running].diff().fillna(0).add_prefix("d_"))


def load(path: Path, shown_under: str = "replay") -> ClientDataset:
    path, df, meta = read_folder(path, ("ok_run", "accounted", "noisy", "outlier"))
    # newer than their datasets: every run as the chapter sets its client; no timeline or count of connections kept
    df["setting"] = [v if isinstance(v, str) else "" for v in df["setting"]] if "setting" in df.columns else ""
    for col in ("timeline_file", "tcp_active_opens", "pss_kib"):
        if col not in df.columns:
            df[col] = float("nan")
    return ClientDataset(path.name, path, df, meta, {}, shown_under)
