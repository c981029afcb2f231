"""Sphinx extension with this book's small fixes to the generated site.

1. The download button of every notebook page offers its executed ``.ipynb``.
   sphinx-book-theme copies the executed notebook beside the page's source only when
   a launch service (Binder, JupyterHub, ...) is configured, and this static build has
   none; so this extension does the copy and tells the theme, just before the theme
   builds its header buttons (priority 501). The file lands in ``_sources/<page>.ipynb``;
   ``html_sourcelink_suffix`` is empty, so it keeps its name (no ``.ipynb.txt``).
2. sphinx-thebe 0.3.1 registers its inline configuration script twice under Sphinx 7.4,
   and the second copy throws "Identifier 'THEBE_JS_URL' has already been declared" in
   every page. Identical scripts are kept once, after the themes have added theirs.
3. Stream outputs merged as the kernel wrote them. myst-nb 1.4 merges a cell's stdout pieces
   (``nb_merge_streams``) by stripping each piece and ending it with a newline, which is right for
   Python's line-sized writes but not for JJava's, which sends every ``printf`` argument as a piece of
   its own: a thread listing printed one fragment per line. It also merged into the executed
   notebook's first output in place, so the download showed the listing twice. coalesce_streams
   below joins the pieces as they are, in copies.
4. The book's stylesheet, ``book_static/book.css`` beside this file, on every page (tables that fit
   the text column).
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from shutil import copy2

_CARRIAGE_RETURN = re.compile(r".*\r(?=[^\n])")  # a line a progress bar rewrote: only its last state shows
_BACKSPACE = re.compile(r"[^\n]\x08")  # a character, then a backspace that erased it


def add_ipynb_source(app, pagename, templatename, context, doctree):
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return  # a plain Markdown page: no notebook to download
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.exists():
        raise FileNotFoundError(f"{pagename}: no executed notebook at {executed}")
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        # An inline script's filename is None or '' depending on who added it.
        key = (getattr(script, "filename", script) or "", tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept  # in place: themes add per-page scripts to this same list later


def coalesce_streams(outputs: list) -> list:
    """A cell's outputs with each stream's pieces joined into its first piece's place, text as written
    (carriage returns and backspaces applied); the outputs given are left as they are."""
    merged, streams = [], {}
    for output in outputs:
        if output["output_type"] == "stream":
            if output["name"] in streams:
                streams[output["name"]]["text"] += output["text"]
                continue
            output = copy.deepcopy(output)
            streams[output["name"]] = output
        merged.append(output)
    for output in streams.values():
        text = output["text"]
        while (shorter := _BACKSPACE.sub("", text)) != text:
            text = shorter
        output["text"] = _CARRIAGE_RETURN.sub("", text)
    return merged


def add_book_static(app):
    app.config.html_static_path.append(str(Path(__file__).parent / "book_static"))


def setup(app):
    from myst_nb.core import render
    render.coalesce_streams = coalesce_streams
    app.connect("builder-inited", add_book_static)
    app.add_css_file("book.css")
    app.connect("html-page-context", add_ipynb_source, priority=500)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
