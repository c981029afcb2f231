"""The HTTP experiments: every dataset of plans.py and scaleplans.py, measured on the runner's lifecycle.

For each repeat, every server in turn (so ratios come from the same time window), one
server process per group of points that need the same server options (work, backlog);
each point is one load generator run (wrk, ab, iom-openloop) whose parsed output, with
what was sampled meanwhile, becomes one CSV row of results.COLUMNS. A plan with a link
runs every server behind an iom-delaylink (netlink.py), set up once for the whole run.
After the repeats, the conformance battery against each server.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict
from pathlib import Path

from iobench.data.report import number
from iobench.kinds.http.plans import HttpPlan, Point
from iobench.load import drivers, idle
from iobench.run import jvmmem, limits, runner, sampler
from iobench.run.lifecycle import ServerProcess
from iobench.run.probes import TcpProbe, tcp_columns
from iobench.run.results import COLUMNS, POINT_KEYS, raw_text
from iobench.run.runner import Experiment, Load, Run, Serving, Unit
from iobench.servers import battery as battery_mod
from iobench.servers.manifest import ServerOptions


def load_spec(point: Point, duration_s: float, warmup: bool = False) -> drivers.LoadSpec:
    requests = point.requests
    if warmup and requests:  # a count-bound warm-up: at most 1000 requests (ab needs n >= c)
        requests = max(point.connections, min(requests, 1000))
    return drivers.LoadSpec(tool=point.tool, connections=point.connections, keepalive=point.keepalive,
                            duration_s=duration_s, requests=requests, rate=point.rate,
                            timeout_s=point.timeout_s, threads=point.threads, pipeline=point.pipeline)


def served_columns(point: Point, result: drivers.LoadResult, received: dict[int, int], samples: int) -> dict:
    """Who was served, from the kernel's bytes per connection (sampler.ConnSampler).

    Keep-alive runs only: there a connection lives the whole run, and one that never got
    an answer (queued behind a busy one in a sequential server, or in a full pool's
    backlog) is starved, however good the numbers of the others look. Without keep-alive
    a connection carries one request; a request left unanswered shows in the latency and
    the count of completed requests instead, so these columns stay empty. They stay empty
    too when the generator's connections did not last the run: wrk opens a new connection
    after a connect, read or write error (a server that closes after each response, as the
    source write-ups' servers do, makes every response a read error), and the sockets seen
    are then more than the connections, or too short-lived to be seen at all."""
    replaced = result.errors_connect + result.errors_read + result.errors_write
    st = None
    if point.keepalive and samples > 0 and not replaced:
        per_response = result.bytes / result.requests if result.requests and result.bytes else 0.0
        st = sampler.ConnStats.from_bytes(received, per_response, samples)
    if st is None or st.conns_seen > point.connections:
        return {"conns_served": None, "conn_min_requests": None, "conn_median_requests": None,
                "conn_max_requests": None, "unserved": False}
    return {"conns_served": st.conns_served, "conn_min_requests": st.conn_min_requests,
            "conn_median_requests": st.conn_median_requests, "conn_max_requests": st.conn_max_requests,
            "unserved": st.conns_served < point.connections}


def descriptors(point: Point) -> int:
    """File descriptors a server needs for a point: every connection, and a few of its own."""
    return point.connections + point.idle_conns + 64


def fits(point: Point) -> bool:
    """A point this process's file-descriptor limit (raised at the run's start) allows."""
    soft = limits.nofile()["soft"]
    return soft == limits.resource.RLIM_INFINITY or descriptors(point) <= soft


def idle_columns(held: idle.IdleConnections | None, srv: ServerProcess, point: Point) -> dict:
    """After a point's load, at rest: how many idle connections the server still holds, and
    its memory (PSS) with them; per idle connection it holds, against the same server at rest
    with none (its first point, idle_conns=0). Read before jvmmem.at_rest's full collection."""
    if held is None:
        return {"idle_answered": None, "idle_open": None, "pss_rest_kib": None, "pss_per_idle_kib": None}
    pss = sampler.group_snapshot(srv.pid, with_pss=True).pss_kib
    open_now = idle.established(srv.port)
    if point.idle_conns == 0:
        held.base_pss_kib = pss
    # per connection the server really holds (a model that stopped at 1,020 holds 1,020)
    per = ((pss - held.base_pss_kib) / open_now
           if point.idle_conns and open_now and held.base_pss_kib is not None else None)
    return {"idle_answered": held.answered, "idle_open": open_now, "pss_rest_kib": pss, "pss_per_idle_kib": per}


