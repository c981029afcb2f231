"""book/synthesis/many-connections.md's analysis (iobench/book/pages/many_connections.py): on the replayed datasets
every name the page pastes is glued and every claim holds; on small variants of them (one repeat, equal ends,
zeros, a smoke-sized run) every value still reads as an editor would pass it, and a wrong variant breaks a claim."""
from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import ROOT, reads_as_prose

from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import kernel_paths, many_connections as mc
from iobench.book.pages import text

PAGE = ROOT / "book" / "synthesis" / "many-connections.md"
SECTIONS = {"idle-connections": (mc.idle_connections,), "ten-thousand": (mc.ten_thousand,),
            "io-uring": (mc.io_uring,), "jvm-memory": (mc.jvm_memory,), "c100k": (mc.c100k,),
            "accept-spread": (mc.accept_spread,), "kernel-paths": (kernel_paths.loopback,),
            "io-uring-chain": (mc.uring_chain,)}


@pytest.fixture(scope="module")
def data():
    return {name: registry.obtain(name, "replay") for name in SECTIONS}


def glued(data) -> dict:
    values = {}
    for name, functions in SECTIONS.items():
        for f in functions:
            part = f(data[name])
            assert not set(part) & set(values), set(part) & set(values)
            values |= part
    return values


def replace(ds, rows=None, smoke=False, **columns):
    """ds with only `rows` (a mask of its df), `columns` set ({column: value or function of the frame}), and
    marked a smoke capture (claims not checked) if `smoke`."""
    df = ds.df[rows] if rows is not None else ds.df.copy()
    for col, v in columns.items():
        df[col] = v(df) if callable(v) else v
    meta = {**ds.meta, "profile": {**ds.meta["profile"], "name": "smoke"}} if smoke else ds.meta
    return dataclasses.replace(ds, df=df.reset_index(drop=True), meta=meta)


def one_repeat(ds, smoke=False):
    return replace(ds, ds.df.repeat == 1, smoke)


def test_every_name_the_page_pastes_is_glued_and_the_claims_hold(data):
    values = glued(data)  # the claims are checked inside: a broken one raises
    pasted = set(re.findall(r"\{glue:\w+\}`(\w+)`", PAGE.read_text()))
    glued_on_page = {n for n in pasted if n.startswith(("fig_", "live_", "sc_ex4_"))}  # the visible cells glue these
    assert pasted - glued_on_page <= set(values), sorted(pasted - glued_on_page - set(values))
    reads_as_prose(values)


def test_the_values_read_as_the_page_quotes_them(data):
    v = glued(data)
    assert v["acc_ratio_reuseport"] == "1.1"  # issue 50: was "1.1 to 1.1"
    assert v["acc_extra"] == "0.4 to 3.5" and v["sc_java_grew_range"] == "2.0 to 5.5"
    assert v["sc_ten_c_thread"] == "10,000 in each" and v["sc_ten_c_fork"] == "n/a, 3,726 and 4,133"
    assert v["ck_total_mib"] == "1,643" and text(v["ck_w"]) == "`c-epoll-workers`"
    assert v["ck_busy"].count(";") == 1 and v["sc_seg"] == "from 1,000 to 10,000"
    assert v["sc_u_vs40"] == "-6 %" and v["sc_u_bound"] == "11 of its 12 points"


def test_one_repeat_reads_one_number_where_a_range_was(data):
    # repeat 1 alone: a C server's first thousand idle connections cost 0.27 KiB more than the next: the claim (the
    # median of three, within 0.25) is not checked on it
    idle = one_repeat(data["idle-connections"], smoke=True)
    acc, ck = one_repeat(data["accept-spread"]), one_repeat(data["c100k"])
    values = mc.idle_connections(idle) | mc.accept_spread(acc) | mc.c100k(ck)
    reads_as_prose(values)
    assert values["acc_ratio_exclusive"] == "3.8" and values["acc_repeats"] == "one"
    assert values["acc_ex_skew_sw"] == "n/a"  # the one repeat is the most even: none to set against it
    assert values["sc_poll_cpuN_range"] == "165" and " to " not in values["ck_fork_held"]
    ten = one_repeat(data["ten-thousand"], smoke=True)  # c-fork's repeat 1 counted no connections: no comparison
    got = mc.ten_thousand(ten)
    reads_as_prose(got)
    assert got["sc_ten_c_fork"] == "n/a" and got["sc_ten_jthread_pct"] == "117"
    jm = one_repeat(data["jvm-memory"])
    reads_as_prose(mc.jvm_memory(jm))


