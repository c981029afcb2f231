"""The analysis behind book/java/reproduce-000.md (iobench/book/pages/reproduce_000.py), on the captured seed-000
dataset and on small variants: one repeat, equal ends, zeros, a smoke-shaped capture, and wrong variants that break
its claims."""
import dataclasses
import math

import pytest

from conftest import ROOT, reads_as_prose, glued_in_prose
from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import reproduce_000 as page
from iobench.book.pages import text
from iobench.book.phrases import NA

PAGE = ROOT / "book" / "java" / "reproduce-000.md"


@pytest.fixture(scope="module")
def ds():
    return registry.obtain("seed-000", "replay")


def variant(ds, df, **meta):
    return dataclasses.replace(ds, df=df.reset_index(drop=True),
                               meta={**ds.meta, **meta} if meta else ds.meta)


def said(values) -> dict:
    return {name: text(v) for name, v in values.items()}



def test_the_captured_runs_give_every_name_the_page_pastes_and_the_claims_hold(ds):
    values = page.values(ds)  # the claims are checked inside
    assert glued_in_prose(PAGE) <= set(values)
    reads_as_prose(values)
    v = said(values)
    assert v["s0_bad_said"] == ("Only the servers that close without reading the request had errors: "
                                "java-seed000-blocking and java-seed000-threadpool, with 1.00 socket errors and 1.05 "
                                "to 1.23 resets per request.")
    assert v["s0_good_said"].startswith("The other servers had no socket errors, and 37 to 56 resets in a whole run")
    assert v["cp_read_err_said"] == "no read errors" and v["sp_write_said"] == "and write errors besides"
    assert v["s0_src_err_ratio"] == "15" and v["s0_bad_unread"] == "0.86 to 0.99"
    assert v["s0_conns"] == 40 and v["s0_bound"] == 2000.0


def test_one_repeat(ds):
    v = said(page.values(variant(ds, ds.df[ds.df.repeat == 1])))
    reads_as_prose(v)
    assert v["s0_bad_unread"] == "0.88 to 0.99"  # one repeat each: the range is over the two servers
    assert v["sp_err_per_req"] == pytest.approx(1.0, abs=0.01)


def test_equal_ends_read_as_one_number(ds):
    df = ds.df.copy()
    closers = df.server.isin(page.CLOSE_UNREAD)
    df.loc[closers, "tcp_out_rsts"] = (df.requests * 1.1).round().astype(int)  # 1.10 resets per request, each
    df.loc[~closers, "tcp_out_rsts"] = 40
    v = said(page.values(variant(ds, df)))
    reads_as_prose(v)
    assert "with 1.00 socket errors and 1.10 resets per request." in v["s0_bad_said"]
    assert "and 40 resets in a whole run" in v["s0_good_said"]


def test_zeros(ds):
    df = ds.df.copy()
    df.loc[~df.server.isin(page.CLOSE_UNREAD), "tcp_out_rsts"] = 0  # the others sent no reset
    pool = df.server == "java-seed000-threadpool"                     # the pool's write errors all read errors
    df.loc[pool, "errors_read"] += df.loc[pool, "errors_write"]
    df["errors_write"] = 0
    v = said(page.values(variant(ds, df)))
    reads_as_prose(v)
    assert v["s0_good_said"] == "The other servers had no socket errors, and sent no resets."
    assert v["sp_write_said"] == "and no write errors"
    df = ds.df.copy()
    df[["errors_read", "errors_write"]] = 0  # nobody had a socket error: the claims fail, the sentences still read
    v = said(page.values(variant(ds, df), check=False))
    reads_as_prose(v)
    assert v["s0_bad_said"] == "No server had more than half a socket error per request."
    assert v["s0_src_err_ratio"] == NA and v["cp_read_err_said"] == "no read errors"


def test_a_read_error_agrees_in_number(ds):
    df = ds.df.copy()
    df.loc[df.server == "java-threadpool", "errors_read"] = 1
    assert said(page.pool_errors(variant(ds, df)))["cp_read_err_said"] == "1 read error"


def test_a_smoke_shaped_capture_reads_and_checks_nothing(ds):
    """A smoke capture: one repeat of a second's run, and servers missing where a start failed (here the
    as-published Netty); nothing of it is claimed."""
    df = ds.df[(ds.df.repeat == 1) & (ds.df.server != "java-seed000-netty")].copy()
    df["requests"] //= 10
    values = page.values(variant(ds, df, profile={**ds.meta["profile"], "name": "smoke"}))
    reads_as_prose(values)
    assert math.isnan(values["sn_rps"]) and math.isnan(values["netty_vs_pool_published"])


def test_a_wrong_variant_breaks_the_claims(ds):
    df = ds.df.copy()
    df.loc[df.server == "java-seed000-threadpool", "errors_read"] = df.requests * 20  # the write-up's error rate
    with pytest.raises(ClaimBroken, match="many times fewer socket errors per request"):
        page.pool_errors(variant(ds, df))
    df = ds.df.copy()
    df.loc[df.server == "java-seed000-threadpool", "rps"] /= 16  # the write-up's headline, reproduced
    with pytest.raises(ClaimBroken, match="headline did not reproduce"):
        page.rates(variant(ds, df))
    df = ds.df.copy()
    df.loc[df.server == "java-netty", "errors_read"] = df.requests  # a corrected server now has errors too
    with pytest.raises(ClaimBroken, match="only the servers that close without reading"):
        page.exercise_4(variant(ds, df))
    df = ds.df.copy()
    df.loc[df.server == "java-netty", "tcp_out_rsts"] = 5000  # resets of the order of the requests
    with pytest.raises(ClaimBroken, match="of the order of wrk's connections"):
        page.exercise_4(variant(ds, df))
