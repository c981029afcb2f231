"""The analysis behind book/java/results.md: every Java server beside nginx (the `java-servers` dataset) under
20 ms of blocking work, on hello-world at 40 and 1000 connections, pipelined; and, for exercise 1 and a claim on
memory, the captured idle-connection study (`idle-connections`).

Every function returns {glue name: value}; numbers the page formats itself ({glue:text}`name:.1f`) are floats or
ints, NaN for a point the dataset lacks; the claims the page's sentences make are checked here, where their numbers
are present.
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.phrases import NA, listing, span, span_of
from iobench.data.report import value_in

ONE_AT_A_TIME = {"java-blocking", "java-nio", "java-nio-multi"}  # work on one request at a time (one core)
JAVA3 = ["java-thread", "java-vthread", "java-netty"]  # exercise 1's servers
NAN = float("nan")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _single(ds) -> pd.DataFrame:
    """The summary's points with one request per round trip."""
    s = ds.summary()
    return s[s.pipeline == 1]


def _work(ds) -> pd.DataFrame:
    """20 ms of work at 40 connections, with each server's Little's-law bound and the share of it reached (the
    page's first table)."""
    s = _single(ds)
    work = s[(s.work_ms == 20) & (s.connections == 40)].copy()
    work["bound"] = [50.0 if sid in ONE_AT_A_TIME else 40 / 0.020 for sid in work.server]
    work["of_bound_pct"] = 100 * work.rps / work.bound
    return work


def pipelined_count(ds) -> dict:
    """j_pipe_n, j_pipe_bound_n: the servers loaded pipelined on hello-world, and against how many of them the
    generator filled its core (as text)."""
    s = ds.summary()
    pb = s[(s.pipeline > 1) & (s.work_ms == 0)]
    return {"j_pipe_n": f"{len(pb)}", "j_pipe_bound_n": f"{int(pb.generator_bound.sum())}"}


def littles_law(ds) -> dict:
    """Under 20 ms of work: the share of its bound each kind of model reached (the concurrent ones' lowest with
    its server, and their range, j_littles_span; the one-at-a-time ones' range, j_one_span), and the load's
    connections, work and bounds (for the summary)."""
    work = _work(ds)
    conc, one = work[~work.server.isin(ONE_AT_A_TIME)], work[work.server.isin(ONE_AT_A_TIME)]

    def first(f, col):
        return f[col].iloc[0] if len(f) else NAN
    return {"j_littles_min_pct": float(conc.of_bound_pct.min()),
            "j_littles_min_server": conc.sort_values("of_bound_pct").server.iloc[0] if len(conc) else NA,
            "j_littles_max_pct": float(conc.of_bound_pct.max()),
            "j_littles_span": span_of(conc.of_bound_pct, ".1f"),
            "j_one_span": span_of(one.of_bound_pct, ".1f"),
            "j_work_conns": int(first(work, "connections")) if len(work) else NA,
            "j_work_ms": float(first(work, "work_ms")),
            "j_conc_bound": float(first(conc, "bound")),
            "j_one_bound": float(first(one, "bound"))}


def _reactor_rounds(answered: float) -> int:
    """How many rounds a reactor that accepts one connection per round and then answers the k - 1 accepted before
    it gets through with `answered` requests (after K rounds: K(K-1)/2 requests)."""
    return max(k for k in range(1, 10_000) if k * (k - 1) / 2 <= answered)


def java_nio(ds) -> dict:
    """java-nio under 20 ms of work: connections answered and the first one's requests (the kernel's count), the
    requests answered in a run, the connections the one-accept-per-round arithmetic predicts, wrk's timeouts per
    run (j_nio_errors) and the run's length; claim: wrk reported fewer errors than the connections never answered."""
    work = _work(ds)
    nio = work[work.server == "java-nio"]
    seconds = float(ds.meta["profile"]["duration_s"])
    if not len(nio):
        return {"j_nio_served": NA, "j_nio_max": NA, "j_nio_answered": NAN, "j_nio_predicted": NA,
                "j_nio_errors": NA, "j_seconds": seconds}
    nio = nio.iloc[0]
    answered = nio.rps * seconds
    df = ds.df
    runs = df[(df.server == "java-nio") & df.ok & (df.work_ms == nio.work_ms) & (df.connections == nio.connections)
              & (df.tool == nio.tool) & (df["mode"] == nio["mode"]) & (df.pipeline == nio.pipeline)]
    claim(bool((runs.errors < 40 - nio.conns_served).all()), "wrk reported fewer errors than the connections "
          "java-nio never answered", errors=runs.errors.max(), unanswered=40 - nio.conns_served)
    return {"j_nio_served": int(nio.conns_served), "j_nio_max": int(nio.conn_max_requests),
            "j_nio_answered": float(answered), "j_nio_predicted": _reactor_rounds(answered) - 1,
            "j_nio_errors": span_of(runs.errors, ".0f"), "j_seconds": seconds}


