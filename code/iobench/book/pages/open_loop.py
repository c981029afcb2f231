"""The analysis behind book/method/open-loop.md: latency against offered load (`open-loop`), and the cross-check of
the book's generator with vegeta (`open-loop-crosscheck`).

Each function takes one of the two datasets and returns {glue name: value} for one part of the page, checking
the claims its sentences make. A point the run did not measure (a smoke capture has one server, one amount of
work and a few fractions) reads n/a, and a claim about points it lacks is not checked.
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.phrases import NA, each, listing, markdown, sentence, span, span_of, tally, words
from iobench.data.report import number, value_in
from iobench.kinds.openloop import dataset as openloop

NaN = float("nan")
FRACTIONS = {0.8: "80", 1.0: "100", 1.2: "120", 1.5: "150"}



def open_point(S, server: str, work: float, fraction: float, column: str) -> float:
    """The median of `column` at one open-loop point of the summary S (NaN where the run has none)."""
    return value_in(S, column, NaN, server=server, loop="open", work_ms=work, fraction=fraction)


def closed_point(S, server: str, work: float, column: str) -> float:
    """The median of `column` of a server's closed loop in the summary S (NaN where the run has none)."""
    return value_in(S, column, NaN, server=server, loop="closed", work_ms=work)


def hockey(ol) -> dict:
    """With 20 ms of work: the servers, the capacities their closed loops measured, the reference server's (c-epoll)
    p50 and p99 at each share of its capacity and what it dropped at 150 %, and each server's knee (the lowest
    share at which the open loop's p99 is more than twice the closed loop's)."""
    S = ol.summary()
    w20 = list(dict.fromkeys(S.loc[S.work_ms == 20, "server"]))
    caps = [closed_point(S, s, 20.0, "achieved_rps") for s in w20]
    ref = "c-epoll" if "c-epoll" in w20 or not w20 else w20[0]
    values = {"ol_servers_20": listing(w20) or NA, "ol_cap_range": span_of(caps, ",.0f"), "ol_ref": ref,
              "ol_ref_closed_p99": number(closed_point(S, ref, 20.0, "p99_ms"), ".1f")}
    for f, name in FRACTIONS.items():
        values[f"ol_ref_p99_{name}"] = number(open_point(S, ref, 20.0, f, "p99_ms"), ",.1f")
        values[f"ol_ref_p50_{name}"] = number(open_point(S, ref, 20.0, f, "p50_ms"), ",.1f")
    values["ol_ref_dropped_150"] = dropped_at(open_point(S, ref, 20.0, 1.5, "dropped"),
                                              open_point(S, ref, 20.0, 1.5, "offered"))
    knees = {s: openloop.knee(S, s, 20.0) for s in w20}
    reached = {s: 100 * k for s, k in knees.items() if k is not None}
    beyond = [s for s, k in knees.items() if k is None]
    values["ol_knees"] = "; ".join(([each(reached, ".0f", " %")] if reached else [])
                                   + ([f"{listing(beyond)}: none up to 150 %"] if beyond else [])) or NA
    return values


def dropped_at(dropped: float, offered: float) -> str:
    """What became of the requests offered at 150 % of capacity: how many the generator dropped, or that none was."""
    if not math.isfinite(offered):
        return "the run has no point at 150 % of this server's capacity"
    if dropped:
        return (f"the generator dropped {tally(dropped, offered, 'request', verbs=None)} offered: they found its cap "
                "on requests in flight full")
    return (f"none of the {offered:,.0f} requests offered was dropped: the queue stayed under the generator's cap "
            "on requests in flight, and every request waited its turn")


