"""The RPC providers of source write-up 004 (Tomcat against Netty), on the open-loop experiment's lifecycle.

One service (findById) behind four IO stacks (manifest.RPC_SERVERS): Spring MVC on Tomcat with platform or
virtual threads, Spring WebFlux on Reactor Netty, and plain Netty, all with the same Jackson and the same body.
Each turn is one provider process with one setting (work per call, keep-alive limit, pool, and whether the
write-up's consumer sits in front of it); after it verified with a real call in its own protocol, it is warmed up
for the profile's jvm_warmup_s under its first point's load, then its points are measured as in the open-loop
experiment:

  the write-up's setup    wrk -t2 -c10 GET /?id=101 on the consumer, which calls the provider through OkHttp's
                          execute() (both on the server's core, wrk on the other), and on the provider directly;
  keep-alive matched      the book's generator POSTing the JSON call, the providers closing never, or every 100
                          (told to; or asked by the generator, right after the never-closing point);
  closed-loop sweep       1 to 256 connections; then the open loop at fractions of the capacity at 64;
  blocking work           10 ms per call, where threads, virtual threads and event loops part ways;
  the 2 x 2 on Netty      HTTP or a length-prefixed frame, JSON or binary, beside Tomcat with JSON.

Each provider JVM warms up under load before its first measured point (the profile's server_jvm_warmup_s, in
windows of jvm_window_s): Spring on one core needs over a minute to reach its steady rate. In each provider's plain
turn the warm-up windows are themselves measured (experiment "warmup"), and in the last repeat that turn ends with a
flame graph: async-profiler inside the JVM (--profile) opens its window only after the measured points, so that
profiling never touches a measured number; graphs and folded stacks (gzipped) land in the dataset's flame/ folder.
Every provider JVM writes its safepoints and collections, stamped with the wall clock, to a log kept beside the
raw output (jvmlog.py); each row counts the ones that ended in its measured window. The plans are in plans.py, the
columns and the reader in dataset.py; the call's bytes on the wire and a call in each provider's own protocol in
rpcwire.py.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import os
import time
from pathlib import Path

from iobench.kinds.openloop.experiment import OpenExperiment, OpenLoad
from iobench.kinds.rpc.dataset import COLUMNS, KEYS
from iobench.kinds.rpc.plans import RpcPlan, RpcPoint
from iobench.load import drivers
from iobench.load.rpcwire import ANSWERS, CALLS, call, protocol
from iobench.run import jvmlog, jvmmem, metadata
from iobench.run.lifecycle import ServerError, ServerProcess
from iobench.run.results import raw_text
from iobench.run.runner import Experiment, Run, Serving, Turn, now
from iobench.servers import http, manifest
from iobench.servers.manifest import ROOT, ServerOptions

# ---- the experiment ---------------------------------------------------------------------------------
def _proc_cpu_s(pid: int) -> float:
    """utime + stime of one process (the consumer: one JVM)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RpcLoad(OpenLoad):
    """How an RPC point becomes one load on the open loop: keyed and named by the provider's setting, sent through
    the consumer when the point says so, in the provider's own protocol, with the JVM's warm-up measured as such."""

    def __init__(self, plan: RpcPlan):
        super().__init__(plan)
        self.requests: dict[str, str] = {}  # codec -> the call's bytes, as a file kept with the raw output

    def key(self, srv: ServerProcess, point: RpcPoint, repeat: int) -> tuple:
        return (srv.server.id, point.setting(), point.via, point.connections, repeat)

    def stem(self, srv: ServerProcess, point: RpcPoint, repeat: int, level: str) -> str:
        via = "-via-consumer" if point.via else ""
        window = f"-window{point.window}" if point.window else ""
        sampled = "-profiled" if point.profiled else ""
        return (f"{srv.server.id}/{point.experiment}-{point.tool}-{level}-c{point.connections}-"
                f"{setting_stem(point, point.close_every)}{via}{window}{sampled}-r{repeat}")

    def target(self, at: Serving, point: RpcPoint) -> str:
        """A point through the consumer loads the consumer (held beside the provider); the others, the provider."""
        return at.alongside.url if point.via and at.alongside is not None else at.srv.url

    def warmup_s(self, run: Run, point: RpcPoint) -> float:
        """A warm-up window is measured from its first request: the JVM's warm-up is what it shows."""
        return 0.0 if point.experiment == "warmup" else super().warmup_s(run, point)

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


