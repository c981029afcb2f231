"""How a figure reaches the page: one book-wide style, and a PNG at twice the pixel density that says how
small its smallest text is.

The text column of the site is 752 CSS px wide at a 1280 px window, about COLUMN_IN inches at the
figures' 100 dpi: a figure no wider than that is shown at its own size, and its text at its own size
(a 9-point tick label is 12.5 px high). A wider figure is shrunk to the column, and its text with it:
the 17-inch hockey stick showed its tick labels 5 px high. So the book's figures are at most COLUMN_IN
wide, with more rows rather than more columns of panels, and the site test measures every figure:
each PNG carries, in a text chunk, the height in its own pixels of the smallest text drawn in it
(MIN_TEXT_KEY); the test scales it by the width the page shows the image at, and fails below
MIN_TEXT_PX CSS px. Beside it the PNG records how many series the busiest axes draws (SERIES_KEY: more than
MAX_SERIES on one axes is a tangle no reader follows) and which legend entries look alike (CLASH_KEY: the same
line style, marker and fill in colours closer than MIN_COLOUR_DELTA, so the legend cannot say which is which).

Pages get this by importing iobench.book.plots (or calling install()): in IPython, every matplotlib
figure a cell shows or glues is rendered by png() instead of the inline backend's own PNG.
"""
from __future__ import annotations

import io

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

COLUMN_IN = 7.5          # the text column (752 CSS px) at 100 dpi, minus a margin
DPI = 100                # a figure's inch is 100 CSS px on the page
DENSITY = 2              # image pixels per CSS px: sharp on high-density screens
MIN_TEXT_PX = 9.0        # the smallest text a reader should have to read, in CSS px (body text is 16)
MIN_TEXT_KEY = "iom:min-text-px"
SERIES_KEY = "iom:series"        # the most labelled series on one axes
CLASH_KEY = "iom:legend-clash"   # legend entries that look alike: "a = b; c = d" ("" when none do)
POWERS_KEY = "iom:power-ticks"   # tick labels written as powers ("2×10¹", "10⁻¹"): plots.plain_log_ticks reads plainly
MAX_SERIES = 6
MIN_COLOUR_DELTA = 20.0          # CIE76 distance in Lab: below it, two colours read as one in a small legend key

STYLE = {
    "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
    "axes.grid": True, "grid.alpha": 0.3, "figure.dpi": DPI,
    # sizes for a figure shown at its own size in the column: 10 pt text is 14 px, 9 pt ticks 12.5 px
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "figure.titlesize": 11,
    "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "legend.title_fontsize": 9,
}
matplotlib.rcParams.update(STYLE)


def min_text_pt(fig: Figure) -> float | None:
    """The size in points of the smallest visible, non-empty text of the figure (None: it has none)."""
    fig.canvas.draw()  # tick labels exist only once the figure is drawn
    sizes = [t.get_fontsize() for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and _shown(t)]
    return min(sizes) if sizes else None


def _shown(t: Text) -> bool:
    """Whether the text is on the figure: a tick label outside its axis' view limits is never drawn."""
    try:
        box = t.get_window_extent()
    except RuntimeError:
        return False
    fw, fh = t.figure.bbox.width, t.figure.bbox.height
    return box.width > 0 and box.x1 > 0 and box.y1 > 0 and box.x0 < fw and box.y0 < fh


def series(fig: Figure) -> int:
    """The most labelled series (lines, bars, scatters, fills with a label a legend would show) on one axes."""
    return max((len(ax.get_legend_handles_labels()[0]) for ax in fig.axes), default=0)


