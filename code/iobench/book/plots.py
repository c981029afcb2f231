"""The standard plots. Each figure carries its caption text (caption(fig)): the dataset's line
(machine, date, profile, pinning) and what its markings mean; a page glues it into the figure's
real caption (the cell's `mystnb.figure` metadata, with {glue:text}), so the machine and date are
text under the figure, not small print inside the image. Legends sit outside the axes.

Medians are drawn with min-max bars over the repeats. In every plot, a point where
the load generator saturated its core is drawn hollow, and the legend and the caption
say that hollow means "generator-bound": there, the number measures wrk or ab as much
as the server. A point where some connection never got an answer (unserved: wrk
counts only what completes, so its numbers describe the connections that were served)
is crossed out, and the legend and caption say so.

Every server keeps one colour and one marker in every figure of the book (looks.style).
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt  # the backend is the caller's: inline in a notebook
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from iobench.book import figures
from iobench.book.looks import FACET_ABOVE, FAMILIES, caption, describe, family, style  # noqa: F401 (pages use plots.*)
from iobench.data.dataset import Dataset
from iobench.kinds.echo import dataset as echo

figures.install()  # the book's style, and every figure a cell shows as figures.png() renders it


def _grid(servers: list[str], columns: int = 1, height: float = 2.9):
    """A figure as wide as the text column for `servers`: one row of `columns` axes when they are few (at most
    FACET_ABOVE), else one row per family present, each with nginx as the common reference. Returns the
    figure and, per row, its axes and the servers it draws."""
    groups, titles = [servers], [""]
    if len(servers) > FACET_ABOVE:
        cap = FACET_ABOVE - (1 if "nginx" in servers else 0)  # servers a panel draws beside the reference
        families = [(fam, [s for s in servers if family(s) == fam and s != "nginx"]) for fam in FAMILIES]
        chunked = []
        for fam, mine in families:
            parts = _even_parts(mine, cap) if mine else []
            chunked += [(f"{fam} ({i + 1} of {len(parts)})" if len(parts) > 1 else fam, part)
                        for i, part in enumerate(parts)]
        groups, titles = _merge_small([part for _, part in chunked], [title for title, _ in chunked])
        if "nginx" in servers:
            groups = [["nginx"] + mine for mine in groups]
    fig, axes = plt.subplots(len(groups), columns, figsize=(figures.COLUMN_IN, height * len(groups) + 0.6),
                             sharex=True, squeeze=False)
    if len(groups) > 1:
        for row, title in zip(axes, titles):
            row[0].set_title(title, fontsize="medium")
    return fig, [(list(row), mine) for row, mine in zip(axes, groups)]


def _even_parts(items: list[str], cap: int) -> list[list[str]]:
    """items in as few parts of at most `cap` as they need, as even as they can be (seven in parts of five: 4 and 3)."""
    n = -(-len(items) // cap)
    size, extra = divmod(len(items), n)
    out, at = [], 0
    for i in range(n):
        take = size + (1 if i < extra else 0)
        out.append(items[at:at + take])
        at += take
    return out


def _merge_small(groups: list[list[str]], titles: list[str]) -> tuple[list[list[str]], list[str]]:
    """Families of a faceted figure with a panel each, where a family of one server shares a panel with the
    smallest other family it fits beside (at most FACET_ABOVE servers with the reference): a panel of one line
    says nothing a neighbour's could not."""
    groups, titles = [list(g) for g in groups], list(titles)
    while len(groups) > 1:
        single = next((i for i, g in enumerate(groups) if len(g) == 1), None)
        if single is None:
            break
        others = sorted((len(g), j) for j, g in enumerate(groups) if j != single and len(g) + 2 <= FACET_ABOVE)
        if not others:
            break
        j = others[0][1]
        first, second = sorted((single, j))
        groups[first] += groups[second]
        titles[first] = f"{titles[first]}; {titles[second]}"
        del groups[second], titles[second]
    return groups, titles


def _panels(servers: list[str], height: float = 2.9):
    """_grid with one axes per row: returns the figure and, per axes, the servers it draws."""
    fig, rows = _grid(servers, 1, height)
    return fig, [(row[0], mine) for row, mine in rows]


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
        self.percentiles = False  # solid p50, dashed p99 (latency)

    def __ior__(self, other: "Notes") -> "Notes":
        self.bound |= other.bound
        self.unserved |= other.unserved
        self.percentiles |= other.percentiles
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


def _draw(ax, x, y, lo, hi, g, server) -> Notes:
    look = style(server)
    ax.errorbar(x, y, yerr=[y - lo, hi - y], capsize=3, label=server, **look)
    return _hollow(ax, x, y, g, look["color"], look["marker"])


