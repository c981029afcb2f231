"""The analysis behind book/clients/http-clients.md: from the datasets `http-clients` and `client-burst` to the
values its prose glues, with the claims its sentences make checked on the same data.

    glue_all(dataset(hc))                         every section read from http-clients alone
    glue_all(threads(hc, tables, dumped, HOUSEKEEPING))   the thread tables the page shows (its visible cell)
    glue_all(burst_hosts(hc, cb), apache(cb, runs))       client-burst, beside http-clients; runs: the page's

Every function reads what it needs from the dataset and tolerates a capture without it (a smoke run measures a few
points): its values then read "n/a" or say what was not measured, and the claims about what is missing are not
checked (there is nothing to check them on).
"""
from __future__ import annotations

import json
import math
import re

import pandas as pd

from iobench.book.claims import claim
from iobench.book.phrases import NA, listing, markdown, sentence, span, span_of, tally, words
from iobench.data.dataset import SLOW_FACTOR
from iobench.data.report import number, value_in
from iobench.kinds.clients.plans import REFERENCE as R
from iobench.load.clientload import IDS, thread_dump

NAN = float("nan")
APACHE = "apache-hc5"


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _median(S: pd.DataFrame):
    """v(column, **where): the one median of the summary S at a point, NaN where this run did not measure it."""
    return lambda column, **where: value_in(S, column, NAN, **where)


def _timeline(cb, row):
    """The run's timeline, and when its pool's connections were all open (ms; NaN if they never were)."""
    t = cb.timeline(row)
    opened = t[t.opened >= row.connections].t_ms
    return t, (opened.min() if len(opened) else NAN)


def _answered_by(t, ms) -> float:
    return t[t.t_ms <= ms].ok.max()


# ---- How it was measured ----------------------------------------------------------------------------------------

def measured(hc) -> dict:
    """The run's settings as the method section quotes them: versions, Java, the measured and warm-up seconds, the
    repeats, the rows and how many of them account for every request, the server's busiest share of its core."""
    df, plan = hc.df, hc.meta["plan"]
    versions = df.groupby("client", sort=False)["client_version"].first()
    java = df["java_version"].dropna()
    return {
        "hc_versions": listing(f"{c} {versions[c]}" for c in IDS if c in versions) or NA,
        "hc_java": str(java.iloc[0]) if len(java) else NA,
        "hc_measured_s": f"{plan['measured_s']:g}",
        "hc_warmup_s": f"{plan['warmup_s']:g}",
        "hc_repeats": number(df["repeat"].max()),
        "hc_rows": f"{len(df):,}",
        "hc_accounted": "every one" if df["accounted"].all() else f"all but {(~df['accounted']).sum():,}",
        "hc_server_cpu_max": number(df["server_cpu_pct"].max()),
    }


# ---- The write-up's JMH benchmark --------------------------------------------------------------------------------

def park(hc) -> dict:
    """The park runs: what every client scored at parkUs = 800 and what a loop cost beyond its pause; at 100 µs
    whether the slowest client parts from the others; the answers' latency; which runs used their whole core."""
    S = hc.summary()
    v = _median(S)
    rps = {us: {c: v("achieved_rps", client=c, experiment="park", park_us=us) for c in IDS} for us in (100, 800)}
    at800 = [x for x in rps[800].values() if _finite(x)]
    lo, hi = (min(at800), max(at800)) if at800 else (NAN, NAN)
    out = {"hc_park800_rps": span(lo, hi, ",.0f"),
           "hc_park800_gap": span(1e6 / hi - 800, 1e6 / lo - 800, ",.0f"),  # a loop's cost beyond its pause
           "hc_park100_bound": number(1e6 / 100)}
    at100 = {c: x for c, x in rps[100].items() if _finite(x)}
    slow = min(at100, key=at100.get) if at100 else None
    out["hc_park_slow"] = slow or NA
    out["hc_park_slow_cpu"] = number(v("client_cpu_us_per_req", client=slow, experiment="park", park_us=100))
    out["hc_park100_said"] = markdown(_park100_said(v, slow))
    if slow and len(at100) == len(IDS):
        cpu = {c: v("client_cpu_us_per_req", client=c, experiment="park", park_us=100) for c in IDS}
        claim(all(cpu[slow] > cpu[c] for c in IDS if c != slow),
              "the slowest client at 100 µs also spends the most CPU per request", cpu=cpu)
    runs = hc.df[(hc.df.experiment == "park") & hc.df.ok_run]
    out["hc_park_p50"] = span_of(runs.p50_ms, ".1f")
    out["hc_park_p99_max"] = number(runs.p99_ms.max(), ".1f")
    full = sorted({(r.client, r.park_us) for r in runs.itertuples() if r.client_cpu_pct >= 90})
    out["hc_park_full_core"] = markdown(listing(f"`{c}` at {int(u)} µs" for c, u in full) or "no client")
    if len(runs):
        claim(runs.p50_ms.max() < 1.2 * 10, "every median of the park runs is about the server's 10 ms",
              p50=runs.p50_ms.max())
    return out


def _park100_said(v, slow) -> str:
    """At 100 µs: the slowest client apart from the others (every repeat below theirs), or all close together."""
    at = {c: [v(f"achieved_rps{k}", client=c, experiment="park", park_us=100) for k in ("", "_min", "_max")]
          for c in IDS}
    others = [c for c in IDS if c != slow]
    if slow is None or not all(_finite(x) for c in IDS for x in at[c]):
        return "the clients were not all measured at 100 µs in this run"
    low = [at[c][0] for c in others]
    if at[slow][2] < min(at[c][1] for c in others):
        return (f"{slow} parts from the others, {number(at[slow][0])} against {span(min(low), max(low), ',.0f')} "
                "(every repeat below theirs)")
    return (f"the clients still score close together, {number(at[slow][0])} ({slow}, the lowest median) to "
            f"{number(max(low))}, with repeats that overlap")


# ---- The write-up's burst ------------------------------------------------------------------------------------------

def _bursts(hc):
    """The burst runs with what each one's collector log says, and their medians by client."""
    burst = hc.with_gc(hc.df[hc.df.experiment == "burst"])
    return burst, burst.groupby("client", sort=False).median(numeric_only=True)


