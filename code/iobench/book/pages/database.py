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
from iobench.kinds.openloop.dataset import on_time

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

def repeats(ds, prefix: str = "db") -> dict:
    """Every repeat of a database dataset (db-models, db-pinning, db-openloop: their glue names start with `prefix`):
    how far the repeats of a point spread at most, and where; the flagged ones; the generator's CPU at most and the
    points it bounded."""
    df = ds.df
    ok = df[df.ok] if "ok" in df else df
    keys = ["server", "path", "db_pool", "connections", "fraction"]
    spread = ok.groupby(keys).rps.agg(lambda a: 100 * (a.max() - a.min()) / a.median() if a.median() else NAN)
    n = int(df["repeat"].max()) if len(df) else 0
    worst = spread.idxmax() if len(spread.dropna()) and n > 1 else None
    flagged = df[df.outlier] if "outlier" in df else df.iloc[:0]
    there = ok.set_index(keys).loc[[worst]] if worst else ok.iloc[:0]
    level = f", offered {100 * worst[4]:g} % of its capacity" if worst and worst[4] else ""
    return {
        f"{prefix}_rows": f"{len(df):,}",
        f"{prefix}_spread_max": number(spread.max() if n > 1 else NAN, ".0f"),
        f"{prefix}_spread_where": markdown(f"`{worst[0]}` on `{worst[1]}` with a pool of {int(worst[2]):,} at "
                                           f"{int(worst[3]):,} connections{level}" if worst else NA),
        f"{prefix}_spread_cpu": (f"the server's CPU per request from "
                                 f"{span_of(there.server_cpu_us_per_req, ',.0f', ' µs')} and the database's from "
                                 f"{span_of(there.db_cpu_us_per_req, ',.0f', ' µs')}" if len(there) else NA),
        f"{prefix}_flagged": sentence([tally(len(flagged), len(df), "run", "flagged, more than 20 % from the median "
                                             "of the point's repeats") if len(df) else ""], NA),
        f"{prefix}_gen_cpu": number(df.client_cpu_pct.max(), ".0f"),
        f"{prefix}_gen_bound": (tally(int(df.generator_bound.sum()), len(df), "run", "generator-bound") if len(df)
                                else NA),
    }


# ---------------------------------------------------------------------------------------------------- pinning

# The pinning study's variants of java-db-tomcat-vt (plans.DB_PINNING, manifest.PINNING_SERVERS): its JDK and pgjdbc;
# only JDK 21 with pgjdbc 42.5.6 waits for a query inside synchronized on a JDK that pins there (JEP 491 ended it in 24)
VARIANTS = {"java-db-tomcat-vt": ("25", "42.7"), "java-db-tomcat-vt-21": ("21", "42.7"),
            "java-db-tomcat-vt-21-pg425": ("21", "42.5.6"), "java-db-tomcat-vt-pg425": ("25", "42.5.6")}
PINNED = "java-db-tomcat-vt-21-pg425"


def pinning_split(pin, connections: int = SWEEP_CONNECTIONS) -> pd.DataFrame:
    """Per variant and route at `connections` (each with HikariCP's 16 connections): its JDK and pgjdbc, whether a
    query pins its carrier, the rate of answers and the p99, the server's and the database's CPU per request, how
    busy the two kept their one core (rate x both), and by Little's law the requests querying at once (rate x the
    server's mean time querying)."""
    S = pin.summary()
    rows = []
    for path in ROUTE:
        here = S[(S.path == path) & (S.connections == connections)]
        for server in [v for v in VARIANTS if v in set(here.server)]:
            x = here[here.server == server].iloc[0]
            jdk, driver = VARIANTS[server]
            rows.append({"route": path, "server": server, "JDK": jdk, "pgjdbc": driver,
                         "pinned": "yes" if server == PINNED else "no", "answers/s": x.ok_rps, "p99 (ms)": x.p99_ms,
                         "server (µs/request)": x.cpu_us_per_req, "database (µs/request)": x.db_cpu_us_per_req,
                         "core busy (%)": x.rps * (x.cpu_us_per_req + x.db_cpu_us_per_req) / 1e4,
                         "querying at once": x.ok_rps * x.db_query_us / 1e6})
    return pd.DataFrame(rows)


