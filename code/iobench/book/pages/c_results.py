"""The analysis behind book/c/results.md: every C server beside nginx with one worker (the `c-servers` dataset),
under 20 ms of blocking work at 40 connections, on hello-world with keep-alive from 1 to 1000 connections, and
pipelined; and, for exercise 4, the captured idle-connection study (`idle-connections`).

Every function returns {glue name: value}; numbers the page formats itself ({glue:text}`name:.1f`) are floats or
ints, NaN for a point the dataset lacks (a smoke capture has no 1000-connection point); sentences are text, or
phrases.markdown where they hold code type. The claims the page's sentences make are checked here, where their
numbers are present, on every capture but a smoke one (pages.checks).
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.pages import checks, key
from iobench.book.phrases import NA, flagged, listing, markdown, tally, words
from iobench.data.report import value_in

NAN = float("nan")
SEQUENTIAL = "c-sequential"
# servers that use more than one core's worth of threads or processes: not "single-threaded" for the nginx match
MANY_TASKS = {"nginx", "c-epoll-reuseport", "c-fork", "c-prefork", "c-thread", "c-threadpool"}
POOL_WORKERS = 64  # c-prefork's processes, c-threadpool's threads
LOOPS = ("c-select", "c-poll", "c-epoll", "c-epoll-et", "nginx")  # exercise 1's loops that grew alike
IDLE_ORDER = ("c-fork", "c-thread", "c-epoll")  # exercise 4's servers, most PSS per connection first


def _finite(*xs) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def _single(ds) -> pd.DataFrame:
    """The summary's points with one request per round trip."""
    s = ds.summary()
    return s[s.pipeline == 1]


def _keepalive(ds) -> pd.DataFrame:
    """Hello-world (no work) with wrk and keep-alive, one request per round trip: every connection count."""
    s = _single(ds)
    return s[(s.work_ms == 0) & (s.tool == "wrk") & (s["mode"] == "keepalive")]


def _medians_of(n: int) -> str:
    """What a value is the median of, as a parenthesis says it: "medians of 3 repeats", "one repeat each"."""
    return "one repeat each" if n <= 1 else f"medians of {n} repeats"


def work(ds) -> pd.DataFrame:
    """20 ms of work at 40 connections, with each server's Little's-law bound and the share of it reached (the
    page's first table)."""
    s = _single(ds)
    w = s[(s.work_ms == 20) & (s.connections == 40)].copy()
    w["bound"] = [50.0 if sid == SEQUENTIAL else 40 / 0.020 for sid in w.server]
    w["of_bound_pct"] = 100 * w.rps / w.bound
    return w


def littles_law(ds, check: bool | None = None) -> dict:
    """Under 20 ms of work: the lowest share of its bound a concurrent model reached and whose, the sequential
    server's share of its own, the median latency, and the load (connections, work, the concurrent bound) the
    summary quotes; claim: the point's connections fit within every pool's workers."""
    w = work(ds)
    conc = w[w.server != SEQUENTIAL].sort_values("of_bound_pct")
    out = {"littles_min_pct": float(conc.of_bound_pct.min()) if len(conc) else NAN,
           "littles_min_server": conc.server.iloc[0] if len(conc) else NA,
           "littles_seq_pct": value_in(w, "of_bound_pct", NAN, server=SEQUENTIAL),
           "work_p50_median": float(w.p50_ms.median()),
           "work_conns": int(w.connections.iloc[0]) if len(w) else NA,
           "work_ms": float(w.work_ms.iloc[0]) if len(w) else NAN,
           "work_bound": float(conc.bound.iloc[0]) if len(conc) else NAN}
    if checks(ds, check) and len(w):
        claim(out["work_conns"] <= POOL_WORKERS, "the 20 ms point's connections fit within every pool's 64 workers",
              connections=out["work_conns"])
    return out


