"""The reader's machine beside the book's.

A reader measures every results page's datasets on their own machine (iobench mine, make mine: the brief "mine"
profile, about half an hour on the book's 2-core machine, a page's alone with --only), or one dataset in the full
profile, into a folder of their own (never data/), and points IOBENCH_MINE at that folder:

    code/bin/iobench mine --dest ~/iom-runs                 (or: make mine)
    code/bin/iobench run c-servers --profile full --dest ~/iom-runs/c-servers
    IOBENCH_MINE=~/iom-runs make book

A results page then draws that run beside the published one (show_beside). Absolute numbers differ from one
machine to the next (and from one hour to the next on a shared one), so both runs are shown as ratios to a
reference measured in the same run (each page's comparisons are in BESIDE: nginx for the HTTP servers, the C
generator for the clients, the page's own baseline elsewhere), and each says which machine it came from.
And it asks the question every benchmark reader has: do the book's comparisons hold on my machine? The page
module's claims (book/claims.py) are evaluated on the book's run and on the reader's, and set side by side
(does_it_hold); a reader's data never fails the build.
"""
from __future__ import annotations

import inspect
import numbers
import os
import re
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from iobench.book.claims import Checked, recording
from iobench.data.dataset import Dataset
from iobench.run.lazy import lazy
from iobench.registry import reader
from iobench.run.profiles import DATA
from iobench.run.results import within

np, pd = lazy("numpy"), lazy("pandas")  # imported at first use: the command line needs neither

ENV = "IOBENCH_MINE"


def folder_is_data(path: Path) -> bool:
    """`path` is the book's data/ or inside it (symbolic links resolved)."""
    return within(Path(path).expanduser(), DATA)


def folder() -> Path | None:
    """The reader's folder of runs (IOBENCH_MINE), or None. It may not be data/ or inside it."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if folder_is_data(path):
        raise ValueError(f"{ENV}={value} is the book's data/: a reader's runs go into a folder of their own")
    return path


def mine(name: str) -> Dataset | None:
    """The reader's run of dataset `name`, if their folder holds one."""
    base = folder()
    if base is None or not (base / name / "results.csv").exists():
        return None
    return reader(name)(base / name, "mine")


def machine_line(*datasets: Dataset) -> str:
    """Which machine a run came from, as the reader compares two: cores and CPU, kernel, JDK, whether it was a
    virtual machine, and the CPU time its host stole from the server's and the generator's cores during the
    measured runs (a virtual machine's neighbours), and when it was measured. Several datasets of one run (a
    page's) are said once: each machine they name, the steal over all their runs, the days they were measured."""
    def name(ds: Dataset) -> str:
        m, v = ds.meta.get("machine", {}), ds.meta.get("versions", {})
        jdk = v.get("jdk")
        jdk = jdk.get("version", "") if isinstance(jdk, dict) else str(jdk or "")
        jdk = re.search(r'version "([^"]+)"', jdk)
        virt = {True: "a virtual machine", False: "not virtualised"}.get(m.get("virtualised"),
                                                                         "virtualisation not recorded")
        return f"{ds.machine()}, {'JDK ' + jdk.group(1) if jdk else 'no JDK recorded'}, {virt}"

    stolen, runs = [], 0
    for ds in datasets:
        cols = [c for c in ("server_steal_s", "client_steal_s") if c in ds.df.columns]
        runs += len(ds.df)
        if cols and not ds.df[cols].isna().all().all():
            stolen.append(float(ds.df[cols].fillna(0).to_numpy().sum()))
    if not stolen:
        steal = "steal not recorded"
    else:
        total = sum(stolen)
        steal = (f"no CPU time stolen in {runs:,} runs" if total == 0 else
                 f"{total:.2f} s of CPU time stolen in {runs:,} runs")
    dates = sorted(dict.fromkeys(ds.date() for ds in datasets))
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return f"{'; '.join(dict.fromkeys(name(ds) for ds in datasets))}, {steal}; measured {when}"


