"""Echo benchmarks for the Mina vs Netty chapter: four echo servers, plans, and a runner.

Source write-up 001 compared Mina 2.0.7 and Netty 3.6.2 echo servers over gigabit
Ethernet with messages of 1 KiB to 100 KiB. Here the same two, and today's Mina 2.2 and
Netty 4.2, run on loopback and on a VethLink (two namespaces, MTU 1500, offloads off,
1 Gbit tbf), driven by iom-echoload (code/c/tools/echoload.c).

For every point, the same lifecycle as bench.py, adapted to echo:
    start the server (a fresh one per point, so its read statistics belong to that
    point) -> verify: one connection echoes a message byte-exact -> warm up (discarded)
    -> wait for a quiet machine -> measure while sampling the server's CPU and the TCP
    counters of both ends -> stop with SIGTERM; the server then writes its read
    statistics (every read event, counted by chunk and buffer size), kept beside the
    load generator's raw output -> one CSV row.
A point may also capture a packet trace (tcpdump on the client's device) or a JFR
allocation profile of the server; their outputs are kept too.
"""
from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from . import drivers, metadata, sampler
from .bench import (GENERATOR_BOUND_PCT, NOISY_FOREIGN_CORES, cpu_count, new_run_id, raw_text, run_load,
                    wait_quiet)
from .lifecycle import ServerProcess
from .manifest import JAVA, JAVA_FLAGS, Server, ServerOptions, java_home
from .netlink import LinkUnavailable, VethLink, netns_counters
from .dataset import Dataset
from .profiles import PROFILES, Profile
from .results import DatasetWriter

# ---- the servers --------------------------------------------------------------------------

LIB = JAVA / "target" / "lib"
MINA_207 = JAVA / "target" / "lib-mina-2.0.7" / "mina-core-2.0.7.jar"


def classpath(mina_2_0_7: bool = False) -> str:
    """target/classes and its jars; for Mina 2.0.7, its jar instead of mina-core 2.2.x (one
    class, iom.echo.MinaEcho, compiled against 2.2 and binary compatible with both)."""
    jars = sorted(glob.glob(str(LIB / "*.jar")))
    if mina_2_0_7:
        jars = [str(MINA_207)] + [j for j in jars if not Path(j).name.startswith("mina-core-")]
    return ":".join([str(JAVA / "target" / "classes")] + jars)


@dataclass(frozen=True)
class EchoServer:
    id: str
    framework: str
    version: str
    main_class: str
    nagle_default: bool  # True: the framework leaves Nagle on unless told otherwise


ECHO_SERVERS = {s.id: s for s in (
    EchoServer("mina-2.0.7", "Mina", "2.0.7", "iom.echo.MinaEcho", True),
    EchoServer("netty-3.6.2", "Netty", "3.6.2.Final", "iom.echo.Netty3Echo", True),
    EchoServer("mina-2.2.10", "Mina", "2.2.10", "iom.echo.MinaEcho", True),
    EchoServer("netty-4.2.20", "Netty", "4.2.20.Final", "iom.echo.Netty4Echo", False),
)}
VERSIONS = tuple(ECHO_SERVERS)


def server_entry(echo: EchoServer, flags: tuple[str, ...], stats: Path, jfr: Path | None) -> Server:
    """A manifest-style Server for ServerProcess: java, the book's JVM flags, the class."""
    def argv(opts: ServerOptions, workdir: Path) -> list[str]:
        jvm = [str(java_home() / "bin" / "java"), *JAVA_FLAGS]
        if jfr is not None:
            jvm.append(f"-XX:StartFlightRecording=settings=profile,filename={jfr}")
        return jvm + ["-cp", classpath(echo.id == "mina-2.0.7"), echo.main_class,
                      "--port", str(opts.port), "--host", opts.host, "--stats", str(stats), *flags]
    return Server(id=echo.id, model=f"{echo.framework} {echo.version} echo", lang="Java",
                  summary=f"{echo.framework} {echo.version} echo server (iom.echo)", argv=argv,
                  conforms=False)


# ---- plans --------------------------------------------------------------------------------

SIZES = (1024, 2048, 5120, 10240, 51200, 102400)
CONNECTIONS = 32  # the source's JMeter thread count is unknown; ~30 fits its TPS x mean latency


