"""One colour and marker per server across the book: every server has its own look, a
Java server shares the colour of the C server of its model, and the standard figures
draw each server in its look, whichever page and dataset draw it."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors  # noqa: E402
import pytest  # noqa: E402

from iobench import dataset, manifest, plots  # noqa: E402
from iobench.profiles import DATA  # noqa: E402

EVERY = ("nginx", "python-http-server", *manifest.ids("C"), *manifest.ids("Java"),
         *(s[0] for s in manifest.JAVA_SEED_SERVERS), *manifest.ECHO_SERVERS)


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
