"""The analysis behind book/synthesis/database.md: the models with a real wait (`db-models`), six servers in front of
one PostgreSQL on TechEmpower's two query routes.

The dataset holds two sweeps that share a point: connections from 16 to 1,024 with each server's own pool (the plan's
pools), and the pool's size from 2 to 256 at 256 connections. The page reads them through two views:

    by_connections(ds, path)     the summary's rows of one route at each server's own pool
    by_pool(ds, path)            the summary's rows of one route at the pool sweep's connections
    view(ds, path, sweep)        the dataset cut to one of those, for plots.against

and its prose from one function per section, each returning {glue name: value}, its claims checked:

    setup(ds)  rates(ds)  time_values(ds)  pool_sweep(ds)  cpu_values(ds)  rpc_revisited(ds)  repeats(ds)
    chapter(ds): all of them; time_split, pool_table, cpu_split and rate_table: the page's tables

A point a run lacks (a smoke capture measures two servers at 16 connections, one other pool) reads "n/a" and its
claims are not checked; no claim is checked on a smoke capture (pages.checks).
"""
from __future__ import annotations

import dataclasses
import re

import pandas as pd

from iobench.book.claims import claim
from iobench.book.pages import checks, key
from iobench.book.phrases import NA, each, listing, markdown, sentence, span, span_of, tally, words
from iobench.data.report import number, value_in
from iobench.kinds.db.plans import ROUTES

NAN = float("nan")
ONE, MANY = ROUTES                       # one row per request; twenty, each its own query
ROUTE = {ONE: "one", MANY: "many"}       # a route as part of a glue name
SWEEP_CONNECTIONS = 256                  # the pool sweep's load (plans.DB_MODELS)
# A request holds a connection of its own while its queries run (a worker's, or one from HikariCP or r2dbc-pool);
# the others send every request's queries down a few shared, pipelined connections.
POOLED = ("c-db-threadpool", "java-db-tomcat", "java-db-tomcat-vt", "java-db-webflux")
PIPELINED = ("c-db-epoll", "java-db-vertx")


def pools(ds) -> dict[str, int]:
    """Each server's own pool: the size the plan runs it with where a point names none."""
    return {s: int(n) for s, n in ds.meta.get("plan", {}).get("pools", {}).items()}


def servers(ds) -> list[str]:
    """The servers the run measured, in the plan's order."""
    measured = set(ds.df.server)
    planned = [s for s in ds.meta.get("plan", {}).get("servers", []) if s in measured]
    return planned + sorted(measured - set(planned))


def by_connections(ds, path: str) -> pd.DataFrame:
    """The summary's rows of one route at each server's own pool, one per server and connection count."""
    S, own = ds.summary(), pools(ds)
    return S[(S.path == path) & (S.db_pool == S.server.map(own))].sort_values(["server", "connections"])


def by_pool(ds, path: str, connections: int = SWEEP_CONNECTIONS) -> pd.DataFrame:
    """The summary's rows of one route at the pool sweep's connections, one per server and pool size."""
    S = ds.summary()
    return S[(S.path == path) & (S.connections == connections)].sort_values(["server", "db_pool"])


def view(ds, path: str, sweep: str = "connections"):
    """The dataset cut to one route and one sweep ("connections": each server's own pool; "pool": the sweep's
    connections), so that its summary has one row per server and x, for plots.against."""
    df, own = ds.df, pools(ds)
    keep = (df.path == path) & ((df.db_pool == df.server.map(own)) if sweep == "connections"
                                else (df.connections == SWEEP_CONNECTIONS))
    return dataclasses.replace(ds, df=df[keep].copy())


def at(frame: pd.DataFrame, column: str, **where) -> float:
    """One value of a view (NaN where the run has no such point)."""
    return value_in(frame, column, NAN, **where)


# ------------------------------------------------------------------------------------------------------ setup

