#!/usr/bin/env python3
"""Execute one page of the book on its own, as the book's build executes it, and print what it glued.

    code/tools/run_page.py book/java/rpc.md                 print {name: value} of the page's glued values
    code/tools/run_page.py book/java/rpc.md --check         exit 1, naming each value that differs from
                                                            book/glue-values.json (the replay build's snapshot)
    code/tools/run_page.py book/java/rpc.md --out X.ipynb   also keep the executed notebook

For work on one page's analysis: the whole book need not be built (nor its _build/ touched, so two pages can be
run at once) to see that moving a page's computation into a module left every number of its prose where it was.
The page runs in its own folder with the project's kernel, as myst-nb runs it; a failing cell (a broken claim)
fails the run with the cell's traceback. Values are compared as glue_values.py compares them: their text/plain
(or Markdown) in full, a live value only for being glued.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # glue_values, beside this script

from glue_values import LIVE, LIVE_VALUE, changes

ROOT = Path(__file__).resolve().parents[2]

PREFIX = "application/papermill.record/"


def page_name(page: Path) -> str:
    """book/java/rpc.md -> book/java/rpc (the key of the page in the glue snapshot)."""
    return Path(page).resolve().relative_to(ROOT).with_suffix("").as_posix()


def glued_outputs(nb) -> dict[str, str]:
    """name -> text of every value the executed notebook glued (myst-nb's glue(): a display_data whose metadata
    names it under 'scrapbook' and whose MIME types carry the record prefix)."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            bundle = {k.removeprefix(PREFIX): v for k, v in out.get("data", {}).items()}
            text = bundle.get("text/markdown", bundle.get("text/plain"))
            if text is None:
                text = "<" + ", ".join(sorted(k.rsplit("/", 1)[-1] for k in bundle)) + ">"
            values[name] = LIVE_VALUE if name.startswith(LIVE) else "".join(text) if isinstance(text, list) else text
    return values


def execute(page: Path, timeout: int = 900):
    import jupytext
    from nbclient import NotebookClient
    nb = jupytext.read(page)
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    NotebookClient(nb, timeout=timeout, kernel_name=kernel,
                   resources={"metadata": {"path": str(Path(page).resolve().parent)}}).execute()
    return nb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", type=Path, help="a page's MyST Markdown source, e.g. book/java/rpc.md")
    ap.add_argument("--check", action="store_true", help="compare with the snapshot, book/glue-values.json")
    ap.add_argument("--snapshot", type=Path, default=ROOT / "book" / "glue-values.json")
    ap.add_argument("--out", type=Path, help="write the executed notebook here")
    args = ap.parse_args(argv)
    if not args.page.is_file():
        ap.error(f"no page at {args.page}")
    nb = execute(args.page)
    if args.out:
        import nbformat
        nbformat.write(nb, args.out)
    values = glued_outputs(nb)
    if not args.check:
        json.dump(values, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
        print()
        return 0
    name = page_name(args.page)
    before = json.loads(args.snapshot.read_text()).get(name, {})
    moved = changes({name: before}, {name: values})
    for line in moved:
        print(line)
    print(f"{name}: {len(values)} values glued, {len(moved)} differ from {args.snapshot.name}", file=sys.stderr)
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
