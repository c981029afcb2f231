"""Runs from more machines than one (book/machines.py): a reader's run is checked for completeness and packed under
data/machines/, and the machines page gathers every capture by machine and sets one measurement from several side
by side."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from iobench.book import machines
from iobench.run.profiles import DATA
from iobench.servers.manifest import CODE

SMALL = ("io-uring", "seed-000")   # two small published datasets, as a reader's run of them


def _run(folder, names=SMALL, cpu="Reader Ryzen 9", change=None):
    """A reader's complete run: published datasets copied whole (raw output too), from a clean tree, naming
    another machine; `change(name, meta, folder)` spoils it."""
    for name in names:
        shutil.copytree(DATA / name, folder / name)
        meta = json.loads((folder / name / "meta.json").read_text())
        meta["machine"] = {**meta["machine"], "cpu_model": cpu, "cores": 16}
        meta["git"] = {**meta["git"], "dirty": False}
        if change:
            change(name, meta, folder / name)
        (folder / name / "meta.json").write_text(json.dumps(meta))
    return folder


def test_a_complete_run_has_no_problems_and_each_defect_is_said(tmp_path):
    assert machines.problems(_run(tmp_path / "good")) == []
    assert machines.problems(tmp_path / "nothing") == [f"{tmp_path / 'nothing'} is not a folder"]
    (tmp_path / "empty").mkdir()
    assert "holds no dataset" in machines.problems(tmp_path / "empty")[0]

    def spoil(name, meta, folder):
        if name == "io-uring":
            meta["git"]["dirty"] = True
            del meta["pinning"]
            raw = pd.read_csv(folder / "results.csv")["raw_file"].dropna().iloc[0]
            (folder / raw).unlink()
        else:
            meta["machine"]["kernel"] = "Linux 7.0"
    said = machines.problems(_run(tmp_path / "bad", change=spoil))
    assert any(s.startswith("io-uring: meta.json lacks pinning") for s in said), said
    assert any(s.startswith("io-uring: measured from a tree with uncommitted changes") for s in said), said
    assert any(s.startswith("io-uring: 1 raw output file its rows name is missing") for s in said), said
    assert any(s.startswith("the datasets come from more than one machine") for s in said), said
    shutil.copytree(DATA / "seed-000", tmp_path / "odd" / "no-such-dataset")
    assert "no-such-dataset: not a dataset the harness measures" in machines.problems(tmp_path / "odd")


def test_pack_copies_a_complete_run_whole_and_writes_nothing_for_an_incomplete_one(tmp_path):
    into = tmp_path / "machines"
    dest = machines.pack(_run(tmp_path / "run"), into)
    day = json.loads((DATA / "io-uring" / "meta.json").read_text())["started_at"][:10]
    assert dest == into / f"reader-ryzen-9-16-cores-{day}"
    manifest = json.loads((dest / machines.MANIFEST).read_text())
    assert sorted(manifest["datasets"]) == sorted(SMALL) and manifest["machine"]["cpu_model"] == "Reader Ryzen 9"
    for name in SMALL:   # every file, raw output too, as it was
        src = sorted(p.relative_to(tmp_path / "run" / name) for p in (tmp_path / "run" / name).rglob("*"))
        assert sorted(p.relative_to(dest / name) for p in (dest / name).rglob("*")) == src
        assert manifest["datasets"][name]["results_sha256"] == machines._sha256(DATA / name / "results.csv")
    with pytest.raises(FileExistsError):
        machines.pack(tmp_path / "run", into)

    def dirty(name, meta, folder):
        meta["git"]["dirty"] = True
    with pytest.raises(machines.Incomplete, match="uncommitted changes"):
        machines.pack(_run(tmp_path / "dirty", change=dirty), into, "another")
    assert sorted(p.name for p in into.iterdir()) == [dest.name]   # nothing half-written, no work folder left
    with pytest.raises(machines.Incomplete, match="book's own data"):
        machines.pack(DATA, into, "x")
    with pytest.raises(machines.Incomplete, match="lower-case"):
        machines.pack(tmp_path / "run", into, "My Run")


def test_iobench_contribute_says_why_a_run_cannot_be_packed_and_where_it_packed_one(tmp_path):
    def contribute(*args):
        return subprocess.run([sys.executable, "-m", "iobench", "contribute", *args, "--into", str(tmp_path / "m")],
                              cwd=CODE, capture_output=True, text=True)

    def dirty(name, meta, folder):
        meta["git"]["dirty"] = True
    bad = contribute("--from", str(_run(tmp_path / "dirty", change=dirty)))
    assert bad.returncode == 2 and "cannot be contributed as it is" in bad.stderr
    assert "  io-uring, seed-000: measured from a tree with uncommitted changes" in bad.stderr  # one reason, once
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())
    good = contribute("--from", str(_run(tmp_path / "good")), "--name", "my-laptop")
    assert good.returncode == 0, good.stderr
    assert "packed 2 datasets measured on 16 × Reader Ryzen 9" in good.stdout and "pull request" in good.stdout
    assert (tmp_path / "m" / "my-laptop" / "io-uring" / "results.csv").exists()


def _with_contribution(tmp_path, cpu="Reader Ryzen 9", change=None):
    """A data/ folder: the book's published datasets (linked) and one contributed run packed into machines/."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    for p in DATA.iterdir():
        if (p / "meta.json").exists():
            (data / p.name).symlink_to(p)
    machines.pack(_run(tmp_path / "run", cpu=cpu, change=change), data / "machines", "reader")
    return data


