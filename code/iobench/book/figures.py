"""How a figure reaches the page: one book-wide style, and a PNG at twice the pixel density that says how
small its smallest text is.

The text column of the site is 752 CSS px wide at a 1280 px window, about COLUMN_IN inches at the
figures' 100 dpi: a figure no wider than that is shown at its own size, and its text at its own size
(a 9-point tick label is 12.5 px high). A wider figure is shrunk to the column, and its text with it:
the 17-inch hockey stick showed its tick labels 5 px high. So the book's figures are at most COLUMN_IN
wide, with more rows rather than more columns of panels, and the site test measures every figure:
each PNG carries, in a text chunk, the height in its own pixels of the smallest text drawn in it
(MIN_TEXT_KEY); the test scales it by the width the page shows the image at, and fails below
MIN_TEXT_PX CSS px.

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


def png(fig: Figure) -> tuple[bytes, dict]:
    """The figure as a PNG at DENSITY times its pixels, to show at its own size, with the height of its
    smallest text in the PNG's own pixels in a text chunk. IPython's PNG formatter for figures."""
    smallest = min_text_pt(fig)
    dpi = DPI * DENSITY
    meta = {MIN_TEXT_KEY: f"{smallest / 72 * dpi:.2f}"} if smallest else {}
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
        import matplotlib_inline.backend_inline  # noqa: F401
    except ImportError:
        pass
    shell.display_formatter.formatters["image/png"].for_type(Figure, png)
