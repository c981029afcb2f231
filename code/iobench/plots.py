"""The standard plots, each with the dataset's machine and date in its caption.

Medians are drawn with min-max bars over the repeats. In every plot, a point where
the load generator saturated its core is drawn hollow, and the legend and the caption
say that hollow means "generator-bound": there, the number measures wrk or ab as much
as the server.
"""
from __future__ import annotations

import matplotlib.pyplot as plt  # the backend is the caller's: inline in a notebook
from matplotlib.lines import Line2D

from .dataset import Dataset

plt.rcParams.update({"figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
                     "axes.grid": True, "grid.alpha": 0.3, "figure.dpi": 100})


def _series(ds: Dataset, tool: str, mode: str, work_ms: float):
    s = ds.summary()
    s = s[(s["tool"] == tool) & (s["mode"] == mode) & (s["work_ms"] == work_ms)]
    for server, g in s.groupby("server", sort=False):
        yield server, g.sort_values("connections")


def _hollow(ax, x, y, bound, color, marker="o") -> bool:
    """Draw the generator-bound points of a series hollow, over its filled markers."""
    hollow = bound.values
    if hollow.any():
        ax.scatter(x[hollow], y[hollow], s=90, marker=marker, facecolors="white", edgecolors=color,
                   zorder=3, linewidths=1.5)
    return bool(hollow.any())


def _draw(ax, x, y, lo, hi, bound, label, marker="o"):
    line = ax.errorbar(x, y, yerr=[y - lo, hi - y], marker=marker, capsize=3, label=label)
    color = line[0].get_color()
    _hollow(ax, x, y, bound, color, marker)
    return color


def _legend(ax, note_bound: bool):
    handles, labels = ax.get_legend_handles_labels()
    if note_bound:  # one grey hollow marker says what hollow means, for every series
        handles.append(Line2D([], [], marker="o", linestyle="", markersize=9, markerfacecolor="white",
                              markeredgecolor="grey", markeredgewidth=1.5))
        labels.append("hollow: generator-bound")
    ax.legend(handles, labels, fontsize="small")


def _caption(fig, ds: Dataset, note_bound: bool):
    caption = ds.caption()
    if note_bound:
        caption += "\nHollow markers: the load generator was saturated (generator-bound)."
    fig.text(0.01, -0.02, caption, fontsize=7, va="top", wrap=True)


def _finish(fig, ax, ds: Dataset, title: str, note_bound: bool):
    ax.set_title(title)
    _legend(ax, note_bound)
    _caption(fig, ds, note_bound)
    fig.tight_layout()
    return fig


def throughput(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0, log_x=True):
    fig, ax = plt.subplots(figsize=(7, 4))
    bound_any = False
    for server, g in _series(ds, tool, mode, work_ms):
        _draw(ax, g["connections"], g["rps"], g["rps_min"], g["rps_max"], g["generator_bound"], server)
        bound_any |= g["generator_bound"].any()
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("requests per second")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, ds, f"Throughput, {tool} {mode}" + (f", {work_ms:g} ms work" if work_ms else ""), bound_any)


def latency(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    fig, ax = plt.subplots(figsize=(7, 4))
    bound_any = False
    for server, g in _series(ds, tool, mode, work_ms):
        x, bound = g["connections"], g["generator_bound"]
        line = ax.plot(x, g["p50_ms"], marker="o", label=f"{server} p50")
        color = line[0].get_color()
        ax.errorbar(x, g["p99_ms"], yerr=[g["p99_ms"] - g["p99_ms_min"], g["p99_ms_max"] - g["p99_ms"]],
                    marker="^", linestyle="--", color=color, capsize=3, label=f"{server} p99")
        bound_any |= _hollow(ax, x, g["p50_ms"], bound, color, "o")
        _hollow(ax, x, g["p99_ms"], bound, color, "^")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("latency (ms)")
    return _finish(fig, ax, ds, f"Latency percentiles, {tool} {mode}", bound_any)


def cpu_per_request(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    fig, ax = plt.subplots(figsize=(7, 4))
    bound_any = False
    for server, g in _series(ds, tool, mode, work_ms):
        _draw(ax, g["connections"], g["cpu_us_per_req"], g["cpu_us_per_req_min"], g["cpu_us_per_req_max"],
              g["generator_bound"], server)
        bound_any |= g["generator_bound"].any()
    ax.set_xscale("log")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("server CPU per request (µs)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, ds, f"Server CPU time per request, {tool} {mode}", bound_any)


def memory_threads(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    bound_any = False
    for server, g in _series(ds, tool, mode, work_ms):
        x, bound = g["connections"], g["generator_bound"]
        color = ax1.plot(x, g["rss_mib"], marker="o", label=server)[0].get_color()
        ax2.plot(x, g["threads"], marker="o", color=color, label=server)
        bound_any |= _hollow(ax1, x, g["rss_mib"], bound, color)
        _hollow(ax2, x, g["threads"], bound, color)
    for ax, label in ((ax1, "peak RSS (MiB)"), (ax2, "peak threads")):
        ax.set_xscale("log")
        ax.set_xlabel("concurrent connections")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    ax1.set_title("Memory")
    ax2.set_title("Threads")
    _legend(ax2, bound_any)
    _caption(fig, ds, bound_any)
    fig.tight_layout()
    return fig