def no_work(ol) -> dict:
    """Without work: whose closed loop was generator-bound, which servers outran the generator (the generator's
    share of its core there) and at which shares their open points were generator-bound again; claim checked."""
    S = ol.summary()
    c0 = S[(S.loop == "closed") & (S.work_ms == 0)]
    bound = list(c0.loc[c0.generator_bound, "server"])
    free = c0[~c0.generator_bound]
    o0 = S[(S.loop == "open") & (S.work_ms == 0) & S.server.isin(free.server)]
    again = o0[o0.generator_bound]
    claim(not o0[o0.fraction <= 0.5].generator_bound.any(), "below half their capacity the open points of the "
          "servers that outran the generator were not generator-bound",
          bound=int(o0[o0.fraction <= 0.5].generator_bound.sum()))
    return {
        "ol_bound0": listing(bound) if bound else "none of them",
        "ol_n_bound0": f"{len(bound)}",
        "ol_n_closed0": f"{len(c0)}",
        "ol_free0": listing(free.server) if len(free) else "none",
        "ol_free0_detail": (f"the generator at {span_of(free.client_cpu_pct, '.0f', ' %')} of its core; their "
                            "capacities are in the table above") if len(free) else NA,
        "ol_free0_open_bound": "; ".join(f"{srv} at " + listing(f"{100 * f:.0f}" for f in sorted(g.fraction)) + " %"
                                         for srv, g in again.groupby("server")) or "none of them",
    }


def flagged(ol) -> dict:
    """The repeats the harness flagged: where; the Java servers' capacities without work (a JIT still at work fits
    their lowest); the other flags said from the data; how far the capacities with 20 ms of work spread; claims."""
    df = ol.df
    rows = df[df.outlier]
    spans = {"repeats": int(df.repeat.max())}   # one repeat flags none: its claims about flags say nothing then
    caps0 = df[(df.loop == "closed") & (df.work_ms == 0) & df.server.str.startswith("java")]
    caps20 = df[(df.loop == "closed") & (df.work_ms == 20)]
    spread20 = caps20.groupby("server").achieved_rps.agg(lambda a: 100 * (a.max() - a.min()) / a.median()).max()
    claim(bool((rows.work_ms == 0).all()), "every flagged row is without work", at=spans, flagged=len(rows))
    if len(caps20):
        claim(bool(spread20 < 2), "with 20 ms of work every server's capacities lie within a few per cent", at=spans,
              spread=spread20)
    java = rows[(rows.loop == "closed") & rows.server.str.startswith("java")]

    def at_the(end):  # the flagged Java closed loops whose capacity was their server's lowest (min) or highest (max)
        return [f"{r.server}'s repeat {r.repeat}" for r in java.itertuples()
                if r.achieved_rps == getattr(caps0[caps0.server == r.server].achieved_rps, end)()]

    lowest, highest = at_the("min"), at_the("max")
    return {
        "ol_flagged": f"{len(rows)}",
        "ol_flagged_where": listing(sorted(set(rows.server))) or NA,
        "ol_flagged_said": ("The harness flagged no row as more than 20 % from the median of its point."
                            if not len(rows)
                            else f"The harness flagged one row as more than 20 % from the median of its point, "
                                 f"{rows.server.iloc[0]}'s, without work." if len(rows) == 1
                            else f"The harness flagged {len(rows)} rows as more than 20 % from the median of their "
                                 f"point, all without work: {listing(sorted(set(rows.server)))}."),
        "ol_java_caps0": "; ".join(f"{srv}: {span_of(g.achieved_rps, ',.0f')}" for srv, g in caps0.groupby("server"))
        or NA,
        "ol_spread20": number(spread20, ".1f"),
        "ol_jit_fits": listing(lowest) if lowest else "no repeat",
        "ol_jit_not": (f"{listing(highest)}, flagged with {'its' if len(highest) == 1 else 'their'} server's highest "
                       "capacity, is what") if highest else "no flagged capacity is a server's highest, which is what",
        **other_flags(rows[~rows.server.str.startswith("java")], spans),
    }


