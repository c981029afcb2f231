"""Where a request's CPU goes, by kernel path and kind of user code: the `kernel-paths` run (run/kpaths.py names the
paths), read by book/synthesis/side-by-side.md and many-connections.md.

Each server was sampled in a closed loop of 40 connections, kept alive and pipelined 16 deep, and run once more kept
alive without sampling, in the same process: the CPU per request of the two keep-alive runs says what sampling cost.
A server the run did not measure (a smoke run measures three) reads n/a, never a KeyError.
"""
from __future__ import annotations

import pandas as pd

from iobench.book.claims import claim
from iobench.book.pages import key
from iobench.book.phrases import NA, ids, markdown, span, span_of, words
from iobench.data.report import number
from iobench.run import kpaths
from iobench.run import kprofile
from iobench.run.kprofile import FREQUENCY
from iobench.servers import manifest

# the figure's and the table's groups of paths, in stacking order (every path in exactly one; six at most, so that a
# reader tells the colours apart)
NET = "TCP and IP"
USER = "user code"
GROUPS = {
    NET: ("TCP send", "TCP receive", "IP, loopback and softirq"),
    "system calls": ("system calls",),
    "epoll, poll, io_uring": ("epoll", "poll and select", "io_uring"),
    "scheduler and futex": ("scheduler", "futex"),
    "memory and other kernel": ("memory", "connections", "timers and interrupts", "other kernel"),
    USER: ("C library", "own code", "other libraries", "unknown user code", "JVM-generated code", "JIT compiler", "GC",
           "JVM runtime", "JDK native libraries"),
}
KERNEL_GROUPS = tuple(g for g in GROUPS if g != USER)
HANDOFF = ("java-nio-workers", "java-vthread")  # a request handed from the thread that reads to one that answers
BLOCKING = ("c-fork", "c-prefork", "c-thread", "c-threadpool", "java-thread", "java-threadpool")
LOOPS = ("nginx", "c-select", "c-poll", "c-epoll", "c-epoll-et", "c-epoll-reuseport", "c-epoll-workers", "c-coroutine",
         "c-uring", "c-uring-multishot", "java-nio", "java-nio-multi", "java-netty", "java-mina")
SOFTIRQ = ("do_softirq_[k]", "__do_softirq_[k]", "net_rx_action_[k]")


def _col(path: str) -> str:
    return f"kp_{kpaths.slug(path)}_us_per_req"


def order(ds) -> list[str]:
    """The servers as the plan measured them (nginx, the C servers, the Java servers)."""
    return list(dict.fromkeys(ds.df.server))


def _runs(ds, pipeline: int, where: dict, profiled: bool | None = True) -> pd.DataFrame:
    """The good runs at one depth of pipelining whose columns equal `where` (e.g. rate=5000.0 for an RPC dataset),
    sampled or not as `profiled` says (None: both)."""
    df = ds.df[ds.df.ok_run & (ds.df.pipeline == pipeline)]
    if profiled is not None:
        df = df[df.profiled == profiled]
    for col, value in where.items():
        df = df[df[col] == value]
    return df


def sampled(ds, pipeline: int = 1, **where) -> pd.DataFrame:
    """The sampled runs at one depth of pipelining (and `where`: `_runs`), every repeat: a row per run, a column per
    group (µs of CPU per request), 'kernel', 'user', 'sampled' (their sum) and 'cpu' (the cgroup's CPU per request)."""
    df = _runs(ds, pipeline, where)
    out = pd.DataFrame({g: sum(df[_col(p)] for p in paths) for g, paths in GROUPS.items()})
    return out.assign(server=df.server.values if len(df) else [], repeat=df.repeat.values if len(df) else [],
                      kernel=df.kp_kernel_us_per_req.values if len(df) else [],
                      user=df.kp_user_us_per_req.values if len(df) else [],
                      cpu=df.server_cpu_us_per_req.values if len(df) else [])


