"""The analysis behind book/c/source-reproduction.md: write-up 002's `ab` grid on loopback (`ab-grid`), the
listen backlog against 100 and 1000 clients (`ab-backlog`), and the servers one round trip away (`delay-link`).

Every function takes one dataset and returns {glue name: value}; numbers the page formats itself
({glue:text}`name:,.0f`) are floats or ints, NaN for a point the dataset lacks; the claims the page's sentences make
are checked here, where their numbers are present.
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.phrases import NA, listing, repeats, span, span_of
from iobench.book.phrases import flagged as flagged_said
from iobench.data.report import value_in
from iobench.load import drivers

NAN = float("nan")
PY = "python-http-server"
CELL = ["server", "requested", "connections"]


def _known(*xs) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def _pick(frame, server: str, col: str = "rps") -> float:
    """`col` of `server`'s row in a frame indexed by server; NaN where it has none."""
    return value_in(frame, col, NAN, server=server)


def _one_client(grid) -> pd.DataFrame:
    """The grid's summary at its largest request count and one client, indexed by server."""
    s = grid.summary()
    return s[(s.requested == s.requested.max()) & (s.connections == 1)].set_index("server")


def loopback(grid) -> dict:
    """One client, the largest request count: each server's requests per second and CPU per request, c-sequential
    against c-fork (their repeats' ranges, the ratio), whether other servers had a repeat above c-sequential's
    median (g_seq_tied, the clause that says it); the runs that ended with an ab error. Claims: c-sequential answered
    more than c-fork in every repeat
    and spent the least CPU per request; a thread costs more than none, a process more than a thread; neither
    c-thread nor c-fork failed."""
    df, big = grid.df, _one_client(grid)
    out = {"g_n": int(grid.summary().requested.max())}
    for sid, key in (("c-sequential", "seq"), ("c-fork", "fork"), ("c-thread", "thread"), ("c-epoll", "epoll"),
                     (PY, "py")):
        out[f"g_{key}_rps"] = _pick(big, sid)
    for sid, key in (("c-sequential", "seq"), ("c-fork", "fork"), ("c-thread", "thread"), (PY, "py")):
        out[f"g_{key}_cpu"] = _pick(big, sid, "cpu_us_per_req")
    out["g_seq_ab_pct"] = _pick(big, "c-sequential", "client_cpu_pct")
    out["g_fork_ratio"] = out["g_seq_rps"] / out["g_fork_rps"] if out["g_fork_rps"] else NAN
    for sid, key in (("c-sequential", "seq"), ("c-fork", "fork")):
        out[f"g_{key}_range"] = span(_pick(big, sid, "rps_min"), _pick(big, sid, "rps_max"), ",.0f")
        ran = df[(df.server == sid) & (df.requested == out["g_n"]) & (df.connections == 1) & df.ok]
        out[f"g_{key}_repeats"] = repeats(_pick(big, sid, "rps_min"), _pick(big, sid, "rps_max"), len(ran))
    faster = big[(big.index != "c-sequential") & (big.rps_max > out["g_seq_rps"])].index
    out["g_seq_tied"] = _above(len(faster))
    failed = df[~df.ok].server
    out |= {"g_failed_runs": int((~df.ok).sum()), "g_runs": len(df),
            "g_failed_servers": listing(sorted(failed.unique())) or "none"}
    if _known(out["g_seq_rps"], out["g_fork_rps"], out["g_thread_rps"]):
        _loopback_claims(big, faster, failed, {"requests per run": out["g_n"]})
    return out


def _above(n: int) -> str:
    """How many other servers had a repeat above c-sequential's median, as the clause after "the highest median"."""
    if n == 0:
        return "and no other server had a repeat above it"
    return f"though {n} other server{'' if n == 1 else 's'} had a repeat above it"