@dataclass(frozen=True)
class Ratio:
    """One comparison a results page draws of both machines. At the point `where` of dataset `dataset`, each
    `by` (a server, a client, a generator) has one row (or one per value of `across`); its `column` is divided
    by `reference`'s at the same point of the same run. A ratio, not the figure itself: absolute numbers differ
    from one machine to the next, a ratio measured in one run is what carries over, or does not."""
    dataset: str
    column: str
    reference: str
    title: str                      # what the panel shows, as its title says it
    where: Mapping = field(default_factory=dict)
    by: str = "server"
    across: str | None = None       # a column whose values each get a row (a connection count, a size)
    unit: str = ""                  # the across values' unit, as the row labels say it: "connections"
    unit_one: str = ""              # the same of one: "connection" (the unit where not given)

    def label(self, item: str, value) -> str:
        """A row's label: the item, and where the panel has rows across a column, at which value."""
        if self.across is None:
            return item
        unit = (self.unit_one or self.unit) if value == 1 else self.unit
        if isinstance(value, numbers.Number):
            value = f"{value:,g}"
        return f"{item}, {value}{' ' + unit if unit else ''}"

    def ratios(self, summary: pd.DataFrame) -> pd.DataFrame:
        """One row per `by` (and `across` value) but the reference's: `row` (its label), `ratio`. A point the
        reference lacks, or a figure that is missing, gives no row."""
        s = summary
        for k, v in self.where.items():
            s = s[s[k] == v]
        group = [self.by] + ([self.across] if self.across else [])
        if s.empty or self.column not in s.columns:
            return pd.DataFrame(columns=["row", self.by, "ratio"])
        s = s.groupby(group, sort=False, dropna=False)[self.column].median().reset_index()
        ref = s[s[self.by] == self.reference].drop(columns=self.by).rename(columns={self.column: "_ref"})
        if self.across is None:
            both = s.assign(_ref=ref["_ref"].iloc[0] if len(ref) else float("nan"))
        else:
            both = s.merge(ref, on=self.across, how="left")
        both = both[both[self.by] != self.reference]
        both = both.assign(ratio=(both[self.column] / both["_ref"]).astype(float))
        both = both[np.isfinite(both["ratio"])]
        rows = [self.label(item, value) for item, value in
                zip(both[self.by], both[self.across] if self.across else [None] * len(both))]
        return pd.DataFrame({"row": rows, self.by: both[self.by].tolist(), "ratio": both["ratio"].tolist()})

    def beside(self, book: Dataset, yours: Dataset) -> pd.DataFrame:
        """Both runs' ratios, one row per label both have: `row`, `book`, `yours`; `attrs` names each machine,
        the panel's title and axis, and the rows only one run has."""
        b = self.ratios(book.summary()).rename(columns={"ratio": "book"})
        y = self.ratios(yours.summary()).rename(columns={"ratio": "yours"})
        table = b.merge(y[["row", "yours"]], on="row", how="inner")
        table.attrs = {"book": machine_line(book), "yours": machine_line(yours), "title": self.title,
                       "xlabel": f"ratio to {self.reference} in the same run (1: as {self.reference})",
                       "server_column": self.by,
                       "only_book": [r for r in b["row"] if r not in set(y["row"])],
                       "only_yours": [r for r in y["row"] if r not in set(b["row"])]}
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


def _missing(value) -> bool:
    """A figure a claim was given that the run does not have: NaN, or NaN inside a list or a mapping of figures."""
    if isinstance(value, Mapping):
        return any(_missing(v) for v in value.values())
    if isinstance(value, (list, tuple, pd.Series)):
        return any(_missing(v) for v in value)
    try:
        return value != value  # NaN, and numpy's
    except (TypeError, ValueError):
        return False


