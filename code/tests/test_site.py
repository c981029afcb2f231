"""The built site, checked in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

For every page in _toc.yml: it loads with no console error, shows its title, every
executed code cell has an output, no image is broken and no internal link is broken.
Every notebook page offers its executed .ipynb, which is a valid notebook naming an
installed kernel with an output under every shown cell; for each kernel one such download (the page
with the fewest code cells) runs again on it without an error (the build executed every page from
the same source already: running all of them again doubled the site test's time).
Every page is a notebook (jupytext header with a kernelspec), prose pages included.
Every figure has a caption (a <figure> with a <figcaption>); no table shows a DataFrame's index.
The prose reads as an editor would pass it: no markup left as text, no "1.1 to 1.1", no "0.00 against 0.00", no
"1 of 18 were" (prose_check.py).
At 1280 px wide no page scrolls sideways and nothing in the text column sticks out of it (a wide
table or listing must scroll inside its own box).
A screenshot of every page (its first screen, taken before any check, so a failing page
has one too; the whole page for a few) lands in _build/test-screenshots/.

Run through `make site-test SITE=_build/html` (BOOK_SITE names the site folder).
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import threading
import urllib.parse
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, toc_pages

pytestmark = pytest.mark.site

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = ROOT / "_build" / "test-screenshots"
# What a Python object looks like when it is printed instead of its value, and Markdown pasted as text.
REPR = re.compile(r"<bound method [\w.]+|<function \w+|object at 0x[0-9a-f]+|dtype: \w+|Name: \w+, Length: \d+"
                  r"|\[I@[0-9a-f]+|<IPython\.core\.display\.\w+ object>")
MARKERS = re.compile(r"`[^`\s][^`]*`|\*\*\w[^*]*\*\*")
# the whole page for these (at 1280 px): the longest chapters, and the first pages a reader sees
SCREENSHOT_PAGES = {"book/intro", "book/getting-started/setup-java", "book/getting-started/setup-c", "book/java/rpc",
                    "book/clients/http-clients", "book/method/open-loop", "book/synthesis/many-connections",
                    "book/synthesis/side-by-side"}


@pytest.fixture(scope="module")
def site() -> Path:
    path = Path(os.environ.get("BOOK_SITE", ROOT / "_build" / "html"))
    if not (path / "index.html").exists():
        pytest.fail(f"no built site at {path}: run `make book` first")
    return path


# Where the site is served in the test: under a sub-path, as a project's pages are published
# (https://<owner>.github.io/<project>/): a link that only works from the host's root is broken there.
PREFIX = "/io-models-measured"


@pytest.fixture(scope="module")
def server(site):
    class UnderPrefix(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def translate_path(self, path):
            if path != PREFIX and not path.startswith(PREFIX + "/"):
                return str(site / "no such file outside the sub-path")
            return super().translate_path(path[len(PREFIX):] or "/")

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(UnderPrefix, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}{PREFIX}"
    httpd.shutdown()
    httpd.server_close()


def test_the_site_is_served_under_its_sub_path_only(site, server):
    import urllib.error
    import urllib.request

    assert urllib.request.urlopen(f"{server}/index.html").status == 200
    root = server[: -len(PREFIX)]
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(f"{root}/index.html")
    assert got.value.code == 404


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make system)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


VIEWPORT = {"width": 1280, "height": 800}
# What sticks out of the text column at the current width: elements whose box, or whose content spilling out of
# it, passes the column's right edge, unless a box between them and the column scrolls or clips them (the
# first few, named).
OVERFLOW_JS = """() => {
  const col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const edge = col.getBoundingClientRect().right;
  const contained = e => { for (let a = e.parentElement; a && a !== col; a = a.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return true; }
    return false; };
  const right = e => { const r = e.getBoundingClientRect();  // its box, or its content spilling out of it
    return getComputedStyle(e).overflowX === 'visible' ? Math.max(r.right, r.left + e.scrollWidth) : r.right; };
  const out = Array.from(col.querySelectorAll('*'))
    .filter(e => right(e) > edge + 1 && !contained(e))
    .map(e => `${e.tagName.toLowerCase()} "${(e.textContent || '').trim().slice(0, 40)}"`);
  return {page: document.documentElement.scrollWidth - window.innerWidth, out: out.slice(0, 3)};
}"""


# Every image of the page with the width the page shows it at (its width attribute or style, or its own, at most the
# column's). Tables are TABLES_JS's.
READING_JS = """() => {
  const col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const width = col.clientWidth;
  // an image's width as shown (a collapsed one's: what its width attribute or style, or its own, would give)
  const shownWidth = (e, own) => e.getBoundingClientRect().width ||
    Math.min(parseFloat(e.style.width) || parseFloat(e.getAttribute('width')) || own, width);
  const images = [
    ...Array.from(col.querySelectorAll('img')).map(i => ({src: i.getAttribute('src'), natural: i.naturalWidth,
      shown: shownWidth(i, i.naturalWidth)})),
    ...Array.from(col.querySelectorAll('object[data]')).map(o => ({src: o.getAttribute('data'), natural: 0,
      shown: shownWidth(o, 0)}))];
  return {width, images};
}"""


def svg_text_px(svg: str, shown: float) -> float | None:
    """The smallest text of an SVG drawing (a Graphviz diagram) in CSS px when it is shown `shown` px wide:
    its font sizes are in the units of its viewBox (or of its width), scaled to the width shown."""
    import re as _re
    sizes = [float(x) for x in _re.findall(r'font-size="([\d.]+)', svg)]
    box = _re.search(r'viewBox="[\d.-]+ [\d.-]+ ([\d.]+) [\d.]+"', svg)
    width = float(box.group(1)) if box else float(_re.search(r'<svg[^>]*\swidth="([\d.]+)', svg).group(1))
    return min(sizes) * shown / width if sizes else None


# Every table of the page, dropdowns opened: one wider than the text column must scroll sideways in a box of its
# own within the column and keep its first (key) column in view while it scrolls (sticky). Those that do not, named.
TABLES_JS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const width = col.clientWidth;
  const scrolls = t => { for (let a = t.parentElement; a && a !== col; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX))
        return a.getBoundingClientRect().width <= width + 1; }
    return false; };
  const keyed = t => { const c = t.querySelector('tr > :first-child');
    return !!c && getComputedStyle(c).position === 'sticky'; };
  return Array.from(col.querySelectorAll('table'))
    .filter(t => t.scrollWidth > width + 1 && !(scrolls(t) && keyed(t)))
    .map(t => `${t.scrollWidth} px${scrolls(t) ? ', its key column scrolls away' : ', no scroll box'}: ` +
              `"${(t.textContent || '').trim().slice(0, 40)}"`);
}"""


