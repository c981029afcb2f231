"""A captured dataset: load it, summarise its repeats, and say where it came from.

Dataset is every kind's base (each kind's own, with its summary and reader, is in
kinds/<kind>/dataset.py); read_folder is where every kind's reader starts. Which reader a dataset name
needs, and obtaining one (replayed or measured), is the registry's (registry.obtain): the result always
says which profile produced its numbers.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from iobench.data.report import REQUIRED, value_in
from iobench.run.lazy import lazy
from iobench.run.profiles import DATA

pd = lazy("pandas")  # imported at first use: the command line needs neither


def spread(column: str, source: str | None = None) -> dict[str, tuple[str, str]]:
    """A column's median over repeats, with its min and max beside it: column, column_min, column_max."""
    source = source or column
    return {column: (source, "median"), f"{column}_min": (source, "min"), f"{column}_max": (source, "max")}


# A kind's rows that carry the measured process's PSS (a server's highest sample, or a client JVM's own reading
# after its run), summarised as the median over repeats; a dataset captured before its kind's rows had the
# column has none.
PSS_SUMMARY = {"pss_mib": ("pss_kib", lambda s: s.median() / 1024)}


@dataclass(frozen=True)
class Summary:
    """How a kind's repeats become one row per point: the runs that count (`ok`), grouped by the point's
    key columns, each output column an aggregation of a source column (pandas' named aggregation);
    `before` adds columns to the rows, `after` to the summary; `shown` is what a terminal shows."""
    keys: tuple[str, ...]
    columns: Mapping[str, tuple[str, Any]]
    shown: tuple[str, ...]
    ok: str = "ok"
    dropna: bool = True   # False: a key that is empty for some points (NaN) still makes a row
    before: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    after: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    optional: Mapping[str, tuple[str, Any]] = field(default_factory=dict)  # where the rows have their source column

    def of(self, df: pd.DataFrame) -> pd.DataFrame:
        ok = df[df[self.ok]]
        if self.before is not None:
            ok = self.before(ok)
        columns = {**self.columns, **{k: v for k, v in self.optional.items() if v[0] in ok.columns}}
        agg = ok.groupby(list(self.keys), sort=False, dropna=self.dropna).agg(**columns).reset_index()
        return self.after(agg) if self.after is not None else agg


# A run whose machine-speed loop took this many times its usual time was measured on a slower machine (Dataset.slow).
SLOW_FACTOR = 1.3


def machine_name(meta: dict) -> str:
    """A machine as a capture's meta.json names it: cores, CPU and kernel ("?" for what it does not record)."""
    m = meta.get("machine", {})
    return f"{m.get('cores', '?')} × {m.get('cpu_model', '?')}, {m.get('kernel', '?')}"