def figure(value, room: int = 60) -> str:
    """A claim's evidence as a reader reads it: a number to four significant digits (numpy's as Python's), a
    mapping or a list of them shortened to what fits in `room` characters."""
    if isinstance(value, Mapping):
        parts = [f"{k} {figure(v)}" for k, v in value.items()]
    elif isinstance(value, (list, tuple, set, pd.Series)):
        parts = [figure(v) for v in (value.tolist() if isinstance(value, pd.Series) else value)]
    elif isinstance(value, bool) or value is None:
        return str(value).lower()
    elif isinstance(value, numbers.Number):
        v = float(value)
        return "n/a" if v != v else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    else:
        return str(value)
    out = ""
    for i, part in enumerate(parts):
        if len(out) + len(part) > room and i:
            return out + ", ..."
        out += (", " if i else "") + part
    return out


def figures(c: Checked) -> str:
    """Every figure a claim was given, name: value; short."""
    return "; ".join(f"{k}: {figure(v)}" for k, v in c.evidence.items())


def _said(c: Checked | None, missing: str) -> str:
    if c is None:
        return missing
    if not c.holds and any(_missing(v) for v in c.evidence.values()):  # NaN compares false: nothing was decided
        return f"not evaluated on your run: a figure it needs is missing there ({figures(c)})"
    return (HOLDS if c.holds else FAILS) + (f" ({figures(c)})" if c.evidence else "")


def _elsewhere(book: Checked | None, yours: Checked | None) -> str:
    """Why the reader's verdict is not the book's sentence: it was decided at another place in the data (another
    highest level, fewer repeats: the claim's `at`), or "" where it was decided where the book's was."""
    if book is None or yours is None or book.at == yours.at:
        return ""
    return (f"not evaluated on your run: the book decides it at {figure(book.at)}, your run could only at "
            f"{figure(yours.at)}")


def holds_table(book: list[Checked], yours: list[Checked], why: str | None = None) -> pd.DataFrame:
    """The statements of the page, on the book's machine and on yours: holds / does not hold (with the figures
    each side), or not evaluated on your run (and why: the page's code stopped on it, the run lacks what it
    reads, or it could decide the claim only at another place in the data than the book did)."""
    b, y = _verdicts(book), _verdicts(yours)
    missing = "not evaluated on your run" + (": the page's code stopped before it (above)" if why else
                                             ": your run lacks what it reads")
    rows = [{"statement": s, "book's machine": _said(b.get(s), "not evaluated on the book's run"),
             "yours": _elsewhere(b.get(s), y.get(s)) or _said(y.get(s), missing)} for s in dict.fromkeys([*b, *y])]
    return pd.DataFrame(rows, columns=["statement", "book's machine", "yours"])


def does_it_hold(values: Callable[..., object], books: Mapping[str, Dataset]) -> pd.DataFrame | str:
    """The page's claims on the book's datasets `books` (dataset name -> the published run) and on the reader's
    runs of the same datasets: a table (holds_table), or, where the reader has not measured them all, what to
    measure. `values(*datasets, check=True)` is the page module's function that checks them."""
    if folder() is None:
        return f"No run of yours: measure {', '.join(books)} and set {ENV} to its folder."
    yours = {name: mine(name) for name in books}
    lacking = [name for name, ds in yours.items() if ds is None]
    if lacking:
        return (f"Your folder ({folder()}) has no run of {', '.join(lacking)}: "
                f"this page's claims are evaluated once it has {'it' if len(lacking) == 1 else 'them'}.")
    book_claims, _ = checked(values, *books.values())
    your_claims, why = checked(values, *yours.values())
    table = holds_table(book_claims, your_claims, why)
    table.attrs = {"book": machine_line(next(iter(books.values()))),
                   "yours": machine_line(next(iter(yours.values()))), "stopped": why}
    return table