@dataclass(frozen=True)
class EchoPoint:
    server: str
    size: int
    link: str = "lo"                      # "lo" or "veth" (VethLink: 1 Gbit, MTU 1500)
    connections: int = CONNECTIONS
    flags: tuple[str, ...] = ()           # extra server flags, e.g. ("--nodelay", "true")
    nodelay: bool = False                 # the generator's TCP_NODELAY (JMeter's default: off)
    split: tuple[int, int, int] = (0, 0, 0)  # generator: every K-th message as B bytes, U µs pause, rest
    capture: str = ""                     # "", "tcpdump" or "jfr"
    experiment: str = "sweep"

    def variant(self) -> str:
        v = " ".join(self.flags) or "defaults"
        if self.nodelay:
            v += "; client nodelay"
        if self.split[0]:
            v += f"; client splits 1 in {self.split[0]} at {self.split[1]} B"
        return v

    def label(self) -> str:
        return f"{self.server:13s} {self.size:>6} B {self.link:4s} c={self.connections} [{self.variant()}]"

    def stem(self, repeat: int) -> str:
        short = {"--read-buffer": "rb", "--min-read-buffer": "min", "--max-read-buffer": "max",
                 "--nodelay": "nodelay", "--allocator": "alloc"}
        flags = "".join(short.get(f, f.strip("-")) for f in self.flags) or "default"
        client = ("-nd" if self.nodelay else "") + (f"-s{self.split[0]}x{self.split[1]}" if self.split[0] else "")
        cap = f"-{self.capture}" if self.capture else ""
        return (f"{self.experiment}/{self.server}/{self.link}-{self.size}-c{self.connections}-{flags}"
                f"{client}{cap}-r{repeat}")


@dataclass(frozen=True)
class EchoPlan:
    dataset: str
    description: str
    points: tuple[EchoPoint, ...]
    smoke_points: tuple[EchoPoint, ...] = field(default=())

    def points_for(self, profile: str) -> tuple[EchoPoint, ...]:
        return self.smoke_points if profile == "smoke" and self.smoke_points else self.points


SWEEP = EchoPlan(
    dataset="echo-sweep",
    description="source write-up 001's sweep: Mina 2.0.7, Netty 3.6.2, Mina 2.2.10 and Netty 4.2.20 echo "
                "servers (framework defaults, IO threads = executor threads = cores), messages of 1 KiB "
                "to 100 KiB, 32 connections, on loopback and on a 1 Gbit MTU-1500 veth link",
    points=tuple(EchoPoint(s, size, link) for link in ("lo", "veth") for size in SIZES for s in VERSIONS),
    # smoke: the sizes the chapter quotes, so that its page runs under every profile
    smoke_points=tuple(EchoPoint(s, size, link) for link in ("lo", "veth") for size in (5120, 102400)
                       for s in VERSIONS),
)

# The mechanism, one factor at a time (all at 5 KiB on the veth link unless said):
def _pinned(n: int) -> tuple[str, ...]:  # Mina's read buffer fixed at n bytes (first size included)
    return ("--read-buffer", str(n), "--min-read-buffer", str(n), "--max-read-buffer", str(n))


_FORCED = _pinned(4096)      # every 5 KiB message: 4096 + 1024
_FORCED_10K = _pinned(8192)  # every 10 KiB message: 8192 + 2048
_PARTIAL = (10, 1448, 200)  # 1 message in 10 arrives as one segment, then the rest 200 µs later
EXPERIMENTS = EchoPlan(
    dataset="echo-experiments",
    description="the 5 KiB mechanism on the 1 Gbit veth link: Mina's read buffer forced to split "
                "messages, with Nagle on and off; partial arrivals forced by the generator, with and "
                "without Mina's fixes; a packet trace of one stall; JFR allocation profiles on loopback",
    points=(
        # split x Nagle: is the cost the split, or the split meeting Nagle and delayed ACKs?
        EchoPoint("mina-2.0.7", 5120, "veth", flags=_FORCED, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "veth", flags=_FORCED + ("--nodelay", "true"), experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "veth", flags=_FORCED, nodelay=True, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 10240, "veth", flags=_FORCED_10K, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 10240, "veth", flags=_FORCED_10K + ("--nodelay", "true"), experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "lo", flags=_FORCED, experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 5120, "lo", flags=_FORCED + ("--nodelay", "true"), experiment="split-nagle"),
        # 100 KiB on loopback: Mina's buffer stops at 65536, so every message is read (and echoed) in two parts
        EchoPoint("mina-2.0.7", 102400, "lo", experiment="split-nagle"),
        EchoPoint("mina-2.0.7", 102400, "lo", flags=("--nodelay", "true"), experiment="split-nagle"),
        # natural trigger: some messages arrive in two parts; what does each framework do?
        *(EchoPoint(s, 5120, "veth", split=_PARTIAL, experiment="partial") for s in VERSIONS),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--min-read-buffer", "8192"),
                  experiment="partial"),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--nodelay", "true"), experiment="partial"),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--allocator", "cached"), experiment="partial"),
        EchoPoint("mina-2.0.7", 5120, "veth", split=_PARTIAL, flags=("--allocator", "direct"), experiment="partial"),
        EchoPoint("netty-4.2.20", 5120, "veth", split=_PARTIAL, flags=("--nodelay", "false"), experiment="partial"),
        # one connection, packets captured: the stall itself
        EchoPoint("mina-2.0.7", 5120, "veth", connections=1, flags=_FORCED, capture="tcpdump", experiment="trace"),
        EchoPoint("mina-2.0.7", 10240, "veth", connections=1, flags=_FORCED_10K, capture="tcpdump",
                  experiment="trace"),
        # what each framework allocates per message (loopback: no stalls, only work)
        *(EchoPoint(s, 5120, "lo", capture="jfr", experiment="alloc") for s in VERSIONS),
        # and at 50 KiB, where Netty 4.2 needs twice the CPU per message of the others on loopback
        *(EchoPoint(s, 51200, "lo", capture="jfr", experiment="alloc") for s in ("netty-3.6.2", "netty-4.2.20")),
        EchoPoint("netty-4.2.20", 51200, "lo", flags=("--nodelay", "false"), experiment="alloc"),
    ),
    # smoke: every point, briefly (the chapter reads each one)
)

