"""The reader's machine beside the book's (mine.py): a run of the reader's, in a folder of their own, read back and
set beside the published run as ratios to nginx measured in the same run; data/ is never the reader's folder."""
import dataclasses
import subprocess

import pandas as pd
import pytest

from iobench import registry
from iobench.book import mine, plots
from iobench.run import runner
from iobench.run.profiles import DATA
from iobench.servers.manifest import CODE


def test_a_ratio_is_to_the_reference_at_the_same_point_of_the_same_run():
    s = pd.DataFrame([
        dict(server="nginx", connections=40, work_ms=0.0, rps=100.0),
        dict(server="c-epoll", connections=40, work_ms=0.0, rps=50.0),
        dict(server="nginx", connections=1000, work_ms=0.0, rps=80.0),
        dict(server="c-epoll", connections=1000, work_ms=0.0, rps=120.0),
        dict(server="c-thread", connections=1000, work_ms=0.0, rps=float("nan")),   # a figure it lacks: no row
        dict(server="c-epoll", connections=10000, work_ms=0.0, rps=7.0),  # no nginx there: no row
        dict(server="c-epoll", connections=40, work_ms=20.0, rps=7.0),    # another point
    ])
    across = mine.Ratio("x", "rps", "nginx", "t", {"work_ms": 0.0}, across="connections", unit="connections",
                        unit_one="connection")
    assert across.ratios(s).values.tolist() == [["c-epoll, 40 connections", "c-epoll", 0.5],
                                                ["c-epoll, 1,000 connections", "c-epoll", 1.5]]
    assert across.label("c-epoll", 1) == "c-epoll, 1 connection"
    one = mine.Ratio("x", "rps", "nginx", "t", {"work_ms": 0.0, "connections": 40})
    assert one.ratios(s).values.tolist() == [["c-epoll", "c-epoll", 0.5]]
    assert one.ratios(s[s.server != "nginx"]).empty                       # no reference in the run: nothing
    assert mine.Ratio("x", "rps", "nginx", "t", {"connections": 5}).ratios(s).empty
    assert mine.Ratio("x", "tps", "nginx", "t").ratios(s).empty            # a column the run does not have


def test_the_reader_s_folder_is_never_the_book_s_data(monkeypatch, tmp_path):
    monkeypatch.delenv(mine.ENV, raising=False)
    assert mine.folder() is None and mine.mine("c-servers") is None
    monkeypatch.setenv(mine.ENV, str(DATA / "c-servers"))
    with pytest.raises(ValueError, match="folder of their own"):
        mine.folder()
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    assert mine.mine("c-servers") is None  # nothing measured there yet


@pytest.fixture(scope="module")
def reader_run(tmp_path_factory):
    """A reader's folder holding a smoke run of c-servers (two servers): measured once for the tests below."""
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)
    folder = tmp_path_factory.mktemp("mine")
    plan = dataclasses.replace(registry.get("c-servers").only(("nginx", "c-epoll")), battery=False)
    runner.run(registry.experiment(plan), "smoke", dest=folder / "c-servers", progress=lambda m: None)
    return folder


def test_a_run_of_the_reader_s_shows_beside_the_published_one(monkeypatch, reader_run):
    monkeypatch.setenv(mine.ENV, str(reader_run))
    yours = mine.mine("c-servers")
    assert yours is not None and yours.shown_under == "mine"
    # every measured run records how fast the machine ran just before and after it
    assert (yours.df["loop_ms_before"] > 0).all() and (yours.df["loop_ms_after"] > 0).all()
    book = registry.obtain("c-servers", profile="replay")
    (ratio,) = mine.BESIDE["c/results"]
    table = ratio.beside(book, yours)
    assert table["row"].tolist() == ["c-epoll"]   # nginx is the line at 1
    assert table["yours"].gt(0).all() and table.attrs["book"].endswith(book.date())
    assert len(table.attrs["only_book"]) == 11 and not table.attrs["only_yours"]
    fig = plots.beside([table])
    assert "Yours (filled): " in plots.caption(fig) and book.date() in plots.caption(fig)


