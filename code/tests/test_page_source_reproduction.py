"""The analysis behind book/c/source-reproduction.md (iobench/book/pages/source_reproduction.py), on the captured
ab-grid, ab-backlog and delay-link datasets and on small variants: one repeat, equal ends, zeros, a grid without
the page's servers."""
import dataclasses
import math
import re

import pytest

from conftest import ROOT, reads_as_prose, glued_in_prose
from iobench.book.claims import ClaimBroken
from iobench.book.pages import source_reproduction as page
from iobench.book.phrases import NA
from iobench.kinds.http import dataset
from iobench.run.profiles import DATA

PAGE = ROOT / "book" / "c" / "source-reproduction.md"


@pytest.fixture(scope="module")
def grid():
    return dataset.load(DATA / "ab-grid")


@pytest.fixture(scope="module")
def bl():
    return dataset.load(DATA / "ab-backlog")


@pytest.fixture(scope="module")
def dl():
    return dataset.load(DATA / "delay-link")


def variant(ds, df):
    return dataclasses.replace(ds, df=df.reset_index(drop=True))


def merged(parts) -> dict:
    out = {}
    for part in parts:
        assert not set(part) & set(out), set(part) & set(out)
        out |= part
    return out



def test_the_captured_runs_give_every_name_the_page_pastes_and_the_claims_hold(grid, bl, dl):
    values = merged(page.grid_parts(grid) + [page.backlog(bl), page.delay_link(dl), page.exercise_1(grid)])
    assert glued_in_prose(PAGE) <= set(values)
    reads_as_prose(values)
    assert values["g_seq_tied"] == "though 5 other servers had a repeat above it"
    assert values["g_seq_range"] == "10,279 to 11,453"
    assert values["rx1_span"] == "1.75 to 2.22" and values["dl_py_retr"] == "500 to 544"
    assert values["bl_fork_ok_runs"] == "the one run that completed managed"


def test_one_repeat(grid, bl, dl):
    one = [variant(ds, ds.df[ds.df.repeat == 1]) for ds in (grid, bl, dl)]
    values = merged([page.loopback(one[0]), page.grid_spread(one[0]), page.python_errors(one[0]),
                     page.backlog(one[1]), page.delay_link(one[2])])
    reads_as_prose(values)
    assert re.fullmatch(r"[\d,]+", values["g_seq_range"])  # one repeat: its range is one number
    assert values["g_cell_spread"] == "0" and values["dl_py_retr"].isdigit()
    assert ";" not in values["dl_py_repeats"]
    assert values["g_seq_tied"] == "and no other server had a repeat above it"


def test_equal_ends_read_as_one_number(grid, dl):
    df = grid.df.copy()
    seq = df.server == "c-sequential"
    df.loc[seq, "rps"] = df.loc[seq].groupby(["requested", "connections"]).rps.transform("median")
    values = page.loopback(variant(grid, df))
    reads_as_prose(values)
    assert re.fullmatch(r"[\d,]+", values["g_seq_range"])
    d = dl.df.copy()
    d.loc[d.server == "python-http-server", "tcp_retrans_segs"] = 520
    assert page.delay_link(variant(dl, d))["dl_py_retr"] == "520"


def test_zeros(grid, bl):
    df = grid.df.copy()
    df["outlier"] = False
    df[["listen_overflows", "tcp_retrans_segs"]] = 0
    values = page.grid_spread(variant(grid, df)) | page.python_errors(variant(grid, df))
    reads_as_prose(values)
    assert values["g_outliers"] == 0 and values["g_outlier_range"] == "none" and values["g_outlier_max_s"] == 0.0
    assert values["py10_over"] == 0.0
    b = bl.df.copy()
    b["outlier"] = False
    b["ok"] = True
    values = page.backlog(variant(bl, b))
    reads_as_prose(values)
    assert values["bl_outlier_list"] == "none" and values["bl_fork_failed"] == 0
    assert values["bl_fork_ok_runs"] == "the 3 runs that completed managed a median of"


def test_a_grid_without_the_pages_servers(grid):
    other = variant(grid, grid.df[~grid.df.server.isin(["c-sequential", "c-fork", "python-http-server"])])
    values = merged(page.grid_parts(other))
    reads_as_prose(values)
    assert math.isnan(values["g_seq_rps"]) and values["g_seq_range"] == NA
    assert values["py_failed_points"] == "none" and values["g_failed_servers"] == "none"


def test_a_wrong_variant_breaks_the_claims(grid, dl):
    df = grid.df.copy()
    df.loc[df.server == "c-fork", "rps"] *= 10  # c-fork now faster than c-sequential with one client
    with pytest.raises(ClaimBroken, match="c-sequential answered more requests per second than c-fork"):
        page.loopback(variant(grid, df))
    df = grid.df.copy()
    df.loc[(df.server == "c-thread") & (df.connections == 10), "rps"] *= 3  # c-thread now gains sixfold
    with pytest.raises(ClaimBroken, match="every C server but c-fork about doubled its rate"):
        page.exercise_1(variant(grid, df))
    d = dl.df.copy()
    d.loc[d.server == "c-epoll", "tcp_retrans_segs"] = 3  # a C server now retransmits too
    with pytest.raises(ClaimBroken, match="retransmitted where no C server did"):
        page.delay_link(variant(dl, d))


def test_the_outliers_sentence_reads_at_none_one_and_many():
    from iobench.book.pages.source_reproduction import _flagged_said
    assert _flagged_said(0, "n/a", 0) == "No successful repeat lay more than 20 % from its cell's median."
    assert _flagged_said(1, "1.30", 1).startswith("One successful repeat was flagged") and "(and one failed run in" in \
        _flagged_said(1, "1.30", 1)
    assert _flagged_said(47, "0.63 to 1.53", 2).startswith("47 successful repeats were flagged")
    reads_as_prose({str(k): _flagged_said(k, "1.2", f) for k in (0, 1, 5) for f in (0, 1, 3)})