def burst(hc) -> dict:
    """Where each client queues in a burst: those that let the caller submit everything (queued inside) and those
    that slowed it (fast), their latencies and threads, the 5 s line, the server's accept queue."""
    burst, B = _bursts(hc)

    def bv(c, column):
        return float(B.loc[c, column]) if c in B.index else NAN

    def most(c, column):
        got = burst.loc[burst.client == c, column]
        return float(got.max()) if len(got) else NAN

    fast = [c for c in IDS if c in B.index and most(c, "in_flight_max") < 0.1 * bv(c, "requests")]
    queued = [c for c in IDS if c in B.index and c not in fast]
    overflows = burst["listen_overflows"].max()
    return {
        "hc_burst_n": number(burst["requests"].max()),
        "hc_burst_fast": listing(fast) or "none",
        "hc_burst_queued": listing(queued) or "none",
        "hc_burst_fast_inflight": listing(f"{number(most(c, 'in_flight_max'))} ({c})" for c in fast) or NA,
        "hc_burst_fast_p50": listing(f"{number(bv(c, 'p50_ms'), ',.1f')} ms ({c})" for c in fast) or NA,
        "hc_burst_fast_threads": listing(f"{number(most(c, 'client_threads_max'))} ({c})" for c in fast) or NA,
        "hc_burst_queued_p50": listing(f"{number(bv(c, 'p50_ms'))} ms ({c})" for c in queued) or NA,
        "hc_burst_queue": ("No burst was measured in this run" if not _finite(overflows) else
                           "The server was never the limit: its accept queue never overflowed (the kernel counted "
                           "no listen overflow in any run)" if overflows == 0 else
                           f"The server's accept queue overflowed in some runs (at most {number(overflows)} times in "
                           "one)"),
        "hc_burst_line_said": markdown(_burst_line(burst, queued)),
    }


def _burst_line(burst, queued) -> str:
    """The queued clients at the 5 s line: those that failed what was still queued (how many they answered), and
    those that worked through the whole queue before it in every repeat (their slowest answer)."""
    beat = [c for c in queued if (burst.loc[burst.client == c, "failed"] == 0).all()]
    lost = [c for c in queued if c not in beat]
    slowest = {c: burst.loc[burst.client == c, "max_ms"].max() / 1000 for c in beat}
    # a queue seconds long (the chapter's burst; a smoke run's few hundred requests are answered in a blink): the
    # clients that answered everything did so with little to spare, and a small change in pace moves thousands
    long = bool(burst.loc[burst.client.isin(queued), "max_ms"].max() > 3000)
    line = []
    if lost:
        answered = listing(span_of(burst.loc[burst.client == c, "ok"], ",.0f") for c in lost)
        line.append(f"the requests still queued when their 5 s ran out failed: {listing(lost)} answered {answered} "
                    f"of the {number(burst.requests.max())}, varying from run to run")
    if beat:
        line.append(f"{listing(beat)} worked through the whole queue before the first requests' 5 s ran out, in "
                    f"every repeat{', with little to spare' if all(s > 3 for s in slowest.values()) else ''} "
                    "(slowest answers " + listing(f"{number(s, '.1f')} s" for s in slowest.values()) + ")")
    if line and long:
        line.append("with the whole queue a few seconds long, a small change in a client's pace moves thousands of "
                    "requests across the 5 s line")
    return sentence(line)


def burst_apache(hc) -> dict:
    """The deep dive's burst, from this capture: how Apache HttpClient finished it (CPU, its collector's pauses and
    heap) against the others; the write-up's Jetty beside this one's."""
    burst, B = _bursts(hc)
    v = _median(hc.summary())

    def bv(c, column):
        return float(B.loc[c, column]) if c in B.index else NAN

    runs = burst[burst.client == APACHE]
    others = [c for c in IDS if c in B.index and c != APACHE]
    out = {
        "hc_burst_apache_fate": (f"all {number(runs.requests.max())} requests in every repeat, the slowest after "
                                 f"{number(runs.max_ms.max() / 1000, '.1f')} s of its 5") if len(runs) else NA,
        "hc_burst_apache_cpu": number(bv(APACHE, "client_cpu_s"), ",.1f"),
        "hc_burst_apache_pct": number(bv(APACHE, "client_cpu_pct")),
        "hc_burst_apache_s": number(bv(APACHE, "client_cpu_s") / (bv(APACHE, "client_cpu_pct") / 100)),
        "hc_burst_apache_gc": number(bv(APACHE, "gc_pause_s"), ",.1f"),
        "hc_burst_apache_heap": number(bv(APACHE, "gc_heap_after_mib")),
        "hc_burst_others_gc": listing(f"{number(bv(c, 'gc_pause_s'), ',.2f')} s ({c})" for c in others) or NA,
        "hc_burst_others_heap": listing(f"{number(bv(c, 'gc_heap_after_mib'))} MiB ({c})" for c in others) or NA,
        "hc_park800_jetty": number(v("achieved_rps", client="jetty", experiment="park", park_us=800)),
        "hc_burst_jetty_rps": number(bv("jetty", "achieved_rps")),
    }
    if len(runs):  # the prose sets a burst Apache finished here beside the same burst collapsing on a slower host
        claim(bool((runs.failed == 0).all()), "every Apache burst here answered every request",
              failed=list(runs.failed))
    if len(runs) and others:
        claim(all(bv(APACHE, k) > bv(c, k) for c in others for k in ("gc_pause_s", "gc_heap_after_mib")),
              "in the median repeat Apache stopped longer in pauses and held more heap after them than every other "
              "client")
    return out


def burst_hosts(hc, cb) -> dict:
    """The same burst on client-burst's slower host (10,000 connections, as the chapter runs it): how much slower
    that host was, what Apache answered there and how it failed, how async-http-client and the JDK client failed,
    and how Apache's young pauses grew in the runs that collapsed."""
    cb10 = cb.with_gc(cb.df[cb.df.ok_run & (cb.df["mode"] == "burst") & (cb.df.connections == 10_000)
                            & (cb.df.setting.fillna("") == "")])
    hosts = cb.loop_ms() / hc.loop_ms()
    claim(bool(hosts > 1.5), "client-burst's host ran the speed loop clearly slower than this capture's",
          cb=cb.loop_ms(), hc=hc.loop_ms())
    ap = cb10[cb10.client == APACHE]
    claim(len(ap) > 0 and bool((ap.ok < 0.3 * ap.requests).all()),
          "on client-burst's host every Apache burst with 10,000 connections answered under 30 %", ok=list(ap.ok))
    kinds = sorted({k for j in ap.error_kinds for k in json.loads(j)})
    here = hc.df[hc.df.experiment == "burst"]
    jdk_failed = [*here.loc[here.client == "jdk", "failed"], *cb10.loc[cb10.client == "jdk", "failed"]]
    claim(len(jdk_failed) > 0 and min(jdk_failed) > 0, "the JDK client failed requests in every burst on both hosts",
          failed=jdk_failed)
    return {"hc_cb_speed": number(hosts, ".1f"),
            "hc_cb_apache_ok": listing(number(x) for x in ap.ok),
            "hc_cb_apache_kinds": markdown(listing(f"`{k}`" for k in kinds) or "none"),
            "hc_cb_apache_nkinds": words(len(kinds)),
            "hc_cb_apache_rsts": span_of(ap.tcp_out_rsts, ",.0f"),
            "hc_burst_ahc_said": markdown(_ahc_said(here.loc[here.client == "ahc", "failed"],
                                                    cb10.loc[cb10.client == "ahc", "error_kinds"])),
            **_young_pauses(cb, ap)}


