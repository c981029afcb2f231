"""The RPC providers of source write-up 004 (Tomcat against Netty), on the open-loop experiment's lifecycle.

One service (findById) behind four IO stacks (manifest.RPC_SERVERS): Spring MVC on Tomcat with platform or
virtual threads, Spring WebFlux on Reactor Netty, and plain Netty, all with the same Jackson and the same body.
Each unit is one provider process with one setting (work per call, keep-alive limit, pool, and whether the
write-up's consumer sits in front of it); after it verified with a real call in its own protocol, it is warmed up
for the profile's jvm_warmup_s under its first point's load, then its points are measured as in openrun:

  the write-up's setup    wrk -t2 -c10 GET /?id=101 on the consumer, which calls the provider through OkHttp's
                          execute() (both on the server's core, wrk on the other), and on the provider directly;
  keep-alive matched      the book's generator POSTing the JSON call, the providers closing never, or every 100
                          (told to; or asked by the generator, right after the never-closing point);
  closed-loop sweep       1 to 256 connections; then the open loop at fractions of the capacity at 64;
  blocking work           10 ms per call, where threads, virtual threads and event loops part ways;
  the 2 x 2 on Netty      HTTP or a length-prefixed frame, JSON or binary, beside Tomcat with JSON.

Each provider JVM warms up under load before its first measured point (the profile's server_jvm_warmup_s, in
windows of jvm_window_s): Spring on one core needs over a minute to reach its steady rate. In each provider's plain
unit the warm-up windows are themselves measured (experiment "warmup"), and in the last repeat that unit ends with a
flame graph: async-profiler inside the JVM (--profile) opens its window only after the measured points, so that
profiling never touches a measured number; graphs and folded stacks (gzipped) land in the dataset's flame/ folder.
The call's bytes on the wire and a call in each provider's own protocol are in rpcwire.py.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import os
import time
from dataclasses import dataclass
from pathlib import Path

from . import drivers, http, manifest, metadata
from .dataset import read_battery, read_folder
from .lifecycle import ServerError, ServerProcess
from .manifest import ROOT, ServerOptions
from .openrun import COLUMNS as OPEN_COLUMNS
from .openrun import OpenDataset, OpenExperiment
from .runner import Run, Unit, now, raw_text, run_load
from .rpcwire import ANSWERS, CALLS, call, protocol

# ---- the plan ---------------------------------------------------------------------------------------

PROVIDERS = manifest.ids("Java", role="rpc")  # rpc-tomcat, rpc-tomcat-vt, rpc-webflux, rpc-netty
GRID = ("rpc-netty", "rpc-netty-http-binary", "rpc-netty-frame-json", "rpc-netty-frame-binary")
NETTY = ("rpc-netty", *GRID[1:])


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
    timeout_s: float = 5.0

    def setting(self) -> tuple:
        """What one provider process is started with: points of one setting share a process."""
        return (self.work_ms, self.keep_alive_requests, self.pool)

    def label(self) -> str:
        level = "closed" if self.loop == "closed" else f"{100 * self.fraction:g}%"
        ka = {-1: "ka=shipped", 0: "ka=never"}.get(self.keep_alive_requests, f"ka={self.keep_alive_requests}")
        extra = (f" work={self.work_ms:g}ms" if self.work_ms else "") + (f" pool={self.pool}" if self.pool else "")
        extra += (" via consumer" if self.via else "") + (f" window {self.window}" if self.window else "")
        extra += f" close every {self.close_every}" if self.close_every else ""
        return f"{self.experiment} {self.tool} {level} c={self.connections} {ka}{extra}"


@dataclass(frozen=True)
class RpcPlan:
    dataset: str
    description: str
    servers: tuple[str, ...]
    points: tuple[RpcPoint, ...]
    smoke_points: tuple[RpcPoint, ...]
    smoke_servers: tuple[str, ...] = ()
    measured_s: float = 5.0
    warmup_s: float = 1.0
    jvm_warmup_s: tuple[tuple[str, float], ...] = (("rpc-netty", 60.0), ("rpc-", 90.0))  # first prefix that fits
    flame_connections: int = 16    # the profiled window's closed loop, after the unit's measured points
    flame_s: float = 10.0          # 0: no flame graph

    def points_for(self, profile: str) -> tuple[RpcPoint, ...]:
        return self.smoke_points if profile == "smoke" else self.points

    def only(self, servers) -> "RpcPlan":
        return dataclasses.replace(self, servers=tuple(servers), smoke_servers=())

    def experiment(self, with_battery: bool | None = None) -> "RpcExperiment":
        return RpcExperiment(self, with_battery)

    @staticmethod
    def reader():
        return load


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
# close take turns, so that the host is the same for both; then each provider told to close every 100.
KEEPALIVE_TURNS = tuple(RpcPoint("keepalive", connections=10, close_every=every, window=w,
                                 servers=("rpc-tomcat", "rpc-netty")) for w in (1, 2, 3) for every in (0, 100))
RPC_KEEPALIVE = RpcPlan(
    dataset="rpc-keepalive",
    description="source write-up 004's two providers (Spring MVC on Tomcat, plain Netty), on what closing a "
                "connection every 100 calls costs them: never against every 100th call asking to close, in turns "
                "in one process, then each provider closing every 100 itself",
    servers=("rpc-tomcat", "rpc-netty"),
    points=KEEPALIVE_TURNS + (KEEPALIVE[2],),
    smoke_points=KEEPALIVE_TURNS[:2] + (KEEPALIVE[2],),
    smoke_servers=("rpc-netty",),
    flame_s=0.0,
)
RPC_PLANS = {plan.dataset: plan for plan in (RPC_PROVIDER, RPC_KEEPALIVE)}

# ---- the experiment ---------------------------------------------------------------------------------

EXTRA = ["experiment", "keep_alive_requests", "close_every", "pool", "via", "window", "transport", "codec", "threads",
         "consumer_cpu_s", "consumer_cpu_us_per_req"]
COLUMNS = OPEN_COLUMNS[:OPEN_COLUMNS.index("repeat")] + EXTRA + OPEN_COLUMNS[OPEN_COLUMNS.index("repeat"):]
KEYS = ["experiment", "server", "tool", "loop", "connections", "work_ms", "keep_alive_requests", "close_every",
        "pool", "via",
        "window", "fraction"]


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of one process (the consumer: one JVM)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RpcExperiment(OpenExperiment):
    columns = COLUMNS
    outlier_keys = tuple(KEYS)

    def __init__(self, plan: RpcPlan, with_battery: bool | None = None):
        super().__init__(plan)
        self.with_battery = with_battery is not False
        self.consumer: ServerProcess | None = None
        self.unit: Unit | None = None
        self.requests: dict[str, str] = {}

    def meta(self, run: Run) -> dict:
        m = super().meta(run)
        m["plan"]["jvm_warmup_s"] = {s.id: self.jvm_warmup(run, s.id) for s in self.active}
        m["plan"]["jvm_window_s"] = run.profile.jvm_window_s
        m["calls"] = {codec: body.hex() for codec, body in CALLS.items()}
        consumer = manifest.get("rpc-consumer")
        m["servers"]["rpc-consumer"] = {"model": consumer.model, "lang": "Java", "summary": consumer.summary}
        return m

    def jvm_warmup(self, run: Run, server_id: str) -> float:
        """How long a provider's JVM warms up before its first measured point (the profile caps it)."""
        asked = next(s for prefix, s in self.plan.jvm_warmup_s if server_id.startswith(prefix))
        return min(asked, run.profile.server_jvm_warmup_s)

    def _units(self, points, repeat: int = 0, run: Run | None = None) -> list[Unit]:
        units = []
        for setting in dict.fromkeys(p.setting() for p in points):
            work_ms, kar, pool = setting
            for server in self.active:
                mine = [p for p in points if p.setting() == setting and server.id in p.servers]
                if not mine:
                    continue
                extra = ("--keep-alive-requests", str(kar)) if kar >= 0 else ()
                flame = (self.plan.flame_s > 0 and setting == (0.0, 0, 0) and run is not None
                         and repeat == run.profile.repeats)
                if flame:  # the last repeat's plain unit: a flame graph after its measured points
                    extra += ("--profile", str(self.flame_path(run, server.id)), "--profile-s",
                              f"{min(self.plan.flame_s, run.profile.duration_s):g}")
                via = next((p.via for p in mine if p.via), "")
                units.append(Unit(server, mine, ServerOptions(work_ms=work_ms, pool=pool or None, extra=extra),
                                  note={"work_ms": work_ms, "keep_alive_requests": kar, "pool": pool, "via": via,
                                        "flame": flame}))
        return units

    def units(self, run: Run, points, repeat: int):
        for unit in self._units(points, repeat, run):
            self.unit = unit  # the runner serves each unit as it is yielded: verify() and beside() read it
            yield unit

    def flame_path(self, run: Run, server_id: str) -> Path:
        return run.writer.path(f"flame/{server_id}-flame.html")

    def key(self, srv: ServerProcess, point: RpcPoint, repeat: int) -> tuple:
        return (srv.server.id, point.setting(), point.via, point.connections, repeat)

    def stem(self, srv: ServerProcess, point: RpcPoint, repeat: int, level: str) -> str:
        ka = {-1: "shipped", 0: "never"}.get(point.keep_alive_requests, str(point.keep_alive_requests))
        via = "-via-consumer" if point.via else ""
        pool = f"-pool{point.pool}" if point.pool else ""
        window = f"-window{point.window}" if point.window else ""
        every = f"-close{point.close_every}" if point.close_every else ""
        return (f"{srv.server.id}/{point.experiment}-{point.tool}-{level}-c{point.connections}-w{point.work_ms:g}"
                f"-ka{ka}{every}{pool}{via}{window}-r{repeat}")

    def target(self, srv: ServerProcess, point: RpcPoint) -> str:
        return self.consumer.url if point.via and self.consumer is not None else srv.url

    def point_warmup(self, run: Run, point: RpcPoint) -> float:
        """A warm-up window is measured from its first request: the JVM's warm-up is what it shows."""
        return 0.0 if point.experiment == "warmup" else self.warmup(run)

    def _request_file(self, run: Run, codec: str) -> str:
        """The call's bytes, kept with the raw output; given to the generator relative to the repository."""
        if codec not in self.requests:
            path = run.writer.raw_path(f"requests/findById-{codec}.bin")
            path.write_bytes(CALLS[codec])
            self.requests[codec] = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        return self.requests[codec]

    def spec(self, run: Run, srv: ServerProcess, point: RpcPoint, rate: float, hist: Path | None):
        spec = super().spec(run, srv, point, rate, hist)
        spec = dataclasses.replace(spec, threads=point.threads, path=point.path, close_every=point.close_every)
        if point.experiment == "warmup":
            spec = dataclasses.replace(spec, duration_s=run.profile.jvm_window_s)
        if point.tool != "openloop":
            return spec
        transport, codec = protocol(srv.server.id)
        body = self._request_file(run, codec)
        return dataclasses.replace(spec, **({"frame_file": body} if transport == "frame" else {"body_file": body}))

    def verify(self, run: Run, srv: ServerProcess, unit: Unit) -> None:
        """A GET of the route (HTTP providers) and a call in the provider's own protocol; then, unless the unit
        measures its own warm-up, the JVM's warm-up: its first point's load in windows (output kept)."""
        srv.verify()
        transport, codec = protocol(srv.server.id)
        got = call(srv.opts.host, srv.port, srv.server.id)
        if got != ANSWERS[codec]:
            raise ServerError(f"{srv.server.id}: the call answered {got[:80]!r}, expected {ANSWERS[codec]!r}")
        if unit.points[0].experiment != "warmup":
            self.warm(run, srv, dataclasses.replace(unit.points[0], loop="closed", via=""),
                      self.jvm_warmup(run, srv.server.id))

    def warm(self, run: Run, srv: ServerProcess, point: RpcPoint, seconds: float) -> None:
        """A JVM's warm-up: a point's load (through the consumer, for a point through it) in windows of the
        profile's jvm_window_s, each one's output kept (the provider's repeat 0)."""
        window = run.profile.jvm_window_s
        for w in range(1, max(1, round(seconds / window)) + 1):
            spec = dataclasses.replace(self.spec(run, srv, point, 0.0, None), duration_s=window)
            argv = run.client_prefix + drivers.get(point.tool).argv(spec, self.target(srv, point))
            started = now()
            output, code, _, _ = run_load(argv, {}, window + 60)
            run.writer.write_raw(self.stem(srv, point, 0, f"jvm-warmup{w}") + ".txt",
                                 raw_text(argv, {}, output, code, started))

    @contextlib.contextmanager
    def beside(self, run: Run, srv: ServerProcess):
        """The write-up's consumer, pointed at this provider, on its core, for a unit with a point through it;
        a flame graph after the measured points, for a unit that asks for one."""
        via = self.unit.note["via"]
        with (ServerProcess(manifest.get(via), ServerOptions(host=run.host, extra=("--provider", srv.url)),
                            cpus=run.server_cpus) if via else contextlib.nullcontext()) as consumer:
            self.consumer = consumer
            try:
                if consumer is not None:  # a cold provider's first calls outlast the consumer's 200 ms: retry
                    call(srv.opts.host, srv.port, srv.server.id)
                    for _ in range(10):
                        got = http.get(consumer.opts.host, consumer.port, "/?id=101")
                        if got.status == 200:
                            break
                    if b'"id":101' not in got.body:
                        raise ServerError(f"{via}: GET /?id=101 answered {got.status} {got.body[:80]!r}")
                    self.warm(run, srv, next(p for p in self.unit.points if p.via), self.jvm_warmup(run, via))
                yield
                if self.unit.note["flame"]:
                    self.flame(run, srv)
            finally:
                self.consumer = None
        if consumer is not None:
            run.stops.append({"server": via, "provider": srv.server.id, "argv": metadata.portable(consumer.argv),
                              "exit_code": consumer.exit_code})
            if consumer.exit_code != 0:
                raise RuntimeError(f"{via} exited {consumer.exit_code} on SIGTERM: {consumer.stderr_tail()}")

    def flame(self, run: Run, srv: ServerProcess) -> None:
        """Open the provider's profiled window (its --profile file's trigger) under a closed loop; wait for the
        flame graph and the folded stacks."""
        out = self.flame_path(run, srv.server.id)
        folded = out.with_name(f"{srv.server.id}.collapsed")
        point = RpcPoint("flame", connections=self.plan.flame_connections)
        window = min(self.plan.flame_s, run.profile.duration_s)
        # the profiler notices the trigger within 0.5 s and takes a moment to load: the load outlasts its window
        spec = dataclasses.replace(self.spec(run, srv, point, 0.0, None), duration_s=window + 3)
        argv = run.client_prefix + drivers.get("openloop").argv(spec, srv.url)
        Path(f"{out}.start").touch()
        started = now()
        output, code, _, _ = run_load(argv, {}, window + 60)
        run.writer.write_raw(f"{srv.server.id}/flame-load.txt", raw_text(argv, {}, output, code, started))
        deadline = time.monotonic() + 15
        while not (out.exists() and folded.exists()) and time.monotonic() < deadline:
            time.sleep(0.2)
        Path(f"{out}.start").unlink()
        run.progress(f"flame {srv.server.id}: {'written' if out.exists() else 'MISSING'} {out.name}")
        if not (out.exists() and folded.exists()):
            raise RuntimeError(f"{srv.server.id}: no flame graph written ({srv.stderr_tail()})")
        # the folded stacks run to megabytes of repeated frame names (Spring's to 12 MB): kept gzipped, byte for
        # byte (the profiler wrote them before the graph, so they are whole once the graph exists)
        folded.with_name(folded.name + ".gz").write_bytes(gzip.compress(folded.read_bytes(), mtime=0))
        folded.unlink()

    def measure(self, run: Run, srv: ServerProcess, point: RpcPoint, repeat: int) -> dict:
        consumer = self.consumer if point.via else None
        before = _proc_cpu_s(consumer.pid) if consumer is not None else None
        row = super().measure(run, srv, point, repeat)
        transport, codec = protocol(srv.server.id)
        consumer_cpu = _proc_cpu_s(consumer.pid) - before if consumer is not None else None
        row.update(experiment=point.experiment, keep_alive_requests=point.keep_alive_requests,
                   close_every=point.close_every, pool=point.pool,
                   via=point.via, window=point.window, transport=transport, codec=codec, threads=point.threads,
                   consumer_cpu_s=consumer_cpu,
                   consumer_cpu_us_per_req=1e6 * consumer_cpu / row["ok"] if consumer_cpu and row["ok"] else None)
        return row

    def finish(self, run: Run) -> None:
        """The HTTP providers' battery on their route."""
        if not self.with_battery:
            return
        from .battery import run_battery
        verdicts = {}
        for server in self.active:
            if server.conforms:
                with ServerProcess(server, ServerOptions(host=run.host), cpus=run.server_cpus) as srv:
                    srv.verify()
                    verdicts[server.id] = [v.as_dict() for v in run_battery(run.host, srv.port, route=server.route)]
                passed = sum(v["passed"] for v in verdicts[server.id])
                run.progress(f"battery {server.id}: {passed}/{len(verdicts[server.id])} cases passed")
        run.writer.write_json("battery.json", verdicts)


