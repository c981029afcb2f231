"""The analysis behind book/java/rpc.md: from the chapter's datasets to the values its prose glues.

    provider(rpc)        rpc-provider: every section that reads it (measured ... kernel_per_call, below)
    keepalive_turns(kt)  rpc-keepalive: the turns of closing and never closing, and where the extra goes
    loops(lp)            rpc-loops: the write-up's 3,000 event loops against Netty's default
    tail(tl, rpc)        rpc-tail: what stalls a provider at half its capacity (and rpc-provider's pairs there)
    syscalls(sc)         rpc-syscalls: the system calls per call, by kind

Each returns {glue name: value} and checks the claims its sentences make, on a capture the book quotes; a smoke
capture (a few seconds, one repeat, some points) supports no comparison: its claims are not checked (check=None),
and what it did not measure reads n/a or says so.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import pandas as pd

from iobench.book import flames
from iobench.book.claims import claim
from iobench.book.pages import checks
from iobench.book.phrases import NA, listing, markdown, pairs_by_second, sentence, span, span_of, tally, words
from iobench.data.report import number as n, value_in
from iobench.kinds.rpc.dataset import KEYS
from iobench.kinds.rpc.plans import GRID
from iobench.load import drivers

NAN = float("nan")
PROV = ["rpc-tomcat", "rpc-tomcat-vt", "rpc-webflux", "rpc-netty"]
PAIR = ("rpc-tomcat", "rpc-netty")
WRITEUP_RATIO = 3516 / 1917  # the write-up's two rates, through its consumer


def key(server: str) -> str:
    """A provider's part of a glue name: rpc-tomcat-vt -> tomcat_vt."""
    return server.removeprefix("rpc-").replace("-", "_")


def unmeasured(what: str):
    """A sentence for a glue the capture cannot fill (Markdown, as its measured form is)."""
    return markdown(f"This capture did not measure {what}.")


def _nan(x) -> bool:
    return x is None or x != x


def _at(frame, row, col):
    """frame.loc[row, col], NaN where the row or the column is missing."""
    try:
        return float(frame.loc[row, col])
    except (KeyError, TypeError, ValueError):
        return NAN


def _from(ranged: str, at: str = "at ", start: str = "from ") -> str:
    """A span() after a preposition: "from 1.2 to 3.4", or "at 1.2" where its ends read alike."""
    return (start if " to " in ranged else at) + ranged


def _count(k, one: str = "", many: str = "") -> str:
    """A count of some of a number already said, with its verb: "none was", "1 was", "3 were" (no verb if none
    given)."""
    k = int(k)
    verb = (one if k <= 1 else many) if one else ""
    return ("none" if k == 0 else f"{k:,}") + (f" {verb}" if verb else "")


def user_kernel(runs):
    """Each server's CPU per call split into user and kernel time (µs, the medians of its runs)."""
    return runs.assign(user_us=1e6 * runs.server_user_s / runs.ok, kernel_us=1e6 * runs.server_sys_s / runs.ok
                       ).groupby("server")[["user_us", "kernel_us"]].median()


def _of(rpc, experiment, ok=False):
    d = rpc.df[rpc.df.experiment == experiment]
    return d[d.ok_run] if ok else d


# ---- rpc-provider -------------------------------------------------------------------------------------------

def measured(rpc) -> dict:
    """How long each point was measured, how often, how many rows, each JVM's warm-up."""
    plan = rpc.meta["plan"]
    warm = plan.get("jvm_warmup_s", {})
    return {"rpc_measured_s": f"{plan['measured_s']:g}", "rpc_repeats": f"{rpc.df['repeat'].max():.0f}",
            "rpc_rows": f"{len(rpc.df):,}", "rpc_warm": listing(f"{s} {warm[s]:g} s" for s in warm) or NA}


def warmup(rpc, check=None) -> dict:
    """The first minute: each provider's first window, its later rate (every repeat), the climb between, how far a
    late window strays from the one before it, and the window in which each settled."""
    S, W = rpc.summary(), _of(rpc, "warmup")
    by_window = W.groupby(["server", "window"]).achieved_rps.median()
    out, first, climb, settled = {}, {}, {}, []
    for s in PROV:
        first[s] = value_in(S, "achieved_rps", NAN, experiment="warmup", server=s, window=1)
        late = W[(W.server == s) & (W.window >= 7)].achieved_rps
        climb[s] = late.median() / first[s]
        # within one process, how far a late window's rate strays from the one before it, at most
        step = W[(W.server == s) & (W.window >= 6)].sort_values("window").groupby("repeat").achieved_rps.pct_change()
        out |= {f"rpc_w1_{key(s)}": n(first[s]), f"rpc_wlate_{key(s)}": span_of(late, ",.0f"),
                f"rpc_wx_{key(s)}": n(climb[s], ".0f"), f"rpc_wstep_{key(s)}": n(100 * step.abs().max(), ".0f")}
        # the first window whose median over the repeats came within a tenth of the provider's later rate
        rates = by_window[by_window.index.get_level_values("server") == s].droplevel("server")
        w = next((w for w, r in rates.items() if r >= 0.9 * late.median()), None)
        if w is not None:
            settled.append(f"from {10 * (w - 1)} to {10 * w} s for `{s}`")
    out["rpc_w90_said"] = markdown(listing(settled) or NA)
    if checks(rpc, check):
        claim(max(first, key=first.get) == "rpc-netty" and min(climb, key=climb.get) == "rpc-netty",
              "plain Netty started highest and climbed least", first=first, climb=climb)
        claim(min(climb[s] for s in PROV if s != "rpc-netty") > 2, "in its first 10 s each Spring provider answered "
              "less than half its later rate", climb=climb)
    return out


def _writeup(rpc):
    S = rpc.summary()
    return S[S.experiment == "writeup"].assign(through=lambda d: d.via.fillna("").replace("", "direct"))


def _wv(wu, column, server, via):
    d = wu[(wu.server == server) & (wu.through == via)]
    return float(d[column].iloc[0]) if len(d) == 1 else NAN


def writeup(rpc, check=None) -> dict:
    """The write-up's setup reproduced: through the consumer and directly, the ratio of the two providers' rates,
    whether their repeats overlap, and what the consumer spent in front of each."""
    wu = _writeup(rpc)
    out = {}
    for s in PAIR:
        out |= {f"rpc_wu_via_{key(s)}": n(_wv(wu, "achieved_rps", s, "rpc-consumer")),
                f"rpc_wu_direct_{key(s)}": n(_wv(wu, "achieved_rps", s, "direct")),
                f"rpc_wu_cons_cpu_{key(s)}": n(_wv(wu, "consumer_cpu_us_per_req", s, "rpc-consumer")),
                f"rpc_wu_prov_cpu_{key(s)}": n(_wv(wu, "cpu_us_per_req", s, "rpc-consumer"))}
    via_netty, via_tomcat = (_wv(wu, "achieved_rps", s, "rpc-consumer") for s in ("rpc-netty", "rpc-tomcat"))
    out["rpc_wu_ratio_via"] = n(via_netty / via_tomcat, ".1f")
    out["rpc_wu_ratio_direct"] = n(_wv(wu, "achieved_rps", "rpc-netty", "direct")
                                   / _wv(wu, "achieved_rps", "rpc-tomcat", "direct"), ".1f")
    out["rpc_wu_ratio_paper"] = f"{WRITEUP_RATIO:.1f}"
    out["rpc_sum_via"] = f"{n(via_netty)} against {n(via_tomcat)}"
    via = rpc.df[(rpc.df.experiment == "writeup") & (rpc.df.via == "rpc-consumer")].groupby("server")
    rps_lo, rps_hi = via.achieved_rps.min(), via.achieved_rps.max()
    lo_netty, hi_tomcat = rps_lo.get("rpc-netty", NAN), rps_hi.get("rpc-tomcat", NAN)
    if _nan(lo_netty) or _nan(hi_tomcat):
        out["rpc_wu_overlap_said"] = markdown("this capture did not measure both through the consumer")
        out["rpc_sum_wu_overlap"] = NA
    else:
        wu_overlap = bool(lo_netty < hi_tomcat)  # the two providers' repeats, through the consumer
        out["rpc_wu_overlap_said"] = markdown(
            "but the repeats overlap: through the consumer the two are not told apart" if wu_overlap else
            f"in every repeat: `rpc-netty`'s pair answered at least {n(lo_netty)}, `rpc-tomcat`'s at most "
            f"{n(hi_tomcat)}")
        out["rpc_sum_wu_overlap"] = "with overlapping repeats" if wu_overlap else "in every repeat"
    cons_lo, cons_hi = via.consumer_cpu_us_per_req.min(), via.consumer_cpu_us_per_req.max()
    cons_more = (_wv(wu, "consumer_cpu_us_per_req", "rpc-tomcat", "rpc-consumer")
                 - _wv(wu, "consumer_cpu_us_per_req", "rpc-netty", "rpc-consumer"))
    # what the consumer spent in front of rpc-tomcat beyond rpc-netty: more or less in the medians, and whether the
    # repeats say so too (every repeat in front of one above every repeat in front of the other) or overlap
    if _nan(cons_more):
        out["rpc_wu_cons_more_said"] = markdown("this capture did not measure it in front of both")
    else:
        cons_apart = bool(cons_lo["rpc-tomcat"] > cons_hi["rpc-netty"] or cons_lo["rpc-netty"] > cons_hi["rpc-tomcat"])
        out["rpc_wu_cons_more_said"] = markdown(
            f"{abs(cons_more):.0f} µs {'more' if cons_more > 0 else 'less'} per call in front of `rpc-tomcat`"
            + (", perhaps for reconnecting every 100 calls" if cons_more > 0 else "")
            + (" (in every repeat)" if cons_apart else " (the repeats overlap)"))
    if checks(rpc, check):
        claim(WRITEUP_RATIO > via_netty / via_tomcat > 1, "through the consumer rpc-netty's pair answered more than "
              "rpc-tomcat's, by a smaller ratio than the write-up's", netty=via_netty, tomcat=via_tomcat)
        claim(cons_lo.min() > via.server_cpu_us_per_req.max().max(), "the consumer cost more than either provider in "
              "every repeat", consumer_lo=cons_lo.min(), provider_hi=via.server_cpu_us_per_req.max().max())
        # exercise 4: Little's law at 10 connections, wrk's runs against the book's generator's
        ten = rpc.df[(rpc.df.connections == 10) & rpc.df.experiment.isin(["writeup", "keepalive"])]
        busy = (ten.achieved_rps * ten.mean_ms / 1000).groupby(ten.tool)
        claim(busy.min()["wrk"] > 10 and 9 < busy.min()["openloop"] and busy.max()["openloop"] <= 10,
              "every wrk run breaks the bound of 10, and iom-openloop stays just under 10", low=busy.min().to_dict(),
              high=busy.max().to_dict())
    return out


def _ka_said(lost, lo0, hi0, lo100, hi100, s):
    """What closing every 100 calls did to a provider's rate, and whether its repeats of the two settings overlap."""
    overlap = lo0 <= hi100 and lo100 <= hi0
    return ((f"cost `{s}` {lost:.0f} % of its rate" if lost >= 1 else
             f"left `{s}`'s rate within 1 % of where it was" if lost > -1 else
             f"raised `{s}`'s rate by {-lost:.0f} %")
            + (f" (its repeats of the two settings overlap: {span(lo0, hi0, ',.0f')} never closing, "
               f"{span(lo100, hi100, ',.0f')} closing)" if overlap else
               " (every repeat of one setting apart from every repeat of the other)"))


