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

from dataclasses import asdict
from pathlib import Path

from iobench.data.report import number
from iobench.load import drivers
from iobench.run.lifecycle import ServerProcess
from iobench.kinds.openloop.dataset import COLUMNS, KEYS
from iobench.kinds.openloop.plans import OpenPlan, OpenPoint
from iobench.run import kpaths, kprofile
from iobench.run.probes import SyscallProbe, TcpProbe, syscall_columns, tcp_columns
from iobench.run.runner import Experiment, Load, Measured, Run, Serving, Turn
from iobench.servers import manifest
from iobench.servers.manifest import ServerOptions


class OpenLoad:
    """How a point of the open loop becomes one load: what its capacity is kept under, its raw files' name, the
    URL it goes to, its warm-up and the generator's spec. The open experiment's one variable part: a kind built on
    the open loop (rpc) hands the experiment its own."""

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
        return (f"{srv.server.id}/{point.tool}-{level}-c{point.connections}-w{point.work_ms:g}"
                f"{getattr(point, 'suffix', str)()}-r{repeat}")

    def target(self, at: Serving, point) -> str:
        """The URL a point's load goes to."""
        return at.srv.url

    def warmup_s(self, run: Run, point) -> float:
        """A point's warm-up seconds, before it is measured (0: none)."""
        return self.timing(run)[1]

    def spec(self, run: Run, srv: ServerProcess, point, rate: float, hist: Path | None) -> drivers.LoadSpec:
        """The measured load of a point (its warm-up: the same, for the warm-up's seconds)."""
        return drivers.LoadSpec(tool=point.tool, connections=point.connections,
                                keepalive=not getattr(point, "close", False), pipeline=getattr(point, "pipeline", 1),
                                duration_s=self.timing(run)[0], timeout_s=point.timeout_s,
                                rate=0.0 if point.loop == "closed" else rate, hist=str(hist or ""))


class OpenExperiment(Experiment):
    columns = COLUMNS
    outlier_keys = tuple(KEYS)
    outlier_value = "achieved_rps"
    require_clean_exit = True
    ok_column = "ok_run"  # its ok counts the answers

    def __init__(self, plan: OpenPlan, with_battery: bool | None = None, *, load: OpenLoad | None = None):
        # the open loop runs no battery: its servers are the closed loop's, whose datasets run it
        self.plan = plan
        self.dataset = plan.dataset
        self.description = plan.description
        self.load = load or OpenLoad(plan)
        self.columns = COLUMNS + plan.measured_columns()  # and, where the plan asks, the system calls by kind
        self.capacity: dict[tuple, float] = {}  # load.key(...) -> the closed loop's rate in that repeat

    def points(self, profile: str):
        return self.plan.points_for(profile)

    def meta(self, run: Run) -> dict:
        if self.plan.kprofile:
            kprofile.check()  # said before anything is measured (the runner asks for the metadata first)
        measured_s, warmup_s = self.load.timing(run)
        servers = [manifest.get(s) for s in self.plan.servers]
        return {"plan": {"servers": list(self.plan.servers), "points": [asdict(p) for p in run.points],
                         "measured_s": measured_s, "warmup_s": warmup_s},
                "servers": {s.id: {"model": s.model, "lang": s.lang, "summary": s.summary} for s in servers},
                **({"kprofile": kprofile.meta(run.server_cpus)} if self.plan.kprofile else {})}

    def _turns(self, points, profile: str) -> list[Turn]:
        """One server process per server and amount of work (a baseline cannot simulate work),
        every server at one amount of work before the next amount."""
        return [Turn(server, [p for p in points if p.work_ms == work_ms], ServerOptions(work_ms=work_ms),
                     note={"work_ms": work_ms})
                for work_ms in dict.fromkeys(p.work_ms for p in points) for server in self.plan.serving(profile)
                if not work_ms or "work_ms" in server.supports]

    def measurements(self, run: Run, points) -> int:
        return sum(len(u.points) for u in self._turns(points, run.profile.name))

    def turns(self, run: Run, points, repeat: int):
        yield from self._turns(points, run.profile.name)

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
        folded = stem + ".folded.gz"  # the sampled stacks, folded (run/kprofile.py), under raw/
        if self.plan.kprofile and getattr(point, "profiled", False):
            probes["kprofile"] = kprofile.KernelProfile(srv.pid, run.writer.raw_path(folded), run.server_cpus)
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
        row = {
            "tool": point.tool, "loop": point.loop, "connections": point.connections, "work_ms": point.work_ms,
            "fraction": point.fraction, "rate": point.rate,
            **({"pipeline": point.pipeline, "close": point.close, "profiled": point.profiled}
               if isinstance(point, OpenPoint) else {}),  # a kind built on this one (rpc) has points of its own
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
            "server_cpu_us_per_req": 1e6 * u.cpu_s / r.requests if r.requests else None,
            "pss_kib": u.pss_kib_max or None,  # the server's PSS, its highest sample (every process of it)
            "client_cpu_us_per_req": 1e6 * m.client_cpu_s / r.requests if r.requests else None,
            "ok_run": r.ok, "failure": r.failure,
            "hist_file": str(Path("raw") / (stem + ".hist.csv")) if hist else None,
        }
        if self.plan.syscalls:
            row.update(syscall_columns(m.probes["syscalls"], r.requests),
                       syscalls_file=str(Path("raw") / perf))
        if "kprofile" in m.probes:
            got = m.probes["kprofile"]
            row.update(kpaths.columns(got["stacks"], got["frequency"], r.requests, jvm=srv.server.lang == "Java"),
                       kprofile_file=str(Path("raw") / folded))
        return row, m

    def progress_text(self, row: dict) -> str:
        offered = (f"offered {number(row['offered_rps'])}/s " if number(row["offered_rps"]) not in ("n/a", "0")
                   else "closed loop ")
        return (f"{offered}-> {number(row['achieved_rps'])}/s  p99 {number(row['p99_ms'], '.2f')} ms  "
                f"dropped {number(row['dropped'])}  stall {number(row['stall_s'], '.3f')} s  "
                f"gen cpu {number(row['client_cpu_pct'], '.0f')}%")


