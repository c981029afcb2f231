"""The echo experiments of the Mina vs Netty chapter: four echo servers, measured point by point
on the runner's lifecycle (run/runner.py); their plans are in plans.py.

Source write-up 001 compared Mina 2.0.7 and Netty 3.6.2 echo servers over gigabit
Ethernet with messages of 1 KiB to 100 KiB. Here the same two, and today's Mina 2.2 and
Netty 4.2, run on loopback and on a VethLink (two namespaces, MTU 1500, offloads off,
1 Gbit tbf), driven by iom-echoload (code/c/tools/echoload.c).

Each point gets a fresh server, so its read statistics belong to that point:
    start -> verify: one connection echoes a message byte-exact -> warm up (discarded)
    -> wait for a quiet machine -> measure while sampling the server's CPU and the TCP
    counters of both ends -> stop with SIGTERM; the server then writes its read
    statistics (every read event, counted by chunk and buffer size), kept beside the
    load generator's raw output -> one CSV row.
A point may also capture a packet trace (tcpdump on the client's device) or a JFR
allocation profile of the server; their outputs are kept too. Reading the captured
datasets (columns, tables, traces) is dataset.py's part.
"""
from __future__ import annotations

import glob
import gzip
import json
import signal
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from iobench.data.report import number
from iobench.kinds.echo.dataset import COLUMNS, read_stats, stats_summary
from iobench.kinds.echo.plans import EchoPlan, EchoPoint
from iobench.load import drivers
from iobench.run import metadata, procs, runner
from iobench.run.netlink import LinkUnavailable, VethLink
from iobench.run.results import DatasetWriter, raw_text
from iobench.run.runner import Experiment, Load, Run, Serving, Turn
from iobench.run.sampler import netns_counters
from iobench.servers.manifest import (ECHO_SERVERS, JAVA, JAVA_FLAGS, EchoServer, Server, ServerOptions, Verify,
                                      java_home)

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
                  verify=Verify.BY_EXPERIMENT)


COUNTERS = ("TcpExtDelayedACKs", "TcpExtDelayedACKLocked", "TcpExtTCPAutoCorking", "TcpOutSegs",
            "TcpInSegs", "TcpRetransSegs")


# ---- the experiment ---------------------------------------------------------------------------

def verify_echo(base: list[str], host: str, port: int, size: int) -> None:
    """One connection, a short run: every message must come back byte-exact."""
    driver = drivers.get("echo")
    spec = drivers.LoadSpec(tool="echo", connections=1, size=size, duration_s=0.3, timeout_s=5.0)
    output, code, _, _ = runner.run_load(base + driver.argv(spec, f"tcp://{host}:{port}"), {}, 30)
    result = driver.parse(output, code)
    if not result.ok or result.errors or result.extra.get("errors_mismatch"):
        raise RuntimeError(f"echo verify failed against {host}:{port}: {output.strip()[-300:]}")


