"""The analysis behind book/synthesis/side-by-side.md: every model in one run (`scale`), read against nginx.

Each function takes the page's datasets (`scale`, the previous chapter's `idle-connections`, `syscalls`,
`jvm-memory`) and returns {glue name: value} for one part of the page, checking the claims its sentences make.
A server the run did not measure (a smoke run measures four) reads n/a, never a KeyError.
"""
from __future__ import annotations

import math

import pandas as pd

from iobench import registry
from iobench.book.claims import claim
from iobench.book.pages import key
from iobench.book.phrases import NA, grouped, ids, listing, markdown, span, span_of, words
from iobench.data.report import number
from iobench.servers import manifest

NaN = float("nan")
KA = dict(tool="wrk", mode="keepalive", work_ms=0.0, pipeline=1)  # hello-world, keep-alive, one request per write

# The page's table: each column the median over the repeats of one summary column at one point of the run
# ("served of 10,000": the summary keeps the fewest served in any repeat). The page builds the same table,
# visible, for the servers the run measured.
COLUMNS = {
    "CPU µs/req, 1 conn": ("cpu_us_per_req", dict(connections=1)),
    "CPU µs/req, 1,000": ("cpu_us_per_req", dict(connections=1000)),
    "CPU µs/req, pipelined": ("cpu_us_per_req", dict(connections=40, pipeline=16)),
    "CPU µs/req, close": ("cpu_us_per_req", dict(connections=1000, mode="close")),
    "p99 ms, 1,000": ("p99_ms", dict(connections=1000)),
    "served of 10,000": ("conns_served", dict(connections=10_000)),
    "req/s, 20 ms, 1,000": ("rps", dict(connections=1000, work_ms=20.0)),
    "threads, 1,000": ("threads", dict(connections=1000)),
    "switches/req, 1,000": ("csw_per_req", dict(connections=1000)),
}
IDLE = "KiB/idle conn added"
PIPE, CLOSE, KA1000 = "CPU µs/req, pipelined", "CPU µs/req, close", "CPU µs/req, 1,000"

BLOCKING_C = ("c-thread", "c-fork", "c-prefork", "c-threadpool")
LOOPS = ("nginx", "c-select", "c-poll", "c-epoll", "c-epoll-reuseport", "java-nio", "java-nio-multi", "java-netty")
URING = ("c-uring", "c-uring-multishot")
JAVA_BLOCKING = ("java-thread", "java-threadpool")
HANDOFF = ("java-nio-workers", "java-nio2", "java-vthread")
SYSCALLS = {"wait": "wait", "io_uring_enter": "sc_io_uring_enter_per_req", "epoll_ctl": "sc_epoll_ctl_per_req",
            "read": "sc_read_per_req", "write": "sc_write_per_req", "futex": "sc_futex_per_req", "other": "rest",
            "all": "syscalls_per_req"}



def measured_order(scale) -> list[str]:
    """The servers the run measured, in the order it ran them (nginx first, then C, then Java)."""
    return list(dict.fromkeys(scale.summary().server))


def at_point(S: pd.DataFrame, column: str, servers, **where) -> pd.Series:
    """`column` of the summary at one hello-world point (KA, updated by `where`), per server (NaN where none)."""
    sel = S
    for k, v in {**KA, **where}.items():
        sel = sel[sel[k] == v]
    if sel.server.duplicated().any():
        raise KeyError(f"more than one row per server at {where}")
    return sel.set_index("server")[column].reindex(list(servers)).astype(float)


def idle_added(idle, servers) -> pd.Series:
    """KiB one more idle connection added to each server, between the idle study's two highest levels (NaN where
    it has none)."""
    return idle_added_in(idle.marginal(), servers)


def idle_added_in(m: pd.DataFrame, servers) -> pd.Series:
    """The slope of each server's highest segment in a dataset's marginal() (NaN where it has none)."""
    highest = m[m["to"] == m.groupby("server")["to"].transform("max")]
    return highest.set_index("server")["slope"].reindex(list(servers)).astype(float)