def pinning_table(pin) -> pd.DataFrame:
    """The split as the page shows it: a row per variant (its JDK, pgjdbc and whether it pins), per route its answers a
    second, p99 and requests querying at once."""
    T = pinning_split(pin)
    if not len(T):
        return T
    shown = ["answers/s", "p99 (ms)", "querying at once"]
    wide = T.set_index(["server", "JDK", "pgjdbc", "pinned", "route"])[shown].unstack("route")
    wide = wide.swaplevel(axis=1)
    wide = wide.reindex(columns=[(r, c) for r in ROUTE for c in shown if (r, c) in wide.columns])
    order = {s: i for i, s in enumerate(VARIANTS)}
    wide = wide.sort_index(level="server", key=lambda i: i.map(order))
    return wide.round({c: 1 if c[1] == "querying at once" else 0 for c in wide.columns})


def pinning(pin, check: bool | None = None) -> dict:
    """The pinning study's values for the prose, at the sweep's connections on each route: the pinned variant's rate
    and requests querying at once against the three that unmount, and how busy the core was; claims."""
    T = pinning_split(pin)
    out = {"db_pin_repeats": words(int(pin.df["repeat"].max())) if len(pin.df) else NA}
    for path, r in ROUTE.items():
        t = T[T.route == path].set_index("server") if len(T) else T
        mine = t.loc[PINNED] if PINNED in getattr(t, "index", ()) else None
        others = t[t.index != PINNED] if len(t) else t
        out[f"db_pin_{r}_rate"] = number(mine["answers/s"] if mine is not None else NAN)
        out[f"db_pin_{r}_others"] = span_of(others["answers/s"], ",.0f") if len(others) else NA
        out[f"db_pin_{r}_busy"] = number(mine["querying at once"] if mine is not None else NAN, ".1f")
        out[f"db_pin_{r}_others_busy"] = span_of(others["querying at once"], ".1f") if len(others) else NA
        out[f"db_pin_{r}_core"] = span_of(t["core busy (%)"], ".0f", " %") if len(t) else NA
        for part, column in (("cpu", "server (µs/request)"), ("db_cpu", "database (µs/request)")):
            x = mine[column] if mine is not None else NAN
            out[f"db_pin_{r}_{part}"] = span(x, x, ",.0f", " µs")
            out[f"db_pin_{r}_others_{part}"] = span_of(others[column], ",.0f", " µs") if len(others) else NA
        if checks(pin, check) and mine is not None and len(others):
            claim(mine["querying at once"] < 1.2 < others["querying at once"].min(), f"on {path} at "
                  f"{SWEEP_CONNECTIONS} connections the pinned variant had one query out at a time, the others more",
                  pinned=mine["querying at once"], others=dict(others["querying at once"]))
            claim(mine["answers/s"] > 0.9 * others["answers/s"].min(), f"on {path} at {SWEEP_CONNECTIONS} "
                  "connections pinning cost the rate less than a tenth against the slowest variant that unmounts",
                  pinned=mine["answers/s"], others=dict(others["answers/s"]))
            claim(bool((t["core busy (%)"] > 80).all()), f"on {path} every variant kept the shared core more than "
                  "four fifths busy", busy=dict(t["core busy (%)"]))
            if path == MANY:
                claim(mine["server (µs/request)"] > 1.1 * others["server (µs/request)"].max()
                      and mine["database (µs/request)"] < others["database (µs/request)"].min(),
                      f"on {path} the pinned variant's requests cost its server more CPU than any other's, and the "
                      "database less", pinned=dict(mine), others=others.to_dict())
    return {**out, **repeats(pin, "db_pin")}