def small_text(site: Path, page_url: str, images: list[dict]) -> list[str]:
    """Every image of the page a reader cannot read at the width it is shown (figures.defects: text below
    figures.MIN_TEXT_PX CSS px, more than figures.MAX_SERIES series on one axes, legend entries that look
    alike), and every image that does not say how small its text is: a PNG not drawn by iobench.book.figures,
    an SVG drawing without text sizes. Images outside the site (none should be) are not read."""
    from PIL import Image

    from iobench.book import figures

    out = []
    for img in images:
        target = internal_target(site, page_url, img["src"] or "")
        if target is None:
            continue
        path = target[0]
        if not path.exists():
            out.append(f"{path.name}: missing")
        elif path.suffix.lower() == ".svg":
            px = svg_text_px(path.read_text(), img["shown"])
            if px is None:
                out.append(f"{path.name}: an SVG drawing without text sizes")
            elif px < figures.MIN_TEXT_PX:
                out.append(f"{path.name}: its smallest text shows {px:.1f} px high (at least {figures.MIN_TEXT_PX:g})")
        else:
            with Image.open(path) as image:
                meta, natural = dict(getattr(image, "text", {})), image.width
            out += [f"{path.name}: {d}" for d in figures.defects(meta, natural, img["shown"] or natural)]
    return out


def overflow(tab) -> list[str]:
    """What makes the page wider than its window, or sticks out of its text column (empty: nothing)."""
    got = tab.evaluate(OVERFLOW_JS)
    return ([f"the page is {got['page']} px wider than its window"] if got["page"] > 1 else []) + got["out"]


