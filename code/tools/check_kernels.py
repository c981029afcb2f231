"""Fail when a page of the book names a kernel this environment does not have.

Jupyter Book would otherwise log the missing kernel and carry on with an unexecuted page.
Usage: python code/tools/check_kernels.py BOOK_ROOT
"""
from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import yaml
from jupyter_client.kernelspec import KernelSpecManager


def toc_files(root: Path) -> list[Path]:
    """Every page the TOC names, as a path to its source file."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                names.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    pages = []
    for name in names:
        for suffix in (".md", ".ipynb"):
            path = root / (name + suffix)
            if path.exists():
                pages.append(path)
                break
        else:
            raise SystemExit(f"error: _toc.yml names {name}, which has no .md or .ipynb file")
    return pages


def page_kernel(path: Path) -> str | None:
    """The kernel a notebook page asks for, or None for a plain Markdown page."""
    if path.suffix == ".md":
        head = path.read_text().split("\n", 1)[0]
        if head.strip() != "---":
            return None
    nb = jupytext.read(path)
    return nb.metadata.get("kernelspec", {}).get("name")


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else ".").resolve()
    have = KernelSpecManager().find_kernel_specs()
    bad = []
    for page in toc_files(root):
        kernel = page_kernel(page)
        if kernel is not None and kernel not in have:
            bad.append(f"{page.relative_to(root)} needs kernel '{kernel}'")
    if bad:
        print("error: pages whose kernel is not installed (run `make kernels`):", file=sys.stderr)
        for line in bad:
            print("  " + line, file=sys.stderr)
        print(f"installed kernels: {', '.join(sorted(have)) or 'none'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
