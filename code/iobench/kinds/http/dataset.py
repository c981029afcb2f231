"""A captured closed-loop HTTP dataset: its columns, the keys of a point, its summary, and its reader.

    data/<dataset>/results.csv   one row per (server, tool, mode, connections, work, ..., repeat): COLUMNS,
                                 and the columns a plan's optional measurements add (plans.HttpPlan)
    data/<dataset>/battery.json  the conformance battery's verdict per server, if run
"""
from __future__ import annotations

from pathlib import Path

from iobench.data.dataset import Dataset, Summary, read_battery, read_folder, spread
from iobench.data.report import REQUIRED, value_in
from iobench.run.lazy import lazy
from iobench.run import jvmmem
from iobench.run.sampler import TCP_COLUMNS

pd = lazy("pandas")  # imported at first use: the command line needs neither

COLUMNS = [
    "server", "model", "lang", "tool", "mode", "connections", "work_ms", "requested", "backlog", "pipeline",
    "idle_conns", "repeat",
    "rps", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms",
    "errors", "errors_connect", "errors_read", "errors_write", "errors_timeout", "non2xx",
    "requests", "duration_s", "bytes",
    "server_cpu_s", "server_cpu_us_per_req", "server_cpu_pct", "server_user_s", "server_sys_s", "server_softirq_s",
    "server_steal_s", "client_steal_s",
    "server_rss_kib_max", "pss_kib", "server_threads_max", "server_procs_max", "server_vcsw", "server_ivcsw",
    "client_cpu_pct", "generator_bound", "foreign_cpu_cores", "noisy", "loop_ms_before", "loop_ms_after",
    "conns_served", "conn_min_requests", "conn_median_requests", "conn_max_requests", "unserved", "outlier",
    "idle_answered", "idle_open", "pss_rest_kib", "pss_per_idle_kib",
    *TCP_COLUMNS,
    "ok", "failure", "raw_file", "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
# In an idle study, a server of several processes: how many held connections, and the fewest and most one held.
WORKER_COLUMNS = ["share", "workers_holding", "worker_conns_min", "worker_conns_max", "worker_conns"]
# What its workers said as they stopped (c-epoll-workers --worker-counts): connections accepted, times the
# listening socket woke one, and of those times the ones that found nothing to accept (a thundering herd); and
# the server's context switches (voluntary: it slept; involuntary: it was preempted) and CPU while the idle
# connections were raised, summed over its processes.
COUNT_COLUMNS = ["workers_reported", "accepted_total", "accepted_min", "accepted_max", "listen_wakeups",
                 "listen_empty", "worker_counts_file", "raise_vcsw", "raise_ivcsw", "raise_cpu_s"]

# A point: the server (its model and language follow from it) and the load. Its repeats are summarised together
# and flagged apart from each other (results.flag_outliers: POINT_KEYS, the same without what follows the server).
KEYS = ["server", "model", "lang", "tool", "mode", "connections", "work_ms", "requested", "backlog", "pipeline",
        "idle_conns"]
POINT_KEYS = tuple(k for k in KEYS if k not in ("model", "lang"))

# Median and min-max over repeats of each point (failed runs excluded). unserved: in some repeat, a connection
# never got an answer (conns_served, its fewest over the repeats, says how many did); outliers: repeats more than
# 20 % from the point's median rps (results.flag_outliers), to be explained.
SUMMARY = Summary(
    keys=tuple(KEYS),
    columns={
        "repeats": ("repeat", "count"), **spread("rps"),
        "p50_ms": ("p50_ms", "median"), **spread("p99_ms"),
        **spread("cpu_us_per_req", "server_cpu_us_per_req"),
        "rss_mib": ("server_rss_kib_max", lambda s: s.max() / 1024),
        "pss_mib": ("pss_kib", lambda s: s.max() / 1024),
        "threads": ("server_threads_max", "max"),
        "errors": ("errors", "sum"), "client_cpu_pct": ("client_cpu_pct", "median"),
        "generator_bound": ("generator_bound", "any"), "noisy": ("noisy", "any"),
        "conns_served": ("conns_served", "min"), "conn_min_requests": ("conn_min_requests", "min"),
        "conn_max_requests": ("conn_max_requests", "max"),
        "unserved": ("unserved", "any"), "outliers": ("outlier", "sum"),
        "csw_per_req": ("csw_per_req", "median"),
        "idle_open": ("idle_open", "min"), **spread("pss_per_idle_kib"),
    },
    before=lambda d: d.assign(
        csw_per_req=(d["server_vcsw"] + d["server_ivcsw"]) / d["requests"].where(d["requests"] > 0)),
    shown=("server", "tool", "mode", "connections", "work_ms", "pipeline", "repeats", "rps", "rps_min", "rps_max",
           "p99_ms", "cpu_us_per_req", "conns_served", "errors", "generator_bound", "outliers"),
    optional=jvmmem.SUMMARY,  # where the plan read the JVMs' memory
)


class HttpDataset(Dataset):
    """A closed-loop HTTP dataset: its summary, and what one more idle connection costs (marginal)."""

    summarised = SUMMARY

    def marginal(self, value: str = "pss_rest_kib", per: str = "idle_open", level: str = "idle_conns") -> pd.DataFrame:
        """What one more of `per` costs in `value`, between each two successive levels: in each repeat of
        each server (one process, every level in turn), (value at the higher level - at the lower) / (per at
        the higher - at the lower); then the median and range over the repeats. One row per server and
        segment (from, to): with three levels or more, a cost that changes between segments shows it (a
        JVM's heap growing, say), which one total over N at one level hides."""
        ok = self.df[self.df["ok"] & self.df[value].notna() & self.df[per].notna()]
        rows = []
        for (server, repeat), g in ok.groupby(["server", "repeat"], sort=False):
            g = g.sort_values(level)
            for (_, lo), (_, hi) in zip(g.iterrows(), g.iloc[1:].iterrows()):
                if hi[per] > lo[per]:
                    rows.append({"server": server, "repeat": repeat, "from": int(lo[level]), "to": int(hi[level]),
                                 "slope": (hi[value] - lo[value]) / (hi[per] - lo[per])})
        slopes = pd.DataFrame(rows, columns=["server", "repeat", "from", "to", "slope"])
        return (slopes.groupby(["server", "from", "to"], sort=False)
                .agg(repeats=("repeat", "count"), **spread("slope")).reset_index())

    def marginal_value(self, server: str, to: int | None = None, default=REQUIRED, **kw) -> float:
        """The median marginal cost of `server` in the segment ending at level `to` (the highest: None)."""
        m = self.marginal(**kw)
        m = m[m["server"] == server]
        if to is None and len(m):
            to = m["to"].max()
        return value_in(m, "slope", default, server=server, to=to)


def load(path: Path, shown_under: str = "replay") -> HttpDataset:
    path, df, meta = read_folder(path, ("ok", "generator_bound", "noisy", "unserved", "outlier"))
    for col in ("requested", "backlog", "idle_conns"):  # newer than their datasets: 0 means "not set", none
        if col not in df.columns:
            df[col] = 0
    if "pipeline" not in df.columns:  # older than schema 6: no pipelining
        df["pipeline"] = 1
    for col in ("pss_kib", "conns_served", "conn_min_requests", "conn_median_requests", "conn_max_requests",
                "idle_answered", "idle_open", "pss_rest_kib", "pss_per_idle_kib"):
        if col not in df.columns:  # older than schema 6 (and the idle columns): not measured
            df[col] = float("nan")
    return HttpDataset(path.name, path, df, meta, read_battery(path), shown_under)