def _loopback_claims(big: pd.DataFrame, faster, failed: pd.Series, at: dict) -> None:
    """The grid's claims at one client, `at` the run's longest ab run (a brief run's is shorter: a short run's
    ranking is not the book's)."""
    claim(_pick(big, "c-sequential", "rps_min") > _pick(big, "c-fork", "rps_max"),
          "with one client c-sequential answered more requests per second than c-fork, in every repeat", at=at,
          sequential_min=_pick(big, "c-sequential", "rps_min"), fork_max=_pick(big, "c-fork", "rps_max"))
    cpu = {sid: _pick(big, sid, "cpu_us_per_req") for sid in ("c-sequential", "c-thread", "c-fork")}
    claim(cpu["c-sequential"] < cpu["c-thread"] < cpu["c-fork"],
          "a thread per connection costs more CPU per request than none, a process more than a thread", at=at,
          cpu=cpu)
    claim(big.rps.idxmax() == "c-sequential", "c-sequential had the highest median", at=at, best=big.rps.idxmax(),
          faster_repeat=list(faster))
    claim(big.cpu_us_per_req.idxmin() == "c-sequential", "c-sequential spent the least CPU per request", at=at,
          least=big.cpu_us_per_req.idxmin())
    claim(not failed.isin(["c-thread", "c-fork"]).any(), "neither c-thread nor c-fork failed in the grid",
          failed=sorted(failed.unique()))


def _runs(grid) -> pd.DataFrame:
    """The grid's successful runs, each against its cell's median: how far off (off), whether ab's own CPU time per
    request moved with the time per request within 15 % (ab_tracks), and whether the server's moved the same way by
    more than 5 % (srv_along)."""
    runs = grid.df[grid.df.ok].copy()
    runs["ab_us_per_req"] = runs.client_cpu_pct / 100 * runs.duration_s * 1e6 / runs.requests
    med = runs.groupby(CELL)[["rps", "ab_us_per_req", "server_cpu_us_per_req"]].transform("median")
    runs["off"] = runs.rps / med.rps
    runs["ab_tracks"] = ((runs.ab_us_per_req / med.ab_us_per_req) * runs.off - 1).abs() <= 0.15
    srv_moved = runs.server_cpu_us_per_req / med.server_cpu_us_per_req - 1
    runs["srv_along"] = ((srv_moved * (1 / runs.off - 1)) > 0) & (srv_moved.abs() > 0.05)
    return runs


def grid_spread(grid) -> dict:
    """How far the repeats of one cell lay apart (the median cell's range over its median, in %), and the repeats
    flagged as outliers: how many, how far off, the longest one's seconds, in how many ab's CPU per request moved
    with the time per request, in how many ab filled its core, in how many the server's CPU moved along."""
    runs = _runs(grid)
    flagged = runs[runs.outlier]
    spread = runs.groupby(["server", "connections", "requested"]).rps.agg(lambda r: (r.max() - r.min()) / r.median())
    return {"g_outliers": len(flagged), "g_outlier_range": span_of(flagged.off, ".2f", na="none"),
            "g_outliers_said": _flagged_said(len(flagged), span_of(flagged.off, ".2f"),
                                             int((grid.df.outlier & ~grid.df.ok).sum())),
            "g_outlier_max_s": float(flagged.duration_s.max()) if len(flagged) else 0.0,
            "g_outliers_tracking": int(flagged.ab_tracks.sum()), "g_outliers_bound": int(flagged.generator_bound.sum()),
            "g_outliers_srv_along": int((flagged.ab_tracks & flagged.srv_along).sum()),
            "g_failed_flagged": int((grid.df.outlier & ~grid.df.ok).sum()),
            "g_cell_spread": f"{100 * spread.median():.0f}"}


def _flagged_said(k: int, off: str, failed: int) -> str:
    """The sentence on the grid's outliers: how many successful repeats lay more than 20 % from their cell's median,
    how far (`off`, times the median), and the failed runs flagged beside them."""
    besides = ("" if failed == 0 else
               f" (and {'one failed run' if failed == 1 else f'{failed:,} failed runs'} in a cell whose other repeats "
               f"succeeded)")
    if k == 0:
        return f"No successful repeat lay more than 20 % from its cell's median{besides}."
    if k == 1:
        return (f"One successful repeat was flagged as more than 20 % from its cell's median, at {off} times "
                f"it{besides}.")
    return (f"{k:,} successful repeats were flagged as more than 20 % from their cell's median, at {off} times "
            f"it{besides}.")


