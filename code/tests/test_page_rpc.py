"""book/java/rpc.md's analysis (iobench.book.pages.rpc) on the chapter's captured datasets and on small variants of
them (one repeat, equal ends, zeros, a capture shaped like a smoke run's): every name the page quotes is there, the
claims hold on the captured data, and every value reads as an editor would pass it."""
from __future__ import annotations

import dataclasses
import re

import pytest

from conftest import ROOT, reads_as_prose
from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import rpc as page
from iobench.book.pages import text

NAMES = ("rpc-provider", "rpc-keepalive", "rpc-tail", "rpc-loops", "rpc-syscalls", "rpc-kernel-paths", "kernel-paths")


@pytest.fixture(scope="module")
def ds():
    return {name: registry.obtain(name, "replay") for name in NAMES}


@pytest.fixture(scope="module")
def captured(ds):
    return everything(ds)


def everything(d: dict, check=None) -> dict:
    """Every value the page glues from its datasets, as its hidden cells ask for them."""
    values = {}
    for part in (page.provider(d["rpc-provider"], check), page.keepalive_turns(d["rpc-keepalive"], check),
                 page.loops(d["rpc-loops"], check), page.tail(d["rpc-tail"], d["rpc-provider"]),
                 page.syscalls(d["rpc-syscalls"], check),
                 page.kernel_split(d["rpc-kernel-paths"], d["kernel-paths"], check)):
        assert not set(part) & set(values), set(part) & set(values)
        values |= part
    return values


def variant(d, keep=None, smoke=False, **columns):
    """A dataset with only the rows `keep` selects, columns set to values, and as a smoke run if asked."""
    df = d.df[keep(d.df)] if keep is not None else d.df
    df = df.assign(**{c: v(df) if callable(v) else v for c, v in columns.items()})
    meta = {**d.meta, "profile": {**d.meta["profile"], "name": "smoke"}} if smoke else d.meta
    return dataclasses.replace(d, df=df, meta=meta)


def readable(values: dict) -> None:
    """As an editor would pass them, and no number left unformatted ("nan") where a point is missing."""
    reads_as_prose(values)
    bad = {k: text(v) for k, v in values.items() if re.search(r"\bnan\b|\binf\b", text(v))}
    assert not bad, bad


def test_the_module_glues_every_name_the_page_quotes_and_the_claims_hold(captured):
    quoted = set(re.findall(r"\{glue:(?:text|md)\}`([^`]+)`", (ROOT / "book/java/rpc.md").read_text()))
    on_page = {q for q in quoted if q.startswith(("fig_", "live_"))}  # glued by the page's own visible cells
    assert quoted - on_page - set(captured) == set()
    readable(captured)


def test_the_sentences_issue_50_found_read_as_the_data_give_them(captured):
    rank = text(captured["rpc_op50_rank_said"])
    assert rank.startswith("Those medians rank the providers only in part: at half load every repeat of")
    assert "(but" not in rank and "do not rank" not in rank
    assert captured["rpc_op50_rank"] == "rank the providers only in part"
    assert "answered the largest share" in text(captured["rpc_op120_main_said"])
    assert "the least" not in text(captured["rpc_op120_said"]) + text(captured["rpc_op120_main_said"])
    pairs = text(captured["rpc_tl_pairs_said"])
    assert "`rpc-tomcat`'s repeats overlapped those of `rpc-netty`, `rpc-tomcat-vt` and `rpc-webflux`" in pairs
    assert not re.search(r"below `[\w-]+` (and|overlapped)", pairs)
    assert " against 0.00" not in text(captured["rpc_ka_foreign_said"])