_last: list = []  # the last table built, with the datasets it was built from (several parts of the page read it)


def glance(scale, idle, servers=None) -> pd.DataFrame:
    """The page's table, one row per server (every server of the plan unless `servers`), indexed by server."""
    servers = tuple(servers or registry.get("scale").servers)
    if _last and _last[0] is scale and _last[1] is idle and _last[2] == servers:
        return _last[3]
    S = scale.summary()
    g = pd.DataFrame({name: at_point(S, column, servers, **where) for name, (column, where) in COLUMNS.items()})
    g[IDLE] = idle_added(idle, servers)
    g.index.name = "server"
    _last[:] = [scale, idle, servers, g]
    return g


def measured(scale) -> dict:
    """How the run was made: servers, repeats, durations, runs, failures, the file limit."""
    plan, profile = scale.meta["plan"], scale.meta["profile"]
    ten = [p for p in plan["points"] if p["connections"] == 10_000]
    return {
        "sx_servers": f"{len(measured_order(scale))}",
        "sx_measured_s": f"{plan['measured_s']:g}",
        "sx_warmup_s": f"{plan['warmup_s']:g}",
        "sx_ten_s": f"{min(ten[0]['measured_s'] or plan['measured_s'], profile['duration_s']):g}" if ten else NA,
        "sx_repeats": words(int(scale.df.repeat.nunique())),
        "sx_runs": f"{len(scale.df):,}",
        "sx_failed": f"{int((~scale.df.ok).sum()):,}",
        "sx_nofile": f"{scale.meta['limits']['nofile']['soft']:,}",
    }


def outliers(scale) -> dict:
    """The repeats the harness flagged (more than 20 % from their point's median rate), by what marks them:
    generator-bound, noisy (and how many late in the run), CPU per request moved by 20 % or more; and how far the
    unmarked rest moved their CPU per request (whole per cents, floored: all below 20)."""
    df = scale.df
    cost = df[df.ok].groupby(["server", "mode", "connections", "pipeline", "work_ms"]).server_cpu_us_per_req
    out = df.assign(cpu_vs_median=df.server_cpu_us_per_req / cost.transform("median"))[df.outlier]
    started = pd.to_datetime(df.started_at, utc=True)
    late = (started.max() - started[out[out.noisy].index]).dt.total_seconds() <= 15 * 60
    moved = (out.cpu_vs_median - 1).abs() >= 0.2
    rest = out[~(out.generator_bound | out.noisy | moved)]
    shift = (100 * (rest.cpu_vs_median - 1).abs()).apply(math.floor) if len(rest) else pd.Series(dtype=float)
    return {
        "sx_outliers": f"{len(out)}",
        "sx_out_bound": f"{int(out.generator_bound.sum())}",
        "sx_out_noisy": f"{int(out.noisy.sum())}",
        "sx_out_noisy_late": f"{int(late.sum())}",
        "sx_out_cpu": f"{int(moved.sum())}",
        "sx_out_rest": f"{len(rest)}",
        "sx_out_rest_range": span_of(shift, ".0f", " %"),
        "sx_out_said": markdown(_outliers_said(len(df), len(out), int(out.generator_bound.sum()),
                                               int(out.noisy.sum()), int(late.sum()), int(moved.sum()), len(rest),
                                               span_of(shift, ".0f", " %"))),
    }


