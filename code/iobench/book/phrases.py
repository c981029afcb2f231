"""The book's one vocabulary for prose built from data: every phrase a page glues from numbers comes from here.

Each phrase reads as an editor would pass it in every case the data can produce: a range whose ends round alike is
one number ("1.1 times", never "1.1 to 1.1 times"); a count agrees with its verb ("1 of the 18 repeats was", "3 of
the 18 repeats were", "none of the 18 repeats was", "all 18 repeats were"); values that read alike are said once
("all four at 120 %"); a comparison whose sides are all zero says so ("none in either") instead of "0.00 against
0.00"; a missing value (a smoke run's NaN) reads "n/a" and never breaks the page.

    words(3) -> "three"            listing(["a", "b", "c"]) -> "a, b and c"       sentence([...]) -> "A; b."
    span(1.12, 1.14, ".1f", " times") -> "1.1 times"   span(1, 2.5, ".1f") -> "1.0 to 2.5"
    repeats(9800, 10500, 3) -> "repeats from 9,800 to 10,500"     repeats(5, 5, 3) -> "all three repeats at 5"
    span_of(values, ".1f")          the same over the finite values of a column or list
    tally(3, 18, "repeat", "were flagged") -> "3 of the 18 repeats were flagged"
    each({"a": 120, "b": 120}, ".0f", " %") -> "both at 120 %"
    against(0.001, 0.0, ".2f") -> "none in either"      against(0.5, 0.25, ".2f") -> "0.50 against 0.25"
    pairs_by_second([("a", "c"), ("b", "c")]) -> "`a` and `b` below `c`"
    battery_verdict(verdicts) -> ("passes all nine cases", [])
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

WORDS = "no one two three four five six seven eight nine ten eleven twelve".split()
NA = "n/a"


def words(n: int) -> str:
    """Small counts as words, as prose writes them: 0 -> "no", 3 -> "three", 14 -> "14"."""
    return WORDS[n] if 0 <= n < len(WORDS) else str(n)


def listing(names: Iterable[str]) -> str:
    """["a"] -> "a"; ["a", "b", "c"] -> "a, b and c"."""
    names = list(names)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def ids(names: Iterable[str], none: str = "") -> str:
    """Server ids (or other names a reader types) as a list in code type: "`a`, `b` and `c`"; `none` for none."""
    return listing(f"`{n}`" for n in names) or none


def sentence(clauses: Iterable[str], empty: str = "") -> str:
    """Clauses chosen from the data, as one sentence: joined by semicolons, the first letter capitalised, a full
    stop at the end; `empty` where there are none."""
    text = "; ".join(c for c in clauses if c)
    return text[0].upper() + text[1:] + "." if text else empty


def markdown(text: str):
    """Text with Markdown in it (`code`, **bold**) to glue and paste with {glue:md}: pasted with {glue:text},
    its markers would show as they are typed."""
    from IPython.display import Markdown
    return Markdown(text)


def _finite(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def span(lo, hi, spec: str = ".1f", unit: str = "", na: str = NA) -> str:
    """A range as prose: "1.1 to 1.4 times", or one number where both ends read the same ("1.1 times"); the ends in
    the order given (a fall may read "10 to 5"); `na` where either end is missing."""
    a, b = _finite(lo), _finite(hi)
    if a is None or b is None:
        return na
    low, high = format(a, spec), format(b, spec)
    return f"{low}{unit}" if low == high else f"{low} to {high}{unit}"


def span_of(values: Iterable, spec: str = ".1f", unit: str = "", na: str = NA) -> str:
    """span() over the finite values of a column or a list; `na` where there are none. Anything but numbers and
    missing values (a frame's column names, text) is a mistake in the page, not a missing value: TypeError."""
    values = list(values)
    if any(isinstance(v, (str, bytes)) for v in values):
        raise TypeError(f"span_of takes numbers (a column, a list), not {values[:3]!r}...")
    xs = [x for x in (_finite(v) for v in values) if x is not None]
    return span(min(xs), max(xs), spec, unit, na) if xs else na


def repeats(lo, hi, n: int, spec: str = ",.0f", unit: str = "", na: str = NA) -> str:
    """What n repeats measured, as a clause: "repeats from 9,800 to 10,500", "all three repeats at 10,279" (ends
    that read alike), "one repeat" (n = 1: its value is the median beside it), `na` where either end is missing."""
    if _finite(lo) is None or _finite(hi) is None:
        return na
    if int(n) <= 1:
        return "one repeat"
    said = span(lo, hi, spec, unit)
    if " to " not in said:
        return f"{'both' if int(n) == 2 else 'all ' + words(int(n))} repeats at {said}"
    return f"repeats from {said}"


def flagged(items: Iterable[str], noun: str = "repeat", how: str = "flagged as an outlier",
            how_many: str = "flagged as outliers", plural: str = "") -> str:
    """A sentence naming what a run flagged, in every case: "No repeat was flagged as an outlier." / "One repeat
    was flagged as an outlier: X." / "3 repeats were flagged as outliers: X; Y; Z." (each item as the page explains
    it; items joined by semicolons, as they hold commas)."""
    items = list(items)
    if not items:
        return f"No {noun} was {how}."
    if len(items) == 1:
        return f"One {noun} was {how}: {items[0]}."
    return f"{len(items):,} {plural or noun + 's'} were {how_many}: {'; '.join(items)}."


def tally(k: int, n: int, noun: str, verb: str = "", plural: str = "",
          verbs: tuple[str, str] | None = ("was", "were"), spell: bool = False) -> str:
    """k of n things, with the noun and the verb agreeing: "1 of the 18 repeats was flagged", "3 of the 18 repeats
    were", "none of the 18 repeats was", "all 18 repeats were", "both repeats were", "the one repeat was", "no
    repeats were". `verb` is what follows the agreeing verb ("flagged noisy"); `verbs` its singular and plural
    forms ("has", "have"), or None for no verb ("in 2 of the 3 pairs", "in no pair"); spell: counts below 13 as
    words."""
    k, n = int(k), int(n)
    if not 0 <= k <= n:
        raise ValueError(f"tally: {k} of {n}")
    plural = plural or noun + "s"
    say = words if spell else (lambda x: f"{x:,}")
    if verbs is None:
        if n <= 1:
            return f"the one {noun}" if k == 1 else f"no {noun if n == 1 else plural}"
        if k == n:
            return f"{'both' if n == 2 else 'all ' + say(n)} {plural}"
        return f"{'neither' if n == 2 and k == 0 else 'none' if k == 0 else say(k)} of the {say(n)} {plural}"
    one, many = verbs
    tail = f" {verb}" if verb else ""
    if n == 0:
        return f"no {plural} {many}{tail}"
    if n == 1:
        return (f"the one {noun} {one}{tail}" if k == 1 else f"the one {noun} {one} not{tail}")
    if k == n:
        return f"{'both' if n == 2 else 'all ' + say(n)} {plural} {many}{tail}"
    if k == 0:
        return f"{'neither' if n == 2 else 'none'} of the {say(n)} {plural} {one}{tail}"
    return f"{say(k)} of the {say(n)} {plural} {one if k == 1 else many}{tail}"


def each(values: Mapping[str, object], spec: str = ".0f", unit: str = "", at: str = " at ") -> str:
    """Named values, each said once per value: {"a": 120, "b": 120, "c": 120, "d": 120} -> "all four at 120 %";
    {"a": 120, "b": 100} -> "a at 120 % and b at 100 %"; {"a": 1, "b": 1, "c": 2} -> "a and b at 1; c at 2"."""
    groups: dict[str, list[str]] = {}
    for name, v in values.items():
        x = _finite(v)
        groups.setdefault(NA if x is None else f"{format(x, spec)}{unit}", []).append(name)
    if len(groups) == 1 and len(values) > 1:
        (shown,) = groups
        return f"{'both' if len(values) == 2 else 'all ' + words(len(values))}{at}{shown}"
    parts = [f"{listing(names)}{at}{shown}" for shown, names in groups.items()]
    return listing(parts) if all(len(names) == 1 for names in groups.values()) else "; ".join(parts)


def against(a, b, spec: str = ".2f", unit: str = "", none: str = "none in either", na: str = NA) -> str:
    """Two values side by side: "0.50 against 0.25"; "0.25 in both" where they read the same; `none` where both read
    as zero (never "0.00 against 0.00"); `na` where either is missing."""
    x, y = _finite(a), _finite(b)
    if x is None or y is None:
        return na
    left, right = format(x, spec), format(y, spec)
    if _finite(left) == 0 and _finite(right) == 0:
        return none
    return f"{left}{unit} in both" if left == right else f"{left}{unit} against {right}{unit}"


def pairs_by_second(pairs: Iterable[tuple[str, str]], said: str = "{firsts} below {second}",
                    code: bool = True) -> str:
    """Ordered pairs said once per second member: [("a", "c"), ("b", "c"), ("d", "e")] -> "`a` and `b` below `c`
    and `d` below `e`" (markdown: ids in backticks unless code=False). `said` words each group ({firsts}, {second}):
    "{second}'s repeats overlapped those of {firsts}"."""
    mark = (lambda x: f"`{x}`") if code else str
    groups: dict[str, list[str]] = {}
    for a, b in pairs:
        groups.setdefault(b, []).append(a)
    parts = [said.format(firsts=listing(mark(a) for a in firsts), second=mark(b)) for b, firsts in groups.items()]
    return "; ".join(parts) if any(len(f) > 1 for f in groups.values()) and len(parts) > 1 else listing(parts)


def battery_verdict(verdicts: list[dict]) -> tuple[str, list[str]]:
    """A server's battery result as a clause ("passes all nine cases", "fails two of the
    nine cases (a and b)") and the cases it failed."""
    failed = [v["case"] for v in verdicts if not v["passed"]]
    if not verdicts:
        return "was not checked by the battery", failed
    if not failed:
        return f"passes all {words(len(verdicts))} cases", failed
    return f"fails {words(len(failed))} of the {words(len(verdicts))} cases ({listing(failed)})", failed


def grouped(values: Mapping[str, object], spec: str = ".0f", unit: str = "", at: str = " at ") -> str:
    """Named values grouped by what they read as, every name said (each() says "all four at 120 %" instead):
    {"a": 1, "b": 1, "c": 64, "d": 70} -> "a and b at 1; c at 64; d at 70"; {"a": 1, "b": 64} -> "a at 1 and b at
    64"; {"a": 64, "b": 64} -> "a and b at 64". A list of many numbers reads as its few distinct ones."""
    groups: dict[str, list[str]] = {}
    for name, v in values.items():
        x = _finite(v)
        groups.setdefault(NA if x is None else f"{format(x, spec)}{unit}", []).append(name)
    parts = [f"{listing(names)}{at}{shown}" for shown, names in groups.items()]
    return listing(parts) if all(len(names) == 1 for names in groups.values()) else "; ".join(parts)
