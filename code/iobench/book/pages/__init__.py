"""The analysis behind each results page, as tested code: one module per page (pages/rpc.py for book/java/rpc.md).

A page module turns the page's datasets into the values its prose glues, and checks the claims its sentences
make, from the same data:

    values = rpc.provider(registry.obtain("rpc-provider"))   # {name: value}; claims checked inside
    glue_all(values)                                          # the page's one hidden cell

A value is text (pasted with {glue:text}, formatted as the page wants it) or phrases.markdown(...) (pasted with
{glue:md}); every phrase built from numbers comes from phrases, the book's one vocabulary. A function takes a
dataset (or a few) and returns plain values, so it can be tested on small fixture datasets: equal ends, zeros,
one repeat, and a smoke capture (the smoke tests of each kind feed their capture to the page's module), where
every sentence must still read as an editor would pass it (code/tools/prose_check.py).

What a reader learns from (the pandas, the tables, the figures) stays visible on the page; only the values for
the prose come from here. A page keeps at most HIDDEN_LINES lines of code hidden from its reader (a test counts).
"""
from __future__ import annotations

from collections.abc import Mapping

HIDDEN_LINES = 100


def key(sid: str) -> str:
    """A server id as part of a glue name: c-epoll -> c_epoll."""
    return sid.replace("-", "_")


def checks(ds, check: bool | None = None) -> bool:
    """Whether a page module checks its claims on `ds`: on every capture the book quotes, never on a smoke one (a
    run of a second or two supports no comparison: its sentences must read, not hold); `check` decides instead
    where it is given."""
    return ds.meta.get("profile", {}).get("name") != "smoke" if check is None else check


def text(value) -> str:
    """What a glued value reads as: its text, or the Markdown's source."""
    return getattr(value, "data", value) if not isinstance(value, str) else value


def glue_all(*parts: Mapping) -> None:
    """Glue every value of every part under its name, without showing it (names must be unique across parts)."""
    from myst_nb import glue
    seen: set[str] = set()
    for part in parts:
        for name, value in part.items():
            if name in seen:
                raise ValueError(f"{name!r} is glued twice")
            seen.add(name)
            glue(name, value, display=False)
