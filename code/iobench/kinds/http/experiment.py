"""The HTTP experiments: every dataset of plans.py, measured on the runner's lifecycle.

For each repeat, every server in turn (so ratios come from the same time window), one
server process per group of points that need the same server options (work, backlog);
each point is one load generator run (wrk, ab, iom-openloop) whose parsed output, with
what was sampled meanwhile, becomes one CSV row of dataset.COLUMNS. A plan with a link
runs every server behind an iom-delaylink (netlink.py), set up once for the whole run.
After the repeats, the conformance battery against each server.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import asdict

from iobench.data.report import number
from iobench.kinds.http.dataset import COLUMNS, COUNT_COLUMNS, POINT_KEYS
from iobench.kinds.http.plans import HttpPlan, Point
from iobench.load import drivers, idle
from iobench.run import jvmmem, kernelmem, limits, runner, sampler
from iobench.run.lifecycle import ServerProcess
from iobench.run.probes import TcpProbe, tcp_columns
from iobench.run.results import raw_text
from iobench.run.runner import Experiment, Load, Run, Serving, Turn
from iobench.servers import battery as battery_mod
from iobench.servers.manifest import ServerOptions


def point_columns(point: Point) -> dict:
    """A row's columns that say which load the point was (the server's are the runner's)."""
    return {"tool": point.tool, "mode": point.mode, "connections": point.connections, "work_ms": point.work_ms,
            "requested": point.requests, "backlog": point.backlog, "pipeline": point.pipeline,
            "idle_conns": point.idle_conns}


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


# SO_REUSEPORT hashes each new connection to a worker: not exactly evenly (a binomial spread, a few per cent
# at thousands each); a worker is asked to hold at most this much more than its share.
UNEVEN = 1.25
PIDS_SPARE = 4096  # processes of the machine's own, beside one per connection


def unfit(server, point: Point, workers: int | None) -> str:
    """Why a server cannot hold a point's connections on this machine ("" where it can): each process under
    the descriptor limit (raised at the run's start), a process per connection under kernel.pid_max."""
    soft = limits.nofile()["soft"]
    if soft == limits.resource.RLIM_INFINITY:
        return ""
    conns = point.connections + point.idle_conns
    if server.spread == "per-connection":
        pid_max = int(limits.sysctl("kernel.pid_max") or 0)
        if pid_max and conns + PIDS_SPARE > pid_max:
            return (f"needs {conns:,} processes, one per connection; kernel.pid_max here is {pid_max:,} "
                    f"(and the machine's own processes need some)")
        return ""
    n = max(1, workers or 1) if server.spread == "workers" else 1
    need = (descriptors(point) if n == 1 else int(conns / n * UNEVEN) + 64)
    if need <= soft:
        return ""
    if n == 1:
        return (f"needs {need:,} file descriptors in one process; the limit here is {soft:,} and this process "
                "may not raise it (CAP_SYS_RESOURCE)")
    return (f"needs up to {need:,} file descriptors in each of {n} processes; the limit here is {soft:,}")


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


def at_rest_columns(run: Run, plan: HttpPlan, srv: ServerProcess, stem: str, point: Point) -> dict:
    """What a plan reads at rest beside idle_columns: the kernel's memory (kept raw), and how the server's
    processes share the connections it holds (its workers; its parent holds none)."""
    cols: dict = {}
    if plan.kernel_memory:
        k, raw = kernelmem.snapshot(srv.pid)
        name = f"{stem}.kernel.txt"
        run.writer.write_raw(name, raw)
        cols.update(k, kernel_memory_file=f"raw/{name}")
    if plan.by_process:
        held = idle.established_by_process(srv.port)
        counts = [held[p] for p in sorted(held)]
        cols.update(share=point.share, workers_holding=len(counts), worker_conns_min=min(counts, default=0),
                    worker_conns_max=max(counts, default=0),
                    worker_conns=" ".join(map(str, counts)) if len(counts) <= 64 else "")  # not one per connection
    return cols


WORKER_LINE = re.compile(r"WORKER (\d+) pid=(\d+) accepted=(\d+) wakeups=(\d+) empty=(\d+)")


def worker_count_columns(text: str, file: str) -> dict:
    """c-epoll-workers' --worker-counts file (a line per worker as it stopped) as a row's columns."""
    lines = [tuple(map(int, m.groups()[2:])) for m in WORKER_LINE.finditer(text)]
    accepted = [a for a, _, _ in lines]
    return {"workers_reported": len(lines), "accepted_total": sum(accepted),
            "accepted_min": min(accepted, default=None), "accepted_max": max(accepted, default=None),
            "listen_wakeups": sum(w for _, w, _ in lines), "listen_empty": sum(e for _, _, e in lines),
            "worker_counts_file": file}