def keepalive(rpc, check=None) -> dict:
    """Keep-alive matched: each provider's rate and CPU per call never closing and closing every 100 calls, what
    closing cost, and how busy the machine was outside both processes meanwhile."""
    S = rpc.summary()
    by_flag = dict(experiment="keepalive", close_every=0)  # the providers told to close, or never: not the generator
    out, lost, extra, rps_of = {}, {}, {}, {}
    for s in PAIR:
        rps = {kar: value_in(S, "achieved_rps", NAN, server=s, keep_alive_requests=kar, **by_flag) for kar in (0, 100)}
        cpu = {kar: value_in(S, "cpu_us_per_req", NAN, server=s, keep_alive_requests=kar, **by_flag)
               for kar in (0, 100)}
        for kar in (0, 100):
            out |= {f"rpc_ka{kar}_{key(s)}": n(rps[kar]), f"rpc_ka{kar}_cpu_{key(s)}": n(cpu[kar], ".1f")}
        out[f"rpc_ka_extra_{key(s)}"] = n(cpu[100] - cpu[0], "+.1f")  # µs per call
        extra[s] = cpu[100] - cpu[0]  # µs per call; a hundred times it, per connection
        lost[s] = 100 * (1 - rps[100] / rps[0])  # % of the never-closing rate
        rps_of[s] = rps
    runs = rpc.df[(rpc.df.experiment == "keepalive") & (rpc.df.close_every == 0)]
    rng = runs.groupby(["server", "keep_alive_requests"]).achieved_rps.agg(["min", "max"])
    out["rpc_ka_conn_said"] = markdown(listing(
        f"{NA} for `{s}`" if _nan(extra[s]) else f"{100 * extra[s]:,.0f} µs for `{s}`" if extra[s] > 0 else
        f"nothing for `{s}`, whose CPU per call did not grow" for s in ("rpc-netty", "rpc-tomcat")))
    if any(_nan(x) for x in lost.values()):
        out["rpc_ka_lost_said"] = markdown("This capture did not measure both providers never closing and closing "
                                           "every 100 calls")
    else:
        said = {s: _ka_said(lost[s], *(_at(rng, (s, kar), m) for kar in (0, 100) for m in ("min", "max")), s)
                for s in PAIR}
        out["rpc_ka_lost_said"] = markdown(
            f"Closing every 100 calls {said['rpc-netty']} and {said['rpc-tomcat']}: "
            + ("Tomcat's closing, as shipped, may have widened the write-up's gap by about that share"
               if lost["rpc-tomcat"] >= 1 else "Tomcat's closing, as shipped, did not lower its rate here"))
    out["rpc_ka_foreign_said"] = _ka_foreign(runs)
    if checks(rpc, check):
        wu = _writeup(rpc)
        gap = {kar: rps_of["rpc-netty"][kar] / rps_of["rpc-tomcat"][kar] for kar in (0, 100)}
        writeup_gap = _wv(wu, "achieved_rps", "rpc-netty", "direct") / _wv(wu, "achieved_rps", "rpc-tomcat", "direct")
        claim(min(gap.values()) - 1 > 0.5 * (writeup_gap - 1), "with keep-alive matched either way most of the gap "
              "remains", matched=gap, writeup=writeup_gap)
    return out


def _ka_foreign(runs) -> str:
    """How busy the machine was outside both processes while the two keep-alive settings ran."""
    pairs = runs.pivot_table(index=["server", "repeat"], columns="keep_alive_requests",
                             values="foreign_cpu_cores").reindex(columns=[0, 100]).dropna()
    both = pairs[[0, 100]].to_numpy().ravel()
    busier = int((pairs[100] > pairs[0]).sum())
    if not len(both):
        return NA
    if f"{both.max():.2f}" == "0.00":
        return (f"in none of their {len(both)} runs did the machine spend a measurable share of a core outside both "
                "processes (under 0.005 of one)")
    return (f"the machine spent at most {both.max():.2f} of a core outside both processes in any of their "
            f"{len(both)} runs, and more during the closing run than during the keeping one in "
            f"{tally(busier, len(pairs), 'pair', verbs=None)}")


def _sweep_cpu_range(rpc):
    return _of(rpc, "sweep", ok=True).groupby(["server", "connections"]).server_cpu_us_per_req.agg(["min", "max"])


def sweep_x(rpc) -> float:
    """rpc-tomcat's CPU per call over rpc-netty's, in the sweep at 16 connections."""
    S = rpc.summary()
    cpu = {s: value_in(S, "cpu_us_per_req", NAN, experiment="sweep", server=s, connections=16) for s in PAIR}
    return cpu["rpc-tomcat"] / cpu["rpc-netty"]


def sweep(rpc, check=None) -> dict:
    """The closed-loop sweep: rates, CPU per call, p99, threads and memory; where rpc-tomcat's extra CPU goes; the
    other providers against Tomcat's pool, repeat by repeat; which held their rate past 16 connections."""
    sw = rpc.summary().query("experiment == 'sweep'").set_index(["server", "connections"])

    def swv(col, s, c):
        return _at(sw, (s, c), col)

    out = {}
    for s in PROV:
        out |= {f"rpc_sw{c}_{key(s)}": n(swv("achieved_rps", s, c)) for c in (1, 16, 64, 256)}
        out |= {f"rpc_sw_cpu_{key(s)}": n(swv("cpu_us_per_req", s, 16), ".0f"),
                f"rpc_sw_cpu256_{key(s)}": n(swv("cpu_us_per_req", s, 256), ".0f"),
                f"rpc_threads_{key(s)}": n(swv("threads", s, 256)), f"rpc_rss_{key(s)}": n(swv("rss_mib", s, 256)),
                f"rpc_pss_{key(s)}": n(swv("pss_mib", s, 256))}
        out |= {f"rpc_sw{c}_p99_{key(s)}": n(swv("p99_ms", s, c), ".1f") for c in (1, 4)}
    sw_x = sweep_x(rpc)
    out["rpc_sw_x"] = n(sw_x, ".1f")
    # rpc-tomcat's CPU per call beyond rpc-netty's at 16 connections, split by the kernel's accounting
    at16 = _of(rpc, "sweep", ok=True)
    split16 = user_kernel(at16[at16.connections == 16]).reindex(list(PAIR))
    beyond = (split16.loc["rpc-tomcat"] - split16.loc["rpc-netty"]).rename({"user_us": "user", "kernel_us": "kernel"})
    out |= _gap_said(beyond)
    out["rpc_sw_dearer_said"] = markdown(
        f"Set against Tomcat's pooled threads, repeat by repeat, a virtual thread per request cost "
        f"{_against_tomcat(_sweep_cpu_range(rpc), 'rpc-tomcat-vt')}, and WebFlux's event loop under Spring "
        f"{_against_tomcat(_sweep_cpu_range(rpc), 'rpc-webflux')}")
    one = {s: swv("achieved_rps", s, 1) for s in ("rpc-netty", "rpc-tomcat")}
    busy1 = _of(rpc, "sweep").query("connections == 1").groupby("server").server_cpu_pct.median()
    ratio1 = one["rpc-netty"] / one["rpc-tomcat"]
    out["rpc_sw1_said"] = unmeasured("both providers at one connection") if _nan(ratio1) else markdown(
        ("At one connection the providers are close" if 0.8 < ratio1 < 1.25 else
         "At one connection the providers are closer" if ratio1 > 1 else
         "At one connection `rpc-tomcat` answered more than `rpc-netty`")
        + f" (`rpc-netty` {n(one['rpc-netty'])}, `rpc-tomcat` {n(one['rpc-tomcat'])} calls per second): each call "
        f"waits a round trip through the generator, and neither core was full (`rpc-netty`'s "
        f"{busy1['rpc-netty']:.0f} % busy, `rpc-tomcat`'s {busy1['rpc-tomcat']:.0f} %).")
    both = [s for s in PROV if not _nan(swv("achieved_rps", s, 16)) and not _nan(swv("achieved_rps", s, 256))]
    held = [s for s in both if swv("achieved_rps", s, 256) >= 0.9 * swv("achieved_rps", s, 16)]
    out["rpc_sw_hold_said"] = markdown(sentence(
        ([f"from 16 to 256 connections {listing(f'`{s}`' for s in held)} held "
          f"{'its rate' if len(held) == 1 else 'their rates'} within a tenth"] if held else [])
        + [f"`{s}` answered {n(swv('achieved_rps', s, 16))} per second at 16 connections, "
           f"{n(swv('achieved_rps', s, 64))} at 64 and {n(swv('achieved_rps', s, 256))} at 256, as its CPU per call "
           f"grew from {swv('cpu_us_per_req', s, 16):.0f} to {swv('cpu_us_per_req', s, 256):.0f} µs"
           for s in both if s not in held], "This capture did not measure the providers at 16 and 256 connections."))
    if checks(rpc, check):
        claim(sw_x >= 2, "Spring MVC on Tomcat spent several times (twice or more) plain Netty's CPU per call", x=sw_x)
        claim(beyond.kernel > 0 and beyond.user > 0, "rpc-tomcat spent more than rpc-netty per call both in user and "
              "in kernel time", beyond=beyond.to_dict())
        # the core full at 16 connections and beyond (calls per second times CPU per call: a core's worth), so that a
        # provider's rate follows its CPU per call
        full = {(s, c): swv("achieved_rps", s, c) * swv("cpu_us_per_req", s, c) / 1e6 for s in PROV
                for c in (16, 64, 256)}
        claim(min(full.values()) > 0.9, "from 16 connections on, every provider's core was full (calls per second "
              "times CPU per call)", least=min(full.values()))
        busy1 = busy1.reindex(list(PAIR))   # a run without one connection has no figure here: not "full"
        claim(bool(busy1.lt(90).all()), "at one connection neither core was full", busy=busy1.to_dict())
    return out


def _gap_said(beyond) -> dict:
    """rpc-tomcat's CPU per call beyond rpc-netty's at 16 connections, said as kernel and user time."""
    if _nan(beyond.kernel) or _nan(beyond.user):
        return {"rpc_gap_said": markdown(f"the split of `rpc-tomcat`'s CPU beyond `rpc-netty`'s was {NA}"),
                "rpc_gap_short": markdown(f"the split of what it spent beyond Netty was {NA}")}
    return {"rpc_gap_said": markdown(
        f"of the {beyond.sum():.0f} µs per call `rpc-tomcat` spent beyond `rpc-netty` at 16 connections, "
        f"{beyond.kernel:.0f} were kernel time and {beyond.user:.0f} user time: "
        f"{'most' if beyond.kernel > beyond.user else 'part'} of the gap is in the kernel"),
        "rpc_gap_short": markdown(
        f"of what it spent beyond Netty, {beyond.kernel:.0f} µs per call was kernel time, in the system calls of "
        f"handing each call between threads, and {beyond.user:.0f} user time, in dispatch, filters and converters"
        if beyond.kernel > beyond.user else
        f"of what it spent beyond Netty, {beyond.user:.0f} µs per call was user time, in dispatch, filters and "
        f"converters, and {beyond.kernel:.0f} kernel time, in the system calls of handing each call between "
        "threads")}


def _against_tomcat(swr, s) -> str:
    """A provider's CPU per call against rpc-tomcat's at 16, 64 and 256 connections, by their repeats: every one
    above, every one below, or overlapping."""
    levels = (16, 64, 256)

    def at_levels(cs):
        return "every level" if len(cs) == len(levels) else listing(f"{c:,}" for c in cs) + " connections"

    lo, hi = ({c: _at(swr, (x, c), m) for c in levels} for x, m in ((s, "min"), (s, "max")))
    t_lo, t_hi = ({c: _at(swr, ("rpc-tomcat", c), m) for c in levels} for m in ("min", "max"))
    seen = [c for c in levels if not any(_nan(d[c]) for d in (lo, hi, t_lo, t_hi))]
    more = [c for c in seen if lo[c] > t_hi[c]]
    less = [c for c in seen if hi[c] < t_lo[c]]
    same = [c for c in seen if c not in more + less]
    return listing(([f"more CPU per call at {at_levels(more)}"] if more else [])
                   + ([f"less at {at_levels(less)}"] if less else [])
                   + ([f"about as much at {at_levels(same)}, the repeats overlapping"] if same else [])) or NA


def half_load_apart(rpc) -> list[tuple[str, str]]:
    """The pairs of providers whose repeats came apart in the open loop at half load: every repeat of the first
    had a lower p99 than every repeat of the second."""
    half = _of(rpc, "open").query("fraction == 0.5")
    return _apart(half.groupby("server").p99_ms.agg(["min", "max"]))


def _apart(p99) -> list[tuple[str, str]]:
    return [(a, b) for a in p99.index for b in p99.index if a != b and p99.loc[a, "max"] < p99.loc[b, "min"]]


