"""The analysis behind book/java/mina-netty-results.md: from the chapter's three echo datasets to the values its
prose glues.

    link_sweep(sweep)            echo-sweep on the gigabit link: the wire's limit, 5 KiB and 10 KiB, the big sizes
    loopback_sweep(sweep)        echo-sweep on loopback: CPU per message, Mina's 100 KiB stalls
    link_stalls(sweep)           the deep dive on the link sweep's stalls, its queues and its noisy runs
    forced_split(exp, sweep)     echo-experiments' split-nagle rows: forced splits with and without Nagle
    packet_trace(exp)            its tcpdump captures: the stalls inside a response, and one stall's timing
    partial_arrivals(exp)        its partial rows: natural partial arrivals, one message in ten
    allocation(exp)              its JFR runs at 50 KiB: the allocation sites of the two Nettys
    split_rate(rate)             echo-split-rate: which sizes split, and which splits stall
    published_2013()             what the 2013 write-up's own rows allow (its numbers, not a dataset's)

Each returns {glue name: value}: numbers the page formats itself ({glue:text}`name:.0f`) are floats or ints (NaN
for a point the capture lacks), text is formatted here (n/a where the capture lacks it). The claims the page's
sentences make are checked here, on every capture the book quotes; never on a smoke capture (checks()), which
measures a few points for a second or two.
"""
from __future__ import annotations

import pandas as pd

from iobench.book.claims import claim
from iobench.book.pages import checks, key
from iobench.book.phrases import NA, span, span_of, tally
from iobench.data.report import number, value_in
from iobench.kinds.echo import dataset as echo

NAN = float("nan")
KIB5, KIB10, KIB50, KIB100 = 5120, 10240, 51200, 102400
CONNECTIONS = 32  # every sweep point's connections (the queue each echo waits in on the link)
STALL_MS = 35  # an echo of 35 ms or more is a stall
FORCED = "--read-buffer 4096 --min-read-buffer 4096 --max-read-buffer 4096"  # every 5 KiB message: 4096 + 1024
FORCED10 = "--read-buffer 8192 --min-read-buffer 8192 --max-read-buffer 8192"  # every 10 KiB message: 8192 + 2048
NODELAY = " --nodelay true"
PARTIAL = "defaults; client splits 1 in 10 at 1448 B"  # the generator splits one message in ten
OTHERS = ("mina-2.0.7", "mina-2.2.10", "netty-3.6.2")  # the three set against Netty 4.2 per message on loopback
MINA = ("mina-2.0.7", "mina-2.2.10")
# The 2013 write-up's 5 KiB rows: messages per second and the mean in ms (whole milliseconds, the same for both)
PUB_MINA_TPS, PUB_NETTY_TPS, PUB_MEAN_MS, DELAYED_ACK_MS = 10155, 17971, 3, 40


def version_key(sid: str) -> str:
    """A version's part of a glue name: mina-2.0.7 -> mina_2_0_7."""
    return key(sid.replace(".", "_"))


def _float(x) -> float:
    """A number for a glue the page formats, NaN where there is none (an empty frame's min is NaN already)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return NAN


def _ratio(a: float, b: float) -> float:
    return a / b if b == b and b != 0 else NAN


def _sweep(sweep, where: str) -> pd.DataFrame:
    """The sweep's points on one link ("veth", "lo"), medians over the repeats, with each point's share of the
    1 Gbit/s wire's limit (of_wire_pct)."""
    s = sweep.summary()
    points = s[(s.experiment == "sweep") & (s.link == where)].copy()
    points["wire_limit"] = points["size"].map(echo.wire_limit)
    points["of_wire_pct"] = 100 * points["tps"] / points["wire_limit"]
    return points


def _med(s, server: str, size: int, col: str, where: str = "veth") -> float:
    """One point's median of `col` in the sweep's summary `s`, NaN where the sweep lacks it."""
    return value_in(s, col, NAN, experiment="sweep", server=server, link=where, size=size)


def _runs(sweep, where: str = "veth") -> pd.DataFrame:
    """The sweep's runs (every repeat) on one link, with the cores busy in each: server, generator and the CPU that
    belonged to neither."""
    df = sweep.df
    runs = df[(df.experiment == "sweep") & (df.link == where)].copy()
    runs["busy_cores"] = (runs.server_cpu_pct + runs.client_cpu_pct) / 100 + runs.foreign_cpu_cores
    return runs


