"""The analysis behind book/c/results.md (iobench/book/pages/c_results.py), on the captured c-servers and
idle-connections datasets and on small variants: one repeat, equal ends, zeros, a smoke-shaped capture (40
connections only, one repeat), an idle study without the exercise's servers, and wrong variants that break its
claims."""
import dataclasses
import math

import pytest

from conftest import ROOT, reads_as_prose, glued_in_prose
from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import c_results as page
from iobench.book.pages import text
from iobench.book.phrases import NA
from iobench.kinds.http import dataset
from iobench.run.profiles import DATA

PAGE = ROOT / "book" / "c" / "results.md"


@pytest.fixture(scope="module")
def ds():
    return registry.obtain("c-servers", "replay")


@pytest.fixture(scope="module")
def idle():
    return dataset.load(DATA / "idle-connections")


def variant(ds, df, **meta):
    return dataclasses.replace(ds, df=df.reset_index(drop=True),
                               meta={**ds.meta, **meta} if meta else ds.meta)



def said(values) -> dict:
    return {name: text(v) for name, v in values.items()}


def test_the_captured_runs_give_every_name_the_page_pastes_and_the_claims_hold(ds, idle):
    values = page.values(ds, idle)  # the claims are checked inside
    assert glued_in_prose(PAGE) <= set(values)
    reads_as_prose(values)
    v = said(values)
    assert v["c_starved_said"] == ("At 1,000 keep-alive connections, three servers left connections without a single "
                                   "answer; the number of the 1,000 each served: c-sequential 1, c-prefork 64 and "
                                   "c-threadpool 64.")
    assert v["c_all_served_said"] == "The other ten servers answered every connection."
    assert v["c_outliers_said"] == "No repeat of this run was flagged as an outlier."
    assert v["hello_bound_said"] == "12 of the 13 servers"
    assert v["best_server"] == "c-epoll" and v["best_tied"] == "within the range of c-epoll-et's repeats"
    assert v["best_vs_nginx"] == "0.90 times nginx's, and below nginx in every repeat"
    assert v["pipe_bound_said"].startswith("even so `wrk` saturated its core against 11 of the 13 servers (96 % of")
    assert "for those 11 servers" in v["pp_bound_said"]
    assert v["ex1_repeats_said"] == "medians of 3 repeats" and v["c_most_conns"] == 1000
    assert v["cx4_repeats_said"] == "medians of 3 repeats, each above the next in every repeat"
    assert (v["cx4_fork"], v["cx4_thread"], v["cx4_epoll"]) == ("39.8", "16.3", "12.1")


def test_one_repeat(ds, idle):
    one = variant(ds, ds.df[ds.df.repeat == 1])
    idle_one = variant(idle, idle.df[idle.df.repeat == 1])
    v = said(page.values(one, idle_one, check=False))
    reads_as_prose(v)
    assert v["best_repeats_said"] == "in its one repeat"
    assert "every repeat" not in v["best_vs_nginx"] and "range" not in v["best_tied"]
    assert v["ex1_repeats_said"] == "one repeat each"
    assert v["cx4_repeats_said"] == "one repeat each, each above the next"


def test_equal_ends_read_as_one_number(ds, idle):
    df = ds.df.copy()
    df.loc[(df.pipeline > 1) & df.generator_bound, "client_cpu_pct"] = 96.0  # every filled core at the same share
    v = said(page.pipelined(variant(ds, df)))
    reads_as_prose(v)
    assert "(96 % of its core)" in v["pipe_bound_said"]  # not "96 % or more": there is no more
    # c-epoll's CPU per request the same in every repeat, and its highest equal to nginx's lowest: not below nginx
    # in every repeat, and the page says the repeats overlapped instead
    df = ds.df.copy()
    hello = (df.connections == 40) & (df.work_ms == 0) & (df.pipeline == 1)
    nginx_min = df[hello & (df.server == "nginx")].server_cpu_us_per_req.min()
    df.loc[hello & (df.server == "c-epoll"), "server_cpu_us_per_req"] = nginx_min
    v = said(page.hello_world(variant(ds, df), check=False))
    reads_as_prose(v)
    assert v["best_vs_nginx"].endswith("though their repeats overlapped")


def test_zeros(ds, idle):
    df = ds.df.copy()
    df["generator_bound"] = False  # wrk never filled its core
    df["unserved"] = False         # every server answered every connection
    v = said(page.values(variant(ds, df), idle, check=False))
    reads_as_prose(v)
    assert v["hello_bound_said"] == "none of the 13 servers"
    assert v["pipe_bound_said"].startswith("`wrk` then kept up with every server")
    assert v["pp_bound_said"].startswith("Here the generator kept up")
    assert v["c_starved_said"] == "At 1,000 keep-alive connections, every server answered every connection."
    assert v["c_starved_list"] == "none"
    assert "other" not in v["c_all_served_said"]