def open_loop(rpc, check=None) -> dict:
    """Latency against offered load: the p99 and rates at 50, 80 and 120 %, the half-load point's repeats and what
    they rank, the share each provider answered at 120 %, and the runs the generator bounded."""
    S, op = rpc.summary(), _of(rpc, "open")
    out = {}
    points = S[S.experiment == "open"].set_index(["server", "fraction"])
    for s in PROV:
        for f in (0.5, 0.8, 1.2):
            out |= {f"rpc_op{int(f * 100)}_{key(s)}": n(_at(points, (s, f), "p99_ms"), ".1f"),
                    f"rpc_opx{int(f * 100)}_{key(s)}": n(_at(points, (s, f), "achieved_rps")),
                    f"rpc_opo{int(f * 100)}_{key(s)}": n(_at(points, (s, f), "offered_rps"))}
    half = op[op.fraction == 0.5]
    for s in PROV:  # every repeat of the half-load point, not only its median
        mine = half[half.server == s]
        out |= {f"rpc_op50_p99s_{key(s)}": _from(span_of(mine.p99_ms, ".1f")),
                f"rpc_op50_cpu_{key(s)}": n(mine.server_cpu_pct.median())}
    busy = half[half.server == "rpc-netty"].server_cpu_pct.median() / 100
    out["rpc_op50_drain_netty"] = n(busy / (1 - busy), ".0f")  # a stall's queue drains this many times its length
    half_p99 = half.groupby("server").p99_ms.agg(["min", "max"])
    apart = _apart(half_p99)
    out["rpc_op50_rank"] = "do not rank the providers" if not apart else "rank the providers only in part"
    out["rpc_op50_rank_said"] = unmeasured("the open loop at half load") if half.empty else markdown(
        "Those medians do not rank the providers: the repeats of the half-load point spread more than the providers "
        "do" if not apart else
        "Those medians rank the providers only in part: at half load every repeat of "
        + pairs_by_second(apart, "{firsts} came below every repeat of {second}")
        + ", and the other pairs' repeats overlapped")
    out |= _overload(rpc, op, S)
    out["rpc_op_bound_said"] = _bound_said(rpc)
    if checks(rpc, check):
        busy = half.groupby("server").server_cpu_pct.median().reindex(list(PAIR))
        claim(bool(busy.gt(50).all()), "at half its rate each of rpc-netty and rpc-tomcat kept its core more than half "
              "busy", busy=busy.round(0).to_dict())
        p99 = half.groupby("server").p99_ms.median().reindex(PROV)   # NaN for a provider not measured there
        claim(bool(p99.ge(1).all()), "at half load every provider's p99 was a millisecond or more",
              p99=p99.round(2).to_dict())
        claim(len(apart) < len(half_p99) * (len(half_p99) - 1) / 2, "the repeats of the half-load point do not rank "
              "every provider against every other", at={"repeats": int(half.groupby("server").size().min())
                                                        if len(half) else 0}, apart=apart)
        at80 = op[op.fraction == 0.8]
        claim((at80.achieved_rps / at80.offered_rps).groupby(at80.server).median().ge(0.99).all(), "at 80 % every "
              "provider still answered what it was offered (99 % or more, in the median of its repeats)")
    return out


def _overload(rpc, op, S) -> dict:
    """At 120 %: each provider's answered share, the one that answered the largest, and those that answered more
    than their capacity in every repeat."""
    top = op[op.fraction == 1.2].assign(share=lambda d: d.achieved_rps / d.offered_rps,
                                        over=lambda d: d.achieved_rps > d.capacity_rps)
    share120 = top.groupby("server").share.median()
    out = {f"rpc_op120_share_{key(s)}": n(100 * share120.get(s, NAN), ".1f") for s in PROV}
    if not set(PROV) <= set(share120.index):
        out |= {"rpc_op120_main_said": unmeasured("every provider at 120 %"),
                "rpc_op120_said": unmeasured("every provider at 120 %")}
    else:
        least = share120.idxmax()  # the provider that queued least: the largest share answered
        queued = [s for s in PROV if share120[s] < 0.99]  # answered less than 99 % of what it was offered
        out["rpc_op120_main_said"] = markdown(
            f"all of them queue, and `{least}` answered the largest share of what it was offered"
            if len(queued) == len(PROV) else
            f"{listing(f'`{s}`' for s in queued) or 'none'} queue, while "
            + listing(f"`{s}`" for s in PROV if s not in queued)
            + " answered 99 % or more of what it was offered in the median of its repeats: there, 64 connections in a "
              "closed loop had not found all it could answer")
        p99 = value_in(S, "p99_ms", NAN, experiment="open", server=least, fraction=1.2)
        out["rpc_op120_said"] = markdown(
            f"`{least}` answered the largest share of the calls it was offered, {100 * share120[least]:.1f} % "
            + (f"in the median of its {words(runs)} runs" if (runs := int((top.server == least).sum())) > 1 else
               "in its one run")
            + f" (p99 {p99:.1f} ms), where "
            + listing(f"`{s}`'s answered {100 * share120[s]:.1f} %" for s in PROV if s != least))
    # the providers that answered more at 120 % than their capacity (the closed loop's rate at 64) in every repeat
    over_all = top.groupby("server").over.all()
    overs = [s for s in PROV if over_all.get(s, False)]
    out["rpc_op120_over_said"] = markdown(
        "No provider answered more in the open loop at 120 % than its capacity in every repeat." if not overs else
        f"In every repeat {listing(f'`{s}`' for s in overs)} answered more in the open loop at 120 % than "
        f"{'its' if len(overs) == 1 else 'their'} capacity (`{overs[0]}`: "
        + listing(f"{n(r.achieved_rps)} against {n(r.capacity_rps)}"
                  for r in top[top.server == overs[0]].sort_values("repeat").itertuples())
        + " per second), so 120 % of that capacity was less than 120 % of what "
        + ("it" if len(overs) == 1 else "they") + " could answer, and why, these runs do not show.")
    out["rpc_pit_over_said"] = markdown(
        "A closed loop's rate at N connections is one measure of a server's capacity; an open loop above it shows "
        "whether the server can answer more (here no provider did so in every repeat at 120 %)" if not overs else
        "A closed loop's rate at N connections need not be a server's capacity: in every repeat "
        + listing(f"`{s}`" for s in overs) + " answered more in the open loop at 120 % than at 64 connections in the "
        "closed one, for reasons these runs do not show")
    return out


def _bound_said(rpc):
    """The runs the harness flagged as generator-bound, by provider and experiment."""
    bound = rpc.df[rpc.df.generator_bound]
    if bound.empty:
        return markdown("The harness flagged no run as generator-bound: every rate here is the provider's.")
    repeats = rpc.df["repeat"].max()

    def which(s, e, g):
        what = ("open loop at " + listing(f"{100 * f:g}" for f in sorted(g.fraction.unique())) + " %" if e == "open"
                else {"writeup": "runs of the write-up's setup without the consumer"}.get(e, f"{e} points"))
        every = g.groupby(["fraction", "connections"], dropna=False).size().min() == repeats
        return f"`{s}`'s {what}" + (" in every repeat" if every else f" ({len(g)} runs)")

    return markdown(
        "The highest rates take the generator close to the limit of its own core: the harness flags as "
        "generator-bound " + listing(which(s, e, g) for (s, e), g in bound.groupby(["server", "experiment"]))
        + ", so those rates are partly the generator's (its CPU per call is still the provider's).")


def work(rpc, check=None) -> dict:
    """Ten milliseconds of blocking work: each provider's rate at 16, 256 and 1,000 connections, its threads and
    CPU per call, and rpc-tomcat's repeats at 1,000 (exercise 3's claims on rpc-webflux's pool too)."""
    S, wk = rpc.summary(), _of(rpc, "work")

    def at(col, s, c, pool=0):
        return value_in(S, col, NAN, experiment="work", server=s, connections=c, pool=pool)

    out = {}
    for s in PROV:
        out |= {f"rpc_wk{c}_{key(s)}": n(at("achieved_rps", s, c)) for c in (16, 256, 1000)}
        out[f"rpc_wk_threads_{key(s)}"] = n(at("threads", s, 1000))
    out |= {f"rpc_wk{c}_webflux_200": n(at("achieved_rps", "rpc-webflux", c, 200)) for c in (256, 1000)}
    wk_t = wk[(wk.server == "rpc-tomcat") & (wk.connections == 1000) & (wk.pool == 0)]
    if wk_t.empty:
        out["rpc_wk1000_tomcat_note"] = NA
    else:  # the repeat whose rate is the median
        mid = wk_t.loc[(wk_t.achieved_rps - at("achieved_rps", "rpc-tomcat", 1000)).abs().idxmin()]
        lost = int(mid.connections - mid.conns_served)
        out["rpc_wk1000_tomcat_note"] = (
            "repeats " + _from(span_of(wk_t.achieved_rps, ",.0f"), "all at ")
            + (f"; the median one left {lost:,} of its {mid.connections:,.0f} connections unanswered" if lost else ""))
    out |= {f"rpc_wk_cpu_{key(s)}": n(at("cpu_us_per_req", s, 1000), ".0f") for s in ("rpc-tomcat", "rpc-tomcat-vt")}
    if checks(rpc, check):
        tomcat, vt = (at("achieved_rps", s, 1000) for s in ("rpc-tomcat", "rpc-tomcat-vt"))
        claim(tomcat < 0.95 * 200 / 0.010, "at 1,000 connections the core allowed rpc-tomcat less than its 200 threads "
              "would (20,000 per second)", rps=tomcat)
        cpu = {s: at("cpu_us_per_req", s, 1000) for s in ("rpc-tomcat", "rpc-tomcat-vt")}
        claim(bool(vt < tomcat and cpu["rpc-tomcat-vt"] > cpu["rpc-tomcat"]),
              "at 1,000 connections rpc-tomcat-vt answered fewer than Tomcat's pool, each call costing more CPU",
              rps={"rpc-tomcat": tomcat, "rpc-tomcat-vt": vt}, cpu=cpu)
    flux = S[(S.experiment == "work") & (S.server == "rpc-webflux")]  # exercise 3
    shipped, wide = flux[flux.pool == 0], flux[flux.pool == 200]
    if checks(rpc, check) and len(flux):   # a run without WebFlux's blocking work says nothing of it
        claim(shipped.achieved_rps.le(1.02 * 1000).all(), "as shipped, rpc-webflux answered at most its ten threads' "
              "1,000 calls per second at every level", rps=shipped.achieved_rps.tolist())
        claim(len(wide) > 0 and wide.achieved_rps.gt(1000).all(), "with 200 threads rpc-webflux answered more than "
              "1,000 per second", rps=wide.achieved_rps.tolist())
        claim(shipped.sort_values("connections").p50_ms.is_monotonic_increasing, "as shipped, rpc-webflux's median "
              "latency grew with the connections", p50=shipped.p50_ms.tolist())
    return out