def _hello(ds) -> pd.DataFrame:
    """Hello-world at 40 connections, with CPU per request against nginx's (the page's second table)."""
    s = _single(ds)
    hello = s[(s.work_ms == 0) & (s.connections == 40)].copy()
    nginx_cpu = value_in(hello, "cpu_us_per_req", NAN, server="nginx")
    hello["cpu_vs_nginx"] = hello.cpu_us_per_req / nginx_cpu
    return hello


def _connections(n: int) -> str:
    return f"{n:,} connection{'' if n == 1 else 's'}"


def hello_world(ds) -> dict:
    """Hello-world at 40 connections: the Java server with the lowest median CPU per request (its CPU, against
    nginx's, its repeats, whose repeats overlapped its) and the one with the highest (and the connections it
    answered), how many servers were generator-bound; claim: the costliest answered only some connections."""
    hello = _hello(ds)
    java = hello[hello.server != "nginx"].sort_values("cpu_us_per_req")
    out = {"j_nginx_cpu": value_in(hello, "cpu_us_per_req", NAN, server="nginx"),
           "j_bound": int(hello.generator_bound.sum()), "j_hello_n": len(hello)}
    if not len(java):
        return out | dict.fromkeys(["j_best", "j_best_overlap", "j_worst", "j_worst_served_conns"], NA) | {
            "j_best_cpu": NAN, "j_best_cpu_ratio": NAN, "j_best_repeats": NA, "j_worst_cpu": NAN,
            "j_worst_served": NA}
    best, worst = java.iloc[0], java.iloc[-1]
    overlap = hello[(hello.server != best.server) & (hello.cpu_us_per_req_min <= best.cpu_us_per_req_max)].server
    claim(worst.conns_served < 40, "the server with the highest CPU per request answered only some of the 40 "
          "connections", server=worst.server, served=worst.conns_served)
    return out | {
        "j_best": best.server, "j_best_cpu": float(best.cpu_us_per_req), "j_best_cpu_ratio": float(best.cpu_vs_nginx),
        "j_best_repeats": int(best.repeats),
        "j_best_overlap": (f"its repeats overlapped those of {listing(overlap)}, so the data do not separate them"
                           if len(overlap) else "its repeats lay below every other server's"),
        "j_worst": worst.server, "j_worst_cpu": float(worst.cpu_us_per_req),
        "j_worst_served": int(worst.conns_served), "j_worst_served_conns": _connections(int(worst.conns_served))}


def _pss_repeats(pss_mib: pd.Series) -> str:
    """java-vthread's PSS over its repeats at 1000 connections, as a clause: "its 3 repeats ranged from 202 to
    312 MiB", "its 3 repeats all measured 250 MiB", "its one repeat measured 250 MiB"."""
    n, said = len(pss_mib), span_of(pss_mib, ",.0f", " MiB")
    if n == 0:
        return "its PSS was not measured"
    if n == 1:
        return f"its one repeat measured {said}"
    return f"its {n} repeats {'ranged from' if ' to ' in said else 'all measured'} {said}"