def test_the_page_s_figure_sets_a_contributed_machine_beside_the_book_s(tmp_path):
    from conftest import reads_as_prose  # the site's prose check

    alone = tmp_path / "alone"   # the book's datasets and no contribution
    alone.mkdir()
    for p in DATA.iterdir():
        if (p / "meta.json").exists():
            (alone / p.name).symlink_to(p)
    found = machines.captures(alone)
    said = machines.values(found, machines.panels(found))
    assert said["machines_hosts"].endswith("no reader has contributed a run yet.") and machines.carried(found).empty
    found = machines.captures(_with_contribution(tmp_path))
    assert [c.source for c in found].count("reader") == 2
    hosts = machines.hosts(found).set_index("machine")
    assert hosts.loc["16 × Reader Ryzen 9, " + json.loads((DATA / "io-uring" / "meta.json").read_text())["machine"][
        "kernel"], "captured by"] == "reader"
    panels = machines.panels(found)
    assert len(panels) == 1 and "16 × Reader Ryzen 9" in " ".join(panels[0]["machine"])
    # each contributed dataset's results page comparisons, the contribution's ratio over the book's: the same run
    moved = machines.carried(found)
    assert set(moved.page) == {"synthesis/many-connections", "java/reproduce-000"} and (moved.moved == 1).all()
    counted = machines.carried_table(moved)
    assert (counted["within 10 %"] == counted["compared"]).all() and counted["compared"].gt(0).all()
    said = machines.values(found, panels)
    assert "one contributed run adds one more." in said["machines_hosts"]
    assert said["machines_brief"].startswith("No contributed run is in a brief profile")
    reads_as_prose(said)

    def brief(name, meta, folder):
        meta["profile"] = {**meta["profile"], "name": "mine", "brief": True, "jvm_warmup_s": 2.0,
                           "server_jvm_warmup_s": 10.0}
    found = machines.captures(_with_contribution(tmp_path / "brief", change=brief))
    said = machines.values(found, machines.panels(found))
    assert said["machines_brief"].startswith("The contributed run is in the brief `mine` profile: each point once, "
                                             "its Java load generators and servers after 2 and 10 s of warm-up")
    reads_as_prose(said)
    given = machines.contributions(found)
    assert given["contribution"].tolist() == ["reader"] and given["datasets"].tolist() == ["io-uring, seed-000"]


def test_the_page_s_sentences_read_in_every_case():
    def table(rows):
        t = pd.DataFrame(rows, columns=["row", "capture", "machine", "ratio"])
        return t

    found = machines.captures()
    none = machines.values(found, [])
    assert none["machines_moved"] == "No server was measured on more than one machine at the same point."
    agree = machines.values(found, [table([("a", "x", "m1", 1.0), ("a", "y", "m2", 1.05)])])
    assert agree["machines_moved"] == ("The one server stayed within 10 % of the same ratio on every machine that "
                                       "measured it.")
    assert agree["machines_same"].startswith("No machine measured one server in two captures")
    moved = machines.values(found, [table([("a", "x", "m1", 1.0), ("a", "y", "m2", 2.0), ("b", "x", "m1", 1.0),
                                           ("b", "y", "m2", 1.0), ("b", "z", "m2", 1.0)])])
    assert moved["machines_moved"] == ("1 of the 2 servers stayed within 10 % of the same ratio on every machine that "
                                       "measured it; `a` moved most, from 1.00 (m1, x) to 2.00 (m2, y).")
    assert moved["machines_same"].startswith("On one machine, two captures of the same server agreed to within "
                                             "1 % (the one pair)")
    # the same server on one machine in two captures of two commits: the code may be what moved it
    code = machines.values(found, [table([("a", "x", "m1", 1.0), ("a", "y", "m2", 1.0), ("a", "z", "m2", 1.5)])
                                   .assign(commit=["c1", "c1", "c2"])])
    assert code["machines_same"] == (
        "On one machine, two captures of the same server differed by at most 50 % (the one pair; the most: `a` on "
        "m2, measured by commits c1 and c2): a difference between machines smaller than that may be the run's or "
        "the code's, not the machine's.")


def test_the_machines_page_renders_a_contributed_run(tmp_path):
    """The page executed as the build executes it, its captures read from a data/ folder holding a contribution:
    the machine is in its table, the figure is drawn, the contribution listed."""
    import jupytext
    from nbclient import NotebookClient

    data = _with_contribution(tmp_path)
    page = CODE.parent / "book" / "machines.md"
    nb = jupytext.read(page)
    first = next(c for c in nb.cells if c.cell_type == "code")
    first.source = first.source.replace("found = machines.captures()",
                                        f"found = machines.captures(Path({str(data)!r}))")
    assert str(data) in first.source
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(page.parent)}}).execute()
    shown = "\n".join(o.get("text", "") or o.get("data", {}).get("text/html", "") or
                      ("[a figure]" if "image/png" in o.get("data", {}) else "")
                      for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "16 × Reader Ryzen 9" in shown
    assert shown.count("[a figure]") == 2 and "io-uring, seed-000" in shown and "No reader has contributed" not in shown
    assert "No contributed run measured" not in shown