def by_path(ds, pipeline: int = 1, **where) -> pd.DataFrame:
    """Medians over the repeats of `sampled`, one row per server in the plan's order: each group's, 'cpu' (the
    cgroup's), 'kernel' and 'user' (the sums of their groups), 'net' (TCP and IP), 'kernel %' and 'net %' (of the
    sampled total) and 'repeats'."""
    s = sampled(ds, pipeline, **where)
    if s.empty:
        return pd.DataFrame(columns=[*GROUPS, "kernel", "user", "cpu", "net", "kernel %", "net %", "repeats"])
    m = s.groupby("server")[[*GROUPS, "cpu"]].median()
    # a server's kernel and user time: the sums of its groups' medians, so that every number said adds up to the bar
    m = m.assign(kernel=m[list(KERNEL_GROUPS)].sum(axis=1), user=m[USER], net=m[NET],
                 repeats=s.groupby("server").size())
    total = m.kernel + m.user
    m = m.assign(**{"kernel %": 100 * m.kernel / total, "net %": 100 * m.net / total})
    return m.reindex([x for x in order(ds) if x in m.index])


def path_median(ds, path: str, pipeline: int = 1, **where) -> pd.Series:
    """One path's µs of CPU per request (run/kpaths.PATHS), per server: the median of its sampled runs."""
    df = _runs(ds, pipeline, where)
    return df.groupby("server")[_col(path)].median()


def coverage(ds, **where) -> pd.DataFrame:
    """Per sampled run at one request per round trip (and `where`): how much of the server's CPU its samples cover
    ('server %': its samples at the frequency, against the CPU its cgroup was charged) and how much of the window
    the core's samples cover ('core %': every sample of the core, the idle task's and other tasks' included, against
    the measured window at the frequency; below 100 %, perf took no sample at all for part of the core's time)."""
    df = _runs(ds, 1, where)
    df = df[df.kprofile_file.notna()]
    freq = ds.meta.get("kprofile", {}).get("frequency_hz", FREQUENCY)
    window = ds.meta.get("plan", {}).get("measured_s")
    rows = []
    for r in df.itertuples():
        core = sum(kprofile.read_folded(ds.path / r.kprofile_file).values())
        charged = r.server_cpu_us_per_req * r.ok / 1e6
        rows.append({"server": r.server, "repeat": r.repeat,
                     "server %": 100 * r.kp_samples / freq / charged if charged else float("nan"),
                     "core %": 100 * core / freq / window if window else float("nan")})
    return pd.DataFrame(rows, columns=["server", "repeat", "server %", "core %"])


def pairs(ds, **where) -> pd.DataFrame:
    """Each repeat's two keep-alive runs of a server (where `where` says), in one process (the unsampled first): their
    CPU per request ('unsampled', 'sampled') and the change sampling made, in % ('change'); a repeat that lacks either
    is left out."""
    df = _runs(ds, 1, where, profiled=None)
    pair = df.pivot_table(index=["server", "repeat"], columns="profiled", values="server_cpu_us_per_req")
    if True not in pair or False not in pair:
        return pd.DataFrame(columns=["server", "repeat", "unsampled", "sampled", "change"])
    pair = pair.rename(columns={True: "sampled", False: "unsampled"}).dropna()
    return pair.assign(change=100 * (pair.sampled / pair.unsampled - 1)).reset_index()


def overhead(ds, **where) -> pd.DataFrame:
    """What sampling cost, per server: the change in CPU per request of each repeat's sampled keep-alive run over its
    unsampled one (`pairs`), in %: median, lowest and highest of the repeats."""
    g = pairs(ds, **where).groupby("server").change
    out = pd.DataFrame({"median": g.median(), "min": g.min(), "max": g.max(), "repeats": g.size()})
    return out.reindex([x for x in order(ds) if x in out.index])


def noise(ds, **where) -> pd.Series:
    """How much a server's unsampled CPU per request moved between repeats, in % of its median: (max - min) /
    median, per server with two repeats or more; the yardstick sampling's cost is read against."""
    g = pairs(ds, **where).groupby("server").unsampled
    spread = 100 * (g.max() - g.min()) / g.median()
    return spread[g.size() > 1]


