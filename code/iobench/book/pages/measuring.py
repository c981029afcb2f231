"""The analysis behind book/method/measuring.md: the baselines (nginx with one worker, python's http.server) at 40
connections, the repeats flagged as outliers, the conformance battery's verdicts and exercise 5's points.

Every function takes the `baselines` dataset and returns {glue name: value}; numbers the page formats itself
({glue:text}`name:.1f`) are floats, NaN for a point the dataset lacks (a smoke capture of other servers); the claims
the page's sentences make are checked here, where their numbers are present.
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.phrases import battery_verdict, listing, span_of, tally
from iobench.book.phrases import flagged as flagged_said
from iobench.data.report import battery_counts

NGINX, PYTHON = "nginx", "python-http-server"
KA40 = dict(tool="wrk", mode="keepalive", connections=40, pipeline=1)
CL40 = dict(tool="wrk", mode="close", connections=40, pipeline=1)
POINT = ["server", "tool", "mode", "connections", "work_ms", "pipeline"]
PREDICTED = ["keepalive_100", "pipelined_10", "concurrent_500"]  # http.server's failures, by its design


def _known(*xs) -> bool:
    """Every number is there (not NaN): a claim about them can be checked."""
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def _value(ds, column: str, server: str, where: dict) -> float:
    """The median of `column` at one point of `server`; NaN where the dataset has no such point."""
    return ds.value(column, float("nan"), server=server, **where)


def provenance(ds) -> dict:
    """baselines_profile, baselines_date: which run the page's numbers come from."""
    return {"baselines_profile": ds.produced_by, "baselines_date": ds.date()}


def _explain(df: pd.DataFrame, r) -> str:
    """One flagged repeat: how far from its point's median, the generator's load, and whether that whole repeat
    was off the same way at its server's other points."""
    same = df[(df.server == r["server"]) & (df.tool == r["tool"]) & (df["mode"] == r["mode"])
              & (df.repeat == r["repeat"]) & (df.pipeline == r["pipeline"])]
    high = r["vs_median"] > 1
    off = int((same.vs_median > 1).sum()) if high else int((same.vs_median < 1).sum())
    return (f"{r['server']}, {r['tool']} {r['mode']} at {r['connections']} connections, repeat {r['repeat']}: "
            f"{r['vs_median']:.2f} times its point's median, with the generator at {r['client_cpu_pct']:.0f} % "
            f"of its core; that repeat was {'above' if high else 'below'} the median at {off} of its "
            f"{len(same)} points")


def outliers(ds) -> dict:
    """baselines_outliers (how many repeats were flagged) and baselines_outlier_list (each explained)."""
    df = ds.df[ds.df.ok]
    df = df.assign(vs_median=df.rps / df.groupby(POINT).rps.transform("median"))
    flagged = df[df.outlier]
    explained = [_explain(df, r) for _, r in flagged.iterrows()]
    return {"baselines_outliers": len(flagged),
            "baselines_outlier_list": "; ".join(explained) or "none",
            "baselines_outliers_said": flagged_said(explained, "repeat of this run", plural="repeats of this run")}


def forty_connections(ds) -> dict:
    """nginx and http.server at 40 connections, keep-alive and close: requests per second, CPU per request, the
    generator's share of its core and nginx's of its own (nginx_ka40_share: requests x CPU each, in %)."""
    out = {}
    for key, where in (("ka40", KA40), ("cl40", CL40)):
        rps, cpu = _value(ds, "rps", NGINX, where), _value(ds, "cpu_us_per_req", NGINX, where)
        out |= {f"nginx_{key}_rps": rps, f"nginx_{key}_cpu": cpu,
                f"nginx_{key}_client": _value(ds, "client_cpu_pct", NGINX, where),
                f"nginx_{key}_share": rps * cpu / 1e4}
    out["python_ka40_rps"] = _value(ds, "rps", PYTHON, KA40)
    out["python_ka40_cpu"] = _value(ds, "cpu_us_per_req", PYTHON, KA40)
    out["python_ka40_client"] = _value(ds, "client_cpu_pct", PYTHON, KA40)
    out["ka40_ratio"] = (out["nginx_ka40_rps"] / out["python_ka40_rps"] if out["python_ka40_rps"]
                         else float("nan"))
    if _known(out["nginx_ka40_client"]):
        claim(out["nginx_ka40_client"] >= 90, "against nginx at 40 keep-alive connections the generator was saturated")
    cl_min, ka_max = _value(ds, "cpu_us_per_req_min", NGINX, CL40), _value(ds, "cpu_us_per_req_max", NGINX, KA40)
    if _known(cl_min, ka_max):
        claim(cl_min > ka_max, "with Connection: close nginx's CPU per request rises, in every repeat")
    return out


