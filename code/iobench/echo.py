"""Echo datasets as the Mina vs Netty chapter reads them: the server's read statistics,
the summary table, packet traces, JFR tables and plots. Measuring them is echorun.py's part.
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import subprocess
from pathlib import Path

from . import drivers
from .dataset import Dataset, read_folder
from .manifest import ECHO_SERVERS, EchoServer  # noqa: F401
from .netlink import VETH_SERVER_HOST  # noqa: F401 - where the traces' server is

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

    def table(self) -> "pd.DataFrame":
        """The summary's columns a terminal shows (iobench show, obtain)."""
        cols = ["experiment", "server", "link", "size", "variant", "repeats", "tps", "tps_min", "tps_max",
                "mb_per_s", "p99_ms", "stall_pct", "reads_per_msg", "errors"]
        return self.summary()[cols].round(2)


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


def sweep_plot(ds: EchoDataset, link: str):
    """Messages/s and MB/s against message size, median with min-max bars, one line per version
    (in its colour of every figure), one legend outside on the right; the caption text is the dataset's line."""
    import matplotlib.pyplot as plt

    from .looks import describe, style

    s = ds.summary()
    s = s[(s["experiment"] == "sweep") & (s["link"] == link)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for server, g in s.groupby("server", sort=False):
        g = g.sort_values("size")
        x = g["size"] / 1024
        look = style(server)
        ax1.errorbar(x, g["tps"], yerr=[g["tps"] - g["tps_min"], g["tps_max"] - g["tps"]], capsize=3,
                     label=server, **look)
        ax2.plot(x, g["mb_per_s"], label=server, **look)
    if link == "veth":
        sizes = sorted(s["size"].unique())
        ax1.plot([z / 1024 for z in sizes], [wire_limit(z) for z in sizes], "k--", lw=1, label="1 Gbit/s wire limit")
        ax2.axhline(1e9 / 8 / 1e6 * MSS / (MSS + WIRE_OVERHEAD), color="k", ls="--", lw=1,
                    label="1 Gbit/s payload limit")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xticks([1, 2, 5, 10, 50, 100], ["1k", "2k", "5k", "10k", "50k", "100k"])
        ax.set_xlabel("message size (KiB)")
    ax1.set_yscale("log")
    ax1.set_ylabel("messages per second (echoes)")
    ax2.set_ylabel("payload MB/s, one direction")
    ax2.set_ylim(bottom=0)
    where = "loopback" if link == "lo" else "1 Gbit/s veth link, MTU 1500"
    fig.suptitle(f"Echo throughput, 32 connections, {where}")
    handles, labels = ax1.get_legend_handles_labels()
    more = [(h, l) for h, l in zip(*ax2.get_legend_handles_labels()) if l not in labels]
    fig.legend(handles + [h for h, _ in more], labels + [l for _, l in more], fontsize="small",
               loc="upper left", bbox_to_anchor=(1.0, 0.9), borderaxespad=0)
    describe(fig, ds.caption() + ".")
    fig.tight_layout()
    return fig