def _outlier(r) -> str:
    """One flagged repeat, as the outliers sentence names it."""
    return (f"{r.server} at {r.connections} connections" + (f", {r.work_ms:g} ms of work" if r.work_ms else "")
            + (f", {r.pipeline} pipelined" if r.pipeline > 1 else "") + f" (repeat {r.repeat}: {r.rps:,.0f} req/s)")


def outliers(ds) -> dict:
    """c_outliers_said: the sentence naming the repeats flagged more than 20 % from their point's median (none,
    one, many)."""
    items = [_outlier(r) for r in ds.df[ds.df.outlier].itertuples()]
    return {"c_outliers_said": flagged(items, "repeat of this run", plural="repeats of this run")}


def hello(ds) -> pd.DataFrame:
    """Hello-world at 40 keep-alive connections, with requests per second and CPU per request against nginx's (the
    page's second table); NaN ratios where nginx was not measured."""
    h = _keepalive(ds)
    h = h[h.connections == 40].copy()
    h["rps_vs_nginx"] = h.rps / value_in(h, "rps", NAN, server="nginx")
    h["cpu_vs_nginx"] = h.cpu_us_per_req / value_in(h, "cpu_us_per_req", NAN, server="nginx")
    return h


def _tied(others: pd.DataFrame, best, n: int) -> str:
    """The parenthesis after the best single-threaded server's CPU: whose repeats reached down to its median."""
    tied = others[(others.server != best.server) & (others.cpu_us_per_req_min <= best.cpu_us_per_req)].server
    if len(tied):
        whose = listing(sid + "'s" for sid in tied)
        return f"within the range of {whose} repeats"
    return ("below every other single-threaded server's range" if n > 1
            else "below every other single-threaded server")


def _vs_nginx(best, nginx, n: int) -> str:
    """The best single-threaded server's CPU per request against nginx's: the ratio of the medians, and whether
    every repeat lay below nginx's (as many repeats as both had)."""
    ratio = best.cpu_us_per_req / nginx.cpu_us_per_req
    if not _finite(ratio):
        return "n/a times nginx's"
    said = f"{ratio:.2f} times nginx's"
    if n > 1 and best.cpu_us_per_req_max < nginx.cpu_us_per_req_min:
        return f"{said}, and below nginx in every repeat"
    if n > 1 and ratio < 1:
        return f"{said}, though their repeats overlapped"
    return said


def hello_world(ds, check: bool | None = None) -> dict:
    """Hello-world at 40 connections: against how many servers wrk filled its core (hello_bound_said) and nginx's
    rate and wrk's share of its core there; the single-threaded server with the lowest median CPU per request, its
    repeats, who overlapped it, and it against nginx; c-uring's and c-epoll's CPU per request. Claim: that server
    spent less CPU per request than nginx in every repeat."""
    h = hello(ds)

    def at(sid: str, col: str = "cpu_us_per_req") -> float:
        return value_in(h, col, NAN, server=sid)

    out = {"hello_bound_said": tally(int(h.generator_bound.sum()), len(h), "server", verbs=None),
           "hello_conns": int(h.connections.iloc[0]) if len(h) else NA,
           "nginx_rps": at("nginx", "rps"), "nginx_client_pct": at("nginx", "client_cpu_pct"),
           "uring_cpu": at("c-uring"), "epoll_cpu": at("c-epoll"), "uring_vs_epoll": at("c-uring") / at("c-epoll")}
    single = h[~h.server.isin(MANY_TASKS)].sort_values("cpu_us_per_req")
    nginx = h[h.server == "nginx"]
    if not len(single) or not len(nginx):
        return out | {"best_server": NA, "best_cpu": NAN, "best_cpu_ratio": NAN, "best_repeats_said": NA,
                      "best_tied": NA, "best_vs_nginx": NA}
    best, nginx = single.iloc[0], nginx.iloc[0]
    n = int(min(best.repeats, nginx.repeats))
    if checks(ds, check):
        claim(bool(best.cpu_us_per_req_max < nginx.cpu_us_per_req_min),
              "the lowest median single-threaded server spent less CPU per request than nginx in every repeat",
              best_max=best.cpu_us_per_req_max, nginx_min=nginx.cpu_us_per_req_min)
    return out | {"best_server": best.server, "best_cpu": float(best.cpu_us_per_req),
                  "best_cpu_ratio": float(best.cpu_vs_nginx),
                  "best_repeats_said": (f"over {int(best.repeats)} repeats" if best.repeats > 1
                                        else "in its one repeat"),
                  "best_tied": _tied(single, best, int(best.repeats)), "best_vs_nginx": _vs_nginx(best, nginx, n)}


