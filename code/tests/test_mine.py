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


def test_ratios_are_to_nginx_at_the_same_point_of_the_same_run():
    s = pd.DataFrame([
        dict(server="nginx", tool="wrk", mode="keepalive", connections=40, work_ms=0.0, rps=100.0),
        dict(server="c-epoll", tool="wrk", mode="keepalive", connections=40, work_ms=0.0, rps=50.0),
        dict(server="nginx", tool="wrk", mode="keepalive", connections=1000, work_ms=0.0, rps=80.0),
        dict(server="c-epoll", tool="wrk", mode="keepalive", connections=1000, work_ms=0.0, rps=120.0),
        dict(server="c-epoll", tool="wrk", mode="keepalive", connections=40, work_ms=20.0, rps=7.0),  # no nginx
    ])
    r = mine.relative(s).set_index(["server", "connections", "work_ms"])["rps"]
    assert r.to_dict() == {("nginx", 40, 0.0): 1.0, ("c-epoll", 40, 0.0): 0.5, ("nginx", 1000, 0.0): 1.0,
                           ("c-epoll", 1000, 0.0): 1.5}


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
    table = mine.beside(book, yours, "cpu_us_per_req", connections=40, work_ms=0.0, pipeline=1)
    assert set(table["server"]) == {"nginx", "c-epoll"}
    assert table.set_index("server").loc["nginx", ["book", "yours"]].tolist() == [1.0, 1.0]
    assert table["yours"].gt(0).all() and table.attrs["book"].endswith(book.date())
    fig = plots.beside(table)
    assert "Yours: " in plots.caption(fig) and book.date() in plots.caption(fig)


def test_the_results_page_draws_the_reader_s_run_beside_the_book_s(monkeypatch, reader_run):
    """The C results page, executed up to its section on the reader's machine, with IOBENCH_MINE pointing at a
    run of the reader's (here a smoke run of two servers): it names both machines and draws both runs."""
    import jupytext
    import nbclient

    page = CODE.parent / "book" / "c" / "results.md"
    nb = jupytext.read(page)
    end = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## Pitfalls"))
    nb.cells = nb.cells[:end]
    monkeypatch.setenv(mine.ENV, str(reader_run))
    monkeypatch.setenv("IOBENCH_PROFILE", "replay")
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(page.parent)}}).execute()
    named, drawn = nb.cells[-2:]
    text = "".join(o.get("text", "") for o in named.outputs if o.output_type == "stream")
    assert "book:" in text and "yours:" in text and "No run of yours" not in text, text
    assert "text/html" in {k for o in named.outputs for k in o.get("data", {})}  # the table
    # the figure alone in its cell: the page's caption wraps every display output of the cell (but a glue record)
    shown = [o for o in drawn.outputs if o.output_type in ("display_data", "execute_result")
             and "scrapbook" not in o.get("metadata", {})]
    assert len(shown) == 1 and "image/png" in shown[0]["data"], drawn.outputs
