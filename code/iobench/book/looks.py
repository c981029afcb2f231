"""How the book's figures look and what they say under them, in one place: every server's colour
and marker (style), the family a server is drawn with when a figure has a panel per family (family),
and a figure's caption text (describe, caption), which a page glues into the figure's real caption.

Every server keeps one colour and one marker in every figure of the book: a C server is a circle,
a Java one a square, an echo server a diamond, an HTTP client a triangle, a C server in front of a
database a pentagon, and a Java server takes the colour of the C server of the same model (java-thread
that of c-thread), so a model looks alike in both languages; the baselines are nginx's black star and
python's grey plus.
"""
from __future__ import annotations

import functools

from iobench.load.clientload import IDS as CLIENTS

# Hues (matplotlib's tab10, then Dark2's and tab20's darker ones, then Okabe and Ito's), taken in the order servers
# claim them, each at least figures.MIN_COLOUR_DELTA from every one taken before it where the list allows (_apart):
# two servers of one figure never differ by a shade a legend cannot show.
_HUES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf", "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#393b79",
            "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#ad494a", "#E69F00", "#56B4E9", "#009E73",
         "#0072B2", "#D55E00", "#CC79A7")


def _apart(hues, delta: float = 22.0) -> tuple[str, ...]:
    """The hues reordered: first every one at least `delta` (CIE76) from all kept before it, then the rest."""
    from iobench.book.figures import colour_delta
    kept: list[str] = []
    for h in hues:
        if all(colour_delta(h, k) >= delta for k in kept):
            kept.append(h)
    return tuple(kept) + tuple(h for h in hues if h not in kept)


_PALETTE = _apart(_HUES)
_BASELINES = {"nginx": ("black", "*"), "python-http-server": ("dimgrey", "P")}
# A Java server drawn in the colour of the C server of the same model (the others get their own).
_SAME_MODEL = {"java-blocking": "c-sequential", "java-thread": "c-thread", "java-threadpool": "c-threadpool",
               "java-nio": "c-epoll", "java-nio-multi": "c-epoll-reuseport", "java-nio2": "c-uring",
               "java-vthread": "c-coroutine"}
_MARKERS = {"C": "o", "Java": "s"}
# c-uring's chain (manifest.URING_STEPS): one sequential ramp, light to dark in the order of the steps
_STEP_HUES = ("#fdae6b", "#fd8d3c", "#e6550d", "#a63603")
# The Java HTTP clients (book/clients): triangles, in hues of their own (tab20c's darkest).
_CLIENT_HUES = ("#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")
# The RPC providers (book/java/rpc): hexagons, Tomcat's in reds, WebFlux purple, Netty's in blues and greens.
# The echo servers (book/java/mina-netty-results): diamonds, Mina's in oranges, Netty's in blues (Okabe and Ito's
# colour-blind-safe hues), the older version of each the darker.
_ECHO_LOOKS = {"mina-2.0.7": "#D55E00", "mina-2.2.10": "#E69F00", "netty-3.6.2": "#0072B2", "netty-4.2.20": "#56B4E9"}
_RPC_LOOKS = {"rpc-tomcat": "#b2182b", "rpc-tomcat-vt": "#ef8a62", "rpc-webflux": "#7b3294", "rpc-netty": "#2166ac",
              "rpc-netty-http-binary": "#67a9cf", "rpc-netty-frame-json": "#1a9850",
              "rpc-netty-frame-binary": "#91cf60", "rpc-consumer": "#636363"}
# The database servers (book/synthesis/database): each C one a pentagon in the colour of the model it extends
# (c-db-epoll that of c-epoll), the Java ones squares in the colours of the RPC providers of the same framework
# (Tomcat's reds, WebFlux purple), Vert.x green, the pinning study's variants of java-db-tomcat-vt browns and grey.
_DB_TWINS = {"c-db-threadpool": "c-threadpool", "c-db-epoll": "c-epoll"}
_DB_LOOKS = {"java-db-tomcat": "#b2182b", "java-db-tomcat-vt": "#ef8a62", "java-db-webflux": "#7b3294",
             "java-db-vertx": "#1a9850", "java-db-tomcat-vt-21": "#8c510a", "java-db-tomcat-vt-21-pg425": "#d8b365",
             "java-db-tomcat-vt-pg425": "#636363"}


@functools.cache
def _styles() -> dict[str, tuple[str, str]]:
    """Every server's (colour, marker), assigned once in manifest order."""
    from iobench.servers import manifest

    styles = dict(_BASELINES)
    hues = iter(_PALETTE)
    for sid in manifest.ids("C"):
        styles[sid] = (next(hues), _MARKERS["C"])
    for sid in manifest.ids("Java") + tuple(s[0] for s in manifest.JAVA_SEED_SERVERS):
        twin = _SAME_MODEL.get(sid)
        styles[sid] = (styles[twin][0] if twin else next(hues), _MARKERS["Java"])
    for sid in manifest.ECHO_SERVERS:
        styles[sid] = (_ECHO_LOOKS.get(sid) or next(hues), "D")
    for sid, hue in zip(CLIENTS, _CLIENT_HUES):
        styles[sid] = (hue, "^")
    for sid, hue in _RPC_LOOKS.items():
        styles[sid] = (hue, "h")
    for sid, twin in _DB_TWINS.items():
        styles[sid] = (styles[twin][0], "p")
    for sid, hue in _DB_LOOKS.items():
        styles[sid] = (hue, _MARKERS["Java"])
    for sid, hue in zip(manifest.ids("C", role="step"), _STEP_HUES):
        styles[sid] = (hue, _MARKERS["C"])
    styles["iom-openloop"] = ("black", "X")   # clients' REFERENCE: the C generator the clients are measured beside
    return styles


def style(server: str) -> dict:
    """The colour and marker `server` has in every figure: plot(..., **style(server))."""
    color, marker = _styles().get(server, ("grey", "x"))
    return {"color": color, "marker": marker}


# Where a figure has more servers than one axes can show apart, it draws one panel per family,
# each with nginx as the common reference.
FAMILIES = ("a process or thread per connection", "event loops", "coroutines, virtual threads, frameworks")
FACET_ABOVE = 6   # servers in one axes beyond which a figure is faceted (more cannot be told apart)


def family(server: str) -> str:
    """Which panel of a faceted figure a server belongs to, from its model in the manifest."""
    from iobench.servers import manifest

    entry = manifest.SERVERS.get(server)
    model = entry.model.lower() if entry else ""
    if any(w in model for w in ("coroutine", "virtual thread", "netty", "mina")):
        return FAMILIES[2]
    if any(w in model for w in ("reactor", "proactor", "event loop", "selector")):
        return FAMILIES[1]
    return FAMILIES[0]


def describe(fig, text: str):
    """Give a figure its caption text (a figure drawn by a page, not by this module, too)."""
    fig.iobench_caption = text
    return fig


def caption(fig) -> str:
    """A figure's caption text, as the page glues it under the figure: which run it shows and
    what its markings mean. A figure nobody described has none: an error, not an empty caption."""
    text = getattr(fig, "iobench_caption", None)
    if not text:
        raise ValueError("this figure has no caption text: draw it with iobench.plots, or describe(fig, text)")
    return text