def other_flags(other: pd.DataFrame, at: dict | None = None) -> dict:
    """The flags beside the Java servers': a repeat whose closed loop measured a capacity apart from the others'
    flags its open points too (offered as fractions of that repeat's own capacity); the rest lie at and past a
    capacity. What the generator used, what else ran, what the hypervisor stole; claims checked."""
    closed = other[other.loop == "closed"]
    of_repeat = pd.Series([r.loop == "open" and bool(((closed.server == r.server) & (closed.repeat == r.repeat)).any())
                           for r in other.itertuples()], index=other.index, dtype=bool)
    inherited, rest = other[of_repeat], other[(other.loop == "open") & ~of_repeat]
    parts = []
    if len(closed):
        parts.append(
            f"in {listing(f'repeat {r.repeat} of {r.server}' for r in closed.itertuples())} the closed loop measured "
            f"a capacity apart from the other repeats' ({listing(f'{x:,.0f}' for x in closed.achieved_rps)} "
            f"requests per second), with the generator at {span_of(closed.client_cpu_pct, '.0f', ' %')} of its "
            f"core, and {words(len(inherited))} open points of the same repeats, offered as fractions of that "
            "capacity, were flagged with it")
    if len(rest):
        parts.append(f"{words(len(rest))} more lie at or past a capacity "
                     f"({listing(sorted({f'{r.server} at {100 * r.fraction:g} %' for r in rest.itertuples()}))}), "
                     f"{'all' if rest.generator_bound.all() else words(int(rest.generator_bound.sum())) + ' of them'} "
                     "generator-bound")
    claim(bool(closed.generator_bound.all()), "every flagged closed loop beside the Java servers' was generator-bound",
          at=at, bound=list(closed.generator_bound))
    claim(bool((other.foreign_cpu_cores < 0.25).all() and not other.noisy.any()),
          "nothing else used a quarter of a core in the flagged runs", at=at, foreign=other.foreign_cpu_cores.max())
    steal_ms = 1000 * (other.server_steal_s + other.client_steal_s)
    return {
        "ol_other_said": markdown(sentence(parts, empty="There are no other flags.")),
        "ol_other_foreign": number(other.foreign_cpu_cores.max(), ".2f") if len(other) else NA,
        "ol_other_steal": number(steal_ms.max(), ".0f") if len(other) else NA,
    }


def fairness(ol) -> dict:
    """Whether every connection got answers at every open-loop point, and the longest stall."""
    fair = ol.summary()
    fair = fair[fair.loop == "open"]
    short = int((fair.conns_served < fair.connections).sum())
    return {
        "ol_all_served": "every connection" if not short else
        f"not every connection (some went unanswered at {tally(short, len(fair), 'load point', verbs=None)})",
        "ol_stall_max": number(fair.stall_s.max(), ".1f"),
    }


def generator(ol) -> dict:
    """The generator's own limits, without work: the fastest closed loop, the highest open rate delivered on time
    and the next one measured, the highest open rate answered at all, and what a request cost the generator at a
    low rate against the closed loops; claims checked where the run has the points."""
    S = ol.summary()
    best = openloop.highest_on_time(S, work_ms=0.0)
    c0 = S[(S.loop == "closed") & (S.work_ms == 0)].sort_values("achieved_rps")
    o0 = S[(S.loop == "open") & (S.work_ms == 0)].sort_values("achieved_rps")
    low = S[(S.loop == "open") & (S.work_ms == 0) & (S.fraction == 0.1)]
    values = {"ol_gen_low_us": span_of(low.client_cpu_us_per_req, ".0f"),
              "ol_gen_closed_us_range": span_of(S[S.loop == "closed"].client_cpu_us_per_req, ".0f")}
    if len(low) and len(c0):
        claim(bool(low.client_cpu_us_per_req.min() > 3 * c0.client_cpu_us_per_req.max()),
              "at a low rate an open loop costs the generator several times what a closed loop does per request",
              low_min=low.client_cpu_us_per_req.min())
    nxt = (S[(S.loop == "open") & (S.work_ms == 0) & (S.server == best["server"])
             & (S.offered_rps > best["offered_rps"])] if best is not None else S.iloc[0:0])
    values |= {
        "ol_gen_ceiling": f"{best['offered_rps']:,.0f}" if best is not None else "none",
        "ol_gen_ceiling_server": best["server"] if best is not None else "none",
        "ol_gen_cpu_pct": number(best["client_cpu_pct"], ".0f") if best is not None else NA,
        "ol_gen_us": number(best["client_cpu_us_per_req"], ".1f") if best is not None else NA,
        "ol_gen_lag": number(best["send_lag_p99_ms"], ".2f") if best is not None else NA,
        "ol_gen_next": f"{nxt.offered_rps.min():,.0f}" if len(nxt) else "none",
    }
    closed = c0.iloc[-1] if len(c0) else None
    values |= {
        "ol_gen_closed": number(closed.achieved_rps, ",.0f") if closed is not None else NA,
        "ol_gen_closed_server": closed.server if closed is not None else NA,
        "ol_gen_closed_cpu": number(closed.client_cpu_pct, ".0f") if closed is not None else NA,
        "ol_gen_closed_us": number(closed.client_cpu_us_per_req, ".1f") if closed is not None else NA,
    }
    return values | fastest_open(o0.iloc[-1] if len(o0) else None, closed)