def is_notebook(page: str) -> bool:
    src = ROOT / f"{page}.md"
    return src.exists() and src.read_text().startswith("---\njupytext:") and "\nkernelspec:" in src.read_text()


def has_code_cells(page: str) -> bool:
    return "```{code-cell}" in (ROOT / f"{page}.md").read_text()


@functools.cache
def rerun_pages() -> frozenset[str]:
    """For each kernel the book uses, the page with code whose download the test runs again: the one
    with the fewest code cells (ties: the first in the TOC)."""
    best: dict[str, tuple[int, str]] = {}
    for page in toc_pages():
        if not is_notebook(page) or not has_code_cells(page):
            continue
        text = (ROOT / f"{page}.md").read_text()
        kernel = re.search(r"\n\s+name: (\S+)", text.split("\n---", 1)[0]).group(1)
        cells = text.count("```{code-cell}")
        if kernel not in best or cells < best[kernel][0]:
            best[kernel] = (cells, page)
    return frozenset(page for _, page in best.values())


def test_the_overflow_check_sees_what_sticks_out_and_not_what_scrolls(browser):
    tab = browser.new_page(viewport=VIEWPORT)
    column = '<article class="bd-article" style="width: 600px">{}</article>'
    tab.set_content(column.format('<pre>' + 'x' * 400 + '</pre>'))
    assert overflow(tab) and "pre" in overflow(tab)[-1]
    tab.set_content(column.format('<div style="overflow-x: auto"><pre>' + 'x' * 400 + '</pre></div>'))
    assert overflow(tab) == []
    tab.close()


def test_the_table_check_wants_a_wide_table_to_scroll_with_its_key_column_in_view(browser):
    tab = browser.new_page(viewport=VIEWPORT)
    css = "<style>.box {overflow-x: auto} .key tr > :first-child {position: sticky; left: 0}</style>"
    wide = '<table class="{}"><tr>' + '<td>column</td>' * 80 + '</tr></table>'
    page = '<article class="bd-article" style="width: 600px">{}</article>'
    for body, bad in ((wide.format("key"), "no scroll box"),                                    # sticks out
                      ('<div class="box">' + wide.format("") + '</div>', "key column scrolls away"),
                      ('<details><summary>all</summary>' + wide.format("key") + '</details>', "no scroll box"),
                      ('<div class="box">' + wide.format("key") + '</div>', None),                # as the book's CSS
                      ('<table><tr><td>narrow</td></tr></table>', None)):
        tab.set_content(css + page.format(body))
        got = tab.evaluate(TABLES_JS)
        assert (bad in got[0] if bad else got == []), (body[:60], got)
    tab.close()


def test_the_text_size_check_reads_the_figure_s_own_account(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iobench.book import figures

    for inches, fontsize in ((figures.COLUMN_IN, 9), (17, 9), (figures.COLUMN_IN, 4)):
        fig, ax = plt.subplots(figsize=(inches, 3))
        ax.plot([0, 1], [0, 1])
        ax.tick_params(labelsize=fontsize)
        data, meta = figures.png(fig)
        plt.close(fig)
        (tmp_path / "f.png").write_bytes(data)
        natural = meta["width"] * figures.DENSITY
        got = small_text(tmp_path, f"http://x{PREFIX}/p.html", [{"src": "f.png", "natural": natural,
                                                                 "shown": min(meta["width"], 752)}])
        # 9 pt at its own size reads 12.5 px; shrunk from 17 inches to the column, 9 pt is under 9 px; 4 pt is
        assert bool(got) == (inches > figures.COLUMN_IN or fontsize < 6), (inches, fontsize, got)


def _checked(tmp_path, fig, name="f.png") -> list[str]:
    """What the site's image check says of `fig`, shown at its own width in the column."""
    import matplotlib.pyplot as plt

    from iobench.book import figures
    data, meta = figures.png(fig)
    plt.close(fig)
    (tmp_path / name).write_bytes(data)
    return small_text(tmp_path, f"http://x{PREFIX}/p.html", [{"src": name, "natural": meta["width"] * 2,
                                                              "shown": min(meta["width"], 752)}])


def test_the_image_check_fails_on_seven_series_on_one_axes(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iobench.book import figures
    for n in (figures.MAX_SERIES, figures.MAX_SERIES + 1):
        fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 3))
        for i in range(n):
            ax.plot([0, 1, 2], [i, i + 1, i], label=f"s{i}")
        ax.legend()
        got = _checked(tmp_path, fig)
        assert bool(got) == (n > figures.MAX_SERIES) and all("series" in g for g in got), (n, got)