def _outliers_said(runs: int, k: int, bound: int, noisy: int, late: int, cpu: int, rest: int, rest_by: str) -> str:
    """The paragraph on the flagged runs, in every case the data can produce (none flagged, one, a mark that no run
    carries): how many were flagged, the marks that explain them, and how far the unmarked rest moved."""
    if k == 0:
        return f"The harness flagged none of the {runs:,} runs: every one answered within 20 % of its point's median."
    one = k == 1
    head = (f"The harness flagged one of the {runs:,} runs as more than 20 % from its point's median requests per "
            "second." if one else
            f"The harness flagged {k:,} of the {runs:,} runs as more than 20 % from their point's median requests per "
            "second.")

    def were(n: int) -> str:
        return "it was" if one else f"{n:,} {'was' if n == 1 else 'were'}"
    late_said = ("" if not late else "; it ran in the run's last quarter of an hour" if noisy == 1 else
                 f"; {'all' if late == noisy else f'{late:,}'} of those in the run's last quarter of an hour")
    marks = []
    if bound:
        marks.append(f"{were(bound)} generator-bound (the rate is `wrk`'s)")
    if noisy:
        marks.append(f"{were(noisy)} noisy (something beside the server and `wrk` used more than a quarter of a core"
                     f"{late_said})")
    if cpu:
        whose = ("the server's own CPU per request moved" if one else
                 f"in {cpu:,} the server's own CPU per request moved")
        marks.append(whose + " by 20 % or more with the rate")
    said = [head]
    if marks:
        said.append(("" if one else "Of these, ") + listing(marks) + ".")
        said[-1] = said[-1][0].upper() + said[-1][1:]
    if rest == 0:
        said.append("" if one else "Each flagged run carries at least one of these marks.")
    elif one:
        said.append(f"It carries none of the marks the harness sets: its CPU per request moved by {rest_by}, below the "
                    f"20 % line.")
    elif rest == k:
        said.append(f"None of them carries a mark the harness sets: they moved their CPU per request by {rest_by}, "
                    f"below the 20 % line.")
    else:
        which = "the one that has none moved its" if rest == 1 else f"the {rest:,} that have none moved their"
        said.append(f"A run may have more than one of these marks; {which} CPU per request by {rest_by}, below the "
                    f"20 % line.")
    return " ".join(x for x in said if x)


def _noisy_said(k: int, n: int) -> str:
    """The sentence on the syscalls runs flagged noisy (the claim beside it checks that their counts held)."""
    if k == 0:
        return f"The harness flagged none of its {n:,} runs as noisy."
    them = ("its counts are within 10 % of its server's median, which includes it" if k == 1 else
            "their counts are within 10 % of their server's median, which includes them")
    return (f"The harness flagged {k:,} of its {n:,} runs as noisy (something else used the machine meanwhile); "
            f"{them}.")


def per_server(scale, idle) -> dict:
    """Every server of the plan's cells of the table that the prose quotes (sx_pipe_c_epoll, sx_close_nginx, ...),
    n/a where the run has none; and the idle study's two highest levels."""
    g = glance(scale, idle)
    said = {"sx_pipe": (PIPE, ".2f"), "sx_close": (CLOSE, ",.0f"), "sx_c1": ("CPU µs/req, 1 conn", ",.0f"),
            "sx_c1000": (KA1000, ",.1f"), "sx_work": ("req/s, 20 ms, 1,000", ",.0f"), "sx_idle": (IDLE, ",.1f"),
            "sx_threads": ("threads, 1,000", ",.0f"), "sx_served": ("served of 10,000", ",.0f")}
    values = {f"{prefix}_{key(sid)}": number(g.loc[sid, column], spec)
              for sid in g.index for prefix, (column, spec) in said.items()}
    levels = sorted(idle.marginal()["to"].unique())[-2:]
    values["sx_idle_seg"] = f"from {levels[0]:,} to {levels[1]:,}" if len(levels) == 2 else NA
    return values