def thousand_connections(ds, idle) -> dict:
    """Hello-world at 1000 connections: threads and PSS of java-thread and java-vthread, the servers that left
    connections unanswered (j_starved_list), java-threadpool's and java-blocking's counts; claim: busy,
    java-vthread's PSS was above java-thread's, the reverse of what an idle connection costs each (from `idle`)."""
    s = _single(ds)
    many = s[(s.work_ms == 0) & (s.connections == 1000)]

    def mval(server, col):
        return value_in(many, col, NAN, server=server)
    starved = many[many.unserved].sort_values("conns_served")
    df = ds.df
    vt = df[(df.server == "java-vthread") & df.ok & (df.work_ms == 0) & (df.connections == 1000)
            & (df.pipeline == 1)].pss_kib / 1024
    slopes = _idle_slopes(idle)
    busy = (mval("java-vthread", "pss_mib"), mval("java-thread", "pss_mib"))
    if all(_finite(x) for x in busy) and {"java-thread", "java-vthread"} <= set(slopes.index):
        claim(busy[0] > busy[1] and slopes.loc["java-thread", "slope_min"] > slopes.loc["java-vthread", "slope_max"],
              "busy, java-vthread's PSS was above java-thread's, the reverse of what an idle connection costs each",
              vthread_pss=busy[0], thread_pss=busy[1], thread_idle=slopes.loc["java-thread", "slope"],
              vthread_idle=slopes.loc["java-vthread", "slope"])
    return {"j_thread_threads": mval("java-thread", "threads"), "j_vthread_threads": mval("java-vthread", "threads"),
            "j_thread_rss": busy[1], "j_vthread_rss": busy[0],
            "j_pool_served": mval("java-threadpool", "conns_served"),
            "j_blocking_served": mval("java-blocking", "conns_served"),
            "j_starved_list": ", ".join(f"{r.server} {r.conns_served:,.0f}" for r in starved.itertuples()) or "none",
            "j_pool_p99": mval("java-threadpool", "p99_ms"), "j_pool_errors": mval("java-threadpool", "errors"),
            "j_blocking_rps": mval("java-blocking", "rps"), "j_vthread_pss_repeats": _pss_repeats(vt)}


def pipelined(ds) -> dict:
    """16 requests per write against one per round trip (hello-world, 40 connections): the least gain in requests
    per second and whose, and against how many servers wrk was still the bottleneck."""
    s = ds.summary()
    single = _single(ds)
    pp = s[(s.pipeline > 1) & (s.work_ms == 0)].merge(
        single[(single.work_ms == 0) & (single.connections == 40)][["server", "rps"]], on="server",
        suffixes=("", "_single"))
    pp["vs_single"] = pp.rps / pp.rps_single
    return {"jp_min_ratio": float(pp.vs_single.min()),
            "jp_min_server": pp.sort_values("vs_single").server.iloc[0] if len(pp) else NA,
            "jp_bound": int(pp.generator_bound.sum()), "jp_n": len(pp)}


def _idle_slopes(idle) -> pd.DataFrame:
    """The idle study's marginal cost per connection (KiB) between its two highest levels, by server."""
    m = idle.marginal()
    return m[m["to"] == m["to"].max()].set_index("server")


def _kib(x) -> str:
    return f"{x:,.1f}" if _finite(x) else NA


def _per_connection(ds, idle) -> tuple[pd.DataFrame, int, int]:
    """Exercise 1's table: KiB per connection of JAVA3, busy (40 -> 1000) and idle (median, min, max at the idle
    study's lowest and highest levels, the marginal cost between them, the growth that came once, MiB); and the
    two levels."""
    s = _single(ds)
    hw = s[s.work_ms == 0].pivot(index="server", columns="connections", values="pss_mib")
    busy = (((hw[1000] - hw[40]) * 1024 / (1000 - 40)) if {40, 1000} <= set(hw.columns)
            else pd.Series(NAN, index=hw.index))
    S = idle.summary()
    S = S[S.server.isin(JAVA3) & (S.idle_conns > 0)].set_index(["server", "idle_conns"])
    if not len(S):  # the idle study did not hold these servers' connections
        nan = pd.Series(NAN, index=JAVA3)
        return pd.DataFrame({"busy": busy.reindex(JAVA3), "marginal": nan, "fixed": nan}), 0, 0
    lo, hi = int(S.index.get_level_values(1).min()), int(S.index.get_level_values(1).max())

    def at(n, col="pss_per_idle_kib"):
        return S.xs(n, level="idle_conns")[col].reindex(JAVA3)
    marginal = (at(hi) * hi - at(lo) * lo) / (hi - lo) if hi > lo else pd.Series(NAN, index=JAVA3)
    return pd.DataFrame({
        "busy": busy.reindex(JAVA3), "lo": at(lo), "lo_min": at(lo, "pss_per_idle_kib_min"),
        "lo_max": at(lo, "pss_per_idle_kib_max"), "hi": at(hi), "hi_min": at(hi, "pss_per_idle_kib_min"),
        "hi_max": at(hi, "pss_per_idle_kib_max"), "marginal": marginal, "fixed": (at(lo) - marginal) * lo / 1024,
    }), lo, hi