def concurrency(grid) -> dict:
    """The time per request end to end with one client (c-sequential, c-fork); at the next concurrency (10 clients
    in the full grid): c-sequential's rate and ab's share of its core, c-fork's rate and its own core's share; the
    fewest clients. Claim: from 10 clients on, ab was the bottleneck against every cheap server."""
    s, big, df = grid.summary(), _one_client(grid), grid.df
    top = s[s.requested == s.requested.max()]
    c2 = min([c for c in top.connections.unique() if c > 1], default=1)
    many = top[top.connections == c2].set_index("server")
    if c2 == 10:
        cheap = many.drop(["c-fork", PY], errors="ignore")
        claim(bool(cheap.generator_bound.all()), "from 10 clients on, ab was the bottleneck against every cheap server",
              not_bound=list(cheap.index[~cheap.generator_bound]))
    cpu_pct = (df[(df.requested == df.requested.max()) & df.ok]
               .groupby(["server", "connections"]).server_cpu_pct.median())
    return {"g_seq_us_per_req": 1e6 / _pick(big, "c-sequential"), "g_fork_us_per_req": 1e6 / _pick(big, "c-fork"),
            "g10_c": int(c2), "g10_seq_rps": _pick(many, "c-sequential"),
            "g10_seq_ab": _pick(many, "c-sequential", "client_cpu_pct"), "g10_fork_rps": _pick(many, "c-fork"),
            "g10_fork_cpu_pct": float(cpu_pct.get(("c-fork", c2), NAN)), "g_min_c": int(s.connections.min())}


def _python_cells(grid) -> pd.DataFrame:
    """python's http.server per cell of the grid: runs, failed runs, medians of requests per second, requests
    completed, slowest request, listen-queue overflows and retransmissions (the page's table)."""
    df = grid.df
    return df[df.server == PY].groupby(["requested", "connections"]).agg(
        runs=("repeat", "count"), failed=("ok", lambda o: int((~o).sum())), rps=("rps", "median"),
        completed=("requests", "median"), max_ms=("max_ms", "median"),
        listen_overflows=("listen_overflows", "median"), retransmits=("tcp_retrans_segs", "median")).reset_index()


def python_errors(grid) -> dict:
    """http.server's errors: at 10 clients (largest request count) its overflows and slowest request; the cells
    where runs failed; at the first of them (fewest clients, then requests), what ab had completed, the overflows
    and the retransmissions."""
    py = _python_cells(grid)
    r10 = py[(py.requested == py.requested.max()) & (py.connections == 10)]
    bad = py[py.failed > 0]
    worst = bad.sort_values(["connections", "requested"]).iloc[0] if len(bad) else None
    return {"py10_max_ms": float(r10.max_ms.iloc[0]) if len(r10) else NAN,
            "py10_over": float(r10.listen_overflows.iloc[0]) if len(r10) else NAN,
            "py_failed_points": ", ".join(f"-n {int(r.requested)} -c {int(r.connections)}" for r in bad.itertuples())
            or "none",
            "pyf_n": int(worst.requested) if worst is not None else 0,
            "pyf_c": int(worst.connections) if worst is not None else 0,
            "pyf_done": float(worst.completed) if worst is not None else NAN,
            "pyf_over": float(worst.listen_overflows) if worst is not None else NAN,
            "pyf_retrans": float(worst.retransmits) if worst is not None else NAN}


def _backlog_cells(bl) -> pd.DataFrame:
    """ab-backlog per server, backlog and clients: runs, failed runs, medians (the page's table)."""
    return bl.df.groupby(["server", "backlog", "connections"]).agg(
        runs=("repeat", "count"), failed=("ok", lambda o: int((~o).sum())), rps=("rps", "median"),
        p99_ms=("p99_ms", "median"), max_ms=("max_ms", "median"),
        listen_overflows=("listen_overflows", "median"), retransmits=("tcp_retrans_segs", "median")).reset_index()


def _count(x) -> int | str:
    return int(x) if _known(x) else NA