def test_one_repeat_reads_as_one(ds):
    one = {name: variant(d, lambda df: df["repeat"] == 1) for name, d in ds.items()}
    values = everything(one, check=False)
    readable(values)
    assert values["rpc_wk1000_tomcat_note"].startswith("repeats all at ")
    assert all(values[f"rpc_op50_p99s_{k}"].startswith("at ") for k in ("netty", "tomcat", "tomcat_vt", "webflux"))
    assert text(values["rpc_sc_wide_said"]).startswith("Each point was measured once: there is no spread")
    assert values["rpc_kt_repeats"] == "1"
    assert "% in its one run (p99" in text(values["rpc_op120_said"])


def test_equal_ends_read_as_one_number(ds):
    rpc = variant(ds["rpc-provider"], achieved_rps=lambda df: df.achieved_rps.where(
        ~((df.experiment == "warmup") & (df.window >= 7)), 40_000.0),
        p99_ms=lambda df: df.p99_ms.where(~((df.experiment == "open") & (df.fraction == 0.5)), 3.0))
    values = page.warmup(rpc) | page.open_loop(rpc, check=False) | page.work(rpc, check=False)
    readable(values)
    assert values["rpc_wlate_tomcat"] == "40,000"
    assert values["rpc_op50_p99s_netty"] == "at 3.0"
    # no repeat below another's: the medians rank nothing, and the sentence says so
    assert values["rpc_op50_rank"] == "do not rank the providers"
    assert text(values["rpc_op50_rank_said"]).startswith("Those medians do not rank the providers:")
    kt = variant(ds["rpc-keepalive"], server_cpu_us_per_req=lambda df: 20 + df.close_every / 100)
    assert page.turns(kt, check=False)["rpc_kt_range_netty"] == "each pair +1.0"


def test_zeros_are_said_as_none(ds):
    rpc = variant(ds["rpc-provider"], foreign_cpu_cores=0.0)
    said = page.keepalive(rpc)["rpc_ka_foreign_said"]
    assert said.startswith("in none of their 12 runs did the machine spend a measurable share of a core"), said
    repeats = page.repeats(rpc)
    readable(repeats)
    assert text(repeats["rpc_noisy_shift_said"]) == "With no noisy run, every median is of calm runs."
    tl = variant(ds["rpc-tail"], server_steal_s=0.0, client_steal_s=0.0)
    values = page.tail(tl, ds["rpc-provider"])
    readable(values)
    assert "took 0 ms from the provider's core and 0 ms from the generator's" in text(values["rpc_tl_steal_said"])
    assert "not at all (nothing varied) with the time stolen (n/a over all runs" in text(values["rpc_tl_rank_said"])
    kt = variant(ds["rpc-keepalive"], foreign_cpu_cores=0.0, noisy=False)
    turns = page.turns(kt)
    readable(turns)
    assert turns["rpc_kt_foreign_said"] == "about as busy in either kind of window"
    assert turns["rpc_kt_noisy"].startswith("none of the ")


def smoke_shaped(ds):
    """The datasets cut to what their smoke runs measure (code/tests/test_rpc.py's captures): the smoke plan's
    points and servers, one repeat, under the smoke profile."""
    def first(df):
        return df["repeat"] == 1
    rpc = variant(ds["rpc-provider"], lambda df: first(df) & df.server.isin(["rpc-netty", "rpc-netty-frame-binary"]) & (
        ((df.experiment == "warmup") & (df.window == 1)) | ((df.experiment == "writeup") & (df.via == "rpc-consumer"))
        | ((df.experiment == "keepalive") & ((df.close_every == 100) | (df.keep_alive_requests == 100)))
        | ((df.experiment == "sweep") & (df.connections == 64)) | ((df.experiment == "open") & (df.fraction == 0.8))
        | ((df.experiment == "work") & (df.connections == 16)) | (df.experiment == "grid")), smoke=True)
    kt = variant(ds["rpc-keepalive"], lambda df: first(df) & (df.server == "rpc-netty") & (df.window <= 1), smoke=True)
    tl = variant(ds["rpc-tail"], lambda df: first(df) & (df.server == "rpc-netty") & (df.fraction != 0.25), smoke=True)
    lp = variant(ds["rpc-loops"], lambda df: first(df) & (df.connections == 64) & (df.loop == "closed"), smoke=True)
    sc = variant(ds["rpc-syscalls"], lambda df: first(df) & df.server.isin(["rpc-tomcat", "rpc-netty"])
                 & (df.rate == 2000), smoke=True)
    kpr = variant(ds["rpc-kernel-paths"], lambda df: first(df) & (df.server == "rpc-netty") & (df.rate == 5000),
                  smoke=True)
    kp = variant(ds["kernel-paths"], lambda df: first(df) & df.server.isin(["nginx", "c-epoll", "java-nio"]),
                 smoke=True)
    return {"rpc-provider": rpc, "rpc-keepalive": kt, "rpc-tail": tl, "rpc-loops": lp, "rpc-syscalls": sc,
            "rpc-kernel-paths": kpr, "kernel-paths": kp}