def pipelined(scale) -> dict:
    """16 requests per write: the cheapest servers (within a quarter of the cheapest median, their ranges
    overlapping), the dearest, those against which wrk saturated its core; claims checked."""
    S = scale.summary()
    g = at_point(S, "cpu_us_per_req", registry.get("scale").servers, **COLUMNS[PIPE][1])
    pipe = g.dropna().sort_values()
    cheap = pipe[pipe <= 1.25 * pipe.iloc[0]] if len(pipe) else pipe
    if len(cheap) > 1:
        rng = S[(S.pipeline == 16) & S.server.isin(cheap.index)]
        claim(rng.cpu_us_per_req_min.max() <= rng.cpu_us_per_req_max.min(),
              "the min-max ranges of the cheapest servers per pipelined request overlap",
              at={"repeats": int(rng.repeats.min())},   # a range of one repeat is a point: it overlaps nothing
              lo=rng.cpu_us_per_req_min.max(), hi=rng.cpu_us_per_req_max.min())
    bound = S[(S.pipeline == 16) & S.generator_bound].server
    n_pipe = int((S.pipeline == 16).sum())
    if n_pipe:
        claim(len(bound) > n_pipe / 2, "wrk saturated its own core against most servers under the pipelined load",
              bound=len(bound), servers=n_pipe)
    blocking = g[list(BLOCKING_C)].dropna()
    if len(blocking) and math.isfinite(g["c-epoll"]):
        claim(blocking.max() < 2 * g["c-epoll"],
              "the thread, process and pool C servers stay within a factor of two of c-epoll, pipelined",
              worst=blocking.max(), epoll=g["c-epoll"])
    return {
        "sx_pipe_best": markdown(listing(f"`{s}` ({v:.2f} µs)" for s, v in pipe.head(3).items()) or NA),
        "sx_pipe_worst": markdown(listing(f"`{s}` ({v:.1f} µs)" for s, v in pipe.tail(3).items()) or NA),
        "sx_pipe_cheap": markdown(ids(cheap.index) or NA),
        "sx_pipe_cheap_range": span_of(cheap, ".2f"),
        "sx_pipe_bound": markdown(ids(bound) if len(bound) else "none"),
        "sx_pipe_n_bound": f"{len(bound)}",
        "sx_pipe_n": f"{n_pipe}",
    }


def calls_per_request(sc) -> pd.DataFrame:
    """The syscalls run's calls per request by kind, medians, one row per server (a wait: epoll_wait, poll or
    select; other: accept, close and the rest), as the page's table shows them."""
    SC = sc.summary().set_index("server")
    SC["wait"] = SC.sc_epoll_wait_per_req + SC.sc_poll_select_per_req
    SC["rest"] = SC.sc_accept_per_req + SC.sc_close_per_req + SC.sc_other_per_req
    return SC[list(SYSCALLS.values())].set_axis(list(SYSCALLS), axis=1)


def kernel(sc) -> dict:
    """What a request asks of the kernel (the `syscalls` run): its rate, connections and repeats, the noisy runs,
    the calls per request of each shape of model; the claims the shapes make, for the servers measured."""
    SC = sc.summary().set_index("server")
    asks = calls_per_request(sc)
    rows = sc.df[sc.df.ok_run].merge(sc.df.groupby("server").syscalls_per_req.median().rename("med"), on="server")
    off = (rows[rows.noisy].syscalls_per_req / rows[rows.noisy].med - 1).abs()
    claim(bool((off < 0.1).all()), "the syscalls runs flagged noisy counted within 10 % of their server's median",
          worst=off.max() if len(off) else 0)

    def has(ids):
        return [s for s in ids if s in asks.index]

    _kernel_claims(asks, has)
    values = {f"sx_sc_{what}_all": span_of(asks.loc[has(ids), "all"], ".1f") for what, ids in
              (("blocking", BLOCKING_C), ("loops", LOOPS), ("uring", URING), ("jblocking", JAVA_BLOCKING),
               ("handoff", HANDOFF))}
    values |= {f"sx_sc_all_{key(s)}": number(asks.loc[s, "all"], ".1f") if s in asks.index else NA
               for s in ("c-epoll-et", "c-coroutine", "java-mina", "java-vthread", "java-nio-workers", "java-nio2")}
    return values | {
        "sx_sc_rate": f"{SC.rate.iloc[0]:,.0f}",
        "sx_sc_noisy": f"{int(rows.noisy.sum())} of its {len(rows)}",
        "sx_sc_noisy_said": _noisy_said(int(rows.noisy.sum()), len(rows)),
        "sx_sc_conns": f"{int(SC.connections.iloc[0])}",
        "sx_sc_repeats": words(int(SC.repeats.min())),
        "sx_sc_uring_enter": span_of(asks.loc[has(URING), "io_uring_enter"], ".1f"),
        "sx_sc_handoff_futex": span_of(asks.loc[has(HANDOFF), "futex"], ".1f"),
        "sx_sc_handoff_ctl": span_of(asks.loc[has(HANDOFF), "epoll_ctl"], ".1f"),
        "sx_sc_other_c_coroutine": number(asks.loc["c-coroutine", "other"], ".1f") if "c-coroutine" in asks.index
        else NA,
    }