def _handles(ax, notes: Notes):
    """The axes' legend entries, and one for each marking the figure used."""
    handles, labels = ax.get_legend_handles_labels()
    if notes.percentiles:
        handles += [Line2D([], [], color="black", marker="o"),
                    Line2D([], [], color="black", marker="^", linestyle="--")]
        labels += ["solid: p50", "dashed: p99 (min-max)"]
    if notes.bound:  # one grey hollow marker says what hollow means, for every series
        handles.append(Line2D([], [], marker="o", linestyle="", markersize=9, markerfacecolor="white",
                              markeredgecolor="grey", markeredgewidth=1.5))
        labels.append("hollow: generator-bound")
    if notes.unserved:
        handles.append(Line2D([], [], marker="x", linestyle="", markersize=11, color="grey", markeredgewidth=2))
        labels.append("crossed: connections never served")
    return handles, labels


def _legend(ax, notes: Notes, below: bool = False):
    """The legend outside the axes: on the right, or under a panel of a faceted figure."""
    handles, labels = _handles(ax, notes)
    if below:
        ax.legend(handles, labels, fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    else:
        ax.legend(handles, labels, fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)


def _caption(fig, ds: Dataset, notes: Notes):
    text = ds.caption() + "."
    if notes.bound:
        text += " Hollow markers: the load generator was saturated (generator-bound)."
    if notes.unserved:
        text += " Crossed markers: some connections never got an answer; the numbers describe only those that did."
    describe(fig, text)


def _finish(fig, ax, ds: Dataset, title: str, notes: Notes):
    ax.set_title(title)
    _legend(ax, notes)
    _caption(fig, ds, notes)
    fig.tight_layout()
    return fig


def _finish_panels(fig, panels, ds: Dataset, title: str, notes: Notes):
    """_finish for a figure from _panels: a legend right of each panel (the servers it draws), one title."""
    if len(panels) == 1:
        return _finish(fig, panels[0][0], ds, title, notes)
    for ax, _ in panels:
        _legend(ax, notes)
    fig.suptitle(title)
    _caption(fig, ds, notes)
    fig.tight_layout()
    return fig


def _faceted(ds: Dataset, tool: str, mode: str, work_ms: float, pipeline: int, column: str, ylabel: str,
             title: str, log_x: bool = True):
    """A median with min-max bars per server against connections: one axes, or a panel per family."""
    return _drawn(ds, dict(_series(ds, tool, mode, work_ms, pipeline)), "connections", column, ylabel,
                  "concurrent connections", title, log_x)


def _drawn(ds: Dataset, series: dict, x: str, column: str, ylabel: str, xlabel: str, title: str, log_x: bool):
    """Each server's series (its summary rows, sorted by x): a median with min-max bars against x."""
    fig, panels = _panels(list(series))
    notes = Notes()
    for ax, servers in panels:
        for server in servers:
            g = series[server]
            notes |= _draw(ax, g[x], g[column], g[column + "_min"], g[column + "_max"], g, server)
        if log_x:
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(ylabel)
    panels[-1][0].set_xlabel(xlabel)
    return _finish_panels(fig, panels, ds, title, notes)


def against(ds: Dataset, x: str, column: str, ylabel: str, xlabel: str, title: str, log_x: bool = True):
    """A median with min-max bars per server against any key of a dataset whose summary has one row per server and
    value of x (a page's view of one route, say, against the size of a pool)."""
    s = ds.summary()
    return _drawn(ds, {server: g.sort_values(x) for server, g in s.groupby("server", sort=False)}, x, column,
                  ylabel, xlabel, title, log_x)


def throughput(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0, log_x=True,
               pipeline: int = 1):
    title = (f"Throughput, {tool} {mode}" + (f", {pipeline} pipelined" if pipeline != 1 else "")
             + (f", {work_ms:g} ms work" if work_ms else ""))
    return _faceted(ds, tool, mode, work_ms, pipeline, "rps", "requests per second", title, log_x)


def latency(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    """p50 (solid, the server's marker) and p99 (dashed, with the repeats' range) per server."""
    series = dict(_series(ds, tool, mode, work_ms))
    fig, panels = _panels(list(series))
    notes = Notes()
    for ax, servers in panels:
        for server in servers:
            g = series[server]
            x, look = g["connections"], style(server)
            ax.plot(x, g["p50_ms"], label=server, **look)  # one key entry per server; the line styles keyed once
            ax.errorbar(x, g["p99_ms"], yerr=[g["p99_ms"] - g["p99_ms_min"], g["p99_ms_max"] - g["p99_ms"]],
                        marker="^", linestyle="--", color=look["color"], capsize=3, label="_p99")
            notes |= _hollow(ax, x, g["p50_ms"], g, look["color"], look["marker"])
            _hollow(ax, x, g["p99_ms"], g, look["color"], "^")
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_ylabel("latency (ms)")
    notes.percentiles = True
    panels[-1][0].set_xlabel("concurrent connections")
    title = f"Latency percentiles, {tool} {mode}"
    return _finish_panels(fig, panels, ds, title, notes)


def cpu_per_request(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    return _faceted(ds, tool, mode, work_ms, 1, "cpu_us_per_req", "server CPU per request (µs)",
                    f"Server CPU time per request, {tool} {mode}")


def memory_threads(ds: Dataset, tool: str = "wrk", mode: str = "keepalive", work_ms: float = 0.0):
    """Memory as PSS (each shared page divided among its sharers) where the data has it,
    else RSS (which charges a page shared by a forked server's processes once per process)."""
    s = ds.summary()
    series = dict(_series(ds, tool, mode, work_ms))
    fig, rows = _grid(list(series), columns=2, height=2.6)
    notes = Notes()
    mem, mem_label = ("pss_mib", "peak PSS (MiB)") if s["pss_mib"].notna().any() else ("rss_mib", "peak RSS (MiB)")
    for (ax1, ax2), servers in rows:
        for server in servers:
            g = series[server]
            x = g["connections"]
            look = style(server)
            ax1.plot(x, g[mem], label=server, **look)
            ax2.plot(x, g["threads"], label=server, **look)
            notes |= _hollow(ax1, x, g[mem], g, look["color"], look["marker"])
            _hollow(ax2, x, g["threads"], g, look["color"], look["marker"])
        for ax, label in ((ax1, mem_label), (ax2, "peak threads")):
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
        _legend(ax2, notes)
    for ax in rows[-1][0]:
        ax.set_xlabel("concurrent connections")
    fig.suptitle("Memory and threads")
    _caption(fig, ds, notes)
    fig.tight_layout()
    return fig


def hockey_stick(ds: Dataset, work_ms: float, tool: str = "openloop", title: str = ""):
    """Latency against offered load, one panel per server: the open loop's p50, p99 and p99.9
    (each counted from the request's intended start) at fractions of the server's capacity,
    and, dashed, the p99 the closed loop reported at the same connections: what a closed-loop
    benchmark would have published (by whichever generator measured it: a database dataset's
    closed loop is wrk's). Hollow: the generator was saturated; crossed: some connection never
    got an answer. Log scale: the knee spans orders of magnitude."""
    s = ds.summary()
    s = s[((s["tool"] == tool) | (s["loop"] == "closed")) & (s["work_ms"] == work_ms)]
    servers = list(dict.fromkeys(s["server"]))
    columns = 2 if len(servers) in (2, 4) else min(3, len(servers))  # full rows where the count allows
    rows = -(-len(servers) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(figures.COLUMN_IN, 2.5 * rows + 1.2), sharey=True,
                             squeeze=False)
    for ax in axes.flat[len(servers):]:
        ax.remove()
    notes = Notes()
    for ax, server in zip(axes.flat, servers):
        g = s[(s["server"] == server) & (s["loop"] == "open")].sort_values("fraction")
        x = 100 * g["fraction"].values
        for col, marker, label in (("p50_ms", "o", "p50"), ("p99_ms", "^", "p99"), ("p99_9_ms", "s", "p99.9")):
            line = ax.plot(x, g[col].values, marker=marker, label=label)
            notes |= _hollow(ax, x, g[col].values, g, line[0].get_color(), marker)
        closed = s[(s["server"] == server) & (s["loop"] == "closed")]
        if len(closed):
            ax.axhline(closed["p99_ms"].iloc[0], linestyle="--", color="grey", label="closed loop p99")
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_title(server, fontsize="medium")
        if ax.get_subplotspec().is_last_row() or ax is axes.flat[len(servers) - 1]:
            ax.set_xlabel("offered (% of capacity)")
    for row in axes:
        row[0].set_ylabel("latency from intended\nstart (ms)")
    fig.legend(*_handles(axes.flat[0], notes), loc="lower center", ncol=3, bbox_to_anchor=(0.5, 0), fontsize="small")
    fig.suptitle(title or f"Latency against offered load, {work_ms:g} ms of work per request", fontsize="medium")
    _caption(fig, ds, notes)
    fig.tight_layout(rect=(0, 0.06 + 0.04 * (notes.bound or notes.unserved), 1, 1))
    return fig


def idle_memory(ds: Dataset, idle_conns: int):
    """Memory (PSS) per additional idle connection, one bar per server: the slope between the two highest
    levels it held, up to `idle_conns` (median, min-max over repeats), with a cross where the slope from none
    to the first level differs: what one more connection costs a model while it does nothing, and where a
    total over N would have said otherwise (a JVM growing its heap)."""
    m = ds.marginal()
    m = m[m["to"] <= idle_conns]
    top = m.loc[m.groupby("server", sort=False)["to"].idxmax()].sort_values("slope")
    first = m[m["from"] == 0].set_index("server")["slope"]
    lang = ds.df.drop_duplicates("server").set_index("server")["lang"]
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(top) + 1.4))
    y = list(range(len(top)))
    mid = top["slope"].values
    err = [mid - top["slope_min"].values, top["slope_max"].values - mid]
    ax.barh(y, mid, xerr=err, color=[style(sid)["color"] for sid in top["server"]], capsize=2)
    handles = [Patch(facecolor="lightgray", label=f"bar: from {top['from'].max():,} to {idle_conns:,} held "
                                                  "(median, range of the repeats)")]
    lower = [(i, first[sid]) for i, (sid, frm) in enumerate(zip(top["server"], top["from"])) if frm and sid in first]
    if lower:
        handles.append(ax.scatter([v for _, v in lower], [i for i, _ in lower], marker="x", color="black",
                                  zorder=3, label="from none to the first level"))
    ax.set_yticks(y, [f"{sid} ({lang.get(sid, '')})" + (f", up to {to:,}" if to != idle_conns else "")
                      for sid, to in zip(top["server"], top["to"])])
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("KiB of server memory (PSS) per additional idle connection, log scale")
    ax.set_title("Memory per additional idle connection")
    ax.legend(handles=handles, loc="lower right", fontsize="small")
    _caption(fig, ds, Notes())
    fig.tight_layout()
    return fig


def plain_log_ticks(axis) -> None:
    """A log axis labelled in plain numbers ("20", "500", "2,000", "0.1"), never "2×10¹" or "10⁻¹": at 1, 2, 3 and 5
    of each decade where the axis spans a few, at each power of ten only where it spans more (labels never crowd)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def label(v, _):
        lo, hi = sorted(axis.get_view_interval())
        wide = lo > 0 and math.log10(hi / lo) > 2.5
        lead = round(v / 10 ** math.floor(math.log10(v))) if v > 0 else 0
        if wide and lead != 1:
            return ""
        return f"{v:,.0f}" if v >= 1 else f"{v:g}"
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


def idle_cpu(ds: Dataset, servers: tuple[str, ...], column: str = "cpu_us_per_req",
             label: str = "server CPU µs per request"):
    """A column (CPU per request, p99) of the busy load against the idle connections held."""
    s = ds.summary()
    fig, panels = _panels([server for server in servers if (s["server"] == server).any()], height=3.2)
    notes = Notes()
    for ax, shown in panels:
        for server in shown:
            g = s[s["server"] == server].sort_values("idle_conns")
            x = g["idle_conns"].values
            look = style(server)
            ax.plot(x, g[column].values, label=server, **look)
            notes |= _hollow(ax, x, g[column].values, g, look["color"], look["marker"])
        ax.set_xscale("symlog", linthresh=1000)
        ax.set_ylabel(label)
        values = s[s["server"].isin(shown)][column]
        if values.min() > 0 and values.max() > 5 * values.min():  # lines a linear axis would pile at its foot
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
    levels = sorted(s["idle_conns"].unique())
    panels[-1][0].set_xticks(levels, [f"{x:,.0f}" for x in levels])
    panels[-1][0].xaxis.set_minor_locator(plt.NullLocator())
    panels[-1][0].set_xlabel("idle connections held (symmetric log scale)")
    return _finish_panels(fig, panels, ds, f"40 busy connections beside idle ones: {label}", notes)


def versus(ds: Dataset, table, higher_better=frozenset(), baseline: str = "nginx", title: str = "",
           neutral=frozenset()):
    """Every server's cost against `baseline`'s in the same run, one column per measure of
    `table` (indexed by server): the cell divided by the baseline's, or for a measure where
    more is better (`higher_better`) the baseline's divided by the cell's, so every cell reads
    "times the baseline's cost": below 1 (green) cheaper, above 1 (red) dearer, on a log
    scale clipped at 16 times either way. A measure that is not a cost (`neutral`: a count the
    text says not to read as one) shows its ratio on grey, uncoloured. Blank where a server has
    no value. Each number is in black or white, whichever reads on its cell."""
    import numpy as np
    from matplotlib import colormaps

    base = table.loc[baseline]
    ratios = table.copy()
    for col in table.columns:
        ratios[col] = base[col] / table[col] if col in higher_better else table[col] / base[col]
    ratios = ratios.astype(float).replace([np.inf, -np.inf], np.nan)
    logs = np.log2(ratios.clip(lower=1 / 16, upper=16))
    for col in neutral:
        logs[col] = np.nan
    cmap = colormaps["RdYlGn_r"]
    fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 0.3 * len(table) + 2.4))
    for j, col in enumerate(table.columns):
        if col in neutral:
            ax.axvspan(j - 0.5, j + 0.5, color="#ececec", zorder=0)
    image = ax.imshow(logs.values, cmap=cmap, vmin=-4, vmax=4, aspect="auto", zorder=1)
    for (i, j), r in np.ndenumerate(ratios.values):
        if r == r:
            shade = logs.values[i, j]
            r_, g_, b_, _ = cmap((shade + 4) / 8) if shade == shade else (0.93, 0.93, 0.93, 1)
            ink = "white" if 0.299 * r_ + 0.587 * g_ + 0.114 * b_ < 0.5 else "black"
            ax.text(j, i, f"{r:.2g}" if r < 100 else ">99", ha="center", va="center", fontsize=9, color=ink,
                    zorder=2)
    ax.set_xticks(range(len(table.columns)),
                  [f"{c} (not a cost)" if c in neutral else c for c in table.columns], rotation=35, ha="right")
    ax.set_yticks(range(len(table)), table.index)
    ax.grid(False)
    bar = fig.colorbar(image, ax=ax, ticks=range(-4, 5), shrink=0.8)
    bar.ax.set_yticklabels(["1/16", "1/8", "1/4", "1/2", "1", "2", "4", "8", "16"])
    bar.set_label(f"times {baseline}'s cost (log scale)")
    ax.set_title(title or f"Against {baseline}, in the same run")
    _caption(fig, ds, Notes())
    fig.tight_layout()
    return fig


def client_rates(ds: Dataset, connections: int, delay_ms: float = 10.0):
    """The clients with the same pool of `connections` (and the C generator beside them, black),
    offered fractions of Little's ceiling connections / delay (the grey line): the rate answered
    against the rate offered (dotted: all of it), then p50, p99 and p99.9 counted from each
    request's intended start (log scale). Error bars: the repeats' min-max."""
    s = ds.summary()
    s = s[(s["experiment"] == "equal") & (s["connections"] == connections) & (s["delay_ms"] == delay_ms)]
    fig, axes = plt.subplots(2, 2, figsize=(figures.COLUMN_IN, 6.6), sharex=True)
    panels = {"achieved_rps": "answered (requests/s)", "p50_ms": "p50 from intended start (ms)",
              "p99_ms": "p99 from intended start (ms)", "p99_9_ms": "p99.9 from intended start (ms)"}
    for client, g in s.groupby("client", sort=False):
        g = g.sort_values("offered_rps")
        x, look = g["offered_rps"].values, style(client)
        for ax, col in zip(axes.flat, panels):
            y = g[col].values
            ax.errorbar(x, y, yerr=[y - g[col + "_min"].values, g[col + "_max"].values - y], capsize=3,
                        label=client, **look)
    top = float(s["offered_rps"].max()) if len(s) else 1.0
    ceiling = connections * 1000.0 / delay_ms
    axes[0, 0].plot([0, top], [0, top], ":", color="grey")  # the reference lines are named on the axes, not keyed
    axes[0, 0].annotate("everything offered", (0.55 * top, 0.55 * top), xytext=(-6, 6), textcoords="offset points",
                        rotation=30, ha="right", color="dimgrey", fontsize="small")
    for ax, label in zip(axes.flat, panels.values()):
        ax.axvline(ceiling, color="grey", linewidth=0.8)
        ax.set_ylabel(label)
        if ax is not axes[0, 0]:
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
    axes[0, 0].annotate("Little's ceiling", (ceiling, 0), xytext=(3, 4), textcoords="offset points",
                        xycoords=("data", "axes fraction"), color="dimgrey", fontsize="small")
    for ax in axes[1]:
        ax.set_xlabel("offered (requests/s)")
    fig.suptitle(f"{connections} connections, {delay_ms:g} ms per request")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), fontsize="small", loc="lower center", ncol=3,
               bbox_to_anchor=(0.5, 0))
    _caption(fig, ds, Notes())
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def beside(tables):
    """The reader's run beside the book's (mine.Ratio.beside): one panel per table, a row per server (client,
    generator) and point, its ratio to the panel's reference in each run, the book's a hollow marker, the reader's
    a filled one, joined; the reference is the line at 1. The caption names the machines."""
    tables = [t for t in tables if len(t)]
    rows = sum(len(t) for t in tables)
    fig, axes = plt.subplots(len(tables), 1, squeeze=False,
                             figsize=(figures.COLUMN_IN, 0.32 * rows + 1.0 * len(tables) + 0.6),
                             gridspec_kw={"height_ratios": [len(t) + 1.5 for t in tables]})
    for ax, table in zip(axes[:, 0], tables):
        a = table.attrs
        for y, (_, row) in enumerate(table.iloc[::-1].iterrows()):
            st = style(row[a.get("server_column", "server")])
            if st["marker"] == "x":   # no look of its own (a generator, a client): a marker that can be hollow
                st = {**st, "marker": "o"}
            ax.plot([row["book"], row["yours"]], [y, y], color=st["color"], lw=1, alpha=0.5)
            ax.plot(row["book"], y, linestyle="none", mfc="none", **st)
            ax.plot(row["yours"], y, linestyle="none", **st)
        ax.set_yticks(range(len(table)), table["row"].iloc[::-1])
        ax.set_ylim(-0.7, len(table) - 0.3)
        ax.axvline(1.0, color="black", lw=0.8)
        high = max(table["book"].max(), table["yours"].max())
        low = min(table["book"].min(), table["yours"].min())
        if high / max(low, 1e-12) > 30:  # a ratio of 0.02 beside one of 20: each read on its own scale
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
        ax.set_xlabel(a.get("xlabel", ""))
        ax.set_title(a.get("title", ""), fontsize=10)
    machines = lambda who: "; ".join(dict.fromkeys(t.attrs.get(who, "?") for t in tables))  # noqa: E731
    describe(fig, f"The book's run (hollow markers): {machines('book')}. Yours (filled): {machines('yours')}.")
    fig.tight_layout()
    return fig


def machines(tables):
    """One comparison measured on several machines (book.machines.across): a panel per table, a row per server
    and point, one marker per capture in its machine's colour and marker (a legend entry per machine), the
    reference the line at 1."""
    import matplotlib as mpl
    tables = [t for t in tables if len(t)]
    names = list(dict.fromkeys(m for t in tables for m in t["machine"]))
    colours = mpl.colormaps["tab10"].colors
    looks = {m: {"color": colours[i % 10], "marker": "osD^vP"[i % 6]} for i, m in enumerate(names)}
    rows = sum(t["row"].nunique() for t in tables)
    fig, axes = plt.subplots(len(tables), 1, squeeze=False,
                             figsize=(figures.COLUMN_IN, 0.3 * rows + 1.1 * len(tables) + 0.9),
                             gridspec_kw={"height_ratios": [t["row"].nunique() + 1.5 for t in tables]})
    for ax, table in zip(axes[:, 0], tables):
        order = list(dict.fromkeys(table["row"]))[::-1]
        y = {r: i for i, r in enumerate(order)}
        for m, g in table.groupby("machine", sort=False):
            ax.plot(g["ratio"], [y[r] for r in g["row"]], linestyle="none", alpha=0.85, label=m, **looks[m])
        ax.set_yticks(range(len(order)), order)
        ax.set_ylim(-0.7, len(order) - 0.3)
        ax.axvline(1.0, color="black", lw=0.8)
        if table["ratio"].max() / max(table["ratio"].min(), 1e-12) > 30:
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
        a = table.attrs
        ax.set_xlabel(a.get("xlabel", "ratio to the reference in the same run"))
        ax.set_title(a.get("title", ""), fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes[1:, 0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=min(2, len(seen)), fontsize="small",
               bbox_to_anchor=(0.5, 0))
    hosts = dict.fromkeys(h for t in tables for h in t.get("host", t["machine"]))
    describe(fig, "Each marker: one capture's ratio, in the colour and marker of the machine it was measured on ("
             + "; ".join(hosts) + ").")
    legend_in = 0.25 * ((len(seen) + 1) // 2) + 0.15
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    return fig


def carried(moved, agree: float):
    """How far each results page's comparisons moved on contributed machines (book.machines.carried): a row per
    page and comparison, one marker per server and point, at the contribution's ratio over the book's; 1 is a
    ratio that carried over unchanged, the band around it `agree` (machines.AGREE)."""
    import matplotlib as mpl

    AGREE = agree
    labels = list(dict.fromkeys(f"{p}: {c}" for p, c in zip(moved["page"], moved["comparison"])))
    short = [textwrap.shorten(label, 40, placeholder="...") for label in labels]
    names = list(dict.fromkeys(moved["machine"]))
    colours = mpl.colormaps["tab10"].colors
    fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 0.36 * len(labels) + 1.6))
    y = {label: len(labels) - 1 - i for i, label in enumerate(labels)}
    for i, (m, g) in enumerate(moved.groupby("machine", sort=False)):
        ys = [y[f"{p}: {c}"] + 0.12 * (i - (len(names) - 1) / 2) for p, c in zip(g["page"], g["comparison"])]
        ax.plot(g["moved"], ys, linestyle="none", marker="o", alpha=0.7, color=colours[(i + 3) % 10], label=m)
    ax.axvspan(1 - AGREE, 1 + AGREE, color="grey", alpha=0.15, lw=0)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks([y[label] for label in labels], short)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("contribution's ratio / the book's (1: unchanged)")
    ax.legend(fontsize="small", loc="best")
    describe(fig, f"One marker per server and point; the grey band is within {AGREE * 100:.0f} % of the book's ratio. "
             "Machines: " + "; ".join(dict.fromkeys(moved["machine"])) + ".")
    fig.tight_layout()
    return fig


def echo_sweep(ds: echo.EchoDataset, link: str):
    """Messages/s and MB/s against message size, median with min-max bars, one line per version
    (in its colour of every figure), one legend outside on the right; the caption text is the dataset's line."""
    s = ds.summary()
    s = s[(s["experiment"] == "sweep") & (s["link"] == link)]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(figures.COLUMN_IN, 6.4), sharex=True)
    for server, g in s.groupby("server", sort=False):
        g = g.sort_values("size")
        x = g["size"] / 1024
        look = style(server)
        ax1.errorbar(x, g["tps"], yerr=[g["tps"] - g["tps_min"], g["tps_max"] - g["tps"]], capsize=3,
                     label=server, **look)
        ax2.plot(x, g["mb_per_s"], label=server, **look)
    if link == "veth":
        sizes = sorted(s["size"].unique())
        ax1.plot([z / 1024 for z in sizes], [echo.wire_limit(z) for z in sizes], "k--", lw=1,
                 label="1 Gbit/s wire limit")
        ax2.axhline(1e9 / 8 / 1e6 * echo.MSS / (echo.MSS + echo.WIRE_OVERHEAD), color="k", ls=":", lw=1.2,
                    label="1 Gbit/s payload limit")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
        ax.set_xticks([1, 2, 5, 10, 50, 100], ["1k", "2k", "5k", "10k", "50k", "100k"])
    ax2.set_xlabel("message size (KiB)")
    ax1.set_yscale("log")
    plain_log_ticks(ax1.yaxis)
    ax1.set_ylabel("messages per second (echoes)")
    ax2.set_ylabel("payload MB/s, one direction")
    ax2.set_ylim(bottom=0)
    where = "loopback" if link == "lo" else "1 Gbit/s veth link, MTU 1500"
    fig.suptitle(f"Echo throughput, 32 connections, {where}")
    handles, labels = ax1.get_legend_handles_labels()
    more = [(h, name) for h, name in zip(*ax2.get_legend_handles_labels()) if name not in labels]
    fig.legend(handles + [h for h, _ in more], labels + [name for _, name in more], fontsize="small",
               loc="lower center", ncol=3, bbox_to_anchor=(0.5, 0))
    describe(fig, ds.caption() + ".")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def connection_cost(costs: pd.DataFrame, ds: Dataset, parts: dict[str, str]):
    """What an idle connection costs the machine, one stacked bar per server: `costs` has a row per server
    ("server") and a column per part (KiB per connection, already computed from `ds`); `parts` maps each column
    to its legend label, in stacking order."""
    costs = costs.assign(total=costs[list(parts)].clip(lower=0).sum(axis=1)).sort_values("total")
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(costs) + 1.6))
    y = list(range(len(costs)))
    left = np.zeros(len(costs))
    for (col, label), color in zip(parts.items(), ("tab:blue", "tab:orange", "tab:red", "tab:purple")):
        width = costs[col].clip(lower=0).fillna(0).values
        ax.barh(y, width, left=left, color=color, label=label)
        left += width
    ax.set_yticks(y, costs["server"])
    ax.set_xlabel("KiB per idle connection held (median of the repeats)")
    ax.set_title("What an idle connection costs the machine")
    ax.legend(loc="lower right", fontsize="small")
    _caption(fig, ds, Notes())
    fig.tight_layout()
    return fig


