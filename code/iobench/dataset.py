"""Load a captured dataset, summarise its repeats, and say where it came from.

The notebook entry point is ``obtain``: under the replay profile it loads data/<name>;
under smoke or full it runs the plan first. Either way the result says which profile
produced the numbers it holds.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import plans
from .report import REQUIRED, value_in
from .profiles import DATA, current

KEYS = ["server", "model", "lang", "tool", "mode", "connections", "work_ms", "requested", "backlog", "pipeline",
        "idle_conns"]


# A run whose machine-speed loop took this many times its usual time was measured on a slower machine (Dataset.slow).
SLOW_FACTOR = 1.3


@dataclass
class Dataset:
    name: str
    path: Path
    df: pd.DataFrame
    meta: dict
    battery: dict
    shown_under: str  # the profile of the session that loaded it

    @property
    def produced_by(self) -> str:
        return self.meta["profile"]["name"]

    def machine(self) -> str:
        m = self.meta["machine"]
        return f"{m['cores']} × {m['cpu_model']}, {m['kernel']}"

    def date(self) -> str:
        return self.meta["started_at"][:10]

    def caption(self) -> str:
        """The line every figure of this dataset carries."""
        pin = self.meta["pinning"]
        return (f"{self.name}, {self.produced_by} profile, measured {self.date()} on {self.machine()}; "
                f"server on CPU {pin['server_cpus']}, load generator on CPU {pin['client_cpus']}")

    def origin(self) -> str:
        """Which run produced the numbers, when, at which commit, on which machine."""
        g = self.meta.get("git", {})
        commit = (g.get("commit") or "unknown")[:10] + (" (with uncommitted changes)" if g.get("dirty") else "")
        how = ("replayed from data/" if self.shown_under == "replay"
               else f"measured just now under the {self.shown_under} profile")
        return (f"Dataset '{self.name}': {how}; produced by a {self.produced_by} run {self.meta['run_id']} "
                f"on {self.meta['started_at']} at commit {commit}.\n"
                f"Machine: {self.machine()}.")

    def describe(self) -> str:
        return (self.origin() + "\n"
                f"Tools: {self.meta['versions']['wrk'].split(' Copyright')[0]}; "
                f"{self.meta['versions']['ab'].removeprefix('This is ')}; {self.meta['versions']['nginx']}.")

    def summary(self) -> pd.DataFrame:
        """Median and min-max over repeats of each point (failed runs excluded).
        unserved: in some repeat, a connection never got an answer (conns_served, its
        fewest over the repeats, says how many did); outliers: repeats more than 20 %
        from the point's median rps (results.flag_outliers), to be explained."""
        ok = self.df[self.df["ok"]].assign(
            csw_per_req=lambda d: (d["server_vcsw"] + d["server_ivcsw"]) / d["requests"].where(d["requests"] > 0))
        agg = ok.groupby(KEYS, sort=False).agg(
            repeats=("repeat", "count"),
            rps=("rps", "median"), rps_min=("rps", "min"), rps_max=("rps", "max"),
            p50_ms=("p50_ms", "median"), p99_ms=("p99_ms", "median"),
            p99_ms_min=("p99_ms", "min"), p99_ms_max=("p99_ms", "max"),
            cpu_us_per_req=("server_cpu_us_per_req", "median"),
            cpu_us_per_req_min=("server_cpu_us_per_req", "min"),
            cpu_us_per_req_max=("server_cpu_us_per_req", "max"),
            rss_mib=("server_rss_kib_max", lambda s: s.max() / 1024),
            pss_mib=("pss_kib", lambda s: s.max() / 1024),
            threads=("server_threads_max", "max"),
            errors=("errors", "sum"), client_cpu_pct=("client_cpu_pct", "median"),
            generator_bound=("generator_bound", "any"), noisy=("noisy", "any"),
            conns_served=("conns_served", "min"), conn_min_requests=("conn_min_requests", "min"),
            conn_max_requests=("conn_max_requests", "max"),
            unserved=("unserved", "any"), outliers=("outlier", "sum"),
            csw_per_req=("csw_per_req", "median"),
            idle_open=("idle_open", "min"), pss_per_idle_kib=("pss_per_idle_kib", "median"),
            pss_per_idle_kib_min=("pss_per_idle_kib", "min"), pss_per_idle_kib_max=("pss_per_idle_kib", "max"),
        ).reset_index()
        return agg

    def table(self) -> pd.DataFrame:
        """The summary's columns a terminal shows (iobench show, obtain)."""
        cols = ["server", "tool", "mode", "connections", "work_ms", "pipeline", "repeats", "rps", "rps_min",
                "rps_max", "p99_ms", "cpu_us_per_req", "conns_served", "errors", "generator_bound", "outliers"]
        return self.summary()[cols].round(2)

    def raw(self, raw_file: str) -> str:
        return (self.path / raw_file).read_text()

    def link(self, name: str) -> dict | None:
        """How the run's link `name` ("delay", "veth") was set up, from meta.json; None if it had
        none. (Runs before 2026-11-23 kept their delay link under "link".)"""
        links = self.meta.get("links") or ({"delay": self.meta["link"]} if self.meta.get("link") else {})
        return links.get(name)

    def slow(self, factor: float = SLOW_FACTOR) -> pd.DataFrame:
        """The rows measured while the machine ran slow: the fixed loop timed just before or just after the
        run (loop_ms_before, loop_ms_after; runner.measure_load) took over `factor` times the machine's usual
        speed, the loop's 10th percentile over the dataset (not its median: half a run can be slow). Empty for a
        dataset captured before those columns existed: it cannot say."""
        if "loop_ms_before" not in self.df.columns:
            return self.df.iloc[0:0]
        loop = self.df[["loop_ms_before", "loop_ms_after"]].max(axis=1)
        return self.df[loop > factor * loop.quantile(0.1)]

    def value(self, column: str = "rps", default=REQUIRED, **where) -> float:
        """One median from the summary, for quoting in prose (glue), never typed by hand:
        ds.value("rps", server="nginx", connections=40). A point this run did not measure
        is a KeyError, or `default` if given (report.value_in)."""
        return value_in(self.summary(), column, default, **where)