def _ahc_said(failed_here, kinds_there) -> str:
    kinds = sorted({k for j in kinds_there for k in json.loads(j)})
    return (("it failed none of the burst in this capture" if (failed_here == 0).all() else
             f"it failed {listing(number(x) for x in failed_here)} in this capture's repeats")
            + "; on client-burst's slower host its failures were of the kinds "
            + (listing(f"`{k}`" for k in kinds) or "none") + ", requests that waited out their 5 s in its queue")


YOUNG = re.compile(r"Pause Young .*?\d+M->(\d+)M\(\d+M\) ([\d.]+)ms$")


def _young_pauses(cb, ap) -> dict:
    """Apache's young pauses in the runs that collapsed, from their collector's logs: how much longer the last third
    lasted than the first, and the heap in use after them early and late."""
    ratios, early, late = [], [], []
    for f in ap.gc_log_file:
        young = [(int(m[1]), float(m[2])) for m in map(YOUNG.search, (cb.path / f).read_text().splitlines()) if m]
        k = len(young) // 3
        if k:
            ratios.append(sum(ms for _, ms in young[-k:]) / sum(ms for _, ms in young[:k]))
            early.append(max(mib for mib, _ in young[:k]))
            late.append(min(mib for mib, _ in young[-k:]))
    claim(len(ratios) > 0 and min(ratios) > 1.5 and min(late) > 2 * max(early),
          "in every Apache run that collapsed the last third of the young pauses lasted clearly longer than the "
          "first, with far more heap in use after them", ratios=ratios, early=early, late=late)
    return {"hc_burst_apache_pause_ratio": span_of(ratios, ".1f"),
            "hc_burst_apache_heap_early": number(max(early)),
            "hc_burst_apache_heap_late": number(min(late))}


# ---- As shipped ----------------------------------------------------------------------------------------------------

def shipped(hc) -> dict:
    """Each client as shipped at one rate: those capped by a pool of 5 (what they answered, their median wait, what
    was still queued at the cut-off, the most in flight) and those that kept up (their p99)."""
    ship = hc.summary()
    ship = ship[ship.experiment == "shipped"].set_index("client")
    rate = float(ship["offered_rps"].max()) if len(ship) else NAN
    capped = [c for c in IDS if c in ship.index and _finite(ship.loc[c, "ceiling_rps"])
              and ship.loc[c, "ceiling_rps"] < rate]
    kept = [c for c in IDS if c in ship.index and c not in capped]
    rows = hc.df[hc.df.experiment == "shipped"]
    in_flight = rows.groupby("client").in_flight_max.median()
    out = {
        "hc_ship_rate": number(rate),
        "hc_ship_capped": listing(capped) or "none",
        "hc_ship_kept": listing(kept) or "none",
        "hc_ship_capped_rps": listing(f"{number(ship.loc[c, 'achieved_rps'])}/s ({c})" for c in capped) or NA,
        "hc_ship_capped_p50": listing(f"{number(ship.loc[c, 'p50_ms'] / 1000, ',.1f')} s ({c})" for c in capped)
                              or NA,
        "hc_ship_capped_failed": listing(f"{number(ship.loc[c, 'failed'])} ({c})" for c in capped) or NA,
        "hc_ship_kept_p99": listing(f"{number(ship.loc[c, 'p99_ms'], ',.1f')} ms ({c})" for c in kept) or NA,
        "hc_ship_measured_s": f"{hc.meta['plan']['measured_s']:g}",
        "hc_ex2_in_flight": listing(f"{number(in_flight[c])} ({c})" for c in capped if c in in_flight) or NA,
    }
    if len(ship):  # the pool, not the IO model: Apache (an event loop) and OkHttp (a thread per call) stop alike
        claim({APACHE, "okhttp"} <= set(capped)
              and all(0.8 * ship.loc[c, "ceiling_rps"] < ship.loc[c, "achieved_rps"] <= ship.loc[c, "ceiling_rps"]
                      for c in capped)
              and all(ship.loc[c, "achieved_rps"] > 0.99 * rate for c in kept),
              "as shipped, Apache HttpClient and OkHttp answered near their ceiling of 5 connections, the others all "
              "they were offered", capped=capped, kept=kept)
        # the queue behind a capped pool: what was offered beyond what it answered, over the measured window
        seconds = hc.meta["plan"]["measured_s"]
        grew = {c: in_flight[c] / ((rate - ship.loc[c, "achieved_rps"]) * seconds) for c in capped}
        claim(all(0.9 < g < 1.1 for g in grew.values()), "the most a capped client had in flight was about what was "
              "offered beyond what it answered over the measured window", ratio=grew)
    return out


# ---- Equal pools ---------------------------------------------------------------------------------------------------

def _added(v, N: int, fraction: float, **at) -> dict:
    """What each client added to the C generator's median p50 at one load (ms), the clients measured."""
    ref = v("p50_ms", client=R, fraction=fraction, connections=N, **at)
    added = {c: v("p50_ms", client=c, fraction=fraction, connections=N, **at) - ref for c in IDS}
    return {c: x for c, x in added.items() if _finite(x)}


def _ms(values, spec=".2f") -> str:
    return span_of(values, spec, " ms")