def setup(ds) -> dict:
    """How it was measured: the servers, repeats, measured and warm-up seconds, each JVM's warm-up, where the database
    ran, its version and settings, and the battery's verdicts."""
    plan, db = ds.meta.get("plan", {}), ds.meta.get("database", {})
    warm = plan.get("jvm_warmup_s", {})
    secs = sorted(set(warm.values()))
    own = pools(ds)
    verdicts = {s: ds.battery.get(s, []) for s in servers(ds)}
    failed = {s: [v["case"] for v in vs if not v.get("passed")] for s, vs in verdicts.items()}
    checked = [s for s, vs in verdicts.items() if vs]
    cases = max((len(vs) for vs in verdicts.values()), default=0)
    if not checked:
        battery = "The battery did not run in this capture."
    elif not any(failed.values()):
        battery = (f"{'Both' if len(checked) == 2 else 'All ' + words(len(checked))} passed all {words(cases)} of "
                   "its cases." if len(checked) > 1 else f"`{checked[0]}` passed all {words(cases)} of its cases.")
    else:
        battery = sentence(f"`{s}` failed {listing(f)}" for s, f in failed.items() if f)
    jvm = ("Each Java server first ran under its own load for "
           + (f"{secs[0]:g} s" if len(secs) == 1 else listing(f"`{s}` {warm[s]:g} s" for s in warm))
           + ", alternating the two routes, so that both were compiled before its first point." if warm else "")
    version = re.search(r"PostgreSQL\)? (\d+(?:\.\d+)*)", str(db.get("engine") or ""))
    return {
        "db_repeats": words(int(ds.df["repeat"].max())) if len(ds.df) else NA,
        "db_measured_s": f"{plan.get('measured_s', NAN):g}", "db_warmup_s": f"{plan.get('warmup_s', NAN):g}",
        "db_jvm_said": markdown(jvm),
        "db_pg": f"PostgreSQL {version.group(1)}" if version else "PostgreSQL",
        "db_cpus": str(db.get("cpus") or ds.meta.get("pinning", {}).get("server_cpus") or NA),
        "db_client_cpus": str(ds.meta.get("pinning", {}).get("client_cpus") or NA),
        "db_battery": markdown(battery),
        "db_pooled_pool": span_of([own[s] for s in POOLED if s in own], ".0f"),
        "db_pipelined_pool": span_of([own[s] for s in PIPELINED if s in own], ".0f"),
    }


# ------------------------------------------------------------------------------------------------------ rates

def _best(frame: pd.DataFrame, column: str = "ok_rps", low: bool = False) -> tuple[str, float]:
    """The server with the highest (low: lowest) median of `column` in a view's rows, and that median."""
    frame = frame.dropna(subset=[column])
    if not len(frame):
        return NA, NAN
    row = frame.loc[frame[column].idxmin() if low else frame[column].idxmax()]
    return row.server, float(row[column])


def rate_table(ds) -> pd.DataFrame:
    """Each server's rate of answers with rows (ok_rps, the median of its repeats) at each connection count, with its
    own pool, per route: a row per server, a column per route and connection count."""
    parts = []
    for path in ROUTE:
        C = by_connections(ds, path)
        wide = C.pivot(index="server", columns="connections", values="ok_rps")
        wide.columns = [(path, f"{c:,}") for c in wide.columns]
        parts.append(wide)
    if not parts or not any(len(p) for p in parts):
        return pd.DataFrame()
    T = pd.concat(parts, axis=1)
    T.columns = pd.MultiIndex.from_tuples(T.columns, names=["route", "connections"])
    return T.reindex([s for s in servers(ds) if s in T.index]).round(0)


def _shed(ds, path: str) -> dict[str, tuple[int, int]]:
    """Each server's 503s and responses on a route at its own pool, over every repeat and connection count."""
    df, own = ds.df, pools(ds)
    sel = df[(df.path == path) & (df.db_pool == df.server.map(own)) & df.ok]
    sums = sel.groupby("server", sort=False)[["non2xx", "requests"]].sum()
    return {s: (int(x.non2xx), int(x.requests)) for s, x in sums.iterrows()}


def _pct_of(k: int, n: int) -> str:
    """k of n as a share that never reads 0 % where k is not zero."""
    share = 100 * k / n if n else NAN
    return number(share, ".0f") + " %" if share >= 1 else number(share, ".1f") + " %" if share >= 0.1 else "under 0.1 %"


