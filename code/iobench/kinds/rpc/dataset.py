"""A captured RPC dataset: the open-loop table with the providers' settings as columns and keys."""
from __future__ import annotations

from pathlib import Path

from iobench.data.dataset import PSS_SUMMARY, Summary, read_battery, read_folder, spread
from iobench.kinds.openloop.dataset import COLUMNS as OPEN_COLUMNS
from iobench.kinds.openloop.dataset import OpenDataset
from iobench.run import jvmmem
from iobench.run.kpaths import KPROFILE_SUMMARY
from iobench.run.probes import SYSCALL_SUMMARY

# The columns the providers' settings and their JVMs add to the open-loop table, before its repeat.
EXTRA = ["experiment", "keep_alive_requests", "close_every", "pool", "via", "window", "jvm", "transport", "codec",
         "threads", "consumer_cpu_s", "consumer_cpu_us_per_req",
         "jvm_safepoints", "jvm_gc_pauses", "jvm_safepoint_max_ms", "jvm_safepoint_ms", "jvm_log_file"]
COLUMNS = OPEN_COLUMNS[:OPEN_COLUMNS.index("repeat")] + EXTRA + OPEN_COLUMNS[OPEN_COLUMNS.index("repeat"):]
KEYS = ["experiment", "server", "tool", "loop", "connections", "work_ms", "keep_alive_requests", "close_every",
        "pool", "via", "jvm", "window", "fraction", "rate", "profiled"]


class RpcDataset(OpenDataset):
    """An RPC dataset: the open-loop table with the providers' settings as keys."""

    summarised = Summary(
        keys=tuple(KEYS), ok="ok_run", dropna=False,
        columns={
            "repeats": ("repeat", "count"), **spread("achieved_rps"),
            "offered_rps": ("offered_rps", "median"), "p50_ms": ("p50_ms", "median"), "p99_ms": ("p99_ms", "median"),
            "p99_9_ms": ("p99_9_ms", "median"), "dropped": ("dropped", "median"), "timeouts": ("timeouts", "median"),
            "cpu_us_per_req": ("server_cpu_us_per_req", "median"),
            "user_s": ("server_user_s", "median"), "sys_s": ("server_sys_s", "median"),
            "softirq_s": ("server_softirq_s", "median"),
            "safepoint_max_ms": ("jvm_safepoint_max_ms", "median"), "safepoint_ms": ("jvm_safepoint_ms", "median"),
            "consumer_cpu_us_per_req": ("consumer_cpu_us_per_req", "median"),
            "rss_mib": ("server_rss_kib_max", lambda s: s.median() / 1024), "threads": ("server_threads_max", "max"),
            "client_cpu_pct": ("client_cpu_pct", "median"), "generator_bound": ("generator_bound", "any"),
            "noisy": ("noisy", "any"), "outliers": ("outlier", "sum"), "conns_served": ("conns_served", "min"),
        },
        optional={**SYSCALL_SUMMARY, **PSS_SUMMARY, **jvmmem.SUMMARY, **KPROFILE_SUMMARY},
        shown=("experiment", "server", "tool", "loop", "connections", "work_ms", "keep_alive_requests", "offered_rps",
               "repeats", "achieved_rps", "p50_ms", "p99_ms", "dropped", "timeouts", "cpu_us_per_req",
               "generator_bound"),
    )

def load(path: Path, shown_under: str = "replay") -> RpcDataset:
    path, df, meta = read_folder(path, ("ok_run", "generator_bound", "noisy", "outlier"))
    if "close_every" not in df.columns:  # captured before the generator could close every N calls
        df["close_every"] = 0
    df["jvm"] = df["jvm"].astype(object).fillna("") if "jvm" in df.columns else ""  # no extra flags (or none then)
    # the open loop's pipelining, closing and sampling are open-loop points' own: a provider's call is never
    # pipelined, closes as close_every says, and was not sampled where no column says so (captured before)
    df["profiled"] = df["profiled"].astype(object).fillna(False).astype(bool) if "profiled" in df.columns else False
    df["pipeline"] = df["pipeline"].fillna(1) if "pipeline" in df.columns else 1
    for col in ("server_user_s", "server_sys_s", "server_softirq_s", "jvm_safepoint_max_ms", "jvm_safepoint_ms"):
        if col not in df.columns:  # captured before the CPU split and the JVMs' safepoint logs
            df[col] = float("nan")
    return RpcDataset(path.name, path, df, meta, read_battery(path), shown_under)
