"""A captured clients dataset: its columns, the keys of a point, its summary, its reader, and what each run
left beside its histogram (the collector's log, a thread dump, a timeline)."""
from __future__ import annotations

from pathlib import Path

from iobench.data.dataset import PSS_SUMMARY, Dataset, Summary, read_folder, spread
from iobench.run.lazy import lazy
from iobench.load.clientload import thread_dump, timeline
from iobench.run.jvmlog import gc_pauses
from iobench.run.sampler import TCP_COLUMNS

pd = lazy("pandas")  # imported at first use: the command line needs neither

COLUMNS = [
    "client", "client_version", "experiment", "pool", "connections", "io_threads", "delay_ms", "link_rtt_ms",
    "mode",
    "fraction", "offered_rps", "warmup_rate", "ceiling_rps", "max_in_flight", "requests", "park_us", "repeat",
    "offered", "sent", "ok", "failed", "non2xx", "timeouts", "rejected", "errors", "dropped", "accounted",
    "achieved_rps", "submit_rps", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms", "mean_ms",
    "send_lag_p99_ms", "send_lag_max_ms", "in_flight_max",
    "client_cpu_s", "client_cpu_us_per_req", "client_cpu_pct", "client_threads_max", "pss_kib", "thread_groups",
    "error_kinds", *TCP_COLUMNS,
    "java_version", "server", "server_cpu_s", "server_cpu_pct", "server_cpu_us_per_req",
    "server_threads_max", "foreign_cpu_cores", "noisy", "loop_ms_before", "loop_ms_after", "outlier", "ok_run",
    "failure", "raw_file", "hlog_file",
    "gc_log_file", "thread_dump_file", "timeline_file", "setting",
    "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
KEYS = ["client", "setting", "experiment", "pool", "connections", "delay_ms", "link_rtt_ms", "mode", "fraction",
        "offered_rps", "requests", "park_us"]


class ClientDataset(Dataset):
    """The clients dataset: the HTTP datasets' provenance and caption, its own summary."""

    summarised = Summary(
        keys=tuple(KEYS), ok="ok_run", dropna=False,
        columns={
            "repeats": ("repeat", "count"), "ceiling_rps": ("ceiling_rps", "first"),
            **spread("achieved_rps"), "submit_rps": ("submit_rps", "median"),
            **spread("p50_ms"), **spread("p99_ms"), **spread("p99_9_ms"), "max_ms": ("max_ms", "median"),
            "offered": ("offered", "median"), "ok": ("ok", "median"), "failed": ("failed", "median"),
            "timeouts": ("timeouts", "median"), "rejected": ("rejected", "median"), "errors": ("errors", "median"),
            "dropped": ("dropped", "median"), "accounted": ("accounted", "all"),
            **spread("client_cpu_us_per_req"),
            "client_threads_max": ("client_threads_max", "max"), "server_cpu_pct": ("server_cpu_pct", "max"),
            "noisy": ("noisy", "any"), "outliers": ("outlier", "sum"),
        },
        optional=PSS_SUMMARY,  # the client JVM's PSS after its run (none for the C generator, nor in older captures)
        shown=("client", "experiment", "mode", "connections", "delay_ms", "fraction", "offered_rps", "repeats",
               "achieved_rps", "p50_ms", "p99_ms", "timeouts", "dropped", "client_cpu_us_per_req", "accounted"),
    )

    def with_gc(self, rows):
        """These rows with what the collector's log of each run says (gc_log_file): the pauses
        (`gc_pauses`), the seconds the JVM stood still in them (`gc_pause_s`), and the most heap
        still in use after one (`gc_heap_after_mib`), the JVM's whole life (warm-up included)."""
        got = [gc_pauses((self.path / f).read_text()) if isinstance(f, str) else {} for f in rows["gc_log_file"]]
        return rows.assign(**{k: [g.get(k) for g in got] for k in ("gc_pauses", "gc_pause_s", "gc_heap_after_mib")})

    def threads(self, row) -> pd.DataFrame:
        """What the client's threads were doing halfway through the row's measured window (its
        thread_dump_file), one line per group of threads named alike: how many, in which states,
        the CPU they had used, and the frame most of them were in."""
        got = pd.DataFrame(thread_dump((self.path / row["thread_dump_file"]).read_text()))
        return (got.groupby("group", sort=False)
                .agg(threads=("name", "count"), states=("state", lambda s: ", ".join(sorted(set(s)))),
                     cpu_ms=("cpu_ms", "sum"), waiting_in=("top", lambda s: s.mode().iloc[0]),
                     library=("library", lambda s: s[s != ""].mode().iloc[0] if (s != "").any() else ""))
                .reset_index().sort_values("cpu_ms", ascending=False, ignore_index=True))


    def timeline(self, row) -> pd.DataFrame:
        """The row's run every 100 ms (its timeline_file; clientload.timeline says what each column
        is), with what happened in each tenth of a second beside the running totals: `d_<column>` for
        the answers, failures, pauses and every thread group's CPU (ms in that interval)."""
        got = pd.DataFrame(timeline((self.path / row["timeline_file"]).read_text()))
        got = got.fillna({c: 0 for c in got.columns if c != "busy"})
        running = [c for c in got.columns
                   if c.startswith("cpu_") or c in ("ok", "failed", "opened", "gc_ms", "gc_count")]
        return got.join(got[running].diff().fillna(0).add_prefix("d_"))


def load(path: Path, shown_under: str = "replay") -> ClientDataset:
    path, df, meta = read_folder(path, ("ok_run", "accounted", "noisy", "outlier"))
    # newer than their datasets: every run as the chapter sets its client; no timeline or count of connections kept
    df["setting"] = [v if isinstance(v, str) else "" for v in df["setting"]] if "setting" in df.columns else ""
    for col in ("timeline_file", "tcp_active_opens", "pss_kib"):
        if col not in df.columns:
            df[col] = float("nan")
    return ClientDataset(path.name, path, df, meta, {}, shown_under)