def test_the_results_page_draws_the_reader_s_run_beside_the_book_s(monkeypatch, reader_run):
    """The C results page, executed up to its section on the reader's machine, with IOBENCH_MINE pointing at a
    run of the reader's (here a smoke run of two servers): it names both machines and draws both runs."""
    import jupytext
    import nbclient

    page = CODE.parent / "book" / "c" / "results.md"
    nb = jupytext.read(page)
    end = next(i for i, c in enumerate(nb.cells)
               if c.cell_type == "markdown" and "Does it hold on your machine" in c.source)
    nb.cells = nb.cells[:end]
    monkeypatch.setenv(mine.ENV, str(reader_run))
    monkeypatch.setenv("IOBENCH_PROFILE", "replay")
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(page.parent)}}).execute()
    drawn = nb.cells[-1]
    text = "".join(o.get("text", "") for o in drawn.outputs if o.output_type == "stream")
    assert "book:" in text and "yours:" in text and "No run of yours" not in text, text
    assert "11 of the book's rows are not in your run" in text, text
    # the figure alone in its cell: the page's caption wraps every display output of the cell (but a glue record)
    shown = [o for o in drawn.outputs if o.output_type in ("display_data", "execute_result")
             and "scrapbook" not in o.get("metadata", {})]
    assert len(shown) == 1 and "image/png" in shown[0]["data"], drawn.outputs
    glued = [o for o in drawn.outputs if "scrapbook" in o.get("metadata", {})]
    assert [o["metadata"]["scrapbook"]["name"] for o in glued] == ["fig_mine_c_results"]


# ---- does it hold on your machine? ---------------------------------------------------------------

def _reader_copy(folder, name, change=None):
    """A reader's run of `name` made from the published one (its rows changed, its metadata naming another
    machine, its raw output linked)."""
    import json
    import shutil

    (folder / name).mkdir(parents=True)
    for kept in (DATA / name).iterdir():  # what its pages read beside the rows (raw/, flame/): linked, unchanged
        if kept.is_dir():
            (folder / name / kept.name).symlink_to(kept)
    df = pd.read_csv(DATA / name / "results.csv")
    if change is not None:
        df = change(df)
    df.to_csv(folder / name / "results.csv", index=False)
    meta = json.loads((DATA / name / "meta.json").read_text())
    meta["machine"] = {**meta["machine"], "cpu_model": "Reader's CPU", "cores": 16}
    (folder / name / "meta.json").write_text(json.dumps(meta))
    if (DATA / name / "battery.json").exists():
        shutil.copy(DATA / name / "battery.json", folder / name / "battery.json")


def _c_results_page():
    from iobench.book.pages import c_results
    from iobench.kinds.http import dataset
    books = {"c-servers": registry.obtain("c-servers", profile="replay"),
             "idle-connections": dataset.load(DATA / "idle-connections")}
    return c_results.values, books


FORK_RSS = "c-fork's RSS overstated its memory many times over"


def test_the_book_s_claims_are_evaluated_on_the_reader_s_run(monkeypatch, tmp_path):
    """The statement, on the book's machine and on the reader's: the same run holds every claim the book's does;
    a run whose c-fork shares no memory between its processes (RSS as large as PSS) does not hold the claim that
    RSS overstated c-fork's memory, and the table says so with the figures each side."""
    from iobench.book.claims import ClaimBroken
    values, books = _c_results_page()
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    for name in books:
        _reader_copy(tmp_path, name)
    same = mine.does_it_hold(values, books)
    assert len(same) >= 8 and (same["book's machine"].str.startswith(mine.HOLDS)).all()
    assert same["yours"].tolist() == same["book's machine"].tolist()
    assert "Reader's CPU" in same.attrs["yours"] and "Reader's CPU" not in same.attrs["book"]

    def shared_nothing(df):
        fork = df.server == "c-fork"
        df.loc[fork, "pss_kib"] = df.loc[fork, "server_rss_kib_max"]
        return df
    other = tmp_path / "other"
    _reader_copy(other, "c-servers", shared_nothing)
    _reader_copy(other, "idle-connections")
    monkeypatch.setenv(mine.ENV, str(other))
    got = mine.does_it_hold(values, books).set_index("statement")
    assert got.loc[FORK_RSS, "book's machine"].startswith("holds (")
    assert got.loc[FORK_RSS, "yours"].startswith("does not hold (rss: ")
    assert (got.drop(FORK_RSS)["yours"] == got.drop(FORK_RSS)["book's machine"]).all()
    with pytest.raises(ClaimBroken):  # outside the table, the claim still fails a page that states it
        values(mine.mine("c-servers"), books["idle-connections"], check=True)