def grid(rpc, check=None) -> dict:
    """Beyond HTTP: plain Netty's CPU per call over HTTP or frames, in JSON or binary, beside rpc-tomcat's; what
    frames and binary save against what dropping Spring and Tomcat saves, and where the saving went."""
    S = rpc.summary()

    def gv(server):
        return value_in(S, "cpu_us_per_req", NAN, server=server, connections=64,
                        experiment="grid" if server in GRID[1:] else "sweep")

    out = {f"rpc_grid_cpu_{key(s)}": n(gv(s), ".1f") for s in list(GRID) + ["rpc-tomcat"]}
    g = S[S.server.isin(list(GRID) + ["rpc-tomcat"]) & (S.connections == 64) & S.experiment.isin(["sweep", "grid"])]
    out["rpc_grid_gen"] = n(g.client_cpu_pct.max(), ".0f")
    saved, framework = gv("rpc-netty") - gv("rpc-netty-frame-binary"), gv("rpc-tomcat") - gv("rpc-netty")
    out["rpc_grid_framework"] = n(framework, ".0f")
    # frames and binary against HTTP and JSON on plain Netty, by their repeats: every one below, or overlapping
    runs64 = rpc.df[rpc.df.ok_run & (rpc.df.connections == 64) & rpc.df.experiment.isin(["sweep", "grid"])]
    g64 = runs64.groupby("server").server_cpu_us_per_req.agg(["min", "max"])
    split64 = user_kernel(runs64).reindex(["rpc-netty", "rpc-netty-frame-binary"])
    if _nan(saved):
        return out | {name: unmeasured("plain Netty both over HTTP and JSON and over frames and binary") for name in
                      ("rpc_grid_saved_said", "rpc_grid_saved_short", "rpc_sum_grid_said", "rpc_grid_shift_said")}
    fb_below = bool(g64.loc["rpc-netty-frame-binary", "max"] < g64.loc["rpc-netty", "min"])
    pct = 100 * saved / gv("rpc-netty")
    saved_said = (f"saved {saved:.1f} µs of plain Netty's CPU per call ({pct:.0f} %, every repeat below plain Netty's)"
                  if fb_below else f"changed plain Netty's CPU per call by {-saved:+.1f} µs ({-pct:+.0f} %, their "
                  "repeats and plain Netty's overlapping)")
    out["rpc_grid_saved_said"] = markdown("Frames and a binary codec together " + saved_said)
    out["rpc_grid_saved_short"] = markdown(f"saved {pct:.0f} % of plain Netty's CPU per call here" if fb_below else
                                           f"changed plain Netty's CPU per call by {-pct:+.0f} % here, within the "
                                           "spread of the repeats")
    out["rpc_sum_grid_said"] = markdown(f"Frames and a binary codec together {saved_said.replace('plain ', '')}")
    # where the frame's and the codec's saving went: user time against kernel time
    uk = {col: (split64.loc["rpc-netty", col], split64.loc["rpc-netty-frame-binary", col])
          for col in ("user_us", "kernel_us")}
    rates = g[g.server.isin(GRID)].achieved_rps
    took_back = (not fb_below and uk["user_us"][1] < uk["user_us"][0] and uk["kernel_us"][1] > uk["kernel_us"][0]
                 and rates.max() < 1.05 * rates.min())
    out["rpc_grid_shift_said"] = markdown(
        f"In user time, frames and binary spent {uk['user_us'][1]:.1f} µs per call against HTTP and JSON's "
        f"{uk['user_us'][0]:.1f}, and in kernel time {uk['kernel_us'][1]:.1f} against {uk['kernel_us'][0]:.1f}"
        + (": what the frame and the codec saved in the provider's own code, the kernel took back. Every variant of "
           "plain Netty answered within 5 % of the same rate, its core full; a provider that does less per call finds "
           "fewer calls waiting at each wake-up and makes more system calls per call, which would give this, but this "
           "run does not count them." if took_back else "."))
    if checks(rpc, check):
        claim(not g.generator_bound.any(), "the generator was never the bottleneck at these points (the harness's "
              "flag)", gen=g.client_cpu_pct.max())
        claim(saved < 0.25 * framework, "frames and a binary codec save a fraction of what dropping Spring and Tomcat "
              "saves", saved=saved, framework=framework)
    return out


@functools.lru_cache(maxsize=4)
def _shares(folder: str):
    return flames.table(Path(folder))


def flame_shares(rpc, check=None) -> dict:
    """Where the CPU goes: the flame graphs' shares by library in rpc-tomcat and rpc-netty, and what the kernel's
    share means per call (exercise 5's claims too)."""
    shares = _shares(str(rpc.path / "flame"))

    def share(server, *cols):
        return n(shares.reindex(columns=list(cols)).loc[server].sum() if server in shares.index else NAN, ".0f")

    out = {"rpc_fl_tomcat_fw": share("rpc-tomcat", "Spring", "Tomcat"),
           "rpc_fl_tomcat_json": share("rpc-tomcat", "JSON (Jackson)"),
           "rpc_fl_tomcat_tomcat": share("rpc-tomcat", "Tomcat"), "rpc_fl_tomcat_spring": share("rpc-tomcat", "Spring"),
           "rpc_fl_tomcat_kernel": share("rpc-tomcat", "kernel"), "rpc_fl_netty_kernel": share("rpc-netty", "kernel"),
           "rpc_fl_netty_netty": share("rpc-netty", "Netty"), "rpc_fl_netty_json": share("rpc-netty", "JSON (Jackson)")}
    if not set(PAIR) <= set(shares.index):
        return out | {"rpc_fl_said": markdown(f"the flame graphs of both `rpc-tomcat` and `rpc-netty` were {NA}")}
    parts = shares.drop(columns="samples")
    majority = [s for s in PAIR if parts.loc[s, "kernel"] > 50]
    x = sweep_x(rpc)
    out["rpc_fl_said"] = markdown(
        "by share of samples the kernel is the largest single part in both, "
        + ("a majority in neither" if not majority else "a majority in both" if len(majority) == 2 else
           f"a majority only in `{majority[0]}`")
        + (". But the shares hide the sizes, and this capture did not measure both providers' CPU per call at 16 "
           "connections" if _nan(x) else
           f". But the shares hide the sizes: `rpc-tomcat` spent {x:.1f} times the CPU per call of `rpc-netty`, so "
           + ("its kernel share, a smaller fraction of a much larger whole, "
              if parts.loc["rpc-tomcat", "kernel"] < parts.loc["rpc-netty", "kernel"] else "its kernel share ")
           + "is larger per call than Netty's"))
    if checks(rpc, check):
        S = rpc.summary()
        claim(parts.loc["rpc-tomcat"].idxmax() == "kernel" and parts.loc["rpc-netty"].idxmax() == "kernel",
              "the kernel's share of the samples is the largest single part in both providers",
              largest={s: parts.loc[s].idxmax() for s in PAIR})
        per_call = {s: parts.loc[s, "kernel"] / 100 * value_in(S, "cpu_us_per_req", NAN, experiment="sweep",
                                                               server=s, connections=16) for s in PAIR}
        claim(per_call["rpc-tomcat"] > per_call["rpc-netty"], "rpc-tomcat's kernel share is larger per call than "
              "rpc-netty's (shares of the samples times the CPU per call at 16 connections)", us=per_call)
        rest = 100 - parts.loc["rpc-tomcat", ["Spring", "Tomcat", "JSON (Jackson)"]].sum()  # exercise 5
        claim(parts.loc["rpc-tomcat", "kernel"] > rest / 2, "the rest of rpc-tomcat's samples is mostly the kernel",
              kernel=parts.loc["rpc-tomcat", "kernel"], rest=rest)
        frames = [s for s in parts.index if "frame" in s]
        claim(len(frames) > 0 and (parts.loc[frames, "kernel"] > parts.loc["rpc-netty", "kernel"]).all(),
              "on the frame variants the kernel's share is larger than on plain Netty's HTTP",
              kernel=parts.kernel.to_dict())
    return out


def virtual_threads(rpc, check=None) -> dict:
    """The claim the chapter's advice makes of virtual threads against Tomcat's pool, at every point both were
    measured at directly (nothing to glue)."""
    S = rpc.summary()
    tv = S[S.server.isin(["rpc-tomcat", "rpc-tomcat-vt"]) & S.via.fillna("").eq("") & (S.experiment != "warmup")]
    point = ["experiment", "connections", "fraction", "keep_alive_requests", "close_every", "pool"]
    cpu = tv.assign(**{c: tv[c].fillna(0) for c in point}).pivot_table(
        index=point, columns="server", values="cpu_us_per_req").dropna()
    if checks(rpc, check) and {"rpc-tomcat-vt", "rpc-tomcat"} <= set(cpu.columns):
        more = cpu["rpc-tomcat-vt"] > cpu["rpc-tomcat"]
        claim(more.mean() > 0.5, "virtual threads cost more CPU per call than Tomcat's pool of platform threads at "
              "most points", points=len(cpu), more=int(more.sum()))
    return {}


def _consumer_rates(rpc, server, kar):
    """wrk's rate per 10 s window of the consumer's own warm-up in front of `server`, from the last repeat's raw
    output."""
    files = sorted((rpc.path / "raw" / server).glob(f"writeup-wrk-jvm-warmup*-ka{kar}-via-consumer-r0.txt"),
                   key=lambda f: int(re.search(r"warmup(\d+)", f.name).group(1)))
    runs = [drivers.parse_raw("wrk", f.read_text()) for f in files]
    return pd.Series([r.rps if r.ok else NAN for r in runs], index=range(1, len(files) + 1), dtype=float)


def consumer_warmup(rpc, check=None) -> dict:
    """The consumer's own warm-up: how many windows, their rates, and the ratio of the two pairs window by window."""
    cw = pd.DataFrame({"rpc-netty": _consumer_rates(rpc, "rpc-netty", "never"),
                       "rpc-tomcat": _consumer_rates(rpc, "rpc-tomcat", "100")})
    cw["ratio"] = cw["rpc-netty"] / cw["rpc-tomcat"]
    out = {"rpc_cw_n": f"{len(cw)}", "rpc_cw_ratio": span_of(cw.ratio, ".1f"),
           "rpc_cw_last": n(cw.ratio.iloc[-1] if len(cw) else NAN, ".1f"),
           "rpc_cw_rates": span(cw["rpc-tomcat"].min(), cw["rpc-netty"].max(), ",.0f")}
    if len(cw) and checks(rpc, check):
        wu = _writeup(rpc)
        after = _wv(wu, "achieved_rps", "rpc-netty", "rpc-consumer") / _wv(wu, "achieved_rps", "rpc-tomcat",
                                                                           "rpc-consumer")
        # windows of the profile's length: a brief run's are shorter, and its "first minute" other windows
        windows = {"windows": len(cw), "seconds each": rpc.meta.get("profile", {}).get("jvm_window_s")}
        claim(cw.ratio.min() <= WRITEUP_RATIO <= cw.ratio.max(), "the write-up's ratio lies within the ratios of the "
              "consumer's warm-up windows", at=windows, ratios=cw.ratio.round(2).tolist())
        claim(cw.ratio.max() > after, "the ratio shrinks after the consumer's warm-up", at=windows)
        claim(min(cw["rpc-netty"].idxmax(), cw["rpc-tomcat"].idxmax()) >= 7, "each pair through the consumer answered "
              "most in a window after its first minute", at=windows, rates=cw.round(0).to_dict("list"))
    return out


def repeats(rpc) -> dict:
    """How far the repeats agree: the runs flagged noisy and what they cost, the rows far from their point's median,
    the speed loop, and how far the medians move without the noisy runs."""
    df = rpc.df.assign(via=rpc.df.via.fillna(""), loop_ms=rpc.df[["loop_ms_before", "loop_ms_after"]].max(axis=1))
    slow_index = rpc.slow().index
    usual = df.loop_ms.quantile(0.1)  # what Dataset.slow() compares with
    rows = df[df.ok_run & (df.experiment != "warmup") & (df.via == "")].copy()  # the consumer's CPU is "other"
    rows["ratio"] = rows.server_cpu_us_per_req / rows.groupby(KEYS, dropna=False).server_cpu_us_per_req.transform(
        "median")
    rows["slow"] = rows.index.isin(slow_index)
    rows["noisy"] = rows.foreign_cpu_cores > 0.25
    direct = df[df.via == ""]  # through the consumer, the consumer's own CPU is "other" by design
    odd = rows[(rows.ratio > 1.3) | (rows.ratio < 1 / 1.3)]
    noisy_runs = direct[direct.foreign_cpu_cores > 0.25]
    calm_loop = df[df.foreign_cpu_cores <= 0.25].loop_ms
    cost = rows[rows.noisy].ratio  # the noisy rows' CPU per call over their point's median
    out = {"rpc_noisy_said": markdown(
        f"The host took no time back that the harness noticed: none of the {len(direct)} runs made directly on a "
        "provider was flagged noisy, with nothing else running on the machine." if noisy_runs.empty else
        f"The host took time back during this run: {len(noisy_runs)} of the {len(direct)} runs made directly on a "
        "provider were flagged noisy ("
        + listing(f"{k} in repeat {r}" for r, k in noisy_runs.groupby("repeat").size().items())
        + "), with nothing else running on the machine. "
        + (f"Those runs cost {'what the others did' if abs(cost.median() - 1) < 0.1 else 'more than the others'} "
           f"(their median is {cost.median():.2f} times their point's median CPU per call)" if len(cost) else "")
        + (f", but the worst cost up to {cost.max():.1f} times as much: a core the host shares with its other guests "
           "likely does the same work more slowly, its caches not its own." if len(cost) and cost.max() > 1.3 else
           "." if len(cost) else ""))}
    out["rpc_odd_said"] = markdown(
        "No row below cost more than 1.3 times its point's median or less than 1 / 1.3 of it." if odd.empty else
        f"Of the {len(odd)} rows below that cost more than 1.3 times their point's median or less than 1 / 1.3 of "
        f"it, {_count(odd.noisy.sum(), 'was', 'were')} noisy and {_count(odd.slow.sum())} measured in a run the speed "
        "loop marks slow.")
    out["rpc_loop_said"] = markdown(
        f"The speed loop usually took {usual:.1f} ms (its fastest tenth), at most {df.loop_ms.max() / usual:.1f} "
        f"times as long, and it marks {len(slow_index)} of the {len(df)} runs slow (1.3 times its usual or more); in "
        f"the runs that were not noisy it took "
        f"{_from(span(calm_loop.quantile(0.05), calm_loop.quantile(0.95), '.0f'), at='', start='anywhere from ')} ms "
        "(nine runs in ten).")
    out["rpc_noisy_shift_said"] = _noisy_shift(rpc, noisy_runs)
    return out


