"""The reader's machine beside the book's.

A reader re-measures a dataset on their own machine, in the full profile, into a folder of their own (never over
data/), and points IOBENCH_MINE at that folder:

    code/bin/iobench run c-servers --profile full --dest ~/iom-runs/c-servers
    IOBENCH_MINE=~/iom-runs make book

A results page then draws that run beside the published one. Absolute numbers differ from one machine to the next
(and from one hour to the next on a shared one), so both runs are shown as ratios to nginx measured in the same
run, and each says which machine it came from. And it asks the question every benchmark reader has: do the
book's comparisons hold on my machine? The page module's claims (book/claims.py) are evaluated on the book's run
and on the reader's, and set side by side (does_it_hold); a reader's data never fails the build.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from iobench.book.claims import Checked, recording
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


HOLDS, FAILS = "holds", "does not hold"


def checked(values: Callable[..., object], *datasets: Dataset) -> tuple[list[Checked], str | None]:
    """The claims a page module's `values` makes on these datasets (its claims checked, none raised), and why it
    could not finish on them (None: it did): a reader's smaller run may lack a point the page reads, and the
    claims after that point are then not evaluated."""
    asks = "check" in inspect.signature(values).parameters  # a module that checks only where told to
    with recording() as kept:
        try:
            values(*datasets, **({"check": True} if asks else {}))
            why = None
        except Exception as exc:  # a reader's data never fails the build: what stopped it is said instead
            why = f"{type(exc).__name__}: {exc}"
    return kept, why


def _verdicts(claims: list[Checked]) -> dict[str, Checked]:
    """One verdict per sentence, in order: a sentence checked more than once (one server after another) holds
    where every check held; its evidence is the first check that did not, else the first."""
    found: dict[str, Checked] = {}
    for c in claims:
        seen = found.get(c.sentence)
        if seen is None or (seen.holds and not c.holds):
            found[c.sentence] = c
    return found


def _said(c: Checked | None, missing: str) -> str:
    if c is None:
        return missing
    return (HOLDS if c.holds else FAILS) + (f" ({c.figures()})" if c.evidence else "")


def holds_table(book: list[Checked], yours: list[Checked], why: str | None = None) -> pd.DataFrame:
    """The statements of the page, on the book's machine and on yours: holds / does not hold (with the figures
    each side), or not evaluated on your run (and why, where the page's code stopped on it)."""
    b, y = _verdicts(book), _verdicts(yours)
    missing = "not evaluated on your run" + (f": it stopped at {why}" if why else ": your run lacks what it reads")
    rows = [{"statement": s, "book's machine": _said(b.get(s), "not evaluated on the book's run"),
             "yours": _said(y.get(s), missing)} for s in dict.fromkeys([*b, *y])]
    return pd.DataFrame(rows, columns=["statement", "book's machine", "yours"])


def does_it_hold(values: Callable[..., object], books: Mapping[str, Dataset]) -> pd.DataFrame | str:
    """The page's claims on the book's datasets `books` (dataset name -> the published run) and on the reader's
    runs of the same datasets: a table (holds_table), or, where the reader has not measured them all, what to
    measure. `values(*datasets, check=True)` is the page module's function that checks them."""
    yours = {name: mine(name) for name in books}
    lacking = [name for name, ds in yours.items() if ds is None]
    if folder() is None:
        return f"No run of yours: measure {', '.join(books)} and set {ENV} to its folder."
    if lacking:
        return (f"Your folder ({folder()}) has no run of {', '.join(lacking)}: "
                f"this page's claims are evaluated once it has {'it' if len(lacking) == 1 else 'them'}.")
    book_claims, _ = checked(values, *books.values())
    your_claims, why = checked(values, *yours.values())
    table = holds_table(book_claims, your_claims, why)
    first = next(iter(books.values()))
    mine_first = next(iter(yours.values()))
    table.attrs = {"book": f"{first.machine()}, {first.date()}", "yours": f"{mine_first.machine()}, "
                   f"{mine_first.date()}"}
    return table


def show_holds(values: Callable[..., object], books: Mapping[str, Dataset]) -> None:
    """A page's "Does it hold on your machine?" cell: the table of its claims on both machines, each machine
    named above it, or one line saying what to measure (the book's own run alone has nothing to set beside)."""
    from IPython.display import display

    from iobench.data.report import table

    held = does_it_hold(values, books)
    if isinstance(held, str):
        print(held)
        return
    print(f"book:  {held.attrs['book']}\nyours: {held.attrs['yours']}")
    display(table(held))
