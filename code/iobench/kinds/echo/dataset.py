"""Echo datasets as the Mina vs Netty chapter reads them: the server's read statistics,
the summary table, packet traces and JFR tables (book/plots.py draws its sweep). Measuring them is experiment.py's part.
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import subprocess
from pathlib import Path

from iobench.data.dataset import Dataset, Summary, read_folder, spread
from iobench.load import drivers
from iobench.run.netlink import VETH_SERVER_HOST  # noqa: F401 (pages read echo.VETH_SERVER_HOST: the traces' server)
from iobench.servers.manifest import ECHO_SERVERS

VERSIONS = tuple(ECHO_SERVERS)


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


# ---- reading the packet traces --------------------------------------------------------------

def pcap_text(pcap: Path) -> str:
    """tcpdump's own reading of a capture (absolute times, numeric, one line per packet);
    a .gz capture is decompressed into tcpdump's stdin, never onto disk."""
    data = pcap.read_bytes()
    if pcap.suffix == ".gz":
        data = gzip.decompress(data)
    p = subprocess.run(["tcpdump", "-r", "-", "-n", "-tt", "-S"], input=data, capture_output=True, timeout=60)
    return p.stdout.decode()


# ---- captured echo datasets -----------------------------------------------------------------

COLUMNS = [
    "experiment", "server", "framework", "version", "link", "size", "connections", "variant",
    "server_flags", "client_nodelay", "split_every", "split_at", "split_pause_us", "capture", "repeat",
    "tps", "mb_per_s", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms",
    "stalls_35ms", "stall_pct", "messages", "duration_s",
    "errors", "errors_connect", "errors_read", "errors_write", "errors_timeout", "errors_mismatch",
    "server_cpu_s", "server_cpu_pct", "server_user_s", "server_sys_s", "server_softirq_s", "server_steal_s",
    "client_steal_s", "server_cpu_us_per_msg",
    "server_threads_max", "server_rss_kib_max",
    "client_cpu_pct", "generator_bound", "foreign_cpu_cores", "noisy", "loop_ms_before", "loop_ms_after",
    "reads", "reads_per_msg", "short_reads_pct", "full_buffer_reads_pct",
    "client_delayed_acks", "server_delayed_acks", "delayed_acks_per_1k_msg",
    "server_out_segs", "retrans_segs",
    "ok", "failure", "raw_file", "stats_file", "server_cpus", "client_cpus", "profile", "run_id", "started_at",
]
KEYS = ["experiment", "server", "link", "size", "connections", "variant", "capture"]


class EchoDataset(Dataset):
    """An echo dataset: the HTTP datasets' provenance and caption, its own summary."""

    def describe(self) -> str:
        jdk = self.meta["versions"]["jdk"]
        return self.origin() + f"\nJDK: {jdk.get('version', jdk)}; load generator: {drivers.ECHOLOAD}."

    # median and min-max over repeats of each point (failed runs excluded)
    summarised = Summary(
        keys=tuple(KEYS),
        columns={
            "repeats": ("repeat", "count"), **spread("tps"),
            "mb_per_s": ("mb_per_s", "median"), "mean_ms": ("mean_ms", "median"),
            "p90_ms": ("p90_ms", "median"), **spread("p99_ms"),
            "stalls": ("stalls_35ms", "median"), **spread("stall_pct"),
            "cpu_pct": ("server_cpu_pct", "median"), "cpu_us_per_msg": ("server_cpu_us_per_msg", "median"),
            "reads_per_msg": ("reads_per_msg", "median"), "full_buffer_reads_pct": ("full_buffer_reads_pct", "median"),
            "short_reads_pct": ("short_reads_pct", "median"),
            "delayed_acks_per_1k_msg": ("delayed_acks_per_1k_msg", "median"),
            "client_cpu_pct": ("client_cpu_pct", "median"), "errors": ("errors", "sum"),
            "generator_bound": ("generator_bound", "any"), "noisy": ("noisy", "any"),
        },
        shown=("experiment", "server", "link", "size", "variant", "repeats", "tps", "tps_min", "tps_max",
               "mb_per_s", "p99_ms", "stall_pct", "reads_per_msg", "errors"),
    )

def load(path: Path, shown_under: str = "replay") -> EchoDataset:
    path, df, meta = read_folder(path, ("ok", "generator_bound", "noisy", "client_nodelay"),
                                 dtype={"server_flags": str, "capture": str, "variant": str})
    for col in ("server_flags", "capture", "variant"):
        df[col] = df[col].fillna("")
    return EchoDataset(path.name, path, df, meta, {}, shown_under)


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