def receive_in_send(ds) -> pd.Series:
    """Per server, the share of its TCP-receive samples (keep-alive, sampled, every repeat) taken inside a softirq
    that one of its own sends raised: on loopback, the generator's socket receiving the answer, on the server's core."""
    share = {}
    rows = ds.df[ds.df.ok_run & ds.df.profiled & (ds.df.pipeline == 1) & ds.df.kprofile_file.notna()]
    for server, g in rows.groupby("server", sort=False):
        jvm = manifest.get(server).lang == "Java"
        inside = total = 0
        for f in g.kprofile_file:
            for stack, n in kprofile.read_folded(ds.path / f).items():
                if not stack.startswith("[") and kpaths.path_of(stack, jvm) == "TCP receive":
                    total += n
                    inside += n if any(x in stack for x in SOFTIRQ) else 0
        if total:
            share[server] = 100 * inside / total
    return pd.Series(share, dtype=float)


def _native(servers) -> list[str]:
    """The servers whose CPU per request does not warm up: nginx and the C servers (not a JVM)."""
    return [s for s in servers if manifest.get(s).lang != "Java"]


def values(ds) -> dict:
    """Every number and phrase the pages quote from kernel-paths, its claims checked."""
    ka, p16, cost, both, moved = by_path(ds, 1), by_path(ds, 16), overhead(ds), pairs(ds), noise(ds)
    native = _native(cost.index)
    c_servers = [s for s in ka.index if manifest.get(s).lang == "C"]
    java = [s for s in ka.index if manifest.get(s).lang == "Java"]
    handoff = [s for s in HANDOFF if s in ka.index]
    loops = [s for s in LOOPS if s in ka.index]
    sched = ka["scheduler and futex"]
    if len(ka):
        claim(bool((ka["kernel %"] > 75).all()),
              "the kernel took more than three quarters of every server's CPU per request at keep-alive",
              lowest=ka["kernel %"].min())
    if len(ka) > 1:
        spread_net = ka.net.max() / ka.net.min()
        spread_all = (ka.kernel + ka.user).max() / (ka.kernel + ka.user).min()
        claim(spread_net < spread_all, "TCP and IP per request varied less between the servers than their whole CPU "
              "per request", net=spread_net, whole=spread_all)
    blocking = [s for s in BLOCKING if s in ka.index]
    if handoff and blocking:
        claim(bool(sched[handoff].min() > sched[blocking].max()), "the servers that hand a request between threads "
              "spent more in the scheduler and futex per request than any thread or process per connection",
              handoff=sched[handoff].min(), blocking=sched[blocking].max())
    if blocking and loops:
        claim(bool(sched[blocking].min() > 10 * sched[loops].max()), "every thread or process per connection spent "
              "more than ten times as much in the scheduler and futex per request as any event loop",
              blocking=sched[blocking].min(), loops=sched[loops].max())
    if {"nginx", "c-epoll"} <= set(ka.index) & set(p16.index):
        send = pd.DataFrame({"ka": path_median(ds, "TCP send", 1), "p16": path_median(ds, "TCP send", 16)})
        same = abs(send.p16["nginx"] / send.ka["nginx"] - 1) < 0.2
        claim(bool(same and send.p16["c-epoll"] < send.ka["c-epoll"] / 5),
              "nginx spent about as much in TCP send per pipelined request as per request one at a time (within "
              "20 %), c-epoll less than a fifth", nginx=tuple(send.loc["nginx"]), c_epoll=tuple(send.loc["c-epoll"]))
    if len(both) and len(moved):
        claim(bool(abs(both.change.median()) < moved.median()), "sampling changed a server's CPU per request by "
              "less, in the median, than its unsampled runs moved between repeats", sampling=both.change.median(),
              noise=moved.median())
    inside = receive_in_send(ds)
    if len(inside):
        claim(bool((inside > 50).all()), "on every server most TCP-receive samples ran inside a softirq its own send "
              "raised", lowest=inside.min())
    if len(p16):
        claim(bool((p16.kernel + p16.user < ka.kernel + ka.user).reindex(p16.index).all()),
              "every server's sampled CPU per request was lower pipelined than at one request per round trip")
    saved = pipelining_saved(ka, p16)
    if len(saved):
        claim(bool((saved["kernel %"] > 50).all()), "on every server most of what pipelining saved per request was "
              "kernel time", lowest=saved["kernel %"].min())
    agree = (ka.kernel + ka.user) / ka.cpu
    if len(agree):
        claim(bool(agree.between(0.9, 1.1).all()), "the samples added up to the CPU the cgroup charged, within 10 %",
              lowest=agree.min(), highest=agree.max())

    def at(s, col, frame=ka, spec=".1f"):
        return number(frame.loc[s, col], spec) if s in frame.index else NA

    out = {
        "kp_frequency": f"{int(ds.meta.get('kprofile', {}).get('frequency_hz', FREQUENCY)):,}",
        "kp_servers": words(len(ka)) if len(ka) < 10 else f"{len(ka):,}",
        "kp_repeats": words(int(ka.repeats.min())) if len(ka) else NA,
        "kp_kernel_share": span_of(ka["kernel %"], ".0f", " %"),
        "kp_kernel_share_c": span_of(ka.loc[c_servers, "kernel %"], ".0f", " %"),
        "kp_net_us": span_of(ka.net, ".1f", " µs"),
        "kp_net_share": span_of(ka["net %"], ".0f", " %"),
        "kp_total_us": span_of(ka.kernel + ka.user, ".1f", " µs"),
        "kp_syscalls_us": span_of(ka["system calls"], ".1f", " µs"),
        "kp_sched_handoff": span_of(sched[handoff], ".1f", " µs"),
        "kp_sched_blocking": span_of(sched[blocking], ".1f", " µs"),
        "kp_sched_loops_max": number(sched[loops].max(), ".2f") + " µs" if loops else NA,
        "kp_sched_nio2": at("java-nio2", "scheduler and futex", spec=".2f"),
        "kp_handoff": markdown(ids(handoff, NA)),
        "kp_receive_in_send": span_of(inside, ".0f", " %"),
        "kp_user_c": span_of(ka.loc[c_servers, "user"], ".1f", " µs"),
        "kp_user_java": span_of(ka.loc[java, "user"], ".1f", " µs"),
        "kp_user_java_share": span_of(100 * ka.loc[java, "user"] / (ka.kernel + ka.user)[java], ".0f", " %"),
        "kp_p16_total": span_of(p16.kernel + p16.user, ".2f", " µs"),
        "kp_p16_kernel_share": span_of(p16["kernel %"], ".0f", " %"),
        "kp_p16_saved_kernel": span_of(saved["kernel %"], ".0f", " %"),
        "kp_p16_example": markdown(_saved_example(saved)),
        "kp_overhead_native": span_of(cost.loc[native, "median"], "+.0f", " %"),
        "kp_overhead_java": span_of(cost.loc[[s for s in cost.index if s not in native], "median"], "+.0f", " %"),
        "kp_overhead_median": number(both.change.median(), "+.0f") + " %" if len(both) else NA,
        "kp_overhead_middle": span(both.change.quantile(0.25), both.change.quantile(0.75), "+.0f", " %")
        if len(both) else NA,
        "kp_overhead_range": span_of(both.change, "+.0f", " %"),
        "kp_pairs": f"{len(both):,}",
        "kp_noise": number(moved.median(), ".0f") + " %" if len(moved) else NA,
        "kp_agree": span(100 * agree.min(), 100 * agree.max(), ".0f", " %") if len(agree) else NA,
    }
    sends = {load: path_median(ds, "TCP send", depth) for load, depth in (("ka", 1), ("p16", 16))}
    out |= {f"kp_send_{key(s)}_{load}": number(send[s], ".2f") if s in send.index else NA for s in ("nginx", "c-epoll")
            for load, send in sends.items()}
    for s in ("c-epoll", "c-uring", "c-uring-multishot", "nginx", "java-netty", "java-vthread", "c-fork", "c-thread"):
        k = key(s)
        out |= {f"kp_net_{k}": at(s, "net"), f"kp_total_{k}": number(ka.kernel[s] + ka.user[s], ".1f")
                if s in ka.index else NA, f"kp_syscalls_{k}": at(s, "system calls"),
                f"kp_wait_{k}": at(s, "epoll, poll, io_uring"), f"kp_user_{k}": at(s, "user")}
    return out


