"""One colour and marker per server across the book: every server has its own look, a
Java server shares the colour of the C server of its model, and the standard figures
draw each server in its look, whichever page and dataset draw it."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import pytest

from iobench.book import plots
from iobench.kinds.http import dataset
from iobench.run.profiles import DATA
from iobench.servers import manifest

EVERY = ("nginx", "python-http-server", *manifest.ids("C"), *manifest.ids("Java"),
         *(s[0] for s in manifest.JAVA_SEED_SERVERS), *manifest.ECHO_SERVERS,
         *manifest.ids("Java", role="rpc"), *manifest.ids("Java", role="rpc", conforms=False),
         *manifest.ids("C", role="db"), *manifest.ids("Java", role="db"))


def test_every_server_has_a_look_of_its_own():
    looks = [(plots.style(s)["color"], plots.style(s)["marker"]) for s in EVERY]
    assert len(set(looks)) == len(EVERY)
    assert ("grey", "x") not in looks  # the look of a server the registry does not know


def test_a_model_has_one_colour_in_both_languages_and_a_marker_per_language():
    for java, c in (("java-thread", "c-thread"), ("java-vthread", "c-coroutine"), ("java-nio", "c-epoll")):
        assert plots.style(java)["color"] == plots.style(c)["color"]
        assert (plots.style(java)["marker"], plots.style(c)["marker"]) == ("s", "o")
    c_colours = [plots.style(s)["color"] for s in manifest.ids("C")]
    assert len(set(c_colours)) == len(c_colours)
    for db, c in (("c-db-epoll", "c-epoll"), ("c-db-threadpool", "c-threadpool")):  # a database server: a pentagon
        assert plots.style(db)["color"] == plots.style(c)["color"] and plots.style(db)["marker"] == "p"


def _colours(fig) -> dict[str, str]:
    ax = fig.axes[0]
    return {label: mcolors.to_hex(h.get_color() if hasattr(h, "get_color") else h[0].get_color())
            for h, label in zip(*ax.get_legend_handles_labels())}


@pytest.mark.parametrize("name", ["c-servers", "java-servers"])
def test_the_standard_figures_draw_each_server_in_its_look(name):
    ds = dataset.load(DATA / name)
    for draw in (plots.throughput, plots.cpu_per_request):
        got = _colours(draw(ds))
        servers = [s for s in got if s in EVERY]
        assert len(servers) >= 3
        for s in servers:
            assert got[s] == mcolors.to_hex(plots.style(s)["color"]), (draw.__name__, s)
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize("name", ["c-servers", "java-servers"])
def test_a_figure_s_caption_is_text_for_the_page_and_its_legend_sits_outside_the_axes(name):
    """The machine and date go under the figure as its caption (the page glues caption(fig)), not into
    the image in small print; the legend of up to 27 servers stands beside the axes, not over the data."""
    ds = dataset.load(DATA / name)
    for draw in (plots.throughput, plots.cpu_per_request, plots.latency, plots.memory_threads):
        fig = draw(ds)
        text = plots.caption(fig)
        assert ds.machine() in text and ds.date() in text, (draw.__name__, text)
        small_print = [t.get_text() for t in fig.texts if t is not fig._suptitle]
        assert not small_print, (draw.__name__, small_print)
        fig.canvas.draw()
        for ax in fig.axes:
            if ax.get_legend():
                box, axes_box = ax.get_legend().get_window_extent(), ax.get_window_extent()
                assert box.x0 >= axes_box.x1 or box.y1 <= axes_box.y0, (draw.__name__, box, axes_box)
    matplotlib.pyplot.close("all")


def test_a_figure_of_many_servers_has_a_panel_per_family_each_with_nginx_for_reference():
    ds = dataset.load(DATA / "c-servers")
    fig = plots.throughput(ds)
    panels = {ax.get_title(): [label for label in ax.get_legend_handles_labels()[1]] for ax in fig.axes}
    assert all(any(t.startswith(f) for f in plots.FAMILIES) for t in panels)   # titled by family
    assert all(labels[0] == "nginx" and len(labels) <= plots.FACET_ABOVE for labels in panels.values())
    drawn = [s for labels in panels.values() for s in labels if s != "nginx"]
    assert sorted(drawn) == sorted(set(ds.summary()["server"]) - {"nginx"})   # every other server once

    def panel_of(server):
        return next(t for t, labels in panels.items() if server in labels)
    assert "event loops" in panel_of("c-epoll") and panel_of("c-thread") == plots.FAMILIES[0]
    assert plots.FAMILIES[2] in panel_of("c-coroutine")
    # a family too large for one panel is split evenly, its parts numbered
    assert plots._even_parts(list("abcdefg"), 5) == [list("abcd"), list("efg")]
    assert any(t.startswith("event loops (1 of 2)") for t in panels)
    few = plots.throughput(dataset.load(DATA / "baselines"))
    assert len(few.axes) == 1   # two servers: one axes
    matplotlib.pyplot.close("all")


def test_a_figure_nobody_described_has_no_caption_rather_than_an_empty_one():
    fig = matplotlib.pyplot.figure()
    with pytest.raises(ValueError, match="no caption"):
        plots.caption(fig)
    assert plots.caption(plots.describe(fig, "Measured here.")) == "Measured here."
    matplotlib.pyplot.close("all")


def test_servers_drawn_together_are_told_apart_by_colour():
    """Two servers of one group (the C servers, the Java ones, the echo servers, the clients, the RPC providers)
    never differ by a shade a legend cannot show, except a Java server and its C twin (the same model)."""
    import itertools

    from iobench.book import figures, looks
    from iobench.load.clientload import IDS as CLIENTS
    from iobench.servers import manifest
    s = looks._styles()
    groups = [manifest.ids("C"), manifest.ids("Java"), tuple(manifest.ECHO_SERVERS), tuple(CLIENTS),
              tuple(looks._RPC_LOOKS)]
    twins = {frozenset(p) for p in looks._SAME_MODEL.items()}
    close = [(a, b) for g in groups for a, b in itertools.combinations(g, 2) if frozenset((a, b)) not in twins
             and figures.colour_delta(s[a][0], s[b][0]) < figures.MIN_COLOUR_DELTA]
    assert not close, close


def test_a_family_of_one_server_shares_a_panel():
    from iobench.book.plots import _merge_small
    groups, titles = _merge_small([["c-fork"], ["c-select", "c-epoll", "c-uring"], ["java-vthread"]],
                                  ["threads", "event loops", "virtual threads"])
    assert groups == [["c-fork", "java-vthread"], ["c-select", "c-epoll", "c-uring"]]
    assert titles == ["threads; virtual threads", "event loops"]
    full = [["a", "b", "c", "d", "e"], ["f"]]  # no room beside the five: left alone
    assert _merge_small(full, ["x", "y"]) == (full, ["x", "y"])


def test_a_log_axis_reads_in_plain_numbers():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iobench.book.plots import plain_log_ticks
    fig, ax = plt.subplots()
    ax.plot([1, 2], [10, 60])
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    fig.canvas.draw()
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    plt.close(fig)
    assert "20" in shown and "50" in shown and not any("times" in t or "×" in t or "^" in t for t in shown), shown


def test_the_versus_heatmap_leaves_a_measure_that_is_not_a_cost_uncoloured_and_its_numbers_read():
    import numpy as np
    import pandas as pd

    ds = dataset.load(DATA / "baselines")
    table = pd.DataFrame({"cpu": [1.0, 16.0, 1.0], "switches": [1.0, 20.0, 0.5]}, index=["nginx", "a", "b"])
    fig = plots.versus(ds, table, neutral={"switches"})
    ax = fig.axes[0]
    shown = np.ma.getdata(ax.images[0].get_array()).astype(float)
    assert np.isnan(shown[:, 1]).all() and not np.isnan(shown[:, 0]).any()  # the count: on grey, not a colour
    inks = {t.get_text(): t.get_color() for t in ax.texts}
    assert inks["16"] == "white" and inks["1"] == "black"  # white on the darkest red, black on the pale middle
    assert any("(not a cost)" in t.get_text() for t in ax.get_xticklabels())
    matplotlib.pyplot.close(fig)
