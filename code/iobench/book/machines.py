"""Runs from more machines than one: every capture the project has, and a reader's run packed for the book.

The book's own datasets are data/<dataset>/ (each a full run from a clean tree). A reader who measured the results
pages on their machine (iobench mine, or one dataset in the full profile) can give that run to the book: `iobench
contribute --from ~/iom-runs` checks it for completeness and copies it to data/machines/<name>/<dataset>/, with
a CONTRIBUTION.json that says what it holds, ready for a pull request. The book's machines page reads every
capture under data/ and data/machines/ (captures()) and sets the same measurement from several machines side by
side.

A run is complete when every dataset folder in it holds its rows (results.csv, read by its kind's reader), its
metadata (meta.json: the machine, the versions, the commit and whether the tree was clean, the profile, the
pinning, the commands), the raw output its rows name (raw_file), and all of it comes from one machine and from a
clean tree: a run from edited code measured something the commit does not hold.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from iobench.data.dataset import machine_name
from iobench.run.profiles import DATA

MACHINES = DATA / "machines"
MANIFEST = "CONTRIBUTION.json"
# What meta.json must hold for a run to be read, checked and repeated by someone else.
REQUIRED = ("dataset", "machine", "versions", "git", "profile", "pinning", "started_at", "finished_at",
            "harness_argv", "load_commands")


class Incomplete(ValueError):
    """A run that cannot be packed: each problem on a line of its own."""


def _datasets(folder: Path) -> list[Path]:
    return sorted(p.parent for p in folder.glob("*/meta.json"))


def problems(folder: Path) -> list[str]:
    """Everything that keeps the run in `folder` (one dataset folder per dataset) from being packed; [] when
    it is complete."""
    from iobench import registry

    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder} is not a folder"]
    found = _datasets(folder)
    if not found:
        return [f"{folder} holds no dataset (a folder with meta.json and results.csv, as iobench mine writes)"]
    said, machines = [], {}
    for ds in found:
        name = ds.name
        try:
            meta = json.loads((ds / "meta.json").read_text())
        except (OSError, ValueError) as exc:
            said.append(f"{name}: meta.json cannot be read ({exc})")
            continue
        missing = [k for k in REQUIRED if k not in meta]
        if missing:
            said.append(f"{name}: meta.json lacks {', '.join(missing)}")
        if meta.get("dataset") not in (None, name):
            said.append(f"{name}: meta.json says it is {meta['dataset']}")
        if name not in registry.names():
            said.append(f"{name}: not a dataset the harness measures")
            continue
        if meta.get("git", {}).get("dirty") is not False:
            said.append(f"{name}: measured from a tree with uncommitted changes (or none recorded): measure it "
                        "again from a clean checkout")
        if not meta.get("finished_at"):
            said.append(f"{name}: the run did not finish")
        machines.setdefault(machine_name(meta), []).append(name)
        if not (ds / "results.csv").exists():
            said.append(f"{name}: no results.csv")
            continue
        try:
            rows = registry.reader(name)(ds, "contributed").df
        except Exception as exc:  # whatever the reader could not read is the contributor's to fix
            said.append(f"{name}: its rows cannot be read ({type(exc).__name__}: {exc})")
            continue
        if rows.empty:
            said.append(f"{name}: no rows")
        if "raw_file" in rows.columns:
            lost = sorted({f for f in rows["raw_file"].dropna().astype(str) if f and not (ds / f).exists()})
            if lost:
                said.append(f"{name}: {len(lost):,} raw output file{'s' if len(lost) != 1 else ''} its rows name "
                            f"{'is' if len(lost) == 1 else 'are'} missing ({', '.join(lost[:3])}"
                            f"{', ...' if len(lost) > 3 else ''})")
    if len(machines) > 1:
        said.append("the datasets come from more than one machine (" +
                    "; ".join(f"{m}: {', '.join(n)}" for m, n in machines.items()) +
                    "): pack each machine's run on its own")
    return _grouped(said)


def _grouped(said: list[str]) -> list[str]:
    """The same reason for several datasets said once, naming them all: "ab-grid, c-servers: measured from ..."."""
    by: dict[str, list[str]] = {}
    for line in said:
        name, sep, reason = line.partition(": ")
        if sep and " " not in name:
            by.setdefault(reason, []).append(name)
        else:
            by.setdefault(line, [])
    return [f"{', '.join(names)}: {reason}" if names else reason for reason, names in by.items()]


def slug(meta: dict) -> str:
    """A contribution's default name: the CPU, its cores and the day, as a folder name."""
    m = meta.get("machine", {})
    cpu = re.sub(r"\((r|tm)\)|\bprocessor\b|\bcpu\b", "", str(m.get("cpu_model", "machine")), flags=re.I)
    cpu = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-") or "machine"
    return f"{cpu}-{m.get('cores', 0)}-cores-{str(meta.get('started_at', ''))[:10]}".strip("-")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pack(source: Path, into: Path = MACHINES, name: str | None = None) -> Path:
    """Copy the complete run in `source` to into/<name>/ (name: slug() of its first dataset unless given),
    with CONTRIBUTION.json; raises Incomplete (every problem) or FileExistsError, and then writes nothing."""
    from iobench.run.results import within

    source, into = Path(source).expanduser().resolve(), Path(into).expanduser()
    if within(source, DATA) and not within(source, MACHINES):
        raise Incomplete(f"{source} is the book's own data/: pack a run of yours (iobench mine --dest DIR)")
    said = problems(source)
    if said:
        raise Incomplete("\n".join(said))
    found = _datasets(source)
    metas = {ds.name: json.loads((ds / "meta.json").read_text()) for ds in found}
    first = metas[found[0].name]
    name = name or slug(first)
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name):
        raise Incomplete(f"{name!r}: a contribution's name is lower-case letters, digits, dots and dashes")
    dest = into / name
    if dest.exists():
        raise FileExistsError(f"{dest} exists: give this run another --name")
    into.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=into))  # renamed into place whole, or removed
    try:
        for ds in found:
            shutil.copytree(ds, work / ds.name, symlinks=False)
        manifest = {
            "name": name, "machine": first["machine"], "versions": first.get("versions", {}),
            "packed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "datasets": {n: {"rows": int(len(pd.read_csv(work / n / "results.csv"))),
                             "profile": m.get("profile", {}).get("name"), "commit": m["git"].get("commit"),
                             "started_at": m.get("started_at"),
                             "results_sha256": _sha256(work / n / "results.csv")}
                         for n, m in metas.items()},
        }
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        work.rename(dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return dest


@dataclass(frozen=True)
class Capture:
    """One captured dataset: where it is, whose it is (the book's, or a contribution's name) and its machine."""
    dataset: str
    folder: Path
    source: str          # "book" or the contribution's name
    machine: str
    meta: dict

    def label(self) -> str:
        return f"{self.source}: {self.dataset}" if self.source != "book" else self.dataset


def captures(data: Path = DATA) -> list[Capture]:
    """Every capture the project has: the book's data/<dataset>/ and each contribution's
    data/machines/<name>/<dataset>/, in that order."""
    found = []
    for meta_file in sorted(data.glob("*/meta.json")):
        meta = json.loads(meta_file.read_text())
        found.append(Capture(meta_file.parent.name, meta_file.parent, "book", machine_name(meta), meta))
    for meta_file in sorted((data / "machines").glob("*/*/meta.json")):
        meta = json.loads(meta_file.read_text())
        found.append(Capture(meta_file.parent.name, meta_file.parent, meta_file.parent.parent.name,
                             machine_name(meta), meta))
    return found


# ---- the machines page: every capture by machine, and one measurement from several --------------------------

def _rows(cap: Capture) -> pd.DataFrame:
    return pd.read_csv(cap.folder / "results.csv")


def short(machine: str) -> str:
    """A machine's name short enough for a legend: its CPU without the vendor's marks, and its kernel build."""
    cores, _, rest = machine.partition(" × ")
    cpu, _, kernel = rest.rpartition(", ")
    cpu = re.sub(r"\((R|TM)\)|\bProcessor\b|\bCPU\b", "", cpu).strip()
    kernel = kernel.split()[1] if len(kernel.split()) > 1 else kernel
    return f"{cores} × {re.sub(r' +', ' ', cpu)}, Linux {kernel}"


def hosts(found: list[Capture]) -> pd.DataFrame:
    """One row per machine the captures came from: what it was, whose captures, how many datasets and which,
    when, and how fast it ran the harness's speed loop before each measured run (the median, in ms: the
    larger, the slower the host)."""
    rows = []
    for machine in dict.fromkeys(c.machine for c in found):
        caps = [c for c in found if c.machine == machine]
        loops = pd.concat([_rows(c).get("loop_ms_before", pd.Series(dtype=float)) for c in caps])
        dates = sorted(str(c.meta.get("started_at", ""))[:10] for c in caps)
        virt = {True: "yes", False: "no"}.get(caps[0].meta.get("machine", {}).get("virtualised"), "not recorded")
        rows.append({"machine": machine, "virtual machine": virt,
                     "captured by": ", ".join(dict.fromkeys(c.source for c in caps)),
                     "datasets": len(caps), "measured": dates[0] if dates[0] == dates[-1] else
                     f"{dates[0]} to {dates[-1]}",
                     "speed loop (ms)": float(loops.median()) if loops.notna().any() else float("nan"),
                     "which": ", ".join(c.label() for c in caps)})
    return pd.DataFrame(rows)


def across(ratio, found: list[Capture], summaries: dict | None = None) -> pd.DataFrame:
    """The comparison `ratio` from every capture of its kind that measured its point with its reference: one
    row per capture and server (client, ...) that at least two machines measured; columns row, capture,
    machine (short(), as a legend names it), host (as its metadata does), commit (the harness's), ratio."""
    import importlib

    from iobench import registry
    kind = registry.kind_of(registry.get(ratio.dataset)).name
    summaries = {} if summaries is None else summaries

    def summary(cap: Capture) -> pd.DataFrame:
        if cap.folder not in summaries:
            summaries[cap.folder] = registry.reader(cap.dataset)(cap.folder, cap.source).summary()
        return summaries[cap.folder]

    # the same point is the same on every key of the kind, not only those `where` names: another dataset's rows
    # at 40 connections may hold 100,000 idle ones beside them
    home = next((c for c in found if c.dataset == ratio.dataset and c.source == "book"), None)
    same = {}
    if home is not None:
        h = summary(home)
        for k, v in ratio.where.items():
            h = h[h[k] == v]
        keys = importlib.import_module(f"iobench.kinds.{kind}.dataset").KEYS
        same = {k: set(h[k]) for k in keys if k in h.columns and k not in (ratio.by, ratio.across, "model", "lang")}
    parts = []
    for cap in found:
        if cap.dataset not in registry.names() or registry.kind_of(registry.get(cap.dataset)).name != kind:
            continue
        s = summary(cap)
        if not all(k in s.columns for k in [*ratio.where, *same, ratio.by, ratio.column]):
            continue
        for k, values in same.items():
            s = s[s[k].isin(values)]
        r = ratio.ratios(s)
        if len(r):
            parts.append(r.assign(capture=cap.label(), machine=short(cap.machine), host=cap.machine,
                                  commit=str(cap.meta.get("git", {}).get("commit") or "")[:7]))
    if not parts:
        return pd.DataFrame(columns=["row", "capture", "machine", "host", "commit", "ratio"])
    table = pd.concat(parts, ignore_index=True)
    machines = table.groupby("row")["machine"].nunique()
    table = table[table["row"].isin(machines[machines >= 2].index)]
    return table[["row", "capture", "machine", "host", "commit", "ratio"]].reset_index(drop=True)


def panels(found: list[Capture]) -> list[pd.DataFrame]:
    """What the machines page draws of one point: CPU per request at 40 connections, the one point every HTTP
    dataset of servers shares, from every capture that has it (none, or one table)."""
    from iobench.book.mine import BESIDE
    r = BESIDE["c/results"][0]
    t = across(r, found)
    if t["machine"].nunique() < 2:
        return []
    t.attrs = {"title": f"{r.title}, every HTTP dataset that has it",
               "xlabel": f"ratio to {r.reference} in the same run (1: as {r.reference})"}
    return [t]


def carried(found: list[Capture]) -> pd.DataFrame:
    """Each results page's comparisons (mine.BESIDE) that a contribution measured: per server (client, ...) and
    point both runs have, the contribution's ratio over the book's (1: the ratio carried over unchanged).
    Columns page, comparison, row, contribution, machine, moved."""
    from iobench import registry
    from iobench.book.mine import BESIDE
    rows = []
    for page, ratios in BESIDE.items():
        for r in ratios:
            book = next((c for c in found if c.source == "book" and c.dataset == r.dataset), None)
            if book is None:
                continue
            for cap in (c for c in found if c.source != "book" and c.dataset == r.dataset):
                t = r.beside(registry.reader(r.dataset)(book.folder, "book"),
                             registry.reader(r.dataset)(cap.folder, cap.source))
                rows += [{"page": page, "comparison": r.title, "row": x.row, "contribution": cap.source,
                          "machine": short(cap.machine), "moved": x.yours / x.book} for x in t.itertuples()]
    return pd.DataFrame(rows, columns=["page", "comparison", "row", "contribution", "machine", "moved"])


def carried_table(moved: pd.DataFrame) -> pd.DataFrame:
    """carried() by comparison: how many of its servers and points a contribution measured, how many stayed within
    AGREE of the book's ratio, and how far the rest moved (the least and the most, contribution over book)."""
    out = []
    for (page, comparison, who), g in moved.groupby(["page", "comparison", "contribution"], sort=False):
        kept = int(((g.moved - 1).abs() <= AGREE).sum())
        out.append({"page": page, "comparison": comparison, "contribution": who, "compared": len(g),
                    f"within {AGREE * 100:.0f} %": kept, "least": g.moved.min(), "most": g.moved.max()})
    return pd.DataFrame(out, columns=["page", "comparison", "contribution", "compared",
                                      f"within {AGREE * 100:.0f} %", "least", "most"])


def contributions(found: list[Capture]) -> pd.DataFrame:
    """One row per contributed run (data/machines/<name>/): its machine, datasets, profile and when."""
    rows = []
    for name in dict.fromkeys(c.source for c in found if c.source != "book"):
        caps = [c for c in found if c.source == name]
        dates = sorted(str(c.meta.get("started_at", ""))[:10] for c in caps)
        rows.append({"contribution": name, "machine": caps[0].machine,
                     "profile": ", ".join(dict.fromkeys(str(c.meta.get("profile", {}).get("name")) for c in caps)),
                     "datasets": ", ".join(c.dataset for c in caps),
                     "measured": dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"})
    return pd.DataFrame(rows, columns=["contribution", "machine", "profile", "datasets", "measured"])


AGREE = 0.10   # two machines "agree" on a ratio within 10 % of the smaller


def _brief_warmups(found: list[Capture], names: list[str]) -> str:
    """The warm-ups of the brief contributions' JVMs, as "2 and 10 s" (generator and server), each pair once."""
    pairs = dict.fromkeys((c.meta["profile"].get("jvm_warmup_s"), c.meta["profile"].get("server_jvm_warmup_s"))
                          for c in found if c.source in names)
    return " or ".join(f"{g:g} and {v:g} s" for g, v in pairs)


def values(found: list[Capture], tables: list[pd.DataFrame]) -> dict[str, str]:
    """The page's sentences from its captures and panels: how many machines the data came from, and, of the
    servers measured on more than one, how many kept their ratio and which moved most."""
    from iobench.book.phrases import listing, tally, words
    from iobench.run.profiles import PROFILES
    book = [c for c in found if c.source == "book"]
    given = contributions(found)
    n_book = len(dict.fromkeys(c.machine for c in book))
    extra = len({c.machine for c in found if c.source != "book"} - {c.machine for c in book})
    hosts_said = (f"The book's {len(book):,} datasets were measured on {words(n_book)} "
                  f"machine{'s' if n_book != 1 else ''}")
    if len(given):
        runs = len(given)
        hosts_said += (f"; {words(runs)} contributed run{'s' if runs != 1 else ''} add"
                       f"{'s' if runs == 1 else ''} {words(extra)} more.")
    else:
        hosts_said += "; no reader has contributed a run yet."
    out = {"machines_hosts": hosts_said}
    brief = sorted({c.source for c in found if c.source != "book" and c.meta.get("profile", {}).get("brief")})
    full = PROFILES["full"]
    out["machines_brief"] = (
        "No contributed run is in a brief profile: each was measured as the book's were." if not brief else
        f"{'The contributed run' if len(given) == 1 else listing(brief)} {'is' if len(brief) == 1 else 'are'} "
        "in the brief `mine` profile: each point once, its Java load generators and servers after "
        f"{_brief_warmups(found, brief)} of warm-up where the book's ran after {full.jvm_warmup_s:g} and "
        f"{full.server_jvm_warmup_s:g} s, so a Java ratio that moved there is not yet a difference between machines "
        "(each results page's deep dive says so beside its figure).")
    if not tables:
        out["machines_moved"] = "No server was measured on more than one machine at the same point."
        return out
    t = pd.concat(tables, ignore_index=True)
    by = t.groupby("row")["ratio"].agg(["min", "max"])
    by["spread"] = by["max"] / by["min"] - 1
    kept = int((by["spread"] <= AGREE).sum())
    pct = f"{AGREE * 100:.0f} %"
    said = tally(kept, len(by), "server", f"within {pct} of the same ratio on every machine that measured it",
                 verbs=("stayed", "stayed"))
    said = said[0].upper() + said[1:]
    top = by["spread"].idxmax()
    if by.loc[top, "spread"] > AGREE:
        ends = t[t.row == top].sort_values("ratio")
        lo, hi = ends.iloc[0], ends.iloc[-1]
        said += (f"; `{top}` moved most, from {lo.ratio:.2f} ({lo.machine}, {lo.capture}) to {hi.ratio:.2f} "
                 f"({hi.machine}, {hi.capture})")
    out["machines_moved"] = said + "."
    # the same server on one machine in two captures: how far a ratio moves without changing machine
    twice = t.groupby(["row", "machine"])["ratio"].agg(["min", "max", "size"])
    twice = twice[twice["size"] >= 2]
    if twice.empty:
        out["machines_same"] = ("No machine measured one server in two captures here, so this page cannot say how "
                                "far a ratio moves between two runs on one machine.")
    else:
        twice["spread"] = twice["max"] / twice["min"] - 1
        (row, machine), worst = twice["spread"].idxmax(), twice["spread"].max()
        n = len(twice)
        pair = t[(t.row == row) & (t.machine == machine)].sort_values("ratio")
        commits = list(dict.fromkeys(pair["commit"])) if "commit" in pair else []
        code = (f", measured by {'commits ' + ' and '.join(commits) if len(commits) == 2 else 'different commits'}"
                if len(commits) > 1 else "")
        out["machines_same"] = (
            f"On one machine, two captures of the same server {'differed' if worst > 0.005 else 'agreed'} "
            + (f"by at most {worst * 100:.0f} % ({'the one pair' if n == 1 else f'{n:,} pairs'}; the most: "
               f"`{row}` on {machine}{code})" if worst > 0.005 else
               f"to within 1 % ({'the one pair' if n == 1 else f'all {n:,} pairs'})")
            + ": a difference between machines smaller than that may be the run's or the code's, not the machine's.")
    return out