class HttpExperiment(Experiment):
    outlier_keys = POINT_KEYS

    def __init__(self, plan: HttpPlan, with_battery: bool | None = None):
        self.plan = plan
        if plan.measured_columns():  # a JVM's memory at rest, where the plan asks
            self.columns = COLUMNS + plan.measured_columns()
        self.dataset = plan.dataset
        self.description = plan.description
        self.time_wait_drained = plan.time_wait_drained
        self.with_battery = plan.battery if with_battery is None else with_battery

    def points(self, profile: str):
        return tuple(p for p in self.plan.points_for(profile) if fits(p))

    def meta(self, run: Run) -> dict:
        skipped = [p for p in self.plan.points_for(run.profile.name) if not fits(p)]
        measured_s, warmup_s = self.plan.timing(run.profile)
        servers = self.plan.serving(run.profile.name)
        return {"plan": {"servers": [s.id for s in servers], "points": [asdict(p) for p in run.points],
                         "measured_s": measured_s, "warmup_s": warmup_s},
                "skipped_points": [{**asdict(p), "why": f"needs {descriptors(p):,} file descriptors in one "
                                    f"process; the limit here is {limits.nofile()['soft']:,} and this process "
                                    "may not raise it (CAP_SYS_RESOURCE)"} for p in skipped],
                "servers": {s.id: {"model": s.model, "lang": s.lang, "summary": s.summary} for s in servers},
                "restart_each_point": self.plan.restart_each_point}

    def settings(self, run: Run):
        if not self.plan.link_rtt_ms:
            yield "loopback", None, run.points
            return
        from iobench.run.netlink import DelayLink

        link = DelayLink(self.plan.link_rtt_ms, self.plan.link_rate_mbit, cpus=run.client_cpus or "1")
        yield "delay", link, run.points

    @staticmethod
    def applies(server, p: Point) -> bool:
        """A baseline cannot simulate work, nor take a backlog: no such point for it."""
        return not ((p.work_ms and "work_ms" not in server.supports) or
                    (p.backlog and "backlog" not in server.supports))

    def count(self, run: Run, points) -> int:
        return sum(self.applies(s, p) for s in self.plan.serving(run.profile.name) for p in points)

    def units(self, run: Run, points, repeat: int):
        for server in self.plan.serving(run.profile.name):
            # One server process per group of points that need the same server options.
            groups: dict[tuple, list[Point]] = {}
            for i, p in enumerate(points):
                if self.applies(server, p):
                    key = (p.work_ms, p.backlog, i if self.plan.restart_each_point else None)
                    groups.setdefault(key, []).append(p)
            jvm = jvmmem.flags(self.plan, server)
            for (work_ms, backlog, _), group in groups.items():
                opts = ServerOptions(work_ms=work_ms, backlog=backlog or None, idle_timeout_s=self.plan.idle_timeout_s,
                                     jvm=jvm)
                yield Unit(server, group, opts, note={"work_ms": work_ms, "backlog": backlog})

    @contextlib.contextmanager
    def beside(self, run: Run, at: Serving):
        """In an idle study, the idle connections held beside this server (raised by its points)."""
        if not self.plan.holds_idle:
            yield None
            return

        def keep(i: int, h: idle.Holder) -> None:
            code = h.proc.returncode
            run.writer.write_raw(f"{at.srv.server.id}/idle-r{at.repeat}-{i}.txt",
                                 raw_text(h.argv, {}, "".join(h.output), code, h.started))
        # a brief profile waits briefly for answers that a full pool will never give
        wait_s = max(5.0, 3 * run.profile.duration_s)
        with idle.IdleConnections(run.host, at.srv.port, run.client_prefix, keep, wait_s) as held:
            yield held

    def measure(self, run: Run, at: Serving, point: Point) -> dict:
        held, srv, repeat = at.held, at.srv, at.repeat
        if held is not None and held.stopped_at is not None:
            return {"server": srv.server.id, "model": srv.server.model, "lang": srv.server.lang,
                    "tool": point.tool, "mode": point.mode, "connections": point.connections,
                    "work_ms": point.work_ms, "pipeline": point.pipeline, "idle_conns": point.idle_conns,
                    "repeat": repeat, "requested": point.requests, "backlog": point.backlog, "ok": False,
                    "failure": f"not measured: the server stopped answering at {held.stopped_at:,} idle "
                               f"connections ({held.why_stopped})", "profile": run.profile.name,
                    "run_id": run.run_id, "outlier": False}
        return measure(run, at, point)

    def describe(self, row: dict) -> str:
        served = (f"served {number(row['conns_served'])}/{row['connections']}  "
                  if number(row["conns_served"]) != "n/a" else "")
        p99 = number(row["p99_ms"], ".2f")
        if p99 == "n/a" and (row.get("pipeline") or 1) > 1:
            p99 = "n/a (pipelined: no per-request latency)"
        else:
            p99 += " ms"
        return (f"{number(row['rps'], '>10,.0f')} req/s  p99 {p99}  {served}"
                f"srv {number(row['server_cpu_us_per_req'], '.1f')} µs/req  "
                f"wrk/ab cpu {number(row['client_cpu_pct'], '.0f')}%")

    def finish(self, run: Run) -> None:
        unserved = sorted({(r["server"], r["connections"], r["work_ms"], r["pipeline"])
                           for r in run.writer.rows if r.get("unserved")})
        for server_id, c, w, p in unserved:
            run.progress(f"unserved: {server_id} at c={c} w={w:g} p={p}: some connections never got an answer")
        if not self.with_battery:
            return
        verdicts = {}
        for server in self.plan.serving(run.profile.name):
            if server.id in run.unsupported:
                continue
            with ServerProcess(server, ServerOptions(host=run.host), cpus=run.server_cpus, netns=run.netns) as srv:
                srv.verify()
                verdicts[server.id] = [v.as_dict() for v in battery_mod.run_battery(run.host, srv.port,
                                                                                    route=server.route)]
            passed = sum(v["passed"] for v in verdicts[server.id])
            run.progress(f"battery {server.id}: {passed}/{len(verdicts[server.id])} cases passed")
        run.writer.write_json("battery.json", verdicts)


