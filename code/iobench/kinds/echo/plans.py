"""What each echo dataset measures (the Mina vs Netty chapter; experiment.py measures them, dataset.py reads them)."""
from __future__ import annotations

from dataclasses import dataclass

from iobench.run.plan import Plan
from iobench.servers import manifest


ECHO_VERSIONS = tuple(manifest.ECHO_SERVERS)
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
        """The progress line's description (the runner puts the server id before it)."""
        return f"{self.size:>6} B {self.link:4s} c={self.connections} [{self.variant()}]"

    def stem(self, repeat: int) -> str:
        short = {"--read-buffer": "rb", "--min-read-buffer": "min", "--max-read-buffer": "max",
                 "--nodelay": "nodelay", "--allocator": "alloc"}
        flags = "".join(short.get(f, f.strip("-")) for f in self.flags) or "default"
        client = ("-nd" if self.nodelay else "") + (f"-s{self.split[0]}x{self.split[1]}" if self.split[0] else "")
        cap = f"-{self.capture}" if self.capture else ""
        return (f"{self.experiment}/{self.server}/{self.link}-{self.size}-c{self.connections}-{flags}"
                f"{client}{cap}-r{repeat}")


@dataclass(frozen=True, kw_only=True)
class EchoPlan(Plan):
    """Echo points, each naming its server (a fresh one per point: its read statistics are that point's)."""


SWEEP = EchoPlan(
    dataset="echo-sweep",
    description="source write-up 001's sweep: Mina 2.0.7, Netty 3.6.2, Mina 2.2.10 and Netty 4.2.20 echo "
                "servers (framework defaults, IO threads = executor threads = cores), messages of 1 KiB "
                "to 100 KiB, 32 connections, on loopback and on a 1 Gbit MTU-1500 veth link",
    points=tuple(EchoPoint(s, size, link) for link in ("lo", "veth") for size in SIZES for s in ECHO_VERSIONS),
    # smoke: the sizes the chapter quotes, so that its page runs under every profile
    smoke_points=tuple(EchoPoint(s, size, link) for link in ("lo", "veth") for size in (5120, 102400)
                       for s in ECHO_VERSIONS),
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
        *(EchoPoint(s, 5120, "veth", split=_PARTIAL, experiment="partial") for s in ECHO_VERSIONS),
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
        *(EchoPoint(s, 5120, "lo", capture="jfr", experiment="alloc") for s in ECHO_VERSIONS),
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