def test_the_image_check_fails_on_legend_entries_that_look_alike(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iobench.book import figures
    cases = {  # (first entry's style, second's) -> whether a reader can tell them apart
        (("k", "--"), ("k", "--")): False,                # both dashed black
        (("#d62728", "-"), ("#c0392b", "-")): False,      # two near-identical reds
        (("#d62728", "-"), ("#1f77b4", "-")): True,       # red and blue
        (("k", "--"), ("k", ":")): True,                  # black, dashed and dotted
    }
    for ((c1, ls1), (c2, ls2)), apart in cases.items():
        fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 3))
        ax.plot([0, 1], [0, 1], color=c1, linestyle=ls1, label="one")
        ax.plot([0, 1], [1, 0], color=c2, linestyle=ls2, label="two")
        ax.legend()
        got = _checked(tmp_path, fig)
        assert (not got) == apart and all("look alike: one = two" in g for g in got), (c1, ls1, c2, ls2, got)
    fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 3))  # markers: filled against hollow are told apart
    ax.plot([0], [0], "o", color="black", label="filled")
    ax.plot([1], [1], "o", color="black", mfc="white", label="hollow")
    ax.legend()
    assert _checked(tmp_path, fig) == []
    fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 3))  # bars: filled against hollow are told apart
    ax.bar([0], [1], color="tab:blue", label="filled")
    ax.bar([1], [1], facecolor="none", edgecolor="tab:blue", label="hollow")
    ax.legend()
    assert _checked(tmp_path, fig) == []


def test_the_image_check_fails_on_an_image_without_a_size_record(tmp_path):
    from PIL import Image
    Image.new("RGB", (200, 100), "white").save(tmp_path / "shot.png")  # a screenshot: no record of its text
    got = small_text(tmp_path, f"http://x{PREFIX}/p.html", [{"src": "shot.png", "natural": 200, "shown": 200}])
    assert got and "records no text size" in got[0]
    svg = ('<svg width="400pt" height="100pt" viewBox="0.00 0.00 400.00 100.00"><text font-size="14.00">a</text>'
           '<text font-size="{}">b</text></svg>')
    for small, shown, bad in ((14, 400, False), (14, 200, True), (8, 400, True)):
        (tmp_path / "d.svg").write_text(svg.format(small))
        got = small_text(tmp_path, f"http://x{PREFIX}/p.html", [{"src": "d.svg", "natural": 0, "shown": shown}])
        assert bool(got) == bad, (small, shown, got)
    (tmp_path / "d.svg").write_text('<svg width="10" viewBox="0 0 10 10"><rect/></svg>')
    assert "without text sizes" in small_text(tmp_path, f"http://x{PREFIX}/p.html",
                                              [{"src": "d.svg", "natural": 0, "shown": 10}])[0]


@pytest.mark.parametrize("page", toc_pages())
def test_every_page_is_a_notebook(page):
    assert is_notebook(page), f"{page}.md has no jupytext header with a kernelspec"


@pytest.mark.parametrize("page", toc_pages())
def test_the_prose_reads_as_an_editor_would_pass_it(page, site):
    """No MyST markup left as text, no range whose ends read the same, no comparison of two zeros, no count whose
    verb disagrees with it (code/tools/prose_check.py; its own tests: test_prose_check.py)."""
    import sys
    sys.path.insert(0, str(ROOT / "code" / "tools"))
    from prose_check import defects
    found = defects((site / f"{page}.html").read_text())
    assert not found, "\n".join(f"{kind}: ...{around}..." for kind, around in found)