def test_a_reader_s_run_that_lacks_a_dataset_or_a_point_says_so_and_fails_nothing(monkeypatch, tmp_path):
    values, books = _c_results_page()
    monkeypatch.delenv(mine.ENV, raising=False)
    assert mine.does_it_hold(values, books) == ("No run of yours: measure c-servers, idle-connections and set "
                                                 "IOBENCH_MINE to its folder.")
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    _reader_copy(tmp_path, "c-servers", lambda df: df[df.server != "nginx"])   # a run of the C servers alone
    said = mine.does_it_hold(values, books)
    assert isinstance(said, str) and "has no run of idle-connections" in said
    _reader_copy(tmp_path, "idle-connections")
    got = mine.does_it_hold(values, books).set_index("statement")
    assert (got["book's machine"].str.startswith(mine.HOLDS)).all()
    nginx = "the lowest median single-threaded server spent less CPU per request than nginx in every repeat"
    loops = "the select, poll and epoll loops and nginx grew by about the same factor"  # exercise 1's, with nginx
    for needs_nginx in (nginx, loops):
        assert got.loc[needs_nginx, "yours"] == "not evaluated on your run: your run lacks what it reads"
    assert not got["yours"].str.startswith(mine.FAILS).any() and got["yours"].str.startswith(mine.HOLDS).sum() >= 6


def test_a_page_module_that_stops_on_a_reader_s_run_says_where_and_keeps_what_it_checked():
    from iobench.book.claims import claim

    def values(ds, check=None):
        claim(ds["a"] > 1, "a is more than one", a=ds["a"])
        ds["nginx"]  # a point the reader's run did not measure
        claim(True, "never reached")
    book, why = mine.checked(values, {"a": 2, "nginx": 1})
    yours, stopped = mine.checked(values, {"a": 0})
    assert why is None and stopped == "KeyError: 'nginx'"
    undecided = mine.checked(lambda ds, check=None: claim(ds["a"] > 1, "a is more than one", a=ds["a"],
                                                          each={"x": 1.0, "y": float("nan")}), {"a": float("nan")})[0]
    assert mine.holds_table(book, undecided)["yours"].tolist()[0] == (  # NaN > 1 is false, yet nothing was decided
        "not evaluated on your run: a figure it needs is missing there (a: n/a; each: x 1, y n/a)")
    table = mine.holds_table(book, yours, stopped)
    assert table.values.tolist() == [
        ["a is more than one", "holds (a: 2)", "does not hold (a: 0)"],
        ["never reached", "holds", "not evaluated on your run: the page's code stopped before it (above)"]]


RESULTS_PAGES = ("c/results", "java/results", "synthesis/side-by-side", "synthesis/many-connections",
                 "method/open-loop", "method/measuring", "clients/http-clients", "java/rpc", "java/mina-netty-results",
                 "c/source-reproduction", "java/reproduce-000")


def test_every_results_page_asks_whether_its_claims_hold_on_the_reader_s_machine():
    book = CODE.parent / "book"
    for page in RESULTS_PAGES:
        text = (book / f"{page}.md").read_text()
        assert text.count("mine.show_holds(") == 1, page
        assert text.count(f'mine.show_beside("{page}", books)') == 1, page
        assert f"{{glue:text}}`{mine.glue_key(page)}`" in text, page   # the figure's caption names the machines
        assert "does it hold on your machine?" in text.lower(), page