@dataclass
class Dataset:
    name: str
    path: Path
    df: pd.DataFrame
    meta: dict
    battery: dict
    shown_under: str  # the profile of the session that loaded it

    summarised: ClassVar[Summary]  # each kind's dataset names its own (kinds/<kind>/dataset.py)

    @property
    def produced_by(self) -> str:
        return self.meta["profile"]["name"]

    def machine(self) -> str:
        return machine_name(self.meta)

    def date(self) -> str:
        return self.meta["started_at"][:10]

    def caption(self) -> str:
        """The line every figure of this dataset carries."""
        pin = self.meta["pinning"]
        return (f"{self.name}, {self.produced_by} profile, measured {self.date()} on {self.machine()}; "
                f"server on CPU {pin['server_cpus']}, load generator on CPU {pin['client_cpus']}")

    def origin(self) -> str:
        """Which run produced the numbers, when, at which commit, on which machine: short lines, read in a
        cell's output at the column's width."""
        g = self.meta.get("git", {})
        commit = (g.get("commit") or "unknown")[:10] + (" (with uncommitted changes)" if g.get("dirty") else "")
        how = ("replayed from data/" if self.shown_under == "replay"
               else f"measured just now under the {self.shown_under} profile")
        return (f"Dataset '{self.name}': {how}.\n"
                f"Produced by a {self.produced_by} run, {self.meta['run_id']},\n"
                f"  on {self.meta['started_at']} at commit {commit}.\n"
                f"Machine: {self.machine()}.")

    def describe(self) -> str:
        v = self.meta["versions"]
        ab = v["ab"].removeprefix("This is ").split(" <")[0]  # "ApacheBench, Version 2.3"
        return (self.origin() + "\n"
                f"Tools: {v['wrk'].split(' Copyright')[0]};\n  {ab}; {v['nginx'].removeprefix('nginx version: ')}.")

    def summary(self) -> pd.DataFrame:
        """One row per point: its kind's Summary over the repeats (summarised, below). Grouped once per content of
        the rows (a page quotes dozens of values of one dataset, and grouping them again for each cost seconds):
        rows changed in place or replaced are grouped again, and each caller gets a summary of its own to change."""
        key = fingerprint(self.df)
        cached = self.__dict__.get("_summary")
        if key is None or cached is None or cached[0] != key:
            cached = (key, self.summarised.of(self.df))
            self.__dict__["_summary"] = cached
        return cached[1].copy()

    def table(self) -> pd.DataFrame:
        """The summary's columns a terminal shows (iobench show, obtain)."""
        return self.summary()[list(self.summarised.shown)].round(2)

    def raw(self, raw_file: str) -> str:
        return (self.path / raw_file).read_text()

    def link(self, name: str) -> dict | None:
        """How the run's link `name` ("delay", "veth") was set up, from meta.json; None if it had
        none. (Runs before 2026-11-23 kept their delay link under "link".)"""
        links = self.meta.get("links") or ({"delay": self.meta["link"]} if self.meta.get("link") else {})
        return links.get(name)

    def loop_ms(self) -> float:
        """The host's speed over the whole capture: the median time of the fixed loop timed before and after
        every run (loop_ms_before, loop_ms_after), in ms. Two captures' values set their hosts side by side
        (the loop is the same code since 2026-11-25); NaN for a dataset captured before the loop existed."""
        if "loop_ms_before" not in self.df.columns:
            return float("nan")
        return float(self.df[["loop_ms_before", "loop_ms_after"]].stack().median())

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


def fingerprint(df: pd.DataFrame) -> tuple | None:
    """The content of a frame, cheaply (a hash of every cell, row by row, in order, with the columns' names and
    types): two frames with the same fingerprint summarise the same. None for a frame pandas cannot hash."""
    try:
        rows = pd.util.hash_pandas_object(df, index=True).to_numpy()
    except TypeError:
        return None
    return (tuple(map(str, df.columns)), tuple(map(str, df.dtypes)),
            hashlib.blake2b(rows.tobytes(), digest_size=16).digest())


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


def read_battery(path: Path) -> dict:
    """A captured folder's battery.json (the conformance battery's verdicts per server), {} if it ran none."""
    return json.loads((path / "battery.json").read_text()) if (path / "battery.json").exists() else {}


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
        def flag(col, df=df):
            return df[col].astype(str).str.lower().eq("true") if col in df else pd.Series(False, index=df.index)
        ok = flag("ok_run") if "ok_run" in df else flag("ok") if "ok" in df else ~flag("")
        git, machine = meta.get("git", {}), meta.get("machine", {})
        rows.append({
            "dataset": folder.name, "measured": start.strftime("%Y-%m-%d %H:%M UTC") if start else None,
            "minutes": round((end - start).total_seconds() / 60) if start and end else None,
            "profile": meta.get("profile", {}).get("name"), "repeats": meta.get("profile", {}).get("repeats"),
            "rows": len(df), "flagged": int((~ok | flag("noisy") | flag("outlier")).sum()) if len(df) else 0,
            "commit": (git.get("commit") or "")[:7], "clean_tree": git.get("dirty") is False,
            "machine": f"{machine.get('cores', '?')} cores, {machine.get('cpu_model', '?')}, "
                       f"{machine.get('kernel', '?')}",
            "read_by": ", ".join(readers.get(folder.name, [])),
        })
    return pd.DataFrame(rows)