def many(ds) -> pd.DataFrame:
    """Hello-world at the most keep-alive connections the run measured (1000; 40 in a smoke capture)."""
    k = _keepalive(ds)
    return k[k.connections == k.connections.max()]


def _starved_said(starved: pd.DataFrame, n: int, conns: int) -> str:
    """The first sentence on who was served: how many servers left connections without an answer, and how many of
    the connections each served; or that every server answered every connection."""
    at = f"At {conns:,} keep-alive connections"
    k = len(starved)
    if k == 0:
        return f"{at}, {'the one server' if n == 1 else 'every server'} answered every connection."
    each = "it" if k == 1 else "each"
    return (f"{at}, {words(k)} server{'' if k == 1 else 's'} left connections without a single answer; the number "
            f"of the {conns:,} {each} served: {_starved_list(starved)}.")


def _starved_list(starved: pd.DataFrame) -> str:
    return listing(f"{r.server} {r.conns_served:,.0f}" for r in starved.itertuples()) or "none"


def _others_said(k: int, n: int) -> str:
    """The last sentence on who was served: the servers that answered every connection."""
    rest = n - k
    if k == 0:
        return f"{'The one' if n == 1 else 'Every'} server's numbers at this point describe all of its connections."
    if rest == 0:
        return "No server answered every connection."
    return f"The other {'server' if rest == 1 else words(rest) + ' servers'} answered every connection."


def served(ds, check: bool | None = None) -> dict:
    """At the most connections: who left connections without an answer (c_starved_said, and c_starved_list for
    the summary), who answered every one (c_all_served_said), and the level (c_most_conns). Claim: exactly the
    servers that hold one connection or one per worker left some unanswered."""
    m = many(ds)
    starved = m[m.unserved].sort_values("conns_served")
    conns = int(m.connections.max()) if len(m) else 0
    if checks(ds, check) and len(m) and conns > POOL_WORKERS:  # a claim about more connections than workers
        claim(set(starved.server) == {SEQUENTIAL, "c-prefork", "c-threadpool"},
              "the sequential server, the process pool and the thread pool left connections unanswered, and only "
              "they", starved=list(starved.server))
        claim(bool((starved[starved.server != SEQUENTIAL].conns_served == POOL_WORKERS).all()),
              "each pool answered as many connections as it has workers", served=starved.conns_served.tolist())
    if not len(m):
        return {"c_starved_said": "This run measured no hello-world point with keep-alive.",
                "c_all_served_said": "So this run cannot say who was served.", "c_starved_list": "none",
                "c_most_conns": NAN}
    return {"c_starved_said": _starved_said(starved, len(m), conns),
            "c_all_served_said": _others_said(len(starved), len(m)),
            "c_starved_list": _starved_list(starved), "c_most_conns": conns}


def memory(ds, check: bool | None = None) -> dict:
    """c-fork at its most connections on hello-world: the connections, its RSS and its PSS summed over its
    processes (MiB). Claim: RSS overstated its memory many (over five) times."""
    s = _single(ds)
    fork = s[(s.server == "c-fork") & (s.work_ms == 0)].sort_values("connections")
    if not len(fork):
        return {"fork_conns": NAN, "fork_rss": NAN, "fork_pss": NAN}
    fork = fork.iloc[-1]
    if checks(ds, check) and _finite(fork.rss_mib, fork.pss_mib):
        claim(bool(fork.rss_mib > 5 * fork.pss_mib), "c-fork's RSS overstated its memory many times over",
              rss=fork.rss_mib, pss=fork.pss_mib)
    return {"fork_conns": int(fork.connections), "fork_rss": float(fork.rss_mib), "fork_pss": float(fork.pss_mib)}