def run_plan(plan: HttpPlan, profile_name: str, dest: Path | None = None, with_battery: bool | None = None,
             **kwargs) -> Path:
    """Measure a plan under the smoke or full profile; return the dataset's folder."""
    return runner.run(HttpExperiment(plan, with_battery), profile_name, dest, **kwargs)


class _ConnProbe(runner.Probe):
    """Bytes the kernel received per connection (who was served), sampled over the run."""

    def __init__(self, port: int, cpus: str | None, src: str | None = None):
        self.sampler = sampler.ConnSampler(port, cpus=cpus, src=src)

    def start(self) -> None:
        self.sampler.start()

    def stop(self):
        return self.sampler.stop(), self.sampler.samples


def measure(run: Run, at: Serving, point: Point) -> dict:
    """One point against the server `at` serves: its warm-up, then its measured run with the samplers and probes
    around it, into one row; in an idle study the idle connections held beside it are raised to the point's first."""
    srv, repeat, held = at.srv, at.repeat, at.held
    driver = drivers.get(point.tool)
    server = srv.server
    n = f"-n{point.requests}" if point.requests else ""
    b = (f"-b{point.backlog}" if point.backlog else "") + (f"-t{point.threads}" if point.threads != 1 else "") \
        + (f"-p{point.pipeline}" if point.pipeline != 1 else "")
    b += f"-i{point.idle_conns}" if run.experiment.plan.holds_idle else ""
    stem = f"{server.id}/{point.tool}-{point.mode}-c{point.connections}{n}-w{point.work_ms:g}{b}-r{repeat}"
    if held is not None:
        held.hold(point.idle_conns)
    measured_s, warmup_s = run.experiment.plan.timing(run.profile, point)
    warm = load_spec(point, warmup_s, warmup=True)
    spec = load_spec(point, measured_s)
    load = Load(warmup=run.client_prefix + driver.argv(warm, srv.url),
                measured=run.client_prefix + driver.argv(spec, srv.url),
                env=driver.env(spec), threads=spec.threads, timeout_s=measured_s * 4 + 120)
    # in an idle study, the busy connections are told apart by their address (127.0.0.1)
    busy_from = "127.0.0.1" if held is not None else None
    m = run.measure_load(srv, stem, load, {"conns": _ConnProbe(srv.port, run.client_cpus, busy_from),
                                           "tcp": TcpProbe(run.netns)})
    result = driver.parse(m.output, m.code)
    received, samples = m.probes["conns"]
    usage = m.usage
    return {
        "server": server.id, "model": server.model, "lang": server.lang, "tool": point.tool,
        "mode": point.mode, "connections": point.connections, "work_ms": point.work_ms, "repeat": repeat,
        "requested": point.requests, "backlog": point.backlog, "pipeline": point.pipeline,
        "idle_conns": point.idle_conns,
        **{k: v for k, v in result.as_row().items() if k != "ok" and k != "failure"},
        "ok": result.ok, "failure": result.failure,
        **runner.load_columns(m),
        "server_cpu_us_per_req": (1e6 * usage.cpu_s / result.requests) if result.requests else None,
        "pss_kib": usage.pss_kib_max, "server_procs_max": usage.procs_max,
        "server_vcsw": usage.vcsw, "server_ivcsw": usage.ivcsw,
        **served_columns(point, result, received, samples),
        **idle_columns(held, srv, point),
        **jvmmem.at_rest(run, srv, stem),  # after idle_columns' PSS
        "outlier": False,  # set once every repeat of the point is in (results.flag_outliers)
        **tcp_columns(m.probes["tcp"]),
        "server_cpus": srv.cpus or "", "client_cpus": run.client_cpus or "",
        "profile": run.profile.name, "run_id": run.run_id,
    }