def _noisy_shift(rpc, noisy_runs):
    """The medians the chapter quotes, with the noisy runs left out: how far does any of them move?"""
    if noisy_runs.empty:
        return markdown("With no noisy run, every median is of calm runs.")
    kept = dataclasses.replace(rpc, df=rpc.df.drop(noisy_runs.index)).summary()
    both = rpc.summary().merge(kept, on=KEYS, suffixes=("", "_kept"))  # a point all of whose runs were noisy drops
    shift = {c: (both[f"{c}_kept"] / both[c] - 1).abs() for c in ("achieved_rps", "cpu_us_per_req")}
    moved = both[shift["achieved_rps"] > 0.1].groupby(["server", "experiment"]).size()
    what = {"warmup": "warm-up windows", "sweep": "sweep", "open": "open loop", "work": "blocking work"}
    return markdown(
        f"Left out, the noisy runs move {'no' if moved.empty else int(moved.sum())} of the {len(both)} points' "
        f"medians by more than 10 % in calls per second (the most by {100 * shift['achieved_rps'].max():.0f} %; in CPU "
        f"per call at most {100 * shift['cpu_us_per_req'].max():.0f} %)"
        + ("." if moved.empty else
           ": " + listing(f"`{s}`'s {what.get(e, e)} ({k} point{'s' if k > 1 else ''})" for (s, e), k in moved.items())
           + " rest on a machine the host was slowing, and their numbers should be read with the spread beside them."))


def kernel_per_call(rpc, check=None) -> dict:
    """The open loop's kernel time per call at the lowest fraction of capacity, and the rate it was measured at."""
    opk = _of(rpc, "open", ok=True).assign(kernel_us=lambda d: 1e6 * d.server_sys_s / d.ok)
    kernel = opk.pivot_table(index="server", columns="fraction", values="kernel_us", aggfunc="median").reindex(PROV)
    rates = opk.pivot_table(index="server", columns="fraction", values="offered_rps", aggfunc="median").reindex(PROV)
    if not len(kernel.columns):
        return {"rpc_sck_lo": NA} | {f"rpc_sck{x}_{key(s)}": NA for s in PROV for x in ("", "_rate")}
    lo, hi = min(kernel.columns), 1.0
    out = {"rpc_sck_lo": f"{lo:.0%}"}
    for s in PROV:
        out |= {f"rpc_sck_{key(s)}": n(kernel.loc[s, lo], ".0f"), f"rpc_sck_rate_{key(s)}": n(rates.loc[s, lo])}
    if checks(rpc, check):
        fractions = {"fractions": [float(f) for f in kernel.columns]}   # decided over the fractions measured
        full = kernel.reindex(columns=[hi])[hi]                         # NaN where capacity was not measured
        claim(bool((kernel[lo] > full).all()), "every provider spent more kernel time per call at half of its "
              "capacity than at its capacity", at=fractions, half=kernel[lo].round(1).to_dict(),
              full=full.round(1).to_dict())
        claim(bool((kernel.loc["rpc-tomcat"] > 1.5 * kernel.loc["rpc-netty"]).all() and
                   (rates.loc["rpc-netty"] > 2 * rates.loc["rpc-tomcat"]).all()),
              "at every fraction of capacity rpc-tomcat spent more than 1.5 times rpc-netty's kernel time per call, "
              "at less than half its rate", at=fractions, tomcat=kernel.loc["rpc-tomcat"].round(1).to_dict(),
              netty=kernel.loc["rpc-netty"].round(1).to_dict())
    return out


def provider(rpc, check=None) -> dict:
    """Every value the chapter glues from rpc-provider, its claims checked."""
    return (measured(rpc) | warmup(rpc, check) | writeup(rpc, check) | keepalive(rpc, check) | sweep(rpc, check)
            | open_loop(rpc, check) | work(rpc, check) | grid(rpc, check) | flame_shares(rpc, check)
            | virtual_threads(rpc, check) | consumer_warmup(rpc, check) | repeats(rpc) | kernel_per_call(rpc, check))


# ---- rpc-loops ----------------------------------------------------------------------------------------------

LOOPS_COLUMNS = {"achieved_rps": ("rate", ",.0f"), "cpu_us_per_req": ("cpu", ".1f"), "p99_ms": ("p99", ".1f"),
                 "threads": ("threads", ",.0f"), "pss_mib": ("pss", ",.0f"), "jvm_heap_live_kib": ("heap", ",.0f"),
                 "jvm_committed_kib": ("committed", ",.0f")}
LOOPS_POINTS = {"closed, 64": "c64", "closed, 256": "c256", "5,000/s, 64": "o5", "20,000/s, 64": "o20"}
DEFAULT, WRITEUP_LOOPS = "default", "3,000"


def _loops_of(d):
    return d.assign(loops=lambda x: x.jvm.map(lambda j: WRITEUP_LOOPS if "eventLoopThreads=3000" in j else DEFAULT))


def loops(lp, check=None) -> dict:
    """The write-up's 3,000 event loops against Netty's default: each point's medians, the ratio of the rates
    repeat by repeat, the memory committed beyond the default's, and the one slow repeat."""
    L = _loops_of(lp.summary())
    L = L.assign(point=[f"closed, {c}" if lo == "closed" else f"{r:,.0f}/s, {c}"
                        for lo, c, r in zip(L["loop"], L.connections, L.rate)]).set_index(["point", "loops"])
    out = {"rpc_lp_repeats": words(int(lp.summary().repeats.min()))}
    for col, (short, spec) in LOOPS_COLUMNS.items():
        scale = 1024 if col.endswith("_kib") else 1
        for loops_, k in ((DEFAULT, "d"), (WRITEUP_LOOPS, "t")):
            for point, pk in LOOPS_POINTS.items():
                out[f"rpc_lp_{short}_{k}_{pk}"] = n(_at(L, (point, loops_), col) / scale, spec)
    names = ("rpc_lp_x_range", "rpc_lp_more_mib", "rpc_lp_slow", "rpc_lp_slow_median")
    closed = _loops_of(lp.df[lp.df.ok_run & (lp.df["loop"] == "closed")])
    per = closed.pivot_table(index=["connections", "repeat"], columns="loops", values="achieved_rps")
    if "closed, 64" not in L.index.get_level_values("point") or not {DEFAULT, WRITEUP_LOOPS} <= set(per.columns):
        return out | dict.fromkeys(names, NA)
    T, D = per[WRITEUP_LOOPS], per[DEFAULT]
    out["rpc_lp_x_range"] = span_of(D / T, ".1f")
    mem = (L.jvm_committed_kib / 1024).unstack("loops")
    out["rpc_lp_more_mib"] = span_of(mem[WRITEUP_LOOPS] - mem[DEFAULT], ",.0f")
    slow = T / T.groupby(level="connections").transform("median")
    out["rpc_lp_slow"] = n(T[slow < 0.75].min() if (slow < 0.75).any() else NAN, ",.0f")
    out["rpc_lp_slow_median"] = n(T.xs(64).median(), ",.0f")
    if checks(lp, check):
        claim((T < 0.6 * D).all(), "in every repeat, at 64 and 256 connections, Netty on 3,000 loops answered less "
              "than 0.6 times the calls it answered on its default loops", ratio=(T / D).round(2).tolist())
        cpu = closed.pivot_table(index=["connections", "repeat"], columns="loops", values="server_cpu_us_per_req")
        claim((cpu[WRITEUP_LOOPS] > 1.5 * cpu[DEFAULT]).all(), "in every closed-loop repeat, 3,000 loops cost more "
              "than 1.5 times the CPU per call", ratio=(cpu[WRITEUP_LOOPS] / cpu[DEFAULT]).round(2).tolist())
        opd = _loops_of(lp.df[lp.df.ok_run & (lp.df["loop"] == "open")])
        p99 = opd.pivot_table(index=["rate", "repeat"], columns="loops", values="p99_ms")
        claim((p99[WRITEUP_LOOPS] > p99[DEFAULT]).all(), "in every open-loop repeat, the 3,000 loops' p99 was higher",
              t=p99[WRITEUP_LOOPS].round(2).tolist(), d=p99[DEFAULT].round(2).tolist())
        claim((mem[WRITEUP_LOOPS] - mem[DEFAULT] > 50).all(), "at every point the JVM on 3,000 loops had committed "
              "more than 50 MiB more", extra=(mem[WRITEUP_LOOPS] - mem[DEFAULT]).round(0).to_dict())
    return out


# ---- rpc-keepalive ------------------------------------------------------------------------------------------

def _turn_pairs(kt):
    """The closed loop's turns: per server, repeat and window, the CPU per call never closing (0) and closing every
    100 calls (100), their difference (extra), and whether either window was flagged noisy."""
    turns = kt.df[kt.df.ok_run & (kt.df.keep_alive_requests == 0) & (kt.df.loop == "closed")]
    pairs = turns.pivot_table(index=["server", "repeat", "window"], columns="close_every",
                              values="server_cpu_us_per_req").reindex(columns=[0, 100]).dropna()
    pairs["extra"] = pairs[100] - pairs[0]
    noisy = turns.pivot_table(index=["server", "repeat", "window"], columns="close_every", values="noisy",
                              aggfunc="any").reindex(columns=[0, 100], fill_value=False).astype(bool)
    clean = pairs[~(noisy[0] | noisy[100]).reindex(pairs.index, fill_value=False)]  # neither window flagged noisy
    return turns, pairs, clean