def pipelined_table(ds) -> pd.DataFrame:
    """Every pipelined hello-world point beside the same server's rate with one request per round trip at 40
    connections (vs_single: how many times as fast) (the page's pipelined table)."""
    s = ds.summary()
    h = hello(ds)[["server", "rps"]]
    pp = s[(s.pipeline > 1) & (s.work_ms == 0)].merge(h, on="server", suffixes=("", "_single"))
    pp["vs_single"] = pp.rps / pp.rps_single
    return pp


def _generator_said(pp: pd.DataFrame) -> str:
    """Against how many servers wrk still filled its core pipelined, with its least share of the core, and what
    that makes their requests per second (the clause after "divides the generator's work per request;")."""
    bound = pp[pp.generator_bound]
    k, n = len(bound), len(pp)
    if n == 0:
        return "this run did not load the servers pipelined"
    if k == 0:
        return (f"`wrk` then kept up with {'the one server' if n == 1 else 'every server'}, so the requests per "
                "second here are the servers' own")
    low, high = (f"{bound.client_cpu_pct.agg(f):.0f}" for f in ("min", "max"))
    pct = f"{low} % of its core" + (" or more" if low != high else "")
    whose = "that server's" if k == 1 else "their"
    return (f"even so `wrk` saturated its core against {tally(k, n, 'server', verbs=None)} ({pct}), so {whose} "
            "requests per second are still `wrk`'s")


def _why_bound_said(k: int, n: int) -> str:
    """Why wrk still filled its core pipelined, and what that point then is for the servers it filled it against
    (the pipelined section's closing sentences); for none, that the rates are the servers'."""
    if n == 0:
        return "This run has no pipelined point to compare."
    if k == 0:
        return "Here the generator kept up, so this point's requests per second, too, compare the servers."
    whom = "that server" if k == 1 else f"those {k} servers"
    return ("`wrk` still fills its core because at a few tenths of a microsecond of server CPU per request, parsing "
            "16 responses costs the generator about as much as producing them costs the server, and on two cores "
            f"one of them runs `wrk`; for {whom} this point, too, is a lower bound, and the CPU per request the "
            "number to compare.")


def pipelined(ds, check: bool | None = None) -> dict:
    """Pipelined against one request per round trip: wrk's share (pipe_bound_said, pp_bound_said), the least gain
    in requests per second and whose. Claim: every server answered pipelined requests no slower than single ones."""
    pp = pipelined_table(ds)
    if checks(ds, check) and len(pp):
        claim(bool((pp.vs_single >= 1).all()), "every server answered pipelined requests no slower than one request "
              "per round trip", least=float(pp.vs_single.min()))
    return {"pipe_bound_said": markdown(_generator_said(pp)),
            "pp_bound_said": markdown(_why_bound_said(int(pp.generator_bound.sum()), len(pp))),
            "pp_min_ratio": float(pp.vs_single.min()) if len(pp) else NAN,
            "pp_min_server": pp.sort_values("vs_single").server.iloc[0] if len(pp) else NA}


def growth(ds) -> pd.Series:
    """Exercise 1: each server's CPU per request at its most connections over that at 40 (hello-world, keep-alive);
    empty where the run measured only 40."""
    k = _keepalive(ds)
    per_c = k.pivot(index="server", columns="connections", values="cpu_us_per_req")
    top = int(per_c.columns.max()) if len(per_c.columns) else 40
    if 40 not in per_c.columns or top == 40:
        return pd.Series(dtype=float)
    return per_c[top] / per_c[40]


