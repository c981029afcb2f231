"""The analysis behind book/method/open-loop.md (iobench/book/pages/open_loop.py): on the replayed runs, every value
the page glues, as prose, with its claims holding; on small variants (one repeat, equal ends, zeros, a smoke-sized
capture of one server), values that still read as prose, or the claim the variant breaks."""

import pytest
from conftest import ROOT, changed, glued_in_prose, reads_as_prose, rows

from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import open_loop, text

PAGE = ROOT / "book" / "method" / "open-loop.md"
GLUED_ON_THE_PAGE = {"fig_ol_hockey_20", "fig_ol_hockey_0"}  # glued by the page's visible cells


@pytest.fixture(scope="module")
def ol():
    return registry.obtain("open-loop", "replay")


@pytest.fixture(scope="module")
def xc():
    return registry.obtain("open-loop-crosscheck", "replay")


def of_open_loop(ds):
    """Every value the page glues from the open-loop dataset."""
    return {**open_loop.hockey(ds), **open_loop.no_work(ds), **open_loop.flagged(ds), **open_loop.fairness(ds),
            **open_loop.generator(ds)}



def test_the_replayed_runs_give_every_name_the_page_pastes_and_its_claims_hold(ol, xc):
    values = {**of_open_loop(ol), **open_loop.crosscheck(xc), **open_loop.exercise4(xc)}
    pasted = glued_in_prose(PAGE)   # less the caption of its figure of both machines
    assert pasted - GLUED_ON_THE_PAGE <= set(values), sorted(pasted - GLUED_ON_THE_PAGE - set(values))
    reads_as_prose(values)
    assert values["ol_cap_range"] == "1,886 to 1,945" and values["ol_knees"] == "all four at 120 %"
    assert values["ol_free0_detail"] == ("the generator at 53 to 90 % of its core; their capacities are in the table "
                                         "above")
    assert values["ol_flagged_where"] == "c-epoll, c-threadpool, java-netty, java-vthread and nginx"
    assert values["xc_closed0_us"] == "7.7 to 7.1" and values["xc_closed0_gen_us"] == "7.8 to 6.8"  # slowest first
    assert values["ol_gen_low_us"] == "41 to 67" and values["ol_all_served"] == "every connection"
    assert values["ol_ex4_over_server"] == "c-epoll" and values["ol_ex4_over_elapsed"] == "5.24"


def test_one_repeat_reads_as_prose(ol, xc):
    one_ol, one_xc = rows(ol, lambda df: df.repeat == 1), rows(xc, lambda df: df.repeat == 1)
    values = {**of_open_loop(one_ol), **open_loop.crosscheck(one_xc), **open_loop.exercise4(one_xc)}
    reads_as_prose(values)
    assert values["xc_closed0_range"] == "121,760" and values["xc_closed0_us"] == "7.7"  # one repeat: one number
    assert " to " not in values["ol_java_caps0"]


def test_equal_ends_read_as_one_number(ol, xc):
    level = changed(ol, lambda df: (df.loop == "closed") & (df.work_ms == 20), achieved_rps=1_900.0)
    values = open_loop.hockey(level)
    reads_as_prose(values)
    assert values["ol_cap_range"] == "1,900"
    flat = changed(xc, lambda df: (df.loop == "closed") & (df.server == "c-epoll") & (df.work_ms == 0),
                   achieved_rps=130_000.0, server_cpu_us_per_req=7.0, client_cpu_us_per_req=7.0)
    values = open_loop.crosscheck(flat)
    reads_as_prose(values)
    assert (values["xc_closed0_range"], values["xc_closed0_us"], values["xc_closed0_gen_us"]) == ("130,000", "7.0",
                                                                                                   "7.0")


def test_zeros_read_as_prose(ol):
    calm = changed(ol, lambda df: df.index == df.index, outlier=False)
    values = open_loop.flagged(calm)
    reads_as_prose(values)
    assert values["ol_flagged"] == "0" and values["ol_flagged_where"] == "n/a"
    assert text(values["ol_other_said"]) == "There are no other flags." and values["ol_jit_fits"] == "no repeat"
    # nothing dropped at 150 % says so; one dropped request is one, not "1 ... were"
    assert open_loop.dropped_at(0, 11_505).startswith("none of the 11,505 requests offered was dropped")
    assert open_loop.dropped_at(1, 11_505) == ("the generator dropped 1 of the 11,505 requests offered: they found "
                                               "its cap on requests in flight full")


def test_a_smoke_sized_capture_of_one_server_reads_as_prose(ol):
    # what test_openrun's smoke capture holds: c-epoll with 20 ms of work, its closed loop and a few open points
    smoke = rows(ol, lambda df: (df.server == "c-epoll") & (df.work_ms == 20) & (df.repeat == 1)
                 & ((df.loop == "closed") | df.fraction.isin([0.5, 1.5])))
    values = of_open_loop(smoke)
    reads_as_prose(values)
    assert values["ol_ref"] == "c-epoll" and values["ol_ref_p99_80"] == "n/a" and values["ol_gen_closed"] == "n/a"
    assert values["ol_bound0"] == "none of them" and values["ol_gen_ceiling"] == "none"


def test_a_variant_the_sentences_do_not_fit_breaks_or_changes_them(ol):
    flagged_with_work = changed(ol, lambda df: (df.work_ms == 20) & (df.repeat == 1) & (df.loop == "closed"),
                                outlier=True)
    with pytest.raises(ClaimBroken, match="every flagged row is without work"):
        open_loop.flagged(flagged_with_work)
    starved = changed(ol, lambda df: (df.loop == "open") & (df.fraction == 1.5), conns_served=39)
    values = open_loop.fairness(starved)
    reads_as_prose(values)
    assert values["ol_all_served"].startswith("not every connection (some went unanswered at ")