def fastest_open(open0, closed) -> dict:
    """The highest rate the open loop answered without work (where, at what cost to the generator), against the
    fastest closed loop (both medians of their repeats); the claim that it came with requests dropped."""
    if open0 is None:
        return {"ol_gen_open_max": NA, "ol_gen_open_max_where": NA, "ol_gen_open_max_us": NA,
                "ol_gen_open_vs_closed": markdown(NA)}
    claim(bool(open0.dropped > 0), "the open loop's highest answered rate came with requests dropped",
          open_max=open0.achieved_rps, dropped=open0.dropped)
    vs = (NA if closed is None else "more than any closed loop reached" if open0.achieved_rps > closed.achieved_rps
          else f"less than the fastest closed loop's {closed.achieved_rps:,.0f}")
    return {"ol_gen_open_max": f"{open0.achieved_rps:,.0f}",
            "ol_gen_open_max_where": f"{open0.server} at {100 * open0.fraction:.0f} % of its closed loop's rate",
            "ol_gen_open_max_us": number(open0.client_cpu_us_per_req, ".1f"),
            "ol_gen_open_vs_closed": markdown(vs)}


def x_point(X, server: str, tool: str, rate: int, column: str, work: float = 20.0) -> float:
    """The median of `column` at one open point of the cross-check's summary X (NaN where it has none)."""
    return value_in(X, column, NaN, server=server, tool=tool, loop="open", rate=rate, work_ms=work)


def crosscheck(xc) -> dict:
    """Both generators against c-epoll, with 20 ms of work (p99 at 1,000, 1,900 and 2,500 per second, answers at
    2,500) and without (CPU per request, p99 and answers at 5,000, 20,000 and 40,000); the flags; the closed loop
    without work (its rates, the server's and the generator's CPU per request from the slowest repeat to the
    fastest, in step); what vegeta delivered asked for 40,000."""
    X = xc.summary()
    values = {}
    for tool in ("openloop", "vegeta"):
        for rate in (1000, 1900, 2500):
            values[f"xc_{tool}_p99_{rate}"] = number(x_point(X, "c-epoll", tool, rate, "p99_ms"), ",.1f")
        values[f"xc_{tool}_achieved_2500"] = number(x_point(X, "c-epoll", tool, 2500, "achieved_rps"), ",.0f")
        for rate in (5000, 20000, 40000):
            values[f"xc_{tool}_us_{rate}"] = number(x_point(X, "c-epoll", tool, rate, "client_cpu_us_per_req", 0.0),
                                                 ".1f")
            values[f"xc_{tool}_p99_0_{rate}"] = number(x_point(X, "c-epoll", tool, rate, "p99_ms", 0.0), ",.2f")
            values[f"xc_{tool}_achieved_0_{rate}"] = number(x_point(X, "c-epoll", tool, rate, "achieved_rps", 0.0),
                                                         ",.0f")
    df = xc.df
    cl = df[(df.loop == "closed") & (df.server == "c-epoll") & (df.work_ms == 0)].sort_values("achieved_rps")
    if len(cl) > 1:
        fell = cl.server_cpu_us_per_req.is_monotonic_decreasing and cl.client_cpu_us_per_req.is_monotonic_decreasing
        claim(bool(fell),
              "the server's and the generator's CPU per request fell in step as the closed loop's rate rose",
              server=list(cl.server_cpu_us_per_req.round(2)), generator=list(cl.client_cpu_us_per_req.round(2)))
    v40 = df[(df.tool == "vegeta") & (df.rate == 40000)]
    return values | {
        "xc_flagged": f"{int(df.outlier.sum())}",
        "xc_closed0_range": span_of(cl.achieved_rps, ",.0f"),
        "xc_closed0_us": span(*(cl.server_cpu_us_per_req.iloc[[0, -1]] if len(cl) else (NaN, NaN)), ".1f"),
        "xc_closed0_gen_us": span(*(cl.client_cpu_us_per_req.iloc[[0, -1]] if len(cl) else (NaN, NaN)), ".1f"),
        "xc_v40_range": span_of(v40.achieved_rps, ",.0f"),
    }