def holds_said(table: pd.DataFrame) -> str:
    """The table in one sentence: how many of the page's statements hold on the reader's machine, how many do
    not, how many the reader's run could not evaluate."""
    from iobench.book.phrases import listing
    said = table["yours"]
    n, held = len(said), int(said.map(lambda t: t == HOLDS or t.startswith(HOLDS + " (")).sum())
    failed = int(said.str.startswith(FAILS).sum())
    missing = n - held - failed
    if n == 1:
        return ("The page's one statement " + ("holds on your machine." if held else
                "does not hold on your machine." if failed else "was not evaluated on your run."))

    if failed == n:
        return f"Of the page's {n:,} statements, {'neither' if n == 2 else 'none'} holds on your machine."

    def count(k: int, one: str, many: str) -> str:
        return f"{'both' if n == 2 else f'all {n:,}'} {many}" if k == n else f"{k:,} {one if k == 1 else many}"
    here = " on your machine"
    clauses = ([count(held, "holds" + here, "hold" + here)] if held else []) + \
              ([count(failed, "does not hold", "do not hold") + ("" if held else here)] if failed else []) + \
              ([count(missing, "was not evaluated on your run", "were not evaluated on your run")] if missing else [])
    return f"Of the page's {n:,} statements, {listing(clauses)}."


def show_holds(values: Callable[..., object], books: Mapping[str, Dataset]) -> None:
    """A page's "Does it hold on your machine?" cell: the table of its claims on both machines, each machine
    named above it, or one line saying what to measure (the book's own run alone has nothing to set beside)."""
    from IPython.display import display

    from iobench.data.report import table

    held = does_it_hold(values, books)
    if isinstance(held, str):
        print(held)
        return
    lines = [f"book:  {held.attrs['book']}", f"yours: {held.attrs['yours']}", holds_said(held)]
    if held.attrs.get("stopped"):
        lines.append(f"On your run the page's code stopped at {held.attrs['stopped'][:160]}: the statements after "
                     "that point were not evaluated.")
    print("\n".join(textwrap.fill(line, 80, subsequent_indent="       ") for line in lines))
    display(table(held))


def glue_key(page: str) -> str:
    """The name a page's figure of both machines glues its caption under: fig_mine_c_results for c/results."""
    return "fig_mine_" + re.sub(r"\W+", "_", page)


def brief_said(yours: Mapping[str, Dataset]) -> str:
    """What a brief run (the mine profile) means for its ratios, or "" for a run in the book's own profile."""
    profiles = {ds.meta.get("profile", {}).get("name"): ds.meta.get("profile", {}) for ds in yours.values()}
    brief = profiles.get(PROFILE)
    if not brief:
        return ""
    from iobench.run.profiles import PROFILES
    full = PROFILES["full"]

    def said(p: Mapping, times: str) -> str:
        return (f"{times} for {p['duration_s']:g} s after {p['warmup_s']:g} s of warm-up ({p['jvm_warmup_s']:g} s "
                f"for a JVM's load generator, {p['server_jvm_warmup_s']:g} s for a JVM server)")
    return (f"Your run is the brief '{PROFILE}' profile: {said(brief, 'each point measured once')}; the book's "
            f"measures {said(vars(full), f'each point {full.repeats} times')}. "
            "A JVM whose compiler has not finished costs more per request, so a Java ratio far from the book's is "
            "worth measuring again in the full profile (--profile full) before it is read as your machine's.")


def _jvm(ratio: Ratio, item: str) -> bool:
    """Whether a row of this comparison measured a JVM: a Java server, or any echo server, RPC provider or HTTP
    client but the C generator."""
    from iobench import registry
    from iobench.servers import manifest
    entry = manifest.SERVERS.get(item)
    if entry is not None:
        return entry.lang == "Java"
    return registry.kind_of(registry.get(ratio.dataset)).name in ("echo", "rpc", "clients") and item != "iom-openloop"


