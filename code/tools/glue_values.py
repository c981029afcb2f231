#!/usr/bin/env python3
"""Every value the book's pages glue into their prose, from a built book, as JSON.

    code/tools/glue_values.py BUILD_DIR                     print {page: {name: value}}
    code/tools/glue_values.py BUILD_DIR --check SNAPSHOT    exit 1, naming each change

BUILD_DIR is where code/tools/build-book wrote: myst-nb leaves every page's glued values
in _build/jupyter_execute/PAGE.glue.json. A glued value is compared as its text/plain
(the full repr, before the page's format spec rounds it), so nothing moves unseen.
book/glue-values.json is the snapshot of a replay build (`make glue-snapshot`): a change
to code that leaves the data alone must leave every glued value alone (`make glue-check`),
and a re-measured dataset shows, in its commit, exactly which numbers of the prose moved.
A value a page measures live while it runs (a lab demo, not data/) differs in every build: its
name starts with LIVE ("live_"), and only that it is glued is compared, never its value.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


LIVE, LIVE_VALUE = "live_", "<measured live>"


def glued(data: dict) -> dict[str, str]:
    """name -> text/plain of every glued value of one page (myst-nb's PAGE.glue.json, which
    holds each glue() output with its MIME prefix already stripped)."""
    values = {}
    for name, out in data.items():
        bundle = out.get("data", {})
        text = bundle.get("text/markdown", bundle.get("text/plain"))  # Markdown pasted with {glue:md}: its text
        if text is None:  # a figure or other non-text glue: only what kind it is counts
            text = "<" + ", ".join(sorted(k.rsplit("/", 1)[-1] for k in bundle)) + ">"
        values[name] = LIVE_VALUE if name.startswith(LIVE) else "".join(text) if isinstance(text, list) else text
    return values


def collect(build_dir: Path) -> dict[str, dict[str, str]]:
    root = Path(build_dir) / "_build" / "jupyter_execute"
    if not root.is_dir():
        raise FileNotFoundError(f"no executed notebooks under {root}: build the book first")
    return {f.relative_to(root).as_posix().removesuffix(".glue.json"): glued(json.loads(f.read_text()))
            for f in sorted(root.rglob("*.glue.json"))}


def changes(before: dict, after: dict) -> list[str]:
    """Human-readable differences between two {page: {name: value}} maps."""
    out = []
    for page in sorted(set(before) | set(after)):
        b, a = before.get(page, {}), after.get(page, {})
        for name in sorted(set(b) | set(a)):
            if name not in a:
                out.append(f"{page}: {name} is no longer glued (was {b[name]!r})")
            elif name not in b:
                out.append(f"{page}: {name} is new: {a[name]!r}")
            elif a[name] != b[name]:
                out.append(f"{page}: {name} changed: {b[name]!r} -> {a[name]!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir", type=Path)
    ap.add_argument("--check", type=Path, metavar="SNAPSHOT", help="compare with this snapshot instead")
    args = ap.parse_args(argv)
    after = collect(args.build_dir)
    if args.check is None:
        print(json.dumps(after, indent=1, sort_keys=True))
        return 0
    diff = changes(json.loads(args.check.read_text()), after)
    for line in diff:
        print(line, file=sys.stderr)
    if diff:
        print(f"{len(diff)} glued values differ from {args.check}; if the data changed on purpose, "
              "update the snapshot with `make glue-snapshot` and commit it with the data", file=sys.stderr)
        return 1
    n = sum(len(v) for v in after.values())
    print(f"all {n} glued values of {len(after)} pages as in {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