class EchoExperiment(Experiment):
    columns = COLUMNS
    rows_after_stop = True     # the read statistics come when the server stops
    require_clean_exit = True

    def __init__(self, plan: EchoPlan, with_battery: bool | None = None):  # echo servers speak no HTTP: no battery
        self.plan = plan
        self.dataset = plan.dataset
        self.description = plan.description
        self.skipped: dict[str, str] = {}

    def points(self, profile: str):
        return self.plan.points_for(profile)

    def duration(self, run: Run) -> float:
        return min(run.profile.duration_s, 5.0)  # enough for 5,000+ messages even at 100 KiB over 1 Gbit

    def meta(self, run: Run) -> dict:
        return {"measured_s": self.duration(run), "plan": {"points": [asdict(p) for p in run.points]},
                "servers": {s.id: {"framework": s.framework, "version": s.version, "class": s.main_class,
                                   "nagle_default": s.nagle_default} for s in ECHO_SERVERS.values()},
                "sysctls": {k: metadata.sysctl(k) for k in ("net.ipv4.tcp_autocorking", "net.ipv4.tcp_pingpong_thresh",
                                                           "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem")},
                "skipped": self.skipped}

    def across_hosts(self, run: Run) -> str | None:
        return "it checks its servers and captures packets from this machine (and makes a veth link of its own)"

    def networks(self, run: Run):
        lo = [p for p in run.points if p.link == "lo"]
        veth = [p for p in run.points if p.link == "veth"]
        if lo:
            yield "loopback", None, lo
        if veth:
            try:
                VethLink.check_available()
            except LinkUnavailable as exc:  # not root here: the loopback points still run
                self.skipped["veth"] = str(exc)
                run.progress(f"skip: {len(veth)} points on the veth link: {exc}")
                return
            yield "veth", VethLink(), veth

    def turns(self, run: Run, points, repeat: int):
        for point in points:
            stem = point.stem(repeat)
            jfr = run.writer.raw_path(stem + ".jfr") if point.capture == "jfr" else None
            server = server_entry(ECHO_SERVERS[point.server], point.flags, run.writer.raw_path(stem + ".reads.csv"),
                                  jfr)
            yield Turn(server, [point], note={"stem": stem})

    def verify(self, run: Run, at: Serving) -> None:
        verify_echo(run.client_prefix, run.host, at.srv.port, at.turn.points[0].size)

    def measure(self, run: Run, at: Serving, point: EchoPoint) -> dict:
        srv, repeat = at.srv, at.repeat
        driver = drivers.get("echo")
        stem = point.stem(repeat)
        spec = dict(connections=point.connections, size=point.size, nodelay=point.nodelay, split=point.split,
                    timeout_s=5.0)
        url = f"tcp://{run.host}:{srv.port}"
        duration = self.duration(run)
        warmup = drivers.LoadSpec(tool="echo", duration_s=run.profile.warmup_s, **spec)
        measured = drivers.LoadSpec(tool="echo", duration_s=duration, **spec)
        load = Load(warmup=run.client_prefix + driver.argv(warmup, url),
                    measured=run.client_prefix + driver.argv(measured, url),
                    timeout_s=duration * 4 + 60)
        probes = {"counters": Counters(run.link)}
        if point.capture == "tcpdump":
            probes["tcpdump"] = Tcpdump(run.link, run.writer.raw_path(stem + ".pcap"))
        m = run.measure_load(srv, stem, load, probes)
        result = driver.parse(m.output, m.code)
        dc, ds = m.probes["counters"]
        veth = run.link is not None
        run.writer.write_raw(stem + ".counters.json", json.dumps(
            {"client": dc, "server": ds, "same_namespace": not veth}, indent=1))
        echo = ECHO_SERVERS[point.server]
        msgs = result.requests
        return {
            "experiment": point.experiment, "framework": echo.framework, "version": echo.version,
            "link": point.link, "size": point.size, "connections": point.connections, "variant": point.variant(),
            "server_flags": " ".join(point.flags), "client_nodelay": point.nodelay, "split_every": point.split[0],
            "split_at": point.split[1], "split_pause_us": point.split[2], "capture": point.capture,
            "tps": result.rps, "mb_per_s": result.extra.get("bytes_per_s", 0.0) / 1e6,
            "mean_ms": result.mean_ms, "p50_ms": result.p50_ms, "p90_ms": result.p90_ms, "p99_ms": result.p99_ms,
            "p99_9_ms": result.extra.get("p99_9_ms"), "max_ms": result.max_ms,
            "stalls_35ms": result.extra.get("stalls_35ms"),
            "stall_pct": 100.0 * result.extra.get("stalls_35ms", 0) / msgs if msgs else None,
            "messages": msgs, "duration_s": result.duration_s,
            "errors": result.errors, "errors_connect": result.errors_connect, "errors_read": result.errors_read,
            "errors_write": result.errors_write, "errors_timeout": result.errors_timeout,
            "errors_mismatch": result.extra.get("errors_mismatch"),
            "server_cpu_us_per_msg": 1e6 * m.usage.cpu_s / msgs if msgs else None,
            "client_delayed_acks": dc["TcpExtDelayedACKs"],
            "server_delayed_acks": ds["TcpExtDelayedACKs"] if veth else None,
            "delayed_acks_per_1k_msg": 1000.0 * dc["TcpExtDelayedACKs"] / msgs if msgs else None,
            "server_out_segs": ds["TcpOutSegs"] if veth else None,
            "retrans_segs": ds["TcpRetransSegs"] + (dc["TcpRetransSegs"] if veth else 0),
            "ok": result.ok, "failure": result.failure, "stats_file": "",
        }

    def after_stop(self, run: Run, at: Serving, rows: list[dict]) -> None:
        """The server wrote its read statistics on SIGTERM (and the JVM its recording)."""
        point, row = at.turn.points[0], rows[0]
        stem = point.stem(row["repeat"])
        stats_path = run.writer.raw_path(stem + ".reads.csv")
        if point.capture == "jfr":
            _jfr_views(run.writer, stem, run.writer.raw_path(stem + ".jfr"))
        series = stats_path.with_name(stats_path.name + ".series.csv")
        if series.exists():
            keep_series(series, series_wanted(series.relative_to(run.writer.staging / "raw")))
        if stats_path.exists():
            row.update(stats_summary(read_stats(stats_path.read_text()), point.size),
                       stats_file=f"raw/{stem}.reads.csv")

    def progress_text(self, row: dict) -> str:
        return (f"{number(row['tps'], '>9,.0f')} msg/s {number(row['mb_per_s'], '6.1f')} MB/s "
                f"p99 {number(row['p99_ms'], '.2f')} ms stalls {number(row['stalls_35ms'])} "
                f"reads/msg {number(row.get('reads_per_msg'), '.2f')} "
                f"srv {number(row['server_cpu_pct'], '.0f')}% gen {number(row['client_cpu_pct'], '.0f')}%")