# ---- reading a captured dataset ------------------------------------------------------------------------

class RpcDataset(OpenDataset):
    """An RPC dataset: the open-loop table with the providers' settings as keys."""

    def summary(self):
        ok = self.df[self.df["ok_run"]]
        agg = ok.groupby(KEYS, sort=False, dropna=False).agg(
            repeats=("repeat", "count"), achieved_rps=("achieved_rps", "median"),
            achieved_rps_min=("achieved_rps", "min"), achieved_rps_max=("achieved_rps", "max"),
            offered_rps=("offered_rps", "median"), p50_ms=("p50_ms", "median"), p99_ms=("p99_ms", "median"),
            p99_9_ms=("p99_9_ms", "median"), dropped=("dropped", "median"), timeouts=("timeouts", "median"),
            cpu_us_per_req=("server_cpu_us_per_req", "median"),
            consumer_cpu_us_per_req=("consumer_cpu_us_per_req", "median"),
            rss_mib=("server_rss_kib_max", lambda s: s.median() / 1024), threads=("server_threads_max", "max"),
            client_cpu_pct=("client_cpu_pct", "median"), generator_bound=("generator_bound", "any"),
            noisy=("noisy", "any"), outliers=("outlier", "sum"), conns_served=("conns_served", "min"),
        ).reset_index()
        return agg


def load(path: Path, shown_under: str = "replay") -> RpcDataset:
    path, df, meta = read_folder(path, ("ok_run", "generator_bound", "noisy", "outlier"))
    if "close_every" not in df.columns:  # captured before the generator could close every N calls
        df["close_every"] = 0
    return RpcDataset(path.name, path, df, meta, read_battery(path), shown_under)