def test_equal_ends_read_as_one_number(data):
    ten = replace(data["ten-thousand"], listen_overflows=11_246, server_cpu_pct=116.0)
    got = mc.ten_thousand(ten)
    reads_as_prose(got)
    assert got["sc_ten_overflows"] == "11,246" and got["sc_ten_jthread_pct"] == "116"
    acc = replace(data["accept-spread"], worker_conns_max=lambda d: d.worker_conns_min * 1.5)
    ratios = mc.accept_spread(replace(acc, smoke=True))
    assert {ratios[f"acc_ratio_{m}"] for m in mc.SHARES} == {"1.5"}
    with pytest.raises(ClaimBroken, match="SO_REUSEPORT spread the connections more evenly"):
        mc.accept_spread(acc)


def test_zeros_read_and_break_the_claims_they_contradict(data):
    uring = replace(data["io-uring"], server_cpu_us_per_req=0.0)
    with pytest.raises(ClaimBroken, match="c-uring cost more than c-epoll"):
        mc.io_uring(uring)
    got = mc.io_uring(replace(uring, smoke=True))
    reads_as_prose(got)
    assert got["sc_u_vs40"] == "n/a" and got["sc_u40_c_epoll"] == "0.0"
    ten = replace(data["ten-thousand"], smoke=True, listen_overflows=0, conns_served=0)
    got = mc.ten_thousand(ten)
    reads_as_prose(got)
    assert got["sc_ten_overflows"] == "0" and got["sc_ten_full"] == "none" and got["sc_ten_c_thread"] == "0 in each"
    idle = data["idle-connections"]
    flat = replace(idle, pss_rest_kib=lambda d: d.pss_rest_kib.where(~d.server.str.startswith("java-"), 1e6))
    with pytest.raises(ClaimBroken, match="most Java servers' first thousand"):
        mc.idle_memory(flat)


def test_a_smoke_sized_run_reads_and_names_every_value(data):
    """What the smoke captures measure (a few servers, low levels, one repeat): every name the page pastes is
    still glued, as "n/a" or "none" where the run lacks it, and no KeyError."""
    pasted = set(re.findall(r"\{glue:\w+\}`(\w+)`", PAGE.read_text()))
    full = {n for n in glued(data) if n in pasted}
    idle = data["idle-connections"]
    small = {
        "idle-connections": replace(idle, idle.df.server.isin(["c-epoll", "c-thread"]) & (idle.df.idle_conns <= 1000)
                                    & (idle.df.repeat == 1), smoke=True),
        "ten-thousand": replace(data["ten-thousand"], data["ten-thousand"].df.server.isin(["nginx", "c-epoll"]),
                                smoke=True),
        "io-uring": replace(data["io-uring"], data["io-uring"].df.server.isin(["c-epoll", "nginx"]), smoke=True),
        "jvm-memory": replace(data["jvm-memory"], data["jvm-memory"].df.server.isin(["java-thread", "java-netty"])
                              & (data["jvm-memory"].df.idle_conns <= 5000), smoke=True),
        "c100k": replace(data["c100k"], data["c100k"].df.server.isin(["c-epoll-workers", "nginx-workers", "c-epoll"])
                         & (data["c100k"].df.idle_conns <= 19_000), smoke=True),
        "accept-spread": replace(data["accept-spread"], data["accept-spread"].df.share == "reuseport", smoke=True),
        "kernel-paths": replace(data["kernel-paths"], data["kernel-paths"].df.server.isin(["nginx", "c-epoll"])
                                & (data["kernel-paths"].df.repeat == 1), smoke=True),
        "io-uring-chain": replace(data["io-uring-chain"], data["io-uring-chain"].df.server.isin(["c-epoll", "c-uring"])
                                  & (data["io-uring-chain"].df.repeat == 1), smoke=True),
    }
    values = glued(small)
    reads_as_prose(values)
    assert set(full) <= set(values), sorted(set(full) - set(values))
    assert values["sc_kib_c_poll"] == "n/a" and values["sc_seg"] == "from none to 1,000"
    assert values["mcj_heap_java_nio"] == "n/a" and values["ck_fork_top"] == "n/a" and values["acc_extra"] == "n/a"