def turns(kt, check=None) -> dict:
    """Keep-alive measured in turns (the closed loop): each provider's CPU per call never closing, asked to close
    and told to, the extra in the median of its pairs (and of its clean ones), their signs, and how busy the
    machine was meanwhile."""
    turns_, pairs, clean = _turn_pairs(kt)
    told_rows = kt.df[kt.df.ok_run & (kt.df.keep_alive_requests == 100)]
    by = pairs.groupby("server")
    table = pd.DataFrame({"never": by[0].median(), "every": by[100].median(),
                          "told": told_rows.groupby("server").server_cpu_us_per_req.median(),
                          "extra": by.extra.median(), "lo": by.extra.min(), "hi": by.extra.max(),
                          "clean": clean.groupby("server").extra.median(),
                          "clean_n": clean.groupby("server").extra.count()}).reindex(list(PAIR))
    out = {"rpc_kt_s": f"{kt.meta['plan']['measured_s']:g}", "rpc_kt_repeats": f"{kt.df['repeat'].max():.0f}"}
    for s in PAIR:
        row = table.loc[s]
        out |= {f"rpc_kt_never_{key(s)}": n(row.never, ".1f"), f"rpc_kt_every_{key(s)}": n(row.every, ".1f"),
                f"rpc_kt_told_{key(s)}": n(row.told, ".1f"), f"rpc_kt_extra_{key(s)}": n(row.extra, "+.1f"),
                f"rpc_kt_clean_{key(s)}": n(row.clean, "+.1f"), f"rpc_kt_clean_n_{key(s)}": n(row.clean_n),
                f"rpc_kt_range_{key(s)}": _from(span(row.lo, row.hi, "+.1f"), at="each pair "),
                f"rpc_kt_conn_{key(s)}": n(100 * row.clean),  # µs per connection
                f"rpc_kt_told_runs_{key(s)}": listing(
                    f"{r.server_cpu_us_per_req:.1f}" for r in
                    told_rows[told_rows.server == s].sort_values("repeat").itertuples()) or NA}
    out["rpc_kt_sign_said"] = _signs(pairs)
    foreign = turns_.groupby("close_every").foreign_cpu_cores.median().reindex([0, 100])
    busier = "closing windows" if foreign[100] > foreign[0] else "windows that never close"
    out["rpc_kt_foreign_said"] = (NA if foreign.isna().any() else "about as busy in either kind of window"
                                  if abs(foreign[100] - foreign[0]) <= 0.05 else f"busier in the {busier}")
    out["rpc_kt_foreign_never"], out["rpc_kt_foreign_every"] = n(foreign[0], ".2f"), n(foreign[100], ".2f")
    flagged = turns_.groupby("close_every").noisy.agg(["sum", "count"]).reindex([0, 100], fill_value=0)
    out["rpc_kt_noisy"] = (f"{_count(flagged.loc[100, 'sum'])} of the {flagged.loc[100, 'count']} closing windows and "
                           f"{_count(flagged.loc[0, 'sum'])} of the {flagged.loc[0, 'count']} that never close")
    if checks(kt, check):
        claim((table.extra > 0).all(), "measured in turns, closing every 100 calls cost each provider CPU per call in "
              "the median of its pairs", extra=table.extra.to_dict())
    return out


def _signs(pairs):
    """What the pairs' signs say, said as they fall: all up, most up (the rest the host's), or too mixed to tell."""
    up, k = int((pairs.extra > 0).sum()), len(pairs)
    if k == 0:
        return unmeasured("a pair of turns")
    if up == k:
        return markdown(
            f"In {'every one of the ' + str(k) + ' pairs' if k > 1 else 'the one pair'} the closing window cost more "
            "than its neighbour: the cost is the connections', not the host's, for it comes back a few seconds apart "
            "in one process." if k > 1 else
            "In the one pair the closing window cost more than its neighbour: one pair cannot tell the connections' "
            "cost from the host's.")
    if up >= 2 / 3 * k:
        return markdown(
            f"In {up} of the {k} pairs the closing window cost more than its neighbour and in the other {k - up} less: "
            "most of the cost is the connections', for it comes back a few seconds apart in one process, and the host "
            "moved a few windows by more than that.")
    return markdown(
        f"In only {up} of the {k} pairs the closing window cost more than its neighbour: a few seconds apart in one "
        "process, the host moved a window's CPU per call by more than closing did, and these pairs cannot tell the "
        "cost from none.")


LOADS = ("closed loop", "2,000/s", "5,000/s")


def turn_split(kt) -> pd.DataFrame:
    """Where the extra goes: per provider and load (the closed loop, 2,000 and 5,000 calls per second), the median
    extra CPU per call of closing every 100 calls and, in the closed loop, its user, kernel and softirq parts; the
    CPU never closing; the pairs, how many went up, the lowest and highest (the page's table, computed as it is)."""
    t = kt.df[kt.df.ok_run & (kt.df.keep_alive_requests == 0)].copy()
    for col in ("server_user_s", "server_sys_s", "server_softirq_s"):
        t[col.removeprefix("server_").removesuffix("_s")] = 1e6 * t[col] / t.ok  # µs per call
    t["load"] = [("closed loop" if r.loop == "closed" else f"{r.rate:,.0f}/s") for r in t.itertuples()]
    t["on_time"] = (t.loop == "closed") | (t.achieved_rps >= 0.99 * t.offered_rps)
    parts, index = ["server_cpu_us_per_req", "user", "sys", "softirq"], ["server", "load", "repeat", "window"]
    by_pair = t.pivot_table(index=index, columns="close_every", values=parts).reindex(
        columns=pd.MultiIndex.from_product([parts, [0, 100]]))
    extra = pd.DataFrame({p: by_pair[(p, 100)] - by_pair[(p, 0)] for p in parts}).dropna()
    late = t.pivot_table(index=index, columns="close_every", values="on_time", aggfunc="all").reindex(
        columns=[0, 100], fill_value=False)
    extra = extra[late.reindex(extra.index).all(axis=1).astype(bool)]  # both windows answered what was offered
    groups = extra.groupby(["server", "load"], sort=False)
    split = groups.median()
    split.columns = ["extra µs/call", "user", "kernel", "softirq (core)"]
    split.loc[split.index.get_level_values("load") != "closed loop", ["user", "kernel", "softirq (core)"]] = NAN
    split.insert(1, "per connection (µs)", 100 * split["extra µs/call"])
    split.insert(0, "never closing (µs/call)",
                 by_pair[("server_cpu_us_per_req", 0)].groupby(["server", "load"], sort=False).median())
    split["pairs"] = groups.size()
    split["pairs up"] = (extra.server_cpu_us_per_req > 0).groupby(["server", "load"], sort=False).sum()
    split["lowest"] = groups.server_cpu_us_per_req.min()
    split["highest"] = groups.server_cpu_us_per_req.max()
    return split.reindex(pd.MultiIndex.from_tuples([(s, ld) for s in ("rpc-netty", "rpc-tomcat") for ld in LOADS],
                                                   names=["server", "load"]))


def where_extra_goes(kt, check=None) -> dict:
    """The values of turn_split() the prose quotes, the windows left out for answering late, what the closed loop's
    extra is made of, and the closed loop's extra against 5,000 calls per second's."""
    split = turn_split(kt)
    out = {}
    for (s, ld), row in split.iterrows():
        k = f"{key(s)}_{'closed' if ld == 'closed loop' else ld.replace(',', '').removesuffix('/s')}"
        out |= {f"rpc_ks_extra_{k}": n(row["extra µs/call"], "+.1f"),
                f"rpc_ks_conn_{k}": n(row["per connection (µs)"]),
                f"rpc_ks_never_{k}": n(row["never closing (µs/call)"], ".1f"),
                f"rpc_ks_range_{k}": span(row["lowest"], row["highest"], "+.1f"),
                f"rpc_ks_up_{k}": NA if _nan(row["pairs"]) else f"{row['pairs up']:.0f} of {row['pairs']:.0f}"}
        out |= {f"rpc_ks_{part}_{k}": n(row[col], "+.1f")
                for part, col in (("user", "user"), ("sys", "kernel"), ("softirq", "softirq (core)"))}
    out["rpc_ks_missed_said"] = _missed(kt)
    # what the closed loop's extra is made of: user time, kernel time, or both, in each provider
    grew = {part: [s for s in ("rpc-netty", "rpc-tomcat") if split.loc[(s, "closed loop"), col] > 0]
            for part, col in (("user", "user"), ("kernel", "kernel"))}
    out["rpc_ks_grew_said"] = markdown(
        "Neither the provider's own code nor the kernel takes it all: both grow in both." if all(
            len(v) == 2 for v in grew.values()) else sentence(
            f"the {part} time grew in {listing(f'`{s}`' for s in who) if who else 'neither'}"
            for part, who in grew.items()))
    # the closed loop's extra against 5,000/s's: a ratio where both medians are above zero, else which are not
    at5000 = {s: split.loc[(s, "5,000/s"), "extra µs/call"] for s in ("rpc-netty", "rpc-tomcat")}
    closed = {s: split.loc[(s, "closed loop"), "extra µs/call"] for s in ("rpc-netty", "rpc-tomcat")}
    out["rpc_ks_ratio_said"] = markdown(
        "the closed loop's extra against 5,000 calls per second's was " + NA
        if any(_nan(x) for x in (*at5000.values(), *closed.values())) else
        "the closed loop's extra is " + listing(f"{closed[s] / at5000[s]:.1f}" for s in at5000) + " times as large"
        if all(x > 0 for x in at5000.values()) else
        "the closed loop's extra is above zero, where at this rate "
        + (f"the median of `{low[0]}`'s pairs is not" if len(low := [s for s, x in at5000.items() if x <= 0]) == 1
           else "the medians of " + listing(f"`{s}`'s" for s in low) + " pairs are not"))
    if checks(kt, check):
        claim(all(at5000[s] < closed[s] for s in at5000), "at 5,000 calls per second closing costs less per call than "
              "in the closed loop")
        never = split["never closing (µs/call)"]
        claim(closed["rpc-tomcat"] < 0.5 * (never[("rpc-tomcat", "closed loop")] - never[("rpc-netty", "closed loop")]),
              "closing every 100 calls adds to rpc-tomcat less than half of what it spends beyond rpc-netty per call "
              "in the closed loop: keep-alive does not make the gap", extra=closed["rpc-tomcat"], never=never.to_dict())
        for rate in ("5,000", "2,000"):
            claim(all(split.loc[(s, f"{rate}/s"), "lowest"] < 0 < split.loc[(s, f"{rate}/s"), "highest"] for s in PAIR),
                  f"at {rate} calls per second the pairs fall on both sides of zero",
                  split=split.loc[:, ["lowest", "highest"]].to_dict())
    return out


def _missed(kt):
    """The windows that fell short of the rate offered, left out with their pairs: none, one or more."""
    t = kt.df[kt.df.ok_run & (kt.df.keep_alive_requests == 0)]
    missed = t[(t.loop != "closed") & (t.achieved_rps < 0.99 * t.offered_rps)]
    if missed.empty:
        return markdown("Every window answered what it was offered.")
    return markdown(
        ("One window answered less than 99 % of what it was offered and is left out with its pair: " if len(missed) == 1
         else f"{words(len(missed)).capitalize()} windows answered less than 99 % of what they were offered and are "
              "left out with their pairs: ")
        + listing(f"{r.server} at {r.rate:,.0f}/s{' closing' if r.close_every else ''} (repeat {r.repeat}, "
                  f"{r.achieved_rps:,.0f} answered)" for r in missed.itertuples())
        + (" (with 10 connections, 5,000 calls per second leaves each call 2 ms, and a connection opened again must "
           "fit in that too)." if (missed.close_every > 0).any() else "."))


def keepalive_turns(kt, check=None) -> dict:
    """Every value the chapter glues from rpc-keepalive, its claims checked."""
    return turns(kt, check) | where_extra_goes(kt, check)


# ---- rpc-tail -----------------------------------------------------------------------------------------------

STOLEN_MS = 100  # a run that lost this much of its 5 s to steal is one the host disturbed


def _tail_runs(tl):
    runs = tl.df[tl.df.ok_run & (tl.df.loop == "open")].copy()
    runs["steal_ms"] = 1000 * (runs.server_steal_s + runs.client_steal_s)
    return runs


def odd_run(tl):
    """The open-loop run with the highest p99 among those that lost less than STOLEN_MS to steal (a brief run may have
    no calm one, or no run that passed: then its highest); None where there is no open-loop run."""
    runs = _tail_runs(tl)
    calm = runs[runs.steal_ms < STOLEN_MS].sort_values("p99_ms")
    pool = calm if len(calm) else tl.df[tl.df.loop == "open"].sort_values("p99_ms")
    return pool.iloc[-1] if len(pool) else None


def goes(r) -> str:
    """How closely two rankings go together, in words, from their rank correlation."""
    return ("closely" if r >= 0.7 else "clearly" if r >= 0.5 else "weakly" if r >= 0.3 else
            "hardly at all" if r > -0.3 else "the other way" if r == r else "not at all (nothing varied)")