def equal_pools(hc) -> dict:
    """The equal pools of 16 and 64 connections: the p99 at half the ceiling, what the clients add to the C
    generator's median, the time each holds a connection (Little's law at 120 %), the drops beyond the ceiling, the
    repeats at 90 % that dropped, and the JDK client apart with 64 connections."""
    S = hc.summary()
    v = _median(S)
    out = {}
    p99, p50 = [], []
    for N in (16, 64):
        at = dict(experiment="equal", connections=N)
        p50 += [v("p50_ms", client=c, fraction=0.5, **at) for c in IDS]
        p99 += [v("p99_ms", client=c, fraction=0.5, **at) for c in IDS]
        out[f"hc_eq{N}_hold"] = _ms(hold(v, N).values(), ".1f")
        ref = N * 1000.0 / v("achieved_rps", client=R, fraction=1.2, **at)
        out[f"hc_ref{N}_hold"] = span(ref, ref, ".1f", " ms")
        # beyond the ceiling: the share of what was offered that was dropped, the C generator included
        beyond = [v("dropped", client=c, fraction=1.5, **at) / v("offered", client=c, fraction=1.5, **at)
                  for c in (*IDS, R)]
        out[f"hc_eq{N}_drop150"] = span_of([100 * x for x in beyond], ".0f", " %")
    out["hc_eq_p99_half"] = span_of(p99, ".1f")
    if any(_finite(x) for x in p50):
        claim(max(x for x in p50 if _finite(x)) < 1.2 * 10, "at half the ceiling every client's median is about the "
              "server's 10 ms, with either pool", p50=p50)
    at16 = dict(experiment="equal")
    adds = {name: _added(v, 16, f, **at16) for name, f in (("light", 0.1), ("half", 0.5))}
    for name, f in (("light", 0.1), ("half", 0.5)):
        out[f"hc_ref16_p50_{name}"] = number(v("p50_ms", client=R, fraction=f, connections=16, **at16), ".2f")
        out[f"hc_eq16_add_{name}"] = _ms(adds[name].values())
    out["hc_eq16_p50_light"] = span_of([v("p50_ms", client=c, fraction=0.1, connections=16, **at16) for c in IDS],
                                       ".2f")
    out["hc_ref_cpu_p50"] = number(v("p50_ms", client=R, experiment="cpu"), ".2f")
    both = [c for c in adds["light"] if c in adds["half"]]
    if both:
        grew = min(adds["half"][c] - adds["light"][c] for c in both)
        apart = max(max(a.values()) - min(a.values()) for a in adds.values())
        claim(grew > apart, "what each client adds to the C generator's median grew from 10 % to 50 % by more than "
              "the clients differ at either point", grew=grew, apart=apart)
    return {**out, **_at_the_knee(hc, v), **_jdk_apart(hc, v)}


def hold(v, N: int) -> dict:
    """Each client's time holding a connection per request (ms), by Little's law at 120 % of the nominal ceiling,
    where every connection is busy: N over the rate answered."""
    return {c: N * 1000.0 / v("achieved_rps", client=c, fraction=1.2, experiment="equal", connections=N)
            for c in IDS}


def _at_the_knee(hc, v) -> dict:
    """The hold times against 11.1 ms, where 90 % of the nominal ceiling is the real one; the clients over their
    real ceiling at 90 % in some repeats and under it in others; the repeats at 90 % that dropped (p99 against 4 N
    over the rate answered)."""
    holds = [h for N in (16, 64) for h in hold(v, N).values() if _finite(h)]
    near = sum(abs(h - 100 / 9) <= 0.5 for h in holds)
    df = hc.df
    at90 = df[(df.experiment == "equal") & (df.fraction == 0.9) & df.client.isin(IDS) & df.ok_run]
    both = [(c, N) for (c, N), g in at90.groupby(["client", "connections"], sort=False)
            if (g.dropped > 0).any() and (g.dropped == 0).any()]
    mixed = [f"{c} with {listing(str(N) for k, N in both if k == c)}" for c in dict.fromkeys(c for c, _ in both)]
    sides = (f"and at the 90 % points a client near it can be just over its real ceiling in one repeat and just "
             f"under it in the next, as {listing(mixed)} connections {'was' if len(mixed) == 1 else 'were'}" if mixed
             else "and at the 90 % points every client stayed on one side of its real ceiling in all its repeats")
    count = tally(near, len(holds), "client's hold time in the table", "within half a millisecond of it",
                  plural="clients' hold times in the table", verbs=("is", "are"), spell=True)
    full = df[(df.experiment == "equal") & (df.fraction == 0.9) & df.client.isin(IDS) & (df.dropped > 0)]
    bound = 4 * full.connections * 1000.0 / full.achieved_rps
    if len(at90):
        claim(len(full) > 0 and (full.p99_ms / bound).min() > 0.9 and (full.p99_ms / bound).max() < 1.6,
              "where a repeat at 90 % dropped, its p99 was at or somewhat above 4 N over the rate it answered",
              ratio_min=(full.p99_ms / bound).min(), ratio_max=(full.p99_ms / bound).max())
    return {"hc_eq_hold_said": f"{count}, {sides}" if holds else "no client was measured at 120 % in this run",
            "hc_eq_full_p99": span_of(full.p99_ms, ",.0f"),
            "hc_eq_full_bound": span_of(bound, ",.0f"),
            "hc_eq_full_n": number(len(full))}


def _jdk_apart(hc, v) -> dict:
    """With 64 connections at 90 %: the share of its core the JDK client used against the others', and its CPU per
    request against the others' at the CPU point; claims that it held a connection longest and alone dropped."""
    df, seconds = hc.df, hc.meta["plan"]["measured_s"]
    e64 = df[(df.experiment == "equal") & (df.connections == 64) & (df.fraction == 0.9)]
    share = (e64.client_cpu_s / seconds).groupby(e64.client).median()
    rest = share.drop(["jdk", R], errors="ignore")  # the other Java clients, not the C generator
    cpu = hc.summary()
    others = cpu[(cpu.experiment == "cpu") & cpu.client.isin(IDS) & (cpu.client != "jdk")].client_cpu_us_per_req
    out = {"hc_eq64_jdk_share": span(100 * share.get("jdk", NAN), 100 * share.get("jdk", NAN), ".0f", " %"),
           "hc_eq64_others_share": span_of(100 * rest, ".0f", " %"),
           "hc_cpu_jdk_times": number(v("client_cpu_us_per_req", client="jdk", experiment="cpu") / others.median(),
                                      ".1f")}
    held = hold(v, 64)
    if all(_finite(h) for h in held.values()) and "jdk" in share and len(rest):
        claim(held["jdk"] > max(h for c, h in held.items() if c != "jdk"), "with 64 connections the JDK's client "
              "held a connection longest", hold=held)
        claim([c for c in IDS if v("dropped", client=c, fraction=0.9, experiment="equal", connections=64) > 0]
              == ["jdk"], "with 64 connections only the JDK's client dropped at 90 % in the median repeat")
        claim(bool(share["jdk"] >= rest.max()), "with 64 connections at 90 % the JDK's client used at least the "
              "share of its core that any other did", jdk=share["jdk"], others_max=rest.max())
    return out


# ---- CPU per request -----------------------------------------------------------------------------------------------

