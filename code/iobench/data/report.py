"""What the chapters compute from a summary to quote it: one value, a number as prose shows it, a table as every
page shows it. Tested here once, instead of a helper per page; the phrases built from them are
iobench/book/phrases.py.

    value_in(summary, "rps", server="c-epoll", connections=40)        one number, or KeyError
    value_in(summary, "rps", default=nan, server="c-uring")          NaN where the point is absent
"""
from __future__ import annotations

import math

import re

REQUIRED = object()  # value_in's default: a missing point is an error, not a number


def value_in(frame, column: str, default=REQUIRED, **where) -> float:
    """The one row of frame where every column named in `where` has the given value (a
    column missing from the frame, or the index, matches by the index: frame.loc[...]):
    its `column`, as a float. No such row or column: `default` if given (NaN for a point a
    smoke run does not measure), else KeyError. More than one row: always KeyError."""
    sel = frame
    for k, v in where.items():
        if k in sel.columns:
            sel = sel[sel[k] == v]
        else:
            sel = sel[sel.index == v]
    if len(sel) == 1 and (column in sel.columns or default is REQUIRED):
        return float(sel.iloc[0][column])
    if len(sel) == 1:  # a column this run did not measure (a smoke run's pivot)
        return default
    if len(sel) == 0 and default is not REQUIRED:
        return default
    raise KeyError(f"{len(sel)} rows match {where}")


def number(x, fmt: str = ",.0f") -> str:
    """A measured value as prose quotes it, or "n/a" where a run has none (NaN, None: a server
    that failed, a counter a smoke run could not read; an infinity: a ratio over zero), so that a page
    never dies formatting it. A small negative value that rounds to zero reads "0.0", never "-0.0"."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "n/a"
    if not math.isfinite(x):
        return "n/a"
    said = format(x, fmt)
    return said[1:] if said.startswith("-") and not any(c in "123456789" for c in said) else said


def table(frame, decimals: int = 2, na: str = "–"):
    """A DataFrame (or Series) as every page shows it: no row numbers, every column named, numbers
    with thousands separators and, per column, as many decimals as its values need (at most
    `decimals`), and "–" where a run has no value. An index that means something (a named one,
    a MultiIndex, labels such as server ids) becomes leading columns; a plain row count goes.
    The site test fails a page that shows a table with its index."""
    import pandas as pd

    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    frame = _named_columns(frame)
    idx = frame.index
    plain = idx.nlevels == 1 and idx.name is None and pd.api.types.is_integer_dtype(idx.dtype)
    if not plain:
        names = [n if n is not None else ("" if idx.nlevels == 1 else f"level {i}")
                 for i, n in enumerate(idx.names)]
        frame = frame.rename_axis(names).reset_index()
    frame = frame.reset_index(drop=True)
    formats = {}
    for col in frame.columns:
        values = frame[col]
        if pd.api.types.is_bool_dtype(values.dtype):
            continue
        if pd.api.types.is_integer_dtype(values.dtype):
            formats[col] = "{:,d}"
        elif pd.api.types.is_float_dtype(values.dtype):
            formats[col] = f"{{:,.{_decimals(values, decimals)}f}}"
    styled = frame.style.hide(axis="index").format(formats, na_rep=na).format_index(header, axis=1)
    return styled.set_table_attributes(f'class="{KEYED}"') if short_keys(frame) else styled


KEYED = "iom-keyed"   # book.css: a table whose first column holds short keys (server ids) never wraps them


def short_keys(frame, most: int = 24) -> bool:
    """Whether a table's first column holds short keys (an id such as "netty-4.2.20", a size): kept on one line, it
    never breaks inside a name at its hyphen; a column of titles or sentences wraps as text does."""
    if not len(frame.columns):
        return False
    first = frame.iloc[:, 0].astype(str)
    return bool(len(first)) and int(first.str.len().max()) <= most and not first.str.contains(" ").any()


def header(name) -> str:
    """A column's name as a table's header shows it: in words ("server cpu us per req", not
    "server_cpu_us_per_req"), so that it wraps between them."""
    return str(name).replace("_", " ")


def _named_columns(frame):
    """A pivot's column labels that are numbers say what they count ("connections 10", not "10"): a table
    without its index has no corner to show the columns' axis names in."""
    import pandas as pd

    cols = frame.columns
    if all(n is None for n in cols.names):
        return frame

    def label(name, v):
        numeric = pd.api.types.is_number(v) and not pd.api.types.is_bool(v)
        return f"{name} {v:g}" if name is not None and numeric else v

    frame = frame.copy()
    if cols.nlevels == 1:
        frame.columns = pd.Index([label(cols.name, v) for v in cols])
    else:
        frame.columns = pd.MultiIndex.from_tuples([tuple(label(n, v) for n, v in zip(cols.names, t)) for t in cols])
    return frame


def _decimals(values, most: int) -> int:
    """The fewest decimals (up to `most`) that show every value of a column as rounded to `most`."""
    finite = values[values.notna()].round(most)
    for d in range(most + 1):
        if (finite.round(d) == finite).all():
            return d
    return most


_LEGACY_CONCURRENT = re.compile(r"(\d+) of (\d+) concurrent clients failed, e\.g\. client (\d+): (.*)")


def battery_counts(verdict: dict) -> dict:
    """What a battery case counted (concurrent_500: clients, failed, first_failed_client,
    first_failure). Batteries captured before cases kept counts have only the sentence;
    theirs is read back from it here, once, so that no chapter parses English."""
    if "counts" in verdict:
        return verdict["counts"]
    m = _LEGACY_CONCURRENT.match(verdict.get("detail", ""))
    if m:
        return {"clients": int(m[2]), "failed": int(m[1]), "first_failed_client": int(m[3]), "first_failure": m[4]}
    return {}