def exercise4(xc) -> dict:
    """Exercise 4's premise and solution, from the cross-check: the generator's CPU per request at the lowest and
    highest rates its server kept up with, and the one point past its server's capacity (its rate, the capacity,
    the cost, how long its answers took against the schedule); claims checked."""
    X = xc.summary()
    mine = X[(X.loop == "open") & (X.tool == "openloop")]
    kept = mine[mine.achieved_rps >= 0.98 * mine.offered_rps]
    over = mine[mine.achieved_rps < 0.98 * mine.offered_rps]
    if not len(kept) or not len(over):
        return {name: NA for name in ("ol_ex4_low", "ol_ex4_low_rate", "ol_ex4_high", "ol_ex4_high_rate",
                                      "ol_ex4_over", "ol_ex4_over_rate", "ol_ex4_over_server", "ol_ex4_over_capacity",
                                      "ol_ex4_over_elapsed", "ol_ex4_over_schedule")}
    low, high = kept.loc[kept.rate.idxmin()], kept.loc[kept.rate.idxmax()]
    claim(bool(low.client_cpu_us_per_req > 2 * high.client_cpu_us_per_req), "the generator's CPU per request is "
          "higher at low rates than at high ones, where the server keeps up",
          low=low.client_cpu_us_per_req, high=high.client_cpu_us_per_req)
    o = over.loc[over.client_cpu_us_per_req.idxmax()]
    claim(bool(o.client_cpu_us_per_req > kept.client_cpu_us_per_req.max()), "above its server's capacity the "
          "generator's CPU per answered request is the highest of the table",
          over=o.client_cpu_us_per_req, kept_max=kept.client_cpu_us_per_req.max())
    closed = X[(X.server == o.server) & (X.loop == "closed") & (X.tool == "openloop") & (X.work_ms == o.work_ms)]
    df = xc.df
    ox = df[(df.tool == "openloop") & (df.loop == "open") & (df.server == o.server) & (df.rate == o.rate)
            & (df.work_ms == o.work_ms)]
    claim(bool((ox.ok == ox.offered).all()), "every request of the overloaded point was answered",
          unanswered=int((ox.offered - ox.ok).sum()))
    return {
        "ol_ex4_low": f"{low.client_cpu_us_per_req:.0f}", "ol_ex4_low_rate": f"{low.rate:,.0f}",
        "ol_ex4_high": f"{high.client_cpu_us_per_req:.0f}", "ol_ex4_high_rate": f"{high.rate:,.0f}",
        "ol_ex4_over": f"{o.client_cpu_us_per_req:.0f}", "ol_ex4_over_rate": f"{o.rate:,.0f}",
        "ol_ex4_over_server": o.server,
        "ol_ex4_over_capacity": number(closed.achieved_rps.iloc[0], ",.0f") if len(closed) else NA,
        "ol_ex4_over_elapsed": f"{(ox.ok / ox.achieved_rps).median():.2f}",
        "ol_ex4_over_schedule": f"{xc.meta['plan']['measured_s']:g}",
    }


def values(ol, xc) -> dict:
    """Every value the page's first cell glues, merged (its claims checked): the open loop and the cross-check."""
    return {**hockey(ol), **no_work(ol), **flagged(ol), **fairness(ol), **generator(ol), **crosscheck(xc),
            **exercise4(xc)}
