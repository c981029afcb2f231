"""A captured open-loop dataset: its columns, the keys of a point, its summary and reader, and what the chapter
reads from a summary (on time, the knee)."""
from __future__ import annotations

from pathlib import Path

from iobench.data.dataset import PSS_SUMMARY, Dataset, Summary, read_folder, spread
from iobench.run.kpaths import KPROFILE_SUMMARY
from iobench.run.probes import SYSCALL_SUMMARY
from iobench.run.sampler import TCP_COLUMNS

COLUMNS = [
    "server", "model", "lang", "tool", "loop", "connections", "work_ms", "fraction", "rate", "pipeline", "close",
    "profiled", "repeat",
    "capacity_rps", "offered_rps", "achieved_rps",
    "offered", "ok", "non2xx", "timeouts", "errors_connect", "resets", "dropped",
    "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "p99_99_ms", "max_ms", "mean_ms",
    "send_lag_p99_ms", "stall_s", "in_flight_max",
    "conns_served", "conn_min_requests", "conn_median_requests", "conn_max_requests",
    *TCP_COLUMNS,
    "server_cpu_s", "server_cpu_us_per_req", "server_cpu_pct", "server_user_s", "server_sys_s", "server_softirq_s",
    "server_steal_s", "client_steal_s", "server_rss_kib_max", "pss_kib", "server_threads_max", "client_cpu_pct",
    "client_cpu_us_per_req", "generator_bound", "foreign_cpu_cores", "noisy",
    "loop_ms_before", "loop_ms_after", "outlier",
    "ok_run", "failure", "raw_file", "hist_file", "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
KEYS = ["server", "tool", "loop", "connections", "work_ms", "fraction", "rate", "pipeline", "close", "profiled"]
# a point: its rate is a fraction of the capacity the closed loop measured in the same repeat, or fixed by the plan;
# pipelined, closing or sampled where the plan says (a dataset from before those three has none of them)
POINT_DEFAULTS = {"pipeline": 1, "close": False, "profiled": False}


class OpenDataset(Dataset):
    """An open-loop dataset: the HTTP datasets' provenance and caption, its own summary."""

    summarised = Summary(
        keys=tuple(KEYS), ok="ok_run", dropna=False,
        columns={
            "repeats": ("repeat", "count"), "capacity_rps": ("capacity_rps", "median"),
            "offered_rps": ("offered_rps", "median"), **spread("achieved_rps"),
            "p50_ms": ("p50_ms", "median"), **spread("p99_ms"), "p99_9_ms": ("p99_9_ms", "median"),
            "max_ms": ("max_ms", "median"),
            "dropped": ("dropped", "median"), "timeouts": ("timeouts", "median"), "offered": ("offered", "median"),
            "stall_s": ("stall_s", "median"), "send_lag_p99_ms": ("send_lag_p99_ms", "median"),
            "conns_served": ("conns_served", "min"), "conn_min_requests": ("conn_min_requests", "min"),
            "conn_max_requests": ("conn_max_requests", "max"),
            "cpu_us_per_req": ("server_cpu_us_per_req", "median"),
            "client_cpu_us_per_req": ("client_cpu_us_per_req", "median"),
            "client_cpu_pct": ("client_cpu_pct", "median"), "generator_bound": ("generator_bound", "any"),
            "noisy": ("noisy", "any"), "outliers": ("outlier", "sum"),
        },
        after=lambda agg: agg.assign(unserved=agg["conns_served"] < agg["connections"]),  # a connection never answered
        optional={**SYSCALL_SUMMARY, **PSS_SUMMARY, **KPROFILE_SUMMARY},
        shown=("server", "tool", "loop", "work_ms", "fraction", "rate", "offered_rps", "repeats", "achieved_rps",
               "p50_ms", "p99_ms", "p99_9_ms", "dropped", "timeouts", "stall_s", "conns_served", "generator_bound"),
    )

def load(path: Path, shown_under: str = "replay") -> OpenDataset:
    path, df, meta = read_folder(path, ("ok_run", "generator_bound", "noisy", "outlier"))
    df = df.assign(**{k: v for k, v in POINT_DEFAULTS.items() if k not in df})
    return OpenDataset(path.name, path, df, meta, {}, shown_under)


# ---- what the chapter reads from a summary ---------------------------------------------------------

ON_TIME = 0.99  # "delivered on time": at least this share of the offered load answered, none dropped


def on_time(summary, tool: str = "openloop", achieved: str = "achieved_rps", **where):
    """The open-loop points of `tool` (and `where`) that were delivered on time: no request
    dropped or timed out, and answers at ON_TIME or more of the offered rate (`achieved`: the
    summary's column of answers per second, 2xx only; a database dataset's is ok_rps)."""
    s = summary[(summary["tool"] == tool) & (summary["loop"] == "open")]
    for k, v in where.items():
        s = s[s[k] == v]
    return s[(s["dropped"] == 0) & (s["timeouts"] == 0) & (s[achieved] >= ON_TIME * s["offered_rps"])]


def highest_on_time(summary, tool: str = "openloop", achieved: str = "achieved_rps", **where):
    """The on-time point with the highest offered rate (a row of the summary), or None."""
    s = on_time(summary, tool, achieved, **where)
    return None if s.empty else s.loc[s["offered_rps"].idxmax()]


def knee(summary, server: str, work_ms: float, factor: float = 2.0, tool: str = "openloop"):
    """The lowest fraction of capacity at which the open loop's p99 exceeds `factor` times the
    p99 the closed loop reported for the same server, work and connections; None if none did."""
    s = summary[(summary["tool"] == tool) & (summary["server"] == server) & (summary["work_ms"] == work_ms)]
    closed = s[s["loop"] == "closed"]
    if closed.empty:
        return None
    over = s[(s["loop"] == "open") & (s["p99_ms"] > factor * closed["p99_ms"].iloc[0])]
    return None if over.empty else float(over["fraction"].min())
