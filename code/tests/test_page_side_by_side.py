"""The analysis behind book/synthesis/side-by-side.md (iobench/book/pages/side_by_side.py): on the replayed run, every
value the page glues, as prose, with its claims holding; on small variants of it (one repeat, equal ends, zeros,
a smoke run's four servers), values that still read as prose, or the claim that the variant breaks."""

import pytest
from conftest import ROOT, changed, glued_in_prose, reads_as_prose, rows

from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import kernel_paths, side_by_side as sbs, text

PAGE = ROOT / "book" / "synthesis" / "side-by-side.md"
GLUED_ON_THE_PAGE = {"fig_sbs_versus", "sx_ex4_beyond"}  # glued by the page's visible cells


@pytest.fixture(scope="module")
def real():
    return {"scale": registry.obtain("scale", "replay"), "idle": registry.obtain("idle-connections", "replay"),
            "sc": registry.obtain("syscalls", "replay"), "jm": registry.obtain("jvm-memory", "replay"),
            "kp": registry.obtain("kernel-paths", "replay")}



def scale_parts(scale, idle, jm):
    return {**sbs.measured(scale), **sbs.outliers(scale), **sbs.per_server(scale, idle), **sbs.pipelined(scale),
            **sbs.connections(scale, idle), **sbs.blocking_work(scale), **sbs.choosing(scale, idle, jm),
            **sbs.summary(scale, idle)}


def test_the_replayed_run_gives_every_name_the_page_pastes_and_its_claims_hold(real):
    values = {**scale_parts(real["scale"], real["idle"], real["jm"]), **sbs.kernel(real["sc"]),
              **kernel_paths.values(real["kp"])}
    pasted = glued_in_prose(PAGE)   # less the caption of its figure of both machines
    assert pasted - GLUED_ON_THE_PAGE <= set(values), sorted(pasted - GLUED_ON_THE_PAGE - set(values))
    reads_as_prose(values)
    assert text(values["sx_sum_close"]) == ("1.6 to 10.7 times as much (the least in `c-prefork`, the most in "
                                            "`c-fork`)")
    assert text(values["sx_sum_models"]) == ("every model that serves connections at once (all but `c-sequential` "
                                             "and `java-blocking`)")
    assert text(values["sx_served_short"]) == ("`c-sequential` and `java-blocking` 1; `c-threadpool`, `c-prefork` "
                                               "and `java-threadpool` 64; `c-fork` 4,415; `java-thread` 5,316")
    assert values["sx_served_c_fork"] == "4,415"  # the fewest served in any repeat, as the table's note says
    assert values["sx_pipe_cheap_range"] == "0.57 to 0.70" and values["sx_out_rest_range"] == "12 to 19 %"
    assert values["sx_repeats"] == "three" and values["sx_pipe_n_bound"] == "18" and values["sx_pipe_n"] == "24"
    assert values["sx_idle_seg"] == "from 1,000 to 10,000" and values["sx_idle_c_prefork"] == "n/a"


def test_the_page_table_is_the_module_table(real):
    g = sbs.glance(real["scale"], real["idle"])
    assert list(g.columns) == list(sbs.COLUMNS) + [sbs.IDLE]
    assert g.loc["c-epoll", "CPU µs/req, 1,000"] == pytest.approx(
        real["scale"].value("cpu_us_per_req", server="c-epoll", connections=1000, **sbs.KA))
    assert g.loc["c-epoll", sbs.IDLE] == pytest.approx(real["idle"].marginal_value("c-epoll"))
    assert g.loc["c-epoll-workers"].isna().all()  # in the plan, not measured


def test_one_repeat_reads_as_prose_and_breaks_only_the_claims_about_repeats(real):
    one = {k: rows(ds, lambda df: df.repeat == 1) for k, ds in real.items()}
    values = {**sbs.measured(one["scale"]), **sbs.outliers(one["scale"]), **sbs.per_server(one["scale"], one["idle"]),
              **sbs.blocking_work(one["scale"]), **sbs.summary(one["scale"], one["idle"]), **sbs.kernel(one["sc"])}
    reads_as_prose(values)
    assert values["sx_repeats"] == "one"
    # with one repeat a min-max range is a point, and "a different number each time" has one time
    with pytest.raises(ClaimBroken, match="ranges of the cheapest servers per pipelined request overlap"):
        sbs.pipelined(one["scale"])
    with pytest.raises(ClaimBroken, match="a different number each time"):
        sbs.connections(one["scale"], one["idle"])