def _p99_reading(p99: float) -> str:
    """What http.server's p99 says about dropped connection attempts (the kernel's retransmission timer: 1 s,
    then 2 s more)."""
    if not _known(p99):
        return "not measured in this run"
    if p99 < 900:
        return ("under the kernel's first retransmission timeout of one second, so no dropped connection attempt "
                "reached the 99th percentile in this run")
    if p99 < 2900:
        return ("over one second: a connection attempt that is dropped once waits out the kernel's first "
                "retransmission timeout of one second, then its turn in the queue")
    return "three seconds or more: some connection attempts were dropped twice (one second, then two more)"


def _overflows(ds) -> str:
    """The kernel's own count of dropped connection attempts (ListenOverflows, machine-wide, read before and after
    each run while only http.server was loaded) at 40 keep-alive connections, as a clause."""
    df = ds.df
    runs = df[(df.server == PYTHON) & (df.tool == "wrk") & df.ok & (df["mode"] == "keepalive")
              & (df.connections == 40) & (df.work_ms == 0) & (df.pipeline == 1)]
    ovf = runs["listen_overflows"].dropna() if "listen_overflows" in runs else runs.iloc[0:0]
    if not len(ovf):
        return "the kernel's listen-queue counters were not recorded"
    if ovf.max() == 0:
        runs = "the one run" if len(ovf) == 1 else f"any of the {len(ovf):,} runs"
        return f"the kernel counted no listen-queue overflows (ListenOverflows) in {runs} of that point"
    return (f"the kernel counted {span_of(ovf, ',.0f')} listen-queue overflows (ListenOverflows) per run of that "
            f"point ({len(ovf)} {'run' if len(ovf) == 1 else 'runs'})")


def python_tail(ds) -> dict:
    """http.server at 40 keep-alive connections: its threads at once (python_threads), p50 and p99, what the p99
    says, and the kernel's count of listen-queue overflows."""
    s = ds.summary()
    py = s[(s.server == PYTHON) & (s.tool == "wrk")]
    p50, p99 = _value(ds, "p50_ms", PYTHON, KA40), _value(ds, "p99_ms", PYTHON, KA40)
    if len(py):
        claim(py.threads.max() < py.connections.max() / 10,
              "http.server's threads at once are far fewer than its connections",
              at={"most connections": int(py.connections.max())}, threads=py.threads.max())
    if _known(p50, p99):
        claim(p99 > 100 * p50, "http.server's p99 is hundreds of times its median", p50=p50, p99=p99)
    return {"python_threads": span_of(py.threads, ".0f"), "python_ka40_p50": p50, "python_ka40_p99": p99,
            "python_p99_reading": _p99_reading(p99), "python_ka40_overflows": _overflows(ds)}


def _against_design(ds, failed: list[str]) -> str:
    """How http.server's failed cases compare with the three its design predicts, as a clause."""
    if PYTHON not in ds.battery:
        return "so this run cannot tell whether its design predicts its failures"
    if set(failed) == set(PREDICTED):
        return "exactly the three its design predicts"
    differs = [f"it also failed {listing(c for c in failed if c not in PREDICTED)}"
               if set(failed) - set(PREDICTED) else "",
               f"it passed {listing(c for c in PREDICTED if c not in failed)}"
               if set(PREDICTED) - set(failed) else ""]
    return "but its design predicts three failures, and this run differs: " + "; ".join(d for d in differs if d)