# -------------------------------------------------------------------------------------------------- open loop

def open_summary(ol) -> pd.DataFrame:
    """db-openloop's summary in the plan's order of servers: its closed point (the capacity) and its open points."""
    order = {s: i for i, s in enumerate(servers(ol))}
    S = ol.summary()
    return S.sort_values(["server", "fraction"], key=lambda c: c.map(order) if c.name == "server" else c)


def _core_busy(x) -> float:
    """How busy a point kept the core the server and its database share, in per cent: its rate of answers times what
    a request cost the two in CPU."""
    return x.rps * (x.cpu_us_per_req + x.db_cpu_us_per_req) / 1e4


def open_table(ol) -> pd.DataFrame:
    """A row per server: its closed loop's answers with rows a second (the capacity the open loop's rates are
    fractions of); the highest rate it was offered and answered on time in every repeat (no 503, timeout or drop,
    and at least 99 % of the offered rate answered with rows) and its p99 there, counted from each request's intended
    start; and at the highest rate offered, the answers with rows a second, their p99, and the share of the offered
    requests that got none: a 503, a timeout, or dropped at the generator's cap of requests in flight."""
    S = open_summary(ol)
    top = S[S.loop == "open"].fraction.max() if len(S) else NAN
    rows = []
    for server, g in S.groupby("server", sort=False):
        closed = g[g.loop == "closed"]
        best = _on_time(g)
        best = best.loc[best.offered_rps.idxmax()] if len(best) else None
        row = {"server": server, "closed loop (answers/s)": closed.ok_rps.iloc[0] if len(closed) else NAN,
               "on time up to (requests/s)": best.offered_rps if best is not None else NAN,
               "p99 there (ms)": best.p99_ms if best is not None else NAN}
        last = g[(g.loop == "open") & (g.fraction == top)]
        if len(last):
            x = last.iloc[0]
            row |= {f"offered {100 * top:g} %: answers/s": x.ok_rps, "p99 (ms)": x.p99_ms,
                    "not answered (%)": _lost(x)}
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    T = pd.DataFrame(rows).set_index("server")
    return T.round({c: 0 for c in T.columns if "answers/s" in c or "requests/s" in c})


def _lost(x) -> float:
    """The share of a point's offered requests (over its repeats) that got no answer with rows, in per cent."""
    lost = (0 if pd.isna(x.non2xx) else x.non2xx) + (0 if pd.isna(x.timeouts) else x.timeouts) \
        + (0 if pd.isna(x.dropped) else x.dropped)
    return 100 * lost / x.offered if x.offered else NAN


def _on_time(g: pd.DataFrame) -> pd.DataFrame:
    """The open points of `g` answered on time in every repeat: none lost (no 503 either) and at least 99 % of the
    offered rate answered with rows."""
    return on_time(g[g.apply(_lost, axis=1) == 0] if len(g) else g, achieved="ok_rps")


