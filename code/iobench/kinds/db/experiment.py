"""The database experiment: the HTTP experiment's lifecycle and rows, each point on its route, each server process with
the pool its points name, and beside each row the database's CPU over the same measured run (ServerProcess starts the
database; the runner counts its CPU apart from the server's, and not as foreign CPU) and its memory after it."""
from __future__ import annotations

import dataclasses
import re

from iobench.kinds.db.dataset import COLUMNS
from iobench.kinds.db.plans import DbPlan, DbPoint, pool_options
from iobench.kinds.http.experiment import HttpExperiment
from iobench.load import drivers
from iobench.run import postgres, runner, sampler
from iobench.run.lifecycle import ServerProcess
from iobench.run.runner import Run, Turn
from iobench.servers.manifest import ServerOptions


class DbExperiment(HttpExperiment):
    def __init__(self, plan: DbPlan, with_battery: bool | None = None):
        super().__init__(plan, with_battery)
        self.columns = COLUMNS + plan.measured_columns()
        self.outlier_keys = self.outlier_keys + ("path", "db_pool")

    def meta(self, run: Run) -> dict:
        meta = super().meta(run)
        meta["database"] = {"engine": postgres.describe(), "settings": dict(postgres.SETTINGS),
                            "cpus": run.server_cpus,
                            "placement": "the database runs on the server's cores, the generator on its own"}
        return meta

    def turns(self, run: Run, points, repeat: int):
        """One server process per pool size its points name (the plan's size for it where a point names none)."""
        for server in self.plan.serving(run.profile.name):
            groups: dict[int, list[DbPoint]] = {}
            for p in points:
                if self.applies(server, p):
                    groups.setdefault(p.db_pool or self.plan.pool(server.id) or 0, []).append(p)
            for size, group in groups.items():
                opts = ServerOptions(idle_timeout_s=self.plan.idle_timeout_s, **pool_options(server.id, size))
                yield Turn(server, group, opts, note={"db_pool": size})

    def load_spec(self, point: DbPoint, duration_s: float, warmup: bool = False) -> drivers.LoadSpec:
        return dataclasses.replace(super().load_spec(point, duration_s, warmup), path=point.path)

    def stem_extra(self, srv: ServerProcess, point: DbPoint) -> str:
        """The route and the pool in the raw files' names ("-queries20-pool16"): two routes at the same load are two
        files."""
        route = re.sub(r"[^a-z0-9]", "", point.path.replace("queries=", ""))
        return f"-{route}-pool{point.db_pool or self.plan.pool(srv.server.id) or 0}"

    def more_columns(self, srv: ServerProcess, point: DbPoint, m: runner.Measured, result: drivers.LoadResult) -> dict:
        db_cpu = m.companions_cpu_s.get("database")
        database = srv.database
        pss = (sampler.group_snapshot(database.proc.pid, with_pss=True).pss_kib
               if database is not None and database.proc is not None else None)
        return {"path": point.path, "db_pool": point.db_pool or self.plan.pool(srv.server.id) or 0,
                "db_cpu_s": db_cpu,
                "db_cpu_us_per_req": 1e6 * db_cpu / result.requests if db_cpu is not None and result.requests else None,
                "db_pss_kib": pss}
