"""Datasets on disk: tidy CSV rows, a metadata file, and the raw output of every run.

    data/<dataset>/results.csv     one row per point and repeat, in its kind's columns (kinds/<kind>/dataset.py)
    data/<dataset>/meta.json       how, where and when the run was made (metadata.py)
    data/<dataset>/raw/...         every tool's output, exactly as printed, with its command
    data/<dataset>/battery.json    the conformance battery's verdict per server, if run

A run is written into a staging folder beside its destination and moved into place
only when it finished; a failed or interrupted run leaves the captured data untouched.
An existing dataset is replaced only when the caller asks (overwrite=True).
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from iobench.run import metadata

def raw_text(argv: list[str], env: dict, output: str, code: int, started: str) -> str:
    """A tool's output as a raw file keeps it: its command (environment first), start and exit code above it."""
    envs = " ".join(f"{k}={v}" for k, v in env.items())
    return (f"# command: {envs + ' ' if envs else ''}{' '.join(metadata.portable(argv))}\n# started: {started}\n"
            f"# exit: {code}\n{output}")


# A repeat further than this from the median of its point's repeats is flagged: a repeat at a
# quarter of the others is a hang, not noise, and must be explained or re-measured.
OUTLIER_FRACTION = 0.20


def flag_outliers(rows: list[dict], keys: tuple[str, ...], value: str,
                  fraction: float = OUTLIER_FRACTION) -> list[dict]:
    """Set each row's `outlier`: its value (rps) is more than `fraction` from the median of
    the successful repeats of its point (with at least three). Failed runs are outliers too
    when their point has others. Returns the flagged rows."""
    points: dict[tuple, list[dict]] = {}
    for row in rows:
        points.setdefault(tuple(row.get(k) for k in keys), []).append(row)
    flagged = []
    for group in points.values():
        ok = sorted(r[value] for r in group if r.get("ok"))
        for row in group:
            row["outlier"] = False
        if len(group) < 3 or not ok:
            continue
        mid = len(ok) // 2
        median = ok[mid] if len(ok) % 2 else (ok[mid - 1] + ok[mid]) / 2
        for row in group:
            if not row.get("ok") or (median > 0 and abs(row[value] - median) > fraction * median):
                row["outlier"] = True
                flagged.append(row)
    return flagged


class DatasetExists(FileExistsError):
    pass


def is_dataset(folder: Path) -> bool:
    """A folder a run captured (or began to): it holds results.csv or meta.json."""
    return (folder / "results.csv").is_file() or (folder / "meta.json").is_file()