def backlog(bl) -> dict:
    """A small backlog: c-sequential's overflows, retransmissions and slowest request at the most clients; c-fork's
    failed runs at the most and the fewest clients, what its completed runs managed, against the largest
    backlog; the repeats flagged as outliers, each said."""
    b = _backlog_cells(bl)

    def bval(server, backlog, c, col):
        return value_in(b, col, NAN, server=server, backlog=backlog, connections=c)
    bmin, cmax, cmin = int(b.backlog.min()), int(b.connections.max()), int(b.connections.min())
    df = bl.df
    fork_ok = df[(df.server == "c-fork") & (df.backlog == bmin) & (df.connections == cmin) & df.ok]
    return {"bl_min": bmin, "bl_cmax": cmax, "bl_cmin": cmin,
            "bl_seq_over": bval("c-sequential", bmin, cmax, "listen_overflows"),
            "bl_seq_retr": bval("c-sequential", bmin, cmax, "retransmits"),
            "bl_seq_max": bval("c-sequential", bmin, cmax, "max_ms"),
            "bl_fork_failed": _count(bval("c-fork", bmin, cmax, "failed")),
            "bl_fork_runs": _count(bval("c-fork", bmin, cmax, "runs")),
            "bl_fork_failed_cmin": _count(bval("c-fork", bmin, cmin, "failed")),
            "bl_fork_runs_cmin": _count(bval("c-fork", bmin, cmin, "runs")),
            "bl_fork_rps_cmin": float(fork_ok.rps.median()) if len(fork_ok) else NAN,
            "bl_fork_max_cmin": float(fork_ok.max_ms.max()) if len(fork_ok) else NAN,
            "bl_fork_retr_cmin": float(fork_ok.tcp_retrans_segs.median()) if len(fork_ok) else NAN,
            "bl_fork_ok_runs": ("the one run that completed managed" if len(fork_ok) == 1
                                else f"the {len(fork_ok)} runs that completed managed a median of"),
            "bl_fork_rps_big": bval("c-fork", int(b.backlog.max()), cmin, "rps")} | _backlog_outliers(bl)


def _backlog_outliers(bl) -> dict:
    flagged = bl.df[bl.df.outlier]
    explained = [f"{r.server}, backlog {r.backlog}, {r.connections} clients, repeat {r.repeat}: "
                 + (f"ab gave up ({r.failure.split(':')[0]})" if not r.ok else
                    f"{r.rps:,.0f} requests per second, slowest request {r.max_ms:,.0f} ms")
                 for r in flagged.itertuples()]
    return {"bl_outliers": len(flagged), "bl_outlier_list": "; ".join(explained) or "none",
            "bl_outliers_said": flagged_said(explained)}


def delay_summary(dl) -> pd.DataFrame:
    """delay-link's summary with each point's bound if every request waited for the network in full (a new
    connection two round trips, a kept-alive request one; c-sequential with keep-alive serves one client at a
    time) and the share of it reached (the page's table)."""
    d = dl.summary()
    rtt_s = dl.link("delay")["measured_rtt_ms"] / 1000
    d["bound"] = [(1 if (srv == "c-sequential" and mode == "keepalive") else c)
                  / ((1 if mode == "keepalive" else 2) * rtt_s)
                  for srv, c, mode in zip(d.server, d.connections, d["mode"])]
    d["of_bound_pct"] = 100 * d.rps / d.bound
    return d


def _python_at_most_clients(dl, cmax: int) -> dict:
    """http.server at the most clients, repeat by repeat: requests per second, the share of the clients' time that
    ab's completed requests do not account for, and their mean time in ab's Connection Times table."""
    py = dl.df[(dl.df.server == PY) & (dl.df.connections == cmax) & (dl.df["mode"] == "close")].sort_values("repeat")
    return {"dl_py_repeats": "; ".join(f"{r:,.0f}" for r in py.rps),
            "dl_py_unfinished": "; ".join(f"{100 * drivers.unfinished_share(dl.raw(f), cmax):.0f} %"
                                          for f in py.raw_file),
            "dl_py_done_ms": "; ".join(f"{drivers.ab_connection_times(dl.raw(f))['Total']['mean']:.0f}"
                                       for f in py.raw_file)}