def open_loop(ol, check: bool | None = None) -> dict:
    """db-openloop's values for the prose: the tail below capacity against the closed loop's, how far each server
    stayed on time, why c-db-epoll's knee came early (its shared core's busy share), what overload did, and
    c-db-threadpool's unanswered connections; claims."""
    S = open_summary(ol)
    opened, closed = S[S.loop == "open"], S[S.loop == "closed"].set_index("server")
    fractions = sorted(opened.fraction.unique())
    top = fractions[-1] if fractions else NAN
    out = {"db_ol_repeats": words(int(ol.df["repeat"].max())) if len(ol.df) else NA,
           "db_ol_c": number(S.connections.max() if len(S) else NAN),
           "db_ol_levels": span(100 * fractions[0], 100 * top, "g", " %") if fractions else NA,
           "db_ol_top": f"{100 * top:g} %" if fractions else NA}
    at_f = {f: opened[opened.fraction == f].set_index("server") for f in fractions}
    half = at_f.get(0.5, opened.iloc[:0].set_index("server"))
    out["db_ol_half_p99"] = span_of(half.p99_ms, ",.1f", " ms")
    out["db_ol_closed_p99"] = span_of(closed.p99_ms, ",.0f", " ms")
    if checks(ol, check) and len(half) and len(closed):
        claim(bool((half.p99_ms < closed.p99_ms.reindex(half.index)).all()), "at half its capacity every server's "
              "open-loop p99 was below the p99 of its closed loop", half=dict(half.p99_ms), closed=dict(closed.p99_ms))
    # how far each stayed on time
    reach = {}
    for server, g in opened.groupby("server", sort=False):
        best = _on_time(g)
        reach[f"`{server}`"] = f"{100 * best.fraction.max():g} %" if len(best) else None
    groups: dict[str, list[str]] = {}
    for name, f in reach.items():
        groups.setdefault(f or "none", []).append(name)
    said = [f"{listing(names)} up to {f} of it" for f, names in groups.items() if f != "none"]
    if "none" in groups:
        said.append(f"{listing(groups['none'])} at no load")
    out["db_ol_on_time_said"] = markdown(listing(said) if said else NA)
    # c-db-epoll against Vert.x near the knee: the shared core's busy share, the time querying
    for server in PIPELINED:
        for f in (0.5, 0.8, 1.0):
            x = at_f[f].loc[server] if f in at_f and server in at_f[f].index else None
            k = f"db_ol_{key(server)}_{100 * f:g}"
            out[f"{k}_p99"] = number(x.p99_ms if x is not None else NAN, ",.0f")
            out[f"{k}_core"] = number(_core_busy(x) if x is not None else NAN, ".0f")
            out[f"{k}_query"] = number(x.db_query_us / 1000 if x is not None else NAN, ",.1f")
            out[f"{k}_cost"] = number(x.cpu_us_per_req + x.db_cpu_us_per_req if x is not None else NAN, ",.0f")
    at80 = at_f.get(0.8, opened.iloc[:0].set_index("server"))
    busy80 = {f"`{s}`": _core_busy(at80.loc[s]) for s in PIPELINED if s in at80.index}
    out["db_ol_pipes_80_core"] = markdown(each(busy80, ".0f", " %")) if busy80 else NA
    if checks(ol, check) and set(PIPELINED) <= set(closed.index) and 1.0 in at_f:
        epoll_ok = 1.0 in set(_on_time(opened[opened.server == "c-db-epoll"]).fraction)
        vertx_ok = 1.0 in set(_on_time(opened[opened.server == "java-db-vertx"]).fraction)
        claim(not epoll_ok and vertx_ok, "offered its closed loop's rate, c-db-epoll fell behind and Vert.x kept up",
              epoll=epoll_ok, vertx=vertx_ok)
    if checks(ol, check) and all(f in at_f and set(PIPELINED) <= set(at_f[f].index) for f in (0.5, 0.8, 1.0)):
        busy = {s: _core_busy(at_f[0.8].loc[s]) for s in PIPELINED}
        claim(min(busy.values()) > 95, "at 80 % of their capacity both pipelined servers and their database kept the "
              "core more than 95 % busy", busy=busy)
        cost = {s: [at_f[f].loc[s].cpu_us_per_req + at_f[f].loc[s].db_cpu_us_per_req for f in (0.5, 0.8, 1.0)]
                for s in PIPELINED}
        claim(all(a > b > c for a, b, c in cost.values()), "what a request cost the pipelined servers and their "
              "database fell from half their capacity to 80 % and again to 100 %", cost=cost)
        e, v = (closed.ok_rps[s] for s in PIPELINED)
        p99 = {s: at_f[0.8].loc[s].p99_ms for s in PIPELINED}
        claim(abs(e / v - 1) < 0.1 and p99["c-db-epoll"] > 3 * p99["java-db-vertx"], "the pipelined servers' "
              "capacities were within a tenth of each other, and at 80 % of it c-db-epoll's p99 was more than three "
              "times Vert.x's", capacity=(e, v), p99=p99)
        x = at_f[1.0].loc["c-db-epoll"]
        claim((x.cpu_us_per_req + x.db_cpu_us_per_req) * x.offered_rps > 1e6, "at its full capacity c-db-epoll's "
              "cost per request times the rate offered came to more than one core", need=(x.cpu_us_per_req
              + x.db_cpu_us_per_req) * x.offered_rps / 1e4)
    # overload
    last = at_f.get(top, opened.iloc[:0].set_index("server"))
    out["db_ol_top_p99"] = span_of(last.p99_ms / 1000, ",.1f", " s")
    gain = {s: 100 * (last.ok_rps[s] / closed.ok_rps[s] - 1) for s in last.index if s in closed.index}
    java = {s: g for s, g in gain.items() if s.startswith("java")}
    c = {s: g for s, g in gain.items() if not s.startswith("java")}
    out["db_ol_java_gain"] = span_of(java.values(), ".0f", " %")
    out["db_ol_c_loss"] = markdown(each({f"`{s}`": -g for s, g in c.items()}, ".0f", " %", at=" ")) if c else NA
    for s in ("java-db-tomcat",):
        x = last.loc[s] if s in last.index else None
        out[f"db_ol_{key(s)}_cpu"] = span(closed.cpu_us_per_req.get(s, NAN), x.cpu_us_per_req if x is not None
                                          else NAN, ",.0f", " µs")
    if checks(ol, check) and len(last):
        claim(bool((last.ok_rps < 0.99 * last.offered_rps).all()), f"offered {100 * top:g} % of its capacity, no "
              "server kept up", answered=dict(last.ok_rps), offered=dict(last.offered_rps))
        claim(bool((last.apply(_lost, axis=1) < 50).all()), f"offered {100 * top:g} %, every server still answered "
              "most requests with rows", lost=dict(last.apply(_lost, axis=1)))
        if java and c:
            claim(min(java.values()) > 0 > max(c.values()), f"at {100 * top:g} % the Java servers answered more than "
                  "their closed loop had, the C servers fewer", gain=gain)
    x = last.loc["c-db-epoll"] if "c-db-epoll" in last.index else None
    out["db_ol_epoll_timeouts"] = number(100 * x.timeouts / x.offered if x is not None and x.offered else NAN, ".0f")
    out["db_ol_epoll_dropped"] = number(100 * x.dropped / x.offered if x is not None and x.offered else NAN, ".0f")
    shed = {s: 100 * x.non2xx / x.offered for s, x in last.iterrows() if x.offered and x.non2xx > 0}
    out["db_ol_503_said"] = markdown(
        f"{listing(f'`{s}`' for s in shed)} answered {span_of(shed.values(), '.1f', ' %')} of them with a 503 after "
        "2 s without a pooled connection" if shed else "no server answered a 503")
    # c-db-threadpool: 16 workers, 256 connections
    tp = opened[opened.server == "c-db-threadpool"]
    lost = tp.apply(_lost, axis=1) if len(tp) else tp.fraction
    out["db_ol_tp_lost"] = span_of(lost[tp.fraction >= 0.5] if len(tp) else [], ".0f", " %")
    out["db_ol_tp_served"] = span_of(tp.conns_served, ",.0f")
    out["db_ol_tp_half_p99"] = number(at(tp, "p99_ms", fraction=0.5), ",.1f")
    if checks(ol, check) and len(tp):
        claim(bool((tp.timeouts > 0).all()), "c-db-threadpool's requests timed out at every load",
              timeouts=dict(zip(tp.fraction, tp.timeouts)))
    return {**out, **repeats(ol, "db_ol")}


def chapter(ds, check: bool | None = None) -> dict:
    """Every value the page glues from db-models, its claims checked."""
    return {**setup(ds), **rates(ds, check), **time_values(ds, check), **pool_sweep(ds, check),
            **cpu_values(ds, check), **rpc_revisited(ds, check), **repeats(ds)}