def rates(ds, check: bool | None = None) -> dict:
    """Rate against connections at each server's own pool, per route: who answered the most and the fewest at the
    sweep's connections; c-db-threadpool's served connections; who answered 503s; the virtual threads' fall with
    connections on /db, with their CPU per request; claims."""
    out, said = {}, []
    for path in ROUTE:
        C = by_connections(ds, path)
        here = C[C.connections == SWEEP_CONNECTIONS]
        (best, top), (worst, low) = _best(here), _best(here, low=True)
        if best == NA:
            said.append(f"the run has no point on `{path}` at {SWEEP_CONNECTIONS} connections")
        elif best == worst:
            said.append(f"on `{path}` at {SWEEP_CONNECTIONS} connections `{best}` answered {number(top)} requests a "
                        "second")
        else:
            times = number(top / low if low else NAN, ".1f")
            said.append(f"on `{path}` at {SWEEP_CONNECTIONS} connections `{best}` answered the most, {number(top)} "
                        f"requests a second, and `{worst}` the fewest, {number(low)}"
                        + (f": {times} times fewer" if times not in ("1.0", NA) else ""))
        piped, other = here[here.server.isin(PIPELINED)].ok_rps, here[~here.server.isin(PIPELINED)].ok_rps
        if checks(ds, check) and len(piped) and len(other):
            claim(piped.min() > other.max(), f"on {path} at {SWEEP_CONNECTIONS} connections both pipelined servers "
                  "answered more than any other", pipelined=dict(zip(here.server, here.ok_rps)))
    out["db_rates_said"] = markdown(sentence(said, NA))
    tp = ds.df[(ds.df.server == "c-db-threadpool") & (ds.df.db_pool == pools(ds).get("c-db-threadpool")) & ds.df.ok]
    above = tp[tp.connections > tp.db_pool]
    out["db_tp_served"] = (f"{span_of(above.conns_served, ',.0f')} of the {span_of(above.connections, ',.0f')}"
                           if len(above) else NA)
    if checks(ds, check) and len(tp):
        claim(bool((tp.conns_served <= tp.db_pool).all()), "c-db-threadpool never served more connections than it "
              "has workers", served=tp.conns_served.max())
    shed = []
    for path in ROUTE:
        for s, (k, n) in _shed(ds, path).items():
            if k:
                shed.append(f"`{s}` on `{path}` ({_pct_of(k, n)} of {n:,} responses)")
    out["db_shed_said"] = markdown(
        "No server answered a request with a 503 at its own pool." if not shed
        else f"Some requests waited more than 2 s for a connection and got a 503: {listing(shed)}.")
    vt = by_connections(ds, ONE)
    vt = vt[vt.server == "java-db-tomcat-vt"].set_index("connections")
    lo, hi = (vt.index.min(), vt.index.max()) if len(vt) else (NAN, NAN)
    out["db_vt_fall"] = span(vt.ok_rps.get(lo, NAN), vt.ok_rps.get(hi, NAN), ",.0f") if len(vt) > 1 else NA
    out["db_vt_cpu"] = span(vt.cpu_us_per_req.get(lo, NAN), vt.cpu_us_per_req.get(hi, NAN), ",.0f", " µs") \
        if len(vt) > 1 else NA
    if checks(ds, check) and len(vt) > 1:
        claim(vt.ok_rps[hi] < 0.85 * vt.ok_rps[lo] and vt.cpu_us_per_req[hi] > 1.3 * vt.cpu_us_per_req[lo],
              "on /db java-db-tomcat-vt answered fewer requests at 1,024 connections than at 16, each costing more "
              "CPU", rps=dict(vt.ok_rps), cpu=dict(vt.cpu_us_per_req))
    return out


# ------------------------------------------------------------------------------------------------ time split

def time_split(ds, path: str = MANY, connections: int = SWEEP_CONNECTIONS) -> pd.DataFrame:
    """Where a request's time went, per server, at one route and connection count, each at its own pool: the rate
    and the share of 503s, the p99, the server's mean wait for a pooled connection and time querying (ms), and by
    Little's law the requests querying at once (rate x time querying), against the pool's connections."""
    C = by_connections(ds, path)
    C = C[C.connections == connections]
    rows = []
    for x in C.itertuples():
        busy = x.rps * x.db_query_us / 1e6
        rows.append({"server": x.server, "pool": int(x.db_pool), "requests/s": x.rps, "503 (%)": x.shed_pct,
                     "p99 (ms)": x.p99_ms, "wait for a connection (ms)": x.db_wait_us / 1000,
                     "querying (ms)": x.db_query_us / 1000, "requests querying": busy,
                     "per connection": busy / x.db_pool})
    order = {s: i for i, s in enumerate(servers(ds))}
    return pd.DataFrame(rows).sort_values("server", key=lambda c: c.map(order)) if rows else pd.DataFrame()