def show_beside(page: str, books: Mapping[str, Dataset]) -> None:
    """A results page's figure of both machines: each of its comparisons (BESIDE[page]) as ratios to the
    reference in the same run, the book's and the reader's, both machines named; or one line saying what to
    measure. Run of the reader's or not, the page builds: nothing here raises on a reader's data."""
    from myst_nb import glue

    from iobench.book import plots

    if folder() is None:
        print(f"No run of yours to draw: measure this page's datasets (code/bin/iobench mine --only {page}) "
              f"and set {ENV} to their folder.")
        return
    tables, lines, lacking, yours = [], [], [], {}
    for ratio in BESIDE[page]:
        run = mine(ratio.dataset)
        if run is None:
            lacking.append(ratio.dataset)
            continue
        yours[ratio.dataset] = run
        try:
            table = ratio.beside(books[ratio.dataset], run)
        except Exception as exc:  # a reader's data never fails the build: what went wrong is said instead
            lines.append(f"{ratio.title}: not drawn ({type(exc).__name__}: {exc}).")
            continue
        if not len(table):
            lines.append(f"{ratio.title}: your run has none of the book's points here.")
        elif table.attrs["only_book"]:
            n = len(table.attrs["only_book"])
            lines.append(f"{ratio.title}: {n:,} of the book's rows {'is' if n == 1 else 'are'} not in your run "
                         f"({figure(table.attrs['only_book'], 50)}).")
        tables.append((ratio, table))
    drawn = [t for _, t in tables if len(t)]
    shown = list(dict.fromkeys(r.dataset for r, t in tables if len(t)))
    said = [f"book:  {machine_line(*(books[n] for n in shown))}",
            f"yours: {machine_line(*(yours[n] for n in shown))}"] if drawn else []
    for t in drawn:  # the caption names each machine once, over the page's datasets
        t.attrs.update(book=said[0][7:], yours=said[1][7:])
    if lacking:
        said.append(f"Your folder ({folder()}) has no run of {', '.join(dict.fromkeys(lacking))}: "
                    "its comparison is drawn once it has.")
    if any(_jvm(ratio, item) for ratio, t in tables for item in t.get(ratio.by, [])):
        lines.append(brief_said(yours))
    print("\n".join(textwrap.fill(line, 80, subsequent_indent="       ", break_on_hyphens=False)
                    for line in said + lines if line))
    if drawn:
        fig = plots.beside(drawn)
        glue(glue_key(page), plots.caption(fig), display=False)


# ---- measuring a reader's runs: iobench mine ---------------------------------------------------------------

# Every results page and the datasets its "Does it hold on your machine?" cell reads (the page's claims need them
# all), in the book's order.
PAGES = {
    "method/measuring": ("baselines",),
    "method/open-loop": ("open-loop", "open-loop-crosscheck"),
    "c/results": ("c-servers", "idle-connections"),
    "c/source-reproduction": ("ab-grid",),
    "java/results": ("java-servers", "idle-connections"),
    "java/reproduce-000": ("seed-000",),
    "java/mina-netty-results": ("echo-sweep", "echo-experiments", "echo-split-rate"),
    "java/rpc": ("rpc-provider",),
    "clients/http-clients": ("http-clients",),
    "synthesis/many-connections": ("idle-connections", "ten-thousand", "io-uring"),
    "synthesis/side-by-side": ("scale", "idle-connections", "jvm-memory"),
}
PROFILE = "mine"