def accept_spread(ds: Dataset, order: list[str]):
    """Connections each worker held, one panel per way of sharing the port (`order`): per worker, in the order
    they were started, the median and range of the repeats."""
    fig, axes = plt.subplots(1, len(order), figsize=(figures.COLUMN_IN, 3.4), sharey=True, squeeze=False)
    for ax, share in zip(axes[0], order):
        rows = ds.df[(ds.df["share"] == share) & ds.df["ok"]]
        held = pd.DataFrame([[int(x) for x in w.split()] for w in rows["worker_conns"]])
        mid = held.median().values
        err = [mid - held.min().values, held.max().values - mid]
        ax.bar(range(1, len(mid) + 1), mid, yerr=err, capsize=2, color="tab:blue")
        ax.set_title(share)
        ax.set_xticks(range(1, len(mid) + 1))
        ax.set_xlabel("worker (order started)")
    axes[0][0].set_ylabel("idle connections held")
    _caption(fig, ds, Notes())
    fig.tight_layout()
    return fig


# the colours of the groups of paths a request's CPU goes to (pages/kernel_paths.GROUPS), in their order: TCP and IP,
# system calls, the waits, the scheduler, memory and the rest of the kernel, user code
PATH_COLORS = ("tab:blue", "tab:orange", "tab:red", "tab:purple", "tab:gray", "tab:green")