def _repeats(r, level: str) -> str:
    """A server's KiB per idle connection at one level: its median, then the range of its repeats."""
    return f"{_kib(r[level])} ({span(r[level + '_min'], r[level + '_max'], ',.1f')})"


def exercise_1(ds, idle) -> dict:
    """Exercise 1: memory per connection of java-thread, java-vthread and java-netty, from this page's busy runs
    and from the idle study (at its two levels, the marginal cost between them, the growth that came once), how far
    apart a server's repeats lay, and how far off the busy figure was; claims: the busy figure was many times the
    marginal one for java-vthread and near it for java-netty; a platform thread cost the most."""
    per, lo, hi = _per_connection(ds, idle)
    out = {"jx_lo": f"{lo:,}" if lo else NA, "jx_hi": f"{hi:,}" if hi else NA}
    for sid in JAVA3:
        k, r = sid.replace("-", "_"), per.loc[sid]
        out |= {f"jx_busy_{k}": _kib(r["busy"]), f"jx_lo_{k}": _repeats(r, "lo") if lo else NA,
                f"jx_hi_{k}": _repeats(r, "hi") if hi else NA, f"jx_marg_{k}": _kib(r["marginal"]),
                f"jx_fixed_{k}": f"{r['fixed']:,.0f}" if _finite(r["fixed"]) else NA}
    spread = {n: per[f"{n}_max"] - per[f"{n}_min"] for n in ("lo", "hi")} if lo else {}
    out |= {"jx_spread_lo": _kib(spread["lo"].max()) if lo else NA,
            "jx_spread_lo_server": spread["lo"].idxmax() if lo and spread["lo"].notna().any() else NA,
            "jx_spread_hi": _kib(spread["hi"].max()) if lo else NA}
    ratio = per.marginal["java-thread"] / per.marginal["java-vthread"]
    out["jx_thread_vs_vthread"] = f"{ratio:.1f}" if _finite(ratio) else NA
    over = per.busy / per.marginal
    for sid in ("java-vthread", "java-netty"):
        out[f"jx_busy_over_marg_{sid.replace('-', '_')}"] = f"{over[sid]:.1f}" if _finite(over[sid]) else NA
    if over.notna().all():
        claim(over["java-vthread"] > 5 and 0.5 < over["java-netty"] < 2,
              "the busy figure was many times the marginal one for java-vthread, near it for java-netty",
              vthread=over["java-vthread"], netty=over["java-netty"])
    slopes = _idle_slopes(idle)
    if hi and set(JAVA3) <= set(slopes.index):
        t = slopes.loc["java-thread"]
        claim(t.slope_min > 2 * slopes.loc["java-vthread", "slope_max"]
              and t.slope_min > slopes.loc["java-netty", "slope_max"],
              "from 1,000 to 10,000 idle connections, a platform thread cost the most, over twice a virtual thread "
              "in every repeat", thread_min=t.slope_min, vthread_max=slopes.loc["java-vthread", "slope_max"],
              netty_max=slopes.loc["java-netty", "slope_max"])
    return out


def exercise_4(ds) -> dict:
    """Exercise 4: how many times less CPU per request each server spent pipelined (hello-world, 40 connections):
    the Java servers' least and greatest gain and whose, and nginx's."""
    s = ds.summary()
    single = _single(ds)
    one = single[(single.work_ms == 0) & (single.connections == 40)].set_index("server").cpu_us_per_req
    piped = s[(s.pipeline > 1) & (s.work_ms == 0)].set_index("server").cpu_us_per_req
    gain = (one / piped).dropna().sort_values()
    java = gain.drop("nginx", errors="ignore")
    return {"jx4_min": float(java.min()), "jx4_min_server": java.idxmin() if len(java) else NA,
            "jx4_max": float(java.max()), "jx4_max_server": java.idxmax() if len(java) else NA,
            "jx4_nginx": float(gain.get("nginx", NAN))}


def parts(ds, idle) -> list[dict]:
    """Every part the page glues, in its order (the figures' captions and the live exercise aside)."""
    return [pipelined_count(ds), littles_law(ds), java_nio(ds), hello_world(ds), thousand_connections(ds, idle),
            pipelined(ds), exercise_1(ds, idle), exercise_4(ds)]


def values(ds, idle) -> dict:
    """Every value the page glues, merged."""
    return {name: value for part in parts(ds, idle) for name, value in part.items()}