# What each results page draws of both machines: a ratio to a reference measured in the same run (nginx for the
# HTTP servers, the C generator for the clients, the page's own baseline elsewhere), at points the brief mine
# profile measures as the book did.
_KEEPALIVE = {"tool": "wrk", "mode": "keepalive", "work_ms": 0.0, "pipeline": 1, "idle_conns": 0}
BESIDE = {
    "method/measuring": (
        Ratio("baselines", "rps", "nginx", "Requests/s with wrk at 40 connections",
              {"tool": "wrk", "connections": 40, "pipeline": 1}, across="mode"),),
    "method/open-loop": (
        Ratio("open-loop", "capacity_rps", "nginx", "Capacity (the closed loop's rate) at 40 connections",
              {"loop": "closed", "connections": 40, "work_ms": 0.0}),
        Ratio("open-loop-crosscheck", "p99_ms", "openloop", "p99 latency of c-epoll at a fixed rate, vegeta's over "
              "the book's generator's", {"server": "c-epoll", "loop": "open"}, by="tool", across="rate",
              unit="requests/s")),
    "c/results": (
        Ratio("c-servers", "cpu_us_per_req", "nginx", "CPU per request at 40 connections",
              {**_KEEPALIVE, "connections": 40}),),
    "c/source-reproduction": (
        Ratio("ab-grid", "rps", "c-epoll", "Requests/s with ab, a connection per request, 100 at a time",
              {"tool": "ab", "mode": "close", "connections": 100, "requested": 1000}),),
    "java/results": (
        Ratio("java-servers", "cpu_us_per_req", "nginx", "CPU per request at 40 connections",
              {**_KEEPALIVE, "connections": 40}),),
    "java/reproduce-000": (
        Ratio("seed-000", "rps", "java-netty", "Requests/s at 40 connections, 20 ms of work each",
              {"connections": 40, "work_ms": 20.0}),),
    "java/mina-netty-results": (
        Ratio("echo-sweep", "tps", "netty-4.2.20", "Echoes per second on loopback, 32 connections",
              {"experiment": "sweep", "link": "lo", "variant": "defaults"}, across="size", unit="B"),),
    "java/rpc": (
        Ratio("rpc-provider", "cpu_us_per_req", "rpc-netty", "CPU per call, 64 connections, closed loop",
              {"experiment": "sweep", "connections": 64}),
        Ratio("rpc-provider", "achieved_rps", "rpc-netty", "Calls per second, 64 connections, closed loop",
              {"experiment": "sweep", "connections": 64})),
    "clients/http-clients": (
        Ratio("http-clients", "client_cpu_us_per_req", "iom-openloop", "Client CPU per request at half the "
              "ceiling, 16 connections, 10 ms of delay",
              {"experiment": "equal", "delay_ms": 10, "fraction": 0.5, "connections": 16},
              by="client"),),
    "synthesis/many-connections": (
        Ratio("ten-thousand", "cpu_us_per_req", "nginx", "CPU per request at 10,000 connections",
              {**_KEEPALIVE, "connections": 10000}),
        Ratio("idle-connections", "pss_per_idle_kib", "nginx", "Memory (PSS) per idle connection, 1,000 idle",
              {"idle_conns": 1000}),
        Ratio("io-uring", "cpu_us_per_req", "nginx", "CPU per request, io_uring and epoll",
              {"tool": "wrk", "mode": "keepalive", "pipeline": 1}, across="connections", unit="connections",
              unit_one="connection")),
    "synthesis/side-by-side": (
        Ratio("scale", "cpu_us_per_req", "nginx", "CPU per request, keep-alive, no work",
              {"tool": "wrk", "mode": "keepalive", "work_ms": 0.0, "pipeline": 1}, across="connections",
              unit="connections", unit_one="connection"),),
}
# Seconds a measurement takes beyond its warm-up and measured seconds (a quiet machine, the speed loop, waiting for
# TIME_WAIT sockets, starting and stopping servers, a JVM's start and warm-up, the battery, spread over its points),
# by kind: from the run of `make mine` on the book's 2-core machine on 2026-11-28 (17 datasets, 317 measurements,
# 27.5 minutes; each dataset's minutes over its measurements, less the 3 s of warm-up and measured run).
OVERHEAD_S = {"http": 1.5, "openloop": 2.7, "echo": 2.2, "clients": 2.8, "rpc": 12.6}


