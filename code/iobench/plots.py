"""The standard plots, each with the dataset's machine and date in its caption.

Medians are drawn with min-max bars over the repeats. In every plot, a point where
the load generator saturated its core is drawn hollow, and the legend and the caption
say that hollow means "generator-bound": there, the number measures wrk or ab as much
as the server. A point where some connection never got an answer (unserved: wrk
counts only what completes, so its numbers describe the connections that were served)
is crossed out, and the legend and caption say so.
"""
from __future__ import annotations

import matplotlib.pyplot as plt  # the backend is the caller's: inline in a notebook
from matplotlib.lines import Line2D

from .dataset import Dataset

plt.rcParams.update({"figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
                     "axes.grid": True, "grid.alpha": 0.3, "figure.dpi": 100})


def _series(ds: Dataset, tool: str, mode: str, work_ms: float, pipeline: int = 1):
    s = ds.summary()
    s = s[(s["tool"] == tool) & (s["mode"] == mode) & (s["work_ms"] == work_ms) & (s["pipeline"] == pipeline)]
    for server, g in s.groupby("server", sort=False):
        yield server, g.sort_values("connections")


class Notes:
    """Which markings a figure used, so its legend and caption explain exactly those."""

    def __init__(self):
        self.bound = False
        self.unserved = False

    def __ior__(self, other: "Notes") -> "Notes":
        self.bound |= other.bound
        self.unserved |= other.unserved
        return self


def _hollow(ax, x, y, g, color, marker="o") -> Notes:
    """Draw the generator-bound points of a series hollow, and cross out the unserved ones,
    over its filled markers."""
    notes = Notes()
    hollow = g["generator_bound"].values
    if hollow.any():
        ax.scatter(x[hollow], y[hollow], s=90, marker=marker, facecolors="white", edgecolors=color,
                   zorder=3, linewidths=1.5)
        notes.bound = True
    crossed = g["unserved"].values
    if crossed.any():
        ax.scatter(x[crossed], y[crossed], s=160, marker="x", color=color, zorder=4, linewidths=2)
        notes.unserved = True
    return notes


def _draw(ax, x, y, lo, hi, g, label, marker="o") -> Notes:
    line = ax.errorbar(x, y, yerr=[y - lo, hi - y], marker=marker, capsize=3, label=label)
    return _hollow(ax, x, y, g, line[0].get_color(), marker)


def _legend(ax, notes: Notes):
    handles, labels = ax.get_legend_handles_labels()
    if notes.bound:  # one grey hollow marker says what hollow means, for every series
        handles.append(Line2D([], [], marker="o", linestyle="", markersize=9, markerfacecolor="white",
                              markeredgecolor="grey", markeredgewidth=1.5))
        labels.append("hollow: generator-bound")
    if notes.unserved:
        handles.append(Line2D([], [], marker="x", linestyle="", markersize=11, color="grey", markeredgewidth=2))
        labels.append("crossed: connections never served")
    ax.legend(handles, labels, fontsize="small")


def _caption(fig, ds: Dataset, notes: Notes):
    caption = ds.caption()
    if notes.bound:
        caption += "\nHollow markers: the load generator was saturated (generator-bound)."
    if notes.unserved:
        caption += ("\nCrossed markers: some connections never got an answer; the numbers describe "
                    "only those that did.")
    fig.text(0.01, -0.02, caption, fontsize=7, va="top", wrap=True)


def _finish(fig, ax, ds: Dataset, title: str, notes: Notes):
    ax.set_title(title)
    _legend(ax, notes)
    _caption(fig, ds, notes)
    fig.tight_layout()
    return fig


def throughput(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0, log_x=True,
               pipeline: int = 1):
    fig, ax = plt.subplots(figsize=(7, 4))
    notes = Notes()
    for server, g in _series(ds, tool, mode, work_ms, pipeline):
        notes |= _draw(ax, g["connections"], g["rps"], g["rps_min"], g["rps_max"], g, server)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("requests per second")
    ax.set_ylim(bottom=0)
    title = (f"Throughput, {tool} {mode}" + (f", {pipeline} pipelined" if pipeline != 1 else "")
             + (f", {work_ms:g} ms work" if work_ms else ""))
    return _finish(fig, ax, ds, title, notes)