def cpu(hc) -> dict:
    """The CPU point: each client's CPU per request and the C generator's, the spread of the repeats (and which
    clients it parts), the noisy repeats, the latency, each JVM's memory at the end."""
    S = hc.summary()
    v = _median(S)
    C = S[S.experiment == "cpu"]
    known = {c: x for c in IDS if _finite(x := v("client_cpu_us_per_req", client=c, experiment="cpu"))}
    lo, hi = (min(known, key=known.get), max(known, key=known.get)) if known else (None, None)
    rows = hc.df[hc.df.experiment == "cpu"]
    p50 = [v("p50_ms", client=c, experiment="cpu") for c in IDS]
    spread = ((C.client_cpu_us_per_req_max - C.client_cpu_us_per_req_min) / C.client_cpu_us_per_req)
    pss = C[C.client.isin(IDS)].set_index("client").pss_mib.dropna() if "pss_mib" in C else pd.Series(dtype=float)
    out = {
        "hc_cpu_rate": number(C.offered_rps.max()),
        "hc_cpu_each": listing(f"{c} {number(x)} µs" for c, x in sorted(known.items(), key=lambda kv: kv[1])) or NA,
        "hc_cpu_ratio": number(known[hi] / known[lo], ".1f") if known else NA,
        "hc_cpu_lo": lo or NA,
        "hc_cpu_hi": hi or NA,
        "hc_cpu_noisy": tally(int(rows.noisy.sum()), len(rows), "repeat", "flagged noisy"),
        "hc_cpu_foreign": number(rows.foreign_cpu_cores.max(), ".2f"),
        "hc_cpu_p50": span_of(p50, ".2f"),
        "hc_cpu_spread": number(100 * spread[C.client.isin(IDS)].max()),
        "hc_cpu_ref": number(v("client_cpu_us_per_req", client=R, experiment="cpu")),
        "hc_cpu_pss": (f"{number(pss.min())} MiB ({pss.idxmin()}) to {number(pss.max())} MiB ({pss.idxmax()})"
                       if len(pss) else NA),
        "hc_cpu_four_said": _four_said(C),
    }
    _cpu_claims(C, v)
    return out


def _four_said(C) -> str:
    """Which of the four clients other than the JDK's are apart at the CPU point (every repeat of one below every
    repeat of the other)."""
    rng = C.set_index("client")
    four = [c for c in IDS if c != "jdk" and c in rng.index]
    apart = [(a, b) for a in four for b in four
             if rng.loc[a, "client_cpu_us_per_req_max"] < rng.loc[b, "client_cpu_us_per_req_min"]]
    if len(four) < 2:
        return "the other clients were not measured here, so this table does not rank them"
    return ("the other four's ranges all overlap, so this table does not rank them" if not apart else
            "of the other four, only " + listing(f"{a} below {b}" for a, b in apart) + " are apart (every repeat of "
            "the one below every repeat of the other)")


def _cpu_claims(C, v) -> None:
    """The JDK client's repeats above every other's; Jetty's and OkHttp's within the single-loop clients' spread;
    every client cheaper per request at 90 % than at 50 %, with both pools."""
    rng = C.set_index("client")
    if not set(IDS) <= set(rng.index):
        return
    four = [c for c in IDS if c != "jdk"]
    claim(bool(rng.loc["jdk", "client_cpu_us_per_req_min"] > rng.loc[four, "client_cpu_us_per_req_max"].max()),
          "every repeat of the JDK client cost more CPU per request than every repeat of the other four")
    loop_max = rng.loc[["ahc", APACHE], "client_cpu_us_per_req_max"].max()
    claim(all(rng.loc[c, "client_cpu_us_per_req_min"] <= loop_max for c in ("jetty", "okhttp")),
          "some repeat of Jetty and of OkHttp cost no more CPU per request than the dearest repeat of the "
          "single-loop clients", loop_max=loop_max)
    at = {(c, N, f): v("client_cpu_us_per_req", client=c, experiment="equal", connections=N, fraction=f)
          for c in (*IDS, R) for N in (16, 64) for f in (0.5, 0.9)}
    claim(all(at[c, N, 0.9] < at[c, N, 0.5] for c in (*IDS, R) for N in (16, 64)),
          "in the medians of their repeats, every client and the C generator spent less CPU per request at 90 % of "
          "the ceiling than at 50 %, with both pools")


# ---- The repeats the harness flagged -------------------------------------------------------------------------------

def flagged(hc) -> dict:
    """The noisy and outlier repeats: how many, how much foreign CPU, and where they ran (the bursts apart), each
    beside what the speed loop said of the machine."""
    df = hc.df
    marked = df[df.noisy | df.outlier]
    bursts, rest = marked[marked.experiment == "burst"], marked[marked.experiment != "burst"]
    parts = []
    if len(bursts):
        parts.append(f"{words(len(bursts))} of them are bursts ({listing(sorted(set(bursts.client)))}), a cold "
                     "JVM's one shot, whose answered count or rate varies from run to run (its section above)")
    if len(rest):
        slow_rows = set(hc.slow().index)
        points = rest.assign(where=[_where(r) for r in rest.itertuples()]).groupby("where", sort=False).client.agg(list)
        slow_k = len(slow_rows & set(rest.index))
        when = ((f"{words(slow_k) if slow_k else 'none'} of them ran" if len(rest) > 1 else
                 "it ran" if slow_k else "it did not run")
                + f" while the speed loop took over {SLOW_FACTOR:g} times its usual time, the harness's mark of a "
                f"machine running slow, as it did for {100 * len(slow_rows) / len(df):.0f} % of all the repeats")
        parts.append(f"{'the other' if len(bursts) else 'the'} {words(len(rest))} ran at "
                     + listing(f"{w} ({listing(cs)})" for w, cs in points.items()) + f"; {when}")
    return {"hc_noisy_rows": f"{df.noisy.sum():,}",
            "hc_outlier_rows": f"{df.outlier.sum():,}",
            "hc_flag_said": markdown(sentence(parts, "No repeat was flagged.")),
            "hc_noisy_foreign": number(df[df.noisy].foreign_cpu_cores.max(), ".2f")}


def _where(r) -> str:
    """Where a repeat ran, as the prose says it."""
    if r.experiment in ("equal", "link"):
        return f"{r.experiment} pools of {r.connections:.0f} at {r.fraction:.0%}, repeat {r.repeat}"
    return f"the {r.experiment} experiment, repeat {r.repeat}"


# ---- Behind a link -------------------------------------------------------------------------------------------------