# ---- echo-sweep -----------------------------------------------------------------------------------------------

def link_sweep(sweep, check=None) -> dict:
    """The sweep on the 1 Gbit/s link: each version's 5 KiB rate, payload and stalls (veth_5k_<version>...), Mina
    2.0.7's rate over Netty 3.6.2's, how close 5 KiB came to the wire and how busy the core was, the spread of the
    four (veth_5k_spread, in %, and the lowest), Mina's reads per 5 KiB message, the slowest version's share of the
    wire at 10 KiB (and from 10 KiB up), at 50 and 100 KiB as a range, and the cores busy there; the time one
    5 KiB message takes on the wire. Claims: the four within 15 % at 5 KiB, Mina reading a message in one read, the
    wire reached at 10 KiB and not above."""
    s, df = sweep.summary(), sweep.df
    link = _sweep(sweep, "veth")

    def at(size):
        return link[link["size"] == size]

    out = {}
    for sid in echo.VERSIONS:
        k = version_key(sid)
        out |= {f"veth_5k_{k}": _med(s, sid, KIB5, "tps"), f"veth_5k_{k}_mb": _med(s, sid, KIB5, "mb_per_s"),
                f"veth_5k_{k}_stall": _med(s, sid, KIB5, "stall_pct"), f"lo_5k_{k}": _med(s, sid, KIB5, "tps", "lo")}
    mina5 = df[(df.link == "veth") & (df["size"] == KIB5) & df.server.str.startswith("mina")]
    t5 = at(KIB5).set_index("server")["tps"]
    big, big_runs = link[link["size"] >= KIB50], _runs(sweep)[lambda r: r["size"] >= KIB50]
    wire10 = _float(at(KIB10).of_wire_pct.min())
    out |= {"veth_5k_ratio": _ratio(_med(s, "mina-2.0.7", KIB5, "tps"), _med(s, "netty-3.6.2", KIB5, "tps")),
            "veth_100k_wire_pct": _float(at(KIB100).of_wire_pct.min()),
            "veth_5k_wire": echo.wire_limit(KIB5), "wire_us_5k": 1e6 / echo.wire_limit(KIB5),
            "max_client_cpu": _float(s.client_cpu_pct.max()),
            "bound_points": int(df["generator_bound"].sum()),
            "veth_10k_wire_pct": wire10, "veth_5k_wire_pct_max": _float(at(KIB5).of_wire_pct.max()),
            "veth_5k_cpu_min": _float(at(KIB5).cpu_pct.min()),
            "mina_5k_rpm_max": number(mina5.reads_per_msg.max(), ".3f"),
            "veth_5k_spread": number(100 * (1 - t5.min() / t5.max()) if len(t5) else NAN, ".0f"),
            "veth_5k_lowest": t5.idxmin() if t5.notna().any() else NA,
            "veth_10k_cpu_max": _float(at(KIB10)[lambda d: d.server.isin(["mina-2.0.7", "netty-3.6.2"])].cpu_pct.max()),
            "veth_big_wire_span": span_of(big.of_wire_pct, ".0f"),
            "veth_big_cores": span_of(big_runs.busy_cores, ".1f"),
            "veth_big_wire_min": _float(link[link["size"] >= KIB10].of_wire_pct.min())}
    if checks(sweep, check):
        claim(t5.min() > 0.85 * t5.max(), "at 5 KiB the four versions are within 15 % of each other",
              low=t5.min(), high=t5.max())
        claim(mina5.reads_per_msg.max() < 1.01, "Mina read almost every 5 KiB message on the link in one read",
              reads_per_msg=mina5.reads_per_msg.max())
        claim(wire10 >= 95 and float(big.of_wire_pct.max()) < 95 and float(big_runs.busy_cores.min()) > 1.7,
              "at 10 KiB every version reaches 95 % or more of the wire; at 50 and 100 KiB less, with the machine's "
              "two cores nearly busy", wire_10k=wire10, wire_big=big.of_wire_pct.max(),
              cores=big_runs.busy_cores.min())
    return out