def tail(tl, rpc) -> dict:
    """What stalls a provider at half its capacity: the time stolen, the safepoints, how the p99 ranks with each,
    the odd run and its timeline, and the half-load pairs of rpc-provider set against this capture's."""
    runs = _tail_runs(tl)
    measured_s = tl.meta["plan"]["measured_s"]
    out = {"rpc_tl_s": f"{measured_s:g}"}
    if runs.empty:
        return out | {name: unmeasured("the open loop") for name in (
            "rpc_tl_steal_said", "rpc_tl_pause_said", "rpc_tl_rank_said", "rpc_sum_tail_said", "rpc_tl_odd_said",
            "rpc_tl_odd_slow_said", "rpc_tl_pairs_said", "rpc_tl_rank_half_said")}
    stolen, calm = runs[runs.steal_ms >= STOLEN_MS], runs[runs.steal_ms < STOLEN_MS]
    out["rpc_tl_steal_said"] = markdown(
        f"Across the {len(runs)} open-loop runs the hypervisor took {span_of(1000 * runs.server_steal_s, '.0f')} ms "
        f"from the provider's core and {span_of(1000 * runs.client_steal_s, '.0f')} ms from the generator's, in runs "
        f"of {measured_s:g} s"
        + (f": no run lost {STOLEN_MS} ms or more." if stolen.empty else
           f"; {len(stolen)} of them lost {STOLEN_MS} ms or more, with a p99 of {span_of(stolen.p99_ms, '.1f')} ms, "
           f"the other {len(calm)} less."))
    out["rpc_tl_pause_said"] = _pauses(runs)
    ranks = runs[["p99_ms", "steal_ms", "send_lag_p99_ms", "jvm_safepoint_max_ms"]].rank().corr()["p99_ms"]
    half = runs[runs.fraction == 0.5]
    half_rank = half[["p99_ms", "steal_ms"]].corr(method="spearman").iloc[0, 1] if len(half) > 2 else NAN
    at_half = "" if _nan(half_rank) else f", {half_rank:.2f} over the {len(half)} at half capacity"
    out["rpc_tl_rank_said"] = markdown(
        f"Ranked run by run, the p99 goes {goes(ranks['send_lag_p99_ms'])} with how late the generator sent its calls "
        f"(a rank correlation of {n(ranks['send_lag_p99_ms'], '.2f')}), {goes(ranks['steal_ms'])} with the time "
        f"stolen ({n(ranks['steal_ms'], '.2f')} over all runs{at_half}) and {goes(ranks['jvm_safepoint_max_ms'])} "
        f"with the longest safepoint ({n(ranks['jvm_safepoint_max_ms'], '.2f')}).")
    out["rpc_sum_tail_said"] = markdown(
        f"At a quarter and half of their capacity the providers' p99 was {span_of(runs.p99_ms, '.1f')} ms; run by run "
        f"it went {goes(ranks['send_lag_p99_ms'])} with how late the generator sent its calls, "
        f"{goes(ranks['steal_ms'])} with the time this virtual machine's hypervisor stole from the cores and "
        f"{goes(ranks['jvm_safepoint_max_ms'])} with the JVMs' safepoints (the longest "
        f"{runs.jvm_safepoint_max_ms.max():.1f} ms).")
    odd = odd_run(tl)
    out["rpc_tl_odd_said"] = markdown(
        f"The run with the highest p99 among those that lost less than {STOLEN_MS} ms to steal, `{odd.server}` at "
        f"{100 * odd.fraction:g} % of its capacity (repeat {odd['repeat']}), had no safepoint over "
        f"{odd.jvm_safepoint_max_ms:.1f} ms and {1000 * (odd.server_steal_s + odd.client_steal_s):.0f} ms of steal; "
        f"its generator sent 99 % of its calls within {odd.send_lag_p99_ms:.2f} ms of their time, and its p99 was "
        f"{odd.p99_ms:.1f} ms.")
    out["rpc_tl_odd_slow_said"] = _odd_timeline(tl, odd)
    return out | _half_pairs(half, rpc, tl)


def _pauses(runs):
    """The providers' own safepoints: how many runs had one, and the longest (those of 10 ms or more by name)."""
    long, short = runs[runs.jvm_safepoint_max_ms >= 10], runs[runs.jvm_safepoint_max_ms < 10]
    longest = runs.loc[runs.jvm_safepoint_max_ms.idxmax()]
    return markdown(
        "The providers' own safepoints were short: "
        + ("every run had one or more, " if (runs.jvm_safepoints > 0).all() else
           f"{(runs.jvm_safepoints > 0).sum()} of the runs had one or more, ")
        + (f"and the longest lasted {longest.jvm_safepoint_max_ms:.1f} ms (`{longest.server}` at "
           f"{100 * longest.fraction:g} %)." if long.empty else
           f"and they lasted under {short.jvm_safepoint_max_ms.max():.1f} ms except "
           + listing(f"{r.jvm_safepoint_max_ms:.0f} ms (`{r.server}` at {100 * r.fraction:g} %, p99 {r.p99_ms:.1f})"
                     for r in long.sort_values("jvm_safepoint_max_ms").itertuples()) + "."))


def timeline(tl, run) -> pd.Series:
    """The calls a run answered per second in each interval of the generator's timeline (index: the interval's
    number), from its raw output."""
    raw = (tl.path / run.raw_file).read_text()
    report = json.loads(next(line for line in raw.splitlines() if line.startswith("OPENLOOP "))[len("OPENLOOP "):])
    step = report["timeline_ms"] / 1000
    return (pd.Series(report["timeline"]) / step).rename(step)


def _odd_timeline(tl, odd):
    """How the odd run went, from its timeline: the intervals of the schedule in which it answered less than 90 %
    of the rate offered (the last, after the schedule, holds only the answers still in flight when it ended)."""
    answered = timeline(tl, odd)
    step = answered.name
    scheduled = answered[answered.index * step < tl.meta["plan"]["measured_s"] - 1e-9]
    slow = scheduled[scheduled < 0.9 * odd.offered_rps]
    loops_ = tl.df[["loop_ms_before", "loop_ms_after"]].stack()
    return markdown(
        f"In no 100 ms of its {len(scheduled) * step:g} s did the provider answer less than 90 % of the rate offered: "
        f"its late calls came in no stall long enough to show in these counts, which do not say which calls they were "
        f"or what held them." if slow.empty else
        f"For {len(slow) * step:.1f} s of its {len(scheduled) * step:g} s the provider answered about "
        f"{100 * (1 - slow.mean() / odd.offered_rps):.0f} % fewer calls than it was offered, with nothing stopped for "
        f"long, every connection answering, then caught up. One explanation, which the data cannot confirm for that "
        f"window: at {odd.server_cpu_pct:.0f} % busy, a core that runs a third slower for a moment falls behind, and "
        f"every call that arrives meanwhile queues. A core can be slowed without being taken away: another guest on "
        f"the same physical core, or on the caches and memory it shares, leaves nothing in `/proc/stat`; the harness "
        f"times a fixed loop before and after each run (the deep dive on how far the repeats agree), and through this "
        f"capture it took {loops_.median():.0f} ms in the median, against {loops_.min():.0f} ms at its fastest.")


NO_RANKING = ("a ranking by the p99 at half load likely takes a machine with cores of its own, which this book's runs "
              "do not have.")
# how each pair that came apart in rpc-provider fared in rpc-tail, each said once per second member
FARED = {"same": "{firsts} stayed below {second}", "opposite": "{firsts} came above {second}",
         "overlap": "{second}'s repeats overlapped those of {firsts}"}


def _half_pairs(half, rpc, tl) -> dict:
    """The providers at half load, by their repeats' p99: which pairs came apart in rpc-provider (every repeat of one
    below every repeat of the other) and what this capture says of them: the same order, the opposite one, or
    repeats that overlap; and which came apart here."""
    apart = half_load_apart(rpc)
    p99 = half.groupby("server").p99_ms.agg(["min", "max"])
    here = _apart(p99)
    orders = {(a, b): "same" if (a, b) in here else "opposite" if (b, a) in here else "overlap"
              for a, b in apart if a in p99.index and b in p99.index}
    speed = rpc.loop_ms() / tl.loop_ms()
    # how the two captures' hosts compare: the median of every timing of the speed loop in each
    host = ("on a host as fast (the two captures' speed loops within a fifth of each other in the median)"
            if 0.8 <= speed <= 1.25 else f"on a host whose speed loop ran {speed:.1f} times as fast as in this capture"
            if speed > 1 else f"on a host whose speed loop took {1 / speed:.1f} times as long as in this capture")
    told = listing(pairs_by_second(ps, FARED[k]) for k in FARED if (ps := [p for p, o in orders.items() if o == k]))
    ranges = listing(f"`{s}` {_from(span(p99.loc[s, 'min'], p99.loc[s, 'max'], '.1f'))} ms"
                     for s in sorted({s for p in orders for s in p}))
    out = {"rpc_tl_pairs_said": markdown(
        "No provider's repeats all came below another's." if not apart else
        "Only these came apart, every repeat of one below every repeat of the other: " + pairs_by_second(apart)
        + f". `rpc-tail`, below, measured the providers at half load, {host}, and there {told} ({ranges}).")}
    if half.empty:
        return out | {"rpc_tl_rank_half_said": unmeasured("the providers at half capacity")}
    out["rpc_tl_rank_half_said"] = markdown(
        f"At half capacity the p99 of every provider's repeats fell between {half.p99_ms.min():.1f} and "
        f"{half.p99_ms.max():.1f} ms, "
        + ("and no provider's repeats all came below another's: this capture does not rank them either. "
           if not here else "and only " + pairs_by_second(here) + " came apart, in every repeat. ")
        + ("Neither capture's repeats came apart at half load: " + NO_RANKING if not apart and not here else
           "In `rpc-provider` no provider's repeats came apart at half load: " + NO_RANKING if not apart else
           "The pairs that came apart in `rpc-provider` kept their order here."
           if all(o == "same" for o in orders.values()) else
           f"Of the pairs that came apart in `rpc-provider`, {told} here: " + NO_RANKING))
    return out


# ---- rpc-syscalls -------------------------------------------------------------------------------------------

KINDS = {"epoll_wait": "sc_epoll_wait_per_req", "epoll_ctl": "sc_epoll_ctl_per_req", "read": "sc_read_per_req",
         "write": "sc_write_per_req", "futex": "sc_futex_per_req", "other": "sc_other_per_req",
         "all": "syscalls_per_req"}
TOMCATS = ("rpc-tomcat", "rpc-tomcat-vt")


def syscalls(sc, check=None) -> dict:
    """The system calls per call, by kind: the event loops' and the Tomcat providers' ranges over both rates,
    rpc-tomcat's total against rpc-netty's, the Tomcat providers' calls beyond one read and one write, and how far
    the repeats agree."""
    SC = sc.summary()
    rates_ = sorted(SC.rate.unique())
    P = SC[["server", "rate", *KINDS.values()]].rename(columns={v: k for k, v in KINDS.items()})
    out = {"rpc_sc_rates": " and ".join(f"{r:,.0f}" for r in rates_),
           "rpc_sc_conns": f"{int(SC.connections.iloc[0])}",
           "rpc_sc_warm": f"{max(sc.meta['plan']['jvm_warmup_s'].values()):g}",
           "rpc_sc_repeats": f"{int(SC.repeats.min())}"}
    loops_, tomcat = P[~P.server.isin(TOMCATS)], P[P.server == "rpc-tomcat"]  # the event loops: Netty's, WebFlux's
    for what, frame in (("loops", loops_), ("tomcat", tomcat), ("tomcat_vt", P[P.server == "rpc-tomcat-vt"])):
        for col in KINDS:
            spec = ".2f" if what == "loops" and col in ("epoll_ctl", "futex") else ".1f"
            out[f"rpc_sc_{what}_{col}"] = span_of(frame[col], spec)
    total = P.set_index(["server", "rate"])["all"]
    ratio = {r: total.get(("rpc-tomcat", r), NAN) / total.get(("rpc-netty", r), NAN) for r in rates_}
    out["rpc_sc_x"] = span_of(ratio.values(), ".1f")
    both = P[P.server.isin(TOMCATS)]
    extra = pd.DataFrame({"read": both.read - 2, "write": both.write - 1, "epoll_wait": both.epoll_wait - 1})
    out["rpc_sc_extra"] = span_of(extra[["read", "write"]].stack(), ".2f")
    out["rpc_sc_extra_wait"] = span_of(extra["epoll_wait"], ".2f")
    rows = sc.df[sc.df.ok_run]
    tot = rows.groupby(["server", "rate"]).syscalls_per_req.agg(["min", "max"])
    spread = (tot["max"] - tot["min"]) / tot["min"]
    noisy = rows[rows.noisy].merge(rows.groupby(["server", "rate"]).syscalls_per_req.median().rename("med"),
                                   on=["server", "rate"])
    out["rpc_sc_noisy"] = f"{len(noisy)} of its {len(rows)}"
    out["rpc_sc_spread"] = f"{100 * spread.max():.0f}"
    out["rpc_sc_wide_said"] = _widest(rows, spread)
    if checks(sc, check):
        claim(((P.write >= 0.95) & (P.read >= 0.95)).all(), "every provider read and wrote at least once per call",
              least_read=P.read.min(), least_write=P.write.min())
        claim((loops_.write <= 1.05).all() and (loops_.epoll_ctl < 0.05).all() and (loops_.futex < 0.2).all(),
              "the event loops wrote once per call and made almost no epoll_ctl and futex calls",
              write=loops_.write.max(), epoll_ctl=loops_.epoll_ctl.max(), futex=loops_.futex.max())
        claim((tomcat.epoll_ctl > 1).all() and (tomcat.futex > 3).all() and (tomcat.read > 2).all(),
              "rpc-tomcat made more than one epoll_ctl, three futex and two reads per call",
              epoll_ctl=tomcat.epoll_ctl.min(), futex=tomcat.futex.min(), read=tomcat.read.min())
        claim(min(ratio.values()) > 3, "rpc-tomcat made more than three times rpc-netty's system calls per call at "
              "both rates", ratio=ratio)
        claim((spread < 0.4).all() and spread.median() < 0.05, "each provider's count per call moved by less than "
              "40 % between repeats, most by a few per cent", worst=spread.max(), median=spread.median())
        claim(((extra.read - extra.write).abs() < 0.1).all() and (extra[["read", "write"]] > 0.5).all().all(),
              "in both Tomcat providers the reads beyond two and the writes beyond one per call agree within 0.1, and "
              "are more than half a call", extra=extra.round(2).to_dict("records"))
        claim((extra.epoll_wait >= extra.write - 0.05).all(), "in both Tomcat providers the epoll_waits beyond one per "
              "call are at least the writes beyond one", extra=extra.round(2).to_dict("records"))
        claim(((noisy.syscalls_per_req / noisy.med - 1).abs() < 0.1).all(), "the runs flagged noisy counted within "
              "10 % of their point's median",
              worst=(noisy.syscalls_per_req / noisy.med - 1).abs().max() if len(noisy) else 0)
    return out


