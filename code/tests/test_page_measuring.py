"""The analysis behind book/method/measuring.md (iobench/book/pages/measuring.py), on the captured baselines and on
small variants of it: one repeat, equal ends, zeros, a dataset without the page's servers (a smoke capture's)."""
import dataclasses
import math

import pytest

from conftest import ROOT, reads_as_prose, glued_in_prose
from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import measuring
from iobench.book.phrases import NA

PAGE = ROOT / "book" / "method" / "measuring.md"


@pytest.fixture(scope="module")
def ds():
    return registry.obtain("baselines", "replay")


def variant(ds, df):
    return dataclasses.replace(ds, df=df.reset_index(drop=True))



def test_the_captured_run_gives_every_name_the_page_pastes_and_its_claims_hold(ds):
    values = measuring.values(ds)  # the claims are checked inside
    assert glued_in_prose(PAGE) <= set(values)
    reads_as_prose(values)
    assert values["python_threads"] == "2 to 9"
    assert values["method_ex5_both"].startswith("wrk keepalive at 10, 40, 100, 400 and 1000 connections and ab ")
    assert values["battery_python"].endswith("exactly the three its design predicts")


def test_one_repeat(ds):
    one = variant(ds, ds.df[ds.df.repeat == 1])
    values = measuring.values(one)
    reads_as_prose(values)
    assert values["baselines_outliers"] == int(one.df.outlier.sum())
    cleared = measuring.outliers(variant(ds, one.df.assign(outlier=False)))
    assert cleared == {"baselines_outliers": 0, "baselines_outlier_list": "none",
                       "baselines_outliers_said": "No repeat of this run was flagged as an outlier."}
    assert values["python_ka40_overflows"].endswith("per run of that point (1 run)")


def test_equal_ends_read_as_one_number(ds):
    df = ds.df.copy()
    df["server_threads_max"] = 4
    df["listen_overflows"] = 500
    values = measuring.values(variant(ds, df))
    reads_as_prose(values)
    assert values["python_threads"] == "4"
    assert values["python_ka40_overflows"].startswith("the kernel counted 500 listen-queue overflows")


def test_zeros(ds):
    df = ds.df.copy()
    df[["listen_overflows", "client_cpu_pct"]] = 0
    df["generator_bound"] = False
    df.loc[df.server == "python-http-server", "rps"] = 0.0
    with pytest.raises(ClaimBroken, match="the generator was saturated"):
        measuring.forty_connections(variant(ds, df))
    values = measuring.python_tail(variant(ds, df)) | measuring.exercise_5(variant(ds, df))
    reads_as_prose(values)
    assert values["python_ka40_overflows"] == ("the kernel counted no listen-queue overflows (ListenOverflows) "
                                               "in any of the 3 runs of that point")
    assert values["method_ex5_bound"] == "none of the 14 points was generator-bound"
    df["client_cpu_pct"] = 95.0
    assert math.isnan(measuring.forty_connections(variant(ds, df))["ka40_ratio"])


def test_a_capture_without_the_pages_servers_reads_as_not_measured(ds):
    other = variant(ds, ds.df.assign(server=ds.df.server.map({"nginx": "test-ok", "python-http-server": "test-b"})))
    other = dataclasses.replace(other, battery={})
    values = measuring.values(other)
    reads_as_prose(values)
    assert math.isnan(values["nginx_ka40_rps"]) and math.isnan(values["python_ka40_p99"])
    assert values["python_threads"] == NA and values["python_p99_reading"] == "not measured in this run"
    assert values["method_ex5_bound"] == "no points were generator-bound"
    assert values["battery_python_alive"] == "Whether it survives every case, this run did not check."


def test_a_wrong_variant_breaks_the_claims(ds):
    df = ds.df.copy()
    py = df.server == "python-http-server"
    df.loc[py, "p99_ms"] = df.loc[py, "p50_ms"] * 2  # a tail no longer hundreds of times the median
    with pytest.raises(ClaimBroken, match="hundreds of times its median"):
        measuring.python_tail(variant(ds, df))
    df = ds.df.copy()
    nginx_close = (df.server == "nginx") & (df["mode"] == "close")
    df.loc[nginx_close, "server_cpu_us_per_req"] = 1.0  # closing no longer costs nginx more
    with pytest.raises(ClaimBroken, match="CPU per request rises"):
        measuring.forty_connections(variant(ds, df))


def test_http_servers_failures_against_its_design(ds):
    failed = ("pipelined_10", "concurrent_500", "http10_get")
    battery = {**ds.battery, "python-http-server": [dict(v, passed=v["case"] not in failed)
                                                    for v in ds.battery["python-http-server"]]}
    values = measuring.battery(dataclasses.replace(ds, battery=battery))
    reads_as_prose(values)
    assert values["battery_python"].endswith(
        "but its design predicts three failures, and this run differs: it also failed http10_get; "
        "it passed keepalive_100")