def read_folder(path: Path, bools: tuple[str, ...], **read_csv) -> tuple[Path, pd.DataFrame, dict]:
    """A captured folder of any kind: its rows (the `bools` columns as booleans; missing ones
    False) and its meta.json. Every kind's loader starts here."""
    path = Path(path)
    if not (path / "results.csv").exists():
        raise FileNotFoundError(f"no captured dataset at {path}")
    df = pd.read_csv(path / "results.csv", **read_csv)
    for col in bools:
        df[col] = df[col].astype(str).str.lower().eq("true") if col in df.columns else False
    return path, df, json.loads((path / "meta.json").read_text())


def load(path: Path, shown_under: str = "replay") -> Dataset:
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
    return Dataset(path.name, path, df, meta, read_battery(path), shown_under)


def read_battery(path: Path) -> dict:
    """A captured folder's battery.json (the conformance battery's verdicts per server), {} if it ran none."""
    return json.loads((path / "battery.json").read_text()) if (path / "battery.json").exists() else {}


def reader(name: str):
    """The loader for a dataset's kind (its plan's reader); a folder without a plan is read as HTTP."""
    plan = plans.every().get(name)
    return plan.reader() if plan is not None else load


def obtain(name: str, profile: str | None = None, reuse: bool = False, **run_kwargs) -> Dataset:
    """What a notebook cell calls: replay data/<name>, or measure it under smoke/full.
    An echo dataset comes back as an echo.EchoDataset. reuse: a page that reads another
    page's dataset takes, under smoke, the capture that page already made of this very
    commit (a book build runs both) instead of measuring it again."""
    profile = profile or current()
    read = reader(name)
    if profile == "replay":
        path = DATA / name
        if not path.exists():
            raise FileNotFoundError(
                f"data/{name} holds no captured run yet. Measure it with\n"
                f"    python -m iobench run {name} --profile full\n"
                f"or show a brief live run with IOBENCH_PROFILE=smoke.")
        return read(path, "replay")
    if reuse and profile == "smoke" and (earlier := _smoke_capture_of_this_commit(name)) is not None:
        return read(earlier, profile)
    from .runner import run

    return read(run(plans.experiment(name), profile, **run_kwargs), profile)


def _smoke_capture_of_this_commit(name: str) -> Path | None:
    """The scratch folder of a smoke run of `name` made from the commit checked out now, if any: both
    trees clean, so that the commit names the code that measured (an edit since would be measured again)."""
    from .metadata import git
    from .profiles import PROFILES

    path = PROFILES["smoke"].dest(name)
    try:
        made_from = json.loads((path / "meta.json").read_text())["git"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = git()
    same = made_from.get("commit") is not None and made_from.get("commit") == now["commit"]
    return path if same and made_from.get("dirty") is False and now["dirty"] is False else None


def status(root: Path = DATA, book: Path = DATA.parent / "book") -> pd.DataFrame:
    """Every captured dataset under `root`, one row each, from its own meta.json and results.csv: when
    it was measured and for how long, under which profile, from which commit and whether the tree was
    clean, on which machine, how many rows and how many of them are flagged (failed, noisy or outlier
    repeats), and which chapters of `book` read it."""
    readers: dict[str, list[str]] = {}
    for page in sorted(book.rglob("*.md")):
        if "_build" not in page.parts:
            for name in re.findall(r'obtain\("([\w-]+)"', page.read_text()):
                readers.setdefault(name, []).append(page.relative_to(book).with_suffix("").as_posix())
    rows = []
    for meta_file in sorted(root.glob("*/meta.json")):
        meta, folder = json.loads(meta_file.read_text()), meta_file.parent
        df = pd.read_csv(folder / "results.csv")
        start, end = (pd.Timestamp(meta[k]) if meta.get(k) else None for k in ("started_at", "finished_at"))
        flag = lambda col: (df[col].astype(str).str.lower().eq("true") if col in df  # noqa: E731
                            else pd.Series(False, index=df.index))
        ok = flag("ok_run") if "ok_run" in df else flag("ok") if "ok" in df else ~flag("")
        git, machine = meta.get("git", {}), meta.get("machine", {})
        rows.append({
            "dataset": folder.name, "measured": start.strftime("%Y-%m-%d %H:%M UTC") if start else None,
            "minutes": round((end - start).total_seconds() / 60) if start and end else None,
            "profile": meta.get("profile", {}).get("name"), "repeats": meta.get("profile", {}).get("repeats"),
            "rows": len(df), "flagged": int((~ok | flag("noisy") | flag("outlier")).sum()) if len(df) else 0,
            "commit": (git.get("commit") or "")[:7], "clean_tree": git.get("dirty") is False,
            "machine": f"{machine.get('cores', '?')} cores, {machine.get('cpu_model', '?')}, {machine.get('kernel', '?')}",
            "read_by": ", ".join(readers.get(folder.name, [])),
        })
    return pd.DataFrame(rows)
