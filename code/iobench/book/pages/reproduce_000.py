"""The analysis behind book/java/reproduce-000.md: write-up 000's three Java servers as published beside the book's
corrected ones, each sleeping 20 ms per request under the write-up's `wrk -t8 -c40` (the `seed-000` dataset).

Every function takes the dataset and returns {glue name: value}; numbers the page formats itself
({glue:text}`name:,.1f`) are floats, NaN for a server the dataset lacks; sentences are text, or phrases.markdown
where they hold code type. The claims the page's sentences make are checked here, on every capture but a smoke one
(pages.checks).
"""
from __future__ import annotations

import math

import pandas as pd

from iobench.book.claims import claim
from iobench.book.pages import checks
from iobench.book.phrases import NA, listing, markdown, span_of
from iobench.data.report import value_in

NAN = float("nan")
# glue prefix of each server: s(ource) or c(orrected), then b(locking), p(ool) or n(etty)
KEYS = {"java-seed000-blocking": "sb", "java-seed000-threadpool": "sp", "java-seed000-netty": "sn",
        "java-blocking": "cb", "java-threadpool": "cp", "java-netty": "cn"}
ONE_AT_A_TIME = ("java-seed000-blocking", "java-blocking")
CLOSE_UNREAD = {"java-seed000-blocking", "java-seed000-threadpool"}  # answer, then close without reading
# the write-up's pool: 46,647 read errors for 3,041 requests (its write errors, if any, not stated)
SOURCE_READ_ERRORS_PER_REQ = 46_647 / 3_041


def _finite(*xs) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def runs(ds) -> pd.DataFrame:
    """The page's table: each server's summary with the medians over its repeats of wrk's socket errors, the
    requests it counted, the resets the host sent and the sockets closed with unread data, and its Little's-law
    bound."""
    err = ds.df.groupby("server", sort=False).agg(
        errors_read=("errors_read", "median"), errors_write=("errors_write", "median"),
        errors_connect=("errors_connect", "median"), requests=("requests", "median"),
        resets_sent=("tcp_out_rsts", "median"), closed_unread=("tcp_abort_on_close", "median")).reset_index()
    r = ds.summary().merge(err, on="server")
    r["bound"] = [50.0 if sid in ONE_AT_A_TIME else 2000.0 for sid in r.server]
    return r


def _pick(t: pd.DataFrame, server: str, col: str = "rps") -> float:
    return value_in(t, col, NAN, server=server)


def rates(ds, check: bool | None = None) -> dict:
    """Each server's requests per second, median latency, read errors, requests and sockets closed unread
    ({key}_rps, ...), Netty over the pool as published and corrected, and the as-published Netty's threads. Claims:
    as published, Netty was not many times the pool (the headline did not reproduce); it ran more threads than there
    were connections; the corrected java-blocking answered one connection."""
    t = runs(ds).set_index("server")
    out = {}
    for sid, k in KEYS.items():
        out |= {f"{k}_rps": _pick(t, sid), f"{k}_p50": _pick(t, sid, "p50_ms"),
                f"{k}_read_err": _pick(t, sid, "errors_read"), f"{k}_requests": _pick(t, sid, "requests"),
                f"{k}_unread": _pick(t, sid, "closed_unread")}
    out |= {"netty_vs_pool_published": out["sn_rps"] / out["sp_rps"],
            "netty_vs_pool_corrected": out["cn_rps"] / out["cp_rps"],
            "sn_threads": _pick(t, "java-seed000-netty", "threads")}
    conns = int(ds.df.connections.max()) if len(ds.df) else 0
    if checks(ds, check) and _finite(out["netty_vs_pool_published"], out["sn_threads"]):
        claim(out["netty_vs_pool_published"] < 2, "as published, Netty was not many times the thread pool: the "
              "write-up's headline did not reproduce", ratio=out["netty_vs_pool_published"])
        claim(out["sn_threads"] > conns, "the write-up's Netty server ran more threads than there were connections",
              threads=out["sn_threads"], connections=conns)
        claim(_pick(t, "java-blocking", "conns_served") == 1, "the corrected java-blocking answered one connection",
              served=_pick(t, "java-blocking", "conns_served"))
    return out


def _count(n: float, noun: str) -> str:
    """A count of things as prose: "no read errors", "1 read error", "1,204 read errors"."""
    if not _finite(n):
        return f"{NA} {noun}s"
    return f"no {noun}s" if round(n) == 0 else f"{n:,.0f} {noun}{'' if round(n) == 1 else 's'}"


