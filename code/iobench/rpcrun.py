"""The RPC providers of source write-up 004 (Tomcat against Netty), on the open-loop experiment's lifecycle.

One service (findById) behind four IO stacks (manifest.RPC_SERVERS): Spring MVC on Tomcat with platform or
virtual threads, Spring WebFlux on Reactor Netty, and plain Netty, all with the same Jackson and the same body.
Each unit is one provider process with one setting (work per call, keep-alive limit, pool, and whether the
write-up's consumer sits in front of it); after it verified with a real call in its own protocol, it is warmed up
for the profile's jvm_warmup_s under its first point's load, then its points are measured as in openrun:

  the write-up's setup    wrk -t2 -c10 GET /?id=101 on the consumer, which calls the provider through OkHttp's
                          execute() (both on the server's core, wrk on the other), and on the provider directly;
  keep-alive matched      the book's generator POSTing the JSON call, every provider closing never, or every 100;
  closed-loop sweep       1 to 256 connections; then the open loop at fractions of the capacity at 64;
  blocking work           10 ms per call, where threads, virtual threads and event loops part ways;
  the 2 x 2 on Netty      HTTP or a length-prefixed frame, JSON or binary, beside Tomcat with JSON.

Flame graphs come last, from a separate run of each provider under a fixed load with async-profiler inside it
(--profile), so that profiling never touches a measured number; they land in the dataset's flame/ folder.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import struct
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import drivers, http, manifest, metadata
from .dataset import read_folder
from .lifecycle import ServerError, ServerProcess
from .manifest import ROOT, ServerOptions
from .openrun import COLUMNS as OPEN_COLUMNS
from .openrun import OpenDataset, OpenExperiment
from .runner import Run, Unit, now, raw_text, run_load

# ---- the call on the wire, as iom.rpc.Codec writes it --------------------------------------------------

SERVICE, METHOD, USER_ID = "iom.rpc.UserService", "findById", 101


def _utf(s: str) -> bytes:
    """java.io.DataOutput.writeUTF of an ASCII string: a 2-byte length, then the bytes."""
    b = s.encode("ascii")
    return struct.pack(">H", len(b)) + b


CALLS = {  # the request body (or frame payload) of findById(101), per codec
    "json": json.dumps({"service": SERVICE, "method": METHOD, "args": [USER_ID]}, separators=(",", ":")).encode(),
    "binary": _utf(SERVICE) + _utf(METHOD) + b"\x01" + b"I" + struct.pack(">i", USER_ID),
}
ANSWERS = {  # what every provider must answer it with
    "json": manifest.RPC_JSON_101,
    "binary": b"\x01" + b"U" + struct.pack(">i", USER_ID) + _utf(f"user-{USER_ID}"),
}


def protocol(server_id: str) -> tuple[str, str]:
    """(transport, codec) of a provider, read from its fixed flags in the manifest."""
    flags = next(f for sid, _, f, *_ in manifest.RPC_SERVERS if sid == server_id)
    transport = flags[flags.index("--transport") + 1] if "--transport" in flags else "http"
    codec = flags[flags.index("--codec") + 1] if "--codec" in flags else "json"
    return transport, codec


def call(host: str, port: int, server_id: str, timeout: float = 10.0) -> bytes:
    """One findById(101) in the provider's own protocol, on a new connection; the answer's body (or frame)."""
    transport, codec = protocol(server_id)
    body = CALLS[codec]
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as s:
        if transport == "frame":
            s.sendall(struct.pack(">I", len(body)) + body)
            buf = bytearray()
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
                chunk = s.recv(65536)
                if not chunk:
                    raise http.HttpError(f"{server_id}: the connection closed after {len(buf)} bytes of a frame")
                buf += chunk
            return bytes(buf[4:4 + struct.unpack(">I", buf[:4])[0]])
        ctype = "application/json" if codec == "json" else "application/octet-stream"
        s.sendall(f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                  f"Connection: close\r\n\r\n".encode() + body)
        resp = http.read_response(s, bytearray(), deadline)
        if resp.status != 200:
            raise http.HttpError(f"{server_id}: the call answered {resp.status}")
        return resp.body


# ---- the plan ---------------------------------------------------------------------------------------

PROVIDERS = manifest.ids("Java", role="rpc")  # rpc-tomcat, rpc-tomcat-vt, rpc-webflux, rpc-netty
GRID = ("rpc-netty", "rpc-netty-http-binary", "rpc-netty-frame-json", "rpc-netty-frame-binary")


@dataclass(frozen=True)
class RpcPoint:
    experiment: str                # writeup, keepalive, sweep, open, work, grid
    loop: str = "closed"
    connections: int = 64
    work_ms: float = 0.0
    fraction: float = 0.0          # open: this share of the same unit's closed-loop rate at these connections
    rate: float = 0.0
    keep_alive_requests: int = 0   # the providers' --keep-alive-requests: 0 never close; -1 as each one ships
    pool: int = 0                  # the providers' --pool (0: as each one ships)
    via: str = ""                  # "rpc-consumer": the load goes to the write-up's consumer in front
    tool: str = "openloop"         # "wrk" for the write-up's own command
    threads: int = 1
    path: str = "/"                # wrk GETs /?id=101; the book's generator POSTs the call to /
    servers: tuple[str, ...] = PROVIDERS
    timeout_s: float = 5.0

    def setting(self) -> tuple:
        """What one provider process is started with: points of one setting share a process."""
        return (self.work_ms, self.keep_alive_requests, self.pool, self.via)

    def label(self) -> str:
        level = "closed" if self.loop == "closed" else f"{100 * self.fraction:g}%"
        ka = {-1: "ka=shipped", 0: "ka=never"}.get(self.keep_alive_requests, f"ka={self.keep_alive_requests}")
        extra = (f" work={self.work_ms:g}ms" if self.work_ms else "") + (f" pool={self.pool}" if self.pool else "")
        via = " via consumer" if self.via else ""
        return f"{self.experiment} {self.tool} {level} c={self.connections} {ka}{extra}{via}"


@dataclass(frozen=True)
class RpcPlan:
    dataset: str
    description: str
    servers: tuple[str, ...]
    points: tuple[RpcPoint, ...]
    smoke_points: tuple[RpcPoint, ...]
    smoke_servers: tuple[str, ...] = ()
    measured_s: float = 5.0
    warmup_s: float = 2.0
    flame_connections: int = 16    # the profiled run's closed loop
    flame_s: float = 10.0          # its profiled window, after the JVM's warm-up

    def points_for(self, profile: str) -> tuple[RpcPoint, ...]:
        return self.smoke_points if profile == "smoke" else self.points

    def only(self, servers) -> "RpcPlan":
        return dataclasses.replace(self, servers=tuple(servers), smoke_servers=())

    def experiment(self, with_battery: bool | None = None) -> "RpcExperiment":
        return RpcExperiment(self, with_battery)

    @staticmethod
    def reader():
        return load


def _sweep(levels, **kw) -> tuple[RpcPoint, ...]:
    return tuple(RpcPoint("sweep", connections=c, **kw) for c in levels)


_WRK = dict(tool="wrk", threads=2, connections=10, path="/?id=101", keep_alive_requests=-1)
WRITEUP = tuple(RpcPoint("writeup", servers=("rpc-tomcat", "rpc-netty"), via=v, **_WRK) for v in ("rpc-consumer", ""))
KEEPALIVE = tuple(RpcPoint("keepalive", connections=10, keep_alive_requests=k) for k in (0, 100))
SWEEP = _sweep((1, 4, 16, 64, 256))
OPEN = tuple(RpcPoint("open", loop="open", connections=64, fraction=f) for f in (0.25, 0.5, 0.8, 1.0, 1.2))
WORK = (tuple(RpcPoint("work", connections=c, work_ms=10.0) for c in (16, 256, 1000))
        + tuple(RpcPoint("work", connections=c, work_ms=10.0, pool=200, servers=("rpc-webflux",)) for c in (256, 1000)))
GRID_POINTS = (RpcPoint("grid", connections=64, servers=GRID[1:]),)  # rpc-netty at 64: the sweep's point

RPC_PROVIDER = RpcPlan(
    dataset="rpc-provider",
    description="source write-up 004: one RPC call (findById, JSON) served by Spring MVC on Tomcat (platform and "
                "virtual threads), Spring WebFlux and plain Netty: the write-up's setup through its consumer, "
                "keep-alive matched, a closed-loop sweep, the open loop, 10 ms of blocking work, Netty's 2 x 2 of "
                "transport and codec, and a flame graph of each from a separate profiled run",
    servers=PROVIDERS + GRID[1:],
    points=WRITEUP + KEEPALIVE + SWEEP + OPEN + WORK + GRID_POINTS,
    smoke_points=(WRITEUP[0], KEEPALIVE[1], SWEEP[3], OPEN[1], WORK[0], GRID_POINTS[0]),
    smoke_servers=("rpc-tomcat", "rpc-netty", "rpc-netty-frame-binary"),
)
RPC_PLANS = {RPC_PROVIDER.dataset: RPC_PROVIDER}

# ---- the experiment ---------------------------------------------------------------------------------

EXTRA = ["experiment", "keep_alive_requests", "pool", "via", "transport", "codec", "threads",
         "consumer_cpu_s", "consumer_cpu_us_per_req"]
COLUMNS = OPEN_COLUMNS[:OPEN_COLUMNS.index("repeat")] + EXTRA + OPEN_COLUMNS[OPEN_COLUMNS.index("repeat"):]
KEYS = ["experiment", "server", "tool", "loop", "connections", "work_ms", "keep_alive_requests", "pool", "via",
        "fraction"]


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of one process (the consumer: one JVM)."""
    import os
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
        m["plan"]["jvm_warmup_s"] = run.profile.jvm_warmup_s
        m["calls"] = {codec: body.hex() for codec, body in CALLS.items()}
        m["servers"].update({"rpc-consumer": {"model": manifest.get("rpc-consumer").model, "lang": "Java",
                                              "summary": manifest.get("rpc-consumer").summary}})
        return m

    def _units(self, points) -> list[Unit]:
        units = []
        for setting in dict.fromkeys(p.setting() for p in points):
            work_ms, kar, pool, via = setting
            for server in self.active:
                mine = [p for p in points if p.setting() == setting and server.id in p.servers]
                if mine:
                    extra = ("--keep-alive-requests", str(kar)) if kar >= 0 else ()
                    units.append(Unit(server, mine, ServerOptions(work_ms=work_ms, pool=pool or None, extra=extra),
                                      note={"work_ms": work_ms, "keep_alive_requests": kar, "pool": pool,
                                            "via": via}))
        return units

    def key(self, srv: ServerProcess, point: RpcPoint, repeat: int) -> tuple:
        return (srv.server.id, point.setting(), point.connections, repeat)

    def stem(self, srv: ServerProcess, point: RpcPoint, repeat: int, level: str) -> str:
        ka = {-1: "shipped", 0: "never"}.get(point.keep_alive_requests, str(point.keep_alive_requests))
        via = "-via-consumer" if point.via else ""
        pool = f"-pool{point.pool}" if point.pool else ""
        return (f"{srv.server.id}/{point.experiment}-{point.tool}-{level}-c{point.connections}-w{point.work_ms:g}"
                f"-ka{ka}{pool}{via}-r{repeat}")

    def target(self, srv: ServerProcess) -> str:
        return self.consumer.url if self.consumer is not None else srv.url

    def _request_file(self, run: Run, codec: str) -> str:
        """The call's bytes, kept with the raw output; given to the generator relative to the repository."""
        if codec not in self.requests:
            path = run.writer.raw_path(f"requests/findById-{codec}.bin")
            path.write_bytes(CALLS[codec])
            self.requests[codec] = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        return self.requests[codec]

    def spec(self, run: Run, srv: ServerProcess, point: RpcPoint, rate: float, hist: Path | None):
        spec = super().spec(run, srv, point, rate, hist)
        spec = dataclasses.replace(spec, threads=point.threads, path=point.path)
        if point.tool != "openloop":
            return spec
        transport, codec = protocol(srv.server.id)
        body = self._request_file(run, codec)
        return dataclasses.replace(spec, **({"frame_file": body} if transport == "frame" else {"body_file": body}))

    def verify(self, run: Run, srv: ServerProcess, unit: Unit) -> None:
        """A GET of the route (HTTP providers), a call in the provider's own protocol, the consumer in front if
        the unit has it; then the JVM's warm-up under the first point's load (its output kept, never measured)."""
        srv.verify()
        transport, codec = protocol(srv.server.id)
        got = call(srv.opts.host, srv.port, srv.server.id)
        if got != ANSWERS[codec]:
            raise ServerError(f"{srv.server.id}: the call answered {got[:80]!r}, expected {ANSWERS[codec]!r}")
        if self.consumer is not None:
            got = http.get(self.consumer.opts.host, self.consumer.port, "/?id=101").body
            if b'"id":101' not in got:
                raise ServerError(f"rpc-consumer: GET /?id=101 answered {got[:80]!r}")
        first = unit.points[0]
        spec = self.spec(run, srv, dataclasses.replace(first, loop="closed"), 0.0, None)
        spec = dataclasses.replace(spec, duration_s=run.profile.jvm_warmup_s)
        argv = run.client_prefix + drivers.get(first.tool).argv(spec, self.target(srv))
        started = now()
        output, code, _, _ = run_load(argv, {}, spec.duration_s + 60)
        run.writer.write_raw(self.stem(srv, first, 0, "jvm-warmup") + ".txt", raw_text(argv, {}, output, code, started))

    @contextlib.contextmanager
    def beside(self, run: Run, srv: ServerProcess):
        """The write-up's consumer, pointed at this provider, on the same core, when the unit asks for it."""
        via = self.unit.note["via"]
        if not via:
            yield
            return
        opts = ServerOptions(host=run.host, extra=("--provider", srv.url))
        with ServerProcess(manifest.get(via), opts, cpus=run.server_cpus) as consumer:
            self.consumer = consumer
            try:
                yield
            finally:
                self.consumer = None
        run.stops.append({"server": via, "provider": srv.server.id, "argv": metadata.portable(consumer.argv),
                          "exit_code": consumer.exit_code})
        if consumer.exit_code != 0:
            raise RuntimeError(f"{via} exited {consumer.exit_code} on SIGTERM (contract: 0): {consumer.stderr_tail()}")

    def units(self, run: Run, points, repeat: int):
        for unit in self._units(points):
            self.unit = unit  # the runner serves each unit as it is yielded: beside() reads it
            yield unit

    def measure(self, run: Run, srv: ServerProcess, point: RpcPoint, repeat: int) -> dict:
        consumer = self.consumer
        before = _proc_cpu_s(consumer.pid) if consumer is not None else None
        row = super().measure(run, srv, point, repeat)
        transport, codec = protocol(srv.server.id)
        consumer_cpu = _proc_cpu_s(consumer.pid) - before if consumer is not None else None
        row.update(experiment=point.experiment, keep_alive_requests=point.keep_alive_requests, pool=point.pool,
                   via=point.via, transport=transport, codec=codec, threads=point.threads, consumer_cpu_s=consumer_cpu,
                   consumer_cpu_us_per_req=1e6 * consumer_cpu / row["ok"] if consumer_cpu and row["ok"] else None)
        return row

    def finish(self, run: Run) -> None:
        """The HTTP providers' battery on their route, then one flame graph per provider (plain Netty's 2 x 2
        included), each from a separate run under a closed loop, profiled inside the JVM."""
        if self.with_battery:
            from .battery import run_battery
            verdicts = {}
            for server in self.active:
                if server.conforms:
                    with ServerProcess(server, ServerOptions(host=run.host), cpus=run.server_cpus) as srv:
                        srv.verify()
                        verdicts[server.id] = [v.as_dict() for v in run_battery(run.host, srv.port,
                                                                                route=server.route)]
                    passed = sum(v["passed"] for v in verdicts[server.id])
                    run.progress(f"battery {server.id}: {passed}/{len(verdicts[server.id])} cases passed")
            run.writer.write_json("battery.json", verdicts)
        for server in self.active:
            self.flame(run, server)

    def flame(self, run: Run, server) -> None:
        warm = run.profile.jvm_warmup_s
        window = min(self.plan.flame_s, run.profile.duration_s)
        out = run.writer.path(f"flame/{server.id}-flame.html")
        point = RpcPoint("flame", connections=self.plan.flame_connections, keep_alive_requests=0)
        opts = ServerOptions(host=run.host, extra=("--keep-alive-requests", "0", "--profile", str(out),
                                                   "--profile-delay-s", f"{warm:g}", "--profile-s", f"{window:g}"))
        with ServerProcess(server, opts, cpus=run.server_cpus) as srv:
            spec = dataclasses.replace(self.spec(run, srv, point, 0.0, None), duration_s=warm + window + 2)
            argv = run.client_prefix + drivers.get("openloop").argv(spec, srv.url)
            started = now()
            output, code, _, _ = run_load(argv, {}, spec.duration_s + 60)
            run.writer.write_raw(f"{server.id}/flame-load.txt", raw_text(argv, {}, output, code, started))
            deadline = time.monotonic() + 10
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
        run.progress(f"flame {server.id}: {'written' if out.exists() else 'MISSING'} {out.name}")
        if not out.exists():
            raise RuntimeError(f"{server.id}: no flame graph written ({srv.stderr_tail()})")


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
    return RpcDataset(path.name, path, df, meta, {}, shown_under)