def setting_stem(point: RpcPoint, close_every: int = 0) -> str:
    """A process's setting in a file name: work, keep-alive (and the generator's close_every), pool, JVM flags."""
    ka = {-1: "shipped", 0: "never"}.get(point.keep_alive_requests, str(point.keep_alive_requests))
    every = f"-close{close_every}" if close_every else ""
    pool = f"-pool{point.pool}" if point.pool else ""
    jvm = "-jvm" + "".join(f.strip("-").replace(":", "").replace("=", "") for f in point.jvm.split()) \
        if point.jvm else ""
    return f"w{point.work_ms:g}-ka{ka}{every}{pool}{jvm}"


class RpcExperiment(Experiment):
    """The RPC turns (one provider process per setting, its consumer beside it, its warm-up, its flame graph),
    each point measured by the open-loop experiment it holds, with the RPC columns added to the row."""
    columns = COLUMNS
    outlier_keys = tuple(KEYS)
    outlier_value = OpenExperiment.outlier_value
    require_clean_exit = OpenExperiment.require_clean_exit
    ok_column = OpenExperiment.ok_column

    def __init__(self, plan: RpcPlan, with_battery: bool | None = None):
        self.plan = plan
        self.dataset = plan.dataset
        self.description = plan.description
        self.with_battery = with_battery is not False
        self.open = OpenExperiment(plan, load=RpcLoad(plan))  # its load: self.open.load
        self.columns = COLUMNS + plan.measured_columns()  # system calls, memory by what holds it: where asked

    def points(self, profile: str):
        return self.plan.points_for(profile)

    def meta(self, run: Run) -> dict:
        m = self.open.meta(run)
        m["plan"]["jvm_warmup_s"] = {s.id: self.jvm_warmup(run, s.id) for s in self.plan.serving(run.profile.name)}
        m["plan"]["jvm_window_s"] = run.profile.jvm_window_s
        m["calls"] = {codec: body.hex() for codec, body in CALLS.items()}
        consumer = manifest.get("rpc-consumer")
        m["servers"]["rpc-consumer"] = {"model": consumer.model, "lang": "Java", "summary": consumer.summary}
        return m

    def jvm_warmup(self, run: Run, server_id: str) -> float:
        """How long a provider's JVM warms up before its first measured point (the profile caps it)."""
        asked = next(s for prefix, s in self.plan.jvm_warmup_s if server_id.startswith(prefix))
        return min(asked, run.profile.server_jvm_warmup_s)

    def _turns(self, points, profile: str, repeat: int = 0, run: Run | None = None) -> list[Turn]:
        turns = []
        for setting in dict.fromkeys(p.setting() for p in points):
            work_ms, kar, pool, jvm = setting
            for server in self.plan.serving(profile):
                mine = [p for p in points if p.setting() == setting and server.id in p.servers]
                if not mine:
                    continue
                extra = ("--keep-alive-requests", str(kar)) if kar >= 0 else ()
                flame = (self.plan.flame_s > 0 and setting == (0.0, 0, 0, "") and run is not None
                         and repeat == run.profile.repeats)
                if flame:  # the last repeat's plain turn: a flame graph after its measured points
                    extra += ("--profile", str(self.flame_path(run, server.id)), "--profile-s",
                              f"{min(self.plan.flame_s, run.profile.duration_s):g}")
                via = next((p.via for p in mine if p.via), "")
                # every safepoint of the process's life, stamped with the wall clock, kept beside the raw output
                log = f"raw/{server.id}/jvm-{setting_stem(mine[0])}-r{repeat}.log" if run is not None else ""
                flags = jvmlog.flags(run.writer.path(log)) if log else ()
                flags += jvmmem.flags(self.plan, server)
                turns.append(Turn(server, mine, ServerOptions(work_ms=work_ms, pool=pool or None, extra=extra,
                                                              jvm=flags + tuple(jvm.split())),
                                  note={"work_ms": work_ms, "keep_alive_requests": kar, "pool": pool, "via": via,
                                        "jvm": jvm, "flame": flame, "jvm_log": log}))
        return turns

    def measurements(self, run: Run, points) -> int:
        return sum(len(u.points) for u in self._turns(points, run.profile.name))

    def turns(self, run: Run, points, repeat: int):
        yield from self._turns(points, run.profile.name, repeat, run)

    def flame_path(self, run: Run, server_id: str) -> Path:
        return run.writer.path(f"flame/{server_id}-flame.html")

    def verify(self, run: Run, at: Serving) -> None:
        """A GET of the route (HTTP providers) and a call in the provider's own protocol; then, unless the turn
        measures its own warm-up, the JVM's warm-up: its first point's load in windows (output kept)."""
        srv, turn = at.srv, at.turn
        srv.verify()
        transport, codec = protocol(srv.server.id)
        got = call(srv.opts.host, srv.port, srv.server.id)
        if got != ANSWERS[codec]:
            raise ServerError(f"{srv.server.id}: the call answered {got[:80]!r}, expected {ANSWERS[codec]!r}")
        if turn.points[0].experiment != "warmup":
            self.warm(run, at, dataclasses.replace(turn.points[0], loop="closed", via=""),
                      self.jvm_warmup(run, srv.server.id))

    def warm(self, run: Run, at: Serving, point: RpcPoint, seconds: float) -> None:
        """A JVM's warm-up: a point's load (through the consumer, for a point through it) in windows of the
        profile's jvm_window_s, each one's output kept (the provider's repeat 0)."""
        def load(window: float) -> tuple[list[str], dict]:
            spec = dataclasses.replace(self.open.load.spec(run, at.srv, point, 0.0, None), duration_s=window)
            return run.client_prefix + drivers.get(point.tool).argv(spec, self.open.load.target(at, point)), {}
        run.warm_jvm(seconds, load, lambda w: self.open.load.stem(at.srv, point, 0, f"jvm-warmup{w}"))

    @contextlib.contextmanager
    def alongside(self, run: Run, at: Serving):
        """The write-up's consumer, pointed at this provider, on its core, for a turn with a point through it
        (what it yields: at.alongside); a flame graph after the measured points, for a turn that asks for one."""
        srv, via = at.srv, at.turn.note["via"]
        with (ServerProcess(manifest.get(via), ServerOptions(host=run.host, extra=("--provider", srv.url)),
                            cpus=run.server_cpus) if via else contextlib.nullcontext()) as consumer:
            if consumer is not None:  # a cold provider's first calls outlast the consumer's 200 ms: retry
                call(srv.opts.host, srv.port, srv.server.id)
                for _ in range(10):
                    got = http.get(consumer.opts.host, consumer.port, "/?id=101")
                    if got.status == 200:
                        break
                if b'"id":101' not in got.body:
                    raise ServerError(f"{via}: GET /?id=101 answered {got.status} {got.body[:80]!r}")
                self.warm(run, dataclasses.replace(at, alongside=consumer), next(p for p in at.turn.points if p.via),
                          self.jvm_warmup(run, via))
            yield consumer
            if at.turn.note["flame"]:
                self.flame(run, srv)
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
        spec = dataclasses.replace(self.open.load.spec(run, srv, point, 0.0, None), duration_s=window + 3)
        argv = run.client_prefix + drivers.get("openloop").argv(spec, srv.url)
        Path(f"{out}.start").touch()
        started = now()
        output, code, _, _, _ = run.load(argv, {}, window + 60)
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

    def measure(self, run: Run, at: Serving, point: RpcPoint) -> dict:
        consumer = at.alongside if point.via else None
        before = _proc_cpu_s(consumer.pid) if consumer is not None else None
        row, measured = self.open.measure_open(run, at, point)
        transport, codec = protocol(at.srv.server.id)
        consumer_cpu = _proc_cpu_s(consumer.pid) - before if consumer is not None else None
        log = at.turn.note.get("jvm_log", "")
        u = measured.usage
        row.update(experiment=point.experiment, keep_alive_requests=point.keep_alive_requests,
                   close_every=point.close_every, pool=point.pool,
                   via=point.via, window=point.window, jvm=point.jvm, transport=transport, codec=codec,
                   threads=point.threads, profiled=point.profiled, consumer_cpu_s=consumer_cpu,
                   consumer_cpu_us_per_req=1e6 * consumer_cpu / row["ok"] if consumer_cpu and row["ok"] else None,
                   **jvmlog.read_window(run.writer.staging / log if log else None, u.started_epoch, u.ended_epoch),
                   jvm_log_file=log or None)
        # after the point, beside its raw output (stem.txt): the full collection follows
        row.update(jvmmem.at_rest(run, at.srv, str(Path(measured.raw_file).relative_to("raw").with_suffix(""))))
        return row

    def progress_text(self, row: dict) -> str:
        return self.open.progress_text(row)

    def finish(self, run: Run) -> None:
        """The HTTP providers' battery on their route."""
        if not self.with_battery:
            return
        from iobench.servers.battery import run_battery
        verdicts = {}
        for server in self.plan.serving(run.profile.name):
            if server.conforms:
                with ServerProcess(server, ServerOptions(host=run.host), cpus=run.server_cpus) as srv:
                    srv.verify()
                    verdicts[server.id] = [v.as_dict() for v in run_battery(run.host, srv.port, route=server.route)]
                passed = sum(v["passed"] for v in verdicts[server.id])
                run.progress(f"battery {server.id}: {passed}/{len(verdicts[server.id])} cases passed")
        run.writer.write_json("battery.json", verdicts)


