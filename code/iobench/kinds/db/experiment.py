"""The database experiment: the HTTP experiment's lifecycle and rows, each point on its route, each server process with
the pool its points name, and beside each row the database's CPU over the same measured run (ServerProcess starts the
database; the runner counts its CPU apart from the server's, and not as foreign CPU), its memory after it, and where
the server says a request's time went (GET /db-stats before and after: waiting for a pooled connection, querying).

An open point (plans.DbPoint.loop) is the book's generator at a constant rate: its fraction of the 200s per second the
closed point of the same route, pool and connections answered before it in the same server process and repeat (its
capacity); the open-loop kind's columns beside the HTTP ones (dataset.OPEN_COLUMNS)."""
from __future__ import annotations

import dataclasses
import itertools
import json
import re

from iobench.data.report import number
from iobench.kinds.db.dataset import COLUMNS
from iobench.kinds.db.plans import IN_PLACE, DbPlan, DbPoint, pool_options
from iobench.kinds.http.experiment import HttpExperiment
from iobench.load import drivers
from iobench.run import postgres, runner, sampler
from iobench.run.lifecycle import ServerError, ServerProcess
from iobench.run.runner import Probe, Run, Turn
from iobench.servers import http, manifest
from iobench.servers.manifest import ServerOptions


STATS = "/db-stats"


def read_stats(port: int, host: str = "127.0.0.1") -> dict | None:
    """A database server's counts since its start (its GET /db-stats); None if it did not give them."""
    try:
        resp = http.get(host, port, STATS, timeout=10)
        got = json.loads(resp.body) if resp.status == 200 else None
    except (OSError, http.HttpError, ValueError):
        return None
    return got if isinstance(got, dict) and isinstance(got.get("requests"), int) else None


def stats_columns(before: dict | None, after: dict | None) -> dict:
    """Per request over a window, from two readings: the mean wait for a pooled connection (where the server has
    one to wait for) and the mean time querying, in microseconds; empty where a reading is missing or nothing ran."""
    cols = dict.fromkeys(("db_requests", "db_wait_us", "db_query_us", "db_held"))
    if before is None or after is None:
        return cols
    cols["db_held"] = before.get("held")  # a pool's connections held before the run: 0, unless one leaked
    n = after["requests"] - before["requests"]
    cols["db_requests"] = n
    if n > 0:
        for key, column in (("wait_ns", "db_wait_us"), ("query_ns", "db_query_us")):
            if key in after and key in before:
                cols[column] = (after[key] - before[key]) / n / 1000
    return cols


def resize(srv: ServerProcess, size: int) -> None:
    """A pool of `size` connections in place of the server's (GET /db-pool?size=N); ServerError if it refused."""
    resp = http.get(srv.opts.host, srv.port, f"/db-pool?size={size}", timeout=30)
    if resp.status != 200 or json.loads(resp.body or b"{}").get("pool") != size:
        raise ServerError(f"{srv.server.id}: GET /db-pool?size={size} answered {resp.status} {resp.body[:80]!r}")