def _widest(rows, spread):
    """The widest spread between repeats is one repeat: which, and what its latency says it was (a repeat that
    stalled, its p99 ten times the others', or not)."""
    if spread.empty:
        return unmeasured("any point")
    server, rate = spread.idxmax()
    wide = rows[(rows.server == server) & (rows.rate == rate)].sort_values("syscalls_per_req")
    if len(wide) < 2:
        return markdown("Each point was measured once: there is no spread between repeats to explain.")
    low, rest = wide.iloc[0], wide.iloc[1:]
    name = f"`{server}` at {rate:,.0f} calls per second"
    counts = f"{low.syscalls_per_req:.2f} against {listing(f'{x:.2f}' for x in rest.syscalls_per_req)}"
    if low.p99_ms > 10 * rest.p99_ms.max():
        answered = bool((wide.ok == wide.offered).all())
        return markdown(
            f"The widest, {name}, is one repeat that stalled: its p99 was {low.p99_ms:,.0f} ms against "
            f"{listing(f'{p:,.1f}' for p in rest.p99_ms)} ms, and it still answered "
            f"{'every call' if answered else 'all but ' + n(int((wide.offered - wide.ok).sum())) + ' calls'}, with "
            f"fewer system calls each ({counts}), which is what calls that pile up and are then read several to a "
            "wake-up would give (the count per wake-up was not recorded).")
    return markdown(
        f"The widest, {name}, had its fewest calls per call ({counts}) in a repeat whose p99 was {low.p99_ms:,.1f} ms "
        f"against {listing(f'{p:,.1f}' for p in rest.p99_ms)} ms: no stall set it apart.")


# ---- rpc-kernel-paths: where a call's CPU goes, by kernel path ---------------------------------------

KP_RATES = (2000.0, 5000.0)
# the kernel's groups of paths (kernel_paths.GROUPS) as a sentence names them; a JVM on Linux waits in epoll
KP_SAID = {"TCP and IP": "TCP and IP", "system calls": "system-call entry, exit and the socket layer",
           "epoll, poll, io_uring": "epoll", "scheduler and futex": "the scheduler and futex",
           "memory and other kernel": "memory and the rest of the kernel"}


def kernel_split(kp, busy=None, check=None) -> dict:
    """Where each provider's CPU per call goes at the two fixed rates, by group of kernel paths and user code (the
    side-by-side page's groups, kernel_paths.GROUPS), rpc-tomcat's extra kernel time over rpc-netty's by group, what
    sampling cost at 5,000 calls/s, and how much of the providers' CPU the samples cover at each rate, beside the
    `busy` run (kernel-paths: every server keeping its core busy)."""
    from iobench.book.pages import kernel_paths as kpg

    out = {"rpc_kp_repeats": words(int(kp.summary().repeats.min())) if len(kp.df) else NA,
           "rpc_kp_rates": " and ".join(f"{r:,.0f}" for r in KP_RATES),
           "rpc_kp_window": f"{kp.meta.get('plan', {}).get('measured_s', NAN):g}",
           "rpc_kp_warm": span_of(kp.meta.get("plan", {}).get("jvm_warmup_s", {}).values(), ".0f")}
    by = {r: kpg.by_path(kp, 1, rate=r) for r in KP_RATES}
    for r, m in by.items():
        tag = f"{r / 1000:g}k"
        for s in PROV:
            k = key(s)
            out[f"rpc_kp_total_{k}_{tag}"] = n(_at(m, s, "kernel") + _at(m, s, "user"), ".1f")
            out[f"rpc_kp_kernel_{k}_{tag}"] = n(_at(m, s, "kernel"), ".1f")
            out[f"rpc_kp_user_{k}_{tag}"] = n(_at(m, s, "user"), ".1f")
            out[f"rpc_kp_net_{k}_{tag}"] = n(_at(m, s, "net"), ".1f")
            out[f"rpc_kp_sched_{k}_{tag}"] = n(_at(m, s, "scheduler and futex"), ".1f")
            out[f"rpc_kp_calls_{k}_{tag}"] = n(_at(m, s, "system calls"), ".1f")
    m = by[5000.0]
    out["rpc_kp_extra_said"] = markdown(_extra_kernel(m, kpg))
    both = kpg.pairs(kp, rate=5000.0)
    # a provider whose unsampled runs all used its whole core (CPU per call x calls per second: a core's second)
    full = both.groupby("server").unsampled.min() * 5000.0 / 1e6 >= 0.97
    full = list(full[full].index)
    cost, moved = kpg.overhead(kp, rate=5000.0), kpg.noise(kp, rate=5000.0)
    out["rpc_kp_overhead"] = span_of(cost.drop(index=full, errors="ignore")["median"], "+.0f", " %")
    out["rpc_kp_noise"] = span_of(moved.drop(index=full, errors="ignore"), ".0f", " %")
    out["rpc_kp_full_core_said"] = markdown(_full_core(kp, both, full))
    cover = {r: kpg.coverage(kp, rate=r) for r in KP_RATES}
    for r, c in cover.items():
        tag = f"{r / 1000:g}k"
        out[f"rpc_kp_cover_{tag}"] = span_of(c["server %"], ".0f", " %")
        out[f"rpc_kp_core_{tag}"] = span_of(c["core %"], ".0f", " %")
    busy_agree = NAN
    if busy is not None:
        b = kpg.by_path(busy, 1)
        busy_agree = (b.kernel + b.user) / b.cpu
        out["rpc_kp_cover_busy"] = span_of(100 * busy_agree, ".0f", " %")
    else:
        out["rpc_kp_cover_busy"] = NA
    if checks(kp, check) and set(PAIR) <= set(m.index):
        t, nt = m.loc["rpc-tomcat"], m.loc["rpc-netty"]
        extra = {g: t[g] - nt[g] for g in kpg.KERNEL_GROUPS}
        handoff = extra["scheduler and futex"] + extra["system calls"] + extra["epoll, poll, io_uring"]
        claim(t.kernel > nt.kernel, "rpc-tomcat spent more kernel time per call than rpc-netty at 5,000 calls/s",
              tomcat=t.kernel, netty=nt.kernel)
        claim(handoff > 0.5 * (t.kernel - nt.kernel) and handoff > abs(extra[kpg.NET]), "most of rpc-tomcat's extra "
              "kernel time per call was in the scheduler, futex, system calls and epoll, more than any difference in "
              "TCP and IP", extra=extra)
        claim(t.user > nt.user, "rpc-tomcat spent more time in user code per call than rpc-netty at 5,000 calls/s",
              tomcat=t.user, netty=nt.user)
        if {"rpc-tomcat-vt", "rpc-webflux"} <= set(m.index):
            sched = m["scheduler and futex"]
            claim(sched["rpc-tomcat-vt"] > 2 * max(sched["rpc-webflux"], sched["rpc-netty"]),
                  "rpc-tomcat-vt spent more than twice as much in the scheduler and futex per call as rpc-webflux and "
                  "rpc-netty", sched=sched.to_dict())
        low, high = (cover[r]["server %"].median() for r in KP_RATES)
        claim(low < high < 100, "the samples covered less of the providers' CPU at 2,000 calls/s than at 5,000, and "
              "less than all of it at both", at_2000=low, at_5000=high)
        claim(bool((cover[KP_RATES[0]]["core %"] < 100).any()), "at 2,000 calls/s perf took fewer samples of the core "
              "than its window holds, idle included", lowest=cover[KP_RATES[0]]["core %"].min())
        if busy is not None:
            claim(bool((busy_agree > 0.95).all()), "in kernel-paths, where every server kept its core busy, the "
                  "samples covered more than 95 % of each server's CPU", lowest=busy_agree.min())
    return out


def _full_core(kp, both: pd.DataFrame, full: list[str]) -> str:
    """The providers whose unsampled run at 5,000 calls/s used their whole core: what they did there against the
    sampled run after it, and why their pair cannot measure sampling's cost ("" where none did)."""
    if not full:
        return ""
    rows = kp.df[kp.df.ok_run & (kp.df.rate == 5000.0) & kp.df.server.isin(full)]
    p99 = rows.groupby(["server", "profiled"]).p99_ms.median()
    said = [f"`{s}`'s unsampled runs used all of its core ({n(both[both.server == s].unsampled.median(), '.0f')} µs "
            f"per call at 5,000 calls per second is a whole second of the core each second), with a p99 of "
            f"{n(p99.get((s, False), NAN), '.1f')} ms, and the sampled run after each took "
            f"{span_of(-both[both.server == s].change, '.0f', ' %')} less CPU per call, with a p99 of "
            f"{n(p99.get((s, True), NAN), '.1f')} ms" for s in full]
    return (sentence(said) + " The first point after a closed-loop warm-up, that JVM was busy with more than the "
            "calls, and the run does not show with what; so its pair says nothing of what sampling costs and is "
            "left out below.")


def _extra_kernel(m: pd.DataFrame, kpg) -> str:
    """rpc-tomcat's kernel time per call against rpc-netty's, and its extra by group, largest first."""
    if not set(PAIR) <= set(m.index):
        return f"This capture did not sample both `{PAIR[0]}` and `{PAIR[1]}`"
    t, nt = m.loc["rpc-tomcat"], m.loc["rpc-netty"]
    head = (f"`rpc-tomcat` spent {n(t.kernel, '.1f')} µs of kernel time per call and `rpc-netty` "
            f"{n(nt.kernel, '.1f')}")
    diff = t.kernel - nt.kernel
    if diff <= 0:
        return head
    parts = sorted(((t[g] - nt[g], g) for g in kpg.KERNEL_GROUPS), reverse=True)
    said = [f"{n(d, '.1f')} in {KP_SAID[g]}" for d, g in parts if round(d, 1) >= 0.1]
    less = [KP_SAID[g] for d, g in parts if round(d, 1) <= -0.1]
    tail = f", and less in {listing(less)}" if less else ""
    return f"{head}: of the {n(diff, '.1f')} µs more, {listing(said)}{tail}"
