"""The analysis behind book/java/results.md (iobench/book/pages/java_results.py), on the captured java-servers and
idle-connections datasets and on small variants: one repeat, equal ends, zeros, an idle study without the Java
servers (a smoke capture's)."""
import dataclasses
import math
import re

import pytest

from conftest import ROOT, reads_as_prose, glued_in_prose
from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import java_results as page
from iobench.book.phrases import NA
from iobench.kinds.http import dataset
from iobench.run.profiles import DATA

PAGE = ROOT / "book" / "java" / "results.md"


@pytest.fixture(scope="module")
def ds():
    return registry.obtain("java-servers", "replay")


@pytest.fixture(scope="module")
def idle():
    return dataset.load(DATA / "idle-connections")


def variant(ds, df):
    return dataclasses.replace(ds, df=df.reset_index(drop=True))



def test_the_captured_runs_give_every_name_the_page_pastes_and_the_claims_hold(ds, idle):
    values = page.values(ds, idle)  # the claims are checked inside
    assert glued_in_prose(PAGE) <= set(values)
    reads_as_prose(values)
    assert values["j_starved_list"] == "java-blocking 1, java-threadpool 64"
    assert values["j_vthread_pss_repeats"] == "its 3 repeats ranged from 202 to 312 MiB"
    assert values["j_nio_predicted"] == values["j_nio_served"] == 30
    assert values["jx_hi_java_thread"] == "56.3 (56.0 to 61.8)"


def test_one_repeat(ds, idle):
    one = variant(ds, ds.df[ds.df.repeat == 1])
    idle_one = variant(idle, idle.df[idle.df.repeat == 1])
    values = page.values(one, idle_one)
    reads_as_prose(values)
    assert values["j_vthread_pss_repeats"].startswith("its one repeat measured ")
    assert re.fullmatch(r"[\d.]+ \([\d.]+\)", values["jx_lo_java_thread"])  # one repeat: its range is one number
    assert values["j_best_repeats"] == 1


def test_equal_ends_read_as_one_number(ds, idle):
    df = ds.df.copy()
    df.loc[(df.server == "java-vthread") & (df.connections == 1000), "pss_kib"] = 250 * 1024
    df.loc[df.server == "java-nio", "errors"] = 9
    df.loc[df.work_ms == 20, "rps"] = df.loc[df.work_ms == 20, "server"].map(
        lambda sid: 47.0 if sid in page.ONE_AT_A_TIME else 1900.0)
    values = page.values(variant(ds, df), idle)
    reads_as_prose(values)
    assert values["j_vthread_pss_repeats"] == "its 3 repeats all measured 250 MiB"
    assert values["j_nio_errors"] == "9"
    assert values["j_one_span"] == "94.0" and values["j_littles_span"] == "95.0"


def test_zeros(ds, idle):
    df = ds.df.copy()
    df["generator_bound"] = False
    df["errors"] = 0
    values = page.values(variant(ds, df), idle)
    reads_as_prose(values)
    assert values["j_bound"] == values["jp_bound"] == 0 and values["j_pipe_bound_n"] == "0"
    assert values["j_nio_errors"] == "0"


def test_an_idle_study_without_the_java_servers_reads_as_not_measured(ds, idle):
    c_only = variant(idle, idle.df[~idle.df.server.str.startswith("java-")])
    values = page.thousand_connections(ds, c_only) | page.exercise_1(ds, c_only)
    reads_as_prose(values)
    assert values["jx_lo"] == values["jx_marg_java_thread"] == values["jx_thread_vs_vthread"] == NA
    assert values["jx_busy_java_thread"] == "69.0"  # from this page's own runs


def test_a_dataset_without_a_1000_connection_point(ds, idle):
    values = page.values(variant(ds, ds.df[ds.df.connections != 1000]), idle)
    reads_as_prose(values)
    assert values["j_starved_list"] == "none" and math.isnan(values["j_thread_threads"])
    assert values["jx_busy_java_vthread"] == NA and values["jx_busy_over_marg_java_netty"] == NA


def test_a_wrong_variant_breaks_the_claims(ds, idle):
    df = ds.df.copy()
    df.loc[(df.server == "java-nio") & (df.work_ms == 20), "errors"] = 40  # wrk now reports every unanswered one
    with pytest.raises(ClaimBroken, match="fewer errors than the connections java-nio never answered"):
        page.java_nio(variant(ds, df))
    df = ds.df.copy()
    vt = (df.server == "java-vthread") & (df.connections == 1000)
    df.loc[vt, "pss_kib"] = 1024.0  # busy, java-vthread now below java-thread
    with pytest.raises(ClaimBroken, match="java-vthread's PSS was above java-thread's"):
        page.thousand_connections(variant(ds, df), idle)
    slower = idle.df.copy()
    slower.loc[slower.server == "java-vthread", "pss_rest_kib"] *= 4  # an idle virtual thread now costs the most
    with pytest.raises(ClaimBroken, match="a platform thread cost the most"):
        page.exercise_1(ds, variant(idle, slower))