def within(path: Path, root: Path) -> bool:
    """`path` is `root` or lies under it, symbolic links resolved."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return path == root or root in path.parents


def check_destination(dest: Path, published: Path, scratch: bool, overwrite: bool) -> str | None:
    """Refuse (DatasetExists) a destination a run must not write, before anything runs; return what the run will
    replace when it finishes (None: nothing). `published` is the book's data/: a scratch run (smoke) never
    writes under it; elsewhere a scratch run replaces an earlier capture freely. A full run replaces a captured
    dataset only when asked (overwrite), and no run replaces a file or a folder of anything but a capture."""
    dest = Path(dest)
    if scratch and within(dest, published):
        raise DatasetExists(f"{dest} is inside {published}, the book's published data: a smoke run never writes "
                            "there; leave --dest out (it then goes to _build/bench/) or name a folder outside it")
    if dest.exists() or dest.is_symlink():
        if not dest.is_dir():
            raise DatasetExists(f"{dest} exists and is not a folder; not replacing it")
        if any(dest.iterdir()) and not is_dataset(dest):
            raise DatasetExists(f"{dest} holds files that are not a captured dataset (no results.csv or "
                                "meta.json); not replacing it: name a new folder")
        if is_dataset(dest) and not (overwrite or scratch):
            raise DatasetExists(f"{dest} already holds captured data ({describe_capture(dest)}); "
                                "pass --overwrite (make bench: OVERWRITE=1) to replace it")
    else:
        parent = next(p for p in dest.absolute().parents if p.exists())
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise DatasetExists(f"{dest}: cannot create it, {parent} is not a folder this user may write")
        return None
    return describe_capture(dest) if is_dataset(dest) else None


def describe_capture(folder: Path) -> str:
    """A captured dataset in a few words: its run, when it was made, its profile and its rows."""
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        meta = {}
    try:
        with open(folder / "results.csv", newline="") as f:
            rows = sum(1 for _ in csv.reader(f)) - 1
    except OSError:
        rows = 0
    run = meta.get("run_id") or "no meta.json"
    profile = (meta.get("profile") or {}).get("name", "?") if isinstance(meta.get("profile"), dict) else "?"
    return f"run {run}, profile {profile}, {max(rows, 0):,} row{'' if rows == 1 else 's'}"


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write a file so readers see the old content or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def rows_to_csv(rows: list[dict], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="raise", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _fmt(row.get(k)) for k in columns})
    return out.getvalue()


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


class DatasetWriter:
    """Collects one run in a staging folder; commit() moves it to its destination."""

    def __init__(self, dest: Path, run_id: str, columns: list[str], overwrite: bool = False):
        self.columns = columns  # its kind's (kinds/<kind>/dataset.py COLUMNS), with its plan's optional ones
        self.dest = Path(dest)
        self.run_id = run_id
        self.overwrite = overwrite
        if self.dest.exists() and not overwrite:
            raise DatasetExists(f"{self.dest} already holds captured data; "
                                "pass overwrite=True (CLI: --overwrite) to replace it")
        staging_root = self.dest.parent / ".staging"
        staging_root.mkdir(parents=True, exist_ok=True)
        self.staging = staging_root / f"{self.dest.name}-{run_id}"
        self.staging.mkdir()
        (self.staging / "raw").mkdir()
        self.rows: list[dict] = []

    def path(self, relative: str) -> Path:
        """A file of the run's own beside results.csv (flame/x-flame.html), its folder made."""
        p = self.staging / relative
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def raw_path(self, relative: str) -> Path:
        return self.path(f"raw/{relative}")

    def write_raw(self, relative: str, text: str) -> str:
        atomic_write(self.raw_path(relative), text)
        return f"raw/{relative}"

    def add_row(self, row: dict) -> None:
        unknown = set(row) - set(self.columns)
        if unknown:
            raise KeyError(f"unknown result columns: {sorted(unknown)}")
        self.rows.append(row)
        # The CSV in staging always reflects every row so far (handy when a run dies).
        atomic_write(self.staging / "results.csv", rows_to_csv(self.rows, self.columns))

    def flag_outliers(self, keys: tuple[str, ...], value: str) -> list[dict]:
        flagged = flag_outliers(self.rows, keys, value)
        atomic_write(self.staging / "results.csv", rows_to_csv(self.rows, self.columns))
        return flagged

    def write_json(self, name: str, obj) -> None:
        atomic_write(self.staging / name, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")

    def commit(self) -> Path:
        """Move the finished run into place (replacing the old one only if allowed)."""
        if self.dest.exists():
            if not self.overwrite:
                raise DatasetExists(f"{self.dest} appeared during the run; not replacing it")
            old = self.dest.parent / ".staging" / f"{self.dest.name}-replaced-{self.run_id}"
            os.replace(self.dest, old)
            os.replace(self.staging, self.dest)
            shutil.rmtree(old)
        else:
            os.replace(self.staging, self.dest)
        return self.dest

    def abandon(self, reason: str) -> Path:
        """Keep a failed run's partial output for inspection, outside the dataset."""
        failed = self.staging.with_name(self.staging.name + ".failed")
        atomic_write(self.staging / "FAILED.txt", reason + "\n")
        os.replace(self.staging, failed)
        return failed