def loopback_sweep(sweep, check=None) -> dict:
    """The sweep on loopback: Netty 4.2's CPU per message against each of the other three at 50 and 100 KiB (a range
    of ratios each); at 100 KiB both Minas' share of Netty 3's rate, their idle core, p99 and p90, and Netty 3's
    reads per message. Claims: Mina's 100 KiB echoes bimodal (a p99 many times its p90), Netty 4.2 twice the others'
    CPU per message at 50 KiB and 1.6 to 1.8 times at 100 KiB; up to 50 KiB the other three within a tenth of each
    other, Netty 4.2 the cheapest at 1, 5 and 10 KiB but not at 2 KiB."""
    lo = _sweep(sweep, "lo")
    lo100 = lo[lo["size"] == KIB100].set_index("server")
    mina100 = lo100.reindex(list(MINA))
    netty3 = lo100.reindex(["netty-3.6.2"]).iloc[0]
    x = lo.set_index(["server", "size"]).cpu_us_per_msg

    def cost(size):  # Netty 4.2's CPU per message over each other version's
        return [_ratio(x.get(("netty-4.2.20", size), NAN), x.get((o, size), NAN)) for o in OTHERS]

    n42_50, n42_100 = cost(KIB50), cost(KIB100)
    out = {"lo100_mina_idle": span(100 - mina100.cpu_pct.max(), 100 - mina100.cpu_pct.min(), ".0f"),
           "lo100_mina_p99": span_of(mina100.p99_ms, ".0f"),
           "lo100_mina_p90": number(mina100.p90_ms.max(), ".1f"),
           "lo100_mina_share": number(_ratio(mina100.tps.mean(), netty3.tps), ".2f"),
           "lo100_netty3_reads": number(netty3.reads_per_msg, ".2f"),
           "lo_n42_50k_x": span_of(n42_50, ".1f"), "lo_n42_100k_x": span_of(n42_100, ".1f")}
    if checks(sweep, check):
        claim(bool((mina100.p99_ms > 10 * mina100.p90_ms).all()), "Mina's 100 KiB echoes on loopback are bimodal: "
              "a p99 many times its p90", p90=mina100.p90_ms.max(), p99=mina100.p99_ms.min())
        claim(min(n42_50) > 1.9 and 1.5 < min(n42_100) and max(n42_100) < 1.9, "per message on loopback, Netty 4.2 "
              "costs twice the others at 50 KiB, 1.6 to 1.8 times at 100 KiB", at_50k=n42_50, at_100k=n42_100)
        per = x.unstack("server")
        cheapest, three = per.idxmin(axis=1), per[list(OTHERS)][per.index <= KIB50]
        n42 = [z for z in (1024, 2048, KIB5, KIB10) if cheapest.get(z) == "netty-4.2.20"]
        claim(n42 == [1024, KIB5, KIB10] and bool((three.max(axis=1) < 1.1 * three.min(axis=1)).all()),
              "up to 50 KiB the two Minas and Netty 3.6 need about the same CPU per message; Netty 4.2 is the "
              "cheapest at 1, 5 and 10 KiB, but not at 2 KiB", at={"sizes": [int(z) for z in per.index]},
              cheapest=cheapest.to_dict())
    return out