class StatsProbe(Probe):
    """The server's /db-stats just before and just after the measured run."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.port, self.host = port, host

    def start(self) -> None:
        self.before = read_stats(self.port, self.host)

    def stop(self) -> dict:
        return stats_columns(self.before, read_stats(self.port, self.host))


class DbExperiment(HttpExperiment):
    def __init__(self, plan: DbPlan, with_battery: bool | None = None):
        super().__init__(plan, with_battery)
        self.columns = COLUMNS + plan.measured_columns()
        self.outlier_keys = self.outlier_keys + ("path", "db_pool")
        self.outlier_keys = self.outlier_keys + ("loop", "fraction")
        unsized = [s for s in plan.servers if s in IN_PLACE and not plan.pool(s)]
        if unsized:  # a point after a sweep's would run with the sweep's last size, its row saying 0
            raise ValueError(f"{plan.dataset}: a server resized in place needs its size in the plan's pools: {unsized}")
        for i, p in enumerate(plan.points):
            if p.loop == "open" and not any(self.capacity_key(q) == self.capacity_key(p) for q in plan.points[:i]
                                            if q.loop == "closed"):
                raise ValueError(f"{plan.dataset}: an open point needs a closed one before it on the same route, "
                                 f"pool and connections, whose capacity it is a fraction of: {p.label()}")
        self.capacity: dict[tuple, float] = {}  # (server, repeat, capacity_key) -> 200s per second of the closed point

    def meta(self, run: Run) -> dict:
        meta = super().meta(run)
        meta["plan"]["jvm_warmup_s"] = {s.id: self.jvm_warmup(run, s.id) for s in self.plan.serving(run.profile.name)
                                        if self.jvm_warmup(run, s.id) > 0}
        meta["plan"]["jvm_window_s"] = run.profile.jvm_window_s
        meta["database"] = {"engine": postgres.describe(), "settings": dict(postgres.SETTINGS),
                            "cpus": run.server_cpus,
                            "placement": "the database runs on the server's cores, the generator on its own"}
        return meta

    def turns(self, run: Run, points, repeat: int):
        """One server process per pool size its points name (the plan's size for it where a point names none); a
        server that resizes its pool in place (IN_PLACE) serves all its points in one process, started with the
        plan's size, its pool resized before each point that names another (measure). A point that would measure
        what an earlier one of the server already does (a sweep's size that is the plan's own) is left out."""
        for server in self.plan.serving(run.profile.name):
            groups: dict[int, list[DbPoint]] = {}
            seen = set()
            for p in points:
                if not self.applies(server, p):
                    continue
                measured = (p.path, p.connections, self.pool_of(server.id, p), p.loop, p.fraction)
                if measured in seen:
                    continue
                seen.add(measured)
                size = self.pool_of(server.id, p) if server.id not in IN_PLACE else self.plan.pool(server.id) or 0
                groups.setdefault(size, []).append(p)
            for size, group in groups.items():
                opts = ServerOptions(idle_timeout_s=self.plan.idle_timeout_s, **pool_options(server.id, size))
                note = {"db_pool": size}
                if server.id in IN_PLACE:  # the sizes it was resized to, in turn
                    note["db_pools"] = list(dict.fromkeys(self.pool_of(server.id, p) for p in group))
                yield Turn(server, group, opts, note=note)

    def verify(self, run: Run, at: runner.Serving) -> None:
        """The server answers GET /; then a Java server's JVM warms up (the plan's jvm_warmup_s, capped by the
        profile's server_jvm_warmup_s) under its turn's load, window by window on each route in turn (the first
        point of each), so that both routes' code is compiled; each window's output kept."""
        super().verify(run, at)
        seconds = self.jvm_warmup(run, at.srv.server.id)
        if seconds <= 0:
            return
        routes = list({p.path: p for p in reversed(at.turn.points)}.values())[::-1]  # each route's first point
        turn = itertools.cycle(routes)

        def load(window: float) -> tuple[list[str], dict]:
            point = next(turn)
            driver, spec = drivers.get(point.tool), self.load_spec(point, window)
            return run.client_prefix + driver.argv(spec, at.srv.url), driver.env(spec)

        def stem(w: int) -> str:
            point = routes[(w - 1) % len(routes)]
            where = f"{self.stem_extra(at.srv, point)}-c{point.connections}"
            return f"{at.srv.server.id}/jvm-warmup{where}-r{at.repeat}-w{w}"
        run.warm_jvm(seconds, load, stem)

    def jvm_warmup(self, run: Run, server_id: str) -> float:
        """How long a server's JVM warms up before its first point (0: not a JVM)."""
        if manifest.get(server_id).lang != "Java":
            return 0.0
        return min(self.plan.jvm_warmup_s, run.profile.server_jvm_warmup_s)

    def pool_of(self, server_id: str, point: DbPoint) -> int:
        """The pool a point is measured with: its own, or the plan's size for the server (0: the server's default)."""
        return point.db_pool or self.plan.pool(server_id) or 0

    @staticmethod
    def capacity_key(point: DbPoint) -> tuple:
        """What an open point shares with the closed one whose capacity it is a fraction of."""
        return (point.path, point.db_pool, point.connections)

    def unmeasured(self, at: runner.Serving, point: DbPoint, why: str) -> dict:
        return {**super().unmeasured(at, point, why), "path": point.path, "loop": point.loop,
                "fraction": point.fraction, "db_pool": self.pool_of(at.srv.server.id, point)}

    def measure(self, run: Run, at: runner.Serving, point: DbPoint) -> dict:
        """A point of a server that resizes in place gets its pool first (before its warm-up, which fills it). A closed
        point's 200s per second are the capacity the open points after it are fractions of; an open point whose closed
        one answered nothing is not measured, and says so."""
        size = self.pool_of(at.srv.server.id, point)
        if at.srv.server.id in IN_PLACE and size:
            resize(at.srv, size)
        key = (at.srv.server.id, at.repeat, self.capacity_key(point))
        capacity = self.capacity.get(key)
        if point.loop == "open":
            if not capacity:
                return {"tool": point.tool, "connections": point.connections, "path": point.path,
                        "db_pool": self.pool_of(at.srv.server.id, point), "loop": point.loop,
                        "fraction": point.fraction, "ok": False,
                        "failure": "not measured: its closed point answered no 200, so it has no capacity to be a "
                                   "fraction of"}
            point = dataclasses.replace(point, rate=round(point.fraction * capacity, 1))
        row = super().measure(run, at, point)
        if point.loop == "closed":
            row["capacity_rps"] = None
            if row.get("ok") and row.get("requests"):  # wrk's rate counts the 503s: capacity is the 200s
                ok = row["requests"] - (row.get("non2xx") or 0)
                self.capacity[key] = row["rps"] * ok / row["requests"]
        else:
            row["capacity_rps"] = capacity
        return row

    def load_spec(self, point: DbPoint, duration_s: float, warmup: bool = False) -> drivers.LoadSpec:
        return dataclasses.replace(super().load_spec(point, duration_s, warmup), path=point.path)

    def stem_extra(self, srv: ServerProcess, point: DbPoint) -> str:
        """The route and the pool in the raw files' names ("-queries20-pool16"): two routes at the same load are two
        files."""
        route = re.sub(r"[^a-z0-9]", "", point.path.replace("queries=", ""))
        level = f"-open{100 * point.fraction:g}" if point.loop == "open" else ""
        return f"-{route}-pool{self.pool_of(srv.server.id, point)}{level}"

    def more_probes(self, srv: ServerProcess, point: DbPoint) -> dict[str, Probe]:
        return {"db_stats": StatsProbe(srv.port, srv.opts.host)}

    def more_columns(self, srv: ServerProcess, point: DbPoint, m: runner.Measured, result: drivers.LoadResult) -> dict:
        db_cpu = m.companions_cpu_s.get("database")
        database = srv.database
        pss = (sampler.group_snapshot(database.proc.pid, with_pss=True).pss_kib
               if database is not None and database.proc is not None else None)
        cols = {"path": point.path, "db_pool": self.pool_of(srv.server.id, point),
                "db_cpu_s": db_cpu,
                "db_cpu_us_per_req": 1e6 * db_cpu / result.requests if db_cpu is not None and result.requests else None,
                "db_pss_kib": pss, **m.probes["db_stats"], "loop": point.loop, "fraction": point.fraction}
        if point.loop == "open":
            x = result.extra
            cols.update({k: x.get(k) for k in ("offered", "dropped", "p99_9_ms", "send_lag_p99_ms", "stall_s")},
                        offered_rps=point.rate)
            # who was served, by the generator's own count per connection: it opens a connection anew where a
            # request timed out, so the kernel's sockets (served_columns) outnumber the connections there
            served = x.get("conns_served")
            cols.update(conns_served=served, conn_min_requests=x.get("conn_min_requests"),
                        conn_median_requests=x.get("conn_median_requests"),
                        conn_max_requests=x.get("conn_max_requests"),
                        unserved=served is not None and served < point.connections)
        return cols

    def progress_text(self, row: dict) -> str:
        text = super().progress_text(row)
        if row.get("loop") != "open":
            return text
        return (f"offered {number(row['offered_rps'], ',.0f')}/s -> {text.strip()}  dropped {number(row['dropped'])}  "
                f"timeouts {number(row['errors_timeout'])}")