# Which sizes does a partial arrival make Mina split by capacity? Its sizing says: the sizes
# less than one segment (1448 bytes) above a power of two (book/java/mina-netty.md).
SPLIT_SIZES = (2048, 3072, 3584, 5120, 6144, 9216, 10240)
SPLIT_RATE = EchoPlan(
    dataset="echo-split-rate",
    description="Mina 2.0.7 on the 1 Gbit veth link, 1 message in 10 arriving in two parts: how often "
                "each message size is split by a full read buffer, and what that costs",
    points=tuple(EchoPoint("mina-2.0.7", size, "veth", split=_PARTIAL, experiment="split-rate")
                 for size in SPLIT_SIZES),
)

PLANS = {p.dataset: p for p in (SWEEP, EXPERIMENTS, SPLIT_RATE)}

COLUMNS = [
    "experiment", "server", "framework", "version", "link", "size", "connections", "variant",
    "server_flags", "client_nodelay", "split_every", "split_at", "split_pause_us", "capture", "repeat",
    "tps", "mb_per_s", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms",
    "stalls_35ms", "stall_pct", "messages", "duration_s",
    "errors", "errors_connect", "errors_read", "errors_write", "errors_timeout", "errors_mismatch",
    "server_cpu_s", "server_cpu_pct", "server_cpu_us_per_msg", "server_threads_max", "server_rss_kib_max",
    "client_cpu_pct", "generator_bound", "foreign_cpu_cores", "noisy",
    "reads", "reads_per_msg", "short_reads_pct", "full_buffer_reads_pct",
    "client_delayed_acks", "server_delayed_acks", "delayed_acks_per_1k_msg",
    "server_out_segs", "retrans_segs",
    "ok", "failure", "raw_file", "stats_file", "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
COUNTERS = ("TcpExtDelayedACKs", "TcpExtDelayedACKLocked", "TcpExtTCPAutoCorking", "TcpOutSegs",
            "TcpInSegs", "TcpRetransSegs")


# ---- the server's read statistics -----------------------------------------------------------

def read_stats(text: str) -> list[tuple[int, int, int]]:
    """The server's --stats CSV (chunk_bytes, buffer_bytes, events; '#' lines are comments)."""
    rows = []
    for rec in csv.reader(ln for ln in io.StringIO(text) if not ln.startswith("#")):
        if not rec or rec[0] == "chunk_bytes":
            continue
        rows.append((int(rec[0]), int(rec[1]), int(rec[2])))
    return rows


def stats_summary(rows: list[tuple[int, int, int]], size: int) -> dict:
    """Reads per echoed message over the server's life (warm-up included). A short read
    holds less than a message; a full-buffer read filled the buffer it was given while
    the message was bigger (Mina's "split by capacity")."""
    reads = sum(n for _, _, n in rows)
    total = sum(c * n for c, _, n in rows)
    messages = total / size if size else 0
    short = sum(n for c, _, n in rows if c < size)
    full = sum(n for c, b, n in rows if c < size and c == b)
    return {"reads": reads,
            "reads_per_msg": reads / messages if messages else None,
            "short_reads_pct": 100.0 * short / reads if reads else None,
            "full_buffer_reads_pct": 100.0 * full / reads if reads else None}


# ---- the runner -----------------------------------------------------------------------------

def _counters(link: VethLink | None) -> tuple[dict, dict]:
    """(client side, server side) TCP counters; on loopback both ends share one namespace."""
    if link is None:
        c = netns_counters(None)
        return c, c
    return netns_counters(link.client_netns), netns_counters(link.netns)


def verify_echo(base: list[str], host: str, port: int, size: int) -> None:
    """One connection, a short run: every message must come back byte-exact."""
    driver = drivers.get("echo")
    spec = drivers.LoadSpec(tool="echo", connections=1, size=size, duration_s=0.3, timeout_s=5.0)
    output, code, _, _ = run_load(base + driver.argv(spec, f"tcp://{host}:{port}"), {}, 30)
    result = driver.parse(output, code)
    if not result.ok or result.errors or result.extra.get("errors_mismatch"):
        raise RuntimeError(f"echo verify failed against {host}:{port}: {output.strip()[-300:]}")


def run_echo_plan(plan: EchoPlan, profile_name: str, dest: Path | None = None, overwrite: bool = False,
                  server_cpus: str = "0", client_cpus: str = "1",
                  progress: Callable[[str], None] | None = None) -> Path:
    """Measure an echo plan under the smoke or full profile; return the dataset's folder."""
    profile = PROFILES[profile_name]
    progress = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dest = Path(dest) if dest else profile.dest(plan.dataset)
    run_id = new_run_id()
    writer = DatasetWriter(dest, run_id, overwrite=overwrite or profile_name == "smoke", columns=COLUMNS)
    points = plan.points_for(profile_name)
    duration = min(profile.duration_s, 5.0)  # enough for 5,000+ messages even at 100 KiB over 1 Gbit
    meta = metadata.collect(
        dataset=plan.dataset, description=plan.description, run_id=run_id, profile=asdict(profile),
        measured_s=duration, started_at=metadata.now(), pinning={"server_cpus": server_cpus, "client_cpus": client_cpus},
        plan={"points": [asdict(p) for p in points]},
        servers={s.id: {"framework": s.framework, "version": s.version, "class": s.main_class,
                        "nagle_default": s.nagle_default} for s in ECHO_SERVERS.values()},
        sysctls={k: metadata.sysctl(k) for k in ("net.ipv4.tcp_autocorking", "net.ipv4.tcp_pingpong_thresh",
                                                  "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem")},
        thresholds={"generator_bound_pct": GENERATOR_BOUND_PCT, "noisy_foreign_cores": NOISY_FOREIGN_CORES})
    links: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    stops: list[dict] = []
    total = profile.repeats * len(points)
    done = 0
    try:
        for link_name in ("lo", "veth"):
            mine = [p for p in points if p.link == link_name]
            if not mine:
                continue
            if link_name == "veth":
                try:
                    VethLink.check_available()
                except LinkUnavailable as exc:  # not root here: the loopback points still run
                    skipped["veth"] = str(exc)
                    progress(f"skip: {len(mine)} points on the veth link: {exc}")
                    done += len(mine) * profile.repeats
                    continue
            link = VethLink() if link_name == "veth" else None
            with (link if link is not None else contextlib.nullcontext()):
                if link is not None:
                    links["veth"] = link.settings()
                for repeat in range(1, profile.repeats + 1):
                    for point in mine:
                        done += 1
                        row = measure(writer, point, profile, duration, repeat, link, server_cpus, client_cpus,
                                      run_id, stops)
                        progress(f"[{done}/{total}] {point.label()} rep {repeat}: "
                                 + (f"{row['tps']:>9,.0f} msg/s {row['mb_per_s']:6.1f} MB/s "
                                    f"p99 {row['p99_ms']:.2f} ms stalls {row['stalls_35ms']} "
                                    f"reads/msg {row['reads_per_msg'] or 0:.2f} srv {row['server_cpu_pct']:.0f}% "
                                    f"gen {row['client_cpu_pct']:.0f}%"
                                    + ("  GENERATOR-BOUND" if row["generator_bound"] else "")
                                    + ("  NOISY" if row["noisy"] else "")
                                    if row["ok"] else f"FAILED {row['failure']}"))
                if link is not None:
                    links["veth"]["after"] = link.settings()
        meta.update(finished_at=metadata.now(), links=links, skipped=skipped, stops=stops)
        writer.write_json("meta.json", meta)
        return writer.commit()
    except BaseException as exc:
        failed = writer.abandon(f"{exc.__class__.__name__}: {exc}")
        progress(f"run abandoned ({exc.__class__.__name__}); partial output kept in {failed}; {dest} untouched")
        raise


def measure(writer: DatasetWriter, point: EchoPoint, profile: Profile, duration: float, repeat: int,
            link: VethLink | None, server_cpus: str, client_cpus: str, run_id: str, stops: list) -> dict:
    echo = ECHO_SERVERS[point.server]
    driver = drivers.get("echo")
    stem = point.stem(repeat)
    stats_path = writer.raw_path(stem + ".reads.csv")
    jfr = writer.raw_path(stem + ".jfr") if point.capture == "jfr" else None
    host = link.server_host if link is not None else "127.0.0.1"
    netns = link.netns if link is not None else None
    base = ["taskset", "-c", client_cpus] if client_cpus else []
    if link is not None:
        base = link.in_client(base)
    spec = dict(connections=point.connections, size=point.size, nodelay=point.nodelay, split=point.split,
                timeout_s=5.0)
    tcpdump = None
    with ServerProcess(server_entry(echo, point.flags, stats_path, jfr), ServerOptions(host=host),
                       cpus=server_cpus, netns=netns) as srv:
        verify_echo(base, host, srv.port, point.size)
        url = f"tcp://{host}:{srv.port}"
        warm = drivers.LoadSpec(tool="echo", duration_s=profile.warmup_s, **spec)
        argv = base + driver.argv(warm, url)
        started = metadata.now()
        output, code, _, _ = run_load(argv, {}, profile.warmup_s + 60)
        writer.write_raw(stem + ".warmup.txt", raw_text(argv, {}, output, code, started))

        wait_quiet(profile.quiet_wait_s)
        if point.capture == "tcpdump":
            tcpdump = _start_tcpdump(link, writer.raw_path(stem + ".pcap"))
        run = drivers.LoadSpec(tool="echo", duration_s=duration, **spec)
        argv = base + driver.argv(run, url)
        started = metadata.now()
        c0, s0 = _counters(link)
        sampling = sampler.GroupSampler(srv.pid, cpu_group=srv.cpu_group).start()
        output, code, client_cpu, wall = run_load(argv, {}, duration * 4 + 60)
        usage = sampling.stop()
        c1, s1 = _counters(link)
        if tcpdump is not None:
            _stop_tcpdump(tcpdump)
            pcap = writer.raw_path(stem + ".pcap")
            pcap.with_suffix(".pcap.gz").write_bytes(gzip.compress(pcap.read_bytes()))
            pcap.unlink()
        raw_file = writer.write_raw(stem + ".txt", raw_text(argv, {}, output, code, started))
    stops.append({"stem": stem, "argv": metadata.portable(srv.argv), "exit_code": srv.exit_code,
                  "cpu_accounting": srv.cpu_group.source if srv.cpu_group else "/proc"})
    if srv.exit_code != 0:
        raise RuntimeError(f"{echo.id} exited {srv.exit_code} on SIGTERM (contract: 0): {srv.stderr_tail()}")
    if jfr is not None:
        _jfr_views(writer, stem, jfr)
    series = stats_path.with_name(stats_path.name + ".series.csv")
    if series.exists():
        keep_series(series, series_wanted(series.relative_to(writer.staging / "raw")))
    result = driver.parse(output, code)
    stats = stats_summary(read_stats(stats_path.read_text()), point.size) if stats_path.exists() else {}
    dc = {k: c1.get(k, 0) - c0.get(k, 0) for k in COUNTERS}
    ds = {k: s1.get(k, 0) - s0.get(k, 0) for k in COUNTERS}
    client_pct = 100.0 * client_cpu / wall if wall > 0 else 0.0
    foreign = max(0.0, (usage.system_busy_s - usage.cpu_s - client_cpu) / usage.wall_s) if usage.wall_s else 0.0
    msgs = result.requests
    row = {
        "experiment": point.experiment, "server": echo.id, "framework": echo.framework, "version": echo.version,
        "link": point.link, "size": point.size, "connections": point.connections, "variant": point.variant(),
        "server_flags": " ".join(point.flags), "client_nodelay": point.nodelay, "split_every": point.split[0],
        "split_at": point.split[1], "split_pause_us": point.split[2], "capture": point.capture, "repeat": repeat,
        "tps": result.rps, "mb_per_s": result.extra.get("bytes_per_s", 0.0) / 1e6,
        "mean_ms": result.mean_ms, "p50_ms": result.p50_ms, "p90_ms": result.p90_ms, "p99_ms": result.p99_ms,
        "p99_9_ms": result.extra.get("p99_9_ms"), "max_ms": result.max_ms,
        "stalls_35ms": result.extra.get("stalls_35ms"),
        "stall_pct": 100.0 * result.extra.get("stalls_35ms", 0) / msgs if msgs else None,
        "messages": msgs, "duration_s": result.duration_s,
        "errors": result.errors, "errors_connect": result.errors_connect, "errors_read": result.errors_read,
        "errors_write": result.errors_write, "errors_timeout": result.errors_timeout,
        "errors_mismatch": result.extra.get("errors_mismatch"),
        "server_cpu_s": usage.cpu_s, "server_cpu_pct": 100.0 * usage.cpu_s / usage.wall_s if usage.wall_s else None,
        "server_cpu_us_per_msg": 1e6 * usage.cpu_s / msgs if msgs else None,
        "server_threads_max": usage.threads_max, "server_rss_kib_max": usage.rss_kib_max,
        "client_cpu_pct": client_pct,
        "generator_bound": client_pct >= GENERATOR_BOUND_PCT * cpu_count(client_cpus),
        "foreign_cpu_cores": foreign, "noisy": foreign > NOISY_FOREIGN_CORES,
        **stats,
        "client_delayed_acks": dc["TcpExtDelayedACKs"],
        "server_delayed_acks": ds["TcpExtDelayedACKs"] if link is not None else None,
        "delayed_acks_per_1k_msg": 1000.0 * dc["TcpExtDelayedACKs"] / msgs if msgs else None,
        "server_out_segs": ds["TcpOutSegs"] if link is not None else None,
        "retrans_segs": ds["TcpRetransSegs"] + (dc["TcpRetransSegs"] if link is not None else 0),
        "ok": result.ok, "failure": result.failure, "raw_file": raw_file,
        "stats_file": f"raw/{stem}.reads.csv" if stats_path.exists() else "",
        "server_cpus": server_cpus, "client_cpus": client_cpus, "profile": profile.name, "run_id": run_id,
        "started_at": started,
    }
    writer.write_raw(stem + ".counters.json", json.dumps(
        {"client": dc, "server": ds, "same_namespace": link is None}, indent=1))
    writer.add_row(row)
    return row


# ---- captures -------------------------------------------------------------------------------

# The server's series of its first 100,000 read events (time, connection, bytes, buffer) is
# ~2 MB a point: kept, compressed, for the first repeat of the experiments whose series the
# chapter reads; elsewhere the histogram (the .reads.csv beside it, every event counted) is
# what is kept.
SERIES_KEPT = ("partial",)


def series_wanted(relative: Path) -> bool:
    """relative: a series file's path under raw/ (experiment/server/stem...)."""
    stem = relative.name.split(".reads.csv")[0]
    return relative.parts[0] in SERIES_KEPT and stem.endswith("-r1")


def keep_series(series: Path, keep: bool) -> None:
    if keep:
        series.with_name(series.name + ".gz").write_bytes(gzip.compress(series.read_bytes()))
    series.unlink()


def prune_series(dataset: Path) -> int:
    """Apply the rule above to a dataset captured under an earlier rule; note it in meta.json."""
    n = 0
    raw = Path(dataset) / "raw"
    for series in sorted(raw.rglob("*.series.csv")) + sorted(raw.rglob("*.series.csv.gz")):
        wanted = series_wanted(series.relative_to(raw))
        if series.suffix == ".gz":
            if not wanted:
                series.unlink()
                n += 1
        else:
            keep_series(series, wanted)
            n += 1
    if n:
        meta_path = Path(dataset) / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["series_pruned"] = (f"{n} read-event series (.reads.csv.series.csv) removed after the run; kept "
                                 f"(gzipped) only for the first repeat of: {', '.join(SERIES_KEPT)}; the "
                                 ".reads.csv histograms count every read event")
        from .results import atomic_write
        atomic_write(meta_path, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    return n


TCPDUMP_PACKETS = 20000  # at most: a few seconds of one connection, a small file


def _start_tcpdump(link: VethLink | None, pcap: Path) -> subprocess.Popen:
    if link is None:
        raise ValueError("packet traces are taken on the veth link (loopback has no MTU-sized segments)")
    argv = link.in_client(["tcpdump", "-i", link.client_dev, "-n", "-s", "96", "-c", str(TCPDUMP_PACKETS),
                           "-w", str(pcap), "tcp"])
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 5
    while not pcap.exists() and time.monotonic() < deadline:  # tcpdump creates it once listening
        time.sleep(0.05)
    time.sleep(0.2)
    return proc


def _stop_tcpdump(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    proc.stderr.close()


def pcap_text(pcap: Path) -> str:
    """tcpdump's own reading of a capture (absolute times, numeric, one line per packet);
    a .gz capture is decompressed into tcpdump's stdin, never onto disk."""
    data = pcap.read_bytes()
    if pcap.suffix == ".gz":
        data = gzip.decompress(data)
    p = subprocess.run(["tcpdump", "-r", "-", "-n", "-tt", "-S"], input=data, capture_output=True, timeout=60)
    return p.stdout.decode()


def _jfr_views(writer: DatasetWriter, stem: str, jfr: Path) -> None:
    """Keep what `jfr` reports about allocation (the recording itself is megabytes)."""
    tool = str(java_home() / "bin" / "jfr")
    for view in ("allocation-by-class", "allocation-by-site", "gc"):
        p = subprocess.run([tool, "view", "--width", "200", view, str(jfr)], capture_output=True, text=True,
                           timeout=120)
        writer.write_raw(f"{stem}.jfr-{view}.txt",
                         raw_text([tool, "view", "--width", "200", view, jfr.name], {}, p.stdout + p.stderr,
                                  p.returncode, metadata.now()))
    jfr.unlink()


# ---- captured echo datasets -----------------------------------------------------------------

KEYS = ["experiment", "server", "link", "size", "connections", "variant", "capture"]


class EchoDataset(Dataset):
    """An echo dataset: the HTTP datasets' provenance and caption, its own summary."""

    def describe(self) -> str:
        jdk = self.meta["versions"]["jdk"]
        return self.origin() + f"\nJDK: {jdk.get('version', jdk)}; load generator: {drivers.ECHOLOAD}."

    def summary(self) -> "pd.DataFrame":
        """Median and min-max over repeats of each point (failed runs excluded)."""
        ok = self.df[self.df["ok"]]
        return ok.groupby(KEYS, sort=False).agg(
            repeats=("repeat", "count"),
            tps=("tps", "median"), tps_min=("tps", "min"), tps_max=("tps", "max"),
            mb_per_s=("mb_per_s", "median"), mean_ms=("mean_ms", "median"),
            p90_ms=("p90_ms", "median"), p99_ms=("p99_ms", "median"),
            p99_ms_min=("p99_ms", "min"), p99_ms_max=("p99_ms", "max"),
            stalls=("stalls_35ms", "median"), stall_pct=("stall_pct", "median"), stall_pct_min=("stall_pct", "min"), stall_pct_max=("stall_pct", "max"),
            cpu_pct=("server_cpu_pct", "median"), cpu_us_per_msg=("server_cpu_us_per_msg", "median"),
            reads_per_msg=("reads_per_msg", "median"), full_buffer_reads_pct=("full_buffer_reads_pct", "median"),
            short_reads_pct=("short_reads_pct", "median"),
            delayed_acks_per_1k_msg=("delayed_acks_per_1k_msg", "median"),
            client_cpu_pct=("client_cpu_pct", "median"), errors=("errors", "sum"),
            generator_bound=("generator_bound", "any"), noisy=("noisy", "any"),
        ).reset_index()

    def value(self, column: str, **where) -> float:
        """One median from the summary, for quoting in prose (glue), never typed by hand."""
        s = self.summary()
        for k, v in where.items():
            s = s[s[k] == v]
        if len(s) != 1:
            raise KeyError(f"{len(s)} summary rows match {where}")
        return float(s.iloc[0][column])


def load(path: Path, shown_under: str = "replay") -> EchoDataset:
    import pandas as pd

    path = Path(path)
    if not (path / "results.csv").exists():
        raise FileNotFoundError(f"no captured dataset at {path}")
    df = pd.read_csv(path / "results.csv", dtype={"server_flags": str, "capture": str, "variant": str})
    for col in ("ok", "generator_bound", "noisy", "client_nodelay"):
        df[col] = df[col].astype(str).str.lower().eq("true")
    for col in ("server_flags", "capture", "variant"):
        df[col] = df[col].fillna("")
    meta = json.loads((path / "meta.json").read_text())
    return EchoDataset(path.name, path, df, meta, {}, shown_under)


def obtain(name: str, profile: str | None = None, **run_kwargs) -> EchoDataset:
    """Replay data/<name>, or measure the plan under smoke/full (IOBENCH_PROFILE)."""
    from .profiles import DATA, current

    profile = profile or current()
    if profile == "replay":
        path = DATA / name
        if not path.exists():
            raise FileNotFoundError(f"data/{name} holds no captured run yet. Measure it with\n"
                                    f"    python -m iobench run {name} --profile full")
        return load(path, "replay")
    return load(run_echo_plan(PLANS[name], profile, **run_kwargs), profile)


# ---- reading the captures -------------------------------------------------------------------

_PACKET = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\].*?length (\d+)")


def packets(text: str) -> list[dict]:
    """tcpdump -n -tt lines -> one dict per TCP packet: t (s), src, dst (host:port), flags, length."""
    out = []
    for line in text.splitlines():
        m = _PACKET.match(line)
        if m:
            t, sh, sp, dh, dp, flags, length = m.groups()
            out.append({"t": float(t), "src": f"{sh}:{sp}", "dst": f"{dh}:{dp}", "flags": flags,
                        "length": int(length)})
    return out


def stalls(pkts: list[dict], server: str, min_gap_ms: float = 30.0) -> list[int]:
    """Indexes of data packets the server sent at least min_gap_ms after its previous one
    while the client had nothing new to send: each is a response held back, mid-response."""
    found, last = [], None
    for i, p in enumerate(pkts):
        if p["src"].startswith(server + ":") and p["length"] > 0:
            if last is not None and (p["t"] - pkts[last]["t"]) * 1e3 >= min_gap_ms:
                # the client sent no data in between: the gap is inside one response
                if not any(q["length"] > 0 and not q["src"].startswith(server + ":") for q in pkts[last + 1:i]):
                    found.append(i)
            last = i
    return found


def jfr_table(text: str) -> list[list[str]]:
    """The rows of a `jfr view` table (columns separated by two or more spaces)."""
    rows, started = [], False
    for line in text.splitlines():
        if line.startswith("# ") or not line.strip():
            continue
        if set(line.strip()) <= {"-", " "}:
            started = True
            continue
        if started:
            rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


# ---- plots ----------------------------------------------------------------------------------

MSS, WIRE_OVERHEAD = 1448, 90  # payload per segment at MTU 1500; headers, framing, preamble and gap


def wire_limit(size: int, mbit: float = 1000.0) -> float:
    """Messages per second one direction of the link can carry at most."""
    segments = -(-size // MSS)
    return mbit * 1e6 / 8 / (size + segments * WIRE_OVERHEAD)


def sweep_plot(ds: EchoDataset, link: str):
    """Messages/s and MB/s against message size, median with min-max bars, one line per version."""
    import matplotlib.pyplot as plt

    s = ds.summary()
    s = s[(s["experiment"] == "sweep") & (s["link"] == link)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for server, g in s.groupby("server", sort=False):
        g = g.sort_values("size")
        x = g["size"] / 1024
        ax1.errorbar(x, g["tps"], yerr=[g["tps"] - g["tps_min"], g["tps_max"] - g["tps"]], marker="o",
                     capsize=3, label=server)
        ax2.plot(x, g["mb_per_s"], marker="o", label=server)
    if link == "veth":
        sizes = sorted(s["size"].unique())
        ax1.plot([z / 1024 for z in sizes], [wire_limit(z) for z in sizes], "k--", lw=1, label="1 Gbit/s wire limit")
        ax2.axhline(1e9 / 8 / 1e6 * MSS / (MSS + WIRE_OVERHEAD), color="k", ls="--", lw=1,
                    label="1 Gbit/s payload limit")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xticks([1, 2, 5, 10, 50, 100], ["1k", "2k", "5k", "10k", "50k", "100k"])
        ax.set_xlabel("message size (KiB)")
        ax.legend(fontsize="small")
    ax1.set_yscale("log")
    ax1.set_ylabel("messages per second (echoes)")
    ax2.set_ylabel("payload MB/s, one direction")
    ax2.set_ylim(bottom=0)
    where = "loopback" if link == "lo" else "1 Gbit/s veth link, MTU 1500"
    fig.suptitle(f"Echo throughput, 32 connections, {where}")
    fig.text(0.01, -0.02, ds.caption(), fontsize=7, va="top", wrap=True)
    fig.tight_layout()
    return fig