def link_stalls(sweep, check=None) -> dict:
    """The deep dive on the link sweep's stalls: the Mina runs on loopback from 5 to 50 KiB that counted one stall
    per connection (mina_stalls_equal: "all 18 Mina runs"; and the two counts), each echo's turn on the wire at 50
    and 100 KiB, the means at 100 KiB and the p99s at 50 KiB (ranges over the versions), the runs flagged noisy
    and the CPU that belonged to neither process in them. Claims: those means and p99s near 35 ms, and only 50 and
    100 KiB link runs noisy (all of the 100 KiB ones)."""
    df, link, runs = sweep.df, _sweep(sweep, "veth"), _runs(sweep)
    first = df[df.server.str.startswith("mina") & df["size"].isin([KIB5, KIB10, KIB50]) & (df.link == "lo")]
    equal = int((first["stalls_35ms"] == first["connections"]).sum())
    mean100, p99_50 = link[link["size"] == KIB100].mean_ms, link[link["size"] == KIB50].p99_ms
    noisy, n100 = runs[runs.noisy.astype(bool)], runs[runs["size"] == KIB100]
    out = {"mina_stalls_equal_n": equal, "mina_stall_rows": len(first),
           "mina_stalls_equal": tally(equal, len(first), "Mina run", verbs=None),
           **{f"queue_{z}_ms": 1e3 * CONNECTIONS / echo.wire_limit(z) for z in (KIB50, KIB100)},
           "veth_100k_mean_span": span_of(mean100, ".0f"), "veth_50k_p99_span": span_of(p99_50, ".0f"),
           "noisy_100k_n": len(n100), "noisy_50k_n": int(runs[runs["size"] == KIB50].noisy.astype(bool).sum()),
           "noisy_foreign": span_of(noisy.foreign_cpu_cores, ".2f"),
           "noisy_foreign_max": number(noisy.foreign_cpu_cores.max(), ".2f")}
    if checks(sweep, check):
        sizes = {"link sizes": sorted(int(z) for z in set(link["size"]))}   # a brief run's are fewer
        near = pd.concat([mean100, p99_50]).sub(STALL_MS).abs().lt(0.25 * STALL_MS).all()  # within a quarter
        claim(bool(near), "at 100 KiB the mean, at 50 KiB the p99, is close to the 35 ms "
              "threshold", at=sizes, mean_100k=mean100.tolist(), p99_50k=p99_50.tolist())
        claim(bool(n100.noisy.astype(bool).all()) and set(noisy["size"]) <= {KIB50, KIB100}, "the harness flags all "
              "100 KiB link runs, and otherwise only 50 KiB ones, as noisy", at=sizes, noisy=noisy["size"].tolist())
    return out


def sweep_values(sweep, check=None) -> dict:
    """Every value the page reads from echo-sweep alone."""
    return link_sweep(sweep, check) | loopback_sweep(sweep, check) | link_stalls(sweep, check)


# ---- echo-experiments ---------------------------------------------------------------------------------------