def run_echo_plan(plan: EchoPlan, profile_name: str, dest: Path | None = None, **kwargs) -> Path:
    """Measure an echo plan under the smoke or full profile; return the dataset's folder."""
    return runner.run(EchoExperiment(plan), profile_name, dest, **kwargs)


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
        from iobench.run.results import atomic_write
        atomic_write(meta_path, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    return n


TCPDUMP_PACKETS = 20000  # at most: a few seconds of one connection, a small file


class Tcpdump(runner.Probe):
    """A packet trace on the client's device of the veth link, around the measured run;
    kept gzipped beside the load generator's output."""

    def __init__(self, link: VethLink | None, pcap: Path):
        if link is None:
            raise ValueError("packet traces are taken on the veth link (loopback has no MTU-sized segments)")
        self.link, self.pcap = link, pcap

    def start(self) -> None:
        argv = self.link.in_client(["tcpdump", "-i", self.link.client_dev, "-n", "-s", "96", "-c",
                                    str(TCPDUMP_PACKETS), "-w", str(self.pcap), "tcp"])
        self.proc = procs.spawn(argv)
        deadline = time.monotonic() + 5
        while not self.pcap.exists() and time.monotonic() < deadline:  # tcpdump creates it once listening
            time.sleep(0.05)
        time.sleep(0.2)

    def stop(self) -> None:
        procs.stop_group(self.proc, 10.0, first=signal.SIGINT)  # SIGINT: tcpdump flushes its file
        self.pcap.with_suffix(".pcap.gz").write_bytes(gzip.compress(self.pcap.read_bytes()))
        self.pcap.unlink()


class Counters(runner.Probe):
    """TCP counters of both ends (client, server); on loopback both share one namespace."""

    def __init__(self, link: VethLink | None):
        self.link = link

    def _read(self) -> tuple[dict, dict]:
        if self.link is None:
            c = netns_counters(None)
            return c, c
        return netns_counters(self.link.client_netns), netns_counters(self.link.netns)

    def start(self) -> None:
        self.before = self._read()

    def stop(self) -> tuple[dict, dict]:
        after = self._read()
        return tuple({k: a.get(k, 0) - b.get(k, 0) for k in COUNTERS} for a, b in zip(after, self.before))


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


