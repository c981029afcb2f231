"""The reader's machine beside the book's.

A reader re-measures a dataset on their own machine, in the full profile, into a folder of their own (never over
data/), and points IOBENCH_MINE at that folder:

    code/bin/iobench run c-servers --profile full --dest ~/iom-runs/c-servers
    IOBENCH_MINE=~/iom-runs make book

A results page then draws that run beside the published one. Absolute numbers differ from one machine to the next
(and from one hour to the next on a shared one), so both runs are shown as ratios to nginx measured in the same
run, and each says which machine it came from.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from iobench.data.dataset import Dataset
from iobench.kinds.http.dataset import KEYS
from iobench.registry import reader
from iobench.run.profiles import DATA

ENV = "IOBENCH_MINE"
REFERENCE = "nginx"


def folder() -> Path | None:
    """The reader's folder of runs (IOBENCH_MINE), or None. It may not be data/ or inside it."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if path == DATA.resolve() or DATA.resolve() in path.parents:
        raise ValueError(f"{ENV}={value} is the book's data/: a reader's runs go into a folder of their own")
    return path


def mine(name: str) -> Dataset | None:
    """The reader's run of dataset `name`, if their folder holds one."""
    base = folder()
    if base is None or not (base / name / "results.csv").exists():
        return None
    return reader(name)(base / name, "mine")


def relative(summary: pd.DataFrame, column: str = "rps", reference: str = REFERENCE) -> pd.DataFrame:
    """Each server's `column` over the reference server's at the same point of the same run: one row per server
    and point (the summary's keys), the ratio in `column`. Points the reference did not measure are left out."""
    keys = [k for k in KEYS if k in summary.columns and k not in ("server", "model", "lang")]
    ref = summary[summary["server"] == reference][keys + [column]].rename(columns={column: "_ref"})
    both = summary[["server"] + keys + [column]].merge(ref, on=keys, how="inner")
    both[column] = both[column] / both["_ref"]
    return both.drop(columns="_ref")


def beside(book: Dataset, yours: Dataset, column: str = "rps", reference: str = REFERENCE, **where) -> pd.DataFrame:
    """The published run and the reader's, side by side as ratios to `reference` in their own run: one row per
    server and point both measured (filtered by `where`), columns `book` and `yours`; `attrs` names each machine."""
    def ratios(ds: Dataset, name: str) -> pd.DataFrame:
        r = relative(ds.summary(), column, reference)
        for k, v in where.items():
            r = r[r[k] == v]
        return r.rename(columns={column: name})
    keys = [k for k in KEYS if k in book.summary().columns and k not in ("model", "lang")]
    table = ratios(book, "book").merge(ratios(yours, "yours"), on=keys, how="inner")
    table.attrs = {"book": f"{book.machine()}, {book.date()}", "yours": f"{yours.machine()}, {yours.date()}",
                   "column": column, "reference": reference}
    return table