def time_values(ds, check: bool | None = None) -> dict:
    """The time split's values for the prose, on the twenty-query route at the sweep's connections; claims."""
    T = time_split(ds)
    T = T.set_index("server") if len(T) else T
    out = {"db_sweep_c": f"{SWEEP_CONNECTIONS:,}"}

    def v(s, column, spec=",.1f"):
        return number(T.at[s, column] if s in T.index else NAN, spec)

    for s in ("java-db-tomcat", "java-db-tomcat-vt"):  # the two the prose compares
        out[f"db_wait_{key(s)}"] = v(s, "wait for a connection (ms)")
        out[f"db_query_{key(s)}"] = v(s, "querying (ms)")
        out[f"db_p99_{key(s)}"] = v(s, "p99 (ms)", ",.0f")
        out[f"db_shed_{key(s)}"] = v(s, "503 (%)", ".1f")
    pooled = T[T.index.isin(POOLED)] if len(T) else T
    out["db_pooled_busy"] = markdown(each({f"`{s}`": b for s, b in pooled["requests querying"].items()}, ".1f")
                                     if len(pooled) else NA)
    pipes = T[T.index.isin(PIPELINED)] if len(T) else T
    out["db_pipes_busy"] = markdown(each({f"`{s}`": b for s, b in pipes["per connection"].items()}, ",.0f")
                                    if len(pipes) else NA)
    if checks(ds, check) and len(pooled):
        claim(bool((pooled["per connection"] > 0.8).all()), f"at {SWEEP_CONNECTIONS} connections on {MANY} every "
              "pooled server kept more than four fifths of its pool querying", busy=dict(pooled["per connection"]))
    if checks(ds, check) and {"java-db-tomcat", "java-db-tomcat-vt"} <= set(T.index):
        t, vt = T.loc["java-db-tomcat"], T.loc["java-db-tomcat-vt"]
        claim(t["503 (%)"] > 0 and vt["503 (%)"] == 0 and t["p99 (ms)"] > 2 * vt["p99 (ms)"]
              and abs(t["requests/s"] / vt["requests/s"] - 1) < 0.2,
              "with the same pool and about the same rate, Tomcat's platform threads got 503s and more than twice the "
              "p99 of its virtual threads, which got none", tomcat=dict(t), vt=dict(vt))
    return out


# ------------------------------------------------------------------------------------------------- pool sweep

def pool_sweep(ds, check: bool | None = None) -> dict:
    """The pool sweep at the sweep's connections, per route: each server's best pool, how much of its best rate it
    kept with the largest pool, and c-db-threadpool's CPU per request and p99 from the smallest pool to the largest;
    claims."""
    out = {}
    for path, r in ROUTE.items():
        P = by_pool(ds, path)
        sizes = sorted(int(n) for n in P.db_pool.unique())
        out[f"db_{r}_sizes"] = listing(f"{n:,}" for n in sizes) or NA
        best = {s: int(g.loc[g.ok_rps.idxmax()].db_pool) for s, g in P.dropna(subset=["ok_rps"]).groupby("server",
                                                                                                           sort=False)}
        kept = {}
        for s, g in P.groupby("server", sort=False):
            top, biggest = g.ok_rps.max(), at(g, "ok_rps", db_pool=max(sizes)) if sizes else NAN
            kept[s] = 100 * biggest / top if top else NAN
        out[f"db_{r}_kept"] = span_of(kept.values(), ".0f", " %")
        out[f"db_{r}_largest"] = f"{max(sizes):,}" if sizes else NA
        small = {s: g[g.db_pool <= 4].ok_rps.max() / g.ok_rps.max() for s, g in P.groupby("server", sort=False)}
        java_pooled = [kept[s] for s in POOLED if s in kept and s.startswith("java")]
        others = [kept[s] for s in kept if not (s in POOLED and s.startswith("java"))]
        if checks(ds, check) and path == ONE and java_pooled and others:
            claim(max(others) < min(java_pooled), f"on {path} the largest pool cost the pipelined and C servers more "
                  "of their best rate than the Java servers that take a pooled connection per request", kept=kept)
        if checks(ds, check) and len(sizes) > 1 and path == MANY:
            claim(all(n <= 16 for n in best.values()), f"on {path} every server's best pool held at most 16 "
                  "connections", best=best)
            claim(all(x >= 0.9 for x in small.values()), f"on {path} every server reached at least nine tenths of "
                  "its best rate with a pool of two or four connections", small=small)
            claim(all(k < 90 for k in kept.values()), f"on {path} every server answered at least a tenth fewer "
                  f"requests with a pool of {max(sizes)} than with its best pool", kept=kept)
    tp = by_pool(ds, MANY)
    tp = tp[tp.server == "c-db-threadpool"].set_index("db_pool")
    if len(tp) > 1:
        a, b = tp.index.min(), tp.index.max()
        out["db_tp_pool_cpu"] = span(tp.cpu_us_per_req[a], tp.cpu_us_per_req[b], ",.0f", " µs")
        out["db_tp_pool_db_cpu"] = span(tp.db_cpu_us_per_req[a], tp.db_cpu_us_per_req[b], ",.0f", " µs")
        out["db_tp_pool_p99"] = span(tp.p99_ms[a], tp.p99_ms[b], ",.1f", " ms")
        out["db_tp_pool_ends"] = f"{a:,} to {b:,}"
        if checks(ds, check):
            claim(tp.cpu_us_per_req[b] > tp.cpu_us_per_req[a] and tp.db_cpu_us_per_req[b] > tp.db_cpu_us_per_req[a],
                  "c-db-threadpool's requests cost the server and the database more CPU with the largest pool than "
                  "with the smallest", server=dict(tp.cpu_us_per_req), db=dict(tp.db_cpu_us_per_req))
    else:
        out |= dict.fromkeys(("db_tp_pool_cpu", "db_tp_pool_db_cpu", "db_tp_pool_p99",
                              "db_tp_pool_ends"), NA)
    return out


