"""The student edition: the book with every solution taken out, for an instructor to hand to a class.

    python code/tools/student_book.py BUILT OUT

BUILT is the output folder of a finished build of the book (``code/tools/build-book``'s OUTPUT_DIR,
holding ``_build/jupyter_execute``); OUT gets a copy of the book's sources in ``OUT/src`` and the
student site in ``OUT/_build/html``. Nothing runs again: each page is the notebook the build
executed, with every solution (from ``{solution-start}`` to the end of ``{solution-end}``, the
code cells between included) removed, so that neither the page nor its downloadable ``.ipynb``
holds a solution, and every number stays the one the full book shows. Exercises stay as they are.
The site is built as strictly as the book (a warning fails it): a value glued in a solution and
quoted outside it would show here as a missing glue key.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

START = re.compile(r"^\s*(`{3,}|:{3,})\{solution-start\}")
END = re.compile(r"^\s*(`{3,}|:{3,})\{solution-end\}")
SINGLE = re.compile(r"^\s*(`{3,}|:{3,})\{solution\}")
TITLE_SUFFIX = " (student edition)"


def strip_solutions(cells: list[dict], where: str = "") -> tuple[list[dict], int]:
    """The cells of a notebook without its solutions, and how many solutions were removed.

    A solution opens at a ``{solution-start}`` line and closes with the fence that ends its
    ``{solution-end}`` directive; both may sit inside a Markdown cell with other text, which
    is kept. A one-piece ``{solution}`` directive or an unclosed solution is an error, never
    passed through."""
    kept, removed, state = [], 0, "out"          # out | in | end (inside {solution-end}'s fence)
    for cell in cells:
        if cell["cell_type"] != "markdown":
            if state == "out":
                kept.append(cell)
            continue
        lines, out_lines = "".join(cell["source"]).splitlines(keepends=True), []
        for line in lines:
            if state == "out":
                if SINGLE.match(line):
                    raise ValueError(f"{where}: a {{solution}} directive; write it as solution-start/end")
                if START.match(line):
                    state, removed = "in", removed + 1
                else:
                    out_lines.append(line)
            elif state == "in":
                if START.match(line):
                    raise ValueError(f"{where}: a solution opens inside another")
                if END.match(line):
                    state = "end"
            elif line.strip() and set(line.strip()) <= set("`:"):
                state = "out"
        text = "".join(out_lines)
        if text.strip():
            kept.append({**cell, "source": text})
    if state != "out":
        raise ValueError(f"{where}: a solution is never closed")
    return kept, removed


def glued_cell(cells: list[dict], glue_file: Path) -> list[dict]:
    """The values the full build glued into the page's prose, as one hidden cell of records.

    myst-nb takes each glued value out of the executed notebook it writes and keeps it in
    ``<page>.glue.json`` instead; a page read without running again needs them back in its cells.
    Values shown where they were glued (``display=True``) are still in their cell and are left there."""
    if not glue_file.exists():
        return []
    present = {o.get("metadata", {}).get("scrapbook", {}).get("name")
               for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])}
    outputs = []
    for key, output in json.loads(glue_file.read_text()).items():
        if key in present:
            continue
        prefix = output.get("metadata", {}).get("scrapbook", {}).get("mime_prefix", "")
        outputs.append({**output, "data": {prefix + mime: value for mime, value in output["data"].items()}})
    if not outputs:
        return []
    return [{"cell_type": "code", "execution_count": None, "id": "student-edition-glue",
             "metadata": {"tags": ["remove-cell"]}, "outputs": outputs,
             "source": "# The values this page glues into its prose, from the full book's run (student edition)."}]


def pages(root: Path) -> list[str]:
    """Every page of the table of contents (docnames, the root page first)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found = [toc["root"]]
    for part in toc.get("parts", []):
        found += [c["file"] for c in part.get("chapters", [])]
    return found


def make_sources(root: Path, built: Path, src: Path) -> dict[str, int]:
    """Write the student edition's sources into `src`; return the solutions removed per page."""
    executed = built / "_build" / "jupyter_execute"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(root / "book", src / "book", ignore=shutil.ignore_patterns("*.md", "*.ipynb", "glue-values.json"))
    for name in ("_toc.yml", "code", "data"):  # data/: the files a page offers with {download}
        target = src / name
        if (root / name).is_dir():
            target.symlink_to((root / name).resolve(), target_is_directory=True)
        else:
            shutil.copy2(root / name, target)
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["title"] = config.get("title", "") + TITLE_SUFFIX
    config.setdefault("execute", {})["execute_notebooks"] = "off"   # every output is the full book's
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    removed = {}
    for page in pages(root):
        notebook = executed / f"{page}.ipynb"
        if not notebook.exists():
            raise SystemExit(f"error: {page} has no executed notebook at {notebook}: build the book first "
                             f"(code/tools/build-book . {built})")
        nb = json.loads(notebook.read_text())
        nb["cells"], removed[page] = strip_solutions(nb["cells"], page)
        nb["cells"] += glued_cell(nb["cells"], executed / f"{page}.glue.json")
        nb["metadata"].pop("source_map", None)     # its cells' source lines: no longer these cells
        target = src / f"{page}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return removed


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[2]
    built, out = Path(argv[1]).resolve(), Path(argv[2]).resolve()
    removed = make_sources(root, built, out / "src")
    print(f"student edition: {sum(removed.values())} solutions removed from "
          f"{sum(1 for n in removed.values() if n)} of {len(removed)} pages")
    html = out / "_build" / "html"
    if html.exists():
        shutil.rmtree(html)
    return subprocess.call(["jupyter-book", "build", str(out / "src"), "--path-output", str(out),
                            "-n", "-W", "--keep-going", "--all"])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