def pool_errors(ds, check: bool | None = None) -> dict:
    """The as-published pool's socket errors (read and write) per request, how many times fewer than the
    write-up's, whether it had write errors besides its read errors (the clause in parentheses), and the corrected
    pool's read errors. Claim: many (over ten) times fewer per request than the write-up's."""
    sp = ds.df[ds.df.server == "java-seed000-threadpool"]
    per_req = float(((sp.errors_read + sp.errors_write) / sp.requests).median()) if len(sp) else NAN
    write = float(sp.errors_write.median()) if len(sp) else NAN
    if checks(ds, check) and _finite(per_req):
        claim(SOURCE_READ_ERRORS_PER_REQ > 10 * per_req, "the as-published pool had many times fewer socket errors "
              "per request here than the write-up's", here=per_req, write_up=SOURCE_READ_ERRORS_PER_REQ)
    cp_read = value_in(runs(ds), "errors_read", NAN, server="java-threadpool")
    return {"sp_err_per_req": per_req,
            "s0_src_err_ratio": f"{SOURCE_READ_ERRORS_PER_REQ / per_req:.0f}" if _finite(per_req) and per_req else NA,
            "sp_write_said": "and write errors besides" if not _finite(write) or write > 0 else "and no write errors",
            "cp_read_err_said": _count(cp_read, "read error")}


def load(ds) -> dict:
    """The load every server was under: its connections, its work per request (ms) and the bound they set on a
    server that holds every connection's request at once (requests per second)."""
    if not len(ds.df):
        return {"s0_conns": NA, "s0_work_ms": NAN, "s0_bound": NAN}
    conns, work_ms = int(ds.df.connections.iloc[0]), float(ds.df.work_ms.iloc[0])
    return {"s0_conns": conns, "s0_work_ms": work_ms, "s0_bound": conns / (work_ms / 1000) if work_ms else NAN}


def per_request(ds) -> pd.DataFrame:
    """Exercise 4's table: each server's socket errors, resets sent and sockets closed with unread data per request
    answered (medians over its repeats), and its resets in a whole run."""
    per = ds.df.groupby("server", sort=False)[["requests", "errors_read", "errors_write", "tcp_out_rsts",
                                               "tcp_abort_on_close"]].median()
    per["errors/req"] = (per.errors_read + per.errors_write) / per.requests
    per["resets/req"] = per.tcp_out_rsts / per.requests
    per["closed unread/req"] = per.tcp_abort_on_close / per.requests
    return per


def _bad_said(bad: pd.DataFrame) -> str:
    """Exercise 4's first sentence: which servers had socket errors, and how many errors and resets per request."""
    if not len(bad):
        return "No server had more than half a socket error per request."
    return (f"Only the servers that close without reading the request had errors: {listing(bad.index)}, with "
            f"{span_of(bad['errors/req'], '.2f')} socket errors and {span_of(bad['resets/req'], '.2f')} resets per "
            "request.")


def _good_said(good: pd.DataFrame, conns) -> str:
    """Exercise 4's last sentence: the other servers' socket errors per request and resets in a whole run."""
    worst = good["errors/req"].max() if len(good) else NAN
    errors = ("no socket errors" if not _finite(worst) or f"{worst:.3f}" == "0.000"
              else f"at most {worst:.3f} socket errors per request")
    if not len(good) or good.tcp_out_rsts.max() == 0:
        return f"The other servers had {errors}, and sent no resets."
    return (f"The other servers had {errors}, and {span_of(good.tcp_out_rsts, ',.0f')} resets in a whole run: of "
            f"the order of `wrk`'s {conns} connections, not of the requests (this dataset does not say which sockets "
            "sent them).")


def exercise_4(ds, check: bool | None = None) -> dict:
    """Exercise 4: the servers with socket errors (over half a one per request) and their errors, resets and closes
    with unread data per request; the others' errors and resets. Claims: the servers with errors are the two that
    close without reading; almost every answer of theirs was followed by a close with unread data; the others'
    resets were of the order of the connections (at most twice as many)."""
    per = per_request(ds)
    bad = per[per["errors/req"] > 0.5]
    good = per.drop(bad.index)
    conns = int(ds.df.connections.max()) if len(ds.df) else NA
    if checks(ds, check) and len(per):
        claim(set(bad.index) == CLOSE_UNREAD, "only the servers that close without reading the request had errors",
              with_errors=list(bad.index))
        claim(bool((bad["closed unread/req"] > 0.8).all()), "almost every answer of the servers with errors was "
              "followed by a close with unread data", closed_unread=bad["closed unread/req"].to_dict())
        claim(bool((good.tcp_out_rsts <= 2 * conns).all()), "the other servers' resets in a run were of the order "
              "of wrk's connections", resets=good.tcp_out_rsts.to_dict(), connections=conns)
    return {"s0_bad_said": _bad_said(bad), "s0_bad_unread": span_of(bad["closed unread/req"], ".2f"),
            "s0_good_said": markdown(_good_said(good, conns))}


def parts(ds, check: bool | None = None) -> list[dict]:
    """Every part the page glues, in its order (the live exercises glue nothing)."""
    return [rates(ds, check), pool_errors(ds, check), load(ds), exercise_4(ds, check)]


def values(ds, check: bool | None = None) -> dict:
    """Every value the page glues, merged."""
    return {name: value for part in parts(ds, check) for name, value in part.items()}