def _case(ds, case: str) -> dict | None:
    """http.server's verdict in one battery case; None where the battery did not run it."""
    return next((v for v in ds.battery.get(PYTHON, []) if v["case"] == case), None)


def _concurrent(verdict: dict | None) -> str:
    """What the 500 concurrent clients met at http.server, as a clause."""
    if verdict is None:
        return "the battery did not run this case"
    n = battery_counts(verdict)
    if n.get("failed"):
        return f"{tally(n['failed'], n['clients'], 'client', verbs=None)} failed (the first: {n['first_failure']})"
    if verdict["passed"]:
        return (tally(n["clients"], n["clients"], "client", "answered within the battery's timeout")
                if n.get("clients") else "every client was answered within the battery's timeout")
    return verdict["detail"]


def battery(ds) -> dict:
    """The conformance battery's verdicts the text states: nginx's, http.server's against what its design
    predicts, its 500 concurrent clients, its malformed request line, and whether it survived every case."""
    nginx_verdict, _ = battery_verdict(ds.battery.get(NGINX, []))
    python_verdict, python_failed = battery_verdict(ds.battery.get(PYTHON, []))
    malformed = _case(ds, "malformed_request_line")
    dead = [v["case"] for v in ds.battery.get(PYTHON, []) if not v["alive_after"]]
    alive = ("Whether it survives every case, this run did not check." if PYTHON not in ds.battery
             else "It still answered after every case: slow and limited is not broken." if not dead
             else f"It stopped answering after {listing(dead)}: that is broken, not slow.")
    return {"battery_nginx": nginx_verdict,
            "battery_python": f"{python_verdict}, {_against_design(ds, python_failed)}",
            "battery_python_500": _concurrent(_case(ds, "concurrent_500")),
            "battery_python_malformed": ("was not checked on" if malformed is None
                                         else "passed" if malformed["passed"] else "failed"),
            "battery_python_alive": alive}


def _points(rows: pd.DataFrame, none: str) -> str:
    """Load points said once per tool, mode and pipelining: "wrk keepalive at 10, 40 and 100 connections and ab
    close at 40 connections"; `none` where there are none."""
    groups: dict[tuple, list[int]] = {}
    for r in rows.itertuples():
        groups.setdefault((r.tool, r.mode, r.pipeline > 1), []).append(int(r.connections))
    return listing(f"{tool} {mode} at {listing(str(c) for c in cs)} connection"
                   f"{'s' if len(cs) > 1 or cs[0] > 1 else ''}{' pipelined' if piped else ''}"
                   for (tool, mode, piped), cs in groups.items()) or none


def exercise_5(ds) -> dict:
    """Exercise 5: at which of nginx's points nginx used more of its core than the generator did of its own
    (method_ex5_server_first), how many were generator-bound, where the generator filled its core and nginx did
    not (method_ex5_gen_first), and where both were near full (method_ex5_both)."""
    s = ds.summary()
    ng = s[s.server == NGINX]
    server, generator = ng.rps * ng.cpu_us_per_req / 1e6, ng.client_cpu_pct / 100
    return {"method_ex5_server_first": _points(ng[server > generator], "none"),
            "method_ex5_bound": tally(int(ng.generator_bound.sum()), len(ng), "point", "generator-bound"),
            "method_ex5_gen_first": _points(ng[(generator >= 0.85) & (server <= 0.7)], "none in this run"),
            "method_ex5_both": _points(ng[(generator >= 0.8) & (server >= 0.8)], "none in this run")}


PARTS = (provenance, outliers, forty_connections, python_tail, battery, exercise_5)


def values(ds) -> dict:
    """Every value the page glues from the baselines dataset (the figures' captions aside): each part's, merged."""
    return {name: value for part in PARTS for name, value in part(ds).items()}