def _lab(rgb) -> tuple[float, float, float]:
    """sRGB (0..1) to CIE Lab (D65)."""
    def lin(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb[:3])
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
    fx, fy, fz = (f(t) for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def colour_delta(a, b) -> float:
    """How far apart two colours look (CIE76: 2 is a just-noticeable difference on a large patch)."""
    from matplotlib.colors import to_rgba
    la, lb = _lab(to_rgba(a)), _lab(to_rgba(b))
    return sum((x - y) ** 2 for x, y in zip(la, lb)) ** 0.5


def _look(handle) -> tuple[tuple, object]:
    """A legend key's look: (what is not colour: line style, marker, fill, hatch), its colour."""
    from matplotlib.collections import Collection
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    if isinstance(handle, Line2D):  # a marker's fill (none, white, its colour) tells entries apart as well
        face = handle.get_markerfacecolor()
        fill = "none" if isinstance(face, str) and face == "none" else tuple(round(c, 2) for c in to_rgba(face))
        if fill == tuple(round(c, 2) for c in to_rgba(handle.get_color())):
            fill = "same"
        return ("line", handle.get_linestyle(), handle.get_marker(), fill), handle.get_color()
    if isinstance(handle, Patch):
        filled = handle.get_fill() and to_rgba(handle.get_facecolor())[3] > 0
        return ("patch", filled, handle.get_hatch(), handle.get_linestyle()), \
            handle.get_facecolor() if filled else handle.get_edgecolor()
    if isinstance(handle, Collection):
        faces, edges = handle.get_facecolor(), handle.get_edgecolor()
        filled = len(faces) and faces[0][3] > 0
        return ("collection", bool(filled), handle.get_hatch()), (faces[0] if filled else edges[0]) \
            if len(faces) or len(edges) else "none"
    return (type(handle).__name__,), "none"


def legend_clashes(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of entries of one legend that a reader cannot tell apart: the same style, marker, fill and
    hatch, in colours less than MIN_COLOUR_DELTA apart."""
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    out = []
    for legend in legends:
        entries = [(t.get_text(), *_look(h)) for t, h in zip(legend.get_texts(), legend.legend_handles) if h]
        for i, (a, style_a, colour_a) in enumerate(entries):
            for b, style_b, colour_b in entries[i + 1:]:
                if style_a == style_b and colour_delta(colour_a, colour_b) < MIN_COLOUR_DELTA:
                    out.append((a, b))
    return out


def power_ticks(fig: Figure, drawn: bool = False) -> list[str]:
    """Tick labels drawn as powers of ten (matplotlib's log-axis default: "$\\mathdefault{2\\times10^{1}}$").
    drawn: the figure was drawn since its last change (its tick labels exist), so it is not drawn again."""
    if not drawn:
        fig.canvas.draw()
    return [t.get_text() for ax in fig.axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())
            if t.get_visible() and "^{" in t.get_text()]


def record(fig: Figure, dpi: float) -> dict[str, str]:
    """What the site test reads from a figure's PNG: its smallest text in image pixels at `dpi` (absent when the
    figure has no text), the most series on one axes, and the legend entries that look alike."""
    smallest = min_text_pt(fig)  # draws the figure, once for every check below
    meta = {MIN_TEXT_KEY: f"{smallest / 72 * dpi:.2f}"} if smallest else {}
    meta[SERIES_KEY] = str(series(fig))
    meta[CLASH_KEY] = "; ".join(f"{a} = {b}" for a, b in legend_clashes(fig))
    meta[POWERS_KEY] = str(len(power_ticks(fig, drawn=True)))
    return meta


def defects(meta: dict, natural_px: float, shown_px: float) -> list[str]:
    """What a reader cannot read in a figure shown `shown_px` CSS px wide from an image `natural_px` pixels wide,
    by the record its PNG carries (`meta`: its text chunks); a figure without one is a defect."""
    if MIN_TEXT_KEY not in meta and SERIES_KEY not in meta:
        return ["it records no text size (not rendered by iobench.book.figures)"]
    out = []
    if MIN_TEXT_KEY in meta and (px := float(meta[MIN_TEXT_KEY]) * shown_px / natural_px) < MIN_TEXT_PX:
        out.append(f"its smallest text shows {px:.1f} px high (at least {MIN_TEXT_PX:g})")
    if int(meta.get(SERIES_KEY, 0)) > MAX_SERIES:
        out.append(f"{meta[SERIES_KEY]} series on one axes (at most {MAX_SERIES})")
    if meta.get(CLASH_KEY):
        out.append(f"legend entries that look alike: {meta[CLASH_KEY]}")
    if int(meta.get(POWERS_KEY, 0)):
        out.append(f"{meta[POWERS_KEY]} tick labels written as powers of ten (plots.plain_log_ticks)")
    return out


def png(fig: Figure) -> tuple[bytes, dict]:
    """The figure as a PNG at DENSITY times its pixels, to show at its own size, with the height of its
    smallest text in the PNG's own pixels, its series count and its legend clashes in text chunks (record()).
    IPython's PNG formatter for figures."""
    dpi = DPI * DENSITY
    meta = record(fig, dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=meta)
    data = buf.getvalue()
    width = int.from_bytes(data[16:20], "big")  # the IHDR chunk; the height follows from it (a fixed height
    return data, {"width": width // DENSITY}    # would stretch an image the column narrows)


def install() -> None:
    """Render every figure a cell of this IPython session shows or glues with png() (no IPython: nothing)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    # The inline backend registers its own PNG formatter when its module is first imported, which matplotlib does
    # lazily, at the first figure: import it now, so that ours, registered after it, is the one that stays.
    try:
        import matplotlib_inline.backend_inline  # noqa: F401 (imported for its side effect, above)
    except ImportError:
        pass
    shell.display_formatter.formatters["image/png"].for_type(Figure, png)
