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
5. A rebuild executes only the pages whose inputs changed (page_inputs.py beside this file): each page's inputs
   are noted while it executes and kept with their digests in the environment; a page whose inputs all kept
   their content is not read again, even when Sphinx sees a newer file time, and one whose traced inputs
   changed is, though Sphinx does not know them.
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


# ---- 5. per-page inputs ---------------------------------------------------------------------------------

def _digests(app):
    import page_inputs
    env = app.env
    if not hasattr(env, "iobench_digest_cache"):
        env.iobench_digest_cache = {}
    if not hasattr(env, "iobench_inputs"):
        env.iobench_inputs = {}
    return page_inputs.Digests(_root(app), env.iobench_digest_cache)


def _root(app) -> Path:
    return Path(app.srcdir).resolve()


def _notes_file(app, docname: str) -> Path:
    return Path(app.outdir).parent / ".page-inputs" / (docname.replace("/", "__") + ".notes")


def inputs_outdated(app, env, added, changed, removed):
    """The pages whose noted inputs changed content (Sphinx knows only their sources and includes)."""
    import page_inputs
    d = _digests(app)
    app.iobench_added = set(added)
    outdated = []
    for docname in sorted(env.found_docs - set(added) - set(removed)):
        why = page_inputs.changed(d, env.iobench_inputs.get(docname))
        if why:
            outdated.append(docname)
            app.iobench_why = getattr(app, "iobench_why", {})
            app.iobench_why[docname] = why
    return outdated


def drop_unchanged(app, env, docnames):
    """Sphinx re-reads a page whose source or include has a newer file time: when every input of the page kept its
    content (a checkout, a restore), it is not read, so not executed, again. Never after a change of configuration."""
    import page_inputs
    from sphinx.environment import CONFIG_OK
    if env.config_status != CONFIG_OK:
        return
    d = _digests(app)
    added = getattr(app, "iobench_added", set())
    for docname in list(docnames):
        if docname not in added and not page_inputs.changed(d, env.iobench_inputs.get(docname)):
            docnames.remove(docname)
    why = getattr(app, "iobench_why", {})
    for docname in docnames:
        if docname in why:
            reasons = why[docname]
            shown = ", ".join(reasons[:3]) + (f" and {len(reasons) - 3} more" if len(reasons) > 3 else "")
            logger().info(f"{docname}: executed again: {shown}")


def before_page(app, docname, source):
    """Name the page's notes file for every Python process its code starts (inputs/sitecustomize.py)."""
    import os
    notes = _notes_file(app, docname)
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.unlink(missing_ok=True)
    hook = str(Path(__file__).resolve().parent / "inputs")
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != hook]
    os.environ.update(IOBENCH_INPUTS_LOG=str(notes), IOBENCH_INPUTS_ROOT=str(_root(app)),
                      PYTHONPATH=os.pathsep.join([hook, *path]))


def after_page(app, doctree):
    import page_inputs
    docname = app.env.docname
    notes_file = _notes_file(app, docname)
    notes = notes_file.read_text().splitlines() if notes_file.exists() else None
    deps = [Path(app.srcdir) / dep for dep in app.env.dependencies.get(docname, ())]
    app.env.iobench_inputs[docname] = page_inputs.record(_digests(app), Path(app.env.doc2path(docname)), notes, deps)


def inputs_purge(app, env, docname):
    getattr(env, "iobench_inputs", {}).pop(docname, None)


def inputs_merge(app, env, docnames, other):
    _digests(app)
    env.iobench_inputs.update({n: r for n, r in getattr(other, "iobench_inputs", {}).items() if n in docnames})


def logger():
    from sphinx.util import logging
    return logging.getLogger(__name__)


def setup(app):
    import sys
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from myst_nb.core import render
    render.coalesce_streams = coalesce_streams
    app.connect("env-get-outdated", inputs_outdated)
    app.connect("env-before-read-docs", drop_unchanged)
    app.connect("source-read", before_page)
    app.connect("doctree-read", after_page)
    app.connect("env-purge-doc", inputs_purge)
    app.connect("env-merge-info", inputs_merge)
    app.connect("builder-inited", add_book_static)
    app.add_css_file("book.css")
    app.connect("html-page-context", add_ipynb_source, priority=500)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
