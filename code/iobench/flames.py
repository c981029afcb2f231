"""What a flame graph's samples say, added up: the CPU of a JVM by who spent it.

async-profiler writes folded stacks beside each flame graph (rpcrun keeps them as flame/<server>.collapsed.gz; a
dataset from before that has them plain, flame/<server>.collapsed), one line per
distinct stack, root first, with its count of samples: `java/lang/Thread.run;...;tcp_sendmsg_[k] 12`. Each sample
goes to one share:

- the JVM's own threads: `JIT compiler` (a stack through CompileBroker), `GC` (a collector's thread), `JVM`
  (any other stack without a Java frame: VM thread, safepoints, the profiler);
- on a Java thread, a sample whose innermost frame is the kernel's (`_[k]`) is `kernel` (system calls, TCP);
- otherwise the innermost frame of a known library, walking out from the leaf: JDK frames (`java/...`) and native
  ones belong to the library that called them, so `ConcurrentHashMap.get` under Spring is Spring's. A stack with
  no library frame at all is `JDK`.
"""
from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import pandas as pd

# innermost match wins; the order only breaks ties within one frame (none overlap)
LIBRARIES = (
    ("JSON (Jackson)", re.compile(r"^(tools/jackson|com/fasterxml/jackson)/")),
    ("Spring", re.compile(r"^org/springframework/")),
    ("Tomcat", re.compile(r"^org/apache/(tomcat|coyote|catalina)/|^jakarta/servlet/")),
    ("Reactor", re.compile(r"^reactor/")),
    ("Netty", re.compile(r"^io/netty/")),
    ("OkHttp", re.compile(r"^(okhttp3|okio)/")),
    ("RPC code", re.compile(r"^iom/")),
)
JIT = re.compile(r"CompileBroker::|C2Compiler::|Compiler::compile")
GC = re.compile(r"^(G1|GC|WorkerThread::run|ConcurrentGCThread)|G1[A-Z]\w*::")
SHARES = ("kernel", *(name for name, _ in LIBRARIES), "JDK", "JIT compiler", "GC", "JVM")


def share_of(frames: list[str]) -> str:
    """The share one stack's samples go to (frames root first, as folded)."""
    if any(JIT.search(f) for f in frames):
        return "JIT compiler"
    java = [f for f in frames if "/" in f and not f.endswith("_[k]")]
    if not java:
        return "GC" if any(GC.search(f) for f in frames) else "JVM"
    if frames[-1].endswith("_[k]"):
        return "kernel"
    for frame in reversed(java):
        for name, pattern in LIBRARIES:
            if pattern.search(frame):
                return name
    return "JDK"


SUFFIXES = (".collapsed", ".collapsed.gz")


def server_of(folded: Path) -> str:
    """rpc-netty of flame/rpc-netty.collapsed or flame/rpc-netty.collapsed.gz."""
    name = Path(folded).name
    return next(name[:-len(s)] for s in reversed(SUFFIXES) if name.endswith(s))


def read(folded: Path) -> str:
    """The text of a folded-stacks file, gzipped or not."""
    data = Path(folded).read_bytes()
    return (gzip.decompress(data) if str(folded).endswith(".gz") else data).decode()


def shares(folded: Path) -> pd.Series:
    """Samples per share (SHARES order, zeros kept), of one folded-stacks file."""
    got: Counter = Counter()
    for line in read(folded).splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            got[share_of(stack.split(";"))] += int(count)
    return pd.Series({s: got.get(s, 0) for s in SHARES}, name=server_of(folded), dtype="int64")


def table(folder: Path) -> pd.DataFrame:
    """Per server (rows, from flame/<server>.collapsed[.gz]) the share of its samples (columns, percent), and its
    sample count."""
    rows = [shares(p) for p in sorted(Path(folder).iterdir()) if p.name.endswith(SUFFIXES)]
    if not rows:
        return pd.DataFrame(columns=[*SHARES, "samples"])
    counts = pd.DataFrame(rows)
    pct = counts.div(counts.sum(axis=1), axis=0) * 100
    return pct.assign(samples=counts.sum(axis=1)).rename_axis("server")