def test_a_wrong_variant_breaks_the_claim_it_contradicts(data):
    idle = data["idle-connections"]
    cheap_poll = replace(idle, server_cpu_us_per_req=lambda d: d.server_cpu_us_per_req.where(d.server != "c-poll",
                                                                                              8.0))
    with pytest.raises(ClaimBroken, match="c-poll's every repeat at the highest level"):
        mc.idle_cpu(cheap_poll)
    ten = data["ten-thousand"]
    with pytest.raises(ClaimBroken, match=r"c-fork and java-thread \(not c-thread\) lost"):
        mc.ten_thousand(replace(ten, conns_served=lambda d: d.conns_served.where(d.server != "c-thread", 9_000)))
    ck = data["c100k"]
    short = replace(ck, idle_open=lambda d: d.idle_open.where((d.server != "nginx-workers")
                                                             | (d.idle_conns != d.idle_conns.max()), 99_000))
    with pytest.raises(ClaimBroken, match="nginx-workers held and answered every idle connection"):
        mc.c100k(short)
    jm = data["jvm-memory"]
    native = replace(jm, jvm_committed_kib=lambda d: d.jvm_committed_kib.where(
        d.server != "java-vthread", d.jvm_committed_kib + 5 * d.idle_open))  # 5 KiB per connection outside the heap
    with pytest.raises(ClaimBroken, match="java-vthread's idle connections grew its live heap, not its native"):
        mc.jvm_memory(native)
    with pytest.raises(AssertionError):  # the check the values pass fails on the range issue 50 found
        reads_as_prose({"acc_ratio_reuseport": "1.1 to 1.1"})


def test_the_uring_chain_reads_in_every_case_the_data_can_produce(data):
    """One repeat, equal steps, zeros, a missing server: the chain's sentences read, and never list every number."""
    chain = data["io-uring-chain"]
    one = mc.uring_chain(one_repeat(chain, smoke=True))
    reads_as_prose(one)
    assert text(one["uc_moved"]).startswith("With one repeat per point") and one["uc_repeats"] == "one"
    flat = replace(chain, server_cpu_us_per_req=5.0, smoke=True)
    got = mc.uring_chain(flat)
    reads_as_prose(got)
    assert text(got["uc_moved"]) == "No step moved CPU per request beyond the repeats' ranges at any load."
    assert got["uc_total"] == "did not change at any load" and got["uc_epoll"] == "did not differ at any load"
    zero = mc.uring_chain(replace(chain, server_cpu_us_per_req=0.0, smoke=True))
    reads_as_prose(zero)
    assert zero["uc_total"] == "n/a"
    full = mc.uring_chain(chain)
    reads_as_prose(full)
    assert text(full["uc_moved"]).count("%") <= 2  # two ranges at most: the table beside it has every number
    assert full["uc_epoll_overlap"] == "at every load" and full["uc_idle_n"] == "10,000"
    missing = mc.uring_chain(replace(chain, chain.df.server != "c-uring-multishot", smoke=True))
    reads_as_prose(missing)
    assert missing["uc_total"] == missing["uc_epoll"] == "n/a" and "n/a KiB with" in text(missing["uc_idle"])


def test_a_chain_whose_last_step_keeps_its_buffers_breaks_the_memory_claim(data):
    chain = data["io-uring-chain"]
    kept = replace(chain, pss_rest_kib=lambda d: d.pss_rest_kib.where(
        (d.server != "c-uring-multishot") | (d.idle_conns == 0), d.pss_rest_kib + 12 * d.idle_open.fillna(0)))
    with pytest.raises(ClaimBroken, match="more than four times its memory per idle connection"):
        mc.uring_chain(kept)


def test_the_chain_is_measured_as_the_page_says():
    from iobench.kinds.http.plans import IO_URING_CHAIN
    assert IO_URING_CHAIN.servers == mc.CHAIN and IO_URING_CHAIN.restart_each_point
    loads = {(p.connections, p.pipeline) for p in IO_URING_CHAIN.points if not p.idle_conns}
    assert loads == set(mc.CHAIN_LOADS.values())
    assert [p.idle_conns for p in IO_URING_CHAIN.points if p.idle_conns] == [10_000]