def _kernel_claims(asks: pd.DataFrame, has) -> None:
    """The shapes the page's list says, each checked for the servers of its shape that the run measured."""
    plain = asks.drop(index=has(URING))
    claim(bool(((plain.read >= 0.95) & (plain.write >= 0.95)).all()), "every server but the io_uring ones read "
          "and wrote at least once per request", read=plain.read.min(), write=plain.write.min())
    b = asks.loc[has(BLOCKING_C)]
    claim(bool((b["all"] < 2.1).all() and (b.wait + b.io_uring_enter == 0).all()),
          "the thread, process and pool C servers made two calls per request and never waited in a wait call",
          most=b["all"].max())
    lp = asks.loc[has(LOOPS)]
    claim(bool(lp.wait.between(0.9, 1.01).all() and lp["all"].between(2.9, 3.1).all()),
          "the event loops made one wait, one read and one write per request", wait=lp.wait.to_dict())
    u = asks.loc[has(URING)]
    claim(bool((u.read + u.write + u.wait == 0).all() and u.io_uring_enter.between(1.5, 2.5).all()),
          "the io_uring servers made no read, write or wait, and about two io_uring_enter per request",
          enter=u.io_uring_enter.to_dict())
    jb = asks.loc[has(JAVA_BLOCKING)]
    claim(bool(jb.wait.between(0.9, 1.1).all() and jb.read.between(1.9, 2.1).all()),
          "java-thread and java-threadpool made one poll and two reads per request", wait=jb.wait.to_dict())
    if {"java-mina", "java-nio"} <= set(asks.index):
        extra = asks.loc["java-mina", ["read", "write", "wait"]] - asks.loc["java-nio", ["read", "write", "wait"]]
        claim(bool(extra.loc[["write", "wait"]].between(0.8, 1.1).all() and 1.8 <= extra.loc["read"] <= 2.1),
              "java-mina made about two reads, one write and one wait per request more than java-nio",
              extra=extra.round(2).to_dict())
    h = asks.loc[has(HANDOFF)]
    if len(h) and len(lp):
        claim(bool((h.futex >= 2).all() and (h.epoll_ctl >= 0.9).all() and (h["all"] > 2 * lp["all"].max()).all()),
              "the models that hand a request between threads made futex and epoll_ctl calls for it, more than "
              "twice the event loops' calls", futex=h.futex.to_dict(), epoll_ctl=h.epoll_ctl.to_dict())


def served_all(scale, g: pd.DataFrame) -> list[str]:
    """The servers that served every one of 10,000 busy connections in every repeat, in the run's order."""
    return [s for s in measured_order(scale) if s in g.index and g.loc[s, "served of 10,000"] == 10_000]


