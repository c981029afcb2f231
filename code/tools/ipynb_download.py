"""Sphinx extension: the download button of every notebook page offers its executed .ipynb.

sphinx-book-theme copies the executed notebook next to the page's source only when a
launch service (Binder, JupyterHub, ...) is configured. This book has none in its
static build, so this extension does the copy itself and tells the theme about it,
just before the theme builds its header buttons (priority 501).

The file lands in ``_sources/<page>.ipynb`` (``html_sourcelink_suffix`` is empty, so
sources keep their own names: no ``.ipynb.txt``).
"""
from __future__ import annotations

from pathlib import Path
from shutil import copy2


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


def setup(app):
    app.connect("html-page-context", add_ipynb_source, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