def link(hc) -> dict:
    """The equal pools of 16 behind the delay link, the server answering at once and with its 10 ms timer: the
    clients' medians and the C generator's, what each client added, the drops at 90 %, against loopback."""
    S = hc.summary()
    v = _median(S)
    rows = S[S.experiment == "link"]
    out = {"hc_link_rtt": number(rows["link_rtt_ms"].max(), "g")}
    adds = {}
    for d, name in ((0, "link"), (10, "link10")):
        at = dict(experiment="link", delay_ms=d)
        for f, level in ((0.5, "half"), (0.9, "90")):
            out[f"hc_{name}_p50_{level}"] = span_of([v("p50_ms", client=c, fraction=f, **at) for c in IDS], ".1f")
            out[f"hc_{name}_ref_p50_{level}"] = number(v("p50_ms", client=R, fraction=f, **at), ".1f")
        ref = v("p50_ms", client=R, fraction=0.5, **at)
        adds[name] = [x for c in IDS if _finite(x := v("p50_ms", client=c, fraction=0.5, **at) - ref)]
        out[f"hc_{name}_add_half"] = _ms(adds[name])
        drops = {c: v("dropped", client=c, fraction=0.9, **at) for c in (*IDS, R)}
        out[f"hc_{name}_drop90"] = listing(f"{c} ({number(x)})" for c, x in drops.items()
                                           if _finite(x) and x > 0) or "no client"
    # what the clients added at half the ceiling behind the link, against loopback (always with the timer)
    loop = list(_added(v, 16, 0.5, experiment="equal").values())
    timer = adds["link10"]
    out["hc_link10_vs_loop"] = ("not measured here" if not (timer and loop) else
                                "less than any did on loopback" if max(timer) < min(loop) else
                                "more than any did on loopback" if min(timer) > max(loop) else
                                "about what they added on loopback (the two ranges overlap)")
    if adds["link"] and timer and loop:
        claim(max(adds["link"]) < min(loop), "behind the link, with the server answering at once, every client "
              "added less to the C generator's median than any did on loopback", link=adds["link"], loopback=loop)
        claim(max(adds["link"]) < 0.5 * min(timer), "behind the link every client added less than half as much with "
              "the server answering at once as any did with its timer", link=adds["link"], timer=timer)
    return out


# ---- What the clients' threads do ----------------------------------------------------------------------------------

def threads(hc, tables: dict, dumped: pd.DataFrame, housekeeping: set) -> dict:
    """The thread dumps: `tables` is the page's {client: its own threads grouped by name} of the dump it shows
    (`dumped`: those rows, by client); from them the threads in epoll_wait, each client's count, Jetty's pool and
    the JDK client's hand-offs, OkHttp's calls; from every dump of the equal pools, how the counts follow the load
    and the pool."""
    fraction = dumped.fraction.iloc[0] if len(dumped) else NAN
    in_epoll = {c: sum(t["top"] == "sun.nio.ch.EPoll.wait" and t["group"] not in housekeeping
                       for t in thread_dump((hc.path / dumped.loc[c, "thread_dump_file"]).read_text()))
                for c in tables}
    ok = tables.get("okhttp")
    calls = ok[ok.group == "OkHttp http"] if ok is not None else None

    def group(client, name, column="threads"):
        """One group's threads (or CPU) in one client's dump; NaN where the client or the group is missing."""
        t = tables.get(client)
        got = t[t.group == name][column] if t is not None else pd.Series(dtype=float)
        return float(got.sum()) if len(got) else NAN

    return {"hc_dump_fraction": f"{fraction:.0%}" if _finite(fraction) else NA,
            "hc_dump_epoll": listing(f"{k} ({c})" for c, k in in_epoll.items() if k) or "none",
            "hc_dump_own": listing(f"{t.threads.sum()} ({c})" for c, t in tables.items()) or NA,
            "hc_dump_okhttp_calls": number(calls.threads.sum()) if calls is not None else NA,
            "hc_dump_okhttp_wait": calls.waiting_in.iloc[0] if calls is not None and len(calls) else NA,
            "hc_dump_jetty_pool": number(group("jetty", "HttpClient-#")),
            "hc_dump_jdk_exec_ms": number(group("jdk", "pool-#-thread-#", "cpu_ms")),
            "hc_dump_jdk_sel_ms": number(group("jdk", "HttpClient-#-SelectorManager", "cpu_ms")),
            "hc_dump_jdk_fjp_ms": number(group("jdk", "ForkJoinPool.commonPool-worker-#", "cpu_ms")),
            **_thread_counts(hc, housekeeping)}


def _thread_counts(hc, housekeeping: set) -> dict:
    """Every dump of the equal pools (one per repeat): the event loops' few threads, Jetty's by pool, OkHttp's in
    a call by load and idle."""
    df = hc.df
    eq = df[(df.experiment == "equal") & df.client.isin(IDS)].assign(groups=lambda d: d.thread_groups.map(json.loads))
    eq = eq.assign(own=eq.groups.map(lambda g: sum(k for name, k in g.items() if name not in housekeeping)),
                   calls=eq.groups.map(lambda g: g.get("OkHttp http", 0)),
                   idle=eq.groups.map(lambda g: g.get("OkHttp Dispatcher", 0)))
    loops = [c for c in IDS if c not in ("jetty", "okhttp") and (eq.client == c).any()]
    own = {c: sorted(set(eq[eq.client == c].own)) for c in loops}
    jet = {N: eq[(eq.client == "jetty") & (eq.connections == N)].own for N in (16, 64)}
    ok16 = eq[(eq.client == "okhttp") & (eq.connections == 16)]
    calls_at = {f: ok16[ok16.fraction == f].calls for f in (0.1, 0.5, 0.9)}
    if own:
        claim(all(len(k) == 1 and k[0] <= 3 for k in own.values()),
              "each event-loop client ran the same few threads in every dump, at every load and with either pool",
              own=own)
    if all(len(j) for j in jet.values()):
        claim(bool(jet[64].min() > 2 * jet[16].max()), "Jetty's threads follow the connections", jetty=jet)
    if all(len(g) for g in calls_at.values()):
        claim(bool(calls_at[0.1].max() < calls_at[0.5].min() <= calls_at[0.9].min() and ok16.calls.max() <= 16),
              "OkHttp's threads in a call rose with the load, never above its 16 connections",
              calls={f: list(g) for f, g in calls_at.items()})
    return {"hc_threads_loops": listing(f"{'/'.join(map(str, k))} ({c})" for c, k in own.items()) or NA,
            "hc_threads_jetty": f"{span_of(jet[16], '.0f')} with 16 connections, {span_of(jet[64], '.0f')} with 64",
            "hc_threads_okhttp": listing(f"{span_of(g, '.0f')} at {100 * f:.0f} %" for f, g in calls_at.items()
                                         if len(g)) or NA,
            "hc_threads_okhttp_idle": span_of(ok16.idle, ".0f")}


# ---- Why Apache HttpClient's burst collapses (client-burst) --------------------------------------------------------

