#!/usr/bin/env python3
"""Read every captured dataset in data/ with the harness of two revisions and compare what each reads, frame by frame.

    code/tools/compare_readings.py REV        this tree's harness against REV's (a commit, a tag, HEAD~3)

For a change to the harness's readers (kinds/<kind>/dataset.py, data/dataset.py): every dataset must read and
summarise exactly as before. Each revision's harness reads each dataset with its kind's reader (registry.reader);
what it read (the rows, summary(), table(), describe(), origin(), caption(), loop_ms(), slow(), the reader's class)
is compared exactly. Prints one line per difference; exit 1 if any.
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = r"""
import pickle, sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
from iobench import registry
out, data = Path(sys.argv[1]), Path(sys.argv[2])
for folder in sorted(p for p in data.iterdir() if (p / "results.csv").exists()):
    ds = registry.reader(folder.name)(folder, "replay")
    rec = {"class": type(ds).__name__, "df": ds.df, "meta": ds.meta, "battery": ds.battery}
    for m in ("summary", "table", "describe", "origin", "caption", "loop_ms", "slow"):
        try:
            rec[m] = getattr(ds, m)()
        except Exception as e:
            rec[m] = f"{type(e).__name__}: {e}"
    pickle.dump(rec, open(out / f"{folder.name}.pkl", "wb"))
"""


def read_with(code: Path, out: Path) -> None:
    out.mkdir()
    subprocess.run([sys.executable, "-c", READ, str(out), str(ROOT / "data")], check=True,
                   env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin"})


def differences(a: Path, b: Path) -> list[str]:
    import pandas as pd
    found = []
    for f in sorted(a.glob("*.pkl")):
        if not (b / f.name).exists():
            found.append(f"{f.stem}: read by one revision only")
            continue
        x, y = pickle.loads(f.read_bytes()), pickle.loads((b / f.name).read_bytes())
        for k, u in x.items():
            v = y.get(k)
            try:
                if isinstance(u, pd.DataFrame):
                    pd.testing.assert_frame_equal(u, v, check_exact=True)
                elif not (u == v or (isinstance(u, float) and u != u and v != v)):
                    raise AssertionError(f"{u!r:.80} != {v!r:.80}")
            except AssertionError as exc:
                found.append(f"{f.stem} {k}: {' '.join(str(exc).split())[:200]}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run(f"git -C {ROOT} archive {argv[0]} code/iobench | tar -x -C {tmp}", shell=True, check=True)
        read_with(tmp / "code", tmp / "before")
        read_with(ROOT / "code", tmp / "after")
        found = differences(tmp / "before", tmp / "after")
        n = len(list((tmp / "after").glob("*.pkl")))
    print("\n".join(found) or f"all {n} datasets read and summarise as at {argv[0]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