def latency(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    fig, ax = plt.subplots(figsize=(7, 4))
    notes = Notes()
    for server, g in _series(ds, tool, mode, work_ms):
        x = g["connections"]
        line = ax.plot(x, g["p50_ms"], marker="o", label=f"{server} p50")
        color = line[0].get_color()
        ax.errorbar(x, g["p99_ms"], yerr=[g["p99_ms"] - g["p99_ms_min"], g["p99_ms_max"] - g["p99_ms"]],
                    marker="^", linestyle="--", color=color, capsize=3, label=f"{server} p99")
        notes |= _hollow(ax, x, g["p50_ms"], g, color, "o")
        _hollow(ax, x, g["p99_ms"], g, color, "^")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("latency (ms)")
    return _finish(fig, ax, ds, f"Latency percentiles, {tool} {mode}", notes)


def cpu_per_request(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    fig, ax = plt.subplots(figsize=(7, 4))
    notes = Notes()
    for server, g in _series(ds, tool, mode, work_ms):
        notes |= _draw(ax, g["connections"], g["cpu_us_per_req"], g["cpu_us_per_req_min"],
                       g["cpu_us_per_req_max"], g, server)
    ax.set_xscale("log")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("server CPU per request (µs)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, ds, f"Server CPU time per request, {tool} {mode}", notes)


def memory_threads(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    """Memory as PSS (each shared page divided among its sharers) where the data has it,
    else RSS (which charges a page shared by a forked server's processes once per process)."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    notes = Notes()
    s = ds.summary()
    mem, mem_label = ("pss_mib", "peak PSS (MiB)") if s["pss_mib"].notna().any() else ("rss_mib", "peak RSS (MiB)")
    for server, g in _series(ds, tool, mode, work_ms):
        x = g["connections"]
        color = ax1.plot(x, g[mem], marker="o", label=server)[0].get_color()
        ax2.plot(x, g["threads"], marker="o", color=color, label=server)
        notes |= _hollow(ax1, x, g[mem], g, color)
        _hollow(ax2, x, g["threads"], g, color)
    for ax, label in ((ax1, mem_label), (ax2, "peak threads")):
        ax.set_xscale("log")
        ax.set_xlabel("concurrent connections")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    ax1.set_title("Memory")
    ax2.set_title("Threads")
    _legend(ax2, notes)
    _caption(fig, ds, notes)
    fig.tight_layout()
    return fig


def hockey_stick(ds: Dataset, work_ms: float, tool: str = "openloop"):
    """Latency against offered load, one panel per server: the open loop's p50, p99 and p99.9
    (each counted from the request's intended start) at fractions of the server's capacity,
    and, dashed, the p99 the closed loop reported at the same connections: what a closed-loop
    benchmark would have published. Hollow: the generator was saturated; crossed: some
    connection never got an answer. Log scale: the knee spans orders of magnitude."""
    s = ds.summary()
    s = s[(s["tool"] == tool) & (s["work_ms"] == work_ms)]
    servers = list(dict.fromkeys(s["server"]))
    fig, axes = plt.subplots(1, len(servers), figsize=(2.6 * len(servers) + 1, 3.6), sharey=True, squeeze=False)
    notes = Notes()
    for ax, server in zip(axes[0], servers):
        g = s[(s["server"] == server) & (s["loop"] == "open")].sort_values("fraction")
        x = 100 * g["fraction"].values
        for col, marker, label in (("p50_ms", "o", "p50"), ("p99_ms", "^", "p99"), ("p99_9_ms", "s", "p99.9")):
            line = ax.plot(x, g[col].values, marker=marker, label=label)
            notes |= _hollow(ax, x, g[col].values, g, line[0].get_color(), marker)
        closed = s[(s["server"] == server) & (s["loop"] == "closed")]
        if len(closed):
            ax.axhline(closed["p99_ms"].iloc[0], linestyle="--", color="grey", label="closed loop p99")
        ax.set_yscale("log")
        ax.set_title(server, fontsize="medium")
        ax.set_xlabel("offered (% of capacity)")
    axes[0][0].set_ylabel("latency from intended start (ms)")
    _legend(axes[0][-1], notes)
    fig.suptitle(f"Latency against offered load, {work_ms:g} ms of work per request", fontsize="medium")
    _caption(fig, ds, notes)
    fig.tight_layout()
    return fig


def idle_memory(ds: Dataset, idle_conns: int):
    """Memory (PSS) per idle connection, one bar per server (median, min-max over repeats),
    at `idle_conns` idle connections: what a connection costs a model while it does nothing."""
    s = ds.summary()
    s = s[(s["idle_conns"] == idle_conns) & s["pss_per_idle_kib"].notna()].sort_values("pss_per_idle_kib")
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(s) + 1.2))
    y = range(len(s))
    mid = s["pss_per_idle_kib"].values
    err = [mid - s["pss_per_idle_kib_min"].values, s["pss_per_idle_kib_max"].values - mid]
    colors = ["tab:blue" if lang == "C" else "tab:orange" for lang in s["lang"]]
    ax.barh(list(y), mid, xerr=err, color=colors, capsize=2)
    ax.set_yticks(list(y), s["server"])
    ax.set_xscale("log")
    ax.set_xlabel("KiB of server memory (PSS) per idle connection, log scale")
    ax.legend(handles=[Line2D([], [], color="tab:blue", lw=6), Line2D([], [], color="tab:orange", lw=6)],
              labels=["C", "Java"], fontsize="small", loc="lower right")
    ax.set_title(f"Memory per idle connection, {idle_conns:,} held")  # its own legend: not _finish's
    _caption(fig, ds, Notes())
    fig.tight_layout()
    return fig


def idle_cpu(ds: Dataset, servers: tuple[str, ...], column: str = "cpu_us_per_req",
             label: str = "server CPU µs per request"):
    """A column (CPU per request, p99) of the busy load against the idle connections held."""
    s = ds.summary()
    fig, ax = plt.subplots(figsize=(7, 4))
    notes = Notes()
    for server in servers:
        g = s[s["server"] == server].sort_values("idle_conns")
        if g.empty:
            continue
        x = g["idle_conns"].values
        line = ax.plot(x, g[column].values, marker="o", label=server)
        notes |= _hollow(ax, x, g[column].values, g, line[0].get_color())
    ax.set_xscale("symlog", linthresh=1000)
    ax.set_xlabel("idle connections held (symmetric log scale)")
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, ds, f"40 busy connections beside idle ones: {label}", notes)