def test_every_results_page_compares_both_machines_at_points_the_reader_s_run_measures():
    """Each page's comparisons (mine.BESIDE) read its own datasets, find one row per server and point in the
    published run, and ask for points the brief profile measures (the reader's run of the published plan)."""
    assert set(mine.BESIDE) == set(mine.PAGES)
    for page, ratios in mine.BESIDE.items():
        for r in ratios:
            assert r.dataset in mine.PAGES[page], (page, r.dataset)
            s = registry.reader(r.dataset)(DATA / r.dataset, "replay").summary()
            for k, v in r.where.items():
                s = s[s[k] == v]
            counts = s.groupby([r.by] + ([r.across] if r.across else [])).size()
            assert len(counts) >= 2 and counts.max() == 1, (page, r.title, counts[counts > 1])
            assert r.reference in set(s[r.by]), (page, r.title)
            brief = registry.get(r.dataset).points_for(mine.PROFILE)  # a point's fields (a column may be derived)
            assert any(all(getattr(p, k) == v for k, v in r.where.items()
                           if k in {f.name for f in dataclasses.fields(p)} - {r.by, "tool"}) for p in brief), \
                (page, r.title)


@pytest.mark.parametrize("page", RESULTS_PAGES)
def test_every_results_page_draws_a_reader_s_run_beside_the_book_s(monkeypatch, tmp_path, capsys, page):
    """With the published run copied as a reader's (another CPU named), every page draws each of its comparisons,
    the same ratios on both sides, and names both machines; with one dataset missing it draws the others and
    says what is missing; without a run it says what to measure and draws nothing."""
    import matplotlib.pyplot as plt
    names = mine.PAGES[page]
    books = {n: registry.reader(n)(DATA / n, "replay") for n in names}
    monkeypatch.delenv(mine.ENV, raising=False)
    plt.close("all")
    mine.show_beside(page, books)
    assert "No run of yours to draw" in capsys.readouterr().out and not plt.get_fignums()
    for n in names:
        _reader_copy(tmp_path, n)
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    mine.show_beside(page, books)
    out = capsys.readouterr().out
    assert "yours: 16 × Reader's CPU" in out.replace("\n       ", " "), out
    fig = plt.gcf()
    assert "Reader's CPU" in plots.caption(fig)
    assert len(fig.axes) == len(mine.BESIDE[page])
    for ax in fig.axes:   # each row: the same ratio in both runs, a hollow and a filled marker at one place
        marks = [line for line in ax.lines if line.get_marker() not in (None, "None", "")]
        book, yours = marks[0::2], marks[1::2]
        assert book and len(book) == len(yours) and [m.get_xdata()[0] for m in book] == [
            m.get_xdata()[0] for m in yours] and all(m.get_markerfacecolor() == "none" for m in book)
    plt.close("all")
    first = mine.BESIDE[page][0].dataset
    if len({r.dataset for r in mine.BESIDE[page]}) > 1:
        import shutil
        shutil.rmtree(tmp_path / first)
        mine.show_beside(page, books)
        out = capsys.readouterr().out.replace("\n       ", " ")
        assert f"has no run of {first}" in out and len(plt.gcf().axes) == len(
            [r for r in mine.BESIDE[page] if r.dataset != first])
        plt.close("all")


def _executed_up_to_the_table(page: str, folder) -> str:
    """The page's analysis executed as the build executes it (the cells before its summary; the exercises, some of
    which measure, left out), then its "Does it hold" cell, with IOBENCH_MINE at `folder`; the text that cell
    showed."""
    import os

    import jupytext
    from nbclient import NotebookClient

    path = CODE.parent / "book" / f"{page}.md"
    nb = jupytext.read(path)
    last = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "mine.show_holds(" in c.source)
    drawn = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "mine.show_beside(" in c.source)
    summary = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## Summary" in c.source),
                   drawn)
    # the analysis, then both machines' figure and the table (its deep dive)
    nb.cells = nb.cells[:min(summary, drawn)] + [nb.cells[drawn], nb.cells[last]]
    last = len(nb.cells) - 1
    old = os.environ.get(mine.ENV)
    os.environ[mine.ENV] = str(folder)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.pop(mine.ENV) if old is None else os.environ.__setitem__(mine.ENV, old)
    shown = []
    for out in nb.cells[last - 1].outputs + nb.cells[last].outputs:
        data = out.get("data", {})
        shown.append(out.get("text", "") or ("[a figure]" if "image/png" in data else data.get("text/html", "")))
    return "\n".join(shown)


