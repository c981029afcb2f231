"""What a flame graph's samples say, added up: the CPU of a JVM by who spent it.

async-profiler writes folded stacks beside each flame graph (kinds/rpc keeps them as flame/<server>.collapsed.gz; a
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
        if name := library_of(frame):
            return name
    return "JDK"


def library_of(frame: str) -> str | None:
    """The known library a frame's code belongs to (LIBRARIES), or None."""
    return next((name for name, pattern in LIBRARIES if pattern.search(frame)), None)


SUFFIXES = (".collapsed", ".collapsed.gz")


def server_of(folded: Path) -> str:
    """rpc-netty of flame/rpc-netty.collapsed or flame/rpc-netty.collapsed.gz."""
    name = Path(folded).name
    return next(name[:-len(s)] for s in reversed(SUFFIXES) if name.endswith(s))


def read(folded: Path) -> str:
    """The text of a folded-stacks file, gzipped or not."""
    data = Path(folded).read_bytes()
    return (gzip.decompress(data) if str(folded).endswith(".gz") else data).decode()


def stacks(folded: Path):
    """(frames root first, samples) of each line of a folded-stacks file; a line without a count is skipped."""
    for line in read(folded).splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            yield stack.split(";"), int(count)


def files(folder: Path) -> dict[str, Path]:
    """Each server's folded-stacks file in a flame/ folder, by server, in name order."""
    return {server_of(p): p for p in sorted(Path(folder).iterdir()) if p.name.endswith(SUFFIXES)}


def shares(folded: Path) -> pd.Series:
    """Samples per share (SHARES order, zeros kept), of one folded-stacks file."""
    got: Counter = Counter()
    for frames, count in stacks(folded):
        got[share_of(frames)] += count
    return pd.Series({s: got.get(s, 0) for s in SHARES}, name=server_of(folded), dtype="int64")


def table(folder: Path) -> pd.DataFrame:
    """Per server (rows, from flame/<server>.collapsed[.gz]) the share of its samples (columns, percent), and its
    sample count."""
    rows = [shares(p) for p in files(folder).values()]
    if not rows:
        return pd.DataFrame(columns=[*SHARES, "samples"])
    counts = pd.DataFrame(rows)
    pct = counts.div(counts.sum(axis=1), axis=0) * 100
    return pct.assign(samples=counts.sum(axis=1)).rename_axis("server")


# ---- drawing a flame graph -----------------------------------------------------------------------------

# a frame's colour says whose code it is: the libraries of SHARES, the JDK, the kernel, and native code
COLORS = {"kernel": "#e8913a", "JSON (Jackson)": "#c9473d", "Spring": "#5d9e4a", "Tomcat": "#a6b83b",
          "Reactor": "#8e6bbf", "Netty": "#3f7fbf", "OkHttp": "#8c6d4f", "RPC code": "#222222",
          "JDK": "#9bb4c9", "native (JVM, libc)": "#e6c9a8"}


def frame_kind(frame: str) -> str:
    """Whose code one frame is (a key of COLORS)."""
    if frame.endswith("_[k]"):
        return "kernel"
    if "/" not in frame:
        return "native (JVM, libc)"
    return library_of(frame) or "JDK"


def tree(folded: Path) -> dict:
    """The folded stacks as a tree of frames: {"n": samples, "kids": {frame: subtree}}, root first."""
    root: dict = {"n": 0, "kids": {}}
    for frames, count in stacks(folded):
        node = root
        node["n"] += count
        for frame in frames:
            node = node["kids"].setdefault(frame, {"n": 0, "kids": {}})
            node["n"] += count
    return root


def boxes(folded: Path, min_share: float = 0.002) -> list[tuple[float, int, float, str]]:
    """A flame graph's boxes (x, depth, width, frame): the root at depth 0, each frame as wide as its share of the
    samples and placed above its caller, siblings in alphabetical order (as async-profiler draws them); frames
    under `min_share` of the samples are left out, with everything above them."""
    root = tree(folded)
    total = root["n"] or 1
    out, todo = [], [(root, 0.0, 0)]
    while todo:
        node, x, depth = todo.pop()
        for frame, kid in sorted(node["kids"].items()):
            width = kid["n"] / total
            if width >= min_share:
                out.append((x, depth, width, frame))
                todo.append((kid, x, depth + 1))
            x += width
    return out


def draw(ax, drawn: list[tuple[float, int, float, str]], label_share: float = 0.08) -> None:
    """Boxes of a flame graph on `ax`, coloured by frame_kind, the ones over `label_share` named."""
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Rectangle

    for x, depth, width, frame in drawn:
        ax.add_patch(Rectangle((x, depth), width, 0.92, facecolor=COLORS[frame_kind(frame)], lw=0))
        if width >= label_share:
            name = frame.removesuffix("_[k]").rsplit("/", 1)[-1]
            r, g, b = to_rgb(COLORS[frame_kind(frame)])
            ink = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.45 else "black"  # legible on a dark box
            ax.text(x + 0.004, depth + 0.45, name[:int(width * 90)], fontsize=7.5, va="center", clip_on=True, color=ink,
                    parse_math=False)  # Java names hold "$" (Handler$$Lambda): text, not TeX
    ax.set_xlim(0, 1)
    ax.set_ylim(0, max((d + 1 for _, d, _, _ in drawn), default=1))
    ax.set_yticks([])
    ax.xaxis.set_major_formatter(lambda v, _: f"{100 * v:.0f} %")


def figure(folder: Path, servers: tuple[str, ...]):
    """Flame graphs of `servers` (flame/<server>.collapsed[.gz] in `folder`), one panel each, one above the other,
    each as tall as its drawn stacks are deep, with a legend of whose code each colour is."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from iobench.book import figures

    found = files(folder)
    missing = [s for s in servers if s not in found]
    if missing:
        raise FileNotFoundError(f"no folded stacks for {', '.join(missing)} in {folder}")
    drawn = [boxes(found[s]) for s in servers]
    depths = [max((d + 1 for _, d, _, _ in b), default=1) for b in drawn]
    # a stack's row is as tall as its 7.5-point label (0.11 in): 9 px or more where the column is narrowest (672 px)
    fig, axes = plt.subplots(len(servers), 1, figsize=(figures.COLUMN_IN, 0.8 * len(servers) + 0.11 * sum(depths)),
                             height_ratios=depths, squeeze=False)
    for ax, server, b in zip(axes[:, 0], servers, drawn):
        draw(ax, b)
        ax.set_title(server, loc="left")
    axes[-1, 0].set_xlabel("share of the samples")
    # the key above the first graph, where a reader starts reading the colours
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()], fontsize="small",
               loc="upper center", ncol=4, bbox_to_anchor=(0.5, 1))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / fig.get_figheight()))  # the legend's three rows above
    return fig