def connections(scale, idle) -> dict:
    """A new connection per request (c-fork against c-epoll) and 10,000 busy connections: who served them all,
    what the others served in their worst repeat (grouped by number); the claim on c-fork and java-thread."""
    g = glance(scale, idle)
    everyone = served_all(scale, g)
    short = g["served of 10,000"].dropna()
    short = short[short < 10_000].sort_values()
    ten = scale.df[(scale.df.connections == 10_000) & (scale.df["mode"] == "keepalive")]
    cnt = {s: ten[ten.server == s].conns_served for s in ("c-thread", "c-fork", "java-thread")}
    if all(len(c) for c in cnt.values()):  # a smoke run may lack them
        claim(bool((cnt["c-thread"] == 10_000).all()) and all(cnt[s].min() < 10_000 and cnt[s].dropna().nunique() > 1
                                                              for s in ("c-fork", "java-thread")),
              "c-fork and java-thread, not c-thread, lost connections, a different number each time",
              **{key(k): list(v) for k, v in cnt.items()})
    return {
        "sx_served_all": markdown(ids(everyone) if everyone else "none"),
        "sx_served_short": markdown(grouped({f"`{s}`": v for s, v in short.items()}, ",.0f", at=" ")
                                    if len(short) else "none"),
        "sx_close_ratio_fork": number(g.loc["c-fork", CLOSE] / g.loc["c-epoll", CLOSE], ".1f"),
    }


def blocking_work(scale) -> dict:
    """20 ms of work per request at 1,000 connections: the ceilings, each model's share of its core, c-epoll's
    time per request, the servers none of whose runs completed; claims checked where the run has the servers."""
    S = scale.summary()
    w = S[(S.work_ms == 20) & (S.connections == 1000)].assign(
        cpu_share=lambda d: d.rps * d.cpu_us_per_req / 1e6).set_index("server")
    if {"c-thread", "c-fork", "java-vthread", "java-thread"} <= set(w.index):  # a smoke run may lack them
        filled = w.cpu_share[["c-thread", "c-fork", "java-vthread"]].min()
        claim(filled > 0.9, "1,000 tasks sleeping and waking fill the core", share=filled)
        claim(bool((w.conns_served[["c-fork", "java-thread"]] < 1000).all()), "c-fork and java-thread left "
              "connections unserved", served=list(w.conns_served[["c-fork", "java-thread"]]))
    failed = sorted(set(scale.df[(~scale.df.ok) & (scale.df.work_ms == 20)].server))
    return {
        "sx_work_ideal": f"{1000 / 0.020:,.0f}",
        "sx_pool_ceiling": f"{64 / 0.020:,.0f}",
        **{f"sx_wshare_{key(s)}": number(w.cpu_share.get(s, NaN), ".2f")
           for s in ("c-thread", "c-fork", "java-thread", "java-vthread", "c-epoll")},
        "sx_wlat_c_epoll": number(1000 / w.rps.get("c-epoll", NaN) * 1000, ".0f"),
        "sx_work_failed": markdown(ids(failed) if failed else "none"),
        "sx_work40_seq": number(S[(S.server == "c-sequential") & (S.work_ms == 20)].rps.min(), ",.0f"),
    }


def jvm_holds(jm, servers) -> pd.Series:
    """KiB of live heap and of memory the JVM committed beyond it, per idle connection added (`jvm-memory`), per
    server (NaN where it has none)."""
    m = {v: jm.marginal(value=v) for v in ("jvm_heap_live_kib", "jvm_committed_kib")}
    return sum(idle_added_in(mv, servers) for mv in m.values())