@dataclass(frozen=True)
class Machine:
    """What a run of the reader's needs from the machine: root (network namespaces), a JDK 21+, two CPUs to pin
    the server and the load generator apart, and file descriptors. Machine.here() reads this one."""
    root: bool
    jdk: str | None          # None: found; else why not
    cpus: int
    nofile: int              # the hard limit on open files (raised to it at a run's start)

    @classmethod
    def here(cls) -> "Machine":
        from iobench.run import limits
        from iobench.servers import manifest
        try:
            manifest.java_home()
            jdk = None
        except RuntimeError as exc:
            jdk = str(exc)
        hard = limits.nofile()["hard"]
        return cls(os.geteuid() == 0, jdk, len(os.sched_getaffinity(0)),
                   hard if hard != limits.resource.RLIM_INFINITY else 1 << 30)


def _uses_java(plan) -> bool:
    from iobench import registry
    from iobench.servers import manifest
    kind = registry.kind_of(plan).name
    if kind in ("echo", "clients", "rpc"):
        return True
    return any(manifest.get(s).lang == "Java" for s in plan.servers_for(PROFILE))


def _needs_link(plan) -> str:
    """Which link a plan's brief points need that only root can make ("" for none)."""
    points = plan.points_for(PROFILE)
    if getattr(plan, "link_rtt_ms", 0) or any(getattr(p, "link_rtt_ms", 0) for p in points):
        return "a delay link (a network namespace)"
    if any(getattr(p, "link", "") == "veth" for p in points):
        return "a veth link (network namespaces)"
    return ""


def cannot(name: str, machine: Machine) -> str:
    """Why this machine cannot measure dataset `name` for a reader ("" where it can)."""
    from iobench import registry
    plan = registry.get(name)
    if machine.cpus < 2:
        return (f"needs 2 CPUs to pin the server and the load generator apart; this process may use "
                f"{machine.cpus}")
    if _uses_java(plan) and machine.jdk:
        return f"needs JDK 21+ ({machine.jdk})"
    link = _needs_link(plan)
    if link and not machine.root and registry.kind_of(plan).name != "echo":
        return f"needs root for {link}"
    need = max((getattr(p, "connections", 0) + getattr(p, "idle_conns", 0) for p in plan.points_for(PROFILE)),
               default=0) + 64
    if need > machine.nofile:
        return f"needs {need:,} open files in one process; the limit here is {machine.nofile:,}"
    return ""


def measurements(name: str) -> int:
    """How many measurements dataset `name` makes under the mine profile."""
    import types

    from iobench import registry
    from iobench.run.profiles import PROFILES
    ex = registry.experiment(name)
    points = ex.points(PROFILE)
    return PROFILES[PROFILE].repeats * ex.measurements(types.SimpleNamespace(profile=PROFILES[PROFILE],
                                                                             points=points), points)


def estimate_s(name: str) -> float:
    """About how long dataset `name` takes under the mine profile on a machine like the book's."""
    from iobench import registry
    from iobench.run.profiles import PROFILES
    profile = PROFILES[PROFILE]
    kind = registry.kind_of(registry.get(name)).name
    return measurements(name) * (profile.warmup_s + profile.duration_s + OVERHEAD_S[kind])


@dataclass(frozen=True)
class Planned:
    page: str           # the first page (in the book's order) that reads it
    dataset: str
    measurements: int
    estimate_s: float
    skipped: str        # why this machine cannot measure it ("" where it can)


def plan(only: str | None = None, machine: Machine | None = None) -> list[Planned]:
    """The datasets a reader's run measures (every results page's, or one page's), each once, with its
    estimate, and the reason it is skipped where this machine cannot measure it."""
    if only is not None and only not in PAGES:
        raise KeyError(f"{only!r} is not a results page; the pages: {', '.join(PAGES)}")
    machine = machine or Machine.here()
    pages = {only: PAGES[only]} if only else PAGES
    seen: dict[str, str] = {}
    for page, names in pages.items():
        for name in names:
            seen.setdefault(name, page)
    return [Planned(page, name, measurements(name), estimate_s(name), cannot(name, machine))
            for name, page in seen.items()]