def test_a_page_built_with_a_reader_s_run_shows_which_claims_hold_there(tmp_path):
    """reproduce-000 built with a reader's run of seed-000 in which the corrected blocking server answered every
    connection (a run that does not hold the page's claim that it answered one), and with a folder that lacks the
    dataset: the page builds either way and says what holds, what does not, and what is missing."""
    def blocking_served_all(df):
        df.loc[df.server == "java-blocking", "conns_served"] = 40
        return df
    _reader_copy(tmp_path / "doctored", "seed-000", blocking_served_all)
    shown = _executed_up_to_the_table("java/reproduce-000", tmp_path / "doctored")
    assert "the corrected java-blocking answered one connection" in shown
    assert "does not hold (served: 40)" in shown and "holds (served: 1)" in shown
    assert "Reader's CPU" in shown and "[a figure]" in shown
    (tmp_path / "empty").mkdir()
    shown = _executed_up_to_the_table("java/reproduce-000", tmp_path / "empty")
    assert "has no run of seed-000" in shown and "[a figure]" not in shown


def _page_claims():
    """Each results page's function that checks its claims, and the datasets its "Does it hold" cell hands it."""
    from iobench.book.pages import (c_results, http_clients, java_results, many_connections, measuring,
                                    mina_netty_results, open_loop, reproduce_000, rpc, side_by_side,
                                    source_reproduction)
    return {
        "c/results": (c_results.values, ("c-servers", "idle-connections")),
        "java/results": (java_results.values, ("java-servers", "idle-connections")),
        "synthesis/side-by-side": (side_by_side.values, ("scale", "idle-connections", "jvm-memory")),
        "synthesis/many-connections": (many_connections.values, ("idle-connections", "ten-thousand", "io-uring")),
        "method/open-loop": (open_loop.values, ("open-loop", "open-loop-crosscheck")),
        "method/measuring": (measuring.values, ("baselines",)),
        "clients/http-clients": (http_clients.dataset, ("http-clients",)),
        "java/rpc": (rpc.provider, ("rpc-provider",)),
        "java/mina-netty-results": (mina_netty_results.values, ("echo-sweep", "echo-experiments", "echo-split-rate")),
        "c/source-reproduction": (source_reproduction.values, ("ab-grid",)),
        "java/reproduce-000": (reproduce_000.values, ("seed-000",)),
    }


@pytest.mark.parametrize("page", RESULTS_PAGES)
def test_the_published_run_as_the_reader_s_holds_every_claim_the_page_states(monkeypatch, tmp_path, page):
    """Every results page's claims, on its published datasets copied as a reader's run: each holds on both
    machines, and the page's cell names the same datasets (what a reader must measure for the page)."""
    values, names = _page_claims()[page]
    cell = (CODE.parent / "book" / f"{page}.md").read_text().split("\nbooks = {", 1)[1].split("\n```", 1)[0]
    assert [n for n in names if f'"{n}"' in cell] == list(names), cell
    books = {n: registry.reader(n)(DATA / n, "replay") for n in names}
    for n in names:
        _reader_copy(tmp_path, n)
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    got = mine.does_it_hold(values, books)
    assert not isinstance(got, str), got
    holds = got["book's machine"].map(lambda said: said == mine.HOLDS or said.startswith(mine.HOLDS + " ("))
    assert len(got) >= 2 and holds.all(), got[~holds].values.tolist()
    assert got["yours"].tolist() == got["book's machine"].tolist()


# ---- iobench mine: a reader's run of every results page ---------------------------------------------------

HERE = mine.Machine(root=True, jdk=None, cpus=2, nofile=1 << 20)


