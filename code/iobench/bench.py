"""The runner: the same lifecycle for every measurement (after TechEmpower's toolset).

For each repeat, every server in turn (so ratios come from the same time window):
    wait for TIME_WAIT sockets to drain -> start -> verify -> for each load point:
        warm up (discarded, raw output kept) -> wait for a quiet machine -> measure
        while sampling /proc -> parse the raw output -> one CSV row
    -> stop (SIGTERM, then SIGKILL) and check it exited 0.
Then the conformance battery against each server, the metadata, and an atomic commit.
"""
from __future__ import annotations

import datetime as _dt
import os
import resource
import secrets
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from . import battery as battery_mod
from . import drivers, manifest, metadata, sampler
from .lifecycle import ServerProcess, Unsupported
from .manifest import ROOT, ServerOptions
from .plans import Plan, Point
from .profiles import PROFILES, Profile
from .results import OUTLIER_FRACTION, DatasetWriter

GENERATOR_BOUND_PCT = 90.0   # a load generator thread this busy is the bottleneck
NOISY_FOREIGN_CORES = 0.25   # other work on the machine during a measurement
QUIET_CORES = 0.15           # "quiet" before measuring: fewer cores busy than this
TIME_WAIT_DRAINED = 2000     # between servers, wait until fewer TIME_WAIT sockets remain
                             # (a few thousand of 28,000 ephemeral ports do not matter)


def time_wait_count() -> int:
    n = 0
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                n += sum(1 for line in f if line.split()[3] == "06")
        except OSError:
            continue
    return n


def wait_time_wait_drained(progress: Callable[[str], None], max_wait_s: float,
                           below: int = TIME_WAIT_DRAINED) -> float:
    t0 = time.monotonic()
    n = time_wait_count()
    if n >= below:
        progress(f"waiting up to {max_wait_s:.0f} s for {n} TIME_WAIT sockets to drain")
        while n >= below and time.monotonic() - t0 < max_wait_s:
            time.sleep(1)
            n = time_wait_count()
    return time.monotonic() - t0


def wait_quiet(max_wait_s: float) -> float:
    """Wait until the machine is quiet; return the busy cores seen last."""
    deadline = time.monotonic() + max_wait_s
    busy = sampler.machine_busy_cores(0.5)
    while busy >= QUIET_CORES and time.monotonic() < deadline:
        busy = sampler.machine_busy_cores(0.5)
    return busy


def run_load(argv: list[str], env: dict, timeout_s: float) -> tuple[str, int, float, float]:
    """Run a load generator; return (output, exit code, its CPU seconds, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, env=os.environ | env, cwd=ROOT, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
        output, code = p.stdout, p.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        output, code = out + f"\n[iobench] killed after {timeout_s:.0f} s\n", -9
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return output, code, cpu, wall


def cpu_count(cpus: str | None) -> int:
    """How many CPUs a taskset list names ("1", "0-1", "1,3"); all of them when unpinned."""
    if not cpus:
        return os.cpu_count() or 1
    n = 0
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def load_spec(point: Point, duration_s: float, warmup: bool = False) -> drivers.LoadSpec:
    requests = point.requests
    if warmup and requests:  # a count-bound warm-up: at most 1000 requests (ab needs n >= c)
        requests = max(point.connections, min(requests, 1000))
    return drivers.LoadSpec(tool=point.tool, connections=point.connections, keepalive=point.keepalive,
                            duration_s=duration_s, requests=requests, rate=point.rate,
                            timeout_s=point.timeout_s, threads=point.threads, pipeline=point.pipeline)


def raw_text(argv: list[str], env: dict, output: str, code: int, started: str) -> str:
    envs = " ".join(f"{k}={v}" for k, v in env.items())
    return (f"# command: {envs + ' ' if envs else ''}{' '.join(argv)}\n# started: {started}\n"
            f"# exit: {code}\n{output}")


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


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    """When a run started (UTC) and a few random hex digits: sortable and unique."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def run_plan(plan: Plan, profile_name: str, dest: Path | None = None, **kwargs) -> Path:
    """Measure a plan under the smoke or full profile; return the dataset's folder.

    A plan with a link runs every server behind an iom-delaylink (code/iobench/netlink.py),
    set up once for the whole run and always taken down."""
    if not plan.link_rtt_ms:
        return _run_plan(plan, profile_name, dest, **kwargs)
    from .netlink import DelayLink

    with DelayLink(plan.link_rtt_ms, plan.link_rate_mbit, cpus=kwargs.get("client_cpus", "1")) as link:
        return _run_plan(plan, profile_name, dest, link=link, **kwargs)