def test_a_smoke_shaped_capture_reads_without_a_missing_point_breaking_it(ds):
    smoke = smoke_shaped(ds)
    assert not smoke["rpc-provider"].df.empty and not smoke["rpc-keepalive"].df.empty
    values = everything(smoke)  # under smoke no claim is checked: a few seconds support no comparison
    readable(values)
    assert values["rpc_sw_cpu_tomcat"] == "n/a"
    assert text(values["rpc_sw1_said"]) == "This capture did not measure both providers at one connection."
    assert text(values["rpc_kp_extra_said"]) == "This capture did not sample both `rpc-tomcat` and `rpc-netty`"
    assert values["rpc_kp_cover_2k"] == "n/a" and values["rpc_kp_total_tomcat_5k"] == "n/a"


def test_a_claim_the_data_no_longer_support_fails_the_page(ds):
    rpc = variant(ds["rpc-provider"], achieved_rps=lambda df: df.achieved_rps.where(
        ~((df.experiment == "warmup") & (df.window == 1) & (df.server == "rpc-netty")), 1.0))
    with pytest.raises(ClaimBroken, match="plain Netty started highest"):
        page.warmup(rpc)
    page.warmup(rpc, check=False)  # the same data, unchecked, still read
    kt = variant(ds["rpc-keepalive"], server_cpu_us_per_req=lambda df: df.server_cpu_us_per_req.where(
        df.close_every == 0, 0.5 * df.server_cpu_us_per_req))
    with pytest.raises(ClaimBroken, match="closing every 100 calls cost each provider"):
        page.turns(kt)
    assert text(page.turns(kt, check=False)["rpc_kt_sign_said"]).startswith("In only 0 of the ")


def test_where_tomcat_s_extra_kernel_time_goes_is_said_largest_first_and_checked(ds, captured):
    said = text(captured["rpc_kp_extra_said"])
    assert re.match(r"`rpc-tomcat` spent [\d.]+ µs of kernel time per call and `rpc-netty` [\d.]+: of the [\d.]+ µs "
                    r"more, [\d.]+ in ", said), said
    parts = [float(x) for x in re.findall(r"([\d.]+) in ", said.split("µs more, ")[1])]
    assert parts == sorted(parts, reverse=True) and len(parts) >= 2
    # the same run with Tomcat's scheduler, futex and system calls as Netty's: the claim fails the page
    netty = ds["rpc-kernel-paths"].df.query("server == 'rpc-netty'").groupby("rate")
    cols = ("kp_scheduler_us_per_req", "kp_futex_us_per_req", "kp_system_calls_us_per_req", "kp_epoll_us_per_req")
    flat = variant(ds["rpc-kernel-paths"], **{c: (lambda df, c=c: df[c].where(df.server != "rpc-tomcat",
                                                                            df.rate.map(netty[c].median())))
                                            for c in cols})
    with pytest.raises(ClaimBroken, match="most of rpc-tomcat's extra kernel time"):
        page.kernel_split(flat, ds["kernel-paths"])