def test_the_reader_s_plan_covers_every_results_page_s_datasets_once_within_half_an_hour():
    planned = mine.plan(machine=HERE)
    names = [p.dataset for p in planned]
    assert len(names) == len(set(names))
    assert set(names) == {n for _, datasets in _page_claims().values() for n in datasets}
    assert set(mine.PAGES) == set(RESULTS_PAGES)
    from iobench.__main__ import PAGES
    assert PAGES is mine.PAGES  # the command line's list is the same
    assert not any(p.skipped for p in planned)
    assert sum(p.estimate_s for p in planned) <= 35 * 60 and all(p.measurements > 0 for p in planned)
    for page in mine.PAGES:  # a page's own run within about five minutes
        assert sum(p.estimate_s for p in mine.plan(page, HERE)) <= 7 * 60, page
    assert [p.dataset for p in mine.plan("c/results", HERE)] == ["c-servers", "idle-connections"]
    with pytest.raises(KeyError, match="not a results page"):
        mine.plan("c/nothing", HERE)


def test_a_machine_without_root_a_jdk_or_enough_cpus_or_descriptors_skips_what_it_cannot_measure():
    bare = mine.Machine(root=False, jdk="no JDK 21+ found", cpus=2, nofile=1024)
    said = {p.dataset: p.skipped for p in mine.plan(machine=bare)}
    assert said["java-servers"] == said["rpc-provider"] == said["http-clients"] == "needs JDK 21+ (no JDK 21+ found)"
    assert said["echo-sweep"].startswith("needs JDK")
    few = mine.Machine(root=True, jdk=None, cpus=2, nofile=1024)
    assert mine.cannot("idle-connections", few) == "needs 1,104 open files in one process; the limit here is 1,024"
    assert said["c-servers"] == "" and said["baselines"] == ""  # the rest go on
    assert mine.cannot("delay-link", bare) == "needs root for a delay link (a network namespace)"
    one = mine.Machine(root=True, jdk=None, cpus=1, nofile=1 << 20)
    assert all(p.skipped.startswith("needs 2 CPUs") for p in mine.plan(machine=one))
    text = mine.plan_text(mine.plan(machine=bare), mine.Path("/home/r/iom-runs"))
    assert "  java-servers" in text and "skipped: needs JDK 21+" in text
    measured = sum(p.estimate_s for p in mine.plan(machine=bare) if not p.skipped)
    assert text.splitlines()[0].endswith(f"about {mine.minutes(measured)}")


def test_the_progress_bar_counts_measurements_across_datasets_and_says_the_time_left():
    import io
    out, now = io.StringIO(), [0.0]
    planned = [mine.Planned("p", "a", 4, 40.0, ""), mine.Planned("p", "b", 6, 60.0, ""),
               mine.Planned("p", "c", 9, 90.0, "needs root")]
    bar = mine.Progress(planned, out, clock=lambda: now[0])
    assert bar.total == 10 and "about 2 min left" in bar.bar()   # the estimate, before anything is measured
    bar.begin("a")
    now[0] = 30.0
    bar("[2/4] c-epoll  wrk keepalive c=40  rep 1: 1,000 req/s")
    assert bar.done == 2 and "[######" in out.getvalue() and "2/10 measurements, a, about 2 min left" in out.getvalue()
    bar("skip: c-uring: io_uring is not available")
    assert "skip: c-uring" in out.getvalue()  # what is not a measurement is kept
    bar.done = 4
    bar.begin("b")
    bar("[6/6] x")
    assert bar.done == 10 and bar.bar().startswith("[" + "#" * 30 + "]")