def _run_plan(plan: Plan, profile_name: str, dest: Path | None = None, overwrite: bool = False,
             server_cpus: str = "0", client_cpus: str = "1",
             progress: Callable[[str], None] | None = None, with_battery: bool | None = None,
             link=None) -> Path:
    profile = PROFILES[profile_name]
    progress = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dest = Path(dest) if dest else profile.dest(plan.dataset)
    run_id = new_run_id()
    if profile_name == "smoke":
        overwrite = True  # scratch output
    writer = DatasetWriter(dest, run_id, overwrite=overwrite)
    points = plan.points_for(profile_name)
    servers = [manifest.get(s) for s in plan.servers]
    meta = metadata.collect(
        dataset=plan.dataset, description=plan.description, run_id=run_id, profile=asdict(profile),
        started_at=_now(), pinning={"server_cpus": server_cpus, "client_cpus": client_cpus},
        plan={"servers": list(plan.servers), "points": [asdict(p) for p in points]},
        servers={s.id: {"model": s.model, "lang": s.lang, "summary": s.summary} for s in servers},
        thresholds={"generator_bound_pct": GENERATOR_BOUND_PCT, "noisy_foreign_cores": NOISY_FOREIGN_CORES,
                    "quiet_cores": QUIET_CORES, "time_wait_drained": plan.time_wait_drained},
        restart_each_point=plan.restart_each_point,
        link=None if link is None else {
            "rtt_ms": link.rtt_ms, "measured_rtt_ms": round(link.measured_rtt_ms, 2),
            "rate_mbit": plan.link_rate_mbit, "server_host": link.server_host,
            "how": "server in its own network namespace; iom-delaylink (code/c/tools/delaylink.c) "
                   "forwards every packet between two TUN devices after rtt/2"})
    host = link.server_host if link is not None else "127.0.0.1"
    netns = link.netns if link is not None else None
    unsupported: dict[str, str] = {}
    stops: list[dict] = []
    commands: list[dict] = []  # the load generator's command line of every measured run
    total = profile.repeats * len(servers) * len(points)
    done = 0
    try:
        for repeat in range(1, profile.repeats + 1):
            for server in servers:
                if server.id in unsupported:
                    done += len(points)
                    continue
                # One server process per group of points that need the same server options.
                groups: dict[tuple, list[Point]] = {}
                for i, p in enumerate(points):
                    if (p.work_ms and "work_ms" not in server.supports) or \
                            (p.backlog and "backlog" not in server.supports):
                        done += 1  # e.g. a baseline cannot simulate work: no such point for it
                        continue
                    key = (p.work_ms, p.backlog, i if plan.restart_each_point else None)
                    groups.setdefault(key, []).append(p)
                for (work_ms, backlog, _), group in groups.items():
                    waited = wait_time_wait_drained(progress, profile.time_wait_max_s, plan.time_wait_drained)
                    opts = ServerOptions(host=host, work_ms=work_ms, backlog=backlog or None)
                    try:
                        with ServerProcess(server, opts, cpus=server_cpus, netns=netns) as srv:
                            srv.verify()
                            for point in group:
                                done += 1
                                row = measure(writer, srv, point, profile, repeat, client_cpus, run_id,
                                              commands)
                                progress(f"[{done}/{total}] {server.id:20s} {point.label():28s} rep {repeat}: "
                                         + (f"{row['rps']:>10,.0f} req/s  p99 {row['p99_ms']} ms  "
                                            + (f"served {row['conns_served']}/{point.connections}  "
                                               if row["conns_served"] is not None else "")
                                            + 
                                            f"srv {row['server_cpu_us_per_req']:.1f} µs/req  "
                                            f"wrk/ab cpu {row['client_cpu_pct']:.0f}%"
                                            + ("  GENERATOR-BOUND" if row["generator_bound"] else "")
                                            + ("  NOISY" if row["noisy"] else "")
                                            if row["ok"] else f"FAILED {row['failure']}"))
                        stops.append({"server": server.id, "repeat": repeat, "work_ms": work_ms, "backlog": backlog,
                                      "argv": metadata.portable(srv.argv),
                                      "exit_code": srv.exit_code, "time_wait_wait_s": round(waited, 1),
                                      "cpu_accounting": srv.cpu_group.source if srv.cpu_group else "/proc"})
                        if srv.exit_code != 0:
                            progress(f"warning: {server.id} exited {srv.exit_code} on SIGTERM (contract: 0)")
                    except Unsupported as exc:
                        unsupported[server.id] = str(exc)
                        progress(f"skip: {exc}")
        if plan.battery if with_battery is None else with_battery:
            verdicts = {}
            for server in servers:
                if server.id in unsupported:
                    continue
                with ServerProcess(server, ServerOptions(host=host), cpus=server_cpus, netns=netns) as srv:
                    srv.verify()
                    verdicts[server.id] = [v.as_dict() for v in battery_mod.run_battery(host, srv.port)]
                passed = sum(v["passed"] for v in verdicts[server.id])
                progress(f"battery {server.id}: {passed}/{len(verdicts[server.id])} cases passed")
            writer.write_json("battery.json", verdicts)
        for row in writer.flag_outliers():
            progress(f"outlier: {row['server']} {row['tool']} {row['mode']} c={row['connections']} "
                     f"w={row['work_ms']:g} p={row['pipeline']} repeat {row['repeat']}: {row['rps']:,.0f} req/s, "
                     f"more than {100 * OUTLIER_FRACTION:.0f}% from its point's median ({row['raw_file']})")
        unserved = sorted({(r["server"], r["connections"], r["work_ms"], r["pipeline"])
                           for r in writer.rows if r.get("unserved")})
        for server_id, c, w, p in unserved:
            progress(f"unserved: {server_id} at c={c} w={w:g} p={p}: some connections never got an answer")
        meta.update(finished_at=_now(), unsupported=unsupported, stops=stops, load_commands=commands)
        writer.write_json("meta.json", meta)
        return writer.commit()
    except BaseException as exc:
        failed = writer.abandon(f"{exc.__class__.__name__}: {exc}")
        progress(f"run abandoned ({exc.__class__.__name__}); partial output kept in {failed}; "
                 f"{dest} untouched")
        raise