def delay_link(dl) -> dict:
    """One round trip away: the round trip, requests per second with one client and with the most, with keep-alive
    at 10 clients, http.server's p99 and retransmissions at the most clients, its repeats, the repeats flagged as
    outliers; exercise 2's shares of the keep-alive bound. Claim: http.server retransmitted where no C server did,
    and its p99 is one SYN timer plus two round trips."""
    d, rtt = delay_summary(dl), float(dl.link("delay")["measured_rtt_ms"])

    def dval(server, c, mode="close", col="rps"):
        return value_in(d, col, NAN, server=server, connections=c, mode=mode)
    cmax = int(d[d["mode"] == "close"].connections.max())
    at_cmax = dl.df[(dl.df.connections == cmax) & (dl.df["mode"] == "close")]
    py_retr = at_cmax[at_cmax.server == PY].tcp_retrans_segs
    py_p99, one_timer_ms = dval(PY, cmax, col="p99_ms"), 1000 + 2 * rtt  # one SYN retransmission, then two trips
    if len(py_retr):
        claim(py_retr.min() > 0 and at_cmax[at_cmax.server != PY].tcp_retrans_segs.max() == 0
              and abs(py_p99 / one_timer_ms - 1) < 0.05, "python's http.server retransmitted where no C server did, "
              "and its p99 is one SYN timer plus two round trips", py_retr=list(py_retr), p99=py_p99,
              one_timer_ms=one_timer_ms)
    flagged = dl.df[dl.df.outlier]
    ka = d[d["mode"] == "keepalive"].set_index("server")
    return {"dl_rtt": rtt, "dl_cmax": cmax, "dl_seq1": dval("c-sequential", 1), "dl_fork1": dval("c-fork", 1),
            "dl_seq_cmax": dval("c-sequential", cmax), "dl_fork_cmax": dval("c-fork", cmax),
            "dl_epoll_cmax": dval("c-epoll", cmax), "dl_seq_ka": dval("c-sequential", 10, "keepalive"),
            "dl_py_cmax": dval(PY, cmax), "dl_py_cmax_p99": py_p99, "dl_epoll_ka": dval("c-epoll", 10, "keepalive"),
            "dl_thread_ka": dval("c-thread", 10, "keepalive"), "dl_py_retr": span_of(py_retr, ",.0f"),
            "dl_outliers": len(flagged),
            "dl_outlier_list": "; ".join(f"{r.server} at {r.connections} clients ({r['mode']}), repeat {r['repeat']}: "
                                         f"{r.rps:,.0f} requests per second" for _, r in flagged.iterrows()) or "none",
            "rx2_c_min": _percent(ka.of_bound_pct.drop(PY, errors="ignore").min()),
            "rx2_py": _percent(ka.of_bound_pct.get(PY, NAN))} | _python_at_most_clients(dl, cmax)


def _percent(x) -> str:
    return f"{x:.0f}" if _known(x) else NA


def _times(x) -> str:
    return f"{x:.2f}" if _known(x) else NA


def exercise_1(captured) -> dict:
    """Exercise 1, on the captured full grid: from 1 client to the next concurrency (10), how many times as many
    requests per second every C server but c-fork answered (rx1_span), c-fork's and http.server's gains and how
    busy their cores were. Claim: every C server but c-fork about doubled its rate, c-fork less."""
    cs = captured.summary()
    top = cs[cs.requested == cs.requested.max()].pivot(index="server", columns="connections", values="rps")
    c_next = min(c for c in top.columns if c > 1)
    gain = top[c_next] / top[1]
    others = gain.drop(["c-fork", PY], errors="ignore").dropna()
    cdf = captured.df[(captured.df.requested == captured.df.requested.max()) & captured.df.ok]
    busy = cdf.groupby(["server", "connections"]).server_cpu_pct.median()
    if len(others) and c_next == 10:
        claim(others.min() > 1.5 and others.max() < 3 and gain.get("c-fork", 0) < others.min(),
              "from 1 to 10 clients every C server but c-fork about doubled its rate, c-fork less",
              low=others.min(), high=others.max(), fork=gain.get("c-fork"))
    return {"rx1_c": int(c_next), "rx1_span": span_of(others, ".2f"), "rx1_fork": _times(gain.get("c-fork", NAN)),
            "rx1_py": _times(gain.get(PY, NAN)), "rx1_fork_busy": _percent(busy.get(("c-fork", c_next), NAN)),
            "rx1_py_busy": _percent(busy.get((PY, c_next), NAN))}


def grid_parts(grid) -> list[dict]:
    """The parts the page glues from ab-grid."""
    return [loopback(grid), grid_spread(grid), concurrency(grid), python_errors(grid)]


def values(grid) -> dict:
    """Every value the page glues from the grid, merged (its claims checked)."""
    return {name: value for part in grid_parts(grid) for name, value in part.items()}