class HttpExperiment(Experiment):
    columns = COLUMNS
    outlier_keys = POINT_KEYS

    def __init__(self, plan: HttpPlan, with_battery: bool | None = None):
        self.plan = plan
        if plan.measured_columns():  # its optional measurements' columns (system calls, memory at rest, workers)
            self.columns = COLUMNS + plan.measured_columns()
        self.rows_after_stop = plan.worker_counts  # the workers report as they stop
        if plan.by_process:  # a point's sharing mode sets it apart from the same load in another mode
            self.outlier_keys = POINT_KEYS + ("share",)
        self.dataset = plan.dataset
        self.description = plan.description
        self.time_wait_drained = plan.time_wait_drained
        self.with_battery = plan.battery if with_battery is None else with_battery

    def points(self, profile: str):
        """The plan's points that some server of it can hold here (unfit skips a server's point alone)."""
        servers = self.plan.serving(profile)
        return tuple(p for p in self.plan.points_for(profile)
                     if any(not unfit(s, p, self.plan.pool(s.id)) for s in servers))

    def meta(self, run: Run) -> dict:
        servers = self.plan.serving(run.profile.name)
        skipped = [{**asdict(p), "server": s.id, "why": why} for p in self.plan.points_for(run.profile.name)
                   for s in servers if (why := unfit(s, p, self.plan.pool(s.id)))]
        measured_s, warmup_s = self.plan.timing(run.profile)
        return {"plan": {"servers": [s.id for s in servers], "points": [asdict(p) for p in run.points],
                         "measured_s": measured_s, "warmup_s": warmup_s, "pools": dict(self.plan.pools)},
                "skipped_points": skipped,
                "servers": {s.id: {"model": s.model, "lang": s.lang, "summary": s.summary, "spread": s.spread}
                            for s in servers},
                "restart_each_point": self.plan.restart_each_point}

    def networks(self, run: Run):
        if not self.plan.link_rtt_ms:
            yield "loopback", None, run.points
            return
        from iobench.run.netlink import DelayLink

        link = DelayLink(self.plan.link_rtt_ms, self.plan.link_rate_mbit, cpus=run.client_cpus or "1")
        yield "delay", link, run.points

    def applies(self, server, p: Point) -> bool:
        """A baseline cannot simulate work, nor take a backlog, a server without workers has no sharing mode:
        no such point for it; nor a point it cannot hold here (unfit: in meta.json's skipped_points)."""
        return not ((p.work_ms and "work_ms" not in server.supports) or
                    (p.backlog and "backlog" not in server.supports) or
                    (p.share and server.spread != "workers") or
                    unfit(server, p, self.plan.pool(server.id)))

    def measurements(self, run: Run, points) -> int:
        return sum(self.applies(s, p) for s in self.plan.serving(run.profile.name) for p in points)

    def turns(self, run: Run, points, repeat: int):
        for server in self.plan.serving(run.profile.name):
            # One server process per group of points that need the same server options.
            groups: dict[tuple, list[Point]] = {}
            for i, p in enumerate(points):
                if self.applies(server, p):
                    key = (p.work_ms, p.backlog, p.share, i if self.plan.restart_each_point else None)
                    groups.setdefault(key, []).append(p)
            jvm = jvmmem.flags(self.plan, server)
            for (work_ms, backlog, share, _), group in groups.items():
                extra = ("--share", share) if share else ()
                note = {"work_ms": work_ms, "backlog": backlog, **({"share": share} if share else {})}
                if self.plan.worker_counts and server.spread == "workers" and server.lang == "C" \
                        and not server.baseline:
                    name = f"{server.id}/workers-{share or 'default'}-r{repeat}.txt"
                    extra += ("--worker-counts", str(run.writer.raw_path(name)))
                    note["worker_counts_file"] = f"raw/{name}"
                opts = ServerOptions(work_ms=work_ms, backlog=backlog or None, idle_timeout_s=self.plan.idle_timeout_s,
                                     pool=self.plan.pool(server.id), extra=extra, jvm=jvm)
                yield Turn(server, group, opts, note=note)

    def after_stop(self, run: Run, at: Serving, rows: list[dict]) -> None:
        """A server whose workers reported what they accepted (their file, written as each stopped): the counts
        go on each row of that server process (a plan that reads them has one point per process)."""
        name = at.turn.note.get("worker_counts_file")
        path = run.writer.raw_path(name[len("raw/"):]) if name else None
        cols = (worker_count_columns(path.read_text(), name) if path and path.exists()
                else dict.fromkeys(c for c in COUNT_COLUMNS if not c.startswith("raise_")))
        for row in rows:
            row.update(cols)

    @contextlib.contextmanager
    def alongside(self, run: Run, at: Serving):
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
        """One point against the server `at` serves: its warm-up, then its measured run with the samplers and probes
        around it, into one row; in an idle study the idle connections held beside it are raised to the point's
        first (a server that stopped answering them leaves the point unmeasured, and says so)."""
        srv, repeat, held, plan = at.srv, at.repeat, at.alongside, self.plan
        if held is not None and held.stopped_at is not None:
            return {**point_columns(point), "ok": False,
                    "failure": f"not measured: the server stopped answering at {held.stopped_at:,} idle "
                               f"connections ({held.why_stopped})"}
        driver = drivers.get(point.tool)
        n = f"-n{point.requests}" if point.requests else ""
        b = (f"-b{point.backlog}" if point.backlog else "") + (f"-t{point.threads}" if point.threads != 1 else "") \
            + (f"-p{point.pipeline}" if point.pipeline != 1 else "")
        b += f"-i{point.idle_conns}" if plan.holds_idle else ""
        b += self.stem_extra(srv, point)
        stem = f"{srv.server.id}/{point.tool}-{point.mode}-c{point.connections}{n}-w{point.work_ms:g}{b}-r{repeat}"
        raise_cols = {}
        if held is not None:
            # the server's wake-ups and CPU while the idle connections arrive (a herd's cost is wake-ups that find
            # nothing: most go back to sleep inside epoll_wait, never seen by the server's own counts)
            before = sampler.group_snapshot(srv.pid) if plan.worker_counts else None
            held.hold(point.idle_conns)
            if before is not None:
                after = sampler.group_snapshot(srv.pid)
                raise_cols = {"raise_vcsw": after.vcsw - before.vcsw, "raise_ivcsw": after.ivcsw - before.ivcsw,
                              "raise_cpu_s": after.cpu_s - before.cpu_s}
        measured_s, warmup_s = plan.timing(run.profile, point)
        warm = self.load_spec(point, warmup_s, warmup=True)
        spec = self.load_spec(point, measured_s)
        load = Load(warmup=run.client_prefix + driver.argv(warm, srv.url),
                    measured=run.client_prefix + driver.argv(spec, srv.url),
                    env=driver.env(spec), threads=spec.threads, timeout_s=measured_s * 4 + 120)
        # in an idle study, the busy connections are told apart by their address (127.0.0.1)
        busy_from = "127.0.0.1" if held is not None else None
        conns = _ConnProbe(srv.port, run.client_cpus, busy_from, server_side=not run.client.local)
        m = run.measure_load(srv, stem, load, {"conns": conns,
                                               "tcp": TcpProbe(run.netns), **self.more_probes(srv, point)})
        result = driver.parse(m.output, m.code)
        received, samples = m.probes["conns"]
        usage = m.usage
        return {
            **point_columns(point),
            **{k: v for k, v in result.as_row().items() if k != "ok" and k != "failure"},
            "ok": result.ok, "failure": result.failure,
            "server_cpu_us_per_req": (1e6 * usage.cpu_s / result.requests) if result.requests else None,
            "pss_kib": usage.pss_kib_max, "server_procs_max": usage.procs_max,
            "server_vcsw": usage.vcsw, "server_ivcsw": usage.ivcsw,
            **served_columns(point, result, received, samples),
            **idle_columns(held, srv, point),
            **at_rest_columns(run, plan, srv, stem, point), **raise_cols,
            **jvmmem.at_rest(run, srv, stem),  # after idle_columns' PSS
            **tcp_columns(m.probes["tcp"]),
            **self.more_columns(srv, point, m, result),
        }

    def load_spec(self, point: Point, duration_s: float, warmup: bool = False) -> drivers.LoadSpec:
        """The generator's load for a point (a kind whose points name a path of their own adds it)."""
        return load_spec(point, duration_s, warmup)

    def stem_extra(self, srv: ServerProcess, point: Point) -> str:
        """What sets a point's raw files apart beside the load's own marks (a kind whose points differ otherwise)."""
        return ""

    def more_probes(self, srv: ServerProcess, point: Point) -> dict[str, runner.Probe]:
        """The probes a kind built on this one samples around the measured run (its server's own counts, say); what
        each keeps is in more_columns' m.probes under its name."""
        return {}

    def more_columns(self, srv: ServerProcess, point: Point, m: runner.Measured, result: drivers.LoadResult) -> dict:
        """The columns a kind built on this one adds to a row (its database's CPU, say)."""
        return {}

    def across_hosts(self, run: Run) -> str | None:
        if self.plan.link_rtt_ms:
            return "it measures behind a delay link it makes on this machine"
        if self.plan.holds_idle:
            return "it holds its idle connections from this machine"
        return None

    def unmeasured(self, at: Serving, point: Point, why: str) -> dict:
        return {**point_columns(point), "ok": False, "failure": why}

    def progress_text(self, row: dict) -> str:
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


class _ConnProbe(runner.Probe):
    """Bytes the kernel received per connection (who was served), sampled over the run."""

    def __init__(self, port: int, cpus: str | None, src: str | None = None, server_side: bool = False):
        self.sampler = sampler.ConnSampler(port, cpus=cpus, src=src, server_side=server_side)

    def start(self) -> None:
        self.sampler.start()

    def stop(self):
        return self.sampler.stop(), self.sampler.samples