def where_cpu_goes(panels: dict[str, pd.DataFrame], groups: list[str], ds: Dataset):
    """A request's CPU by path, one stacked bar per server (µs, medians of the repeats), one panel per load (`panels`:
    title -> a frame with a row per server and a column per group, in `groups`' stacking order), the servers in the
    first panel's order; each panel its own scale. A bar more than twice as long as any other in its panel is cut at
    the scale the others need, its total written at its end."""
    first = next(iter(panels.values()))
    servers = list(first.index)
    fig, axes = plt.subplots(1, len(panels), figsize=(figures.COLUMN_IN, 0.26 * len(servers) + 1.6), sharey=True,
                             squeeze=False)
    y = np.arange(len(servers))
    for ax, (title, frame) in zip(axes[0], panels.items()):
        frame = frame.reindex(servers)
        totals = frame[groups].clip(lower=0).fillna(0).sum(axis=1)
        ranked = totals.sort_values(ascending=False)
        cut = len(ranked) > 1 and ranked.iloc[0] > 2 * ranked.iloc[1]
        limit = 1.3 * ranked.iloc[1] if cut else None
        left = np.zeros(len(servers))
        for group, color in zip(groups, PATH_COLORS):
            width = frame[group].clip(lower=0).fillna(0).values
            ax.barh(y, width, left=left, color=color, label=group, height=0.75)
            left += width
        if cut:
            ax.set_xlim(0, limit)
            row = servers.index(ranked.index[0])
            ax.text(0.98 * limit, row, f"{ranked.iloc[0]:.2f} µs →", ha="right", va="center", color="white",
                    fontsize="small", fontweight="bold")
        ax.set_title(title)
        ax.set_xlabel("CPU µs per request")
        ax.grid(axis="y", visible=False)
    axes[0][0].set_yticks(y, servers)
    axes[0][0].invert_yaxis()
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize="small", bbox_to_anchor=(0.5, 0))
    _caption(fig, ds, Notes())
    fig.tight_layout(rect=(0, 0.75 / fig.get_figheight(), 1, 1))  # the legend's three rows below
    return fig


