"""A captured database dataset: the HTTP dataset's columns and summary, a point also keyed by its route and pool, and
the database's CPU per request beside the server's.

    data/<dataset>/results.csv   a row per (server, route, pool, connections, ..., repeat): http's COLUMNS + DB_COLUMNS
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from iobench.data.dataset import read_battery, read_folder, spread
from iobench.kinds.http import dataset as http

# db_wait_us / db_query_us: a request's mean wait for a pooled connection of its own (only where a request takes one:
# HikariCP, r2dbc-pool; else empty) and its mean time from then (or, with no such wait, from its first query handed to
# the driver) to its last row back, as the server counted them (GET /db-stats, read before and after the measured
# run); db_requests: how many it counted. So for the pipelined servers (c-db-epoll, java-db-vertx) db_query_us holds
# the time a query queued in a pipeline, which for the pooled ones is db_wait_us: compare their sum across servers.
# c-db-threadpool's wait for a worker is in neither (its accept queue; conns_served shows it). db_requests counts the
# requests still in flight when the generator stopped (about one per connection), answered after its window.
# db_held: the connections of a pool (HikariCP's, r2dbc-pool's) that requests held just before the measured run, when
# nothing runs: 0, unless an earlier point leaked one (a request cancelled mid-query, say)
DB_COLUMNS = ["path", "db_pool", "db_cpu_s", "db_cpu_us_per_req", "db_pss_kib", "db_requests", "db_wait_us",
              "db_query_us", "db_held"]
KEYS = http.KEYS + ["path", "db_pool"]
COLUMNS = http.COLUMNS + DB_COLUMNS  # the experiment's rows (a plan's optional measurements add theirs)



def _answered(d):
    """The HTTP rows' own additions, and ok_rps: the rate of 200s, without the 503s a server answered when a wait on
    its database ran out (wrk's rate, rps, counts every response); shed_pct: the share of responses that were not 200
    (in the summary: their median over the repeats; non2xx: their sum)."""
    d = http.SUMMARY.before(d) if http.SUMMARY.before is not None else d
    shed = d["non2xx"].fillna(0) / d["requests"].where(d["requests"] > 0)
    return d.assign(ok_rps=d["rps"] * (1 - shed), shed_pct=100 * shed)


SUMMARY = dataclasses.replace(
    http.SUMMARY, keys=tuple(KEYS),
    columns={**http.SUMMARY.columns, **spread("ok_rps"), "non2xx": ("non2xx", "sum"),
             "shed_pct": ("shed_pct", "median"),
             **spread("db_cpu_us_per_req"), **spread("db_wait_us"), **spread("db_query_us"),
             "db_pss_mib": ("db_pss_kib", lambda s: s.max() / 1024)},
    before=_answered,
    shown=("server", "path", "db_pool", "connections", "repeats", "rps", "ok_rps", "p99_ms", "non2xx",
           "cpu_us_per_req", "db_cpu_us_per_req", "errors", "generator_bound", "outliers"))


class DbDataset(http.HttpDataset):
    summarised = SUMMARY


def load(path: Path, shown_under: str = "replay") -> DbDataset:
    path, df, meta = read_folder(path, ("ok", "generator_bound", "noisy", "unserved", "outlier"))
    return DbDataset(path.name, path, df, meta, read_battery(path), shown_under)