def forced_split(exp, sweep=None, check=None) -> dict:
    """The split-nagle experiment: with Mina's read buffer pinned, every 5 KiB (10 KiB) message echoed in two
    writes, with Nagle on, with the server's or the client's TCP_NODELAY, on the link and loopback (split5_...,
    split10_...: rate, stalls, delayed ACKs per 1000 messages, CPU, the rate with Nagle on as a share of the rate
    without); Mina 2.0.7 at 100 KiB on loopback at its defaults and with --nodelay true (mina100_...); and against
    the sweep (if given): Mina's unsplit 5 KiB rate, its 100 KiB rate there and the gap between the two datasets,
    Netty 3's 100 KiB rate and CPU per message. Claims: the forced splits stall with Nagle and not without, cost
    throughput even without, and Mina at 100 KiB without Nagle stops stalling but stays dearer than Netty 3."""
    e = exp.summary()
    s = sweep.summary() if sweep is not None else None

    def at(col, link, size, variant):
        return value_in(e, col, NAN, experiment="split-nagle", link=link, size=size, variant=variant)

    def swept(server, size, col, where):
        return _med(s, server, size, col, where) if s is not None else NAN

    v5, v5nd, v10, v10nd = ("veth", KIB5, FORCED), ("veth", KIB5, FORCED + NODELAY), ("veth", KIB10, FORCED10), \
        ("veth", KIB10, FORCED10 + NODELAY)
    l5, l5nd, m100, m100nd = ("lo", KIB5, FORCED), ("lo", KIB5, FORCED + NODELAY), ("lo", KIB100, "defaults"), \
        ("lo", KIB100, "--nodelay true")
    unsplit, sweep_mina100 = swept("mina-2.0.7", KIB5, "tps", "veth"), swept("mina-2.0.7", KIB100, "tps", "lo")
    n3_cpu, n3_tps = swept("netty-3.6.2", KIB100, "cpu_us_per_msg", "lo"), swept("netty-3.6.2", KIB100, "tps", "lo")
    nd_tps, nd_cpu = at("tps", *v5nd), at("cpu_us_per_msg", *m100nd)
    gap = 1 - _ratio(at("tps", *m100), sweep_mina100)
    out = {"split5_nagle_stall": at("stall_pct", *v5), "split5_nagle_tps": at("tps", *v5),
           "split5_nodelay_tps": nd_tps, "split5_nodelay_stall": at("stall_pct", *v5nd),
           "split10_nagle_stall": at("stall_pct", *v10), "split10_nagle_tps": at("tps", *v10),
           "split5_unsplit_tps": unsplit, "split5_lo_stall": at("stall_pct", *l5),
           "split5_delack": at("delayed_acks_per_1k_msg", *v5),
           "split5_nodelay_delack": at("delayed_acks_per_1k_msg", *v5nd),
           "split5_clientnd_tps": at("tps", "veth", KIB5, FORCED + "; client nodelay"),
           "split5_clientnd_stall": at("stall_pct", "veth", KIB5, FORCED + "; client nodelay"),
           "split5_lo_tps": at("tps", *l5), "split5_lo_nodelay_tps": at("tps", *l5nd),
           "split10_nodelay_tps": at("tps", *v10nd),
           "mina100_tps": at("tps", *m100), "mina100_stall": at("stall_pct", *m100),
           "mina100_nodelay_tps": at("tps", *m100nd), "mina100_nodelay_stall": at("stall_pct", *m100nd),
           "lo100_sweep_mina_tps": sweep_mina100, "lo100_datasets_gap": number(100 * gap, ".0f"),
           "lo100_nodelay_cpu": nd_cpu, "lo100_netty3_cpu": n3_cpu, "lo100_netty3_tps": n3_tps,
           "split5_share_pct": 100 * _ratio(at("tps", *v5), nd_tps),
           "mina100_share_pct": 100 * _ratio(at("tps", *m100), at("tps", *m100nd)),
           "mina100_cpu": at("cpu_pct", *m100), "split5_nagle_cpu": at("cpu_pct", *v5)}
    if checks(exp, check):
        f5 = e[(e.experiment == "split-nagle") & (e["size"] == KIB5)].set_index(["link", "variant"])
        claim(bool(f5.loc[("veth", FORCED), "stall_pct_min"] > 30 and f5.loc[("lo", FORCED), "stall_pct_min"] > 95
                   and f5.loc[("veth", FORCED + NODELAY), "stall_pct_max"] == 0
                   and f5.loc[("lo", FORCED + NODELAY), "stall_pct_max"] == 0),
              "with Nagle on, the forced 5 KiB splits stalled many echoes on the link and almost all on loopback; "
              "with it off, none", stalls=f5.stall_pct.to_dict())
        nd_stalls = e[(e.experiment == "split-nagle") & (e["size"] == KIB100) & (e.variant == "--nodelay true")]
        if s is not None:
            claim(nd_tps < unsplit, "with Nagle off the forced splits still cost throughput against unsplit messages",
                  nodelay=nd_tps, unsplit=unsplit)
            claim(gap > 0.1, "the two datasets disagree on Mina's 100 KiB loopback rate by more than 10 %", gap=gap)
            claim(nd_cpu > 1.2 * n3_cpu and at("tps", *m100nd) < n3_tps and nd_stalls.stall_pct_max.max() == 0,
                  "with Nagle off Mina's 100 KiB echoes stop stalling, but it stays slower than Netty 3, with more "
                  "CPU per message", nodelay_cpu=nd_cpu, netty3_cpu=n3_cpu)
    return out


def trace_of(exp, size: int) -> tuple[list[dict], list[int]]:
    """The packets of the first repeat's tcpdump capture of `size` (one connection, the split forced) and the
    indexes of the stalls echo.stalls finds in it (gaps of 30 ms or more inside one response); ([], []) where the
    capture has none."""
    rows = exp.df[(exp.df.capture == "tcpdump") & (exp.df["size"] == size)].sort_values("repeat")
    if not len(rows):
        return [], []
    pcap = exp.path / (rows.iloc[0]["raw_file"].removesuffix(".txt") + ".pcap.gz")
    pk = echo.packets(echo.pcap_text(pcap))
    return pk, echo.stalls(pk, echo.VETH_SERVER_HOST)