def measure(writer: DatasetWriter, srv: ServerProcess, point: Point, profile: Profile, repeat: int,
            client_cpus: str, run_id: str, commands: list[dict] | None = None) -> dict:
    driver = drivers.get(point.tool)
    server = srv.server
    base = ["taskset", "-c", client_cpus] if client_cpus else []
    n = f"-n{point.requests}" if point.requests else ""
    b = (f"-b{point.backlog}" if point.backlog else "") + (f"-t{point.threads}" if point.threads != 1 else "") \
        + (f"-p{point.pipeline}" if point.pipeline != 1 else "")
    stem = f"{server.id}/{point.tool}-{point.mode}-c{point.connections}{n}-w{point.work_ms:g}{b}-r{repeat}"

    # Warm-up: the same load, shorter; its output is kept too, but never measured.
    warm = load_spec(point, profile.warmup_s, warmup=True)
    argv = base + driver.argv(warm, srv.url)
    started = _now()
    output, code, _, _ = run_load(argv, driver.env(warm), profile.warmup_s + 60)
    writer.write_raw(stem + ".warmup.txt", raw_text(argv, driver.env(warm), output, code, started))

    wait_quiet(profile.quiet_wait_s)
    spec = load_spec(point, profile.duration_s)
    argv = base + driver.argv(spec, srv.url)
    started = _now()
    tcp0 = sampler.tcp_counters()
    sampling = sampler.GroupSampler(srv.pid, cpu_group=srv.cpu_group).start()
    conns = sampler.ConnSampler(srv.port, cpus=client_cpus).start()
    output, code, client_cpu, wall = run_load(argv, driver.env(spec), profile.duration_s * 4 + 120)
    received = conns.stop()
    usage = sampling.stop()
    tcp = {k: v - tcp0.get(k, 0) for k, v in sampler.tcp_counters().items()}
    raw_file = writer.write_raw(stem + ".txt", raw_text(argv, driver.env(spec), output, code, started))
    result = driver.parse(output, code)
    if commands is not None:
        commands.append({"raw_file": raw_file, "env": driver.env(spec), "argv": metadata.portable(argv)})

    client_pct = 100.0 * client_cpu / wall if wall > 0 else 0.0
    served = served_columns(point, result, received, conns.samples)
    foreign = max(0.0, (usage.system_busy_s - usage.cpu_s - client_cpu) / usage.wall_s) if usage.wall_s else 0.0
    row = {
        "server": server.id, "model": server.model, "lang": server.lang, "tool": point.tool,
        "mode": point.mode, "connections": point.connections, "work_ms": point.work_ms, "repeat": repeat,
        "requested": point.requests, "backlog": point.backlog, "pipeline": point.pipeline,
        **{k: v for k, v in result.as_row().items() if k != "ok" and k != "failure"},
        "ok": result.ok, "failure": result.failure,
        "server_cpu_s": usage.cpu_s,
        "server_cpu_us_per_req": (1e6 * usage.cpu_s / result.requests) if result.requests else None,
        "server_cpu_pct": 100.0 * usage.cpu_s / usage.wall_s if usage.wall_s else None,
        "server_rss_kib_max": usage.rss_kib_max, "pss_kib": usage.pss_kib_max,
        "server_threads_max": usage.threads_max,
        "server_procs_max": usage.procs_max, "server_vcsw": usage.vcsw, "server_ivcsw": usage.ivcsw,
        "client_cpu_pct": client_pct, "generator_bound": client_pct >= GENERATOR_BOUND_PCT * min(spec.threads, cpu_count(client_cpus)),
        "foreign_cpu_cores": foreign, "noisy": foreign > NOISY_FOREIGN_CORES,
        **served, "outlier": False,  # set once every repeat of the point is in (results.flag_outliers)
        "listen_overflows": tcp.get("ListenOverflows"), "listen_drops": tcp.get("ListenDrops"),
        "tcp_retrans_segs": tcp.get("RetransSegs"), "tcp_out_rsts": tcp.get("OutRsts"),
        "tcp_abort_on_close": tcp.get("TCPAbortOnClose"),
        "raw_file": raw_file, "server_cpus": srv.cpus or "", "client_cpus": client_cpus or "",
        "profile": profile.name, "run_id": run_id, "started_at": started,
    }
    writer.add_row(row)
    return row