def pool_table(ds) -> pd.DataFrame:
    """Per server and route, from the pool sweep: the pool it answered the most with, that rate, and the share of it
    the largest pool kept."""
    rows = []
    for path in ROUTE:
        P = by_pool(ds, path).dropna(subset=["ok_rps"])
        largest = P.db_pool.max() if len(P) else NAN
        for s, g in P.groupby("server", sort=False):
            top = g.loc[g.ok_rps.idxmax()]
            rows.append({"route": path, "server": s, "best pool": int(top.db_pool), "answers/s": top.ok_rps,
                         f"kept with {largest:,.0f} (%)": 100 * at(g, "ok_rps", db_pool=largest) / top.ok_rps})
    order = {s: i for i, s in enumerate(servers(ds))}
    T = pd.DataFrame(rows)
    if not len(T):
        return T
    wide = T.set_index(["server", "route"]).unstack("route").swaplevel(axis=1).sort_index(axis=1, level=0,
                                                                                         sort_remaining=False)
    return wide.sort_index(key=lambda i: i.map(order)).round(0)


# ------------------------------------------------------------------------------------------------------- CPU

def cpu_split(ds, connections: int = SWEEP_CONNECTIONS) -> pd.DataFrame:
    """The server's and the database's CPU per request, per server and route, at the sweep's connections and each
    server's own pool; and the share of the one core they share that the two kept busy (rate x their CPU per
    request; the database ran on the server's core)."""
    rows = []
    order = {s: i for i, s in enumerate(servers(ds))}
    for path in ROUTE:
        C = by_connections(ds, path)
        C = C[C.connections == connections].sort_values("server", key=lambda c: c.map(order))
        for x in C.itertuples():
            both = x.cpu_us_per_req + x.db_cpu_us_per_req
            rows.append({"route": path, "server": x.server, "requests/s": x.rps,
                         "server (µs/request)": x.cpu_us_per_req, "database (µs/request)": x.db_cpu_us_per_req,
                         "both (µs/request)": both, "core busy (%)": x.rps * both / 1e4})
    return pd.DataFrame(rows)


def cpu_values(ds, check: bool | None = None) -> dict:
    """The CPU split's values for the prose: how busy the shared core was, each route's CPU per request of the two
    together from the cheapest server to the dearest; claims."""
    T = cpu_split(ds)
    out = {}
    for path, r in ROUTE.items():
        t = T[T.route == path] if len(T) else T
        out[f"db_{r}_core"] = span_of(t["core busy (%)"], ".0f", " %") if len(t) else NA
        if len(t):
            cheap, dear = t.loc[t["both (µs/request)"].idxmin()], t.loc[t["both (µs/request)"].idxmax()]
            out[f"db_{r}_cheap"], out[f"db_{r}_dear"] = markdown(f"`{cheap.server}`"), markdown(f"`{dear.server}`")
            out[f"db_{r}_both"] = span(cheap["both (µs/request)"], dear["both (µs/request)"], ",.0f", " µs")
            out[f"db_{r}_db_share"] = span_of(100 * t["database (µs/request)"] / t["both (µs/request)"], ".0f", " %")
        else:
            out |= {f"db_{r}_cheap": NA, f"db_{r}_dear": NA, f"db_{r}_both": NA, f"db_{r}_db_share": NA}
        if checks(ds, check) and len(t) > 1:
            claim(bool((t["core busy (%)"] > 80).all()), f"on {path} at {SWEEP_CONNECTIONS} connections the server and "
                  "its database kept their core more than four fifths busy, for every server",
                  busy=dict(zip(t.server, t["core busy (%)"])))
            claim(t.loc[t["requests/s"].idxmax()].server == cheap.server, f"on {path} the server whose requests cost "
                  "the least CPU, its own and the database's, answered the most", cheap=cheap.server,
                  fastest=t.loc[t["requests/s"].idxmax()].server)
    return out