def packet_trace(exp, check=None) -> dict:
    """The packet traces of the forced 5 and 10 KiB splits: how many stalls each holds (n/a where not captured),
    and in the 5 KiB one, how long its first held segment waited for the client's ACK (trace5_gap_ms) and how soon
    after that ACK it left (trace5_release_us). Claim (exercise 1's): the 5 KiB split stalls, on the link and in its
    trace; the 10 KiB split does in neither."""
    (pk5, stalls5), (pk10, stalls10) = trace_of(exp, KIB5), trace_of(exp, KIB10)
    out = {"trace5_stalls": len(stalls5) if pk5 else NA, "trace10_stalls": len(stalls10) if pk10 else NA,
           "trace5_gap_ms": NAN, "trace5_release_us": NAN}
    if stalls5:
        i = stalls5[0]  # the held segment; just before it, the ACK that released it
        held = max(j for j in range(i) if pk5[j]["src"] == pk5[i]["src"] and pk5[j]["length"] > 0)
        out |= {"trace5_gap_ms": 1e3 * (pk5[i - 1]["t"] - pk5[held]["t"]),  # waiting for that ACK
                "trace5_release_us": 1e6 * (pk5[i]["t"] - pk5[i - 1]["t"])}  # ACK in, segment out
    if checks(exp, check):
        e = exp.summary()
        ten = e[(e.experiment == "split-nagle") & (e.link == "veth") & (e["size"] == KIB10) & (e.variant == FORCED10)]
        five = value_in(e, "stall_pct", NAN, experiment="split-nagle", link="veth", size=KIB5, variant=FORCED)
        claim(len(stalls5) > 0 and len(stalls10) == 0 and ten.stall_pct_max.max() == 0 and five > 10,
              "the forced 5 KiB split stalled a large share of its echoes, with many stalls in its trace; the 10 KiB "
              "split none", trace5=len(stalls5), trace10=len(stalls10), forced10_max=ten.stall_pct_max.max())
    return out


def partial_arrivals(exp) -> dict:
    """The partial experiment (the generator writes one message in ten in two parts) at each version's defaults:
    its stalls and rate (partial_<version>_stall, _tps), Mina 2.0.7's stalls per run and delayed ACKs per 1000
    messages, the share of reads that filled a buffer smaller than the message: Netty 4.2's range over its runs,
    Netty 3.6's highest."""
    e = exp.summary()
    runs = exp.df[exp.df.experiment == "partial"]

    def at(col, sid):
        return value_in(e, col, NAN, experiment="partial", server=sid, variant=PARTIAL)

    def full(sid):  # the share of reads that filled a buffer smaller than the message, in each run
        return runs[runs.server == sid].full_buffer_reads_pct

    out = {}
    for sid in echo.VERSIONS:
        k = version_key(sid)
        out |= {f"partial_{k}_stall": at("stall_pct", sid), f"partial_{k}_tps": at("tps", sid)}
    return out | {"partial_mina_stalls": at("stalls", "mina-2.0.7"),
                  "partial_mina_delack": at("delayed_acks_per_1k_msg", "mina-2.0.7"),
                  "partial_netty42_full": span_of(full("netty-4.2.20"), ".1f"),
                  "partial_netty36_full": number(full("netty-3.6.2").max(), ".2f")}


def allocation_sites(exp, server: str, size: int = KIB50) -> dict[str, float]:
    """JFR's allocation by site for `server` at `size` (first repeat): {site: % of the samples}; {} where the
    capture has no such run."""
    df = exp.df
    rows = df[(df.experiment == "alloc") & (df.server == server) & (df["size"] == size) & (df.capture == "jfr")]
    if not len(rows):
        return {}
    raw = rows.sort_values("repeat").iloc[0]["raw_file"].removesuffix(".txt")
    text = (exp.path / (raw + ".jfr-allocation-by-site.txt")).read_text()
    return {site: float(pct.rstrip("%")) for site, pct in echo.jfr_table(text)}


def _site(sites: dict[str, float], name: str) -> float:
    """The share of the first site whose name holds `name`, NaN where none does."""
    return next((v for k, v in sites.items() if name in k), NAN)