def pipelining_saved(ka: pd.DataFrame, p16: pd.DataFrame) -> pd.DataFrame:
    """Per server measured both ways (`by_path` at 1 and at 16), what pipelining saved of its CPU per request:
    'before' and 'after' (µs, kernel + user), the kernel's 'kernel before' and 'kernel after', 'saved' and 'kernel %'
    (the share of the saving that was kernel time); a server that saved nothing has no share and is left out."""
    both = [s for s in ka.index if s in p16.index]
    out = pd.DataFrame({"before": (ka.kernel + ka.user)[both], "after": (p16.kernel + p16.user)[both],
                        "kernel before": ka.kernel[both], "kernel after": p16.kernel[both]})
    out = out.assign(saved=out.before - out.after)
    out = out[out.saved > 0]
    return out.assign(**{"kernel %": 100 * (out["kernel before"] - out["kernel after"]) / out.saved})


def _saved_example(saved: pd.DataFrame) -> str:
    """One server's numbers behind the share: java-netty's, else c-epoll's, else the first measured."""
    if saved.empty:
        return NA
    s = next((x for x in ("java-netty", "c-epoll") if x in saved.index), saved.index[0])
    r = saved.loc[s]
    return (f"`{s}`'s CPU per request fell from {number(r.before, '.2f')} to {number(r.after, '.2f')} µs, its kernel "
            f"time from {number(r['kernel before'], '.2f')} to {number(r['kernel after'], '.2f')}")