def choosing(scale, idle, jm) -> dict:
    """The guide's costs: memory and CPU ratios between models, a virtual thread by the JVM's account, and
    c-uring-multishot against c-epoll (dearer at one connection only); claims checked."""
    g = glance(scale, idle)
    S = scale.summary()

    jvm = jvm_holds(jm, ["java-vthread", "java-thread"])

    def ratio(a, b, column):
        return number(g.loc[a, column] / g.loc[b, column], ".2g")

    point = ["mode", "connections", "pipeline", "work_ms"]
    ms_vs = (S[S.server == "c-uring-multishot"].set_index(point).cpu_us_per_req
             / S[S.server == "c-epoll"].set_index(point).cpu_us_per_req).dropna()
    one = [k for k in ms_vs.index if k == ("keepalive", 1, 1, 0)]
    if one:
        claim(bool(ms_vs[one[0]] > 1.1 and (ms_vs.drop(one) <= 1.1).all()), "c-uring-multishot cost about what "
              "c-epoll did, within 10 % or less, except at one connection", ratios=ms_vs.round(2).to_dict())
    if {"java-netty", "c-epoll"} <= set(S.server):
        nr = S[S.server.isin(["java-netty", "c-epoll"]) & (S["mode"] == "keepalive") & (S.work_ms == 0)]
        nr = nr[(nr.pipeline == 16) | (nr.connections == 1000)].set_index(["server", "connections"])
        claim(bool((nr.loc["java-netty"].cpu_us_per_req_min > nr.loc["c-epoll"].cpu_us_per_req_max).all()),
              "java-netty spent more CPU per request than c-epoll, pipelined and at 1,000, the repeats' ranges apart",
              at={"repeats": int(nr.repeats.min())})
    return {
        "sx_mem_thread_vs_epoll": ratio("c-thread", "c-epoll", IDLE),
        "sx_jvm_vthread": number(jvm["java-vthread"], ".1f"),
        "sx_mem_jthread_vs_vthread": number(jvm["java-thread"] / jvm["java-vthread"], ".1f"),
        "sx_netty_vs_nginx": ratio("java-netty", "nginx", PIPE),
        "sx_epoll_vs_nginx": ratio("c-epoll", "nginx", PIPE),
        "sx_netty_vs_epoll": ratio("java-netty", "c-epoll", PIPE),
        "sx_netty_vs_epoll_1000": ratio("java-netty", "c-epoll", KA1000),
        "sx_ms_vs_epoll_1": f"{100 * (ms_vs[one[0]] - 1):+.0f} %" if one else NA,
    }


def summary(scale, idle) -> dict:
    """The chapter's summary: how many servers served all 10,000 connections; a new connection per request against
    a keep-alive one at 1,000 connections, for the models that serve connections at once (a sequential server's
    1,000 keep-alive connections wait their turn), naming the others; the claim that it cost each of them more."""
    g = glance(scale, idle)
    one_at_a_time = [s for s in g.index if "one connection at a time" in manifest.get(s).model]
    concurrent = [s for s in g.index if s not in one_at_a_time]
    sequential = [s for s in measured_order(scale) if s in one_at_a_time]
    close_x = (g.loc[concurrent, CLOSE] / g.loc[concurrent, KA1000]).dropna()
    claim(bool((close_x > 1).all()), "a new connection per request cost every concurrent model more CPU than a "
          "keep-alive request, at 1,000 connections", times=close_x.round(2).to_dict())
    how_much = span(close_x.min(), close_x.max(), ".1f", " times") + (
        f" as much (the least in `{close_x.idxmin()}`, the most in `{close_x.idxmax()}`)" if len(close_x) > 1
        else " as much")
    served = len(served_all(scale, g))
    return {
        "sx_sum_served": f"{words(served)} server{'' if served == 1 else 's'}",
        "sx_sum_models": markdown(f"every model that serves connections at once (all but {ids(sequential)})"
                                  if sequential else "every model"),
        "sx_sum_close": markdown(how_much),
    }


def values(scale, idle, jm) -> dict:
    """Every value the page's first cell glues, merged (its claims checked)."""
    return {**measured(scale), **outliers(scale), **per_server(scale, idle), **pipelined(scale),
            **connections(scale, idle), **blocking_work(scale), **choosing(scale, idle, jm), **summary(scale, idle)}
