"""book/clients/http-clients.md's analysis (iobench.book.pages.http_clients) on the chapter's captured datasets and
on small variants of them (one repeat, equal ends, zeros, a capture shaped like a smoke run's): every name the page
quotes is there, the claims hold on the captured data, and every value reads as an editor would pass it."""
from __future__ import annotations

import dataclasses
import re

import pytest

from conftest import ROOT, reads_as_prose
from iobench import registry
from iobench.book.claims import ClaimBroken
from iobench.book.pages import http_clients as page
from iobench.book.pages import text
from iobench.kinds.clients.plans import REFERENCE
from iobench.load.clientload import IDS

PAGE = ROOT / "book/clients/http-clients.md"
# as the page's visible cells set them: the threads its tables leave out, and the burst runs of client-burst
HOUSEKEEPING = {"main", "openload-sampler", "ForkJoinPool.commonPool-delayScheduler", "Reference Handler",
                "Finalizer", "Signal Dispatcher", "Notification Thread", "Common-Cleaner", "Attach Listener"}


@pytest.fixture(scope="module")
def hc():
    return registry.obtain("http-clients", "replay")


@pytest.fixture(scope="module")
def cb():
    return registry.obtain("client-burst", "replay")


def dumps(hc, housekeeping=HOUSEKEEPING):
    """The page's thread tables: one repeat of the equal pools of 16 near the ceiling, each client's own threads."""
    eq16 = hc.df[(hc.df.experiment == "equal") & (hc.df.connections == 16) & hc.df.thread_dump_file.notna()]
    fraction = max(f for f in eq16.fraction.unique() if f <= 0.9)
    dumped = eq16[(eq16.fraction == fraction) & (eq16.repeat == eq16.repeat.min())].set_index("client")
    tables = {c: (t := hc.threads(dumped.loc[c]))[~t.group.isin(housekeeping)] for c in IDS if c in dumped.index}
    return tables, dumped


def burst_runs(cb):
    """The page's table of client-burst's runs: each one's setting, when its pool was all open, what it had
    answered by 5 s."""
    runs = cb.with_gc(cb.df[cb.df.ok_run & (cb.df["mode"] == "burst")]).copy()
    runs["setting"] = [s or "as run" for s in runs.setting]
    opened = [page._timeline(cb, r) for _, r in runs.iterrows()]
    runs["open_s"] = [ms / 1000 for _, ms in opened]
    runs["ok_by_5s"] = [page._answered_by(t, 5000) for t, _ in opened]
    return runs


@pytest.fixture(scope="module")
def captured(hc, cb):
    values = {}
    for part in (page.dataset(hc), page.threads(hc, *dumps(hc), HOUSEKEEPING), page.burst_hosts(hc, cb),
                 page.apache(cb, burst_runs(cb))):
        assert not set(part) & set(values), set(part) & set(values)
        values |= part
    return values


def variant(d, keep=None, **columns):
    """A dataset with only the rows `keep` selects and columns set to values (or functions of the rows)."""
    df = d.df[keep(d.df)] if keep is not None else d.df
    return dataclasses.replace(d, df=df.assign(**{c: v(df) if callable(v) else v for c, v in columns.items()}))


def readable(values: dict) -> None:
    """As an editor would pass them, and no number left unformatted ("nan") where a point is missing."""
    reads_as_prose(values)
    bad = {k: text(v) for k, v in values.items() if re.search(r"\bnan\b|\binf\b", text(v))}
    assert not bad, bad


def test_the_module_glues_every_name_the_page_quotes_and_the_claims_hold(captured):
    quoted = set(re.findall(r"\{glue:(?:text|md)\}`([^`]+)`", PAGE.read_text()))
    on_page = {q for q in quoted if q.startswith(("fig_", "live_", "hc_ex1_"))}  # glued by the page's visible cells
    assert quoted - on_page - set(captured) == set()
    readable(captured)


def test_the_equal_pools_say_ranges_where_the_table_gives_each_client(captured):
    # the table beside them gives every client's value: the prose says the range, one number a side
    for name in ("hc_eq16_add_light", "hc_eq16_add_half", "hc_eq16_hold", "hc_eq64_hold", "hc_link_add_half"):
        assert re.fullmatch(r"[\d.]+ to [\d.]+ ms", captured[name]), captured[name]
    assert captured["hc_eq_hold_said"].startswith("all ten clients' hold times in the table are within")
    assert captured["hc_ex2_in_flight"] == "6,145 (apache-hc5) and 6,193 (okhttp)"


def test_one_repeat_reads_as_prose(hc):
    one = variant(hc, keep=lambda df: df.repeat == 1)
    values = {}
    for section in (page.measured, page.park, page.burst, page.burst_apache, page.shipped, page.equal_pools,
                    page.flagged, page.link):
        values |= section(one)
    readable(values)
    assert values["hc_repeats"] == "1"
    # the page says CPU per request fell from 50 % to 90 % of the ceiling in the medians of three repeats; in
    # repeat 1 alone it did not for OkHttp with 64 connections, and the claim says so
    with pytest.raises(ClaimBroken, match="less CPU per request at 90 %"):
        page.cpu(one)


def test_a_range_whose_ends_are_equal_is_one_number(hc):
    same = variant(hc, achieved_rps=lambda df: df.achieved_rps.where(
        (df.experiment != "park") | (df.park_us != 800), 1000.0))
    values = page.park(same)
    readable(values)
    assert values["hc_park800_rps"] == "1,000" and values["hc_park800_gap"] == "200"


def test_zero_drops_break_the_claim_on_the_repeats_that_dropped(hc):
    none = variant(hc, dropped=0)
    with pytest.raises(ClaimBroken, match="where a repeat at 90 % dropped"):
        page.equal_pools(none)
    values = page.link(none)
    readable(values)
    assert values["hc_link_drop90"] == "no client"


def test_bursts_that_failed_nothing_read_as_prose(hc):
    values = page.burst(variant(hc, failed=lambda df: df.failed.where(df.experiment != "burst", 0)))
    readable(values)
    assert "failed:" not in text(values["hc_burst_line_said"])


def test_a_capture_shaped_like_a_smoke_run_reads_as_prose(hc):
    # the live smoke test's points: two clients and the C generator at half of a small pool, one burst
    smoke = variant(hc, keep=lambda df: (df.repeat == 1) & (
        ((df.experiment == "equal") & (df.connections == 16) & (df.fraction == 0.5)
         & df.client.isin(["jdk", "okhttp", REFERENCE]))
        | ((df.experiment == "burst") & (df.client == "ahc"))))
    readable(page.dataset(smoke))
    # its burst as small as a smoke run's (300 requests, answered in a blink): no "little to spare" in it
    blink = variant(smoke, max_ms=lambda df: df.max_ms.where(df.experiment != "burst", 120.0))
    said = text(page.burst(blink)["hc_burst_line_said"])
    assert "worked through the whole queue" in said and "spare" not in said and "seconds long" not in said


def test_the_claims_catch_wrong_data(hc, cb):
    with pytest.raises(ClaimBroken, match="about what was offered beyond what it answered"):
        page.shipped(variant(hc, in_flight_max=lambda df: df.in_flight_max / 2))
    with pytest.raises(ClaimBroken, match="the same few threads in every dump"):
        page.threads(hc, *dumps(hc, set()), set())  # the JVM's and the driver's threads counted as the client's
    runs = burst_runs(cb)
    swapped = runs.assign(connections=runs.connections.map({10_000: 1_000, 1_000: 10_000}))
    with pytest.raises(ClaimBroken, match="1,000 connections answered more than twice"):
        page.apache(cb, swapped)