def table(ds, pipeline: int = 1, **where) -> pd.DataFrame:
    """The page's table: µs of CPU per request by group (medians), the total (the bar), the cgroup's CPU per request
    and the kernel's share."""
    m = by_path(ds, pipeline, **where)
    shown = m[list(GROUPS)].assign(total=m.kernel + m.user, cgroup=m.cpu, **{"kernel %": m["kernel %"]})
    return shown.rename_axis("server").reset_index()


URING_VS = ("c-epoll", "c-uring", "c-uring-multishot")


def loopback(ds) -> dict:
    """What many-connections quotes: TCP and IP against the rest for c-epoll and the two io_uring servers, and the
    claim that no interface changes the TCP part."""
    ka = by_path(ds, 1)
    have = [s for s in URING_VS if s in ka.index]
    if len(have) > 1:
        net = ka.loc[have, "net"]
        claim(bool(net.max() / net.min() < 1.25), "c-epoll and the io_uring servers spent about the same in TCP and IP "
              "per request (within 25 %)", at={"servers": ", ".join(have)}, highest=net.max(), lowest=net.min())
    if {"c-epoll", "c-uring-multishot"} <= set(ka.index):
        e, m = ka.loc["c-epoll"], ka.loc["c-uring-multishot"]
        claim(bool(m["system calls"] < e["system calls"] and m["epoll, poll, io_uring"] > e["epoll, poll, io_uring"]),
              "c-uring-multishot spent less than c-epoll on system-call entry, exit and the socket layer, and more in "
              "io_uring's own code than c-epoll in epoll's", calls=(m["system calls"], e["system calls"]),
              wait=(m["epoll, poll, io_uring"], e["epoll, poll, io_uring"]))
    if {"c-uring", "c-uring-multishot"} <= set(ka.index):
        claim(bool(ka.loc["c-uring", "epoll, poll, io_uring"] > ka.loc["c-uring-multishot", "epoll, poll, io_uring"]),
              "c-uring spent more in io_uring's own code per request than c-uring-multishot")
    rest = ka.kernel + ka.user - ka.net
    return {f"mc_kp_{what}_{key(s)}": number(v[s], ".1f") if s in v.index else NA
            for s in URING_VS for what, v in (("net", ka.net), ("rest", rest), ("total", ka.kernel + ka.user),
                                              ("syscalls", ka["system calls"]),
                                              ("wait", ka["epoll, poll, io_uring"]))}