def apache(cb, runs: pd.DataFrame) -> dict:
    """client-burst's Apache runs: `runs` is the page's table of burst runs (setting "as run" or the suspect taken
    away, open_s and ok_by_5s added). With 1,000 connections against 10,000; each suspect taken away; the
    connections each client opened; memory per connection; what had happened by 5 s."""
    ap = runs[runs.client == APACHE]
    ap10 = ap[ap.connections == 10_000]
    ap1 = ap[(ap.connections == 1_000) & (ap.setting == "as run")]
    by_setting = ap10.groupby("setting").ok.median()
    claim(bool(ap1.ok.min() > 2 * ap10.ok.max()), "every Apache repeat with 1,000 connections answered more than "
          "twice what any run with 10,000 did, in any setting", ok_1000=list(ap1.ok), most_10000=ap10.ok.max())
    claim(bool((ap10.ok < 0.3 * ap10.requests).all()),
          "with 10,000 connections no Apache run, in any setting, answered 30 % of the requests", ok=list(ap10.ok))
    nogc = ap10[ap10.setting == "no-gc"]
    claim(bool((nogc.gc_pauses == 0).all()), "the no-gc runs had no collection", pauses=list(nogc.gc_pauses))
    claim(bool(ap10.outlier.sum() > len(ap10) / 3), "many of Apache's repeats at 10,000 are flagged as outliers",
          flagged=int(ap10.outlier.sum()), runs=len(ap10))
    return {"hc_ap_repeats": words(int(ap.groupby(["setting", "connections"]).size().min())),
            "hc_ap_1000_ok": ", ".join(f"{x:,.0f}" for x in ap1.ok),
            "hc_ap_1000_said": markdown(_thousand_said(ap1)),
            "hc_ap_10k_ok": ", ".join(f"{x:,.0f}" for x in ap10[ap10.setting == "as run"].ok),
            "hc_ap_10k_max": number(ap10.ok.max()),
            "hc_ap_10k_max_pct": number(100 * ap10.ok.max() / ap10.requests.max()),
            "hc_ap_settings": listing(f"{number(by_setting[s])} with {s}" for s in SUSPECTS if s in by_setting),
            "hc_ap_asrun_median": number(by_setting.get("as run", NAN)),
            "hc_ap_suspects_said": markdown(_suspects_said(ap10)),
            **_opened(runs), **_memory(runs), **_by_five(cb, runs), **_reactor(cb, ap)}


SUSPECTS = {"pool-lax": "the pool's one lock", "select-1s": "the reactor's 10 ms timer", "no-gc": "the collector"}


def _thousand_said(ap1) -> str:
    """With 1,000 connections: how many repeats answered every request, how close the slowest came to 5 s, and what
    the others lost."""
    whole = ap1[ap1.ok == ap1.requests]
    short = ap1[ap1.ok < ap1.requests]
    claim(len(whole) == 0 or bool(whole.max_ms.max() > 3_000), "the slowest request of a repeat with 1,000 that "
          "answered everything took over 3 of its 5 s", max_ms=list(whole.max_ms))
    slowest = span_of(whole.max_ms / 1000, ".1f", " s")
    if not len(short):
        return f"every request in every repeat, with little to spare (the slowest took {slowest} of its 5)"
    if len(whole):
        return (f"every request in {words(len(whole))} of the {words(len(ap1))} repeats, with so little to spare "
                f"(the slowest took {slowest} of its 5) that in the {'other' if len(short) == 1 else 'others'}, "
                f"{listing(number(x) for x in short.failed)} requests ran out of their 5 s")
    return (f"most of the burst in every repeat, but not all of it: {listing(number(x) for x in ap1.failed)} ran "
            "out of their 5 s")


def _suspects_said(ap10) -> str:
    """Each suspect taken away: did its repeats answer more than every repeat as run, less than every one, or
    overlap?"""
    spans = ap10.groupby("setting").ok.agg(["min", "max"])
    if "as run" not in spans.index:
        return "Apache's burst as run was not measured here."
    tried = [s for s in SUSPECTS if s in spans.index]
    above = [s for s in tried if spans.loc[s, "min"] > spans.loc["as run", "max"]]
    below = [s for s in tried if spans.loc[s, "max"] < spans.loc["as run", "min"]]
    same = [s for s in tried if s not in above + below]
    parts = []
    if above:
        parts.append(f"without {listing(SUSPECTS[s] for s in above)} Apache answered more than in every repeat as "
                     "run and still collapsed: " + ("it adds" if len(above) == 1 else "they add") + " to the "
                     "collapse and " + ("does" if len(above) == 1 else "do") + " not cause it")
    if below:
        parts.append(f"without {listing(SUSPECTS[s] for s in below)} it answered less than in every repeat as run")
    if same:
        parts.append(f"taking away {listing(SUSPECTS[s] for s in same)} made no difference these repeats can show: "
                     "their answers overlap those as run")
    return sentence(parts)


def _opened(runs) -> dict:
    """The connections the burst made each client open with 10,000 allowed (medians as run): Jetty and OkHttp a
    few hundred, the other three more than their pool; and what the other two failed with 1,000."""
    as_run = runs[runs.setting == "as run"]
    few = as_run[as_run.connections == 10_000].groupby("client").tcp_active_opens.median()
    others1k = as_run[(as_run.connections == 1_000) & as_run.client.isin(["ahc", "jdk"])]
    claim(bool(few[["jetty", "okhttp"]].max() < 0.1 * 10_000 and few[["ahc", "jdk", APACHE]].min() > 10_000),
          "Jetty and OkHttp opened a few hundred connections for the burst, the other three more than their pool "
          "of 10,000", opened=dict(few))
    claim(bool((others1k.failed > 0).all()), "async-http-client and the JDK client failed requests with 1,000 "
          "connections too", failed=list(others1k.failed))
    return {"hc_ap_few": listing(f"{c} {number(few[c])}" for c in ("jetty", "okhttp")),
            "hc_ap_many": listing(f"{c} {number(few[c])}" for c in ("ahc", "jdk", APACHE)),
            "hc_ap_others_1k_failed": span_of(others1k.failed, ",.0f")}


def _memory(runs) -> dict:
    """Each client's memory when the burst had ended (its PSS, read once by the JVM itself after the run): Apache's
    with 10,000 connections against 1,000, per extra connection opened; Jetty's and OkHttp's."""
    as_run = runs[runs.setting == "as run"]
    ap = as_run[as_run.client == APACHE].groupby("connections")
    pss = ap.pss_kib.median() / 1024
    opened = ap.tcp_active_opens.median()
    few = as_run[as_run.client.isin(["jetty", "okhttp"])].pss_kib / 1024
    ap10, ap1 = (as_run[(as_run.client == APACHE) & (as_run.connections == c)].pss_kib for c in (10_000, 1_000))
    claim(bool(ap10.min() > 2 * ap1.max()), "every Apache run as run with 10,000 connections ended with more than "
          "twice the memory of any run with 1,000", pss_10000=list(ap10), pss_1000=list(ap1))
    claim(bool(few.max() < pss[1_000]), "Jetty and OkHttp ended every burst with less memory than Apache's median "
          "with 1,000 connections", few=list(few), apache_1000=pss[1_000])
    return {"hc_ap_pss10": number(pss[10_000]), "hc_ap_pss1": number(pss[1_000]),
            "hc_ap_pss_per_conn": number(1024 * (pss[10_000] - pss[1_000]) / (opened[10_000] - opened[1_000])),
            "hc_ap_few_pss": span_of(few, ",.0f")}