# ------------------------------------------------------------------------------------------- the RPC question

NETTY = ("java-db-webflux", "java-db-vertx")  # the two on Netty's event loops (Reactor Netty, Vert.x)


def rpc_revisited(ds, check: bool | None = None) -> dict:
    """The RPC case study's question with a real store: on the twenty-query route at the sweep's connections, the two
    servers on Netty's event loops, the one that pipelines its queries and the one that takes a pooled connection
    per request, against each other and the Tomcat servers; claim."""
    here = by_connections(ds, MANY)
    here = here[here.connections == SWEEP_CONNECTIONS].set_index("server")
    rate = {s: here.ok_rps.get(s, NAN) for s in ("java-db-vertx", "java-db-webflux", "java-db-tomcat")}
    out = {f"db_rpc_{key(s)}": number(r) for s, r in rate.items()}
    if checks(ds, check) and set(NETTY) <= set(here.index) and "java-db-tomcat" in here.index:
        claim(here.ok_rps.idxmax() == "java-db-vertx" and here.ok_rps.idxmin() == "java-db-webflux",
              f"on {MANY} at {SWEEP_CONNECTIONS} connections, of the two servers on Netty, Vert.x answered the most "
              "and WebFlux the fewest of all six", rates=dict(here.ok_rps))
    return out


# ---------------------------------------------------------------------------------------------------- repeats

def repeats(ds) -> dict:
    """Every repeat: how far the repeats of a point spread at most, and where; the flagged ones; the generator's
    CPU at most and the points it bounded."""
    df = ds.df
    ok = df[df.ok] if "ok" in df else df
    keys = ["server", "path", "db_pool", "connections"]
    spread = ok.groupby(keys).rps.agg(lambda a: 100 * (a.max() - a.min()) / a.median() if a.median() else NAN)
    n = int(df["repeat"].max()) if len(df) else 0
    worst = spread.idxmax() if len(spread.dropna()) and n > 1 else None
    flagged = df[df.outlier] if "outlier" in df else df.iloc[:0]
    there = (ok[(ok.server == worst[0]) & (ok.path == worst[1]) & (ok.db_pool == worst[2])
                & (ok.connections == worst[3])] if worst else ok.iloc[:0])
    return {
        "db_rows": f"{len(df):,}",
        "db_spread_max": number(spread.max() if n > 1 else NAN, ".0f"),
        "db_spread_where": markdown(f"`{worst[0]}` on `{worst[1]}` with a pool of {int(worst[2]):,} at "
                                    f"{int(worst[3]):,} connections" if worst else NA),
        "db_spread_cpu": (f"the server's CPU per request from {span_of(there.server_cpu_us_per_req, ',.0f', ' µs')} "
                          f"and the database's from {span_of(there.db_cpu_us_per_req, ',.0f', ' µs')}"
                          if len(there) else NA),
        "db_flagged": sentence([tally(len(flagged), len(df), "run", "flagged, more than 20 % from the median of "
                                      "the point's repeats") if len(df) else ""], NA),
        "db_gen_cpu": number(df.client_cpu_pct.max(), ".0f"),
        "db_gen_bound": tally(int(df.generator_bound.sum()), len(df), "run", "generator-bound") if len(df) else NA,
    }


def chapter(ds, check: bool | None = None) -> dict:
    """Every value the page glues from db-models, its claims checked."""
    return {**setup(ds), **rates(ds, check), **time_values(ds, check), **pool_sweep(ds, check),
            **cpu_values(ds, check), **rpc_revisited(ds, check), **repeats(ds)}
