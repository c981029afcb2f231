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
from dataclasses import asdict
from pathlib import Path

from iobench.data.report import number
from iobench.load import drivers
from iobench.kinds.clients.dataset import COLUMNS, KEYS
from iobench.kinds.clients.plans import REFERENCE, SHIPPED_CONNECTIONS, ClientPlan, ClientPoint, ceiling
from iobench.load.clientload import BESIDE_HLOG, beside_hlog
from iobench.run.probes import TcpProbe, tcp_columns
from iobench.run.runner import Experiment, Load, Run, Serving, Turn
from iobench.servers import manifest
from iobench.servers.manifest import ServerOptions


class ClientExperiment(Experiment):
    columns = COLUMNS
    outlier_keys = tuple(KEYS)
    outlier_value = "achieved_rps"
    ok_column = "ok_run"  # its ok counts the answers
    require_clean_exit = True

    def __init__(self, plan: ClientPlan, with_battery: bool | None = None):  # a client is measured: no battery
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

    def across_hosts(self, run: Run) -> str | None:
        if any(p.link_rtt_ms for p in run.points):
            return "some of its points run behind a delay link it makes on this machine"
        return None

    def networks(self, run: Run):
        """Loopback, then (when the plan has such points) the server behind a delay link, whose
        forwarding program shares the server's core (the client's core stays the client's)."""
        here = [p for p in run.points if not p.link_rtt_ms]
        if here:
            yield "loopback", None, here
        for rtt in dict.fromkeys(p.link_rtt_ms for p in run.points if p.link_rtt_ms):
            from iobench.run.netlink import DelayLink

            yield f"delay-{rtt:g}ms", DelayLink(rtt, cpus=run.server_cpus or "0"), \
                [p for p in run.points if p.link_rtt_ms == rtt]

    def _turns(self, points) -> list[Turn]:
        """One server process per delay, serving every point at that delay."""
        return [Turn(self.server, [p for p in points if p.delay_ms == d], ServerOptions(work_ms=d),
                     note={"delay_ms": d})
                for d in dict.fromkeys(p.delay_ms for p in points)]

    def measurements(self, run: Run, points) -> int:
        return len(points)

    def turns(self, run: Run, points, repeat: int):
        yield from self._turns(points)

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
        return {
            "client": point.client, "setting": point.setting, "client_version": x.get("client_version"),
            "experiment": point.experiment,
            "pool": "equal" if point.connections else "shipped", "connections": point.connections,
            "io_threads": point.io_threads, "delay_ms": point.delay_ms, "link_rtt_ms": point.link_rtt_ms,
            "mode": point.mode,
            "fraction": point.fraction, "offered_rps": point.offered_rps if point.mode == "open" else None,
            "warmup_rate": point.warmup_rate or None, "ceiling_rps": ceiling(point),
            "max_in_flight": point.max_in_flight if point.mode == "open" else None,
            "requests": point.requests, "park_us": point.park_us,
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
            "client_threads_max": x.get("threads_max"),
            # the client JVM's PSS when its run ended, read by itself (the C reference's: not read)
            "pss_kib": x.get("pss_kib"),
            "thread_groups": json.dumps(x.get("thread_groups") or {}, sort_keys=True),
            "error_kinds": json.dumps(x.get("error_kinds") or {}, sort_keys=True),
            **tcp_columns(m.probes["tcp"]),
            "java_version": x.get("java_version"),
            "server_cpu_us_per_req": 1e6 * m.usage.cpu_s / r.requests if r.requests else None,
            "ok_run": r.ok, "failure": r.failure,
            "hlog_file": str(Path("raw") / (stem + ".hlog")) if hlog.exists() else None,
            **{f"{what}_file": str(Path("raw") / (stem + ext)) if Path(beside_hlog(str(hlog), what)).exists() else None
               for what, ext in BESIDE_HLOG.items()},
        }

    def progress_text(self, row: dict) -> str:
        got = (f"{number(row['achieved_rps'])}/s ok" if number(row["achieved_rps"]) != "n/a" else "no summary")
        return (f"{got}  p99 {number(row['p99_ms'], '.3f')} ms  failed {number(row['failed'])}  "
                f"dropped {number(row['dropped'])}  client cpu {number(row['client_cpu_us_per_req'], '.1f')} us/req  "
                f"server cpu {number(row['server_cpu_pct'], '.0f')}%")