def test_one_server_left_unanswered_agrees_in_number(ds, idle):
    df = ds.df.copy()
    df.loc[df.server.isin(["c-prefork", "c-threadpool"]), "unserved"] = False
    v = said(page.served(variant(ds, df), check=False))
    reads_as_prose(v)
    assert "one server left connections without a single answer; the number of the 1,000 it served: " \
           "c-sequential 1." in v["c_starved_said"]
    assert v["c_all_served_said"] == "The other twelve servers answered every connection."


def test_a_smoke_shaped_capture_reads_and_checks_nothing(ds, idle):
    """What a smoke capture of c-servers holds: 40 connections (hello-world, 20 ms of work, pipelined), one repeat."""
    df = ds.df[(ds.df.connections == 40) & (ds.df.repeat == 1)].copy()
    df["server_cpu_us_per_req"] *= 3  # nothing holds on a second's run: the claims are not checked
    smoke = variant(ds, df, profile={**ds.meta["profile"], "name": "smoke"})
    values = page.values(smoke, idle)
    reads_as_prose(values)
    v = said(values)
    assert v["c_starved_said"].startswith("At 40 keep-alive connections, one server left connections")
    assert math.isnan(v["ex1_c_epoll"]) and v["ex1_repeats_said"] == "one repeat each"
    assert v["fork_conns"] == 40 and v["c_most_conns"] == 40


def test_an_idle_study_without_the_exercise_servers_reads_as_not_measured(idle):
    v = page.exercise_4(variant(idle, idle.df[idle.df.server != "c-fork"]))
    reads_as_prose(v)
    assert v["cx4_fork"] == v["cx4_to"] == NA and v["cx4_repeats_said"] == "not measured in the idle study"


def test_a_wrong_variant_breaks_the_claims(ds, idle):
    df = ds.df.copy()
    nginx = (df.server == "nginx") & (df.connections == 40) & (df.work_ms == 0) & (df.pipeline == 1)
    df.loc[nginx, "server_cpu_us_per_req"] = 1.0  # nginx now far cheaper than every single-threaded server
    with pytest.raises(ClaimBroken, match="less CPU per request than nginx in every repeat"):
        page.hello_world(variant(ds, df))
    df = ds.df.copy()
    df.loc[(df.server == "c-thread") & (df.connections == 1000), "unserved"] = True
    with pytest.raises(ClaimBroken, match="left connections unanswered, and only they"):
        page.served(variant(ds, df))
    df = ds.df.copy()
    df.loc[(df.server == "c-poll") & (df.pipeline > 1), "rps"] = 1000.0  # pipelined, now slower than single
    with pytest.raises(ClaimBroken, match="no slower than one request per round trip"):
        page.pipelined(variant(ds, df))
    slower = idle.df.copy()
    slower.loc[slower.server == "c-epoll", "pss_rest_kib"] *= 10  # an idle c-epoll connection now costs the most
    with pytest.raises(ClaimBroken, match="c-fork the most PSS"):
        page.exercise_4(variant(idle, slower))
    df = ds.df.copy()
    df.loc[df.server == "c-fork", "server_rss_kib_max"] = df.loc[df.server == "c-fork", "pss_kib"]
    with pytest.raises(ClaimBroken, match="RSS overstated its memory"):
        page.memory(variant(ds, df))


def test_the_unit_tests_smoke_capture_shape_reads(ds, idle):
    """test_results.py's smoke capture of the http kind: one server (test-ok), keep-alive at 2 connections, no
    nginx, no 20 ms point, nothing pipelined: every sentence still reads, every missing number is n/a or NaN."""
    df = ds.df[(ds.df.server == "c-epoll") & (ds.df.connections == 40) & (ds.df.repeat == 1)
               & (ds.df.work_ms == 0) & (ds.df.pipeline == 1)].assign(server="test-ok", connections=2)
    v = said(page.values(variant(ds, df, profile={"name": "smoke"}), idle))
    reads_as_prose(v)
    assert v["best_server"] == v["littles_min_server"] == v["pp_min_server"] == NA
    assert v["c_starved_said"] == "At 2 keep-alive connections, the one server answered every connection."
    assert v["pp_bound_said"] == "This run has no pipelined point to compare."
    assert v["pipe_bound_said"] == "this run did not load the servers pipelined"