def minutes(seconds: float) -> str:
    return f"{max(1, round(seconds / 60))} min"


def plan_text(planned: list[Planned], dest: Path) -> str:
    """The plan as printed before anything starts: each dataset, its measurements and time, and what is skipped."""
    run = [p for p in planned if not p.skipped]
    lines = [f"iobench mine: {len(run)} dataset{'s' if len(run) != 1 else ''} into {dest} "
             f"(profile {PROFILE}: each point measured once, briefly), about {minutes(sum(p.estimate_s for p in run))}"]
    for p in planned:
        what = (f"skipped: {p.skipped}" if p.skipped else
                f"{p.measurements:4d} measurements, about {minutes(p.estimate_s)}")
        lines.append(f"  {p.dataset:22s} {p.page:28s} {what}")
    return "\n".join(lines)


class Progress:
    """A progress bar over the whole plan: measurements done of all, and the time left at the pace so far (the
    estimate until the first measurement is in). Lines the runner says that are not a measurement are kept."""

    def __init__(self, planned: list[Planned], out=None, clock=None):
        self.total = sum(p.measurements for p in planned if not p.skipped)
        self.estimate = sum(p.estimate_s for p in planned if not p.skipped)
        self.done, self.before = 0, 0
        self.out = out or sys.stderr
        self.clock = clock or time.monotonic
        self.started = self.clock()
        self.dataset = ""

    def begin(self, name: str) -> None:
        self.dataset, self.before = name, self.done

    def left_s(self) -> float:
        spent = self.clock() - self.started
        if not self.done:
            return self.estimate
        return spent / self.done * (self.total - self.done)

    def bar(self, width: int = 30) -> str:
        filled = round(width * self.done / self.total) if self.total else width
        return (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} measurements, "
                f"{self.dataset}, about {minutes(self.left_s())} left")

    def __call__(self, line: str) -> None:
        m = re.match(r"\[(\d+)/(\d+)\] ", line)
        if m:
            self.done = self.before + int(m.group(1))
        else:
            print(line, file=self.out, flush=True)
        print(self.bar(), file=self.out, flush=True)


def measure_all(dest: Path, only: str | None = None, machine: Machine | None = None, out=None,
                server_cpus: str = "0", client_cpus: str = "1") -> list[tuple[str, str]]:
    """Measure every dataset of the plan into dest/<dataset> (never data/), one after another; a dataset that
    fails is said and the rest go on. Returns (dataset, what happened) for each: measured, skipped or failed."""
    from iobench import registry
    from iobench.run import runner
    out = out or sys.stderr
    dest = Path(dest).expanduser().resolve()
    if folder_is_data(dest):
        raise ValueError(f"{dest} is the book's data/: a reader's runs go into a folder of their own")
    planned = plan(only, machine)
    print(plan_text(planned, dest), file=out, flush=True)
    progress = Progress(planned, out)
    outcome = []
    for p in planned:
        if p.skipped:
            outcome.append((p.dataset, f"skipped: {p.skipped}"))
            continue
        progress.begin(p.dataset)
        try:
            runner.run(registry.experiment(p.dataset), PROFILE, dest=dest / p.dataset, progress=progress,
                       server_cpus=server_cpus, client_cpus=client_cpus)
            outcome.append((p.dataset, "measured"))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # the rest go on; this one's partial output is named by the runner
            print(f"{p.dataset} failed: {type(exc).__name__}: {exc}", file=out, flush=True)
            outcome.append((p.dataset, f"failed: {type(exc).__name__}: {exc}"))
        progress.done = progress.before + p.measurements
    return outcome
