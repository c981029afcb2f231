"""The analysis behind book/synthesis/many-connections.md: what an idle connection costs each model, where each
stops, 10,000 busy connections, io_uring as advised, and the deep dives (jvm-memory, c100k, accept-spread).

One function per section, each from its dataset to {glue name: value}, the values as the page pastes them:

    limits(idle), idle_memory(idle), idle_cpu(idle), stops(idle)     idle-connections (all four: idle_connections)
    ten_thousand(ten), io_uring(uring)                               ten-thousand, io-uring
    jvm_memory(jm), c100k(ck), accept_spread(acc)                    the deep dives' datasets

and the helpers the page's visible cells build their tables with (jvm_slopes, top_asked, held_range, per_conn,
busy, stops_for...). A point or server a run lacks (a smoke capture measures a few servers at two levels) reads
"n/a" or "none", never a KeyError. The claims the sentences make are checked here, on the data they are about:
each only where its subjects were measured, and none on a smoke capture, whose runs of a second or two support no
comparison (checks()).
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.pages import checks, key
from iobench.book.phrases import NA, each, ids, listing, markdown, span, words
from iobench.data.report import number, value_in
from iobench.servers.manifest import URING_ADDS, URING_CHAIN

NAN = float("nan")



def _levels(df) -> list[int]:
    return sorted(int(x) for x in df.idle_conns.unique())


def _from(level: int) -> str:
    return "none" if level == 0 else f"{level:,}"


def _ratio(a: float, b: float) -> float:
    """a / b, NaN where b is zero or either is missing."""
    return a / b if b and math.isfinite(a) and math.isfinite(b) else NAN


def _pct(a: float, b: float) -> str:
    """a against b as a signed percentage ("+42 %", "-6 %"); n/a where either is missing."""
    r = _ratio(a, b)
    return f"{100 * (r - 1):+.0f} %" if math.isfinite(r) else NA


# ---------------------------------------------------------------------------------------------- idle-connections

def idle_connections(idle) -> dict:
    """Every value the page glues from the idle study: limits, idle_memory, idle_cpu and stops together."""
    return limits(idle) | idle_memory(idle) | idle_cpu(idle) | stops(idle)


def limits(idle) -> dict:
    """The descriptor limit the harness raised and the kernel's limits it recorded, the levels skipped (one reason
    per level) and those measured: sc_nofile, sc_nofile_from, sc_pid_max, sc_threads_max, sc_map_count,
    sc_skipped, sc_levels."""
    lim = idle.meta["limits"]
    skipped = idle.meta.get("skipped_points", [])
    def count(name):
        return number(lim.get(name))
    return {
        "sc_nofile": number(lim["nofile"]["soft"]),
        "sc_nofile_from": number(lim.get("nofile_raised_from", lim["nofile"])["soft"]),
        "sc_pid_max": count("kernel.pid_max"), "sc_threads_max": count("kernel.threads-max"),
        "sc_map_count": count("vm.max_map_count"),
        "sc_skipped": "; ".join(dict.fromkeys(f"{p['idle_conns']:,} idle connections: {p['why']}" for p in skipped))
        or "none",
        "sc_levels": listing(f"{n:,}" for n in _levels(idle.df)),
    }


def slope(M: pd.DataFrame, server: str, to: int | None = None) -> float:
    """The median KiB per idle connection added of `server` (idle.marginal()'s rows M) in the segment ending at
    level `to` (its highest: None); NaN where it has none."""
    m = M[M.server == server]
    if to is None:
        to = m["to"].max() if len(m) else None
    return value_in(m, "slope", NAN, to=to) if to is not None else NAN


PER_IDLE = ("nginx", "c-epoll", "c-uring", "c-uring-multishot", "c-coroutine", "c-thread", "c-fork", "c-poll",
            "java-nio", "java-thread", "java-vthread", "java-netty", "java-mina")


def idle_memory(idle) -> dict:
    """What an idle connection costs each model: KiB per connection added between the two highest levels
    (sc_kib_<server>, sc_b_multishot and sc_sum_epoll), the segments (sc_n, sc_seg, sc_seg_first), how far the C
    servers' first segment is from their last (sc_c_steady_b) and which Java servers' first connections cost more
    (sc_java_grew, sc_java_grew_range, sc_java_flat)."""
    M = idle.marginal()
    tos = sorted(int(t) for t in M["to"].unique())
    first_to = int(M[M["from"] == 0]["to"].min()) if (M["from"] == 0).any() else None
    per = {s: slope(M, s) for s in M.server.unique()}
    first = {s: slope(M, s, first_to) for s in per}
    out = {"sc_n": f"{int(idle.df.idle_conns.max()):,}"}
    out |= {f"sc_kib_{key(s)}": number(per.get(s), ",.1f") for s in PER_IDLE}
    out["sc_b_multishot"] = number(1024 * per.get("c-uring-multishot", NAN))
    out["sc_sum_epoll"] = number(per.get("c-epoll"), ".0f")
    out["sc_seg"] = (f"from {_from(tos[-2] if len(tos) > 1 else 0)} to {tos[-1]:,}") if tos else NA
    out["sc_seg_first"] = f"from none to {first_to:,}" if first_to is not None else NA
    c_servers = [s for s in per if (s.startswith("c-") or s == "nginx") and (M.server == s).sum() > 1]
    c_steady = max((abs(first[s] - per[s]) for s in c_servers), default=NAN)  # KiB
    out["sc_c_steady_b"] = number(1024 * c_steady)
    java = [s for s in per if s.startswith("java-")]
    grew = {s: _ratio(first[s], per[s]) for s in java if _ratio(first[s], per[s]) > 1.5}
    out["sc_java_grew"] = markdown(listing(f"`{s}`" for s in grew) or "none")
    out["sc_java_grew_range"] = span(min(grew.values(), default=NAN), max(grew.values(), default=NAN), ".1f")
    out["sc_java_flat"] = markdown(listing(f"`{s}`" for s in java if s not in grew) or "none")
    if checks(idle) and c_servers:
        claim(c_steady < 0.25, "in C and nginx, the first thousand connections cost what the next nine thousand "
              "cost", at={"idle levels": tos}, worst_kib=c_steady)
    if checks(idle) and java:
        claim(len(grew) >= len(java) / 2, "most Java servers' first thousand connections cost several times more "
              "than the next ones", at={"idle levels": tos}, grew=len(grew), java=len(java))
    return out


def idle_cpu(idle) -> dict:
    """What idle connections cost the busy ones: CPU per busy request with none and with the most idle
    (sc_cpu0_<server>, sc_cpuN_<server>), c-poll's p99, rate and repeats, and its cost per idle descriptor
    up to the first level and the highest (sc_scan_ns_lo, sc_scan_ns)."""
    S = idle.summary()
    levels = _levels(idle.df)
    n, lo = levels[-1], (levels[1] if len(levels) > 1 else levels[-1])
    def at(col, s, level):
        return value_in(S, col, NAN, server=s, idle_conns=level)
    def cpu(s, level):
        return at("cpu_us_per_req", s, level)
    out = {}
    for s in ("c-poll", "c-epoll", "nginx", "c-uring", "java-nio"):
        out[f"sc_cpu0_{key(s)}"] = number(cpu(s, 0), ".1f")
        out[f"sc_cpuN_{key(s)}"] = number(cpu(s, n), ".1f")
    def per_fd(level):
        return 1000 * (cpu("c-poll", level) - cpu("c-poll", 0)) / level if level else NAN
    scan_lo, scan_n = per_fd(lo), per_fd(n)
    poll = S[S.server == "c-poll"].set_index("idle_conns")
    out |= {"sc_p99N_c_poll": number(at("p99_ms", "c-poll", n), ".1f"),
            "sc_p990_c_poll": number(at("p99_ms", "c-poll", 0), ".1f"),
            "sc_rpsN_c_poll": number(at("rps", "c-poll", n)),
            "sc_scan_ns": number(scan_n, ".0f"), "sc_scan_lo": f"{lo:,}", "sc_scan_ns_lo": number(scan_lo, ".1f"),
            "sc_poll_repeats": number(poll.repeats.min(), ".0f"),
            "sc_poll_cpuN_range": span(*(poll.loc[n, ["cpu_us_per_req_min", "cpu_us_per_req_max"]]
                                         if n in poll.index else (NAN, NAN)), ".0f")}
    if checks(idle) and {0, n} <= set(poll.index) and n:
        claim(poll.loc[n, "cpu_us_per_req_min"] > poll.loc[0, "cpu_us_per_req_max"] and scan_n > 2 * scan_lo,
              "c-poll's every repeat at the highest level cost more than any with none, and the cost per idle "
              "descriptor grew with the array", at={"idle levels": levels}, ns_lo=scan_lo, ns_n=scan_n)
    return out


def stops(idle) -> dict:
    """Where each model stops: what c-select held (sc_select_held), the pools that stopped at their size and what
    they answered (sc_pools, sc_pool_answered), what thread and process per connection held (sc_blocking_held)
    and their busy requests' CPU with none and the most idle (sc_idle_cpu0_<server>, sc_idle_cpuN_<server>)."""
    S, df = idle.summary(), idle.df
    n = _levels(df)[-1]
    def cpu(s, level):
        return value_in(S, "cpu_us_per_req", NAN, server=s, idle_conns=level)
    pools = sorted(set(df[df.failure.fillna("").str.startswith("not measured")].server))
    pool_held = df[df.server.isin(pools) & (df.idle_conns == 1000)].idle_answered
    holds = S[(S.idle_conns == n) & S.server.isin(["c-fork", "c-thread", "java-thread"])]
    out = {"sc_select_held": number(df[(df.server == "c-select") & (df.idle_conns == n)].idle_open.max()),
           "sc_pools": listing(pools) or "none",
           "sc_pool_answered": number(pool_held.min()),
           "sc_blocking_held": "; ".join(f"{r.server} {number(r.idle_open)} with {number(r.threads)} tasks"
                                         for r in holds.itertuples()) or NA}
    for s in ("c-thread", "c-fork"):
        out[f"sc_idle_cpu0_{key(s)}"] = number(cpu(s, 0), ".1f")
        out[f"sc_idle_cpuN_{key(s)}"] = number(cpu(s, n), ".1f")
    if not checks(idle):
        return out
    if math.isfinite(cpu("c-thread", 0) + cpu("c-thread", n)):
        claim(cpu("c-thread", n) < 1.15 * cpu("c-thread", 0), "c-thread's busy requests cost about as much CPU "
              "with 10,000 idle threads beside them as with none", at={"highest idle level": n},
              none=cpu("c-thread", 0), at_n=cpu("c-thread", n))
    fork = S[(S.server == "c-fork") & (S.idle_conns == n)]
    if len(fork):
        claim(bool(fork.noisy.all()), "c-fork's runs at the highest level were flagged noisy",
              at={"highest idle level": n})
    claim(bool((pool_held == 64).all()), "each pool of 64 answered 64 of the 1,000 idle connections",
          answered=sorted(set(pool_held)))
    return out


# ---------------------------------------------------------------------------------------------- ten-thousand

def served(ten, server: str) -> str:
    """The connections `server` served in each repeat, in the repeats' order ("n/a, 3,726 and 4,133"), or once
    where every repeat served as many ("10,000 in each")."""
    said = [number(v) for v in ten.df[ten.df.server == server].sort_values("repeat").conns_served]
    return f"{said[0]} in each" if len(said) > 1 and len(set(said)) == 1 else listing(said) or NA


def ten_thousand(ten) -> dict:
    """10,000 busy connections: who served them all, in each repeat (sc_ten_<server>, sc_ten_full), what the
    kernel counted where some were not (sc_ten_overflows, sc_ten_stderr, c-select's rate and resets), the CPU per
    request of c-fork and c-epoll, java-thread's CPU share and tasks, and which runs were noisy."""
    df, S = ten.df, ten.summary()
    def at(col, s):
        return value_in(S, col, NAN, server=s)
    over = df[df.server.isin(["c-fork", "java-thread"])].listen_overflows
    quiet = [s for s in ten.meta.get("stops", []) if s["server"] in ("c-fork", "java-thread")]
    full = [s for s in ("nginx", "c-epoll", "c-poll", "c-uring-multishot", "c-thread", "java-vthread", "java-netty")
            if (df.server == s).any() and (df[df.server == s].conns_served == 10_000).all()]
    jt = df[df.server == "java-thread"]
    def tasks(d):
        return d[["server_threads_max", "server_procs_max"]].max(axis=1).max()
    out = {f"sc_ten_{key(s)}": served(ten, s)
           for s in ("c-fork", "java-thread", "c-thread", "c-epoll", "java-vthread")}
    out |= {"sc_ten_select_rps": number(at("rps", "c-select")),
            "sc_ten_select_rsts": number(df[df.server == "c-select"].tcp_out_rsts.median()),
            "sc_ten_overflows": span(over.min(), over.max(), ",.0f"),
            "sc_ten_stderr": "; ".join(sorted({s["stderr_tail"][:80] for s in quiet if s.get("stderr_tail")}))
            or "nothing",
            "sc_ten_full": listing(full) or "none",
            "sc_ten_noisy": listing(sorted(set(df[df.noisy].server))) or "none",
            "sc_ten_cpu_fork": number(at("cpu_us_per_req", "c-fork")),
            "sc_ten_cpu_epoll": number(at("cpu_us_per_req", "c-epoll")),
            "sc_ten_jthread_pct": span(jt.server_cpu_pct.min(), jt.server_cpu_pct.max(), ".0f"),
            "sc_ten_jthread_tasks": number(tasks(jt))}
    if checks(ten):
        _ten_thousand_claims(df, jt, tasks)
    return out


def _ten_thousand_claims(df, jt, tasks) -> None:
    sel = df[df.server == "c-select"]
    if len(sel):
        claim(bool(sel.generator_bound.all()), "wrk saturated its core in every c-select run")
    cnt = {s: df[df.server == s].conns_served for s in ("c-fork", "java-thread", "c-thread")}
    if all(len(c) for c in cnt.values()):
        claim(bool((cnt["c-thread"] == 10_000).all()) and all(c.min() < 10_000 for s, c in cnt.items()
                                                               if s != "c-thread")
              and all(c.dropna().nunique() == len(c.dropna()) for s, c in cnt.items() if s != "c-thread"),
              "c-fork and java-thread (not c-thread) lost connections under 10,000 busy ones, a different number "
              "each repeat", **{key(s): list(c) for s, c in cnt.items()})
        claim(cnt["java-thread"].min() > cnt["c-fork"].max(), "java-thread lost fewer than c-fork (and more than "
              "c-thread)", java=cnt["java-thread"].min(), fork=cnt["c-fork"].max())
    if len(jt):
        claim(jt.server_cpu_pct.min() > 100, "java-thread's CPU time came to more than the one core it was pinned "
              "to", pct=jt.server_cpu_pct.min())
    if len(jt) and df.noisy.any():
        claim(not jt.noisy.any() and tasks(jt) >= 0.95 * tasks(df[df.noisy]), "java-thread, with as many tasks as "
              "the noisy runs, stayed below the threshold", java=tasks(jt), noisy=tasks(df[df.noisy]))


# ---------------------------------------------------------------------------------------------- io-uring

URING = ("c-epoll", "c-uring", "c-uring-multishot", "nginx")


def io_uring(uring) -> dict:
    """io_uring as its authors advise: CPU per request at 40 and 1,000 connections and pipelined
    (sc_u40_<server>, sc_u1000_<server>, sc_up16_<server>), c-uring-multishot's and c-uring's difference from
    c-epoll (sc_u_vs40, sc_u_vs1000, sc_u_vsp16, sc_u_simple_vs40), and how many points were generator-bound."""
    U = uring.summary()
    def at(col, s, c, p=1):
        return value_in(U, col, NAN, server=s, connections=c, pipeline=p)
    def cpu(s, c, p=1):
        return at("cpu_us_per_req", s, c, p)
    out = {}
    for s in URING:
        out |= {f"sc_u40_{key(s)}": number(cpu(s, 40), ".1f"), f"sc_u1000_{key(s)}": number(cpu(s, 1000), ".1f"),
                f"sc_up16_{key(s)}": number(cpu(s, 40, 16), ".2f")}
    bound, points = int(U.generator_bound.sum()), len(U)
    out |= {"sc_u_vs40": _pct(cpu("c-uring-multishot", 40), cpu("c-epoll", 40)),
            "sc_u_vs1000": _pct(cpu("c-uring-multishot", 1000), cpu("c-epoll", 1000)),
            "sc_u_vsp16": _pct(cpu("c-uring-multishot", 40, 16), cpu("c-epoll", 40, 16)),
            "sc_u_simple_vs40": _pct(cpu("c-uring", 40), cpu("c-epoll", 40)),
            "sc_u_bound": (f"all {points} of its points" if bound == points else "none of its points" if not bound
                           else f"{bound} of its {points} points")}
    if checks(uring) and set(URING[:3]) <= set(U.server):
        pts = U[["connections", "pipeline"]].drop_duplicates().itertuples(index=False)
        rng = {(c, p): {s: (at("cpu_us_per_req_min", s, c, p), at("cpu_us_per_req_max", s, c, p))
                        for s in URING[:3]} for c, p in pts}
        spans = {"repeats": int(U.repeats.min())}   # a range of one repeat is a point: it overlaps nothing
        claim(all(r["c-uring"][0] > r["c-epoll"][1] for r in rng.values()),
              "c-uring cost more than c-epoll at every point, the repeats' ranges apart", at=spans, ranges=rng)
        claim(all(r["c-uring-multishot"][0] <= r["c-epoll"][1] and r["c-epoll"][0] <= r["c-uring-multishot"][1]
                  for r in rng.values()), "c-uring-multishot's range overlaps c-epoll's at every point", at=spans,
              ranges=rng)
    return out


# ---------------------------------------------------------------------------------------------- io-uring-chain

CHAIN = ("c-epoll",) + URING_CHAIN
# what each server of the chain adds to the one before it (c-uring: the start; c-epoll: the reference beside it)
CHAIN_ADDS = {"c-epoll": "(the epoll loop, for reference)", "c-uring": "(the start)", **URING_ADDS,
              "c-uring-multishot": "multishot receive into a provided-buffer ring"}
# the chain's loads: label -> (connections, pipeline), each at no idle connections
CHAIN_LOADS = {"40 connections": (40, 1), "1,000 connections": (1000, 1), "pipelined": (40, 16)}
CHAIN_AT = {"40 connections": "at 40 connections", "1,000 connections": "at 1,000", "pipelined": "pipelined"}
IDLE_KIB = "KiB per idle connection"
CHAIN_UNITS = {label: f"{label}: µs CPU/req" for label in CHAIN_LOADS}  # the table's headings


def chain_idle(chain) -> pd.DataFrame:
    """Memory per idle connection, per server and repeat: (PSS at rest after the 40 connections' load with the idle
    connections held - the same without them, each point in a fresh server) / the idle connections the server held.
    Columns server, repeat, idle (held), kib."""
    df = chain.df[chain.df["ok"] & (chain.df["connections"] == 40) & (chain.df["pipeline"] == 1)]
    rows = []
    for (server, repeat), g in df.groupby(["server", "repeat"], sort=False):
        base, held = g[g["idle_conns"] == 0], g[g["idle_conns"] > 0]
        if len(base) and len(held) and held["idle_open"].iloc[0] > 0:
            n = float(held["idle_open"].iloc[0])
            rows.append({"server": server, "repeat": repeat, "idle": n,
                         "kib": (held["pss_rest_kib"].iloc[0] - base["pss_rest_kib"].iloc[0]) / n})
    return pd.DataFrame(rows, columns=["server", "repeat", "idle", "kib"])


def chain_table(chain) -> pd.DataFrame:
    """One row per server of the chain, in its order (c-epoll first, for reference): what it adds, then CPU per
    request (µs: the median of the repeats, their min and max) at each load of CHAIN_LOADS, and KiB per idle
    connection (chain_idle: median, min, max)."""
    S = chain.summary()
    idle = chain_idle(chain)
    rows = []
    for sid in CHAIN:
        row = {"server": sid, "adds": CHAIN_ADDS[sid]}
        for label, (conns, pipe) in CHAIN_LOADS.items():
            for suffix in ("", "_min", "_max"):
                row[label + suffix] = value_in(S, "cpu_us_per_req" + suffix, NAN, server=sid, connections=conns,
                                               pipeline=pipe, idle_conns=0)
        kib = idle[idle["server"] == sid]["kib"]
        row |= {IDLE_KIB: kib.median() if len(kib) else NAN, IDLE_KIB + "_min": kib.min() if len(kib) else NAN,
                IDLE_KIB + "_max": kib.max() if len(kib) else NAN}
        rows.append(row)
    return pd.DataFrame(rows).set_index("server")


def chain_moves(table: pd.DataFrame) -> list[dict]:
    """Each step of the chain (a server against the one before it, from c-uring on) at each load: the change of
    the median CPU per request in %, and whether the repeats' ranges are apart ("fell", "rose") or not ("within")."""
    out = []
    servers = list(URING_CHAIN)
    for before, after in zip(servers, servers[1:]):
        for label in CHAIN_LOADS:
            a, b = table.loc[before], table.loc[after]
            pct = 100 * (b[label] / a[label] - 1) if a[label] and math.isfinite(a[label] * b[label]) else NAN
            moved = ("fell" if b[label + "_max"] < a[label + "_min"] else
                     "rose" if b[label + "_min"] > a[label + "_max"] else "within")
            out.append({"server": after, "load": label, "pct": pct, "moved": moved})
    return out


def uring_chain(chain, check: bool | None = None) -> dict:
    """What the chain's prose glues: uc_repeats (how many repeats each point had), uc_idle_n (idle connections held),
    uc_moved (the steps that moved CPU per request beyond the repeats' ranges, and by how much), uc_total (c-uring
    to c-uring-multishot at each load), uc_epoll (c-uring-multishot against c-epoll at each load), uc_idle (memory per
    idle connection along the chain); claims on the chain's memory where the capture supports one."""
    T = chain_table(chain)
    S = chain.summary()
    reps = int(S["repeats"].min()) if len(S) else 0
    moves = chain_moves(T)
    out = {"uc_repeats": words(reps), "uc_moved": markdown(_chain_moved(moves, reps))}
    first, last, epoll = T.loc["c-uring"], T.loc["c-uring-multishot"], T.loc["c-epoll"]
    out["uc_total"] = _changes({at: _pct(last[label], first[label]) for label, at in CHAIN_AT.items()},
                               "changed by", "did not change")
    out["uc_epoll"] = _changes({at: _pct(last[label], epoll[label]) for label, at in CHAIN_AT.items()},
                               "differed by", "did not differ")
    apart = [label for label in CHAIN_LOADS
             if last[label + "_min"] > epoll[label + "_max"] or last[label + "_max"] < epoll[label + "_min"]]
    known = [label for label in CHAIN_LOADS if math.isfinite(last[label] * epoll[label])]
    out["uc_epoll_overlap"] = (NA if not known else "at every load" if not apart else "at no load" if
                               len(apart) == len(known) else "except " + listing(CHAIN_AT[a] for a in apart))
    idle = chain_idle(chain)
    out["uc_idle_n"] = f"{int(idle['idle'].median()):,}" if len(idle) else NA
    before = T.loc[list(URING_CHAIN[:-1]), IDLE_KIB]
    steps = span(before.min(), before.max(), ".1f")
    out["uc_idle"] = markdown(NA if steps == NA and not math.isfinite(last[IDLE_KIB]) else
                              f"{steps} KiB {'across the steps' if ' to ' in steps else 'at every step'} from "
                              f"`c-uring` to `c-uring-direct`, and {number(last[IDLE_KIB], '.1f')} KiB with "
                              f"`c-uring-multishot`")
    task = [abs(m["pct"]) for m in moves if m["server"] == "c-uring-taskrun" and math.isfinite(m["pct"])]
    out["uc_taskrun"] = span(min(task), max(task), ".0f", " %") if task else NA
    lo, hi = T.loc["c-epoll", "40 connections_min"], T.loc["c-epoll", "40 connections_max"]
    out["uc_epoll_spread"] = span(lo, hi, ".1f", " µs")
    drift = 100 * (hi / lo - 1) if lo and math.isfinite(hi / lo) else NAN
    out["uc_epoll_drift"] = number(drift, ".0f")
    if checks(chain, check) and reps > 1:
        fell = {(m["server"], m["load"]) for m in moves if m["moved"] == "fell"}
        everywhere = {sid for sid in URING_CHAIN[1:] if {(sid, load) for load in CHAIN_LOADS} <= fell}
        claim(everywhere == {"c-uring-taskrun"}, "the task-run flags lowered CPU per request beyond the repeats' "
              "ranges at every load, and no other step did", steps_lowering_everywhere=sorted(everywhere))
        others = [abs(m["pct"]) for m in moves if m["server"] != "c-uring-taskrun" and m["moved"] != "within"]
        claim(all(x < drift for x in others), "every other step that moved CPU per request beyond the repeats' ranges "
              "moved it by less than c-epoll's own repeats spread at 40 connections",
              moves=[round(x, 1) for x in others], epoll_spread_pct=round(drift, 1))
        claim(all(m["moved"] == "within" for m in moves if m["server"] == "c-uring-multishot"),
              "multishot receive's step moved CPU per request beyond the repeats' ranges at no load")
    if checks(chain, check) and len(idle):
        claim(bool(before.min() > 4 * last[IDLE_KIB]),
              "every server before c-uring-multishot kept more than four times its memory per idle connection",
              before=before.round(2).to_dict(), multishot=round(float(last[IDLE_KIB]), 2))
    return out


def _changes(pcts: dict[str, str], verb: str, none: str) -> str:
    """Signed percentages by load ("at 40 connections": "-26 %") as a predicate: "changed by -26 % at 40 connections
    and -36 % pipelined, and not at all at 1,000"; `none` + " at any load" where every one reads zero; loads without
    a value left out ("n/a" where none has one)."""
    known = {at: p for at, p in pcts.items() if p != NA}
    moved = [f"{p} {at}" for at, p in known.items() if p not in ("+0 %", "-0 %")]
    still = [at for at, p in known.items() if p in ("+0 %", "-0 %")]
    if not known:
        return NA
    if not moved:
        return f"{none} at any load"
    return f"{verb} {listing(moved)}" + (f", and not at all {listing(still)}" if still else "")


def _chain_moved(moves: list[dict], reps: int) -> str:
    """Which steps moved CPU per request beyond the repeats' ranges, as one sentence with at most four numbers (the
    table beside it has the rest): those that moved it at every load, the same way, by how much; those that moved it
    at some loads only; those at none. "Only `a` lowered CPU per request beyond the repeats' ranges at every load,
    by 25 to 33 %; `b`, `c` and `d` moved it beyond them at some loads only (by 5 to 13 %, up and down), and `e` at
    none." With one repeat per point there is no range to judge by, and the sentence says so."""
    if reps <= 1:
        return ("With one repeat per point there is no range to judge a step by: the table gives each step's "
                "medians.")
    beyond = [m for m in moves if m["moved"] != "within" and math.isfinite(m["pct"])]
    if not beyond:
        return "No step moved CPU per request beyond the repeats' ranges at any load."
    loads = len(CHAIN_LOADS)
    every, some = {}, []
    for sid in URING_CHAIN[1:]:
        mine = [m for m in beyond if m["server"] == sid]
        if len(mine) == loads and len({m["moved"] for m in mine}) == 1:
            every[sid] = mine
        elif mine:
            some.append(sid)
    none = [sid for sid in URING_CHAIN[1:] if sid not in every and sid not in some]
    parts = []
    for moved, verb in (("fell", "lowered"), ("rose", "raised")):
        sids = [sid for sid, mine in every.items() if mine[0]["moved"] == moved]
        if sids:
            pcts = [abs(m["pct"]) for sid in sids for m in every[sid]]
            parts.append(f"{'only ' if len(sids) == 1 and len(every) == 1 else ''}{ids(sids)} {verb} CPU per request "
                         f"beyond the repeats' ranges at every load, by {span(min(pcts), max(pcts), '.0f')} %")
    if not parts:
        parts.append("no step moved CPU per request beyond the repeats' ranges at every load")
    said = "; ".join(parts)
    if some:
        moved_some = [m for m in beyond if m["server"] in some]
        pcts = [abs(m["pct"]) for m in moved_some]
        ways = {m["moved"] for m in moved_some}
        how = "up and down" if len(ways) == 2 else "all up" if ways == {"rose"} else "all down"
        where = ("at one load" + (" each" if len(some) > 1 else "")
                 if all(sum(m["server"] == sid for m in moved_some) == 1 for sid in some) else "at some loads only")
        said += f"; {ids(some)} moved it beyond them {where} (by {span(min(pcts), max(pcts), '.0f')} %, {how})"
    if none:
        said += f"{', and' if some else ';'} {ids(none)} at none"
    return said[0].upper() + said[1:] + "."

# ---------------------------------------------------------------------------------------------- jvm-memory

JVM_READINGS = {"PSS KiB": "pss_rest_kib", "live heap KiB": "jvm_heap_live_kib", "committed KiB": "jvm_committed_kib",
                "thread stacks KiB": "jvm_stack_kib", "Other KiB": "jvm_other_kib", "threads": "jvm_threads"}
JVM_SHORT = {"live heap KiB": "heap", "thread stacks KiB": "stack", "Other KiB": "other", "committed KiB": "native",
             "PSS KiB": "pss", "threads": "threads"}
# the Java servers the page's prose names, glued "n/a" where a run lacks them
JVM_NAMED = ("java-thread", "java-vthread", "java-nio", "java-netty", "java-mina", "java-nio2")
JT, VT = "java-thread", "java-vthread"


def jvm_slopes(jm, *starts: int) -> list[pd.DataFrame]:
    """For each level in `starts`, each reading of JVM_READINGS per idle connection added in the segment that
    starts there: one row per server, the median of the repeats."""
    marginals = {name: jm.marginal(col) for name, col in JVM_READINGS.items()}
    return [pd.DataFrame({name: m[m["from"] == start].set_index("server")["slope"] for name, m in marginals.items()})
            for start in starts]


def jvm_memory(jm) -> dict:
    """What holds a Java server's idle connections, per connection added between the last two levels: each
    reading per server (mcj_<reading>_<server>), a platform thread's total against a virtual thread's heap
    (mcj_jt_total, mcj_jt_vt_x), how steady the live heap stayed (mcj_heap_steady) and where PSS grew by less
    than the live heap (mcj_pss_below); the levels, repeats and outliers."""
    levels = _levels(jm.df)
    late, early, first, *segments = jvm_slopes(jm, levels[-2], levels[1], 0, *levels[:-1])
    out = {"mcj_levels": listing(f"{n:,}" for n in levels),
           "mcj_repeats": str(int(jm.df.groupby(["server", "idle_conns"]).repeat.nunique().min())),
           "mcj_seg": f"{levels[-2]:,} to {levels[-1]:,}", "mcj_seg_early": f"{levels[1]:,} to {levels[2]:,}"
           if len(levels) > 2 else NA, "mcj_first": f"{levels[1]:,}", "mcj_outliers": f"{int(jm.df.outlier.sum())}"}
    for s in dict.fromkeys([*late.index, *JVM_NAMED]):
        for name, short in JVM_SHORT.items():
            v = late.loc[s, name] if s in late.index else NAN
            out[f"mcj_{short}_{key(s)}"] = number(v, ".2f" if short == "threads" else ",.1f")
    below = late[late["PSS KiB"] < 0.5 * late["live heap KiB"]].index
    out["mcj_pss_below"] = markdown(listing(f"`{s}`" for s in below)) if len(below) else "none"
    out["mcj_pss_below_n"] = words(len(below))
    steady = pd.concat([seg["live heap KiB"] for seg in segments], axis=1)
    out["mcj_heap_steady"] = number((100 * (steady.max(axis=1) / steady.min(axis=1) - 1)).max(), ".0f")
    has = {JT, VT} <= set(late.index)
    jt_total = late.loc[JT, "live heap KiB"] + late.loc[JT, "committed KiB"] if has else NAN
    out["mcj_jt_total"] = number(jt_total)
    out["mcj_jt_vt_x"] = number(jt_total / late.loc[VT, "live heap KiB"] if has else NAN, ".1f")
    if checks(jm):
        _jvm_claims(late, early, first, steady, below)
    return out


def _jvm_claims(late, early, first, steady, below) -> None:
    others = [s for s in late.index if s != JT]
    if JT in late.index:
        claim(0.99 <= late.loc[JT, "threads"] <= 1.01 and late.loc[JT, "thread stacks KiB"] > 4,
              "java-thread holds each idle connection in a platform thread of its own, with its stack",
              threads=late.loc[JT, "threads"], stack=late.loc[JT, "thread stacks KiB"])
    claim(bool((late.loc[others, "threads"].abs() < 0.01).all() and
               (late.loc[others, "thread stacks KiB"].abs() < 0.1).all()),
          "no other Java model adds a platform thread or a stack per idle connection",
          threads=late.loc[others, "threads"].round(3).to_dict())
    claim(bool((late["live heap KiB"] > 4).all() and (early["live heap KiB"] > 4).all()),
          "every Java model's live heap grew with its idle connections, in both segments",
          late=late["live heap KiB"].round(1).to_dict(), early=early["live heap KiB"].round(1).to_dict())
    claim(len(below) >= 1, "some model's PSS grew by less than half its live heap in the last segment",
          pss=late["PSS KiB"].round(1).to_dict(), heap=late["live heap KiB"].round(1).to_dict())
    claim(bool((first["PSS KiB"] > first["live heap KiB"]).all()), "from none to the first level, every model's PSS "
          "grew faster than its live heap", pss=first["PSS KiB"].round(1).to_dict(),
          heap=first["live heap KiB"].round(1).to_dict())
    selectors = [s for s in late.index if s not in (JT, VT)]
    claim(bool(late.loc[selectors, "live heap KiB"].between(8.2, 12).all()), "the selector models' idle connection "
          "holds 8 to 12 KiB of live heap", heap=late.loc[selectors, "live heap KiB"].round(1).to_dict())
    claim(bool((steady.max(axis=1) < 1.15 * steady.min(axis=1)).all()), "each model's live heap per connection "
          "stayed within 15 % across the segments", ratio=(steady.max(axis=1) / steady.min(axis=1)).round(3).to_dict())
    if {JT, VT} <= set(late.index):
        claim(late.loc[VT, "committed KiB"] < 0.1 * late.loc[VT, "live heap KiB"],
              "java-vthread's idle connections grew its live heap, not its native memory",
              heap=late.loc[VT, "live heap KiB"], native=late.loc[VT, "committed KiB"])


# ---------------------------------------------------------------------------------------------- c100k

def ck_servers(ck) -> list[str]:
    """The servers of the c100k run, in its plan's order."""
    return list(ck.meta["plan"]["servers"])


def spread(ck, sid: str) -> str:
    """How `sid` spreads its connections: "workers" (worker processes), "one" (one process) or its own word."""
    return ck.meta["servers"][sid]["spread"]


def multi(ck) -> list[str]:
    """The servers that hold their connections in worker processes."""
    return [s for s in ck_servers(ck) if spread(ck, s) == "workers"]


def single(ck) -> list[str]:
    """The servers that hold their connections in one process."""
    return [s for s in ck_servers(ck) if spread(ck, s) == "one"]


def _rows(ck, sid: str, n: int | None = None, ok: bool = False) -> pd.DataFrame:
    C = ck.df
    r = C[C.server == sid]
    r = r if n is None else r[r.idle_conns == n]
    return r[r.ok] if ok else r


def top_asked(ck, sid: str) -> int:
    """The highest level `sid` was asked to hold (the levels above it were skipped for its limit); 0 if none."""
    r = _rows(ck, sid)
    return int(r.idle_conns.max()) if len(r) else 0


def held_all(ck, sid: str, n: int) -> bool:
    """Every repeat of `sid` at level n held and had answered every idle connection asked."""
    r = _rows(ck, sid, n)
    return len(r) > 0 and bool((r.ok & (r.idle_open == n) & (r.idle_answered == n)).all())


def held_range(ck, sid: str) -> str:
    """The idle connections `sid` held at the highest level it was asked for, over the repeats ("18,003 to
    19,000", or one number)."""
    held = _rows(ck, sid, top_asked(ck, sid)).idle_open
    return span(held.min(), held.max(), ",.0f")


def per_conn(ck, sid: str, col: str, top: int | None = None) -> float:
    """`col` per idle connection held, from none to the highest level `sid` was asked for (median of the
    repeats); NaN where a repeat lacks either end."""
    top = top_asked(ck, sid) if top is None else top
    r = _rows(ck, sid, ok=True).set_index(["repeat", "idle_conns"])
    got = [(r.loc[(k, top), col] - r.loc[(k, 0), col]) / held
           for k in ck.df.repeat.unique() if (k, top) in r.index and (k, 0) in r.index
           if (held := r.loc[(k, top), "idle_open"] - r.loc[(k, 0), "idle_open"]) > 0]  # none held: no cost per one
    return float(pd.Series(got, dtype=float).median()) if got and top else NAN


def busy(ck, sid: str, n: int) -> float:
    """The busy connections' requests per second of `sid` at level n (median of the repeats that held)."""
    return float(_rows(ck, sid, n, ok=True).rps.median())


def stops_for(ck, sid: str) -> str:
    """Why `sid` was asked no more: the limit its first skipped level names, or "held every level"."""
    skips = [p for p in ck.meta.get("skipped_points", []) if p["server"] == sid]
    if not skips:
        return "held every level"
    why = min(skips, key=lambda p: p["idle_conns"])["why"]
    return "kernel.pid_max" if "pid_max" in why else "descriptors per process"


def processes(ck, sid: str):
    """The worker processes that held `sid`'s connections at its highest level (median), or its spread."""
    if spread(ck, sid) != "workers":
        return spread(ck, sid)
    return int(_rows(ck, sid, top_asked(ck, sid)).workers_holding.median())


def c100k(ck) -> dict:
    """The deep dive on 100,000 idle connections: every part of it (c100k_levels, c100k_kernel, c100k_busy)."""
    return c100k_levels(ck) | c100k_kernel(ck) | c100k_busy(ck)


def c100k_levels(ck) -> dict:
    """The levels asked and why each server was asked no more (ck_levels, ck_top, ck_single_top, ck_one_why,
    ck_skipped_levels, ck_fork_*), the worker processes and what each held (ck_workers, ck_worker_min/max), and
    what nginx with one worker kept (ck_ng_said and its numbers)."""
    C, nofile = ck.df, ck.meta["limits"]["nofile"]["soft"]
    levels, pools = _levels(C), ck.meta["plan"]["pools"]
    top, many, one = levels[-1], multi(ck), single(ck)
    single_top = max((n for n in levels if n + 40 + 64 <= nofile), default=0)
    top_rows = C[C.server.isin(many) & (C.idle_conns == top)]
    skip = [p for p in ck.meta.get("skipped_points", []) if p["server"] in one]
    fork_why = [p["why"] for p in ck.meta.get("skipped_points", []) if p["server"] == "c-fork"]
    fk = _rows(ck, "c-fork", top_asked(ck, "c-fork"))
    out = {"ck_nofile": f"{nofile:,}", "ck_levels": listing(f"{n:,}" for n in levels), "ck_top": f"{top:,}",
           "ck_repeats": str(int(C.groupby(["server", "idle_conns"]).repeat.nunique().min())),
           "ck_workers": str(pools[many[0]]) if len({pools[s] for s in many}) == 1
           else listing(f"{pools[s]} ({s})" for s in many) or NA,
           "ck_single_n": words(len(one)), "ck_single_top": f"{single_top:,}",
           "ck_worker_min": number(top_rows.worker_conns_min.min()),
           "ck_worker_max": number(top_rows.worker_conns_max.max()),
           "ck_skipped_levels": listing(f"{n:,}" for n in sorted({p["idle_conns"] for p in skip})) or "none",
           "ck_one_why": skip[0]["why"] if skip else "no level was skipped",
           "ck_fork_why": fork_why[0] if fork_why else "no level was skipped",
           "ck_fork_top": number(top_asked(ck, "c-fork") if len(fk) else NAN), "ck_fork_held": held_range(ck, "c-fork"),
           "ck_fork_answered": span(fk.idle_answered.min(), fk.idle_answered.max(), ",.0f")}
    out |= _nginx_one_worker(ck, single_top)
    if checks(ck):
        _c100k_level_claims(ck, top, single_top, nofile, skip)
    return out


def _nginx_one_worker(ck, single_top: int) -> dict:
    """What nginx with one worker kept of the connections it answered, against its worker_connections."""
    # the harness configures worker_connections as the descriptor limit less 100 (servers/manifest.py)
    wc = ck.meta["limits"]["nofile"]["hard"] - 100
    ng = _rows(ck, "nginx", single_top)
    free = wc - ng.idle_open - 40  # connections nginx had free with the busy ones still open
    drained = len(ng) > 0 and bool((ng.idle_open < single_top).all())
    said = (f"answered all {single_top:,} but kept only {held_range(ck, 'nginx')} of them: with fewer than a "
            f"sixteenth of its `worker_connections` free ({wc:,}, which the harness sets to the descriptor limit "
            f"less 100), nginx closes idle keep-alive connections in advance, 32 at a time, to keep room for new ones "
            f"(since 1.19.2), and it stopped with {span(free.min(), free.max(), ',.0f')} free, a sixteenth being "
            f"{wc / 16:,.0f}" if drained else f"held all {single_top:,}")
    if drained and checks(ck):
        claim(bool(((free >= wc / 16) & (free <= wc / 16 + 64)).all()), "nginx stopped closing idle connections "
              "once a sixteenth of its connections were free", free=free.tolist(), sixteenth=wc / 16)
    return {"ck_ng_held": held_range(ck, "nginx"), "ck_ng_wc": f"{wc:,}",
            "ck_ng_free": span(free.min(), free.max(), ",.0f"), "ck_ng_16": f"{wc / 16:,.0f}",
            "ck_ng_said": markdown(said)}


def _c100k_level_claims(ck, top: int, single_top: int, nofile: int, skip: list) -> None:
    pools = ck.meta["plan"]["pools"]
    for s in multi(ck):
        at_top = _rows(ck, s, top)
        claim(held_all(ck, s, top), f"{s} held and answered every idle connection at the highest level, in every "
              "repeat", held=at_top.idle_open.tolist())
        claim(bool((at_top.workers_holding == pools[s]).all() and (at_top.worker_conns_max + 64 <= nofile).all()),
              f"{s}'s connections were spread over every worker, none near the limit",
              holding=at_top.workers_holding.tolist(), most=at_top.worker_conns_max.tolist())
    models = [s for s in single(ck) if s != "nginx"]
    claim(all(held_all(ck, s, single_top) for s in models), "every single-process model of the book held every idle "
          "connection it was asked for, up to as many as one process may have",
          held={s: held_range(ck, s) for s in models})
    why = [p["why"] for p in skip]
    claim(all("file descriptors in one process" in w for w in why), "every single-process model's higher levels "
          "were skipped for the descriptor limit", why=sorted(set(why)))


def _loops(ck) -> list[str]:
    return multi(ck) + [s for s in ("nginx", "c-epoll") if s in single(ck)]


def c100k_kernel(ck) -> dict:
    """The kernel's share of an idle connection: slab per connection for the event loops (ck_slab), its parts in
    the workers' epoll loop (ck_w, ck_parts, ck_parts_sum), the socket buffers (ck_buf_max), that server's own
    memory and its total at the top level (ck_pss_w, ck_slab_w, ck_total_mib), and a task's kernel stack, slab
    and page tables (ck_stack, ck_fork_slab, ck_fork_pt)."""
    loops, many = _loops(ck), multi(ck)
    top = _levels(ck.df)[-1]
    slab = pd.Series({s: per_conn(ck, s, "k_slab_kib") for s in loops}, dtype=float)
    w = "c-epoll-workers" if "c-epoll-workers" in many else (many or [NA])[0]
    parts = {"TCP socket": "k_tcp_sock_kib", "socket inode": "k_sock_inode_kib", "epoll entry": "k_epoll_kib",
             "open file and its dentry": "k_file_kib"}
    part = {name: per_conn(ck, w, col) if w in many else NAN for name, col in parts.items()}
    buf = pd.Series({s: per_conn(ck, s, "k_tcp_mem_kib") for s in loops}, dtype=float)
    pss_w, slab_w = (per_conn(ck, w, c) if w in many else NAN for c in ("pss_rest_kib", "k_slab_kib"))
    tasks = [s for s in ("c-thread", "c-fork", "java-thread") if s in ck_servers(ck)]
    stack = pd.Series({s: per_conn(ck, s, "k_kernel_stack_kib") for s in tasks}, dtype=float)
    fork = "c-fork" in ck_servers(ck)
    out = {"ck_slab": span(slab.min(), slab.max(), ".1f"),
           "ck_parts": listing(f"{name} {number(v, '.1f')} KiB" for name, v in part.items()),
           "ck_parts_sum": number(sum(part.values()), ".1f"), "ck_w": markdown(f"`{w}`"),
           "ck_buf_max": number(1024 * buf.max(), ".0f"), "ck_pss_w": number(pss_w, ".1f"),
           "ck_slab_w": number(slab_w, ".1f"), "ck_total_mib": number((pss_w + slab_w / 2) * top / 1024),
           "ck_stack": markdown(each({f"`{s}`": v for s, v in stack.items()}, ".1f", at=" at ") if len(stack) else NA),
           "ck_fork_pt": number(per_conn(ck, "c-fork", "k_page_tables_kib") if fork else NAN, ".0f"),
           "ck_fork_slab": number(per_conn(ck, "c-fork", "k_slab_kib") if fork else NAN, ".0f")}
    if checks(ck) and len(slab):
        socks = pd.Series({s: per_conn(ck, s, "k_tcp_inuse") for s in many}, dtype=float)
        claim(slab.max() < 1.3 * slab.min(), "the kernel's slab grew by about as much per connection for every event "
              "loop", slab=slab.round(2).to_dict())
        claim(bool(socks.between(1.95, 2.05).all()), "two TCP sockets per connection, both on this machine",
              sockets=socks.round(3).to_dict())
        claim(buf.max() < 0.25 * slab.min(), "idle sockets' buffers hold a small part of what their slab objects do",
              buffers=buf.round(3).to_dict(), slab=slab.min())
        claim(bool(stack.between(15, 17.5).all()), "each thread or process per connection costs the kernel a 16 KiB "
              "stack", stack=stack.round(2).to_dict())
        if fork:
            claim(per_conn(ck, "c-fork", "k_slab_kib") > 2 * slab.max(), "a process per connection costs the "
                  "kernel's slab several times what a socket does", fork=per_conn(ck, "c-fork", "k_slab_kib"),
                  loops=slab.max())
    return out


def _median(ck, sid: str, n: int, col: str) -> float:
    return float(_rows(ck, sid, n, ok=True)[col].median())


def per_gen_core(ck, sid: str, n: int) -> float:
    """Requests per second of the generator's CPU: what one core of wrk (and the kernel work it does) yields."""
    r = _rows(ck, sid, n, ok=True)
    return float((r.rps / (r.client_cpu_pct / 100)).median())


def c100k_busy(ck) -> dict:
    """What 100,000 idle connections did to the 40 busy ones of the worker servers: their rate with none and at
    the top (ck_busy, ck_busy_said), why (ck_busy_why: the server or the generator), and the noisy runs
    (ck_noisy)."""
    C, many = ck.df, multi(ck)
    top = _levels(C)[-1]
    drops = {s: _ratio(busy(ck, s, top), busy(ck, s, 0)) for s in many}
    fewer = min(drops.values(), default=NAN) < 0.9
    def every_fewer(s):
        return _rows(ck, s, top, ok=True).rps.max() < _rows(ck, s, 0, ok=True).rps.min()
    all_fewer = max(drops.values(), default=NAN) < 0.9 and all(every_fewer(s) for s in many)
    said = ("fewer" if max(drops.values(), default=NAN) < 0.9 else "more" if min(drops.values(), default=NAN) > 1.1
            else "about as many or fewer" if fewer else "about as many")
    noisy = sorted(set(C[C.noisy].server))
    out = {"ck_noisy": markdown(f"Runs flagged noisy (something beside the server and the generator used over a "
                                f"quarter of a core: {len(C[C.noisy])} of {len(C)}) were those of {listing(noisy)}: "
                                "their busy figures are the least certain." if noisy else "No run was flagged noisy."),
           "ck_busy": "; ".join(f"{s} {number(busy(ck, s, 0))} with none and {number(busy(ck, s, top))} at {top:,}"
                                for s in many) or NA,
           "ck_busy_said": f"{said} requests per second at the top level than with none"
           + (", in every repeat" if all_fewer else ""),
           "ck_busy_why": markdown(_busy_why(ck, top, fewer))}
    if fewer and checks(ck):
        claim(bool(C[C.server.isin(many) & C.ok].generator_bound.mean() > 0.5), "the generator was the limit in "
              "most runs of the multi-process servers", bound=C[C.server.isin(many)].generator_bound.tolist())
    return out


def _busy_why(ck, top: int, fewer: bool) -> str:
    """Why the busy connections got fewer requests through, as the data say: the servers' CPU or the generator's."""
    if not fewer:
        return "An epoll loop does not visit idle connections, and its busy ones did not pay for them."
    C, many = ck.df, multi(ck)
    srv_pct = C[C.server.isin(many) & (C.idle_conns == top) & C.ok].server_cpu_pct
    srv_us = {s: (_median(ck, s, 0, "server_cpu_us_per_req"), _median(ck, s, top, "server_cpu_us_per_req"))
              for s in many}
    gen = {s: (per_gen_core(ck, s, 0), per_gen_core(ck, s, top)) for s in many}
    client_side = (srv_pct.max() < 90 and all(b < 1.25 * a for a, b in srv_us.values())
                   and all(b < 0.9 * a for a, b in gen.values()))
    if not client_side:
        return ("An epoll loop does not visit idle connections, so this is not the scan that slowed `poll` above; "
                "these runs do not say what did.")
    srv_moved = listing(f"{s} {span(a, b, '.1f')}" for s, (a, b) in srv_us.items())
    gen_moved = listing(f"{s} {span(a / 1000, b / 1000, ',.0f', ' thousand')}" for s, (a, b) in gen.items())
    return (f"The servers were not what slowed: at {top:,} they used {span(srv_pct.min(), srv_pct.max(), '.0f')} % "
            f"of their core, and their CPU per request hardly moved (µs, from none to the top: {srv_moved}). The "
            f"generator was the limit, and it got fewer requests out of each second of its CPU (per second of "
            f"`wrk`'s CPU, from none to the top: {gen_moved}). On loopback the sender's core also does the receiving "
            "side's work in the kernel, so that is where the sockets on the machine can cost: an epoll loop does "
            "not visit its idle connections, but every packet is looked up among all the machine's sockets, with "
            "more of the kernel's memory to miss in the caches. These runs do not break the generator's CPU down "
            "further.")


# ---------------------------------------------------------------------------------------------- accept-spread

SHARES = ("reuseport", "exclusive", "herd")


def accept_frame(acc) -> pd.DataFrame:
    """The runs that held, with the page's table's columns: most/fewest, ready per accept, accept found nothing,
    switches per accept."""
    A = acc.df[acc.df.ok].copy()
    A["most/fewest"] = A.worker_conns_max / A.worker_conns_min
    A["ready per accept"] = A.listen_wakeups / A.accepted_total
    A["accept found nothing"] = A.listen_empty
    A["switches per accept"] = A.raise_vcsw / A.accepted_total
    return A


def _first_worker_most(row) -> bool:
    """The worker that registered first (the lowest pid: the parent forks them in order) held the most."""
    held = [int(x) for x in row.worker_conns.split()]
    return held[0] == max(held)


def accept_spread(acc) -> dict:
    """How the kernel spread new connections over the workers, per way of sharing the port: the busiest worker
    against the least busy (acc_ratio_<share>), where EPOLLEXCLUSIVE favoured the first worker (acc_ex_*), what
    accept found with the plain socket (acc_herd_*), the context switches per connection (acc_sw, acc_sw_herd,
    acc_sw_said) and the herd's extra switches over a socket per worker (acc_extra, exercise 6)."""
    A = accept_frame(acc)
    order = [m for m in SHARES if m in set(A.share)]
    workers = sorted({len(w.split()) for w in A.worker_conns})  # one count per worker process
    W = workers[0] if workers else 0
    ratio = A.groupby("share")["most/fewest"]
    ex = A[A.share == "exclusive"]
    first = ex[ex.apply(_first_worker_most, axis=1)] if len(ex) else ex
    even = ex.loc[ex["most/fewest"].idxmin()] if len(ex) else None
    by_share = A.groupby("share")["switches per accept"]
    sw = by_share.median()
    extra = A.pivot_table(index="repeat", columns="share", values="switches per accept")
    herds = (extra["herd"] - extra["reuseport"] if {"herd", "reuseport"} <= set(extra.columns)
             else pd.Series(dtype=float))  # per repeat: the herd's switches per connection beyond a socket each
    def has(*shares):
        return set(shares) <= set(order)
    herd_more = has("herd", "reuseport") and by_share.min()["herd"] > 1.2 * by_share.max()["reuseport"]
    out = {"acc_n": number(A.idle_conns.max()), "acc_workers": words(W), "acc_workers_idle": words(max(W - 1, 0)),
           "acc_repeats": words(int(A.groupby("share").repeat.nunique().min())) if len(A) else NA,
           "acc_of_repeats": _of_repeats(int(A.groupby("share").repeat.nunique().min())) if len(A) else NA,
           "acc_ex_first_n": words(len(first)) if len(first) else "none", "acc_ex_n": words(len(ex)),
           "acc_ex_first": listing(f"{int(r.worker_conns.split()[0]):,}" for r in first.itertuples()) or "none",
           "acc_ex_even": number(even["most/fewest"] if even is not None else NAN, ".2f"),
           "acc_ex_even_sw": number(even["switches per accept"] if even is not None else NAN, ".2f"),
           "acc_ex_skew_sw": listing(f"{v:.2f}" for v in ex[ex.index != getattr(even, "name", None)]
                                     ["switches per accept"]) or NA,
           "acc_herd_empty": number(A[A.share == "herd"].listen_empty.max()),
           "acc_herd_accepted": number(A[A.share == "herd"].accepted_total.min()),
           "acc_sw": listing(f"{m} {sw[m]:.2f}" for m in order) or NA,
           "acc_sw_herd": span(by_share.min().get("herd"), by_share.max().get("herd"), ".1f"),
           "acc_sw_said": markdown("the plainly shared socket cost the workers more of them than a socket each, in "
                                   "every repeat" if herd_more else "the plainly shared socket did not cost the "
                                   "workers more of them than a socket each"),
           "acc_extra": span(herds.min(), herds.max(), ".1f") if len(herds) else NA}
    out |= {f"acc_ratio_{m}": span(ratio.min().get(m), ratio.max().get(m), ".1f") for m in SHARES}
    if checks(acc):
        _accept_claims(A, workers, ratio, ex, first, even, herds, has)
    return out


def _accept_claims(A, workers, ratio, ex, first, even, herds, has) -> None:
    claim(len(workers) == 1, "every accept-spread run had the same number of workers", workers=workers)
    if has("reuseport", "exclusive"):
        claim(ratio.max()["reuseport"] < ratio.min()["exclusive"], "SO_REUSEPORT spread the connections more evenly "
              "than EPOLLEXCLUSIVE in every repeat", reuseport=ratio.max()["reuseport"],
              exclusive=ratio.min()["exclusive"])
    if len(ex):
        claim(len(first) >= 1, "with EPOLLEXCLUSIVE the first worker held the most connections in some repeat",
              held=ex.worker_conns.tolist())
        claim(even["switches per accept"] == ex["switches per accept"].min(), "the most even EPOLLEXCLUSIVE repeat "
              "was the one whose workers slept least per connection", ratio=ex["most/fewest"].tolist(),
              switches=ex["switches per accept"].round(2).tolist())
    herd = A[A.share == "herd"]
    if len(herd):
        claim(herd.listen_empty.max() < 0.05 * herd.accepted_total.min(), "with a plainly shared socket, accept "
              "found nothing for under 5 % of the connections", empty=herd.listen_empty.max(),
              accepted=herd.accepted_total.min())
    if len(herds):
        claim(herds.max() < 7, "the herd cost fewer than seven switches per connection beyond a socket per worker",
              extra=herds.round(2).tolist())


def _of_repeats(n: int) -> str:
    """Where a number comes from, by how many repeats there were: "the medians of the three repeats", "one repeat"."""
    return "one repeat" if n == 1 else f"the medians of the {words(n)} repeats"


def values(idle, ten, uring) -> dict:
    """Every value the page's first cell glues, merged (its claims checked)."""
    return {**idle_connections(idle), **ten_thousand(ten), **io_uring(uring)}