def chain_bars(table: pd.DataFrame, panels: dict[str, str], ds: Dataset):
    """One panel per measure (`panels`: column of `table` -> its axis label), a bar per server of `table`'s index
    in its order, top to bottom (the median; the line across it the repeats' min to max), each server in its own
    colour; two panels to a row."""
    rows = (len(panels) + 1) // 2
    servers = list(table.index)
    fig, axes = plt.subplots(rows, 2, figsize=(figures.COLUMN_IN, rows * (0.3 * len(servers) + 1.3)), sharey=True,
                             squeeze=False)
    y = np.arange(len(servers))[::-1]
    colours = [style(s)["color"] for s in servers]
    for ax, (col, label) in zip(axes.flat, panels.items()):
        mid = table[col].to_numpy(dtype=float)
        lo, hi = table[col + "_min"].to_numpy(dtype=float), table[col + "_max"].to_numpy(dtype=float)
        ax.barh(y, np.nan_to_num(mid), color=colours, height=0.7)
        ax.errorbar(np.nan_to_num(mid), y, xerr=[np.nan_to_num(mid - lo), np.nan_to_num(hi - mid)], fmt="none",
                    ecolor="black", capsize=2, lw=0.8)
        ax.set_xlabel(label)
        ax.set_yticks(y, servers)
        ax.set_xlim(left=0)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    _caption(fig, ds, Notes())
    fig.tight_layout()
    return fig