def exercise_1(ds, check: bool | None = None) -> dict:
    """Exercise 1: the growth of the select, poll and epoll loops' and nginx's CPU per request from 40 to 1000
    connections, c-uring's, and how many repeats each is the median of. Claims: the loops grew by about the same
    factor, select and poll no more than epoll, and c-uring got cheaper."""
    ratio = growth(ds)
    at = {sid: float(ratio.get(sid, NAN)) for sid in LOOPS + ("c-uring",)}
    k = _keepalive(ds)
    levels = k[k.connections.isin([40, k.connections.max()])]
    out = {f"ex1_{key(sid)}": x for sid, x in at.items()}
    out["ex1_repeats_said"] = _medians_of(int(levels.repeats.min())) if len(levels) else NA
    loops = pd.Series({sid: at[sid] for sid in LOOPS})
    if checks(ds, check) and loops.notna().all() and _finite(at["c-uring"]):
        claim(bool(loops.max() < 1.15 * loops.min()), "the select, poll and epoll loops and nginx grew by about the "
              "same factor", low=loops.min(), high=loops.max())
        claim(max(at["c-select"], at["c-poll"]) <= at["c-epoll"], "select and poll grew no more than epoll",
              select=at["c-select"], poll=at["c-poll"], epoll=at["c-epoll"])
        claim(at["c-uring"] < 1, "c-uring spent less CPU per request at 1000 connections than at 40",
              uring=at["c-uring"])
    return out


def _idle_order_said(im: pd.DataFrame, n: int) -> str:
    """What exercise 4's three idle costs are medians of, and whether each lay above the next in every repeat."""
    a, b, c = (im.loc[sid] for sid in IDLE_ORDER)
    apart = a.slope_min > b.slope_max and b.slope_min > c.slope_max
    ordered = a.slope > b.slope > c.slope
    if n <= 1:
        return "one repeat each, " + ("each above the next" if ordered else "not in that order")
    if apart:
        return f"medians of {n} repeats, each above the next in every repeat"
    return f"medians of {n} repeats, " + ("each above the next, though their repeats overlapped" if ordered
                                          else "not in that order")


def exercise_4(idle, check: bool | None = None) -> dict:
    """Exercise 4: the captured idle study's PSS per connection of c-fork, c-thread and c-epoll, from the server at
    rest to its first level of idle connections (KiB, as text), the level, and what they are medians of. Claim: an
    idle connection cost c-fork the most, then c-thread, then c-epoll, in every repeat."""
    im = idle.marginal()
    im = im[im["from"] == 0].set_index("server")  # from the server at rest to its first level of idle connections
    if not set(IDLE_ORDER) <= set(im.index):
        return {"cx4_to": NA, "cx4_fork": NA, "cx4_thread": NA, "cx4_epoll": NA,
                "cx4_repeats_said": "not measured in the idle study"}
    n = int(im.loc[list(IDLE_ORDER), "repeats"].min())
    if checks(idle, check):
        f, t, e = (im.loc[sid] for sid in IDLE_ORDER)
        claim(bool(f.slope_min > t.slope_max and t.slope_min > e.slope_max),
              "an idle connection cost c-fork the most PSS, then c-thread, then c-epoll, in every repeat",
              fork=f.slope, thread=t.slope, epoll=e.slope)
    return {"cx4_to": f"{int(im.loc['c-epoll', 'to']):,}",
            **{f"cx4_{sid.removeprefix('c-')}": f"{im.loc[sid, 'slope']:.1f}" for sid in IDLE_ORDER},
            "cx4_repeats_said": _idle_order_said(im, n)}


def parts(ds, idle, check: bool | None = None) -> list[dict]:
    """Every part the page glues, in its order (the figures' captions, the comparison with a reader's own run and
    the live exercises are glued by the page's visible cells); `check`: whether to check the claims (pages.checks
    decides where it is None)."""
    return [littles_law(ds, check), outliers(ds), hello_world(ds, check), served(ds, check), memory(ds, check),
            pipelined(ds, check), exercise_1(ds, check), exercise_4(idle, check)]


def values(ds, idle, check: bool | None = None) -> dict:
    """Every value the page glues, merged."""
    return {name: value for part in parts(ds, idle, check) for name, value in part.items()}