def _by_five(cb, runs) -> dict:
    """Apache by 5 s, when the first requests' deadlines ran out: the connections opened in all, when every request
    had been sent and every connection opened, and what it had answered then and by 5 s."""
    ap = runs[runs.client == APACHE]
    ap10 = ap[ap.connections == 10_000]
    ap1 = ap[(ap.connections == 1_000) & (ap.setting == "as run")]
    sent_s = [cb.timeline(r).pipe(lambda t, r=r: t[t.sent >= r.requests].t_ms.min()) / 1000 for _, r in ap10.iterrows()]
    ok_open = [_answered_by(*_timeline(cb, r)) for _, r in ap10.iterrows()]
    claim(max(ok_open) < 0.01 * ap10.requests.max(),
          "when its 10,000 connections were open, Apache had answered under 1 % of the burst", ok=ok_open)
    claim(bool(ap10.ok_by_5s.max() < 0.2 * ap1.ok_by_5s.min()), "by the time the first deadlines ran out, Apache at "
          "10,000 had answered less than a fifth of what it had at 1,000 in every run",
          by5_10k=list(ap10.ok_by_5s), by5_1k=list(ap1.ok_by_5s))
    return {"hc_ap_opened": span_of(ap10.tcp_active_opens, ",.0f"),
            "hc_ap_sent_s": span_of(sent_s, ".1f"),
            "hc_ap_ok_open": number(max(ok_open)),
            "hc_ap_open_s": span_of(ap10.open_s, ".1f"),
            "hc_ap_by5_10k": span_of(ap10.ok_by_5s, ",.0f"),
            "hc_ap_by5_1k": span_of(ap1.ok_by_5s, ",.0f")}


# What the reactor thread was doing, from the stacks sampled while it was busy: setting up a new connection (its
# HTTP/1.1 handler, then its first request), reading answers, or opening one.
PHASES = (("set up a new connection", ("InternalConnectChannel.onIOEvent", "IOEventHandler.connected")),
          ("read an answer", ("inputReady",)),
          ("open a connection", ("processPendingConnectionRequests",)))
BUFFERS_KIB = 3 * 8  # Http1Config's default: three buffers of 8 KiB per connection


def _phase(stack: str) -> str:
    return next((name for name, marks in PHASES if any(m in stack for m in marks)), "other")


def _after_open(cb, row) -> dict:
    """One run between the moment its last connection was open and 5 s: the reactor's sampled stacks by phase, its
    share of the core, the collector's and the JVM's own threads', and the heap it grew by."""
    t, opened_ms = _timeline(cb, row)
    window = t[(t.t_ms > opened_ms) & (t.t_ms <= 5000)]
    stacks = [s for busy in window.busy for name, s in busy.items() if name.startswith("httpclient-dispatch")]
    length = 5000 - opened_ms
    return {"samples": len(stacks), **{p: sum(_phase(s) == p for s in stacks) for p, _ in PHASES},
            "reactor_pct": 100 * window["d_cpu_httpclient-dispatch-#"].sum() / length,
            "gc_pct": 100 * window.d_gc_ms.sum() / length,
            "jvm_pct": 100 * window.d_cpu_jvm.sum() / length, "gc_ms": window.d_gc_ms.sum(),
            "heap_mib": window.heap_used_mib.max() - t[t.t_ms <= opened_ms].heap_used_mib.max()}


def _reactor(cb, ap) -> dict:
    """After Apache's connections were open: what its reactor was caught doing with 10,000 and with 1,000, the
    shares of the core, without collections too, and the heap per connection set up against its buffers."""
    after = pd.DataFrame([{"setting": r.setting, "connections": r.connections, **_after_open(cb, r)}
                          for _, r in ap.iterrows()])
    pooled = after.groupby("connections")[["samples", "set up a new connection", "read an answer"]].sum()
    share = {(N, p): 100 * pooled.loc[N, p] / pooled.loc[N, "samples"]
             for N in (10_000, 1_000) for p in ("set up a new connection", "read an answer")}
    setup10, read10 = share[10_000, "set up a new connection"], share[10_000, "read an answer"]
    setup1, read1 = share[1_000, "set up a new connection"], share[1_000, "read an answer"]
    claim(bool(setup10 > read10 and read1 > 2 * setup1),
          "after its connections were open, Apache's reactor was caught setting up new connections more often than "
          "reading answers at 10,000, and reading answers far more often at 1,000",
          setup10=setup10, read10=read10, setup1=setup1, read1=read1)
    a10 = after[after.connections == 10_000]
    gc10, nogc = a10[a10.setting != "no-gc"], a10[a10.setting == "no-gc"]
    claim(bool((nogc.jvm_pct > 30).all() and (nogc.gc_ms == 0).all()),
          "with no collection, the JVM's own threads still used about half the core after the connections were open",
          jvm=list(nogc.jvm_pct))
    per_conn = 1024 * nogc.heap_mib / 10_000
    return {"hc_ap_setup10": number(setup10), "hc_ap_read10": number(read10),
            "hc_ap_setup1": number(setup1), "hc_ap_read1": number(read1),
            "hc_ap_samples10": number(pooled.loc[10_000, "samples"]),
            "hc_ap_reactor_pct": span_of(gc10.reactor_pct, ".0f"),
            "hc_ap_jvm_pct": span_of(gc10.jvm_pct, ".0f"),
            "hc_ap_gc_pct": span_of(gc10.gc_pct, ".0f"),
            "hc_ap_nogc_reactor_pct": span_of(nogc.reactor_pct, ".0f"),
            "hc_ap_nogc_jvm_pct": span_of(nogc.jvm_pct, ".0f"),
            "hc_ap_kib_per_conn": span_of(per_conn, ".0f"),
            "hc_ap_buf_share": span(100 * BUFFERS_KIB / per_conn.max(), 100 * BUFFERS_KIB / per_conn.min(), ".0f",
                                    " %")}


# ---- The page ------------------------------------------------------------------------------------------------------

def dataset(hc) -> dict:
    """Every value the page glues from the http-clients dataset alone (the thread tables and client-burst apart)."""
    return {**measured(hc), **park(hc), **burst(hc), **burst_apache(hc), **shipped(hc), **equal_pools(hc),
            **cpu(hc), **flagged(hc), **link(hc)}