def test_equal_ends_read_as_one_number(real):
    pipe = changed(real["scale"], lambda df: df.pipeline == 16, server_cpu_us_per_req=0.6)
    values = sbs.pipelined(pipe)
    reads_as_prose(values)
    assert values["sx_pipe_cheap_range"] == "0.60"
    assert text(values["sx_pipe_cheap"]).count("`") == 2 * len(sbs.measured_order(pipe))  # every server, cheapest
    sc = changed(real["sc"], lambda df: df.server.isin(sbs.HANDOFF), sc_futex_per_req=3.0)
    kernel = sbs.kernel(sc)
    reads_as_prose(kernel)
    assert kernel["sx_sc_handoff_futex"] == "3.0" and kernel["sx_sc_loops_all"] == "3.0"


def test_zeros_read_as_prose_or_break_the_claim_they_contradict(real):
    calm = changed(real["scale"], lambda df: df.index == df.index, outlier=False)
    values = sbs.outliers(calm)
    reads_as_prose(values)
    assert values["sx_outliers"] == "0" and values["sx_out_rest_range"] == "n/a"
    # a new connection per request that cost nothing: "cost every concurrent model more" no longer holds
    free = changed(real["scale"], lambda df: df["mode"] == "close", server_cpu_us_per_req=0.0)
    with pytest.raises(ClaimBroken, match="a new connection per request cost every concurrent model more"):
        sbs.summary(free, real["idle"])


def test_a_smoke_run_of_four_servers_reads_as_prose(real):
    four = registry.get("scale").smoke_servers  # what the smoke book build measures
    smoke = {k: rows(ds, lambda df: df.server.isin(four)) for k, ds in real.items()}
    values = {**scale_parts(smoke["scale"], smoke["idle"], smoke["jm"]), **sbs.kernel(smoke["sc"])}
    reads_as_prose(values)
    assert values["sx_servers"] == "4" and values["sx_close_c_fork"] == "n/a" and values["sx_close_ratio_fork"] == "n/a"
    assert text(values["sx_sum_models"]) == "every model"
    assert values["sx_ms_vs_epoll_1"] == "n/a" and values["sx_mem_jthread_vs_vthread"] == "n/a"


def test_a_server_that_loses_connections_it_did_not_breaks_the_claim(real):
    lost = changed(real["scale"], lambda df: (df.server == "c-thread") & (df.connections == 10_000), conns_served=9_000)
    with pytest.raises(ClaimBroken, match="not c-thread, lost connections"):
        sbs.connections(lost, real["idle"])
    noisy = changed(real["sc"], lambda df: (df.server == "c-epoll") & (df.repeat == 1), noisy=True,
                    syscalls_per_req=4.0)
    with pytest.raises(ClaimBroken, match="flagged noisy counted within 10 %"):
        sbs.kernel(noisy)


def test_the_outliers_paragraph_reads_in_every_case():
    from iobench.book.pages.side_by_side import _outliers_said as said
    cases = {(1000, 30, 11, 5, 2, 9, 6, "12 to 19 %"): "Of these, 11 were generator-bound",
             (1000, 1, 1, 0, 0, 0, 0, "n/a"): "It was generator-bound",
             (1000, 1, 0, 0, 0, 0, 1, "7 %"): "It carries none of the marks",
             (1000, 0, 0, 0, 0, 0, 0, "n/a"): "flagged none of the 1,000 runs",
             (1000, 2, 0, 1, 1, 1, 1, "3 %"): "Of these, 1 was noisy",
             (1000, 3, 0, 0, 0, 0, 3, "2 to 9 %"): "None of them carries a mark"}
    for args, expected in cases.items():
        text = said(*args)
        assert expected in text, (args, text)
        assert "n/a" not in text and "of the 5 of those" not in text
    reads_as_prose({str(a): said(*a) for a in cases})