def allocation(exp, check=None) -> dict:
    """At 50 KiB on loopback, the share of JFR's allocation samples (in %, first repeat) of Netty 4.2's map
    initialisation, queue offers and new direct buffers, and of Netty 3.6's heap copies. Claim: Netty 4.2's led by
    map initialisation with no site above a fifth, Netty 3.6's almost all its heap copies."""
    n42, n36 = allocation_sites(exp, "netty-4.2.20"), allocation_sites(exp, "netty-3.6.2")
    heap = _site(n36, "HeapChannelBuffer.<init>")
    out = {"n42_site_map": number(_site(n42, "ConcurrentHashMap.initTable"), ".0f"),
           "n42_site_queue": number(_site(n42, "LinkedBlockingQueue.offer"), ".0f"),
           "n42_site_direct": number(_site(n42, "UnsafeByteBufUtil.newDirectByteBuf"), ".0f"),
           "n36_site_heap": number(heap, ".0f")}
    if checks(exp, check):
        top = max(n42, key=n42.get, default="")
        claim(top.startswith("java.util.concurrent.ConcurrentHashMap.initTable") and max(n42.values()) < 20
              and heap > 95, "at 50 KiB Netty 4.2's allocation is led by map initialisation, no site above a fifth; "
              "Netty 3.6's is almost all its heap copies", netty42_top=max(n42.values(), default=NAN))
    return out


def experiments(exp, sweep=None, check=None) -> dict:
    """Every value the page reads from echo-experiments (and, for the comparisons with the sweep, echo-sweep: the
    values that need it are NaN without it)."""
    return (forced_split(exp, sweep, check) | packet_trace(exp, check) | partial_arrivals(exp)
            | allocation(exp, check))


# ---- echo-split-rate ------------------------------------------------------------------------------------------

def split_rate(rate, check=None) -> dict:
    """Mina 2.0.7 on the link with one message in ten arriving in two parts, at sizes around its sizing rule: the
    stalls at 2, 3, 3.5 and 5 KiB (rate_<size>_stall, in %), the size with the most (n/a where none stalled) and its
    stalls, and 6, 9 and 10 KiB's stalls as a range. Claims: 3.5 KiB stalled more than every other size in every
    repeat, and 5 KiB about as often as 6, 9 and 10 KiB."""
    by = rate.summary().set_index("size")
    near = by.stall_pct.reindex([6144, 9216, 10240])
    worst = by.stall_pct.idxmax() if by.stall_pct.max() > 0 else None  # none where no size stalled
    out = {f"rate_{z}_stall": _float(by.stall_pct.get(z, NAN)) for z in (2048, 3072, 3584, KIB5)}
    out |= {"rate_worst_size": int(worst) if worst is not None else NA, "rate_worst_stall": _float(by.stall_pct.max()),
            "rate_near_span": span_of(near, ".2f")}
    if checks(rate, check):
        rest = by.drop(index=3584)
        claim(bool(by.stall_pct_min[3584] > rest.stall_pct_max.max()), "3.5 KiB stalled more than every other size, "
              "in every repeat", at_3584=by.stall_pct_min[3584], others=rest.stall_pct_max.max())
        at5 = by.stall_pct[KIB5]
        claim(bool(0.75 * near.min() <= at5 <= near.max() and by.stall_pct[KIB10] >= 0.75 * at5),
              "5 KiB stalled about as often as 6, 9 and 10 KiB", at_5120=at5, near=near.to_dict())
    return out


# ---- the 2013 write-up ----------------------------------------------------------------------------------------

def published_2013() -> dict:
    """What the 2013 write-up's 5 KiB rows allow: Mina's rate over Netty's; the JMeter threads if Mina's rate and
    3 ms mean share one concurrency (Little's law), Netty's mean at that concurrency, and the share of Mina's
    messages that 40 ms stalls would need to make up the difference to 3 ms."""
    conns = PUB_MINA_TPS * PUB_MEAN_MS / 1e3
    netty_mean_ms = 1e3 * conns / PUB_NETTY_TPS
    return {"pub_5k_ratio": PUB_MINA_TPS / PUB_NETTY_TPS, "conns_2013": conns, "netty_mean_2013": netty_mean_ms,
            "stall_rate_2013": 100 * (PUB_MEAN_MS - netty_mean_ms) / DELAYED_ACK_MS}


def values(sweep, exp, rate, check=None) -> dict:
    """Every value the page glues from its three datasets (the figures' captions aside, glued beside them)."""
    return sweep_values(sweep, check) | experiments(exp, sweep, check) | split_rate(rate, check) | published_2013()