def test_iobench_mine_prints_its_plan_and_refuses_the_book_s_data(tmp_path):
    got = subprocess.run([str(CODE / "bin" / "iobench"), "mine", "--plan", "--only", "java/rpc", "--dest",
                          str(tmp_path)], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    assert "rpc-provider" in got.stdout and "measurements, about" in got.stdout
    assert not (tmp_path / "rpc-provider").exists()
    got = subprocess.run([str(CODE / "bin" / "iobench"), "mine", "--dest", str(DATA / "mine")],
                         capture_output=True, text=True)
    assert got.returncode == 2 and got.stderr.startswith("error: ") and "data/" in got.stderr
    assert not (DATA / "mine").exists()
    got = subprocess.run([str(CODE / "bin" / "iobench"), "mine", "--only", "c/nothing"], capture_output=True,
                         text=True)
    assert got.returncode == 2 and "c/nothing" in got.stderr


def test_a_machine_that_can_measure_nothing_measures_nothing_and_says_why(tmp_path):
    import io
    out = io.StringIO()
    none = mine.Machine(root=True, jdk=None, cpus=1, nofile=1 << 20)
    outcome = mine.measure_all(tmp_path / "runs", "c/results", none, out)
    assert outcome == [("c-servers", "skipped: needs 2 CPUs to pin the server and the load generator apart; "
                                     "this process may use 1"),
                       ("idle-connections", "skipped: needs 2 CPUs to pin the server and the load generator apart; "
                                            "this process may use 1")]
    assert not (tmp_path / "runs").exists() and "c-servers" in out.getvalue()
    with pytest.raises(ValueError, match="folder of their own"):
        mine.measure_all(DATA / "x", "c/results", none, out)


def test_the_table_in_one_sentence_reads_in_every_case():
    def said(*yours):
        return mine.holds_said(pd.DataFrame({"statement": [f"s{i}" for i in range(len(yours))], "yours": yours}))
    ok, no, na = "holds (a=1)", "does not hold (a=0)", "not evaluated on your run: your run lacks what it reads"
    assert said(ok, ok, ok) == "Of the page's 3 statements, all 3 hold on your machine."
    assert said(ok, no, na, na) == ("Of the page's 4 statements, 1 holds on your machine, 1 does not hold and 2 were "
                                    "not evaluated on your run.")
    assert said(no, no) == "Of the page's 2 statements, neither holds on your machine."
    assert said(no, no, no) == "Of the page's 3 statements, none holds on your machine."
    assert said(no, na) == ("Of the page's 2 statements, 1 does not hold on your machine and 1 was not evaluated on "
                            "your run.")
    assert said(ok) == "The page's one statement holds on your machine."
    assert said(na) == "The page's one statement was not evaluated on your run."
    assert said(no) == "The page's one statement does not hold on your machine."


def test_each_machine_is_named_as_a_reader_compares_two(tmp_path):
    """Cores, CPU, kernel, JDK, whether it was a virtual machine and the CPU time its host stole; a capture from
    before the virtual machine or the steal were recorded says so rather than guessing."""
    from iobench.run import metadata
    book = registry.obtain("c-servers", profile="replay")
    line = mine.machine_line(book)
    assert line.startswith(f"{book.meta['machine']['cores']} × {book.meta['machine']['cpu_model']}, Linux")
    assert ", JDK 25" in line and "virtualisation not recorded" in line and line.endswith(f"measured {book.date()}")
    assert "steal not recorded" in line  # measured before the steal columns existed
    _reader_copy(tmp_path, "c-servers", lambda df: df.assign(server_steal_s=0.0, client_steal_s=0.0))
    import json
    meta = json.loads((tmp_path / "c-servers" / "meta.json").read_text())
    meta["machine"]["virtualised"] = False
    (tmp_path / "c-servers" / "meta.json").write_text(json.dumps(meta))
    yours = registry.reader("c-servers")(tmp_path / "c-servers", "mine")
    assert "Reader's CPU" in mine.machine_line(yours) and ", not virtualised, no CPU time stolen in 192 runs;" in \
        mine.machine_line(yours)
    assert metadata.virtualised("flags\t\t: fpu vme hypervisor lahf_lm\n") is True
    assert metadata.virtualised("flags\t\t: fpu vme lahf_lm\n") is False and metadata.virtualised("") is None


def test_a_claim_s_figures_read_as_numbers_not_as_python():
    import numpy as np
    assert mine.figure(np.float64(12.893442495065877)) == "12.89" and mine.figure(np.int64(2917)) == "2,917"
    assert mine.figure(float("nan")) == "n/a" and mine.figure(True) == "true"
    assert mine.figure({"rpc-tomcat": 5558.22, "rpc-tomcat-vt": np.float64(4164.28)}) == \
        "rpc-tomcat 5,558, rpc-tomcat-vt 4,164"
    long = {f"server-{i}": 1.0 for i in range(20)}
    assert mine.figure(long).endswith(", ...") and len(mine.figure(long)) < 70
    assert mine.figure(["c-prefork", "c-threadpool"]) == "c-prefork, c-threadpool"


def test_a_claim_about_more_connections_than_workers_is_not_evaluated_on_a_run_that_had_fewer(monkeypatch, tmp_path):
    """A brief run of the reader's measures hello-world at 40 keep-alive connections at most: that the pools (64
    workers) starved connections is not a statement about it, and is said to be not evaluated there."""
    values, books = _c_results_page()
    _reader_copy(tmp_path, "c-servers", lambda df: df[df.connections <= 40])
    _reader_copy(tmp_path, "idle-connections")
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    got = mine.does_it_hold(values, books).set_index("statement")
    pools = "the sequential server, the process pool and the thread pool left connections unanswered, and only they"
    assert got.loc[pools, "book's machine"].startswith("holds")
    assert got.loc[pools, "yours"] == "not evaluated on your run: your run lacks what it reads"


def test_where_the_page_s_code_stopped_on_a_reader_s_run_is_said_above_the_table(monkeypatch, tmp_path, capsys):
    from iobench.book.claims import claim

    def values(ds, check=None):
        claim(True, "checked first")
        if ds.path.parent == tmp_path:
            raise KeyError("rpc-tomcat")
        claim(True, "checked after")
    _reader_copy(tmp_path, "seed-000")
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    books = {"seed-000": registry.obtain("seed-000", profile="replay")}
    got = mine.does_it_hold(values, books)
    assert got.attrs["stopped"] == "KeyError: 'rpc-tomcat'" and "Reader's CPU" in got.attrs["yours"]
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    mine.show_holds(values, books)
    assert "On your run the page's code stopped at KeyError: 'rpc-tomcat'" in capsys.readouterr().out


def test_a_claim_the_reader_s_run_decides_elsewhere_is_not_evaluated_there():
    """A claim whose place in the data is chosen by the data (the highest level measured, the repeats a range
    spans) says where (claim(..., at=)): on a reader's run that could decide it only elsewhere it is not the book's
    sentence, and is said to be not evaluated, with both places; decided at the same place, it is judged."""
    from iobench.book.claims import claim

    def values(ds, check=None):
        top = max(ds)
        claim(ds[top] > 1, "at the highest level it costs more than one", at={"level": top}, cost=ds[top])
    book, _ = mine.checked(values, {10: 2.0, 100: 3.0})
    smaller, _ = mine.checked(values, {10: 0.5})
    same, _ = mine.checked(values, {10: 0.5, 100: 0.5})
    assert mine.holds_table(book, smaller)["yours"].tolist() == [
        "not evaluated on your run: the book decides it at level 100, your run could only at level 10"]
    assert mine.holds_table(book, same)["yours"].tolist() == ["does not hold (cost: 0.5)"]


@pytest.mark.parametrize("page, name, change, sentence", [
    ("c/source-reproduction", "ab-grid", lambda df: df[df.requested <= 1000], "c-sequential had the highest median"),
    ("synthesis/many-connections", "io-uring", lambda df: df[df.repeat == 1],
     "c-uring-multishot's range overlaps c-epoll's at every point"),
    ("java/rpc", "rpc-provider", lambda df: df[df.fraction.isin([0.0, 0.8])],
     "every provider spent more kernel time per call at half of its capacity than at its capacity"),
])
def test_a_brief_run_leaves_the_book_s_claims_about_other_points_not_evaluated(monkeypatch, tmp_path, page, name,
                                                                                 change, sentence):
    """A reader's run with fewer requests per ab run, one repeat, fewer fractions of capacity (as iobench mine
    measures): the claims the book decides at its own longer runs, ranges and fractions are not evaluated there,
    rather than said not to hold."""
    values, names = _page_claims()[page]
    books = {n: registry.reader(n)(DATA / n, "replay") for n in names}
    for n in names:
        _reader_copy(tmp_path, n, change if n == name else None)
    monkeypatch.setenv(mine.ENV, str(tmp_path))
    got = mine.does_it_hold(values, books).set_index("statement")
    assert got.loc[sentence, "book's machine"].startswith(mine.HOLDS)
    assert got.loc[sentence, "yours"].startswith("not evaluated on your run: the book decides it at "), \
        got.loc[sentence, "yours"]