def internal_target(site: Path, page_url: str, href: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points to, or None for an external link."""
    parsed = urllib.parse.urlparse(href)
    if parsed.scheme or href.startswith("//") or href.startswith("mailto:"):
        return None
    base = urllib.parse.urljoin(page_url, href)
    path = urllib.parse.unquote(urllib.parse.urlparse(base).path)
    assert path.startswith(PREFIX + "/"), f"{href} leaves the site's sub-path {PREFIX}"
    path = path[len(PREFIX) + 1:]
    target = site / path
    if target.is_dir():
        target = target / "index.html"
    return target, parsed.fragment


@pytest.mark.parametrize("page", toc_pages())
def test_page(page, site, server, browser):
    errors: list[str] = []
    tab = browser.new_page(viewport=VIEWPORT)
    tab.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    tab.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    tab.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    url = f"{server}/{page}.html"
    response = tab.goto(url, wait_until="networkidle")
    assert response is not None and response.status == 200, f"{url} answered {response and response.status}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / (page.replace("/", "_") + ".png")), full_page=page in SCREENSHOT_PAGES)

    # The title: one h1, also in the window title.
    h1 = tab.locator("main h1").first.inner_text().strip().rstrip("#").strip()
    assert h1, f"{page}: no title"
    assert h1 in tab.title(), f"{page}: window title {tab.title()!r} lacks {h1!r}"

    # Nothing but the book in its prose and captions: no Python object's repr (a caption or glued value that
    # printed an object instead of its value) and no Markdown marker shown as typed (Markdown glued as text).
    said = tab.evaluate("""(() => {
        const a = (document.querySelector('article') || document.body).cloneNode(true);
        a.querySelectorAll('.cell_input, pre, code, script, style, .cell_output').forEach(e => e.remove());
        const captions = Array.from(document.querySelectorAll('figcaption')).map(e => e.textContent);
        return [a.textContent, ...captions].join('\\n'); })()""")
    assert not (seen := REPR.findall(said)), f"{page}: a Python repr in the text: {seen[:3]}"
    assert not (seen := MARKERS.findall(said)), f"{page}: Markdown markers shown as typed: {seen[:3]}"

    # Every executed code cell shows an output.
    cells = tab.locator("div.cell")
    if has_code_cells(page):
        assert cells.count() > 0, f"{page}: code cells in the source, none executed on the page"
    for i in range(cells.count()):
        cell = cells.nth(i)
        shown_input = cell.locator(".cell_input")  # none where the page hides a setup cell's code (remove-input)
        source = shown_input.first.text_content()[:80] if shown_input.count() else f"cell {i} (input hidden)"
        assert cell.locator(".cell_output").count() > 0, f"{page}: no output under cell {i}: {source!r}"
        output = cell.locator(".cell_output")
        shown = output.text_content().strip() or output.locator("img, svg").count() > 0
        assert shown, f"{page}: empty output under {source!r}"

    # No warning from a kernel or a library among the outputs (a deprecated magic, a layout that failed).
    warned = tab.evaluate("""Array.from(document.querySelectorAll('.cell_output .stderr'))
        .map(e => e.textContent.trim()).filter(t => /warn|deprecat/i.test(t)).map(t => t.slice(0, 100))""")
    assert not warned, f"{page}: warnings in the outputs: {warned}"

    # Nothing wider than the window or the text column at 1280 px.
    assert overflow(tab) == [], f"{page}: sticks out at {VIEWPORT['width']} px: {overflow(tab)}"
    # No image a reader cannot read at the width the page shows it (text, series, legend; a record of its size).
    reading = tab.evaluate(READING_JS)
    assert not (small := small_text(site, url, reading["images"])), f"{page}: figures a reader cannot read: {small}"

    # Every figure (a plot, a drawing) is a <figure> with a caption; every table names its columns
    # and shows no row numbers (report.table).
    uncaptioned = tab.evaluate("""Array.from(document.querySelectorAll('article img, article object.graphviz'))
        .filter(e => !(e.closest('figure')?.querySelector('figcaption')?.textContent.trim()))
        .map(e => e.getAttribute('src') || e.getAttribute('data'))""")
    assert not uncaptioned, f"{page}: figures without a caption: {uncaptioned}"
    indexed = tab.locator("article table tbody tr th").count()
    assert indexed == 0, f"{page}: {indexed} table rows show the DataFrame index (use report.table)"

    # Every table, in the flow, in a deep dive or in a dropdown, fits the column or scrolls in its own box with its
    # key column kept in view (this opens the page's dropdowns: the checks above saw them as a reader first does).
    assert not (wide := tab.evaluate(TABLES_JS)), f"{page}: tables a reader cannot read across: {wide}"

    # Every figure as the reader sees it at 1280 px, kept for a person to look at (_build/test-screenshots/figures/).
    figures_seen = tab.locator("article figure")
    for i in range(figures_seen.count()):
        shot = SHOTS / "figures" / f"{page.replace('/', '_')}-{i + 1}.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        figures_seen.nth(i).screenshot(path=str(shot))

    # No broken image.
    broken = tab.evaluate("Array.from(document.images)"
                          ".filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
    assert not broken, f"{page}: broken images {broken}"

    # No broken internal link (file and #fragment).
    hrefs = tab.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))")
    for href in hrefs:
        target = internal_target(site, url, href)
        if target is None:
            continue
        path, fragment = target
        assert path.exists(), f"{page}: broken link {href} -> {path}"
        if fragment and path.suffix == ".html":
            html = path.read_text(errors="replace")
            assert re.search(rf'id="{re.escape(fragment)}"', html), f"{page}: no #{fragment} in {path.name}"

    tab.close()
    assert not errors, f"{page}: " + "; ".join(errors)


@pytest.mark.parametrize("page", toc_pages())
def test_download_gives_a_runnable_notebook(page, site, server, browser, tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    tab = browser.new_page()
    tab.goto(f"{server}/{page}.html", wait_until="networkidle")
    links = tab.evaluate("Array.from(document.querySelectorAll('a[href$=\".ipynb\"]')).map(a => a.href)")
    tab.close()
    assert links, f"{page}: the download menu offers no .ipynb"
    with browser.new_context(accept_downloads=True) as ctx:
        dl_tab = ctx.new_page()
        body = dl_tab.request.get(links[0]).body()
    nb = nbformat.reads(body.decode(), as_version=4)
    nbformat.validate(nb)
    kernel = nb.metadata["kernelspec"]["name"]
    assert kernel in KernelSpecManager().find_kernel_specs(), f"{page}: kernel {kernel} not installed"
    # A cell removed from the page (glue only) may have no output; every other one must.
    # Only the book: no MyST comment line (a note for developers) in its text.
    comments = [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
                if line.startswith("%")]
    assert not comments, f"{page}: MyST comments in the download: {comments[:3]}"
    code = [c for c in nb.cells if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])]
    assert all(c.outputs for c in code), f"{page}: the download lacks executed outputs"
    if has_code_cells(page):
        assert code, f"{page}: the download has none of the page's code cells"
    else:
        assert any(c.cell_type == "markdown" for c in nb.cells), f"{page}: the download has no text"

    # It opens and runs on the project's kernel, from the page's own folder (one page per kernel).
    if page not in rerun_pages():
        return
    fresh = nbformat.from_dict(nb)
    for c in fresh.cells:
        if c.cell_type == "code":
            c.outputs = []
    NotebookClient(fresh, timeout=300, kernel_name=kernel,
                   resources={"metadata": {"path": str((ROOT / page).parent)}}).execute()
    assert all(c.outputs for c in fresh.cells
               if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", []))


def test_the_image_check_fails_on_tick_labels_written_as_powers(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iobench.book import figures, plots
    for plain in (False, True):
        fig, ax = plt.subplots(figsize=(figures.COLUMN_IN, 3))
        ax.plot([1, 100], [1, 60])
        ax.set_yscale("log")
        if plain:
            plots.plain_log_ticks(ax.yaxis)
        got = _checked(tmp_path, fig)
        assert bool(got) != plain and all("powers of ten" in g for g in got), (plain, got)
