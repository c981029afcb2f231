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
# An open point (loop "open", tool openloop) at `fraction` of capacity_rps, the 200s per second its closed point
# answered in the same server process and repeat: offered_rps the rate it asked for, offered the requests it scheduled,
# dropped those it never sent (the in-flight cap was full: the generator's connections were all waiting), p99_9_ms,
# send_lag_p99_ms (the generator's own lateness) and stall_s (the longest time with requests out and none answered),
# as the open-loop kind has them; rps is then the 200s per second over the whole run (its drain included) and
# requests its 200s, where wrk's rps and requests count every response. A closed point leaves them empty.
OPEN_COLUMNS = ["loop", "fraction", "capacity_rps", "offered_rps", "offered", "dropped", "p99_9_ms", "send_lag_p99_ms",
                "stall_s"]
KEYS = http.KEYS + ["path", "db_pool", "loop", "fraction"]
POINT_DEFAULTS = {"loop": "closed", "fraction": 0.0}  # a dataset from before the open loop: every point closed
COLUMNS = http.COLUMNS + DB_COLUMNS + OPEN_COLUMNS  # the experiment's rows (a plan's optional measurements add theirs)



def _answered(d):
    """The HTTP rows' own additions, and ok_rps: the rate of 200s, without the 503s a server answered when a wait on
    its database ran out (wrk's rate, rps, counts every response; the open loop's counts its 200s already); shed_pct:
    the share of responses that were not 200 (in the summary: their median over the repeats; non2xx: their sum)."""
    d = http.SUMMARY.before(d) if http.SUMMARY.before is not None else d
    non2xx = d["non2xx"].fillna(0)
    is_open = d["tool"].eq("openloop")
    answered = d["requests"] + non2xx.where(is_open, 0)  # the open loop's requests are its 200s, wrk's every response
    shed = non2xx / answered.where(answered > 0)
    return d.assign(ok_rps=d["rps"].where(is_open, d["rps"] * (1 - shed)), shed_pct=100 * shed)


SUMMARY = dataclasses.replace(
    http.SUMMARY, keys=tuple(KEYS),
    columns={**http.SUMMARY.columns, **spread("ok_rps"), "non2xx": ("non2xx", "sum"),
             "shed_pct": ("shed_pct", "median"),
             **spread("db_cpu_us_per_req"), **spread("db_wait_us"), **spread("db_query_us"),
             "db_pss_mib": ("db_pss_kib", lambda s: s.max() / 1024),
             # the open loop's: rates and percentiles their medians over the repeats; the requests it offered,
             # dropped and saw time out their sums (as non2xx), so that a share of them is over every repeat
             "capacity_rps": ("capacity_rps", "median"), "offered_rps": ("offered_rps", "median"),
             "offered": ("offered", "sum"), "dropped": ("dropped", "sum"), "timeouts": ("errors_timeout", "sum"),
             "p99_9_ms": ("p99_9_ms", "median"), "stall_s": ("stall_s", "max"),
             "send_lag_p99_ms": ("send_lag_p99_ms", "max")},
    before=_answered,
    shown=("server", "path", "db_pool", "connections", "repeats", "rps", "ok_rps", "p99_ms", "non2xx",
           "cpu_us_per_req", "db_cpu_us_per_req", "errors", "generator_bound", "outliers"))


class DbDataset(http.HttpDataset):
    summarised = SUMMARY


def load(path: Path, shown_under: str = "replay") -> DbDataset:
    path, df, meta = read_folder(path, ("ok", "generator_bound", "noisy", "unserved", "outlier"))
    df = df.assign(**{k: v for k, v in POINT_DEFAULTS.items() if k not in df},
                   **{k: float("nan") for k in OPEN_COLUMNS if k not in df and k not in POINT_DEFAULTS})
    df["loop"] = df["loop"].fillna("closed")  # a row that failed before its point was written: its point's kind
    df["fraction"] = df["fraction"].fillna(0.0)
    return DbDataset(path.name, path, df, meta, read_battery(path), shown_under)
